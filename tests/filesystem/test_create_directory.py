"""create_directory: parents, idempotence without events, collisions, cancel."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.scripted import RETRY, call, run_tools

pytestmark = pytest.mark.anyio


async def test_creates_parents_and_reports(fs: ModuleType, tree: Path) -> None:
    result, t = await call([fs.FileSystem(root_dir=tree)], 'create_directory', path='a/b/c')
    assert result == 'Created directory: a/b/c'
    assert (tree / 'a' / 'b' / 'c').is_dir()
    [request] = t.of(fs.FileChangeRequestEvent)
    assert (request.path, request.operation, request.diff, request.truncated) == ('a/b/c', 'create_directory', '', False)
    [created] = t.of(fs.DirectoryCreatedEvent)
    assert (created.path, created.kind) == ('a/b/c', 'file_system.directory_created')


async def test_existing_directory_changes_nothing_and_emits_nothing(fs: ModuleType, tree: Path) -> None:
    result, t = await call([fs.FileSystem(root_dir=tree)], 'create_directory', path='docs')
    assert (result, t.events) == ('Created directory: docs', [])


async def test_collisions(fs: ModuleType, tree: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=tree)],
        [('create_directory', {'path': 'README.md'}), ('create_directory', {'path': 'README.md/sub/x'})],
    )
    assert t.results == [
        RETRY + "Path 'README.md' exists and is not a directory.",
        RETRY + "Path 'README.md/sub/x' has a parent that is not a directory.",
    ]
    assert t.events == []


async def test_cancel(fs: ModuleType, tree: Path) -> None:
    async def veto(ctx: Any, event: Any) -> None:
        event.cancel('no dirs')

    t = await run_tools(
        [fs.FileSystem(root_dir=tree)],
        [('create_directory', {'path': 'new'})],
        listeners=[(fs.FileChangeRequestEvent, veto)],
    )
    assert t.results == ["['new' was not created: no dirs]"]
    assert not (tree / 'new').exists()


async def test_protected_directory(fs: ModuleType, tree: Path) -> None:
    result, _ = await call([fs.FileSystem(root_dir=tree)], 'create_directory', path='.git/hooks')
    assert result == RETRY + "Path '.git/hooks' is protected (matches '.git/*')."
    assert not (tree / '.git' / 'hooks').exists()


async def test_a_root_that_does_not_exist_yet_is_created(fs: ModuleType, tmp_path: Path) -> None:
    """`FileSystem(root_dir='new_dir')` before the directory exists: as 0.36.0, create_directory creates the root."""
    root = tmp_path / 'new_dir' / 'deeper'
    t = await run_tools(
        [fs.FileSystem(root_dir=root)],
        [
            ('write_file', {'path': 'a.txt', 'content': 'x'}),
            ('create_directory', {'path': 'd'}),
            ('write_file', {'path': 'd/a.txt', 'content': 'x'}),
        ],
    )
    assert t.results == [
        RETRY + "Parent directory '.' does not exist. Use create_directory first.",
        'Created directory: d',
        'Wrote 1 chars (1 lines) to d/a.txt. [hash:2d711642b726]',
    ]
    assert (root / 'd' / 'a.txt').read_text() == 'x'
    assert [e.path for e in t.of(fs.DirectoryCreatedEvent)] == ['d']


async def test_creating_a_root_that_does_not_exist_yet_by_its_own_name(fs: ModuleType, tmp_path: Path) -> None:
    root = tmp_path / 'new_dir'
    result, t = await call([fs.FileSystem(root_dir=root)], 'create_directory', path='.')
    assert result == 'Created directory: .'
    assert root.is_dir()
    assert [e.path for e in t.of(fs.DirectoryCreatedEvent)] == ['.']


async def test_a_root_below_a_file_is_a_retry(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'file').write_text('')
    result, _ = await call([fs.FileSystem(root_dir=tmp_path / 'file' / 'root')], 'create_directory', path='d')
    assert result == RETRY + "Path 'd' has a parent that is not a directory."
