"""Describe a FileSystem package's event classes, and check listener interop between two packages.

`python fs_events_probe.py describe MODULE` prints, per event class exported by
`MODULE.filesystem`: its kind, dispatch mode, base classes (by name), fields with defaults,
and the module that defines it.

`python fs_events_probe.py interop` (run where both `pydantic_ai_harness` and
`pydantic_ai_harness_rs` import) prints whether our event classes *are* the reference's, and
what listeners registered with the reference's classes received from a run of our FileSystem.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import shutil
import sys
import tempfile
from typing import Any

EVENT_NAMES = (
    'FileChangeRequestEvent',
    'FileReadEvent',
    'DirectoryListedEvent',
    'FileWrittenEvent',
    'FileEditedEvent',
    'DirectoryCreatedEvent',
    'FilesSearchedEvent',
)
CONSTANT_NAMES = ('FILE_SYSTEM_EVENTS', 'MAX_EVENT_DIFF_CHARS', 'MAX_DIFF_SOURCE_CHARS')


def describe(module: str) -> dict[str, Any]:
    fs = importlib.import_module(f'{module}.filesystem')
    out: dict[str, Any] = {'constants': {name: getattr(fs, name, '<missing>') for name in CONSTANT_NAMES}}
    for name in EVENT_NAMES:
        cls = getattr(fs, name, None)
        if cls is None:
            out[name] = '<missing>'
            continue
        fields = []
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else '<required>'
            fields.append([f.name, repr(default), f.kw_only])
        out[name] = {
            'kind': cls._registered_kind,
            'dispatch': cls.event_dispatch,
            'bases': [base.__name__ for base in cls.__mro__[1:] if base is not object],
            'fields': fields,
            'has_cancel': callable(getattr(cls, 'cancel', None)),
            'defined_in': cls.__module__.split('.')[0],
        }
    return out


def interop() -> dict[str, Any]:
    import anyio
    from fs_scenarios import scripted_model
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelRequest

    ref = importlib.import_module('pydantic_ai_harness.filesystem')
    ours = importlib.import_module(f'{os.environ.get("FS_COMPAT_OURS_MODULE", "pydantic_ai_harness_rs")}.filesystem')
    out: dict[str, Any] = {'same_class': {name: getattr(ours, name) is getattr(ref, name) for name in EVENT_NAMES}}

    calls = [
        ('write_file', {'path': 'a.txt', 'content': 'changed\n'}),
        ('write_file', {'path': 'b.txt', 'content': 'new\n'}),
        ('edit_file', {'path': 'b.txt', 'old_text': 'new', 'new_text': 'edited'}),
        ('read_file', {'path': 'b.txt'}),
    ]

    def next_call(step: int, info: Any) -> tuple[str, dict[str, Any], str] | None:
        return (*calls[step], f'call_{step}') if step < len(calls) else None

    tmp = tempfile.mkdtemp(prefix='fsinterop-')
    try:
        with open(os.path.join(tmp, 'a.txt'), 'w') as f:
            f.write('original\n')
        agent = Agent(
            scripted_model(next_call),
            capabilities=[ours.FileSystem(root_dir=tmp)],
            retries=10,
        )
        seen: dict[str, list[str]] = {'change_requests': [], 'writes': [], 'reads': []}

        @agent.on_event(ref.FileChangeRequestEvent)
        async def veto(ctx: Any, event: Any) -> None:  # pyright: ignore[reportUnusedFunction]
            seen['change_requests'].append(f'{type(event).__module__}.{type(event).__name__}:{event.path}')
            if event.path == 'a.txt':
                event.cancel('held by a reference listener')

        @agent.on_event(ref.FileWrittenEvent)
        async def writes(ctx: Any, event: Any) -> None:  # pyright: ignore[reportUnusedFunction]
            seen['writes'].append(f'{type(event).__name__}:{event.path}')

        @agent.on_event(ref.FileReadEvent)
        async def reads(ctx: Any, event: Any) -> None:  # pyright: ignore[reportUnusedFunction]
            seen['reads'].append(f'{type(event).__name__}:{event.path}')

        async def run() -> Any:
            return await agent.run('go')

        result = anyio.run(run)
        returned = [
            part.content
            for message in result.all_messages()
            if isinstance(message, ModelRequest)
            for part in message.parts
            if getattr(part, 'tool_call_id', None) is not None
        ]
        with open(os.path.join(tmp, 'a.txt')) as f:
            a_after = f.read()
        out.update(seen=seen, returned=returned, a_after=a_after)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> int:
    if sys.argv[1] == 'describe':
        result = describe(sys.argv[2])
    else:
        result = interop()
    json.dump(result, sys.stdout, indent=1, sort_keys=True, default=str)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
