"""Tool kinds with the real pydantic-ai-harness 0.62.0 beside ours, and without kinds on pydantic-ai-slim 2.57.0.

Runs `fs_tool_kinds_probe.py` with only our package added (`PYTHONPATH`) to two reference venvs:
- `harness-0.62.0` (pydantic-ai-slim 2.62.0): our kind names are 0.62.0's objects, its
  `ToolOutputLimits` hides `read_tool_result` because our `read_file` is there, and the run's
  messages hold its `ReadFileCallPart` with `typed_args`;
- `shell-ref` (pydantic-ai-slim 2.57.0, no `ToolKind`): the package imports and works, the tools
  carry no kind, and only the argument shapes are exported.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pydantic_ai_harness_rs
import pytest
from conftest import HERE

pytestmark = pytest.mark.compat

PROBE = HERE / 'fs_tool_kinds_probe.py'

TYPED_ARGS = [
    {'class': 'pydantic_ai_harness.ReadFileCallPart', 'typed_args': {'path': 'a.txt', 'offset': 1}},
    {'class': 'pydantic_ai_harness.WriteFileCallPart', 'typed_args': {'path': 'b.txt', 'content': 'new\n'}},
    {
        'class': 'pydantic_ai_harness.EditFileCallPart',
        'typed_args': {'path': 'b.txt', 'replacements': [{'old_text': 'new', 'new_text': 'edited'}]},
    },
]
RESULTS = [
    '[a.txt | 2 lines | hash:e49c81e2d2f8]\n     2\tbeta\n',
    'Wrote 4 chars (1 lines) to b.txt. [hash:7aa7a5359173]',
    'Edited b.txt. [hash:68f01b289aed]',
]
DEFAULT_TOOLS = [
    'create_directory', 'edit_file', 'file_info', 'find_files', 'list_directory', 'read_file', 'search_files', 'write_file',
]  # fmt: skip


@pytest.fixture(scope='module')
def ours_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding only our package, for `PYTHONPATH`: the venv supplies everything else."""
    path = tmp_path_factory.mktemp('ours')
    (path / 'pydantic_ai_harness_rs').symlink_to(Path(pydantic_ai_harness_rs.__file__).parent)
    return path


def _probe(python: Path, ours_path: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ('PYTHONPATH', 'VIRTUAL_ENV')}
    env['PYTHONPATH'] = str(ours_path)
    proc = subprocess.run([str(python), str(PROBE)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def test_with_harness_062_kinds_are_its_objects_and_its_capabilities_see_read_file(
    reference062_python: Path, ours_path: Path
) -> None:
    got = _probe(reference062_python, ours_path)
    assert got['kinds_supported'] is True
    assert len(got['exported']) == 32
    assert got['same_objects'] == {name: True for name in got['exported']}
    assert got['tool_kinds'] == {name: f'file_system.{name}' for name in DEFAULT_TOOLS}
    # ToolOutputLimits' reader steps aside for our read_file, and only then.
    assert got['tools_offered'] == DEFAULT_TOOLS
    assert got['tools_offered_without_read_file'] == ['read_tool_result', 'write_file']
    assert got['call_parts'] == TYPED_ARGS
    assert got['return_parts'] == [
        'pydantic_ai_harness.ReadFileReturnPart',
        'pydantic_ai.ToolReturnPart',
        'pydantic_ai.ToolReturnPart',
    ]
    assert got['results'] == RESULTS


def test_on_slim_257_without_tool_kinds_the_tools_still_work(ours_path: Path) -> None:
    from test_shell_compat import _ref_python  # the pydantic-ai-harness 0.57.0 venv, pinned to pydantic-ai-slim 2.57.0

    got = _probe(_ref_python(), ours_path)
    assert got['kinds_supported'] is False
    assert got['exported'] == sorted(
        ['ReadFileArgs', 'WriteFileArgs', 'EditFileArgs', 'ReplacementArgs', 'ListDirectoryArgs', 'SearchFilesArgs',
         'FindFilesArgs', 'CreateDirectoryArgs', 'FileInfoArgs', 'ListFilesArgs', 'GrepArgs']
    )  # fmt: skip
    assert got['tool_kinds'] == {name: None for name in [*DEFAULT_TOOLS, 'read_tool_result']}
    assert [p['class'] for p in got['call_parts']] == ['pydantic_ai.ToolCallPart'] * 3
    assert got['results'] == RESULTS
