"""Sandboxed file (`FileSystem`) and shell (`Shell`) tools for Pydantic AI agents, with a Rust core.

A drop-in replacement for the capabilities of the same names in `pydantic-ai-harness`:
change the import and keep the tools, arguments, results, errors and events.
"""

from pydantic_ai_harness_rs.filesystem import FileSystem

__all__ = ['FileSystem']
