"""Checkpoints (issue 23): the cost the core's `CheckpointStore` adds to a tool call, in one run.

Usage: `python benches/bench_checkpoints.py [--files 48000] [--repeat 15] [--edits 100] [--only-edits] [--gap-ms 2]`

- `stdlib` (this machine's CPython standard library, copied to a temporary directory) and `gen48k`
  (`--files` generated small files, 100 to a directory): a shell command's checkpoint is a
  `snapshot()` before it and a `record()` after it (two metadata walks, no file read when nothing
  changed); the command is `true`, run between them and not timed. Compared with `git status
  --porcelain` on the same tree with a warm index (`git add -A` + commit, then one untimed status),
  timed around `subprocess.run`, so it includes starting a process: `git --version`, timed the same
  way, is shown as that floor. Ours and git's alternate, call by call, so both meet the same machine
  load; the CPU time of each (all threads: `getrusage` of this process around ours, of the children
  around git's) is shown too, as load does not change it much. The first snapshot (the whole tree copied into the store) is shown
  once, with the store's size, beside git's first `git add -A` of the same tree.
- `edit_file`: one `edit_file` call (the toolset's direct method, `root_dir` given, no Agent) on a
  file of 2,000 lines (at the root, and three directories down) and on a 1 MiB file, alone and
  through the `Checkpoints` capability's own hook (`wrap_tool_execute`, as an agent's run calls it:
  the root's turn, the recorder, the native call that keeps, commits and records), so the figure is
  what a user's agent pays. Consecutive edits of the file, the calls alone and with checkpoints
  interleaved so both see the same machine, `--gap-ms` apart (untimed, 2 ms by default: an agent's
  calls are a model turn apart, so the store's writer thread has finished the last call's writes;
  0: back to back, caches warm): each writing a line no version had (a new object per
  call, kept by the store's writer thread, as an agent's edits are), each undoing the previous one
  (both versions kept already), and each new after the file's first line was changed by someone
  else (untimed), so its old bytes are new to the store too (hashed and kept).
- `store_after_edits`: `--edits` one-line edits of one 1 MiB file, each kept and recorded; the
  store's size in bytes (`store_bytes()`, and `du` of the store directory) after them.

Each time is the best (and the median) of `--repeat` calls. The table goes to stdout and to
`benches/results/checkpoints-latest.md` (with `--only-edits`, only the `edit_file` and store lines run
and are replaced there, from `A file tool:` on).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / 'results' / 'checkpoints-latest.md'


def timed(repeat: int, run: Callable[[], Any], reset: Callable[[], Any] = lambda: None) -> tuple[float, float]:
    """(best, median) seconds of `repeat` calls of `run`, `reset` before each (untimed)."""
    times: list[float] = []
    for _ in range(repeat):
        reset()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


async def atimed(repeat: int, run: Callable[[], Any], reset: Callable[[], Any]) -> tuple[float, float]:
    times: list[float] = []
    for _ in range(repeat):
        reset()
        start = time.perf_counter()
        await run()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def git(tree: Path, *args: str) -> None:
    subprocess.run(['git', *args], cwd=tree, check=True, capture_output=True)


def count_files(tree: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(tree))


def make_stdlib(target: Path) -> Path:
    source = Path(os.path.dirname(os.__file__))
    shutil.copytree(
        source, target, symlinks=True, ignore=shutil.ignore_patterns('site-packages', '__pycache__', '*.pyc')
    )
    return target


def make_generated(target: Path, files: int) -> Path:
    for i in range(files):
        d = target / f'pkg_{i // 1000:02d}' / f'mod_{(i // 100) % 10}'
        if i % 100 == 0:
            d.mkdir(parents=True, exist_ok=True)
        (d / f'file_{i}.py').write_text(f'def f_{i}(x):\n    return x * {i}\n')
    return target


def du(path: Path) -> int:
    out = subprocess.run(['du', '-sb', str(path)], check=True, capture_output=True, text=True).stdout
    return int(out.split()[0])


def shell_rows(name: str, tree: Path, repeat: int) -> tuple[list[str], dict[str, float]]:
    from pydantic_ai_harness_rs._core import CheckpointStore

    git(tree, 'init', '-q')
    start = time.perf_counter()
    git(tree, 'add', '-A')
    git_add = time.perf_counter() - start
    git(tree, '-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-qm', 'tree')
    git(tree, 'status', '--porcelain')  # warm the index
    files = count_files(tree) - count_files(tree / '.git')

    store = CheckpointStore(str(tree))
    start = time.perf_counter()
    handle = store.snapshot()
    first_snapshot = time.perf_counter() - start
    store.record(handle, run_id=None, tool_call_id=None, tool_name='run_command', created_at=time.time())
    first_bytes = store.store_bytes()

    snap: list[float] = []
    rec: list[float] = []
    gits: list[float] = []
    cpu_ours = cpu_git = 0.0
    for _ in range(repeat):
        cpu = cpu_seconds(resource.RUSAGE_SELF)
        start = time.perf_counter()
        handle = store.snapshot()
        snap.append(time.perf_counter() - start)
        cpu_ours += cpu_seconds(resource.RUSAGE_SELF) - cpu
        subprocess.run(['true'], check=True)
        cpu = cpu_seconds(resource.RUSAGE_SELF)
        start = time.perf_counter()
        listing = store.record(handle, run_id=None, tool_call_id=None, tool_name='run_command', created_at=0.0)
        rec.append(time.perf_counter() - start)
        cpu_ours += cpu_seconds(resource.RUSAGE_SELF) - cpu
        assert listing is None, listing
        cpu = cpu_seconds(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(['git', 'status', '--porcelain'], cwd=tree, check=True, capture_output=True)
        gits.append(time.perf_counter() - start)
        cpu_git += cpu_seconds(resource.RUSAGE_CHILDREN) - cpu
    both = [a + b for a, b in zip(snap, rec)]
    git_best, git_median = min(gits), statistics.median(gits)
    floor, _ = timed(repeat, lambda: subprocess.run(['git', '--version'], check=True, capture_output=True))
    ms = lambda s: f'{s * 1000:.1f} ms'  # noqa: E731
    rows = [
        f'| `{name}` ({files:,} files) | snapshot + record | {ms(min(both))} | {ms(statistics.median(both))} '
        f'| {ms(git_best)} | {ms(git_median)} | {min(both) / git_best:.2f}x |',
    ]
    extra = {
        'snapshot': min(snap),
        'record': min(rec),
        'first_snapshot': first_snapshot,
        'first_bytes': first_bytes,
        'floor': floor,
        'files': files,
        'git_add': git_add,
        'cpu_ours': cpu_ours / repeat,
        'cpu_git': cpu_git / repeat,
    }
    return rows, extra


def edited(text: str, n: int) -> str:
    lines = text.splitlines(keepends=True)
    at = len(lines) // 2
    lines[at] = f'# edit {n}\n'
    return ''.join(lines)


async def edit_rows(work: Path, repeat: int, gap: float) -> list[str]:
    import types

    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai_harness_rs import Checkpoints, FileSystem

    rows: list[str] = []
    ctx: Any = types.SimpleNamespace(run_id='bench', workspace=None)
    # `new`: each edit writes a line no version had (a new object each call, as an agent's edits
    # do); `undo`: each edit undoes the previous one (both versions kept already); `person`: as
    # `new`, with the file's first line changed by someone else before each call.
    cases = (
        ('2,000 lines', 2000, '', ('new', 'undo', 'person')),
        ('2,000 lines, three directories down', 2000, 'src/pkg/sub/', ('new',)),
        ('1 MiB', 1 << 20 >> 5, '', ('new', 'undo', 'person')),
    )
    for label, lines, under, kinds in cases:
        text = ''.join(f'line {i:05d} of the file being edited.....\n'[:31] + '\n' for i in range(lines))
        middle = text.splitlines(keepends=True)[lines // 2]
        for kind in kinds:
            person = kind == 'person'
            # One directory, one file each: the file system allocates both calls' new files alike
            # (ext4's inode search varies a lot from one directory to another).
            tree = work / f'edit-{lines}-{kind}-{len(under)}'
            (tree / under).mkdir(parents=True)
            toolset = FileSystem(root_dir=tree).get_toolset()
            files: dict[str, tuple[str, Any]] = {}
            for mode in ('alone', 'checkpoints'):
                (tree / under / f'{mode}.py').write_text(text)
                files[mode] = (f'{under}{mode}.py', Checkpoints[None](root=tree) if mode == 'checkpoints' else None)
            times: dict[str, list[float]] = {'alone': [], 'checkpoints': []}
            for n in range(2 * repeat + 2):
                if kind == 'undo':
                    old, new = (middle, 'changed\n') if n % 2 == 0 else ('changed\n', middle)
                else:
                    old, new = (middle if n == 0 else f'edit {n - 1}\n'), f'edit {n}\n'
                for mode in ('alone', 'checkpoints') if n % 4 < 2 else ('checkpoints', 'alone'):
                    name, checkpoints = files[mode]
                    if person:  # someone else changes the first line before the call: old bytes new to the store
                        current = (tree / name).read_text()
                        (tree / name).write_text(current.swapcase()[:1] + current[1:])

                    async def call(args: Any, name: str = name, old: str = old, new: str = new) -> Any:
                        return await toolset.edit_file(name, old, new)

                    part = ToolCallPart(tool_name='edit_file', args={}, tool_call_id=f'call-{n}')
                    # An agent's calls are a model turn apart: the writer thread is done with the
                    # last call's objects before the next call starts (untimed).
                    if gap:
                        await asyncio.sleep(gap)
                    start = time.perf_counter()
                    if checkpoints is None:
                        result = await call(None)
                    else:
                        result = await checkpoints.wrap_tool_execute(
                            ctx, call=part, tool_def=Any, args={}, handler=call
                        )
                    times[mode].append(time.perf_counter() - start)
                    assert result.startswith(f'Edited {name}.'), result
            checkpoints = files['checkpoints'][1]
            assert [c['paths'] for c in checkpoints.list()] == [[f'{under}checkpoints.py']] * (2 * repeat + 2)
            alone, kept = times['alone'][2:], times['checkpoints'][2:]  # the first pair warms up
            ms = lambda s: f'{s * 1000:.2f} ms'  # noqa: E731
            case = {
                'new': 'consecutive edits, each new',
                'undo': 'consecutive edits, each undoing the last',
                'person': 'each new, after a change by someone else',
            }[kind]
            rows.append(
                f'| `edit_file` ({label}, {len(text):,} bytes), {case} | {ms(min(alone))} | {ms(min(kept))} | '
                f'+{ms(min(kept) - min(alone))} | {min(kept) / min(alone):.2f}x | '
                f'{ms(statistics.median(alone))} | {ms(statistics.median(kept))} | '
                f'{statistics.median(kept) / statistics.median(alone):.2f}x |'
            )
    return rows


def store_after_edits(work: Path, edits: int) -> str:
    from pydantic_ai_harness_rs._core import CheckpointStore

    tree = work / 'edits'
    tree.mkdir()
    path = tree / 'big.txt'
    text = ''.join(f'{i:031d}\n' for i in range(1 << 15))  # 1 MiB, 32,768 lines
    path.write_text(text)
    store = CheckpointStore(str(tree))
    for n in range(edits):
        handle = store.keep(['big.txt'])
        text = edited(text, n)
        path.write_text(text)
        store.record(handle, run_id=None, tool_call_id=None, tool_name='edit_file', created_at=0.0)
    listed = store.list()
    return (
        f'{edits} one-line edits of one 1 MiB file: {len(listed)} checkpoints, store '
        f'{store.store_bytes() / 2**20:.1f} MiB of objects (`du` of the store directory: '
        f'{du(tree / ".pydantic-ai-harness" / "checkpoints") / 2**20:.1f} MiB; every version kept whole, '
        'no reflink on this file system).'
    )


FILE_TOOL_MARK = 'A file tool:'


def file_tool_lines(options: argparse.Namespace, edits: list[str], store_line: str) -> list[str]:
    return [
        f'{FILE_TOOL_MARK} `edit_file` alone vs through the `Checkpoints` hook (`wrap_tool_execute`: keep, '
        f'commit and record in one native call), best and median of {options.repeat * 2} calls each, '
        f'interleaved, {options.gap_ms:g} ms apart (load {os.getloadavg()[0]:.1f} at the end).',
        '',
        '| call | alone best | with checkpoint best | added | ratio | alone median | with checkpoint median | ratio |',
        '|---|---|---|---|---|---|---|---|',
        *edits,
        '',
        store_line,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--files', type=int, default=48_000)
    parser.add_argument('--repeat', type=int, default=15)
    parser.add_argument('--edits', type=int, default=100)
    parser.add_argument('--only-edits', action='store_true', help='run the edit_file part only')
    parser.add_argument(
        '--gap-ms', type=float, default=2.0, help='untimed pause before each edit_file call (0: back to back)'
    )
    options = parser.parse_args()

    if options.only_edits:
        work = Path(tempfile.mkdtemp(prefix='bench-checkpoints-'))
        try:
            edits = asyncio.run(edit_rows(work, options.repeat, options.gap_ms / 1000))
            store_line = store_after_edits(work, options.edits)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        kept = RESULTS.read_text().split(FILE_TOOL_MARK)[0] if RESULTS.exists() else ''
        text = kept + '\n'.join(file_tool_lines(options, edits, store_line)) + '\n'
        print(text)
        RESULTS.write_text(text)
        return

    work = Path(tempfile.mkdtemp(prefix='bench-checkpoints-'))
    try:
        shell: list[str] = []
        notes: list[str] = []
        for name, tree in (
            ('stdlib', make_stdlib(work / 'stdlib')),
            ('gen48k', make_generated(work / 'gen', options.files)),
        ):
            rows, extra = shell_rows(name, tree, options.repeat)
            shell += rows
            notes.append(
                f'- `{name}`: snapshot {extra["snapshot"] * 1000:.1f} ms + record {extra["record"] * 1000:.1f} ms '
                f'(best); the first snapshot {extra["first_snapshot"] * 1000:.0f} ms, store '
                f"{extra['first_bytes'] / 2**20:.1f} MiB (git's first `git add -A`: {extra['git_add'] * 1000:.0f} ms); "
                f'`git --version` {extra["floor"] * 1000:.1f} ms. CPU time per call (mean, all threads): ours '
                f'{extra["cpu_ours"] * 1000:.1f} ms, `git status` {extra["cpu_git"] * 1000:.1f} ms '
                f'({extra["cpu_ours"] / extra["cpu_git"]:.2f}x).'
            )
        edits = asyncio.run(edit_rows(work, options.repeat, options.gap_ms / 1000))
        store_line = store_after_edits(work, options.edits)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    table = [
        f'# Checkpoints (issue 23): {datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores, '
        f'load {os.getloadavg()[0]:.1f}',
        '',
        f'Best and median of {options.repeat} calls. A shell command: `snapshot()` before + `record()` after a '
        'no-op command, vs `git status --porcelain` with a warm index (a process: its start is included), '
        'the two alternating call by call.',
        '',
        '| tree | ours | best | median | git status best | median | ratio |',
        '|---|---|---|---|---|---|---|',
        *shell,
        '',
        "A shell command's checkpoint is two metadata walks by design (before the command and after it; "
        '`git status` walks once), each `lstat`ing every entry; a directory unchanged since the walk before '
        '(and settled then) is not read again. The first snapshot copies the tree into the store, '
        "as git's first `git add -A` does.",
        '',
        *notes,
        '',
        *file_tool_lines(options, edits, store_line),
    ]
    text = '\n'.join(table) + '\n'
    print(text)
    RESULTS.write_text(text)


if __name__ == '__main__':
    main()
