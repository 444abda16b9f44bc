"""How the capabilities reach the run's workspace: finding the backend under its facades, whether
its files and processes are this host's, and the checks at the start of a run.

Mirrors the private workspace helpers of `pydantic_ai_harness` (`_workspace.py`), whose
user-facing messages are kept word for word. Shared by `Shell` and `FileSystem`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from pydantic_ai.exceptions import ToolFailed, UserError
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.workspaces import (
    LocalWorkspaceBackend,
    SupportsCommands,
    UnavailableWorkspace,
    Workspace,
    WorkspaceBackend,
    WorkspaceError,
    WorkspaceReadOnlyError,
    WorkspaceTimeoutError,
    WorkspaceUnavailableError,
    WrapperWorkspace,
)

try:
    from pydantic_ai.workspaces.unavailable import NO_WORKSPACE
except ImportError:  # pragma: no cover - every supported release has it
    NO_WORKSPACE = None

READ_ONLY_FAILURE = 'The workspace is read-only; the change was refused.'

_PROVIDER_CAPABILITIES = {'modal': 'ModalSandbox()', 'e2b': 'E2BSandbox()', 'sprites': 'SpritesSandbox()'}

FILE_METHODS: tuple[str, ...] = (
    'read_bytes',
    'write_bytes',
    'stat',
    'list_dir',
    'make_dir',
    'remove',
    'exists',
    'realpath',
)
"""The `SupportsFilesystem`/`SupportsRealpath` methods: a backend overriding none of them keeps its files on this host."""


def innermost_backend(workspace: Workspace) -> WorkspaceBackend:
    """The backend under every facade and wrapper of `workspace` (wrappers unwrapped via `wrapped`)."""
    current: WorkspaceBackend = workspace
    while isinstance(current, Workspace):
        current = current.wrapped if isinstance(current, WrapperWorkspace) else current.backend
    return current


def files_on_host(workspace: Workspace) -> bool:
    """Whether `workspace`'s files are this host's: its innermost backend is a `LocalWorkspaceBackend`,
    a subclass (reached through the workspace protocol, see `local_backend`) included."""
    return isinstance(innermost_backend(workspace), LocalWorkspaceBackend)


def local_backend(workspace: WorkspaceBackend, methods: Sequence[str] = ('run',)) -> LocalWorkspaceBackend | None:
    """The `LocalWorkspaceBackend` to use natively, or `None` to go through the workspace protocol.

    Only a stock local backend reached through plain `Workspace` facades qualifies: a wrapper
    (durable execution, read-only, ...) or a subclass overriding one of `methods` (`run` for
    commands, `FILE_METHODS` for files) may change what the operation means, so those keep the
    workspace protocol.
    """
    layer: object = workspace
    while type(layer) is Workspace:
        layer = layer._backend  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    if not isinstance(layer, LocalWorkspaceBackend):
        return None
    if any(getattr(type(layer), name) is not getattr(LocalWorkspaceBackend, name) for name in methods):
        return None
    if not hasattr(layer, '_env') or not hasattr(layer, '_ensure_alive'):  # pragma: no cover - a future core
        return None
    return layer


def supports_commands(workspace: Workspace) -> bool:
    """Whether `workspace.run` can succeed: attached, not read-only, and its backend runs commands."""
    if not workspace.attached or workspace.read_only:
        return False
    return isinstance(innermost_backend(workspace), SupportsCommands)


def is_unattached(workspace: Workspace) -> bool:
    """Whether `workspace` is core's placeholder for a run with no workspace (not an `UnavailableWorkspace` given on purpose)."""
    return NO_WORKSPACE is not None and innermost_backend(workspace) is NO_WORKSPACE


def refuse_unavailable(workspace: Workspace, owner: str) -> None:
    """Raise `UserError` when `workspace` is an `UnavailableWorkspace` passed on purpose, with its reason."""
    backend = innermost_backend(workspace)
    if isinstance(backend, UnavailableWorkspace) and not is_unattached(workspace):
        raise UserError(f'`{owner}` cannot use this workspace: {backend.reason}')


def require_workspace(workspace: Workspace, owner: str, messages: Sequence[ModelMessage]) -> None:
    """Raise `UserError` when the run has no workspace, naming `owner` and how to attach one."""
    refuse_unavailable(workspace, owner)
    if workspace.attached:
        return
    response = next((m for m in reversed(messages) if isinstance(m, ModelResponse)), None)
    ref = None if response is None else getattr(response, 'workspace_ref', None)
    if ref is not None:
        if ref.provider == 'local':
            example = f' (such as `LocalWorkspace({ref.id!r})`)'
        elif (capability := _PROVIDER_CAPABILITIES.get(ref.provider)) is not None:
            example = f' (such as `{capability}`)'
        else:
            example = ''
        raise UserError(
            f'`{owner}` needs a workspace. The message history continues in workspace '
            f'`{ref.provider}:{ref.id}`; attach the capability that provides `{ref.provider}` workspaces'
            f'{example} to continue there, or pass `workspace=` to the run.'
        )
    raise UserError(
        f'`{owner}` needs a workspace, but none is attached to this run. '
        "Add `LocalWorkspace('.')` (this machine; `from pydantic_ai.capabilities import LocalWorkspace`, "
        'or `- LocalWorkspace: .` in an agent spec) or a sandbox capability such as `ModalSandbox()` '
        "to the agent's capabilities, or pass `workspace=` to the run. "
        'See https://pydantic.dev/docs/ai/workspace/'
    )


def raise_tool_failure(error: WorkspaceError) -> NoReturn:
    """A deliberate workspace failure as a failed tool call; a workspace that is gone ends the run."""
    if isinstance(error, WorkspaceUnavailableError):
        raise error
    if isinstance(error, WorkspaceReadOnlyError):
        raise ToolFailed(READ_ONLY_FAILURE) from error
    if isinstance(error, WorkspaceTimeoutError):
        raise ToolFailed(str(error) or 'The workspace operation timed out.') from error
    raise ToolFailed(str(error) or f'The workspace operation failed ({type(error).__name__}).') from error
