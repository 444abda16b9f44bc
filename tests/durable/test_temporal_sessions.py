"""Interactive sessions under Temporal: relayed, so a session outlives the worker that started it."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('temporalio', reason="the Temporal tests need `temporalio` (pip install '.[durable]')")

from tests.durable import _temporal_app as app  # noqa: E402
from tests.durable.test_temporal import crash_and_resume, gone, processes_with, run_workflow  # noqa: E402

pytestmark = pytest.mark.anyio


async def test_a_session_is_found_again_after_a_crash(temporal_address: str, ws: Path) -> None:
    """Killed after a `python3 -i` session defined a variable: the new worker's `write_stdin` reads it back
    from the same program; the session ends with the workflow."""
    marker = f'sess{uuid.uuid4().hex[:12]}'
    script: list[Any] = [
        ['start_session', {'command': f'python3 -i -q -c "{marker} = 1"'}],
        ['write_stdin', {'id': '1', 'text': 'x = 41 + 1\n'}],
        {'pause': 'after-define'},
        ['write_stdin', {'id': '1', 'text': 'print(x)\n'}],
        ['list_sessions', {}],
    ]
    seen: list[int] = []
    try:
        answer = await crash_and_resume(
            temporal_address,
            script,
            'after-define.paused',
            pause='after-define',
            between=lambda: seen.extend(processes_with(marker)),
            workflow=app.InteractiveWorkflow,
        )
        results = answer['results']
        assert seen, 'the session died with the worker'
        assert results[0] == f'Session 1 started: \'python3 -i -q -c "{marker} = 1"\'\n>>> '
        assert results[1] == 'x = 41 + 1\n>>> '
        assert results[2] == 'print(x)\n42\n>>> '
        assert results[3].startswith(f'session 1: \'python3 -i -q -c "{marker} = 1"\' | running | exit code - |')
        assert gone(marker) == []  # the run ended: so did its session, and its relay
        assert not list((ws / '.pydantic-ai-harness' / 'shell' / 'sessions').glob('*'))
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)


async def test_a_session_ends_with_its_workflow(temporal_address: str, ws: Path) -> None:
    marker = f'sess{uuid.uuid4().hex[:12]}'
    script: list[Any] = [
        ['start_session', {'command': f'sleep 300 # {marker}'}],
        ['write_stdin', {'id': '1', 'text': '', 'yield_seconds': 0}],
    ]
    answer = await run_workflow(temporal_address, app.InteractiveWorkflow, script)
    assert answer['results'][1] == '(no new output)'
    assert gone(marker) == []


async def test_a_start_session_cut_short_answers_with_the_session_it_started(temporal_address: str, ws: Path) -> None:
    """Killed while `start_session` waits for the program's first output: the retried call finds the session
    its first attempt started (by the tool call) instead of starting a second program."""
    marker = f'sess{uuid.uuid4().hex[:12]}'
    command = f'echo x >> runs.log; touch started; sleep 3; exec python3 -i -q -c "{marker} = 41"'
    script: list[Any] = [
        ['start_session', {'command': command}],
        ['write_stdin', {'id': '1', 'text': f'print({marker} + 1)\n'}],
        ['list_sessions', {}],
    ]
    try:
        answer = await crash_and_resume(temporal_address, script, 'started', workflow=app.InteractiveWorkflow)
        results = answer['results']
        assert results[0].startswith(f'Session 1 started: {command!r}\n')
        assert results[1].endswith('\n42\n>>> ')
        assert results[2].startswith(f'session 1: {command!r} | running |')
        assert '\nsession 2' not in results[2]
        assert (ws / 'runs.log').read_text() == 'x\n'
        assert gone(marker) == []
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
