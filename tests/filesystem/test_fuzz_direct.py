"""Every direct toolset method of FileSystem, fuzzed with hypothesis on every backend kind (issue 19).

Property: a call returns a result or raises `ModelRetry` (or `ToolFailed`, a change refused on a
read-only workspace or toolset), never anything else (no `TypeError` out of
a binding, no `OverflowError`, no crash), and nothing outside the root changes. Every argument is
fuzzed: any text (lone surrogates, NULs, newlines included), huge and negative integers, `None`
where the signature allows it. Backends: the document contract (`root_dir=`), 0.62.0's contract on
a `LocalWorkspaceBackend`, the workspace protocol on an in-memory backend, a read-only workspace,
`FileSystem(read_only=True)`'s toolset, and Pydantic AI's `DurableWorkspace` wrapper (in-process,
outside any workflow, where it passes calls through).

Derandomized with modest `max_examples`, so CI sees the same inputs every time and the module
stays fast (a few seconds).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

hypothesis = pytest.importorskip('hypothesis', reason="the fuzz tests need hypothesis (pip install '.[test]')")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from pydantic_ai.exceptions import ModelRetry, ToolFailed  # noqa: E402
from pydantic_ai.workspaces import LocalWorkspaceBackend, ReadOnlyWorkspace, Workspace  # noqa: E402
from pydantic_ai_harness_rs import FileSystem  # noqa: E402

from tests.filesystem.conftest import REFERENCE  # noqa: E402
from tests.memory_workspace import MemoryWorkspace  # noqa: E402

pytestmark = pytest.mark.skipif(REFERENCE, reason='fuzzes our direct methods and backends')

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_INTERESTING_PATHS = [
    'a.txt', 'sub/b.txt', 'sub', '.', '', '..', '../outside/secret.txt', '../outside', '/', '/etc/passwd',
    'a.txt/x', 'missing/deeper/c.txt', '.git/config', '.env', 'sub/../a.txt', '\x00', 'a\nb', '\ud800.txt',
    '~', '*', '**', 'link', 'link/secret.txt',
]  # fmt: skip
texts = st.text(max_size=40)
paths = st.one_of(st.sampled_from(_INTERESTING_PATHS), texts)
globs = st.one_of(st.none(), st.sampled_from(['*.txt', '**', '[', '{a,b', '../*', '/abs/*', '\ud800']), texts)
ints = st.one_of(
    st.integers(min_value=-5, max_value=10),
    st.sampled_from([2**31, 2**62, 2**63, 2**64, 10**40, -(2**63) - 1, -(10**40)]),
    st.integers(),
)
contents = st.one_of(texts, st.sampled_from(['', 'x\r\ny\n', '\ud800', 'a\x00b', 'one\ntwo\n']))
hashes = st.one_of(st.none(), st.sampled_from(['', '000000000000', 'zz']), texts)
patterns = st.one_of(st.sampled_from(['(', 'a+', '(a+)+$', '\\N{BOGUS}', '\\N{LATIN SMALL LETTER A}', '[z-a]']), texts)

# (method name, strategy of its keyword arguments)
CALLS: list[tuple[str, st.SearchStrategy[dict[str, Any]]]] = [
    (
        'read_file',
        st.fixed_dictionaries({'path': paths, 'offset': ints, 'limit': st.one_of(st.none(), ints), 'column': ints}),
    ),
    ('write_file', st.fixed_dictionaries({'path': paths, 'content': contents, 'expected_hash': hashes})),
    (
        'edit_file',
        st.fixed_dictionaries({'path': paths, 'old_text': contents, 'new_text': contents, 'expected_hash': hashes}),
    ),
    ('create_directory', st.fixed_dictionaries({'path': paths})),
    ('list_directory', st.fixed_dictionaries({'path': paths})),
    ('search_files', st.fixed_dictionaries({'pattern': patterns, 'path': paths, 'include_glob': globs})),
    ('find_files', st.fixed_dictionaries({'pattern': st.one_of(globs.filter(bool), texts), 'path': paths})),
    ('list_files', st.fixed_dictionaries({'path': paths, 'glob': globs})),
    (
        'grep',
        st.fixed_dictionaries(
            {
                'pattern': patterns,
                'path': paths,
                'glob': globs,
                'file_type': st.one_of(st.none(), st.sampled_from(['py', 'rust', 'nope']), texts),
                'ignore_case': st.booleans(),
                'literal': st.booleans(),
                'context': ints,
            }
        ),
    ),
    ('file_info', st.fixed_dictionaries({'path': paths})),
]
TOOLS = ['read_file', 'write_file', 'edit_file', 'list_directory', 'search_files', 'find_files']
TOOLS += ['create_directory', 'file_info', 'list_files', 'grep']


def _snapshot(directory: Path) -> dict[str, str]:
    """Every entry below `directory` with its kind, mode and content hash."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else b''
            found[str(path.relative_to(directory))] = f'{info.st_mode:o}:{hashlib.sha256(data).hexdigest()}'
    return found


class _Durability:
    """The least a `DurableWorkspace` asks of its durability capability, outside a workflow."""

    engine_name = 'test'
    durable_unit_plural = 'units'
    durable_unit_noun = 'a unit'
    in_durable_context = False


def _durable(backend: Any) -> Any:
    from pydantic_ai.durable_exec._workspace import DurableWorkspace

    return DurableWorkspace(Workspace(backend), durability=_Durability(), ctx=None)  # pyright: ignore[reportArgumentType]


BACKENDS = ['document', 'local-workspace', 'memory', 'read-only-workspace', 'read-only-field', 'durable']


@pytest.fixture
def tree() -> Iterator[Path]:
    """`base/root` (the tree the tools see, with a symlink out) beside `base/outside` (never touched)."""
    base = Path(tempfile.mkdtemp(prefix='harness-rs-fuzz-'))
    root, outside = base / 'root', base / 'outside'
    (root / 'sub').mkdir(parents=True)
    outside.mkdir()
    (outside / 'secret.txt').write_text('secret\n')
    (root / 'a.txt').write_text('alpha\nbeta\n')
    (root / 'sub' / 'b.txt').write_text('x\r\ny\n')
    (root / '.env').write_text('KEY=1\n')
    (root / 'link').symlink_to(outside)
    yield root
    for dirpath, dirnames, _ in os.walk(base):
        for name in dirnames:
            os.chmod(Path(dirpath, name), 0o755)
    shutil.rmtree(base, ignore_errors=True)


def _caller(kind: str, root: Path) -> Callable[[str, dict[str, Any]], Awaitable[Any]]:
    """How a direct call of the toolset runs on backend `kind`."""
    if kind == 'document':
        toolset: Any = FileSystem(root_dir=root, tools=TOOLS, max_line_chars=50).get_toolset()
        workspace: Any = None
    elif kind == 'read-only-field':
        toolset = FileSystem(root_dir=root, tools=TOOLS, read_only=True).get_toolset().wrapped
        workspace = None
    else:
        toolset = FileSystem(tools=TOOLS).get_toolset()
        workspace = {
            'local-workspace': lambda: LocalWorkspaceBackend(root),
            'memory': lambda: MemoryWorkspace({'a.txt': 'alpha\nbeta\n', 'sub/b.txt': 'x\r\ny\n', '.env': 'K=1\n'}),
            'read-only-workspace': lambda: ReadOnlyWorkspace(LocalWorkspaceBackend(root)),
            'durable': lambda: _durable(LocalWorkspaceBackend(root)),
        }[kind]()

    async def call(name: str, arguments: dict[str, Any]) -> Any:
        method = getattr(toolset, name)
        if workspace is not None:
            arguments = {**arguments, 'workspace': workspace}
        return await method(**arguments)

    return call


@pytest.mark.parametrize('kind', BACKENDS)
@pytest.mark.parametrize('name', [name for name, _ in CALLS])
def test_a_direct_call_returns_or_asks_for_a_retry(tree: Path, kind: str, name: str) -> None:
    strategy = dict(CALLS)[name]
    call = _caller(kind, tree)
    outside = tree.parent / 'outside'
    before = _snapshot(outside)
    loop = asyncio.new_event_loop()

    @FUZZ
    @given(arguments=strategy)
    def check(arguments: dict[str, Any]) -> None:
        try:
            result = loop.run_until_complete(call(name, arguments))
        except (ModelRetry, ToolFailed):
            return
        assert isinstance(result, (str, list)), result

    try:
        check()
    finally:
        loop.close()
    assert _snapshot(outside) == before


@pytest.mark.parametrize('kind', ['document', 'local-workspace', 'memory', 'durable'])
@pytest.mark.parametrize('where', ['old_text', 'new_text'])
def test_a_lone_surrogate_in_an_edit_is_a_retry(tree: Path, kind: str, where: str) -> None:
    """The found input: `TypeError: failed to extract enum PyReplacement` from the binding."""
    call = _caller(kind, tree)
    arguments = {'path': 'a.txt', 'old_text': 'alpha', 'new_text': 'ALPHA', where: 'al\ud800pha'}
    with pytest.raises(ModelRetry, match='surrogates not allowed'):
        asyncio.run(call('edit_file', arguments))
    assert (tree / 'a.txt').read_text() == 'alpha\nbeta\n'
