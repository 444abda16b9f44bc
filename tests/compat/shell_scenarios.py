"""Scripted Shell scenarios, run once on `pydantic_ai_harness` and once on `pydantic_ai_harness_rs`.

Standalone (no pytest): `python shell_scenarios.py {ref|ours} OUT.json` runs every scenario
through a real `Agent` with a scripted `FunctionModel` in fresh temporary workspaces and writes
`{scenario: normalised results}`. IDs, PIDs and temp paths are replaced by placeholders.
`tests/compat/test_shell_compat.py` runs it under the reference's venv for both sides.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

IMPL = sys.argv[1]
if IMPL == 'ref':
    import pydantic_ai_harness.shell as shell_mod  # pyright: ignore[reportMissingImports]
else:
    import pydantic_ai_harness_rs.shell as shell_mod

Shell = shell_mod.Shell
WS: Path = Path('.')


def norm(value: Any) -> Any:
    if isinstance(value, str):
        text = value.replace(str(WS), '<ws>')
        text = re.sub(r'\b[0-9a-f]{32}\b', '<id>', text)
        text = re.sub(r'"pid": \d+', '"pid": <pid>', text)
        text = re.sub(r'PID: \d+', 'PID: <pid>', text)
        text = re.sub(r'kill -- -\d+', 'kill -- -<pid>', text)
        return text
    if isinstance(value, list):
        return [norm(v) for v in value]
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items()}
    return value


def results_of(messages: Any) -> list[list[str]]:
    out = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, RetryPromptPart):
                out.append(['retry', part.content if isinstance(part.content, str) else repr(part.content)])
            elif isinstance(part, ToolReturnPart):
                outcome = getattr(part, 'outcome', 'success')
                kind = {'success': 'return', 'retried': 'retry'}.get(outcome, outcome)
                out.append([kind, part.content if isinstance(part.content, str) else repr(part.content)])
    return out


async def run(capabilities: list[Any], calls: list[tuple[str, dict[str, Any]]], prefix: str = 'c', **kw: Any) -> Any:
    events: list[Any] = []

    def step(messages: list[Any]) -> tuple[int, tuple[str, dict[str, Any]]] | None:
        n = sum(isinstance(m, ModelResponse) for m in messages)
        return (n, calls[n]) if n < len(calls) else None

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        s = step(messages)
        if s is None:
            return ModelResponse(parts=[TextPart('done')])
        return ModelResponse(parts=[ToolCallPart(s[1][0], s[1][1], tool_call_id=f'{prefix}-{s[0]}')])

    async def stream(messages: list[Any], info: AgentInfo) -> Any:
        s = step(messages)
        if s is None:
            yield 'done'
            return
        yield {0: DeltaToolCall(name=s[1][0], json_args=json.dumps(s[1][1]), tool_call_id=f'{prefix}-{s[0]}')}

    async def handler(ctx: Any, events_stream: Any) -> None:
        async for event in events_stream:
            if getattr(event, 'event_kind', None) == 'capability':
                fields = {k: getattr(event, k) for k in ('command', 'pid', 'text', 'output_path', 'status_path',
                                                         'exit_code', 'truncated', 'total_lines') if hasattr(event, k)}
                if 'pid' in fields:
                    fields['pid'] = '<pid>'
                name = type(event).__name__
                # How output splits into events depends on when the polls land (a loaded machine
                # splits it more): consecutive output events are compared as their joined text.
                if name == 'CommandOutputEvent' and events and events[-1][0] == name:
                    events[-1][1]['text'] += fields['text']
                    continue
                events.append([name, fields])

    agent = Agent(FunctionModel(fn, stream_function=stream), capabilities=capabilities, retries=100)
    try:
        result = await agent.run('go', event_stream_handler=handler, **kw)
    except Exception as e:  # the run aborted: record how
        return {'error': [type(e).__name__, str(e)]}
    out: dict[str, Any] = {'results': results_of(result.all_messages())}
    if events:
        out['events'] = events
    return out


ROOT = Path(tempfile.mkdtemp(prefix='shell-compat-')).resolve()
"""Every directory a scenario makes is below this one, removed when the script ends."""


def _remove_root() -> None:
    """Kill what still runs in `ROOT` (a scenario's background job), then remove it."""
    for entry in os.listdir('/proc'):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cwd = os.readlink(f'/proc/{entry}/cwd')
            except OSError:
                continue
            if cwd == str(ROOT) or cwd.startswith(f'{ROOT}/'):
                try:
                    os.kill(int(entry), signal.SIGKILL)
                except OSError:
                    pass
    shutil.rmtree(ROOT, ignore_errors=True)


def fresh() -> Path:
    global WS
    WS = Path(tempfile.mkdtemp(prefix='ws-', dir=ROOT)).resolve()
    (WS / 'sub').mkdir()
    return WS


def rc(command: str, **kw: Any) -> tuple[str, dict[str, Any]]:
    return ('run_command', {'command': command, **kw})


async def wait_for(path: Path, predicate: Any) -> None:
    for _ in range(3000):
        try:
            if predicate(path.read_text()):
                return
        except (OSError, ValueError):
            pass
        await asyncio.sleep(0.01)


async def scenario_formats() -> Any:
    ws = fresh()
    return await run([LocalWorkspace(ws), Shell()], [
        rc('echo hi'), rc('echo oops >&2'), rc('echo out; echo err >&2; exit 3'), rc('true'), rc('exit 7'),
        rc('pwd'), rc('kill -9 $$'), rc('no-such-program-xyz'), rc("printf 'h\\303\\251llo \\360\\237\\230\\200\\n'"),
        rc("printf 'a\\377b\\300\\n'"), rc('cat; echo after'), rc("echo 'unterminated"), rc('printf no-newline'),
    ])


async def scenario_policy() -> Any:
    ws = fresh()
    out = {}
    out['default'] = await run([LocalWorkspace(ws), Shell()], [
        rc('rm -rf x'), rc("'rm' x"), rc('r""m x'), rc('dd if=/dev/zero'), rc('vi f'), rc('  sudo ls'), rc('ssh h'),
        rc('man ls'), rc('echo a\x00b'), rc('echo ok'),
    ])
    out['allow'] = await run([LocalWorkspace(ws), Shell(allowed_commands=['echo'])], [rc('echo a'), rc('ls'), rc('rm x')])
    out['operators'] = await run([LocalWorkspace(ws), Shell(denied_operators=['>', '|'])], [
        rc('echo a > f'), rc('echo a | cat'), rc('echo fine')])
    out['interactive'] = await run([LocalWorkspace(ws), Shell(allow_interactive=True)], [rc('man-x 2>/dev/null; echo ran')])
    out['no_denylist'] = await run([LocalWorkspace(ws), Shell(denied_commands=[])], [rc('rm -f nothing; echo ok')])
    return out


async def scenario_truncation() -> Any:
    ws = fresh()
    return await run([LocalWorkspace(ws), Shell(max_output_chars=60)], [
        rc('seq 1 1000; echo boom >&2; exit 1'), rc('seq 1 3'), rc("i=0; while [ $i -lt 200 ]; do printf 'é😀'; i=$((i+1)); done"),
    ])


async def scenario_timeout() -> Any:
    ws = fresh()
    return await run([LocalWorkspace(ws), Shell(default_timeout=0.5)], [
        rc('echo a; echo b >&2; sleep 30'), rc('sleep 30', timeout_seconds=0.3), rc('echo fast', timeout_seconds=5),
    ])


async def scenario_env() -> Any:
    ws = fresh()
    shell = Shell(env={'A': '1', 'OPENAI_API_KEY': 'k', 'GOOGLE_X': 'g', 'KEEP': 'me'},
                  denied_env_patterns=shell_mod.LLM_API_KEY_ENV_PATTERNS)
    return await run([LocalWorkspace(ws, env={'W': 'ws', 'ANTHROPIC_API_KEY': 'from-ws'}), shell], [
        rc('echo "$A|$OPENAI_API_KEY|$GOOGLE_X|$KEEP|$W|$ANTHROPIC_API_KEY"'),
        rc('env | cut -d= -f1 | grep -v -e ^PWD$ -e ^OLDPWD$ -e ^SHLVL$ -e ^_$ | sort'),
    ])


async def scenario_persist_cwd() -> Any:
    ws = fresh()
    (ws / 'sub' / 'deep').mkdir()
    (ws / 'gone').mkdir()
    return await run([LocalWorkspace(ws), Shell(persist_cwd=True, denied_commands=[])], [
        rc('cd sub'), rc('pwd'), rc('cd deep && pwd'), rc('cd / ; false'), rc('pwd'), rc('cd ../../gone'),
        rc('rmdir "$PWD"'), rc('pwd'), rc('pwd'), rc('echo /etc'), rc('pwd'),
    ])


async def scenario_file_limit() -> Any:
    ws = fresh()
    return await run([LocalWorkspace(ws), Shell(max_file_bytes=1000)], [
        rc("printf '%5000s' x > big"), rc('wc -c < big'), rc('head -c 5000 /dev/zero > b2; echo after'),
        rc("sh -c 'trap \"\" XFSZ; head -c 4096 /dev/zero > f'; exit 3"), rc('echo ok'),
    ])


async def scenario_background() -> Any:
    ws = fresh()
    first = await run([LocalWorkspace(ws), Shell()], [
        ('start_command', {'command': 'echo ready; echo warn >&2; sleep 60'}),
        ('start_command', {'command': 'echo done; exit 3'}),
        ('start_command', {'command': 'sleep 61'}),
    ])
    ids = [re.search(r'ID: (\w+)', r[1]).group(1) for r in first['results']]  # type: ignore[union-attr]
    jobs = ws / '.pydantic-ai-harness' / 'shell'
    await wait_for(jobs / ids[0] / 'stderr.log', lambda t: t == 'warn\n')
    await wait_for(jobs / ids[1] / 'status.json', lambda t: json.loads(t)['exit_code'] is not None)
    files = sorted(p.name for p in (jobs / ids[0]).iterdir())
    second = await run([LocalWorkspace(ws), Shell()], [
        ('check_command', {'command_id': ids[0]}), ('check_command', {'command_id': ids[1]}),
        ('check_command', {'command_id': ids[2]}), ('check_command', {'command_id': 'nope'}),
        ('stop_command', {'command_id': ids[0]}), ('stop_command', {'command_id': ids[1]}),
        ('stop_command', {'command_id': ids[2]}), ('check_command', {'command_id': ids[0]}),
    ], prefix='later')
    left = sorted(p.name for p in jobs.iterdir())
    return {'first': first, 'files': files, 'second': second, 'left': left,
            'gitignore': (ws / '.pydantic-ai-harness' / '.gitignore').read_text()}


async def scenario_shell_tool() -> Any:
    ws = fresh()
    out: dict[str, Any] = {}
    out['fg'] = await run([LocalWorkspace(ws), Shell(tools=['shell'])], [
        ('shell', {'command': 'echo out; echo err >&2; exit 2'}),
        ('shell', {'command': 'seq 1 20000'}),
        ('shell', {'command': 'true', 'timeout': 0}),
        ('shell', {'command': 'rm x'}),
    ])
    bg = await run([LocalWorkspace(ws), Shell(tools=['shell'])], [('shell', {'command': 'sleep 1; echo hi; sleep 60', 'mode': 'background'})])
    pid = int(re.search(r'PID: (\d+)', bg['results'][0][1]).group(1))  # type: ignore[union-attr]
    os.killpg(pid, 15)
    out['bg'] = bg
    return out


async def scenario_construction() -> Any:
    cases = {
        'both': {'allowed_commands': ['ls'], 'denied_commands': ['rm']},
        'chars': {'max_output_chars': 0},
        'fsize0': {'max_file_bytes': 0},
        'fsize_cwd': {'max_file_bytes': 10, 'persist_cwd': True},
        'fsize_shell': {'max_file_bytes': 10, 'tools': ['shell']},
        'shell_timeout': {'tools': ['shell'], 'default_timeout': 300},
        'unknown': {'tools': ['nope']},
    }
    out = {}
    for name, kwargs in cases.items():
        try:
            Agent('test', capabilities=[Shell(**kwargs)])
            out[name] = 'ok'
        except Exception as e:
            out[name] = [type(e).__name__, str(e)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        Shell(cwd='x')
    out['cwd_warning'] = [str(w.message) for w in caught]
    out['denied_default'] = list(Shell().denied_commands)
    out['denied_with_allow'] = list(Shell(allowed_commands=['ls']).denied_commands)
    return out


async def scenario_workspace() -> Any:
    ws = fresh()
    out: dict[str, Any] = {}
    out['none'] = await run([Shell()], [rc('echo hi')])
    tools: list[Any] = []

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        tools.append(sorted(
            [t.name, t.description, t.parameters_json_schema] for t in info.function_tools
            if t.name in ('run_command', 'start_command', 'check_command', 'stop_command', 'shell')
        ))
        return ModelResponse(parts=[TextPart('done')])

    await Agent(FunctionModel(fn), capabilities=[LocalWorkspace(ws, read_only=True), Shell()]).run('go')
    await Agent(FunctionModel(fn), capabilities=[LocalWorkspace(ws), Shell()]).run('go')
    await Agent(FunctionModel(fn), capabilities=[LocalWorkspace(ws), Shell(tools=['shell'])]).run('go')
    out['tools'] = tools
    return out


async def scenario_line_numbers() -> Any:
    """The shell's own messages carry the line of the model's command in the wrapper script."""
    ws = fresh()
    commands = ['nosuch', 'cd nonexistent_dir', 'if then']
    out: dict[str, Any] = {}
    for name, kwargs in {'plain': {}, 'persist_cwd': {'persist_cwd': True}, 'file_limit': {'max_file_bytes': 100_000}}.items():
        out[name] = await run([LocalWorkspace(ws), Shell(**kwargs)], [rc(c) for c in commands])
    started = await run([LocalWorkspace(ws), Shell()], [('start_command', {'command': c}) for c in commands])
    ids = [re.search(r'ID: (\w+)', r[1]).group(1) for r in started['results']]  # type: ignore[union-attr]
    jobs = ws / '.pydantic-ai-harness' / 'shell'
    for cid in ids:
        await wait_for(jobs / cid / 'status.json', lambda t: json.loads(t)['exit_code'] is not None)
    out['start'] = await run([LocalWorkspace(ws), Shell()], [('check_command', {'command_id': c}) for c in ids], prefix='l')
    out['shell'] = await run([LocalWorkspace(ws), Shell(tools=['shell'])], [('shell', {'command': c}) for c in commands])
    return out


# --- 0.61+: max_log_bytes, E2BIG, the launcher's `$1` (compared with 0.62.0 only) -------------


async def scenario_construction_log_limit() -> Any:
    out: dict[str, Any] = {'default': Shell().max_log_bytes}
    for name, value in {'zero': 0, 'negative': -1, 'bool': True, 'float': 1.5, 'huge': 2**64, 'none': None, 'one': 1}.items():
        try:
            Agent('test', capabilities=[Shell(max_log_bytes=value)])
            out[name] = 'ok'
        except Exception as e:
            out[name] = [type(e).__name__, str(e)]
    out['kw_only'] = [f.kw_only for f in dataclasses.fields(Shell) if f.name == 'max_log_bytes']
    return out


async def scenario_max_log_bytes() -> Any:
    ws = fresh()
    out: dict[str, Any] = {}
    chatty = "printf '%300s\\n' x; printf 'e%.0s' 1 2 3 4 5 6 7 8 9 10 11 12 >&2; sleep 1.6; echo after; echo late >&2; exit 3"
    first = await run([LocalWorkspace(ws), Shell(max_log_bytes=100)], [('start_command', {'command': chatty})])
    cid = re.search(r'ID: (\w+)', first['results'][0][1]).group(1)  # type: ignore[index, union-attr]
    job = ws / '.pydantic-ai-harness' / 'shell' / cid
    await wait_for(job / 'status.json', lambda t: json.loads(t)['exit_code'] is not None)
    out['files'] = sorted(p.name for p in job.iterdir())
    out['clears'] = (job / 'log_clears').read_text()
    out['check'] = await run([LocalWorkspace(ws), Shell(max_log_bytes=100)], [('check_command', {'command_id': cid})], prefix='l')
    out['shell'] = await run([LocalWorkspace(ws), Shell(tools=['shell'], max_log_bytes=100)], [
        ('shell', {'command': "printf '%300s\\n' x; sleep 1.6; echo after"}),
        ('shell', {'command': 'echo small'}),
    ])
    # How the output splits into events depends on when the polls land; the rest must not.
    out['shell']['events'] = [e for e in out['shell'].get('events', []) if e[0] != 'CommandOutputEvent']
    out['off'] = await run([LocalWorkspace(ws), Shell(tools=['shell'], max_log_bytes=None)], [
        ('shell', {'command': "printf '%300s\\n' x; sleep 1.2; echo after"})])
    return out


async def scenario_own_log() -> Any:
    """A command that copies its own log into itself: the log stays bounded and the command runs on."""
    ws = fresh()
    command = 'echo seed; tail -n +1 -f .pydantic-ai-harness/shell/*/output.log'
    res = await run([LocalWorkspace(ws), Shell(tools=['shell'], max_log_bytes=10_000)], [
        ('shell', {'command': command, 'mode': 'background'})])
    pid = int(re.search(r'PID: (\d+)', res['results'][0][1]).group(1))  # type: ignore[index, union-attr]
    # Wait for the notice (up to 20 s), not a fixed time: on a loaded machine the copying may take
    # more than a few seconds to pass the limit, on either side.
    await asyncio.sleep(1.5)
    [log] = list((ws / '.pydantic-ai-harness' / 'shell').glob('*/output.log'))
    for _ in range(80):
        if b'\n[Log exceeded' in b'\n' + log.read_bytes():
            break
        await asyncio.sleep(0.25)
    size = log.stat().st_size
    alive = True
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        alive = False
    os.killpg(pid, 15)
    # Bounded: one second of copying at most beyond the limit, never the disk. The notice is in the
    # log; what `tail` read before a clear may land around it (it copies the log into itself).
    return {'bounded': size < 200_000_000, 'alive': alive, 'notice': b'\n[Log exceeded' in b'\n' + log.read_bytes()}


async def scenario_e2big() -> Any:
    ws = fresh()
    long = ': ' + 'x' * 200_000
    out: dict[str, Any] = {}
    out['run'] = await run([LocalWorkspace(ws), Shell()], [rc(long), rc('echo after')])
    out['start'] = await run([LocalWorkspace(ws), Shell()], [('start_command', {'command': long}), rc('echo after')])
    out['shell'] = await run([LocalWorkspace(ws), Shell(tools=['shell'])], [('shell', {'command': long})])
    out['left'] = sorted(p.name for p in (ws / '.pydantic-ai-harness' / 'shell').iterdir() if len(p.name) == 32)
    env = await run([LocalWorkspace(ws), Shell(env={'BIG': 'x' * 200_000})], [rc('echo hi')])
    out['env_too_big'] = env.get('error', ['', ''])[0], 'Argument list too long' in str(env)
    return out


async def scenario_quote_heavy() -> Any:
    """90 KB of `'`: quoting it into the launcher would pass the OS's 128 KiB per-argument limit."""
    ws = fresh()
    command = 'echo ' + '"\'"' * 30_000 + ' | wc -c'
    first = await run([LocalWorkspace(ws), Shell()], [rc(command), ('start_command', {'command': command})])
    cid = re.search(r'ID: (\w+)', first['results'][1][1]).group(1)  # type: ignore[index, union-attr]
    await wait_for(ws / '.pydantic-ai-harness' / 'shell' / cid / 'status.json', lambda t: json.loads(t)['exit_code'] is not None)
    check = await run([LocalWorkspace(ws), Shell()], [('check_command', {'command_id': cid})], prefix='l')
    first['results'][1][1] = first['results'][1][1][-40:]
    return {'first': first, 'check': check}


async def difference_timeout_zero() -> Any:
    ws = fresh()
    return await run([LocalWorkspace(ws), Shell()], [rc('echo x', timeout_seconds=0)])


async def difference_exit_zero_after_cd() -> Any:
    ws = fresh()
    return await run([LocalWorkspace(ws), Shell(persist_cwd=True)], [rc('cd sub; exit 0'), rc('pwd')])


async def difference_fifty_mib() -> Any:
    ws = fresh()
    return await run([LocalWorkspace(ws), Shell(max_output_chars=200)], [
        rc("head -c 52428800 /dev/zero | tr '\\0' x; echo; echo LAST")])


async def difference_nothing_on_path() -> Any:
    """A local workspace whose PATH has `sh` and `base64` but no `mv`: the references refuse, we run."""
    ws = fresh()
    tools = Path(tempfile.mkdtemp(prefix='path-', dir=ROOT))
    for tool in ('sh', 'base64', 'sleep', 'wc'):
        (tools / tool).symlink_to(shutil.which(tool))  # type: ignore[arg-type]
    out = await run(
        [LocalWorkspace(ws, env={'PATH': str(tools)}), Shell()], [('start_command', {'command': 'echo ran; exit 4'})]
    )
    jobs = ws / '.pydantic-ai-harness' / 'shell'
    ids = [p for p in jobs.iterdir() if len(p.name) == 32] if jobs.exists() else []
    if ids:
        await wait_for(ids[0] / 'status.json', lambda t: json.loads(t)['exit_code'] is not None)
        out['status'] = json.loads((ids[0] / 'status.json').read_text())['exit_code']
        out['stdout'] = (ids[0] / 'stdout.log').read_text()
    return out


SCENARIOS = {name.removeprefix('scenario_'): fn for name, fn in globals().items() if name.startswith('scenario_')}
SCENARIOS.update({name: fn for name, fn in globals().items() if name.startswith('difference_')})


async def main() -> None:
    out = {}
    only = sys.argv[3:] or [name for name in SCENARIOS if not name.startswith('difference_')]
    try:
        for name in only:
            out[name] = norm(await SCENARIOS[name]())
    finally:
        _remove_root()
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1, sort_keys=True))


asyncio.run(main())
