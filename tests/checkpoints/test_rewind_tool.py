"""The opt-in `rewind` tool: the model undoes its own last steps or a file's last change, announced first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai_harness_rs import Checkpoints
from pydantic_ai_harness_rs.filesystem import FileChangeRequestEvent

from tests.checkpoints.conftest import agent_tools, tree
from tests.scripted import RETRY, run_tools

pytestmark = pytest.mark.anyio


def write(path: str, content: str) -> tuple[str, dict[str, str]]:
    return ('write_file', {'path': path, 'content': content})


async def test_the_tool_is_opt_in(ws: Path) -> None:
    t = await run_tools(agent_tools(ws, Checkpoints[None]()), [])
    assert 'rewind' not in [tool.name for tool in t.tools]
    t = await run_tools(agent_tools(ws, Checkpoints[None](tools=['rewind'])), [])
    [tool] = [tool for tool in t.tools if tool.name == 'rewind']
    assert set(tool.parameters_json_schema['properties']) == {'steps', 'path'}
    with pytest.raises(ValueError, match='Unknown checkpoint tools: undo'):
        Checkpoints[None](tools=['undo'])


async def test_rewind_the_last_two_steps_announces_each_file(ws: Path) -> None:
    (ws / 'a.txt').write_text('a\n')
    cp = Checkpoints[None](tools=['rewind'])
    t = await run_tools(
        agent_tools(ws, cp),
        [
            write('first.txt', '1\n'),
            ('run_command', {'command': 'echo changed > a.txt'}),
            write('second.txt', '2\n'),
            ('rewind', {'steps': 2}),
        ],
    )
    [first] = cp.list()  # the two rewound checkpoints are dropped
    assert t.results[3].startswith('Rewound 2 changes (')
    assert t.results[3].splitlines()[1:] == ['Restored: a.txt', 'Deleted: second.txt']
    assert tree(ws) == {'a.txt': ('file', b'a\n', 0o644), 'first.txt': ('file', b'1\n', 0o644)}
    assert first['paths'] == ['first.txt']
    requests = [(e.path, e.operation) for e in t.of(FileChangeRequestEvent)]
    assert requests[-2:] == [('a.txt', 'edit'), ('second.txt', 'delete')]
    assert t.of(FileChangeRequestEvent)[-1].root_dir == str(ws.resolve())


async def test_a_veto_vetoes_the_rewind(ws: Path) -> None:
    cp = Checkpoints[None](tools=['rewind'])

    async def veto(ctx: Any, event: FileChangeRequestEvent) -> None:
        if event.path == 'keep.txt' and event.operation == 'delete':
            event.cancel('keep.txt stays')

    t = await run_tools(
        agent_tools(ws, cp),
        [('run_command', {'command': 'echo 1 > keep.txt; echo 2 > other.txt'}), ('rewind', {})],
        listeners=[(FileChangeRequestEvent, veto)],
    )
    assert t.results[1] == "Nothing was rewound: ['keep.txt' was not deleted: keep.txt stays]"
    assert sorted(tree(ws)) == ['keep.txt', 'other.txt']
    assert len(cp.list()) == 1


async def test_rewind_one_file_s_last_change(ws: Path) -> None:
    cp = Checkpoints[None](tools=['rewind'])
    t = await run_tools(
        agent_tools(ws, cp),
        [
            ('run_command', {'command': 'echo 1 > a.txt; echo 1 > b.txt'}),
            ('run_command', {'command': 'echo 2 > a.txt; echo 2 > b.txt'}),
            ('rewind', {'path': 'a.txt'}),
            ('rewind', {'path': 'nothing.txt'}),
            ('rewind', {'steps': 0}),
        ],
    )
    assert t.results[2].splitlines()[1:] == ['Restored: a.txt']
    assert t.results[3] == "Nothing to rewind: no change of 'nothing.txt' by you is recorded."
    assert t.results[4] == RETRY + 'steps must be at least 1.'
    assert (ws / 'a.txt').read_text() == '1\n'
    assert (ws / 'b.txt').read_text() == '2\n'
    assert [c['paths'] for c in cp.list()] == [['a.txt', 'b.txt'], ['b.txt']]


async def test_a_person_s_change_during_the_announcement_is_a_retry(ws: Path) -> None:
    cp = Checkpoints[None](tools=['rewind'])

    async def person(ctx: Any, event: FileChangeRequestEvent) -> None:
        (ws / 'a.txt').write_text('a person wrote this\n')  # while the rewind is announced

    t = await run_tools(
        agent_tools(ws, cp),
        [('run_command', {'command': 'echo agent > a.txt'}), ('rewind', {})],
        listeners=[(FileChangeRequestEvent, person)],
    )
    assert t.results[1].startswith(RETRY) and 'a.txt' in t.results[1], t.results
    assert 'force' not in t.results[1] and t.results[1].endswith('leave them as they are, or ask the user.')
    assert str(ws) not in t.results[1]
    assert (ws / 'a.txt').read_text() == 'a person wrote this\n'
    assert len(cp.list()) == 1


async def test_a_removed_tree_is_announced_as_recreated(ws: Path) -> None:
    (ws / 'd').mkdir()
    (ws / 'd' / 'b.txt').write_text('b\n')
    (ws / 'a.txt').write_text('a\n')
    before = tree(ws)
    cp = Checkpoints[None](tools=['rewind'])
    t = await run_tools(
        agent_tools(ws, cp), [('run_command', {'command': 'rm -r d; rm a.txt; mkdir e; echo x > e/x'}), ('rewind', {})]
    )
    assert [(e.path, e.operation) for e in t.of(FileChangeRequestEvent)] == [
        ('a.txt', 'write'),
        ('d', 'create_directory'),
        ('d/b.txt', 'write'),
        ('e', 'delete'),
        ('e/x', 'delete'),
    ]
    assert t.results[1].splitlines()[1:] == ['Restored: a.txt, d, d/b.txt', 'Deleted: e/x', 'Removed directories: e']
    assert tree(ws) == before


async def test_the_tool_rewinds_only_its_own_conversation(ws: Path) -> None:
    cp = Checkpoints[None](tools=['rewind'])
    first = await run_tools(agent_tools(ws, cp), [write('a.txt', 'a\n')])
    await run_tools(agent_tools(ws, cp), [write('b.txt', 'b\n')])  # another conversation, same tool call id
    third = await run_tools(agent_tools(ws, cp), [('rewind', {})])  # same tool call id again, no history
    assert third.results == ['Nothing to rewind: no change by you is recorded.']
    again = await run_tools(agent_tools(ws, cp), [('rewind', {'steps': 5})], message_history=first.messages)
    assert again.results[0].splitlines()[1:] == ['Deleted: a.txt']
    assert tree(ws) == {'b.txt': ('file', b'b\n', 0o644)}
    assert [c['paths'] for c in cp.list()] == [['b.txt']]


async def test_the_tool_leaves_a_file_another_conversation_changed_later(ws: Path) -> None:
    cp = Checkpoints[None](tools=['rewind'])
    first = await run_tools(agent_tools(ws, cp), [write('a.txt', 'a\n'), write('c.txt', 'c\n')])
    await run_tools(agent_tools(ws, cp), [('run_command', {'command': 'echo other >> a.txt'})])
    again = await run_tools(agent_tools(ws, cp), [('rewind', {'steps': 2})], message_history=first.messages)
    assert again.results == [
        RETRY + 'Cannot rewind: a.txt changed again after your change, by another conversation or a person; '
        'rewinding would undo their work too. Leave these files as they are, or ask the user.'
    ]
    assert tree(ws) == {'a.txt': ('file', b'a\nother\n', 0o644), 'c.txt': ('file', b'c\n', 0o644)}
    assert len(cp.list()) == 3
    again = await run_tools(agent_tools(ws, cp), [('rewind', {'path': 'c.txt'})], message_history=first.messages)
    assert again.results[0].splitlines()[1:] == ['Deleted: c.txt']


async def test_the_tool_says_a_pruned_change_cannot_be_rewound(ws: Path) -> None:
    (ws / 'a.txt').write_bytes(b'A' * 900)
    cp = Checkpoints[None](tools=['rewind'], budget_bytes=500)
    t = await run_tools(agent_tools(ws, cp), [('run_command', {'command': 'echo small > a.txt'}), ('rewind', {})])
    assert cp.list() == [] and len(cp.pruned()) == 1
    assert t.results[1] == (
        'Nothing to rewind: no change by you is recorded. Older changes were pruned to keep the checkpoint store '
        'within its size budget: a pruned change cannot be rewound.'
    )
