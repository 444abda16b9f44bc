"""SIGKILL during a rewind: each file is left old or new, never torn, and the store opens again."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pydantic_ai_harness_rs
import pytest
from pydantic_ai_harness_rs import Checkpoints

from tests.checkpoints.conftest import agent_tools
from tests.scripted import run_tools

pytestmark = pytest.mark.anyio

FILES = 64
SIZE = 1 << 20

REWIND = """
import anyio, sys
from pydantic_ai_harness_rs import Checkpoints

async def main() -> None:
    await Checkpoints(root=sys.argv[1]).rewind(to=sys.argv[2])

anyio.run(main)
"""


def content(i: int, fill: bytes) -> bytes:
    return (b'%05d' % i + fill * SIZE)[:SIZE]


async def test_a_killed_rewind_leaves_each_file_old_or_new(ws: Path) -> None:
    for i in range(FILES):
        (ws / f'f{i:03d}.bin').write_bytes(content(i, b'o'))
    cp = Checkpoints[None]()
    t = await run_tools(
        agent_tools(ws, cp),
        [
            (
                'run_command',
                {
                    'command': 'for f in f*.bin; do head -c 5 $f > t; head -c 1048571 /dev/zero | tr "\\\\0" n >> t; mv t $f; done'
                },
            )
        ],
    )
    assert t.results == ['(no output)']
    assert all((ws / f'f{i:03d}.bin').read_bytes() == content(i, b'n') for i in range(FILES))
    [checkpoint] = cp.list()
    del cp
    gc.collect()  # this process's store is closed: the rewinding process is the store's only user
    # The package this test imports, and nothing of `tests/` (its `typing/` folder would shadow the module).
    package_dir = str(Path(pydantic_ai_harness_rs.__file__).resolve().parent.parent)
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([package_dir, os.environ.get('PYTHONPATH', '')])}
    process = subprocess.Popen([sys.executable, '-c', REWIND, str(ws), checkpoint['id']], env=env, cwd=ws)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if any((ws / f'f{i:03d}.bin').read_bytes()[5:6] == b'o' for i in range(FILES)):
            break  # the rewind has begun restoring
        time.sleep(0.001)
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL  # killed, not finished
    states = []
    for i in range(FILES):
        data = (ws / f'f{i:03d}.bin').read_bytes()
        assert data in (content(i, b'o'), content(i, b'n')), f'f{i:03d}.bin is torn'
        states.append(data == content(i, b'o'))
    assert sorted(p.name for p in ws.iterdir() if not p.name.startswith('.')) == [f'f{i:03d}.bin' for i in range(FILES)]
    # The store opens again; a rewind with force finishes the job.
    again = Checkpoints[None](root=ws)
    if again.list():
        await again.rewind(to=again.list()[0]['id'], force=True)
    assert all((ws / f'f{i:03d}.bin').read_bytes() == content(i, b'o') for i in range(FILES))


KEEP_THEN_DIE = """
import os, signal, sys, time
from pydantic_ai_harness_rs import _core

store = _core.CheckpointStore(sys.argv[1])
# Started now (a dead attempt's record waits a day for its retry).
store.keep(['a.txt', 'new/b.txt'], run_id='run', tool_call_id='call-1', tool_name='write_file', created_at=time.time())
# The commit, then the worker dies before the record.
with open(os.path.join(sys.argv[1], 'a.txt'), 'w') as f:
    f.write('written\\n')
os.makedirs(os.path.join(sys.argv[1], 'new'))
with open(os.path.join(sys.argv[1], 'new', 'b.txt'), 'w') as f:
    f.write('b\\n')
os.kill(os.getpid(), signal.SIGKILL)
"""


async def test_a_commit_whose_worker_died_before_its_record_is_checkpointed_by_the_retry(ws: Path) -> None:
    """A durable unit's file tool call: killed between its commit and its record, then run again (the
    retried commit finds its files written and changes nothing): the checkpoint has the first
    attempt's before states, so a rewind puts the files back."""
    from pydantic_ai_harness_rs import _core

    (ws / 'a.txt').write_text('original\n')
    package_dir = str(Path(pydantic_ai_harness_rs.__file__).resolve().parent.parent)
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([package_dir, os.environ.get('PYTHONPATH', '')])}
    process = subprocess.run([sys.executable, '-c', KEEP_THEN_DIE, str(ws)], env=env, cwd=ws, check=False, timeout=120)
    assert process.returncode == -signal.SIGKILL
    assert (ws / 'a.txt').read_text() == 'written\n'
    store = _core.CheckpointStore(str(ws))
    identity = {'run_id': 'run', 'tool_call_id': 'call-1', 'tool_name': 'write_file', 'created_at': time.time()}
    handle = store.keep(['a.txt', 'new/b.txt'], **identity)
    listing = store.record(handle, **identity)
    assert listing is not None and listing['paths'] == ['a.txt', 'new', 'new/b.txt']
    result = await Checkpoints[None](root=ws).rewind(to=listing['id'])
    assert result['failed'] == [] and result['unrestorable'] == []
    assert sorted(p.name for p in ws.iterdir() if not p.name.startswith('.')) == ['a.txt']
    assert (ws / 'a.txt').read_text() == 'original\n'
