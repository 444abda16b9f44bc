"""An in-memory workspace backend for the protocol-path tests: files and directories in dicts.

It implements `WorkspaceBackend` + `SupportsFilesystem` (no commands), and with `symlinks=`
also `SupportsRealpath`. Only `pydantic_ai.workspaces` is imported, so the 0.62.0 reference venv
runs it too (tests/compat/fs062_remote_scenarios.py).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from pydantic_ai.workspaces import FileEntry


class MemoryWorkspace:
    """Files as `path -> bytes` and a set of directories, under the working directory `/ws`.

    `calls` counts each protocol method called, so tests can see what moved.
    """

    def __init__(self, files: Mapping[str, bytes | str] | None = None, *, cwd: str = '/ws') -> None:
        self.cwd = cwd
        self.dirs: set[str] = {'/'}
        self.files: dict[str, bytes] = {}
        self.children: dict[str, set[str]] = {'/': set()}
        self.calls: dict[str, int] = {}
        self._add_dir(cwd)
        for path, data in (files or {}).items():
            self._put(posixpath.join(cwd, path), data.encode() if isinstance(data, str) else data)

    def _add_dir(self, path: str) -> None:
        while path not in self.dirs:
            self.dirs.add(path)
            self.children.setdefault(path, set())
            parent = posixpath.dirname(path)
            self.children.setdefault(parent, set()).add(posixpath.basename(path))
            path = parent

    def _put(self, path: str, data: bytes) -> None:
        self._add_dir(posixpath.dirname(path))
        self.children[posixpath.dirname(path)].add(posixpath.basename(path))
        self.files[path] = data

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def _target(self, path: str) -> str:
        return posixpath.normpath(path)

    def _check_parents(self, path: str) -> None:
        parent = posixpath.dirname(path)
        while parent != '/':
            if parent in self.files:
                raise NotADirectoryError(path)
            parent = posixpath.dirname(parent)

    def _reach(self, operation: str, path: str) -> str:
        """Count `operation`, then the absolute target of `path`, whose parents must be directories."""
        self._count(operation)
        path = self._target(path)
        self._check_parents(path)
        return path

    @property
    def ref(self) -> None:
        return None

    async def working_dir(self) -> str:
        return self.cwd

    async def read_bytes(self, path: str) -> bytes:
        path = self._reach('read_bytes', path)
        if path in self.dirs:
            raise IsADirectoryError(path)
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    async def write_bytes(self, path: str, data: bytes) -> None:
        path = self._reach('write_bytes', path)
        if path in self.dirs:
            raise IsADirectoryError(path)
        self._put(path, bytes(data))

    async def stat(self, path: str) -> FileEntry:
        path = self._reach('stat', path)
        name = posixpath.basename(path)
        if path in self.dirs:
            return FileEntry(name=name, path=path, is_dir=True, size=None)
        if path in self.files:
            return FileEntry(name=name, path=path, is_dir=False, size=len(self.files[path]))
        raise FileNotFoundError(path)

    async def list_dir(self, path: str) -> tuple[FileEntry, ...]:
        given = posixpath.normpath(path)
        path = self._reach('list_dir', path)
        if path in self.files:
            raise NotADirectoryError(path)
        if path not in self.dirs:
            raise FileNotFoundError(path)
        names: list[tuple[str, bool, int | None]] = []
        for name in self.children.get(path, ()):
            child = posixpath.join(path, name)
            if child in self.dirs:
                names.append((name, True, None))
            elif child in self.files:
                names.append((name, False, len(self.files[child])))
        out = [
            FileEntry(name=name, path=posixpath.join(given, name), is_dir=is_dir, size=size)
            for name, is_dir, size in names
            if name
        ]
        return tuple(sorted(out, key=lambda e: e.path))

    async def make_dir(self, path: str) -> None:
        path = self._reach('make_dir', path)
        if path in self.files:
            raise FileExistsError(path)
        self._add_dir(path)

    async def remove(self, path: str) -> None:
        path = self._target(path)
        self.files.pop(path, None)
        for f in [f for f in self.files if f.startswith(path + '/')]:
            del self.files[f]
        self.dirs = {d for d in self.dirs if d != path and not d.startswith(path + '/')}
        self.children.get(posixpath.dirname(path), set()).discard(posixpath.basename(path))

    async def exists(self, path: str) -> bool:
        path = self._target(path)
        return path in self.files or path in self.dirs


class LinkedMemoryWorkspace(MemoryWorkspace):
    """`MemoryWorkspace` with symlinks (`link -> target`, both absolute) and `SupportsRealpath`.

    A link is followed by every operation, as the protocol asks.
    """

    def __init__(
        self, files: Mapping[str, bytes | str] | None = None, *, symlinks: Mapping[str, str], cwd: str = '/ws'
    ) -> None:
        super().__init__(files, cwd=cwd)
        self.symlinks = {posixpath.join(cwd, link): target for link, target in symlinks.items()}

    async def realpath(self, path: str) -> str:
        self._count('realpath')
        return self._target(path)

    def _target(self, path: str) -> str:
        parts = posixpath.normpath(path).split('/')[1:]
        current = '/'
        for _ in range(40):
            for index, part in enumerate(parts):
                nxt = posixpath.join(current, part)
                if nxt in self.symlinks:
                    rest = parts[index + 1 :]
                    target = posixpath.normpath(posixpath.join(current, self.symlinks[nxt]))
                    parts = [p for p in target.split('/')[1:] if p] + rest
                    current = '/'
                    break
                current = nxt
            else:
                return posixpath.normpath(current)
        raise OSError(40, 'Too many levels of symbolic links', path)

    async def list_dir(self, path: str) -> tuple[FileEntry, ...]:
        listed = list(await super().list_dir(path))
        prefix = posixpath.normpath(path).rstrip('/') + '/'
        for link in self.symlinks:
            if link.startswith(prefix) and '/' not in link[len(prefix) :]:
                target = self._target(link)
                is_dir = target in self.dirs
                size = len(self.files[target]) if target in self.files else None
                listed.append(FileEntry(name=link[len(prefix) :], path=link, is_dir=is_dir, size=size))
        return tuple(sorted(listed, key=lambda e: e.path))
