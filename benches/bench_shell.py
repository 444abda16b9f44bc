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
- start/check/stop: one background `sleep 60` started, checked and stopped, median per cycle; the
  limit is a bare `Popen` (new session, output to a log) + `poll` + log read + `killpg(SIGTERM)` +
  `wait`, one after each of ours in the same process.
- big output: a command printing 50 MiB (and 1 GiB for ours): does the tail survive, how
  long, and how much our process grew (peak RSS delta).
- timeout: `sh -c 'sleep 100 & sleep 100'` with a 0.5 s timeout: time past the deadline
  until the call returns (median of `--timeouts` runs), and whether any of the tree survives;
  the limit is the same command under `Popen.communicate(timeout=0.5)` + `killpg(SIGKILL)` +
  `communicate()`, timed from before the `Popen`.
- 32 concurrent `run_command('true')`: one `asyncio.gather` of 32 calls (what one model response
  with 32 tool calls runs), median wall time of `--rounds`; the limit is 32 `Popen('true',
  shell=True, start_new_session=True)` started at once, then waited for.

A full run writes the table to `benches/results/shell-latest.md` and redraws the chart
(`benches/chart.py`); `--sandbox-only` and `--no-write` print only.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import chart

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / 'benches' / 'results' / 'shell-latest.md'
TIMEOUT = 0.5
"""Seconds the timed-out tree workload runs before its timeout."""
WORKER = r"""
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
        # Each cycle of ours is followed by one of the bare limit (`Popen` in a new session writing
        # a log, `poll` and the log read back, `killpg(SIGTERM)` and `wait`), so load hits both
        # alike; medians, as for the other workloads (the machine may be shared).
        import signal, subprocess
        cycles = int(arg)
        ours, bare = [], []
        log = ws / 'bare.log'
        # One cycle of each first, untimed (as the other workloads warm up): the first start makes
        # the jobs directory and starts the worker threads.
        for i in range(cycles + 1):
            t = time.perf_counter()
            started = await ts.start_command(ctx(), f'echo up; sleep 60')
            cid = re.search(r'ID: (\w+)', started).group(1)
            await ts.check_command(ctx(), cid)
            stopped = await ts.stop_command(ctx(), cid)
            ours.append(time.perf_counter() - t)
            assert '[stopped]' in stopped, stopped
            await asyncio.sleep(0.02)  # what either side leaves exiting is not timed in the other
            t = time.perf_counter()
            with open(log, 'wb') as out:
                p = subprocess.Popen('echo up; sleep 60', shell=True, start_new_session=True,
                                     stdin=subprocess.DEVNULL, stdout=out, stderr=out)
            p.poll()
            log.read_bytes()[-8000:]
            os.killpg(p.pid, signal.SIGTERM)
            p.wait()
            bare.append(time.perf_counter() - t)
            await asyncio.sleep(0.02)
        first_ms = ours[0] * 1e3
        ours, bare = sorted(ours[1:]), sorted(bare[1:])
        return {'per_cycle_ms': ours[len(ours) // 2] * 1e3, 'mean_ms': sum(ours) / len(ours) * 1e3,
                'bare_cycle_ms': bare[len(bare) // 2] * 1e3, 'first_ms': first_ms}
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
        runs, timeout = map(float, arg.split(','))
        marker = f'sleep 100{os.getpid() % 1000}'
        await ts.run_command(ctx(), 'true')  # warm up: first-call setup is not the kill path
        overs, survivors = [], 0
        for _ in range(int(runs)):
            t = time.perf_counter()
            text = await ts.run_command(ctx(), f"sh -c '{marker} & {marker}'", timeout_seconds=timeout)
            overs.append(time.perf_counter() - t - timeout)
            left = live(marker)
            survivors += len(left)
            for pid in left:
                try: os.kill(int(pid), 9)
                except OSError: pass
        overs.sort()
        return {'over_ms': overs[len(overs) // 2] * 1e3, 'survivors': survivors, 'result': text}
    if task == 'concurrent':
        rounds, width = map(int, arg.split(','))
        for _ in range(3):
            await asyncio.gather(*(ts.run_command(ctx(), 'true') for _ in range(width)))
        xs = []
        for _ in range(rounds):
            t = time.perf_counter()
            results = await asyncio.gather(*(ts.run_command(ctx(), 'true') for _ in range(width)))
            xs.append(time.perf_counter() - t)
            assert all(r == '(no output)' for r in results), results
        xs.sort()
        return {'wall_ms': xs[len(xs) // 2] * 1e3}

print(json.dumps(asyncio.run(main())))
"""


def worker(python: str, impl: str, task: str, arg: object, path: str | None = None) -> dict:  # type: ignore[type-arg]
    # Ours imports what this process imports (its PYTHONPATH, e.g. a checkout's `python/`); the
    # reference only its own venv.
    env = {k: v for k, v in os.environ.items() if impl == 'ours' or k != 'PYTHONPATH'}
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
        lambda: subprocess.run(
            'true', shell=True, start_new_session=True, stdin=subprocess.DEVNULL, capture_output=True
        ),
        calls,
    )
    return argv, shell


def timeout_once(command: str, timeout: float) -> float:
    """Seconds past the deadline of `command` under `communicate(timeout)` + `killpg(SIGKILL)` + `communicate()`,
    timed from before the `Popen`: the timed-out tree's limit."""
    started = time.perf_counter()
    p = subprocess.Popen(
        command,
        shell=True,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
    return time.perf_counter() - started - timeout


def timeout_limit(runs: int) -> float:
    """Median ms past the deadline of `sh -c 'sleep & sleep'` under [`timeout_once`]."""
    overs = sorted(timeout_once("sh -c 'sleep 100 & sleep 100'", TIMEOUT) for _ in range(runs))
    return overs[len(overs) // 2] * 1e3


def parallel_spawns(rounds: int, width: int) -> float:
    """Median ms of `width` `sh -c true` processes (own session, piped output) started at once, then waited for."""
    xs = []
    for _ in range(rounds + 3):
        t = time.perf_counter()
        procs = [
            subprocess.Popen(
                'true',
                shell=True,
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(width)
        ]
        for p in procs:
            p.communicate()
        xs.append(time.perf_counter() - t)
    xs = sorted(xs[3:])
    return xs[len(xs) // 2] * 1e3


WORKLOADS = ('true', 'cycle', 'big', 'timeout', 'concurrent', 'sandbox')
HEADERS = ('workload', 'ours', 'reference 0.57.0', 'limit', 'ours/limit', 'notes')
Row = tuple[str, str, str, str, str, str]


def rows_of(path: Path) -> list[Row]:
    """The rows of the first table in `path` that has this script's columns (none when missing)."""
    if not path.exists():
        return []
    out: list[Row] = []
    lines = path.read_text(encoding='utf-8').splitlines()
    for i, line in enumerate(lines):
        if [c.strip() for c in line.strip().strip('|').split('|')] == list(HEADERS):
            for row in lines[i + 2 :]:
                if not row.startswith('|'):
                    break
                cells = [c.strip() for c in row.strip().strip('|').split(' | ')]
                if len(cells) == len(HEADERS):
                    out.append(tuple(cells))  # type: ignore[arg-type]
            break
    return out


def write_results(rows: list[Row], args: argparse.Namespace, ran: list[str]) -> None:
    """The table to `RESULTS`, keeping earlier rows of workloads not run now; then the chart."""
    fresh = {row[0] for row in rows}
    kept = [
        (*row[:5], row[5] if 'earlier run' in row[5] else f'{row[5]} (earlier run)'.strip())
        for row in rows_of(RESULTS)
        if row[0] not in fresh
    ]
    now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')
    load = os.getloadavg()[0]
    text = [
        '# Shell benchmark: ours vs pydantic-ai-harness 0.57.0 vs the limit',
        '',
        f'- when: {now}, `python benches/bench_shell.py {" ".join(sys.argv[1:])}` (workloads: {", ".join(ran)})',
        f'- machine: {platform.machine()}, {os.cpu_count()} cores, Linux {platform.release()}; '
        f'1-min load average {load:.2f} at the end (shared machine: ratios from one run, noisy)',
        f'- ours: {sys.executable}; reference: {args.ref_python}',
        "- limit: what the work costs without a harness (a bare `subprocess` doing the same); `ours/limit` is the target's measure",
        '',
        '| ' + ' | '.join(HEADERS) + ' |',
        '|' + '---|' * len(HEADERS),
        *('| ' + ' | '.join(row) + ' |' for row in [*rows, *kept]),
    ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text('\n'.join(text) + '\n', encoding='utf-8')
    print(f'wrote {RESULTS}; chart: {chart.write_chart()}')


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--ref-python', default=str(ROOT / 'tests/compat/.venvs/shell-ref/bin/python'))
    parser.add_argument('--calls', type=int, default=300)
    parser.add_argument('--cycles', type=int, default=20)
    parser.add_argument('--ref-cycles', type=int, default=5, help='the reference takes ~1.3 s a cycle')
    parser.add_argument('--timeouts', type=int, default=15, help='timed-out trees per side')
    parser.add_argument('--rounds', type=int, default=20, help='rounds of 32 concurrent calls')
    parser.add_argument('--quick', action='store_true', help='skip the 1 GiB run')
    parser.add_argument('--only', default=','.join(WORKLOADS), help=f'comma-separated subset of {",".join(WORKLOADS)}')
    parser.add_argument(
        '--no-write', action='store_true', help=f'print only; do not update {RESULTS.name} and the chart'
    )
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
    only = [w for w in args.only.split(',') if w]
    if unknown := sorted(set(only) - set(WORKLOADS)):
        parser.error(f'unknown workloads: {", ".join(unknown)}')
    ours_py = sys.executable
    ref_py = args.ref_python if Path(args.ref_python).exists() else None
    if ref_py is None:
        print(f'(no reference venv at {args.ref_python}: run tests/compat first; reference columns left empty)')

    rows: list[Row] = []

    def ratio(a: float | None, b: float | None, digits: int = 2) -> str:
        return f'{a / b:.{digits}f}x' if a and b else '—'

    def sides(case: str, arg: Any, ref_arg: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """The case run by ours, and by the reference when its venv is there (`{}` when not)."""
        ours = worker(ours_py, 'ours', case, arg)
        ref = worker(ref_py, 'ref', case, arg if ref_arg is None else ref_arg) if ref_py else {}
        return ours, ref

    def against_spawns(
        label: str, key: str, digits: int, case: str, arg: Any, limit: float, limit_text: str, target: Any
    ) -> None:
        """A row of ours and the reference in milliseconds (`key`), against a spawning baseline `limit`;
        `target(ours_ms)` ends the notes."""
        ours, ref = sides(case, arg)
        o, r = ours.get(key), ref.get(key)
        rows.append(
            (
                label,
                f'{o:.{digits}f} ms' if o else str(ours),
                f'{r:.{digits}f} ms' if r else str(ref or '—'),
                limit_text,
                ratio(o, limit),
                f'ours/ref {ratio(o, r)}; {target(o)}',
            )
        )

    if 'true' in only:
        argv_ms, shell_ms = bare_spawn(args.calls)
        against_spawns(
            "`run_command('true')` per call (median)",
            'per_call_ms',
            2,
            'true',
            args.calls,
            argv_ms,
            f"{argv_ms:.2f} ms bare spawn (`subprocess.run(['true'])`; `sh -c` + setsid {shell_ms:.2f} ms)",
            lambda o: f'ours/`sh -c` spawn {ratio(o, shell_ms)}; target ≤ 1.5x the bare spawn',
        )

    if 'concurrent' in only:
        width = 32
        limit = parallel_spawns(args.rounds, width)
        against_spawns(
            f"{width} concurrent `run_command('true')` (one `gather`, median)",
            'wall_ms',
            1,
            'concurrent',
            f'{args.rounds},{width}',
            limit,
            f'{limit:.1f} ms {width} parallel spawns (`Popen` x{width}, then wait)',
            lambda o: 'target ≤ 2x the parallel spawns',
        )

    if 'timeout' in only:
        limit = timeout_limit(args.timeouts)
        arg = f'{args.timeouts},{TIMEOUT}'
        ours, ref = sides('timeout', arg)
        o, r = ours.get('over_ms'), ref.get('over_ms')
        fmt = lambda d: (  # noqa: E731
            f'{d["over_ms"]:.2f} ms past the deadline, {d["survivors"]} processes left'
            if 'over_ms' in d
            else (str(d) if d else '—')
        )
        rows.append(
            (
                f'timed-out tree (`sleep` children, {TIMEOUT} s; median of {args.timeouts})',
                fmt(ours),
                fmt(ref),
                f'{limit:.2f} ms past the deadline (`communicate(timeout)` + `killpg` + `communicate()`)',
                ratio(o, limit),
                f'ours/ref {ratio(o, r)}; target ≤ 1.2x the limit',
            )
        )

    if 'cycle' in only:
        ours, ref = sides('cycle', args.cycles, args.ref_cycles)
        o, r, bare = ours.get('per_cycle_ms'), ref.get('per_cycle_ms'), ours.get('bare_cycle_ms')
        rows.append(
            (
                'start/check/stop cycle',
                f'{o:.1f} ms' if o else str(ours),
                f'{r:.0f} ms' if r else str(ref or '—'),
                f'{bare:.2f} ms bare `Popen` + `poll` + log read + `killpg` + `wait`' if bare else '—',
                ratio(o, bare),
                f'ours/ref {ratio(o, r, 4)}; target ≤ 10x the bare cycle; medians of {args.cycles}, the two '
                f'interleaved (20 ms apart), after one untimed cycle ({ours.get("first_ms", 0):.0f} ms); ours mean '
                f'{ours.get("mean_ms", 0):.1f} ms',
            )
        )

    if 'big' in only:
        for mib in (50,) + (() if args.quick else (1024,)):
            ours = worker(ours_py, 'ours', 'big', mib)
            ref = worker(ref_py, 'ref', 'big', mib) if ref_py and mib == 50 else {}
            fmt = lambda d: (  # noqa: E731
                f'{"tail kept" if d.get("ok") else "FAILED"}, {d.get("seconds", 0):.2f} s, +{d.get("rss_growth_mib", 0):.1f} MiB RSS'
                if d
                else '—'
            )
            note = (ref.get('result', '') or '')[:60].replace('\n', ' ').replace('|', '\\|')
            rows.append((f'{mib} MiB of output', fmt(ours), fmt(ref), '—', '—', note))

    if 'sandbox' in only:
        pair = worker(ours_py, 'ours', 'true-pair', args.calls)
        o, plain = pair.get('sandbox_ms'), pair.get('plain_ms')
        rows.append(
            (
                "`run_command('true')`, `sandbox='workspace-write'`",
                f'{o:.2f} ms' if o else str(pair),
                '—',
                '—',
                '—',
                f'interleaved with the plain call: {plain:.2f} ms ({ratio(o, plain)}, budget 1.3x)'
                if o and plain
                else '—',
            )
        )

    widths = [max(len(str(row[i])) for row in [HEADERS, *rows]) for i in range(len(HEADERS))]
    print(' | '.join(h.ljust(w) for h, w in zip(HEADERS, widths)))
    print('-+-'.join('-' * w for w in widths))
    for row in rows:
        print(' | '.join(str(c).ljust(w) for c, w in zip(row, widths)))
    if not args.no_write:
        write_results(rows, args, only)


if __name__ == '__main__':
    main()
