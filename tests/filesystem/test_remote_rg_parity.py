"""`grep`, `list_files` and `search_files` give the same text through the workspace protocol as on
a local workspace (issue 20, items 5-7).

One tree (a git repository with `.gitignore`, `.git/info/exclude`, nested `.ignore` and
`.rgignore` files, hidden files, a binary file, a 1 MiB line, context-rich files) is searched on a
plain `LocalWorkspaceBackend` (the native path, ripgrep's crates on the host) and through the
protocol on `ProtocolLocal` (the same directory), `ShellSandbox` (every file op through `/bin/sh`)
and `MemoryWorkspace` (the same files in memory): every result must be byte-identical to the local
one, over many option combinations, caps, and `report_skipped`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.workspaces import LocalWorkspaceBackend
from pydantic_ai_harness_rs import FileSystem

from .conftest import REFERENCE

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from backends import ProtocolLocal, ShellSandbox  # noqa: E402
from memory_workspace import MemoryWorkspace  # noqa: E402

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(REFERENCE, reason='our protocol engine against our local engine'),
]

LONG = 'x' * (1 << 20) + ' needle ' + 'y' * 100 + '\n'

TREE: dict[str, bytes | str] = {
    '.git/info/exclude': 'excluded.txt\n',
    '.git/HEAD': 'ref: refs/heads/main\n',
    '.gitignore': 'build/\n*.log\n!keep.log\n',
    'README.md': '# Title\nneedle in the readme\n',
    'src/main.py': 'import os\n\ndef main():\n    needle = 1\n    return needle\n\ndef other():\n    pass\n',
    'src/util.py': 'def helper(x):\n    return x * 2  # a.b needle\n',
    'src/lib.rs': 'fn needle() {}\nfn main() { needle(); }\n',
    'src/pkg/deep.py': 'VALUE = "NEEDLE"\n',
    'docs/.ignore': 'draft.md\n',
    'docs/guide.md': 'one\ntwo\nneedle three\nfour\nfive\nsix\nneedle seven\n',
    'docs/draft.md': 'needle draft\n',
    'sub/.rgignore': 'secret.txt\n',
    'sub/.gitignore': '!../app.log\nlocal.txt\n',
    'sub/secret.txt': 'needle secret\n',
    'sub/local.txt': 'needle local\n',
    'sub/open.txt': 'needle open\n',
    'build/out.py': 'needle built\n',
    'app.log': 'needle log\n',
    'keep.log': 'needle kept\n',
    'excluded.txt': 'needle excluded\n',
    '.env': 'NEEDLE=1\n',
    '.config/settings.py': 'needle = "hidden"\n',
    'data.bin': b'needle before\n' + b'\x00' * 8 + b'needle after\n',
    'long.txt': 'short needle\n' + LONG + 'tail needle\n',
    'many.txt': ''.join(f'line {i} needle\n' for i in range(30)),
}


def _write(root: Path) -> None:
    for rel, data in TREE.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)


@pytest.fixture(scope='module')
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp('parity')
    _write(root)
    return root


def _backends(root: Path) -> dict[str, Any]:
    return {
        'protocol': ProtocolLocal(str(root)),
        'shell': ShellSandbox(root),
        'memory': MemoryWorkspace(TREE),
    }


def _toolset(**options: Any) -> Any:
    """A FileSystem's toolset, whose direct tool methods take `workspace=`."""
    return FileSystem(**options).get_toolset()


async def _compare(root: Path, tool: str, options: dict[str, Any], **args: Any) -> str:
    """The local result of `tool(**args)`, after checking every protocol backend gives the same."""
    toolset = _toolset(**options)
    local = await getattr(toolset, tool)(**args, workspace=LocalWorkspaceBackend(str(root)))
    for name, backend in _backends(root).items():
        remote = await getattr(_toolset(**options), tool)(**args, workspace=backend)
        assert remote == local, f'{name}: {tool}({args}) with {options}'
    return local


GREP_CASES: list[dict[str, Any]] = [
    {'pattern': 'needle'},
    {'pattern': 'needle', 'path': 'src'},
    {'pattern': 'needle', 'path': 'sub'},
    {'pattern': 'needle', 'path': 'docs'},
    {'pattern': 'needle', 'path': 'src/main.py'},
    {'pattern': 'needle', 'path': 'docs/draft.md'},
    {'pattern': 'needle', 'path': 'build/out.py'},
    {'pattern': 'needle', 'path': '.env'},
    {'pattern': 'NEEDLE', 'path': '.env', 'glob': '.*'},
    {'pattern': 'needle', 'path': '.config', 'glob': '.*'},
    {'pattern': 'NEEDLE', 'ignore_case': True},
    {'pattern': 'NEEDLE'},
    {'pattern': 'a.b', 'literal': True},
    {'pattern': 'a.b'},
    {'pattern': r'def \w+\('},
    {'pattern': 'needle', 'context': 1},
    {'pattern': 'needle', 'context': 2, 'path': 'docs'},
    {'pattern': 'def', 'context': 3, 'path': 'src/main.py'},
    {'pattern': 'needle', 'file_type': 'py'},
    {'pattern': 'needle', 'file_type': 'rust'},
    {'pattern': 'needle', 'file_type': 'md', 'context': 1},
    {'pattern': 'needle', 'file_type': 'nosuchtype'},
    {'pattern': 'needle', 'glob': '*.py'},
    {'pattern': 'needle', 'glob': '*.log'},
    {'pattern': 'needle', 'glob': 'build/**'},
    {'pattern': 'needle', 'glob': '.config/*'},
    {'pattern': 'needle', 'glob': '.*'},
    {'pattern': 'needle', 'glob': '!*.md'},
    {'pattern': 'needle', 'glob': '{a'},
    {'pattern': 'needle', 'path': 'missing'},
    {'pattern': '(unclosed'},
    {'pattern': 'zzz-none'},
    {'pattern': 'after'},
    {'pattern': 'before'},
    {'pattern': 'needle', 'path': 'data.bin'},
    {'pattern': 'needle', 'path': 'long.txt'},
    {'pattern': 'needle', 'path': 'many.txt', 'context': 1},
]


@pytest.mark.parametrize('args', GREP_CASES, ids=lambda a: ','.join(f'{k}={v}' for k, v in a.items()))
async def test_grep_is_the_local_grep(tree: Path, args: dict[str, Any]) -> None:
    try:
        await _compare(tree, 'grep', {}, **args)
    except Exception as error:  # a retry: every backend must give the same one
        local = type(error), str(error)
        toolset = _toolset()
        for name, backend in _backends(tree).items():
            with pytest.raises(local[0]) as raised:
                await toolset.grep(**args, workspace=backend)
            assert str(raised.value) == local[1], name


@pytest.mark.parametrize(
    ('options', 'args'),
    [
        ({'max_search_results': 5}, {'pattern': 'needle'}),
        ({'max_search_results': 5}, {'pattern': 'needle', 'path': 'many.txt'}),
        ({'max_search_results': 3}, {'pattern': 'needle', 'context': 2, 'path': 'docs'}),
        ({'max_search_results': 1000}, {'pattern': 'line'}),
        ({'report_skipped': True}, {'pattern': 'needle'}),
        ({'report_skipped': True}, {'pattern': 'needle', 'glob': '*.py'}),
        ({'report_skipped': True}, {'pattern': 'needle', 'file_type': 'py'}),
        ({'report_skipped': True, 'max_search_results': 2}, {'pattern': 'needle', 'path': 'src'}),
    ],
)
async def test_grep_caps_and_skipped_are_the_local_ones(
    tree: Path, options: dict[str, Any], args: dict[str, Any]
) -> None:
    await _compare(tree, 'grep', options, **args)


async def test_grep_shows_what_local_grep_shows(tree: Path) -> None:
    """The same text is the right text: ignore files, previews, binary notices, no hidden trailer."""
    text = await _compare(tree, 'grep', {}, pattern='needle')
    lines = text.splitlines()
    assert 'keep.log:1:needle kept' in lines
    assert not any(
        line.startswith(('app.log', 'build/', 'excluded.txt', 'docs/draft.md', 'sub/secret.txt', 'sub/local.txt'))
        for line in lines
    )
    assert not any(line.startswith('data.bin') for line in lines)  # binary: rg stops at the NUL
    assert [line for line in lines if line.startswith('long.txt')][1].endswith(' [... omitted end of long line]')
    assert 'hidden entries omitted' not in text
    assert len(text) < 8_000
    context = await _compare(tree, 'grep', {}, pattern='needle', context=1, path='docs')
    assert context == 'docs/guide.md-2-two\ndocs/guide.md:3:needle three\ndocs/guide.md-4-four\n' + (
        'docs/guide.md-6-six\ndocs/guide.md:7:needle seven'
    )


LIST_CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {}),
    ({}, {'path': 'src'}),
    ({}, {'path': 'sub'}),
    ({}, {'path': 'docs'}),
    ({}, {'glob': '*.py'}),
    ({}, {'glob': '*.log'}),
    ({}, {'glob': 'src/**'}),
    ({}, {'glob': '.*'}),
    ({}, {'glob': '.config/*'}),
    ({}, {'glob': '!*.md'}),
    ({}, {'glob': '{a'}),
    ({}, {'path': 'README.md'}),
    ({}, {'path': 'missing'}),
    ({'max_find_results': 3}, {}),
    ({'report_skipped': True}, {}),
    ({'report_skipped': True}, {'glob': '*.py'}),
    ({'report_skipped': True}, {'path': 'sub'}),
]


@pytest.mark.parametrize(('options', 'args'), LIST_CASES)
async def test_list_files_is_the_local_list_files(tree: Path, options: dict[str, Any], args: dict[str, Any]) -> None:
    try:
        await _compare(tree, 'list_files', options, **args)
    except AssertionError:
        raise
    except Exception as error:
        for name, backend in _backends(tree).items():
            with pytest.raises(type(error)) as raised:
                await _toolset(**options).list_files(**args, workspace=backend)
            assert str(raised.value) == str(error), name


async def test_list_files_follows_ignore_files(tree: Path) -> None:
    text = await _compare(tree, 'list_files', {})
    assert text.splitlines() == [
        'README.md',
        'data.bin',
        'docs/guide.md',
        'keep.log',
        'long.txt',
        'many.txt',
        'src/lib.rs',
        'src/main.py',
        'src/pkg/deep.py',
        'src/util.py',
        'sub/open.txt',
    ]
    skipped = await _compare(tree, 'list_files', {'report_skipped': True})
    assert skipped.splitlines()[-1] == (
        '[skipped: 7 hidden entries (name a hidden path explicitly to include them), '
        '6 entries ignored by .gitignore/.ignore (a glob naming them includes them)]'
    )


@pytest.mark.parametrize(
    ('tool', 'args'),
    [
        ('list_directory', {}),
        ('list_directory', {'path': 'sub'}),
        ('find_files', {'pattern': '**/*'}),
        ('find_files', {'pattern': '*', 'path': 'sub'}),
        ('search_files', {'pattern': 'needle'}),
        ('search_files', {'pattern': 'needle', 'path': 'sub'}),
        ('search_files', {'pattern': 'needle', 'include_glob': '*.py'}),
    ],
)
async def test_report_skipped_is_the_local_trailer(tree: Path, tool: str, args: dict[str, Any]) -> None:
    """`report_skipped` on a non-local backend ends each walker's result as locally (it was ignored there)."""
    text = await _compare(tree, tool, {'report_skipped': True}, **args)
    assert text.splitlines()[-1].startswith('[skipped: ')
    assert 'hidden entries omitted' not in text


def _ignore_tree(root: Path, *, git: bool) -> None:
    files = {'.gitignore': 'ignored/\n', 'src/v.py': 'needle\n', 'ignored/s.py': 'needle\n', 'sub/.ignore': 'w.py\n'}
    files['sub/w.py'] = 'needle\n'
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if git:
        (root / '.git').mkdir()


@pytest.mark.parametrize('git', [True, False])
async def test_search_files_skips_ignored_files_on_every_backend(tmp_path: Path, git: bool) -> None:
    """0.62.0's `search_files` on a workspace runs `rg`: `.gitignore` in a repository, `.ignore`
    anywhere; ours follows the same rules on a local workspace and through the protocol."""
    _ignore_tree(tmp_path, git=git)
    toolset = _toolset()
    found = 'src/v.py:1:needle' if git else 'ignored/s.py:1:needle\nsrc/v.py:1:needle'
    local = await toolset.search_files('needle', workspace=LocalWorkspaceBackend(str(tmp_path)))
    assert local == found
    memory = MemoryWorkspace({str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob('*') if p.is_file()})
    if git:
        memory._add_dir('/ws/.git')  # pyright: ignore[reportPrivateUsage]
    hidden = 3 if git else 2  # .gitignore, sub/.ignore (and .git)
    for backend in (ProtocolLocal(str(tmp_path)), ShellSandbox(tmp_path), memory):
        remote = await _toolset().search_files('needle', workspace=backend)
        assert remote == f'{found}\n[{hidden} hidden entries omitted; name a hidden path explicitly to include it]'
    # A glob 0.62.0 hands `rg` as `--glob` names an ignored file back in, as there.
    for backend in (LocalWorkspaceBackend(str(tmp_path)), ProtocolLocal(str(tmp_path)), memory):
        found = await _toolset().search_files('needle', include_glob='*w.py', workspace=backend)
        assert found.splitlines()[0] == 'sub/w.py:1:needle'
