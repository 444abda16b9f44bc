"""Drive tools through a real `Agent` with a scripted `FunctionModel`, the way a model would.

`run_tools(capabilities, calls)` makes the model call each `(tool_name, args)` in turn, one
call per model step, then answer `done`; a list of calls is one step (one response, whose calls
Pydantic AI runs concurrently). It returns what the model received for each call (a `ModelRetry`
shows as `RETRY: <message>`), every capability event emitted, and the tool definitions the
model was offered.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent, CapabilityEvent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.tools import ToolDefinition

RETRY = 'RETRY: '

Call = tuple[str, dict[str, Any]] | list[tuple[str, dict[str, Any]]]
"""One model step: a `(tool_name, args)` call, or a list of them sent in one response (run concurrently)."""


@dataclass
class Transcript:
    """What a scripted run observed."""

    results: list[str] = field(default_factory=list[str])
    """Per call: the tool's return value, or `RETRY: <message>` for a `ModelRetry`."""
    events: list[CapabilityEvent] = field(default_factory=list[CapabilityEvent])
    """Every capability event, in emission order."""
    tools: list[ToolDefinition] = field(default_factory=list[ToolDefinition])
    """The tool definitions offered on the first model step."""
    messages: list[ModelMessage] = field(default_factory=list[ModelMessage])
    """Every message of the run, the history it continued included (`all_messages()`)."""

    def of(self, kind: type[CapabilityEvent]) -> list[Any]:
        """The events of one class (subclasses included)."""
        return [e for e in self.events if isinstance(e, kind)]


def _last_results(messages: list[ModelMessage]) -> list[str]:
    last = messages[-1]
    out: list[str] = []
    if isinstance(last, ModelRequest):
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                content = part.content if isinstance(part.content, str) else repr(part.content)
                # Newer Pydantic AI reports a ModelRetry as a ToolReturnPart marked 'retried'.
                out.append(RETRY + content if getattr(part, 'outcome', None) == 'retried' else content)
            elif isinstance(part, RetryPromptPart):
                content = part.content if isinstance(part.content, str) else repr(part.content)
                out.append(RETRY + content)
    return out


def scripted_model(calls: Sequence[Call], transcript: Transcript) -> FunctionModel:
    """A model that calls each `(tool_name, args)` in turn, recording results into `transcript`."""
    step = 0

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal step
        if step == 0:
            transcript.tools = list(info.function_tools)
        else:
            transcript.results.extend(_last_results(messages))
        if step < len(calls):
            current = calls[step]
            step += 1
            if isinstance(current, list):  # several tool calls in one response, run concurrently
                return ModelResponse(
                    parts=[ToolCallPart(n, a, tool_call_id=f'call-{step}-{i}') for i, (n, a) in enumerate(current)]
                )
            name, args = current
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f'call-{step}')])
        return ModelResponse(parts=[TextPart('done')])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        # Event listeners make the agent stream; replay the same scripted step as deltas.
        response = model(messages, info)
        for index, part in enumerate(response.parts):
            if isinstance(part, ToolCallPart):
                delta = DeltaToolCall(part.tool_name, json.dumps(part.args), tool_call_id=part.tool_call_id)
                yield {index: delta}
            elif isinstance(part, TextPart):
                yield part.content

    return FunctionModel(model, stream_function=stream)


async def run_agent(
    agent: Agent[Any, Any],
    calls: Sequence[Call],
    *,
    listeners: Sequence[tuple[type[CapabilityEvent], Callable[..., Any]]] = (),
    **run_kwargs: Any,
) -> Transcript:
    """Run `calls` through an existing `agent` (its model replaced by the script)."""
    transcript = Transcript()

    @agent.on_event(CapabilityEvent)
    async def collect(ctx: Any, event: CapabilityEvent) -> None:
        transcript.events.append(event)

    for kind, listener in listeners:
        agent.on_event(kind)(listener)

    result = await agent.run('go', model=scripted_model(calls, transcript), **run_kwargs)
    transcript.messages = result.all_messages()
    return transcript


async def run_tools(
    capabilities: Sequence[Any],
    calls: Sequence[Call],
    *,
    listeners: Sequence[tuple[type[CapabilityEvent], Callable[..., Any]]] = (),
    **run_kwargs: Any,
) -> Transcript:
    """Run `calls` through a new agent with `capabilities`; see the module docstring."""
    agent: Agent[Any, Any] = Agent(capabilities=list(capabilities), retries=1000)
    return await run_agent(agent, calls, listeners=listeners, **run_kwargs)


async def call(capabilities: Sequence[Any], name: str, /, **args: Any) -> tuple[str, Transcript]:
    """One tool call; returns its result and the transcript."""
    transcript = await run_tools(capabilities, [(name, args)])
    return transcript.results[0], transcript
