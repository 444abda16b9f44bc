"""`RemoteEngine`: the FileSystem tools on a workspace whose files are not on this host.

Every file operation goes through the workspace protocol (`pydantic_ai.workspaces`:
`SupportsFilesystem`, and `SupportsRealpath` / `SupportsCommands` for symlink resolution when the
backend has them). This module only moves bytes: it stats, lists, reads and writes, and hands what
it got to `_core.RemoteCore`, which resolves paths, checks containment and access patterns, renders
windows, hashes, plans writes and edits, filters walks and matches globs and regexes, and writes
every result text. Nothing runs inside the workspace, so walks and searches work the same whatever
is installed there (no `rg`, `grep` or `find`): `list_files`, `grep` and `search_files` follow
ripgrep's ignore files, read through the protocol as the walk meets them, and `list_files` and
`grep` give the text the local tools give for the same tree.

The contract is always the workspace one (pydantic-ai-harness 0.62.0, `upstream-0.62.md`).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import mimetypes
import posixpath
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import BinaryContent
from pydantic_ai.workspaces import (
    FileEntry,
    SupportsCommands,
    SupportsFilesystem,
    SupportsRealpath,
    Workspace,
    WorkspaceBackend,
    WorkspaceError,
    WorkspaceReadOnlyError,
    WorkspaceUnavailableError,
)

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs._errors import single_error
from pydantic_ai_harness_rs._native import INLINE_MAX_BYTES, run_sized
from pydantic_ai_harness_rs._workspace import files_on_host
from pydantic_ai_harness_rs.checkpoints._recording import RECORDING
from pydantic_ai_harness_rs.checkpoints._stores import real_root
from pydantic_ai_harness_rs.filesystem import _ranged
from pydantic_ai_harness_rs.filesystem._locks import storage_of
from pydantic_ai_harness_rs.filesystem._observe import ABSENT as ABSENT_HASH
from pydantic_ai_harness_rs.filesystem._observe import conflict
from pydantic_ai_harness_rs.filesystem._sane import SaneFiles

__all__ = ('RemoteEngine',)

_T = TypeVar('_T')
_M = TypeVar('_M', bound=Callable[..., Awaitable[Any]])

_Entry = tuple[str, bool, 'int | None']
"""An entry as `_core.RemoteCore` takes it: `(absolute path, is_dir, size or None)`."""

NO_READLINK = (
    "The workspace's shell has no `readlink`, so the symlinks on this path cannot be resolved and "
    'checked; the path was refused. Install `readlink` in the workspace (coreutils), or use a backend '
    'with `SupportsRealpath`.'
)
"""The failed tool result for a path through a symlink on a commands-only backend without `readlink`."""

_DROPPED = object()
"""What a search's reader gives for a file it must leave out unnamed (`RemoteEngine._file_reader`)."""

DEFAULT_CONCURRENCY = 16
"""Workspace calls one walk or search keeps in flight at most."""


async def _in_order(
    count: int,
    fetch: Callable[[int], Callable[[], Awaitable[_T]]],
    consume: Callable[[int, _T], Awaitable[bool]],
    concurrency: int,
) -> None:
    """`fetch` items `0..count` with `concurrency` workers and `consume` them in index order.

    Workers run at most `2 * concurrency` items ahead of the consumer, so memory stays bounded
    whatever `count` is; when `consume` returns True the rest is neither fetched nor consumed.
    """
    results: dict[int, _T] = {}
    ahead = anyio.Semaphore(2 * concurrency)
    state = {'next': 0, 'ready': anyio.Event()}

    async def worker() -> None:
        while True:
            await ahead.acquire()
            index = state['next']
            if index >= count:
                ahead.release()
                return
            state['next'] = index + 1
            results[index] = await fetch(index)()
            state['ready'].set()  # type: ignore[union-attr]

    with _one_error():
        async with anyio.create_task_group() as group:
            for _ in range(min(concurrency, count)):
                group.start_soon(worker)
            for index in range(count):
                while index not in results:
                    state['ready'] = ready = anyio.Event()
                    if index not in results:
                        await ready.wait()
                stop = await consume(index, results.pop(index))
                ahead.release()
                if stop:
                    group.cancel_scope.cancel()
                    return


def _wrapped(workspace: Workspace) -> bool:
    """Whether a policy wrapper (read-only, authority, durable...) sits between `workspace` and its backend."""
    try:
        from pydantic_ai.workspaces.workspace import workspace_layers
    except ImportError:  # pragma: no cover -- older pydantic-ai: always go through the facade
        return True
    return len(workspace_layers(workspace)) > 1


def _entry(entry: FileEntry) -> _Entry:
    return (entry.path, entry.is_dir, entry.size)


async def _gather(calls: Sequence[Callable[[], Awaitable[_T]]]) -> list[_T]:
    """Run `calls` concurrently and return their results in order (the first error propagates)."""
    results: list[_T | None] = [None] * len(calls)

    async def one(index: int) -> None:
        results[index] = await calls[index]()

    with _one_error():
        async with anyio.create_task_group() as group:
            for index in range(len(calls)):
                group.start_soon(one, index)
    return results  # type: ignore[return-value]


@contextmanager
def _one_error() -> Iterator[None]:
    """A task group's error as itself, not wrapped in an `ExceptionGroup` (`single_error`)."""
    try:
        yield
    except BaseExceptionGroup as group:
        raise single_error(group) from None


def _os_errors(method: _M) -> _M:
    """A `RemoteEngine` method whose backend's `OSError`s read as the native path's: a retry such as
    `Permission denied: 'sub'` or the EILSEQ text, or an `OSError` without the backend's path
    that ends the run (`RemoteCore.raise_os_error`). Backends often raise `PermissionError(path)`
    with no errno: the class then gives it. A backend's `ValueError` (the protocol's error for an
    argument it refuses) is a retry with its text, as 0.62.0 gives it."""

    @functools.wraps(method)
    async def wrapper(self: RemoteEngine, *args: Any, **kwargs: Any) -> Any:
        try:
            return await method(self, *args, **kwargs)
        except UnicodeError:
            raise
        except ValueError as error:
            # The protocol's error for an argument the backend will not take (0.62.0: a retry
            # with its text). Ours are `RetryableError`s, never a bare `ValueError`.
            raise _core.InvalidArgumentError(str(error)) from error
        except OSError as error:
            errno_ = error.errno if error.errno else _ERRNO_OF.get(type(error))
            core = self._core_value
            if core is None or errno_ is None:
                raise
            filename = error.filename
            if filename is None and not error.errno and len(error.args) == 1:
                filename = error.args[0]
            shown = filename if isinstance(filename, str) and filename.startswith('/') else None
            core.raise_os_error(errno_, shown)

    return wrapper  # type: ignore[return-value]


def _naming(error: OSError, path: str) -> OSError:
    """`error`, naming `path` when the backend named nothing (`PermissionError(13, 'Permission denied')`)."""
    if error.filename is None and (error.errno or not error.args):
        error.filename = path
    return error


_ERRNO_OF: dict[type[OSError], int] = {
    PermissionError: errno.EACCES,
    FileNotFoundError: errno.ENOENT,
    NotADirectoryError: errno.ENOTDIR,
    IsADirectoryError: errno.EISDIR,
    FileExistsError: errno.EEXIST,
}
"""The errno an `OSError` subclass raised without one stands for."""


def _errno_of(error: BaseException) -> int | None:
    """The errno a backend's error stands for, which gives a walk's note its reason as the host
    walkers give it (`Permission denied`): its own, else its class's; `None` (`I/O error`) for
    a `WorkspaceError` or an `OSError` that says neither."""
    if not isinstance(error, OSError):
        return None
    if error.errno:
        return error.errno
    return next((number for cls, number in _ERRNO_OF.items() if isinstance(error, cls)), None)


class _Unread:
    """A file a search could not read, and its backend error's errno (`None`: unknown)."""

    __slots__ = ('errno',)

    def __init__(self, errno_: int | None) -> None:
        self.errno = errno_


class RemoteEngine:
    """The FileSystem tools on any `SupportsFilesystem` workspace, mirroring `_core.FileSystemCore`.

    Built without I/O; the first call asks the workspace for its working directory and resolves
    the boundary as 0.62.0 does: `root_dir=None` is the working directory with its symlinks
    resolved, a relative `root_dir` resolves against it, `'/'` turns containment off, and a working
    directory outside `root_dir` is a `UserError`.

    Methods return `_core.Outcome` / `_core.ChangePlan`, like `FileSystemCore`'s, and raise its
    `RetryableError` subclasses for what the model can fix. Workspace errors (`WorkspaceError`)
    and OS errors the backend raises where no result text is defined propagate unchanged.

    Args:
        workspace: The run's workspace or a bare backend.
        root_dir: The boundary as a workspace path (`None`: the working directory).
        allowed_patterns, denied_patterns, read_only_patterns: The access patterns.
        max_read_lines, max_read_chars, max_list_results, max_search_results, max_find_results,
            content_hashes: The capability's limits.
        concurrency: Workspace calls a walk or search keeps in flight (listings, reads).
        max_line_chars: Clip lines longer than this many chars in `read_file` (then `column`
            applies), `search_files` and `grep` results, as on a host directory (`None`: off).
        report_skipped: Walker results end with what they skipped (`[skipped: ...]`), as locally.
        match: `'tolerant'`: `edit_file`'s match tiers, as locally (`FileSystem(match=...)`).
        show_changes: Lines of context a write or edit result shows around its change (0: off).
    """

    def __init__(
        self,
        workspace: WorkspaceBackend,
        *,
        root_dir: str | None = None,
        allowed_patterns: Sequence[str] = (),
        denied_patterns: Sequence[str] = (),
        read_only_patterns: Sequence[str] = (),
        max_read_lines: int = 2000,
        max_read_chars: int | None = 50_000,
        max_list_results: int = 500,
        max_search_results: int = 100,
        max_find_results: int = 100,
        content_hashes: bool = True,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_line_chars: int | None = None,
        report_skipped: bool = False,
        match: Literal['exact', 'tolerant'] = 'exact',
        show_changes: int = 0,
        big_diffs: bool = False,
    ) -> None:
        self._workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        self.storage = storage_of(self._workspace)
        backend = self._workspace.backend
        # The calls below pass absolute normalized paths, so with no wrapper in between the
        # backend's own methods are what `Workspace` would call: skip its per-call protocol check.
        # Whatever the backend answers reaches the core in the protocol's shapes (`_sane.py`).
        self._fs = SaneFiles(
            backend if isinstance(backend, SupportsFilesystem) and not _wrapped(self._workspace) else self._workspace
        )
        # Without either, `Workspace.realpath` only normalizes text: skip the calls.
        self._sees_links = isinstance(backend, (SupportsRealpath, SupportsCommands))
        # A file too big to move whole is read in byte ranges through the backend's commands.
        self._ranges = _ranged.can_read_in_pieces(self._workspace)
        # File ops `Workspace` derives through the backend's shell, no wrapper in between: a
        # search may read a file with a command of its own (`_ranged.read_capped`).
        self._derived = self._ranges and not isinstance(backend, SupportsFilesystem) and not _wrapped(self._workspace)
        self._pager = _ranged.Pager(self._workspace)
        self._root_spelling = root_dir
        patterns = (list(allowed_patterns), list(denied_patterns), list(read_only_patterns))
        limits = (max_read_lines, max_read_chars, max_list_results, max_search_results, max_find_results)
        self._settings = (*patterns, *limits, content_hashes)
        self._has_patterns = bool(allowed_patterns or denied_patterns or read_only_patterns)
        self._concurrency = max(1, concurrency)
        self._options = {
            'max_line_chars': max_line_chars,
            'report_skipped': report_skipped,
            'match': match,
            'show_changes': show_changes,
            'big_diffs': big_diffs,
        }
        self._core_value: _core.RemoteCore | None = None
        self._no_readlink: bool | None = None

    async def _core(self) -> _core.RemoteCore:
        """The core for this workspace, built on the first call (source: 0.62.0 `_scope`)."""
        if self._core_value is not None:
            return self._core_value
        ws = self._workspace
        cwd = posixpath.normpath(await ws.working_dir())
        if self._root_spelling is None:
            root = cwd = cwd if cwd == '/' else await ws.realpath(cwd)
        else:
            root = await ws.resolve(self._root_spelling)
            if root != '/':
                root = await ws.realpath(root)
                cwd = await ws.realpath(cwd)
            if not (cwd == root or cwd.startswith(root.rstrip('/') + '/')):
                raise UserError(
                    f'The working directory {cwd!r} is outside root_dir {root!r}. '
                    f'To work in {root!r}, attach the workspace there; '
                    'otherwise set `root_dir` to a directory that contains the working directory.'
                )
        self._checks_realpath = self._sees_links and (root != '/' or self._has_patterns)
        self._core_value = _core.RemoteCore(
            root, cwd, self._root_spelling is not None, *self._settings, **self._options
        )
        return self._core_value

    async def root_dir(self) -> str:
        """The boundary, a workspace path (events' `root_dir`)."""
        return (await self._core()).root_dir

    async def _real(self, path: str) -> str | None:
        """Where `path` leads through symlinks, when that needs checking; else `None`."""
        if not self._checks_realpath:
            return None
        return await self._realpath(path)

    async def _resolve(self, path: str, *, write: bool = False, check_allowed: bool = True) -> str:
        core = await self._core()
        resolved = core.resolve(path)
        core.check(path, resolved, await self._real(resolved), write, check_allowed)
        return resolved

    async def _stat(self, path: str) -> FileEntry | None:
        try:
            return await self._fs.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None

    async def _read(self, path: str) -> bytes | None:
        """The file's bytes, or `None` when nothing readable is there."""
        try:
            return await self._fs.read_bytes(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    async def _lookalike(self, path: str, resolved: str) -> str | None:
        """The existing name a missing `path` differs from only in Unicode normalization, or `None`.

        The core decides from the parents' listings, asking for one at a time (none for an
        ASCII path); a parent that cannot be listed means no look-alike.
        """
        core = await self._core()
        listings: dict[str, list[tuple[str, bool]] | None] = {}
        while True:
            directory, existing = core.lookalike(path, resolved, listings)
            if directory is None:
                return existing
            try:
                listings[directory] = [(child.name, child.is_dir) for child in await self._fs.list_dir(directory)]
            except WorkspaceUnavailableError:
                raise
            except (WorkspaceError, OSError):
                listings[directory] = None

    async def _walk(
        self, start: str, *, max_depth: int | None, include_hidden: bool
    ) -> tuple[list[_Entry], bool, list[tuple[str, int | None]]]:
        """Entries below `start`, listed breadth first with at most `concurrency` listings in flight.

        Stops at the core's caps (directories listed, entries collected) and then says so. Hidden,
        denied and outside directories are not entered, nor one already seen by its real path.
        A listing that fails with an `OSError` below the start is skipped and returned, as
        `(path, errno)`, for the result's note; at the start it propagates.
        """
        core = await self._core()
        _, _, max_dirs, max_entries = core.caps
        fs = self._fs

        unlisted: list[tuple[str, int | None]] = []

        def lister(directory: str) -> Callable[[], Awaitable[Sequence[FileEntry] | None]]:
            async def call() -> Sequence[FileEntry] | None:
                try:
                    return await fs.list_dir(directory)
                except WorkspaceError:
                    raise
                except OSError as error:
                    if directory == start:
                        raise _naming(error, directory) from None
                    unlisted.append((directory, _errno_of(error)))
                    return None

            return call

        entries: list[_Entry] = []
        seen = {await self._real(start) or start}
        level, depth, listed = [start], 1, 0
        while level:
            below: list[str] = []
            for first in range(0, len(level), self._concurrency):
                if listed >= max_dirs or len(entries) >= max_entries:
                    return entries[:max_entries], True, unlisted
                batch = level[first : first + min(self._concurrency, max_dirs - listed)]
                listed += len(batch)
                for children in await _gather([lister(d) for d in batch]):
                    for child in children or ():
                        entries.append(_entry(child))
                        if child.is_dir and (max_depth is None or depth < max_depth):
                            below.append(child.path)
                if len(batch) < min(self._concurrency, len(level) - first):
                    # The directory cap cut this level short.
                    return entries[:max_entries], True, unlisted
            level = []
            reals = await _gather([self._real_or_skip(p) for p in below]) if self._sees_links else below
            for path, real in zip(below, reals):
                if real is not None and real not in seen and core.descend(path, real, include_hidden):
                    seen.add(real)
                    level.append(path)
            depth += 1
        return entries, False, unlisted

    async def _realpath(self, path: str) -> str:
        """`Workspace.realpath`; on a backend that resolves links with its shell's `readlink` and
        has none, a `WorkspaceError` that says so (fail closed: the path is not used) instead of
        the shell's `readlink: not found`."""
        try:
            return await self._workspace.realpath(path)
        except WorkspaceError as error:
            if isinstance(error, WorkspaceUnavailableError) or not await self._lacks_readlink():
                raise
            raise WorkspaceError(NO_READLINK) from None

    async def _lacks_readlink(self) -> bool:
        """Whether links resolve through the backend's shell and it has no `readlink` (asked once)."""
        if self._no_readlink is None:
            backend = self._workspace.backend
            self._no_readlink = False
            if isinstance(backend, SupportsCommands) and not isinstance(backend, SupportsRealpath):
                try:
                    found = await backend.run('command -v readlink', shell=True)
                except (WorkspaceError, OSError):
                    return False
                self._no_readlink = found.exit_code != 0
        return self._no_readlink

    def _real_or_skip(self, path: str) -> Callable[[], Awaitable[str | None]]:
        async def call() -> str | None:
            if not self._sees_links:
                return path
            try:
                return await self._realpath(path)
            except WorkspaceError:
                raise
            except OSError:
                return None

        return call

    async def _rg_walk(self, start: str, walk: _core.RemoteRgWalk) -> bool:
        """Walks the directory `start` with ripgrep's filters (`walk`), one level at a time.

        Each level's directories are listed `concurrency` at a time, then the ignore files the
        listings hold are read, then the core decides the children. The directories from the root
        down to `start` are listed first for their ignore files. Symlinked, outside and denied
        directories are not entered, nor one already seen by its real path. Returns whether the
        core's caps (directories listed, entries met) cut the walk short. A listing that fails
        with an `OSError` below the start is skipped and told to the walk (`walk.unlisted`), so
        the result names it as the host walkers do; at the start it propagates.
        """
        core = await self._core()
        _, _, max_dirs, max_entries = core.caps
        fs = self._fs

        def lister(directory: str, noted: bool) -> Callable[[], Awaitable[Sequence[FileEntry]]]:
            async def call() -> Sequence[FileEntry]:
                try:
                    return await fs.list_dir(directory)
                except WorkspaceError:
                    raise
                except OSError as error:
                    if directory == start:
                        raise _naming(error, directory) from None
                    if noted:  # not an ancestor read only for its ignore files
                        walk.unlisted(directory, _errno_of(error))
                    return ()

            return call

        def reader(path: str) -> Callable[[], Awaitable[bytes | None]]:
            async def call() -> bytes | None:
                try:
                    return await fs.read_bytes(path)
                except WorkspaceUnavailableError:
                    raise
                except (WorkspaceError, OSError):
                    return None

            return call

        met = 0

        async def load(directories: list[str], *, noted: bool = True) -> None:
            nonlocal met
            wanted: list[tuple[str, str]] = []
            for directory, children in zip(directories, await _gather([lister(d, noted) for d in directories])):
                met += len(children)
                wanted.extend((directory, p) for p in walk.listed(directory, [_entry(c) for c in children]))
            if wanted:
                found: dict[str, list[tuple[str, bytes | None]]] = {}
                for (directory, p), data in zip(wanted, await _gather([reader(p) for _, p in wanted])):
                    found.setdefault(directory, []).append((p, data))
                for directory, files in found.items():
                    walk.rules(directory, files)

        if ancestors := walk.ancestors():
            await load(ancestors, noted=False)
            met = 0
        seen = {await self._real(start) or start}
        level, listed = [start], 0
        while level:
            below: list[str] = []
            for first in range(0, len(level), self._concurrency):
                if listed >= max_dirs or met >= max_entries:
                    return True
                batch = level[first : first + min(self._concurrency, max_dirs - listed)]
                listed += len(batch)
                await load(batch)
                for directory in batch:
                    below.extend(walk.enter(directory))
                if len(batch) < min(self._concurrency, len(level) - first):
                    return True  # the directory cap cut this level short
            reals = await _gather([self._real_or_skip(p) for p in below]) if self._sees_links else below
            level = []
            for path, real in zip(below, reals):
                if real is not None and real not in seen and core.descend(path, real, True):
                    seen.add(real)
                    level.append(path)
        return met >= max_entries

    # -- reading -------------------------------------------------------------------------------

    @_os_errors
    async def read_file(
        self, path: str, offset: int = 0, limit: int | None = None, column: int = 0
    ) -> tuple[_core.Outcome, BinaryContent | None]:
        """`read_file`: the outcome, and the file itself for an image or PDF up to 5 MB.

        A missing path or a directory is the result `Path not found: <path>` (`emit` false).
        Raises: `InvalidArgumentError` for a negative `offset` or a `limit` below 1,
        `OffsetPastEndError`, access and containment errors.
        """
        core = await self._core()
        offset, limit = core.read_limit(offset, limit)
        resolved = await self._resolve(path)
        entry = await self._stat(resolved)
        max_bytes = core.caps[0]
        size: int | None = None
        data: bytes | None = None
        guessed = mimetypes.guess_type(path)[0]
        if entry is not None and not entry.is_dir:
            size = entry.size
            if size is not None and size > _ranged.whole_read_bytes(core) and self._ranges:
                outcome = await self._pager.read(core, path, resolved, size, offset, limit, guessed, column)
                if outcome is not None:
                    return outcome, None
            if size is None or size <= max_bytes:
                data = await self._read(resolved)
                size = None if data is None else len(data)
        lookalike = await self._lookalike(path, resolved) if data is None and size is None else None
        outcome, media = await run_sized(
            core.read_file,
            path,
            resolved,
            size,
            data,
            offset,
            limit,
            guessed,
            inline=len(data or b'') <= INLINE_MAX_BYTES,
            column=column,
            lookalike=lookalike,
        )
        content = BinaryContent(data=data, media_type=media) if media is not None and data is not None else None
        return outcome, content

    @_os_errors
    async def file_info(self, path: str) -> _core.Outcome:
        """`file_info`: path, type, size, and for a file up to 64 MiB binary, lines and hash."""
        core = await self._core()
        resolved = await self._resolve(path)
        entry = await self._stat(resolved)
        data: bytes | None = None
        if (
            entry is not None
            and not entry.is_dir
            and entry.size is not None
            and entry.size > _ranged.whole_read_bytes(core)
            and self._ranges
        ):
            outcome = await self._pager.info(core, path, resolved, entry.size)
            if outcome is not None:
                return outcome
        if entry is not None and not entry.is_dir and (entry.size is None or entry.size <= core.caps[0]):
            data = await self._read(resolved)
            if data is None:
                entry = None
            elif entry.size is None:
                entry = FileEntry(name=entry.name, path=entry.path, is_dir=False, size=len(data))
        if entry is None:
            return core.file_info(path, resolved, None, None, lookalike=await self._lookalike(path, resolved))
        return core.file_info(path, resolved, _entry(entry), data)

    @_os_errors
    async def list_directory(self, path: str = '.') -> _core.Outcome:
        """`list_directory`: one listing, names sorted, hidden entries counted in a trailer."""
        core = await self._core()
        resolved = await self._resolve(path, check_allowed=False)
        try:
            children = await self._fs.list_dir(resolved)
        except (FileNotFoundError, NotADirectoryError):
            return core.list_directory(path, resolved, None)
        except OSError as error:
            raise _naming(error, resolved) from None
        unknown = [c for c in children if not c.is_dir and c.size is None]

        async def size_of(child: FileEntry) -> FileEntry | None:
            try:
                return await self._stat(child.path)
            except WorkspaceError:
                raise
            except OSError:
                return None  # a symlink loop, or an entry that cannot be stat'ed: left out, as locally

        stats = await _gather([lambda c=c: size_of(c) for c in unknown]) if unknown else []
        sizes = {c.path: s for c, s in zip(unknown, stats)}
        entries: list[_Entry] = []
        for child in children:
            if child.path in sizes:
                stat = sizes[child.path]
                if stat is None:
                    continue  # a dangling link or an entry removed meanwhile
                entries.append((child.path, False, stat.size))
            else:
                entries.append(_entry(child))
        return core.list_directory(path, resolved, entries)

    # -- walking and searching -----------------------------------------------------------------

    @_os_errors
    async def find_files(self, pattern: str, path: str = '.', *, files_only: bool = False) -> _core.Outcome:
        """`find_files`: a glob where `**` spans directories, matched in the core over a walk."""
        core = await self._core()
        glob = core.glob(pattern)
        resolved = await self._resolve(path, check_allowed=False)
        entry = await self._stat(resolved)
        if entry is None or not entry.is_dir:
            return core.find_files(glob, path, resolved, None, False, files_only)
        walked, cut, unlisted = await self._walk(resolved, max_depth=glob.max_depth, include_hidden=glob.include_hidden)
        # A file listed with no size may be a dangling link: a match is checked before it is shown.
        unknown = glob.matching(resolved, [p for p, is_dir, size in walked if not is_dir and size is None])
        if unknown:
            gone: set[str] = set()

            def exists(index: int) -> Callable[[], Awaitable[bool]]:
                return lambda: self._fs.exists(unknown[index])

            async def note(index: int, found: bool) -> bool:
                if not found:
                    gone.add(unknown[index])
                return False

            await _in_order(len(unknown), exists, note, self._concurrency)
            walked = [entry for entry in walked if entry[0] not in gone]
        return await run_sized(
            lambda cancel: core.find_files(glob, path, resolved, walked, cut, files_only, unlisted),
            inline=len(walked) < 4096,
        )

    @_os_errors
    async def list_files(self, path: str = '.', glob: str | None = None) -> _core.Outcome:
        """`list_files` with ripgrep's rules, as the local tool lists the same tree: ignore files
        (read through the workspace), hidden files, the glob; at most `max_find_results`."""
        core = await self._core()
        resolved = await self._resolve(path, check_allowed=False)
        entry = await self._stat(resolved)
        if entry is None or not entry.is_dir:
            return core.rg_list(path, resolved, None, False)
        walk = core.rg_walk(resolved, glob)
        cut = await self._rg_walk(resolved, walk)
        return await run_sized(lambda cancel: core.rg_list(path, resolved, walk, cut), inline=True)

    def _file_reader(
        self, core: _core.RemoteCore, files: Sequence[tuple[str, int | None]], resolved: str, max_bytes: int
    ) -> Callable[[int], Callable[[], Awaitable[object]]]:
        """How a search fetches `files[index]` (`(path, size or None)`): `_search_read`'s answer, or
        `_DROPPED` for a file below `resolved` whose real path leads where it may not be read."""

        def reader(index: int) -> Callable[[], Awaitable[object]]:
            file_path, size = files[index]

            async def call() -> object:
                if self._checks_realpath and file_path != resolved:
                    real = await self._real_or_skip(file_path)()
                    if real is None or not core.readable_real(real):
                        return _DROPPED
                return await self._search_read(file_path, size, max_bytes)

            return call

        return reader

    async def _search_read(self, path: str, size: int | None, max_bytes: int) -> bytes | int | _Unread:
        """A searched file's bytes; its size (an `int`) when it holds over `max_bytes`; `_Unread`
        (the backend error's errno) when it cannot be read.

        A file the listing gave no size for is, where `Workspace` derives file ops through the
        backend's shell (no wrapper in between), read by one command that moves its bytes only
        when within `max_bytes` (never a big file just to skip it).
        """
        if size is not None and size > max_bytes:
            return size
        try:
            if size is None and self._derived:
                try:
                    got = await _ranged.read_capped(self._workspace, path, max_bytes)
                    return _Unread(None) if got is None else got
                except _ranged.CommandsUnavailable:
                    pass
            data = await self._fs.read_bytes(path)
        except WorkspaceUnavailableError:
            raise
        except (WorkspaceError, OSError) as error:
            return _Unread(_errno_of(error))
        return len(data) if len(data) > max_bytes else data

    @_os_errors
    async def search_files(self, pattern: str, path: str = '.', include_glob: str | None = None) -> _core.Outcome:
        """`search_files`: the core's regex engine over file bytes read through the workspace.

        Files are read `concurrency` at a time and searched in path order; reading stops once the
        match cap is hit. A file over 10 MiB, or one the backend cannot read, is named as skipped.
        """
        core = await self._core()
        resolved = await self._resolve(path, check_allowed=False)
        search = core.search(pattern, resolved, include_glob)
        entry = await self._stat(resolved)
        walked: list[_Entry] = []
        cut = False
        hidden = ignored = 0
        if entry is not None and entry.is_dir:
            # As 0.62.0's `rg` on a workspace: what ignore files list is not searched.
            walk = core.search_walk(resolved, include_glob, search.include_hidden)
            cut = await self._rg_walk(resolved, walk)
            search.unlisted(walk)
            walked, hidden, ignored = walk.finish()
        files = search.files(None if entry is None else _entry(entry), walked)
        if entry is not None and entry.is_dir:
            search.hidden_skipped(hidden, ignored)
        max_bytes = _ranged.search_read_bytes(core.caps[1])
        reader = self._file_reader(core, files, resolved, max_bytes)

        async def consume(index: int, data: object) -> bool:
            if data is _DROPPED:
                return False
            if isinstance(data, (int, _Unread)):
                data = None  # over `search_files`' limit or unreadable: named as skipped
            assert data is None or isinstance(data, bytes)
            return await run_sized(lambda cancel: search.feed(index, data), inline=len(data or b'') <= INLINE_MAX_BYTES)

        await _in_order(len(files), reader, consume, self._concurrency)
        return search.result(cut)

    @_os_errors
    async def grep(
        self,
        pattern: str,
        path: str = '.',
        glob: str | None = None,
        file_type: str | None = None,
        ignore_case: bool = False,
        literal: bool = False,
        context: int = 0,
    ) -> _core.Outcome:
        """`grep` with ripgrep's rules and engine, on file bytes read through the workspace.

        The same lines the local tool gives for the same tree (ignore files, hidden files, file
        types, context lines, long-line previews, the output cap); nothing runs in the workspace.
        Files are read `concurrency` at a time, searched in path order, and reading stops once the
        output cap is passed.

        Raises `InvalidArgumentError` for a `context` outside 0..20 or an unknown `file_type`,
        `InvalidPatternError` for a glob or regex `rg` rejects, `NotFoundError` when nothing is there.
        """
        if not 0 <= context <= 20:
            raise _core.InvalidArgumentError('context must be between 0 and 20.')
        core = await self._core()
        resolved = await self._resolve(path, check_allowed=False)
        entry = await self._stat(resolved)
        walk: _core.RemoteRgWalk | None = None
        cut = False
        if entry is not None and entry.is_dir:
            walk = core.rg_walk(resolved, glob, file_type)
            cut = await self._rg_walk(resolved, walk)
        elif entry is not None:
            core.rg_walk(posixpath.dirname(resolved), glob, file_type)  # `rg` checks both first
        is_file = entry is not None and not entry.is_dir
        search = core.rg_grep(path, resolved, is_file, walk, pattern, ignore_case, literal, context, glob)
        files = search.files
        max_bytes = _ranged.search_read_bytes(core.caps[0])
        reader = self._file_reader(core, files, resolved, max_bytes)

        async def consume(index: int, data: object) -> bool:
            if data is _DROPPED:
                return False
            if isinstance(data, int):
                # Too big to move whole: searched in pieces where the backend runs commands.
                if self._ranges:
                    pieces = _ranged.piece_source(self._workspace, files[index][0], data)
                    try:
                        return await anyio.to_thread.run_sync(search.feed_pieces, index, pieces)
                    except (_core.RetryableError, _ranged.CommandsUnavailable):
                        return search.feed(index, None, None)
                return search.feed(index, None, errno.EFBIG)
            if isinstance(data, _Unread):
                return search.feed(index, None, data.errno)
            assert isinstance(data, bytes)
            return await run_sized(lambda cancel: search.feed(index, data), inline=len(data) <= INLINE_MAX_BYTES)

        await _in_order(len(files), reader, consume, self._concurrency)
        return search.result(cut)

    # -- changing ------------------------------------------------------------------------------

    async def lock_key(self, path: str) -> str:
        """The path a change of `path` takes its turn on: its real path where those are checked, else as written."""
        core = await self._core()
        try:
            resolved = core.resolve(path)
        except _core.RetryableError:
            return path  # the plan refuses it
        try:
            return await self._real(resolved) or resolved
        except (OSError, ValueError):
            return resolved  # the plan meets the same error and answers it

    @_os_errors
    async def plan_write(
        self, path: str, content: str, expected_hash: str | None = None, announce: bool = True
    ) -> _core.ChangePlan:
        """Plan a `write_file`; with `announce`, snapshot the current bytes for the diff and the guard."""
        core = await self._core()
        resolved = await self._resolve(path, write=True)
        entry = await self._stat(resolved)
        try:
            parent_entry = await self._fs.stat(posixpath.dirname(resolved))
            parent = 'dir' if parent_entry.is_dir else 'notdir'
        except FileNotFoundError:
            parent = 'missing'
        except NotADirectoryError:
            parent = 'notdir'
        old: bytes | None = None
        if announce and entry is not None and not entry.is_dir:
            try:
                old = await self._fs.read_bytes(resolved)
            except WorkspaceReadOnlyError:
                raise
            except PermissionError:
                if expected_hash is not None:
                    raise
        target = None if entry is None else entry.is_dir
        lookalike = await self._lookalike(path, resolved) if entry is None and parent == 'dir' else None
        return await run_sized(
            lambda cancel: core.plan_write(
                path, resolved, target, parent, old, content, expected_hash, announce, lookalike=lookalike
            ),
            inline=len(old or b'') + len(content) <= INLINE_MAX_BYTES,
        )

    @_os_errors
    async def plan_edit(
        self,
        path: str,
        replacements: Sequence[tuple[str, str] | tuple[str, str, bool]],
        expected_hash: str | None = None,
    ) -> _core.ChangePlan:
        """Plan an `edit_file` from the file's bytes: strict UTF-8, each `old` matching once."""
        core = await self._core()
        resolved = await self._resolve(path, write=True)
        entry = await self._stat(resolved)
        raw = None if entry is None or entry.is_dir else await self._read(resolved)
        directory = entry is not None and entry.is_dir
        lookalike = await self._lookalike(path, resolved) if raw is None and not directory else None
        pairs = list(replacements)
        return await run_sized(
            lambda cancel: core.plan_edit(
                path, resolved, raw, pairs, expected_hash, directory=directory, lookalike=lookalike
            ),
            inline=len(raw or b'') <= INLINE_MAX_BYTES,
        )

    @_os_errors
    async def plan_create_directory(self, path: str) -> _core.ChangePlan | None:
        """Plan a `create_directory`; `None` when the directory already exists."""
        core = await self._core()
        resolved = await self._resolve(path, write=True)
        entry = await self._stat(resolved)
        ancestor_is_dir = True
        if entry is None:
            current = posixpath.dirname(resolved)
            while True:
                try:
                    ancestor_is_dir = (await self._fs.stat(current)).is_dir
                    break
                except FileNotFoundError:
                    if posixpath.dirname(current) == current:
                        break
                    current = posixpath.dirname(current)
                except NotADirectoryError:
                    ancestor_is_dir = False
                    break
        return core.plan_create_directory(path, resolved, None if entry is None else entry.is_dir, ancestor_is_dir)

    async def patch_paths(self, input: str) -> list[str]:
        return (await self._core()).patch_paths(input)  # a parse, no I/O

    @_os_errors
    async def plan_patch(self, input: str) -> _core.PatchPlan:
        """Plan `apply_patch`: every path the patch names resolved and checked as a write, every
        file read through the workspace, then the core plans the whole patch on those bytes."""
        core = await self._core()
        files: list[tuple[str, str, bytes | None, bool]] = []
        for path in dict.fromkeys(core.patch_paths(input)):
            resolved = await self._resolve(path, write=True)
            entry = await self._stat(resolved)
            is_dir = entry is not None and entry.is_dir
            files.append((path, resolved, None if entry is None or is_dir else await self._read(resolved), is_dir))
        size = sum(len(raw or b'') for _, _, raw, _ in files)
        return await run_sized(lambda cancel: core.plan_patch(input, files), inline=size <= INLINE_MAX_BYTES)

    def _checkpointed(
        self, core: _core.RemoteCore, targets: Sequence[str]
    ) -> contextlib.AbstractAsyncContextManager[None]:
        """With `Checkpoints`, the commit of `targets` (absolute workspace paths) between reads of
        their states through the workspace, recorded on this host (`checkpoints/_remote.py`); when
        the files are this host's (a `LocalWorkspaceBackend` subclass), in the root's store, where its
        commands are recorded too."""
        recorder = RECORDING.get()
        if recorder is None:
            return contextlib.nullcontext()
        root = core.root_dir
        relatives = [r for r in (posixpath.relpath(target, root) for target in targets) if not r.startswith('..')]
        if files_on_host(self._workspace):
            return recorder.change(real_root(root), relatives)
        return recorder.remote_change(root, self._fs, relatives)

    @_os_errors
    async def commit_patch(self, plan: _core.PatchPlan) -> str:
        """Write a planned patch through the workspace: every path checked again and every file
        re-read and compared with the bytes it was planned on before the first write; then each
        file written (missing directories made) or removed. A write that fails puts back the files
        already written (no journal across files here: see the README)."""
        core = await self._core()
        async with self._checkpointed(core, [file.target for file in plan.files]):
            return await self._commit_patch(core, plan)

    async def _commit_patch(self, core: _core.RemoteCore, plan: _core.PatchPlan) -> str:
        for file in plan.files:
            await self._resolve(file.path_argument, write=True)
            current = await self._read(file.target)
            if current != file.old_content:
                expected = file.old_hash or ABSENT_HASH
                got = ABSENT_HASH if current is None else hashlib.sha256(current).hexdigest()[:12]
                raise conflict(file.path_argument, expected, got)
        done: list[_core.PatchFile] = []
        try:
            for file in plan.files:
                if file.new_content is None:
                    await self._fs.remove(file.target)
                else:
                    await self._make_parents(file.target)
                    await self._fs.write_bytes(file.target, file.new_content)
                done.append(file)
        except BaseException:
            for file in reversed(done):  # best effort: the old bytes back
                with contextlib.suppress(Exception):
                    if file.old_content is None:
                        await self._fs.remove(file.target)
                    else:
                        await self._fs.write_bytes(file.target, file.old_content)
            raise
        return core.patch_result(plan)

    async def _make_parents(self, target: str) -> None:
        """Make the missing directories above `target`, shallowest first."""
        missing: list[str] = []
        current = posixpath.dirname(target)
        while current not in ('', '/') and await self._stat(current) is None:
            missing.append(current)
            current = posixpath.dirname(current)
        for directory in reversed(missing):
            await self._fs.make_dir(directory)

    @_os_errors
    async def commit(self, plan: _core.ChangePlan) -> _core.Outcome:
        """Apply a plan: the path is checked again, then the conflict guard re-reads the target and
        refuses a write when its bytes are no longer what the plan saw; then the bytes are written
        (or the directory made) through the workspace.
        """
        core = await self._core()
        target = core.plan_target(plan)
        async with self._checkpointed(core, [target]):
            return await self._commit(core, plan, target)

    async def _commit(self, core: _core.RemoteCore, plan: _core.ChangePlan, target: str) -> _core.Outcome:
        # Checked again, as 0.62.0 does after an announcement: a listener may have taken a while.
        await self._resolve(target, write=True)
        if plan.operation == 'create_directory':
            appeared = await self._stat(target)
            if appeared is not None:
                return core.created(plan, 'existed' if appeared.is_dir else 'file')
            try:
                await self._fs.make_dir(target)
            except FileExistsError:
                return core.created(plan, 'file')
            except NotADirectoryError:
                return core.created(plan, 'parent')
            return core.created(plan, 'created')
        if core.plan_guarded(plan):
            current = await self._read(target)
            await run_sized(
                lambda cancel: core.check_guard(plan, current), inline=len(current or b'') <= INLINE_MAX_BYTES
            )
        await self._fs.write_bytes(target, core.plan_content(plan))
        return core.written(plan)
