"""The FileSystem toolset: which tools exist, each tool's body (calls into the engine, events), the engines.

No path logic, walking or formatting lives here: `_core.FileSystemCore` resolves, checks,
reads, writes, walks and renders every result string. The tools are declared in `_tools.py`
(arguments and texts per contract); this module registers them, picks the engine
(`_engine.py`) and contract each call runs under, announces changes (`FileChangeRequestEvent`)
between the engine's plan and commit steps, with the file's turn held from plan to commit
(`_locks.py`: concurrent changes of one file run one after the other), emits the
notifications, and turns the core's retryable errors into `ModelRetry` (`_errors.py`).

Two contracts, one set of tools. `root_dir` given, or no workspace attached to the run: the
document's (`filesystem.md`, pydantic-ai-harness 0.36.0), on the host, with the core built at
construction. `root_dir` left out and the run has a workspace: 0.62.0's, on the workspace's
working directory (a core per working directory, built on first use). A workspace whose files
are not on this host always runs under 0.62.0's contract, through the workspace protocol.
`contract='workspace'` / `'document'` fixes the choice for every call (`_bounds.contract_on`).
"""

from __future__ import annotations

import contextlib
import re
import unicodedata
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from pydantic_ai.exceptions import ApprovalRequired, ModelRetry, ToolFailed
from pydantic_ai.messages import BinaryContent
from pydantic_ai.tools import AgentDepsT, RunContext
from pydantic_ai.toolsets import FunctionToolset, ToolsetTool
from pydantic_ai.workspaces import Workspace, WorkspaceBackend

import pydantic_ai_harness_rs.filesystem._approval as _approval
from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs._approvals import current_call, request_key, with_note
from pydantic_ai_harness_rs._errors import retry_on_core_errors
from pydantic_ai_harness_rs._warn import warn_argument_renamed, warn_cwd_ignored
from pydantic_ai_harness_rs._workspace import FILE_METHODS, local_backend, refuse_unavailable
from pydantic_ai_harness_rs.durable._events import beneath_durable, refuse_bare_toolset, without_events
from pydantic_ai_harness_rs.durable._operations import (
    CHANGE_TOOLS,
    STAGE,
    Planned,
    Stage,
    dispatches,
    durable_call,
    in_dbos_workflow,
)
from pydantic_ai_harness_rs.durable._units import call_in_unit
from pydantic_ai_harness_rs.filesystem._bounds import (
    checked_contract,
    contract_on,
    refuse_without_workspace,
    root_spelling,
    warn_if_readings_differ,
    workspace_bounds,
)
from pydantic_ai_harness_rs.filesystem._defaults import Contract, max_read_chars_for, read_only_patterns_for
from pydantic_ai_harness_rs.filesystem._engine import Engine, LocalEngine, Plan, current_hash
from pydantic_ai_harness_rs.filesystem._events import (
    DirectoryCreatedEvent,
    DirectoryListedEvent,
    FileEditedEvent,
    FileReadEvent,
    FilesSearchedEvent,
    FileWrittenEvent,
    announce,
)
from pydantic_ai_harness_rs.filesystem._locks import file_turns
from pydantic_ai_harness_rs.filesystem._observe import guarded_change, note_read
from pydantic_ai_harness_rs.filesystem._patch import apply_patch
from pydantic_ai_harness_rs.filesystem._remote import RemoteEngine
from pydantic_ai_harness_rs.filesystem._streams import (
    default_open_read,
    default_open_write,
    edit_with_streams,
    os_errors_for_the_model,
    write_with_streams,
)
from pydantic_ai_harness_rs.filesystem._tool_kinds import tool_kind_options
from pydantic_ai_harness_rs.filesystem._tools import (
    DEFAULT_TOOL_NAMES,
    FILE_SYSTEM_TOOL_NAMES,
    READ_ONLY_TOOL_NAMES,
    TOOLS,
    EditPair,
    Shape,
    model_function,
    with_options,
)

if TYPE_CHECKING:
    from pydantic_ai_harness_rs._core import Outcome

_MAX_WORKSPACE_ENGINES = 16
"""Cores kept per toolset for distinct workspace working directories (oldest dropped first)."""

READ_ONLY_TOOLSET = 'This FileSystem is read-only; the change was refused.'
"""What a change through a `read_only` toolset answers (a direct call; the model never sees those tools)."""

_MAX_INDEX = 2**62
"""The largest line index the core takes (`usize`, and an offset plus a limit must not overflow)."""


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

    With `read_only`, only the tools in `READ_ONLY_TOOL_NAMES` are registered and the direct
    `write_file`, `edit_file` and `create_directory` methods refuse (`ToolFailed`), so nothing
    reached through this toolset can change a file.

    `contract` (`FileSystem.contract`): `'workspace'` runs every call under 0.62.0's contract,
    `root_dir` a workspace path (a call without a workspace is a `UserError`); `'document'` runs
    every call on `root_dir` on this host (a workspace whose files are elsewhere is a `UserError`).

    Raises:
        ValueError: `cwd` lies outside `root_dir` (not under `contract='workspace'`), `tools` names an
            unknown tool, or `contract` is not `None`, `'document'` or `'workspace'` (with `root_dir` left
            out, a `cwd` outside the current directory fails the first call under the document instead).
        TypeError: both `read_only_patterns` and its old name `protected_patterns` are given.
        UserError: `contract='workspace'` and `root_dir` starts with `~` or lies below the working directory.
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
        match: Literal['exact', 'tolerant'] = 'exact',
        show_changes: int | None = None,
        read_only: bool = False,
        contract: Contract | None = None,
        require_approval: bool | Sequence[str] | _approval.ApprovalPredicate = False,
    ) -> None:
        super().__init__(id=id, max_retries=max_retries)
        self._approvals = _approval.checked(require_approval)
        self._contract: Contract | None = checked_contract(contract)
        if contract == 'workspace':
            root_spelling(root_dir)  # 0.62.0 refuses a root_dir below the working directory at construction
        tools = tuple(tools)
        if unknown := sorted(set(tools) - set(FILE_SYSTEM_TOOL_NAMES)):
            # The references' list, word for word: the opt-in `apply_patch` (ours) is not named.
            listed = [name for name in FILE_SYSTEM_TOOL_NAMES if not TOOLS[name].opt_in]
            raise ValueError(f'Unknown filesystem tools: {", ".join(unknown)}. Available: {", ".join(listed)}.')
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
            'match': match,
            'show_changes': show_changes or 0,
        }
        self._root_given = root_dir is not None
        self._root_dir = root_dir
        try:
            self._core = self._new_core('.' if root_dir is None else str(root_dir), cwd, 'document')
        except ValueError as error:
            if root_dir is not None and contract != 'workspace':
                raise
            # Without `root_dir` the document's tree may never be used (a workspace run ignores
            # `cwd`): a `cwd` outside the current directory fails the first document-mode call.
            self._document: LocalEngine | None = None
            self._document_error: ValueError | None = error
        else:
            self._document = LocalEngine(self._core)
            self._document_error = None
        self._content_hashes = content_hashes
        self._read_only = read_only
        if read_only:
            tools = tuple(name for name in tools if name in READ_ONLY_TOOL_NAMES)
        self._tool_names = tools
        self._owner = owner
        self._readings_warned = False
        self._readings_checked: weakref.WeakSet[WorkspaceBackend] = weakref.WeakSet()  # compared (`_contract_on`)
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
        # Per wrapper stack (`_layers`: the wrappers and the backend under plain facades), so a
        # facade made per call reuses its engine; oldest dropped first. Each engine holds its
        # layers alive, so their ids stay theirs while the entry exists.
        self._remote_engines: dict[tuple[int, ...], Engine] = {}
        # The local engine each workspace object a call named got (the run's, or a direct call's
        # `workspace=`), so a repeated call skips the facade and protocol checks. (A remote
        # engine holds its workspace, so it is never a value here: the key would never die.)
        self._engines_by_workspace: weakref.WeakKeyDictionary[object, Engine] = weakref.WeakKeyDictionary()
        self._custom_streams = (
            type(self).open_read is not FileSystemToolset.open_read
            or type(self).open_write is not FileSystemToolset.open_write
        )
        if self._custom_streams and self._approvals.enabled:
            raise ValueError('require_approval does not work with a custom `open_read` / `open_write`.')
        if self._custom_streams and (match != 'exact' or show_changes):
            raise ValueError('match and show_changes do not work with a custom `open_read` / `open_write`.')
        self._shape = Shape('document', content_hashes, replace_all, max_line_chars is not None)
        # The `FileSystem` whose durable operations run this toolset's calls in a durable engine's
        # workflow code (`durable/_operations.py`); `None` for a bare toolset.
        self._operations: Any = None
        for name in FILE_SYSTEM_TOOL_NAMES:
            if name in tools:
                tool = model_function(TOOLS[name], self._shape, self._from_model(name))
                # Under Temporal the body runs in workflow code and hands its I/O to the
                # capability's operations (activities), so a listener is asked there.
                self.add_function(tool, name=name, metadata={'temporal': False}, **tool_kind_options(name))

    def _new_core(
        self, root_dir: str, cwd: str | Path | None, contract: Contract, *, root_named: bool = False
    ) -> _core.FileSystemCore:
        """A core on a host directory with this toolset's settings and `contract`'s defaults;
        `root_named`: its errors name `root_dir` (0.62.0's texts for a given `root_dir`)."""
        s = self._settings
        return _core.FileSystemCore(
            root_dir,
            None if cwd is None else str(cwd),
            s['allowed_patterns'],
            s['denied_patterns'],
            _approval.guarded_patterns(read_only_patterns_for(s['read_only_patterns'], contract), self._approvals),
            s['max_read_lines'],
            max_read_chars_for(s['max_read_chars'], contract),
            s['max_list_results'],
            s['max_search_results'],
            s['max_find_results'],
            s['content_hashes'],
            contract=contract,
            max_line_chars=s['max_line_chars'],
            report_skipped=s['report_skipped'],
            root_named=root_named,
            match=s['match'],
            show_changes=s['show_changes'],
            big_diffs=self._approvals.enabled,  # a person approving a big change sees its first hunks
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
            if self._contract == 'workspace':
                raise refuse_without_workspace(self._owner)
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
        if isinstance(engine, LocalEngine) and engine is not self._document:
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
            if self._contract == 'workspace':
                raise refuse_without_workspace(self._owner)
            return self._document_engine()
        contract = await self._contract_on(facade)
        if contract == 'document':
            return self._document_engine()
        local = local_backend(facade, FILE_METHODS)
        while self._deprecations:
            self._deprecations.pop(0)()
        if local is None:
            return await self._remote_engine(facade)
        key = self._engine_keys.get(local)
        if key is None:
            key = self._engine_keys[local] = (root_spelling(self._root_dir), await local.working_dir())
        engine = self._workspace_engines.get(key)
        if engine is None:
            if len(self._workspace_engines) >= _MAX_WORKSPACE_ENGINES:
                del self._workspace_engines[next(iter(self._workspace_engines))]
            if key[0] is None:
                core = self._new_core(key[1], None, 'workspace')
            else:  # `contract='workspace'` with `root_dir`: 0.62.0's reading of it, in the workspace
                bounds = await workspace_bounds(facade, key[0])
                core = self._new_core(bounds.root, bounds.cwd, 'workspace', root_named=True)
            engine = self._workspace_engines[key] = LocalEngine(core, key[1])
        return engine

    async def _contract_on(self, workspace: Workspace) -> Contract:
        """The contract a call on the attached `workspace` runs under (`_bounds.contract_on`); with
        `contract` unset and a relative `root_dir`, the first time the document's and 0.62.0's
        readings of it differ, a warning saying both (once per toolset).

        Raises:
            UserError: `contract='document'` on a workspace whose files are not this host's.
        """
        contract = contract_on(workspace, self._contract, root_given=self._root_given, owner=self._owner)
        if self._contract is None and self._root_given and not self._readings_warned:
            core = self._document_engine().core
            assert self._root_dir is not None
            self._readings_warned = await warn_if_readings_differ(
                workspace,
                self._root_dir,
                (core.root_dir, core.cwd),
                in_force=contract,
                owner=self._owner,
                checked=self._readings_checked,
            )
        return contract

    async def _remote_engine(self, workspace: Workspace) -> Engine:
        """The engine for a workspace whose files are not on this host: `RemoteEngine` (`_remote.py`).

        Python moves bytes through the workspace protocol; the Rust core matches, hashes, windows,
        diffs and words every result. The boundary follows 0.62.0's `root_dir` semantics
        (`_bounds.py`), checked before any file I/O. One engine per wrapper stack: a facade made
        per call (`Workspace(backend)`) reuses the engine of an earlier one on the same stack.

        Raises:
            UserError: `root_dir` cannot contain the workspace's working directory (0.62.0's texts).
        """
        layers = _layers(workspace)
        engine = self._remote_engines.pop(layers, None)
        if engine is not None:
            self._remote_engines[layers] = engine  # the most recently used last
            return engine
        spelling = root_spelling(self._root_dir)
        await workspace_bounds(workspace, spelling)
        s = self._settings
        engine = RemoteEngine(
            workspace,
            root_dir=spelling,
            allowed_patterns=s['allowed_patterns'],
            denied_patterns=s['denied_patterns'],
            read_only_patterns=_approval.guarded_patterns(
                read_only_patterns_for(s['read_only_patterns'], 'workspace'), self._approvals
            ),
            max_read_lines=s['max_read_lines'],
            max_read_chars=max_read_chars_for(s['max_read_chars'], 'workspace'),
            max_list_results=s['max_list_results'],
            max_search_results=s['max_search_results'],
            max_find_results=s['max_find_results'],
            content_hashes=s['content_hashes'],
            max_line_chars=s['max_line_chars'],
            report_skipped=s['report_skipped'],
            match=s['match'],
            show_changes=s['show_changes'],
            big_diffs=self._approvals.enabled,
        )
        if len(self._remote_engines) >= _MAX_WORKSPACE_ENGINES:
            del self._remote_engines[next(iter(self._remote_engines))]
        self._remote_engines[layers] = engine
        return engine

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        """The tools, described as the contract of the run's calls describes them (see `_tools.py`).

        On a read-only workspace only `READ_ONLY_TOOL_NAMES`, as 0.62.0 offers.
        """
        tools = await super().get_tools(ctx)
        workspace = _run_workspace(ctx)
        if workspace is None or not workspace.attached:
            return tools
        if workspace.read_only:
            tools = {name: tool for name, tool in tools.items() if name in READ_ONLY_TOOL_NAMES}
        if await self._contract_on(beneath_durable(workspace)) == 'document':
            return tools  # the document's contract on `root_dir`
        docs = await self._workspace_tools().get_tools(ctx)  # pyright: ignore[reportArgumentType]
        return {
            name: replace(
                tool,
                tool_def=replace(
                    tool.tool_def,
                    description=docs[name].tool_def.description,
                    parameters_json_schema=with_options(
                        docs[name].tool_def.parameters_json_schema, tool.tool_def.parameters_json_schema
                    ),
                ),
            )
            if name in docs
            else tool
            for name, tool in tools.items()
        }

    def _workspace_tools(self) -> FunctionToolset[object]:
        """The tools as 0.62.0 describes them (never called): where a workspace run's descriptions
        and schemas come from; our options' arguments are added to them (`with_options`)."""
        if self._workspace_docs is None:
            shape = replace(self._shape, contract='workspace').described()
            self._workspace_docs = FunctionToolset[object]()
            for name in self._tool_names:
                self._workspace_docs.add_function(model_function(TOOLS[name], shape, _never_called), name=name)
        return self._workspace_docs

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT], tool: ToolsetTool[AgentDepsT]
    ) -> Any:
        """Run a tool: one durable unit under DBOS and Prefect, on the plain workspace (`durable/_units.py`);
        where its events cannot reach the run (a Temporal activity) it emits none (`durable/_events.py`)."""
        parent = super()
        if name in CHANGE_TOOLS and self._splits(ctx) and in_dbos_workflow():
            # DBOS workflow code: plan and commit are steps of their own, the listener asked between.
            return await parent.call_tool(name, tool_args, ctx, tool)
        return await call_in_unit(
            'FileSystem', name, ctx, lambda unit: parent.call_tool(name, tool_args, without_events(unit), tool)
        )

    # --- override points -------------------------------------------------------------------

    def open_read(self, resolved: Path) -> BinaryIO:
        """Open an authorized path for a write's pre-change snapshot or an edit's source.

        Only called when a subclass overrides `open_read` or `open_write`; the default I/O runs
        in the Rust core beneath the root descriptor. Returns a binary stream the caller closes.
        """
        return default_open_read(resolved)

    def open_write(self, resolved: Path, *, read_back: bool, create: bool) -> tuple[BinaryIO, bool]:
        """Open an authorized regular file without truncating it; returns `(stream, created)`.

        The stream is seekable; with `read_back` it is readable from position zero. With
        `create=False` a missing file raises `FileNotFoundError`; otherwise creation is
        exclusive, so `created` says whether this open created the file. The caller checks
        the content hash before truncating and writes UTF-8 bytes without newline translation.
        Only called when a subclass overrides `open_read` or `open_write`.
        """
        return default_open_write(
            resolved, self._document_engine().core.relative_to_root(str(resolved)), read_back=read_back, create=create
        )

    # --- how a tool is called ---------------------------------------------------------------

    def _from_model(self, name: str) -> Callable[[RunContext[Any], dict[str, Any]], Any]:
        """How the model's call of tool `name` runs: on the run's engine, with its events."""

        async def call(ctx: RunContext[Any], arguments: dict[str, Any]) -> Any:
            refuse_bare_toolset(ctx, 'FileSystem')
            # The request's key where the run's messages are readable (workflow code, or in-process).
            key = request_key(ctx) if self._approvals.enabled and name in CHANGE_TOOLS else None
            if self._splits(ctx) and (name in CHANGE_TOOLS or not in_dbos_workflow()):
                return await durable_call(self._operations, ctx, name, arguments, whole=self._custom_streams, key=key)
            engine = await self._call_engine(_run_workspace(ctx))
            with current_call(name, arguments, key) as current:
                result = await getattr(self, f'_{name}')(engine, ctx, **arguments)
            return with_note(result, current)  # a person's changed arguments are said

        return call

    async def forget_denied(self, ctx: RunContext[Any]) -> None:
        """Remove the approval records of the changes a resume just denied (`_approval.forget_denied`)."""
        if self._approvals.enabled and _approval.denies(ctx):
            await _approval.forget_denied(ctx, await self._call_engine(_run_workspace(ctx)))

    def _splits(self, ctx: RunContext[Any]) -> bool:
        """Whether a call with `ctx` runs in a durable engine's workflow code, its work in the
        capability's operations (`durable/_operations.py`)."""
        return self._operations is not None and dispatches(ctx, self._operations.id)

    async def _direct(self, name: str, workspace: WorkspaceBackend | None, **arguments: Any) -> Any:
        """A direct call of tool `name`, outside a run: on `workspace`'s engine (or `root_dir`'s), no events."""
        engine = await self._call_engine(workspace)
        return await getattr(self, f'_{name}')(engine, None, **arguments)

    @retry_on_core_errors
    async def _call_engine(self, workspace: WorkspaceBackend | None) -> Engine:
        """`_engine`, its workspace's errors mapped as a tool's are (`_errors.py`)."""
        return await self._engine(workspace)

    # --- the direct methods (the tools' bodies below take the same arguments) ----------------

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
        return await self._direct('read_file', workspace, path=path, offset=offset, limit=limit, column=column)

    async def write_file(
        self, path: str, content: str, *, expected_hash: str | None = None, workspace: WorkspaceBackend | None = None
    ) -> str:
        """Write a text file directly, outside an agent run (no announcement, no event); in `workspace` when given."""
        return await self._direct('write_file', workspace, path=path, content=content, expected_hash=expected_hash)

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
        replacements = [(old_text, new_text)]
        return await self._direct(
            'edit_file', workspace, path=path, replacements=replacements, expected_hash=expected_hash
        )

    async def create_directory(self, path: str, *, workspace: WorkspaceBackend | None = None) -> str:
        """Create a directory directly, outside an agent run (no announcement, no event); in `workspace` when given."""
        return await self._direct('create_directory', workspace, path=path)

    async def apply_patch(self, input: str, *, workspace: WorkspaceBackend | None = None) -> str:
        """Apply a patch in Codex's format directly, outside an agent run (no announcement, no event); in
        `workspace` when given. All or nothing: see `FileSystem(tools=[..., 'apply_patch'])`."""
        return await self._direct('apply_patch', workspace, input=input)

    async def list_directory(self, path: str = '.', *, workspace: WorkspaceBackend | None = None) -> str:
        """List a directory directly, outside an agent run (no event); in `workspace` when given."""
        return await self._direct('list_directory', workspace, path=path)

    async def search_files(
        self,
        pattern: str,
        *,
        path: str = '.',
        include_glob: str | None = None,
        workspace: WorkspaceBackend | None = None,
    ) -> str:
        """Search file contents directly, outside an agent run (no event); in `workspace` when given."""
        return await self._direct('search_files', workspace, pattern=pattern, path=path, include_glob=include_glob)

    async def find_files(self, pattern: str, *, path: str = '.', workspace: WorkspaceBackend | None = None) -> str:
        """Find files by glob pattern directly, outside an agent run (no event); in `workspace` when given."""
        return await self._direct('find_files', workspace, pattern=pattern, path=path)

    async def list_files(
        self, path: str = '.', *, glob: str | None = None, workspace: WorkspaceBackend | None = None
    ) -> str:
        """List files with ripgrep's rules directly, outside an agent run (no event); in `workspace` when given."""
        return await self._direct('list_files', workspace, path=path, glob=glob)

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
        options = {'glob': glob, 'file_type': file_type, 'ignore_case': ignore_case, 'literal': literal}
        return await self._direct('grep', workspace, pattern=pattern, path=path, context=context, **options)

    async def file_info(self, path: str, *, workspace: WorkspaceBackend | None = None) -> str:
        """Get metadata about a file or directory directly, outside an agent run; in `workspace` when given."""
        return await self._direct('file_info', workspace, path=path)

    # --- the tools' bodies: `_<tool>(engine, ctx, **arguments)`, `ctx` `None` outside a run ---

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
        given, given_limit = offset, limit
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
            if offset == given and limit == given_limit:
                raise
            text = str(e).replace(f'got {offset}.', f'got {given}.').replace(f'got {limit}.', f'got {given_limit}.')
            raise ModelRetry(text.replace(str(offset), str(given))) from e
        await note_read(engine, path, outcome)
        if ctx is not None and outcome.emit:
            await ctx.emit(
                FileReadEvent(path=outcome.path, root_dir=await engine.root_dir(), content_hash=_hash(outcome))
            )
        return outcome.text if content is None else [outcome.text, content]

    @retry_on_core_errors
    async def _write_file(
        self,
        engine: Engine,
        ctx: RunContext[AgentDepsT] | None,
        path: str,
        content: str,
        *,
        expected_hash: str | None = None,
    ) -> str | Planned:
        self._refuse_if_read_only()
        done = await self._change(
            engine,
            ctx,
            path,
            expected_hash,
            # With show_changes a direct call reads the old file too, to show what changed.
            lambda guard: engine.plan_write(
                path, content, guard, ctx is not None or bool(self._settings['show_changes'])
            ),
            lambda guard: write_with_streams(self, self._core, ctx, path, content, guard, self._content_hashes),
        )
        if not isinstance(done, tuple):
            return done
        outcome = done[1]
        if ctx is not None:
            await ctx.emit(
                FileWrittenEvent(path=outcome.path, root_dir=await engine.root_dir(), content_hash=_hash(outcome))
            )
        return outcome.text

    @retry_on_core_errors
    async def _edit_file(
        self,
        engine: Engine,
        ctx: RunContext[AgentDepsT] | None,
        path: str,
        replacements: list[EditPair],
        *,
        expected_hash: str | None = None,
    ) -> str | Planned:
        self._refuse_if_read_only()
        done = await self._change(
            engine,
            ctx,
            path,
            expected_hash,
            lambda guard: engine.plan_edit(path, replacements, guard),
            lambda guard: edit_with_streams(self, self._core, ctx, path, replacements, guard, self._content_hashes),
        )
        if not isinstance(done, tuple):
            return done
        plan, outcome = done
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

    @retry_on_core_errors
    async def _apply_patch(self, engine: Engine, ctx: RunContext[AgentDepsT] | None, input: str) -> str | Planned:
        self._refuse_if_read_only()
        return await apply_patch(engine, ctx, input, self._approvals, self._content_hashes)

    def _refuse_if_read_only(self) -> None:
        """Refuse a change on a read-only toolset (a direct call: the model is not offered the tool).

        Raises:
            ToolFailed: `This FileSystem is read-only; the change was refused.`
        """
        if self._read_only:
            raise ToolFailed(READ_ONLY_TOOLSET)

    async def _change(
        self,
        engine: Engine,
        ctx: RunContext[AgentDepsT] | None,
        path: str,
        expected_hash: str | None,
        plan_change: Callable[[str | None], Awaitable[Plan]],
        with_streams: Callable[[str | None], Awaitable[str]],
    ) -> str | Planned | tuple[Plan, Outcome] | tuple[_Written, _Written]:
        """A write or edit of `path` through the change pipeline, under the file's turn: plan it
        (`plan_change(guard)`, the guard being the hash the file must have), announce it, commit it.

        Returns the tool result when it ends there (a listener's refusal; the custom-streams path,
        `with_streams(guard)`, which announces and writes itself), else the plan and the outcome
        (a durable commit whose first attempt wrote: that attempt's, `_Written`, as both).
        Inside a durable plan operation (`durable/_operations.STAGE`) it returns the `Planned`
        change instead; inside a commit operation it plans against the planned hash and commits.
        """
        key = await engine.lock_key(path)
        async with file_turns().hold(engine.storage, key):
            change = guarded_change(engine.storage, key, path, expected_hash)
            if self._custom_streams and engine is self._document:
                with os_errors_for_the_model(self._core), change.checked():
                    text = await with_streams(change.expected_hash)
                change.saw(None)
                return text
            with change.checked():
                stage = STAGE.get()
                if stage is not None and stage.commit:
                    # The commit operation: the file must still be as planned (`Pin.planning`: an
                    # approved call's conflict is the approval's stale-request retry).
                    with _approval.Pin(stage.base_hash, approved=stage.approved).planning(path):
                        try:
                            plan = await plan_change(stage.base_hash)
                        except _core.ConflictError:
                            if (done := await _written_before(engine, path, stage)) is None:
                                raise
                            change.saw(done.content_hash)
                            return done, done
                else:
                    pinned = await _approval.pin(self._approvals, ctx, engine, path, change.expected_hash)
                    if stage is not None and pinned.guard is None:
                        # The plan operation: planned against the hash the file has now, which the
                        # commit operation then requires.
                        pinned.guard = await current_hash(engine, path)
                    with pinned.planning(path):
                        plan = await plan_change(pinned.guard)
                    if (request := await _approval.request(self._approvals, ctx, engine, plan, pinned)) is not None:
                        raise ApprovalRequired(metadata=request)
                    if stage is not None:
                        return _planned(plan, pinned.guard, approved=pinned.approved)
                    if (refusal := await announce(ctx, plan)) is not None:
                        return refusal
                outcome = await engine.commit(plan)
            change.saw(outcome.content_hash)
        return plan, outcome

    @retry_on_core_errors
    async def _create_directory(self, engine: Engine, ctx: RunContext[AgentDepsT] | None, path: str) -> str | Planned:
        self._refuse_if_read_only()
        # Under the path's turn, as writes and edits: a write of the same path waits, then sees it.
        async with file_turns().hold(engine.storage, await engine.lock_key(path)):
            stage = STAGE.get()
            committing = stage is not None and stage.commit  # a durable commit operation: asked already
            pinned = None if committing else await _approval.pin(self._approvals, ctx, engine, path, None)
            plan = await engine.plan_create_directory(path)
            if plan is None:
                # Already a directory: nothing changes, so nothing is announced or reported (also a
                # durable commit whose first attempt made it).
                return f'Created directory: {path}'
            if pinned is not None:
                if (request := await _approval.request(self._approvals, ctx, engine, plan, pinned)) is not None:
                    raise ApprovalRequired(metadata=request)
                if stage is not None:  # a durable plan operation
                    return _planned(plan, None, approved=pinned.approved)
                if (refusal := await announce(ctx, plan)) is not None:
                    return refusal
            outcome = await engine.commit(plan)
        if ctx is not None and outcome.emit:
            await ctx.emit(DirectoryCreatedEvent(path=outcome.path, root_dir=await engine.root_dir()))
        return outcome.text

    @retry_on_core_errors
    async def _list_directory(self, engine: Engine, ctx: RunContext[AgentDepsT] | None, path: str = '.') -> str:
        outcome = await engine.list_directory(path)
        if ctx is not None:
            await ctx.emit(
                DirectoryListedEvent(path=outcome.path, root_dir=await engine.root_dir(), entry_count=outcome.count)
            )
        return outcome.text

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
        return await _searched(engine, ctx, outcome, pattern, 'grep')

    @retry_on_core_errors
    async def _find_files(
        self, engine: Engine, ctx: RunContext[AgentDepsT] | None, pattern: str, *, path: str = '.'
    ) -> str:
        outcome = await engine.find_files(pattern, path)
        return await _searched(engine, ctx, outcome, pattern, 'find')

    @retry_on_core_errors
    async def _list_files(
        self, engine: Engine, ctx: RunContext[AgentDepsT] | None, path: str = '.', *, glob: str | None = None
    ) -> str:
        outcome = await engine.list_files(path, glob)
        return await _searched(engine, ctx, outcome, glob or '', 'find')

    @retry_on_core_errors
    async def _grep(
        self,
        engine: Engine,
        ctx: RunContext[AgentDepsT] | None,
        pattern: str,
        *,
        path: str,
        context: int,
        **options: Any,
    ) -> str:
        """`options`: `glob`, `file_type`, `ignore_case`, `literal`, as the core takes them."""
        if not 0 <= context <= 20:
            raise ModelRetry('context must be between 0 and 20.')
        outcome = await engine.grep(pattern, path, context=context, **options)
        return await _searched(engine, ctx, outcome, pattern, 'grep')

    @retry_on_core_errors
    async def _file_info(self, engine: Engine, ctx: RunContext[AgentDepsT] | None, path: str) -> str:
        try:
            outcome = await engine.file_info(path)
        except _core.NotFoundError:
            await note_read(engine, path, None)
            raise
        await note_read(engine, path, outcome)
        return outcome.text


async def _never_called(ctx: RunContext[Any], arguments: dict[str, Any]) -> Any:
    raise NotImplementedError


async def _searched(
    engine: Engine, ctx: RunContext[Any] | None, outcome: Outcome, pattern: str, search: Literal['find', 'grep']
) -> str:
    """A search's result text, after its `FilesSearchedEvent` (in a run)."""
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
    return outcome.text


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


def _layers(workspace: Workspace) -> tuple[int, ...]:
    """The ids of `workspace`'s wrappers and its backend, outermost first; plain `Workspace` facades are skipped."""
    layers: list[int] = []
    layer: object = workspace
    while isinstance(layer, Workspace):
        if type(layer) is not Workspace:
            layers.append(id(layer))
        layer = layer._backend  # pyright: ignore[reportPrivateUsage]
    return (*layers, id(layer))


def _run_workspace(ctx: RunContext[Any]) -> Workspace | None:
    """The run's workspace (`ctx.workspace`), or `None` on a Pydantic AI release without workspaces."""
    return getattr(ctx, 'workspace', None)


def _planned(plan: Plan, base_hash: str | None, *, approved: bool) -> Planned:
    """A durable plan operation's answer: the change to announce, the hash it was planned against,
    and the result its commit answers."""
    return Planned(
        plan.path,
        plan.root_dir,
        plan.operation,
        plan.diff,
        plan.truncated,
        base_hash,
        approved,
        result_hash=plan.result_hash,
        result_text=plan.result_text,
    )


@dataclass(frozen=True)
class _Written:
    """A change an earlier attempt of the same durable commit made: its plan's diff and its outcome."""

    text: str
    path: str
    content_hash: str
    diff: str
    truncated: bool
    emit: bool = True


async def _written_before(engine: Engine, path: str, stage: Stage) -> _Written | None:
    """The answer of the first attempt of `stage`'s commit when `path` already holds exactly the
    planned result (that attempt wrote, its worker died before the engine recorded it), else `None`."""
    planned = stage.planned
    if planned is None or planned.result_hash is None or planned.result_text is None:
        return None
    if await current_hash(engine, path) != planned.result_hash:
        return None
    return _Written(planned.result_text, planned.path, planned.result_hash, planned.diff, planned.truncated)


def _hash(outcome: Outcome | _Written) -> str:
    """The content hash an event carries (always present for reads, writes and edits)."""
    assert outcome.content_hash is not None
    return outcome.content_hash
