"""A Prefect worker process for the Prefect tests: the scripted agent runs as flows, on Prefect's
local (ephemeral) server with its database under `PREFECT_HOME` (set by the test).

Usage: `python prefect_worker.py BASE SCENARIO:CONTRACT...`; each run works in
`BASE/<scenario>-<contract>` (see `_scripted_run.py`) and prints one line
`RESULT <scenario>-<contract> {...}`. One process for all runs, so the server starts once.

`python prefect_worker.py BASE crash SCENARIO:CONTRACT` starts one flow run in `crash` mode: it prints
`FLOW-RUN <id>`, then `CRASH-POINT` and hangs at the scenario's crash step (to be killed by the test);
`python prefect_worker.py BASE recover SCENARIO:CONTRACT ID` runs flow run `ID` again in this process
(`prefect.flow_engine.run_flow`, as a person restarting it would; Prefect resumes nothing on its own)
and prints its `RESULT` line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from _scripted_run import build, returns  # pyright: ignore[reportMissingImports]
from prefect import flow
from pydantic_ai.durable_exec.prefect import PrefectDurability

MODE = 'run'
"""`crash` in a worker started to be killed (see `build`)."""


@flow(name='harness_rs_prefect_flow')
async def agent_flow(scenario: str, contract: str, workspace: str) -> dict[str, list[object]]:
    from prefect.runtime import flow_run

    print(f'FLOW-RUN {flow_run.id}', flush=True)
    agent, events = build(
        scenario, contract, Path(workspace), MODE, lambda handler: PrefectDurability(event_stream_handler=handler)
    )
    result = await agent.run('go')
    return {'results': list(returns(result.all_messages())), 'events': list(events)}


async def main() -> None:
    global MODE
    base = Path(sys.argv[1])
    if sys.argv[2] in ('crash', 'recover'):
        scenario, contract = sys.argv[3].split(':')
        parameters = {'scenario': scenario, 'contract': contract, 'workspace': str(base / f'{scenario}-{contract}')}
        if sys.argv[2] == 'crash':
            MODE = 'crash'
            await agent_flow(**parameters)
            return
        from uuid import UUID

        from prefect.client.orchestration import get_client
        from prefect.flow_engine import run_flow

        async with get_client() as client:
            run = await client.read_flow_run(UUID(sys.argv[4]))
        outcome = await run_flow(agent_flow, flow_run=run, parameters=parameters)  # pyright: ignore
        print(f'RESULT {scenario}-{contract} ' + json.dumps(outcome), flush=True)
        return
    for run in sys.argv[2:]:
        scenario, contract = run.split(':')
        outcome = await agent_flow(scenario, contract, str(base / f'{scenario}-{contract}'))
        print(f'RESULT {scenario}-{contract} ' + json.dumps(outcome), flush=True)


if __name__ == '__main__':
    asyncio.run(main())
