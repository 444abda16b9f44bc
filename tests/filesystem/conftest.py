"""FileSystem fixtures.

`fs` is the package under test: ours, or, with `HARNESS_IMPL=reference`, the reference
`pydantic_ai_harness.filesystem` (0.36.0) — running this suite against the reference checks
that our expectations are its behaviour. Tests of deliberate differences (the document wins
over 0.36.0) carry `@spec_over_reference` and are expected to fail there.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import ModuleType

import pytest

REFERENCE = os.environ.get('HARNESS_IMPL') == 'reference'

spec_over_reference = pytest.mark.xfail(
    REFERENCE, reason='the document wins over pydantic-ai-harness 0.36.0 here', strict=True
)

reference_races = pytest.mark.xfail(
    REFERENCE, reason='0.36.0 checks by path name: a swap between check and I/O can escape', strict=False
)


def beyond_reference(reason: str) -> list[pytest.MarkDecorator]:
    """`pytestmark` of an async module testing what the 0.36.0 reference lacks: skipped against it."""
    return [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason=reason)]


def sha(data: bytes) -> str:
    """A content hash as the tools report it: the first 12 hex digits of the SHA-256 of `data`."""
    return hashlib.sha256(data).hexdigest()[:12]


@pytest.fixture
def fs() -> ModuleType:
    if REFERENCE:
        import pydantic_ai_harness.filesystem as module
    else:
        import pydantic_ai_harness_rs.filesystem as module
    return module


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small project: code, docs, a dotfile, a nested package and a `.git` directory."""
    root = tmp_path / 'root'
    (root / 'src' / 'pkg').mkdir(parents=True)
    (root / 'docs').mkdir()
    (root / '.git').mkdir()
    (root / '.git' / 'config').write_text('[core]\n')
    (root / '.env').write_text('SECRET=1\n')
    (root / 'README.md').write_text('# Demo\n\nA demo project.\n')
    (root / 'src' / 'main.py').write_text('import pkg\n\n\ndef main():\n    return pkg.VALUE\n')
    (root / 'src' / 'pkg' / '__init__.py').write_text('VALUE = 42\n')
    (root / 'docs' / 'guide.md').write_text('line 1\nline 2\nline 3\n')
    return root
