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
from collections.abc import Iterator
from pathlib import Path

import pytest

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
