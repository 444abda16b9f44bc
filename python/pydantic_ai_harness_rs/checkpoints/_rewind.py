"""A rewind through the change pipeline: plan (core), announce (`FileChangeRequestEvent` per file,
from the `rewind` tool), commit (core: every file re-checked, then replaced crash-safely).

`rewind` serves both `Checkpoints.rewind` (no listeners outside a run) and the opt-in model tool
`rewind`, which undoes the model's own last steps (the checkpoints of tool calls in the run's
messages) or a named file's last change.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
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
    returned refusal text, nothing changed), then commit it. Returns the core's result with
    `unrestorable` added. Runs under the root's turn: no checkpointed call changes files meanwhile.

    Raises:
        CheckpointError: unknown `to`, or a conflict without `force` (nothing changed).
    """
    async with state.turn():
        await state.sweep_jobs()
        plan = await state.call('plan_rewind', to, None if paths is None else [str(p) for p in paths])
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
        result = dict(await state.call('commit_rewind', plan, force=force))
    result['unrestorable'] = list(plan.get('unrestorable', []))
    return result


def _own_checkpoints(checkpoints: list[dict[str, Any]], ctx: RunContext[Any]) -> list[dict[str, Any]]:
    """The checkpoints of tool calls the model made in this conversation (its messages), oldest first."""
    calls = {
        part.tool_call_id
        for message in ctx.messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }
    return [c for c in checkpoints if c['tool_call_id'] in calls or c['run_id'] == ctx.run_id]


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
        root = checkpoints._api_root()  # pyright: ignore[reportPrivateUsage]
        state = await checkpoints._state_for(root)  # pyright: ignore[reportPrivateUsage]
        await checkpoints._sweep_all()  # pyright: ignore[reportPrivateUsage]
        own = _own_checkpoints(await state.call('list', None), ctx)
        paths: list[str] | None = None
        if path is not None:
            relative = _root_relative(path, root)
            own = [c for c in own if relative in c['paths']][-1:]
            if not own:
                return f'Nothing to rewind: no change of {path!r} by you is recorded.'
            paths = [relative]
        else:
            own = own[-steps:]
            if not own:
                return 'Nothing to rewind: no change by you is recorded.'
        try:
            result = await rewind(state, own[0]['id'], paths, ctx=ctx)
        except _core.CheckpointError as error:
            raise ModelRetry(str(error)) from error
        return _said(result, [c['id'] for c in own])

    toolset.add_function(rewind_tool, name='rewind')
    return toolset
