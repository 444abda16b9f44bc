"""Time FileSystem tool calls inside one interpreter; `bench_fs.py` runs it under ours and the reference.

Usage: `python fs_runner.py MODULE SPEC.json` or `python fs_runner.py MODULE SPEC.json --rss NAME`.

`SPEC.json` holds `data_dir` (the FileSystem root), `repeat`, and `workloads`, a list of
`{name, tool, args, config, repeat?}`. Each call is the toolset's direct method
(`await toolset.read_file(...)`), so both packages are measured on the same path with no
Agent or model around them; the clock runs inside this process, around the awaited call
only, and the best of `repeat` runs is reported. Arguments may contain `{i}` (the
repetition number), and a workload with `alternate` swaps two argument sets between runs
(an edit that undoes the previous one). Prints JSON: `{name: {best, times, chars} | {error}}`.

With `--rss NAME`, runs that one workload once and reports the growth of peak RSS
(`ru_maxrss` after the call minus before it, in bytes): run it in a fresh process.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import resource
import sys
import time
from typing import Any


def _format(value: Any, i: int) -> Any:
    if isinstance(value, str):
        return value.replace('{i}', str(i))
    if isinstance(value, dict):
        return {k: _format(v, i) for k, v in value.items()}
    return value


def _toolset(module: str, data_dir: str, config: dict[str, Any]) -> Any:
    harness = importlib.import_module(module)
    return harness.FileSystem(root_dir=data_dir, **config).get_toolset()


async def _call(toolset: Any, workload: dict[str, Any], i: int) -> str:
    args = workload['args']
    if workload.get('alternate') and i % 2 == 1:
        args = workload['alternate']
    method = getattr(toolset, workload['tool'])
    return await method(**_format(args, i))


async def time_all(module: str, spec: dict[str, Any]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for workload in spec['workloads']:
        toolset = _toolset(module, spec['data_dir'], workload.get('config', {}))
        times: list[float] = []
        chars = 0
        try:
            for i in range(workload.get('repeat', spec['repeat'])):
                start = time.perf_counter()
                result = await _call(toolset, workload, i)
                times.append(time.perf_counter() - start)
                chars = len(result)
        except Exception as e:  # noqa: BLE001 - reported in the table
            results[workload['name']] = {'error': f'{type(e).__name__}: {e}'[:300]}
            continue
        results[workload['name']] = {'best': min(times), 'times': times, 'chars': chars}
    return results


async def rss_growth(module: str, spec: dict[str, Any], name: str) -> dict[str, Any]:
    workload = next(w for w in spec['workloads'] if w['name'] == name)
    toolset = _toolset(module, spec['data_dir'], workload.get('config', {}))
    # Import and set-up cost are not the call's: take the baseline after them.
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    await _call(toolset, workload, 0)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {name: {'rss_growth': (after - before) * 1024, 'rss_peak': after * 1024}}


def main() -> int:
    module, spec_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    if len(sys.argv) > 4 and sys.argv[3] == '--rss':
        result = asyncio.run(rss_growth(module, spec, sys.argv[4]))
    else:
        result = asyncio.run(time_all(module, spec))
    json.dump(result, sys.stdout)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
