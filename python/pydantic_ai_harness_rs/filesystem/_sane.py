"""`SaneFiles`: what a workspace backend answers, in the shapes the protocol promises, before the core sees it.

The workspace protocol (`pydantic_ai.workspaces.SupportsFilesystem`) says `read_bytes` returns
`bytes` and a `FileEntry` has an absolute path and a size in bytes or `None`; a backend written in a
hurry may return a `bytearray` or a `memoryview`, a negative or huge size, or list a name no
filesystem can hold (a NUL in it). 0.62.0 keeps going on those (its Python takes any bytes-like
value and prints any size); the Rust core takes only `bytes`, sizes that fit a `u64`, and paths
without NUL, and would abort the run with a `TypeError` or `OverflowError`. So every answer is
normalized here, once, for every tool of `RemoteEngine` (issue 20):

- `read_bytes`: any bytes-like value becomes `bytes` (a copy only when it is not `bytes` already).
- `stat`, `list_dir`: a size that is not an `int` in `0..2**63` is unknown (`None`), as the
  protocol allows; a `list_dir` entry whose path holds a NUL or is not a `str` is left out (no
  tool could name it), the rest of the listing is kept.

Everything else passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.workspaces import FileEntry, SupportsFilesystem, Workspace

__all__ = ('SaneFiles',)

_MAX_SIZE = 1 << 63


def _sane_entry(entry: FileEntry) -> FileEntry:
    size = entry.size
    if size is None or (type(size) is int and 0 <= size < _MAX_SIZE):
        return entry
    return FileEntry(name=entry.name, path=entry.path, is_dir=entry.is_dir, size=None)


def _nameable(entry: FileEntry) -> bool:
    return isinstance(entry.path, str) and '\x00' not in entry.path


class SaneFiles:
    """The file methods of `files` (a backend or a `Workspace`), their answers normalized (module docstring)."""

    def __init__(self, files: SupportsFilesystem | Workspace) -> None:
        self._files = files

    async def read_bytes(self, path: str) -> bytes:
        data = await self._files.read_bytes(path)
        return data if type(data) is bytes else bytes(data)

    async def write_bytes(self, path: str, data: bytes) -> None:
        await self._files.write_bytes(path, data)

    async def stat(self, path: str) -> FileEntry:
        return _sane_entry(await self._files.stat(path))

    async def list_dir(self, path: str) -> Sequence[FileEntry]:
        entries = await self._files.list_dir(path)
        return [_sane_entry(entry) for entry in entries if _nameable(entry)]

    async def make_dir(self, path: str) -> None:
        await self._files.make_dir(path)

    async def remove(self, path: str) -> None:
        await self._files.remove(path)

    async def exists(self, path: str) -> bool:
        return bool(await self._files.exists(path))
