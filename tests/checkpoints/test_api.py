"""The Python API: `list` and `diff` values, conflicts with a person's changes, state on disk, jobs."""

from __future__ import annotations

import gc
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.exceptions import UserError
from pydantic_ai_harness_rs import Checkpoints, FileSystem, Shell, _core
from pydantic_ai_harness_rs.checkpoints import CheckpointError, _capability, _stores

from tests.checkpoints.conftest import agent_tools, fifo_read, go, tree, until_exists
from tests.conftest import both_backends
from tests.scripted import run_tools

pytestmark = pytest.mark.anyio


def write(path: str, content: str) -> tuple[str, dict[str, str]]:
    return ('write_file', {'path': path, 'content': content})


async def test_list_and_diff_give_exact_values(ws: Path) -> None:
    (ws / 'a.txt').write_text('1\n2\n3\n')
    cp = Checkpoints[None]()
    started = time.time()
    t = await run_tools(
        agent_tools(ws, cp),
        [
            ('read_file', {'path': 'a.txt'}),
            ('edit_file', {'path': 'a.txt', 'old_text': '2', 'new_text': 'two'}),
            write('b.txt', 'new\n'),
            ('run_command', {'command': 'rm a.txt'}),
        ],
    )
    assert t.results[3] == '(no output)', t.results
    listed = cp.list()
    assert [{k: c[k] for k in ('tool_name', 'tool_call_id', 'paths')} for c in listed] == [
        {'tool_name': 'edit_file', 'tool_call_id': 'call-2', 'paths': ['a.txt']},
        {'tool_name': 'write_file', 'tool_call_id': 'call-3', 'paths': ['b.txt']},
        {'tool_name': 'run_command', 'tool_call_id': 'call-4', 'paths': ['a.txt']},
    ]
    ids = [c['id'] for c in listed]
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert all(started <= c['created_at'] <= time.time() for c in listed)
    assert len({c['run_id'] for c in listed}) == 1 and listed[0]['run_id'] is not None
    assert cp.list(run_id=listed[0]['run_id']) == listed
    assert cp.list(run_id='another run') == []
    assert all(isinstance(c['bytes_kept'], int) and c['bytes_kept'] >= 0 for c in listed)
    [(path, diff)] = await cp.diff(ids[0])
    assert (path, diff) == ('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3')


async def test_a_diff_is_whole_for_long_files_and_long_changes(ws: Path) -> None:
    # The event diff's bounds (65,536 line pairs, 8,192 chars) made a one-line edit of a
    # 256-line file show headers only, and a long change cut short without a mark.
    old = ''.join(f'line {i}\n' for i in range(300))
    (ws / 'long.txt').write_text(old)
    (ws / 'wide.txt').write_text(''.join(f'old {i:04}\n' for i in range(2000)))
    cp = Checkpoints[None]()
    await run_tools(
        agent_tools(ws, cp),
        [
            ('edit_file', {'path': 'long.txt', 'old_text': 'line 150\n', 'new_text': 'changed\n'}),
            ('run_command', {'command': "sed -i 's/^old/new/' wide.txt"}),
        ],
    )
    first, second = (c['id'] for c in cp.list())
    assert await cp.diff(first) == [
        (
            'long.txt',
            '--- a/long.txt\n+++ b/long.txt\n@@ -148,7 +148,7 @@\n line 147\n line 148\n line 149\n'
            '-line 150\n+changed\n line 151\n line 152\n line 153',
        )
    ]
    [(path, diff)] = await cp.diff(second)
    removed = ''.join(f'\n-old {i:04}' for i in range(2000))
    added = ''.join(f'\n+new {i:04}' for i in range(2000))
    assert (path, diff) == ('wide.txt', f'--- a/wide.txt\n+++ b/wide.txt\n@@ -1,2000 +1,2000 @@{removed}{added}')


async def test_a_change_by_a_person_is_refused_without_force(ws: Path) -> None:
    (ws / 'a.txt').write_text('mine\n')
    cp = Checkpoints[None]()
    await run_tools(agent_tools(ws, cp), [('read_file', {'path': 'a.txt'}), write('a.txt', 'agent\n')])
    [checkpoint] = cp.list()
    (ws / 'a.txt').write_text('a person typed this\n')  # after the agent's change
    with pytest.raises(CheckpointError, match='a.txt') as refused:
        await cp.rewind(to=checkpoint['id'])
    assert str(ws) not in str(refused.value)
    assert (ws / 'a.txt').read_text() == 'a person typed this\n'
    assert cp.list() == [checkpoint]
    result = await cp.rewind(to=checkpoint['id'], force=True)
    assert result['restored'] == ['a.txt']
    assert (ws / 'a.txt').read_text() == 'mine\n'


async def test_rewind_of_some_paths_only(ws: Path) -> None:
    cp = Checkpoints[None]()
    await run_tools(agent_tools(ws, cp), [('run_command', {'command': 'echo 1 > one; echo 2 > two'})])
    [checkpoint] = cp.list()
    result = await cp.rewind(to=checkpoint['id'], paths=['two'])
    assert result['deleted'] == ['two']
    assert tree(ws) == {'one': ('file', b'1\n', 0o644)}
    [left] = cp.list()
    assert left['paths'] == ['one']


async def test_rewind_of_paths_no_checkpoint_changed_is_refused(ws: Path) -> None:
    cp = Checkpoints[None]()
    await run_tools(agent_tools(ws, cp), [('run_command', {'command': 'mkdir d; echo 1 > d/one; echo 2 > two'})])
    [checkpoint] = cp.list()
    with pytest.raises(ValueError, match=f'^No checkpoint from {checkpoint["id"]} on changed nope, d/x: nothing'):
        await cp.rewind(to=checkpoint['id'], paths=['two', 'nope', 'd/x'])
    assert sorted(tree(ws)) == ['d', 'd/one', 'two']
    assert (await cp.rewind(to=checkpoint['id'], paths=['d']))['deleted'] == ['d/one']


async def test_a_rewound_checkpoint_is_said_to_be_rewound(ws: Path) -> None:
    cp = Checkpoints[None]()
    await run_tools(agent_tools(ws, cp), [write('a.txt', 'a\n')])
    [checkpoint] = cp.list()
    await cp.rewind(to=checkpoint['id'])
    with pytest.raises(CheckpointError, match=f'^No checkpoint {checkpoint["id"]}: it was rewound already'):
        await cp.rewind(to=checkpoint['id'])


async def test_state_survives_a_new_checkpoints_object(ws: Path) -> None:
    (ws / 'a.txt').write_text('first\n')
    before = tree(ws)
    cp = Checkpoints[None]()
    await run_tools(agent_tools(ws, cp), [('run_command', {'command': 'echo second > a.txt; mkdir d; touch d/f'})])
    listed = cp.list()
    del cp
    gc.collect()  # the store is closed: the next one loads it from disk
    # Should a finished task's context still hold the old store (seen once in a long run), forget it here,
    # so that the next `Checkpoints` loads the store from disk all the same.
    for key in [key for key in _capability._OPEN if key[0] == str(ws.resolve())]:  # pyright: ignore[reportPrivateUsage]
        del _capability._OPEN[key]  # pyright: ignore[reportPrivateUsage]
    again = Checkpoints[None](root=ws)
    assert again.list() == listed
    assert [p for p, _ in await again.diff(listed[0]['id'])] == ['a.txt', 'd', 'd/f']
    await again.rewind(to=listed[0]['id'])
    assert tree(ws) == before


async def test_the_api_needs_a_root(ws: Path) -> None:
    with pytest.raises(UserError, match=r'Checkpoints\(root=...\)'):
        Checkpoints[None]().list()
    assert Checkpoints[None](root=ws).list() == []
    cp = Checkpoints[None]()
    await run_tools(agent_tools(ws, cp), [])  # a run on a local workspace that changed nothing
    assert cp.list() == []
    assert (ws / '.pydantic-ai-harness' / 'checkpoints').is_dir()


async def test_a_background_job_counts_against_the_call_that_started_it(ws: Path) -> None:
    (ws / 'log.txt').write_text('start\n')
    (ws / 'trigger').mkdir()  # excluded: the test's signals to the job are no change
    before = tree(ws)
    cp = Checkpoints[None](exclude=['.git/', 'trigger/'])
    script = (
        f'{until_exists("trigger/1")}; echo job >> log.txt; {until_exists("trigger/2")}; mkdir out; echo x > out/made'
    )
    t = await run_tools(agent_tools(ws, cp), [('start_command', {'command': script})])
    assert t.results[0].startswith('Started background command'), t.results
    (ws / 'trigger' / '1').touch()
    with anyio.fail_after(30):
        while 'job' not in (ws / 'log.txt').read_text():
            await anyio.sleep(0.01)
    # A later call's start finds the job's first change: the job's checkpoint, dated when it started.
    await run_tools(agent_tools(ws, cp), [write('mine.txt', 'tool\n')])
    started, wrote = cp.list()
    assert (started['tool_name'], started['tool_call_id'], started['paths']) == ('start_command', 'call-1', ['log.txt'])
    assert (wrote['tool_name'], wrote['paths']) == ('write_file', ['mine.txt'])
    assert started['created_at'] < wrote['created_at']
    (ws / 'trigger' / '2').touch()
    status = next((ws / '.pydantic-ai-harness' / 'shell').glob('*/status.json'))
    with anyio.fail_after(30):
        while json.loads(status.read_text())['exit_code'] is None:
            await anyio.sleep(0.01)
    await run_tools(agent_tools(ws, cp), [('read_file', {'path': 'log.txt'})])  # its later changes join it
    assert [c['paths'] for c in cp.list()] == [['log.txt', 'out', 'out/made'], ['mine.txt']]
    result = await cp.rewind(to=started['id'])
    assert (result['restored'], result['deleted'], result['removed_dirs']) == (
        ['log.txt'],
        ['mine.txt', 'out/made'],
        ['out'],
    )
    assert tree(ws) == {**before, 'trigger/1': ('file', b'', 0o644), 'trigger/2': ('file', b'', 0o644)}


def release_the_job_at(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    at: Callable[[_stores.RootState, str, dict[str, Any]], Any],
    *,
    after: bool,
) -> tuple[str, list[str]]:
    """A background job's script that waits on a FIFO, then appends `job` to log.txt; the store's calls are
    hooked so that the first call `at(state, method, kwargs)` picks lets the job make its change (before the
    call, or `after` it) and waits until it has. Returns the script and the list naming that call once it came.
    """
    fifo, wrote = tmp_path / 'go', tmp_path / 'wrote'
    os.mkfifo(fifo)
    released: list[str] = []
    call = _stores.RootState.call

    async def release(method: str) -> None:
        released.append(method)
        await go(fifo)  # waits for the job to be reading
        with anyio.fail_after(30):
            while not wrote.exists():
                await anyio.sleep(0.01)

    async def hooked(self: _stores.RootState, method: str, *args: Any, **kwargs: Any) -> Any:
        now = not released and at(self, method, kwargs)
        if now and not after:
            await release(method)
        result = await call(self, method, *args, **kwargs)
        if now and after:
            await release(method)
        return result

    monkeypatch.setattr(_stores.RootState, 'call', hooked)
    return f'{fifo_read(fifo)}; echo job >> log.txt; touch {wrote}', released


async def test_a_jobs_first_change_right_after_its_calls_record_counts(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's first change lands right after the record of the call that started it (driven through a
    FIFO from a hook on the store's calls): the walk of that record stays the job's open snapshot, so the
    change is the job's, not taken into the baseline by a snapshot taken after it."""
    (ws / 'log.txt').write_text('start\n')
    cp = Checkpoints[None]()
    script, released = release_the_job_at(
        tmp_path,
        monkeypatch,
        lambda _, method, kwargs: method.startswith('record') and kwargs.get('tool_name') == 'start_command',
        after=True,  # the call's record: the job changes log.txt now
    )
    t = await run_tools(agent_tools(ws, cp), [('start_command', {'command': script})])
    assert t.results[0].startswith('Started background command'), t.results
    assert released
    await run_tools(agent_tools(ws, cp), [('read_file', {'path': 'log.txt'})])  # looks at the job first
    [started] = cp.list()
    assert (started['tool_name'], started['paths']) == ('start_command', ['log.txt'])
    assert (await cp.diff(started['id']))[0][1].endswith('@@ -1 +1,2 @@\n start\n+job')
    await cp.rewind(to=started['id'])
    assert (ws / 'log.txt').read_text() == 'start\n'


async def test_a_jobs_change_as_the_next_command_starts_counts_against_the_job(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's first change lands between the look at it that starts the next command and that command's
    snapshot (driven through a FIFO from a hook on the store's calls): what the snapshot finds against the
    baseline is the job's, so it goes to the job's checkpoint, not into the baseline nor to the command."""
    (ws / 'log.txt').write_text('start\n')
    cp = Checkpoints[None]()
    script, released = release_the_job_at(
        tmp_path,
        monkeypatch,
        # The job was looked at; the command's snapshot comes next.
        lambda state, method, kwargs: method == 'snapshot' and kwargs.get('call') and state.jobs,
        after=False,
    )
    t = await run_tools(agent_tools(ws, cp), [('start_command', {'command': script})])
    assert t.results[0].startswith('Started background command'), t.results
    await run_tools(agent_tools(ws, cp), [('run_command', {'command': 'echo cmd > other.txt'})])
    assert released
    assert [(c['tool_name'], c['paths']) for c in cp.list()] == [
        ('start_command', ['log.txt']),
        ('run_command', ['other.txt']),
    ]
    started = cp.list()[0]
    await cp.rewind(to=started['id'])
    assert (ws / 'log.txt').read_text() == 'start\n' and not (ws / 'other.txt').exists()


async def test_a_file_above_max_file_bytes_is_not_restorable(ws: Path) -> None:
    (ws / 'big.bin').write_bytes(b'b' * 100)
    (ws / 'small.txt').write_text('s\n')
    cp = Checkpoints[None](max_file_bytes=50)
    await run_tools(agent_tools(ws, cp), [('run_command', {'command': 'echo changed > big.bin; echo t > small.txt'})])
    [checkpoint] = cp.list()
    assert checkpoint['paths'] == ['big.bin', 'small.txt']
    result = await cp.rewind(to=checkpoint['id'])
    assert result['unrestorable'] == ['big.bin']
    assert result['restored'] == ['small.txt']
    assert (ws / 'big.bin').read_text() == 'changed\n'
    assert (ws / 'small.txt').read_text() == 's\n'


async def test_the_oldest_checkpoints_are_pruned_to_the_budget_and_said_so(ws: Path) -> None:
    cp = Checkpoints[None](budget_bytes=3500)
    # One file rewritten six times: each checkpoint keeps 1,000 old bytes (the first: none).
    calls = [('run_command', {'command': f'head -c 1000 /dev/zero | tr "\\0" {c} > x'}) for c in 'abcdef']
    await run_tools(agent_tools(ws, cp), calls)
    listed = [c['id'] for c in cp.list()]
    pruned = cp.pruned()
    assert pruned and listed, (pruned, listed)
    assert pruned == sorted(pruned) and max(pruned) < min(listed)
    assert len(pruned) + len(listed) == 6
    with pytest.raises(CheckpointError, match=f'{pruned[-1]}.*pruned'):
        await cp.rewind(to=pruned[-1])
    await cp.rewind(to=listed[0])
    assert (ws / 'x').read_bytes() == {2: b'd', 3: b'c', 4: b'b'}[len(listed)] * 1000


@both_backends
async def test_the_api_works_under_asyncio_and_trio(ws: Path) -> None:
    (ws / 'a.txt').write_text('old\n')
    store = _core.CheckpointStore(str(ws))  # a checkpoint made by an earlier process
    handle = store.snapshot()
    (ws / 'a.txt').write_text('new\n')
    listing = store.record(handle, run_id='r', tool_call_id='c', tool_name='run_command', created_at=1.0)
    assert listing is not None
    del store
    cp = Checkpoints[None](root=ws)
    assert [c['id'] for c in cp.list(run_id='r')] == [listing['id']]
    assert await cp.diff(listing['id']) == [('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new')]
    assert (await cp.rewind(to=listing['id']))['restored'] == ['a.txt']
    assert (ws / 'a.txt').read_text() == 'old\n'


async def test_a_background_shell_tool_job_counts_against_its_call(ws: Path) -> None:
    cp = Checkpoints[None]()
    script = f'{until_exists("go")}; echo done > made.txt'
    caps = [FileSystem(root_dir=ws), LocalWorkspace(ws), Shell(tools=['shell']), cp]
    t = await run_tools(caps, [('shell', {'command': script, 'mode': 'background'}), write('go', '')])
    assert 'PID' in t.results[0], t.results
    with anyio.fail_after(30):
        while not (ws / 'made.txt').exists():
            await anyio.sleep(0.01)
        status = next((ws / '.pydantic-ai-harness' / 'shell').glob('*/status.json'))
        while json.loads(status.read_text())['exit_code'] is None:
            await anyio.sleep(0.01)
    await run_tools(caps, [('read_file', {'path': 'go'})])
    assert sorted((c['tool_name'], tuple(c['paths'])) for c in cp.list()) == [
        ('shell', ('made.txt',)),
        ('write_file', ('go',)),
    ]
