"""Two processes on one root: each records in its turn (the store's lock), ids stay unique, both
list the same checkpoints, a rewind in one undoes the other's, and a listing waits for a call in
progress in the other process. The other process is a child running an agent (`CHILD`), driven
line by line over its stdin."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pydantic_ai_harness_rs
import pytest
from pydantic_ai_harness_rs import Checkpoints, _core
from pydantic_ai_harness_rs.checkpoints import _stores

from tests.checkpoints.conftest import agent_tools, tree
from tests.scripted import run_tools

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[2]

CHILD_SECONDS = 60
"""How long a test waits for the child (an answer, a file it makes, its exit): a failing run fails, never hangs."""

CHILD = """
import anyio, json, sys
from pydantic_ai_harness_rs import Checkpoints
from tests.checkpoints.conftest import agent_tools
from tests.scripted import run_tools

ws = sys.argv[1]
cp = Checkpoints(root=ws)

async def main() -> None:
    for line in sys.stdin:
        calls = [tuple(c) for c in json.loads(line)]
        await run_tools(agent_tools(__import__('pathlib').Path(ws), cp), calls)
        print(json.dumps(await anyio.to_thread.run_sync(cp.list)), flush=True)

anyio.run(main)
"""


class Child:
    """The other process: runs the tool calls it is sent with an agent on `ws`, answers its listing.
    `code`: another child program, given `args` (default: `CHILD` on `ws`)."""

    def __init__(self, ws: Path, *args: str | Path, code: str = CHILD) -> None:
        package_dir = str(Path(pydantic_ai_harness_rs.__file__).resolve().parent.parent)
        # The package this test imports and the repository (for `tests.scripted`), not `tests/` itself.
        env = {**os.environ, 'PYTHONPATH': os.pathsep.join([package_dir, str(REPO)])}
        self.process = subprocess.Popen(
            [sys.executable, '-c', code, str(ws), *map(str, args)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=REPO,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        # Read in a thread, so that a listing waits for the child at most `CHILD_SECONDS`.
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put('')  # the child exited

    def send(self, calls: list[Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(calls) + '\n')
        self.process.stdin.flush()

    def listing(self) -> list[dict[str, Any]]:
        try:
            line = self.lines.get(timeout=CHILD_SECONDS)
        except queue.Empty:
            self.process.kill()
            raise AssertionError(f'the child did not answer within {CHILD_SECONDS} s (killed)') from None
        assert line, f'the child exited ({self.process.wait()})'
        return json.loads(line)

    def run(self, calls: list[Any]) -> list[dict[str, Any]]:
        self.send(calls)
        return self.listing()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            assert self.process.wait(timeout=CHILD_SECONDS) == 0
        finally:
            self.process.kill()  # gone already when it exited


async def until(condition: Any, child: Child | None = None) -> None:
    """Wait until `condition()` holds (the child, when given, still running), failing after `CHILD_SECONDS`."""
    with anyio.fail_after(CHILD_SECONDS):
        while not condition():
            assert child is None or child.process.poll() is None, 'the child exited'
            await anyio.sleep(0.001)


def summary(listed: list[dict[str, Any]]) -> list[tuple[str, str, list[str]]]:
    return [(c['id'], c['tool_name'], c['paths']) for c in listed]


async def test_two_processes_record_in_turn_on_one_root(ws: Path) -> None:
    (ws / 'shared.txt').write_text('original\n')
    before = tree(ws)
    cp = Checkpoints[None](root=ws)
    child = Child(ws)
    try:
        await run_tools(agent_tools(ws, cp), [('write_file', {'path': 'mine.txt', 'content': 'one\n'})])
        child.run([('run_command', {'command': 'echo child >> shared.txt'})])
        await run_tools(agent_tools(ws, cp), [('run_command', {'command': 'echo parent >> shared.txt'})])
        theirs = child.run([('write_file', {'path': 'theirs.txt', 'content': 'two\n'})])
        mine = cp.list()
        assert (
            summary(mine)
            == summary(theirs)
            == [
                ('cp-000001', 'write_file', ['mine.txt']),
                ('cp-000002', 'run_command', ['shared.txt']),
                ('cp-000003', 'run_command', ['shared.txt']),
                ('cp-000004', 'write_file', ['theirs.txt']),
            ]
        )
        assert mine == theirs
        # Each command's checkpoint holds its own line: the baseline was the other's last state.
        assert (await cp.diff('cp-000003'))[0][1].endswith('@@ -1,2 +1,3 @@\n original\n child\n+parent')
        # A rewind here undoes the child's checkpoints too; the child sees them gone.
        result = await cp.rewind(to='cp-000002')
        assert result['failed'] == [] and result['unrestorable'] == []
        assert summary(child.run([])) == [('cp-000001', 'write_file', ['mine.txt'])]
        assert (ws / 'shared.txt').read_text() == 'original\n' and not (ws / 'theirs.txt').exists()
        await cp.rewind(to='cp-000001')
        assert tree(ws) == before
    finally:
        child.close()


def _blocked_on(lock: Path) -> bool:
    """Whether some process waits for an `flock` on `lock` (`/proc/locks` lists waiters with `->`)."""
    ino = lock.stat().st_ino
    for line in Path('/proc/locks').read_text().splitlines():
        fields = line.split()
        if '->' in fields and 'FLOCK' in fields and any(f.endswith(f':{ino}') for f in fields):
            return True
    return False


async def test_a_listing_waits_for_the_other_processs_command(ws: Path, tmp_path: Path) -> None:
    started, go = tmp_path / 'started', tmp_path / 'go'
    command = f'echo x > mid.txt; touch {started}; while [ ! -e {go} ]; do sleep 0.01; done; echo y >> mid.txt'
    cp = Checkpoints[None](root=ws)
    assert cp.list() == []  # the store is open here before the child's command
    child = Child(ws)
    try:
        child.send([('run_command', {'command': command})])
        await until(started.exists, child)
        listed: list[list[dict[str, Any]]] = []
        lister = threading.Thread(target=lambda: listed.append(cp.list()), daemon=True)
        lister.start()
        lock = ws / '.pydantic-ai-harness' / 'checkpoints' / 'lock'
        await until(lambda: not lister.is_alive() or _blocked_on(lock))
        go.touch()  # the command ends; the child records, then the listing goes on
        lister.join(timeout=CHILD_SECONDS)
        assert not lister.is_alive(), 'the listing still waits'
        assert summary(child.listing()) == [('cp-000001', 'run_command', ['mid.txt'])]
        assert summary(listed[0]) == [('cp-000001', 'run_command', ['mid.txt'])]
        assert (await cp.diff('cp-000001'))[0][1] == 'created file (4 bytes)'
    finally:
        go.touch()
        child.close()


def _edit(old: str, new: str) -> tuple[str, dict[str, Any]]:
    return ('edit_file', {'path': 'a.txt', 'old_text': old, 'new_text': new})


async def test_two_processes_alternate_file_tool_edits(ws: Path) -> None:
    # `write_file` and `edit_file` keep, commit and record in one native call whose log line and
    # objects a writer thread writes after the call returns: the other process, taking its turn
    # right after, must find them (unique ids, each diff exactly its edit).
    (ws / 'a.txt').write_text('head\nv0\n')
    cp = Checkpoints[None](root=ws)
    child = Child(ws)
    try:
        tools = agent_tools(ws, cp)
        theirs: list[dict[str, Any]] = []
        for i in range(0, 8, 2):
            await run_tools(tools, [_edit(f'v{i}', f'v{i + 1}')])
            theirs = child.run([_edit(f'v{i + 1}', f'v{i + 2}')])
        await run_tools(tools, [('write_file', {'path': 'b.txt', 'content': 'parent\n'})])
        theirs = child.run([('write_file', {'path': 'b.txt', 'content': 'child\n'})])
        mine = cp.list()
        assert mine == theirs
        assert summary(mine) == [(f'cp-{n:06d}', 'edit_file', ['a.txt']) for n in range(1, 9)] + [
            ('cp-000009', 'write_file', ['b.txt']),
            ('cp-000010', 'write_file', ['b.txt']),
        ]
        for n in range(1, 9):
            assert (await cp.diff(f'cp-{n:06d}')) == [
                ('a.txt', f'--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n head\n-v{n - 1}\n+v{n}')
            ]
        assert (await cp.diff('cp-000010')) == [('b.txt', '--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-parent\n+child')]
        # A rewind here undoes the child's edits too.
        result = await cp.rewind(to='cp-000002')
        assert result['failed'] == [] and result['unrestorable'] == []
        assert (ws / 'a.txt').read_text() == 'head\nv1\n' and not (ws / 'b.txt').exists()
        assert summary(child.run([])) == [('cp-000001', 'edit_file', ['a.txt'])]
    finally:
        child.close()


async def test_a_process_killed_amid_file_tool_edits_leaves_a_consistent_store(ws: Path) -> None:
    # Killed while its writer thread may still hold objects and log lines: the log on disk names no
    # missing object, every checkpoint it holds diffs exactly, and the next process goes on from it.
    (ws / 'a.txt').write_text('head\nv0\n')
    log = ws / '.pydantic-ai-harness' / 'checkpoints' / 'log.jsonl'
    child = Child(ws)
    try:
        child.send([_edit(f'v{i}', f'v{i + 1}') for i in range(400)])
        await until(lambda: log.exists() and log.read_bytes().count(b'\n') >= 41, child)  # the header and 40 lines
        child.process.kill()
        child.process.wait()
    finally:
        assert child.process.stdin is not None
        child.process.stdin.close()
    objects = ws / '.pydantic-ai-harness' / 'checkpoints' / 'objects'
    header, *lines = log.read_text().splitlines()
    assert 'next' in json.loads(header)
    for line in lines:
        for change in json.loads(line)['changes']:
            for state in (change['before'], change['after']):
                if state.get('st'):  # a stored file's object, by hash
                    h = state['h']
                    assert (objects / h[:2] / h[2:]).is_file(), h
    cp = Checkpoints[None](root=ws)
    listed = cp.list()
    n = len(listed)
    assert n >= 40 and [c['id'] for c in listed] == [f'cp-{i:06d}' for i in range(1, n + 1)]
    for i in (1, n):
        assert (await cp.diff(f'cp-{i:06d}')) == [
            ('a.txt', f'--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n head\n-v{i - 1}\n+v{i}')
        ]
    current = (ws / 'a.txt').read_text().split('\n')[1]
    # The kill may land between an edit's commit and its line reaching the log: that call's checkpoint
    # is lost whole (the README says so), and its change is then someone else's to a rewind.
    assert current.startswith('v') and int(current[1:]) >= n
    lost = int(current[1:]) > n  # the edits whose lines were still queued
    await run_tools(agent_tools(ws, cp), [_edit(current, 'last')])
    assert cp.list()[-1]['id'] == f'cp-{n + 1:06d}'
    if lost:
        with pytest.raises(_core.CheckpointError, match='changed since the checkpoint by someone else: a.txt'):
            await cp.rewind(to='cp-000001')
        assert (ws / 'a.txt').read_text() == 'head\nlast\n'  # nothing rewound
    await cp.rewind(to='cp-000001', force=lost)
    assert (ws / 'a.txt').read_text() == 'head\nv0\n'


async def test_an_edit_while_the_other_process_holds_the_store_leaves_the_event_loop_free(
    ws: Path, tmp_path: Path
) -> None:
    # A small file's edit is checkpointed inline on the event loop; when another process holds the
    # store's lock, it waits in a worker thread instead (this loop must go on to let that process go).
    (ws / 'a.txt').write_text('one\n')
    started, go = tmp_path / 'started', tmp_path / 'go'
    command = f'echo x > mid.txt; touch {started}; while [ ! -e {go} ]; do sleep 0.01; done'
    cp = Checkpoints[None](root=ws)
    child = Child(ws)
    try:
        child.send([('run_command', {'command': command})])
        await until(started.exists, child)
        lock = ws / '.pydantic-ai-harness' / 'checkpoints' / 'lock'
        results: list[Any] = []

        async def edit() -> None:
            results.append(await run_tools(agent_tools(ws, cp), [_edit('one', 'two')]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(edit)
            await until(lambda: _blocked_on(lock))  # runs only while the edit leaves the loop free
            go.touch()
        # The child lists after its record (the edit's checkpoint may be in by then).
        assert summary(child.listing())[0] == ('cp-000001', 'run_command', ['mid.txt'])
        assert summary(cp.list()) == [
            ('cp-000001', 'run_command', ['mid.txt']),
            ('cp-000002', 'edit_file', ['a.txt']),
        ]
        assert (ws / 'a.txt').read_text() == 'two\n'
    finally:
        go.touch()
        child.close()


async def test_a_rewind_is_not_refused_for_the_other_processs_recorded_calls(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child's agent keeps changing shared.txt while this process rewinds: its call lands right after
    this process's store step for the rewind (driven from a hook on the store's calls). The plan, its
    conflict check and the commit are one step under the store's lock, so the child's call comes before
    or after the whole rewind; never between (where it was taken for someone else's change)."""
    (ws / 'shared.txt').write_text('original\n')
    cp = Checkpoints[None](root=ws)
    child = Child(ws)
    try:
        [first] = child.run([('run_command', {'command': 'echo one >> shared.txt'})])
        call = _stores.RootState.call
        landed: list[list[dict[str, Any]]] = []

        async def hooked(self: _stores.RootState, method: str, *args: Any, **kwargs: Any) -> Any:
            result = await call(self, method, *args, **kwargs)
            if method in ('plan_rewind', 'rewind') and not landed:
                landed.append(child.run([('run_command', {'command': 'echo two >> shared.txt'})]))
            return result

        monkeypatch.setattr(_stores.RootState, 'call', hooked)
        result = await cp.rewind(to=first['id'])
        assert (result['restored'], result['failed']) == (['shared.txt'], [])
        # The rewind came first; the child's command then appended to the restored file.
        assert (ws / 'shared.txt').read_text() == 'original\ntwo\n'
        assert summary(landed[0]) == summary(cp.list()) == [('cp-000002', 'run_command', ['shared.txt'])]
    finally:
        child.close()


async def test_a_call_between_an_announced_plan_and_its_commit_is_not_someone_elses(ws: Path) -> None:
    """A rewind announced file by file (the `rewind` tool) is planned, then committed: when the other
    process's checkpointed call changed a planned file in between, the commit refuses (what it would do
    was not announced) and says it was a recorded call, to rewind again; nothing is changed."""
    (ws / 'shared.txt').write_text('original\n')
    store = _core.CheckpointStore(str(ws))
    child = Child(ws)
    try:
        [first] = child.run([('run_command', {'command': 'echo one >> shared.txt'})])
        plan = store.plan_rewind(first['id'])
        child.run([('run_command', {'command': 'echo two >> shared.txt'})])
        with pytest.raises(_core.CheckpointError) as refused:
            store.commit_rewind(plan)
        assert str(refused.value) == (
            'Cannot rewind: a checkpointed tool call changed shared.txt after this rewind was planned '
            "(a recorded change, not someone else's). Nothing was rewound: rewind again."
        )
        assert (ws / 'shared.txt').read_text() == 'original\none\ntwo\n'
        # Planned again, it goes through: both of the child's calls undone.
        assert store.rewind(first['id'])['restored'] == ['shared.txt']
        assert (ws / 'shared.txt').read_text() == 'original\n'
    finally:
        child.close()


async def test_the_async_listing_waits_without_blocking_the_event_loop(ws: Path) -> None:
    """While another process holds the store's lock, `list()` would block the thread it runs on (the event
    loop, called from async code); `list_async()` and `pruned_async()` wait in a worker thread: the loop
    keeps running, and they answer once the lock is free."""
    cp = Checkpoints[None](root=ws)
    await run_tools(agent_tools(ws, cp), [('write_file', {'path': 'a.txt', 'content': 'a\n'})])
    lock = ws / '.pydantic-ai-harness' / 'checkpoints' / 'lock'
    answers: list[Any] = []
    with open(lock, 'rb') as held:  # another open file: another process as far as flock goes
        fcntl.flock(held, fcntl.LOCK_EX)
        # Should the listing block the loop after all, the lock is let go of after 10 s (the test fails).
        safety = threading.Timer(10, fcntl.flock, (held, fcntl.LOCK_UN))
        safety.start()

        async def ask() -> None:
            answers.append(await cp.list_async())
            answers.append(await cp.pruned_async())

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                with anyio.fail_after(30):
                    while not _blocked_on(lock):  # the loop runs while the listing waits
                        await anyio.sleep(0.01)
                assert answers == []
                fcntl.flock(held, fcntl.LOCK_UN)
        finally:
            safety.cancel()
    assert summary(answers[0]) == [('cp-000001', 'write_file', ['a.txt'])] and answers[1] == []
    assert answers[0] == cp.list()


DYING_CHILD = """
import anyio, sys
from pathlib import Path
from pydantic_ai_harness_rs import Checkpoints
from tests.checkpoints.conftest import agent_tools
from tests.scripted import run_tools

ws = Path(sys.argv[1])
cp = Checkpoints(root=ws)
# The command kills this process (its parent) mid-call: after the snapshot, before the record.
command = 'echo dead >> a.txt && rm b.txt && mkdir d && echo x > d/x.txt && kill -9 $PPID'
calls = [('write_file', {'path': 'w.txt', 'content': 'w\\\\n'}), ('run_command', {'command': command})]
anyio.run(lambda: run_tools(agent_tools(ws, cp), calls))
"""


@pytest.mark.parametrize('open_before', [False, True], ids=['restart', 'open-elsewhere'])
async def test_a_command_whose_agent_process_was_killed_mid_command_is_recorded(ws: Path, open_before: bool) -> None:
    """The agent's process is SIGKILLed while its `run_command` runs (the command kills it): no record
    follows in that process, so what the command changed before was taken into the baseline by the next
    look. Its call's record on disk makes the next process on the store (opened after the kill, or open
    all along) record it as that call's checkpoint, which rewinds."""
    (ws / 'a.txt').write_text('one\n')
    (ws / 'b.txt').write_text('bee\n')
    before = tree(ws)
    cp = Checkpoints[None](root=ws) if open_before else None
    if cp is not None:
        assert cp.list() == []
    child = Child(ws, code=DYING_CHILD)
    assert child.process.wait(timeout=CHILD_SECONDS) == -9
    assert (ws / 'a.txt').read_text() == 'one\ndead\n' and (ws / 'd' / 'x.txt').exists()
    cp = cp or Checkpoints[None](root=ws)
    listed = await cp.list_async()
    assert summary(listed) == [
        ('cp-000001', 'write_file', ['w.txt']),
        ('cp-000002', 'run_command', ['a.txt', 'b.txt', 'd', 'd/x.txt']),
    ]
    assert listed[1]['tool_call_id'] == 'call-2' and listed[1]['run_id'] == listed[0]['run_id']
    assert not (ws / '.pydantic-ai-harness' / 'checkpoints' / 'calls').exists()
    # The next command's checkpoint is its own change only.
    await run_tools(agent_tools(ws, cp), [('run_command', {'command': 'echo after >> a.txt'})])
    assert summary(cp.list())[2] == ('cp-000003', 'run_command', ['a.txt'])
    result = await cp.rewind(to='cp-000002')
    assert (result['restored'], result['deleted'], result['removed_dirs'], result['failed']) == (
        ['a.txt', 'b.txt'],
        ['d/x.txt'],
        ['d'],
        [],
    )
    await cp.rewind(to='cp-000001')
    assert tree(ws) == before
