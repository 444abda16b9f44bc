"""Sandboxed file (`FileSystem`) and shell (`Shell`) tools for Pydantic AI agents, with a Rust core.

A drop-in replacement for the capabilities of the same names in `pydantic-ai-harness`:
change the import and keep the tools, arguments, results, errors and events.
"""

from importlib.metadata import version as _version

from pydantic_ai_harness_rs.filesystem import FileSystem
from pydantic_ai_harness_rs.shell import LLM_API_KEY_ENV_PATTERNS, Shell

__version__ = _version('pydantic-ai-harness-rs')
"""The installed distribution's version (PEP 440), which is Cargo.toml's `package.version`."""

__all__ = ['LLM_API_KEY_ENV_PATTERNS', 'FileSystem', 'Shell']
