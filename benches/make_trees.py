"""Build (once) the inputs `bench_fs.py` times the FileSystem tools on, under `benches/.data/`.

- `tree/`: a copy of this machine's CPython standard library, site-packages included, topped up
  from `/work/venvs/ref036/.../site-packages` (or `--extra`) until it holds more than 40,000
  files; one planted file holds the rare literal `search_files` looks for.
- `log512.log`: a 512 MiB log, generated deterministically (same bytes on every machine).
- `wide/`: one directory with 50,000 small files.
- `edit50.txt`: a 50 MiB text file with one unique marker line in the middle.
- `tiny/`: a 10-line file and a 10-entry directory.
- `stdlib/`: this machine's CPython standard library alone (no site-packages).
- `million/`: 1,000,000 small text files (1,000 directories of 1,000), one holding the rare
  literal; only built when a `million_*` workload asks for it (about 4 GB of disk blocks).

Everything is cached: a part whose marker file exists is not rebuilt. `benches/.data/` is
git-ignored by the repository's `.gitignore`. Run directly to prepare the data without timing anything.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / '.data'
MIN_TREE_FILES = 40_000
LOG_BYTES = 512 * 1024 * 1024
WIDE_ENTRIES = 50_000
EDIT_BYTES = 50 * 1024 * 1024
ONELINE_BYTES = 20 * 1024 * 1024
MANY_FILES = 64
MANY_LINES = 2000
RARE_LITERAL = 'quixotic_zebra_7f3a9c'
"""Occurs in exactly one file of the tree (planted), and nowhere in the stdlib."""
EDIT_MARKER = 'EDIT-MARKER-0b5e: the one line edit_file replaces'
EDIT_MARKER_ALT = 'EDIT-MARKER-0b5e: the one line edit_file replaced'
MILLION_FILES = 1_000_000
MILLION_PER_DIR = 1_000
DEFAULT_EXTRA = Path('/work/venvs/ref036/lib/python3.11/site-packages')


def _count_files(root: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(root))


def _cached(name: str, marker: str) -> Callable[[Callable[..., int]], Callable[..., Path]]:
    """`DATA / name`, filled by the decorated function only while `DATA / marker` is missing.

    The function gets the target (and the maker's arguments) and returns the number of entries it
    made, which the marker keeps (`tree_count` and `stdlib_count` in bench_fs.py read it)."""

    def wrap(fill: Callable[..., int]) -> Callable[..., Path]:
        @functools.wraps(fill)
        def make(*args: Any) -> Path:
            target, done = DATA / name, DATA / marker
            if not done.exists():
                done.write_text(f'{fill(target, *args)}\n')
            return target

        return make

    return wrap


@_cached('tree', '.tree-ready')
def make_tree(tree: Path, extra: Path | None = DEFAULT_EXTRA) -> int:
    if tree.exists():
        shutil.rmtree(tree)
    stdlib = Path(sysconfig.get_paths()['stdlib'])
    shutil.copytree(stdlib, tree / 'stdlib', symlinks=True, ignore_dangling_symlinks=True)
    if _count_files(tree) <= MIN_TREE_FILES and extra is not None and extra.is_dir():
        for entry in sorted(extra.iterdir()):
            target = tree / 'extra-site-packages' / entry.name
            if entry.is_dir() and not entry.is_symlink():
                shutil.copytree(entry, target, symlinks=True, ignore_dangling_symlinks=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(entry, target, follow_symlinks=False)
            if _count_files(tree) > MIN_TREE_FILES:
                break
    planted = tree / 'stdlib' / 'planted' / 'deep' / 'needle.py'
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text(f'# a rare literal, found once by search_files\nNEEDLE = "{RARE_LITERAL}"\n')
    count = _count_files(tree)
    if count <= MIN_TREE_FILES:
        raise SystemExit(f'the tree has only {count} files; pass --extra with more site-packages')
    return count


def _log_line(i: int) -> str:
    seconds = i // 50
    return (
        f'2026-01-{1 + seconds // 86400 % 28:02d}T{seconds // 3600 % 24:02d}:{seconds // 60 % 60:02d}:'
        f'{seconds % 60:02d}.{i % 1000:03d}Z INFO [worker-{i % 16:02d}] GET /api/v1/items/{i * 7919 % 100000} '
        f'status={200 if i % 53 else 404} bytes={i * 31 % 65536} dur_ms={i * 17 % 997}\n'
    )


def make_log() -> Path:
    path = DATA / 'log512.log'
    if path.exists() and path.stat().st_size == LOG_BYTES:
        return path
    written = 0
    i = 0
    with open(path, 'wb') as f:
        while written < LOG_BYTES:
            chunk = ''.join(_log_line(n) for n in range(i, i + 20000)).encode('ascii')
            i += 20000
            chunk = chunk[: LOG_BYTES - written]
            f.write(chunk)
            written += len(chunk)
    return path


@_cached('wide', '.wide-ready')
def make_wide(wide: Path) -> int:
    wide.mkdir(parents=True, exist_ok=True)
    for n in range(WIDE_ENTRIES):
        (wide / f'entry-{n:05d}.txt').write_bytes(b'x' * (n % 100))
    return WIDE_ENTRIES


def make_edit_file() -> Path:
    path = DATA / 'edit50.txt'
    if path.exists() and path.stat().st_size >= EDIT_BYTES:
        return path
    line = 'lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor\n'
    lines = EDIT_BYTES // len(line) + 1
    half = lines // 2
    with open(path, 'w') as f:
        block = line * 1000
        for _ in range(half // 1000):
            f.write(block)
        f.write(EDIT_MARKER + '\n')
        for _ in range((lines - half) // 1000 + 1):
            f.write(block)
    return path


def make_oneline() -> Path:
    """A 20 MiB file that is one line (no newline at all), as minified JSON or a data dump."""
    path = DATA / 'oneline20.txt'
    if path.exists() and path.stat().st_size == ONELINE_BYTES:
        return path
    unit = '{"id": 1234567, "name": "item", "tags": ["a", "b", "c"], "value": 3.14159}, '
    path.write_text((unit * (ONELINE_BYTES // len(unit) + 1))[:ONELINE_BYTES])
    return path


@_cached('many', '.many-ready-v2')
def make_many(many: Path) -> int:
    """64 files of 1 MiB: 2,000 lines of 524 bytes each, so a default `read_file` shows all of one."""
    many.mkdir(parents=True, exist_ok=True)
    for k in range(MANY_FILES):
        body = ''.join(f'{k:02d}:{n:05d} ' + 'x' * 514 + '\n' for n in range(MANY_LINES))
        (many / f'm{k}.txt').write_text(body)
    return MANY_FILES


def make_tiny() -> Path:
    tiny = DATA / 'tiny'
    (tiny / 'dir').mkdir(parents=True, exist_ok=True)
    (tiny / 'ten.txt').write_text(''.join(f'line {n} of the tiny file\n' for n in range(1, 11)))
    for n in range(10):
        (tiny / 'dir' / f'f{n}.py').write_text(f'def f{n}():\n    return {n}\n')
    return tiny


@_cached('stdlib', '.stdlib-ready')
def make_stdlib(target: Path) -> int:
    """A copy of the standard library without its site-packages."""
    shutil.rmtree(target, ignore_errors=True)
    stdlib = Path(sysconfig.get_paths()['stdlib'])
    ignore = shutil.ignore_patterns('site-packages', '__pycache__')
    shutil.copytree(stdlib, target, symlinks=True, ignore_dangling_symlinks=True, ignore=ignore)
    return _count_files(target)


@_cached('million', '.million-ready')
def make_million(million: Path) -> int:
    """`million/d0000/f000.txt` ...: small text files, the rare literal planted in one."""
    for d in range(MILLION_FILES // MILLION_PER_DIR):
        folder = million / f'd{d:04d}'
        done = folder / f'f{MILLION_PER_DIR - 1:03d}.txt'
        if done.exists() and (folder / f'f{MILLION_PER_DIR - 2:03d}.txt').exists():
            continue  # resumed: this directory was finished (files are written in order)
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(MILLION_PER_DIR):
            i = d * MILLION_PER_DIR + n
            text = f'file {i}\ndef f{i}(self):\n    return {i * 7919 % 100000}\n'
            if i == MILLION_FILES // 2 + 17:
                text += f'NEEDLE = "{RARE_LITERAL}"\n'
            (folder / f'f{n:03d}.txt').write_text(text)
    return MILLION_FILES


def make_data_dir() -> Path:
    """`benches/.data/`, created. The repository's `.gitignore` ignores it; no `.gitignore` inside it,
    which would hide every input from a workspace search that honours ignore files (0.62.0's)."""
    DATA.mkdir(parents=True, exist_ok=True)
    (DATA / '.gitignore').unlink(missing_ok=True)
    return DATA


def make_all(extra: Path | None = DEFAULT_EXTRA) -> dict[str, Path]:
    make_data_dir()
    return {
        'tree': make_tree(extra),
        'log': make_log(),
        'wide': make_wide(),
        'edit': make_edit_file(),
        'oneline': make_oneline(),
        'many': make_many(),
        'tiny': make_tiny(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--extra', type=Path, default=DEFAULT_EXTRA, help='site-packages to top the tree up from')
    args = parser.parse_args()
    for name, path in make_all(args.extra).items():
        print(f'{name}: {path}')
    print(f'tree files: {(DATA / ".tree-ready").read_text().strip()}')


if __name__ == '__main__':
    main()
