"""A DBOS worker process for the DBOS tests: one agent run as one workflow, started or recovered.

Usage: `python dbos_worker.py SCENARIO CONTRACT WORKSPACE DATABASE MODE [no-handler]`, where SCENARIO is
`files` or `command` (see `SCRIPTS`), CONTRACT is `root_dir` (`FileSystem(root_dir=...)`) or
`workspace` (root_dir left out, the run's `LocalWorkspace`), and MODE is

- `run`: start the workflow and print its outcome;
- `crash`: start it, and when the model is asked for the step after `CRASH_AT` (so every tool call
  before it completed), print `CRASH-POINT` and hang, to be killed with SIGKILL by the test;
- `recover`: launch DBOS on the same database, which recovers the pending workflow, and print
  its outcome.

The outcome is one JSON line `RESULT {...}`: the tool results the model received, in order, and
the capability events the `event_stream_handler` got (class name and a few fields; none with
`no-handler`, which builds `DBOSDurability()` without one). The model is
stateless (it picks its call from the history), so a recovered workflow replays it exactly.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from _scripted_run import build, returns  # pyright: ignore[reportMissingImports]
from dbos import DBOS, SetWorkflowID
from pydantic_ai.durable_exec.dbos import DBOSDurability

WORKFLOW_ID = 'harness-rs-dbos-test'


def main() -> None:
    scenario, contract, workspace, database, mode = sys.argv[1:6]
    with_handler = sys.argv[6:] != ['no-handler']
    agent, events = build(
        scenario,
        contract,
        Path(workspace),
        mode,
        lambda handler: DBOSDurability(event_stream_handler=handler if with_handler else None),
    )

    @DBOS.workflow(name='harness_rs_dbos_workflow')
    async def workflow(prompt: str) -> list[str]:
        result = await agent.run(prompt)
        return returns(result.all_messages())

    DBOS(
        config={
            'name': 'harness-rs-dbos-test',
            'system_database_url': f'sqlite:///{database}',
            'run_admin_server': False,
        }
    )

    async def run() -> list[str]:
        if mode == 'recover':
            handle = await DBOS.retrieve_workflow_async(WORKFLOW_ID)
            return await handle.get_result()
        with SetWorkflowID(WORKFLOW_ID):
            return await workflow('go')

    DBOS.launch()
    try:
        results = asyncio.run(run())
    finally:
        DBOS.destroy()
    print('RESULT ' + json.dumps({'results': results, 'events': events}), flush=True)


if __name__ == '__main__':
    main()
