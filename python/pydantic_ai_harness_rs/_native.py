"""Running native calls off the event loop, so asyncio and trio both stay responsive.

The one way async code reaches long work in `_core`: a worker thread through anyio (which
works under every anyio backend), with the GIL released inside Rust, and a cancel token the
native loop polls so a cancelled call stops its work instead of running on unseen.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from pydantic_ai_harness_rs._core import CancelToken

_T = TypeVar('_T')

INLINE_MAX_BYTES = 256 * 1024
"""Files up to this size are read on the event loop's thread: about 0.2 ms of work, less than the
worker-thread hop (about 0.09 ms here) plus the read would cost, so tiny calls stay as fast as the
reference's synchronous ones. Larger work always goes to a worker thread."""

NEVER_CANCELLED = CancelToken()
"""A token never cancelled: for native work called right here (`run_inline`)."""

_FILE_PASSES: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar('harness_file_passes')


def file_passes() -> anyio.CapacityLimiter:
    """The event loop's limiter for passes over big files (`read_file`, `file_info`): one per core.

    Sixty-four concurrent reads (one model response) then wait on the event loop, not in forty
    worker threads (anyio's default pool) each holding its own allocator arena and stack, while
    the core count of them keep every core busy; the core's own admission (`src/fs/gate.rs`) still
    bounds reads from several event loops at once.
    """
    try:
        return _FILE_PASSES.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(max(2, cores()))
        _FILE_PASSES.set(limiter)
        return limiter


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one)."""
    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def is_small_file(path: str) -> bool:
    """Whether `path` (absolute, or relative to the process's cwd) is worth no thread hop.

    A scheduling hint only: the path is not used for I/O and not trusted. Anything that is not a
    regular file of at most `INLINE_MAX_BYTES` (a directory, a missing path, a bad name) counts as
    small, since the core answers those without reading file contents. A regular file claiming 0
    bytes is not: it may be a pseudo-file (`/proc`, `/sys`), which the core reads up to 8 MiB.
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return True
    return not stat.S_ISREG(st.st_mode) or 0 < st.st_size <= INLINE_MAX_BYTES


def run_inline(fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """Call `fn(*args, cancel=<never cancelled>, **kwargs)` right here, for work known to be tiny."""
    return fn(*args, cancel=NEVER_CANCELLED, **kwargs)


async def run_native(
    fn: Callable[..., _T], /, *args: Any, limiter: anyio.CapacityLimiter | None = None, **kwargs: Any
) -> _T:
    """Call `fn(*args, cancel=token, **kwargs)` in a worker thread and return its result.

    If the awaiting task is cancelled, the token is set (the native work stops at its next
    check) and the cancellation propagates at once. `limiter`: the one to take a place in
    instead of anyio's default (40 threads), e.g. `file_passes()`.
    """
    token = CancelToken()
    call = functools.partial(fn, *args, cancel=token, **kwargs)
    try:
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True, limiter=limiter)
    except anyio.get_cancelled_exc_class():
        token.cancel()
        raise


async def run_sized(
    fn: Callable[..., _T], /, *args: Any, inline: bool, limiter: anyio.CapacityLimiter | None = None, **kwargs: Any
) -> _T:
    """`run_inline` when `inline` (the caller knows the work is tiny), else `run_native` (in `limiter`)."""
    if inline:
        return run_inline(fn, *args, **kwargs)
    return await run_native(fn, *args, limiter=limiter, **kwargs)
