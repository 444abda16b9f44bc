"""start_command / check_command / stop_command: background jobs that outlive the run."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.shell import Shell

from .conftest import live_processes_matching, run_calls

pytestmark = pytest.mark.anyio


def job_id(start_result: str) -> str:
    match = re.search(r'ID: ([0-9a-f]{32})$', start_result)
    assert match, start_result
    return match.group(1)


async def start(ws: Path, command: str, shell: Shell | None = None) -> str:
    """Start `command` in a run of its own: its job ID."""
    [(_, started)] = await run_calls(
        [LocalWorkspace(ws), Shell() if shell is None else shell], [('start_command', {'command': command})]
    )
    return job_id(started)


async def until(ready: Callable[[], object]) -> None:
    while not ready():
        await anyio.sleep(0.01)


async def until_finished(ws: Path, cid: str) -> None:
    status_file = ws / '.pydantic-ai-harness' / 'shell' / cid / 'status.json'
    await until(lambda: json.loads(status_file.read_text())['exit_code'] is not None)


async def later(ws: Path, *tools: tuple[str, str], shell: Shell | None = None) -> list[tuple[str, str]]:
    """A later run (a new agent, same workspace) calling each `(tool, command_id)` in turn."""
    calls = [(tool, {'command_id': cid}) for tool, cid in tools]
    return await run_calls([LocalWorkspace(ws), Shell() if shell is None else shell], calls, prefix='later')


async def test_start_check_stop_cycle(ws: Path) -> None:
    marker = f'sleep 2001{os.getpid() % 100}'
    [(kind, started)] = await run_calls(
        [LocalWorkspace(ws), Shell()], [('start_command', {'command': f'echo ready; echo warn >&2; {marker}'})]
    )
    assert kind == 'return'
    cid = job_id(started)
    assert started == f"Started background command: 'echo ready; echo warn >&2; {marker}'\nID: {cid}"
    jobs = ws / '.pydantic-ai-harness' / 'shell'
    assert (ws / '.pydantic-ai-harness' / '.gitignore').read_text() == '*\n'
    job_dir = jobs / cid
    assert sorted(p.name for p in job_dir.iterdir()) == [
        'handle',
        'launch.ready',
        'status.json',
        'stderr.log',
        'stdout.log',
    ]
    assert oct(job_dir.stat().st_mode & 0o777) == '0o700'
    status = json.loads((job_dir / 'status.json').read_text())
    assert status['exit_code'] is None
    pid, group = (job_dir / 'handle').read_text().split()
    assert status['pid'] == int(pid) == int(group)

    # A later run (a new agent, same workspace) checks and stops it by ID.
    await until(lambda: 'ready' in (job_dir / 'stdout.log').read_text() and live_processes_matching(marker))
    results = await later(ws, ('check_command', cid), ('stop_command', cid), ('check_command', cid))
    assert results == [
        ('return', '[stdout]\nready\n\n[stderr]\nwarn\n\n[status: running]'),
        ('return', '[stdout]\nready\n\n[stderr]\nwarn\n\n[stopped]\n[exit code: 143]'),
        ('return', f'[Error: unknown command ID {cid!r}]'),
    ]
    assert live_processes_matching(marker) == []
    assert not job_dir.exists()


async def test_finished_job(ws: Path) -> None:
    cid = await start(ws, 'echo done; exit 3')
    await until_finished(ws, cid)
    results = await later(ws, ('check_command', cid), ('stop_command', cid))
    assert results == [
        ('return', '[stdout]\ndone\n\n[status: finished]\n[exit code: 3]'),
        ('return', '[stdout]\ndone\n\n[stopped]\n[exit code: 3]'),
    ]


async def test_no_output_yet_and_unknown_ids(ws: Path) -> None:
    marker = f'sleep 2002{os.getpid() % 100}'
    cid = await start(ws, marker)
    results = await later(
        ws,
        ('check_command', cid),
        ('check_command', 'nope'),
        ('stop_command', '../../etc'),
        ('check_command', '0' * 32),
        ('stop_command', cid),
    )
    assert results == [
        ('return', '(no output yet)\n[status: running]'),
        ('return', "[Error: unknown command ID 'nope']"),
        ('return', "[Error: unknown command ID '../../etc']"),
        ('return', f'[Error: unknown command ID {"0" * 32!r}]'),
        ('return', '(no output)\n[stopped]\n[exit code: 143]'),
    ]
    assert live_processes_matching(marker) == []


async def test_stopped_tree_leaves_no_process(ws: Path) -> None:
    marker = f'sleep 2003{os.getpid() % 100}'
    cid = await start(ws, f"sh -c '{marker} & {marker} & wait' & {marker}")
    await until(lambda: len(live_processes_matching(marker)) >= 3)
    results = await later(ws, ('stop_command', cid))
    assert results == [('return', '(no output)\n[stopped]\n[exit code: 143]')]
    assert live_processes_matching(marker) == []


async def test_term_ignoring_job_is_killed(ws: Path) -> None:
    marker = f'sleep 2004{os.getpid() % 100}'
    cid = await start(ws, f"trap '' TERM; echo armed; {marker}; {marker}")
    log = ws / '.pydantic-ai-harness' / 'shell' / cid / 'stdout.log'
    await until(lambda: 'armed' in log.read_text() and live_processes_matching(marker))
    results = await later(ws, ('stop_command', cid))
    # The sleep dies on TERM, the shell ignoring TERM runs the next sleep; after the grace period
    # the whole group gets SIGKILL, and the wrapper, killed too, publishes no exit code.
    assert results == [('return', '[stdout]\narmed\n\n[stopped: ignored SIGTERM, killed with SIGKILL after 2s]')]
    assert live_processes_matching(marker) == []


async def test_same_tool_call_id_does_not_start_twice(ws: Path) -> None:
    from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace
    from pydantic_ai_harness_rs.shell._jobs import launch

    backend = LocalWorkspaceBackend(ws)
    workspace = Workspace(backend)
    base = str(ws.resolve() / '.pydantic-ai-harness' / 'shell')
    os.makedirs(base)
    marker = f'sleep 2005{os.getpid() % 100}'
    first = await launch(workspace, backend, marker, base=base, cwd=str(ws), env=None, combined=False, job_id='a' * 32)
    try:
        # The wrapper, `sh -c`, and the sleep itself.
        while len(running := live_processes_matching(marker)) < 3:
            await anyio.sleep(0.01)
        second = await launch(
            workspace, backend, marker, base=base, cwd=str(ws), env=None, combined=False, job_id='a' * 32
        )
        assert (first.pid, first.directory) == (second.pid, second.directory)
        assert live_processes_matching(marker) == running
    finally:
        await first.kill()
        await first.cleanup()
    assert live_processes_matching(marker) == []


async def test_job_outlives_the_run_and_sees_env_and_cwd(ws: Path) -> None:
    cid = await start(ws, 'echo $JOB_VAR; pwd', Shell(env={'JOB_VAR': 'v'}))
    await until_finished(ws, cid)
    results = await later(ws, ('stop_command', cid))
    assert results == [('return', f'[stdout]\nv\n{ws.resolve()}\n\n[stopped]\n[exit code: 0]')]


async def test_background_output_keeps_the_tail(ws: Path) -> None:
    cid = await start(ws, 'seq 1 5000; echo END')
    await until_finished(ws, cid)
    [(_, checked)] = await later(ws, ('check_command', cid), shell=Shell(max_output_chars=120))
    assert len(checked) == 120
    assert checked.endswith('4999\n5000\nEND\n\n[status: finished]\n[exit code: 0]')
    assert checked.startswith('[... output truncated, showing last ')
