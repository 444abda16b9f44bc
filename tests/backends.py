"""Workspace backends that stand in for the kinds a user attaches, for tests on every backend kind.

- `ProtocolLocal`: a `LocalWorkspaceBackend` subclass that overrides `read_bytes` (calling the
  stock one), so the FileSystem tools go through the workspace protocol on a host directory
  (`_workspace.local_backend` only runs a stock local backend natively).
- `ShellSandbox`: a backend with commands only (`SupportsCommands`, no `SupportsFilesystem`), run
  in a `/bin/sh` subprocess in a host directory: `Workspace` derives every file operation through
  its shell, as on a container or remote machine reached by commands.

Only `pydantic_ai.workspaces` is imported, so reference venvs can run them too.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
from pydantic_ai.workspaces import CommandResult, LocalWorkspaceBackend, WorkspaceTimeoutError

__all__ = ('ProtocolLocal', 'ShellSandbox', 'host_root')


class ProtocolLocal(LocalWorkspaceBackend):
    """A host directory reached through the workspace protocol (the subclass is not run natively)."""

    async def read_bytes(self, path: str) -> bytes:
        return await super().read_bytes(path)


class ShellSandbox:
    """Commands in a `/bin/sh` subprocess whose working directory is `root` (a sandbox stand-in).

    `path`: the `PATH` its commands see (default: this process's), so a test can leave a tool out.
    `runs` counts the commands run.
    """

    def __init__(self, root: str | os.PathLike[str], *, path: str | None = None) -> None:
        self._root = os.path.realpath(root)
        self._path = os.environ.get('PATH', '/usr/bin:/bin') if path is None else path
        self.runs = 0

    @property
    def ref(self) -> None:
        return None

    async def working_dir(self) -> str:
        return self._root

    async def run(
        self,
        command: str | Sequence[str],
        *,
        shell: bool = False,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        if shell != isinstance(command, str):
            raise TypeError('a shell string needs shell=True, an argv needs shell=False')
        self.runs += 1
        environment = {'PATH': self._path, 'LC_ALL': 'C', **(env or {})}
        argv = ['/bin/sh', '-c', command] if isinstance(command, str) else list(command)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=self._root,
                env=environment,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            return CommandResult(exit_code=127, stdout='', stderr=f'{argv[0]}: not found\n')
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError) as error:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            with anyio.CancelScope(shield=True):  # reap it even when the call was cancelled
                await process.wait()
            if isinstance(error, asyncio.CancelledError):
                raise
            raise WorkspaceTimeoutError(f'command timed out after {timeout} s') from None
        assert process.returncode is not None
        return CommandResult(
            exit_code=process.returncode,
            stdout=out.decode('utf-8', 'replace'),
            stderr=err.decode('utf-8', 'replace'),
        )


def host_root(backend: ShellSandbox | LocalWorkspaceBackend) -> Path:
    """The host directory behind a test backend."""
    if isinstance(backend, ShellSandbox):
        return Path(backend._root)  # pyright: ignore[reportPrivateUsage]
    return Path(backend._working_dir)  # pyright: ignore[reportPrivateUsage]
