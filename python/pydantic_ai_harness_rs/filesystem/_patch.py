"""`apply_patch`'s pipeline around the core's plan and commit: the files' turns, `ReadBeforeWrite`,
one `FileChangeRequestEvent` per file before anything is written, the events after the commit.

The core (`src/fs/patch/`) parses the patch, resolves and checks every path, reads every file and
builds every new content before anything is written, then commits all files through a journal
(local directories) or one by one through the workspace protocol (`_remote.py`). This module only
orders the steps: take the turns of every path the patch names in sorted order (so two patches never
wait on each other in a circle), plan once under them, check each file against what the run has seen,
announce each file (a veto of one vetoes the whole patch, before any write), commit, record what
the run saw, emit the written/edited events.

Under a durable engine (`durable/_operations.py`) the same steps are split: the plan operation
stops after the checks and the approval gate and answers the plan (`Planned`, its `files`);
workflow code announces each file; the commit operation plans again and commits only when every
file still has the hash it was planned on (`_commit_planned`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

from pydantic_ai.exceptions import ModelRetry

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs._approvals import Approvals
from pydantic_ai_harness_rs.durable._operations import STAGE, Planned, PlannedFile, Stage
from pydantic_ai_harness_rs.filesystem._approval import PATCH_STALE, patch_gate
from pydantic_ai_harness_rs.filesystem._engine import current_hash
from pydantic_ai_harness_rs.filesystem._events import Announcement, FileEditedEvent, FileWrittenEvent, announce
from pydantic_ai_harness_rs.filesystem._locks import file_turns
from pydantic_ai_harness_rs.filesystem._observe import ABSENT, GuardedChange, conflict, guarded_change

if TYPE_CHECKING:
    from pydantic_ai.tools import RunContext

    from pydantic_ai_harness_rs._core import PatchFile, PatchPlan
    from pydantic_ai_harness_rs.filesystem._engine import Engine


async def announce_patch(ctx: RunContext[Any] | None, plan: PatchPlan | Planned) -> str | None:
    """Put each file of `plan` to the listeners (`FileChangeRequestEvent`, sorted by path); the tool
    result if one vetoed it (those after it are not asked: nothing will be written), else `None`.
    `plan`: the core's, or a durable plan operation's answer (announced from workflow code).

    A delete is announced with `operation='delete'` and the diff to an empty file.
    """
    for file in plan.files or ():
        announcement = Announcement(file.path, plan.root_dir, file.operation, file.diff, file.truncated)  # type: ignore[arg-type]
        if (refusal := await announce(ctx, announcement)) is not None:
            return f'[Patch not applied, no file changed: {refusal[1:-1]}]'
    return None


def _checked(change: GuardedChange, file: PatchFile) -> None:
    """`ReadBeforeWrite` for one file: the run must have seen the version the patch was planned on.

    Raises:
        ModelRetry: the file exists and was not read, or changed since it was read.
    """
    if change.observations is None or change.expected_hash is None:
        return
    planned = file.old_hash or ABSENT
    if planned != change.expected_hash:
        raise change.observations.refusal(file.path_argument, change.expected_hash)


async def apply_patch(
    engine: Engine, ctx: RunContext[Any] | None, input: str, approvals: Approvals, content_hashes: bool
) -> str | Planned:
    """Plan, announce and commit `input` (see the module doc); returns the tool result. With
    `require_approval` covering the tool, the planned patch is put to a person first (`patch_gate`).
    Inside a durable plan operation (`STAGE`) it returns the `Planned` patch instead of announcing;
    inside a commit operation it commits the stage's plan (`_commit_planned`). `content_hashes`:
    the result lists each file's new hash.

    Raises:
        RetryableError: the core's (a parse error, a path, a hunk that does not match, a file
            changed since the plan), with nothing written.
        ModelRetry: `ReadBeforeWrite`'s refusal of a file, or an approved patch whose files changed
            since, with nothing written.
        ApprovalRequired: the patch needs a person.
    """
    stage = STAGE.get()
    if stage is not None and stage.commit and stage.planned is not None and stage.planned.files is not None:
        return await _commit_planned(engine, ctx, input, stage, stage.planned.files)
    async with _turns(engine, await engine.patch_paths(input)) as keys:
        plan = await engine.plan_patch(input)  # planned once, under the turns: nobody changes these files now
        changes: list[tuple[GuardedChange, PatchFile]] = []
        for file in plan.files:
            key = await engine.lock_key(file.path_argument)
            if key not in keys:  # a path now resolves elsewhere (a link swapped since the turns were taken)
                raise ModelRetry(f'Path {file.path_argument!r} was replaced while the patch was planned. Retry.')
            changes.append((guarded_change(engine.storage, key, file.path_argument, None), file))
        approved = await patch_gate(approvals, ctx, engine, plan) if ctx is not None else False
        if not approved:  # an approved patch was checked against the versions the person saw
            for change, file in changes:
                _checked(change, file)
        if stage is not None:  # a durable plan operation: workflow code announces, then commits
            return _planned(plan, approved, content_hashes)
        if (refusal := await announce_patch(ctx, plan)) is not None:
            return refusal
        text = await engine.commit_patch(plan)
        for change, file in changes:
            change.saw(file.new_hash)
    await _emit_changed(ctx, plan.root_dir, plan.files)
    return text


@asynccontextmanager
async def _turns(engine: Engine, paths: Sequence[str]) -> AsyncIterator[list[str]]:
    """Hold the turns of every file of `paths`, taken in sorted order (so two patches never wait in a
    circle); yields their keys."""
    keys = sorted({await engine.lock_key(path) for path in paths})
    async with AsyncExitStack() as turns:
        for key in keys:
            await turns.enter_async_context(file_turns().hold(engine.storage, key))
        yield keys


def _planned(plan: PatchPlan, approved: bool, content_hashes: bool) -> Planned:
    """A durable plan operation's answer for a patch: every file to announce, the hashes it was
    planned on and will have, and the result its commit answers."""
    files = [
        PlannedFile(f.path, f.path_argument, f.operation, f.diff, f.truncated, f.old_hash, f.new_hash)
        for f in plan.files
    ]
    return Planned(
        '',
        plan.root_dir,
        'apply_patch',
        '',
        False,
        None,
        approved,
        result_text=plan.result_text(content_hashes),
        files=files,
    )


async def _commit_planned(
    engine: Engine, ctx: RunContext[Any] | None, input: str, stage: Stage, planned: list[PlannedFile]
) -> str:
    """A durable commit operation: `input` planned again under the files' turns and committed only
    when every file still has the hash it was planned on; a retried commit whose first attempt
    wrote everything (every file holds its planned result) answers as that attempt did.

    Raises:
        ConflictError: a file changed since the plan (the first such, by path), nothing written.
        ModelRetry: the same for an approved patch (`PATCH_STALE`).
        RetryableError: the core's, when the patch no longer plans and no file changed.
    """
    assert stage.planned is not None and stage.planned.result_text is not None
    async with _turns(engine, [f.path_argument for f in planned]):
        if all([await current_hash(engine, f.path_argument) == (f.new_hash or ABSENT) for f in planned]):
            text = stage.planned.result_text  # an earlier attempt of this commit wrote it all
            files: Sequence[PatchFile | PlannedFile] = planned
        else:
            plan = await _replanned(engine, input, stage, planned)
            changes = [
                (guarded_change(engine.storage, await engine.lock_key(f.path_argument), f.path_argument, None), f)
                for f in plan.files
            ]
            text = await engine.commit_patch(plan)
            for change, file in changes:
                change.saw(file.new_hash)
            files = plan.files
    await _emit_changed(ctx, stage.planned.root_dir, files)
    return text


async def _replanned(engine: Engine, input: str, stage: Stage, planned: list[PlannedFile]) -> PatchPlan:
    """`input` planned again, every file on the hash it was planned on (see `_commit_planned`)."""
    failure: _core.RetryableError | None = None
    try:
        plan = await engine.plan_patch(input)
    except _core.RetryableError as error:
        failure, plan = error, None
    expected = {f.path: f.old_hash for f in planned}
    if plan is not None and {f.path: f.old_hash for f in plan.files} == expected:
        return plan
    for file in planned:
        got = await current_hash(engine, file.path_argument)
        if got != (file.old_hash or ABSENT):
            if stage.approved:
                raise ModelRetry(PATCH_STALE)
            raise conflict(file.path_argument, file.old_hash or ABSENT, got or '?')
    if failure is not None:
        raise failure
    # Every file as planned, yet the patch now names other files (a path resolving elsewhere).
    moved = sorted({f.path for f in plan.files} ^ set(expected)) if plan is not None else []
    raise _core.ConflictError(f'Path {(moved or ["."])[0]!r} was replaced while the change was announced. Retry.')


async def _emit_changed(ctx: RunContext[Any] | None, root_dir: str, files: Sequence[PatchFile | PlannedFile]) -> None:
    """After a commit: `FileEditedEvent` per updated file, `FileWrittenEvent` per new one (a deleted
    file has none: 0.62.0 has no such event class)."""
    if ctx is None:
        return
    for file in files:
        if file.new_hash is None:
            continue
        if file.old_hash is None:
            await ctx.emit(FileWrittenEvent(path=file.path, root_dir=root_dir, content_hash=file.new_hash))
        else:
            await ctx.emit(
                FileEditedEvent(
                    path=file.path,
                    root_dir=root_dir,
                    content_hash=file.new_hash,
                    diff=file.diff,
                    truncated=file.truncated,
                )
            )
