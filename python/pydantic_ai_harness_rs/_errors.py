"""The one place native errors become what the model sees.

`_core.RetryableError` (a path outside the root, a denied path, a stale hash, a bad pattern,
...) becomes `ModelRetry` with the core's message, so the agent can correct the call; so does a
`UnicodeEncodeError` (a path or content with a lone surrogate cannot cross into the core, as it
cannot be encoded by the reference's `os` calls either). A change refused by a read-only
workspace (`WorkspaceReadOnlyError`, met by a direct call: a run on such a workspace is not
offered the changing tools) is a `ToolFailed` with 0.62.0's text. A workspace backend's bare
`OSError('not a regular file: ...')` (a FIFO, socket or device) is 0.62.0's retry
`NOT_REGULAR_FILE`, with no path in it. Anything else, an `OSError` for a full or read-only disk
say, propagates and aborts the run, as with the reference.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.workspaces import WorkspaceReadOnlyError

from pydantic_ai_harness_rs._core import NOT_REGULAR_FILE, RetryableError
from pydantic_ai_harness_rs._workspace import READ_ONLY_FAILURE

_NOT_REGULAR = 'not a regular file'
"""How pydantic-ai's workspace backends begin the bare `OSError` they raise for a FIFO, socket or device."""

_P = ParamSpec('_P')
_T = TypeVar('_T')


def retry_on_core_errors(fn: Callable[_P, Awaitable[_T]]) -> Callable[_P, Awaitable[_T]]:
    """Wrap an async tool so the core's retryable errors reach the model as `ModelRetry`."""

    @functools.wraps(fn)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return await fn(*args, **kwargs)
        except (RetryableError, UnicodeEncodeError) as e:
            raise ModelRetry(str(e)) from e
        except WorkspaceReadOnlyError as e:
            raise ToolFailed(READ_ONLY_FAILURE) from e
        except OSError as e:
            # How pydantic-ai's backends refuse a FIFO, socket or device (no errno, no error type).
            if e.errno is None and str(e).startswith(_NOT_REGULAR):
                raise ModelRetry(NOT_REGULAR_FILE) from e
            raise

    return wrapper
