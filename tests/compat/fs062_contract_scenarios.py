"""Which tree a relative `root_dir` names on a workspace, run on either side (issue 20, item 10).

`python fs062_contract_scenarios.py reference` runs pydantic-ai-harness 0.62.0 in its own venv;
`... ours` runs ours with `contract='workspace'`. Each builds the same tree in a temporary
directory `P` (`P/ws/src/a.txt`, `P/src/a.txt`, `P/marker.txt`), makes `P` the process's
directory, and runs an agent with `LocalWorkspace('./ws')` and `FileSystem(root_dir=...)`
through a scripted model, then the same calls directly on an in-memory workspace. It prints
JSON: per scenario, the construction error (type and text) or every call's result (`RETRY:
<message>` for a retry) and the `root_dir`/`path` of each event, with `P` written `<P>` (its
name `<P-name>`).
`test_fs062_contract_compat.py` compares the two.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_workspace import MemoryWorkspace  # noqa: E402

ROOT_DIRS = ['..', '.', 'src', '../..', '/', '~/x']
"""The `root_dir`s tried; `'src'` (below the working directory) and `'~/x'` are refused by 0.62.0."""

CALLS: list[tuple[str, dict[str, Any]]] = [
    ('read_file', {'path': 'src/a.txt'}),
    ('read_file', {'path': '../marker.txt'}),
    ('list_directory', {'path': '..'}),
    ('read_file', {'path': '../../nowhere.txt'}),
]
"""What the model calls, in this order: a path from the working directory, then ones above it."""


def file_system(side: str, root_dir: str) -> Any:
    if side == 'reference':
        from pydantic_ai_harness.filesystem import FileSystem

        return FileSystem(root_dir=root_dir)
    from pydantic_ai_harness_rs import FileSystem

    return FileSystem(root_dir=root_dir, contract='workspace')


def scripted(calls: list[tuple[str, dict[str, Any]]], results: list[str]) -> Any:
    from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import DeltaToolCall, FunctionModel

    step = 0

    def model(messages: list[Any], info: Any) -> ModelResponse:
        nonlocal step
        if step:
            for part in messages[-1].parts:
                if isinstance(part, ToolReturnPart):
                    retried = getattr(part, 'outcome', None) == 'retried'
                    results.append(('RETRY: ' if retried else '') + str(part.content))
                elif isinstance(part, RetryPromptPart):
                    results.append(f'RETRY: {part.content}')
        if step < len(calls):
            name, args = calls[step]
            step += 1
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f'c{step}')])
        return ModelResponse(parts=[TextPart('done')])

    async def stream(messages: list[Any], info: Any) -> Any:  # event listeners make the agent stream
        for part in model(messages, info).parts:
            if isinstance(part, ToolCallPart):
                yield {0: DeltaToolCall(part.tool_name, json.dumps(part.args), tool_call_id=part.tool_call_id)}
            else:
                yield part.content

    return FunctionModel(model, stream_function=stream)


async def on_local_workspace(side: str, root_dir: str) -> dict[str, Any]:
    from pydantic_ai import Agent, CapabilityEvent
    from pydantic_ai.capabilities import LocalWorkspace

    try:
        fs = file_system(side, root_dir)
    except Exception as error:
        return {'error': f'{type(error).__name__}: {error}'}
    results: list[str] = []
    events: list[list[str]] = []
    agent = Agent(capabilities=[LocalWorkspace('./ws'), fs], retries=100)

    @agent.on_event(CapabilityEvent)
    async def collect(ctx: Any, event: Any) -> None:
        events.append([type(event).__name__, event.root_dir, event.path])

    try:
        await agent.run('go', model=scripted(CALLS, results))
    except Exception as error:
        return {'error': f'{type(error).__name__}: {error}'}
    return {'results': results, 'events': events}


async def on_memory_workspace(side: str, root_dir: str) -> dict[str, Any]:
    from pydantic_ai.exceptions import ModelRetry

    try:
        toolset = file_system(side, root_dir).get_toolset()
    except Exception as error:
        return {'error': f'{type(error).__name__}: {error}'}
    ws = MemoryWorkspace({'src/a.txt': b'memory ws/src/a\n'}, cwd='/p/ws')
    ws._put('/p/marker.txt', b'memory marker\n')
    results: list[str] = []
    for name, args in CALLS:
        try:
            results.append(str(await getattr(toolset, name)(**args, workspace=ws)))
        except ModelRetry as retry:
            results.append(f'RETRY: {retry}')
        except Exception as error:
            results.append(f'{type(error).__name__}: {error}')
    return {'results': results}


async def main(side: str) -> None:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(os.path.realpath(tmp))
        (p / 'ws' / 'src').mkdir(parents=True)
        (p / 'src').mkdir()
        (p / 'ws' / 'src' / 'a.txt').write_text('ws/src/a\n')
        (p / 'src' / 'a.txt').write_text('process src/a\n')
        (p / 'marker.txt').write_text('marker in P\n')
        os.chdir(p)
        for root_dir in ROOT_DIRS:
            out[f'local {root_dir}'] = await on_local_workspace(side, root_dir)
            out[f'memory {root_dir}'] = await on_memory_workspace(side, root_dir)
        os.chdir('/')
    print(json.dumps(out, indent=1).replace(str(p), '<P>').replace(p.name, '<P-name>'))


if __name__ == '__main__':
    anyio.run(main, sys.argv[1])
