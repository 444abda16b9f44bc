"""list_directory, search_files, find_files: format, sorting, dotfiles, patterns, caps, events."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from tests.filesystem.conftest import spec_over_reference
from tests.scripted import RETRY, call, run_tools

pytestmark = pytest.mark.anyio


async def test_list_directory(fs: ModuleType, tree: Path) -> None:
    result, t = await call([fs.FileSystem(root_dir=tree)], 'list_directory')
    assert result == 'README.md  (24 bytes)\ndocs/\nsrc/'
    [event] = t.of(fs.DirectoryListedEvent)
    assert (event.path, event.entry_count, event.root_dir) == ('.', 3, str(tree))


async def test_list_directory_relative_to_cwd(fs: ModuleType, tree: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=tree, cwd=tree / 'src')],
        [('list_directory', {}), ('list_directory', {'path': '../docs'})],
    )
    assert t.results == ['main.py  (46 bytes)\npkg/', '../docs/guide.md  (21 bytes)']
    assert [e.path for e in t.of(fs.DirectoryListedEvent)] == ['src', 'docs']


async def test_list_directory_cap_marks_only_a_real_drop(fs: ModuleType, tmp_path: Path) -> None:
    for name in 'abc':
        (tmp_path / name).write_text('')
    t = await run_tools(
        [fs.FileSystem(root_dir=tmp_path, max_list_results=3)], [('list_directory', {})]
    )
    assert t.results == ['a  (0 bytes)\nb  (0 bytes)\nc  (0 bytes)']
    t = await run_tools([fs.FileSystem(root_dir=tmp_path, max_list_results=2)], [('list_directory', {})])
    assert t.results == ['a  (0 bytes)\nb  (0 bytes)\n[... truncated at 2 entries]']
    assert t.of(fs.DirectoryListedEvent)[0].entry_count == 2


async def test_list_directory_filters_by_allowed_patterns(fs: ModuleType, tree: Path) -> None:
    result, _ = await call([fs.FileSystem(root_dir=tree, allowed_patterns=['*.py'])], 'list_directory', path='src')
    assert result == 'src/main.py  (46 bytes)'


async def test_list_directory_errors(fs: ModuleType, tree: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=tree, denied_patterns=['docs'])],
        [('list_directory', {'path': 'README.md'}), ('list_directory', {'path': 'docs'}), ('list_directory', {'path': 'x'})],
    )
    assert t.results == [
        RETRY + 'Not a directory: README.md',
        RETRY + "Path 'docs' is denied by pattern 'docs'.",
        RETRY + 'Not a directory: x',
    ]
    assert t.events == []


async def test_empty_directory(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'e').mkdir()
    result, _ = await call([fs.FileSystem(root_dir=tmp_path)], 'list_directory', path='e')
    assert result == '(empty directory)'


async def test_search_files(fs: ModuleType, tree: Path) -> None:
    result, t = await call([fs.FileSystem(root_dir=tree)], 'search_files', pattern=r'VALUE|^# ')
    assert result == 'README.md:1:# Demo\nsrc/main.py:5:    return pkg.VALUE\nsrc/pkg/__init__.py:1:VALUE = 42'
    [event] = t.of(fs.FilesSearchedEvent)
    assert (event.path, event.pattern, event.search, event.match_count, event.truncated) == (
        '.', r'VALUE|^# ', 'grep', 3, False,
    )


async def test_search_files_include_glob_is_root_relative(fs: ModuleType, tree: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=tree, cwd=tree / 'src')],
        [('search_files', {'pattern': 'VALUE', 'include_glob': 'src/pkg/*'}), ('search_files', {'pattern': 'VALUE', 'include_glob': 'pkg/*'})],
    )
    assert t.results == ['pkg/__init__.py:1:VALUE = 42', 'No matches found.']


async def test_search_files_python_regex_syntax(fs: ModuleType, tree: Path) -> None:
    result, _ = await call([fs.FileSystem(root_dir=tree)], 'search_files', pattern=r'(?<=return )pkg\.(?P<n>\w+)')
    assert result == 'src/main.py:5:    return pkg.VALUE'


async def test_search_files_cap_skips_binaries_and_dotfiles(fs: ModuleType, tmp_path: Path) -> None:
    (tmp_path / 'a.txt').write_text('hit\nhit\n')
    (tmp_path / 'b.bin').write_bytes(b'hit\x00')
    (tmp_path / '.hidden').write_text('hit\n')
    (tmp_path / 'c.txt').write_text('hit\n')
    t = await run_tools(
        [fs.FileSystem(root_dir=tmp_path, max_search_results=2)],
        [('search_files', {'pattern': 'hit'})],
    )
    assert t.results == ['a.txt:1:hit\na.txt:2:hit\n[... truncated at 2 matches]']
    assert (t.of(fs.FilesSearchedEvent)[0].match_count, t.of(fs.FilesSearchedEvent)[0].truncated) == (2, True)


async def test_search_files_invalid_regex(fs: ModuleType, tree: Path) -> None:
    result, t = await call([fs.FileSystem(root_dir=tree)], 'search_files', pattern='(unclosed')
    assert result == RETRY + 'Invalid regex pattern: missing ), unterminated subpattern at position 0'
    assert t.events == []


@spec_over_reference
async def test_search_under_a_missing_path_is_a_retry_without_event(fs: ModuleType, tree: Path) -> None:
    # The document: a failed operation emits no event. 0.36.0 answers 'No matches found.' with an event.
    result, t = await call([fs.FileSystem(root_dir=tree)], 'search_files', pattern='x', path='nowhere')
    assert result.startswith(RETRY)
    assert t.events == []


async def test_find_files(fs: ModuleType, tree: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=tree)],
        [('find_files', {'pattern': '**/*.py'}), ('find_files', {'pattern': '*'}), ('find_files', {'pattern': '*.py', 'path': 'src'})],
    )
    assert t.results == [
        'src/main.py\nsrc/pkg/__init__.py',
        'README.md\ndocs/\nsrc/',
        'src/main.py',
    ]
    assert [(e.pattern, e.search, e.match_count) for e in t.of(fs.FilesSearchedEvent)] == [
        ('**/*.py', 'find', 2), ('*', 'find', 3), ('*.py', 'find', 1),
    ]


async def test_find_files_rejects_absolute_patterns_and_caps(fs: ModuleType, tree: Path) -> None:
    t = await run_tools(
        [fs.FileSystem(root_dir=tree, max_find_results=1)],
        [('find_files', {'pattern': '/etc/*'}), ('find_files', {'pattern': '**/*.md'})],
    )
    assert t.results == [
        RETRY + "Pattern '/etc/*' must be relative to the search path, not absolute.",
        'README.md\n[... truncated at 1 matches]',
    ]
    [event] = t.of(fs.FilesSearchedEvent)
    assert (event.match_count, event.truncated) == (1, True)


async def test_find_files_no_match(fs: ModuleType, tree: Path) -> None:
    result, _ = await call([fs.FileSystem(root_dir=tree)], 'find_files', pattern='*.rs')
    assert result == 'No matches found.'


async def test_sorting_is_by_path_components(fs: ModuleType, tmp_path: Path) -> None:
    # 'a-b' sorts after 'a/...' component-wise, before it as a plain string.
    (tmp_path / 'a').mkdir()
    (tmp_path / 'a' / 'x.txt').write_text('k\n')
    (tmp_path / 'a-b.txt').write_text('k\n')
    t = await run_tools(
        [fs.FileSystem(root_dir=tmp_path)], [('search_files', {'pattern': 'k'}), ('find_files', {'pattern': '**/*.txt'})]
    )
    assert t.results == ['a/x.txt:1:k\na-b.txt:1:k', 'a/x.txt\na-b.txt']
