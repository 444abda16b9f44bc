"""Sandboxed file (`FileSystem`) and shell (`Shell`) tools for Pydantic AI agents, with a Rust core.

A drop-in replacement for the capabilities of the same names in `pydantic-ai-harness`:
change the import and keep the tools, arguments, results, errors and events.
"""

import sys as _sys


def _replaced_by_the_hosts() -> bool:
    """Whether this is a Temporal workflow sandbox's copy of the package, which the host's now replaces.

    A sandbox that imports the package gets the worker's own package and modules in its
    `sys.modules` (`_sandbox.adopt_host_modules`), so a worker needs no pass-through line for it.
    Outside Temporal this imports nothing (`temporalio` only when already loaded).
    """
    if 'temporalio' not in _sys.modules and not type(_sys.modules).__module__.startswith('temporalio.'):
        return False
    import temporalio.workflow  # the host's: Temporal always passes itself through its sandbox

    if not temporalio.workflow.unsafe.in_sandbox():
        return False
    # `_sandbox` as the host imported it (when the host imports the package from here, this
    # function runs again there, outside the sandbox's modules, and finds the package is the host's).
    with temporalio.workflow.unsafe.imports_passed_through():
        import pydantic_ai_harness_rs._sandbox as sandbox
    if sandbox.HOST_PACKAGE.__dict__ is globals():
        return False
    sandbox.adopt_host_modules()  # `sys.modules[__name__]` too: what the sandbox's import statement returns
    globals().update({k: v for k, v in vars(sandbox.HOST_PACKAGE).items() if not k.startswith('__')})
    return True


if not _replaced_by_the_hosts():
    from pydantic_ai_harness_rs import _sandbox as _sandbox  # loaded on the host, for a sandbox to take
    from pydantic_ai_harness_rs._core import __version__ as __version__  # Cargo.toml's version, compiled in
    from pydantic_ai_harness_rs.checkpoints import Checkpoints
    from pydantic_ai_harness_rs.filesystem import FileSystem, ReadBeforeWrite
    from pydantic_ai_harness_rs.shell import LLM_API_KEY_ENV_PATTERNS, Shell

__all__ = ['LLM_API_KEY_ENV_PATTERNS', 'Checkpoints', 'FileSystem', 'ReadBeforeWrite', 'Shell']
