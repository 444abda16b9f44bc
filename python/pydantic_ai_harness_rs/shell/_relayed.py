"""Sessions started inside a durable unit (a Temporal activity, a DBOS step, a Prefect task): relayed,
so they outlive the worker that started them.

A relayed session's terminal is held by a small relay process (`_core.Session.start_relayed`), not by
the worker. Each session of a run has an owner-only directory
`<working dir>/.pydantic-ai-harness/shell/sessions/<run key>/<session ID>/` (`sock`, the relay's socket;
`status.json`, `{"pid": N, "exit_code": null | N}` as a job's), so a new worker running the same
workflow finds session `<ID>` of the run by its directory and drives it (`_core.Session.attach`). The
relay ends the program when the run's directory is removed (the run ended), or when no worker has
been connected for 15 minutes.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import sys

import anyio.to_thread

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.durable._commands import in_durable_unit

SESSIONS_DIR = 'sessions'
"""Under the Shell's metadata directory: one directory per run holding its relayed sessions."""


def relays_sessions(run_id: str | None) -> bool:
    """Whether a session started now is relayed: inside a durable unit of a run with an ID."""
    return run_id is not None and in_durable_unit()


def run_dir(base: str, run_id: str) -> str:
    """The directory of the relayed sessions of run `run_id` under the Shell's metadata directory `base`."""
    return posixpath.join(base, SESSIONS_DIR, hashlib.sha256(run_id.encode('utf-8')).hexdigest()[:32])


def session_ids(base: str, run_id: str) -> list[str]:
    """The IDs of the relayed sessions of run `run_id` that were started and not stopped, in order."""
    try:
        names = os.listdir(run_dir(base, run_id))
    except OSError:
        return []
    return [str(n) for n in sorted(int(name) for name in names if name.isdigit())]


async def start(
    base: str,
    run_id: str,
    session_id: str,
    command: str,
    cwd: str,
    env: list[tuple[bytes, bytes]],
    *,
    call: str | None,
    **options: object,
) -> _core.Session:
    """Start `command` as relayed session `session_id` of the run for tool call `call` (see
    `_core.Session.start_relayed`; `options`: `cols`, `rows`, `head_bytes`, `tail_bytes`, `sandbox`).
    Raises `OSError` as `start` does."""
    directory = posixpath.join(run_dir(base, run_id), session_id)
    note = json.dumps({'command': command, 'call': call})
    return await anyio.to_thread.run_sync(
        lambda: _core.Session.start_relayed(
            directory,
            sys.executable,
            _core.__file__,
            note,
            os.fsencode(command),
            cwd,
            env,
            **options,  # pyright: ignore[reportArgumentType]
        )
    )


LOST = 'lost'
"""What `find` returns for a session whose relay was killed before it published an exit code."""


async def find(
    base: str, run_id: str, session_id: str, head_bytes: int, tail_bytes: int
) -> tuple[_core.Session, str, str | None] | int | str | None:
    """Relayed session `session_id` of the run, driven from this process: `(handle, command, tool call
    that started it)`; the exit code its relay published when its program has ended; `LOST` when its
    relay was killed before that (its program, if still running, is ended); `None` when there is no
    such session."""
    if not session_id.isdigit():
        return None
    directory = posixpath.join(run_dir(base, run_id), str(int(session_id)))
    handle = await anyio.to_thread.run_sync(
        lambda: _core.Session.attach(directory, head_bytes=head_bytes, tail_bytes=tail_bytes)
    )
    if handle is None:
        code = _core.Session.published_exit_code(directory)
        if code is None and await anyio.to_thread.run_sync(lambda: _core.Session.relay_lost_in(directory)):
            return LOST
        return code
    try:
        note = json.loads(handle.note)
        command, call = str(note['command']), note.get('call')
    except (ValueError, KeyError, TypeError, AttributeError):
        command, call = '', None
    return handle, command, call if isinstance(call, str) else None


async def forget(base: str, run_id: str, session_id: str) -> None:
    """Remove a stopped relayed session's directory (`stop_session` forgets its ID)."""
    directory = posixpath.join(run_dir(base, run_id), session_id)
    await anyio.to_thread.run_sync(lambda: _core.job_cleanup(directory))
