"""The `FileSystem` capability: configuration, validated at construction, that builds the toolset."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import FilteredToolset

from pydantic_ai_harness_rs.filesystem._toolset import DEFAULT_TOOL_NAMES, READ_ONLY_TOOL_NAMES, FileSystemToolset

DEFAULT_PROTECTED_PATTERNS: tuple[str, ...] = ('.git/*', '.env', '.env.*', '*.pem', '*.key', '**/secrets*')
"""The documented default of `protected_patterns`: readable, never writable."""


@dataclass
class FileSystem(AbstractCapability[AgentDepsT]):
    """Sandboxed, pattern-filtered file tools over one directory tree (`root_dir`).

    A drop-in for `pydantic_ai_harness.FileSystem` (the document `filesystem.md`): the same
    fields, tools, results, errors and events, with path resolution, access checks, reads,
    writes, diffs and walks in Rust. Relative paths resolve from `cwd` (default `root_dir`);
    anything resolving outside `root_dir` is refused, symlinks included.

    Raises:
        ValueError: an integer limit is not a positive `int`, `max_retries` is not `None` or a
            non-negative `int`, `cwd` lies outside `root_dir`,
            or `tools` names an unknown tool (the latter two when the toolset is built).
    """

    root_dir: str | Path = '.'
    """Root directory every operation is confined to. Defaults to the current directory."""

    cwd: str | Path | None = None
    """Directory relative paths resolve from; must lie inside `root_dir`. Defaults to `root_dir`."""

    allowed_patterns: Sequence[str] = field(default_factory=list[str])
    """fnmatch globs (`*` spans `/`); if non-empty, only matching root-relative paths are accessible."""

    denied_patterns: Sequence[str] = field(default_factory=list[str])
    """fnmatch globs of paths always refused, and everything below a matching directory (case-insensitive)."""

    protected_patterns: Sequence[str] = field(default_factory=lambda: list(DEFAULT_PROTECTED_PATTERNS))
    """fnmatch globs of read-only paths (and their descendants, case-insensitive); `[]` disables protection."""

    max_read_lines: int = 2000
    """Most lines one `read_file` returns; also caps an explicit `limit`."""

    max_read_chars: int | None = None
    """Most characters of one `read_file` result, header and hint included, ending on a whole line; `None`: no cap."""

    max_list_results: int = 1000
    """Most entries `list_directory` returns before its `[... truncated at N entries]` marker."""

    max_search_results: int = 1000
    """Most matching lines `search_files` and `grep` return."""

    max_find_results: int = 1000
    """Most paths `find_files` and `list_files` return."""

    read_only: bool = False
    """Keep only the tools in `READ_ONLY_TOOL_NAMES`."""

    content_hashes: bool = True
    """Show content hashes in results and accept `expected_hash`; events carry hashes either way."""

    tools: Sequence[str] = DEFAULT_TOOL_NAMES
    """Which tools to register, from `FILE_SYSTEM_TOOL_NAMES` (add `'list_files'`, `'grep'` to opt in)."""

    max_retries: int | None = field(default=None, kw_only=True)
    """Consecutive retries each tool allows before the run fails (a success resets the count);
    `None` uses the agent's tool retry budget. Keyword-only, as in pydantic-ai-harness 0.62.0."""

    def __post_init__(self) -> None:
        limits: dict[str, Any] = {
            'max_read_lines': self.max_read_lines,
            'max_list_results': self.max_list_results,
            'max_search_results': self.max_search_results,
            'max_find_results': self.max_find_results,
        }
        if self.max_read_chars is not None:
            limits['max_read_chars'] = self.max_read_chars
        for name, value in limits.items():
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f'{name} must be a positive integer, got {value!r}')
        retries: object = self.max_retries
        if retries is not None and (not isinstance(retries, int) or isinstance(retries, bool) or retries < 0):
            raise ValueError(f'max_retries must be a non-negative integer, got {retries!r}')

    def get_toolset(self) -> FileSystemToolset[AgentDepsT] | FilteredToolset[AgentDepsT]:
        """Build the toolset; with `read_only`, filtered to `READ_ONLY_TOOL_NAMES`."""
        toolset = FileSystemToolset[AgentDepsT](
            root_dir=Path(self.root_dir),
            cwd=None if self.cwd is None else Path(self.cwd),
            allowed_patterns=self.allowed_patterns,
            denied_patterns=self.denied_patterns,
            protected_patterns=self.protected_patterns,
            max_read_lines=self.max_read_lines,
            max_read_chars=self.max_read_chars,
            max_list_results=self.max_list_results,
            max_search_results=self.max_search_results,
            max_find_results=self.max_find_results,
            id=self.id or 'file_system',
            content_hashes=self.content_hashes,
            tools=self.tools,
            max_retries=self.max_retries,
        )
        if self.read_only:
            return FilteredToolset(toolset, lambda ctx, tool: tool.name in READ_ONLY_TOOL_NAMES)
        return toolset
