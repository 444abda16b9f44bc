"""A foreground command whose worker died: stopped before its durable unit runs again.

`run_command` on a local workspace runs its shell in a session of its own, so a worker killed
mid-command (SIGKILL, OOM, a lost machine) leaves the command running with nobody reading its
output. The engine then runs the unit again (Temporal retries the activity on another worker,
DBOS and Prefect recover the step). Inside a durable unit each such command therefore records
its shell's PID in `<jobs dir>/running-<call id>` (named from the run and the tool call, like a
`shell` job, so the retry finds it); the next attempt of the same call kills every process of the
recorded session before it starts the command again, and the record goes once the command ends.
The command itself runs again from the start (its output went to the dead worker): a command in
flight when its worker dies is at-least-once. `shell` and `start_command` jobs are found again
instead (`call_job_id`). Outside a durable unit nothing is recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import shlex
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from pydantic_ai.tools import RunContext

__all__ = ['CommandGuard', 'call_job_id', 'in_durable_unit']

_START_SLACK = 5.0
"""Seconds between a shell's start and its record's mtime for the PID to count as that shell's."""

_STOP_WAIT = 5.0
"""Longest wait (seconds) for the killed session's processes to go."""


def call_job_id(run_id: str | None, tool_call_id: str | None) -> str | None:
    """The job directory name of one tool call: `sha256(run_id:tool_call_id)[:32]`, or `None`.

    From the run and the tool call, so a replayed durable activity (or a retried launch) names the
    job it started the first time, while separate calls of one run get separate jobs.
    """
    if run_id is None or tool_call_id is None:
        return None
    return hashlib.sha256(f'{run_id}:{tool_call_id}'.encode()).hexdigest()[:32]


def in_durable_unit() -> bool:
    """Whether this code runs as a durable unit: a Temporal activity, or a unit of Pydantic AI's
    in-process engines (a DBOS step, a Prefect task). Imports neither engine."""
    activity = sys.modules.get('temporalio.activity')
    if activity is not None and activity.in_activity():
        return True
    backend = sys.modules.get('pydantic_ai.durable_exec._operation_backend')
    check = getattr(backend, 'in_durable_unit', None)
    return bool(check is not None and check())


def _stat_fields(pid: int) -> list[str] | None:
    """`/proc/<pid>/stat` after the command name (field 3 onwards), or `None` for a gone process."""
    try:
        return open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return None


def _started_at(fields: list[str]) -> float:
    """A process's start as a Unix time, from its `stat` fields."""
    with open('/proc/stat') as f:
        boot = next(float(line.split()[1]) for line in f if line.startswith('btime '))
    return boot + int(fields[19]) / os.sysconf('SC_CLK_TCK')


def _session(leader: int) -> list[int]:
    """Live processes of the session `leader` leads (zombies left out)."""
    members: list[int] = []
    for name in os.listdir('/proc'):
        if name.isdigit() and (fields := _stat_fields(int(name))) is not None:
            if fields[0] != 'Z' and fields[3] == str(leader):
                members.append(int(name))
    return members


def stop_recorded(record: str) -> None:
    """Kill the session a previous attempt recorded in `record` (if it still runs), then remove `record`.

    The PID counts only while it leads its own session and started within `_START_SLACK` of the
    record being written, so a reused PID is left alone.
    """
    try:
        pid = int(open(record).read().strip())
        written = os.stat(record).st_mtime
    except (OSError, ValueError):
        return
    fields = _stat_fields(pid)
    if fields is not None and fields[3] == str(pid) and abs(_started_at(fields) - written) <= _START_SLACK:
        deadline = time.monotonic() + _STOP_WAIT
        while (members := _session(pid)) and time.monotonic() < deadline:
            for member in members:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(member, signal.SIGKILL)
            time.sleep(0.01)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(record)


@dataclass(frozen=True)
class CommandGuard:
    """One foreground command's record (`record` is `None` outside a durable unit: nothing to do)."""

    record: str | None = None

    @classmethod
    async def start(cls, ctx: RunContext[Any], jobs_dir: Callable[[RunContext[Any]], Awaitable[str]]) -> CommandGuard:
        """The guard of `ctx`'s tool call, after stopping what an earlier attempt of it left running."""
        job_id = call_job_id(ctx.run_id, ctx.tool_call_id)
        if job_id is None or not in_durable_unit():
            return cls()
        record = posixpath.join(await jobs_dir(ctx), f'running-{job_id}')
        await anyio.to_thread.run_sync(stop_recorded, record)
        return cls(record)

    def mark(self, prologue: str) -> str:
        """`prologue` (one line) with the statement that records the shell's PID at its end."""
        if self.record is None:
            return prologue
        return prologue.removesuffix('\n') + f'; echo $$ > {shlex.quote(self.record)}\n'

    def release(self) -> None:
        """The command ended (or was killed here): forget the record."""
        if self.record is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.record)
