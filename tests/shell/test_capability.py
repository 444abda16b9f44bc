"""Capability construction, workspace requirements, read-only workspaces and agent specs."""

from __future__ import annotations

import warnings
from pathlib import Path

import pydantic_ai_harness_rs
import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.exceptions import UserError
from pydantic_ai_harness_rs.shell import (
    LLM_API_KEY_ENV_PATTERNS,
    MAX_FOREGROUND_WAIT,
    RUN_SCOPED_TOOL_NAMES,
    SHELL_TOOL_NAMES,
    Shell,
    ShellToolset,
)

from .conftest import Script, run_calls

pytestmark = pytest.mark.anyio


def test_public_constants() -> None:
    assert RUN_SCOPED_TOOL_NAMES == ('run_command', 'start_command', 'check_command', 'stop_command')
    assert SHELL_TOOL_NAMES == (*RUN_SCOPED_TOOL_NAMES, 'shell')
    assert MAX_FOREGROUND_WAIT == 270.0
    assert LLM_API_KEY_ENV_PATTERNS == (
        'ANTHROPIC_*', 'GATEWAY_*', 'GEMINI_*', 'GOOGLE_*', 'OPENAI_*', 'OPENROUTER_*', 'PYDANTIC_AI_GATEWAY_API_KEY',
    )
    assert pydantic_ai_harness_rs.Shell is Shell
    assert pydantic_ai_harness_rs.LLM_API_KEY_ENV_PATTERNS is LLM_API_KEY_ENV_PATTERNS


def test_defaults() -> None:
    shell = Shell()
    assert shell.denied_commands == ['rm', 'rmdir', 'mkfs', 'dd', 'format', 'shutdown', 'reboot', 'halt', 'poweroff', 'init']
    assert (shell.allowed_commands, shell.denied_operators, shell.denied_env_patterns) == ([], [], [])
    assert (shell.default_timeout, shell.max_output_chars, shell.max_file_bytes) == (30.0, 50_000, None)
    assert (shell.persist_cwd, shell.allow_interactive, shell.env, shell.tools) == (False, False, None, RUN_SCOPED_TOOL_NAMES)
    assert Shell(allowed_commands=['ls']).denied_commands == []
    assert isinstance(shell.get_toolset(), ShellToolset)
    assert shell.get_toolset() is shell.get_toolset()


@pytest.mark.parametrize(
    ('kwargs', 'message'),
    [
        ({'allowed_commands': ['ls'], 'denied_commands': ['rm']}, 'Specify allowed_commands or denied_commands, not both.'),
        ({'max_output_chars': 0}, 'max_output_chars must be a positive integer.'),
        ({'max_file_bytes': 0}, 'max_file_bytes must be a positive integer.'),
        ({'max_file_bytes': True}, 'max_file_bytes must be a positive integer.'),
        ({'max_file_bytes': 10, 'persist_cwd': True}, 'max_file_bytes is not supported with persist_cwd'),
        ({'max_file_bytes': 10, 'tools': ['shell']}, 'max_file_bytes is not supported with the persistent shell tool.'),
        ({'tools': ['shell'], 'default_timeout': 0}, 'default_timeout must be greater than zero and at most 270'),
        ({'tools': ['shell'], 'default_timeout': 271}, 'default_timeout must be greater than zero and at most 270'),
        ({'tools': ['nope']}, 'Unknown shell tools: nope. Available: run_command, start_command, check_command'),
    ],
)
def test_construction_checks(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace('(', r'\(').replace('.', r'\.')):
        Agent('test', capabilities=[Shell(**kwargs)])  # type: ignore[arg-type]


def test_shell_tool_accepts_270() -> None:
    Agent('test', capabilities=[Shell(tools=['shell'], default_timeout=270)])


def test_cwd_is_deprecated_and_ignored() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        Shell(cwd='somewhere')
    assert [str(w.message) for w in caught] == [
        "`Shell(cwd=...)` is deprecated and ignored: commands/paths start in the workspace's working directory; "
        "set it on the workspace, e.g. `LocalWorkspace('./repo')`."
    ]


async def test_run_without_workspace_fails_at_start() -> None:
    script = Script([('run_command', {'command': 'echo hi'})])
    agent = Agent(script.model(), capabilities=[Shell()])
    with pytest.raises(UserError, match='`Shell` needs a workspace, but none is attached to this run.'):
        await agent.run('go')


async def test_workspace_passed_to_the_run(ws: Path) -> None:
    from pydantic_ai.workspaces import LocalWorkspaceBackend

    results = await run_calls([Shell()], [('run_command', {'command': 'echo hi'})], workspace=LocalWorkspaceBackend(ws))
    assert results == [('return', '[stdout]\nhi\n')]


async def test_read_only_workspace_gets_no_tools(ws: Path) -> None:
    seen: list[list[str]] = []

    def model(messages, info):  # type: ignore[no-untyped-def]
        from pydantic_ai.messages import ModelResponse, TextPart

        seen.append(sorted(t.name for t in info.function_tools))
        return ModelResponse(parts=[TextPart('done')])

    from pydantic_ai.models.function import FunctionModel

    agent = Agent(FunctionModel(model), capabilities=[LocalWorkspace(ws, read_only=True), Shell()])
    await agent.run('go')
    assert not any(name in SHELL_TOOL_NAMES for name in seen[0])

    agent = Agent(FunctionModel(model), capabilities=[LocalWorkspace(ws), Shell()])
    await agent.run('go')
    assert [n for n in seen[1] if n in SHELL_TOOL_NAMES] == sorted(RUN_SCOPED_TOOL_NAMES)


async def test_tools_selection(ws: Path) -> None:
    seen: list[list[str]] = []

    def model(messages, info):  # type: ignore[no-untyped-def]
        from pydantic_ai.messages import ModelResponse, TextPart

        seen.append(sorted(t.name for t in info.function_tools if t.name in SHELL_TOOL_NAMES))
        return ModelResponse(parts=[TextPart('done')])

    from pydantic_ai.models.function import FunctionModel

    await Agent(FunctionModel(model), capabilities=[LocalWorkspace(ws), Shell(tools=['shell'])]).run('go')
    await Agent(FunctionModel(model), capabilities=[LocalWorkspace(ws), Shell(tools=['run_command'])]).run('go')
    assert seen == [['shell'], ['run_command']]


async def test_agent_spec_yaml(ws: Path, tmp_path: Path) -> None:
    spec = tmp_path / 'agent.yaml'
    spec.write_text(
        "model: test\n"
        "capabilities:\n"
        "  - Shell:\n"
        "      allowed_commands: ['ls', 'cat', 'rg', 'pytest', 'echo']\n"
    )
    agent = Agent.from_file(spec, custom_capability_types=[Shell])
    (ws / 'hello.txt').write_text('hi')
    script = Script([('run_command', {'command': 'ls'}), ('run_command', {'command': 'rm hello.txt'})])
    from pydantic_ai.workspaces import LocalWorkspaceBackend

    result = await agent.run('go', model=script.model(), workspace=LocalWorkspaceBackend(ws))
    from .conftest import tool_results

    assert tool_results(result.all_messages()) == [
        ('return', '[stdout]\nhello.txt\n'),
        ('retry', "Command 'rm' is not in the allowed list."),
    ]
