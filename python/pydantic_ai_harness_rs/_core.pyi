"""Type stub of the Rust extension module `pydantic_ai_harness_rs._core`.

This stub is the contract between the Rust core (`src/py/`) and the Python layer.
Every path argument is what the model passed (relative to `cwd`, or absolute).
Every `cancel` is a `CancelToken` the native loop polls; a cancelled call raises `CancelledError`.
Model-facing messages never contain an absolute host path outside the root (`<outside-workspace>`).
"""

from typing import Literal, Self, final

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
    'content_hash',
    'text_hash',
    'unified_diff',
    'apply_replacements',
    # Shell
    'ForegroundCommand',
    'job_launch',
    'job_attach',
    'job_status',
    'job_size',
    'job_read',
    'job_tail',
    'job_kill',
    'job_wait',
    'job_cleanup',
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
    """Event path: resolved, relative to the real root."""
    @property
    def root_dir(self) -> str: ...
    @property
    def operation(self) -> Literal['write', 'edit', 'create_directory']: ...
    @property
    def diff(self) -> str: ...
    @property
    def truncated(self) -> bool: ...

@final
class Outcome:
    """A finished operation: the model-facing `text` plus what its event needs."""
    @property
    def text(self) -> str: ...
    @property
    def path(self) -> str: ...
    """Event path: resolved, relative to the real root."""
    @property
    def content_hash(self) -> str | None: ...
    """read_file, write_file, edit_file: the file's content hash (also when hashes are not shown)."""
    @property
    def count(self) -> int: ...
    """list_directory: entries shown; searches: matches the model received."""
    @property
    def truncated(self) -> bool: ...
    """Walkers: an entry or match was dropped at the cap."""
    @property
    def emit(self) -> bool: ...
    """Whether the tool emits its event (False e.g. for create_directory on an existing dir)."""

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
    ) -> Self: ...
    """`contract`: whose defaults and texts apply where they differ: `'document'` (filesystem.md,
    0.36.0, `root_dir` on the host) or `'workspace'` (0.62.0, the run's workspace)."""
    @property
    def root_dir(self) -> str: ...
    """The real (symlink-resolved, absolute) root; events carry it as `root_dir`."""
    @property
    def cwd(self) -> str: ...

    def read_file(self, path: str, offset: int, limit: int | None, *, cancel: CancelToken) -> Outcome: ...
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
        self, path: str, replacements: list[tuple[str, str]], expected_hash: str | None, *, cancel: CancelToken
    ) -> ChangePlan: ...
    def plan_create_directory(self, path: str) -> ChangePlan | None:
        """None when the directory already exists (nothing to announce, nothing to emit)."""
    def commit(self, plan: ChangePlan, *, cancel: CancelToken) -> Outcome:
        """Re-resolve (a path replaced meanwhile is a ConflictError), then write under the descriptor guard."""

    # The slow path for FileSystemToolset subclasses that override open_read/open_write.
    def resolve(self, path: str, write: bool, check_allowed: bool) -> str:
        """Resolve and access-check `path`; returns the absolute resolved path."""
    def relative_to_root(self, resolved: str) -> str: ...

def apply_replacements(text: str, replacements: list[tuple[str, str]], path: str) -> str:
    """`text` with each `(old, new)` applied in order, each `old` matching exactly once.

    Raises `NoMatchError` / `AmbiguousMatchError` / `InvalidArgumentError` (empty old_text) with the
    reference's messages (`old_text` for one pair, `replacement N` in a batch); nothing is written."""


# --- Shell: the process supervisor (src/py/shell.rs) ------------------------------------------

@final
class ForegroundCommand:
    """One foreground command: `run` blocks (GIL released) until it ends; `kill()` or dropping it kills its group."""

    def __new__(cls) -> Self: ...
    def run(
        self,
        script: bytes,
        cwd: str,
        env: list[tuple[bytes, bytes]],
        timeout: float | None,
        max_file_bytes: int | None,
        tail_bytes: int,
    ) -> tuple[int, bytes, bytes, bool]:
        """`/bin/sh -c script` in its own session: `(exit_code, stdout_tail, stderr_tail, timed_out)`.

        Signal deaths are `128 + N`. Raises `OSError` when the spawn fails, `ValueError` for a NUL
        byte, `CancelledError` after `kill()`.
        """
    def kill(self) -> None: ...

def job_launch(
    dir: str,
    cwd: str,
    env: list[tuple[bytes, bytes]],
    command: bytes,
    combined: bool,
    max_file_bytes: int | None,
    exclusive: bool,
) -> tuple[int, int | None] | None:
    """Start a background job in `dir`: `(pid, pgid)`, or None when `exclusive` and `dir` exists."""
def job_attach(dir: str) -> tuple[int, int | None] | None: ...
def job_status(dir: str) -> str | None: ...
def job_size(path: str) -> int: ...
def job_read(path: str, offset: int, length: int) -> bytes: ...
def job_tail(path: str, max_bytes: int) -> bytes: ...
def job_kill(dir: str, pid: int, pgid: int | None, grace: float) -> bool:
    """SIGTERM the group, up to `grace` seconds, then SIGKILL; False when nothing was left."""
def job_wait(pid: int, timeout: float) -> bool:
    """Wait up to `timeout` seconds for the wrapper `pid` to exit; True once it has."""
def job_cleanup(dir: str) -> None: ...
