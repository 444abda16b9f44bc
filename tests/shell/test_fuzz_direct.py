"""Shell's direct tool methods fuzzed with hypothesis (issue 19): a call returns a result or raises
`ModelRetry`, never anything else. Only arguments that start no process are fuzzed freely (the
command IDs); `run_command`'s timeout is fuzzed on a `true` command with few examples, so the
module starts a handful of processes at most."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip('hypothesis', reason="the fuzz tests need hypothesis (pip install '.[test]')")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from pydantic_ai.exceptions import ModelRetry, ToolFailed  # noqa: E402
from pydantic_ai_harness_rs import Shell  # noqa: E402

from tests.shell.conftest import direct_context  # noqa: E402

FUZZ = dict(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

ids = st.one_of(
    st.text(max_size=80),
    st.sampled_from(['', '.', '..', '../..', 'a' * 32, '0' * 32, '/etc', '\x00', '\ud800', 'x/../' * 20]),
)
timeouts = st.one_of(
    st.none(),
    st.sampled_from([0, -1, 0.0, -0.0, float('nan'), float('inf'), float('-inf'), 2**64, 10**400, 1e308, True]),
    st.floats(min_value=0.5, max_value=30),
)


def _returns_or_retries(coro: Any) -> None:
    try:
        result = asyncio.run(coro)
    except (ModelRetry, ToolFailed):
        return
    assert isinstance(result, str), result


@pytest.mark.parametrize('method', ['check_command', 'stop_command'])
def test_any_command_id_returns_or_retries(ws: Path, method: str) -> None:
    toolset: Any = Shell().get_toolset()
    ctx = direct_context(ws)

    @settings(max_examples=60, **FUZZ)
    @given(command_id=ids)
    def check(command_id: str) -> None:
        _returns_or_retries(getattr(toolset, method)(ctx, command_id))

    check()
    assert [p.name for p in ws.iterdir()] in ([], ['.pydantic-ai-harness'])


def test_any_timeout_returns_or_retries(ws: Path) -> None:
    toolset: Any = Shell().get_toolset()
    ctx = direct_context(ws)

    @settings(max_examples=12, **FUZZ)
    @given(timeout=timeouts)
    def check(timeout: Any) -> None:
        _returns_or_retries(toolset.run_command(ctx, 'true', timeout_seconds=timeout))

    check()


def test_any_command_text_reaching_the_policy_returns_or_retries(ws: Path) -> None:
    """Any text against a policy that refuses it before a process starts (an allowlist of one
    program no text here names): the policy itself must never raise anything but a retry."""
    toolset: Any = Shell(allowed_commands=['no-such-program-xyz']).get_toolset()
    ctx = direct_context(ws)

    @settings(max_examples=80, **FUZZ)
    @given(command=st.text(max_size=60).filter(lambda c: 'no-such-program-xyz' not in c))
    def check(command: str) -> None:
        _returns_or_retries(toolset.run_command(ctx, command))

    check()


@pytest.mark.parametrize('method', ['run_command', 'start_command'])
def test_a_command_no_process_can_take_is_a_retry(ws: Path, method: str) -> None:
    """Any text with a NUL or a lone surrogate, which cannot reach `exec`: refused before a process starts."""
    toolset: Any = Shell().get_toolset()
    ctx = direct_context(ws)
    unpassable = st.tuples(st.text(max_size=30), st.sampled_from(['\x00', '\ud800', '\udfff']), st.text(max_size=30))

    @settings(max_examples=30, **FUZZ)
    @given(parts=unpassable)
    def check(parts: tuple[str, str, str]) -> None:
        with pytest.raises(ModelRetry, match='^The command contains'):
            asyncio.run(getattr(toolset, method)(ctx, ''.join(parts)))

    check()
