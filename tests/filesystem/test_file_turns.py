"""Writes and edits of one file take turns (issue 9, section 2): parallel tool calls all land.

Pydantic AI runs the tool calls of one model response concurrently. Each test sends them in ONE
response (`tests/scripted.py`: a list of calls is one step) and a `FileChangeRequestEvent`
listener that yields to the event loop, so without the per-file turn the calls would plan
against the same content and the later commits would drop the earlier edits.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs.filesystem import (
    FileChangeRequestEvent,
    FileEditedEvent,
    FileSystem,
    FileWrittenEvent,
)
from pydantic_ai_harness_rs.filesystem._engine import LocalEngine
from pydantic_ai_harness_rs.filesystem._locks import FileTurns, file_turns
from pydantic_ai_harness_rs.filesystem._toolset import FileSystemToolset

from tests.filesystem.conftest import REFERENCE
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import Call, run_tools

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='0.36.0 has no per-file turns')]

LINES = ''.join(f'line {i}\n' for i in range(10))
EDITED = ''.join(f'LINE {i} edited\n' for i in range(10))
TEN_EDITS: list[Call] = [
    ('read_file', {'path': 'ten.txt'}),
    [
        ('edit_file', {'path': 'ten.txt', 'old_text': f'line {i}\n', 'new_text': f'LINE {i} edited\n'})
        for i in range(10)
    ],
]


def h(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()[:12]


async def yield_a_while(ctx: Any, event: Any) -> None:
    """A listener that takes its time: every other call gets the event loop meanwhile."""
    for _ in range(5):
        await anyio.sleep(0)


def assert_ten_edits_landed(results: list[str], edited: list[Any]) -> None:
    """Each edit ran against the result of the previous one, in call order (the turns are first come, first served)."""
    versions = [
        ''.join(EDITED.splitlines(keepends=True)[:n]) + ''.join(LINES.splitlines(keepends=True)[n:])
        for n in range(1, 11)
    ]
    assert versions[-1] == EDITED
    assert results[1:] == [f'Edited ten.txt. [hash:{h(v)}]' for v in versions]
    assert [e.content_hash for e in edited] == [h(v) for v in versions]


async def test_ten_parallel_edits_after_one_read_all_land(tmp_path: Path) -> None:
    (tmp_path / 'ten.txt').write_text(LINES)
    t = await run_tools([FileSystem(root_dir=tmp_path)], TEN_EDITS, listeners=[(FileChangeRequestEvent, yield_a_while)])
    assert (tmp_path / 'ten.txt').read_bytes() == EDITED.encode()
    assert_ten_edits_landed(t.results, t.of(FileEditedEvent))
    # The diffs are each one line: every edit was planned against the previous one's result.
    for event in t.of(FileEditedEvent):
        assert event.diff.count('\n-') == 1 and event.diff.count('\n+') == 2  # `+++` header and one line


async def test_ten_parallel_edits_on_a_local_workspace(tmp_path: Path) -> None:
    (tmp_path / 'ten.txt').write_text(LINES)
    t = await run_tools(
        [LocalWorkspace(tmp_path), FileSystem()], TEN_EDITS, listeners=[(FileChangeRequestEvent, yield_a_while)]
    )
    assert (tmp_path / 'ten.txt').read_bytes() == EDITED.encode()
    assert_ten_edits_landed(t.results, t.of(FileEditedEvent))


async def test_ten_parallel_edits_on_a_remote_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    backend = MemoryWorkspace({'ten.txt': LINES})
    t = await run_tools(
        [FileSystem()],
        TEN_EDITS,
        listeners=[(FileChangeRequestEvent, yield_a_while)],
        workspace=Workspace(backend),
    )
    assert backend.files['/ws/ten.txt'] == EDITED.encode()
    assert_ten_edits_landed(t.results, t.of(FileEditedEvent))


async def test_parallel_writes_run_in_call_order_and_cross_orders_do_not_deadlock(tmp_path: Path) -> None:
    def write(path: str, content: str) -> tuple[str, dict[str, Any]]:
        return ('write_file', {'path': path, 'content': content})

    t = await run_tools(
        [FileSystem(root_dir=tmp_path)],
        [[write('a.txt', 'a1\n'), write('b.txt', 'b1\n'), write('b.txt', 'b2\n'), write('a.txt', 'a2\n')]],
        listeners=[(FileChangeRequestEvent, yield_a_while)],
    )
    assert (tmp_path / 'a.txt').read_text() == 'a2\n'
    assert (tmp_path / 'b.txt').read_text() == 'b2\n'
    written = [(e.path, e.content_hash) for e in t.of(FileWrittenEvent)]
    assert sorted(written) == sorted(
        [('a.txt', h('a1\n')), ('a.txt', h('a2\n')), ('b.txt', h('b1\n')), ('b.txt', h('b2\n'))]
    )
    assert written.index(('a.txt', h('a1\n'))) < written.index(('a.txt', h('a2\n')))
    assert written.index(('b.txt', h('b1\n'))) < written.index(('b.txt', h('b2\n')))


async def test_reads_run_while_an_edit_waits_for_its_listener(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'ten.txt').write_text(LINES)
    announced, read_done = anyio.Event(), anyio.Event()
    original = LocalEngine.read_file

    async def read_after_the_announcement(self: LocalEngine, path: str, offset: int, limit: int | None) -> Any:
        await announced.wait()  # the edit holds its turn on ten.txt now
        try:
            return await original(self, path, offset, limit)
        finally:
            read_done.set()

    async def wait_for_the_read(ctx: Any, event: Any) -> None:
        announced.set()
        await read_done.wait()  # never set if the read had to wait for this edit's turn

    monkeypatch.setattr(LocalEngine, 'read_file', read_after_the_announcement)
    with anyio.fail_after(30):  # a hang guard, not a timing assertion
        t = await run_tools(
            [FileSystem(root_dir=tmp_path)],
            [
                [
                    ('edit_file', {'path': 'ten.txt', 'old_text': 'line 0\n', 'new_text': 'zero\n'}),
                    ('read_file', {'path': 'ten.txt'}),
                ]
            ],
            listeners=[(FileChangeRequestEvent, wait_for_the_read)],
        )
    assert t.results[0] == f'Edited ten.txt. [hash:{h(LINES.replace("line 0", "zero"))}]'
    assert t.results[1].startswith(f'[ten.txt | 10 lines | hash:{h(LINES)}]\n     1\tline 0\n')


async def test_no_turn_is_left_behind(tmp_path: Path) -> None:
    (tmp_path / 'ten.txt').write_text(LINES)
    built: list[Any] = []

    class KeptFileSystem(FileSystem[None]):
        def get_toolset(self) -> Any:
            built.append(super().get_toolset())
            return built[-1]

    async def veto_the_third(ctx: Any, event: Any) -> None:
        await anyio.sleep(0)
        if event.path == 'c.txt':
            event.cancel('no')

    t = await run_tools(
        [KeptFileSystem(root_dir=tmp_path)],
        [
            [
                ('edit_file', {'path': 'ten.txt', 'old_text': 'line 1\n', 'new_text': 'one\n'}),
                ('edit_file', {'path': 'ten.txt', 'old_text': 'missing', 'new_text': 'x'}),
                ('write_file', {'path': 'c.txt', 'content': 'c\n'}),
                ('write_file', {'path': '../outside.txt', 'content': 'x\n'}),
            ]
        ],
        listeners=[(FileChangeRequestEvent, veto_the_third)],
    )
    assert t.results[0].startswith('Edited ten.txt.')
    assert t.results[1] == 'RETRY: old_text not found in ten.txt. No changes were written.'
    assert t.results[2] == "['c.txt' was not written: no]"
    assert t.results[3].startswith('RETRY: ')
    [toolset] = built
    assert isinstance(toolset, FileSystemToolset)
    assert len(file_turns()) == 0


async def test_turns_are_per_engine_and_path_and_dropped_when_free() -> None:
    turns = FileTurns()
    order: list[str] = []
    engine_a, engine_b = object(), object()

    async def change(engine: object, path: str, name: str) -> None:
        async with turns.hold(engine, path):
            order.append(f'{name} start')
            await anyio.sleep(0)
            await anyio.sleep(0)
            order.append(f'{name} end')

    async with anyio.create_task_group() as tg:
        tg.start_soon(change, engine_a, '/f', 'first')
        tg.start_soon(change, engine_a, '/f', 'second')
        tg.start_soon(change, engine_b, '/f', 'other engine')
    assert order.index('first end') < order.index('second start')
    assert order.index('other engine start') < order.index('first end')
    assert len(turns) == 0
