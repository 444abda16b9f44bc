"""`Shell(require_approval=...)`: Pydantic AI's human-in-the-loop approval of commands (issue 21).

A command that needs a person does not start; the run ends with `DeferredToolRequests` carrying
the command, its directory and whether it runs in the background. Resumed (here, or in a new
process from the serialized history), an approval runs it, an override runs the person's
command and tells the model, a denial runs nothing.
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
from pydantic_ai_harness_rs.shell import PlannedCommand, Shell

from tests.approval_resume import resume_in_new_process
from tests.shell.conftest import Call, Script, command_id, kill_matching, live_processes_matching, tool_results

pytestmark = pytest.mark.anyio


NOTE = '[A person changed the arguments of this call before approving it; it ran with: '


def plain(results: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Results with a denial reading as a return (as Pydantic AI before 2.6x reports it)."""
    return [('return' if kind == 'denied' else kind, text) for kind, text in results]


async def request(shell: Shell, ws: Path, calls: list[Call]) -> tuple[Any, list[ModelMessage]]:
    agent = Agent(Script(calls).model(), capabilities=[shell], output_type=[str, DeferredToolRequests], retries=10)
    result = await agent.run('go', workspace=Workspace(LocalWorkspaceBackend(ws)))
    return result.output, result.all_messages()


async def resume(
    shell: Shell, ws: Path, history: list[ModelMessage], results: DeferredToolResults
) -> list[tuple[str, str]]:
    history = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(history))
    agent = Agent(Script([]).model(), capabilities=[shell], output_type=[str, DeferredToolRequests], retries=10)
    result = await agent.run(
        message_history=history, deferred_tool_results=results, workspace=Workspace(LocalWorkspaceBackend(ws))
    )
    return plain(tool_results(result.all_messages()[len(history) :]))


def visible(ws: Path) -> list[str]:
    return sorted(name for name in os.listdir(ws) if name != '.pydantic-ai-harness')


async def test_a_command_waits_for_approval_then_runs(ws: Path) -> None:
    output, history = await request(Shell(require_approval=True), ws, [('run_command', {'command': 'touch made'})])
    assert isinstance(output, DeferredToolRequests)
    metadata = output.metadata['call-0']
    assert len(metadata.pop('arguments_digest')) == 64
    assert metadata == {
        'tool_name': 'run_command',
        'command': 'touch made',
        'cwd': str(ws.resolve()),
        'background': False,
    }
    assert visible(ws) == []  # not run before approval
    results = await resume(
        Shell(require_approval=True), ws, history, DeferredToolResults(approvals={'call-0': ToolApproved()})
    )
    assert results == [('return', '(no output)')]
    assert visible(ws) == ['made']


async def test_an_override_runs_the_persons_command_and_the_model_is_told(ws: Path) -> None:
    _, history = await request(Shell(require_approval=True), ws, [('run_command', {'command': 'touch planned'})])
    approval = ToolApproved(override_args={'command': 'touch edited'})
    results = await resume(
        Shell(require_approval=True), ws, history, DeferredToolResults(approvals={'call-0': approval})
    )
    assert results == [('return', f'(no output)\n{NOTE}{{"command": "touch edited"}}]')]
    assert visible(ws) == ['edited']


async def test_a_denial_runs_nothing(ws: Path) -> None:
    _, history = await request(Shell(require_approval=True), ws, [('run_command', {'command': 'touch no'})])
    denial = ToolDenied('Not now.')
    results = await resume(Shell(require_approval=True), ws, history, DeferredToolResults(approvals={'call-0': denial}))
    assert results == [('return', 'Not now.')]
    assert visible(ws) == []


async def test_a_new_process_resumes_from_the_serialized_history(ws: Path) -> None:
    _, history = await request(Shell(require_approval=['touch']), ws, [('run_command', {'command': 'touch a'})])
    spec = {
        'capability': 'shell',
        'workspace': str(ws),
        'options': {'require_approval': ['touch']},
        'history': ModelMessagesTypeAdapter.dump_json(history).decode(),
        'decisions': {'call-0': {'approve': True, 'override_args': {'command': 'touch b'}}},
    }
    assert resume_in_new_process(spec) == [['return', f'(no output)\n{NOTE}{{"command": "touch b"}}]']]
    assert visible(ws) == ['b']


@pytest.mark.parametrize(
    ('command', 'asks'),
    [
        ('touch x', True),
        ('echo a | touch x', True),
        ('echo a && /usr/bin/touch x', True),
        ('echo $(touch x)', True),
        ('echo a; ls', False),
        ('echo touch', False),
    ],
)
async def test_a_list_judges_every_command_of_the_script(ws: Path, command: str, asks: bool) -> None:
    pytest.importorskip('tree_sitter_bash')
    output, _ = await request(Shell(require_approval=['touch']), ws, [('run_command', {'command': command})])
    assert isinstance(output, DeferredToolRequests) is asks


@pytest.mark.parametrize('asynchronous', [False, True], ids=['sync', 'async'])
async def test_a_callable_decides_and_start_command_is_background(ws: Path, asynchronous: bool) -> None:
    seen: list[PlannedCommand] = []

    def servers(planned: PlannedCommand) -> bool:
        seen.append(planned)
        return planned.background

    async def servers_async(planned: PlannedCommand) -> bool:
        return servers(planned)

    marker = f'approval-bg-{asynchronous}'
    shell = Shell(
        require_approval=servers_async if asynchronous else servers,
        tools=['run_command', 'start_command', 'check_command', 'stop_command'],
    )
    output, history = await request(
        shell, ws, [('run_command', {'command': 'touch quick'}), ('start_command', {'command': f'sleep 30 # {marker}'})]
    )
    assert isinstance(output, DeferredToolRequests)
    assert [call.tool_name for call in output.approvals] == ['start_command']
    assert output.metadata['call-1']['background'] is True
    assert seen == [
        PlannedCommand('run_command', 'touch quick', str(ws.resolve()), False),
        PlannedCommand('start_command', f'sleep 30 # {marker}', str(ws.resolve()), True),
    ]
    assert visible(ws) == ['quick']
    assert live_processes_matching(marker) == []  # not started before approval
    try:
        results = await resume(shell, ws, history, DeferredToolResults(approvals={'call-1': ToolApproved()}))
        [(kind, text)] = results
        assert kind == 'return' and text.startswith(f"Started background command: 'sleep 30 # {marker}'")
        stop = Agent(Script([('stop_command', {'command_id': command_id(text)})]).model(), capabilities=[shell])
        await stop.run('go', workspace=Workspace(LocalWorkspaceBackend(ws)))
    finally:
        kill_matching(marker)


async def test_the_shell_tool_asks_with_its_mode(ws: Path) -> None:
    shell = Shell(require_approval=True, tools=['shell'])
    output, history = await request(shell, ws, [('shell', {'command': 'touch persisted', 'mode': 'background'})])
    assert isinstance(output, DeferredToolRequests)
    metadata = output.metadata['call-0']
    assert (metadata['tool_name'], metadata['cwd'], metadata['background']) == ('shell', str(ws.resolve()), True)
    assert visible(ws) == []
    denial = DeferredToolResults(approvals={'call-0': ToolDenied('Use run_command.')})
    assert await resume(shell, ws, history, denial) == [('return', 'Use run_command.')]
    assert visible(ws) == []


async def test_check_and_stop_never_ask(ws: Path) -> None:
    output, _ = await request(
        Shell(require_approval=True),
        ws,
        [('check_command', {'command_id': 'nope'}), ('stop_command', {'command_id': 'nope'})],
    )
    assert output == 'done'


def test_off_by_default_and_checked_at_construction() -> None:
    assert Shell().require_approval is False
    with pytest.raises(TypeError, match='takes True, False, a list of command names or a callable'):
        Shell(require_approval='rm')  # type: ignore[arg-type]
    with pytest.raises(ValueError, match='a name is empty'):
        Shell(require_approval=[''])


_SHAPES = st.one_of(
    st.booleans(),
    st.none(),
    st.integers(),
    st.text(max_size=8),
    st.lists(st.one_of(st.text(max_size=6), st.integers(), st.none()), max_size=4),
    st.tuples(st.sampled_from(['rm', 'git'])),
    st.dictionaries(st.text(max_size=4), st.booleans(), max_size=2),
    st.just(lambda planned: False),
)


@settings(max_examples=150, deadline=None)
@given(value=_SHAPES)
def test_every_shape_is_accepted_or_refused_clearly(value: Any) -> None:
    valid = (
        isinstance(value, bool)
        or callable(value)
        or (isinstance(value, (list, tuple)) and all(isinstance(name, str) and name for name in value))
    )
    try:
        Shell(require_approval=value)
    except (TypeError, ValueError) as error:
        assert not valid, error
        assert 'require_approval' in str(error)
    else:
        assert valid, value


# --- the records' keys, denials, a callable that fails ------------------------------------


def records(ws: Path) -> list[str]:
    approvals = ws / '.pydantic-ai-harness' / 'approvals'
    return sorted(os.listdir(approvals)) if approvals.is_dir() else []


async def test_two_conversations_reusing_a_call_id_keep_their_own_requests(ws: Path) -> None:
    # Both conversations name their call `call-0`, as local models reuse `call_0`.
    _, first = await request(Shell(require_approval=True), ws, [('run_command', {'command': 'touch first'})])
    _, second = await request(Shell(require_approval=True), ws, [('run_command', {'command': 'touch second'})])
    assert len(records(ws)) == 2  # both pending
    for history in (first, second):
        spec = {
            'capability': 'shell',
            'workspace': str(ws),
            'options': {'require_approval': True},
            'history': ModelMessagesTypeAdapter.dump_json(history).decode(),
            'decisions': {'call-0': {'approve': True}},
        }
        assert resume_in_new_process(spec) == [['return', '(no output)']]  # no note: nobody changed them
    assert visible(ws) == ['first', 'second']
    assert records(ws) == []


async def test_a_denied_resume_removes_the_record(ws: Path) -> None:
    _, history = await request(Shell(require_approval=True), ws, [('run_command', {'command': 'touch no'})])
    assert len(records(ws)) == 1
    denial = DeferredToolResults(approvals={'call-0': ToolDenied('Not now.')})
    assert await resume(Shell(require_approval=True), ws, history, denial) == [('return', 'Not now.')]
    assert records(ws) == []


@pytest.mark.parametrize('shape', [lambda: True, lambda planned, other: True], ids=['no argument', 'two arguments'])
def test_a_callable_of_the_wrong_shape_is_refused_at_construction(shape: Any) -> None:
    with pytest.raises(
        TypeError,
        match=r'Shell\(require_approval=\.\.\.\) takes a callable of one positional argument, the PlannedCommand',
    ):
        Shell(require_approval=shape)


async def test_a_callable_that_raises_fails_closed(ws: Path, caplog: pytest.LogCaptureFixture) -> None:
    def broken(planned: PlannedCommand) -> bool:
        raise KeyError('touch')

    output, _ = await request(Shell(require_approval=broken), ws, [('run_command', {'command': 'touch made'})])
    assert isinstance(output, DeferredToolRequests)
    assert output.metadata['call-0']['approval_check_error'] == "KeyError: 'touch'"
    assert visible(ws) == []
    assert any(r.name == 'pydantic_ai_harness_rs.approvals' and r.levelname == 'WARNING' for r in caplog.records)
