"""FileSystem scenarios on an in-memory workspace (no commands, no host files), run on either side.

`python fs062_remote_scenarios.py reference` runs pydantic-ai-harness 0.62.0's direct tool calls
(`toolset.<tool>(..., workspace=backend)`) in its own venv; `... ours` runs our `RemoteEngine` on
the same backend. Each prints JSON: per scenario, every call's result (`RETRY: <message>` for a
retry) and the backend's files and directories afterwards. `test_fs062_remote_compat.py`
compares the two.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_workspace import LinkedMemoryWorkspace, MemoryWorkspace  # noqa: E402

FILES: dict[str, bytes | str] = {
    'a.txt': 'alpha\nbeta\ngamma\n',
    'notes.md': '# Notes\nTODO: one\nTODO: two\n',
    'src/main.py': 'import os\n\ndef main():\n    return os.getcwd()\n',
    'src/util.py': 'def helper(x):\n    return x * 2\n',
    'src/pkg/deep.py': 'VALUE = 42\n',
    'docs/guide.txt': 'read me\nTODO later\n',
    '.env': 'SECRET=1\n',
    '.hidden/inside.txt': 'TODO hidden\n',
    'logs/app.log': 'TODO log line\n',
    'pic.png': b'\x89PNG\r\n\x1a\n' + bytes(range(40)),
    'data.bin': bytes(range(100)),
    'empty.txt': '',
    'noeol.txt': 'no newline at end',
    'bad.txt': b'caf\xe9 latin-1\n',
    'crlf.txt': 'one\r\ntwo\r\n',
}

READS: list[tuple[str, dict[str, Any]]] = [
    ('read_file', {'path': 'a.txt'}),
    ('read_file', {'path': 'a.txt', 'offset': 1, 'limit': 1}),
    ('read_file', {'path': 'a.txt', 'offset': 9}),
    ('read_file', {'path': 'a.txt', 'offset': -1}),
    ('read_file', {'path': 'a.txt', 'limit': 0}),
    ('read_file', {'path': 'missing.txt'}),
    ('read_file', {'path': 'src'}),
    ('read_file', {'path': 'pic.png'}),
    ('read_file', {'path': 'data.bin'}),
    ('read_file', {'path': 'empty.txt'}),
    ('read_file', {'path': 'noeol.txt'}),
    ('read_file', {'path': 'bad.txt'}),
    ('read_file', {'path': 'src/../a.txt'}),
    ('read_file', {'path': '../outside.txt'}),
    ('read_file', {'path': '/etc/passwd'}),
    ('read_file', {'path': '.env'}),
    ('file_info', {'path': 'a.txt'}),
    ('file_info', {'path': 'src'}),
    ('file_info', {'path': 'data.bin'}),
    ('file_info', {'path': 'missing'}),
    ('file_info', {'path': 'noeol.txt'}),
    ('file_info', {'path': 'bad.txt'}),
]

WALKS: list[tuple[str, dict[str, Any]]] = [
    ('list_directory', {}),
    ('list_directory', {'path': 'src'}),
    ('list_directory', {'path': '.hidden'}),
    ('list_directory', {'path': 'missing'}),
    ('list_directory', {'path': 'a.txt'}),
    ('find_files', {'pattern': '**/*.py'}),
    ('find_files', {'pattern': '*.txt'}),
    ('find_files', {'pattern': 'src/*'}),
    ('find_files', {'pattern': '**'}),
    ('find_files', {'pattern': '*/'}),
    ('find_files', {'pattern': '.*'}),
    ('find_files', {'pattern': '*.py', 'path': 'src'}),
    ('find_files', {'pattern': '../*'}),
    ('find_files', {'pattern': '/abs/*'}),
    ('find_files', {'pattern': '*', 'path': 'missing'}),
    ('find_files', {'pattern': 'nothing*'}),
    ('search_files', {'pattern': 'TODO'}),
    ('search_files', {'pattern': 'return', 'path': 'src'}),
    ('search_files', {'pattern': 'TODO', 'include_glob': '*.md'}),
    ('search_files', {'pattern': 'def', 'include_glob': 'src/*.py'}),
    ('search_files', {'pattern': 'TODO', 'include_glob': '.hidden/*'}),
    ('search_files', {'pattern': 'alpha', 'path': 'a.txt'}),
    ('search_files', {'pattern': 'x', 'path': 'missing'}),
    ('search_files', {'pattern': '(unclosed'}),
    ('search_files', {'pattern': r'caf\S'}),
    ('search_files', {'pattern': 'two$'}),
    ('grep', {'pattern': 'todo', 'ignore_case': True}),
    ('grep', {'pattern': 'x * 2', 'literal': True}),
    ('grep', {'pattern': 'x', 'file_type': 'py'}),
    ('grep', {'pattern': 'x', 'context': 2}),
    ('grep', {'pattern': 'x', 'context': 21}),
    ('list_files', {}),
    ('list_files', {'glob': '*.py'}),
    ('list_files', {'glob': 'src/*.py'}),
    ('list_files', {'path': 'docs'}),
]

CHANGES: list[tuple[str, dict[str, Any]]] = [
    ('write_file', {'path': 'new.txt', 'content': 'hello\nworld\n'}),
    ('read_file', {'path': 'new.txt'}),
    ('write_file', {'path': 'a.txt', 'content': 'replaced\n'}),
    ('write_file', {'path': 'nodir/x.txt', 'content': 'x'}),
    ('write_file', {'path': 'a.txt/x', 'content': 'x'}),
    ('write_file', {'path': 'src', 'content': 'x'}),
    ('write_file', {'path': '.env', 'content': 'x'}),
    ('write_file', {'path': 'key.pem', 'content': 'x'}),
    ('write_file', {'path': '../escape.txt', 'content': 'x'}),
    ('write_file', {'path': 'notes.md', 'content': 'x', 'expected_hash': 'abcdefabcdef'}),
    ('edit_file', {'path': 'src/util.py', 'old_text': 'x * 2', 'new_text': 'x * 3'}),
    ('edit_file', {'path': 'notes.md', 'old_text': 'TODO', 'new_text': 'DONE'}),
    ('edit_file', {'path': 'notes.md', 'old_text': 'absent', 'new_text': 'x'}),
    ('edit_file', {'path': 'notes.md', 'old_text': '', 'new_text': 'x'}),
    ('edit_file', {'path': 'missing.md', 'old_text': 'a', 'new_text': 'b'}),
    ('edit_file', {'path': 'data.bin', 'old_text': 'a', 'new_text': 'b'}),
    ('edit_file', {'path': 'bad.txt', 'old_text': 'caf', 'new_text': 'b'}),
    ('edit_file', {'path': 'crlf.txt', 'old_text': 'one', 'new_text': 'uno', 'expected_hash': '000000000000'}),
    ('edit_file', {'path': 'crlf.txt', 'old_text': 'one', 'new_text': 'uno'}),
    ('create_directory', {'path': 'made/deep/er'}),
    ('create_directory', {'path': 'src'}),
    ('create_directory', {'path': 'a.txt'}),
    ('create_directory', {'path': 'a.txt/sub'}),
    ('create_directory', {'path': '.git/hooks'}),
    ('list_directory', {'path': 'made/deep'}),
]

PATTERNS: list[tuple[str, dict[str, Any]]] = [
    ('read_file', {'path': 'logs/app.log'}),
    ('list_directory', {}),
    ('search_files', {'pattern': 'TODO'}),
    ('find_files', {'pattern': '**/*.log'}),
    ('read_file', {'path': 'src/main.py'}),
    ('read_file', {'path': 'LOGS/app.log'}),
    ('write_file', {'path': 'src/new.py', 'content': 'x = 1\n'}),
]

SMALL_CAPS: list[tuple[str, dict[str, Any]]] = [
    ('list_directory', {}),
    ('find_files', {'pattern': '**'}),
    ('search_files', {'pattern': 'TODO|return|def'}),
    ('read_file', {'path': 'a.txt'}),
]

LINKS: list[tuple[str, dict[str, Any]]] = [
    ('read_file', {'path': 'alias.txt'}),
    ('read_file', {'path': 'escape.txt'}),
    ('read_file', {'path': 'envlink'}),
    ('write_file', {'path': 'envlink', 'content': 'x'}),
    ('search_files', {'pattern': 'TODO|alpha'}),
    ('find_files', {'pattern': '**/*.txt'}),
    ('list_directory', {'path': 'srclink'}),
]

SCENARIOS: list[dict[str, Any]] = [
    {'name': 'reads', 'calls': READS},
    {'name': 'walks', 'calls': WALKS},
    {
        'name': 'deliberate',
        'calls': [
            # 0.62.0 refuses nested repetition on this path (its Python `re` could backtrack for
            # ever); the core's regex engine runs in linear time, so it searches.
            ('search_files', {'pattern': '(TO+)+DO'}),
            ('search_files', {'pattern': '(a|b+)*c'}),
        ],
    },
    {'name': 'changes', 'calls': CHANGES},
    {
        'name': 'patterns',
        'options': {'denied_patterns': ['logs'], 'allowed_patterns': ['*.md', 'src/*', 'logs/*', '.', 'docs/*']},
        'calls': PATTERNS,
    },
    {
        'name': 'small_caps',
        'options': {'max_list_results': 3, 'max_find_results': 4, 'max_search_results': 2, 'max_read_lines': 2},
        'calls': SMALL_CAPS,
    },
    {
        'name': 'no_hashes',
        'options': {'content_hashes': False, 'max_read_chars': 120},
        'calls': [
            ('read_file', {'path': 'a.txt'}),
            ('read_file', {'path': 'data.bin'}),
            ('write_file', {'path': 'z.txt', 'content': 'z\n'}),
        ],
    },
    {
        # More directories than one walk lists: both stop and say so.
        'name': 'walk_cap',
        'dirs': 10_050,
        'calls': [('find_files', {'pattern': '**/*.txt'}), ('search_files', {'pattern': 'TODO'})],
    },
    {
        'name': 'links',
        'links': {
            'alias.txt': '/ws/a.txt',
            'escape.txt': '/outside/secret.txt',
            'envlink': '/ws/.env',
            'srclink': '/ws/src',
            'dangling.txt': '/ws/nothing',
        },
        'calls': LINKS,
    },
]


def backend(scenario: dict[str, Any]) -> MemoryWorkspace:
    if 'links' in scenario:
        ws = LinkedMemoryWorkspace(FILES, symlinks=scenario['links'])
        ws._put('/outside/secret.txt', b'TODO outside\n')
        return ws
    ws = MemoryWorkspace(FILES)
    for index in range(scenario.get('dirs', 0)):
        ws._add_dir(f'/ws/many/d{index:05}')
    return ws


def state(ws: MemoryWorkspace) -> dict[str, Any]:
    return {
        'files': {path: data.decode('latin-1') for path, data in sorted(ws.files.items())},
        'dirs': sorted(ws.dirs),
    }


def media(result: Any) -> str:
    if isinstance(result, list):
        return ''.join(
            part if isinstance(part, str) else f'<{part.media_type} {len(part.data)} bytes>' for part in result
        )
    return result


async def reference(scenario: dict[str, Any]) -> dict[str, Any]:
    from pydantic_ai.exceptions import ModelRetry
    from pydantic_ai_harness.filesystem import FileSystem

    toolset = FileSystem(**scenario.get('options', {})).get_toolset()
    ws = backend(scenario)
    results = []
    for tool, kwargs in scenario['calls']:
        try:
            results.append(media(await getattr(toolset, tool)(**kwargs, workspace=ws)))
        except ModelRetry as e:
            results.append(f'RETRY: {e.message}')
        except Exception as e:  # noqa: BLE001 -- recorded, compared
            results.append(f'ERROR: {type(e).__name__}: {e}')
    return {'results': results, **state(ws)}


_OURS_DEFAULTS: dict[str, Any] = {
    'read_only_patterns': [
        '**/.git',
        '**/.env',
        '**/.env.*',
        '*.pem',
        '*.key',
        '**/secrets*',
        '**/.pydantic-ai-harness/**',
    ],
    'max_read_chars': 50_000,
    'max_list_results': 1000,
    'max_search_results': 1000,
    'max_find_results': 1000,
}


async def ours_call(engine: Any, tool: str, kwargs: dict[str, Any]) -> str:
    if tool == 'read_file':
        outcome, content = await engine.read_file(kwargs['path'], kwargs.get('offset', 0), kwargs.get('limit'))
        return outcome.text if content is None else f'{outcome.text}<{content.media_type} {len(content.data)} bytes>'
    if tool == 'write_file':
        plan = await engine.plan_write(kwargs['path'], kwargs['content'], kwargs.get('expected_hash'), False)
        return (await engine.commit(plan)).text
    if tool == 'edit_file':
        plan = await engine.plan_edit(
            kwargs['path'], [(kwargs['old_text'], kwargs['new_text'])], kwargs.get('expected_hash')
        )
        return (await engine.commit(plan)).text
    if tool == 'create_directory':
        plan = await engine.plan_create_directory(kwargs['path'])
        return f'Created directory: {kwargs["path"]}' if plan is None else (await engine.commit(plan)).text
    return (await getattr(engine, tool)(**kwargs)).text


async def ours(scenario: dict[str, Any]) -> dict[str, Any]:
    from pydantic_ai_harness_rs._core import RetryableError
    from pydantic_ai_harness_rs.filesystem._remote import RemoteEngine

    engine = RemoteEngine(backend_ws := backend(scenario), **{**_OURS_DEFAULTS, **scenario.get('options', {})})
    results = []
    for tool, kwargs in scenario['calls']:
        try:
            results.append(await ours_call(engine, tool, kwargs))
        except RetryableError as e:
            results.append(f'RETRY: {e}')
        except Exception as e:  # noqa: BLE001 -- recorded, compared
            results.append(f'ERROR: {type(e).__name__}: {e}')
    return {'results': results, **state(backend_ws)}


async def main(side: str) -> None:
    run = reference if side == 'reference' else ours
    out = {scenario['name']: await run(scenario) for scenario in SCENARIOS}
    print(json.dumps(out))


if __name__ == '__main__':
    anyio.run(main, sys.argv[1])
