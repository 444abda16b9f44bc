"""A backend that answers outside the protocol's exact shapes still gets results, not an aborted run (issue 20).

Found by a new-user probe of the protocol path: a `bytearray` from `read_bytes`, a size of -1 or
2**64, a listed name holding a NUL, a `ValueError` (the protocol's error for a refused argument)
and a symlink loop that `stat` cannot follow each aborted the run (`TypeError`, `AssertionError`,
`OverflowError`) or failed a whole listing, where 0.62.0 answers. Each case runs through a real
agent run, as a model would call the tools.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.workspaces import FileEntry, LocalWorkspaceBackend
from pydantic_ai_harness_rs.filesystem import FileSystem

from tests.backends import ProtocolLocal
from tests.filesystem.conftest import REFERENCE
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import run_tools

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='our protocol engine')]

TOOLS = ['read_file', 'write_file', 'edit_file', 'list_directory', 'search_files', 'find_files', 'file_info']
TOOLS += ['create_directory', 'grep', 'list_files']
FILES = {'a.txt': 'hi needle\n', 'sub/b.txt': 'needle two\n'}

EVERY_TOOL: list[tuple[str, dict[str, Any]]] = [
    ('read_file', {'path': 'a.txt'}),
    ('file_info', {'path': 'a.txt'}),
    ('list_directory', {}),
    ('find_files', {'pattern': '**/*.txt'}),
    ('search_files', {'pattern': 'needle'}),
    ('grep', {'pattern': 'needle'}),
    ('list_files', {}),
    ('edit_file', {'path': 'a.txt', 'old_text': 'hi', 'new_text': 'ho'}),
]
EXPECTED = [
    '[a.txt | 1 lines | hash:{h}]\n     1\thi needle\n',
    'path: a.txt\ntype: file\nsize: 10 bytes\nbinary: False\nlines: 1\nhash: {h}',
    'a.txt  (10 bytes)\nsub/',
    'a.txt\nsub/b.txt',
    'a.txt:1:hi needle\nsub/b.txt:1:needle two',
    'a.txt:1:hi needle\nsub/b.txt:1:needle two',
    'a.txt\nsub/b.txt',
    'Edited a.txt. [hash:{e}]',
]


async def every_tool(backend: object) -> list[str]:
    t = await run_tools([FileSystem(tools=TOOLS)], EVERY_TOOL, workspace=backend)
    return t.results


def expected() -> list[str]:
    import hashlib

    h = hashlib.sha256(b'hi needle\n').hexdigest()[:12]
    e = hashlib.sha256(b'ho needle\n').hexdigest()[:12]
    return [text.format(h=h, e=e) for text in EXPECTED]


class ByteArrays(MemoryWorkspace):
    async def read_bytes(self, path: str) -> bytes:
        return bytearray(await super().read_bytes(path))  # type: ignore[return-value]


class MemoryViews(MemoryWorkspace):
    async def read_bytes(self, path: str) -> bytes:
        return memoryview(await super().read_bytes(path))  # type: ignore[return-value]


@pytest.mark.parametrize('kind', [ByteArrays, MemoryViews])
async def test_bytes_like_reads_are_read(kind: type[MemoryWorkspace]) -> None:
    backend = kind(FILES)
    assert await every_tool(backend) == expected()
    assert backend.files['/ws/a.txt'] == b'ho needle\n'


def odd_sizes(size: object) -> type[MemoryWorkspace]:
    class OddSizes(MemoryWorkspace):
        async def list_dir(self, path: str) -> tuple[FileEntry, ...]:
            return tuple(
                FileEntry(name=e.name, path=e.path, is_dir=e.is_dir, size=None if e.is_dir else size)  # type: ignore[arg-type]
                for e in await super().list_dir(path)
            )

    return OddSizes


@pytest.mark.parametrize('size', [-1, 2**64, 10**30])
async def test_a_listed_size_out_of_range_is_unknown(size: int) -> None:
    # The listing's size is not believed; `stat` gives the real one.
    assert await every_tool(odd_sizes(size)(FILES)) == expected()


class WithNulName(MemoryWorkspace):
    async def list_dir(self, path: str) -> tuple[FileEntry, ...]:
        extra = FileEntry(name='nu\x00l', path=path.rstrip('/') + '/nu\x00l', is_dir=False, size=1)
        return (*await super().list_dir(path), extra)


async def test_a_listed_name_with_a_nul_is_left_out_and_the_rest_listed() -> None:
    assert await every_tool(WithNulName(FILES)) == expected()


def refusing(method: str) -> type[MemoryWorkspace]:
    class Refusing(MemoryWorkspace):
        pass

    async def refuse(self: MemoryWorkspace, *args: Any) -> Any:
        raise ValueError('bad path')

    setattr(Refusing, method, refuse)
    return Refusing


@pytest.mark.parametrize(
    ('method', 'call'),
    [
        ('stat', ('read_file', {'path': 'a.txt'})),
        ('read_bytes', ('read_file', {'path': 'a.txt'})),
        ('list_dir', ('list_directory', {})),
        ('list_dir', ('search_files', {'pattern': 'x'})),
        ('list_dir', ('grep', {'pattern': 'x'})),
        ('stat', ('write_file', {'path': 'a.txt', 'content': 'x'})),
        ('write_bytes', ('write_file', {'path': 'n.txt', 'content': 'x'})),
        ('read_bytes', ('edit_file', {'path': 'a.txt', 'old_text': 'hi', 'new_text': 'ho'})),
        ('make_dir', ('create_directory', {'path': 'd'})),
    ],
)
async def test_a_backend_value_error_is_a_retry_with_its_text(method: str, call: tuple[str, dict[str, Any]]) -> None:
    backend = refusing(method)(FILES)
    t = await run_tools([FileSystem(tools=TOOLS)], [call], workspace=backend)
    assert t.results == ['RETRY: bad path']
    assert backend.files['/ws/a.txt'] == b'hi needle\n'


async def test_a_symlink_loop_is_left_out_of_a_listing_as_locally(tmp_path: Path) -> None:
    (tmp_path / 'd').mkdir()
    (tmp_path / 'top.txt').write_text('needle\n')
    os.symlink('loopb', tmp_path / 'loopa')
    os.symlink('loopa', tmp_path / 'loopb')
    os.symlink('..', tmp_path / 'd' / 'up')
    calls: list[Any] = [('list_directory', {}), ('list_directory', {'path': 'd/up'})]
    local = await run_tools([FileSystem()], calls, workspace=LocalWorkspaceBackend(tmp_path))
    protocol = await run_tools([FileSystem()], calls, workspace=ProtocolLocal(tmp_path))
    assert local.results == ['d/\ntop.txt  (7 bytes)', 'd/up/d/\nd/up/top.txt  (7 bytes)']
    assert protocol.results == local.results
