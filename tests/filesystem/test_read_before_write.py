"""`ReadBeforeWrite` (issue 9, section 1): no write or edit of a file the run has not seen as it is.

Each test runs a real `Agent` with a scripted model (`tests/scripted.py`) and asserts what the
model received and the bytes on disk (or in the workspace).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs import FileSystem, ReadBeforeWrite
from pydantic_ai_harness_rs.filesystem import FileChangeRequestEvent, FileReadEvent

from tests.filesystem.conftest import REFERENCE
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import RETRY, Call, run_agent, run_tools

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='ReadBeforeWrite is ours (issue 9)')]


def h(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()[:12]


def wrote(path: str, content: str) -> str:
    lines = len(content.splitlines())
    return f'Wrote {len(content)} chars ({lines} lines) to {path}. [hash:{h(content)}]'


def edited(path: str, content: str) -> str:
    return f'Edited {path}. [hash:{h(content)}]'


def read_first(path: str) -> str:
    return (
        f'{RETRY}{path!r} exists and has not been read in this run: read it first (read_file), then retry. '
        'No changes were written.'
    )


def read_again(path: str) -> str:
    return (
        f'{RETRY}{path!r} has changed since this run last read it: read it again (read_file), then retry. '
        'No changes were written.'
    )


def on_read(act: Callable[[int], object]) -> tuple[tuple[type, Any], list[int]]:
    """A FileReadEvent listener that calls `act(n)` at the run's n-th read, and the list of the reads it heard."""
    heard: list[int] = []

    async def listener(ctx: Any, event: FileReadEvent) -> None:
        heard.append(len(heard) + 1)
        act(len(heard))

    return (FileReadEvent, listener), heard


def write(path: str, content: str, **extra: Any) -> Call:
    return ('write_file', {'path': path, 'content': content, **extra})


def edit(path: str, old: str, new: str) -> Call:
    return ('edit_file', {'path': path, 'old_text': old, 'new_text': new})


def read(path: str) -> Call:
    return ('read_file', {'path': path})


def guarded(root: Path) -> list[Any]:
    return [FileSystem(root_dir=root), ReadBeforeWrite()]


async def test_a_blind_overwrite_or_edit_is_refused_and_the_file_untouched(tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('old\n')
    t = await run_tools(guarded(tmp_path), [write('a.txt', 'new\n'), edit('a.txt', 'old', 'new')])
    assert t.results == [read_first('a.txt'), read_first('a.txt')]
    assert (tmp_path / 'a.txt').read_text() == 'old\n'


async def test_without_it_a_blind_overwrite_is_allowed_as_documented(tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('old\n')
    t = await run_tools([FileSystem(root_dir=tmp_path)], [write('a.txt', 'new\n')])
    assert t.results == [wrote('a.txt', 'new\n')]


async def test_read_then_write_then_edit_the_own_write_counts_as_a_read(tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('old\n')
    t = await run_tools(
        guarded(tmp_path), [read('a.txt'), write('a.txt', 'one\n'), edit('a.txt', 'one', 'two'), write('a.txt', 'x')]
    )
    assert t.results[1:] == [
        wrote('a.txt', 'one\n'),
        edited('a.txt', 'two\n'),
        wrote('a.txt', 'x'),
    ]
    assert (tmp_path / 'a.txt').read_text() == 'x'


async def test_a_partial_read_counts_the_hash_is_the_whole_files(tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text(''.join(f'{i}\n' for i in range(100)))
    t = await run_tools(
        guarded(tmp_path),
        [('read_file', {'path': 'a.txt', 'offset': 50, 'limit': 2}), edit('a.txt', '\n99\n', '\nend\n')],
    )
    assert not t.results[1].startswith(RETRY)


async def test_file_info_with_its_hash_counts_as_a_read_a_binary_files_does_not(tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('old\n')
    (tmp_path / 'b.bin').write_bytes(b'\0\1\2')
    t = await run_tools(
        guarded(tmp_path),
        [
            ('file_info', {'path': 'a.txt'}),
            write('a.txt', 'new\n'),
            ('file_info', {'path': 'b.bin'}),
            write('b.bin', 'x'),
        ],
    )
    assert t.results[1] == wrote('a.txt', 'new\n')
    assert t.results[3] == read_first('b.bin')
    assert (tmp_path / 'b.bin').read_bytes() == b'\0\1\2'


async def test_a_file_changed_since_it_was_read_must_be_read_again(tmp_path: Path) -> None:
    target = tmp_path / 'a.txt'
    target.write_text('old\n')
    # After the run's first read, another writer changes the file.
    someone_else_writes, _ = on_read(lambda n: target.write_text('theirs\n') if n == 1 else None)
    t = await run_tools(
        guarded(tmp_path),
        [
            read('a.txt'),
            write('a.txt', 'mine\n'),
            edit('a.txt', 'theirs', 'mine'),
            read('a.txt'),
            edit('a.txt', 'theirs', 'mine'),
        ],
        listeners=[someone_else_writes],
    )
    assert t.results[1:3] == [read_again('a.txt'), read_again('a.txt')]
    assert t.results[4] == edited('a.txt', 'mine\n')
    assert target.read_text() == 'mine\n'


async def test_a_change_made_while_the_write_is_announced_is_caught_at_the_replace(tmp_path: Path) -> None:
    """The version check runs in the core, under the file's descriptor, after the listeners answered."""
    target = tmp_path / 'a.txt'
    target.write_text('old\n')

    async def someone_else_writes(ctx: Any, event: FileChangeRequestEvent) -> None:
        target.write_text('theirs\n')

    t = await run_tools(
        guarded(tmp_path),
        [read('a.txt'), write('a.txt', 'mine\n')],
        listeners=[(FileChangeRequestEvent, someone_else_writes)],
    )
    assert t.results[1] == read_again('a.txt')
    assert target.read_text() == 'theirs\n'


async def test_an_edit_of_a_file_changed_while_announced_is_refused(tmp_path: Path) -> None:
    """Checked right before the replace: with `ReadBeforeWrite` as a read-again retry, without it as
    the documented conflict; either way the other writer's content stays."""
    target = tmp_path / 'a.txt'

    async def someone_else_writes(ctx: Any, event: FileChangeRequestEvent) -> None:
        target.write_text('theirs old\n')

    target.write_text('old\n')
    t = await run_tools(
        guarded(tmp_path),
        [read('a.txt'), edit('a.txt', 'old', 'new')],
        listeners=[(FileChangeRequestEvent, someone_else_writes)],
    )
    assert t.results[1] == read_again('a.txt')
    assert target.read_text() == 'theirs old\n'
    target.write_text('old\n')
    t = await run_tools(
        [FileSystem(root_dir=tmp_path)],
        [edit('a.txt', 'old', 'new')],
        listeners=[(FileChangeRequestEvent, someone_else_writes)],
    )
    ours, theirs = h('old\n'), h('theirs old\n')
    assert t.results == [
        f"{RETRY}Conflict: file 'a.txt' has changed (expected hash:{ours}, got hash:{theirs}). Re-read the file and retry."
    ]
    assert target.read_text() == 'theirs old\n'


async def test_a_new_path_is_created_create_only(tmp_path: Path) -> None:
    async def appears(ctx: Any, event: FileChangeRequestEvent) -> None:
        if event.path == 'race.txt':
            (tmp_path / 'race.txt').write_text('theirs\n')

    t = await run_tools(
        guarded(tmp_path),
        [write('new.txt', 'mine\n'), write('race.txt', 'mine\n')],
        listeners=[(FileChangeRequestEvent, appears)],
    )
    assert t.results == [wrote('new.txt', 'mine\n'), read_first('race.txt')]
    assert (tmp_path / 'new.txt').read_text() == 'mine\n'
    assert (tmp_path / 'race.txt').read_text() == 'theirs\n'


async def test_a_read_that_found_nothing_records_the_absence(tmp_path: Path) -> None:
    """Read while present, deleted, read again (nothing there): creating it again is allowed."""
    target = tmp_path / 'a.txt'
    target.write_text('old\n')
    deleted, reads = on_read(lambda n: target.unlink())
    t = await run_tools(guarded(tmp_path), [read('a.txt'), read('a.txt'), write('a.txt', 'new\n')], listeners=[deleted])
    assert t.results[1] == f'{RETRY}File not found: a.txt'
    assert t.results[2] == wrote('a.txt', 'new\n')
    assert len(reads) == 1


async def test_the_models_expected_hash_must_be_the_version_last_seen(tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('old\n')
    t = await run_tools(guarded(tmp_path), [read('a.txt'), write('a.txt', 'x', expected_hash='0123456789ab')])
    assert t.results[1] == read_again('a.txt')
    t = await run_tools(guarded(tmp_path), [write('a.txt', 'x', expected_hash=h('old\n'))])
    assert (
        t.results[0]
        == f"{RETRY}'a.txt' has not been read in this run: read it first (read_file), then retry. No changes were written."
    )
    assert (tmp_path / 'a.txt').read_text() == 'old\n'


async def test_state_belongs_to_one_run(tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('old\n')
    agent: Agent[Any, Any] = Agent(capabilities=guarded(tmp_path), retries=1000)
    first = await run_agent(agent, [read('a.txt'), write('a.txt', 'one\n')])
    assert first.results[1] == wrote('a.txt', 'one\n')
    second = await run_agent(agent, [write('a.txt', 'two\n')])
    assert second.results == [read_first('a.txt')]
    assert (tmp_path / 'a.txt').read_text() == 'one\n'


async def test_parallel_edits_after_one_read_all_land(tmp_path: Path) -> None:
    lines = ''.join(f'line {i}\n' for i in range(10))
    (tmp_path / 'ten.txt').write_text(lines)
    calls: list[Call] = [read('ten.txt'), [edit('ten.txt', f'line {i}\n', f'LINE {i}\n') for i in range(10)]]
    t = await run_tools(guarded(tmp_path), calls)
    assert not any(r.startswith(RETRY) for r in t.results)
    assert (tmp_path / 'ten.txt').read_text() == ''.join(f'LINE {i}\n' for i in range(10))


async def test_parallel_blind_writes_are_all_refused(tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('old\n')
    t = await run_tools(guarded(tmp_path), [[write('a.txt', f'{i}\n') for i in range(5)]])
    assert t.results == [read_first('a.txt')] * 5
    assert (tmp_path / 'a.txt').read_text() == 'old\n'


async def test_on_a_local_workspace(tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('old\n')
    caps = [LocalWorkspace(tmp_path), FileSystem(), ReadBeforeWrite()]
    t = await run_tools(
        caps,
        [write('a.txt', 'new\n'), read('a.txt'), write('a.txt', 'new\n'), read('gone.txt'), write('gone.txt', 'g')],
    )
    assert t.results[0] == read_first('a.txt')
    assert not t.results[2].startswith(RETRY) and not t.results[4].startswith(RETRY)
    assert (tmp_path / 'a.txt').read_text() == 'new\n'
    assert (tmp_path / 'gone.txt').read_text() == 'g'


async def test_on_a_remote_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    backend = MemoryWorkspace({'a.txt': 'old\n', 'b.txt': 'b\n'})
    t = await run_tools(
        [FileSystem(), ReadBeforeWrite()],
        [
            edit('a.txt', 'old', 'new'),
            ('file_info', {'path': 'a.txt'}),
            edit('a.txt', 'old', 'new'),
            write('b.txt', 'x'),
            write('c.txt', 'c'),
        ],
        workspace=Workspace(backend),
    )
    assert t.results[0] == read_first('a.txt')
    assert t.results[3] == read_first('b.txt')
    assert not t.results[2].startswith(RETRY) and not t.results[4].startswith(RETRY)
    assert backend.files['/ws/a.txt'] == b'new\n'
    assert backend.files['/ws/b.txt'] == b'b\n'
    assert backend.files['/ws/c.txt'] == b'c'
