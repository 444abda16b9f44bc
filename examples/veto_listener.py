"""Veto file changes with a `FileChangeRequestEvent` listener.

Every `write_file`, `edit_file` and `create_directory` announces its change (with the diff) before
anything is written; a listener that calls `event.cancel(reason)` stops it, and the model gets the
reason. Here the agent may change anything but `*.lock` files.

    python examples/veto_listener.py                  # a scripted model, no API key
    python examples/veto_listener.py openai:gpt-5     # a real model (needs its package and key)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _scripted import model_or_script, show
from pydantic_ai import Agent, RunContext
from pydantic_ai_harness_rs import FileSystem
from pydantic_ai_harness_rs.filesystem import FileChangeRequestEvent

with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp)
    (root / 'poetry.lock').write_text('# generated\n')

    agent = Agent(capabilities=[FileSystem(root_dir=root)])

    @agent.on_event(FileChangeRequestEvent)
    async def no_lock_files(ctx: RunContext[None], event: FileChangeRequestEvent) -> None:
        print(f'asked: {event.operation} {event.path}')
        if event.path.endswith('.lock'):
            event.cancel('lock files are generated: change the manifest instead')

    model = model_or_script(
        [
            ('write_file', {'path': 'notes.txt', 'content': 'hello\n'}),
            ('edit_file', {'path': 'poetry.lock', 'old_text': '# generated', 'new_text': '# edited by hand'}),
        ]
    )
    result = agent.run_sync('Write notes.txt, then edit poetry.lock.', model=model)
    show(result.all_messages())
    print('poetry.lock on disk:', (root / 'poetry.lock').read_text().strip())
    print('notes.txt on disk:', (root / 'notes.txt').read_text().strip())
