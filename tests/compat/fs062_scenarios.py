"""Scripted FileSystem scenarios on a `LocalWorkspace`, run the same way against 0.62.0 and ours.

Usage: `python fs062_scenarios.py MODULE [--direct] [SCENARIO ...]`

`MODULE` is `pydantic_ai_harness` (the reference, 0.62.0, in its own venv) or
`pydantic_ai_harness_rs` (ours). Each scenario builds its tree in a fresh temp dir, attaches
that directory as the run's workspace (`LocalWorkspace(root)` beside `FileSystem(...)` with no
`root_dir`, `workspace=` on the run, or an agent spec), drives a real `Agent` with a scripted
`FunctionModel` through the calls, and prints `{scenario: outcome}` as JSON. An outcome holds
what the model got back per call, the filesystem events, the deprecation warnings given, and the
tree afterwards. With `--direct`, the calls go to the toolset's methods with
`workspace=LocalWorkspaceBackend(root)` instead. Temp paths read `<TMP>` / `<ROOT>`.

The tree specs, the normaliser and the recorders are `fs_scenarios.py`'s. No pytest dependency.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any

from fs_scenarios import (
    C,
    Fifo,
    Hash,
    Link,
    Normaliser,
    Scenario,
    _build,  # pyright: ignore[reportPrivateUsage]
    _content_hash,  # pyright: ignore[reportPrivateUsage]
    _event_record,  # pyright: ignore[reportPrivateUsage]
    _part_record,  # pyright: ignore[reportPrivateUsage]
    _snapshot,  # pyright: ignore[reportPrivateUsage]
    _tool_defs,  # pyright: ignore[reportPrivateUsage]
)


@dataclass
class WorkspaceScenario(Scenario):
    attach: str = 'capability'
    """How the workspace reaches the run: `capability` (`LocalWorkspace(root)`), `run`
    (`workspace=LocalWorkspaceBackend(root)` on the run), `spec` (an agent spec with
    `- LocalWorkspace: <root>` and `- FileSystem: {...}`), or `unavailable`
    (`workspace=UnavailableWorkspace(...)` on the run)."""


SCENARIOS: dict[str, WorkspaceScenario] = {}

TREE: dict[str, Any] = {
    'a.txt': 'alpha\nbeta\ngamma\n',
    'ten.txt': ''.join(f'line {i}\n' for i in range(1, 11)),
    'empty.txt': '',
    'key.pem': '-----BEGIN KEY-----\n',
    'src/main.py': "import os\n\n\ndef main():\n    print('hello alpha')\n",
    'src/util.py': 'def helper():\n    return 42\n',
    'src/data/config.json': '{"name": "demo"}\n',
    'docs/readme.md': '# Demo\nSee src/main.py for alpha.\n',
    'emptydir': None,
}
"""No hidden entries: listings and searches here compare without the hidden-entries trailer."""

OUTSIDE: dict[str, Any] = {
    'secret.txt': 'outside secret\n',
    'd/inner.txt': 'outside inner\n',
    'rootlink': Link('<ROOT>'),
}


def scenario(name: str, calls: list[Any], *, tree: dict[str, Any] | None = None, **kwargs: Any) -> None:
    assert name not in SCENARIOS, name
    SCENARIOS[name] = WorkspaceScenario(name=name, calls=calls, tree=TREE if tree is None else tree, **kwargs)


scenario(
    'basics',
    [
        C('list_directory', path='.'),
        C('list_directory', path='src'),
        C('read_file', path='a.txt'),
        C('read_file', path='src/main.py'),
        C('read_file', path='./src/../a.txt'),
        C('read_file', path='ten.txt', offset=3, limit=4),
        C('write_file', path='new.txt', content='hello\n'),
        C('read_file', path='new.txt'),
        C('edit_file', path='a.txt', old_text='beta', new_text='BETA'),
        C('edit_file', path='a.txt', old_text='gamma', new_text='GAMMA', expected_hash=Hash('a.txt')),
        C('write_file', path='a.txt', content='stale\n', expected_hash='000000000000'),
        C('create_directory', path='made/deeper'),
        C('create_directory', path='made'),
        C('write_file', path='made/deeper/f.txt', content='x'),
        C('find_files', pattern='*.py', path='src'),
        C('find_files', pattern='**/*.json'),
        C('search_files', pattern='alpha'),
        C('file_info', path='a.txt'),
        C('file_info', path='src'),
        C('file_info', path='empty.txt'),
    ],
)
scenario(
    'missing_paths',
    [
        C('read_file', path='nope.txt'),
        C('read_file', path='src'),
        C('read_file', path='dangle'),
        C('read_file', path='a.txt/x'),
        C('read_file', path='nodir/x.txt', offset=5),
        C('file_info', path='nope.txt'),
        C('file_info', path='dangle'),
        C('file_info', path='a.txt/x'),
        C('edit_file', path='nope.txt', old_text='a', new_text='b'),
        C('edit_file', path='src', old_text='a', new_text='b'),
        C('list_directory', path='nope'),
        C('list_directory', path='a.txt'),
        C('find_files', pattern='*', path='nope'),
        C('search_files', pattern='x', path='nope'),
        C('file_info', path='<ROOT>'),
    ],
    tree={**TREE, 'dangle': Link('nothere')},
)
scenario(
    'containment',
    [
        C('read_file', path='../outside/secret.txt'),
        C('read_file', path='<TMP>/outside/secret.txt'),
        C('read_file', path='escape.txt'),
        C('read_file', path='escdir/inner.txt'),
        C('read_file', path='<ROOT>/a.txt'),
        C('read_file', path='<TMP>/outside/rootlink/a.txt'),
        C('write_file', path='escape.txt', content='x'),
        C('write_file', path='../outside/new.txt', content='x'),
        C('create_directory', path='../outside/newdir'),
        C('edit_file', path='escape.txt', old_text='outside', new_text='x'),
        C('list_directory', path='..'),
        C('list_directory', path='escdir'),
        C('find_files', pattern='*', path='escdir'),
        C('file_info', path='escape.txt'),
        C('file_info', path='inlink'),
        C('file_info', path='abslink'),
        C('file_info', path='via.txt'),
        C('read_file', path='via.txt'),
    ],
    tree={
        **TREE,
        'escape.txt': Link('<TMP>/outside/secret.txt'),
        'escdir': Link('<TMP>/outside/d'),
        'inlink': Link('a.txt'),
        'abslink': Link('<ROOT>/a.txt'),
        'via.txt': Link('<TMP>/outside/rootlink/a.txt'),
    },
    outside=OUTSIDE,
)
scenario(
    'symlink_loop',
    [
        C('read_file', path='loop'),
        C('file_info', path='loop'),
        C('write_file', path='loop', content='x'),
        C('edit_file', path='loop', old_text='a', new_text='b'),
        C('read_file', path='loop/x'),
    ],
    tree={**TREE, 'loop': Link('loop')},
)
scenario(
    'parents_and_collisions',
    [
        C('write_file', path='nodir/x.txt', content='x'),
        C('write_file', path='deep/er/x.txt', content='x'),
        C('write_file', path='a.txt/x', content='x'),
        C('write_file', path='src', content='x'),
        C('create_directory', path='a.txt'),
        C('create_directory', path='a.txt/sub'),
        C('create_directory', path='newdir'),
        C('create_directory', path='newdir'),
        C('write_file', path='newdir/x.txt', content='one\ntwo\n'),
    ],
)
scenario(
    'default_read_only_patterns',
    [
        C('write_file', path='.env', content='x'),
        C('write_file', path='.env.local', content='x'),
        C('write_file', path='sub/.env', content='x'),
        C('write_file', path='.git/config', content='x'),
        C('write_file', path='.GIT/config', content='x'),
        C('write_file', path='sub/.git', content='x'),
        C('write_file', path='key.pem', content='x'),
        C('write_file', path='sub/id.key', content='x'),
        C('write_file', path='sub/secrets.yaml', content='x'),
        C('write_file', path='secrets.txt', content='x'),
        C('write_file', path='.pydantic-ai-harness/notes', content='x'),
        C('write_file', path='sub/.pydantic-ai-harness/notes', content='x'),
        C('edit_file', path='.env', old_text='SECRET', new_text='S'),
        C('create_directory', path='.git/hooks'),
        C('read_file', path='.env'),
        C('write_file', path='sub/ok.txt', content='fine\n'),
    ],
    tree={**TREE, '.env': 'SECRET=1\n', '.git/config': '[core]\n', 'sub': None, '.pydantic-ai-harness': None},
)
scenario(
    'special_files',
    [
        C('read_file', path='pipe'),
        C('file_info', path='pipe'),
        C('write_file', path='pipe', content='x'),
        C('edit_file', path='pipe', old_text='a', new_text='b'),
    ],
    tree={**TREE, 'pipe': Fifo()},
)
scenario(
    'offset_and_limit',
    [
        C('read_file', path='ten.txt', offset=-1),
        C('read_file', path='ten.txt', limit=0),
        C('read_file', path='ten.txt', limit=-1),
        C('read_file', path='ten.txt', offset=-1, limit=0),
        C('read_file', path='ten.txt', offset=10),
        C('read_file', path='ten.txt', offset=9),
        C('read_file', path='ten.txt', limit=3),
        C('read_file', path='ten.txt', offset=8, limit=100),
        C('read_file', path='empty.txt'),
        C('read_file', path='empty.txt', offset=1),
    ],
)
scenario(
    'find_globs',
    [
        C('find_files', pattern='**'),
        C('find_files', pattern='**/'),
        C('find_files', pattern='src/**'),
        C('find_files', pattern='**/*.py'),
        C('find_files', pattern='*'),
        C('find_files', pattern='*/'),
        C('find_files', pattern='s**'),
        C('find_files', pattern='../*'),
        C('find_files', pattern='a/../b'),
        C('find_files', pattern='src/../*.txt'),
        C('find_files', pattern=''),
        C('find_files', pattern='.'),
        C('find_files', pattern='/abs/*'),
        C('find_files', pattern='**', path='src'),
        C('find_files', pattern='data/*', path='src'),
    ],
)
_BIG = ''.join(f'{i:05d} ' + 'x' * 24 + '\n' for i in range(3000))  # 3000 lines of 31 chars
scenario(
    'max_read_chars_default',
    [
        C('read_file', path='big.txt'),
        C('read_file', path='big.txt', offset=2500),
        C('read_file', path='big.txt', limit=10),
    ],
    tree={'big.txt': _BIG},
)
scenario(
    'max_read_chars_none',
    [C('read_file', path='big.txt', offset=100, limit=3), C('read_file', path='big.txt')],
    tree={'big.txt': _BIG},
    config={'max_read_chars': None},
)
_PATTERN_CALLS = [
    C('write_file', path='a.txt', content='x'),
    C('write_file', path='src/new.txt', content='x'),
    C('write_file', path='.env', content='x'),
    C('edit_file', path='src/util.py', old_text='42', new_text='43'),
]
scenario('read_only_patterns', _PATTERN_CALLS, config={'read_only_patterns': ['*.txt']})
scenario('read_only_patterns_empty', _PATTERN_CALLS, config={'read_only_patterns': []})
scenario('protected_patterns_alias', _PATTERN_CALLS, config={'protected_patterns': ['*.txt']})
scenario('both_pattern_names', _PATTERN_CALLS, config={'protected_patterns': ['*.txt'], 'read_only_patterns': ['*.md']})
scenario(
    'denied_and_allowed',
    [
        C('read_file', path='src/main.py'),
        C('read_file', path='a.txt'),
        C('list_directory', path='.'),
        C('list_directory', path='src'),
        C('find_files', pattern='**/*.py'),
        C('write_file', path='src/data/new.json', content='{}'),
    ],
    config={'denied_patterns': ['src/data'], 'allowed_patterns': ['src/*', '*.txt']},
)
scenario(
    'cwd_ignored',
    [C('list_directory', path='.'), C('read_file', path='a.txt'), C('write_file', path='w.txt', content='w\n')],
    config={'cwd': 'src'},
)
scenario(
    'unhashed',
    [
        C('read_file', path='a.txt'),
        C('write_file', path='n.txt', content='n\n'),
        C('edit_file', path='n.txt', old_text='n', new_text='m'),
    ],
    config={'content_hashes': False},
)
scenario(
    'workspace_on_the_run', [C('list_directory', path='.'), C('write_file', path='r.txt', content='r\n')], attach='run'
)
scenario(
    'agent_spec',
    [C('list_directory', path='.'), C('read_file', path='a.txt'), C('write_file', path='s.txt', content='s\n')],
    attach='spec',
)
scenario(
    'symlinks',
    [
        C('file_info', path='rel_dot'),
        C('file_info', path='dirlink'),
        C('file_info', path='dirlink/data'),
        C('file_info', path='chain'),
        C('read_file', path='chain'),
        C('read_file', path='dirlink/main.py', limit=1),
        C('write_file', path='gitlink/config', content='x'),
        C('write_file', path='chain', content='through\n'),
        C('edit_file', path='rel_dot', old_text='through', new_text='again'),
        C('list_directory', path='dirlink'),
        C('find_files', pattern='*.py', path='dirlink'),
        C('search_files', pattern='alpha', path='dirlink'),
        C('search_files', pattern='through', path='chain'),
        C('create_directory', path='dirlink/newsub'),
    ],
    tree={
        **TREE,
        'rel_dot': Link('./a.txt'),
        'dirlink': Link('src'),
        'chain': Link('rel_dot'),
        'gitdir/config': '[core]\n',
        '.git': Link('gitdir'),
        'gitlink': Link('.git'),
    },
)
scenario(
    'cancelled_changes',
    [
        C('write_file', path='c.txt', content='c\n'),
        C('edit_file', path='a.txt', old_text='beta', new_text='B'),
        C('create_directory', path='cdir'),
    ],
    cancel='not now',
)
_ALL_TOOLS = [
    'read_file',
    'write_file',
    'edit_file',
    'list_directory',
    'search_files',
    'find_files',
    'create_directory',
    'file_info',
    'list_files',
    'grep',
]
scenario('schemas_default', [], schemas=True)
scenario('schemas_all_unhashed', [], schemas=True, config={'tools': _ALL_TOOLS, 'content_hashes': False})
scenario('schemas_all_read_only', [], schemas=True, config={'tools': _ALL_TOOLS, 'read_only': True})
scenario('schemas_on_the_run', [], schemas=True, attach='run')
scenario('unavailable_workspace', [C('list_directory', path='.')], attach='unavailable')
scenario(
    'hidden_entries',
    [
        C('list_directory', path='.'),
        C('find_files', pattern='*'),
        C('search_files', pattern='alpha'),
        C('read_file', path='.hidden/h.txt'),
    ],
    tree={**TREE, '.env': 'SECRET=1\n', '.hidden/h.txt': 'hidden alpha\n'},
)


# --------------------------------------------------------------------------------------
# Runner
# --------------------------------------------------------------------------------------


def _warning_texts(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if 'deprecated' in str(w.message) or 'renamed' in str(w.message)]


async def run_scenario(module: str, sc: WorkspaceScenario, *, direct: bool = False) -> dict[str, Any]:
    from pydantic_ai import Agent, CapabilityEvent
    from pydantic_ai.capabilities import LocalWorkspace
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
    from pydantic_ai.workspaces import LocalWorkspaceBackend, UnavailableWorkspace

    harness = importlib.import_module(module)
    tmp = os.path.realpath(tempfile.mkdtemp(prefix='fs062-'))
    root = os.path.join(tmp, 'root')
    norm = Normaliser(tmp, root)
    out: dict[str, Any] = {}
    caught: list[warnings.WarningMessage] = []
    try:
        _build(root, sc.tree, norm)
        if sc.outside:
            _build(os.path.join(tmp, 'outside'), sc.outside, norm)
        config = dict(sc.config)
        if 'cwd' in config:
            config['cwd'] = os.path.join(root, config['cwd'])
        step_calls: list[tuple[str, dict[str, Any], str]] = []
        tool_defs: list[Any] = []

        def resolve_args(args: dict[str, Any]) -> dict[str, Any]:
            resolved: dict[str, Any] = {}
            for key, value in args.items():
                if isinstance(value, Hash):
                    with open(os.path.join(root, value.path), 'rb') as f:
                        value = _content_hash(f.read())
                resolved[key] = norm.expand(value)
            return resolved

        def script(messages: list[Any], info: AgentInfo) -> ModelResponse:
            step = sum(1 for m in messages if isinstance(m, ModelRequest)) - 1
            if step == 0 and sc.schemas:
                tool_defs.extend(_tool_defs(info))
            if step < len(sc.calls):
                call = sc.calls[step]
                call_id = f'call_{step:02d}'
                args = resolve_args(call.args)
                step_calls.append((call.tool, args, call_id))
                return ModelResponse(parts=[ToolCallPart(call.tool, args, tool_call_id=call_id)])
            return ModelResponse(parts=[TextPart('done')])

        async def stream_script(messages: list[Any], info: AgentInfo):  # type: ignore[no-untyped-def]
            part = script(messages, info).parts[0]
            if isinstance(part, TextPart):
                yield part.content
            else:
                yield {
                    0: DeltaToolCall(
                        name=part.tool_name, json_args=json.dumps(part.args), tool_call_id=part.tool_call_id
                    )
                }

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            try:
                capability = harness.FileSystem(**config)
                model = FunctionModel(script, stream_function=stream_script)
                if sc.attach == 'spec':
                    spec = {'model': 'test', 'capabilities': [{'LocalWorkspace': root}, {'FileSystem': config}]}
                    agent = Agent.from_spec(spec, custom_capability_types=[harness.FileSystem])
                else:
                    capabilities = [LocalWorkspace(root), capability] if sc.attach == 'capability' else [capability]
                    agent = Agent(model, capabilities=capabilities, retries=100)
            except Exception as e:  # noqa: BLE001 - recorded and compared
                out['construct_error'] = {'type': type(e).__name__, 'message': norm.text(str(e))}
                out['warnings'] = [norm.text(w) for w in _warning_texts(caught)]
                return out

            if direct:
                out.update(await _run_direct(capability, sc, resolve_args, norm, LocalWorkspaceBackend(root)))
            else:
                events: list[dict[str, Any]] = []

                @agent.on_event(CapabilityEvent)
                async def record(ctx: Any, event: Any) -> None:  # pyright: ignore[reportUnusedFunction]
                    if isinstance(event, CapabilityEvent) and event.kind.startswith('file_system.'):
                        events.append(_event_record(event, norm))

                if sc.cancel is not None:
                    fs_module = importlib.import_module(f'{module}.filesystem')

                    @agent.on_event(fs_module.FileChangeRequestEvent)
                    async def veto(ctx: Any, event: Any) -> None:  # pyright: ignore[reportUnusedFunction]
                        event.cancel(sc.cancel)

                run_kwargs: dict[str, Any] = {}
                if sc.attach == 'run':
                    run_kwargs['workspace'] = LocalWorkspaceBackend(root)
                elif sc.attach == 'unavailable':
                    run_kwargs['workspace'] = UnavailableWorkspace('the sandbox was shut down')
                try:
                    result = await agent.run('go', model=model, retries=100, **run_kwargs)
                    messages = result.all_messages()
                except Exception as e:  # noqa: BLE001 - recorded and compared
                    out['run_error'] = {'type': type(e).__name__, 'message': norm.text(str(e))}
                    messages = []
                returned: dict[str, dict[str, Any]] = {}
                for message in messages:
                    if isinstance(message, ModelRequest):
                        for part in message.parts:
                            call_id = getattr(part, 'tool_call_id', None)
                            if call_id is not None:
                                returned[call_id] = _part_record(part, norm)
                out['calls'] = [
                    {'id': i, 'tool': t, 'args': norm.any(a), **returned.get(i, {'outcome': 'missing'})}
                    for t, a, i in step_calls
                ]
                out['events'] = events
                if sc.schemas:
                    out['tools'] = tool_defs
        out['warnings'] = [norm.text(w) for w in _warning_texts(caught)]
        out['disk'] = _snapshot(root, norm)
        if sc.outside:
            out['outside'] = _snapshot(os.path.join(tmp, 'outside'), norm)
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def _run_direct(
    capability: Any, sc: WorkspaceScenario, resolve_args: Any, norm: Normaliser, workspace: Any
) -> dict[str, Any]:
    """The calls on the toolset's direct methods with `workspace=` (no run, so no events)."""
    from pydantic_ai.exceptions import ModelRetry

    toolset = capability.get_toolset()
    calls: list[dict[str, Any]] = []
    for step, call in enumerate(sc.calls):
        args = resolve_args(call.args)
        record: dict[str, Any] = {'id': f'call_{step:02d}', 'tool': call.tool, 'args': norm.any(args)}
        method = getattr(toolset, call.tool, None)
        if method is None or 'replacements' in args:
            record.update(outcome='unsupported')
        else:
            try:
                result = await method(**args, workspace=workspace)
            except ModelRetry as e:
                record.update(outcome='retry', cause='model_retry', content=norm.text(e.message))
            except Exception as e:  # noqa: BLE001 - recorded and compared
                record.update(outcome='error', cause=type(e).__name__, content=norm.text(str(e)))
            else:
                record.update(outcome='ok', cause=None, content=norm.any(result))
        calls.append(record)
    return {'calls': calls, 'events': []}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('module', choices=['pydantic_ai_harness', 'pydantic_ai_harness_rs'])
    parser.add_argument('names', nargs='*', help='scenarios to run (default: all)')
    parser.add_argument('--direct', action='store_true', help="call the toolset's methods with workspace=")
    parser.add_argument('--list', action='store_true', help='print the scenario names and exit')
    args = parser.parse_intermixed_args(argv)
    if args.list:
        print('\n'.join(SCENARIOS))
        return 0
    import anyio

    async def run_all() -> dict[str, Any]:
        results: dict[str, Any] = {}
        for name in args.names or list(SCENARIOS):
            try:
                results[name] = await run_scenario(args.module, SCENARIOS[name], direct=args.direct)
            except Exception as e:  # noqa: BLE001 - one broken scenario must not hide the others
                results[name] = {'runner_error': f'{type(e).__name__}: {e}'}
        return results

    json.dump(anyio.run(run_all), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
