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


TREES = {
    # The pipes are read through the grace: a trap's last words reach the result.
    'what_the_sigterm_handler_prints_is_kept': (
        1009,
        "trap 'echo bye; exit 143' TERM; echo up; {marker} & wait",
        'up\nbye\n',
    ),
    # Every process ignores `SIGTERM` (inherited `SIG_IGN`), the second `sleep` starts after the
    # signal: the grace ends in `SIGKILL` for the group, and none of it is left.
    'a_tree_ignoring_sigterm_gets_sigkill_after_the_grace': (
        1010,
        "trap '' TERM; echo armed; {marker}; {marker} & {marker}",
        'armed\n',
    ),
    # The shell dies on `SIGTERM` but a child that ignores it lives on in the group: it is waited
    # for through the grace and killed, not left behind because the shell was reaped.
    'a_shell_exiting_at_once_leaves_no_straggler': (1011, "(trap '' TERM; {marker}) & echo started; wait", 'started\n'),
    # The shell's `SIGTERM` trap starts a process after the group was signalled, then exits: every
    # process known at the timeout is gone at once, yet the group is not, and the newcomer is
    # killed after the grace rather than left running.
    'a_process_forked_by_a_sigterm_handler_is_not_left': (
        1012,
        "trap '{marker} & exit 0' TERM; echo up; sleep 100 & wait",
        'up\n',
    ),
}
"""`(marker number, command with {marker}, stdout)`: a tree timed out at 0.5 s, then looked for."""


@pytest.mark.parametrize('case', TREES)
async def test_a_timed_out_tree_is_gone(ws: Path, case: str) -> None:
    number, command, stdout = TREES[case]
    marker = f'sleep {number}{os.getpid() % 100}'
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc(command.format(marker=marker), 0.5)])
    assert results == [('return', f'[stdout]\n{stdout}\n[Command timed out after 0.5s]')]
    assert live_processes_matching(marker) == []
