"""FileSystem scenarios on an in-memory workspace (no commands, no host files), run on either side.

`python fs062_remote_scenarios.py reference` runs pydantic-ai-harness 0.62.0's direct tool calls
(`toolset.<tool>(..., workspace=backend)`) in its own venv; `... ours` runs our `RemoteEngine` on
the same backend. Each prints JSON: per scenario, every call's result (`RETRY: <message>` for a
retry) and the backend's files and directories afterwards. `test_fs062_remote_compat.py`
compares the two. The scenarios are `fs_scenarios.py`'s `REMOTE_SCENARIOS`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fs_scenarios import REMOTE_FILES as FILES  # noqa: E402
from fs_scenarios import REMOTE_SCENARIOS as SCENARIOS  # noqa: E402
from memory_workspace import LinkedMemoryWorkspace, MemoryWorkspace  # noqa: E402


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
    for call in scenario['calls']:
        try:
            results.append(media(await getattr(toolset, call.tool)(**call.args, workspace=ws)))
        except ModelRetry as e:
            results.append(f'RETRY: {e.message}')
        except Exception as e:  # noqa: BLE001 -- recorded, compared
            results.append(f'ERROR: {type(e).__name__}: {e}')
    return {'results': results, **state(ws)}


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
    from pydantic_ai_harness_rs.filesystem import DEFAULT_READ_ONLY_PATTERNS
    from pydantic_ai_harness_rs.filesystem._defaults import WORKSPACE_MAX_READ_CHARS
    from pydantic_ai_harness_rs.filesystem._remote import RemoteEngine

    # 0.62.0's defaults, as `FileSystem()` on a workspace passes them.
    defaults: dict[str, Any] = {
        'read_only_patterns': list(DEFAULT_READ_ONLY_PATTERNS),
        'max_read_chars': WORKSPACE_MAX_READ_CHARS,
        'max_list_results': 1000,
        'max_search_results': 1000,
        'max_find_results': 1000,
    }
    engine = RemoteEngine(backend_ws := backend(scenario), **{**defaults, **scenario.get('options', {})})
    results = []
    for call in scenario['calls']:
        try:
            results.append(await ours_call(engine, call.tool, call.args))
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
