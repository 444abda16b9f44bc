"""Checkpoints on a workspace whose files are not on this host (issue 23): the cost per tool call, in one run.

Usage: `python benches/bench_checkpoints_remote.py [--calls 20]`

The workspace is this machine's CPython standard library copied to a temporary directory, reached
through the workspace protocol: a `LocalWorkspaceBackend` subclass overriding `read_bytes` and `run`
(calling the stock ones), so the FileSystem tools take `RemoteEngine` and `Checkpoints` its non-local
path (states read through the protocol, commands bracketed by two `find` listings run through `run`).
Each case runs `--calls` tool calls through an Agent with a scripted model, with and without
`Checkpoints()`, and reports the time per call (the Agent's own overhead included in both):

- `write_file`: one file rewritten per call (its states read before and after);
- `run_command true`: after a first command (the baseline: every file read through the protocol, shown
  once), each command's two listings of the tree and nothing to read.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sysconfig
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.workspaces import CommandResult, LocalWorkspaceBackend, Workspace
from pydantic_ai_harness_rs import Checkpoints, FileSystem, Shell


class Remote(LocalWorkspaceBackend):
    """A host directory the harness reaches through the protocol only (files and commands)."""

    async def read_bytes(self, path: str) -> bytes:
        return await super().read_bytes(path)

    async def run(
        self,
        command: str | Sequence[str],
        *,
        shell: bool = False,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        return await super().run(command, shell=shell, env=env, timeout=timeout)


def model(calls: list[tuple[str, dict[str, Any]]]) -> FunctionModel:
    step = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal step
        if step < len(calls):
            name, args = calls[step]
            step += 1
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f'call-{step}')])
        return ModelResponse(parts=[TextPart('done')])

    return FunctionModel(respond)


async def per_call(root: Path, calls: list[tuple[str, dict[str, Any]]], cp: Checkpoints[Any] | None) -> float:
    capabilities: list[Any] = [FileSystem(tools=['write_file']), Shell(denied_commands=[])]
    if cp is not None:
        capabilities.append(cp)
    agent: Agent[Any, Any] = Agent(capabilities=capabilities)
    start = time.perf_counter()
    await agent.run('go', model=model(calls), workspace=Workspace(Remote(root)))
    return (time.perf_counter() - start) / len(calls)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--calls', type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, 'stdlib')
        shutil.copytree(
            sysconfig.get_paths()['stdlib'], root, ignore=shutil.ignore_patterns('__pycache__', 'site-packages')
        )
        files = sum(len(f) for _, _, f in os.walk(root))
        writes = [('write_file', {'path': 'bench.txt', 'content': f'v{i}\n'}) for i in range(args.calls)]
        commands = [('run_command', {'command': 'true'})] * args.calls
        cp = Checkpoints()
        first = await per_call(root, commands[:1], cp)
        rows = [
            ('write_file', await per_call(root, writes, None), await per_call(root, writes, Checkpoints())),
            ('run_command true', await per_call(root, commands, None), await per_call(root, commands, cp)),
        ]
    print(f'tree: {files} files; load: {os.getloadavg()[0]:.2f}')
    print(f'first command with Checkpoints (baseline, every file read): {first * 1000:.0f} ms')
    print('| call | without (ms) | with Checkpoints (ms) | ratio |')
    print('|---|---|---|---|')
    for name, without, with_cp in rows:
        print(f'| {name} | {without * 1000:.1f} | {with_cp * 1000:.1f} | {with_cp / without:.2f}x |')


if __name__ == '__main__':
    anyio.run(main)
