"""`Shell(strict_policy=True)`: the deny/allow lists judge every command, however spelled."""

from __future__ import annotations

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
        'The command cannot be checked: BASH_ALIASES and BASH_CMDS would make a name run another program. '
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
