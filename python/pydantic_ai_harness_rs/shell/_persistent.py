"""The persistent `shell` tool: a detached command, a bounded foreground wait, and handles.

The command runs as a job (see `_jobs`) with one combined `output.log`; the call returns the
PID, the log and status paths, and the kill command last, so a result cut to its tail keeps
them. Progress is emitted as `shell` events while a foreground call waits.
"""

from __future__ import annotations

import codecs
import copy
from collections.abc import Callable, Mapping
from typing import Any, Literal

import anyio
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.workspaces import LocalWorkspaceBackend

from pydantic_ai_harness_rs.durable._carried import recorder
from pydantic_ai_harness_rs.durable._events import events_reachable, refuse_bare_toolset
from pydantic_ai_harness_rs.shell._events import CommandFinishedEvent, CommandOutputEvent, CommandStartedEvent
from pydantic_ai_harness_rs.shell._jobs import POLL_MAX, POLL_MIN, Job, job_directory, launch, stop_launched
from pydantic_ai_harness_rs.shell._sandbox import NativeSandbox

MAX_FOREGROUND_WAIT: float = 270.0
"""Longest a foreground `shell` call waits (seconds) before handing back the still-running command."""

OUTPUT_TAIL_BYTES = 16_000
"""Bytes of log a foreground call returns, and emits as events per call."""

EVENT_CHUNK_BYTES = 4096
"""Largest log chunk per `CommandOutputEvent`."""

LINE_COUNT_LIMIT = 1_048_576
"""Logs up to this many bytes get their lines counted for `CommandFinishedEvent.total_lines`."""

CommandMode = Literal['foreground', 'background']


def event_ctx(ctx: RunContext[Any], capability: str) -> RunContext[Any] | None:
    """`ctx`; where events cannot reach the run's stream (a Temporal activity), a copy whose `emit`
    records them for workflow code (inside `durable._carried.recording`), else `None`.

    Raises `UserError` when the tool came from a bare or renamed toolset, whose capability
    events core would refuse.
    """
    if not events_reachable(ctx):
        if (keep := recorder()) is None:
            return None
        recorded = copy.copy(ctx)
        object.__setattr__(recorded, 'emit', keep)
        return recorded
    refuse_bare_toolset(ctx, capability)
    return ctx


async def _count_lines(job: Job) -> int | None:
    size = await job.size(job.output_path)
    if size > LINE_COUNT_LIMIT:
        return None
    data = await job.read(job.output_path, 0, size)
    return data.count(b'\n') + int(bool(data) and not data.endswith(b'\n'))


async def _output_tail(job: Job) -> str:
    """The log's last `OUTPUT_TAIL_BYTES`, from a line start, marked when earlier bytes are left out."""
    size = await job.size(job.output_path)
    start = max(0, size - OUTPUT_TAIL_BYTES)
    data = await job.read(job.output_path, start, size - start)
    if not start:
        return data.decode('utf-8', errors='replace')
    newline = data.find(b'\n')
    if 0 <= newline < len(data) - 1:
        start += newline + 1
        data = data[newline + 1 :]
    return f'[... output truncated, {start} earlier bytes omitted]\n' + data.decode('utf-8', errors='replace')


class _OutputEvents:
    """Emits up to `OUTPUT_TAIL_BYTES` of the log as `CommandOutputEvent`s, decoded incrementally.

    With `max_log_bytes` the log can be emptied under the reader; `log_clears` (two bytes per
    clear, odd while one is under way) tells: a chunk read across a clear is dropped and the log
    is read again from its start, still counting against `OUTPUT_TAIL_BYTES`.
    """

    def __init__(self, job: Job, ctx: RunContext[Any] | None, *, log_limited: bool) -> None:
        self.job = job
        self.ctx = ctx
        self.log_limited = log_limited
        self.offset = 0
        """Where the next chunk starts in the log; back to 0 after a clear."""
        self.emitted = 0
        """Bytes emitted by this call, across clears."""
        self.clears = 0
        """The `log_clears` size the emitted chunks were read under."""
        self.decoder = codecs.getincrementaldecoder('utf-8')(errors='replace')

    async def _clears(self) -> int:
        return await self.job.size(self.job.clears_path) if self.log_limited else 0

    async def _read(self) -> bytes:
        length = min(EVENT_CHUNK_BYTES, OUTPUT_TAIL_BYTES - self.emitted)
        return await self.job.read(self.job.output_path, self.offset, length)

    async def emit(self) -> bool:
        if self.ctx is None or self.emitted >= OUTPUT_TAIL_BYTES:
            return False
        chunk = await self._read()
        if (clears := await self._clears()) != self.clears:
            if clears % 2:
                return False
            self.clears, self.offset = clears, 0
            self.decoder = codecs.getincrementaldecoder('utf-8')(errors='replace')
            chunk = await self._read()
            if await self._clears() != clears:
                return False
        self.offset += len(chunk)
        self.emitted += len(chunk)
        if chunk:
            await self.ctx.emit(CommandOutputEvent(text=self.decoder.decode(chunk)))
        return bool(chunk)

    async def drain(self) -> None:
        while await self.emit():
            pass

    async def finish(self) -> None:
        """The decoder's rest, then `CommandFinishedEvent`: `truncated` and `total_lines=None` once the log was
        emptied during the call (its earlier lines are gone)."""
        if self.ctx is None:
            return
        rest = self.decoder.decode(b'', final=True)
        if rest:
            await self.ctx.emit(CommandOutputEvent(text=rest))
        clears = await self._clears()
        size = await self.job.size(self.job.output_path)
        total_lines = None if clears else await _count_lines(self.job)
        cleared = clears > 0 or await self._clears() != clears
        await self.ctx.emit(
            CommandFinishedEvent(
                pid=self.job.pid,
                output_path=self.job.output_path,
                status_path=self.job.status_path,
                exit_code=(await self.job.status())[1],
                truncated=cleared or size > self.offset,
                total_lines=None if cleared else total_lines,
            )
        )


async def run_persistent_command(
    ctx: RunContext[Any],
    local: LocalWorkspaceBackend | None,
    command: str,
    *,
    base: str,
    cwd: str,
    env: Mapping[str, str] | None,
    mode: CommandMode,
    timeout: float,
    job_id: str | None = None,
    log_limit: int | None = None,
    sandbox: NativeSandbox | None = None,
    started: Callable[[Job], None] | None = None,
    log_limit_line: str = '',
) -> str:
    """Start `command` detached and return its tail (foreground) and handles.

    The job is named `job_id` when given (a replay attaches to the job it started); its log
    is kept under `log_limit` bytes (`max_log_bytes`); `log_limit_line` (`report_log_limit`) goes
    just before the handles. `started` is told the job once it runs.

    Foreground waits up to `timeout` seconds for the exit status, emitting output events on
    a 50 ms to 1 s backoff, and returns early when the command exits. Raises `ModelRetry`
    for a `timeout` outside (0, `MAX_FOREGROUND_WAIT`]. A cancelled or failed call kills the
    command and removes its files before re-raising.
    """
    if not 0 < timeout <= MAX_FOREGROUND_WAIT:
        raise ModelRetry(f'timeout must be greater than zero and at most {MAX_FOREGROUND_WAIT:g} seconds.')
    events = event_ctx(ctx, 'Shell')
    directory = job_directory(base, job_id)
    try:
        job = await launch(
            ctx.workspace,
            local,
            command,
            base=base,
            cwd=cwd,
            env=env,
            combined=True,
            log_limit=log_limit,
            job_id=job_id,
            sandbox=sandbox,
            directory=directory,
        )
    except ModelRetry:
        raise  # nothing was started (a refused command, or another call's launch still pending)
    except BaseException:
        # Cancelled (or failed) between spawning and getting the job back: found by its directory.
        await stop_launched(ctx.workspace, directory, None, combined=True, local=local is not None)
        raise
    if started is not None:
        started(job)
    output = _OutputEvents(job, events, log_limited=log_limit is not None)
    try:
        if output.ctx is not None:
            await output.ctx.emit(CommandStartedEvent(tool_call_id=ctx.tool_call_id, command=command, pid=job.pid))
        if mode == 'foreground':
            interval = POLL_MIN
            with anyio.move_on_after(timeout):
                while (await job.status())[0]:
                    emitted = await output.emit()
                    await job.wait(interval)
                    interval = POLL_MIN if emitted else min(interval * 2, POLL_MAX)
            await output.drain()
        await output.finish()

        result = ''
        if mode == 'foreground':
            result = await _output_tail(job)
            if result and not result.endswith('\n'):
                result += '\n'
        result += log_limit_line + (
            f'PID: {job.pid} (supervisor; use `{job.stop_command}` to stop the whole process tree)\n'
            f'Output: {job.output_path}\nStatus: {job.status_path}'
        )
        if (status := await job.status_text()) is not None:
            result += f'\n{status}'
    except BaseException:
        await stop_launched(ctx.workspace, directory, job, combined=True, local=local is not None)
        raise
    return result
