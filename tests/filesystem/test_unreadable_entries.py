"""Entries a run cannot read, write or look into (issue 19, items 3, 4 and 5).

- A regular file on a kernel pseudo-filesystem (`/proc`, `/sys`) is written in place, as both
  references write it; a value the kernel refuses is a retry, never an `OSError` out of the run.
- One unreadable file or directory does not fail `grep`, `list_files` or `search_files`: the
  readable results come back, ending with 0.62.0's `[N paths could not be read (reason): ...]`
  under both contracts, and `report_skipped` counts them.
- A directory that may be read but not searched (mode 0644) is refused as `Permission denied`
  by every walker, not listed as empty.

Permission checks need a process the kernel checks: as root the calls run in a child started by
`capsh` without `CAP_DAC_OVERRIDE`/`CAP_DAC_READ_SEARCH` (see `test_os_errors.py`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.filesystem.conftest import REFERENCE
from tests.filesystem.test_os_errors import _unprivileged

pytestmark = pytest.mark.skipif(REFERENCE, reason='issue 19: beyond the 0.36.0 reference')

PROC_CHILD = r"""
import asyncio, json
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai_harness_rs.filesystem import FileSystem

async def main():
    toolset = FileSystem(root_dir='/').get_toolset()
    out = []
    for path, content in [('proc/self/comm', 'hrs-comm'), ('proc/self/oom_score_adj', 'not a number')]:
        try:
            out.append(await toolset.write_file(path, content))
        except ModelRetry as e:
            out.append('RETRY: ' + e.message)
    with open('/proc/self/comm') as f:
        out.append(f.read())
    print(json.dumps(out))

asyncio.run(main())
"""


def test_a_proc_file_is_written_in_place_and_a_refused_value_is_a_retry(tmp_path: Path) -> None:
    script = tmp_path / 'child.py'
    script.write_text(PROC_CHILD)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    wrote, refused, comm = json.loads(proc.stdout)
    assert wrote.startswith('Wrote 8 chars (1 lines) to proc/self/comm. [hash:')
    assert refused == (
        "RETRY: The kernel refused the write to 'proc/self/oom_score_adj' (a pseudo-file, written in place): "
        'Invalid argument. Nothing was changed; check what the file accepts.'
    )
    assert comm == 'hrs-comm\n'


WALK_CHILD = r"""
import asyncio, json, sys
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.workspaces import LocalWorkspaceBackend
from pydantic_ai_harness_rs.filesystem import FILE_SYSTEM_TOOL_NAMES, FileSystem

CALLS = [
    ('grep', {'pattern': 'alpha'}),
    ('list_files', {}),
    ('search_files', {'pattern': 'alpha'}),
    ('grep', {'pattern': 'alpha', 'path': 'secret.txt'}),
    ('list_directory', {'path': 'noexec'}),
    ('find_files', {'pattern': '*', 'path': 'noexec'}),
    ('search_files', {'pattern': 'alpha', 'path': 'noexec'}),
    ('list_files', {'path': 'noexec'}),
    ('grep', {'pattern': 'alpha', 'path': 'noexec'}),
    ('find_files', {'pattern': '**/*'}),
]

async def main():
    root = sys.argv[1]
    out = {}
    for mode in ['document', 'workspace', 'report_skipped']:
        if mode == 'document':
            toolset, extra = FileSystem(root_dir=root, tools=FILE_SYSTEM_TOOL_NAMES).get_toolset(), {}
        else:
            fs = FileSystem(tools=FILE_SYSTEM_TOOL_NAMES, report_skipped=mode == 'report_skipped')
            toolset, extra = fs.get_toolset(), {'workspace': LocalWorkspaceBackend(root)}
        results = out[mode] = []
        for tool, args in CALLS:
            try:
                results.append(await getattr(toolset, tool)(**args, **extra))
            except ModelRetry as e:
                results.append('RETRY: ' + e.message)
    print(json.dumps(out))

asyncio.run(main())
"""


def _unreadable_tree(tmp_path: Path) -> Path:
    root = tmp_path / 'root'
    for d in ['locked', 'sub', 'noexec']:
        (root / d).mkdir(parents=True)
    for name in ['a.txt', 'secret.txt', 'locked/in.txt', 'sub/b.txt', 'noexec/f.txt']:
        (root / name).write_text('alpha\n')
    os.chmod(root / 'locked', 0)
    os.chmod(root / 'secret.txt', 0)
    os.chmod(root / 'noexec', 0o644)
    return root


def test_unreadable_entries_are_named_and_the_rest_is_found(tmp_path: Path) -> None:
    root = _unreadable_tree(tmp_path)
    script = tmp_path / 'child.py'
    script.write_text(WALK_CHILD)
    try:
        proc = subprocess.run(
            _unprivileged([sys.executable, str(script), str(root)]), capture_output=True, text=True, timeout=120
        )
    finally:
        for d in ['locked', 'noexec']:
            os.chmod(root / d, 0o755)
        os.chmod(root / 'secret.txt', 0o644)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    note = '[3 paths could not be read (Permission denied): locked, noexec/f.txt, secret.txt]'
    listed = 'a.txt\nnoexec/f.txt\nsecret.txt\nsub/b.txt\n[1 path could not be read (Permission denied): locked]'
    refused = "RETRY: Permission denied: 'noexec'"
    expected = [
        f'a.txt:1:alpha\nsub/b.txt:1:alpha\n{note}',
        listed,
        f'a.txt:1:alpha\nsub/b.txt:1:alpha\n{note}',
        'No matches found.\n[1 path could not be read (Permission denied): secret.txt]',
        *[refused] * 5,
        # find_files names the directory it could not list, as the other walkers do (it said nothing).
        'a.txt\nlocked/\nnoexec/\nnoexec/f.txt\nsecret.txt\nsub/\nsub/b.txt\n'
        '[1 path could not be read (Permission denied): locked]',
    ]
    assert out['document'] == expected
    assert out['workspace'] == expected
    counted = out['report_skipped']
    assert counted[:4] == [
        f'{expected[0]}\n[skipped: 3 paths that could not be read]',
        f'{expected[1]}\n[skipped: 1 path that could not be read]',
        f'{expected[2]}\n[skipped: 3 paths that could not be read]',
        expected[3],
    ]
    assert counted[-1] == f'{expected[-1]}\n[skipped: 1 path that could not be read]'
    assert not any('Errno' in r or 'os error' in r or str(tmp_path) in r for rs in out.values() for r in rs)
