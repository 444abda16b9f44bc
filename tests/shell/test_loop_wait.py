"""A local foreground command is waited for on the event loop (`shell/_foreground.py`).

A lone command holds no worker thread, from its spawn to its result, on every path a result
takes (exit, output over one step's read budget, a timeout, a tree that ignores `SIGTERM`);
commands started together still give their exact results; cancelling them ends every process.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from pydantic_ai_harness_rs.shell import Shell

from .conftest import direct_context as context
from .conftest import live_processes_matching

pytestmark = pytest.mark.anyio


@pytest.fixture(params=['asyncio', 'trio'])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def thread_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions handed to `anyio.to_thread.run_sync` during the test."""
    calls: list[str] = []
    original = anyio.to_thread.run_sync

    async def counted(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        calls.append(getattr(func, '__name__', None) or getattr(getattr(func, 'func', None), '__name__', repr(func)))
        return await original(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, 'run_sync', counted)
    return calls


async def test_a_lone_command_holds_no_thread_on_any_path(
    ws: Path, anyio_backend: str, thread_calls: list[str]
) -> None:
    toolset = Shell().get_toolset()
    ctx = context(ws)
    assert (
        await toolset.run_command(ctx, 'echo hi; echo no >&2; exit 4')
        == '[stdout]\nhi\n\n[stderr]\nno\n\n[exit code: 4]'
    )
    # Over three of the 1 MiB read budgets: the tail survives the steps in between (the Rust
    # test `stepped_matches_run` checks the byte count). The toolset keeps the last
    # `(max_output_chars + 4) * 4` bytes; the agent's own limit cuts it further.
    big = await Shell(max_output_chars=100).get_toolset().run_command(ctx, 'seq 1 500000; echo END')
    assert big == '[stdout]\n' + (''.join(f'{i}\n' for i in range(1, 500001)) + 'END\n')[-416:]
    assert await toolset.run_command(ctx, 'sleep 5', timeout_seconds=0.2) == '[Command timed out after 0.2s]'
    ignored = await toolset.run_command(ctx, "trap '' TERM; echo up; sleep 5", timeout_seconds=0.2)
    assert ignored == '[stdout]\nup\n\n[Command timed out after 0.2s]'
    assert thread_calls == []


async def test_a_timed_out_tree_too_big_to_walk_on_the_loop_is_stopped_on_a_worker_thread(
    ws: Path, anyio_backend: str, thread_calls: list[str]
) -> None:
    # Walking a tree reads procfs about ten times a process: past 32 processes, the stop
    # would hold the loop (about 35 ms for 500 on this VM), so it goes to `finish` instead.
    marker = f'sleep 4003{os.getpid() % 100}'
    toolset = Shell().get_toolset()
    result = await toolset.run_command(
        context(ws), f'for i in $(seq 40); do {marker} & done; wait', timeout_seconds=0.3
    )
    assert result == '[Command timed out after 0.3s]'
    assert thread_calls == ['finish']
    assert live_processes_matching(marker) == []


async def test_commands_started_together_give_exact_results(ws: Path, anyio_backend: str) -> None:
    toolset = Shell().get_toolset()
    results: dict[int, str] = {}

    async def one(i: int) -> None:
        results[i] = await toolset.run_command(context(ws, f'c{i}'), f'echo {i}; sleep 0.0{i % 10}; echo e{i} >&2')

    async with anyio.create_task_group() as tg:
        for i in range(16):
            tg.start_soon(one, i)
    assert results == {i: f'[stdout]\n{i}\n\n[stderr]\ne{i}\n' for i in range(16)}


async def test_cancelling_commands_started_together_ends_every_process(ws: Path, anyio_backend: str) -> None:
    marker = f'sleep 4002{os.getpid() % 100}'
    toolset = Shell().get_toolset()
    with anyio.move_on_after(0.5):  # the cancellation being tested, not a timing assertion
        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(toolset.run_command, context(ws, f'c{i}'), f'{marker} & (setsid {marker} &); {marker}')
    for _ in range(500):
        if not live_processes_matching(marker):
            break
        await anyio.sleep(0.01)
    assert live_processes_matching(marker) == []
