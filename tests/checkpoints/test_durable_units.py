"""Checkpoints taken inside a durable unit (`checkpoints/_units.py`): one per tool call, whatever the attempts.

An engine runs a unit (a Temporal activity, a DBOS step) again when its worker died before the
engine kept its result. These tests run a shell call's unit twice for one tool call, in a real
run (its workspace and agent), as a second attempt would after a first attempt that recorded its
checkpoint (its worker died before the engine kept the result). The engines themselves:
`tests/durable/test_temporal_checkpoints.py`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai import Agent
from pydantic_ai.durable_exec._operation_backend import durable_unit_scope
from pydantic_ai.tools import RunContext
from pydantic_ai_harness_rs import Checkpoints
from pydantic_ai_harness_rs.checkpoints import _units
from pydantic_ai_harness_rs.checkpoints._recording import RECORDING

from tests.checkpoints.conftest import agent_tools, tree
from tests.scripted import run_agent

pytestmark = pytest.mark.anyio


async def attempts(
    ws: Path,
    cp: Checkpoints[None],
    commands: Sequence[str],
    *,
    capabilities: list[Any] | None = None,
    run_id: str | None = None,
    **run_kwargs: Any,
) -> list[str]:
    """Run each of `commands` (in `ws`) as one attempt of the same `run_command` call's unit; the
    results. The agent's `capabilities` default to `agent_tools(ws, cp)`; `run_id`: the unit's (as a
    worker of the same run sees it; default the run's); `run_kwargs` go to the run."""
    results: list[str] = []

    async def sh(command: str) -> str:
        await anyio.run_process(['sh', '-c', command], cwd=ws)
        return 'ran'

    async def unit_attempts(ctx: RunContext[None]) -> str:
        unit = dataclasses.replace(
            ctx, tool_name='run_command', tool_call_id='call-in-unit', run_id=run_id or ctx.run_id
        )
        token = RECORDING.set(None)  # as in an activity: no hook made a recorder current
        try:
            with durable_unit_scope():
                for command in commands:
                    results.append(await _units.command(unit, lambda c=command: sh(c)))
        finally:
            RECORDING.reset(token)
        return 'done'

    capabilities = agent_tools(ws, cp) if capabilities is None else capabilities
    agent: Agent[None, Any] = Agent(capabilities=capabilities, tools=[unit_attempts], retries=1000)
    transcript = await run_agent(agent, [('unit_attempts', {})], **run_kwargs)
    assert transcript.results == ['done']
    return results


async def test_a_unit_run_again_adds_to_its_calls_checkpoint(ws: Path) -> None:
    (ws / 'a.txt').write_text('old\n')
    before = tree(ws)
    cp = Checkpoints[None]()
    assert await attempts(ws, cp, ['echo first >> a.txt', 'echo again >> a.txt && echo b > b.txt']) == ['ran', 'ran']
    [checkpoint] = cp.list()
    assert (checkpoint['tool_call_id'], checkpoint['tool_name'], checkpoint['paths']) == (
        'call-in-unit',
        'run_command',
        ['a.txt', 'b.txt'],
    )
    await cp.rewind(to=checkpoint['id'])
    assert tree(ws) == before


async def test_outside_a_unit_nothing_is_recorded_here(ws: Path) -> None:
    """Outside a durable unit the hook records (a plain run): the unit's helper only calls."""
    cp = Checkpoints[None]()
    ran: list[str] = []

    async def call() -> str:
        ran.append('x')
        return 'ran'

    ctx: Any = dataclasses.make_dataclass('Ctx', ['tool_name'])('run_command')
    assert await _units.command(ctx, call) == 'ran'
    assert ran == ['x']
    assert cp._states == {}  # pyright: ignore[reportPrivateUsage]


async def test_the_rewind_tool_refuses_in_a_temporal_activity(ws: Path) -> None:
    """Loud, not silent: in a Temporal activity the tool reaches neither the run's messages nor its listeners."""
    pytest.importorskip('temporalio')  # pydantic_ai's module raises a plain ImportError without it
    temporal = pytest.importorskip('pydantic_ai.durable_exec.temporal')
    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage
    from pydantic_ai_harness_rs.checkpoints._rewind import rewind_toolset

    (ws / 'a.txt').write_text('kept\n')
    cp = Checkpoints[None](root=ws, tools=['rewind'])
    tool = rewind_toolset(cp).tools['rewind']
    ctx = temporal.TemporalRunContext(deps=None, model=TestModel(), usage=RunUsage())
    with pytest.raises(UserError, match='does not run under Temporal'):
        await tool.function(ctx, steps=1)  # type: ignore[call-arg]
    assert (ws / 'a.txt').read_text() == 'kept\n'
