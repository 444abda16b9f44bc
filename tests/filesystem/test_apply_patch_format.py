"""apply_patch (issue 22): the parts of the issue's format list `test_apply_patch.py` leaves open.

The last file of a directory deleted (the directory stays, as Codex leaves it); `@@` anchors repeated
to narrow, and one not found; `*** End of File` choosing the end over an earlier equal block; a context
line whose text starts with `***`; symbolic links leading out of the root for Update, Add and Move to;
and a directory swapped for a link out of the root between the plan and the commit (from a
`FileChangeRequestEvent` listener, which runs after every file is planned and before any write).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai_harness_rs.filesystem import FileChangeRequestEvent, FileSystem

from tests.filesystem.conftest import beyond_reference, sha
from tests.scripted import RETRY, Transcript, run_tools

pytestmark = beyond_reference('apply_patch is issue 22, beyond the references')

CLASSES = 'class A:\n    def f(self):\n        return 1\n\n\nclass B:\n    def f(self):\n        return 1\n'


def patch(*lines: str) -> str:
    return '\n'.join(['*** Begin Patch', *lines, '*** End Patch'])


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and directory below `root` (directories and links as None), the journal's aside."""
    return {
        p.relative_to(root).as_posix(): None if p.is_dir() or p.is_symlink() else p.read_bytes()
        for p in sorted(root.rglob('*'))
        if '.pydantic-ai-harness' not in p.parts
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / 'root'
    (root / 'lib').mkdir(parents=True)
    (root / 'lib' / 'only.txt').write_text('x\n')
    (root / 'm.py').write_text(CLASSES)
    outside = tmp_path / 'outside'  # (a sibling of the root)
    outside.mkdir()
    (outside / 't.txt').write_text('outside\n')
    os.symlink(outside, root / 'out')
    os.symlink(outside / 't.txt', root / 'outlink.txt')
    return root


async def apply(root: Path, text: str, listeners: Any = (), **options: Any) -> tuple[str, Transcript]:
    t = await run_tools(
        [FileSystem(root_dir=root, tools=['read_file', 'apply_patch'], **options)],
        [('apply_patch', {'input': text})],
        listeners=listeners,
    )
    return t.results[0], t


async def test_deleting_the_last_file_of_a_directory_leaves_the_directory(root: Path) -> None:
    result, _ = await apply(root, patch('*** Delete File: lib/only.txt'))
    assert result == 'Applied patch to 1 file:\nD lib/only.txt'
    assert (root / 'lib').is_dir() and os.listdir(root / 'lib') == []


async def test_an_anchor_not_found_names_the_hunk_and_writes_nothing(root: Path) -> None:
    before = snapshot(root)
    result, t = await apply(
        root, patch('*** Update File: m.py', '@@ class C:', '-        return 1', '+        return 2')
    )
    assert result == RETRY + (
        "Hunk 1 of Update File 'm.py' (patch line 3): its '@@ class C:' line was not found. An '@@' line names a "
        "line of the file (leading and trailing whitespace aside), found before the hunk's lines. No changes were written."
    )
    assert snapshot(root) == before and t.events == []


async def test_two_top_level_anchors_narrow_in_turn(root: Path) -> None:
    (root / 'm.py').write_text(CLASSES + '\n\nclass C:\n    pass\n\n\ndef g():\n    return 1\n')
    text = patch('*** Update File: m.py', '@@ class B:', '@@ def g():', '-    return 1', '+    return 2')
    result, _ = await apply(root, text)
    new = CLASSES + '\n\nclass C:\n    pass\n\n\ndef g():\n    return 2\n'
    assert result == f'Applied patch to 1 file:\nM m.py [hash:{sha(new.encode())}]'
    assert (root / 'm.py').read_text() == new


async def test_an_anchor_names_an_indented_line(root: Path) -> None:
    text = patch('*** Update File: m.py', '@@ class B:', '@@ def f(self):', '-        return 1', '+        return 2')
    result, _ = await apply(root, text)
    assert not result.startswith(RETRY), result
    assert (root / 'm.py').read_text() == CLASSES[: -len('1\n')] + '2\n'


async def test_end_of_file_takes_the_block_at_the_end_over_an_earlier_equal_one(root: Path) -> None:
    (root / 'rep.txt').write_text('end\nx\nend\nx\n')
    result, _ = await apply(root, patch('*** Update File: rep.txt', ' end', '-x', '+y', '*** End of File'))
    new = b'end\nx\nend\ny\n'
    assert result == f'Applied patch to 1 file:\nM rep.txt [hash:{sha(new)}]'
    assert (root / 'rep.txt').read_text() == 'end\nx\nend\ny\n'
    result, _ = await apply(root, patch('*** Update File: rep.txt', ' end', '-x', '+z'))  # without: the first
    assert (root / 'rep.txt').read_text() == 'end\nz\nend\ny\n'


async def test_a_context_line_whose_text_starts_with_stars_is_context(root: Path) -> None:
    (root / 'notes.md').write_text('title\n    *** not a header\nbody\n')
    result, _ = await apply(
        root, patch('*** Update File: notes.md', ' title', '     *** not a header', '-body', '+BODY')
    )
    assert not result.startswith(RETRY), result
    assert (root / 'notes.md').read_text() == 'title\n    *** not a header\nBODY\n'


@pytest.mark.parametrize(
    ('text', 'message'),
    [
        (
            patch('*** Update File: outlink.txt', '-outside', '+changed'),
            "Update File 'outlink.txt' (patch line 4): Path 'outlink.txt' resolves outside the root directory. "
            'No changes were written.',
        ),
        (
            patch('*** Add File: out/new.txt', '+x'),
            "Add File 'out/new.txt' (patch line 4): Path 'out/new.txt' resolves outside the root directory. "
            'No changes were written.',
        ),
        (
            patch('*** Update File: m.py', '*** Move to: out/m.py'),
            "Update File 'm.py' (patch line 4): Move to 'out/m.py': Path 'out/m.py' resolves outside the root "
            'directory. No changes were written.',
        ),
        (
            patch('*** Update File: m.py', '*** Move to: ../m.py'),
            "Update File 'm.py' (patch line 4): Move to '../m.py': Path '../m.py' resolves outside the root "
            'directory. No changes were written.',
        ),
        (
            patch('*** Update File: m.py', '*** Move to: .env'),
            "Update File 'm.py' (patch line 4): Move to '.env': Path '.env' is protected (matches '.env'). "
            'No changes were written.',
        ),
        (
            patch('*** Delete File: nope.txt'),
            "Delete File 'nope.txt' (patch line 4): File not found: nope.txt. No changes were written.",
        ),
    ],
)
async def test_links_out_of_the_root_and_refused_targets_write_nothing(root: Path, text: str, message: str) -> None:
    before, outside = snapshot(root), snapshot(root.parent / 'outside')
    result, t = await apply(root, patch('*** Add File: first.txt', '+x', *text.splitlines()[1:-1]))
    assert result == RETRY + message
    assert (snapshot(root), snapshot(root.parent / 'outside')) == (before, outside)
    assert t.events == []


async def test_a_directory_swapped_for_a_link_out_of_the_root_after_the_plan_writes_nothing(root: Path) -> None:
    """The listener runs between the plan and the commit: it moves `lib/` away and puts a link to a
    directory outside the root in its place, holding a file of the same name and content. The commit
    opens beneath the root with links refused, so it writes neither there nor anywhere."""
    outside = root.parent / 'outside'

    def swap(ctx: Any, event: FileChangeRequestEvent) -> None:
        if (root / 'lib').is_symlink():
            return
        shutil.move(root / 'lib', root.parent / 'lib-moved')
        os.symlink(outside, root / 'lib')
        (outside / 'only.txt').write_text('x\n')

    result, t = await apply(
        root,
        patch('*** Add File: new/first.txt', '+x', '*** Update File: lib/only.txt', '-x', '+pwned'),
        listeners=[(FileChangeRequestEvent, swap)],
    )
    assert result == RETRY + (
        "Update File 'lib/only.txt' (patch line 4): the path changed since the patch was planned: Path 'lib/only.txt' resolves "
        'outside the root directory. No changes were written.'
    )
    assert (outside / 'only.txt').read_text() == 'x\n'
    assert (root.parent / 'lib-moved' / 'only.txt').read_text() == 'x\n'
    assert not (root / 'new').exists()
    assert [type(e).__name__ for e in t.events] == ['FileChangeRequestEvent'] * 2


async def test_a_one_file_update_commits_without_the_journal(root: Path) -> None:
    """One existing file updated (no move): the single-file crash-safe replace `edit_file` uses, so no
    `.pydantic-ai-harness/` directory is made; a file with another hard link goes through the journal,
    which writes it in place, as `edit_file` does: its other name sees the change."""
    result, _ = await apply(root, patch('*** Update File: lib/only.txt', '-x', '+y'))
    new = b'y\n'
    assert result == f'Applied patch to 1 file:\nM lib/only.txt [hash:{sha(new)}]'
    assert (root / 'lib' / 'only.txt').read_text() == 'y\n'
    assert not (root / '.pydantic-ai-harness').exists()
    os.link(root / 'lib' / 'only.txt', root / 'twin.txt')
    result, _ = await apply(root, patch('*** Update File: lib/only.txt', '-y', '+z'))
    assert (root / 'lib' / 'only.txt').read_text() == 'z\n'
    assert (root / 'twin.txt').read_text() == 'z\n'
    assert (root / 'twin.txt').stat().st_ino == (root / 'lib' / 'only.txt').stat().st_ino
    assert (root / '.pydantic-ai-harness' / 'patch').is_dir()


@pytest.mark.parametrize(
    ('lines', 'message'),
    [
        (
            ['*** Add File: a\0b.txt', '+x'],
            'Invalid patch: line 2: the path of Add File holds a NUL character (\\0); a path may not contain NUL. '
            'No changes were written.',
        ),
        (
            ['*** Update File: m.py', '@@ class B:', ' class B:', '+    pass'],
            "Hunk 1 of Update File 'm.py' (patch line 3) does not match the file after line 6: its lines start at "
            "line 6 of the file, not after the line its '@@' line names (line 6). An '@@' line names a line above "
            "the hunk's lines, not one of them: drop it, or name a line above them. No changes were written.",
        ),
        (
            ['*** Update File: m.py', '@@', '-class B:', '+class C:', '@@', '-class A:', '+class Z:'],
            "Hunk 2 of Update File 'm.py' (patch line 6) does not match the file after line 6: its lines start at "
            "line 1 of the file, before the previous hunk's end (line 6). Hunks are applied in file order: put this "
            'hunk before the one that comes later in the file, or join them. No changes were written.',
        ),
        (
            ['*** Update File: latin.py', '-caf\ufffd = 1', '+cafe = 1'],
            "Hunk 1 of Update File 'latin.py' (patch line 3) does not match the file: its line 1 'caf\ufffd = 1' "
            "was not found. Closest: line 1 of the file, 'caf\ufffd = 1', which holds bytes that are not UTF-8 "
            'where the patch line has U+FFFD (\ufffd, what read_file shows in their place); a patch line cannot '
            "match them. No changes were written. Let the hunk's lines stop before that line or start after it, "
            'or change it with edit_file or write_file.',
        ),
        (
            ['*** Add File: n.txt', '+a', '  *** Update File: m.py', '+b'],
            "Invalid patch: line 4: every line of Add File 'n.txt' must start with '+', got "
            '"  *** Update File: m.py". A header that ends the file\'s lines starts at column 0. '
            'No changes were written.',
        ),
    ],
)
async def test_misses_say_what_is_wrong(root: Path, lines: list[str], message: str) -> None:
    (root / 'latin.py').write_bytes(b'caf\xe9 = 1\n')
    before = snapshot(root)
    result, t = await apply(root, patch(*lines))
    assert result == RETRY + message
    assert snapshot(root) == before and t.events == []


async def test_unified_diff_line_ranges_are_not_an_anchor(root: Path) -> None:
    result, _ = await apply(
        root,
        patch(
            '*** Update File: m.py',
            '@@ -6,2 +6,2 @@',
            ' class B:',
            '     def f(self):',
            '-        return 1',
            '+        return 2',
        ),
    )
    assert not result.startswith(RETRY), result
    assert (root / 'm.py').read_text() == CLASSES.replace('return 1\n', 'return 2\n').replace('return 2', 'return 1', 1)
    # With git's section heading after the ranges, the heading is the anchor.
    result, _ = await apply(
        root, patch('*** Update File: m.py', '@@ -2,2 +2,2 @@ class A:', '-        return 1', '+        return 3')
    )
    assert not result.startswith(RETRY), result
    assert (root / 'm.py').read_text() == CLASSES.replace('return 1', 'return 3', 1).replace('return 1', 'return 2')
