"""A file tool's checkpoint is taken in its commit's native call, from the bytes the tool holds
(`CheckpointStore.commit`): the old bytes of an edit are not read again, the new ones reach the
store from a writer thread. What a user sees must not change: diffs exact over a chain of edits, a
person's change after an agent's edit still a conflict, a process killed right after a call leaves
a store that opens and rewinds."""

from __future__ import annotations

import gc
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pydantic_ai_harness_rs
import pytest
from pydantic_ai_harness_rs import Checkpoints
from pydantic_ai_harness_rs.checkpoints import CheckpointError

from tests.checkpoints.conftest import agent_tools, tree
from tests.scripted import run_tools

pytestmark = pytest.mark.anyio


def edit(old: str, new: str) -> tuple[str, dict[str, str]]:
    return ('edit_file', {'path': 'a.txt', 'old_text': old, 'new_text': new})


async def test_diffs_are_exact_over_a_chain_of_edits(ws: Path) -> None:
    (ws / 'a.txt').write_text('one\nline\n')
    before = tree(ws)
    cp = Checkpoints[None]()
    t = await run_tools(
        agent_tools(ws, cp),
        [('read_file', {'path': 'a.txt'}), edit('one', 'two'), edit('two', 'three'), edit('three', 'one')],
    )
    assert [r.split(' [')[0] for r in t.results[1:]] == ['Edited a.txt.'] * 3, t.results
    first, second, third = cp.list()
    assert [await cp.diff(c['id']) for c in (first, second, third)] == [
        [('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-one\n+two\n line')],
        [('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-two\n+three\n line')],
        [('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-three\n+one\n line')],
    ]
    assert [c['bytes_kept'] for c in (first, second, third)] == [9, 9, 11]
    # Back to the state before the second edit, then before the first.
    assert (await cp.rewind(to=third['id']))['restored'] == ['a.txt']
    assert (ws / 'a.txt').read_text() == 'three\nline\n'
    await cp.rewind(to=second['id'])
    assert (ws / 'a.txt').read_text() == 'two\nline\n'
    await cp.rewind(to=first['id'])
    assert tree(ws) == before


async def test_a_persons_change_right_after_an_agent_edit_is_a_conflict(ws: Path) -> None:
    (ws / 'a.txt').write_text('one\n')
    cp = Checkpoints[None]()
    await run_tools(agent_tools(ws, cp), [('read_file', {'path': 'a.txt'}), edit('one', 'two')])
    (ws / 'a.txt').write_text('tw0\n')  # same size, within the same clock tick as the edit
    [checkpoint] = cp.list()
    with pytest.raises(CheckpointError, match='someone else: a[.]txt'):
        await cp.rewind(to=checkpoint['id'])
    assert (ws / 'a.txt').read_text() == 'tw0\n'
    await cp.rewind(to=checkpoint['id'], force=True)
    assert (ws / 'a.txt').read_text() == 'one\n'


async def test_an_edit_of_what_a_person_changed_keeps_the_persons_bytes(ws: Path) -> None:
    (ws / 'a.txt').write_text('one\n')
    cp = Checkpoints[None]()
    tools = agent_tools(ws, cp)
    await run_tools(tools, [('read_file', {'path': 'a.txt'}), edit('one', 'two')])
    (ws / 'a.txt').write_text('two\nperson\n')
    await run_tools(tools, [('read_file', {'path': 'a.txt'}), edit('person', 'agent')])
    first, second = cp.list()
    assert await cp.diff(second['id']) == [
        ('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n two\n-person\n+agent')
    ]
    with pytest.raises(CheckpointError, match='someone else: a[.]txt'):
        await cp.rewind(to=first['id'])  # the person's change sits between the two
    await cp.rewind(to=second['id'])
    assert (ws / 'a.txt').read_text() == 'two\nperson\n'


KILLED = """
import os, signal, sys
import anyio
from pydantic_ai_harness_rs import Checkpoints, FileSystem
from scripted import run_tools

async def main() -> None:
    tools = [FileSystem(root_dir=sys.argv[1], tools=['read_file', 'edit_file']), Checkpoints[None]()]
    t = await run_tools(tools, [
        ('read_file', {'path': 'a.txt'}),
        ('edit_file', {'path': 'a.txt', 'old_text': 'two', 'new_text': 'three'}),
    ])
    assert t.results[1].startswith('Edited'), t.results
    os.kill(os.getpid(), signal.SIGKILL)  # the store's writer thread may not be done

anyio.run(main)
"""


async def test_a_kill_right_after_an_edit_leaves_a_store_that_rewinds(ws: Path, tmp_path: Path) -> None:
    (ws / 'a.txt').write_text('one\n' + 'x' * 100_000)
    cp = Checkpoints[None]()
    await run_tools(agent_tools(ws, cp), [('read_file', {'path': 'a.txt'}), edit('one', 'two')])
    [first] = cp.list()
    del cp
    gc.collect()  # this process's store is closed (its writer done): the child is the store's only user
    # The child imports the package this test imports and a copy of `tests/scripted.py`, nothing of
    # `tests/` (its `typing/` folder would shadow the module).
    helpers = tmp_path / 'helpers'
    helpers.mkdir()
    shutil.copy(Path(__file__).resolve().parent.parent / 'scripted.py', helpers / 'scripted.py')
    package_dir = str(Path(pydantic_ai_harness_rs.__file__).resolve().parent.parent)
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([package_dir, str(helpers)])}
    process = subprocess.run(
        [sys.executable, '-c', KILLED, str(ws)], env=env, cwd=tmp_path, capture_output=True, timeout=120
    )
    assert process.returncode == -signal.SIGKILL, process.stderr.decode()
    assert (ws / 'a.txt').read_text().startswith('three\n')
    # The store opens; the killed call's checkpoint is there (its old bytes kept) or lost as a whole.
    again = Checkpoints[None](root=ws)
    listed = again.list()
    assert listed[0] == first
    if len(listed) == 2:
        await again.rewind(to=listed[1]['id'])
        assert (ws / 'a.txt').read_text().startswith('two\n')
    else:
        # Lost: the file changed since the last checkpoint, by someone the store cannot name.
        with pytest.raises(CheckpointError, match='someone else: a[.]txt'):
            await again.rewind(to=first['id'])
    await again.rewind(to=first['id'], force=True)
    assert (ws / 'a.txt').read_text() == 'one\n' + 'x' * 100_000
