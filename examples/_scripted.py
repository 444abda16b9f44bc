"""A scripted stand-in for a real model, so every example runs without an API key.

`scripted([(tool, args), ...])` calls each tool in turn, one call per model step, then answers
`final`. `model_or_script(script)` is the model an example runs: the one named on the command line
(`python examples/x.py openai:gpt-5`, which needs that provider's package and key), else the script.
`show(result)` prints what each tool call returned to the model.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

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


def scripted(calls: Sequence[tuple[str, dict[str, Any]]], final: str = 'done') -> FunctionModel:
    """A model that calls each `(tool_name, args)` in turn, then answers `final`."""
    step = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal step
        if step < len(calls):
            name, args = calls[step]
            step += 1
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f'call-{step}')])
        return ModelResponse(parts=[TextPart(final)])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        # Streamed runs (an `on_event` listener, `run_stream_events`) ask for deltas.
        for part in respond(messages, info).parts:
            if isinstance(part, ToolCallPart):
                yield {0: DeltaToolCall(part.tool_name, json.dumps(part.args), tool_call_id=part.tool_call_id)}
            elif isinstance(part, TextPart):
                yield part.content

    return FunctionModel(respond, stream_function=stream)


def model_or_script(calls: Sequence[tuple[str, dict[str, Any]]], final: str = 'done') -> Any:
    """The model named as the first command-line argument, else `scripted(calls, final)`.

    `-h` / `--help` prints the script's docstring and how to name a model, then exits 0.
    """
    if len(sys.argv) > 1 and sys.argv[1] in ('-h', '--help'):
        main = sys.modules['__main__']
        print((main.__doc__ or '').strip())
        print(f'\nusage: python {sys.argv[0]} [MODEL]   (e.g. openai:gpt-5; default: a scripted model, no API key)')
        raise SystemExit(0)
    return sys.argv[1] if len(sys.argv) > 1 else scripted(calls, final)


def show(messages: Sequence[ModelMessage]) -> None:
    """Print each tool call's result as the model received it (a retry as `RETRY: ...`)."""
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                retried = getattr(part, 'outcome', None) == 'retried'
                print(f'{part.tool_name}: {"RETRY: " if retried else ""}{part.content}'.rstrip())
            elif isinstance(part, RetryPromptPart):
                print(f'{part.tool_name}: RETRY: {part.content}'.rstrip())
