"""Issue 19, the supervisor's faults: log cap as written, stop reports, escapes, cancels, tiny timeouts."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.shell import Shell, _persistent, _toolset

from .conftest import norm, run_calls

pytestmark = pytest.mark.anyio

PIPE_BUFFER = 65_536
"""Linux's default pipe buffer: what a log may hold beyond its cap at most."""


def _jobs(ws: Path) -> Path:
    return ws / '.pydantic-ai-harness' / 'shell'


def _job_dirs(ws: Path) -> list[Path]:
    return sorted(p for p in _jobs(ws).iterdir() if len(p.name) == 32) if _jobs(ws).exists() else []


def _status(job: Path) -> dict[str, Any]:
    try:
        return json.loads((job / 'status.json').read_text())
    except (OSError, ValueError):
        return {'exit_code': None}


def _alive(pid: int) -> bool:
    """Whether `pid` is a live (not zombie) process."""
    try:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except OSError:
        return False
    return state not in ('Z', 'X')


def _group_alive(pgid: int) -> bool:
    for entry in os.listdir('/proc'):
        if entry.isdigit() and _alive(int(entry)):
            try:
                fields = Path(f'/proc/{entry}/stat').read_text().rsplit(')', 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:
                return True
    return False


# --- item 12: max_log_bytes holds as the log is written ---------------------------------------


@pytest.mark.parametrize('tool', ['start_command', 'shell'])
async def test_a_burst_never_takes_the_log_past_its_cap(ws: Path, tool: str) -> None:
    # 20 MB in one burst against a 100 kB cap: sampled while the job runs, the log never holds
    # more than the cap and one pipe buffer (a watcher checking once a second left all of it).
    cap = 100_000
    command = 'head -c 20000000 /dev/zero; echo done; sleep 0.3'
    args: dict[str, Any] = {'command': command}
    if tool == 'shell':
        args['mode'] = 'background'
    await run_calls([LocalWorkspace(ws), Shell(tools=[tool], max_log_bytes=cap)], [(tool, args)])
    [job] = _job_dirs(ws)
    log = job / ('output.log' if tool == 'shell' else 'stdout.log')
    largest = 0
    while _status(job)['exit_code'] is None:
        largest = max(largest, log.stat().st_size)
        await anyio.sleep(0.001)
    largest = max(largest, log.stat().st_size)
    assert largest <= cap + PIPE_BUFFER
    text = log.read_bytes()
    assert text.startswith(b'[Log exceeded max_log_bytes=100000; earlier output was cleared.]\n')
    assert text.endswith(b'done\n')
    assert _status(job)['exit_code'] == 0
    assert len((job / 'log_clears').read_text()) % 2 == 0


async def test_a_file_limit_under_the_log_cap_still_bounds_the_log(ws: Path) -> None:
    # With max_file_bytes at or under max_log_bytes the command writes its log itself, under RLIMIT_FSIZE.
    caps = [LocalWorkspace(ws), Shell(max_file_bytes=4096, max_log_bytes=100_000)]
    await run_calls(caps, [('start_command', {'command': 'head -c 100000 /dev/zero'})])
    [job] = _job_dirs(ws)
    while _status(job)['exit_code'] is None:
        await anyio.sleep(0.02)
    assert _status(job)['exit_code'] == 153
    assert (job / 'stdout.log').stat().st_size == 4096


async def test_the_cap_is_stated_with_report_log_limit(ws: Path) -> None:
    line = (
        'Log limit: max_log_bytes=5000; a log that would grow past it is emptied, leaving a notice, '
        'while the command runs on.\n'
    )
    results = await run_calls(
        [LocalWorkspace(ws), Shell(tools=['start_command', 'shell'], max_log_bytes=5000, report_log_limit=True)],
        [('start_command', {'command': 'true'}), ('shell', {'command': 'true', 'mode': 'background'})],
    )
    started, shell = (norm(text, ws) for _, text in results)
    assert started == f"Started background command: 'true'\n{line}ID: <id>"
    assert shell.startswith(f'{line}PID: <pid> (supervisor; use `kill -- -<pid>` to stop the whole process tree)\n')
    # Off by default: the reference's results.
    results = await run_calls(
        [LocalWorkspace(ws), Shell(max_log_bytes=5000)], [('start_command', {'command': 'true'})], prefix='d'
    )
    assert norm(results[0][1], ws) == "Started background command: 'true'\nID: <id>"


async def test_finished_jobs_are_pruned_by_total_size_and_age(ws: Path) -> None:
    await run_calls(
        [LocalWorkspace(ws), Shell(job_max_total_bytes=1000)],
        [('start_command', {'command': 'head -c 3000 /dev/zero'})],
    )
    [first] = _job_dirs(ws)
    while _status(first)['exit_code'] is None:
        await anyio.sleep(0.02)
    # The next start finds 3 kB of finished jobs over the 1 kB budget: the finished job goes.
    await run_calls(
        [LocalWorkspace(ws), Shell(job_max_total_bytes=1000)],
        [('start_command', {'command': 'sleep 0.5'})],
        prefix='second',
    )
    [second] = _job_dirs(ws)
    assert second != first and not first.exists()
    # By age: a running job is never pruned; once finished, `job_max_age=0` removes it at the next start.
    caps = [LocalWorkspace(ws), Shell(tools=['shell'], job_max_age=0)]
    await run_calls(caps, [('shell', {'command': 'true', 'mode': 'background'})], prefix='third')
    while second.exists() and _status(second)['exit_code'] is None:
        await anyio.sleep(0.02)
    await run_calls(caps, [('shell', {'command': 'sleep 5', 'mode': 'background'})], prefix='fourth')
    left = _job_dirs(ws)
    assert len(left) == 1 and _status(left[0])['exit_code'] is None
    os.killpg(_status(left[0])['pid'], 9)


@pytest.mark.parametrize(
    ('value', 'message'),
    [
        (-1, 'job_max_age must be a non-negative number of seconds.'),
        (float('nan'), 'job_max_age must be a non-negative number of seconds.'),
    ],
)
async def test_job_max_age_is_validated(value: Any, message: str) -> None:
    from pydantic_ai import Agent

    with pytest.raises(ValueError) as raised:
        Agent('test', capabilities=[Shell(job_max_age=value)])
    assert str(raised.value) == message
    with pytest.raises(ValueError) as raised:
        Agent('test', capabilities=[Shell(job_max_total_bytes=0)])
    assert str(raised.value) == 'job_max_total_bytes must be a positive integer.'


# --- item 13: a job that ignored SIGTERM ----------------------------------------------------------


async def test_stop_says_the_job_ignored_sigterm_and_was_killed(ws: Path) -> None:
    caps = [LocalWorkspace(ws), Shell()]
    command = "trap '' TERM; echo ready; while :; do sleep 0.05; done"
    [(_, started)] = await run_calls(caps, [('start_command', {'command': command})])
    cid = re.search(r'ID: (\w+)', started).group(1)  # type: ignore[union-attr]
    job = _jobs(ws) / cid
    pgid = _status(job)['pid']
    while b'ready' not in (job / 'stdout.log').read_bytes():
        await anyio.sleep(0.02)
    [(_, stopped)] = await run_calls(caps, [('stop_command', {'command_id': cid})], prefix='stop')
    assert stopped == '[stdout]\nready\n\n[stopped: ignored SIGTERM, killed with SIGKILL after 2s]'
    assert not _group_alive(pgid)
    # One that ends on SIGTERM reads as before.
    [(_, started)] = await run_calls(caps, [('start_command', {'command': 'echo ready; sleep 30'})], prefix='b')
    cid = re.search(r'ID: (\w+)', started).group(1)  # type: ignore[union-attr]
    while b'ready' not in (_jobs(ws) / cid / 'stdout.log').read_bytes():
        await anyio.sleep(0.02)
    [(_, stopped)] = await run_calls(caps, [('stop_command', {'command_id': cid})], prefix='bstop')
    assert stopped == '[stdout]\nready\n\n[stopped]\n[exit code: 143]'


@pytest.mark.parametrize(
    ('handler', 'stopped'),
    [
        # A handler that cleans up within the grace gets to finish, though the `sh -c` that
        # started the program died of the SIGTERM at once.
        (
            'signal.signal(signal.SIGTERM, lambda *_: (open("term", "w"), time.sleep(0.5), open("clean", "w"), sys.exit(0)))',
            '[stopped]\n[exit code: 143]',
        ),
        # One that ignores it is killed after the grace, and said so (the `sh -c` that started
        # it ended of the signal: its exit code is the one the wrapper published).
        (
            'signal.signal(signal.SIGTERM, signal.SIG_IGN)',
            '[stopped: ignored SIGTERM, killed with SIGKILL after 2s]\n[exit code: 143]',
        ),
    ],
    ids=['cleans-up', 'ignores'],
)
async def test_a_program_under_sh_c_gets_the_sigterm_grace(ws: Path, handler: str, stopped: str) -> None:
    caps = [LocalWorkspace(ws), Shell()]
    script = f'import signal, sys, time; {handler}; print("ready", flush=True); time.sleep(300)'
    command = f"{sys.executable} -c '{script}'; echo after"
    [(_, started)] = await run_calls(caps, [('start_command', {'command': command})])
    cid = re.search(r'ID: (\w+)', started).group(1)  # type: ignore[union-attr]
    pgid = _status(_jobs(ws) / cid)['pid']
    try:
        while b'ready' not in (_jobs(ws) / cid / 'stdout.log').read_bytes():
            await anyio.sleep(0.02)
        [(_, result)] = await run_calls(caps, [('stop_command', {'command_id': cid})], prefix='stop')
        assert result == f'[stdout]\nready\n\n{stopped}'
        assert (ws / 'clean').exists() == (handler.count('clean') == 1)
        assert not _group_alive(pgid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)


# --- item 16: escapes, spill files, tiny timeouts -------------------------------------------------


async def test_a_sigterm_handler_that_starts_a_setsid_child_does_not_escape(ws: Path) -> None:
    caps = [LocalWorkspace(ws), Shell()]
    command = "trap 'setsid sleep 31071 & echo $! > escaped.pid; exit' TERM; echo ready; while :; do sleep 0.05; done"
    [(_, started)] = await run_calls(caps, [('start_command', {'command': command})])
    cid = re.search(r'ID: (\w+)', started).group(1)  # type: ignore[union-attr]
    pgid = _status(_jobs(ws) / cid)['pid']
    while b'ready' not in (_jobs(ws) / cid / 'stdout.log').read_bytes():
        await anyio.sleep(0.02)
    await run_calls(caps, [('stop_command', {'command_id': cid})], prefix='stop')
    escaped = int((ws / 'escaped.pid').read_text())
    alive = _alive(escaped)
    if alive:
        os.kill(escaped, 9)
    assert not alive
    assert not _group_alive(pgid)


async def test_a_cancelled_head_tail_call_leaves_no_spill_file(ws: Path) -> None:
    caps = [LocalWorkspace(ws), Shell(truncation='head_tail', max_output_chars=200)]

    async def run() -> None:
        await run_calls(caps, [('run_command', {'command': 'seq 1 100000; echo > spilled; sleep 30'})])

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        while not (ws / 'spilled').exists():
            await anyio.sleep(0.01)
        assert [p.name for p in _jobs(ws).iterdir() if p.name.startswith('output-')]
        tg.cancel_scope.cancel()
    # The native run ends on its own thread after the cancel; it removes what it wrote.
    with anyio.move_on_after(10):
        while [p for p in _jobs(ws).iterdir() if p.name.startswith('output-')]:
            await anyio.sleep(0.02)
    assert [p.name for p in _jobs(ws).iterdir() if p.name.startswith('output-')] == []


@pytest.mark.parametrize('truncation', ['tail', 'head_tail'])
async def test_a_timeout_shorter_than_the_first_step_times_out(ws: Path, truncation: Any) -> None:
    caps = [LocalWorkspace(ws), Shell(truncation=truncation)]
    results = await run_calls(caps, [('run_command', {'command': 'true', 'timeout_seconds': 1e-06})])
    empty = '(no output)\n' if truncation == 'head_tail' else ''  # each mode's documented shape
    assert results == [('return', f'{empty}[Command timed out after 1e-06s]')]


# --- fault A: cancelled while `launch` is still returning -----------------------------------------


@pytest.mark.parametrize('tool', ['shell', 'start_command'])
async def test_a_call_cancelled_while_launch_returns_stops_its_job(
    ws: Path, tool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched: list[Any] = []
    scope = anyio.CancelScope()
    module = _persistent if tool == 'shell' else _toolset
    real = module.launch

    async def launch_then_cancelled(*args: Any, **kwargs: Any) -> Any:
        job = await real(*args, **kwargs)
        launched.append(job)
        scope.cancel()
        await anyio.lowlevel.checkpoint()  # the cancellation lands here, the job started
        return job

    monkeypatch.setattr(module, 'launch', launch_then_cancelled)
    args: dict[str, Any] = {'command': 'sleep 31072'}
    with scope:
        await run_calls([LocalWorkspace(ws), Shell(tools=[tool])], [(tool, args)])
    [job] = launched
    try:
        assert not _group_alive(job.pgid)
        assert _job_dirs(ws) == []
    finally:  # a failing run must not leave its job running for the next nine hours
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pgid, signal.SIGKILL)
