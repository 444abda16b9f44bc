"""Times the Rust FileSystem core against the raw tools it should keep pace with.

    python benches/fs_core.py [--data DIR] [read search list find]

Generates its data once under DIR (default: $TMPDIR/fs-core-bench): a 512 MiB log, a tree of
46,000 source-like files, a flat directory of 50,000 files. Each line reports the best of three
runs of ours, of the raw tool, and their ratio. Build the extension with `maturin develop --release`
first; `rg` comes from PATH (the `ripgrep` package of the test extra installs it).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from pydantic_ai_harness_rs import _core

WORDS = ['fn', 'let', 'mut', 'self', 'return', 'match', 'impl', 'struct', 'pub', 'use', 'value', 'error', 'result']


def make_data(data: Path) -> None:
    data.mkdir(parents=True, exist_ok=True)
    log = data / 'big.log'
    if not log.exists():
        with log.open('w') as f:
            size, i = 0, 0
            while size < 512 * 1024 * 1024:
                chunk = ''.join(
                    f'2026-11-30T05:{j % 60:02d}:00Z INFO worker-{j % 17} request id={j} '
                    f'path=/api/v1/items/{j * 7 % 1000} status=200 dur={j % 997}ms\n'
                    for j in range(i, i + 10000)
                )
                f.write(chunk)
                size += len(chunk)
                i += 10000
    tree = data / 'tree'
    if not tree.exists():
        rnd = random.Random(1)
        for n in range(46000):
            d = tree / f'pkg{n % 23}' / f'mod{n % 197}'
            d.mkdir(parents=True, exist_ok=True)
            lines = (' '.join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 12))) for _ in range(rnd.randint(20, 80)))
            (d / f'file{n}.rs').write_text('\n'.join(lines) + '\n')
    flat = data / 'flat'
    if not flat.exists():
        flat.mkdir()
        for n in range(50000):
            (flat / f'f{n:05d}.txt').write_text('x')


def best(fn, n: int = 3) -> tuple[float, object]:
    top, result = float('inf'), None
    for _ in range(n):
        start = time.perf_counter()
        result = fn()
        top = min(top, time.perf_counter() - start)
    return top, result


def shell(cmd: str) -> float:
    return best(lambda: subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))[0]


def core(root: Path, *, max_results: int = 1000) -> _core.FileSystemCore:
    return _core.FileSystemCore(str(root), None, [], [], [], 2000, None, max_results, max_results, max_results, True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--data', type=Path, default=Path(tempfile.gettempdir()) / 'fs-core-bench')
    parser.add_argument('what', nargs='*', default=['read', 'search', 'list', 'find'])
    args = parser.parse_args()
    make_data(args.data)
    token = _core.CancelToken()
    data: Path = args.data
    rg = shutil.which('rg')
    if 'read' in args.what:
        fs = core(data)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        ours, _ = best(lambda: fs.read_file('big.log', 0, None, cancel=token))
        growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
        raw = shell(f'openssl dgst -sha256 {data / "big.log"}')
        print(f'read_file first window of 512 MiB: {ours:.3f}s, openssl sha256 {raw:.3f}s, ratio {ours / raw:.2f}, RSS +{growth:.1f} MiB')
    if 'search' in args.what and rg:
        fs = core(data / 'tree')
        ours, _ = best(lambda: fs.search_files('ZQXJ_RARE_LITERAL', '.', None, cancel=token))
        raw = shell(f'cd {data / "tree"} && {rg} -n --no-ignore ZQXJ_RARE_LITERAL')
        print(f'search_files rare literal, 46k files: {ours:.3f}s, rg {raw:.3f}s, ratio {ours / raw:.2f}')
    if 'list' in args.what:
        fs = core(data, max_results=100000)
        ours, _ = best(lambda: fs.list_directory('flat', cancel=token))
        raw = shell(f'ls -1 {data / "flat"}')
        print(f'list_directory 50k entries: {ours:.3f}s, ls -1 {raw:.3f}s, ratio {ours / raw:.2f}')
    if 'find' in args.what:
        fs = core(data / 'tree', max_results=100000)
        ours, _ = best(lambda: fs.find_files('**/*.rs', '.', cancel=token))
        raw = shell(f"cd {data / 'tree'} && find . -name '*.rs'")
        print(f'find_files **/*.rs, 46k files: {ours:.3f}s, find {raw:.3f}s, ratio {ours / raw:.2f}')


if __name__ == '__main__':
    os.environ.setdefault('LC_ALL', 'C')
    main()
