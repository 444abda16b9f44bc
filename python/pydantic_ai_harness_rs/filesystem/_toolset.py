"""The FileSystem toolset: tool signatures, model-facing docstrings, events, calls into `_core`.

No path logic, walking or formatting lives here: `_core.FileSystemCore` resolves, checks,
reads, writes, walks and renders every result string. This module decides which tools exist,
picks the engine (`_engine.py`) and contract each call runs under, announces changes
(`FileChangeRequestEvent`) between the engine's plan and commit steps, with the file's turn held
from plan to commit (`_locks.py`: concurrent changes of one file run one after the other), emits the notifications,
and turns the core's retryable errors into `ModelRetry` (`_errors.py`).

Two contracts, one set of tools. `root_dir` given, or no workspace attached to the run: the
document's (`filesystem.md`, pydantic-ai-harness 0.36.0), on the host, with the core built at
construction. `root_dir` left out and the run has a workspace: 0.62.0's, on the workspace's
working directory (a core per working directory, built on first use). A workspace whose files
are not on this host always runs under 0.62.0's contract, through the workspace protocol.
"""

from __future__ import annotations

import contextlib
import re
import unicodedata
import weakref
from collections.abc import Awaitable, Callable, Sequence
from copy import deepcopy
from dataclasses import KW_ONLY, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import BinaryContent
from pydantic_ai.tools import AgentDepsT, RunContext
from pydantic_ai.toolsets import FunctionToolset, ToolsetTool
from pydantic_ai.workspaces import Workspace, WorkspaceBackend

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs._durable import beneath_durable, without_events
from pydantic_ai_harness_rs._durable_dbos import call_in_unit
from pydantic_ai_harness_rs._errors import retry_on_core_errors
from pydantic_ai_harness_rs._warn import warn_argument_renamed, warn_cwd_ignored
from pydantic_ai_harness_rs._workspace import FILE_METHODS, local_backend, refuse_unavailable
from pydantic_ai_harness_rs.filesystem._bounds import root_spelling, workspace_bounds
from pydantic_ai_harness_rs.filesystem._defaults import Contract, max_read_chars_for, read_only_patterns_for
from pydantic_ai_harness_rs.filesystem._engine import Engine, LocalEngine, Plan
from pydantic_ai_harness_rs.filesystem._events import (
    DirectoryCreatedEvent,
    DirectoryListedEvent,
    FileChangeRequestEvent,
    FileEditedEvent,
    FileReadEvent,
    FilesSearchedEvent,
    FileWrittenEvent,
)
from pydantic_ai_harness_rs.filesystem._locks import FileTurns
from pydantic_ai_harness_rs.filesystem._observe import guarded_change, note_read
from pydantic_ai_harness_rs.filesystem._remote import RemoteEngine
from pydantic_ai_harness_rs.filesystem._tool_kinds import tool_kind_options

if TYPE_CHECKING:
    from pydantic_ai_harness_rs._core import Outcome

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

_MAX_WORKSPACE_ENGINES = 16
# The largest line index the core takes (`usize`, and an offset plus a limit must not overflow).
_MAX_INDEX = 2**62
"""Cores kept per toolset for distinct workspace working directories (oldest dropped first)."""


@dataclass
class Replacement:
    """One exact replacement: `old_text` must occur exactly once and is replaced by `new_text`."""

    _: KW_ONLY
    old_text: str
    new_text: str


@dataclass
class FlaggedReplacement(Replacement):
    """One exact replacement: `old_text` must occur exactly once, or with `replace_all` every occurrence is replaced."""

    _: KW_ONLY
    replace_all: bool = False


EditPair = tuple[str, str] | tuple[str, str, bool]
"""`(old_text, new_text)`, or with `replace_all` (`FileSystem(replace_all=True)`) a third item."""


def _replacement_pairs(
    old_text: str | None,
    new_text: str | None,
    replacements: Sequence[Replacement] | None,
    replace_all: bool | None = None,
) -> list[EditPair]:
    """The two argument forms of `edit_file` as one ordered list of `(old_text, new_text[, replace_all])`.

    `replace_all` is `None` when the tool has no such argument (the document's schema).

    Raises:
        ModelRetry: neither form is given, or both are, or `replacements` is empty.
    """
    if replacements is None:
        if old_text is None or new_text is None:
            raise ModelRetry('Provide old_text and new_text, or a non-empty replacements list.')
        return [(old_text, new_text) if replace_all is None else (old_text, new_text, replace_all)]
    if old_text is not None or new_text is not None or not replacements:
        raise ModelRetry('Provide either old_text and new_text or a non-empty replacements list, not both.')
    return [
        (r.old_text, r.new_text, r.replace_all) if isinstance(r, FlaggedReplacement) else (r.old_text, r.new_text)
        for r in replacements
    ]


def _with_replace_all(described: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """`described` (a contract's `edit_file` schema) with `ours`' `replace_all` argument added,
    at the top level and in the replacement items."""
    schema = deepcopy(described)
    schema['properties']['replace_all'] = ours['properties']['replace_all']
    flagged = next(d for d in ours.get('$defs', {}).values() if 'replace_all' in d.get('properties', {}))
    for definition in schema.get('$defs', {}).values():
        if 'old_text' in definition.get('properties', {}):
            definition['properties']['replace_all'] = flagged['properties']['replace_all']
    return schema


def _with_column(described: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """`described` (a contract's `read_file` schema) with `ours`' `column` argument added."""
    schema = deepcopy(described)
    schema['properties']['column'] = ours['properties']['column']
    return schema


class FileSystemToolset(FunctionToolset[AgentDepsT]):
    """File tools scoped to a root directory, backed by the Rust core.

    With `root_dir` given, or when the run has no workspace, the tools work on `root_dir` on
    this host (default: the current directory) as the document describes; paths the model
    passes resolve from `cwd`. With `root_dir` left out and a workspace attached to the run
    (`ctx.workspace`, or `workspace=` on a direct call), they work on the workspace's working
    directory under 0.62.0's contract: its defaults (`max_read_chars`, read-only patterns,
    when left unset) and its texts. Anything resolving outside the root (through `..`, an
    absolute path or a symlink) is refused, and on this host the I/O itself happens beneath a
    descriptor of the root with symlinks refused, so a path swapped after the check fails
    instead of being followed. Each tool also has a direct awaitable method (`read_file`,
    `write_file`, ...) for use outside an agent run; those emit no events.

    Subclasses may override `open_read` / `open_write` to put the bytes of writes and edits
    somewhere else (document contract only); resolution, containment and the checks stay local.
    Each tool carries its kind (`file_system.<tool>`, `_tool_kinds.py`) where pydantic-ai has tool
    kinds; `max_retries` is each tool's consecutive retry budget (`None`: the agent's).

    Raises:
        ValueError: `cwd` lies outside `root_dir`, or `tools` names an unknown tool (with `root_dir` left
            out, a `cwd` outside the current directory fails the first call under the document instead).
        TypeError: both `read_only_patterns` and its old name `protected_patterns` are given.
    """

    def __init__(
        self,
        *,
        root_dir: str | Path | None = None,
        allowed_patterns: Sequence[str],
        denied_patterns: Sequence[str],
        read_only_patterns: Sequence[str] | None = None,
        protected_patterns: Sequence[str] | None = None,
        max_read_lines: int,
        max_read_chars: int | None = None,
        max_list_results: int,
        max_search_results: int,
        max_find_results: int,
        id: str | None = None,
        cwd: str | Path | None = None,
        content_hashes: bool = True,
        tools: Sequence[str] = DEFAULT_TOOL_NAMES,
        max_retries: int | None = None,
        owner: str = 'FileSystemToolset',
        replace_all: bool = False,
        max_line_chars: int | None = None,
        report_skipped: bool = False,
    ) -> None:
        super().__init__(id=id, max_retries=max_retries)
        tools = tuple(tools)
        if unknown := sorted(set(tools) - set(FILE_SYSTEM_TOOL_NAMES)):
            raise ValueError(
                f'Unknown filesystem tools: {", ".join(unknown)}. Available: {", ".join(FILE_SYSTEM_TOOL_NAMES)}.'
            )
        if protected_patterns is not None and read_only_patterns is not None:
            raise TypeError('Pass `read_only_patterns` only: `protected_patterns` is its deprecated name.')
        patterns = protected_patterns if protected_patterns is not None else read_only_patterns
        self._settings: dict[str, Any] = {
            'allowed_patterns': [str(p) for p in allowed_patterns],
            'denied_patterns': [str(p) for p in denied_patterns],
            'read_only_patterns': patterns,
            'max_read_lines': max_read_lines,
            'max_read_chars': max_read_chars,
            'max_list_results': max_list_results,
            'max_search_results': max_search_results,
            'max_find_results': max_find_results,
            'content_hashes': content_hashes,
            'max_line_chars': max_line_chars,
            'report_skipped': report_skipped,
        }
        self._root_given = root_dir is not None
        self._root_dir = root_dir
        try:
            self._core = self._new_core('.' if root_dir is None else str(root_dir), cwd, 'document')
        except ValueError as error:
            if root_dir is not None:
                raise
            # Without `root_dir` the document's tree may never be used (a workspace run ignores
            # `cwd`): a `cwd` outside the current directory fails the first document-mode call.
            self._document: LocalEngine | None = None
            self._document_error: ValueError | None = error
        else:
            self._document = LocalEngine(self._core)
            self._document_error = None
        self._content_hashes = content_hashes
        self._replace_all = replace_all
        self._tool_names = tools
        self._workspace_docs: FunctionToolset[object] | None = None
        # Said once, when a call first runs under the workspace contract, where 0.62.0 deprecates them.
        self._deprecations: list[Callable[[], None]] = []
        if cwd is not None:
            self._deprecations.append(lambda: warn_cwd_ignored(owner, stacklevel=2))
        if protected_patterns is not None:
            self._deprecations.append(
                lambda: warn_argument_renamed(owner, 'protected_patterns', 'read_only_patterns', stacklevel=2)
            )
        self._workspace_engines: dict[tuple[str | None, str], Engine] = {}
        self._engine_keys: weakref.WeakKeyDictionary[WorkspaceBackend, tuple[str | None, str]] = (
            weakref.WeakKeyDictionary()
        )
        self._remote_engines: weakref.WeakKeyDictionary[Workspace, Engine] = weakref.WeakKeyDictionary()
        # The engine each workspace object a call named got (the run's, or a direct call's
        # `workspace=`), so a repeated call skips the facade and protocol checks.
        self._engines_by_workspace: weakref.WeakKeyDictionary[object, Engine] = weakref.WeakKeyDictionary()
        # Writes and edits of one file take turns, from plan through the listeners' answer to commit.
        self._turns = FileTurns()
        self._custom_streams = (
            type(self).open_read is not FileSystemToolset.open_read
            or type(self).open_write is not FileSystemToolset.open_write
        )
        registrations: dict[str, Callable[..., Awaitable[str]]] = {
            'read_file': self._read_file_tool if max_line_chars is None else self._read_file_tool_columns,
            'write_file': self._write_file_tool if content_hashes else self._write_file_tool_unhashed,
            'edit_file': (
                (self._edit_file_tool_all if content_hashes else self._edit_file_tool_all_unhashed)
                if replace_all
                else (self._edit_file_tool if content_hashes else self._edit_file_tool_unhashed)
            ),
            'list_directory': self._list_directory_tool,
            'search_files': self._search_files_tool,
            'find_files': self._find_files_tool,
            'create_directory': self._create_directory_tool,
            'file_info': self._file_info_tool,
            'list_files': self._list_files_tool,
            'grep': self._grep_tool,
        }
        for name in FILE_SYSTEM_TOOL_NAMES:
            if name in tools:
                self.add_function(registrations[name], name=name, **tool_kind_options(name))

    def _new_core(self, root_dir: str, cwd: str | Path | None, contract: Contract) -> _core.FileSystemCore:
        """A core on a host directory with this toolset's settings and `contract`'s defaults."""
        s = self._settings
        return _core.FileSystemCore(
            root_dir,
            None if cwd is None else str(cwd),
            s['allowed_patterns'],
            s['denied_patterns'],
            read_only_patterns_for(s['read_only_patterns'], contract),
            s['max_read_lines'],
            max_read_chars_for(s['max_read_chars'], contract),
            s['max_list_results'],
            s['max_search_results'],
            s['max_find_results'],
            s['content_hashes'],
            contract=contract,
            max_line_chars=s['max_line_chars'],
            report_skipped=s['report_skipped'],
        )

    @property
    def root_dir(self) -> str:
        """The resolved (symlink-free, absolute) root of the document contract; its events carry it as `root_dir`."""
        return self._document_engine().core.root_dir

    def _document_engine(self) -> LocalEngine:
        """The engine on `root_dir` (the document's contract), built at construction.

        Raises:
            ValueError: `cwd` lies outside the current directory (`root_dir` left out).
        """
        if self._document is None:
            assert self._document_error is not None
            raise self._document_error
        return self._document

    # --- which engine, which contract --------------------------------------------------------

    async def _engine(self, workspace: WorkspaceBackend | None) -> Engine:
        """The engine a call runs on: the document's, or the one for `workspace`'s working directory.

        `workspace` is the run's (`ctx.workspace`) or a direct call's `workspace=`; `None` or an
        unattached placeholder selects the document's contract.

        Raises:
            UserError: `workspace` is an `UnavailableWorkspace` (its reason, as 0.62.0 words it).
            WorkspaceUnavailableError: the local workspace's directory is gone (the run ends).
        """
        if workspace is None:
            return self._document_engine()
        try:
            cached = self._engines_by_workspace.get(workspace)
        except TypeError:  # an unhashable backend: resolved on every call
            cached = None
        if cached is not None:
            if not isinstance(cached, LocalEngine) or cached.is_current():
                return cached
            self._forget_engine(workspace, cached)
        engine = await self._resolve_engine(workspace)
        if engine is not self._document:
            with contextlib.suppress(TypeError):
                self._engines_by_workspace[workspace] = engine
        return engine

    def _forget_engine(self, workspace: WorkspaceBackend, engine: LocalEngine) -> None:
        """Drop every cached path to `engine`, whose workspace directory was deleted or replaced."""
        self._engines_by_workspace.pop(workspace, None)
        for key, cached in list(self._workspace_engines.items()):
            if cached is engine:
                del self._workspace_engines[key]
        local = local_backend(workspace if isinstance(workspace, Workspace) else Workspace(workspace), FILE_METHODS)
        if local is not None:
            self._engine_keys.pop(local, None)

    async def _resolve_engine(self, workspace: WorkspaceBackend) -> Engine:
        """`_engine` for a workspace not seen before (its answer is kept per workspace object)."""
        facade = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
        if not facade.attached:
            refuse_unavailable(facade, 'FileSystem')
            return self._document_engine()
        local = local_backend(facade, FILE_METHODS)
        if local is not None and self._root_given:
            return self._document_engine()
        while self._deprecations:
            self._deprecations.pop(0)()
        if local is None:
            return await self._remote_engine(facade)
        key = self._engine_keys.get(local)
        if key is None:
            key = self._engine_keys[local] = (None, await local.working_dir())
        engine = self._workspace_engines.get(key)
        if engine is None:
            if len(self._workspace_engines) >= _MAX_WORKSPACE_ENGINES:
                del self._workspace_engines[next(iter(self._workspace_engines))]
            engine = self._workspace_engines[key] = LocalEngine(self._new_core(key[1], None, 'workspace'), key[1])
        return engine

    async def _remote_engine(self, workspace: Workspace) -> Engine:
        """The engine for a workspace whose files are not on this host: `RemoteEngine` (`_remote.py`).

        Python moves bytes through the workspace protocol; the Rust core matches, hashes, windows,
        diffs and words every result. The boundary follows 0.62.0's `root_dir` semantics
        (`_bounds.py`), checked before any file I/O. One engine per workspace object (held weakly).

        Raises:
            UserError: `root_dir` cannot contain the workspace's working directory (0.62.0's texts).
        """
        engine = self._remote_engines.get(workspace)
        if engine is not None:
            return engine
        spelling = root_spelling(self._root_dir)
        await workspace_bounds(workspace, spelling)
        s = self._settings
        engine = RemoteEngine(
            workspace,
            root_dir=spelling,
            allowed_patterns=s['allowed_patterns'],
            denied_patterns=s['denied_patterns'],
            read_only_patterns=read_only_patterns_for(s['read_only_patterns'], 'workspace'),
            max_read_lines=s['max_read_lines'],
            max_read_chars=max_read_chars_for(s['max_read_chars'], 'workspace'),
            max_list_results=s['max_list_results'],
            max_search_results=s['max_search_results'],
            max_find_results=s['max_find_results'],
            content_hashes=s['content_hashes'],
        )
        self._remote_engines[workspace] = engine
        return engine

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """The tools, described as the contract of the run's calls describes them (see `_descriptions.py`).

        On a read-only workspace only `READ_ONLY_TOOL_NAMES`, as 0.62.0 offers.
        """
        tools = await super().get_tools(ctx)
        workspace = _run_workspace(ctx)
        if workspace is None or not workspace.attached:
            return tools
        if workspace.read_only:
            tools = {name: tool for name, tool in tools.items() if name in READ_ONLY_TOOL_NAMES}
        if self._root_given and local_backend(beneath_durable(workspace), FILE_METHODS) is not None:
            return tools  # the document's contract on `root_dir`
        if self._workspace_docs is None:
            from pydantic_ai_harness_rs.filesystem._descriptions import workspace_descriptions

            self._workspace_docs = workspace_descriptions(self._tool_names, self._content_hashes)
        docs = await self._workspace_docs.get_tools(ctx)  # pyright: ignore[reportArgumentType]
        return {
            name: replace(
                tool,
                tool_def=replace(
                    tool.tool_def,
                    description=docs[name].tool_def.description,
                    parameters_json_schema=self._described_schema(name, docs[name], tool),
                ),
            )
            if name in docs
            else tool
            for name, tool in tools.items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        """Run a tool: one durable unit under DBOS and Prefect, on the plain workspace (`_durable_dbos.py`);
        where its events cannot reach the run (a Temporal activity) it emits none (`_durable.py`)."""
        parent = super()
        return await call_in_unit(
            'FileSystem', name, ctx, lambda unit: parent.call_tool(name, tool_args, without_events(unit), tool)
        )

    def _described_schema(self, name: str, described: ToolsetTool[Any], ours: ToolsetTool[Any]) -> dict[str, Any]:
        """A tool's parameter schema as the workspace contract describes it, plus `replace_all` when enabled."""
        schema = described.tool_def.parameters_json_schema
        if name == 'edit_file' and self._replace_all:
            return _with_replace_all(schema, ours.tool_def.parameters_json_schema)
        if name == 'read_file' and self._settings['max_line_chars'] is not None:
            return _with_column(schema, ours.tool_def.parameters_json_schema)
        return schema

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

        return default_open_write(
            resolved, self._document_engine().core.relative_to_root(str(resolved)), read_back=read_back, create=create
        )

    # --- read_file -------------------------------------------------------------------------

    async def read_file(
        self,
        path: str,
        *,
        offset: int = 0,
        limit: int | None = None,
        column: int = 0,
        workspace: WorkspaceBackend | None = None,
    ) -> str | list[str | BinaryContent]:
        """Read a file directly, outside an agent run (no event); in `workspace` when given. An image
        or PDF under the workspace contract comes back as `[header, BinaryContent]`. `column`: with
        `max_line_chars`, the 0-based character each line starts from."""
        engine = await self._engine(workspace)
        return await self._read_file(engine, None, path, offset=offset, limit=limit, column=column)

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
        engine = await self._engine(_run_workspace(ctx))
        return await self._read_file(engine, ctx, path, offset=offset, limit=limit)

    async def _read_file_tool_columns(
        self, ctx: RunContext[AgentDepsT], path: str, *, offset: int = 0, limit: int | None = None, column: int = 0
    ) -> str:
        """Read a text file with line numbers.

        Args:
            ctx: The current agent run context.
            path: File path relative to `cwd`.
            offset: Zero-based line offset to start reading from.
            limit: Maximum number of lines to return (default: 2000).
            column: Zero-based character each line starts from, to read on in a clipped long line.

        Returns:
            File content with line numbers, plus metadata header.
        """
        engine = await self._engine(_run_workspace(ctx))
        return await self._read_file(engine, ctx, path, offset=offset, limit=limit, column=column)

    @retry_on_core_errors
    async def _read_file(
        self,
        engine: Engine,
        ctx: RunContext[AgentDepsT] | None,
        path: str,
        *,
        offset: int = 0,
        limit: int | None = None,
        column: int = 0,
    ) -> str | list[str | BinaryContent]:
        if column < 0:
            raise ModelRetry('column must be non-negative.')
        # Past any file: a number too big for the core's integers reads as the largest one (its
        # retry still names the number given).
        given = offset
        offset, column = max(-_MAX_INDEX, min(offset, _MAX_INDEX)), min(column, _MAX_INDEX)
        limit = None if limit is None else max(-_MAX_INDEX, min(limit, _MAX_INDEX))
        # `column` only when given: an engine without `max_line_chars` support keeps working.
        args = (path, offset, limit, column) if column else (path, offset, limit)
        try:
            outcome, content = await engine.read_file(*args)
        except _core.NotFoundError:
            await note_read(engine, path, None)
            raise
        except _core.RetryableError as e:
            if offset == given:
                raise
            raise ModelRetry(str(e).replace(str(offset), str(given))) from e
        await note_read(engine, path, outcome)
        if ctx is not None and outcome.emit:
            await ctx.emit(
                FileReadEvent(path=outcome.path, root_dir=await engine.root_dir(), content_hash=_hash(outcome))
            )
        return outcome.text if content is None else [outcome.text, content]

    # --- write_file ------------------------------------------------------------------------

    async def write_file(
        self, path: str, content: str, *, expected_hash: str | None = None, workspace: WorkspaceBackend | None = None
    ) -> str:
        """Write a text file directly, outside an agent run (no announcement, no event); in `workspace` when given."""
        return await self._write_file(await self._engine(workspace), None, path, content, expected_hash=expected_hash)

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
        engine = await self._engine(_run_workspace(ctx))
        return await self._write_file(engine, ctx, path, content, expected_hash=expected_hash)

    async def _write_file_tool_unhashed(self, ctx: RunContext[AgentDepsT], path: str, content: str) -> str:
        """Create a file or replace its whole content.

        Args:
            ctx: The current agent run context.
            path: File path relative to `cwd`.
            content: The text content to write.
        """
        return await self._write_file(await self._engine(_run_workspace(ctx)), ctx, path, content)

    @retry_on_core_errors
    async def _write_file(
        self,
        engine: Engine,
        ctx: RunContext[AgentDepsT] | None,
        path: str,
        content: str,
        *,
        expected_hash: str | None = None,
    ) -> str:
        key = await engine.lock_key(path)
        async with self._turns.hold(engine, key):
            change = guarded_change(engine, key, path, expected_hash)
            if self._custom_streams and engine is self._document:
                from pydantic_ai_harness_rs.filesystem._streams import os_errors_for_the_model, write_with_streams

                with os_errors_for_the_model(self._core), change.checked():
                    text = await write_with_streams(self, ctx, path, content, expected_hash=change.expected_hash)
                change.saw(None)
                return text
            with change.checked():
                plan = await engine.plan_write(path, content, change.expected_hash, ctx is not None)
                if (refusal := await self._request(ctx, plan)) is not None:
                    return refusal
                outcome = await engine.commit(plan)
            change.saw(outcome.content_hash)
        if ctx is not None:
            await ctx.emit(
                FileWrittenEvent(path=outcome.path, root_dir=await engine.root_dir(), content_hash=_hash(outcome))
            )
        return outcome.text

    # --- edit_file -------------------------------------------------------------------------

    async def edit_file(
        self,
        path: str,
        old_text: str,
        new_text: str,
        *,
        expected_hash: str | None = None,
        workspace: WorkspaceBackend | None = None,
    ) -> str:
        """Edit a text file directly, outside an agent run (no announcement, no event); in `workspace` when given."""
        engine = await self._engine(workspace)
        return await self._edit_file(engine, None, path, [(old_text, new_text)], expected_hash=expected_hash)

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
        engine = await self._engine(_run_workspace(ctx))
        return await self._edit_file(engine, ctx, path, pairs, expected_hash=expected_hash)

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
        pairs = _replacement_pairs(old_text, new_text, replacements)
        return await self._edit_file(await self._engine(_run_workspace(ctx)), ctx, path, pairs)

    async def _edit_file_tool_all(
        self,
        ctx: RunContext[AgentDepsT],
        path: str,
        old_text: str | None = None,
        new_text: str | None = None,
        *,
        replace_all: bool = False,
        replacements: list[FlaggedReplacement] | None = None,
        expected_hash: str | None = None,
    ) -> str:
        """Edit a file by exact string replacement with conflict detection.

        Pass one `old_text`/`new_text` pair, or several as `replacements`. Each
        old_text must appear exactly once in the file as edited by the previous
        replacements, unless replace_all is set; include surrounding context
        lines to ensure uniqueness. The file is only written once every
        replacement has matched.

        Args:
            ctx: The current agent run context.
            path: File path relative to `cwd`.
            old_text: The exact text to find (must appear exactly once, unless replace_all).
            new_text: The replacement text.
            replace_all: Replace every occurrence of old_text instead of requiring exactly one.
            replacements: Replacements to apply in order, instead of a single pair.
            expected_hash: If provided, rejects the edit when the file's
                current hash doesn't match (optimistic concurrency).

        Returns:
            Summary with new hash for subsequent operations.
        """
        pairs = _replacement_pairs(old_text, new_text, replacements, replace_all)
        engine = await self._engine(_run_workspace(ctx))
        return await self._edit_file(engine, ctx, path, pairs, expected_hash=expected_hash)

    async def _edit_file_tool_all_unhashed(
        self,
        ctx: RunContext[AgentDepsT],
        path: str,
        old_text: str | None = None,
        new_text: str | None = None,
        *,
        replace_all: bool = False,
        replacements: list[FlaggedReplacement] | None = None,
    ) -> str:
        """Edit a file by exact string replacement.

        Pass one `old_text`/`new_text` pair, or several as `replacements`. Each
        old_text must appear exactly once in the file as edited by the previous
        replacements, unless replace_all is set; include surrounding context
        lines to ensure uniqueness. The file is only written once every
        replacement has matched.

        Args:
            ctx: The current agent run context.
            path: File path relative to `cwd`.
            old_text: The exact text to find (must appear exactly once, unless replace_all).
            new_text: The replacement text.
            replace_all: Replace every occurrence of old_text instead of requiring exactly one.
            replacements: Replacements to apply in order, instead of a single pair.
        """
        pairs = _replacement_pairs(old_text, new_text, replacements, replace_all)
        return await self._edit_file(await self._engine(_run_workspace(ctx)), ctx, path, pairs)

    @retry_on_core_errors
    async def _edit_file(
        self,
        engine: Engine,
        ctx: RunContext[AgentDepsT] | None,
        path: str,
        replacements: list[EditPair],
        *,
        expected_hash: str | None = None,
    ) -> str:
        key = await engine.lock_key(path)
        async with self._turns.hold(engine, key):
            change = guarded_change(engine, key, path, expected_hash)
            if self._custom_streams and engine is self._document:
                from pydantic_ai_harness_rs.filesystem._streams import edit_with_streams, os_errors_for_the_model

                with os_errors_for_the_model(self._core), change.checked():
                    text = await edit_with_streams(self, ctx, path, replacements, expected_hash=change.expected_hash)
                change.saw(None)
                return text
            with change.checked():
                plan = await engine.plan_edit(path, replacements, change.expected_hash)
                if (refusal := await self._request(ctx, plan)) is not None:
                    return refusal
                outcome = await engine.commit(plan)
            change.saw(outcome.content_hash)
        if ctx is not None:
            await ctx.emit(
                FileEditedEvent(
                    path=outcome.path,
                    root_dir=await engine.root_dir(),
                    content_hash=_hash(outcome),
                    diff=plan.diff,
                    truncated=plan.truncated,
                )
            )
        return outcome.text

    # --- create_directory ------------------------------------------------------------------

    async def create_directory(self, path: str, *, workspace: WorkspaceBackend | None = None) -> str:
        """Create a directory directly, outside an agent run (no announcement, no event); in `workspace` when given."""
        return await self._create_directory(await self._engine(workspace), None, path)

    async def _create_directory_tool(self, ctx: RunContext[AgentDepsT], path: str) -> str:
        """Create a directory and any missing parents.

        Args:
            ctx: The current agent run context.
            path: Directory path relative to `cwd`.

        Returns:
            Confirmation message.
        """
        return await self._create_directory(await self._engine(_run_workspace(ctx)), ctx, path)

    @retry_on_core_errors
    async def _create_directory(self, engine: Engine, ctx: RunContext[AgentDepsT] | None, path: str) -> str:
        plan = await engine.plan_create_directory(path)
        if plan is None:
            # Already a directory: nothing changes, so nothing is announced or reported.
            return f'Created directory: {path}'
        if (refusal := await self._request(ctx, plan)) is not None:
            return refusal
        outcome = await engine.commit(plan)
        if ctx is not None and outcome.emit:
            await ctx.emit(DirectoryCreatedEvent(path=outcome.path, root_dir=await engine.root_dir()))
        return outcome.text

    # --- walkers ---------------------------------------------------------------------------

    async def list_directory(self, path: str = '.', *, workspace: WorkspaceBackend | None = None) -> str:
        """List a directory directly, outside an agent run (no event); in `workspace` when given."""
        return await self._list_directory(await self._engine(workspace), None, path)

    async def _list_directory_tool(self, ctx: RunContext[AgentDepsT], path: str = '.') -> str:
        """List the contents of a directory.

        Args:
            ctx: The current agent run context.
            path: Directory path relative to `cwd`.

        Returns:
            Paths relative to `cwd`, with type indicators and sizes.
        """
        return await self._list_directory(await self._engine(_run_workspace(ctx)), ctx, path)

    @retry_on_core_errors
    async def _list_directory(self, engine: Engine, ctx: RunContext[AgentDepsT] | None, path: str = '.') -> str:
        outcome = await engine.list_directory(path)
        if ctx is not None:
            await ctx.emit(
                DirectoryListedEvent(path=outcome.path, root_dir=await engine.root_dir(), entry_count=outcome.count)
            )
        return outcome.text

    async def search_files(
        self,
        pattern: str,
        *,
        path: str = '.',
        include_glob: str | None = None,
        workspace: WorkspaceBackend | None = None,
    ) -> str:
        """Search file contents directly, outside an agent run (no event); in `workspace` when given."""
        engine = await self._engine(workspace)
        return await self._search_files(engine, None, pattern, path=path, include_glob=include_glob)

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
        engine = await self._engine(_run_workspace(ctx))
        return await self._search_files(engine, ctx, pattern, path=path, include_glob=include_glob)

    @retry_on_core_errors
    async def _search_files(
        self,
        engine: Engine,
        ctx: RunContext[AgentDepsT] | None,
        pattern: str,
        *,
        path: str = '.',
        include_glob: str | None = None,
    ) -> str:
        outcome = await engine.search_files(_python_regex(pattern), path, include_glob)
        await self._searched(engine, ctx, outcome, pattern, 'grep')
        return outcome.text

    async def find_files(self, pattern: str, *, path: str = '.', workspace: WorkspaceBackend | None = None) -> str:
        """Find files by glob pattern directly, outside an agent run (no event); in `workspace` when given."""
        return await self._find_files(await self._engine(workspace), None, pattern, path=path)

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
        return await self._find_files(await self._engine(_run_workspace(ctx)), ctx, pattern, path=path)

    @retry_on_core_errors
    async def _find_files(
        self, engine: Engine, ctx: RunContext[AgentDepsT] | None, pattern: str, *, path: str = '.'
    ) -> str:
        outcome = await engine.find_files(pattern, path)
        await self._searched(engine, ctx, outcome, pattern, 'find')
        return outcome.text

    async def list_files(
        self, path: str = '.', *, glob: str | None = None, workspace: WorkspaceBackend | None = None
    ) -> str:
        """List files with ripgrep's rules directly, outside an agent run (no event); in `workspace` when given."""
        return await self._list_files(await self._engine(workspace), None, path, glob=glob)

    async def _list_files_tool(self, ctx: RunContext[AgentDepsT], path: str = '.', *, glob: str | None = None) -> str:
        """List files under a directory, recursively, sorted by path, respecting ignore files and skipping hidden files.

        Args:
            ctx: The current agent run context.
            path: Directory to list, relative to `cwd`.
            glob: If provided, only list files matching this glob (e.g. '*.py' or 'src/**').

        Returns:
            One file path per line, relative to `cwd`.
        """
        return await self._list_files(await self._engine(_run_workspace(ctx)), ctx, path, glob=glob)

    @retry_on_core_errors
    async def _list_files(
        self, engine: Engine, ctx: RunContext[AgentDepsT] | None, path: str = '.', *, glob: str | None
    ) -> str:
        outcome = await engine.list_files(path, glob)
        await self._searched(engine, ctx, outcome, glob or '', 'find')
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
        workspace: WorkspaceBackend | None = None,
    ) -> str:
        """Search file contents with ripgrep's rules directly, outside an agent run (no event); in `workspace` when given."""
        return await self._grep(
            await self._engine(workspace),
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
            await self._engine(_run_workspace(ctx)),
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
        engine: Engine,
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
        outcome = await engine.grep(pattern, path, glob, file_type, ignore_case, literal, context)
        await self._searched(engine, ctx, outcome, pattern, 'grep')
        return outcome.text

    # --- file_info -------------------------------------------------------------------------

    async def file_info(self, path: str, *, workspace: WorkspaceBackend | None = None) -> str:
        """Get metadata about a file or directory directly, outside an agent run; in `workspace` when given."""
        return await self._file_info(await self._engine(workspace), path)

    async def _file_info_tool(self, ctx: RunContext[AgentDepsT], path: str) -> str:
        """Get metadata about a file or directory.

        Args:
            ctx: The current agent run context.
            path: File or directory path relative to `cwd`.

        Returns:
            Formatted metadata including size, type, and permissions.
        """
        return await self._file_info(await self._engine(_run_workspace(ctx)), path)

    @retry_on_core_errors
    async def _file_info(self, engine: Engine, path: str) -> str:
        try:
            outcome = await engine.file_info(path)
        except _core.NotFoundError:
            await note_read(engine, path, None)
            raise
        await note_read(engine, path, outcome)
        return outcome.text

    # --- events ----------------------------------------------------------------------------

    async def _request(self, ctx: RunContext[AgentDepsT] | None, plan: Plan) -> str | None:
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
        self,
        engine: Engine,
        ctx: RunContext[AgentDepsT] | None,
        outcome: Outcome,
        pattern: str,
        search: Literal['find', 'grep'],
    ) -> None:
        if ctx is not None:
            await ctx.emit(
                FilesSearchedEvent(
                    path=outcome.path,
                    root_dir=await engine.root_dir(),
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


def _run_workspace(ctx: RunContext[Any]) -> Workspace | None:
    """The run's workspace (`ctx.workspace`), or `None` on a Pydantic AI release without workspaces."""
    return getattr(ctx, 'workspace', None)


def _hash(outcome: Outcome) -> str:
    """The content hash an event carries (always present for reads, writes and edits)."""
    assert outcome.content_hash is not None
    return outcome.content_hash
