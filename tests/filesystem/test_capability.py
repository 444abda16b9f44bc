"""The capability: construction checks, tool selection, schemas, agent specs, direct methods under trio."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic_ai import Agent

from tests.conftest import both_backends
from tests.filesystem.conftest import REFERENCE, spec_over_reference
from tests.scripted import run_agent, run_tools

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize('field', ['max_read_lines', 'max_list_results', 'max_search_results', 'max_find_results', 'max_read_chars'])
@pytest.mark.parametrize('value', [0, -1, '10'])
def test_integer_limits_are_validated_at_construction(fs: ModuleType, field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f'{field} must be a positive integer, got {value!r}'):
        fs.FileSystem(**{field: value})


@spec_over_reference
@pytest.mark.parametrize('field', ['max_read_lines', 'max_list_results', 'max_search_results', 'max_find_results', 'max_read_chars'])
def test_true_is_not_a_limit(fs: ModuleType, field: str) -> None:
    """`max_search_results=True` would cap every search at one line: refused (0.36.0 takes True as 1)."""
    with pytest.raises(ValueError, match=f'{field} must be a positive integer, got True'):
        fs.FileSystem(**{field: True})


def test_unknown_tool_is_refused(fs: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match='Unknown filesystem tools: nope. Available: read_file, write_file'):
        fs.FileSystem(root_dir=tmp_path, tools=['read_file', 'nope']).get_toolset()


def test_constants(fs: ModuleType) -> None:
    assert fs.DEFAULT_TOOL_NAMES == (
        'read_file', 'write_file', 'edit_file', 'list_directory', 'search_files', 'find_files', 'create_directory', 'file_info',
    )
    assert fs.FILE_SYSTEM_TOOL_NAMES[: len(fs.DEFAULT_TOOL_NAMES) + 2] == (*fs.DEFAULT_TOOL_NAMES, 'list_files', 'grep')
    assert fs.FILE_SYSTEM_TOOL_NAMES[len(fs.DEFAULT_TOOL_NAMES) + 2 :] == (() if REFERENCE else ('apply_patch',))
    assert fs.READ_ONLY_TOOL_NAMES == frozenset(
        {'read_file', 'list_directory', 'search_files', 'find_files', 'file_info', 'list_files', 'grep'}
    )
    assert (fs.MAX_EVENT_DIFF_CHARS, fs.MAX_DIFF_SOURCE_CHARS, fs.FILE_SYSTEM_EVENTS) == (8192, 32768, 'file_system')
    document_default = ['.git/*', '.env', '.env.*', '*.pem', '*.key', '**/secrets*']
    if REFERENCE:
        assert fs.FileSystem().protected_patterns == document_default
    else:
        # 0.62.0's surface: `protected_patterns` is the deprecated alias (None unless given); the
        # document's default still applies under the document's contract.
        assert list(fs.DEFAULT_PROTECTED_PATTERNS) == document_default


async def test_default_tools_and_schemas(fs: ModuleType, tmp_path: Path) -> None:
    t = await run_tools([fs.FileSystem(root_dir=tmp_path)], [])
    assert [d.name for d in t.tools] == list(fs.DEFAULT_TOOL_NAMES)
    schemas = {d.name: d.parameters_json_schema for d in t.tools}
    assert schemas['read_file']['properties']['offset'] == {
        'default': 0, 'description': 'Zero-based line offset to start reading from.', 'type': 'integer',
    }
    assert set(schemas['edit_file']['properties']) == {'path', 'old_text', 'new_text', 'replacements', 'expected_hash'}
    assert schemas['edit_file']['$defs']['Replacement']['required'] == ['old_text', 'new_text']
    descriptions = {d.name: d.description for d in t.tools}
    assert descriptions['read_file'] == (
        '<summary>Read a text file with line numbers.</summary>\n<returns>\n'
        '<description>File content with line numbers, plus metadata header.</description>\n</returns>'
    )


async def test_read_only_and_opt_in_tools(fs: ModuleType, tmp_path: Path) -> None:
    t = await run_tools([fs.FileSystem(root_dir=tmp_path, read_only=True)], [])
    assert [d.name for d in t.tools] == ['read_file', 'list_directory', 'search_files', 'find_files', 'file_info']
    t = await run_tools([fs.FileSystem(root_dir=tmp_path, tools=['read_file', 'edit_file', 'list_files', 'grep'])], [])
    assert [d.name for d in t.tools] == ['read_file', 'edit_file', 'list_files', 'grep']
    t = await run_tools([fs.FileSystem(root_dir=tmp_path, read_only=True, tools=['write_file', 'grep'])], [])
    assert [d.name for d in t.tools] == ['grep']


async def test_unhashed_schemas(fs: ModuleType, tmp_path: Path) -> None:
    t = await run_tools([fs.FileSystem(root_dir=tmp_path, content_hashes=False)], [])
    schemas = {d.name: d.parameters_json_schema for d in t.tools}
    assert 'expected_hash' not in schemas['write_file']['properties']
    assert 'expected_hash' not in schemas['edit_file']['properties']


async def test_agent_spec_yaml(fs: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'workspace').mkdir()
    (tmp_path / 'workspace' / 'app.py').write_text('print(1)\n')
    (tmp_path / 'workspace' / 'notes.md').write_text('n\n')
    # The document's YAML, with a model that needs no provider package or key.
    (tmp_path / 'agent.yaml').write_text(
        'model: test\n'
        'capabilities:\n'
        '  - FileSystem:\n'
        '      root_dir: ./workspace\n'
        "      allowed_patterns: ['*.py', '*.toml']\n"
    )
    monkeypatch.chdir(tmp_path)
    agent = Agent.from_file('agent.yaml', custom_capability_types=[fs.FileSystem])
    t = await run_agent(agent, [('list_directory', {}), ('read_file', {'path': 'notes.md'})])
    assert t.results == ['app.py  (9 bytes)', "RETRY: Path 'notes.md' does not match any allowed pattern."]


@both_backends
async def test_direct_methods_under_asyncio_and_trio(fs: ModuleType, tree: Path) -> None:
    toolset = fs.FileSystem(root_dir=tree, content_hashes=False).get_toolset()
    assert await toolset.read_file('docs/guide.md', offset=2) == '[docs/guide.md | 3 lines]\n     3\tline 3\n'
    assert await toolset.write_file('docs/n.txt', 'n\n') == 'Wrote 2 chars (1 lines) to docs/n.txt.'
    assert await toolset.edit_file('docs/n.txt', 'n', 'm') == 'Edited docs/n.txt.'
    assert await toolset.create_directory('x/y') == 'Created directory: x/y'
    assert await toolset.list_directory('docs') == 'docs/guide.md  (21 bytes)\ndocs/n.txt  (2 bytes)'
    assert await toolset.search_files('m', path='docs') == 'docs/n.txt:1:m'
    assert await toolset.find_files('**/*.txt') == 'docs/n.txt'
    assert (await toolset.file_info('x')).startswith('path: x\ntype: directory\n')
    assert (tree / 'docs' / 'n.txt').read_text() == 'm\n'
