"""FileSystem through a real Agent on a workspace that is not on this host (issue 7, section 2).

`FileSystem()` with a run whose workspace is an in-memory backend (`tests/memory_workspace.py`):
every tool goes through the workspace protocol (`_remote.py`), files written land in the backend,
and nothing appears on the host. The texts are 0.62.0's on the same backend
(`tests/compat/test_fs062_remote_compat.py` compares them call by call).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs.filesystem import (
    DirectoryCreatedEvent,
    FileEditedEvent,
    FileReadEvent,
    FileSystem,
    FileWrittenEvent,
)

from tests.filesystem.conftest import beyond_reference, sha
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import run_tools

pytestmark = beyond_reference('0.36.0 has no workspace contract')


OLD, NEW, HELLO = sha(b'one\ntwo\n'), sha(b'one\nTWO\n'), sha(b'hello\n')


async def test_every_change_lands_in_the_backend_and_nothing_on_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = tmp_path / 'host'
    host.mkdir()
    monkeypatch.chdir(host)
    backend = MemoryWorkspace({'notes.txt': 'one\ntwo\n', 'src/app.py': 'print(1)\n'})
    transcript = await run_tools(
        [FileSystem()],
        [
            ('list_directory', {'path': '.'}),
            ('read_file', {'path': 'notes.txt'}),
            ('create_directory', {'path': 'made'}),
            ('write_file', {'path': 'made/out.txt', 'content': 'hello\n'}),
            ('edit_file', {'path': 'notes.txt', 'old_text': 'two', 'new_text': 'TWO'}),
            ('find_files', {'pattern': '**/*.py'}),
            ('search_files', {'pattern': 'TWO|hello'}),
            ('read_file', {'path': 'missing.txt'}),
        ],
        workspace=Workspace(backend),
    )
    assert transcript.results == [
        'notes.txt  (8 bytes)\nsrc/',
        f'[notes.txt | 2 lines | hash:{OLD}]\n     1\tone\n     2\ttwo\n',
        'Created directory: made',
        f'Wrote 6 chars (1 lines) to made/out.txt. [hash:{HELLO}]',
        f'Edited notes.txt. [hash:{NEW}]',
        'src/app.py',
        'made/out.txt:1:hello\nnotes.txt:2:TWO',
        'Path not found: missing.txt',
    ]
    assert backend.files == {
        '/ws/notes.txt': b'one\nTWO\n',
        '/ws/src/app.py': b'print(1)\n',
        '/ws/made/out.txt': b'hello\n',
    }
    assert '/ws/made' in backend.dirs
    assert os.listdir(host) == []
    written = [e for e in transcript.of(FileWrittenEvent) if not isinstance(e, FileEditedEvent)]
    assert [(e.path, e.root_dir, e.content_hash) for e in written] == [('made/out.txt', '/ws', HELLO)]
    (edited,) = transcript.of(FileEditedEvent)
    assert edited.path == 'notes.txt' and '-two\n+TWO' in edited.diff
    (created,) = transcript.of(DirectoryCreatedEvent)
    assert created.path == 'made'
    (read,) = transcript.of(FileReadEvent)
    assert (read.path, read.content_hash) == ('notes.txt', OLD)
