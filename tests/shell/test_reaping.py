"""Nothing left running: stop_command, a timeout and a cancelled call end descendants that left
the command's process group (`setsid`, double fork), checked by PID."""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.shell import Shell

from .conftest import check_until, command_id, direct_context, live_processes_matching, run_calls

pytestmark = pytest.mark.anyio


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not count)."""
    try:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except OSError:
        return False
    return state not in ('Z', 'X')


def defunct(pid: int) -> bool:
    try:
        return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] == 'Z'
    except OSError:
        return False


async def _survivors(pids: list[int]) -> list[int]:
    """The `pids` still running 2 s after the call returned (a `SIGKILL` lands asynchronously;
    on a loaded machine the dying process may still be listed for a moment)."""
    for _ in range(100):
        if not (running := [pid for pid in pids if alive(pid)]):
            return []
        await anyio.sleep(0.02)
    return running


async def _pids(path: Path, count: int) -> list[int]:
    for _ in range(200):
        if path.exists() and len(pids := path.read_text().split()) >= count:
            return [int(p) for p in pids]
        await anyio.sleep(0.02)
    raise AssertionError(f'{path} never held {count} PIDs')


ESCAPES = (
    'setsid sleep 1000 & echo $! >> pids; '
    '(setsid sleep 1000 & echo $! >> pids) ; '  # a double fork: its parent is gone at once
    "sh -c 'sleep 1000 & echo $! >> pids' ; "
)


async def test_stop_command_ends_setsid_and_double_fork(ws: Path) -> None:
    shell = Shell()
    [(_, started)] = await run_calls(
        [LocalWorkspace(ws), shell], [('start_command', {'command': ESCAPES + 'sleep 1000'})]
    )
    job = command_id(started)
    pids = await _pids(ws / 'pids', 3)
    assert all(alive(pid) for pid in pids)
    [(_, stopped)] = await run_calls([LocalWorkspace(ws), shell], [('stop_command', {'command_id': job})])
    assert stopped.endswith('[stopped]\n[exit code: 143]'), stopped
    assert await _survivors(pids) == []
    assert [pid for pid in pids if defunct(pid)] == []


async def test_stop_after_the_command_finished(ws: Path) -> None:
    """The command exited and left daemons: the job's wrapper keeps them, stop_command ends them."""
    shell = Shell()
    [(_, started)] = await run_calls([LocalWorkspace(ws), shell], [('start_command', {'command': ESCAPES + 'true'})])
    job = command_id(started)
    pids = await _pids(ws / 'pids', 3)
    checked = await check_until([LocalWorkspace(ws), shell], job, '[status: finished]', tries=200, pause=0.02)
    assert checked == '(no output yet)\n[status: finished]\n[exit code: 0]'
    assert all(alive(pid) for pid in pids)
    await run_calls([LocalWorkspace(ws), shell], [('stop_command', {'command_id': job})])
    assert await _survivors(pids) == []
    assert [pid for pid in pids if defunct(pid)] == []


async def test_timeout_ends_escaped_descendants(ws: Path) -> None:
    [(_, text)] = await run_calls(
        [LocalWorkspace(ws), Shell()], [('run_command', {'command': ESCAPES + 'sleep 1000', 'timeout_seconds': 3})]
    )
    # 3 s, not 1: on a loaded CI machine the shell once had not written all three PIDs within 1 s.
    assert text == '[Command timed out after 3.0s]'
    pids = [int(p) for p in (ws / 'pids').read_text().split()]
    assert len(pids) == 3
    assert await _survivors(pids) == []
    # The two that left the group are killed while the shell lives to reap them. The third, in
    # the group, dies with the shell from the group's SIGTERM, so init reaps it (or, with an init
    # that does not reap, as in some containers, it stays <defunct>, as without this feature).
    assert [pid for pid in pids[:2] if defunct(pid)] == []


async def test_cancelled_call_ends_escaped_descendants(ws: Path) -> None:
    command = _core.ForegroundCommand()
    env = [(b'PATH', os.environ['PATH'].encode())]
    script = f'cd {ws} && {ESCAPES} sleep 1000'.encode()
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            command.run(b'', script, str(ws), env, None, None, 1000, reap_descendants=True)
        except BaseException as e:  # the kill below ends the call with CancelledError
            outcome.append(e)

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, run)
        pids = await _pids(ws / 'pids', 3)
        command.kill()
    assert [type(e).__name__ for e in outcome] == ['CancelledError']
    assert await _survivors(pids) == []


async def test_documented_group_stop_still_reports_143(ws: Path) -> None:
    shell = Shell()
    [(_, started)] = await run_calls(
        [LocalWorkspace(ws), shell],
        [('start_command', {'command': "trap 'echo bye; exit 143' TERM; sleep 1000 & wait"})],
    )
    job = command_id(started)
    await anyio.sleep(0.3)
    [(_, stopped)] = await run_calls([LocalWorkspace(ws), shell], [('stop_command', {'command_id': job})])
    assert re.fullmatch(r'\[stdout\]\nbye\n\n\[stopped\]\n\[exit code: 143\]', stopped), stopped


async def _none_left(marker: str) -> list[int]:
    """The processes running `marker` 2 s after the call ended (see `_survivors`)."""
    for _ in range(100):
        if not (running := live_processes_matching(marker)):
            return []
        await anyio.sleep(0.02)
    return running


# A script still starting escapees when it is stopped: the group runs while the ones found are
# killed (for the shell to reap them), and starts more; each walk after it finds those. One
# round let 3-4 of 10 escape at a 10 ms timeout, in 3 runs of 3 (a fresh tester's finding).
STILL_STARTING = 'for i in 1 2 3 4 5 6 7 8 9 10; do (setsid {marker} &); done; sleep 5'


async def test_a_timeout_while_escapees_are_still_starting_ends_them_all(ws: Path) -> None:
    marker = f'sleep 1012{os.getpid() % 100}'
    toolset = Shell().get_toolset()
    for run in range(5):
        result = await toolset.run_command(
            direct_context(ws, f'c{run}'), STILL_STARTING.format(marker=marker), timeout_seconds=0.01
        )
        assert result == '[Command timed out after 0.01s]'
        assert await _none_left(marker) == []


async def test_a_cancel_while_escapees_are_still_starting_ends_them_all(ws: Path) -> None:
    marker = f'sleep 1013{os.getpid() % 100}'
    toolset = Shell().get_toolset()
    for run in range(5):
        with anyio.move_on_after(0.01):  # the cancellation being tested, not a timing assertion
            await toolset.run_command(direct_context(ws, f'c{run}'), STILL_STARTING.format(marker=marker))
        assert await _none_left(marker) == []


async def test_stop_command_while_escapees_are_still_starting_ends_them_all(ws: Path) -> None:
    marker = f'sleep 1014{os.getpid() % 100}'
    toolset = Shell().get_toolset()
    for run in range(5):
        started = await toolset.start_command(direct_context(ws, f's{run}'), STILL_STARTING.format(marker=marker))
        job = command_id(started).split()[0]
        stopped = await toolset.stop_command(direct_context(ws, f't{run}'), job)
        assert stopped.endswith('[stopped]\n[exit code: 143]'), stopped
        assert await _none_left(marker) == []
