"""Shell on pydantic-ai-harness 0.57.0 and on ours: the same scripted calls, identical results.

The reference is installed from PyPI into `tests/compat/.venvs/shell-ref` by this test (cached
when present). Both sides run `shell_scenarios.py` under that venv's interpreter (same Python,
same pydantic-ai), ours through a path entry holding only our package, so only the Shell
implementation differs. Without network the tests skip, saying why.

Documented differences (the document wins over 0.57.0) are asserted in `test_documented_differences`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pydantic_ai_harness_rs
import pytest

HERE = Path(__file__).resolve().parent
VENVS = HERE / '.venvs'
REF = VENVS / 'shell-ref'
REF_VERSION = '0.57.0'
SCRIPT = HERE / 'shell_scenarios.py'


def _ref_python() -> Path:
    python = REF / 'bin' / 'python'
    check = [str(python), '-c', f"import importlib.metadata as m; assert m.version('pydantic-ai-harness') == '{REF_VERSION}'"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    VENVS.mkdir(exist_ok=True)
    (VENVS / '.gitignore').write_text('*\n')
    created = subprocess.run([sys.executable, '-m', 'venv', '--clear', str(REF)], capture_output=True, text=True)
    if created.returncode != 0:
        pytest.skip(f'cannot create the reference venv: {created.stderr.strip()[-500:]}')
    installed = subprocess.run(
        [str(python), '-m', 'pip', 'install', '-q', '--disable-pip-version-check', f'pydantic-ai-harness=={REF_VERSION}'],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if installed.returncode != 0:
        pytest.skip(
            f'COMPAT TESTS SKIPPED: cannot install pydantic-ai-harness=={REF_VERSION} from PyPI '
            f'(no network?): {installed.stderr.strip()[-500:]}'
        )
    return python


@pytest.fixture(scope='module')
def ref_python() -> Path:
    return _ref_python()


@pytest.fixture(scope='module')
def ours_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Only our package on the path: the reference venv supplies pydantic-ai and everything else.
    path = tmp_path_factory.mktemp('ours')
    (path / 'pydantic_ai_harness_rs').symlink_to(Path(pydantic_ai_harness_rs.__file__).parent)
    return path


def _run(python: Path, impl: str, out: Path, *scenarios: str, path: Path | None = None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
    if path is not None:
        env['PYTHONPATH'] = str(path)
    result = subprocess.run(
        [str(python), str(SCRIPT), impl, str(out), *scenarios], capture_output=True, text=True, env=env, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.fixture(scope='module')
def both(ref_python: Path, ours_path: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:  # type: ignore[type-arg]
    tmp = tmp_path_factory.mktemp('compat')
    ref = _run(ref_python, 'ref', tmp / 'ref.json')
    ours = _run(ref_python, 'ours', tmp / 'ours.json', path=ours_path)
    return ref, ours


SCENARIOS = [
    'formats',
    'policy',
    'truncation',
    'timeout',
    'env',
    'persist_cwd',
    'file_limit',
    'background',
    'shell_tool',
    'construction',
    'workspace',
]


@pytest.mark.parametrize('scenario', SCENARIOS)
def test_identical(both: tuple[dict, dict], scenario: str) -> None:  # type: ignore[type-arg]
    ref, ours = both
    assert ours[scenario] == ref[scenario]


def test_every_scenario_compared(both: tuple[dict, dict]) -> None:  # type: ignore[type-arg]
    assert sorted(both[0]) == sorted(SCENARIOS)


def test_documented_differences(ref_python: Path, ours_path: Path, tmp_path: Path) -> None:
    names = ['difference_timeout_zero', 'difference_exit_zero_after_cd', 'difference_fifty_mib']
    ref = _run(ref_python, 'ref', tmp_path / 'ref.json', *names)
    ours = _run(ref_python, 'ours', tmp_path / 'ours.json', *names, path=ours_path)

    # timeout_seconds <= 0: the document says retry; 0.57.0 aborts the run with a ValueError.
    assert ref['difference_timeout_zero']['error'][0] == 'ValueError'
    assert ours['difference_timeout_zero'] == {
        'results': [['retry', 'timeout_seconds must be a positive number of seconds.']]
    }

    # persist_cwd and `cd sub; exit 0`: the document says exit 0 records the directory; 0.57.0 never does.
    assert ref['difference_exit_zero_after_cd']['results'][1] == ['return', '[stdout]\n<ws>\n']
    assert ours['difference_exit_zero_after_cd']['results'][1] == ['return', '[stdout]\n<ws>/sub\n']

    # 50 MiB of output: 0.57.0 fails the call (the local workspace's 10 MiB capture limit); we keep the tail.
    assert ref['difference_fifty_mib']['results'][0][0] == 'failed'
    kind, text = ours['difference_fifty_mib']['results'][0]
    assert kind == 'return'
    assert text.startswith('[... output truncated, showing last ') and text.endswith('xxx\nLAST\n')
