"""Issue 19's memory faults, measured: ours vs pydantic-ai-harness 0.36.0 and 0.62.0, in one run.

Usage: `python benches/bench_faults.py [--files N] [--only NAME ...] [--ours-python PATH]
        [--ref036-python PATH] [--ref062-python PATH]`

Workloads (each call in a fresh interpreter per package, which reports the call's wall time,
its peak RSS (`ru_maxrss` of the interpreter alone: the `rg` child the references run for `grep`,
`list_files` and 0.62.0's `search_files` is not counted, so their memory is understated there) and its answer, or how it died):

- `flat_<tool>`: every walker over one flat directory of `--files` (default 100,000) 8-byte
  files: `search_files`, `find_files('*.txt')`, `list_directory`, and where the package has them
  `grep` and `list_files` (0.36.0 has neither). Caps lifted to 1,000,000 so each tool walks
  the whole directory.
- `edit_sparse_2g`: `edit_file` of a 2 GiB sparse file of NULs (the answer is `binary`).
- `edit_1g_limited`: `edit_file` of a 1 GiB text file (8 KiB of text, then a hole) under an
  address-space limit of the interpreter's size + 512 MiB (`RLIMIT_AS`): a retry or
  `MemoryError` lives; a Rust allocation failure ends the process with SIGABRT.

Ours runs with `root_dir` (the document's contract) in `--ours-python` (default: this
interpreter); 0.36.0 likewise in `--ref036-python` (default: the compat venv); 0.62.0 with no
`root_dir` and `workspace=LocalWorkspaceBackend(dir)` in `--ref062-python` (default: the compat
venv); that venv's `bin/` goes first on `PATH` for all three, so the references' `grep` finds
its `rg`. Inputs live in a temporary directory
(tmpfs when there is one) removed at the end. The table goes to stdout and to
`benches/results/faults-latest.md`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / 'results' / 'faults-latest.md'
VENVS = REPO / 'tests' / 'compat' / '.venvs'
if not VENVS.is_dir():  # a worktree: the main checkout's venvs
    VENVS = Path('/work/main/tests/compat/.venvs')

CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    import anyio

    package, root, tool, args, headroom_mib = sys.argv[1:6]
    args, headroom_mib = json.loads(args), int(headroom_mib)
    caps = {'max_list_results': 1_000_000, 'max_search_results': 1_000_000, 'max_find_results': 1_000_000}
    extra = {}
    if package == 'ours':
        from pydantic_ai_harness_rs import FileSystem
        toolset = FileSystem(root_dir=root, **caps).get_toolset()
    else:
        from pydantic_ai_harness.filesystem import FileSystem
        if package == '0.62.0':
            from pydantic_ai.workspaces import LocalWorkspaceBackend
            toolset, extra = FileSystem(**caps).get_toolset(), {'workspace': LocalWorkspaceBackend(root)}
        else:
            toolset = FileSystem(root_dir=root, **caps).get_toolset()

    async def main():
        if not hasattr(toolset, tool):
            print(json.dumps({'missing': True}))
            return
        await toolset.read_file('warm.txt', **extra)  # imports and threads set up first
        if headroom_mib:
            with open('/proc/self/status') as f:
                vm = next(int(line.split()[1]) for line in f if line.startswith('VmSize:')) * 1024
            limit = vm + headroom_mib * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        start = time.perf_counter()
        try:
            result = str(await getattr(toolset, tool)(**args, **extra))
        except BaseException as e:  # what the model (or the run) would get
            result = f'{type(e).__name__}: {e}'
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({'seconds': seconds, 'peak_kib': peak, 'result': result[:160]}))

    anyio.run(main)
    """
)

FLAT_CALLS = {
    'search_files': {'pattern': 'needle', 'path': 'flat'},
    'find_files': {'pattern': '*.txt', 'path': 'flat'},
    'list_directory': {'path': 'flat'},
    'grep': {'pattern': 'needle', 'path': 'flat'},
    'list_files': {'path': 'flat'},
}


RG_DIR = VENVS / 'harness-0.62.0' / 'bin'
"""Where the compat venv's `rg` lives: on `PATH` for every package (the references' `grep` runs it)."""


def make_inputs(root: Path, files: int) -> None:
    (root / 'warm.txt').write_text('warm\n')
    flat = root / 'flat'
    flat.mkdir()
    for i in range(files):
        (flat / f'f{i:06}.txt').write_bytes(b'content\n')
    with (root / 'nul.bin').open('wb') as f:
        f.truncate(2 << 30)
    with (root / 'big.txt').open('wb') as f:
        f.write(b'hello world\n' * 700)
        f.truncate(1 << 30)


def run(python: str, package: str, root: Path, tool: str, args: dict, headroom_mib: int = 0) -> dict:
    env = dict(os.environ)
    env['PATH'] = f'{RG_DIR}:{env.get("PATH", "")}'
    proc = subprocess.run(
        [python, '-c', CHILD, package, str(root), tool, json.dumps(args), str(headroom_mib)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        died = f'signal {-proc.returncode}' if proc.returncode < 0 else f'exit {proc.returncode}'
        abort = 'memory allocation of' in proc.stderr
        return {'died': died + (' (Rust allocation failure)' if abort else '')}
    return json.loads(lines[-1])


def cell(r: dict) -> str:
    if r.get('missing'):
        return '—'
    if 'died' in r:
        return f'died: {r["died"]}'
    return f'{r["seconds"]:.2f} s, {r["peak_kib"] / 1024:.0f} MiB'


def ratio(ours: dict, ref: dict, key: str) -> str:
    if 'died' in ours or 'died' in ref or ours.get('missing') or ref.get('missing'):
        return '—'
    return f'{ours[key] / ref[key]:.2f}x' if ref[key] else '—'


def main() -> None:
    parser = argparse.ArgumentParser(description="Issue 19's memory faults: ours vs 0.36.0 and 0.62.0.")
    parser.add_argument('--files', type=int, default=100_000)
    parser.add_argument('--only', nargs='*')
    parser.add_argument('--ours-python', default=sys.executable)
    parser.add_argument('--ref036-python', default=str(VENVS / 'harness-0.36.0' / 'bin' / 'python'))
    parser.add_argument('--ref062-python', default=str(VENVS / 'harness-0.62.0' / 'bin' / 'python'))
    opts = parser.parse_args()
    packages = {'ours': opts.ours_python, '0.36.0': opts.ref036_python, '0.62.0': opts.ref062_python}
    workloads: list[tuple[str, str, dict, int]] = [(f'flat_{t}', t, a, 0) for t, a in FLAT_CALLS.items()]
    workloads += [
        ('edit_sparse_2g', 'edit_file', {'path': 'nul.bin', 'old_text': 'a', 'new_text': 'b'}, 0),
        ('edit_1g_limited', 'edit_file', {'path': 'big.txt', 'old_text': 'absent', 'new_text': 'b'}, 512),
    ]
    if opts.only:
        workloads = [w for w in workloads if w[0] in opts.only]
    base = '/dev/shm' if Path('/dev/shm').is_dir() else None
    root = Path(tempfile.mkdtemp(prefix='bench-faults-', dir=base))
    rows = []
    try:
        make_inputs(root, opts.files)
        for name, tool, args, headroom in workloads:
            got = {p: run(py, p, root, tool, args, headroom) for p, py in packages.items()}
            rows.append((name, got))
            print(name, json.dumps(got), file=sys.stderr)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out = [
        f'# Memory faults (issue 19): {datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores, '
        f'{opts.files:,} files in the flat directory',
        '',
        'Each cell: wall time of the call, peak RSS of its fresh interpreter (a reference\'s `rg` child not counted). Ratios: ours / reference '
        '(time; peak RSS).',
        '',
        '| workload | ours | 0.36.0 | 0.62.0 | vs 0.36.0 | vs 0.62.0 | ours answers |',
        '|---|---|---|---|---|---|---|',
    ]
    for name, got in rows:
        ours, r36, r62 = got['ours'], got['0.36.0'], got['0.62.0']
        vs = [
            f'{ratio(ours, r, "seconds")}; {ratio(ours, r, "peak_kib")}' if ratio(ours, r, 'seconds') != '—' else '—'
            for r in (r36, r62)
        ]
        answer = ours.get('result', ours.get('died', '')).replace('\n', ' ')[:70].replace('|', '\\|')
        out.append(f'| `{name}` | {cell(ours)} | {cell(r36)} | {cell(r62)} | {vs[0]} | {vs[1]} | {answer} |')
    text = '\n'.join(out) + '\n'
    print(text)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text)


if __name__ == '__main__':
    main()
