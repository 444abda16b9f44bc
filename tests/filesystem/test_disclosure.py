"""Reads and searches that say what they left out (issue 9 §3, and NFC/NFD from §2), both contracts.

Brace globs, hidden paths named explicitly, sockets/FIFOs/devices, Unicode look-alike names,
`FileSystem(max_line_chars=N)` and `FileSystem(report_skipped=True)`, through a real agent run
with a scripted model. The document contract is `root_dir=`; the workspace contract is
`LocalWorkspace(dir)` + `FileSystem()` (0.62.0's texts), and the in-memory remote backend
(`tests/memory_workspace.py`) where the behaviour lives in the shared core.
"""

from __future__ import annotations

import os
import socket
import stat
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs import FileSystem

from tests.memory_workspace import MemoryWorkspace
from tests.scripted import RETRY, run_tools

pytestmark = pytest.mark.anyio

ALL_TOOLS = [
    'read_file',
    'write_file',
    'edit_file',
    'list_directory',
    'search_files',
    'find_files',
    'file_info',
    'list_files',
    'grep',
]
NFC = unicodedata.normalize('NFC', 'café.txt')
NFD = unicodedata.normalize('NFD', 'café.txt')
HIDDEN_062 = '[{} hidden entries omitted; name a hidden path explicitly to include it]'


def contracts(root: Path, **fields: Any) -> dict[str, list[Any]]:
    """The capabilities of a run on `root` under each contract."""
    return {
        'document': [FileSystem(root_dir=root, tools=ALL_TOOLS, **fields)],
        'workspace': [LocalWorkspace(root), FileSystem(tools=ALL_TOOLS, **fields)],
    }


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data)
        else:
            path.write_bytes(data)


# ---- brace globs -----------------------------------------------------------------------


@pytest.mark.parametrize('contract', ['document', 'workspace'])
async def test_brace_globs_match_each_alternative(tmp_path: Path, contract: str) -> None:
    write_tree(tmp_path, {'src/a.ts': 'let a\n', 'src/b.tsx': 'let b\n', 'src/c.js': 'let c\n'})
    t = await run_tools(
        contracts(tmp_path)[contract],
        [
            ('find_files', {'pattern': '**/*.{ts,tsx}'}),
            ('find_files', {'pattern': '*.{js,ts}', 'path': 'src'}),
            ('search_files', {'pattern': 'let', 'include_glob': '*.{ts,tsx}'}),
            ('grep', {'pattern': 'let', 'glob': '*.{ts,tsx}'}),
            ('find_files', {'pattern': '{src/a,x}.ts'}),
        ],
    )
    assert t.results == [
        'src/a.ts\nsrc/b.tsx',
        'src/a.ts\nsrc/c.js',
        'src/a.ts:1:let a\nsrc/b.tsx:1:let b',
        'src/a.ts:1:let a\nsrc/b.tsx:1:let b',
        RETRY + "Pattern '{src/a,x}.ts': braces spanning '/' are not supported; put the braces inside one "
        'path component, or run one search per alternative.',
    ]


async def test_brace_globs_on_a_remote_workspace() -> None:
    workspace = MemoryWorkspace({'src/a.ts': 'let a\n', 'src/b.tsx': 'let b\n', 'src/c.js': 'let c\n'})
    t = await run_tools(
        [FileSystem()],
        [
            ('find_files', {'pattern': '**/*.{ts,tsx}'}),
            ('search_files', {'pattern': 'let', 'include_glob': '*.{ts,tsx}'}),
        ],
        workspace=Workspace(workspace),
    )
    assert t.results == ['src/a.ts\nsrc/b.tsx', 'src/a.ts:1:let a\nsrc/b.tsx:1:let b']


# ---- hidden paths named explicitly -----------------------------------------------------


async def test_a_hidden_directory_named_explicitly_is_served_under_the_document(tmp_path: Path) -> None:
    """0.36.0 answers `(empty directory)` and `No matches found.` here; 0.62.0 serves them, as ours does."""
    write_tree(tmp_path, {'.github/workflows/ci.yml': 'on: push\n', '.github/.secret': 'push\n', 'a.txt': 'push\n'})
    t = await run_tools(
        contracts(tmp_path)['document'],
        [
            ('list_directory', {'path': '.github'}),
            ('list_directory', {'path': '.github/workflows'}),
            ('search_files', {'pattern': 'push', 'path': '.github'}),
            ('find_files', {'pattern': '**/*.yml', 'path': '.github'}),
            ('grep', {'pattern': 'push', 'path': '.github'}),
            ('list_directory', {}),
        ],
    )
    assert t.results == [
        '.github/workflows/',
        '.github/workflows/ci.yml  (9 bytes)',
        '.github/workflows/ci.yml:1:on: push',
        '.github/workflows/ci.yml',
        '.github/workflows/ci.yml:1:on: push',
        'a.txt  (5 bytes)',
    ]


# ---- sockets, FIFOs, devices -----------------------------------------------------------


@pytest.fixture
def special_files(tmp_path: Path) -> Iterator[Path]:
    os.mkfifo(tmp_path / 'fifo')
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / 'sock'))
    if os.geteuid() == 0:  # a /dev/zero-like node inside the root (a link to /dev/zero would lead outside)
        os.mknod(tmp_path / 'zero', stat.S_IFCHR | 0o666, os.makedev(1, 5))
    try:
        yield tmp_path
    finally:
        sock.close()


async def test_special_files_under_the_document(special_files: Path) -> None:
    names = ['fifo', 'sock'] + (['zero'] if (special_files / 'zero').exists() else [])
    t = await run_tools(
        contracts(special_files)['document'],
        [('file_info', {'path': n}) for n in names] + [('read_file', {'path': n}) for n in names],
    )
    kinds = {
        'fifo': ('fifo', 'a FIFO (named pipe)'),
        'sock': ('socket', 'a socket'),
        'zero': ('character device', 'a character device'),
    }
    assert t.results == [f'path: {n}\ntype: {kinds[n][0]}\nsize: 0 bytes' for n in names] + [
        RETRY + f"'{n}' is {kinds[n][1]}, not a regular file; the file tools only read and edit regular files."
        for n in names
    ]


async def test_special_files_keep_062s_refusal_on_a_workspace(special_files: Path) -> None:
    names = ['fifo', 'sock'] + (['zero'] if (special_files / 'zero').exists() else [])
    t = await run_tools(
        contracts(special_files)['workspace'],
        [('file_info', {'path': n}) for n in names] + [('read_file', {'path': n}) for n in names],
    )
    refusal = RETRY + 'The path is not a regular file (a FIFO, socket, or device); use a regular file.'
    assert t.results == [refusal] * (2 * len(names))


# ---- Unicode look-alike names ----------------------------------------------------------

LOOKALIKE = (
    'A name that differs only in Unicode normalization exists: "cafe\\u0301.txt" (decomposed, NFD); use that spelling.'
)


@pytest.mark.parametrize('contract', ['document', 'workspace'])
async def test_an_nfd_name_asked_for_in_nfc(tmp_path: Path, contract: str) -> None:
    (tmp_path / NFD).write_text('nfd\n')
    t = await run_tools(
        contracts(tmp_path)[contract],
        [
            ('read_file', {'path': NFC}),
            ('file_info', {'path': NFC}),
            ('write_file', {'path': NFC, 'content': 'twin\n'}),
            ('edit_file', {'path': NFC, 'old_text': 'nfd', 'new_text': 'x'}),
            ('read_file', {'path': NFD}),
        ],
    )
    missing = {'document': RETRY + f'File not found: {NFC}. ', 'workspace': f'Path not found: {NFC}. '}[contract]
    info = {'document': RETRY + f'Path not found: {NFC}. ', 'workspace': f'Path not found: {NFC}. '}[contract]
    assert t.results[:4] == [
        missing + LOOKALIKE,
        info + LOOKALIKE,
        RETRY + f"'{NFC}' was not written: it would create a second file whose name differs from an existing "
        'one only in Unicode normalization. ' + LOOKALIKE,
        RETRY + f'File not found: {NFC}. ' + LOOKALIKE,
    ]
    assert t.results[4].endswith('     1\tnfd\n')
    assert os.listdir(tmp_path) == [NFD]  # no look-alike twin
    assert (tmp_path / NFD).read_text() == 'nfd\n'


# ---- max_line_chars --------------------------------------------------------------------


@pytest.fixture
def one_line_megabyte(tmp_path: Path) -> Path:
    """A 1,000,001-byte file: one line of a million chars with `NEEDLE` at char 500,000."""
    (tmp_path / 'big.txt').write_text('a' * 500_000 + 'NEEDLE' + 'b' * 499_994 + '\n')
    return tmp_path


@pytest.mark.parametrize('contract', ['document', 'workspace'])
async def test_max_line_chars_clips_reads_and_searches(one_line_megabyte: Path, contract: str) -> None:
    t = await run_tools(
        contracts(one_line_megabyte, max_line_chars=40)[contract],
        [
            ('read_file', {'path': 'big.txt'}),
            ('read_file', {'path': 'big.txt', 'column': 999_980}),
            ('search_files', {'pattern': 'NEEDLE'}),
            ('grep', {'pattern': 'needle', 'ignore_case': True}),
        ],
    )
    header = '[big.txt | 1 lines | hash:d5601c2b0af6]\n'
    window = (
        'big.txt:1:…aaaaaaaaaaaaaaaaaNEEDLEbbbbbbbbbbbbbbbbb… [line 1 clipped: chars 499,984-500,023 of 1,000,000 '
        "shown; to read on: read_file('big.txt', offset=0, limit=1, column=500023)]"
    )
    assert t.results == [
        header + '     1\t' + 'a' * 40 + ' [line 1 clipped: chars 1-40 of 1,000,000 shown; to read on: '
        "read_file('big.txt', offset=0, limit=1, column=40)]\n",
        header + '     1\t' + 'b' * 20 + ' [line 1 clipped: chars 999,981-1,000,000 of 1,000,000 shown; to read '
        "the start: read_file('big.txt', offset=0, limit=1, column=0)]\n",
        window,
        window,
    ]
    [read_def] = [d for d in t.tools if d.name == 'read_file']
    assert 'column' in read_def.parameters_json_schema['properties']


async def test_without_max_line_chars_nothing_changes(one_line_megabyte: Path) -> None:
    t = await run_tools(contracts(one_line_megabyte)['document'], [('search_files', {'pattern': 'NEEDLE'})])
    assert t.results == ['big.txt:1:' + 'a' * 500_000 + 'NEEDLE' + 'b' * 499_994]
    [read_def] = [d for d in t.tools if d.name == 'read_file']
    assert list(read_def.parameters_json_schema['properties']) == ['path', 'offset', 'limit']


# ---- report_skipped --------------------------------------------------------------------

SKIP_TREE: dict[str, str | bytes] = {
    '.git/HEAD': 'ref\n',
    '.gitignore': 'build/\n*.log\n',
    '.env': 'TODO secret\n',
    'build/out.txt': 'TODO built\n',
    'app.log': 'TODO log\n',
    'src/main.py': 'TODO main\n',
    'src/.cache.py': 'TODO cached\n',
    'data.bin': b'TODO\x00bin\n',
}


def skipped(hidden: int, ignored: int = 0, binary: int = 0) -> str:
    parts = (
        [
            f'{hidden} hidden entr{"y" if hidden == 1 else "ies"} (name a hidden path explicitly to include '
            f'{"it" if hidden == 1 else "them"})'
        ]
        if hidden
        else []
    )
    if ignored:
        parts.append(f'{ignored} entries ignored by .gitignore/.ignore (a glob naming them includes them)')
    if binary:
        parts.append(f'{binary} binary file')
    return f'[skipped: {", ".join(parts)}]'


@pytest.mark.parametrize('contract', ['document', 'workspace'])
async def test_report_skipped_counts_what_each_walker_left_out(tmp_path: Path, contract: str) -> None:
    write_tree(tmp_path, SKIP_TREE)
    calls: list[Any] = [
        ('list_directory', {}),
        ('find_files', {'pattern': '**/*'}),
        ('search_files', {'pattern': 'TODO'}),
        ('list_files', {}),
        ('grep', {'pattern': 'TODO'}),
        ('grep', {'pattern': 'TODO', 'path': 'src'}),
        ('search_files', {'pattern': 'NOPE'}),
    ]
    t = await run_tools(contracts(tmp_path, report_skipped=True)[contract], calls)
    assert t.results == [
        f'app.log  (9 bytes)\nbuild/\ndata.bin  (9 bytes)\nsrc/\n{skipped(3)}',
        f'app.log\nbuild/\nbuild/out.txt\ndata.bin\nsrc/\nsrc/main.py\n{skipped(4)}',
        {
            # The document's search_files follows no ignore rules; on a workspace, 0.62.0's `rg` does.
            'document': f'app.log:1:TODO log\nbuild/out.txt:1:TODO built\nsrc/main.py:1:TODO main\n{skipped(4, binary=1)}',
            'workspace': f'src/main.py:1:TODO main\n{skipped(4, ignored=2, binary=1)}',
        }[contract],
        f'data.bin\nsrc/main.py\n{skipped(4, ignored=2)}',
        f'src/main.py:1:TODO main\n{skipped(4, ignored=2, binary=1)}',
        f'src/main.py:1:TODO main\n{skipped(1)}',
        f'No matches found.\n{skipped(4, binary=1) if contract == "document" else skipped(4, ignored=2, binary=1)}',
    ]
    # Off (the default): the documented results, 0.62.0's own trailer on a workspace.
    t = await run_tools(contracts(tmp_path)[contract], calls[:2])
    trailer = {'document': '', 'workspace': '\n' + HIDDEN_062.format(3)}[contract]
    assert t.results[0] == f'app.log  (9 bytes)\nbuild/\ndata.bin  (9 bytes)\nsrc/{trailer}'
    assert '[skipped' not in t.results[1]


async def test_a_column_past_the_line_says_so(tmp_path: Path) -> None:
    # A column at or past a line's end shows nothing of it and says how long it is (it used to
    # claim `chars 4-3 of 3 shown`); a column beyond any integer the core takes is no crash.
    (tmp_path / 'f.txt').write_text('abc\n')
    t = await run_tools(
        [FileSystem(root_dir=tmp_path, max_line_chars=10)],
        [('read_file', {'path': 'f.txt', 'column': 5}), ('read_file', {'path': 'f.txt', 'column': 10**20})],
    )
    line = " [line 1 has 3 chars, none from column 3; to read the start: read_file('f.txt', offset=0, limit=1, column=0)]"
    assert [r.split('\n', 1)[1] for r in t.results] == [f'     1\t{line}\n'] * 2
