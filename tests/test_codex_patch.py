"""The corpus test's converter (`tests/codex_patch.py`): git commits of a small repository made here, as
exact Codex patches; what it leaves out, and why; anchors where git's context would be found too early."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.codex_patch import CORRUPTION, apply_model, commit_patch, corrupted, git


class Repo:
    """A git repository in a temporary directory, committed to one tree at a time."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()
        git(root, 'init', '-q')

    def commit(self, files: dict[str, bytes | None], *, links: dict[str, str] | None = None) -> str:
        """Writes `files` (None: removed), makes `links` symbolic links, commits all; returns the commit."""
        for path, data in files.items():
            target = self.root / path
            if data is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        for path, to in (links or {}).items():
            os.symlink(to, self.root / path)
        git(self.root, 'add', '-A')
        env = {
            **os.environ,
            'GIT_AUTHOR_NAME': 't',
            'GIT_AUTHOR_EMAIL': 't@t',
            'GIT_COMMITTER_NAME': 't',
            'GIT_COMMITTER_EMAIL': 't@t',
        }
        subprocess.run(['git', '-C', str(self.root), 'commit', '-q', '-m', 'c'], check=True, env=env)
        return git(self.root, 'rev-parse', 'HEAD').decode().strip()

    def files(self, commit: str) -> dict[str, bytes]:
        paths = git(self.root, 'ls-tree', '-r', '-z', '--name-only', commit).decode().split('\0')[:-1]
        return {p: git(self.root, 'show', f'{commit}:{p}') for p in paths}


def numbered(n: int, prefix: str = 'line') -> bytes:
    return ''.join(f'{prefix} {i}\n' for i in range(1, n + 1)).encode()


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / 'repo')


def test_every_operation_as_codex_writes_it(repo: Repo) -> None:
    body = numbered(40, 'moved')
    parent = repo.commit(
        {'a.txt': numbered(20), 'old/b.txt': body, 'gone.txt': b'x\n', 'same/c.txt': numbered(30, 'c')}
    )
    a = numbered(20).replace(b'line 2\n', b'line two\n').replace(b'line 20\n', b'line 20\nline 21\n')
    child = repo.commit(
        {
            'a.txt': a,
            'old/b.txt': None,
            'new/dir/b.txt': body.replace(b'moved 30\n', b'moved thirty\n'),
            'gone.txt': None,
            'fresh/deep/d.txt': b'one\n\ntwo\n',
            'fresh/empty.txt': b'',
            'same/c.txt': None,
            'other/c.txt': numbered(30, 'c'),
        }
    )
    patch = commit_patch(repo.root, parent, child)
    assert patch.skipped == {}
    assert patch.text == (
        '*** Begin Patch\n'
        '*** Update File: a.txt\n'
        '@@ -1,5 +1,5 @@\n line 1\n-line 2\n+line two\n line 3\n line 4\n line 5\n'
        '@@ -18,3 +18,4 @@\n line 18\n line 19\n line 20\n+line 21\n*** End of File\n'
        '*** Add File: fresh/deep/d.txt\n+one\n+\n+two\n'
        '*** Add File: fresh/empty.txt\n'
        '*** Delete File: gone.txt\n'
        '*** Update File: old/b.txt\n*** Move to: new/dir/b.txt\n'
        '@@ -27,7 +27,7 @@\n moved 27\n moved 28\n moved 29\n-moved 30\n+moved thirty\n moved 31\n moved 32\n moved 33\n'
        '*** Update File: same/c.txt\n*** Move to: other/c.txt\n'
        '*** End Patch\n'
    )
    assert apply_model(repo.files(parent), patch) == repo.files(child)


def test_what_the_format_cannot_carry_is_left_out_and_named(repo: Repo) -> None:
    parent = repo.commit(
        {'bin.dat': b'\x00\x01\n', 'tail.txt': b'a\nb', 'mode.sh': b'echo\n', 'ok.txt': b'1\n', 'gone.dat': b'\x00'}
    )
    (repo.root / 'mode.sh').chmod(0o755)
    child = repo.commit(
        {
            'bin.dat': b'\x00\x02\n',
            'tail.txt': b'a\nc',
            'latin.txt': 'caf\xe9\n'.encode('latin-1'),
            'ok.txt': b'2\n',
            'gone.dat': None,
        },
        links={'link': 'ok.txt'},
    )
    patch = commit_patch(repo.root, parent, child)
    assert patch.skipped == {
        'bin.dat': 'binary',
        'latin.txt': 'not UTF-8',
        'link': 'a symbolic link or submodule',
        'mode.sh': 'mode change only',
        'tail.txt': 'no newline at end of file',
    }
    # A deleted binary file is still a deletion: it carries no content.
    assert patch.text == (
        '*** Begin Patch\n*** Delete File: gone.dat\n*** Update File: ok.txt\n@@ -1,1 +1,1 @@\n-1\n+2\n*** End of File\n*** End Patch\n'
    )


def test_an_ambiguous_hunk_is_anchored_on_the_nearest_line_found_first_at_its_place(repo: Repo) -> None:
    block = b'    a\n    b\n    c\n    d\n    e\n    f\n    g\n'
    old = b'def first():\n' + block + b'def second():\n' + block + b'end\n'
    parent = repo.commit({'m.py': old})
    new = old.replace(b'def second():\n    a\n    b\n    c\n    d\n', b'def second():\n    a\n    b\n    c\n    D\n')
    child = repo.commit({'m.py': new})
    patch = commit_patch(repo.root, parent, child)
    [hunk] = patch.changes[0].hunks
    # git's context (`a b c` / `e f g`) also sits under `first`, found first from the top: the anchor
    # `def second():` (the nearest line above without surrounding whitespace) puts it in place.
    assert (hunk.anchor, hunk.lines) == (
        'def second():',
        ['     a', '     b', '     c', '-    d', '+    D', '     e', '     f', '     g'],
    )
    assert '@@ def second():\n' in patch.text
    assert apply_model(repo.files(parent), patch) == repo.files(child)


def test_without_a_usable_anchor_the_hunk_takes_more_context(repo: Repo) -> None:
    block = b'    a\n    b\n    c\n    d\n    e\n    f\n    g\n'
    old = b'  first\n' + block + b'  second\n' + block + b'end\n'  # (every line above has leading space)
    parent = repo.commit({'m.py': old})
    child = repo.commit(
        {'m.py': old.replace(b'  second\n    a\n    b\n    c\n    d\n', b'  second\n    a\n    b\n    c\n    D\n')}
    )
    patch = commit_patch(repo.root, parent, child)
    [hunk] = patch.changes[0].hunks
    assert hunk.anchor is None
    assert hunk.lines[:2] == ['   second', '     a']  # widened by the line above: now found first in place
    assert apply_model(repo.files(parent), patch) == repo.files(child)


def test_corrupted_changes_one_context_line_of_the_last_hunk_with_one(repo: Repo) -> None:
    parent = repo.commit({'a.txt': numbered(20), 'b.txt': numbered(20)})
    child = repo.commit(
        {
            'a.txt': numbered(20).replace(b'line 10\n', b'ten\n'),
            'b.txt': numbered(20).replace(b'line 3\n', b'three\n').replace(b'line 15\n', b'fifteen\n'),
            'c.txt': b'new\n',
        }
    )
    patch = commit_patch(repo.root, parent, child)
    result = corrupted(patch)
    assert result is not None
    assert (result.path, result.hunk, result.line_in_hunk, result.line) == ('b.txt', 2, 1, 'line 12' + CORRUPTION)
    changed = [(x, y) for x, y in zip(patch.text.splitlines(), result.patch.text.splitlines(), strict=True) if x != y]
    assert changed == [(' line 12', ' line 12' + CORRUPTION)]
    with pytest.raises(ValueError, match='b.txt hunk 2: not found'):
        apply_model(repo.files(parent), result.patch)


def test_a_patch_of_additions_only_has_nothing_to_corrupt(repo: Repo) -> None:
    parent = repo.commit({'a.txt': b'a\n'})
    child = repo.commit({'b.txt': b'b\n'})
    assert corrupted(commit_patch(repo.root, parent, child)) is None
