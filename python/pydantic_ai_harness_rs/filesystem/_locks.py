"""Per-file turns for writes and edits: one change at a time per (storage, resolved path).

Pydantic AI runs the tool calls of one model response concurrently. A write or an edit reads
the file, plans, waits for `FileChangeRequestEvent` listeners and then commits; two of them on
one file must not overlap, or the later commit is planned against stale content. Reads take no
turn and stay concurrent. Each call holds at most one turn, so calls on `a` then `b` and on `b`
then `a` cannot deadlock.

A turn belongs to the storage the file lives in, not to the object a call reached it through:
every `FileSystem` toolset, engine and workspace facade (`Workspace(backend)` made per call, a
read-only or durable wrapper) that reaches one file shares its turn (`storage_of`, and
`file_turns`: one table per event loop).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.lowlevel import RunVar
from pydantic_ai.workspaces import Workspace, WorkspaceBackend

from pydantic_ai_harness_rs._workspace import innermost_backend

HOST = ('host',)
"""The storage of every file on this host (`LocalEngine`): its keys are host real paths."""


@dataclass
class _Turn:
    """The lock one file's changes take turns on, and how many calls hold or await it."""

    # `fast_acquire`: an uncontended turn costs no trip through the event loop (a tiny write
    # or edit paid ~30 µs for it); a contended one waits as before.
    lock: anyio.Lock = field(default_factory=lambda: anyio.Lock(fast_acquire=True))
    users: int = 0


class FileTurns:
    """Locks keyed by `(storage, resolved path)`, dropped as soon as nobody holds or awaits one."""

    def __init__(self) -> None:
        self._turns: dict[tuple[Hashable, Hashable], _Turn] = {}

    def __len__(self) -> int:
        """How many files a change is in progress on, or waiting for (0 when idle: nothing leaks)."""
        return len(self._turns)

    @asynccontextmanager
    async def hold(self, storage: Hashable, path: Hashable) -> AsyncIterator[None]:
        """Wait for, then hold, the turn on `path` within `storage` until the block ends (or is cancelled)."""
        key = (storage, path)
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


_TURNS: RunVar[FileTurns] = RunVar('pydantic_ai_harness_rs.file_turns')


def file_turns() -> FileTurns:
    """The turns of the running event loop, shared by every toolset (a lock serves one loop only)."""
    try:
        return _TURNS.get()
    except LookupError:
        turns = FileTurns()
        _TURNS.set(turns)
        return turns


def storage_of(workspace: WorkspaceBackend) -> Hashable:
    """What identifies the storage behind `workspace`, whatever facades and wrappers reach it.

    The backend under every wrapper (`innermost_backend`): its `ref` when it has one (the
    environment, which durable execution rebuilds a backend object from), else the object
    itself (by identity; the caller keeps it alive while the key is in use).
    """
    backend = innermost_backend(workspace if isinstance(workspace, Workspace) else Workspace(workspace))
    ref = getattr(backend, 'ref', None)
    if ref is not None:
        try:
            hash(ref)
        except TypeError:
            pass
        else:
            return ('ref', ref)
    return ('backend', id(backend))
