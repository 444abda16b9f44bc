"""Load an agent from a YAML spec (`examples/agent.yaml`) with our `FileSystem` and `Shell`.

Pydantic AI builds a spec's capabilities from the classes it knows, so ours are named when loading:
`Agent.from_file(path, custom_capability_types=[FileSystem, Shell])`. The spec's workspace
(`./workspace`) is made here in a temporary directory; its model (`openai:gpt-5`) is replaced by a
scripted one (`model=` when loading) unless a model is named on the command line.

    python examples/yaml_spec.py                  # a scripted model, no API key
    python examples/yaml_spec.py openai:gpt-5     # a real model (needs its package and key)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from _scripted import model_or_script, show
from pydantic_ai import Agent
from pydantic_ai_harness_rs import FileSystem, Shell

spec = Path(__file__).with_name('agent.yaml')
with tempfile.TemporaryDirectory() as tmp:
    os.chdir(tmp)  # the spec's `./workspace` is relative to where the agent runs
    shutil.copy(spec, 'agent.yaml')
    Path('workspace').mkdir()
    Path('workspace/config.toml').write_text('[package]\nname = "demo"\n')
    Path('workspace/server.key').write_text('secret\n')

    model = model_or_script(
        [
            ('read_file', {'path': 'config.toml'}),
            ('read_file', {'path': 'server.key'}),
            ('run_command', {'command': 'wc -l config.toml'}),
            ('run_command', {'command': 'rm config.toml'}),
        ],
        final='The package is named demo.',
    )
    # `model=` overrides the spec's model (and spares loading its provider's package).
    agent = Agent.from_file('agent.yaml', custom_capability_types=[FileSystem, Shell], model=model)
    result = agent.run_sync('Read config.toml and tell me the package name.')
    show(result.all_messages())
    print('answer:', result.output)
