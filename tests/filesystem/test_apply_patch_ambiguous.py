"""apply_patch: a hunk whose lines match several places of the file lands nowhere by guess.

Its lines must match one place after the previous hunk's end (its `@@` anchors narrow where); with
several, a unified diff's range on the `@@` line picks the nearest to its old start line, else the
patch is a retry naming the places, with nothing written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.filesystem.conftest import beyond_reference, sha
from tests.filesystem.test_apply_patch import apply, patch
from tests.scripted import RETRY

pytestmark = beyond_reference('0.36.0 has no apply_patch')

SOURCE = ''.join(f'def f{n}():\n    x = 1\n    return x\n\n' for n in range(1, 4))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / 'root'
    root.mkdir()
    (root / 'w.py').write_text(SOURCE)
    return root


async def test_lines_at_several_places_without_a_range_are_a_retry(root: Path) -> None:
    result, _ = await apply(root, patch('*** Update File: w.py', '@@', '     x = 1', '-    return x', '+    return 2'))
    assert result == RETRY + (
        "Hunk 1 of Update File 'w.py' (patch line 3) matches the file at 3 places (lines 2, 6 and 10): add an "
        "'@@' line naming a line above it (e.g. the def or class it is in) or more context lines. No changes "
        'were written.'
    )
    assert (root / 'w.py').read_text() == SOURCE


@pytest.mark.parametrize(
    ('header', 'changed'),
    [('@@ -6,2 +6,2 @@', 2), ('@@ -9,2 +9,2 @@', 3), ('@@ def f2():', 2), ('@@ -1,2 +1,2 @@ def f2():', 2)],
)
async def test_a_range_or_an_anchor_picks_the_place(root: Path, header: str, changed: int) -> None:
    result, _ = await apply(
        root, patch('*** Update File: w.py', header, '     x = 1', '-    return x', '+    return 2')
    )
    want = SOURCE.replace(f'def f{changed}():\n    x = 1\n    return x', f'def f{changed}():\n    x = 1\n    return 2')
    assert result == f'Applied patch to 1 file:\nM w.py [hash:{sha(want.encode())}]'
    assert (root / 'w.py').read_text() == want


async def test_a_later_hunk_counts_places_after_the_previous_one(root: Path) -> None:
    text = patch(
        '*** Update File: w.py',
        '@@ def f2():',
        '     x = 1',
        '@@',
        '     x = 1',
        '-    return x',
        '+    return 2',
    )
    result, _ = await apply(root, text)
    want = SOURCE.replace('def f3():\n    x = 1\n    return x', 'def f3():\n    x = 1\n    return 2')
    assert result == f'Applied patch to 1 file:\nM w.py [hash:{sha(want.encode())}]'
