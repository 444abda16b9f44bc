"""A commit of a git repository as one patch in Codex's `apply_patch` format (issue 22's corpus test).

`commit_patch(repo, parent, child)` runs `git diff -M -U3 parent child` and rewrites it: a new file
becomes `*** Add File:` (every line `+`), a deleted one `*** Delete File:`, a changed one
`*** Update File:` with one `@@` hunk per git hunk (context ` `, removed `-`, added `+` lines, as git
wrote them), a rename `*** Update File: OLD` + `*** Move to: NEW` with its hunks, and `*** End of File`
after a hunk whose last old line is the file's last line. Each `@@` line carries the hunk's unified
range (`@@ -37,6 +38,7 @@`, its old start where the hunk is placed), as a real diff does: the tool takes
the place nearest it when the hunk's lines match several.

Codex locates each hunk by its old lines, searching from where the previous hunk ended (the first
occurrence; a hunk marked `*** End of File` at the end first). Where git's three lines of context
would be found earlier than git's position, the hunk gets an anchor, `@@ <line>`: the nearest line
above it that is found first at its own place, after which the hunk is found at git's place; where
no such line exists, the hunk takes more of the lines above it as context until it is found first
where git put it. A rename without changes (a similarity of 100%) is an `*** Update File:` with its
`*** Move to:` and no hunk (issue 22's tool reads that as a plain rename; Codex itself wants a hunk).

Files the format cannot carry are left out of the patch and listed in `skipped` with the reason:
binary files, symbolic links and submodules, files that are not UTF-8, lines ending without a newline
at the end of a file (`\\ No newline at end of file`; an applied patch ends every line with one), and
changes of mode only. `corrupted(patch)` gives the same patch with one context line changed, and
`apply_model` applies a patch by the rules above, to check the converter apart from the tool.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

HUNK_HEADER = re.compile(rb'^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@')
CORRUPTION = '  # corrupted by the corpus test'
"""Appended to the context line `corrupted` changes; found nowhere else."""

_DIFF = ('-c', 'core.quotepath=off', 'diff', '-M', '--no-color', '--no-ext-diff', '--no-textconv')


@dataclass
class Hunk:
    """One `@@` section of an `*** Update File:`."""

    anchor: str | None
    """The line of `@@ <line>`, or None for a bare `@@`."""
    lines: list[str]
    """The hunk's lines, each with its ` `, `-` or `+` prefix."""
    end_of_file: bool
    old_start: int | None = None
    """The 1-based line of the old file where its old lines start: the `@@ -N,n +M,m @@` range the
    `@@` line carries (as a real diff does), which picks between places its lines match."""


@dataclass
class FileChange:
    """One file section of a patch."""

    operation: str
    """`add`, `delete` or `update`."""
    path: str
    move_to: str | None = None
    added: list[str] = field(default_factory=list[str])
    """The new file's lines (an `add`)."""
    hunks: list[Hunk] = field(default_factory=list[Hunk])


@dataclass
class CommitPatch:
    """A commit as a Codex patch, and what it left out."""

    changes: list[FileChange]
    skipped: dict[str, str]
    """Path (the new one of a rename) -> why the patch does not carry it."""

    @property
    def text(self) -> str:
        """The patch, `*** Begin Patch` to `*** End Patch`, each line ending in a newline."""
        out = ['*** Begin Patch']
        for change in self.changes:
            if change.operation == 'add':
                out.append(f'*** Add File: {change.path}')
                out.extend('+' + line for line in change.added)
            elif change.operation == 'delete':
                out.append(f'*** Delete File: {change.path}')
            else:
                out.append(f'*** Update File: {change.path}')
                if change.move_to is not None:
                    out.append(f'*** Move to: {change.move_to}')
                delta = 0
                for hunk in change.hunks:
                    header = '@@'
                    if hunk.old_start is not None:
                        old = sum(1 for line in hunk.lines if line[0] != '+')
                        new = sum(1 for line in hunk.lines if line[0] != '-')
                        header = f'@@ -{hunk.old_start},{old} +{hunk.old_start + delta},{new} @@'
                        delta += new - old
                    out.append(header if hunk.anchor is None else f'{header} {hunk.anchor}')
                    out.extend(hunk.lines)
                    if hunk.end_of_file:
                        out.append('*** End of File')
        out.append('*** End Patch')
        return '\n'.join(out) + '\n'


def git(repo: Path, *args: str) -> bytes:
    """The stdout of `git -C repo ARGS`; a failure raises `CalledProcessError` with git's message."""
    return subprocess.run(['git', '-C', str(repo), *args], capture_output=True, check=True).stdout


def lines_of(data: bytes) -> list[str]:
    """`data` (UTF-8) as Codex splits a file: on `\\n`, without the empty piece after a final newline."""
    pieces = data.decode().split('\n')
    return pieces[:-1] if pieces[-1] == '' else pieces


def find(lines: list[str], pattern: list[str], start: int) -> int | None:
    """The first index `i >= start` where `lines[i:i + len(pattern)] == pattern`, or None."""
    for i in range(start, len(lines) - len(pattern) + 1):
        if lines[i : i + len(pattern)] == pattern:
            return i
    return None


def commit_patch(repo: Path, parent: str, child: str) -> CommitPatch:
    """`git diff -M -U3 parent child` in `repo` as one Codex patch (see the module docstring)."""
    raw = git(repo, *_DIFF, '--raw', '-z', parent, child).split(b'\0')
    entries: list[tuple[str, str, str, str, list[str]]] = []  # (status, old mode, new mode, old blob, paths)
    i = 0
    while i < len(raw) - 1:
        old_mode, new_mode, old_blob, _, status = raw[i].decode().lstrip(':').split(' ')
        count = 2 if status[0] in 'RC' else 1
        entries.append((status[0], old_mode, new_mode, old_blob, [p.decode() for p in raw[i + 1 : i + 1 + count]]))
        i += 1 + count
    diff = git(repo, *_DIFF, '-U3', '--src-prefix=a/', '--dst-prefix=b/', parent, child)
    blocks = [b'diff --git ' + b for b in diff.split(b'\ndiff --git ')]
    blocks[0] = blocks[0].removeprefix(b'diff --git ')
    blocks = blocks if diff else []
    if len(blocks) != len(entries):
        raise AssertionError(f'{len(entries)} changed files but {len(blocks)} diff sections')
    patch = CommitPatch([], {})
    for (status, old_mode, new_mode, old_blob, paths), block in zip(entries, blocks, strict=True):
        path = paths[-1]
        reason = _unsupported(status, old_mode, new_mode, block)
        if reason is not None:
            patch.skipped[path] = reason
            continue
        if status == 'D':
            patch.changes.append(FileChange('delete', path))
            continue
        hunks = _git_hunks(block)
        try:
            if status == 'A':
                added = [line[1:] for hunk in hunks for line in hunk[2]]
                patch.changes.append(FileChange('add', path, added=added))
                continue
            old = lines_of(git(repo, 'cat-file', 'blob', old_blob))
            move_to = paths[1] if status == 'R' else None
            patch.changes.append(FileChange('update', paths[0], move_to, hunks=_located(old, hunks)))
        except UnicodeDecodeError:
            patch.skipped[path] = 'not UTF-8'
    return patch


def _unsupported(status: str, old_mode: str, new_mode: str, block: bytes) -> str | None:
    """Why the format cannot carry this file's change, or None."""
    if status not in 'ADMR':
        return f'status {status}'
    if {old_mode, new_mode} & {'120000', '160000'}:
        return 'a symbolic link or submodule'
    if status == 'D':  # (a deletion carries no content)
        return None
    header = block.split(b'\n@@ ', 1)[0]
    if b'\nBinary files ' in header or b'\nGIT binary patch' in header:
        return 'binary'
    if b'\n\\ No newline at end of file' in block:
        return 'no newline at end of file'
    if status == 'M' and b'\n@@ ' not in block:
        return 'mode change only'
    try:
        block.decode()
    except UnicodeDecodeError:
        return 'not UTF-8'
    return None


def _git_hunks(block: bytes) -> list[tuple[int, int, list[str]]]:
    """The hunks of one file's diff: (old start, 1-based; old line count; lines with their prefixes)."""
    hunks: list[tuple[int, int, list[str]]] = []
    for line in block.split(b'\n'):
        if match := HUNK_HEADER.match(line):
            start, count = int(match[1]), 1 if match[2] is None else int(match[2])
            hunks.append((start, count, []))
        elif hunks and line[:1] in (b' ', b'-', b'+'):
            hunks[-1][2].append(line.decode())
    return hunks


def _located(old: list[str], hunks: list[tuple[int, int, list[str]]]) -> list[Hunk]:
    """Git's hunks as Codex hunks found where git put them (anchored or widened where needed)."""
    out: list[Hunk] = []
    cursor = 0
    for start, count, lines in hunks:
        position = start - 1 if count else start  # (`-0,0` is an insertion before line 1)
        pattern = [line[1:] for line in lines if line[0] != '+']
        end_of_file = bool(pattern) and position + count == len(old)
        anchor = None
        if not end_of_file and pattern and find(old, pattern, cursor) != position:
            anchor = _anchor(old, pattern, cursor, position)
            if anchor is None:  # widen: take lines above as context until found first at its place
                first = next(
                    j for j in range(position - 1, cursor - 1, -1) if find(old, old[j:position] + pattern, cursor) == j
                )
                lines = [' ' + line for line in old[first:position]] + lines
                pattern = old[first:position] + pattern
                position = first
        out.append(Hunk(anchor, lines, end_of_file, position + 1 if pattern else None))
        cursor = position + len(pattern)
    return out


def _anchor(old: list[str], pattern: list[str], cursor: int, position: int) -> str | None:
    """The nearest line above `position` (and at or after `cursor`) that is found first at its own
    place and after which `pattern` is found first at `position`; only lines without surrounding
    whitespace, so a parser that strips `@@ ` lines reads the same anchor."""
    for j in range(position - 1, cursor - 1, -1):
        line = old[j]
        if line and line == line.strip() and find(old, [line], cursor) == j and find(old, pattern, j + 1) == position:
            return line
    return None


@dataclass
class Corruption:
    """A patch with one context line changed, and where."""

    patch: CommitPatch
    path: str
    """The file, as the patch names it (`*** Update File:`)."""
    hunk: int
    """The hunk's number in that file's section, 1-based."""
    line_in_hunk: int
    """The changed line's place among the hunk's lines (context, removed and added), 1-based."""
    line: str
    """The changed line, without its ` ` prefix."""


def corrupted(patch: CommitPatch) -> Corruption | None:
    """`patch` with the first context line of its last hunk that has one changed (`CORRUPTION`
    appended); None when no hunk of the patch has a context line."""
    for change_index in range(len(patch.changes) - 1, -1, -1):
        change = patch.changes[change_index]
        for hunk_index in range(len(change.hunks) - 1, -1, -1):
            hunk = change.hunks[hunk_index]
            context = next((k for k, line in enumerate(hunk.lines) if line.startswith(' ')), None)
            if context is None:
                continue
            lines = list(hunk.lines)
            lines[context] += CORRUPTION
            hunks = list(change.hunks)
            hunks[hunk_index] = Hunk(hunk.anchor, lines, hunk.end_of_file, hunk.old_start)
            changes = list(patch.changes)
            changes[change_index] = FileChange(change.operation, change.path, change.move_to, change.added, hunks)
            bad = CommitPatch(changes, patch.skipped)
            return Corruption(bad, change.path, hunk_index + 1, context + 1, lines[context][1:])
    return None


def apply_model(files: dict[str, bytes], patch: CommitPatch) -> dict[str, bytes]:
    """`patch` applied to `files` (path -> bytes) by the rules the module docstring states; checks the
    converter against git, apart from the tool. Raises `ValueError` naming a hunk that is not found."""
    out = dict(files)
    for change in patch.changes:
        if change.operation == 'add':
            out[change.path] = ''.join(line + '\n' for line in change.added).encode()
        elif change.operation == 'delete':
            del out[change.path]
        else:
            old = lines_of(out.pop(change.path))
            new: list[str] = []
            cursor = copied = 0  # (where the next search starts; how much of `old` is in `new`)
            for number, hunk in enumerate(change.hunks, 1):
                if hunk.anchor is not None:
                    found = find(old, [hunk.anchor], cursor)
                    if found is None:
                        raise ValueError(f'{change.path} hunk {number}: anchor not found')
                    cursor = found + 1
                pattern = [line[1:] for line in hunk.lines if line[0] != '+']
                at = len(old) - len(pattern) if hunk.end_of_file else None
                if at is None or at < cursor or old[at:] != pattern:
                    at = find(old, pattern, cursor)
                if at is None:
                    raise ValueError(f'{change.path} hunk {number}: not found')
                new += old[copied:at] + [line[1:] for line in hunk.lines if line[0] != '-']
                cursor = copied = at + len(pattern)
            new += old[copied:]
            out[change.move_to or change.path] = ''.join(line + '\n' for line in new).encode()
    return out
