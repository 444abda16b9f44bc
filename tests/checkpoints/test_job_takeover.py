"""A background job that outlives the process following it: the process exits (or is SIGKILLed)
while the job goes on writing. The next process on the store takes the job over (its locked
record in `jobs/` is free), so what the job changed, before and after, is still its call's
checkpoint and rewinds; it stops following once the job is over, killed included."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from pydantic_ai_harness_rs import Checkpoints, _core
from pydantic_ai_harness_rs.checkpoints._stores import job_directory_of, real_root

from tests.checkpoints.conftest import agent_tools, tree, until_exists
from tests.checkpoints.test_processes import CHILD_SECONDS, Child, summary, until
from tests.scripted import run_tools

pytestmark = pytest.mark.anyio

LEAVING_CHILD = """
import anyio, os, signal, sys, time
from pathlib import Path
from pydantic_ai_harness_rs import Checkpoints
from tests.checkpoints.conftest import agent_tools
from tests.scripted import run_tools

ws, command, how, recorded = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == 'recorded'
cp = Checkpoints(root=ws)
calls = [('write_file', {'path': 'w.txt', 'content': 'w\\\\n'}), ('start_command', {'command': command})]
anyio.run(lambda: run_tools(agent_tools(ws, cp), calls))
if recorded:  # the job's first change counted (by the next call's look) before this process ends
    deadline = time.monotonic() + 60
    while 'one' not in (ws / 'a.txt').read_text() and time.monotonic() < deadline:
        time.sleep(0.001)
    anyio.run(lambda: run_tools(agent_tools(ws, cp), [('write_file', {'path': 'w2.txt', 'content': 'w2\\\\n'})]))
if how == 'kill':
    os.kill(os.getpid(), signal.SIGKILL)
"""


def jobs_dir(ws: Path) -> Path:
    return ws / '.pydantic-ai-harness' / 'checkpoints' / 'jobs'


async def until_ended(directory: str) -> None:
    """Wait until the job in `directory` is over (its status published), failing after `CHILD_SECONDS`."""
    await until(lambda: _core.job_ended(directory))


@pytest.mark.parametrize('first', ['list_async', 'edit'])
@pytest.mark.parametrize('how', ['exit', 'kill'])
@pytest.mark.parametrize('job_state', ['recorded', 'pending'])
async def test_a_job_outliving_its_agent_process_is_taken_over(
    ws: Path, tmp_path: Path, how: str, first: str, job_state: str
) -> None:
    """The agent process starts a job and ends (exits, or is SIGKILLed) while the job waits, the job's
    first change already its call's checkpoint (`recorded`: a later call's look counted it) or not made
    yet (`pending`). The job then deletes, creates and appends; the next process's first look
    (`list_async`, or a file tool's edit) takes it over, so all of it is `start_command`'s checkpoint,
    not the baseline; what it does after that is added to the same checkpoint; once it is over, nobody
    follows it and the store's `jobs/` is gone. Rewinding puts every byte back."""
    (ws / 'a.txt').write_text('orig\n')
    (ws / 'b.txt').write_text('bee\n')
    before = tree(ws)
    go0, go1, go2 = tmp_path / 'go0', tmp_path / 'go1', tmp_path / 'go2'
    if job_state == 'recorded':
        go0.touch()
    command = (
        f'{until_exists(str(go0))}; echo one >> a.txt; {until_exists(str(go1))}; rm b.txt; mkdir d; '
        f'echo x > d/x.txt; {until_exists(str(go2))}; echo two >> a.txt'
    )
    child = Child(ws, command, how, job_state, code=LEAVING_CHILD)
    assert child.process.wait(timeout=CHILD_SECONDS) == (-9 if how == 'kill' else 0)
    assert jobs_dir(ws).is_dir()  # the job's record, its follower gone
    go0.touch()
    go1.touch()
    await until(lambda: (ws / 'd' / 'x.txt').exists())

    cp = Checkpoints[None](root=ws)
    if first == 'edit':
        await run_tools(agent_tools(ws, cp), [('write_file', {'path': 'e.txt', 'content': 'e\n'})])
    listed = await cp.list_async()
    job_paths = ['a.txt', 'b.txt', 'd', 'd/x.txt']
    expected = [('cp-000001', 'write_file', ['w.txt'])]
    if job_state == 'recorded':  # the job's checkpoint came before the other process's last call
        expected += [('cp-000002', 'start_command', job_paths), ('cp-000003', 'write_file', ['w2.txt'])]
    else:
        expected += [('cp-000002', 'start_command', job_paths)]
    if first == 'edit':  # after the job's changes were counted: its own file only
        expected.append((f'cp-{len(expected) + 1:06d}', 'write_file', ['e.txt']))
    assert summary(listed) == expected
    assert (listed[1]['tool_call_id'], listed[1]['run_id']) == ('call-2', listed[0]['run_id'])

    directory = job_directory_of(real_root(str(ws)), listed[1]['run_id'], 'call-2')
    assert directory is not None
    go2.touch()
    await until_ended(directory)
    assert (ws / 'a.txt').read_text() == 'orig\none\ntwo\n'
    assert summary(await cp.list_async()) == expected  # `two` added to the job's checkpoint
    assert not jobs_dir(ws).exists()  # over: followed no more

    if len(expected) > 2:
        await cp.rewind(to=expected[2][0])
    result = await cp.rewind(to='cp-000002')
    assert (result['restored'], result['deleted'], result['removed_dirs'], result['failed']) == (
        ['a.txt', 'b.txt'],
        ['d/x.txt'],
        ['d'],
        [],
    )
    await cp.rewind(to='cp-000001')
    assert tree(ws) == before


async def test_a_live_followers_job_is_not_taken_over(ws: Path, tmp_path: Path) -> None:
    """While the process that started a job runs, another process on the store leaves the job to it: its
    look finds the job's record locked, and the job's change is still counted by its follower, as that
    call's checkpoint (one only: nothing counted twice)."""
    go = tmp_path / 'go'
    cp = Checkpoints[None](root=ws)
    calls = [('start_command', {'command': f'{until_exists(str(go))}; echo job > j.txt'})]
    await run_tools(agent_tools(ws, cp), calls)
    assert jobs_dir(ws).is_dir()
    other = Child(ws)  # runs `CHILD`: answers its listing after each batch of calls
    try:
        go.touch()
        await until(lambda: (ws / 'j.txt').exists())
        assert summary(other.run([['write_file', {'path': 'o.txt', 'content': 'o\n'}]])) == [
            ('cp-000001', 'write_file', ['o.txt'])
        ]
        assert jobs_dir(ws).is_dir()
    finally:
        other.close()
    listed = await cp.list_async()
    assert summary(listed) == [
        ('cp-000001', 'write_file', ['o.txt']),
        ('cp-000002', 'start_command', ['j.txt']),
    ]


async def test_a_job_killed_before_it_could_publish_its_status_is_followed_no_more(ws: Path, tmp_path: Path) -> None:
    """A job whose every process was SIGKILLed (its wrapper too, so no exit status was published) is over:
    the next look stops following it, and its record goes."""
    cp = Checkpoints[None](root=ws)
    await run_tools(agent_tools(ws, cp), [('start_command', {'command': 'echo j > j.txt; sleep 60'})])
    await until(lambda: (ws / 'j.txt').exists())
    assert jobs_dir(ws).is_dir()
    listed = await cp.list_async()  # j.txt counted
    assert summary(listed) == [('cp-000001', 'start_command', ['j.txt'])]
    directory = job_directory_of(real_root(str(ws)), listed[0]['run_id'], 'call-1')
    assert directory is not None
    handle = _core.job_attach(directory)
    assert handle is not None and handle[1] is not None
    os.killpg(handle[1], signal.SIGKILL)
    await until_ended(directory)
    status = _core.job_status(directory)
    assert status is not None and json.loads(status)['exit_code'] is None  # over, yet never said so
    await cp.list_async()
    assert not jobs_dir(ws).exists()
