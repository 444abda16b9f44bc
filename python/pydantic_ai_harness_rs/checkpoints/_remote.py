"""Checkpoints of a workspace whose files are not on this host (the FileSystem's `RemoteEngine`).

The store lives on this host, in `Checkpoints(store_dir=...)` or else a temporary directory the
capability owns for the life of the process: `_core.RemoteCheckpointStore` (Rust) hashes, keeps
the old bytes, records, plans a rewind and checks it for other people's changes. This module only
moves bytes through the workspace protocol: before a file tool's commit it reads the state (bytes,
a directory, or nothing) of each path the commit changes and of the directories above it; after
the commit, their new states; the store records what differs as the call's checkpoint. A rewind
reads the current states, has the store plan and check them, and carries out its steps through
`remove`, `write_bytes` and `make_dir`.

On a backend that runs commands, `run_command`, `start_command` and `shell` are bracketed by two
metadata listings of the tree, each one `run` of GNU `find` in the workspace
(`RemoteCheckpointStore.listing_command`): before the command, whatever differs from the store's
index (the first time: every file) is read through the protocol, so the old bytes of whatever the
command changes are on this host before it runs; after it, what moved between the two listings is
read and recorded. A listing that fails (no GNU `find`, a timeout, an output cut short) leaves that
command unrecorded, with a warning.

Several `Checkpoints` objects of this process on one `store_dir` share one store (`_capability`);
other processes may record into it too: each call, from its first read to its record, and each
rewind's steps hold the store's lock (`held`, the core's `hold`), and the core reloads what another
process wrote, so ids stay unique and every process lists and rewinds the same checkpoints.

The protocol carries no permission bits and follows symlinks: a file's mode is not recorded (a
rewound file gets the mode the backend gives a write), and a write through a symlink is recorded
(and rewound) as the bytes of the file it leads to, at the link's path.
"""

from __future__ import annotations

import errno
import posixpath
import shlex
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
from pydantic_ai.exceptions import UserError
from pydantic_ai.workspaces import FileEntry, Workspace, WorkspaceError, WorkspaceUnavailableError

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.checkpoints._stores import RootState

if TYPE_CHECKING:
    from pydantic_ai_harness_rs.checkpoints._recording import CallRecorder

T = TypeVar('T')

LISTING_TIMEOUT = 300.0
"""Seconds a listing may take before the command runs unrecorded."""

__all__ = ('RemoteFiles', 'RemoteState', 'read_state')

SeenState = bytes | str | None
"""A path's state as the store takes it: the file's bytes, `'dir'`, `'?'` (a file that could not
be read), or `None` (nothing there)."""


class RemoteFiles(Protocol):
    """The workspace protocol's file methods, on absolute workspace paths (`filesystem._sane.SaneFiles`)."""

    async def read_bytes(self, path: str) -> bytes: ...
    async def write_bytes(self, path: str, data: bytes) -> None: ...
    async def stat(self, path: str) -> FileEntry: ...
    async def list_dir(self, path: str) -> Sequence[FileEntry]: ...
    async def make_dir(self, path: str) -> None: ...
    async def remove(self, path: str) -> None: ...


async def read_state(files: RemoteFiles, path: str) -> SeenState:
    """The state of the absolute workspace path `path`: its bytes, `'dir'` or `None`."""
    try:
        if (await files.stat(path)).is_dir:
            return 'dir'
        return await files.read_bytes(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        return 'dir'


class RemoteState(RootState):
    """The store of one non-local workspace root (a workspace path), and how to reach its files."""

    def __init__(self, root: str, store: _core.RemoteCheckpointStore) -> None:
        super().__init__(root, store)  # pyright: ignore[reportArgumentType]
        self.files: RemoteFiles | None = None
        """The files of the last run's workspace (or the one given to `Checkpoints.rewind`)."""

    def _adopt(self) -> None:
        """Nothing to take over: a workspace whose files are not on this host follows no jobs."""

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Hold the store's lock (waited for in a worker thread while another process's call or
        rewind on it is in progress): nothing another process records interleaves with the body."""
        handle = await self.call('hold')
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self.call('release', handle)

    def _path(self, relative: str) -> str:
        return posixpath.join(self.root, relative)

    async def _states(
        self, files: RemoteFiles, relatives: Sequence[str], *, lenient: bool = False
    ) -> list[tuple[str, SeenState]]:
        """The states of `relatives`; `lenient`: a file that cannot be read is `'?'` (a listing
        named it: recorded by hash `?`, not restorable) instead of an error."""
        out: list[tuple[str, SeenState]] = []
        for relative in relatives:
            try:
                out.append((relative, await read_state(files, self._path(relative))))
            except WorkspaceUnavailableError:
                raise
            except (OSError, WorkspaceError):
                if not lenient:
                    raise
                out.append((relative, '?'))
        return out

    async def _listing(self, workspace: Workspace) -> bytes | None:
        """The tree's metadata listing, taken in the workspace; `None` when it could not be taken."""
        command = f'cd {shlex.quote(self.root)} && {_core.RemoteCheckpointStore.listing_command}'
        try:
            result = await workspace.run(command, shell=True, timeout=LISTING_TIMEOUT)
        except WorkspaceUnavailableError:
            raise
        except (WorkspaceError, OSError):
            return None
        if result.exit_code != 0:
            return None
        return result.stdout.encode('utf-8', 'surrogateescape')

    def _unrecorded(self) -> None:
        warnings.warn(
            '`Checkpoints` could not list the workspace (it needs GNU `find` and `date`): '
            'this shell command is not checkpointed.',
            stacklevel=2,
        )

    async def command(self, recorder: CallRecorder, workspace: Workspace, call: Callable[[], Awaitable[T]]) -> T:
        """`call()`, a shell command on the workspace, between two listings under the root's turn;
        what it changed recorded as `recorder`'s call (module docstring)."""
        files = self.files = _sane(workspace)
        async with self.turn(), self.held():
            first = await self._listing(workspace)
            handle: int | None = None
            if first is not None:
                try:
                    handle, need = await self.call('snapshot', first, **recorder.identity())
                    await self.call('settle', handle, await self._states(files, need, lenient=True))
                except _core.CheckpointError:
                    if handle is not None:
                        await self.call('release', handle)
                    handle = None
            if handle is None:
                self._unrecorded()
                return await call()
            try:
                return await call()
            finally:
                with anyio.CancelScope(shield=True):  # a cancelled command's changes are still recorded
                    await self._record_command(recorder, workspace, files, handle)

    async def _record_command(
        self, recorder: CallRecorder, workspace: Workspace, files: RemoteFiles, handle: int
    ) -> None:
        second = await self._listing(workspace)
        try:
            read = None if second is None else await self.call('changed', handle, second)
        except _core.CheckpointError:
            read = None
        if read is None:
            self._unrecorded()
            await self.call('release', handle)
            return
        # A durable unit's call run again adds to the checkpoint an earlier attempt recorded.
        states = self._states(files, read, lenient=True)
        await self._recorded(recorder, 'record_command', handle, states, merge=recorder.once)

    @asynccontextmanager
    async def change(self, recorder: CallRecorder, files: RemoteFiles, paths: Sequence[str]) -> AsyncIterator[None]:
        """Read `paths` (root-relative) and the directories above them before the body (the commit),
        again after it, and record what differs as `recorder`'s call, under the root's turn and the
        store's lock. In a durable unit the store keeps a record of the call in progress (`keep`);
        an attempt of a call that has a checkpoint already records nothing again."""
        self.files = files
        async with self.turn(), self.held():
            observed: list[str] = self.store.observed(list(paths))  # pyright: ignore[reportAttributeAccessIssue]
            handle, again = await self.call('keep', await self._states(files, observed), **recorder.identity())
            try:
                yield
            finally:
                with anyio.CancelScope(shield=True):  # a cancelled commit's writes are still recorded
                    await self._record(recorder, files, handle, again)

    async def _record(self, recorder: CallRecorder, files: RemoteFiles, handle: int, paths: list[str]) -> None:
        """Record the `keep` handle `handle` from the states of `paths` now (released instead when
        the call has a checkpoint already: a retried commit finds its files written, so it changes
        nothing again)."""
        if recorder.once and await self.recorded_for(recorder) is not None:
            await self.call('release', handle)
            return
        await self._recorded(recorder, 'record', handle, self._states(files, paths))

    async def _recorded(
        self,
        recorder: CallRecorder,
        method: str,
        handle: int,
        states: Awaitable[list[tuple[str, SeenState]]],
        **extra: Any,
    ) -> None:
        """`store.<method>(handle, states)` as `recorder`'s call, its listing kept on `recorder`; the
        handle released instead when the states cannot be read."""
        try:
            read = await states
        except BaseException:
            await self.call('release', handle)
            raise
        await self.call(
            method,
            handle,
            read,
            **recorder.call_info(),
            **extra,
        )

    def _files(self) -> RemoteFiles:
        if self.files is None:
            raise UserError(
                'These checkpoints are of a workspace whose files are not on this host: pass it to '
                '`rewind(..., workspace=...)`, or run the agent on it first.'
            )
        return self.files

    async def plan_rewind(self, to: str, paths: Sequence[str] | None) -> dict[str, Any]:
        """The rewind's plan from the current states, read through the protocol."""
        relatives = await self.call('rewind_paths', to, paths)  # an unknown `to` first: no files needed
        current = await self._states(self._files(), relatives)
        return await self.call('plan_rewind', to, paths, current)

    async def rewind_whole(self, to: str, paths: list[str] | None, *, force: bool = False) -> dict[str, Any]:
        """Plan, then commit (this store is one process's: nothing else records between the two)."""
        plan = await self.plan_rewind(to, paths)
        result = dict(await self.commit_rewind(plan, force=force))
        result['unrestorable'] = list(plan.get('unrestorable', []))
        return result

    async def commit_rewind(self, plan: dict[str, Any], *, force: bool = False) -> dict[str, Any]:
        """Read the current states again, have the store check them against `plan` (a conflict is a
        `CheckpointError` unless `force`), then carry out its steps through the protocol, all under
        the store's lock. The rewound checkpoints are dropped when every step succeeded (else they
        stay, to run it again)."""
        files = self._files()
        async with self.held():
            return await self._commit_rewind(files, plan, force)

    async def _commit_rewind(self, files: RemoteFiles, plan: dict[str, Any], force: bool) -> dict[str, Any]:
        current = await self._states(files, await self.call('rewind_paths', plan['to'], plan['paths']))
        steps = await self.call('rewind_steps', plan, current, force=force)
        result: dict[str, list[str]] = {'restored': [], 'deleted': [], 'removed_dirs': [], 'failed': []}
        with anyio.CancelScope(shield=True):  # a rewind half done would leave the log behind the files
            for path, op, digest, reported, may_stay in steps:
                if path in result['failed']:
                    continue
                try:
                    if not await self._step(files, op, self._path(path), digest, may_stay):
                        continue
                except WorkspaceUnavailableError:
                    raise
                except (OSError, ValueError, WorkspaceError):
                    result['failed'].append(path)
                    continue
                if reported is not None:
                    result[reported].append(path)
            if not result['failed']:
                await self.call('finish_rewind', plan)
        return {key: sorted(value) for key, value in result.items()}

    async def _step(self, files: RemoteFiles, op: str, target: str, digest: str | None, may_stay: bool) -> bool:
        """One step of a rewind; `False`: a directory the calls made, left because it holds something now."""
        if op == 'write':
            await files.write_bytes(target, await self.call('object', digest))
        elif op == 'mkdir':
            await files.make_dir(target)
        elif op == 'remove':
            await files.remove(target)
        else:  # 'rmdir': only an empty directory (the protocol's `remove` takes a directory's contents too)
            if await files.list_dir(target):
                if may_stay:
                    return False
                raise OSError(errno.ENOTEMPTY, 'Directory not empty')
            await files.remove(target)
        return True


def _sane(workspace: Workspace) -> RemoteFiles:
    from pydantic_ai_harness_rs.filesystem._sane import SaneFiles

    return SaneFiles(workspace)
