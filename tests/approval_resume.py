"""Resume a run that ended with `DeferredToolRequests`, in a process of its own (approval tests).

Usage: `python -m tests.approval_resume SPEC_JSON`, where the spec names the capability to build
(`file_system` on `root_dir`, `file_system_workspace` / `shell` on a local workspace at `workspace`),
the message history as `ModelMessagesTypeAdapter` JSON (`history`), and per tool call id a
`decision`: `{"approve": true}`, `{"approve": true, "override_args": {...}}` or `{"deny": "message"}`.
Only what a caller keeps across processes crosses: the history and the person's answers, no
request metadata. Prints the tool results of the resumed run as JSON `[[kind, text], ...]`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace

REPO = Path(__file__).resolve().parents[1]


def resume_in_new_process(spec: dict[str, Any]) -> list[list[str]]:
    """Run this module on `spec` in a new interpreter that imports the package the suite tests (in CI the
    installed one, not the source tree); the resumed run's tool results as `[[kind, text], ...]`."""
    import pydantic_ai_harness_rs

    package_root = str(Path(pydantic_ai_harness_rs.__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, '-m', 'tests.approval_resume', json.dumps(spec)],
        cwd=REPO,
        env={**os.environ, 'PYTHONPATH': os.pathsep.join([package_root, str(REPO)])},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _answer(messages: list[Any], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart('done')])


async def main(spec: dict[str, Any]) -> None:
    from tests.shell.conftest import tool_results

    kind = spec['capability']
    options = spec.get('options', {})
    run: dict[str, Any] = {}
    if kind == 'file_system':
        from pydantic_ai_harness_rs.filesystem import FileSystem, ReadBeforeWrite

        capabilities: list[Any] = [FileSystem(root_dir=spec['root_dir'], **options)]
        if spec.get('read_before_write'):
            capabilities.append(ReadBeforeWrite())
    elif kind == 'file_system_workspace':
        from pydantic_ai_harness_rs.filesystem import FileSystem

        capabilities = [FileSystem(**options)]
        run['workspace'] = Workspace(LocalWorkspaceBackend(spec['workspace']))
    else:
        from pydantic_ai_harness_rs.shell import Shell

        capabilities = [Shell(**options)]
        run['workspace'] = Workspace(LocalWorkspaceBackend(spec['workspace']))
    history = ModelMessagesTypeAdapter.validate_json(spec['history'])
    approvals: dict[str, Any] = {}
    for call_id, decision in spec['decisions'].items():
        if 'deny' in decision:
            approvals[call_id] = ToolDenied(decision['deny'])
        else:
            approvals[call_id] = ToolApproved(override_args=decision.get('override_args'))
    agent = Agent(FunctionModel(_answer), capabilities=capabilities, output_type=[str, DeferredToolRequests])
    result = await agent.run(
        message_history=history, deferred_tool_results=DeferredToolResults(approvals=approvals), **run
    )
    resumed = result.all_messages()[len(history) :]
    print(json.dumps(tool_results(resumed)))


if __name__ == '__main__':
    asyncio.run(main(json.loads(sys.argv[1])))
