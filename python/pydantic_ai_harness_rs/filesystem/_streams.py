"""The slow path for toolsets that override `open_read` / `open_write`.

A subclass that stores file bytes somewhere else (a remote store, an encrypting layer) gets its
overrides called for the pre-change snapshot, the edit source and the write itself. Resolution,
containment, the access patterns, hashing, diffs and replacement matching still run in the Rust
core; only the opening of streams happens here, in Python. Default toolsets never come here.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from pydantic_ai.exceptions import ModelRetry

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.filesystem._events import (
    MAX_DIFF_SOURCE_CHARS,
    Announcement,
    FileEditedEvent,
    FileWrittenEvent,
    announce,
)

if TYPE_CHECKING:
    from pydantic_ai.tools import RunContext

_CHUNK_BYTES = 1 << 20
_DIFF_SOURCE_BYTES = 4 * MAX_DIFF_SOURCE_CHARS
"""Bytes that can hold `MAX_DIFF_SOURCE_CHARS` characters of UTF-8; a longer file is not diffed."""
_ABSENT = '<absent>'
"""The guard of a write announced as a create: no file hashes to it, so one that appears fails."""
_OPEN_FLAGS = os.O_NONBLOCK | os.O_NOFOLLOW
"""A FIFO swapped onto the path cannot stall the open, and a symlink cannot redirect it."""


class Streams(Protocol):
    """The overridable openers of `FileSystemToolset` (`open_read`, `open_write`)."""

    def open_read(self, resolved: Path) -> BinaryIO: ...
    def open_write(self, resolved: Path, *, read_back: bool, create: bool) -> tuple[BinaryIO, bool]: ...


@contextmanager
def os_errors_for_the_model(core: _core.FileSystemCore) -> Iterator[None]:
    """Turn an `OSError` an override raised into the core's error for it, as the core's own I/O does.

    `PermissionError: [Errno 13] Permission denied: '/host/root/a.txt'` becomes the retry
    `Permission denied: 'a.txt'`; a full disk stays an `OSError` that aborts the run, without
    the host path. The same mapping as every other tool (`Root::os_error`, src/fs/path.rs).
    """
    try:
        yield
    except OSError as e:
        filename = e.filename
        try:
            name = None if filename is None else os.fsdecode(filename)
        except TypeError:
            name = None
        core.raise_os_error(e.errno or 0, name)


def default_open_read(resolved: Path) -> BinaryIO:
    """Open `resolved` for reading, non-blocking and without following a final symlink."""
    return os.fdopen(os.open(resolved, os.O_RDONLY | _OPEN_FLAGS), 'rb')


def default_open_write(resolved: Path, path: str, *, read_back: bool, create: bool) -> tuple[BinaryIO, bool]:
    """Open `resolved` without truncating it; `(stream, created)`. `path` names it in errors (root-relative)."""
    access = os.O_RDWR if read_back else os.O_WRONLY
    try:
        fd, created = _open_for_write(resolved, access, create=create, path=path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ModelRetry(f'Path {path!r} encountered a symlink loop or changed to a symlink before opening.') from e
        if e.errno in (errno.EISDIR, errno.ENODEV, errno.ENXIO):
            raise ModelRetry(f'Path {path!r} exists and is not a regular file.') from e
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ModelRetry(f'Path {path!r} exists and is not a regular file.')
        return os.fdopen(fd, 'rb+' if read_back else 'wb'), created
    except BaseException:
        os.close(fd)
        raise


def _open_for_write(resolved: Path, access: int, *, create: bool, path: str) -> tuple[int, bool]:
    if not create:
        return os.open(resolved, access | _OPEN_FLAGS), False
    for _ in range(3):
        try:
            return os.open(resolved, access | _OPEN_FLAGS | os.O_CREAT | os.O_EXCL, 0o666), True
        except FileExistsError:
            try:
                return os.open(resolved, access | _OPEN_FLAGS), False
            except FileNotFoundError:
                continue
    raise ModelRetry(f'Path {path!r} changed repeatedly while opening. Retry the write.')


def _stream_hash(source: BinaryIO, head: bytes = b'') -> str:
    """The content hash of `head` plus the rest of `source` (the core's streaming rule)."""
    data = bytearray(head)
    while chunk := source.read(_CHUNK_BYTES):
        data += chunk
    return _core.content_hash(bytes(data))


def _check(path: str, current: str, expected: str) -> None:
    if current != expected:
        raise ModelRetry(
            f'Conflict: file {path!r} has changed (expected hash:{expected}, got hash:{current}). '
            'Re-read the file and retry.'
        )


def _write(stream: BinaryIO, path: str, content: str, *, guard: str | None, created: bool) -> None:
    with stream:
        if guard is not None and not created:
            stream.seek(0)
            _check(path, _stream_hash(stream), guard)
        stream.seek(0)
        stream.truncate(0)
        stream.write(content.encode('utf-8'))


async def write_with_streams(
    toolset: Streams,
    core: _core.FileSystemCore,
    ctx: RunContext[Any] | None,
    path: str,
    content: str,
    expected_hash: str | None,
    content_hashes: bool,
) -> str:
    """`write_file` through the toolset's `open_read` / `open_write` overrides, on `core`'s root."""
    plan = core.plan_write(path, content, expected_hash, False, cancel=_core.CancelToken())
    resolved = Path(plan.root_dir) / plan.path  # what plan_write resolved and checked
    guard = expected_hash
    if ctx is not None:
        old: str | None = ''
        guard = _ABSENT
        if resolved.is_file():
            try:
                with toolset.open_read(resolved) as source:
                    head = source.read(_DIFF_SOURCE_BYTES + 1)
                    current = _stream_hash(source, head)
            except OSError:
                if expected_hash is not None:
                    raise
                old, guard = None, None
            else:
                if expected_hash is not None:
                    _check(path, current, expected_hash)
                old = head.decode('utf-8', errors='replace') if len(head) <= _DIFF_SOURCE_BYTES else None
                guard = current
        diff, truncated = _core.unified_diff(old, content, plan.path)
        announcement = Announcement(plan.path, plan.root_dir, 'write', diff, truncated)
        if (refusal := await announce(ctx, announcement)) is not None:
            return refusal
        if core.resolve(path, True, True) != str(resolved):
            raise ModelRetry(f'Path {path!r} was replaced while the change was announced. Retry.')
    stream, created = toolset.open_write(resolved, read_back=guard is not None, create=True)
    _write(stream, path, content, guard=guard, created=created)
    new_hash = _core.text_hash(content)
    if ctx is not None:
        await ctx.emit(FileWrittenEvent(path=plan.path, root_dir=plan.root_dir, content_hash=new_hash))
    suffix = f' [hash:{new_hash}]' if content_hashes else ''
    return f'Wrote {len(content)} chars ({len(content.splitlines())} lines) to {path}.{suffix}'


async def edit_with_streams(
    toolset: Streams,
    core: _core.FileSystemCore,
    ctx: RunContext[Any] | None,
    path: str,
    replacements: Sequence[tuple[str, str] | tuple[str, str, bool]],
    expected_hash: str | None,
    content_hashes: bool,
) -> str:
    """`edit_file` through the toolset's `open_read` / `open_write` overrides, on `core`'s root."""
    resolved = Path(core.resolve(path, True, True))
    if not resolved.is_file():
        raise ModelRetry(f'File not found: {path}')
    with toolset.open_read(resolved) as source:
        head = source.read(8192)
        if b'\0' in head:
            raise ModelRetry(f'{path} is a binary file; edit_file only edits text files.')
        raw = head + source.read()
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as e:
        raise ModelRetry(str(e)) from e
    current = _core.text_hash(text)
    if expected_hash is not None:
        _check(path, current, expected_hash)
    new_text = _core.apply_replacements(text, replacements, path)
    event_path = core.relative_to_root(str(resolved))
    diff, truncated = _core.unified_diff(text, new_text, event_path)
    if ctx is not None:
        announcement = Announcement(event_path, core.root_dir, 'edit', diff, truncated)
        if (refusal := await announce(ctx, announcement)) is not None:
            return refusal
        if core.resolve(path, True, True) != str(resolved):
            raise ModelRetry(f'Path {path!r} was replaced while the change was announced. Retry.')
    stream, created = toolset.open_write(resolved, read_back=True, create=False)
    _write(stream, path, new_text, guard=current, created=created)
    new_hash = _core.text_hash(new_text)
    if ctx is not None:
        await ctx.emit(
            FileEditedEvent(
                path=event_path, root_dir=core.root_dir, content_hash=new_hash, diff=diff, truncated=truncated
            )
        )
    suffix = f' [hash:{new_hash}]' if content_hashes else ''
    return f'Edited {path}.{suffix}'
