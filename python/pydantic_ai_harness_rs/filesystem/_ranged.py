"""Files too big to move whole through the workspace protocol, read in pieces through commands.

The workspace protocol has no ranged read, so 0.62.0 refuses a file over 64 MiB on a backend
whose files are not on this host. Where the backend also runs commands (`SupportsCommands`),
this module reads the file as byte ranges (`dd ... | base64`, one command per piece, the
base64 text-safe since `CommandResult.stdout` is a `str`) and feeds each piece to the core's
streaming read (`_core.RemoteRanged`), which counts lines, hashes and keeps only the window:
the result is the one a host directory gives, in memory bounded by a few pieces.

A read is verified: every piece must have its expected length, and afterwards the workspace's
`sha256sum` of the bytes read (`head -c SIZE`) must match the hash the core computed (its 12 hex
chars); without `sha256sum`, the file's size, mtime and inode (`stat`, else `wc -c`) must be the
same before and after. A file that changed meanwhile is a retry, never a result of mixed content.

A full pass's line index is kept per file version (`Pager`): another window of the same file, whose
`sha256sum` is unchanged, reads only the pieces from the checkpoint before the window to its end.
"""

from __future__ import annotations

import base64
import binascii
import functools
import shlex
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import anyio
import anyio.from_thread
import anyio.to_thread
from pydantic_ai.workspaces import SupportsCommands, Workspace, WorkspaceOutputLimitError, WorkspaceReadOnlyError

from pydantic_ai_harness_rs import _core

__all__ = (
    'PIECE_BYTES',
    'SEARCH_READ_BYTES',
    'WHOLE_READ_BYTES',
    'CommandsUnavailable',
    'Pager',
    'can_read_in_pieces',
    'piece_source',
    'read_capped',
    'search_read_bytes',
    'whole_read_bytes',
)

PIECE_BYTES = 8 << 20
"""Bytes one command reads (a multiple of `_BLOCK_BYTES`): about 11 MB of base64 output. A backend
that caps a command's output (`WorkspaceOutputLimitError`) gets halved pieces, down to 64 KiB."""

WHOLE_READ_BYTES: int | None = None
"""Files over this many bytes are read in pieces where the backend runs commands (`None`: the
core's limit, 64 MiB, as 0.62.0's). A test lowers it to page small files."""

SEARCH_READ_BYTES: int | None = None
"""Lowers a search's per-file read limit below the core's (`None`: the core's, 64 MiB for `grep`,
10 MiB for `search_files`). A test lowers it to skip small files."""

_BLOCK_BYTES = 64 << 10
_TOOLS = ('dd', 'base64', 'head')
"""The utilities a ranged read runs, beyond `sh` builtins; `sha256sum` verifies when present."""


def whole_read_bytes(core: _core.RemoteCore) -> int:
    """The largest file read whole through the protocol."""
    return core.caps[0] if WHOLE_READ_BYTES is None else WHOLE_READ_BYTES


def can_read_in_pieces(workspace: Workspace) -> bool:
    """Whether the workspace's backend runs commands (a wrapper may still refuse them)."""
    return isinstance(workspace.backend, SupportsCommands)


def search_read_bytes(cap: int) -> int:
    """The largest file a search reads, given the core's `cap` for it."""
    return cap if SEARCH_READ_BYTES is None else min(cap, SEARCH_READ_BYTES)


class CommandsUnavailable(Exception):
    """The workspace cannot read a file with a command (commands refused, a utility missing,
    output capped): read it through the protocol instead."""


_NO_TOOLS, _UNREADABLE = 97, 98


async def read_capped(workspace: Workspace, path: str, limit: int) -> bytes | int | None:
    """`path`'s bytes through one command; its size (an `int`) when it holds over `limit` bytes;
    `None` when it cannot be read.

    For a file whose size the listing did not give: the command prints the size (`wc -c`) and the
    bytes (`head -c | base64`) only when the size is within `limit`, so a file a search would skip
    is never moved. Raises `CommandsUnavailable` when the workspace refuses commands, lacks
    `base64`/`head`/`wc`, or caps the output; `WorkspaceUnavailableError` as the workspace does.
    """
    quoted = shlex.quote(path)
    command = (
        'for tool in base64 head wc; do command -v "$tool" >/dev/null 2>&1 || exit '
        f'{_NO_TOOLS}; done; [ -f {quoted} ] || exit {_UNREADABLE}; '
        f'size=$(wc -c < {quoted}) || exit {_UNREADABLE}; echo $size; '
        f'if [ "$size" -le {limit} ]; then head -c {limit + 1} < {quoted} | base64 || exit {_UNREADABLE}; fi'
    )
    try:
        result = await workspace.run(command, shell=True)
    except (WorkspaceReadOnlyError, WorkspaceOutputLimitError) as error:
        raise CommandsUnavailable from error
    if result.exit_code == _UNREADABLE:
        return None
    size_line, _, encoded = result.stdout.partition('\n')
    if result.exit_code != 0 or not size_line.strip().isdigit():
        raise CommandsUnavailable
    if int(size_line) > limit:
        return int(size_line)
    try:
        data = base64.b64decode(encoded)
    except (ValueError, binascii.Error):
        raise CommandsUnavailable from None
    return None if len(data) > limit else data


def piece_source(workspace: Workspace, path: str, size: int) -> Callable[[], bytes]:
    """For a worker thread of `anyio.to_thread.run_sync`: each call returns `path`'s next piece
    (`dd | base64` on the event loop, `PIECE_BYTES` at most), `b''` at its end (the first `size`
    bytes, or fewer when the file shrank). Raises the host task's cancellation, `RetryableError`
    when a command fails or a utility is missing, `CommandsUnavailable` when commands are refused."""
    quoted = shlex.quote(path)
    position, piece_bytes = 0, PIECE_BYTES

    def next_piece() -> bytes:
        nonlocal position, piece_bytes
        while position < size:
            anyio.from_thread.check_cancelled()
            count = min(piece_bytes, size - position)
            command = (
                f'command -v dd >/dev/null 2>&1 && command -v base64 >/dev/null 2>&1 || exit {_NO_TOOLS}; '
                f'dd if={quoted} bs={_BLOCK_BYTES} skip={position // _BLOCK_BYTES} '
                f'count={-(-count // _BLOCK_BYTES)} 2>/dev/null | base64'
            )
            try:
                result = anyio.from_thread.run(functools.partial(workspace.run, command, shell=True))
            except WorkspaceOutputLimitError:
                if piece_bytes <= _BLOCK_BYTES:
                    raise _failure(path, size, "a piece's output exceeds the workspace's output limit") from None
                piece_bytes = max(_BLOCK_BYTES, piece_bytes // 2 // _BLOCK_BYTES * _BLOCK_BYTES)
                continue
            except WorkspaceReadOnlyError:
                raise CommandsUnavailable from None
            if result.exit_code == _NO_TOOLS:
                raise _failure(path, size, 'the workspace has no `dd` or `base64`, which reading a file this big needs')
            if result.exit_code != 0:
                raise _failure(path, size, f'a workspace command failed (exit status {result.exit_code})')
            try:
                piece = base64.b64decode(result.stdout)
            except (ValueError, binascii.Error):
                raise _failure(path, size, 'the workspace returned damaged output') from None
            del result
            if len(piece) > count:
                piece = piece[:count]  # the file grew past `size`: search the bytes it had
            position = position + count if len(piece) == count else size
            return piece
        return b''

    return next_piece


class _Unavailable(Exception):
    """The workspace refuses commands (a read-only wrapper): keep 0.62.0's refusal."""


def _failure(path: str, size: int, why: str) -> _core.RetryableError:
    return _core.RetryableError(
        f'Cannot read `{path}` ({size} bytes) in pieces: {why}. '
        'Find the lines you need with a search tool, or read a byte range with a shell tool if you have one.'
    )


def _changed(path: str) -> _core.ConflictError:
    return _core.ConflictError(f'`{path}` changed while it was read in pieces; read it again.')


async def _run(workspace: Workspace, command: str, path: str, size: int) -> str:
    """`command`'s stdout; a failed command is a retry naming what failed, never its raw output."""
    try:
        result = await workspace.run(command, shell=True)
    except WorkspaceReadOnlyError as error:
        raise _Unavailable from error
    if result.exit_code != 0:
        raise _failure(path, size, f'a workspace command failed (exit status {result.exit_code})')
    return result.stdout


def _feed(ranged: _core.RemoteRanged, stdout: str, skip: int, count: int, path: str, size: int) -> bool:
    """Decode one piece's base64, check it holds `count` bytes (more: the file grew past the read,
    cut), and feed it from byte `skip`; False once the scan has stopped (cancelled, or past its window)."""
    try:
        piece = base64.b64decode(stdout)
    except (ValueError, binascii.Error):
        raise _failure(path, size, 'the workspace returned damaged output') from None
    if len(piece) < count:
        if not piece:
            raise _failure(path, size, '`dd` read nothing')
        raise _changed(path)
    return ranged.feed(piece[skip:count] if skip or len(piece) > count else piece)


class _Stale(Exception):
    """The file is no longer the version a kept pass was of."""


_KEPT_FILES = 16
"""Files whose last full pass a `Pager` keeps (a line index of at most 1024 checkpoints each)."""


class Pager:
    """Big-file reads for one engine, keeping what each full pass learned of a file's version.

    A full pass reads every byte (the line count and hash need them all). Its line index is kept
    with the file's size and sha256, so another window of the same version reads only the pieces
    from the checkpoint before the window to its end, then checks the workspace's `sha256sum` is
    still the kept one (else a full pass runs). Without `sha256sum` every read is a full pass.
    """

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace
        self._kept: dict[str, tuple[int, str, _core.RemoteKept]] = {}

    def _known(self, resolved: str, size: int) -> tuple[str, _core.RemoteKept] | None:
        known = self._kept.get(resolved)
        if known is None or known[0] != size:
            return None
        return known[1], known[2]

    def _keep(self, resolved: str, size: int, digest: str | None, ranged: _core.RemoteRanged) -> None:
        kept = ranged.kept()
        if digest is None or kept is None:
            return
        self._kept.pop(resolved, None)
        while len(self._kept) >= _KEPT_FILES:
            self._kept.pop(next(iter(self._kept)))
        self._kept[resolved] = (size, digest, kept)

    async def read(
        self,
        core: _core.RemoteCore,
        path: str,
        resolved: str,
        size: int,
        offset: int,
        limit: int,
        guessed_type: str | None,
        column: int = 0,
    ) -> _core.Outcome | None:
        """`read_file` of a big file; `None` when the workspace refuses commands. `column`: with
        `max_line_chars`, the 0-based character each line starts from."""
        known = self._known(resolved, size)
        if known is not None:
            ranged = core.window_ranged(path, resolved, offset, limit, known[1], column=column)
            try:
                found = await _pass(self._workspace, ranged, path, resolved, size, guessed_type, known[0])
                return None if found is None else found[0]
            except _Stale:
                self._kept.pop(resolved, None)
        ranged = core.read_ranged(path, resolved, offset, limit, column=column)
        result = await _pass(self._workspace, ranged, path, resolved, size, guessed_type, None)
        if result is None:
            return None
        self._keep(resolved, size, result[1], ranged)
        return result[0]

    async def info(self, core: _core.RemoteCore, path: str, resolved: str, size: int) -> _core.Outcome | None:
        """`file_info` of a big file; `None` when the workspace refuses commands."""
        known = self._known(resolved, size)
        if known is not None:
            ranged = core.info_kept(path, resolved, size, known[1])
            try:
                found = await _pass(self._workspace, ranged, path, resolved, size, None, known[0])
                return None if found is None else found[0]
            except _Stale:
                self._kept.pop(resolved, None)
        ranged = core.info_ranged(path, resolved, size)
        result = await _pass(self._workspace, ranged, path, resolved, size, None, None)
        if result is None:
            return None
        self._keep(resolved, size, result[1], ranged)
        return result[0]


async def _pass(
    workspace: Workspace,
    ranged: _core.RemoteRanged,
    path: str,
    resolved: str,
    size: int,
    guessed_type: str | None,
    known_digest: str | None,
) -> tuple[_core.Outcome, str | None] | None:
    """Feed `resolved`'s bytes from `ranged.start` to `ranged`, verify, and return its outcome and
    the file's sha256 (`None` without `sha256sum`).

    `None` when the workspace refuses commands. With `known_digest` (a kept pass's), `_Stale`
    when the file's sha256 is no longer it. Raises `RetryableError` when a utility is missing or
    a command fails (naming it, not its output), `ConflictError` when the file changed meanwhile,
    the core's errors (`OffsetPastEndError`). A cancelled call stops its scan and its command.
    """
    quoted = shlex.quote(resolved)
    fingerprint = f'stat -L -c "%s %Y %i" -- {quoted} 2>/dev/null || wc -c < {quoted}'
    try:
        probe = await _run(
            workspace,
            f'for tool in {" ".join(_TOOLS)}; do command -v "$tool" >/dev/null 2>&1 || printf "%s " "$tool"; done; '
            'echo; if command -v sha256sum >/dev/null 2>&1; then echo sha256sum; '
            f'else {{ {fingerprint}; }}; fi',
            path,
            size,
        )
        missing_line, _, check = probe.partition('\n')
        missing = missing_line.split()
        if missing:
            names = ', '.join(f'`{tool}`' for tool in missing)
            raise _failure(path, size, f'the workspace has no {names}, which reading a file this big needs')
        check = check.strip()
        if known_digest is not None and check != 'sha256sum':
            raise _Stale
        if ranged.start is not None:
            await _feed_from(workspace, ranged, ranged.start, path, quoted, size)
        digest: str | None = None
        if check == 'sha256sum':
            words = (await _run(workspace, f'head -c {size} < {quoted} | sha256sum', path, size)).split()
            if not words:
                raise _failure(path, size, '`sha256sum` printed nothing')
            digest = words[0]
            if known_digest is not None and digest != known_digest:
                raise _Stale
        outcome = await anyio.to_thread.run_sync(ranged.finish, guessed_type, abandon_on_cancel=True)
        if digest is not None:
            if not digest.startswith(outcome.content_hash or '-'):
                raise _changed(path)
        elif check != (await _run(workspace, f'{{ {fingerprint}; }}', path, size)).strip():
            raise _changed(path)
        return outcome, digest
    except _Unavailable:
        return None
    except BaseException:
        ranged.cancel()
        raise


async def _feed_from(
    workspace: Workspace, ranged: _core.RemoteRanged, start: int, path: str, quoted: str, size: int
) -> None:
    """Feed bytes `start..size` piece by piece (`dd` reads whole blocks; the part before `start`
    is dropped), until the end or the scan stops taking them."""
    position, piece_bytes = start, PIECE_BYTES
    # One piece is decoded and scanned on `feeder` while the workspace reads the next.
    feeder = ThreadPoolExecutor(1, thread_name_prefix='ranged-feed')
    pending: Future[bool] | None = None
    try:
        while position < size:
            aligned = position - position % _BLOCK_BYTES
            count = min(piece_bytes, size - aligned)
            command = (
                f'dd if={quoted} bs={_BLOCK_BYTES} skip={aligned // _BLOCK_BYTES} '
                f'count={-(-count // _BLOCK_BYTES)} 2>/dev/null | base64'
            )
            try:
                stdout = await _run(workspace, command, path, size)
            except WorkspaceOutputLimitError:
                if piece_bytes <= _BLOCK_BYTES:
                    raise _failure(path, size, "a piece's output exceeds the workspace's output limit") from None
                piece_bytes = max(_BLOCK_BYTES, piece_bytes // 2 // _BLOCK_BYTES * _BLOCK_BYTES)
                continue
            if pending is not None and not await anyio.to_thread.run_sync(pending.result, abandon_on_cancel=True):
                return
            pending = feeder.submit(_feed, ranged, stdout, position - aligned, count, path, size)
            del stdout
            position = aligned + count
        if pending is not None:
            await anyio.to_thread.run_sync(pending.result, abandon_on_cancel=True)
    finally:
        feeder.shutdown(wait=False)
