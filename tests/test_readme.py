"""Every Python snippet of the README runs as written (issue 19): imports complete, names right.

Each snippet runs in a fresh directory (holding the `./workspace`, `./repo` and `./app` the snippets
name) with Pydantic AI's model lookup answering every model name with a model that says `done`, so
no provider package or API key is needed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pydantic_ai_harness_rs
import pytest

PACKAGE_PATH = str(Path(pydantic_ai_harness_rs.__file__).resolve().parent.parent)
"""Where the package under test was imported from (not the whole `sys.path`: pytest puts `tests/` on it,
whose `typing` package would shadow the standard library's)."""

README = Path(__file__).resolve().parent.parent / 'README.md'

PRELUDE = """
import pydantic_ai.models
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models.function import FunctionModel

def _done(messages, info):
    return ModelResponse(parts=[TextPart('done')])

async def _stream(messages, info):
    yield 'done'

_infer = pydantic_ai.models.infer_model
pydantic_ai.models.infer_model = lambda model, *a, **k: (
    FunctionModel(_done, stream_function=_stream) if isinstance(model, str) else _infer(model, *a, **k)
)
"""


def _snippets() -> list[tuple[int, str]]:
    text = README.read_text()
    return [(text[: m.start()].count('\n') + 1, m.group(1)) for m in re.finditer(r'```python\n(.*?)```', text, re.S)]


def test_the_readme_has_its_snippets() -> None:
    assert len(_snippets()) >= 5


@pytest.mark.parametrize('line, code', _snippets(), ids=lambda v: f'line-{v}' if isinstance(v, int) else '')
def test_a_readme_snippet_runs(tmp_path: Path, line: int, code: str) -> None:
    if 'temporalio' in code:
        pytest.importorskip('temporalio', reason="needs temporalio (pip install '.[durable]')")
    for name in ('workspace', 'repo', 'app'):
        (tmp_path / name).mkdir()
    (tmp_path / 'workspace' / 'config.toml').write_text('[package]\nname = "demo"\n')
    env = {**os.environ, 'PYTHONPATH': PACKAGE_PATH}
    done = subprocess.run(
        [sys.executable, '-c', PRELUDE + code], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, f'README line {line}:\n{done.stderr}'
