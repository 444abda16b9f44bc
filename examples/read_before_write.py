"""`ReadBeforeWrite`: the agent must read a file before it overwrites or edits it.

An edit of a file the run has not read is refused with a retry telling the model to read it first;
after `read_file` the same edit goes through. A new file may be created without a read.

    python examples/read_before_write.py                  # a scripted model, no API key
    python examples/read_before_write.py openai:gpt-5     # a real model (needs its package and key)
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _scripted import model_or_script, show
from pydantic_ai import Agent
from pydantic_ai_harness_rs import FileSystem, ReadBeforeWrite

with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp)
    (root / 'app.py').write_text("print('hello')\n")

    agent = Agent(capabilities=[FileSystem(root_dir=root), ReadBeforeWrite()])
    edit = {'path': 'app.py', 'old_text': "'hello'", 'new_text': "'hello, world'"}
    model = model_or_script(
        [
            ('edit_file', edit),  # refused: not read in this run
            ('read_file', {'path': 'app.py'}),
            ('edit_file', edit),  # now allowed
            ('write_file', {'path': 'new.txt', 'content': 'a new file needs no read\n'}),
        ]
    )
    result = agent.run_sync('Make app.py greet the world.', model=model)
    show(result.all_messages())
    print('app.py on disk:', (root / 'app.py').read_text().strip())
