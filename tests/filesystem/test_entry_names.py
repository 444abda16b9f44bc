"""Names as listings show them, and directories named as such (issue 19, item 11).

- A file name holding a newline or another control character cannot forge a line of any listing
  (`list_directory`, `find_files`, `search_files`, `list_files`, `grep`): it is shown as Python's
  `repr()` writes it, and the result ends with a note saying so. Both contracts.
- `edit_file` given a directory names it a directory (both references: `File not found`).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.workspaces import LocalWorkspaceBackend
from pydantic_ai_harness_rs.filesystem import FILE_SYSTEM_TOOL_NAMES, FileSystem

from tests.filesystem.conftest import REFERENCE

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='issue 19: beyond the references')]

NOTE = (
    '[names holding control characters or bytes that are not UTF-8, or starting with a quote, are shown as '
    "Python's repr() shows them, quoted and escaped; give such a name to a tool as the string it stands for]"
)
FORGED = 'evil\nfake.txt:1:alpha'


async def _calls(root: Path, workspace: bool, calls: list[tuple[str, dict[str, object]]]) -> list[str]:
    extra: dict[str, object] = {'workspace': LocalWorkspaceBackend(root)} if workspace else {}
    fs = (
        FileSystem(tools=FILE_SYSTEM_TOOL_NAMES)
        if workspace
        else FileSystem(root_dir=root, tools=FILE_SYSTEM_TOOL_NAMES)
    )
    toolset = fs.get_toolset()
    out = []
    for tool, args in calls:
        try:
            out.append(await getattr(toolset, tool)(**args, **extra))
        except ModelRetry as e:
            out.append('RETRY: ' + e.message)
    return out


@pytest.mark.parametrize('workspace', [False, True], ids=['document', 'workspace'])
async def test_a_control_character_in_a_name_cannot_forge_a_line(tmp_path: Path, workspace: bool) -> None:
    root = tmp_path / 'root'
    (root / 'sub').mkdir(parents=True)
    for name in ['a.txt', FORGED, 'sub/x\x1b[31m.txt']:
        (root / name).write_text('alpha\n')
    results = await _calls(
        root,
        workspace,
        [
            ('list_directory', {'path': '.'}),
            ('find_files', {'pattern': '**/*'}),
            ('search_files', {'pattern': 'alpha'}),
            ('list_files', {}),
            ('grep', {'pattern': 'alpha'}),
            ('read_file', {'path': FORGED}),
        ],
    )
    forged, colored = "'evil\\nfake.txt:1:alpha'", "'sub/x\\x1b[31m.txt'"
    assert results[:5] == [
        f'a.txt  (6 bytes)\n{forged}  (6 bytes)\nsub/\n{NOTE}',
        f'a.txt\n{forged}\nsub/\n{colored}\n{NOTE}',
        f'a.txt:1:alpha\n{forged}:1:alpha\n{colored}:1:alpha\n{NOTE}',
        f'a.txt\n{forged}\n{colored}\n{NOTE}',
        f'a.txt:1:alpha\n{forged}:1:alpha\n{colored}:1:alpha\n{NOTE}',
    ]
    # The name it stands for reads the file.
    assert results[5].endswith('     1\talpha\n')


@pytest.mark.parametrize('workspace', [False, True], ids=['document', 'workspace'])
async def test_a_name_cannot_forge_a_field_of_a_result_that_echoes_it(tmp_path: Path, workspace: bool) -> None:
    # A new-user probe of issue 19: file_info's `type:` and read_file's header took the newline raw.
    root = tmp_path / 'root'
    root.mkdir()
    (root / FORGED).write_text('alpha\n')
    info, edited = await _calls(
        root,
        workspace,
        [('file_info', {'path': FORGED}), ('edit_file', {'path': FORGED, 'old_text': 'alpha', 'new_text': 'beta'})],
    )
    assert info.splitlines()[0] == "path: 'evil\\nfake.txt:1:alpha'"
    assert '\n' not in edited.split(' [hash')[0] and "'evil\\nfake.txt:1:alpha'" in edited
    assert (root / FORGED).read_text() == 'beta\n'


@pytest.mark.parametrize('workspace', [False, True], ids=['document', 'workspace'])
async def test_a_plain_name_cannot_read_as_an_escaped_one(tmp_path: Path, workspace: bool) -> None:
    # A new-user probe of issue 19: a name spelled `'bad\udcff.txt'` (quotes and a backslash) was
    # shown exactly as the escaped form of bad\xff.txt.
    root = tmp_path / 'root'
    root.mkdir()
    (root / "'bad\\udcff.txt'").write_text('plain\n')
    (root / os.fsdecode(b'bad\xff.txt')).write_text('raw\n')
    [listed] = await _calls(root, workspace, [('list_directory', {'path': '.'})])
    assert listed == f"\"'bad\\\\udcff.txt'\"  (6 bytes)\n'bad\\udcff.txt'  (4 bytes)\n{NOTE}"


@pytest.mark.parametrize('workspace', [False, True], ids=['document', 'workspace'])
async def test_a_directory_given_to_edit_file_is_named_a_directory(tmp_path: Path, workspace: bool) -> None:
    root = tmp_path / 'root'
    (root / 'd').mkdir(parents=True)
    results = await _calls(root, workspace, [('edit_file', {'path': 'd', 'old_text': 'a', 'new_text': 'b'})])
    assert results == ["RETRY: 'd' is a directory, not a file."]


async def test_only_the_call_that_escapes_a_name_carries_the_note(tmp_path: Path) -> None:
    """Issue 19: the note is the call's own. A call listing plain names beside one listing
    odd names, on threads of their own (`asyncio.gather`), many times: the plain listing never
    ends with the note (it did whenever the odd call escaped a name during it)."""
    odd, plain = tmp_path / 'odd', tmp_path / 'plain'
    odd.mkdir()
    plain.mkdir()
    for i in range(200):
        (odd / f'n{i:03}\nx').write_text('')
        (plain / f'n{i:03}').write_text('')
    odd_ts = FileSystem(root_dir=odd).get_toolset()
    plain_ts = FileSystem(root_dir=plain).get_toolset()
    expected = '\n'.join(f'n{i:03}' for i in range(200))
    for _ in range(20):
        odd_result, plain_result = await asyncio.gather(
            odd_ts.find_files(pattern='*'), plain_ts.find_files(pattern='*')
        )
        assert odd_result.endswith(NOTE)
        assert plain_result == expected


def _odd_tree(root: Path) -> bytes:
    """`bad\\xff.txt` and `dir\\xfe/in.txt` (names that are not UTF-8) under `root`; its bytes."""
    raw = os.fsencode(root)
    os.makedirs(raw + b'/dir\xfe')
    for name in [b'/bad\xff.txt', b'/dir\xfe/in.txt']:
        with open(raw + name, 'wb') as f:
            f.write(b'alpha\n')
    return raw


@pytest.mark.parametrize('workspace', [False, True], ids=['document', 'workspace'])
async def test_a_name_that_is_not_utf8_is_read_back_by_the_name_shown(tmp_path: Path, workspace: bool) -> None:
    """Issue 19: a listing shows such a name as `repr()` shows its `surrogateescape` text, and
    that name (JSON `"bad\\udcff.txt"` is the `str` `'bad\\udcff.txt'`) reads, edits and writes
    the file it names (before: `bad\\ufffd.txt` shown, then `File not found`)."""
    root = tmp_path / 'root'
    root.mkdir()
    raw = _odd_tree(root)
    bad, odd_dir = "'bad\\udcff.txt'", "'dir\\udcfe'"
    results = await _calls(
        root,
        workspace,
        [
            ('list_directory', {'path': '.'}),
            ('find_files', {'pattern': '**/*'}),
            ('search_files', {'pattern': 'alpha'}),
            ('list_files', {}),
            ('grep', {'pattern': 'alpha'}),
            ('read_file', {'path': 'bad\udcff.txt'}),
            ('edit_file', {'path': 'bad\udcff.txt', 'old_text': 'alpha', 'new_text': 'beta'}),
            ('write_file', {'path': 'dir\udcfe/new.txt', 'content': 'x\n'}),
            ('list_directory', {'path': 'dir\udcfe'}),
            ('read_file', {'path': 'dir\udcfe/missing.txt'}),
            ('edit_file', {'path': 'bad\udcff.txt', 'old_text': 'gamma', 'new_text': 'delta'}),
        ],
    )
    assert results[:5] == [
        f'{bad}  (6 bytes)\n{odd_dir}/\n{NOTE}',
        f"{bad}\n{odd_dir}/\n'dir\\udcfe/in.txt'\n{NOTE}",
        f"{bad}:1:alpha\n'dir\\udcfe/in.txt':1:alpha\n{NOTE}",
        f"{bad}\n'dir\\udcfe/in.txt'\n{NOTE}",
        f"{bad}:1:alpha\n'dir\\udcfe/in.txt':1:alpha\n{NOTE}",
    ]
    assert results[5].startswith(f'[{bad} | 1 lines') and results[5].endswith('     1\talpha\n')
    assert results[6].startswith(f'Edited {bad}.')
    assert results[7].startswith("Wrote 2 chars (1 lines) to 'dir\\udcfe/new.txt'.")
    assert results[8] == f"'dir\\udcfe/in.txt'  (6 bytes)\n'dir\\udcfe/new.txt'  (2 bytes)\n{NOTE}"
    # 0.36.0's `File not found: p` (a retry); 0.62.0's `Path not found: p` (a result).
    assert results[9] in (
        "RETRY: File not found: 'dir\\udcfe/missing.txt'",
        "Path not found: 'dir\\udcfe/missing.txt'",
    )
    assert results[10].startswith(f'RETRY: old_text not found in {bad}.')
    # No result holds the core's own spelling of a raw byte.
    assert not any('\x00' in r for r in results)
    # The bytes on disk: the named files changed, no look-alike created.
    with open(raw + b'/bad\xff.txt', 'rb') as f:
        assert f.read() == b'beta\n'
    with open(raw + b'/dir\xfe/new.txt', 'rb') as f:
        assert f.read() == b'x\n'
    assert sorted(os.listdir(raw)) == [b'bad\xff.txt', b'dir\xfe']


async def test_a_name_that_is_not_utf8_cannot_reach_outside(tmp_path: Path) -> None:
    """Issue 19: the surrogates a path may hold stand for bytes 0x80..0xFF only, never `.`, `/`
    or a NUL, so no component is smuggled in; a NUL the model writes is refused, never read as
    part of a raw byte; containment applies to the bytes named."""
    root = tmp_path / 'root'
    root.mkdir()
    raw = _odd_tree(root)
    (tmp_path / 'secret.txt').write_text('secret\n')
    os.symlink(os.fsencode(tmp_path / 'secret.txt'), raw + b'/link\xff')
    results = await _calls(
        root,
        False,
        [
            ('read_file', {'path': '\udc2e\udc2e/secret.txt'}),  # '.' is not a raw byte
            ('read_file', {'path': '\udcae\udcae/secret.txt'}),  # 0xAE: no dot either
            ('read_file', {'path': 'bad\x00\xff.txt'}),  # a NUL and U+00FF, not the byte 0xFF
            ('read_file', {'path': 'link\udcff'}),
            ('read_file', {'path': 'dir\udcfe/../../secret.txt'}),
            ('write_file', {'path': 'link\udcff', 'content': 'x'}),
        ],
    )
    assert results[0].startswith('RETRY: ') and 'surrogates not allowed' in results[0]
    assert results[1] == "RETRY: File not found: '\\udcae\\udcae/secret.txt'"
    assert results[2] == 'RETRY: embedded null byte'
    assert results[3] == "RETRY: Path 'link\\udcff' resolves outside the root directory."
    assert results[4] == "RETRY: Path 'dir\\udcfe/../../secret.txt' resolves outside the root directory."
    assert results[5] == "RETRY: Path 'link\\udcff' resolves outside the root directory."
    assert (tmp_path / 'secret.txt').read_text() == 'secret\n'
