"""Tool kinds (pydantic-ai-harness 0.59+) and `max_retries` (0.52+): what other capabilities and the run see.

Every tool carries `tool_kind='file_system.<tool>'`; the run promotes its call parts to the typed
classes (`ReadFileCallPart`, with `typed_args`), and a tool that names `READ_FILE_KIND` in
`unless_tool_kind` steps aside for our `read_file`, as `ToolOutputLimits`, `Memory` and
`RepoContext` do (against the real ones: tests/compat/test_fs_tool_kinds.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from tests.filesystem.conftest import REFERENCE
from tests.scripted import Transcript, run_tools, scripted_model


def _kinds_supported() -> bool:
    try:
        from pydantic_ai import ToolKind  # noqa: F401
    except ImportError:
        return False
    return True


pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(REFERENCE, reason='0.36.0 has neither tool kinds nor max_retries'),
]

NAMES_062 = [
    *(f'{tool.upper()}_KIND' for tool in (
        'read_file', 'write_file', 'edit_file', 'list_directory', 'search_files',
        'find_files', 'create_directory', 'file_info', 'list_files', 'grep',
    )),
    'ReadFileArgs', 'WriteFileArgs', 'EditFileArgs', 'ReplacementArgs', 'ListDirectoryArgs', 'SearchFilesArgs',
    'FindFilesArgs', 'CreateDirectoryArgs', 'FileInfoArgs', 'ListFilesArgs', 'GrepArgs',
    'ReadFileCallPart', 'ReadFileReturnPart', 'WriteFileCallPart', 'EditFileCallPart', 'ListDirectoryCallPart',
    'SearchFilesCallPart', 'FindFilesCallPart', 'CreateDirectoryCallPart', 'FileInfoCallPart', 'ListFilesCallPart',
    'GrepCallPart',
]  # fmt: skip
"""The 32 names pydantic-ai-harness 0.62.0's `filesystem` added for tool kinds."""

needs_tool_kinds = pytest.mark.skipif(
    not _kinds_supported(), reason='needs pydantic-ai-slim >= 2.59: ToolKind (tool kinds and typed parts)'
)


@needs_tool_kinds
def test_exports_the_062_names(fs: ModuleType) -> None:
    assert len(NAMES_062) == 32
    assert sorted(set(NAMES_062) - set(fs.__all__)) == []
    for name in NAMES_062:
        assert getattr(fs, name) is not None, name
    assert fs.READ_FILE_KIND.id == 'file_system.read_file'
    assert fs.ReadFileCallPart.tool_kind == 'file_system.read_file'
    assert fs.ReplacementArgs.__annotations__.keys() == {'old_text', 'new_text'}


@needs_tool_kinds
@pytest.mark.parametrize('content_hashes', [True, False])
async def test_every_tool_carries_its_kind(fs: ModuleType, tmp_path: Path, content_hashes: bool) -> None:
    capability = fs.FileSystem(root_dir=tmp_path, tools=fs.FILE_SYSTEM_TOOL_NAMES, content_hashes=content_hashes)
    transcript = await run_tools([capability], [])
    kinds = {tool.name: tool.tool_kind for tool in transcript.tools}
    assert kinds == {name: f'file_system.{name}' for name in fs.FILE_SYSTEM_TOOL_NAMES}
    assert {name: getattr(fs, f'{name.upper()}_KIND').id for name in kinds} == kinds


@needs_tool_kinds
async def test_history_holds_typed_call_and_return_parts(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('alpha\nbeta\n')
    calls = [
        ('read_file', {'path': 'a.txt', 'offset': 1}),
        ('edit_file', {'path': 'a.txt', 'replacements': [{'old_text': 'beta', 'new_text': 'gamma'}]}),
        ('read_file', {'path': 'missing.txt'}),
    ]
    agent: Agent[Any, Any] = Agent(capabilities=[fs.FileSystem(root_dir=tmp_path)], retries=10)
    result = await agent.run('go', model=scripted_model(calls, Transcript()))
    messages = result.all_messages()
    call_parts = [p for m in messages if isinstance(m, ModelResponse) for p in m.parts if isinstance(p, ToolCallPart)]
    assert [type(p) for p in call_parts] == [fs.ReadFileCallPart, fs.EditFileCallPart, fs.ReadFileCallPart]
    assert call_parts[0].typed_args == {'path': 'a.txt', 'offset': 1}
    assert call_parts[1].typed_args == {
        'path': 'a.txt',
        'replacements': [{'old_text': 'beta', 'new_text': 'gamma'}],
    }
    returns = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
    # The successful read is a ReadFileReturnPart; the failed one keeps the kind on a plain part.
    assert isinstance(returns[0], fs.ReadFileReturnPart)
    assert returns[0].content == '[a.txt | 2 lines | hash:e49c81e2d2f8]\n     2\tbeta\n'
    assert not isinstance(returns[2], fs.ReadFileReturnPart)
    assert returns[2].tool_kind == 'file_system.read_file'
    assert (tmp_path / 'a.txt').read_text() == 'alpha\ngamma\n'


@needs_tool_kinds
async def test_a_reader_naming_read_file_kind_steps_aside(fs: ModuleType, tmp_path: Path) -> None:
    """The mechanism `ToolOutputLimits.read_tool_result` uses: `unless_tool_kind=READ_FILE_KIND`."""

    async def step_aside(ctx: RunContext[Any], tool_def: ToolDefinition) -> ToolDefinition:
        return replace(tool_def, unless_tool_kind=fs.READ_FILE_KIND)

    def read_spill(handle: str) -> str:
        """Read a spilled result."""
        return handle

    other = FunctionToolset([])
    other.add_function(read_spill, prepare=step_aside)
    with_fs = await run_tools([fs.FileSystem(root_dir=tmp_path)], [], toolsets=[other])
    without_read_file = await run_tools([fs.FileSystem(root_dir=tmp_path, tools=['write_file'])], [], toolsets=[other])
    assert 'read_spill' not in {t.name for t in with_fs.tools}
    assert 'read_file' in {t.name for t in with_fs.tools}
    assert {t.name for t in without_read_file.tools} == {'write_file', 'read_spill'}


@pytest.mark.parametrize('value', [-1, True, 1.5, '2'])
def test_max_retries_is_validated(fs: ModuleType, value: Any) -> None:
    with pytest.raises(ValueError, match=f'max_retries must be a non-negative integer, got {value!r}'):
        fs.FileSystem(max_retries=value)


def test_max_retries_is_keyword_only(fs: ModuleType) -> None:
    field = next(f for f in fs.FileSystem.__dataclass_fields__.values() if f.name == 'max_retries')
    assert field.kw_only and field.default is None


async def test_max_retries_is_each_tools_consecutive_budget(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('alpha\n')
    missing = ('read_file', {'path': 'missing.txt'})
    # A success in between resets the count: 2 retries in a row are allowed, a third fails the run.
    ok = await run_tools(
        [fs.FileSystem(root_dir=tmp_path, max_retries=2)],
        [missing, missing, ('read_file', {'path': 'a.txt'}), missing, missing],
    )
    assert ok.results[:2] == ['RETRY: File not found: missing.txt'] * 2
    with pytest.raises(UnexpectedModelBehavior, match="Tool 'read_file' exceeded max retries count of 2"):
        await run_tools([fs.FileSystem(root_dir=tmp_path, max_retries=2)], [missing, missing, missing])
    # None: the agent's budget (1000 in run_tools).
    unbounded = await run_tools([fs.FileSystem(root_dir=tmp_path)], [missing] * 5)
    assert unbounded.results == ['RETRY: File not found: missing.txt'] * 5


def test_argument_shapes_need_no_module_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    """A schema of every argument shape builds with its module gone from `sys.modules`, as in a
    Temporal workflow sandbox that holds only the package (issue 21)."""
    import sys

    import pydantic
    from pydantic_ai_harness_rs.filesystem import _tool_kinds

    monkeypatch.delitem(sys.modules, _tool_kinds.__name__)
    schemas = {name: pydantic.TypeAdapter(getattr(_tool_kinds, name)).json_schema() for name in _tool_kinds.ARGS_NAMES}
    assert schemas['ReadFileArgs']['required'] == ['path']
    assert schemas['EditFileArgs']['properties']['replacements']['anyOf'][0]['items'] == {
        '$ref': '#/$defs/ReplacementArgs'
    }
