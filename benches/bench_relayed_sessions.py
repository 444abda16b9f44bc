"""Relayed sessions benchmark (issue 24): what a relay (durable units) costs against an in-process session.

Usage: `python benches/bench_relayed_sessions.py [--rounds N]`

- start: `Session.start` vs `Session.start_relayed` (the relay is `python -I -S` loading the core), to a
  started `cat`, median of `--rounds // 10` starts;
- keystroke round trip: one line written to `cat` and its echo read back with `write` + `wait(pattern)` +
  `take_output`, median of `--rounds`: a relayed session reads and writes the same terminal itself (the
  relay only holds it), so both should match;
- attach: `Session.attach` to a running relayed session (what a new worker does once per session).
Prints one table; run it on a quiet machine and read the ratios, with `uptime` beside them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'python'))

from pydantic_ai_harness_rs import _core  # noqa: E402

ENV = [(b'PATH', b'/usr/bin:/bin'), (b'TERM', b'xterm-256color')]
SIZES = {'cols': 80, 'rows': 24, 'head_bytes': 1 << 16, 'tail_bytes': 1 << 16}


def start_plain(_: Path) -> _core.Session:
    return _core.Session.start(b'cat', '/', ENV, **SIZES)


def start_relayed(directory: Path) -> _core.Session:
    return _core.Session.start_relayed(directory, sys.executable, _core.__file__, '', b'cat', '/', ENV, **SIZES)


def round_trips(handle: _core.Session, rounds: int) -> float:
    times = []
    for i in range(rounds):
        line = f'line{i}'.encode()
        begun = time.perf_counter()
        handle.write(line + b'\n')
        handle.wait(f'{line.decode()}\\r\\n{line.decode()}\\r\\n', False, 5.0)
        handle.take_output()
        times.append(time.perf_counter() - begun)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument('--rounds', type=int, default=2000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, start in (('in-process', start_plain), ('relayed', start_relayed)):
            starts = []
            for i in range(max(args.rounds // 10, 5)):
                begun = time.perf_counter()
                handle = start(Path(tmp) / f'{name}-{i}')
                starts.append(time.perf_counter() - begun)
                handle.stop(0.0)
            handle = start(Path(tmp) / f'{name}-rt')
            trip = round_trips(handle, args.rounds)
            attach = float('nan')
            if name == 'relayed':
                attaches = []
                for _ in range(max(args.rounds // 10, 5)):
                    begun = time.perf_counter()
                    other = _core.Session.attach(Path(tmp) / f'{name}-rt', head_bytes=1 << 16, tail_bytes=1 << 16)
                    attaches.append(time.perf_counter() - begun)
                    del other
                attach = statistics.median(attaches)
            handle.stop(0.0)
            rows.append((name, statistics.median(starts), trip, attach))
    print('| session | start (ms) | keystroke round trip (us) | attach (ms) |')
    print('|---|---|---|---|')
    for name, start_s, trip, attach in rows:
        print(f'| {name} | {start_s * 1e3:.1f} | {trip * 1e6:.0f} | {attach * 1e3:.2f} |')
    base, relay = rows
    print(f'\nrelayed / in-process: start {relay[1] / base[1]:.1f}x, round trip {relay[2] / base[2]:.2f}x')


if __name__ == '__main__':
    main()
