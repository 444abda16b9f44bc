"""Interactive sessions benchmark: keystroke round trip and the memory of a flooding session.

Usage: `python benches/bench_sessions.py [--rounds N] [--flood-bytes N] [--no-write]`

Workloads:
- Keystroke round trip: one line written to `cat` on a terminal and its echo read back (the
  terminal's echo and cat's copy: `line\\r\\nline\\r\\n`), median of `--rounds`.
  - core: `_core.Session.write` + `wait(pattern)` + `take_output` (what `write_stdin` does
    under its "waits for input" judgement);
  - tool: `write_stdin` on a toolset (with the judgement: returns once `cat` sleeps reading its
    terminal again, after 5 ms of quiet);
  - baseline: a Python `pty.fork` loop doing the same (`os.write`, then `os.read` until the echo).
  Target: core within 1.5x of the baseline.
- Flood: a session printing `--flood-bytes` (default 1 GiB) of lines; time to its exit and how
  much this process grew (peak RSS delta): the screen and the transcript between reads are bounded.
  Run twice: without a spill directory, and with one (the whole cleaned transcript written to a
  spill file as it arrives, as `start_session` does; the file's size is reported).

A full run writes the table to `benches/results/sessions-latest.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import pty
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pydantic_ai_harness_rs import _core  # noqa: E402
from pydantic_ai_harness_rs.shell import ShellToolset  # noqa: E402

LINE = b'the quick brown fox\n'
ECHO = LINE.replace(b'\n', b'\r\n') * 2
ENV = [(b'PATH', os.environ.get('PATH', '/usr/bin:/bin').encode()), (b'TERM', b'xterm-256color')]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def round_trips(rounds: int) -> tuple[float, float]:
    """Median ms of `(core, baseline)`, the two taking turns each round so a busy machine weighs on both alike.

    Baseline: a Python `pty.fork` loop writing one line to `cat` and reading until both echoes are
    back. Core: `_core.Session.write` + `wait(pattern)` + `take_output` on another `cat`.
    """
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp('cat', ['cat'])
    session = _core.Session.start(b'cat', '/', ENV, cols=120, rows=40, head_bytes=1 << 16, tail_bytes=1 << 16)
    session.wait(None, True, 5.0)
    session.take_output()
    time.sleep(0.2)
    pattern = 'the quick brown fox\r\nthe quick brown fox\r\n'
    core, base = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        os.write(fd, LINE)
        got = b''
        while not got.endswith(ECHO):
            got += os.read(fd, 65536)
        base.append(time.perf_counter() - start)

        start = time.perf_counter()
        session.write(LINE)
        assert session.wait(pattern, False, 5.0) == 'matched'
        out = session.take_output()
        core.append(time.perf_counter() - start)
        assert out[0] == ECHO.replace(b'\r\n', b'\n'), out  # the transcript is the cleaned text
    session.stop(0.0)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    os.close(fd)
    return median_ms(core), median_ms(base)


async def tool_round_trip(rounds: int) -> float:
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage
    from pydantic_ai.workspaces import LocalWorkspaceBackend, Workspace

    with tempfile.TemporaryDirectory() as tmp:
        toolset = ShellToolset[None](
            allowed_commands=[],
            denied_commands=[],
            denied_operators=[],
            default_timeout=30,
            max_output_chars=50_000,
            persist_cwd=False,
            allow_interactive=False,
            interactive=True,
        )
        ctx = RunContext[None](
            deps=None,
            model=TestModel(),
            usage=RunUsage(),
            workspace=Workspace(LocalWorkspaceBackend(Path(tmp))),
            run_id='bench',
            tool_call_id='c',
        )
        await toolset.start_session(ctx, 'cat')
        samples = []
        for _ in range(rounds):
            start = time.perf_counter()
            out = await toolset.write_stdin(ctx, '1', LINE.decode())
            samples.append(time.perf_counter() - start)
            assert out == 'the quick brown fox\nthe quick brown fox\n', out
        await toolset.end_sessions(ctx)
    return median_ms(samples)


def flood(total: int, spill_dir: str | None = None) -> tuple[float, float, str, int]:
    """Seconds until a session printing `total` bytes exits, our peak RSS growth in MiB, its last
    output's end, and the bytes of its spill file (0 without `spill_dir`)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    command = f'yes "line of forty characters, over and over" | head -c {total}; echo; echo done'
    session = _core.Session.start(
        command.encode(),
        '/',
        ENV,
        cols=120,
        rows=40,
        head_bytes=200_016,
        tail_bytes=200_016,
        spill_dir=spill_dir,
        spill_after=49_880,
    )
    start = time.perf_counter()
    while session.wait(None, False, 600.0) != 'exited':
        pass
    elapsed = time.perf_counter() - start
    head, tail, size, _, _, _, _, _, spill, *_ = session.take_output(49_880)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before
    spilled = 0 if spill is None else os.path.getsize(spill)
    session.remove_files()
    assert size >= total * 40 // 41, size  # the cleaned text: no carriage returns
    assert spill_dir is None or spilled == size, (spilled, size)
    return elapsed, grown, (head + tail)[-6:].decode(errors='replace'), spilled


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--rounds', type=int, default=200)
    parser.add_argument('--flood-bytes', type=int, default=1 << 30)
    parser.add_argument('--no-write', action='store_true')
    args = parser.parse_args()

    core, base = round_trips(args.rounds)
    tool = asyncio.run(tool_round_trip(max(20, args.rounds // 5)))
    seconds, grown, end, _ = flood(args.flood_bytes)
    with tempfile.TemporaryDirectory() as spill_dir:
        spill_seconds, spill_grown, _, spilled = flood(args.flood_bytes, spill_dir)
    mib = args.flood_bytes / (1 << 20)
    rows = [
        '| workload | ours | Python `pty` loop | ratio |',
        '|---|---|---|---|',
        f'| keystroke round trip, core (`write` + `wait(pattern)` + `take_output`) | {core:.3f} ms | {base:.3f} ms | {core / base:.2f}x |',
        f'| keystroke round trip, `write_stdin` tool (until `cat` reads again) | {tool:.3f} ms | {base:.3f} ms | {tool / base:.2f}x |',
        f'| session printing {mib:.0f} MiB: time to exit | {seconds:.2f} s ({mib / seconds:.0f} MiB/s) | | |',
        f'| session printing {mib:.0f} MiB: peak RSS growth of this process | {grown:.1f} MiB | | |',
        f'| same, spilled to a file ({spilled / (1 << 20):.0f} MiB written): time to exit | {spill_seconds:.2f} s ({mib / spill_seconds:.0f} MiB/s) | | |',
        f'| same, spilled: peak RSS growth of this process | {spill_grown:.1f} MiB | | |',
    ]
    table = '\n'.join(rows)
    header = (
        f'# Interactive sessions ({datetime.date.today()}, {platform.machine()}, {os.cpu_count()} cores, '
        f'Python {platform.python_version()})\n\nRound trips: median of {args.rounds}, core and baseline taking turns (tool: {max(20, args.rounds // 5)}); '
        f'flood ends with {end!r}.\n\n'
    )
    print(header + table)
    if not args.no_write:
        (ROOT / 'benches' / 'results' / 'sessions-latest.md').write_text(header + table + '\n')


if __name__ == '__main__':
    main()
