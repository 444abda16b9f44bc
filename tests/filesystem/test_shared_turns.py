"""Parallel changes of one file take turns on every backend kind, however each call reaches it (issue 20, item 1).

A change (`write_file`, `edit_file`, `create_directory`) holds its file's turn from plan to commit.
The turn belongs to the storage, not to the object a call came through: two direct calls that each
wrap the backend in a fresh `Workspace(...)` (or read-only / durable wrapper) must still take turns,
or the later one plans against bytes the earlier one is replacing and its commit drops that change.

Each case runs one pair of change calls concurrently, then the same pair one after the other in
both orders on fresh copies: the concurrent run must answer and leave exactly what one of the two
sequential orders does (a lost edit matches neither). Backends: a local directory (native path), an
in-memory backend and a protocol-path local directory whose reads and writes take a while, a
commands-only shell sandbox, a read-only wrapper (changes refused, nothing lost) and Pydantic AI's
durable wrapper (as a tool inside a DBOS step or Prefect task sees it: calls pass straight through).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.workspaces import LocalWorkspaceBackend, ReadOnlyWorkspace, Workspace, WorkspaceBackend
from pydantic_ai_harness_rs.filesystem import FileChangeRequestEvent, FileSystem
from pydantic_ai_harness_rs.filesystem._locks import file_turns

from tests.backends import ProtocolLocal, ShellSandbox
from tests.filesystem.conftest import REFERENCE
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import run_tools

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='0.36.0 has no workspaces')]

ORIGINAL = 'import old\nold()\n'
FINAL = 'import new\nnew()\n'

Op = tuple[str, dict[str, Any]]
W1: Op = ('write_file', {'path': 'a.py', 'content': 'w1\n'})
W2: Op = ('write_file', {'path': 'a.py', 'content': 'import old\nold()\nmore()\n'})
E1: Op = ('edit_file', {'path': 'a.py', 'old_text': 'import old', 'new_text': 'import new'})
E2: Op = ('edit_file', {'path': 'a.py', 'old_text': 'old()', 'new_text': 'new()'})
D: Op = ('create_directory', {'path': 'pkg'})
WP: Op = ('write_file', {'path': 'pkg', 'content': 'p\n'})
EP: Op = ('edit_file', {'path': 'pkg', 'old_text': 'p', 'new_text': 'q'})

PAIRS: dict[str, tuple[Op, Op]] = {
    'write+write': (W1, W2),
    'write+edit': (W2, E2),
    'edit+write': (E2, W2),
    'edit+edit': (E1, E2),
    'mkdir+mkdir': (D, D),
    'mkdir+write': (D, WP),
    'write+mkdir': (WP, D),
    'mkdir+edit': (D, EP),
    'edit+mkdir': (EP, D),
}


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class SlowMemory(MemoryWorkspace):
    """An in-memory backend whose reads and writes take a while (as over a network)."""

    async def read_bytes(self, path: str) -> bytes:
        await anyio.sleep(0.01)
        return await super().read_bytes(path)

    async def write_bytes(self, path: str, data: bytes) -> None:
        await anyio.sleep(0.01)
        await super().write_bytes(path, data)


class SlowProtocolLocal(ProtocolLocal):
    """A host directory through the workspace protocol whose reads and writes take a while."""

    async def read_bytes(self, path: str) -> bytes:
        await anyio.sleep(0.01)
        return await super().read_bytes(path)

    async def write_bytes(self, path: str, data: bytes) -> None:
        await anyio.sleep(0.01)
        await super().write_bytes(path, data)


def _durable(inner: Workspace) -> Workspace:
    """Pydantic AI's durable wrapper as a tool sees it inside a unit: each call passes straight through."""
    from pydantic_ai.durable_exec._workspace import DurableWorkspace

    durability: Any = SimpleNamespace(in_durable_context=False)
    return DurableWorkspace(inner, durability=durability, ctx=None)  # pyright: ignore[reportArgumentType]


def _unit_scope() -> Any:
    """Marked as inside a durable unit, as Pydantic AI marks a DBOS step's or Prefect task's body."""
    from pydantic_ai.durable_exec._operation_backend import durable_unit_scope

    return durable_unit_scope()


def _host_state(root: Path) -> dict[str, str]:
    state: dict[str, str] = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs:
            state[os.path.relpath(os.path.join(directory, name), root)] = '<dir>'
        for name in files:
            state[os.path.relpath(os.path.join(directory, name), root)] = Path(directory, name).read_text()
    return state


def _memory_state(backend: MemoryWorkspace) -> dict[str, str]:
    state = {path: data.decode() for path, data in backend.files.items()}
    state.update({path: '<dir>' for path in backend.dirs})
    return state


class Kind:
    """A backend kind: `make(directory)` a fresh backend holding `a.py`, `wrap` it in a fresh facade per call."""

    def __init__(
        self,
        make: Callable[[Path], Any],
        state: Callable[[Any, Path], dict[str, str]],
        wrap: Callable[[Any], WorkspaceBackend] = Workspace,
        *,
        unit: bool = False,
    ) -> None:
        self.make, self.state, self.wrap, self.unit = make, state, wrap, unit


def _on_host(factory: Callable[[str], Any]) -> Callable[[Path], Any]:
    def make(directory: Path) -> Any:
        directory.mkdir()
        (directory / 'a.py').write_text(ORIGINAL)
        return factory(str(directory))

    return make


def _in_memory(directory: Path) -> SlowMemory:
    return SlowMemory({'a.py': ORIGINAL})


KINDS = {
    'local': Kind(_on_host(LocalWorkspaceBackend), lambda b, d: _host_state(d)),
    'memory': Kind(_in_memory, lambda b, d: _memory_state(b)),
    'protocol-local': Kind(_on_host(SlowProtocolLocal), lambda b, d: _host_state(d)),
    'shell-sandbox': Kind(_on_host(ShellSandbox), lambda b, d: _host_state(d)),
    'read-only': Kind(_in_memory, lambda b, d: _memory_state(b), lambda b: ReadOnlyWorkspace(Workspace(b))),
    'durable': Kind(_in_memory, lambda b, d: _memory_state(b), lambda b: _durable(Workspace(b))),
    # A run whose tool calls are DBOS steps or Prefect tasks: each call is a unit (`durable/_units.py`).
    'durable-unit': Kind(_in_memory, lambda b, d: _memory_state(b), lambda b: _durable(Workspace(b)), unit=True),
}


async def _direct(toolset: Any, workspace: WorkspaceBackend, op: Op) -> str:
    name, args = op
    if name == 'edit_file':
        args = {'path': args['path'], 'old_text': args['old_text'], 'new_text': args['new_text']}
    try:
        return await getattr(toolset, name)(**args, workspace=workspace)
    except ModelRetry as e:
        return f'RETRY: {e.message}'
    except ToolFailed as e:
        return f'FAILED: {e}'


async def _directly(kind: Kind, directory: Path, ops: tuple[Op, Op], *, together: bool) -> tuple[list[str], Any]:
    """The pair as direct calls, each through a fresh facade: concurrently, or in the order given."""
    backend = kind.make(directory)
    toolset = FileSystem().get_toolset()
    # A read first, as a model would: the engine exists before the pair starts.
    await toolset.read_file('a.py', workspace=kind.wrap(backend))
    results: list[str] = ['', '']

    async def one(index: int) -> None:
        results[index] = await _direct(toolset, kind.wrap(backend), ops[index])

    if together:
        async with anyio.create_task_group() as group:
            for index in range(2):
                group.start_soon(one, index)
    else:
        for index in range(2):
            await one(index)
    return results, kind.state(backend, directory)


async def _yield_a_while(ctx: Any, event: Any) -> None:
    for _ in range(5):
        await anyio.sleep(0)


async def _in_a_run(kind: Kind, directory: Path, ops: tuple[Op, Op], *, together: bool) -> tuple[list[str], Any]:
    """The pair as a model's tool calls: in one response, or in two."""
    backend = kind.make(directory)
    steps: list[Any] = [('read_file', {'path': 'a.py'})]
    steps += [list(ops)] if together else list(ops)
    with _unit_scope() if kind.unit else contextlib.nullcontext():
        t = await run_tools(
            [FileSystem()],
            steps,
            listeners=[(FileChangeRequestEvent, _yield_a_while)],
            workspace=kind.wrap(backend),
        )
    return t.results[1:], kind.state(backend, directory)


@pytest.mark.parametrize('pair', PAIRS)
@pytest.mark.parametrize('kind', KINDS)
@pytest.mark.parametrize('how', ['direct', 'run'])
async def test_a_parallel_pair_of_changes_acts_as_one_after_the_other(
    tmp_path: Path, kind: str, pair: str, how: str
) -> None:
    if kind.startswith('durable'):
        pytest.importorskip('pydantic_ai.durable_exec._workspace')
    ops = PAIRS[pair]
    run = _directly if how == 'direct' else _in_a_run
    with anyio.fail_after(60):  # a hang guard, not a timing assertion
        together = await run(KINDS[kind], tmp_path / 'together', ops, together=True)
        in_order = await run(KINDS[kind], tmp_path / 'in-order', ops, together=False)
        flipped_results, flipped_state = await run(KINDS[kind], tmp_path / 'flipped', ops[::-1], together=False)
    reversed_ = (flipped_results[::-1], flipped_state)
    assert together in (in_order, reversed_)
    assert len(file_turns()) == 0
    results, state = together
    if pair == 'edit+edit' and kind != 'read-only':
        # Both edits landed, whichever went first.
        assert all(r.startswith('Edited a.py.') for r in results)
        assert 'import new\nnew()\n' in state.values()
    if kind == 'read-only':
        assert ORIGINAL in state.values() and len([v for v in state.values() if v != '<dir>']) == 1
        if how == 'direct':
            refused = 'FAILED: The workspace is read-only; the change was refused.'
            assert refused in results and all(r == refused or r.startswith('RETRY: ') for r in results)


async def test_facades_made_per_call_share_one_engine_and_one_turn() -> None:
    """The reproduction: two edits, each through its own `Workspace(backend)`, on a backend that reads slowly."""
    backend = SlowMemory({'a.py': ORIGINAL})
    toolset: Any = FileSystem().get_toolset()
    results: dict[int, str] = {}

    async def edit(index: int, old: str, new: str) -> None:
        results[index] = await toolset.edit_file('a.py', old, new, workspace=Workspace(backend))

    async with anyio.create_task_group() as group:
        group.start_soon(edit, 0, 'import old', 'import new')
        group.start_soon(edit, 1, 'old()', 'new()')
    assert backend.files['/ws/a.py'] == FINAL.encode()
    first = {'import new\nold()\n', 'import old\nnew()\n'}
    assert {results[0], results[1]} in [
        {f'Edited a.py. [hash:{h(v)}]', f'Edited a.py. [hash:{h(FINAL)}]'} for v in first
    ]
    # One engine for the backend, however many facades reached it.
    assert len(toolset._remote_engines) == 1  # pyright: ignore[reportPrivateUsage]
