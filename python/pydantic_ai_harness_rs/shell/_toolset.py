"""`ShellToolset`: the tools, their model-facing docstrings, and the per-run working directory.

Execution goes one of two ways. A local workspace (`LocalWorkspaceBackend`) runs commands
through the Rust supervisor (`_core.ForegroundCommand`, `_core.job_*`): own session, stdin
at EOF, bounded tail capture, `RLIMIT_FSIZE`, group timeouts. Any other backend goes
through `ctx.workspace.run(...)` and the workspace's file operations. Both give the same
results; formatting, policy and `persist_cwd` are shared.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
import os
import posixpath
import re
import resource
import shlex
import uuid
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, ModelRetry, UserError
from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import AbstractToolset, FunctionToolset, ToolsetTool
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace, WorkspaceTimeoutError

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs._approvals import Call, with_note
from pydantic_ai_harness_rs.durable._carried import EventsDelivered, carry, recording
from pydantic_ai_harness_rs.durable._commands import CommandGuard, call_job_id
from pydantic_ai_harness_rs.durable._events import beneath_durable
from pydantic_ai_harness_rs.durable._units import call_in_unit
from pydantic_ai_harness_rs.shell import _foreground as foreground
from pydantic_ai_harness_rs.shell import _relayed as relayed
from pydantic_ai_harness_rs.shell._approval import CommandPredicate
from pydantic_ai_harness_rs.shell._approval import checked as checked_approvals
from pydantic_ai_harness_rs.shell._approval import gate as approval_gate
from pydantic_ai_harness_rs.shell._events import CommandFinishedEvent, CommandOutputEvent, CommandStartedEvent
from pydantic_ai_harness_rs.shell._jobs import (
    CONTROL_TIMEOUT,
    KILL_GRACE_PERIOD,
    Job,
    attach,
    env_bytes,
    job_directory,
    launch,
    stop_launched,
)
from pydantic_ai_harness_rs.shell._limits import (
    APPLY_FAILED,
    limit_prologue,
    validate_byte_limit,
    validate_file_limit,
)
from pydantic_ai_harness_rs.shell._modes import (
    NON_INTERACTIVE_ENV,
    TRUNCATIONS,
    Truncation,
    clean_text,
    head_tail,
    signal_suffix,
)
from pydantic_ai_harness_rs.shell._output import file_limit_status, labelled, truncate_tail
from pydantic_ai_harness_rs.shell._persistent import MAX_FOREGROUND_WAIT, CommandMode, run_persistent_command
from pydantic_ai_harness_rs.shell._policy import check_command, recoverable, run_model_command
from pydantic_ai_harness_rs.shell._sandbox import NativeSandbox, SandboxDirs, SandboxMode, validate_sandbox
from pydantic_ai_harness_rs.shell._sessions import (
    DEFAULT_YIELD_SECONDS,
    MAX_SIZE,
    MIN_SIZE,
    SESSION_TERM,
    SESSION_TOOL_NAMES,
    LiveSession,
    SessionTable,
    StartedJob,
    is_shell_program,
    job_row,
    refused_keys,
    render,
    session_row,
    status_line,
    typed_lines,
)
from pydantic_ai_harness_rs.shell._sessions import wait as wait_session
from pydantic_ai_harness_rs.shell._strict import check_strict, require_parser
from pydantic_ai_harness_rs.shell._workspace import local_backend, metadata_dir, require_workspace, supports_commands


async def _require_inside(ctx: RunContext[Any], root: str, directory: str, cwd: str) -> None:
    """Raise `ModelRetry` unless `directory` (symlinks followed) is the workspace's `root` or below it."""
    real = await ctx.workspace.realpath(directory)
    if real != root and not real.startswith(root.rstrip('/') + '/'):
        raise ModelRetry(
            f'cwd {cwd!r} resolves outside the workspace; give a directory inside it, relative to the working directory.'
        )


_KILLED_EXIT_CODE = 128 + 9
"""Exit code of a program ended by `SIGKILL` (or reporting that its child was)."""

_SESSION_STATUS_ROOM = 120
"""Chars of `max_output_chars` kept for what follows a session's output (`[session ended, ...]`, `[stopped ...]`)."""

_KILL = re.compile(r'\s*kill(?:\s+(?:-s\s*|-n\s*|-)(?P<signal>[A-Za-z0-9]+))?(?:\s+--)?\s+(?P<target>-?\d+)\s*')
"""`kill [-SIG | -s SIG] [--] TARGET`, the shape of the stop command the `shell` tool names."""

INLINE_CHECK_CHARS = 65_536
"""Commands up to this many characters are checked on the event loop (well under a millisecond);
longer ones, and every command under `strict_policy`, on a worker thread."""

RUN_SCOPED_TOOL_NAMES: tuple[str, ...] = ('run_command', 'start_command', 'check_command', 'stop_command')
"""The default tools; background commands run until they exit, are stopped, or the workspace ends."""

PERSISTENT_TOOL_NAME = 'shell'
"""The opt-in tool whose commands hand back their log and status files."""

SHELL_TOOL_NAMES: tuple[str, ...] = (*RUN_SCOPED_TOOL_NAMES, PERSISTENT_TOOL_NAME)
"""Every tool `Shell` can register, in registration order."""

_BYTES_PER_CHAR = 4
"""UTF-8 bytes per char at most: `4 * max_output_chars` bytes of output hold every char the cap keeps."""

_COMMAND_ID = re.compile(r'[0-9a-f]{32}')

_FILE_LIMIT_BLOCK = 512
"""`ulimit -f` block size of POSIX `sh`; the native limit is rounded up to it like the shell's."""


@dataclass
class _Stream:
    """One output stream of a command, decoded, with what head-tail truncation needs."""

    text: str
    lines: int = 0
    size: int = 0
    path: str | None = None
    """Where the whole stream is (or is to be written), with `truncation='head_tail'`."""
    data: bytes | None = None
    """The whole stream when it is still to be written to `path` if cut."""
    cut: int | None = None
    """Where in `text` the supervisor dropped bytes between head and tail."""

    @classmethod
    def of(cls, text: str) -> _Stream:
        return cls(text)


@dataclass
class _Outcome:
    exit_code: int
    signal: int | None
    stdout: _Stream
    stderr: _Stream
    timed_out: bool


def _file_limit_applicable(limit: int) -> bool:
    """Whether `RLIMIT_FSIZE` can be set to `limit` rounded up to blocks (not above the hard limit)."""
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    rounded = -(-limit // _FILE_LIMIT_BLOCK) * _FILE_LIMIT_BLOCK
    return hard == resource.RLIM_INFINITY or rounded <= hard


class ShellToolset(FunctionToolset[AgentDepsT]):
    """Shell tools running commands in the run's workspace.

    `run_command` runs synchronously; `start_command` / `check_command` / `stop_command`
    manage background commands that outlive the run (a later run on the same workspace
    reaches them by ID); the opt-in `shell` tool returns handles to a detached command's log
    and status files. Output is labelled and cut to the last `max_output_chars` chars.
    With `persist_cwd`, `cd` carries over between calls of one run.
    """

    def __init__(
        self,
        *,
        allowed_commands: Sequence[str],
        denied_commands: Sequence[str],
        denied_operators: Sequence[str],
        default_timeout: float,
        max_output_chars: int,
        persist_cwd: bool,
        allow_interactive: bool,
        max_file_bytes: int | None = None,
        max_log_bytes: int | None = None,
        report_log_limit: bool = False,
        job_max_age: float | None = None,
        job_max_total_bytes: int | None = None,
        env: Mapping[str, str] | None = None,
        denied_env_patterns: Sequence[str] = (),
        tools: Sequence[str] = RUN_SCOPED_TOOL_NAMES,
        cwd: Path | None = None,
        id: str | None = None,
        sandbox: SandboxMode | None = None,
        network: bool = True,
        truncation: Truncation = 'tail',
        clean_output: bool = False,
        non_interactive: bool = False,
        strict_policy: bool = False,
        require_approval: bool | Sequence[str] | CommandPredicate = False,
        interactive: bool = False,
    ) -> None:
        super().__init__(id=id)
        self._interactive = interactive
        self._sessions = SessionTable()
        self._started_jobs: dict[str, StartedJob] = {}
        self._require_approval = require_approval
        self._approvals = checked_approvals(require_approval)
        if cwd is not None:
            from pydantic_ai_harness_rs._warn import warn_cwd_ignored

            warn_cwd_ignored('ShellToolset', stacklevel=3)
        self._cwd: str | None = None
        self._cwd_run_id: str | None = None
        self._allowed_commands = list(allowed_commands)
        self._denied_commands = list(denied_commands)
        self._denied_operators = list(denied_operators)
        self._default_timeout = default_timeout
        self._max_output_chars = max_output_chars
        validate_file_limit(max_file_bytes, persistent=PERSISTENT_TOOL_NAME in tools)
        if max_file_bytes is not None and persist_cwd:
            raise ValueError(
                'max_file_bytes is not supported with persist_cwd; cwd capture writes a file in the child.'
            )
        self._max_file_bytes = max_file_bytes
        validate_byte_limit('max_log_bytes', max_log_bytes)
        self._max_log_bytes = max_log_bytes
        self._report_log_limit = report_log_limit
        if job_max_age is not None and (
            isinstance(job_max_age, bool)
            or not isinstance(job_max_age, (int, float))
            or not math.isfinite(job_max_age)
            or job_max_age < 0
        ):
            raise ValueError('job_max_age must be a non-negative number of seconds.')
        validate_byte_limit('job_max_total_bytes', job_max_total_bytes)
        self._job_max_age = job_max_age
        self._job_max_total_bytes = job_max_total_bytes
        self._persist_cwd = persist_cwd
        self._allow_interactive = allow_interactive
        self._env = dict(env) if env is not None else None
        self._denied_env_patterns = list(denied_env_patterns)
        self._tools = tuple(tools)
        self._jobs_dirs: weakref.WeakKeyDictionary[Workspace | LocalWorkspaceBackend, str] = weakref.WeakKeyDictionary()
        validate_sandbox(sandbox, network)
        self._sandbox = SandboxDirs(sandbox, network)
        self._sandboxed_jobs: dict[str, Job] = {}
        if truncation not in TRUNCATIONS:
            raise ValueError(f"truncation must be 'tail' or 'head_tail'; got {truncation!r}.")
        self._truncation: Truncation = truncation
        self._clean_output = clean_output
        self._non_interactive = non_interactive
        if strict_policy:
            require_parser()
        self._strict_policy = strict_policy

        if self._allowed_commands and self._denied_commands:
            raise ValueError('Specify allowed_commands or denied_commands, not both.')
        if max_output_chars <= 0:
            raise ValueError('max_output_chars must be a positive integer.')
        if unknown := sorted(set(self._tools) - set(SHELL_TOOL_NAMES)):
            raise ValueError(f'Unknown shell tools: {", ".join(unknown)}. Available: {", ".join(SHELL_TOOL_NAMES)}.')
        if PERSISTENT_TOOL_NAME in self._tools and not 0 < default_timeout <= MAX_FOREGROUND_WAIT:
            raise ValueError(
                f'default_timeout must be greater than zero and at most {MAX_FOREGROUND_WAIT:g} seconds '
                'for the shell tool.'
            )

        registrations: dict[str, Callable[..., Awaitable[str]]] = {
            'run_command': self.run_command,
            'start_command': self.start_command,
            'check_command': self.check_command,
            'stop_command': self.stop_command,
            PERSISTENT_TOOL_NAME: self.shell,
        }
        for name in SHELL_TOOL_NAMES:
            if name not in self._tools:
                continue
            metadata: dict[str, Any] = {}
            if name in ('run_command', 'start_command', PERSISTENT_TOOL_NAME):
                metadata = {'code_arg_name': 'command', 'code_arg_language': 'shell'}
            if name in ('run_command', PERSISTENT_TOOL_NAME):
                metadata['temporal'] = {'start_to_close_timeout': timedelta(seconds=MAX_FOREGROUND_WAIT + 30)}
            self.add_function(registrations[name], name=name, metadata=metadata or None)
        if interactive:
            sessions: dict[str, Callable[..., Awaitable[str]]] = {
                'start_session': self.start_session,
                'write_stdin': self.write_stdin,
                'read_session': self.read_session,
                'list_sessions': self.list_sessions,
                'list_commands': self.list_commands,
                'stop_session': self.stop_session,
            }
            for name in SESSION_TOOL_NAMES:
                metadata = {'code_arg_name': 'command', 'code_arg_language': 'shell'} if name == 'start_session' else {}
                self.add_function(sessions[name], name=name, metadata=metadata or None)

    def _copy(self) -> ShellToolset[AgentDepsT]:
        copy = ShellToolset[AgentDepsT](
            allowed_commands=self._allowed_commands,
            denied_commands=self._denied_commands,
            denied_operators=self._denied_operators,
            default_timeout=self._default_timeout,
            max_output_chars=self._max_output_chars,
            max_file_bytes=self._max_file_bytes,
            max_log_bytes=self._max_log_bytes,
            report_log_limit=self._report_log_limit,
            job_max_age=self._job_max_age,
            job_max_total_bytes=self._job_max_total_bytes,
            persist_cwd=self._persist_cwd,
            allow_interactive=self._allow_interactive,
            env=self._env,
            denied_env_patterns=self._denied_env_patterns,
            tools=self._tools,
            id=self.id,
            truncation=self._truncation,
            clean_output=self._clean_output,
            non_interactive=self._non_interactive,
            strict_policy=self._strict_policy,
            require_approval=self._require_approval,
            interactive=self._interactive,
        )
        copy._sessions = self._sessions
        copy._started_jobs = self._started_jobs
        copy._sandbox = self._sandbox
        copy._sandboxed_jobs = self._sandboxed_jobs
        return copy

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        """A fresh copy per run when `persist_cwd` tracks a directory (per-run state); else `self`."""
        return self._copy() if self._persist_cwd else self

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """No tools when the workspace cannot run commands (read-only); a run without a workspace fails."""
        if not ctx.workspace.attached:
            require_workspace(ctx.workspace, 'ShellToolset', ctx.messages)
        if not supports_commands(ctx.workspace):
            return {}
        tools = await super().get_tools(ctx)
        if self._interactive and local_backend(beneath_durable(ctx.workspace)) is None:
            # Sessions need a terminal on the host; a workspace reached by protocol offers none.
            # (A durable engine's wrapper is looked through: the tools run in its units, on the plain workspace.)
            tools = {name: tool for name, tool in tools.items() if name not in SESSION_TOOL_NAMES}
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        """Cap `str` results to the last `max_output_chars` chars (status and handles sit at the end).

        Each call is one durable unit under DBOS and Prefect, on the plain workspace (`durable/_units.py`).
        In a Temporal activity, where events cannot reach the run, the `shell` tool's events are
        recorded and carried out on the result, for workflow code to emit (`durable/_carried.py`).
        """
        from pydantic_ai_harness_rs.checkpoints._units import command as checkpointed

        parent = super()

        def call(unit: RunContext[AgentDepsT]) -> Awaitable[Any]:
            # `Checkpoints` inside the unit (a Temporal activity, a DBOS step): snapshot, call, record.
            return checkpointed(unit, lambda: parent.call_tool(name, tool_args, unit, tool))

        with recording() as recorded:
            result = await call_in_unit('Shell', name, ctx, call)
        if isinstance(result, str):
            result = truncate_tail(result, self._max_output_chars)
        return carry(result, recorded)

    def visit_and_replace(
        self, visitor: Callable[[AbstractToolset[AgentDepsT]], AbstractToolset[AgentDepsT]]
    ) -> AbstractToolset[AgentDepsT]:
        """`visitor(self)`; a durable engine's wrapper of this toolset (anything but `self`) inside
        `EventsDelivered`, which emits in workflow code the events a tool activity carried out."""
        replaced = visitor(self)
        return replaced if replaced is self else EventsDelivered(replaced)

    # --- configuration ----------------------------------------------------------------

    def _resolve_env(self) -> dict[str, str] | None:
        """What commands get on top of the workspace's environment; `None` adds nothing.

        `env` minus names matching `denied_env_patterns` (fnmatch, case-sensitive), over
        `NON_INTERACTIVE_ENV` with `non_interactive`, under the sandbox's `TMPDIR`.
        """
        modes = {**(NON_INTERACTIVE_ENV if self._non_interactive else {})}
        sandbox_env = self._sandbox.env()
        if self._env is None and not modes and not sandbox_env:
            return None
        env = {
            name: value
            for name, value in (self._env or {}).items()
            if not any(fnmatch.fnmatchcase(name, pattern) for pattern in self._denied_env_patterns)
        }
        return {**modes, **env, **sandbox_env}

    async def _native_sandbox(self, ctx: RunContext[AgentDepsT], working_dir: str) -> NativeSandbox | None:
        """The sandbox a local command runs in (`None` without one)."""
        if not self._sandbox.active:
            return None
        jobs_dir = await self._jobs_base(ctx) if self._sandbox.mode == 'read-only' else None
        return self._sandbox.native(working_dir, jobs_dir)

    def _remember_sandboxed_job(self, job: Job) -> None:
        """Note a sandboxed `shell` job by the targets its stop command names (`-PGID`, `PID`)."""
        self._sandboxed_jobs[str(job.pid)] = job
        if job.pgid is not None:
            self._sandboxed_jobs[f'-{job.pgid}'] = job

    async def _stop_sandboxed_job(self, command: str) -> str | None:
        """Stop a sandboxed `shell` job whose stop command (`kill -- -PGID`) the model runs; else `None`.

        Landlock's signal scope keeps each sandboxed command from signalling processes it did
        not start, so the kill command the `shell` tool names would fail (`EPERM`) in a new
        sandboxed command: the harness sends it instead, for a job this Shell started and only
        `TERM`, `KILL` or no signal named, and says so.
        """
        if not self._sandbox.active or (found := _KILL.fullmatch(command)) is None:
            return None
        signal_name = (found['signal'] or 'TERM').upper().removeprefix('SIG')
        job = self._sandboxed_jobs.get(found['target'])
        if job is None or signal_name not in ('TERM', 'KILL', '9', '15'):
            return None
        await job.kill()
        for key in [key for key, known in self._sandboxed_jobs.items() if known is job]:
            del self._sandboxed_jobs[key]
        return f'Stopped the process tree of PID {job.pid} (sent by the harness: a sandboxed command cannot signal processes it did not start).'

    def _decode(self, data: bytes) -> str:
        """Command output as text: cleaned with `clean_output`, else UTF-8 with U+FFFD (documented)."""
        return clean_text(data) if self._clean_output else data.decode('utf-8', errors='replace')

    async def _check_command(self, command: str) -> None:
        """`_check_command_now` on a worker thread when it can take long, so the event loop never waits on it.

        `strict_policy` parses the script (bounded by `STRICT_MAX_COMMAND_BYTES`); the first-word
        policy is linear and runs inline below `INLINE_CHECK_CHARS`.
        """
        if self._strict_policy or len(command) > INLINE_CHECK_CHARS:
            await anyio.to_thread.run_sync(self._check_command_now, command)
        else:
            self._check_command_now(command)

    def _check_command_now(self, command: str) -> None:
        """The documented checks; with `strict_policy`, the lists judge every command instead of the first word."""
        strict = self._strict_policy
        check_command(
            command,
            allowed=[] if strict else self._allowed_commands,
            denied=[] if strict else self._denied_commands,
            denied_operators=self._denied_operators,
            allow_interactive=self._allow_interactive,
        )
        if self._strict_policy:
            check_strict(
                command,
                allowed=self._allowed_commands,
                denied=self._denied_commands,
                allow_interactive=self._allow_interactive,
            )

    async def _approve(
        self, ctx: RunContext[AgentDepsT], tool: str, arguments: dict[str, Any], *, command: str, background: bool
    ) -> Call:
        """Ask for a person when `require_approval` says so (`_approval.gate`): raises `ApprovalRequired`
        with the command's metadata; on an approved call, the `Call` notes whether its arguments were changed."""
        call = Call(tool, arguments)
        if not self._approvals.enabled:
            return call
        cwd = await ctx.workspace.working_dir() if tool == PERSISTENT_TOOL_NAME else await self._cwd_for(ctx)
        metadata = await approval_gate(self._approvals, ctx, call, command=command, cwd=cwd, background=background)
        if metadata is not None:
            raise ApprovalRequired(metadata=metadata)
        return call

    def _log_limit_line(self) -> str:
        """With `report_log_limit`, the line saying `max_log_bytes` ('' without it or without a cap)."""
        if not self._report_log_limit or self._max_log_bytes is None:
            return ''
        return (
            f'Log limit: max_log_bytes={self._max_log_bytes}; a log that would grow past it is emptied, '
            'leaving a notice, while the command runs on.\n'
        )

    async def _prune_jobs(self, ctx: RunContext[AgentDepsT], local: LocalWorkspaceBackend | None) -> None:
        """`job_max_age` and `job_max_total_bytes` applied to the finished jobs of a local workspace."""
        if local is None or (self._job_max_age is None and self._job_max_total_bytes is None):
            return
        base = await self._jobs_base(ctx)
        await anyio.to_thread.run_sync(_core.job_prune, base, self._job_max_age, self._job_max_total_bytes)

    # --- working directory ------------------------------------------------------------

    async def _jobs_base(self, ctx: RunContext[AgentDepsT]) -> str:
        # Keyed by the local backend when there is one: each `Workspace` facade over it (one per
        # call in some callers) finds the directory made for the first.
        key = local_backend(ctx.workspace) or ctx.workspace
        if (jobs_dir := self._jobs_dirs.get(key)) is None:
            jobs_dir = self._jobs_dirs[key] = await metadata_dir(ctx.workspace, 'shell')
        return jobs_dir

    async def _cwd_state_path(self, ctx: RunContext[AgentDepsT]) -> str:
        assert ctx.run_id is not None
        run_key = hashlib.sha256(ctx.run_id.encode('utf-8')).hexdigest()
        return posixpath.join(await self._jobs_base(ctx), 'run-state', run_key)

    async def _cwd_for(self, ctx: RunContext[AgentDepsT]) -> str:
        """The absolute directory the next `run_command` / `start_command` starts in.

        Raises `ModelRetry` (and resets to the working directory) when the tracked directory
        is gone or no longer a directory, or the saved state of this run was lost.
        """
        state: str | None = None
        recorded: str | None = None
        if self._persist_cwd and ctx.run_id is not None:
            state = await self._cwd_state_path(ctx)
            try:
                recorded = (await ctx.workspace.read_bytes(state)).decode('utf-8')
            except FileNotFoundError:
                if self._cwd is not None and self._cwd_run_id == ctx.run_id:
                    self._cwd = None
                    raise ModelRetry('The saved working directory was lost; now in the workspace working directory.')
            except UnicodeDecodeError:
                pass
        else:
            recorded = self._cwd
        if recorded is not None:
            try:
                entry = await ctx.workspace.stat(recorded) if posixpath.isabs(recorded) else None
            except (FileNotFoundError, NotADirectoryError):
                entry = None
            if entry is None or not entry.is_dir:
                if state is not None:
                    await ctx.workspace.remove(state)
                self._cwd = None
                raise ModelRetry(f'The previous directory was removed; now in {await ctx.workspace.working_dir()}.')
            return recorded
        local = local_backend(ctx.workspace)
        if local is not None:
            return str(local._ensure_alive())  # pyright: ignore[reportPrivateUsage]
        return await ctx.workspace.working_dir()

    async def clear_run_cwd(self, ctx: RunContext[AgentDepsT]) -> None:
        """Remove the run's saved directory once its agent run ends."""
        if ctx.run_id is not None:
            try:
                await ctx.workspace.remove(await self._cwd_state_path(ctx))
            except FileNotFoundError:
                pass

    async def _build_cwd_capture(self, ctx: RunContext[AgentDepsT]) -> tuple[str, str | None]:
        """`(statement, file)`: a statement for the line before the command that records its final
        directory in a private file when the shell exits; `('', None)` without `persist_cwd`.

        An `EXIT` trap writes `pwd` out of band, so output cannot spoof it, and a command ending
        in `exit 0` is recorded too. The trap keeps the command's exit status. It goes on the
        `cd` line, so the command stays on the script's second line, as in the reference's
        wrapper, and the shell's messages carry the same line number (`/bin/sh: 2: ...`).
        """
        if not self._persist_cwd:
            return '', None
        name = posixpath.join(await self._jobs_base(ctx), f'cwd-{uuid.uuid4().hex}')
        record = shlex.quote(f'__harness_ec=$?; pwd > {shlex.quote(name)}; exit $__harness_ec')
        return f'; trap {record} EXIT', name

    async def _apply_captured_cwd(self, ctx: RunContext[AgentDepsT], cwd_file: str) -> None:
        try:
            recorded = (await ctx.workspace.read_bytes(cwd_file)).decode('utf-8').removesuffix('\n')
            if not posixpath.isabs(recorded):
                return
            if (await ctx.workspace.stat(recorded)).is_dir:
                normalized = posixpath.normpath(recorded)
                if ctx.run_id is None:
                    self._cwd = normalized
                else:
                    state = await self._cwd_state_path(ctx)
                    await ctx.workspace.make_dir(posixpath.dirname(state))
                    await ctx.workspace.write_bytes(state, normalized.encode('utf-8'))
                    self._cwd = normalized
                    self._cwd_run_id = ctx.run_id
        except (OSError, ValueError):
            return

    async def _remove_capture(self, ctx: RunContext[AgentDepsT], cwd_file: str | None) -> None:
        if cwd_file is None:
            return
        with anyio.move_on_after(CONTROL_TIMEOUT, shield=True):
            try:
                await ctx.workspace.remove(cwd_file)
            except FileNotFoundError:
                pass

    # --- running ----------------------------------------------------------------------

    async def _run_local(
        self, ctx: RunContext[AgentDepsT], local: LocalWorkspaceBackend, prologue: str, command: str, timeout: float
    ) -> _Outcome:
        """Run `prologue + command` with the supervisor.

        `max_file_bytes` is `RLIMIT_FSIZE` here, not a shell prologue; blank lines stand in for
        that prologue, so the command sits on the line it does in the reference's script.
        """
        working_dir = local._ensure_alive()  # pyright: ignore[reportPrivateUsage]
        limit = self._max_file_bytes
        if limit is not None and not _file_limit_applicable(limit):
            return _Outcome(1, None, _Stream.of(''), _Stream.of(f'{APPLY_FAILED}\n'), False)
        guard = await CommandGuard.start(ctx, self._jobs_base)  # a durable unit's command outlives its worker
        prologue = guard.mark(prologue) + '\n' * limit_prologue(limit).count('\n')
        env = env_bytes(local._env, self._resolve_env())  # pyright: ignore[reportPrivateUsage]
        sandbox = await self._native_sandbox(ctx, str(working_dir))
        tail_bytes = (self._max_output_chars + 4) * _BYTES_PER_CHAR
        spill: tuple[str | None, str | None] = (None, None)
        if self._truncation == 'head_tail':
            stem = posixpath.join(await self._jobs_base(ctx), f'output-{uuid.uuid4().hex}')
            spill = (f'{stem}-stdout.log', f'{stem}-stderr.log')
        try:
            exit_code, signal_number, timed_out, out, err = await foreground.run_captured(
                _core.ForegroundCommand(),
                os.fsencode(prologue),
                os.fsencode(command),
                working_dir,
                env,
                timeout,
                limit,
                tail_bytes,
                head_bytes=tail_bytes if self._truncation == 'head_tail' else 0,
                spill=spill,
                sandbox=sandbox,
                reap_descendants=True,
            )
        finally:
            guard.release()
        if not timed_out:
            # A directory deleted under a running command: the workspace is gone, not a result.
            local._ensure_alive()  # pyright: ignore[reportPrivateUsage]
        streams = [self._stream(captured, path) for captured, path in zip((out, err), spill)]
        return _Outcome(exit_code, signal_number, streams[0], streams[1], timed_out)

    def _stream(self, captured: tuple[bytes, bytes, int, int, bool, bool], path: str | None) -> _Stream:
        head, tail, size, lines, truncated, spilled = captured
        if not truncated:
            return _Stream(self._decode(head + tail), lines=lines, size=size, path=path, data=head + tail)
        text = self._decode(head)
        return _Stream(text + self._decode(tail), lines=lines, size=size, path=path if spilled else None, cut=len(text))

    async def _spill(self, ctx: RunContext[AgentDepsT], stream: _Stream) -> str | None:
        """The workspace-relative path of the file holding all of `stream`, written now if need be."""
        if stream.path is None:
            return None
        if stream.data is not None:
            try:
                await ctx.workspace.write_bytes(stream.path, stream.data)
            except OSError:
                return None
        return posixpath.relpath(stream.path, await ctx.workspace.working_dir())

    async def _format_output(self, ctx: RunContext[AgentDepsT], stdout: _Stream, stderr: _Stream, trailer: str) -> str:
        """The labelled result; with `truncation='head_tail'` fitted to `max_output_chars` by
        cutting the middle of stdout (and of stderr only when it alone would not fit)."""
        whole = labelled(stdout.text, stderr.text, empty='(no output)') + trailer
        if self._truncation != 'head_tail' or (len(whole) <= self._max_output_chars and stdout.cut is None):
            return whole
        overhead = len(labelled('x', 'x', empty=None)) - 2 + len(trailer)
        room = max(0, self._max_output_chars - overhead)
        err_text = stderr.text
        if len(err_text) > room * 3 // 4 or stderr.cut is not None:
            err_text = await self._cut(ctx, stderr, min(len(err_text), room // 2))
        out_text = await self._cut(ctx, stdout, max(0, room - len(err_text)))
        return labelled(out_text, err_text, empty='(no output)') + trailer

    async def _cut(self, ctx: RunContext[AgentDepsT], stream: _Stream, max_chars: int) -> str:
        if len(stream.text) <= max_chars and stream.cut is None:
            return stream.text
        path = await self._spill(ctx, stream)
        if stream.cut is None:
            return head_tail(stream.text, max_chars, lines=stream.lines, size=stream.size, path=path)
        head, tail = stream.text[: stream.cut], stream.text[stream.cut :]
        return head_tail(head + tail, max_chars, lines=stream.lines, size=stream.size, path=path, gap=len(head))

    @recoverable
    async def run_command(
        self, ctx: RunContext[AgentDepsT], command: str, *, timeout_seconds: float | None = None
    ) -> str:
        """Execute a shell command and return its output.

        Args:
            ctx: The current agent run context.
            command: The shell command to run.
            timeout_seconds: Maximum seconds to wait (default: 30).

        Returns:
            Labeled stdout/stderr output with exit code on non-zero exit.
        """
        await self._check_command(command)
        arguments = {'command': command, 'timeout_seconds': timeout_seconds}
        approval = await self._approve(ctx, 'run_command', arguments, command=command, background=False)
        return with_note(await self._run_command(ctx, command, timeout_seconds), approval)

    async def _run_command(self, ctx: RunContext[AgentDepsT], command: str, timeout_seconds: float | None) -> str:
        if (stopped := await self._stop_sandboxed_job(command)) is not None:
            return stopped
        timeout = timeout_seconds if timeout_seconds is not None else self._default_timeout
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise ModelRetry('timeout_seconds must be a positive number of seconds.')

        capture, cwd_file = await self._build_cwd_capture(ctx)
        try:
            prologue = f'cd {shlex.quote(await self._cwd_for(ctx))} || exit{capture}\n'
            local = local_backend(ctx.workspace)
            if local is not None:
                outcome = await self._run_local(ctx, local, prologue, command, timeout)
            else:
                limited = prologue + limit_prologue(self._max_file_bytes)
                try:
                    result = await run_model_command(
                        ctx.workspace, lambda cmd: limited + cmd, command, env=self._resolve_env(), timeout=timeout
                    )
                except WorkspaceTimeoutError as e:
                    streams = await self._remote(ctx, e.stdout, e.stderr)
                    outcome = _Outcome(0, None, *streams, True)
                else:
                    streams = await self._remote(ctx, result.stdout, result.stderr)
                    outcome = _Outcome(result.exit_code, None, *streams, False)
            exit_code, stdout, stderr = outcome.exit_code, outcome.stdout, outcome.stderr
            if outcome.timed_out:
                if self._truncation == 'head_tail':
                    return await self._format_output(ctx, stdout, stderr, f'\n[Command timed out after {timeout}s]')
                return labelled(stdout.text, stderr.text, empty=None, trailer=f'[Command timed out after {timeout}s]')
            if cwd_file is not None and exit_code == 0:
                await self._apply_captured_cwd(ctx, cwd_file)
            trailer = ''
            if exit_code != 0:
                named = signal_suffix(exit_code, outcome.signal) if self._clean_output else ''
                trailer = f'\n[exit code: {exit_code}{named}]' + file_limit_status(exit_code, self._max_file_bytes)
            return await self._format_output(ctx, stdout, stderr, trailer)
        finally:
            await self._remove_capture(ctx, cwd_file)

    async def _remote(self, ctx: RunContext[AgentDepsT], stdout: str, stderr: str) -> tuple[_Stream, _Stream]:
        """The streams a workspace returned as text (cleaned with `clean_output`)."""
        stem = None
        if self._truncation == 'head_tail':
            stem = posixpath.join(await self._jobs_base(ctx), f'output-{uuid.uuid4().hex}')
        streams: list[_Stream] = []
        for name, text in (('stdout', stdout), ('stderr', stderr)):
            data = text.encode('utf-8', errors='surrogateescape')
            if self._clean_output:
                text = clean_text(data)
            path = None if stem is None else f'{stem}-{name}.log'
            streams.append(_Stream(text, lines=data.count(b'\n'), size=len(data), path=path, data=data))
        return streams[0], streams[1]

    @recoverable
    async def shell(
        self,
        ctx: RunContext[AgentDepsT],
        command: str,
        *,
        mode: CommandMode = 'foreground',
        timeout: float | None = None,
    ) -> str:
        """Run a command that keeps running after this call and after the agent run.

        Foreground waits up to `timeout` seconds (at most 270) for the command to
        exit, then returns handles to the same still-running process. Background
        returns the handles immediately. Both return the PID, the path of the
        combined stdout/stderr log, and the path of a JSON status file whose
        `exit_code` is null until the command exits. Read those files with your
        other tools and stop the process with `kill` and the returned PID; no
        notification arrives when it finishes.

        Args:
            ctx: The current agent run context.
            command: The shell command to run.
            mode: `foreground` to wait, `background` to return at once.
            timeout: Seconds to wait in foreground mode (default: the configured timeout).
        """
        await self._check_command(command)
        arguments = {'command': command, 'mode': mode, 'timeout': timeout}
        approval = await self._approve(
            ctx, PERSISTENT_TOOL_NAME, arguments, command=command, background=mode == 'background'
        )
        return with_note(await self._shell(ctx, command, mode, timeout), approval)

    async def _shell(self, ctx: RunContext[AgentDepsT], command: str, mode: CommandMode, timeout: float | None) -> str:
        if (stopped := await self._stop_sandboxed_job(command)) is not None:
            return stopped
        local = local_backend(ctx.workspace)
        cwd = str(local._ensure_alive()) if local is not None else await ctx.workspace.working_dir()  # pyright: ignore[reportPrivateUsage]
        sandbox = await self._native_sandbox(ctx, cwd) if local is not None else None
        await self._prune_jobs(ctx, local)
        return await run_persistent_command(
            ctx,
            local,
            command,
            base=await self._jobs_base(ctx),
            cwd=cwd,
            env=self._resolve_env(),
            mode=mode,
            timeout=self._default_timeout if timeout is None else timeout,
            job_id=call_job_id(ctx.run_id, ctx.tool_call_id),
            log_limit=self._max_log_bytes,
            sandbox=sandbox,
            started=self._remember_sandboxed_job if sandbox is not None else None,
            log_limit_line=self._log_limit_line(),
        )

    @recoverable
    async def start_command(self, ctx: RunContext[AgentDepsT], command: str) -> str:
        """Start a long-running command in the background (e.g. a server or watcher).

        The command keeps running, after this run too, until it exits or
        `stop_command(command_id)` stops it; call `stop_command` when done to
        also remove its output files.

        Args:
            ctx: The current agent run context.
            command: The shell command to run in the background.

        Returns:
            A message containing the unique command ID for later check/stop calls.
        """
        await self._check_command(command)
        approval = await self._approve(ctx, 'start_command', {'command': command}, command=command, background=True)
        return with_note(await self._start_command(ctx, command), approval)

    async def _start_command(self, ctx: RunContext[AgentDepsT], command: str) -> str:
        local = local_backend(ctx.workspace)
        sandbox = None
        if local is not None:
            sandbox = await self._native_sandbox(ctx, str(local._ensure_alive()))  # pyright: ignore[reportPrivateUsage]
        base = await self._jobs_base(ctx)
        cwd = await self._cwd_for(ctx)
        await self._prune_jobs(ctx, local)
        job_id = call_job_id(ctx.run_id, ctx.tool_call_id)
        directory = job_directory(base, job_id)
        try:
            job = await launch(
                ctx.workspace,
                local,
                command,
                base=base,
                cwd=cwd,
                env=self._resolve_env(),
                combined=False,
                file_limit=self._max_file_bytes,
                log_limit=self._max_log_bytes,
                job_id=job_id,
                sandbox=sandbox,
                directory=directory,
            )
        except ModelRetry:
            raise  # nothing was started
        except BaseException:
            # Cancelled before the model could learn the ID: nothing could ever stop the job.
            await stop_launched(ctx.workspace, directory, None, combined=False, local=local is not None)
            raise
        if self._interactive:
            self._started_jobs[posixpath.basename(job.directory)] = StartedJob(command)
        return (
            f'Started background command: {command!r}\n{self._log_limit_line()}ID: {posixpath.basename(job.directory)}'
        )

    async def _tails(self, job: Job) -> tuple[str, str]:
        """The decoded tails of a job's stdout and stderr logs (cleaned with `clean_output`)."""
        max_bytes = self._max_output_chars * _BYTES_PER_CHAR
        if not self._clean_output:
            return await job.tails(max_bytes)
        stdout = await job.tail(job.output_path, max_bytes)
        stderr = await job.tail(job.stderr_path, max_bytes)
        return clean_text(stdout), clean_text(stderr)

    async def _on_job(self, ctx: RunContext[AgentDepsT], command_id: str, then: Callable[[Job], Awaitable[str]]) -> str:
        """`then(job)` on the background job `command_id` names, or the result an unknown ID gets."""
        job = None
        if _COMMAND_ID.fullmatch(command_id):
            directory = posixpath.join(await self._jobs_base(ctx), command_id)
            job = await attach(ctx.workspace, directory, combined=False, local=local_backend(ctx.workspace) is not None)
        if job is None:
            return f'[Error: unknown command ID {command_id!r}]'
        return await then(job)

    def _decode_tails(self, stdout: bytes, stderr: bytes) -> tuple[str, str]:
        """Log tails as text, cleaned with `clean_output` (as `_tails`)."""
        if self._clean_output:
            return clean_text(stdout), clean_text(stderr)
        return stdout.decode('utf-8', errors='replace'), stderr.decode('utf-8', errors='replace')

    async def _check(self, job: Job) -> str:
        running, exit_code, raw_out, raw_err = await job.snapshot(self._max_output_chars * _BYTES_PER_CHAR)
        stdout, stderr = self._decode_tails(raw_out, raw_err)
        parts = [labelled(stdout, stderr, empty='(no output yet)'), f'[status: {"running" if running else "finished"}]']
        if exit_code is not None:
            parts.append(f'[exit code: {exit_code}]' + file_limit_status(exit_code, self._max_file_bytes))
        return '\n'.join(parts)

    async def _stop(self, job: Job) -> str:
        # A job with a group is always signalled (what is left of it), so its status is read after.
        running = job.pgid is not None or (await job.status())[0]
        max_bytes = self._max_output_chars * _BYTES_PER_CHAR
        if running:
            with anyio.CancelScope(shield=True):
                killed, exit_code, raw_out, raw_err = await job.stop_and_read(max_bytes)
        else:
            killed = False
            _, exit_code, raw_out, raw_err = await job.snapshot(max_bytes)
        stdout, stderr = self._decode_tails(raw_out, raw_err)
        await job.cleanup()
        self._started_jobs.pop(posixpath.basename(job.directory), None)
        stopped = (
            f'[stopped: ignored SIGTERM, killed with SIGKILL after {KILL_GRACE_PERIOD:g}s]' if killed else '[stopped]'
        )
        parts = [labelled(stdout, stderr, empty='(no output)'), stopped]
        if exit_code is not None:
            parts.append(f'[exit code: {exit_code}]' + file_limit_status(exit_code, self._max_file_bytes))
        return '\n'.join(parts)

    @recoverable
    async def check_command(self, ctx: RunContext[AgentDepsT], command_id: str) -> str:
        """Check the status and recent output of a background command.

        Args:
            ctx: The current agent run context.
            command_id: The ID returned by start_command.

        Returns:
            Status and recent output of the background command.
        """
        return await self._on_job(ctx, command_id, self._check)

    @recoverable
    async def stop_command(self, ctx: RunContext[AgentDepsT], command_id: str) -> str:
        """Stop a background command and return its final output.

        Args:
            ctx: The current agent run context.
            command_id: The ID returned by start_command.

        Returns:
            Final output and exit status of the stopped command.
        """
        return await self._on_job(ctx, command_id, self._stop)

    # --- interactive sessions (`interactive=True`) -------------------------------------

    async def end_sessions(self, ctx: RunContext[AgentDepsT], *, in_workflow: bool = False) -> None:
        """Stop every session of the run `ctx` belongs to (called when the run ends).

        Relayed sessions (started in durable units, possibly by other workers) end when the run's
        session directory is removed: done here when this process drove some, or `in_workflow`
        (workflow code of a durable engine, where the activities' sessions are not in this table).
        """
        run = ctx.run_id or ''
        relayed_here = run in self._sessions.relayed_runs
        await self._sessions.end_run(run)
        if ctx.run_id is not None and (relayed_here or in_workflow):
            try:
                await ctx.workspace.remove(relayed.run_dir(await self._jobs_base(ctx), ctx.run_id))
            except FileNotFoundError:
                pass

    async def _emit(self, ctx: RunContext[AgentDepsT], event: Any) -> None:
        """`ctx.emit(event)`; nothing for a direct call outside a run (no event stream to emit into)."""
        try:
            await ctx.emit(event)
        except UserError:
            pass

    async def _session(self, ctx: RunContext[AgentDepsT], session_id: str) -> LiveSession:
        live = self._sessions.get(ctx.run_id or '', session_id)
        if live is None and relayed.relays_sessions(ctx.run_id):
            live = await self._find_relayed(ctx, str(session_id).strip())
        if live is None:
            raise ModelRetry(f'Unknown session ID {session_id!r}; `list_sessions` shows the sessions of this run.')
        return live

    async def _find_relayed(self, ctx: RunContext[AgentDepsT], session_id: str) -> LiveSession | None:
        """Relayed session `session_id` of the run, started by another process (a worker before a restart)."""
        assert ctx.run_id is not None
        size = (self._max_output_chars + 4) * _BYTES_PER_CHAR
        found = await relayed.find(await self._jobs_base(ctx), ctx.run_id, session_id, size, size)
        if found is None:
            return None
        if found == relayed.LOST:
            raise ModelRetry(
                f'Session {session_id} was lost: its relay process was killed, and the program was ended with it '
                '(exit code unknown). Start a new session with start_session.'
            )
        if isinstance(found, int):
            raise ModelRetry(
                f'Session {session_id} ended (exit code {found}) while its worker was restarted; what it printed '
                'last was not read. Start a new session.'
            )
        handle, command, call = found
        live = self._sessions.add(ctx.run_id, command, handle, number=int(session_id), relayed=True)
        live.call = call
        if live.is_shell and self._judges_lines():
            # A half-typed line the previous worker judged is not known here: clear it.
            await anyio.to_thread.run_sync(handle.write, b'\x15')
        return live

    async def _find_all_relayed(self, ctx: RunContext[AgentDepsT]) -> None:
        """Find the run's relayed sessions this process does not drive yet (for the lists)."""
        if not relayed.relays_sessions(ctx.run_id):
            return
        assert ctx.run_id is not None
        for session_id in relayed.session_ids(await self._jobs_base(ctx), ctx.run_id):
            if self._sessions.get(ctx.run_id, session_id) is None:
                try:
                    await self._find_relayed(ctx, session_id)
                except ModelRetry:
                    pass

    def _judges_lines(self) -> bool:
        """Whether a policy judges the lines typed into a shell session (some list or `strict_policy` is set)."""
        return bool(self._strict_policy or self._allowed_commands or self._denied_commands or self._denied_operators)

    async def _judge_session_command(self, command: str, *, shell_start: bool = False) -> None:
        """The command policy (and `strict_policy`) on a session's command or a line typed into a shell
        session; programs that want a terminal are what sessions are for, so they are not refused.

        `shell_start`: the command starts an interactive shell, which reads its commands from the
        terminal; `strict_policy` judges each line typed into it instead, and the shell itself by name.
        """
        if '\x00' in command:
            raise ModelRetry('The command contains a NUL byte, which cannot be passed to a process.')
        strict = self._strict_policy and not shell_start
        check = lambda: (  # noqa: E731
            check_command(
                command,
                allowed=[] if strict else self._allowed_commands,
                denied=[] if strict else self._denied_commands,
                denied_operators=self._denied_operators,
                allow_interactive=True,
            ),
            strict
            and check_strict(
                command, allowed=self._allowed_commands, denied=self._denied_commands, allow_interactive=True
            ),
        )
        if strict or len(command) > INLINE_CHECK_CHARS:
            await anyio.to_thread.run_sync(check)
        else:
            check()

    async def _session_output(
        self, ctx: RunContext[AgentDepsT], live: LiveSession, empty: str, *, header: str = ''
    ) -> str:
        """The output since the last read, as the model reads it, and the events it gives.

        The text is cut once, to leave room in `max_output_chars` for `header` and the status lines
        after it, so the result is never cut again (`call_tool`).
        """
        room = max(self._max_output_chars - len(header) - _SESSION_STATUS_ROOM, 1)
        output = live.handle.take_output(room)
        spill_path, cleared = output[8], output[9]
        path = None if spill_path is None else os.fspath(spill_path)
        shown = None if path is None else posixpath.relpath(path, await ctx.workspace.working_dir())
        text = render(output, room, shown, cleared_by=self._max_log_bytes)
        live.lines += text.count('\n')
        if text:
            await self._emit(ctx, CommandOutputEvent(text=text))
        code = live.handle.exit_code
        if (code is not None or live.handle.relay_lost) and not live.finished:
            live.finished = True
            await self._emit(
                ctx,
                CommandFinishedEvent(
                    pid=live.handle.pid,
                    output_path=path or '',
                    status_path='',
                    exit_code=code,
                    truncated=cleared,
                    total_lines=None if cleared else live.lines,
                ),
            )
        return (text or empty) + status_line(live)

    @recoverable
    async def start_session(
        self, ctx: RunContext[AgentDepsT], command: str, *, cols: int = 120, rows: int = 40, cwd: str | None = None
    ) -> str:
        """Start a program on a terminal for interactive use (a REPL, a prompt, a full-screen tool).

        Returns what the program printed until it waits for input (or 1 second). Drive it
        with `write_stdin`, read it with `read_session`, end it with `stop_session`; it ends
        with this run. A full-screen program is shown as its screen with its size and cursor.

        Args:
            ctx: The current agent run context.
            command: The command to run, e.g. `python3 -i`, `bash`, `git add -p`.
            cols: Terminal width in characters (20 to 1000).
            rows: Terminal height in lines (5 to 500).
            cwd: Directory to start in, inside the workspace, relative to the working directory (default: the working
                directory).

        Returns:
            `Session <id> started` and the first output.
        """
        await self._judge_session_command(command, shell_start=is_shell_program(command))
        arguments = {'command': command, 'cols': cols, 'rows': rows, 'cwd': cwd}
        approval = await self._approve(ctx, 'start_session', arguments, command=command, background=True)
        return with_note(await self._start_session(ctx, command, cols, rows, cwd), approval)

    async def _start_session(
        self, ctx: RunContext[AgentDepsT], command: str, cols: int, rows: int, cwd: str | None
    ) -> str:
        if not (MIN_SIZE[0] <= cols <= MAX_SIZE[0] and MIN_SIZE[1] <= rows <= MAX_SIZE[1]):
            raise ModelRetry(
                f'cols must be {MIN_SIZE[0]} to {MAX_SIZE[0]} and rows {MIN_SIZE[1]} to {MAX_SIZE[1]}; got {cols}x{rows}.'
            )
        local = local_backend(ctx.workspace)
        if local is None:  # the tool is not offered there; a stale call still gets an answer
            raise ModelRetry('Sessions need a local workspace.')
        base = await self._cwd_for(ctx)
        directory = base if cwd is None else posixpath.normpath(posixpath.join(base, cwd))
        if not os.path.isdir(directory):
            raise ModelRetry(f'cwd {cwd!r} is not a directory.')
        if cwd is not None:
            await _require_inside(ctx, str(local._ensure_alive()), directory, cwd)  # pyright: ignore[reportPrivateUsage]
        sandbox = await self._native_sandbox(ctx, str(local._ensure_alive()))  # pyright: ignore[reportPrivateUsage]
        extra = {**(self._resolve_env() or {}), 'TERM': (self._env or {}).get('TERM', SESSION_TERM)}
        env = env_bytes(local._env, extra)  # pyright: ignore[reportPrivateUsage]
        tail_bytes = (self._max_output_chars + 4) * _BYTES_PER_CHAR
        options = {'cols': cols, 'rows': rows, 'head_bytes': tail_bytes, 'tail_bytes': tail_bytes, 'sandbox': sandbox}
        if relayed.relays_sessions(ctx.run_id):
            # In a durable unit: a relay holds the terminal, so a new worker finds the session again.
            assert ctx.run_id is not None
            base = await self._jobs_base(ctx)
            await self._find_all_relayed(ctx)
            sessions = self._sessions.of_run(ctx.run_id)
            again = [s for s in sessions if s.relayed and ctx.tool_call_id and s.call == ctx.tool_call_id]
            if again:  # this call started it before its worker died: the retried call answers with it
                live = again[0]
                handle = live.handle
            else:
                taken = [int(i) for i in relayed.session_ids(base, ctx.run_id)]
                number = max([self._sessions.counters.get(ctx.run_id, 0), *taken]) + 1
                handle = await relayed.start(
                    base, ctx.run_id, str(number), command, directory, env, call=ctx.tool_call_id, **options
                )
                live = self._sessions.add(ctx.run_id, command, handle, number=number, relayed=True)
                live.call = ctx.tool_call_id
        else:
            # In-process: long output is spilled to a file as the shell tools' is (a relayed session keeps none).
            spill_dir = await self._jobs_base(ctx)
            spill_after = max(self._max_output_chars - _SESSION_STATUS_ROOM, 1)
            handle = await anyio.to_thread.run_sync(
                lambda: _core.Session.start(
                    os.fsencode(command),
                    directory,
                    env,
                    **options,  # pyright: ignore[reportArgumentType]
                    spill_dir=spill_dir,
                    spill_after=spill_after,
                    max_log_bytes=self._max_log_bytes,
                )
            )
            live = self._sessions.add(ctx.run_id or '', command, handle)
        await self._emit(ctx, CommandStartedEvent(tool_call_id=ctx.tool_call_id, command=command, pid=handle.pid))
        await wait_session(handle, None, True, DEFAULT_YIELD_SECONDS)
        header = f'Session {live.id} started: {command!r}\n'
        return header + await self._session_output(ctx, live, '(no output yet)', header=header)

    @recoverable
    async def write_stdin(
        self, ctx: RunContext[AgentDepsT], id: str, text: str, *, yield_seconds: float = DEFAULT_YIELD_SECONDS
    ) -> str:
        """Type text into a session, then return its output since the last read.

        Keys are characters in `text`: `\\n` is Enter, `\\t` Tab, `\\x03` C-c (interrupt),
        `\\x04` C-d (end of input), `\\x1b` Escape, `\\x7f` Backspace; arrows are `\\x1b[A`
        (up), `\\x1b[B` (down), `\\x1b[C` (right), `\\x1b[D` (left). Nothing is added: end a
        line with `\\n` to submit it. In a shell session (`bash`, `sh`, ...) under a command policy,
        only printable text, `\\n`, `\\t`, `\\x03` and `\\x04` on an empty line are accepted, and no
        history expansion (`!!`, `!word`, `^old^new`).

        Args:
            ctx: The current agent run context.
            id: The session ID from start_session.
            text: The keys to send.
            yield_seconds: Seconds to wait for output at most (sooner when the program waits for input).

        Returns:
            The output since the last read.
        """
        live = await self._session(ctx, id)
        if not (isinstance(yield_seconds, (int, float)) and math.isfinite(yield_seconds) and 0 <= yield_seconds <= 300):
            raise ModelRetry('yield_seconds must be 0 to 300 seconds.')
        if '\x00' in text:
            raise ModelRetry('The text contains a NUL byte; a terminal cannot send it.')
        if live.is_shell:
            if self._judges_lines() and (why := refused_keys(live.line, text)):
                raise ModelRetry(why)
            lines, pending = typed_lines(live.line, text)
            for line in lines:
                if line.strip():
                    try:
                        await self._judge_session_command(line)
                    except (PermissionError, ModelRetry):
                        if live.line:
                            await anyio.to_thread.run_sync(live.handle.write, b'\x15')  # clear the half-typed line
                            live.line = ''
                        raise
            live.line = pending
        try:
            await anyio.to_thread.run_sync(live.handle.write, text.encode('utf-8', errors='surrogateescape'))
        except _core.RetryableError as e:
            raise ModelRetry(str(e)) from e
        await wait_session(live.handle, None, True, yield_seconds)
        return await self._session_output(ctx, live, '(no new output)')

    @recoverable
    async def read_session(
        self, ctx: RunContext[AgentDepsT], id: str, *, wait_for: str | None = None, timeout_seconds: float = 10
    ) -> str:
        """Return a session's output since the last read.

        Args:
            ctx: The current agent run context.
            id: The session ID from start_session.
            wait_for: A regular expression to wait for in the new (raw) output first; also stops waiting when the program exits.
            timeout_seconds: Seconds to wait for `wait_for` at most.

        Returns:
            The output since the last read.
        """
        live = await self._session(ctx, id)
        note = ''
        if wait_for is not None:
            if not (
                isinstance(timeout_seconds, (int, float)) and math.isfinite(timeout_seconds) and timeout_seconds >= 0
            ):
                raise ModelRetry('timeout_seconds must be a non-negative number of seconds.')
            try:
                woke = await wait_session(live.handle, wait_for, False, min(timeout_seconds, MAX_FOREGROUND_WAIT))
            except _core.RetryableError as e:
                raise ModelRetry(str(e)) from e
            if woke == 'timed_out':
                note = f'\n[{wait_for!r} did not appear within {timeout_seconds:g}s]'
        return await self._session_output(ctx, live, '(no new output)', header=note) + note

    @recoverable
    async def list_sessions(self, ctx: RunContext[AgentDepsT]) -> str:
        """List this run's sessions: ID, command, state, exit code, runtime, bytes of output.

        Args:
            ctx: The current agent run context.
        """
        await self._find_all_relayed(ctx)
        rows = [session_row(live) for live in self._sessions.of_run(ctx.run_id or '')]
        return '\n'.join(rows) or 'No sessions.'

    @recoverable
    async def list_commands(self, ctx: RunContext[AgentDepsT]) -> str:
        """List this run's sessions and the background commands started with start_command and not yet stopped:
        ID, command, state, exit code, runtime, bytes of output.

        Args:
            ctx: The current agent run context.
        """
        await self._find_all_relayed(ctx)
        rows = [session_row(live) for live in self._sessions.of_run(ctx.run_id or '')]
        base = await self._jobs_base(ctx)
        local = local_backend(ctx.workspace) is not None
        for job_id, started in list(self._started_jobs.items()):
            job = await attach(ctx.workspace, posixpath.join(base, job_id), combined=False, local=local)
            if job is None:
                self._started_jobs.pop(job_id, None)
                continue
            running, exit_code = await job.status()
            size = await job.size(job.output_path) + await job.size(job.stderr_path)
            rows.append(job_row(job_id, started, running, exit_code, size))
        return '\n'.join(rows) or 'No sessions or background commands.'

    @recoverable
    async def stop_session(self, ctx: RunContext[AgentDepsT], id: str) -> str:
        """Stop a session's program and everything it started, and return its last output.

        Args:
            ctx: The current agent run context.
            id: The session ID from start_session.

        Returns:
            The output since the last read and how the program ended.
        """
        live = await self._session(ctx, id)
        exited = live.handle.exit_code is not None
        killed, output = False, ''
        with anyio.CancelScope(shield=True):
            killed = await anyio.to_thread.run_sync(live.handle.stop, KILL_GRACE_PERIOD)
            output = await self._session_output(ctx, live, '(no new output)')
            self._sessions.remove(ctx.run_id or '', live)
            if live.relayed and ctx.run_id is not None:
                await relayed.forget(await self._jobs_base(ctx), ctx.run_id, live.id)
        if live.handle.relay_lost:
            return output  # its status line tells what happened and what to do
        if exited:
            stopped = '[had already exited]'
        elif killed:
            stopped = f'[stopped: ignored SIGTERM, killed with SIGKILL after {KILL_GRACE_PERIOD:g}s]'
        elif live.handle.exit_code == _KILLED_EXIT_CODE:
            # An interactive shell left the program's group (job control): it was killed as a
            # descendant outside the group, and the program reports it so.
            stopped = '[stopped: killed with SIGKILL]'
        else:
            stopped = '[stopped]'
        return f'{output.removesuffix(status_line(live))}\n{stopped}' + (
            '' if live.handle.exit_code is None else f'\n[exit code: {live.handle.exit_code}]'
        )
