"""Time the FileSystem's protocol path: our `RemoteEngine` vs pydantic-ai-harness 0.62.0, same backend.

Usage: `python benches/bench_remote.py [--files N] [--ref-python PATH]`

Both sides work on the in-memory `SupportsFilesystem` backend of the tests
(`tests/memory_workspace.py`: no commands, no host files), built the same way: `--files` text files
(default 3000, 30 lines each) in 10 top directories of 10 subdirectories. The reference runs in its
own interpreter (`--ref-python`, else the compat suite's venv `tests/compat/.venvs/harness-0.62.0`),
calling its direct tool methods (`await toolset.read_file(..., workspace=backend)`); ours calls
`RemoteEngine` (plan + commit for changes). Each workload runs once (the whole batch timed), and the
table gives seconds and ours/reference. The backend's own Python cost is in both columns.
"""

from __future__ import annotations

import argparse
import json
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

from memory_workspace import MemoryWorkspace  # noqa: E402

REFERENCE_PYTHON = REPO / 'tests' / 'compat' / '.venvs' / 'harness-0.62.0' / 'bin' / 'python'
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
    side: Side = Reference(ws) if side_name == 'reference' else Ours(ws)
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
    parser.add_argument('--side', choices=('ours', 'reference'), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(anyio.run(measure, args.side, args.files)))
        return
    results = {}
    for side, python in (('reference', args.ref_python), ('ours', sys.executable)):
        proc = subprocess.run(
            [python, __file__, '--side', side, '--files', str(args.files)], capture_output=True, text=True, timeout=300
        )
        if proc.returncode != 0:
            sys.exit(f'{side} failed:\n{proc.stderr[-3000:]}')
        results[side] = json.loads(proc.stdout)
    print(f'Protocol path, in-memory backend, {args.files} files (one run each)\n')
    print('| workload | what | 0.62.0 (s) | ours (s) | ours/0.62.0 |')
    print('|---|---|---|---|---|')
    for name, what in WORKLOADS:
        ref, ours = results['reference']['times'][name], results['ours']['times'][name]
        print(f'| `{name}` | {what} | {ref:.3f} | {ours:.3f} | {ours / ref:.2f}x |')


if __name__ == '__main__':
    main()
