"""Temporal as a drop-in (issue 21): a worker configured as for `pydantic-ai-harness` runs our tools.

That configuration is `Client.connect(..., plugins=[PydanticAIPlugin()])` and a `Worker` with
Temporal's default `SandboxedWorkflowRunner`, no pass-through line for this package
(`_temporal_app.worker()`; `test_temporal.py` runs every tool in both contracts with it). Here:
each way a workflow module may import the package (`_form_*.py`) runs every tool with results
equal to a plain run, and the sandbox holds the host's classes and modules (one native core); the
pass-through line the README asked for before still works.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('temporalio', reason="the Temporal tests need `temporalio` (pip install '.[durable]')")

from temporalio import workflow as temporal_workflow  # noqa: E402
from temporalio.worker import Worker, WorkflowRunner  # noqa: E402
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions  # noqa: E402

from tests.durable import _form_passed_submodules, _form_plain, _form_submodules  # noqa: E402
from tests.durable import _temporal_app as app  # noqa: E402
from tests.durable import _temporal_forms as forms  # noqa: E402
from tests.durable.test_temporal import EVERY_TOOL, normalized, run_plain  # noqa: E402

pytestmark = pytest.mark.anyio

FORMS = [_form_plain.PlainImportWorkflow, _form_submodules.SubmoduleImportWorkflow]
FORMS += [_form_passed_submodules.PassedSubmoduleImportWorkflow]


def _empty(ws: Path) -> None:
    for child in list(ws.iterdir()):
        shutil.rmtree(child) if child.is_dir() else child.unlink()


@pytest.mark.parametrize('workflow', FORMS, ids=['plain_import', 'submodule_import', 'passed_submodule_import'])
async def test_every_tool_whatever_the_import_form(temporal_address: str, ws: Path, workflow: Any) -> None:
    module = sys.modules[workflow.__module__]
    client = await app.connect(temporal_address)
    async with app.worker(client, workflows=[workflow]):
        output = await client.execute_workflow(
            workflow.run, json.dumps(EVERY_TOOL), id=f'wf-{uuid.uuid4().hex}', task_queue=app.TASK_QUEUE
        )
    durable = json.loads(output)
    # The sandbox's classes and modules are the host's: one native core, one set of classes.
    assert durable['identities'] == forms.identities(module.FileSystem, module.Shell)
    assert (ws / 'src' / 'a.txt').read_text() == 'one\nthree\n'
    _empty(ws)
    plain = await run_plain(module.agent, EVERY_TOOL)
    assert durable['tools'] == plain['tools']
    assert normalized(durable['results']) == normalized(plain['results'])


async def test_the_old_pass_through_line_still_works(temporal_address: str, ws: Path) -> None:
    client = await app.connect(temporal_address)
    async with app.worker(client, passthrough=True):
        output = await client.execute_workflow(
            app.RootWorkflow.run, json.dumps(EVERY_TOOL), id=f'wf-{uuid.uuid4().hex}', task_queue=app.TASK_QUEUE
        )
    durable = json.loads(output)
    _empty(ws)
    plain = await run_plain(app.root_agent, EVERY_TOOL)
    assert normalized(durable['results']) == normalized(plain['results'])


SHORT: list[Any] = [
    ['write_file', {'path': 'a.txt', 'content': 'one\n'}],
    ['edit_file', {'path': 'a.txt', 'old_text': 'one', 'new_text': 'two'}],
    ['run_command', {'command': 'cat a.txt'}],
]
SHORT_RESULTS = [
    'Wrote 4 chars (1 lines) to a.txt. [hash:2c8b08da5ce6]',
    'Edited a.txt. [hash:27dd8ed44a83]',
    '[stdout]\ntwo\n',
]

_DEFAULT = SandboxRestrictions.default
RUNNERS: dict[str, WorkflowRunner] = {
    # Our package finds Temporal's `workflow` module without the sandbox's lazy `sys.modules` look-up.
    'no_lazy_sys_modules': SandboxedWorkflowRunner(
        restrictions=dataclasses.replace(_DEFAULT, disable_lazy_sys_module_passthrough=True)
    ),
}
"""Runners a worker may be given instead of the default, where the plain import still runs the tools.

Checked by hand (README): `UnsandboxedWorkflowRunner` and `with_passthrough_all_modules()`, which
make no sandbox copy, and Temporal's minimum pass-through set, which works on Pydantic AI 2.68 and
fails on 2.62 whatever the tools."""


def _worker(client: Any, runner: WorkflowRunner, workflows: list[Any]) -> Worker:
    return Worker(client, task_queue=app.TASK_QUEUE, workflows=workflows, workflow_runner=runner)


@pytest.mark.parametrize('runner', list(RUNNERS.values()), ids=list(RUNNERS))
async def test_other_runner_configurations(temporal_address: str, ws: Path, runner: WorkflowRunner) -> None:
    """The plain top-level import (the form that makes a sandbox copy) on other runners."""
    client = await app.connect(temporal_address)
    async with _worker(client, runner, [_form_plain.PlainImportWorkflow]):
        output = await client.execute_workflow(
            _form_plain.PlainImportWorkflow.run,
            json.dumps(SHORT),
            id=f'wf-{uuid.uuid4().hex}',
            task_queue=app.TASK_QUEUE,
        )
    answer = json.loads(output)
    assert answer['results'] == SHORT_RESULTS
    assert answer['identities'] == forms.identities(_form_plain.FileSystem, _form_plain.Shell)


async def test_a_sandbox_refusing_unlisted_modules_fails_at_worker_start(temporal_address: str, ws: Path) -> None:
    """`RAISE_ON_UNINTENTIONAL_PASSTHROUGH` refuses a plain import of any unlisted module, ours too:
    at worker start, naming it; the `imports_passed_through()` form runs."""
    policy = temporal_workflow.SandboxImportNotificationPolicy.RAISE_ON_UNINTENTIONAL_PASSTHROUGH
    runner = SandboxedWorkflowRunner(restrictions=dataclasses.replace(_DEFAULT, import_notification_policy=policy))
    client = await app.connect(temporal_address)
    with pytest.raises(RuntimeError, match='Failed validating workflow PlainImportWorkflow') as refused:
        _worker(client, runner, [_form_plain.PlainImportWorkflow])
    assert 'Module pydantic_ai_harness_rs was not intentionally passed through' in repr(refused.value.__cause__)
    async with _worker(client, runner, [app.RootWorkflow, _form_passed_submodules.PassedSubmoduleImportWorkflow]):
        for workflow in [app.RootWorkflow, _form_passed_submodules.PassedSubmoduleImportWorkflow]:
            output = await client.execute_workflow(
                workflow.run, json.dumps(SHORT), id=f'wf-{uuid.uuid4().hex}', task_queue=app.TASK_QUEUE
            )
            assert json.loads(output)['results'] == SHORT_RESULTS, workflow.__name__
            _empty(ws)
