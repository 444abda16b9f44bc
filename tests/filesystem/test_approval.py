"""`FileSystem(require_approval=...)`: Pydantic AI's human-in-the-loop approval of planned changes (issue 21).

A run whose change needs a person ends with `DeferredToolRequests` carrying the planned change;
a NEW process resumes it from the serialized message history with the person's answer (no
request metadata handed back), and the disk shows exactly what was approved.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace
from pydantic_ai_harness_rs.filesystem import (
    FileChangeRequestEvent,
    FileSystem,
    PlannedChange,
    ReadBeforeWrite,
)

from tests.approval_resume import resume_in_new_process
from tests.backends import ProtocolLocal, ShellSandbox
from tests.filesystem.conftest import beyond_reference, sha
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import Call, Transcript, run_tools, scripted_model
from tests.shell.conftest import tool_results

pytestmark = beyond_reference('require_approval is beyond both references (issue 21)')

OLD = 'one\ntwo\n'
H_CAPS_ONE = sha(b'ONE\ntwo\n')
H_MINE = sha(b'mine\n')
H_ONE_TWO = sha(b'one\nTWO\n')
H_ONE_DEUX = sha(b'one\ndeux\n')
H_UNO_TWO = sha(b'uno\ntwo\n')
H_WS = sha(b'ws\n')
H_X = sha(b'x\n')
H_SANDBOXED = sha(b'sandboxed\n')
H_A = sha(b'A\n')
H_B = sha(b'B\n')
STALE = (
    "'notes.txt' changed after this change was planned and approved, so it was not written. "
    'Read it again (read_file) and call the tool again to plan the change anew.'
)


async def request(
    capabilities: list[Any], calls: list[Call], **run: Any
) -> tuple[DeferredToolRequests, list[ModelMessage], Transcript]:
    """Run `calls`; the run must end with `DeferredToolRequests`."""
    transcript = Transcript()
    agent = Agent(capabilities=capabilities, output_type=[str, DeferredToolRequests], retries=10)

    @agent.on_event(FileChangeRequestEvent)
    async def collect(ctx: Any, event: FileChangeRequestEvent) -> None:
        transcript.events.append(event)

    result = await agent.run('go', model=scripted_model(calls, transcript), **run)
    assert isinstance(result.output, DeferredToolRequests), result.output
    return result.output, result.all_messages(), transcript


def resume_elsewhere(spec: dict[str, Any], history: list[ModelMessage], decisions: dict[str, Any]) -> list[list[str]]:
    """Resume in a new Python process (`tests/approval_resume.py`); its tool results."""
    spec = {**spec, 'history': ModelMessagesTypeAdapter.dump_json(history).decode(), 'decisions': decisions}
    return [[plain(kind), text] for kind, text in resume_in_new_process(spec)]


def plain(kind: str) -> str:
    """A result's kind, a denial reading as a return (as Pydantic AI before 2.6x reports it)."""
    return 'return' if kind == 'denied' else kind


async def resume_here(
    capabilities: list[Any], history: list[ModelMessage], results: DeferredToolResults, **run: Any
) -> list[tuple[str, str]]:
    """Resume in this process with a new agent, from the history as JSON (nothing in memory shared)."""
    history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(history))
    agent = Agent(capabilities=capabilities, output_type=[str, DeferredToolRequests], retries=10)
    result = await agent.run(
        message_history=history, deferred_tool_results=results, model=scripted_model([], Transcript()), **run
    )
    return [(plain(kind), text) for kind, text in tool_results(result.all_messages()[len(history) :])]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / 'root'
    path.mkdir()
    (path / 'notes.txt').write_text(OLD)
    return path


def records(directory: Path) -> list[str]:
    approvals = directory / '.pydantic-ai-harness' / 'approvals'
    return sorted(os.listdir(approvals)) if approvals.is_dir() else []


# --- the request --------------------------------------------------------------------------


async def test_a_write_stops_with_the_planned_diff_and_writes_nothing(root: Path) -> None:
    requests, _, transcript = await request(
        [FileSystem(root_dir=root, require_approval=True)],
        [('write_file', {'path': 'notes.txt', 'content': 'one\nTWO\n'})],
    )
    assert [call.tool_call_id for call in requests.approvals] == ['call-1']
    metadata = requests.metadata['call-1']
    assert len(metadata.pop('arguments_digest')) == 64
    assert metadata == {
        'tool_name': 'write_file',
        'operation': 'write',
        'path': 'notes.txt',
        'root_dir': str(root.resolve()),
        'diff': '--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO',
        'truncated': False,
        'content_hash': sha(OLD.encode()),
        'path_argument': 'notes.txt',
    }
    assert (root / 'notes.txt').read_text() == OLD
    assert transcript.events == []  # the listener is asked after approval, before the commit
    assert len(records(root)) == 1
    assert (root / '.pydantic-ai-harness' / '.gitignore').read_text() == '*\n'


async def test_a_new_file_has_no_content_hash(root: Path) -> None:
    requests, _, _ = await request(
        [FileSystem(root_dir=root, require_approval=['write_file'])],
        [('write_file', {'path': 'new.txt', 'content': 'hi\n'})],
    )
    assert requests.metadata['call-1']['content_hash'] is None
    assert requests.metadata['call-1']['diff'] == '--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi'
    assert not (root / 'new.txt').exists()


# --- resumed in a new process ------------------------------------------------------------


@pytest.mark.parametrize(
    ('decision', 'on_disk', 'result'),
    [
        ({'approve': True}, 'one\nTWO\n', f'Wrote 8 chars (2 lines) to notes.txt. [hash:{H_ONE_TWO}]'),
        (
            {'approve': True, 'override_args': {'path': 'notes.txt', 'content': 'mine\n'}},
            'mine\n',
            f'Wrote 5 chars (1 lines) to notes.txt. [hash:{H_MINE}]\n'
            '[A person changed the arguments of this call before approving it; it ran with: '
            '{"path": "notes.txt", "content": "mine\\n"}]',
        ),
        ({'deny': 'Not that file.'}, OLD, 'Not that file.'),
    ],
    ids=['approve', 'override', 'deny'],
)
async def test_a_new_process_resumes_with_the_persons_answer(
    root: Path, decision: dict[str, Any], on_disk: str, result: str
) -> None:
    _, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)],
        [('write_file', {'path': 'notes.txt', 'content': 'one\nTWO\n'})],
    )
    spec = {'capability': 'file_system', 'root_dir': str(root), 'options': {'require_approval': True}}
    assert resume_elsewhere(spec, history, {'call-1': decision}) == [['return', result]]
    assert (root / 'notes.txt').read_text() == on_disk
    if 'deny' not in decision:
        assert records(root) == []  # used, so removed


async def test_a_file_changed_after_the_request_gets_a_replan_not_a_write(root: Path) -> None:
    _, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)],
        [('edit_file', {'path': 'notes.txt', 'old_text': 'two', 'new_text': 'TWO'})],
    )
    (root / 'notes.txt').write_text('one\ntwo\nthree\n')  # someone else, meanwhile
    spec = {'capability': 'file_system', 'root_dir': str(root), 'options': {'require_approval': True}}
    assert resume_elsewhere(spec, history, {'call-1': {'approve': True}}) == [['retry', STALE]]
    assert (root / 'notes.txt').read_text() == 'one\ntwo\nthree\n'


async def test_a_file_deleted_after_the_request_is_not_written_back(root: Path) -> None:
    _, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)],
        [('write_file', {'path': 'notes.txt', 'content': 'replaced\n'})],
    )
    (root / 'notes.txt').unlink()  # someone else, meanwhile
    spec = {'capability': 'file_system', 'root_dir': str(root), 'options': {'require_approval': True}}
    assert resume_elsewhere(spec, history, {'call-1': {'approve': True}}) == [['retry', STALE]]
    assert not (root / 'notes.txt').exists()


async def test_a_file_created_after_a_new_file_request_is_not_overwritten(root: Path) -> None:
    _, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)],
        [('write_file', {'path': 'new.txt', 'content': 'planned\n'})],
    )
    (root / 'new.txt').write_text('theirs\n')
    results = await resume_here(
        [FileSystem(root_dir=root, require_approval=True)],
        history,
        DeferredToolResults(approvals={'call-1': ToolApproved()}),
    )
    assert results == [('retry', STALE.replace('notes.txt', 'new.txt'))]
    assert (root / 'new.txt').read_text() == 'theirs\n'


async def test_read_before_write_holds_across_the_approval(root: Path) -> None:
    fs = FileSystem(root_dir=root, require_approval=True)
    _, history, _ = await request(
        [fs, ReadBeforeWrite()],
        [('read_file', {'path': 'notes.txt'}), ('write_file', {'path': 'notes.txt', 'content': 'x\n'})],
    )
    spec = {
        'capability': 'file_system',
        'root_dir': str(root),
        'options': {'require_approval': True},
        'read_before_write': True,
    }
    results = resume_elsewhere(spec, history, {'call-2': {'approve': True}})
    assert results == [['return', f'Wrote 2 chars (1 lines) to notes.txt. [hash:{H_X}]']]
    assert (root / 'notes.txt').read_text() == 'x\n'


async def test_an_unread_file_is_still_refused_by_read_before_write(root: Path) -> None:
    # The plan itself is refused: nobody is asked about a change that could not go ahead.
    transcript = Transcript()
    agent = Agent(
        capabilities=[FileSystem(root_dir=root, require_approval=True), ReadBeforeWrite()],
        output_type=[str, DeferredToolRequests],
    )
    result = await agent.run(
        'go', model=scripted_model([('write_file', {'path': 'notes.txt', 'content': 'x\n'})], transcript)
    )
    assert result.output == 'done'
    assert transcript.results[0].startswith("RETRY: 'notes.txt' exists and has not been read in this run")
    assert (root / 'notes.txt').read_text() == OLD


async def test_the_listener_is_asked_after_approval_and_its_veto_holds(root: Path) -> None:
    _, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)],
        [('write_file', {'path': 'notes.txt', 'content': 'x\n'})],
    )
    asked: list[str] = []
    agent = Agent(
        capabilities=[FileSystem(root_dir=root, require_approval=True)], output_type=[str, DeferredToolRequests]
    )

    @agent.on_event(FileChangeRequestEvent)
    async def veto(ctx: Any, event: FileChangeRequestEvent) -> None:
        asked.append(event.diff)
        event.cancel('policy says no')

    result = await agent.run(
        message_history=history,
        deferred_tool_results=DeferredToolResults(approvals={'call-1': ToolApproved()}),
        model=scripted_model([], Transcript()),
    )
    assert tool_results(result.all_messages()[len(history) :]) == [
        ('return', "['notes.txt' was not written: policy says no]")
    ]
    assert asked == ['--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1 @@\n-one\n-two\n+x']
    assert (root / 'notes.txt').read_text() == OLD


async def test_metadata_handed_back_is_enough_without_the_record(root: Path) -> None:
    requests, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)],
        [('edit_file', {'path': 'notes.txt', 'old_text': 'one', 'new_text': 'ONE'})],
    )
    for name in records(root):
        (root / '.pydantic-ai-harness' / 'approvals' / name).unlink()
    results = await resume_here(
        [FileSystem(root_dir=root, require_approval=True)],
        history,
        DeferredToolResults(approvals={'call-1': ToolApproved()}, metadata=requests.metadata),
    )
    assert results == [('return', f'Edited notes.txt. [hash:{H_CAPS_ONE}]')]


async def test_an_approval_without_metadata_or_record_writes_nothing(root: Path) -> None:
    _, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)],
        [('write_file', {'path': 'notes.txt', 'content': 'x\n'})],
    )
    for name in records(root):
        (root / '.pydantic-ai-harness' / 'approvals' / name).unlink()
    results = await resume_here(
        [FileSystem(root_dir=root, require_approval=True)],
        history,
        DeferredToolResults(approvals={'call-1': ToolApproved()}),
    )
    assert results == [
        (
            'retry',
            'The approval of this change could not be matched to its request (its record is gone), so '
            'nothing was written. Call the tool again to plan the change and ask for approval anew.',
        )
    ]
    assert (root / 'notes.txt').read_text() == OLD


async def test_a_callable_judges_again_an_approval_it_has_no_record_of(root: Path) -> None:
    # Approved elsewhere (another approval layer, or a lost record): the callable decides anew.
    _, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)],
        [('write_file', {'path': 'notes.txt', 'content': 'x\n'})],
    )
    for name in records(root):
        (root / '.pydantic-ai-harness' / 'approvals' / name).unlink()
    results = await resume_here(
        [FileSystem(root_dir=root, require_approval=lambda change: change.path.endswith('.py'))],
        history,
        DeferredToolResults(approvals={'call-1': ToolApproved()}),
    )
    assert results == [('return', f'Wrote 2 chars (1 lines) to notes.txt. [hash:{H_X}]')]
    assert (root / 'notes.txt').read_text() == 'x\n'


async def test_create_directory_is_asked_and_an_override_is_said(root: Path) -> None:
    requests, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)], [('create_directory', {'path': 'build'})]
    )
    metadata = requests.metadata['call-1']
    assert (metadata['operation'], metadata['path'], metadata['diff'], metadata['content_hash']) == (
        'create_directory',
        'build',
        '',
        None,
    )
    assert not (root / 'build').exists()
    spec = {'capability': 'file_system', 'root_dir': str(root), 'options': {'require_approval': True}}
    results = resume_elsewhere(spec, history, {'call-1': {'approve': True, 'override_args': {'path': 'out'}}})
    assert results == [
        [
            'return',
            'Created directory: out\n'
            '[A person changed the arguments of this call before approving it; it ran with: {"path": "out"}]',
        ]
    ]
    assert (root / 'out').is_dir() and not (root / 'build').exists()


async def test_an_edit_override_applies_the_persons_replacement(root: Path) -> None:
    _, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=['edit_file'])],
        [('edit_file', {'path': 'notes.txt', 'old_text': 'two', 'new_text': 'TWO'})],
    )
    override = {'path': 'notes.txt', 'old_text': 'two', 'new_text': 'deux'}
    spec = {'capability': 'file_system', 'root_dir': str(root), 'options': {'require_approval': ['edit_file']}}
    [[kind, text]] = resume_elsewhere(spec, history, {'call-1': {'approve': True, 'override_args': override}})
    assert kind == 'return'
    assert text.startswith(f'Edited notes.txt. [hash:{H_ONE_DEUX}]\n[A person changed the arguments')
    assert '"deux"' in text
    assert (root / 'notes.txt').read_text() == 'one\ndeux\n'


# --- which changes need a person ----------------------------------------------------------


async def test_a_list_asks_only_for_the_named_tools(root: Path) -> None:
    requests, _, _ = await request(
        [FileSystem(root_dir=root, require_approval=['edit_file'])],
        [
            ('write_file', {'path': 'free.txt', 'content': 'free\n'}),
            ('create_directory', {'path': 'dir'}),
            ('edit_file', {'path': 'notes.txt', 'old_text': 'two', 'new_text': 'TWO'}),
        ],
    )
    assert [call.tool_name for call in requests.approvals] == ['edit_file']
    assert (root / 'free.txt').read_text() == 'free\n' and (root / 'dir').is_dir()
    assert (root / 'notes.txt').read_text() == OLD


@pytest.mark.parametrize('asynchronous', [False, True], ids=['sync', 'async'])
async def test_a_callable_decides_on_the_planned_change(root: Path, asynchronous: bool) -> None:
    seen: list[PlannedChange] = []

    def python_only(change: PlannedChange) -> bool:
        seen.append(change)
        return change.path.endswith('.py')

    async def python_only_async(change: PlannedChange) -> bool:
        return python_only(change)

    requests, _, _ = await request(
        [FileSystem(root_dir=root, require_approval=python_only_async if asynchronous else python_only)],
        [
            ('write_file', {'path': 'notes.txt', 'content': 'free\n'}),
            ('write_file', {'path': 'app.py', 'content': 'print(1)\n'}),
        ],
    )
    assert [call.args_as_dict() for call in requests.approvals] == [{'path': 'app.py', 'content': 'print(1)\n'}]
    assert (root / 'notes.txt').read_text() == 'free\n' and not (root / 'app.py').exists()
    assert seen[0] == PlannedChange(
        tool_name='write_file',
        operation='write',
        path='notes.txt',
        root_dir=str(root.resolve()),
        diff='--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1 @@\n-one\n-two\n+free',
        truncated=False,
        content_hash=sha(OLD.encode()),
    )


async def test_the_records_are_out_of_the_models_reach(root: Path) -> None:
    requests, _, _ = await request(
        [FileSystem(root_dir=root, require_approval=['edit_file'])],
        [
            ('edit_file', {'path': 'notes.txt', 'old_text': 'two', 'new_text': 'TWO'}),
        ],
    )
    [name] = records(root)
    record = root / '.pydantic-ai-harness' / 'approvals' / name
    before = record.read_bytes()
    transcript = Transcript()
    agent = Agent(capabilities=[FileSystem(root_dir=root, require_approval=['edit_file'])], retries=10)
    await agent.run(
        'go',
        model=scripted_model(
            [
                ('write_file', {'path': f'.pydantic-ai-harness/approvals/{name}', 'content': '{}'}),
                ('write_file', {'path': '.pydantic-ai-harness', 'content': 'x'}),
            ],
            transcript,
        ),
    )
    assert all(result.startswith('RETRY: ') for result in transcript.results), transcript.results
    assert record.read_bytes() == before


# --- both contracts, local and not -------------------------------------------------------


async def test_a_local_workspace_resumes_in_a_new_process(tmp_path: Path) -> None:
    (tmp_path / 'notes.txt').write_text(OLD)
    workspace = Workspace(LocalWorkspaceBackend(tmp_path))
    requests, history, _ = await request(
        [FileSystem(require_approval=True)],
        [('write_file', {'path': 'notes.txt', 'content': 'ws\n'})],
        workspace=workspace,
    )
    assert requests.metadata['call-1']['root_dir'] == str(tmp_path.resolve())
    spec = {'capability': 'file_system_workspace', 'workspace': str(tmp_path), 'options': {'require_approval': True}}
    results = resume_elsewhere(spec, history, {'call-1': {'approve': True}})
    assert results == [['return', f'Wrote 3 chars (1 lines) to notes.txt. [hash:{H_WS}]']]
    assert (tmp_path / 'notes.txt').read_text() == 'ws\n'
    assert records(tmp_path) == []


@pytest.mark.parametrize('changed_meanwhile', [False, True], ids=['unchanged', 'changed'])
async def test_a_workspace_off_this_host_keeps_its_record_in_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, changed_meanwhile: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    backend = MemoryWorkspace({'notes.txt': OLD})
    requests, history, _ = await request(
        [FileSystem(require_approval=True)],
        [('edit_file', {'path': 'notes.txt', 'old_text': 'one', 'new_text': 'uno'})],
        workspace=Workspace(backend),
    )
    assert requests.metadata['call-1']['diff'] == '--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n-one\n+uno\n two'
    assert [p for p in backend.files if '/.pydantic-ai-harness/approvals/' in p]
    assert os.listdir(tmp_path) == []  # nothing on the host
    if changed_meanwhile:
        backend.files['/ws/notes.txt'] = b'one\ntwo\nthree\n'
    results = await resume_here(
        [FileSystem(require_approval=True)],
        history,
        DeferredToolResults(approvals={'call-1': ToolApproved()}),
        workspace=Workspace(backend),
    )
    if changed_meanwhile:
        assert results == [('retry', STALE)]
        assert backend.files['/ws/notes.txt'] == b'one\ntwo\nthree\n'
    else:
        assert results == [('return', f'Edited notes.txt. [hash:{H_UNO_TWO}]')]
        assert backend.files['/ws/notes.txt'] == b'uno\ntwo\n'
    assert not [p for p in backend.files if '/.pydantic-ai-harness/approvals/' in p]


@pytest.mark.parametrize('kind', ['shell_sandbox', 'protocol_local'])
async def test_a_commands_only_or_protocol_backend_keeps_the_record_beside_the_files(tmp_path: Path, kind: str) -> None:
    (tmp_path / 'notes.txt').write_text(OLD)

    def backend() -> Any:  # a new object per run, as a new process would build
        return ShellSandbox(tmp_path) if kind == 'shell_sandbox' else ProtocolLocal(tmp_path)

    requests, history, _ = await request(
        [FileSystem(require_approval=True)],
        [('write_file', {'path': 'notes.txt', 'content': 'sandboxed\n'})],
        workspace=Workspace(backend()),
    )
    assert requests.metadata['call-1']['content_hash'] == sha(OLD.encode())
    assert len(records(tmp_path)) == 1
    results = await resume_here(
        [FileSystem(require_approval=True)],
        history,
        DeferredToolResults(approvals={'call-1': ToolApproved()}),
        workspace=Workspace(backend()),
    )
    assert results == [('return', f'Wrote 10 chars (1 lines) to notes.txt. [hash:{H_SANDBOXED}]')]
    assert (tmp_path / 'notes.txt').read_text() == 'sandboxed\n'
    assert records(tmp_path) == []


async def test_a_denial_reaches_the_model_on_a_workspace(tmp_path: Path) -> None:
    backend = MemoryWorkspace({'notes.txt': OLD})
    _, history, _ = await request(
        [FileSystem(require_approval=['write_file'])],
        [('write_file', {'path': 'notes.txt', 'content': 'x'})],
        workspace=Workspace(backend),
    )
    results = await resume_here(
        [FileSystem(require_approval=['write_file'])],
        history,
        DeferredToolResults(approvals={'call-1': ToolDenied('No.')}),
        workspace=Workspace(backend),
    )
    assert results == [('return', 'No.')]
    assert backend.files['/ws/notes.txt'] == OLD.encode()


# --- the argument -------------------------------------------------------------------------


def test_off_by_default_and_checked_at_construction(tmp_path: Path) -> None:
    assert FileSystem(root_dir=tmp_path).require_approval is False
    with pytest.raises(ValueError, match='unknown change tools: read_file, writ_file'):
        FileSystem(root_dir=tmp_path, require_approval=['write_file', 'writ_file', 'read_file'])
    with pytest.raises(TypeError, match='takes True, False, a list of change tools or a callable'):
        FileSystem(root_dir=tmp_path, require_approval='write_file')  # type: ignore[arg-type]


_SHAPES = st.one_of(
    st.booleans(),
    st.none(),
    st.integers(),
    st.text(max_size=12),
    st.lists(
        st.one_of(
            st.sampled_from(['write_file', 'edit_file', 'create_directory', 'read_file']),
            st.text(max_size=8),
            st.integers(),
        ),
        max_size=4,
    ),
    st.tuples(st.sampled_from(['write_file', 'edit_file'])),
    st.frozensets(st.sampled_from(['write_file', 'edit_file', 'create_directory'])),
    st.dictionaries(st.text(max_size=4), st.booleans(), max_size=2),
    st.just(lambda change: True),
)


@settings(max_examples=150, deadline=None)
@given(value=_SHAPES)
def test_every_shape_is_accepted_or_refused_clearly(value: Any) -> None:
    names = {'write_file', 'edit_file', 'create_directory'}
    valid = (
        isinstance(value, bool)
        or callable(value)
        or (
            isinstance(value, (list, tuple, frozenset))
            and all(isinstance(name, str) for name in value)
            and set(value) <= names
        )
    )
    try:
        FileSystem(root_dir='.', require_approval=value)
    except (TypeError, ValueError) as error:
        assert not valid, error
        assert 'require_approval' in str(error)
    else:
        assert valid, value


# --- the records' keys, denials, a callable that fails ------------------------------------


async def test_two_conversations_reusing_a_call_id_keep_their_own_requests(root: Path) -> None:
    # Every scripted conversation names its first call `call-1`, as local models reuse `call_0`.
    (root / 'a.txt').write_text(OLD)
    (root / 'b.txt').write_text(OLD)
    _, first, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)], [('write_file', {'path': 'a.txt', 'content': 'A\n'})]
    )
    _, second, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)], [('write_file', {'path': 'b.txt', 'content': 'B\n'})]
    )
    assert len(records(root)) == 2  # both pending
    spec = {'capability': 'file_system', 'root_dir': str(root), 'options': {'require_approval': True}}
    assert resume_elsewhere(spec, first, {'call-1': {'approve': True}}) == [
        ['return', f'Wrote 2 chars (1 lines) to a.txt. [hash:{H_A}]']
    ]
    assert resume_elsewhere(spec, second, {'call-1': {'approve': True}}) == [
        ['return', f'Wrote 2 chars (1 lines) to b.txt. [hash:{H_B}]']
    ]
    assert ((root / 'a.txt').read_text(), (root / 'b.txt').read_text()) == ('A\n', 'B\n')
    assert records(root) == []


@pytest.mark.parametrize('where', ['here', 'new process'])
async def test_a_denied_resume_removes_the_record(root: Path, where: str) -> None:
    _, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)], [('write_file', {'path': 'notes.txt', 'content': 'x\n'})]
    )
    assert len(records(root)) == 1
    if where == 'here':
        results = await resume_here(
            [FileSystem(root_dir=root, require_approval=True)],
            history,
            DeferredToolResults(approvals={'call-1': ToolDenied('No.')}),
        )
    else:
        spec = {'capability': 'file_system', 'root_dir': str(root), 'options': {'require_approval': True}}
        results = [tuple(result) for result in resume_elsewhere(spec, history, {'call-1': {'deny': 'No.'}})]
    assert results == [('return', 'No.')]
    assert records(root) == []
    assert (root / 'notes.txt').read_text() == OLD


async def test_a_denial_on_a_workspace_off_this_host_removes_its_record() -> None:
    backend = MemoryWorkspace({'notes.txt': OLD})
    _, history, _ = await request(
        [FileSystem(require_approval=True)],
        [('write_file', {'path': 'notes.txt', 'content': 'x'})],
        workspace=Workspace(backend),
    )
    assert [p for p in backend.files if '/.pydantic-ai-harness/approvals/' in p]
    await resume_here(
        [FileSystem(require_approval=True)],
        history,
        DeferredToolResults(approvals={'call-1': ToolDenied('No.')}),
        workspace=Workspace(backend),
    )
    assert not [p for p in backend.files if '/.pydantic-ai-harness/approvals/' in p]


@pytest.mark.parametrize(
    'shape',
    [lambda: True, lambda change, other: True, lambda *, change: True],
    ids=['no argument', 'two arguments', 'keyword only'],
)
def test_a_callable_of_the_wrong_shape_is_refused_at_construction(tmp_path: Path, shape: Any) -> None:
    with pytest.raises(
        TypeError,
        match=r'FileSystem\(require_approval=\.\.\.\) takes a callable of one positional argument, the PlannedChange',
    ):
        FileSystem(root_dir=tmp_path, require_approval=shape)


def test_callables_of_one_positional_argument_are_accepted(tmp_path: Path) -> None:
    async def asynchronous(change: PlannedChange) -> bool:
        return True

    for shape in (lambda change, extra=1: True, lambda *changes: True, asynchronous, len):
        FileSystem(root_dir=tmp_path, require_approval=shape)


@pytest.mark.parametrize('asynchronous', [False, True], ids=['sync', 'async'])
async def test_a_callable_that_raises_fails_closed(
    root: Path, asynchronous: bool, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(change: PlannedChange) -> bool:
        raise ValueError('no policy for notes.txt')

    async def broken_async(change: PlannedChange) -> bool:
        return broken(change)

    requests, _, _ = await request(
        [FileSystem(root_dir=root, require_approval=broken_async if asynchronous else broken)],
        [('write_file', {'path': 'notes.txt', 'content': 'x\n'})],
    )
    assert requests.metadata['call-1']['approval_check_error'] == 'ValueError: no policy for notes.txt'
    assert (root / 'notes.txt').read_text() == OLD
    assert len(records(root)) == 1
    [warning] = [r for r in caplog.records if r.name == 'pydantic_ai_harness_rs.approvals']
    assert warning.levelname == 'WARNING' and 'ValueError: no policy for notes.txt' in warning.getMessage()


# --- big files: the person sees the first hunks ---------------------------------------------


BIG_LINES = 1_700_000  # 'row 00000000\n' a line: 22 MB


def big_text() -> str:
    return ''.join(f'row {k:08d}\n' for k in range(BIG_LINES))


async def test_a_big_file_shows_its_first_hunks_to_the_person_and_the_listener(root: Path) -> None:
    (root / 'big.txt').write_text(big_text())
    requests, history, _ = await request(
        [FileSystem(root_dir=root, require_approval=True)],
        [('edit_file', {'path': 'big.txt', 'old_text': 'row 00000005\n', 'new_text': 'row five\n'})],
    )
    hunk = (
        '--- a/big.txt\n+++ b/big.txt\n@@ -3,7 +3,7 @@\n row 00000002\n row 00000003\n row 00000004\n'
        '-row 00000005\n+row five\n row 00000006\n row 00000007\n row 00000008'
    )
    metadata = requests.metadata['call-1']
    assert (metadata['diff'], metadata['truncated']) == (hunk, True)
    asked: list[tuple[str, bool]] = []
    agent = Agent(
        capabilities=[FileSystem(root_dir=root, require_approval=True)], output_type=[str, DeferredToolRequests]
    )

    @agent.on_event(FileChangeRequestEvent)
    async def listen(ctx: Any, event: FileChangeRequestEvent) -> None:
        asked.append((event.diff, event.truncated))

    await agent.run(
        message_history=history,
        deferred_tool_results=DeferredToolResults(approvals={'call-1': ToolApproved()}),
        model=scripted_model([], Transcript()),
    )
    assert asked == [(hunk, True)]
    with (root / 'big.txt').open() as written:
        assert [next(written) for _ in range(7)][5:] == ['row five\n', 'row 00000006\n']


@pytest.mark.parametrize('where', ['root_dir', 'memory workspace'])
async def test_a_big_write_shows_its_first_hunks(root: Path, where: str) -> None:
    old = ''.join(f'row {k:08d}\n' for k in range(100_000))  # 1.3 MB, past the document's diff bounds
    new = old.replace('row 00000010\n', 'ten\n').replace('row 00099990\n', 'ninety-nine thousand nine hundred ninety\n')
    run: dict[str, Any] = {}
    if where == 'root_dir':
        (root / 'big.txt').write_text(old)
        capability = FileSystem(root_dir=root, require_approval=True)
    else:
        run['workspace'] = Workspace(MemoryWorkspace({'big.txt': old}))
        capability = FileSystem(require_approval=True)
    requests, _, _ = await request([capability], [('write_file', {'path': 'big.txt', 'content': new})], **run)
    diff = requests.metadata['call-1']['diff']
    assert requests.metadata['call-1']['truncated'] is True
    assert diff.startswith('--- a/big.txt\n+++ b/big.txt\n@@ -8,7 +8,7 @@\n row 00000007\n')
    assert '-row 00000010\n+ten\n' in diff
    assert '@@ -99988,7 +99988,7 @@' in diff and diff.endswith(' row 00099993')


async def test_without_approvals_a_big_change_keeps_the_documents_headers_only(root: Path) -> None:
    (root / 'big.txt').write_text(big_text())
    transcript = await run_tools(
        [FileSystem(root_dir=root)],
        [('edit_file', {'path': 'big.txt', 'old_text': 'row 00000005\n', 'new_text': 'row five\n'})],
    )
    assert [(e.diff, e.truncated) for e in transcript.of(FileChangeRequestEvent)] == [
        ('--- a/big.txt\n+++ b/big.txt', True)
    ]
