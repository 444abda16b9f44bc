"""Rewinds of hard-linked files (every link sees the old bytes) and of a file a person changed
between two of the agent's changes (a conflict)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai_harness_rs import Checkpoints
from pydantic_ai_harness_rs.checkpoints import CheckpointError

from tests.checkpoints.conftest import agent_tools
from tests.scripted import run_tools

pytestmark = pytest.mark.anyio


def linked(ws: Path) -> int:
    (ws / 'h1').write_bytes(b'hard\n')
    (ws / 'h2').hardlink_to(ws / 'h1')
    return (ws / 'h1').stat().st_ino


@pytest.mark.parametrize(
    'call',
    [('write_file', {'path': 'h1', 'content': 'agent\n'}), ('run_command', {'command': 'echo agent >> h1'})],
    ids=['write_file', 'shell_append'],
)
async def test_a_hard_linked_file_is_rewound_in_place(ws: Path, call: tuple[str, dict[str, str]]) -> None:
    inode = linked(ws)
    cp = Checkpoints[None]()
    await run_tools(agent_tools(ws, cp), [('read_file', {'path': 'h1'}), call])
    assert (ws / 'h2').read_bytes() != b'hard\n'  # the tool changed both names
    [checkpoint] = cp.list()
    result = await cp.rewind(to=checkpoint['id'])
    assert result['restored'] == checkpoint['paths']
    for name in ('h1', 'h2'):
        st = (ws / name).stat()
        assert (st.st_ino, st.st_nlink) == (inode, 2)
        assert (ws / name).read_bytes() == b'hard\n'


async def test_a_persons_change_between_two_agent_changes_is_a_conflict(ws: Path) -> None:
    (ws / 'a').write_text('one\n')
    cp = Checkpoints[None]()
    tools = agent_tools(ws, cp)
    await run_tools(tools, [('read_file', {'path': 'a'}), ('write_file', {'path': 'a', 'content': 'agent\n'})])
    with (ws / 'a').open('a') as f:
        f.write('a person typed this\n')
    await run_tools(tools, [('run_command', {'command': 'echo again >> a'})])
    first, second = cp.list()
    with pytest.raises(CheckpointError, match='someone else: a[.]'):
        await cp.rewind(to=first['id'])
    assert (ws / 'a').read_text() == 'agent\na person typed this\nagain\n'
    assert cp.list() == [first, second]
    # The last change alone is the agent's own: no conflict.
    assert (await cp.rewind(to=second['id']))['restored'] == ['a']
    assert (ws / 'a').read_text() == 'agent\na person typed this\n'
