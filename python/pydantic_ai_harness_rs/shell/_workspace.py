"""How Shell reaches the run's workspace: the metadata directory its files live in; the checks
at the start of a run and the choice of the native supervisor for a local workspace come from
the shared `pydantic_ai_harness_rs._workspace` (re-exported here).
"""

from __future__ import annotations

import posixpath

from pydantic_ai.workspaces import Workspace, WorkspaceError

from pydantic_ai_harness_rs._workspace import (
    READ_ONLY_FAILURE,
    innermost_backend,
    local_backend,
    raise_tool_failure,
    require_workspace,
    supports_commands,
)

__all__ = [
    'METADATA_DIR',
    'READ_ONLY_FAILURE',
    'innermost_backend',
    'local_backend',
    'metadata_dir',
    'raise_tool_failure',
    'require_workspace',
    'supports_commands',
]

METADATA_DIR = '.pydantic-ai-harness'
"""The directory below the workspace's working directory that holds the harness's own files."""


async def metadata_dir(workspace: Workspace, name: str) -> str:
    """`<working_dir>/.pydantic-ai-harness/<name>`, created, with a `.gitignore` of `*` beside it.

    Raises `WorkspaceError` when either directory or the `.gitignore` is a symlink, or when the
    directory cannot be created: no tool argument's fault, so a retry cannot fix it.
    """
    working_dir = await workspace.working_dir()
    root = posixpath.join(working_dir, METADATA_DIR)
    directory = posixpath.join(root, name)
    gitignore = posixpath.join(root, '.gitignore')
    real_root = posixpath.join(await workspace.realpath(working_dir), METADATA_DIR)
    if await workspace.realpath(directory) != posixpath.join(real_root, name):
        raise WorkspaceError(f'`{METADATA_DIR}/{name}` in the workspace is a symlink, so it is not used.')
    try:
        await workspace.make_dir(directory)
        if not await workspace.exists(gitignore):
            if await workspace.realpath(gitignore) != posixpath.join(real_root, '.gitignore'):
                raise WorkspaceError(f'`{METADATA_DIR}/.gitignore` in the workspace is a symlink, so it is not used.')
            await workspace.write_text(gitignore, '*\n')
    except WorkspaceError:
        raise
    except OSError as error:
        raise WorkspaceError(f'Cannot create `{METADATA_DIR}/{name}` in the workspace: {error.strerror}') from error
    return directory
