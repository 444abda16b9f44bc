"""The ways a workflow module may import this package, each a workflow for the drop-in tests (issue 21).

`test_temporal_dropin.py` runs a workflow of each `_form_*` module on a worker configured as for
`pydantic-ai-harness` (no pass-through line for this package). Each module imports the package
its own way *first*, then this helper under `imports_passed_through()` (so this module, and the
agent it builds from the module's `FileSystem` and `Shell`, are the host's, whatever the form).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.models.function import FunctionModel

from tests.durable import _temporal_app as app

PROBED_MODULES = (
    'pydantic_ai_harness_rs',
    'pydantic_ai_harness_rs._core',
    'pydantic_ai_harness_rs.filesystem._tool_kinds',
)
"""Modules whose object the workflow reports from its `sys.modules` (the host's, when all is well)."""


def agent(name: str, file_system: type[Any], shell: type[Any]) -> Agent[None, str]:
    """`_temporal_app`'s root-contract agent, built from the form's own `FileSystem` and `Shell` classes."""
    return Agent(
        FunctionModel(app.scripted),
        name=name,
        retries=20,
        capabilities=[
            LocalWorkspace(app.WS),
            file_system(root_dir=app.WS),
            shell(persist_cwd=True, tools=['run_command', 'start_command', 'check_command', 'stop_command', 'shell']),
            TemporalDurability(activity_config=app.FAST_RETRY, model_activity_config=app.FAST_RETRY),
        ],
    )


def identities(*objects: object) -> list[int]:
    """`id()` of `objects` and of `PROBED_MODULES` in the caller's `sys.modules` (the sandbox's, in a workflow)."""
    modules = sys.modules
    return [id(o) for o in objects] + [id(modules.get(name)) for name in PROBED_MODULES]


async def run(agent: Agent[None, str], script: str, *objects: object) -> str:
    """Run `script`; the answer with `identities` of `objects` (the form's classes) added."""
    answer = json.loads((await agent.run(script)).output)
    return json.dumps({**answer, 'identities': identities(*objects)})
