"""apply_patch (issue 22) timed against `git apply` and against `edit_file`, both as ratios in one run.

Usage: `python benches/bench_apply_patch.py [--files 20] [--lines 2000] [--repeat 30]`

- `patch_<N>_files`: one change of `--files` source files of `--lines` lines each (three hunks a
  file: near the top, in the middle, at the end), applied by `apply_patch` as one Codex patch and by
  `git apply` as the same change in git's unified diff (`git diff -U3`, no rename). Both patches come
  from one git commit of a generated tree (`tests/codex_patch.py` rewrites the diff, as the corpus
  test does), so they are the same change.
- `one_hunk`: one hunk of one file of `--lines` lines, by `apply_patch` and by `edit_file` with the
  hunk's old lines as `old_text` and its new lines as `new_text`.

Ours is the toolset's direct method (`await toolset.apply_patch(...)`, `root_dir` given, no Agent),
timed inside this process around the awaited call; `git apply` is a subprocess run in the tree,
timed around `subprocess.run`, so its figure includes starting a process: `git --version`, timed
the same way, is shown as that floor. Before every timed call the tree is put back (untimed);
each figure is the best of `--repeat` calls, and every call is checked to give the same bytes. The
table goes to stdout and to `benches/results/apply-patch-latest.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / 'results' / 'apply-patch-latest.md'
sys.path.insert(0, str(REPO))

from tests.codex_patch import commit_patch, git  # noqa: E402


def source(index: int, lines: int) -> str:
    """A Python-like file of `lines` lines, different per `index`."""
    out = [f'"""Module {index}."""', '']
    while len(out) < lines:
        n = len(out)
        out += [f'def function_{index}_{n}(value):', f'    total = value * {n} + {index}', '    return total', '']
    return '\n'.join(out[:lines]) + '\n'


def changed(text: str) -> str:
    """`text` with one line changed near the top, in the middle and at the end."""
    lines = text.splitlines(keepends=True)
    for at in (5, len(lines) // 2, len(lines) - 2):
        lines[at] = lines[at].rstrip('\n') + '  # changed\n'
    return ''.join(lines)


def commit(root: Path, files: dict[str, str]) -> str:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git(root, 'add', '-A')
    env = {**os.environ, 'GIT_AUTHOR_NAME': 'b', 'GIT_AUTHOR_EMAIL': 'b@b', 'GIT_COMMITTER_NAME': 'b'}
    env['GIT_COMMITTER_EMAIL'] = 'b@b'
    subprocess.run(['git', '-C', str(root), 'commit', '-q', '-m', 'c'], check=True, env=env)
    return git(root, 'rev-parse', 'HEAD').decode().strip()


def plant(tree: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)


def check(tree: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        assert (tree / path).read_text() == text, f'{path}: not the expected change'


async def best(
    repeat: int, reset: Callable[[], None], run: Callable[[], Awaitable[Any]], verify: Callable[[], None]
) -> float:
    times: list[float] = []
    for _ in range(repeat):
        reset()
        start = time.perf_counter()
        await run()
        times.append(time.perf_counter() - start)
        verify()
    return min(times)


def subprocess_call(command: list[str], cwd: Path) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        subprocess.run(command, cwd=cwd, check=True, capture_output=True)

    return run


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--files', type=int, default=20)
    parser.add_argument('--lines', type=int, default=2000)
    parser.add_argument('--repeat', type=int, default=30)
    options = parser.parse_args()

    from pydantic_ai_harness_rs import FileSystem
    from pydantic_ai_harness_rs.filesystem import DEFAULT_TOOL_NAMES

    work = Path(tempfile.mkdtemp(prefix='bench-apply-patch-'))
    try:
        repo, tree = work / 'repo', work / 'tree'
        repo.mkdir()
        git(repo, 'init', '-q')
        old = {f'pkg/mod_{i:02d}.py': source(i, options.lines) for i in range(options.files)}
        new = {path: changed(text) for path, text in old.items()}
        parent = commit(repo, old)
        child = commit(repo, new)
        codex = commit_patch(repo, parent, child).text
        unified = work / 'change.diff'
        unified.write_bytes(git(repo, 'diff', '--no-color', '--no-renames', '-U3', parent, child))
        tree.mkdir()
        toolset = FileSystem(root_dir=tree, tools=[*DEFAULT_TOOL_NAMES, 'apply_patch']).get_toolset()
        rows: list[tuple[str, str, float, str, float]] = []

        ours = await best(
            options.repeat, lambda: plant(tree, old), lambda: toolset.apply_patch(codex), lambda: check(tree, new)
        )
        theirs = await best(
            options.repeat,
            lambda: plant(tree, old),
            subprocess_call(['git', 'apply', str(unified)], tree),
            lambda: check(tree, new),
        )
        floor = await best(options.repeat, lambda: None, subprocess_call(['git', '--version'], tree), lambda: None)
        rows.append((f'patch_{options.files}_files', 'apply_patch', ours, 'git apply', theirs))

        text = source(99, options.lines)
        lines = text.splitlines(keepends=True)
        lines[len(lines) // 2] = lines[len(lines) // 2].rstrip('\n') + '  # changed\n'
        one_old, one_new = {'one.py': text}, {'one.py': ''.join(lines)}
        one = commit_patch(repo, commit(repo, one_old), commit(repo, one_new))
        [hunk] = one.changes[-1].hunks
        one_patch = one.text
        before = ''.join(line[1:] + '\n' for line in hunk.lines if line[0] != '+')
        after = ''.join(line[1:] + '\n' for line in hunk.lines if line[0] != '-')
        ours_one = await best(
            options.repeat,
            lambda: plant(tree, one_old),
            lambda: toolset.apply_patch(one_patch),
            lambda: check(tree, one_new),
        )
        edit_one = await best(
            options.repeat,
            lambda: plant(tree, one_old),
            lambda: toolset.edit_file('one.py', before, after),
            lambda: check(tree, one_new),
        )
        rows.append(('one_hunk', 'apply_patch', ours_one, 'edit_file', edit_one))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    ms = lambda s: f'{s * 1000:.2f} ms'  # noqa: E731
    table = [
        f'# apply_patch (issue 22): {datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores, '
        f'load {os.getloadavg()[0]:.1f}',
        '',
        f'{options.files} files of {options.lines} lines, three hunks each; best of {options.repeat} calls, '
        'the tree put back before each (untimed). Ratio: ours / the other.',
        '',
        '| workload | ours | time | the other | time | ratio |',
        '|---|---|---|---|---|---|',
        *(f'| `{name}` | `{a}` | {ms(ta)} | `{b}` | {ms(tb)} | {ta / tb:.2f}x |' for name, a, ta, b, tb in rows),
        '',
        f'`git apply` runs as a process: starting one (`git --version`, timed the same way) takes {ms(floor)} here.',
    ]
    text = '\n'.join(table) + '\n'
    print(text)
    RESULTS.write_text(text)


if __name__ == '__main__':
    asyncio.run(main())
