"""What a capability hands its toolset: the fields the toolset's constructor takes under the same name.

So a new setting is a field on the capability and a parameter of the toolset, with no line
copying it from one to the other (`FileSystem`, `Shell`).
"""

from __future__ import annotations

import inspect
from collections.abc import Collection
from dataclasses import fields
from typing import Any


def passed_on(capability: Any, toolset: type, *, besides: Collection[str] = ()) -> dict[str, Any]:
    """`capability`'s fields that `toolset.__init__` takes by name, as they are; `besides` are left
    to the caller (fields it converts or words differently)."""
    takes = inspect.signature(toolset.__init__).parameters
    return {
        f.name: getattr(capability, f.name) for f in fields(capability) if f.name in takes and f.name not in besides
    }
