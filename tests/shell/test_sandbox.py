"""`Shell(sandbox=..., network=False)`: Landlock confinement of local commands, tried for real."""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.exceptions import UserError
from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.shell import Shell

from .conftest import run_calls
from .test_protocol_backend import SandboxBackend

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(_core.sandbox_support(False)[1] is not None, reason='no Landlock with TCP rules here'),
]


def rc(command: str, **kwargs: object) -> tuple[str, dict[str, object]]:
    return ('run_command', {'command': command, **kwargs})


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / 'outside'
    path.mkdir()
    return path


def _escapes(outside: Path) -> list[str]:
    """Commands that each try to create a file in `outside`: `denied` when refused, else `escaped`."""
    attempts = [
        f'echo x > {outside}/direct',
        'echo x > ../outside/dotdot',
        'echo x > link/symlink',
        f'sh -c \'sh -c "echo x > {outside}/grandchild"\'',
        f'(sleep 0.1; touch {outside}/background) & wait $!',
        f'mkdir {outside}/dir',
        f'mv inside.txt {outside}/moved',
    ]
    return [f'( {a} ) 2>/dev/null && echo escaped || echo denied' for a in attempts]


async def test_workspace_write_confines_writes(ws: Path, outside: Path) -> None:
    (ws / 'inside.txt').write_text('keep')
    (ws / 'link').symlink_to(outside)
    calls = [rc('echo ok > new.txt && cat new.txt'), *(rc(c) for c in _escapes(outside))]
    calls.append(rc('f=$(mktemp) && echo t > "$f" && cat "$f" && case "$TMPDIR" in /tmp|"") echo shared;; esac'))
    results = await run_calls([LocalWorkspace(ws), Shell(sandbox='workspace-write')], calls)
    assert results == [
        ('return', '[stdout]\nok\n'),
        *[('return', '[stdout]\ndenied\n')] * 7,
        ('return', '[stdout]\nt\n'),
    ]
    assert sorted(p.name for p in outside.iterdir()) == []
    assert (ws / 'inside.txt').read_text() == 'keep'


async def test_without_sandbox_the_escapes_succeed(ws: Path, outside: Path) -> None:
    """The same escapes without the field: proof that the sandboxed test can fail."""
    (ws / 'inside.txt').write_text('keep')
    (ws / 'link').symlink_to(outside)
    results = await run_calls([LocalWorkspace(ws), Shell(denied_commands=[])], [rc(c) for c in _escapes(outside)])
    assert results == [('return', '[stdout]\nescaped\n')] * 7
    assert sorted(p.name for p in outside.iterdir()) == [
        'background',
        'dir',
        'direct',
        'dotdot',
        'grandchild',
        'moved',
        'symlink',
    ]


async def test_background_jobs_and_shell_tool_are_confined(ws: Path, outside: Path) -> None:
    shell = Shell(sandbox='workspace-write')
    results = await run_calls(
        [LocalWorkspace(ws), shell],
        [
            ('start_command', {'command': f'echo x > {outside}/job; echo in > job.txt; echo done'}),
        ],
    )
    command_id = results[0][1].rsplit('ID: ', 1)[1]
    import anyio

    for _ in range(100):
        if (ws / 'job.txt').exists():
            break
        await anyio.sleep(0.05)
    [(_, text)] = await run_calls([LocalWorkspace(ws), shell], [('stop_command', {'command_id': command_id})])
    assert 'Permission denied' in text and 'done' in text, text
    assert (ws / 'job.txt').read_text() == 'in\n'
    assert not (outside / 'job').exists()

    persistent = Shell(sandbox='workspace-write', tools=['shell'])
    [(_, text)] = await run_calls(
        [LocalWorkspace(ws), persistent], [('shell', {'command': f'echo x > {outside}/p || echo denied'})]
    )
    assert 'denied' in text and '"exit_code": 0' in text, text
    assert not (outside / 'p').exists()


async def test_read_only_writes_only_the_temp_dir(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(sandbox='read-only')],
        [
            rc('echo x > here.txt || echo denied'),
            rc('echo t > "$TMPDIR/t" && cat "$TMPDIR/t"'),
            rc('ls'),
        ],
    )
    assert 'denied' in results[0][1]
    assert results[1][1] == '[stdout]\nt\n'
    assert not (ws / 'here.txt').exists()


@pytest.fixture
def listener() -> int:
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen()
    port = server.getsockname()[1]

    def accept() -> None:
        try:
            while True:
                conn, _ = server.accept()
                conn.sendall(b'hello')
                conn.close()
        except OSError:
            return

    threading.Thread(target=accept, daemon=True).start()
    yield port
    server.close()


def _connect(port: int) -> str:
    return (
        f"{sys.executable} -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=5); "
        f'print(s.recv(5).decode())" 2>&1 | tail -1'
    )


async def test_network_false_denies_loopback(ws: Path, listener: int) -> None:
    allowed = await run_calls([LocalWorkspace(ws), Shell(sandbox='workspace-write')], [rc(_connect(listener))])
    assert allowed == [('return', '[stdout]\nhello\n')]
    for shell in (Shell(sandbox='workspace-write', network=False), Shell(network=False)):
        [(_, text)] = await run_calls([LocalWorkspace(ws), shell], [rc(_connect(listener))])
        assert 'PermissionError' in text, text


async def test_no_landlock_refuses_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_core, 'sandbox_support', lambda network: (0, 'the kernel does not provide Landlock'))
    with pytest.raises(ValueError, match=r"Shell\(sandbox='read-only'\) cannot be enforced: the kernel does not"):
        Shell(sandbox='read-only')
    with pytest.raises(ValueError, match=r'Shell\(network=False\) cannot be enforced'):
        Shell(network=False)
    Shell()


async def test_bad_mode_refused() -> None:
    with pytest.raises(ValueError, match='sandbox must be None'):
        Shell(sandbox='write-everything')  # type: ignore[arg-type]


async def test_non_local_workspace_refused_at_run_start(ws: Path) -> None:
    with pytest.raises(UserError, match=r'`Shell\(sandbox=...\)` confines commands on a `LocalWorkspace` only'):
        await run_calls([Shell(sandbox='workspace-write')], [rc('true')], workspace=SandboxBackend(ws))
