"""What `FileSystem` and `Shell` share for `require_approval`: Pydantic AI's deferred-tool approval.

A tool call that needs a person raises `ApprovalRequired(metadata=...)`; the run ends with
`DeferredToolRequests` and a later run (in this process or another) resumes it with
`DeferredToolResults`. On approval the tool runs again with `ctx.tool_call_approved` set, and
with the person's arguments when they overrode them. This module holds the pieces both
capabilities use: the checked `require_approval` setting, the digest that tells whether the
arguments were overridden, the note that tells the model so, and the small record kept beside
the files so that a new process can check an approval against its request even when the caller
does not hand the request's metadata back (`build_results` does not).

A record is a JSON file `<dir>/.pydantic-ai-harness/approvals/<created>-<id digest>.json`
(`<dir>`: the document's `root_dir`, or the workspace's working directory), written through the
workspace protocol so it works on any workspace, next to a `.gitignore` of `*`. It is removed
when the approved (or denied-then-replanned) call reads it; records older than
`MAX_RECORD_AGE` are removed whenever a new one is written.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import posixpath
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from pydantic_ai.workspaces import Workspace, WorkspaceError
from pydantic_core import to_jsonable_python

_T = TypeVar('_T')

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

    async def asks(self, subject: Any, names: Sequence[str]) -> bool:
        """Whether a call needs a person: every one, one of `names` listed, or the predicate's answer on `subject`."""
        if self.every:
            return True
        if self.names and any(name in self.names for name in names):
            return True
        if self.predicate is not None:
            answer = self.predicate(subject)
            if inspect.isawaitable(answer):
                answer = await answer
            return bool(answer)
        return False


def checked_approvals(value: object, *, owner: str, known: Sequence[str] | None, what: str) -> Approvals:
    """`require_approval` as given to `owner`, checked.

    `known`: the names a list may hold (`None`: any non-empty string); `what` names them in errors.

    Raises:
        TypeError: not a bool, a list (tuple, set) of strings, or a callable.
        ValueError: a name not in `known`, or an empty name.
    """
    if isinstance(value, bool):
        return Approvals(every=value)
    if callable(value):
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


CALL: ContextVar[Call | None] = ContextVar('pydantic_ai_harness_rs.approval_call', default=None)
"""The call the running tool body serves, set by the toolset around a model's call."""


@contextmanager
def current_call(name: str, arguments: dict[str, Any]) -> Iterator[Call]:
    """Make `(name, arguments)` the current call while the tool body runs."""
    call = Call(name, arguments)
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


def _id_digest(tool_call_id: str) -> str:
    return hashlib.sha256(tool_call_id.encode('utf-8', 'surrogatepass')).hexdigest()[:32]


async def _directory(workspace: Workspace) -> str:
    from pydantic_ai_harness_rs.shell._workspace import metadata_dir

    return await metadata_dir(workspace, APPROVALS_DIR)


async def save_record(workspace: Workspace, tool_call_id: str, record: dict[str, Any]) -> None:
    """Keep `record` for the request of `tool_call_id` (replacing an older one), pruning old records.

    Raises:
        WorkspaceError: the records' directory cannot be used (a symlink, not creatable).
    """
    directory = await _directory(workspace)
    now = int(time.time())
    mine = _id_digest(tool_call_id)
    for entry in await _entries(workspace, directory):
        created, _, digest = entry.partition('-')
        if digest == f'{mine}.json' or not created.isdigit() or now - int(created) > MAX_RECORD_AGE:
            await _remove(workspace, posixpath.join(directory, entry))
    data = json.dumps({**record, 'tool_call_id': tool_call_id, 'created': now}, ensure_ascii=False)
    await workspace.write_bytes(posixpath.join(directory, f'{now}-{mine}.json'), data.encode('utf-8', 'surrogatepass'))


async def take_record(workspace: Workspace, tool_call_id: str) -> dict[str, Any] | None:
    """The record of the request of `tool_call_id` (the newest), removed; `None` when there is none."""
    directory = await _directory(workspace)
    mine = f'-{_id_digest(tool_call_id)}.json'
    found = sorted(entry for entry in await _entries(workspace, directory) if entry.endswith(mine))
    record: dict[str, Any] | None = None
    for entry in reversed(found):
        path = posixpath.join(directory, entry)
        if record is None:
            try:
                loaded = json.loads(await workspace.read_bytes(path))
            except (OSError, WorkspaceError, ValueError):
                loaded = None
            if isinstance(loaded, dict) and loaded.get('tool_call_id') == tool_call_id:  # pyright: ignore[reportUnknownMemberType]
                record = loaded  # pyright: ignore[reportUnknownVariableType]
        await _remove(workspace, path)
    return record


async def _entries(workspace: Workspace, directory: str) -> list[str]:
    return [
        entry.name for entry in await workspace.list_dir(directory) if not entry.is_dir and entry.name.endswith('.json')
    ]


async def _remove(workspace: Workspace, path: str) -> None:
    try:
        await workspace.remove(path)
    except (FileNotFoundError, WorkspaceError):
        pass
