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
