"""`FileSystem(show_changes=N)` (issue 22, section 3): write and edit results show what changed.

`edit_file`, and `write_file` over an existing file, end with the changed lines and N lines
around them, numbered as `read_file` numbers them, one `[lines A-B, changed C-D]` region per
change (close ones merged), cut after 2,000 characters with a continuation hint. Off (the
default) the results are the documented ones; a new file shows nothing more. Every test runs
under the document's contract, 0.62.0's on a `LocalWorkspace`, and on an in-memory workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai_harness_rs.filesystem import FileSystem

from tests.filesystem.conftest import REFERENCE
from tests.filesystem.on_file import WHERE, on_file

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='show_changes is ours (issue 22)')]

TWENTY = ''.join(f'l{i}\n' for i in range(1, 21)).encode()


async def edit(where: str, tmp_path: Path, data: bytes, show: int | None = 2, **args: Any) -> str:
    results, _ = await on_file(where, tmp_path, data, [('edit_file', args)], show_changes=show)
    return results[0]


@pytest.mark.parametrize('where', WHERE)
async def test_an_edit_in_the_middle(where: str, tmp_path: Path) -> None:
    assert await edit(where, tmp_path, TWENTY, old_text='l10\n', new_text='L10\nL10b\n') == (
        'Edited f.txt.\n[lines 8-13, changed 10-11]\n     8\tl8\n     9\tl9\n    10\tL10\n    11\tL10b\n'
        '    12\tl11\n    13\tl12'
    )


@pytest.mark.parametrize('where', WHERE)
async def test_an_edit_at_the_start_and_at_the_end(where: str, tmp_path: Path) -> None:
    assert await edit(where, tmp_path, TWENTY, old_text='l1\n', new_text='one\n') == (
        'Edited f.txt.\n[lines 1-3, changed 1]\n     1\tone\n     2\tl2\n     3\tl3'
    )
    # A removal marks no surviving line: a marker stands where the lines were.
    assert await edit(where, tmp_path, TWENTY, old_text='l20\n', new_text='') == (
        'Edited f.txt.\n[lines 18-19, removed at the end]\n    18\tl18\n    19\tl19\n     -\t(lines removed here)'
    )
    assert await edit(where, tmp_path, TWENTY, old_text='l20', new_text='end') == (
        'Edited f.txt.\n[lines 18-20, changed 20]\n    18\tl18\n    19\tl19\n    20\tend'
    )


@pytest.mark.parametrize('where', WHERE)
async def test_a_removal_marks_where_lines_were_not_the_next_line(where: str, tmp_path: Path) -> None:
    assert await edit(where, tmp_path, TWENTY, old_text='l10\nl11\n', new_text='') == (
        'Edited f.txt.\n[lines 8-11, removed before line 10]\n     8\tl8\n     9\tl9\n     -\t(lines removed here)\n'
        '    10\tl12\n    11\tl13'
    )


@pytest.mark.parametrize('where', WHERE)
async def test_lines_old_and_new_text_share_are_not_marked(where: str, tmp_path: Path) -> None:
    assert await edit(where, tmp_path, TWENTY, old_text='l9\nl10\nl11\n', new_text='l9\nTEN\nl11\n', show=1) == (
        'Edited f.txt.\n[lines 9-11, changed 10]\n     9\tl9\n    10\tTEN\n    11\tl11'
    )
    # A one-line file: the header reads as a sentence.
    assert await edit(where, tmp_path, b'x = 1\n', old_text='1', new_text='2') == (
        'Edited f.txt.\n[line 1, changed]\n     1\tx = 2'
    )


@pytest.mark.parametrize('where', WHERE)
async def test_replace_all_shows_each_region_merging_close_ones(where: str, tmp_path: Path) -> None:
    data = b''.join(b'x\n' if i in (3, 5, 15) else f'l{i}\n'.encode() for i in range(1, 21))
    results, _ = await on_file(
        where,
        tmp_path,
        data,
        [('edit_file', {'old_text': 'x\n', 'new_text': 'y\n', 'replace_all': True})],
        show_changes=1,
        replace_all=True,
    )
    assert results == [
        'Edited f.txt.\n[lines 2-6, changed 3, 5]\n     2\tl2\n     3\ty\n     4\tl4\n     5\ty\n     6\tl6\n'
        '[lines 14-16, changed 15]\n    14\tl14\n    15\ty\n    16\tl16'
    ]


@pytest.mark.parametrize('where', WHERE)
async def test_a_write_over_a_file_and_a_new_file(where: str, tmp_path: Path) -> None:
    new = TWENTY.replace(b'l5\n', b'five\n').decode()
    results, after = await on_file(where, tmp_path, TWENTY, [('write_file', {'content': new})], show_changes=1)
    assert results == [
        f'Wrote {len(new)} chars (20 lines) to f.txt.\n[lines 4-6, changed 5]\n     4\tl4\n     5\tfive\n     6\tl6'
    ]
    assert after == new.encode()
    (tmp_path / 'new').mkdir()
    results, _ = await on_file(where, tmp_path / 'new', None, [('write_file', {'content': 'a\nb\n'})], show_changes=1)
    assert results == ['Wrote 4 chars (2 lines) to f.txt.']


@pytest.mark.parametrize('where', WHERE)
async def test_a_region_past_the_cap(where: str, tmp_path: Path) -> None:
    wide = ''.join(f'{i:03d}' + 'w' * 296 + '\n' for i in range(1, 11)).encode()
    result = await edit(where, tmp_path, wide, show=0, old_text='001', new_text='one')
    assert result == 'Edited f.txt.'
    result = await edit(where, tmp_path, wide, show=9, old_text='001', new_text='one')
    lines = [f'{n:>6}\t' + (f'{n:03d}' if n > 1 else 'one') + 'w' * 296 for n in range(1, 7)]
    assert result == (
        'Edited f.txt.\n[lines 1-10, changed 1]\n'
        + '\n'.join(lines)
        + '\n... (cut at 2,000 characters. Use read_file with offset=6 to continue reading.)'
    )


@pytest.mark.parametrize('where', WHERE)
async def test_a_long_line_is_clipped_as_read_file_clips_it(where: str, tmp_path: Path) -> None:
    data = b'short\n' + b'z' * 50 + b'\n'
    results, _ = await on_file(
        where,
        tmp_path,
        data,
        [('edit_file', {'old_text': 'short', 'new_text': 'S'})],
        show_changes=1,
        max_line_chars=10,
    )
    assert results == [
        'Edited f.txt.\n[lines 1-2, changed 1]\n     1\tS\n     2\tzzzzzzzzzz [line 2 clipped: chars 1-10 of 50 '
        "shown; to read on: read_file('f.txt', offset=1, limit=1, column=10)]"
    ]


@pytest.mark.parametrize('where', WHERE)
async def test_a_long_context_line_is_clipped_not_the_changed_line_dropped(where: str, tmp_path: Path) -> None:
    data = b'short\n' + b'z' * 5000 + b'\nend\n'
    clipped = (
        '     2\t'
        + 'z' * 200
        + " [line 2 clipped: chars 1-200 of 5,000 shown; to read on: read_file('f.txt', offset=1, limit=1, column=200)]"
    )
    assert await edit(where, tmp_path, data, old_text='end', new_text='END') == (
        f'Edited f.txt.\n[lines 1-3, changed 3]\n     1\tshort\n{clipped}\n     3\tEND'
    )
    # A changed line longer than the cap is clipped to fill it, with its notice; the context
    # around it gives way.
    result = await edit(where, tmp_path, data, show=1, old_text='z' * 5000, new_text='y' * 5000)
    assert result == (
        'Edited f.txt.\n[line 2, changed]\n     2\t'
        + 'y' * 1882
        + " [line 2 clipped: chars 1-1,882 of 5,000 shown; to read on: read_file('f.txt', offset=1, limit=1, "
        'column=1882)]'
    )


@pytest.mark.parametrize('where', WHERE)
async def test_many_context_lines_never_push_out_the_changed_line(where: str, tmp_path: Path) -> None:
    data = ''.join(f'{i:03d}' + 'w' * 96 + '\n' for i in range(1, 61)).encode()
    result = await edit(where, tmp_path, data, show=40, old_text='050', new_text='fifty')
    # 40 lines before it would fill the cap: as much context as fits, the same on both sides.
    header, *lines = result.split('\n')[1:]
    assert header == '[lines 42-58, changed 50]'
    assert lines[8] == '    50\tfifty' + 'w' * 96
    assert [int(line[:6]) for line in lines] == list(range(42, 59))


@pytest.mark.parametrize('where', WHERE)
async def test_a_write_with_two_changes_apart_shows_two_regions(where: str, tmp_path: Path) -> None:
    forty = ''.join(f'l{i}\n' for i in range(1, 41))
    new = forty.replace('l5\n', 'five\n').replace('l30\n', 'thirty\nmore\n').replace('l33\n', '')
    results, after = await on_file(where, tmp_path, forty.encode(), [('write_file', {'content': new})], show_changes=1)
    assert results == [
        f'Wrote {len(new)} chars (40 lines) to f.txt.\n[lines 4-6, changed 5]\n     4\tl4\n     5\tfive\n     6\tl6\n'
        '[lines 29-34, changed 30-31, removed before line 34]\n    29\tl29\n    30\tthirty\n    31\tmore\n    32\tl31\n'
        '    33\tl32\n     -\t(lines removed here)\n    34\tl34'
    ]
    assert after == new.encode()


@pytest.mark.parametrize('where', WHERE)
async def test_crlf_lines_are_numbered_as_read(where: str, tmp_path: Path) -> None:
    assert await edit(where, tmp_path, b'a\r\nb\r\nc\r\nd\r\n', show=1, old_text='c\n', new_text='C\nC2\n') == (
        'Edited f.txt.\n[lines 2-5, changed 3-4]\n     2\tb\n     3\tC\n     4\tC2\n     5\td'
    )


@pytest.mark.parametrize('where', WHERE)
async def test_with_match_tiers_the_note_comes_first(where: str, tmp_path: Path) -> None:
    results, _ = await on_file(
        where,
        tmp_path,
        b'a\nb  \nc\n',
        [('edit_file', {'old_text': 'b\nc', 'new_text': 'B\nC'})],
        show_changes=1,
        match='tolerant',
    )
    assert results == [
        'Edited f.txt.\n[matched ignoring trailing whitespace on lines 2-3]\n[lines 1-3, changed 2-3]\n     1\ta\n'
        '     2\tB\n     3\tC'
    ]


def test_bad_show_changes_is_refused() -> None:
    with pytest.raises(ValueError, match='show_changes must be a non-negative integer or None, got -1'):
        FileSystem(show_changes=-1)
