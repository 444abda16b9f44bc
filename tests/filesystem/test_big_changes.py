"""`write_file` and `edit_file` of files over 1 MiB (issue 11): the paths that share the caller's
text without a copy, hash it on a second core while it is written, compare the edited file
against what the plan read in chunks, and free the old file off the caller's path. Results,
events and bytes on disk are those of a small file, and a change made while the edit was
announced is still refused.

Each test runs a real `Agent` with a scripted model (`tests/scripted.py`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai_harness_rs import FileSystem
from pydantic_ai_harness_rs.filesystem import FileChangeRequestEvent, FileEditedEvent, FileWrittenEvent

from tests.scripted import RETRY, run_tools

pytestmark = pytest.mark.anyio

MIB = 1 << 20
LINE = 'lorem ipsum dolor sit amet, consectetur adipiscing elit\n'
BIG = LINE * (3 * MIB // len(LINE))
"""About 3 MiB of text: past the 1 MiB mark where big-file paths start."""
MARKER = 'the one line edit_file replaces\n'


def h(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()[:12]


def big_file(tmp_path: Path) -> tuple[Path, str]:
    """A 6 MiB file with `MARKER` in the middle."""
    text = BIG + MARKER + BIG
    target = tmp_path / 'big.txt'
    target.write_text(text)
    return target, text


def edit_marker() -> tuple[str, dict[str, Any]]:
    return ('edit_file', {'path': 'big.txt', 'old_text': MARKER, 'new_text': 'the line it became\n'})


async def test_a_big_edit_writes_the_bytes_and_reports_as_a_small_one(tmp_path: Path) -> None:
    target, text = big_file(tmp_path)
    t = await run_tools([FileSystem(root_dir=tmp_path)], [edit_marker()])
    after = BIG + 'the line it became\n' + BIG
    assert t.results == [f'Edited big.txt. [hash:{h(after)}]']
    assert target.read_bytes() == after.encode()
    [event] = t.of(FileEditedEvent)
    assert (event.path, event.content_hash, event.truncated) == ('big.txt', h(after), True)
    assert event.diff == '--- a/big.txt\n+++ b/big.txt'
    assert [p.name for p in tmp_path.iterdir()] == ['big.txt']  # no temporary file left


@pytest.mark.parametrize(
    'change',
    [
        pytest.param(lambda text: text[: 2 * MIB] + 'X' + text[2 * MIB + 1 :], id='a byte past the first MiB'),
        pytest.param(lambda text: text + 'appended\n', id='appended'),
        pytest.param(lambda text: text[:-1], id='shortened'),
    ],
)
async def test_a_big_edit_of_a_file_changed_while_announced_is_refused(tmp_path: Path, change: Any) -> None:
    """The file is compared with what the plan read, chunk by chunk; the conflict names both hashes."""
    target, text = big_file(tmp_path)
    theirs = change(text)

    async def someone_else_writes(ctx: Any, event: FileChangeRequestEvent) -> None:
        target.write_text(theirs)

    t = await run_tools(
        [FileSystem(root_dir=tmp_path)], [edit_marker()], listeners=[(FileChangeRequestEvent, someone_else_writes)]
    )
    assert t.results == [
        f"{RETRY}Conflict: file 'big.txt' has changed (expected hash:{h(text)}, got hash:{h(theirs)}). "
        'Re-read the file and retry.'
    ]
    assert target.read_text() == theirs
    assert t.of(FileEditedEvent) == []


async def test_a_big_edit_with_a_stale_expected_hash_is_refused(tmp_path: Path) -> None:
    target, text = big_file(tmp_path)
    name, args = edit_marker()
    t = await run_tools([FileSystem(root_dir=tmp_path)], [(name, {**args, 'expected_hash': 'stale0000000'})])
    assert t.results == [
        f"{RETRY}Conflict: file 'big.txt' has changed (expected hash:stale0000000, got hash:{h(text)}). "
        'Re-read the file and retry.'
    ]
    t = await run_tools([FileSystem(root_dir=tmp_path)], [(name, {**args, 'expected_hash': h(text)})])
    assert t.results == [f'Edited big.txt. [hash:{h(BIG + "the line it became" + chr(10) + BIG)}]']


@pytest.mark.parametrize(
    'content',
    [
        pytest.param(BIG, id='ascii'),
        pytest.param(BIG.replace('dolor', 'dolór').replace('amet', 'ämet\u2028'), id='non-ascii, U+2028'),
    ],
)
async def test_a_big_write_writes_the_str_and_counts_it(tmp_path: Path, content: str) -> None:
    """The str's UTF-8 is written as is (shared with the core, not copied)."""
    (tmp_path / 'out.txt').write_text('old content\n')
    t = await run_tools([FileSystem(root_dir=tmp_path)], [('write_file', {'path': 'out.txt', 'content': content})])
    lines = len(content.splitlines())
    assert t.results == [f'Wrote {len(content)} chars ({lines} lines) to out.txt. [hash:{h(content)}]']
    assert (tmp_path / 'out.txt').read_bytes() == content.encode()
    [event] = t.of(FileWrittenEvent)
    assert event.content_hash == h(content)


async def test_a_big_write_directly_writes_the_same(tmp_path: Path) -> None:
    """The direct call (no run, no announcement) of a new and of an existing file."""
    toolset = FileSystem(root_dir=tmp_path).get_toolset()
    for _ in range(2):
        text = await toolset.write_file('direct.txt', BIG)
        assert text == f'Wrote {len(BIG)} chars ({len(BIG.splitlines())} lines) to direct.txt. [hash:{h(BIG)}]'
        assert (tmp_path / 'direct.txt').read_text() == BIG
