"""The `FileSystem` capability: its configuration, validated at construction, and the toolset it builds.

The fields mirror both references' (plus our options); each run picks its contract (`_toolset.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic_ai.capabilities import AbstractCapability, durable_operation
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import AgentDepsT, RunContext
from pydantic_ai.toolsets import FilteredToolset

from pydantic_ai_harness_rs._sandbox import adopt_host_modules, in_workflow_sandbox
from pydantic_ai_harness_rs._settings import passed_on
from pydantic_ai_harness_rs._workspace import refuse_unavailable, require_workspace
from pydantic_ai_harness_rs.durable._events import beneath_durable
from pydantic_ai_harness_rs.durable._listeners import as_workflow_failure
from pydantic_ai_harness_rs.durable._operations import Planned, Stage, UnitResult, in_dbos_workflow, run_unit
from pydantic_ai_harness_rs.filesystem._approval import ApprovalPredicate
from pydantic_ai_harness_rs.filesystem._approval import checked as checked_approvals
from pydantic_ai_harness_rs.filesystem._bounds import checked_contract, refuse_document_off_host, root_spelling
from pydantic_ai_harness_rs.filesystem._defaults import (
    DEFAULT_PROTECTED_PATTERNS,
    DEFAULT_READ_ONLY_PATTERNS,
    UNSET_MAX_READ_CHARS,
    UNSET_READ_ONLY_PATTERNS,
    WORKSPACE_MAX_READ_CHARS,
    Contract,
)
from pydantic_ai_harness_rs.filesystem._tools import DEFAULT_TOOL_NAMES, READ_ONLY_TOOL_NAMES
from pydantic_ai_harness_rs.filesystem._toolset import FileSystemToolset

__all__ = ['DEFAULT_PROTECTED_PATTERNS', 'DEFAULT_READ_ONLY_PATTERNS', 'FileSystem']

DEFAULT_ID = 'file_system'
"""A `FileSystem`'s `id` when none is given (its toolset's id too)."""

_CONVERTED = frozenset({'root_dir', 'cwd', 'read_only_patterns', 'protected_patterns', 'max_read_chars', 'id'})
"""The fields `get_toolset` hands on changed; every other field the toolset takes goes as it is."""


@dataclass
class FileSystem(AbstractCapability[AgentDepsT]):
    """Sandboxed, pattern-filtered file tools over one directory tree.

    A drop-in for `pydantic_ai_harness.FileSystem`, under one of two contracts chosen per run:

    - `root_dir` given, or no workspace attached to the run: the document (`filesystem.md`,
      pydantic-ai-harness 0.36.0). The tree is `root_dir` on this host (default: the current
      directory); relative paths resolve from `cwd` (default `root_dir`).
    - `root_dir` left out and the run has a workspace (`LocalWorkspace(...)`, `workspace=` on
      the run): pydantic-ai-harness 0.62.0's. The tree is the workspace's working directory,
      relative paths resolve from it, `cwd` is ignored (with a deprecation warning), and the
      unset `max_read_chars` and `read_only_patterns` take 0.62.0's defaults.

    `contract` makes the choice explicit: `'workspace'` is 0.62.0's contract on every workspace,
    `root_dir` included (a path in the workspace, from its working directory); `'document'`
    is the document's, `root_dir` a directory of this host, on any workspace whose files are
    this host's. Left unset, a relative `root_dir` that the two would read as different
    directories on a local workspace gets a warning saying both, at the first call there.

    Both give the same tools, with path resolution, access checks, reads, writes, diffs and
    walks in Rust; anything resolving outside the root is refused, symlinks included.

    Raises:
        ValueError: an integer limit is not a positive `int`, `max_retries` is not `None` or a
            non-negative `int`, `cwd` lies outside `root_dir`,
            or `tools` names an unknown tool (the latter two when the toolset is built).
        TypeError: both `read_only_patterns` and its deprecated name `protected_patterns` are given.
        UserError: with `contract='workspace'`, `root_dir` starts with `~` or lies below the working
            directory (0.62.0's texts, at construction); at the start of a run, the run's workspace
            is an `UnavailableWorkspace`, or `contract='workspace'` and the run has no workspace
            (0.62.0's text), or `contract='document'` and the workspace's files are not on this
            host (or it is read-only).
    """

    root_dir: str | Path | None = None
    """Root directory every operation is confined to, on this host. `None`: the run's workspace's
    working directory when one is attached, else the current directory. Under 0.62.0's contract
    (`contract='workspace'`, or a workspace whose files are not on this host) a path in the
    workspace instead: relative to its working directory, which it must contain."""

    cwd: str | Path | None = None
    """Directory relative paths resolve from; must lie inside `root_dir`. Defaults to `root_dir`.
    Deprecated and ignored on a workspace (set the directory on the workspace instead)."""

    allowed_patterns: Sequence[str] = field(default_factory=list[str])
    """fnmatch globs (`*` spans `/`); if non-empty, only matching root-relative paths are accessible."""

    denied_patterns: Sequence[str] = field(default_factory=list[str])
    """fnmatch globs of paths always refused, and everything below a matching directory (case-insensitive)."""

    read_only_patterns: Sequence[str] = UNSET_READ_ONLY_PATTERNS
    """fnmatch globs of read-only paths (and their descendants, case-insensitive); `[]` disables protection.
    Unset: `DEFAULT_PROTECTED_PATTERNS` under the document, `DEFAULT_READ_ONLY_PATTERNS` on a workspace.
    Left unset with `root_dir` given (the document), the attribute holds the document's list; without
    `root_dir`, where each run picks the contract, a tuple equal to 0.62.0's list whose repr names both."""

    max_read_lines: int = 2000
    """Most lines one `read_file` returns; also caps an explicit `limit`."""

    max_read_chars: int | None = UNSET_MAX_READ_CHARS
    """Most characters of one `read_file` result, header and hint included, ending on a whole line;
    `None`: no cap. Unset: `None` under the document, 50,000 on a workspace. Left unset with `root_dir`
    given (the document), the attribute is `None`; without `root_dir`, where each run picks the
    contract, an `int` equal to 50000 whose repr names both defaults."""

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

    replace_all: bool = field(default=False, kw_only=True)
    """Give `edit_file` a `replace_all` argument, top level and per `replacements` item: replace every
    (non-overlapping) occurrence of `old_text` instead of requiring exactly one. Off: the documented
    schema, unchanged. Beyond both references (issue 9)."""

    max_retries: int | None = field(default=None, kw_only=True)
    """Consecutive retries each tool allows before the run fails (a success resets the count);
    `None` uses the agent's tool retry budget. Keyword-only, as in pydantic-ai-harness 0.62.0."""

    protected_patterns: Sequence[str] | None = field(default=None, kw_only=True)
    """The document's (0.36.0's) name of `read_only_patterns`; deprecated on a workspace (a warning there)."""

    max_line_chars: int | None = field(default=None, kw_only=True)
    """Clip lines longer than this many characters in `read_file`, `search_files` and `grep`
    results, each clipped line ending with a notice that gives the `read_file(path, offset,
    limit=1, column=...)` call showing the rest (`read_file` then takes a `column` argument:
    the 0-based character each line starts from); a search hit shows this many characters
    around its match. `None`: lines shown whole, the documented schemas and results. Beyond
    both references (issue 9)."""

    report_skipped: bool = field(default=False, kw_only=True)
    """End `list_directory`, `find_files`, `search_files`, `list_files` and `grep` results with a
    line saying what the walk left out and why, with counts: `[skipped: N hidden entries (...),
    N entries ignored by .gitignore/.ignore (...), N binary files]` (nothing when nothing was
    skipped; under the workspace contract it replaces 0.62.0's hidden-entries trailer). Off:
    the documented results. Beyond both references (issue 9)."""

    match: Literal['exact', 'tolerant'] = field(default='exact', kw_only=True)
    """How `edit_file` finds `old_text`. `'exact'`: as documented. `'tolerant'`: after an exact
    miss, tiers tried in order, each only when the one before finds nothing: ignoring trailing
    whitespace; also ignoring leading indentation that differs by one prefix on every non-blank
    line (`new_text` is then re-indented by it); also Unicode punctuation folded to ASCII (curly
    quotes, dashes, non-breaking spaces, the ellipsis). A match on those tiers must be unique
    on its tier (else the usual retry, naming the tier), `replace_all` replaces that tier's
    matches, only the file's matched bytes are replaced, and the result ends with what it
    ignored: `[matched ignoring trailing whitespace on lines 12-14]`. `apply_patch` finds its
    hunks' lines and `@@` anchors the same way (a match past the exact tier unique from where the
    hunk is looked for, added lines re-indented by the shift) and ends the file's result line with
    `[matched ...]` (`[hunk 2 matched ...]` in an update of several hunks). Beyond both references
    (issue 22)."""

    show_changes: int | None = field(default=None, kw_only=True)
    """Lines of context: `edit_file`, and `write_file` over an existing file, end their result
    with the changed lines and this many lines around them, numbered as `read_file` numbers
    them, under a `[lines 9-17, changed 12-14]` header per region (close regions merged), cut
    after 2,000 characters with a hint naming the `read_file` offset to read on. `apply_patch`
    follows each updated file's result line with its changed regions, one 2,000-character cap for
    the whole result (files in result order). `None` or 0: results as documented. Beyond both
    references (issue 22)."""

    require_approval: bool | Sequence[str] | ApprovalPredicate = field(default=False, kw_only=True)
    """Which changes need a person, through Pydantic AI's deferred tools: `False` (none), `True`
    (every change tool: `write_file`, `edit_file`, `create_directory`), a list of those tool names
    (another name is a `ValueError`), or a callable of one positional argument, the `PlannedChange`
    (sync or async, returning whether this one needs a person; another signature is a `TypeError`
    at construction). A callable that raises fails closed: the change needs a person, the metadata
    says why (`approval_check_error`: `'<type>: <message>'`) and a warning is logged (logger
    `pydantic_ai_harness_rs.approvals`). Such a change is planned and checked, nothing is written, and
    the call raises `ApprovalRequired` with the planned change as metadata (`operation`, `path`,
    `root_dir`, `diff`, `truncated`, `content_hash`, ...; see the README's "Approvals"): the run
    ends with `DeferredToolRequests` (the agent's `output_type` must allow it). Resumed with
    `ToolApproved()` it commits the planned change if the file still has `content_hash` (else the
    model gets a retry to plan again); with `ToolApproved(override_args=...)` the person's arguments
    run and the model is told; `ToolDenied(message)` reaches the model (and the request's record
    is removed). Beyond both references (issue 21)."""

    contract: Literal['document', 'workspace'] | None = field(default=None, kw_only=True)
    """Which contract every run follows, and so what `root_dir` means. `None`: chosen per run as
    above (`root_dir` given on a `LocalWorkspace`: a host directory; a warning at the first call
    when 0.62.0 would read a relative `root_dir` as a different directory). `'workspace'`:
    pydantic-ai-harness 0.62.0's contract on every workspace, a `LocalWorkspace` included:
    `root_dir` is a workspace path, relative to the working directory, which it must contain
    (`'..'` is the parent of the working directory; `'src'` is a `UserError` at construction),
    paths resolve from the working directory, and 0.62.0's defaults and texts apply; a run or
    direct call without a workspace is a `UserError`. `'document'`: the document's contract,
    `root_dir` a directory of this host read from the process's directory, even with a
    workspace on the run; a workspace whose files are not on this host (a sandbox, an in-memory
    store) or that is read-only is then a `UserError` at the start of the run. Unset
    `max_read_chars` and `read_only_patterns` show the chosen contract's defaults."""

    _toolset: FileSystemToolset[AgentDepsT] | FilteredToolset[AgentDepsT] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """The toolset `get_toolset` built (0.62.0 returns the same one each time)."""

    _renamed: ClassVar[bool] = False
    """Set on an instance given `protected_patterns` (warned about when a workspace first selects 0.62.0's contract)."""

    _contract_defaults: ClassVar[dict[str, Any]] = {}
    """Per instance: the document's defaults `__post_init__` put in fields left unset with `root_dir` given."""

    def __post_init__(self) -> None:
        adopt_host_modules()  # built in a Temporal workflow sandbox: its modules are the host's
        if self.id is None:
            # Stable across processes, as durable operations need (a Temporal activity, a DBOS
            # step is named by it): the id the toolset always had. Two FileSystems on one agent
            # pass distinct ids.
            self.id = DEFAULT_ID
        if self.protected_patterns is not None:
            if self.read_only_patterns is not UNSET_READ_ONLY_PATTERNS:
                raise TypeError('Pass `read_only_patterns` only: `protected_patterns` is its deprecated name.')
            self.read_only_patterns, self.protected_patterns, self._renamed = self.protected_patterns, None, True
        self._contract_defaults: dict[str, Any] = {}
        if (chosen := checked_contract(self.contract)) is not None:
            if chosen == 'workspace':
                root_spelling(self.root_dir)  # 0.62.0's `UserError` for `~` or a root below the working directory
            self._show_defaults(chosen)
        elif self.root_dir is not None:
            # `root_dir` selects the document: show the values in force there, not 0.62.0's.
            if self.max_read_chars is UNSET_MAX_READ_CHARS:
                self.max_read_chars = self._contract_defaults['max_read_chars'] = None
            if self.read_only_patterns is UNSET_READ_ONLY_PATTERNS:
                self.read_only_patterns = self._contract_defaults['read_only_patterns'] = list(
                    DEFAULT_PROTECTED_PATTERNS
                )
        limits: dict[str, Any] = {
            'max_read_lines': self.max_read_lines,
            'max_list_results': self.max_list_results,
            'max_search_results': self.max_search_results,
            'max_find_results': self.max_find_results,
        }
        if self.max_read_chars is not None:
            limits['max_read_chars'] = self.max_read_chars
        if self.max_line_chars is not None:
            limits['max_line_chars'] = self.max_line_chars
        for name, value in limits.items():
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f'{name} must be a positive integer, got {value!r}')
        if self.match not in ('exact', 'tolerant'):
            raise ValueError(f"match must be 'exact' or 'tolerant', got {self.match!r}")
        shown: object = self.show_changes
        if shown is not None and (not isinstance(shown, int) or isinstance(shown, bool) or shown < 0):
            raise ValueError(f'show_changes must be a non-negative integer or None, got {shown!r}')
        checked_approvals(self.require_approval)
        retries: object = self.max_retries
        if retries is not None and (not isinstance(retries, int) or isinstance(retries, bool) or retries < 0):
            raise ValueError(f'max_retries must be a non-negative integer, got {retries!r}')

    def _show_defaults(self, contract: Contract) -> None:
        """Put `contract`'s defaults in the fields left unset (every run follows it)."""
        if self.max_read_chars is UNSET_MAX_READ_CHARS:
            self.max_read_chars = WORKSPACE_MAX_READ_CHARS if contract == 'workspace' else None
        if self.read_only_patterns is UNSET_READ_ONLY_PATTERNS:
            chosen = DEFAULT_READ_ONLY_PATTERNS if contract == 'workspace' else DEFAULT_PROTECTED_PATTERNS
            self.read_only_patterns = list(chosen)

    async def on_run_error(self, ctx: RunContext[AgentDepsT], *, error: BaseException) -> AgentRunResult[Any]:
        """Raise `error`; under Temporal, a listener's exception as the non-retryable `ApplicationError`
        that fails the workflow once instead of its task forever (`durable/_listeners.py`)."""
        raise as_workflow_failure(error)

    async def before_run(self, ctx: RunContext[AgentDepsT]) -> None:
        """Fail the run at its start when its workspace is an `UnavailableWorkspace` (0.62.0's message),
        or cannot serve the `contract` chosen: none under `'workspace'` (0.62.0's message), one whose
        files are not on this host under `'document'`."""
        workspace = getattr(ctx, 'workspace', None)
        if workspace is not None:
            refuse_unavailable(workspace, 'FileSystem')
            if self.contract == 'workspace':
                require_workspace(workspace, 'FileSystem', ctx.messages)
            elif self.contract == 'document' and workspace.attached:
                refuse_document_off_host(beneath_durable(workspace), 'FileSystem')

    async def before_model_request(
        self, ctx: RunContext[AgentDepsT], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """With `require_approval`: remove the records of the changes a resume just denied (`ToolDenied`);
        not in Temporal or DBOS workflow code, where no I/O may run and the workspace's backend cannot be
        reached (those records are pruned after 30 days)."""
        if self.require_approval is not False and not in_workflow_sandbox() and not in_dbos_workflow():
            await self._unit_toolset().forget_denied(ctx)
        return request_context

    # --- durable operations: a call's work where it runs in workflow code (durable/_operations.py) ---

    def _unit_toolset(self) -> FileSystemToolset[AgentDepsT]:
        toolset = self.get_toolset()
        return toolset.wrapped if isinstance(toolset, FilteredToolset) else toolset  # pyright: ignore

    @durable_operation(name='tool')
    async def _durable_tool(self, ctx: RunContext[Any], name: str, arguments: dict[str, Any]) -> UnitResult:
        """Tool `name` whole, its events recorded."""
        return await run_unit(self._unit_toolset(), ctx, name, arguments, None)

    @durable_operation(name='plan_change')
    async def _durable_plan(
        self, ctx: RunContext[Any], name: str, arguments: dict[str, Any], key: str | None = None
    ) -> UnitResult:
        """The plan of change `name`: what to announce, and the content hash it was planned against;
        `key`: its approval request's key, computed in workflow code (`_approvals.request_key`)."""
        return await run_unit(self._unit_toolset(), ctx, name, arguments, Stage(commit=False), key)

    @durable_operation(name='commit_change')
    async def _durable_commit(
        self,
        ctx: RunContext[Any],
        name: str,
        arguments: dict[str, Any],
        base_hash: str | None,
        approved: bool = False,
        overridden: bool = False,
        planned: Planned | None = None,
    ) -> UnitResult:
        """Change `name` planned again against `base_hash` (a conflict retry if the file changed), committed;
        `approved` / `overridden`: what the plan found of a person's approval; `planned`: the plan,
        whose result a retry finds written by its first attempt is answered again (`Stage.planned`)."""
        stage = Stage(commit=True, base_hash=base_hash, approved=approved, overridden=overridden, planned=planned)
        return await run_unit(self._unit_toolset(), ctx, name, arguments, stage)

    def _unless_default(self, name: str, unset: Any) -> Any:
        """Field `name` as the toolset takes it: `unset` (each contract's default) while it still holds
        the document's default `__post_init__` showed for it (a non-local workspace, where 0.62.0's
        contract applies even with `root_dir`, then still gets 0.62.0's default)."""
        value = getattr(self, name)
        if name in self._contract_defaults and value is self._contract_defaults[name]:
            return unset
        return value

    def get_toolset(self) -> FileSystemToolset[AgentDepsT] | FilteredToolset[AgentDepsT]:
        """The toolset, built on the first call and the same object after it (as 0.62.0); with
        `read_only`, filtered to `READ_ONLY_TOOL_NAMES` (as both references return it), around a
        toolset that is itself read-only: its direct `write_file`, `edit_file` and
        `create_directory` (through `.wrapped`) refuse with `ToolFailed`."""
        if self._toolset is None:
            self._toolset = self._build_toolset()
        return self._toolset

    def _build_toolset(self) -> FileSystemToolset[AgentDepsT] | FilteredToolset[AgentDepsT]:
        patterns = {
            'protected_patterns' if self._renamed else 'read_only_patterns': self._unless_default(
                'read_only_patterns', UNSET_READ_ONLY_PATTERNS
            )
        }
        toolset = FileSystemToolset[AgentDepsT](
            root_dir=None if self.root_dir is None else Path(self.root_dir),
            cwd=None if self.cwd is None else Path(self.cwd),
            **patterns,
            id=self.id or DEFAULT_ID,
            owner='FileSystem',
            max_read_chars=self._unless_default('max_read_chars', UNSET_MAX_READ_CHARS),
            **passed_on(self, FileSystemToolset, besides=_CONVERTED),
        )
        toolset._operations = self  # pyright: ignore
        if self.read_only:
            return FilteredToolset(toolset, lambda ctx, tool: tool.name in READ_ONLY_TOOL_NAMES)
        return toolset
