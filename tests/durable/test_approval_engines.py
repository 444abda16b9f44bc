"""`require_approval` under Temporal, DBOS and Prefect (issue 21): a run stops with the planned
change and the command in `DeferredToolRequests`, the process exits, a new process resumes it with
the person's answers, and the disk shows exactly what was approved.

Each phase runs in its own process (`approval_worker.py`). Engine tests: run with `DURABLE_TESTS=1`
(`.ci/durable`); skipped otherwise, and per engine when it is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic_ai_harness_rs
import pytest

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        os.environ.get('DURABLE_TESTS') != '1', reason='engine tests: run `.ci/durable` (or set DURABLE_TESTS=1)'
    ),
]

WORKER = Path(__file__).with_name('approval_worker.py')
REPO = Path(__file__).resolve().parents[2]
OLD = 'one\ntwo\n'
STALE = (
    "'notes.txt' changed after this change was planned and approved, so it was not written. "
    'Read it again (read_file) and call the tool again to plan the change anew.'
)
NOTE = '[A person changed the arguments of this call before approving it; it ran with: '


def phase(
    engine: str,
    contract: str,
    ws: Path,
    state: Path,
    request: dict[str, Any],
    address: str = '',
    scenario: str = 'change',
) -> dict[str, Any]:
    env = {
        **os.environ,
        'DURABLE_APPROVAL_SCENARIO': scenario,
        'PYTHONPATH': os.pathsep.join([str(Path(pydantic_ai_harness_rs.__file__).resolve().parent.parent), str(REPO)]),
        'PREFECT_HOME': str(state / 'prefect'),
    }
    done = subprocess.run(
        [sys.executable, str(WORKER), engine, contract, str(ws), str(state), json.dumps(request), address],
        cwd=state,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith('RESULT ')), None)
    assert line is not None, (done.stdout + done.stderr)[-4000:]
    return json.loads(line.removeprefix('RESULT '))


def engines() -> list[Any]:
    out = []
    for engine, module in (('temporal', 'temporalio'), ('dbos', 'dbos'), ('prefect', 'prefect')):
        missing = importlib.util.find_spec(module) is None
        out.append(pytest.param(engine, marks=pytest.mark.skipif(missing, reason=f'needs {module}'), id=engine))
    return out


@pytest.fixture
def address(request: pytest.FixtureRequest) -> str:
    if request.node.callspec.params['engine'] != 'temporal':
        return ''
    return request.getfixturevalue('temporal_address')


@pytest.mark.parametrize('contract', ['root_dir', 'workspace'])
@pytest.mark.parametrize('engine', engines())
async def test_approve_override_and_replan_in_new_processes(
    tmp_path: Path, engine: str, contract: str, address: str
) -> None:
    ws, state = tmp_path / 'ws', tmp_path / 'state'
    ws.mkdir()
    state.mkdir()
    (ws / 'notes.txt').write_text(OLD)
    first = phase(engine, contract, ws, state, {}, address)
    metadata = first['deferred']
    assert metadata is not None, first
    assert metadata['call-0']['diff'] == '--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1 @@\n-one\n-two\n+approved'
    assert metadata['call-1']['command'] == 'touch ran'
    assert (ws / 'notes.txt').read_text() == OLD and not (ws / 'ran').exists()  # nothing before approval
    decisions = {'call-0': {'approve': True}, 'call-1': {'approve': True, 'override_args': {'command': 'touch edited'}}}
    second = phase(engine, contract, ws, state, {'history': first['history'], 'decisions': decisions}, address)
    assert [text for _, text in second['results']] == [
        'Wrote 9 chars (1 lines) to notes.txt. [hash:7f8518f7db5e]',
        f'(no output)\n{NOTE}{{"command": "touch edited"}}]',
    ]
    assert (ws / 'notes.txt').read_text() == 'approved\n'
    assert (ws / 'edited').exists() and not (ws / 'ran').exists()

    # A file changed between request and approval: a re-plan, not a write; a denial runs nothing.
    (ws / 'notes.txt').write_text(OLD)
    third = phase(engine, contract, ws, state, {}, address)
    (ws / 'notes.txt').write_text('theirs\n')
    decisions = {'call-0': {'approve': True}, 'call-1': {'deny': 'No.'}}
    fourth = phase(engine, contract, ws, state, {'history': third['history'], 'decisions': decisions}, address)
    assert [text for _, text in fourth['results']] == [STALE, 'No.']
    assert (ws / 'notes.txt').read_text() == 'theirs\n' and not (ws / 'ran').exists()


PATCH_STALE = (
    'A file of this patch changed after the patch was planned and approved, so nothing was written. '
    'Read the files again (read_file) and call apply_patch again to plan the patch anew.'
)


@pytest.mark.parametrize('contract', ['root_dir', 'workspace'])
@pytest.mark.parametrize('engine', [p for p in engines() if p.id != 'prefect'])
async def test_a_patch_approved_denied_or_changed_in_new_processes(
    tmp_path: Path, engine: str, contract: str, address: str
) -> None:
    """`apply_patch` (issue 22) under Temporal and DBOS: the gate runs in the plan operation, one
    request for the whole patch raised in workflow code; a new process approves (the patch is
    committed), denies (nothing), or finds a file changed in between (the stale retry, nothing)."""
    ws, state = tmp_path / 'ws', tmp_path / 'state'
    ws.mkdir()
    state.mkdir()

    def ask() -> dict[str, Any]:
        (ws / 'a.txt').write_text('a\n')
        first = phase(engine, contract, ws, state, {}, address, 'patch')
        assert first['deferred'] is not None, first
        return first

    def resume(first: dict[str, Any], decision: dict[str, Any]) -> list[str]:
        request = {'history': first['history'], 'decisions': {'call-0': decision}}
        return [text for _, text in phase(engine, contract, ws, state, request, address, 'patch')['results']]

    first = ask()
    metadata = first['deferred']['call-0']
    assert (metadata['tool_name'], metadata['operation']) == ('apply_patch', 'apply_patch')
    assert [(f['path'], f['operation'], f['diff']) for f in metadata['files']] == [
        ('a.txt', 'edit', '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A'),
        ('new.txt', 'write', '--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+n'),
    ]
    assert (ws / 'a.txt').read_text() == 'a\n' and not (ws / 'new.txt').exists()  # nothing before approval
    [applied] = resume(first, {'approve': True})
    assert applied.startswith('Applied patch to 2 files:\nM a.txt [hash:')
    assert ((ws / 'a.txt').read_text(), (ws / 'new.txt').read_text()) == ('A\n', 'n\n')

    (ws / 'new.txt').unlink()
    assert resume(ask(), {'deny': 'No.'}) == ['No.']
    assert (ws / 'a.txt').read_text() == 'a\n' and not (ws / 'new.txt').exists()

    first = ask()
    (ws / 'a.txt').write_text('a\ntheirs\n')  # the patch still applies, onto a version nobody approved
    assert resume(first, {'approve': True}) == [PATCH_STALE]
    assert (ws / 'a.txt').read_text() == 'a\ntheirs\n' and not (ws / 'new.txt').exists()
