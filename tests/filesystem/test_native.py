"""Ours only: native work runs off the event loop and stops when its call is cancelled."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.conftest import both_backends
from tests.filesystem.conftest import REFERENCE

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='our native core only')]


def _core(root: Path):  # noqa: ANN202
    from pydantic_ai_harness_rs import _core

    return _core, _core.FileSystemCore(str(root), None, [], [], [], 2000, None, 1000, 1000, 1000, True)


@pytest.mark.parametrize(
    'call',
    [
        lambda core, token: core.search_files('x', '.', None, cancel=token),
        lambda core, token: core.find_files('**/*', '.', cancel=token),
        lambda core, token: core.list_directory('.', cancel=token),
        lambda core, token: core.read_file('big.txt', 0, None, cancel=token),
        lambda core, token: core.file_info('big.txt', cancel=token),
    ],
)
def test_a_cancelled_token_stops_the_native_loop(tmp_path: Path, call) -> None:  # noqa: ANN001
    for i in range(50):
        (tmp_path / f'f{i}.txt').write_text('x\n' * 10)
    (tmp_path / 'big.txt').write_bytes(b'y' * (8 << 20))
    _core_module, core = _core(tmp_path)
    token = _core_module.CancelToken()
    token.cancel()
    with pytest.raises(_core_module.CancelledError):
        call(core, token)


@both_backends
async def test_the_event_loop_keeps_running_during_a_long_read(tmp_path: Path) -> None:
    """While a 17 MiB file is hashed in a worker thread, other tasks on the loop keep being scheduled."""
    from pydantic_ai_harness_rs.filesystem import FileSystem

    (tmp_path / 'big.log').write_bytes(b'line of log text\n' * (1 << 20))
    toolset = FileSystem(root_dir=tmp_path).get_toolset()
    ticks = 0
    done = False

    async def ticker() -> None:
        nonlocal ticks
        while not done:
            ticks += 1
            await anyio.sleep(0)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        result = await toolset.read_file('big.log', limit=1)
        done = True
    assert result.startswith('[big.log | 1048576 lines | hash:')
    assert ticks > 1


async def test_one_response_of_big_reads_runs_one_thread_per_core(tmp_path: Path) -> None:
    """64 `read_file` calls in one model response: each result is what reading that file alone
    gives, and no more worker threads run them than there are cores (the others wait on the
    event loop, not in a thread each)."""
    import threading

    from pydantic_ai_harness_rs._native import cores
    from pydantic_ai_harness_rs.filesystem import FileSystem

    from tests.scripted import run_tools

    for k in range(64):
        # Over the inline limit (256 KiB), so each read goes to a worker thread.
        lines = ''.join(f'{k:02}:{n:05} {"é" if n % 7 == 0 else "x"}{"y" * (k % 50)} line\r\n' for n in range(9000))
        (tmp_path / f'm{k}.txt').write_text(lines + 'no newline at the end', newline='')
    alone = [await FileSystem(root_dir=tmp_path).get_toolset().read_file(f'm{k}.txt') for k in range(64)]
    before = threading.active_count()
    t = await run_tools([FileSystem(root_dir=tmp_path)], [[('read_file', {'path': f'm{k}.txt'}) for k in range(64)]])
    assert t.results == alone
    assert alone[3].startswith('[m3.txt | 9001 lines | hash:')
    assert alone[3].endswith('... (7001 more lines. Use offset=2000 to continue reading.)\n')
    assert threading.active_count() - before <= max(2, cores())
