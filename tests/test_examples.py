"""Every script in `examples/` runs as a newcomer would run it (`python examples/<name>.py`, no API
key) and prints what its docstring promises (issue 19)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pydantic_ai_harness_rs
import pytest

PACKAGE_PATH = str(Path(pydantic_ai_harness_rs.__file__).resolve().parent.parent)
"""Where the package under test was imported from (not the whole `sys.path`: pytest puts `tests/` on it,
whose `typing` package would shadow the standard library's)."""

EXAMPLES = Path(__file__).resolve().parent.parent / 'examples'


def _run(name: str, *args: str, timeout: float = 120) -> str:
    env = {**os.environ, 'PYTHONPATH': PACKAGE_PATH}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=EXAMPLES.parent,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_example_is_run_here() -> None:
    scripts = {p.name for p in EXAMPLES.glob('*.py') if not p.name.startswith('_')}
    tested = {'veto_listener.py', 'yaml_spec.py', 'read_before_write.py', 'sandboxed_shell.py', 'durable_worker.py'}
    assert scripts == tested


def test_veto_listener() -> None:
    assert _run('veto_listener.py') == (
        'asked: write notes.txt\n'
        'asked: edit poetry.lock\n'
        'write_file: Wrote 6 chars (1 lines) to notes.txt. [hash:5891b5b522d5]\n'
        "edit_file: ['poetry.lock' was not edited: lock files are generated: change the manifest instead]\n"
        'poetry.lock on disk: # generated\n'
        'notes.txt on disk: hello\n'
    )


def test_yaml_spec() -> None:
    assert _run('yaml_spec.py') == (
        'read_file: [config.toml | 2 lines | hash:5f55e5180ed6]\n'
        '     1\t[package]\n'
        '     2\tname = "demo"\n'
        "read_file: RETRY: Path 'server.key' is denied by pattern '*.key'.\n"
        'run_command: [stdout]\n'
        '2 config.toml\n'
        "run_command: RETRY: Command 'rm' is not in the allowed list.\n"
        'answer: The package is named demo.\n'
    )


def test_read_before_write() -> None:
    assert _run('read_before_write.py') == (
        "edit_file: RETRY: 'app.py' exists and has not been read in this run: read it first (read_file), "
        'then retry. No changes were written.\n'
        'read_file: [app.py | 1 lines | hash:03e693d9f2f6]\n'
        "     1\tprint('hello')\n"
        'edit_file: Edited app.py. [hash:0d2760675e55]\n'
        'write_file: Wrote 25 chars (1 lines) to new.txt. [hash:125bfaa9fd24]\n'
        "app.py on disk: print('hello, world')\n"
    )


def test_sandboxed_shell() -> None:
    out = _run('sandboxed_shell.py')
    if out.startswith('no sandbox on this machine: '):
        pytest.skip(out.strip())
    assert out.startswith('run_command: [stdout]\ninside\nrun_command: [stderr]\n')
    assert '/escaped.txt: Permission denied\n\n[exit code: 2]\n' in out
    assert out.endswith('inside.txt written: True\nescaped.txt written: False\n')


def test_durable_worker_without_a_server() -> None:
    pytest.importorskip('temporalio', reason="the durable example needs temporalio (pip install '.[durable]')")
    assert _run('durable_worker.py') == (
        '(no Temporal server: the same agent, outside a workflow)\n'
        'Wrote 13 chars (1 lines) to hello.txt. [hash:0da7c2eb507d]\n'
        '[stdout]\n'
        'written once\n'
    )


@pytest.mark.skipif(os.environ.get('DURABLE_TESTS') != '1', reason='starts a Temporal dev server: DURABLE_TESTS=1')
def test_durable_worker_on_a_dev_server() -> None:
    pytest.importorskip('temporalio', reason="the durable example needs temporalio (pip install '.[durable]')")
    assert _run('durable_worker.py', '--dev-server', timeout=300) == (
        'Wrote 13 chars (1 lines) to hello.txt. [hash:0da7c2eb507d]\n[stdout]\nwritten once\n'
    )
