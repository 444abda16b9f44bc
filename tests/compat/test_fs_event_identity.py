"""FileSystem events: one class identity with the reference, or the same contract without it.

DESIGN.md, 'Event classes: one identity': when `pydantic-ai-harness` is installed our package
emits *its* event classes, so a listener written against
`pydantic_ai_harness.filesystem.FileChangeRequestEvent` receives our events; otherwise ours
defines classes with the same kinds, fields and behaviour.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import HERE, OURS_MODULE
from fs_events_probe import EVENT_NAMES

PROBE = HERE / 'fs_events_probe.py'

pytestmark = pytest.mark.compat


def _probe(python: Path | str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    import os

    proc = subprocess.run(
        [str(python), str(PROBE), *args], capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})}
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope='session')
def reference_events(reference_python: Path) -> dict[str, Any]:
    return _probe(reference_python, 'describe', 'pydantic_ai_harness')


def test_without_the_reference_ours_defines_the_same_events(
    ours_python: str, reference_events: dict[str, Any]
) -> None:
    """Kinds, dispatch, bases, fields and defaults, constants: equal to 0.36.0's, defined by ours."""
    if subprocess.run([ours_python, '-c', 'import pydantic_ai_harness'], capture_output=True).returncode == 0:
        pytest.skip('pydantic_ai_harness is importable here, so ours reuses its classes (tested below)')
    ours = _probe(ours_python, 'describe', OURS_MODULE)
    for name in EVENT_NAMES:
        assert ours[name]['defined_in'] == OURS_MODULE, name
        for key in ('kind', 'dispatch', 'bases', 'fields', 'has_cancel'):
            assert ours[name][key] == reference_events[name][key], f'{name}.{key}'
    assert ours['constants'] == reference_events['constants']


@pytest.fixture(scope='session')
def interop(ours_python: str, harness_beside_ours: dict[str, str]) -> dict[str, Any]:
    return _probe(ours_python, 'interop', env=harness_beside_ours)


def test_with_the_reference_ours_emits_its_classes(interop: dict[str, Any]) -> None:
    assert interop['same_class'] == {name: True for name in EVENT_NAMES}


def test_reference_listeners_receive_our_events(interop: dict[str, Any]) -> None:
    """A listener registered with the reference's class sees our events and can cancel our change."""
    seen = interop['seen']
    assert seen['change_requests'] == [
        'pydantic_ai_harness.filesystem._events.FileChangeRequestEvent:a.txt',
        'pydantic_ai_harness.filesystem._events.FileChangeRequestEvent:b.txt',
        'pydantic_ai_harness.filesystem._events.FileChangeRequestEvent:b.txt',
    ]
    # FileEditedEvent subclasses FileWrittenEvent, so a write listener sees the edit too.
    assert seen['writes'] == ['FileWrittenEvent:b.txt', 'FileEditedEvent:b.txt']
    assert seen['reads'] == ['FileReadEvent:b.txt']
    assert interop['returned'][0] == "['a.txt' was not written: held by a reference listener]"
    assert interop['a_after'] == 'original\n'
