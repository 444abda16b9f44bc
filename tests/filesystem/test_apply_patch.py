"""apply_patch (issue 22, section 1): Codex's patch format, planned whole, written all or nothing.

Every construct of the format, moves, adds into new directories, deletes, line endings and bytes
kept, sequences on one path, malformed patches, containment and patterns, misses, vetoes,
`ReadBeforeWrite`, both contracts (a `root_dir`, a `LocalWorkspace`) and a workspace reached
through the protocol (the in-memory backend), and the journal a killed commit leaves.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs import ReadBeforeWrite
from pydantic_ai_harness_rs.filesystem import (
    DEFAULT_TOOL_NAMES,
    FileChangeRequestEvent,
    FileEditedEvent,
    FileSystem,
    FileWrittenEvent,
    PlannedChange,
)
from pydantic_ai_harness_rs.filesystem._approval import PATCH_STALE
from pydantic_ai_harness_rs.filesystem._engine import LocalEngine

from tests.approval_resume import resume_in_new_process
from tests.filesystem.conftest import beyond_reference, sha
from tests.filesystem.test_tool_kinds import _kinds_supported as kinds_supported
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import RETRY, Transcript, run_tools, scripted_model

pytestmark = beyond_reference('0.36.0 has no apply_patch')

TOOLS = ['read_file', 'apply_patch']

H = [
    sha(data)
    for data in (
        b'# Guide\n\nRead me.\n',
        b'VALUE = 2\n',
        b'# Demo\n\nMore.\n',
        b'a = 2\n',
        b'one\n2\nthree\n',
        b'hi\n',
        b'one\r\nTWO\r\n',
        b'k\n',
    )
]
"""Content hashes the results below show, by index."""
H_APPROVED, H_N = sha(b'# Approved\n'), sha(b'n\n')
H_DEMO, H_CHANGED, H_DIRECT = sha(b'# Demo\n'), sha(b'# Changed meanwhile\n'), sha(b'direct\n')


def patch(*lines: str) -> str:
    return '\n'.join(['*** Begin Patch', *lines, '*** End Patch'])


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and directory under `root` (directories as `None`), but the journal's state dir."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob('*'))
        if '.pydantic-ai-harness' not in p.parts
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / 'root'
    (root / 'src' / 'pkg').mkdir(parents=True)
    (root / 'docs').mkdir()
    (root / 'src' / 'app.py').write_text('import os\n\n\ndef main():\n    return 1\n\n\ndef other():\n    return 1\n')
    (root / 'src' / 'pkg' / 'util.py').write_text('VALUE = 1\n')
    (root / 'docs' / 'old.md').write_text('old\n')
    (root / 'README.md').write_text('# Demo\n')
    return root


async def apply(root: Path, text: str, **options: Any) -> tuple[str, Any]:
    transcript = await run_tools(
        [FileSystem(root_dir=root, tools=TOOLS, **options)], [('apply_patch', {'input': text})]
    )
    return transcript.results[0], transcript


async def test_every_construct_in_one_patch(root: Path) -> None:
    text = patch(
        '*** Add File: docs/new/guide.md',
        '+# Guide',
        '+',
        '+Read me.',
        '*** Delete File: docs/old.md',
        '*** Update File: src/app.py',
        '@@ def other():',
        '-    return 1',
        '+    return 2',
        '*** Update File: src/pkg/util.py',
        '*** Move to: lib/util.py',
        '@@',
        '-VALUE = 1',
        '+VALUE = 2',
        '*** End of File',
        '*** Update File: README.md',
        '+',
        '+More.',
    )
    result, t = await apply(root, text)
    app = b'import os\n\n\ndef main():\n    return 1\n\n\ndef other():\n    return 2\n'
    assert result == (
        'Applied patch to 5 files:\n'
        f'A docs/new/guide.md [hash:{H[0]}]\n'
        'D docs/old.md\n'
        f'M src/app.py [hash:{sha(app)}]\n'
        f'R src/pkg/util.py -> lib/util.py [hash:{H[1]}]\n'
        f'M README.md [hash:{H[2]}]'
    )
    assert snapshot(root) == {
        'README.md': b'# Demo\n\nMore.\n',
        'docs': None,
        'docs/new': None,
        'docs/new/guide.md': b'# Guide\n\nRead me.\n',
        'lib': None,
        'lib/util.py': b'VALUE = 2\n',
        'src': None,
        'src/app.py': app,
        'src/pkg': None,  # the last file moved away: the directory stays, as Codex leaves it
    }
    requests = [(e.path, e.operation) for e in t.of(FileChangeRequestEvent)]
    assert requests == [
        ('README.md', 'edit'),
        ('docs/new/guide.md', 'write'),
        ('docs/old.md', 'delete'),
        ('lib/util.py', 'write'),
        ('src/app.py', 'edit'),
        ('src/pkg/util.py', 'delete'),
    ]
    [delete] = [e for e in t.of(FileChangeRequestEvent) if e.path == 'docs/old.md']
    assert delete.diff == '--- a/docs/old.md\n+++ b/docs/old.md\n@@ -1 +0,0 @@\n-old'
    # After the commit: an edited event per updated file, a written event per new file, in path order.
    after = [(type(e).__name__, e.path, e.content_hash) for e in t.events if isinstance(e, FileWrittenEvent)]
    assert after == [
        ('FileEditedEvent', 'README.md', sha(b'# Demo\n\nMore.\n')),
        ('FileWrittenEvent', 'docs/new/guide.md', sha(b'# Guide\n\nRead me.\n')),
        ('FileWrittenEvent', 'lib/util.py', sha(b'VALUE = 2\n')),
        ('FileEditedEvent', 'src/app.py', sha(app)),
    ]
    assert t.events.index(t.of(FileChangeRequestEvent)[-1]) < t.events.index(t.of(FileWrittenEvent)[0])
    [edited] = [e for e in t.of(FileEditedEvent) if e.path == 'src/app.py']
    assert '-    return 1\n+    return 2' in edited.diff
    assert not (root / '.pydantic-ai-harness' / 'patch').exists() or not any(
        (root / '.pydantic-ai-harness' / 'patch').iterdir()
    )


async def test_chained_operations_report_the_net_change(root: Path) -> None:
    # An add then a move of it is an add at the end path; a move of a move names the first source;
    # a move onto a path deleted first changes that path and deletes the source; an add then a delete
    # is no change. The events say the same, path by path.
    text = patch(
        '*** Add File: n.txt',
        '+x',
        '*** Update File: n.txt',
        '*** Move to: z/n.txt',
        '-x',
        '+y',
        '*** Update File: README.md',
        '*** Move to: x/README.md',
        '*** Update File: x/README.md',
        '*** Move to: y/README.md',
        '*** Delete File: docs/old.md',
        '*** Update File: src/pkg/util.py',
        '*** Move to: docs/old.md',
        '*** Add File: t.txt',
        '+t',
        '*** Delete File: t.txt',
    )
    result, t = await apply(root, text)
    added, moved_in = sha(b'y\n'), sha(b'VALUE = 1\n')
    assert result == (
        'Applied patch to 4 files:\n'
        f'A z/n.txt [hash:{added}]\n'
        f'R README.md -> y/README.md [hash:{H_DEMO}]\n'
        f'M docs/old.md [hash:{moved_in}]\n'
        'D src/pkg/util.py'
    )
    assert [(e.path, e.operation) for e in t.of(FileChangeRequestEvent)] == [
        ('README.md', 'delete'),
        ('docs/old.md', 'edit'),
        ('src/pkg/util.py', 'delete'),
        ('y/README.md', 'write'),
        ('z/n.txt', 'write'),
    ]
    assert [(type(e).__name__, e.path) for e in t.events if isinstance(e, FileWrittenEvent)] == [
        ('FileEditedEvent', 'docs/old.md'),
        ('FileWrittenEvent', 'y/README.md'),
        ('FileWrittenEvent', 'z/n.txt'),
    ]
    assert (root / 'z' / 'n.txt').read_bytes() == b'y\n'
    assert (root / 'y' / 'README.md').read_bytes() == b'# Demo\n'
    assert not (root / 'n.txt').exists() and not (root / 'x' / 'README.md').exists()
    assert not (root / 't.txt').exists() and not (root / 'README.md').exists()


async def test_opt_in_with_its_kind_and_description(root: Path) -> None:
    assert 'apply_patch' not in DEFAULT_TOOL_NAMES
    t = await run_tools([FileSystem(root_dir=root)], [])
    assert 'apply_patch' not in [tool.name for tool in t.tools]
    t = await run_tools([FileSystem(root_dir=root, tools=TOOLS)], [])
    [tool] = [tool for tool in t.tools if tool.name == 'apply_patch']
    # Tool kinds exist from pydantic-ai-slim 2.59 (the 2.57 matrix has none).
    assert tool.tool_kind == ('file_system.apply_patch' if kinds_supported() else None)
    assert list(tool.parameters_json_schema['properties']) == ['input']
    for marker in (
        '*** Begin Patch',
        '*** Add File:',
        '*** Delete File:',
        '*** Update File:',
        '*** Move to:',
        '@@',
        '*** End of File',
        '*** End Patch',
        'relative',
    ):
        assert marker in (tool.description or ''), marker


async def test_crlf_and_bytes_that_are_not_utf8_are_kept_outside_the_changed_lines(root: Path) -> None:
    (root / 'win.txt').write_bytes(b'one\r\ntwo\r\nthree\r\n')
    (root / 'latin.txt').write_bytes(b'caf\xe9\nold\nend')
    text = patch(
        '*** Update File: win.txt',
        ' one',
        '-two',
        '+TWO',
        '+2.5',
        '*** Update File: latin.txt',
        '-old',
        '+new',
        ' end',
    )
    result, _ = await apply(root, text)
    assert result.startswith('Applied patch to 2 files:\nM win.txt')
    assert (root / 'win.txt').read_bytes() == b'one\r\nTWO\r\n2.5\r\nthree\r\n'
    assert (root / 'latin.txt').read_bytes() == b'caf\xe9\nnew\nend'


async def test_cr_only_lines_are_patched_as_read_file_numbers_them(root: Path) -> None:
    # `read_file` shows three lines under the document's contract, so a patch sees three too.
    (root / 'mac.txt').write_bytes(b'one\rtwo\rthree\r')
    (root / 'mixed.txt').write_bytes(b'a\rb\r\nc\r')
    text = patch(
        '*** Update File: mac.txt',
        ' one',
        '-two',
        '+TWO',
        '+2.5',
        '*** Update File: mixed.txt',
        ' b',
        '-c',
        '+C',
    )
    result, _ = await apply(root, text, show_changes=1)
    assert result.startswith('Applied patch to 2 files:\nM mac.txt')
    assert '[lines 1-4, changed 2-3]\n     1\tone\n     2\tTWO\n     3\t2.5\n     4\tthree' in result
    # Each kept line keeps its own ending; added lines take the file's dominant one.
    assert (root / 'mac.txt').read_bytes() == b'one\rTWO\r2.5\rthree\r'
    assert (root / 'mixed.txt').read_bytes() == b'a\rb\r\nC\r'


async def test_an_add_then_an_update_and_two_updates_of_one_file(root: Path) -> None:
    (root / 'n.txt').write_text('1\n2\n3\n')
    text = patch(
        '*** Add File: made/x.py',
        '+a = 1',
        '*** Update File: made/x.py',
        '-a = 1',
        '+a = 2',
        '*** Update File: n.txt',
        '-1',
        '+one',
        '*** Update File: n.txt',
        '-3',
        '+three',
    )
    result, _ = await apply(root, text)
    assert result == (f'Applied patch to 2 files:\nA made/x.py [hash:{H[3]}]\nM n.txt [hash:{H[4]}]')
    assert (root / 'made' / 'x.py').read_text() == 'a = 2\n'
    assert (root / 'n.txt').read_text() == 'one\n2\nthree\n'


@pytest.mark.parametrize(
    ('text', 'message'),
    [
        (
            '',
            "Invalid patch: the patch is empty. It must start with '*** Begin Patch' and end with '*** End Patch'. "
            'No changes were written.',
        ),
        (
            '*** Begin Patch\n*** End Patch',
            'Invalid patch: the patch has no file operation (*** Add File, *** Delete File or *** Update File). '
            'No changes were written.',
        ),
        (
            'diff --git a/x b/x',
            'Invalid patch: the first line must be \'*** Begin Patch\', got "diff --git a/x b/x". '
            'No changes were written.',
        ),
        (
            '*** Begin Patch\n*** Add File: a.txt\n+x',
            'Invalid patch: the last line must be \'*** End Patch\', got "+x". No changes were written.',
        ),
        (
            patch('*** Add File: a.txt', '+x', '*** Update File: src/app.py', '@@', ' import os', 'oops'),
            "Invalid patch: line 7: a line of a hunk of Update File 'src/app.py' must start with ' ', '-' or '+' "
            '(or \'@@\' for a new hunk), got "oops". No changes were written.',
        ),
    ],
)
async def test_empty_and_malformed_patches(root: Path, text: str, message: str) -> None:
    before = snapshot(root)
    result, _ = await apply(root, text)
    assert result == RETRY + message
    assert snapshot(root) == before


async def test_a_miss_in_the_last_file_names_it_and_writes_nothing(root: Path) -> None:
    (root / 'tabs.py').write_text('def f():\n\treturn 1\n')
    before = snapshot(root)
    text = patch(
        '*** Add File: new.txt',
        '+x',
        '*** Update File: src/app.py',
        '-import os',
        '+import sys',
        '*** Update File: tabs.py',
        ' def f():',
        '-    return 1',
        '+    return 2',
    )
    result, t = await apply(root, text)
    assert result == RETRY + (
        "Hunk 1 of Update File 'tabs.py' (patch line 8) does not match the file: its line 2 '    return 1' was "
        "not found. Closest: line 2 of the file, '\\treturn 1', which is indented with a tab in the file and "
        '4 spaces in the patch. No changes were written. Read the file and copy its lines exactly.'
    )
    assert snapshot(root) == before
    assert t.of(FileChangeRequestEvent) == []


@pytest.mark.parametrize(
    ('data', 'line', 'closest'),
    [
        (
            b'def f():\n    return 1\n',
            '    return 2',
            "Closest: line 2 of the file, '    return 1', which differs at column 12: '2' in the patch, '1' in the "
            'file. No changes were written. Read the file and copy its lines exactly.',
        ),
        (
            b'world\nhello\n',
            'hellx',
            "Closest: line 2 of the file, 'hello', which differs at column 5: 'x' in the patch, 'o' in the file. "
            'No changes were written. Read the file and copy its lines exactly.',
        ),
        (
            'x = 1\ncafé\n'.encode('latin-1'),
            'café',
            "Closest: line 2 of the file, 'caf\ufffd', which holds bytes that are not UTF-8 where the patch line "
            "has 'é' (read_file shows U+FFFD, \ufffd, in their place); a patch line cannot match them. No changes "
            "were written. Let the hunk's lines stop before that line or start after it, or change it with "
            'edit_file or write_file.',
        ),
    ],
)
async def test_a_miss_names_the_most_similar_line_and_how_it_differs(
    root: Path, data: bytes, line: str, closest: str
) -> None:
    (root / 'f.txt').write_bytes(data)
    result, _ = await apply(root, patch('*** Update File: f.txt', f'-{line}', '+new'))
    assert result == RETRY + (
        f"Hunk 1 of Update File 'f.txt' (patch line 3) does not match the file: its line 1 {line!r} was not "
        f'found. {closest}'
    )
    assert (root / 'f.txt').read_bytes() == data


@pytest.mark.parametrize(
    ('text', 'message', 'options'),
    [
        (
            patch('*** Add File: ok.txt', '+x', '*** Add File: ../escape.txt', '+x'),
            "Add File '../escape.txt' (patch line 4): Path '../escape.txt' resolves outside the root directory. "
            'No changes were written.',
            {},
        ),
        (
            patch('*** Add File: ok.txt', '+x', '*** Update File: secret/key.txt', '-a', '+b'),
            "Update File 'secret/key.txt' (patch line 4): Path 'secret/key.txt' is denied by pattern 'secret'. "
            'No changes were written.',
            {'denied_patterns': ['secret']},
        ),
        (
            patch('*** Add File: ok.txt', '+x', '*** Delete File: .env'),
            "Delete File '.env' (patch line 4): Path '.env' is protected (matches '.env'). No changes were written.",
            {},
        ),
        (
            patch('*** Add File: README.md', '+x'),
            "Add File 'README.md' (patch line 2): the file already exists. Use Update File to change it, or "
            'Delete File before Add File to replace it. No changes were written.',
            {},
        ),
        (
            patch('*** Update File: nope.py', '-a', '+b'),
            "Update File 'nope.py' (patch line 2): File not found: nope.py. No changes were written.",
            {},
        ),
        (
            patch('*** Update File: README.md', '*** Move to: src/app.py'),
            "Update File 'README.md' (patch line 2): Move to 'src/app.py': the file already exists. Delete it "
            'first, or move to another path. No changes were written.',
            {},
        ),
    ],
)
async def test_refused_paths_write_nothing(root: Path, text: str, message: str, options: dict[str, Any]) -> None:
    (root / 'secret').mkdir()
    (root / 'secret' / 'key.txt').write_text('a\n')
    (root / '.env').write_text('A=1\n')
    before = snapshot(root)
    result, _ = await apply(root, text, **options)
    assert result == RETRY + message
    assert snapshot(root) == before


async def test_a_veto_of_one_file_writes_none(root: Path) -> None:
    before = snapshot(root)

    def veto(ctx: Any, event: FileChangeRequestEvent) -> None:
        if event.path == 'src/app.py':
            event.cancel('not this one')

    text = patch('*** Add File: a.txt', '+x', '*** Update File: src/app.py', '-import os', '+import sys')
    t = await run_tools(
        [FileSystem(root_dir=root, tools=TOOLS)],
        [('apply_patch', {'input': text})],
        listeners=[(FileChangeRequestEvent, veto)],
    )
    assert t.results == ["[Patch not applied, no file changed: 'src/app.py' was not edited: not this one]"]
    assert snapshot(root) == before
    assert [e.path for e in t.of(FileChangeRequestEvent)] == ['a.txt', 'src/app.py']
    assert t.of(FileWrittenEvent) == []


async def test_read_before_write_needs_every_changed_file_read(root: Path) -> None:
    text = patch('*** Add File: fresh.txt', '+x', '*** Update File: README.md', '-# Demo', '+# Demo!')
    t = await run_tools(
        [FileSystem(root_dir=root, tools=TOOLS), ReadBeforeWrite()],
        [
            ('apply_patch', {'input': text}),
            ('read_file', {'path': 'README.md'}),
            ('apply_patch', {'input': text}),
            ('apply_patch', {'input': patch('*** Update File: README.md', '-# Demo!', '+# Demo?')}),
        ],
    )
    assert t.results[0] == RETRY + (
        "'README.md' exists and has not been read in this run: read it first (read_file), then retry. "
        'No changes were written.'
    )
    assert t.results[2].startswith('Applied patch to 2 files:\nA fresh.txt')
    assert t.results[3].startswith('Applied patch to 1 file:\nM README.md')  # its own write counts as read
    assert (root / 'README.md').read_text() == '# Demo?\n'


async def test_on_a_local_workspace_contract(root: Path) -> None:
    text = patch('*** Update File: src/app.py', '-import os', '+import sys', '*** Add File: n/new.txt', '+hi')
    t = await run_tools([LocalWorkspace(root), FileSystem(tools=TOOLS)], [('apply_patch', {'input': text})])
    app = sha((root / 'src' / 'app.py').read_bytes())
    assert t.results[0] == (f'Applied patch to 2 files:\nM src/app.py [hash:{app}]\nA n/new.txt [hash:{H[5]}]')
    assert (root / 'src' / 'app.py').read_text().startswith('import sys\n')
    assert [e.root_dir for e in t.of(FileChangeRequestEvent)] == [str(root)] * 2


async def test_on_a_workspace_reached_through_the_protocol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    backend = MemoryWorkspace({'a.txt': 'one\r\ntwo\r\n', 'gone/last.txt': 'x\n', 'keep.txt': 'k\n'})
    text = patch(
        '*** Update File: a.txt',
        '-two',
        '+TWO',
        '*** Delete File: gone/last.txt',
        '*** Add File: deep/new/f.txt',
        '+hi',
        '*** Update File: keep.txt',
        '*** Move to: moved/keep.txt',
    )
    t = await run_tools([FileSystem(tools=TOOLS)], [('apply_patch', {'input': text})], workspace=Workspace(backend))
    assert t.results == [
        'Applied patch to 4 files:\n'
        f'M a.txt [hash:{H[6]}]\n'
        'D gone/last.txt\n'
        f'A deep/new/f.txt [hash:{H[5]}]\n'
        f'R keep.txt -> moved/keep.txt [hash:{H[7]}]'
    ]
    assert backend.files == {
        '/ws/a.txt': b'one\r\nTWO\r\n',
        '/ws/deep/new/f.txt': b'hi\n',
        '/ws/moved/keep.txt': b'k\n',
    }
    assert '/ws/gone' in backend.dirs
    assert [e.path for e in t.of(FileChangeRequestEvent)] == [
        'a.txt',
        'deep/new/f.txt',
        'gone/last.txt',
        'keep.txt',
        'moved/keep.txt',
    ]
    assert list(tmp_path.iterdir()) == []  # nothing on the host
    # A miss there writes nothing either.
    before = dict(backend.files)
    t = await run_tools(
        [FileSystem(tools=TOOLS)],
        [('apply_patch', {'input': patch('*** Add File: z.txt', '+z', '*** Update File: a.txt', '-nope', '+x')})],
        workspace=Workspace(backend),
    )
    assert t.results[0].startswith(RETRY + "Hunk 1 of Update File 'a.txt' (patch line 5) does not match the file")
    assert backend.files == before


def test_the_next_start_finishes_a_commit_a_kill_interrupted(root: Path) -> None:
    # What a commit killed between its journal and its renames leaves (journal.rs's format).
    tx = root / '.pydantic-ai-harness' / 'patch' / '1-1-1'
    tx.mkdir(parents=True)
    (tx / 'lock').write_bytes(b'')
    (tx / 'new-0').write_bytes(b'# New\n')
    (tx / 'old-0').write_bytes(b'# Demo\n')
    (tx / 'new-1').write_bytes(b'made\n')
    hexed = {name: name.encode().hex() for name in ('README.md', 'made/f.txt', 'docs/old.md', 'made')}
    new0, new1 = (hashlib.sha256(data).hexdigest() for data in (b'# New\n', b'made\n'))
    (tx / 'journal').write_text(
        'pydantic-ai-harness patch journal 2\n'
        f'f 0 {hexed["README.md"]} {new0}\nf 1 {hexed["made/f.txt"]} {new1}\n'
        f'f 2 {hexed["docs/old.md"]} -\nd {hexed["made"]}\nend\n'
    )
    # And one killed while staging (no journal): dropped, nothing in the tree changes for it.
    early = root / '.pydantic-ai-harness' / 'patch' / '1-1-2'
    early.mkdir()
    (early / 'new-0').write_bytes(b'never\n')
    FileSystem(root_dir=root, tools=TOOLS).get_toolset()
    assert (root / 'README.md').read_bytes() == b'# New\n'
    assert (root / 'made' / 'f.txt').read_bytes() == b'made\n'
    assert not (root / 'docs' / 'old.md').exists()
    assert list((root / '.pydantic-ai-harness' / 'patch').iterdir()) == []


# --- approvals (`require_approval`, tests/approval_resume.py) -----------------------------------


async def ask(root: Path, text: str, **options: Any) -> tuple[DeferredToolRequests, list[ModelMessage]]:
    agent = Agent(
        capabilities=[FileSystem(root_dir=root, tools=TOOLS, **options)],
        output_type=[str, DeferredToolRequests],
        retries=10,
    )
    result = await agent.run('go', model=scripted_model([('apply_patch', {'input': text})], Transcript()))
    assert isinstance(result.output, DeferredToolRequests), result.output
    return result.output, result.all_messages()


def resume(root: Path, history: list[ModelMessage], decision: dict[str, Any]) -> list[list[str]]:
    spec = {
        'capability': 'file_system',
        'root_dir': str(root),
        'options': {'tools': TOOLS, 'require_approval': ['apply_patch']},
        'history': ModelMessagesTypeAdapter.dump_json(history).decode(),
        'decisions': {'call-1': decision},
    }
    return resume_in_new_process(spec)


APPROVED = patch('*** Update File: README.md', '-# Demo', '+# Approved', '*** Add File: new.txt', '+n')


async def test_one_approval_for_the_whole_patch_then_a_resume_in_a_new_process(root: Path) -> None:
    before = snapshot(root)
    requests, history = await ask(root, APPROVED, require_approval=True)
    assert [c.tool_call_id for c in requests.approvals] == ['call-1']
    metadata = requests.metadata['call-1']
    assert len(metadata.pop('arguments_digest')) == 64
    assert metadata == {
        'tool_name': 'apply_patch',
        'operation': 'apply_patch',
        'root_dir': str(root.resolve()),
        'files': [
            {
                'operation': 'edit',
                'path': 'README.md',
                'diff': '--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# Demo\n+# Approved',
                'truncated': False,
                'content_hash': sha(b'# Demo\n'),
            },
            {
                'operation': 'write',
                'path': 'new.txt',
                'diff': '--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+n',
                'truncated': False,
                'content_hash': None,
            },
        ],
    }
    assert snapshot(root) == before  # nothing written before approval
    results = resume(root, history, {'approve': True})
    assert results == [
        ['return', f'Applied patch to 2 files:\nM README.md [hash:{H_APPROVED}]\nA new.txt [hash:{H_N}]']
    ]
    assert (root / 'README.md').read_text() == '# Approved\n'
    assert (root / 'new.txt').read_text() == 'n\n'


async def test_an_approved_patch_whose_file_changed_since_writes_nothing(root: Path) -> None:
    _, history = await ask(root, APPROVED, require_approval=['apply_patch'])
    (root / 'README.md').write_text('# Demo\n\nSomeone else wrote this.\n')  # the patch still applies
    results = resume(root, history, {'approve': True})
    assert results == [['retry', PATCH_STALE]]
    assert (root / 'README.md').read_text() == '# Demo\n\nSomeone else wrote this.\n'
    assert not (root / 'new.txt').exists()


async def test_a_callable_is_asked_per_file_and_fails_closed(root: Path) -> None:
    seen: list[tuple[str, str]] = []

    def only_new_files(change: PlannedChange) -> bool:
        seen.append((change.operation, change.path))
        return change.content_hash is None

    requests, _ = await ask(root, APPROVED, require_approval=only_new_files)
    assert seen == [('edit', 'README.md'), ('write', 'new.txt')]
    assert 'approval_check_error' not in requests.metadata['call-1']

    def broken(change: PlannedChange) -> bool:
        raise KeyError('oops')

    requests, _ = await ask(root, APPROVED, require_approval=broken)
    assert requests.metadata['call-1']['approval_check_error'] == "KeyError: 'oops'"
    assert (root / 'README.md').read_text() == '# Demo\n'
    assert not (root / 'new.txt').exists()

    result = await run_tools(
        [FileSystem(root_dir=root, tools=TOOLS, require_approval=lambda change: False)],
        [('apply_patch', {'input': APPROVED})],
    )
    assert result.results == [f'Applied patch to 2 files:\nM README.md [hash:{H_APPROVED}]\nA new.txt [hash:{H_N}]']


async def test_two_conversations_reusing_a_call_id_keep_their_own_patches(root: Path) -> None:
    # Both scripted conversations name their call `call-1`, as local models reuse `call_0`: each
    # request keeps its own record, and each resume commits exactly its own patch, with no note.
    _, first = await ask(root, APPROVED, require_approval=True)
    _, second = await ask(root, patch('*** Add File: other.txt', '+n'), require_approval=True)
    assert len(list((root / '.pydantic-ai-harness' / 'approvals').iterdir())) == 2  # both pending
    assert resume(root, first, {'approve': True}) == [
        ['return', f'Applied patch to 2 files:\nM README.md [hash:{H_APPROVED}]\nA new.txt [hash:{H_N}]']
    ]
    assert resume(root, second, {'approve': True}) == [
        ['return', f'Applied patch to 1 file:\nA other.txt [hash:{H_N}]']
    ]
    assert [(root / name).read_text() for name in ('README.md', 'new.txt', 'other.txt')] == [
        '# Approved\n',
        'n\n',
        'n\n',
    ]
    assert list((root / '.pydantic-ai-harness' / 'approvals').iterdir()) == []


async def test_a_file_changed_while_the_listeners_are_asked_stops_the_whole_patch(root: Path) -> None:
    def meddle(ctx: Any, event: FileChangeRequestEvent) -> None:
        if event.path == 'src/app.py':
            (root / 'README.md').write_text('# Changed meanwhile\n')

    text = patch(
        '*** Update File: README.md',
        '-# Demo',
        '+# Patched',
        '*** Update File: src/app.py',
        '-import os',
        '+import sys',
    )
    t = await run_tools(
        [FileSystem(root_dir=root, tools=TOOLS)],
        [('apply_patch', {'input': text})],
        listeners=[(FileChangeRequestEvent, meddle)],
    )
    assert t.results == [
        RETRY
        + f"Update File 'README.md' (patch line 2): Conflict: file 'README.md' has changed (expected hash:{H_DEMO}, got "
        f'hash:{H_CHANGED}). Re-read the file and retry. No changes were written.'
    ]
    assert (root / 'README.md').read_text() == '# Changed meanwhile\n'
    assert (root / 'src' / 'app.py').read_text().startswith('import os\n')
    assert t.of(FileWrittenEvent) == []


async def test_a_direct_call_applies_without_events(root: Path) -> None:
    toolset = FileSystem(root_dir=root, tools=TOOLS).get_toolset()
    text = patch('*** Add File: d.txt', '+direct')
    assert await toolset.apply_patch(text) == f'Applied patch to 1 file:\nA d.txt [hash:{H_DIRECT}]'
    assert (root / 'd.txt').read_text() == 'direct\n'


# --- file modes ---------------------------------------------------------------------------------


async def test_a_move_keeps_the_files_mode(tmp_path: Path) -> None:
    (tmp_path / 'x.sh').write_bytes(b'#!/bin/sh\necho hi\n')
    (tmp_path / 'x.sh').chmod(0o755)
    (tmp_path / 'y.sh').write_bytes(b'#!/bin/sh\n')
    (tmp_path / 'y.sh').chmod(0o700)
    text = patch(
        '*** Update File: x.sh',
        '*** Move to: bin/x.sh',
        '*** Update File: y.sh',
        '*** Move to: bin/y.sh',
        '@@',
        '-#!/bin/sh',
        '+#!/bin/bash',
        '*** Add File: bin/new.txt',
        '+n',
    )
    t = await run_tools([FileSystem(root_dir=tmp_path, tools=TOOLS)], [('apply_patch', {'input': text})])
    assert t.results[0].startswith('Applied patch to 3 files:'), t.results
    assert (tmp_path / 'bin' / 'x.sh').stat().st_mode & 0o777 == 0o755
    assert (tmp_path / 'bin' / 'y.sh').stat().st_mode & 0o777 == 0o700
    # An added file gets the mode write_file gives a new file.
    await run_tools(
        [FileSystem(root_dir=tmp_path, tools=['write_file'])], [('write_file', {'path': 'w2.txt', 'content': 'n\n'})]
    )
    assert (tmp_path / 'bin' / 'new.txt').stat().st_mode & 0o777 == (tmp_path / 'w2.txt').stat().st_mode & 0o777


async def test_a_path_leading_elsewhere_after_the_turns_were_taken_is_a_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turns are taken on each path's resolved key before the plan; a link swapped in between (here
    from inside the plan call) makes the planned file another one than the turn held: a retry, nothing
    written."""
    for d in ('real', 'other'):
        (tmp_path / d).mkdir()
        (tmp_path / d / 'f.txt').write_text(f'{d}\n')
    (tmp_path / 'link').symlink_to('real')
    original = LocalEngine.plan_patch

    async def swapped_then_planned(self: LocalEngine, input: str) -> Any:
        (tmp_path / 'link').unlink()
        (tmp_path / 'link').symlink_to('other')
        return await original(self, input)

    monkeypatch.setattr(LocalEngine, 'plan_patch', swapped_then_planned)
    result, t = await apply(tmp_path, patch('*** Update File: link/f.txt', '-other', '+changed'))
    assert result == RETRY + "Path 'link/f.txt' was replaced while the patch was planned. Retry."
    assert (tmp_path / 'real' / 'f.txt').read_text() == 'real\n'
    assert (tmp_path / 'other' / 'f.txt').read_text() == 'other\n'
    assert t.of(FileChangeRequestEvent) == []
