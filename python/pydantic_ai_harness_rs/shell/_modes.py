"""The opt-in output and environment modes of `Shell`: `clean_output`, `truncation='head_tail'`
and `non_interactive`. With every mode off, output is exactly the documented one (`_output.py`).
"""

from __future__ import annotations

import re
import signal
from typing import Literal

Truncation = Literal['tail', 'head_tail']
"""`'tail'` (documented default): keep the end. `'head_tail'`: keep the start and the end."""

TRUNCATIONS: tuple[str, ...] = ('tail', 'head_tail')

NON_INTERACTIVE_ENV: dict[str, str] = {
    'PAGER': 'cat',
    'GIT_PAGER': 'cat',
    'MANPAGER': 'cat',
    'SYSTEMD_PAGER': 'cat',
    'EDITOR': 'true',
    'VISUAL': 'true',
    'GIT_EDITOR': 'true',
    'GIT_SEQUENCE_EDITOR': 'true',
    'GIT_TERMINAL_PROMPT': '0',
    'GIT_ASKPASS': 'true',
    'SSH_ASKPASS': 'true',
    'GCM_INTERACTIVE': 'never',
    'GIT_SSH_COMMAND': 'ssh -o BatchMode=yes',
    'DEBIAN_FRONTEND': 'noninteractive',
    'PIP_NO_INPUT': '1',
    'TERM': 'dumb',
}
"""What `Shell(non_interactive=True)` adds beneath `Shell(env=...)`: pagers print, editors exit
at once (`git commit` without `-m` aborts with git's empty-message error), git and ssh never
prompt for credentials, package managers take their defaults."""

_ANSI = re.compile(
    r'\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)'  # OSC ... BEL / ST (titles, hyperlinks)
    r'|\x1b\[[0-?]*[ -/]*[@-~]'  # CSI (colours, cursor movement, erase)
    r'|\x1b[P^_][^\x1b]*\x1b\\'  # DCS / PM / APC strings
    r'|\x1b[ -/]*[0-~]'  # two-char escapes (charset selection, keypad modes)
    r'|\x9b[0-?]*[ -/]*[@-~]'  # 8-bit CSI
)


def clean_text(data: bytes) -> str:
    """`data` decoded for a model: bytes that are not UTF-8 as `\\xNN`, ANSI escapes removed,
    and each line's carriage-return frames collapsed to the last one (`\\r\\n` ends a line)."""
    text = _ANSI.sub('', data.decode('utf-8', errors='backslashreplace'))
    if '\r' not in text:
        return text
    lines = text.split('\n')
    for i, line in enumerate(lines):
        line = line.rstrip('\r')
        if '\r' in line:
            frames = [frame for frame in line.split('\r') if frame]
            line = frames[-1] if frames else ''
        lines[i] = line
    return '\n'.join(lines)


def signal_suffix(exit_code: int, signal_number: int | None) -> str:
    """` (SIGKILL)` for a command a signal ended, else ''.

    `signal_number` is the signal that ended the shell itself, when known; otherwise an exit
    code of `128 + N` (how a shell reports a child a signal ended) names signal `N`.
    """
    number = signal_number
    if number is None and 128 < exit_code < 128 + 32:
        number = exit_code - 128
    if number is None:
        return ''
    try:
        return f' ({signal.Signals(number).name})'
    except ValueError:
        return ''


def _marker(lines: int, size: int, path: str | None, capped: tuple[int, int] | None = None) -> str:
    if path and capped is not None:
        held, limit = capped
        where = f'; its last {held} bytes are in {path}, earlier output was cleared by max_log_bytes={limit}'
    else:
        where = f'; the full output is in {path}' if path else ''
    return f'\n[... output truncated: {lines} lines, {size} bytes in total{where} ...]\n'


def head_tail(
    text: str,
    max_chars: int,
    *,
    lines: int,
    size: int,
    path: str | None,
    gap: int | None = None,
    capped: tuple[int, int] | None = None,
) -> str:
    """`text` cut to at most `max_chars` chars keeping its start and its end, around a marker
    stating the original size (`lines`, `size` bytes) and naming the file holding all of it, or,
    with `capped=(held, max_log_bytes)`, the file holding only its last `held` bytes (after the
    notice `max_log_bytes` left).

    `gap` is where bytes are already missing (the supervisor kept only both ends): the head
    comes from before it and the tail from after it. The marker counts in the cap; a cap too
    small for it keeps a bare tail.
    """
    if gap is None and len(text) <= max_chars:
        return text
    head_src, tail_src = (text, text) if gap is None else (text[:gap], text[gap:])
    marker = _marker(lines, size, path, capped)
    room = max_chars - len(marker)
    if room <= 1:
        return text[-max_chars:] if max_chars > 0 else ''
    head = min(room // 2, len(head_src))
    tail = min(room - head, len(tail_src))
    head_text = head_src[:head]
    cut = head_text.rfind('\n')
    if head < len(head_src) and cut > head // 2:
        head_text = head_text[: cut + 1]
    return head_text.rstrip('\n') + marker + tail_src[len(tail_src) - tail :]
