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
    assert our_api[key] == _with_062_additions(key, reference_api[key])


ADDED_062_FIELDS = {'max_retries': 'None'}
"""`FileSystem` fields pydantic-ai-harness 0.62.0 added that ours has too (keyword-only there and here)."""

ADDED_062_TOOLSET_PARAMETERS = [['max_retries', 'KEYWORD_ONLY', 'None']]
"""The same, as `FileSystemToolset.__init__` parameters (appended after 0.36.0's)."""


def _with_062_additions(key: str, reference: Any) -> Any:
    """0.36.0's API plus what ours took from 0.62.0; everything else must be 0.36.0's exactly."""
    if key == 'FileSystem_fields':
        return {**reference, **ADDED_062_FIELDS}
    if key == 'toolset_methods':
        return {**reference, '__init__': [*reference['__init__'], *ADDED_062_TOOLSET_PARAMETERS]}
    return reference


def test_exports_everything_the_reference_exports(reference_api: dict[str, Any], our_api: dict[str, Any]) -> None:
    missing = sorted(set(reference_api['filesystem_all']) - set(our_api['filesystem_all']))
    assert not missing, f'pydantic_ai_harness_rs.filesystem lacks {missing}'
