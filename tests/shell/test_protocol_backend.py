"""A workspace that is not `LocalWorkspace` goes through `ctx.workspace.run(...)` with the same results."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.workspaces import CommandResult, FileEntry, LocalWorkspaceBackend
from pydantic_ai_harness_rs.shell import Shell
from pydantic_ai_harness_rs.shell._workspace import local_backend

from .conftest import live_processes_matching, norm, rc, run_calls

pytestmark = pytest.mark.anyio


class SandboxBackend:
    """A backend of its own class (not `LocalWorkspaceBackend`), delegating to one on a directory.

    It stands for a sandbox provider: Shell can only reach it through the workspace protocol.
    """

    def __init__(self, working_dir: Path) -> None:
        self._inner = LocalWorkspaceBackend(working_dir)
        self.runs = 0

    @property
    def ref(self) -> Any:
        return self._inner.ref

    async def working_dir(self) -> str:
        return await self._inner.working_dir()

    async def run(
        self, command: Any, *, shell: bool = False, env: Mapping[str, str] | None = None, timeout: float | None = None
    ) -> CommandResult:
        self.runs += 1
        return await self._inner.run(command, shell=shell, env=env, timeout=timeout)

    async def read_bytes(self, path: str) -> bytes:
        return await self._inner.read_bytes(path)

    async def write_bytes(self, path: str, data: bytes) -> None:
        await self._inner.write_bytes(path, data)

    async def stat(self, path: str) -> FileEntry:
        return await self._inner.stat(path)

    async def list_dir(self, path: str) -> Sequence[FileEntry]:
        return await self._inner.list_dir(path)

    async def make_dir(self, path: str) -> None:
        await self._inner.make_dir(path)

    async def remove(self, path: str) -> None:
        await self._inner.remove(path)

    async def exists(self, path: str) -> bool:
        return await self._inner.exists(path)

    async def realpath(self, path: str) -> str:
        return await self._inner.realpath(path)


CALLS = [
    rc('echo hi; echo err >&2; exit 3'),
    rc('true'),
    rc("printf 'a\\377b\\n'"),
    rc('echo so-far; sleep 30', timeout_seconds=0.5),
    rc('rm -rf x'),
    rc('vi x'),
    rc('echo $EXTRA $OPENAI_API_KEY'),
    rc('cd sub && pwd'),
    rc('pwd'),
    rc('echo x', timeout_seconds=0),
]


async def _run_both(
    tmp_path: Path, calls: list[Any], **shell_kwargs: Any
) -> tuple[list[Any], list[Any], SandboxBackend]:
    out = []
    backend = None
    for name in ('local', 'sandbox'):
        ws = tmp_path / name
        ws.mkdir()
        (ws / 'sub').mkdir()
        shell = Shell(**shell_kwargs)
        if name == 'local':
            results = await run_calls([LocalWorkspace(ws), shell], calls)
        else:
            backend = SandboxBackend(ws)
            results = await run_calls([shell], calls, workspace=backend)
        out.append([(kind, norm(text, ws)) for kind, text in results])
    assert backend is not None
    return out[0], out[1], backend


async def test_sandbox_is_not_run_natively(tmp_path: Path) -> None:
    from pydantic_ai.workspaces import Workspace

    assert local_backend(Workspace(SandboxBackend(tmp_path))) is None
    assert local_backend(Workspace(LocalWorkspaceBackend(tmp_path))) is not None


async def test_run_command_same_results(tmp_path: Path) -> None:
    local, sandbox, backend = await _run_both(
        tmp_path, CALLS, env={'EXTRA': 'e', 'OPENAI_API_KEY': 'k'}, denied_env_patterns=['OPENAI_*']
    )
    assert local == sandbox
    assert backend.runs >= 7
    assert local[0] == ('return', '[stdout]\nhi\n\n[stderr]\nerr\n\n[exit code: 3]')
    assert local[3] == ('return', '[stdout]\nso-far\n\n[Command timed out after 0.5s]')


async def test_persist_cwd_same_results(tmp_path: Path) -> None:
    calls = [
        rc('cd sub'),
        rc('pwd'),
        rc('cd ..; exit 0'),
        rc('pwd'),
        rc('cd sub; false'),
        rc('pwd'),
    ]
    local, sandbox, _ = await _run_both(tmp_path, calls, persist_cwd=True)
    assert local == sandbox
    assert [text for _, text in local] == [
        '(no output)',
        '[stdout]\n<ws>/sub\n',
        '(no output)',
        '[stdout]\n<ws>\n',
        '(no output)\n[exit code: 1]',
        '[stdout]\n<ws>\n',
    ]


async def test_file_limit_same_results(tmp_path: Path) -> None:
    calls = [
        rc("printf '%5000s' x > big"),
        rc('wc -c < big'),
        rc('echo ok'),
    ]
    local, sandbox, _ = await _run_both(tmp_path, calls, max_file_bytes=1000)
    assert local == sandbox
    assert local[1] == ('return', '[stdout]\n1024\n')


async def test_background_same_results(tmp_path: Path) -> None:
    outs = []
    for name in ('local', 'sandbox'):
        ws = tmp_path / name
        ws.mkdir()
        caps: list[Any] = [Shell()] if name == 'sandbox' else [LocalWorkspace(ws), Shell()]
        kwargs: dict[str, Any] = {'workspace': SandboxBackend(ws)} if name == 'sandbox' else {}
        marker = f'sleep 5001{len(name)}'
        [(_, started)] = await run_calls(
            caps, [('start_command', {'command': f'echo up; echo e >&2; {marker}'})], **kwargs
        )
        cid = re.search(r'ID: (\w+)', started).group(1)  # type: ignore[union-attr]
        log = ws / '.pydantic-ai-harness' / 'shell' / cid / 'stderr.log'
        while log.read_text() != 'e\n':
            await anyio.sleep(0.01)
        caps = [Shell()] if name == 'sandbox' else [LocalWorkspace(ws), Shell()]
        kwargs = {'workspace': SandboxBackend(ws)} if name == 'sandbox' else {}
        results = await run_calls(
            caps,
            [('check_command', {'command_id': cid}), ('stop_command', {'command_id': cid})],
            prefix='later',
            **kwargs,
        )
        assert live_processes_matching(marker) == []
        assert not (ws / '.pydantic-ai-harness' / 'shell' / cid).exists()
        outs.append([(norm(started, ws).replace(marker, '<marker>'), *[norm(t, ws) for _, t in results])])
    assert outs[0] == outs[1]
    assert outs[0][0][1:] == (
        '[stdout]\nup\n\n[stderr]\ne\n\n[status: running]',
        '[stdout]\nup\n\n[stderr]\ne\n\n[stopped]\n[exit code: 143]',
    )


async def test_shell_tool_same_results(tmp_path: Path) -> None:
    calls = [('shell', {'command': 'echo one; echo two >&2; exit 5'})]
    local, sandbox, _ = await _run_both(tmp_path, calls, tools=['shell'])
    assert local == sandbox
    assert local[0][1].endswith('"exit_code": 5}')
    status = json.loads(local[0][1].splitlines()[-1].replace('<pid>', '1'))
    assert status == {'pid': 1, 'exit_code': 5}
