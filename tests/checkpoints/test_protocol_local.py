"""A workspace whose files are on this host but whose backend is reached through the workspace protocol
(a `LocalWorkspaceBackend` subclass overriding a file method, or `run` too, or one under a wrapper): its
file tools' and its commands' checkpoints land in one store, the root's, in call order, and a rewind
undoes both."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace
from pydantic_ai.workspaces.authority import AuthorityWorkspace
from pydantic_ai_harness_rs import Checkpoints, FileSystem, Shell

from tests.backends import ProtocolLocal
from tests.checkpoints.conftest import tree
from tests.scripted import run_tools

pytestmark = pytest.mark.anyio


class ProtocolLocalRun(ProtocolLocal):
    """`ProtocolLocal` whose commands go through the protocol too (`run` overridden)."""

    async def run(self, *args: Any, **kwargs: Any) -> Any:
        return await super().run(*args, **kwargs)


def under_a_wrapper(ws: Path) -> Workspace:
    return AuthorityWorkspace(Workspace(LocalWorkspaceBackend(ws)), authority='user')


@pytest.mark.parametrize(
    'workspace',
    [lambda ws: Workspace(ProtocolLocal(ws)), lambda ws: Workspace(ProtocolLocalRun(ws)), under_a_wrapper],
    ids=['file-method', 'run-too', 'wrapper'],
)
async def test_file_tools_and_commands_on_a_protocol_backend_share_the_roots_store(
    ws: Path, workspace: Callable[[Path], Workspace]
) -> None:
    (ws / 'a.txt').write_text('one\n')
    (ws / 'b.txt').write_text('bee\n')
    before = tree(ws)
    cp = Checkpoints[None]()
    capabilities = [FileSystem(tools=['read_file', 'write_file', 'edit_file']), Shell(denied_commands=[]), cp]
    calls = [
        ('write_file', {'path': 'a.txt', 'content': 'two\n'}),
        ('run_command', {'command': 'echo more >> a.txt && rm b.txt && mkdir d && echo c > d/c.txt'}),
        ('edit_file', {'path': 'a.txt', 'old_text': 'more', 'new_text': 'less'}),
    ]
    t = await run_tools(capabilities, calls, workspace=workspace(ws))
    assert t.results[0].startswith('Wrote 4 chars') and t.results[1] == '(no output)', t.results
    assert (ws / 'a.txt').read_text() == 'two\nless\n'
    listed = cp.list()
    assert [(c['id'], c['tool_name'], c['paths']) for c in listed] == [
        ('cp-000001', 'write_file', ['a.txt']),
        ('cp-000002', 'run_command', ['a.txt', 'b.txt', 'd', 'd/c.txt']),
        ('cp-000003', 'edit_file', ['a.txt']),
    ]
    # Kept where a local workspace's are: a restart finds them with `root=`.
    assert Checkpoints[None](root=ws).list() == listed
    assert await cp.diff('cp-000002') == [
        ('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n two\n+more'),
        ('b.txt', 'deleted file (4 bytes)'),
        ('d', 'created directory'),
        ('d/c.txt', 'created file (2 bytes)'),
    ]
    result = await cp.rewind(to='cp-000001')
    assert (result['restored'], result['deleted'], result['removed_dirs'], result['failed']) == (
        ['a.txt', 'b.txt'],
        ['d/c.txt'],
        ['d'],
        [],
    )
    assert tree(ws) == before
    assert cp.list() == []
