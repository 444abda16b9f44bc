"""The first word of a command as `shlex.split` reads it, in linear time.

`shlex.split` grows each token one character at a time (`token = token + char`), so a command
made of one long word costs time quadratic in its length: 29 s for 1 MB, on the event loop.
[`first_word`] gives the same answer with one regular-expression scan.
"""

from __future__ import annotations

import re

_PIECE = re.compile(
    r"""(?P<space>[ \t\r\n]+)"""
    r"""|(?P<bare>[^ \t\r\n'"\\]+)"""
    r"""|\\(?P<escaped>[\s\S])"""
    r"""|'(?P<single>[^']*)'"""
    r"""|"(?P<double>(?:[^"\\]++|\\[\s\S])*+)\""""
    r"""|(?P<unclosed>[\s\S])"""
)
"""One piece of a command in `shlex`'s POSIX mode with `whitespace_split`: a whitespace run, an
unquoted run, a backslash and the character it escapes, a single- or double-quoted string, or
anything else (an unclosed quote or a trailing backslash, which `shlex` refuses). The
possessive quantifiers keep an unclosed double quote linear."""

_REST = re.compile(r"""(?:[^'"\\]++|\\[\s\S]|'[^']*+'|"(?:[^"\\]++|\\[\s\S])*+")*+""")
"""Any run of pieces but an unclosed quote or a trailing backslash: what follows the first word."""

_DOUBLE_QUOTED_ESCAPE = re.compile(r'\\([\\"])')
"""Inside double quotes `shlex` drops a backslash only before `\\` and `"`."""


def first_word(command: str) -> str | None:
    """`shlex.split(command)[0]`, or `None` when it has no words; linear in `len(command)`.

    Raises `ValueError` where `shlex.split` does: an unclosed quote or a trailing backslash,
    anywhere in the command (so the whole command is scanned, as `shlex.split` does).
    """
    word: list[str] = []
    started = False
    first: str | None = None
    for piece in _PIECE.finditer(command):
        kind = piece.lastgroup
        if kind == 'unclosed':
            raise ValueError('No closing quotation' if piece.group() != '\\' else 'No escaped character')
        if kind == 'space':
            if started:
                first = ''.join(word)
                if _REST.fullmatch(command, piece.end()) is None:
                    raise ValueError('No closing quotation')
                break
            continue
        started = True
        if kind == 'double':
            word.append(_DOUBLE_QUOTED_ESCAPE.sub(r'\1', piece.group('double')))
        else:
            word.append(piece.group(kind or 'bare'))
    if first is None and started:
        first = ''.join(word)
    return first
