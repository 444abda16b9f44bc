"""One error taxonomy for every workspace backend, as pydantic-ai-harness 0.62.0 gives it (issue 20, items 2-4).

A fault is injected by a wrapper (`Faulty`) around each backend kind: an in-memory backend, a
host directory through the workspace protocol, and a commands-only shell sandbox. Whatever the
kind, and however many workspace calls were in flight (walks and searches run them concurrently),
the model sees 0.62.0's answer: a retry for what it can fix, a failed tool result for a refusal,
and `WorkspaceUnavailableError` itself for a workspace that is gone. Never an `ExceptionGroup`,
an errno or a host path. Expected texts were taken from 0.62.0 on the same scenarios; where it
prints `[Errno 13] Permission denied: '.'` we print the native path's `Permission denied: '.'`.
"""

from __future__ import annotations

import errno
import os
import posixpath
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.workspaces import (
    ReadOnlyWorkspace,
    Workspace,
    WorkspaceError,
    WorkspaceReadOnlyError,
    WorkspaceUnavailableError,
    WrapperWorkspace,
)
from pydantic_ai_harness_rs.filesystem import FileSystem
from pydantic_ai_harness_rs.filesystem._remote import NO_READLINK

from tests.backends import ProtocolLocal, ShellSandbox
from tests.filesystem.conftest import REFERENCE
from tests.memory_workspace import LinkedMemoryWorkspace, MemoryWorkspace
from tests.scripted import run_tools

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='0.36.0 has no workspaces')]

FILES = {'hello.txt': 'hi\n', 'sub/a.txt': 'needle\n', 'sub/deep/b.txt': 'needle\n'}
READ_ONLY = 'The workspace is read-only; the change was refused.'
# Built once, at import: building tool schemas parses source (`ast`), which CPython 3.11.7 can refuse
# with a spurious `SystemError` deep in an event loop's stack (fixed in 3.11.8).
TOOLSET: Any = FileSystem().get_toolset()


class Faulty(WrapperWorkspace):
    """Raises `faults[(operation, path relative to the working directory)]` instead of calling through."""

    def __init__(self, wrapped: Workspace, cwd: str, faults: dict[tuple[str, str], BaseException]) -> None:
        super().__init__(wrapped)
        self._cwd, self._faults = cwd, faults

    def _check(self, operation: str, path: str) -> None:
        fault = self._faults.get((operation, posixpath.relpath(path, self._cwd)))
        if fault is not None:
            raise fault

    async def list_dir(self, path: str) -> Any:
        self._check('list_dir', path)
        return await self.wrapped.list_dir(path)

    async def read_bytes(self, path: str) -> bytes:
        self._check('read_bytes', path)
        return await self.wrapped.read_bytes(path)

    async def write_bytes(self, path: str, data: bytes) -> None:
        self._check('write_bytes', path)
        await self.wrapped.write_bytes(path, data)

    async def make_dir(self, path: str) -> None:
        self._check('make_dir', path)
        await self.wrapped.make_dir(path)

    async def stat(self, path: str) -> Any:
        self._check('stat', path)
        return await self.wrapped.stat(path)

    async def realpath(self, path: str) -> str:
        self._check('realpath', path)
        return await self.wrapped.realpath(path)


def _on_host(tmp_path: Path, factory: Callable[[Path], Any]) -> tuple[Any, str]:
    root = tmp_path / 'ws'
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return factory(root), os.path.realpath(root)


KINDS: dict[str, Callable[[Path], tuple[Any, str]]] = {
    'memory': lambda tmp: (LinkedMemoryWorkspace(FILES, symlinks={}), '/ws'),
    'protocol-local': lambda tmp: _on_host(tmp, lambda root: ProtocolLocal(root)),
    'shell-sandbox': lambda tmp: _on_host(tmp, ShellSandbox),
}


async def _call(workspace: Any, tool: str, **args: Any) -> str:
    try:
        return await getattr(TOOLSET, tool)(**args, workspace=workspace)
    except ModelRetry as e:
        return f'RETRY: {e.message}'
    except ToolFailed as e:
        return f'FAILED: {e}'


DENIED = PermissionError(errno.EACCES, 'Permission denied')
DENIED_ROOT = PermissionError(errno.EACCES, 'Permission denied', '<cwd>')
# (name, fault, tool call, what 0.62.0's model sees)
SCENARIOS: list[tuple[str, tuple[str, str], BaseException, str, dict[str, Any], str]] = [
    ('unlistable search root', ('list_dir', '.'), DENIED, 'search_files', {'pattern': 'needle'}, "RETRY: Permission denied: '.'"),
    ('unlistable find root', ('list_dir', '.'), DENIED, 'find_files', {'pattern': '**/*.txt'}, "RETRY: Permission denied: '.'"),
    ('unlistable grep root', ('list_dir', '.'), DENIED, 'grep', {'pattern': 'needle'}, "RETRY: Permission denied: '.'"),
    ('unlistable list_files root', ('list_dir', '.'), DENIED, 'list_files', {}, "RETRY: Permission denied: '.'"),
    ('unlistable directory', ('list_dir', '.'), DENIED, 'list_directory', {}, "RETRY: Permission denied: '.'"),
    ('backend fails in a walk', ('list_dir', 'sub'), WorkspaceError('backend refused'), 'search_files', {'pattern': 'needle'}, 'FAILED: backend refused'),
    ('backend fails in a find', ('list_dir', 'sub'), WorkspaceError('backend refused'), 'find_files', {'pattern': '**/*.txt'}, 'FAILED: backend refused'),
    ('backend fails at the root', ('list_dir', '.'), WorkspaceError('backend refused'), 'search_files', {'pattern': 'needle'}, 'FAILED: backend refused'),
    ('backend fails resolving a subdirectory', ('realpath', 'sub'), WorkspaceError('backend refused'), 'search_files', {'pattern': 'needle'}, 'FAILED: backend refused'),
    ('read-only write', ('write_bytes', 'n.txt'), WorkspaceReadOnlyError('read-only mount'), 'write_file', {'path': 'n.txt', 'content': 'x'}, f'FAILED: {READ_ONLY}'),
    ('read-only mkdir', ('make_dir', 'nd'), WorkspaceReadOnlyError('read-only mount'), 'create_directory', {'path': 'nd'}, f'FAILED: {READ_ONLY}'),
    ('read-only edit', ('write_bytes', 'hello.txt'), WorkspaceReadOnlyError('read-only mount'), 'edit_file', {'path': 'hello.txt', 'old_text': 'hi', 'new_text': 'ho'}, f'FAILED: {READ_ONLY}'),
    ('refused read', ('read_bytes', 'hello.txt'), WorkspaceReadOnlyError('read-only mount'), 'read_file', {'path': 'hello.txt'}, f'FAILED: {READ_ONLY}'),
    ('denied read', ('read_bytes', 'hello.txt'), DENIED, 'read_file', {'path': 'hello.txt'}, 'RETRY: Permission denied'),
    ('removed while read', ('read_bytes', 'hello.txt'), FileNotFoundError(errno.ENOENT, 'No such file or directory'), 'read_file', {'path': 'hello.txt'}, 'Path not found: hello.txt'),
    ('removed while inspected', ('read_bytes', 'hello.txt'), FileNotFoundError(errno.ENOENT, 'No such file or directory'), 'file_info', {'path': 'hello.txt'}, 'Path not found: hello.txt'),
    ('unrepresentable write', ('write_bytes', 'n\u00e9.txt'), OSError(errno.EILSEQ, 'Illegal byte sequence'), 'write_file', {'path': 'n\u00e9.txt', 'content': 'x'}, 'RETRY: The path name contains a byte sequence the filesystem cannot represent.'),
    ('unrepresentable mkdir', ('make_dir', 'n\u00e9'), OSError(errno.EILSEQ, 'Illegal byte sequence'), 'create_directory', {'path': 'n\u00e9'}, 'RETRY: The path name contains a byte sequence the filesystem cannot represent.'),
    ('denied write', ('write_bytes', 'n.txt'), PermissionError(errno.EACCES, 'Permission denied', '<cwd>/n.txt'), 'write_file', {'path': 'n.txt', 'content': 'x'}, "RETRY: Permission denied: 'n.txt'"),
    ('denied root without a name', ('list_dir', '.'), PermissionError(), 'search_files', {'pattern': 'needle'}, "RETRY: Permission denied: '.'"),
    ('denied root with a name', ('list_dir', '.'), DENIED_ROOT, 'find_files', {'pattern': '*'}, "RETRY: Permission denied: '.'"),
    ('denied mkdir without errno', ('make_dir', 'nd'), PermissionError('<cwd>/nd'), 'create_directory', {'path': 'nd'}, "RETRY: Permission denied: 'nd'"),
]  # fmt: skip


def _with_cwd(error: BaseException, cwd: str) -> BaseException:
    """`error` with `<cwd>` in its arguments replaced by the backend's working directory (a host path)."""
    if isinstance(error, OSError) and isinstance(error.filename, str):
        return type(error)(error.errno, error.strerror, error.filename.replace('<cwd>', cwd))
    args = tuple(a.replace('<cwd>', cwd) if isinstance(a, str) else a for a in error.args)
    return type(error)(*args)


@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize(
    ('fault', 'error', 'tool', 'args', 'expected'), [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS]
)
async def test_a_backend_error_reaches_the_model_as_062_gives_it(
    tmp_path: Path,
    kind: str,
    fault: tuple[str, str],
    error: BaseException,
    tool: str,
    args: dict[str, Any],
    expected: str,
) -> None:
    backend, cwd = KINDS[kind](tmp_path)
    workspace = Faulty(Workspace(backend), cwd, {fault: _with_cwd(error, cwd)})
    result = await _call(workspace, tool, **args)
    assert result == expected
    assert cwd not in result and 'Errno' not in result


@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize(
    ('fault', 'tool', 'args'),
    [
        (('read_bytes', 'sub/a.txt'), 'search_files', {'pattern': 'needle'}),
        (('list_dir', 'sub'), 'search_files', {'pattern': 'needle'}),
        (('list_dir', 'sub'), 'find_files', {'pattern': '**/*.txt'}),
        (('read_bytes', 'hello.txt'), 'read_file', {'path': 'hello.txt'}),
    ],
)
async def test_an_unavailable_workspace_propagates_as_itself(
    tmp_path: Path, kind: str, fault: tuple[str, str], tool: str, args: dict[str, Any]
) -> None:
    backend, cwd = KINDS[kind](tmp_path)
    workspace = Faulty(Workspace(backend), cwd, {fault: WorkspaceUnavailableError('gone')})
    with pytest.raises(WorkspaceUnavailableError, match='gone'):
        await getattr(TOOLSET, tool)(**args, workspace=workspace)


async def test_in_a_run_errors_are_retries_and_failed_results_not_an_aborted_run(tmp_path: Path) -> None:
    backend = LinkedMemoryWorkspace(FILES, symlinks={})
    faults: dict[tuple[str, str], BaseException] = {
        ('list_dir', '.'): _with_cwd(DENIED_ROOT, '/ws'),
        ('realpath', 'sub'): WorkspaceError('backend refused'),
        ('write_bytes', 'n.txt'): WorkspaceReadOnlyError('read-only mount'),
    }
    t = await run_tools(
        [FileSystem()],
        [
            ('search_files', {'pattern': 'needle'}),
            ('find_files', {'pattern': '**/*.txt', 'path': 'sub'}),
            ('write_file', {'path': 'n.txt', 'content': 'x'}),
        ],
        workspace=Faulty(Workspace(backend), '/ws', faults),
    )
    assert t.results == ["RETRY: Permission denied: '.'", 'backend refused', READ_ONLY]
    assert '/ws/n.txt' not in backend.files


async def test_a_read_only_wrapper_refuses_changes_and_serves_reads() -> None:
    backend = MemoryWorkspace(FILES)
    ws = ReadOnlyWorkspace(Workspace(backend))
    assert await _call(ws, 'write_file', path='n.txt', content='x') == f'FAILED: {READ_ONLY}'
    assert await _call(ws, 'edit_file', path='hello.txt', old_text='hi', new_text='ho') == f'FAILED: {READ_ONLY}'
    assert await _call(ws, 'create_directory', path='nd') == f'FAILED: {READ_ONLY}'
    assert (await _call(ws, 'read_file', path='hello.txt')).endswith('1\thi\n')
    assert backend.files['/ws/hello.txt'] == b'hi\n' and '/ws/nd' not in backend.dirs


async def test_a_shell_without_readlink_fails_closed_naming_it(tmp_path: Path) -> None:
    root = tmp_path / 'ws'
    (root / 'real').mkdir(parents=True)
    (root / 'real' / 'a.txt').write_text('needle\n')
    (root / 'link').symlink_to('real')
    tools = tmp_path / 'bin'
    tools.mkdir()
    for name in ('sh', 'base64', 'cp', 'dd', 'find', 'mkdir', 'mv', 'rm', 'wc', 'cat', 'test'):
        found = next((Path(d, name) for d in ('/usr/bin', '/bin') if Path(d, name).exists()), None)
        if found is not None:
            (tools / name).symlink_to(found)
    ws = Workspace(ShellSandbox(root, path=str(tools)))
    assert await _call(ws, 'read_file', path='link/a.txt') == f'FAILED: {NO_READLINK}'
    assert await _call(ws, 'write_file', path='link/b.txt', content='x') == f'FAILED: {NO_READLINK}'
    assert not (root / 'real' / 'b.txt').exists()
    assert 'readlink' in NO_READLINK and 'not found' not in NO_READLINK
