"""A timed-out `run_command`: the group's `SIGTERM`, its grace, `SIGKILL`, and nothing left running."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.shell import Shell

from .conftest import live_processes_matching, run_calls

pytestmark = pytest.mark.anyio


def rc(command: str, timeout: float) -> tuple[str, dict[str, object]]:
    return ('run_command', {'command': command, 'timeout_seconds': timeout})


async def test_what_the_sigterm_handler_prints_is_kept(ws: Path) -> None:
    """The pipes are read through the grace: a trap's last words reach the result."""
    marker = f'sleep 1009{os.getpid() % 100}'
    results = await run_calls(
        [LocalWorkspace(ws), Shell()], [rc(f"trap 'echo bye; exit 143' TERM; echo up; {marker} & wait", 0.5)]
    )
    assert results == [('return', '[stdout]\nup\nbye\n\n[Command timed out after 0.5s]')]
    assert live_processes_matching(marker) == []


async def test_a_tree_ignoring_sigterm_gets_sigkill_after_the_grace(ws: Path) -> None:
    """Every process ignores `SIGTERM` (inherited `SIG_IGN`), the second `sleep` starts after the
    signal: the grace ends in `SIGKILL` for the group, and none of it is left."""
    marker = f'sleep 1010{os.getpid() % 100}'
    results = await run_calls(
        [LocalWorkspace(ws), Shell()], [rc(f"trap '' TERM; echo armed; {marker}; {marker} & {marker}", 0.5)]
    )
    assert results == [('return', '[stdout]\narmed\n\n[Command timed out after 0.5s]')]
    assert live_processes_matching(marker) == []


async def test_a_shell_exiting_at_once_leaves_no_straggler(ws: Path) -> None:
    """The shell dies on `SIGTERM` but a child that ignores it lives on in the group: it is waited
    for through the grace and killed, not left behind because the shell was reaped."""
    marker = f'sleep 1011{os.getpid() % 100}'
    results = await run_calls(
        [LocalWorkspace(ws), Shell()], [rc(f"(trap '' TERM; {marker}) & echo started; wait", 0.5)]
    )
    assert results == [('return', '[stdout]\nstarted\n\n[Command timed out after 0.5s]')]
    assert live_processes_matching(marker) == []


async def test_a_process_forked_by_a_sigterm_handler_is_not_left(ws: Path) -> None:
    """The shell's `SIGTERM` trap starts a process after the group was signalled, then exits: every
    process known at the timeout is gone at once, yet the group is not, and the newcomer is
    killed after the grace rather than left running."""
    marker = f'sleep 1012{os.getpid() % 100}'
    results = await run_calls(
        [LocalWorkspace(ws), Shell()], [rc(f"trap '{marker} & exit 0' TERM; echo up; sleep 100 & wait", 0.5)]
    )
    assert results == [('return', '[stdout]\nup\n\n[Command timed out after 0.5s]')]
    assert live_processes_matching(marker) == []
