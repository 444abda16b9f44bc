"""Capability events recorded where they cannot reach the run, carried out as data, emitted in workflow code.

A durable unit cannot emit into the run's event stream (a Temporal activity's `TemporalRunContext`
refuses `emit`, pydantic/pydantic-ai#7971). So its events are recorded (`RecordedEvent`: the event's
class name and its own fields) and emitted from workflow code once the unit returns, in the order
they were recorded. `FileSystem`'s operations return them in their `UnitResult` (`_operations.py`).
`Shell`'s tools run as Pydantic AI's own tool activities, whose result is the tool's return value:
there the events ride on it as a `ToolReturn` whose `metadata` holds them under `CARRIED`
(`carry`), and `EventsDelivered`, the wrapper `ShellToolset` puts around its durable wrapper,
emits them in workflow code and gives the workflow the bare result (`deliver`). A retried
activity returns the events of its successful attempt only, and a replayed workflow reads the
activity's result from its history: the `event_stream_handler` (activities of its own) sees each
event once; `on_event` listeners are workflow code and run again when a workflow is replayed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import ToolReturn
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import ToolsetTool, WrapperToolset

CARRIED = 'pydantic_ai_harness_rs.events'
"""The `ToolReturn.metadata` key a tool activity's recorded events travel under."""


@dataclass
class RecordedEvent:
    """A capability event recorded in a durable unit: its class (`FileReadEvent`, `CommandStartedEvent`, ...)
    and its fields (those the run stamps at emission left out unless the tool set them)."""

    kind: str
    fields: dict[str, Any]


_STAMPED = ('capability_id', 'tool_call_id', 'tool_name')
"""`CapabilityEvent` fields `RunContext.emit` fills in when they are unset (kept when the tool set them)."""


def record(event: Any) -> RecordedEvent:
    """`event` as data that crosses a durable boundary: its own fields, and those of `_STAMPED` the
    tool set itself (`CommandStartedEvent`'s `tool_call_id`), so emitting it again stamps what the
    first emission would have."""
    from pydantic_ai import CapabilityEvent

    base = {f.name for f in dataclasses.fields(CapabilityEvent)}
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name not in base or (f.name in _STAMPED and value is not None):
            fields[f.name] = value
    return RecordedEvent(type(event).__name__, fields)


def rebuild(recorded: RecordedEvent) -> Any:
    """The event `record` took apart, of the `file_system` or `shell` classes in force (ours or 0.62.0's)."""
    from pydantic_ai_harness_rs.filesystem import _events as file_system
    from pydantic_ai_harness_rs.shell import _events as shell

    family = file_system if hasattr(file_system, recorded.kind) else shell
    return getattr(family, recorded.kind)(**recorded.fields)


_RECORDING: ContextVar[list[RecordedEvent] | None] = ContextVar('pydantic_ai_harness_rs.recording', default=None)


@contextmanager
def recording() -> Iterator[list[RecordedEvent]]:
    """Inside, a context whose events cannot reach the run records them here (`recorder`) instead of dropping them."""
    recorded: list[RecordedEvent] = []
    token = _RECORDING.set(recorded)
    try:
        yield recorded
    finally:
        _RECORDING.reset(token)


def recorder() -> Any:
    """The `emit` of a context whose events are recorded (inside `recording`), else `None`."""
    recorded = _RECORDING.get()
    if recorded is None:
        return None

    async def keep(event: Any, /) -> Any:
        recorded.append(record(event))
        return event

    return keep


def carry(result: Any, recorded: list[RecordedEvent]) -> Any:
    """`result` with `recorded` riding on it (a `ToolReturn`), or `result` itself when nothing was recorded."""
    if not recorded:
        return result
    return ToolReturn(return_value=result, metadata={CARRIED: [dataclasses.asdict(event) for event in recorded]})


async def deliver(ctx: RunContext[Any], result: Any) -> Any:
    """Emit the events `carry` put on `result` (workflow code, in their order); the bare result.

    Anything else is returned untouched.
    """
    metadata = result.metadata if isinstance(result, ToolReturn) else None
    if not isinstance(metadata, dict) or CARRIED not in metadata:
        return result
    for event in metadata[CARRIED]:  # pyright: ignore[reportUnknownVariableType]
        await ctx.emit(rebuild(RecordedEvent(**event)))
    return result.return_value


@dataclass
class EventsDelivered(WrapperToolset[Any]):
    """A durable engine's wrapper of a toolset whose activities carry their events out (`carry`): emits them."""

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        return await deliver(ctx, await self.wrapped.call_tool(name, tool_args, ctx, tool))
