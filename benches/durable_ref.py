"""pydantic-ai-harness 0.62.0's `FileSystem` under Temporal: the reference side of `bench_durable.py`.

Run with 0.62.0's venv (`tests/compat/.venvs/harness-0.62.0`, with `temporalio` installed there):
`DURABLE_REF_WS=<dir> python benches/durable_ref.py ADDRESS N`. Self-contained (imports nothing of ours):
an agent with `LocalWorkspace`, 0.62.0's `FileSystem()` and `TemporalDurability`, a scripted
model, a worker in this process; for `write_file` and `edit_file`, workflows of N and 2N steps and
the same scripts outside a workflow. Prints one JSON line `RESULT {tool: [tool activities per call
(seconds, median), activities per call, added seconds per agent step]}`.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.workflow import ActivityConfig

if not workflow.unsafe.in_sandbox():  # the sandbox's re-import of this module takes the host's modules
    sys.path.insert(0, str(Path(__file__).resolve().parent))

with workflow.unsafe.imports_passed_through():
    from durable_script import script, seed
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, TemporalDurability
    from pydantic_ai_harness import FileSystem

WS = Path(os.environ.get('DURABLE_REF_WS', '/nonexistent'))
QUEUE = 'harness-ref-bench'
TOOLS = ('write_file', 'edit_file')


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    prompt = next(p for p in first.parts if isinstance(p, UserPromptPart))
    steps = json.loads(str(prompt.content))
    done = sum(isinstance(m, ModelResponse) for m in messages)
    if done >= len(steps):
        return ModelResponse(parts=[TextPart('done')])
    name, args = steps[done]
    return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f'call-{done}')])


CONFIG = ActivityConfig(start_to_close_timeout=timedelta(seconds=60))
agent = Agent(
    FunctionModel(scripted),
    name='ref_agent',
    capabilities=[LocalWorkspace(WS), FileSystem(), TemporalDurability(activity_config=CONFIG)],
)


@workflow.defn
class RefWorkflow:
    __pydantic_ai_agents__ = [agent]

    @workflow.run
    async def run(self, script: str) -> str:
        return (await agent.run(script)).output


def _seconds(event: Any) -> float:
    return event.event_time.seconds + event.event_time.nanos / 1e9


async def tool_activities(client: Client, workflow_id: str) -> list[tuple[float, int]]:
    """Per tool call: (seconds its activities took, scheduled to completed, summed; how many)."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    return calls_of(history.events)


def calls_of(events: Any) -> list[tuple[float, int]]:
    """The non-model activities between consecutive model requests, one group per tool call."""
    scheduled: dict[int, tuple[str, float]] = {}
    groups: list[list[float]] = []
    for event in events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = (name, _seconds(event))
            if name.endswith('model_request'):
                groups.append([])
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            name, at = scheduled[event.activity_task_completed_event_attributes.scheduled_event_id]
            if not name.endswith('model_request') and groups:
                groups[-1].append(_seconds(event) - at)
    return [(sum(g), len(g)) for g in groups[:-1]]  # the last model request answers: no tool call after it


async def main() -> None:
    address, calls = sys.argv[1], int(sys.argv[2])
    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    out: dict[str, tuple[float, float, float]] = {}
    async with Worker(client, task_queue=QUEUE, workflows=[RefWorkflow], max_concurrent_activities=20):
        for name in TOOLS:
            elapsed: dict[tuple[bool, int], float] = {}
            groups: list[tuple[float, int]] = []
            seed(WS, 1)
            await agent.run(json.dumps(script(name, 1)))  # warm up
            for steps in (calls, 2 * calls):
                prompt = json.dumps(script(name, steps))
                seed(WS, steps)
                start = time.perf_counter()
                await agent.run(prompt)
                elapsed[False, steps] = time.perf_counter() - start
                seed(WS, steps)
                workflow_id = f'ref-{uuid.uuid4().hex}'
                start = time.perf_counter()
                await client.execute_workflow(RefWorkflow.run, prompt, id=workflow_id, task_queue=QUEUE)
                elapsed[True, steps] = time.perf_counter() - start
                groups += await tool_activities(client, workflow_id)
            durable = elapsed[True, 2 * calls] - elapsed[True, calls]
            plain = elapsed[False, 2 * calls] - elapsed[False, calls]
            out[name] = (
                statistics.median(g[0] for g in groups),
                statistics.median(g[1] for g in groups),
                (durable - plain) / calls,
            )
    print('RESULT ' + json.dumps(out), flush=True)


if __name__ == '__main__':
    # The workflow sandbox re-imports the workflow's module by name: run it as `durable_ref`.
    sys.path.insert(0, str(Path(__file__).parent))
    import durable_ref

    asyncio.run(durable_ref.main())
