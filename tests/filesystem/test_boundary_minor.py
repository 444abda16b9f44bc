"""Issue 20, item 9: a parent replaced during a `create_directory` announcement, a bare toolset, one toolset per capability."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UserError
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace
from pydantic_ai_harness_rs.filesystem import FileChangeRequestEvent, FileSystem
from pydantic_ai_harness_rs.shell import Shell

from tests.backends import ProtocolLocal, ShellSandbox
from tests.filesystem.conftest import REFERENCE
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import run_agent, run_tools

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='0.36.0 has no workspaces')]


@pytest.mark.parametrize('kind', ['local', 'memory', 'protocol-local', 'shell-sandbox'])
async def test_a_parent_replaced_by_a_file_during_the_announcement_is_named(tmp_path: Path, kind: str) -> None:
    """0.36.0 and 0.62.0: `has a parent that is not a directory`, not `exists and is not a directory`."""
    backend: Any
    if kind == 'memory':
        backend = MemoryWorkspace({'p/keep.txt': 'k'})

        async def swap(ctx: Any, event: Any) -> None:
            await backend.remove('/ws/p')
            backend._put('/ws/p', b'x')  # pyright: ignore[reportPrivateUsage]

        def state() -> Any:
            return backend.files.get('/ws/p'), '/ws/p/new' in backend.dirs
    else:
        (tmp_path / 'p').mkdir()
        factory = {'local': LocalWorkspaceBackend, 'protocol-local': ProtocolLocal, 'shell-sandbox': ShellSandbox}[kind]
        backend = factory(tmp_path)

        async def swap(ctx: Any, event: Any) -> None:
            shutil.rmtree(tmp_path / 'p')
            (tmp_path / 'p').write_bytes(b'x')

        def state() -> Any:
            return (tmp_path / 'p').read_bytes(), (tmp_path / 'p' / 'new').exists()

    t = await run_tools(
        [FileSystem()],
        [('create_directory', {'path': 'p/new'})],
        listeners=[(FileChangeRequestEvent, swap)],
        workspace=Workspace(backend),
    )
    assert t.results == ["RETRY: Path 'p/new' has a parent that is not a directory."]
    assert state() == (b'x', False)


@pytest.mark.parametrize('tool', ['read_file', 'write_file'])
async def test_a_bare_toolset_says_to_pass_the_capability(tmp_path: Path, tool: str) -> None:
    (tmp_path / 'a.txt').write_text('hi\n')
    agent: Agent[None, str] = Agent(toolsets=[FileSystem().get_toolset()])
    args = {'path': 'a.txt'} if tool == 'read_file' else {'path': 'b.txt', 'content': 'x'}
    with pytest.raises(UserError) as raised:
        await run_agent(agent, [(tool, args)], workspace=Workspace(LocalWorkspaceBackend(tmp_path)))
    assert str(raised.value) == (
        f'The `{tool}` tool emits capability events, which Pydantic AI accepts only from tools a capability '
        'contributes under their own names. Pass `capabilities=[FileSystem()]` rather than its toolset in '
        '`toolsets=`, without renaming its tools.'
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ['a.txt']


def test_get_toolset_returns_the_same_toolset_each_time() -> None:
    fs, read_only, shell = FileSystem(), FileSystem(read_only=True), Shell()
    assert fs.get_toolset() is fs.get_toolset()
    assert read_only.get_toolset() is read_only.get_toolset()
    assert shell.get_toolset() is shell.get_toolset()
    assert FileSystem().get_toolset() is not fs.get_toolset()
