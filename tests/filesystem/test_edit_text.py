"""Edits that land exactly (issue 9, section 2): line endings, encodings, misses that teach.

Each case runs on the host (`root_dir`, 0.36.0's contract) and on the in-memory workspace
backend (0.62.0's contract, `src/fs/remote`), by direct toolset calls and through an Agent with a
scripted model; every one asserts the exact tool result and the bytes left on disk.

- An LF `old_text` matches a CRLF file; lines `new_text` adds take the file's ending.
- A byte that is not UTF-8 is kept; only the matched text changes. `read_file` says the file is
  not UTF-8; an `old_text` holding U+FFFD is told which byte on which line it cannot match.
- A UTF-8 BOM is kept and invisible to matching.
- UTF-16 reads as text with a note and is edited in UTF-16.
- A miss that matches once whitespace is ignored says where and what differs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs.filesystem import FileSystem

from tests.filesystem.conftest import REFERENCE
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import RETRY, run_tools

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='issue 9: beyond the references')]

Tool = Callable[..., Awaitable[str]]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


class Env:
    """One FileSystem over `files`: the host (`root_dir`) or the memory backend, direct or by an Agent."""

    def __init__(self, where: str, via: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.where, self.via, self.root = where, via, tmp_path / 'root'
        self.root.mkdir()
        self.backend = MemoryWorkspace()
        monkeypatch.chdir(tmp_path)

    def put(self, name: str, data: bytes) -> None:
        if self.where == 'host':
            (self.root / name).write_bytes(data)
        else:
            self.backend.files.clear()
            self.backend._put(f'/ws/{name}', data)

    def bytes(self, name: str) -> bytes:
        return (self.root / name).read_bytes() if self.where == 'host' else self.backend.files[f'/ws/{name}']

    def hash(self, data: bytes) -> str:
        """The content hash the contract reports: of the UTF-8-lossy text on the host, unless binary."""
        if self.where == 'host' and b'\x00' not in data[:8192]:
            return sha(data.decode('utf-8', errors='replace').encode())
        return sha(data)

    async def __call__(self, name: str, **args: Any) -> str:
        capability = FileSystem(root_dir=self.root) if self.where == 'host' else FileSystem()
        if self.via == 'agent':
            kwargs = {} if self.where == 'host' else {'workspace': Workspace(self.backend)}
            return (await run_tools([capability], [(name, args)], **kwargs)).results[0]
        toolset: Any = capability.get_toolset()
        if self.where == 'memory':
            args['workspace'] = self.backend
        try:
            return await getattr(toolset, name)(**args)
        except ModelRetry as e:
            return RETRY + str(e)


@pytest.fixture(params=['host', 'memory'])
def where(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=['direct', 'agent'])
def env(request: pytest.FixtureRequest, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return Env(where, request.param, tmp_path, monkeypatch)


def edited(env: Env, name: str, data: bytes) -> str:
    return f'Edited {name}. [hash:{env.hash(data)}]'


LATIN1 = b'caf\xe9 au lait\n' + b'filler line\n' * 500 + b'target = 1\n'

# Edits that land, by id: (file, its bytes, old_text, new_text, the bytes after).
EDITS = {
    'crlf_multi_line_edit_with_an_lf_old_text': (
        'c.txt',
        b'one\r\ntwo\r\nthree\r\n',
        'one\ntwo\n',
        '1\n2\n',
        b'1\r\n2\r\nthree\r\n',
    ),
    'a_line_inserted_into_a_crlf_file_is_crlf': (
        'c.txt',
        b'one\r\ntwo\r\nthree\r\n',
        'two',
        'two\nmiddle',
        b'one\r\ntwo\r\nmiddle\r\nthree\r\n',
    ),
    'crlf_old_and_new_text_in_a_crlf_file_as_documented': (
        'c.txt',
        b'one\r\ntwo\r\n',
        'one\r\ntwo',
        '1\r\n2',
        b'1\r\n2\r\n',
    ),
    'crlf_new_text_in_an_lf_file_is_lf': ('l.txt', b'a\nb\n', 'a\n', 'x\r\ny\r\n', b'x\ny\nb\n'),
    # Issue 19: an old_text naming `\r\n` chose the endings, so new_text's `\n` is meant.
    'an_lf_new_text_for_a_crlf_old_text_is_written_as_given': (
        'crlf.txt',
        b'1st\r\n2nd\r\n3rd\r\n',
        '2nd\r\n',
        '2nd\n',
        b'1st\r\n2nd\n3rd\r\n',
    ),
    'a_latin1_byte_far_from_the_edit_is_kept': (
        'l1.txt',
        LATIN1,
        'target = 1',
        'target = 2',
        LATIN1.replace(b'target = 1', b'target = 2'),
    ),
}


@pytest.mark.parametrize(('name', 'before', 'old_text', 'new_text', 'after'), list(EDITS.values()), ids=list(EDITS))
async def test_an_edit_lands_exactly(
    env: Env, name: str, before: bytes, old_text: str, new_text: str, after: bytes
) -> None:
    env.put(name, before)
    result = await env('edit_file', path=name, old_text=old_text, new_text=new_text)
    assert env.bytes(name) == after
    assert result == edited(env, name, after)


# Edits refused with a message that teaches, the file unchanged: (file, its bytes, the edit, the message).
NO_CHANGE = (
    "The edit leaves {} exactly as it is (new_text is what it replaces once the file's line endings and "
    'byte order mark are kept). No changes were written.'
)

REFUSALS = [
    pytest.param(
        'l1.txt',
        LATIN1,
        {'old_text': 'caf\ufffd au lait', 'new_text': 'café au lait'},
        'old_text not found in l1.txt. No changes were written. old_text holds U+FFFD (\ufffd), which '
        'read_file shows in place of bytes that are not UTF-8; line 1 has such a byte (0xe9), which old_text '
        'cannot match. Choose an old_text that stops before or starts after it.',
        id='an_old_text_with_u_fffd_is_told_which_byte_and_line',
    ),
    pytest.param(
        'u16.txt',
        b'\xff\xfe' + 'ab\n'.encode('utf-16-le') + b'\x00\xd8' + 'c\n'.encode('utf-16-le'),
        {'old_text': 'c', 'new_text': 'd'},
        'u16.txt is UTF-16LE text, but byte 8 (line 2) does not decode as UTF-16LE, so edit_file cannot '
        'write the file back unchanged. No changes were written. To replace the whole file, use write_file '
        '(it writes UTF-8).',
        id='utf16_that_does_not_decode_is_refused_unchanged',
    ),
    pytest.param(
        't.py',
        b'def f():\n\tif x:\n\t\treturn 1\n\treturn 0\n',
        {'old_text': '    if x:\n        return 1', 'new_text': '    if y:'},
        'old_text not found in t.py. No changes were written. It matches lines 2-3 if whitespace is '
        'ignored: line 2 is indented with a tab in the file and 4 spaces in old_text; line 3 is indented with '
        '2 tabs in the file and 8 spaces in old_text. Copy old_text exactly as read_file shows it.',
        id='a_space_indented_old_text_in_a_tab_indented_file_is_told_where',
    ),
    # Issue 19: an edit whose result is the file's bytes as they are says so; it never says `Edited`.
    pytest.param(
        'crlf.txt',
        b'1st\r\n2nd\r\n3rd\r\n',
        {'old_text': '2nd\n', 'new_text': '2nd\r\n'},
        NO_CHANGE.format('crlf.txt'),
        id='an_edit_that_only_changes_an_ending_the_file_keeps_says_nothing_changed',
    ),
    pytest.param(
        'same.txt',
        b'alpha\nbeta\n',
        {'old_text': 'beta', 'new_text': 'beta'},
        NO_CHANGE.format('same.txt'),
        id='new_text_equal_to_old_text_says_nothing_changed',
    ),
]


@pytest.mark.parametrize(('name', 'data', 'edit', 'message'), REFUSALS)
async def test_a_refused_edit_teaches_and_changes_nothing(
    env: Env, name: str, data: bytes, edit: dict[str, str], message: str
) -> None:
    env.put(name, data)
    assert await env('edit_file', path=name, **edit) == RETRY + message
    assert env.bytes(name) == data


async def test_replacements_that_undo_each_other_say_nothing_changed(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19: a batch whose result is the file as it was is not reported as an edit."""
    env = Env(where, 'agent', tmp_path, monkeypatch)
    env.put('swap.txt', b'alpha\n')
    swap = [{'old_text': 'alpha', 'new_text': 'beta'}, {'old_text': 'beta', 'new_text': 'alpha'}]
    assert await env('edit_file', path='swap.txt', replacements=swap) == RETRY + NO_CHANGE.format('swap.txt')
    assert env.bytes('swap.txt') == b'alpha\n'


async def test_read_of_invalid_utf8_says_so(env: Env) -> None:
    data = b'ok\nbad \xff\xfe here\nend \xe2\x82\n'
    env.put('bad.txt', data)
    result = await env('read_file', path='bad.txt')
    assert result == (
        f'[bad.txt | 3 lines | hash:{env.hash(data)}]\n'
        '     1\tok\n     2\tbad \ufffd\ufffd here\n     3\tend \ufffd\n'
        '[Not valid UTF-8: 3 byte sequences shown as \ufffd, the first (0xff) on line 2; '
        'edit_file keeps such bytes as they are.]\n'
    )


async def test_a_bom_file_edited_at_line_1_keeps_its_bom(env: Env) -> None:
    env.put('bom.txt', '\ufeffhead\nbody\n'.encode())
    result = await env('edit_file', path='bom.txt', old_text='head', new_text='HEAD')
    assert env.bytes('bom.txt') == b'\xef\xbb\xbfHEAD\nbody\n'
    assert result == edited(env, 'bom.txt', b'\xef\xbb\xbfHEAD\nbody\n')
    # An old_text copied with the BOM matches too, and the BOM stays.
    result = await env('edit_file', path='bom.txt', old_text='\ufeffHEAD', new_text='top')
    assert env.bytes('bom.txt') == b'\xef\xbb\xbftop\nbody\n'
    assert result == edited(env, 'bom.txt', b'\xef\xbb\xbftop\nbody\n')


UTF16 = b'\xff\xfe' + 'héllo\r\nworld\r\n'.encode('utf-16-le')


async def test_utf16le_reads_as_text_and_edits_as_utf16(env: Env) -> None:
    env.put('u16.txt', UTF16)
    result = await env('read_file', path='u16.txt')
    assert result == (
        f'[u16.txt | 2 lines | hash:{sha(UTF16)}]\n     1\théllo\r\n     2\tworld\r\n'
        '[Decoded from UTF-16LE with a BOM; edit_file writes it back as UTF-16LE.]\n'
    )
    info = await env('file_info', path='u16.txt')
    assert info.splitlines()[3:] == ['binary: False', 'lines: 2', f'hash: {sha(UTF16)}']
    result = await env('edit_file', path='u16.txt', old_text='world\n', new_text='there\nagain\n')
    after = b'\xff\xfe' + 'héllo\r\nthere\r\nagain\r\n'.encode('utf-16-le')
    assert env.bytes('u16.txt') == after
    assert result == f'Edited u16.txt. [hash:{sha(after)}]'


async def test_trailing_spaces_are_named(where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = Env(where, 'direct', tmp_path, monkeypatch)
    env.put('t.txt', b'alpha  \nbeta\n')
    result = await env('edit_file', path='t.txt', old_text='alpha\nbeta', new_text='x')
    assert result == (
        RETRY + 'old_text not found in t.txt. No changes were written. It matches lines 1-2 if whitespace is '
        'ignored: line 1 ends with 2 spaces in the file and no whitespace in old_text. Copy old_text exactly as '
        'read_file shows it.'
    )
