"""read_file: numbered lines, header and hash, paging, windows, binary files, errors, the event."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType

import pytest

from tests.filesystem.conftest import spec_over_reference
from tests.scripted import RETRY, call, run_tools

pytestmark = pytest.mark.anyio


def h(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


async def test_numbered_lines_header_and_event(fs: ModuleType, tree: Path) -> None:
    result, t = await call([fs.FileSystem(root_dir=tree)], 'read_file', path='docs/guide.md')
    digest = h(b'line 1\nline 2\nline 3\n')
    assert result == f'[docs/guide.md | 3 lines | hash:{digest}]\n     1\tline 1\n     2\tline 2\n     3\tline 3\n'
    [event] = t.of(fs.FileReadEvent)
    assert (event.path, event.root_dir, event.content_hash) == ('docs/guide.md', str(tree.resolve()), digest)
    assert event.kind == 'file_system.file_read'


async def test_paging_with_offset_and_limit(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'f.txt').write_text(''.join(f'l{i}\n' for i in range(1, 11)))
    t = await run_tools(
        [fs.FileSystem(root_dir=tmp_path, content_hashes=False)],
        [('read_file', {'path': 'f.txt', 'limit': 3}), ('read_file', {'path': 'f.txt', 'offset': 8, 'limit': 5})],
    )
    assert t.results == [
        '[f.txt | 10 lines]\n     1\tl1\n     2\tl2\n     3\tl3\n... (7 more lines. Use offset=3 to continue reading.)\n',
        '[f.txt | 10 lines]\n     9\tl9\n    10\tl10\n',
    ]


async def test_max_read_lines_caps_the_default_window(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'f.txt').write_text('a\nb\nc\nd\n')
    result, _ = await call([fs.FileSystem(root_dir=tmp_path, max_read_lines=2, content_hashes=False)], 'read_file', path='f.txt')
    assert result == '[f.txt | 4 lines]\n     1\ta\n     2\tb\n... (2 more lines. Use offset=2 to continue reading.)\n'


@spec_over_reference
async def test_max_read_lines_caps_an_explicit_limit(fs: ModuleType, tmp_path: Path) -> None:
    # The document: max_read_lines is the cap for a single read_file. 0.36.0 lets limit=5 through.
    (tmp_path / 'f.txt').write_text('a\nb\nc\nd\ne\n')
    result, _ = await call(
        [fs.FileSystem(root_dir=tmp_path, max_read_lines=3, content_hashes=False)], 'read_file', path='f.txt', limit=5
    )
    assert result == '[f.txt | 5 lines]\n     1\ta\n     2\tb\n     3\tc\n... (2 more lines. Use offset=3 to continue reading.)\n'


@spec_over_reference
@pytest.mark.parametrize('args', [{'offset': -1}, {'limit': -1}])
async def test_negative_offset_or_limit_is_a_retry(fs: ModuleType, tmp_path: Path, args: dict[str, int]) -> None:
    (tmp_path / 'f.txt').write_text('a\nb\n')
    result, t = await call([fs.FileSystem(root_dir=tmp_path)], 'read_file', path='f.txt', **args)
    assert result.startswith(RETRY) and ('offset' in result or 'limit' in result)
    assert t.events == []


async def test_max_read_chars_window_ends_on_a_whole_line(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'f.txt').write_text(''.join(f'{i:03d}' + 'x' * 40 + '\n' for i in range(100)))
    cap = 500
    result, _ = await call(
        [fs.FileSystem(root_dir=tmp_path, max_read_chars=cap, content_hashes=False)], 'read_file', path='f.txt'
    )
    header = '[f.txt | 100 lines]\n'
    line_len = len('     1\t') + 44
    shown = (cap - len(header) - 200) // line_len
    body = ''.join(f'{n + 1:>6}\t{n:03d}' + 'x' * 40 + '\n' for n in range(shown))
    hint = f'... ({100 - shown} more lines. Use offset={shown} to continue reading.)\n'
    assert result == header + body + hint
    assert len(result) <= cap


async def test_a_line_longer_than_the_window_gets_a_notice(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'f.txt').write_text('y' * 5000 + '\nshort\n')
    result, _ = await call(
        [fs.FileSystem(root_dir=tmp_path, max_read_chars=400, content_hashes=False)], 'read_file', path='f.txt'
    )
    assert result == (
        '[f.txt | 2 lines]\n'
        '... (Line 1 is 5,001 characters and does not fit the read window. '
        'Use offset=1 to skip it, or a shell byte range to inspect it.)\n'
    )


async def test_line_endings_follow_python_splitlines(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'f.txt').write_bytes('a\r\nb\rc\u2028d\x0ce'.encode())
    result, _ = await call([fs.FileSystem(root_dir=tmp_path, content_hashes=False)], 'read_file', path='f.txt')
    assert result == '[f.txt | 5 lines]\n     1\ta\r\n     2\tb\r     3\tc\u2028     4\td\x0c     5\te\n'


@spec_over_reference
async def test_invalid_utf8_is_replaced_and_hashed_as_shown(fs: ModuleType, tmp_path: Path) -> None:
    """Shown as U+FFFD, hashed as shown; and said (issue 9: 0.36.0 does not say so)."""
    (tmp_path / 'f.txt').write_bytes(b'ok\xff\n')
    result, t = await call([fs.FileSystem(root_dir=tmp_path)], 'read_file', path='f.txt')
    digest = h('ok\ufffd\n'.encode())
    assert result == (
        f'[f.txt | 1 lines | hash:{digest}]\n     1\tok\ufffd\n'
        '[Not valid UTF-8: 1 byte sequence shown as \ufffd, the first (0xff) on line 1; '
        'edit_file keeps such bytes as they are.]\n'
    )
    assert t.of(fs.FileReadEvent)[0].content_hash == digest


async def test_empty_file(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'e.txt').write_text('')
    result, _ = await call([fs.FileSystem(root_dir=tmp_path)], 'read_file', path='e.txt')
    assert result == f'[e.txt | 0 lines | hash:{h(b"")}]\n(empty file)\n'


async def test_binary_file_is_described_not_dumped(fs: ModuleType, tmp_path: Path) -> None:
    data = b'\x89PNG\x00\x01' + bytes(range(256)) * 4
    (tmp_path / 'img.png').write_bytes(data)
    result, t = await call([fs.FileSystem(root_dir=tmp_path)], 'read_file', path='img.png')
    assert result == f'[Binary file: {len(data)} bytes. Use a binary-aware tool to inspect.]'
    assert [e.content_hash for e in t.of(fs.FileReadEvent)] == [h(data)]


async def test_offset_past_end_is_a_retry_without_event(fs: ModuleType, tree: Path) -> None:
    result, t = await call([fs.FileSystem(root_dir=tree)], 'read_file', path='docs/guide.md', offset=3)
    assert result == RETRY + 'Offset 3 exceeds file length (3 lines).'
    assert t.events == []


async def test_missing_file_and_directory(fs: ModuleType, tree: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=tree)],
        [('read_file', {'path': 'nope.txt'}), ('read_file', {'path': 'docs'})],
    )
    assert t.results == [RETRY + 'File not found: nope.txt', RETRY + "'docs' is a directory, not a file."]
    assert t.events == []


async def test_long_label_is_shortened_under_max_read_chars(fs: ModuleType, tmp_path: Path) -> None:
    name = 'd' * 60
    (tmp_path / name).mkdir()
    (tmp_path / name / 'f.txt').write_text('x\n')
    result, _ = await call(
        [fs.FileSystem(root_dir=tmp_path, max_read_chars=200, content_hashes=False)], 'read_file', path=f'{name}/f.txt'
    )
    assert result.startswith('[...' + f'{name}/f.txt'[-50:] + ' | 1 lines]\n')


async def test_direct_method_emits_nothing(fs: ModuleType, tree: Path) -> None:
    toolset = fs.FileSystem(root_dir=tree).get_toolset()
    assert (await toolset.read_file('README.md', offset=2)).endswith('     3\tA demo project.\n')


async def test_numbers_too_big_for_the_core_are_retries_naming_them(fs: ModuleType, tmp_path: Path) -> None:
    # A model may send any integer; one past the core's (64-bit) range used to escape as an
    # OverflowError and end the run. The reference slices a list, so it answers as for any offset.
    (tmp_path / 'f.txt').write_text('a\nb\n')
    t = await run_tools(
        [fs.FileSystem(root_dir=tmp_path)],
        [
            ('read_file', {'path': 'f.txt', 'offset': 10**20}),
            ('read_file', {'path': 'f.txt', 'limit': 10**20}),
            ('read_file', {'path': 'f.txt', 'offset': -(10**20)}),
        ],
    )
    digest = hashlib.sha256(b'a\nb\n').hexdigest()[:12]
    body = f'[f.txt | 2 lines | hash:{digest}]\n     1\ta\n     2\tb\n'
    assert t.results == [
        f'{RETRY}Offset 100000000000000000000 exceeds file length (2 lines).',
        body,
        f'{RETRY}offset must be >= 0, got -100000000000000000000.',
    ]
