"""FileSystem and Shell tool calls under DBOS and Prefect: one durable unit each, on the plain workspace.

DBOS runs an agent's function tools in workflow code, which it replays on recovery, so a tool's
disk I/O or command there would run again. `call_in_unit` runs each FileSystem and Shell tool
call in DBOS workflow code as one DBOS step, named `FileSystem.<tool>` / `Shell.<tool>`: a
recovered workflow gets the recorded result (or the recorded `ModelRetry`) back instead of
repeating the write, the edit or the command. A step killed before it recorded runs again, as
any DBOS step does; the `shell` tool and `start_command` then find the job the first attempt
started (its ID comes from the run and the tool call), and the files are checked again.

Prefect already runs each tool call in a task. Inside a step or a task the run's workspace is
still Pydantic AI's `DurableWorkspace` wrapper, whose calls go straight through there; the tool
gets the workspace under it, so files and commands take the same native paths and the same
contract (`root_dir` or the workspace's) as in a plain run.

Events. In a Prefect task, and in a DBOS step when `DBOSDurability` has no `event_stream_handler`,
a tool emits as in a plain run: live, and a `FileChangeRequestEvent` listener can cancel the
change. With an `event_stream_handler`, DBOS delivers each event in a step of its own, numbered
when it starts, so events emitted inside a step would shift the workflow's steps on recovery: the
call's events are held and emitted from workflow code after its step returns. They ride on the
step's recorded result, so a recovered workflow emits the same ones at the same place, and DBOS
answers their handler steps from its record: the handler is not called twice. There a
`FileChangeRequestEvent` arrives after the change and cannot cancel it. Without a handler, a
step replayed on recovery emits nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

from pydantic_ai.tools import RunContext

from pydantic_ai_harness_rs.durable._events import beneath_durable

T = TypeVar('T')


def _in_dbos_workflow_code(ctx: RunContext[Any]) -> bool:
    """Whether this is a DBOS workflow's own code (not a step) of a run with a durability capability."""
    dbos = sys.modules.get('dbos')
    if dbos is None or sys.modules.get('pydantic_ai.durable_exec.dbos') is None:
        return False
    return dbos.DBOS.workflow_id is not None and dbos.DBOS.step_id is None and ctx.in_durable_context


def unit_context(ctx: RunContext[Any]) -> RunContext[Any]:
    """`ctx` with the workspace under Pydantic AI's `DurableWorkspace`, which inside a unit
    only passes calls through; `ctx` itself when there is none."""
    workspace = getattr(ctx, 'workspace', None)
    plain = workspace if workspace is None else beneath_durable(workspace)
    return ctx if plain is workspace else replace(ctx, workspace=plain)


async def call_in_unit(
    owner: str, name: str, ctx: RunContext[Any], call: Callable[[RunContext[Any]], Awaitable[T]]
) -> T:
    """`call(ctx)`, as the DBOS step `<owner>.<name>` in DBOS workflow code, and on the plain
    workspace inside any step or task (see the module docstring).

    Raises what `call` raises; a recovered step re-raises the exception it recorded.
    """
    if _in_dbos_workflow_code(ctx):
        return await _dbos_step(owner, name, ctx, call)
    if _in_unit(ctx):
        return await call(unit_context(ctx))
    return await call(ctx)


async def _dbos_step(owner: str, name: str, ctx: RunContext[Any], call: Callable[[RunContext[Any]], Awaitable[T]]) -> T:
    """The DBOS step of one tool call. With an `event_stream_handler` on the durability, which
    delivers each event in a step of its own, the call's events are kept with the step's
    result and emitted from workflow code once it returns, on the first run and on recovery
    alike, so the workflow's steps come in the same order both times."""
    from dbos import DBOS
    from pydantic_ai.durable_exec._operation_backend import durable_unit_scope

    unit = unit_context(ctx)
    held: list[Any] | None = [] if _events_take_steps(ctx) else None
    if held is not None:
        unit = replace(unit)

        async def hold(event: Any) -> Any:
            held.append(event)
            return event

        unit.emit = hold  # type: ignore[method-assign]

    async def step() -> tuple[T, list[Any] | None]:
        # Marked as a unit the way Pydantic AI marks its own steps, for code that asks (`in_durable_unit`).
        with durable_unit_scope():
            return await call(unit), held

    result, events = await DBOS.run_step_async({'name': f'{owner}.{name}'}, step)
    for event in events or ():
        await ctx.emit(event)
    return result


def _events_take_steps(ctx: RunContext[Any]) -> bool:
    """Whether the run's durability capability has an `event_stream_handler` (each event then is a DBOS step)."""
    base = sys.modules.get('pydantic_ai.durable_exec._base')
    durability = None if base is None or ctx.agent is None else base.BaseDurabilityCapability.from_agent(ctx.agent)
    handler = getattr(durability, '_effective_event_stream_handler', None)
    return handler is None or handler() is not None


def _in_unit(ctx: RunContext[Any]) -> bool:
    """Inside a durable unit of Pydantic AI's in-process engines (a Prefect task, a DBOS step)."""
    backend = sys.modules.get('pydantic_ai.durable_exec._operation_backend')
    return backend is not None and backend.in_durable_unit()
