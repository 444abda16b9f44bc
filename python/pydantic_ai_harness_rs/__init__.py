"""Sandboxed file (`FileSystem`) and shell (`Shell`) tools for Pydantic AI agents, with a Rust core.

A drop-in replacement for the capabilities of the same names in `pydantic-ai-harness`:
change the import and keep the tools, arguments, results, errors and events.
"""

from pydantic_ai_harness_rs._core import __version__ as __version__  # Cargo.toml's version, compiled in
from pydantic_ai_harness_rs.filesystem import FileSystem, ReadBeforeWrite
from pydantic_ai_harness_rs.shell import LLM_API_KEY_ENV_PATTERNS, Shell

__all__ = ['LLM_API_KEY_ENV_PATTERNS', 'FileSystem', 'ReadBeforeWrite', 'Shell']
