"""`Shell(strict_policy=True)`: every command a script would run, found with a real shell parser.

The script is parsed with tree-sitter's bash grammar (`tree-sitter-bash`, the grammar editors
and the Codex CLI's command-safety check use). Every simple command anywhere in it counts:
after any separator, in `$(...)`, backticks, process substitutions, pipelines, `&&`/`||`
chains, functions and heredoc-fed shells. Each command's name is the word as the shell reads
it (quotes and backslashes removed); wrappers that run another command (`env`, `timeout`,
`nice`, `nohup`, `command`, `exec`, `xargs`, `setsid`, `stdbuf`, `sudo`, `time`, `busybox`,
`find -exec`, `eval`, `trap`, `coproc`, `sh -c`, `bash -c`, `su -c`, `script -c`, `flock -c`,
`watch`, ...) are looked through. Line
continuations (backslash-newline) are joined first, as the shell joins them, so `r\\<newline>m`
is `rm`. A name computed at run time (`$CMD`, `$(echo rm)`), a script the grammar cannot parse,
and whatever would make a name run another program (an alias definition, `shopt -s
expand_aliases`, `hash -p`, bash's `BASH_ALIASES` / `BASH_CMDS` tables) are refused. A function
definition is judged by its body, like any other commands in the script.

A nested script (`sh -c`, `bash -O ... -c`, `bash -c -x '...'`, `eval`, a heredoc-fed shell, a
wrapped shell, a process substitution) gets every rule of the top level: a shell's options are
read as the shell reads them to find its script, and `-O expand_aliases`, exported functions
(`BASH_FUNC_...`), start-up files (`BASH_ENV`, zsh's `ZDOTDIR`) and zsh's `aliases` /
`functions` / `commands` tables count as renamings.
"""

from __future__ import annotations

import bisect
import functools
import posixpath
import re
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic_ai.exceptions import ModelRetry

from pydantic_ai_harness_rs._core import COMMAND_TOO_LONG

SHELLS = frozenset({'sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'busybox-sh'})
"""Programs that run a script given with `-c` (or read from stdin)."""

SAFE_BUILTINS = frozenset({':', 'true', 'false', 'cd', 'pwd', 'echo', 'printf', 'test', '['})
"""Builtins an allowlist need not name: they run no other program."""

SYSTEM_DIRS = frozenset({'/bin', '/usr/bin', '/usr/local/bin', '/sbin', '/usr/sbin', '/usr/local/sbin'})
"""Directories whose programs an allowlist entry's bare name also covers (`/bin/ls` for `ls`)."""

INTERACTIVE = frozenset({'vi', 'vim', 'nano', 'emacs', 'less', 'more', 'top', 'htop', 'man', 'sudo'} | {'passwd'})
INTERACTIVE_PREFIX = frozenset({'ssh', 'telnet', 'ftp'})

# Wrapper options that take a value (the next word), per wrapper; other dash-words are flags.
_VALUED: dict[str, frozenset[str]] = {
    'env': frozenset({'-u', '--unset', '-C', '--chdir', '-S', '--split-string'}),
    'timeout': frozenset({'-s', '--signal', '-k', '--kill-after'}),
    'nice': frozenset({'-n', '--adjustment'}),
    'exec': frozenset({'-a'}),
    'xargs': frozenset(
        {'-I', '-i', '-n', '-P', '-d', '-E', '-e', '-L', '-l', '-s', '-a', '--arg-file', '--delimiter', '--max-args'}
    ),
    'stdbuf': frozenset({'-i', '-o', '-e', '--input', '--output', '--error'}),
    'ionice': frozenset({'-c', '-n', '-p', '-t', '--class', '--classdata'}),
    'sudo': frozenset({'-u', '-g', '-h', '-p', '-C', '-r', '-t', '-U', '-D', '--user', '--group'}),
    'doas': frozenset({'-u', '-C'}),
    'chrt': frozenset({'-p'}),
    'taskset': frozenset({'-p'}),
}
_WRAPPERS = frozenset({'nohup', 'command', 'setsid', 'time', 'busybox', 'builtin', 'coproc', *_VALUED})
"""Programs whose first non-option word (after any leading value) is the command they run."""


_NAME_TABLES = re.compile(
    r'\bBASH_(?:ALIASES|CMDS|ENV)\b|\bBASH_FUNC_|\b(?:BASHOPTS|ZDOTDIR)\b'
    r'|\b(?:aliases|galiases|saliases|functions|commands)(?:\[[^\]]*\])?\+?='
)
"""What makes a name run another program than the script shows: bash's tables of aliases and
program paths (`BASH_ALIASES`, `BASH_CMDS`), an exported function in the environment
(`BASH_FUNC_name%%=...`), a start-up file or options a nested shell reads (`BASH_ENV`,
`BASHOPTS=expand_aliases`, zsh's `ZDOTDIR`), and zsh's tables assigned (`aliases[r]=rm`,
`functions[r]=...`, `commands[ls]=/bin/rm`)."""

STRICT_MAX_COMMAND_BYTES = 131_072
"""The longest command `strict_policy` parses, in UTF-8 bytes: Linux's limit on one argument
(`MAX_ARG_STRLEN`), so a longer script could not start as `sh -c SCRIPT` anyway. Longer ones get
the same retry as a command the OS refuses (`COMMAND_TOO_LONG`)."""

_MAX_JOINS = 8
"""Rounds of joining line continuations at most (each round removes every one the parse shows)."""


class Unjudgeable(Exception):
    """The script cannot be judged: a parse error, or a command name computed at run time."""


@functools.cache
def _parser() -> Any:
    try:
        import tree_sitter_bash
        from tree_sitter import Language, Parser
    except ImportError as e:  # pragma: no cover - guarded at construction
        raise RuntimeError(
            'Shell(strict_policy=True) needs `tree-sitter` and `tree-sitter-bash` '
            '(pip install "pydantic-ai-harness-rs[strict-policy]").'
        ) from e
    return Parser(Language(tree_sitter_bash.language()))


def require_parser() -> None:
    """Raise `ValueError` when the parser's packages are missing (called at construction)."""
    try:
        _parser()
    except RuntimeError as e:
        raise ValueError(str(e)) from None


def _unescape(text: str) -> str:
    out: list[str] = []
    chars = iter(text)
    for ch in chars:
        if ch == '\\':
            nxt = next(chars, '')
            if nxt != '\n':
                out.append(nxt)
        else:
            out.append(ch)
    return ''.join(out)


def _globs(text: str) -> bool:
    """Whether the unquoted word `text` is a pathname pattern the shell expands at run time.

    An unescaped `*` or `?`, a `[` with a `]` after it, or an extglob group (`@(`, `+(`, `!(`):
    `/bin/r[m]` and `/???/r?` name `rm` only once the shell has matched them against the disk.
    """
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '\\':
            i += 2
            continue
        if ch in '*?' or (ch == '[' and ']' in text[i + 2 :]) or (ch in '@+!' and text[i + 1 : i + 2] == '('):
            return True
        i += 1
    return False


def _literal(node: Any) -> str | None:
    """The word `node` spells after quote removal, or `None` when it expands at run time
    (a parameter, a command substitution, a pathname pattern)."""
    kind = node.type
    text = node.text.decode('utf-8', 'surrogateescape')
    if kind in ('word', 'number'):
        return None if kind == 'word' and _globs(text) else _unescape(text)
    if kind == 'raw_string':
        return text[1:-1]
    if kind == 'ansi_c_string':
        return None
    if kind == 'string':
        parts: list[str] = []
        for child in node.named_children:
            if child.type != 'string_content':
                return None
        inner = text[1:-1]
        i = 0
        while i < len(inner):
            if inner[i] == '\\' and i + 1 < len(inner) and inner[i + 1] in '$`"\\\n':
                if inner[i + 1] != '\n':
                    parts.append(inner[i + 1])
                i += 2
                continue
            parts.append(inner[i])
            i += 1
        return ''.join(parts)
    if kind == 'concatenation':
        # A pattern may span pieces (`/bin/r` `[` `m` `]`); quoted pieces never match anything.
        unquoted = ''.join(
            c.text.decode('utf-8', 'surrogateescape') if c.type == 'word' else '_' for c in node.children
        )
        if _globs(unquoted):
            return None
        pieces = [_literal(child) for child in node.children]
        if any(piece is None for piece in pieces):
            return None
        return ''.join(piece for piece in pieces if piece is not None)
    return None


def _nodes(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def commands(script: str, *, depth: int = 0) -> list[list[str]]:
    """The argv of every command `script` would run (wrappers and nested scripts looked through).

    Raises `Unjudgeable` for a script the grammar cannot parse, a command name computed at
    run time, or a shell fed its script from a pipe.
    """
    if depth > 8:
        raise Unjudgeable('the command nests shells too deeply to be checked')
    tree, source = _parse_joined(script.encode('utf-8', 'surrogateescape'))
    if tree.root_node.has_error:
        raise Unjudgeable('the command could not be parsed as a shell script')
    _refuse_name_tables(source.decode('utf-8', 'surrogateescape'))
    found: list[list[str]] = []
    for node in _nodes(tree.root_node):
        if node.type != 'command':
            continue
        name_node = node.child_by_field_name('name')
        if name_node is None:
            continue
        words = [name_node.named_children[0] if name_node.named_children else name_node]
        words += node.children_by_field_name('argument')
        argv = [_literal(w) for w in words]
        heredoc = _heredoc(node)
        found.extend(_unwrap(argv, heredoc, depth))
    return found


def _parse_joined(source: bytes) -> tuple[Any, bytes]:
    """The parse of `source` with every line continuation joined, as the shell joins them.

    tree-sitter-bash reads an unquoted backslash-newline as a word break (`r\\<newline>m` as
    `r` and `m`); the shell removes it before splitting words (`rm`). A backslash-newline that
    no token of the parse holds is such a continuation (inside single quotes, comments, quoted
    heredoc bodies and after another backslash it is part of a token and stays); they are
    removed and the result parsed again, until none is left.
    """
    tree = _parser().parse(source)
    for _ in range(_MAX_JOINS):
        cuts = _continuations(tree.root_node, source)
        if not cuts:
            return tree, source
        pieces, start = [], 0
        for cut in cuts:
            pieces.append(source[start:cut])
            start = cut + 2
        pieces.append(source[start:])
        source = b''.join(pieces)
        tree = _parser().parse(source)
    raise Unjudgeable('the command could not be parsed as a shell script')


def _continuations(root: Any, source: bytes) -> list[int]:
    """Offsets of the backslash-newlines in `source` that no leaf token of the parse covers."""
    found = [m.start() for m in re.finditer(rb'\\\n', source)]
    if not found:
        return []
    spans = sorted((n.start_byte, n.end_byte) for n in _nodes(root) if n.child_count == 0 and n.end_byte > n.start_byte)
    starts = [start for start, _ in spans]
    cuts = []
    for at in found:
        i = bisect.bisect_left(starts, at + 2)
        if not any(spans[j][1] > at for j in range(max(0, i - 2), i)):
            cuts.append(at)
    return cuts


def _heredoc(command: Any) -> str | None:
    parent = command.parent
    if parent is None or parent.type != 'redirected_statement':
        return None
    for node in _nodes(parent):
        if node.type == 'heredoc_body':
            return node.text.decode('utf-8', 'surrogateescape')
    return None


def _unwrap(argv: list[str | None], heredoc: str | None, depth: int) -> list[list[str]]:
    """`argv` and every command it runs through wrappers, each as literal words."""
    if not argv or argv[0] is None:
        raise Unjudgeable('a command name is computed at run time; spell it literally')
    name = posixpath.basename(argv[0])
    words = [w if w is not None else '' for w in argv]
    out = [words]
    if name in SHELLS:
        source, value = _shell_source(argv)
        if source == 'script':
            out += commands(value, depth=depth + 1)
        elif source == 'file':
            _refuse_stream_script(name, value)
        elif heredoc is not None:
            out += commands(heredoc, depth=depth + 1)
        else:
            raise Unjudgeable(f'{name} would read its commands from standard input, which cannot be checked')
        return out
    if name in ('.', 'source'):
        script_file = argv[1] if len(argv) > 1 else ''
        if script_file is None:
            raise Unjudgeable(f'the file {name} reads is named at run time')
        if script_file in ('/dev/stdin', '-') and heredoc is not None:
            return out + commands(heredoc, depth=depth + 1)
        _refuse_stream_script(name, script_file)
        return out
    if name == 'eval':
        if any(w is None for w in argv[1:]):
            raise Unjudgeable('eval of a value computed at run time cannot be checked')
        return out + commands(' '.join(words[1:]), depth=depth + 1)
    if name == 'trap':
        return out + _trap_action(argv, depth)
    _refuse_renaming(name, argv)
    if name in _SCRIPT_RUNNERS:
        return out + _script_runner(name, argv, heredoc, depth)
    if name in ('find',):
        return out + _find_exec(argv, depth)
    if name in _WRAPPERS:
        inner = _wrapped(name, argv)
        if name == 'xargs':
            _refuse_xargs_input_commands(inner)
        if inner:
            out += _unwrap(inner, heredoc, depth)
    return out


_SCRIPT_RUNNERS: dict[str, frozenset[str]] = {
    'su': frozenset({'-c', '--command', '--session-command'}),
    'runuser': frozenset({'-c', '--command', '--session-command'}),
    'script': frozenset({'-c', '--command'}),
    'sg': frozenset({'-c'}),
    'flock': frozenset({'-c', '--command'}),
    'watch': frozenset(),
}
"""Programs that hand a word to a shell as its script (`su -c`, `script -qc`, `sg G -c`, `flock F
-c`, `watch`), with the options that name that word."""

_RUNNER_VALUED: dict[str, frozenset[str]] = {
    'flock': frozenset({'-w', '--timeout', '--wait', '-E', '--conflict-exit-code'}),
    'watch': frozenset({'-n', '--interval', '-q', '--equexit'}),
}
"""Options of `flock` and `watch` that take the next word as their value."""


def _script_option(flags: frozenset[str], argv: list[str | None]) -> tuple[bool, str | None]:
    """Whether `argv` names a script with one of `flags` (`-c S`, `-qc S`, `--command=S`), and the script.

    The script is `None` when it is computed at run time. Options are read anywhere before `--`,
    as `su`, `runuser`, `script` and `sg` read them.
    """
    for i, word in enumerate(argv):
        if word is None:
            continue
        if word == '--':
            break
        for flag in flags:
            if flag.startswith('--') and word.startswith(flag + '='):
                return True, word[len(flag) + 1 :]
        if word in flags or ('-c' in flags and len(word) > 2 and word[0] == '-' != word[1] and word[-1] == 'c'):
            return True, argv[i + 1] if i + 1 < len(argv) else None
    return False, None


def _script_runner(name: str, argv: list[str | None], heredoc: str | None, depth: int) -> list[list[str]]:
    """The commands a script runner (`_SCRIPT_RUNNERS`) runs: its script judged as a nested one.

    `flock [OPTIONS] FILE -c SCRIPT` runs a script and `flock [OPTIONS] FILE CMD...` a command;
    `watch CMD...` gives its words to `sh -c` (`watch -x` runs them as a command); `sg GROUP
    CMD` gives CMD to `sh`; without `-c`, `su`, `runuser` and `script` start a shell reading
    standard input (a heredoc is judged, else refused).
    """
    flags = _SCRIPT_RUNNERS[name]
    valued = _RUNNER_VALUED.get(name, frozenset())
    i, direct = 1, False
    if name in ('flock', 'watch'):  # options stop at the first other word, as these programs read them
        while i < len(argv) and (argv[i] or '').startswith('-') and argv[i] != '--':
            direct = direct or argv[i] in ('-x', '--exec')
            i += 2 if argv[i] in valued else 1
        if i < len(argv) and argv[i] == '--':
            i += 1
    if name == 'flock':
        i += 1  # the lock file or descriptor
    found, script = _script_option(flags, argv[i:] if name == 'flock' else argv[1:])
    if name == 'flock' and found and argv[i] not in flags and not (argv[i] or '').startswith('--command='):
        found = False  # flock reads -c only right after the file; later it belongs to the command
    if found:
        if script is None:
            raise Unjudgeable(f'the script given to {name} is computed at run time')
        return commands(script, depth=depth + 1)
    rest = argv[i:]
    if name == 'flock' or (name == 'watch' and direct):
        return _unwrap(rest, heredoc, depth) if rest else []
    if name == 'sg':
        rest = [word for word in argv[1:] if word != '-'][1:]  # after the group
    if name in ('watch', 'sg') and rest:
        if any(word is None for word in rest):
            raise Unjudgeable(f'the command given to {name} is computed at run time')
        return commands(' '.join(word for word in rest if word is not None), depth=depth + 1)
    if heredoc is not None:
        return commands(heredoc, depth=depth + 1)
    raise Unjudgeable(f'{name} would start a shell reading its commands from standard input, which cannot be checked')


_STREAMS = ('/dev/', '/proc/')
"""Where a file a shell or `.` reads its commands from is a stream (`/dev/stdin`, `/dev/fd/3`)."""


def _refuse_stream_script(name: str, script_file: str) -> None:
    """Refuse a shell or `.` reading its commands from a stream: what they run is not in the script."""
    if script_file == '-' or script_file.startswith(_STREAMS):
        raise Unjudgeable(f'{name} would read its commands from {script_file}, which cannot be checked')


def _refuse_xargs_input_commands(inner: list[str | None]) -> None:
    """Refuse `xargs` running a shell, whose script would come from xargs' input (`xargs -I{} sh -c {}`)."""
    name = posixpath.basename(inner[0]) if inner and inner[0] is not None else ''
    if name in SHELLS or name in ('eval', '.', 'source'):
        raise Unjudgeable(f'xargs would give {name} its commands from its input, which cannot be checked')


def _refuse_name_tables(text: str) -> None:
    """Refuse `text` naming one of `_NAME_TABLES` (a table or variable that renames commands)."""
    if found := _NAME_TABLES.search(text):
        name = found.group().rstrip('+=').split('[')[0]
        raise Unjudgeable(f'{name} would make a name run another program')


def _refuse_renaming(name: str, argv: list[str | None]) -> None:
    """Refuse a command that would make a name run another program than its own."""
    if name in ('alias', 'shopt', 'hash') and any(word is None for word in argv[1:]):
        raise Unjudgeable(f'an argument of {name} is computed at run time')
    args = [word for word in argv[1:] if word is not None]
    for word in args:
        _refuse_name_tables(word)
    if name == 'alias' and any('=' in word for word in args):
        raise Unjudgeable('an alias definition would make a name run another command; call the command itself')
    if name == 'shopt' and 'expand_aliases' in args and '-u' not in args:
        raise Unjudgeable('expand_aliases would let an alias rename a command; call the command itself')
    if name == 'hash' and any(word.startswith('-') and 'p' in word for word in args):
        raise Unjudgeable('hash -p would make a name run another program; call the program by its path')
    if name == 'hash' and any('=' in word for word in args):
        raise Unjudgeable("zsh's hash name=path would make a name run another program; call the program by its path")


def _trap_action(argv: list[str | None], depth: int) -> list[list[str]]:
    """The commands of a `trap ACTION SIGNAL...` action, run later by the shell."""
    args = argv[1:]
    if args and args[0] == '--':
        args = args[1:]
    if not args or (args[0] or '').startswith('-') or len(args) == 1:
        return []  # `trap`, `trap -p`, `trap -l`, `trap - INT`, `trap INT`: list or reset only
    action = args[0]
    if action is None:
        raise Unjudgeable('a trap action computed at run time cannot be checked')
    return commands(action, depth=depth + 1)


_SHELL_VALUED_LONG = frozenset({'--rcfile', '--init-file'})
"""A shell's long options that take the next word as their value; other `--words` are flags."""

_SHELL_VALUED_SHORT = frozenset('oO')
"""A shell's option letters that take the next word as their value (`-o posix`, `-O extglob`)."""


def _shell_source(argv: list[str | None]) -> tuple[str, str]:
    """Where the shell `argv` reads its commands: `('script', text)`, `('file', path)` or `('stdin', '')`.

    The options are read as the shell reads them: letters cluster (`-ec`, `-xO NAME`), `-o` and
    `-O` take the next word, `--rcfile`/`--init-file` take one, `--` or `-` ends them. With
    `-c` the script is the first word after the options, wherever `-c` stood (`bash -c -x 'rm
    x'` runs `rm x`); with `-s`, or without any word left, commands come from standard input;
    else the first word is a script file. Raises `Unjudgeable` for an option computed at run
    time, `-O expand_aliases` (aliases would rename commands), or `-c` without a script.
    """
    script_flag = stdin_flag = False
    i = 1
    while i < len(argv):
        word = argv[i]
        if word is None:
            if script_flag:
                break
            raise Unjudgeable('a shell option is computed at run time')
        if word in ('--', '-'):
            i += 1
            break
        if word.startswith('--'):
            i += 2 if word in _SHELL_VALUED_LONG else 1
            continue
        if not word.startswith(('-', '+')) or len(word) < 2:
            break
        i += 1
        for letter in word[1:]:
            if letter in _SHELL_VALUED_SHORT:
                value = argv[i] if i < len(argv) else ''
                if value is None:
                    raise Unjudgeable('a shell option is computed at run time')
                if letter == 'O' and word.startswith('-') and value == 'expand_aliases':
                    raise Unjudgeable('expand_aliases would let an alias rename a command; call the command itself')
                i += 1
            elif letter == 'c':
                script_flag = True
            elif letter == 's':
                stdin_flag = True
    rest = argv[i:]
    if script_flag:
        if not rest:
            raise Unjudgeable('a shell is given -c without a script')
        if rest[0] is None:
            raise Unjudgeable('the script given to a shell is computed at run time')
        return 'script', rest[0]
    if stdin_flag or not rest:
        return 'stdin', ''
    if rest[0] is None:
        raise Unjudgeable('the file a shell reads is named at run time')
    return 'file', rest[0]


def _wrapped(name: str, argv: list[str | None]) -> list[str | None]:
    """The command `name` (a wrapper) runs, as argv; empty when it runs none."""
    valued = _VALUED.get(name, frozenset())
    i = 1
    if name == 'busybox':
        return argv[1:]
    while i < len(argv):
        word = argv[i]
        if word is None:
            raise Unjudgeable(f'an argument of {name} is computed at run time')
        if word == '--':
            i += 1
            break
        if name == 'env' and word in ('-S', '--split-string') and i + 1 < len(argv):
            split = argv[i + 1]
            if split is None:
                raise Unjudgeable('env -S with a value computed at run time cannot be checked')
            return [*split.split(), *argv[i + 2 :]]
        if name == 'env' and '=' in word and not word.startswith('-'):
            i += 1
            continue
        if word.startswith('-') and len(word) > 1:
            if name == 'command' and word in ('-v', '-V'):
                return []
            i += 2 if word in valued else 1
            continue
        break
    rest = argv[i:]
    if name == 'timeout' and rest:
        rest = rest[1:]  # the duration
    return rest


def _find_exec(argv: list[str | None], depth: int) -> list[list[str]]:
    out: list[list[str]] = []
    i = 0
    while i < len(argv):
        if argv[i] in ('-exec', '-execdir', '-ok', '-okdir'):
            j = i + 1
            while j < len(argv) and argv[j] not in (';', '+'):
                j += 1
            if j > i + 1:
                out += _unwrap(argv[i + 1 : j], None, depth)
            i = j
        i += 1
    return out


def _listed(word: str, names: Sequence[str]) -> bool:
    if word in names:
        return True
    directory, base = posixpath.split(word)
    return bool(directory) and posixpath.normpath(directory) in SYSTEM_DIRS and base in names


def check_strict(command: str, *, allowed: Sequence[str], denied: Sequence[str], allow_interactive: bool) -> None:
    """Raise `PermissionError` when any command `command` would run is refused.

    Denied: a name in `denied` by itself or by its basename (`/bin/rm`, `./rm`). Allowed: a
    name listed itself, or a program in a system directory whose bare name is listed, or a
    builtin that runs nothing (`cd`, `echo`, ...). `Unjudgeable` scripts are refused too.
    A command over `STRICT_MAX_COMMAND_BYTES` (UTF-8) raises `ModelRetry(COMMAND_TOO_LONG)`
    before it is parsed, so the check's time is bounded (about a second in CPython at the bound).
    """
    if (
        len(command) > STRICT_MAX_COMMAND_BYTES
        or len(command.encode('utf-8', 'surrogateescape')) > STRICT_MAX_COMMAND_BYTES
    ):
        raise ModelRetry(COMMAND_TOO_LONG)
    try:
        argvs = commands(command)
    except Unjudgeable as e:
        raise PermissionError(f'The command cannot be checked: {e}. Rewrite it in plain shell syntax.') from None
    for argv in argvs:
        word = argv[0]
        base = posixpath.basename(word)
        if not allow_interactive and (base in INTERACTIVE or base in INTERACTIVE_PREFIX):
            raise PermissionError(f'Interactive commands are not allowed. Command: {command!r}')
        if denied and (word in denied or base in denied):
            raise PermissionError(f'Command {base!r} is denied.')
        if allowed and base not in SAFE_BUILTINS and not _listed(word, allowed):
            raise PermissionError(f'Command {word!r} is not in the allowed list.')
