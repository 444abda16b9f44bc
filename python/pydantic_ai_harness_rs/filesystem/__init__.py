"""`FileSystem`: sandboxed, pattern-filtered file tools for Pydantic AI agents (Rust core).

The tool kinds (`READ_FILE_KIND` ...) and typed parts (`ReadFileCallPart` ...) exist on a
`pydantic-ai-slim` with `ToolKind`; the argument shapes (`ReadFileArgs` ...) always do.
"""

from typing import TYPE_CHECKING

from pydantic_ai_harness_rs.filesystem import _tool_kinds
from pydantic_ai_harness_rs.filesystem._approval import CHANGE_TOOL_NAMES, PlannedChange
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
from pydantic_ai_harness_rs.filesystem._observe import ReadBeforeWrite
from pydantic_ai_harness_rs.filesystem._tools import (
    DEFAULT_TOOL_NAMES,
    FILE_SYSTEM_TOOL_NAMES,
    READ_ONLY_TOOL_NAMES,
    RIPGREP_TOOL_NAMES,
    Replacement,
)
from pydantic_ai_harness_rs.filesystem._toolset import FileSystemToolset

if TYPE_CHECKING:
    from pydantic_ai_harness_rs.filesystem._tool_kinds import (  # noqa: F401 - exported through __all__
        APPLY_PATCH_KIND,
        CREATE_DIRECTORY_KIND,
        EDIT_FILE_KIND,
        FILE_INFO_KIND,
        FIND_FILES_KIND,
        GREP_KIND,
        LIST_DIRECTORY_KIND,
        LIST_FILES_KIND,
        READ_FILE_KIND,
        SEARCH_FILES_KIND,
        WRITE_FILE_KIND,
        ApplyPatchArgs,
        CreateDirectoryArgs,
        CreateDirectoryCallPart,
        EditFileArgs,
        EditFileCallPart,
        FileInfoArgs,
        FileInfoCallPart,
        FindFilesArgs,
        FindFilesCallPart,
        GrepArgs,
        GrepCallPart,
        ListDirectoryArgs,
        ListDirectoryCallPart,
        ListFilesArgs,
        ListFilesCallPart,
        ReadFileArgs,
        ReadFileCallPart,
        ReadFileReturnPart,
        ReplacementArgs,
        SearchFilesArgs,
        SearchFilesCallPart,
        WriteFileArgs,
        WriteFileCallPart,
    )
else:
    globals().update({name: getattr(_tool_kinds, name) for name in _tool_kinds.EXPORTED_NAMES})

__all__ = [  # noqa: PLE0604 - the kind names depend on the pydantic-ai-slim release
    *_tool_kinds.EXPORTED_NAMES,
    'CHANGE_TOOL_NAMES',
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
    'PlannedChange',
    'ReadBeforeWrite',
    'Replacement',
    'SearchKind',
]
