"""`FileSystem(replace_all=True)` (issue 9, section 2): `edit_file` may replace every occurrence.

Off by default, where the tool schema stays the documented one (tests/compat compares it with
the references'). On, `edit_file` and each `replacements` item take `replace_all`; the matching
is the core's (`write::apply_replacements`), on the host and on a non-local workspace alike.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs.filesystem import FileEditedEvent, FileSystem

from tests.filesystem.conftest import REFERENCE
from tests.memory_workspace import MemoryWorkspace
from tests.scripted import RETRY, call, run_tools

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(REFERENCE, reason='0.36.0 has no replace_all')]

FLAG = {'default': False, 'type': 'boolean'}
TOP_FLAG = {**FLAG, 'description': 'Replace every occurrence of old_text instead of requiring exactly one.'}


def h(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()[:12]


def edited(content: str) -> str:
    return f'Edited f.txt. [hash:{h(content)}]'


def edit_schema(tools: list[Any]) -> dict[str, Any]:
    [tool] = [t for t in tools if t.name == 'edit_file']
    return tool.parameters_json_schema


async def edit_schemas(tmp_path: Path, content_hashes: bool, replace_all: bool) -> tuple[Any, Any]:
    """`edit_file`'s schema with `replace_all` left out and given, from a run on a root holding `f.txt`."""
    (tmp_path / 'f.txt').write_text('a a\n')
    _, default = await call([FileSystem(root_dir=tmp_path, content_hashes=content_hashes)], 'file_info', path='f.txt')
    _, given = await call(
        [FileSystem(root_dir=tmp_path, content_hashes=content_hashes, replace_all=replace_all)],
        'file_info',
        path='f.txt',
    )
    return edit_schema(default.tools), edit_schema(given.tools)


def item_properties(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema['properties']['replacements']['anyOf'][0]['items']['$ref']
    return schema['$defs'][ref.rsplit('/', 1)[1]]['properties']


@pytest.mark.parametrize('content_hashes', [True, False])
async def test_off_by_default_the_schema_is_the_documented_one(tmp_path: Path, content_hashes: bool) -> None:
    default, off = await edit_schemas(tmp_path, content_hashes, replace_all=False)
    assert 'replace_all' not in json.dumps(default)
    assert off == default
    # The argument does not exist: a model that sends it is told so, and nothing is written.
    result, _ = await call(
        [FileSystem(root_dir=tmp_path, content_hashes=content_hashes)],
        'edit_file',
        path='f.txt',
        old_text='a',
        new_text='b',
        replace_all=True,
    )
    assert result.startswith(RETRY)
    assert (tmp_path / 'f.txt').read_text() == 'a a\n'


@pytest.mark.parametrize('content_hashes', [True, False])
async def test_on_the_argument_is_offered_at_the_top_and_per_item(tmp_path: Path, content_hashes: bool) -> None:
    documented, schema = await edit_schemas(tmp_path, content_hashes, replace_all=True)
    assert schema['properties']['replace_all'] == TOP_FLAG
    assert item_properties(schema) == {**item_properties(documented), 'replace_all': FLAG}
    rest = {k: v for k, v in schema['properties'].items() if k not in ('replace_all', 'replacements', 'old_text')}
    assert rest == {k: v for k, v in documented['properties'].items() if k not in ('replacements', 'old_text')}


async def test_replace_all_replaces_every_occurrence(tmp_path: Path) -> None:
    (tmp_path / 'f.txt').write_text('foo = 1\nbar(foo)\nfoo\n')
    t = await run_tools(
        [FileSystem(root_dir=tmp_path, replace_all=True)],
        [('edit_file', {'path': 'f.txt', 'old_text': 'foo', 'new_text': 'baz', 'replace_all': True})],
    )
    new = 'baz = 1\nbar(baz)\nbaz\n'
    assert t.results == [f'Edited f.txt. [hash:{h(new)}]']
    assert (tmp_path / 'f.txt').read_bytes() == new.encode()
    [edited] = t.of(FileEditedEvent)
    assert edited.diff == (
        '--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-foo = 1\n-bar(foo)\n-foo\n+baz = 1\n+bar(baz)\n+baz'
    )


async def test_replace_all_refusals_are_the_documented_ones(tmp_path: Path) -> None:
    (tmp_path / 'f.txt').write_text('a a\n')
    t = await run_tools(
        [FileSystem(root_dir=tmp_path, replace_all=True)],
        [
            ('edit_file', {'path': 'f.txt', 'old_text': 'zzz', 'new_text': 'b', 'replace_all': True}),
            ('edit_file', {'path': 'f.txt', 'old_text': '', 'new_text': 'b', 'replace_all': True}),
            ('edit_file', {'path': 'f.txt', 'old_text': 'a', 'new_text': 'b'}),  # the flag off: still exactly once
        ],
    )
    assert t.results == [
        RETRY + 'old_text not found in f.txt. No changes were written.',
        RETRY + 'old_text is empty; old_text must be the exact text to replace.',
        RETRY + 'old_text found 2 times in f.txt. Include more surrounding context to make the match unique. '
        'No changes were written.',
    ]
    assert t.events == []
    assert (tmp_path / 'f.txt').read_text() == 'a a\n'


async def test_a_replace_all_that_changes_nothing_says_so(tmp_path: Path) -> None:
    """Issue 19: every occurrence replaced by itself leaves the bytes as they were: no `Edited`, no event."""
    (tmp_path / 'f.txt').write_bytes(b'foo\r\nfoo\r\n')
    t = await run_tools(
        [FileSystem(root_dir=tmp_path, replace_all=True)],
        [('edit_file', {'path': 'f.txt', 'old_text': 'foo\n', 'new_text': 'foo\r\n', 'replace_all': True})],
    )
    assert t.results == [
        RETRY + "The edit leaves f.txt exactly as it is (new_text is what it replaces once the file's line "
        'endings and byte order mark are kept). No changes were written.'
    ]
    assert t.events == []
    assert (tmp_path / 'f.txt').read_bytes() == b'foo\r\nfoo\r\n'


async def test_each_batch_item_has_its_own_flag(tmp_path: Path) -> None:
    (tmp_path / 'f.txt').write_text('x-x-z\n')
    replacements = [
        {'old_text': 'x', 'new_text': 'y', 'replace_all': True},
        {'old_text': 'y-y-z', 'new_text': 'done'},
    ]
    t = await run_tools(
        [FileSystem(root_dir=tmp_path, replace_all=True)],
        [
            ('edit_file', {'path': 'f.txt', 'replacements': replacements}),
            (
                'edit_file',
                {
                    'path': 'f.txt',
                    'replacements': [{'old_text': 'd', 'new_text': 'D'}, {'old_text': 'o', 'new_text': 'O'}],
                },
            ),
        ],
    )
    assert t.results == [
        edited('done\n'),
        edited('DOne\n'),
    ]
    assert (tmp_path / 'f.txt').read_bytes() == b'DOne\n'


async def test_replace_all_on_a_local_workspace(tmp_path: Path) -> None:
    (tmp_path / 'f.txt').write_text('a.a\n')
    t = await run_tools(
        [LocalWorkspace(tmp_path), FileSystem(replace_all=True)],
        [('edit_file', {'path': 'f.txt', 'old_text': 'a', 'new_text': 'b', 'replace_all': True})],
    )
    assert t.results == [edited('b.b\n')]
    assert (tmp_path / 'f.txt').read_bytes() == b'b.b\n'
    # 0.62.0's description of the tool, with the argument added.
    schema = edit_schema(t.tools)
    assert schema['properties']['path']['description'] == 'File path relative to the working directory.'
    assert schema['properties']['replace_all'] == TOP_FLAG
    assert item_properties(schema)['replace_all'] == FLAG


async def test_replace_all_on_a_remote_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    backend = MemoryWorkspace({'f.txt': 'a.a\n'})
    t = await run_tools(
        [FileSystem(replace_all=True)],
        [
            ('edit_file', {'path': 'f.txt', 'old_text': 'a', 'new_text': 'b', 'replace_all': True}),
            ('edit_file', {'path': 'f.txt', 'old_text': 'b', 'new_text': 'c'}),
        ],
        workspace=Workspace(backend),
    )
    assert t.results == [
        edited('b.b\n'),
        RETRY + 'old_text found 2 times in f.txt. Include more surrounding context to make the match unique. '
        'No changes were written.',
    ]
    assert backend.files['/ws/f.txt'] == b'b.b\n'
