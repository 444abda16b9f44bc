"""FileSystem tools as capability operations: plan, ask, commit, with the listener in workflow code.

Where a tool call would run in a durable engine's workflow code (Temporal, whose FileSystem tools
carry `metadata={'temporal': False}`; DBOS, whose function tools run there), its body does no
I/O itself: it hands the work to `FileSystem`'s durable operations (`@durable_operation`, which
Pydantic AI runs as a Temporal activity or a DBOS step, registered with the agent):

- a read-only tool is one operation, `tool`: its result (or its retry text) and the events it
  would have emitted, recorded;
- a change (`write_file`, `edit_file`, `create_directory`, `apply_patch`) is two: `plan_change`
  resolves the path, runs the checks and plans the change against the file's current content
  hash; the `FileChangeRequestEvent` is then put to the listeners from workflow code, with the
  plan's diff (a patch: one per file, a veto of one vetoing all); `commit_change` plans again
  with that hash as the expected hash (a patch: every file's) and commits. A file
  changed in between (by anyone) fails the hash check: the model gets the core's conflict retry,
  never a blind write. A commit retried after its first attempt wrote (its worker died before
  the engine recorded it) finds the file holding exactly the planned result (the plan's
  `result_hash`) and answers as that attempt did, with its event, writing nothing. A worker
  killed between the two operations leaves the plan recorded: the commit runs once, on the next
  worker.

The events an operation recorded are emitted from workflow code after it returns (`ctx.emit`),
so they reach the listeners and the run's event stream in the order a plain run gives. Outside a
durable engine, and inside any unit (a Prefect task, a DBOS step), the tools run in-process as
they always did: nothing here runs.
"""

from __future__ import annotations

import dataclasses
import posixpath
import sys
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.exceptions import ApprovalRequired, ModelRetry, UserError
from pydantic_ai.messages import BinaryContent
from pydantic_ai.tools import RunContext

from pydantic_ai_harness_rs._approvals import current_call, with_note
from pydantic_ai_harness_rs._sandbox import in_workflow_sandbox
from pydantic_ai_harness_rs.durable._carried import RecordedEvent, rebuild, record
from pydantic_ai_harness_rs.durable._commands import in_durable_unit
from pydantic_ai_harness_rs.filesystem._locks import file_turns

if TYPE_CHECKING:
    from pydantic_ai_harness_rs.filesystem._toolset import FileSystemToolset

CHANGE_TOOLS = frozenset({'write_file', 'edit_file', 'create_directory', 'apply_patch'})
"""The tools that change files: planned in one operation, committed in another."""


@dataclass
class PlannedFile:
    """One file of a planned `apply_patch` (the fields of the core's `PatchFile` that cross an operation)."""

    path: str
    """Event path, relative to the root."""
    path_argument: str
    """The path as the patch names it."""
    operation: str
    """`write` (a new file), `edit` or `delete`."""
    diff: str
    truncated: bool
    old_hash: str | None
    """The content hash the file had when planned (`None`: no file)."""
    new_hash: str | None
    """The content hash it has once committed (`None`: removed)."""


@dataclass
class Planned:
    """A planned change, as `plan_change` answers it: a `FileChangeRequestEvent`'s fields, and the
    content hash the file had when planned (`None`: none could be read; `'<absent>'`: no file)."""

    path: str
    root_dir: str
    operation: str
    diff: str
    truncated: bool
    base_hash: str | None
    approved: bool = False
    """A call a person approved (`require_approval`): the commit's conflict is the approval's stale retry."""
    overridden: bool = False
    """The person changed the call's arguments (the result then says so)."""
    result_hash: str | None = None
    """The content hash the file has once the change is committed (`None`: a directory)."""
    result_text: str | None = None
    """The tool result the commit answers (what a retried commit answers when its first attempt wrote)."""
    files: list[PlannedFile] | None = None
    """An `apply_patch`: its files, sorted by path, each announced (`path`, `operation`, `diff` are then unused)."""


@dataclass
class UnitResult:
    """What one operation answers: the tool's result, or its retry text, or a plan; and the events."""

    value: str | list[str | BinaryContent] | None = None
    retry: str | None = None
    user_error: str | None = None
    approval: dict[str, Any] | None = None
    """`FileSystem(require_approval=...)`: the `ApprovalRequired` metadata of a change that needs a person."""
    planned: Planned | None = None
    events: list[RecordedEvent] = field(default_factory=list[RecordedEvent])


@dataclass(frozen=True)
class Stage:
    """Which part of a change the running operation does: `plan` or `commit` (with the plan's hash)."""

    commit: bool
    base_hash: str | None = None
    approved: bool = False
    overridden: bool = False
    planned: Planned | None = None
    """The commit: the plan it commits. A file already holding its `result_hash` was written by an
    earlier attempt of this commit, which is answered as that attempt answered (`result_text`)."""


STAGE: ContextVar[Stage | None] = ContextVar('pydantic_ai_harness_rs.change_stage', default=None)
"""Set inside `plan_change` / `commit_change`: the toolset's change bodies stop after the plan, or
plan against `base_hash` and commit without announcing. Unset: the whole change, as always."""


def dispatches(ctx: RunContext[Any], capability_id: str | None) -> bool:
    """Whether `FileSystem` operations called with `ctx` would run as durable units of their own:
    in a durable engine's workflow code (not inside a unit), with the operations bound."""
    operations = getattr(ctx, '_durable_operations', None)
    if not operations or capability_id is None or (capability_id, 'tool') not in operations:
        return False
    if in_durable_unit():
        return False
    # `RunContext.in_durable_context` looks Pydantic AI's durable module up in `sys.modules`, which a
    # Temporal sandbox without lazy `sys.modules` pass-through does not show: its workflow code is
    # recognised by the sandbox itself.
    return bool(getattr(ctx, 'in_durable_context', False)) or in_workflow_sandbox()


async def run_unit(
    toolset: FileSystemToolset[Any],
    ctx: RunContext[Any],
    name: str,
    arguments: dict[str, Any],
    stage: Stage | None,
    key: str | None = None,
) -> UnitResult:
    """Tool `name`'s body inside a durable unit, its events recorded instead of emitted; with `stage`,
    only the plan or only the commit of a change (see `STAGE`). `key`: the approval request's key,
    computed in workflow code where the run's messages are readable (`_approvals.request_key`)."""
    from pydantic_ai_harness_rs.checkpoints._units import recording as checkpoint_recording
    from pydantic_ai_harness_rs.durable._units import unit_context

    recorded: list[RecordedEvent] = []
    unit = dataclasses.replace(unit_context(ctx))

    async def keep(event: Any) -> Any:
        recorded.append(record(event))
        return event

    object.__setattr__(unit, 'emit', keep)
    if 'replacements' in arguments:  # tuples, as the core takes them (JSON made them lists)
        arguments = {**arguments, 'replacements': [tuple(pair) for pair in arguments['replacements']]}
    token = STAGE.set(stage)
    try:
        engine = await toolset._call_engine(getattr(unit, 'workspace', None))  # pyright: ignore[reportPrivateUsage]
        with current_call(name, arguments, key) as call:
            call.overridden = stage is not None and stage.overridden
            async with checkpoint_recording(unit):  # `Checkpoints`: the commit keeps and records here
                value = await getattr(toolset, f'_{name}')(engine, unit, **arguments)
    except ModelRetry as retry:
        return UnitResult(retry=retry.message, events=recorded)
    except ApprovalRequired as required:
        return UnitResult(approval=required.metadata or {}, events=recorded)
    except UserError as error:
        return UnitResult(user_error=error.message, events=recorded)
    finally:
        STAGE.reset(token)
    if isinstance(value, Planned):
        value.overridden = call.overridden
        return UnitResult(planned=value, events=recorded)
    return UnitResult(value=with_note(value, call), events=recorded)


async def answer(ctx: RunContext[Any], result: UnitResult) -> Any:
    """Emit what an operation recorded, in order, from workflow code; then its result (or its retry)."""
    for event in result.events:
        await ctx.emit(rebuild(event))
    if result.retry is not None:
        raise ModelRetry(result.retry)
    if result.user_error is not None:
        raise UserError(result.user_error)
    if result.approval is not None:
        raise ApprovalRequired(metadata=result.approval)
    return result.value


async def durable_call(
    operations: Any,
    ctx: RunContext[Any],
    name: str,
    arguments: dict[str, Any],
    *,
    whole: bool = False,
    key: str | None = None,
) -> Any:
    """Tool `name` from workflow code, through `operations` (the `FileSystem` capability): one
    operation for a read, plan / ask / commit for a change (see the module docstring). `whole`:
    a change in one operation too (a toolset whose `open_read` / `open_write` announce themselves,
    inside the unit, where no listener can be asked: its `FileChangeRequestEvent` arrives after).
    `key`: the approval request's key (`_approvals.request_key`), handed to the plan operation."""
    if name not in CHANGE_TOOLS or whole:
        return await answer(ctx, await operations._durable_tool(ctx, name, arguments))
    # Changes of one path in one run take turns here too (a plain run's per-file turns, `_locks.py`,
    # keyed lexically: workflow code resolves nothing), so parallel calls on one file plan one after
    # the other's commit; the commit's hash check covers any other writer (patches take turns
    # among themselves: their paths are known only once planned).
    turn = posixpath.normpath(str(arguments.get('path', ''))) if name != 'apply_patch' else ('apply_patch',)
    async with file_turns().hold(('workflow', ctx.run_id), turn):
        return await _change(operations, ctx, name, arguments, key)


async def _change(operations: Any, ctx: RunContext[Any], name: str, arguments: dict[str, Any], key: str | None) -> Any:
    from pydantic_ai_harness_rs.filesystem._events import Announcement, announce
    from pydantic_ai_harness_rs.filesystem._patch import announce_patch

    planned = await operations._durable_plan(ctx, name, arguments, key)
    if planned.planned is None:  # answered at the plan (a refusal, a retry, nothing to change)
        return await answer(ctx, planned)
    plan = planned.planned
    await answer(ctx, planned)
    # (`FileSystem(require_approval=...)`: the plan operation answered `approval` above when a person
    # must approve; a resumed, approved call's plan is pinned to the approved hash.)
    if plan.files is not None:  # a patch: every file asked before any write, a veto of one vetoes all
        if (refusal := await announce_patch(ctx, plan)) is not None:
            return refusal
    else:
        announcement = Announcement(plan.path, plan.root_dir, plan.operation, plan.diff, plan.truncated)  # type: ignore[arg-type]
        if (refusal := await announce(ctx, announcement)) is not None:
            return refusal
    committed = await operations._durable_commit(
        ctx,
        name,
        arguments,
        plan.base_hash,
        approved=plan.approved,
        overridden=plan.overridden,
        planned=plan,
    )
    return await answer(ctx, committed)


def in_dbos_workflow() -> bool:
    """Whether this is DBOS workflow code (not a step)."""
    dbos = sys.modules.get('dbos')
    return dbos is not None and dbos.DBOS.workflow_id is not None and dbos.DBOS.step_id is None
