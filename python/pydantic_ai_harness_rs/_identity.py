"""One identity across both packages: `pydantic-ai-harness`'s own objects, where it is installed.

Pydantic AI registers one class per event kind and per tool kind, and listeners and histories
written against `pydantic_ai_harness` must meet ours: so our event classes, tool kinds and typed
parts are *its* objects when it provides them (`harness_objects`), else ours, defined alike.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

BORROWED_MODULES: dict[str, ModuleType] = {}
"""The modules defining the `pydantic-ai-harness` classes taken here, by name.

A Temporal workflow sandbox gets them with ours (`_sandbox`), to resolve those classes' annotations."""


def harness_objects(module: str, names: Sequence[str]) -> dict[str, Any] | None:
    """`names` from `pydantic-ai-harness`'s `module`, or `None` when it is not installed or lacks
    one of them (a release from before they existed)."""
    try:
        theirs = importlib.import_module(module)
    except ImportError:
        return None
    if not all(hasattr(theirs, name) for name in names):
        return None
    objects = {name: getattr(theirs, name) for name in names}
    for value in objects.values():
        if isinstance(value, type) and (home := sys.modules.get(value.__module__)) is not None:
            BORROWED_MODULES[home.__name__] = home
    return objects
