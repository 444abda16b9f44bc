"""FileSystem on a `LocalWorkspace`: ours against `pydantic-ai-harness==0.62.0`, scenario by scenario.

Each workspace-contract scenario of `fs_scenarios.py` runs once under the 0.62.0 reference (its own venv, with
its pinned `pydantic-ai-slim`) and once under ours, through an Agent run and through direct
calls with `workspace=`. The model-visible results, events, deprecation warnings and the tree
left on disk must be equal. A difference we keep on purpose is in `DELIBERATE`: the expected
outcome is the reference's with exactly that changed (and the change must show on the
reference). A difference another branch of issue 7 removes is in `PENDING`, marked xfail.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import OURS_MODULE, ours_env, reference_env, run_scenarios
from fs_scenarios import SCENARIOS, WORKSPACE
from test_fs_compat import assert_same_outcome

pytestmark = pytest.mark.compat

Outcome = dict[str, Any]


@pytest.fixture(scope='session')
def reference062_results(reference062_python: Path) -> dict[str, Any]:
    return run_scenarios(
        reference062_python, 'pydantic_ai_harness', env=reference_env(reference062_python), contract=WORKSPACE
    )


@pytest.fixture(scope='session')
def reference062_results_direct(reference062_python: Path) -> dict[str, Any]:
    env = reference_env(reference062_python)
    return run_scenarios(reference062_python, 'pydantic_ai_harness', '--direct', env=env, contract=WORKSPACE)


@pytest.fixture(scope='session')
def our062_results(ours_python: str) -> dict[str, Any]:
    return run_scenarios(ours_python, OURS_MODULE, env=ours_env(ours_python), contract=WORKSPACE)


@pytest.fixture(scope='session')
def our062_results_direct(ours_python: str) -> dict[str, Any]:
    return run_scenarios(ours_python, OURS_MODULE, '--direct', env=ours_env(ours_python), contract=WORKSPACE)


# ---- deliberate differences ----------------------------------------------------------

_OUTSIDE_NAMED = re.compile(r'^`([^`]*)` is outside the project root `<ROOT>`')


def _outside_paths_not_shown(ref: Outcome, ours: Outcome) -> Outcome:
    """A path outside the root never reaches the model: `<outside-workspace>` stands in for it.

    0.62.0 names the absolute path a refused `../x` or `/x` leads to (a host path on a
    LocalWorkspace: `<TMP>/outside/secret.txt`); ours keeps the rest of its message, root included.
    """
    expected = copy.deepcopy(ref)
    for call in expected['calls']:
        content = call.get('content')
        if isinstance(content, str) and (m := _OUTSIDE_NAMED.match(content)) and m.group(1) != '<outside-workspace>':
            call['content'] = '`<outside-workspace>`' + content[m.end(1) + 1 :]
    return expected


def _search_missing_path_retries(ref: Outcome, ours: Outcome) -> Outcome:
    """Searching under a path that does not exist is a retry naming it, with no event, as under the document;
    edit_file given a directory names it one.

    0.62.0 answers `No matches found.` (and emits a FilesSearchedEvent), which reads as "the
    text is not there" when the path was mistyped.
    """
    expected = copy.deepcopy(ref)
    for call in expected['calls']:
        if call['tool'] == 'search_files' and call['args'].get('path') == 'nope':
            call.update(outcome='retry', cause='model_retry', content="Path 'nope' is not a file or directory.")
            expected['events'] = [e for e in expected['events'] if e.get('tool_call_id') != call['id']]
        # Issue 19: edit_file given a directory names it one (0.62.0: `File not found: src`).
        if call['tool'] == 'edit_file' and call['args'].get('path') == 'src':
            call.update(content="'src' is a directory, not a file.")
    return expected


DELIBERATE: dict[str, Callable[[Outcome, Outcome], Outcome]] = {
    'containment': _outside_paths_not_shown,
    'missing_paths': _search_missing_path_retries,
}

PENDING: dict[str, str] = {}
"""Differences from 0.62.0 that another branch of issue 7 removes; xfail (not strict) until merged."""


def _params() -> list[Any]:
    return [
        pytest.param(name, marks=pytest.mark.xfail(reason=PENDING[name], strict=False)) if name in PENDING else name
        for name in SCENARIOS[WORKSPACE]
    ]


def _compare(name: str, references: dict[str, Outcome], ours_by_name: dict[str, Outcome], how: str = '') -> None:
    """Scenario `name` of two runs (`how` says which, in messages): ours is the reference's, but for DELIBERATE."""
    ref, ours, label = references[name], ours_by_name[name], name + how
    assert 'runner_error' not in ref, f'the scenario itself is broken on the reference: {ref["runner_error"]}'
    expected = DELIBERATE[name](ref, ours) if name in DELIBERATE else ref
    assert_same_outcome(expected, ours, name=label, reference='0.62.0')
    assert ours.get('warnings') == expected.get('warnings'), f'{label}: deprecation warnings differ'


@pytest.mark.parametrize('name', _params())
def test_scenario(name: str, reference062_results: dict[str, Any], our062_results: dict[str, Any]) -> None:
    _compare(name, reference062_results, our062_results)


@pytest.mark.parametrize('name', _params())
def test_direct_calls(
    name: str, reference062_results_direct: dict[str, Any], our062_results_direct: dict[str, Any]
) -> None:
    """The same calls on the toolset's methods with `workspace=LocalWorkspaceBackend(root)`, outside a run."""
    _compare(name, reference062_results_direct, our062_results_direct, ' (direct)')


def test_deliberate_differences_are_real(reference062_results: dict[str, Any]) -> None:
    """Each listed difference does show on the reference, so the list cannot go stale silently."""
    for name, expect in DELIBERATE.items():
        ref = reference062_results[name]
        assert expect(ref, ref) != ref, f'{name}: 0.62.0 already behaves this way; drop it from DELIBERATE'
