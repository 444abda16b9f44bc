"""Reads, hashes and walks under the workspace contract (pydantic-ai-harness 0.62.0's results).

These call the core with `contract='workspace'` and the `_content` wrapper directly; the agent-level
wiring (which contract a run gets) is tested with it. Expected strings are 0.62.0's, checked
against the reference itself in tests/compat/test_fs062_read_compat.py.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from pydantic_ai.messages import BinaryContent
from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.filesystem._content import guessed_type

from tests.workspace_core import core, read

PNG = b'\x89PNG\r\n\x1a\n' + bytes(61)
TRAILER = '[{} hidden entries omitted; name a hidden path explicitly to include it]'


def short_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def test_image_is_returned_as_binary_content(tmp_path: Path) -> None:
    (tmp_path / 'pic.png').write_bytes(PNG)
    result = read(core(tmp_path), 'pic.png')
    assert result == [
        f'[pic.png | image/png | 69 bytes | hash:{short_hash(PNG)}]\n',
        BinaryContent(data=PNG, media_type='image/png'),
    ]


@pytest.mark.parametrize(
    ('data', 'media_type'),
    [
        (b'\xff\xd8\xff\xe0' + bytes(20), 'image/jpeg'),
        (b'GIF87a' + bytes(4), 'image/gif'),
        (b'RIFF\x00\x00\x00\x00WEBPVP8 ', 'image/webp'),
        (b'%PDF-1.4\nhello\n', 'application/pdf'),
    ],
)
def test_media_is_sniffed_by_its_bytes_not_its_name(tmp_path: Path, data: bytes, media_type: str) -> None:
    (tmp_path / 'notes.txt').write_bytes(data)
    header, content = read(core(tmp_path), 'notes.txt')  # type: ignore[misc]
    assert header == f'[notes.txt | {media_type} | {len(data)} bytes | hash:{short_hash(data)}]\n'
    assert content == BinaryContent(data=data, media_type=media_type)


def test_image_named_like_one_but_not_one_is_described_in_hex(tmp_path: Path) -> None:
    data = b'\x00not a png'
    (tmp_path / 'fake.png').write_bytes(data)
    assert read(core(tmp_path), 'fake.png') == (
        f'[fake.png | image/png | 10 bytes | hash:{short_hash(data)}]\n'
        'Binary file; the first bytes in hex:\n'
        '00000000  00 6e 6f 74 20 61 20 70 6e 67\n'
    )


def test_media_over_five_megabytes_is_described(tmp_path: Path) -> None:
    data = PNG + bytes(5_000_001 - len(PNG))
    (tmp_path / 'big.png').write_bytes(data)
    assert read(core(tmp_path), 'big.png') == (
        f'[big.png | image/png | 5000001 bytes | hash:{short_hash(data)}]\n'
        'Too large to view: the limit is 5000000 bytes.\n'
    )
    (tmp_path / 'edge.png').write_bytes(data[:5_000_000])
    assert read(core(tmp_path), 'edge.png')[1].data == data[:5_000_000]  # type: ignore[index]


def test_other_binary_shows_a_hex_preview_of_64_bytes(tmp_path: Path) -> None:
    data = bytes(range(100))
    (tmp_path / 'data.bin').write_bytes(data)
    assert read(core(tmp_path), 'data.bin') == (
        f'[data.bin | application/octet-stream | 100 bytes | hash:{short_hash(data)}]\n'
        'Binary file; the first bytes in hex:\n'
        '00000000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n'
        '00000010  10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f\n'
        '00000020  20 21 22 23 24 25 26 27 28 29 2a 2b 2c 2d 2e 2f\n'
        '00000030  30 31 32 33 34 35 36 37 38 39 3a 3b 3c 3d 3e 3f\n'
        '... (36 more bytes)\n'
    )
    (tmp_path / 'a.zip').write_bytes(b'PK\x00\x03')
    assert read(core(tmp_path), 'a.zip').startswith('[a.zip | application/zip | 4 bytes | hash:')  # type: ignore[union-attr]


def test_binary_read_reports_the_whole_files_hash_for_the_event(tmp_path: Path) -> None:
    data = PNG + b'tail'
    (tmp_path / 'pic.png').write_bytes(data)
    outcome = core(tmp_path).read_file('pic.png', 0, None, cancel=_core.CancelToken())
    assert (outcome.content_hash, outcome.emit, outcome.path) == (short_hash(data), True, 'pic.png')
    assert (outcome.media_type, outcome.media_data) == ('image/png', data)


def test_lines_end_at_newline_only_and_hash_the_raw_bytes(tmp_path: Path) -> None:
    cr, bad = b'a\rb\rc', b'bad \xff\nok\n'
    (tmp_path / 'cr.txt').write_bytes(cr)
    (tmp_path / 'bad.txt').write_bytes(bad)
    fs = core(tmp_path)
    assert read(fs, 'cr.txt') == f'[cr.txt | 1 lines | hash:{short_hash(cr)}]\n     1\ta\rb\rc\n'
    # 0.62.0's result, and a note saying the file is not UTF-8 (issue 9, listed in the README).
    assert read(fs, 'bad.txt') == (
        f'[bad.txt | 2 lines | hash:{short_hash(bad)}]\n     1\tbad \ufffd\n     2\tok\n'
        '[Not valid UTF-8: 1 byte sequence shown as \ufffd, the first (0xff) on line 1; '
        'edit_file keeps such bytes as they are.]\n'
    )
    # The hash of the raw bytes, not of the U+FFFD decode (0.36.0's).
    assert short_hash(bad) != short_hash('bad \ufffd\nok\n'.encode())
    info = fs.file_info('bad.txt', cancel=_core.CancelToken()).text
    assert info.endswith(f'binary: False\nlines: 2\nhash: {short_hash(bad)}')
    assert fs.file_info('cr.txt', cancel=_core.CancelToken()).text.endswith('lines: 1\nhash: d6979e20541e')


@pytest.mark.parametrize(
    ('offset', 'limit', 'message'),
    [
        (-1, None, 'offset must be non-negative.'),
        (0, 0, 'limit must be at least 1.'),
        (0, -2, 'limit must be at least 1.'),
    ],
)
def test_window_arguments_are_checked_as_062(tmp_path: Path, offset: int, limit: int | None, message: str) -> None:
    (tmp_path / 'a.txt').write_text('x\n')
    with pytest.raises(_core.InvalidArgumentError) as raised:
        core(tmp_path).read_file('a.txt', offset, limit, cancel=_core.CancelToken())
    assert str(raised.value) == message


def test_document_contract_is_unchanged(tmp_path: Path) -> None:
    (tmp_path / 'cr.txt').write_bytes(b'a\rb\rc')
    (tmp_path / 'pic.png').write_bytes(PNG)
    fs = core(tmp_path, 'document')
    assert read(fs, 'cr.txt') == '[cr.txt | 3 lines | hash:d6979e20541e]\n     1\ta\r     2\tb\r     3\tc\n'
    assert read(fs, 'pic.png') == '[Binary file: 69 bytes. Use a binary-aware tool to inspect.]'
    assert guessed_type(fs, 'pic.png') is None


def test_write_counts_newline_lines(tmp_path: Path) -> None:
    fs = core(tmp_path)
    plan = fs.plan_write('w.txt', 'a\rb\n', None, True, cancel=_core.CancelToken())
    assert fs.commit(plan, cancel=_core.CancelToken()).text.startswith('Wrote 4 chars (1 lines) to w.txt.')


def hidden_tree(root: Path) -> None:
    for name, text in {
        '.env': 'SECRET\n',
        '.hidden/inner.txt': 'TODO hidden\n',
        'src/main.py': 'TODO main\n',
        'src/.cache.py': 'TODO cached\n',
        'seps.txt': 'one\u2028two\nTODO three\n',
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_walks_count_hidden_entries(tmp_path: Path) -> None:
    hidden_tree(tmp_path)
    fs = core(tmp_path)
    token = _core.CancelToken()
    assert fs.list_directory('.', cancel=token).text == f'seps.txt  (21 bytes)\nsrc/\n{TRAILER.format(2)}'
    assert fs.list_directory('.hidden', cancel=token).text == '.hidden/inner.txt  (12 bytes)'
    assert fs.find_files('*', 'src', cancel=token).text == f'src/main.py\n{TRAILER.format(1)}'
    assert fs.find_files('.*', '.', cancel=token).text == '.env\n.hidden/'
    # search_files leaves hidden entries out without the trailer, as 0.62.0's rg/grep path does.
    assert fs.search_files('TODO', '.', None, cancel=token).text == 'seps.txt:2:TODO three\nsrc/main.py:1:TODO main'
    assert fs.search_files('TODO', '.hidden', None, cancel=token).text == '.hidden/inner.txt:1:TODO hidden'
    assert fs.search_files('NOPE', 'src', None, cancel=token).text == 'No matches found.'


def test_search_cap_text(tmp_path: Path) -> None:
    hidden_tree(tmp_path)
    text = core(tmp_path, max_search_results=1).search_files('TODO', 'src', None, cancel=_core.CancelToken()).text
    assert text == 'src/main.py:1:TODO main'  # one match: not cut
    text = core(tmp_path, max_search_results=1).search_files('TODO', '.', None, cancel=_core.CancelToken()).text
    assert text == 'seps.txt:2:TODO three\n[... truncated at 1 lines or search output byte limit]'


def test_links_leading_outside_are_listed_not_read(tmp_path: Path) -> None:
    root, outside = tmp_path / 'root', tmp_path / 'outside'
    root.mkdir()
    outside.mkdir()
    (outside / 'secret.txt').write_text('TODO outside\n')
    (root / 'out.txt').symlink_to(outside / 'secret.txt')
    (root / 'in.txt').write_text('TODO in\n')
    fs = core(root)
    token = _core.CancelToken()
    assert fs.list_directory('.', cancel=token).text == 'in.txt  (8 bytes)\nout.txt  (13 bytes)'
    assert fs.find_files('*', '.', cancel=token).text == 'in.txt\nout.txt'
    assert fs.search_files('TODO', '.', None, cancel=token).text == 'in.txt:1:TODO in'
    assert core(root, 'document').list_directory('.', cancel=token).text == 'in.txt  (8 bytes)'
    (root / 'alias.txt').symlink_to('in.txt')
    assert fs.search_files('TODO', 'alias.txt', None, cancel=token).text == 'alias.txt:1:TODO in'
    # The FileReadEvent names the file as it was reached (0.62.0), not the link's target.
    assert fs.read_file('alias.txt', 0, None, cancel=token).path == 'alias.txt'
    assert core(root, 'document').read_file('alias.txt', 0, None, cancel=token).path == 'in.txt'
    assert fs.search_files('TODO', '.', None, cancel=token).text == 'in.txt:1:TODO in'  # walked links: not read
    assert fs.grep('TODO', './alias.txt', None, None, False, False, 0, cancel=token).text == 'alias.txt:1:TODO in'
