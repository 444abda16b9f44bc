"""`Checkpoints`: every change the agent makes to a workspace, undoable (issue 23).

A capability beside `FileSystem` and/or `Shell`. Its `wrap_tool_execute` hook makes a
`CallRecorder` current for each tool call (`_recording.py`): the FileSystem change tools keep
the old state of the files they are about to change and record the new one (`LocalEngine.commit`);
around `run_command`, `start_command` and `shell` this module takes a snapshot of the tree before
the command and records what differs after it. Both go to the Rust store of the root
(`_core.CheckpointStore`, state on disk under `.pydantic-ai-harness/checkpoints/`). On a workspace
whose files are not on this host, the file tools' changes, and shell commands on a backend that runs
them, go through the workspace protocol to a store on this host instead (`_remote.py`: `store_dir`,
or a temporary directory). The API (`list`, `diff`, `rewind`) and the
opt-in `rewind` tool (`_rewind.py`) read and undo them.
"""

from __future__ import annotations

import atexit
import os
import posixpath
import shutil
import sys
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import AgentDepsT, RunContext, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.workspaces import Workspace, WorkspaceBackend

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs._sandbox import in_workflow_sandbox
from pydantic_ai_harness_rs.checkpoints._recording import RECORDING, CallRecorder, finish_now
from pydantic_ai_harness_rs.checkpoints._remote import RemoteState
from pydantic_ai_harness_rs.checkpoints._stores import OpenJob, RootState, job_directory_of, real_root
from pydantic_ai_harness_rs.durable._events import beneath_durable

if TYPE_CHECKING:
    from pydantic_ai.capabilities.abstract import ValidatedToolArgs, WrapToolExecuteHandler

__all__ = ['CHECKPOINT_TOOL_NAMES', 'SHELL_TOOL_NAMES', 'Checkpoints']

CHECKPOINT_TOOL_NAMES = ('rewind',)
"""The opt-in model tools of `Checkpoints`."""

SHELL_TOOL_NAMES = (
    'run_command',
    'start_command',
    'shell',
    'start_session',
    'write_stdin',
    'read_session',
    'stop_session',
)
"""The `Shell` tools that may change anything: snapshot before, record after. The session tools of
`Shell(interactive=True)` let the session's program run (and act on what is typed) while they wait,
so what it changes during such a call counts against that call."""

REMOTE_COMMAND_TOOLS = ('run_command', 'start_command', 'shell')
"""The `Shell` tools checkpointed on a workspace whose files are not on this host (`_remote.py`)."""

_OPEN: weakref.WeakValueDictionary[tuple[str, tuple[str, ...], int, int], RootState] = weakref.WeakValueDictionary()
"""The stores open in this process, by root and settings: two `Checkpoints` on one root share one store
(its baseline is written back lazily, so two stores of one root would overwrite each other's)."""

_OPEN_REMOTE: weakref.WeakValueDictionary[tuple[str, tuple[str, ...], int, int], RemoteState] = (
    weakref.WeakValueDictionary()
)
"""The host-side stores of non-local workspaces open in this process, by `store_dir` (symlinks resolved)
and settings: two `Checkpoints` on one `store_dir` share one store (and its turn), as on one local root;
other processes take turns with it through the store's lock."""

_OPENING = threading.Lock()

_JOB_TOOLS = frozenset({'start_command', 'shell'})
"""The tools whose process may outlive the call."""


@dataclass
class Checkpoints(AbstractCapability[AgentDepsT]):
    """Record a checkpoint before every tool call that changes a local workspace, and undo them.

    Add it beside `FileSystem` and/or `Shell`: `Agent(capabilities=[FileSystem(...), Shell(),
    LocalWorkspace(...), Checkpoints()])`. Each `write_file`, `edit_file`, `create_directory` and
    `apply_patch` keeps the old state (bytes, mode, existence) of the files it changes; each
    `run_command`, `start_command` and `shell` call compares the tree's metadata before and after
    and keeps the old bytes of whatever changed. A background job's changes count against the call
    that started it until it ends. Old bytes live content-addressed under
    `<root>/.pydantic-ai-harness/checkpoints/`, so the checkpoints survive a restart.
    On a workspace whose files are not on this host (a sandbox, a remote machine), the file tools'
    changes are read through the workspace protocol and kept on this host (`store_dir`); on one that
    runs commands, `run_command`, `start_command` and `shell` are compared through metadata listings
    taken there (GNU `find`), the first one reading the whole tree.

    Args:
        tools: Opt-in model tools: `['rewind']` lets the model undo its own last steps.
        exclude: Root-relative patterns not tracked (a trailing `/`: a directory and all beneath).
        max_file_bytes: Files larger than this (bytes) are recorded by hash only; a rewind says it
            cannot restore them.
        budget_bytes: The store's size bound (bytes); the oldest checkpoints are pruned first.
        root: The workspace root the API (`list`, `diff`, `rewind`) works on before any run used
            the capability; by default the directory of the first run's local workspace, else the root of
            the first `FileSystem` call it saw.
        store_dir: The host directory that keeps the checkpoints of a workspace whose files are not on
            this host (one workspace root per directory; `Checkpoints` objects and processes naming one
            directory share its checkpoints, taking turns through its lock). `None`: a temporary directory removed
            when the capability is garbage-collected or the process exits, so those checkpoints do not
            survive a restart.

    Raises:
        ValueError: `tools` names an unknown tool.
    """

    tools: Sequence[str] = field(default_factory=list[str])
    exclude: Sequence[str] = field(default_factory=lambda: ['.git/'])
    max_file_bytes: int = 64 * 2**20
    budget_bytes: int = 2**30
    root: str | Path | None = None
    store_dir: str | Path | None = None

    _remote: RemoteState | None = field(default=None, init=False, repr=False, compare=False)
    _states: dict[str, RootState] = field(default_factory=dict[str, RootState], init=False, repr=False, compare=False)
    _first_root: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if unknown := sorted(set(self.tools) - set(CHECKPOINT_TOOL_NAMES)):
            raise ValueError(f'Unknown checkpoint tools: {", ".join(unknown)}. Available: rewind.')

    # --- stores ------------------------------------------------------------------------------

    def _open(self, root: str) -> RootState:
        """The state of `root` (absolute, symlink-free), the store opened (or loaded) the first time."""
        with _OPENING:  # one store per root, even when two worker threads open it at once
            state = self._states.get(root)
            if state is None:
                key = (root, tuple(self.exclude), self.max_file_bytes, self.budget_bytes)
                state = _OPEN.get(key)
                if state is None:
                    store = _core.CheckpointStore(
                        root,
                        exclude=list(self.exclude),
                        max_file_bytes=self.max_file_bytes,
                        budget_bytes=self.budget_bytes,
                    )
                    state = _OPEN[key] = RootState(root, store)
                self._states[root] = state
            if self._first_root is None:
                self._first_root = root
            return state

    def _open_remote(self, root: str | None) -> RemoteState:
        """The store of the non-local workspace root `root` (a workspace path; `None`: the one
        `store_dir` holds), opened the first time.

        With `root` `None` and nothing recorded in `store_dir` yet, its empty store (no checkpoints,
        every id unknown), not kept: the first run names the root.

        Raises:
            UserError: a second non-local root.
            CheckpointError: `store_dir` holds another root's checkpoints.
        """
        with _OPENING:
            if self._remote is not None:
                if root is not None and root != self._remote.root:
                    raise UserError(
                        f'`Checkpoints` records one workspace whose files are not on this host, at {self._remote.root!r}: '
                        f'use another `Checkpoints(store_dir=...)` for {root!r}.'
                    )
                return self._remote
            if self.store_dir is not None:
                directory = real_root(str(self.store_dir))
                if root is None and not os.path.isdir(directory):
                    # Nothing recorded there, and asking does not create it: an empty store elsewhere.
                    directory = tempfile.mkdtemp(prefix='harness-checkpoints-')
                    store = _core.RemoteCheckpointStore(directory, root=None, exclude=list(self.exclude))
                    shutil.rmtree(directory, ignore_errors=True)
                    return RemoteState('', store)
            else:
                directory = tempfile.mkdtemp(prefix='harness-checkpoints-')
                weakref.finalize(self, shutil.rmtree, directory, ignore_errors=True)  # also at exit
            key = (directory, tuple(self.exclude), self.max_file_bytes, self.budget_bytes)
            shared = _OPEN_REMOTE.get(key)
            if shared is None or (root is not None and root != shared.root):
                # Another root's `store_dir` is refused here (a `CheckpointError` from the core).
                store = _core.RemoteCheckpointStore(
                    directory,
                    root=root,
                    exclude=list(self.exclude),
                    max_file_bytes=self.max_file_bytes,
                    budget_bytes=self.budget_bytes,
                )
                if store.root is None:
                    return RemoteState('', store)  # no root, no files to read: nothing is recorded there
                shared = _OPEN_REMOTE[key] = RemoteState(store.root, store)
            self._remote = shared
            return self._remote

    async def _remote_for(self, root: str) -> RemoteState | None:
        """The store of the non-local root `root`; `None` (with a warning) when this capability
        records another non-local root already: one per capability (its store holds one root)."""
        known = self._remote
        if known is not None and known.root != root:
            warnings.warn(
                f'`Checkpoints` records the workspace root {known.root!r} (its files are not on this host); '
                f'a change under {root!r} is not checkpointed.',
                stacklevel=2,
            )
            return None
        if known is not None:
            return known
        return await anyio.to_thread.run_sync(self._open_remote, root)

    async def _state_for(self, root: str) -> RootState:
        state = self._states.get(root)  # opened before: no lock needed to read it
        if state is not None:
            return state
        return await anyio.to_thread.run_sync(self._open, root)  # opening may recover a half-written state

    def _api_state(self) -> RootState:
        """The store the API works on: `root`'s, else the first local root's, else the non-local
        workspace's (`store_dir`'s after a restart).

        Raises:
            UserError: no root yet (see `root`, `store_dir`).
        """
        if self.root is not None:
            return self._open(real_root(str(self.root)))
        if self._first_root is not None:
            return self._open(self._first_root)
        if self._remote is not None:
            return self._remote
        if self.store_dir is not None:
            return self._open_remote(None)
        raise UserError(
            '`Checkpoints` has no workspace root yet: run the agent with a `FileSystem` or `Shell` first, '
            'or pass `Checkpoints(root=...)`.'
        )

    async def _api_state_async(self) -> RootState:
        if self.root is None and self._first_root is None and self._remote is not None:
            return self._remote
        return await anyio.to_thread.run_sync(self._api_state)  # opening may recover a half-written state

    # --- the hooks ---------------------------------------------------------------------------

    async def before_run(self, ctx: RunContext[AgentDepsT]) -> None:
        """Take a local workspace's directory as the API's root when none is known yet."""
        if self.root is None and self._first_root is None and not _in_workflow_code():
            self._first_root = await shell_root(ctx)

    async def wrap_tool_execute(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        """Run the tool call with its recorder current; a shell command between two snapshots.

        Not in Temporal or DBOS workflow code, where no I/O may run (it is replayed): there the call
        passes through, and the activity or step that runs its work records the checkpoint
        (`_units.py`)."""
        if _in_workflow_code():
            return await handler(args)
        for state in self._states.values():
            if state.jobs:
                await self._sweep_all()
                break
        recorder = CallRecorder(
            self._state_for,
            ctx.run_id,
            call.tool_call_id,
            call.tool_name,
            time.time(),
            remote_for=self._remote_for,
            opened=self._states,
        )
        root = await shell_root(ctx) if call.tool_name in SHELL_TOOL_NAMES else None
        if root is not None:
            return await self._command(ctx, recorder, await self._state_for(root), args, handler)
        remote = await self._remote_commands(ctx) if call.tool_name in REMOTE_COMMAND_TOOLS else None
        if remote is not None:
            state, workspace = remote
            token = RECORDING.set(recorder)
            try:
                return await state.command(recorder, workspace, lambda: handler(args))
            finally:
                RECORDING.reset(token)
        token = RECORDING.set(recorder)
        try:
            return await handler(args)
        finally:
            RECORDING.reset(token)

    async def _command(
        self,
        ctx: RunContext[AgentDepsT],
        recorder: CallRecorder,
        state: RootState,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        """A shell command between a snapshot and its record, under the root's turn; a job it
        leaves running stays open against its checkpoint."""
        async with state.turn():
            await state.sweep_jobs()
            handle = await state.call('snapshot', call=True, **recorder.command_identity())
            if not recorder.identity():  # a durable unit's snapshot may count it as its dead attempt's
                await state.count_for_jobs(handle)  # a job's change since the look at it is the job's
            token = RECORDING.set(recorder)  # a unit the call runs in (a Prefect task) records nothing again
            try:
                return await handler(args)
            finally:
                RECORDING.reset(token)
                with anyio.CancelScope(shield=True):
                    job = await self._started_job(recorder, state.root)
                    if job is None:
                        await state.record(handle, recorder)
                    else:
                        job.cpu = await job.cpu_now()  # before the record: what it does after is its
                        listing, job_handle = await state.record_for_job(handle, recorder)
                        await state.open_job(job, listing, job_handle)

    async def _remote_commands(self, ctx: RunContext[AgentDepsT]) -> tuple[RemoteState, Workspace] | None:
        """The store and workspace of a shell command on a workspace whose files are not on this host
        and that runs commands; `None` otherwise. Its root is the working directory (symlinks
        resolved), listed whole before and after the command."""
        from pydantic_ai_harness_rs._workspace import files_on_host, supports_commands

        workspace = getattr(ctx, 'workspace', None)
        if workspace is None:
            return None
        workspace = beneath_durable(workspace)
        if not supports_commands(workspace) or files_on_host(workspace):
            return None
        cwd = posixpath.normpath(await workspace.working_dir())
        root = cwd if cwd == '/' else await workspace.realpath(cwd)
        if root == '/':  # a listing of the whole file system: not taken
            warnings.warn('`Checkpoints` does not list a workspace whose root is /: commands are not checkpointed.')
            return None
        state = await self._remote_for(root)
        return None if state is None else (state, workspace)

    async def _started_job(self, recorder: CallRecorder, root: str) -> OpenJob | None:
        """The background job `recorder`'s call left running, if any."""
        if recorder.tool_name not in _JOB_TOOLS:
            return None
        directory = job_directory_of(root, recorder.run_id, recorder.tool_call_id)
        if directory is None:
            return None
        job = OpenJob(
            directory,
            recorder.run_id,
            recorder.tool_call_id,
            recorder.tool_name,
            recorder.created_at,
        )
        return None if await job.finished() else job

    async def _sweep_all(self, *, adopt: bool = False) -> None:
        """Count the open background jobs' changes against their checkpoints (each root in its turn).
        `adopt` (the API's looks): the jobs of a process that ended while they ran are taken over
        first (`RootState.sweep_jobs`); a tool call needs no such look here, since a checkpointed
        call sweeps its own root (a file tool's checkpoint takes that path while any job is followed)."""
        for state in list(self._states.values()):
            if state.jobs or adopt:
                async with state.turn():
                    await state.sweep_jobs()

    # --- the API -----------------------------------------------------------------------------

    def list(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """The checkpoints, oldest first (only `run_id`'s when given).

        Each is `{'id': str, 'run_id': str | None, 'tool_call_id': str | None, 'tool_name': str,
        'paths': list[str] (root-relative, sorted), 'created_at': float (epoch seconds),
        'bytes_kept': int}`. A running background job's latest changes are counted at the next
        tool call, `diff`, `rewind` or `list_async`. While another process's checkpointed call on
        the root is in progress (or another process holds the store's lock), blocks the calling
        thread until it ends (the GIL released): from async code, use `await list_async(...)`,
        which waits in a worker thread instead of blocking the event loop.

        Raises:
            UserError: no root yet (see `root`).
        """
        state = self._api_state()
        _finish_open_stores()
        return state.store.list(run_id)

    async def list_async(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """`list` for async code: a running background job's changes counted first, then the
        checkpoints read in a worker thread (waiting for another process's call without blocking the
        event loop).

        Returns the checkpoints oldest first, as `list`: `{'id', 'run_id', 'tool_call_id', 'tool_name',
        'paths', 'created_at' (epoch seconds), 'bytes_kept' (bytes)}`; only `run_id`'s with one.

        Raises:
            UserError: no root yet (see `root`).
        """
        state = await self._api_state_async()
        await self._sweep_all(adopt=True)
        return await state.call('list', run_id)

    def pruned(self) -> list[str]:
        """The ids of the checkpoints pruned to keep the store within `budget_bytes`, oldest first
        (their old bytes are gone: a rewind to one of them is refused). Blocks as `list` does: from
        async code, use `await pruned_async()`.

        Raises:
            UserError: no root yet (see `root`).
        """
        state = self._api_state()
        _finish_open_stores()
        return state.store.pruned()

    async def pruned_async(self) -> list[str]:
        """`pruned` for async code, read in a worker thread (see `list_async`): the pruned ids, oldest
        first.

        Raises:
            UserError: no root yet (see `root`).
        """
        state = await self._api_state_async()
        return await state.call('pruned')

    async def diff(self, checkpoint_id: str) -> list[tuple[str, str]]:
        """Per path that call changed: `(path, unified diff from before to after)`; a one-line note for
        a binary, symlink, mode-only, too big, created or deleted file.

        Raises:
            UserError: no root yet. CheckpointError: unknown or pruned `checkpoint_id`.
        """
        state = await self._api_state_async()
        await self._sweep_all(adopt=True)
        return await state.call('diff', checkpoint_id)

    async def rewind(
        self,
        to: str,
        paths: Sequence[str] | None = None,
        force: bool = False,
        *,
        workspace: WorkspaceBackend | None = None,
    ) -> dict[str, Any]:
        """Put the workspace back as it was before checkpoint `to` (and every later one): file
        contents, modes, deleted files and directories back, created ones removed (a directory the
        agent made and left empty too), each file replaced atomically. `paths` (root-relative):
        only those files. The rewound checkpoints are dropped. On a workspace whose files are not on
        this host the files are read and written through the workspace protocol (no modes, no
        symlinks, no atomic replace: see the README); `workspace` (a backend or `Workspace`) is the
        one to write to when no run used it in this process (after a restart).

        Returns `{'restored': [...], 'deleted': [...], 'removed_dirs': [...], 'failed': [...],
        'unrestorable': [...]}` (root-relative paths; `restored` includes recreated directories;
        `failed`: could not be put back; `unrestorable`: kept by hash only or pruned, left as they are).

        Raises:
            UserError: no root yet.
            CheckpointError: a file changed since the agent's last change of it, by someone else,
                named in the message (pass `force=True` to overwrite it), or `to` is unknown (pruned,
                rewound already, or never recorded); nothing is changed then.
            ValueError: `paths` names a path no checkpoint from `to` on changed (nothing is changed).
        """
        from pydantic_ai_harness_rs.checkpoints._rewind import rewind

        state = await self._api_state_async()
        if workspace is not None and isinstance(state, RemoteState):
            from pydantic_ai_harness_rs.filesystem._sane import SaneFiles

            state.files = SaneFiles(workspace if isinstance(workspace, Workspace) else Workspace(workspace))
        await self._sweep_all(adopt=True)
        result = await rewind(state, to, paths, force=force)
        assert not isinstance(result, str)  # only a listener refuses, and outside a run there is none
        return result

    # --- the tool ----------------------------------------------------------------------------

    def get_toolset(self) -> AbstractToolset[AgentDepsT] | None:
        """The `rewind` tool, when `tools` names it."""
        if 'rewind' not in self.tools:
            return None
        from pydantic_ai_harness_rs.checkpoints._rewind import rewind_toolset

        return rewind_toolset(self)


def _finish_open_stores() -> None:
    """Record the file changes whose checkpoints wait for the event loop's next iteration
    (`finish_soon`), in every store open in this process, before a call that blocks the calling
    thread for the store's lock: another `Checkpoints` on the same root (other settings: a store
    of its own) would otherwise wait on this thread for a lock this process holds until then."""
    for state in list(_OPEN.values()):
        finish_now(state.store)


@atexit.register
def _finish_open_stores_at_exit() -> None:
    """At exit, record what still waits for an event loop's next iteration (a loop stopped right
    after an edit and never closed) and let the stores' writer threads finish: they end with the
    process, and a store still referenced is never dropped."""
    for state in list(_OPEN.values()):
        finish_now(state.store, flush=True)


def _in_workflow_code() -> bool:
    """Temporal or DBOS workflow code: no I/O here, the call's unit records (`_units.py`)."""
    if in_workflow_sandbox():
        return True
    if 'dbos' not in sys.modules:  # the import below costs more than a whole check
        return False
    from pydantic_ai_harness_rs.durable._operations import in_dbos_workflow

    return in_dbos_workflow()


async def shell_root(ctx: RunContext[Any]) -> str | None:
    """The root a shell command runs in: the working directory of a workspace whose files are on this
    host (a `LocalWorkspaceBackend`, or a subclass reached through the protocol: its file tools record
    into the same store), `None` otherwise (`_remote_commands`). Under a durable engine's workspace
    wrapper (a Prefect flow's), the workspace beneath it (its calls there only pass through)."""
    from pydantic_ai_harness_rs._workspace import files_on_host

    workspace = getattr(ctx, 'workspace', None)
    if workspace is not None:
        workspace = beneath_durable(workspace)
    if workspace is None or not workspace.attached or not files_on_host(workspace):
        return None
    return real_root(await workspace.working_dir())
