"""`Shell(strict_policy=True)`: the deny/allow lists judge every command, however spelled."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.shell import Shell

from .conftest import rc, run_calls

pytestmark = pytest.mark.anyio

BYPASSES = [
    '/bin/rm victim',
    'timeout 5 rm victim',
    'env rm victim',
    'echo hi;rm victim',
    'r\\m victim',
    "'rm' victim",
    '"r"m victim',
    'echo $(rm victim)',
    'echo `rm victim`',
    'true && true && true && true && true && true && true && true && rm victim',
    "sh -c 'rm victim'",
    'bash -c "rm victim"',
    'nice -n 5 rm victim',
    'nohup rm victim',
    'command rm victim',
    'exec rm victim',
    'echo victim | xargs rm',
    'find . -name victim -exec rm {} \\;',
    'env -i PATH=/bin /usr/bin/rm victim',
    "eval 'rm victim'",
    'sh <<EOF\nrm victim\nEOF',
]


async def assert_refused(ws: Path, command: str, refusal: str) -> None:
    """Under strict_policy `command` is refused with `refusal`, and `victim` stays."""
    (ws / 'victim').write_text('v')
    [result] = await run_calls([LocalWorkspace(ws), Shell(strict_policy=True)], [rc(command)])
    assert result == ('retry', refusal), command
    assert (ws / 'victim').exists()


async def victims_kept(ws: Path, commands: list[str], **settings: Any) -> list[str]:
    """The `commands` after which `victim` still exists, each run by a new `Shell(**settings)` on a fresh `victim`."""
    kept = []
    for command in commands:
        (ws / 'victim').write_text('v')
        await run_calls([LocalWorkspace(ws), Shell(**settings)], [rc(command)])
        if (ws / 'victim').exists():
            kept.append(command)
    return kept


@pytest.mark.parametrize('command', BYPASSES)
async def test_denylist_holds(ws: Path, command: str) -> None:
    await assert_refused(ws, command, "Command 'rm' is denied.")


async def test_the_reference_policy_lets_them_through(ws: Path) -> None:
    """Without strict_policy the first-word check is walked past: proof the tests above can fail."""
    held = await victims_kept(ws, BYPASSES)
    # shlex removes the quotes of the first word; everything else walks past the reference's check.
    assert held == ['r\\m victim', "'rm' victim", '"r"m victim']


async def test_allowlist_judges_every_command(ws: Path) -> None:
    shell = Shell(allowed_commands=['ls', 'git'], strict_policy=True)
    results = await run_calls(
        [LocalWorkspace(ws), shell],
        [rc('ls; cd . && echo ok'), rc('ls && python3 -c 1'), rc('/bin/ls'), rc('/tmp/ls'), rc('ls $(id)')],
    )
    assert results == [
        ('return', '[stdout]\nok\n'),
        ('retry', "Command 'python3' is not in the allowed list."),
        ('return', '(no output)'),
        ('retry', "Command '/tmp/ls' is not in the allowed list."),
        ('retry', "Command 'id' is not in the allowed list."),
    ]


async def test_unjudgeable_commands_are_refused(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(strict_policy=True)],
        [rc('echo "unterminated'), rc('$CMD victim'), rc('echo rm | sh'), rc('echo fine; ls')],
    )
    assert results[:3] == [
        (
            'retry',
            'The command cannot be checked: the command could not be parsed as a shell script. '
            'Rewrite it in plain shell syntax.',
        ),
        (
            'retry',
            'The command cannot be checked: a command name is computed at run time; spell it literally. '
            'Rewrite it in plain shell syntax.',
        ),
        (
            'retry',
            'The command cannot be checked: sh would read its commands from standard input, which cannot be '
            'checked. Rewrite it in plain shell syntax.',
        ),
    ]
    assert results[3] == ('return', '[stdout]\nfine\n')


async def test_interactive_anywhere(ws: Path) -> None:
    [(kind, text)] = await run_calls([LocalWorkspace(ws), Shell(strict_policy=True)], [rc('true && vim x')])
    assert kind == 'retry' and text.startswith('Interactive commands are not allowed.')


# Spellings a user trial found past the denylist: a line continuation inside the name, and aliases.
RENAMINGS = [
    ('r\\\nm victim', "Command 'rm' is denied."),
    ('echo "$(r\\\nm victim)"', "Command 'rm' is denied."),
    ("sh -c 'r\\\nm victim'", "Command 'rm' is denied."),
    ('trap "rm victim" EXIT', "Command 'rm' is denied."),
    ('coproc rm victim', "Command 'rm' is denied."),
    ('f() { rm victim; }; f', "Command 'rm' is denied."),
    (
        'alias r=rm\nr victim',
        'The command cannot be checked: an alias definition would make a name run another command; '
        'call the command itself. Rewrite it in plain shell syntax.',
    ),
    (
        "builtin alias 'r=rm'\nr victim",
        'The command cannot be checked: an alias definition would make a name run another command; '
        'call the command itself. Rewrite it in plain shell syntax.',
    ),
    (
        'x=r=rm; alias "$x"\nr victim',
        'The command cannot be checked: an argument of alias is computed at run time. '
        'Rewrite it in plain shell syntax.',
    ),
    (
        "bash -c 'shopt -s expand_aliases\nr victim'",
        'The command cannot be checked: expand_aliases would let an alias rename a command; '
        'call the command itself. Rewrite it in plain shell syntax.',
    ),
    (
        "bash -c 'hash -p /bin/rm ls; ls victim'",
        'The command cannot be checked: hash -p would make a name run another program; '
        'call the program by its path. Rewrite it in plain shell syntax.',
    ),
    (
        "bash -c 'BASH_CMDS[ls]=/bin/rm; ls victim'",
        'The command cannot be checked: BASH_CMDS would make a name run another program. '
        'Rewrite it in plain shell syntax.',
    ),
]


# Scripts read from a stream or from xargs' input (a second user trial): their commands are not
# in the script, so they are refused; a heredoc sourced through /dev/stdin is judged.
STREAMS = [
    (
        "echo 'rm victim' | . /dev/stdin",
        'The command cannot be checked: . would read its commands from /dev/stdin, which cannot be checked. '
        'Rewrite it in plain shell syntax.',
    ),
    (". /dev/stdin <<'E'\nrm victim\nE", "Command 'rm' is denied."),
    (
        "exec 3<<'E'\nrm victim\nE\n. /dev/fd/3",
        'The command cannot be checked: . would read its commands from /dev/fd/3, which cannot be checked. '
        'Rewrite it in plain shell syntax.',
    ),
    (
        "echo 'rm victim' | sh /dev/stdin",
        'The command cannot be checked: sh would read its commands from /dev/stdin, which cannot be checked. '
        'Rewrite it in plain shell syntax.',
    ),
    (
        "printf 'rm victim' | xargs -I{} sh -c {}",
        'The command cannot be checked: xargs would give sh its commands from its input, which cannot be '
        'checked. Rewrite it in plain shell syntax.',
    ),
]


@pytest.mark.parametrize(('command', 'refusal'), STREAMS)
async def test_scripts_from_streams_are_refused(ws: Path, command: str, refusal: str) -> None:
    await assert_refused(ws, command, refusal)


async def test_the_stream_scripts_run_rm_without_strict_policy(ws: Path) -> None:
    """Each spelling above removes the file when only the first word is judged: the test above can fail."""
    assert await victims_kept(ws, [command for command, _ in STREAMS], denied_commands=[]) == []


async def test_sourcing_a_file_and_xargs_of_a_plain_command_still_run(ws: Path) -> None:
    (ws / 'lib.sh').write_text('echo sourced\n')
    results = await run_calls(
        [LocalWorkspace(ws), Shell(strict_policy=True)],
        [rc('. ./lib.sh'), rc("printf 'a\\nb\\n' | xargs -I{} echo item {}")],
    )
    assert results == [('return', '[stdout]\nsourced\n'), ('return', '[stdout]\nitem a\nitem b\n')]


@pytest.mark.parametrize(('command', 'refusal'), RENAMINGS)
async def test_renamings_are_refused(ws: Path, command: str, refusal: str) -> None:
    await assert_refused(ws, command, refusal)


async def test_the_renamings_run_rm_without_strict_policy(ws: Path) -> None:
    """Each spelling above removes the file when only the first word is judged: the tests above can fail."""
    commands = [
        'r\\\nm victim',
        'alias r=rm\nr victim',
        "bash -c 'shopt -s expand_aliases\nalias r=rm\nr victim'",
        "bash -c 'hash -p /bin/rm ls; ls victim'",
        "bash -c 'BASH_CMDS[ls]=/bin/rm; ls victim'",
        'trap "rm victim" EXIT',
    ]
    assert await victims_kept(ws, commands) == []


async def test_line_continuations_join_as_in_the_shell(ws: Path) -> None:
    """`l\\<newline>s` is `ls` (allowed); a continuation in quotes or a comment is not joined."""
    (ws / 'f').write_text('x')
    results = await run_calls(
        [LocalWorkspace(ws), Shell(allowed_commands=['ls'], strict_policy=True)],
        [
            rc('l\\\ns f'),
            rc('ls \\\n  f'),
            rc("echo 'r\\\nm'"),
            rc('ls f # ok \\\nrm f'),
            rc('ls f\\\\\nrm f'),
        ],
    )
    assert results == [
        ('return', '[stdout]\nf\n'),
        ('return', '[stdout]\nf\n'),
        ('return', '[stdout]\nr\\\nm\n'),
        ('retry', "Command 'rm' is not in the allowed list."),
        ('retry', "Command 'rm' is not in the allowed list."),
    ]
    assert (ws / 'f').exists()


# Issue 19: a nested payload gets every rule of the top level. Each form wraps a payload (`{}` is
# the payload shell-quoted; `{raw}` the payload as is, for heredocs); each payload is refused at
# the top level. A form's own refusal (its options or wrapper) is named in the table, else the
# payload's top-level refusal is expected.
NESTED_FORMS = [
    ('bash -c {}', None),
    ('sh -c {}', None),
    ('dash -c {}', None),
    ('zsh -c {}', None),
    ('/bin/bash -c {}', None),
    ('bash -c -x {}', None),
    ('bash -c -- {}', None),
    ('bash -ec {}', None),
    ('bash -o posix -c {}', None),
    ('bash --norc --rcfile /dev/null -c {}', None),
    ('bash -O extglob -c {}', None),
    ('bash -O expand_aliases -c {}', 'expand_aliases would let an alias rename a command; call the command itself'),
    ('bash -xO expand_aliases -c {}', 'expand_aliases would let an alias rename a command; call the command itself'),
    ('eval {}', None),
    ("bash <<'EOF'\n{raw}\nEOF", None),
    ("bash -s x <<'EOF'\n{raw}\nEOF", None),
    ('env bash -c {}', None),
    ('env -i PATH=/usr/bin:/bin bash -c {}', None),
    ('timeout 5 sh -c {}', None),
    ('nohup bash -c {}', None),
    ('command bash -c {}', None),
    ('cat <(bash -c {})', None),
    ('echo "$(sh -c {})"', None),
    ('find . -maxdepth 0 -exec bash -c {} \\;', None),
    ('bash -c "$(printf %s {})"', 'the script given to a shell is computed at run time'),
    ('echo x | xargs sh -c {}', 'xargs would give sh its commands from its input, which cannot be checked'),
    ('echo {} | bash -s x', 'bash would read its commands from standard input, which cannot be checked'),
    ('sh -c {nested}', None),
    ('su -c {} root', None),
    ('runuser root -c {}', None),
    ('sg root -c {}', None),
    ('script -qc {} /dev/null', None),
    ('script -q --command={} /dev/null', None),
    ("script -q /dev/null <<'EOF'\n{raw}\nEOF", None),
    ('flock lock -c {}', None),
    ('flock -w 5 lock bash -c {}', None),
    ('watch -n 5 {}', None),
    (
        'echo {} | script -q /dev/null',
        'script would start a shell reading its commands from standard input, which cannot be checked',
    ),
]

NESTED_PAYLOADS = [
    'alias r=rm\nr -f victim',
    'shopt -s expand_aliases\nalias r=rm\nr -f victim',
    'rm -f victim',
    'BASH_CMDS[ls]=/bin/rm; ls victim',
    "env 'BASH_FUNC_r%%=() { rm -f victim; }' bash -c r",
    'BASH_ENV=./aliases.sh bash -c r',
    'aliases[r]=rm; r victim',
    'hash r=/bin/rm; r victim',
]


def _nest(form: str, payload: str) -> str:
    return form.format(shlex.quote(payload), raw=payload, nested=shlex.quote(f'bash -c {shlex.quote(payload)}'))


def _top_level_refusal(payload: str) -> str:
    from pydantic_ai_harness_rs.shell._strict import check_strict

    with pytest.raises(PermissionError) as refused:
        check_strict(payload, allowed=[], denied=['rm'], allow_interactive=False)
    return str(refused.value)


@pytest.mark.parametrize('payload', NESTED_PAYLOADS)
@pytest.mark.parametrize(('form', 'own'), NESTED_FORMS)
async def test_a_nested_payload_gets_every_top_level_rule(ws: Path, form: str, own: str | None, payload: str) -> None:
    from pydantic_ai_harness_rs.shell._strict import _NAME_TABLES

    expected = _top_level_refusal(payload)
    if own is not None and not _NAME_TABLES.search(payload):  # a table named anywhere is refused first
        expected = f'The command cannot be checked: {own}. Rewrite it in plain shell syntax.'
    await assert_refused(ws, _nest(form, payload), expected)


async def test_the_nested_forms_run_their_payload(ws: Path) -> None:
    """Without strict_policy every runnable form removes the file: the table above can fail.

    The issue's input (`bash -O expand_aliases -c` defining and using an alias) is among them.
    """
    # zsh is not installed here; `/bin/sh` (dash) has no process substitution; the printf form computes its
    # script; su, runuser and sg need root; watch needs a terminal.
    skipped = ('zsh', 'cat <(', 'bash -c "$(printf', 'su ', 'runuser', 'sg ', 'watch', 'echo {} | script')
    runnable = [form for form, _ in NESTED_FORMS if not form.startswith(skipped)]
    commands = [_nest(form, 'rm -f victim') for form in runnable]
    commands.append(_nest('bash -O expand_aliases -c {}', 'alias r=rm\nr -f victim'))
    commands.append("env 'BASH_FUNC_r%%=() { rm -f victim; }' bash -c r")
    assert await victims_kept(ws, commands, denied_commands=[]) == []


async def test_shell_options_do_not_hide_a_plain_nested_script(ws: Path) -> None:
    """The option reading finds the script, so an allowed nested command still runs."""
    shell = Shell(allowed_commands=['bash', 'ls'], strict_policy=True)
    (ws / 'f').write_text('x')
    results = await run_calls(
        [LocalWorkspace(ws), shell],
        [rc("bash -c -x 'ls f' 2>/dev/null"), rc("bash -O extglob -c 'ls f'"), rc("bash -o posix -c 'rm f'")],
    )
    assert results == [
        ('return', '[stdout]\nf\n'),
        ('return', '[stdout]\nf\n'),
        ('retry', "Command 'rm' is not in the allowed list."),
    ]


GLOBBED_NAMES = [
    '/bin/r[m] -f victim',
    '/???/r? -f victim',
    '/bin/[r]m -f victim',
    "/bin/'r'[m] -f victim",
    'env /bin/r[m] -f victim',
    "bash -c '/bin/r[m] -f victim'",
]
"""A command name the shell matches against the disk: `rm` only at run time (a new-user probe of issue 19)."""


@pytest.mark.parametrize('command', GLOBBED_NAMES)
async def test_a_pathname_pattern_as_a_name_is_refused(ws: Path, command: str) -> None:
    computed = 'a command name is computed at run time; spell it literally'
    if command.startswith('env'):
        computed = 'an argument of env is computed at run time'
    await assert_refused(ws, command, f'The command cannot be checked: {computed}. Rewrite it in plain shell syntax.')


async def test_pathname_patterns_as_names_run_rm() -> None:
    """Without strict_policy each globbed name deletes the file: the test above can fail."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        ws = Path(d)
        assert await victims_kept(ws, GLOBBED_NAMES, denied_commands=[]) == []


async def test_quoted_or_escaped_brackets_are_literal_names(ws: Path) -> None:
    """A `[` the shell does not expand (quoted, escaped, or `[` as test) is judged as spelled."""
    await assert_refused(ws, "'/bin/rm' -f victim", "Command 'rm' is denied.")
    [result] = await run_calls([LocalWorkspace(ws), Shell(strict_policy=True)], [rc('[ -e victim ] && echo there')])
    assert result == ('return', '[stdout]\nthere\n')
