"""Scripted FileSystem scenarios of both contracts, run the same way against a reference and against ours.

Usage: `python fs_scenarios.py MODULE [--contract document|workspace] [--direct [--backend asyncio|trio]] [NAME ...]`

`MODULE` is `pydantic_ai_harness` (the reference: 0.36.0 for the `document` contract, 0.62.0 for
the `workspace` one, each in its own venv) or `pydantic_ai_harness_rs` (ours). The contract picks
the scenario table and how the FileSystem gets its tree: `document` gives it `root_dir=<ROOT>`;
`workspace` leaves `root_dir` out and attaches `<ROOT>` as the run's workspace
(`LocalWorkspace(root)` beside it, `workspace=` on the run, or an agent spec; see `Scenario.attach`).
The script builds each scenario's tree in a fresh temp dir, drives a real `Agent` with a
scripted `FunctionModel` through the scenario's tool calls, and prints one JSON object on
stdout: `{scenario: outcome}`. An outcome holds, per call, the text the model got back
(a `ModelRetry` comes back as a retried tool return, recorded with `outcome: retry`), the
filesystem events emitted during the run, the tool definitions the model saw (for the
schema scenarios), the deprecation warnings given (workspace contract), and a snapshot of the
tree afterwards. With `--direct`, the calls go to the toolset's methods instead (with
`workspace=LocalWorkspaceBackend(root)` under the workspace contract). Temp paths are replaced
by `<TMP>` (the scenario dir) and `<ROOT>` (the FileSystem root) so two runs compare equal.

This file only uses the public API both packages share, so the same script runs in the
references' venvs and in ours. It has no dependency on pytest.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import importlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# --------------------------------------------------------------------------------------
# Scenario description
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Link:
    """A symlink in a tree spec; `target` may use `<TMP>`/`<ROOT>` for absolute targets."""

    target: str


@dataclass(frozen=True)
class Fifo:
    """A named pipe in a tree spec."""


@dataclass(frozen=True)
class Hash:
    """A tool argument replaced, at call time, by the content hash of a file under the root."""

    path: str


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Scenario:
    name: str
    calls: list[Call]
    tree: dict[str, Any] = field(default_factory=dict)
    """Paths relative to the root: `str`/`bytes` is a file, `None` a directory, `Link` a symlink."""
    outside: dict[str, Any] = field(default_factory=dict)
    """Same, relative to `<TMP>/outside`, a sibling of the root the sandbox must not reach."""
    config: dict[str, Any] = field(default_factory=dict)
    """FileSystem keyword arguments; `cwd` is relative to the root."""
    cancel: str | bool | None = None
    """Cancel every FileChangeRequestEvent: `True` without a reason, a string with that reason,
    `'raise'` to have the listener raise instead."""
    schemas: bool = False
    """Record the tool definitions the model is offered."""
    meddle: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Root-relative path -> what a FileChangeRequestEvent listener does to it, the first time that
    path is announced, while the change is held: `('write', text)`, `('delete',)`, `('mkdir',)`,
    `('symlink', target)`."""
    custom_streams: bool = False
    """Use a FileSystem whose toolset overrides `open_read`/`open_write` with in-memory streams
    (no `fileno`), and record each call to them."""
    root_via_link: bool = False
    """Pass the root as `<TMP>/rootlink`, a symlink to it."""
    attach: str = 'capability'
    """How the agent gets the FileSystem and its tree. `capability`: in `capabilities=` (under the
    workspace contract beside `LocalWorkspace(root)`); `spec`: from an agent spec
    (`Agent.from_spec(..., custom_capability_types=[FileSystem])`, with `root_dir` under the document
    contract, a `- LocalWorkspace: <root>` entry under the workspace one). Workspace contract only:
    `run` (`workspace=LocalWorkspaceBackend(root)` on the run) and `unavailable`
    (`workspace=UnavailableWorkspace(...)` on the run)."""
    root_absent: bool = False
    """Leave the root directory uncreated (`tree` must be empty): `FileSystem(root_dir='new_dir')`."""


BASE_TREE: dict[str, Any] = {
    'a.txt': 'alpha\nbeta\ngamma\n',
    'ten.txt': ''.join(f'line {i}\n' for i in range(1, 11)),
    'empty.txt': '',
    'bin.dat': b'\x00\x01\x02binary\xff\n',
    'key.pem': '-----BEGIN KEY-----\n',
    '.env': 'SECRET=1\n',
    '.hidden/h.txt': 'hidden alpha\n',
    'src/main.py': "import os\n\n\ndef main():\n    print('hello alpha')\n",
    'src/util.py': 'def helper():\n    return 42\n',
    'src/data/config.json': '{"name": "demo"}\n',
    'docs/readme.md': '# Demo\nSee src/main.py for alpha.\n',
    'emptydir': None,
}

OUTSIDE_TREE: dict[str, Any] = {'secret.txt': 'outside secret\n', 'd/inner.txt': 'outside inner\n'}

WORKSPACE_TREE: dict[str, Any] = {
    'a.txt': 'alpha\nbeta\ngamma\n',
    'ten.txt': ''.join(f'line {i}\n' for i in range(1, 11)),
    'empty.txt': '',
    'key.pem': '-----BEGIN KEY-----\n',
    'src/main.py': "import os\n\n\ndef main():\n    print('hello alpha')\n",
    'src/util.py': 'def helper():\n    return 42\n',
    'src/data/config.json': '{"name": "demo"}\n',
    'docs/readme.md': '# Demo\nSee src/main.py for alpha.\n',
    'emptydir': None,
}
"""The workspace contract's default tree. No hidden entries: listings and searches here compare without the hidden-entries trailer."""

WORKSPACE_OUTSIDE: dict[str, Any] = {
    'secret.txt': 'outside secret\n',
    'd/inner.txt': 'outside inner\n',
    'rootlink': Link('<ROOT>'),
}

DOCUMENT = 'document'
"""`FileSystem(root_dir=...)`: the document of pydantic-ai-harness 0.36.0."""
WORKSPACE = 'workspace'
"""`FileSystem()` on the run's workspace: pydantic-ai-harness 0.62.0."""

SCENARIOS: dict[str, dict[str, Scenario]] = {DOCUMENT: {}, WORKSPACE: {}}
"""Per contract, the scenarios by name."""


def scenario(
    name: str, calls: list[Call], *, contract: str = DOCUMENT, tree: dict[str, Any] | None = None, **kwargs: Any
) -> None:
    table = SCENARIOS[contract]
    assert name not in table, name
    default_tree = BASE_TREE if contract == DOCUMENT else WORKSPACE_TREE
    table[name] = Scenario(name=name, calls=calls, tree=default_tree if tree is None else tree, **kwargs)


def workspace_scenario(name: str, calls: list[Call], **kwargs: Any) -> None:
    scenario(name, calls, contract=WORKSPACE, **kwargs)


def C(tool: str, **args: Any) -> Call:  # noqa: N802 - reads as a table
    return Call(tool, args)


ALL_TOOLS = [
    'read_file', 'write_file', 'edit_file', 'list_directory', 'search_files', 'find_files',
    'create_directory', 'file_info', 'list_files', 'grep',
]  # fmt: skip
"""The eight default tools and the two opt-in ripgrep ones, in the order the tool list documents."""


# ======================================================================================
# The document contract (0.36.0): `FileSystem(root_dir=<ROOT>)`
# ======================================================================================

# ---- tool schemas -------------------------------------------------------------------
scenario('schemas_default', [], schemas=True)
scenario('schemas_unhashed', [], schemas=True, config={'content_hashes': False})
scenario('schemas_read_only', [], schemas=True, config={'read_only': True})
scenario('schemas_read_only_unhashed', [], schemas=True, config={'read_only': True, 'content_hashes': False})
scenario(
    'schemas_subset',
    [],
    schemas=True,
    config={'tools': ['edit_file', 'read_file']},
)

# ---- read_file ----------------------------------------------------------------------
scenario(
    'read_basic',
    [
        C('read_file', path='a.txt'),
        C('read_file', path='src/main.py'),
        C('read_file', path='./src/../a.txt'),
        C('read_file', path='ten.txt', offset=3, limit=4),
        C('read_file', path='ten.txt', offset=9),
        C('read_file', path='ten.txt', limit=1),
        C('read_file', path='ten.txt', offset=0, limit=10),
        C('read_file', path='ten.txt', offset=2, limit=100),
        C('read_file', path='.env'),
        C('read_file', path='key.pem'),
        C('read_file', path='.hidden/h.txt'),
    ],
)
scenario(
    'read_max_read_lines',
    [
        C('read_file', path='ten.txt'),
        C('read_file', path='ten.txt', offset=4),
        C('read_file', path='ten.txt', offset=8),
        C('read_file', path='ten.txt', limit=2),
    ],
    config={'max_read_lines': 4},
)
# Ours follows the spec: max_read_lines also caps an explicit limit (see test_fs_compat.py).
scenario(
    'read_limit_above_max_read_lines',
    [
        C('read_file', path='ten.txt', limit=3),
        C('read_file', path='ten.txt', limit=8),
        C('read_file', path='ten.txt', offset=5, limit=3),
        C('read_file', path='ten.txt', offset=5, limit=9),
    ],
    config={'max_read_lines': 3},
)
_LONG_DIR = 'd' * 60 + '/' + 'e' * 60
scenario(
    'read_max_read_chars',
    [
        C('read_file', path='lines.txt'),
        C('read_file', path='lines.txt', offset=5),
        C('read_file', path='lines.txt', offset=11),
        C('read_file', path='oversized.txt'),
        C('read_file', path='oversized.txt', offset=1),
        C('read_file', path='oversized.txt', offset=2),
        C('read_file', path=_LONG_DIR + '/long_name.txt'),
        C('read_file', path='lines.txt', limit=2),
        C('read_file', path='bin.dat'),
        C('read_file', path='empty.txt'),
    ],
    tree={
        'lines.txt': ''.join(f'this is line number {i:02d}\n' for i in range(1, 13)),
        'oversized.txt': 'short\n' + 'x' * 500 + '\nafter\n',
        _LONG_DIR + '/long_name.txt': 'one\ntwo\n',
        'bin.dat': b'\x00' * 50,
        'empty.txt': '',
    },
    config={'max_read_chars': 400},
)
scenario(
    'read_limits_combined',
    [
        C('read_file', path='lines.txt'),
        C('read_file', path='lines.txt', offset=5),
        C('read_file', path='lines.txt', limit=2),
        C('read_file', path='lines.txt', offset=11),
        C('read_file', path='short.txt'),
        C('read_file', path='nl_only.txt'),
        C('read_file', path='nl_only.txt', offset=3),
        C('file_info', path='nl_only.txt'),
    ],
    tree={
        'lines.txt': ''.join(f'this is line number {i:02d}\n' for i in range(1, 13)),
        'short.txt': 'a\nb\n',
        'nl_only.txt': '\n\n\n\n',
    },
    config={'max_read_lines': 5, 'max_read_chars': 300, 'content_hashes': False},
)
_HUGE_TREE: dict[str, Any] = {
    'huge.txt': 'x' * 3_000_000 + '\nafter\n',
    'huge_wide.txt': 'short\n' + '\u00e9' * 1_000_000 + '\r\nafter\n',
    'many.txt': 'ab\n' * 200_000,
}
scenario(
    'read_huge_lines_capped',
    [
        C('read_file', path='huge.txt'),
        C('read_file', path='huge.txt', offset=1),
        C('read_file', path='huge_wide.txt'),
        C('read_file', path='huge_wide.txt', offset=1),
        C('read_file', path='many.txt', offset=199_990),
        C('search_files', pattern='after'),
        C('file_info', path='huge_wide.txt'),
    ],
    tree=_HUGE_TREE,
    config={'max_read_chars': 1000},
)
scenario(
    'read_huge_lines_uncapped',
    [
        C('read_file', path='huge_wide.txt', offset=1, limit=1),
        C('read_file', path='many.txt', offset=100_000, limit=3),
        C('edit_file', path='huge_wide.txt', old_text='short', new_text='SHORT'),
    ],
    tree=_HUGE_TREE,
)
scenario(
    'read_max_read_chars_tiny',
    [C('read_file', path='lines.txt'), C('read_file', path='lines.txt', offset=3)],
    tree={'lines.txt': 'a\nb\nc\nd\ne\n'},
    config={'max_read_chars': 10},
)
scenario(
    'read_empty_and_binary',
    [
        C('read_file', path='empty.txt'),
        C('read_file', path='empty.txt', offset=5),
        C('read_file', path='bin.dat'),
        C('read_file', path='bin.dat', offset=3),
        C('read_file', path='late_nul.bin'),
        C('read_file', path='nul_after_sample.txt'),
    ],
    tree={
        'empty.txt': '',
        'bin.dat': b'\x00\x01\x02binary\xff\n',
        'late_nul.bin': b'a' * 8000 + b'\x00' + b'b' * 100,
        'nul_after_sample.txt': b'a' * 8192 + b'\x00tail\n',
    },
)
scenario(
    'read_line_endings',
    [
        C('read_file', path='crlf.txt'),
        C('read_file', path='cr.txt'),
        C('read_file', path='u2028.txt'),
        C('read_file', path='exotic.txt'),
        C('read_file', path='no_final_newline.txt'),
        C('read_file', path='crlf.txt', offset=1, limit=1),
        C('file_info', path='crlf.txt'),
        C('file_info', path='cr.txt'),
        C('file_info', path='exotic.txt'),
    ],
    tree={
        'crlf.txt': b'one\r\ntwo\r\nthree\r\n',
        'cr.txt': b'one\rtwo\rthree',
        'u2028.txt': 'one\u2028two\u2029three\nfour\n',
        'exotic.txt': 'a\x0bb\x0cc\x1cd\x1de\x1ef\x85g\r\n\nh',
        'no_final_newline.txt': 'first\nlast',
    },
)


def _boundary_file() -> tuple[bytes, list[int]]:
    """About 2 MiB of text where a line break or a multi-byte character straddles each power-of-two offset.

    A streaming reader cuts its input into chunks; whatever their size (4 KiB to 2 MiB), one of
    these sequences sits across a cut: `\\r|\\n`, `\\r|x`, `é` split, U+2028 split, an incomplete
    sequence before ASCII. Returns the bytes and, per boundary, the 0-based line index just
    before the straddling line, for reads around it.
    """
    specials = [b'\r\n', b'\rx', '\u00e9'.encode(), '\u2028'.encode(), b'\xe2\x82A', b'\r\r\n']
    data = bytearray()
    starts: list[int] = []
    n = 0
    for k in range(12, 22):
        boundary = 1 << k
        while len(data) < boundary - 64:
            data += f'filler {n:07d}\n'.encode()
            n += 1
        text_before = bytes(data).decode('utf-8', errors='replace')
        starts.append(len(text_before.splitlines()))
        special = specials[k % len(specials)]
        data += b'x' * (boundary - 1 - len(data))
        data += special + f' tok{k}\n'.encode()
    data += b'tail line without newline'
    return bytes(data), starts


_BOUNDARY_BYTES, _BOUNDARY_LINES = _boundary_file()
scenario(
    'read_chunk_boundaries',
    [
        C('read_file', path='big.txt', limit=3),
        *[C('read_file', path='big.txt', offset=max(line - 1, 0), limit=5) for line in _BOUNDARY_LINES],
        C('read_file', path='big.txt', offset=len(_BOUNDARY_BYTES) // 13),
        C('file_info', path='big.txt'),
        C('search_files', pattern=r'tok\d+'),
        C('edit_file', path='big.txt', old_text='tok20', new_text='TOK20'),
        C('read_file', path='nul_in_sample.bin'),
        C('file_info', path='nul_in_sample.bin'),
        C('read_file', path='cr_end.txt'),
    ],
    tree={
        'big.txt': _BOUNDARY_BYTES,
        'nul_in_sample.bin': b'a' * 8191 + b'\x00tail\n',
        'cr_end.txt': b'one\r\r\ntwo\r',
    },
)
scenario(
    'read_max_read_chars_wide_chars',
    [
        C('read_file', path='wide.txt'),
        C('read_file', path='wide.txt', offset=3),
        C('read_file', path='crlf.txt'),
        C('read_file', path='crlf.txt', offset=4),
    ],
    tree={
        'wide.txt': ''.join(f'{i:02d} ' + '漢字🙂é' * 6 + '\n' for i in range(12)),
        'crlf.txt': ''.join(f'line {i:02d} with crlf\r\n' for i in range(12)).encode(),
    },
    config={'max_read_chars': 330},
)
scenario(
    'read_invalid_utf8',
    [
        C('read_file', path='bad.txt'),
        C('file_info', path='bad.txt'),
        C('search_files', pattern='bad'),
        C('edit_file', path='bad.txt', old_text='ok', new_text='OK'),
        C('write_file', path='bad.txt', content='fixed\n', expected_hash=Hash('bad.txt')),
        C('read_file', path='bad.txt'),
    ],
    tree={'bad.txt': b'ok\n\xff\xfe bad\nend \xe2\x82\n'},
)
scenario(
    'read_errors',
    [
        C('read_file', path='src'),
        C('read_file', path='.'),
        C('read_file', path='nope.txt'),
        C('read_file', path='src/nope/x.txt'),
        C('read_file', path='ten.txt', offset=10),
        C('read_file', path='ten.txt', offset=100, limit=5),
        C('read_file', path='a.txt/x'),
        C('read_file', path='n' * 300),
        C('read_file', path='loop1'),
        C('read_file', path='dangling'),
    ],
    tree={**BASE_TREE, 'loop1': Link('loop2'), 'loop2': Link('loop1'), 'dangling': Link('nowhere.txt')},
)
# Ours follows the spec: a negative offset or limit is a retry (see test_fs_compat.py).
scenario(
    'read_negative_offset_limit',
    [
        C('read_file', path='ten.txt', offset=-2),
        C('read_file', path='ten.txt', limit=-1),
        C('read_file', path='ten.txt', limit=0),
        C('read_file', path='ten.txt', offset=-1, limit=0),
    ],
)

# ---- write_file ---------------------------------------------------------------------
scenario(
    'write_basic',
    [
        C('write_file', path='new.txt', content='hello\nworld\n'),
        C('read_file', path='new.txt'),
        C('write_file', path='a.txt', content='alpha\nBETA\ngamma\n'),
        C('write_file', path='a.txt', content='no newline'),
        C('write_file', path='src/empty_now.py', content=''),
        C('write_file', path='crlf.txt', content='x\r\ny\r\n'),
        C('read_file', path='crlf.txt'),
        C('write_file', path='unicode.txt', content='héllo wörld ✓\n'),
        C('write_file', path='src/../docs/new.md', content='# new\n'),
    ],
)
scenario(
    'write_expected_hash',
    [
        C('write_file', path='a.txt', content='v2\n', expected_hash=Hash('a.txt')),
        C('write_file', path='a.txt', content='v3\n', expected_hash='deadbeef0000'),
        C('write_file', path='fresh.txt', content='created\n', expected_hash='deadbeef0000'),
        C('write_file', path='empty.txt', content='now full\n', expected_hash=Hash('empty.txt')),
    ],
)
scenario(
    'write_errors',
    [
        C('write_file', path='nodir/x.txt', content='x'),
        C('write_file', path='a/b/c.txt', content='x'),
        C('write_file', path='a.txt/x.txt', content='x'),
        C('write_file', path='src', content='x'),
        C('write_file', path='.', content='x'),
        C('write_file', path='../escape.txt', content='x'),
        C('write_file', path='<TMP>/outside/new.txt', content='x'),
        C('write_file', path='n' * 300, content='x'),
    ],
)
scenario(
    'write_protected_defaults',
    [
        C('write_file', path='.env', content='X=2\n'),
        C('write_file', path='.env.local', content='X=2\n'),
        C('write_file', path='key.pem', content='x'),
        C('write_file', path='src/id.key', content='x'),
        C('write_file', path='.git/config', content='x'),
        C('write_file', path='secrets.yaml', content='x'),
        C('write_file', path='src/secrets/api.txt', content='x'),
        C('edit_file', path='key.pem', old_text='KEY', new_text='LOCK'),
        C('create_directory', path='.git/hooks'),
        C('read_file', path='.git/config'),
    ],
    tree={**BASE_TREE, '.git/config': '[core]\n', 'src/secrets': None},
)
scenario(
    'write_protected_disabled',
    [C('write_file', path='.env', content='X=2\n'), C('write_file', path='key.pem', content='y\n')],
    config={'protected_patterns': []},
)
scenario(
    'write_unhashed',
    [
        C('write_file', path='a.txt', content='v2\n'),
        C('write_file', path='a.txt', content='v3\n', expected_hash='deadbeef0000'),
        C('edit_file', path='a.txt', old_text='v2', new_text='v4'),
        C('edit_file', path='a.txt', old_text='v2', new_text='v5', expected_hash='deadbeef0000'),
        C('read_file', path='a.txt'),
    ],
    config={'content_hashes': False},
)
scenario(
    'write_through_symlink',
    [
        C('write_file', path='link.txt', content='via link\n'),
        C('write_file', path='linkdir/new.txt', content='via dir link\n'),
        C('write_file', path='outlink.txt', content='escape\n'),
        C('write_file', path='dangling', content='dangles\n'),
    ],
    tree={
        **BASE_TREE,
        'link.txt': Link('a.txt'),
        'linkdir': Link('src'),
        'outlink.txt': Link('<TMP>/outside/secret.txt'),
        'dangling': Link('made_by_write.txt'),
    },
    outside=OUTSIDE_TREE,
)

# ---- edit_file ----------------------------------------------------------------------
scenario(
    'edit_basic',
    [
        C('edit_file', path='a.txt', old_text='beta', new_text='BETA'),
        C('read_file', path='a.txt'),
        C(
            'edit_file',
            path='src/main.py',
            replacements=[
                {'old_text': 'import os', 'new_text': 'import sys'},
                {'old_text': 'import sys\n', 'new_text': 'import sys\nimport re\n'},
            ],
        ),
        C('edit_file', path='a.txt', old_text='gamma\n', new_text='gamma'),
        C('edit_file', path='crlf.txt', old_text='two\r\n', new_text='2\r\n'),
        C('read_file', path='crlf.txt'),
        C('edit_file', path='a.txt', old_text='alpha', new_text='alpha', expected_hash=Hash('a.txt')),
        C('edit_file', path='a.txt', old_text='alpha', new_text=''),
    ],
    tree={**BASE_TREE, 'crlf.txt': b'one\r\ntwo\r\nthree\r\n'},
)
scenario(
    'edit_errors',
    [
        C('edit_file', path='a.txt', old_text='delta', new_text='x'),
        C('edit_file', path='dup.txt', old_text='same', new_text='x'),
        C('edit_file', path='a.txt', old_text='', new_text='x'),
        C('edit_file', path='a.txt', old_text='alpha', new_text='x', replacements=[{'old_text': 'a', 'new_text': 'b'}]),
        C('edit_file', path='a.txt'),
        C('edit_file', path='a.txt', old_text='alpha'),
        C('edit_file', path='a.txt', new_text='alpha'),
        C('edit_file', path='a.txt', replacements=[]),
        C(
            'edit_file',
            path='a.txt',
            replacements=[{'old_text': 'alpha', 'new_text': 'ALPHA'}, {'old_text': 'missing', 'new_text': 'x'}],
        ),
        C(
            'edit_file',
            path='a.txt',
            replacements=[{'old_text': 'alpha', 'new_text': 'x'}, {'old_text': 'x', 'new_text': 'y'}],
        ),
        C(
            'edit_file',
            path='a.txt',
            replacements=[{'old_text': 'alpha', 'new_text': 'beta'}, {'old_text': 'beta', 'new_text': 'y'}],
        ),
        C('edit_file', path='a.txt', replacements=[{'old_text': '', 'new_text': 'x'}]),
        C('edit_file', path='bin.dat', old_text='binary', new_text='x'),
        C('edit_file', path='a.txt', old_text='alpha', new_text='x', expected_hash='deadbeef0000'),
        C('edit_file', path='nope.txt', old_text='a', new_text='b'),
        C('edit_file', path='src', old_text='a', new_text='b'),
        C('edit_file', path='../outside/secret.txt', old_text='a', new_text='b'),
        C('read_file', path='a.txt'),
    ],
    tree={**BASE_TREE, 'dup.txt': 'same\nsame\n'},
)
scenario(
    'edit_matching',
    [
        C('edit_file', path='aaa.txt', old_text='aa', new_text='X'),
        C('edit_file', path='ababa.txt', old_text='aba', new_text='Y'),
        C('edit_file', path='aaaa.txt', old_text='aa', new_text='Z'),
        C('edit_file', path='crlf.txt', old_text='one\ntwo', new_text='x'),
        C('edit_file', path='crlf.txt', old_text='one\r\ntwo', new_text='1\r\n2'),
        C('edit_file', path='uni.txt', old_text='e\u0301', new_text='\u00e9'),
        C('edit_file', path='uni.txt', old_text='🙂', new_text='😀😀'),
        C('edit_file', path='empty.txt', old_text='x', new_text='y'),
        C('edit_file', path='bom.txt', old_text='\ufeffhead', new_text='head'),
        C('read_file', path='bom.txt'),
        C('read_file', path='uni.txt'),
        C('create_directory', path='dangling_dir'),
        C('create_directory', path='x/../y'),
        C('create_directory', path='made/./deeper//z'),
    ],
    tree={
        'aaa.txt': 'aaa\n',
        'ababa.txt': 'ababa\n',
        'aaaa.txt': 'aaaa\n',
        'crlf.txt': b'one\r\ntwo\r\n',
        'uni.txt': 'cafe\u0301 🙂\n',
        'empty.txt': '',
        'bom.txt': '\ufeffhead\nbody\n',
        'dangling_dir': Link('not_yet'),
    },
)
_BIG_SOURCE = ''.join(f'row {i:05d} ' + 'x' * 40 + '\n' for i in range(800))  # > 32768 chars
_MID_SOURCE = ''.join(f'row {i:03d}\n' for i in range(200))  # 200 lines, < 32768 chars
scenario(
    'edit_diff_limits',
    [
        C('edit_file', path='big.txt', old_text='row 00400 ', new_text='ROW 00400 '),
        C('edit_file', path='mid.txt', old_text='row 100\n', new_text='row 100 changed\n'),
        C('write_file', path='mid.txt', content=''.join(f'new {i:03d}\n' for i in range(400))),
        C('write_file', path='wide.txt', content=''.join(f'{i:04d} ' + 'w' * 60 + '\n' for i in range(300))),
        C('write_file', path='nonl.txt', content='same\nlast'),
        C('write_file', path='nonl.txt', content='same\nlast\n'),
        C('write_file', path='a.txt', content='alpha\nbeta\ngamma\n'),
        C('write_file', path='weird\nname.txt', content='x\n'),
    ],
    tree={'big.txt': _BIG_SOURCE, 'mid.txt': _MID_SOURCE, 'nonl.txt': 'same\nlast\n', 'a.txt': 'alpha\nbeta\ngamma\n'},
)

# ---- list_directory -----------------------------------------------------------------
scenario(
    'list_basic',
    [
        C('list_directory'),
        C('list_directory', path='.'),
        C('list_directory', path='src'),
        C('list_directory', path='src/data'),
        C('list_directory', path='emptydir'),
        C('list_directory', path='a.txt'),
        C('list_directory', path='nope'),
        C('list_directory', path='.hidden'),
        C('list_directory', path='..'),
    ],
)
_FOUR = {'f1.txt': '1', 'f2.txt': '22', 'f3.txt': '333', 'sub': None}
scenario(
    'list_cap_exact', [C('list_directory'), C('find_files', pattern='*')], tree=_FOUR, config={'max_list_results': 4}
)
scenario(
    'list_cap_over',
    [C('list_directory'), C('list_directory', path='sub')],
    tree={**_FOUR, 'f4.txt': '4444'},
    config={'max_list_results': 4},
)
_FILTERED_TREE: dict[str, Any] = {
    '.a.txt': 'hit\n',
    'b.log': 'hit\n',
    'c.txt': 'hit\n',
    '.d/e.txt': 'hit\n',
    'f.log': 'hit\n',
    'g.txt': 'hit\n',
    'h.txt': 'hit\n',
    'dangling': Link('nowhere'),
    'out': Link('<TMP>/outside/secret.txt'),
}
scenario(
    'caps_skip_filtered_entries',
    [
        C('list_directory'),
        C('find_files', pattern='*'),
        C('search_files', pattern='hit'),
        C('list_directory', path='.d'),
    ],
    tree=_FILTERED_TREE,
    outside=OUTSIDE_TREE,
    config={'denied_patterns': ['*.log'], 'max_list_results': 2, 'max_find_results': 2, 'max_search_results': 2},
)
scenario(
    'allowed_patterns_with_cwd',
    [
        C('list_directory'),
        C('list_directory', path='..'),
        C('read_file', path='main.py'),
        C('read_file', path='../docs/readme.md'),
        C('find_files', pattern='**/*', path='..'),
        C('search_files', pattern='alpha', path='..'),
        C('write_file', path='new.py', content='x\n'),
        C('write_file', path='new.txt', content='x\n'),
        C('create_directory', path='pkg'),
        C('file_info', path='.'),
    ],
    config={'cwd': 'src', 'allowed_patterns': ['src/*.py', 'docs/*']},
)
scenario(
    'list_allowed_patterns',
    [
        C('list_directory'),
        C('list_directory', path='src'),
        C('read_file', path='a.txt'),
        C('read_file', path='src/main.py'),
        C('find_files', pattern='**/*'),
        C('search_files', pattern='alpha'),
        C('file_info', path='src'),
    ],
    config={'allowed_patterns': ['*.py', 'docs/*']},
)
scenario(
    'list_symlinks',
    [
        C('list_directory'),
        C('find_files', pattern='**/*'),
        C('search_files', pattern='alpha|secret|inner'),
        C('file_info', path='link.txt'),
        C('file_info', path='linkdir'),
        C('file_info', path='abslink.txt'),
        C('file_info', path='relup.txt'),
        C('file_info', path='outlink.txt'),
        C('file_info', path='outdir/inner.txt'),
        C('read_file', path='outlink.txt'),
        C('read_file', path='linkdir/main.py'),
        C('list_directory', path='outdir'),
        C('file_info', path='dangling'),
    ],
    tree={
        'a.txt': 'alpha\n',
        'src/main.py': 'alpha = 1\n',
        'link.txt': Link('a.txt'),
        'linkdir': Link('src'),
        'abslink.txt': Link('<ROOT>/a.txt'),
        'relup.txt': Link('../root/a.txt'),
        'outlink.txt': Link('<TMP>/outside/secret.txt'),
        'outdir': Link('<TMP>/outside/d'),
        'dangling': Link('nowhere'),
    },
    outside=OUTSIDE_TREE,
)

# ---- search_files -------------------------------------------------------------------
scenario(
    'search_basic',
    [
        C('search_files', pattern='alpha'),
        C('search_files', pattern=r'def \w+\('),
        C('search_files', pattern='def', include_glob='*.py'),
        C('search_files', pattern='.', include_glob='src/data/*'),
        C('search_files', pattern='alpha', path='src'),
        C('search_files', pattern='alpha', path='src/main.py'),
        C('search_files', pattern='(?i)ALPHA'),
        C('search_files', pattern='^$'),
        C('search_files', pattern='zzz-no-such-text'),
        C('search_files', pattern='binary'),
        C('search_files', pattern='SECRET'),
        C('search_files', pattern=r'(\w)\1'),
        C('search_files', pattern=r'alpha(?=\.)'),
        C('search_files', pattern=r'\bhelp'),
        C('search_files', pattern='alpha', include_glob='**/*.py'),
        C('search_files', pattern='alpha', include_glob='src/*.py'),
        C('search_files', pattern='alpha', include_glob='*.md', path='docs'),
        C('search_files', pattern='alpha', include_glob='readme.md'),
        C('search_files', pattern='^\\s+print'),
        C('search_files', pattern='\\d{2}'),
    ],
)
scenario(
    'search_errors',
    [
        C('search_files', pattern='('),
        C('search_files', pattern='[a-'),
        C('search_files', pattern='a{2,1}'),
        C('search_files', pattern='alpha', path='..'),
        C('search_files', pattern='alpha', path='.hidden'),
    ],
)
# search_files takes Python `re` syntax; these are where other engines read a pattern differently.
scenario(
    'search_regex_dialect',
    [
        C('search_files', pattern='a{,3}b'),
        C('search_files', pattern='(?P<word>alpha) (?P=word)'),
        C('search_files', pattern='(?<word>alpha)'),
        C('search_files', pattern=r'end\Z'),
        C('search_files', pattern=r'end\z'),
        C('search_files', pattern='[[:alpha:]]+9'),
        C('search_files', pattern='[a-z&&[^x]]'),
        C('search_files', pattern='(?<=al)pha'),
        C('search_files', pattern='(?>al|alp)ha'),
        C('search_files', pattern='a++b'),
        C('search_files', pattern='(?x) al pha  # a comment'),
        C('search_files', pattern='(?i:ALPHA) beta'),
        C('search_files', pattern=r'\N{EM DASH}'),
        C('search_files', pattern=r'caf\u00e9'),
        C('search_files', pattern=r'\d\d'),
        C('search_files', pattern=''),
        C('search_files', pattern=r'\1(a)'),
        C('search_files', pattern=r'\h'),
        C('search_files', pattern='^'),
        C('search_files', pattern=r'\bbeta\b'),
        C('search_files', pattern='[^\\x00-\\x7f]'),
    ],
    tree={
        'r.txt': 'ab aab aaab aaaab\nalpha alpha\nalpha beta\nALPHA beta\nthe end\n[:alpha:]9 x9\n'
        'café — dash\ndigits ٣٤ 12\naaab\n&&x\n',
    },
)
# Where a raw-bytes prefilter could skip a file the reference (which decodes, then splits lines) matches.
scenario(
    'search_prefilter_edges',
    [
        C('search_files', pattern='\ufffd'),
        C('search_files', pattern='bad\ufffd'),
        C('search_files', pattern='gamma\r'),
        C('search_files', pattern='one\u2028two'),
        C('search_files', pattern='alpha\nbeta'),
        C('search_files', pattern='(?i)ÉCOLE'),
        C('search_files', pattern='(?i)straße'),
        C('search_files', pattern='(?i)STRASSE'),
        C('search_files', pattern='(?i)kelvin'),
        C('search_files', pattern='needle'),
        C('search_files', pattern='\x00'),
        C('search_files', pattern='tab\there'),
        C('search_files', pattern='\x0c'),
        C('search_files', pattern='x\x1cy'),
        C('search_files', pattern='caf\u0065\u0301'),
    ],
    tree={
        'invalid.txt': b'ok\nbad\xff here\n',
        'crlf.txt': b'alpha\r\nbeta\r\ngamma\r\n',
        'seps.txt': 'one\u2028two\nx\x1cy\nff\x0cline\n',
        'fold.txt': 'école\nstraße\n\u212aelvin\ntab\there\ncafe\u0301\n',
        'late_nul.txt': b'a' * 9000 + b'\x00 needle\n',
        'early_nul.bin': b'\x00 needle\n',
    },
)
_ORDER_TREE = {
    'a-b/x.txt': 'hit\n',
    'a.b/x.txt': 'hit\n',
    'a/x.txt': 'hit\n',
    'a/y.txt': 'hit\n',
    'a0.txt': 'hit\n',
    'B.txt': 'hit\n',
    '_u.txt': 'hit\n',
    'é.txt': 'hit\n',
    'z.txt': 'hit\n',
}
scenario(
    'caps_follow_path_order',
    [
        C('search_files', pattern='hit'),
        C('find_files', pattern='**/*.txt'),
        C('list_directory'),
        C('search_files', pattern='hit', path='a'),
    ],
    tree=_ORDER_TREE,
    config={'max_search_results': 3, 'max_find_results': 3, 'max_list_results': 3},
)
scenario(
    'caps_follow_path_order_uncapped',
    [C('search_files', pattern='hit'), C('find_files', pattern='**/*.txt'), C('list_directory')],
    tree=_ORDER_TREE,
)
# Ours follows the spec: a missing search root is a retry and emits nothing (see test_fs_compat.py).
scenario('search_missing_path', [C('search_files', pattern='alpha', path='nope')])
_MANY = {f'm{i}.txt': 'hit\nmiss\nhit\n' for i in range(3)}
scenario(
    'search_cap',
    [
        C('search_files', pattern='hit'),
        C('search_files', pattern='hit', include_glob='m0.txt'),
        C('search_files', pattern='hit', include_glob='m[01].txt'),
    ],
    tree=_MANY,
    config={'max_search_results': 4},
)
scenario(
    'search_line_endings',
    [C('search_files', pattern='two'), C('search_files', pattern='^three$'), C('search_files', pattern='b')],
    tree={'crlf.txt': b'one\r\ntwo\r\nthree\r\n', 'cr.txt': b'one\rtwo\rthree', 'u.txt': 'a\u2028b\n'},
)

# ---- find_files ---------------------------------------------------------------------
scenario(
    'find_basic',
    [
        C('find_files', pattern='*.py'),
        C('find_files', pattern='**/*.py'),
        C('find_files', pattern='**/*.json'),
        C('find_files', pattern='*'),
        C('find_files', pattern='**'),
        C('find_files', pattern='src/*'),
        C('find_files', pattern='*.py', path='src'),
        C('find_files', pattern='**/*.txt'),
        C('find_files', pattern='.*'),
        C('find_files', pattern='*.nothing'),
        C('find_files', pattern='s?c/**/*.json'),
        C('find_files', pattern='[ad]*'),
        C('find_files', pattern='[!ad]*'),
        C('find_files', pattern='src/**'),
        C('find_files', pattern='*/'),
        C('find_files', pattern='**/data/*'),
        C('find_files', pattern='**/'),
        C('find_files', pattern='../*', path='src'),
        C('find_files', pattern='./src/*.py'),
        C('find_files', pattern='src//main.py'),
    ],
)
scenario(
    'find_glob_edge',
    [
        C('find_files', pattern='**/*.py'),
        C('find_files', pattern='a/**/*.py'),
        C('find_files', pattern='a/**/d.py'),
        C('find_files', pattern='**/b/**'),
        C('find_files', pattern='**/**/*.py'),
        C('find_files', pattern='*/*/*'),
        C('find_files', pattern='link_a/**/*.py'),
        C('find_files', pattern='**/e.py', path='link_a'),
        C('find_files', pattern='*[!y]'),
        C('find_files', pattern='[a-b]*/b'),
        C('find_files', pattern='a/b/../b/e.py'),
        C('find_files', pattern='**/*.PY'),
        C('list_directory', path='link_a'),
        C('search_files', pattern='x', path='link_a'),
    ],
    tree={
        'a/b/c/d.py': 'x\n',
        'a/b/e.py': 'x\n',
        'a/.h/f.py': 'x\n',
        'a/b/c/.g.py': 'x\n',
        'top.py': 'x\n',
        'link_a': Link('a'),
        'loop': Link('.'),
        'b': None,
    },
)
scenario(
    'find_errors',
    [
        C('find_files', pattern='/etc/*'),
        C('find_files', pattern='<TMP>/outside/*'),
        C('find_files', pattern='*.py', path='a.txt'),
        C('find_files', pattern='*.py', path='nope'),
        C('find_files', pattern=''),
        C('find_files', pattern='.'),
        C('find_files', pattern='*', path='..'),
    ],
)
scenario(
    'find_cap',
    [C('find_files', pattern='*.txt'), C('find_files', pattern='m0.txt'), C('find_files', pattern='m[01].txt')],
    tree=_MANY,
    config={'max_find_results': 2},
)

# ---- create_directory ---------------------------------------------------------------
scenario(
    'create_directory',
    [
        C('create_directory', path='newdir'),
        C('create_directory', path='x/y/z'),
        C('create_directory', path='src'),
        C('create_directory', path='newdir'),
        C('create_directory', path='a.txt'),
        C('create_directory', path='a.txt/sub'),
        C('create_directory', path='a.txt/sub/deeper'),
        C('create_directory', path='../escape'),
        C('create_directory', path='.'),
        C('list_directory'),
    ],
)

# ---- file_info ----------------------------------------------------------------------
scenario(
    'file_info',
    [
        C('file_info', path='a.txt'),
        C('file_info', path='src'),
        C('file_info', path='.'),
        C('file_info', path='bin.dat'),
        C('file_info', path='empty.txt'),
        C('file_info', path='emptydir'),
        C('file_info', path='.env'),
        C('file_info', path='nope'),
        C('file_info', path='../outside'),
    ],
)

_TARGETS_TREE: dict[str, Any] = {
    'a.txt': 'alpha\n',
    'via_outside.txt': Link('<TMP>/outside/back'),
    'dotdot_abs.txt': Link('<TMP>/outside/d/../../root/a.txt'),
    'via_rootlink.txt': Link('<TMP>/rootlink/a.txt'),
    'rel_chain.txt': Link('link.txt'),
    'link.txt': Link('a.txt'),
    'dirlink': Link('<ROOT>/sub'),
    'sub/inner.txt': 'inner\n',
}
_TARGETS_CALLS = [
    C('file_info', path='via_outside.txt'),
    C('file_info', path='dotdot_abs.txt'),
    C('file_info', path='via_rootlink.txt'),
    C('file_info', path='rel_chain.txt'),
    C('file_info', path='dirlink'),
    C('file_info', path='dirlink/inner.txt'),
    C('read_file', path='via_outside.txt'),
    C('write_file', path='via_outside.txt', content='through the hop\n'),
    C('list_directory'),
    C('find_files', pattern='**/*'),
]
_TARGETS_OUTSIDE: dict[str, Any] = {'back': Link('<ROOT>/a.txt'), 'd': None}
scenario('file_info_symlink_targets', _TARGETS_CALLS, tree=_TARGETS_TREE, outside=_TARGETS_OUTSIDE)
scenario(
    'root_through_symlink',
    [*_TARGETS_CALLS, C('read_file', path='<TMP>/rootlink/a.txt'), C('read_file', path='<ROOT>/a.txt')],
    tree=_TARGETS_TREE,
    outside=_TARGETS_OUTSIDE,
    root_via_link=True,
)

# ---- cwd ----------------------------------------------------------------------------
scenario(
    'cwd_subdirectory',
    [
        C('list_directory'),
        C('list_directory', path='..'),
        C('list_directory', path='../docs'),
        C('read_file', path='main.py'),
        C('read_file', path='../a.txt'),
        C('find_files', pattern='*.py'),
        C('find_files', pattern='**/*', path='..'),
        C('search_files', pattern='alpha', path='..'),
        C('search_files', pattern='alpha', path='..', include_glob='docs/*'),
        C('search_files', pattern='alpha', path='..', include_glob='*.md'),
        C('write_file', path='../docs/new.md', content='new\n'),
        C('edit_file', path='util.py', old_text='42', new_text='43'),
        C('create_directory', path='../made'),
        C('file_info', path='../a.txt'),
        C('read_file', path='../../outside/secret.txt'),
    ],
    config={'cwd': 'src'},
    outside=OUTSIDE_TREE,
)

# ---- path spellings ------------------------------------------------------------------
scenario(
    'path_forms',
    [
        C('read_file', path=''),
        C('list_directory', path=''),
        C('read_file', path='a.txt/'),
        C('file_info', path='a.txt/'),
        C('list_directory', path='src/'),
        C('list_directory', path='src//data'),
        C('read_file', path='./a.txt'),
        C('read_file', path='src/./main.py'),
        C('read_file', path='~/a.txt'),
        C('read_file', path='src\\main.py'),
        C('read_file', path='a\x00b'),
        C('file_info', path='a\x00b'),
        C('write_file', path='newfile/', content='x\n'),
        C('create_directory', path='newdir/'),
        C('write_file', path='sur.txt', content='bad \ud800 surrogate'),
        C('edit_file', path='a.txt/', old_text='beta', new_text='BETA'),
        C('write_file', path='bin.dat', content='text now\n', expected_hash=Hash('bin.dat')),
        C('read_file', path='/'.join(['d'] * 30) + '/x.txt'),
        C('read_file', path='/'.join(['n' * 250] * 20)),
    ],
    tree={**BASE_TREE, '/'.join(['d'] * 30) + '/x.txt': 'deep\n'},
)

# ---- containment and patterns -------------------------------------------------------
scenario(
    'containment',
    [
        C('read_file', path='../outside/secret.txt'),
        C('read_file', path='<TMP>/outside/secret.txt'),
        C('read_file', path='<ROOT>/a.txt'),
        C('read_file', path='/etc/hostname'),
        C('read_file', path='src/../../outside/secret.txt'),
        C('read_file', path='escape/secret.txt'),
        C('read_file', path='escape'),
        C('list_directory', path='escape'),
        C('list_directory', path='../outside'),
        C('find_files', pattern='*', path='escape'),
        C('search_files', pattern='secret', path='escape'),
        C('file_info', path='escape'),
        C('write_file', path='escape/new.txt', content='x'),
        C('create_directory', path='escape/new'),
        C('edit_file', path='escape/secret.txt', old_text='outside', new_text='inside'),
    ],
    tree={**BASE_TREE, 'escape': Link('<TMP>/outside')},
    outside=OUTSIDE_TREE,
)
scenario(
    'denied_patterns',
    [
        C('read_file', path='app.log'),
        C('read_file', path='logs/app.log'),
        C('read_file', path='private/a.txt'),
        C('read_file', path='private/../private/./a.txt'),
        C('write_file', path='new.log', content='x'),
        C('list_directory'),
        C('list_directory', path='private'),
        C('find_files', pattern='**/*'),
        C('search_files', pattern='log'),
        C('file_info', path='app.log'),
        C('create_directory', path='private/sub'),
        C('read_file', path='alias.txt'),
    ],
    tree={
        'app.log': 'log line\n',
        'logs/app.log': 'nested log\n',
        'private/a.txt': 'private\n',
        'public.txt': 'public log mention\n',
        'alias.txt': Link('private/a.txt'),
    },
    config={'denied_patterns': ['*.log', 'private/*']},
)
# Ours follows the spec: denied/protected patterns cover descendants of a matching directory and
# match case-insensitively (see test_fs_compat.py).
scenario(
    'denied_directory_descendants',
    [
        C('read_file', path='logs/app.log'),
        C('list_directory'),
        C('find_files', pattern='**/*'),
        C('search_files', pattern='line'),
        C('write_file', path='logs/new.log', content='x\n'),
    ],
    tree={'logs/app.log': 'log line\n', 'keep.txt': 'kept line\n'},
    config={'denied_patterns': ['logs']},
)
scenario(
    'denied_case_insensitive',
    [
        C('write_file', path='.GIT/config', content='x\n'),
        C('read_file', path='NOTES.TXT'),
        C('read_file', path='notes.txt'),
    ],
    tree={'.GIT/config': '[core]\n', 'NOTES.TXT': 'upper\n', 'notes.txt': 'lower\n'},
    config={'denied_patterns': ['notes.txt']},
)

scenario(
    'pattern_syntax',
    [
        C('read_file', path='secret.txt'),
        C('read_file', path='deep/er/secret.md'),
        C('read_file', path='notes.md'),
        C('read_file', path='data1.csv'),
        C('read_file', path='data10.csv'),
        C('list_directory'),
        C('find_files', pattern='**/*'),
        C('write_file', path='lock.bin', content='x'),
        C('write_file', path='deep/lock.bin', content='x'),
    ],
    tree={
        'secret.txt': 's\n',
        'deep/er/secret.md': 's\n',
        'notes.md': 'n\n',
        'data1.csv': '1\n',
        'data10.csv': '10\n',
        'lock.bin': 'l\n',
        'deep/lock.bin': 'l\n',
    },
    config={'denied_patterns': ['**/secret*', 'data?.csv'], 'protected_patterns': ['[!d]*.bin']},
)
scenario(
    'names_and_order',
    [
        C('list_directory'),
        C('find_files', pattern='*'),
        C('search_files', pattern='x'),
        C('read_file', path='with space.txt'),
        C('read_file', path='ünïcødé.txt'),
        C('file_info', path='ünïcødé.txt'),
        C('write_file', path='naïve new.txt', content='x\n'),
        C('edit_file', path='with space.txt', old_text='x', new_text='y'),
    ],
    tree={
        'B.txt': 'x\n',
        'a.txt': 'x\n',
        '_under.txt': 'x\n',
        '10.txt': 'x\n',
        '9.txt': 'x\n',
        'with space.txt': 'x\n',
        'ünïcødé.txt': 'x é\n',
        'Z/x.txt': 'x\n',
        'a-b/x.txt': 'x\n',
        'a/x.txt': 'x\n',
        'a.b/x.txt': 'x\n',
    },
)
scenario(
    'fifo',
    [
        C('read_file', path='pipe'),
        C('write_file', path='pipe', content='x'),
        C('edit_file', path='pipe', old_text='a', new_text='b'),
        C('file_info', path='pipe'),
        C('list_directory'),
        C('find_files', pattern='*'),
        C('search_files', pattern='x'),
        C('create_directory', path='pipe'),
    ],
    tree={'pipe': Fifo(), 'a.txt': 'x\n'},
)
scenario(
    'listener_raises',
    [C('write_file', path='a.txt', content='changed\n'), C('read_file', path='a.txt')],
    cancel='raise',
)

# ---- events: cancellation -----------------------------------------------------------
_CANCEL_CALLS = [
    C('write_file', path='a.txt', content='changed\n'),
    C('write_file', path='new.txt', content='new\n'),
    C('edit_file', path='a.txt', old_text='beta', new_text='BETA'),
    C('create_directory', path='newdir/sub'),
    C('create_directory', path='src'),
    C('read_file', path='a.txt'),
]
scenario('cancel_with_reason', _CANCEL_CALLS, cancel='a human said no')
scenario('cancel_without_reason', _CANCEL_CALLS, cancel=True)

# ---- events: a listener that changes the target while the change is held -------------
scenario(
    'listener_meddles',
    [
        C('write_file', path='a.txt', content='mine\n'),
        C('edit_file', path='ten.txt', old_text='line 3', new_text='line three'),
        C('write_file', path='new.txt', content='mine\n'),
        C('edit_file', path='src/util.py', old_text='42', new_text='43'),
        C('write_file', path='docs/readme.md', content='mine\n'),
        C('create_directory', path='made'),
        C('create_directory', path='made2'),
        C('write_file', path='key2.txt', content='mine\n', expected_hash=Hash('key.pem')),
    ],
    meddle={
        'a.txt': ('write', 'theirs\n'),
        'ten.txt': ('delete',),
        'new.txt': ('write', ''),
        'src/util.py': ('symlink', '<TMP>/outside/secret.txt'),
        'docs/readme.md': ('symlink', '../a.txt'),
        'made': ('mkdir',),
        'made2': ('write', 'a file now'),
    },
    outside=OUTSIDE_TREE,
)

# ---- a root that does not exist yet: create_directory creates it (and only it does) ----
scenario(
    'root_not_yet_created',
    [
        C('read_file', path='a.txt'),
        C('write_file', path='a.txt', content='x\n'),
        C('edit_file', path='a.txt', old_text='x', new_text='y'),
        C('list_directory'),
        C('find_files', pattern='*'),
        C('file_info', path='.'),
        C('create_directory', path='d/e'),
        C('write_file', path='d/e/f.txt', content='made\n'),
        C('list_directory', path='d'),
        C('create_directory', path='.'),
    ],
    tree={},
    root_absent=True,
)
scenario('root_not_yet_created_dot', [C('create_directory', path='.'), C('list_directory')], tree={}, root_absent=True)

# ---- read_only ----------------------------------------------------------------------
scenario(
    'read_only',
    [
        C('read_file', path='a.txt'),
        C('write_file', path='a.txt', content='x'),
        C('edit_file', path='a.txt', old_text='alpha', new_text='x'),
        C('create_directory', path='d'),
        C('list_directory'),
    ],
    config={'read_only': True},
)

# ---- the opt-in ripgrep tools (the reference runs `rg`; ours must not need it) ---------
_RG_TREE: dict[str, Any] = {
    **BASE_TREE,
    '.git': None,
    '.gitignore': 'ignored.txt\nbuild/\n',
    'ignored.txt': 'alpha ignored\n',
    'build/out.txt': 'alpha built\n',
    'src/.ignore': 'skipme.py\n',
    'src/skipme.py': 'alpha = 0\n',
    'src/ctx.txt': 'one\ntwo\nthree alpha\nfour\nfive\nsix\nseven alpha\neight\n',
    'src/wide.txt': 'alpha ' + 'w' * 5000 + '\n',
    'src/a.b.txt': 'a.b literal\naxb regex\n',
    'src/Mixed.txt': 'ALPHA upper\n',
}
scenario(
    'rg_list_files',
    [
        C('list_files'),
        C('list_files', path='src'),
        C('list_files', glob='*.py'),
        C('list_files', glob='src/**'),
        C('list_files', glob='ignored.txt'),
        C('list_files', glob='.hidden/*'),
        C('list_files', glob='*.nothing'),
        C('list_files', path='a.txt'),
        C('list_files', path='nope'),
        C('list_files', path='..'),
    ],
    tree=_RG_TREE,
    config={'tools': ALL_TOOLS},
)
# A name longer than a file name can be (255 bytes), and a path longer than PATH_MAX: every
# tool that looks the name up retries `The path name is too long.`; globs that only match
# names (include_glob, glob) find nothing.
_LONG = 'L' * 300
_DEEP = '/'.join(['d' * 200] * 30)
scenario(
    'long_path_names',
    [
        C('find_files', pattern=_LONG),
        C('find_files', pattern=f'src/{_LONG}'),
        C('find_files', pattern=f'**/{_LONG}'),
        C('find_files', pattern=f'*/{_LONG}'),
        C('find_files', pattern=f'{_LONG}/*'),
        C('find_files', pattern=f'nope/{_LONG}'),
        C('find_files', pattern=f'{_LONG}*'),
        C('find_files', pattern='*', path=_LONG),
        C('list_directory', path=f'src/{_LONG}'),
        C('search_files', pattern='alpha', path=_LONG),
        C('search_files', pattern='alpha', include_glob=_LONG),
        C('list_files', path=_LONG),
        C('list_files', glob=_LONG),
        C('grep', pattern='alpha', path=f'src/{_LONG}'),
        C('grep', pattern='alpha', glob=_LONG),
        C('read_file', path=f'src/{_LONG}/x'),
        C('write_file', path=f'src/{_LONG}', content='x'),
        C('edit_file', path=_LONG, old_text='a', new_text='b'),
        C('create_directory', path=f'src/{_LONG}/x'),
        C('file_info', path=_LONG),
        C('list_directory', path=_DEEP),
        C('find_files', pattern=_DEEP),
        C('write_file', path=_DEEP, content='x'),
    ],
    config={'tools': ALL_TOOLS},
)
scenario(
    'rg_list_files_cap',
    [C('list_files'), C('list_files', glob='m[01].txt')],
    tree=_MANY,
    config={'tools': ALL_TOOLS, 'max_find_results': 2},
)
scenario(
    'rg_grep',
    [
        C('grep', pattern='alpha'),
        C('grep', pattern='alpha', path='src'),
        C('grep', pattern='alpha', path='src/ctx.txt'),
        C('grep', pattern='alpha', glob='*.md'),
        C('grep', pattern='alpha', file_type='py'),
        C('grep', pattern='alpha', ignore_case=True, path='src'),
        C('grep', pattern='a.b', path='src'),
        C('grep', pattern='a.b', literal=True, path='src'),
        C('grep', pattern='alpha', context=1, path='src/ctx.txt'),
        C('grep', pattern='alpha', context=3, path='src/ctx.txt'),
        C('grep', pattern='alpha', context=21),
        C('grep', pattern='alpha', context=-1),
        C('grep', pattern='binary'),
        C('grep', pattern='zzz-none'),
        C('grep', pattern='alpha', path='nope'),
        C('grep', pattern='alpha', path='..'),
        C('grep', pattern='SECRET'),
        C('grep', pattern='(?=x)'),
        C('grep', pattern='alpha', file_type='nosuchtype'),
    ],
    tree=_RG_TREE,
    config={'tools': ALL_TOOLS},
)
scenario(
    'rg_grep_cap',
    [C('grep', pattern='hit'), C('grep', pattern='hit', glob='m0.txt')],
    tree=_MANY,
    config={'tools': ALL_TOOLS, 'max_search_results': 3},
)
scenario(
    'rg_grep_errors',
    [C('grep', pattern='('), C('grep', pattern='[a-')],
    tree=_RG_TREE,
    config={'tools': ALL_TOOLS},
)
scenario('schemas_all_tools', [], schemas=True, config={'tools': ALL_TOOLS})
scenario('schemas_all_tools_read_only', [], schemas=True, config={'tools': ALL_TOOLS, 'read_only': True})

# ---- custom streams (open_read / open_write overrides) -----------------------------
_STREAM_CALLS = [
    C('write_file', path='new.txt', content='new\n'),
    C('write_file', path='a.txt', content='alpha\nbeta\n'),
    C('write_file', path='a.txt', content='v3\n', expected_hash=Hash('a.txt')),
    C('write_file', path='a.txt', content='v4\n', expected_hash='deadbeef0000'),
    C('edit_file', path='ten.txt', old_text='line 5\n', new_text='line five\n'),
    C('edit_file', path='ten.txt', old_text='line 6', new_text='x', expected_hash='deadbeef0000'),
    C('edit_file', path='ten.txt', old_text='line 7', new_text='line seven', expected_hash=Hash('ten.txt')),
    C('edit_file', path='bin.dat', old_text='binary', new_text='x'),
    C('edit_file', path='ten.txt', old_text='nope', new_text='x'),
    C('write_file', path='src', content='x'),
    C('read_file', path='ten.txt'),
    C('file_info', path='a.txt'),
    C('create_directory', path='made'),
]
scenario('custom_streams', _STREAM_CALLS, custom_streams=True)
scenario('custom_streams_cancelled', _STREAM_CALLS[:3], custom_streams=True, cancel='no')

# ---- agent spec --------------------------------------------------------------------
scenario(
    'spec_basic',
    [
        C('list_directory'),
        C('read_file', path='src/main.py'),
        C('read_file', path='a.txt'),
        C('write_file', path='src/new.py', content='x = 1\n'),
    ],
    config={'allowed_patterns': ['*.py', 'src/*'], 'max_read_lines': 3},
    attach='spec',
    schemas=True,
)
scenario(
    'spec_read_only',
    [C('write_file', path='a.txt', content='x')],
    config={'read_only': True},
    attach='spec',
    schemas=True,
)

# ---- configuration errors (recorded at construction or first run) --------------------
for _name, _cfg in {
    'config_zero_max_read_lines': {'max_read_lines': 0},
    'config_negative_max_read_chars': {'max_read_chars': -5},
    'config_string_limit': {'max_list_results': '10'},
    'config_unknown_tool': {'tools': ['read_file', 'rm_rf']},
    'config_cwd_outside': {'cwd': '../outside'},
}.items():
    scenario(_name, [C('read_file', path='a.txt')], config=_cfg, outside=OUTSIDE_TREE)


# ======================================================================================
# The workspace contract (0.62.0): `FileSystem()` on the run's workspace
# ======================================================================================
workspace_scenario(
    'basics',
    [
        C('list_directory', path='.'),
        C('list_directory', path='src'),
        C('read_file', path='a.txt'),
        C('read_file', path='src/main.py'),
        C('read_file', path='./src/../a.txt'),
        C('read_file', path='ten.txt', offset=3, limit=4),
        C('write_file', path='new.txt', content='hello\n'),
        C('read_file', path='new.txt'),
        C('edit_file', path='a.txt', old_text='beta', new_text='BETA'),
        C('edit_file', path='a.txt', old_text='gamma', new_text='GAMMA', expected_hash=Hash('a.txt')),
        C('write_file', path='a.txt', content='stale\n', expected_hash='000000000000'),
        C('create_directory', path='made/deeper'),
        C('create_directory', path='made'),
        C('write_file', path='made/deeper/f.txt', content='x'),
        C('find_files', pattern='*.py', path='src'),
        C('find_files', pattern='**/*.json'),
        C('search_files', pattern='alpha'),
        C('file_info', path='a.txt'),
        C('file_info', path='src'),
        C('file_info', path='empty.txt'),
    ],
)
workspace_scenario(
    'missing_paths',
    [
        C('read_file', path='nope.txt'),
        C('read_file', path='src'),
        C('read_file', path='dangle'),
        C('read_file', path='a.txt/x'),
        C('read_file', path='nodir/x.txt', offset=5),
        C('file_info', path='nope.txt'),
        C('file_info', path='dangle'),
        C('file_info', path='a.txt/x'),
        C('edit_file', path='nope.txt', old_text='a', new_text='b'),
        C('edit_file', path='src', old_text='a', new_text='b'),
        C('list_directory', path='nope'),
        C('list_directory', path='a.txt'),
        C('find_files', pattern='*', path='nope'),
        C('search_files', pattern='x', path='nope'),
        C('file_info', path='<ROOT>'),
    ],
    tree={**WORKSPACE_TREE, 'dangle': Link('nothere')},
)
workspace_scenario(
    'containment',
    [
        C('read_file', path='../outside/secret.txt'),
        C('read_file', path='<TMP>/outside/secret.txt'),
        C('read_file', path='escape.txt'),
        C('read_file', path='escdir/inner.txt'),
        C('read_file', path='<ROOT>/a.txt'),
        C('read_file', path='<TMP>/outside/rootlink/a.txt'),
        C('write_file', path='escape.txt', content='x'),
        C('write_file', path='../outside/new.txt', content='x'),
        C('create_directory', path='../outside/newdir'),
        C('edit_file', path='escape.txt', old_text='outside', new_text='x'),
        C('list_directory', path='..'),
        C('list_directory', path='escdir'),
        C('find_files', pattern='*', path='escdir'),
        C('file_info', path='escape.txt'),
        C('file_info', path='inlink'),
        C('file_info', path='abslink'),
        C('file_info', path='via.txt'),
        C('read_file', path='via.txt'),
    ],
    tree={
        **WORKSPACE_TREE,
        'escape.txt': Link('<TMP>/outside/secret.txt'),
        'escdir': Link('<TMP>/outside/d'),
        'inlink': Link('a.txt'),
        'abslink': Link('<ROOT>/a.txt'),
        'via.txt': Link('<TMP>/outside/rootlink/a.txt'),
    },
    outside=WORKSPACE_OUTSIDE,
)
workspace_scenario(
    'symlink_loop',
    [
        C('read_file', path='loop'),
        C('file_info', path='loop'),
        C('write_file', path='loop', content='x'),
        C('edit_file', path='loop', old_text='a', new_text='b'),
        C('read_file', path='loop/x'),
    ],
    tree={**WORKSPACE_TREE, 'loop': Link('loop')},
)
workspace_scenario(
    'parents_and_collisions',
    [
        C('write_file', path='nodir/x.txt', content='x'),
        C('write_file', path='deep/er/x.txt', content='x'),
        C('write_file', path='a.txt/x', content='x'),
        C('write_file', path='src', content='x'),
        C('create_directory', path='a.txt'),
        C('create_directory', path='a.txt/sub'),
        C('create_directory', path='newdir'),
        C('create_directory', path='newdir'),
        C('write_file', path='newdir/x.txt', content='one\ntwo\n'),
    ],
)
workspace_scenario(
    'default_read_only_patterns',
    [
        C('write_file', path='.env', content='x'),
        C('write_file', path='.env.local', content='x'),
        C('write_file', path='sub/.env', content='x'),
        C('write_file', path='.git/config', content='x'),
        C('write_file', path='.GIT/config', content='x'),
        C('write_file', path='sub/.git', content='x'),
        C('write_file', path='key.pem', content='x'),
        C('write_file', path='sub/id.key', content='x'),
        C('write_file', path='sub/secrets.yaml', content='x'),
        C('write_file', path='secrets.txt', content='x'),
        C('write_file', path='.pydantic-ai-harness/notes', content='x'),
        C('write_file', path='sub/.pydantic-ai-harness/notes', content='x'),
        C('edit_file', path='.env', old_text='SECRET', new_text='S'),
        C('create_directory', path='.git/hooks'),
        C('read_file', path='.env'),
        C('write_file', path='sub/ok.txt', content='fine\n'),
    ],
    tree={**WORKSPACE_TREE, '.env': 'SECRET=1\n', '.git/config': '[core]\n', 'sub': None, '.pydantic-ai-harness': None},
)
workspace_scenario(
    'special_files',
    [
        C('read_file', path='pipe'),
        C('file_info', path='pipe'),
        C('write_file', path='pipe', content='x'),
        C('edit_file', path='pipe', old_text='a', new_text='b'),
    ],
    tree={**WORKSPACE_TREE, 'pipe': Fifo()},
)
workspace_scenario(
    'offset_and_limit',
    [
        C('read_file', path='ten.txt', offset=-1),
        C('read_file', path='ten.txt', limit=0),
        C('read_file', path='ten.txt', limit=-1),
        C('read_file', path='ten.txt', offset=-1, limit=0),
        C('read_file', path='ten.txt', offset=10),
        C('read_file', path='ten.txt', offset=9),
        C('read_file', path='ten.txt', limit=3),
        C('read_file', path='ten.txt', offset=8, limit=100),
        C('read_file', path='empty.txt'),
        C('read_file', path='empty.txt', offset=1),
    ],
)
workspace_scenario(
    'find_globs',
    [
        C('find_files', pattern='**'),
        C('find_files', pattern='**/'),
        C('find_files', pattern='src/**'),
        C('find_files', pattern='**/*.py'),
        C('find_files', pattern='*'),
        C('find_files', pattern='*/'),
        C('find_files', pattern='s**'),
        C('find_files', pattern='../*'),
        C('find_files', pattern='a/../b'),
        C('find_files', pattern='src/../*.txt'),
        C('find_files', pattern=''),
        C('find_files', pattern='.'),
        C('find_files', pattern='/abs/*'),
        C('find_files', pattern='**', path='src'),
        C('find_files', pattern='data/*', path='src'),
    ],
)
_WS_BIG = ''.join(f'{i:05d} ' + 'x' * 24 + '\n' for i in range(3000))  # 3000 lines of 31 chars
workspace_scenario(
    'max_read_chars_default',
    [
        C('read_file', path='big.txt'),
        C('read_file', path='big.txt', offset=2500),
        C('read_file', path='big.txt', limit=10),
    ],
    tree={'big.txt': _WS_BIG},
)
workspace_scenario(
    'max_read_chars_none',
    [C('read_file', path='big.txt', offset=100, limit=3), C('read_file', path='big.txt')],
    tree={'big.txt': _WS_BIG},
    config={'max_read_chars': None},
)
_WS_PATTERN_CALLS = [
    C('write_file', path='a.txt', content='x'),
    C('write_file', path='src/new.txt', content='x'),
    C('write_file', path='.env', content='x'),
    C('edit_file', path='src/util.py', old_text='42', new_text='43'),
]
workspace_scenario('read_only_patterns', _WS_PATTERN_CALLS, config={'read_only_patterns': ['*.txt']})
workspace_scenario('read_only_patterns_empty', _WS_PATTERN_CALLS, config={'read_only_patterns': []})
workspace_scenario('protected_patterns_alias', _WS_PATTERN_CALLS, config={'protected_patterns': ['*.txt']})
workspace_scenario(
    'both_pattern_names', _WS_PATTERN_CALLS, config={'protected_patterns': ['*.txt'], 'read_only_patterns': ['*.md']}
)
workspace_scenario(
    'denied_and_allowed',
    [
        C('read_file', path='src/main.py'),
        C('read_file', path='a.txt'),
        C('list_directory', path='.'),
        C('list_directory', path='src'),
        C('find_files', pattern='**/*.py'),
        C('write_file', path='src/data/new.json', content='{}'),
    ],
    config={'denied_patterns': ['src/data'], 'allowed_patterns': ['src/*', '*.txt']},
)
workspace_scenario(
    'cwd_ignored',
    [C('list_directory', path='.'), C('read_file', path='a.txt'), C('write_file', path='w.txt', content='w\n')],
    config={'cwd': 'src'},
)
workspace_scenario(
    'unhashed',
    [
        C('read_file', path='a.txt'),
        C('write_file', path='n.txt', content='n\n'),
        C('edit_file', path='n.txt', old_text='n', new_text='m'),
    ],
    config={'content_hashes': False},
)
workspace_scenario(
    'workspace_on_the_run', [C('list_directory', path='.'), C('write_file', path='r.txt', content='r\n')], attach='run'
)
workspace_scenario(
    'agent_spec',
    [C('list_directory', path='.'), C('read_file', path='a.txt'), C('write_file', path='s.txt', content='s\n')],
    attach='spec',
)
workspace_scenario(
    'symlinks',
    [
        C('file_info', path='rel_dot'),
        C('file_info', path='dirlink'),
        C('file_info', path='dirlink/data'),
        C('file_info', path='chain'),
        C('read_file', path='chain'),
        C('read_file', path='dirlink/main.py', limit=1),
        C('write_file', path='gitlink/config', content='x'),
        C('write_file', path='chain', content='through\n'),
        C('edit_file', path='rel_dot', old_text='through', new_text='again'),
        C('list_directory', path='dirlink'),
        C('find_files', pattern='*.py', path='dirlink'),
        C('search_files', pattern='alpha', path='dirlink'),
        C('search_files', pattern='through', path='chain'),
        C('create_directory', path='dirlink/newsub'),
    ],
    tree={
        **WORKSPACE_TREE,
        'rel_dot': Link('./a.txt'),
        'dirlink': Link('src'),
        'chain': Link('rel_dot'),
        'gitdir/config': '[core]\n',
        '.git': Link('gitdir'),
        'gitlink': Link('.git'),
    },
)
workspace_scenario(
    'cancelled_changes',
    [
        C('write_file', path='c.txt', content='c\n'),
        C('edit_file', path='a.txt', old_text='beta', new_text='B'),
        C('create_directory', path='cdir'),
    ],
    cancel='not now',
)
workspace_scenario('schemas_default', [], schemas=True)
workspace_scenario('schemas_all_unhashed', [], schemas=True, config={'tools': ALL_TOOLS, 'content_hashes': False})
workspace_scenario('schemas_all_read_only', [], schemas=True, config={'tools': ALL_TOOLS, 'read_only': True})
workspace_scenario('schemas_on_the_run', [], schemas=True, attach='run')
workspace_scenario('unavailable_workspace', [C('list_directory', path='.')], attach='unavailable')
workspace_scenario(
    'hidden_entries',
    [
        C('list_directory', path='.'),
        C('find_files', pattern='*'),
        C('search_files', pattern='alpha'),
        C('read_file', path='.hidden/h.txt'),
    ],
    tree={**WORKSPACE_TREE, '.env': 'SECRET=1\n', '.hidden/h.txt': 'hidden alpha\n'},
)


# ======================================================================================
# The workspace contract on a workspace that is not on this host
# ======================================================================================
# `fs062_remote_scenarios.py` runs these on `tests/memory_workspace.py`: 0.62.0's direct tool calls
# against our `RemoteEngine`. A scenario: `name`, `calls`, and optionally `options` (FileSystem
# fields), `dirs` (that many extra directories under `many/`), `links` (symlinks, with a file outside).

REMOTE_FILES: dict[str, bytes | str] = {
    'a.txt': 'alpha\nbeta\ngamma\n',
    'notes.md': '# Notes\nTODO: one\nTODO: two\n',
    'src/main.py': 'import os\n\ndef main():\n    return os.getcwd()\n',
    'src/util.py': 'def helper(x):\n    return x * 2\n',
    'src/pkg/deep.py': 'VALUE = 42\n',
    'docs/guide.txt': 'read me\nTODO later\n',
    '.env': 'SECRET=1\n',
    '.hidden/inside.txt': 'TODO hidden\n',
    'logs/app.log': 'TODO log line\n',
    'pic.png': b'\x89PNG\r\n\x1a\n' + bytes(range(40)),
    'data.bin': bytes(range(100)),
    'empty.txt': '',
    'noeol.txt': 'no newline at end',
    'bad.txt': b'caf\xe9 latin-1\n',
    'crlf.txt': 'one\r\ntwo\r\n',
}

_REMOTE_READS: list[Call] = [
    C('read_file', path='a.txt'),
    C('read_file', path='a.txt', offset=1, limit=1),
    C('read_file', path='a.txt', offset=9),
    C('read_file', path='a.txt', offset=-1),
    C('read_file', path='a.txt', limit=0),
    C('read_file', path='missing.txt'),
    C('read_file', path='src'),
    C('read_file', path='pic.png'),
    C('read_file', path='data.bin'),
    C('read_file', path='empty.txt'),
    C('read_file', path='noeol.txt'),
    C('read_file', path='bad.txt'),
    C('read_file', path='src/../a.txt'),
    C('read_file', path='../outside.txt'),
    C('read_file', path='/etc/passwd'),
    C('read_file', path='.env'),
    C('file_info', path='a.txt'),
    C('file_info', path='src'),
    C('file_info', path='data.bin'),
    C('file_info', path='missing'),
    C('file_info', path='noeol.txt'),
    C('file_info', path='bad.txt'),
]

_REMOTE_WALKS: list[Call] = [
    C('list_directory'),
    C('list_directory', path='src'),
    C('list_directory', path='.hidden'),
    C('list_directory', path='missing'),
    C('list_directory', path='a.txt'),
    C('find_files', pattern='**/*.py'),
    C('find_files', pattern='*.txt'),
    C('find_files', pattern='src/*'),
    C('find_files', pattern='**'),
    C('find_files', pattern='*/'),
    C('find_files', pattern='.*'),
    C('find_files', pattern='*.py', path='src'),
    C('find_files', pattern='../*'),
    C('find_files', pattern='/abs/*'),
    C('find_files', pattern='*', path='missing'),
    C('find_files', pattern='nothing*'),
    C('search_files', pattern='TODO'),
    C('search_files', pattern='return', path='src'),
    C('search_files', pattern='TODO', include_glob='*.md'),
    C('search_files', pattern='def', include_glob='src/*.py'),
    C('search_files', pattern='TODO', include_glob='.hidden/*'),
    C('search_files', pattern='alpha', path='a.txt'),
    C('search_files', pattern='x', path='missing'),
    C('search_files', pattern='(unclosed'),
    C('search_files', pattern='caf\\S'),
    C('search_files', pattern='two$'),
    C('grep', pattern='todo', ignore_case=True),
    C('grep', pattern='x * 2', literal=True),
    C('grep', pattern='x', file_type='py'),
    C('grep', pattern='x', context=2),
    C('grep', pattern='x', context=21),
    C('list_files'),
    C('list_files', glob='*.py'),
    C('list_files', glob='src/*.py'),
    C('list_files', path='docs'),
]

_REMOTE_CHANGES: list[Call] = [
    C('write_file', path='new.txt', content='hello\nworld\n'),
    C('read_file', path='new.txt'),
    C('write_file', path='a.txt', content='replaced\n'),
    C('write_file', path='nodir/x.txt', content='x'),
    C('write_file', path='a.txt/x', content='x'),
    C('write_file', path='src', content='x'),
    C('write_file', path='.env', content='x'),
    C('write_file', path='key.pem', content='x'),
    C('write_file', path='../escape.txt', content='x'),
    C('write_file', path='notes.md', content='x', expected_hash='abcdefabcdef'),
    C('edit_file', path='src/util.py', old_text='x * 2', new_text='x * 3'),
    C('edit_file', path='notes.md', old_text='TODO', new_text='DONE'),
    C('edit_file', path='notes.md', old_text='absent', new_text='x'),
    C('edit_file', path='notes.md', old_text='', new_text='x'),
    C('edit_file', path='missing.md', old_text='a', new_text='b'),
    C('edit_file', path='data.bin', old_text='a', new_text='b'),
    C('edit_file', path='bad.txt', old_text='caf', new_text='b'),
    C('edit_file', path='crlf.txt', old_text='one', new_text='uno', expected_hash='000000000000'),
    C('edit_file', path='crlf.txt', old_text='one', new_text='uno'),
    C('create_directory', path='made/deep/er'),
    C('create_directory', path='src'),
    C('create_directory', path='a.txt'),
    C('create_directory', path='a.txt/sub'),
    C('create_directory', path='.git/hooks'),
    C('list_directory', path='made/deep'),
]

_REMOTE_PATTERNS: list[Call] = [
    C('read_file', path='logs/app.log'),
    C('list_directory'),
    C('search_files', pattern='TODO'),
    C('find_files', pattern='**/*.log'),
    C('read_file', path='src/main.py'),
    C('read_file', path='LOGS/app.log'),
    C('write_file', path='src/new.py', content='x = 1\n'),
]

_REMOTE_SMALL_CAPS: list[Call] = [
    C('list_directory'),
    C('find_files', pattern='**'),
    C('search_files', pattern='TODO|return|def'),
    C('read_file', path='a.txt'),
]

_REMOTE_LINKS: list[Call] = [
    C('read_file', path='alias.txt'),
    C('read_file', path='escape.txt'),
    C('read_file', path='envlink'),
    C('write_file', path='envlink', content='x'),
    C('search_files', pattern='TODO|alpha'),
    C('find_files', pattern='**/*.txt'),
    C('list_directory', path='srclink'),
]

REMOTE_SCENARIOS: list[dict[str, Any]] = [
    {'name': 'reads', 'calls': _REMOTE_READS},
    {'name': 'walks', 'calls': _REMOTE_WALKS},
    {
        'name': 'deliberate',
        'calls': [
            # 0.62.0 refuses nested repetition on this path (its Python `re` could backtrack for
            # ever); the core's regex engine runs in linear time, so it searches.
            C('search_files', pattern='(TO+)+DO'),
            C('search_files', pattern='(a|b+)*c'),
        ],
    },
    {'name': 'changes', 'calls': _REMOTE_CHANGES},
    {
        'name': 'patterns',
        'options': {'denied_patterns': ['logs'], 'allowed_patterns': ['*.md', 'src/*', 'logs/*', '.', 'docs/*']},
        'calls': _REMOTE_PATTERNS,
    },
    {
        'name': 'small_caps',
        'options': {'max_list_results': 3, 'max_find_results': 4, 'max_search_results': 2, 'max_read_lines': 2},
        'calls': _REMOTE_SMALL_CAPS,
    },
    {
        'name': 'no_hashes',
        'options': {'content_hashes': False, 'max_read_chars': 120},
        'calls': [
            C('read_file', path='a.txt'),
            C('read_file', path='data.bin'),
            C('write_file', path='z.txt', content='z\n'),
        ],
    },
    {
        # More directories than one walk lists: both stop and say so.
        'name': 'walk_cap',
        'dirs': 10_050,
        'calls': [C('find_files', pattern='**/*.txt'), C('search_files', pattern='TODO')],
    },
    {
        'name': 'links',
        'links': {
            'alias.txt': '/ws/a.txt',
            'escape.txt': '/outside/secret.txt',
            'envlink': '/ws/.env',
            'srclink': '/ws/src',
            'dangling.txt': '/ws/nothing',
        },
        'calls': _REMOTE_LINKS,
    },
]


# --------------------------------------------------------------------------------------
# Runner
# --------------------------------------------------------------------------------------


def _content_hash(data: bytes) -> str:
    if b'\x00' in data[:8192]:
        return hashlib.sha256(data).hexdigest()[:12]
    return hashlib.sha256(data.decode('utf-8', errors='replace').encode('utf-8')).hexdigest()[:12]


class Normaliser:
    def __init__(self, tmp: str, root: str) -> None:
        # Longest first so `<ROOT>` wins over `<TMP>`.
        self.pairs = sorted(
            {
                (tmp, '<TMP>'),
                (os.path.realpath(tmp), '<TMP>'),
                (root, '<ROOT>'),
                (os.path.realpath(root), '<ROOT>'),
                (os.path.join(tmp, 'rootlink'), '<TMP>/rootlink'),
            },
            key=lambda pair: -len(pair[0]),
        )

    def text(self, value: str) -> str:
        for raw, marker in self.pairs:
            value = value.replace(raw, marker)
        return value

    def expand(self, value: Any) -> Any:
        if isinstance(value, str):
            for raw, marker in sorted(self.pairs, key=lambda p: (p[1] != '<ROOT>', -len(p[0]))):
                value = value.replace(marker, raw)
            return value
        if isinstance(value, list):
            return [self.expand(v) for v in value]
        if isinstance(value, dict):
            return {k: self.expand(v) for k, v in value.items()}
        return value

    def any(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (list, tuple)):
            return [self.any(v) for v in value]
        if isinstance(value, dict):
            return {str(k): self.any(v) for k, v in value.items()}
        if value is None or isinstance(value, (bool, int, float)):
            return value
        return self.text(repr(value))


def _build(base: str, spec: dict[str, Any], norm: Normaliser) -> None:
    os.makedirs(base, exist_ok=True)
    for rel, value in spec.items():
        path = os.path.join(base, rel)
        if value is None:
            os.makedirs(path, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(value, Link):
            os.symlink(norm.expand(value.target), path)
        elif isinstance(value, Fifo):
            os.mkfifo(path)
        elif isinstance(value, bytes):
            with open(path, 'wb') as f:
                f.write(value)
        else:
            with open(path, 'wb') as f:
                f.write(value.encode('utf-8'))


def _snapshot(base: str, norm: Normaliser) -> dict[str, str]:
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, base)
            if os.path.islink(path):
                out[rel] = '-> ' + norm.text(os.readlink(path))
            elif stat.S_ISFIFO(os.lstat(path).st_mode):
                out[rel] = 'fifo'
            elif os.path.isdir(path):
                out[rel + '/'] = 'dir'
            else:
                with open(path, 'rb') as f:
                    data = f.read()
                if len(data) <= 400:
                    out[rel] = data.decode('utf-8', errors='backslashreplace')
                else:
                    out[rel] = f'<{len(data)} bytes sha256:{hashlib.sha256(data).hexdigest()[:16]}>'
    return out


def _custom_stream_capability(harness: Any, fs_module: Any, root: str, config: dict[str, Any], log: list[Any]) -> Any:
    """A FileSystem whose toolset keeps each written file in memory until the tool closes it.

    The streams have no `fileno`, as the spec allows; every `open_read`/`open_write` call is
    logged with its arguments, root-relative.
    """
    import errno
    import io
    from pathlib import Path

    def rel(resolved: Any) -> str:
        return os.path.relpath(os.fspath(resolved), os.path.realpath(root))

    class MemoryStream(io.BytesIO):
        def __init__(self, path: str, data: bytes, writable: bool) -> None:
            super().__init__(data)
            self._path, self._writable = path, writable

        def fileno(self) -> int:
            raise io.UnsupportedOperation('fileno')

        def close(self) -> None:
            if self._writable and not self.closed:
                with open(self._path, 'wb') as f:
                    f.write(self.getvalue())
            super().close()

    class LoggedToolset(fs_module.FileSystemToolset):  # type: ignore[misc,name-defined]
        def open_read(self, resolved: Any) -> Any:
            log.append(['open_read', rel(resolved)])
            with open(resolved, 'rb') as f:
                return MemoryStream(os.fspath(resolved), f.read(), False)

        def open_write(self, resolved: Any, *, read_back: bool, create: bool) -> Any:
            log.append(['open_write', rel(resolved), read_back, create])
            created = False
            if create:
                try:
                    os.close(os.open(resolved, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
                    created = True
                except FileExistsError:
                    pass
            elif not os.path.exists(resolved):
                raise FileNotFoundError(errno.ENOENT, 'No such file or directory', os.fspath(resolved))
            with open(resolved, 'rb') as f:
                return MemoryStream(os.fspath(resolved), f.read(), True), created

    @dataclasses.dataclass
    class StreamingFileSystem(harness.FileSystem):  # type: ignore[misc,name-defined]
        def get_toolset(self) -> Any:
            return LoggedToolset(
                root_dir=Path(self.root_dir),
                allowed_patterns=self.allowed_patterns,
                denied_patterns=self.denied_patterns,
                protected_patterns=self.protected_patterns,
                max_read_lines=self.max_read_lines,
                max_read_chars=self.max_read_chars,
                max_list_results=self.max_list_results,
                max_search_results=self.max_search_results,
                max_find_results=self.max_find_results,
                id=self.id or 'file_system',
                cwd=None if self.cwd is None else Path(self.cwd),
                content_hashes=self.content_hashes,
                tools=self.tools,
            )

    return StreamingFileSystem(root_dir=root, **config)


_CAPABILITY_ID = re.compile(r'<(\w+):[0-9a-f]+>')


def _event_record(event: Any, norm: Normaliser) -> dict[str, Any]:
    record: dict[str, Any] = {'class': type(event).__name__}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name == 'capability_id' and isinstance(value, str):
            # Ours is stable, `'file_system'` unless given (README, differences from the reference:
            # durable operations need it); the references' is run-local, `<file_system:hex>` (a
            # subclass's named after it): compared as "the capability's id".
            value = '<capability id>' if value == 'file_system' or _CAPABILITY_ID.fullmatch(value) else value
        record[f.name] = norm.any(value)
    return record


def _part_record(part: Any, norm: Normaliser) -> dict[str, Any]:
    """What the model received for one tool call."""
    name = type(part).__name__
    content = part.content
    if name == 'RetryPromptPart':
        outcome, cause = 'retry', 'validation' if not isinstance(content, str) else 'model_retry'
    else:
        retry = getattr(part, 'retry', None)
        outcome = 'retry' if getattr(part, 'outcome', None) == 'retried' or retry is not None else 'ok'
        cause = getattr(retry, 'cause', None)
    if not isinstance(content, str):
        # Validation errors: keep only what does not depend on the pydantic release.
        try:
            content = [
                {'type': e.get('type'), 'loc': list(e.get('loc', ())), 'msg': e.get('msg')}
                for e in content  # type: ignore[union-attr]
            ]
        except (TypeError, AttributeError):
            content = repr(content)
    return {'outcome': outcome, 'cause': cause, 'content': norm.any(content)}


def _tool_defs(info: Any) -> list[dict[str, Any]]:
    return [
        {
            'name': t.name,
            'description': t.description,
            'parameters_json_schema': t.parameters_json_schema,
        }
        for t in sorted(info.function_tools, key=lambda t: t.name)
    ]


def scripted_model(next_call: Callable[[int, Any], tuple[str, dict[str, Any], str] | None]) -> Any:
    """A `FunctionModel` whose step N (the model requests so far, from 0) calls the tool `next_call(N, info)`
    names, `(tool, args, tool_call_id)`, or answers `done` when that is None; it streams the same step
    when event listeners make the run stream."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

    def script(messages: list[Any], info: AgentInfo) -> ModelResponse:
        step = sum(1 for m in messages if isinstance(m, ModelRequest)) - 1
        call = next_call(step, info)
        if call is None:
            return ModelResponse(parts=[TextPart('done')])
        tool, args, call_id = call
        return ModelResponse(parts=[ToolCallPart(tool, args, tool_call_id=call_id)])

    async def stream_script(messages: list[Any], info: AgentInfo):  # type: ignore[no-untyped-def]
        part = script(messages, info).parts[0]
        if isinstance(part, TextPart):
            yield part.content
        else:
            yield {
                0: DeltaToolCall(name=part.tool_name, json_args=json.dumps(part.args), tool_call_id=part.tool_call_id)
            }

    return FunctionModel(script, stream_function=stream_script)


async def _run_direct(
    capability: Any, sc: Scenario, resolve_args: Any, norm: Normaliser, workspace: Any = None
) -> dict[str, Any]:
    """The scenario's calls on the toolset's direct methods (`await toolset.read_file(...)`), outside a run.

    Under the workspace contract each call gets `workspace=`. Direct calls have no run context,
    so no events; `edit_file` takes one pair only, so a call with `replacements` is recorded as
    unsupported. A read-only capability hands out a filtered toolset without the direct methods:
    recorded as such.
    """
    from pydantic_ai.exceptions import ModelRetry

    toolset = capability.get_toolset()
    on = {} if workspace is None else {'workspace': workspace}
    calls: list[dict[str, Any]] = []
    for step, call in enumerate(sc.calls):
        call_id = f'call_{step:02d}'
        args = resolve_args(call.args)
        record: dict[str, Any] = {'id': call_id, 'tool': call.tool, 'args': norm.any(args)}
        method = getattr(toolset, call.tool, None)
        if method is None or 'replacements' in args:
            record.update(outcome='unsupported')
        else:
            try:
                result = await method(**args, **on)
            except ModelRetry as e:
                record.update(outcome='retry', cause='model_retry', content=norm.text(e.message))
            except Exception as e:  # noqa: BLE001 - recorded and compared
                record.update(outcome='error', cause=type(e).__name__, content=norm.text(str(e)))
            else:
                record.update(outcome='ok', cause=None, content=norm.any(result))
        calls.append(record)
    return {'calls': calls, 'events': []}


def _warning_texts(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if 'deprecated' in str(w.message) or 'renamed' in str(w.message)]


def _agent(
    harness: Any, sc: Scenario, contract: str, capability: Any, model: Any, root: str, fs_config: dict[str, Any]
) -> Any:
    """The agent that runs `sc` with `capability` (built from `fs_config`), attached as `sc.attach` says."""
    from pydantic_ai import Agent

    if sc.attach == 'spec':
        capabilities: list[Any] = [{'FileSystem': fs_config}]
        if contract == WORKSPACE:
            capabilities.insert(0, {'LocalWorkspace': root})
        return Agent.from_spec(
            {'model': 'test', 'capabilities': capabilities}, custom_capability_types=[harness.FileSystem]
        )
    if contract == WORKSPACE and sc.attach == 'capability':
        from pydantic_ai.capabilities import LocalWorkspace

        return Agent(model, capabilities=[LocalWorkspace(root), capability], retries=100)
    return Agent(model, capabilities=[capability], retries=100)


def _run_kwargs(sc: Scenario, root: str) -> dict[str, Any]:
    """`workspace=` on the run, for the workspace contract's `run` and `unavailable` attachments."""
    from pydantic_ai.workspaces import LocalWorkspaceBackend, UnavailableWorkspace

    if sc.attach == 'run':
        return {'workspace': LocalWorkspaceBackend(root)}
    if sc.attach == 'unavailable':
        return {'workspace': UnavailableWorkspace('the sandbox was shut down')}
    return {}


def _listen(
    agent: Any, fs_module: Any, sc: Scenario, root: str, norm: Normaliser, events: list[dict[str, Any]]
) -> None:
    """Record the run's filesystem events; meddle with and cancel changes as `sc` says."""
    from pydantic_ai import CapabilityEvent

    @agent.on_event(CapabilityEvent)
    async def record(ctx: Any, event: Any) -> None:  # pyright: ignore[reportUnusedFunction]
        if isinstance(event, CapabilityEvent) and event.kind.startswith('file_system.'):
            events.append(_event_record(event, norm))

    if sc.meddle:
        pending = dict(sc.meddle)

        @agent.on_event(fs_module.FileChangeRequestEvent)
        async def meddle(ctx: Any, event: Any) -> None:  # pyright: ignore[reportUnusedFunction]
            action = pending.pop(event.path, None)
            if action is None:
                return
            target = os.path.join(root, event.path)
            if action[0] == 'write':
                with open(target, 'w') as f:
                    f.write(action[1])
            elif action[0] == 'delete':
                os.unlink(target)
            elif action[0] == 'mkdir':
                os.mkdir(target)
            elif action[0] == 'symlink':
                if os.path.lexists(target):
                    os.unlink(target)
                os.symlink(norm.expand(action[1]), target)

    if sc.cancel is not None:

        @agent.on_event(fs_module.FileChangeRequestEvent)
        async def veto(ctx: Any, event: Any) -> None:  # pyright: ignore[reportUnusedFunction]
            if sc.cancel == 'raise':
                raise RuntimeError('listener refused by raising')
            if sc.cancel is True:
                event.cancel()
            else:
                event.cancel(sc.cancel)


async def run_scenario(module: str, sc: Scenario, *, contract: str = DOCUMENT, direct: bool = False) -> dict[str, Any]:
    from pydantic_ai.messages import ModelRequest

    if module == 'pydantic_ai_harness' and any(c.tool in ('list_files', 'grep') for c in sc.calls):
        if shutil.which('rg') is None:
            return {'skipped': 'the reference needs rg on PATH for list_files/grep'}
    harness = importlib.import_module(module)
    fs_module = importlib.import_module(f'{module}.filesystem')
    workspace = contract == WORKSPACE

    tmp = os.path.realpath(tempfile.mkdtemp(prefix='fs062-' if workspace else 'fscompat-'))
    root = os.path.join(tmp, 'root')
    norm = Normaliser(tmp, root)
    out: dict[str, Any] = {}

    def finish() -> dict[str, Any]:
        if workspace:
            out['warnings'] = [norm.text(w) for w in _warning_texts(caught)]
        if 'construct_error' not in out:
            out['disk'] = _snapshot(root, norm)
            if sc.outside:
                out['outside'] = _snapshot(os.path.join(tmp, 'outside'), norm)
        return out

    try:
        if not sc.root_absent:
            _build(root, sc.tree, norm)
        if sc.outside:
            _build(os.path.join(tmp, 'outside'), sc.outside, norm)

        config = dict(sc.config)
        root_arg = root
        if sc.root_via_link:
            root_arg = os.path.join(tmp, 'rootlink')
            os.symlink(root, root_arg)
        if 'cwd' in config:
            config['cwd'] = os.path.join(root, config['cwd'])
        fs_config = config if workspace else {'root_dir': root_arg, **config}
        step_calls: list[tuple[str, dict[str, Any], str]] = []
        tool_defs: list[Any] = []

        def resolve_args(args: dict[str, Any]) -> dict[str, Any]:
            resolved: dict[str, Any] = {}
            for key, value in args.items():
                if isinstance(value, Hash):
                    with open(os.path.join(root, value.path), 'rb') as f:
                        value = _content_hash(f.read())
                resolved[key] = norm.expand(value)
            return resolved

        def next_call(step: int, info: Any) -> tuple[str, dict[str, Any], str] | None:
            if step == 0 and sc.schemas:
                tool_defs.extend(_tool_defs(info))
            if step >= len(sc.calls):
                return None
            call = sc.calls[step]
            call_id = f'call_{step:02d}'
            args = resolve_args(call.args)
            step_calls.append((call.tool, args, call_id))
            return call.tool, args, call_id

        # The workspace contract records the deprecation warnings given; the document's runs leave them be.
        recording = warnings.catch_warnings(record=True) if workspace else contextlib.nullcontext([])
        with recording as caught:
            if workspace:
                warnings.simplefilter('always')
            try:
                stream_log: list[Any] = []
                if sc.custom_streams:
                    capability = _custom_stream_capability(harness, fs_module, root_arg, config, stream_log)
                    out['stream_log'] = stream_log
                else:
                    capability = harness.FileSystem(**fs_config)
                if direct and not workspace:
                    out.update(await _run_direct(capability, sc, resolve_args, norm))
                    return finish()
                model = scripted_model(next_call)
                agent = _agent(harness, sc, contract, capability, model, root, fs_config)
            except Exception as e:  # noqa: BLE001 - recorded and compared
                out['construct_error'] = {'type': type(e).__name__, 'message': norm.text(str(e))}
                return finish()

            if direct:
                from pydantic_ai.workspaces import LocalWorkspaceBackend

                out.update(await _run_direct(capability, sc, resolve_args, norm, LocalWorkspaceBackend(root)))
                return finish()

            events: list[dict[str, Any]] = []
            _listen(agent, fs_module, sc, root, norm, events)
            try:
                result = await agent.run('go', model=model, retries=100, **(_run_kwargs(sc, root) if workspace else {}))
                messages = result.all_messages()
            except Exception as e:  # noqa: BLE001 - recorded and compared
                out['run_error'] = {'type': type(e).__name__, 'message': norm.text(str(e))}
                messages = []

        returned: dict[str, dict[str, Any]] = {}
        for message in messages:
            if isinstance(message, ModelRequest):
                for part in message.parts:
                    call_id = getattr(part, 'tool_call_id', None)
                    if call_id is not None:
                        returned[call_id] = _part_record(part, norm)
        out['calls'] = [
            {'id': call_id, 'tool': tool, 'args': norm.any(args), **returned.get(call_id, {'outcome': 'missing'})}
            for tool, args, call_id in step_calls
        ]
        out['events'] = events
        if sc.schemas:
            out['tools'] = tool_defs
        return finish()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('module', choices=['pydantic_ai_harness', 'pydantic_ai_harness_rs'])
    parser.add_argument('names', nargs='*', help='scenarios to run (default: all of the contract)')
    parser.add_argument(
        '--contract', default=DOCUMENT, choices=list(SCENARIOS), help='which table, and how the tree is given'
    )
    parser.add_argument('--backend', default='asyncio', choices=['asyncio', 'trio'])
    parser.add_argument(
        '--direct',
        action='store_true',
        help="call the toolset's methods directly instead of through an Agent run (needed for trio: "
        'an Agent run is asyncio-only)',
    )
    parser.add_argument('--list', action='store_true', help='print the scenario names and exit')
    args = parser.parse_intermixed_args(argv)
    table = SCENARIOS[args.contract]
    if args.list:
        print('\n'.join(table))
        return 0
    names = args.names or list(table)

    import anyio

    async def run_all() -> dict[str, Any]:
        results: dict[str, Any] = {}
        for name in names:
            try:
                results[name] = await run_scenario(args.module, table[name], contract=args.contract, direct=args.direct)
            except Exception as e:  # noqa: BLE001 - one broken scenario must not hide the others
                results[name] = {'runner_error': f'{type(e).__name__}: {e}'}
        return results

    results = anyio.run(run_all, backend=args.backend)
    json.dump(results, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
