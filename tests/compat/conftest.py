"""Fixtures for the compatibility suite: the reference's interpreter, and the scenario runs.

The reference, `pydantic-ai-harness==0.36.0`, runs in its own venv, created here the first
time under `tests/compat/.venvs/harness-0.36.0` (git-ignored, reused afterwards) with the same
`pydantic-ai-slim` release as the interpreter running the tests, so that the only difference
between the two runs is the FileSystem implementation. Set `HARNESS_036_PYTHON` to an
interpreter that already has the reference installed to skip the venv (e.g.
`HARNESS_036_PYTHON=/work/venvs/ref036/bin/python`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
VENVS = HERE / '.venvs'
REFERENCE_VERSION = '0.36.0'
SCENARIOS_SCRIPT = HERE / 'fs_scenarios.py'


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        'markers', 'compat: compares ours with pydantic-ai-harness 0.36.0 (installs it in a venv on first use)'
    )


def _venv_python(venv: Path) -> Path:
    return venv / ('Scripts/python.exe' if os.name == 'nt' else 'bin/python')


def _pip(python: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), '-m', 'pip', 'install', '--disable-pip-version-check', '-q', *args],
        capture_output=True,
        text=True,
        timeout=900,
    )


def _installed_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _skip_loudly(reason: str) -> None:
    message = f'COMPAT SUITE SKIPPED: {reason}'
    sys.stderr.write(f'\n*** {message} ***\n')
    pytest.skip(message)


def _reference_venv(version: str, override_var: str, requirements: list[str], fallback: list[str] | None) -> Path:
    """An interpreter with `pydantic-ai-harness==version` importable: `$override_var` if set, else
    `tests/compat/.venvs/harness-<version>`, created with `requirements` the first time (then with
    `fallback` if pip cannot install those) and reused once it holds `.ready`. Skips loudly when
    pip cannot install the reference."""
    override = os.environ.get(override_var)
    if override:
        return Path(override)
    venv = VENVS / f'harness-{version}'
    python = _venv_python(venv)
    ready = venv / '.ready'
    if ready.exists() and python.exists():
        return python
    VENVS.mkdir(parents=True, exist_ok=True)
    created = subprocess.run([sys.executable, '-m', 'venv', '--clear', str(venv)], capture_output=True, text=True)
    if created.returncode != 0:
        _skip_loudly(f'could not create the reference venv {venv}: {created.stderr.strip()}')
    installed = _pip(python, *requirements)
    if installed.returncode != 0 and fallback is not None:
        installed = _pip(python, *fallback)
    if installed.returncode != 0:
        _skip_loudly(
            f'pip could not install pydantic-ai-harness=={version} (no network?):\n{installed.stderr.strip()[-2000:]}'
        )
    slim = next((r.split('==')[1] for r in requirements if r.startswith('pydantic-ai-slim==')), None)
    ready.write_text(json.dumps({'pydantic-ai-slim': slim}))
    return python


@pytest.fixture(scope='session')
def reference_python() -> Path:
    """An interpreter with `pydantic-ai-harness==0.36.0` importable."""
    # ripgrep: the reference's list_files/grep run `rg` (its `coder` extra pins this release).
    requirements = [f'pydantic-ai-harness=={REFERENCE_VERSION}', 'anyio', 'trio', 'ripgrep==14.1.0']
    # Same pydantic-ai as ours, so tool schemas and validation messages come from one release.
    slim = _installed_version('pydantic-ai-slim')
    pinned = [*requirements, *([f'pydantic-ai-slim=={slim}'] if slim else [])]
    return _reference_venv(REFERENCE_VERSION, 'HARNESS_036_PYTHON', pinned, requirements)


REFERENCE_062_VERSION = '0.62.0'
REFERENCE_062_SLIM = '2.62.0'
"""0.62.0 pins `pydantic-ai-slim==2.62.0`, so its venv has that release, whatever ours runs on."""


def reference_062_python() -> Path:
    """An interpreter with `pydantic-ai-harness==0.62.0` (and its pinned `pydantic-ai-slim`) importable.

    Created the first time under `tests/compat/.venvs/harness-0.62.0` (git-ignored, reused);
    `HARNESS_062_PYTHON` names one that already has it. Skips loudly when pip cannot install it.
    The same venv serves the FileSystem (workspace contract) and the Shell scenarios.
    """
    requirements = [
        f'pydantic-ai-harness=={REFERENCE_062_VERSION}',
        f'pydantic-ai-slim=={REFERENCE_062_SLIM}',
        'anyio',
        'trio',
        'ripgrep==14.1.0',
    ]
    return _reference_venv(REFERENCE_062_VERSION, 'HARNESS_062_PYTHON', requirements, None)


@pytest.fixture(scope='session')
def reference062_python() -> Path:
    """The 0.62.0 reference interpreter (see `reference_062_python`)."""
    return reference_062_python()


def run_scenarios(
    python: Path | str, module: str, *extra: str, env: dict[str, str] | None = None, contract: str = 'document'
) -> dict[str, Any]:
    """Run every scenario of `fs_scenarios.py` of `contract` under `python` against `module`; returns its JSON."""
    proc = subprocess.run(
        [str(python), str(SCENARIOS_SCRIPT), module, '--contract', contract, *extra],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **(env or {})},
    )
    if proc.returncode != 0:
        raise RuntimeError(f'{module} {contract} scenarios failed under {python}:\n{proc.stderr[-5000:]}')
    return json.loads(proc.stdout)


def ours_available() -> bool:
    try:
        spec = importlib.util.find_spec('pydantic_ai_harness_rs.filesystem')
    except ModuleNotFoundError:
        return False
    return spec is not None


OURS_MODULE = os.environ.get('FS_COMPAT_OURS_MODULE', 'pydantic_ai_harness_rs')
"""What plays 'ours'. Only for checking the suite itself: `FS_COMPAT_OURS_MODULE=pydantic_ai_harness`
with `FS_COMPAT_OURS_PYTHON=$HARNESS_036_PYTHON` runs the reference against itself, where only the
deliberate differences may fail."""


@pytest.fixture(scope='session')
def ours_python() -> str:
    """The test interpreter, which must have our package (with its FileSystem) installed."""
    if os.environ.get('FS_COMPAT_OURS_PYTHON'):
        return os.environ['FS_COMPAT_OURS_PYTHON']
    if not ours_available():
        pytest.skip('pydantic_ai_harness_rs.filesystem is not importable in this interpreter (build it first)')
    return sys.executable


def reference_env(reference_python: Path) -> dict[str, str]:
    """PATH for the reference's runs: with an `rg` for its list_files/grep (ours needs none)."""
    dirs = [str(Path(reference_python).parent)]
    for candidate in (shutil.which('rg'), str(Path(sys.executable).parent / 'rg')):
        if candidate and os.access(candidate, os.X_OK):
            dirs.append(str(Path(candidate).parent))
    return {'PATH': os.pathsep.join([*dirs, os.environ.get('PATH', '')])}


@pytest.fixture(scope='session')
def reference_results(reference_python: Path) -> dict[str, Any]:
    return run_scenarios(reference_python, 'pydantic_ai_harness', env=reference_env(reference_python))


def ours_env(ours_python: str) -> dict[str, str] | None:
    """Ours runs with the caller's PATH: it must not need `rg`. The reference standing in for ours does."""
    return reference_env(Path(ours_python)) if OURS_MODULE == 'pydantic_ai_harness' else None


@pytest.fixture(scope='session')
def our_results(ours_python: str) -> dict[str, Any]:
    return run_scenarios(ours_python, OURS_MODULE, env=ours_env(ours_python))


@pytest.fixture(scope='session')
def reference_results_direct(reference_python: Path) -> dict[str, Any]:
    return run_scenarios(reference_python, 'pydantic_ai_harness', '--direct', env=reference_env(reference_python))


@pytest.fixture(scope='session')
def our_results_direct(ours_python: str) -> dict[str, Any]:
    return run_scenarios(ours_python, OURS_MODULE, '--direct', env=ours_env(ours_python))


@pytest.fixture(scope='session')
def our_results_direct_trio(ours_python: str) -> dict[str, Any]:
    """Direct toolset calls under trio (an Agent run itself is asyncio-only in pydantic-ai)."""
    has_trio = subprocess.run([ours_python, '-c', 'import trio'], capture_output=True).returncode == 0
    if not has_trio:
        pytest.skip('trio is not installed')
    return run_scenarios(ours_python, OURS_MODULE, '--direct', '--backend', 'trio', env=ours_env(ours_python))


@pytest.fixture(scope='session')
def harness_beside_ours(ours_python: str) -> dict[str, str]:
    """Environment variables under which the test interpreter imports both packages.

    The reference goes into `tests/compat/.venvs/both` with `pip install --target --no-deps`
    and is put on `PYTHONPATH`, so it shares the test interpreter's `pydantic_ai` (and ours)
    rather than bringing its own. Any of its few runtime deps the interpreter lacks are
    added beside it, also without their deps.
    """
    target = VENVS / 'both'
    ready = target / '.ready'
    if not ready.exists():
        target.mkdir(parents=True, exist_ok=True)
        missing = [
            dist
            for dist, module in {'genai-prices': 'genai_prices', 'httpx': 'httpx', 'json-repair': 'json_repair'}.items()
            if importlib.util.find_spec(module) is None
        ]
        proc = _pip(
            sys.executable,
            '--no-deps',
            '--upgrade',
            '--target',
            str(target),
            f'pydantic-ai-harness=={REFERENCE_VERSION}',
            *missing,
        )
        if proc.returncode != 0:
            _skip_loudly(f'pip could not install pydantic-ai-harness beside ours (no network?):\n{proc.stderr[-2000:]}')
        ready.write_text('ok')
    pythonpath = os.pathsep.join(filter(None, [str(target), os.environ.get('PYTHONPATH')]))
    return {'PYTHONPATH': pythonpath}
