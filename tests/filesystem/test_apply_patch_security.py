"""The state directory `.pydantic-ai-harness/` and forged patch journals (issue 22, security).

A model with FileSystem tools alone could write a journal into `.pydantic-ai-harness/patch/`
(with `write_file`/`create_directory` or one `apply_patch`), and the next `apply_patch` or the next
FileSystem on the root "recovered" it: read-only files such as `.git/config` replaced, files
deleted, no event, no approval. Now (a) no change tool reaches the state directory under either
contract whatever `read_only_patterns` says, and (b) recovery drops any journal naming a path the
FileSystem would refuse to change, a path that is not plain, or a staged file whose bytes are not
the ones it recorded (a journal forged by a shell command, which (a) cannot stop).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai_harness_rs.filesystem import DEFAULT_TOOL_NAMES, FileSystem

from tests.filesystem.conftest import beyond_reference
from tests.scripted import RETRY, run_tools

pytestmark = beyond_reference('0.36.0 has no apply_patch')

TOOLS = [*DEFAULT_TOOL_NAMES, 'apply_patch']
JOURNAL = '.pydantic-ai-harness/patch/q'
PROTECTED = {'.git/config': b'[core]\n', '.git/hooks/pre-commit': b'#!/bin/sh\n', '.env': b'SECRET=1\n'}


def refusal(path: str) -> str:
    return (
        f"{RETRY}Path '{path}' is inside '.pydantic-ai-harness', the harness's own state directory "
        '(patch journals, approval records, shell jobs), which file tools never change. '
        'No changes were written. Use a path outside it.'
    )


def patch(*lines: str) -> str:
    return '\n'.join(['*** Begin Patch', *lines, '*** End Patch'])


def journal(*entries: tuple[str, bytes | None], dirs: tuple[str, ...] = ()) -> str:
    """A journal in journal.rs's format: each target with the SHA-256 of its staged content."""
    lines = ['pydantic-ai-harness patch journal 2']
    for i, (rel, new) in enumerate(entries):
        lines.append(f'f {i} {rel.encode().hex()} {hashlib.sha256(new).hexdigest() if new is not None else "-"}')
    lines += [f'd {d.encode().hex()}' for d in dirs]
    return '\n'.join([*lines, 'end', ''])


def tree(root: Path) -> Path:
    for rel, data in PROTECTED.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / 'AGENTS.md').write_bytes(b'# Agents\n')
    return root


def capabilities(root: Path, contract: str, **options: Any) -> list[Any]:
    if contract == 'document':
        return [FileSystem(root_dir=root, tools=TOOLS, **options)]
    return [LocalWorkspace(root), FileSystem(tools=TOOLS, **options)]


def untouched(root: Path) -> None:
    for rel, data in PROTECTED.items():
        assert (root / rel).read_bytes() == data, rel
    assert (root / 'AGENTS.md').read_bytes() == b'# Agents\n'


FORGED = journal(('.git/config', b'[core]\n\tfsmonitor = touch PWNED\n'), ('.env', b'X=2\n'), ('AGENTS.md', None))
ATTACK = patch(
    f'*** Add File: {JOURNAL}/new-0',
    '+[core]',
    '+\tfsmonitor = touch PWNED',
    f'*** Add File: {JOURNAL}/new-1',
    '+X=2',
    f'*** Add File: {JOURNAL}/journal',
    *(f'+{line}' for line in FORGED.splitlines()),
)


@pytest.mark.parametrize('contract', ['document', 'workspace'])
@pytest.mark.parametrize('read_only_patterns', [None, []])
async def test_no_change_tool_reaches_the_state_directory(
    tmp_path: Path, contract: str, read_only_patterns: list[str] | None
) -> None:
    root = tree(tmp_path)
    state = root / '.pydantic-ai-harness' / 'approvals'
    state.mkdir(parents=True)
    (state / 'r.json').write_bytes(b'{}\n')
    options = {} if read_only_patterns is None else {'read_only_patterns': read_only_patterns}
    t = await run_tools(
        capabilities(root, contract, **options),
        [
            ('write_file', {'path': f'{JOURNAL}/journal', 'content': FORGED}),
            ('create_directory', {'path': '.pydantic-ai-harness'}),
            ('create_directory', {'path': 'sub/.Pydantic-AI-Harness'}),
            ('edit_file', {'path': '.pydantic-ai-harness/approvals/r.json', 'old_text': '{}', 'new_text': '[]'}),
            ('apply_patch', {'input': ATTACK}),
            ('apply_patch', {'input': patch('*** Delete File: .pydantic-ai-harness/approvals/r.json')}),
            ('apply_patch', {'input': patch('*** Update File: AGENTS.md', '*** Move to: .pydantic-ai-harness/a')}),
            (
                'apply_patch',
                {'input': patch('*** Update File: .pydantic-ai-harness/approvals/r.json', '*** Move to: r.json')},
            ),
        ],
    )
    assert all(r.startswith(RETRY) for r in t.results), t.results
    if read_only_patterns == []:
        # No pattern guards it: the state directory's own refusal, for every path and tool.
        assert t.results[:4] == [
            refusal(f'{JOURNAL}/journal'),
            refusal('.pydantic-ai-harness'),
            refusal('sub/.Pydantic-AI-Harness'),
            refusal('.pydantic-ai-harness/approvals/r.json'),
        ]
    assert sorted(p.relative_to(state.parent).as_posix() for p in state.parent.rglob('*')) == [
        'approvals',
        'approvals/r.json',
    ]
    assert (state / 'r.json').read_bytes() == b'{}\n'
    assert not (root / 'sub').exists() and not (root / 'r.json').exists()
    untouched(root)


@pytest.mark.parametrize('contract', ['document', 'workspace'])
async def test_the_probes_attack_changes_no_protected_file(tmp_path: Path, contract: str) -> None:
    root = tree(tmp_path)
    calls: list[tuple[str, dict[str, Any]]] = [
        ('create_directory', {'path': JOURNAL}),
        ('write_file', {'path': f'{JOURNAL}/new-0', 'content': '[core]\n\tfsmonitor = touch PWNED\n'}),
        ('write_file', {'path': f'{JOURNAL}/new-1', 'content': 'X=2\n'}),
        ('write_file', {'path': f'{JOURNAL}/journal', 'content': FORGED}),
        ('apply_patch', {'input': ATTACK}),
        ('apply_patch', {'input': patch('*** Add File: trigger.txt', '+x')}),
    ]
    t = await run_tools(capabilities(root, contract), calls)
    assert t.results[-1].startswith('Applied patch to 1 file:'), t.results
    assert all(r.startswith(RETRY) for r in t.results[:-1]), t.results
    untouched(root)
    FileSystem(root_dir=root, tools=TOOLS).get_toolset()  # the next start
    untouched(root)


def forge(root: Path, text: str, staged: dict[str, bytes]) -> Path:
    """A journal written straight to disk, as a shell command could."""
    tx = root / '.pydantic-ai-harness' / 'patch' / '1-1-1'
    tx.mkdir(parents=True)
    (tx / 'lock').write_bytes(b'')
    for name, data in staged.items():
        (tx / name).write_bytes(data)
    (tx / 'journal').write_text(text)
    return tx


EVIL = b'[core]\n\tfsmonitor = touch PWNED\n'


@pytest.mark.parametrize(
    ('text', 'staged'),
    [
        pytest.param(journal(('.git/config', EVIL)), {'new-0': EVIL}, id='read-only target'),
        pytest.param(journal(('AGENTS.md', b'x\n'), ('.git/hooks/pre-commit', None)), {'new-0': b'x\n'}, id='delete'),
        pytest.param(journal(('AGENTS.md', b'x\n')), {'new-0': b'other\n'}, id='staged bytes not recorded'),
        pytest.param(
            journal(('AGENTS.md', b'x\n'), ('../outside', b'x\n')), {'new-0': b'x\n', 'new-1': b'x\n'}, id='dotdot'
        ),
        pytest.param(journal(('AGENTS.md', None), ('/tmp/abs', None)), {}, id='absolute'),
        pytest.param(journal(('AGENTS.md', None), dirs=('.git/hooks/x',)), {}, id='directory in read-only'),
        pytest.param(journal(('link/config', EVIL)), {'new-0': EVIL}, id='symlinked parent'),
        pytest.param(journal(('.pydantic-ai-harness/x', None), ('AGENTS.md', None)), {}, id='state dir'),
    ],
)
@pytest.mark.parametrize('trigger', ['start', 'apply_patch'])
async def test_a_forged_journal_is_dropped_unapplied(
    tmp_path: Path, text: str, staged: dict[str, bytes], trigger: str
) -> None:
    root = tree(tmp_path / 'root')
    os.symlink('.git', root / 'link')
    tx = forge(root, text, staged)
    if trigger == 'start':
        FileSystem(root_dir=root, tools=TOOLS).get_toolset()
    else:
        t = await run_tools(
            [FileSystem(root_dir=root, tools=TOOLS)], [('apply_patch', {'input': patch('*** Add File: t.txt', '+t')})]
        )
        assert t.results[0].startswith('Applied patch to 1 file:'), t.results
    untouched(root)
    assert not tx.exists()
    assert not (tmp_path / 'outside').exists() and not (root / '.git' / 'hooks' / 'x').exists()


async def test_a_genuine_journal_is_still_finished(tmp_path: Path) -> None:
    root = tree(tmp_path)
    forge(
        root,
        journal(('AGENTS.md', b'# New\n'), ('made/f.txt', b'f\n'), dirs=('made',)),
        {'new-0': b'# New\n', 'new-1': b'f\n'},
    )
    FileSystem(root_dir=root, tools=TOOLS).get_toolset()
    assert (root / 'AGENTS.md').read_bytes() == b'# New\n'
    assert (root / 'made' / 'f.txt').read_bytes() == b'f\n'
    assert list((root / '.pydantic-ai-harness' / 'patch').iterdir()) == []
