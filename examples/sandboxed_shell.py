"""`Shell(sandbox=...)`: commands that can read the machine but write only inside the workspace.

Linux only (Landlock). Under `sandbox='workspace-write'` a command may write beneath the workspace
and a private temporary directory, nowhere else; `network=False` also denies TCP connections. A
kernel without Landlock makes `Shell(...)` raise `ValueError` (a sandboxed command never runs
unconfined): this example then says so and exits 0.

    python examples/sandboxed_shell.py                  # a scripted model, no API key
    python examples/sandboxed_shell.py openai:gpt-5     # a real model (needs its package and key)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from _scripted import model_or_script, show
from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs import Shell

with tempfile.TemporaryDirectory() as tmp:
    workspace, outside = Path(tmp, 'workspace'), Path(tmp, 'outside')
    workspace.mkdir()
    outside.mkdir()
    try:
        shell = Shell(sandbox='workspace-write', network=False)
    except ValueError as error:
        print(f'no sandbox on this machine: {error}')
        sys.exit(0)

    agent = Agent(capabilities=[LocalWorkspace(workspace), shell])
    model = model_or_script(
        [
            ('run_command', {'command': 'echo inside > inside.txt && cat inside.txt'}),
            ('run_command', {'command': f'echo escaped > {outside}/escaped.txt'}),
        ]
    )
    result = agent.run_sync('Write a file inside the workspace, then try one outside it.', model=model)
    show(result.all_messages())
    print('inside.txt written:', (workspace / 'inside.txt').exists())
    print('escaped.txt written:', (outside / 'escaped.txt').exists())
