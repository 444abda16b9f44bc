"""`Shell(sandbox=..., network=...)`: the Landlock confinement of local commands.

The Rust supervisor enforces it in the child before exec (`process::sandbox`); this module
checks the kernel at construction, owns the private temporary directory (`TMPDIR`) and
says which directories a command may write to.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from typing import Literal

from pydantic_ai_harness_rs import _core

SandboxMode = Literal['workspace-write', 'read-only']
"""`'workspace-write'`: writes beneath the workspace directory and the private temp directory;
`'read-only'`: writes only to the private temp directory (and the job files)."""

SANDBOX_MODES: tuple[str, ...] = ('workspace-write', 'read-only')

NativeSandbox = tuple[bool, list[str], bool]
"""What `_core` takes: `(restrict_fs, writable_dirs, network)`; without the network, pathname UNIX
sockets stay reachable only beneath `writable_dirs` (Landlock ABI 9+)."""


def validate_sandbox(sandbox: object, network: object) -> None:
    """Raise `ValueError` for an unknown mode, or when this kernel cannot enforce the request.

    A kernel without Landlock (or, with `network=False`, without Landlock's TCP rules, ABI 4)
    is refused here: a sandboxed command never runs unconfined.
    """
    if sandbox is not None and sandbox not in SANDBOX_MODES:
        raise ValueError(f'sandbox must be None, {SANDBOX_MODES[0]!r} or {SANDBOX_MODES[1]!r}; got {sandbox!r}.')
    if not isinstance(network, bool):
        raise ValueError('network must be True or False.')
    if sandbox is None and network:
        return
    _, reason = _core.sandbox_support(network)
    if reason is not None:
        what = f'sandbox={sandbox!r}' if sandbox is not None else 'network=False'
        raise ValueError(f'Shell({what}) cannot be enforced: {reason}.')


class SandboxDirs:
    """The sandbox of one toolset: its mode, network flag and private temporary directory.

    The temporary directory (`0700`, under the host's temp dir) is created on first use and
    removed when the toolset is collected or the interpreter exits; background commands that
    outlive the process lose it.
    """

    def __init__(self, mode: SandboxMode | None, network: bool) -> None:
        self.mode = mode
        self.network = network
        self._tmp: str | None = None
        self._finalizer: weakref.finalize[..., None] | None = None

    @property
    def active(self) -> bool:
        """Whether commands run confined at all."""
        return self.mode is not None or not self.network

    def tmpdir(self) -> str | None:
        """The private temporary directory, created on first call (`None` without a file sandbox)."""
        if self.mode is None:
            return None
        if self._tmp is None or not os.path.isdir(self._tmp):
            self._tmp = tempfile.mkdtemp(prefix='harness-shell-')
            self._finalizer = weakref.finalize(self, shutil.rmtree, self._tmp, True)
        return self._tmp

    def env(self) -> dict[str, str]:
        """Variables a sandboxed command gets on top of the workspace's: `TMPDIR`."""
        tmp = self.tmpdir()
        return {} if tmp is None else {'TMPDIR': tmp}

    def native(self, working_dir: str, jobs_dir: str | None) -> NativeSandbox | None:
        """The `_core` sandbox for a command run in the workspace `working_dir`, or `None`.

        `jobs_dir` (the `.pydantic-ai-harness/shell` directory) stays writable in read-only
        mode, so background jobs can publish their logs and status.
        """
        if not self.active:
            return None
        if self.mode is None:
            return (False, [working_dir], self.network)  # where pathname sockets stay reachable
        writable = [self.tmpdir() or '']
        if self.mode == 'workspace-write':
            writable.append(working_dir)
        elif jobs_dir is not None:
            writable.append(jobs_dir)
        return (True, writable, self.network)
