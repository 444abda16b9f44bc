"""search_files over huge and special files: bounded memory, exact results, no endless reads.

Each search runs through a real Agent in a subprocess, which reports its result and how much
its peak resident memory grew (`resource.getrusage`), so an allocation of the file's size
shows as growth (or as the process aborting) rather than passing unnoticed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic_ai_harness_rs.filesystem import FileSystem

from tests.scripted import call

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]

# Peak memory a search may add, whatever the sizes of the files it reads.
BOUND_KIB = 256 * 1024

SEARCH = textwrap.dedent(
    """
    import json, resource, sys
    import anyio
    from pydantic_ai_harness_rs.filesystem import FileSystem
    from tests.scripted import call

    root, pattern, glob, warmup = sys.argv[1:5]

    async def search(path: str) -> str:
        args = {'pattern': pattern, 'path': path}
        if glob:
            args['include_glob'] = glob
        result, _ = await call([FileSystem(root_dir=root)], 'search_files', **args)
        return result

    anyio.run(search, warmup)  # agent, threads and buffers set up before the baseline
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = anyio.run(search, '.')
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({'result': result, 'growth_kib': after - before}))
    """
)


def search_in_subprocess(root: Path, pattern: str, *, glob: str = '', warmup: str = 'warm') -> tuple[str, int]:
    """`search_files(pattern)` over `root` in a fresh interpreter: (result, peak RSS growth in KiB)."""
    proc = subprocess.run(
        [sys.executable, '-c', SEARCH, str(root), pattern, glob, warmup],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return report['result'], report['growth_kib']


def sparse(path: Path, head: bytes, size: int, tail: bytes) -> None:
    """A file of `size` bytes: `head`, a hole of zeros, then `tail` (no disk used for the hole)."""
    with path.open('wb') as f:
        f.write(head)
        f.truncate(size - len(tail))
        f.seek(size - len(tail))
        f.write(tail)


def test_huge_files_stream_with_exact_results_and_bounded_memory(tmp_path: Path) -> None:
    root = tmp_path / 'root'
    (root / 'warm').mkdir(parents=True)
    (root / 'warm' / 'w.txt').write_text('TODO warm\n' * 1000)
    # 8,000 short text lines (so the file is not binary), a 1 GiB line of NULs (a hole), a match.
    sparse(root / 'a-big.log', b'TODO start\n' + b'x\n' * 8000, 1 << 30, b'\nTODO end\n')
    # NULs in the first 8 KiB: binary, skipped (whatever its size: 8 GiB here).
    sparse(root / 'b.img', b'TODO in a binary\n', 8 << 30, b'TODO end\n')
    # 26 MiB of lines ending in `\r\n`, `\r`, U+2028 and `\n`: numbered as `str.splitlines()` does.
    block = 'alpha\r\nbeta\rgamma\u2028delta\n'.encode() * (1 << 16)
    with (root / 'c.txt').open('wb') as f:
        f.write(b'needle first\n')
        for _ in range(16):
            f.write(block)
        f.write(b'last TODO')
    result, growth = search_in_subprocess(root, 'TODO|needle', glob='[abc]*')
    assert result == (
        'a-big.log:1:TODO start\n'
        'a-big.log:8003:TODO end\n'
        'c.txt:1:needle first\n'
        f'c.txt:{1 + 16 * 4 * (1 << 16) + 1}:last TODO'
    )
    assert growth < BOUND_KIB, f'peak RSS grew by {growth} KiB'


@pytest.mark.skipif(not Path('/proc/self/pagemap').exists(), reason='needs Linux /proc')
async def test_pseudo_files_are_not_read() -> None:
    # /proc/self/pagemap reads forever (and `mem`, `kcore` worse): procfs files are passed over.
    result, _ = await call([FileSystem(root_dir='/proc/self')], 'search_files', pattern='.', include_glob='*')
    assert result == 'No matches found.'


async def test_fifo_in_the_tree_is_not_opened_for_reading(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / 'pipe')
    (tmp_path / 'z.txt').write_text('TODO z\n')
    result, _ = await call([FileSystem(root_dir=tmp_path)], 'search_files', pattern='TODO')
    assert result == 'z.txt:1:TODO z'
