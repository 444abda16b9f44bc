"""The FileSystem on a workspace that is not on this host: `RemoteEngine` over an in-memory backend.

What a user sees: files land in the backend and nothing on the host, the conflict guard, event
data, containment and access patterns through symlinks the backend resolves, and walks and
searches that list and read only through the protocol, with bounded concurrency and no reads
past a cap. Text equality with 0.62.0 is in tests/compat/test_fs062_remote_compat.py.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import anyio
import pytest
from pydantic_ai.workspaces import FileEntry
from pydantic_ai_harness_rs._core import ConflictError, NotFoundError, OutsideRootError, ProtectedError
from pydantic_ai_harness_rs.filesystem._remote import RemoteEngine

from .conftest import REFERENCE

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memory_workspace import LinkedMemoryWorkspace, MemoryWorkspace  # noqa: E402

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(REFERENCE, reason='our protocol engine; 0.62.0 is compared in tests/compat'),
]

READ_ONLY = ['**/.git', '**/.env', '**/.env.*', '*.pem', '*.key', '**/secrets*', '**/.pydantic-ai-harness/**']


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def engine(ws: object, **options: object) -> RemoteEngine:
    return RemoteEngine(ws, read_only_patterns=READ_ONLY, **options)  # type: ignore[arg-type]


async def test_changes_land_in_the_backend_and_never_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ws = MemoryWorkspace({'a.txt': 'one\ntwo\n'})
    e = engine(ws)

    plan = await e.plan_create_directory('pkg/sub')
    assert plan is not None
    assert (await e.commit(plan)).text == 'Created directory: pkg/sub'
    plan = await e.plan_write('pkg/sub/new.py', 'x = 1\n', None, True)
    assert (await e.commit(plan)).text == 'Wrote 6 chars (1 lines) to pkg/sub/new.py. [hash:9e26bf369911]'
    plan = await e.plan_edit('a.txt', [('two', 'TWO')], None)
    assert (await e.commit(plan)).text.startswith('Edited a.txt. [hash:')

    assert ws.files == {'/ws/a.txt': b'one\nTWO\n', '/ws/pkg/sub/new.py': b'x = 1\n'}
    assert {'/ws/pkg', '/ws/pkg/sub'} <= ws.dirs
    assert list(tmp_path.iterdir()) == []
    assert Path.cwd() == tmp_path
    assert not Path('/ws').exists()


async def test_commit_refuses_content_changed_since_the_plan() -> None:
    ws = MemoryWorkspace({'a.txt': 'one\n'})
    e = engine(ws)
    plan = await e.plan_edit('a.txt', [('one', 'uno')], None)
    ws.files['/ws/a.txt'] = b'someone else\n'
    with pytest.raises(ConflictError) as info:
        await e.commit(plan)
    old, new = sha(b'one\n'), sha(b'someone else\n')
    assert str(info.value) == (
        f"Conflict: file 'a.txt' has changed (expected hash:{old}, got hash:{new}). Re-read the file and retry."
    )
    assert ws.files['/ws/a.txt'] == b'someone else\n'

    # A create announced against nothing refuses a file that appeared meanwhile.
    plan = await e.plan_write('b.txt', 'mine\n', None, True)
    ws._put('/ws/b.txt', b'')
    with pytest.raises(
        ConflictError, match=r"file 'b.txt' has changed \(expected hash:<absent>, got hash:e3b0c44298fc\)"
    ):
        await e.commit(plan)
    assert ws.files['/ws/b.txt'] == b''

    # An edited file removed before the commit is missing, and nothing is written.
    plan = await e.plan_edit('a.txt', [('someone', 'no one')], None)
    del ws.files['/ws/a.txt']
    with pytest.raises(NotFoundError, match='^File not found: a.txt$'):
        await e.commit(plan)
    assert '/ws/a.txt' not in ws.files


async def test_stale_expected_hash_is_refused_before_anything_is_written() -> None:
    ws = MemoryWorkspace({'a.txt': 'one\n'})
    e = engine(ws)
    with pytest.raises(ConflictError, match='expected hash:000000000000'):
        await e.plan_write('a.txt', 'two\n', '000000000000', True)
    assert ws.calls.get('write_bytes', 0) == 0


async def test_event_data() -> None:
    ws = MemoryWorkspace({'src/a.py': 'print(1)\n', 'src/b.py': 'print(2)\n', 'pic.gif': b'GIF89a' + bytes(10)})
    e = engine(ws)
    plan = await e.plan_edit('src/a.py', [('1', '3')], None)
    assert (plan.path, plan.root_dir, plan.operation) == ('src/a.py', '/ws', 'edit')
    assert plan.diff == '--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-print(1)\n+print(3)'
    outcome = await e.commit(plan)
    assert (outcome.path, outcome.content_hash, outcome.emit) == ('src/a.py', outcome.text[-13:-1], True)

    read, content = await e.read_file('src/b.py')
    assert (read.path, read.emit, content) == ('src/b.py', True, None)
    assert read.content_hash == read.text.split('hash:')[1][:12]
    read, content = await e.read_file('pic.gif')
    assert content is not None and (content.media_type, content.data) == ('image/gif', b'GIF89a' + bytes(10))
    assert read.text == f'[pic.gif | image/gif | 16 bytes | hash:{read.content_hash}]\n'

    found = await e.search_files('print', 'src')
    assert (found.path, found.count, found.truncated) == ('src', 2, False)
    listed = await e.list_directory('src')
    assert (listed.path, listed.count) == ('src', 2)


async def test_containment_and_patterns_follow_the_backends_symlinks() -> None:
    ws = LinkedMemoryWorkspace(
        {'a.txt': 'TOKEN a\n', '.env': 'TOKEN env\n'},
        symlinks={'out': '/elsewhere', 'envlink': '/ws/.env', 'outdir': '/elsewhere'},
    )
    ws._put('/elsewhere/secret.txt', b'TOKEN outside\n')
    e = engine(ws, denied_patterns=['.env'])
    with pytest.raises(
        OutsideRootError, match='^`out/secret.txt` leads outside the project root `/ws` through a symlink'
    ):
        await e.read_file('out/secret.txt')
    with pytest.raises(OutsideRootError, match=r'^`/elsewhere/secret.txt` is outside the project root `/ws`'):
        await e.read_file('../elsewhere/secret.txt')
    with pytest.raises(Exception, match=r"^Path '.env' is denied by pattern '.env'.$"):
        await e.read_file('envlink')
    with pytest.raises(ProtectedError):
        await e.plan_write('.env.local', 'x', None, True)
    # Walks neither enter a link leading out nor read a file whose real path is denied.
    assert (await e.search_files('TOKEN')).text == (
        'a.txt:1:TOKEN a\n[1 hidden entries omitted; name a hidden path explicitly to include it]'
    )
    assert (await e.find_files('**/*.txt')).text == 'a.txt'


async def test_search_reads_no_further_than_the_cap_needs() -> None:
    ws = MemoryWorkspace({f'f{i:03}.txt': 'hit\n' for i in range(200)})
    e = engine(ws, max_search_results=1, concurrency=8)
    outcome = await e.search_files('hit')
    assert outcome.text == 'f000.txt:1:hit\n[... truncated at 1 matches]'
    assert (outcome.count, outcome.truncated) == (1, True)
    assert ws.calls['read_bytes'] <= 2 * 8  # the readers run at most twice the concurrency ahead


class SlowListing(MemoryWorkspace):
    """Counts the `list_dir` calls in flight (each yields to the loop once)."""

    in_flight = 0
    most = 0

    async def list_dir(self, path: str) -> tuple[FileEntry, ...]:
        SlowListing.in_flight += 1
        SlowListing.most = max(SlowListing.most, SlowListing.in_flight)
        try:
            await anyio.sleep(0)
            return await super().list_dir(path)
        finally:
            SlowListing.in_flight -= 1


async def test_walks_list_concurrently_within_the_bound() -> None:
    ws = SlowListing({f'd{i:02}/x{i}.py': 'x\n' for i in range(40)})
    e = engine(ws, concurrency=5)
    outcome = await e.find_files('**/*.py')
    assert outcome.text.splitlines()[:2] == ['d00/x0.py', 'd01/x1.py']
    assert outcome.count == 40
    assert 1 < SlowListing.most <= 5


async def test_nothing_runs_inside_the_workspace() -> None:
    """The backend has no `run`: searches, globs and listings all work through the protocol alone."""
    ws = MemoryWorkspace({'src/m.py': 'def f():\n    return 1\n', 'README': 'hello\n'})
    e = engine(ws)
    assert not hasattr(ws, 'run')
    assert (await e.grep('RETURN', ignore_case=True)).text == 'src/m.py:2:    return 1'
    assert (await e.grep('f()', literal=True)).text == 'src/m.py:1:def f():'
    assert (await e.list_files(glob='*.py')).text == 'src/m.py'
    # Look-around and backreferences, which 0.62.0 only has where `rg` is missing, work here too.
    assert (await e.search_files(r'(?<=def )f')).text == 'src/m.py:1:def f():'
    assert (await e.search_files(r'(l)\1')).text == 'README:1:hello'


async def test_working_dir_outside_root_dir_is_a_user_error() -> None:
    from pydantic_ai.exceptions import UserError

    e = RemoteEngine(MemoryWorkspace({}), root_dir='/other')
    with pytest.raises(UserError, match="The working directory '/ws' is outside root_dir '/other'"):
        await e.read_file('a')
    e = RemoteEngine(MemoryWorkspace({'a.txt': 'x\n'}), root_dir='/')
    assert (await e.read_file('/ws/a.txt'))[0].text.startswith('[/ws/a.txt | 1 lines')
    assert await e.root_dir() == '/'
    assert os.getcwd() != '/ws'


async def test_a_policy_wrapper_is_never_bypassed() -> None:
    from pydantic_ai.workspaces import ReadOnlyWorkspace, Workspace, WorkspaceReadOnlyError

    ws = MemoryWorkspace({'a.txt': 'one\n'})
    e = engine(ReadOnlyWorkspace(Workspace(ws)))  # type: ignore[arg-type]
    assert (await e.read_file('a.txt'))[0].text.endswith('     1\tone\n')
    plan = await e.plan_write('a.txt', 'two\n', None, True)
    with pytest.raises(WorkspaceReadOnlyError):
        await e.commit(plan)
    assert ws.files == {'/ws/a.txt': b'one\n'}


async def test_two_edits_planned_together_never_lose_one() -> None:
    ws = MemoryWorkspace({'a.txt': 'one two\n'})
    e = engine(ws)
    first = await e.plan_edit('a.txt', [('one', '1')], None)
    second = await e.plan_edit('a.txt', [('two', '2')], None)
    await e.commit(first)
    with pytest.raises(ConflictError, match="^Conflict: file 'a.txt' has changed"):
        await e.commit(second)
    assert ws.files['/ws/a.txt'] == b'1 two\n'
    await e.commit(await e.plan_edit('a.txt', [('two', '2')], None))
    assert ws.files['/ws/a.txt'] == b'1 2\n'
