"""0.62.0's `root_dir` on a workspace: the boundary and working directory of one workspace.

Under the workspace contract `root_dir` is a path *in the workspace*: `None` is its working
directory, a relative path resolves against the working directory (so it may only climb: `.`,
`..`, `../..`), `'/'` turns containment off, and the working directory must lie inside it. Only
the workspace protocol is used (`working_dir`, `resolve`, `realpath`), so any backend can be
bounded this way; a local workspace without `root_dir` is the same as its working directory.
Messages are 0.62.0's, word for word.

Which reading of `root_dir` a call gets is `FileSystem(contract=...)`'s choice (`contract_on`):
`'workspace'` is 0.62.0's, above, on every workspace; `'document'` is the document's (a host
directory, from the process's directory), possible only where the workspace's files are this
host's; `None` keeps the rule of releases before the field (the document's on a plain local
workspace with `root_dir` given, 0.62.0's otherwise), and `warn_if_readings_differ` says when that
rule picked one of two readings that name different directories (a warning at run start).
"""

from __future__ import annotations

import os
import posixpath
import weakref
from dataclasses import dataclass
from pathlib import Path, PurePath

from pydantic_ai.exceptions import UserError
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace, WorkspaceBackend

from pydantic_ai_harness_rs._warn import warn_root_dir_readings
from pydantic_ai_harness_rs._workspace import FILE_METHODS, innermost_backend, local_backend
from pydantic_ai_harness_rs.filesystem._defaults import Contract


@dataclass(frozen=True)
class Bounds:
    """Where one workspace's file tools may go, resolved on its first file operation."""

    root: str
    """The boundary: the real (symlink-free) workspace path of `root_dir`; `/` contains everything."""
    cwd: str
    """The working directory relative paths resolve from, inside `root` (real unless `root` is `/`)."""
    named: bool
    """Whether `root_dir` was given: messages then name `root_dir` rather than "the project root"."""

    @property
    def contains_everything(self) -> bool:
        """Whether containment is off (`root_dir='/'`); access patterns still apply."""
        return self.root == '/'


def root_spelling(root_dir: str | Path | None) -> str | None:
    """`root_dir` as a workspace path, or `None`; refuses what can never contain the working directory.

    Raises:
        UserError: `root_dir` starts with `~` (workspaces expand nothing), or is relative and
            below the working directory (anything but `.` and a chain of `..`).
    """
    if root_dir is None:
        return None
    path = PurePath(root_dir)
    if path.parts and path.parts[0].startswith('~'):
        raise UserError(
            f'Workspace paths do not expand `~`: {path!s}. '
            'Use an absolute path inside the sandbox or a path relative to its working directory.'
        )
    spelling = path.as_posix()
    normalized = posixpath.normpath(spelling)
    if not posixpath.isabs(normalized) and normalized != '.' and set(normalized.split('/')) != {'..'}:
        raise UserError(
            f'root_dir {spelling!r} is below the working directory, but root_dir must contain the working '
            'directory. To scope the tools to a subfolder, attach the workspace there, '
            "e.g. `LocalWorkspace('./src')`."
        )
    return spelling


def _contains(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip('/') + '/')


async def workspace_bounds(workspace: Workspace, spelling: str | None) -> Bounds:
    """The boundary and working directory `workspace` gives a FileSystem with `root_dir=spelling`.

    `spelling` comes from `root_spelling`. The default boundary is the working directory with
    its symlinks resolved, and relative paths then resolve from that same spelling.

    Raises:
        UserError: the working directory is outside `root_dir`.
        WorkspaceError: the workspace cannot answer (e.g. `WorkspaceUnavailableError`).
    """
    cwd = posixpath.normpath(await workspace.working_dir())
    if spelling is None:
        real = cwd if cwd == '/' else await workspace.realpath(cwd)
        return Bounds(root=real, cwd=real, named=False)
    root = await workspace.resolve(spelling)
    if root != '/':
        root = await workspace.realpath(root)
        cwd = await workspace.realpath(cwd)  # a working directory reached through a symlink is still inside
    if not _contains(root, cwd):
        raise UserError(
            f'The working directory {cwd!r} is outside root_dir {root!r}. '
            f'To work in {root!r}, attach the workspace there, such as `LocalWorkspace({root!r})` on this '
            'machine; otherwise set `root_dir` to a directory that contains the working directory.'
        )
    return Bounds(root=root, cwd=cwd, named=True)


def checked_contract(contract: object) -> Contract | None:
    """`contract` as given, when it is `None`, `'document'` or `'workspace'`.

    Raises:
        ValueError: `contract must be 'document', 'workspace' or None, got <value>`.
    """
    if contract is None:
        return None
    if contract == 'document':
        return 'document'
    if contract == 'workspace':
        return 'workspace'
    raise ValueError(f"contract must be 'document', 'workspace' or None, got {contract!r}")


def refuse_document_off_host(workspace: Workspace, owner: str) -> None:
    """Refuse `contract='document'` on a workspace whose files the document's rule cannot reach.

    The document reads `root_dir` as a directory of this host, so it needs a writable workspace
    whose backend is a `LocalWorkspaceBackend` (a read-only wrapper would not be honoured by host
    I/O). Called at run start (`before_run`) and on each call's first sight of a workspace.

    Raises:
        UserError: the workspace keeps its files elsewhere (a sandbox, a remote machine, an
            in-memory store) or is read-only; the message names the field and both ways out.
    """
    backend = innermost_backend(workspace)
    if isinstance(backend, LocalWorkspaceBackend) and not workspace.read_only:
        return
    where = 'is read-only' if isinstance(backend, LocalWorkspaceBackend) else 'keeps its files off this host'
    raise UserError(
        f"`{owner}(contract='document')` reads root_dir as a directory of this host, but the run's workspace "
        f"({type(backend).__name__}) {where}. Pass `contract='workspace'` (or leave `contract` unset) to work "
        'in the workspace, or run without a workspace to keep the host directory.'
    )


def contract_on(workspace: Workspace, choice: Contract | None, *, root_given: bool, owner: str) -> Contract:
    """The contract a call on the attached `workspace` runs under, for `FileSystem(contract=choice)`.

    `'workspace'` and `'document'` as chosen; `None`: the document's on a plain local workspace
    with `root_dir` given, 0.62.0's otherwise (the rule before the field existed). `workspace`
    is the facade a tool sees, with any durable wrapper taken off.

    Raises:
        UserError: `choice` is `'document'` and the workspace's files are not this host's
            (`refuse_document_off_host`).
    """
    if choice == 'document':
        refuse_document_off_host(workspace, owner)
        return 'document'
    if choice is None and root_given and local_backend(workspace, FILE_METHODS) is not None:
        return 'document'
    return 'workspace'


async def warn_if_readings_differ(
    workspace: Workspace,
    root_dir: str | Path,
    document: tuple[str, str],
    *,
    in_force: Contract,
    owner: str,
    checked: weakref.WeakSet[WorkspaceBackend],
) -> bool:
    """Warn when the document's and 0.62.0's readings of a relative `root_dir` differ on `workspace`.

    Only where both could apply: a writable workspace whose backend is a `LocalWorkspaceBackend`
    (elsewhere the document's rule has no directory to name). `document` is the host reading (the
    document core's real root and cwd); 0.62.0's joins `root_dir` to the workspace's working
    directory, or refuses it (below the working directory). `in_force`: the reading the call got.
    Returns whether it warned (`_warn.warn_root_dir_readings`): not for an absolute `root_dir`,
    nor when both readings name the same root and the same directory paths resolve from.
    `checked`: the backends already compared (the caller's, kept across calls), so each is
    compared once (asking a local backend for its working directory costs a thread hop).
    """
    if PurePath(root_dir).is_absolute() or str(root_dir).startswith('~'):
        return False
    backend = innermost_backend(workspace)
    if not isinstance(backend, LocalWorkspaceBackend) or workspace.read_only or backend in checked:
        return False
    checked.add(backend)
    working = os.path.realpath(await workspace.working_dir())
    pointed = os.path.realpath(os.path.join(working, root_dir))
    try:
        root_spelling(root_dir)
    except UserError:
        refused = True
    else:
        refused = False
        if (pointed, working) == document:
            return False
    warn_root_dir_readings(owner, root_dir, document, (pointed, working, refused), in_force=in_force, stacklevel=5)
    return True


def refuse_without_workspace(owner: str) -> UserError:
    """The error for a call without a workspace under `contract='workspace'` (0.62.0's contract needs one)."""
    return UserError(
        f"`{owner}(contract='workspace')` works in the run's workspace, but this call has none. Attach one "
        "(such as `LocalWorkspace('.')`) or pass `workspace=` to a direct call; for a directory of this host "
        "without a workspace, use `contract='document'` or leave `contract` unset."
    )
