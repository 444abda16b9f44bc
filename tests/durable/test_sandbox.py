"""`_sandbox` outside Temporal (issue 21): importing the package loads no `temporalio`, and adopts nothing.

Inside a workflow sandbox: `test_temporal_dropin.py` (engine tests, `.ci/durable`).
"""

from __future__ import annotations

import subprocess
import sys


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
