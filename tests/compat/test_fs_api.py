"""FileSystem's public API, without an Agent: the same names, constants, fields and signatures as 0.36.0."""

from __future__ import annotations

import copy
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
    expected = _with_062_surface(key, reference_api[key]) if OURS_MODULE == 'pydantic_ai_harness_rs' else reference_api[key]
    assert our_api[key] == expected


UNSET_MAX_READ_CHARS_REPR = '<contract default: None with root_dir or no workspace, 50000 on a workspace>'
_WORKSPACE_READ_ONLY = ['**/.git', '**/.env', '**/.env.*', '*.pem', '*.key', '**/secrets*', '**/.pydantic-ai-harness/**']


def _with_062_surface(key: str, reference: Any) -> Any:
    """0.36.0's API plus what 0.62.0's surface adds (issue 7), deliberately.

    `FileSystem`: `root_dir=None` (the run's workspace when one is attached, else `.`),
    `read_only_patterns` (0.62.0's name; `protected_patterns` its alias, `None` unless given) and
    `max_read_chars` left unset show that their default depends on the contract (issue 19: equal
    to 0.62.0's values, a repr naming both). `FileSystemToolset`: every direct method takes
    `workspace=` (optional: without it, the document's tree), the constructor takes either pattern
    name, `owner` and `read_only` (issue 19: the toolset inside `read_only=True`'s filter refuses
    changes itself). Both take `contract` (issue 20: which reading of `root_dir`, `None` unless given)
    and `require_approval` (issue 21: `False` unless given). `FILE_SYSTEM_TOOL_NAMES` ends with the
    opt-in `apply_patch` (issue 22).
    """
    expected = copy.deepcopy(reference)
    if key == 'constants':  # issue 22: the opt-in `apply_patch`, in neither reference (not a default tool)
        expected['FILE_SYSTEM_TOOL_NAMES'].append('apply_patch')
    elif key == 'FileSystem_fields':
        expected.update(ADDED_062_FIELDS)
        expected.update(OPT_IN_FIELDS)
        expected.update(
            contract='None',
            require_approval='False',  # issue 21: Pydantic AI's deferred-tool approval, off by default
            root_dir='None',
            protected_patterns='None',
            max_read_chars=UNSET_MAX_READ_CHARS_REPR,
            # The probe lists a tuple default: the marker's items, 0.62.0's list.
            read_only_patterns=repr(_WORKSPACE_READ_ONLY),
        )
    elif key == 'toolset_methods':
        for name, params in expected.items():
            if name == 'read_file':  # `column`: the rest of a line clipped by `max_line_chars` (issue 9)
                params.append(['column', 'KEYWORD_ONLY', '0'])
            if params is not None and name not in ('__init__', 'open_read', 'open_write'):
                params.append(['workspace', 'KEYWORD_ONLY', 'None'])
        init = expected['__init__']
        for index, (name, _, _) in enumerate(init):
            if name == 'root_dir':
                init[index] = ['root_dir', 'KEYWORD_ONLY', 'None']
        at = [p[0] for p in init].index('protected_patterns')
        init[at : at + 1] = [['read_only_patterns', 'KEYWORD_ONLY', 'None'], ['protected_patterns', 'KEYWORD_ONLY', 'None']]
        init.extend(ADDED_062_TOOLSET_PARAMETERS)
        init.append(['owner', 'KEYWORD_ONLY', "'FileSystemToolset'"])
        init.extend([name, 'KEYWORD_ONLY', default] for name, default in OPT_IN_FIELDS.items())
        init.append(['read_only', 'KEYWORD_ONLY', 'False'])
        init.append(['contract', 'KEYWORD_ONLY', 'None'])
        init.append(['require_approval', 'KEYWORD_ONLY', 'False'])
    return expected


ADDED_062_FIELDS = {'max_retries': 'None', '_toolset': 'None'}
"""`FileSystem` fields pydantic-ai-harness 0.62.0 added that ours has too (keyword-only there and here;
`_toolset`, private and not in `__init__`, holds the toolset `get_toolset` returns each time: issue 20)."""

ADDED_062_TOOLSET_PARAMETERS = [['max_retries', 'KEYWORD_ONLY', 'None']]
"""The same, as `FileSystemToolset.__init__` parameters."""

OPT_IN_FIELDS = {
    'replace_all': 'False',
    'max_line_chars': 'None',
    'report_skipped': 'False',
    'match': "'exact'",
    'show_changes': 'None',
}
"""Fields beyond both references (issues 9 and 22), off by default; keyword-only `FileSystemToolset.__init__`
parameters too."""


def test_exports_everything_the_reference_exports(reference_api: dict[str, Any], our_api: dict[str, Any]) -> None:
    missing = sorted(set(reference_api['filesystem_all']) - set(our_api['filesystem_all']))
    assert not missing, f'pydantic_ai_harness_rs.filesystem lacks {missing}'
