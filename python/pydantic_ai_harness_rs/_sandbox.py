"""Temporal's workflow sandbox: inside it, this package is always the host's modules.

The sandbox (`SandboxedWorkflowRunner`, the default) re-imports a workflow's modules for each
workflow, except those it passes through. Pydantic AI's plugin passes its own packages through,
not this one. A copy of this package made in the sandbox would load the native core a second
time and hold a second set of classes, and a workflow that imports only the package itself
(under `workflow.unsafe.imports_passed_through()`) leaves its submodules out of the sandbox's
`sys.modules`, where Pydantic looks up a class's module to resolve its annotations.

So, in the sandbox, `adopt_host_modules` puts every module of this package the host has loaded
into the sandbox's `sys.modules`: the package `__init__` does it when the sandbox starts
importing it (the copy is then replaced by the host's package), and `FileSystem` and `Shell` do it
when they are built (a workflow that passed the package through). Outside Temporal nothing here
imports `temporalio`; it is looked up in `sys.modules`.
"""

import sys
from types import ModuleType

import pydantic_ai_harness_rs as _package  # the host's: this module is only ever loaded on the host
from pydantic_ai_harness_rs._identity import BORROWED_MODULES

PACKAGE: str = _package.__name__
"""This package's name; its modules are it and those named `<PACKAGE>.<...>`."""

HOST_PACKAGE: ModuleType = _package
"""The package as the host (the worker process outside any sandbox) imported it."""


def _temporal_workflow() -> ModuleType | None:
    """`temporalio.workflow` when Temporal is loaded, without importing it otherwise."""
    workflow = sys.modules.get('temporalio.workflow')
    if workflow is None and type(sys.modules).__module__.startswith('temporalio.'):
        # The sandbox's `sys.modules` (a Temporal mapping) without lazy pass-through: Temporal is
        # loaded, and its modules always pass through the sandbox, so this import is the host's.
        import temporalio.workflow as workflow  # noqa: PLC0415
    return workflow


def in_temporal_workflow() -> bool:
    """Whether the calling code is Temporal workflow code, sandboxed or not (never imports Temporal)."""
    workflow = _temporal_workflow()
    return workflow is not None and bool(workflow.in_workflow())


def in_workflow_sandbox() -> bool:
    """Whether the calling code runs in a Temporal workflow sandbox (never imports Temporal)."""
    workflow = _temporal_workflow()
    return workflow is not None and bool(workflow.unsafe.in_sandbox())


def host_modules() -> dict[str, ModuleType]:
    """Every module of this package the host has loaded, by name (the package and its submodules)."""
    found: dict[str, ModuleType] = {}
    pending = [HOST_PACKAGE]
    while pending:
        module = pending.pop()
        if module.__name__ in found:
            continue
        found[module.__name__] = module
        pending.extend(
            value
            for value in vars(module).values()
            if isinstance(value, ModuleType) and value.__name__.startswith(PACKAGE + '.')
        )
    return found


def adopt_host_modules() -> None:
    """In a workflow sandbox, make this package's modules in its `sys.modules` the host's; else nothing.

    The modules of the `pydantic-ai-harness` classes this package uses as its own (`_identity`) too:
    a sandbox without lazy `sys.modules` pass-through would not find them to resolve their annotations.
    """
    if not in_workflow_sandbox():
        return
    modules = sys.modules
    for name, module in {**host_modules(), **BORROWED_MODULES}.items():
        if modules.get(name) is not module:
            modules[name] = module
