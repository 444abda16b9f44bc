"""Time the FileSystem tools: ours vs pydantic-ai-harness 0.36.0 vs the raw CLI, in one run.

Usage: `python benches/bench_fs.py [--quick] [--only NAME ...] [--ref-python PATH] [--ours-python PATH]`
       `python benches/bench_fs.py --workspace [--quick] [--rounds N] [--only NAME ...] [--ref062-python PATH]`

Run it with the interpreter that has ours installed (a release build: `pip install .`). The
reference runs in its own interpreter (`--ref-python`, else `$HARNESS_036_PYTHON`, else the
compat suite's venv `tests/compat/.venvs/harness-0.36.0`, created here when missing). Both
are driven by `fs_runner.py`, which times direct toolset calls (`await toolset.read_file(...)`)
inside the process and keeps the best of N. The CLI column times the command line tool that
does the same job, as a subprocess, best of N. Peak-RSS growth is measured in a fresh process
per package for the two large-file workloads. Inputs come from `make_trees.py` (cached in
`benches/.data/`; only the inputs of the chosen workloads are built). The markdown table goes to
stdout and to `benches/results/fs-latest.md`.

With `--workspace`, the same workloads compare the two contracts instead: ours with `root_dir`
(0.36.0's contract), ours with no `root_dir` and `workspace=LocalWorkspaceBackend(dir)` on every
direct call (0.62.0's contract, the workspace engine), and pydantic-ai-harness 0.62.0 called the
same way (`--ref062-python`, else the compat suite's venv `tests/compat/.venvs/harness-0.62.0`).
The three run interleaved: each big workload alone (the tiny ones together) runs in one fresh
process per side, the sides alternating, `--rounds` times, keeping the best. That table goes to
`benches/results/fs-workspace-latest.md`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # no __pycache__ beside the bench

import chart  # noqa: E402 - after the path set-up
import make_trees  # noqa: E402 - after the path set-up

RUNNER = HERE / 'fs_runner.py'
RESULTS = HERE / 'results' / 'fs-latest.md'
WORKSPACE_RESULTS = HERE / 'results' / 'fs-workspace-latest.md'
WORKSPACE_TARGET = 1.1
"""Workspace mode must be as fast as root_dir mode: within this ratio (the rest is noise on a shared machine)."""
UNCAPPED = {'max_list_results': 1_000_000, 'max_search_results': 1_000_000, 'max_find_results': 1_000_000}
"""Caps lifted for the big walks, so a tool returns the whole answer, as the CLI it is compared with does."""


@dataclass
class Workload:
    name: str
    what: str
    tool: str
    args: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)
    alternate: dict[str, Any] | None = None
    cli: list[str] | None = None
    cli_label: str = ''
    aside_cli: list[str] | None = None
    """A second command shown for context only (e.g. `head` beside `openssl`)."""
    aside_label: str = ''
    target: tuple[str, float] | None = None
    """(`'cli'` or `'ref'`, ratio): ours must stay within that ratio of it."""
    rss: bool = False
    tiny: bool = False
    needs: str = 'tiny'
    """The `make_trees` input it runs on: `log`, `tree`, `wide`, `edit` or `tiny`."""
    over_64mib: bool = False
    """Its input is over 64 MiB, which 0.62.0 refuses to read (no 0.62.0 figure)."""
    reference: bool = True
    """Whether the reference runs it (`False`: it would take minutes, or lacks the tool)."""
    rss_limit_mib: int = 64
    """With `rss`: the peak-RSS growth ours must stay below."""
    rss_below_ref: bool = False
    """With `rss`: ours must also grow less than the reference."""
    also_cli: float | None = None
    """A second time target: within this ratio of the CLI too."""
    warmup: bool = False
    """One untimed call first: the timed calls read a file already seen."""
    fresh: bool = False
    """A new toolset for every timed call: nothing seen before (the first read of a file)."""
    concurrent: int = 0
    """Each call is this many calls at once (one model response's), `{k}` numbering them."""


WRITE_SOURCE = 'write10.src'
"""What `cp` copies in `write_10mib`: the content `write_file` writes."""
WRITE_CONTENT = ''.join(f'{n:08d} lorem ipsum dolor sit amet, consectetur adipiscing elit\n' for n in range(170_000))[
    : 10 * 1024 * 1024
]
"""10 MiB of text lines."""


def make_write_source() -> None:
    path = make_trees.DATA / WRITE_SOURCE
    if not path.exists() or path.stat().st_size != len(WRITE_CONTENT):
        path.write_text(WRITE_CONTENT)


def workloads(data: Path, rg: str | None) -> list[Workload]:
    log, tree, wide = data / 'log512.log', data / 'tree', data / 'wide'
    edit = {'path': 'edit50.txt', 'old_text': make_trees.EDIT_MARKER, 'new_text': make_trees.EDIT_MARKER_ALT}
    edit_back = {'path': 'edit50.txt', 'old_text': make_trees.EDIT_MARKER_ALT, 'new_text': make_trees.EDIT_MARKER}
    # The whole 512 MiB log hashed (the result's header holds its hash), against `openssl dgst`.
    hash_log = {
        'cli': ['openssl', 'dgst', '-sha256', str(log)],
        'cli_label': 'openssl dgst -sha256',
        'target': ('cli', 1.1),
        'rss': True,
        'needs': 'log',
        'over_64mib': True,
        'fresh': True,
    }
    # The log read again: its hash and line index are known, only the window is read.
    seen_log = {'needs': 'log', 'over_64mib': True, 'warmup': True}
    big = [
        Workload(
            'read_log',
            'read_file, first window of the 512 MiB log',
            'read_file',
            {'path': 'log512.log'},
            aside_cli=['head', '-n', '2000', str(log)],
            aside_label='head -n 2000',
            **hash_log,
        ),
        Workload(
            'reread_log',
            'read_file, first window of the 512 MiB log again (unchanged)',
            'read_file',
            {'path': 'log512.log'},
            cli=['head', '-n', '2000', str(log)],
            cli_label='head -n 2000',
            target=('cli', 5.0),
            **seen_log,
        ),
        Workload(
            'deep_offset_log',
            'read_file, lines 5,000,001–5,002,000 of the 512 MiB log already seen',
            'read_file',
            {'path': 'log512.log', 'offset': 5_000_000, 'limit': 2000},
            cli=['sh', '-c', f'tail -n +5000001 {log} | head -n 2000'],
            cli_label='tail -n +5000001 | head -n 2000',
            target=('cli', 1.5),
            **seen_log,
        ),
        Workload(
            'file_info_log',
            'file_info on the 512 MiB log',
            'file_info',
            {'path': 'log512.log'},
            **hash_log,
        ),
        Workload(
            'search_rare',
            f'search_files for a rare literal over the {tree_count(data):,}-file tree',
            'search_files',
            {'pattern': make_trees.RARE_LITERAL, 'path': 'tree'},
            config=UNCAPPED,
            cli=[rg, '-n', '--no-ignore', make_trees.RARE_LITERAL, str(tree)] if rg else None,
            cli_label='rg -n --no-ignore',
            target=('cli', 1.2),
            needs='tree',
        ),
        Workload(
            'list_wide',
            f'list_directory of a {make_trees.WIDE_ENTRIES:,}-entry directory',
            'list_directory',
            {'path': 'wide'},
            config=UNCAPPED,
            cli=['ls', '-1', str(wide)],
            cli_label='ls -1',
            target=('cli', 2.0),
            needs='wide',
        ),
        Workload(
            'find_py',
            'find_files `**/*.py` over the tree',
            'find_files',
            {'pattern': '**/*.py', 'path': 'tree'},
            config=UNCAPPED,
            cli=['find', str(tree), '-name', '*.py'],
            cli_label="find -name '*.py'",
            target=('cli', 1.5),
            needs='tree',
        ),
        Workload(
            'read_oneline_20mib',
            'read_file, a 20 MiB one-line file, `max_read_chars=20000`',
            'read_file',
            {'path': 'oneline20.txt'},
            config={'max_read_chars': 20_000},
            cli=['head', '-c', '20000', str(data / 'oneline20.txt')],
            cli_label='head -c 20000',
            target=('ref', 1.0),
            needs='oneline',
            fresh=True,
        ),
        Workload(
            'concurrent_reads_64',
            f'{make_trees.MANY_FILES} concurrent read_file of 1 MiB files (one model response)',
            'read_file',
            {'path': 'many/m{k}.txt'},
            # The same work: each result's header holds the whole file's hash (and line count),
            # so every file is hashed in full besides showing its window (here all 2,000 lines).
            cli=['sh', '-c', f'for f in {data}/many/m*.txt; do {{ sha256sum "$f"; head -n 2000 "$f"; }} & done; wait'],
            cli_label='64 × (`sha256sum` + `head -n 2000`) in parallel',
            target=('ref', 1.0),
            also_cli=2.0,
            rss=True,
            # The 64 results alone are 64.8 MiB of `str`, in any implementation.
            rss_limit_mib=96,
            rss_below_ref=True,
            needs='many',
            fresh=True,
            concurrent=make_trees.MANY_FILES,
        ),
        Workload(
            'edit_50mib',
            'edit_file, one unique line in a 50 MiB file',
            'edit_file',
            edit,
            alternate=edit_back,
            # Rewrites the file as perl does: a new file renamed over the old one.
            cli=[
                'perl',
                '-0777',
                '-pi',
                '-e',
                f's/{make_trees.EDIT_MARKER}/{make_trees.EDIT_MARKER_ALT}/',
                str(data / 'edit50.txt'),
            ],
            cli_label='perl -0777 -pi',
            target=('cli', 1.2),
            needs='edit',
        ),
        Workload(
            'write_10mib',
            'write_file of 10 MiB over an existing file',
            'write_file',
            {'path': 'write10.txt', 'content': WRITE_CONTENT},
            cli=['cp', str(data / WRITE_SOURCE), str(data / 'write10.txt')],
            cli_label='cp',
            target=('cli', 1.5),
            needs='write',
        ),
    ]
    big += search_workloads(data, rg)
    tiny_edit = {'path': 'tiny/ten.txt', 'old_text': 'line 5 of', 'new_text': 'line five of'}
    tiny_back = {'path': 'tiny/ten.txt', 'old_text': 'line five of', 'new_text': 'line 5 of'}
    tiny_content = ''.join(f'row {n}\n' for n in range(10))
    tiny = [
        Workload('tiny_read_file', 'read_file, 10-line file', 'read_file', {'path': 'tiny/ten.txt'}),
        Workload(
            'tiny_write_file', 'write_file, 10 lines', 'write_file', {'path': 'tiny/out.txt', 'content': tiny_content}
        ),
        Workload('tiny_edit_file', 'edit_file, 10-line file', 'edit_file', tiny_edit, alternate=tiny_back),
        Workload('tiny_list_directory', 'list_directory, 10 entries', 'list_directory', {'path': 'tiny/dir'}),
        Workload(
            'tiny_search_files', 'search_files, 10 files', 'search_files', {'pattern': 'return', 'path': 'tiny/dir'}
        ),
        Workload(
            'tiny_find_files', 'find_files `*.py`, 10 files', 'find_files', {'pattern': '*.py', 'path': 'tiny/dir'}
        ),
        Workload(
            'tiny_create_directory', 'create_directory, new each time', 'create_directory', {'path': 'tiny/made/d{i}'}
        ),
        Workload('tiny_file_info', 'file_info, 10-line file', 'file_info', {'path': 'tiny/ten.txt'}),
    ]
    for w in tiny:
        w.tiny = True
        w.target = ('ref', 1.0)
    return big + tiny


CAPPED_PATTERN = r'def \w+\(self'
"""A common pattern: thousands of hits in the stdlib, so the default cap (1,000) cuts the search short."""


def search_workloads(data: Path, rg: str | None) -> list[Workload]:
    """Capped and uncapped content searches, and the walkers and searches over a million files."""
    tree, million = data / 'tree', data / 'million'
    literal = make_trees.RARE_LITERAL

    def rg_head(where: Path) -> list[str] | None:
        return ['sh', '-c', f"{rg} -n --no-ignore '{CAPPED_PATTERN}' {where} | head -n 1000"] if rg else None

    def rg_cmd(*argv: str) -> list[str] | None:
        return [rg, *argv] if rg else None

    million_config = {**UNCAPPED, 'max_list_results': 2_000_000, 'max_find_results': 2_000_000}

    def on_million(name: str, description: str, tool: str, args: dict[str, Any], **cli: Any) -> Workload:
        """Over a million files: against `rg` only (the reference would take hours), memory bounded."""
        return Workload(
            name,
            description,
            tool,
            args,
            config=million_config,
            target=('cli', 1.2),
            needs='million',
            reference=False,
            rss=True,
            rss_limit_mib=256,
            **cli,
        )

    capped = {'cli_label': 'rg -n --no-ignore | head -n 1000', 'target': ('cli', 1.5)}
    return [
        Workload(
            'search_capped_stdlib',
            rf'search_files `def \w+\(self` over the {stdlib_count(data):,}-file stdlib, default cap 1,000',
            'search_files',
            {'pattern': CAPPED_PATTERN, 'path': 'stdlib'},
            cli=rg_head(data / 'stdlib'),
            **capped,
            needs='stdlib',
        ),
        Workload(
            'search_capped_tree',
            rf'search_files `def \w+\(self` over the {tree_count(data):,}-file tree, default cap 1,000',
            'search_files',
            {'pattern': CAPPED_PATTERN, 'path': 'tree'},
            cli=rg_head(tree),
            **capped,
            needs='tree',
        ),
        Workload(
            'search_uncapped_stdlib',
            rf'search_files `def \w+\(self` over the {stdlib_count(data):,}-file stdlib, uncapped',
            'search_files',
            {'pattern': CAPPED_PATTERN, 'path': 'stdlib'},
            config=UNCAPPED,
            cli=rg_cmd('-n', '--no-ignore', CAPPED_PATTERN, str(data / 'stdlib')),
            cli_label='rg -n --no-ignore',
            target=('cli', 1.2),
            needs='stdlib',
        ),
        on_million(
            'million_search',
            'search_files for a rare literal over 1,000,000 files',
            'search_files',
            {'pattern': literal, 'path': 'million'},
            cli=rg_cmd('-n', '--no-ignore', literal, str(million)),
            cli_label='rg -n --no-ignore',
        ),
        on_million(
            'million_grep',
            'grep for a rare literal over 1,000,000 files',
            'grep',
            {'pattern': literal, 'path': 'million', 'literal': True},
            # `grep` follows ripgrep's ignore rules, and the tree lies in this git repository:
            # `rg` with the same rules does the same work; without them, aside.
            cli=rg_cmd('-l', literal, str(million)),
            cli_label='rg -l',
            aside_cli=rg_cmd('-l', '--no-ignore', literal, str(million)),
            aside_label='rg -l --no-ignore',
        ),
        on_million(
            'million_find',
            'find_files `**/*.txt` over 1,000,000 files',
            'find_files',
            {'pattern': '**/*.txt', 'path': 'million'},
            cli=rg_cmd('--files', '--no-ignore', '-g', '*.txt', str(million)),
            cli_label="rg --files --no-ignore -g '*.txt'",
        ),
        on_million(
            'million_list',
            'list_files over 1,000,000 files',
            'list_files',
            {'path': 'million'},
            # As `grep`: `list_files` follows ripgrep's ignore rules, `rg --files` with them.
            cli=rg_cmd('--files', str(million)),
            cli_label='rg --files',
            aside_cli=rg_cmd('--files', '--no-ignore', str(million)),
            aside_label='rg --files --no-ignore',
        ),
    ]


def prepare(chosen: list[Workload], workspace: bool = False) -> None:
    """Build (or find cached) only the inputs the chosen workloads run on.

    For `--workspace`, `benches/.data/` is made a git repository of its own (nothing committed):
    0.62.0 enumerates a command-capable workspace's files with `git ls-files --exclude-standard`
    (or `rg`), which inside this checkout would see every input as ignored and search nothing.
    In their own repository they are a user's untracked files, which it searches.
    """
    make_trees.make_data_dir()
    if workspace and not (make_trees.DATA / '.git').exists():
        subprocess.run(['git', 'init', '-q', str(make_trees.DATA)], check=True)
    makers = {
        'log': make_trees.make_log,
        'tree': make_trees.make_tree,
        'wide': make_trees.make_wide,
        'edit': make_trees.make_edit_file,
        'oneline': make_trees.make_oneline,
        'many': make_trees.make_many,
        'tiny': make_trees.make_tiny,
        'million': make_trees.make_million,
        'stdlib': make_trees.make_stdlib,
        'write': make_write_source,
    }
    for need in dict.fromkeys(w.needs for w in chosen):
        makers[need]()


def stdlib_count(data: Path) -> int:
    marker = data / '.stdlib-ready'
    return int(marker.read_text()) if marker.exists() else 0


def tree_count(data: Path) -> int:
    marker = data / '.tree-ready'
    return int(marker.read_text()) if marker.exists() else 0


# ---- interpreters ---------------------------------------------------------------------


def find_rg(ours_python: str) -> str | None:
    candidates = [shutil.which('rg'), str(Path(ours_python).parent / 'rg'), str(Path(sys.executable).parent / 'rg')]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def reference_python(explicit: str | None) -> str:
    for candidate in (
        explicit,
        os.environ.get('HARNESS_036_PYTHON'),
        str(REPO / 'tests/compat/.venvs/harness-0.36.0/bin/python'),
        '/work/venvs/ref036/bin/python',
    ):
        if candidate and Path(candidate).exists():
            return candidate
    venv = REPO / 'tests/compat/.venvs/harness-0.36.0'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
    python = str(venv / 'bin/python')
    subprocess.run([python, '-m', 'pip', 'install', '-q', 'pydantic-ai-harness==0.36.0'], check=True)
    (venv / '.ready').write_text('{}')
    return python


def has_module(python: str, module: str) -> bool:
    return subprocess.run([python, '-c', f'import {module}'], capture_output=True).returncode == 0


def location_of(python: str, module: str) -> str:
    proc = subprocess.run(
        [python, '-c', f'import os, {module} as m; print(os.path.dirname(m.__file__))'], capture_output=True, text=True
    )
    return proc.stdout.strip() or '?'


def version_of(python: str, dist: str) -> str:
    proc = subprocess.run(
        [python, '-c', f'import importlib.metadata as m; print(m.version({dist!r}))'], capture_output=True, text=True
    )
    return proc.stdout.strip() or '?'


# ---- measuring ------------------------------------------------------------------------


def reset_scratch(data: Path) -> None:
    """Undo what a previous runner left: created directories, the edited marker."""
    shutil.rmtree(data / 'tiny' / 'made', ignore_errors=True)
    make_trees.make_tiny()
    edit = data / 'edit50.txt'
    if not edit.exists():
        return
    with open(edit, 'r+b') as f:
        content = f.read()
        alt = make_trees.EDIT_MARKER_ALT.encode()
        if alt in content:
            f.seek(0)
            f.write(content.replace(alt, make_trees.EDIT_MARKER.encode()))
            f.truncate()


def run_runner(python: str, module: str, spec: dict[str, Any], *extra: str) -> dict[str, Any]:
    """Run `fs_runner.py` in `python` on `spec`; `extra` is passed on (`--mode`, `--rss NAME`)."""
    with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as f:
        json.dump(spec, f)
        spec_path = f.name
    try:
        proc = subprocess.run([python, str(RUNNER), module, spec_path, *extra], capture_output=True, text=True)
    finally:
        os.unlink(spec_path)
    if proc.returncode != 0:
        return {'__error__': proc.stderr.strip()[-600:]}
    return json.loads(proc.stdout)


def time_cli(command: list[str], repeat: int) -> float:
    best = float('inf')
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - start)
    return best


def spec_for(data: Path, chosen: list[Workload], repeat_big: int, repeat_tiny: int) -> dict[str, Any]:
    entries = []
    for w in chosen:
        repeat = repeat_tiny if w.tiny else repeat_big
        if w.alternate is not None and repeat % 2:
            repeat += 1  # an even count leaves the file as it was
        entries.append(
            {
                'name': w.name,
                'tool': w.tool,
                'args': w.args,
                'config': w.config,
                'alternate': w.alternate,
                'repeat': repeat,
                'warmup': w.warmup,
                'fresh': w.fresh,
                'concurrent': w.concurrent,
            }
        )
    return {'data_dir': str(data), 'repeat': repeat_big, 'workloads': entries}


def measure(
    python: str, module: str, data: Path, chosen: list[Workload], spec: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    reset_scratch(data)
    times = run_runner(python, module, spec)
    rss: dict[str, Any] = {}
    for w in chosen:
        if w.rss:
            rss.update(run_runner(python, module, spec, '--rss', w.name))
    reset_scratch(data)
    return times, rss


# ---- report ---------------------------------------------------------------------------


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return 'n/a'
    if seconds < 1e-3:
        return f'{seconds * 1e6:.0f} µs'
    if seconds < 1:
        return f'{seconds * 1e3:.1f} ms'
    return f'{seconds:.2f} s'


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return 'n/a'
    mib = n / (1 << 20)
    return f'{mib / 1024:.2f} GiB' if mib >= 1024 else f'{mib:.1f} MiB'


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return 'n/a'
    return f'{a / b:.2f}x' if a / b >= 0.1 else f'{a / b:.3f}x'


def best(results: dict[str, Any], name: str) -> float | None:
    entry = results.get(name, {})
    return entry.get('best') if isinstance(entry, dict) else None


def note(results: dict[str, Any], name: str) -> str:
    if '__error__' in results:
        return ''  # reported once below
    entry = results.get(name, {})
    return entry.get('error', '') if isinstance(entry, dict) else ''


def report(
    chosen: list[Workload],
    ours: dict[str, Any],
    ref: dict[str, Any],
    ours_rss: dict[str, Any],
    ref_rss: dict[str, Any],
    cli: dict[str, float],
    aside: dict[str, float],
    header: list[str],
) -> str:
    lines = [*header, '']
    lines.append('| workload | ours | reference | CLI | ours/ref | ours/CLI | RSS growth ours / ref | target | met |')
    lines.append('|---|---|---|---|---|---|---|---|---|')
    problems: list[str] = []
    for w in chosen:
        o, r, c = best(ours, w.name), best(ref, w.name), cli.get(w.name)
        cli_cell = f'{fmt_time(c)} `{w.cli_label}`' if c is not None else '—'
        if w.name in aside:
            cli_cell += f' (`{w.aside_label}` {fmt_time(aside[w.name])})'
        rss_cell = '—'
        if w.rss:
            o_rss = ours_rss.get(w.name, {}).get('rss_growth')
            r_rss = ref_rss.get(w.name, {}).get('rss_growth')
            rss_cell = f'{fmt_bytes(o_rss)} / {fmt_bytes(r_rss)}'
        target_cell, met = '—', ''
        if w.target is not None:
            against, limit = w.target
            base = c if against == 'cli' else r
            target_cell = f'≤ {limit:g}x {"CLI" if against == "cli" else "ref"}'
            if o is not None and base is not None:
                met = 'yes' if o <= base * limit else 'NO'
            if w.also_cli is not None:
                target_cell += f', ≤ {w.also_cli:g}x CLI'
                if o is not None and c is not None and o > c * w.also_cli:
                    met = 'NO'
            if w.rss:
                target_cell += f', RSS < {w.rss_limit_mib} MiB'
                o_rss = ours_rss.get(w.name, {}).get('rss_growth')
                if o_rss is not None and o_rss >= w.rss_limit_mib << 20:
                    met = 'NO'
                if w.rss_below_ref:
                    target_cell += ' and < ref'
                    r_rss = ref_rss.get(w.name, {}).get('rss_growth')
                    if o_rss is not None and r_rss is not None and o_rss >= r_rss:
                        met = 'NO'
        lines.append(
            f'| {w.what} | {fmt_time(o)} | {fmt_time(r)} | {cli_cell} | {ratio(o, r)} | {ratio(o, c)} '
            f'| {rss_cell} | {target_cell} | {met} |'
        )
        for who, results in (('ours', ours), ('reference', ref)):
            if msg := note(results, w.name):
                problems.append(f'- {w.name} ({who}): {msg}')
    if '__error__' in ours:
        problems.append(f'- ours: runner failed: {ours["__error__"]}')
    if '__error__' in ref:
        problems.append(f'- reference: runner failed: {ref["__error__"]}')
    if problems:
        lines += ['', 'Errors:', *problems]
    return '\n'.join(lines) + '\n'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='fewer repetitions (1 per big workload, 30 per tiny one)')
    parser.add_argument('--only', nargs='*', help='workload names to run (default: all)')
    parser.add_argument('--ref-python', help='interpreter with pydantic-ai-harness==0.36.0')
    parser.add_argument('--ours-python', default=sys.executable, help='interpreter with pydantic-ai-harness-rs')
    parser.add_argument('--output', type=Path, help=f'default: {RESULTS} ({WORKSPACE_RESULTS} with --workspace)')
    parser.add_argument('--note', action='append', default=[], help='a line to add to the report header')
    parser.add_argument(
        '--workspace', action='store_true', help='compare ours workspace=LocalWorkspaceBackend vs root_dir vs 0.62.0'
    )
    parser.add_argument('--ref062-python', help='interpreter with pydantic-ai-harness==0.62.0 (with --workspace)')
    parser.add_argument('--rounds', type=int, default=3, help='alternating rounds per workload (with --workspace)')
    args = parser.parse_args()

    data = make_trees.DATA
    repeat_big, repeat_tiny, repeat_cli = (1, 30, 3) if args.quick else (3, 200, 5)
    ours_python = args.ours_python
    rg = find_rg(ours_python)
    chosen = [w for w in workloads(data, rg) if not args.only or w.name in args.only]
    prepare(chosen, args.workspace)
    spec = spec_for(data, chosen, repeat_big, repeat_tiny)
    if args.workspace:
        return main_workspace(args, data, chosen, spec, repeat_big, repeat_tiny)
    ref_python = reference_python(args.ref_python)

    cli: dict[str, float] = {}
    aside: dict[str, float] = {}
    for w in chosen:
        if w.cli:
            cli[w.name] = time_cli(w.cli, repeat_cli)
        if w.aside_cli:
            aside[w.name] = time_cli(w.aside_cli, repeat_cli)

    if has_module(ours_python, 'pydantic_ai_harness_rs.filesystem'):
        ours, ours_rss = measure(ours_python, 'pydantic_ai_harness_rs', data, chosen, spec)
        ours_version = version_of(ours_python, 'pydantic-ai-harness-rs')
    else:
        ours, ours_rss = {'__error__': f'pydantic_ai_harness_rs.filesystem not importable by {ours_python}'}, {}
        ours_version = 'not installed'
    ref_chosen = [w for w in chosen if w.reference]
    ref_spec = {**spec, 'workloads': [e for e in spec['workloads'] if e['name'] in {w.name for w in ref_chosen}]}
    ref, ref_rss = measure(ref_python, 'pydantic_ai_harness', data, ref_chosen, ref_spec)

    commit = subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True)
    ours_location = location_of(ours_python, 'pydantic_ai_harness_rs')
    header = [
        '# FileSystem benchmark: ours vs pydantic-ai-harness 0.36.0 vs the CLI',
        '',
        f'- when: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, '
        f'{"quick" if args.quick else "full"} run (best of {repeat_big} big / {repeat_tiny} tiny / {repeat_cli} CLI)',
        f'- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}',
        f'- ours: pydantic-ai-harness-rs {ours_version} from {ours_location} ({ours_python}); '
        f'this checkout at {commit.stdout.strip() or "?"}',
        f'- reference: pydantic-ai-harness {version_of(ref_python, "pydantic-ai-harness")} ({ref_python})',
        f'- inputs: {inputs_line(data, chosen)}',
        '- times are the direct toolset call (`await toolset.<tool>(...)`) inside the process; CLI is a subprocess',
        '- RSS growth: peak RSS during one call (VmHWM reset before it) minus RSS before it, in a fresh process',
        *(f'- {line}' for line in args.note),
    ]
    table = report(chosen, ours, ref, ours_rss, ref_rss, cli, aside, header)
    write_table(table, args.output or RESULTS)
    return 0


def inputs_line(data: Path, chosen: list[Workload]) -> str:
    what = {
        'tree': f'{tree_count(data):,}-file tree ({data / "tree"})',
        'log': '512 MiB log',
        'wide': f'{make_trees.WIDE_ENTRIES:,}-entry dir',
        'edit': '50 MiB edit file',
        'oneline': '20 MiB one-line file',
        'many': f'{make_trees.MANY_FILES} files of 1 MiB',
        'tiny': '10-line file and 10-entry dir',
        'million': f'{make_trees.MILLION_FILES:,} small files ({data / "million"})',
        'stdlib': f'{stdlib_count(data):,}-file stdlib ({data / "stdlib"})',
        'write': '10 MiB of text to write',
    }
    return ', '.join(what[need] for need in dict.fromkeys(w.needs for w in chosen))


def write_table(table: str, output: Path) -> None:
    sys.stdout.write(table)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(table)
    print(f'chart: {chart.write_chart()}')


# ---- workspace mode: the two contracts, and 0.62.0 -------------------------------------


def reference062_python(explicit: str | None) -> str | None:
    for candidate in (explicit, str(REPO / 'tests/compat/.venvs/harness-0.62.0/bin/python')):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def merge_best(into: dict[str, Any], results: dict[str, Any]) -> None:
    """Fold one round's runner output into `into`: best time over rounds, all times kept, errors kept."""
    if '__error__' in results:
        into.setdefault('__error__', results['__error__'])
        return
    for name, entry in results.items():
        seen = into.get(name)
        if seen is None or 'error' in entry:
            into[name] = entry  # an error in any round is the one reported
        elif 'error' not in seen:
            seen['times'] += entry['times']
            seen['best'] = min(seen['best'], entry['best'])


def main_workspace(
    args: argparse.Namespace,
    data: Path,
    chosen: list[Workload],
    spec: dict[str, Any],
    repeat_big: int,
    repeat_tiny: int,
) -> int:
    ours_python = args.ours_python
    ref_python = reference062_python(args.ref062_python)
    # (label, python, module, mode); the order rotates every round.
    sides = [
        ('root', ours_python, 'pydantic_ai_harness_rs', 'root_dir'),
        ('ws', ours_python, 'pydantic_ai_harness_rs', 'workspace'),
    ]
    if ref_python is not None:
        sides.append(('ref062', ref_python, 'pydantic_ai_harness', 'workspace'))
    groups = [[w] for w in chosen if not w.tiny] + (
        [[w for w in chosen if w.tiny]] if any(w.tiny for w in chosen) else []
    )
    results: dict[str, dict[str, Any]] = {label: {} for label, *_ in sides}
    rss: dict[str, dict[str, Any]] = {label: {} for label, *_ in sides}
    loads: list[float] = [os.getloadavg()[0]]
    started = time.perf_counter()
    for group in groups:
        for r in range(args.rounds):
            for label, python, module, mode in sides[r % len(sides) :] + sides[: r % len(sides)]:
                runnable = {w.name for w in group if not (label == 'ref062' and w.over_64mib)}
                if not runnable:
                    continue
                part = {**spec, 'workloads': [e for e in spec['workloads'] if e['name'] in runnable]}
                reset_scratch(data)
                merge_best(results[label], run_runner(python, module, part, '--mode', mode))
                loads.append(os.getloadavg()[0])
        for w in group:
            if not w.rss:
                continue
            for label, python, module, mode in sides:
                if label == 'ref062' and w.over_64mib:
                    continue
                rss[label].update(run_runner(python, module, spec, '--mode', mode, '--rss', w.name))
    reset_scratch(data)
    elapsed = time.perf_counter() - started

    commit = subprocess.run(['git', '-C', str(REPO), 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True)
    header = [
        '# FileSystem benchmark: workspace mode vs root_dir mode (ours), and vs pydantic-ai-harness 0.62.0',
        '',
        f'- when: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, '
        f'{"quick" if args.quick else "full"} run: {args.rounds} alternating rounds, each the best of '
        f'{repeat_big} (big) / {repeat_tiny} (tiny) calls; best over all rounds; {elapsed:.0f} s in all',
        f'- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; '
        f'1-min load average {min(loads):.2f}–{max(loads):.2f} during the run (shared machine)',
        f'- ours: pydantic-ai-harness-rs {version_of(ours_python, "pydantic-ai-harness-rs")} from '
        f'{location_of(ours_python, "pydantic_ai_harness_rs")} ({ours_python}); this checkout at '
        f'{commit.stdout.strip() or "?"}',
        '- root_dir: `FileSystem(root_dir=DIR)`, direct calls without `workspace=` (0.36.0 contract)',
        '- workspace: `FileSystem()`, every direct call given `workspace=LocalWorkspaceBackend(DIR)`, one backend '
        'object per process (0.62.0 contract, its defaults, e.g. `max_read_chars=50_000`)',
        (
            f'- 0.62.0: pydantic-ai-harness {version_of(ref_python, "pydantic-ai-harness")} ({ref_python}), called as '
            'workspace above; it refuses files over 64 MiB, so the 512 MiB log rows have no 0.62.0 figure'
            if ref_python
            else '- 0.62.0: no interpreter found (`--ref062-python`), no 0.62.0 column'
        ),
        f'- inputs: {inputs_line(data, chosen)}',
        '- RSS growth: peak RSS during one call (VmHWM reset before it) minus RSS before it, in a fresh process',
        *(f'- {line}' for line in args.note),
    ]
    table = report_workspace(chosen, results, rss, header)
    write_table(table, args.output or WORKSPACE_RESULTS)
    return 0


def report_workspace(
    chosen: list[Workload], results: dict[str, dict[str, Any]], rss: dict[str, dict[str, Any]], header: list[str]
) -> str:
    lines = [*header, '']
    lines.append(
        '| workload | ours root_dir | ours workspace | workspace/root_dir | 0.62.0 | ours workspace/0.62.0 '
        '| result chars root_dir / workspace / 0.62.0 | RSS growth root_dir / workspace / 0.62.0 '
        f'| target: workspace ≤ {WORKSPACE_TARGET:g}x root_dir |'
    )
    lines.append('|---|---|---|---|---|---|---|---|---|')
    problems: list[str] = []
    labels = list(results)
    for w in chosen:
        root, ws = best(results['root'], w.name), best(results['ws'], w.name)
        ref = best(results.get('ref062', {}), w.name)
        refused = w.over_64mib and 'ref062' in results
        ref_cell = 'refuses (> 64 MiB)' if refused else fmt_time(ref)
        chars = ' / '.join(
            '—' if (label == 'ref062' and w.over_64mib) else str(results[label].get(w.name, {}).get('chars', 'n/a'))
            for label in labels
        )
        rss_cell = '—'
        if w.rss:
            rss_cell = ' / '.join(
                '—' if (label == 'ref062' and w.over_64mib) else fmt_bytes(rss[label].get(w.name, {}).get('rss_growth'))
                for label in labels
            )
        met = ''
        if root is not None and ws is not None:
            met = 'yes' if ws <= root * WORKSPACE_TARGET else 'NO'
        lines.append(
            f'| {w.what} | {fmt_time(root)} | {fmt_time(ws)} | {ratio(ws, root)} | {ref_cell} '
            f'| {"—" if refused else ratio(ws, ref)} | {chars} | {rss_cell} | {met} |'
        )
        for label in labels:
            if msg := note(results[label], w.name):
                problems.append(f'- {w.name} ({label}): {msg}')
    for label in labels:
        if '__error__' in results[label]:
            problems.append(f'- {label}: runner failed: {results[label]["__error__"]}')
    if problems:
        lines += ['', 'Errors:', *problems]
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    sys.exit(main())
