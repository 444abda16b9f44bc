"""Background jobs: commands that outlive the call, the run and the event loop that started them.

A job is a directory `<working dir>/.pydantic-ai-harness/shell/<id>/` holding its logs
(`stdout.log` and `stderr.log`, or `output.log` for the `shell` tool), `status.json`
(`{"pid": <wrapper pid>, "exit_code": null | N}`) and `handle` (`<pid> <process group>`);
with `max_log_bytes`, `log_clears` (two bytes per log emptied) and, once the job ends,
`watch.stop`. A later run attaches to a job by its directory alone.

`LocalJob` drives a local workspace's jobs through the Rust supervisor (`_core.job_*`);
`WorkspaceJob` drives any other backend through `workspace.run` and its file operations,
with the same files and results.
"""

from __future__ import annotations

import base64
import json
import os
import posixpath
import shlex
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

import anyio
import anyio.to_thread
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace, WorkspaceError

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.shell._limits import APPLY_FAILED, LIMIT_FUNCTION
from pydantic_ai_harness_rs.shell._policy import run_model_command
from pydantic_ai_harness_rs.shell._sandbox import NativeSandbox

CONTROL_TIMEOUT = 30.0
"""Seconds one control command (launch, read, signal) may take in a workspace reached by protocol."""

KILL_GRACE_PERIOD = 2.0
"""Seconds a job gets to exit after `SIGTERM` before its process group gets `SIGKILL`."""

POLL_MIN = 0.05
POLL_MAX = 1.0
"""Bounds in seconds of the backoff between status polls of a running job."""

REQUIRED_TOOLS = ('mv', 'base64')
"""Executables a workspace reached by protocol needs for job files: `mv` publishes, `base64` reads."""

_MISSING_TOOLS = 122


def env_bytes(base: Mapping[str, str], extra: Mapping[str, str] | None) -> list[tuple[bytes, bytes]]:
    """The complete environment of a local command as `(name, value)` bytes, like `subprocess` encodes it."""
    merged = {**base, **(extra or {})}
    return [(os.fsencode(name), os.fsencode(value)) for name, value in merged.items()]


@dataclass(kw_only=True)
class Job:
    """One detached command and the files describing it."""

    workspace: Workspace
    directory: str
    pid: int
    """The wrapper's PID, the one in `status.json`."""
    pgid: int | None
    """The process group to signal; `None` when only the wrapper's PID may be signalled."""
    combined: bool
    """Whether stdout and stderr share `output.log`."""
    _final_status: str | None = field(default=None, init=False, repr=False)

    @property
    def output_path(self) -> str:
        """The combined log, or stdout's log when the streams are kept apart."""
        return posixpath.join(self.directory, 'output.log' if self.combined else 'stdout.log')

    @property
    def stderr_path(self) -> str:
        """stderr's log (the combined log for the `shell` tool)."""
        return posixpath.join(self.directory, 'output.log' if self.combined else 'stderr.log')

    @property
    def status_path(self) -> str:
        """The JSON status file."""
        return posixpath.join(self.directory, 'status.json')

    @property
    def clears_path(self) -> str:
        """One byte longer before, and again after, each time `max_log_bytes` empties a log."""
        return posixpath.join(self.directory, 'log_clears')

    @property
    def stop_command(self) -> str:
        """The command a model runs to stop the whole job."""
        return f'kill -- -{self.pgid}' if self.pgid is not None else f'kill {self.pid}'

    async def _read_status(self) -> str | None:
        raise NotImplementedError

    async def status_text(self) -> str | None:
        """`status.json` as published, or `None` before it exists; a final status is cached."""
        if self._final_status is not None:
            return self._final_status
        text = await self._read_status()
        if text is not None and _exit_code(text) is not None:
            self._final_status = text
        return text

    async def status(self) -> tuple[bool, int | None]:
        """`(running, exit_code)`; an unpublished or unreadable status counts as running."""
        text = await self.status_text()
        code = None if text is None else _exit_code(text)
        return code is None, code

    async def size(self, path: str) -> int:
        """Bytes in the log at `path` (0 when missing)."""
        raise NotImplementedError

    async def read(self, path: str, offset: int, length: int) -> bytes:
        """Up to `length` bytes of `path` from `offset` (empty when missing)."""
        raise NotImplementedError

    async def tail(self, path: str, max_bytes: int) -> bytes:
        """The last `max_bytes` bytes of `path`."""
        size = await self.size(path)
        start = max(0, size - max_bytes)
        return await self.read(path, start, size - start)

    async def tails(self, max_bytes: int) -> tuple[str, str]:
        """The decoded tails of stdout's and stderr's logs."""
        stdout = await self.tail(self.output_path, max_bytes)
        stderr = await self.tail(self.stderr_path, max_bytes)
        return stdout.decode('utf-8', errors='replace'), stderr.decode('utf-8', errors='replace')

    async def snapshot(self, max_bytes: int) -> tuple[bool, int | None, bytes, bytes]:
        """`(running, exit_code, stdout_tail, stderr_tail)`: `status()` and the raw last `max_bytes`
        bytes of both logs (the same log twice when they are combined)."""
        running, code = await self.status()
        return running, code, await self.tail(self.output_path, max_bytes), await self.tail(self.stderr_path, max_bytes)

    async def stop_and_read(self, max_bytes: int) -> tuple[bool, int | None, bytes, bytes]:
        """`kill()`, then `snapshot(max_bytes)`: `(killed, exit_code, stdout_tail, stderr_tail)`."""
        killed = await self.kill()
        _, code, stdout, stderr = await self.snapshot(max_bytes)
        return killed, code, stdout, stderr

    def _note_status(self, text: str | None) -> tuple[bool, int | None]:
        """`(running, exit_code)` of a status text just read; a final one is cached."""
        if self._final_status is not None:
            text = self._final_status
        code = None if text is None else _exit_code(text)
        if code is not None:
            self._final_status = text
        return code is None, code

    async def kill(self) -> bool:
        """Stop the process group: `SIGTERM`, then `SIGKILL` after the grace period if it lingers.

        Returns whether the command was still running when the grace ran out (it ignored or
        outlasted `SIGTERM`) and was killed with `SIGKILL`.
        """
        raise NotImplementedError

    async def wait(self, timeout: float) -> None:
        """Wait up to `timeout` seconds, returning early when the job exits."""
        await anyio.sleep(timeout)

    async def cleanup(self) -> None:
        """Remove the job's directory."""
        try:
            await self.workspace.remove(self.directory)
        except FileNotFoundError:
            pass


def _exit_code(text: str) -> int | None:
    try:
        code = json.loads(text)['exit_code']
    except (ValueError, KeyError, TypeError):
        return None
    if isinstance(code, bool) or not isinstance(code, int):
        return None
    return code


def job_directory(base: str, job_id: str | None) -> str:
    """The directory of a new job: `job_id`, or a random 32-hex name."""
    return posixpath.join(base, job_id or uuid.uuid4().hex)


# --- local workspace: the Rust supervisor ---------------------------------------------------


@dataclass(kw_only=True)
class LocalJob(Job):
    """A job of a local workspace, driven natively (files read and groups signalled by `_core`)."""

    async def _read_status(self) -> str | None:
        return await anyio.to_thread.run_sync(_core.job_status, self.directory)

    async def size(self, path: str) -> int:
        return await anyio.to_thread.run_sync(_core.job_size, path)

    async def read(self, path: str, offset: int, length: int) -> bytes:
        if length <= 0:
            return b''
        return await anyio.to_thread.run_sync(_core.job_read, path, offset, length)

    async def tail(self, path: str, max_bytes: int) -> bytes:
        return await anyio.to_thread.run_sync(_core.job_tail, path, max_bytes)

    async def tails(self, max_bytes: int) -> tuple[str, str]:
        def both() -> tuple[bytes, bytes]:
            return _core.job_tail(self.output_path, max_bytes), _core.job_tail(self.stderr_path, max_bytes)

        stdout, stderr = await anyio.to_thread.run_sync(both)
        return stdout.decode('utf-8', errors='replace'), stderr.decode('utf-8', errors='replace')

    async def snapshot(self, max_bytes: int) -> tuple[bool, int | None, bytes, bytes]:
        # One trip to a worker thread for the three reads.
        def read() -> tuple[str | None, bytes, bytes]:
            return (
                _core.job_status(self.directory),
                _core.job_tail(self.output_path, max_bytes),
                _core.job_tail(self.stderr_path, max_bytes),
            )

        text, stdout, stderr = await anyio.to_thread.run_sync(read)
        running, code = self._note_status(text)
        return running, code, stdout, stderr

    async def kill(self) -> bool:
        how = await anyio.to_thread.run_sync(_core.job_kill, self.directory, self.pid, self.pgid, KILL_GRACE_PERIOD)
        return how == 'killed'

    async def stop_and_read(self, max_bytes: int) -> tuple[bool, int | None, bytes, bytes]:
        # One trip to a worker thread for the stop and the reads after it.
        def stop_read() -> tuple[str, str | None, bytes, bytes]:
            how = _core.job_kill(self.directory, self.pid, self.pgid, KILL_GRACE_PERIOD)
            return (
                how,
                _core.job_status(self.directory),
                _core.job_tail(self.output_path, max_bytes),
                _core.job_tail(self.stderr_path, max_bytes),
            )

        how, text, stdout, stderr = await anyio.to_thread.run_sync(stop_read)
        return how == 'killed', self._note_status(text)[1], stdout, stderr

    async def wait(self, timeout: float) -> None:
        await anyio.to_thread.run_sync(_core.job_wait, self.pid, timeout, abandon_on_cancel=True)

    async def cleanup(self) -> None:
        await anyio.to_thread.run_sync(_core.job_cleanup, self.directory)


@dataclass(frozen=True)
class Launch:
    """Where and how `launch` starts a job (see there): its directory, claimed when `exclusive`."""

    directory: str
    cwd: str
    env: Mapping[str, str] | None
    combined: bool
    file_limit: int | None
    log_limit: int | None
    exclusive: bool


async def launch_local(
    workspace: Workspace, backend: LocalWorkspaceBackend, command: str, spec: Launch, sandbox: NativeSandbox | None
) -> Job:
    """Start `command` as a local job in `spec.directory`; see `launch`.

    A call cancelled while the native launch runs loses its result, but not the job: the job's
    handle file is written before its command starts, so the job is found there and stopped.
    """
    try:
        handle = await anyio.to_thread.run_sync(
            lambda: _core.job_launch(
                spec.directory,
                spec.cwd,
                env_bytes(backend._env, spec.env),  # pyright: ignore[reportPrivateUsage]
                os.fsencode(command),
                spec.combined,
                spec.file_limit,
                spec.log_limit,
                spec.exclusive,
                sandbox=sandbox,
                reap_descendants=True,
            )
        )
    except BaseException:
        with anyio.move_on_after(CONTROL_TIMEOUT, shield=True):
            if started := await anyio.to_thread.run_sync(_core.job_attach, spec.directory):
                pid, pgid = started
                job = LocalJob(
                    workspace=workspace, directory=spec.directory, pid=pid, pgid=pgid, combined=spec.combined
                )
                await job.kill()
                await job.cleanup()
        raise
    if handle is None:
        return await _attach_existing(workspace, spec.directory, combined=spec.combined, local=True)
    pid, pgid = handle
    return LocalJob(workspace=workspace, directory=spec.directory, pid=pid, pgid=pgid, combined=spec.combined)


async def _attach_existing(workspace: Workspace, directory: str, *, combined: bool, local: bool) -> Job:
    # A claimed directory is an in-flight launch or a lost reply: never start a second process.
    if existing := await attach(workspace, directory, combined=combined, local=local):
        return existing
    raise ModelRetry('Background command launch is pending; retry with the same tool call ID.')


async def attach(workspace: Workspace, directory: str, *, combined: bool, local: bool) -> Job | None:
    """The job launched into `directory`, from its `handle` file, or `None` when there is none."""
    if local:
        handle = await anyio.to_thread.run_sync(_core.job_attach, directory)
        if handle is None:
            return None
        return LocalJob(workspace=workspace, directory=directory, pid=handle[0], pgid=handle[1], combined=combined)
    try:
        text = (await workspace.read_bytes(posixpath.join(directory, 'handle'))).decode(errors='replace')
    except WorkspaceError:
        raise
    except OSError:
        return None
    fields = text.split()
    if len(fields) != 2 or not fields[0].isdigit():
        return None
    pgid = int(fields[1]) if fields[1].isdigit() else None
    return WorkspaceJob(workspace=workspace, directory=directory, pid=int(fields[0]), pgid=pgid, combined=combined)


# --- any other workspace: the workspace protocol ---------------------------------------------

_WRAPPER = f"""{LIMIT_FUNCTION}
{_core.LOG_WATCHER}
dir=$1
__harness_wc=wc
__harness_sleep=sleep
publish() {{
  printf '{{"pid": %s, "exit_code": %s}}' "$$" "$1" > "$dir/status.tmp" && mv -f "$dir/status.tmp" "$dir/status.json"
}}
trap : TERM
if [ "$2" = combined ]; then out="$dir/output.log"; err="$dir/output.log"; else out="$dir/stdout.log"; err="$dir/stderr.log"; fi
__harness_watcher=
if [ -n "$5" ]; then (__harness_watch_logs "$5" "$6") < /dev/null > /dev/null 2>&1 & __harness_watcher=$!; fi
if [ -n "$4" ]; then
  __harness_fsize "$4" || {{ __harness_stop_watcher; publish null; echo '{APPLY_FAILED}' >> "$err"; publish 1; exit 1; }}
fi
publish null
(
  [ ! -e "$dir/stop" ] || exit 143
  exec sh -c "$3"
) < /dev/null >> "$out" 2>> "$err"
code=$?
__harness_stop_watcher
publish $code
"""
"""The job's wrapper for a workspace reached by protocol: `$1` directory, `$2` log mode, `$3`
command, `$4` file limit, `$5` log limit (empty: none), `$6` seconds between log checks. It
publishes the running status once its `TERM` trap is set, so the launcher's wait for
`status.json` also waits for the trap; the trap lets it outlive a group `SIGTERM` to publish
the command's status (`143`). The log watcher (`_core.LOG_WATCHER`) uses the workspace's `wc`
and `sleep`."""

_LAUNCHER = f"""missing=
for tool in {' '.join(REQUIRED_TOOLS)}; do command -v "$tool" > /dev/null 2>&1 || missing="$missing $tool"; done
[ -z "$missing" ] || {{ echo $missing; exit {_MISSING_TOOLS}; }}
if [ "$exclusive" = 1 ]; then (umask 077 && mkdir "$dir") || exit 126; else (umask 077 && mkdir -p "$dir") || exit 125; fi
if [ "$mode" = combined ]; then : > "$dir/output.log"; else : > "$dir/stdout.log"; : > "$dir/stderr.log"; fi
if command -v setsid > /dev/null 2>&1; then
  setsid sh -c "$wrapper" sh "$dir" "$mode" "$cmd" "$limit" "$log_limit" "$log_interval" < /dev/null > /dev/null 2>&1 &
  pid=$!; group=$pid
else
  nohup sh -c "$wrapper" sh "$dir" "$mode" "$cmd" "$limit" "$log_limit" "$log_interval" < /dev/null > /dev/null 2>&1 &
  pid=$!; group=-
  [ "$(ps -o pgid= -p $$ 2> /dev/null | tr -d ' ')" = "$$" ] && group=$$
fi
while [ ! -e "$dir/status.json" ]; do sleep 0.02 2> /dev/null || sleep 1; done
echo "$pid $group" > "$dir/handle"
echo "$pid $group"
"""
"""Starts the wrapper detached (`setsid`, else `nohup` in the launcher's group) and prints
`<pid> <group or ->` once the wrapper has published its status. The command is the
launcher's `$1` (`cmd=$1`), not quoted into the script, so a command full of `'` does not
grow past the OS's limit on one argument."""

_SIGNAL = 'true 2> /dev/null > "$3"; kill -s "$1" -- "$2"'
"""Creates the stop file `$3`, then sends signal `$1` to `$2` with the shell's `kill` builtin."""


@dataclass(kw_only=True)
class WorkspaceJob(Job):
    """A job of a workspace reached through its protocol (`run` plus file operations)."""

    async def _read_status(self) -> str | None:
        try:
            return (await self.workspace.read_bytes(self.status_path)).decode('utf-8', errors='replace')
        except FileNotFoundError:
            return None

    async def size(self, path: str) -> int:
        try:
            size = (await self.workspace.stat(path)).size
        except FileNotFoundError:
            return 0
        if size is not None:
            return size
        result = await self.workspace.run(f'wc -c < {shlex.quote(path)}', shell=True, timeout=CONTROL_TIMEOUT)
        if result.exit_code != 0 or not result.stdout.strip().isdigit():
            raise WorkspaceError(result.stderr.strip() or f'Unable to size job log {path!r}.')
        return int(result.stdout)

    async def read(self, path: str, offset: int, length: int) -> bytes:
        if length <= 0:
            return b''
        quoted = shlex.quote(path)
        result = await self.workspace.run(
            f'test -f {quoted} || exit 66; test -r {quoted} || {{ test -f {quoted} || exit 66; exit 67; }}; '
            f'tail -c +{offset + 1} {quoted} | head -c {length} | base64',
            shell=True,
            timeout=CONTROL_TIMEOUT,
        )
        if result.exit_code == 66:
            return b''
        if result.exit_code != 0:
            raise WorkspaceError(result.stderr.strip() or f'Unable to read job log {path!r}.')
        return base64.b64decode(result.stdout)

    async def _signal(self, name: str) -> bool:
        target = f'-{self.pgid}' if self.pgid is not None else str(self.pid)
        result = await self.workspace.run(
            ['sh', '-c', _SIGNAL, 'kill', name, target, posixpath.join(self.directory, 'stop')],
            timeout=CONTROL_TIMEOUT,
        )
        if result.exit_code == 0:
            return True
        if 'no such process' in result.stderr.lower():
            return False
        raise WorkspaceError(result.stderr.strip() or f'Unable to send SIG{name} to job {self.pid}.')

    async def kill(self) -> bool:
        if not await self._signal('TERM') or self.pgid is None:
            return False
        if not (await self.status())[0]:
            if await self._signal('0'):
                await self._signal('KILL')
            return False
        interval = POLL_MIN
        with anyio.move_on_after(KILL_GRACE_PERIOD):
            while await self._signal('0'):
                await anyio.sleep(interval)
                interval = min(interval * 2, POLL_MAX)
            return False
        return await self._signal('KILL')


async def launch_remote(workspace: Workspace, command: str, spec: Launch) -> Job:
    """Start `command` as a job through `workspace.run`; see `launch`."""
    mode = 'combined' if spec.combined else 'separate'
    assignments = ' '.join(
        f'{name}={shlex.quote(value)}'
        for name, value in (
            ('dir', spec.directory),
            ('exclusive', '1' if spec.exclusive else '0'),
            ('mode', mode),
            ('limit', '' if spec.file_limit is None else str(spec.file_limit)),
            ('log_limit', '' if spec.log_limit is None else str(spec.log_limit)),
            ('log_interval', _core.LOG_CHECK_INTERVAL),
            ('wrapper', _WRAPPER),
        )
    )
    script = f'cd {shlex.quote(spec.cwd)} || exit\n{assignments} cmd=$1\n{_LAUNCHER}'
    result = await run_model_command(
        workspace, lambda cmd: ['sh', '-c', script, 'sh', cmd], command, env=spec.env, timeout=CONTROL_TIMEOUT
    )
    if result.exit_code == _MISSING_TOOLS:
        needed = ' and '.join(f'`{tool}`' for tool in REQUIRED_TOOLS)
        lacking = ' and '.join(f'`{tool}`' for tool in result.stdout.split())
        raise WorkspaceError(f'Shell needs {needed} on PATH in the workspace; this image lacks {lacking}.')
    if spec.exclusive and result.exit_code == 126:
        return await _attach_existing(workspace, spec.directory, combined=spec.combined, local=False)
    fields = result.stdout.split()
    if result.exit_code != 0 or len(fields) != 2 or not fields[0].isdigit():
        detail = result.stderr.strip() or f'launcher output {result.stdout.strip()!r}'
        raise ModelRetry(f'Shell supervisor exited with {result.exit_code}: {detail}')
    pgid = int(fields[1]) if fields[1].isdigit() else None
    return WorkspaceJob(
        workspace=workspace, directory=spec.directory, pid=int(fields[0]), pgid=pgid, combined=spec.combined
    )


async def launch(
    workspace: Workspace,
    local: LocalWorkspaceBackend | None,
    command: str,
    *,
    base: str,
    cwd: str,
    env: Mapping[str, str] | None,
    combined: bool,
    file_limit: int | None = None,
    log_limit: int | None = None,
    job_id: str | None = None,
    sandbox: NativeSandbox | None = None,
    directory: str | None = None,
) -> Job:
    """Start `command` detached in a new job directory below `base`, starting in `cwd`.

    `directory` is the job's directory when the caller chose it already (`job_directory(base,
    job_id)`), so that a caller cancelled before this returns can still find the job by it
    (`stop_launched`).

    `env` is added to the workspace's environment; `log_limit` is `max_log_bytes` for its logs.
    Raises `ModelRetry` for a command too long for the OS. With `job_id` the directory is claimed
    exclusively: a second launch with the same ID attaches to the first job instead of
    starting another, raises `ModelRetry` while a live launcher is still starting the first,
    and starts it afresh when the first launcher died before the command could start.
    `sandbox` (local workspaces only) confines the wrapper and the command.
    """
    directory = directory if directory is not None else job_directory(base, job_id)
    spec = Launch(directory, cwd, env, combined, file_limit, log_limit, exclusive=job_id is not None)
    if local is not None:
        return await launch_local(workspace, local, command, spec, sandbox)
    return await launch_remote(workspace, command, spec)


async def stop_launched(workspace: Workspace, directory: str, job: Job | None, *, combined: bool, local: bool) -> None:
    """Stop and remove the job a call started in `directory` and is giving up (cancelled or failed).

    `job` is what `launch` returned, or `None` when the call ended before it returned: the job
    is then found by its `handle` file, which the launch writes before it returns, so no await
    between spawning and the caller holding the job can leak it. Shielded, and bounded by
    `CONTROL_TIMEOUT`.
    """
    with anyio.move_on_after(CONTROL_TIMEOUT, shield=True):
        if job is None:
            try:
                job = await attach(workspace, directory, combined=combined, local=local)
            except (OSError, WorkspaceError):
                job = None
        if job is not None:
            await job.kill()
            await job.cleanup()
