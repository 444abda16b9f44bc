"""The public API as a user sees it: every exported name, and one version everywhere."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

import pydantic_ai_harness_rs
from packaging.version import Version
from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.filesystem._tool_kinds import TOOL_KINDS_SUPPORTED

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name('public_api.py')
PUBLIC_MODULES = [
    'pydantic_ai_harness_rs',
    'pydantic_ai_harness_rs.checkpoints',
    'pydantic_ai_harness_rs.filesystem',
    'pydantic_ai_harness_rs.shell',
]


def _imported_names(module: str) -> set[str]:
    tree = ast.parse(SCRIPT.read_text())
    return {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == module
        for alias in node.names
    }


def _needs_tool_kinds(name: str) -> bool:
    """Exported only where pydantic-ai-slim has `ToolKind`: the kinds and the typed parts."""
    return name.endswith(('_KIND', 'CallPart', 'ReturnPart'))


def test_the_typed_user_script_imports_every_public_name():
    """`.ci/typecheck` runs pyright --strict on the script, so it must import every exported name
    (each from a module that exports it; a name re-exported by the package is imported once)."""
    exported = {m: set(importlib.import_module(m).__all__) - {'__version__'} for m in PUBLIC_MODULES}
    imported = {m: _imported_names(m) - {'__version__'} for m in PUBLIC_MODULES}
    if not TOOL_KINDS_SUPPORTED:  # the script imports the kinds and typed parts where they exist
        imported = {m: {n for n in names if not _needs_tool_kinds(n)} for m, names in imported.items()}
    for module in PUBLIC_MODULES:
        assert imported[module] <= exported[module], module
    assert set().union(*imported.values()) == set().union(*exported.values())


def test_the_user_script_runs():
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        'read a.txt (0123456789ab)',
        'edited a.txt (0123456789ab), diff 0 chars, cut=False',
    ]


def test_one_version_everywhere():
    """Cargo.toml holds the version; maturin gives it to the wheel's metadata, and the extension
    (compiled with it) to `__version__`, which so needs no metadata (the package also imports from
    a copied directory, as tests/shell/test_events_identity.py does)."""
    cargo = tomllib.loads((ROOT / 'Cargo.toml').read_text())['package']['version']
    installed = importlib.metadata.version('pydantic-ai-harness-rs')
    assert pydantic_ai_harness_rs.__version__ == _core.__version__ == cargo
    assert Version(installed) == Version(cargo)
    assert 'version' in tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['dynamic']
