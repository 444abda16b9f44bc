"""Per-file turns for writes and edits: one change at a time per (engine, resolved path).

Pydantic AI runs the tool calls of one model response concurrently. A write or an edit reads
the file, plans, waits for `FileChangeRequestEvent` listeners and then commits; two of them on
one file must not overlap, or the later commit is planned against stale content. Reads take no
turn and stay concurrent. Each call holds at most one turn, so calls on `a` then `b` and on `b`
then `a` cannot deadlock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio


@dataclass
class _Turn:
    """The lock one file's changes take turns on, and how many calls hold or await it."""

    # `fast_acquire`: an uncontended turn costs no trip through the event loop (a tiny write
    # or edit paid ~30 µs for it); a contended one waits as before.
    lock: anyio.Lock = field(default_factory=lambda: anyio.Lock(fast_acquire=True))
    users: int = 0


class FileTurns:
    """Locks keyed by `(engine, resolved path)`, dropped as soon as nobody holds or awaits one."""

    def __init__(self) -> None:
        self._turns: dict[tuple[object, Hashable], _Turn] = {}

    def __len__(self) -> int:
        """How many files a change is in progress on, or waiting for (0 when idle: nothing leaks)."""
        return len(self._turns)

    @asynccontextmanager
    async def hold(self, engine: object, path: Hashable) -> AsyncIterator[None]:
        """Wait for, then hold, the turn on `path` within `engine` until the block ends (or is cancelled)."""
        key = (engine, path)
        turn = self._turns.get(key)
        if turn is None:
            turn = self._turns[key] = _Turn()
        turn.users += 1
        try:
            async with turn.lock:
                yield
        finally:
            turn.users -= 1
            if not turn.users:
                del self._turns[key]
