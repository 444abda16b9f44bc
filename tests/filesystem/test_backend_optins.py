"""The opt-ins and the "local files" behaviours on every backend kind (issue 20, item 7).

Each test runs the same tool calls on a plain `LocalWorkspaceBackend` (native), the in-memory
`MemoryWorkspace`, `ProtocolLocal` (the same kind of host tree through the workspace protocol)
and `ShellSandbox` (commands only: every file operation derived through `/bin/sh`), and
asserts one expected text for all four: a sandbox user sees what a local user sees.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.workspaces import LocalWorkspaceBackend
from pydantic_ai_harness_rs import FileSystem

from .conftest import beyond_reference

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from backends import ProtocolLocal, ShellSandbox  # noqa: E402
from memory_workspace import MemoryWorkspace  # noqa: E402

pytestmark = beyond_reference('opt-ins of ours on a workspace')

KINDS = ['local', 'memory', 'protocol', 'shell']
NFC = 'caf\u00e9.txt'
NFD = 'cafe\u0301.txt'
HINT = (
    'A name that differs only in Unicode normalization exists: "cafe\\u0301.txt" (decomposed, NFD); use that spelling.'
)


def backend(kind: str, root: Path, files: Mapping[str, str]) -> Any:
    """`files` (relative path -> text) on a backend of `kind`, in `root` unless in memory."""
    if kind == 'memory':
        return MemoryWorkspace(dict(files))
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return {'local': LocalWorkspaceBackend, 'protocol': ProtocolLocal, 'shell': ShellSandbox}[kind](root)


async def call(toolset: Any, ws: Any, tool: str, **arguments: Any) -> str:
    """A direct tool call's result, or its retry text prefixed `retry: `."""
    try:
        result = await getattr(toolset, tool)(workspace=ws, **arguments)
    except ModelRetry as retry:
        return f'retry: {retry}'
    assert isinstance(result, str)
    return result


LONG = 'a' * 50 + 'NEEDLE' + 'b' * 50


@pytest.mark.parametrize('kind', KINDS)
async def test_max_line_chars_clips_reads_and_search_hits(kind: str, tmp_path: Path) -> None:
    ws = backend(kind, tmp_path, {'big.txt': f'short\n{LONG}\nend\n'})
    toolset = FileSystem(max_line_chars=20).get_toolset()

    assert await call(toolset, ws, 'read_file', path='big.txt') == (
        '[big.txt | 3 lines | hash:202796c390ae]\n'
        '     1\tshort\n'
        "     2\taaaaaaaaaaaaaaaaaaaa [line 2 clipped: chars 1-20 of 106 shown; to read on: read_file('big.txt', offset=1, limit=1, column=20)]\n"
        '     3\tend\n'
    )
    assert await call(toolset, ws, 'read_file', path='big.txt', offset=1, limit=1, column=40) == (
        '[big.txt | 3 lines | hash:202796c390ae]\n'
        "     2\taaaaaaaaaaNEEDLEbbbb [line 2 clipped: chars 41-60 of 106 shown; to read on: read_file('big.txt', offset=1, limit=1, column=60)]\n"
        '... (1 more lines. Use offset=2 to continue reading.)\n'
    )
    hit = (
        'big.txt:2:…aaaaaaaNEEDLEbbbbbbb… [line 2 clipped: chars 44-63 of 106 shown; '
        "to read on: read_file('big.txt', offset=1, limit=1, column=63)]"
    )
    assert await call(toolset, ws, 'search_files', pattern='NEEDLE') == hit
    assert await call(toolset, ws, 'grep', pattern='NEEDLE') == hit


@pytest.mark.parametrize('kind', KINDS)
async def test_a_unicode_look_alike_is_named_and_never_made_twice(kind: str, tmp_path: Path) -> None:
    ws = backend(kind, tmp_path, {NFD: 'x\n', 'd/k.txt': 'k\n'})
    toolset = FileSystem().get_toolset()

    assert await call(toolset, ws, 'read_file', path=NFC) == f'Path not found: {NFC}. {HINT}'
    assert await call(toolset, ws, 'file_info', path=NFC) == f'Path not found: {NFC}. {HINT}'
    assert await call(toolset, ws, 'edit_file', path=NFC, old_text='x', new_text='y') == (
        f'retry: File not found: {NFC}. {HINT}'
    )
    assert await call(toolset, ws, 'write_file', path=NFC, content='twin\n') == (
        f"retry: '{NFC}' was not written: it would create a second file whose name differs from an "
        f'existing one only in Unicode normalization. {HINT}'
    )
    # An ASCII miss has no look-alike; a new non-ASCII name is written.
    assert await call(toolset, ws, 'read_file', path='d/none.txt') == 'Path not found: d/none.txt'
    assert (await call(toolset, ws, 'write_file', path='d/ñ.txt', content='n\n')).startswith('Wrote 2 chars')
    names = sorted(ws.files) if kind == 'memory' else sorted(p.name for p in tmp_path.iterdir())
    expected = ['/ws/cafe\u0301.txt', '/ws/d/k.txt', '/ws/d/ñ.txt'] if kind == 'memory' else [NFD, 'd']
    assert names == expected


@pytest.mark.parametrize('kind', KINDS)
async def test_edit_file_names_a_directory(kind: str, tmp_path: Path) -> None:
    ws = backend(kind, tmp_path, {'d/k.txt': 'k\n'})
    toolset = FileSystem().get_toolset()

    assert await call(toolset, ws, 'edit_file', path='d', old_text='k', new_text='j') == (
        "retry: 'd' is a directory, not a file."
    )
    assert await call(toolset, ws, 'edit_file', path='gone.txt', old_text='k', new_text='j') == (
        'retry: File not found: gone.txt'
    )


@pytest.mark.parametrize('kind', KINDS)
async def test_names_with_control_characters_cannot_forge_a_line(kind: str, tmp_path: Path) -> None:
    ws = backend(kind, tmp_path, {'evil\nfake.txt': 'alpha\n', 'ok.txt': 'alpha\n'})
    toolset = FileSystem().get_toolset()
    note = (
        '[names holding control characters or bytes that are not UTF-8, or starting with a quote, are shown as '
        "Python's repr() shows them, quoted and escaped; give such a name to a tool as the string it stands for]"
    )

    assert await call(toolset, ws, 'list_directory') == f"'evil\\nfake.txt'  (6 bytes)\nok.txt  (6 bytes)\n{note}"
    assert await call(toolset, ws, 'find_files', pattern='*.txt') == f"'evil\\nfake.txt'\nok.txt\n{note}"
    assert await call(toolset, ws, 'search_files', pattern='alpha') == (
        f"'evil\\nfake.txt':1:alpha\nok.txt:1:alpha\n{note}"
    )
    assert await call(toolset, ws, 'file_info', path='evil\nfake.txt') == (
        "path: 'evil\\nfake.txt'\ntype: file\nsize: 6 bytes\nbinary: False\nlines: 1\nhash: b6a98d9ce9a2"
    )


@pytest.mark.parametrize('kind', ['local', 'protocol', 'shell'])
async def test_a_fifo_is_refused_without_naming_the_host_path(kind: str, tmp_path: Path) -> None:
    ws = backend(kind, tmp_path, {'a.txt': 'a\n'})
    os.mkfifo(tmp_path / 'p')
    toolset = FileSystem().get_toolset()
    refusal = 'retry: The path is not a regular file (a FIFO, socket, or device); use a regular file.'

    assert await call(toolset, ws, 'read_file', path='p') == refusal
    assert await call(toolset, ws, 'file_info', path='p') == refusal
    assert await call(toolset, ws, 'edit_file', path='p', old_text='a', new_text='b') == refusal
    assert await call(toolset, ws, 'write_file', path='p', content='x') == refusal
    assert (tmp_path / 'p').is_fifo()


async def test_the_protocol_path_answers_as_the_local_one_on_the_same_tree(tmp_path: Path) -> None:
    files = {
        'big.txt': f'short\n{LONG}\nend\n',
        NFD: 'x\n',
        'd/k.txt': f'{LONG}\n',
        'evil\rname.txt': 'NEEDLE\n',
        'noop.txt': 'one\n',
    }
    backend('local', tmp_path, files)
    toolset = FileSystem(max_line_chars=16).get_toolset()
    calls: list[tuple[str, dict[str, Any]]] = [
        ('read_file', {'path': 'big.txt'}),
        ('read_file', {'path': 'big.txt', 'offset': 1, 'column': 90}),
        ('read_file', {'path': 'd/k.txt', 'column': 200}),
        ('read_file', {'path': 'evil\rname.txt'}),
        ('read_file', {'path': NFC}),
        ('read_file', {'path': f'd/{NFC}'}),
        ('file_info', {'path': NFC}),
        ('search_files', {'pattern': 'NEEDLE'}),
        ('search_files', {'pattern': 'N.*E', 'path': 'd'}),
        ('grep', {'pattern': 'needle', 'ignore_case': True}),
        ('list_directory', {}),
        ('find_files', {'pattern': '**/*.txt'}),
        ('edit_file', {'path': 'noop.txt', 'old_text': 'one', 'new_text': 'one'}),
        ('edit_file', {'path': 'd', 'old_text': 'one', 'new_text': 'two'}),
        ('edit_file', {'path': NFC, 'old_text': 'x', 'new_text': 'y'}),
        ('write_file', {'path': NFC, 'content': 'twin\n'}),
    ]
    local = [await call(toolset, LocalWorkspaceBackend(tmp_path), tool, **a) for tool, a in calls]
    protocol = [await call(toolset, ProtocolLocal(tmp_path), tool, **a) for tool, a in calls]
    assert protocol == local
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([NFD, 'big.txt', 'd', 'evil\rname.txt', 'noop.txt'])


@pytest.mark.parametrize('kind', KINDS)
async def test_a_name_that_is_not_utf8_is_listed_read_and_edited(kind: str, tmp_path: Path) -> None:
    bad = 'bad\udcff.txt'  # the bytes b'bad\xff.txt', as `surrogateescape` decodes them
    ws = backend(kind, tmp_path, {'a.txt': 'alpha\n', bad: 'alpha\n'})
    toolset = FileSystem().get_toolset()
    note = (
        '[names holding control characters or bytes that are not UTF-8, or starting with a quote, are shown as '
        "Python's repr() shows them, quoted and escaped; give such a name to a tool as the string it stands for]"
    )

    assert await call(toolset, ws, 'list_directory') == f"a.txt  (6 bytes)\n'bad\\udcff.txt'  (6 bytes)\n{note}"
    assert await call(toolset, ws, 'find_files', pattern='b*') == f"'bad\\udcff.txt'\n{note}"
    assert (
        await call(toolset, ws, 'search_files', pattern='alpha') == f"a.txt:1:alpha\n'bad\\udcff.txt':1:alpha\n{note}"
    )
    assert await call(toolset, ws, 'read_file', path=bad) == (
        "['bad\\udcff.txt' | 1 lines | hash:b6a98d9ce9a2]\n     1\talpha\n"
    )
    edited = await call(toolset, ws, 'edit_file', path=bad, old_text='alpha', new_text='beta')
    assert edited.startswith("Edited 'bad\\udcff.txt'. [hash:")
    if kind == 'memory':
        assert ws.files['/ws/' + bad] == b'beta\n'
    else:
        assert sorted(os.listdir(os.fsencode(tmp_path))) == [b'a.txt', b'bad\xff.txt']
        assert (tmp_path / bad).read_bytes() == b'beta\n'
