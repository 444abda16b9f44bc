"""Command policy: which commands may run, and which failures the model can act on.

Best effort, not a security boundary: only the first shell word is checked, and allowed
programs can start anything.
"""

from __future__ import annotations

import errno
import functools
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Concatenate, ParamSpec, TypeVar

from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.workspaces import CommandResult, Workspace, WorkspaceError

from pydantic_ai_harness_rs._core import COMMAND_TOO_LONG, CommandTooLongError
from pydantic_ai_harness_rs.shell._words import first_word
from pydantic_ai_harness_rs.shell._workspace import raise_tool_failure

_P = ParamSpec('_P')
_SelfT = TypeVar('_SelfT')

_INTERACTIVE = re.compile(r'(?:(?:vi|vim|nano|emacs|less|more|top|htop|man)\b|sudo\s|passwd\b|ssh\b|telnet\b|ftp\b)')
"""Programs that want a terminal, matched at the start of the stripped command."""

_RECOVERABLE_ERRNOS: dict[int | None, str] = {
    errno.ENOENT: 'The working directory no longer exists.',
    errno.ENOTDIR: 'The working directory is no longer a directory.',
}
"""Spawn errors the model caused (its command removed the directory), with what it is told."""


def is_interactive_command(command: str) -> bool:
    """Whether `command` starts with a program that expects a TTY (`vi`, `sudo`, `ssh`, ...)."""
    return _INTERACTIVE.match(command.strip()) is not None


def check_command(
    command: str,
    *,
    allowed: Sequence[str],
    denied: Sequence[str],
    denied_operators: Sequence[str],
    allow_interactive: bool,
) -> None:
    """Validate `command` before it runs.

    Raises `ModelRetry` for a command no process can receive (a NUL byte, characters the OS
    cannot encode) and `PermissionError` for a policy refusal (interactive program, denied
    operator, denied or not-allowed executable), which `recoverable` turns into `ModelRetry`.
    The executable is the first word as `shlex.split` reads it (found in linear time, so a
    command of megabytes is judged at once); an unparsable command is left to the shell.
    """
    if '\x00' in command:
        raise ModelRetry('The command contains a NUL byte, which cannot be passed to a process.')
    try:
        os.fsencode(command)
    except UnicodeEncodeError as e:
        raise ModelRetry('The command contains characters that cannot be encoded for the operating system.') from e
    if not allow_interactive and is_interactive_command(command):
        raise PermissionError(f'Interactive commands are not allowed. Command: {command!r}')
    for operator in denied_operators:
        if operator in command:
            raise PermissionError(f'Shell operator {operator!r} is not allowed.')
    try:
        executable = first_word(command)
    except ValueError:
        return
    if executable is None:
        return
    if denied and executable in denied:
        raise PermissionError(f'Command {executable!r} is denied.')
    if allowed and executable not in allowed:
        raise PermissionError(f'Command {executable!r} is not in the allowed list.')


async def run_model_command(
    workspace: Workspace,
    invocation: Callable[[str], str | list[str]],
    command: str,
    *,
    env: Mapping[str, str] | None,
    timeout: float | None,
) -> CommandResult:
    """`workspace.run(invocation(command))`; `E2BIG` becomes `ModelRetry` when the command is the cause.

    `invocation` wraps the model's command in the toolset's own script (a `str` runs with
    `shell=True`) or argv. The OS refuses arguments plus environment as a whole (`E2BIG`), so
    the same invocation without the command is handed to `true`, which starts nothing: when it
    starts, the command was too long and the model is asked for a shorter one
    (`COMMAND_TOO_LONG`, the local supervisor's text too); when it fails as well, the
    environment alone is too big and the original `OSError` aborts the run.
    """
    script = invocation(command)
    try:
        return await workspace.run(script, shell=isinstance(script, str), env=env, timeout=timeout)
    except OSError as error:
        if error.errno != errno.E2BIG:
            raise
        without = invocation('')
        try:
            await workspace.run(
                ['true', *([without] if isinstance(without, str) else without)], env=env, timeout=timeout
            )
        except OSError:
            raise error from None
        raise ModelRetry(COMMAND_TOO_LONG) from error


def recoverable(
    fn: Callable[Concatenate[_SelfT, _P], Awaitable[str]],
) -> Callable[Concatenate[_SelfT, _P], Awaitable[str]]:
    """Turn failures the model can act on into `ModelRetry` and workspace refusals into `ToolFailed`.

    `WorkspaceError` first (a read-only refusal is also a `PermissionError`): it becomes a failed
    call, or ends the run when the workspace is gone. A policy refusal (`PermissionError`), a
    spawn error of the model's making (`ENOENT`, `ENOTDIR`) and a command the OS refuses as too
    long (`CommandTooLongError` from the supervisor) become `ModelRetry`; any other error
    (`EMFILE`, `ENOMEM`, an environment too big on its own, an invalid application `env`)
    aborts the run.
    """

    @functools.wraps(fn)
    async def wrapper(self: _SelfT, *args: _P.args, **kwargs: _P.kwargs) -> str:
        try:
            return await fn(self, *args, **kwargs)
        except CommandTooLongError as e:
            raise ModelRetry(str(e)) from e
        except WorkspaceError as e:
            raise_tool_failure(e)
        except PermissionError as e:
            raise ModelRetry(str(e)) from e
        except OSError as e:
            reason = _RECOVERABLE_ERRNOS.get(e.errno)
            if reason is None:
                raise
            raise ModelRetry(reason) from e

    return wrapper
