"""Time the FileSystem's protocol path: our `RemoteEngine` vs pydantic-ai-harness 0.62.0, same backend.

Usage: `python benches/bench_remote.py [--files N] [--rounds N] [--ref-python PATH] [--engine] [--big-log MIB]`

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

`--big-log MIB` (e.g. 512) times instead a log of that size paged through a backend that only
runs commands (`tests/backends.ShellSandbox`, a `/bin/sh` subprocess per command, standing in for
a sandbox): `read_file` of the first, a middle and the last window and `file_info`, each in a
fresh process (time and the process's peak RSS), against `dd if=LOG bs=1M | sha256sum` run in the
same sandbox (the floor: one pass over the bytes, no transfer), and against 0.62.0's same calls on
the same backend. The table goes to `benches/results/remote-big-latest.md`.
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
TOOLS = [
    'read_file', 'write_file', 'edit_file', 'list_directory', 'search_files', 'find_files', 'create_directory',
    'file_info', 'grep', 'list_files',
]  # fmt: skip

WORKLOADS = (
    ('read', 'read_file of 300 files'),
    ('write', 'write_file of 300 new files'),
    ('edit', 'edit_file of 300 files (one line each)'),
    ('find', "find_files('**/*.py') x5 over the tree"),
    ('search', "search_files('needle_7') x3 over the tree"),
    ('listdir', 'list_directory of the 100 subdirectories'),
    ('info', 'file_info of 300 files'),
    ('mkdir', 'create_directory of 300 new directories'),
    ('grep', "grep('needle_7') x3 over the tree (opt-in tool; 0.62.0 refuses `context` here)"),
    ('listfiles', "list_files(glob='*.py') x5 over the tree (opt-in tool)"),
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
    async def listdir(self, path: str) -> Any: ...
    async def info(self, path: str) -> Any: ...
    async def mkdir(self, path: str) -> Any: ...
    async def grep(self, pattern: str) -> Any: ...
    async def listfiles(self, glob: str) -> Any: ...


class Reference(Side):
    def __init__(self, ws: MemoryWorkspace) -> None:
        from pydantic_ai_harness.filesystem import FileSystem

        self.toolset = FileSystem(**OPTIONS, tools=TOOLS).get_toolset()
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

    async def listdir(self, path: str) -> Any:
        return await self.toolset.list_directory(path, workspace=self.ws)

    async def info(self, path: str) -> Any:
        return await self.toolset.file_info(path, workspace=self.ws)

    async def mkdir(self, path: str) -> Any:
        return await self.toolset.create_directory(path, workspace=self.ws)

    async def grep(self, pattern: str) -> Any:
        return await self.toolset.grep(pattern, workspace=self.ws)

    async def listfiles(self, glob: str) -> Any:
        return await self.toolset.list_files(glob=glob, workspace=self.ws)


class OursToolset(Reference):
    """Ours through the same direct calls as the reference: `FileSystem()` then `workspace=backend`."""

    def __init__(self, ws: MemoryWorkspace) -> None:
        from pydantic_ai_harness_rs.filesystem import FileSystem

        self.toolset = FileSystem(**OPTIONS, tools=TOOLS).get_toolset()
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

    async def listdir(self, path: str) -> Any:
        return (await self.engine.list_directory(path)).text

    async def info(self, path: str) -> Any:
        return (await self.engine.file_info(path)).text

    async def mkdir(self, path: str) -> Any:
        plan = await self.engine.plan_create_directory(path)
        return None if plan is None else (await self.engine.commit(plan)).text

    async def grep(self, pattern: str) -> Any:
        return (await self.engine.grep(pattern)).text

    async def listfiles(self, glob: str) -> Any:
        return (await self.engine.list_files(glob=glob)).text


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
    subdirs = [f'pkg{top}/mod{sub}' for top in range(10) for sub in range(10)]
    await timed('listdir', [lambda d=d: side.listdir(d) for d in subdirs])
    await timed('info', [lambda p=p: side.info(p) for p in targets])
    await timed('mkdir', [lambda i=i: side.mkdir(f'new/d{i}') for i in range(300)])
    await timed('grep', [lambda: side.grep('needle_7') for _ in range(3)])
    await timed('listfiles', [lambda: side.listfiles('*.py') for _ in range(5)])
    return {'times': times, 'sizes': sizes}


BIG_RESULTS = HERE / 'results' / 'remote-big-latest.md'
BIG_CALLS = (
    ('first', 'read_file(offset=0) (2000 lines)'),
    ('middle', 'read_file(offset=middle line, limit=100)'),
    ('last', 'read_file(offset=last line - 50)'),
    ('info', 'file_info'),
    ('again', 'read_file(offset=middle line, limit=100) after a first read in the same process (only it timed)'),
    ('cli', '`dd if=LOG bs=1M \\| sha256sum` in the sandbox'),
)


def write_log(path: Path, mib: int) -> int:
    """Write about `mib` MiB of log lines to `path`; return the line count."""
    lines = 0
    with path.open('wb') as f:
        while f.tell() < mib << 20:
            block = ''.join(
                f'2026-12-02T03:{(lines + k) // 60000 % 60:02d}:{(lines + k) // 1000 % 60:02d}Z INFO '
                f'request {lines + k} path=/api/v1/items/{(lines + k) % 1000} status=200 ms={(lines + k) % 97}\n'
                for k in range(100_000)
            )
            f.write(block.encode())
            lines += 100_000
    return lines


async def big_call(side: str, call: str, log: Path, lines: int) -> dict[str, Any]:
    import resource

    from backends import ShellSandbox

    sandbox = ShellSandbox(log.parent)
    offsets = {'first': (0, None), 'middle': (lines // 2, 100), 'last': (lines - 50, None), 'again': (lines // 2, 100)}
    if side == 'reference':
        from pydantic_ai_harness.filesystem import FileSystem
    else:
        from pydantic_ai_harness_rs.filesystem import FileSystem  # type: ignore[no-redef]
    toolset: Any = FileSystem().get_toolset()
    base_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if call == 'again':
        try:
            await toolset.read_file(log.name, workspace=sandbox)
        except Exception:  # noqa: BLE001 - the reference refuses it
            pass
        sandbox.runs = 0
    start = time.perf_counter()
    try:
        if call == 'cli':
            result = await sandbox.run(f'dd if={log.name} bs=1M 2>/dev/null | sha256sum', shell=True)
            out: Any = result.stdout
        elif call == 'info':
            out = await toolset.file_info(log.name, workspace=sandbox)
        else:
            offset, limit = offsets[call]
            out = await toolset.read_file(log.name, offset=offset, limit=limit, workspace=sandbox)
    except Exception as error:  # noqa: BLE001 - the reference's refusal or failure is the figure
        out = f'{type(error).__name__}: {error}'
    seconds = time.perf_counter() - start
    kib = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    )
    text = out if isinstance(out, str) else str(out)
    return {
        'seconds': seconds,
        'rss_mib': kib / 1024,
        'base_mib': base_kib / 1024,
        'head': text[:160],
        'runs': sandbox.runs,
    }


def big_main(args: argparse.Namespace) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix='bench-big-') as tmp:
        log = Path(tmp) / 'app.log'
        lines = write_log(log, args.big_log)
        size = log.stat().st_size
        rows: dict[tuple[str, str], dict[str, Any]] = {}
        for call, _ in BIG_CALLS:
            sides = (
                [('ours', sys.executable)]
                if call == 'cli'
                else [('ours', sys.executable), ('reference', args.ref_python)]
            )
            for side, python in sides:
                proc = subprocess.run(
                    [
                        python,
                        __file__,
                        '--big-side',
                        side,
                        '--big-call',
                        call,
                        '--big-path',
                        str(log),
                        '--big-lines',
                        str(lines),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=1800,
                )
                if proc.returncode != 0:
                    sys.exit(f'{side} {call} failed:\n{proc.stderr[-3000:]}')
                rows[side, call] = json.loads(proc.stdout)
    commit = subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True)
    lines_out = [
        f'# FileSystem protocol path: a {args.big_log} MiB log paged through a commands-only backend',
        '',
        f'- when: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; log: {size} bytes, {lines} lines',
        f'- machine: {platform.machine()}, {os.cpu_count()} cores (shared); 1-min load average {os.getloadavg()[0]:.2f} at the end',
        f'- backend: `tests/backends.ShellSandbox` (`SupportsCommands` only, `/bin/sh` subprocess per command); '
        f'ours: direct toolset calls, this checkout at {commit.stdout.strip() or "?"}; 0.62.0: {args.ref_python}',
        '- each call in a fresh process; peak RSS is the larger of the process and its waited-for children',
        '',
        '| call | what | ours (s) | ours peak RSS (MiB) | RSS after imports (MiB) | commands run | 0.62.0 (s) | 0.62.0 answer |',
        '|---|---|---|---|---|---|---|---|',
    ]
    for call, what in BIG_CALLS:
        ours = rows['ours', call]
        ref = rows.get(('reference', call))
        ref_cells = '– | –'
        if ref:
            answer = ' '.join(ref['head'].split())[:110].replace('|', '/')
            ref_cells = f'{ref["seconds"]:.2f} | {answer}'
        lines_out.append(
            f'| `{call}` | {what} | {ours["seconds"]:.2f} | {ours["rss_mib"]:.0f} | {ours["base_mib"]:.0f} '
            f'| {ours["runs"]} | {ref_cells} |'
        )
    lines_out.append('')
    lines_out.append('Our answers (first 160 chars):')
    lines_out.append('')
    for call, _ in BIG_CALLS:
        lines_out.append(f'- `{call}`: `{" ".join(rows["ours", call]["head"].split())[:150]}`')
    table = '\n'.join(lines_out) + '\n'
    sys.stdout.write(table)
    args.big_output.parent.mkdir(parents=True, exist_ok=True)
    args.big_output.write_text(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--files', type=int, default=3000)
    parser.add_argument('--ref-python', default=str(REFERENCE_PYTHON))
    parser.add_argument('--rounds', type=int, default=3, help='alternating rounds; the best of each workload counts')
    parser.add_argument('--engine', action='store_true', help='time RemoteEngine itself, not the toolset calls')
    parser.add_argument('--output', type=Path, default=RESULTS)
    parser.add_argument('--side', choices=('ours', 'engine', 'reference'), help=argparse.SUPPRESS)
    parser.add_argument(
        '--big-log', type=int, metavar='MIB', help='page a log of MIB MiB through a commands-only backend'
    )
    parser.add_argument('--big-output', type=Path, default=BIG_RESULTS)
    parser.add_argument('--big-side', choices=('ours', 'reference'), help=argparse.SUPPRESS)
    parser.add_argument('--big-call', help=argparse.SUPPRESS)
    parser.add_argument('--big-path', type=Path, help=argparse.SUPPRESS)
    parser.add_argument('--big-lines', type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.big_side:
        print(json.dumps(anyio.run(big_call, args.big_side, args.big_call, args.big_path, args.big_lines)))
        return
    if args.big_log:
        big_main(args)
        return
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
