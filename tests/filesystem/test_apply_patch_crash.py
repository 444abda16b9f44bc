"""apply_patch is all or nothing across files, whatever happens to the process (issue 22, section 1).

A child process (under the document's contract, `root_dir`, and under 0.62.0's on a local workspace)
applies one patch of every kind of change (two updates, one at the end of its file;
an add into new directories; two deletions, one of the last file of its directory; a move into new
directories with an edit) and is killed with `SIGKILL`:

- at staggered moments of the commit, by the bytes it has written so far (as `test_crash_safety`
  does for `write_file`), with files big enough that staging them takes a while;
- right before each file-changing system call of the commit (`strace` injects the signal at the
  n-th `openat`, `write`, `linkat`, `renameat`, `unlinkat`, `mkdirat`, ... of the process), so every
  step between staging, the journal, the renames and the clean-up is a kill point.

After each kill a new `FileSystem` on the root (whose first call finishes or rolls back the commit
the kill interrupted) must show the whole old tree or the whole new one, byte for byte, with no file
left in `.pydantic-ai-harness/`; and the next patch must apply.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from functools import partial
from pathlib import Path

import anyio
import pytest
from pydantic_ai.workspaces import LocalWorkspaceBackend
from pydantic_ai_harness_rs import FileSystem
from pydantic_ai_harness_rs.filesystem import DEFAULT_TOOL_NAMES

from tests.filesystem.conftest import beyond_reference
from tests.filesystem.test_crash_safety import kill_after

pytestmark = beyond_reference('apply_patch is issue 22, beyond the references')

TOOLS = [*DEFAULT_TOOL_NAMES, 'apply_patch']

FORK_SERVER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pydantic_ai_harness_rs import FileSystem
    from pydantic_ai_harness_rs.filesystem import DEFAULT_TOOL_NAMES

    root, patch_file, stop, contract = sys.argv[1:5]
    patch = open(patch_file).read()

    async def apply():
        tools = [*DEFAULT_TOOL_NAMES, 'apply_patch']
        if contract == 'workspace':
            from pydantic_ai.workspaces import LocalWorkspaceBackend

            toolset = FileSystem(tools=tools).get_toolset()
            result = await toolset.apply_patch(patch, workspace=LocalWorkspaceBackend(root))
        else:
            result = await FileSystem(root_dir=root, tools=tools).get_toolset().apply_patch(patch)
        os.write(1, f'RESULT {result!r}\\n'.encode())  # (one write: a kill before it leaves no part line)

    for command in sys.stdin:  # each line: one patch, in a forked process (imports made once)
        pid = os.fork()
        if pid == 0:
            if stop == 'stop':
                os.kill(os.getpid(), signal.SIGSTOP)  # (until a tracer is attached and sends SIGCONT)
            asyncio.run(apply())
            with open('/proc/self/io') as f:
                os.write(1, f"WCHAR {next(l.split()[1] for l in f if l.startswith('wchar:'))}\\n".encode())
            os._exit(0)
        print('PID', pid, flush=True)
        print('STATUS', os.waitpid(pid, 0)[1], flush=True)
    """
)
"""Applies the patch in `patch_file` to `root`, once per line on stdin, each in a forked process; prints
`PID <pid>`, then (if it finished) `RESULT <repr>` and `WCHAR <bytes written>`, then `STATUS <wait status>`.
With `stop`, each forked process stops itself before it starts."""


def lines(prefix: str, count: int) -> str:
    return ''.join(f'{prefix} line {i:07d} of a file big enough to take a while to stage\n' for i in range(count))


def trees(count: int) -> tuple[dict[str, bytes], dict[str, bytes], str]:
    """The old tree, the new tree and the patch from one to the other, with files of about `count` lines."""
    app, util, notes = lines('app', count), lines('util', count // 2), lines('notes', count)
    old = {
        'src/app.py': app,
        'src/util.py': util,
        'docs/guide.md': 'a guide\n',
        'lib/only.txt': 'the last file of lib/\n',
        'old/notes.txt': notes,
        'keep.txt': 'untouched\n',
    }
    first, last = 'app line 0000001', f'app line {count - 1:07d}'
    u = f'util line {count // 4:07d}'
    n = f'notes line {count // 2:07d}'
    new = {
        'src/app.py': app.replace(first, 'APP LINE ONE', 1) + 'appended\n',
        'src/util.py': util.replace(u, 'UTIL MIDDLE', 1),
        'added/deep/new.txt': 'new\nfile\n',
        'new/place/notes.txt': notes.replace(n, 'NOTES MIDDLE', 1),
        'keep.txt': 'untouched\n',
    }
    tail = 'of a file big enough to take a while to stage'
    patch = '\n'.join(
        [
            '*** Begin Patch',
            '*** Update File: src/app.py',
            '@@',
            f' app line 0000000 {tail}',
            f'-{first} {tail}',
            f'+APP LINE ONE {tail}',
            f' app line 0000002 {tail}',
            '@@',
            f' {last} {tail}',
            '+appended',
            '*** End of File',
            '*** Update File: src/util.py',
            f'@@ util line {count // 4 - 1:07d} {tail}',
            f'-{u} {tail}',
            f'+UTIL MIDDLE {tail}',
            '*** Add File: added/deep/new.txt',
            '+new',
            '+file',
            '*** Delete File: docs/guide.md',
            '*** Delete File: lib/only.txt',
            '*** Update File: old/notes.txt',
            '*** Move to: new/place/notes.txt',
            '@@',
            f'-{n} {tail}',
            f'+NOTES MIDDLE {tail}',
            '*** End Patch',
        ]
    )
    encode = lambda files: {path: text.encode() for path, text in files.items()}  # noqa: E731
    return encode(old), encode(new), patch


def plant(root: Path, files: dict[str, bytes]) -> None:
    """`root` emptied, then holding exactly `files`."""
    shutil.rmtree(root, ignore_errors=True)
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)


def files_below(root: Path) -> dict[str, bytes]:
    """Every file below `root` (path -> bytes), `.pydantic-ai-harness/` aside."""
    out: dict[str, bytes] = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory) / name
            rel = path.relative_to(root).as_posix()
            if not rel.startswith('.pydantic-ai-harness/'):
                out[rel] = path.read_bytes()
    return out


def recovered(root: Path, old: dict[str, bytes], new: dict[str, bytes], contract: str = 'document') -> str:
    """After a kill: a new FileSystem's first call (under `contract`), then `'old'` or `'new'`; fails on
    anything else."""
    if contract == 'workspace':
        toolset = FileSystem(tools=TOOLS).get_toolset()
        anyio.run(partial(toolset.list_directory, '.', workspace=LocalWorkspaceBackend(root)))
    else:
        anyio.run(FileSystem(root_dir=root, tools=TOOLS).get_toolset().list_directory, '.')
    found = files_below(root)
    journal = [p.relative_to(root).as_posix() for p in (root / '.pydantic-ai-harness').rglob('*') if not p.is_dir()]
    journal = [p for p in journal if p != '.pydantic-ai-harness/.gitignore']  # (keeps it out of git)
    assert journal == [], f'left in the journal directory after recovery: {journal}'
    if found == old:
        return 'old'
    if found == new:
        return 'new'
    mixed = sorted(
        f'{p}: {"old" if found.get(p) == old.get(p) else "new" if found.get(p) == new.get(p) else "neither"}'
        for p in set(found) | set(old) | set(new)
    )
    raise AssertionError(f'a tree neither wholly old nor wholly new: {mixed}')


class Server:
    """The fork server: one forked child per patch."""

    def __init__(self, root: Path, patch: str, *, stop: bool, contract: str = 'document') -> None:
        (root.parent / 'patch.txt').write_text(patch)
        self.process = subprocess.Popen(
            [
                sys.executable,
                '-B',
                '-c',
                FORK_SERVER,
                str(root),
                str(root.parent / 'patch.txt'),
                'stop' if stop else 'go',
                contract,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def start(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.write('patch\n')
        self.process.stdin.flush()
        return int(self.read('PID'))

    def read(self, tag: str) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith(tag + ' '), f'expected {tag}, got {line!r}'
        return line.split(' ', 1)[1].strip()

    def finish(self) -> tuple[int, str | None, int | None]:
        """(wait status, the tool's result, bytes written) of the child just started."""
        assert self.process.stdout is not None
        result = wchar = None
        while True:
            tag, value = self.process.stdout.readline().strip().split(' ', 1)
            if tag == 'RESULT':
                result = value
            elif tag == 'WCHAR':
                wchar = int(value)
            else:
                assert tag == 'STATUS'
                return int(value), result, wchar

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


@pytest.mark.parametrize(('contract', 'kills'), [('document', 16), ('workspace', 6)])
def test_a_patch_killed_at_staggered_moments_leaves_the_old_tree_or_the_new(
    tmp_path: Path, contract: str, kills: int
) -> None:
    old, new, patch = trees(100_000)  # (files of 4-8 MB: staging them takes long enough to be hit)
    root = tmp_path / 'root'
    server = Server(root, patch, stop=False, contract=contract)
    try:
        plant(root, old)
        server.start()
        status, result, total = server.finish()
        assert status == 0 and total is not None, result
        assert recovered(root, old, new, contract) == 'new'
        outcomes = []
        for i in range(kills):
            plant(root, old)
            pid = server.start()
            kill_after(pid, total * i // kills)
            status, result, _ = server.finish()
            assert status in (signal.SIGKILL, 0), status
            outcomes.append(recovered(root, old, new, contract))
        assert outcomes[0] == 'old', outcomes  # killed before its first byte
        assert 'old' in outcomes[1:], outcomes  # (most kills land while the new contents are staged)
        plant(root, old)
        server.start()
        assert server.finish()[0] == 0
        assert recovered(root, old, new, contract) == 'new'
    finally:
        server.close()


CHANGING_CALLS = (
    'openat',
    'write',
    'pwrite64',
    'linkat',
    'renameat',
    'renameat2',
    'unlinkat',
    'mkdirat',
    'fchmod',
    'fchown',
    'ftruncate',
    'flock',
    'copy_file_range',
    'fsync',
    'fdatasync',
)
"""The system calls a kill is injected before (each occurrence of each, in turn)."""


def traced(server: Server, inject: str | None, log: Path | None = None) -> tuple[int, str | None]:
    """Runs one patch under `strace -f`, attached before it starts; `inject` is a `syscall:n` kill point."""
    pid = server.start()
    while open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0] != 'T':
        time.sleep(0.001)
    command = ['strace', '-f', '-p', str(pid), '-e', 'trace=' + ','.join(CHANGING_CALLS), '-o', str(log or os.devnull)]
    if inject is not None:
        name, n = inject.split(':')
        command += ['-e', f'inject={name}:signal=KILL:when={n}']
    tracer = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    assert tracer.stderr is not None
    attached = tracer.stderr.readline()
    assert 'attached' in attached, attached
    os.kill(pid, signal.SIGCONT)
    status, result, _ = server.finish()
    tracer.wait()
    return status, result


def strace_works() -> bool:
    if shutil.which('strace') is None:
        return False
    probe = subprocess.run(['strace', '-o', os.devnull, 'true'], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not strace_works(), reason='needs strace and ptrace to inject a kill before a system call')
def test_a_patch_killed_before_each_changing_system_call_leaves_the_old_tree_or_the_new(tmp_path: Path) -> None:
    old, new, patch = trees(200)
    root = tmp_path / 'root'
    server = Server(root, patch, stop=True)
    try:
        plant(root, old)
        log = tmp_path / 'trace.log'
        status, result = traced(server, None, log)
        assert status == 0, result
        assert recovered(root, old, new) == 'new'
        # Each thread's calls of each system call, counted as strace counts them for `when=`.
        counts: dict[tuple[str, str], int] = {}
        for line in log.read_text().splitlines():
            if match := re.match(r'(\d+)\s+(\w+)\(', line):
                key = (match[1], match[2])
                counts[key] = counts.get(key, 0) + 1
        points = sorted({f'{name}:{n}' for (_, name), count in counts.items() for n in range(1, count + 1)})
        assert any(p.startswith('rename') for p in points), points
        outcomes: dict[str, str] = {}
        for point in points:
            plant(root, old)
            status, _ = traced(server, point)
            if status == signal.SIGKILL:
                outcomes[point] = recovered(root, old, new)
            else:
                assert status == 0
                assert recovered(root, old, new) == 'new'
        assert len(outcomes) >= len(points) // 2, (len(outcomes), points)
        assert {'old', 'new'} <= set(outcomes.values()), outcomes
    finally:
        server.close()
