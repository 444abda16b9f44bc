"""max_file_bytes: a per-file bound (RLIMIT_FSIZE) for everything a command starts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.shell import Shell

from .conftest import run_calls

pytestmark = pytest.mark.anyio


def rc(command: str) -> tuple[str, dict[str, object]]:
    return ('run_command', {'command': command})


async def test_redirect_hits_the_limit(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(max_file_bytes=1000)],
        [
            rc("printf '%5000s' x > big; echo not-reached"),
            rc('head -c 100 /dev/zero > small && echo ok'),
            rc('head -c 5000 /dev/zero > big2; echo after'),
        ],
    )
    # The shell itself writing through the redirect is killed by SIGXFSZ: 128 + 25. A child
    # killed by it is reported by the shell, which goes on.
    assert results == [
        ('return', '(no output)\n[exit code: 153]\n[File-size limit exceeded: max_file_bytes=1000. Reduce file output before retrying.]'),
        ('return', '[stdout]\nok\n'),
        ('return', '[stdout]\nafter\n\n[stderr]\nFile size limit exceeded\n'),
    ]
    assert (ws / 'big2').stat().st_size == 1024
    # Rounded up to whole 512-byte blocks.
    assert (ws / 'big').stat().st_size == 1024
    assert (ws / 'small').stat().st_size == 100


async def test_child_handling_the_error_mentions_the_limit(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(max_file_bytes=512)],
        [rc("sh -c 'trap \"\" XFSZ; head -c 4096 /dev/zero > f'; exit 3")],
    )
    kind, text = results[0]
    assert kind == 'return'
    assert text.endswith('[exit code: 3]\n[Command failed with max_file_bytes=512; file writes may have reached the per-file limit.]')


async def test_successful_command_gets_no_note(ws: Path) -> None:
    results = await run_calls([LocalWorkspace(ws), Shell(max_file_bytes=10)], [rc('echo hi')])
    assert results == [('return', '[stdout]\nhi\n')]


async def test_background_logs_are_bounded(ws: Path) -> None:
    results = await run_calls(
        [LocalWorkspace(ws), Shell(max_file_bytes=2048)], [('start_command', {'command': 'yes'})]
    )
    cid = re.search(r'ID: (\w+)', results[0][1]).group(1)  # type: ignore[union-attr]
    job = ws / '.pydantic-ai-harness' / 'shell' / cid
    while json.loads((job / 'status.json').read_text())['exit_code'] is None:
        await __import__('anyio').sleep(0.01)
    assert (job / 'stdout.log').stat().st_size == 2048
    [(kind, text)] = await run_calls(
        [LocalWorkspace(ws), Shell(max_file_bytes=2048)], [('check_command', {'command_id': cid})], prefix='later'
    )
    assert text.endswith(
        'y\n\n[stderr]\nFile size limit exceeded\n\n[status: finished]\n[exit code: 153]\n'
        '[File-size limit exceeded: max_file_bytes=2048. Reduce file output before retrying.]'
    )


async def test_limit_above_the_hard_limit_cannot_apply(ws: Path) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip('no hard RLIMIT_FSIZE to exceed')
    results = await run_calls([LocalWorkspace(ws), Shell(max_file_bytes=hard * 4)], [rc('echo hi')])
    assert results[0][1].startswith('[stderr]\nUnable to apply max_file_bytes.')
