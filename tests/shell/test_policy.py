"""Command controls: allow/deny lists, operators, interactive commands, unsendable commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.shell import Shell

from .conftest import rc, run_calls

pytestmark = pytest.mark.anyio


async def test_empty_denylist_disables_it(ws: Path) -> None:
    (ws / 'f').write_text('x')
    results = await run_calls([LocalWorkspace(ws), Shell(denied_commands=[])], [rc('rm f && echo gone')])
    assert results == [('return', '[stdout]\ngone\n')]


# One run per entry: the Shell's settings; then, in order, each command of the run and its answer.
SETTINGS: dict[str, dict[str, object]] = {
    'default_denylist': {},
    'allowlist': {'allowed_commands': ['echo', 'rm']},  # replaces the default denylist: rm is allowed here
    'empty_allowlist': {'allowed_commands': []},  # is not allowlist mode
    'denied_operators': {'denied_operators': ['>', '|']},
    'nul_byte': {},
}
ANSWERS = [
    ('default_denylist', 'rm -x', 'retry', "Command 'rm' is denied."),
    ('default_denylist', 'rmdir -x', 'retry', "Command 'rmdir' is denied."),
    ('default_denylist', 'mkfs -x', 'retry', "Command 'mkfs' is denied."),
    ('default_denylist', 'dd -x', 'retry', "Command 'dd' is denied."),
    ('default_denylist', 'format -x', 'retry', "Command 'format' is denied."),
    ('default_denylist', 'shutdown -x', 'retry', "Command 'shutdown' is denied."),
    ('default_denylist', 'reboot -x', 'retry', "Command 'reboot' is denied."),
    ('default_denylist', 'halt -x', 'retry', "Command 'halt' is denied."),
    ('default_denylist', 'poweroff -x', 'retry', "Command 'poweroff' is denied."),
    ('default_denylist', 'init -x', 'retry', "Command 'init' is denied."),
    ('default_denylist', "'rm' -rf x", 'retry', "Command 'rm' is denied."),
    ('default_denylist', '"rm" x', 'retry', "Command 'rm' is denied."),
    ('default_denylist', 'r""m x', 'retry', "Command 'rm' is denied."),
    ('default_denylist', 'echo ok', 'return', '[stdout]\nok\n'),
    ('allowlist', 'echo a', 'return', '[stdout]\na\n'),
    ('allowlist', 'ls', 'retry', "Command 'ls' is not in the allowed list."),
    ('allowlist', '"ls" -la', 'retry', "Command 'ls' is not in the allowed list."),
    ('allowlist', 'rm -f nothing; echo x', 'return', '[stdout]\nx\n'),
    ('empty_allowlist', 'echo a', 'return', '[stdout]\na\n'),
    ('empty_allowlist', 'rm x', 'retry', "Command 'rm' is denied."),
    ('denied_operators', 'echo a > f', 'retry', "Shell operator '>' is not allowed."),
    ('denied_operators', 'echo a | cat', 'retry', "Shell operator '|' is not allowed."),
    ('denied_operators', 'echo a >> f', 'retry', "Shell operator '>' is not allowed."),
    ('denied_operators', 'echo fine', 'return', '[stdout]\nfine\n'),
    ('nul_byte', 'echo a\x00b', 'retry', 'The command contains a NUL byte, which cannot be passed to a process.'),
    ('nul_byte', 'echo ok', 'return', '[stdout]\nok\n'),
]


@pytest.mark.parametrize('run', list(SETTINGS))
async def test_policy(ws: Path, run: str) -> None:
    rows = [row[1:] for row in ANSWERS if row[0] == run]
    results = await run_calls([LocalWorkspace(ws), Shell(**SETTINGS[run])], [rc(command) for command, _, _ in rows])  # type: ignore[arg-type]
    assert results == [(kind, text) for _, kind, text in rows]


async def test_interactive_commands_blocked(ws: Path) -> None:
    commands = [
        'vi x',
        'vim',
        '  nano f',
        'less f',
        'top',
        'man ls',
        'sudo ls',
        'passwd',
        'ssh host',
        'telnet h',
        'ftp h',
    ]
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc(c) for c in commands])
    assert results == [('retry', f'Interactive commands are not allowed. Command: {c!r}') for c in commands]


async def test_interactive_allowed_when_configured(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(allow_interactive=True)], [rc('man-not-a-program 2>/dev/null; echo ran')]
    )
    assert results == [('return', '[stdout]\nran\n')]
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc('vimdiff-like-name; echo ran')])
    # `\b` after `vim`: `vimdiff-like-name` is not `vim`, so it runs (and is not found).
    assert results[0][0] == 'return'


def test_unencodable_command_is_a_retry() -> None:
    # Lone surrogates cannot travel through a model message, so the policy is called directly.
    from pydantic_ai.exceptions import ModelRetry
    from pydantic_ai_harness_rs.shell._policy import check_command

    kwargs = dict(allowed=[], denied=[], denied_operators=[], allow_interactive=False)
    with pytest.raises(ModelRetry, match='cannot be encoded for the operating system'):
        check_command('echo \ud800', **kwargs)  # type: ignore[arg-type]
    check_command('echo \udcff', **kwargs)  # type: ignore[arg-type]  # surrogateescape round-trips


async def test_unparsable_command_is_left_to_the_shell(ws: Path) -> None:
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc("echo 'unterminated")])
    kind, text = results[0]
    assert kind == 'return' and text.startswith('[stderr]\n') and text.endswith('[exit code: 2]')


def test_first_word_is_shlex_split_s_first_word() -> None:
    """Every command of up to 5 characters from quotes, escapes and blanks: the same word or the same refusal."""
    import itertools
    import shlex

    from pydantic_ai_harness_rs.shell._words import first_word

    def reference(command: str) -> str | None:
        try:
            words = shlex.split(command)
        except ValueError:
            return 'refused'
        return words[0] if words else None

    def ours(command: str) -> str | None:
        try:
            return first_word(command)
        except ValueError:
            return 'refused'

    differ = [
        command
        for length in range(6)
        for command in map(''.join, itertools.product('a \'"\\\n\t', repeat=length))
        if ours(command) != reference(command)
    ]
    assert differ == []


def test_a_command_of_megabytes_is_judged() -> None:
    """`shlex.split` is quadratic in a word's length (a 1 MB word took ~29 s); the policy reads it in one scan.

    The 4 MB command is judged in a worker thread; the join's bound only keeps a regression from
    hanging the suite (the quadratic scan would take minutes).
    """
    from concurrent.futures import ThreadPoolExecutor

    from pydantic_ai_harness_rs.shell._policy import check_command

    kwargs = dict(allowed=[], denied=['rm'], denied_operators=[], allow_interactive=False)
    cases = ['rm ' + 'x' * 4_000_000, '"' + 'y' * 4_000_000, 'echo "' + 'z\\"' * 1_000_000 + '" ; rm x']
    outcomes = []
    with ThreadPoolExecutor(1) as pool:
        for command in cases:
            future = pool.submit(check_command, command, **kwargs)  # type: ignore[arg-type]
            try:
                outcomes.append(future.result(timeout=120))
            except PermissionError as e:
                outcomes.append(str(e))
    assert outcomes == ["Command 'rm' is denied.", None, None]


async def test_a_megabyte_command_is_denied_through_the_agent(ws: Path) -> None:
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc('rm ' + 'x' * 1_000_000)])
    assert results == [('retry', "Command 'rm' is denied.")]


# Issue 19: `strict_policy` parsed a 1 MB script in Python for about a minute, on the event loop.
# Its parse is now bounded (STRICT_MAX_COMMAND_BYTES, Linux's limit on one argument) and every
# check that can take long runs on a worker thread.


async def test_a_megabyte_command_gets_strict_policy_s_answer_unparsed(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the bound the command is answered before any parse; at the bound it is parsed once and runs."""
    import anyio
    from pydantic_ai_harness_rs._core import COMMAND_TOO_LONG
    from pydantic_ai_harness_rs.shell import _strict

    parsed: list[int] = []
    parse = _strict.commands

    def counting(script: str, *, depth: int = 0) -> list[list[str]]:
        if depth == 0:
            parsed.append(len(script))
        return parse(script, depth=depth)

    monkeypatch.setattr(_strict, 'commands', counting)
    below = 'true;' * 20_000 + 'echo done'
    with anyio.fail_after(300):  # a hang detector only: the unbounded parse took about a minute
        results = await run_calls(
            [LocalWorkspace(ws), Shell(strict_policy=True)],
            [rc('echo ' + 'a;' * 500_000), rc('echo ' + 'é' * 70_000), rc(below)],
        )
    assert results == [('retry', COMMAND_TOO_LONG), ('retry', COMMAND_TOO_LONG), ('return', '[stdout]\ndone\n')]
    assert parsed == [len(below)]  # 140,005 bytes of UTF-8 in 70,005 characters are over the bound too
    assert _strict.STRICT_MAX_COMMAND_BYTES == 131_072


async def test_long_checks_run_off_the_event_loop(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`strict_policy` checks and first-word checks of long commands run on a worker thread."""
    import threading

    from pydantic_ai_harness_rs.shell import _toolset
    from pydantic_ai_harness_rs.shell._policy import check_command
    from pydantic_ai_harness_rs.shell._strict import check_strict

    loop_thread = threading.get_ident()
    seen: list[tuple[str, bool]] = []

    def recording(name: str, check: Any) -> Any:
        def wrapper(command: str, **kwargs: Any) -> None:
            seen.append((name, threading.get_ident() == loop_thread))
            check(command, **kwargs)

        return wrapper

    monkeypatch.setattr(_toolset, 'check_command', recording('first word', check_command))
    monkeypatch.setattr(_toolset, 'check_strict', recording('strict', check_strict))
    long = 'true ' + 'x' * 100_000
    await run_calls([LocalWorkspace(ws), Shell()], [rc('true'), rc(long)])
    await run_calls([LocalWorkspace(ws), Shell(strict_policy=True)], [rc('true')])
    on_loop = True
    assert seen == [
        ('first word', on_loop),
        ('first word', not on_loop),
        ('first word', not on_loop),
        ('strict', not on_loop),
    ]
