"""edit_file: one pair or a batch, exact-once matching, nothing written on failure, the events."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.filesystem.conftest import spec_over_reference
from tests.scripted import RETRY, call, run_tools

pytestmark = pytest.mark.anyio

GUIDE = 'line 1\nline 2\nline 3\n'


def h(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()[:12]


async def test_single_pair(fs: ModuleType, tree: Path) -> None:
    result, t = await call([fs.FileSystem(root_dir=tree)], 'edit_file', path='docs/guide.md', old_text='line 2', new_text='LINE TWO')
    new = 'line 1\nLINE TWO\nline 3\n'
    assert result == f'Edited docs/guide.md. [hash:{h(new)}]'
    assert (tree / 'docs' / 'guide.md').read_text() == new
    diff = '--- a/docs/guide.md\n+++ b/docs/guide.md\n@@ -1,3 +1,3 @@\n line 1\n-line 2\n+LINE TWO\n line 3'
    [request] = t.of(fs.FileChangeRequestEvent)
    assert (request.operation, request.diff, request.truncated) == ('edit', diff, False)
    [edited] = t.of(fs.FileEditedEvent)
    assert isinstance(edited, fs.FileWrittenEvent)
    assert (edited.kind, edited.path, edited.content_hash, edited.diff) == ('file_system.file_edited', 'docs/guide.md', h(new), diff)


async def test_batch_applies_in_order(fs: ModuleType, tree: Path) -> None:
    replacements = [{'old_text': 'line 1', 'new_text': 'first'}, {'old_text': 'first\nline 2', 'new_text': 'one-two'}]
    result, _ = await call([fs.FileSystem(root_dir=tree)], 'edit_file', path='docs/guide.md', replacements=replacements)
    new = 'one-two\nline 3\n'
    assert result == f'Edited docs/guide.md. [hash:{h(new)}]'
    assert (tree / 'docs' / 'guide.md').read_text() == 'one-two\nline 3\n'


@pytest.mark.parametrize(
    ('args', 'message'),
    [
        ({'old_text': 'nope', 'new_text': 'x'}, 'old_text not found in docs/guide.md. No changes were written.'),
        (
            {'old_text': 'line', 'new_text': 'x'},
            'old_text found 3 times in docs/guide.md. Include more surrounding context to make the match unique. '
            'No changes were written.',
        ),
        ({'old_text': '', 'new_text': 'x'}, 'old_text is empty; old_text must be the exact text to replace.'),
        (
            {'replacements': [{'old_text': 'line 1', 'new_text': 'a'}, {'old_text': 'zzz', 'new_text': 'b'}]},
            'replacement 2 not found in docs/guide.md. No changes were written.',
        ),
        ({'old_text': 'line 1'}, 'Provide old_text and new_text, or a non-empty replacements list.'),
        (
            {'old_text': 'a', 'new_text': 'b', 'replacements': [{'old_text': 'line 1', 'new_text': 'a'}]},
            'Provide either old_text and new_text or a non-empty replacements list, not both.',
        ),
        ({'replacements': []}, 'Provide either old_text and new_text or a non-empty replacements list, not both.'),
        ({'old_text': 'line 1', 'new_text': 'x', 'expected_hash': 'stale0000000'},
         f"Conflict: file 'docs/guide.md' has changed (expected hash:stale0000000, got hash:{h(GUIDE)}). "
         'Re-read the file and retry.'),
    ],
)
async def test_failures_write_nothing(fs: ModuleType, tree: Path, args: dict[str, Any], message: str) -> None:
    result, t = await call([fs.FileSystem(root_dir=tree)], 'edit_file', path='docs/guide.md', **args)
    assert result == RETRY + message
    assert t.events == []
    assert (tree / 'docs' / 'guide.md').read_text() == GUIDE


async def test_binary_and_missing(fs: ModuleType, tree: Path) -> None:
    (tree / 'bin.dat').write_bytes(b'a\x00b')
    t = await run_tools(
        [fs.FileSystem(root_dir=tree)],
        [
            ('edit_file', {'path': 'bin.dat', 'old_text': 'a', 'new_text': 'b'}),
            ('edit_file', {'path': 'nope.txt', 'old_text': 'a', 'new_text': 'b'}),
        ],
    )
    assert t.results == [
        RETRY + 'bin.dat is a binary file; edit_file only edits text files.',
        RETRY + 'File not found: nope.txt',
    ]


async def test_crlf_is_preserved(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'w.txt').write_bytes(b'a\r\nb\r\n')
    await call([fs.FileSystem(root_dir=tmp_path)], 'edit_file', path='w.txt', old_text='b', new_text='c')
    assert (tmp_path / 'w.txt').read_bytes() == b'a\r\nc\r\n'


async def test_a_cancelled_edit_changes_nothing(fs: ModuleType, tree: Path) -> None:
    async def veto(ctx: Any, event: Any) -> None:
        event.cancel('not now')

    t = await run_tools(
        [fs.FileSystem(root_dir=tree)],
        [('edit_file', {'path': 'docs/guide.md', 'old_text': 'line 1', 'new_text': 'x'})],
        listeners=[(fs.FileChangeRequestEvent, veto)],
    )
    assert t.results == ["['docs/guide.md' was not edited: not now]"]
    assert (tree / 'docs' / 'guide.md').read_text() == GUIDE


async def test_a_file_deleted_while_announced_is_not_recreated(fs: ModuleType, tree: Path) -> None:
    async def delete(ctx: Any, event: Any) -> None:
        (tree / 'docs' / 'guide.md').unlink()

    t = await run_tools(
        [fs.FileSystem(root_dir=tree)],
        [('edit_file', {'path': 'docs/guide.md', 'old_text': 'line 1', 'new_text': 'x'})],
        listeners=[(fs.FileChangeRequestEvent, delete)],
    )
    assert t.results[0].startswith(RETRY)
    assert not (tree / 'docs' / 'guide.md').exists()


async def test_protected_file_cannot_be_edited(fs: ModuleType, tree: Path) -> None:
    result, _ = await call([fs.FileSystem(root_dir=tree)], 'edit_file', path='.git/config', old_text='core', new_text='x')
    assert result == RETRY + "Path '.git/config' is protected (matches '.git/*')."


async def test_large_edit_diff_is_headers_only(fs: ModuleType, tmp_path: Path) -> None:
    big = ''.join(f'row {i}\n' for i in range(10_000))
    (tmp_path / 'big.txt').write_text(big)
    _, t = await call([fs.FileSystem(root_dir=tmp_path)], 'edit_file', path='big.txt', old_text='row 5000\n', new_text='')
    [edited] = t.of(fs.FileEditedEvent)
    assert (edited.diff, edited.truncated) == ('--- a/big.txt\n+++ b/big.txt', True)


async def test_diff_is_cut_at_the_event_limit(fs: ModuleType, tmp_path: Path) -> None:
    old = ''.join(f'{i:05d}\n' for i in range(3000))
    (tmp_path / 'n.txt').write_text('x\n')
    _, t = await call([fs.FileSystem(root_dir=tmp_path)], 'write_file', path='n.txt', content=old[:30000])
    [request] = t.of(fs.FileChangeRequestEvent)
    assert request.truncated is True
    assert len(request.diff) <= fs.MAX_EVENT_DIFF_CHARS
    assert request.diff.startswith('--- a/n.txt\n+++ b/n.txt\n@@ -1 +1,3000 @@\n-x\n+00000\n')
    assert request.diff.endswith('\n+01163')


AMBIGUOUS_TWICE = (
    'old_text found 2 times in f.txt. Include more surrounding context to make the match unique. '
    'No changes were written.'
)


@spec_over_reference
async def test_overlapping_matches_are_ambiguous(fs: ModuleType, tmp_path: Path) -> None:
    # 0.36.0 counts non-overlapping matches (one here) and edits the first.
    (tmp_path / 'f.txt').write_text('foo\nfoo\nfoo\n')
    result, t = await call(
        [fs.FileSystem(root_dir=tmp_path)], 'edit_file', path='f.txt', old_text='foo\nfoo\n', new_text='bar\n'
    )
    assert result == RETRY + AMBIGUOUS_TWICE
    assert t.events == []
    assert (tmp_path / 'f.txt').read_bytes() == b'foo\nfoo\nfoo\n'


@spec_over_reference
async def test_overlapping_matches_in_a_batch_write_nothing(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'f.txt').write_text('aaa\n')
    # The second replacement sees the first one's result, `ababa`, where `aba` overlaps itself.
    replacements = [{'old_text': 'aaa', 'new_text': 'ababa'}, {'old_text': 'aba', 'new_text': 'x'}]
    result, _ = await call([fs.FileSystem(root_dir=tmp_path)], 'edit_file', path='f.txt', replacements=replacements)
    assert result == RETRY + AMBIGUOUS_TWICE.replace('old_text', 'replacement 2')
    assert (tmp_path / 'f.txt').read_bytes() == b'aaa\n'
