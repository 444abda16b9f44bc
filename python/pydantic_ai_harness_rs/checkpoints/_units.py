"""Checkpoints inside a durable unit: the checkpoint is taken in the activity or step that runs the call.

Under Temporal and DBOS the `Checkpoints` hook runs in workflow code, which may do no I/O and is
replayed, so there it passes every call through (`Checkpoints.wrap_tool_execute`). The call's work
runs in a durable unit instead: `FileSystem`'s `tool` and `commit_change` operations
(`durable/_operations.run_unit`) and a `Shell` tool call (`ShellToolset.call_tool`, a Temporal tool
activity or the call's DBOS step). There `recording` finds the agent's `Checkpoints` (the worker's
agent, `ctx.agent`: its settings), takes the call's identity from the unit's run context (`run_id`,
`tool_call_id`, `tool_name`, which cross the boundary) and records in the same unit, so:

- a unit that completed is not run again on replay (its result comes from the engine's history),
  and records nothing again;
- a unit run again after its worker died (after the record, before the engine kept its result)
  finds its call's checkpoint already there (by run and tool call id) and adds to it instead of
  appending another (`CallRecorder.once`, `RootState.record`);
- a unit run again after its worker died mid-call (before the record) finds the record of the call in
  progress the store wrote at its keep or snapshot (`CallRecorder.identity`, the store's `calls/`): what
  the dead attempt changed is counted against the call, not taken into the baseline.

Where the hook itself runs (a plain run, a Prefect flow) it has made a recorder current already,
and nothing here runs.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_ai.tools import RunContext

from pydantic_ai_harness_rs.checkpoints._recording import RECORDING, CallRecorder
from pydantic_ai_harness_rs.durable._commands import in_durable_unit

if TYPE_CHECKING:
    from pydantic_ai_harness_rs.checkpoints._capability import Checkpoints

T = TypeVar('T')


def checkpoints_of(ctx: RunContext[Any]) -> Checkpoints[Any] | None:
    """The `Checkpoints` of `ctx`'s agent (the worker's agent inside a unit), or `None`."""
    from pydantic_ai.capabilities.abstract import leaf_capabilities

    from pydantic_ai_harness_rs.checkpoints._capability import Checkpoints

    agent = getattr(ctx, 'agent', None)
    root = getattr(agent, 'root_capability', None)
    if root is None:
        return None
    return next((c for c in leaf_capabilities(root) if isinstance(c, Checkpoints)), None)


def _unit_recorder(ctx: RunContext[Any]) -> tuple[Checkpoints[Any], CallRecorder] | None:
    """The agent's `Checkpoints` and a recorder of `ctx`'s call, inside a durable unit where no
    recorder is current; else `None` (nothing to do here)."""
    if RECORDING.get() is not None or not in_durable_unit():
        return None
    checkpoints = checkpoints_of(ctx)
    if checkpoints is None or ctx.tool_name is None:
        return None
    recorder = CallRecorder(
        checkpoints._state_for,  # pyright: ignore[reportPrivateUsage]
        ctx.run_id,
        ctx.tool_call_id,
        ctx.tool_name,
        time.time(),
        once=True,
        remote_for=checkpoints._remote_for,  # pyright: ignore[reportPrivateUsage]
    )
    return checkpoints, recorder


@asynccontextmanager
async def recording(ctx: RunContext[Any]) -> AsyncIterator[None]:
    """Inside a durable unit, `ctx`'s file tool call with its recorder current (the commit keeps and
    records, `LocalEngine.commit`); open background jobs' changes counted first. Elsewhere nothing."""
    found = _unit_recorder(ctx)
    if found is None:
        yield
        return
    checkpoints, recorder = found
    await checkpoints._sweep_all()  # pyright: ignore[reportPrivateUsage]
    token = RECORDING.set(recorder)
    try:
        yield
    finally:
        RECORDING.reset(token)


async def command(ctx: RunContext[Any], call: Callable[[], Awaitable[T]]) -> T:
    """`call()`, a `Shell` tool call; inside a durable unit with `Checkpoints` on the agent, between
    a snapshot and its record when it is a command on a local workspace (`run_command`,
    `start_command`, `shell`), a job it leaves running counted against it."""
    from pydantic_ai_harness_rs.checkpoints._capability import REMOTE_COMMAND_TOOLS, SHELL_TOOL_NAMES, shell_root

    found = _unit_recorder(ctx)
    if found is None:
        return await call()
    checkpoints, recorder = found
    await checkpoints._sweep_all()  # pyright: ignore[reportPrivateUsage]
    root = await shell_root(ctx) if recorder.tool_name in SHELL_TOOL_NAMES else None
    if root is None:
        remote = await checkpoints._remote_commands(ctx) if recorder.tool_name in REMOTE_COMMAND_TOOLS else None  # pyright: ignore[reportPrivateUsage]
        if remote is None:
            return await call()
        state, workspace = remote
        return await state.command(recorder, workspace, call)
    state = await checkpoints._state_for(root)  # pyright: ignore[reportPrivateUsage]

    async def handler(_: Any) -> Any:
        return await call()

    return await checkpoints._command(ctx, recorder, state, {}, handler)  # pyright: ignore[reportPrivateUsage]
