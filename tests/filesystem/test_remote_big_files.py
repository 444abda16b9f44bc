"""Files too big to move whole through the workspace protocol (issue 20, item 8).

0.62.0 refuses a file over 64 MiB on a backend whose files are not on this host. Where the backend
runs commands, `RemoteEngine` reads it in byte ranges (`dd | base64`) and the core scans the pieces:
the result is the local path's, window by window. Here the whole-read limit is patched down to a
few KiB (`_ranged.WHOLE_READ_BYTES`) and the pieces to 64 KiB, so small files take the ranged path.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from pydantic_ai.workspaces import FileEntry
from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.filesystem import _ranged
from pydantic_ai_harness_rs.filesystem._remote import RemoteEngine

from tests.workspace_core import core, read

from .conftest import REFERENCE

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from backends import ProtocolLocal, ShellSandbox  # noqa: E402
from memory_workspace import MemoryWorkspace  # noqa: E402

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(REFERENCE, reason='our protocol engine'),
]

LINES = 20_000


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ranged, 'WHOLE_READ_BYTES', 4096)
    monkeypatch.setattr(_ranged, 'PIECE_BYTES', 64 << 10)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """About 390 KiB of numbered lines (several pieces), a UTF-8 char across every line."""
    path = tmp_path / 'big.log'
    path.write_bytes(b''.join(f'{i:05d} entry é {"x" * (i % 7)}\n'.encode() for i in range(LINES)))
    return path


def backends(root: Path) -> list[object]:
    return [ShellSandbox(root), ProtocolLocal(root)]


@pytest.mark.usefixtures('small_limits')
@pytest.mark.parametrize('kind', ['commands only', 'filesystem and commands'])
@pytest.mark.parametrize(('offset', 'limit'), [(0, None), (9_990, 25), (LINES - 3, 10), (0, 1)])
async def test_windows_match_the_local_path(log: Path, kind: str, offset: int, limit: int | None) -> None:
    backend = backends(log.parent)[kind == 'filesystem and commands']
    outcome, content = await RemoteEngine(backend).read_file('big.log', offset, limit)  # type: ignore[arg-type]
    assert content is None
    assert outcome.text == read(core(log.parent), 'big.log', offset, limit)
    assert outcome.text.startswith(f'[big.log | {LINES} lines | hash:')
    assert outcome.emit


@pytest.mark.usefixtures('small_limits')
@pytest.mark.parametrize('kind', ['commands only', 'filesystem and commands'])
async def test_past_the_end_and_file_info_match_the_local_path(log: Path, kind: str) -> None:
    backend = backends(log.parent)[kind == 'filesystem and commands']
    engine = RemoteEngine(backend)  # type: ignore[arg-type]
    with pytest.raises(_core.OffsetPastEndError) as info:
        await engine.read_file('big.log', LINES + 5)
    assert str(info.value) == f'Offset {LINES + 5} exceeds file length ({LINES} lines).'
    local = core(log.parent).file_info('big.log', cancel=_core.CancelToken())
    info_outcome = await engine.file_info('big.log')
    assert info_outcome.text == local.text
    assert info_outcome.content_hash == local.content_hash
    assert 'lines: 20000' in info_outcome.text


@pytest.mark.usefixtures('small_limits')
async def test_a_binary_file_is_described_as_locally(tmp_path: Path) -> None:
    (tmp_path / 'blob.bin').write_bytes(bytes(range(256)) * 100)
    outcome, _ = await RemoteEngine(ShellSandbox(tmp_path)).read_file('blob.bin')  # type: ignore[arg-type]
    assert outcome.text == read(core(tmp_path), 'blob.bin')
    assert 'Binary file; the first bytes in hex:' in outcome.text


class ChangingSandbox(ShellSandbox):
    """Appends to (or rewrites) the file after the second piece is read."""

    def __init__(self, root: Path, target: Path, rewrite: bool) -> None:
        super().__init__(root)
        self.target, self.rewrite, self.pieces, self.changes = target, rewrite, 0, 0

    async def run(self, command, **kwargs):  # type: ignore[no-untyped-def,override]
        result = await super().run(command, **kwargs)
        if isinstance(command, str) and command.startswith('dd if='):
            self.pieces += 1
            if self.pieces == 2:
                self.changes += 1
                if self.rewrite:
                    data = self.target.read_bytes()
                    self.target.write_bytes(data[:100] + b'CHANGE%d' % self.changes + data[107:])
                else:
                    with self.target.open('ab') as f:
                        f.write(b'one more line\n')
        return result


@pytest.mark.usefixtures('small_limits')
async def test_a_file_rewritten_between_pieces_is_a_retry_never_mixed_content(log: Path) -> None:
    sandbox = ChangingSandbox(log.parent, log, rewrite=True)
    engine = RemoteEngine(sandbox)  # type: ignore[arg-type]
    with pytest.raises(_core.ConflictError) as info:
        await engine.read_file('big.log', 0, 5)
    assert str(info.value) == '`big.log` changed while it was read in pieces; read it again.'
    sandbox.pieces = 0
    with pytest.raises(_core.ConflictError):
        await engine.file_info('big.log')


@pytest.mark.usefixtures('small_limits')
async def test_a_file_rewritten_without_sha256sum_is_caught_by_its_size_and_mtime(
    log: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tools = tmp_path_factory.mktemp('bin')
    for tool in ('dd', 'base64', 'head', 'stat', 'wc', 'test', 'printf'):
        found = next(Path(d, tool) for d in os.environ['PATH'].split(':') if Path(d, tool).exists())
        (tools / tool).symlink_to(found)
    sandbox = ChangingSandbox(log.parent, log, rewrite=False)
    sandbox._path = str(tools)  # pyright: ignore[reportPrivateUsage]
    engine = RemoteEngine(sandbox)  # type: ignore[arg-type]
    with pytest.raises(_core.ConflictError):
        await engine.read_file('big.log', 0, 5)
    # Unchanged, it reads as locally with the same tools.
    sandbox.pieces = 10
    outcome, _ = await engine.read_file('big.log', 0, 5)
    assert outcome.text == read(core(log.parent), 'big.log', 0, 5)


@pytest.mark.usefixtures('small_limits')
async def test_an_appended_log_shows_the_bytes_there_when_the_read_began(log: Path) -> None:
    before = read(core(log.parent), 'big.log', LINES - 2, 5)
    engine = RemoteEngine(ChangingSandbox(log.parent, log, rewrite=False))  # type: ignore[arg-type]
    outcome, _ = await engine.read_file('big.log', LINES - 2, 5)
    assert outcome.text == before


@pytest.mark.usefixtures('small_limits')
async def test_a_missing_utility_is_named_without_raw_shell_text(
    log: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tools = tmp_path_factory.mktemp('bin')
    for tool in ('base64', 'head', 'wc', 'cat', 'find', 'readlink', 'mkdir'):
        found = next((Path(d, tool) for d in os.environ['PATH'].split(':') if Path(d, tool).exists()), None)
        if found is not None:
            (tools / tool).symlink_to(found)
    engine = RemoteEngine(ShellSandbox(log.parent, path=str(tools)))  # type: ignore[arg-type]
    with pytest.raises(_core.RetryableError) as info:
        await engine.file_info('big.log')
    size = log.stat().st_size
    assert str(info.value) == (
        f'Cannot read `big.log` ({size} bytes) in pieces: the workspace has no `dd`, which reading a file this '
        'big needs. Find the lines you need with a search tool, or read a byte range with a shell tool if you '
        'have one.'
    )


class HugeMemory(MemoryWorkspace):
    """An in-memory backend (no commands) that states one small file as just over 64 MiB."""

    async def stat(self, path: str) -> FileEntry:
        entry = await super().stat(path)
        if entry.path.endswith('huge.log'):
            return FileEntry(name=entry.name, path=entry.path, is_dir=False, size=(64 << 20) + 1)
        return entry


async def test_a_backend_without_commands_keeps_the_refusal() -> None:
    engine = RemoteEngine(HugeMemory({'huge.log': 'x\n', 'small.log': 'a\n' * 5000}))  # type: ignore[arg-type]
    outcome, _ = await engine.read_file('huge.log')
    assert outcome.text == (
        '[huge.log | 67108865 bytes]\nToo large to read: the limit is 67108864 bytes. Find the lines you need with '
        'a search tool, or read a byte range with a shell tool if you have one.\n'
    )
    info = await engine.file_info('huge.log')
    assert info.text == ('path: huge.log\ntype: file\nsize: 67108865 bytes\ncontents: not read (over 67108864 bytes)')


class HugeLocal(ProtocolLocal):
    """A host directory through the protocol (with commands) stating `huge.log` as just over 64 MiB."""

    async def stat(self, path: str) -> FileEntry:
        entry = await super().stat(path)
        if entry.path.endswith('huge.log'):
            return FileEntry(name=entry.name, path=entry.path, is_dir=False, size=(64 << 20) + 1)
        return entry


async def test_a_read_only_wrapper_that_refuses_commands_keeps_the_refusal(tmp_path: Path) -> None:
    from pydantic_ai.workspaces import ReadOnlyWorkspace

    (tmp_path / 'huge.log').write_text('hello\nworld\n')
    engine = RemoteEngine(ReadOnlyWorkspace(HugeLocal(tmp_path)))  # type: ignore[arg-type]
    outcome, _ = await engine.read_file('huge.log')
    assert outcome.text.startswith('[huge.log | 67108865 bytes]\nToo large to read: the limit is 67108864 bytes.')
    info = await engine.file_info('huge.log')
    assert info.text.endswith('contents: not read (over 67108864 bytes)')


@pytest.mark.usefixtures('small_limits')
async def test_a_cancelled_read_stops(log: Path) -> None:
    class Slow(ShellSandbox):
        async def run(self, command, **kwargs):  # type: ignore[no-untyped-def,override]
            if isinstance(command, str) and command.startswith('dd if=') and self.runs >= 3:
                await anyio.sleep(30)
            return await super().run(command, **kwargs)

    sandbox = Slow(log.parent)
    engine = RemoteEngine(sandbox)  # type: ignore[arg-type]
    with anyio.move_on_after(1) as scope:
        await engine.read_file('big.log', 0, 5)
    assert scope.cancelled_caught
    runs = sandbox.runs
    await anyio.sleep(0.2)
    assert sandbox.runs == runs


@pytest.mark.usefixtures('small_limits')
async def test_a_backend_output_limit_gets_smaller_pieces(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic_ai.workspaces import WorkspaceOutputLimitError

    monkeypatch.setattr(_ranged, 'PIECE_BYTES', 256 << 10)

    class Capped(ShellSandbox):
        async def run(self, command, **kwargs):  # type: ignore[no-untyped-def,override]
            result = await super().run(command, **kwargs)
            if len(result.stdout) > 100_000:
                raise WorkspaceOutputLimitError('output over 100000 chars', limit=100_000)
            return result

    outcome, _ = await RemoteEngine(Capped(log.parent)).read_file('big.log', 12_345, 5)  # type: ignore[arg-type]
    assert outcome.text == read(core(log.parent), 'big.log', 12_345, 5)


class Counting(ShellSandbox):
    """Counts the `dd` pieces it runs."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.pieces = 0

    async def run(self, command, **kwargs):  # type: ignore[no-untyped-def,override]
        if isinstance(command, str) and command.startswith('dd if='):
            self.pieces += 1
        return await super().run(command, **kwargs)


@pytest.mark.usefixtures('small_limits')
async def test_paging_the_same_version_reads_only_the_window_pieces(log: Path) -> None:
    sandbox = Counting(log.parent)
    engine = RemoteEngine(sandbox)  # type: ignore[arg-type]
    local = core(log.parent)
    assert (await engine.read_file('big.log', 0, 5))[0].text == read(local, 'big.log', 0, 5)
    full = sandbox.pieces
    assert full == -(-log.stat().st_size // (64 << 10))
    for offset, limit in [(10_000, 20), (LINES - 4, 10), (3, None)]:
        sandbox.pieces = 0
        outcome, _ = await engine.read_file('big.log', offset, limit)
        assert outcome.text == read(local, 'big.log', offset, limit)
        assert sandbox.pieces < full
    sandbox.pieces = 0
    info = await engine.file_info('big.log')
    assert info.text == local.file_info('big.log', cancel=_core.CancelToken()).text
    assert sandbox.pieces == 0
    with pytest.raises(_core.OffsetPastEndError):
        await engine.read_file('big.log', LINES)

    # Rewritten at the same size: the kept pass no longer applies, a full pass reads the new bytes.
    data = log.read_bytes()
    log.write_bytes(data.replace(b'09999 entry', b'09999 ENTRY'))
    sandbox.pieces = 0
    outcome, _ = await engine.read_file('big.log', 9_999, 1)
    assert outcome.text == read(core(log.parent), 'big.log', 9_999, 1)
    assert '09999 ENTRY' in outcome.text
    assert sandbox.pieces > full


@pytest.mark.usefixtures('small_limits')
@pytest.mark.parametrize('kind', ['commands only', 'filesystem and commands'])
@pytest.mark.parametrize(('offset', 'limit', 'column'), [(0, 5, 0), (2, 1, 150), (LINES - 2, None, 40)])
async def test_max_line_chars_clips_a_ranged_read_as_locally(
    tmp_path: Path, kind: str, offset: int, limit: int | None, column: int
) -> None:
    from pydantic_ai.workspaces import LocalWorkspaceBackend
    from pydantic_ai_harness_rs.filesystem import FileSystem

    long = 'é' * 300
    (tmp_path / 'wide.log').write_text(''.join(f'{i:05d} {long if i % 2 == 0 else "short"}\n' for i in range(LINES)))
    backend = backends(tmp_path)[kind == 'filesystem and commands']
    toolset = FileSystem(max_line_chars=100).get_toolset()
    args = {'offset': offset, 'limit': limit, 'column': column}
    local = await toolset.read_file('wide.log', **args, workspace=LocalWorkspaceBackend(tmp_path))
    ranged = await toolset.read_file('wide.log', **args, workspace=backend)  # type: ignore[arg-type]
    assert isinstance(ranged, str) and ranged == local
    assert 'clipped: chars' in ranged
