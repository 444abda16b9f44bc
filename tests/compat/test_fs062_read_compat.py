"""Reads, hashes and walks under the workspace contract against pydantic-ai-harness 0.62.0.

`fs062_read_scenarios.py` builds one tree (images, a PDF, binaries, a CR-only file, invalid
UTF-8, hidden files and directories, symlinks in and out) and records every call's exact result,
once under the 0.62.0 reference (its toolset called directly on a `LocalWorkspaceBackend`, with
`rg` on the PATH as its `ripgrep` dependency installs it) and once under ours (the core with
`contract='workspace'` and the `_content` wrapper). Every result must be equal, except the
differences listed in `DIFFERENCES`, each one stated exactly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.compat

SCRIPT = Path(__file__).with_name('fs062_read_scenarios.py')

NOT_OURS = {'read out.txt'}
"""Containment messages belong to the path work, tested there (0.62.0 names the root's absolute path)."""


NOTES = {
    'read bad.txt': '[Not valid UTF-8: 2 byte sequences shown as \ufffd, the first (0xff) on line 1; '
    'edit_file keeps such bytes as they are.]\n',
}
"""Issue 9: ours is 0.62.0's result and this note saying the file is not UTF-8 (listed in the README)."""


def _run(python: str | Path, which: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = subprocess.run(
        [str(python), str(SCRIPT), which],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope='module')
def results(reference062_python: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    bin_dir = Path(reference062_python).parent
    if not (bin_dir / 'rg').exists():
        pytest.skip(f'the 0.62.0 reference venv has no rg in {bin_dir}')
    env = {'PATH': f'{bin_dir}{os.pathsep}{os.environ.get("PATH", "")}'}
    return _run(reference062_python, 'ref', env), _run(sys.executable, 'ours')


def test_same_calls(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ref, ours = results
    assert sorted(ours) == sorted(ref)


@pytest.mark.parametrize(
    'prefix',
    ['read ', 'info ', 'list ', 'find ', 'search ', 'list_files ', 'grep ', 'capped '],
)
def test_results_match_062(results: tuple[dict[str, Any], dict[str, Any]], prefix: str) -> None:
    ref, ours = results
    keys = [key for key in ref if key.startswith(prefix) and key not in NOT_OURS]
    assert keys
    expected = {key: ref[key] for key in keys}
    for key, note in NOTES.items():
        if key in expected:
            status, text = expected[key]
            expected[key] = [status, text + note]
    mismatched = {key: (ours[key], expected[key]) for key in keys if ours[key] != expected[key]}
    assert mismatched == {}


def test_reference_shapes_we_rely_on(results: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """A few of the reference's results spelled out, so a change in the scenario cannot hide them."""
    ref, _ = results
    assert ref['read pic.png'][1][0] == '[pic.png | image/png | 69 bytes | hash:909babfeef10]\n'
    assert ref['read misnamed.txt'][1][1] == 'image/png'
    assert ref['read big.png'][1].endswith('Too large to view: the limit is 5000000 bytes.\n')
    assert ref['read cr.txt'][1] == '[cr.txt | 1 lines | hash:d6979e20541e]\n     1\ta\rb\rc\n'
    assert ref['list src'][1].endswith('[1 hidden entries omitted; name a hidden path explicitly to include it]')
    assert ref['search TODO in . glob None'][1].endswith('src/main.py:1:TODO main')
