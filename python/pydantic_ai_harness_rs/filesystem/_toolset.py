"""The FileSystem toolset: tool signatures, model-facing docstrings, events, calls into `_core`.

No path logic, walking or formatting lives here: `_core.FileSystemCore` resolves, checks,
reads, writes, walks and renders every result string. This module decides which tools exist,
announces changes (`FileChangeRequestEvent`) between the core's plan and commit steps, emits
the notifications, and turns the core's retryable errors into `ModelRetry` (`_errors.py`).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal

from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import BinaryContent
from pydantic_ai.tools import AgentDepsT, RunContext
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs._errors import retry_on_core_errors
from pydantic_ai_harness_rs._native import INLINE_MAX_BYTES, is_small_file, run_inline, run_native, run_sized
from pydantic_ai_harness_rs.filesystem._content import guessed_type, read_result
from pydantic_ai_harness_rs.filesystem._events import (
    DirectoryCreatedEvent,
    DirectoryListedEvent,
    FileChangeRequestEvent,
    FileEditedEvent,
    FileReadEvent,
    FilesSearchedEvent,
    FileWrittenEvent,
)

if TYPE_CHECKING:
    from pydantic_ai_harness_rs._core import ChangePlan, Outcome

DEFAULT_TOOL_NAMES: tuple[str, ...] = (
    'read_file',
    'write_file',
    'edit_file',
    'list_directory',
    'search_files',
    'find_files',
    'create_directory',
    'file_info',
)
"""The tools `FileSystem` registers by default."""

RIPGREP_TOOL_NAMES: tuple[str, ...] = ('list_files', 'grep')
"""Opt-in tools with ripgrep semantics (ignore files, file types); ours run ripgrep's crates in-process."""

FILE_SYSTEM_TOOL_NAMES: tuple[str, ...] = (*DEFAULT_TOOL_NAMES, *RIPGREP_TOOL_NAMES)
"""Every tool `FileSystem` can register, in registration order."""

READ_ONLY_TOOL_NAMES: frozenset[str] = frozenset(
    {'read_file', 'list_directory', 'search_files', 'find_files', 'file_info', *RIPGREP_TOOL_NAMES}
)
"""The tools that do not modify the workspace; `read_only=True` keeps only these."""

_REFUSALS: dict[str, str] = {
    'write': 'was not written',
    'edit': 'was not edited',
    'create_directory': 'was not created',
}
"""How a cancelled change is worded in the tool result, by operation."""


@dataclass
class Replacement:
    """One exact replacement: `old_text` must occur exactly once and is replaced by `new_text`."""

    _: KW_ONLY
    old_text: str
    new_text: str


def _replacement_pairs(
    old_text: str | None, new_text: str | None, replacements: Sequence[Replacement] | None
) -> list[tuple[str, str]]:
    """The two argument forms of `edit_file` as one ordered list of `(old_text, new_text)`.

    Raises:
        ModelRetry: neither form is given, or both are, or `replacements` is empty.
    """
    if replacements is None:
        if old_text is None or new_text is None:
            raise ModelRetry('Provide old_text and new_text, or a non-empty replacements list.')
        return [(old_text, new_text)]
    if old_text is not None or new_text is not None or not replacements:
        raise ModelRetry('Provide either old_text and new_text or a non-empty replacements list, not both.')
    return [(r.old_text, r.new_text) for r in replacements]


class FileSystemToolset(FunctionToolset[AgentDepsT]):
    """File tools scoped to `root_dir`, backed by the Rust core.

    Paths the model passes resolve from `cwd`; anything resolving outside `root_dir` (through
    `..`, an absolute path or a symlink) is refused, and the I/O itself happens beneath a
    descriptor of the root with symlinks refused, so a path swapped after the check fails
    instead of being followed. Each tool also has a direct awaitable method (`read_file`,
    `write_file`, ...) for use outside an agent run; those emit no events.

    Subclasses may override `open_read` / `open_write` to put the bytes of writes and edits
    somewhere else; resolution, containment and the checks stay local.

    Raises:
        ValueError: `cwd` lies outside `root_dir`, or `tools` names an unknown tool.
    """

    def __init__(
        self,
        *,
        root_dir: Path,
        allowed_patterns: Sequence[str],
        denied_patterns: Sequence[str],
        protected_patterns: Sequence[str],
        max_read_lines: int,
        max_read_chars: int | None = None,
        max_list_results: int,
        max_search_results: int,
        max_find_results: int,
        id: str | None = None,
        cwd: Path | None = None,
        content_hashes: bool = True,
        tools: Sequence[str] = DEFAULT_TOOL_NAMES,
    ) -> None:
        super().__init__(id=id)
        tools = tuple(tools)
        if unknown := sorted(set(tools) - set(FILE_SYSTEM_TOOL_NAMES)):
            raise ValueError(
                f'Unknown filesystem tools: {", ".join(unknown)}. Available: {", ".join(FILE_SYSTEM_TOOL_NAMES)}.'
            )
        self._core = _core.FileSystemCore(
            str(root_dir),
            None if cwd is None else str(cwd),
            [str(p) for p in allowed_patterns],
            [str(p) for p in denied_patterns],
            [str(p) for p in protected_patterns],
            max_read_lines,
            max_read_chars,
            max_list_results,
            max_search_results,
            max_find_results,
            content_hashes,
        )
        self._content_hashes = content_hashes
        self._cwd = self._core.cwd
        self._custom_streams = (
            type(self).open_read is not FileSystemToolset.open_read
            or type(self).open_write is not FileSystemToolset.open_write
        )
        registrations: dict[str, Callable[..., Awaitable[str]]] = {
            'read_file': self._read_file_tool,
            'write_file': self._write_file_tool if content_hashes else self._write_file_tool_unhashed,
            'edit_file': self._edit_file_tool if content_hashes else self._edit_file_tool_unhashed,
            'list_directory': self._list_directory_tool,
            'search_files': self._search_files_tool,
            'find_files': self._find_files_tool,
            'create_directory': self._create_directory_tool,
            'file_info': self.file_info,
            'list_files': self._list_files_tool,
            'grep': self._grep_tool,
        }
        for name in FILE_SYSTEM_TOOL_NAMES:
            if name in tools:
                self.add_function(registrations[name], name=name)

    @property
    def root_dir(self) -> str:
        """The resolved (symlink-free, absolute) root; events carry it as `root_dir`."""
        return self._core.root_dir

    def _host_path(self, path: str) -> str:
        """Where `path` would be on the host, for the inline-or-thread decision only (never for I/O)."""
        return os.path.join(self._cwd, path)

    # --- override points -------------------------------------------------------------------

    def open_read(self, resolved: Path) -> BinaryIO:
        """Open an authorized path for a write's pre-change snapshot or an edit's source.

        Only called when a subclass overrides `open_read` or `open_write`; the default I/O runs
        in the Rust core beneath the root descriptor. Returns a binary stream the caller closes.
        """
        from pydantic_ai_harness_rs.filesystem._streams import default_open_read

        return default_open_read(resolved)

    def open_write(self, resolved: Path, *, read_back: bool, create: bool) -> tuple[BinaryIO, bool]:
        """Open an authorized regular file without truncating it; returns `(stream, created)`.

        The stream is seekable; with `read_back` it is readable from position zero. With
        `create=False` a missing file raises `FileNotFoundError`; otherwise creation is
        exclusive, so `created` says whether this open created the file. The caller checks
        the content hash before truncating and writes UTF-8 bytes without newline translation.
        Only called when a subclass overrides `open_read` or `open_write`.
        """
        from pydantic_ai_harness_rs.filesystem._streams import default_open_write

        return default_open_write(resolved, self._core.relative_to_root(str(resolved)), read_back=read_back, create=create)

    # --- read_file -------------------------------------------------------------------------

    async def read_file(
        self, path: str, *, offset: int = 0, limit: int | None = None
    ) -> str | list[str | BinaryContent]:
        """Read a text file directly, outside an agent run (no event); an image or PDF under the
        workspace contract comes back as `[header, BinaryContent]`."""
        return await self._read_file(None, path, offset=offset, limit=limit)

    async def _read_file_tool(
        self, ctx: RunContext[AgentDepsT], path: str, *, offset: int = 0, limit: int | None = None
    ) -> str:
        """Read a text file with line numbers.

        Args:
            ctx: The current agent run context.
            path: File path relative to `cwd`.
            offset: Zero-based line offset to start reading from.
            limit: Maximum number of lines to return (default: 2000).

        Returns:
            File content with line numbers, plus metadata header.
        """
        return await self._read_file(ctx, path, offset=offset, limit=limit)

    @retry_on_core_errors
    async def _read_file(
        self, ctx: RunContext[AgentDepsT] | None, path: str, *, offset: int = 0, limit: int | None = None
    ) -> str | list[str | BinaryContent]:
        small = is_small_file(self._host_path(path))
        guessed = guessed_type(self._core, path)
        outcome = await run_sized(self._core.read_file, path, offset, limit, inline=small, guessed_type=guessed)
        if ctx is not None:
            await ctx.emit(FileReadEvent(path=outcome.path, root_dir=self.root_dir, content_hash=_hash(outcome)))
        return read_result(outcome)

    # --- write_file ------------------------------------------------------------------------

    async def write_file(self, path: str, content: str, *, expected_hash: str | None = None) -> str:
        """Write a text file directly, outside an agent run (no announcement, no event)."""
        return await self._write_file(None, path, content, expected_hash=expected_hash)

    async def _write_file_tool(
        self,
        ctx: RunContext[AgentDepsT],
        path: str,
        content: str,
        *,
        expected_hash: str | None = None,
    ) -> str:
        """Create or overwrite a file with conflict detection.

        Args:
            ctx: The current agent run context.
            path: File path relative to `cwd`.
            content: The text content to write.
            expected_hash: If provided, the write is rejected when the file exists
                and its current hash doesn't match (optimistic concurrency).

        Returns:
            Confirmation message with new hash.
        """
        return await self._write_file(ctx, path, content, expected_hash=expected_hash)

    async def _write_file_tool_unhashed(self, ctx: RunContext[AgentDepsT], path: str, content: str) -> str:
        """Create a file or replace its whole content.

        Args:
            ctx: The current agent run context.
            path: File path relative to `cwd`.
            content: The text content to write.
        """
        return await self._write_file(ctx, path, content)

    @retry_on_core_errors
    async def _write_file(
        self, ctx: RunContext[AgentDepsT] | None, path: str, content: str, *, expected_hash: str | None = None
    ) -> str:
        if self._custom_streams:
            from pydantic_ai_harness_rs.filesystem._streams import write_with_streams

            return await write_with_streams(self, ctx, path, content, expected_hash=expected_hash)
        small = len(content) <= INLINE_MAX_BYTES and is_small_file(self._host_path(path))
        plan = await run_sized(self._core.plan_write, path, content, expected_hash, ctx is not None, inline=small)
        if (refusal := await self._request(ctx, plan)) is not None:
            return refusal
        outcome = await run_sized(self._core.commit, plan, inline=small)
        if ctx is not None:
            await ctx.emit(FileWrittenEvent(path=outcome.path, root_dir=self.root_dir, content_hash=_hash(outcome)))
        return outcome.text

    # --- edit_file -------------------------------------------------------------------------

    async def edit_file(self, path: str, old_text: str, new_text: str, *, expected_hash: str | None = None) -> str:
        """Edit a text file directly, outside an agent run (no announcement, no event)."""
        return await self._edit_file(None, path, [(old_text, new_text)], expected_hash=expected_hash)

    async def _edit_file_tool(
        self,
        ctx: RunContext[AgentDepsT],
        path: str,
        old_text: str | None = None,
        new_text: str | None = None,
        *,
        replacements: list[Replacement] | None = None,
        expected_hash: str | None = None,
    ) -> str:
        """Edit a file by exact string replacement with conflict detection.

        Pass one `old_text`/`new_text` pair, or several as `replacements`. Each
        old_text must appear exactly once in the file as edited by the previous
        replacements; include surrounding context lines to ensure uniqueness.
        The file is only written once every replacement has matched.

        Args:
            ctx: The current agent run context.
            path: File path relative to `cwd`.
            old_text: The exact text to find (must appear exactly once).
            new_text: The replacement text.
            replacements: Replacements to apply in order, instead of a single pair.
            expected_hash: If provided, rejects the edit when the file's
                current hash doesn't match (optimistic concurrency).

        Returns:
            Summary with new hash for subsequent operations.
        """
        pairs = _replacement_pairs(old_text, new_text, replacements)
        return await self._edit_file(ctx, path, pairs, expected_hash=expected_hash)

    async def _edit_file_tool_unhashed(
        self,
        ctx: RunContext[AgentDepsT],
        path: str,
        old_text: str | None = None,
        new_text: str | None = None,
        *,
        replacements: list[Replacement] | None = None,
    ) -> str:
        """Edit a file by exact string replacement.

        Pass one `old_text`/`new_text` pair, or several as `replacements`. Each
        old_text must appear exactly once in the file as edited by the previous
        replacements; include surrounding context lines to ensure uniqueness.
        The file is only written once every replacement has matched.

        Args:
            ctx: The current agent run context.
            path: File path relative to `cwd`.
            old_text: The exact text to find (must appear exactly once).
            new_text: The replacement text.
            replacements: Replacements to apply in order, instead of a single pair.
        """
        return await self._edit_file(ctx, path, _replacement_pairs(old_text, new_text, replacements))

    @retry_on_core_errors
    async def _edit_file(
        self,
        ctx: RunContext[AgentDepsT] | None,
        path: str,
        replacements: list[tuple[str, str]],
        *,
        expected_hash: str | None = None,
    ) -> str:
        if self._custom_streams:
            from pydantic_ai_harness_rs.filesystem._streams import edit_with_streams

            return await edit_with_streams(self, ctx, path, replacements, expected_hash=expected_hash)
        small = is_small_file(self._host_path(path))
        plan = await run_sized(self._core.plan_edit, path, replacements, expected_hash, inline=small)
        if (refusal := await self._request(ctx, plan)) is not None:
            return refusal
        outcome = await run_sized(self._core.commit, plan, inline=small)
        if ctx is not None:
            await ctx.emit(
                FileEditedEvent(
                    path=outcome.path,
                    root_dir=self.root_dir,
                    content_hash=_hash(outcome),
                    diff=plan.diff,
                    truncated=plan.truncated,
                )
            )
        return outcome.text

    # --- create_directory ------------------------------------------------------------------

    async def create_directory(self, path: str) -> str:
        """Create a directory directly, outside an agent run (no announcement, no event)."""
        return await self._create_directory(None, path)

    async def _create_directory_tool(self, ctx: RunContext[AgentDepsT], path: str) -> str:
        """Create a directory and any missing parents.

        Args:
            ctx: The current agent run context.
            path: Directory path relative to `cwd`.

        Returns:
            Confirmation message.
        """
        return await self._create_directory(ctx, path)

    @retry_on_core_errors
    async def _create_directory(self, ctx: RunContext[AgentDepsT] | None, path: str) -> str:
        plan = self._core.plan_create_directory(path)
        if plan is None:
            # Already a directory: nothing changes, so nothing is announced or reported.
            return f'Created directory: {path}'
        if (refusal := await self._request(ctx, plan)) is not None:
            return refusal
        outcome = run_inline(self._core.commit, plan)  # a few mkdir calls
        if ctx is not None and outcome.emit:
            await ctx.emit(DirectoryCreatedEvent(path=outcome.path, root_dir=self.root_dir))
        return outcome.text

    # --- walkers ---------------------------------------------------------------------------

    async def list_directory(self, path: str = '.') -> str:
        """List a directory directly, outside an agent run (no event)."""
        return await self._list_directory(None, path)

    async def _list_directory_tool(self, ctx: RunContext[AgentDepsT], path: str = '.') -> str:
        """List the contents of a directory.

        Args:
            ctx: The current agent run context.
            path: Directory path relative to `cwd`.

        Returns:
            Paths relative to `cwd`, with type indicators and sizes.
        """
        return await self._list_directory(ctx, path)

    @retry_on_core_errors
    async def _list_directory(self, ctx: RunContext[AgentDepsT] | None, path: str = '.') -> str:
        outcome = await run_native(self._core.list_directory, path)
        if ctx is not None:
            await ctx.emit(DirectoryListedEvent(path=outcome.path, root_dir=self.root_dir, entry_count=outcome.count))
        return outcome.text

    async def search_files(self, pattern: str, *, path: str = '.', include_glob: str | None = None) -> str:
        """Search file contents directly, outside an agent run (no event)."""
        return await self._search_files(None, pattern, path=path, include_glob=include_glob)

    async def _search_files_tool(
        self, ctx: RunContext[AgentDepsT], pattern: str, *, path: str = '.', include_glob: str | None = None
    ) -> str:
        """Search file contents using a regular expression.

        Args:
            ctx: The current agent run context.
            pattern: Regex pattern to search for.
            path: Directory to search in, relative to `cwd`.
            include_glob: If provided, match this glob against root-relative paths (e.g. '*.py').

        Returns:
            str: Matching lines formatted as file:line_number:text, with paths relative to `cwd`.
        """
        return await self._search_files(ctx, pattern, path=path, include_glob=include_glob)

    @retry_on_core_errors
    async def _search_files(
        self, ctx: RunContext[AgentDepsT] | None, pattern: str, *, path: str = '.', include_glob: str | None = None
    ) -> str:
        outcome = await run_native(self._core.search_files, _python_regex(pattern), path, include_glob)
        await self._searched(ctx, outcome, pattern, 'grep')
        return outcome.text

    async def find_files(self, pattern: str, *, path: str = '.') -> str:
        """Find files by glob pattern directly, outside an agent run (no event)."""
        return await self._find_files(None, pattern, path=path)

    async def _find_files_tool(self, ctx: RunContext[AgentDepsT], pattern: str, *, path: str = '.') -> str:
        """Find files by glob pattern (name matching, not content search).

        Args:
            ctx: The current agent run context.
            pattern: Glob pattern to match, relative to `path` (e.g. '*.py',
                '**/*.json'). Absolute patterns are rejected.
            path: Directory to search in, relative to `cwd`.

        Returns:
            Newline-separated list of matching file paths relative to `cwd`.
        """
        return await self._find_files(ctx, pattern, path=path)

    @retry_on_core_errors
    async def _find_files(self, ctx: RunContext[AgentDepsT] | None, pattern: str, *, path: str = '.') -> str:
        outcome = await run_native(self._core.find_files, pattern, path)
        await self._searched(ctx, outcome, pattern, 'find')
        return outcome.text

    async def list_files(self, path: str = '.', *, glob: str | None = None) -> str:
        """List files with ripgrep's rules directly, outside an agent run (no event)."""
        return await self._list_files(None, path, glob=glob)

    async def _list_files_tool(self, ctx: RunContext[AgentDepsT], path: str = '.', *, glob: str | None = None) -> str:
        """List files under a directory, recursively, sorted by path, respecting ignore files and skipping hidden files.

        Args:
            ctx: The current agent run context.
            path: Directory to list, relative to `cwd`.
            glob: If provided, only list files matching this glob (e.g. '*.py' or 'src/**').

        Returns:
            One file path per line, relative to `cwd`.
        """
        return await self._list_files(ctx, path, glob=glob)

    @retry_on_core_errors
    async def _list_files(self, ctx: RunContext[AgentDepsT] | None, path: str = '.', *, glob: str | None) -> str:
        outcome = await run_native(self._core.list_files, path, glob)
        await self._searched(ctx, outcome, glob or '', 'find')
        return outcome.text

    async def grep(
        self,
        pattern: str,
        *,
        path: str = '.',
        glob: str | None = None,
        file_type: str | None = None,
        ignore_case: bool = False,
        literal: bool = False,
        context: int = 0,
    ) -> str:
        """Search file contents with ripgrep's rules directly, outside an agent run (no event)."""
        return await self._grep(
            None,
            pattern,
            path=path,
            glob=glob,
            file_type=file_type,
            ignore_case=ignore_case,
            literal=literal,
            context=context,
        )

    async def _grep_tool(
        self,
        ctx: RunContext[AgentDepsT],
        pattern: str,
        *,
        path: str = '.',
        glob: str | None = None,
        file_type: str | None = None,
        ignore_case: bool = False,
        literal: bool = False,
        context: int = 0,
    ) -> str:
        """Search file contents with ripgrep, respecting ignore files and skipping hidden files.

        Args:
            ctx: The current agent run context.
            pattern: Regular expression (ripgrep syntax), or exact text when `literal` is set.
            path: Directory or file to search, relative to `cwd`.
            glob: If provided, only search files matching this glob (e.g. '*.py').
            file_type: If provided, only search this ripgrep file type (e.g. 'py', 'rust').
            ignore_case: Match case-insensitively.
            literal: Treat `pattern` as exact text rather than a regular expression.
            context: Lines of context to show around each match (0 to 20).

        Returns:
            Matches as `file:line:text`; context lines as `file-line-text`. Paths are relative to `cwd`.
        """
        return await self._grep(
            ctx,
            pattern,
            path=path,
            glob=glob,
            file_type=file_type,
            ignore_case=ignore_case,
            literal=literal,
            context=context,
        )

    @retry_on_core_errors
    async def _grep(
        self,
        ctx: RunContext[AgentDepsT] | None,
        pattern: str,
        *,
        path: str,
        glob: str | None,
        file_type: str | None,
        ignore_case: bool,
        literal: bool,
        context: int,
    ) -> str:
        if not 0 <= context <= 20:
            raise ModelRetry('context must be between 0 and 20.')
        outcome = await run_native(
            self._core.grep, pattern, path, glob, file_type, ignore_case, literal, context
        )
        await self._searched(ctx, outcome, pattern, 'grep')
        return outcome.text

    # --- file_info -------------------------------------------------------------------------

    @retry_on_core_errors
    async def file_info(self, path: str) -> str:
        """Get metadata about a file or directory.

        Args:
            path: File or directory path relative to `cwd`.

        Returns:
            Formatted metadata including size, type, and permissions.
        """
        outcome = await run_sized(self._core.file_info, path, inline=is_small_file(self._host_path(path)))
        return outcome.text

    # --- events ----------------------------------------------------------------------------

    async def _request(self, ctx: RunContext[AgentDepsT] | None, plan: ChangePlan) -> str | None:
        """Announce `plan` with a `FileChangeRequestEvent`; the tool result if a listener cancelled it.

        Outside a run there is nobody to ask. The core's `commit` re-resolves the path after
        the listener returns, so a path replaced while the request was held fails there.
        """
        if ctx is None:
            return None
        event = FileChangeRequestEvent(
            path=plan.path, root_dir=plan.root_dir, operation=plan.operation, diff=plan.diff, truncated=plan.truncated
        )
        await ctx.emit(event)
        if not event.cancelled:
            return None
        reason = event.cancel_reason or 'cancelled by a listener'
        return f'[{plan.path!r} {_REFUSALS[plan.operation]}: {reason}]'

    async def _searched(
        self, ctx: RunContext[AgentDepsT] | None, outcome: Outcome, pattern: str, search: Literal['find', 'grep']
    ) -> None:
        if ctx is not None:
            await ctx.emit(
                FilesSearchedEvent(
                    path=outcome.path,
                    root_dir=self.root_dir,
                    pattern=pattern,
                    search=search,
                    match_count=outcome.count,
                    truncated=outcome.truncated,
                )
            )


_NAMED_ESCAPE = re.compile(r'\\(\\|N\{([^}]*)\})')
"""An escaped backslash (kept as is) or a `\\N{NAME}` escape (expanded)."""


def _python_regex(pattern: str) -> str:
    """`pattern` checked with Python's `re`, with `\\N{NAME}` escapes spelled out for the core.

    `search_files` takes Python `re` syntax; the core runs it on Rust engines, which accept a
    few spellings `re` refuses (`a{2,1}`, `(?<name>...)`, `\\z`) and lack Unicode names.
    Compiling with `re` first (cached) keeps the model's error messages those of the reference.

    Raises:
        ModelRetry: `Invalid regex pattern: <re's message>`.
    """
    try:
        re.compile(pattern)
    except re.error as e:
        raise ModelRetry(f'Invalid regex pattern: {e}') from e
    if '\\N' not in pattern:
        return pattern
    return _NAMED_ESCAPE.sub(
        lambda m: m.group(0) if m.group(2) is None else re.escape(unicodedata.lookup(m.group(2))), pattern
    )


def _hash(outcome: Outcome) -> str:
    """The content hash an event carries (always present for reads, writes and edits)."""
    assert outcome.content_hash is not None
    return outcome.content_hash
