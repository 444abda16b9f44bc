"""apply_patch with `FileSystem(match='tolerant')` and `FileSystem(show_changes=N)` (issue 22, §2 and §3).

A hunk's lines and `@@` anchors are found with `edit_file`'s match tiers: exact first, then trailing
whitespace ignored, indentation shifted, Unicode punctuation folded; a match past the exact tier must
be unique from where the hunk is looked for, its file's result line names the tier and the lines, and
on the indentation tiers the added lines are re-indented by the same shift. With `show_changes` each
updated file's line is followed by its changed regions, one 2,000-character cap for the whole result.
Every test runs under the document's contract, 0.62.0's on a `LocalWorkspace`, and on an in-memory
workspace (the protocol path).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs.filesystem import FileSystem

from tests.filesystem.conftest import beyond_reference
from tests.filesystem.on_file import WHERE
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import RETRY, run_tools

pytestmark = beyond_reference('apply_patch is issue 22, beyond the references')


def patch(*lines: str) -> str:
    return '\n'.join(['*** Begin Patch', *lines, '*** End Patch'])


async def apply(
    where: str, tmp_path: Path, files: dict[str, bytes], text: str, **fields: Any
) -> tuple[str, dict[str, bytes]]:
    """`apply_patch(text)` on a tree holding `files`, through an agent run with
    `FileSystem(content_hashes=False, tools=['apply_patch'], **fields)`; the result and the files after."""
    fs = FileSystem(content_hashes=False, tools=['apply_patch'], **fields)
    call = [('apply_patch', {'input': text})]
    if where == 'memory':
        backend = MemoryWorkspace(dict(files))
        t = await run_tools([fs], call, workspace=Workspace(backend))
        return t.results[0], {name: backend.files[f'/ws/{name}'] for name in files}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    if where == 'document':
        fs = FileSystem(root_dir=tmp_path, content_hashes=False, tools=['apply_patch'], **fields)
        t = await run_tools([fs], call)
    else:
        t = await run_tools([LocalWorkspace(tmp_path), fs], call)
    return t.results[0], {name: (tmp_path / name).read_bytes() for name in files}


PY = b'def f():\n    x = 1  \n    return x\n'
TRAILING = patch('*** Update File: f.py', ' def f():', '-    x = 1', '+    x = 2')


@pytest.mark.parametrize('where', WHERE)
async def test_trailing_whitespace_tier_names_itself_on_the_result_line(where: str, tmp_path: Path) -> None:
    result, after = await apply(where, tmp_path, {'f.py': PY}, TRAILING, match='tolerant')
    assert result == 'Applied patch to 1 file:\nM f.py [matched ignoring trailing whitespace on lines 1-2]'
    assert after == {'f.py': b'def f():\n    x = 2\n    return x\n'}


@pytest.mark.parametrize('where', WHERE)
async def test_exact_mode_is_unchanged(where: str, tmp_path: Path) -> None:
    result, after = await apply(where, tmp_path, {'f.py': PY}, TRAILING)
    assert result == RETRY + (
        "Hunk 1 of Update File 'f.py' (patch line 3) does not match the file: its line 2 '    x = 1' was not "
        "found. Closest: line 2 of the file, '    x = 1  ', which ends with 2 spaces in the file and no "
        'whitespace in the patch. No changes were written. Read the file and copy its lines exactly.'
    )
    assert after == {'f.py': PY}
    # An exact match says nothing more in the tolerant mode either.
    exact = patch('*** Update File: f.py', ' def f():', '-    x = 1  ', '+    x = 2')
    result, after = await apply(where, tmp_path, {'f.py': PY}, exact, match='tolerant')
    assert result == 'Applied patch to 1 file:\nM f.py'


@pytest.mark.parametrize('where', WHERE)
async def test_indentation_tier_reindents_the_added_lines(where: str, tmp_path: Path) -> None:
    data = b'class A:\n\tdef f(self):\n\t\treturn 1\n'
    text = patch('*** Update File: f.py', ' def f(self):', '-\treturn 1', '+\treturn 2', '+\t# two')
    result, after = await apply(where, tmp_path, {'f.py': data}, text, match='tolerant')
    assert result == 'Applied patch to 1 file:\nM f.py [matched ignoring indentation on lines 2-3]'
    assert after == {'f.py': b'class A:\n\tdef f(self):\n\t\treturn 2\n\t\t# two\n'}


@pytest.mark.parametrize('where', WHERE)
async def test_each_hunk_and_anchor_past_the_exact_tier_is_named(where: str, tmp_path: Path) -> None:
    data = 'x = 1\n# “quoted” — note\ny = 2\nz = 3  \n'.encode()
    text = patch(
        '*** Update File: f.py',
        '@@',
        '-x = 1',
        '+x = 10',
        '@@ # "quoted" - note',
        ' y = 2',
        '-z = 3',
        '+z = 30',
    )
    result, after = await apply(where, tmp_path, {'f.py': data}, text, match='tolerant')
    assert result == (
        'Applied patch to 1 file:\nM f.py [hunk 2 matched with Unicode punctuation folded to ASCII on line 2] '
        '[hunk 2 matched ignoring trailing whitespace on lines 3-4]'
    )
    assert after == {'f.py': 'x = 10\n# “quoted” — note\ny = 2\nz = 30\n'.encode()}


@pytest.mark.parametrize('where', WHERE)
async def test_a_tolerant_match_found_twice_is_a_retry(where: str, tmp_path: Path) -> None:
    data = b'a  \nb\na \nb\n'
    result, after = await apply(
        where, tmp_path, {'f.py': data}, patch('*** Update File: f.py', ' a', '-b', '+c'), match='tolerant'
    )
    assert result == RETRY + (
        "Hunk 1 of Update File 'f.py' (patch line 3): its lines match 2 places of the file (ignoring trailing "
        "whitespace). Add context lines or an '@@' line to make the match unique. No changes were written."
    )
    assert after == {'f.py': data}


LINES = ''.join(f'l{i}\n' for i in range(1, 21)).encode()


@pytest.mark.parametrize('where', WHERE)
async def test_show_changes_follows_each_updated_file(where: str, tmp_path: Path) -> None:
    text = patch(
        '*** Update File: f.txt',
        '@@',
        '-l5',
        '+L5',
        '@@',
        ' l18',
        '-l19',
        '*** Add File: new.txt',
        '+new',
    )
    result, after = await apply(where, tmp_path, {'f.txt': LINES}, text, show_changes=1)
    assert result == (
        'Applied patch to 2 files:\nM f.txt'
        '\n[lines 4-6, changed 5]\n     4\tl4\n     5\tL5\n     6\tl6'
        '\n[lines 18-19, removed before line 19]\n    18\tl18\n     -\t(lines removed here)\n    19\tl20'
        '\nA new.txt'
    )
    assert after['f.txt'] == LINES.replace(b'l5\n', b'L5\n').replace(b'l19\n', b'')


@pytest.mark.parametrize('where', WHERE)
async def test_show_changes_has_one_cap_for_the_whole_result(where: str, tmp_path: Path) -> None:
    long = 'x' * 989  # two lines of a.txt fit 2,000 chars alone, not after b.txt's
    files = {'a.txt': f'{long}\n{long}\n'.encode(), 'b.txt': b'one\ntwo\n'}
    text = patch(
        '*** Update File: b.txt',
        '-one',
        '+ONE',
        '*** Update File: a.txt',
        f'-{long}',
        f'-{long}',
        f'+{long}1',
        f'+{long}2',
    )
    result, _ = await apply(where, tmp_path, files, text, show_changes=1)
    assert result == (
        'Applied patch to 2 files:\nM b.txt\n[lines 1-2, changed 1]\n     1\tONE\n     2\ttwo'
        f'\nM a.txt\n[lines 1-2, changed 1-2]\n     1\t{long}1'
        '\n... (cut at 2,000 characters. Use read_file with offset=1 to continue reading.)'
    )
