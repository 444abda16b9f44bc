"""What `read_file` hands the model under the workspace contract: text, or an image or PDF as a file.

The core reads, sniffs (by magic bytes, never by name), hashes and renders; this module only
supplies the name-based media type Python's `mimetypes` gives a binary file's description, and
wraps an image or PDF the core returned into `BinaryContent`, as pydantic-ai-harness 0.62.0's
`read_file` returns it: `['[pic.png | image/png | 69 bytes | hash:…]\\n', BinaryContent(...)]`.
Source: `_read_file`, `_read_binary`, filesystem/_toolset.py (0.62.0).
"""

from __future__ import annotations

import functools
import mimetypes
from typing import TYPE_CHECKING

from pydantic_ai.messages import BinaryContent

if TYPE_CHECKING:
    from pydantic_ai_harness_rs._core import FileSystemCore, Outcome


def guessed_type(core: FileSystemCore, path: str) -> str | None:
    """The media type `mimetypes` guesses from `path`'s name, under the workspace contract only.

    The core shows it in the header of a binary file that is not an image or PDF (`a.zip` ->
    `application/zip`); `None` (shown as `application/octet-stream`) when the name says nothing,
    and always under the document's contract, which does not describe binary files by type.
    The guess depends only on the name's suffixes, so it is cached by them.
    """
    if core.contract != 'workspace':
        return None
    name = path.rpartition('/')[2]
    first_dot = name.find('.', 1)
    return None if first_dot < 0 else _guess_by_suffixes(name[first_dot:])


@functools.lru_cache(maxsize=256)
def _guess_by_suffixes(suffixes: str) -> str | None:
    """`mimetypes.guess_type` of a name ending in `suffixes` (`.tar.gz`, `.py`)."""
    return mimetypes.guess_type(f'x{suffixes}')[0]


def media_content(outcome: Outcome) -> BinaryContent | None:
    """The image or PDF (at most 5,000,000 bytes, workspace contract) a `read_file` outcome carries
    as `BinaryContent`, for the result `[header, BinaryContent]`; `None` for a text result."""
    if outcome.media_type is None or outcome.media_data is None:
        return None
    return BinaryContent(data=outcome.media_data, media_type=outcome.media_type)
