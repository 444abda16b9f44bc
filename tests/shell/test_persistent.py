"""The persistent `shell` tool: foreground/background, handles, status file, events, cancellation."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import anyio
import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.shell import (
    CommandFinishedEvent,
    CommandOutputEvent,
    CommandStartedEvent,
    Shell,
)

from .conftest import gone_after_signal, live_processes_matching, norm, run_calls

pytestmark = pytest.mark.anyio


def sh(command: str, **kwargs: object) -> tuple[str, dict[str, object]]:
    return ('shell', {'command': command, **kwargs})


def handles(text: str) -> tuple[int, str, str]:
    pid = int(re.search(r'PID: (\d+)', text).group(1))  # type: ignore[union-attr]
    output = re.search(r'Output: (.*)', text).group(1)  # type: ignore[union-attr]
    status = re.search(r'Status: (.*)', text).group(1)  # type: ignore[union-attr]
    return pid, output, status


HANDLES = (
    'PID: <pid> (supervisor; use `kill -- -<pid>` to stop the whole process tree)\n'
    'Output: <ws>/.pydantic-ai-harness/shell/<id>/output.log\n'
    'Status: <ws>/.pydantic-ai-harness/shell/<id>/status.json\n'
)
"""What the `shell` tool says after the output: the job's handles (normalised by `norm`)."""


async def test_foreground_returns_output_then_handles(ws: Path) -> None:
    events: list[object] = []
    results = await run_calls(
        [LocalWorkspace(ws), Shell(tools=['shell'])], [sh('echo out; echo err >&2; exit 2')], events=events
    )
    [(kind, text)] = results
    assert kind == 'return'
    pid, output, status = handles(text)
    assert norm(text, ws) == 'out\nerr\n' + HANDLES + '{"pid": <pid>, "exit_code": 2}'
    assert Path(output).read_text() == 'out\nerr\n'
    assert json.loads(Path(status).read_text()) == {'pid': pid, 'exit_code': 2}
    # The output comes in one event or, as the two writes are read, two (a loaded machine).
    started, *outs, finished = events
    assert [type(e) for e in [started, finished]] == [CommandStartedEvent, CommandFinishedEvent]
    assert outs and all(type(e) is CommandOutputEvent for e in outs)
    assert (started.command, started.pid, started.tool_call_id) == ('echo out; echo err >&2; exit 2', pid, 'call-0')  # type: ignore[attr-defined]
    assert ''.join(e.text for e in outs) == 'out\nerr\n'  # type: ignore[attr-defined]
    assert (
        finished.pid,
        finished.output_path,
        finished.status_path,
        finished.exit_code,
        finished.truncated,
        finished.total_lines,
    ) == (  # type: ignore[attr-defined]
        pid,
        output,
        status,
        2,
        False,
        2,
    )


async def test_background_returns_handles_at_once(ws: Path) -> None:
    marker = f'sleep 3001{os.getpid() % 100}'
    events: list[object] = []
    results = await run_calls(
        [LocalWorkspace(ws), Shell(tools=['shell'])], [sh(f'echo hi; {marker}', mode='background')], events=events
    )
    [(kind, text)] = results
    pid, output, status = handles(text)
    assert norm(text, ws) == HANDLES + '{"pid": <pid>, "exit_code": null}'
    assert [type(e) for e in events] == [CommandStartedEvent, CommandFinishedEvent]
    assert events[1].exit_code is None  # type: ignore[attr-defined]
    # The command outlives the run; the kill command from the result stops the whole tree.
    assert live_processes_matching(marker)
    os.killpg(pid, 15)
    while json.loads(Path(status).read_text())['exit_code'] is None:
        await anyio.sleep(0.01)
    assert json.loads(Path(status).read_text()) == {'pid': pid, 'exit_code': 143}
    assert gone_after_signal(marker) == []


async def test_foreground_timeout_hands_back_the_running_command(ws: Path) -> None:
    marker = f'sleep 3002{os.getpid() % 100}'
    events: list[object] = []
    results = await run_calls(
        [LocalWorkspace(ws), Shell(tools=['shell'])], [sh(f'echo begun; {marker}', timeout=0.3)], events=events
    )
    text = results[0][1]
    pid, _, status = handles(text)
    assert text.startswith('begun\nPID: ')
    assert text.endswith('{"pid": %d, "exit_code": null}' % pid)
    assert live_processes_matching(marker)
    os.killpg(pid, 9)
    assert isinstance(events[-1], CommandFinishedEvent) and events[-1].exit_code is None


async def test_timeout_bounds_are_retries(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(tools=['shell'])], [sh('true', timeout=0), sh('true', timeout=271)]
    )
    assert results == [
        ('retry', 'timeout must be greater than zero and at most 270 seconds.'),
        ('retry', 'timeout must be greater than zero and at most 270 seconds.'),
    ]


async def test_long_log_tail_and_event_budget(ws: Path) -> None:
    events: list[object] = []
    results = await run_calls([LocalWorkspace(ws), Shell(tools=['shell'])], [sh('seq 1 20000')], events=events)
    text = results[0][1]
    _, output, _ = handles(text)
    log = Path(output).read_bytes()
    assert len(log) == 108894
    tail = log[-16000:]
    cut = tail.index(b'\n') + 1
    omitted = len(log) - 16000 + cut
    assert text.startswith(f'[... output truncated, {omitted} earlier bytes omitted]\n' + tail[cut:].decode())
    outputs = [e for e in events if isinstance(e, CommandOutputEvent)]
    assert ''.join(e.text for e in outputs) == log[:16000].decode()
    assert all(len(e.text.encode()) <= 4096 for e in outputs)
    finished = events[-1]
    assert isinstance(finished, CommandFinishedEvent)
    assert (finished.exit_code, finished.truncated, finished.total_lines) == (0, True, 20000)


async def test_total_lines_none_for_big_logs(ws: Path) -> None:
    events: list[object] = []
    await run_calls([LocalWorkspace(ws), Shell(tools=['shell'])], [sh('head -c 1100000 /dev/zero')], events=events)
    assert events[-1].total_lines is None  # type: ignore[attr-defined]


async def test_incremental_decoding_across_chunks(ws: Path) -> None:
    events: list[object] = []
    # 4095 ASCII bytes then a 2-byte char split across the 4096-byte chunk boundary.
    await run_calls(
        [LocalWorkspace(ws), Shell(tools=['shell'])],
        [sh("head -c 4095 /dev/zero | tr '\\0' a; printf '\\303\\251z'")],
        events=events,
    )
    text = ''.join(e.text for e in events if isinstance(e, CommandOutputEvent))  # type: ignore[attr-defined]
    assert text == 'a' * 4095 + 'éz'


async def test_policy_applies_to_shell(ws: Path) -> None:
    results = await run_calls([LocalWorkspace(ws), Shell(tools=['shell'])], [sh('rm -rf x'), sh('vi f')])
    assert results == [
        ('retry', "Command 'rm' is denied."),
        ('retry', "Interactive commands are not allowed. Command: 'vi f'"),
    ]


async def test_cancelling_a_foreground_call_kills_the_command(ws: Path) -> None:
    # Cancelled once the command itself says it runs (not when a process count is reached, which
    # the wrapper's own command line could satisfy while `launch` is still returning).
    marker = f'sleep 3003{os.getpid() % 100}'

    async def run() -> None:
        command = f'{marker} & echo $$ > started; {marker}'
        await run_calls([LocalWorkspace(ws), Shell(tools=['shell'])], [sh(command, timeout=60)])

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        while not (ws / 'started').exists() or not (ws / 'started').read_text().strip():
            await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    assert live_processes_matching(marker) == []
    jobs = ws / '.pydantic-ai-harness' / 'shell'
    assert [p for p in jobs.iterdir() if p.is_dir()] == []
