"""0.62.0's `root_dir` on a workspace: the boundary and working directory of one workspace.

Under the workspace contract `root_dir` is a path *in the workspace*: `None` is its working
directory, a relative path resolves against the working directory (so it may only climb: `.`,
`..`, `../..`), `'/'` turns containment off, and the working directory must lie inside it. Only
the workspace protocol is used (`working_dir`, `resolve`, `realpath`), so any backend can be
bounded this way; a local workspace without `root_dir` is the same as its working directory.
Messages are 0.62.0's, word for word.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path, PurePath

from pydantic_ai.exceptions import UserError
from pydantic_ai.workspaces import Workspace


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
