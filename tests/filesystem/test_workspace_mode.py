"""FileSystem on the run's workspace (issue 7): 0.62.0's contract when `root_dir` is left out.

`LocalWorkspace(dir)` + `FileSystem()` works on `dir` with 0.62.0's defaults and texts; with
`root_dir` given, or without a workspace, the document's contract is unchanged. Exact texts
come from pydantic-ai-harness 0.62.0 (`tests/compat/test_fs062_compat.py` compares them
scenario by scenario); these tests pin the selection of the contract and the constructor.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.exceptions import UserError
from pydantic_ai.workspaces import LocalWorkspaceBackend, UnavailableWorkspace, Workspace, WorkspaceUnavailableError
from pydantic_ai_harness_rs._workspace import FILE_METHODS, local_backend
from pydantic_ai_harness_rs.filesystem import (
    DEFAULT_READ_ONLY_PATTERNS,
    FileSystem,
    FileSystemToolset,
    FileWrittenEvent,
)

from tests.filesystem.conftest import beyond_reference, sha
from tests.scripted import run_agent, run_tools

pytestmark = beyond_reference("0.36.0 has no workspace contract (tests/compat compares 0.62.0's)")

CWD_WARNING = (
    "`FileSystem(cwd=...)` is deprecated and ignored: commands/paths start in the workspace's working "
    "directory; set it on the workspace, e.g. `LocalWorkspace('./repo')`."
)
RENAMED_WARNING = (
    '`FileSystem(protected_patterns=...)` has been renamed to `FileSystem(read_only_patterns=...)`. '
    'Update the call; this deprecated alias will be removed in a future release.'
)


INSIDE_HASH, NEW_HASH = sha(b'inside\n'), sha(b'new\n')


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace directory, with the process's current directory elsewhere (holding a decoy)."""
    workspace = tmp_path / 'ws'
    (workspace / 'sub').mkdir(parents=True)
    (workspace / 'inside.txt').write_text('inside\n')
    (workspace / 'sub' / 'deep.txt').write_text('deep\n')
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    (elsewhere / 'decoy.txt').write_text('decoy\n')
    monkeypatch.chdir(elsewhere)
    return workspace


async def test_local_workspace_is_the_tree(ws: Path) -> None:
    t = await run_tools(
        [LocalWorkspace(ws), FileSystem()],
        [
            ('list_directory', {'path': '.'}),
            ('read_file', {'path': 'inside.txt'}),
            ('write_file', {'path': 'sub/new.txt', 'content': 'new\n'}),
            ('read_file', {'path': 'decoy.txt'}),
        ],
    )
    assert t.results == [
        'inside.txt  (7 bytes)\nsub/',
        f'[inside.txt | 1 lines | hash:{INSIDE_HASH}]\n     1\tinside\n',
        f'Wrote 4 chars (1 lines) to sub/new.txt. [hash:{NEW_HASH}]',
        'Path not found: decoy.txt',
    ]
    assert (ws / 'sub' / 'new.txt').read_bytes() == b'new\n'
    assert not (Path.cwd() / 'sub').exists()
    [written] = t.of(FileWrittenEvent)
    assert (written.path, written.root_dir) == ('sub/new.txt', str(ws.resolve()))


async def test_workspace_on_the_run(ws: Path) -> None:
    t = await run_tools(
        [FileSystem()],
        [('read_file', {'path': 'sub/deep.txt'}), ('write_file', {'path': 'run.txt', 'content': 'r'})],
        workspace=LocalWorkspaceBackend(ws),
    )
    assert t.results[0].startswith('[sub/deep.txt | 1 lines | hash:')
    assert (ws / 'run.txt').read_bytes() == b'r'


async def test_yaml_agent_spec(ws: Path, tmp_path: Path) -> None:
    spec = tmp_path / 'agent.yaml'
    spec.write_text(f'model: test\ncapabilities:\n  - LocalWorkspace: {ws}\n  - FileSystem: {{}}\n')
    agent = Agent.from_file(spec, custom_capability_types=[FileSystem])
    t = await run_agent(agent, [('list_directory', {'path': '.'}), ('write_file', {'path': 'y.txt', 'content': 'y'})])
    assert t.results[0] == 'inside.txt  (7 bytes)\nsub/'
    assert (ws / 'y.txt').read_bytes() == b'y'


async def test_each_run_gets_its_own_workspace(tmp_path: Path) -> None:
    """One agent, two runs on two workspaces: each run sees only its own files."""
    one, two = tmp_path / 'one', tmp_path / 'two'
    for d in (one, two):
        d.mkdir()
        (d / 'name.txt').write_text(d.name)
    agent = Agent(capabilities=[FileSystem()], retries=10)
    first = await run_agent(agent, [('read_file', {'path': 'name.txt'})], workspace=LocalWorkspaceBackend(one))
    second = await run_agent(agent, [('read_file', {'path': 'name.txt'})], workspace=LocalWorkspaceBackend(two))
    assert first.results[0].endswith('\tone\n') and second.results[0].endswith('\ttwo\n')


async def test_root_dir_given_keeps_the_document(ws: Path, tmp_path: Path) -> None:
    """`root_dir` wins over an attached local workspace: the document's tree, defaults and texts."""
    root = tmp_path / 'root'
    (root / '.git').mkdir(parents=True)
    (root / 'r.txt').write_text('r\n')
    t = await run_tools(
        [LocalWorkspace(ws), FileSystem(root_dir=root)],
        [
            ('list_directory', {'path': '.'}),
            ('read_file', {'path': 'inside.txt'}),
            ('write_file', {'path': '.git/config', 'content': 'x'}),
            ('read_file', {'path': 'r.txt', 'offset': -1}),
        ],
    )
    assert t.results == [
        'r.txt  (2 bytes)',
        'RETRY: File not found: inside.txt',
        "RETRY: Path '.git/config' is protected (matches '.git/*').",
        'RETRY: offset must be >= 0, got -1.',
    ]


async def test_no_workspace_keeps_the_document(ws: Path) -> None:
    """No workspace and no `root_dir`: the current directory, as today."""
    t = await run_tools([FileSystem()], [('list_directory', {'path': '.'}), ('read_file', {'path': 'nope'})])
    assert t.results == ['decoy.txt  (6 bytes)', 'RETRY: File not found: nope']


async def test_default_read_only_patterns_follow_the_contract(ws: Path) -> None:
    (ws / '.git').mkdir()
    workspace = await run_tools(
        [LocalWorkspace(ws), FileSystem()],
        [('write_file', {'path': '.git/config', 'content': 'x'}), ('write_file', {'path': 'a/.env', 'content': 'x'})],
    )
    assert workspace.results == [
        "RETRY: Path '.git/config' is protected (matches '**/.git').",
        "RETRY: Path 'a/.env' is protected (matches '**/.env').",
    ]
    assert tuple(FileSystem().read_only_patterns) == DEFAULT_READ_ONLY_PATTERNS


async def test_max_read_chars_default_is_50000_on_a_workspace(ws: Path) -> None:
    (ws / 'big.txt').write_text(''.join(f'{i:05d} {"x" * 93}\n' for i in range(1000)))  # 100,000 chars
    capped = await run_tools([LocalWorkspace(ws), FileSystem()], [('read_file', {'path': 'big.txt'})])
    uncapped = await run_tools(
        [LocalWorkspace(ws), FileSystem(max_read_chars=None)], [('read_file', {'path': 'big.txt'})]
    )
    document = await run_tools([FileSystem(root_dir=ws)], [('read_file', {'path': 'big.txt'})])
    assert len(capped.results[0]) <= 50_000 < len(uncapped.results[0])
    assert uncapped.results[0] == document.results[0]
    assert capped.results[0].endswith('\n... (535 more lines. Use offset=465 to continue reading.)\n')


async def test_cwd_warns_and_is_ignored_on_a_workspace(ws: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        capability = FileSystem(cwd=ws / 'sub')
        assert not caught  # the contract is not known before a run
        t = await run_tools([LocalWorkspace(ws), capability], [('read_file', {'path': 'inside.txt'})])
    assert [str(w.message) for w in caught] == [CWD_WARNING]
    assert t.results[0].endswith('\tinside\n')


async def test_cwd_under_the_document_works_without_warning(ws: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        t = await run_tools(
            [LocalWorkspace(ws), FileSystem(root_dir=ws, cwd=ws / 'sub')], [('read_file', {'path': 'deep.txt'})]
        )
    assert not [w for w in caught if 'deprecated' in str(w.message)]
    assert t.results[0].endswith('\tdeep\n')


async def test_protected_patterns_is_an_alias(ws: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        capability = FileSystem(protected_patterns=['*.txt'])
        t = await run_tools([LocalWorkspace(ws), capability], [('write_file', {'path': 'inside.txt', 'content': 'x'})])
    assert t.results == ["RETRY: Path 'inside.txt' is protected (matches '*.txt')."]
    assert [str(w.message) for w in caught] == [RENAMED_WARNING]
    assert (capability.read_only_patterns, capability.protected_patterns) == (['*.txt'], None)
    with pytest.raises(
        TypeError, match='^Pass `read_only_patterns` only: `protected_patterns` is its deprecated name.$'
    ):
        FileSystem(protected_patterns=['*.txt'], read_only_patterns=['*.md'])


async def test_unavailable_workspace_fails_the_run(ws: Path) -> None:
    with pytest.raises(UserError, match='^`FileSystem` cannot use this workspace: the sandbox was shut down$'):
        await run_tools(
            [FileSystem()],
            [('list_directory', {'path': '.'})],
            workspace=UnavailableWorkspace('the sandbox was shut down'),
        )


async def test_direct_calls_take_a_workspace(ws: Path) -> None:
    toolset = FileSystem().get_toolset()
    assert isinstance(toolset, FileSystemToolset)
    backend = LocalWorkspaceBackend(ws)
    assert (await toolset.read_file('inside.txt', workspace=backend)).endswith('\tinside\n')
    assert await toolset.read_file('nope', workspace=backend) == 'Path not found: nope'
    assert (
        await toolset.write_file('d.txt', 'd', workspace=backend)
        == f'Wrote 1 chars (1 lines) to d.txt. [hash:{sha(b"d")}]'
    )
    assert (ws / 'd.txt').read_bytes() == b'd'
    assert await toolset.list_directory() == 'decoy.txt  (6 bytes)'  # without workspace=: the document's tree


async def test_a_deleted_workspace_directory_ends_the_run_as_0_62_does(tmp_path: Path) -> None:
    # The engine for a workspace is cached with its directory open; a call after the directory
    # is gone must not read through the stale handle ("Not a directory: ."): it asks the workspace,
    # which raises `WorkspaceUnavailableError`, as 0.62.0 does; a directory made again is served.
    directory = tmp_path / 'w'
    directory.mkdir()
    (directory / 'a.txt').write_text('old\n')
    toolset = FileSystem().get_toolset()
    assert isinstance(toolset, FileSystemToolset)
    backend = LocalWorkspaceBackend(directory)
    assert (await toolset.read_file('a.txt', workspace=backend)).endswith('\told\n')
    shutil.rmtree(directory)
    for call in (
        toolset.read_file('a.txt', workspace=backend),
        toolset.write_file('b.txt', 'b', workspace=backend),
        toolset.list_directory('.', workspace=backend),
    ):
        with pytest.raises(WorkspaceUnavailableError, match=f'^local workspace directory {directory} does not exist$'):
            await call
    directory.mkdir()
    (directory / 'a.txt').write_text('new\n')
    assert (await toolset.read_file('a.txt', workspace=backend)).endswith('\tnew\n')
    assert not (directory / 'b.txt').exists()


def test_only_a_stock_local_backend_is_served_natively(ws: Path) -> None:
    class Mapped(LocalWorkspaceBackend):
        async def read_bytes(self, path: str) -> bytes:  # pragma: no cover - never called
            return b''

    assert local_backend(Workspace(LocalWorkspaceBackend(ws)), FILE_METHODS) is not None
    assert local_backend(Workspace(Mapped(ws)), FILE_METHODS) is None
    assert local_backend(Workspace(Mapped(ws))) is not None  # commands still run natively for Shell


async def test_root_dir_semantics_on_a_workspace(ws: Path) -> None:
    """0.62.0's `root_dir` on a workspace (used where the workspace is not on this host)."""
    from pydantic_ai_harness_rs.filesystem._bounds import root_spelling, workspace_bounds

    facade = Workspace(LocalWorkspaceBackend(ws / 'sub'))
    real = str((ws / 'sub').resolve())
    default = await workspace_bounds(facade, root_spelling(None))
    assert (default.root, default.cwd, default.named, default.contains_everything) == (real, real, False, False)
    parent = await workspace_bounds(facade, root_spelling('..'))
    assert (parent.root, parent.cwd, parent.named) == (str(ws.resolve()), real, True)
    assert (await workspace_bounds(facade, root_spelling('/'))).contains_everything
    with pytest.raises(UserError) as below:
        root_spelling('src')
    assert str(below.value) == (
        "root_dir 'src' is below the working directory, but root_dir must contain the working directory. "
        "To scope the tools to a subfolder, attach the workspace there, e.g. `LocalWorkspace('./src')`."
    )
    with pytest.raises(UserError, match='^Workspace paths do not expand `~`: ~/x. '):
        root_spelling('~/x')
    elsewhere = str(Path.cwd().resolve())
    with pytest.raises(UserError) as outside:
        await workspace_bounds(facade, root_spelling(elsewhere))
    assert str(outside.value) == (
        f'The working directory {real!r} is outside root_dir {elsewhere!r}. To work in {elsewhere!r}, attach the '
        f'workspace there, such as `LocalWorkspace({elsewhere!r})` on this machine; otherwise set `root_dir` to '
        'a directory that contains the working directory.'
    )


async def test_a_read_only_workspace_offers_only_the_read_tools(ws: Path) -> None:
    from pydantic_ai.workspaces import ReadOnlyWorkspace

    t = await run_tools([FileSystem()], [], workspace=ReadOnlyWorkspace(Workspace(LocalWorkspaceBackend(ws))))
    assert [d.name for d in t.tools] == ['read_file', 'list_directory', 'search_files', 'find_files', 'file_info']


async def test_root_dir_on_a_workspace_elsewhere_follows_0_62(ws: Path) -> None:
    """A workspace whose files are not this host's: 0.62.0's `root_dir` rules apply before any I/O."""

    class Elsewhere(LocalWorkspaceBackend):
        async def read_bytes(self, path: str) -> bytes:  # pragma: no cover - never reached
            raise AssertionError('no I/O before the boundary is checked')

    toolset = FileSystem(root_dir='src').get_toolset()
    assert isinstance(toolset, FileSystemToolset)
    # Its files are this host's, so the two readings of `root_dir` are told apart before the refusal.
    with pytest.raises(UserError, match="^root_dir 'src' is below the working directory"):
        with pytest.warns(UserWarning, match=r"0\.62\.0 refuses it .*Pass `contract='document'`"):
            await toolset.read_file('inside.txt', workspace=Elsewhere(ws))


async def test_tool_descriptions_follow_the_contract(ws: Path) -> None:
    workspace = await run_tools([LocalWorkspace(ws), FileSystem()], [])
    document = await run_tools([LocalWorkspace(ws), FileSystem(root_dir=ws)], [])
    describe = {d.name: d for d in workspace.tools}
    assert describe['list_directory'].description == (
        '<summary>List the contents of a directory.</summary>\n<returns>\n'
        '<description>Paths relative to the working directory, with type indicators and sizes.</description>\n</returns>'
    )
    assert describe['read_file'].parameters_json_schema['properties']['path']['description'] == (
        'File path relative to the working directory.'
    )
    assert {d.name: d.description for d in document.tools}['list_directory'] == (
        '<summary>List the contents of a directory.</summary>\n<returns>\n'
        '<description>Paths relative to `cwd`, with type indicators and sizes.</description>\n</returns>'
    )
