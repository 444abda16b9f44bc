"""`python -m pydantic_ai_harness_rs demo [DIR]`: a Pydantic AI agent using every tool on a real tree.

Without `--model` the agent's model is a script (no API key needed) that explores DIR read-only
(list, find, search, read with paging, file_info, and the ripgrep tools), then copies the file it
read into a scratch directory and changes only that copy (create, write, edit, refused writes);
if `Shell` is available it also runs a command and a background job there. DIR is never written.
The transcript shows each tool call, the first lines of its result, the events, and the time.
With `--model NAME` a real model gets the same tools and a prompt instead of the script.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
from pydantic_ai import Agent, CapabilityEvent
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from pydantic_ai_harness_rs.filesystem import FileSystem

Step = Callable[[str], 'tuple[str, dict[str, Any]] | None']
"""Given the previous tool result, the next `(tool, args)` call, or None to skip this step."""

_RESULT_LINES = 6
_EMPTY_RESULTS = ('No matches found.', 'No files found.', '(empty directory)')


def _first_file(listing: str) -> str | None:
    """The first file of a listing, preferring one that is not a package's `__init__.py`."""
    files = [
        line
        for line in listing.splitlines()
        if line and not line.endswith('/') and not line.startswith('[') and line not in _EMPTY_RESULTS
    ]
    return next((f for f in files if not f.endswith('__init__.py')), files[0] if files else None)


def _next_page(result: str) -> int | None:
    """The offset a read_file continuation hint names, if the read was cut."""
    match = re.search(r'Use offset=(\d+) to continue reading', result)
    return int(match.group(1)) if match else None


class _Script:
    """A scripted model: each step sees the previous tool result and picks the next call."""

    def __init__(self, steps: list[Step], final: str) -> None:
        self.steps = steps
        self.final = final
        self.index = 0

    def _next(self, messages: list[ModelMessage]) -> ModelResponse:
        last = ''
        if messages and isinstance(messages[-1], ModelRequest):
            parts = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
            last = str(parts[-1].content) if parts else ''
        while self.index < len(self.steps):
            call = self.steps[self.index](last)
            self.index += 1
            if call is not None:
                name, args = call
                return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f'demo-{self.index}')])
        return ModelResponse(parts=[TextPart(self.final)])

    def model(self) -> FunctionModel:
        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            return self._next(messages)

        async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
            for part in self._next(messages).parts:
                if isinstance(part, ToolCallPart):
                    yield {0: DeltaToolCall(part.tool_name, json.dumps(part.args), tool_call_id=part.tool_call_id)}
                elif isinstance(part, TextPart):
                    yield part.content

        return FunctionModel(respond, stream_function=stream)


class _Transcript:
    """Prints tool calls, cut results, events and the time each call took."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.started: dict[str, float] = {}
        self.calls = 0

    def attach(self, agent: Agent[Any, Any]) -> None:
        @agent.on_event
        async def show(ctx: Any, event: Any) -> None:
            self.event(event)

    def event(self, event: Any) -> None:
        if isinstance(event, FunctionToolCallEvent):
            self.calls += 1
            self.started[event.part.tool_call_id] = time.perf_counter()
            args = ', '.join(f'{k}={v!r}' for k, v in event.part.args_as_dict().items())
            self.print(f'\n→ {event.part.tool_name}({_cut(args, 160)})')
        elif isinstance(event, FunctionToolResultEvent):
            elapsed = time.perf_counter() - self.started.pop(event.part.tool_call_id, time.perf_counter())
            content = str(event.part.content)
            retried = getattr(event.part, 'outcome', None) == 'retried' or event.part.part_kind == 'retry-prompt'
            lines = content.splitlines() or ['']
            label = 'retry' if retried else 'result'
            self.print(f'  ← {label} in {elapsed * 1000:.2f} ms ({len(content)} chars, {len(lines)} lines)')
            for line in lines[:_RESULT_LINES]:
                self.print(f'    │ {_cut(line, 150)}')
            if len(lines) > _RESULT_LINES:
                self.print(f'    │ … {len(lines) - _RESULT_LINES} more lines')
        elif isinstance(event, CapabilityEvent):
            fields = {
                k: v
                for k, v in vars(event).items()
                if k
                not in {
                    'kind',
                    'capability_id',
                    'tool_call_id',
                    'tool_name',
                    'event_kind',
                    'root_dir',
                    'cancelled',
                    'cancel_reason',
                }
            }
            shown = ', '.join(f'{k}={_cut(repr(v), 80)}' for k, v in fields.items())
            self.print(f'  ⚑ {event.kind}: {shown}')

    def print(self, text: str) -> None:
        print(text, file=self.out, flush=True)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + '…'


def _explore_steps(has_rg: bool) -> tuple[list[Step], dict[str, str]]:
    """Read-only steps over the user's tree; `chosen['file']` is the file they settle on."""
    chosen: dict[str, str] = {}

    def pick(result: str) -> tuple[str, dict[str, Any]] | None:
        found = _first_file(result)
        if found is None:
            return None
        chosen['file'] = found
        return ('file_info', {'path': found})

    def fallback_find(result: str) -> tuple[str, dict[str, Any]] | None:
        return None if _first_file(result) else ('find_files', {'pattern': '**/*'})

    steps: list[Step] = [
        lambda _: ('list_directory', {'path': '.'}),
        lambda _: ('find_files', {'pattern': '**/*.py'}),
        fallback_find,
        pick,
        lambda _: ('read_file', {'path': chosen['file'], 'limit': 10}) if 'file' in chosen else None,
        # Page on from where the first window stopped, as its continuation hint says.
        lambda last: (
            ('read_file', {'path': chosen['file'], 'offset': offset, 'limit': 10})
            if 'file' in chosen and (offset := _next_page(last)) is not None
            else None
        ),
        lambda _: ('search_files', {'pattern': r'\b(TODO|FIXME|def main)\b'}),
        lambda _: ('read_file', {'path': '../outside-the-root.txt'}),
    ]

    def glob() -> str:
        suffix = Path(chosen.get('file', 'x.py')).suffix
        return f'*{suffix}' if suffix else '*'

    if has_rg:
        steps += [
            lambda _: ('list_files', {'path': '.', 'glob': glob()}),
            lambda _: ('grep', {'pattern': r'^(def|fn|class|import|use) ', 'context': 1, 'glob': glob()}),
        ]
    return steps, chosen


def _change_steps(name: str) -> list[Step]:
    """Steps that change the scratch copy: create, write, read back, edit by hash, refused writes."""
    note = f'# Notes on {name}\n\nstatus: draft\nowner: demo\n'

    def edit_with_hash(result: str) -> tuple[str, dict[str, Any]]:
        match = re.search(r'hash:([0-9a-f]{12})', result)
        args: dict[str, Any] = {'path': 'notes/summary.md', 'old_text': 'status: draft', 'new_text': 'status: reviewed'}
        if match:
            args['expected_hash'] = match.group(1)
        return ('edit_file', args)

    return [
        lambda _: ('create_directory', {'path': 'notes'}),
        lambda _: ('write_file', {'path': 'notes/summary.md', 'content': note}),
        lambda _: ('read_file', {'path': 'notes/summary.md'}),
        edit_with_hash,
        lambda _: (
            'edit_file',
            {
                'path': 'notes/summary.md',
                'replacements': [
                    {'old_text': 'owner: demo', 'new_text': 'owner: pydantic-ai-harness-rs'},
                    {'old_text': '# Notes', 'new_text': '# Reviewed notes'},
                ],
            },
        ),
        lambda _: ('edit_file', {'path': 'notes/summary.md', 'old_text': 'not there', 'new_text': 'x'}),
        lambda _: ('write_file', {'path': '.env', 'content': 'TOKEN=leak\n'}),
        lambda _: ('list_directory', {'path': 'notes'}),
    ]


def _shell_steps() -> list[Step]:
    job: dict[str, str] = {}

    def remember(result: str) -> tuple[str, dict[str, Any]] | None:
        # start_command answers 'Started background command: ...\nID: <id>'.
        match = re.search(r'^ID: (\S+)$', result, re.MULTILINE)
        job['id'] = match.group(1) if match else ''
        return ('check_command', {'command_id': job['id']})

    return [
        lambda _: ('run_command', {'command': 'ls -la && wc -l notes/summary.md'}),
        lambda _: ('run_command', {'command': 'rm -rf notes'}),
        lambda _: ('start_command', {'command': 'for i in 1 2 3; do echo tick $i; sleep 0.2; done; sleep 30'}),
        remember,
        lambda _: ('stop_command', {'command_id': job.get('id', '')}),
    ]


def _shell_capabilities(scratch: Path) -> list[Any]:
    try:
        from pydantic_ai.capabilities import LocalWorkspace

        from pydantic_ai_harness_rs import Shell  # type: ignore[attr-defined]
    except ImportError:
        return []
    return [LocalWorkspace(str(scratch)), Shell()]


async def _run_model(directory: Path, model_name: str, transcript: _Transcript) -> int:
    """A real model with the same tools, on a scratch copy of `directory` that is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix='harness-rs-demo-') as tmp:
        copy = Path(tmp) / 'copy'
        shutil.copytree(directory, copy, ignore=shutil.ignore_patterns('.*'))
        capabilities = [FileSystem(root_dir=copy), *_shell_capabilities(copy)]
        try:
            agent: Agent[Any, Any] = Agent(model_name, capabilities=capabilities)
        except (ImportError, UserError) as e:
            # A provider package missing (`pip install "pydantic-ai-slim[openai]"`) or an unknown name.
            transcript.print(f'cannot use model {model_name!r}: {e}')
            return 2
        transcript.attach(agent)
        result = await agent.run('Explore this project with your tools, then write notes/summary.md describing it.')
        transcript.print(f'\nmodel: {result.output}\n(changes were made in a scratch copy, now removed)')
    return 0


async def _run(directory: Path, model_name: str | None, out: Any) -> int:
    transcript = _Transcript(out)
    header = f'pydantic-ai-harness-rs demo on {directory}'
    transcript.print(header + '\n' + '=' * len(header))
    explore = FileSystem(
        root_dir=directory,
        read_only=True,
        tools=['read_file', 'list_directory', 'search_files', 'find_files', 'file_info', 'list_files', 'grep'],
    )
    if model_name is not None:
        return await _run_model(directory, model_name, transcript)

    steps, chosen = _explore_steps(has_rg=True)
    transcript.print(f'\n## 1. Explore {directory} (read-only tools)')
    agent = Agent(_Script(steps, 'explored').model(), capabilities=[explore], retries=100)
    transcript.attach(agent)
    started = time.perf_counter()
    await agent.run('Explore this directory.')

    with tempfile.TemporaryDirectory(prefix='harness-rs-demo-') as tmp:
        scratch = Path(tmp)
        if 'file' in chosen:
            source = (directory / chosen['file']).resolve()
            if source.is_file() and source.stat().st_size < 50_000_000:
                shutil.copyfile(source, scratch / source.name)
        transcript.print(f'\n## 2. Change a scratch copy ({scratch}); {directory} is not touched')
        changes = FileSystem(root_dir=scratch)
        agent = Agent(
            _Script(_change_steps(chosen.get('file', 'the project')), 'changed').model(),
            capabilities=[changes],
            retries=100,
        )
        transcript.attach(agent)
        await agent.run('Write notes about the project.')

        shell = _shell_capabilities(scratch)
        if shell:
            transcript.print('\n## 3. Run commands in the scratch copy (Shell)')
            agent = Agent(_Script(_shell_steps(), 'ran').model(), capabilities=shell, retries=100)
            transcript.attach(agent)
            await agent.run('Run a command and a background job.')
    total = time.perf_counter() - started
    transcript.print(f'\n{transcript.calls} tool calls in {total:.2f} s. Done.')
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m pydantic_ai_harness_rs`; returns the exit status."""
    parser = argparse.ArgumentParser(prog='python -m pydantic_ai_harness_rs', description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True)
    demo = sub.add_parser('demo', help='run a demo agent over a directory (no API key needed)')
    demo.add_argument('dir', nargs='?', default='.', help='the directory to explore (default: .); never modified')
    demo.add_argument('--model', default=None, help='a real model name (e.g. openai:gpt-5) instead of the script')
    args = parser.parse_args(argv)
    directory = Path(args.dir).resolve()
    if not directory.is_dir():
        parser.error(f'not a directory: {args.dir}')
    return anyio.run(_run, directory, args.model, sys.stdout)
