"""`benches/chart.py`: result tables read by their headers, whatever rows and columns they grow."""

from __future__ import annotations

import importlib.util
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

CHART = Path(__file__).resolve().parents[2] / 'benches' / 'chart.py'


@pytest.fixture(scope='module')
def chart() -> ModuleType:
    spec = importlib.util.spec_from_file_location('bench_chart', CHART)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules['bench_chart'] = module
    spec.loader.exec_module(module)
    return module


TABLES = """# Shell benchmark

| workload | notes | ours | ours/limit | reference 0.57.0 | limit | a new column |
|---|---|---|---|---|---|---|
| `run_command('true')` | x | 1.02 ms | 1.4x | 2.28 ms | 0.74 ms bare spawn (`sh -c` 0.9 ms) | 7 |
| timed-out tree | | 3.1 ms past the deadline, 0 left | 1.1x | 3.84 ms | 2.92 ms past | — |
| 1 GiB of output | | tail kept, 0.79 s, +0.1 MiB RSS | — | fails (10 MiB capture limit) | — | |
| broken row | | — | — | 1 s | 1 s | |

## Sandbox (no ours column: not charted)

| workload | plain | sandbox |
|---|---|---|
| true | 1 ms | 1 ms |

## Workspace

| workload | ours root_dir | ours workspace | workspace/root_dir | 0.62.0 (s) | ours workspace/0.62.0 |
|---|---|---|---|---|---|
| read_file | 15 µs | 26 µs | 1.7x | 0.000799 | 0.03x |
"""


def test_columns_are_found_by_header(chart: ModuleType) -> None:
    groups = chart.parse(TABLES, 'x-latest.md')
    got = [(g.title, [(r.workload, {k: round(v * 1e6, 3) for k, v in r.times.items()}) for r in g.rows]) for g in groups]
    assert got == [
        (
            'Shell benchmark',
            [
                ("run_command('true')", {'ours': 1020.0, 'reference': 2280.0, 'limit': 740.0}),
                ('timed-out tree', {'ours': 3100.0, 'reference': 3840.0, 'limit': 2920.0}),
                ('1 GiB of output', {'ours': 790000.0}),
            ],
        ),
        ('Workspace', [('read_file', {'ours': 26.0, 'reference': 799.0})]),
    ]


def test_the_svg_has_a_bar_per_figure(chart: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'x-latest.md').write_text(TABLES, encoding='utf-8')
    (tmp_path / 'notes.md').write_text(TABLES, encoding='utf-8')  # not a *-latest.md: ignored
    out = chart.write_chart(tmp_path)
    root = ET.parse(out).getroot()
    bars = [r for r in root.iter('{http://www.w3.org/2000/svg}rect') if r.find('{http://www.w3.org/2000/svg}title') is not None]
    assert [b.find('{http://www.w3.org/2000/svg}title').text for b in bars] == [  # type: ignore[union-attr]
        'ours: 1.02 ms',
        'reference: 2.28 ms',
        'limit: 740 µs',
        'ours: 3.1 ms',
        'reference: 3.84 ms',
        'limit: 2.92 ms',
        'ours: 790 ms',
        'ours: 26 µs',
        'reference: 799 µs',
    ]
