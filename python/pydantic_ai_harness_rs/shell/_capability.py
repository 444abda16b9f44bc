"""`Shell`: the capability that gives an agent command execution in its run's workspace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from pydantic_ai.capabilities import AbstractCapability, WrapRunHandler
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import AgentDepsT, RunContext

from pydantic_ai_harness_rs._warn import warn_cwd_ignored
from pydantic_ai_harness_rs.shell._jobs import CONTROL_TIMEOUT
from pydantic_ai_harness_rs.shell._toolset import RUN_SCOPED_TOOL_NAMES, ShellToolset
from pydantic_ai_harness_rs.shell._workspace import require_workspace

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

    Must be positive; `None` disables it. Checked once a second while the command runs and once more
    when it ends (0.61's contract), so the disk holds at most about a second's output beyond it, even
    for a command that reads its own log. A foreground `shell` call whose log was emptied reports
    `truncated=True` and `total_lines=None` in its `CommandFinishedEvent`.
    """

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

    _toolset: ShellToolset[AgentDepsT] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Resolve the built-in denylist according to the selected policy (the toolset validates later)."""
        if self.cwd is not None:
            warn_cwd_ignored('Shell')
        if self.denied_commands is _DEFAULT_DENIED_COMMANDS:
            self.denied_commands = [] if self.allowed_commands else list(_DEFAULT_DENIED_COMMANDS)

    async def wrap_run(self, ctx: RunContext[AgentDepsT], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        result = await handler()
        if self.persist_cwd and ctx.run_id is not None:
            with anyio.move_on_after(CONTROL_TIMEOUT, shield=True):
                await self.get_toolset().clear_run_cwd(ctx)
        return result

    async def before_run(self, ctx: RunContext[AgentDepsT]) -> None:
        """Fail the run at its start when it has no workspace to run commands in."""
        require_workspace(ctx.workspace, 'Shell', ctx.messages)

    def get_toolset(self) -> ShellToolset[AgentDepsT]:
        """The shell toolset, built once; its `for_run` gives each run a fresh copy."""
        if self._toolset is None:
            self._toolset = ShellToolset[AgentDepsT](
                allowed_commands=self.allowed_commands,
                denied_commands=self.denied_commands,
                denied_operators=self.denied_operators,
                default_timeout=self.default_timeout,
                max_output_chars=self.max_output_chars,
                max_file_bytes=self.max_file_bytes,
                max_log_bytes=self.max_log_bytes,
                persist_cwd=self.persist_cwd,
                allow_interactive=self.allow_interactive,
                env=self.env,
                denied_env_patterns=self.denied_env_patterns,
                tools=self.tools,
                id=self.id or 'shell',
            )
        return self._toolset
