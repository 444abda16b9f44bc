"""A DBOS worker process for the DBOS tests: one agent run as one workflow, started or recovered.

Usage: `python dbos_worker.py SCENARIO CONTRACT WORKSPACE DATABASE MODE`, where SCENARIO is
`files` or `command` (see `SCRIPTS`), CONTRACT is `root_dir` (`FileSystem(root_dir=...)`) or
`workspace` (root_dir left out, the run's `LocalWorkspace`), and MODE is

- `run`: start the workflow and print its outcome;
- `crash`: start it, and when the model is asked for the step after `CRASH_AT` (so every tool call
  before it completed), print `CRASH-POINT` and hang, to be killed with SIGKILL by the test;
- `recover`: launch DBOS on the same database, which recovers the pending workflow, and print
  its outcome.

The outcome is one JSON line `RESULT {...}`: the tool results the model received, in order, and
the capability events the `event_stream_handler` got (class name and a few fields). The model is
stateless (it picks its call from the history), so a recovered workflow replays it exactly.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from dbos import DBOS, SetWorkflowID
from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai_harness_rs.filesystem import FileSystem
from pydantic_ai_harness_rs.shell import Shell

WORKFLOW_ID = 'harness-rs-dbos-test'
MARK = 'harness_rs_dbos_marker'
"""In every command line, so the test can find leftover processes in the process table."""

WAIT_FOR_GO = f'while [ ! -e go ]; do sleep 0.05; done  # {MARK}'

SCRIPTS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    'files': [
        ('write_file', {'path': 'written.txt', 'content': 'written once\n'}),
        ('edit_file', {'path': 'edited.txt', 'old_text': 'a', 'new_text': 'ab'}),
        ('run_command', {'command': f'echo x >> appended.log  # {MARK}'}),
        ('run_command', {'command': 'mkdir -p sub && cd sub'}),
        ('create_directory', {'path': 'made'}),
        # crash here (`CRASH_AT['files']`): every call above completed
        ('run_command', {'command': 'pwd'}),
        ('read_file', {'path': 'edited.txt'}),
        ('list_directory', {'path': '.'}),
        ('search_files', {'pattern': 'ab'}),
        ('find_files', {'pattern': '*.txt'}),
        ('file_info', {'path': 'written.txt'}),
    ],
    'command': [
        ('start_command', {'command': f'echo started >> bg.log; {WAIT_FOR_GO}\necho finished >> bg.log'}),
        # crash while this one runs (the test kills the worker once `fg.log` has its first line)
        ('shell', {'command': f'echo x >> fg.log; {WAIT_FOR_GO}\necho y >> fg.log', 'timeout': 120}),
        ('check_command', {'command_id': '{id}'}),
        ('stop_command', {'command_id': '{id}'}),
    ],
}

CRASH_AT = {'files': 5}
"""The model step at which `crash` mode hangs (the `command` scenario is killed by the test instead)."""

TOOLS = {
    'files': ['run_command'],
    'command': ['shell', 'start_command', 'check_command', 'stop_command'],
}


def _returns(messages: list[ModelMessage]) -> list[str]:
    return [
        part.content if isinstance(part.content, str) else repr(part.content)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) or type(part).__name__ == 'RetryPromptPart'
    ]


def build(scenario: str, contract: str, workspace: Path, mode: str) -> tuple[Agent[None, str], list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    calls = SCRIPTS[scenario]

    async def model(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if mode == 'crash' and step == CRASH_AT.get(scenario):
            print('CRASH-POINT', flush=True)
            await asyncio.sleep(3600)
        if step >= len(calls):
            yield 'done'
            return
        name, args = calls[step]
        if args.get('command_id') == '{id}':
            started = next(r for r in _returns(messages) if r.startswith('Started background command'))
            args = {'command_id': re.search(r'ID: (\w+)', started).group(1)}  # type: ignore[union-attr]
        yield {0: DeltaToolCall(name=name, json_args=json.dumps(args), tool_call_id=f'call-{step}')}

    async def handler(ctx: Any, stream: Any) -> None:
        async for event in stream:
            if type(event).__module__.startswith('pydantic_ai_harness_rs'):
                fields = {k: v for k, v in vars(event).items() if k in ('path', 'operation', 'command', 'exit_code')}
                events.append({'event': type(event).__name__, **fields})

    file_system = FileSystem(root_dir=workspace) if contract == 'root_dir' else FileSystem()
    agent: Agent[None, str] = Agent(
        FunctionModel(stream_function=model),
        name='harness_rs_dbos',
        capabilities=[
            LocalWorkspace(str(workspace)),
            file_system,
            Shell(persist_cwd=True, tools=TOOLS[scenario]),
            DBOSDurability(event_stream_handler=handler),
        ],
    )
    return agent, events


def main() -> None:
    scenario, contract, workspace, database, mode = sys.argv[1:6]
    agent, events = build(scenario, contract, Path(workspace), mode)

    @DBOS.workflow(name='harness_rs_dbos_workflow')
    async def workflow(prompt: str) -> list[str]:
        result = await agent.run(prompt)
        return _returns(result.all_messages())

    DBOS(
        config={
            'name': 'harness-rs-dbos-test',
            'system_database_url': f'sqlite:///{database}',
            'run_admin_server': False,
        }
    )

    async def run() -> list[str]:
        if mode == 'recover':
            handle = await DBOS.retrieve_workflow_async(WORKFLOW_ID)
            return await handle.get_result()
        with SetWorkflowID(WORKFLOW_ID):
            return await workflow('go')

    DBOS.launch()
    try:
        results = asyncio.run(run())
    finally:
        DBOS.destroy()
    print('RESULT ' + json.dumps({'results': results, 'events': events}), flush=True)


if __name__ == '__main__':
    main()
