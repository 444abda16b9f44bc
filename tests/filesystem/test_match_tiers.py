"""`FileSystem(match='tolerant')` (issue 22, section 2): `edit_file`'s match tiers say what they did.

After an exact miss the core tries, in order, trailing whitespace ignored, then a uniform
indentation difference, then Unicode punctuation folded; a match there must be unique on its
tier and the result names the tier and the lines it matched. Off (`'exact'`, the default) the
results are the documented ones. Every test runs under the document's contract (`root_dir`),
0.62.0's on a `LocalWorkspace`, and on an in-memory workspace (the protocol path).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai_harness_rs.filesystem import FileSystem

from tests.filesystem.conftest import REFERENCE
from tests.filesystem.on_file import WHERE, on_file
from tests.scripted import RETRY

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='match tiers are ours (issue 22)')]


async def edits(
    where: str, tmp_path: Path, data: bytes, calls: list[dict[str, Any]], **fields: Any
) -> tuple[list[str], bytes]:
    """`edit_file` calls on `f.txt` holding `data`; the results and the bytes after."""
    return await on_file(where, tmp_path, data, [('edit_file', c) for c in calls], **fields)


async def tolerant(where: str, tmp_path: Path, data: bytes, **call: Any) -> tuple[str, bytes]:
    results, after = await edits(where, tmp_path, data, [call], match='tolerant')
    return results[0], after


@pytest.mark.parametrize('where', WHERE)
async def test_trailing_whitespace_tier(where: str, tmp_path: Path) -> None:
    result, after = await tolerant(
        where,
        tmp_path,
        b'def f():\n    x = 1  \n    return x\n',
        old_text='    x = 1\n    return x',
        new_text='    x = 2\n    return x',
    )
    assert result == 'Edited f.txt.\n[matched ignoring trailing whitespace on lines 2-3]'
    assert after == b'def f():\n    x = 2\n    return x\n'


@pytest.mark.parametrize('where', WHERE)
async def test_indentation_tier_reindents_new_text(where: str, tmp_path: Path) -> None:
    result, after = await tolerant(
        where,
        tmp_path,
        b'class A:\n    def f(self):\n        return 1\n\nx = 1\n',
        old_text='def f(self):\n    return 1\n',
        new_text='def f(self):\n    y = 2\n    return y\n',
    )
    assert result == 'Edited f.txt.\n[matched ignoring indentation on lines 2-3]'
    assert after == b'class A:\n    def f(self):\n        y = 2\n        return y\n\nx = 1\n'
    # An indented old_text anchors at the line's start; less indentation in the file is taken off.
    result, after = await tolerant(
        where,
        tmp_path,
        b'if x:\n  go()\n  stop()\n',
        old_text='    go()\n    stop()',
        new_text='    run()\n        stop()',
    )
    assert result == 'Edited f.txt.\n[matched ignoring indentation on lines 2-3]'
    assert after == b'if x:\n  run()\n      stop()\n'


@pytest.mark.parametrize('where', WHERE)
async def test_punctuation_tier(where: str, tmp_path: Path) -> None:
    data = 'print(“hello”)  # it’s — done…\n'.encode()
    result, after = await tolerant(
        where, tmp_path, data, old_text='print("hello")  # it\'s - done...', new_text='print("bye")'
    )
    assert result == 'Edited f.txt.\n[matched with Unicode punctuation folded to ASCII on line 1]'
    assert after == b'print("bye")\n'
    # Inside a line: only the matched characters are replaced.
    result, after = await tolerant(where, tmp_path, 'a = “x” + b\n'.encode(), old_text='"x"', new_text="'y'")
    assert result == 'Edited f.txt.\n[matched with Unicode punctuation folded to ASCII on line 1]'
    assert after == b"a = 'y' + b\n"


@pytest.mark.parametrize('where', WHERE)
async def test_a_tier_match_must_be_unique_on_its_tier(where: str, tmp_path: Path) -> None:
    data = b'x = 1  \ny\nx = 1 \ny\n'
    result, after = await tolerant(where, tmp_path, data, old_text='x = 1\ny', new_text='z')
    assert result == (
        RETRY + 'old_text found 2 times in f.txt (ignoring trailing whitespace). Include more surrounding '
        'context to make the match unique. No changes were written.'
    )
    assert after == data
    # An earlier tier's single match wins over a later tier's two.
    data = 'k = “1”\nk = "1"  \n'.encode()
    result, after = await tolerant(where, tmp_path, data, old_text='k = "1" \t', new_text='k = 2')
    assert result == 'Edited f.txt.\n[matched ignoring trailing whitespace on line 2]'
    assert after == 'k = “1”\nk = 2\n'.encode()


@pytest.mark.parametrize('where', WHERE)
async def test_replace_all_per_tier(where: str, tmp_path: Path) -> None:
    results, after = await edits(
        where,
        tmp_path,
        b'x = 1  \ny\nkeep\nx = 1 \ny\n',
        [{'old_text': 'x = 1\ny', 'new_text': 'z', 'replace_all': True}],
        match='tolerant',
        replace_all=True,
    )
    assert results == ['Edited f.txt.\n[matched ignoring trailing whitespace on lines 1-2, 4-5]']
    assert after == b'z\nkeep\nz\n'


@pytest.mark.parametrize('where', WHERE)
async def test_each_replacement_of_a_batch_is_named(where: str, tmp_path: Path) -> None:
    results, after = await edits(
        where,
        tmp_path,
        'a = 1\nb = “2”\n'.encode(),
        [{'replacements': [{'old_text': 'a = 1', 'new_text': 'a = 3'}, {'old_text': 'b = "2"', 'new_text': 'b = 4'}]}],
        match='tolerant',
    )
    assert results == ['Edited f.txt.\n[replacement 2 matched with Unicode punctuation folded to ASCII on line 2]']
    assert after == b'a = 3\nb = 4\n'


@pytest.mark.parametrize('where', WHERE)
async def test_crlf_file_keeps_its_endings(where: str, tmp_path: Path) -> None:
    result, after = await tolerant(
        where,
        tmp_path,
        b'def f():\r\n    x = 1  \r\n    return x\r\n',
        old_text='    x = 1\n    return x\n',
        new_text='    x = 2\n    y = 3\n    return x\n',
    )
    assert result == 'Edited f.txt.\n[matched ignoring trailing whitespace on lines 2-3]'
    assert after == b'def f():\r\n    x = 2\r\n    y = 3\r\n    return x\r\n'


@pytest.mark.parametrize('where', WHERE)
async def test_utf16_file_is_written_back_as_utf16(where: str, tmp_path: Path) -> None:
    data = 'a = “q”\nb\n'.encode('utf-16')
    result, after = await tolerant(where, tmp_path, data, old_text='a = "q"', new_text='a = "r"')
    assert result == 'Edited f.txt.\n[matched with Unicode punctuation folded to ASCII on line 1]'
    assert after == 'a = "r"\nb\n'.encode('utf-16')


@pytest.mark.parametrize('where', WHERE)
async def test_exact_mode_is_unchanged(where: str, tmp_path: Path) -> None:
    """The default keeps the documented results: the miss (with its whitespace hint), and no note on a hit."""
    data = b'def f():\n    x = 1  \n    return x\n'
    calls = [
        {'old_text': '    x = 1\n    return x', 'new_text': 'z'},
        {'old_text': 'def f():', 'new_text': 'def g():'},
    ]
    default, after_default = await edits(where, tmp_path, data, calls)
    exact, after_exact = await edits(where, tmp_path, data, calls, match='exact')
    assert (
        default
        == exact
        == [
            RETRY + 'old_text not found in f.txt. No changes were written. It matches lines 2-3 if whitespace is '
            'ignored: line 2 ends with 2 spaces in the file and no whitespace in old_text. Copy old_text exactly as '
            'read_file shows it.',
            'Edited f.txt.',
        ]
    )
    assert after_default == after_exact == b'def g():\n    x = 1  \n    return x\n'
    # Tolerant on an exact match says nothing more.
    results, _ = await edits(where, tmp_path, data, calls[1:], match='tolerant')
    assert results == ['Edited f.txt.']


async def test_bad_match_value_is_refused() -> None:
    with pytest.raises(ValueError, match="match must be 'exact' or 'tolerant', got 'fuzzy'"):
        FileSystem(match='fuzzy')  # pyright: ignore[reportArgumentType]


LINE = st.text(alphabet='abc =()"\'-', min_size=1, max_size=8).filter(lambda s: s.strip() != '')
NOTE = re.compile(r'\[matched [^\]]* on lines? (\d+)(?:-(\d+))?\]$')


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(LINE, min_size=3, max_size=8),
    at=st.integers(0, 7),
    size=st.integers(1, 3),
    how=st.sampled_from(['trailing', 'indent', 'punct']),
)
def test_tolerant_never_changes_bytes_outside_the_matched_lines(lines: list[str], at: int, size: int, how: str) -> None:
    """Whatever tier matched, the lines outside the ones the result names keep their bytes."""
    at = min(at, len(lines) - 1)
    block = lines[at : at + size]
    file_lines = [f'  {line}' for line in lines]
    if how == 'punct':
        file_lines = [line.replace('"', '\u201c').replace('-', '\u2014') for line in file_lines]
    if how == 'trailing':
        file_lines = [line + ' \t' for line in file_lines]
    data = ('\n'.join(file_lines) + '\n').encode()
    old = '\n'.join(f'    {line}' if how == 'indent' else f'  {line}' for line in block)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / 'f.txt').write_bytes(data)
        toolset: Any = FileSystem(root_dir=tmp, match='tolerant', content_hashes=False).get_toolset()
        try:
            result = anyio.run(lambda: toolset.edit_file('f.txt', old_text=old, new_text='NEW'))
        except ModelRetry:
            assert (Path(tmp) / 'f.txt').read_bytes() == data
            return
        after = (Path(tmp) / 'f.txt').read_bytes()
    note = NOTE.search(result)
    if note is None:  # the exact tier: the documented replacement
        assert after == data.replace(old.encode(), b'NEW', 1)
        return
    first, last = int(note[1]), int(note[2] or note[1])
    before = data.split(b'\n')
    head = b''.join(line + b'\n' for line in before[: first - 1])
    tail = b''.join(line + b'\n' for line in before[last:-1])
    assert after.startswith(head)
    assert after.endswith(tail)
    assert b'NEW' in after[len(head) : len(after) - len(tail)]
