"""FileSystem and Shell inside a DBOS workflow, on DBOS's SQLite system database: every tool in
both FileSystem contracts, and a worker killed with SIGKILL and recovered by a new process.

Each workflow runs in its own process (`dbos_worker.py`), as a deployment would, so the DBOS
singleton never lives in the test process. Skipped when `dbos` is not installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('dbos', reason="the DBOS tests need `dbos` (pip install dbos, or '.[durable]')")

WORKER = Path(__file__).with_name('dbos_worker.py')
from tests.durable._scripted_run import (  # noqa: E402
    EVENTS_AFTER_CRASH,
    EVENTS_BEFORE_CRASH,
    PATCH_VETO_EVENTS,
    SCRIPTS,
    VETO_EVENTS,
    VETO_RESULTS,
    expected_results,
    marked_processes,
)

LIMIT = 120.0
"""Seconds any one worker or wait may take before the test fails (a bound, never an assertion on speed)."""


def _start(tmp: Path, scenario: str, contract: str, mode: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), scenario, contract, str(tmp / 'ws'), str(tmp / 'dbos.sqlite'), mode, *extra],
        cwd=tmp,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _outcome(worker: subprocess.Popen[str]) -> dict[str, Any]:
    output, _ = worker.communicate(timeout=LIMIT)
    line = next((x for x in output.splitlines() if x.startswith('RESULT ')), None)
    assert line is not None, output[-4000:]
    return json.loads(line.removeprefix('RESULT '))


def _await_line(worker: subprocess.Popen[str], text: str) -> None:
    assert worker.stdout is not None
    deadline = time.monotonic() + LIMIT
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = worker.stdout.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return
    raise AssertionError(f'the worker never printed {text!r}:\n' + ''.join(seen[-40:]))


def _await(condition: Any, what: str) -> None:
    deadline = time.monotonic() + LIMIT
    while not condition():
        assert time.monotonic() < deadline, f'timed out waiting for {what}'
        time.sleep(0.05)


def _kill(worker: subprocess.Popen[str]) -> None:
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(timeout=LIMIT)
    if worker.stdout is not None:
        worker.stdout.close()


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    (tmp_path / 'ws').mkdir()
    (tmp_path / 'ws' / 'edited.txt').write_text('x=a;\n')
    return tmp_path


@pytest.mark.parametrize('contract', ['root_dir', 'workspace'])
def test_every_tool_in_a_workflow(tmp: Path, contract: str) -> None:
    outcome = _outcome(_start(tmp, 'files', contract, 'run'))
    ws = tmp / 'ws'
    assert outcome['results'] == expected_results(ws, contract)
    assert outcome['events'] == EVENTS_BEFORE_CRASH + EVENTS_AFTER_CRASH
    assert (ws / 'written.txt').read_text() == 'written once\n'
    assert (ws / 'edited.txt').read_text() == 'x=ab;\n'
    assert (ws / 'appended.log').read_text() == 'x\n'
    assert (ws / 'made').is_dir()


@pytest.mark.parametrize(
    ('contract', 'handler'), [('root_dir', True), ('workspace', True), ('root_dir', False)], ids=str
)
def test_killed_after_a_write_recovers_without_repeating_a_step(tmp: Path, contract: str, handler: bool) -> None:
    """With an `event_stream_handler` (each event a DBOS step) and without one (events emitted live in the tool's step)."""
    ws = tmp / 'ws'
    extra = () if handler else ('no-handler',)
    worker = _start(tmp, 'files', contract, 'crash', *extra)
    try:
        _await_line(worker, 'CRASH-POINT')
        written = (ws / 'written.txt').stat()
    finally:
        _kill(worker)
    assert (ws / 'edited.txt').read_text() == 'x=ab;\n'

    outcome = _outcome(_start(tmp, 'files', contract, 'recover', *extra))

    assert outcome['results'] == expected_results(ws, contract)
    after = (ws / 'written.txt').stat()
    assert (after.st_ino, after.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)  # not written again
    assert (ws / 'edited.txt').read_text() == 'x=ab;\n'  # the edit is not applied twice
    assert (ws / 'appended.log').read_text() == 'x\n'  # the appending command ran once
    # The recovered process delivers the events of the steps it runs; the recorded ones were delivered before.
    assert outcome['events'] == (EVENTS_AFTER_CRASH if handler else [])


@pytest.mark.parametrize('contract', ['root_dir', 'workspace'])
def test_a_listener_vetoes_changes_with_an_event_stream_handler(tmp: Path, contract: str) -> None:
    """With an `event_stream_handler` (each event a DBOS step), a `FileChangeRequestEvent` listener is
    still asked before each change: the plan and the commit are steps of their own, the listener runs
    in workflow code between them. The vetoed files are untouched; the events arrive in order, once."""
    ws = tmp / 'ws'
    (ws / 'vetoed-old.txt').write_text('old\n')
    outcome = _outcome(_start(tmp, 'veto', contract, 'run'))
    assert outcome['results'] == VETO_RESULTS
    assert outcome['events'] == VETO_EVENTS
    assert (ws / 'vetoed-old.txt').read_text() == 'old\n'
    assert not (ws / 'vetoed.txt').exists() and not (ws / 'vetoed-dir').exists()
    assert (ws / 'kept.txt').read_text() == 'kept\n'


@pytest.mark.parametrize('contract', ['root_dir', 'workspace'])
def test_killed_between_a_plan_and_its_commit_commits_once(tmp: Path, contract: str) -> None:
    """Killed while the listener is asked (the plan step recorded, the commit step not): the recovered
    workflow asks again and commits once; the events its handler gets end with the edit's and the read's."""
    ws = tmp / 'ws'
    (ws / 'pause.txt').write_text('a\n')
    worker = _start(tmp, 'pause', contract, 'crash')
    try:
        _await_line(worker, 'CRASH-POINT')
        assert (ws / 'pause.txt').read_text() == 'a\n'
    finally:
        _kill(worker)
    outcome = _outcome(_start(tmp, 'pause', contract, 'recover'))
    assert (ws / 'pause.txt').read_text() == 'a\nb\n'
    assert outcome['results'][1:] == [
        'Edited pause.txt. [hash:911169ddaaf1]',
        '[pause.txt | 2 lines | hash:911169ddaaf1]\n     1\ta\n     2\tb\n',
    ]
    assert outcome['events'][-2:] == [
        {'event': 'FileEditedEvent', 'path': 'pause.txt'},
        {'event': 'FileReadEvent', 'path': 'pause.txt'},
    ]


@pytest.mark.parametrize('contract', ['root_dir', 'workspace'])
def test_a_listener_vetoes_a_patch_with_an_event_stream_handler(tmp: Path, contract: str) -> None:
    """`apply_patch` (issue 22): each file's `FileChangeRequestEvent` is asked in workflow code between
    the plan and commit steps; a veto of one file of three leaves every file untouched, and a patch
    then applied delivers its events in a plain run's order, once."""
    ws = tmp / 'ws'
    (ws / 'a.txt').write_text('a\n')
    (ws / 'vetoed-old.txt').write_text('old\n')
    outcome = _outcome(_start(tmp, 'patch_veto', contract, 'run'))
    vetoed, applied, read = outcome['results']
    assert vetoed == "[Patch not applied, no file changed: 'vetoed-old.txt' was not edited: a listener said no]"
    assert applied.startswith('Applied patch to 2 files:\nM a.txt [hash:')
    assert read.startswith('[new.txt | 1 lines | hash:')
    assert outcome['events'] == PATCH_VETO_EVENTS
    assert (ws / 'vetoed-old.txt').read_text() == 'old\n'
    assert ((ws / 'a.txt').read_text(), (ws / 'new.txt').read_text()) == ('A\n', 'n\n')


@pytest.mark.parametrize('contract', ['root_dir', 'workspace'])
def test_killed_between_a_patch_plan_and_its_commit_applies_it_once(tmp: Path, contract: str) -> None:
    """Killed while the listener is asked about a patch's files (the plan step recorded, nothing
    written): the recovered workflow asks again and commits the patch once."""
    ws = tmp / 'ws'
    (ws / 'a.txt').write_text('a\n')
    worker = _start(tmp, 'patch_pause', contract, 'crash')
    try:
        _await_line(worker, 'CRASH-POINT')
        assert (ws / 'a.txt').read_text() == 'a\n' and not (ws / 'pause.txt').exists()
    finally:
        _kill(worker)
    outcome = _outcome(_start(tmp, 'patch_pause', contract, 'recover'))
    assert ((ws / 'a.txt').read_text(), (ws / 'pause.txt').read_text()) == ('A\n', 'p\n')
    applied, read = outcome['results']
    assert applied.startswith('Applied patch to 2 files:\nM a.txt [hash:')
    assert read.startswith('[pause.txt | 1 lines | hash:')
    assert outcome['events'][-3:] == [
        {'event': 'FileEditedEvent', 'path': 'a.txt'},
        {'event': 'FileWrittenEvent', 'path': 'pause.txt'},
        {'event': 'FileReadEvent', 'path': 'pause.txt'},
    ]


def test_killed_while_a_command_runs_finds_its_jobs_again(tmp: Path) -> None:
    ws = tmp / 'ws'
    try:
        _killed_while_a_command_runs(ws, tmp)
    finally:
        (ws / 'go').touch()  # whatever happened, the test's commands end


def _killed_while_a_command_runs(ws: Path, tmp: Path) -> None:
    worker = _start(tmp, 'command', 'root_dir', 'crash')
    try:
        _await(lambda: (ws / 'fg.log').exists() and (ws / 'bg.log').exists(), 'both commands to start')
    finally:
        _kill(worker)
    running = marked_processes()
    assert {'echo started', 'echo x'} <= {m.group(0) for _, _, a in running if (m := re.search(r'echo (started|x)', a))}

    recovery = _start(tmp, 'command', 'root_dir', 'recover')
    _await_line(recovery, 'Recovering 1 workflows')
    (ws / 'go').touch()  # lets both commands finish once the new process has taken the workflow over
    outcome = _outcome(recovery)

    started, foreground, checked, stopped = outcome['results']
    assert started.startswith("Started background command: 'echo started >> bg.log;")
    pid = int(re.match(r'PID: (\d+) ', foreground).group(1))  # type: ignore[union-attr]
    assert pid in {pgid for _, pgid, _ in running}  # the job the killed worker started, not a new one
    assert foreground.endswith('{"pid": %d, "exit_code": 0}' % pid)
    assert checked.startswith('(no output yet)\n[status: ')  # finished, or about to
    assert stopped.startswith('(no output)\n[stopped]')
    assert (ws / 'bg.log').read_text() == 'started\nfinished\n'  # not restarted
    assert (ws / 'fg.log').read_text() == 'x\ny\n'  # not run twice
    # The `shell` step the recovery ran again delivers its events to the handler, after the step, once.
    assert outcome['events'] == [
        {'event': 'CommandStartedEvent', 'command': SCRIPTS['command'][1][1]['command']},
        {'event': 'CommandFinishedEvent', 'exit_code': 0},
    ]
    _await(lambda: not marked_processes(), 'no command left running')


def _checkpoints_undone(ws: Path, before: dict[str, Any]) -> None:
    """The `checkpoints` scenario's checkpoints, one per call, listed and rewound from this process."""
    from pydantic_ai_harness_rs import Checkpoints

    from tests.checkpoints.conftest import tree
    from tests.durable._scripted_run import CHECKPOINTS

    checkpoints = Checkpoints(root=ws)
    listed = checkpoints.list()
    assert [(c['tool_call_id'], c['tool_name'], c['paths']) for c in listed] == CHECKPOINTS
    assert len({c['run_id'] for c in listed}) == 1
    result = asyncio.run(checkpoints.rewind(to=listed[0]['id']))
    assert result['failed'] == [] and result['unrestorable'] == []
    assert tree(ws) == before


def test_checkpoints_in_a_workflow(tmp: Path) -> None:
    """`Checkpoints` on the agent: each change is checkpointed in the step that makes it."""
    from tests.checkpoints.conftest import tree

    ws = tmp / 'ws'
    before = tree(ws)
    outcome = _outcome(_start(tmp, 'checkpoints', 'workspace', 'run'))
    assert not any('RETRY' in r or 'Error' in r for r in outcome['results']), outcome['results']
    assert (ws / 'count.log').read_text() == 'x\ny\n'
    _checkpoints_undone(ws, before)


def test_checkpoints_once_after_a_recovery(tmp: Path) -> None:
    """Killed after a write and a command were checkpointed: the recovered workflow takes their
    recorded steps, recording no checkpoint again, and checkpoints the calls after them."""
    from tests.checkpoints.conftest import tree

    ws = tmp / 'ws'
    before = tree(ws)
    worker = _start(tmp, 'checkpoints', 'root_dir', 'crash')
    try:
        _await_line(worker, 'CRASH-POINT')
    finally:
        _kill(worker)
    outcome = _outcome(_start(tmp, 'checkpoints', 'root_dir', 'recover'))
    assert not any('RETRY' in r or 'Error' in r for r in outcome['results']), outcome['results']
    assert (ws / 'count.log').read_text() == 'x\ny\n'
    _checkpoints_undone(ws, before)


def test_a_command_killed_midway_is_undone_whole(tmp: Path) -> None:
    """Killed while `run_command` runs, after the command changed files: the recovered step's checkpoint
    holds what the dead attempt changed too (not the baseline), so a rewind undoes it all."""
    from pydantic_ai_harness_rs import Checkpoints

    from tests.checkpoints.conftest import tree
    from tests.durable._scripted_run import marked_processes

    ws = tmp / 'ws'
    (ws / 'gone.txt').write_text('to be deleted\n')
    before = tree(ws)
    worker = _start(tmp, 'checkpoints_midway', 'root_dir', 'crash')
    try:
        _await(lambda: (ws / 'started').exists(), 'the command to start')
    finally:
        _kill(worker)
    outcome = _outcome(_start(tmp, 'checkpoints_midway', 'root_dir', 'recover'))
    assert outcome['results'] == ['(no output)']
    _await(lambda: not marked_processes(), 'no command left running')
    assert (ws / 'edited.txt').read_text() == 'x=a;\npartial\npartial\n'
    checkpoints = Checkpoints(root=ws)
    listed = checkpoints.list()
    assert [(c['tool_call_id'], c['tool_name'], c['paths']) for c in listed] == [
        ('call-0', 'run_command', ['edited.txt', 'gone.txt', 'rest.txt', 'started'])
    ]
    result = asyncio.run(checkpoints.rewind(to=listed[0]['id']))
    assert result['failed'] == [] and result['unrestorable'] == []
    assert tree(ws) == before


def test_a_session_is_found_again_after_a_crash(tmp: Path) -> None:
    """`Shell(interactive=True)`: a `python3 -i` session defines `x`, the worker is killed by SIGKILL; the
    recovering process's `write_stdin` reads 42 back from the same program (its relay outlived the worker),
    and the session ends with the workflow."""
    from tests.durable._scripted_run import MARK, SESSION_RESULTS

    ws = tmp / 'ws'
    worker = _start(tmp, 'session', 'root_dir', 'crash')
    try:
        _await_line(worker, 'CRASH-POINT')
    finally:
        _kill(worker)
    survivors = marked_processes()
    assert survivors, 'the session died with the worker'
    try:
        outcome = _outcome(_start(tmp, 'session', 'root_dir', 'recover'))
        results = outcome['results']
        assert results[:3] == SESSION_RESULTS
        assert results[3].startswith(f'session 1: \'python3 -i -q -c "{MARK} = 1"\' | running | exit code - |')
        _await(lambda: not marked_processes(), 'the session to end with the workflow')
        assert not list((ws / '.pydantic-ai-harness' / 'shell' / 'sessions').glob('*'))
    finally:
        for pid, _, _ in marked_processes():
            os.kill(pid, signal.SIGKILL)
