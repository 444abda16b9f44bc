"""What a user inspects is what applies (issue 19): `FileSystem`'s attributes, `repr` and
`inspect.signature` show the defaults of the contract its configuration selects; a read-only
`FileSystem` refuses changes at every layer; `read_file(limit=0)` is a retry, not a loop."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.toolsets import FilteredToolset
from pydantic_ai.workspaces import LocalWorkspaceBackend
from pydantic_ai_harness_rs import FileSystem
from pydantic_ai_harness_rs.filesystem import DEFAULT_PROTECTED_PATTERNS, DEFAULT_READ_ONLY_PATTERNS

from tests.filesystem.conftest import REFERENCE
from tests.scripted import run_tools

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='our configuration surface')]

DOCUMENT_PATTERNS = ['.git/*', '.env', '.env.*', '*.pem', '*.key', '**/secrets*']
WORKSPACE_PATTERNS = ('**/.git', '**/.env', '**/.env.*', '*.pem', '*.key', '**/secrets*', '**/.pydantic-ai-harness/**')
CHARS_REPR = '<contract default: None with root_dir or no workspace, 50000 on a workspace>'
PATTERNS_REPR = (
    '<contract default: DEFAULT_PROTECTED_PATTERNS with root_dir or no workspace, '
    'DEFAULT_READ_ONLY_PATTERNS on a workspace>'
)


def test_root_dir_shows_the_documents_defaults(tmp_path: Path) -> None:
    fs = FileSystem(root_dir=tmp_path)
    assert fs.max_read_chars is None
    assert fs.read_only_patterns == DOCUMENT_PATTERNS == list(DEFAULT_PROTECTED_PATTERNS)
    assert type(fs.read_only_patterns) is list
    assert f'read_only_patterns={DOCUMENT_PATTERNS!r}, ' in repr(fs)
    assert ', max_read_chars=None, ' in repr(fs)


def test_without_root_dir_the_repr_names_both_contracts() -> None:
    fs = FileSystem()
    assert repr(fs.max_read_chars) == CHARS_REPR
    assert repr(fs.read_only_patterns) == PATTERNS_REPR
    assert f'max_read_chars={CHARS_REPR}' in repr(fs)
    assert f'read_only_patterns={PATTERNS_REPR}' in repr(fs)
    # Equal to 0.62.0's (what a workspace run, the case 0.62.0 users come from, applies).
    assert fs.max_read_chars == 50_000 and str(fs.max_read_chars) == '50000' and f'{fs.max_read_chars:,}' == '50,000'
    assert tuple(fs.read_only_patterns) == WORKSPACE_PATTERNS == DEFAULT_READ_ONLY_PATTERNS


def test_the_signature_says_the_default_depends_on_the_contract() -> None:
    parameters = inspect.signature(FileSystem).parameters
    assert repr(parameters['max_read_chars'].default) == CHARS_REPR
    assert repr(parameters['read_only_patterns'].default) == PATTERNS_REPR
    assert f"max_read_chars: 'int | None' = {CHARS_REPR}" in str(inspect.signature(FileSystem))


def test_values_given_are_shown_as_given(tmp_path: Path) -> None:
    fs = FileSystem(root_dir=tmp_path, max_read_chars=100, read_only_patterns=['*.lock'])
    assert (fs.max_read_chars, fs.read_only_patterns) == (100, ['*.lock'])
    assert FileSystem(max_read_chars=None).max_read_chars is None


async def test_the_shown_document_defaults_are_the_ones_applied(tmp_path: Path) -> None:
    """`root_dir` given: no read cap and the document's patterns, on the host and on a LocalWorkspace."""
    (tmp_path / 'big.txt').write_text(('y' * 99 + '\n') * 600)  # 60,000 chars: over 0.62.0's cap
    (tmp_path / '.git').mkdir()
    fs = FileSystem(root_dir=tmp_path, max_read_lines=5000, content_hashes=False)
    calls = [('read_file', {'path': 'big.txt'}), ('write_file', {'path': '.git/config', 'content': 'x'})]
    for capabilities in ([fs], [LocalWorkspace(tmp_path), fs]):
        t = await run_tools(capabilities, calls)
        assert t.results[0].count('\n') == 601  # header + every line: no 50,000-char cap
        assert t.results[1] == "RETRY: Path '.git/config' is protected (matches '.git/*')."


async def test_a_read_only_file_system_refuses_changes_at_every_layer(tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('one\n')
    toolset = FileSystem(root_dir=tmp_path, read_only=True).get_toolset()
    assert isinstance(toolset, FilteredToolset)  # as both references return it
    inner = toolset.wrapped
    refused = 'This FileSystem is read-only; the change was refused.'
    for call in (
        lambda: inner.write_file('a.txt', 'two\n'),
        lambda: inner.write_file('new.txt', 'two\n'),
        lambda: inner.edit_file('a.txt', 'one', 'two'),
        lambda: inner.create_directory('d'),
        lambda: inner.write_file('a.txt', 'two\n', workspace=LocalWorkspaceBackend(tmp_path)),
    ):
        with pytest.raises(ToolFailed) as failed:
            await call()
        assert failed.value.message == refused
    assert sorted(p.name for p in tmp_path.iterdir()) == ['a.txt']
    assert (tmp_path / 'a.txt').read_text() == 'one\n'
    assert await inner.read_file('a.txt') == '[a.txt | 1 lines | hash:2c8b08da5ce6]\n     1\tone\n'
    # The inner toolset offers only the read tools too.
    t = await run_tools([FileSystem(root_dir=tmp_path, read_only=True)], [])
    assert [d.name for d in t.tools] == ['read_file', 'list_directory', 'search_files', 'find_files', 'file_info']


@pytest.mark.parametrize('limit', [0, -1])
async def test_limit_zero_is_a_retry_not_a_loop(tmp_path: Path, limit: int) -> None:
    (tmp_path / 'f.txt').write_text('a\nb\nc\n')
    toolset = FileSystem(root_dir=tmp_path).get_toolset()
    with pytest.raises(ModelRetry, match=rf'^limit must be >= 1, got {limit}\.$'):
        await toolset.read_file('f.txt', limit=limit)
    with pytest.raises(ModelRetry, match=rf'^limit must be >= 1, got -1{"0" * 40}\.$'):
        await toolset.read_file('f.txt', limit=-(10**40))
    # 0.62.0's contract already refused it, in its words.
    with pytest.raises(ModelRetry, match=r'^limit must be at least 1\.$'):
        await FileSystem().get_toolset().read_file('f.txt', limit=limit, workspace=LocalWorkspaceBackend(tmp_path))
