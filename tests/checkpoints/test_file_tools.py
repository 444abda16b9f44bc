"""Each FileSystem change tool's change undone exactly: bytes, mode, existence."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs import Checkpoints, FileSystem

from tests.checkpoints.conftest import agent_tools, tree
from tests.scripted import run_tools

pytestmark = pytest.mark.anyio


async def test_write_file_over_an_existing_file_is_undone(ws: Path) -> None:
    (ws / 'a.txt').write_text('one\n')
    (ws / 'a.txt').chmod(0o640)
    before = tree(ws)
    cp = Checkpoints()
    t = await run_tools(
        agent_tools(ws, cp), [('read_file', {'path': 'a.txt'}), ('write_file', {'path': 'a.txt', 'content': 'two\n'})]
    )
    assert t.results[1].startswith('Wrote 4 chars')
    [checkpoint] = cp.list()
    assert checkpoint['paths'] == ['a.txt']
    assert checkpoint['tool_name'] == 'write_file'
    assert checkpoint['tool_call_id'] == 'call-2'
    result = await cp.rewind(to=checkpoint['id'])
    assert result['restored'] == ['a.txt']
    assert tree(ws) == before
    assert cp.list() == []


async def test_create_directory_and_a_new_file_in_it_are_undone(ws: Path) -> None:
    cp = Checkpoints()
    t = await run_tools(
        agent_tools(ws, cp),
        [('create_directory', {'path': 'new/deep'}), ('write_file', {'path': 'new/deep/f.txt', 'content': 'x'})],
    )
    assert t.results == [
        'Created directory: new/deep',
        'Wrote 1 chars (1 lines) to new/deep/f.txt. [hash:2d711642b726]',
    ]
    made, wrote = cp.list()
    assert (made['tool_name'], made['paths']) == ('create_directory', ['new', 'new/deep'])
    assert (wrote['tool_name'], wrote['paths']) == ('write_file', ['new/deep/f.txt'])
    result = await cp.rewind(to=wrote['id'])
    assert (result['restored'], result['deleted'], result['removed_dirs']) == ([], ['new/deep/f.txt'], [])
    assert tree(ws) == {'new': ('dir', None, 0o755), 'new/deep': ('dir', None, 0o755)}
    result = await cp.rewind(to=made['id'])
    assert (result['restored'], result['deleted'], result['removed_dirs']) == ([], [], ['new', 'new/deep'])
    assert tree(ws) == {}
    assert cp.list() == []


async def test_edit_file_keeps_mode_and_bytes(ws: Path) -> None:
    (ws / 'run.sh').write_bytes(b'#!/bin/sh\r\necho old\r\n')
    (ws / 'run.sh').chmod(0o751)
    before = tree(ws)
    cp = Checkpoints()
    t = await run_tools(
        agent_tools(ws, cp),
        [('read_file', {'path': 'run.sh'}), ('edit_file', {'path': 'run.sh', 'old_text': 'old', 'new_text': 'new'})],
    )
    assert t.results[1].startswith('Edited run.sh.'), t.results
    assert (ws / 'run.sh').read_bytes() == b'#!/bin/sh\r\necho new\r\n'
    [checkpoint] = cp.list()
    assert await cp.diff(checkpoint['id']) == [
        (
            'run.sh',
            '--- a/run.sh\n+++ b/run.sh\n@@ -1,2 +1,2 @@\n #!/bin/sh\r\n-echo old\r\n+echo new\r',
        )
    ]
    await cp.rewind(to=checkpoint['id'])
    assert tree(ws) == before


async def test_apply_patch_with_a_move_a_delete_and_an_add_is_undone(ws: Path) -> None:
    (ws / 'keep.txt').write_text('a\nb\n')
    (ws / 'gone.txt').write_text('bye\n')
    (ws / 'old.txt').write_text('moved\n')
    (ws / 'old.txt').chmod(0o600)
    before = tree(ws)
    patch = '\n'.join(
        [
            '*** Begin Patch',
            '*** Update File: keep.txt',
            '@@',
            ' a',
            '-b',
            '+c',
            '*** Delete File: gone.txt',
            '*** Add File: sub/new.txt',
            '+hello',
            '*** Update File: old.txt',
            '*** Move to: moved/there.txt',
            '@@',
            '-moved',
            '+moved!',
            '*** End Patch',
        ]
    )
    cp = Checkpoints()
    t = await run_tools(agent_tools(ws, cp, patch=True), [('apply_patch', {'input': patch})])
    assert t.results[0].startswith('Done!') or 'keep.txt' in t.results[0], t.results
    [checkpoint] = cp.list()
    assert checkpoint['tool_name'] == 'apply_patch'
    assert checkpoint['paths'] == ['gone.txt', 'keep.txt', 'moved', 'moved/there.txt', 'old.txt', 'sub', 'sub/new.txt']
    await cp.rewind(to=checkpoint['id'])
    assert tree(ws) == before


async def test_the_workspace_contract_is_covered_too(ws: Path) -> None:
    (ws / 'a.txt').write_text('old\n')
    before = tree(ws)
    cp = Checkpoints[None]()
    t = await run_tools(
        [FileSystem(), LocalWorkspace(ws), cp],
        [('read_file', {'path': 'a.txt'}), ('write_file', {'path': 'a.txt', 'content': 'new\n'})],
    )
    assert (ws / 'a.txt').read_text() == 'new\n', t.results
    [checkpoint] = cp.list()
    assert checkpoint['paths'] == ['a.txt']
    await cp.rewind(to=checkpoint['id'])
    assert tree(ws) == before
