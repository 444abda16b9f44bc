"""write_file: create, overwrite, expected_hash, refusals, the change request and its event."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.scripted import RETRY, call, run_tools

pytestmark = pytest.mark.anyio


def h(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


NEW, V2, CRLF = h(b'hi\nthere\n'), h(b'v2\n'), h(b'a\r\nb\r\n')


async def write_heard(fs: ModuleType, tree: Path, path: str, content: str, listener: Any) -> Any:
    """One `write_file` run on `tree` whose FileChangeRequestEvent `listener` hears first."""
    return await run_tools(
        [fs.FileSystem(root_dir=tree)],
        [('write_file', {'path': path, 'content': content})],
        listeners=[(fs.FileChangeRequestEvent, listener)],
    )


async def test_create_announces_then_writes(fs: ModuleType, tree: Path) -> None:
    result, t = await call([fs.FileSystem(root_dir=tree)], 'write_file', path='docs/new.md', content='hi\nthere\n')
    assert result == f'Wrote 9 chars (2 lines) to docs/new.md. [hash:{NEW}]'
    assert (tree / 'docs' / 'new.md').read_bytes() == b'hi\nthere\n'
    [request] = t.of(fs.FileChangeRequestEvent)
    assert (request.path, request.operation, request.truncated) == ('docs/new.md', 'write', False)
    assert request.diff == '--- a/docs/new.md\n+++ b/docs/new.md\n@@ -0,0 +1,2 @@\n+hi\n+there'
    [written] = t.of(fs.FileWrittenEvent)
    assert (written.path, written.content_hash, written.root_dir) == ('docs/new.md', NEW, str(tree))
    assert [type(e).__name__ for e in t.events] == ['FileChangeRequestEvent', 'FileWrittenEvent']


async def test_overwrite_diff_marks_a_missing_final_newline(fs: ModuleType, tree: Path) -> None:
    _, t = await call([fs.FileSystem(root_dir=tree)], 'write_file', path='docs/guide.md', content='line 1\nline 2')
    [request] = t.of(fs.FileChangeRequestEvent)
    assert request.diff == (
        '--- a/docs/guide.md\n+++ b/docs/guide.md\n@@ -1,3 +1,2 @@\n line 1\n-line 2\n-line 3\n+line 2\n'
        '\\ No newline at end of file'
    )
    assert (tree / 'docs' / 'guide.md').read_text() == 'line 1\nline 2'


async def test_expected_hash_accepts_the_current_and_rejects_a_stale_one(fs: ModuleType, tree: Path) -> None:
    current = h(b'line 1\nline 2\nline 3\n')
    t = await run_tools(
        [fs.FileSystem(root_dir=tree)],
        [
            ('write_file', {'path': 'docs/guide.md', 'content': 'v2\n', 'expected_hash': 'deadbeef0000'}),
            ('write_file', {'path': 'docs/guide.md', 'content': 'v2\n', 'expected_hash': current}),
        ],
    )
    assert t.results == [
        RETRY + "Conflict: file 'docs/guide.md' has changed (expected hash:deadbeef0000, "
        f'got hash:{current}). Re-read the file and retry.',
        f'Wrote 3 chars (1 lines) to docs/guide.md. [hash:{V2}]',
    ]
    # The stale write was refused before it was announced.
    assert [e.operation for e in t.of(fs.FileChangeRequestEvent)] == ['write']
    assert (tree / 'docs' / 'guide.md').read_text() == 'v2\n'


async def test_expected_hash_is_ignored_for_a_new_file(fs: ModuleType, tree: Path) -> None:
    result, _ = await call([fs.FileSystem(root_dir=tree)], 'write_file', path='n.txt', content='x', expected_hash='abc')
    assert result == f'Wrote 1 chars (1 lines) to n.txt. [hash:{h(b"x")}]'


@pytest.mark.parametrize(
    ('path', 'message'),
    [
        ('missing/f.txt', "Parent directory 'missing' does not exist. Use create_directory first."),
        ('docs', "Path 'docs' exists and is not a regular file."),
        ('README.md/x', "Path 'README.md/x' has a parent that is not a directory."),
        ('.env', "Path '.env' is protected (matches '.env')."),
        ('.git/config', "Path '.git/config' is protected (matches '.git/*')."),
        ('key.pem', "Path 'key.pem' is protected (matches '*.pem')."),
        ('conf/secrets.yaml', "Path 'conf/secrets.yaml' is protected (matches '**/secrets*')."),
        ('secrets.yaml', "Path 'secrets.yaml' is protected (matches '**/secrets*')."),
    ],
)
async def test_refusals_emit_nothing_and_touch_nothing(fs: ModuleType, tree: Path, path: str, message: str) -> None:
    before = sorted(str(p) for p in tree.rglob('*'))
    result, t = await call([fs.FileSystem(root_dir=tree)], 'write_file', path=path, content='x')
    assert result == RETRY + message
    assert t.events == []
    assert sorted(str(p) for p in tree.rglob('*')) == before


async def test_denied_and_not_allowed(fs: ModuleType, tree: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=tree, denied_patterns=['docs/*'], allowed_patterns=['*.md', 'docs/*'])],
        [('write_file', {'path': 'docs/a.md', 'content': 'x'}), ('write_file', {'path': 'a.txt', 'content': 'x'})],
    )
    assert t.results == [
        RETRY + "Path 'docs/a.md' is denied by pattern 'docs/*'.",
        RETRY + "Path 'a.txt' does not match any allowed pattern.",
    ]


async def test_a_listener_cancels_with_a_reason(fs: ModuleType, tree: Path) -> None:
    async def veto(ctx: Any, event: Any) -> None:
        event.cancel('needs review')

    t = await write_heard(fs, tree, 'docs/guide.md', 'gone', veto)
    assert t.results == ["['docs/guide.md' was not written: needs review]"]
    assert (tree / 'docs' / 'guide.md').read_text() == 'line 1\nline 2\nline 3\n'
    assert t.of(fs.FileWrittenEvent) == []


async def test_a_cancelled_create_leaves_no_file(fs: ModuleType, tree: Path) -> None:
    async def veto(ctx: Any, event: Any) -> None:
        event.cancel()

    t = await write_heard(fs, tree, 'new.txt', 'x', veto)
    assert t.results == ["['new.txt' was not written: cancelled by a listener]"]
    assert not (tree / 'new.txt').exists()


async def test_a_file_changed_while_announced_is_not_overwritten(fs: ModuleType, tree: Path) -> None:
    target = tree / 'docs' / 'guide.md'

    async def meddle(ctx: Any, event: Any) -> None:
        target.write_text('someone else\n')

    t = await write_heard(fs, tree, 'docs/guide.md', 'mine\n', meddle)
    assert t.results[0].startswith(RETRY + "Conflict: file 'docs/guide.md' has changed")
    assert target.read_text() == 'someone else\n'


async def test_a_file_created_while_a_create_is_announced_is_a_conflict(fs: ModuleType, tree: Path) -> None:
    async def meddle(ctx: Any, event: Any) -> None:
        (tree / 'new.txt').write_text('')

    t = await write_heard(fs, tree, 'new.txt', 'mine\n', meddle)
    assert t.results[0].startswith(RETRY + "Conflict: file 'new.txt' has changed")
    assert (tree / 'new.txt').read_text() == ''


@pytest.mark.skipif(not hasattr(os, 'mkfifo'), reason='POSIX FIFOs')
async def test_a_fifo_target_is_refused_without_stalling(fs: ModuleType, tree: Path) -> None:
    os.mkfifo(tree / 'pipe')
    result, t = await call([fs.FileSystem(root_dir=tree)], 'write_file', path='pipe', content='x')
    assert result == RETRY + "Path 'pipe' exists and is not a regular file."
    assert t.events == []


async def test_crlf_is_written_untranslated(fs: ModuleType, tree: Path) -> None:
    result, _ = await call([fs.FileSystem(root_dir=tree)], 'write_file', path='w.txt', content='a\r\nb\r\n')
    assert (tree / 'w.txt').read_bytes() == b'a\r\nb\r\n'
    assert result == f'Wrote 6 chars (2 lines) to w.txt. [hash:{CRLF}]'


async def test_without_content_hashes(fs: ModuleType, tree: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=tree, content_hashes=False)], [('write_file', {'path': 'w.txt', 'content': 'x'})]
    )
    assert t.results == ['Wrote 1 chars (1 lines) to w.txt.']
    [tool] = [d for d in t.tools if d.name == 'write_file']
    assert set(tool.parameters_json_schema['properties']) == {'path', 'content'}
    assert t.of(fs.FileWrittenEvent)[0].content_hash == h(b'x')
