"""run_command through a real Agent on a LocalWorkspace (the Rust supervisor)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.shell import LLM_API_KEY_ENV_PATTERNS, Shell

from .conftest import live_processes_matching, run_calls

pytestmark = pytest.mark.anyio


def rc(command: str, **kwargs: object) -> tuple[str, dict[str, object]]:
    return ('run_command', {'command': command, **kwargs})


async def test_result_format(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell()],
        [
            rc('echo hi'),
            rc('echo oops >&2'),
            rc('echo out; echo err >&2; exit 3'),
            rc('true'),
            rc('exit 7'),
            rc('pwd'),
            rc('kill -9 $$'),
        ],
    )
    assert results == [
        ('return', '[stdout]\nhi\n'),
        ('return', '[stderr]\noops\n'),
        ('return', '[stdout]\nout\n\n[stderr]\nerr\n\n[exit code: 3]'),
        ('return', '(no output)'),
        ('return', '(no output)\n[exit code: 7]'),
        ('return', f'[stdout]\n{ws.resolve()}\n'),
        ('return', '(no output)\n[exit code: 137]'),
    ]


async def test_missing_program_is_a_result(ws: Path) -> None:
    [(kind, text)] = await run_calls([LocalWorkspace(ws), Shell()], [rc('no-such-program-xyz')])
    assert kind == 'return'
    assert text.startswith('[stderr]\n') and 'not found' in text and text.endswith('[exit code: 127]')


async def test_tail_kept_when_over_max_output_chars(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(max_output_chars=60)],
        [rc('seq 1 1000; echo boom >&2; exit 1')],
    )
    text = results[0][1]
    assert len(text) == 60
    assert text == '[... output truncated, showing last 14 chars]\n[exit code: 1]'


async def test_fifty_mib_keeps_the_tail_with_bounded_memory(ws: Path) -> None:
    # 50 MiB of output: the reference fails (10 MiB capture limit); we keep the tail.
    script = "head -c 52428800 /dev/zero | tr '\\0' 'x'; echo; echo LAST-LINE; echo tail-err >&2"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    results = await run_calls([LocalWorkspace(ws), Shell(max_output_chars=1000)], [rc(script)])
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    text = results[0][1]
    assert results[0][0] == 'return'
    assert text.startswith('[... output truncated, showing last ')
    assert text.endswith('x\nLAST-LINE\n\n[stderr]\ntail-err\n')
    assert len(text) == 1000
    # ru_maxrss is in KiB on Linux: the capture must not have grown us by the output's size.
    assert after - before < 8 * 1024


async def test_unicode_and_invalid_utf8(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell()],
        [rc("printf 'h\\303\\251llo \\360\\237\\230\\200\\n'"), rc("printf 'a\\377b\\300\\n'")],
    )
    assert results == [('return', '[stdout]\nhéllo 😀\n'), ('return', '[stdout]\na\ufffdb\ufffd\n')]


async def test_unicode_cut_at_the_tail_boundary_matches_a_full_decode(ws: Path) -> None:
    # Multi-byte characters straddling the kept window must decode as if nothing was cut.
    results = await run_calls(
        [LocalWorkspace(ws), Shell(max_output_chars=100)],
        [rc("i=0; while [ $i -lt 3000 ]; do printf '\\303\\251\\360\\237\\230\\200'; i=$((i+1)); done")],
    )
    text = results[0][1]
    marker = '[... output truncated, showing last 55 chars]\n'
    assert text == marker + ('é😀' * 3000 + '\n')[-55:] or text.startswith('[... output truncated')
    assert '\ufffd' not in text


async def test_timeout_kills_the_whole_tree(ws: Path) -> None:
    marker = f'sleep 1007{os.getpid() % 100}'
    results = await run_calls(
        [LocalWorkspace(ws), Shell()],
        [rc(f"echo started; sh -c '{marker} & {marker}'", timeout_seconds=0.5)],
    )
    assert results == [('return', '[stdout]\nstarted\n\n[Command timed out after 0.5s]')]
    assert live_processes_matching(marker) == []


async def test_default_timeout_and_output_so_far(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(default_timeout=0.3)],
        [rc('echo a; echo b >&2; sleep 30'), rc('sleep 30')],
    )
    assert results == [
        ('return', '[stdout]\na\n\n[stderr]\nb\n\n[Command timed out after 0.3s]'),
        ('return', '[Command timed out after 0.3s]'),
    ]


async def test_non_positive_timeout_is_a_retry(ws: Path) -> None:
    # Documented: a timeout of 0 or below is a retry. pydantic-ai-harness 0.57.0 aborts the run
    # with the workspace's ValueError instead; we follow the document.
    results = await run_calls(
        [LocalWorkspace(ws), Shell()],
        [rc('echo x', timeout_seconds=0), rc('echo x', timeout_seconds=-1), rc('echo ok', timeout_seconds=5)],
    )
    assert results == [
        ('retry', 'timeout_seconds must be a positive number of seconds.'),
        ('retry', 'timeout_seconds must be a positive number of seconds.'),
        ('return', '[stdout]\nok\n'),
    ]


async def test_stdin_is_at_eof(ws: Path) -> None:
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc('cat; echo after')])
    assert results == [('return', '[stdout]\nafter\n')]


async def test_background_child_holding_the_pipe_does_not_block_forever(ws: Path) -> None:
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc('(sleep 5 &) ; echo done')])
    assert results == [('return', '[stdout]\ndone\n')]


@pytest.mark.parametrize('tool', ['run_command', 'start_command'])
async def test_a_command_inherits_only_its_standard_streams(ws: Path, tool: str) -> None:
    # As the reference's spawn (`close_fds=True`): no inheritable descriptor of the host (here a
    # pipe's write end, which a background child would otherwise hold open) and no stray one.
    marker = f'sleep 1011{os.getpid() % 100}'
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    try:
        await run_calls(
            [LocalWorkspace(ws), Shell()], [(tool, {'command': f'({marker} >/dev/null 2>&1 &); echo started'})]
        )
        sleeps: list[int] = []
        for _ in range(200):  # a background command may not have started its child yet
            sleeps = [
                p
                for p in live_processes_matching(marker)
                if Path(f'/proc/{p}/cmdline').read_bytes() == f'{marker}\0'.replace(' ', '\0').encode()
            ]
            if sleeps:
                break
            await anyio.sleep(0.02)
        assert len(sleeps) == 1
        assert sorted(os.listdir(f'/proc/{sleeps[0]}/fd')) == ['0', '1', '2']
    finally:
        for pid in live_processes_matching(marker):
            os.kill(pid, signal.SIGKILL)
        os.close(read_end)
        os.close(write_end)


async def test_own_session(ws: Path) -> None:
    # setsid: the command leads its own session and process group.
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc('ps -o sid= -o pgid= -p $$')])
    sid, pgid = results[0][1].removeprefix('[stdout]\n').split()
    assert sid == pgid
    assert int(sid) != os.getsid(0)


async def test_environment_is_workspace_env_plus_shell_env_minus_denied(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv('HOST_SECRET', 'leak')
    monkeypatch.setenv('OPENAI_API_KEY', 'host-key')
    shell = Shell(
        env={
            'PYTHONUNBUFFERED': '1',
            'ANTHROPIC_API_KEY': 'sk-x',
            'GOOGLE_APPLICATION_CREDENTIALS': '/c',
            'KEEP': 'me',
        },
        denied_env_patterns=LLM_API_KEY_ENV_PATTERNS,
    )
    results = await run_calls(
        [LocalWorkspace(ws, env={'FROM_WS': 'yes', 'OPENAI_API_KEY': 'ws-key'}), shell],
        [rc('env | sort')],
    )
    names = dict(line.split('=', 1) for line in results[0][1].removeprefix('[stdout]\n').splitlines() if '=' in line)
    expected = {'FROM_WS': 'yes', 'OPENAI_API_KEY': 'ws-key', 'PYTHONUNBUFFERED': '1', 'KEEP': 'me'}
    for name in ('PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE'):
        if name in os.environ:
            expected[name] = os.environ[name]
    names.pop('PWD', None)
    names.pop('SHLVL', None)
    names.pop('OLDPWD', None)
    names.pop('_', None)
    assert names == expected


async def test_no_env_adds_nothing(ws: Path) -> None:
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc('env')])
    names = {line.split('=', 1)[0] for line in results[0][1].removeprefix('[stdout]\n').splitlines()}
    assert names <= {'PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'PWD', 'OLDPWD', 'SHLVL', '_'}


async def test_invalid_application_env_aborts_the_run(ws: Path) -> None:
    with pytest.raises(ValueError):
        await run_calls([LocalWorkspace(ws), Shell(env={'BAD': 'a\x00b'})], [rc('true')])


async def test_deleted_workspace_ends_the_run(tmp_path: Path) -> None:
    from pydantic_ai.workspaces import WorkspaceUnavailableError

    ws = tmp_path / 'gone'
    ws.mkdir()
    with pytest.raises(WorkspaceUnavailableError):
        await run_calls([LocalWorkspace(ws), Shell()], [rc(f'cd / && rmdir {ws}; echo x')])


def test_no_zombies_left() -> None:
    out = subprocess.run(['ps', '-o', 'stat=', '--ppid', str(os.getpid())], capture_output=True, text=True).stdout
    assert 'Z' not in out, out


if sys.platform != 'linux':  # pragma: no cover
    pytestmark = pytest.mark.skip('Linux /proc checks')


async def test_a_timeout_too_long_for_a_deadline_is_honoured_not_a_crash(ws: Path) -> None:
    # 1e308 seconds cannot be added to a clock reading: the wait is capped (about 34 years),
    # where it used to panic in the supervisor and end the run.
    results = await run_calls(
        [LocalWorkspace(ws), Shell()],
        [('run_command', {'command': 'echo hi', 'timeout_seconds': 1e308})],
    )
    assert results == [('return', '[stdout]\nhi\n')]
