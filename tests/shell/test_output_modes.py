"""`Shell(truncation='head_tail')`, `clean_output=True` and `non_interactive=True` on their failing inputs."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.shell import Shell

from .conftest import check_until, command_id, rc, run_calls
from .test_protocol_backend import SandboxBackend

pytestmark = pytest.mark.anyio

ERROR_THEN_200KB = "echo 'error: first failure' >&2; echo FIRST-LINE; seq 1 40000 | sed 's/^/line /'; echo LAST-LINE"
"""An error printed first, then about 200 KB (40,002 lines) of output."""


def _expected_stdout() -> bytes:
    return b'FIRST-LINE\n' + b''.join(b'line %d\n' % i for i in range(1, 40001)) + b'LAST-LINE\n'


_MARKER = re.compile(
    r'\n\[\.\.\. output truncated: (\d+) lines, (\d+) bytes in total; the full output is in (\S+) \.\.\.\]\n'
)


@pytest.mark.parametrize('max_output_chars', [2_000, 50_000])
async def test_head_tail_keeps_the_first_error_and_the_end(ws: Path, max_output_chars: int) -> None:
    shell = Shell(truncation='head_tail', max_output_chars=max_output_chars)
    [(kind, text)] = await run_calls([LocalWorkspace(ws), shell], [rc(f'{ERROR_THEN_200KB}; exit 2')])
    assert kind == 'return'
    assert len(text) <= max_output_chars
    assert text.startswith('[stdout]\nFIRST-LINE\nline 1\n')
    assert text.endswith('line 40000\nLAST-LINE\n\n[stderr]\nerror: first failure\n\n[exit code: 2]')
    marker = _MARKER.search(text)
    assert marker is not None, text[:300]
    expected = _expected_stdout()
    assert (int(marker[1]), int(marker[2])) == (expected.count(b'\n'), len(expected))
    assert marker[3].startswith('.pydantic-ai-harness/shell/output-')
    assert (ws / marker[3]).read_bytes() == expected


async def test_head_tail_default_is_documented_tail(ws: Path) -> None:
    [(_, text)] = await run_calls([LocalWorkspace(ws), Shell(max_output_chars=2_000)], [rc(ERROR_THEN_200KB)])
    assert text.startswith('[... output truncated, showing last ')
    assert 'FIRST-LINE' not in text and 'error: first failure' in text


async def test_head_tail_short_output_unchanged(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(truncation='head_tail')], [rc('echo hi; echo err >&2; exit 3'), rc('true')]
    )
    assert results == [('return', '[stdout]\nhi\n\n[stderr]\nerr\n\n[exit code: 3]'), ('return', '(no output)')]
    assert not list((ws / '.pydantic-ai-harness' / 'shell').glob('output-*'))


async def test_head_tail_through_a_workspace_protocol(ws: Path) -> None:
    shell = Shell(truncation='head_tail', max_output_chars=2_000)
    [(_, text)] = await run_calls([shell], [rc(ERROR_THEN_200KB)], workspace=SandboxBackend(ws))
    marker = _MARKER.search(text)
    assert marker is not None and text.startswith('[stdout]\nFIRST-LINE\n') and len(text) <= 2_000
    assert (ws / marker[3]).read_bytes() == _expected_stdout()


async def test_truncation_value_checked() -> None:
    with pytest.raises(ValueError, match="truncation must be 'tail' or 'head_tail'"):
        Shell(truncation='middle').get_toolset()  # type: ignore[arg-type]


PROGRESS = "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); printf '\\rprogress %d/2000' $i; done; printf '\\ndone\\n'"
COLOURS = r"printf '\033[1;31merror\033[0m: \033[32mok\033[0m \033]0;title\007end\n'"


async def test_clean_output(ws: Path) -> None:
    calls = [rc(PROGRESS), rc(COLOURS), rc("printf 'a\\377b\\n'"), rc('kill -KILL $$'), rc('printf "x\\r\\ny\\r\\n"')]
    cleaned = await run_calls([LocalWorkspace(ws), Shell(clean_output=True)], calls)
    assert cleaned == [
        ('return', '[stdout]\nprogress 2000/2000\ndone\n'),
        ('return', '[stdout]\nerror: ok end\n'),
        ('return', '[stdout]\na\\xffb\n'),
        ('return', '(no output)\n[exit code: 137 (SIGKILL)]'),
        ('return', '[stdout]\nx\ny\n'),
    ]
    raw = await run_calls([LocalWorkspace(ws), Shell()], calls[1:4])
    assert raw == [
        ('return', '[stdout]\n\x1b[1;31merror\x1b[0m: \x1b[32mok\x1b[0m \x1b]0;title\x07end\n'),
        ('return', '[stdout]\na\ufffdb\n'),
        ('return', '(no output)\n[exit code: 137]'),
    ]


async def test_clean_output_background(ws: Path) -> None:
    shell = Shell(clean_output=True)
    [(_, started)] = await run_calls([LocalWorkspace(ws), shell], [('start_command', {'command': COLOURS})])
    text = await check_until([LocalWorkspace(ws), shell], command_id(started), 'finished', tries=100, pause=0.05)
    assert text == '[stdout]\nerror: ok end\n\n[status: finished]\n[exit code: 0]'


@pytest.fixture
def repo(ws: Path) -> Path:
    if shutil.which('git') is None:
        pytest.skip('git is not installed')
    env = {'GIT_CONFIG_GLOBAL': '/dev/null', 'PATH': '/usr/bin:/bin', 'HOME': str(ws)}
    subprocess.run(['git', 'init', '-q'], cwd=ws, check=True, env=env)
    for i in range(3):
        (ws / f'f{i}').write_text(str(i))
        subprocess.run(['git', 'add', '.'], cwd=ws, check=True, env=env)
        subprocess.run(
            ['git', '-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-q', '-m', f'c{i}'],
            cwd=ws,
            check=True,
            env=env,
        )
    (ws / 'new').write_text('n')
    subprocess.run(['git', 'add', 'new'], cwd=ws, check=True, env=env)
    return ws


async def test_non_interactive_git(repo: Path) -> None:
    shell = Shell(non_interactive=True, env={'HOME': str(repo)}, default_timeout=20)
    results = await run_calls(
        [LocalWorkspace(repo), shell],
        [
            rc('git log --format=%s'),
            rc('git -c user.name=t -c user.email=t@e commit'),
            rc('echo $PAGER $GIT_PAGER $EDITOR $GIT_TERMINAL_PROMPT $DEBIAN_FRONTEND "$GIT_SSH_COMMAND"'),
            rc('git var GIT_PAGER; git var GIT_EDITOR'),
        ],
    )
    assert results[3] == ('return', '[stdout]\ncat\ntrue\n')
    [(_, default)] = await run_calls(
        [LocalWorkspace(repo), Shell(env={'HOME': str(repo)})], [rc('git var GIT_PAGER; git var GIT_EDITOR')]
    )
    assert default != results[3][1] and 'less' in default, default
    assert results[0] == ('return', '[stdout]\nc2\nc1\nc0\n')
    kind, text = results[1]
    assert 'Aborting commit due to empty commit message' in text and text.endswith('[exit code: 1]')
    assert results[2] == ('return', '[stdout]\ncat cat true 0 noninteractive ssh -o BatchMode=yes\n')


async def test_non_interactive_env_beneath_shell_env(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(non_interactive=True, env={'PAGER': 'more'})], [rc('echo $PAGER $GIT_PAGER')]
    )
    assert results == [('return', '[stdout]\nmore cat\n')]
    default = await run_calls([LocalWorkspace(ws), Shell()], [rc('echo "[$PAGER][$GIT_EDITOR]"')])
    assert default == [('return', '[stdout]\n[][]\n')]
