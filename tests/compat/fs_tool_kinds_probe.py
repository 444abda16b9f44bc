"""Our FileSystem's tool kinds as another pydantic-ai release (and pydantic-ai-harness, if any) sees them.

Usage: `python fs_tool_kinds_probe.py` in an interpreter where `pydantic_ai_harness_rs` imports
(its venv's `pydantic-ai-slim`, our package on `PYTHONPATH`). Prints JSON:

- `kinds_supported`, `exported`: whether our tools carry kinds on this release, and which of
  the 32 kind names `pydantic_ai_harness_rs.filesystem` exports.
- `same_objects`: with `pydantic-ai-harness` 0.59+ importable, whether each of those names is
  *its* object (so a typed part in a loaded history is one class).
- `tools_offered`, `tool_kinds`: the tools a run offers with our FileSystem, a LocalWorkspace and
  (where installed) the harness's `ToolOutputLimits`; `tools_offered_without_read_file`: the same
  with our FileSystem offering only `write_file`.
- `call_parts`: per tool call of the run, the class (module-qualified) and `typed_args`.
- `results`: what the model received.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import tempfile
from pathlib import Path
from typing import Any

CALLS = [
    ('read_file', {'path': 'a.txt', 'offset': 1}),
    ('write_file', {'path': 'b.txt', 'content': 'new\n'}),
    ('edit_file', {'path': 'b.txt', 'replacements': [{'old_text': 'new', 'new_text': 'edited'}]}),
]


def _qualname(cls: type) -> str:
    return f'{cls.__module__.split(".")[0]}.{cls.__qualname__}'


async def _run(root: Path, tools: list[str] | None) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import LocalWorkspace
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai_harness_rs.filesystem import FileSystem

    capabilities: list[Any] = [
        LocalWorkspace(str(root)),
        FileSystem(root_dir=root, **({'tools': tools} if tools else {})),
    ]
    try:
        from pydantic_ai_harness import ToolOutputLimits  # pyright: ignore[reportMissingImports]
    except ImportError:
        pass
    else:
        capabilities.append(ToolOutputLimits())
    offered: list[dict[str, Any]] = []
    calls = CALLS if tools is None else []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        step = sum(1 for m in messages if isinstance(m, ModelRequest)) - 1
        if step == 0:
            offered.extend({'name': t.name, 'kind': getattr(t, 'tool_kind', None)} for t in info.function_tools)
        if step < len(calls):
            name, args = calls[step]
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f'call_{step}')])
        return ModelResponse(parts=[TextPart('done')])

    result = await Agent(FunctionModel(model), capabilities=capabilities).run('go')
    messages = result.all_messages()
    return {
        'offered': sorted(offered, key=lambda t: t['name']),
        'call_parts': [
            {'class': _qualname(type(p)), 'typed_args': getattr(p, 'typed_args', None)}
            for m in messages
            if isinstance(m, ModelResponse)
            for p in m.parts
            if isinstance(p, ToolCallPart)
        ],
        'return_parts': [
            _qualname(type(p))
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ],
        'results': [
            p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)
        ],
    }


def main() -> None:
    from pydantic_ai_harness_rs.filesystem import _tool_kinds

    ours = importlib.import_module('pydantic_ai_harness_rs.filesystem')
    names = [*_tool_kinds.KIND_NAMES, *_tool_kinds.ARGS_NAMES, *_tool_kinds.PART_NAMES]
    out: dict[str, Any] = {
        'kinds_supported': _tool_kinds.TOOL_KINDS_SUPPORTED,
        'exported': sorted(n for n in names if n in ours.__all__ and hasattr(ours, n)),
    }
    try:
        ref = importlib.import_module('pydantic_ai_harness.filesystem')
    except ImportError:
        ref = None
    if ref is not None and hasattr(ref, 'READ_FILE_KIND'):
        out['same_objects'] = {n: getattr(ours, n, None) is getattr(ref, n) for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / 'a.txt').write_text('alpha\nbeta\n')
        run = asyncio.run(_run(root, None))
        bare = asyncio.run(_run(root, ['write_file']))
    out.update(
        tools_offered=[t['name'] for t in run['offered']],
        tool_kinds={t['name']: t['kind'] for t in run['offered']},
        tools_offered_without_read_file=[t['name'] for t in bare['offered']],
        call_parts=run['call_parts'],
        return_parts=run['return_parts'],
        results=run['results'],
    )
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == '__main__':
    main()
