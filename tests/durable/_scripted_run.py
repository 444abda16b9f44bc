"""The scripted agent runs of the DBOS and Prefect tests (`dbos_worker.py`, `prefect_worker.py`).

Two scenarios: `files` (every file tool, and `run_command` with `persist_cwd`) and `command`
(`start_command`, the `shell` tool, `check_command`, `stop_command`). The model is stateless: it
picks its next call from the history, so an engine that replays recorded model steps drives it
exactly as the first run did. In `crash` mode it hangs at `CRASH_AT`, printing `CRASH-POINT`.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability, Hooks, LocalWorkspace
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai_harness_rs import Checkpoints
from pydantic_ai_harness_rs.filesystem import DEFAULT_TOOL_NAMES, FileChangeRequestEvent, FileSystem
from pydantic_ai_harness_rs.shell import Shell

MARK = 'harness_rs_durable_marker'
"""In every command line, so the test can find leftover processes in the process table."""

WAIT_FOR_GO = f'while [ ! -e go ]; do sleep 0.05; done  # {MARK}'
WAIT_FOR_BG = f'while [ ! -e bg.done ]; do sleep 0.05; done  # {MARK}'
"""The foreground command ends after the background one wrote its last line."""

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
        (
            'start_command',
            {'command': f'echo started >> bg.log; {WAIT_FOR_GO}\necho finished >> bg.log; touch bg.done'},
        ),
        # crash while this one runs (the test kills the worker once `fg.log` has its first line)
        ('shell', {'command': f'echo x >> fg.log; {WAIT_FOR_BG}\necho y >> fg.log', 'timeout': 120}),
        ('check_command', {'command_id': '{id}'}),
        ('stop_command', {'command_id': '{id}'}),
    ],
}

SCRIPTS['veto'] = [
    ('write_file', {'path': 'kept.txt', 'content': 'kept\n'}),
    ('write_file', {'path': 'vetoed.txt', 'content': 'new\n'}),
    ('edit_file', {'path': 'vetoed-old.txt', 'old_text': 'old', 'new_text': 'new'}),
    ('create_directory', {'path': 'vetoed-dir'}),
    ('read_file', {'path': 'kept.txt'}),
]
"""A listener (`FileChangeRequestEvent`) cancels every change of a path containing `vetoed`."""

VETO_RESULTS = [
    'Wrote 5 chars (1 lines) to kept.txt. [hash:78051faade05]',
    "['vetoed.txt' was not written: a listener said no]",
    "['vetoed-old.txt' was not edited: a listener said no]",
    "['vetoed-dir' was not created: a listener said no]",
    '[kept.txt | 1 lines | hash:78051faade05]\n     1\tkept\n',
]
VETO_EVENTS = [
    {'event': 'FileChangeRequestEvent', 'path': 'kept.txt', 'operation': 'write'},
    {'event': 'FileWrittenEvent', 'path': 'kept.txt'},
    {'event': 'FileChangeRequestEvent', 'path': 'vetoed.txt', 'operation': 'write'},
    {'event': 'FileChangeRequestEvent', 'path': 'vetoed-old.txt', 'operation': 'edit'},
    {'event': 'FileChangeRequestEvent', 'path': 'vetoed-dir', 'operation': 'create_directory'},
    {'event': 'FileReadEvent', 'path': 'kept.txt'},
]
"""What the `veto` scenario's model and event stream handler see."""

SCRIPTS['pause'] = [
    ('write_file', {'path': 'kept.txt', 'content': 'kept\n'}),
    ('edit_file', {'path': 'pause.txt', 'old_text': 'a', 'new_text': 'a\nb'}),
    ('read_file', {'path': 'pause.txt'}),
]
"""In `crash` mode the listener hangs on the edit's `FileChangeRequestEvent` (its plan done, its
commit not), printing `CRASH-POINT`."""


def patch(*lines: str) -> str:
    """An `apply_patch` input: `lines` between `*** Begin Patch` and `*** End Patch`."""
    return '\n'.join(['*** Begin Patch', *lines, '*** End Patch'])


VETOED_PATCH = patch(
    '*** Update File: a.txt', '@@', '-a', '+A', '*** Add File: new.txt', '+n', '*** Update File: vetoed-old.txt',
    '@@', '-old', '+new',
)  # fmt: skip
"""Three files, the last of which (by path) a vetoing listener refuses: nothing may be written."""

SCRIPTS['patch_veto'] = [
    ('apply_patch', {'input': VETOED_PATCH}),
    ('apply_patch', {'input': patch('*** Update File: a.txt', '@@', '-a', '+A', '*** Add File: new.txt', '+n')}),
    ('read_file', {'path': 'new.txt'}),
]
"""`apply_patch` (issue 22): a 3-file patch the listener vetoes one file of (nothing written), then one applied."""

PATCH_VETO_EVENTS = [
    {'event': 'FileChangeRequestEvent', 'path': 'a.txt', 'operation': 'edit'},
    {'event': 'FileChangeRequestEvent', 'path': 'new.txt', 'operation': 'write'},
    {'event': 'FileChangeRequestEvent', 'path': 'vetoed-old.txt', 'operation': 'edit'},
    {'event': 'FileChangeRequestEvent', 'path': 'a.txt', 'operation': 'edit'},
    {'event': 'FileChangeRequestEvent', 'path': 'new.txt', 'operation': 'write'},
    {'event': 'FileEditedEvent', 'path': 'a.txt'},
    {'event': 'FileWrittenEvent', 'path': 'new.txt'},
    {'event': 'FileReadEvent', 'path': 'new.txt'},
]
"""What the `patch_veto` scenario's event stream handler sees (a plain run's events and order)."""

SCRIPTS['patch_pause'] = [
    ('apply_patch', {'input': patch('*** Update File: a.txt', '@@', '-a', '+A', '*** Add File: pause.txt', '+p')}),
    ('read_file', {'path': 'pause.txt'}),
]
"""In `crash` mode the listener hangs on the patch's `pause.txt` request (its plan done, its commit not)."""


SCRIPTS['checkpoints'] = [
    ('write_file', {'path': 'a.txt', 'content': 'one\n'}),
    ('run_command', {'command': f"sed -i 's/a/b/' edited.txt && echo x >> count.log  # {MARK}"}),
    # crash here (`CRASH_AT['checkpoints']`): the calls above completed and were checkpointed
    ('edit_file', {'path': 'a.txt', 'old_text': 'one', 'new_text': 'two'}),
    ('create_directory', {'path': 'made'}),
    ('shell', {'command': 'echo y >> count.log'}),
]
"""With `Checkpoints(root=<workspace>)` on the agent: every call above is checkpointed in its unit."""

CHECKPOINTS = [
    ('call-0', 'write_file', ['a.txt']),
    ('call-1', 'run_command', ['count.log', 'edited.txt']),
    ('call-2', 'edit_file', ['a.txt']),
    ('call-3', 'create_directory', ['made']),
    ('call-4', 'shell', ['count.log']),
]
"""`(tool_call_id, tool_name, paths)` of the `checkpoints` scenario's checkpoints, oldest first."""

SCRIPTS['checkpoints_midway'] = [
    # the first attempt changes two files, then sleeps until the test kills its worker; the recovered
    # step finds `started` and goes on
    (
        'run_command',
        {
            'command': 'echo partial >> edited.txt; rm -f gone.txt; '
            f'if [ ! -e started ]; then touch started; sleep 600; fi; echo rest > rest.txt  # {MARK}'
        },
    ),
]
"""With `Checkpoints`: a command killed midway (its worker with it), run again by the recovery."""

SCRIPTS['session'] = [
    ('start_session', {'command': f'python3 -i -q -c "{MARK} = 1"'}),
    ('write_stdin', {'id': '1', 'text': 'x = 41 + 1\n'}),
    # crash here (`CRASH_AT['session']`): the session holds x, its relay outlives the worker
    ('write_stdin', {'id': '1', 'text': 'print(x)\n'}),
    ('list_sessions', {}),
]
"""`Shell(interactive=True)`: a `python3 -i` session defines `x`, the worker is killed, the recovered run reads it back."""

SESSION_RESULTS = [
    f'Session 1 started: \'python3 -i -q -c "{MARK} = 1"\'\n>>> ',
    'x = 41 + 1\n>>> ',
    'print(x)\n42\n>>> ',
]
"""The first three results of the `session` scenario (the list's row follows)."""

CRASH_AT = {'files': 5, 'checkpoints': 2, 'session': 2}
"""The model step at which `crash` mode hangs (the `command` scenario is killed by the test instead)."""

TOOLS = {
    'files': ['run_command'],
    'command': ['shell', 'start_command', 'check_command', 'stop_command'],
    'veto': ['run_command'],
    'pause': ['run_command'],
    'patch_veto': ['run_command'],
    'patch_pause': ['run_command'],
    'checkpoints': ['run_command', 'shell'],
    'checkpoints_midway': ['run_command'],
    'session': ['run_command'],
}


FILES_RESULTS = [
    'Wrote 13 chars (1 lines) to written.txt. [hash:0da7c2eb507d]',
    'Edited edited.txt. [hash:dbe840955579]',
    '(no output)',
    '(no output)',
    'Created directory: made',
    '[stdout]\n{ws}/sub\n',
    '[edited.txt | 1 lines | hash:dbe840955579]\n     1\tx=ab;\n',
    'appended.log  (2 bytes)\nedited.txt  (6 bytes)\nmade/\nsub/\nwritten.txt  (13 bytes){hidden}',
    'edited.txt:1:x=ab;',
    'edited.txt\nwritten.txt',
    'path: written.txt\ntype: file\nsize: 13 bytes\nbinary: False\nlines: 1\nhash: 0da7c2eb507d',
]
"""What the model receives in the `files` scenario, under either contract."""

EVENTS_BEFORE_CRASH = [
    {'event': 'FileChangeRequestEvent', 'path': 'written.txt', 'operation': 'write'},
    {'event': 'FileWrittenEvent', 'path': 'written.txt'},
    {'event': 'FileChangeRequestEvent', 'path': 'edited.txt', 'operation': 'edit'},
    {'event': 'FileEditedEvent', 'path': 'edited.txt'},
    {'event': 'FileChangeRequestEvent', 'path': 'made', 'operation': 'create_directory'},
    {'event': 'DirectoryCreatedEvent', 'path': 'made'},
]
EVENTS_AFTER_CRASH = [
    {'event': 'FileReadEvent', 'path': 'edited.txt'},
    {'event': 'DirectoryListedEvent', 'path': '.'},
    {'event': 'FilesSearchedEvent', 'path': '.'},
    {'event': 'FilesSearchedEvent', 'path': '.'},
]


def expected_results(ws: Path, contract: str) -> list[str]:
    """What the model receives in the `files` scenario run in `ws` under `contract`."""
    hidden = (
        '\n[1 hidden entries omitted; name a hidden path explicitly to include it]' if contract == 'workspace' else ''
    )
    return [r.format(ws=ws.resolve(), hidden=hidden) for r in FILES_RESULTS]


def marked_processes() -> list[tuple[int, int, str]]:
    """`(pid, pgid, args)` of every process whose command line carries `MARK`."""
    table = subprocess.run(['ps', '-ww', '-eo', 'pid=,pgid=,args='], capture_output=True, text=True, check=True).stdout
    rows = [line.split(None, 2) for line in table.splitlines()]
    return [(int(r[0]), int(r[1]), r[2]) for r in rows if len(r) == 3 and MARK in r[2] and 'ps -ww' not in r[2]]


def returns(messages: list[ModelMessage]) -> list[str]:
    return [
        part.content if isinstance(part.content, str) else repr(part.content)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) or type(part).__name__ == 'RetryPromptPart'
    ]


def build(
    scenario: str, contract: str, workspace: Path, mode: str, durability: Callable[[Any], AbstractCapability[None]]
) -> tuple[Agent[None, str], list[dict[str, Any]]]:
    """The scenario's agent with `durability(event_stream_handler)`, and the list its handler fills."""
    events: list[dict[str, Any]] = []
    calls = SCRIPTS[scenario]

    async def respond(messages: list[ModelMessage]) -> tuple[str, dict[str, Any]] | None:
        """The next `(tool, args)`, or `None` for the final answer."""
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if mode == 'crash' and step == CRASH_AT.get(scenario):
            print('CRASH-POINT', flush=True)
            await asyncio.sleep(3600)
        if step >= len(calls):
            return None
        name, args = calls[step]
        if args.get('command_id') == '{id}':
            started = next(r for r in returns(messages) if r.startswith('Started background command'))
            args = {'command_id': re.search(r'ID: (\w+)', started).group(1)}  # type: ignore[union-attr]
        return name, args

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        call = await respond(messages)
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if call is None:
            return ModelResponse(parts=[TextPart('done')])
        return ModelResponse(parts=[ToolCallPart(call[0], call[1], tool_call_id=f'call-{step}')])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        call = await respond(messages)
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if call is None:
            yield 'done'
        else:
            yield {0: DeltaToolCall(name=call[0], json_args=json.dumps(call[1]), tool_call_id=f'call-{step}')}

    async def handler(ctx: Any, stream: Any) -> None:
        async for event in stream:
            if type(event).__module__.startswith('pydantic_ai_harness_rs'):
                fields = {k: v for k, v in vars(event).items() if k in ('path', 'operation', 'command', 'exit_code')}
                events.append({'event': type(event).__name__, **fields})

    tools = [*DEFAULT_TOOL_NAMES, 'apply_patch'] if scenario.startswith('patch') else list(DEFAULT_TOOL_NAMES)
    file_system = FileSystem(root_dir=workspace, tools=tools) if contract == 'root_dir' else FileSystem(tools=tools)
    listeners: list[AbstractCapability[None]] = []
    if scenario in ('veto', 'pause', 'patch_veto', 'patch_pause'):
        hooks: Hooks[None] = Hooks()

        @hooks.on.event(FileChangeRequestEvent)
        async def veto(ctx: Any, event: Any) -> None:
            if 'vetoed' in event.path:
                event.cancel('a listener said no')
            if 'pause' in event.path and mode == 'crash':
                print('CRASH-POINT', flush=True)
                await asyncio.sleep(3600)

        listeners.append(hooks)
    if scenario in ('checkpoints', 'checkpoints_midway'):
        listeners.append(Checkpoints(root=workspace))
    agent: Agent[None, str] = Agent(
        FunctionModel(model, stream_function=stream),
        name='harness_rs_durable',
        capabilities=[
            LocalWorkspace(str(workspace)),
            file_system,
            Shell(persist_cwd=True, tools=TOOLS[scenario], interactive=scenario == 'session'),
            *listeners,
            durability(handler),
        ],
    )
    return agent, events
