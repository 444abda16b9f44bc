"""Issue 24: a background launch leaves no gap a crash can fall into.

A retried `start_command` (same run, same tool call ID, as a durable engine retries it) finds the
job the first attempt started, launches afresh when the first launcher died before its command
could start, and answers "pending" only while a live launcher holds the claim.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pydantic_ai_harness_rs
import pytest
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace
from pydantic_ai_harness_rs.durable._commands import call_job_id
from pydantic_ai_harness_rs.shell import Shell

pytestmark = pytest.mark.anyio

RUN_ID = 'claim-run'
CALL_ID = 'call-1'
PENDING = 'Background command launch is pending; retry with the same tool call ID.'


def _ctx(ws: Path) -> RunContext[None]:
    return RunContext(
        deps=None,
        model=TestModel(),
        usage=RunUsage(),
        workspace=Workspace(LocalWorkspaceBackend(ws)),
        run_id=RUN_ID,
        tool_call_id=CALL_ID,
    )


def _job_dir(ws: Path) -> Path:
    job_id = call_job_id(RUN_ID, CALL_ID)
    assert job_id is not None
    return ws / '.pydantic-ai-harness' / 'shell' / job_id


def _command(ws: Path, first: str = '') -> str:
    """Runs `first`, appends one line to `runs`, then waits for `release`."""
    return f'{first}echo ran >> {ws}/runs; echo up; while [ ! -e {ws}/release ]; do sleep 0.05; done'


async def _until(ready: object) -> None:
    with anyio.fail_after(20):
        while not ready():  # type: ignore[operator]
            await anyio.sleep(0.01)


async def _start_and_finish(ws: Path, command: str | None = None) -> str:
    """`start_command` retried as the engine would; the job must then run once and end."""
    toolset = Shell().get_toolset()
    command = _command(ws) if command is None else command
    started = await toolset.start_command(_ctx(ws), command)
    job_id = _job_dir(ws).name
    assert started == f'Started background command: {command!r}\nID: {job_id}'
    await _until(lambda: b'up' in (_job_dir(ws) / 'stdout.log').read_bytes())
    (ws / 'release').touch()
    await _until(lambda: b'"exit_code": 0' in (_job_dir(ws) / 'status.json').read_bytes())
    assert (ws / 'runs').read_text() == 'ran\n'
    stopped = await toolset.stop_command(_ctx(ws), job_id)
    assert stopped.startswith('[stdout]\nup\n'), stopped
    return started


async def test_a_claim_whose_launcher_died_before_its_command_started_is_launched_afresh(ws: Path) -> None:
    # What a launcher killed after claiming the directory leaves: the claim, unlocked, no handle.
    job = _job_dir(ws)
    job.mkdir(parents=True, mode=0o700)
    (job / 'launch.ready').touch()
    (job / 'stdout.log').write_text('stale\n')
    await _start_and_finish(ws)
    assert not [p.name for p in job.parent.iterdir() if p.name.startswith('.')]


async def test_a_claim_held_by_a_live_launcher_is_pending_until_released(ws: Path) -> None:
    job = _job_dir(ws)
    job.mkdir(parents=True, mode=0o700)
    with open(job / 'launch.ready', 'w') as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(ModelRetry, match=PENDING):
            await Shell().get_toolset().start_command(_ctx(ws), _command(ws))
        assert not (ws / 'runs').exists()
    await _start_and_finish(ws)


CHILD = """
import asyncio, os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from test_launch_claim_child import ctx_for
from pydantic_ai_harness_rs.shell import Shell

ws = Path(sys.argv[1])
Path(sys.argv[4]).write_text(str(os.getpid()))
asyncio.run(Shell().get_toolset().start_command(ctx_for(ws), sys.argv[3]))
import time; time.sleep(100)
"""


@pytest.mark.parametrize('round', range(5))
async def test_a_launcher_killed_once_its_command_runs_leaves_a_job_the_retry_finds(
    ws: Path, tmp_path: Path, round: int
) -> None:
    # The crash of the durable suites: the worker is SIGKILLed the moment the command starts (the
    # command kills it), while its launch may still be returning. The retry finds that job; the
    # command ran once. (Timing-dependent; the Rust test `a_launcher_killed_at_any_point_...`
    # stops the launcher at each point of the launch deterministically.)
    helper = tmp_path / 'helper'
    helper.mkdir()
    (helper / 'test_launch_claim_child.py').write_text(
        'from pydantic_ai import RunContext\n'
        'from pydantic_ai.models.test import TestModel\n'
        'from pydantic_ai.usage import RunUsage\n'
        'from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace\n'
        'def ctx_for(ws):\n'
        '    return RunContext(deps=None, model=TestModel(), usage=RunUsage(),\n'
        '                      workspace=Workspace(LocalWorkspaceBackend(ws)),\n'
        f'                      run_id={RUN_ID!r}, tool_call_id={CALL_ID!r})\n'
    )
    # The package this suite imports (the source tree's, or the one installed in a venv by CI).
    env = {**os.environ, 'PYTHONPATH': str(Path(pydantic_ai_harness_rs.__file__).resolve().parents[1])}
    launcher = tmp_path / 'launcher.pid'
    command = _command(ws, f'kill -9 $(cat {launcher}); ')
    child = subprocess.Popen(
        [sys.executable, '-c', CHILD, str(ws), str(helper), command, str(launcher)], cwd=tmp_path, env=env
    )
    try:
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()
    await _start_and_finish(ws, command)
