"""Checkpoints on a workspace whose files are not on this host: the file tools' changes are read and
undone through the workspace protocol (the in-memory backend), the store kept on this host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.exceptions import UserError
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs import Checkpoints, FileSystem, Shell
from pydantic_ai_harness_rs.checkpoints import CheckpointError, _capability

from tests.backends import ShellSandbox
from tests.checkpoints.test_durable_units import attempts
from tests.checkpoints.test_processes import Child
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import RETRY, run_tools

pytestmark = pytest.mark.anyio

TOOLS = ['read_file', 'write_file', 'edit_file', 'create_directory', 'apply_patch']


def contents(backend: MemoryWorkspace) -> tuple[dict[str, bytes], set[str]]:
    """The backend's files and directories beneath its working directory, root-relative."""
    files = {path[len('/ws/') :]: data for path, data in backend.files.items() if path.startswith('/ws/')}
    dirs = {path[len('/ws/') :] for path in backend.dirs if path.startswith('/ws/')}
    return files, dirs


async def run(backend: MemoryWorkspace, cp: Checkpoints[Any], calls: list[Any]) -> list[str]:
    t = await run_tools([FileSystem(tools=TOOLS), cp], calls, workspace=Workspace(backend))
    return t.results


@pytest.fixture
def backend() -> MemoryWorkspace:
    return MemoryWorkspace({'a.txt': 'one\n', 'src/m.py': 'x = 1\n', 'gone.txt': 'bye\n'})


async def test_write_file_over_a_file_is_undone_through_the_protocol(backend: MemoryWorkspace, tmp_path: Path) -> None:
    before = contents(backend)
    cp = Checkpoints(store_dir=tmp_path / 'store')
    results = await run(
        backend, cp, [('read_file', {'path': 'a.txt'}), ('write_file', {'path': 'a.txt', 'content': 'two\n'})]
    )
    assert results[1].startswith('Wrote 4 chars'), results
    assert backend.files['/ws/a.txt'] == b'two\n'
    [checkpoint] = cp.list()
    assert {k: v for k, v in checkpoint.items() if k not in ('run_id', 'created_at')} == {
        'id': 'cp-000001',
        'tool_call_id': 'call-2',
        'tool_name': 'write_file',
        'paths': ['a.txt'],
        'bytes_kept': 4,
    }
    assert isinstance(checkpoint['run_id'], str) and checkpoint['created_at'] > 0
    assert await cp.diff(checkpoint['id']) == [('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two')]
    writes = backend.calls['write_bytes']
    result = await cp.rewind(to=checkpoint['id'])
    assert result == {'restored': ['a.txt'], 'deleted': [], 'removed_dirs': [], 'failed': [], 'unrestorable': []}
    assert backend.calls['write_bytes'] == writes + 1  # written through the protocol
    assert contents(backend) == before
    assert cp.list() == []
    assert not (tmp_path / 'store').joinpath('.pydantic-ai-harness').exists()


async def test_create_directory_and_a_new_file_in_it_are_undone(backend: MemoryWorkspace) -> None:
    before = contents(backend)
    cp = Checkpoints()
    results = await run(
        backend,
        cp,
        [('create_directory', {'path': 'made/deep'}), ('write_file', {'path': 'made/deep/f.txt', 'content': 'f'})],
    )
    assert results == [
        'Created directory: made/deep',
        'Wrote 1 chars (1 lines) to made/deep/f.txt. [hash:252f10c83610]',
    ]
    made, wrote = cp.list()
    assert (made['tool_name'], made['paths']) == ('create_directory', ['made', 'made/deep'])
    assert (wrote['tool_name'], wrote['paths'], wrote['bytes_kept']) == ('write_file', ['made/deep/f.txt'], 0)
    result = await cp.rewind(to=wrote['id'])
    assert (result['deleted'], result['removed_dirs']) == (['made/deep/f.txt'], [])
    assert contents(backend) == (before[0], {'src', 'made', 'made/deep'})
    result = await cp.rewind(to=made['id'])
    assert (result['restored'], result['deleted'], result['removed_dirs']) == ([], [], ['made', 'made/deep'])
    assert contents(backend) == before
    assert cp.list() == []


async def test_a_directory_the_agent_made_is_left_when_someone_else_filled_it(backend: MemoryWorkspace) -> None:
    cp = Checkpoints()
    await run(backend, cp, [('create_directory', {'path': 'made'})])
    [made] = cp.list()
    await backend.write_bytes('/ws/made/theirs.txt', b'keep me')
    result = await cp.rewind(to=made['id'])
    assert result == {'restored': [], 'deleted': [], 'removed_dirs': [], 'failed': [], 'unrestorable': []}
    assert backend.files['/ws/made/theirs.txt'] == b'keep me'


async def test_edit_file_is_undone_byte_for_byte(tmp_path: Path) -> None:
    backend = MemoryWorkspace({'run.sh': b'#!/bin/sh\r\necho old\r\n'})
    cp = Checkpoints()
    results = await run(
        backend,
        cp,
        [('read_file', {'path': 'run.sh'}), ('edit_file', {'path': 'run.sh', 'old_text': 'old', 'new_text': 'new'})],
    )
    assert results[1].startswith('Edited run.sh.'), results
    assert backend.files['/ws/run.sh'] == b'#!/bin/sh\r\necho new\r\n'
    [checkpoint] = cp.list()
    await cp.rewind(to=checkpoint['id'])
    assert backend.files['/ws/run.sh'] == b'#!/bin/sh\r\necho old\r\n'


async def test_apply_patch_with_a_move_a_delete_and_an_add_is_undone(backend: MemoryWorkspace) -> None:
    before = contents(backend)
    cp = Checkpoints()
    patch = '\n'.join(
        [
            '*** Begin Patch',
            '*** Update File: src/m.py',
            '*** Move to: lib/m.py',
            '@@',
            '-x = 1',
            '+x = 2',
            '*** Delete File: gone.txt',
            '*** Add File: added.txt',
            '+hello',
            '*** End Patch',
        ]
    )
    results = await run(backend, cp, [('apply_patch', {'input': patch})])
    assert not results[0].startswith(RETRY), results
    assert backend.files['/ws/lib/m.py'] == b'x = 2\n'
    assert '/ws/gone.txt' not in backend.files and '/ws/src/m.py' not in backend.files
    [checkpoint] = cp.list()
    assert checkpoint['tool_name'] == 'apply_patch'
    assert checkpoint['paths'] == ['added.txt', 'gone.txt', 'lib', 'lib/m.py', 'src/m.py']
    assert checkpoint['bytes_kept'] == len(b'bye\n') + len(b'x = 1\n')
    result = await cp.rewind(to=checkpoint['id'])
    assert (result['restored'], result['deleted'], result['removed_dirs']) == (
        ['gone.txt', 'src/m.py'],
        ['added.txt', 'lib/m.py'],
        ['lib'],
    )
    assert contents(backend) == before


async def test_a_persons_change_through_the_backend_is_refused_without_force(backend: MemoryWorkspace) -> None:
    cp = Checkpoints()
    await run(backend, cp, [('write_file', {'path': 'a.txt', 'content': 'agent\n'})])
    [checkpoint] = cp.list()
    await backend.write_bytes('/ws/a.txt', b'person\n')
    with pytest.raises(CheckpointError) as raised:
        await cp.rewind(to=checkpoint['id'])
    assert str(raised.value) == (
        'Cannot rewind: changed since the checkpoint by someone else: a.txt. Rewind with force=True to overwrite them.'
    )
    assert backend.files['/ws/a.txt'] == b'person\n'
    assert cp.list() == [checkpoint]
    result = await cp.rewind(to=checkpoint['id'], force=True)
    assert result['restored'] == ['a.txt']
    assert backend.files['/ws/a.txt'] == b'one\n'


async def test_the_rewind_tool_undoes_the_models_last_step(backend: MemoryWorkspace) -> None:
    cp = Checkpoints(tools=['rewind'])
    results = await run(
        backend,
        cp,
        [
            ('write_file', {'path': 'a.txt', 'content': 'first\n'}),
            ('write_file', {'path': 'b.txt', 'content': 'b\n'}),
            ('rewind', {}),
            ('rewind', {'path': 'a.txt'}),
        ],
    )
    assert results[2] == 'Rewound 1 change (cp-000002).\nDeleted: b.txt'
    assert results[3] == 'Rewound 1 change (cp-000001).\nRestored: a.txt'
    assert backend.files['/ws/a.txt'] == b'one\n'
    assert '/ws/b.txt' not in backend.files
    assert cp.list() == []


async def test_the_store_dir_survives_a_restart(backend: MemoryWorkspace, tmp_path: Path) -> None:
    store = tmp_path / 'store'
    await run(backend, Checkpoints(store_dir=store), [('write_file', {'path': 'a.txt', 'content': 'two\n'})])
    # As after a restart: no store of this store_dir open in this process (a live one is shared,
    # the workspace it knows included; something of the run may still hold the first one).
    _capability._OPEN_REMOTE.clear()  # pyright: ignore[reportPrivateUsage]
    again = Checkpoints(store_dir=store)
    [checkpoint] = again.list()
    assert checkpoint['paths'] == ['a.txt']
    with pytest.raises(UserError, match=r'pass it to `rewind\(\.\.\., workspace=\.\.\.\)`'):
        await again.rewind(to=checkpoint['id'])
    result = await again.rewind(to=checkpoint['id'], workspace=backend)
    assert result['restored'] == ['a.txt']
    assert backend.files['/ws/a.txt'] == b'one\n'


async def test_a_store_dir_belongs_to_one_workspace_root(backend: MemoryWorkspace, tmp_path: Path) -> None:
    store = tmp_path / 'store'
    await run(backend, Checkpoints(store_dir=store), [('write_file', {'path': 'a.txt', 'content': 'two\n'})])
    other = MemoryWorkspace({'a.txt': 'x'}, cwd='/elsewhere')
    with pytest.raises(CheckpointError, match='give each workspace its own store_dir'):
        await run(other, Checkpoints(store_dir=store), [('write_file', {'path': 'a.txt', 'content': 'y'})])


async def test_a_rewind_limited_to_paths_keeps_the_other_changes(backend: MemoryWorkspace) -> None:
    cp = Checkpoints()
    await run(
        backend,
        cp,
        [('write_file', {'path': 'a.txt', 'content': 'A\n'}), ('write_file', {'path': 'b.txt', 'content': 'B\n'})],
    )
    first, second = cp.list()
    result = await cp.rewind(to=first['id'], paths=['b.txt'])
    assert result['deleted'] == ['b.txt'] and result['restored'] == []
    assert backend.files['/ws/a.txt'] == b'A\n' and '/ws/b.txt' not in backend.files
    assert cp.list() == [first]


async def test_a_file_above_max_file_bytes_is_said_unrestorable(backend: MemoryWorkspace) -> None:
    cp = Checkpoints(max_file_bytes=3)
    await run(backend, cp, [('write_file', {'path': 'a.txt', 'content': 'xy'})])
    [checkpoint] = cp.list()
    assert checkpoint['bytes_kept'] == 0
    result = await cp.rewind(to=checkpoint['id'])
    assert result == {'restored': [], 'deleted': [], 'removed_dirs': [], 'failed': [], 'unrestorable': ['a.txt']}
    assert backend.files['/ws/a.txt'] == b'xy'


def host_tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and directory (`None`) under `root`, root-relative."""
    return {
        path.relative_to(root).as_posix(): (None if path.is_dir() else path.read_bytes())
        for path in sorted(root.rglob('*'))
    }


@pytest.fixture
def box(tmp_path: Path) -> Path:
    root = tmp_path / 'box'
    (root / 'src').mkdir(parents=True)
    (root / 'a.txt').write_bytes(b'one\n')
    (root / 'src' / 'm.py').write_bytes(b'x = 1\n')
    (root / 'old').mkdir()
    (root / 'old' / 'f').write_bytes(b'f\n')
    return root


async def run_box(sandbox: ShellSandbox, cp: Checkpoints[Any], calls: list[Any]) -> list[str]:
    t = await run_tools([FileSystem(tools=TOOLS), Shell(denied_commands=[]), cp], calls, workspace=Workspace(sandbox))
    return t.results


async def test_shell_commands_on_a_backend_with_commands_are_undone_through_the_protocol(box: Path) -> None:
    """A backend reached by commands alone (`Workspace` derives the file methods through its shell):
    each command's changes (`sed -i`, `rm -rf`, `mv`, a new directory) found by two listings and undone."""
    before = host_tree(box)
    sandbox = ShellSandbox(box)
    cp = Checkpoints()
    results = await run_box(
        sandbox,
        cp,
        [
            ('run_command', {'command': "sed -i 's/one/two/' a.txt"}),
            ('run_command', {'command': 'rm -rf old && mv src/m.py src/n.py && mkdir -p gen/x && echo g > gen/x/g'}),
            ('run_command', {'command': 'true'}),
        ],
    )
    assert 'exit code' not in results[0] or 'exit code: 0' in results[0], results
    assert (box / 'a.txt').read_bytes() == b'two\n'
    sed, script = cp.list()
    assert (sed['tool_name'], sed['paths'], sed['bytes_kept']) == ('run_command', ['a.txt'], 4)
    assert script['paths'] == ['gen', 'gen/x', 'gen/x/g', 'old', 'old/f', 'src/m.py', 'src/n.py']
    assert await cp.diff(sed['id']) == [('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two')]
    result = await cp.rewind(to=script['id'])
    assert result == {
        'restored': ['old', 'old/f', 'src/m.py'],
        'deleted': ['gen/x/g', 'src/n.py'],
        'removed_dirs': ['gen', 'gen/x'],
        'failed': [],
        'unrestorable': [],
    }
    result = await cp.rewind(to=sed['id'])
    assert result['restored'] == ['a.txt']
    assert host_tree(box) == before
    assert cp.list() == []


async def test_a_file_tool_then_a_command_on_one_file_rewind_as_a_chain(box: Path) -> None:
    sandbox = ShellSandbox(box)
    cp = Checkpoints()
    await run_box(
        sandbox,
        cp,
        [
            ('write_file', {'path': 'a.txt', 'content': 'agent\n'}),
            ('run_command', {'command': 'echo more >> a.txt'}),
        ],
    )
    wrote, appended = cp.list()
    assert (wrote['tool_name'], appended['tool_name'], appended['paths']) == ('write_file', 'run_command', ['a.txt'])
    (box / 'a.txt').write_bytes(b'person\n')
    with pytest.raises(CheckpointError, match='changed since the checkpoint by someone else: a.txt'):
        await cp.rewind(to=wrote['id'])
    (box / 'a.txt').write_bytes(b'agent\nmore\n')
    await cp.rewind(to=wrote['id'])
    assert (box / 'a.txt').read_bytes() == b'one\n'


async def test_without_gnu_find_a_command_runs_unrecorded_with_a_warning(box: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    for where in ('/usr/bin', '/bin'):
        for tool in Path(where).iterdir():
            if tool.name != 'find' and not (bin_dir / tool.name).exists():
                (bin_dir / tool.name).symlink_to(tool)
    sandbox = ShellSandbox(box, path=str(bin_dir))
    cp = Checkpoints()
    with pytest.warns(UserWarning, match='could not list the workspace'):
        await run_box(sandbox, cp, [('run_command', {'command': 'echo new > n.txt'})])
    assert (box / 'n.txt').read_bytes() == b'new\n'
    assert cp.list() == []


async def test_a_second_non_local_root_is_not_checkpointed_with_a_warning(backend: MemoryWorkspace) -> None:
    cp = Checkpoints()
    await run(backend, cp, [('write_file', {'path': 'a.txt', 'content': 'two\n'})])
    other = MemoryWorkspace({'a.txt': 'x'}, cwd='/elsewhere')
    with pytest.warns(UserWarning, match=r"records the workspace root '/ws'.*'/elsewhere' is not checkpointed"):
        results = await run(other, cp, [('write_file', {'path': 'a.txt', 'content': 'y'})])
    assert results[0].startswith('Wrote 1 chars')
    assert other.files['/elsewhere/a.txt'] == b'y'
    [checkpoint] = cp.list()
    assert checkpoint['paths'] == ['a.txt'] and checkpoint['tool_call_id'] == 'call-1'


async def test_an_empty_store_dir_lists_nothing(backend: MemoryWorkspace, tmp_path: Path) -> None:
    """A `store_dir` nothing was recorded in yet (empty, or not made yet) holds no checkpoints: `[]`, and an
    id is unknown there, as in any store, without making the directory; a run then records into it."""
    (tmp_path / 'empty').mkdir()
    for store_dir in (tmp_path / 'empty', tmp_path / 'not-yet'):
        cp = Checkpoints[Any](store_dir=store_dir)
        assert cp.list() == [] and cp.pruned() == []
        assert await cp.list_async() == [] and await cp.pruned_async() == []
        with pytest.raises(CheckpointError, match='No checkpoint cp-000001'):
            await cp.diff('cp-000001')
        with pytest.raises(CheckpointError, match='No checkpoint cp-000001'):
            await cp.rewind(to='cp-000001')
        with pytest.raises(CheckpointError, match='No checkpoint cp-000001'):
            await cp.rewind(to='cp-000001', workspace=backend)
        assert store_dir.exists() == (store_dir.name == 'empty')  # asking does not make a store
    await run(backend, cp, [('write_file', {'path': 'a.txt', 'content': 'two\n'})])
    [checkpoint] = cp.list()
    assert checkpoint['paths'] == ['a.txt']
    await cp.rewind(to=checkpoint['id'])
    assert backend.files['/ws/a.txt'] == b'one\n'


async def test_two_objects_on_one_store_dir_record_in_turn(backend: MemoryWorkspace, tmp_path: Path) -> None:
    """Two `Checkpoints` of one process on one `store_dir` (the second through a symlink to it) share its
    store: ids unique, one list, and a rewind through either undoes both's checkpoints."""
    before = contents(backend)
    store = tmp_path / 'store'
    (tmp_path / 'link').symlink_to(store)
    first, second = Checkpoints[Any](store_dir=store), Checkpoints[Any](store_dir=tmp_path / 'link')
    await run(backend, first, [('write_file', {'path': 'a.txt', 'content': 'two\n'})])
    await run(backend, second, [('write_file', {'path': 'b.txt', 'content': 'B\n'})])
    await run(backend, first, [('write_file', {'path': 'a.txt', 'content': 'three\n'})])
    listed = [(c['id'], c['paths']) for c in first.list()]
    assert listed == [('cp-000001', ['a.txt']), ('cp-000002', ['b.txt']), ('cp-000003', ['a.txt'])]
    assert second.list() == first.list()
    assert await second.diff('cp-000003') == [('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+three')]
    result = await second.rewind(to='cp-000001')
    assert (result['restored'], result['deleted'], result['failed']) == (['a.txt'], ['b.txt'], [])
    assert contents(backend) == before
    assert first.list() == second.list() == []


REMOTE_CHILD = """
import anyio, json, sys
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs import Checkpoints, FileSystem, Shell
from tests.backends import ShellSandbox
from tests.scripted import run_tools

box, store = sys.argv[1], sys.argv[2]
cp = Checkpoints(store_dir=store)

async def main() -> None:
    for line in sys.stdin:
        calls = [tuple(c) for c in json.loads(line)]
        capabilities = [FileSystem(tools=['write_file']), Shell(denied_commands=[]), cp]
        await run_tools(capabilities, calls, workspace=Workspace(ShellSandbox(box)))
        print(json.dumps(await anyio.to_thread.run_sync(cp.list)), flush=True)

anyio.run(main)
"""


async def test_two_processes_record_in_turn_into_one_store_dir(box: Path, tmp_path: Path) -> None:
    """A host directory reached by commands alone (file tools through the protocol, commands listed), recorded
    into one `store_dir` by this process and a child, alternating: ids unique, both list the same
    checkpoints, each command's diff is its own change, and a rewind here undoes the child's too."""
    (box / 'shared.txt').write_bytes(b'original\n')
    before = host_tree(box)
    store = tmp_path / 'store'
    cp = Checkpoints[Any](store_dir=store)
    parent = Workspace(ShellSandbox(box))
    tools: list[Any] = [FileSystem(tools=['write_file']), Shell(denied_commands=[]), cp]
    child = Child(box, store, code=REMOTE_CHILD)
    try:
        await run_tools(tools, [('write_file', {'path': 'mine.txt', 'content': 'one\n'})], workspace=parent)
        child.run([('run_command', {'command': 'echo child >> shared.txt'})])
        await run_tools(tools, [('run_command', {'command': 'echo parent >> shared.txt'})], workspace=parent)
        theirs = child.run([('write_file', {'path': 'theirs.txt', 'content': 'two\n'})])
        mine = cp.list()
        assert [(c['id'], c['tool_name'], c['paths']) for c in mine] == [
            ('cp-000001', 'write_file', ['mine.txt']),
            ('cp-000002', 'run_command', ['shared.txt']),
            ('cp-000003', 'run_command', ['shared.txt']),
            ('cp-000004', 'write_file', ['theirs.txt']),
        ]
        assert mine == theirs
        assert await cp.diff('cp-000002') == [
            ('shared.txt', '--- a/shared.txt\n+++ b/shared.txt\n@@ -1 +1,2 @@\n original\n+child')
        ]
        assert await cp.diff('cp-000003') == [
            ('shared.txt', '--- a/shared.txt\n+++ b/shared.txt\n@@ -1,2 +1,3 @@\n original\n child\n+parent')
        ]
        result = await cp.rewind(to='cp-000002')
        assert (result['restored'], result['deleted'], result['failed']) == (['shared.txt'], ['theirs.txt'], [])
        assert [c['id'] for c in child.run([])] == ['cp-000001']
        await cp.rewind(to='cp-000001')
        assert host_tree(box) == before
        assert child.run([]) == cp.list() == []
    finally:
        child.close()


async def test_a_durable_unit_run_again_adds_to_its_calls_checkpoint(box: Path) -> None:
    """A `run_command` unit run twice for one tool call (as after a worker died once its checkpoint was
    recorded): the second attempt's changes join the call's checkpoint, not dropped, not a second one."""
    before = host_tree(box)
    cp = Checkpoints[None]()
    commands = ['echo first >> a.txt', 'echo again >> a.txt && echo b > b.txt']
    workspace = Workspace(ShellSandbox(box))
    capabilities: list[Any] = [Shell(denied_commands=[]), cp]
    assert await attempts(box, cp, commands, capabilities=capabilities, workspace=workspace) == ['ran', 'ran']
    [checkpoint] = cp.list()
    assert (checkpoint['tool_call_id'], checkpoint['paths']) == ('call-in-unit', ['a.txt', 'b.txt'])
    assert await cp.diff(checkpoint['id']) == [
        ('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,3 @@\n one\n+first\n+again'),
        ('b.txt', 'created file (2 bytes)'),
    ]
    await cp.rewind(to=checkpoint['id'])
    assert host_tree(box) == before


DYING_CHILD = """
import anyio, sys
from pathlib import Path
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs import Checkpoints, Shell
from tests.backends import ShellSandbox
from tests.checkpoints.test_durable_units import attempts

box, store = Path(sys.argv[1]), sys.argv[2]
cp = Checkpoints(store_dir=store)
capabilities = [Shell(denied_commands=[]), cp]
workspace = Workspace(ShellSandbox(box))
# The command kills this process (its parent) mid-call: after the first listing, before the record.
command = 'echo dead >> a.txt && echo d > d.txt && kill -9 $PPID'
anyio.run(lambda: attempts(box, cp, [command], capabilities=capabilities, workspace=workspace, run_id='run-1'))
"""


async def test_a_durable_units_worker_killed_mid_command_leaves_its_changes_to_the_call(
    box: Path, tmp_path: Path
) -> None:
    """A worker (a child process) killed in the middle of a `run_command` unit on a non-local workspace;
    the unit run again here, into the same `store_dir`: what the dead attempt changed is the call's
    (the record of the call in progress), not taken into the baseline."""
    before = host_tree(box)
    store = tmp_path / 'store'
    child = Child(box, store, code=DYING_CHILD)
    assert child.process.wait(timeout=120) == -9
    assert (box / 'a.txt').read_bytes() == b'one\ndead\n'
    cp = Checkpoints[None](store_dir=store)
    workspace = Workspace(ShellSandbox(box))
    capabilities: list[Any] = [Shell(denied_commands=[]), cp]
    results = await attempts(
        box, cp, ['echo retry >> a.txt'], capabilities=capabilities, workspace=workspace, run_id='run-1'
    )
    assert results == ['ran']
    [checkpoint] = cp.list()
    assert (checkpoint['tool_call_id'], checkpoint['paths']) == ('call-in-unit', ['a.txt', 'd.txt'])
    assert await cp.diff(checkpoint['id']) == [
        ('a.txt', '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,3 @@\n one\n+dead\n+retry'),
        ('d.txt', 'created file (2 bytes)'),
    ]
    await cp.rewind(to=checkpoint['id'], workspace=workspace)
    assert host_tree(box) == before
