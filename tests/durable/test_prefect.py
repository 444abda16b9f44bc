"""FileSystem and Shell inside Prefect flows, on Prefect's local (ephemeral) server with
`PREFECT_HOME` in a temporary directory: every tool, in both FileSystem contracts.

All runs go through one worker process (`prefect_worker.py`), so the server starts once.
No crash test of the file tools: a flow run whose process died is not resumed by Prefect on its own,
and running it again (`prefect.flow_engine.run_flow` with the same flow run) replays only some
completed tool tasks from the result cache (see the README). An interactive session, held by its
relay, is found again by such a run (`test_a_session_outlives_a_killed_flow_process`). Skipped when `prefect` is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('prefect', reason="the Prefect tests need `prefect` (pip install prefect, or '.[durable]')")

from tests.durable._scripted_run import (  # noqa: E402
    EVENTS_AFTER_CRASH,
    EVENTS_BEFORE_CRASH,
    PATCH_VETO_EVENTS,
    VETO_EVENTS,
    VETO_RESULTS,
    expected_results,
    marked_processes,
)

WORKER = Path(__file__).with_name('prefect_worker.py')
RUNS = (
    'files:root_dir',
    'files:workspace',
    'command:root_dir',
    'command:workspace',
    'veto:root_dir',
    'veto:workspace',
    'patch_veto:root_dir',
    'patch_veto:workspace',
    'checkpoints:workspace',
)
LIMIT = 600.0
"""Seconds the worker may take (the ephemeral server's start is slow on a loaded machine); a bound only."""


def prefect_env(base: Path) -> dict[str, str]:
    """The worker's environment: this one, with `PREFECT_HOME` in `base` and an ephemeral server."""
    return {
        **os.environ,
        'PREFECT_HOME': str(base / 'prefect-home'),
        'PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS': '300',
        'PREFECT_SERVER_ANALYTICS_ENABLED': 'false',
        'PREFECT_API_URL': '',
    }


@pytest.fixture(scope='module')
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    base = tmp_path_factory.mktemp('prefect')
    for run in RUNS:
        ws = base / run.replace(':', '-')
        ws.mkdir()
        (ws / 'edited.txt').write_text('x=a;\n')
        if run.startswith(('veto', 'patch_veto')):
            (ws / 'vetoed-old.txt').write_text('old\n')
        if run.startswith('patch_veto'):
            (ws / 'a.txt').write_text('a\n')
        if run.startswith('command'):
            (ws / 'go').touch()  # its commands finish at once
    env = prefect_env(base)
    worker = subprocess.run(
        [sys.executable, str(WORKER), str(base), *RUNS],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )
    found = {
        line.split(' ', 2)[1]: json.loads(line.split(' ', 2)[2])
        for line in worker.stdout.splitlines()
        if line.startswith('RESULT ')
    }
    assert len(found) == len(RUNS), (worker.stdout + worker.stderr)[-6000:]
    return base, found


@pytest.mark.parametrize('contract', ['root_dir', 'workspace'])
def test_every_file_tool_in_a_flow(outcomes: tuple[Path, dict[str, dict[str, Any]]], contract: str) -> None:
    base, found = outcomes
    ws = base / f'files-{contract}'
    outcome = found[f'files-{contract}']
    assert outcome['results'] == expected_results(ws, contract)
    assert outcome['events'] == EVENTS_BEFORE_CRASH + EVENTS_AFTER_CRASH
    assert (ws / 'written.txt').read_text() == 'written once\n'
    assert (ws / 'edited.txt').read_text() == 'x=ab;\n'
    assert (ws / 'appended.log').read_text() == 'x\n'
    assert (ws / 'made').is_dir()


@pytest.mark.parametrize('contract', ['root_dir', 'workspace'])
def test_every_shell_tool_in_a_flow(outcomes: tuple[Path, dict[str, dict[str, Any]]], contract: str) -> None:
    base, found = outcomes
    ws = base / f'command-{contract}'
    started, foreground, checked, stopped = found[f'command-{contract}']['results']
    assert started.startswith("Started background command: 'echo started >> bg.log;")
    assert foreground.startswith('PID: ') and foreground.endswith(', "exit_code": 0}')
    assert checked.startswith('(no output yet)\n[status: ')
    assert stopped.startswith('(no output)\n[stopped]')
    assert (ws / 'fg.log').read_text() == 'x\ny\n'
    assert (ws / 'bg.log').read_text() == 'started\nfinished\n'
    assert found[f'command-{contract}']['events'] == [
        {
            'event': 'CommandStartedEvent',
            'command': 'echo x >> fg.log; while [ ! -e bg.done ]; do sleep 0.05; done  # harness_rs_durable_marker\n'
            'echo y >> fg.log',
        },
        {'event': 'CommandFinishedEvent', 'exit_code': 0},
    ]
    deadline = time.monotonic() + 60
    while marked_processes():
        assert time.monotonic() < deadline, 'a command was left running'
        time.sleep(0.05)


@pytest.mark.parametrize('contract', ['root_dir', 'workspace'])
def test_a_listener_vetoes_changes_in_a_flow(outcomes: tuple[Path, dict[str, dict[str, Any]]], contract: str) -> None:
    """A `FileChangeRequestEvent` listener is asked in the tool's task, before the change: its veto
    holds; the events reach the `event_stream_handler` in order, once each."""
    base, found = outcomes
    ws = base / f'veto-{contract}'
    outcome = found[f'veto-{contract}']
    assert outcome['results'] == VETO_RESULTS
    assert outcome['events'] == VETO_EVENTS
    assert (ws / 'vetoed-old.txt').read_text() == 'old\n'
    assert not (ws / 'vetoed.txt').exists() and not (ws / 'vetoed-dir').exists()


@pytest.mark.parametrize('contract', ['root_dir', 'workspace'])
def test_a_listener_vetoes_a_patch_in_a_flow(outcomes: tuple[Path, dict[str, dict[str, Any]]], contract: str) -> None:
    """`apply_patch` (issue 22) in a Prefect task: each file's `FileChangeRequestEvent` asked before any
    write, a veto of one file of three leaves every file untouched; the applied patch's events arrive
    in a plain run's order."""
    base, found = outcomes
    ws = base / f'patch_veto-{contract}'
    vetoed, applied, _ = found[f'patch_veto-{contract}']['results']
    assert vetoed == "[Patch not applied, no file changed: 'vetoed-old.txt' was not edited: a listener said no]"
    assert applied.startswith('Applied patch to 2 files:\nM a.txt [hash:')
    assert found[f'patch_veto-{contract}']['events'] == PATCH_VETO_EVENTS
    assert (ws / 'vetoed-old.txt').read_text() == 'old\n'
    assert ((ws / 'a.txt').read_text(), (ws / 'new.txt').read_text()) == ('A\n', 'n\n')


def test_checkpoints_in_a_flow(outcomes: tuple[Path, dict[str, dict[str, Any]]]) -> None:
    """`Checkpoints` on the agent: the hook runs in the flow, each change is checkpointed once (the
    tool's task records nothing again); the API rewinds them from this process."""
    import asyncio

    from pydantic_ai_harness_rs import Checkpoints

    from tests.checkpoints.conftest import tree
    from tests.durable._scripted_run import CHECKPOINTS

    base, found = outcomes
    ws = base / 'checkpoints-workspace'
    results = found['checkpoints-workspace']['results']
    assert not any('RETRY' in r or 'Error' in r for r in results), results
    assert (ws / 'count.log').read_text() == 'x\ny\n'
    checkpoints = Checkpoints(root=ws)
    listed = checkpoints.list()
    assert [(c['tool_call_id'], c['tool_name'], c['paths']) for c in listed] == CHECKPOINTS
    result = asyncio.run(checkpoints.rewind(to=listed[0]['id']))
    assert result['failed'] == [] and result['unrestorable'] == []
    assert {path: entry[1] for path, entry in tree(ws).items()} == {'edited.txt': b'x=a;\n'}


def test_a_session_outlives_a_killed_flow_process(tmp_path: Path) -> None:
    """`Shell(interactive=True)` in a flow: a `python3 -i` session defines `x`, the flow's process is killed
    by SIGKILL; Prefect resumes nothing by itself, so the flow run is run again in a new process (the same
    flow run, so the same agent run ID): its `write_stdin` reads 42 back from the same program (its relay
    outlived the process; a `start_session` task run again finds the session it started), and the session
    ends with the run."""
    from tests.durable._scripted_run import MARK, SESSION_RESULTS

    ws = tmp_path / 'session-root_dir'
    ws.mkdir()
    env = prefect_env(tmp_path)
    crashing = subprocess.Popen(
        [sys.executable, str(WORKER), str(tmp_path), 'crash', 'session:root_dir'],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    flow_run, seen = None, []
    try:
        assert crashing.stdout is not None
        deadline = time.monotonic() + LIMIT
        while time.monotonic() < deadline:
            line = crashing.stdout.readline()
            if not line:
                break
            seen.append(line)
            if line.startswith('FLOW-RUN '):
                flow_run = line.split()[1]
            if 'CRASH-POINT' in line:
                break
        assert flow_run is not None and 'CRASH-POINT' in seen[-1], ''.join(seen[-40:])
    finally:
        crashing.kill()
        crashing.wait(timeout=LIMIT)
        if crashing.stdout is not None:
            crashing.stdout.close()
    try:
        assert marked_processes(), 'the session died with the flow process'
        recovery = subprocess.run(
            [sys.executable, str(WORKER), str(tmp_path), 'recover', 'session:root_dir', flow_run],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=LIMIT,
        )
        line = next((x for x in recovery.stdout.splitlines() if x.startswith('RESULT ')), None)
        assert line is not None, (recovery.stdout + recovery.stderr)[-6000:]
        results = json.loads(line.split(' ', 2)[2])['results']
        # Tasks Prefect does not read back from its cache run again: the retried `start_session` answers
        # with the session its first attempt started, showing the output since it took it over (the
        # prompt the killed process had read is gone), and the first `write_stdin` types its line again.
        assert results[0] in (SESSION_RESULTS[0], SESSION_RESULTS[0].replace('>>> ', '(no output yet)'))
        assert results[1:3] == SESSION_RESULTS[1:]
        assert results[3].startswith(f'session 1: \'python3 -i -q -c "{MARK} = 1"\' | running | exit code - |')
        assert '\nsession 2' not in results[3]
        deadline = time.monotonic() + 60
        while marked_processes():
            assert time.monotonic() < deadline, 'the session was left running'
            time.sleep(0.05)
        assert not list((ws / '.pydantic-ai-harness' / 'shell' / 'sessions').glob('*'))
    finally:
        for pid, _, _ in marked_processes():
            os.kill(pid, 9)
