"""Type stub of the Rust extension module `pydantic_ai_harness_rs._core`.

This stub is the contract between the Rust core (`src/py/`) and the Python layer.
Every path argument is what the model passed (relative to `cwd`, or absolute).
Every `cancel` is a `CancelToken` the native loop polls; a cancelled call raises `CancelledError`.
Model-facing messages never contain an absolute host path outside the root (`<outside-workspace>`).
"""

import builtins
import os
import pathlib
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal, NoReturn, Self, final

# Every name the extension adds (PyO3 lists them in the module's `__all__`, which stubtest compares).
__all__ = [
    '__version__',
    'CancelToken',
    # errors
    'HarnessError',
    'RetryableError',
    'OutsideRootError',
    'DeniedError',
    'ProtectedError',
    'NotFoundError',
    'ConflictError',
    'NoMatchError',
    'AmbiguousMatchError',
    'OffsetPastEndError',
    'InvalidPatternError',
    'InvalidArgumentError',
    'CancelledError',
    # FileSystem
    'FileSystemCore',
    'Outcome',
    'ChangePlan',
    'PatchPlan',
    'PatchFile',
    'content_hash',
    'text_hash',
    'unified_diff',
    'apply_replacements',
    # Shell
    'ForegroundCommand',
    'Session',
    'job_launch',
    'job_attach',
    'job_status',
    'job_ended',
    'job_cpu_ns',
    'job_size',
    'job_read',
    'job_tail',
    'job_kill',
    'job_wait',
    'job_cleanup',
    'job_prune',
    'COMMAND_TOO_LONG',
    'CommandTooLongError',
    'LOG_CHECK_INTERVAL',
    'LOG_WATCHER',
    'sandbox_support',
    # FileSystem on a workspace backend (bytes handed in)
    'RemoteCore',
    'RemoteGlob',
    'RemoteKept',
    'RemoteRanged',
    'RemoteSearch',
    'RemoteRgWalk',
    'RemoteGrep',
    'NOT_REGULAR_FILE',
    # Checkpoints
    'CheckpointStore',
    'RemoteCheckpointStore',
    'CheckpointError',
    # Interactive sessions held by a relay process
    '_session_relay',
]

__version__: str

# --- errors -------------------------------------------------------------------------------------
class HarnessError(Exception): ...

class RetryableError(HarnessError):
    """The model can correct the call; the Python layer raises `ModelRetry(str(error))`."""

class OutsideRootError(RetryableError): ...
class DeniedError(RetryableError): ...
class ProtectedError(RetryableError): ...
class NotFoundError(RetryableError): ...
class ConflictError(RetryableError): ...
class NoMatchError(RetryableError): ...
class AmbiguousMatchError(RetryableError): ...
class OffsetPastEndError(RetryableError): ...
class InvalidPatternError(RetryableError): ...
class InvalidArgumentError(RetryableError): ...

class CommandTooLongError(RetryableError):
    """The OS refused a command as too long (`E2BIG`) and the invocation without it starts."""

class CancelledError(HarnessError): ...

@final
class CancelToken:
    def __new__(cls) -> Self: ...
    def cancel(self) -> None: ...
    @property
    def cancelled(self) -> bool: ...

# --- FileSystem ---------------------------------------------------------------------------------
def content_hash(data: bytes) -> str:
    """12 hex chars of sha256: of `data` if it is binary (NUL in its first 8192 bytes), else of
    `data` decoded as UTF-8 with U+FFFD replacement and re-encoded (the reference's `_disk_hash`)."""

def text_hash(text: str) -> str:
    """12 hex chars of sha256 of `text` encoded as UTF-8 (the reference's `_content_hash`)."""

def unified_diff(old: str | None, new: str, path: str) -> tuple[str, bool]:
    """The event diff `(diff, truncated)`: git-style headers `a/{path}`/`b/{path}`, `\\ No newline
    at end of file` markers, cut at 8192 chars on a line boundary; headers only (truncated) when
    `old` is None, either side is over 32768 chars, or the line-count product is over 65536."""

@final
class ChangePlan:
    """A change checked and ready to announce with `FileChangeRequestEvent`, then commit."""
    @property
    def path(self) -> str: ...
    """Event path, relative to the real root: resolved (document contract), or as written,
    joined to the working directory and normalized as text (workspace contract)."""
    @property
    def root_dir(self) -> str: ...
    @property
    def operation(self) -> Literal['write', 'edit', 'create_directory']: ...
    @property
    def diff(self) -> str: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def result_hash(self) -> str | None: ...
    """The content hash the file has once this plan is committed, as `read_file` then reports it;
    `None` for a `create_directory`."""
    @property
    def result_text(self) -> str | None: ...
    """The tool result committing this plan answers (`Wrote N chars (L lines) to p. [hash:H]`,
    `Edited p. [hash:H]`); `None` for a `create_directory`."""

@final
class PatchFile:
    """One file of a planned patch."""
    @property
    def path(self) -> str: ...
    """Event path, relative to the root."""
    @property
    def path_argument(self) -> str: ...
    """The path as the patch names it (a move's destination)."""
    @property
    def moved_from(self) -> str | None: ...
    @property
    def operation(self) -> Literal['write', 'edit', 'delete']: ...
    @property
    def diff(self) -> str: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def target(self) -> str: ...
    """The path beneath the root (a workspace path on a backend): what the commit writes."""
    @property
    def old_content(self) -> bytes | None: ...
    """The bytes the file had when planned; `None`: no file."""
    @property
    def new_content(self) -> bytes | None: ...
    """The bytes it will have; `None`: removed."""
    @property
    def old_hash(self) -> str | None: ...
    """The content hash the file had when planned; `None`: no file."""
    @property
    def new_hash(self) -> str | None: ...
    """The content hash it will have; `None`: removed."""

@final
class PatchPlan:
    """A patch planned whole, ready to announce file by file, then commit."""
    @property
    def files(self) -> list[PatchFile]: ...
    """The files, sorted by event path."""
    @property
    def root_dir(self) -> str: ...
    def result_text(self, content_hashes: bool) -> str: ...

@final
class Outcome:
    """A finished operation: the model-facing `text` plus what its event needs."""
    @property
    def text(self) -> str: ...
    @property
    def path(self) -> str: ...
    """Event path, relative to the real root: resolved (document contract), or as written,
    joined to the working directory and normalized as text (workspace contract)."""
    @property
    def content_hash(self) -> str | None: ...
    """read_file, write_file, edit_file: the file's content hash (also when hashes are not shown);
    file_info: the hash it shows (a text file), else `None`."""
    @property
    def count(self) -> int: ...
    """list_directory: entries shown; searches: matches the model received."""
    @property
    def truncated(self) -> bool: ...
    """Walkers: an entry or match was dropped at the cap."""
    @property
    def emit(self) -> bool: ...
    """Whether the tool emits its event (False e.g. for create_directory on an existing dir, or a
    workspace-contract read_file answering `Path not found: ...`)."""
    @property
    def media_type(self) -> str | None: ...
    """read_file, workspace contract: `image/png`, `image/jpeg`, `image/gif`, `image/webp` or
    `application/pdf` when the file (at most 5,000,000 bytes, sniffed by its leading bytes) is
    returned as content; `text` is then its header alone. `None` otherwise."""
    @property
    def media_data(self) -> bytes | None: ...
    """The whole file when `media_type` is set, else `None`."""

@final
class FileSystemCore:
    """A root directory with its access patterns and limits; all FileSystem tools run here.

    Raises `ValueError` when `cwd` is outside `root_dir`.
    """
    def __new__(
        cls,
        root_dir: str,
        cwd: str | None,
        allowed_patterns: list[str],
        denied_patterns: list[str],
        protected_patterns: list[str],
        max_read_lines: int,
        max_read_chars: int | None,
        max_list_results: int,
        max_search_results: int,
        max_find_results: int,
        content_hashes: bool,
        contract: Literal['document', 'workspace'] = 'document',
        max_line_chars: int | None = None,
        report_skipped: bool = False,
        root_named: bool = False,
        match: Literal['exact', 'tolerant'] = 'exact',
        show_changes: int = 0,
        big_diffs: bool = False,
    ) -> Self: ...
    """`contract`: whose defaults and texts apply where they differ: `'document'` (filesystem.md,
    0.36.0, `root_dir` on the host) or `'workspace'` (0.62.0, the run's workspace).
    `max_line_chars`, `report_skipped`: `FileSystem`'s opt-in fields of those names (issue 9).
    `root_named`: the root is a `root_dir` the user gave (workspace contract): containment errors
    name `` root_dir `<root>` `` instead of `` the project root `<root>` ``.
    `match`, `show_changes`: `FileSystem`'s opt-in fields of those names (issue 22); ValueError for
    another `match`.
    `big_diffs`: a change too big for the document's diff shows its first hunks, up to
    `MAX_EVENT_DIFF_CHARS`, instead of the headers alone (`require_approval`, issue 21)."""
    @property
    def root_dir(self) -> str: ...
    """The real (symlink-resolved, absolute) root; events carry it as `root_dir`."""
    @property
    def cwd(self) -> str: ...
    @property
    def contract(self) -> Literal['document', 'workspace']: ...
    def read_file(
        self,
        path: str,
        offset: int,
        limit: int | None,
        *,
        cancel: CancelToken,
        guessed_type: str | None = None,
        column: int = 0,
    ) -> Outcome:
        """`guessed_type`: workspace contract, the type a binary file that is not an image or PDF is
        described with (`mimetypes.guess_type(path)[0]`); `application/octet-stream` when `None`.
        `column`: with `max_line_chars`, each line is shown from this char (0-based)."""
    def file_info(self, path: str, *, cancel: CancelToken) -> Outcome: ...
    def list_directory(self, path: str, *, cancel: CancelToken) -> Outcome: ...
    def search_files(self, pattern: str, path: str, include_glob: str | None, *, cancel: CancelToken) -> Outcome: ...
    def find_files(self, pattern: str, path: str, *, cancel: CancelToken) -> Outcome: ...
    def list_files(self, path: str, glob: str | None, *, cancel: CancelToken) -> Outcome:
        """ripgrep's `--files` rules in-process; `count` is the files shown."""
    def grep(
        self,
        pattern: str,
        path: str,
        glob: str | None,
        file_type: str | None,
        ignore_case: bool,
        literal: bool,
        context: int,
        *,
        cancel: CancelToken,
    ) -> Outcome:
        """ripgrep's search rules in-process; `context` in 0..=20 (checked by the caller)."""

    def plan_write(
        self, path: str, content: str, expected_hash: str | None, announce: bool, *, cancel: CancelToken
    ) -> ChangePlan:
        """Resolve and check a write; with `announce`, snapshot the current content for the diff and the guard."""
    def plan_edit(
        self,
        path: str,
        replacements: Sequence[tuple[str, str] | tuple[str, str, bool]],
        expected_hash: str | None,
        *,
        cancel: CancelToken,
    ) -> ChangePlan: ...
    def plan_create_directory(self, path: str) -> ChangePlan | None:
        """None when the directory already exists (nothing to announce, nothing to emit)."""
    def commit(self, plan: ChangePlan, *, cancel: CancelToken) -> Outcome:
        """Re-resolve (a path replaced meanwhile is a ConflictError), then write under the descriptor guard."""
    def patch_paths(self, input: str) -> list[str]:
        """Every path a patch names, in patch order, repeats included (a parse error raises)."""
    def plan_patch(self, input: str, *, cancel: CancelToken) -> PatchPlan:
        """Plan `apply_patch`: every file resolved, checked, read and patched in memory; nothing written."""
    def commit_patch(self, plan: PatchPlan, *, cancel: CancelToken) -> str:
        """Commit a planned patch through the journal; every file must still hold what it was planned on."""

    # The slow path for FileSystemToolset subclasses that override open_read/open_write.
    def resolve(self, path: str, write: bool, check_allowed: bool) -> str:
        """Resolve and access-check `path`; returns the absolute resolved path."""
    def relative_to_root(self, resolved: str) -> str: ...
    def raise_os_error(self, errno: int, filename: str | None) -> NoReturn:
        """Raise the core's error for an OS error an override raised: retryable, or OSError without the host path."""

def apply_replacements(text: str, replacements: Sequence[tuple[str, str] | tuple[str, str, bool]], path: str) -> str:
    """`text` with each `(old, new[, replace_all])` applied in order, each `old` matching exactly once
    (overlapping occurrences count), or with `replace_all` at least once (every occurrence replaced).

    Raises `NoMatchError` / `AmbiguousMatchError` / `InvalidArgumentError` (empty old_text) with the
    reference's messages (`old_text` for one pair, `replacement N` in a batch); nothing is written."""

# --- FileSystem on a workspace that is not on this host (src/py/remote.rs, src/fs/remote.rs) --------
# Python moves bytes through the workspace protocol (filesystem/_remote.py); these decide and render.
# Paths are absolute POSIX workspace paths. An entry is `(path, is_dir, size or None)`.

@final
class RemoteGlob:
    """A compiled `find_files` glob: `*`/`?`/`[...]` within a component, `**` across them."""
    @property
    def max_depth(self) -> int | None:
        """Levels below the start a walk must list; None with a `**`."""
    @property
    def include_hidden(self) -> bool:
        """Whether the glob names a hidden component (the walk then enters hidden directories)."""
    def matching(self, start: str, paths: list[str]) -> list[str]:
        """The `paths` (below `start`) the glob matches, in order."""

@final
class RemoteSearch:
    """One `search_files`: feed the files it names, in order, then take the result."""
    @property
    def include_hidden(self) -> bool: ...
    def files(
        self, start: tuple[str, bool, int | None] | None, walked: list[tuple[str, bool, int | None]]
    ) -> list[tuple[str, int | None]]:
        """The files to read, in order, from the start's stat (None: nothing there) and the walked entries."""
    def hidden_skipped(self, count: int, ignored: int = 0) -> None:
        """Count `count` hidden and `ignored` ignored entries (after `files`, when a ripgrep-rules walk gave them)."""
    def unlisted(self, walk: RemoteRgWalk) -> None:
        """Take the directories `walk` could not list (before `walk.finish()`), named in a note and counted."""
    def feed(self, index: int, data: bytes | None) -> bool:
        """Search file `index` (None: unreadable or over 10 MiB, named as skipped); True once the cap is hit."""
    def result(self, walk_cut: bool) -> Outcome:
        """The result text; `count` is the matches shown, `truncated` the cap or a cut walk."""

@final
class RemoteRgWalk:
    """A walk with ripgrep's filters (ignore files, hidden entries, glob, type), driven one level at a time."""
    def ancestors(self) -> list[str]:
        """Directories above the start inside the root, root first: `listed` and `rules` each, never `enter`."""
    def listed(self, dir: str, entries: list[tuple[str, bool, int | None]]) -> list[str]:
        """Take `dir`'s listing; the ignore files in it to read (workspace paths)."""
    def rules(self, dir: str, files: list[tuple[str, bytes | None]]) -> None:
        """The bytes of the ignore files `listed` named (None: unreadable, as if absent)."""
    def unlisted(self, dir: str, errno: int | None = None) -> None:
        """Note that `dir` (below the start) could not be listed, for its error number (None: unknown)."""
    def enter(self, dir: str) -> list[str]:
        """Decide `dir`'s children; the child directories to walk next."""
    def finish(self) -> tuple[list[tuple[str, bool, int | None]], int, int]:
        """End the walk: the kept files in `rg --sort path` order, the dot entries and ignored entries left out."""

@final
class RemoteGrep:
    """One `grep` with ripgrep's rules: feed the files it names, in order, then take the result."""
    @property
    def files(self) -> list[tuple[str, int | None]]:
        """`(path, size or None)` of each file to read, in order."""
    def feed(self, index: int, data: bytes | None, errno: int | None = None) -> bool:
        """Search file `index` (None: it could not be read for error `errno`, named in the result); True once the cap was passed."""
    def feed_pieces(self, index: int, read: Callable[[], bytes]) -> bool:
        """Search file `index` read in pieces: `read()` gives its next bytes (`b''` at the end), called on
        this call's thread. True once the cap was passed; an exception `read` raises is raised here."""
    def result(self, walk_cut: bool) -> Outcome:
        """The result text: lines, `[... truncated at N lines]` or `No matches found.`, notes."""

@final
class RemoteCore:
    """A workspace's boundary, working directory, patterns and limits (always the 0.62.0 contract)."""
    def __new__(
        cls,
        root: str,
        cwd: str,
        root_named: bool,
        allowed_patterns: list[str],
        denied_patterns: list[str],
        protected_patterns: list[str],
        max_read_lines: int,
        max_read_chars: int | None,
        max_list_results: int,
        max_search_results: int,
        max_find_results: int,
        content_hashes: bool,
        *,
        max_line_chars: int | None = None,
        report_skipped: bool = False,
        match: Literal['exact', 'tolerant'] = 'exact',
        show_changes: int = 0,
        big_diffs: bool = False,
    ) -> Self:
        """`root_named`: `root_dir` was given (errors name it, not "the project root"). ValueError: bad pattern.

        `max_line_chars`: clip longer lines in `read_file` and search hits, as `FileSystemCore`'s.
        `report_skipped`: walker results end with what they skipped (`[skipped: ...]`).
        `match`, `show_changes`: as `FileSystemCore`'s.
        `big_diffs`: big changes' event diffs show their first hunks, as `FileSystemCore`'s."""
    @property
    def root_dir(self) -> str: ...
    @property
    def cwd(self) -> str: ...
    @property
    def caps(self) -> tuple[int, int, int, int]:
        """(max read bytes 64 MiB, max search file bytes 10 MiB, max walk directories, max walk entries)."""
    def resolve(self, path: str) -> str:
        """`path` joined onto cwd and normalized as text; OutsideRootError outside the root."""
    def check(self, path: str, resolved: str, real: str | None, write: bool, check_allowed: bool) -> None:
        """Containment of the real path (None: not resolved) and the access patterns on both spellings."""
    def raise_os_error(self, errno: int, resolved: str | None = None) -> NoReturn:
        """Raise the core's error for an OS error the backend raised on `resolved` (a workspace path):
        the native path's retry (`Permission denied: 'a.txt'`, the EILSEQ text, ...) with the path
        root-relative, or OSError (no path) for one that ends the run."""
    def event_path(self, resolved: str) -> str: ...
    def descend(self, path: str, real: str, include_hidden: bool) -> bool:
        """Whether a walk enters this listed directory (not hidden, inside, not denied)."""
    def readable_real(self, real: str) -> bool:
        """Whether a walked file whose real path is `real` may be read."""
    def read_limit(self, offset: int, limit: int | None) -> tuple[int, int]:
        """`(offset, limit)` capped; InvalidArgumentError for a negative offset or a limit below 1."""
    def read_file(
        self,
        path: str,
        resolved: str,
        size: int | None,
        data: bytes | None,
        offset: int,
        limit: int,
        guessed_type: str | None,
        *,
        cancel: CancelToken,
        column: int = 0,
        lookalike: str | None = None,
    ) -> tuple[Outcome, str | None]:
        """The read result and, for an image or PDF up to 5 MB, its media type (the caller sends the bytes).

        No `data` and no size: `Path not found: p` (emit False), then the look-alike sentence when
        `lookalike` (from `lookalike()`) names one; a size over 64 MiB: the too-large text.
        `column`: with `max_line_chars`, the 0-based char each line starts from."""
    def file_info(
        self,
        path: str,
        resolved: str,
        entry: tuple[str, bool, int | None] | None,
        data: bytes | None,
        *,
        lookalike: str | None = None,
    ) -> Outcome: ...
    def lookalike(
        self, path: str, resolved: str, listings: dict[str, list[tuple[str, bool]] | None]
    ) -> tuple[str | None, str | None]:
        """The look-alike of a missing path from its parents' listings (`[(name, is_dir)]`, None: unlistable).

        `(directory, None)`: list that directory and ask again; `(None, existing or None)`: done."""
    def plan_write(
        self,
        path: str,
        resolved: str,
        target: bool | None,
        parent: Literal['dir', 'missing', 'notdir'],
        old: bytes | None,
        content: str,
        expected_hash: str | None,
        announce: bool,
        *,
        lookalike: str | None = None,
    ) -> ChangePlan:
        """`target`: None (nothing), False (a file), True (a directory); `old`: its bytes when announced.

        `lookalike`: for a missing target, the look-alike name that refuses the write."""
    def plan_edit(
        self,
        path: str,
        resolved: str,
        raw: bytes | None,
        replacements: Sequence[tuple[str, str] | tuple[str, str, bool]],
        expected_hash: str | None,
        *,
        directory: bool = False,
        lookalike: str | None = None,
    ) -> ChangePlan:
        """`raw` None: missing (`File not found`, with the look-alike sentence) or, with `directory`, a directory."""
    def plan_create_directory(
        self, path: str, resolved: str, target: bool | None, ancestor_is_dir: bool
    ) -> ChangePlan | None: ...
    def plan_target(self, plan: ChangePlan) -> str: ...
    def patch_paths(self, input: str) -> list[str]:
        """Every path a patch names, in patch order, repeats included."""
    def plan_patch(self, input: str, files: list[tuple[str, str, bytes | None, bool]]) -> PatchPlan:
        """Plan `apply_patch` on files handed in: `(path, resolved, bytes or None, is_dir)` per path."""
    def patch_result(self, plan: PatchPlan) -> str:
        """The text of a committed patch."""
    def plan_guarded(self, plan: ChangePlan) -> bool: ...
    def plan_content(self, plan: ChangePlan) -> bytes: ...
    def check_guard(self, plan: ChangePlan, current: bytes | None) -> None:
        """ConflictError when the target's bytes are no longer what the plan saw (`<absent>`: nothing)."""
    def written(self, plan: ChangePlan) -> Outcome: ...
    def created(self, plan: ChangePlan, state: Literal['created', 'existed', 'file', 'parent']) -> Outcome: ...
    def list_directory(
        self, path: str, resolved: str, entries: list[tuple[str, bool, int | None]] | None
    ) -> Outcome: ...
    def glob(self, pattern: str) -> RemoteGlob:
        """InvalidPatternError: absolute, empty, or with a `..` component."""
    def find_files(
        self,
        glob: RemoteGlob,
        path: str,
        resolved: str,
        entries: list[tuple[str, bool, int | None]] | None,
        walk_cut: bool,
        files_only: bool,
        unlisted: list[tuple[str, int | None]] = ...,
    ) -> Outcome:
        """`unlisted`: `(directory, errno or None)` the walk could not list, named in a note."""
    def search(self, pattern: str, resolved: str, include_glob: str | None) -> RemoteSearch:
        """InvalidPatternError: `Invalid regex pattern: ...` (the core's engines, one dialect everywhere)."""
    def rg_walk(self, resolved: str, glob: str | None = None, file_type: str | None = None) -> RemoteRgWalk:
        """The walk `list_files`/`grep` make of a directory. InvalidArgumentError: unknown type; InvalidPatternError: bad glob."""
    def search_walk(self, resolved: str, include_glob: str | None, include_hidden: bool) -> RemoteRgWalk:
        """The walk `search_files` makes: ignore files apply; a glob 0.62.0 hands `rg` overrides them."""
    def rg_list(self, path: str, resolved: str, walk: RemoteRgWalk | None, walk_cut: bool) -> Outcome:
        """`list_files` from a finished walk (None: no directory). NotFoundError: `Path 'p' is not a directory.`"""
    def rg_grep(
        self,
        path: str,
        resolved: str,
        is_file: bool,
        walk: RemoteRgWalk | None,
        pattern: str,
        ignore_case: bool,
        literal: bool,
        context: int,
        glob: str | None = None,
    ) -> RemoteGrep:
        """A `grep` of a walked directory or a file. NotFoundError: nothing there; InvalidPatternError: bad regex."""
    def read_ranged(self, path: str, resolved: str, offset: int, limit: int, *, column: int = 0) -> RemoteRanged:
        """A `read_file` of a file too big to move whole, fed in pieces (`offset`, `limit` from `read_limit`;
        `column`: with `max_line_chars`, the 0-based char each line starts from)."""
    def info_ranged(self, path: str, resolved: str, size: int) -> RemoteRanged:
        """A `file_info` of a file of `size` bytes too big to move whole, fed in pieces."""
    def window_ranged(
        self, path: str, resolved: str, offset: int, limit: int, kept: RemoteKept, *, column: int = 0
    ) -> RemoteRanged:
        """A `read_file` of another window of the file version `kept` is of: pieces from `start`, stopping past it."""
    def info_kept(self, path: str, resolved: str, size: int, kept: RemoteKept) -> RemoteRanged:
        """A `file_info` of the file version `kept` is of (`start` is None: `finish` at once)."""

@final
class RemoteKept:
    """What a full ranged pass learned of one version of a file: its scan without the window, its line index."""

@final
class RemoteRanged:
    """One file's bytes fed in order to the core's streaming read; rendered by `finish`."""

    def feed(self, data: bytes) -> bool:
        """Feed the next piece (GIL released; blocks while the scan is two pieces behind: call it off the
        event loop). False once the pass has stopped (cancelled)."""
    @property
    def start(self) -> int | None:
        """The byte offset the pieces start at; None when the pass needs no bytes."""
    def kept(self) -> RemoteKept | None:
        """After `finish` of a full pass, what it learned; None before or for a window pass."""
    def cancel(self) -> None:
        """Stop the pass: the scan ends at its next chunk and a blocked `feed` returns False."""
    def finish(self, guessed_type: str | None = None) -> Outcome:
        """The `read_file` or `file_info` outcome as a host directory gives for the same bytes.

        Raises `OffsetPastEndError`, `CancelledError` after `cancel`, `ValueError` when already finished."""

# --- Shell: the process supervisor (src/py/shell.rs) ------------------------------------------

@final
class ForegroundCommand:
    """One foreground command: `run` blocks (GIL released) until it ends; `kill()` or dropping it kills its group."""

    def __new__(cls) -> Self: ...
    def run(
        self,
        prologue: bytes,
        command: bytes,
        cwd: str,
        env: list[tuple[bytes, bytes]],
        timeout: float | None,
        max_file_bytes: int | None,
        tail_bytes: int,
        *,
        sandbox: tuple[bool, list[str], bool] | None = None,
        reap_descendants: bool = False,
    ) -> tuple[int, bytes, bytes, bool]:
        """`/bin/sh -c prologue+command` in its own session: `(exit_code, stdout_tail, stderr_tail, timed_out)`.

        Signal deaths are `128 + N`. Raises `CommandTooLongError` when the OS refuses `command` as
        too long (`E2BIG`, and the prologue alone starts), `OSError` when the spawn fails otherwise,
        `ValueError` for a NUL byte, `CancelledError` after `kill()`.
        """
    def run_captured(
        self,
        prologue: bytes,
        command: bytes,
        cwd: str,
        env: list[tuple[bytes, bytes]],
        timeout: float | None,
        max_file_bytes: int | None,
        tail_bytes: int,
        *,
        head_bytes: int,
        spill: tuple[str | None, str | None],
        sandbox: tuple[bool, list[str], bool] | None = None,
        reap_descendants: bool = False,
    ) -> tuple[
        int, int | None, bool, tuple[bytes, bytes, int, int, bool, bool], tuple[bytes, bytes, int, int, bool, bool]
    ]:
        """Like `run`, also keeping `head_bytes` of each stream's start and writing a stream to its
        `spill` path once it outgrows head and tail: `(exit_code, signal, timed_out, stdout, stderr)`,
        each stream `(head, tail, total_bytes, total_lines, truncated, spilled)`."""
    def start(
        self,
        prologue: bytes,
        command: bytes,
        cwd: str,
        env: list[tuple[bytes, bytes]],
        timeout: float | None,
        max_file_bytes: int | None,
        tail_bytes: int,
        *,
        head_bytes: int,
        spill: tuple[str | None, str | None],
        sandbox: tuple[bool, list[str], bool] | None = None,
        reap_descendants: bool = False,
    ) -> int | None:
        """Spawn as `run_captured` would (GIL released) and return at once: a descriptor readable
        whenever `step()` has work, or `None` (nothing spawned: use `run_captured`). Raises as its spawn."""
    def step(
        self,
    ) -> (
        tuple[
            int, int | None, bool, tuple[bytes, bytes, int, int, bool, bool], tuple[bytes, bytes, int, int, bool, bool]
        ]
        | Literal['finish']
        | None
    ):
        """Never waits: `None` (wait for the descriptor, then step again), `'finish'` (call `finish()`
        on a worker thread), or `run_captured`'s result. Raises `CancelledError` after `kill()`."""
    def finish(
        self,
    ) -> tuple[
        int, int | None, bool, tuple[bytes, bytes, int, int, bool, bool], tuple[bytes, bytes, int, int, bool, bool]
    ]:
        """The rest after `step()` returned `'finish'`, blocking (GIL released): `run_captured`'s result."""
    def kill(self) -> None:
        """Kill the group at once (a spawn not yet made never happens); a `start()`ed tree ends on a thread of its own."""

def sandbox_support(network: bool) -> tuple[int, str | None]:
    """`(landlock_abi, reason)`: the kernel's Landlock ABI (0: none) and why a sandbox with
    `network` allowed or not cannot be enforced (`None` when it can)."""

def job_launch(
    dir: str,
    cwd: str,
    env: list[tuple[bytes, bytes]],
    command: bytes,
    combined: bool,
    max_file_bytes: int | None,
    max_log_bytes: int | None,
    exclusive: bool,
    *,
    sandbox: tuple[bool, list[str], bool] | None = None,
    reap_descendants: bool = False,
) -> tuple[int, int | None] | None:
    """Start a background job in `dir`: `(pid, pgid)`, or None when `exclusive` and `dir` exists.

    Raises `CommandTooLongError` (nothing started, `dir` removed) when the OS refuses `command` as too long."""

NOT_REGULAR_FILE: str
"""0.62.0's refusal of a FIFO, socket or device, the same for every tool (workspace contract)."""
COMMAND_TOO_LONG: str
"""What the model is told when the OS refuses its command as too long to start."""
LOG_WATCHER: str
"""The shell functions that keep a job's logs under `max_log_bytes` (`__harness_watch_logs LIMIT INTERVAL`)."""
LOG_CHECK_INTERVAL: str
"""Seconds between two log checks, as the reference's."""

def job_attach(dir: str) -> tuple[int, int | None] | None: ...
def job_status(dir: str) -> str | None: ...
def job_ended(dir: str) -> bool:
    """Whether the job in `dir` is over: no handle, an exit code published, or no process of it left."""

def job_cpu_ns(dir: str) -> int | None:
    """The CPU time (nanoseconds) the job in `dir` has used so far: the same reading twice means it ran no
    instruction in between. `None` when it cannot be told."""

def job_size(path: str) -> int: ...
def job_read(path: str, offset: int, length: int) -> bytes: ...
def job_tail(path: str, max_bytes: int) -> bytes: ...
def job_kill(dir: str, pid: int, pgid: int | None, grace: float) -> Literal['gone', 'ended', 'killed']:
    """SIGTERM the group, up to `grace` seconds, then SIGKILL: `'gone'` when nothing was left,
    `'ended'` when the command ended within the grace, `'killed'` when its group got SIGKILL."""

def job_wait(pid: int, timeout: float) -> bool:
    """Wait up to `timeout` seconds for the wrapper `pid` to exit; True once it has."""

def job_cleanup(dir: str) -> None: ...
def job_prune(base: str, max_age: float | None, max_total_bytes: int | None) -> tuple[int, int]:
    """Remove finished jobs under `base` older than `max_age` seconds, then the oldest until the rest
    hold at most `max_total_bytes`; running jobs stay. Returns `(jobs, bytes)` removed."""

@final
class Session:
    """A program on a pseudo-terminal in its own session; dropping the handle kills it."""

    @staticmethod
    def start(
        command: bytes,
        cwd: str | os.PathLike[str],
        env: list[tuple[bytes, bytes]],
        *,
        cols: int,
        rows: int,
        head_bytes: int,
        tail_bytes: int,
        sandbox: tuple[bool, list[str], bool] | None = None,
        spill_dir: str | os.PathLike[str] | None = None,
        spill_after: int = 0,
        max_log_bytes: int | None = None,
    ) -> Session:
        """`/bin/sh -c command` on a new `cols` x `rows` terminal; raises `OSError` when it cannot start.

        The transcript between reads is the cleaned text; with `spill_dir`, one past `spill_after` bytes is
        written whole to `spill_dir/output-<32 hex>-stdout.log` as it arrives, under `max_log_bytes`.
        """
    @staticmethod
    def start_relayed(
        directory: str | os.PathLike[str],
        python: str | os.PathLike[str],
        core: str | os.PathLike[str],
        note: str,
        command: bytes,
        cwd: str | os.PathLike[str],
        env: list[tuple[bytes, bytes]],
        *,
        cols: int,
        rows: int,
        head_bytes: int,
        tail_bytes: int,
        sandbox: tuple[bool, list[str], bool] | None = None,
    ) -> Session:
        """As `start`, on a terminal a relay process (`python -I -S` loading `core`) holds: the program outlives this
        process, found again with `attach(directory)`; dropping the handle leaves it running. Raises `OSError`."""
    @staticmethod
    def attach(directory: str | os.PathLike[str], *, head_bytes: int, tail_bytes: int) -> Session | None:
        """The relayed session served in `directory`, or `None` when no relay answers there."""
    @staticmethod
    def published_exit_code(directory: str | os.PathLike[str]) -> int | None:
        """The exit code a relayed session's relay published in `directory` once its program ended."""
    @staticmethod
    def relay_lost_in(directory: str | os.PathLike[str]) -> bool:
        """Whether the relayed session in `directory` was lost (its relay killed before it published an exit
        code; `attach` found no relay); ends its program if it still runs."""
    @property
    def note(self) -> str:
        """The `note` a relayed session was started with; `''` for one started by `start`."""
    def write(self, data: bytes) -> None:
        """Send keys; `InvalidArgumentError` when the program exited or does not read its input for 5 s."""
    def wait(
        self, pattern: str | None, until_input: bool, timeout: float, cancel: CancelToken | None = None
    ) -> Literal['matched', 'waiting', 'exited', 'timed_out']:
        """Wait for `pattern` in the raw output since the last read, for input to be awaited, for the exit or `timeout` s.

        Raises `InvalidPatternError` for a pattern that does not compile, `CancelledError` once `cancel` is cancelled.
        """
    def take_output(
        self, room: int | None = None
    ) -> tuple[
        bytes, bytes, int, int, bool, str | None, tuple[int, int], tuple[int, int], pathlib.Path | None, bool, int
    ]:
        """`(head, tail, total_bytes, total_lines, truncated, screen, (row, col), (cols, rows), spill_path,
        spill_cleared, spill_held)` since the last read; `spill_path` holds the whole text when it was cut or is
        longer than `room` chars (else `None`), `spill_cleared` whether `max_log_bytes` emptied it to the notice,
        `spill_held` the bytes of the text's end it then holds after the notice (starting at a line's start
        where one was within reach)."""
    def remove_files(self) -> int:
        """Remove the spill files this session's reads kept; how many were removed."""
    def stop(self, grace: float) -> bool:
        """`SIGTERM` to the session's tree, `grace` seconds, then `SIGKILL`; whether it had to be killed."""
    @property
    def pid(self) -> int: ...
    @property
    def exit_code(self) -> int | None: ...
    @property
    def relay_lost(self) -> bool:
        """Whether a relayed session's relay was killed: the program was ended with it, `exit_code` stays `None`."""
    @property
    def output_bytes(self) -> int: ...
    @property
    def runtime(self) -> float: ...

    """A relayed session's relay process body (`Session.start_relayed` starts it); not for direct use."""

def _session_relay(directory: str | os.PathLike[str]) -> None:
    """A relayed session's relay process body (`Session.start_relayed` starts it); not for direct use."""

# --- checkpoints --------------------------------------------------------------------------------

class CheckpointError(Exception):
    """A checkpoint operation refused or failed; the message names root-relative paths only."""

@final
class CheckpointStore:
    """The checkpoints of one workspace root, kept in `<root>/.pydantic-ai-harness/checkpoints/`.

    Paths are root-relative `str` (non-UTF-8 bytes as `surrogateescape`). Every method releases the GIL.
    OS failures of the store (a full disk) raise `OSError`; the rest raise `CheckpointError`."""

    def __new__(
        cls,
        root: str,
        *,
        exclude: builtins.list[str] | None = None,
        max_file_bytes: int = 67108864,
        budget_bytes: int = 1073741824,
    ) -> Self:
        """Open (or create) the store of the existing directory `root`. `exclude`: gitignore-style
        patterns the snapshots leave out (None: `['.git/']`); files above `max_file_bytes` are kept by
        hash only; the oldest checkpoints are pruned beyond `budget_bytes` of objects."""
    def keep(
        self,
        paths: builtins.list[str],
        *,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        tool_name: str = ...,
        created_at: float = 0.0,
    ) -> int:
        """Before a file tool's change: capture `paths` (a directory with its subtree, missing
        parents too). Returns a handle for `record`/`release`; the store's lock (shared with other
        processes) is held until then. With `tool_call_id` (a durable unit's call) the call's record
        is written on disk, and an earlier attempt's before states are taken over."""
    def snapshot(
        self,
        *,
        call: bool = False,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        tool_name: str = ...,
        created_at: float = 0.0,
        durable: bool = True,
    ) -> int:
        """Walk the tree's metadata, keep what differs from the index. Returns a handle for
        `record`/`extend`/`release`. `call`: before a shell command (the lock held until its record
        or release); with `tool_call_id`, what a dead earlier attempt of that call changed is its
        (`durable`), or, outside a durable unit (`durable=False`), what the command changed is recorded
        as its checkpoint by the next process on the store should this one die mid-command."""
    def record(
        self, handle: int, *, run_id: str | None, tool_call_id: str | None, tool_name: str, created_at: float
    ) -> dict[str, Any] | None:
        """After the call: append its checkpoint and return the listing, or None when nothing changed.
        Consumes the handle; prunes to the budget."""
    def commit(
        self,
        core: FileSystemCore,
        plan: ChangePlan,
        paths: builtins.list[str],
        *,
        run_id: str | None,
        tool_call_id: str | None,
        tool_name: str,
        created_at: float,
        cancel: CancelToken,
        durable: bool = False,
        wait: bool = True,
    ) -> tuple[Outcome, str | None] | None:
        """`keep(paths)`, `core.commit(plan)` and `record(...)` in one call: the commit's outcome and the
        new checkpoint's id (None when nothing changed). The file's new bytes (and an edit's old ones) are
        taken from the plan, not read again; new objects and then the checkpoint's log line reach the store
        from a writer thread (the store's lock held until they are on disk), or the line is appended before
        the call returns when no object is new. The commit's errors are raised as `core.commit`
        raises them, after the record. `durable`: a durable unit's call (its record on disk while it runs,
        as `keep` with `tool_call_id`). `wait=False` (a small commit on an event loop): None, nothing done,
        when another process holds the store's lock, a background job is followed or `calls/` holds a
        record; else the commit runs and its checkpoint is recorded later (the id is None): by `finish()`
        once the call has returned, or first thing by the store's next use in this process; the store's
        lock is held until then. A durable call is recorded before it returns."""
    def finish(self, *, flush: bool = False) -> None:
        """Record the checkpoint of the last `commit(..., wait=False)` if it is not yet (nothing
        otherwise); call it once that tool call has returned. `flush`: then wait until the writer
        thread has put everything queued on disk (a process about to exit). Raises OSError (a full
        disk): that checkpoint is lost, as after a kill right after the commit."""
    def commit_patch(
        self,
        core: FileSystemCore,
        plan: PatchPlan,
        paths: builtins.list[str],
        *,
        run_id: str | None,
        tool_call_id: str | None,
        tool_name: str,
        created_at: float,
        cancel: CancelToken,
        durable: bool = False,
    ) -> tuple[str, str | None]:
        """`keep(paths)`, `core.commit_patch(plan)` and `record(...)` in one call, as `commit`: the result text
        and the new checkpoint's id (None when nothing changed). Each file's new bytes (and old ones) come from
        the plan, so a change right after the commit is never taken for the patch's. Waits for another process
        holding the store's lock (call it in a worker thread)."""
    def record_reopen(
        self, handle: int, *, run_id: str | None, tool_call_id: str | None, tool_name: str, created_at: float
    ) -> tuple[dict[str, Any] | None, int | None]:
        """`record`, then the walk after the call kept open as a new snapshot handle in the same step
        (a snapshot handle only; else None): `(listing or None, handle or None)`."""
    def extend(self, checkpoint_id: str, handle: int) -> dict[str, Any] | None:
        """Add what snapshot `handle` found against the index to checkpoint `checkpoint_id`; the handle
        stays open. The new listing, or None when that checkpoint is gone (rewound or pruned)."""
    def attribute_found(
        self, handle: int, *, run_id: str | None, tool_call_id: str | None, tool_name: str, created_at: float
    ) -> dict[str, Any] | None:
        """Count what snapshot `handle` found against the index against that call's checkpoint (appended
        when it has none); the handle stays open. The listing, or None when nothing was found."""
    def release(self, handle: int) -> None:
        """Drop a handle without recording."""
    def follow_job(
        self,
        directory: str,
        checkpoint_id: str | None,
        *,
        run_id: str | None,
        tool_call_id: str | None,
        tool_name: str,
        created_at: float,
    ) -> None:
        """Follow a background job (its record in `jobs/`, locked while this store lives), or note the
        latest `checkpoint_id` of a followed one. Raises `OSError` (a full disk), `CheckpointError` (no
        tool call id)."""
    def unfollow_job(self, *, run_id: str | None, tool_call_id: str | None) -> None:
        """Stop following a job: its record removed."""
    def orphaned_jobs(self) -> builtins.list[dict[str, Any]]:
        """The jobs whose follower's process is gone, followed from now on, oldest first: `{'run_id',
        'tool_call_id', 'tool_name', 'created_at', 'directory', 'checkpoint_id'}`."""
    def list(self, run_id: str | None = None) -> builtins.list[dict[str, Any]]:
        """Oldest first: `{'id', 'run_id', 'tool_call_id', 'tool_name', 'paths', 'created_at', 'bytes_kept'}`."""
    def pruned(self) -> builtins.list[str]:
        """Ids pruned to keep the store within `budget_bytes`, oldest first."""
    def store_bytes(self) -> int:
        """Bytes the store's objects hold."""
    def diff(self, checkpoint_id: str) -> builtins.list[tuple[str, str]]:
        """Per changed path: a unified diff of before -> after, or a one-line note."""
    def plan_rewind(
        self, to: str, paths: builtins.list[str] | None = None, *, job: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`{'to', 'paths', 'files': [{'path', 'action', 'old_hash', 'new_hash', 'diff'}], 'conflicts',
        'unrestorable'}`; changes nothing. `job` (`{'run_id', 'tool_call_id', 'tool_name', 'created_at'}`,
        an open background job's call): what changed since the last look is counted against it first, in
        the same locked step, and `'job'` is its call's latest listing (`None`: nothing changed)."""
    def commit_rewind(
        self, plan: dict[str, Any], *, force: bool = False, job: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Commit a plan: `{'restored', 'deleted', 'removed_dirs', 'failed'}` (and `'job'`, as
        `plan_rewind`). Raises `CheckpointError` naming the files changed by someone else (unless `force`)
        or since the plan."""
    def rewind(
        self,
        to: str,
        paths: builtins.list[str] | None = None,
        *,
        force: bool = False,
        job: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Plan and commit in one step under the store's lock: `{'restored', 'deleted', 'removed_dirs',
        'failed', 'unrestorable'}` (and `'job'`, as `plan_rewind`). Raises `CheckpointError` for an
        unknown or pruned `to`, or naming the files changed by someone else (unless `force`)."""

@final
class RemoteCheckpointStore:
    """The checkpoints of one workspace root whose files are not on this host, kept in a host directory.

    The caller moves the bytes through the workspace protocol and hands states over: `None` (nothing
    there), `'dir'`, or the file's `bytes`. Paths are root-relative `str`. Every method releases the GIL.
    OS failures of the store raise `OSError`; the rest raise `CheckpointError`. Stores of one `store_dir`
    (other processes') take turns through its lock: each method, and each handle from its `keep`,
    `snapshot` or `hold` to its `record`, `record_command` or `release`, holds it (waiting while another
    process holds it), and what another process wrote is reloaded."""

    def __new__(
        cls,
        store_dir: str,
        *,
        root: str | None = None,
        exclude: builtins.list[str] | None = None,
        max_file_bytes: int = 67108864,
        budget_bytes: int = 1073741824,
    ) -> Self:
        """Open (or create) the store in `store_dir` for the workspace root `root` (a workspace path;
        None: the root the store was made for). Raises `CheckpointError` when it holds another root's."""
    @property
    def root(self) -> str | None:
        """The workspace root the store belongs to (None: none yet)."""
    def observed(self, paths: builtins.list[str]) -> builtins.list[str]:
        """The paths whose states a change of `paths` needs: each (not excluded) and its ancestors, sorted."""
    def keep(
        self,
        before: builtins.list[tuple[str, bytes | str | None]],
        *,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        tool_name: str = ...,
        created_at: float = 0.0,
    ) -> tuple[int, builtins.list[str]]:
        """Before a file tool's change: `[(path, state), ...]` of the `observed` paths, read now. A handle
        (the lock held until its `record` or `release`) and the paths to read after the change. With
        `tool_call_id` (a durable unit's call): the call's record on disk; an earlier attempt's before
        states are the call's."""
    def record(
        self,
        handle: int,
        after: builtins.list[tuple[str, bytes | str | None]],
        *,
        run_id: str | None,
        tool_call_id: str | None,
        tool_name: str,
        created_at: float,
    ) -> dict[str, Any] | None:
        """Record a `keep` handle (consumed) from the states of its paths after the change: the listing,
        or None when nothing changed. Prunes to the budget."""
    def hold(self) -> int:
        """Hold the store's lock until `release` of the returned handle (a rewind's steps)."""
    def list(self, run_id: str | None = None) -> builtins.list[dict[str, Any]]:
        """As `CheckpointStore.list`."""
    def pruned(self) -> builtins.list[str]:
        """As `CheckpointStore.pruned`."""
    def store_bytes(self) -> int:
        """Bytes the store's objects hold."""
    def diff(self, checkpoint_id: str) -> builtins.list[tuple[str, str]]:
        """As `CheckpointStore.diff`."""
    def object(self, hash: str) -> bytes:
        """The kept bytes of object `hash` (a plan's `new_hash`)."""
    def rewind_paths(self, to: str, paths: builtins.list[str] | None = None) -> builtins.list[str]:
        """The paths a rewind to `to` puts back: read their states for `plan_rewind`."""
    def plan_rewind(
        self, to: str, paths: builtins.list[str] | None, current: builtins.list[tuple[str, bytes | str | None]]
    ) -> dict[str, Any]:
        """As `CheckpointStore.plan_rewind`, from the current states given."""
    def rewind_steps(
        self, plan: dict[str, Any], current: builtins.list[tuple[str, bytes | str | None]], *, force: bool = False
    ) -> builtins.list[tuple[str, str, str | None, str | None, bool]]:
        """`[(path, op, hash, reported, may_stay), ...]` in order (`op`: `remove`, `rmdir`, `write`, `mkdir`;
        `reported`: `restored`, `deleted`, `removed_dirs` or None). Raises `CheckpointError` naming the
        files changed by someone else (unless `force`) or since the plan."""
    def finish_rewind(self, plan: dict[str, Any]) -> None:
        """After every step succeeded: drop the rewound checkpoints."""
    listing_command: ClassVar[str]
    """The shell command that prints a listing (GNU `date` and `find`), run in the workspace root."""
    def snapshot(
        self,
        listing: bytes,
        *,
        run_id: str | None = None,
        tool_call_id: str | None = None,
        tool_name: str = ...,
        created_at: float = 0.0,
    ) -> tuple[int, builtins.list[str]]:
        """Before a shell command: its listing against the index. A handle (the lock held until its
        `record_command` or `release`) and the files to read now (`settle`). With `tool_call_id` (a durable
        unit's call): `settle` writes the call's record; an earlier attempt's changes are the call's.
        Raises `CheckpointError` for a listing cut short or not in the format."""
    def settle(self, handle: int, states: builtins.list[tuple[str, bytes | str | None]]) -> None:
        """The files `snapshot` asked for, as read (`'?'`: could not be read): kept, into the index."""
    def changed(self, handle: int, listing: bytes) -> builtins.list[str]:
        """After the command: its second listing; the files to read for `record_command`."""
    def record_command(
        self,
        handle: int,
        states: builtins.list[tuple[str, bytes | str | None]],
        *,
        run_id: str | None,
        tool_call_id: str | None,
        tool_name: str,
        created_at: float,
        merge: bool = False,
    ) -> dict[str, Any] | None:
        """Record the command (the handle consumed): the listing, or None when nothing changed. `merge`:
        added to the checkpoint the call has already, if any."""
    def release(self, handle: int) -> None:
        """Drop a handle (`keep`, `snapshot`, `hold`) without recording; its hold of the lock given back."""
