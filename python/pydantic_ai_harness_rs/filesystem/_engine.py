"""The seam between the FileSystem toolset and where the files are: an engine per root.

The toolset decides which tools exist, asks listeners, emits events and maps errors; an engine
does the work of each tool and returns the core's `Outcome` / change plan. `LocalEngine` runs
the Rust core (`_core.FileSystemCore`) on a host directory: the document's `root_dir`, or a
local workspace's working directory. A backend whose files are not on this host gets an engine
with the same async methods (`RemoteEngine`, `_remote.py`), moving bytes through the workspace
protocol while the core keeps matching, hashing, windows and texts.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs._core import ChangePlan, PatchPlan
from pydantic_ai_harness_rs._native import (
    INLINE_MAX_BYTES,
    file_passes,
    is_small_file,
    run_inline,
    run_native,
    run_sized,
)
from pydantic_ai_harness_rs.checkpoints._recording import RECORDING
from pydantic_ai_harness_rs.filesystem._content import guessed_type, media_content
from pydantic_ai_harness_rs.filesystem._locks import HOST
from pydantic_ai_harness_rs.filesystem._observe import ABSENT

if TYPE_CHECKING:
    from pydantic_ai.messages import BinaryContent

    from pydantic_ai_harness_rs._core import FileSystemCore, Outcome


class Engine(Protocol):
    """What every engine offers: the core's operations, awaitable, on one root.

    Arguments and results are those of `_core.FileSystemCore` (without `cancel`: the engine
    owns cancellation). Retryable failures raise `_core.RetryableError` subclasses.
    """

    storage: Hashable
    """The storage the files are in (`_locks.storage_of`): changes take turns per storage and file,
    whichever engine, toolset or workspace facade reached it."""

    async def root_dir(self) -> str:
        """The root as events carry it: absolute, symlink-free, a path of the workspace (or host)."""
        ...

    async def read_file(
        self, path: str, offset: int, limit: int | None, column: int = 0
    ) -> tuple[Outcome, BinaryContent | None]:
        """The outcome, and the file itself for an image or PDF (workspace contract, at most 5 MB).
        `column`: with `max_line_chars`, the 0-based character each line starts from."""
        ...

    async def file_info(self, path: str) -> Outcome: ...
    async def list_directory(self, path: str) -> Outcome: ...
    async def search_files(self, pattern: str, path: str, include_glob: str | None) -> Outcome: ...
    async def find_files(self, pattern: str, path: str) -> Outcome: ...
    async def list_files(self, path: str, glob: str | None) -> Outcome: ...
    async def grep(self, pattern: str, path: str, **options: Any) -> Outcome:
        """`options`: the core's `glob`, `file_type`, `ignore_case`, `literal` and `context`, by name."""
        ...

    async def lock_key(self, path: str) -> str:
        """The file a change of `path` takes its turn on (`_locks.py`): resolved, symlinks followed
        where that is checked. A key only, never used for I/O; a path that cannot be resolved is its own key."""
        ...

    async def plan_write(self, path: str, content: str, expected_hash: str | None, announce: bool) -> Plan: ...
    async def plan_edit(
        self, path: str, replacements: Sequence[tuple[str, str] | tuple[str, str, bool]], expected_hash: str | None
    ) -> Plan:
        """Each replacement is `(old, new)`, or `(old, new, replace_all)` with `FileSystem(replace_all=True)`."""
        ...

    async def plan_create_directory(self, path: str) -> Plan | None: ...
    async def commit(self, plan: Plan) -> Outcome: ...
    async def patch_paths(self, input: str) -> list[str]:
        """Every path the patch `input` names (files and move destinations), in patch order; parsing
        only. Raises the core's parse error (`RetryableError`)."""
        ...

    async def plan_patch(self, input: str) -> PatchPlan:
        """`apply_patch`'s plan: every file resolved, checked, read and patched in memory; nothing written."""
        ...

    async def commit_patch(self, plan: PatchPlan) -> str:
        """Write a planned patch (every file re-checked against what it was planned on); the result text."""
        ...


async def current_hash(engine: Engine, path: str) -> str | None:
    """The content hash `path` has now (`ABSENT`: no file), as `read_file` shows it: what a durable
    plan is committed against, and how a retried commit finds its first attempt's result. `None`
    when it cannot be read (the plan then says why, or writes without a guard)."""
    try:
        outcome, _ = await engine.read_file(path, 0, 1)
    except _core.NotFoundError:
        return ABSENT
    except (_core.HarnessError, OSError):
        return None
    if outcome.content_hash is None and not outcome.emit:
        return ABSENT  # the workspace contract answers a missing file with a text
    return outcome.content_hash


def _identity(directory: str) -> tuple[int, int] | None:
    """`(st_dev, st_ino)` of `directory`, or `None` when it cannot be stat'ed."""
    try:
        st = os.stat(directory)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


@dataclass(frozen=True)
class LocalPlan:
    """A core `ChangePlan`, its attributes read through, and whether committing it is small
    enough to run on the event loop."""

    plan: ChangePlan
    inline: bool

    def __getattr__(self, name: str) -> Any:
        if name == 'plan':  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.plan, name)


Plan = ChangePlan | LocalPlan
"""A checked change, ready to announce (`FileChangeRequestEvent`) and then commit: the core's
`ChangePlan` (`RemoteEngine`), or one with `LocalEngine`'s scheduling hint."""


class LocalEngine:
    """The Rust core on a host directory, race-free (`openat2`) and streaming.

    Work on a file up to `INLINE_MAX_BYTES` runs on the event loop's thread (cheaper than the
    thread hop); anything larger, and every walk, in a worker thread with the GIL released.
    """

    storage: Hashable = HOST

    def __init__(self, core: FileSystemCore, directory: str | None = None) -> None:
        """`directory`: a workspace's working directory the core was opened on, watched by `is_current`."""
        self.core = core
        self._cwd = core.cwd
        self._directory = directory
        self._identity = None if directory is None else _identity(directory)

    def is_current(self) -> bool:
        """Whether the workspace directory is still the one the core holds open (one `stat`).

        `False` once it was deleted or replaced: the toolset then asks the workspace again, which
        raises `WorkspaceUnavailableError` for a deleted directory, as 0.62.0 does on every call.
        Always `True` for the document's `root_dir`.
        """
        return self._directory is None or _identity(self._directory) == self._identity

    async def root_dir(self) -> str:
        return self.core.root_dir

    def _small(self, path: str) -> bool:
        """Whether `path` is worth no thread hop (a hint only: the path is not used for I/O)."""
        return is_small_file(os.path.join(self._cwd, path))

    async def read_file(
        self, path: str, offset: int, limit: int | None, column: int = 0
    ) -> tuple[Outcome, BinaryContent | None]:
        guessed = guessed_type(self.core, path)
        outcome = await run_sized(
            self.core.read_file,
            path,
            offset,
            limit,
            inline=self._small(path),
            limiter=file_passes(),
            guessed_type=guessed,
            column=column,
        )
        return outcome, media_content(outcome)

    async def file_info(self, path: str) -> Outcome:
        return await run_sized(self.core.file_info, path, inline=self._small(path), limiter=file_passes())

    async def list_directory(self, path: str) -> Outcome:
        return await run_native(self.core.list_directory, path)

    async def search_files(self, pattern: str, path: str, include_glob: str | None) -> Outcome:
        return await run_native(self.core.search_files, pattern, path, include_glob)

    async def find_files(self, pattern: str, path: str) -> Outcome:
        return await run_native(self.core.find_files, pattern, path)

    async def list_files(self, path: str, glob: str | None) -> Outcome:
        return await run_native(self.core.list_files, path, glob)

    async def grep(self, pattern: str, path: str, **options: Any) -> Outcome:
        return await run_native(self.core.grep, pattern, path, **options)

    async def lock_key(self, path: str) -> str:
        try:
            return os.path.realpath(os.path.join(self._cwd, path))  # a few lstat calls
        except (OSError, ValueError):
            return path

    async def plan_write(self, path: str, content: str, expected_hash: str | None, announce: bool) -> LocalPlan:
        small = len(content) <= INLINE_MAX_BYTES and self._small(path)
        plan = await run_sized(self.core.plan_write, path, content, expected_hash, announce, inline=small)
        return LocalPlan(plan, small)

    async def plan_edit(
        self, path: str, replacements: Sequence[tuple[str, str] | tuple[str, str, bool]], expected_hash: str | None
    ) -> LocalPlan:
        small = self._small(path)
        plan = await run_sized(self.core.plan_edit, path, list(replacements), expected_hash, inline=small)
        return LocalPlan(plan, small)

    async def plan_create_directory(self, path: str) -> LocalPlan | None:
        plan = self.core.plan_create_directory(path)  # a few stat calls
        return None if plan is None else LocalPlan(plan, True)

    async def patch_paths(self, input: str) -> list[str]:
        return self.core.patch_paths(input)  # a parse, no I/O

    async def plan_patch(self, input: str) -> PatchPlan:
        return await run_native(self.core.plan_patch, input)

    async def commit_patch(self, plan: PatchPlan) -> str:
        recorder = RECORDING.get()
        if recorder is None:
            return await run_native(self.core.commit_patch, plan)
        paths = [file.path for file in plan.files]  # the store keeps missing parents too
        for file in plan.files:
            if file.moved_from is not None:
                paths.append(self._root_relative(await self.lock_key(file.moved_from)))

        async def fused(store: Any, call: dict[str, Any]) -> tuple[str, str | None]:
            # `Checkpoints`: keep, commit and record in one native call; each file's new bytes from the plan.
            return await run_native(store.commit_patch, self.core, plan, paths, **call)

        return await recorder.commit(self.core.root_dir, fused, lambda: run_native(self.core.commit_patch, plan))

    async def commit(self, plan: Plan) -> Outcome:
        assert isinstance(plan, LocalPlan)
        recorder = RECORDING.get()
        if recorder is None:
            return await self._commit(plan)
        if plan.operation == 'create_directory':
            async with recorder.change(self.core.root_dir, [plan.path]):  # `Checkpoints`
                return await self._commit(plan)

        # `Checkpoints`: keep, commit and record in one native call, inline as the commit alone
        # for a small one (its record made once the call has returned); else, or when it cannot
        # run so (`commit_now`), in a worker thread under the root's turn, recorded before it returns.
        if plan.inline:
            done = recorder.commit_now(self.core, plan.plan, plan.path)
            if done is not None:
                return done
        args = (self.core, plan.plan, [plan.path])

        async def fused(store: Any, call: dict[str, Any]) -> tuple[Outcome, str | None]:
            return await run_native(store.commit, *args, **call)

        return await recorder.commit(self.core.root_dir, fused, lambda: self._commit(plan))

    async def _commit(self, plan: LocalPlan) -> Outcome:
        if plan.operation == 'create_directory':
            return run_inline(self.core.commit, plan.plan)  # a few mkdir calls
        return await run_sized(self.core.commit, plan.plan, inline=plan.inline)

    def _root_relative(self, path: str) -> str:
        """An absolute path beneath the root as the root-relative, `/`-separated path a checkpoint names."""
        return os.path.relpath(path, self.core.root_dir).replace(os.sep, '/')
