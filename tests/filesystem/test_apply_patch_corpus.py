"""apply_patch on real history (issue 22, "a corpus test of our own").

Commits of this repository's own history (`git diff -M -U3 parent child`, rewritten in Codex's format
by `tests/codex_patch.py`) are applied by the tool to the parent's tree and must give the child's tree
byte for byte; the same patches with one context line changed must be refused, naming the file and the
hunk, with the tree left byte for byte the parent's. The commits are a fixed choice from the oldest
on (every commit with a rename or a deletion, then every 12th), so a longer history does not change
them. A clone without that history (shallow, or no git) fails the test: it does not skip.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from functools import cache
from pathlib import Path

import pytest
from pydantic_ai_harness_rs import FileSystem
from pydantic_ai_harness_rs.filesystem import DEFAULT_TOOL_NAMES

from tests.codex_patch import CommitPatch, apply_model, commit_patch, corrupted, git
from tests.filesystem.conftest import beyond_reference, sha
from tests.scripted import RETRY, call

pytestmark = beyond_reference('apply_patch is issue 22, beyond the references')

REPO = Path(__file__).resolve().parents[2]
IGNORE = '.pydantic-ai-harness/.gitignore'
"""What a commit leaves in the journal directory: the file that keeps it out of git."""
COMMITS = 40
STRIDE = 12
"""After every commit with a rename or deletion, the commits at positions 0, 12, 24, ... (oldest first)
fill the corpus up to `COMMITS`."""


@cache
def corpus() -> tuple[str, ...]:
    """The corpus commits, oldest first (see the module docstring); fails if the history is missing."""
    try:
        shallow = git(REPO, 'rev-parse', '--is-shallow-repository').strip()
        log = git(REPO, 'log', '--reverse', '--no-merges', '-M', '--name-status', '--format=commit %H %P')
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.fail(f'the corpus test needs this repository with its git history: {e}')
    if shallow != b'false':
        pytest.fail('the corpus test needs the full git history (this clone is shallow: git fetch --unshallow)')
    commits: list[tuple[str, bool]] = []  # (commit, renames or deletes a file), oldest first, each with a parent
    for section in log.decode().split('commit ')[1:]:
        header, *changes = section.splitlines()
        commit, *parents = header.split()
        if parents:
            commits.append((commit, any(line[:1] in ('R', 'D') for line in changes)))
    moves = [c for c, moved in commits if moved]
    picked = moves[:COMMITS] + [c for i, (c, moved) in enumerate(commits) if i % STRIDE == 0 and not moved]
    if len(picked) < COMMITS:
        pytest.fail(f'the history holds {len(commits)} commits with a parent: too few for the corpus')
    order = {c: i for i, (c, _) in enumerate(commits)}
    return tuple(sorted(picked[:COMMITS], key=order.__getitem__))


def blob_id(data: bytes) -> str:
    """git's object id of a blob holding `data`."""
    return hashlib.sha1(b'blob %d\0' % len(data) + data).hexdigest()


def tree_of(commit: str) -> dict[str, str]:
    """Path -> blob id of every file of `commit`."""
    entries = git(REPO, 'ls-tree', '-r', '-z', commit).decode().split('\0')[:-1]
    return {path: meta.split()[2] for meta, path in (entry.split('\t', 1) for entry in entries)}


def on_disk(root: Path) -> dict[str, str]:
    """Path -> blob id of every file (or link) below `root` but `IGNORE`; nothing else may be in the
    tool's `.pydantic-ai-harness/` (a finished commit leaves no journal)."""
    out: dict[str, str] = {}
    for directory, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if (Path(directory) / d).is_symlink()]:
            path = Path(directory) / name
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            out[path.relative_to(root).as_posix()] = blob_id(data)
    leftovers = [p for p in out if p.startswith('.pydantic-ai-harness/')]
    assert set(leftovers) <= {IGNORE}, f'left behind by the tool: {leftovers}'
    return {p: blob for p, blob in out.items() if p != IGNORE}


def materialise(commit: str, root: Path) -> None:
    """The tree of `commit` written below `root` (created)."""
    root.mkdir()
    archive = subprocess.run(
        ['git', '-C', str(REPO), 'archive', '--format=tar', commit], capture_output=True, check=True
    )
    subprocess.run(['tar', '-x', '-C', str(root)], input=archive.stdout, check=True)


def expected_tree(child: str, parent_tree: dict[str, str], patch: CommitPatch) -> dict[str, str]:
    """The child's tree, but the parent's version of each file the patch could not carry."""
    out = tree_of(child)
    for path in patch.skipped:
        out.pop(path, None)
        if path in parent_tree:
            out[path] = parent_tree[path]
    return out


def expected_result(child: str, patch: CommitPatch) -> str:
    """What the tool answers: a line per file in the patch's order, with the new content's hash."""
    lines: list[str] = []
    for change in patch.changes:
        if change.operation == 'delete':
            lines.append(f'D {change.path}')
            continue
        path = change.move_to or change.path
        hash_ = f'[hash:{sha(git(REPO, "show", f"{child}:{path}"))}]'
        if change.operation == 'add':
            lines.append(f'A {path} {hash_}')
        elif change.move_to is not None:
            lines.append(f'R {change.path} -> {path} {hash_}')
        else:
            lines.append(f'M {path} {hash_}')
    return f'Applied patch to {len(lines)} file{"s" if len(lines) != 1 else ""}:\n' + '\n'.join(lines)


def capability(root: Path) -> FileSystem:
    # No read-only patterns: the history changes dotfiles such as `.gitignore` and `.ci/run`.
    return FileSystem(root_dir=root, tools=[*DEFAULT_TOOL_NAMES, 'apply_patch'], read_only_patterns=[])


def hunk_line(text: str, path: str, hunk: int) -> int:
    """The 1-based line of `text` (a patch) where hunk `hunk` of `*** Update File: path` starts."""
    lines = text.splitlines()
    start = lines.index(f'*** Update File: {path}')
    at = [i for i, line in enumerate(lines[start:], start) if line.startswith('@@')][hunk - 1]
    return at + 1


def test_the_corpus_is_fixed_and_varied() -> None:
    """40 commits, the oldest first, with renames, deletions, additions and edits among them."""
    commits = corpus()
    assert len(commits) == COMMITS == len(set(commits))
    kinds = {
        change.operation + ('+move' if change.move_to else '')
        for c in commits
        for change in commit_patch(REPO, c + '^', c).changes
    }
    assert kinds == {'add', 'delete', 'update', 'update+move'}


def test_the_converter_alone_turns_each_parent_into_its_child() -> None:
    """Apart from the tool: the converter's patches, applied by `apply_model`, give each child's changed
    files (so a failure of the tool test below is the tool's, not the converter's)."""
    for commit in corpus():
        patch = commit_patch(REPO, commit + '^', commit)
        before = {c.path: git(REPO, 'show', f'{commit}^:{c.path}') for c in patch.changes if c.operation != 'add'}
        after = apply_model(before, patch)
        for path, data in after.items():
            assert data == git(REPO, 'show', f'{commit}:{path}'), f'{commit} {path}'


@pytest.mark.parametrize('index', range(COMMITS))
async def test_each_commit_applied_gives_the_child_and_corrupted_changes_nothing(tmp_path: Path, index: int) -> None:
    commit = corpus()[index]
    parent = commit + '^'
    patch = commit_patch(REPO, parent, commit)
    root = tmp_path / 'tree'
    materialise(parent, root)
    parent_tree = tree_of(parent)
    assert on_disk(root) == parent_tree

    if (bad := corrupted(patch)) is not None:
        result, t = await call([capability(root)], 'apply_patch', input=bad.patch.text)
        line = hunk_line(bad.patch.text, bad.path, bad.hunk)
        assert result.startswith(
            f"{RETRY}Hunk {bad.hunk} of Update File '{bad.path}' (patch line {line}) does not match the file: "
            f'its line {bad.line_in_hunk} {bad.line!r} was not found'
        ), result
        assert result.endswith(' No changes were written. Read the file and copy its lines exactly.'), result
        assert t.events == []
        assert on_disk(root) == parent_tree

    result, t = await call([capability(root)], 'apply_patch', input=patch.text)
    assert result == expected_result(commit, patch)
    assert on_disk(root) == expected_tree(commit, parent_tree, patch)
