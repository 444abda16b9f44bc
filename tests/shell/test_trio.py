"""The tools under trio (and asyncio), called on the toolset with a hand-built run context.

pydantic-ai's own agent loop needs asyncio, so under trio the tools are driven directly: our
code uses only anyio, so both backends must work, including cancellation.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
import pytest
from pydantic_ai_harness_rs.shell import Shell

from .conftest import direct_context as context
from .conftest import live_processes_matching


@pytest.fixture(params=['asyncio', 'trio'])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


pytestmark = pytest.mark.anyio


async def test_tools_under_each_backend(ws: Path, anyio_backend: str) -> None:
    toolset = Shell().get_toolset()
    ctx = context(ws)
    assert (
        await toolset.run_command(ctx, 'echo hi; echo no >&2; exit 4')
        == '[stdout]\nhi\n\n[stderr]\nno\n\n[exit code: 4]'
    )
    assert await toolset.run_command(ctx, 'sleep 5', timeout_seconds=0.2) == '[Command timed out after 0.2s]'
    started = await toolset.start_command(ctx, 'echo bg; sleep 50')
    cid = re.search(r'ID: (\w+)', started).group(1)  # type: ignore[union-attr]
    log = ws / '.pydantic-ai-harness' / 'shell' / cid / 'stdout.log'
    while log.read_text() != 'bg\n':
        await anyio.sleep(0.01)
    assert await toolset.check_command(context(ws, 'c2'), cid) == '[stdout]\nbg\n\n[status: running]'
    assert await toolset.stop_command(context(ws, 'c3'), cid) == '[stdout]\nbg\n\n[stopped]\n[exit code: 143]'


async def test_cancelled_run_command_kills_the_group(ws: Path, anyio_backend: str) -> None:
    marker = f'sleep 4001{os.getpid() % 100}'
    toolset = Shell().get_toolset()
    with anyio.move_on_after(0.3):  # the cancellation being tested, not a timing assertion
        await toolset.run_command(context(ws), f'{marker} & {marker}')
    for _ in range(500):
        if not live_processes_matching(marker):
            break
        await anyio.sleep(0.01)
    assert live_processes_matching(marker) == []
