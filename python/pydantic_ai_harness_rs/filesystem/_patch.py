"""`apply_patch`'s pipeline around the core's plan and commit: the files' turns, `ReadBeforeWrite`,
one `FileChangeRequestEvent` per file before anything is written, the events after the commit.

The core (`src/fs/patch/`) parses the patch, resolves and checks every path, reads every file and
builds every new content before anything is written, then commits all files through a journal
(local directories) or one by one through the workspace protocol (`_remote.py`). This module only
orders the steps: take the turns of every path the patch names in sorted order (so two patches never
wait on each other in a circle), plan once under them, check each file against what the run has seen,
announce each file (a veto of one vetoes the whole patch, before any write), commit, record what
the run saw, emit the written/edited events.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from pydantic_ai.exceptions import ModelRetry

from pydantic_ai_harness_rs._approvals import Approvals
from pydantic_ai_harness_rs.filesystem._approval import patch_gate
from pydantic_ai_harness_rs.filesystem._events import Announcement, FileEditedEvent, FileWrittenEvent, announce
from pydantic_ai_harness_rs.filesystem._locks import file_turns
from pydantic_ai_harness_rs.filesystem._observe import ABSENT, GuardedChange, guarded_change

if TYPE_CHECKING:
    from pydantic_ai.tools import RunContext

    from pydantic_ai_harness_rs._core import PatchFile, PatchPlan
    from pydantic_ai_harness_rs.filesystem._engine import Engine


async def announce_patch(ctx: RunContext[Any] | None, plan: PatchPlan) -> str | None:
    """Put each file of `plan` to the listeners (`FileChangeRequestEvent`, sorted by path); the tool
    result if one vetoed it (those after it are not asked: nothing will be written), else `None`.

    A delete is announced with `operation='delete'` and the diff to an empty file.
    """
    for file in plan.files:
        announcement = Announcement(file.path, plan.root_dir, file.operation, file.diff, file.truncated)
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


async def apply_patch(engine: Engine, ctx: RunContext[Any] | None, input: str, approvals: Approvals) -> str:
    """Plan, announce and commit `input` (see the module doc); returns the tool result. With
    `require_approval` covering the tool, the planned patch is put to a person first (`patch_gate`).

    Raises:
        RetryableError: the core's (a parse error, a path, a hunk that does not match, a file
            changed since the plan), with nothing written.
        ModelRetry: `ReadBeforeWrite`'s refusal of a file, or an approved patch whose files changed
            since, with nothing written.
        ApprovalRequired: the patch needs a person.
    """
    keys = sorted({await engine.lock_key(path) for path in await engine.patch_paths(input)})
    async with AsyncExitStack() as turns:
        for key in keys:
            await turns.enter_async_context(file_turns().hold(engine.storage, key))
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
        if (refusal := await announce_patch(ctx, plan)) is not None:
            return refusal
        text = await engine.commit_patch(plan)
        for change, file in changes:
            change.saw(file.new_hash)
    if ctx is not None:
        root_dir = plan.root_dir
        for file in plan.files:
            if file.new_hash is None:
                continue  # a deleted file: no event class says so (0.62.0 has none)
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
    return text
