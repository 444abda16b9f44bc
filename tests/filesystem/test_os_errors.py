"""OS errors the model can act on, provoked for real: no raw errno text, no host path.

Permission errors need a process the kernel checks: as root the calls run in a child started
by `capsh` without `CAP_DAC_OVERRIDE`/`CAP_DAC_READ_SEARCH` (skipped when that is impossible).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.filesystem.conftest import REFERENCE

pytestmark = pytest.mark.skipif(REFERENCE, reason='0.36.0 shows the raw errno ([Errno 13] ...)')

CHILD = r"""
import asyncio, json, sys
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai_harness_rs.filesystem import FILE_SYSTEM_TOOL_NAMES, FileSystem

CALLS = [
    ('read_file', {'path': 'secret.txt'}),
    ('read_file', {'path': 'locked/in.txt'}),
    ('write_file', {'path': 'rofile.txt', 'content': 'x'}),
    ('write_file', {'path': 'locked/new.txt', 'content': 'x'}),
    ('edit_file', {'path': 'secret.txt', 'old_text': 'a', 'new_text': 'b'}),
    ('list_directory', {'path': 'locked'}),
    ('create_directory', {'path': 'locked/x'}),
    ('file_info', {'path': 'secret.txt'}),
    ('list_files', {'path': 'locked'}),
    ('grep', {'pattern': 'a', 'path': 'locked'}),
    ('grep', {'pattern': 'alpha'}),
    ('find_files', {'pattern': '**/*.txt'}),
]

async def main():
    toolset = FileSystem(root_dir=sys.argv[1], tools=FILE_SYSTEM_TOOL_NAMES).get_toolset()
    out = []
    for tool, args in CALLS:
        try:
            out.append(await getattr(toolset, tool)(**args))
        except ModelRetry as e:
            out.append('RETRY: ' + e.message)
    print(json.dumps(out))

asyncio.run(main())
"""


def _unprivileged(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    capsh = shutil.which('capsh')
    if capsh is None:
        pytest.skip('running as root without capsh: permission checks cannot be provoked')
    return [capsh, '--drop=cap_dac_override,cap_dac_read_search', '--', '-c', ' '.join(f"'{a}'" for a in argv)]


def test_permission_errors_read_as_reasons_on_relative_names(tmp_path: Path) -> None:
    root = tmp_path / 'root'
    (root / 'locked').mkdir(parents=True)
    (root / 'locked' / 'in.txt').write_text('alpha\n')
    (root / 'secret.txt').write_text('alpha\n')
    (root / 'rofile.txt').write_text('alpha\n')
    (root / 'open.txt').write_text('alpha\n')
    script = tmp_path / 'child.py'
    script.write_text(CHILD)
    os.chmod(root / 'locked', 0)
    os.chmod(root / 'secret.txt', 0)
    os.chmod(root / 'rofile.txt', 0o444)
    try:
        proc = subprocess.run(
            _unprivileged([sys.executable, str(script), str(root)]), capture_output=True, text=True, timeout=120
        )
    finally:
        os.chmod(root / 'locked', 0o755)
        os.chmod(root / 'secret.txt', 0o644)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    assert results == [
        "RETRY: Permission denied: 'secret.txt'",
        "RETRY: Permission denied: 'locked/in.txt'",
        "RETRY: Permission denied: 'rofile.txt'",
        "RETRY: Permission denied: 'locked/new.txt'",
        "RETRY: Permission denied: 'secret.txt'",
        "RETRY: Permission denied: 'locked'",
        "RETRY: Permission denied: 'locked/x'",
        "RETRY: Permission denied: 'secret.txt'",
        "RETRY: Permission denied: 'locked'",
        "RETRY: Permission denied: 'locked'",
        # Issue 19: the readable matches come back; what could not be read is named.
        'open.txt:1:alpha\nrofile.txt:1:alpha\n[2 paths could not be read (Permission denied): locked, secret.txt]',
        # find_files names the directory it could not list (issue 19), as the other walkers do.
        'open.txt\nrofile.txt\nsecret.txt\n[1 path could not be read (Permission denied): locked]',
    ]
    assert not any('Errno' in r or 'os error' in r or str(tmp_path) in r for r in results)


DISK_CHILD = r"""
import asyncio, json, sys
from pydantic_ai_harness_rs.filesystem import FileSystem

async def main():
    toolset = FileSystem(root_dir=sys.argv[1]).get_toolset()
    out = []
    for path in ['big.txt', 'a.txt']:
        try:
            out.append(await toolset.write_file(path, 'x' * 200_000))
        except OSError as e:
            out.append([type(e).__name__, e.errno, str(e)])
    print(json.dumps(out))

asyncio.run(main())
"""


@pytest.mark.parametrize(('mount', 'errno'), [('size=64k', 28), ('size=64k,ro', 30)])
def test_a_full_or_read_only_disk_aborts_without_host_path_or_leftover(tmp_path: Path, mount: str, errno: int) -> None:
    """ENOSPC / EROFS: the model cannot fix them, so the run aborts (as 0.36.0); no host path, no new empty file."""
    unshare = shutil.which('unshare')
    if unshare is None or os.geteuid() != 0:
        pytest.skip('needs root and unshare to mount a small tmpfs')
    root = tmp_path / 'disk'
    root.mkdir()
    script = tmp_path / 'child.py'
    script.write_text(DISK_CHILD)
    shell = (
        f"mount -t tmpfs -o size=64k tmpfs '{root}' && printf 'alpha\\n' > '{root}/a.txt' && "
        f"mount -o remount,{mount} '{root}' && '{sys.executable}' '{script}' '{root}' && ls -A '{root}' && cat '{root}/a.txt'"
    )
    proc = subprocess.run([unshare, '-m', 'sh', '-c', shell], capture_output=True, text=True, timeout=120)
    if 'mount' in proc.stderr and proc.returncode != 0:
        pytest.skip(f'cannot mount a tmpfs here: {proc.stderr.strip()[-300:]}')
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, listing, content = proc.stdout.split('\n', 2)
    reason = os.strerror(errno)
    assert json.loads(first) == [['OSError', errno, f'[Errno {errno}] {reason}']] * 2
    assert (listing, content) == ('a.txt', 'alpha\n')  # the old file intact, no big.txt
