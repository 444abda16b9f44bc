"""Memory faults (issue 19): nothing a tree, a file or a pattern holds can make memory run away
or abort the interpreter.

Each case runs the toolset directly in a fresh interpreter (`CHILD`), which reports the tool's
answer (or the exception's type and text), and how much its peak resident memory grew
(`resource.getrusage`). An address-space limit (`RLIMIT_AS`, set after the imports and a warm-up
call) turns an allocation the size of a file into an allocation failure: a Rust abort kills the
child (a signal), where the tools must answer with a retry and live.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai.workspaces import LocalWorkspaceBackend
from pydantic_ai_harness_rs import FileSystem

from tests.filesystem.conftest import beyond_reference

pytestmark = beyond_reference('issue 19: faults of this package')

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, resource, sys
    import anyio
    from pydantic_ai_harness_rs import FileSystem

    root, tool, args, headroom_mib = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
    toolset = FileSystem(root_dir=root).get_toolset()

    async def run(**kwargs):
        try:
            return await getattr(toolset, tool)(**kwargs)
        except Exception as e:  # the answer the model would get, as a retry or error
            return f'{type(e).__name__}: {e}'

    async def main():
        await toolset.search_files('warm', path='warm')  # threads and buffers set up first
        await toolset.read_file('warm/w.txt')
        if headroom_mib:
            with open('/proc/self/status') as f:
                vm = next(int(line.split()[1]) for line in f if line.startswith('VmSize:')) * 1024
            limit = vm + headroom_mib * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = await run(**args)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({'result': str(result), 'growth_kib': after - before}))

    anyio.run(main)
    """
)


def in_child(root: Path, tool: str, headroom_mib: int = 0, **args: object) -> tuple[str, int]:
    """`tool(**args)` on `FileSystem(root_dir=root)` in a fresh interpreter, with `headroom_mib`
    of address space left (0: no limit): (answer, peak RSS growth in KiB). Fails if it died."""
    (root / 'warm').mkdir(exist_ok=True)
    (root / 'warm' / 'w.txt').write_text('warm\n')
    proc = subprocess.run(
        [sys.executable, '-c', CHILD, str(root), tool, json.dumps(args), str(headroom_mib)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return report['result'], report['growth_kib']


def sparse(path: Path, head: bytes, size: int) -> None:
    """A file of `size` bytes: `head`, then a hole of zeros (no disk used for it)."""
    with path.open('wb') as f:
        f.write(head)
        f.truncate(size)


@pytest.fixture
def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A temporary directory on tmpfs when there is one (many files are made quickly there)."""
    if not Path('/dev/shm').is_dir():
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(dir='/dev/shm'))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_flat_directory_search_memory_is_linear(fast_tmp: Path) -> None:
    """Item 1: one flat directory of 16,000 files; `search_files` once held a copy of the rest
    of the listing per 64 entries (about 64 MiB here, 2.4 GiB at 100,000 files)."""
    flat = fast_tmp / 'flat'
    flat.mkdir()
    for i in range(16_000):
        (flat / f'f{i:05}.txt').touch()
    (flat / 'f15999.txt').write_text('needle\n')
    result, growth = in_child(fast_tmp, 'search_files', pattern='needle', path='flat')
    assert result == 'flat/f15999.txt:1:needle'
    assert growth < 24 * 1024, f'peak RSS grew by {growth} KiB'


def test_binary_file_is_sniffed_before_it_is_read(fast_tmp: Path) -> None:
    """Item 2: a 2 GiB sparse file of NULs is answered `binary` from its first bytes, under an
    address-space limit far below its size (it was read whole first: 2.1 GiB, or an abort)."""
    sparse(fast_tmp / 'nul.bin', b'', 2 << 30)
    result, growth = in_child(fast_tmp, 'edit_file', 512, path='nul.bin', old_text='a', new_text='b')
    assert result == 'ModelRetry: nul.bin is a binary file; edit_file only edits text files.'
    assert growth < 64 * 1024


def test_text_file_too_big_to_edit_in_memory_is_refused(fast_tmp: Path) -> None:
    """Item 2: a 1 GiB text file under a 512 MiB address-space headroom: a retry, no abort, the
    file untouched."""
    big = fast_tmp / 'big.txt'
    sparse(big, b'hello world\n' * 1000, 1 << 30)
    result, _ = in_child(fast_tmp, 'edit_file', 512, path='big.txt', old_text='hello', new_text='bye')
    assert result == (
        'ModelRetry: big.txt is too big to edit in memory (1073741824 bytes). No changes were written. '
        'Edit it with a tool that streams the file (a shell command such as sed), or split it into smaller files.'
    )
    assert big.stat().st_size == 1 << 30
    with big.open('rb') as f:
        assert f.read(12) == b'hello world\n'


def test_read_window_too_big_for_memory_is_refused(fast_tmp: Path) -> None:
    """Item 2: `read_file` of a 1 GiB one-line text file (the document contract keeps the whole
    line) under a 256 MiB headroom: a retry naming offset and limit, no abort."""
    sparse(fast_tmp / 'big.txt', b'hello world\n' + b'x' * 8192, 1 << 30)
    result, _ = in_child(fast_tmp, 'read_file', 256, path='big.txt')
    assert result == (
        'ModelRetry: The file is too big to read in memory at once. Read it in parts with offset and limit, '
        'or inspect a byte range with a shell command.'
    )


HUGE_PATTERN = '(a|b)' * 20_000
"""20,000 capture groups over 60,000 states: a 19 GB capture slot table in the engines' PikeVM."""


@pytest.mark.parametrize('tool', ['search_files', 'grep'])
def test_pattern_too_big_to_match_is_refused(fast_tmp: Path, tool: str) -> None:
    """Extra fault: a pattern whose capture slot table passes the bound, against a 200,000-char
    line, is refused with a retry (it aborted the interpreter allocating ~120 GB)."""
    (fast_tmp / 'long.txt').write_text('a' * 200_000 + '\n')
    result, _ = in_child(fast_tmp, tool, 1024, pattern=HUGE_PATTERN, path='long.txt')
    reason = (
        'pattern too large: 20000 capture groups over 60005 automaton states would need 18312 MiB to match; '
        'use non-capturing groups (?:...) or a shorter pattern'
    )
    prefix = 'Invalid regex pattern: ' if tool == 'search_files' else 'ripgrep failed: rg: '
    assert result == f'ModelRetry: {prefix}{reason}'


async def test_match_on_a_line_longer_than_32_mib_is_found(fast_tmp: Path) -> None:
    """Item 6: under 0.62.0's contract a match on a 33 MiB line comes back as 0.62.0 shows it (its
    first 4096 chars and `[... omitted end of long line]`), not as `No matches found.`; a pattern
    that cannot be searched in windows says the line was skipped."""
    line = fast_tmp / 'line.txt'
    sparse(line, b'x' * 8192, 33 << 20)
    with line.open('ab') as f:
        f.write(b' needle\nshort needle\n')
    toolset = FileSystem().get_toolset()
    workspace = LocalWorkspaceBackend(str(fast_tmp))
    result = await toolset.search_files('needle', path='line.txt', workspace=workspace)
    assert result == f'line.txt:1:{"x" * 4096} [... omitted end of long line]\nline.txt:2:short needle'
    result = await toolset.search_files('needle.*', path='line.txt', workspace=workspace)
    assert result == (
        'line.txt:2:short needle\n[skipped: 1 line longer than 32 MiB not searched; a pattern of bounded '
        'length without anchors or lookaround (no *, + or {n,}) searches them]'
    )


CANCELLED_GREP = textwrap.dedent(
    """
    import sys, time
    import anyio
    from pydantic_ai_harness_rs import FileSystem

    root, literal = sys.argv[1], sys.argv[2] == 'literal'
    with open(f'{root}/pattern', encoding='utf-8') as f:
        pattern = f.read()  # too long for an argument

    async def main():
        toolset = FileSystem(root_dir=root).get_toolset()
        with anyio.move_on_after(1.0):
            print(await toolset.grep(pattern, path='line.txt', literal=literal), flush=True)
        print(f'cancelled at {time.time()}', flush=True)

    anyio.run(main)  # the interpreter's exit then waits for the grep's native work to stop
    """
)


@pytest.mark.parametrize('literal', ['literal', 'regex'])
def test_cancelled_grep_stops_its_native_work(fast_tmp: Path, literal: str) -> None:
    """Item 7: a `grep` cancelled after 1 s stops searching its 40 MiB line, so the interpreter
    exits at once (it waited for the native search: 128 s for the issue's 200,000-char literal,
    given as a fixed string or as a regex without metacharacters). The bound only tells a stopped
    search from one still going: either way the call itself answered the cancel."""
    pattern = 'x' * 199_999 + 'y'
    (fast_tmp / 'line.txt').write_bytes(b'x' * (40 << 20) + b'\n')
    (fast_tmp / 'pattern').write_text(pattern)
    proc = subprocess.run(
        [sys.executable, '-c', CANCELLED_GREP, str(fast_tmp), literal],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    exited = time.time()
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    cancelled = float(next(line for line in lines if line.startswith('cancelled at ')).split()[-1])
    assert exited - cancelled < 15, f'native work went on for {exited - cancelled:.1f} s after the cancel'


CPU_AFTER_CANCEL = textwrap.dedent(
    """
    import os, resource, sys, time
    import anyio
    from pydantic_ai.workspaces import LocalWorkspaceBackend
    from pydantic_ai_harness_rs import FileSystem

    root, tool, pattern = sys.argv[1:4]

    def cpu():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    async def main():
        workspace = LocalWorkspaceBackend(root)
        if tool == 'grep':
            call = FileSystem(root_dir=root).get_toolset().grep(pattern, path='line.txt')
        elif tool == 'grep-workspace':  # 0.62.0's contract
            call = FileSystem().get_toolset().grep(pattern, path='line.txt', workspace=workspace)
        else:
            call = FileSystem().get_toolset().search_files(pattern, path='line.txt', workspace=workspace)
        with anyio.move_on_after(2.0):
            print(await call, flush=True)
        before = cpu()
        await anyio.sleep(1.5)  # a search still going uses most of this on its core
        print(f'cpu after the cancel {cpu() - before:.3f}', flush=True)
        os._exit(0)  # not waiting for a search still going

    anyio.run(main)
    """
)


@pytest.mark.parametrize(
    ('tool', 'pattern'),
    [
        ('grep', '(x|xx){1,20000}y+'),  # unbounded: one engine call over the line
        ('grep', '(x|xx){1,20000}y'),  # bounded, but its automaton is huge
        ('grep-workspace', '(x|xx){1,20000}y+'),
        ('search_files', '(x|xx){1,20000}y+'),
    ],
)
def test_cancelled_search_stops_inside_a_long_line(fast_tmp: Path, tool: str, pattern: str) -> None:
    """Item 7: a `grep` or `search_files` cancelled while one engine call searched an 8 MiB line
    with a huge automaton went on using a core (seconds to minutes: the engine gives up its lazy
    DFA and walks every state for every byte); the lazy DFA driven a byte at a time reads the
    cancel flag as it goes, so no CPU is used after the cancel. The bound only tells a stopped
    search from one still going (which uses most of the 1.5 s it is given)."""
    (fast_tmp / 'line.txt').write_bytes(b'x' * (8 << 20) + b'\n')
    proc = subprocess.run(
        [sys.executable, '-c', CPU_AFTER_CANCEL, str(fast_tmp), tool, pattern],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[:-1] == [], lines  # cancelled before any answer
    used = float(lines[-1].split()[-1])
    assert used < 0.15, f'the search went on using {used:.2f} s of CPU after the cancel'
