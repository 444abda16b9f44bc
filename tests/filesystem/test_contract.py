"""Which tree: `FileSystem(contract=...)` names the reading of `root_dir` (issue 20, item 10).

The tree, in a temporary directory `P` that is the process's directory: `P/ws/src/a.txt`,
`P/src/a.txt`, `P/marker.txt`; the run's workspace is `LocalWorkspace('./ws')` (or an in-memory
store, or none). `contract='workspace'` reads a relative `root_dir` from the workspace's working
directory as 0.62.0 does (`tests/compat/test_fs062_contract_compat.py` compares the two side by
side); `contract='document'` reads it from the process's directory; left unset, the rule stays
as it was and a warning names both directories when they differ.
"""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path
from typing import Literal

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.exceptions import UserError
from pydantic_ai.workspaces import LocalWorkspaceBackend, ReadOnlyWorkspace, Workspace
from pydantic_ai_harness_rs import FileSystem
from pydantic_ai_harness_rs._warn import deprecation_warning_class
from pydantic_ai_harness_rs.filesystem import (
    DEFAULT_PROTECTED_PATTERNS,
    DEFAULT_READ_ONLY_PATTERNS,
    FileReadEvent,
    FileSystemToolset,
)

from tests.backends import ProtocolLocal
from tests.filesystem.conftest import beyond_reference, sha
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import run_agent, run_tools

pytestmark = beyond_reference('the contract field is ours')

WS_A = '[src/a.txt | 1 lines | hash:926005a85bcf]\n     1\tws/src/a\n'
PROCESS_A = '[src/a.txt | 1 lines | hash:' + sha(b'process src/a\n') + ']\n     1\tprocess src/a\n'
MEMORY_A = '[src/a.txt | 1 lines | hash:ee7211ee4b7a]\n     1\tmemory ws/src/a\n'
BELOW = (
    "root_dir 'src' is below the working directory, but root_dir must contain the working directory. "
    "To scope the tools to a subfolder, attach the workspace there, e.g. `LocalWorkspace('./src')`."
)
NEEDS_A_WORKSPACE = (
    '`FileSystem` needs a workspace, but none is attached to this run. '
    "Add `LocalWorkspace('.')` (this machine; `from pydantic_ai.capabilities import LocalWorkspace`, "
    'or `- LocalWorkspace: .` in an agent spec) or a sandbox capability such as `ModalSandbox()` '
    "to the agent's capabilities, or pass `workspace=` to the run. See https://pydantic.dev/docs/ai/workspace/"
)


def off_host(backend: str, where: str = 'keeps its files off this host') -> str:
    return (
        "`FileSystem(contract='document')` reads root_dir as a directory of this host, but the run's workspace "
        f"({backend}) {where}. Pass `contract='workspace'` (or leave `contract` unset) to work in the workspace, "
        'or run without a workspace to keep the host directory.'
    )


def readings(root_dir: str, doc_root: Path, doc_cwd: Path, theirs: str, in_force: str = "The document's") -> str:
    return (
        f"`FileSystem(root_dir={root_dir!r})` with a workspace: the document's rule reads root_dir as the host "
        f'directory `{doc_root}` with paths resolving from `{doc_cwd}`; pydantic-ai-harness 0.62.0 {theirs}. '
        f"{in_force} reading is in force. Pass `contract='document'` for the document's reading or "
        "`contract='workspace'` for 0.62.0's (either silences this warning)."
    )


@pytest.fixture
def p(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    p = tmp_path.resolve() / 'p'
    (p / 'ws' / 'src').mkdir(parents=True)
    (p / 'src').mkdir()
    (p / 'ws' / 'src' / 'a.txt').write_text('ws/src/a\n')
    (p / 'src' / 'a.txt').write_text('process src/a\n')
    (p / 'marker.txt').write_text('marker in P\n')
    monkeypatch.chdir(p)
    return p


def memory() -> MemoryWorkspace:
    return MemoryWorkspace({'src/a.txt': 'memory ws/src/a\n'}, cwd='/p/ws')


def caught_messages(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if 'root_dir' in str(w.message)]


# --- contract='workspace': 0.62.0's reading on every workspace --------------------------------


async def test_workspace_contract_reads_root_dir_from_the_local_workspace(p: Path) -> None:
    """The issue's case: the root is the parent of `ws`, paths resolve from `ws`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        t = await run_tools(
            [LocalWorkspace('./ws'), FileSystem(root_dir='..', contract='workspace')],
            [
                ('read_file', {'path': 'src/a.txt'}),
                ('read_file', {'path': '../marker.txt'}),
                ('list_directory', {'path': '..'}),
                ('read_file', {'path': '../../x'}),
            ],
        )
    assert t.results == [
        WS_A,
        '[../marker.txt | 1 lines | hash:b5a68423fddf]\n     1\tmarker in P\n',
        '../marker.txt  (12 bytes)\n../src/\n./',
        f'RETRY: `<outside-workspace>` is outside root_dir `{p}`; the file tools only work inside it. '
        f'Create or clone it inside `{p}`, or use a shell tool if you have one.',
    ]
    assert [(e.root_dir, e.path) for e in t.of(FileReadEvent)] == [(str(p), 'ws/src/a.txt'), (str(p), 'marker.txt')]
    assert caught_messages(caught) == []
    # 0.62.0's descriptions, as on a workspace without root_dir.
    plain = await run_tools([LocalWorkspace('./ws'), FileSystem()], [])
    assert [tool.description for tool in t.tools] == [tool.description for tool in plain.tools]


def test_workspace_contract_refuses_a_root_below_the_working_directory_at_construction() -> None:
    with pytest.raises(UserError) as raised:
        FileSystem(root_dir='src', contract='workspace')
    assert str(raised.value) == BELOW
    with pytest.raises(UserError, match='^Workspace paths do not expand `~`: ~/x. '):
        FileSystem(root_dir='~/x', contract='workspace')


async def test_workspace_contract_on_a_non_local_backend(p: Path) -> None:
    """The same reading on an in-memory store (as without the field there)."""
    for capability in (FileSystem(root_dir='..', contract='workspace'), FileSystem(root_dir='..')):
        t = await run_tools(
            [capability],
            [('read_file', {'path': 'src/a.txt'}), ('read_file', {'path': '../../x'})],
            workspace=Workspace(memory()),
        )
        assert t.results == [
            MEMORY_A,
            'RETRY: `/x` is outside root_dir `/p`; the file tools only work inside it. Create or clone it inside '
            '`/p`, or use a shell tool if you have one.',
        ]


async def test_workspace_contract_on_a_protocol_path_local_backend(p: Path) -> None:
    t = await run_tools(
        [FileSystem(root_dir='..', contract='workspace')],
        [('read_file', {'path': 'src/a.txt'})],
        workspace=Workspace(ProtocolLocal(p / 'ws')),
    )
    assert t.results == [WS_A]


async def test_workspace_contract_needs_a_workspace(p: Path) -> None:
    with pytest.raises(UserError) as raised:
        await run_tools([FileSystem(root_dir='..', contract='workspace')], [('read_file', {'path': 'src/a.txt'})])
    assert str(raised.value) == NEEDS_A_WORKSPACE
    toolset = FileSystem(contract='workspace').get_toolset()
    assert isinstance(toolset, FileSystemToolset)
    with pytest.raises(UserError) as raised:
        await toolset.read_file('src/a.txt')
    assert str(raised.value) == (
        "`FileSystem(contract='workspace')` works in the run's workspace, but this call has none. Attach one "
        "(such as `LocalWorkspace('.')`) or pass `workspace=` to a direct call; for a directory of this host "
        "without a workspace, use `contract='document'` or leave `contract` unset."
    )
    assert await toolset.read_file('src/a.txt', workspace=LocalWorkspaceBackend(p / 'ws')) == WS_A


def test_workspace_contract_shows_and_applies_its_defaults() -> None:
    fs = FileSystem(root_dir='..', contract='workspace')
    assert (fs.max_read_chars, fs.read_only_patterns) == (50_000, list(DEFAULT_READ_ONLY_PATTERNS))
    assert ", contract='workspace')" in repr(fs)
    doc = FileSystem(contract='document')
    assert (doc.max_read_chars, doc.read_only_patterns) == (None, list(DEFAULT_PROTECTED_PATTERNS))


async def test_workspace_contract_applies_its_read_only_patterns(p: Path) -> None:
    (p / 'ws' / 'sub' / '.git').mkdir(parents=True)
    t = await run_tools(
        [LocalWorkspace('./ws'), FileSystem(root_dir='..', contract='workspace')],
        [('write_file', {'path': 'sub/.git', 'content': 'x'})],
    )
    assert t.results == ["RETRY: Path 'ws/sub/.git' is protected (matches '**/.git')."]


# --- contract='document': the host directory, from the process's directory --------------------


async def test_document_contract_reads_root_dir_on_the_host(p: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        for capabilities, workspace in (
            ([LocalWorkspace('./ws'), FileSystem(root_dir='.', contract='document')], None),
            ([FileSystem(contract='document')], Workspace(ProtocolLocal(p / 'ws'))),
            ([FileSystem(root_dir='.', contract='document')], None),
        ):
            t = await run_tools(capabilities, [('read_file', {'path': 'src/a.txt'})], workspace=workspace)
            assert t.results == [PROCESS_A]
            assert [e.root_dir for e in t.of(FileReadEvent)] == [str(p)]
    assert caught_messages(caught) == []


async def test_document_contract_refuses_a_workspace_off_this_host_at_run_start(p: Path) -> None:
    for workspace, message in (
        (Workspace(memory()), off_host('MemoryWorkspace')),
        (
            ReadOnlyWorkspace(Workspace(LocalWorkspaceBackend(p / 'ws'))),
            off_host('LocalWorkspaceBackend', 'is read-only'),
        ),
    ):
        with pytest.raises(UserError) as raised:
            await run_tools([FileSystem(root_dir='.', contract='document')], [], workspace=workspace)
        assert str(raised.value) == message
    toolset = FileSystem(contract='document').get_toolset()
    assert isinstance(toolset, FileSystemToolset)
    with pytest.raises(UserError) as raised:
        await toolset.read_file('src/a.txt', workspace=memory())
    assert str(raised.value) == off_host('MemoryWorkspace')


# --- contract left unset: the rule as it was, and a warning when the readings differ ----------


async def test_unset_contract_warns_once_naming_both_directories(p: Path) -> None:
    capability = FileSystem(root_dir='..')
    agent = Agent(capabilities=[LocalWorkspace('./ws'), capability], retries=10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        first = await run_agent(agent, [('read_file', {'path': 'src/a.txt'})])
        second = await run_agent(agent, [('read_file', {'path': 'p/marker.txt'})])
    assert first.results == ['RETRY: File not found: src/a.txt']  # the document's reading: `P/..`
    assert second.results == ['[p/marker.txt | 1 lines | hash:b5a68423fddf]\n     1\tmarker in P\n']
    theirs = f"reads it as `{p}` with paths resolving from the workspace's working directory `{p / 'ws'}`"
    assert caught_messages(caught) == [readings('..', p.parent, p.parent, theirs)]
    assert [w.category for w in caught if 'root_dir' in str(w.message)] == [deprecation_warning_class()]


async def test_unset_contract_warns_that_0_62_0_refuses_a_root_below(p: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        t = await run_tools([LocalWorkspace('./ws'), FileSystem(root_dir='src')], [('read_file', {'path': 'a.txt'})])
    assert t.results == [PROCESS_A.replace('src/a.txt', 'a.txt', 1)]  # served from `./src`
    theirs = f"refuses it (it is below the workspace's working directory `{p / 'ws'}`)"
    assert caught_messages(caught) == [readings('src', p / 'src', p / 'src', theirs)]


async def test_unset_contract_says_nothing_when_the_readings_agree(p: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(p / 'ws')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        await run_tools([LocalWorkspace('.'), FileSystem(root_dir='.')], [('read_file', {'path': 'src/a.txt'})])
        await run_tools([LocalWorkspace('.'), FileSystem(root_dir=p)], [('read_file', {'path': 'src/a.txt'})])
        await run_tools([FileSystem(root_dir='..')], [('read_file', {'path': 'src/a.txt'})])  # no workspace
        await run_tools([FileSystem(root_dir='..')], [], workspace=Workspace(memory()))  # no host reading
    assert caught_messages(caught) == []


async def test_unset_contract_warns_on_a_protocol_path_backend_too(p: Path) -> None:
    """A `LocalWorkspaceBackend` subclass driven through the protocol reads root_dir as 0.62.0 does."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        t = await run_tools(
            [FileSystem(root_dir='..')],
            [('read_file', {'path': 'src/a.txt'})],
            workspace=Workspace(ProtocolLocal(p / 'ws')),
        )
    assert t.results == [WS_A]
    theirs = f"reads it as `{p}` with paths resolving from the workspace's working directory `{p / 'ws'}`"
    assert caught_messages(caught) == [readings('..', p.parent, p.parent, theirs, "0.62.0's")]


# --- the field itself --------------------------------------------------------------------------


def test_the_field_is_keyword_only_and_checked() -> None:
    parameter = inspect.signature(FileSystem).parameters['contract']
    assert (parameter.kind, parameter.default) == (inspect.Parameter.KEYWORD_ONLY, None)
    assert "contract: \"Literal['document', 'workspace'] | None\" = None" in str(inspect.signature(FileSystem))
    assert repr(FileSystem()).endswith(', contract=None)')
    with pytest.raises(ValueError, match=r"^contract must be 'document', 'workspace' or None, got 'host'$"):
        FileSystem(contract='host')  # pyright: ignore[reportArgumentType]


async def test_the_field_in_an_agent_spec(p: Path) -> None:
    spec = p / 'agent.yaml'
    spec.write_text(
        'model: test\ncapabilities:\n  - LocalWorkspace: ./ws\n  - FileSystem: {root_dir: .., contract: workspace}\n'
    )
    agent = Agent.from_file(spec, custom_capability_types=[FileSystem])
    t = await run_agent(agent, [('read_file', {'path': 'src/a.txt'})])
    assert t.results == [WS_A]


class _Durability:
    """The least Pydantic AI's `DurableWorkspace` asks of its durability capability, outside a workflow."""

    engine_name = 'test'
    durable_unit_plural = 'units'
    durable_unit_noun = 'a unit'
    in_durable_context = False


async def test_the_field_through_the_durable_workspace_wrapper(p: Path) -> None:
    """Each contract's reading through `DurableWorkspace` (what workflow code sees) over a local directory."""
    from pydantic_ai.durable_exec._workspace import DurableWorkspace

    durable = DurableWorkspace(Workspace(LocalWorkspaceBackend(p / 'ws')), durability=_Durability(), ctx=None)  # pyright: ignore[reportArgumentType]
    cases: list[tuple[Literal['document', 'workspace'], str, str]] = [
        ('workspace', '..', WS_A),
        ('document', '.', PROCESS_A),
    ]
    for contract, root_dir, expected in cases:
        toolset = FileSystem(root_dir=root_dir, contract=contract).get_toolset()
        assert isinstance(toolset, FileSystemToolset)
        assert await toolset.read_file('src/a.txt', workspace=durable) == expected
