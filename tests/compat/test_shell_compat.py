"""Shell on pydantic-ai-harness 0.57.0, on 0.62.0, and on ours: the same scripted calls, identical results.

0.57.0 (the document's release) is installed from PyPI into `tests/compat/.venvs/shell-ref` by
this test, 0.62.0 (with its pinned `pydantic-ai-slim` 2.62.0) by the `reference062_python`
fixture (both cached when present). Each side runs `shell_scenarios.py` under the reference
venv's interpreter (same Python, same pydantic-ai), ours through a path entry holding only our
package, so only the Shell implementation differs. Without network the tests skip, saying why.

Documented differences (the document wins over 0.57.0) are asserted in `test_documented_differences`,
deliberate differences from 0.62.0 in `test_differences_from_062`.
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
    check = [
        str(python),
        '-c',
        f"import importlib.metadata as m; assert m.version('pydantic-ai-harness') == '{REF_VERSION}'",
    ]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    VENVS.mkdir(exist_ok=True)
    (VENVS / '.gitignore').write_text('*\n')
    created = subprocess.run([sys.executable, '-m', 'venv', '--clear', str(REF)], capture_output=True, text=True)
    if created.returncode != 0:
        pytest.skip(f'cannot create the reference venv: {created.stderr.strip()[-500:]}')
    installed = subprocess.run(
        [
            str(python),
            '-m',
            'pip',
            'install',
            '-q',
            '--disable-pip-version-check',
            f'pydantic-ai-harness=={REF_VERSION}',
        ],
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


def _both(python: Path, ours_path: Path, tmp: Path, *names: str) -> tuple[dict, dict]:  # type: ignore[type-arg]
    """`names` run by `python` on the reference (`ref`) and on ours (our package on the path)."""
    ref = _run(python, 'ref', tmp / 'ref.json', *names)
    ours = _run(python, 'ours', tmp / 'ours.json', *names, path=ours_path)
    return ref, ours


@pytest.fixture(scope='module')
def both(ref_python: Path, ours_path: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:  # type: ignore[type-arg]
    return _both(ref_python, ours_path, tmp_path_factory.mktemp('compat'), *SCENARIOS)


SCENARIOS = [
    'line_numbers',
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


SCENARIOS_062 = [
    *SCENARIOS,
    'construction_log_limit',
    'max_log_bytes',
    'own_log',
    'e2big',
    'quote_heavy',
]
"""0.62.0 runs every 0.57.0 scenario too, plus what 0.58-0.62 added."""


@pytest.fixture(scope='module')
def both062(reference062_python: Path, ours_path: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:  # type: ignore[type-arg]
    return _both(reference062_python, ours_path, tmp_path_factory.mktemp('compat062'), *SCENARIOS_062)


@pytest.mark.parametrize('scenario', SCENARIOS_062)
def test_identical_to_062(both062: tuple[dict, dict], scenario: str) -> None:  # type: ignore[type-arg]
    ref, ours = both062
    assert ours[scenario] == ref[scenario]


def test_062_scenarios_say_what_they_claim(both062: tuple[dict, dict]) -> None:  # type: ignore[type-arg]
    """The 0.62.0 scenarios are compared above; these are the results both sides must have."""
    _, ours = both062
    too_long = (
        'The command is too long to start; write the script to a file, with a file tool or in several shorter '
        'commands, then run the file.'
    )
    e2big = ours['e2big']
    assert e2big['run']['results'] == [['retry', too_long], ['return', '[stdout]\nafter\n']]
    assert e2big['start']['results'][0] == ['retry', too_long]
    assert e2big['shell']['results'] == [['retry', too_long]]
    assert e2big['left'] == []
    assert e2big['env_too_big'] == ['OSError', True]
    logs = ours['max_log_bytes']
    notice = '[Log exceeded max_log_bytes=100; earlier output was cleared.]'
    assert logs['check']['results'][0][1].startswith(f'[stdout]\n{notice}\nafter\n\n[stderr]\neeeeeeeeeeeelate\n')
    assert logs['clears'] == 'xx'
    finished = [e[1] for e in logs['shell']['events'] if e[0] == 'CommandFinishedEvent']
    assert [(f['truncated'], f['total_lines']) for f in finished] == [(True, None), (False, 1)]
    assert ours['own_log'] == {'alive': True, 'bounded': True, 'notice': True}
    assert ours['quote_heavy']['check']['results'][0][1].startswith('[stdout]\n30001\n')
    assert ours['line_numbers']['persist_cwd']['results'][1] == [
        'return',
        "[stderr]\n/bin/sh: 2: cd: can't cd to nonexistent_dir\n\n[exit code: 2]",
    ]


DOCUMENTED = ['difference_timeout_zero', 'difference_exit_zero_after_cd', 'difference_fifty_mib']
"""Where the document wins over the reference's release (0.57.0, still so in 0.62.0)."""


def _assert_documented_differences(ref: dict, ours: dict) -> None:  # type: ignore[type-arg]
    # timeout_seconds <= 0: the document says retry; the reference aborts the run with a ValueError.
    assert ref['difference_timeout_zero']['error'][0] == 'ValueError'
    assert ours['difference_timeout_zero'] == {
        'results': [['retry', 'timeout_seconds must be a positive number of seconds.']]
    }

    # persist_cwd and `cd sub; exit 0`: the document says exit 0 records the directory; the reference never does.
    assert ref['difference_exit_zero_after_cd']['results'][1] == ['return', '[stdout]\n<ws>\n']
    assert ours['difference_exit_zero_after_cd']['results'][1] == ['return', '[stdout]\n<ws>/sub\n']

    # 50 MiB of output: the reference fails the call (the local workspace's 10 MiB capture limit); we keep the tail.
    assert ref['difference_fifty_mib']['results'][0][0] == 'failed'
    assert ours['difference_fifty_mib']['results'][0][0] == 'return'


def test_documented_differences(ref_python: Path, ours_path: Path, tmp_path: Path) -> None:
    ref, ours = _both(ref_python, ours_path, tmp_path, *DOCUMENTED)
    _assert_documented_differences(ref, ours)
    text = ours['difference_fifty_mib']['results'][0][1]
    assert text.startswith('[... output truncated, showing last ') and text.endswith('xxx\nLAST\n')


def test_differences_from_062(reference062_python: Path, ours_path: Path, tmp_path: Path) -> None:
    """What 0.62.0 still does differently, each on purpose (README, "Shell")."""
    ref, ours = _both(reference062_python, ours_path, tmp_path, *DOCUMENTED, 'difference_nothing_on_path')

    # The document's three, unchanged in 0.62.0.
    _assert_documented_differences(ref, ours)

    # A local workspace whose PATH lacks `mv`: 0.62.0 (and the document) fail the call; our supervisor
    # needs nothing from that PATH, so the job runs and records its exit.
    assert ref['difference_nothing_on_path'] == {
        'results': [['failed', 'Shell needs `mv` and `base64` on PATH in the workspace; this image lacks `mv`.']]
    }
    started = ours['difference_nothing_on_path']
    assert started['results'][0][0] == 'return'
    assert (started['status'], started['stdout']) == (4, 'ran\n')


@pytest.mark.parametrize('impl', ['ref', 'ours'])
def test_scenarios_leave_no_temporary_directories(ref_python: Path, ours_path: Path, tmp_path: Path, impl: str) -> None:
    """Each run of the scenario script removes the directories it made (and ends what still runs there)."""
    tmp = tmp_path / 'tmp'
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
    env['TMPDIR'] = str(tmp)
    if impl == 'ours':
        env['PYTHONPATH'] = str(ours_path)
    # `background` leaves a job behind in its workspace; `formats` makes several workspaces.
    result = subprocess.run(
        [str(ref_python), str(SCRIPT), impl, str(tmp_path / 'out.json'), 'formats', 'background'],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.name for p in tmp.iterdir()) == []
