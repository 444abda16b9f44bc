"""`Shell(require_approval=...)`: a command that needs a person ends the run with a
`DeferredToolRequests` carrying the command, and runs when a later run approves it.

`run_command`, `start_command` and `shell` ask after the command policy passed it and before
anything starts; `check_command` and `stop_command` never ask. A list of command names is
judged as `strict_policy` judges commands: every command the script would run counts
(pipelines, lists, `$(...)`, `sh -c`, wrappers such as `env` or `timeout`), by its name or its
basename; a script that cannot be judged (a name computed at run time, a parse error) needs a
person. Without the `strict-policy` extra's parser, every word of the script that looks like a
command name counts, which asks more often, never less.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pydantic_ai_harness_rs._approvals import (
    Approvals,
    Call,
    arguments_digest,
    checked_approvals,
    ours,
    request_key,
    save_record,
    take_record,
)

if TYPE_CHECKING:
    from pydantic_ai.tools import RunContext

__all__ = ['APPROVAL_TOOL_NAMES', 'PlannedCommand']

APPROVAL_TOOL_NAMES: tuple[str, ...] = ('run_command', 'start_command', 'shell')
"""The Shell tools that start a command: the ones `require_approval` covers."""


@dataclass(frozen=True)
class PlannedCommand:
    """A command the policy let through, as a `require_approval` callable sees it before it starts.

    `cwd` is the directory it would start in (a workspace path); `background`: it keeps running
    after the call (`start_command`, or `shell` with `mode='background'`).
    """

    tool_name: str
    command: str
    cwd: str
    background: bool


CommandPredicate = Callable[[PlannedCommand], bool | Awaitable[bool]]
"""A `require_approval` callable: whether this command needs a person."""

_WORD = re.compile(r"[^\s;&|()<>`$'\"\\{}]+")
"""A run of characters that can spell a command name (the fallback without the parser)."""


def checked(value: object) -> Approvals:
    """`Shell(require_approval=...)`, checked (`_approvals.checked_approvals`)."""
    return checked_approvals(value, owner='Shell', known=None, what='command names', subject='PlannedCommand')


def command_names(command: str) -> list[str] | None:
    """The name (and basename) of every command `command` would run; `None` when it cannot be judged."""
    from pydantic_ai_harness_rs.shell._strict import Unjudgeable, commands

    try:
        argvs = commands(command)
    except (Unjudgeable, RecursionError):
        return None
    except (ImportError, RuntimeError):  # no parser: every word counts
        return [w for word in _WORD.findall(command) for w in (word, posixpath.basename(word))]
    names: list[str] = []
    for argv in argvs:
        if argv and argv[0] is not None:
            names += [argv[0], posixpath.basename(argv[0])]
    return names


async def gate(
    approvals: Approvals,
    ctx: RunContext[Any],
    call: Call,
    *,
    command: str,
    cwd: str,
    background: bool,
) -> dict[str, Any] | None:
    """The `ApprovalRequired` metadata when `command` needs a person (its record kept first), else `None`.

    On an approved call, notes on `call` whether the person changed the arguments. Metadata
    keys: `tool_name`, `command`, `cwd`, `background` (`PlannedCommand`'s fields) and
    `arguments_digest`; `approval_check_error` (`'<type>: <message>'`) when the `require_approval`
    callable raised (the command then needs a person).
    """
    if not approvals.enabled:
        return None
    if ctx.tool_call_approved:
        request = ours(ctx.tool_call_metadata, call.name)
        record = await take_record(ctx.workspace, request_key(ctx)) if ctx.tool_call_id else None
        request = request or record
        if request is not None:
            call.overridden = request.get('arguments_digest') != arguments_digest(call.arguments)
        return None
    planned = PlannedCommand(tool_name=call.name, command=command, cwd=cwd, background=background)
    asks, error = True, None
    if approvals.names:
        names = command_names(command)
        if names is not None and not any(name in approvals.names for name in names):
            asks, error = await Approvals(every=approvals.every, predicate=approvals.predicate).judge(planned, [])
    else:
        asks, error = await approvals.judge(planned, [])
    if not asks:
        return None
    metadata = {**asdict(planned), 'arguments_digest': arguments_digest(call.arguments)}
    if error is not None:
        metadata['approval_check_error'] = error
    record = {key: metadata[key] for key in ('tool_name', 'arguments_digest')}
    await save_record(ctx.workspace, request_key(ctx), ctx.tool_call_id or '', record)
    return metadata
