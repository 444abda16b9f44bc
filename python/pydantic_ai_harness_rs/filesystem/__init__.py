"""`FileSystem`: sandboxed, pattern-filtered file tools for Pydantic AI agents (Rust core)."""

from pydantic_ai_harness_rs.filesystem._capability import FileSystem
from pydantic_ai_harness_rs.filesystem._defaults import DEFAULT_PROTECTED_PATTERNS, DEFAULT_READ_ONLY_PATTERNS
from pydantic_ai_harness_rs.filesystem._events import (
    FILE_SYSTEM_EVENTS,
    MAX_DIFF_SOURCE_CHARS,
    MAX_EVENT_DIFF_CHARS,
    DirectoryCreatedEvent,
    DirectoryListedEvent,
    FileChangeRequestEvent,
    FileEditedEvent,
    FileOperation,
    FileReadEvent,
    FilesSearchedEvent,
    FileWrittenEvent,
    SearchKind,
)
from pydantic_ai_harness_rs.filesystem._toolset import (
    DEFAULT_TOOL_NAMES,
    FILE_SYSTEM_TOOL_NAMES,
    READ_ONLY_TOOL_NAMES,
    RIPGREP_TOOL_NAMES,
    FileSystemToolset,
    Replacement,
)

__all__ = [
    'DEFAULT_PROTECTED_PATTERNS',
    'DEFAULT_READ_ONLY_PATTERNS',
    'DEFAULT_TOOL_NAMES',
    'FILE_SYSTEM_EVENTS',
    'FILE_SYSTEM_TOOL_NAMES',
    'MAX_DIFF_SOURCE_CHARS',
    'MAX_EVENT_DIFF_CHARS',
    'READ_ONLY_TOOL_NAMES',
    'RIPGREP_TOOL_NAMES',
    'DirectoryCreatedEvent',
    'DirectoryListedEvent',
    'FileChangeRequestEvent',
    'FileEditedEvent',
    'FileOperation',
    'FileReadEvent',
    'FileSystem',
    'FileSystemToolset',
    'FilesSearchedEvent',
    'FileWrittenEvent',
    'Replacement',
    'SearchKind',
]
