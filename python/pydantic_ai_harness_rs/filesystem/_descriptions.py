"""The tool descriptions 0.62.0 gives the model, offered on a run under the workspace contract.

The tools are the same functions under both contracts; only what the model reads differs
("relative to the working directory" instead of "relative to `cwd`", what `read_file` and
`file_info` return). These stubs carry 0.62.0's docstrings with our signatures, so the schemas
are generated the same way as the document's; `FileSystemToolset.get_tools` swaps the
descriptions in. The stubs are never called.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import FunctionToolset

from pydantic_ai_harness_rs.filesystem._toolset import Replacement


async def read_file(ctx: RunContext[object], path: str, *, offset: int = 0, limit: int | None = None) -> str:
    """Read a text file with line numbers, or view an image or PDF.

    Args:
        ctx: The current agent run context.
        path: File path relative to the working directory.
        offset: Zero-based line offset to start reading from.
        limit: Maximum number of lines to return; defaults to, and is capped at, the configured read limit.

    Returns:
        File content with line numbers, plus metadata header. An image or PDF
        is returned as the file itself; other binary files as their size,
        media type and leading bytes in hex.
    """
    raise NotImplementedError


async def write_file(ctx: RunContext[object], path: str, content: str, *, expected_hash: str | None = None) -> str:
    """Create or overwrite a file with conflict detection.

    Args:
        ctx: The current agent run context.
        path: File path relative to the working directory.
        content: The text content to write.
        expected_hash: If provided, the write is rejected when the file exists
            and its current hash doesn't match (optimistic concurrency).

    Returns:
        Confirmation message with new hash.
    """
    raise NotImplementedError


async def write_file_unhashed(ctx: RunContext[object], path: str, content: str) -> str:
    """Create a file or replace its whole content.

    Args:
        ctx: The current agent run context.
        path: File path relative to the working directory.
        content: The text content to write.
    """
    raise NotImplementedError


async def edit_file(
    ctx: RunContext[object],
    path: str,
    old_text: str | None = None,
    new_text: str | None = None,
    *,
    replacements: list[Replacement] | None = None,
    expected_hash: str | None = None,
) -> str:
    """Edit a file by exact string replacement with conflict detection.

    Pass one `old_text`/`new_text` pair, or several as `replacements`. Each
    old_text must appear exactly once in the file as edited by the previous
    replacements; include surrounding context lines to ensure uniqueness.
    The file is only written once every replacement has matched.

    Args:
        ctx: The current agent run context.
        path: File path relative to the working directory.
        old_text: The exact text to find (must appear exactly once).
        new_text: The replacement text.
        replacements: Replacements to apply in order, instead of a single pair.
        expected_hash: If provided, rejects the edit when the file's
            current hash doesn't match (optimistic concurrency).

    Returns:
        Summary with new hash for subsequent operations.
    """
    raise NotImplementedError


async def edit_file_unhashed(
    ctx: RunContext[object],
    path: str,
    old_text: str | None = None,
    new_text: str | None = None,
    *,
    replacements: list[Replacement] | None = None,
) -> str:
    """Edit a file by exact string replacement.

    Pass one `old_text`/`new_text` pair, or several as `replacements`. Each
    old_text must appear exactly once in the file as edited by the previous
    replacements; include surrounding context lines to ensure uniqueness.
    The file is only written once every replacement has matched.

    Args:
        ctx: The current agent run context.
        path: File path relative to the working directory.
        old_text: The exact text to find (must appear exactly once).
        new_text: The replacement text.
        replacements: Replacements to apply in order, instead of a single pair.
    """
    raise NotImplementedError


async def list_directory(ctx: RunContext[object], path: str = '.') -> str:
    """List the contents of a directory.

    Args:
        ctx: The current agent run context.
        path: Directory path relative to the working directory.

    Returns:
        Paths relative to the working directory, with type indicators and sizes.
    """
    raise NotImplementedError


async def search_files(
    ctx: RunContext[object], pattern: str, *, path: str = '.', include_glob: str | None = None
) -> str:
    """Search file contents using a regular expression.

    Args:
        ctx: The current agent run context.
        pattern: Regex pattern to search for.
        path: Directory to search in, relative to the working directory.
        include_glob: If provided, only search files whose path from the root matches this glob, where `*`
            also spans `/`: '*.py' for every Python file, 'src/*.py' for those anywhere under `src`.

    Returns:
        str: Matching lines formatted as file:line_number:text, with paths relative to the working directory.
    """
    raise NotImplementedError


async def find_files(ctx: RunContext[object], pattern: str, *, path: str = '.') -> str:
    """Find files by glob pattern (name matching, not content search).

    Args:
        ctx: The current agent run context.
        pattern: Glob pattern to match, relative to `path` (e.g. '*.py',
            '**/*.json'). Absolute patterns are rejected.
        path: Directory to search in, relative to the working directory.

    Returns:
        Newline-separated list of matching file paths relative to the working directory.
    """
    raise NotImplementedError


async def create_directory(ctx: RunContext[object], path: str) -> str:
    """Create a directory and any missing parents.

    Args:
        ctx: The current agent run context.
        path: Directory path relative to the working directory.

    Returns:
        Confirmation message.
    """
    raise NotImplementedError


async def file_info(ctx: RunContext[object], path: str) -> str:
    """Get metadata about a file or directory.

    Args:
        ctx: The current agent run context.
        path: File or directory path relative to the working directory.

    Returns:
        The path, its type and size, whether a file is binary, a text file's line count and
        content hash, and a symlink's target, where the workspace provides them.
    """
    raise NotImplementedError


async def list_files(ctx: RunContext[object], path: str = '.', *, glob: str | None = None) -> str:
    """List files under a directory, recursively, sorted by path, respecting ignore files and skipping hidden files.

    Args:
        ctx: The current agent run context.
        path: Directory to list, relative to the working directory.
        glob: If provided, only list files matching this glob (e.g. '*.py' or 'src/**').

    Returns:
        One file path per line, relative to the working directory.
    """
    raise NotImplementedError


async def grep(
    ctx: RunContext[object],
    pattern: str,
    *,
    path: str = '.',
    glob: str | None = None,
    file_type: str | None = None,
    ignore_case: bool = False,
    literal: bool = False,
    context: int = 0,
) -> str:
    """Search file contents with ripgrep, respecting ignore files and skipping hidden files.

    Args:
        ctx: The current agent run context.
        pattern: Regular expression (ripgrep syntax), or exact text when `literal` is set.
        path: Directory or file to search, relative to the working directory.
        glob: If provided, only search files matching this glob (e.g. '*.py').
        file_type: If provided, only search this ripgrep file type (e.g. 'py', 'rust').
        ignore_case: Match case-insensitively.
        literal: Treat `pattern` as exact text rather than a regular expression.
        context: Lines of context to show around each match (0 to 20).

    Returns:
        Matches as `file:line:text`; context lines as `file-line-text`. Paths are relative to the working directory.
    """
    raise NotImplementedError


def workspace_descriptions(tools: Sequence[str], content_hashes: bool) -> FunctionToolset[object]:
    """A toolset of the stubs for `tools`, whose definitions carry 0.62.0's descriptions and schemas."""
    stubs = {
        'read_file': read_file,
        'write_file': write_file if content_hashes else write_file_unhashed,
        'edit_file': edit_file if content_hashes else edit_file_unhashed,
        'list_directory': list_directory,
        'search_files': search_files,
        'find_files': find_files,
        'create_directory': create_directory,
        'file_info': file_info,
        'list_files': list_files,
        'grep': grep,
    }
    toolset = FunctionToolset[object]()
    for name in tools:
        toolset.add_function(stubs[name], name=name)
    return toolset
