"""Running native calls off the event loop, so asyncio and trio both stay responsive.

The one way async code reaches long work in `_core`: a worker thread through anyio (which
works under every anyio backend), with the GIL released inside Rust, and a cancel token the
native loop polls so a cancelled call stops its work instead of running on unseen.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from pydantic_ai_harness_rs._core import CancelToken

_T = TypeVar('_T')


async def run_native(fn: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """Call `fn(*args, cancel=token, **kwargs)` in a worker thread and return its result.

    If the awaiting task is cancelled, the token is set (the native work stops at its next
    check) and the cancellation propagates at once.
    """
    token = CancelToken()
    call = functools.partial(fn, *args, cancel=token, **kwargs)
    try:
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        token.cancel()
        raise
