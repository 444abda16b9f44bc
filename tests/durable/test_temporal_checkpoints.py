"""`Checkpoints` inside a Temporal workflow, on a real dev server (`conftest.temporal_address`).

The checkpoint of each changing call is taken in the activity that runs it (`checkpoints/_units.py`):
the worker's agent records into the workspace's store, and the API outside the workflow lists and
rewinds it. A replayed workflow (a new worker after a crash) records none again.
"""

from __future__ import annotations

import json
import os
import signal
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('temporalio', reason="the Temporal tests need `temporalio` (pip install '.[durable]')")

from pydantic_ai_harness_rs import Checkpoints  # noqa: E402

from tests.checkpoints.conftest import tree  # noqa: E402
from tests.durable import _temporal_app as app  # noqa: E402
from tests.durable.test_temporal import crash_and_resume, gone, processes_with  # noqa: E402

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def fresh_store() -> None:
    """The module's `Checkpoints` forgets the store of the previous test (its directory was emptied)."""
    app.checkpoints._states.clear()  # pyright: ignore[reportPrivateUsage]


def _seed(ws: Path) -> None:
    (ws / 'keep.txt').write_text('kept\n')
    (ws / 'gone.txt').write_text('to be deleted\n')


SCRIPT: list[Any] = [
    ['write_file', {'path': 'a.txt', 'content': 'one\ntwo\n'}],
    ['edit_file', {'path': 'a.txt', 'old_text': 'two', 'new_text': 'three'}],
    ['run_command', {'command': "sed -i 's/kept/changed/' keep.txt && rm gone.txt && mkdir gen && echo g > gen/g"}],
    ['create_directory', {'path': 'made'}],
    ['shell', {'command': 'echo persistent > p.txt'}],
]


async def test_checkpoints_in_a_workflow(temporal_address: str, ws: Path) -> None:
    _seed(ws)
    before = tree(ws)
    client = await app.connect(temporal_address)
    async with app.worker(client):
        output = await client.execute_workflow(
            app.CheckpointedWorkflow.run,
            json.dumps(SCRIPT),
            id=f'wf-{uuid.uuid4().hex}',
            task_queue=app.TASK_QUEUE,
            execution_timeout=timedelta(minutes=3),
        )
    results = json.loads(output)['results']
    assert not any(r.startswith(app.RETRY) for r in results), results
    assert (ws / 'p.txt').read_text() == 'persistent\n'
    listed = app.checkpoints.list()
    assert [(c['tool_call_id'], c['tool_name'], c['paths']) for c in listed] == [
        ('call-0-0', 'write_file', ['a.txt']),
        ('call-1-0', 'edit_file', ['a.txt']),
        ('call-2-0', 'run_command', ['gen', 'gen/g', 'gone.txt', 'keep.txt']),
        ('call-3-0', 'create_directory', ['made']),
        ('call-4-0', 'shell', ['p.txt']),
    ]
    assert len({c['run_id'] for c in listed}) == 1 and listed[0]['run_id']
    diffs = dict(await app.checkpoints.diff(listed[2]['id']))
    assert '-kept\n+changed' in diffs['keep.txt']
    # A new `Checkpoints` on the root (another process would do the same) sees them, and rewinds them all.
    app.checkpoints._states.clear()  # pyright: ignore[reportPrivateUsage]
    again = Checkpoints(root=ws)
    assert [c['id'] for c in again.list()] == [c['id'] for c in listed]
    result = await again.rewind(to=listed[0]['id'])
    assert result['failed'] == [] and result['unrestorable'] == []
    assert tree(ws) == before


async def test_a_replayed_workflow_records_no_checkpoint_twice(temporal_address: str, ws: Path) -> None:
    """Killed after a write and a command were checkpointed (in their activities): the new worker
    replays them from history, so each has one checkpoint, and the later calls theirs."""
    _seed(ws)
    before = tree(ws)
    script: list[Any] = [
        ['write_file', {'path': 'a.txt', 'content': 'written once\n'}],
        ['run_command', {'command': 'echo x >> count.log'}],
        {'pause': 'after-checkpoints'},
        ['edit_file', {'path': 'a.txt', 'old_text': 'once', 'new_text': 'twice'}],
        ['run_command', {'command': 'echo y >> count.log'}],
    ]
    answer = await crash_and_resume(
        temporal_address,
        script,
        'after-checkpoints.paused',
        pause='after-checkpoints',
        workflow=app.CheckpointedWorkflow,
    )
    assert not any(r.startswith(app.RETRY) for r in answer['results']), answer['results']
    assert (ws / 'count.log').read_text() == 'x\ny\n'
    listed = Checkpoints(root=ws).list()
    assert [(c['tool_call_id'], c['tool_name'], c['paths']) for c in listed] == [
        ('call-0-0', 'write_file', ['a.txt']),
        ('call-1-0', 'run_command', ['count.log']),
        ('call-2-0', 'edit_file', ['a.txt']),
        ('call-3-0', 'run_command', ['count.log']),
    ]
    assert len({c['run_id'] for c in listed}) == 1
    result = await Checkpoints(root=ws).rewind(to=listed[1]['id'])
    assert result['failed'] == []
    assert (ws / 'a.txt').read_text() == 'written once\n' and not (ws / 'count.log').exists()
    await Checkpoints(root=ws).rewind(to=listed[0]['id'])
    assert tree(ws) == before


async def test_a_command_killed_midway_is_undone_whole(temporal_address: str, ws: Path) -> None:
    """Killed while `run_command` runs, after the command changed files: the retried activity's
    checkpoint holds what the dead attempt changed too (not the baseline), so a rewind undoes it all."""
    _seed(ws)
    before = tree(ws)
    marker = f'midway-{uuid.uuid4().hex}'
    # The first attempt changes two files, then sleeps until stopped; the retry finds `started` and goes on.
    command = (
        'echo partial >> keep.txt; rm -f gone.txt; '
        f'if [ ! -e started ]; then touch started; sleep 600; fi; echo rest > rest.txt # {marker}'
    )
    script: list[Any] = [['run_command', {'command': command}]]
    try:
        answer = await crash_and_resume(temporal_address, script, 'started', workflow=app.CheckpointedWorkflow)
        assert answer['results'] == ['(no output)']
        assert gone(marker) == []
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
    assert (ws / 'keep.txt').read_text() == 'kept\npartial\npartial\n'
    listed = Checkpoints(root=ws).list()
    assert [(c['tool_call_id'], c['tool_name'], c['paths']) for c in listed] == [
        ('call-0-0', 'run_command', ['gone.txt', 'keep.txt', 'rest.txt', 'started']),
    ]
    result = await Checkpoints(root=ws).rewind(to=listed[0]['id'])
    assert result['failed'] == [] and result['unrestorable'] == []
    assert tree(ws) == before
    # The retried call's record went with it, and the records' directory with the last one.
    assert not (ws / '.pydantic-ai-harness' / 'checkpoints' / 'calls').exists()
