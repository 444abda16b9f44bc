"""Time the FileSystem's protocol path: our `RemoteEngine` vs pydantic-ai-harness 0.62.0, same backend.

Usage: `python benches/bench_remote.py [--files N] [--rounds N] [--ref-python PATH] [--engine]`

Both sides work on the in-memory `SupportsFilesystem` backend of the tests
(`tests/memory_workspace.py`: no commands, no host files), built the same way: `--files` text files
(default 3000, 30 lines each) in 10 top directories of 10 subdirectories. The reference runs in its
own interpreter (`--ref-python`, else the compat suite's venv `tests/compat/.venvs/harness-0.62.0`),
calling its direct tool methods (`await toolset.read_file(..., workspace=backend)`); ours makes the
same direct calls on its toolset (`FileSystem()`, no `root_dir`), which picks `RemoteEngine` for a
backend whose files are not on this host; `--engine` calls `RemoteEngine` itself instead (plan +
commit for changes), without the toolset's Python around it. Each workload runs once per round (the
whole batch timed); the sides alternate for `--rounds` rounds (a fresh process each) and the best
round counts. The table gives seconds and ours/reference, and goes to stdout and to
`benches/results/remote-latest.md`. The backend's own Python cost is in both columns.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / 'tests'))
sys.dont_write_bytecode = True

import chart  # noqa: E402 - beside this script
from memory_workspace import MemoryWorkspace  # noqa: E402

REFERENCE_PYTHON = REPO / 'tests' / 'compat' / '.venvs' / 'harness-0.62.0' / 'bin' / 'python'
RESULTS = HERE / 'results' / 'remote-latest.md'
OPTIONS = {'max_search_results': 1_000_000, 'max_find_results': 1_000_000}

WORKLOADS = (
    ('read', 'read_file of 300 files'),
    ('write', 'write_file of 300 new files'),
    ('edit', 'edit_file of 300 files (one line each)'),
    ('find', "find_files('**/*.py') x5 over the tree"),
    ('search', "search_files('needle_7') x3 over the tree"),
)


def tree(count: int) -> dict[str, str]:
    files: dict[str, str] = {}
    for i in range(count):
        top, sub = i % 10, (i // 10) % 10
        ext = 'py' if i % 3 == 0 else 'txt'
        body = ''.join(f'line {n} of file {i} value_{(i * n) % 97}\n' for n in range(30))
        if i % 50 == 7:
            body += 'needle_7 here\n'
        files[f'pkg{top}/mod{sub}/f{i}.{ext}'] = body
    return files


def paths(count: int) -> list[str]:
    return [
        f'pkg{i % 10}/mod{(i // 10) % 10}/f{i}.{"py" if i % 3 == 0 else "txt"}' for i in range(0, count, count // 300)
    ][:300]


class Side:
    """One package's calls, the same for each workload."""

    async def read(self, path: str) -> Any: ...
    async def write(self, path: str, content: str) -> Any: ...
    async def edit(self, path: str, old: str, new: str) -> Any: ...
    async def find(self, pattern: str) -> Any: ...
    async def search(self, pattern: str) -> Any: ...


class Reference(Side):
    def __init__(self, ws: MemoryWorkspace) -> None:
        from pydantic_ai_harness.filesystem import FileSystem

        self.toolset = FileSystem(**OPTIONS).get_toolset()
        self.ws = ws

    async def read(self, path: str) -> Any:
        return await self.toolset.read_file(path, workspace=self.ws)

    async def write(self, path: str, content: str) -> Any:
        return await self.toolset.write_file(path, content, workspace=self.ws)

    async def edit(self, path: str, old: str, new: str) -> Any:
        return await self.toolset.edit_file(path, old, new, workspace=self.ws)

    async def find(self, pattern: str) -> Any:
        return await self.toolset.find_files(pattern, workspace=self.ws)

    async def search(self, pattern: str) -> Any:
        return await self.toolset.search_files(pattern, workspace=self.ws)


class OursToolset(Reference):
    """Ours through the same direct calls as the reference: `FileSystem()` then `workspace=backend`."""

    def __init__(self, ws: MemoryWorkspace) -> None:
        from pydantic_ai_harness_rs.filesystem import FileSystem

        self.toolset = FileSystem(**OPTIONS).get_toolset()
        self.ws = ws


class Ours(Side):
    def __init__(self, ws: MemoryWorkspace) -> None:
        from pydantic_ai_harness_rs.filesystem._remote import RemoteEngine

        self.engine = RemoteEngine(ws, **OPTIONS)  # type: ignore[arg-type]

    async def read(self, path: str) -> Any:
        return (await self.engine.read_file(path))[0].text

    async def write(self, path: str, content: str) -> Any:
        return (await self.engine.commit(await self.engine.plan_write(path, content, None, False))).text

    async def edit(self, path: str, old: str, new: str) -> Any:
        return (await self.engine.commit(await self.engine.plan_edit(path, [(old, new)], None))).text

    async def find(self, pattern: str) -> Any:
        return (await self.engine.find_files(pattern)).text

    async def search(self, pattern: str) -> Any:
        return (await self.engine.search_files(pattern)).text


async def measure(side_name: str, count: int) -> dict[str, Any]:
    ws = MemoryWorkspace(tree(count))
    ws._add_dir('/ws/new')
    sides = {'reference': Reference, 'ours': OursToolset, 'engine': Ours}
    side: Side = sides[side_name](ws)
    targets = paths(count)
    times: dict[str, float] = {}
    sizes: dict[str, int] = {}

    async def timed(name: str, calls: Any) -> None:
        start = time.perf_counter()
        out = [await call() for call in calls]
        times[name] = time.perf_counter() - start
        sizes[name] = sum(len(str(o)) for o in out)

    await timed('read', [lambda p=p: side.read(p) for p in targets])
    await timed('write', [lambda i=i: side.write(f'new/n{i}.txt', f'new file {i}\n' * 20) for i in range(300)])
    await timed('edit', [lambda p=p: side.edit(p, 'line 3 of', 'LINE 3 of') for p in targets])
    await timed('find', [lambda: side.find('**/*.py') for _ in range(5)])
    await timed('search', [lambda: side.search('needle_7') for _ in range(3)])
    return {'times': times, 'sizes': sizes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--files', type=int, default=3000)
    parser.add_argument('--ref-python', default=str(REFERENCE_PYTHON))
    parser.add_argument('--rounds', type=int, default=3, help='alternating rounds; the best of each workload counts')
    parser.add_argument('--engine', action='store_true', help='time RemoteEngine itself, not the toolset calls')
    parser.add_argument('--output', type=Path, default=RESULTS)
    parser.add_argument('--side', choices=('ours', 'engine', 'reference'), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(anyio.run(measure, args.side, args.files)))
        return
    ours_side = 'engine' if args.engine else 'ours'
    sides = [('reference', args.ref_python), (ours_side, sys.executable)]
    best: dict[str, dict[str, float]] = {'reference': {}, ours_side: {}}
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for side, python in sides[r % 2 :] + sides[: r % 2]:
            proc = subprocess.run(
                [python, __file__, '--side', side, '--files', str(args.files)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if proc.returncode != 0:
                sys.exit(f'{side} failed:\n{proc.stderr[-3000:]}')
            for name, seconds in json.loads(proc.stdout)['times'].items():
                best[side][name] = min(best[side].get(name, seconds), seconds)
            loads.append(os.getloadavg()[0])
    commit = subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True)
    how = '`RemoteEngine` called directly' if args.engine else 'direct toolset calls with `workspace=backend`'
    lines = [
        '# FileSystem protocol path: ours vs pydantic-ai-harness 0.62.0 on the same in-memory backend',
        '',
        f'- when: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; {args.files} files; '
        f'{args.rounds} alternating rounds (a fresh process per side and round), best round per workload',
        f'- machine: {platform.machine()}, {os.cpu_count()} cores; 1-min load average '
        f'{min(loads):.2f}–{max(loads):.2f} during the run (shared machine)',
        f'- ours: {how}, {sys.executable}; this checkout at {commit.stdout.strip() or "?"}',
        f'- 0.62.0: direct toolset calls with `workspace=backend`, {args.ref_python}',
        '- backend: `tests/memory_workspace.py` (`SupportsFilesystem` only, no commands); its Python cost is in '
        'both columns',
        '',
        '| workload | what | 0.62.0 (s) | ours (s) | ours/0.62.0 |',
        '|---|---|---|---|---|',
    ]
    for name, what in WORKLOADS:
        ref, ours = best['reference'][name], best[ours_side][name]
        lines.append(f'| `{name}` | {what} | {ref:.3f} | {ours:.3f} | {ours / ref:.2f}x |')
    table = '\n'.join(lines) + '\n'
    sys.stdout.write(table)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(table)
    print(f'chart: {chart.write_chart()}')


if __name__ == '__main__':
    main()
