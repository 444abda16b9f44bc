"""The durable plumbing without an engine: event suppression in an activity's run context, the
record that lets a retried `run_command` stop what a dead worker left running (`durable/_commands.py`),
events carried out of an activity (`durable/_carried.py`) and a run error outside a workflow."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage
from pydantic_ai_harness_rs.durable._commands import CommandGuard, stop_recorded
from pydantic_ai_harness_rs.durable._events import events_reachable, without_events
from pydantic_ai_harness_rs.filesystem import FileChangeRequestEvent

pytestmark = pytest.mark.anyio


def _ctx() -> RunContext[None]:
    return RunContext(deps=None, model=TestModel(), usage=RunUsage(), run_id='run', tool_call_id='call')


async def test_events_pass_where_they_reach_the_run() -> None:
    ctx = _ctx()
    assert events_reachable(ctx)
    assert without_events(ctx) is ctx


async def test_an_activity_context_drops_events_instead_of_failing() -> None:
    # temporalio first: without it pydantic_ai's module raises a plain ImportError, which
    # importorskip does not take for a missing module.
    pytest.importorskip('temporalio', reason="needs temporalio (pip install '.[durable]')")
    temporal = pytest.importorskip('pydantic_ai.durable_exec.temporal')
    ctx = temporal.TemporalRunContext(deps=None, model=TestModel(), usage=RunUsage())
    event = FileChangeRequestEvent(path='a.txt', root_dir='/r', operation='write', diff='', truncated=False)
    with pytest.raises(Exception, match='not supported under Temporal'):
        await ctx.emit(event)
    quiet = without_events(ctx)
    assert not events_reachable(ctx)
    assert await quiet.emit(event) is event
    assert not event.cancelled


async def test_outside_a_durable_unit_nothing_is_recorded() -> None:
    guard = await CommandGuard.start(_ctx(), lambda ctx: pytest.fail('no jobs dir is needed'))
    assert guard.record is None
    assert guard.mark('cd /w || exit\n') == 'cd /w || exit\n'


def _alive(pid: int) -> bool:
    try:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except OSError:
        return False
    return state != 'Z'


def _record(tmp_path: Path, pid: int) -> Path:
    record = tmp_path / 'running-x'
    record.write_text(f'{pid}\n')
    return record


def test_the_recorded_session_is_killed_descendants_included(tmp_path: Path) -> None:
    leader = subprocess.Popen(['sh', '-c', 'sleep 600 & echo $! > child; wait'], cwd=tmp_path, start_new_session=True)
    deadline = time.monotonic() + 10
    while not (tmp_path / 'child').exists() or not (tmp_path / 'child').read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    child = int((tmp_path / 'child').read_text())
    record = _record(tmp_path, leader.pid)
    stop_recorded(str(record))
    assert leader.wait(10) == -signal.SIGKILL
    assert not _alive(child)
    assert not record.exists()


@pytest.mark.parametrize('why', ['not a session leader', 'started long before the record'])
def test_a_pid_that_is_not_the_recorded_shell_is_left_alone(tmp_path: Path, why: str) -> None:
    process = subprocess.Popen(['sleep', '600'], start_new_session=why != 'not a session leader')
    try:
        record = _record(tmp_path, process.pid)
        if why == 'started long before the record':
            later = time.time() + 3600
            os.utime(record, (later, later))
        stop_recorded(str(record))
        assert process.poll() is None
        assert not record.exists()
    finally:
        process.kill()
        process.wait()


# --- a change as two durable operations: plan, then commit against the planned hash (issue 21) ---


async def test_a_change_planned_then_committed_once(tmp_path: Path) -> None:
    """`plan_change` plans against the file's hash and writes nothing; `commit_change` writes; a
    commit run again (its first attempt wrote) or a file changed since the plan gives the conflict
    retry, never a second write. Run inline here (no engine), as a unit runs them."""
    from pydantic_ai_harness_rs import FileSystem

    (tmp_path / 'a.txt').write_text('one\n')
    fs = FileSystem(root_dir=tmp_path)
    args = {'path': 'a.txt', 'replacements': [['one', 'two']], 'expected_hash': None}
    planned = await fs._durable_plan(_ctx(), 'edit_file', args)  # pyright: ignore[reportPrivateUsage]
    assert planned.planned is not None and planned.events == [] and planned.retry is None
    assert planned.planned.diff.endswith('-one\n+two')
    assert (tmp_path / 'a.txt').read_text() == 'one\n'
    base = planned.planned.base_hash
    committed = await fs._durable_commit(_ctx(), 'edit_file', args, base)  # pyright: ignore[reportPrivateUsage]
    assert committed.value == 'Edited a.txt. [hash:' + committed.events[0].fields['content_hash'] + ']'
    assert [e.kind for e in committed.events] == ['FileEditedEvent']
    assert (tmp_path / 'a.txt').read_text() == 'two\n'
    again = await fs._durable_commit(_ctx(), 'edit_file', args, base)  # pyright: ignore[reportPrivateUsage]
    assert again.retry is not None and again.retry.startswith("Conflict: file 'a.txt' has changed")
    assert (tmp_path / 'a.txt').read_text() == 'two\n'

    write = {'path': 'new.txt', 'content': 'x\n', 'expected_hash': None}
    planned = await fs._durable_plan(_ctx(), 'write_file', write)  # pyright: ignore[reportPrivateUsage]
    assert planned.planned is not None and planned.planned.base_hash == '<absent>'
    (tmp_path / 'new.txt').write_text('someone else\n')
    late = await fs._durable_commit(_ctx(), 'write_file', write, planned.planned.base_hash)  # pyright: ignore[reportPrivateUsage]
    assert late.retry is not None and 'Conflict' in late.retry
    assert (tmp_path / 'new.txt').read_text() == 'someone else\n'


async def test_a_change_planned_then_committed_once_on_a_non_local_workspace() -> None:
    """The same two operations through the workspace protocol (a backend whose files are not on
    this host): planned against the backend's content, committed once, a second commit refused."""
    from pydantic_ai.workspaces import Workspace
    from pydantic_ai_harness_rs import FileSystem

    from tests.memory_workspace import MemoryWorkspace

    backend = MemoryWorkspace({'a.txt': 'one\n'})
    ctx = RunContext(
        deps=None, model=TestModel(), usage=RunUsage(), run_id='run', tool_call_id='call', workspace=Workspace(backend)
    )
    fs = FileSystem()
    args = {'path': 'a.txt', 'replacements': [['one', 'two']], 'expected_hash': None}
    planned = await fs._durable_plan(ctx, 'edit_file', args)  # pyright: ignore[reportPrivateUsage]
    assert planned.planned is not None and planned.planned.path == 'a.txt'
    assert backend.files['/ws/a.txt'] == b'one\n'
    base = planned.planned.base_hash
    committed = await fs._durable_commit(ctx, 'edit_file', args, base)  # pyright: ignore[reportPrivateUsage]
    assert committed.value is not None and committed.value.startswith('Edited a.txt.')
    assert backend.files['/ws/a.txt'] == b'two\n'
    again = await fs._durable_commit(ctx, 'edit_file', args, base)  # pyright: ignore[reportPrivateUsage]
    assert again.retry is not None and again.retry.startswith("Conflict: file 'a.txt' has changed")
    assert backend.files['/ws/a.txt'] == b'two\n'


# --- a durable commit retried after its first attempt wrote ----------------------------------


@pytest.mark.parametrize(
    ('name', 'arguments', 'after'),
    [
        ('edit_file', {'path': 'a.txt', 'replacements': [['two', 'TWO']]}, 'one\nTWO\n'),
        ('write_file', {'path': 'a.txt', 'content': 'new\n'}, 'new\n'),
    ],
    ids=['edit', 'write'],
)
@pytest.mark.parametrize('approved', [False, True], ids=['plain', 'approved'])
async def test_a_retried_commit_answers_as_its_first_attempt(
    tmp_path: Path, name: str, arguments: dict[str, object], after: str, approved: bool
) -> None:
    # The worker died after the first attempt wrote, before the engine recorded its answer: the
    # engine runs the commit again with the same plan, onto a file that already holds its result.
    from pydantic_ai_harness_rs.durable._operations import Stage, run_unit
    from pydantic_ai_harness_rs.filesystem import FileSystem

    (tmp_path / 'a.txt').write_text('one\ntwo\n')
    toolset = FileSystem(root_dir=tmp_path)._unit_toolset()  # pyright: ignore[reportPrivateUsage]
    planned = (await run_unit(toolset, _ctx(), name, arguments, Stage(commit=False))).planned
    assert planned is not None
    stage = Stage(commit=True, base_hash=planned.base_hash, approved=approved, planned=planned)
    first = await run_unit(toolset, _ctx(), name, arguments, stage)
    again = await run_unit(toolset, _ctx(), name, arguments, stage)
    assert isinstance(first.value, str) and first.value.startswith(('Edited a.txt. [hash:', 'Wrote 4 chars'))
    assert (again.value, again.retry, again.events) == (first.value, None, first.events)
    assert (tmp_path / 'a.txt').read_text() == after
    # Changed by someone else meanwhile: still the conflict retry, nothing written.
    (tmp_path / 'a.txt').write_text('theirs\n')
    late = await run_unit(toolset, _ctx(), name, arguments, stage)
    assert late.value is None and late.retry is not None
    assert (tmp_path / 'a.txt').read_text() == 'theirs\n'


# --- apply_patch as two durable operations (issue 22) --------------------------------------------

PATCH = """*** Begin Patch
*** Update File: a.txt
@@
-one
+ONE
*** Add File: new.txt
+made
*** Delete File: c.txt
*** End Patch"""


def _patch_toolset(tmp_path: Path) -> Any:
    from pydantic_ai_harness_rs.filesystem import DEFAULT_TOOL_NAMES, FileSystem

    (tmp_path / 'a.txt').write_text('one\n')
    (tmp_path / 'b.txt').write_text('bee\n')
    (tmp_path / 'c.txt').write_text('sea\n')
    fs = FileSystem(root_dir=tmp_path, tools=[*DEFAULT_TOOL_NAMES, 'apply_patch'])
    return fs._unit_toolset()  # pyright: ignore[reportPrivateUsage]


def _tree(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}


async def test_a_patch_planned_then_committed_once_and_a_retried_commit_answers_as_the_first(tmp_path: Path) -> None:
    """`plan_change` plans the whole patch (every file's diff, hash before and after) and writes
    nothing; `commit_change` commits it; the commit run again (its first attempt wrote, its worker
    died before the engine recorded it) answers as the first did, with its events, writing nothing."""
    from pydantic_ai_harness_rs.durable._operations import PlannedFile, Stage, run_unit

    toolset = _patch_toolset(tmp_path)
    before = _tree(tmp_path)
    args = {'input': PATCH}
    planned = await run_unit(toolset, _ctx(), 'apply_patch', args, Stage(commit=False))
    plan = planned.planned
    assert plan is not None and planned.events == [] and planned.retry is None and plan.files is not None
    assert [(f.path, f.operation, f.old_hash is None, f.new_hash is None) for f in plan.files] == [
        ('a.txt', 'edit', False, False),
        ('c.txt', 'delete', False, True),
        ('new.txt', 'write', True, False),
    ]
    assert isinstance(plan.files[0], PlannedFile) and plan.files[0].diff.endswith('-one\n+ONE')
    assert _tree(tmp_path) == before  # nothing written by the plan
    stage = Stage(commit=True, planned=plan)
    first = await run_unit(toolset, _ctx(), 'apply_patch', args, stage)
    assert isinstance(first.value, str) and first.value.startswith('Applied patch to 3 files:\nM a.txt [hash:')
    assert [(e.kind, e.fields['path']) for e in first.events] == [
        ('FileEditedEvent', 'a.txt'),
        ('FileWrittenEvent', 'new.txt'),
    ]
    after = {'a.txt': b'ONE\n', 'b.txt': b'bee\n', 'new.txt': b'made\n'}
    assert _tree(tmp_path) == after
    inode = (tmp_path / 'a.txt').stat().st_ino
    again = await run_unit(toolset, _ctx(), 'apply_patch', args, stage)
    assert (again.value, again.retry, again.events) == (first.value, None, first.events)
    assert _tree(tmp_path) == after and (tmp_path / 'a.txt').stat().st_ino == inode  # nothing rewritten


async def test_a_patch_whose_file_changed_after_the_plan_is_the_conflict_retry(tmp_path: Path) -> None:
    """A file changed (by anyone) between `plan_change` and `commit_change`: the core's conflict
    retry naming it, and no file of the patch written."""
    from pydantic_ai_harness_rs.durable._operations import Stage, run_unit

    toolset = _patch_toolset(tmp_path)
    args = {'input': PATCH}
    plan = (await run_unit(toolset, _ctx(), 'apply_patch', args, Stage(commit=False))).planned
    assert plan is not None
    (tmp_path / 'c.txt').write_text('changed\n')
    before = _tree(tmp_path)
    late = await run_unit(toolset, _ctx(), 'apply_patch', args, Stage(commit=True, planned=plan))
    assert late.value is None and late.events == []
    assert late.retry is not None and late.retry.startswith("Conflict: file 'c.txt' has changed (expected hash:")
    assert _tree(tmp_path) == before
    # An approved patch's commit answers the approval's stale retry instead.
    stale = await run_unit(toolset, _ctx(), 'apply_patch', args, Stage(commit=True, approved=True, planned=plan))
    assert stale.retry is not None and stale.retry.startswith(
        'A file of this patch changed after the patch was planned'
    )
    assert _tree(tmp_path) == before


@pytest.mark.parametrize('name', ['write_file', 'apply_patch'])
async def test_workflow_code_hands_the_approval_request_key_to_the_plan(name: str) -> None:
    """The request key computed in workflow code (`_approvals.request_key`) reaches the plan operation
    as it is, not replaced by the per-path turn's key (records of two conversations stay apart)."""
    from pydantic_ai_harness_rs.durable._operations import UnitResult, durable_call

    seen: list[str | None] = []

    class Operations:
        async def _durable_plan(self, ctx: Any, name: str, arguments: Any, key: str | None) -> UnitResult:
            seen.append(key)
            return UnitResult(value='answered at the plan')

    arguments = {'path': './a.txt', 'content': 'x'} if name == 'write_file' else {'input': PATCH}
    assert await durable_call(Operations(), _ctx(), name, arguments, key='k' * 32) == 'answered at the plan'
    assert seen == ['k' * 32]


async def test_carried_events_are_emitted_as_recorded_and_the_bare_result_returned() -> None:
    """What a Temporal tool activity carries out (`durable/_carried.py`): each event rebuilt with the
    fields the tool set (a `CommandStartedEvent`'s own `tool_call_id`, no `tool_name`), in order."""
    from pydantic_ai_harness_rs.durable._carried import carry, deliver, record, recording
    from pydantic_ai_harness_rs.shell import CommandFinishedEvent, CommandStartedEvent

    with recording() as recorded:
        pass
    assert carry('result', recorded) == 'result'  # nothing recorded: the result itself
    started = CommandStartedEvent(tool_call_id='call-1', command='echo hi', pid=7)
    finished = CommandFinishedEvent(pid=7, output_path='o', status_path='s', exit_code=0, truncated=False)
    carried = carry('hi\n', [record(started), record(finished)])
    emitted: list[Any] = []

    class Ctx:
        async def emit(self, event: Any) -> Any:
            emitted.append(event)
            return event

    assert await deliver(Ctx(), carried) == 'hi\n'  # type: ignore[arg-type]
    assert emitted == [started, finished]
    assert (emitted[0].tool_call_id, emitted[0].tool_name, emitted[1].tool_call_id) == ('call-1', None, None)
    assert await deliver(Ctx(), 'plain') == 'plain'  # type: ignore[arg-type]


def test_outside_a_workflow_a_run_error_stays_itself() -> None:
    from pydantic_ai_harness_rs.durable._listeners import as_workflow_failure

    error = RuntimeError('a listener broke')
    assert as_workflow_failure(error) is error
