"""Tool kinds of the FileSystem tools (pydantic-ai-harness 0.59+), with one identity across both packages.

A tool kind (`pydantic_ai.ToolKind`) names what a tool is whatever it is called: `read_file` has
the kind `file_system.read_file`, stored as that id on every call and return part of a history.
Other capabilities find the file reader by kind: `ToolOutputLimits`, `Memory` and `RepoContext`
leave out their own readers (`unless_tool_kind=READ_FILE_KIND`) when a tool of that kind is in the
run, and name it by `ctx.tool_name_for_kind(READ_FILE_KIND)`. A kind's call parts are promoted to
typed subclasses (`ReadFileCallPart`, whose `typed_args` is a `ReadFileArgs`).

Pydantic AI registers one typed part class per kind id and refuses a second, and a history loaded
with the reference's classes must hold the same classes ours produce. So when
`pydantic-ai-harness` (0.59 or later) is installed, every name here is *its* object; otherwise they
are defined here with the same namespace, names, argument shapes and part classes.

On a `pydantic-ai-slim` without `ToolKind` (2.57, say) only the argument shapes exist:
`TOOL_KINDS_SUPPORTED` is `False`, the `*_KIND` and part names are not defined, and the tools are
registered without a kind.

The argument shapes' annotations are objects, not strings (no `from __future__ import annotations`):
a schema is built from them without looking this module up in `sys.modules`, which a Temporal
workflow sandbox may not hold.
"""

from typing import TYPE_CHECKING, Any, NotRequired

from typing_extensions import TypedDict

from pydantic_ai_harness_rs._identity import harness_objects
from pydantic_ai_harness_rs.filesystem._events import FILE_SYSTEM_EVENTS

try:
    from pydantic_ai import ToolKind
except ImportError:  # pydantic-ai-slim releases before typed tool parts
    ToolKind = None  # type: ignore[assignment,misc]

TOOL_KINDS_SUPPORTED: bool = ToolKind is not None
"""Whether the installed `pydantic-ai-slim` has `ToolKind`; without it the tools carry no kind."""

KIND_NAMES: tuple[str, ...] = (
    'READ_FILE_KIND',
    'WRITE_FILE_KIND',
    'EDIT_FILE_KIND',
    'LIST_DIRECTORY_KIND',
    'SEARCH_FILES_KIND',
    'FIND_FILES_KIND',
    'CREATE_DIRECTORY_KIND',
    'FILE_INFO_KIND',
    'LIST_FILES_KIND',
    'GREP_KIND',
)
"""The kind constants, one per tool of `FILE_SYSTEM_TOOL_NAMES`, in that order."""

ARGS_NAMES: tuple[str, ...] = (
    'ReadFileArgs',
    'WriteFileArgs',
    'EditFileArgs',
    'ReplacementArgs',
    'ListDirectoryArgs',
    'SearchFilesArgs',
    'FindFilesArgs',
    'CreateDirectoryArgs',
    'FileInfoArgs',
    'ListFilesArgs',
    'GrepArgs',
)
"""The argument shapes (`TypedDict`s): defined whatever the `pydantic-ai-slim` release."""

PART_NAMES: tuple[str, ...] = (
    'ReadFileCallPart',
    'ReadFileReturnPart',
    'WriteFileCallPart',
    'EditFileCallPart',
    'ListDirectoryCallPart',
    'SearchFilesCallPart',
    'FindFilesCallPart',
    'CreateDirectoryCallPart',
    'FileInfoCallPart',
    'ListFilesCallPart',
    'GrepCallPart',
)
"""The typed message parts: a call part per tool, and a return part for `read_file`."""


_THEIRS = (
    None
    if TYPE_CHECKING
    else harness_objects('pydantic_ai_harness.filesystem', (*KIND_NAMES, *ARGS_NAMES, *PART_NAMES))
)

if _THEIRS is not None:  # type checkers see the definitions below, whichever branch runs
    globals().update(_THEIRS)
else:  # no pydantic-ai-harness, or one from before tool kinds (0.58 and older)

    class ReadFileArgs(TypedDict):
        """`read_file`: `path`, and the window `offset` (first line, zero-based) and `limit` (lines)."""

        path: str
        offset: NotRequired[int]
        limit: NotRequired[int | None]

    class WriteFileArgs(TypedDict):
        """`write_file`: `path`, the whole new `content`, and `expected_hash` (offered with `content_hashes`)."""

        path: str
        content: str
        expected_hash: NotRequired[str | None]

    class ReplacementArgs(TypedDict):
        """One item of `edit_file`'s `replacements`: `old_text` (must match once) becomes `new_text`."""

        old_text: str
        new_text: str

    class EditFileArgs(TypedDict):
        """`edit_file`: `path`, then one `old_text`/`new_text` pair or a `replacements` list; `expected_hash`."""

        path: str
        old_text: NotRequired[str | None]
        new_text: NotRequired[str | None]
        replacements: NotRequired[list[ReplacementArgs] | None]
        expected_hash: NotRequired[str | None]

    class ListDirectoryArgs(TypedDict):
        """`list_directory`: the directory `path`."""

        path: NotRequired[str]

    class SearchFilesArgs(TypedDict):
        """`search_files`: a regex `pattern`, the directory `path`, an `include_glob` on root-relative paths."""

        pattern: str
        path: NotRequired[str]
        include_glob: NotRequired[str | None]

    class FindFilesArgs(TypedDict):
        """`find_files`: a glob `pattern` relative to the directory `path`."""

        pattern: str
        path: NotRequired[str]

    class CreateDirectoryArgs(TypedDict):
        """`create_directory`: the directory `path` (missing parents are created too)."""

        path: str

    class FileInfoArgs(TypedDict):
        """`file_info`: the file or directory `path`."""

        path: str

    class ListFilesArgs(TypedDict):
        """`list_files`: the directory `path` and a `glob` the files must match."""

        path: NotRequired[str]
        glob: NotRequired[str | None]

    class GrepArgs(TypedDict):
        """`grep`: a ripgrep `pattern` (text with `literal`), `path`, `glob`, `file_type`, `ignore_case`, `context`."""

        pattern: str
        path: NotRequired[str]
        glob: NotRequired[str | None]
        file_type: NotRequired[str | None]
        ignore_case: NotRequired[bool]
        literal: NotRequired[bool]
        context: NotRequired[int]

    if ToolKind is not None:
        from pydantic_ai.messages import ToolCallPart, ToolReturnPart

        # No content shape for read_file: its result is text (or text and an image in 0.62.0's
        # workspace mode), and a kind takes one class, not a union.
        READ_FILE_KIND = ToolKind(FILE_SYSTEM_EVENTS, 'read_file', args=ReadFileArgs)
        """`read_file`, whatever the tool is named."""
        WRITE_FILE_KIND = ToolKind(FILE_SYSTEM_EVENTS, 'write_file', args=WriteFileArgs)
        """`write_file`, whatever the tool is named."""
        EDIT_FILE_KIND = ToolKind(FILE_SYSTEM_EVENTS, 'edit_file', args=EditFileArgs)
        """`edit_file`, whatever the tool is named."""
        LIST_DIRECTORY_KIND = ToolKind(FILE_SYSTEM_EVENTS, 'list_directory', args=ListDirectoryArgs)
        """`list_directory`, whatever the tool is named."""
        SEARCH_FILES_KIND = ToolKind(FILE_SYSTEM_EVENTS, 'search_files', args=SearchFilesArgs)
        """`search_files`, whatever the tool is named."""
        FIND_FILES_KIND = ToolKind(FILE_SYSTEM_EVENTS, 'find_files', args=FindFilesArgs)
        """`find_files`, whatever the tool is named."""
        CREATE_DIRECTORY_KIND = ToolKind(FILE_SYSTEM_EVENTS, 'create_directory', args=CreateDirectoryArgs)
        """`create_directory`, whatever the tool is named."""
        FILE_INFO_KIND = ToolKind(FILE_SYSTEM_EVENTS, 'file_info', args=FileInfoArgs)
        """`file_info`, whatever the tool is named."""
        LIST_FILES_KIND = ToolKind(FILE_SYSTEM_EVENTS, 'list_files', args=ListFilesArgs)
        """`list_files` (ripgrep rules), whatever the tool is named."""
        GREP_KIND = ToolKind(FILE_SYSTEM_EVENTS, 'grep', args=GrepArgs)
        """`grep` (ripgrep rules), whatever the tool is named."""

        class ReadFileCallPart(ToolCallPart[ReadFileArgs], kind=READ_FILE_KIND):
            """A `read_file` call, under the name the tool had in the run."""

        class ReadFileReturnPart(ToolReturnPart, kind=READ_FILE_KIND):
            """A successful `read_file` return: `content` is the numbered text with its header.

            A failed or refused read stays a plain `ToolReturnPart` carrying this kind's `tool_kind`.
            """

        class WriteFileCallPart(ToolCallPart[WriteFileArgs], kind=WRITE_FILE_KIND):
            """A `write_file` call, under the name the tool had in the run."""

        class EditFileCallPart(ToolCallPart[EditFileArgs], kind=EDIT_FILE_KIND):
            """An `edit_file` call, under the name the tool had in the run."""

        class ListDirectoryCallPart(ToolCallPart[ListDirectoryArgs], kind=LIST_DIRECTORY_KIND):
            """A `list_directory` call, under the name the tool had in the run."""

        class SearchFilesCallPart(ToolCallPart[SearchFilesArgs], kind=SEARCH_FILES_KIND):
            """A `search_files` call, under the name the tool had in the run."""

        class FindFilesCallPart(ToolCallPart[FindFilesArgs], kind=FIND_FILES_KIND):
            """A `find_files` call, under the name the tool had in the run."""

        class CreateDirectoryCallPart(ToolCallPart[CreateDirectoryArgs], kind=CREATE_DIRECTORY_KIND):
            """A `create_directory` call, under the name the tool had in the run."""

        class FileInfoCallPart(ToolCallPart[FileInfoArgs], kind=FILE_INFO_KIND):
            """A `file_info` call, under the name the tool had in the run."""

        class ListFilesCallPart(ToolCallPart[ListFilesArgs], kind=LIST_FILES_KIND):
            """A `list_files` call, under the name the tool had in the run."""

        class GrepCallPart(ToolCallPart[GrepArgs], kind=GREP_KIND):
            """A `grep` call, under the name the tool had in the run."""


class ApplyPatchArgs(TypedDict):
    """`apply_patch`: the whole patch, `input`, in Codex's format (ours: no reference release has the tool)."""

    input: str


if ToolKind is not None:
    APPLY_PATCH_KIND = ToolKind(FILE_SYSTEM_EVENTS, 'apply_patch', args=ApplyPatchArgs)
    """`apply_patch` (ours), whatever the tool is named."""


def tool_kind_options(tool: str) -> dict[str, Any]:
    """The `add_function` keyword giving `tool` (a name in `FILE_SYSTEM_TOOL_NAMES`) its kind.

    `{'tool_kind': <the kind>}`, or `{}` on a `pydantic-ai-slim` without `ToolKind`.
    """
    if not TOOL_KINDS_SUPPORTED:
        return {}
    return {'tool_kind': globals()[f'{tool.upper()}_KIND']}


EXPORTED_NAMES: tuple[str, ...] = (
    (*KIND_NAMES, 'APPLY_PATCH_KIND', *ARGS_NAMES, 'ApplyPatchArgs', *PART_NAMES)
    if TOOL_KINDS_SUPPORTED
    else (*ARGS_NAMES, 'ApplyPatchArgs')
)
"""The public names this module defines on the installed `pydantic-ai-slim` (0.62.0's 32 and ours for
`apply_patch`, or the shapes)."""
