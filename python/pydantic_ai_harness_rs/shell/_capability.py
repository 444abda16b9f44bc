"""`Shell`: the capability that gives an agent command execution in its run's workspace.

Its configuration, validated at construction, the checks at the start of a run, and the toolset it builds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from pydantic_ai.capabilities import AbstractCapability, WrapRunHandler
from pydantic_ai.exceptions import UserError
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import AgentDepsT, RunContext

from pydantic_ai_harness_rs._approvals import forget_denied
from pydantic_ai_harness_rs._sandbox import adopt_host_modules, in_workflow_sandbox
from pydantic_ai_harness_rs._settings import passed_on
from pydantic_ai_harness_rs._warn import warn_cwd_ignored
from pydantic_ai_harness_rs.durable._listeners import as_workflow_failure
from pydantic_ai_harness_rs.shell._approval import APPROVAL_TOOL_NAMES, CommandPredicate
from pydantic_ai_harness_rs.shell._approval import checked as checked_approvals
from pydantic_ai_harness_rs.shell._jobs import CONTROL_TIMEOUT
from pydantic_ai_harness_rs.shell._modes import Truncation
from pydantic_ai_harness_rs.shell._sandbox import SandboxMode, validate_sandbox
from pydantic_ai_harness_rs.shell._toolset import RUN_SCOPED_TOOL_NAMES, ShellToolset
from pydantic_ai_harness_rs.shell._workspace import local_backend, require_workspace

_DEFAULT_DENIED_COMMANDS: tuple[str, ...] = (
    'rm',
    'rmdir',
    'mkfs',
    'dd',
    'format',
    'shutdown',
    'reboot',
    'halt',
    'poweroff',
    'init',
)
"""The built-in denylist of destructive commands."""

LLM_API_KEY_ENV_PATTERNS: tuple[str, ...] = (
    'ANTHROPIC_*',
    'GATEWAY_*',
    'GEMINI_*',
    'GOOGLE_*',
    'OPENAI_*',
    'OPENROUTER_*',
    'PYDANTIC_AI_GATEWAY_API_KEY',
)
"""`fnmatch` patterns of common LLM provider credentials, for `denied_env_patterns`.

Filters only `Shell(env=...)`: the workspace decides the rest of a command's environment (a
local workspace passes on only `PATH`, `HOME`, `LANG`, `LC_ALL`, `LC_CTYPE` and its own `env`).
Provider prefixes only, and coarse (`GOOGLE_*` also drops `GOOGLE_APPLICATION_CREDENTIALS`):
a starting point, not a default.
"""


@dataclass
class Shell(AbstractCapability[AgentDepsT]):
    """Shell command execution for agents.

    Commands run in the run's workspace (`ctx.workspace`), starting in its working directory;
    a run without a workspace fails at its start, and a read-only workspace gets no tools.
    With `LocalWorkspace`, a Rust supervisor runs them (own session, stdin at EOF, bounded
    capture, process-group timeouts); any other workspace is reached through its protocol.

    Not a security boundary: a command reaches whatever the workspace lets it. Isolate
    untrusted work with a sandbox workspace.

    Raises `ValueError` when its toolset is built (by `Agent(...)`) for: non-empty `allowed_commands` and
    `denied_commands` together, a non-positive `max_output_chars`, `max_file_bytes` or `max_log_bytes`,
    `max_file_bytes` with `persist_cwd` or the `shell` tool, unknown tool names, and with
    `tools=['shell']` a `default_timeout` outside (0, 270].
    """

    cwd: str | Path | None = None
    """Deprecated and ignored: commands start in the workspace's working directory.

    Set the working directory on the workspace instead, e.g. `LocalWorkspace('./repo')`.
    """

    allowed_commands: Sequence[str] = field(default_factory=list[str])
    """If non-empty, only these command names may be executed (allowlist)."""

    denied_commands: Sequence[str] = _DEFAULT_DENIED_COMMANDS
    """These command names are always rejected (denylist).

    Defaults to blocking destructive commands (rm, dd, shutdown, etc.). Set to an empty list to disable.
    """

    denied_operators: Sequence[str] = field(default_factory=list[str])
    """Shell operators that are blocked (e.g. '>', '>>', '|' for restrictive mode)."""

    default_timeout: float = 30.0
    """Default timeout in seconds for command execution."""

    max_output_chars: int = 50_000
    """Maximum characters of output returned to the model. Must be positive."""

    max_file_bytes: int | None = field(default=None, kw_only=True)
    """Optional per-file size limit in bytes for `run_command` and `start_command`, not total disk usage.

    Must be positive. Rounded up to whole 512-byte blocks, as `ulimit -f` in POSIX `sh`; set as
    `RLIMIT_FSIZE` before exec on a local workspace. `persist_cwd` and the `shell` tool are rejected.
    """

    max_log_bytes: int | None = field(default=100_000_000, kw_only=True)
    """Bytes past which the log of a background command or a `shell` call is emptied, leaving the notice
    `[Log exceeded max_log_bytes=<n>; earlier output was cleared.]`; the command keeps running.

    Must be positive; `None` disables it. On a local workspace the cap holds as the log is written:
    a log never holds more than `max(max_log_bytes, the notice)` bytes, however fast the command
    writes or if it reads its own log (a write that would pass the cap empties the log, and goes
    with it). Any other workspace checks once a second while the command runs and once more when
    it ends (0.61's contract). A foreground `shell` call whose log was emptied reports
    `truncated=True` and `total_lines=None` in its `CommandFinishedEvent`.
    """

    report_log_limit: bool = field(default=False, kw_only=True)
    """Say `max_log_bytes` in the results of `start_command` and of the `shell` tool (a
    `Log limit: ...` line before the ID or the handles), so the model knows its log can be
    emptied. Off by default: those results are the reference's."""

    job_max_age: float | None = field(default=None, kw_only=True)
    """Seconds after which a finished background job's directory (its logs and status) is removed,
    checked whenever a command is started in the background (`start_command`, `shell`); local
    workspaces only. Jobs still running are never removed. `None` (default, as the reference):
    never; a removed job's ID then reads as unknown to `check_command`."""

    job_max_total_bytes: int | None = field(default=None, kw_only=True)
    """Bytes the finished background jobs' directories may hold together; past it the oldest
    finished jobs are removed, when a command is started in the background; local workspaces only.
    Must be positive; `None` (default, as the reference): no limit."""

    persist_cwd: bool = False
    """If True, track cd commands and adjust the working directory for subsequent calls."""

    allow_interactive: bool = False
    """If True, allow interactive commands (vi, nano, ssh, etc.). Blocked by default."""

    env: Mapping[str, str] | None = None
    """Variables added to every command's environment, on top of the workspace's own.

    Commands get exactly the workspace's environment plus these, minus names matching
    `denied_env_patterns`.
    """

    denied_env_patterns: Sequence[str] = field(default_factory=list[str])
    """Glob patterns (`fnmatch`, e.g. `OPENAI_*`) for names dropped from `env`; see `LLM_API_KEY_ENV_PATTERNS`."""

    tools: Sequence[str] = RUN_SCOPED_TOOL_NAMES
    """Which tools to register, from `SHELL_TOOL_NAMES` (default `RUN_SCOPED_TOOL_NAMES`; `['shell']`
    for the persistent tool)."""

    sandbox: SandboxMode | None = field(default=None, kw_only=True)
    """Confine local commands and everything they start with Linux Landlock (not in the reference).

    `'workspace-write'`: read anywhere, write only beneath the workspace directory and a private
    temporary directory (`TMPDIR` points there); `'read-only'`: write only to that temporary
    directory (and the job files under `.pydantic-ai-harness/shell/`). `None` (default): no
    sandbox. Raises `ValueError` at construction when the kernel lacks Landlock; a run whose
    workspace is not a `LocalWorkspace` fails at its start (the sandbox is then the workspace's).
    """

    network: bool = field(default=True, kw_only=True)
    """`False` denies local commands TCP `bind`/`connect` (loopback included) and abstract UNIX
    sockets, with Landlock (ABI 4+, Linux 6.7+; `ValueError` at construction otherwise). Local
    workspaces only, like `sandbox`."""

    truncation: Truncation = field(default='tail', kw_only=True)
    """`'tail'` (default, documented): an over-long result keeps its end. `'head_tail'`: `run_command`
    keeps the start and the end of stdout (stderr and the `[exit code: N]` trailer stay whole when
    they fit), around a marker with the original size in lines and bytes that names the file under
    `.pydantic-ai-harness/shell/` holding the whole stream."""

    clean_output: bool = field(default=False, kw_only=True)
    """Clean command output for the model: carriage-return progress frames collapse to the last
    frame, ANSI escape sequences are removed, bytes that are not UTF-8 appear as `\\xNN` (not
    U+FFFD), and a command a signal ended reads `[exit code: 137 (SIGKILL)]`."""

    non_interactive: bool = field(default=False, kw_only=True)
    """Give commands an environment where nothing waits for a person (`NON_INTERACTIVE_ENV`:
    pagers `cat`, editors `true`, git/ssh prompts off, `DEBIAN_FRONTEND=noninteractive`, ...),
    beneath `env`."""

    strict_policy: bool = field(default=False, kw_only=True)
    """Judge every command the script would run against `allowed_commands` / `denied_commands`,
    however spelled (`/bin/rm`, `r\\m`, `;rm`, `$(rm)`, `env rm`, `timeout 5 rm`, `sh -c 'rm'`, ...),
    with a bash parser (needs the `strict-policy` extra); an unparsable command is refused."""

    require_approval: bool | Sequence[str] | CommandPredicate = field(default=False, kw_only=True)
    """Which commands need a person, through Pydantic AI's deferred tools: `False` (none), `True`
    (every `run_command`, `start_command` and `shell` call, and `start_session` with `interactive`), a list of command names (a command
    needs a person when any command its script would run is named, by name or basename, as
    `strict_policy` finds them; a script that cannot be judged needs one too), or a callable of one
    positional argument, the `PlannedCommand` (sync or async; another signature is a `TypeError` at
    construction; one that raises fails closed: the command needs a person, with
    `approval_check_error` in the metadata and a warning logged). Asked after the command policy let the command through
    and before it starts: the call raises `ApprovalRequired` with metadata `tool_name`, `command`,
    `cwd`, `background`, `arguments_digest`, and the run ends with `DeferredToolRequests` (the
    agent's `output_type` must allow it). `ToolApproved()` runs it, `ToolApproved(override_args=...)`
    runs the person's command and tells the model, `ToolDenied(message)` runs nothing (and removes
    the request's record).
    `check_command` and `stop_command` never ask. Beyond both references (issue 21)."""

    interactive: bool = field(default=False, kw_only=True)
    """Add the interactive-session tools (`start_session`, `write_stdin`, `read_session`, `list_sessions`,
    `list_commands`, `stop_session`): programs on a pseudo-terminal (REPLs, prompts, full-screen tools) that
    the model drives key by key. Every session ends when its run ends. Local workspaces only: elsewhere the
    tools are absent. Off by default: the documented tools are unchanged."""

    _toolset: ShellToolset[AgentDepsT] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Resolve the built-in denylist according to the selected policy (the toolset validates later)."""
        adopt_host_modules()  # built in a Temporal workflow sandbox: its modules are the host's
        if self.cwd is not None:
            warn_cwd_ignored('Shell')
        if self.denied_commands is _DEFAULT_DENIED_COMMANDS:
            self.denied_commands = [] if self.allowed_commands else list(_DEFAULT_DENIED_COMMANDS)
        validate_sandbox(self.sandbox, self.network)
        checked_approvals(self.require_approval)

    async def wrap_run(self, ctx: RunContext[AgentDepsT], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        try:
            result = await handler()
        finally:
            if self.interactive:
                await self.get_toolset().end_sessions(ctx, in_workflow=in_workflow_sandbox())
        if self.persist_cwd and ctx.run_id is not None:
            with anyio.move_on_after(CONTROL_TIMEOUT, shield=True):
                await self.get_toolset().clear_run_cwd(ctx)
        return result

    async def on_run_error(self, ctx: RunContext[AgentDepsT], *, error: BaseException) -> AgentRunResult[Any]:
        """Raise `error`; under Temporal, a listener's exception as the non-retryable `ApplicationError`
        that fails the workflow once instead of its task forever (`durable/_listeners.py`)."""
        raise as_workflow_failure(error)

    async def before_run(self, ctx: RunContext[AgentDepsT]) -> None:
        """Fail the run at its start when it has no workspace to run commands in."""
        require_workspace(ctx.workspace, 'Shell', ctx.messages)
        if (self.sandbox is not None or not self.network) and local_backend(ctx.workspace) is None:
            field_name = 'sandbox' if self.sandbox is not None else 'network'
            raise UserError(
                f'`Shell({field_name}=...)` confines commands on a `LocalWorkspace` only; this workspace '
                'runs them elsewhere, so isolating them is its business. Remove the field or use a local workspace.'
            )

    async def before_model_request(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """With `require_approval`: remove the records of the commands a resume just denied (`ToolDenied`);
        not in Temporal workflow code, where no I/O may run (those records are pruned after 30 days)."""
        if self.require_approval is not False and not in_workflow_sandbox():
            await forget_denied(ctx, ctx.workspace, (*APPROVAL_TOOL_NAMES, 'start_session'))
        return request_context

    def get_toolset(self) -> ShellToolset[AgentDepsT]:
        """The shell toolset, built once; its `for_run` gives each run a fresh copy."""
        if self._toolset is None:
            # `cwd` stays here: ignored, with a warning at construction.
            settings = passed_on(self, ShellToolset, besides={'cwd', 'id'})
            self._toolset = ShellToolset[AgentDepsT](id=self.id or 'shell', **settings)
        return self._toolset
