"""The defaults that differ between the two contracts, and the markers that say "not set".

`FileSystem` follows the document (`filesystem.md`, 0.36.0) with `root_dir` given or no
workspace attached, and 0.62.0's contract on the run's workspace otherwise (see `_toolset.py`),
unless `FileSystem(contract=...)` fixes the choice.
A field left unset takes the default of the contract a call runs under; any value the user
passes, `None` included, wins in both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

Contract = Literal['document', 'workspace']
"""Whose defaults and texts apply: the document's (root_dir on the host) or 0.62.0's (the workspace)."""

DEFAULT_PROTECTED_PATTERNS: tuple[str, ...] = ('.git/*', '.env', '.env.*', '*.pem', '*.key', '**/secrets*')
"""The document's default read-only patterns (`protected_patterns` in 0.36.0)."""

DEFAULT_READ_ONLY_PATTERNS: tuple[str, ...] = (
    '**/.git',
    '**/.env',
    '**/.env.*',
    '*.pem',
    '*.key',
    '**/secrets*',
    '**/.pydantic-ai-harness/**',
)
"""0.62.0's default `read_only_patterns`, in force on a workspace: `.git` (directory or worktree file),
`.env` files, keys, secrets and the harness's own metadata directory, at any depth."""

WORKSPACE_MAX_READ_CHARS = 50_000
"""0.62.0's default `max_read_chars` on a workspace; the document's is `None` (no cap)."""


class _UnsetPatterns(tuple[str, ...]):
    """The unset `read_only_patterns` of a `FileSystem` without `root_dir`, whose contract each run
    picks: equal to 0.62.0's list (a workspace run's), its repr naming both contracts' defaults."""

    __slots__ = ()

    def __repr__(self) -> str:
        return UNSET_READ_ONLY_PATTERNS_REPR


class _UnsetReadChars(int):
    """The unset `max_read_chars` of a `FileSystem` without `root_dir`: equal to 50000 (a workspace
    run's), its repr naming both contracts' defaults (`str` and formatting give the number)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return UNSET_MAX_READ_CHARS_REPR

    __str__ = int.__repr__


UNSET_READ_ONLY_PATTERNS_REPR = (
    '<contract default: DEFAULT_PROTECTED_PATTERNS with root_dir or no workspace, '
    'DEFAULT_READ_ONLY_PATTERNS on a workspace>'
)
"""How the unset `read_only_patterns` shows (in `repr` and `inspect.signature`)."""

UNSET_MAX_READ_CHARS_REPR = '<contract default: None with root_dir or no workspace, 50000 on a workspace>'
"""How the unset `max_read_chars` shows (in `repr` and `inspect.signature`)."""

UNSET_READ_ONLY_PATTERNS: Sequence[str] = _UnsetPatterns(DEFAULT_READ_ONLY_PATTERNS)
"""The default value of the `read_only_patterns` field; compared by identity."""

UNSET_MAX_READ_CHARS: int = _UnsetReadChars(WORKSPACE_MAX_READ_CHARS)
"""The default value of the `max_read_chars` field; compared by identity."""


def read_only_patterns_for(value: Sequence[str] | None, contract: Contract) -> list[str]:
    """The read-only patterns in force under `contract`: `value`, or the contract's default when unset."""
    if value is UNSET_READ_ONLY_PATTERNS:
        value = DEFAULT_READ_ONLY_PATTERNS if contract == 'workspace' else DEFAULT_PROTECTED_PATTERNS
    return [str(p) for p in value or ()]


def max_read_chars_for(value: int | None, contract: Contract) -> int | None:
    """The `max_read_chars` in force under `contract`: `value`, or the contract's default when unset."""
    if value is UNSET_MAX_READ_CHARS:
        return WORKSPACE_MAX_READ_CHARS if contract == 'workspace' else None
    return value
