"""A small file change's checkpoint is recorded once its tool call has returned (off the call's
path), before anything else reads the store: this process's next call or listing, the event loop's
next iteration, or another process (which waits for the store's lock until then)."""

from __future__ import annotations

import asyncio
import fcntl
import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ToolCallPart
from pydantic_ai_harness_rs import Checkpoints, FileSystem

pytestmark = pytest.mark.anyio

LISTING = """
import json, sys
from pydantic_ai_harness_rs import Checkpoints
print(json.dumps([(c['tool_call_id'], c['paths']) for c in Checkpoints(root=sys.argv[1]).list()]))
"""


def lock_is_free(ws: Path) -> bool:
    """Whether the store's lock can be taken through another open file (as another process would)."""
    with open(ws / '.pydantic-ai-harness' / 'checkpoints' / 'lock', 'rb') as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


def listed_by_another_process(ws: Path) -> list[list[Any]]:
    out = subprocess.run([sys.executable, '-c', LISTING, str(ws)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


class Edits:
    """`edit_file` calls through the capability's hook, as an agent run makes them."""

    def __init__(self, ws: Path, cp: Checkpoints[Any]) -> None:
        self.toolset = FileSystem(root_dir=ws).get_toolset()
        self.cp = cp
        self.ctx: Any = types.SimpleNamespace(run_id='run-1', workspace=None)
        self.n = 0

    async def edit(self, old: str, new: str) -> str:
        self.n += 1
        part = ToolCallPart(tool_name='edit_file', args={}, tool_call_id=f'call-{self.n}')

        async def handler(args: Any) -> Any:
            return await self.toolset.edit_file('a.txt', old, new)

        return await self.cp.wrap_tool_execute(self.ctx, call=part, tool_def=Any, args={}, handler=handler)


async def test_an_edits_checkpoint_is_recorded_at_the_loops_next_iteration_and_other_processes_wait(
    ws: Path,
) -> None:
    (ws / 'a.txt').write_text('one\n')
    cp = Checkpoints[Any](root=ws)
    edits = Edits(ws, cp)
    assert (await edits.edit('one', 'two')).startswith('Edited a.txt.')
    await asyncio.sleep(0.05)
    assert lock_is_free(ws)

    assert (await edits.edit('two', 'three')).startswith('Edited a.txt.')
    assert (ws / 'a.txt').read_text() == 'three\n'
    # Returned before its record: the store stays locked, so no other process reads it half recorded.
    assert not lock_is_free(ws)
    await asyncio.sleep(0)  # the loop's next iteration records it
    assert listed_by_another_process(ws) == [['call-1', ['a.txt']], ['call-2', ['a.txt']]]
    assert lock_is_free(ws)
    result = await cp.rewind(to=cp.list()[1]['id'])
    assert result['restored'] == ['a.txt']
    assert (ws / 'a.txt').read_text() == 'two\n'


async def test_a_listing_or_a_call_right_after_an_edit_finds_its_checkpoint(ws: Path) -> None:
    (ws / 'a.txt').write_text('one\n')
    cp = Checkpoints[Any](root=ws)
    edits = Edits(ws, cp)
    await edits.edit('one', 'two')
    await asyncio.sleep(0)
    # No `await` between the call and the listing: the listing records it first.
    await edits.edit('two', 'three')
    assert [c['tool_call_id'] for c in cp.list()] == ['call-1', 'call-2']
    # Nor between two calls: the second records the first's before its own.
    await edits.edit('three', 'four')
    await edits.edit('four', 'five')
    listed = cp.list()
    assert [c['tool_call_id'] for c in listed] == ['call-1', 'call-2', 'call-3', 'call-4']
    assert [c['paths'] for c in listed] == [['a.txt']] * 4
    diffs = [await cp.diff(c['id']) for c in listed]
    assert [[(path, text.splitlines()[-2:]) for path, text in d] for d in diffs] == [
        [('a.txt', lines)]
        for lines in (
            ['-one', '+two'],
            ['-two', '+three'],
            ['-three', '+four'],
            ['-four', '+five'],
        )
    ]
    result = await cp.rewind(to=listed[1]['id'])
    assert result['restored'] == ['a.txt']
    assert (ws / 'a.txt').read_text() == 'two\n'
    assert [c['tool_call_id'] for c in cp.list()] == ['call-1']


TWO_STORES = """
import asyncio, json, sys, types
from typing import Any
from pydantic_ai.messages import ToolCallPart
from pydantic_ai_harness_rs import Checkpoints, FileSystem

async def main() -> None:
    root = sys.argv[1]
    edits = Checkpoints(root=root)
    other = Checkpoints(root=root, exclude=['.git/', 'build/'])  # other settings: a store of its own
    toolset = FileSystem(root_dir=root).get_toolset()
    ctx: Any = types.SimpleNamespace(run_id='run-1', workspace=None)
    for n, (old, new) in enumerate([('one', 'two'), ('two', 'three')], 1):
        part = ToolCallPart(tool_name='edit_file', args={}, tool_call_id=f'call-{n}')

        async def handler(args: Any, old: str = old, new: str = new) -> Any:
            return await toolset.edit_file('a.txt', old, new)

        await edits.wrap_tool_execute(ctx, call=part, tool_def=Any, args={}, handler=handler)
        if n == 1:
            await asyncio.sleep(0.05)
    # Right after the call, on the loop (no await): the other store's blocking listing waits for
    # the store's lock, which this process holds until the first store records its call.
    print(json.dumps([c['tool_call_id'] for c in other.list()]))

asyncio.run(main())
"""


def test_a_blocking_listing_of_another_store_on_the_root_right_after_an_edit_does_not_wait_for_itself(
    ws: Path,
) -> None:
    (ws / 'a.txt').write_text('one\n')
    out = subprocess.run([sys.executable, '-c', TWO_STORES, str(ws)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ['call-1', 'call-2']


STOPPED_LOOP = """
import asyncio, sys, types
from typing import Any
from pydantic_ai.messages import ToolCallPart
from pydantic_ai_harness_rs import Checkpoints, FileSystem

root = sys.argv[1]
cp = Checkpoints(root=root)
toolset = FileSystem(root_dir=root).get_toolset()
ctx: Any = types.SimpleNamespace(run_id='run-1', workspace=None)

async def edit(n: int, old: str, new: str) -> Any:
    part = ToolCallPart(tool_name='edit_file', args={}, tool_call_id=f'call-{n}')

    async def handler(args: Any) -> Any:
        return await toolset.edit_file('a.txt', old, new)

    return await cp.wrap_tool_execute(ctx, call=part, tool_def=Any, args={}, handler=handler)

async def main() -> None:
    await edit(1, 'one', 'two')
    await asyncio.sleep(0.05)
    await edit(2, 'two', 'three')
    asyncio.get_running_loop().stop()  # right after the call: the loop never iterates again

loop = asyncio.new_event_loop()
loop.create_task(main())
loop.run_forever()
print('stopped', flush=True)
# A normal exit, the loop never closed: the last edit's record is made at exit. (The first edit ran
# in a worker thread of anyio's, which waits for its unclosed loop for ever: the interpreter would
# wait for that thread at exit, with or without `Checkpoints`. Not what is tested here.)
import threading
with threading._shutdown_locks_lock:
    threading._shutdown_locks.clear()
"""


def test_a_loop_stopped_right_after_an_edit_and_never_closed_still_records_it_at_exit(ws: Path) -> None:
    (ws / 'a.txt').write_text('one\n')
    out = subprocess.run([sys.executable, '-c', STOPPED_LOOP, str(ws)], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, 'stopped\n'), out.stderr
    assert (ws / 'a.txt').read_text() == 'three\n'
    assert listed_by_another_process(ws) == [['call-1', ['a.txt']], ['call-2', ['a.txt']]]
    assert lock_is_free(ws)
