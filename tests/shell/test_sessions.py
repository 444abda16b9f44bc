"""Interactive sessions (`Shell(interactive=True)`): real programs on a terminal, driven through an Agent."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace
from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.shell import CommandFinishedEvent, CommandOutputEvent, CommandStartedEvent, Shell
from pydantic_ai_harness_rs.shell._sessions import is_shell_program

from .conftest import Script, direct_context, live_processes_matching, run_calls, tool_results
from .test_protocol_backend import SandboxBackend

pytestmark = pytest.mark.anyio

SESSION_TOOLS = ['start_session', 'write_stdin', 'read_session', 'list_sessions', 'list_commands', 'stop_session']
BASH = 'bash --norc --noprofile'
"""A bash session whose prompt (`PS1` from the Shell's env) does not depend on the host."""


def interactive(env: dict[str, str] | None = None, **kwargs: Any) -> Shell:
    return Shell(interactive=True, env={'PS1': '$ ', **(env or {})}, **kwargs)


async def drive(
    ws: Path, calls: list[Any], *, shell: Shell | None = None, events: list[Any] | None = None
) -> list[str]:
    results = await run_calls([LocalWorkspace(ws), shell or interactive()], calls, events=events)
    assert [kind for kind, _ in results] == ['return'] * len(results), results
    return [text for _, text in results]


def start(command: str, **kwargs: Any) -> tuple[str, dict[str, Any]]:
    return ('start_session', {'command': command, **kwargs})


def write(session: str, text: str, **kwargs: Any) -> tuple[str, dict[str, Any]]:
    return ('write_stdin', {'id': session, 'text': text, **kwargs})


async def offered(capabilities: list[Any], **run_kwargs: Any) -> list[str]:
    names: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        names.extend(tool.name for tool in info.function_tools)
        return ModelResponse(parts=[TextPart('done')])

    await Agent(FunctionModel(model), capabilities=capabilities).run('go', **run_kwargs)
    return names


async def test_tools_are_opt_in_and_local_only(ws: Path) -> None:
    assert not set(SESSION_TOOLS) & set(await offered([LocalWorkspace(ws), Shell()]))
    names = await offered([LocalWorkspace(ws), Shell(interactive=True)])
    assert names[-6:] == SESSION_TOOLS
    # A workspace reached by protocol has no terminal to offer: the tools are absent.
    remote = await offered([Shell(interactive=True)], workspace=SandboxBackend(ws))
    assert 'run_command' in remote and not set(SESSION_TOOLS) & set(remote)


async def test_python_repl_function_traceback_and_ctrl_d(ws: Path) -> None:
    events: list[Any] = []
    results = await drive(
        ws,
        [
            start('python3 -i -q'),
            write('1', 'def inverse(x):\n    return 1 / x\n\n'),
            write('1', 'inverse(4)\n'),
            write('1', 'inverse(0)\n'),
            write('1', '\x04'),
            ('list_sessions', {}),
        ],
        events=events,
    )
    assert results[0] == "Session 1 started: 'python3 -i -q'\n>>> "
    assert results[1] == 'def inverse(x):\n...     return 1 / x\n... \n>>> '
    assert results[2] == 'inverse(4)\n0.25\n>>> '
    assert results[3] == (
        'inverse(0)\n'
        'Traceback (most recent call last):\n'
        '  File "<stdin>", line 1, in <module>\n'
        '  File "<stdin>", line 2, in inverse\n'
        'ZeroDivisionError: division by zero\n'
        '>>> '
    )
    assert results[4] == '(no new output)\n[session ended, exit code: 0]'
    assert results[5].startswith("session 1: 'python3 -i -q' | exited | exit code 0 | ")
    started = [e for e in events if isinstance(e, CommandStartedEvent)]
    assert [(e.command, e.tool_call_id) for e in started] == [('python3 -i -q', 'call-0')]
    assert [e.text for e in events if isinstance(e, CommandOutputEvent)] == ['>>> ', *results[1:4]]
    [finished] = [e for e in events if isinstance(e, CommandFinishedEvent)]
    assert (finished.pid, finished.exit_code) == (started[0].pid, 0)


async def test_bash_read_prompt(ws: Path) -> None:
    results = await drive(
        ws,
        [start("""bash -c 'read -p "Your name? " name; echo "Hello, $name"'"""), write('1', 'Ada\n')],
    )
    assert results == [
        """Session 1 started: 'bash -c \\'read -p "Your name? " name; echo "Hello, $name"\\''\nYour name? """,
        'Ada\nHello, Ada\n\n[session ended, exit code: 0]',
    ]


async def test_yes_no_prompt_answered_both_ways(ws: Path) -> None:
    script = """sh -c 'printf "Delete the cache? [y/N] "; read a; case $a in y|Y) echo deleted;; *) echo kept;; esac'"""
    results = await drive(ws, [start(script), write('1', 'y\n'), start(script), write('2', '\n')])
    assert results[0].endswith('\nDelete the cache? [y/N] ')
    assert results[1] == 'y\ndeleted\n\n[session ended, exit code: 0]'
    assert results[2].startswith('Session 2 started: ')
    assert results[3] == '\nkept\n\n[session ended, exit code: 0]'


async def test_git_add_patch_stages_one_of_two_hunks(ws: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(['git', *args], cwd=ws, check=True, capture_output=True, text=True).stdout

    git('init', '-q')
    git('config', 'user.email', 't@example.com')
    git('config', 'user.name', 't')
    lines = [f'line {i}' for i in range(1, 31)]
    (ws / 'f.txt').write_text('\n'.join(lines) + '\n')
    git('add', 'f.txt')
    git('commit', '-qm', 'base')
    lines[1], lines[27] = 'line 2 changed', 'line 28 changed'
    (ws / 'f.txt').write_text('\n'.join(lines) + '\n')
    shell = interactive(env={'GIT_PAGER': 'cat', 'PAGER': 'cat'})
    results = await drive(
        ws,
        [start('git add -p', cols=200), write('1', 'y\n'), write('1', 'n\n')],
        shell=shell,
    )
    assert '+line 2 changed' in results[0]
    assert re.search(r'\(1/2\) Stage this hunk \[y,n,[^\]]*\]\? $', results[0]), results[0]
    assert '+line 28 changed' in results[1]
    assert re.search(r'\(2/2\) Stage this hunk \[y,n,[^\]]*\]\? $', results[1]), results[1]
    assert results[2].endswith('[session ended, exit code: 0]')
    staged = git('diff', '--cached')
    assert '+line 2 changed' in staged and 'line 28 changed' not in staged
    assert '+line 28 changed' in git('diff')


async def test_less_shows_its_first_page_and_q_ends_it(ws: Path) -> None:
    (ws / 'long.txt').write_text(''.join(f'row {i}\n' for i in range(1, 1001)))
    results = await drive(ws, [start('less long.txt', cols=40, rows=8), write('1', 'q')])
    page = '\n'.join(f'row {i}' for i in range(1, 8))
    assert results[0] == f"Session 1 started: 'less long.txt'\n{page}\nlong.txt\n[screen 40x8, cursor at 8,9]"
    # The pager's screen never reaches the transcript once it has ended.
    assert results[1] == '(no new output)\n[session ended, exit code: 0]'


async def test_ctrl_c_interrupts_sleep_inside_a_shell_session(ws: Path) -> None:
    marker = f'sleep 10{os.getpid() % 1000}'
    results = await drive(
        ws,
        [
            start(BASH),
            write('1', f'{marker}\n', yield_seconds=0.3),
            write('1', '\x03'),
            write('1', 'echo back $?\n'),
        ],
    )
    assert results[0] == f"Session 1 started: '{BASH}'\n$ "
    assert results[1] == f'{marker}\n'
    assert live_processes_matching(marker) == []
    assert results[2] == '^C\n$ '
    assert results[3] == 'echo back $?\nback 130\n$ '


async def test_lines_typed_into_a_shell_session_are_judged(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), interactive()],
        [start(BASH), write('1', 'echo ok\nrm -rf data\n'), write('1', 'echo still here\n'), start('rm -rf data')],
    )
    assert results[1] == ('retry', "Command 'rm' is denied.")
    # Nothing of a refused write is sent, not even its allowed lines.
    assert results[2] == ('return', 'echo still here\nstill here\n$ ')
    assert results[3] == ('retry', "Command 'rm' is denied.")


async def test_a_session_left_running_ends_with_the_run(ws: Path) -> None:
    marker = f'sleep 20{os.getpid() % 1000}'
    results = await drive(ws, [start(f'(setsid {marker} &); {marker}'), ('list_commands', {})])
    assert results[0] == f"Session 1 started: '(setsid {marker} &); {marker}'\n(no output yet)"
    assert results[1].startswith(f"session 1: '(setsid {marker} &); {marker}' | running | exit code - | ")
    # The run is over: the session's program and the process that left its session are gone.
    assert live_processes_matching(marker) == []


async def test_stop_session_and_read_with_wait_for(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), interactive()],
        [
            start('sh -c "sleep 1.5; echo ready; exec sleep 100"', cols=60),
            ('read_session', {'id': '1', 'wait_for': 'ready', 'timeout_seconds': 10}),
            ('read_session', {'id': '1', 'wait_for': 'never', 'timeout_seconds': 0.2}),
            ('stop_session', {'id': '1'}),
            ('read_session', {'id': '1'}),
        ],
    )
    assert results[0] == (
        'return',
        'Session 1 started: \'sh -c "sleep 1.5; echo ready; exec sleep 100"\'\n(no output yet)',
    )
    assert results[1] == ('return', 'ready\n')
    assert results[2] == ('return', "(no new output)\n['never' did not appear within 0.2s]")
    assert results[3] == ('return', '(no new output)\n[stopped]\n[exit code: 143]')
    # A stopped session is gone.
    assert results[4] == ('retry', "Unknown session ID '1'; `list_sessions` shows the sessions of this run.")


async def test_unknown_session_and_bad_size_are_retries(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), interactive()],
        [write('9', 'x'), start('cat', cols=5)],
    )
    assert results == [
        ('retry', "Unknown session ID '9'; `list_sessions` shows the sessions of this run."),
        ('retry', 'cols must be 20 to 1000 and rows 5 to 500; got 5x40.'),
    ]


@pytest.mark.skipif(_core.sandbox_support(False)[0] < 1, reason='no Landlock here')
async def test_a_session_runs_in_the_sandbox(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / 'outside'
    outside.mkdir()
    script = f'{BASH}'
    lines = f'touch {outside}/escaped 2>/dev/null && echo escaped || echo denied\ntouch inside && echo inside\n'
    for sandbox, expected in (('workspace-write', 'denied'), (None, 'escaped')):
        results = await drive(ws, [start(script), write('1', lines)], shell=interactive(sandbox=sandbox))
        assert f'\n{expected}\n' in results[1], results
        assert '\ninside\n' in results[1]
    assert [p.name for p in outside.iterdir()] == ['escaped']  # only the unsandboxed session got out


async def test_a_session_gets_the_environment_rules(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('HOST_SECRET', 'do-not-leak')
    shell = interactive(env={'GREETING': 'hi', 'OPENAI_API_KEY': 'k'}, denied_env_patterns=['OPENAI_*'])
    results = await drive(ws, [start('env | sort')], shell=shell)
    names = {line.split('=', 1)[0] for line in results[0].splitlines()[1:] if '=' in line}
    assert {'GREETING', 'TERM', 'PATH'} <= names
    assert not {'HOST_SECRET', 'OPENAI_API_KEY'} & names
    assert 'TERM=xterm-256color' in results[0]


async def test_strict_policy_judges_typed_lines(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), interactive(strict_policy=True)],
        [start(BASH), write('1', 'echo a; /bin/rm -rf data\n'), write('1', 'echo fine\n')],
    )
    assert results[1][0] == 'retry' and 'rm' in results[1][1]
    assert results[2] == ('return', 'echo fine\nfine\n$ ')


@pytest.mark.parametrize('anyio_backend', ['asyncio', 'trio'])
async def test_direct_calls_under_each_backend(ws: Path, anyio_backend: str) -> None:
    toolset = interactive().get_toolset()
    ctx = direct_context(ws)
    assert await toolset.start_session(ctx, 'cat') == "Session 1 started: 'cat'\n(no output yet)"
    assert await toolset.write_stdin(ctx, '1', 'ping\n') == 'ping\nping\n'
    # Cancelling a wait stops it at once and leaves the session usable.
    with anyio.move_on_after(0.2):
        await toolset.read_session(ctx, '1', wait_for='never', timeout_seconds=30)
    assert await toolset.write_stdin(ctx, '1', '\x04') == '(no new output)\n[session ended, exit code: 0]'
    await toolset.end_sessions(ctx)
    assert await toolset.list_sessions(ctx) == 'No sessions.'


async def test_start_session_waits_for_approval(ws: Path) -> None:
    shell = interactive(require_approval=True)
    agent = Agent(Script([start('cat')]).model(), capabilities=[shell], output_type=[str, DeferredToolRequests])
    first = await agent.run('go', workspace=Workspace(LocalWorkspaceBackend(ws)))
    assert isinstance(first.output, DeferredToolRequests)
    metadata = first.output.metadata['call-0']
    metadata.pop('arguments_digest')
    assert metadata == {'tool_name': 'start_session', 'command': 'cat', 'cwd': str(ws.resolve()), 'background': True}
    history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(first.all_messages()))
    again = Agent(
        Script([]).model(), capabilities=[interactive(require_approval=True)], output_type=[str, DeferredToolRequests]
    )
    resumed = await again.run(
        message_history=history,
        deferred_tool_results=DeferredToolResults(approvals={'call-0': ToolApproved()}),
        workspace=Workspace(LocalWorkspaceBackend(ws)),
    )
    assert tool_results(resumed.all_messages()[len(history) :]) == [
        ('return', "Session 1 started: 'cat'\n(no output yet)")
    ]


@pytest.mark.parametrize('strict', [False, True])
async def test_line_editing_and_history_cannot_smuggle_a_refused_line(ws: Path, strict: bool) -> None:
    (ws / 'v3').write_text('keep')
    (ws / 'v6').write_text('keep')
    results = await run_calls(
        [LocalWorkspace(ws), interactive(strict_policy=strict)],
        [
            start(BASH),
            # C-a then C-d would delete the X and run `rm v6`.
            write('1', 'Xrm v6\x01\x04\n'),
            write('1', 'echo rm v3\n'),
            # Quick substitution and `!` designators rerun the echoed line without `echo `.
            write('1', '^echo ^\n'),
            write('1', '!!:1-2\n'),
            write('1', 'echo ok \x1b[D\n'),
            write('1', 'echo ok; [ 1 != 2 ] && ! false && echo fine!\n'),
            # Tab completion would type what the policy never saw (`r\t` could complete to a refused name).
            write('1', 'r\t v6\n'),
            write('1', '\x04'),
        ],
    )
    assert results[1][0] == 'retry' and results[1][1].startswith("'\\x01' refused: in a shell session whose lines")
    assert results[2] == ('return', 'echo rm v3\nrm v3\n$ ')
    assert results[3] == (
        'retry',
        "'^echo ^' refused: the shell would rewrite it by history expansion (`!` before a word, a leading `^`) "
        'after the command policy judged it. Type the command in full, with no `!` right before a word.',
    )
    assert results[4][0] == 'retry' and results[4][1].startswith("'!!:1-2' refused")
    assert results[5][0] == 'retry' and results[5][1].startswith("'\\x1b' refused")
    assert results[6] == ('return', 'echo ok; [ 1 != 2 ] && ! false && echo fine!\nok\nfine!\n$ ')
    assert results[7][0] == 'retry' and results[7][1].startswith("'\\t' refused")
    assert results[8][0] == 'return' and results[8][1].endswith('[session ended, exit code: 0]')
    assert (ws / 'v3').read_text() == (ws / 'v6').read_text() == 'keep'


@pytest.mark.parametrize('command', ['exec bash --norc --noprofile', 'bash --norc --noprofile -o vi'])
async def test_lines_typed_into_exec_and_optioned_shells_are_judged(ws: Path, command: str) -> None:
    (ws / 'data').write_text('keep')
    results = await run_calls(
        [LocalWorkspace(ws), interactive()], [start(command), write('1', 'rm data\n'), write('1', 'echo ok\n')]
    )
    assert results[1] == ('retry', "Command 'rm' is denied.")
    assert results[2] == ('return', 'echo ok\nok\n$ ')
    assert (ws / 'data').read_text() == 'keep'


@pytest.mark.parametrize(
    ('command', 'is_shell'),
    [
        ('exec bash', True),
        ('env A=1 exec zsh -i', True),
        ('bash -O extglob', True),
        ('bash --rcfile my.rc', True),
        ('bash --init-file my.rc +H', True),
        ('bash -c ls', False),
        ('bash -o vi script.sh', False),
        ('exec python3 -i', False),
    ],
)
def test_is_shell_program(command: str, is_shell: bool) -> None:
    assert is_shell_program(command) is is_shell


async def test_big_output_keeps_the_header_and_is_cut_once(ws: Path) -> None:
    results = await drive(ws, [start('seq 1 20000')], shell=interactive(max_output_chars=600))
    text = results[0]
    assert text.startswith("Session 1 started: 'seq 1 20000'\n1\n2\n3\n")
    assert len(text) <= 600
    assert text.count('[...') == 1 and text.count('truncated') == 1, text


async def test_stop_session_says_how_the_program_ended(ws: Path) -> None:
    results = await drive(
        ws,
        [
            start(BASH),
            ('read_session', {'id': '1', 'wait_for': r'\$ $'}),  # bash is at its prompt (on a busy machine too)
            ('stop_session', {'id': '1'}),
            start('exit 3'),
            ('read_session', {'id': '2', 'wait_for': 'never', 'timeout_seconds': 30}),  # until it has exited
            ('stop_session', {'id': '2'}),
        ],
    )
    # Interactive bash leaves the group of `sh -c` (job control): it is killed as a descendant outside it,
    # and the session's status is that of whichever ended it: SIGKILL said as such, or the group's SIGTERM.
    assert results[2].endswith(
        ('\n[stopped: killed with SIGKILL]\n[exit code: 137]', '\n[stopped]\n[exit code: 143]')
    ), results[2]
    assert results[3].startswith("Session 2 started: 'exit 3'\n"), results[3]
    assert results[4].endswith('[session ended, exit code: 3]'), results[4]
    assert results[5] == '(no new output)\n[had already exited]\n[exit code: 3]'


async def test_control_characters_do_not_reach_the_model(ws: Path) -> None:
    command = r"printf 'ab\b \bc\035\030\004d\tx\n'"
    results = await drive(ws, [start(command)])
    assert results[0] == f'Session 1 started: {command!r}\nacd\tx\n\n[session ended, exit code: 0]'


_SPILL_MARKER = re.compile(
    r'\[\.\.\. output truncated: (\d+) lines, (\d+) bytes in total; '
    r'(?:the full output is in|its last \d+ bytes are in) (\.pydantic-ai-harness/shell/output-[0-9a-f]{32}-stdout\.log)'
    r'(?:, earlier output was cleared by max_log_bytes=\d+)? \.\.\.\]'
)


async def run_reading_spills(
    ws: Path, calls: list[Any], shell: Shell, events: list[Any]
) -> tuple[list[str], list[list[str]], dict[str, bytes]]:
    """Run `calls`; before each model turn, note the spill files on disk and read those the results name.

    Returns the results, the spill files present before each turn, and each named file's bytes as read
    while the run was live.
    """
    script = Script(calls)
    present: list[list[str]] = []
    contents: dict[str, bytes] = {}

    def note(messages: list[ModelMessage]) -> None:
        present.append(sorted(p.name for p in (ws / '.pydantic-ai-harness' / 'shell').glob('output-*')))
        for _, text in tool_results(messages):
            for found in _SPILL_MARKER.finditer(text):
                contents.setdefault(found[3], (ws / found[3]).read_bytes())

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        note(messages)
        async for part in script.stream(messages, info):
            yield part

    async def handler(ctx: Any, stream: Any) -> None:
        async for event in stream:
            if getattr(event, 'event_kind', None) == 'capability':
                events.append(event)

    agent = Agent(FunctionModel(stream_function=stream), capabilities=[LocalWorkspace(ws), shell], retries=100)
    result = await agent.run('go', event_stream_handler=handler)
    results = tool_results(result.all_messages())
    assert [kind for kind, _ in results] == ['return'] * len(results), results
    return [text for _, text in results], present, contents


# Colours around each number: the transcript on disk is the cleaned text, as the model reads it.
_COLOURED = "read x; printf '\\033[32m%s\\033[0m\\n' $(seq 1 2000); echo end"
_CLEANED = '\n' + ''.join(f'{i}\n' for i in range(1, 2001)) + 'end\n'


async def test_long_output_is_spilled_whole_cleaned_and_removed_with_the_run(ws: Path) -> None:
    events: list[Any] = []
    results, present, contents = await run_reading_spills(
        ws,
        [start(_COLOURED), write('1', '\n', yield_seconds=30)],
        interactive(max_output_chars=600),
        events,
    )
    # A result that shows all of its output keeps no file.
    assert results[0] == f'Session 1 started: {_COLOURED!r}\n(no output yet)'
    assert present[1] == []
    text = results[1]
    assert (
        len(text) <= 600
        and text.startswith('\n1\n2\n3\n')
        and text.endswith('2000\nend\n\n[session ended, exit code: 0]')
    )
    [marker] = _SPILL_MARKER.findall(text)
    lines, size, path = marker
    assert contents[path].decode() == _CLEANED
    assert (int(lines), int(size)) == (_CLEANED.count('\n'), len(_CLEANED))
    assert present[2] == [Path(path).name]
    # The finished event names the file; the run is over and the file is gone.
    [finished] = [e for e in events if isinstance(e, CommandFinishedEvent)]
    assert Path(finished.output_path).resolve() == (ws / path).resolve()
    assert (finished.truncated, finished.exit_code) == (False, 0)
    assert not (ws / path).exists()
    assert list((ws / '.pydantic-ai-harness' / 'shell').glob('output-*')) == []


async def test_max_log_bytes_bounds_a_spill_file_with_the_notice(ws: Path) -> None:
    events: list[Any] = []
    results, _, contents = await run_reading_spills(
        ws,
        [start(_COLOURED), write('1', '\n', yield_seconds=30), ('stop_session', {'id': '1'})],
        interactive(max_output_chars=600, max_log_bytes=1000),
        events,
    )
    [(_, _, path)] = _SPILL_MARKER.findall(results[1])
    notice = '[Log exceeded max_log_bytes=1000; earlier output was cleared.]\n'
    data = contents[path].decode()
    assert data.startswith(notice) and len(data) <= 1000, data
    # The notice, then the output's end as far as it fits: never the notice alone, and it ends as
    # the result does (the read that passed the cap is not dropped whole); it starts at a line's start.
    body = data[len(notice) :]
    assert _CLEANED.endswith(body) and body.endswith('1999\n2000\nend\n'), data
    assert _CLEANED[: -len(body)].endswith('\n') and body[0].isdigit(), data
    # The marker says what the file holds, not "the full output".
    assert (
        f'[... output truncated: 2002 lines, {len(_CLEANED)} bytes in total; its last {len(body)} bytes are in '
        f'{path}, earlier output was cleared by max_log_bytes=1000 ...]'
    ) in results[1]
    assert 'the full output' not in results[1]
    assert '1999\n2000\nend\n' in results[1]
    [finished] = [e for e in events if isinstance(e, CommandFinishedEvent)]
    assert Path(finished.output_path).resolve() == (ws / path).resolve()
    assert (finished.truncated, finished.total_lines) == (True, None)
    # A stopped session's files stay for the rest of the run, then go with it.
    assert not (ws / path).exists()


async def test_output_longer_than_the_kept_head_shows_its_real_end(ws: Path) -> None:
    # 2,692 bytes of text: more than the head kept in memory (2,416 bytes for 600 chars), less than
    # head and tail together, so nothing was cut in memory and the result's end is the output's end.
    results = await drive(ws, [start('seq 1 700')], shell=interactive(max_output_chars=600))
    assert results[0].endswith('\n699\n700\n\n[session ended, exit code: 0]'), results[0]


async def test_a_session_whose_relay_was_killed_reads_as_lost(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relayed session (as in a durable unit) whose relay is SIGKILLed: the results say the relay was lost
    and to start a new session, not `exit code -1`; the program is gone."""
    from pydantic_ai.exceptions import ModelRetry
    from pydantic_ai_harness_rs.shell import _relayed

    from .test_relayed_sessions import relays_of, until_gone

    monkeypatch.setattr(_relayed, 'relays_sessions', lambda run_id: run_id is not None)
    toolset = interactive().get_toolset()
    ctx = direct_context(ws)
    assert await toolset.start_session(ctx, 'cat') == "Session 1 started: 'cat'\n(no output yet)"
    [directory] = (ws / '.pydantic-ai-harness' / 'shell' / 'sessions').glob('*/1')
    [relay] = relays_of(directory)
    pid = int(json.loads((directory / 'status.json').read_text())['pid'])
    os.kill(relay, 9)
    lost = (
        '[session lost: its relay process was killed, and the program was ended with it (exit code unknown); '
        'start a new session with start_session]'
    )
    assert await toolset.read_session(ctx, '1', wait_for='never', timeout_seconds=10) == f'(no new output)\n{lost}'
    assert until_gone(pid)
    with pytest.raises(ModelRetry, match=r'relay process was killed, and its program was ended with it; the session'):
        await toolset.write_stdin(ctx, '1', 'x\n')
    assert (await toolset.list_sessions(ctx)).startswith("session 1: 'cat' | lost (relay killed) | exit code - | ")
    assert await toolset.stop_session(ctx, '1') == f'(no new output)\n{lost}'
    await toolset.end_sessions(ctx)


async def test_a_lost_relayed_session_found_by_a_new_worker_says_so(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic_ai.exceptions import ModelRetry
    from pydantic_ai_harness_rs.shell import _relayed

    from .test_relayed_sessions import relays_of, until_gone

    monkeypatch.setattr(_relayed, 'relays_sessions', lambda run_id: run_id is not None)
    ctx = direct_context(ws)
    first = interactive().get_toolset()
    await first.start_session(ctx, 'trap "" HUP; sleep 300')
    [directory] = (ws / '.pydantic-ai-harness' / 'shell' / 'sessions').glob('*/1')
    pid = int(json.loads((directory / 'status.json').read_text())['pid'])
    first._sessions.runs.clear()  # pyright: ignore[reportPrivateUsage]  # as a restarted worker: no handle
    [relay] = relays_of(directory)
    os.kill(relay, 9)
    second = interactive().get_toolset()
    with pytest.raises(ModelRetry, match=r'^Session 1 was lost: its relay process was killed, and the program was'):
        await second.read_session(ctx, '1')
    assert until_gone(pid)
    await second.end_sessions(ctx, in_workflow=True)


async def test_start_session_cwd_stays_inside_the_workspace(ws: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp('outside')
    (ws / 'sub').mkdir()
    (ws / 'out').symlink_to(outside)
    (ws / 'in').symlink_to(ws / 'sub')
    results = await run_calls(
        [LocalWorkspace(ws), interactive()],
        [
            start('pwd', cwd='../'),
            start('pwd', cwd=str(outside)),
            start('pwd', cwd='out'),
            start('pwd', cwd='sub/../in'),
            start('pwd', cwd=str(ws / 'sub')),
        ],
    )
    hint = 'resolves outside the workspace; give a directory inside it, relative to the working directory.'
    assert results[:3] == [
        ('retry', f"cwd '../' {hint}"),
        ('retry', f'cwd {str(outside)!r} {hint}'),
        ('retry', f"cwd 'out' {hint}"),
    ]
    # Inside it (a symlink to a directory in the workspace too), the program starts there.
    assert results[3] == ('return', f"Session 1 started: 'pwd'\n{ws / 'sub'}\n\n[session ended, exit code: 0]")
    assert results[4] == ('return', f"Session 2 started: 'pwd'\n{ws / 'sub'}\n\n[session ended, exit code: 0]")


async def test_the_runtime_listed_stops_when_a_session_or_command_ends(ws: Path) -> None:
    toolset = interactive().get_toolset()
    ctx = direct_context(ws)
    started = await toolset.start_session(ctx, 'true')
    assert started.endswith('[session ended, exit code: 0]'), started
    await toolset.start_command(ctx, 'true')
    for _ in range(200):
        listed = await toolset.list_commands(ctx)
        if '| finished |' in listed:
            break
        await anyio.sleep(0.05)
    assert re.fullmatch(r"session 1: 'true' \| exited .*\ncommand \S+: 'true' \| finished .*", listed), listed
    # Listed again later: the runtimes (a tenth of a second each) have not moved.
    await anyio.sleep(0.3)
    assert await toolset.list_commands(ctx) == listed
    assert await toolset.list_sessions(ctx) == listed.splitlines()[0]
    await toolset.end_sessions(ctx)
