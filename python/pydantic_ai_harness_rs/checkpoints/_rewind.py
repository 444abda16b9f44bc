"""A rewind through the change pipeline: plan (core), announce (`FileChangeRequestEvent` per file,
from the `rewind` tool), commit (core: every file re-checked, then replaced crash-safely).

`rewind` serves both `Checkpoints.rewind` (no listeners outside a run) and the opt-in model tool
`rewind`, which undoes the model's own last steps (the checkpoints of this conversation: of this run,
or of a tool call in its messages with that message's run id) or a named file's last change, limited
to the paths those checkpoints changed and refused when another's later checkpoint changed one.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_ai.exceptions import ModelRetry, UserError
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.durable._events import events_reachable
from pydantic_ai_harness_rs.filesystem._events import MAX_EVENT_DIFF_CHARS, Announcement, FileOperation, announce

if TYPE_CHECKING:
    from pydantic_ai_harness_rs.checkpoints._capability import Checkpoints
    from pydantic_ai_harness_rs.checkpoints._stores import RootState


def _check_paths(checkpoints: list[dict[str, Any]], to: str, paths: Sequence[str]) -> None:
    """Refuse `paths` that no checkpoint from `to` on changed (an unknown `to` is left to the core)."""
    ids = [c['id'] for c in checkpoints]
    if to not in ids:
        return
    changed = [p for c in checkpoints[ids.index(to) :] for p in c['paths']]
    wanted = {p: posixpath.normpath(p).strip('/') for p in paths}
    unchanged = [p for p, n in wanted.items() if n not in ('', '.') and not any(_covers(q, [n]) for q in changed)]
    if unchanged:
        raise ValueError(f'No checkpoint from {to} on changed {", ".join(unchanged)}: nothing was rewound.')


def _operation(file: dict[str, Any]) -> FileOperation:
    """How a rewind's change of one path is announced: `delete` (a file or directory removed),
    `create_directory` (a directory recreated), `write` (a file put back where none is now), else `edit`."""
    if file['action'] in ('delete', 'rmdir'):
        return 'delete'
    if file.get('new_hash') == 'dir':
        return 'create_directory'
    return 'write' if file.get('old_hash') is None else 'edit'


async def rewind(
    state: RootState,
    to: str,
    paths: Sequence[str] | None,
    *,
    force: bool = False,
    ctx: RunContext[Any] | None = None,
) -> dict[str, Any] | str:
    """Plan the rewind to before `to`, announce each file to `ctx`'s listeners (a veto of one is the
    returned refusal text, nothing changed), then commit it; without `ctx`, plan and commit in one
    step of the store (`RootState.rewind_whole`). Returns the core's result with `unrestorable`
    added. Runs under the root's turn: no checkpointed call of this process changes files meanwhile
    (another process's is kept out by the store's lock during each step; one landing between the
    announced plan and its commit is refused, to rewind again).

    Raises:
        CheckpointError: unknown `to` (pruned, or rewound already), or a conflict without `force`
            (nothing changed).
        ValueError: a path of `paths` that no checkpoint from `to` on changed (nothing changed).
    """
    async with state.turn():
        await state.sweep_jobs()
        if paths is not None:
            paths = [str(p) for p in paths]
            _check_paths(await state.call('list', None), to, paths)
        try:
            if ctx is None:  # nothing to announce: planned and committed in one step of the store
                return await state.rewind_whole(to, paths, force=force)
            plan = await state.plan_rewind(to, paths)
        except _core.CheckpointError as error:
            if str(error) != f'No checkpoint {to}.':
                raise
            raise _core.CheckpointError(
                f'No checkpoint {to}: it was rewound already (a rewind drops the checkpoints it undid), '
                'or never recorded.'
            ) from None
        if ctx is not None:
            for file in plan['files']:
                diff = file.get('diff') or ''
                announcement = Announcement(
                    file['path'],
                    state.root,
                    _operation(file),
                    diff[:MAX_EVENT_DIFF_CHARS],
                    len(diff) > MAX_EVENT_DIFF_CHARS,
                )
                if (refusal := await announce(ctx, announcement)) is not None:
                    return f'Nothing was rewound: {refusal}'
        result = dict(await state.commit_rewind(plan, force=force))
    result['unrestorable'] = list(plan.get('unrestorable', []))
    return result


def _own_checkpoints(checkpoints: list[dict[str, Any]], ctx: RunContext[Any]) -> list[dict[str, Any]]:
    """The checkpoints of tool calls the model made in this conversation, oldest first: this run's, and
    those whose run id and tool call id are both those of a tool call in its messages (a tool call id
    alone may be reused by another conversation)."""
    calls = {
        (message.run_id, part.tool_call_id)
        for message in ctx.messages
        if isinstance(message, ModelResponse) and message.run_id is not None
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }
    return [c for c in checkpoints if c['run_id'] == ctx.run_id or (c['run_id'], c['tool_call_id']) in calls]


def _covers(path: str, paths: Iterable[str]) -> bool:
    """Whether `path` is one of `paths` or beneath one of them (as the core limits a rewind)."""
    return any(path == p or path.startswith(p + '/') for p in paths)


def _changed_after(checkpoints: list[dict[str, Any]], own: list[dict[str, Any]], paths: Sequence[str]) -> list[str]:
    """Of `paths`, those a checkpoint not in `own` changed after the first of `own` (sorted)."""
    mine = {c['id'] for c in own}
    start = next(i for i, c in enumerate(checkpoints) if c['id'] == own[0]['id'])
    later = {p for c in checkpoints[start:] if c['id'] not in mine for p in c['paths']}
    return sorted(p for p in later if _covers(p, paths))


async def _running_jobs(state: RootState, rewound: list[dict[str, Any]]) -> list[str]:
    """The ids of the background jobs still running that the calls of the `rewound` checkpoints started."""
    calls = {(c['run_id'], c['tool_call_id']) for c in rewound}
    jobs = getattr(state, 'jobs', [])  # a workspace whose files are not on this host follows no jobs
    return [
        posixpath.basename(job.directory)
        for job in jobs
        if (job.run_id, job.tool_call_id) in calls and not await job.finished()
    ]


def _root_relative(path: str, root: str) -> str:
    """The model's `path` as checkpoints name it: root-relative, normalized."""
    if posixpath.isabs(path):
        path = posixpath.relpath(path, root)
    return posixpath.normpath(path)


def _said(result: dict[str, Any] | str, rewound: Sequence[str]) -> str:
    """The tool result: what was put back, removed and what could not be."""
    if isinstance(result, str):
        return result
    lines = [f'Rewound {len(rewound)} change{"s" if len(rewound) != 1 else ""} ({", ".join(rewound)}).']
    for key, label in (('restored', 'Restored'), ('deleted', 'Deleted'), ('removed_dirs', 'Removed directories')):
        if result.get(key):
            lines.append(f'{label}: {", ".join(result[key])}')
    if result.get('failed'):
        lines.append(f'Failed: {", ".join(result["failed"])}')
    if result.get('unrestorable'):
        lines.append(f'Could not restore (too big to keep, or pruned): {", ".join(result["unrestorable"])}')
    return '\n'.join(lines)


async def _pruned_note(state: RootState) -> str:
    """What the model is told when changes of its may have been pruned (`budget_bytes`)."""
    if not await state.call('pruned'):
        return ''
    return (
        ' Older changes were pruned to keep the checkpoint store within its size budget: '
        'a pruned change cannot be rewound.'
    )


def _for_the_model(message: str) -> str:
    """The core's refusal, said so the model can act on it (it has no `force`)."""
    head, sep, _ = message.partition(' Rewind with force=True')
    if not sep:
        return message
    return head + ' A person or another process changed them after you: leave them as they are, or ask the user.'


def rewind_toolset(checkpoints: Checkpoints[Any]) -> FunctionToolset[Any]:
    """The `rewind` model tool of `checkpoints`."""
    toolset = FunctionToolset[Any](id='checkpoints')

    async def rewind_tool(ctx: RunContext[Any], steps: int = 1, path: str | None = None) -> str:
        """Undo your own last changes to the workspace: files written, edited, created or deleted by
        your file tools and shell commands are put back as they were before.

        Args:
            steps: How many of your last changing tool calls to undo (default 1).
            path: Undo only this file's last change (a path relative to the workspace root) instead.
        """
        if not events_reachable(ctx):
            # A Temporal activity: the run's messages (whose calls are the model's own) and its
            # listeners (each file is announced first) live in the workflow.
            raise UserError(
                'The `rewind` tool of `Checkpoints` does not run under Temporal: undo with '
                '`await checkpoints.rewind(to=...)` outside the workflow instead.'
            )
        if steps < 1:
            raise ModelRetry('steps must be at least 1.')
        state = await checkpoints._api_state_async()  # pyright: ignore[reportPrivateUsage]
        root = state.root
        await checkpoints._sweep_all()  # pyright: ignore[reportPrivateUsage]
        listing = await state.call('list', None)
        own = _own_checkpoints(listing, ctx)
        if path is not None:
            relative = _root_relative(path, root)
            own = [c for c in own if relative in c['paths']][-1:]
            if not own:
                return f'Nothing to rewind: no change of {path!r} by you is recorded.' + await _pruned_note(state)
            paths = [relative]
        else:
            own = own[-steps:]
            if not own:
                return 'Nothing to rewind: no change by you is recorded.' + await _pruned_note(state)
            paths = sorted({p for c in own for p in c['paths']})
        if taken := _changed_after(listing, own, paths):
            raise ModelRetry(
                f'Cannot rewind: {", ".join(taken)} changed again after your change, by another conversation or '
                'a person; rewinding would undo their work too. Leave these files as they are, or ask the user.'
            )
        try:
            result = await rewind(state, own[0]['id'], paths, ctx=ctx)
        except _core.CheckpointError as error:
            raise ModelRetry(_for_the_model(str(error))) from error
        said = _said(result, [c['id'] for c in own])
        if not isinstance(result, str) and (running := await _running_jobs(state, own)):
            said += (
                f'\nStill running: background command {", ".join(running)}, started by a rewound call: what it '
                'changes from now on is recorded again. Stop it (stop_command) to keep the files as rewound.'
            )
        return said

    toolset.add_function(rewind_tool, name='rewind')
    return toolset
