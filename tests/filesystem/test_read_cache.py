"""read_file and file_info on pseudo-files (bounded, never an endless read) and through the scan cache.

The cache (one per FileSystem) remembers a file version's hash, line count and line-offset index,
keyed by device, inode, size, mtime and ctime: a re-read gives exactly what a first read gives,
and any change to the file, even with its size and mtime restored, is read afresh.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests.filesystem.conftest import REFERENCE
from tests.scripted import RETRY, run_tools

pytestmark = pytest.mark.anyio

PAGEMAP_REFUSED = (
    f"{RETRY}'proc/self/pagemap' is a pseudo-file (its size is not known before reading) that holds more than "
    '8,388,608 bytes; it was not read to the end. Read part of it with a shell command instead.'
)


def h(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def settle() -> None:
    """Let the kernel's coarse clock pass the file's last change: only then is a version cached
    (a write in the same clock tick could leave every key field equal)."""
    time.sleep(0.05)


@pytest.mark.skipif(REFERENCE, reason='0.36.0 reads /proc/self/pagemap forever')
@pytest.mark.skipif(not Path('/proc/self/pagemap').exists(), reason='needs Linux procfs')
async def test_pseudo_files_are_read_with_a_bound(fs: ModuleType) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir='/')],
        [
            ('read_file', {'path': 'proc/self/pagemap'}),
            ('file_info', {'path': 'proc/self/pagemap'}),
            ('read_file', {'path': 'proc/self/status', 'limit': 1}),
        ],
    )
    assert t.results[:2] == [PAGEMAP_REFUSED, PAGEMAP_REFUSED]
    # A pseudo-file that ends within the bound reads as any file (its st_size is 0).
    status = t.results[2]
    assert status.startswith('[proc/self/status | ') and '\n     1\tName:\t' in status, status


async def test_an_empty_file_still_reads_as_empty(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'e.txt').write_bytes(b'')
    t = await run_tools([fs.FileSystem(root_dir=tmp_path)], [('read_file', {'path': 'e.txt'})])
    assert t.results == [f'[e.txt | 0 lines | hash:{h(b"")}]\n(empty file)\n']


async def test_a_changed_file_misses_the_cache_even_with_size_and_mtime_restored(
    fs: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / 'f.txt'
    old = b''.join(b'line %05d\n' % i for i in range(3000))
    path.write_bytes(old)
    settle()
    capability = fs.FileSystem(root_dir=tmp_path)
    window = {'path': 'f.txt', 'offset': 2000, 'limit': 2}
    first = await run_tools(
        [capability], [('read_file', window), ('read_file', window), ('file_info', {'path': 'f.txt'})]
    )
    expected_old = f'[f.txt | 3000 lines | hash:{h(old)}]\n  2001\tline 02000\n  2002\tline 02001\n'
    expected_old += '... (998 more lines. Use offset=2002 to continue reading.)\n'
    assert first.results[:2] == [expected_old, expected_old]
    assert first.results[2].endswith(f'lines: 3000\nhash: {h(old)}')

    # Same size, and mtime set back: only the ctime tells the versions apart.
    st = path.stat()
    new = old.replace(b'line 02000', b'LINE 02000')
    with open(path, 'r+b') as f:
        f.write(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    second = await run_tools([capability], [('read_file', window), ('file_info', {'path': 'f.txt'})])
    expected_new = f'[f.txt | 3000 lines | hash:{h(new)}]\n  2001\tLINE 02000\n  2002\tline 02001\n'
    expected_new += '... (998 more lines. Use offset=2002 to continue reading.)\n'
    assert second.results[0] == expected_new
    assert second.results[1].endswith(f'lines: 3000\nhash: {h(new)}')
    assert [e.content_hash for e in second.of(fs.FileReadEvent)] == [h(new)]


@pytest.mark.parametrize('newline', ['\n', '\r\n', '\r'])
async def test_rereads_at_any_offset_match_a_first_read(fs: ModuleType, tmp_path: Path, newline: str) -> None:
    # Big enough for several checkpoints of the line-offset index (one per 512 KiB chunk at most).
    text = ''.join(
        f'row {i} caf\u00e9 \u2028 x{newline}' if i % 97 == 0 else f'row {i}{newline}' for i in range(300_000)
    )
    (tmp_path / 'big.txt').write_text(text, newline='')
    settle()
    windows = [{'path': 'big.txt', 'offset': o, 'limit': 3} for o in (0, 1, 4095, 150_001, 299_998)]
    warm = fs.FileSystem(root_dir=tmp_path)
    await run_tools([warm], [('file_info', {'path': 'big.txt'})])
    again = await run_tools([warm], [('read_file', w) for w in windows])
    fresh = [(await run_tools([fs.FileSystem(root_dir=tmp_path)], [('read_file', w)])).results[0] for w in windows]
    assert again.results == fresh


@pytest.mark.skipif(REFERENCE, reason='0.36.0 shows UTF-16 as binary and says nothing of bytes that are not UTF-8')
async def test_a_cached_reread_keeps_the_encoding_notes(fs: ModuleType, tmp_path: Path) -> None:
    # The cache answers the second read from its index: it must still decode UTF-16 and still
    # say which bytes are not UTF-8, exactly as the first read did, in full and windowed.
    (tmp_path / 'u16.txt').write_bytes('\ufeffalpha\nbeta\ngamma\n'.encode('utf-16-le'))
    (tmp_path / 'latin.txt').write_bytes(b'one\ncaf\xe9\nthree\n')
    settle()
    calls = [
        ('read_file', {'path': name, **window})
        for name in ('u16.txt', 'latin.txt')
        for window in ({}, {'offset': 1, 'limit': 1})
    ]
    t = await run_tools([fs.FileSystem(root_dir=tmp_path)], calls + calls)
    first, again = t.results[: len(calls)], t.results[len(calls) :]
    assert again == first
    assert first[0].endswith('[Decoded from UTF-16LE with a BOM; edit_file writes it back as UTF-16LE.]\n'), first[0]
    assert '     2\tbeta\n' in first[1] and '     1\talpha' not in first[1], first[1]
    assert first[2].endswith(
        '[Not valid UTF-8: 1 byte sequence shown as \ufffd, the first (0xe9) on line 2; '
        'edit_file keeps such bytes as they are.]\n'
    ), first[2]
