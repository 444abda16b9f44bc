"""Crash safety (issue 9, section 2): a write is all or nothing, whatever happens to the process.

- A process killed (SIGKILL) at any moment of a 200 MB `write_file` leaves the file with exactly
  its old or exactly its new content, and no temporary file the model could see.
- A write that fails (file size limit, full disk) leaves nothing behind: no new empty file, the
  old content intact, no temporary file.
- A file with other hard links is written in place, so every name sees the change; any other
  file is replaced, keeping its mode and owner.

Each kill or failure happens in a child process running the toolset directly (`CHILD`), under
the document contract (`root_dir`) and under the workspace contract on a local workspace.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from pydantic_ai.workspaces import LocalWorkspaceBackend
from pydantic_ai_harness_rs import FileSystem

from tests.filesystem.conftest import REFERENCE

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='0.36.0 writes in place (issue 9)')]

BIG = 200 * 1000 * 1000
"""Bytes of the killed write."""

CHILD = textwrap.dedent(
    """
    import asyncio, resource, signal, sys
    from pydantic_ai_harness_rs import FileSystem
    from pydantic_ai.workspaces import LocalWorkspaceBackend

    root, contract, limit, *operations = sys.argv[1:]
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))
    content = 'x' * (2 * int(limit))

    async def main():
        if contract == 'workspace':
            toolset, extra = FileSystem().get_toolset(), {'workspace': LocalWorkspaceBackend(root)}
        else:
            toolset, extra = FileSystem(root_dir=root).get_toolset(), {}
        for operation in operations:
            tool, path = operation.split(':')
            try:
                if tool == 'write':
                    await toolset.write_file(path, content, **extra)
                else:
                    await toolset.edit_file(path, 'MARKER', content, **extra)
            except OSError as e:
                print(type(e).__name__, e, flush=True)

    asyncio.run(main())
    """
)
"""Runs `write:<path>` / `edit:<path>` operations of twice the file size limit it sets, printing each error."""

FORK_SERVER = textwrap.dedent(
    """
    import asyncio, os, sys
    from pydantic_ai_harness_rs import FileSystem
    from pydantic_ai.workspaces import LocalWorkspaceBackend

    root, contract, size = sys.argv[1:4]
    line = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!\\n'
    content = line * (int(size) // len(line))

    async def write():
        if contract == 'workspace':
            await FileSystem().get_toolset().write_file('big.txt', content, workspace=LocalWorkspaceBackend(root))
        else:
            await FileSystem(root_dir=root).get_toolset().write_file('big.txt', content)

    for command in sys.stdin:  # each line: one write, in a forked process (imports and content made once)
        pid = os.fork()
        if pid == 0:
            asyncio.run(write())
            os._exit(0)
        print(pid, flush=True)
        print(os.waitpid(pid, 0)[1], flush=True)
    """
)
"""Writes `BIG` bytes to `big.txt`, once per line on stdin, each in a forked process whose pid it prints,
then its wait status."""

LINE = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!\n'


def content_of(size: int) -> bytes:
    return (LINE * (size // len(LINE))).encode()


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def written_bytes(pid: int) -> int:
    """Bytes the process has passed to `write`-family calls so far (`wchar`, /proc/<pid>/io)."""
    with open(f'/proc/{pid}/io') as f:
        return next(int(line.split()[1]) for line in f if line.startswith('wchar:'))


def kill_after(pid: int, written: int) -> None:
    """SIGKILL `pid` once it has written `written` bytes (or has ended)."""
    while True:
        try:
            if written_bytes(pid) >= written:
                break
        except (FileNotFoundError, ProcessLookupError):
            return
        time.sleep(0.001)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(('contract', 'kills'), [('document', 12), ('workspace', 4)])
def test_a_killed_200mb_write_leaves_old_or_new_content_and_no_temporary_file(
    tmp_path: Path, contract: str, kills: int
) -> None:
    """Killed at `kills` moments spread over the write (by the bytes it has written so far): the old
    or the new content each time, never a part; then, not killed, the new."""
    target = tmp_path / 'big.txt'
    old = b'the old content\n'
    new_digest = hashlib.sha256(content_of(BIG)).hexdigest()
    server = subprocess.Popen(
        [sys.executable, '-c', FORK_SERVER, str(tmp_path), contract, str(BIG)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None

    def write(kill_at: int | None) -> int:
        target.write_bytes(old)
        server.stdin.write('write\n')
        server.stdin.flush()
        pid = int(server.stdout.readline())
        if kill_at is not None:
            kill_after(pid, kill_at)
        return int(server.stdout.readline())

    try:
        outcomes = []
        for i in range(kills):
            status = write(BIG * i // kills)
            found = target.read_bytes() if target.stat().st_size == len(old) else digest(target)
            assert found in (old, new_digest), f'kill {i}: a partial file of {target.stat().st_size} bytes'
            outcomes.append('old' if found == old else 'new')
            assert status in (signal.SIGKILL, 0)
            # Nothing but the file: the temporary file is nameless while it is written (it has a
            # name only between linkat and rename, and the next write removes it, as tested below).
            assert set(os.listdir(tmp_path)) - {'big.txt'} <= {'.big.txt.hrs-tmp'}
        assert outcomes[0] == 'old'  # killed before its first byte was written
        assert outcomes.count('old') >= 2  # (most kills land mid-write: each is a partial file in place)
        assert write(None) == 0
        assert digest(target) == new_digest
        assert os.listdir(tmp_path) == ['big.txt']
    finally:
        server.stdin.close()
        server.wait()


def test_a_leftover_temporary_file_is_hidden_and_removed_by_the_next_write(tmp_path: Path) -> None:
    """A kill between naming the temporary file and the rename (or on a filesystem without
    `O_TMPFILE`) leaves `.<name>.hrs-tmp`: hidden from the model, removed by the next write."""
    (tmp_path / 'a.txt').write_text('old\n')
    (tmp_path / '.a.txt.hrs-tmp').write_text('partial')  # nobody holds its lock: its writer is gone
    toolset = FileSystem(root_dir=tmp_path).get_toolset()
    assert anyio.run(toolset.list_directory, '.') == 'a.txt  (4 bytes)'
    assert anyio.run(toolset.find_files, '**/*') == 'a.txt'
    anyio.run(toolset.write_file, 'a.txt', 'new\n')
    assert os.listdir(tmp_path) == ['a.txt']
    assert (tmp_path / 'a.txt').read_text() == 'new\n'


@pytest.mark.parametrize('contract', ['document', 'workspace'])
def test_a_write_over_the_file_size_limit_leaves_nothing_behind(tmp_path: Path, contract: str) -> None:
    (tmp_path / 'old.txt').write_text('old\n')
    (tmp_path / 'edit.txt').write_text('keep MARKER keep\n')
    limit = 1 << 20
    operations = ['write:new.txt', 'write:old.txt', 'edit:edit.txt']
    result = subprocess.run(
        [sys.executable, '-c', CHILD, str(tmp_path), contract, str(limit), *operations],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.splitlines() == ['OSError [Errno 27] File too large'] * 3
    assert sorted(os.listdir(tmp_path)) == ['edit.txt', 'old.txt']
    assert (tmp_path / 'old.txt').read_text() == 'old\n'
    assert (tmp_path / 'edit.txt').read_text() == 'keep MARKER keep\n'


@pytest.fixture
def small_tmpfs(tmp_path: Path):  # noqa: ANN201 - a fixture
    mount = tmp_path / 'full'
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', str(mount)]).returncode:
        pytest.skip('needs to mount a small tmpfs (root)')
    try:
        yield mount
    finally:
        subprocess.run(['umount', str(mount)], check=True)


async def test_a_write_to_a_full_disk_leaves_nothing_behind(small_tmpfs: Path) -> None:
    (small_tmpfs / 'old.txt').write_text('old\n')
    toolset = FileSystem(root_dir=small_tmpfs).get_toolset()
    big = 'x' * (2 << 20)
    for path in ['new.txt', 'old.txt']:
        with pytest.raises(OSError, match=r'\[Errno 28\] No space left on device'):
            await toolset.write_file(path, big)
    with pytest.raises(OSError, match=r'\[Errno 28\]'):
        await toolset.edit_file('old.txt', 'old', big)
    assert sorted(os.listdir(small_tmpfs)) == ['old.txt']
    assert (small_tmpfs / 'old.txt').read_text() == 'old\n'


@pytest.mark.parametrize('contract', ['document', 'workspace'])
async def test_a_hard_linked_file_is_written_in_place_every_name_sees_the_change(tmp_path: Path, contract: str) -> None:
    (tmp_path / 'a.txt').write_text('old\n')
    os.link(tmp_path / 'a.txt', tmp_path / 'b.txt')
    inode = (tmp_path / 'a.txt').stat().st_ino
    toolset = FileSystem(root_dir=None if contract == 'workspace' else tmp_path).get_toolset()
    extra = {'workspace': LocalWorkspaceBackend(tmp_path)} if contract == 'workspace' else {}
    await toolset.write_file('a.txt', 'new\n', **extra)
    await toolset.edit_file('a.txt', 'new', 'newer', **extra)
    assert (tmp_path / 'b.txt').read_text() == 'newer\n'
    assert (tmp_path / 'a.txt').stat().st_ino == inode


@pytest.mark.parametrize('contract', ['document', 'workspace'])
async def test_a_replaced_file_keeps_its_mode_and_owner(tmp_path: Path, contract: str) -> None:
    target = tmp_path / 'a.txt'
    target.write_text('old\n')
    target.chmod(0o640)
    owner = (4321, 4321) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    os.chown(target, *owner)
    toolset = FileSystem(root_dir=None if contract == 'workspace' else tmp_path).get_toolset()
    extra = {'workspace': LocalWorkspaceBackend(tmp_path)} if contract == 'workspace' else {}
    with open(target, 'rb') as held:  # (held open, the old file's inode cannot be reused)
        await toolset.write_file('a.txt', 'new\n', **extra)
        await toolset.edit_file('a.txt', 'new', 'newer', **extra)
        assert os.fstat(held.fileno()).st_ino != target.stat().st_ino  # replaced, not rewritten in place
        assert held.read() == b'old\n'
    st = target.stat()
    assert (st.st_mode & 0o7777, st.st_uid, st.st_gid) == (0o640, *owner)
    assert target.read_text() == 'newer\n'
    assert os.listdir(tmp_path) == ['a.txt']


async def test_a_new_file_gets_the_usual_mode(tmp_path: Path) -> None:
    toolset = FileSystem(root_dir=tmp_path).get_toolset()
    await toolset.write_file('n.txt', 'x')
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / 'n.txt').stat().st_mode & 0o777 == 0o666 & ~umask
