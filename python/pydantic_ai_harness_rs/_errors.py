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

One taxonomy for every backend (issue 20): an error from concurrent workspace calls reaches here
as itself, never wrapped in an `ExceptionGroup` (`single_error`); any `WorkspaceError` the
backend raised on purpose is mapped as 0.62.0 maps it (`raise_tool_failure`): a workspace that is
gone (`WorkspaceUnavailableError`) propagates as itself, a read-only one is the failed tool result
`READ_ONLY_FAILURE`, any other a failed tool result with the backend's text.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from anyio import get_cancelled_exc_class
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.workspaces import WorkspaceError, WorkspaceUnavailableError

from pydantic_ai_harness_rs._core import NOT_REGULAR_FILE, RetryableError
from pydantic_ai_harness_rs._workspace import raise_tool_failure

_NOT_REGULAR = 'not a regular file'
"""How pydantic-ai's workspace backends begin the bare `OSError` they raise for a FIFO, socket or device."""

_P = ParamSpec('_P')
_T = TypeVar('_T')


def single_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one error a group of concurrent calls stands for: a `WorkspaceUnavailableError` when
    one is there (the run must end), else the first that is not a cancellation (the others were
    cancelled because of it), else the first."""
    leaves: list[BaseException] = []

    def collect(error: BaseException) -> None:
        if isinstance(error, BaseExceptionGroup):
            for inner in error.exceptions:
                collect(inner)
        else:
            leaves.append(error)

    collect(group)
    cancelled = get_cancelled_exc_class()
    return next(
        (e for e in leaves if isinstance(e, WorkspaceUnavailableError)),
        next((e for e in leaves if not isinstance(e, cancelled)), leaves[0]),
    )


def retry_on_core_errors(fn: Callable[_P, Awaitable[_T]]) -> Callable[_P, Awaitable[_T]]:
    """Wrap an async tool so the core's retryable errors reach the model as `ModelRetry`, and a
    workspace's errors as 0.62.0 gives them (see the module docstring)."""

    @functools.wraps(fn)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return await fn(*args, **kwargs)
        except BaseExceptionGroup as group:
            error = single_error(group)
            if isinstance(error, Exception):
                _for_the_model(error)
            raise error from None
        except Exception as error:
            _for_the_model(error)
            raise

    return wrapper


def _for_the_model(error: Exception) -> None:
    """Raise what the model (or the run) sees for `error`; return when it propagates as it is."""
    if isinstance(error, (RetryableError, UnicodeEncodeError)):
        raise ModelRetry(str(error)) from error
    if isinstance(error, WorkspaceError) and not isinstance(error, WorkspaceUnavailableError):
        raise_tool_failure(error)
    # How pydantic-ai's backends refuse a FIFO, socket or device (no errno, no error type).
    if isinstance(error, OSError) and error.errno is None and str(error).startswith(_NOT_REGULAR):
        raise ModelRetry(NOT_REGULAR_FILE) from error
