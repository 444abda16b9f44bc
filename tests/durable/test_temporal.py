"""FileSystem and Shell inside a Temporal workflow, on a real dev server (`conftest.temporal_address`).

Each test drives `_temporal_app`'s agents (`TemporalDurability`, `LocalWorkspace`, `FileSystem`,
`Shell(persist_cwd=True)`) with a script in the prompt; tools run as activities on a worker.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('temporalio', reason="the Temporal tests need `temporalio` (pip install '.[durable]')")

from tests.durable import _temporal_app as app  # noqa: E402
from tests.durable._scripted_run import VETOED_PATCH, patch  # noqa: E402

pytestmark = pytest.mark.anyio


async def run_workflow(address: str, workflow: Any, script: list[Any]) -> dict[str, Any]:
    """Run `script` as `workflow` on an in-process worker: the tool results and tools the model saw."""
    client = await app.connect(address)
    async with app.worker(client):
        output = await client.execute_workflow(
            workflow.run,
            json.dumps(script),
            id=f'wf-{uuid.uuid4().hex}',
            task_queue=app.TASK_QUEUE,
            execution_timeout=timedelta(minutes=3),  # a broken run fails instead of hanging
        )
    return json.loads(output)


async def run_plain(agent: Any, script: list[Any]) -> dict[str, Any]:
    """The same script outside any workflow (`TemporalDurability` is transparent there)."""
    return json.loads((await agent.run(json.dumps(script))).output)


def normalized(results: list[str]) -> list[str]:
    """Results with what differs between two runs (command IDs, PIDs, job directories) masked."""
    masked = [re.sub(r'[0-9a-f]{32}', '<id>', r) for r in results]
    return [re.sub(r'(PID:? |kill -- -|"pid": )\d+', r'\1<pid>', r) for r in masked]


EVERY_TOOL: list[Any] = [
    ['create_directory', {'path': 'src'}],
    ['write_file', {'path': 'src/a.txt', 'content': 'one\ntwo\n'}],
    ['read_file', {'path': 'src/a.txt'}],
    ['edit_file', {'path': 'src/a.txt', 'old_text': 'two', 'new_text': 'three'}],
    ['list_directory', {'path': 'src'}],
    ['search_files', {'pattern': 'three'}],
    ['find_files', {'pattern': '**/*.txt'}],
    ['file_info', {'path': 'src/a.txt'}],
    ['run_command', {'command': 'cd src && cat a.txt'}],
    ['run_command', {'command': 'pwd'}],
    ['start_command', {'command': 'echo started'}],
    ['shell', {'command': 'echo persistent'}],
]


@pytest.mark.parametrize(
    ('workflow', 'agent'),
    [(app.RootWorkflow, app.root_agent), (app.WorkspaceWorkflow, app.workspace_agent)],
    ids=['root_dir', 'workspace'],
)
async def test_every_tool_in_a_workflow(temporal_address: str, ws: Path, workflow: Any, agent: Any) -> None:
    durable = await run_workflow(temporal_address, workflow, EVERY_TOOL)
    assert (ws / 'src' / 'a.txt').read_text() == 'one\nthree\n'
    for child in ws.iterdir():
        shutil.rmtree(child)
    plain = await run_plain(agent, EVERY_TOOL)
    assert durable['tools'] == plain['tools']
    print(json.dumps(durable['results'], indent=1))
    assert normalized(durable['results']) == normalized(plain['results'])


# --- crash and resume: a worker in a subprocess, killed with SIGKILL ----------------------------

REPO = Path(__file__).resolve().parents[2]


def start_worker(address: str, pause: str | None = None) -> subprocess.Popen[bytes]:
    """A worker process for `_temporal_app`, blocking at the script's `{"pause": pause}` step when given."""
    env = {**os.environ, 'DURABLE_WS': str(app.WS)}
    env.pop('DURABLE_PAUSE', None)
    if pause is not None:
        env['DURABLE_PAUSE'] = pause
    code = 'import asyncio, sys; from tests.durable._temporal_app import _serve; asyncio.run(_serve(sys.argv[1]))'
    process = subprocess.Popen([sys.executable, '-c', code, address], cwd=REPO, env=env)
    wait_for(app.WS.parent / f'worker-{process.pid}.ready', process)
    return process


def wait_for(path: Path, process: subprocess.Popen[bytes] | None = None, limit: float = 60) -> None:
    """Until `path` exists (bounded, so a broken run fails instead of hanging)."""
    deadline = time.monotonic() + limit
    while not path.exists():
        if process is not None and process.poll() is not None:
            pytest.fail(f'the worker exited ({process.returncode}) before {path.name} appeared')
        if time.monotonic() > deadline:
            pytest.fail(f'{path.name} did not appear')
        time.sleep(0.05)


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker process alone (a crash: no cleanup runs in it)."""
    process.send_signal(signal.SIGKILL)
    process.wait()


def processes_with(marker: str) -> list[int]:
    """PIDs of live processes whose command line contains `marker` (zombies excluded)."""
    found: list[int] = []
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / 'cmdline').read_bytes()
            state = (entry / 'stat').read_text().rsplit(')', 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != 'Z':
            found.append(int(entry.name))
    return found


def session(leader: int) -> list[int]:
    """Live processes (zombies excluded) in the session `leader` started."""
    members: list[int] = []
    for entry in Path('/proc').iterdir():
        try:
            fields = (entry / 'stat').read_text().rsplit(')', 1)[1].split() if entry.name.isdigit() else None
        except OSError:
            continue
        if fields is not None and fields[0] != 'Z' and fields[3] == str(leader):
            members.append(int(entry.name))
    return members


def gone(marker: str, limit: float = 10) -> list[int]:
    """The processes with `marker` still alive after waiting (bounded) for them to die."""
    deadline = time.monotonic() + limit
    while (alive := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


async def crash_and_resume(
    address: str,
    script: list[Any],
    pause_file: str,
    *,
    pause: str | None = None,
    between: Any = None,
    workflow: Any = app.RootWorkflow,
) -> dict[str, Any]:
    """Start `script` as `workflow` on a worker subprocess, SIGKILL it once `pause_file` exists, call
    `between()`, then finish the workflow on a new worker; the model's final answer."""
    client = await app.connect(address)
    first = start_worker(address, pause)
    second: subprocess.Popen[bytes] | None = None
    try:
        handle = await client.start_workflow(
            workflow.run, json.dumps(script), id=f'wf-{uuid.uuid4().hex}', task_queue=app.TASK_QUEUE
        )
        wait_for(app.WS.parent / pause_file if pause else app.WS / pause_file, first)
        kill(first)
        if between is not None:
            between()
        second = start_worker(address)
        return json.loads(await handle.result())
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                kill(process)


@pytest.mark.parametrize(
    ('workflow', 'agent'),
    [(app.RootWorkflow, app.root_agent), (app.WorkspaceWorkflow, app.workspace_agent)],
    ids=['root_dir', 'workspace'],
)
async def test_a_completed_write_is_not_repeated_after_a_crash(
    temporal_address: str, ws: Path, workflow: Any, agent: Any
) -> None:
    """Killed after `write_file` and an appending command completed: neither runs again, and the
    model sees what a run without a crash (or a workflow) shows."""
    script: list[Any] = [
        ['write_file', {'path': 'a.txt', 'content': 'written once\n'}],
        ['run_command', {'command': 'echo x >> count.log'}],
        {'pause': 'after-write'},
        ['read_file', {'path': 'a.txt'}],
        ['run_command', {'command': 'cat count.log'}],
    ]
    before: dict[str, int] = {}

    def record() -> None:
        stat = (ws / 'a.txt').stat()
        before.update(inode=stat.st_ino, mtime=stat.st_mtime_ns)

    answer = await crash_and_resume(
        temporal_address, script, 'after-write.paused', pause='after-write', between=record, workflow=workflow
    )
    stat = (ws / 'a.txt').stat()
    assert (stat.st_ino, stat.st_mtime_ns) == (before['inode'], before['mtime'])
    assert (ws / 'count.log').read_text() == 'x\n'
    assert answer['results'][3] == '[stdout]\nx\n'
    for child in list(ws.iterdir()):
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    assert answer['results'] == (await run_plain(agent, script))['results']
    if workflow is app.RootWorkflow:
        assert answer['results'][:3] == [
            'Wrote 13 chars (1 lines) to a.txt. [hash:0da7c2eb507d]',
            '(no output)',
            '[a.txt | 1 lines | hash:0da7c2eb507d]\n     1\twritten once\n',
        ]


async def test_a_running_job_is_found_again_after_a_crash(temporal_address: str, ws: Path) -> None:
    """Killed while the `shell` tool waits on its command: the new worker attaches to the same job,
    which ran once; nothing is left running."""
    release = ws.parent / f'release-{uuid.uuid4().hex}'
    command = f'echo x >> job.log; touch started; while [ ! -e {release} ]; do sleep 0.05; done; echo finished'
    script: list[Any] = [['shell', {'command': command, 'timeout': 120}], ['run_command', {'command': 'cat job.log'}]]
    seen: list[int] = []

    def check() -> None:
        seen.extend(processes_with(str(release)))
        release.touch()

    answer = await crash_and_resume(temporal_address, script, 'started', between=check)
    assert seen, 'the job died with the worker'
    shell_result, cat_result = answer['results']
    assert shell_result.startswith('finished\nPID: ')
    assert int(shell_result.split('PID: ')[1].split()[0]) in seen
    assert cat_result == '[stdout]\nx\n'
    assert gone(str(release)) == []


async def test_a_command_in_flight_is_stopped_before_it_runs_again(temporal_address: str, ws: Path) -> None:
    """Killed while `run_command` runs: the orphaned command is stopped before the retried activity
    runs it again (a command in flight is at-least-once); nothing is left running."""
    marker = f'inflight-{uuid.uuid4().hex}'
    # The first attempt sleeps until stopped; the retry finds `started` and ends at once.
    command = f'echo y >> rc.log; if [ ! -e started ]; then touch started; sleep 600; fi # {marker}'
    script: list[Any] = [['run_command', {'command': command}], ['run_command', {'command': 'cat rc.log'}]]
    orphans: list[int] = []
    try:
        answer = await crash_and_resume(
            temporal_address, script, 'started', between=lambda: orphans.extend(processes_with(marker))
        )
        assert orphans, 'the command died with its worker'
        assert gone(marker) == []
        assert [pid for leader in orphans for pid in session(leader)] == []  # its `sleep` too
        assert answer['results'] == ['(no output)', '[stdout]\ny\ny\n']
        assert not list((ws / '.pydantic-ai-harness' / 'shell').glob('running-*'))
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


# --- the FileChangeRequestEvent listener and the events under Temporal (issue 21) ---------------

VETOED: list[Any] = [
    ['write_file', {'path': 'kept.txt', 'content': 'one\ntwo\n'}],
    ['write_file', {'path': 'vetoed.txt', 'content': 'new\n'}],
    ['edit_file', {'path': 'vetoed-old.txt', 'old_text': 'old', 'new_text': 'new'}],
    ['create_directory', {'path': 'vetoed-dir'}],
    ['edit_file', {'path': 'kept.txt', 'old_text': 'two', 'new_text': 'three'}],
    ['create_directory', {'path': 'made'}],
    ['read_file', {'path': 'kept.txt'}],
    ['list_directory', {'path': '.'}],
    ['search_files', {'pattern': 'three'}],
    ['find_files', {'pattern': '**/*.txt'}],
    ['file_info', {'path': 'kept.txt'}],
    ['write_file', {'path': 'kept.txt', 'content': 'x\n', 'expected_hash': 'stale'}],
    [  # one response, run concurrently: the edits of one file take turns, as in a plain run
        ['edit_file', {'path': 'kept.txt', 'old_text': 'one', 'new_text': 'ONE'}],
        ['edit_file', {'path': './kept.txt', 'old_text': 'three', 'new_text': 'THREE'}],
    ],
]
"""Three changes a listener vetoes, and every FileSystem tool around them."""


LISTENED = pytest.mark.parametrize(
    ('workflow', 'agent'),
    [
        (app.ListenedRootWorkflow, app.listened_root_agent),
        (app.ListenedWorkspaceWorkflow, app.listened_workspace_agent),
    ],
    ids=['root_dir', 'workspace'],
)
"""Both contracts' agents with the vetoing listener and the event recorder."""


def _seed(ws: Path) -> None:
    for events in app.WS.parent.glob('events-*.jsonl'):
        events.unlink()
    for child in ws.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    (ws / 'vetoed-old.txt').write_text('old\n')


def _events(run_id: str) -> list[dict[str, Any]]:
    path = app.events_file(run_id)
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


async def _plain(agent: Any, script: list[Any], seed: Any) -> tuple[dict[str, Any], dict[str, str | None], list[Any]]:
    """`script` run by `agent` outside a workflow on a tree `seed()` made: the model's answer, the
    tree after it and the run's events; then the tree seeded again for the durable run."""
    seed()
    plain = await run_plain(agent, script)
    disk = _disk(app.WS)
    events = [e for f in app.WS.parent.glob('events-*.jsonl') for e in _events(f.name[7:-6])]
    seed()
    return plain, disk, events


def _disk(ws: Path) -> dict[str, str | None]:
    return {
        str(p.relative_to(ws)): None if p.is_dir() else p.read_text()
        for p in sorted(ws.rglob('*'))
        if '.pydantic-ai-harness' not in p.parts
    }


@LISTENED
async def test_listener_vetoes_and_events_in_a_workflow(
    temporal_address: str, ws: Path, workflow: Any, agent: Any
) -> None:
    """A vetoing listener stops a write, an edit and a create_directory under Temporal (files
    untouched, the model told as outside a workflow); the run's events arrive once each, in the
    order a plain run gives."""
    plain, plain_disk, plain_events = await _plain(agent, VETOED, lambda: _seed(ws))
    durable = await run_workflow(temporal_address, workflow, VETOED)
    assert (ws / 'vetoed-old.txt').read_text() == 'old\n'
    assert not (ws / 'vetoed.txt').exists() and not (ws / 'vetoed-dir').exists()
    assert _disk(ws) == plain_disk
    assert durable['results'] == plain['results']
    assert durable['results'][1:4] == [
        "['vetoed.txt' was not written: a listener said no]",
        "['vetoed-old.txt' was not edited: a listener said no]",
        "['vetoed-dir' was not created: a listener said no]",
    ]
    files = list(app.WS.parent.glob('events-*.jsonl'))
    assert len(files) == 1
    assert _events(files[0].name[7:-6]) == plain_events
    kinds = [e['kind'].split('.')[1] for e in plain_events]
    assert kinds.count('file_change_request') == 8 and 'file_written' in kinds and 'file_read' in kinds


async def test_a_worker_killed_between_plan_and_commit(temporal_address: str, ws: Path) -> None:
    """Killed while the listener is asked (the plan done, the commit not): the new worker commits
    once, and the run's events arrive once each, in a plain run's order, those delivered before
    the crash included."""
    script: list[Any] = [
        ['write_file', {'path': 'kept.txt', 'content': 'one\n'}],
        ['read_file', {'path': 'kept.txt'}],
        ['edit_file', {'path': 'pause.txt', 'old_text': 'a', 'new_text': 'a\nb'}],
        ['read_file', {'path': 'pause.txt'}],
    ]
    _seed(ws)
    (ws / 'pause.txt').write_text('a\n')
    plain = await run_plain(app.listened_root_agent, script)
    plain_events = [e for f in app.WS.parent.glob('events-*.jsonl') for e in _events(f.name[7:-6])]
    _seed(ws)
    (ws / 'pause.txt').write_text('a\n')
    answer = await crash_and_resume(
        temporal_address,
        script,
        f'{app.PAUSE_IN_LISTENER}.paused',
        pause=app.PAUSE_IN_LISTENER,
        workflow=app.ListenedRootWorkflow,
    )
    assert (ws / 'pause.txt').read_text() == 'a\nb\n'
    assert answer['results'] == plain['results']
    files = list(app.WS.parent.glob('events-*.jsonl'))
    assert len(files) == 1
    assert _events(files[0].name[7:-6]) == plain_events
    assert [e['kind'].split('.')[1] for e in plain_events] == [
        'file_change_request',
        'file_written',
        'file_read',
        'file_change_request',
        'file_edited',
        'file_read',
    ]


# --- apply_patch under Temporal: planned, asked file by file in workflow code, committed (issue 22) ---


APPLIED_PATCH = patch(
    '*** Update File: a.txt', '@@', '-a', '+A', '*** Add File: new.txt', '+n', '*** Delete File: c.txt'
)


def _seed_patch(ws: Path) -> None:
    _seed(ws)
    (ws / 'a.txt').write_text('a\n')
    (ws / 'c.txt').write_text('c\n')


@LISTENED
async def test_a_vetoed_patch_and_its_events_in_a_workflow(
    temporal_address: str, ws: Path, workflow: Any, agent: Any
) -> None:
    """A listener vetoing one file of a 3-file patch stops the whole patch under Temporal (tree
    untouched, the model told as outside a workflow); a patch then applied: the run's events arrive
    once each, in the order a plain run gives (every file asked before the edited/written events)."""
    script: list[Any] = [['apply_patch', {'input': VETOED_PATCH}], ['apply_patch', {'input': APPLIED_PATCH}]]
    plain, plain_disk, plain_events = await _plain(agent, script, lambda: _seed_patch(ws))
    durable = await run_workflow(temporal_address, workflow, script)
    assert durable['results'] == plain['results']
    assert durable['results'][0] == (
        "[Patch not applied, no file changed: 'vetoed-old.txt' was not edited: a listener said no]"
    )
    assert durable['results'][1].startswith('Applied patch to 3 files:\nM a.txt [hash:')
    assert _disk(ws) == plain_disk == {'a.txt': 'A\n', 'new.txt': 'n\n', 'vetoed-old.txt': 'old\n'}
    assert _run_events() == plain_events
    assert [(e['kind'].split('.')[1], e['path']) for e in plain_events] == [
        ('file_change_request', 'a.txt'),
        ('file_change_request', 'new.txt'),
        ('file_change_request', 'vetoed-old.txt'),
        ('file_change_request', 'a.txt'),
        ('file_change_request', 'c.txt'),
        ('file_change_request', 'new.txt'),
        ('file_edited', 'a.txt'),
        ('file_written', 'new.txt'),
    ]


async def test_a_worker_killed_between_a_patch_plan_and_its_commit(temporal_address: str, ws: Path) -> None:
    """Killed while the listener is asked about a patch's files (the plan done, nothing written):
    the new worker asks again and commits once; events once each, in a plain run's order."""
    script: list[Any] = [
        ['apply_patch', {'input': patch('*** Update File: a.txt', '@@', '-a', '+A', '*** Add File: pause.txt', '+p')}],
        ['read_file', {'path': 'pause.txt'}],
    ]
    plain, _, plain_events = await _plain(app.listened_root_agent, script, lambda: _seed_patch(ws))
    seen: list[dict[str, str | None]] = []
    answer = await crash_and_resume(
        temporal_address,
        script,
        f'{app.PAUSE_IN_LISTENER}.paused',
        pause=app.PAUSE_IN_LISTENER,
        between=lambda: seen.append(_disk(ws)),
        workflow=app.ListenedRootWorkflow,
    )
    old = {'a.txt': 'a\n', 'c.txt': 'c\n', 'vetoed-old.txt': 'old\n'}
    assert seen == [old]  # killed before the commit
    assert _disk(ws) == {**old, 'a.txt': 'A\n', 'pause.txt': 'p\n'}
    assert answer['results'] == plain['results']
    assert _run_events() == plain_events
    assert [e['kind'].split('.')[1] for e in plain_events] == [
        'file_change_request',
        'file_change_request',
        'file_edited',
        'file_written',
        'file_read',
    ]


# --- Shell's events under Temporal: carried out of the tool's activity (issue 21) ----------------


def _masked(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events with what differs between two runs (PIDs, job IDs in paths) masked."""
    return [
        {
            k: '<pid>' if k == 'pid' else re.sub(r'[0-9a-f]{32}', '<id>', v) if isinstance(v, str) else v
            for k, v in e.items()
        }
        for e in events
    ]


def _run_events() -> list[dict[str, Any]]:
    """The events of the one run recorded since `_seed`."""
    files = list(app.WS.parent.glob('events-*.jsonl'))
    assert len(files) == 1
    return _events(files[0].name[7:-6])


async def test_shell_events_in_a_workflow(temporal_address: str, ws: Path) -> None:
    """The `shell` tool's events reach the run's `event_stream_handler` under Temporal: once each,
    in a plain run's order and attribution, between the other tools' events; nothing left running."""
    marker = f'bg-{uuid.uuid4().hex}'
    script: list[Any] = [
        ['write_file', {'path': 'a.txt', 'content': 'one\n'}],
        ['shell', {'command': 'cat a.txt'}],
        ['run_command', {'command': 'echo plain'}],
        ['shell', {'command': f'sleep 1 # {marker}', 'mode': 'background'}],
        ['shell', {'command': 'echo two; exit 3'}],
        ['read_file', {'path': 'a.txt'}],
    ]
    _seed(ws)
    plain = await run_plain(app.listened_root_agent, script)
    plain_events = _run_events()
    assert gone(marker) == []
    _seed(ws)
    durable = await run_workflow(temporal_address, app.ListenedRootWorkflow, script)
    assert normalized(durable['results']) == normalized(plain['results'])
    assert _masked(_run_events()) == _masked(plain_events)
    assert [(e['kind'], e.get('text'), e.get('exit_code')) for e in plain_events if e['kind'].startswith('shell.')] == [
        ('shell.command_started', None, None),
        ('shell.command_output', 'one\n', None),
        ('shell.command_finished', None, 0),
        ('shell.command_started', None, None),
        ('shell.command_finished', None, None),
        ('shell.command_started', None, None),
        ('shell.command_output', 'two\n', None),
        ('shell.command_finished', None, 3),
    ]
    shell_calls = [e['tool_call_id'] for e in plain_events if e['kind'].startswith('shell.')]
    assert shell_calls == ['call-1-0'] * 3 + ['call-3-0'] * 2 + ['call-4-0'] * 3
    assert gone(marker) == []


async def test_shell_events_once_after_a_crash(temporal_address: str, ws: Path) -> None:
    """Killed while the `shell` tool waits on its command: the retried activity attaches to the job
    and the run's events are a plain run's, once each (the dead attempt's never arrive)."""
    release = ws.parent / f'release-{uuid.uuid4().hex}'
    command = f'touch started; while [ ! -e {release} ]; do sleep 0.05; done; echo finished'
    script: list[Any] = [
        ['write_file', {'path': 'a.txt', 'content': 'one\n'}],
        ['shell', {'command': command, 'timeout': 120}],
        ['read_file', {'path': 'a.txt'}],
    ]
    _seed(ws)
    release.touch()
    plain = await run_plain(app.listened_root_agent, script)
    plain_events = _run_events()
    release.unlink()
    _seed(ws)
    try:
        answer = await crash_and_resume(
            temporal_address, script, 'started', between=release.touch, workflow=app.ListenedRootWorkflow
        )
    finally:
        release.touch()
    assert normalized(answer['results']) == normalized(plain['results'])
    assert _masked(_run_events()) == _masked(plain_events)
    assert [e['kind'] for e in plain_events] == [
        'file_system.file_change_request',
        'file_system.file_written',
        'shell.command_started',
        'shell.command_output',
        'shell.command_finished',
        'file_system.file_read',
    ]
    assert gone(str(release)) == []


async def test_a_command_longer_than_the_default_activity_timeout(temporal_address: str, ws: Path) -> None:
    """`run_command` and `shell` keep their own activity timeout, not the agent's default one."""
    longer = app.SHORT_ACTIVITY + 2
    script: list[Any] = [
        ['run_command', {'command': f'sleep {longer}; echo slept', 'timeout_seconds': 60}],
        ['shell', {'command': f'sleep {longer}; echo slept', 'timeout': 60}],
    ]
    answer = await run_workflow(temporal_address, app.ShortWorkflow, script)
    assert answer['results'][0] == '[stdout]\nslept\n'
    assert answer['results'][1].startswith('slept\nPID: ')


# --- a listener that raises: the run fails once with its error, as a plain run does (issue 21) ---


@pytest.mark.parametrize(
    'step',
    [['write_file', {'path': 'raising.txt', 'content': 'x\n'}], ['read_file', {'path': 'raising-read.txt'}]],
    ids=['FileChangeRequestEvent', 'FileReadEvent'],
)
async def test_a_raising_listener_fails_the_workflow_once(temporal_address: str, ws: Path, step: list[Any]) -> None:
    """A listener raising `RuntimeError` fails a plain run with it; under Temporal the workflow fails
    once with it (an `ApplicationError` of its type and message, not retried), nothing written, and the
    events before it arrive once each, as in the plain run."""
    from temporalio.client import WorkflowFailureError
    from temporalio.exceptions import ApplicationError

    script: list[Any] = [
        ['write_file', {'path': 'kept.txt', 'content': 'one\n'}],
        ['read_file', {'path': 'kept.txt'}],
        step,
        ['write_file', {'path': 'after.txt', 'content': 'never\n'}],
    ]
    path = step[1]['path']
    _seed(ws)
    (ws / 'raising-read.txt').write_text('r\n')
    with pytest.raises(RuntimeError, match=f'a listener broke on {path}'):
        await run_plain(app.listened_root_agent, script)
    plain_disk = _disk(ws)
    plain_events = _run_events()
    _seed(ws)
    (ws / 'raising-read.txt').write_text('r\n')
    client = await app.connect(temporal_address)
    async with app.worker(client):
        with pytest.raises(WorkflowFailureError) as failed:
            await client.execute_workflow(
                app.ListenedRootWorkflow.run,
                json.dumps(script),
                id=f'wf-{uuid.uuid4().hex}',
                task_queue=app.TASK_QUEUE,
                execution_timeout=timedelta(seconds=60),  # a workflow task retried forever fails the test here
            )
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.type, cause.message, cause.non_retryable) == ('RuntimeError', f'a listener broke on {path}', True)
    assert _disk(ws) == plain_disk
    assert not (ws / 'after.txt').exists() and not (ws / 'raising.txt').exists()
    assert _run_events() == plain_events
    assert [e['kind'] for e in plain_events][:3] == [
        'file_system.file_change_request',
        'file_system.file_written',
        'file_system.file_read',
    ]
