"""Reads, hashes and walks under the workspace contract, run against pydantic-ai-harness 0.62.0 and ours.

Usage: `python fs062_read_scenarios.py ref|ours`

`ref` drives 0.62.0's `FileSystemToolset` directly (`toolset.read_file(path, workspace=...)` on a
`LocalWorkspaceBackend`); `ours` drives `_core.FileSystemCore(..., contract='workspace')` and the
`_content` wrapper with the same limits (the agent-level wiring is tested elsewhere). Both build the
same tree in a fresh temp dir and print one JSON object `{call: result}` on stdout, where a result
is `['ok', text]`, `['ok', [header, media_type, sha256 of the bytes]]` for an image or PDF, or
`['retry', message]`. No pytest dependency: the same file runs in the reference's venv.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

PNG = b'\x89PNG\r\n\x1a\n' + bytes(61)
TREE: dict[str, bytes] = {
    'pic.png': PNG,
    'photo.jpg': b'\xff\xd8\xff\xe0' + bytes(20),
    'anim.gif': b'GIF89a' + bytes(10),
    'x.webp': b'RIFF\x00\x00\x00\x00WEBPVP8 ',
    'doc.pdf': b'%PDF-1.4\nhello\n',
    'misnamed.txt': PNG,
    'bin.dat': bytes(range(11)),
    'long.bin': bytes(range(100)),
    'a.zip': b'PK\x00\x03',
    'big.png': b'\x89PNG\r\n\x1a\n' + bytes(5_000_001 - 8),
    'cr.txt': b'a\rb\rc',
    'crlf.txt': b'x\r\ny\n\x0cz\n',
    'bad.txt': b'bad \xff\xfe\nok TODO\n',
    'empty.txt': b'',
    'seps.txt': 'one\u2028two\x1cthree\nTODO four\n'.encode(),
    '.env': b'SECRET=1\n',
    '.hidden/inner.txt': b'TODO hidden\n',
    '.github/ci.yml': b'TODO gh\n',
    'src/main.py': b'TODO main\n',
    'src/.cache.py': b'TODO cached\n',
    'd/x.txt': b'TODO x\nTODO y\n',
    'd/y.txt': b'TODO z\n',
}
LINKS = {'out.txt': '<OUTSIDE>/secret.txt', 'in.txt': 'd/y.txt'}

READS = [*TREE, 'out.txt', 'in.txt']
INFOS = ['cr.txt', 'crlf.txt', 'bad.txt', 'bin.dat', 'doc.pdf', 'pic.png', 'seps.txt', 'empty.txt']
LISTS = ['.', 'd', '.hidden', 'src']
FINDS = [('*', '.'), ('.*', '.'), ('.github/*', '.'), ('*.txt', 'd'), ('*', '.hidden'), ('*.py', 'src')]
SEARCHES = [
    ('TODO', '.', None),
    ('TODO', '.', '.github/*'),
    ('TODO', 'src', None),
    ('TODO', '.hidden', None),
    ('TODO', 'in.txt', None),
    ('TODO', 'seps.txt', None),
]
RIPGREP_LISTS = [('.', None), ('.', '.github/*'), ('.', '*.txt'), ('.hidden', None)]
GREPS = [('TODO', '.', None), ('TODO', '.', '.github/*'), ('TODO', '.hidden', None), ('TODO', 'in.txt', None)]
CAPS = {'max_list_results': 2, 'max_search_results': 2, 'max_find_results': 2}


def build(root: str, outside: str) -> None:
    for name, data in TREE.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(data)
    with open(os.path.join(outside, 'secret.txt'), 'w') as f:
        f.write('TODO outside\n')
    for name, target in LINKS.items():
        os.symlink(target.replace('<OUTSIDE>', outside), os.path.join(root, name))


def shown(result: Any) -> list[Any]:
    if isinstance(result, str):
        return ['ok', result]
    header, content = result
    return ['ok', [header, content.media_type, hashlib.sha256(content.data).hexdigest()[:12]]]


async def calls(tools: Any, prefix: str, out: dict[str, Any], *, full: bool) -> None:
    async def record(key: str, call: Any) -> None:
        try:
            out[prefix + key] = shown(await call())
        except Exception as e:  # a ModelRetry, under either package
            if type(e).__name__ != 'ModelRetry':
                raise
            out[prefix + key] = ['retry', str(e)]

    if full:
        for path in READS:
            await record(f'read {path}', lambda p=path: tools.read_file(p))
        await record('read crlf.txt offset 1 limit 1', lambda: tools.read_file('crlf.txt', offset=1, limit=1))
        await record('read crlf.txt offset -1', lambda: tools.read_file('crlf.txt', offset=-1))
        await record('read crlf.txt limit 0', lambda: tools.read_file('crlf.txt', limit=0))
        await record('read crlf.txt offset 9', lambda: tools.read_file('crlf.txt', offset=9))
        for path in INFOS:
            await record(f'info {path}', lambda p=path: tools.file_info(p))
    for path in LISTS:
        await record(f'list {path}', lambda p=path: tools.list_directory(p))
    for pattern, path in FINDS:
        await record(f'find {pattern} in {path}', lambda a=pattern, p=path: tools.find_files(a, path=p))
    for pattern, path, glob in SEARCHES:
        await record(
            f'search {pattern} in {path} glob {glob}',
            lambda a=pattern, p=path, g=glob: tools.search_files(a, path=p, include_glob=g),
        )
    for path, glob in RIPGREP_LISTS:
        await record(f'list_files {path} glob {glob}', lambda p=path, g=glob: tools.list_files(p, glob=g))
    for pattern, path, glob in GREPS:
        await record(
            f'grep {pattern} in {path} glob {glob}', lambda a=pattern, p=path, g=glob: tools.grep(a, path=p, glob=g)
        )


class Reference:
    """0.62.0's toolset, each call given the workspace."""

    def __init__(self, root: str, **limits: int) -> None:
        from pydantic_ai.workspaces import LocalWorkspaceBackend
        from pydantic_ai_harness.filesystem import FileSystem

        self._toolset = FileSystem(read_only_patterns=[], **limits).get_toolset()
        self._workspace = LocalWorkspaceBackend(root)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._toolset, name)
        return lambda *args, **kwargs: method(*args, workspace=self._workspace, **kwargs)


class Ours:
    """Our core under the workspace contract, with 0.62.0's defaults and no patterns (`tests/workspace_core.py`)."""

    def __init__(self, root: str, **limits: int) -> None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from pydantic_ai_harness_rs import _core
        from workspace_core import core, read

        self._core = core(root, **limits)
        self._read = read
        self._cancel = _core.CancelToken()
        self._retryable = _core.RetryableError

    async def read_file(self, path: str, *, offset: int = 0, limit: int | None = None) -> Any:
        return self._retry(self._read, self._core, path, offset, limit)

    async def file_info(self, path: str) -> str:
        return self._call(self._core.file_info, path).text

    async def list_directory(self, path: str) -> str:
        return self._call(self._core.list_directory, path).text

    async def find_files(self, pattern: str, *, path: str) -> str:
        return self._call(self._core.find_files, pattern, path).text

    async def search_files(self, pattern: str, *, path: str, include_glob: str | None) -> str:
        return self._call(self._core.search_files, pattern, path, include_glob).text

    async def list_files(self, path: str, *, glob: str | None) -> str:
        return self._call(self._core.list_files, path, glob).text

    async def grep(self, pattern: str, *, path: str, glob: str | None) -> str:
        return self._call(self._core.grep, pattern, path, glob, None, False, False, 0).text

    def _call(self, fn: Any, *args: Any) -> Any:
        return self._retry(fn, *args, cancel=self._cancel)

    def _retry(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from pydantic_ai.exceptions import ModelRetry

        try:
            return fn(*args, **kwargs)
        except self._retryable as e:
            raise ModelRetry(str(e)) from e


async def main(which: str) -> None:
    make = Reference if which == 'ref' else Ours
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root, outside = os.path.join(tmp, 'root'), os.path.join(tmp, 'outside')
        os.makedirs(root)
        os.makedirs(outside)
        build(root, outside)
        await calls(make(root), '', out, full=True)
        await calls(make(root, **CAPS), 'capped ', out, full=False)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == '__main__':
    asyncio.run(main(sys.argv[1]))
