"""The agents, workflow and worker the Temporal tests run: importable by a worker subprocess too.

The workspace is `DURABLE_WS` (set before import). A scripted model reads its script from the
run's prompt (a JSON list of steps), so a model activity retried on another worker takes the same
step: the step is the number of model responses so far, never a counter in the worker. A step
is `[tool_name, args]`, or a list of them (one response, run concurrently). The final answer is
JSON: `results`, every tool result the model saw, in order; `tools`, the offered tools'
descriptions and parameter schemas by name.

A step may be `{"pause": "<name>"}`: a worker started with `DURABLE_PAUSE=<name>` touches
`<ws>/../<name>.paused` and blocks there (the crash tests kill it); any other worker skips it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import Hooks, LocalWorkspace
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.workflow import ActivityConfig

with workflow.unsafe.imports_passed_through():
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, TemporalDurability
    from pydantic_ai_harness_rs import Checkpoints, FileSystem, Shell
    from pydantic_ai_harness_rs.filesystem import DEFAULT_TOOL_NAMES, FileChangeRequestEvent, FileReadEvent

WS = Path(os.environ.get('DURABLE_WS', '/nonexistent-durable-ws'))
"""The workspace every agent here works in (the tests set it before importing this module)."""

TASK_QUEUE = 'harness-rs-durable'

RETRY = 'RETRY: '


def _script(messages: list[ModelMessage]) -> list[Any]:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    prompt = next(p for p in first.parts if isinstance(p, UserPromptPart))
    assert isinstance(prompt.content, str)
    return json.loads(prompt.content)


def _results(messages: list[ModelMessage]) -> list[str]:
    out: list[str] = []
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                content = part.content if isinstance(part.content, str) else repr(part.content)
                out.append(RETRY + content if getattr(part, 'outcome', None) == 'retried' else content)
            elif isinstance(part, RetryPromptPart):
                out.append(RETRY + (part.content if isinstance(part.content, str) else repr(part.content)))
    return out


def _pause(name: str) -> None:
    if os.environ.get('DURABLE_PAUSE') != name:
        return
    (WS.parent / f'{name}.paused').touch()
    while True:  # until this worker is killed
        time.sleep(1)


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The model: the next step of the prompt's script, by the number of responses so far."""
    steps = [s for s in _script(messages)]
    responses = sum(isinstance(m, ModelResponse) for m in messages)
    # Pauses take no model response: skip (or block on) those before the step this response is.
    index = 0
    taken = 0
    while index < len(steps):
        step = steps[index]
        if isinstance(step, dict):
            if taken == responses:
                _pause(step['pause'])
            index += 1
            continue
        if taken == responses:
            break
        taken += 1
        index += 1
    if index >= len(steps):
        tools = {t.name: [t.description, t.parameters_json_schema] for t in info.function_tools}
        return ModelResponse(parts=[TextPart(json.dumps({'results': _results(messages), 'tools': tools}))])
    step = steps[index]
    calls = step if step and isinstance(step[0], list) else [step]
    return ModelResponse(
        parts=[ToolCallPart(name, args, tool_call_id=f'call-{responses}-{i}') for i, (name, args) in enumerate(calls)]
    )


SHORT_ACTIVITY = 3
"""Seconds of `short_agent`'s default activity timeout."""

FAST_RETRY = ActivityConfig(start_to_close_timeout=timedelta(seconds=60), heartbeat_timeout=timedelta(seconds=2))
"""Activities of a dead worker are retried elsewhere once 2 s pass without a heartbeat."""


def _agent(name: str, *, root_dir: bool) -> Agent[None, str]:
    return Agent(
        FunctionModel(scripted),
        name=name,
        retries=20,
        capabilities=[
            LocalWorkspace(WS),
            FileSystem(root_dir=WS) if root_dir else FileSystem(),
            Shell(persist_cwd=True, tools=['run_command', 'start_command', 'check_command', 'stop_command', 'shell']),
            TemporalDurability(activity_config=FAST_RETRY, model_activity_config=FAST_RETRY),
        ],
    )


async def _streamed(messages: list[ModelMessage], info: AgentInfo) -> Any:
    """`scripted` as a stream (an agent with event listeners streams its model responses)."""
    response = scripted(messages, info)
    for index, part in enumerate(response.parts):
        if isinstance(part, ToolCallPart):
            yield {index: DeltaToolCall(part.tool_name, json.dumps(part.args), tool_call_id=part.tool_call_id)}
        elif isinstance(part, TextPart):
            yield part.content


def events_file(run_id: str) -> Path:
    """Where `record_events` writes run `run_id`'s capability events, one JSON line each."""
    return WS.parent / f'events-{run_id}.jsonl'


async def record_events(ctx: Any, stream: Any) -> None:
    """The event stream handler: each FileSystem and Shell event of the run, appended as it arrives
    (in an activity on the worker under Temporal, so a replayed workflow does not call it again)."""
    async for event in stream:
        kind = getattr(event, 'kind', '')
        if isinstance(kind, str) and kind.startswith(('file_system.', 'shell.')):
            fields = {k: v for k, v in vars(event).items() if k not in ('capability_id',)}
            with events_file(ctx.run_id).open('a') as f:
                f.write(json.dumps(fields, default=str) + '\n')


VETO = 'vetoed'
"""A change whose path contains this is cancelled by `listened_agent`'s listener."""


PAUSE_IN_LISTENER = 'listener'
"""`DURABLE_PAUSE` value that makes the listener block (in workflow code) on a change of a path
containing `pause`: a worker killed there has run the plan, not the commit."""


RAISE = 'raising'
"""A change or a read of a path containing this makes `listened_agent`'s listeners raise `RuntimeError`."""


def _raise_on(path: str) -> None:
    if RAISE in path:
        raise RuntimeError(f'a listener broke on {path}')


def _read(ctx: Any, event: FileReadEvent) -> None:
    _raise_on(event.path)


def _veto(ctx: Any, event: FileChangeRequestEvent) -> None:
    _raise_on(event.path)
    if VETO in event.path:
        event.cancel('a listener said no')
    if 'pause' in event.path and workflow.in_workflow():
        with workflow.unsafe.sandbox_unrestricted():
            _pause(PAUSE_IN_LISTENER)


PATCH_TOOLS = [*DEFAULT_TOOL_NAMES, 'apply_patch']
"""The listened agents' FileSystem tools: the default ones and `apply_patch`."""


def _listened_agent(name: str, *, root_dir: bool) -> Agent[None, str]:
    hooks: Hooks[None] = Hooks()
    hooks.on.event(FileChangeRequestEvent)(_veto)
    hooks.on.event(FileReadEvent)(_read)
    return Agent(
        FunctionModel(scripted, stream_function=_streamed),
        name=name,
        retries=20,
        capabilities=[
            LocalWorkspace(WS),
            FileSystem(root_dir=WS, tools=PATCH_TOOLS) if root_dir else FileSystem(tools=PATCH_TOOLS),
            Shell(tools=['run_command', 'start_command', 'check_command', 'stop_command', 'shell']),
            hooks,
            TemporalDurability(
                activity_config=FAST_RETRY, model_activity_config=FAST_RETRY, event_stream_handler=record_events
            ),
        ],
    )


short_agent = Agent(
    FunctionModel(scripted),
    name='short_agent',
    retries=20,
    capabilities=[
        LocalWorkspace(WS),
        Shell(tools=['run_command', 'shell']),
        TemporalDurability(
            activity_config=ActivityConfig(
                start_to_close_timeout=timedelta(seconds=SHORT_ACTIVITY), heartbeat_timeout=timedelta(seconds=2)
            )
        ),
    ],
)
"""`Shell` (`run_command`, `shell`) with a default activity timeout of `SHORT_ACTIVITY` seconds."""


@workflow.defn
class ShortWorkflow:
    __pydantic_ai_agents__ = [short_agent]

    @workflow.run
    async def run(self, script: str) -> str:
        return (await short_agent.run(script)).output


listened_root_agent = _listened_agent('listened_root_agent', root_dir=True)
"""`FileSystem(root_dir=WS)` (with `apply_patch`) and `Shell`, with a vetoing `FileChangeRequestEvent` listener (one raising
on `RAISE` paths, with a `FileReadEvent` listener that does too) and an event recorder."""

listened_workspace_agent = _listened_agent('listened_workspace_agent', root_dir=False)
"""`FileSystem()` on the workspace and `Shell`, with the same listeners and recorder."""


@workflow.defn
class ListenedRootWorkflow:
    __pydantic_ai_agents__ = [listened_root_agent]

    @workflow.run
    async def run(self, script: str) -> str:
        return (await listened_root_agent.run(script)).output


@workflow.defn
class ListenedWorkspaceWorkflow:
    __pydantic_ai_agents__ = [listened_workspace_agent]

    @workflow.run
    async def run(self, script: str) -> str:
        return (await listened_workspace_agent.run(script)).output


root_agent = _agent('root_agent', root_dir=True)
"""`FileSystem(root_dir=WS)`: the document's contract."""

workspace_agent = _agent('workspace_agent', root_dir=False)
"""`FileSystem()` on the run's workspace: 0.62.0's contract."""


@workflow.defn
class RootWorkflow:
    __pydantic_ai_agents__ = [root_agent]

    @workflow.run
    async def run(self, script: str) -> str:
        return (await root_agent.run(script)).output


@workflow.defn
class WorkspaceWorkflow:
    __pydantic_ai_agents__ = [workspace_agent]

    @workflow.run
    async def run(self, script: str) -> str:
        return (await workspace_agent.run(script)).output


checkpoints = Checkpoints(root=WS)
"""`checkpointed_agent`'s checkpoints (the worker's agent records them in its activities)."""

checkpointed_agent = Agent(
    FunctionModel(scripted),
    name='checkpointed_agent',
    retries=20,
    capabilities=[
        LocalWorkspace(WS),
        FileSystem(),
        Shell(tools=['run_command', 'start_command', 'check_command', 'shell']),
        checkpoints,
        TemporalDurability(activity_config=FAST_RETRY, model_activity_config=FAST_RETRY),
    ],
)
"""`FileSystem` and `Shell` on the workspace, with `Checkpoints`."""


@workflow.defn
class CheckpointedWorkflow:
    __pydantic_ai_agents__ = [checkpointed_agent]

    @workflow.run
    async def run(self, script: str) -> str:
        return (await checkpointed_agent.run(script)).output


interactive_agent = Agent(
    FunctionModel(scripted),
    name='interactive_agent',
    retries=20,
    capabilities=[
        LocalWorkspace(WS),
        Shell(interactive=True),
        TemporalDurability(activity_config=FAST_RETRY, model_activity_config=FAST_RETRY),
    ],
)
"""`Shell(interactive=True)`: its sessions are relayed, so they outlive a worker."""


@workflow.defn
class InteractiveWorkflow:
    __pydantic_ai_agents__ = [interactive_agent]

    @workflow.run
    async def run(self, script: str) -> str:
        return (await interactive_agent.run(script)).output


WORKFLOWS = [
    RootWorkflow,
    InteractiveWorkflow,
    WorkspaceWorkflow,
    ListenedRootWorkflow,
    ListenedWorkspaceWorkflow,
    ShortWorkflow,
    CheckpointedWorkflow,
]


async def connect(address: str) -> Client:
    return await Client.connect(address, plugins=[PydanticAIPlugin()])


def worker(client: Client, *, passthrough: bool = False, workflows: Sequence[type] = WORKFLOWS) -> Worker:
    """A worker for `workflows` (the plugin registers the agents' activities), configured as for
    `pydantic-ai-harness`: the client's `PydanticAIPlugin` and Temporal's default sandboxed runner.

    `passthrough`: also pass this package through the sandbox (the line the README asked for
    before issue 21), which must keep working.
    """
    runner: dict[str, Any] = {}
    if passthrough:
        restrictions = SandboxRestrictions.default.with_passthrough_modules('pydantic_ai_harness_rs')
        runner['workflow_runner'] = SandboxedWorkflowRunner(restrictions=restrictions)
    return Worker(
        client,
        task_queue=TASK_QUEUE,
        workflows=list(workflows),
        max_concurrent_activities=20,
        # A dead worker's cached workflow moves to another worker after 1 s rather than 10 s.
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
        **runner,
    )


async def _serve(address: str) -> None:
    client = await connect(address)
    async with worker(client):
        (WS.parent / f'worker-{os.getpid()}.ready').touch()
        await asyncio.Event().wait()


if __name__ == '__main__':  # a worker subprocess: `python _temporal_app.py <address>`
    asyncio.run(_serve(sys.argv[1]))
