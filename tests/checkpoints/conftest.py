"""Checkpoints fixtures: a workspace directory with the agent's capabilities on it, and tree snapshots."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs import Checkpoints, FileSystem, Shell


@pytest.fixture
def anyio_backend() -> str:
    return 'asyncio'  # agent runs need asyncio


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / 'ws'
    root.mkdir()
    return root


def agent_tools(ws: Path, cp: Checkpoints[Any], *, patch: bool = False) -> list[Any]:
    """The capabilities of a run on `ws`: FileSystem (with `apply_patch` when asked), Shell, and `cp`."""
    tools = ['read_file', 'write_file', 'edit_file', 'create_directory'] + (['apply_patch'] if patch else [])
    return [FileSystem(root_dir=ws, tools=tools), LocalWorkspace(ws), Shell(denied_commands=[]), cp]


def tree(root: Path) -> dict[str, tuple[str, Any, int]]:
    """Every entry under `root` (not `.pydantic-ai-harness/` or `.git/`): kind, bytes or target, mode."""
    out: dict[str, tuple[str, Any, int]] = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ('.pydantic-ai-harness', '.git'))
        for name in dirs + sorted(files):
            path = Path(directory, name)
            st = path.lstat()
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ('link', os.readlink(path), 0)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ('dir', None, stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ('file', path.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


FIFO_SECONDS = 20
"""How long a job waits for the test to write its FIFO, and the test for the job to read it: a failing
run fails within that, never hangs (nor leaves a job waiting)."""


def fifo_read(fifo: Path) -> str:
    """A job's shell words that wait (at most `FIFO_SECONDS`) until the test writes `fifo` (`go`)."""
    return f'timeout {FIFO_SECONDS} head -n 1 {fifo} > /dev/null'


def until_exists(path: str) -> str:
    """A job's shell words that wait (at most `FIFO_SECONDS`) until the test makes `path`."""
    return f"timeout {FIFO_SECONDS} sh -c 'until [ -e {path} ]; do sleep 0.01; done'"


async def go(fifo: Path) -> None:
    """Let the job waiting on `fifo` (`fifo_read`) go on; waits until it reads, failing after
    `FIFO_SECONDS` (a non-blocking open: a blocking one in a worker thread could not be given up)."""
    with anyio.fail_after(FIFO_SECONDS):
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as error:
                if error.errno != errno.ENXIO:  # ENXIO: no reader yet
                    raise
                await anyio.sleep(0.01)
                continue
            try:
                os.write(fd, b'go\n')
            finally:
                os.close(fd)
            return
