"""persist_cwd: sticky `cd`, recorded out of band, only on exit 0, reset when the directory goes."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.shell import Shell

from .conftest import run_calls

pytestmark = pytest.mark.anyio


def rc(command: str) -> tuple[str, dict[str, object]]:
    return ('run_command', {'command': command})


async def test_cd_is_sticky_and_only_on_success(ws: Path) -> None:
    (ws / 'a' / 'b').mkdir(parents=True)
    (ws / 'c').mkdir()
    root = ws.resolve()
    results = await run_calls(
        [LocalWorkspace(ws), Shell(persist_cwd=True)],
        [
            rc('cd a'),
            rc('pwd'),
            rc('cd b && pwd'),
            rc('cd / ; exit 1'),
            rc('pwd'),
            rc('cd ../../c; echo "'"$(pwd)"'"'),
            rc('pwd'),
        ],
    )
    assert results == [
        ('return', '(no output)'),
        ('return', f'[stdout]\n{root}/a\n'),
        ('return', f'[stdout]\n{root}/a/b\n'),
        ('return', '(no output)\n[exit code: 1]'),
        ('return', f'[stdout]\n{root}/a/b\n'),
        ('return', f'[stdout]\n{root}/c\n'),
        ('return', f'[stdout]\n{root}/c\n'),
    ]


async def test_exit_zero_after_cd_is_recorded(ws: Path) -> None:
    # The document: the directory updates whenever the command exits 0. pydantic-ai-harness 0.57.0
    # records it from a line after the command, which an explicit `exit 0` skips; we follow the document.
    (ws / 'sub').mkdir()
    results = await run_calls(
        [LocalWorkspace(ws), Shell(persist_cwd=True)], [rc('cd sub; exit 0'), rc('pwd')]
    )
    assert results == [('return', '(no output)'), ('return', f'[stdout]\n{ws.resolve()}/sub\n')]


async def test_output_cannot_spoof_the_directory(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(persist_cwd=True)],
        [rc('echo /etc; echo __HARNESS_CWD__=/etc; printf "/etc\\n" >&2'), rc('pwd')],
    )
    assert results[1] == ('return', f'[stdout]\n{ws.resolve()}\n')


async def test_removed_directory_is_a_retry_and_resets(ws: Path) -> None:
    (ws / 'gone').mkdir()
    root = ws.resolve()
    results = await run_calls(
        [LocalWorkspace(ws), Shell(persist_cwd=True, denied_commands=[])],
        [rc('cd gone'), rc('rmdir "$PWD"'), rc('pwd'), rc('pwd')],
    )
    assert results == [
        ('return', '(no output)'),
        ('return', '(no output)'),
        ('retry', f'The previous directory was removed; now in {root}.'),
        ('return', f'[stdout]\n{root}\n'),
    ]


async def test_directory_replaced_by_a_file_is_a_retry(ws: Path) -> None:
    (ws / 'd').mkdir()
    root = ws.resolve()
    results = await run_calls(
        [LocalWorkspace(ws), Shell(persist_cwd=True, denied_commands=[])],
        [rc('cd d'), rc('rmdir "$PWD" && touch "$PWD"'), rc('pwd')],
    )
    assert results[2] == ('retry', f'The previous directory was removed; now in {root}.')


async def test_each_run_starts_in_the_working_directory(ws: Path) -> None:
    (ws / 'a').mkdir()
    shell = Shell(persist_cwd=True)
    first = await run_calls([LocalWorkspace(ws), shell], [rc('cd a'), rc('pwd')])
    second = await run_calls([LocalWorkspace(ws), shell], [rc('pwd')], prefix='second')
    assert first[1] == ('return', f'[stdout]\n{ws.resolve()}/a\n')
    assert second == [('return', f'[stdout]\n{ws.resolve()}\n')]
    # The run's saved directory and the capture files are gone after the run.
    state = ws / '.pydantic-ai-harness' / 'shell'
    assert [p.name for p in state.iterdir() if p.name.startswith('cwd-')] == []
    assert not any((state / 'run-state').iterdir()) if (state / 'run-state').exists() else True


async def test_without_persist_cwd_cd_has_no_lasting_effect(ws: Path) -> None:
    (ws / 'a').mkdir()
    results = await run_calls([LocalWorkspace(ws), Shell()], [rc('cd a'), rc('pwd')])
    assert results == [('return', '(no output)'), ('return', f'[stdout]\n{ws.resolve()}\n')]


async def test_start_command_uses_the_tracked_directory(ws: Path) -> None:
    import json
    import re

    (ws / 'a').mkdir()
    results = await run_calls(
        [LocalWorkspace(ws), Shell(persist_cwd=True)], [rc('cd a'), ('start_command', {'command': 'pwd'})]
    )
    cid = re.search(r'ID: (\w+)', results[1][1]).group(1)  # type: ignore[union-attr]
    job = ws / '.pydantic-ai-harness' / 'shell' / cid
    while json.loads((job / 'status.json').read_text())['exit_code'] is None:
        await __import__('anyio').sleep(0.01)
    assert (job / 'stdout.log').read_text() == f'{ws.resolve()}/a\n'
