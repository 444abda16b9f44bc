"""FileSystem's public API, without an Agent: the same names, constants, fields and signatures as 0.36.0."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import HERE, OURS_MODULE

pytestmark = pytest.mark.compat


def _describe(python: Path | str, module: str) -> dict[str, Any]:
    proc = subprocess.run(
        [str(python), str(HERE / 'fs_api_probe.py'), module], capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope='session')
def reference_api(reference_python: Path) -> dict[str, Any]:
    return _describe(reference_python, 'pydantic_ai_harness')


@pytest.fixture(scope='session')
def our_api(ours_python: str) -> dict[str, Any]:
    return _describe(ours_python, OURS_MODULE)


@pytest.mark.parametrize(
    'key',
    [
        'top_level_FileSystem_is_filesystem_FileSystem',
        'constants',
        'FileSystem_fields',
        'FileSystem_is_dataclass',
        'Replacement_fields',
        'toolset_methods',
        'direct_methods_are_coroutines',
    ],
)
def test_same_api(key: str, reference_api: dict[str, Any], our_api: dict[str, Any]) -> None:
    assert our_api[key] == reference_api[key]


def test_exports_everything_the_reference_exports(reference_api: dict[str, Any], our_api: dict[str, Any]) -> None:
    missing = sorted(set(reference_api['filesystem_all']) - set(our_api['filesystem_all']))
    assert not missing, f'pydantic_ai_harness_rs.filesystem lacks {missing}'
