"""Approval under durable engines (issue 21): the agent, the model and, for Temporal, the workflow.

One model step makes two calls that need a person, a `write_file` and a `run_command` (or, with
`DURABLE_APPROVAL_SCENARIO=patch`, one `apply_patch`); every later step answers `done`. `approval_worker.py` runs the request and the resume, each in a process of its
own, under Temporal, DBOS or Prefect. Importable by Temporal's workflow sandbox: the workspace is
`DURABLE_APPROVAL_WS` and the contract `DURABLE_APPROVAL_CONTRACT`, both set before import.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability, LocalWorkspace
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied

WS = Path(os.environ.get('DURABLE_APPROVAL_WS', '/nonexistent-approval-ws'))
CONTRACT = os.environ.get('DURABLE_APPROVAL_CONTRACT', 'root_dir')

CALLS = [
    ('write_file', {'path': 'notes.txt', 'content': 'approved\n'}),
    ('run_command', {'command': 'touch ran'}),
]

SCENARIO = os.environ.get('DURABLE_APPROVAL_SCENARIO', 'change')
"""`change`: the two calls above; `patch`: one `apply_patch` of two files (issue 22), `PATCH_CALLS`."""

PATCH = '\n'.join(
    ['*** Begin Patch', '*** Update File: a.txt', '@@', '-a', '+A', '*** Add File: new.txt', '+n', '*** End Patch']
)
PATCH_CALLS = [('apply_patch', {'input': PATCH})]
if SCENARIO == 'patch':
    CALLS = PATCH_CALLS


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Both calls in the first response (ids `call-0`, `call-1`), then `done`: stateless, replay-safe."""
    if any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[TextPart('done')])
    return ModelResponse(parts=[ToolCallPart(n, a, tool_call_id=f'call-{i}') for i, (n, a) in enumerate(CALLS)])


def build(durability: AbstractCapability[Any] | None, name: str = 'approval_agent') -> Agent[None, Any]:
    from pydantic_ai_harness_rs import FileSystem, Shell
    from pydantic_ai_harness_rs.filesystem import DEFAULT_TOOL_NAMES

    options: dict[str, Any] = {'require_approval': True}
    if SCENARIO == 'patch':
        options['tools'] = [*DEFAULT_TOOL_NAMES, 'apply_patch']
    filesystem = FileSystem(root_dir=WS, **options) if CONTRACT == 'root_dir' else FileSystem(**options)
    capabilities: list[Any] = [LocalWorkspace(WS), filesystem, Shell(require_approval=['touch'])]
    if durability is not None:
        capabilities.append(durability)
    return Agent(
        FunctionModel(scripted),
        name=name,
        retries=5,
        capabilities=capabilities,
        output_type=[str, DeferredToolRequests],
    )


def answers(decisions: dict[str, Any]) -> DeferredToolResults:
    approvals: dict[str, Any] = {}
    for call_id, decision in decisions.items():
        if 'deny' in decision:
            approvals[call_id] = ToolDenied(decision['deny'])
        else:
            approvals[call_id] = ToolApproved(override_args=decision.get('override_args'))
    return DeferredToolResults(approvals=approvals)


def outcome(output: Any, messages: list[ModelMessage], start: int) -> str:
    """The run's outcome as JSON: the request's metadata, the history, the tool results since `start`."""
    results = [
        [getattr(part, 'outcome', 'success'), part.content if isinstance(part.content, str) else repr(part.content)]
        for message in messages[start:]
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    return json.dumps(
        {
            'deferred': output.metadata if isinstance(output, DeferredToolRequests) else None,
            'history': ModelMessagesTypeAdapter.dump_json(messages).decode(),
            'results': results,
        }
    )


async def drive(agent: Agent[None, Any], request: str) -> str:
    """`request`: `{"history": ..., "decisions": ...}` to resume, `{}` to start."""
    spec = json.loads(request)
    if 'history' not in spec:
        result = await agent.run('go')
        return outcome(result.output, result.all_messages(), 0)
    history = ModelMessagesTypeAdapter.validate_json(spec['history'])
    result = await agent.run(message_history=history, deferred_tool_results=answers(spec['decisions']))
    return outcome(result.output, result.all_messages(), len(history))


try:
    from temporalio import workflow
    from temporalio.workflow import ActivityConfig

    with workflow.unsafe.imports_passed_through():
        from pydantic_ai.durable_exec.temporal import TemporalDurability

    temporal_agent = build(
        TemporalDurability(
            activity_config=ActivityConfig(start_to_close_timeout=timedelta(seconds=60)),
            model_activity_config=ActivityConfig(start_to_close_timeout=timedelta(seconds=60)),
        ),
        name='approval_temporal_agent',
    )

    @workflow.defn
    class ApprovalWorkflow:
        __pydantic_ai_agents__ = [temporal_agent]

        @workflow.run
        async def run(self, request: str) -> str:
            return await drive(temporal_agent, request)

except ImportError:  # pragma: no cover - without temporalio
    pass
