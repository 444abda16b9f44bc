"""Background jobs and rewind: a job's change found after a later call changed the same file, and a job
whose checkpoint is rewound while it runs. Each job is driven through FIFOs (outside the workspace), so
what it writes, and when, is decided by the test."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai_harness_rs import Checkpoints
from pydantic_ai_harness_rs.checkpoints import _stores

from tests.checkpoints.conftest import agent_tools, fifo_read, go, tree
from tests.scripted import run_tools

pytestmark = pytest.mark.anyio


def fifos(tmp_path: Path, *names: str) -> list[Path]:
    """FIFOs named `names` beside the workspace (a job reads each to go on: `fifo_read`, `go`)."""
    out: list[Path] = []
    for name in names:
        os.mkfifo(tmp_path / name)
        out.append(tmp_path / name)
    return out


async def until(path: Path, text: str) -> None:
    """Wait until `path` holds `text` (the job wrote it)."""
    with anyio.fail_after(30):
        while not path.exists() or text not in path.read_text():
            await anyio.sleep(0.01)


def a_job_on_a(ws: Path, tmp_path: Path) -> tuple[Path, Path, str]:
    """`a.txt` holding `orig`, and a job's script that appends `1` to it, waits for FIFO `f1` (`go`), appends
    `2` and writes `done`: the FIFO, the `done` path and the script."""
    (ws / 'a.txt').write_text('orig\n')
    (f1,) = fifos(tmp_path, 'f1')
    done = tmp_path / 'done'
    return f1, done, f'echo 1 >> a.txt; {fifo_read(f1)}; echo 2 >> a.txt; echo > {done}'


async def start(ws: Path, cp: Checkpoints[None], job: str) -> dict[str, Any]:
    """Start `job` (`a_job_on_a`'s) through `start_command`; its checkpoint once its first change is in."""
    await run_tools(agent_tools(ws, cp), [('start_command', {'command': job})])
    await until(ws / 'a.txt', '1')
    [started] = await cp.list_async()
    return started


async def test_a_jobs_change_after_a_later_calls_change_of_the_same_file_rewinds_without_conflict(
    ws: Path, tmp_path: Path
) -> None:
    """The job appends `1`; a command lets it append `2` while it runs (that command's change); the job
    appends `3` after it. The `3` goes to a new checkpoint of the job's call: each diff is its own change
    (the job's first checkpoint does not claim `2`), and a rewind to any of them is no one else's change."""
    f1, f2 = fifos(tmp_path, 'f1', 'f2')
    before = tree(ws)
    cp = Checkpoints[None]()
    job = f'echo 1 >> job.txt; {fifo_read(f1)}; echo 2 >> job.txt; {fifo_read(f2)}; echo 3 >> job.txt'
    t = await run_tools(agent_tools(ws, cp), [('start_command', {'command': job})])
    assert t.results[0].startswith('Started background command'), t.results
    await until(ws / 'job.txt', '1')
    command = f'echo go > {f1}; until grep -q 2 job.txt; do sleep 0.01; done'
    await run_tools(agent_tools(ws, cp), [('run_command', {'command': command})])
    await go(f2)
    await until(ws / 'job.txt', '3')
    listed = await cp.list_async()
    assert [(c['id'], c['tool_name'], c['tool_call_id'], c['paths']) for c in listed] == [
        ('cp-000001', 'start_command', 'call-1', ['job.txt']),
        ('cp-000002', 'run_command', 'call-1', ['job.txt']),
        ('cp-000003', 'start_command', 'call-1', ['job.txt']),
    ]
    assert listed[2]['created_at'] == listed[0]['created_at']  # the same call
    diffs = [await cp.diff(c['id']) for c in listed]
    assert diffs == [
        [('job.txt', 'created file (2 bytes)')],
        [('job.txt', '--- a/job.txt\n+++ b/job.txt\n@@ -1 +1,2 @@\n 1\n+2')],
        [('job.txt', '--- a/job.txt\n+++ b/job.txt\n@@ -1,2 +1,3 @@\n 1\n 2\n+3')],
    ]
    # Back to before the command: the file as it was before the first change undone (the job's later
    # change to it goes with it).
    result = await cp.rewind(to='cp-000002')
    assert (result['restored'], result['deleted']) == (['job.txt'], [])
    assert (ws / 'job.txt').read_text() == '1\n'
    assert [c['id'] for c in await cp.list_async()] == ['cp-000001']
    result = await cp.rewind(to='cp-000001')
    assert (result['restored'], result['deleted']) == ([], ['job.txt'])
    assert tree(ws) == before


async def test_a_jobs_changes_after_its_checkpoint_was_rewound_are_counted_as_a_new_checkpoint(
    ws: Path, tmp_path: Path
) -> None:
    """Rewinding the checkpoint of a job still running does not stop it: what it changes afterwards
    counts against its call again, as a new checkpoint, which can be rewound in turn."""
    f1, done, job = a_job_on_a(ws, tmp_path)
    cp = Checkpoints[None]()
    started = await start(ws, cp, job)
    assert (started['id'], started['tool_name'], started['paths']) == ('cp-000001', 'start_command', ['a.txt'])
    result = await cp.rewind(to='cp-000001')
    assert result['restored'] == ['a.txt']
    assert (ws / 'a.txt').read_text() == 'orig\n'
    assert await cp.list_async() == []
    await go(f1)  # the job goes on
    await until(done, '')
    await until(ws / 'a.txt', '2')
    [again] = await cp.list_async()
    assert (again['id'], again['tool_name'], again['tool_call_id'], again['paths']) == (
        'cp-000002',
        'start_command',
        'call-1',
        ['a.txt'],
    )
    assert await cp.diff('cp-000002') == [('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n orig\n+2')]
    await cp.rewind(to='cp-000002')
    assert (ws / 'a.txt').read_text() == 'orig\n'


async def test_the_rewind_tool_says_a_job_of_a_rewound_call_still_runs(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model rewinds its `start_command` while the job waits: the files are put back, and the tool's
    result says the job still runs (its later changes recorded again) and how to stop it."""
    (ws / 'a.txt').write_text('orig\n')
    f0, f1 = fifos(tmp_path, 'f0', 'f1')
    cp = Checkpoints[None](tools=['rewind'])
    call = _stores.RootState.call
    released: list[str] = []

    async def hooked(self: _stores.RootState, method: str, *args: Any, **kwargs: Any) -> Any:
        result = await call(self, method, *args, **kwargs)
        if method.startswith('record') and kwargs.get('tool_name') == 'start_command' and not released:
            released.append(method)  # the job's first change lands now: the job's, seen by the next call
            await go(f0)
            await until(ws / 'a.txt', '1')
        return result

    monkeypatch.setattr(_stores.RootState, 'call', hooked)
    job = f'{fifo_read(f0)}; echo 1 >> a.txt; {fifo_read(f1)}; echo 2 >> a.txt'
    t = await run_tools(agent_tools(ws, cp), [('start_command', {'command': job}), ('rewind', {'steps': 1})])
    job_id = t.results[0].rsplit('ID: ', 1)[1]
    assert t.results[1].splitlines() == [
        'Rewound 1 change (cp-000001).',
        'Restored: a.txt',
        f'Still running: background command {job_id}, started by a rewound call: what it changes from now on is '
        'recorded again. Stop it (stop_command) to keep the files as rewound.',
    ]
    assert (ws / 'a.txt').read_text() == 'orig\n'
    await go(f1)
    await until(ws / 'a.txt', '2')
    assert [(c['id'], c['tool_name'], c['paths']) for c in await cp.list_async()] == [
        ('cp-000002', 'start_command', ['a.txt'])
    ]


async def test_a_jobs_change_as_a_rewind_starts_is_the_jobs_not_someone_elses(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job changes a.txt after the look at it that starts the rewind, right before the store's rewind
    step (driven through a FIFO from a hook on the store's calls): that step counts the change against
    the job's call before planning, so the rewind undoes it with the rest, never refusing it as
    someone else's."""
    f1, done, job = a_job_on_a(ws, tmp_path)
    cp = Checkpoints[None]()
    started = await start(ws, cp, job)
    assert (started['id'], started['paths']) == ('cp-000001', ['a.txt'])
    call = _stores.RootState.call
    released: list[str] = []

    async def hooked(self: _stores.RootState, method: str, *args: Any, **kwargs: Any) -> Any:
        if method == 'rewind' and not released:
            released.append(method)  # the jobs were looked at; the store's step comes next
            await go(f1)
            await until(done, '')
        return await call(self, method, *args, **kwargs)

    monkeypatch.setattr(_stores.RootState, 'call', hooked)
    result = await cp.rewind(to='cp-000001')
    assert released
    assert (result['restored'], result['deleted'], result['failed']) == (['a.txt'], [], [])
    assert (ws / 'a.txt').read_text() == 'orig\n'
    assert await cp.list_async() == []


async def test_the_rewind_tool_counts_a_jobs_change_as_it_plans(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above through the `rewind` tool, which plans (announcing each file), then commits: the job's
    change right before the plan's store step is counted against its call in that step, so the tool
    rewinds it rather than retrying with someone else's change."""
    f1, done, job = a_job_on_a(ws, tmp_path)
    cp = Checkpoints[None](tools=['rewind'])
    call = _stores.RootState.call
    released: list[str] = []

    async def hooked(self: _stores.RootState, method: str, *args: Any, **kwargs: Any) -> Any:
        if method == 'plan_rewind' and not released:
            released.append(method)  # the jobs were looked at; the plan's store step comes next
            await go(f1)
            await until(done, '')
        result = await call(self, method, *args, **kwargs)
        if method.startswith('record') and kwargs.get('tool_name') == 'start_command':
            await until(ws / 'a.txt', '1')  # the job's first change, found by the next look
        return result

    monkeypatch.setattr(_stores.RootState, 'call', hooked)
    t = await run_tools(agent_tools(ws, cp), [('start_command', {'command': job}), ('rewind', {'steps': 1})])
    assert released
    assert t.results[1].splitlines()[:2] == ['Rewound 1 change (cp-000001).', 'Restored: a.txt'], t.results
    assert (ws / 'a.txt').read_text() == 'orig\n'


@pytest.mark.parametrize('job_state', ['pending', 'recorded'])
async def test_a_persons_change_while_an_idle_job_is_open_is_refused_not_undone(
    ws: Path, tmp_path: Path, job_state: str
) -> None:
    """A job stays open but does nothing (a dev server waiting, here a FIFO read), with no checkpoint yet
    (`pending`) or after its first change was counted (`recorded`). A person then edits a file the agent
    wrote: the job ran no instruction since the last look at it (its CPU time is unchanged), so the edit is
    not the job's: rewinding the agent's write refuses it as someone else's change (nothing changed), and
    `force=True` overwrites it. (Before, any change found while a job was open was counted against it, and
    the rewind silently undid the person's edit.)"""
    (f1,) = fifos(tmp_path, 'f1')
    cp = Checkpoints[None](root=ws)
    first = 'echo 1 >> a.txt; ' if job_state == 'recorded' else ''
    await run_tools(
        agent_tools(ws, cp),
        [
            ('write_file', {'path': 'p.txt', 'content': 'agent\n'}),
            ('start_command', {'command': f'{first}{fifo_read(f1)}'}),
        ],
    )
    if job_state == 'recorded':
        await until(ws / 'a.txt', '1')
    listed = await cp.list_async()  # a look: the job's first change counted, if any
    expected = [('write_file', ['p.txt'])] + ([('start_command', ['a.txt'])] if job_state == 'recorded' else [])
    assert [(c['tool_name'], c['paths']) for c in listed] == expected
    written = listed[0]['id']
    (ws / 'p.txt').write_text('person\n')
    with pytest.raises(Exception, match='changed since the checkpoint by someone else: p.txt'):
        await cp.rewind(to=written)
    assert (ws / 'p.txt').read_text() == 'person\n'
    assert [(c['tool_name'], c['paths']) for c in await cp.list_async()] == expected  # not the job's
    await cp.rewind(to=written, force=True)
    assert not (ws / 'p.txt').exists() and not (ws / 'a.txt').exists()
    await go(f1)
