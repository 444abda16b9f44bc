"""Shell benchmark: ours vs pydantic-ai-harness 0.57.0 vs raw `subprocess`, in one run.

Usage: `python benches/bench_shell.py [--ref-python PATH] [--calls N] [--cycles N] [--quick]`

Runs each implementation's tools directly on a toolset with a run context on a
`LocalWorkspace` (no model in the loop), the reference in its own venv (default:
`tests/compat/.venvs/shell-ref`, created by the compat tests), and prints a table with ratios.

Workloads:
- `run_command('true')`: median time per call (the machine may be shared: medians); baseline is a bare `subprocess.run(['true'])`
  and `subprocess.run('true', shell=True, start_new_session=True)`.
- `run_command('true')` with `Shell(sandbox='workspace-write')` (ours only; Landlock applied
  between fork and exec), against the same call without it: the budget is 1.3x.
  `--sandbox-only` runs just these two.
- start/check/stop: one background `sleep 60` started, checked and stopped, per cycle.
- big output: a command printing 50 MiB (and 1 GiB for ours): does the tail survive, how
  long, and how much our process grew (peak RSS delta).
- timeout: `sh -c 'sleep 100 & sleep 100'` with a 0.5 s timeout: time past the deadline
  until the call returns, and whether any of the tree survives.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKER = r'''
import asyncio, json, os, re, resource, sys, tempfile, time
from pathlib import Path
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace

impl, task, arg = sys.argv[1], sys.argv[2], sys.argv[3]
if impl == 'ref':
    from pydantic_ai_harness.shell import Shell
else:
    from pydantic_ai_harness_rs.shell import Shell

ws = Path(tempfile.mkdtemp(prefix='shell-bench-')).resolve()
backend = LocalWorkspaceBackend(ws)
n = 0
def ctx():
    global n
    n += 1
    return RunContext(deps=None, model=TestModel(), usage=RunUsage(), workspace=Workspace(backend),
                      run_id='bench', tool_call_id=f'c{n}')

def live(marker):
    out = []
    for e in os.listdir('/proc'):
        if not e.isdigit(): continue
        try:
            cmd = Path(f'/proc/{e}/cmdline').read_bytes().replace(b'\0', b' ').decode()
            st = Path(f'/proc/{e}/stat').read_text().rsplit(')', 1)[1].split()[0]
        except OSError: continue
        if marker in cmd and st not in 'ZX': out.append(e)
    return out

async def main():
    extra = {'sandbox': 'workspace-write'} if task == 'true-sandbox' else {}
    ts = Shell(max_output_chars=2000, **extra).get_toolset()
    if task == 'true-pair':
        # Both toolsets in one process, calls interleaved, so load on a shared machine hits both alike.
        boxed = Shell(max_output_chars=2000, sandbox='workspace-write').get_toolset()
        calls = int(arg)
        for _ in range(20):
            await ts.run_command(ctx(), 'true')
            await boxed.run_command(ctx(), 'true')
        xs, ys = [], []
        for _ in range(calls):
            for toolset, out in ((ts, xs), (boxed, ys)):
                t = time.perf_counter()
                await toolset.run_command(ctx(), 'true')
                out.append(time.perf_counter() - t)
        xs.sort()
        ys.sort()
        return {'plain_ms': xs[len(xs) // 2] * 1e3, 'sandbox_ms': ys[len(ys) // 2] * 1e3}
    if task in ('true', 'true-sandbox'):
        calls = int(arg)
        for _ in range(20): await ts.run_command(ctx(), 'true')
        xs = []
        for _ in range(calls):
            t = time.perf_counter()
            await ts.run_command(ctx(), 'true')
            xs.append(time.perf_counter() - t)
        xs.sort()
        return {'per_call_ms': xs[len(xs) // 2] * 1e3, 'mean_ms': sum(xs) / len(xs) * 1e3}
    if task == 'cycle':
        cycles = int(arg)
        t = time.perf_counter()
        for i in range(cycles):
            started = await ts.start_command(ctx(), f'echo up; sleep 60')
            cid = re.search(r'ID: (\w+)', started).group(1)
            await ts.check_command(ctx(), cid)
            stopped = await ts.stop_command(ctx(), cid)
            assert '[stopped]' in stopped, stopped
        return {'per_cycle_ms': (time.perf_counter() - t) / cycles * 1e3}
    if task == 'big':
        mib = int(arg)
        await ts.run_command(ctx(), 'true')
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t = time.perf_counter()
        try:
            text = await ts.run_command(ctx(), f"head -c {mib * 1048576} /dev/zero | tr '\\0' x; echo; echo LAST-LINE")
            ok = text.endswith('xxx\nLAST-LINE\n')
        except Exception as e:
            text, ok = f'{type(e).__name__}: {e}', False
        elapsed = time.perf_counter() - t
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return {'ok': ok, 'seconds': elapsed, 'rss_growth_mib': (peak - base) / 1024, 'result': text[-80:]}
    if task == 'timeout':
        marker = f'sleep 100{os.getpid() % 1000}'
        timeout = 0.5
        await ts.run_command(ctx(), 'true')  # warm up: first-call setup is not the kill path
        t = time.perf_counter()
        text = await ts.run_command(ctx(), f"sh -c '{marker} & {marker}'", timeout_seconds=timeout)
        over = time.perf_counter() - t - timeout
        left = live(marker)
        for pid in left:
            try: os.kill(int(pid), 9)
            except OSError: pass
        return {'over_ms': over * 1e3, 'survivors': len(left), 'result': text}

print(json.dumps(asyncio.run(main())))
'''


def worker(python: str, impl: str, task: str, arg: object, path: str | None = None) -> dict:  # type: ignore[type-arg]
    env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH',)}
    if path:
        env['PYTHONPATH'] = path
    out = subprocess.run([python, '-c', WORKER, impl, task, str(arg)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return {'error': out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f'exit {out.returncode}'}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _median_ms(fn: object, calls: int) -> float:
    for _ in range(20):
        fn()  # type: ignore[operator]
    xs = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        xs.append(time.perf_counter() - t)
    xs.sort()
    return xs[len(xs) // 2] * 1e3


def bare_spawn(calls: int) -> tuple[float, float]:
    """Median ms of a bare `subprocess.run(['true'])` and of the same through `/bin/sh` in a new session."""
    argv = _median_ms(lambda: subprocess.run(['true']), calls)
    shell = _median_ms(
        lambda: subprocess.run('true', shell=True, start_new_session=True, stdin=subprocess.DEVNULL, capture_output=True),
        calls,
    )
    return argv, shell


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--ref-python', default=str(ROOT / 'tests/compat/.venvs/shell-ref/bin/python'))
    parser.add_argument('--calls', type=int, default=300)
    parser.add_argument('--cycles', type=int, default=20)
    parser.add_argument('--ref-cycles', type=int, default=5, help='the reference takes ~1.3 s a cycle')
    parser.add_argument('--quick', action='store_true', help='skip the 1 GiB run')
    parser.add_argument('--sandbox-only', action='store_true', help="only run_command('true') with and without sandbox")
    args = parser.parse_args()
    if args.sandbox_only:
        pair = worker(sys.executable, 'ours', 'true-pair', args.calls)
        p, b = pair['plain_ms'], pair['sandbox_ms']
        print(
            f"run_command('true') median of {args.calls}, interleaved: {p:.3f} ms plain, "
            f"{b:.3f} ms sandbox='workspace-write' ({b / p:.2f}x, budget 1.3x); "
            f'1-min load average {os.getloadavg()[0]:.2f}'
        )
        return
    ours_py = sys.executable
    ref_py = args.ref_python if Path(args.ref_python).exists() else None
    if ref_py is None:
        print(f'(no reference venv at {args.ref_python}: run tests/compat first; reference columns left empty)')

    rows: list[tuple[str, str, str, str, str]] = []

    def ratio(a: float | None, b: float | None) -> str:
        return f'{a / b:.1f}x' if a and b else '-'

    argv_ms, shell_ms = bare_spawn(args.calls)
    ours = worker(ours_py, 'ours', 'true', args.calls)
    ref = worker(ref_py, 'ref', 'true', args.calls) if ref_py else {}
    o, r = ours.get('per_call_ms'), ref.get('per_call_ms')
    rows.append((
        "run_command('true') per call (median)",
        f'{o:.2f} ms' if o else str(ours),
        f'{r:.2f} ms' if r else str(ref or '-'),
        f'argv {argv_ms:.2f} ms / sh+setsid {shell_ms:.2f} ms',
        f'ref/ours {ratio(r, o)}; ours/bare spawn {o / argv_ms:.2f}x, ours/sh spawn {o / shell_ms:.2f}x' if o else '-',
    ))

    ours = worker(ours_py, 'ours', 'cycle', args.cycles)
    ref = worker(ref_py, 'ref', 'cycle', args.ref_cycles) if ref_py else {}
    o, r = ours.get('per_cycle_ms'), ref.get('per_cycle_ms')
    rows.append(('start/check/stop cycle', f'{o:.1f} ms' if o else str(ours), f'{r:.0f} ms' if r else str(ref or '-'), '-',
                 f'ref/ours {ratio(r, o)}'))

    for mib in (50,) + (() if args.quick else (1024,)):
        ours = worker(ours_py, 'ours', 'big', mib)
        ref = worker(ref_py, 'ref', 'big', mib) if ref_py and mib == 50 else {}
        fmt = lambda d: (  # noqa: E731
            f"{'tail kept' if d.get('ok') else 'FAILED'}, {d.get('seconds', 0):.2f} s, +{d.get('rss_growth_mib', 0):.1f} MiB RSS"
            if d else '-'
        )
        rows.append((f'{mib} MiB of output', fmt(ours), fmt(ref), '-', (ref.get('result', '') or '')[:60].replace('\n', ' ')))

    ours = worker(ours_py, 'ours', 'timeout', 0)
    ref = worker(ref_py, 'ref', 'timeout', 0) if ref_py else {}
    fmt2 = lambda d: f"+{d['over_ms']:.0f} ms, {d['survivors']} left" if 'over_ms' in d else (str(d) if d else '-')  # noqa: E731
    rows.append(("timed-out tree (0.5 s)", fmt2(ours), fmt2(ref), '-', 'time past the deadline until the call returns'))

    pair = worker(ours_py, 'ours', 'true-pair', args.calls)
    o, plain = pair.get('sandbox_ms'), pair.get('plain_ms')
    rows.append((
        "run_command('true'), sandbox='workspace-write'",
        f'{o:.2f} ms' if o else str(pair),
        '-',
        '-',
        f'interleaved with the plain call: {plain:.2f} ms ({o / plain:.2f}x, budget 1.3x)' if o and plain else '-',
    ))

    headers = ('workload', 'ours', 'reference 0.57.0', 'raw subprocess', 'notes')
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(5)]
    line = ' | '.join(h.ljust(w) for h, w in zip(headers, widths))
    print(line)
    print('-+-'.join('-' * w for w in widths))
    for row in rows:
        print(' | '.join(str(c).ljust(w) for c, w in zip(row, widths)))


if __name__ == '__main__':
    main()
