"""Interactive sessions (`Shell(interactive=True)`): programs on a pseudo-terminal, driven by the model.

The Rust core (`_core.Session`) runs the program, keeps its screen and a bounded transcript (the
cleaned text, written whole to a spill file when long) and tells when it waits for input; this
module keeps the sessions of each run, renders what the model reads, judges the lines typed into a
shell, and ends every session (and removes its spill files) when its run or the Python process ends.
"""

from __future__ import annotations

import atexit
import os
import posixpath
import re
import shlex
import time
from dataclasses import dataclass, field
from typing import Literal

import anyio
import anyio.to_thread

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.shell._modes import head_tail

SESSION_TOOL_NAMES: tuple[str, ...] = (
    'start_session',
    'write_stdin',
    'read_session',
    'list_sessions',
    'list_commands',
    'stop_session',
)
"""The tools `Shell(interactive=True)` adds, in registration order."""

SHELL_PROGRAMS = frozenset({'sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish', 'csh', 'tcsh', 'busybox'})
"""Programs whose sessions are shells: each line typed into them is judged by the command policy."""

SESSION_TERM = 'xterm-256color'
"""`TERM` of a session's program, unless `Shell(env=...)` names one."""

DEFAULT_YIELD_SECONDS = 1.0
"""How long `start_session` and `write_stdin` wait for output at most, unless the program waits for input sooner."""

MIN_SIZE, MAX_SIZE = (20, 5), (1000, 500)
"""Smallest and largest terminal, `(cols, rows)`."""

Woke = Literal['matched', 'waiting', 'exited', 'timed_out']

_LIVE: set[_core.Session] = set()
"""Every session not yet stopped, so none outlives the Python process (`_end_all` at exit)."""


def _end_all() -> None:
    for handle in list(_LIVE):
        handle.stop(0.0)
        handle.remove_files()
    _LIVE.clear()


atexit.register(_end_all)


def is_shell_program(command: str) -> bool:
    """Whether `command` starts an interactive shell (`bash`, `/bin/sh -i`, `env FOO=1 zsh`), not a script (`bash -c`)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    while words and (words[0] in ('env', 'exec') or ('=' in words[0] and not words[0].startswith('='))):
        words = words[1:]
    if not words or posixpath.basename(words[0]) not in SHELL_PROGRAMS:
        return False
    arguments = iter(words[1:])
    for word in arguments:
        if word == '-c' or not word or word[0] not in '-+':
            return False  # `-c script` or a script file: not read from the terminal
        if word in _OPTIONS_WITH_VALUE:
            next(arguments, None)
    return True


_OPTIONS_WITH_VALUE = frozenset({'-o', '+o', '-O', '+O', '--rcfile', '--init-file'})
"""Options of a shell that take the next word as their value (`bash -o vi`, `bash --rcfile f`)."""


@dataclass(eq=False)
class LiveSession:
    """One session of a run."""

    id: str
    command: str
    handle: _core.Session
    is_shell: bool
    line: str = ''
    """What was typed into a shell session since its last Enter (judged once the line is ended)."""
    finished: bool = False
    """Whether `CommandFinishedEvent` was emitted."""
    lines: int = 0
    """Lines of output the model has read."""
    relayed: bool = False
    """Whether a relay process holds its terminal (started in a durable unit, `_relayed`): it outlives this process."""
    call: str | None = None
    """The tool call that started a relayed session (a retried `start_session` answers with its session)."""


@dataclass
class SessionTable:
    """The live sessions of every run of one `Shell`, keyed by run; IDs count from 1 in each run."""

    runs: dict[str, dict[str, LiveSession]] = field(default_factory=dict[str, dict[str, LiveSession]])
    counters: dict[str, int] = field(default_factory=dict[str, int])
    stopped: dict[str, list[_core.Session]] = field(default_factory=dict[str, list[_core.Session]])
    """Sessions of each run already stopped, whose spill files stay until the run ends."""
    relayed_runs: set[str] = field(default_factory=set[str])
    """Runs that started or found relayed sessions in this process."""

    def add(
        self, run: str, command: str, handle: _core.Session, *, number: int | None = None, relayed: bool = False
    ) -> LiveSession:
        """Add a session as ID `number` (default: the next one); a relayed session is left running at exit."""
        number = self.counters.get(run, 0) + 1 if number is None else number
        self.counters[run] = max(number, self.counters.get(run, 0))
        live = LiveSession(str(number), command, handle, is_shell_program(command), relayed=relayed)
        self.runs.setdefault(run, {})[live.id] = live
        if relayed:
            self.relayed_runs.add(run)
        else:
            _LIVE.add(handle)
        return live

    def get(self, run: str, session_id: str) -> LiveSession | None:
        return self.runs.get(run, {}).get(str(session_id).strip())

    def of_run(self, run: str) -> list[LiveSession]:
        return list(self.runs.get(run, {}).values())

    def remove(self, run: str, live: LiveSession) -> None:
        self.runs.get(run, {}).pop(live.id, None)
        self.stopped.setdefault(run, []).append(live.handle)
        _LIVE.discard(live.handle)

    async def end_run(self, run: str) -> None:
        """Stop every session of `run` (no grace: the run is over), remove the spill files of all
        its sessions, and forget them."""
        sessions = self.runs.pop(run, {})
        stopped = self.stopped.pop(run, [])
        self.counters.pop(run, None)
        self.relayed_runs.discard(run)
        with anyio.CancelScope(shield=True):
            for live in sessions.values():
                await anyio.to_thread.run_sync(live.handle.stop, 0.0)
                _LIVE.discard(live.handle)
            for handle in [*(live.handle for live in sessions.values()), *stopped]:
                await anyio.to_thread.run_sync(handle.remove_files)


async def wait(handle: _core.Session, pattern: str | None, until_input: bool, timeout: float) -> Woke:
    """`handle.wait(...)` on a worker thread; cancelling the caller stops the wait."""
    token = _core.CancelToken()
    try:
        return await anyio.to_thread.run_sync(
            lambda: handle.wait(pattern, until_input, timeout, token), abandon_on_cancel=True
        )
    finally:
        token.cancel()


Output = tuple[
    bytes, bytes, int, int, bool, str | None, tuple[int, int], tuple[int, int], os.PathLike[str] | str | None, bool, int
]
"""`_core.Session.take_output()`: `(head, tail, total_bytes, total_lines, truncated, screen, cursor, size,
spill_path, spill_cleared, spill_held)`."""


def render(output: Output, max_chars: int, path: str | None = None, *, cleared_by: int | None = None) -> str:
    """What the model reads of `take_output()`: the transcript (already cleaned by the core:
    `clean_output`'s rules, no control characters but newline and tab, backspaces applied), cut in
    the middle with `head_tail`'s marker naming `path` (the spill file) when the core kept only its
    ends or it is longer than `max_chars`; then, while a full-screen program has the alternate
    screen up, the screen and `[screen COLSxROWS, cursor at ROW,COL]`.

    `cleared_by` is `max_log_bytes` when it emptied the spill file: the marker then says the file
    holds only the output's last `spill_held` bytes."""
    head, tail, size, lines, truncated, screen, (row, col), (cols, rows), _, cleared, held = output
    text = head.decode('utf-8', errors='replace')
    capped = (held, cleared_by) if cleared and cleared_by is not None else None
    if truncated:
        text = head_tail(
            text + tail.decode('utf-8', errors='replace'),
            max_chars,
            lines=lines,
            size=size,
            path=path,
            gap=len(text),
            capped=capped,
        )
    elif len(text) > max_chars:
        text = head_tail(text, max_chars, lines=lines, size=size, path=path, capped=capped)
    if screen is None:
        return text if text.strip() else ''
    parts = [text.rstrip('\n')] if text.strip() else []
    parts += (
        [screen, f'[screen {cols}x{rows}, cursor at {row},{col}]']
        if screen
        else [f'[screen {cols}x{rows}, cursor at {row},{col}]']
    )
    return '\n'.join(parts)


def typed_lines(pending: str, text: str) -> tuple[list[str], str]:
    """The lines `text` ends when typed after `pending` (Enter ends one; C-c and C-u clear it;
    backspace removes a char; escape sequences are ignored), and what stays pending after."""
    lines: list[str] = []
    line = pending
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in '\r\n':
            lines.append(line)
            line = ''
        elif ch in '\x03\x15':
            line = ''
        elif ch in '\x7f\x08':
            line = line[:-1]
        elif ch == '\x1b':
            # Skip an escape sequence: ESC [ params final, or ESC and one char.
            j = i + 1
            if j < len(text) and text[j] in '[O':
                j += 1
                while j < len(text) and not ('@' <= text[j] <= '~'):
                    j += 1
            i = j
        elif ch >= ' ' or ch == '\t':
            line += ch
        i += 1
    return lines, line


_HISTORY_DESIGNATOR = re.compile(r'(?<!\$)!(?=[^\s=(])')
"""A `!` that starts a history expansion in bash, zsh and csh (`!!`, `!-2`, `!rm`, `!$`); `$!`, `! cmd`,
`!=` and a `!` ending the line are left alone."""


def refused_keys(pending: str, text: str) -> str | None:
    """Why `text`, typed after `pending` into a shell session whose lines are judged, is refused, or None.

    The policy judges a line as `typed_lines` reads it; keys that let the shell run something else
    are refused: line editing and escape sequences (C-a, arrows, C-d inside a line, ...), and lines
    the shell rewrites before running them (history expansion: `!!`, `!rm`, `^old^new`). Allowed:
    printable text, Enter (`\\n`, `\\r`), C-c and C-d at the start of an empty line. Tab is refused too:
    completion would type text the policy never sees (`shre<Tab>` runs `shred`).
    """
    at_start = not pending
    for ch in text:
        if ch in '\r\n\x03':
            at_start = True
        elif ch == '\x04' and at_start:
            pass
        elif ch >= ' ' and not ('\x7f' <= ch <= '\x9f'):
            at_start = False
        else:
            return (
                f'{ch!r} refused: in a shell session whose lines are judged by the command policy, write_stdin takes '
                'printable text, \\n (Enter), \\x03 (C-c) and \\x04 (C-d, on an empty line) only; line-editing '
                'keys and Tab completion could change a line after it is judged. Type each command in full (spaces, '
                'not tabs); C-c clears a line.'
            )
    for line in typed_lines(pending, text)[0]:
        if line.lstrip().startswith('^') or _HISTORY_DESIGNATOR.search(line):
            return (
                f'{line!r} refused: the shell would rewrite it by history expansion (`!` before a word, a leading '
                '`^`) after the command policy judged it. Type the command in full, with no `!` '
                'right before a word.'
            )
    return None


RELAY_LOST_STATUS = (
    '[session lost: its relay process was killed, and the program was ended with it (exit code unknown); '
    'start a new session with start_session]'
)
"""What ends each result of a relayed session whose relay was killed (`_core.Session.relay_lost`)."""


def status_line(live: LiveSession) -> str:
    """`[session ended, exit code: N]` once the program has exited, `RELAY_LOST_STATUS` once its relay was
    lost, else ''."""
    if live.handle.relay_lost:
        return f'\n{RELAY_LOST_STATUS}'
    code = live.handle.exit_code
    return '' if code is None else f'\n[session ended, exit code: {code}]'


def session_row(live: LiveSession, kind: str = 'session') -> str:
    """One line of `list_sessions` / `list_commands`."""
    handle = live.handle
    state = 'lost (relay killed)' if handle.relay_lost else 'running' if handle.exit_code is None else 'exited'
    code = '-' if handle.exit_code is None else str(handle.exit_code)
    return (
        f'{kind} {live.id}: {live.command!r} | {state} | exit code {code} | '
        f'{handle.runtime:.1f}s | {handle.output_bytes} bytes'
    )


@dataclass
class StartedJob:
    """A background command this `Shell` started, for `list_commands`."""

    command: str
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    """When a listing first saw it finished (`time.monotonic()`): its runtime stops there."""


def job_row(job_id: str, job: StartedJob, running: bool, exit_code: int | None, size: int) -> str:
    """One background command's line of `list_commands`; a finished command's runtime is counted up to
    the first listing that saw it finished (recorded in `job.ended`)."""
    state = 'running' if running else 'finished'
    code = '-' if exit_code is None else str(exit_code)
    if not running and job.ended is None:
        job.ended = time.monotonic()
    runtime = (time.monotonic() if job.ended is None else job.ended) - job.started
    return f'command {job_id}: {job.command!r} | {state} | exit code {code} | {runtime:.1f}s | {size} bytes'
