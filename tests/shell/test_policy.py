"""Command controls: allow/deny lists, operators, interactive commands, unsendable commands."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.shell import Shell

from .conftest import run_calls

pytestmark = pytest.mark.anyio


def rc(command: str) -> tuple[str, dict[str, object]]:
    return ('run_command', {'command': command})


async def test_default_denylist(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell()],
        [rc(f'{name} -x') for name in ('rm', 'rmdir', 'mkfs', 'dd', 'format', 'shutdown', 'reboot', 'halt', 'poweroff', 'init')]
        + [rc("'rm' -rf x"), rc('"rm" x'), rc('r""m x'), rc('echo ok')],
    )
    denied = [('retry', f"Command {name!r} is denied.") for name in
              ('rm', 'rmdir', 'mkfs', 'dd', 'format', 'shutdown', 'reboot', 'halt', 'poweroff', 'init')]
    assert results == denied + [
        ('retry', "Command 'rm' is denied."),
        ('retry', "Command 'rm' is denied."),
        ('retry', "Command 'rm' is denied."),
        ('return', '[stdout]\nok\n'),
    ]


async def test_empty_denylist_disables_it(ws: Path) -> None:
    (ws / 'f').write_text('x')
    results = await run_calls([LocalWorkspace(ws), Shell(denied_commands=[])], [rc('rm f && echo gone')])
    assert results == [('return', '[stdout]\ngone\n')]


async def test_allowlist(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(allowed_commands=['echo', 'rm'])],
        [rc('echo a'), rc('ls'), rc('"ls" -la'), rc('rm -f nothing; echo x')],
    )
    # An allowlist replaces the default denylist: rm is allowed here.
    assert results == [
        ('return', '[stdout]\na\n'),
        ('retry', "Command 'ls' is not in the allowed list."),
        ('retry', "Command 'ls' is not in the allowed list."),
        ('return', '[stdout]\nx\n'),
    ]


async def test_empty_allowlist_is_not_allowlist_mode(ws: Path) -> None:
    results = await run_calls([LocalWorkspace(ws), Shell(allowed_commands=[])], [rc('echo a'), rc('rm x')])
    assert results == [('return', '[stdout]\na\n'), ('retry', "Command 'rm' is denied.")]


async def test_denied_operators(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(denied_operators=['>', '|'])],
        [rc('echo a > f'), rc('echo a | cat'), rc('echo a >> f'), rc('echo fine')],
    )
    assert results == [
        ('retry', "Shell operator '>' is not allowed."),
        ('retry', "Shell operator '|' is not allowed."),
        ('retry', "Shell operator '>' is not allowed."),
        ('return', '[stdout]\nfine\n'),
    ]


async def test_interactive_commands_blocked(ws: Path) -> None:
    commands = ['vi x', 'vim', '  nano f', 'less f', 'top', 'man ls', 'sudo ls', 'passwd', 'ssh host', 'telnet h', 'ftp h']
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc(c) for c in commands])
    assert results == [('retry', f'Interactive commands are not allowed. Command: {c!r}') for c in commands]


async def test_interactive_allowed_when_configured(ws: Path) -> None:
    results = await run_calls([LocalWorkspace(ws), Shell(allow_interactive=True)], [rc('man-not-a-program 2>/dev/null; echo ran')])
    assert results == [('return', '[stdout]\nran\n')]
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc('vimdiff-like-name; echo ran')])
    # `\b` after `vim`: `vimdiff-like-name` is not `vim`, so it runs (and is not found).
    assert results[0][0] == 'return'


async def test_nul_byte_is_a_retry(ws: Path) -> None:
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc('echo a\x00b'), rc('echo ok')])
    assert results == [
        ('retry', 'The command contains a NUL byte, which cannot be passed to a process.'),
        ('return', '[stdout]\nok\n'),
    ]


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
