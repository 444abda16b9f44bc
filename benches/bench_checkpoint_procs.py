"""Checkpoints across processes (issue 23): what the store's lock and a durable call's record cost.

Usage: `python benches/bench_checkpoint_procs.py --base DIR [--repeat 30]`

`--base`: a directory holding another build's `pydantic_ai_harness_rs` package (say, main's `python/`
with its `_core.abi3.so`), run in a child process beside this checkout's in one run. On a copy of
this machine's CPython standard library:

- `keep+record`: a file tool's checkpoint of one small file (`keep([path])`, a write, `record`);
  with the lock, each takes and drops the store's `flock` (and reads its generation).
- `snapshot+record`: a shell command's two walks (the command is `true`, not timed).
- `durable snapshot+record` (this checkout only): the same with the call's identity, as a durable
  unit passes it: the index is written at the snapshot and the call's record written and removed.
- `command snapshot+record`: a shell command outside a durable unit as `Checkpoints` takes it (`call=True`;
  with `durable=False` and the call's identity where the build has it: the record a process that dies
  mid-command leaves for the next one); `edit, then command`: the same right after a file tool's
  record (untimed), which leaves the index unsaved, so the snapshot writes it before the record.

Each time is the best (and the median) of `--repeat` calls (`keep+record`: ten times as many), in
microseconds. Prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, os, statistics, sys, time
from pydantic_ai_harness_rs import _core

root, repeat = sys.argv[1], int(sys.argv[2])
store = _core.CheckpointStore(root)
store.record(store.snapshot(), run_id=None, tool_call_id=None, tool_name='warm', created_at=0.0)
ident = {'run_id': 'r', 'tool_call_id': 't', 'tool_name': 'run_command', 'created_at': 1.0}
out = {}

def timed(name, run, times_over=1):
    times = []
    for i in range(repeat * times_over):
        start = time.perf_counter()
        run(i)
        times.append(time.perf_counter() - start)
    out[name] = (min(times) * 1e6, statistics.median(times) * 1e6)

target = os.path.join(root, 'bench-target.txt')

def keep_record(i):
    h = store.keep(['bench-target.txt'])
    with open(target, 'w') as f:
        f.write('x' * 4096 + str(i))
    store.record(h, run_id='r', tool_call_id=f'k{i}', tool_name='write_file', created_at=1.0)

timed('keep+record', keep_record, 10)
timed('snapshot+record', lambda i: store.record(store.snapshot(), run_id='r', tool_call_id=f's{i}', tool_name='run_command', created_at=1.0))
try:
    store.release(store.snapshot(call=True, **ident))
except TypeError:
    pass  # a build without the call's identity
else:
    def durable(i):
        h = store.snapshot(call=True, **{**ident, 'tool_call_id': f'd{i}'})
        store.record(h, **{**ident, 'tool_call_id': f'd{i}'})
    timed('durable snapshot+record', durable)

def command(i, edit=False):
    if edit:  # a file tool's record first (untimed): the index left unsaved
        h = store.keep(['bench-target.txt'])
        with open(target, 'w') as f:
            f.write('e' * 4096 + str(i))
        store.record(h, run_id='r', tool_call_id=f'e{i}', tool_name='write_file', created_at=1.0)
    call = {**ident, 'tool_call_id': f'c{i}'}
    start = time.perf_counter()
    try:
        h = store.snapshot(call=True, **call, durable=False)
    except TypeError:  # a build without it: a command's snapshot had no record
        h = store.snapshot(call=True)
    store.record(h, **call)
    return time.perf_counter() - start

for name, edit in (('command snapshot+record', False), ('edit, then command', True)):
    times = [command(i, edit) for i in range(repeat)]
    out[name] = (min(times) * 1e6, statistics.median(times) * 1e6)
print(json.dumps(out))
"""


def run(package_dir: str, root: str, repeat: int) -> dict[str, list[float]]:
    env = {**os.environ, 'PYTHONPATH': package_dir}
    done = subprocess.run(
        [sys.executable, '-c', CHILD, root, str(repeat)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--base', required=True)
    parser.add_argument('--repeat', type=int, default=30)
    args = parser.parse_args()
    this = str(HERE.parent / 'python')
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for name, package in (('base', args.base), ('this', this)):
            root = Path(tmp, name)
            shutil.copytree(sysconfig.get_paths()['stdlib'], root, ignore=shutil.ignore_patterns('__pycache__'))
            results[name] = run(package, str(root), args.repeat)
    print(f'load: {os.getloadavg()}  time: {time.strftime("%Y-%m-%d %H:%M:%S")}')
    print('| step | base best / median (us) | this best / median (us) | ratio (best) |')
    print('|---|---|---|---|')
    for step in (
        'keep+record',
        'snapshot+record',
        'durable snapshot+record',
        'command snapshot+record',
        'edit, then command',
    ):
        base = results['base'].get(step) or results['base']['snapshot+record']
        mine = results['this'][step]
        print(f'| {step} | {base[0]:.0f} / {base[1]:.0f} | {mine[0]:.0f} / {mine[1]:.0f} | {mine[0] / base[0]:.2f}x |')


if __name__ == '__main__':
    main()
