"""`FileSystem(contract='workspace')` reads a relative `root_dir` as 0.62.0 does (issue 20, item 10).

Both sides run `fs062_contract_scenarios.py` (ours with `contract='workspace'`, 0.62.0 in its own
venv) on the same tree: `LocalWorkspace('./ws')` in an agent run and an in-memory workspace in
direct calls, for `root_dir` `'..'`, `'.'`, `'src'`, `'../..'`, `'/'` and `'~/x'`. The root, where
paths resolve from, every result, every event's `root_dir` and `path`, and the `UserError` text
for a `root_dir` below the working directory must be the same. One difference is deliberate and
listed in the README: on a `LocalWorkspace` a path outside the root is never shown
(`` `<outside-workspace>` `` where 0.62.0 names the host path).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).with_name('fs062_contract_scenarios.py')

_OUTSIDE = re.compile(r'^RETRY: `[^`]*` is outside ')


def _run(python: str | Path, side: str) -> dict[str, Any]:
    proc = subprocess.run([str(python), str(SCRIPT), side], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-5000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope='module')
def both(reference062_python: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    return _run(reference062_python, 'reference'), _run(sys.executable, 'ours')


def _scenarios() -> list[str]:
    sys.path.insert(0, str(SCRIPT.parent))
    from fs062_contract_scenarios import ROOT_DIRS

    return [f'{where} {root_dir}' for root_dir in ROOT_DIRS for where in ('local', 'memory')]


@pytest.mark.parametrize('name', _scenarios())
def test_same_tree_results_and_errors(both: tuple[dict[str, Any], dict[str, Any]], name: str) -> None:
    reference, ours = both
    expected = dict(reference[name])
    if name.startswith('local') and 'results' in expected:
        expected['results'] = [_OUTSIDE.sub('RETRY: `<outside-workspace>` is outside ', r) for r in expected['results']]
    assert ours[name] == expected


def test_the_scenarios_cover_the_issue(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """The issue's cases, as 0.62.0 answers them: `root_dir='..'` on `LocalWorkspace('./ws')` is the
    parent of `ws` with paths from `ws`; `root_dir='src'` is refused at construction."""
    reference, _ = both
    assert reference['local ..']['results'][0] == '[src/a.txt | 1 lines | hash:926005a85bcf]\n     1\tws/src/a\n'
    assert reference['local ..']['events'][0] == ['FileReadEvent', '<P>', 'ws/src/a.txt']
    assert reference['local src'] == {
        'error': "UserError: root_dir 'src' is below the working directory, but root_dir must contain the working "
        "directory. To scope the tools to a subfolder, attach the workspace there, e.g. `LocalWorkspace('./src')`."
    }
