"""`edit_file` with `FileSystem(match='tolerant')` against `'exact'` on an edit that matches exactly.

The tolerant tiers are tried only after an exact miss, so an exact hit should cost the same in
both modes; `show_changes` is timed beside them (it adds the numbered region to the result).
Each workload alternates one unique line back and forth (the file ends as it started), timing
the awaited direct call (no Agent, no model), best of N with the modes taking turns within
each round, in this interpreter:

    python benches/bench_match.py            # best of 200 (10-line file) / 20 (8 MiB file)
    python benches/bench_match.py --quick    # best of 30 / 5

Prints a markdown table, also written to `benches/results/match-latest.md`.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from pydantic_ai_harness_rs import FileSystem

MARK, ALT = 'value = 12345  # the marker line', 'value = 54321  # the marker line'


def make(root: Path, name: str, lines: int) -> str:
    body = [f'line {i} of the file, some text to make it look like code = {i * 7}' for i in range(lines)]
    body[lines // 2] = MARK
    (root / name).write_text('\n'.join(body) + '\n')
    return name


async def edit_once(toolset: Any, path: str, forward: bool) -> float:
    old, new = (MARK, ALT) if forward else (ALT, MARK)
    start = time.perf_counter()
    await toolset.edit_file(path, old_text=old, new_text=new)
    return time.perf_counter() - start


async def interleaved(toolsets: dict[str, Any], path: str, rounds: int) -> dict[str, float]:
    """Best time per mode; the modes take turns within each round (order rotating), so load
    from other processes falls on all of them alike."""
    best = dict.fromkeys(toolsets, float('inf'))
    names = list(toolsets)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            # Each call flips the marker: the next one (any mode) flips it back.
            best[name] = min(best[name], await edit_once(toolsets[name], path, forward=True))
            await edit_once(toolsets[name], path, forward=False)
    return best


async def main(quick: bool) -> str:
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workloads = [
            ('10-line file', make(root, 'tiny.txt', 10), 30 if quick else 200),
            ('8 MiB file', make(root, 'big.txt', 120_000), 5 if quick else 20),
        ]
        modes: dict[str, dict[str, Any]] = {
            'exact': {},
            'tolerant': {'match': 'tolerant'},
            'exact + show_changes=3': {'show_changes': 3},
        }
        for label, path, rounds in workloads:
            toolsets = {mode: FileSystem(root_dir=root, **fields).get_toolset() for mode, fields in modes.items()}
            await interleaved(toolsets, path, 2)  # warm the page cache and the code
            timed = await interleaved(toolsets, path, rounds)
            base = timed['exact']
            for mode, seconds in timed.items():
                rows.append(f'| {label} | {mode} | {seconds * 1e3:.3f} | {seconds / base:.2f}x |')
    table = '\n'.join(
        [
            '| file | match | best ms | vs exact |',
            '|---|---|---|---|',
            *rows,
        ]
    )
    return table


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=(__doc__ or '').split('\n', 1)[0])
    parser.add_argument('--quick', action='store_true')
    args = parser.parse_args()
    table = anyio.run(main, args.quick)
    print(table)
    out = Path(__file__).parent / 'results' / 'match-latest.md'
    out.write_text('# edit_file: match=tolerant vs exact on an exact match\n\n' + table + '\n')
