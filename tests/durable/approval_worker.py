"""One phase of an approved run under a durable engine, in a process of its own (approval tests).

Usage: `python approval_worker.py ENGINE CONTRACT WORKSPACE STATE REQUEST_JSON [TEMPORAL_ADDRESS]`:
ENGINE is `temporal`, `dbos` or `prefect`; CONTRACT `root_dir` or `workspace`; STATE a directory for
the engine's own files (DBOS's SQLite database); REQUEST_JSON `{}` to start the run, or
`{"history": ..., "decisions": ...}` to resume it. Prints `RESULT <_approval_app.outcome JSON>`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path


async def temporal(request: str, address: str) -> str:
    import _approval_app as app  # pyright: ignore[reportMissingImports]
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.client import Client
    from temporalio.worker import Worker
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    queue = f'approval-{uuid.uuid4().hex}'
    runner = SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules('pydantic_ai_harness_rs')
    )
    async with Worker(client, task_queue=queue, workflows=[app.ApprovalWorkflow], workflow_runner=runner):
        return await client.execute_workflow(
            app.ApprovalWorkflow.run, request, id=f'approval-{uuid.uuid4().hex}', task_queue=queue
        )


def dbos(request: str, state: Path) -> str:
    import _approval_app as app  # pyright: ignore[reportMissingImports]
    from dbos import DBOS
    from pydantic_ai.durable_exec.dbos import DBOSDurability

    agent = app.build(DBOSDurability(), name='approval_dbos_agent')

    @DBOS.workflow(name='harness_rs_approval_workflow')
    async def workflow(request: str) -> str:
        return await app.drive(agent, request)

    DBOS(
        config={
            'name': 'harness-rs-approval',
            'system_database_url': f'sqlite:///{state / "dbos.sqlite"}',
            'run_admin_server': False,
        }
    )
    DBOS.launch()
    try:
        return asyncio.run(workflow(request))
    finally:
        DBOS.destroy()


def prefect(request: str) -> str:
    import _approval_app as app  # pyright: ignore[reportMissingImports]
    from prefect import flow
    from pydantic_ai.durable_exec.prefect import PrefectDurability

    agent = app.build(PrefectDurability(), name='approval_prefect_agent')

    @flow(name='harness_rs_approval_flow')
    async def approval_flow(request: str) -> str:
        return await app.drive(agent, request)

    return asyncio.run(approval_flow(request))


def main() -> None:
    engine, contract, workspace, state, request = sys.argv[1:6]
    os.environ['DURABLE_APPROVAL_WS'] = workspace
    os.environ['DURABLE_APPROVAL_CONTRACT'] = contract
    sys.path.insert(0, str(Path(__file__).parent))
    if engine == 'temporal':
        result = asyncio.run(temporal(request, sys.argv[6]))
    elif engine == 'dbos':
        result = dbos(request, Path(state))
    else:
        result = prefect(request)
    print('RESULT ' + result, flush=True)


if __name__ == '__main__':
    main()
