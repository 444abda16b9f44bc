"""What `FileSystem` and `Shell` share for `require_approval`: Pydantic AI's deferred-tool approval.

A tool call that needs a person raises `ApprovalRequired(metadata=...)`; the run ends with
`DeferredToolRequests` and a later run (in this process or another) resumes it with
`DeferredToolResults`. On approval the tool runs again with `ctx.tool_call_approved` set, and
with the person's arguments when they overrode them. This module holds the pieces both
capabilities use: the checked `require_approval` setting, the digest that tells whether the
arguments were overridden, the note that tells the model so, and the small record kept beside
the files so that a new process can check an approval against its request even when the caller
does not hand the request's metadata back (`build_results` does not).

A record is a JSON file `<dir>/.pydantic-ai-harness/approvals/<created>-<request key>.json`
(`<dir>`: the document's `root_dir`, or the workspace's working directory), written through the
workspace protocol so it works on any workspace, next to a `.gitignore` of `*`. Its key
(`request_key`) names the request, not only the tool call id, which providers and local models
reuse (`call_0`) across conversations: two conversations in one tree never share a record, and a
resume of the same conversation in a new process computes the same key. It is removed when the
approved call reads it or a resume denies the call; records older than `MAX_RECORD_AGE` are
removed whenever a new one is written.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import posixpath
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.workspaces import Workspace, WorkspaceError
from pydantic_core import to_jsonable_python

if TYPE_CHECKING:
    from pydantic_ai.tools import RunContext

_T = TypeVar('_T')

logger = logging.getLogger('pydantic_ai_harness_rs.approvals')
"""Where a `require_approval` callable that raised is reported (a warning; the call then asks a person)."""

APPROVALS_DIR = 'approvals'
"""The records' directory below `.pydantic-ai-harness/`."""

MAX_RECORD_AGE = 30 * 24 * 3600
"""Seconds a record of an unanswered request is kept (removed when a later request is recorded)."""

MAX_NOTE_CHARS = 2000
"""Characters of the overridden arguments the model is shown in the tool result."""


@dataclass(frozen=True)
class Approvals:
    """A checked `require_approval`: `every`, a set of `names`, or a `predicate`."""

    every: bool = False
    names: frozenset[str] = frozenset()
    predicate: Callable[[Any], bool | Awaitable[bool]] | None = None

    @property
    def enabled(self) -> bool:
        return self.every or bool(self.names) or self.predicate is not None

    async def judge(self, subject: Any, names: Sequence[str]) -> tuple[bool, str | None]:
        """Whether a call needs a person: every one, one of `names` listed, or the predicate's answer on
        `subject`; and, when the predicate raised, the error as `'<type>: <message>'`.

        A predicate that raises fails closed: the call needs a person, and a warning is logged
        (logger `pydantic_ai_harness_rs.approvals`).
        """
        if self.every:
            return True, None
        if self.names and any(name in self.names for name in names):
            return True, None
        if self.predicate is not None:
            try:
                answer = self.predicate(subject)
                if inspect.isawaitable(answer):
                    answer = await answer
                return bool(answer), None
            except Exception as error:
                text = f'{type(error).__name__}: {error}'
                logger.warning('require_approval callable raised on %r, so a person is asked: %s', subject, text)
                return True, text
        return False, None


def checked_approvals(value: object, *, owner: str, known: Sequence[str] | None, what: str, subject: str) -> Approvals:
    """`require_approval` as given to `owner`, checked.

    `known`: the names a list may hold (`None`: any non-empty string); `what` names them in errors;
    `subject`: the class a callable is called with (`PlannedChange`, `PlannedCommand`).

    Raises:
        TypeError: not a bool, a list (tuple, set) of strings, or a callable that can be called with
            one positional argument.
        ValueError: a name not in `known`, or an empty name.
    """
    if isinstance(value, bool):
        return Approvals(every=value)
    if callable(value):
        _check_signature(value, owner=owner, subject=subject)
        return Approvals(predicate=cast('Callable[[Any], bool | Awaitable[bool]]', value))
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
        raise TypeError(
            f'{owner}(require_approval=...) takes True, False, a list of {what} or a callable; got {value!r}.'
        )
    names: list[object] = list(value)  # pyright: ignore[reportUnknownArgumentType]
    if not all(isinstance(name, str) for name in names):
        raise TypeError(f'{owner}(require_approval=[...]) takes {what} as strings; got {value!r}.')
    strings = [str(name) for name in names]
    if any(not name for name in strings):
        raise ValueError(f'{owner}(require_approval=[...]): a name is empty.')
    if known is not None and (unknown := sorted(set(strings) - set(known))):
        raise ValueError(
            f'{owner}(require_approval=[...]): unknown {what}: {", ".join(unknown)}. Available: {", ".join(known)}.'
        )
    return Approvals(names=frozenset(strings))


def _check_signature(value: Callable[..., Any], *, owner: str, subject: str) -> None:
    """Refuse a callable that cannot be called with one positional argument (a signature Python
    cannot inspect, as some builtins', is let through).

    Raises:
        TypeError: naming the field and the shape it takes.
    """
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(object())
    except TypeError:
        raise TypeError(
            f'{owner}(require_approval=...) takes a callable of one positional argument, the {subject}, '
            f'returning (or, async, awaiting to) whether it needs a person; {value!r} has the signature '
            f'{signature}.'
        ) from None


def arguments_digest(arguments: dict[str, Any]) -> str:
    """A digest of a call's (validated) arguments: equal digests mean the person did not change them."""
    text = json.dumps(to_jsonable_python(arguments, fallback=repr), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()


@dataclass
class Call:
    """The model's call being run (its tool and validated arguments), and whether a person changed them."""

    name: str
    arguments: dict[str, Any]
    overridden: bool = False
    key: str | None = None
    """The request's key (`request_key`) when the caller computed it where the run's messages are
    readable (a durable engine's workflow code); `None`: computed from the context when needed."""


CALL: ContextVar[Call | None] = ContextVar('pydantic_ai_harness_rs.approval_call', default=None)
"""The call the running tool body serves, set by the toolset around a model's call."""


@contextmanager
def current_call(name: str, arguments: dict[str, Any], key: str | None = None) -> Iterator[Call]:
    """Make `(name, arguments)` the current call while the tool body runs (`key`: its request's key)."""
    call = Call(name, arguments, key=key)
    token = CALL.set(call)
    try:
        yield call
    finally:
        CALL.reset(token)


def with_note(result: _T, call: Call) -> _T:
    """`result`, with a line telling the model the person changed the arguments (a text result only)."""
    if not call.overridden or not isinstance(result, str):
        return result
    given = {name: value for name, value in call.arguments.items() if value is not None}
    shown = json.dumps(to_jsonable_python(given, fallback=repr), ensure_ascii=False)
    if len(shown) > MAX_NOTE_CHARS:
        shown = shown[:MAX_NOTE_CHARS] + '... (cut)'
    note = f'[A person changed the arguments of this call before approving it; it ran with: {shown}]'
    return f'{result}\n{note}'  # pyright: ignore[reportReturnType]


def ours(metadata: object, tool_name: str) -> dict[str, Any] | None:
    """`ctx.tool_call_metadata` when it is the metadata this package put on the request of `tool_name`."""
    if isinstance(metadata, dict) and metadata.get('tool_name') == tool_name and 'arguments_digest' in metadata:  # pyright: ignore[reportUnknownMemberType]
        return metadata  # pyright: ignore[reportUnknownVariableType]
    return None


# --- the records ---------------------------------------------------------------------------


def request_key(ctx: RunContext[Any], tool_call_id: str | None = None) -> str:
    """The key of the request of tool call `tool_call_id` (default: the call `ctx` runs), 32 hex digits.

    A digest of what a resume of the same conversation sees again, even in a new process from the
    history as JSON: the tool call id, the run's `conversation_id` (Pydantic AI carries it on the
    messages), and, when the run's messages are readable here, the `ModelResponse` that issued the
    call (its `timestamp` and `provider_response_id`) with the call's own arguments as the model
    sent them (a person's `override_args` do not change them). Inside a Temporal activity the
    messages do not cross, so there the key holds the first two only (request and resume then
    both run there).
    """
    call_id = ctx.tool_call_id if tool_call_id is None else tool_call_id
    parts: list[Any] = [call_id or '', getattr(ctx, 'conversation_id', None)]
    issued = _issuing_call(ctx, call_id)
    if issued is not None:
        response, part = issued
        stamp = response.timestamp
        parts += [
            stamp.isoformat() if stamp.tzinfo is None else stamp.timestamp(),
            response.provider_response_id,
            part.tool_name,
            arguments_digest(part.args_as_dict()),
        ]
    text = json.dumps(parts, ensure_ascii=False)
    return hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:32]


def _issuing_call(ctx: RunContext[Any], tool_call_id: str | None) -> tuple[ModelResponse, ToolCallPart] | None:
    """The latest `ModelResponse` in the run's messages holding tool call `tool_call_id`, and that call."""
    try:
        messages = ctx.messages
    except (UserError, AttributeError):  # a Temporal activity's context: the messages do not cross
        return None
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart) and part.tool_call_id == tool_call_id:
                    return message, part
    return None


async def _directory(workspace: Workspace) -> str:
    from pydantic_ai_harness_rs.shell._workspace import metadata_dir

    return await metadata_dir(workspace, APPROVALS_DIR)


async def save_record(workspace: Workspace, key: str, tool_call_id: str, record: dict[str, Any]) -> None:
    """Keep `record` for the request `key` (`request_key`) of `tool_call_id`, replacing the one an
    earlier asking of the same request left (it is superseded), and pruning records past `MAX_RECORD_AGE`.

    Raises:
        WorkspaceError: the records' directory cannot be used (a symlink, not creatable).
    """
    directory = await _directory(workspace)
    now = int(time.time())
    for entry in await _entries(workspace, directory):
        created, _, rest = entry.partition('-')
        if rest == f'{key}.json' or not created.isdigit() or now - int(created) > MAX_RECORD_AGE:
            await _remove(workspace, posixpath.join(directory, entry))
    data = json.dumps({**record, 'tool_call_id': tool_call_id, 'key': key, 'created': now}, ensure_ascii=False)
    await workspace.write_bytes(posixpath.join(directory, f'{now}-{key}.json'), data.encode('utf-8', 'surrogatepass'))


async def take_record(workspace: Workspace, key: str) -> dict[str, Any] | None:
    """The record of the request `key` (the newest), removed; `None` when there is none."""
    directory = await _directory(workspace)
    mine = f'-{key}.json'
    found = sorted(entry for entry in await _entries(workspace, directory) if entry.endswith(mine))
    record: dict[str, Any] | None = None
    for entry in reversed(found):
        path = posixpath.join(directory, entry)
        if record is None:
            try:
                loaded = json.loads(await workspace.read_bytes(path))
            except (OSError, WorkspaceError, ValueError):
                loaded = None
            if isinstance(loaded, dict) and loaded.get('key') == key:  # pyright: ignore[reportUnknownMemberType]
                record = loaded  # pyright: ignore[reportUnknownVariableType]
        await _remove(workspace, path)
    return record


def denied_calls(ctx: RunContext[Any], names: Sequence[str]) -> list[str]:
    """The ids of the calls of tools `names` that the run's newest request reports denied
    (`ToolDenied` on a resume: a return marked `outcome='denied'`, Pydantic AI 2.6x and later)."""
    try:
        messages = ctx.messages
    except (UserError, AttributeError):
        return []
    if not messages or not isinstance(last := messages[-1], ModelRequest):
        return []
    return [
        part.tool_call_id
        for part in last.parts
        if isinstance(part, ToolReturnPart) and getattr(part, 'outcome', None) == 'denied' and part.tool_name in names
    ]


async def forget_denied(ctx: RunContext[Any], workspace: Workspace, names: Sequence[str]) -> None:
    """Remove the records of the requests a resume just denied (see `denied_calls`); nothing else is read.

    Raises:
        WorkspaceError: the records' directory cannot be used (a symlink, not creatable).
    """
    for call_id in denied_calls(ctx, names):
        await take_record(workspace, request_key(ctx, call_id))


async def _entries(workspace: Workspace, directory: str) -> list[str]:
    return [
        entry.name for entry in await workspace.list_dir(directory) if not entry.is_dir and entry.name.endswith('.json')
    ]


async def _remove(workspace: Workspace, path: str) -> None:
    try:
        await workspace.remove(path)
    except (FileNotFoundError, WorkspaceError):
        pass
