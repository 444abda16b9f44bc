"""What a walk or search through the workspace protocol could not read is named as on a host
directory (issue 20).

- A subdirectory the backend cannot list (`list_dir` raises `PermissionError`/`OSError` below the
  walk's start) no longer vanishes from `search_files`, `grep`, `list_files` and `find_files`:
  each result ends with the host walkers' `[1 path could not be read (Permission denied): locked]`,
  the reason taken from the error's errno (or its class), and `report_skipped` counts it. A
  `WorkspaceUnavailableError` still propagates; a `WorkspaceError` still fails the call.
- `grep`'s note shows a name that is not UTF-8 escaped as every listing shows it
  (`'bad\\udcff.txt'`, then the escaped-names note), not as raw marked text, and gives the
  reason (`(Permission denied)`) as the host `grep` does.

Tests run as root, where `chmod 0` denies nothing: faults are injected by a wrapper (`Faulty`) on
every protocol backend kind and compared with the exact text the host walkers give; one test
compares with a real mode-000 directory in a child without `CAP_DAC_OVERRIDE`.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic_ai_harness_rs
import pytest
from pydantic_ai.workspaces import ReadOnlyWorkspace, Workspace, WorkspaceError, WorkspaceUnavailableError
from pydantic_ai_harness_rs.filesystem import FileSystem

from tests.backends import ProtocolLocal, ShellSandbox
from tests.filesystem.conftest import REFERENCE
from tests.filesystem.test_backend_errors import Faulty, _call
from tests.filesystem.test_os_errors import _unprivileged
from tests.memory_workspace import MemoryWorkspace

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='0.36.0 has no workspaces')]

REPO = Path(__file__).parents[2]
TREE = {'a.txt': 'alpha\n', 'locked/in.txt': 'alpha\n', 'sub/b.txt': 'alpha\n'}
ESCAPED = (
    '[names holding control characters or bytes that are not UTF-8, or starting with a quote, are shown as '
    "Python's repr() shows them, quoted and escaped; give such a name to a tool as the string it stands for]"
)
CALLS: list[tuple[str, dict[str, Any]]] = [
    ('search_files', {'pattern': 'alpha'}),
    ('grep', {'pattern': 'alpha'}),
    ('list_files', {}),
    ('find_files', {'pattern': '**'}),
]


def _host(tmp_path: Path) -> Path:
    root = tmp_path / 'ws'
    for name, text in TREE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _kind(kind: str, tmp_path: Path) -> tuple[Any, str]:
    if kind == 'memory':
        return Workspace(MemoryWorkspace(TREE)), '/ws'
    if kind == 'read-only-memory':
        return ReadOnlyWorkspace(Workspace(MemoryWorkspace(TREE))), '/ws'
    root = _host(tmp_path)
    backend = ProtocolLocal(root) if kind == 'protocol-local' else ShellSandbox(root)
    return Workspace(backend), os.path.realpath(root)


KINDS = ['memory', 'read-only-memory', 'protocol-local', 'shell-sandbox']


def _expected(note: str, counted: bool) -> list[str]:
    tail = f'\n{note}' + ('\n[skipped: 1 path that could not be read]' if counted else '')
    return [
        f'a.txt:1:alpha\nsub/b.txt:1:alpha{tail}',
        f'a.txt:1:alpha\nsub/b.txt:1:alpha{tail}',
        f'a.txt\nsub/b.txt{tail}',
        f'a.txt\nlocked/\nsub/\nsub/b.txt{tail}',
    ]


@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize('report_skipped', [False, True])
@pytest.mark.parametrize(
    ('error', 'reason'),
    [
        (PermissionError(errno.EACCES, 'Permission denied'), 'Permission denied'),
        (PermissionError('locked'), 'Permission denied'),  # no errno: the class gives it
        (OSError(errno.EIO, 'Input/output error'), 'Input/output error'),
    ],
    ids=['errno', 'class', 'eio'],
)
async def test_an_unlistable_subdirectory_is_named_and_counted_as_on_a_host_directory(
    tmp_path: Path, kind: str, report_skipped: bool, error: OSError, reason: str
) -> None:
    inner, cwd = _kind(kind, tmp_path)
    workspace = Faulty(inner, cwd, {('list_dir', 'locked'): error})
    toolset = FileSystem(report_skipped=report_skipped).get_toolset()
    got = [await getattr(toolset, tool)(**args, workspace=workspace) for tool, args in CALLS]
    assert got == _expected(f'[1 path could not be read ({reason}): locked]', report_skipped)


@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize(('tool', 'args'), CALLS)
async def test_an_unlistable_subdirectory_still_propagates_workspace_errors(
    tmp_path: Path, kind: str, tool: str, args: dict[str, Any]
) -> None:
    inner, cwd = _kind(kind, tmp_path)
    gone = Faulty(inner, cwd, {('list_dir', 'locked'): WorkspaceUnavailableError('gone')})
    with pytest.raises(WorkspaceUnavailableError, match='gone'):
        await _call(gone, tool, **args)
    refused = Faulty(inner, cwd, {('list_dir', 'locked'): WorkspaceError('backend refused')})
    assert await _call(refused, tool, **args) == 'FAILED: backend refused'


async def test_grep_names_an_unreadable_file_escaped_with_its_reason(tmp_path: Path) -> None:
    root = tmp_path / 'ws'
    root.mkdir()
    (root / 'ok.txt').write_text('needle\n')
    (root / 'secret.txt').write_text('needle\n')
    with open(os.path.join(os.fsencode(root), b'bad\xff.txt'), 'wb') as f:
        f.write(b'needle\n')
    cwd = os.path.realpath(root)
    workspace = Faulty(
        Workspace(ProtocolLocal(root)),
        cwd,
        {
            ('read_bytes', 'bad\udcff.txt'): PermissionError(errno.EACCES, 'Permission denied'),
            ('read_bytes', 'secret.txt'): PermissionError(errno.EACCES, 'Permission denied'),
        },
    )
    assert await _call(workspace, 'grep', pattern='needle') == (
        "ok.txt:1:needle\n[2 paths could not be read (Permission denied): 'bad\\udcff.txt', secret.txt]\n" + ESCAPED
    )
    assert await _call(workspace, 'grep', pattern='needle', path='secret.txt') == (
        'No matches found.\n[1 path could not be read (Permission denied): secret.txt]'
    )


CHILD = r"""
import asyncio, json, sys
from pydantic_ai.workspaces import LocalWorkspaceBackend
from pydantic_ai_harness_rs.filesystem import FileSystem
from tests.backends import ProtocolLocal

CALLS = json.loads(sys.argv[2])

async def main():
    out = {}
    for name, backend in [('local', LocalWorkspaceBackend(sys.argv[1])), ('protocol', ProtocolLocal(sys.argv[1]))]:
        for counted in (False, True):
            toolset = FileSystem(report_skipped=counted).get_toolset()
            out[f'{name} {counted}'] = [await getattr(toolset, t)(**a, workspace=backend) for t, a in CALLS]
    print(json.dumps(out))

asyncio.run(main())
"""


def test_a_mode_000_directory_reads_the_same_through_the_protocol_as_locally(tmp_path: Path) -> None:
    root = _host(tmp_path)
    script = tmp_path / 'child.py'
    script.write_text(CHILD)
    os.chmod(root / 'locked', 0)
    try:
        proc = subprocess.run(
            _unprivileged([sys.executable, str(script), str(root), json.dumps(CALLS)]),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
            # The tree under test and `tests` importable, nothing that shadows the stdlib (`tests/typing`).
            env={
                **os.environ,
                'PYTHONPATH': os.pathsep.join([str(Path(pydantic_ai_harness_rs.__file__).parents[1]), str(REPO)]),
            },
        )
    finally:
        os.chmod(root / 'locked', 0o755)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    note = '[1 path could not be read (Permission denied): locked]'
    for counted in (False, True):
        assert out[f'protocol {counted}'] == out[f'local {counted}'] == _expected(note, counted)
