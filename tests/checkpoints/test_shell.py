"""Shell commands' changes undone exactly: whatever a command did, found by the snapshot around it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs import Checkpoints, FileSystem, Shell

from tests.checkpoints.conftest import agent_tools, tree
from tests.scripted import run_tools

pytestmark = pytest.mark.anyio


def rc(command: str) -> tuple[str, dict[str, str]]:
    return ('run_command', {'command': command})


async def one_command(ws: Path, command: str) -> tuple[Checkpoints[None], dict[str, Any]]:
    """Run `command` through an agent with checkpoints; the capability and the checkpoint it made."""
    cp = Checkpoints[None]()
    t = await run_tools(agent_tools(ws, cp), [rc(command)])
    assert t.results[0] == '(no output)', t.results
    [checkpoint] = cp.list()
    assert checkpoint['tool_name'] == 'run_command'
    return cp, checkpoint


async def test_sed_in_place_is_undone(ws: Path) -> None:
    (ws / 'conf.ini').write_text('name = old\nport = 1\n')
    (ws / 'conf.ini').chmod(0o600)
    (ws / 'other.txt').write_text('untouched\n')
    before = tree(ws)
    cp, checkpoint = await one_command(ws, "sed -i 's/old/new/' conf.ini")
    assert (ws / 'conf.ini').read_text() == 'name = new\nport = 1\n'
    assert checkpoint['paths'] == ['conf.ini']
    [(path, diff)] = await cp.diff(checkpoint['id'])
    assert path == 'conf.ini'
    assert '-name = old\n+name = new\n' in diff
    result = await cp.rewind(to=checkpoint['id'])
    assert result['restored'] == ['conf.ini']
    assert tree(ws) == before


async def test_rm_rf_of_a_directory_is_undone(ws: Path) -> None:
    (ws / 'src' / 'pkg').mkdir(parents=True)
    (ws / 'src' / 'pkg' / 'a.py').write_text('a = 1\n')
    (ws / 'src' / 'b.bin').write_bytes(bytes(range(256)))
    (ws / 'src' / 'tool').write_text('#!/bin/sh\n')
    (ws / 'src' / 'tool').chmod(0o755)
    (ws / 'src' / 'empty').mkdir()
    before = tree(ws)
    cp, checkpoint = await one_command(ws, 'rm -rf src')
    assert not (ws / 'src').exists()
    assert checkpoint['paths'] == ['src', 'src/b.bin', 'src/empty', 'src/pkg', 'src/pkg/a.py', 'src/tool']
    await cp.rewind(to=checkpoint['id'])
    assert tree(ws) == before


async def test_mv_is_undone(ws: Path) -> None:
    (ws / 'a.txt').write_text('content\n')
    (ws / 'a.txt').chmod(0o604)
    before = tree(ws)
    cp, checkpoint = await one_command(ws, 'mkdir -p dest && mv a.txt dest/b.txt')
    assert checkpoint['paths'] == ['a.txt', 'dest', 'dest/b.txt']
    result = await cp.rewind(to=checkpoint['id'])
    assert result['restored'] == ['a.txt']
    assert result['deleted'] == ['dest/b.txt']
    assert result['removed_dirs'] == ['dest']
    assert tree(ws) == before


async def test_git_checkout_is_undone(ws: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(
            ['git', '-c', 'user.name=t', '-c', 'user.email=t@t', *args], cwd=ws, check=True, capture_output=True
        )

    git('init', '-q')
    (ws / 'tracked.txt').write_text('committed\n')
    (ws / 'lib').mkdir()
    (ws / 'lib' / 'm.py').write_text('x = 1\n')
    git('add', '.')
    git('commit', '-q', '-m', 'init')
    (ws / 'tracked.txt').write_text('work in progress\n')
    (ws / 'lib' / 'm.py').write_text('x = 2\n')
    before = tree(ws)
    cp, checkpoint = await one_command(ws, 'git checkout -- .')
    assert (ws / 'tracked.txt').read_text() == 'committed\n'
    assert checkpoint['paths'] == ['lib/m.py', 'tracked.txt']  # `.git/` is not tracked
    await cp.rewind(to=checkpoint['id'])
    assert tree(ws) == before


async def test_a_script_creating_ten_thousand_files_is_undone(ws: Path) -> None:
    (ws / 'keep.txt').write_text('keep\n')
    before = tree(ws)
    cp, checkpoint = await one_command(
        ws, 'mkdir gen && cd gen && for d in $(seq 0 9); do mkdir d$d; (cd d$d && seq 1 1000 | xargs touch); done'
    )
    assert sum(len(files) for _, _, files in os.walk(ws / 'gen')) == 10_000
    assert len(checkpoint['paths']) == 10_011  # the files, their 10 directories and `gen`
    result = await cp.rewind(to=checkpoint['id'])
    assert len(result['deleted']) == 10_000
    assert len(result['removed_dirs']) == 11
    assert tree(ws) == before


async def test_a_symlink_replaced_by_a_file_is_undone(ws: Path) -> None:
    (ws / 'target.txt').write_text('target\n')
    (ws / 'link').symlink_to('target.txt')
    before = tree(ws)
    cp, checkpoint = await one_command(ws, 'rm link && echo plain > link')
    assert not (ws / 'link').is_symlink()
    assert checkpoint['paths'] == ['link']
    await cp.rewind(to=checkpoint['id'])
    assert tree(ws) == before
    assert os.readlink(ws / 'link') == 'target.txt'


async def test_a_command_that_changes_nothing_records_nothing(ws: Path) -> None:
    (ws / 'a.txt').write_text('a\n')
    cp = Checkpoints[None]()
    t = await run_tools(agent_tools(ws, cp), [rc('cat a.txt'), rc('ls')])
    assert t.results == ['[stdout]\na\n', '[stdout]\na.txt\n']
    assert cp.list() == []


async def test_concurrent_calls_each_get_their_own_changes(ws: Path) -> None:
    cp = Checkpoints[None]()
    t = await run_tools(
        agent_tools(ws, cp),
        [
            [
                rc('sleep 0.2; echo 1 > by_command.txt'),
                ('write_file', {'path': 'by_tool.txt', 'content': 'x'}),
                rc('echo 2 > by_other_command.txt'),
            ]
        ],
    )
    assert len(t.results) == 3, t.results
    assert sorted((c['tool_call_id'], tuple(c['paths'])) for c in cp.list()) == [
        ('call-1-0', ('by_command.txt',)),
        ('call-1-1', ('by_tool.txt',)),
        ('call-1-2', ('by_other_command.txt',)),
    ]


async def test_what_a_session_does_while_a_session_tool_waits_is_undone(ws: Path) -> None:
    """`Shell(interactive=True)`: a line typed into a shell session is checkpointed as its `write_stdin` call."""
    (ws / 'keep.txt').write_text('old\n')
    before = tree(ws)
    cp = Checkpoints[None]()
    capabilities = [
        FileSystem(root_dir=ws, tools=['read_file']),
        LocalWorkspace(ws),
        Shell(denied_commands=[], interactive=True),
        cp,
    ]
    t = await run_tools(
        capabilities,
        [
            ('start_session', {'command': 'sh'}),
            ('write_stdin', {'id': '1', 'text': 'echo new > keep.txt; mkdir made; echo x > made/f; echo done\n'}),
            ('read_session', {'id': '1', 'wait_for': 'done'}),
            ('stop_session', {'id': '1'}),
        ],
    )
    assert t.results[0].startswith('Session 1 started'), t.results
    assert (ws / 'keep.txt').read_text() == 'new\n'
    changed = [c for c in cp.list() if c['paths']]
    assert {c['tool_name'] for c in changed} <= {'write_stdin', 'read_session'}
    assert sorted(p for c in changed for p in c['paths']) == ['keep.txt', 'made', 'made/f']
    await cp.rewind(to=changed[0]['id'])
    assert tree(ws) == before


@pytest.mark.parametrize('end', ['killed', 'timed-out', 'raised'])
async def test_a_command_that_ends_abnormally_is_recorded_and_undone(
    ws: Path, end: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed by a signal, stopped at its timeout, or the tool raising after it ran: what the command
    changed before is its call's checkpoint, as for a command that exits normally."""
    from pydantic_ai_harness_rs.shell._toolset import ShellToolset

    (ws / 'a.txt').write_text('old\n')
    before = tree(ws)
    args: dict[str, Any] = {'command': 'echo new > a.txt && mkdir d && kill -9 $$'}
    if end == 'timed-out':
        args = {'command': 'echo new > a.txt && mkdir d && sleep 60', 'timeout_seconds': 1}
    elif end == 'raised':
        args = {'command': 'echo new > a.txt && mkdir d'}
        run_command = ShellToolset._run_command  # pyright: ignore[reportPrivateUsage]

        async def raising(self: Any, *a: Any, **k: Any) -> str:
            await run_command(self, *a, **k)
            raise RuntimeError('the tool failed after the command ran')

        monkeypatch.setattr(ShellToolset, '_run_command', raising)
    cp = Checkpoints[None]()
    if end == 'raised':
        with pytest.raises(RuntimeError, match='the tool failed'):
            await run_tools(agent_tools(ws, cp), [rc(args['command'])])
    else:
        t = await run_tools(agent_tools(ws, cp), [('run_command', args)])
        assert ('exit code: 137' if end == 'killed' else 'timed out') in t.results[0], t.results
    assert (ws / 'a.txt').read_text() == 'new\n'
    [checkpoint] = cp.list()
    assert (checkpoint['tool_name'], checkpoint['paths']) == ('run_command', ['a.txt', 'd'])
    result = await cp.rewind(to=checkpoint['id'])
    assert (result['restored'], result['removed_dirs']) == (['a.txt'], ['d'])
    assert tree(ws) == before
