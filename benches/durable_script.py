"""The change scripts both sides of the durable benchmark run: `bench_durable.py` (ours) and
`durable_ref.py` (0.62.0, in its own venv). Imports nothing but the standard library, so either
side's interpreter can load it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CONTENT = 'line of text\n' * 100
"""The text written (100 lines, 1,300 characters); each edited file is this plus `end`."""


def script(tool: str, steps: int) -> list[Any]:
    """`steps` calls of `tool` as `[name, arguments]` pairs: writes of `b.txt`; edits of `e<i>.txt`
    (`seed` makes them), one each."""
    if tool == 'write_file':
        return [['write_file', {'path': 'b.txt', 'content': CONTENT}]] * steps
    return [['edit_file', {'path': f'e{i}.txt', 'old_text': 'end', 'new_text': 'END'}] for i in range(steps)]


def seed(ws: Path, steps: int) -> None:
    """The files `script`'s edits change, as they were before: `e0.txt` .. `e<steps-1>.txt` in `ws`."""
    for i in range(steps):
        (ws / f'e{i}.txt').write_text(CONTENT + 'end\n')
