"""Time the in-process `list_files` / `grep` engine against the `rg` CLI.

Generates (once, deterministically) a 200,000-file synthetic monorepo with ignore files
(`gen_monorepo.py`), then times three workloads, best of `--runs` warm runs each:

- rare literal: `grep -F XYZZY_RARE_TOKEN` (a few hits, the whole tree searched);
- common regex capped at 1,000 lines: `grep 'import \\w+'`;
- `list_files` capped at 1,000 entries.

Ours is `target/release/examples/rg_bench` (build it with
`cargo build --release --example rg_bench`), one process per run, timed from outside like
`rg`. Its authorizer calls `realpath` per shown entry, as the reference does; the
"lexical" row skips that (see `Authorize`). `rg` runs with the reference's exact arguments
in the walk root. For the capped
workloads `rg` is timed twice: run to completion (`rg full`), and the way the reference runs
it, reading its output until the cap plus one record and then killing it (`rg capped`).

    python benches/bench_ripgrep.py [--dir DIR] [--files N] [--runs N] [--rg PATH] [--bin PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, os.fspath(Path(__file__).resolve().parent))
import chart  # noqa: E402
from gen_monorepo import RARE_TOKEN, generate  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GREP_ARGS = [
    '--null',
    '--color=never',
    '--line-number',
    '--with-filename',
    '--sort',
    'path',
    '--max-columns',
    '4096',
    '--max-columns-preview',
    '--context',
    '0',
]
LIST_ARGS = ['--null', '--color=never', '--files', '--sort', 'path']
CAP = 1000


def best_of(runs: int, *fns: Callable[[], object]) -> list[float]:
    """Best wall time of each of `fns`, run interleaved so load swings hit all alike."""
    for fn in fns:
        fn()  # warm the page cache and the binary
    best = [float('inf')] * len(fns)
    for _ in range(runs):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def run_full(argv: list[str], cwd: Path) -> None:
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def run_capped(argv: list[str], cwd: Path, terminator: bytes, limit: int) -> None:
    """Read records until `limit + 1` arrived, then kill: what the reference does."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    seen = 0
    pending = b''
    while True:
        chunk = proc.stdout.read1(65536)
        if not chunk:
            break
        pending += chunk
        count = pending.count(terminator)
        seen += count
        pending = pending[pending.rfind(terminator) + 1 :] if count else pending
        if seen > limit:
            proc.terminate()
            break
    proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--dir', type=Path, default=Path('/tmp/rg-bench-monorepo'))
    parser.add_argument('--files', type=int, default=200_000)
    parser.add_argument('--runs', type=int, default=5)
    parser.add_argument('--rg', default=shutil.which('rg'))
    parser.add_argument('--bin', type=Path, default=REPO / 'target' / 'release' / 'examples' / 'rg_bench')
    args = parser.parse_args()
    if args.rg is None:
        sys.exit('rg not found: pass --rg or put it on PATH (pip install ripgrep)')
    if not args.bin.exists():
        sys.exit(f'{args.bin} missing: cargo build --release --example rg_bench')
    marker = args.dir / '.gen-complete'
    if not marker.exists() or marker.read_text().split()[0] != str(args.files):
        print(f'generating {args.files} files under {args.dir} ...', flush=True)
        shutil.rmtree(args.dir, ignore_errors=True)
        generate(args.dir, args.files, 20261130)
    root = args.dir
    ours = [os.fspath(args.bin)]
    workloads = [
        (
            'rare literal',
            ours + ['grep', os.fspath(root), RARE_TOKEN, '-F', '--max', str(CAP), '--quiet'],
            [args.rg, *GREP_ARGS, '--fixed-strings', '--regexp', RARE_TOKEN, '--', '.'],
            b'\n',
        ),
        (
            f'common regex, cap {CAP}',
            ours + ['grep', os.fspath(root), r'import \w+', '--max', str(CAP), '--quiet'],
            [args.rg, *GREP_ARGS, '--regexp', r'import \w+', '--', '.'],
            b'\n',
        ),
        (
            f'list_files, cap {CAP}',
            ours + ['list', os.fspath(root), '--max', str(CAP), '--quiet'],
            [args.rg, *LIST_ARGS],
            b'\0',
        ),
        (
            '  same, lexical authorize',
            ours + ['list', os.fspath(root), '--max', str(CAP), '--quiet', '--lexical'],
            [args.rg, *LIST_ARGS],
            b'\0',
        ),
    ]
    print(f'{"workload":<26} {"ours":>9} {"rg capped":>10} {"rg full":>9} {"ours/rg capped":>15} {"ours/rg full":>13}')
    for name, our_argv, rg_argv, term in workloads:
        t_ours, t_capped, t_full = best_of(
            args.runs,
            lambda: run_full(our_argv, root),
            lambda: run_capped(rg_argv, root, term, CAP),
            lambda: run_full(rg_argv, root),
        )
        print(
            f'{name:<26} {t_ours:>8.3f}s {t_capped:>9.3f}s {t_full:>8.3f}s '
            f'{t_ours / t_capped:>15.2f} {t_ours / t_full:>13.2f}',
            flush=True,
        )
    print(f'chart (from benches/results/*-latest.md; copy the rows above into ripgrep-latest.md first): {chart.write_chart()}')


if __name__ == '__main__':
    main()
