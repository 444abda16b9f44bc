"""Sandboxed file (`FileSystem`) and shell (`Shell`) tools for Pydantic AI agents, with a Rust core.

A drop-in replacement for the capabilities of the same names in `pydantic-ai-harness`:
change the import and keep the tools, arguments, results, errors and events.
"""

import sys as _sys


def _sandbox_copy_of(host_import: str) -> bool:
    """Whether this is a Temporal workflow sandbox's copy of the package; if so, the host's replaces it.

    The sandbox gets the host's package and modules (`_sandbox.adopt_host_modules`), so a worker
    needs no pass-through line for this package. `temporalio` is imported only when already loaded.
    """
    if 'temporalio' not in _sys.modules and not type(_sys.modules).__module__.startswith('temporalio.'):
        return False
    import temporalio.workflow  # the host's: Temporal always passes itself through its sandbox

    if not temporalio.workflow.unsafe.in_sandbox():
        return False
    with temporalio.workflow.unsafe.imports_passed_through():  # the host's import runs this file outside
        import pydantic_ai_harness_rs._sandbox  # noqa: F401  (the sandbox, and takes `False` below)
    sandbox = _sys.modules[host_import]
    if sandbox.HOST_PACKAGE.__dict__ is globals():
        return False  # the host's own import, made from the sandbox
    sandbox.adopt_host_modules()  # `sys.modules[__name__]` too: what the sandbox's import returns
    globals().update({k: v for k, v in vars(sandbox.HOST_PACKAGE).items() if not k.startswith('__')})
    return True


if not _sandbox_copy_of(f'{__name__}._sandbox'):
    from pydantic_ai_harness_rs import _sandbox as _sandbox  # loaded on the host, for the sandbox
    from pydantic_ai_harness_rs._core import __version__ as __version__  # Cargo.toml's version, compiled in
    from pydantic_ai_harness_rs.filesystem import FileSystem, ReadBeforeWrite
    from pydantic_ai_harness_rs.shell import LLM_API_KEY_ENV_PATTERNS, Shell

__all__ = ['LLM_API_KEY_ENV_PATTERNS', 'FileSystem', 'ReadBeforeWrite', 'Shell']
