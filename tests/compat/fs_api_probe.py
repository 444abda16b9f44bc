"""Describe the public FileSystem API of a package, as JSON, so two packages can be compared.

Usage: `python fs_api_probe.py MODULE` (`pydantic_ai_harness` or `pydantic_ai_harness_rs`).

Covers what a caller can touch without an Agent: the names `MODULE.filesystem` exports, the
tool-name constants, the `FileSystem` dataclass fields and their defaults, `Replacement`'s
fields, and the parameters (names, kinds, defaults; not annotations) of the toolset's direct
methods and of its overridable `open_read` / `open_write`.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import sys
from typing import Any

from fs_scenarios import ALL_TOOLS

CONSTANTS = ('DEFAULT_TOOL_NAMES', 'FILE_SYSTEM_TOOL_NAMES', 'READ_ONLY_TOOL_NAMES', 'RIPGREP_TOOL_NAMES')
METHODS = ('__init__', *ALL_TOOLS, 'open_read', 'open_write')


def _parameters(func: Any) -> list[list[Any]]:
    params = []
    for p in inspect.signature(func).parameters.values():
        default = '<required>' if p.default is inspect.Parameter.empty else repr(p.default)
        params.append([p.name, p.kind.name, default])
    return params


def _constant(value: Any) -> Any:
    return sorted(value) if isinstance(value, (set, frozenset)) else list(value)


def describe(module: str) -> dict[str, Any]:
    top = importlib.import_module(module)
    fs = importlib.import_module(f'{module}.filesystem')
    capability = fs.FileSystem
    fields = {}
    for f in dataclasses.fields(capability):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = '<required>'
        fields[f.name] = repr(list(default) if isinstance(default, tuple) else default)
    return {
        'top_level_FileSystem_is_filesystem_FileSystem': getattr(top, 'FileSystem', None) is capability,
        'filesystem_all': sorted(getattr(fs, '__all__', [])),
        'constants': {name: _constant(getattr(fs, name)) for name in CONSTANTS if hasattr(fs, name)},
        'FileSystem_fields': fields,
        'FileSystem_is_dataclass': dataclasses.is_dataclass(capability),
        'Replacement_fields': [[f.name, f.kw_only] for f in dataclasses.fields(fs.Replacement)],
        'toolset_methods': {
            name: _parameters(getattr(fs.FileSystemToolset, name)) if hasattr(fs.FileSystemToolset, name) else None
            for name in METHODS
        },
        'direct_methods_are_coroutines': {
            name: inspect.iscoroutinefunction(getattr(fs.FileSystemToolset, name))
            for name in METHODS
            if hasattr(fs.FileSystemToolset, name) and not name.startswith(('open_', '__'))
        },
    }


def main() -> int:
    json.dump(describe(sys.argv[1]), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write('\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
