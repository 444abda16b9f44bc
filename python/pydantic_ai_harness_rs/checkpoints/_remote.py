"""Checkpoints of a workspace whose files are not on this host (the FileSystem's `RemoteEngine`).

The store lives on this host, in `Checkpoints(store_dir=...)` or else a temporary directory the
capability owns for the life of the process: `_core.RemoteCheckpointStore` (Rust) hashes, keeps
the old bytes, records, plans a rewind and checks it for other people's changes. This module only
moves bytes through the workspace protocol: before a file tool's commit it reads the state (bytes,
a directory, or nothing) of each path the commit changes and of the directories above it; after
the commit, their new states; the store records what differs as the call's checkpoint. A rewind
reads the current states, has the store plan and check them, and carries out its steps through
`remove`, `write_bytes` and `make_dir`.

The protocol carries no permission bits and follows symlinks: a file's mode is not recorded (a
rewound file gets the mode the backend gives a write), and a write through a symlink is recorded
(and rewound) as the bytes of the file it leads to, at the link's path.
"""

from __future__ import annotations

import errno
import posixpath
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from pydantic_ai.exceptions import UserError
from pydantic_ai.workspaces import FileEntry, WorkspaceError, WorkspaceUnavailableError

from pydantic_ai_harness_rs.checkpoints._stores import RootState

if TYPE_CHECKING:
    from pydantic_ai_harness_rs import _core
    from pydantic_ai_harness_rs.checkpoints._recording import CallRecorder

__all__ = ('RemoteFiles', 'RemoteState', 'read_state')

SeenState = bytes | str | None
"""A path's state as the store takes it: the file's bytes, `'dir'`, or `None` (nothing there)."""


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

    def _path(self, relative: str) -> str:
        return posixpath.join(self.root, relative)

    async def _states(self, files: RemoteFiles, relatives: Sequence[str]) -> list[tuple[str, SeenState]]:
        return [(relative, await read_state(files, self._path(relative))) for relative in relatives]

    @asynccontextmanager
    async def change(self, recorder: CallRecorder, files: RemoteFiles, paths: Sequence[str]) -> AsyncIterator[None]:
        """Read `paths` (root-relative) and the directories above them before the body (the commit),
        again after it, and record what differs as `recorder`'s call, under the root's turn."""
        self.files = files
        async with self.turn():
            observed: list[str] = self.store.observed(list(paths))  # pyright: ignore[reportAttributeAccessIssue]
            before = await self._states(files, observed)
            try:
                yield
            finally:
                with anyio.CancelScope(shield=True):  # a cancelled commit's writes are still recorded
                    after = await self._states(files, observed)
                    if not (recorder.once and await self.recorded_for(recorder) is not None):
                        listing = await self.call(
                            'record',
                            [(path, old, new) for (path, old), (_, new) in zip(before, after)],
                            run_id=recorder.run_id,
                            tool_call_id=recorder.tool_call_id,
                            tool_name=recorder.tool_name,
                            created_at=recorder.created_at,
                        )
                        if listing is not None:
                            recorder.recorded.append(listing)

    def _files(self) -> RemoteFiles:
        if self.files is None:
            raise UserError(
                'These checkpoints are of a workspace whose files are not on this host: pass it to '
                '`rewind(..., workspace=...)`, or run the agent on it first.'
            )
        return self.files

    async def plan_rewind(self, to: str, paths: Sequence[str] | None) -> dict[str, Any]:
        """The rewind's plan from the current states, read through the protocol."""
        files = self._files()
        current = await self._states(files, await self.call('rewind_paths', to, paths))
        return await self.call('plan_rewind', to, paths, current)

    async def commit_rewind(self, plan: dict[str, Any], *, force: bool = False) -> dict[str, Any]:
        """Read the current states again, have the store check them against `plan` (a conflict is a
        `CheckpointError` unless `force`), then carry out its steps through the protocol. The
        rewound checkpoints are dropped when every step succeeded (else they stay, to run it again)."""
        files = self._files()
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
