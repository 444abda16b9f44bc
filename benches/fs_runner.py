"""Time FileSystem tool calls inside one interpreter; `bench_fs.py` runs it under ours and the reference.

Usage: `python fs_runner.py MODULE SPEC.json [--mode root_dir|workspace] [--rss NAME]`.

`SPEC.json` holds `data_dir` (the FileSystem root), `repeat`, and `workloads`, a list of
`{name, tool, args, config, repeat?}`. Each call is the toolset's direct method
(`await toolset.read_file(...)`), so both packages are measured on the same path with no
Agent or model around them; the clock runs inside this process, around the awaited call
only, and the best of `repeat` runs is reported. Arguments may contain `{i}` (the
repetition number), and a workload with `alternate` swaps two argument sets between runs
(an edit that undoes the previous one). `warmup` makes one untimed call first (a file already
seen), `fresh` builds a new toolset before every call (nothing seen before), and `concurrent: N`
makes each call N calls gathered at once, `{k}` in the arguments numbering them.
Prints JSON: `{name: {best, times, chars} | {error}}`.

With `--rss NAME`, runs that one workload once and reports the growth of peak RSS (in bytes):
the peak during the call (`VmHWM`, reset just before it through `/proc/self/clear_refs`) minus
the RSS before it; where that reset is not available, `ru_maxrss` after the call minus before
it. Run it in a fresh process.

`--mode` picks the contract the calls run under. `root_dir` (the default):
`FileSystem(root_dir=data_dir)`, the 0.36.0 document's contract. `workspace`: `FileSystem()`
with no `root_dir`, every call given `workspace=LocalWorkspaceBackend(data_dir)` (one backend
object for the whole process, as a run's `ctx.workspace` is), 0.62.0's contract; this is how
0.62.0's direct calls must be made, and how ours selects its workspace engine.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import resource
import sys
import time
from typing import Any


def _fill(value: Any, placeholder: str, n: int) -> Any:
    """`value` (a string, or a dict of them, nested) with `placeholder` (`{i}`, `{k}`) replaced by `n`."""
    if isinstance(value, str):
        return value.replace(placeholder, str(n))
    if isinstance(value, dict):
        return {key: _fill(v, placeholder, n) for key, v in value.items()}
    return value


class Side:
    """One package under one contract: builds toolsets and makes the direct calls."""

    def __init__(self, module: str, data_dir: str, mode: str) -> None:
        self.harness = importlib.import_module(module)
        self.data_dir = data_dir
        self.extra: dict[str, Any] = {}
        if mode == 'workspace':
            from pydantic_ai.workspaces import LocalWorkspaceBackend

            self.extra['workspace'] = LocalWorkspaceBackend(data_dir)

    def toolset(self, config: dict[str, Any]) -> Any:
        if self.extra:
            return self.harness.FileSystem(**config).get_toolset()
        return self.harness.FileSystem(root_dir=self.data_dir, **config).get_toolset()

    def arguments(self, workload: dict[str, Any], i: int) -> list[dict[str, Any]]:
        """The arguments of call `i`, one set per concurrent call: made before the clock starts
        (formatting a 10 MiB `content` is a scan of it, no part of the tool's time)."""
        args = workload['args']
        if workload.get('alternate') and i % 2 == 1:
            args = workload['alternate']
        if concurrent := workload.get('concurrent'):
            return [_fill(_fill(args, '{k}', k), '{i}', i) for k in range(concurrent)]
        return [_fill(args, '{i}', i)]

    async def call(self, toolset: Any, workload: dict[str, Any], arguments: list[dict[str, Any]]) -> Any:
        method = getattr(toolset, workload['tool'])
        if workload.get('concurrent'):
            # One model response's worth of calls, `{k}` numbering them, run as the agent does.
            return await asyncio.gather(*(method(**args, **self.extra) for args in arguments))
        return await method(**arguments[0], **self.extra)


def _chars(result: Any) -> int:
    """Length of a result: text, or the text parts of a `[header, BinaryContent]` list."""
    if isinstance(result, str):
        return len(result)
    return sum(len(part) if isinstance(part, str) else _chars(part) for part in result if not hasattr(part, 'data'))


async def time_all(side: Side, spec: dict[str, Any]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for workload in spec['workloads']:
        toolset = side.toolset(workload.get('config', {}))
        times: list[float] = []
        chars = 0
        try:
            if workload.get('warmup'):
                await side.call(toolset, workload, side.arguments(workload, 0))  # a file already seen: not timed
            for i in range(workload.get('repeat', spec['repeat'])):
                if workload.get('fresh'):
                    toolset = side.toolset(workload.get('config', {}))  # nothing seen before
                arguments = side.arguments(workload, i)
                start = time.perf_counter()
                result = await side.call(toolset, workload, arguments)
                times.append(time.perf_counter() - start)
                chars = _chars(result)
        except Exception as e:  # noqa: BLE001 - reported in the table
            results[workload['name']] = {'error': f'{type(e).__name__}: {e}'[:300]}
            continue
        results[workload['name']] = {'best': min(times), 'times': times, 'chars': chars}
    return results


async def rss_growth(side: Side, spec: dict[str, Any], name: str) -> dict[str, Any]:
    workload = next(w for w in spec['workloads'] if w['name'] == name)
    toolset = side.toolset(workload.get('config', {}))
    arguments = side.arguments(workload, 0)
    # Import and set-up cost are not the call's: take the baseline after them.
    if workload.get('warmup'):
        await side.call(toolset, workload, arguments)
    if _reset_peak():
        # The peak of this call alone over the memory in use before it (the import's own peak,
        # often higher, would otherwise hide part of the call's).
        before = _status_kib('VmRSS')
        await side.call(toolset, workload, arguments)
        after = _status_kib('VmHWM')
    else:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        await side.call(toolset, workload, arguments)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {name: {'rss_growth': (after - before) * 1024, 'rss_peak': after * 1024}}


def _reset_peak() -> bool:
    """Reset the process's peak RSS (`VmHWM`, Linux); whether it could be."""
    try:
        with open('/proc/self/clear_refs', 'w') as f:
            f.write('5')
        return _status_kib('VmHWM') > 0
    except OSError:
        return False


def _status_kib(field: str) -> int:
    """A `/proc/self/status` field in KiB (0 when absent)."""
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument('module')
    parser.add_argument('spec')
    parser.add_argument('--mode', choices=('root_dir', 'workspace'), default='root_dir')
    parser.add_argument('--rss', metavar='NAME')
    args = parser.parse_args()
    with open(args.spec) as f:
        spec = json.load(f)
    side = Side(args.module, spec['data_dir'], args.mode)
    if args.rss:
        result = asyncio.run(rss_growth(side, spec, args.rss))
    else:
        result = asyncio.run(time_all(side, spec))
    json.dump(result, sys.stdout)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
