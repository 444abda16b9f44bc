"""Containment and patterns under attack: traversal, absolute paths, symlinks, case, NUL bytes, races."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import ModuleType

import pytest

from tests.filesystem.conftest import reference_races, spec_over_reference
from tests.scripted import RETRY, run_tools

pytestmark = pytest.mark.anyio


@pytest.fixture
def jail(tmp_path: Path) -> Path:
    root = tmp_path / 'root'
    (root / 'sub').mkdir(parents=True)
    (root / 'sub' / 'ok.txt').write_text('ok\n')
    (tmp_path / 'secret.txt').write_text('TOP SECRET\n')
    os.symlink(tmp_path / 'secret.txt', root / 'escape')
    os.symlink(tmp_path, root / 'escape-dir')
    os.symlink(root / 'sub' / 'ok.txt', root / 'inside-abs')
    os.symlink('nowhere', root / 'dangling')
    os.symlink('loop-b', root / 'loop-a')
    os.symlink('loop-a', root / 'loop-b')
    return root


@pytest.mark.parametrize(
    ('path', 'message'),
    [
        ('../secret.txt', "Path '../secret.txt' resolves outside the root directory."),
        ('sub/../../secret.txt', "Path 'sub/../../secret.txt' resolves outside the root directory."),
        ('/etc/passwd', "Path '/etc/passwd' resolves outside the root directory."),
        ('escape', "Path 'escape' resolves outside the root directory."),
        ('escape-dir/secret.txt', "Path 'escape-dir/secret.txt' resolves outside the root directory."),
        ('loop-a', "Path 'loop-a' resolves through a symlink loop."),
    ],
)
async def test_reads_outside_the_root_are_refused(fs: ModuleType, jail: Path, path: str, message: str) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=jail)],
        [('read_file', {'path': path}), ('file_info', {'path': path}), ('write_file', {'path': path, 'content': 'x'})],
    )
    assert t.results == [RETRY + message] * 3
    assert (jail.parent / 'secret.txt').read_text() == 'TOP SECRET\n'
    assert t.events == []


async def test_absolute_symlink_inside_and_absolute_path_inside_work(fs: ModuleType, jail: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=jail, content_hashes=False)],
        [('read_file', {'path': 'inside-abs'}), ('read_file', {'path': str(jail / 'sub' / 'ok.txt')})],
    )
    assert t.results == ['[inside-abs | 1 lines]\n     1\tok\n', f'[{jail}/sub/ok.txt | 1 lines]\n     1\tok\n']
    # Event paths are the resolved location relative to the root.
    assert [e.path for e in t.events] == ['sub/ok.txt', 'sub/ok.txt']


async def test_dangling_link_is_not_found(fs: ModuleType, jail: Path) -> None:
    t = await run_tools([fs.FileSystem(root_dir=jail)], [('read_file', {'path': 'dangling'})])
    assert t.results == [RETRY + 'File not found: dangling']


async def test_walkers_never_surface_links_out_of_the_root(fs: ModuleType, jail: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=jail)],
        [
            ('list_directory', {}),
            ('find_files', {'pattern': '**/*'}),
            ('search_files', {'pattern': 'SECRET|ok'}),
        ],
    )
    listing, found, searched = t.results
    assert listing == 'inside-abs  (3 bytes)\nsub/'
    assert 'escape' not in found and 'secret' not in found
    assert 'TOP SECRET' not in searched
    assert searched == 'inside-abs:1:ok\nsub/ok.txt:1:ok'


async def test_a_symlink_cannot_alias_a_denied_file(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'private').mkdir()
    (tmp_path / 'private' / 'key.txt').write_text('k3y\n')
    os.symlink('private/key.txt', tmp_path / 'public.txt')
    t = await run_tools(
        [fs.FileSystem(root_dir=tmp_path, denied_patterns=['private/*'])],
        [('read_file', {'path': 'public.txt'}), ('list_directory', {}), ('search_files', {'pattern': 'k3y'})],
    )
    assert t.results == [
        RETRY + "Path 'private/key.txt' is denied by pattern 'private/*'.",
        'private/',
        'No matches found.',
    ]


async def test_dot_segments_cannot_dodge_a_pattern(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'config').mkdir()
    (tmp_path / 'config' / 'secret.txt').write_text('s\n')
    t = await run_tools(
        [fs.FileSystem(root_dir=tmp_path, denied_patterns=['config/secret.txt'])],
        [('read_file', {'path': 'config/./secret.txt'}), ('read_file', {'path': 'config//../config/secret.txt'})],
    )
    assert t.results == [RETRY + "Path 'config/secret.txt' is denied by pattern 'config/secret.txt'."] * 2


@spec_over_reference
async def test_denied_pattern_covers_a_directory_s_descendants(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'logs').mkdir()
    (tmp_path / 'logs' / 'app.log').write_text('boom\n')
    (tmp_path / 'a.txt').write_text('boom\n')
    t = await run_tools(
        [fs.FileSystem(root_dir=tmp_path, denied_patterns=['logs'])],
        [('read_file', {'path': 'logs/app.log'}), ('search_files', {'pattern': 'boom'})],
    )
    assert t.results == [RETRY + "Path 'logs/app.log' is denied by pattern 'logs'.", 'a.txt:1:boom']


@spec_over_reference
@pytest.mark.parametrize('spelling', ['.GIT/config', '.Git/CONFIG'])
async def test_protected_patterns_match_case_insensitively(fs: ModuleType, tmp_path: Path, spelling: str) -> None:
    # On a case-insensitive filesystem `.GIT/config` is `.git/config`; the pattern must not be dodged by case.
    result = await run_tools([fs.FileSystem(root_dir=tmp_path)], [('write_file', {'path': spelling, 'content': 'x'})])
    assert result.results[0].startswith(RETRY) and 'protected' in result.results[0]


@spec_over_reference
async def test_protected_directory_pattern_covers_descendants(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'vault' / 'deep').mkdir(parents=True)
    result = await run_tools(
        [fs.FileSystem(root_dir=tmp_path, protected_patterns=['vault'])],
        [('write_file', {'path': 'vault/deep/x.txt', 'content': 'x'})],
    )
    assert result.results == [RETRY + "Path 'vault/deep/x.txt' is protected (matches 'vault')."]


async def test_nul_byte_is_a_retry(fs: ModuleType, jail: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=jail)],
        [('read_file', {'path': 'sub/ok.txt\x00../../secret.txt'}), ('write_file', {'path': 'a\x00b', 'content': 'x'})],
    )
    assert all(r.startswith(RETRY) for r in t.results)
    assert not any('SECRET' in r for r in t.results)


async def test_cwd_outside_root_is_refused(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'root').mkdir()
    with pytest.raises(ValueError, match='outside root_dir'):
        fs.FileSystem(root_dir=tmp_path / 'root', cwd=tmp_path).get_toolset()


@reference_races
async def test_a_path_swapped_for_a_symlink_never_escapes(fs: ModuleType, tmp_path: Path) -> None:
    """A concurrent thread flips `sub/f.txt` between a file and a link to an outside secret."""
    root = tmp_path / 'root'
    (root / 'sub').mkdir(parents=True)
    target = root / 'sub' / 'f.txt'
    target.write_text('inside\n')
    (tmp_path / 'secret.txt').write_text('TOP SECRET\n')
    stop = threading.Event()

    def swapper() -> None:
        tmp = root / 'sub' / 'tmp-link'
        while not stop.is_set():
            try:
                os.symlink(tmp_path / 'secret.txt', tmp)
                os.replace(tmp, target)
                target.unlink()
                target.write_text('inside\n')
            except OSError:
                pass

    toolset = fs.FileSystem(root_dir=root).get_toolset()
    thread = threading.Thread(target=swapper)
    thread.start()
    seen: list[str] = []
    try:
        for _ in range(300):
            try:
                seen.append(await toolset.read_file('sub/f.txt'))
            except Exception as e:  # a refused read (ModelRetry) is fine; a leak is not
                seen.append(f'error: {e}')
    finally:
        stop.set()
        thread.join()
    assert not any('TOP SECRET' in s for s in seen)


@reference_races
async def test_a_directory_swapped_for_a_symlink_mid_walk_never_lists_outside(fs: ModuleType, tmp_path: Path) -> None:
    """Threads flip directories the walk has seen as real between a directory and a link to an
    outside one: no name from outside is ever shown (`find_files` once listed them).

    The tree is big enough that the walk goes parallel after its first 10 ms; `**/*` matches
    every name, so a listing that followed a swapped link shows an outside name.
    """
    root, secret = tmp_path / 'root', tmp_path / 'secret'
    secret.mkdir()
    for i in range(20):
        (secret / f'outside-{i}.txt').write_text('TOP SECRET\n')
    for i in range(6000):
        d = root / f'd{i % 23}' / f'e{i % 7}'
        d.mkdir(parents=True, exist_ok=True)
        (d / f'f{i}.txt').write_text('inside\n')
    swaps = [root / f'd{i}' / 'swap' for i in range(23)]
    for s in swaps:
        s.mkdir()
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            for s in swaps:
                try:
                    if s.is_symlink():
                        s.unlink()
                        s.mkdir()
                    else:
                        s.rmdir()
                        s.symlink_to(secret)
                except OSError:
                    pass

    toolset = fs.FileSystem(root_dir=root, max_find_results=100_000, max_search_results=100_000).get_toolset()
    thread = threading.Thread(target=swapper)
    thread.start()
    seen: list[str] = []
    try:
        for _ in range(6):
            seen.append(await toolset.find_files('**/*'))
            seen.append(await toolset.search_files('SECRET|inside'))
    finally:
        stop.set()
        thread.join()
    assert all('f5999.txt' in s for s in seen)  # the walks did list the tree
    assert not any('outside-' in s or 'TOP SECRET' in s for s in seen)
