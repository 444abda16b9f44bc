"""Durable execution: where a tool's capability events cannot reach the run, and what tools do there.

Under Temporal a `Shell` tool runs in an activity, possibly on another worker, and Pydantic AI's
activity run context (`TemporalRunContext`) refuses `emit` with a non-retryable `UserError`
(pydantic/pydantic-ai#7971): the run's event stream lives in the workflow. (`FileSystem`'s
operations and the `shell` tool record their events there and have them emitted from workflow
code: `_carried.py`.) The rule here: a tool running where events cannot be delivered, and not
recording them, emits none and otherwise works as it does outside a run. A `FileChangeRequestEvent` nobody can receive is not
asked, so the change goes ahead (approve changes under Temporal with Pydantic AI's tool approval,
`requires_approval`, which the workflow runs). DBOS steps and Prefect tasks run in the run's
own process, where `emit` reaches the stream: tools emit there as usual.
"""

from __future__ import annotations

import copy
import sys
from typing import Any, TypeVar

from pydantic_ai.exceptions import UserError
from pydantic_ai.tools import RunContext
from pydantic_ai.workspaces import Workspace

__all__ = ['beneath_durable', 'events_reachable', 'without_events']

CtxT = TypeVar('CtxT', bound=RunContext[Any])


def events_reachable(ctx: RunContext[Any]) -> bool:
    """Whether `ctx.emit` reaches the run's event stream: `False` inside a Temporal activity.

    Looks Temporal up in `sys.modules` only, so a run without Temporal imports nothing.
    """
    temporal = sys.modules.get('pydantic_ai.durable_exec.temporal')
    return temporal is None or not isinstance(ctx, temporal.TemporalRunContext)


async def _dropped(event: Any, /) -> Any:
    return event


def without_events(ctx: CtxT) -> CtxT:
    """`ctx` itself where events reach the run; elsewhere a shallow copy whose `emit` drops the event.

    The copy's `emit` returns the event untouched (a change request stays not cancelled), so a
    tool body runs unchanged and simply delivers nothing.
    """
    if events_reachable(ctx):
        return ctx
    quiet = copy.copy(ctx)
    object.__setattr__(quiet, 'emit', _dropped)
    return quiet


def beneath_durable(workspace: Workspace) -> Workspace:
    """`workspace` with the durable engine's wrapper (`DurableWorkspace`, in workflow code) taken off.

    For type checks only, such as which contract describes the tools: the wrapper journals each
    call, so calling the unwrapped workspace from workflow code would bypass the engine. Tools
    themselves run in activities (steps, tasks), where the run's workspace is the plain one.
    """
    durable = sys.modules.get('pydantic_ai.durable_exec._workspace')
    while durable is not None and isinstance(workspace, durable.DurableWorkspace):
        workspace = workspace.wrapped
    return workspace


def refuse_bare_toolset(ctx: RunContext[Any], capability: str) -> None:
    """Refuse a tool call that came from a bare or renamed toolset, whose capability events the run
    would refuse, with 0.62.0's `UserError` naming `capability` (nothing runs before it).

    Nothing to check where events cannot reach the run (`events_reachable`).
    """
    if not events_reachable(ctx):
        return
    tools = ctx.tool_manager.tools if ctx.tool_manager is not None else None
    if ctx.tool_name is not None and tools is not None and getattr(ctx, '_capability', None) is None:
        tool = tools.get(ctx.tool_name)
        if tool is None or tool.tool_def.capability_id not in ctx.capabilities:
            raise UserError(
                f'The `{ctx.tool_name}` tool emits capability events, which Pydantic AI accepts only from '
                f'tools a capability contributes under their own names. Pass `capabilities=[{capability}()]` '
                'rather than its toolset in `toolsets=`, without renaming its tools.'
            )
