"""`_sandbox` outside Temporal (issue 21): importing the package loads no `temporalio`, and adopts nothing.

Inside a workflow sandbox: `test_temporal_dropin.py` (engine tests, `.ci/durable`).
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_importing_the_package_does_not_load_temporal() -> None:
    code = (
        'import sys, pydantic_ai_harness_rs as p, pydantic_ai_harness_rs.filesystem, pydantic_ai_harness_rs.shell\n'
        'p.FileSystem(); p.Shell()\n'
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'temporalio'))"
    )
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    assert out == '[]\n'


def test_the_host_modules_are_every_loaded_module_of_the_package() -> None:
    from pydantic_ai_harness_rs import _sandbox

    loaded = {name: module for name, module in sys.modules.items() if name.split('.')[0] == _sandbox.PACKAGE}
    assert _sandbox.host_modules() == loaded
    assert not _sandbox.in_workflow_sandbox()


def test_the_modules_of_borrowed_classes_are_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A class taken from another package (`pydantic-ai-harness`'s, where installed) has its module
    recorded, for a sandbox to get with ours."""
    from pydantic_ai_harness_rs import _identity

    monkeypatch.setattr(_identity, 'BORROWED_MODULES', {})
    objects = _identity.harness_objects('pydantic_ai.messages', ['ToolCallPart', 'TextPart'])
    assert objects is not None
    assert _identity.BORROWED_MODULES == {
        objects['ToolCallPart'].__module__: sys.modules[objects['ToolCallPart'].__module__],
        objects['TextPart'].__module__: sys.modules[objects['TextPart'].__module__],
    }
