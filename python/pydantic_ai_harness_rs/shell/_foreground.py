"""A local foreground command waited for on the event loop, not on a worker thread.

`_core.ForegroundCommand.start` spawns the shell and returns one descriptor that is readable
whenever there is something to do (output, the shell's exit, the deadline, a timed-out
member's exit); each `step()` does that work without waiting. So a waiting command holds no
thread, and neither its exit nor its deadline has to cross from a worker thread back to the
loop, which is the slowest hop on a busy machine (about a millisecond on a two-core VM).

A call made while no other command of its thread (its event loop) is starting or running spawns
on the loop thread (a `vfork`, as asyncio's own subprocess spawn does); calls made together spawn
on worker threads, so their spawns run on every core. Runs that spill their output to files
(`truncation='head_tail'`), and platforms without pidfds, wait on a worker thread as before,
so no file write happens on the loop.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import anyio
import anyio.to_thread

from pydantic_ai_harness_rs import _core

Captured = tuple[bytes, bytes, int, int, bool, bool]
"""A stream as `(head, tail, total_bytes, total_lines, truncated, spilled)`."""
Outcome = tuple[int, int | None, bool, Captured, Captured]
"""`(exit_code, signal, timed_out, stdout, stderr)`, as `ForegroundCommand.run_captured` returns it."""


class _Busy(threading.local):
    """Per thread (so per event loop): commands between their spawn and their end."""

    count = 0


_busy = _Busy()


async def run_captured(
    run: _core.ForegroundCommand, *args: Any, spill: tuple[str | None, str | None], **kwargs: Any
) -> Outcome:
    """`run.run_captured(*args, spill=spill, **kwargs)`, waited for on the event loop where it can be.

    Raises what `run_captured` raises; when the caller is cancelled, the command's whole tree is
    killed (off the loop) and the cancellation propagates.
    """
    if spill != (None, None):
        return await _in_thread(run, functools.partial(run.run_captured, *args, spill=spill, **kwargs))
    start = functools.partial(run.start, *args, spill=spill, **kwargs)
    alone = _busy.count == 0
    _busy.count += 1
    try:
        fd = start() if alone else await anyio.to_thread.run_sync(start, abandon_on_cancel=True)
        if fd is None:
            return await _in_thread(run, functools.partial(run.run_captured, *args, spill=spill, **kwargs))
        while True:
            result = run.step()
            if result is None:
                await anyio.wait_readable(fd)
            elif result == 'finish':
                return await anyio.to_thread.run_sync(run.finish, abandon_on_cancel=True)
            else:
                return result
    except anyio.get_cancelled_exc_class():
        run.kill()
        raise
    finally:
        _busy.count -= 1


async def _in_thread(run: _core.ForegroundCommand, call: functools.partial[Outcome]) -> Outcome:
    """`call()` on a worker thread; a cancelled caller kills the command."""
    try:
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        run.kill()
        raise
