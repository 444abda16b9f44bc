"""`write_file` of over 1 MiB announced over a file at least as big (issue 11, round two): the plan
hashes and counts the new content on a second core while it reads and hashes the old file, and
the commit only writes and checks the guard. Results, events, bytes on disk, the kept mode and
owner, and the refusal of a file changed while announced are those of any other write.

Each test runs a real `Agent` with a scripted model (`tests/scripted.py`); the unreadable file's
runs in a child process without `CAP_DAC_OVERRIDE` (as in `test_os_errors.py`).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai_harness_rs import FileSystem
from pydantic_ai_harness_rs.filesystem import FileChangeRequestEvent, FileWrittenEvent

from tests.filesystem.conftest import REFERENCE
from tests.filesystem.test_os_errors import _unprivileged
from tests.scripted import RETRY, run_tools

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='0.36.0 writes in place (issue 9)')]

MIB = 1 << 20
LINE = 'lorem ipsum dolor sit amet, consectetur adipiscing elit\n'
NEW = LINE * (3 * MIB // len(LINE))
"""About 3 MiB of text to write: past the 1 MiB mark where big-write paths start."""
OLD = 'an older line of the file\n' * (6 * MIB // 26)
"""About 6 MiB: the file written over, bigger than the new content."""


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def wrote(content: str, path: str = 'big.txt') -> str:
    return f'Wrote {len(content)} chars ({len(content.splitlines())} lines) to {path}. [hash:{h(content)}]'


@pytest.mark.parametrize(
    'content',
    [
        pytest.param(NEW, id='ascii'),
        pytest.param(NEW.replace('dolor', 'dolór').replace('amet', 'ämet\u2028'), id='non-ascii, U+2028'),
    ],
)
async def test_a_big_write_over_a_bigger_file_reports_and_keeps_its_mode_and_owner(
    tmp_path: Path, content: str
) -> None:
    target = tmp_path / 'big.txt'
    target.write_text(OLD)
    target.chmod(0o640)
    owner = (4321, 4321) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    os.chown(target, *owner)
    with open(target, 'rb') as held:  # (held open, the old file's inode cannot be reused)
        t = await run_tools([FileSystem(root_dir=tmp_path)], [('write_file', {'path': 'big.txt', 'content': content})])
        assert os.fstat(held.fileno()).st_ino != target.stat().st_ino  # replaced, not rewritten in place
    assert t.results == [wrote(content)]
    assert target.read_bytes() == content.encode()
    [event] = t.of(FileWrittenEvent)
    assert (event.path, event.content_hash) == ('big.txt', h(content))
    st = target.stat()
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o640, *owner)
    assert os.listdir(tmp_path) == ['big.txt']  # no temporary file left


async def test_a_big_write_over_a_bigger_file_changed_while_announced_is_refused(tmp_path: Path) -> None:
    target = tmp_path / 'big.txt'
    target.write_text(OLD)
    theirs = OLD[: 4 * MIB] + 'X' + OLD[4 * MIB + 1 :]

    async def someone_else_writes(ctx: Any, event: FileChangeRequestEvent) -> None:
        target.write_text(theirs)

    t = await run_tools(
        [FileSystem(root_dir=tmp_path)],
        [('write_file', {'path': 'big.txt', 'content': NEW})],
        listeners=[(FileChangeRequestEvent, someone_else_writes)],
    )
    assert t.results == [
        f"{RETRY}Conflict: file 'big.txt' has changed (expected hash:{h(OLD)}, got hash:{h(theirs)}). "
        'Re-read the file and retry.'
    ]
    assert target.read_text() == theirs
    assert t.of(FileWrittenEvent) == []
    assert os.listdir(tmp_path) == ['big.txt']


async def test_a_big_write_over_a_bigger_file_with_a_stale_expected_hash_is_refused(tmp_path: Path) -> None:
    target = tmp_path / 'big.txt'
    target.write_text(OLD)
    fs = FileSystem(root_dir=tmp_path)
    t = await run_tools([fs], [('write_file', {'path': 'big.txt', 'content': NEW, 'expected_hash': 'stale0000000'})])
    assert t.results == [
        f"{RETRY}Conflict: file 'big.txt' has changed (expected hash:stale0000000, got hash:{h(OLD)}). "
        'Re-read the file and retry.'
    ]
    assert target.read_text() == OLD
    t = await run_tools([fs], [('write_file', {'path': 'big.txt', 'content': NEW, 'expected_hash': h(OLD)})])
    assert t.results == [wrote(NEW)]
    assert target.read_text() == NEW


async def test_a_big_write_through_a_symlink_replaces_its_target(tmp_path: Path) -> None:
    """As a small write does: the link stays a link, the file it names gets the content."""
    (tmp_path / 'target.txt').write_text(OLD)
    (tmp_path / 'big.txt').symlink_to('target.txt')
    t = await run_tools([FileSystem(root_dir=tmp_path)], [('write_file', {'path': 'big.txt', 'content': NEW})])
    assert t.results == [wrote(NEW)]
    assert os.readlink(tmp_path / 'big.txt') == 'target.txt'
    assert (tmp_path / 'target.txt').read_text() == NEW
    [event] = t.of(FileWrittenEvent)
    assert (event.path, event.content_hash) == ('target.txt', h(NEW))
    assert sorted(os.listdir(tmp_path)) == ['big.txt', 'target.txt']


UNREADABLE_CHILD = r"""
import asyncio, json, sys
sys.path.insert(0, sys.argv[2])
from pydantic_ai_harness_rs import FileSystem
from pydantic_ai_harness_rs.filesystem import FileWrittenEvent
from tests.scripted import run_tools

content = 'lorem ipsum dolor sit amet, consectetur adipiscing elit\n' * 60_000

async def main():
    t = await run_tools([FileSystem(root_dir=sys.argv[1])], [('write_file', {'path': 'wo.txt', 'content': content})])
    [event] = t.of(FileWrittenEvent)
    print(json.dumps([t.results, event.content_hash]))

asyncio.run(main())
"""


def test_a_big_write_over_a_bigger_unreadable_file_writes_it_and_keeps_its_mode(tmp_path: Path) -> None:
    """A write-only file (its old content cannot be read for the diff or the guard) is replaced."""
    root = tmp_path / 'root'
    root.mkdir()
    target = root / 'wo.txt'
    target.write_text(OLD)
    target.chmod(0o200)
    script = tmp_path / 'child.py'
    script.write_text(UNREADABLE_CHILD)
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        _unprivileged([sys.executable, str(script), str(root), str(repo)]), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    content = LINE * 60_000
    assert json.loads(proc.stdout) == [[wrote(content, 'wo.txt')], h(content)]
    assert target.read_bytes() == content.encode()
    assert target.stat().st_mode & 0o7777 == 0o200
    assert os.listdir(root) == ['wo.txt']
