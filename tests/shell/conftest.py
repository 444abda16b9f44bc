"""Helpers for Shell behaviour tests: a real `Agent` driven by a scripted `FunctionModel`."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace


@pytest.fixture
def anyio_backend() -> str:
    # Agent runs need asyncio (pydantic-ai's own run machinery); trio is covered in test_trio.py.
    return 'asyncio'


def direct_context(ws: Path, call: str = 'c1') -> RunContext[None]:
    """A hand-built run context on a local workspace at `ws`, for calling a toolset's tools directly
    (under trio, or without a model in the loop)."""
    return RunContext(
        deps=None,
        model=TestModel(),
        usage=RunUsage(),
        workspace=Workspace(LocalWorkspaceBackend(ws)),
        run_id='run-1',
        tool_call_id=call,
    )


Call = tuple[str, dict[str, Any]]


def rc(command: str, **kwargs: object) -> Call:
    """A `run_command` call."""
    return ('run_command', {'command': command, **kwargs})


def command_id(started: str) -> str:
    """The ID a `start_command` result ends with."""
    return started.rsplit('ID: ', 1)[1]


async def check_until(capabilities: list[Any], command_id: str, done: str, *, tries: int, pause: float) -> str:
    """`check_command` in fresh runs until its text holds `done`, at most `tries` times `pause` s apart: the last text."""
    for _ in range(tries):
        [(_, text)] = await run_calls(capabilities, [('check_command', {'command_id': command_id})])
        if done in text:
            break
        await anyio.sleep(pause)
    return text


@dataclass
class Script:
    """Tool calls the model makes, one per response, then a final text answer."""

    calls: Sequence[Call]
    prefix: str = 'call'
    results: list[tuple[str, str]] = field(default_factory=list)

    def _next(self, messages: list[ModelMessage]) -> tuple[int, Call] | None:
        n = sum(isinstance(m, ModelResponse) for m in messages)
        return (n, self.calls[n]) if n < len(self.calls) else None

    def function(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = self._next(messages)
        if step is None:
            return ModelResponse(parts=[TextPart('done')])
        n, (name, args) = step
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f'{self.prefix}-{n}')])

    async def stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        step = self._next(messages)
        if step is None:
            yield 'done'
            return
        n, (name, args) = step
        yield {0: DeltaToolCall(name=name, json_args=json.dumps(args), tool_call_id=f'{self.prefix}-{n}')}

    def model(self) -> FunctionModel:
        return FunctionModel(self.function, stream_function=self.stream)


def tool_results(messages: Sequence[ModelMessage]) -> list[tuple[str, str]]:
    """Every tool result in order as `(kind, text)`: kind `return`, `retry` or `failed`."""
    out: list[tuple[str, str]] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, RetryPromptPart):
                out.append(('retry', part.content if isinstance(part.content, str) else repr(part.content)))
            elif isinstance(part, ToolReturnPart):
                outcome = getattr(part, 'outcome', 'success')
                kind = {'success': 'return', 'retried': 'retry', 'retry': 'retry'}.get(outcome, outcome)
                out.append((kind, part.content if isinstance(part.content, str) else repr(part.content)))
    return out


async def run_calls(
    capabilities: list[Any],
    calls: Sequence[Call],
    *,
    events: list[Any] | None = None,
    prefix: str = 'call',
    **run_kwargs: Any,
) -> list[tuple[str, str]]:
    """Run an agent whose model makes `calls`; return the tool results (and collect events)."""
    script = Script(calls, prefix=prefix)
    agent = Agent(script.model(), capabilities=capabilities, retries=100)
    if events is None:
        result = await agent.run('go', **run_kwargs)
    else:

        async def handler(ctx: Any, stream: AsyncIterator[Any]) -> None:
            async for event in stream:
                if getattr(event, 'event_kind', None) == 'capability':
                    events.append(event)

        result = await agent.run('go', event_stream_handler=handler, **run_kwargs)
    return tool_results(result.all_messages())


def norm(text: str, workspace: Path | None = None) -> str:
    """Replace volatile parts (command IDs, PIDs, the workspace path) with placeholders."""
    if workspace is not None:
        text = text.replace(str(workspace.resolve()), '<ws>')
    text = re.sub(r'\b[0-9a-f]{32}\b', '<id>', text)
    text = re.sub(r'"pid": \d+', '"pid": <pid>', text)
    text = re.sub(r'PID: \d+', 'PID: <pid>', text)
    text = re.sub(r'kill -- -\d+', 'kill -- -<pid>', text)
    return text


def live_processes_matching(marker: str) -> list[int]:
    """PIDs of non-zombie processes whose command line contains `marker`."""
    pids = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f'/proc/{entry}/cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
            state = Path(f'/proc/{entry}/stat').read_text().rsplit(')', 1)[1].split()[0]
        except OSError:
            continue
        if f'{marker} ' in cmdline and state not in ('Z', 'X') and int(entry) != os.getpid():
            pids.append(int(entry))
    return pids


def gone_after_signal(marker: str, within: float = 10.0) -> list[int]:
    """PIDs still matching `marker` after waiting up to `within` seconds for them to go.

    For processes the test itself signalled: a signal is delivered asynchronously, so a process may
    outlive the `killpg` call (and its shell's status file) by a moment. Tools that promise the
    processes are gone when they return are checked with `live_processes_matching` at once instead.
    """
    deadline = time.monotonic() + within
    while (pids := live_processes_matching(marker)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return pids


def kill_matching(marker: str) -> None:
    for pid in live_processes_matching(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An empty workspace directory."""
    path = tmp_path / 'ws'
    path.mkdir()
    return path
