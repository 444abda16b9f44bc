"""Checkpoints: one look at a background job that changed nothing (issue 23), two ways in one run.

Usage: `python benches/bench_checkpoint_jobs.py [--files 20000] [--repeat 20]`

A job's changes are looked for at the start of each later tool call: its open snapshot is recorded
and a new one opened. Two ways, on the same store, alternating:

- `record+snapshot`: `record(handle)` then `snapshot()`, two locked steps and two walks (before
  `record_reopen`; a change landing between the two went to the baseline);
- `record_reopen`: one step, one walk: the record's walk kept as the next snapshot.

On a copy of this machine's CPython standard library and on a generated tree of `--files` files
(100 per directory). Prints the best of `--repeat` looks each, in milliseconds, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic_ai_harness_rs import _core

IDENT = {'run_id': 'r', 'tool_call_id': 't', 'tool_name': 'start_command', 'created_at': time.time()}


def best(look: Callable[[], None], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        look()
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def measure(root: Path, repeat: int) -> tuple[float, float]:
    store = _core.CheckpointStore(str(root))
    handle = store.snapshot()  # the first walk keeps the whole tree: not timed

    def two_steps() -> None:
        nonlocal handle
        assert store.record(handle, **IDENT) is None
        handle = store.snapshot()

    def one_step() -> None:
        nonlocal handle
        listing, reopened = store.record_reopen(handle, **IDENT)
        assert listing is None and reopened is not None
        handle = reopened

    two_steps(), one_step()  # warm
    old, new = [], []
    for _ in range(3):
        old.append(best(two_steps, repeat))
        new.append(best(one_step, repeat))
    store.release(handle)
    return min(old), min(new)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--files', type=int, default=20_000)
    parser.add_argument('--repeat', type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stdlib = Path(tmp, 'stdlib')
        shutil.copytree(sysconfig.get_paths()['stdlib'], stdlib, ignore=shutil.ignore_patterns('__pycache__'))
        generated = Path(tmp, 'generated')
        for i in range(args.files):
            directory = generated / f'd{i // 100:04d}'
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f'f{i % 100:03d}.txt').write_text(f'{i}\n')
        print(f'load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores')
        print('| tree | files | record+snapshot (ms) | record_reopen (ms) | ratio |')
        print('|---|---:|---:|---:|---:|')
        for name, root in (('CPython stdlib', stdlib), ('generated', generated)):
            files = sum(len(f) for _, _, f in os.walk(root))
            old, new = measure(root, args.repeat)
            print(f'| {name} | {files:,} | {old:.1f} | {new:.1f} | {old / new:.2f} |')


if __name__ == '__main__':
    main()
