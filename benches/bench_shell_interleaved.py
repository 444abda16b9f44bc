"""The timed-out tree, ours and the limit alternating call by call in one process.

Usage: `python benches/bench_shell_interleaved.py [--runs N] [--timeout S]` (run with the Python that
has this package installed; prints, writes nothing).

`bench_shell.py` times ours and the limit a minute apart, and on a shared machine the wake-up
latency drifts by milliseconds from one minute to the next. Here each round runs, one after the
other in the same process, in an order that turns each round: `run_command` as shipped (waited for on the event loop), the same call
waited for on a worker thread (`ForegroundCommand.run_captured` through `anyio.to_thread`, the way
before the event-loop wait), and the limit (`Popen.communicate(timeout)` + `killpg(SIGKILL)` +
`communicate()`); each is timed from its call to its return, less the timeout, as in `bench_shell.py`.
Medians are printed with their ratios to the limit.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_shell import timeout_once
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace
from pydantic_ai_harness_rs.shell import Shell
from pydantic_ai_harness_rs.shell import _foreground as foreground

COMMAND = "sh -c 'sleep 1009 & sleep 1009'"
"""A shell whose two children hold its pipes: the tree `bench_shell.py` times out."""


async def _in_worker_thread(run: Any, *args: Any, spill: Any, **kwargs: Any) -> Any:
    """The wait as it was: the whole run on a worker thread, its result handed back to the loop."""
    return await foreground._in_thread(run, functools.partial(run.run_captured, *args, spill=spill, **kwargs))  # pyright: ignore[reportPrivateUsage]


async def main(runs: int, timeout: float) -> None:
    backend = LocalWorkspaceBackend(Path(tempfile.mkdtemp(prefix='shell-interleaved-')).resolve())
    toolset = Shell(max_output_chars=2000).get_toolset()
    shipped = foreground.run_captured

    def ctx(n: int) -> RunContext[None]:
        return RunContext(
            deps=None,
            model=TestModel(),
            usage=RunUsage(),
            workspace=Workspace(backend),
            run_id='bench',
            tool_call_id=f'c{n}',
        )

    async def ours(wait: Any, n: int) -> float:
        foreground.run_captured = wait
        try:
            started = time.perf_counter()
            await toolset.run_command(ctx(n), COMMAND, timeout_seconds=timeout)
            return time.perf_counter() - started - timeout
        finally:
            foreground.run_captured = shipped

    for n in range(5):
        await toolset.run_command(ctx(n), 'true')
    times: dict[str, list[float]] = {'event loop (shipped)': [], 'worker thread (before)': [], 'limit': []}

    async def event_loop(n: int) -> float:
        return await ours(shipped, n)

    async def worker_thread(n: int) -> float:
        return await ours(_in_worker_thread, n)

    async def the_limit(n: int) -> float:
        return timeout_once(COMMAND, timeout)

    sides = [('event loop (shipped)', event_loop), ('worker thread (before)', worker_thread), ('limit', the_limit)]
    for n in range(runs):
        # The order turns each round, so no side always follows the same one.
        for name, side in sides[n % 3 :] + sides[: n % 3]:
            times[name].append(await side(n))
    base = statistics.median(times['limit'])
    for name, xs in times.items():
        median = statistics.median(xs)
        print(f'{name:24} {median * 1e3:7.2f} ms past the deadline  {median / base:5.2f}x the limit')


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=31, help='rounds (each: ours, ours on a thread, the limit)')
    parser.add_argument('--timeout', type=float, default=0.5, help='seconds before the tree is stopped')
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.timeout))
