"""`Shell(sandbox=..., network=False)`: Landlock confinement of local commands, tried for real."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.exceptions import UserError
from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.shell import Shell

from .conftest import live_processes_matching, run_calls
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


# Issue 19: signals and UNIX sockets. Landlock's scopes (ABI 6) keep a sandboxed command from
# signalling a process outside it and, without the network, from reaching an abstract UNIX socket
# made outside it; connecting to a pathname socket is governed from ABI 9 (`RESOLVE_UNIX`) only.
ABI = _core.sandbox_support(True)[0]


@pytest.fixture
def host_sleep() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(['sleep', '60'])
    yield process
    process.kill()
    process.wait()


@pytest.mark.skipif(ABI < 6, reason='signals are not confined before Landlock ABI 6 (documented)')
@pytest.mark.parametrize(
    'settings', [{'sandbox': 'read-only'}, {'sandbox': 'workspace-write'}, {'network': False}], ids=str
)
async def test_a_sandboxed_command_cannot_signal_a_host_process(
    ws: Path, host_sleep: subprocess.Popen[bytes], settings: dict[str, Any]
) -> None:
    command = f'kill {host_sleep.pid} 2>/dev/null && echo killed || echo refused; sleep 5 & kill $! && echo own'
    results = await run_calls([LocalWorkspace(ws), Shell(**settings)], [rc(command)])
    assert results == [('return', '[stdout]\nrefused\nown\n')]
    assert host_sleep.poll() is None


async def test_without_a_sandbox_the_host_process_is_killed(ws: Path, host_sleep: subprocess.Popen[bytes]) -> None:
    """The same command ends the process when nothing confines it: the test above can fail."""
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc(f'kill {host_sleep.pid} && echo killed')])
    assert results == [('return', '[stdout]\nkilled\n')]
    assert host_sleep.wait() == -signal.SIGTERM


@contextlib.contextmanager
def unix_server(address: str | bytes) -> Iterator[None]:
    """A UNIX stream server at `address` (a path, or `\\0name` for an abstract socket) that says `hello`."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen()

    def accept() -> None:
        try:
            while True:
                conn, _ = server.accept()
                conn.sendall(b'hello')
                conn.close()
        except OSError:
            return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield
    finally:
        server.close()


def _connect_unix(address: str) -> str:
    return (
        f'{sys.executable} -c "import socket, sys; s = socket.socket(socket.AF_UNIX); s.settimeout(5); '
        f"s.connect(sys.argv[1].replace('@', chr(0), 1)); print(s.recv(5).decode())\" {shlex.quote(address)} "
        '2>&1 | tail -1'
    )


@pytest.mark.skipif(ABI < 6, reason='abstract sockets are not confined before Landlock ABI 6 (documented)')
async def test_network_false_cannot_reach_a_host_abstract_socket(ws: Path) -> None:
    name = f'harness-test-{uuid.uuid4().hex}'
    with unix_server(f'\0{name}'):
        calls = [rc(_connect_unix(f'@{name}'))]
        assert await run_calls([LocalWorkspace(ws), Shell(sandbox='workspace-write')], calls) == [
            ('return', '[stdout]\nhello\n')
        ]
        for shell in (Shell(network=False), Shell(sandbox='read-only', network=False)):
            [(_, text)] = await run_calls([LocalWorkspace(ws), shell], calls)
            assert text == '[stdout]\nPermissionError: [Errno 1] Operation not permitted\n'


async def test_pathname_sockets_as_documented(ws: Path, outside: Path) -> None:
    """Without the network a socket file beneath the workspace stays reachable; one outside it is
    refused from Landlock ABI 9 and reachable on older kernels (the README says so)."""
    inside_sock, outside_sock = ws / 'in.sock', outside / 'out.sock'
    with unix_server(str(inside_sock)), unix_server(str(outside_sock)):
        results = await run_calls(
            [LocalWorkspace(ws), Shell(sandbox='workspace-write', network=False)],
            [rc(_connect_unix(str(inside_sock))), rc(_connect_unix(str(outside_sock)))],
        )
    assert results[0] == ('return', '[stdout]\nhello\n')
    if ABI >= 9:
        assert results[1][1].startswith('[stdout]\nPermissionError: '), results[1]
    else:
        assert results[1] == ('return', '[stdout]\nhello\n')


@pytest.mark.skipif(ABI < 6, reason='signals are not confined before Landlock ABI 6 (documented)')
async def test_the_stop_command_the_shell_tool_names_still_stops_a_sandboxed_job(ws: Path) -> None:
    """The named `kill -- -PGID` would fail in a new sandboxed command (another Landlock domain); the
    harness sends it for a job this Shell started. Other signals stay confined."""
    marker = f'sleep 3003{os.getpid() % 100}'
    shell = Shell(tools=['shell', 'run_command'], sandbox='workspace-write')
    [(_, text)] = await run_calls([LocalWorkspace(ws), shell], [('shell', {'command': marker, 'mode': 'background'})])
    pid = int(re.search(r'PID: (\d+)', text).group(1))  # type: ignore[union-attr]
    stop = re.search(r'use `(.*?)` to stop', text).group(1)  # type: ignore[union-attr]
    assert stop == f'kill -- -{pid}'
    hup = await run_calls([LocalWorkspace(ws), shell], [rc(f'kill -HUP -- -{pid} 2>/dev/null || echo refused')])
    assert hup == [('return', '[stdout]\nrefused\n')]
    assert live_processes_matching(marker)
    results = await run_calls([LocalWorkspace(ws), shell], [('shell', {'command': stop})])
    assert results == [
        (
            'return',
            f'Stopped the process tree of PID {pid} (sent by the harness: a sandboxed command cannot signal '
            'processes it did not start).',
        )
    ]
    assert live_processes_matching(marker) == []
