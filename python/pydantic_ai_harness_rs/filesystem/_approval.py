"""`FileSystem(require_approval=...)`: a change that needs a person ends the run with a
`DeferredToolRequests` carrying the planned change, and runs when a later run approves it.

Two steps, called by the toolset inside the file's turn (`_toolset.py`, `_change` and
`_create_directory`), around the plan:

- `pin` (before the plan): the content hash the plan must be made against. On a first call
  that may need a person: the file's current hash (what the person will see the diff of). On
  an approved call: the hash the request was planned against (from `ctx.tool_call_metadata`,
  else from the request's record), so the core commits only onto that version and a file
  changed since gives a retry to plan again, never a blind write.
- `request` (after the plan, before `FileChangeRequestEvent`): the `ApprovalRequired` metadata
  when the planned change needs a person (the request is recorded first), else `None`.

The toolset raises `ApprovalRequired` itself, so a durable route can run these steps inside
its plan unit and raise in workflow code.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pydantic_ai.exceptions import ApprovalRequired, ModelRetry
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs._approvals import (
    CALL,
    Approvals,
    arguments_digest,
    checked_approvals,
    denied_calls,
    ours,
    request_key,
    save_record,
    take_record,
)
from pydantic_ai_harness_rs._approvals import (
    forget_denied as forget,
)
from pydantic_ai_harness_rs.filesystem._events import FileOperation
from pydantic_ai_harness_rs.filesystem._observe import ABSENT

if TYPE_CHECKING:
    from pydantic_ai.tools import RunContext

    from pydantic_ai_harness_rs._core import PatchPlan
    from pydantic_ai_harness_rs.filesystem._engine import Engine, Plan

__all__ = ['CHANGE_TOOL_NAMES', 'PlannedChange']

CHANGE_TOOL_NAMES: tuple[str, ...] = ('write_file', 'edit_file', 'create_directory', 'apply_patch')
"""The FileSystem tools that change files: what `require_approval=True` covers (`apply_patch` when registered)."""


@dataclass(frozen=True)
class PlannedChange:
    """A change planned and checked, as a `require_approval` callable sees it before anything is written.

    `path` is root-relative (as events carry it), `root_dir` absolute; `diff` is the unified
    diff from the current content to the planned one (empty for `create_directory`), cut at
    `MAX_EVENT_DIFF_CHARS` with `truncated` set; `content_hash` is the hash of the content the
    plan was made against, as `read_file` shows it (`None`: a new file, or a directory).
    """

    tool_name: str
    operation: FileOperation
    path: str
    root_dir: str
    diff: str
    truncated: bool
    content_hash: str | None


ApprovalPredicate = Callable[[PlannedChange], bool | Awaitable[bool]]
"""A `require_approval` callable: whether this planned change needs a person."""

STALE = (
    '{path!r} changed after this change was planned and approved, so it was not written. '
    'Read it again (read_file) and call the tool again to plan the change anew.'
)
"""The retry of an approved change whose file no longer has the content it was planned against."""

UNMATCHED = (
    'The approval of this change could not be matched to its request (its record is gone), so '
    'nothing was written. Call the tool again to plan the change and ask for approval anew.'
)
"""The retry of an approved write or edit whose planned hash is known neither from metadata nor from a record."""


RECORD_PATTERNS: tuple[str, ...] = ('**/.pydantic-ai-harness', '**/.pydantic-ai-harness/**')
"""Read-only for the model's tools whenever approvals are on, under either contract: the records
(and the Shell's job files) live there, and a model that could rewrite a record could make a stale
approval pass."""


def guarded_patterns(patterns: list[str], approvals: Approvals) -> list[str]:
    """`patterns` (read-only patterns in force), with `RECORD_PATTERNS` added when approvals are on."""
    if not approvals.enabled:
        return patterns
    return [*patterns, *(p for p in RECORD_PATTERNS if p not in patterns)]


def checked(value: object) -> Approvals:
    """`FileSystem(require_approval=...)`, checked (`_approvals.checked_approvals`)."""
    return checked_approvals(
        value, owner='FileSystem', known=CHANGE_TOOL_NAMES, what='change tools', subject='PlannedChange'
    )


@dataclass
class Pin:
    """What `pin` decided for one change."""

    guard: str | None
    """The hash the plan is made against (the core's `expected_hash`)."""
    content_hash: str | None = None
    """The hash for the request's metadata (`None`: nothing at the path)."""
    approved: bool = False
    """An approved call resuming: nothing more is asked, a conflict is `STALE`."""

    @contextmanager
    def planning(self, path: str) -> Iterator[None]:
        """Around the plan: on an approved call, the core's conflict becomes `STALE`."""
        try:
            yield
        except _core.ConflictError as e:
            if not self.approved:
                raise
            raise ModelRetry(STALE.format(path=path)) from e


def _records(ctx: RunContext[Any], engine: Engine) -> Workspace:
    """Where the records of `engine`'s changes live: `root_dir` (the document's engine), else the run's workspace."""
    directory = getattr(engine, '_directory', 0)
    core = getattr(engine, 'core', None)
    if directory is None and core is not None:  # the document's `LocalEngine` on `root_dir`
        return Workspace(LocalWorkspaceBackend(core.root_dir))
    return ctx.workspace


def denies(ctx: RunContext[Any]) -> bool:
    """Whether the run's newest request reports a change tool's call denied (`_approvals.denied_calls`)."""
    return bool(denied_calls(ctx, CHANGE_TOOL_NAMES))


async def forget_denied(ctx: RunContext[Any], engine: Engine) -> None:
    """Remove the records of the changes a resume just denied, where `engine`'s records live."""
    await forget(ctx, _records(ctx, engine), CHANGE_TOOL_NAMES)


async def pin(approvals: Approvals, ctx: RunContext[Any] | None, engine: Engine, path: str, guard: str | None) -> Pin:
    """The guard to plan `path`'s change with (`guard`: the one it has without approvals).

    Raises:
        ModelRetry: an approved write or edit whose request cannot be found (`UNMATCHED`).
    """
    call = CALL.get()
    if ctx is None or call is None or not approvals.enabled or call.name not in CHANGE_TOOL_NAMES:
        return Pin(guard)
    if ctx.tool_call_approved:
        if not (approvals.every or approvals.predicate or call.name in approvals.names):
            return Pin(guard)  # approved by something else: not ours to check
        request = ours(ctx.tool_call_metadata, call.name)
        key = call.key or request_key(ctx)
        record = await take_record(_records(ctx, engine), key) if ctx.tool_call_id else None
        request = request or record
        if request is not None:
            call.overridden = request.get('arguments_digest') != arguments_digest(call.arguments)
            if call.name == 'create_directory' or request.get('path_argument') != path:
                return Pin(guard, approved=True)  # the person chose another path: the usual rules apply there
            planned = request.get('content_hash')
            if planned is not None and not await _exists(engine, path):
                # The core creates a missing file whatever hash it is told to expect: deleted
                # since the request is changed since the request.
                raise ModelRetry(STALE.format(path=path))
            return Pin(ABSENT if planned is None else str(planned), approved=True)
        if call.name == 'create_directory':
            return Pin(guard, approved=True)  # nothing to check a directory against
        if approvals.predicate is None:
            raise ModelRetry(UNMATCHED)
        # A callable may have let this call through while something else asked for the approval:
        # judged again below, and asked again if it needs a person.
    if call.name == 'create_directory' or not (approvals.every or approvals.predicate or call.name in approvals.names):
        return Pin(guard)
    if guard is not None:  # the model's `expected_hash`, or `ReadBeforeWrite`'s version
        return Pin(guard, None if guard == ABSENT else guard)
    try:
        outcome, _ = await engine.read_file(path, 0, 1)
    except _core.NotFoundError:
        return Pin(ABSENT)
    except _core.RetryableError:
        return Pin(guard)  # the plan says what is wrong; a write then planned is create-only on approval
    if outcome.content_hash is None:  # 0.62.0's `Path not found: ...` result
        return Pin(ABSENT)
    return Pin(outcome.content_hash, outcome.content_hash)


PATCH_STALE = (
    'A file of this patch changed after the patch was planned and approved, so nothing was written. '
    'Read the files again (read_file) and call apply_patch again to plan the patch anew.'
)
"""The retry of an approved patch whose files no longer have the contents it was planned against."""


async def patch_gate(approvals: Approvals, ctx: RunContext[Any] | None, engine: Engine, plan: PatchPlan) -> bool:
    """`require_approval` for a planned `apply_patch`: `True` when this call resumes an approved request
    whose files still have the hashes they were planned on (the run's `ReadBeforeWrite` is then not
    asked again: the person saw these versions); `False` when no approval is involved.

    A call that needs a person raises `ApprovalRequired` with one request for the whole patch: metadata
    `tool_name`, `operation` (`'apply_patch'`), `root_dir`, `files` (per file, sorted by path: `operation`,
    `path`, `diff`, `truncated`, `content_hash` before the patch, `None` for a new file) and
    `arguments_digest`. A callable `require_approval` is asked per file (`PlannedChange`); one yes asks.

    Raises:
        ApprovalRequired: a person must approve the patch (its record kept first).
        ModelRetry: an approved patch whose files changed since (`PATCH_STALE`), or whose request is gone.
    """
    call = CALL.get()
    name = 'apply_patch'
    if ctx is None or call is None or not approvals.enabled or call.name != name:
        return False
    ours_to_ask = approvals.every or approvals.predicate is not None or name in approvals.names
    if not ours_to_ask:
        return False
    hashes = {file.path: file.old_hash for file in plan.files}
    key = call.key or request_key(ctx)
    if ctx.tool_call_approved:
        request = ours(ctx.tool_call_metadata, name)
        record = await take_record(_records(ctx, engine), key) if ctx.tool_call_id else None
        request = request or record
        if request is not None:
            call.overridden = request.get('arguments_digest') != arguments_digest(call.arguments)
            if call.overridden:
                return False  # the person's own patch: planned and checked under the usual rules
            planned = {str(f.get('path')): f.get('content_hash') for f in request.get('files', [])}
            if planned != hashes:
                raise ModelRetry(PATCH_STALE)
            return True
        if approvals.predicate is None:
            raise ModelRetry(UNMATCHED)
    changes = [
        PlannedChange(name, f.operation, f.path, plan.root_dir, f.diff, f.truncated, f.old_hash) for f in plan.files
    ]
    errors: list[str] = []
    if approvals.predicate is not None and not approvals.every and name not in approvals.names:
        judged = [await approvals.judge(change, [name]) for change in changes]
        errors = [error for _, error in judged if error is not None]
        if not any(asks for asks, _ in judged):
            return False
    files = [asdict(change) for change in changes]
    for entry in files:
        for shared in ('tool_name', 'root_dir'):
            del entry[shared]
    metadata = {
        'tool_name': name,
        'operation': name,
        'root_dir': plan.root_dir,
        'files': files,
        'arguments_digest': arguments_digest(call.arguments),
    }
    if errors:
        metadata['approval_check_error'] = errors[0]
    record = {
        'tool_name': name,
        'files': [{'path': f['path'], 'content_hash': f['content_hash']} for f in files],
        'arguments_digest': metadata['arguments_digest'],
    }
    await save_record(_records(ctx, engine), key, ctx.tool_call_id or '', record)
    raise ApprovalRequired(metadata=metadata)


async def _exists(engine: Engine, path: str) -> bool:
    """Whether `path` is there to be changed (what is wrong with a path that is there, the plan says)."""
    try:
        outcome, _ = await engine.read_file(path, 0, 1)
    except _core.NotFoundError:
        return False
    except _core.RetryableError:
        return True
    return outcome.content_hash is not None  # `None`: 0.62.0's `Path not found: ...` result


async def request(
    approvals: Approvals, ctx: RunContext[Any] | None, engine: Engine, plan: Plan, pinned: Pin | None = None
) -> dict[str, Any] | None:
    """The `ApprovalRequired` metadata when `plan` needs a person (its record kept first), else `None`.

    Metadata keys: `tool_name`, `operation`, `path`, `root_dir`, `diff`, `truncated`,
    `content_hash` (`PlannedChange`'s fields), `path_argument` (the path as the model passed it)
    and `arguments_digest` (what tells an approval with changed arguments); `approval_check_error`
    (`'<type>: <message>'`) when the `require_approval` callable raised (the change then needs a person).
    """
    call = CALL.get()
    if ctx is None or call is None or not approvals.enabled or call.name not in CHANGE_TOOL_NAMES:
        return None
    if pinned is not None and pinned.approved:
        return None
    change = PlannedChange(
        tool_name=call.name,
        operation=plan.operation,
        path=plan.path,
        root_dir=plan.root_dir,
        diff=plan.diff,
        truncated=plan.truncated,
        content_hash=None if pinned is None else pinned.content_hash,
    )
    asks, error = await approvals.judge(change, [call.name])
    if not asks:
        return None
    metadata = {
        **asdict(change),
        'path_argument': call.arguments.get('path'),
        'arguments_digest': arguments_digest(call.arguments),
    }
    if error is not None:
        metadata['approval_check_error'] = error
    record = {key: metadata[key] for key in ('tool_name', 'content_hash', 'path_argument', 'arguments_digest')}
    await save_record(_records(ctx, engine), call.key or request_key(ctx), ctx.tool_call_id or '', record)
    return metadata
