"""What 0.58-0.62 added to Shell: `max_log_bytes`, `E2BIG` as a retry, the `shell` tool's job
named from the run and tool call; and jobs that need nothing on the workspace's `PATH`.

Every case runs on `LocalWorkspace` (the Rust supervisor) and, where the path differs, on a
backend reached through the workspace protocol (`SandboxBackend`), with the same results.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai import RunContext
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace
from pydantic_ai_harness_rs.shell import CommandFinishedEvent, Shell

from .conftest import live_processes_matching, norm, run_calls
from .test_protocol_backend import SandboxBackend

pytestmark = pytest.mark.anyio

TOO_LONG = (
    'The command is too long to start; write the script to a file, with a file tool or in several shorter '
    'commands, then run the file.'
)
NOTICE = '[Log exceeded max_log_bytes=100; earlier output was cleared.]'
LONG = ': ' + 'x' * 200_000
"""One argument over Linux's 128 KiB `MAX_ARG_STRLEN`."""


def _setup(ws: Path, where: str, **shell: Any) -> tuple[list[Any], dict[str, Any]]:
    if where == 'local':
        return [LocalWorkspace(ws), Shell(**shell)], {}
    return [Shell(**shell)], {'workspace': SandboxBackend(ws)}


def _job_ids(ws: Path) -> list[str]:
    jobs = ws / '.pydantic-ai-harness' / 'shell'
    return sorted(p.name for p in jobs.iterdir() if len(p.name) == 32) if jobs.exists() else []


async def _finished(status: Path) -> dict[str, Any]:
    while True:
        try:
            value = json.loads(status.read_text())
        except (OSError, ValueError):
            value = {'exit_code': None}
        if value['exit_code'] is not None:
            return value
        await anyio.sleep(0.02)


# --- max_log_bytes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ('value', 'message'),
    [
        (0, 'max_log_bytes must be a positive integer.'),
        (-5, 'max_log_bytes must be a positive integer.'),
        (True, 'max_log_bytes must be a positive integer.'),
        (1.5, 'max_log_bytes must be a positive integer.'),
        (2**64, 'max_log_bytes must not exceed sys.maxsize.'),
    ],
)
async def test_max_log_bytes_is_validated(value: Any, message: str) -> None:
    from pydantic_ai import Agent

    with pytest.raises(ValueError) as raised:
        Agent('test', capabilities=[Shell(max_log_bytes=value)])
    assert str(raised.value) == message
    assert Shell().max_log_bytes == 100_000_000
    Agent('test', capabilities=[Shell(max_log_bytes=None)])


@pytest.mark.parametrize('where', ['local', 'sandbox'])
async def test_background_log_over_the_limit_is_emptied_and_the_command_runs_on(ws: Path, where: str) -> None:
    command = "printf '%300s\\n' x; sleep 1.6; echo after; exit 3"
    caps, kw = _setup(ws, where, max_log_bytes=100)
    [(_, started)] = await run_calls(caps, [('start_command', {'command': command})], **kw)
    cid = re.search(r'ID: (\w+)', started).group(1)  # type: ignore[union-attr]
    job = ws / '.pydantic-ai-harness' / 'shell' / cid
    assert (await _finished(job / 'status.json'))['exit_code'] == 3
    assert (job / 'stdout.log').read_text() == f'{NOTICE}\nafter\n'
    assert (job / 'log_clears').read_text() == 'xx'
    caps, kw = _setup(ws, where, max_log_bytes=100)
    results = await run_calls(caps, [('check_command', {'command_id': cid})], prefix='later', **kw)
    assert results == [('return', f'[stdout]\n{NOTICE}\nafter\n\n[status: finished]\n[exit code: 3]')]


@pytest.mark.parametrize('where', ['local', 'sandbox'])
async def test_shell_tool_reports_a_cleared_log(ws: Path, where: str) -> None:
    events: list[Any] = []
    caps, kw = _setup(ws, where, tools=['shell'], max_log_bytes=100)
    results = await run_calls(
        caps,
        [('shell', {'command': "printf '%300s\\n' x; sleep 1.6; echo after"}), ('shell', {'command': 'echo small'})],
        events=events,
        **kw,
    )
    first = norm(results[0][1], ws)
    assert first.startswith(f'{NOTICE}\nafter\nPID: <pid> ')
    finished = [e for e in events if isinstance(e, CommandFinishedEvent)]
    assert [(e.exit_code, e.truncated, e.total_lines) for e in finished] == [(0, True, None), (0, False, 1)]


async def test_no_limit_keeps_the_whole_log(ws: Path) -> None:
    command = "printf '%300s\\n' x; sleep 1.2; echo after"
    events: list[Any] = []
    [(_, text)] = await run_calls(
        [LocalWorkspace(ws), Shell(tools=['shell'], max_log_bytes=None)],
        [('shell', {'command': command})],
        events=events,
    )
    assert text.startswith(' ' * 299 + 'x\nafter\nPID: ')
    [finished] = [e for e in events if isinstance(e, CommandFinishedEvent)]
    assert (finished.truncated, finished.total_lines) == (False, 2)
    [cid] = _job_ids(ws)
    assert sorted(p.name for p in (ws / '.pydantic-ai-harness' / 'shell' / cid).iterdir()) == [
        'handle',
        'launch.ready',
        'output.log',
        'status.json',
    ]


async def _read_between_clears(job: Path, name: str) -> bytes:
    """`job/name` as read while no clear was under way (`log_clears`: two bytes per clear, odd during one)."""
    while True:
        before = (job / 'log_clears').stat().st_size
        data = (job / name).read_bytes()
        if before % 2 == 0 and (job / 'log_clears').stat().st_size == before:
            return data
        await anyio.sleep(0)


async def test_a_command_reading_its_own_log_does_not_fill_the_disk(ws: Path) -> None:
    # `tail -f` of its own log copies every line it appends back into the log, forever.
    command = 'echo seed; tail -n +1 -f .pydantic-ai-harness/shell/*/output.log'
    [(_, text)] = await run_calls(
        [LocalWorkspace(ws), Shell(tools=['shell'], max_log_bytes=10_000)],
        [('shell', {'command': command, 'mode': 'background'})],
    )
    pid = int(re.search(r'PID: (\d+)', text).group(1))  # type: ignore[union-attr]
    [cid] = _job_ids(ws)
    job = ws / '.pydantic-ai-harness' / 'shell' / cid
    try:
        while len((job / 'log_clears').read_text() if (job / 'log_clears').exists() else '') < 4:
            await anyio.sleep(0.05)
        os.killpg(pid, 0)  # still running: the log is emptied, not the command stopped
        # The log was emptied and holds the notice; what `tail` had read before the clear may
        # still land around it (it copies the log into itself), so only its presence is certain.
        # Read as the tools read a capped log: between two clears (`log_clears` even and unchanged
        # across the read), since mid-clear the log is briefly empty (it clears hundreds of times a second).
        notice = b'[Log exceeded max_log_bytes=10000; earlier output was cleared.]\n'
        assert notice in await _read_between_clears(job, 'output.log')
        # Never more than about one check interval of copying past the limit.
        assert (job / 'output.log').stat().st_size < 500_000_000
    finally:
        os.killpg(pid, 15)


# --- E2BIG ----------------------------------------------------------------------------------


@pytest.mark.parametrize('where', ['local', 'sandbox'])
async def test_a_command_too_long_to_start_is_a_retry(ws: Path, where: str) -> None:
    caps, kw = _setup(ws, where)
    results = await run_calls(
        caps,
        [
            ('run_command', {'command': LONG}),
            ('start_command', {'command': LONG}),
            ('run_command', {'command': 'echo after'}),
        ],
        **kw,
    )
    assert results == [('retry', TOO_LONG), ('retry', TOO_LONG), ('return', '[stdout]\nafter\n')]
    caps, kw = _setup(ws, where, tools=['shell'])
    assert await run_calls(caps, [('shell', {'command': LONG})], prefix='s', **kw) == [('retry', TOO_LONG)]
    assert _job_ids(ws) == []


@pytest.mark.parametrize('where', ['local', 'sandbox'])
async def test_an_environment_too_big_on_its_own_aborts_the_run(ws: Path, where: str) -> None:
    caps, kw = _setup(ws, where, env={'BIG': 'x' * 200_000})
    with pytest.raises(OSError) as raised:
        await run_calls(caps, [('run_command', {'command': 'echo hi'})], **kw)
    assert raised.value.errno == 7


@pytest.mark.parametrize('where', ['local', 'sandbox'])
async def test_a_quote_heavy_command_starts(ws: Path, where: str) -> None:
    # 90 KB; quoted into the launcher script, each `'` would become 5 bytes and pass 128 KiB.
    command = 'echo ' + '"\'"' * 30_000 + ' | wc -c'
    caps, kw = _setup(ws, where)
    [(_, started)] = await run_calls(caps, [('start_command', {'command': command})], **kw)
    cid = re.search(r'ID: (\w+)', started).group(1)  # type: ignore[union-attr]
    await _finished(ws / '.pydantic-ai-harness' / 'shell' / cid / 'status.json')
    assert (ws / '.pydantic-ai-harness' / 'shell' / cid / 'stdout.log').read_text().strip() == '30001'


# --- the shell tool's job directory -----------------------------------------------------------


def _commands_running(argv: str) -> list[int]:
    """PIDs of live processes whose whole command line is `argv` (the command, not its wrappers)."""
    found = []
    for pid in live_processes_matching(argv):
        if Path(f'/proc/{pid}/cmdline').read_bytes().replace(b'\0', b' ').strip() == argv.encode():
            found.append(pid)
    return sorted(found)


async def _started(argv: str) -> list[int]:
    """`_commands_running(argv)` once the command has `exec`ed (its job returns before that), within 10 s."""
    for _ in range(1000):
        if running := _commands_running(argv):
            return running
        await anyio.sleep(0.01)
    return []


def _ctx(workspace: Workspace, tool_call_id: str) -> RunContext[None]:
    return RunContext(
        deps=None,
        model=TestModel(),
        usage=RunUsage(),
        run_id='run-7',
        tool_call_id=tool_call_id,
        tool_name='shell',
        workspace=workspace,
    )


async def test_shell_job_is_named_from_run_and_tool_call_and_a_replay_attaches(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from pydantic_ai_harness_rs.shell import _persistent

    # As in a durable activity: the call runs outside the agent's event stream, so it emits nothing.
    monkeypatch.setattr(_persistent, 'event_ctx', lambda ctx, capability: None)
    first = ''
    marker = f'sleep 3007{os.getpid() % 100}'
    toolset = Shell(tools=['shell']).get_toolset()
    workspace = Workspace(LocalWorkspaceBackend(ws))
    expected = hashlib.sha256(b'run-7:call-1').hexdigest()[:32]
    try:
        first = await toolset.shell(_ctx(workspace, 'call-1'), f'echo once; {marker}', mode='background')
        assert _job_ids(ws) == [expected]
        running = await _started(marker)
        assert len(running) == 1
        # A replayed activity: same run, same tool call. It finds the running job; nothing new starts.
        again = await toolset.shell(_ctx(workspace, 'call-1'), f'echo once; {marker}', mode='background')
        assert again == first
        assert _commands_running(marker) == running
        assert _job_ids(ws) == [expected]
        assert (ws / '.pydantic-ai-harness' / 'shell' / expected / 'output.log').read_text() == 'once\n'
        # Another tool call of the run gets its own job.
        await toolset.shell(_ctx(workspace, 'call-2'), 'true', mode='background')
        assert _job_ids(ws) == sorted([expected, hashlib.sha256(b'run-7:call-2').hexdigest()[:32]])
    finally:
        if match := re.search(r'PID: (\d+)', first):
            os.killpg(int(match.group(1)), 9)


# --- nothing needed on the workspace's PATH ---------------------------------------------------


@pytest.mark.parametrize('tool', ['start_command', 'shell'])
async def test_jobs_finish_without_mv_or_anything_on_path(ws: Path, tool: str) -> None:
    # PATH holds nothing: the wrapper's status, the command's shell and the log watcher need none of it.
    caps: list[Any] = [LocalWorkspace(ws, env={'PATH': '/nonexistent'}), Shell(tools=[tool], max_log_bytes=1000)]
    args: dict[str, Any] = {'command': 'echo $PATH; exit 4'}
    if tool == 'shell':
        args['mode'] = 'background'
    await run_calls(caps, [(tool, args)])
    [cid] = _job_ids(ws)
    job = ws / '.pydantic-ai-harness' / 'shell' / cid
    assert (await _finished(job / 'status.json'))['exit_code'] == 4
    log = 'output.log' if tool == 'shell' else 'stdout.log'
    assert (job / log).read_text() == '/nonexistent\n'
    while not (job / 'watch.stop').exists():
        await anyio.sleep(0.02)
    assert 'status.tmp' not in {p.name for p in job.iterdir()}


# --- the line the shell's own messages name ----------------------------------------------------


@pytest.mark.parametrize('where', ['local', 'sandbox'])
@pytest.mark.parametrize(('shell', 'line'), [({}, 2), ({'persist_cwd': True}, 2), ({'max_file_bytes': 100_000}, 11)])
async def test_run_command_messages_name_the_reference_line(
    ws: Path, where: str, shell: dict[str, Any], line: int
) -> None:
    # The reference's script: `cd <dir> || exit`, then (with max_file_bytes) its 9-line limit prologue.
    caps, kw = _setup(ws, where, **shell)
    results = await run_calls(
        caps, [('run_command', {'command': c}) for c in ('nosuch', 'cd nonexistent_dir', 'if then')], **kw
    )
    stderr = [text.split('\n')[1] for _, text in results]
    assert stderr == [
        f'/bin/sh: {line}: nosuch: not found',
        f"/bin/sh: {line}: cd: can't cd to nonexistent_dir",
        f'/bin/sh: {line}: Syntax error: "then" unexpected',
    ]


@pytest.mark.parametrize('where', ['local', 'sandbox'])
async def test_job_messages_name_line_one_of_sh(ws: Path, where: str) -> None:
    caps, kw = _setup(ws, where, tools=['start_command', 'shell'])
    results = await run_calls(caps, [('shell', {'command': 'nosuch'}), ('start_command', {'command': 'if then'})], **kw)
    assert results[0][1].startswith('sh: 1: nosuch: not found\nPID: ')
    cid = re.search(r'ID: (\w+)', results[1][1]).group(1)  # type: ignore[union-attr]
    job = ws / '.pydantic-ai-harness' / 'shell' / cid
    await _finished(job / 'status.json')
    assert (job / 'stderr.log').read_text() == 'sh: 1: Syntax error: "then" unexpected\n'
