"""A Prefect worker process for the Prefect tests: the scripted agent runs as flows, on Prefect's
local (ephemeral) server with its database under `PREFECT_HOME` (set by the test).

Usage: `python prefect_worker.py BASE SCENARIO:CONTRACT...`; each run works in
`BASE/<scenario>-<contract>` (see `_scripted_run.py`) and prints one line
`RESULT <scenario>-<contract> {...}`. One process for all runs, so the server starts once.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from _scripted_run import build, returns  # pyright: ignore[reportMissingImports]
from prefect import flow
from pydantic_ai.durable_exec.prefect import PrefectDurability


@flow(name='harness_rs_prefect_flow')
async def agent_flow(scenario: str, contract: str, workspace: str) -> dict[str, list[object]]:
    agent, events = build(
        scenario, contract, Path(workspace), 'run', lambda handler: PrefectDurability(event_stream_handler=handler)
    )
    result = await agent.run('go')
    return {'results': list(returns(result.all_messages())), 'events': list(events)}


async def main() -> None:
    base = Path(sys.argv[1])
    for run in sys.argv[2:]:
        scenario, contract = run.split(':')
        outcome = await agent_flow(scenario, contract, str(base / f'{scenario}-{contract}'))
        print(f'RESULT {scenario}-{contract} ' + json.dumps(outcome), flush=True)


if __name__ == '__main__':
    asyncio.run(main())
