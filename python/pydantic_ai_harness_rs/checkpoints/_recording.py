"""The hook the change tools call: keep what a change is about to replace, record what it made.

`Checkpoints.wrap_tool_execute` makes a `CallRecorder` current (a ContextVar) for each tool call.
`LocalEngine.commit` (`filesystem/_engine.py`) commits a small change through `recorder.commit_now`:
one native call keeps the plan's path, commits, and leaves the call's checkpoint to be recorded once
the call has returned (`CheckpointStore.commit` without `wait`, then `finish_soon`). Otherwise (a big
file, a durable unit's call, a background job followed, another process holding the store's lock) it
goes through `recorder.commit(root, fused, plain)`: the same native call in a worker thread, recorded
before it returns, under the root's turn (`_stores.RootState.turn`) so that nothing another
checkpointed call does in between is counted against this one; `commit_patch` always goes this
way (`CheckpointStore.commit_patch`). A `create_directory` runs its commit inside
`recorder.change(root, paths)` (`RemoteEngine`'s commits: `recorder.remote_change`, `_remote.py`):
the store keeps those paths' current state (`keep`), the commit runs, the store records the
after-states (`record`). Without `Checkpoints` the ContextVar is `None` and nothing happens.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_ai_harness_rs._native import NEVER_CANCELLED

T = TypeVar('T')

if TYPE_CHECKING:
    from pydantic_ai_harness_rs.checkpoints._remote import RemoteFiles, RemoteState
    from pydantic_ai_harness_rs.checkpoints._stores import OpenJob, RootState


def finish_soon(store: Any) -> None:
    """Have `store` record the checkpoint of the commit it ran without `wait` once the tool call
    has returned (`CheckpointStore.finish`): on an asyncio loop at its next iteration, else here.
    Its bookkeeping is off the call's path; whatever uses the store before then records it first."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not on asyncio (trio): recorded now
        finish_now(store)
    else:
        loop.call_soon(finish_now, store)


def finish_now(store: Any, *, flush: bool = False) -> None:
    """`store.finish()`: the checkpoint of a commit it ran without `wait` recorded now, if not yet
    (`flush`: and everything its writer thread holds put on disk); a write that failed (a full disk)
    is a warning, that checkpoint lost."""
    try:
        store.finish(flush=flush)
    except OSError as e:
        warnings.warn(
            f'Checkpoints: the last file change was made but its checkpoint was not recorded: {e}',
            RuntimeWarning,
            stacklevel=1,
        )


def call_info(call: CallRecorder | OpenJob) -> dict[str, Any]:
    """`call` as the store records it: `CheckpointStore.record`'s keywords `run_id`, `tool_call_id`,
    `tool_name` and `created_at` (`created_at`: epoch seconds)."""
    return {
        'run_id': call.run_id,
        'tool_call_id': call.tool_call_id,
        'tool_name': call.tool_name,
        'created_at': call.created_at,
    }


@dataclass(slots=True)
class CallRecorder:
    """One tool call's checkpointing: who it is, and how to reach the store of a root."""

    state_for: Callable[[str], Awaitable[RootState]]
    """The (opened once) store state of a workspace root, by absolute, symlink-free path."""
    run_id: str | None
    tool_call_id: str | None
    tool_name: str
    created_at: float
    once: bool = False
    """Inside a durable unit (`_units.py`): an attempt of a call that already has a checkpoint (an
    earlier attempt recorded it, then its worker died) adds to that one instead of appending another;
    and the store keeps a record of the call in progress on disk (`identity`), so an attempt run again
    after its worker died mid-call counts what the dead attempt changed too."""
    remote_for: Callable[[str], Awaitable[RemoteState | None]] | None = None
    """The (opened once) store state of a non-local workspace root, by workspace path (`_remote.py`);
    `None` for a root other than the one the capability records."""
    opened: Mapping[str, RootState] | None = None
    """The store states `state_for` opened already, by root: a file tool's checkpoint finds its root's
    there without a coroutine (most of a small edit's checkpoint is such overhead)."""

    def identity(self) -> dict[str, Any]:
        """The keyword arguments of the store's `keep`/`snapshot` for this call: its identity in a
        durable unit (the store writes the call-in-progress record), none elsewhere."""
        if not self.once or self.tool_call_id is None:
            return {}
        return self.call_info()

    def command_identity(self) -> dict[str, Any]:
        """The keyword arguments of the store's `snapshot` before a shell command: in a durable unit,
        `identity`; elsewhere the call's identity with `durable=False`, so that its record on disk
        lets the next process on the store record what the command changed should this one die
        mid-command (`CheckpointStore.snapshot`); none for a call without a tool call id."""
        if self.once or self.tool_call_id is None:
            return self.identity()
        return {**self.call_info(), 'durable': False}

    def call_info(self) -> dict[str, Any]:
        """The call as the store records it (`CheckpointStore.record`'s keywords)."""
        return call_info(self)

    def commit_now(self, core: Any, plan: Any, path: str) -> Any | None:
        """A small commit of `core`'s change `plan` of `path` (root-relative), kept and recorded by
        the store right here (`CheckpointStore.commit` without `wait`; its record made once the call
        has returned, `finish_soon`): the commit's outcome, or `None` when it cannot run so (no store
        open for the root yet, a durable unit's call, a background job followed, the root's turn
        held on this event loop, another process holding the store's lock); then `commit` does it.

        Without an `await` between its start and its end, nothing else on the loop can run in
        between, so taking and giving back the turn would change nothing (and costs a noticeable
        part of a small edit)."""
        opened = self.opened
        state = opened.get(core.root_dir) if opened is not None else None
        if state is None or self.once or state.jobs or state.turn().locked():
            return None
        store = state.store
        done = store.commit(
            core,
            plan,
            [path],
            run_id=self.run_id,
            tool_call_id=self.tool_call_id,
            tool_name=self.tool_name,
            created_at=self.created_at,
            cancel=NEVER_CANCELLED,
            wait=False,
        )
        if done is None:
            return None
        finish_soon(store)
        return done[0]

    async def commit(
        self,
        root: str,
        fused: Callable[[Any, dict[str, Any]], Awaitable[tuple[T, str | None]]],
        plain: Callable[[], Awaitable[T]],
    ) -> T:
        """`fused(store, call)`: the commit, kept and recorded by the store in one native call
        (`CheckpointStore.commit(..., **call)`; `call` as `call_info`, with `durable`), under the
        root's turn: its result and the id of the checkpoint it appended (`None`: nothing changed
        or recorded later).

        `plain()`: the commit alone, for an attempt of a call whose checkpoint an earlier attempt
        recorded (`once`: a retried commit finds the file already written, so it changes nothing again).
        """
        state = await self.state_for(root)
        async with state.turn():
            await state.sweep_jobs()  # a job another process followed until it ended is taken over
            if self.once and await state.recorded_for(self) is not None:
                return await plain()
            # A durable unit's call: the store keeps its record on disk while it runs (`identity`).
            result, _ = await fused(state.store, {**self.call_info(), 'durable': bool(self.identity())})
            return result

    @asynccontextmanager
    async def change(self, root: str, paths: Sequence[str]) -> AsyncIterator[None]:
        """Keep `paths` (root-relative) before the body, record them after it, under the root's turn.

        The body is the commit: whether it succeeds or fails, what changed is recorded (a failed
        commit changed nothing, so nothing is appended).
        """
        state = await self.state_for(root)
        async with state.turn():
            await state.sweep_jobs()
            handle = await state.call('keep', sorted(set(paths)), **self.identity())
            try:
                yield
            finally:
                await state.record(handle, self, kept=True)

    @asynccontextmanager
    async def remote_change(self, root: str, files: RemoteFiles, paths: Sequence[str]) -> AsyncIterator[None]:
        """On a workspace whose files are not on this host (`RemoteEngine`): read `paths`
        (root-relative) through `files` before the body, again after it, and record the difference
        in the store on this host (`_remote.RemoteState.change`)."""
        if self.remote_for is None:
            yield
            return
        state = await self.remote_for(root)
        if state is None:  # another non-local root is recorded (a warning said so)
            yield
            return
        async with state.change(self, files, paths):
            yield


RECORDING: ContextVar[CallRecorder | None] = ContextVar('pydantic_ai_harness_rs.checkpoints', default=None)
"""The recorder of the tool call running now, set by `Checkpoints`; `None` without it."""
