"""The `open_read` / `open_write` override points: a subclass's streams carry the bytes."""

from __future__ import annotations

import io
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO

import pytest

from tests.filesystem.conftest import spec_over_reference

pytestmark = pytest.mark.anyio


def make_toolset(fs: ModuleType, root: Path, store: dict[str, bytes], calls: list[str]) -> Any:
    """A toolset whose file bytes live in `store` (keyed by resolved path), not on disk."""

    class _Stream(io.BytesIO):
        def __init__(self, key: str, data: bytes) -> None:
            super().__init__(data)
            self.key = key

        def close(self) -> None:
            store[self.key] = self.getvalue()
            super().close()

    class MemoryToolset(fs.FileSystemToolset):  # type: ignore[misc, name-defined]
        def open_read(self, resolved: Path) -> BinaryIO:
            calls.append(f'read {resolved.name}')
            return io.BytesIO(store[str(resolved)])

        def open_write(self, resolved: Path, *, read_back: bool, create: bool) -> tuple[BinaryIO, bool]:
            calls.append(f'write {resolved.name} read_back={read_back} create={create}')
            key = str(resolved)
            if key not in store:
                if not create:
                    raise FileNotFoundError(key)
                store[key] = b''
                return _Stream(key, b''), True
            return _Stream(key, store[key]), False

    return MemoryToolset(
        root_dir=root,
        allowed_patterns=[],
        denied_patterns=[],
        protected_patterns=[],
        max_read_lines=2000,
        max_list_results=1000,
        max_search_results=1000,
        max_find_results=1000,
    )


async def test_write_and_edit_go_through_the_overrides(fs: ModuleType, tmp_path: Path) -> None:
    store: dict[str, bytes] = {}
    calls: list[str] = []
    toolset = make_toolset(fs, tmp_path, store, calls)
    result = await toolset.write_file('a.txt', 'hello\n')
    assert result.startswith('Wrote 6 chars (1 lines) to a.txt. [hash:')
    key = str(tmp_path.resolve() / 'a.txt')
    assert store[key] == b'hello\n'
    assert not (tmp_path / 'a.txt').exists()
    # The edit reads from the store: the file does not exist on disk, so it is reported missing there.
    with pytest.raises(Exception) as excinfo:
        await toolset.edit_file('a.txt', 'hello', 'bye')
    assert 'File not found: a.txt' in str(excinfo.value)
    (tmp_path / 'a.txt').write_text('on disk\n')
    store[key] = b'hello\n'
    assert (await toolset.edit_file('a.txt', 'hello', 'bye')).startswith('Edited a.txt. [hash:')
    assert store[key] == b'bye\n'
    assert (tmp_path / 'a.txt').read_text() == 'on disk\n'
    assert calls == ['write a.txt read_back=False create=True', 'read a.txt', 'write a.txt read_back=True create=False']


@pytest.mark.parametrize(
    ('error', 'expected'),
    [
        # 0.36.0 says the same after a raw `[Errno N] ` (the README lists it).
        pytest.param(
            PermissionError(13, 'Permission denied', '{root}/a.txt'),
            "Permission denied: 'a.txt'",
            marks=spec_over_reference,
        ),
        pytest.param(
            FileNotFoundError(2, 'No such file or directory', '{root}/a.txt'),
            "No such file or directory: 'a.txt'",
            marks=spec_over_reference,
        ),
        pytest.param(
            PermissionError(13, 'Permission denied', '/elsewhere/x'),
            "Permission denied: '<outside-workspace>'",
            marks=spec_over_reference,
        ),
        (OSError(36, 'File name too long', '{root}/a.txt'), 'The path name is too long.'),
    ],
)
async def test_an_os_error_from_an_override_is_a_retry_without_host_path(
    fs: ModuleType, tmp_path: Path, error: OSError, expected: str
) -> None:
    """As 0.36.0's `_recoverable`: the model can act on it, and sees no host path (nor, here, a raw errno)."""
    from pydantic_ai.exceptions import ModelRetry

    root = tmp_path.resolve()
    error.filename = error.filename.format(root=root)
    toolset = make_toolset(fs, root, {}, [])

    def refuse(resolved: Path, *, read_back: bool, create: bool) -> tuple[BinaryIO, bool]:
        raise error

    toolset.open_write = refuse
    with pytest.raises(ModelRetry) as raised:
        await toolset.write_file('a.txt', 'x')
    assert raised.value.message == expected


@spec_over_reference  # 0.36.0's OSError names the host path
async def test_a_full_disk_in_an_override_aborts_without_host_path(fs: ModuleType, tmp_path: Path) -> None:
    root = tmp_path.resolve()
    toolset = make_toolset(fs, root, {}, [])

    def full(resolved: Path, *, read_back: bool, create: bool) -> tuple[BinaryIO, bool]:
        raise OSError(28, 'No space left on device', str(resolved))

    toolset.open_write = full
    with pytest.raises(OSError) as raised:
        await toolset.write_file('a.txt', 'x')
    assert raised.value.errno == 28
    assert str(root) not in str(raised.value)
