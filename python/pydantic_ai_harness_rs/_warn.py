"""Deprecation warnings for arguments 0.62.0 renamed or stopped using, worded as it words them.

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
