"""FileSystem and Shell inside a Temporal workflow, on a real dev server (`conftest.temporal_address`).

Each test drives `_temporal_app`'s agents (`TemporalDurability`, `LocalWorkspace`, `FileSystem`,
`Shell(persist_cwd=True)`) with a script in the prompt; tools run as activities on a worker.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('temporalio', reason="the Temporal tests need `temporalio` (pip install '.[durable]')")

from tests.durable import _temporal_app as app  # noqa: E402

pytestmark = pytest.mark.anyio


async def run_workflow(address: str, workflow: Any, script: list[Any]) -> dict[str, Any]:
    """Run `script` as `workflow` on an in-process worker: the tool results and tools the model saw."""
    client = await app.connect(address)
    async with app.worker(client):
        output = await client.execute_workflow(
            workflow.run, json.dumps(script), id=f'wf-{uuid.uuid4().hex}', task_queue=app.TASK_QUEUE
        )
    return json.loads(output)


async def run_plain(agent: Any, script: list[Any]) -> dict[str, Any]:
    """The same script outside any workflow (`TemporalDurability` is transparent there)."""
    return json.loads((await agent.run(json.dumps(script))).output)


def normalized(results: list[str]) -> list[str]:
    """Results with what differs between two runs (command IDs, PIDs, job directories) masked."""
    masked = [re.sub(r'[0-9a-f]{32}', '<id>', r) for r in results]
    return [re.sub(r'(PID:? |kill -- -|"pid": )\d+', r'\1<pid>', r) for r in masked]


EVERY_TOOL: list[Any] = [
    ['create_directory', {'path': 'src'}],
    ['write_file', {'path': 'src/a.txt', 'content': 'one\ntwo\n'}],
    ['read_file', {'path': 'src/a.txt'}],
    ['edit_file', {'path': 'src/a.txt', 'old_text': 'two', 'new_text': 'three'}],
    ['list_directory', {'path': 'src'}],
    ['search_files', {'pattern': 'three'}],
    ['find_files', {'pattern': '**/*.txt'}],
    ['file_info', {'path': 'src/a.txt'}],
    ['run_command', {'command': 'cd src && cat a.txt'}],
    ['run_command', {'command': 'pwd'}],
    ['start_command', {'command': 'echo started'}],
    ['shell', {'command': 'echo persistent'}],
]


@pytest.mark.parametrize(
    ('workflow', 'agent'),
    [(app.RootWorkflow, app.root_agent), (app.WorkspaceWorkflow, app.workspace_agent)],
    ids=['root_dir', 'workspace'],
)
async def test_every_tool_in_a_workflow(temporal_address: str, ws: Path, workflow: Any, agent: Any) -> None:
    durable = await run_workflow(temporal_address, workflow, EVERY_TOOL)
    assert (ws / 'src' / 'a.txt').read_text() == 'one\nthree\n'
    for child in ws.iterdir():
        shutil.rmtree(child)
    plain = await run_plain(agent, EVERY_TOOL)
    assert durable['tools'] == plain['tools']
    print(json.dumps(durable['results'], indent=1))
    assert normalized(durable['results']) == normalized(plain['results'])
