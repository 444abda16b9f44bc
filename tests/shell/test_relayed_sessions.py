"""Relayed sessions (`_core.Session.start_relayed` / `attach`): a program on a terminal that a relay
process holds, so it outlives the Python process that started it and a new process finds it by its
directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic_ai_harness_rs import _core

ENV = [(b'PATH', b'/usr/bin:/bin'), (b'TERM', b'xterm-256color')]
SIZES = {'head_bytes': 1 << 16, 'tail_bytes': 1 << 16}
PYTHON_PATH = str(Path(_core.__file__).resolve().parents[1])

STARTER = """
import os, sys
from pydantic_ai_harness_rs import _core
env = [(b'PATH', b'/usr/bin:/bin'), (b'TERM', b'xterm-256color')]
h = _core.Session.start_relayed(sys.argv[1], sys.executable, _core.__file__, 'the note', sys.argv[2].encode(), '/',
                                env, cols=80, rows=24, head_bytes=65536, tail_bytes=65536)
if sys.argv[3]:
    h.wait(None, True, 10.0)
    h.take_output()
    h.write(sys.argv[3].encode())
if sys.argv[4]:
    assert h.wait(sys.argv[4], False, 10.0) == 'matched'
    h.take_output()
print(h.pid, flush=True)
os.kill(os.getpid(), 9)
"""
"""Starts a relayed session, types keys into it once it waits for input, reads its output up to a pattern (when
given), prints the program's PID and dies by SIGKILL."""


def start_and_die(directory: Path, command: str, keys: str, read_to: str = '') -> int:
    """The program's PID, from a child Python that started the session and was killed."""
    child = subprocess.run(
        [sys.executable, '-c', STARTER, str(directory), command, keys, read_to],
        env={**os.environ, 'PYTHONPATH': PYTHON_PATH},
        capture_output=True,
        cwd='/',
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    return int(child.stdout.split()[0])


def text(handle: _core.Session) -> str:
    head, tail, *_ = handle.take_output()
    return (head + tail).decode()


def alive(pid: int) -> bool:
    try:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except OSError:
        return False
    return state != 'Z'


def until_gone(pid: int, limit: float = 10) -> bool:
    deadline = time.monotonic() + limit
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


def relays_of(directory: Path) -> list[int]:
    """Live relay processes serving `directory`."""
    found = []
    for entry in Path('/proc').iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / 'cmdline').read_bytes().split(b'\0')
            except OSError:
                continue
            if str(directory).encode() in cmdline and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def test_a_session_outlives_its_starter_and_is_found_by_its_directory(tmp_path: Path) -> None:
    directory = tmp_path / 'session-1'
    pid = start_and_die(directory, 'python3 -i -q', 'x = 41 + 1\n', r'41 \+ 1\r\n>>> ')
    assert alive(pid)
    assert (directory.stat().st_mode & 0o777) == 0o700
    handle = _core.Session.attach(directory, **SIZES)
    assert handle is not None
    assert (handle.pid, handle.note, handle.exit_code) == (pid, 'the note', None)
    handle.write(b'print(x)\n')
    assert handle.wait(None, True, 10.0) == 'waiting'
    assert text(handle) == 'print(x)\n42\n>>> '
    handle.write(b'exit()\n')
    assert handle.wait(None, False, 10.0) == 'exited'
    assert handle.exit_code == 0
    assert until_gone(pid)
    deadline = time.monotonic() + 10
    while relays_of(directory) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert relays_of(directory) == []
    assert _core.Session.published_exit_code(directory) == 0
    assert sorted(p.name for p in directory.iterdir()) == ['status.json']
    assert _core.Session.attach(directory, **SIZES) is None


def test_output_printed_while_nobody_reads_waits_for_the_next_reader(tmp_path: Path) -> None:
    directory = tmp_path / 's'
    start_and_die(directory, 'python3 -i -q', 'import time; time.sleep(0.5); print("late")\n', r'"late"\)\r\n')
    time.sleep(1)  # printed while no process holds the terminal
    handle = _core.Session.attach(directory, **SIZES)
    assert handle is not None
    assert handle.wait('>>> ', False, 10.0) == 'matched'
    assert text(handle) == 'late\n>>> '
    handle.stop(0.0)


def test_stop_ends_the_program_and_the_relay(tmp_path: Path) -> None:
    directory = tmp_path / 's'
    pid = start_and_die(directory, 'trap "" TERM; sleep 300', '')
    handle = _core.Session.attach(directory, **SIZES)
    assert handle is not None
    assert handle.stop(0.2) is True
    assert until_gone(pid)
    assert handle.exit_code == 137
    deadline = time.monotonic() + 10
    while relays_of(directory) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert relays_of(directory) == []
    assert _core.Session.published_exit_code(directory) == 137


def test_removing_the_socket_ends_the_session(tmp_path: Path) -> None:
    """What ends a run's sessions when the run ends in another process (a durable workflow)."""
    directory = tmp_path / 's'
    pid = start_and_die(directory, '(setsid sleep 301 &); sleep 300', '')
    (directory / 'sock').unlink()
    assert until_gone(pid)
    deadline = time.monotonic() + 10
    while relays_of(directory) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert relays_of(directory) == []
    assert _core.Session.published_exit_code(directory) == 137
    leftover = subprocess.run(['pgrep', '-f', '^sleep 301$'], capture_output=True, text=True).stdout.split()
    assert leftover == []


def test_dropping_a_handle_leaves_the_program_running(tmp_path: Path) -> None:
    directory = tmp_path / 's'
    pid = start_and_die(directory, 'cat', '')
    first = _core.Session.attach(directory, **SIZES)
    assert first is not None
    del first
    second = _core.Session.attach(directory, **SIZES)
    assert second is not None and alive(pid)
    second.write(b'again\n')
    assert second.wait('again\r\nagain', False, 10.0) == 'matched'
    second.stop(0.0)
    assert until_gone(pid)


def test_a_program_that_cannot_start_is_an_error_and_leaves_no_relay(tmp_path: Path) -> None:
    directory = tmp_path / 's'
    with pytest.raises(OSError) as caught:
        _core.Session.start_relayed(
            directory,
            sys.executable,
            _core.__file__,
            '',
            b'true',
            str(tmp_path / 'missing'),
            ENV,
            cols=80,
            rows=24,
            **SIZES,
        )
    assert str(tmp_path) not in str(caught.value)
    assert relays_of(directory) == []


def test_a_killed_relay_reads_as_lost_and_ends_the_program(tmp_path: Path) -> None:
    """A relay killed by SIGKILL publishes no exit code: the handle says the relay was lost (no exit code, not
    -1), writes are refused saying to start a new session, and the program, which nobody would reap or end
    with the run now, is ended."""
    directory = tmp_path / 's'
    pid = start_and_die(directory, 'trap "" HUP; cat', '')
    handle = _core.Session.attach(directory, **SIZES)
    assert handle is not None
    [relay] = relays_of(directory)
    os.kill(relay, signal.SIGKILL)
    assert handle.wait(None, False, 10.0) == 'exited'
    assert (handle.relay_lost, handle.exit_code) == (True, None)
    assert until_gone(pid)
    with pytest.raises(_core.InvalidArgumentError, match='relay process was killed.*Start a new session'):
        handle.write(b'x\n')
    # A new process finds no relay and learns the session was lost (not an exit code).
    assert _core.Session.attach(directory, **SIZES) is None
    assert _core.Session.published_exit_code(directory) is None
    assert _core.Session.relay_lost_in(directory) is True


def test_a_relay_killed_with_nobody_attached_is_lost_and_its_program_ended(tmp_path: Path) -> None:
    directory = tmp_path / 's'
    pid = start_and_die(directory, 'trap "" HUP; sleep 300', '')
    [relay] = relays_of(directory)
    os.kill(relay, signal.SIGKILL)
    assert _core.Session.attach(directory, **SIZES) is None
    assert alive(pid)  # it ignores the terminal's hang-up
    assert _core.Session.relay_lost_in(directory) is True
    assert until_gone(pid)


def test_a_dropped_handle_is_not_a_lost_relay(tmp_path: Path) -> None:
    directory = tmp_path / 's'
    start_and_die(directory, 'cat', '')
    assert _core.Session.relay_lost_in(directory) is False  # its relay answers
    handle = _core.Session.attach(directory, **SIZES)
    assert handle is not None
    handle.stop(0.0)
    deadline = time.monotonic() + 10
    while relays_of(directory) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _core.Session.relay_lost_in(directory) is False  # ended, with its exit code published
