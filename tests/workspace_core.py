"""The Rust core called directly, as the toolset calls it, for tests of its texts without an agent.

`core(root, contract, **limits)` is a `FileSystemCore` with no patterns and 0.62.0's read limits;
`read(fs, path, offset, limit)` reads as `read_file` does (images and PDFs as `[header, BinaryContent]`).
Used by tests/filesystem/test_workspace_read.py and tests/compat/fs062_read_scenarios.py.
"""

from __future__ import annotations

from pathlib import Path

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.filesystem._content import guessed_type, media_content


def core(root: Path | str, contract: str = 'workspace', **limits: int) -> _core.FileSystemCore:
    caps = {'max_list_results': 1000, 'max_search_results': 1000, 'max_find_results': 1000, **limits}
    return _core.FileSystemCore(
        str(root),
        None,
        [],
        [],
        [],
        2000,
        50_000,
        caps['max_list_results'],
        caps['max_search_results'],
        caps['max_find_results'],
        True,
        contract=contract,
    )


def read(fs: _core.FileSystemCore, path: str, offset: int = 0, limit: int | None = None) -> object:
    outcome = fs.read_file(path, offset, limit, cancel=_core.CancelToken(), guessed_type=guessed_type(fs, path))
    content = media_content(outcome)
    return outcome.text if content is None else [outcome.text, content]
