"""apply_patch on names that share a file and on a tree changed between the plan and the commit.

Hard links of one file in one patch change one content; a symbolic link is not its target
(`Delete File` and `Move to` of a link are refused); an OS error of the commit (a listener of
`FileChangeRequestEvent` changes the tree after the plan) is a retry naming the operation and the
file, with the tree left whole-old.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai_harness_rs.filesystem import FileChangeRequestEvent, FileSystem

from tests.filesystem.conftest import beyond_reference, sha
from tests.filesystem.test_apply_patch import apply, patch, snapshot
from tests.scripted import RETRY, run_tools

pytestmark = beyond_reference('0.36.0 has no apply_patch')

TOOLS = ['read_file', 'apply_patch']


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / 'root'
    root.mkdir()
    (root / 'a.txt').write_text('one\ntwo\nthree\n')
    return root


async def test_two_hard_links_in_one_patch_change_one_content(root: Path) -> None:
    os.link(root / 'a.txt', root / 'hl.txt')
    text = patch('*** Update File: a.txt', '@@', '-one', '+ONE', '*** Update File: hl.txt', '@@', '-three', '+THREE')
    result, _ = await apply(root, text)
    h = sha(b'ONE\ntwo\nTHREE\n')
    assert result == f'Applied patch to 2 files:\nM a.txt [hash:{h}]\nM hl.txt [hash:{h}]'
    assert snapshot(root) == {'a.txt': b'ONE\ntwo\nTHREE\n', 'hl.txt': b'ONE\ntwo\nTHREE\n'}
    assert os.stat(root / 'a.txt').st_ino == os.stat(root / 'hl.txt').st_ino


async def test_a_move_of_a_hard_linked_file_leaves_its_other_name_as_it_was(root: Path) -> None:
    os.link(root / 'a.txt', root / 'hl.txt')
    result, _ = await apply(root, patch('*** Update File: a.txt', '*** Move to: m.txt', '@@', '-one', '+ONE'))
    h = sha(b'ONE\ntwo\nthree\n')
    assert result == f'Applied patch to 1 file:\nR a.txt -> m.txt [hash:{h}]'
    assert snapshot(root) == {'hl.txt': b'one\ntwo\nthree\n', 'm.txt': b'ONE\ntwo\nthree\n'}


@pytest.mark.parametrize(
    ('text', 'message'),
    [
        (
            patch('*** Delete File: sl.txt'),
            "Delete File 'sl.txt' (patch line 2): 'sl.txt' is a symbolic link (to 'a.txt'); Delete File removes "
            "regular files only: Delete File 'a.txt' to delete the file, or remove the link another way. "
            'No changes were written.',
        ),
        (
            patch('*** Update File: sl.txt', '*** Move to: m.txt', '@@', '-one', '+ONE'),
            "Update File 'sl.txt' (patch line 2): 'sl.txt' is a symbolic link (to 'a.txt'); Move to moves regular "
            "files only: move 'a.txt' instead. No changes were written.",
        ),
    ],
)
async def test_a_symbolic_link_is_not_deleted_or_moved_through(root: Path, text: str, message: str) -> None:
    os.symlink('a.txt', root / 'sl.txt')
    result, _ = await apply(root, text)
    assert result == RETRY + message
    assert (root / 'a.txt').read_bytes() == b'one\ntwo\nthree\n'
    assert os.readlink(root / 'sl.txt') == 'a.txt'


async def test_an_update_through_a_link_then_a_delete_of_its_target_names_the_target(root: Path) -> None:
    os.symlink('a.txt', root / 'sl.txt')
    result, _ = await apply(root, patch('*** Update File: sl.txt', '@@', '-one', '+ONE', '*** Delete File: a.txt'))
    assert result == 'Applied patch to 1 file:\nD a.txt'
    assert not (root / 'a.txt').exists() and os.readlink(root / 'sl.txt') == 'a.txt'


def _blocker(root: Path) -> None:
    (root / 'n').write_text('blocker')


def _dir_at_target(root: Path) -> None:
    (root / 'n' / 'n.txt').mkdir(parents=True)


def _deleted(root: Path) -> None:
    (root / 'b.txt').unlink()


def _made_a_dir(root: Path) -> None:
    (root / 'c.txt').unlink()
    (root / 'c.txt').mkdir()


def _a_loop(root: Path) -> None:
    (root / 'c.txt').unlink()
    os.symlink('c.txt', root / 'c.txt')


WHY = 'so the patch could not be written. Check it (list_files, read_file) and send the patch again. No changes were written.'


@pytest.mark.parametrize(
    ('meddle', 'message', 'left'),
    [
        (
            _blocker,
            f"Add File 'n/n.txt' (patch line 7): the path changed since the patch was planned (File exists), {WHY}",
            {'n': b'blocker'},
        ),
        (
            _dir_at_target,
            f"Add File 'n/n.txt' (patch line 7): the path changed since the patch was planned (Is a directory), {WHY}",
            {'n': None, 'n/n.txt': None},
        ),
        (
            _deleted,
            f"Delete File 'b.txt' (patch line 6): the path changed since the patch was planned (No such file or directory), {WHY}",
            {'b.txt': 'gone'},
        ),
        (
            _made_a_dir,
            f"Update File 'c.txt' (patch line 9): the path changed since the patch was planned (Is a directory), {WHY}",
            {'c.txt': None},
        ),
        (
            _a_loop,
            "Update File 'c.txt' (patch line 9): the path changed since the patch was planned: Path 'c.txt' resolves through a symlink "
            'loop. No changes were written.',
            {'c.txt': 'loop'},
        ),
    ],
    ids=['EEXIST', 'EISDIR-add', 'ENOENT', 'EISDIR', 'ELOOP'],
)
async def test_a_tree_changed_after_the_plan_is_a_retry_and_writes_nothing(
    tmp_path: Path, meddle: Callable[[Path], None], message: str, left: dict[str, Any]
) -> None:
    root = tmp_path / 'root'
    root.mkdir()
    for name in 'abc':
        (root / f'{name}.txt').write_text(f'{name}\n')
    text = patch(
        '*** Update File: a.txt',
        '@@',
        '-a',
        '+A',
        '*** Delete File: b.txt',
        '*** Add File: n/n.txt',
        '+n',
        '*** Update File: c.txt',
        '@@',
        '-c',
        '+C',
    )
    asked: list[str] = []

    def listener(ctx: Any, event: FileChangeRequestEvent) -> None:
        asked.append(event.path)
        if len(asked) == 4:
            meddle(root)

    t = await run_tools(
        [FileSystem(root_dir=root, tools=TOOLS)],
        [('apply_patch', {'input': text})],
        listeners=[(FileChangeRequestEvent, listener)],
    )
    assert t.results == [RETRY + message]
    want: dict[str, Any] = {'a.txt': b'a\n', 'b.txt': b'b\n', 'c.txt': b'c\n'}
    want.update(left)
    want = {k: v for k, v in want.items() if v != 'gone'}
    got = {
        str(p.relative_to(root)): 'loop' if p.is_symlink() else None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob('*'))
        if '.pydantic-ai-harness' not in p.parts
    }
    assert got == want
