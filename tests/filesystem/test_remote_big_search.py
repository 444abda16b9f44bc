"""Searches over a file bigger than the search's read limit on a commands-only backend (issue 20).

`ShellSandbox`'s listings (derived by `Workspace` through the shell) give no file sizes, so the
engine cannot tell a big file from its listing. It must not move such a file through the
workspace only to skip it: one command tells its size and sends its bytes only when within the
limit. The limits are patched small (`_ranged.SEARCH_READ_BYTES`, `_ranged.PIECE_BYTES`) so a
file of a few hundred KiB is "big".
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.filesystem import _ranged
from pydantic_ai_harness_rs.filesystem._remote import RemoteEngine

from tests.workspace_core import core

from .conftest import REFERENCE

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from backends import ShellSandbox  # noqa: E402

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(REFERENCE, reason='our protocol engine'),
]

LIMIT = 4096


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ranged, 'SEARCH_READ_BYTES', LIMIT, raising=False)
    monkeypatch.setattr(_ranged, 'PIECE_BYTES', 64 << 10)


def tree(root: Path, big_lines: int) -> None:
    (root / 'a.txt').write_text('one needle\n')
    lines = b''.join(b'line %07d filler\n' % i for i in range(big_lines))
    (root / 'big.log').write_bytes(lines + b'needle at the end\n')


async def search_runs(root: Path) -> tuple[str, int]:
    sandbox = ShellSandbox(root)
    outcome = await RemoteEngine(sandbox).search_files('needle')  # type: ignore[arg-type]
    return outcome.text, sandbox.runs


@pytest.mark.usefixtures('small_limits')
async def test_search_files_skips_a_big_unsized_file_without_moving_it(tmp_path: Path) -> None:
    texts, runs = [], []
    for big_lines in (20_000, 200_000):  # about 400 KiB, then 4 MiB
        root = tmp_path / str(big_lines)
        root.mkdir()
        tree(root, big_lines)
        text, count = await search_runs(root)
        texts.append(text)
        runs.append(count)
    assert texts == ['a.txt:1:one needle\n[1 files skipped (too large or unreadable): big.log]'] * 2
    # One command for the big file whatever its size; none of its bytes pulled through the shell.
    assert runs[0] == runs[1]
    small = tmp_path / 'small'
    small.mkdir()
    (small / 'a.txt').write_text('one needle\n')
    (small / 'big.log').write_text('tiny\n')
    assert (await search_runs(small))[1] == runs[0]


def local_grep(root: Path, pattern: str, path: str = '.', context: int = 0) -> str:
    outcome = core(root).grep(pattern, path, None, None, False, False, context, cancel=_core.CancelToken())
    return outcome.text


def numbered(lines: int) -> bytes:
    """Lines of varying length, so matches fall across the 64 KiB piece boundaries."""
    return b''.join(b'%06d entry %s\n' % (i, b'x' * (i % 13)) for i in range(lines))


@pytest.mark.usefixtures('small_limits')
@pytest.mark.parametrize('named', [False, True])
async def test_grep_searches_a_big_unsized_file_in_pieces_as_locally(
    tmp_path: Path, named: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ranged, 'PIECE_BYTES', 1 << 20)
    (tmp_path / 'a.txt').write_text('one entry\n')
    data = numbered(200_000)  # about 3.9 MiB: 4 pieces of 1 MiB
    (tmp_path / 'big.log').write_bytes(data)
    path = 'big.log' if named else '.'
    # The lines across each piece boundary (a 1 MiB multiple falls inside each), with context.
    boundaries = [data[: k * (1 << 20)].count(b'\n') for k in range(1, 4)]
    pattern = '^(' + '|'.join(f'{n:06d}' for n in boundaries) + ') entry'
    sandbox = ShellSandbox(tmp_path)
    engine = RemoteEngine(sandbox)  # type: ignore[arg-type]
    outcome = await engine.grep(pattern, path, context=2)
    expected = local_grep(tmp_path, pattern, path, context=2)
    assert outcome.text == expected
    assert expected.count('entry') == 3 * 5
    # As many commands as for a small file, plus one per piece: the file is not paged through
    # the protocol's reads (a command per 64 KiB).
    small = tmp_path / 'small'
    small.mkdir()
    (small / 'a.txt').write_text('one entry\n')
    (small / 'big.log').write_text('000001 entry\n')
    base = ShellSandbox(small)
    await RemoteEngine(base).grep(pattern, path, context=2)  # type: ignore[arg-type]
    assert sandbox.runs <= base.runs + 4


@pytest.mark.usefixtures('small_limits')
async def test_grep_of_a_big_binary_file_in_pieces_is_described_as_locally(tmp_path: Path) -> None:
    data = numbered(20_000)
    (tmp_path / 'big.bin').write_bytes(data[:200_000] + b'\0' + data[200_000:])
    engine = RemoteEngine(ShellSandbox(tmp_path))  # type: ignore[arg-type]
    for path in ('.', 'big.bin'):
        for pattern in ('000123 entry', '019990 entry'):
            assert (await engine.grep(pattern, path)).text == local_grep(tmp_path, pattern, path)
