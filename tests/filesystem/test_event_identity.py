"""Event classes: ours when pydantic-ai-harness is absent, its very classes when it is installed."""

from __future__ import annotations

import importlib.util

import pydantic_ai_harness_rs.filesystem as ours
import pytest

NAMES = [
    'FileChangeRequestEvent', 'FileReadEvent', 'DirectoryListedEvent', 'FileWrittenEvent', 'FileEditedEvent',
    'DirectoryCreatedEvent', 'FilesSearchedEvent',
]
HARNESS = importlib.util.find_spec('pydantic_ai_harness') is not None


@pytest.mark.skipif(HARNESS, reason='pydantic-ai-harness is installed here (tests/compat covers that case)')
def test_own_classes_with_the_documented_kinds() -> None:
    kinds = {name: getattr(ours, name)(**_fields(name)).kind for name in NAMES}
    assert kinds == {
        'FileChangeRequestEvent': 'file_system.file_change_request',
        'FileReadEvent': 'file_system.file_read',
        'DirectoryListedEvent': 'file_system.directory_listed',
        'FileWrittenEvent': 'file_system.file_written',
        'FileEditedEvent': 'file_system.file_edited',
        'DirectoryCreatedEvent': 'file_system.directory_created',
        'FilesSearchedEvent': 'file_system.files_searched',
    }
    assert all(getattr(ours, n).__module__ == 'pydantic_ai_harness_rs.filesystem._events' for n in NAMES)
    assert ours.FileChangeRequestEvent.event_dispatch == 'immediate'
    assert ours.FileReadEvent.event_dispatch == 'stream'
    assert issubclass(ours.FileEditedEvent, ours.FileWrittenEvent)
    event = ours.FileChangeRequestEvent(**_fields('FileChangeRequestEvent'))
    event.cancel('first')
    event.cancel()
    assert (event.cancelled, event.cancel_reason) == (True, 'first')


@pytest.mark.skipif(not HARNESS, reason='pydantic-ai-harness is not installed here (tests/compat covers that case)')
def test_harness_classes_are_reused() -> None:
    import pydantic_ai_harness.filesystem as theirs

    assert all(getattr(ours, n) is getattr(theirs, n) for n in NAMES)


def _fields(name: str) -> dict[str, object]:
    base: dict[str, object] = {'path': 'p', 'root_dir': '/r'}
    extra: dict[str, dict[str, object]] = {
        'FileChangeRequestEvent': {'operation': 'write', 'diff': '', 'truncated': False},
        'FileReadEvent': {'content_hash': 'h'},
        'DirectoryListedEvent': {'entry_count': 1},
        'FileWrittenEvent': {'content_hash': 'h'},
        'FileEditedEvent': {'content_hash': 'h', 'diff': '', 'truncated': False},
        'DirectoryCreatedEvent': {},
        'FilesSearchedEvent': {'pattern': '*', 'search': 'find', 'match_count': 0, 'truncated': False},
    }
    return {**base, **extra[name]}
