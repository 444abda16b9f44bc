"""Deprecation warnings for arguments 0.62.0 renamed or stopped using, worded as it words them,
and the warning that a `FileSystem`'s relative `root_dir` reads differently on a workspace.

The category is `pydantic_ai_harness.HarnessDeprecationWarning` when that package is installed
beside ours (so filters written for it apply), else `UserWarning`, its base class.
"""

from __future__ import annotations

import warnings


def deprecation_warning_class() -> type[Warning]:
    """`HarnessDeprecationWarning` of `pydantic_ai_harness` if importable, else `UserWarning`."""
    try:
        from pydantic_ai_harness import HarnessDeprecationWarning  # pyright: ignore[reportMissingImports]
    except ImportError:
        return UserWarning
    return HarnessDeprecationWarning  # pyright: ignore[reportUnknownVariableType]


def warn_cwd_ignored(owner: str, *, stacklevel: int = 4) -> None:
    """Warn that `<owner>(cwd=...)` is accepted but ignored (the workspace sets the directory)."""
    warnings.warn(
        f'`{owner}(cwd=...)` is deprecated and ignored: '
        "commands/paths start in the workspace's working directory; set it on the workspace, e.g. "
        "`LocalWorkspace('./repo')`.",
        category=deprecation_warning_class(),
        stacklevel=stacklevel,
    )


def warn_argument_renamed(owner: str, old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that `<owner>(<old>=...)` is now `<owner>(<new>=...)` (the old name still works)."""
    warnings.warn(
        f'`{owner}({old}=...)` has been renamed to `{owner}({new}=...)`. '
        'Update the call; this deprecated alias will be removed in a future release.',
        category=deprecation_warning_class(),
        stacklevel=stacklevel,
    )


def warn_root_dir_readings(
    owner: str,
    root_dir: object,
    document: tuple[str, str],
    workspace: tuple[str, str, bool],
    *,
    in_force: str,
    stacklevel: int = 3,
) -> None:
    """Warn that `<owner>(root_dir=...)` names a different tree under the document's rule than under 0.62.0's.

    `document`: the root and the directory paths resolve from under the document's rule (host
    paths from the process's directory); `workspace`: the same under 0.62.0's (from the
    workspace's working directory), and whether 0.62.0 refuses `root_dir`; `in_force`:
    `'document'` or `'workspace'`, the reading the call got. Says both and how to choose.
    """
    root, cwd = document
    their_root, their_cwd, refused = workspace
    theirs = (
        f"refuses it (it is below the workspace's working directory `{their_cwd}`)"
        if refused
        else f"reads it as `{their_root}` with paths resolving from the workspace's working directory `{their_cwd}`"
    )
    warnings.warn(
        f"`{owner}(root_dir={str(root_dir)!r})` with a workspace: the document's rule reads root_dir as the "
        f'host directory `{root}` with paths resolving from `{cwd}`; pydantic-ai-harness 0.62.0 {theirs}. '
        f"{'The document' if in_force == 'document' else '0.62.0'}'s reading is in force. "
        f"Pass `contract='document'` for the document's reading or `contract='workspace'` for 0.62.0's "
        '(either silences this warning).',
        category=deprecation_warning_class(),
        stacklevel=stacklevel,
    )
