"""The benchmark chart: `benches/results/*-latest.md` tables drawn as one SVG (stdlib only).

Usage: `python benches/chart.py [--results DIR] [--out FILE]` (default: `benches/results/chart.svg`).
The bench scripts call `write_chart()` at the end of a run, so the README's chart follows the tables.

Every Markdown table in every `*-latest.md` file whose header has an `ours` column becomes a group
of the chart, titled by the heading above it; each row is a workload drawn as up to three horizontal
bars on one logarithmic time axis: ours, the reference, and the limit (the CLI or a bare `subprocess`
doing the same work). Columns are found by their header, not their position, so new rows and new
columns need no change here:

- ours: a header starting with `ours` that is not a ratio (`ours/ref`); when there are several
  (`ours root_dir`, `ours workspace`), the one a ratio column compares with the reference
  (`ours workspace/0.62.0`), else the first;
- the reference: a header naming `reference` or a version (`0.62.0`) that is not a ratio;
- the limit: a header naming `CLI`, `subprocess` or `limit`, or the reference column when it says
  it is a CLI run too (`rg stopped at cap+1 (= reference)`).

A cell's value is the first duration in it (`384.0 ms`, `1.89 s`, `17 µs`, `+5 ms past the deadline`),
or a bare number in a column whose header gives the unit (`ours (s)`); cells without one (`—`,
`refuses (> 64 MiB)`) draw no bar. A row without a time for ours is left out.
"""

from __future__ import annotations

import argparse
import math
import re
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / 'results'
CHART = RESULTS / 'chart.svg'

UNITS = {'ns': 1e-9, 'µs': 1e-6, 'us': 1e-6, 'μs': 1e-6, 'ms': 1e-3, 's': 1.0, 'min': 60.0}
"""Seconds per unit, for the units a table writes times in."""

_DURATION = re.compile(r'(?<![\w.])(\d+(?:,\d{3})*(?:\.\d+)?)\s*(ns|µs|μs|us|ms|s|min)(?![\w/])')
_HEADER_UNIT = re.compile(r'\((ns|µs|μs|us|ms|s|min)\)')
_BARE_NUMBER = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*$')
_VERSION = re.compile(r'\b\d+\.\d+\.\d+\b')

SERIES = ('ours', 'reference', 'limit')
COLOURS = {'ours': '#2b6cb0', 'reference': '#a0a0a0', 'limit': '#38a169'}
LABELS = {'ours': 'ours', 'reference': 'reference', 'limit': 'limit (CLI / bare spawn)'}


@dataclass
class Row:
    """One workload: its name and a time in seconds per series (absent: no figure)."""

    workload: str
    times: dict[str, float] = field(default_factory=dict)


@dataclass
class Group:
    """One table: where it came from, its title, and its rows."""

    source: str
    title: str
    rows: list[Row] = field(default_factory=list)


def seconds(cell: str, header: str = '') -> float | None:
    """The first duration in `cell` in seconds, or a bare number in the unit `header` names; else `None`."""
    text = cell.replace('`', '')
    if m := _DURATION.search(text):
        return float(m.group(1).replace(',', '')) * UNITS[m.group(2)]
    unit = _HEADER_UNIT.search(header)
    if unit and (bare := _BARE_NUMBER.match(text)):
        return float(bare.group(1)) * UNITS[unit.group(1)]
    return None


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith('|') else inner
    inner = inner[:-1] if inner.endswith('|') and not inner.endswith('\\|') else inner
    return [c.strip() for c in re.split(r'(?<!\\)\|', inner)]


def _is_ratio(header: str) -> bool:
    return '/' in header


def columns(headers: list[str]) -> dict[str, int]:
    """Which column holds each series, by header (see the module docstring); missing series are absent."""
    low = [h.lower().replace('`', '') for h in headers]
    found: dict[str, int] = {}
    ours = [i for i, h in enumerate(low) if i > 0 and h.startswith('ours') and not _is_ratio(h)]
    if ours:
        found['ours'] = ours[0]
        for i in ours:
            if low[i] == 'ours':
                found['ours'] = i
                break
        else:
            ratios = [h.split('/')[0].strip() for h in low if _is_ratio(h) and h.startswith('ours')]
            for i in ours:
                if any(r == low[i] for r in ratios):
                    found['ours'] = i
                    break
    for i, h in enumerate(low):
        if i == 0 or i in found.values() or _is_ratio(h) or h.startswith('ours'):
            continue
        if 'reference' not in found and ('reference' in h or _VERSION.search(h)):
            found['reference'] = i
            if any(word in h for word in ('rg ', 'cli')):
                found.setdefault('limit', i)
        elif 'limit' not in found and any(word in h for word in ('cli', 'subprocess', 'limit')):
            found['limit'] = i
    return found


def parse(text: str, source: str) -> list[Group]:
    """Every table in `text` with an `ours` column, as a [`Group`]."""
    groups: list[Group] = []
    title = source
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('#'):
            title = line.lstrip('#').strip().replace('`', '')
        is_table = (
            line.lstrip().startswith('|')
            and i + 1 < len(lines)
            and re.fullmatch(r'\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*', lines[i + 1])
        )
        if not is_table:
            i += 1
            continue
        headers = _cells(line)
        cols = columns(headers)
        i += 2
        group = Group(source, title)
        while i < len(lines) and lines[i].lstrip().startswith('|'):
            cells = _cells(lines[i])
            i += 1
            if 'ours' not in cols or len(cells) < len(headers):
                continue
            row = Row(cells[0].replace('`', ''))
            for series, col in cols.items():
                if (value := seconds(cells[col], headers[col])) is not None and value > 0:
                    row.times[series] = value
            if 'ours' in row.times:
                group.rows.append(row)
        if group.rows:
            groups.append(group)
    return groups


def load(results: Path = RESULTS) -> list[Group]:
    """The groups of every `*-latest.md` in `results`, files in name order."""
    groups: list[Group] = []
    for path in sorted(results.glob('*-latest.md')):
        groups += parse(path.read_text(encoding='utf-8'), path.name)
    return groups


def human(value: float) -> str:
    """`value` seconds as the tables write it: `17 µs`, `1.5 ms`, `1.89 s`."""
    for unit, scale in (('s', 1.0), ('ms', 1e-3), ('µs', 1e-6)):
        if value >= scale or unit == 'µs':
            v = value / scale
            return f'{v:.3g} {unit}' if v < 100 else f'{v:.0f} {unit}'
    raise AssertionError  # pragma: no cover


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + '…'


def render(groups: list[Group]) -> str:
    """The SVG of `groups`: grouped horizontal bars per workload on a log time axis."""
    label_w, plot_w, value_w = 400, 520, 70
    bar_h, gap, head_h, top = 7, 8, 26, 48
    width = label_w + plot_w + value_w + 20
    values = [t for g in groups for r in g.rows for t in r.times.values()]
    lo = 10 ** math.floor(math.log10(min(values))) if values else 1e-6
    hi = 10 ** math.ceil(math.log10(max(values))) if values else 1.0
    if hi <= lo:
        hi = lo * 10
    span = math.log10(hi) - math.log10(lo)

    def x(value: float) -> float:
        return label_w + plot_w * (math.log10(value) - math.log10(lo)) / span

    height = top + sum(head_h + len(g.rows) * (3 * bar_h + gap) for g in groups) + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    legend_x = label_w
    for series in SERIES:
        out.append(f'<rect x="{legend_x}" y="10" width="12" height="10" fill="{COLOURS[series]}"/>')
        out.append(f'<text x="{legend_x + 16}" y="19">{escape(LABELS[series])}</text>')
        legend_x += 30 + 7 * len(LABELS[series])
    out.append('<text x="10" y="19" font-weight="bold">time per call, log scale (shorter is faster)</text>')
    decade = lo
    while decade <= hi * 1.0001:
        gx = x(decade)
        out.append(f'<line x1="{gx:.1f}" y1="{top - 6}" x2="{gx:.1f}" y2="{height - 24}" stroke="#e2e2e2"/>')
        out.append(f'<text x="{gx:.1f}" y="{height - 10}" text-anchor="middle" fill="#555">{human(decade)}</text>')
        out.append(f'<text x="{gx:.1f}" y="{top - 10}" text-anchor="middle" fill="#555">{human(decade)}</text>')
        decade *= 10
    y = top
    for group in groups:
        out.append(
            f'<text x="10" y="{y + 17}" font-weight="bold">{escape(_clip(group.title, 110))}'
            f' <tspan fill="#777" font-weight="normal">({escape(group.source)})</tspan></text>'
        )
        y += head_h
        for row in group.rows:
            mid = y + 1.5 * bar_h
            out.append(
                f'<text x="{label_w - 8}" y="{mid + 4:.1f}" text-anchor="end">{escape(_clip(row.workload, 64))}</text>'
            )
            for k, series in enumerate(SERIES):
                value = row.times.get(series)
                if value is None:
                    continue
                by = y + k * bar_h
                out.append(
                    f'<rect x="{label_w}" y="{by}" width="{max(1.0, x(value) - label_w):.1f}" '
                    f'height="{bar_h - 1}" fill="{COLOURS[series]}"><title>{escape(series)}: {human(value)}</title></rect>'
                )
                out.append(
                    f'<text x="{x(value) + 3:.1f}" y="{by + bar_h - 1}" font-size="8" fill="#333">{human(value)}</text>'
                )
            y += 3 * bar_h + gap
    out.append('</svg>')
    return '\n'.join(out) + '\n'


def write_chart(results: Path = RESULTS, out: Path | None = None) -> Path:
    """Reads `results/*-latest.md`, writes the chart (default `results/chart.svg`), returns its path."""
    target = out or results / CHART.name
    target.write_text(render(load(results)), encoding='utf-8')
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--results', type=Path, default=RESULTS)
    parser.add_argument('--out', type=Path, default=None)
    args = parser.parse_args()
    path = write_chart(args.results, args.out)
    print(f'wrote {path}')


if __name__ == '__main__':
    main()
