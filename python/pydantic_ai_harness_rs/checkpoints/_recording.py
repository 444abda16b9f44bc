"""The hook the change tools call: keep what a change is about to replace, record what it made.

`Checkpoints.wrap_tool_execute` makes a `CallRecorder` current (a ContextVar) for each tool call.
`LocalEngine.commit` (`filesystem/_engine.py`) commits through `recorder.commit(root, fused, plain)`:
one native call keeps the plan's path, commits and records the call's checkpoint
(`CheckpointStore.commit`, on the event loop for a small file, as the commit alone would run),
under the root's turn (`_stores.RootState.turn`) so that nothing another checkpointed call does in
between is counted against this one. `commit_patch` runs its commit inside `recorder.change(root,
paths)`: the store keeps those paths' current state (`keep`), the commit runs, the store records
the after-states (`record`). Without `Checkpoints` the ContextVar is `None` and nothing happens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

T = TypeVar('T')

if TYPE_CHECKING:
    from pydantic_ai_harness_rs.checkpoints._stores import RootState


@dataclass
class CallRecorder:
    """One tool call's checkpointing: who it is, and how to reach the store of a root."""

    state_for: Callable[[str], Awaitable[RootState]]
    """The (opened once) store state of a workspace root, by absolute, symlink-free path."""
    run_id: str | None
    tool_call_id: str | None
    tool_name: str
    created_at: float
    recorded: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """The listings of the checkpoints this call appended."""
    once: bool = False
    """Inside a durable unit (`_units.py`): an attempt of a call that already has a checkpoint (an
    earlier attempt recorded it, then its worker died) adds to that one instead of appending another."""

    def call_info(self) -> dict[str, Any]:
        """The call as the store records it (`CheckpointStore.record`'s keywords)."""
        return {
            'run_id': self.run_id,
            'tool_call_id': self.tool_call_id,
            'tool_name': self.tool_name,
            'created_at': self.created_at,
        }

    async def commit(
        self,
        root: str,
        fused: Callable[[Any, dict[str, Any]], Awaitable[tuple[T, dict[str, Any] | None]]],
        plain: Callable[[], Awaitable[T]],
    ) -> T:
        """`fused(store, call)`: the commit, kept and recorded by the store in one native call
        (`CheckpointStore.commit(..., **call)`), under the root's turn; its result.

        `plain()`: the commit alone, for an attempt of a call whose checkpoint an earlier attempt
        recorded (`once`: a retried commit finds the file already written, so it changes nothing again).
        """
        state = await self.state_for(root)
        async with state.turn():
            if state.jobs:
                await state.sweep_jobs()
            if self.once and await state.recorded_for(self) is not None:
                return await plain()
            result, listing = await fused(state.store, self.call_info())
            if listing is not None:
                self.recorded.append(listing)
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
            handle = await state.call('keep', sorted(set(paths)))
            try:
                yield
            finally:
                listing = await state.record(handle, self, kept=True)
                if listing is not None:
                    self.recorded.append(listing)


RECORDING: ContextVar[CallRecorder | None] = ContextVar('pydantic_ai_harness_rs.checkpoints', default=None)
"""The recorder of the tool call running now, set by `Checkpoints`; `None` without it."""
