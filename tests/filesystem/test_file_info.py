"""file_info: metadata lines, symlink targets with host paths hidden."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import ModuleType

import pytest

from tests.scripted import RETRY, run_tools

pytestmark = pytest.mark.anyio


async def test_file_directory_binary_and_links(fs: ModuleType, tree: Path, tmp_path: Path) -> None:
    (tree / 'bin.dat').write_bytes(b'\x00\x01\x02')
    os.symlink('docs/guide.md', tree / 'rel-link')
    os.symlink(tree / 'README.md', tree / 'abs-inside')
    outside = tmp_path / 'outside.txt'
    outside.write_text('secret\n')
    os.symlink(outside, tree / 'abs-outside')
    t = await run_tools(
        [fs.FileSystem(root_dir=tree)],
        [
            ('file_info', {'path': path})
            for path in ('docs/guide.md', 'docs', 'bin.dat', 'rel-link', 'abs-inside', 'abs-outside', 'missing')
        ],
    )
    digest = hashlib.sha256(b'line 1\nline 2\nline 3\n').hexdigest()[:12]
    guide = f'type: file\nsize: 21 bytes\nbinary: False\nlines: 3\nhash: {digest}'
    assert t.results[0] == f'path: docs/guide.md\n{guide}'
    assert t.results[1] == f'path: docs\ntype: directory\nsize: {(tree / "docs").stat().st_size} bytes'
    assert t.results[2] == 'path: bin.dat\ntype: file\nsize: 3 bytes\nbinary: True'
    assert t.results[3] == f'path: rel-link\n{guide}\nsymlink_target: docs/guide.md'
    assert t.results[4].endswith('\nsymlink_target: README.md')
    assert t.results[5] == RETRY + "Path 'abs-outside' resolves outside the root directory."
    assert t.results[6] == RETRY + 'Path not found: missing'
    assert all(str(tmp_path) not in r for r in t.results)
    assert t.events == []


async def test_symlink_target_outside_is_hidden_when_the_link_resolves_inside(fs: ModuleType, tmp_path: Path) -> None:
    # A link whose text is an absolute path outside the root but that resolves inside through another link.
    root = tmp_path / 'root'
    root.mkdir()
    (root / 'f.txt').write_text('x\n')
    alias = tmp_path / 'alias'
    os.symlink(root, alias)
    os.symlink(alias / 'f.txt', root / 'via-alias')
    t = await run_tools([fs.FileSystem(root_dir=root)], [('file_info', {'path': 'via-alias'})])
    assert t.results[0].endswith('\nsymlink_target: f.txt')
