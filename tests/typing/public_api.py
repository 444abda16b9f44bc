# pyright: strict
"""A user's script that touches every public name of the package.

`pyright --strict` checks it (`.ci/typecheck`): each import must resolve to a known symbol and
each use must type-check, whether or not `pydantic-ai-harness` is installed. Run as a program
it is the smoke test of the installed package's public API (`.ci/wheel` runs it in every venv).
`tests/typing/test_public_api.py` keeps its imports equal to the packages' `__all__`.
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai_harness_rs import (
    LLM_API_KEY_ENV_PATTERNS,
    Checkpoints,
    FileSystem,
    ReadBeforeWrite,
    Shell,
    __version__,
)
from pydantic_ai_harness_rs.checkpoints import CHECKPOINT_TOOL_NAMES, CheckpointError
from pydantic_ai_harness_rs.filesystem import (
    CHANGE_TOOL_NAMES,
    DEFAULT_PROTECTED_PATTERNS,
    DEFAULT_READ_ONLY_PATTERNS,
    DEFAULT_TOOL_NAMES,
    FILE_SYSTEM_EVENTS,
    FILE_SYSTEM_TOOL_NAMES,
    MAX_DIFF_SOURCE_CHARS,
    MAX_EVENT_DIFF_CHARS,
    READ_ONLY_TOOL_NAMES,
    RIPGREP_TOOL_NAMES,
    ApplyPatchArgs,
    CreateDirectoryArgs,
    DirectoryCreatedEvent,
    DirectoryListedEvent,
    EditFileArgs,
    FileChangeRequestEvent,
    FileEditedEvent,
    FileInfoArgs,
    FileOperation,
    FileReadEvent,
    FilesSearchedEvent,
    FileSystemToolset,
    FileWrittenEvent,
    FindFilesArgs,
    GrepArgs,
    ListDirectoryArgs,
    ListFilesArgs,
    PlannedChange,
    ReadFileArgs,
    Replacement,
    ReplacementArgs,
    SearchFilesArgs,
    SearchKind,
    WriteFileArgs,
)
from pydantic_ai_harness_rs.shell import (
    APPROVAL_TOOL_NAMES,
    MAX_FOREGROUND_WAIT,
    NON_INTERACTIVE_ENV,
    RUN_SCOPED_TOOL_NAMES,
    SESSION_TOOL_NAMES,
    SHELL_EVENTS,
    SHELL_TOOL_NAMES,
    CommandFinishedEvent,
    CommandOutputEvent,
    CommandStartedEvent,
    PlannedCommand,
    ShellToolset,
)

ARG_SHAPES: tuple[type, ...] = (
    ReadFileArgs,
    WriteFileArgs,
    EditFileArgs,
    ListDirectoryArgs,
    SearchFilesArgs,
    FindFilesArgs,
    CreateDirectoryArgs,
    FileInfoArgs,
    ListFilesArgs,
    GrepArgs,
    ReplacementArgs,
    ApplyPatchArgs,
)
"""The argument shapes of the tools (exported on every supported pydantic-ai-slim)."""

try:  # tool kinds and typed parts: pydantic-ai-slim with `ToolKind` (2.59+)
    from pydantic_ai_harness_rs.filesystem import (
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
        CreateDirectoryCallPart,
        EditFileCallPart,
        FileInfoCallPart,
        FindFilesCallPart,
        GrepCallPart,
        ListDirectoryCallPart,
        ListFilesCallPart,
        ReadFileCallPart,
        ReadFileReturnPart,
        SearchFilesCallPart,
        WriteFileCallPart,
    )

    kinds: list[object] = [
        APPLY_PATCH_KIND,
        READ_FILE_KIND,
        WRITE_FILE_KIND,
        EDIT_FILE_KIND,
        LIST_DIRECTORY_KIND,
        SEARCH_FILES_KIND,
        FIND_FILES_KIND,
        CREATE_DIRECTORY_KIND,
        FILE_INFO_KIND,
        LIST_FILES_KIND,
        GREP_KIND,
    ]
    parts: list[type] = [
        ReadFileCallPart,
        WriteFileCallPart,
        EditFileCallPart,
        ListDirectoryCallPart,
        SearchFilesCallPart,
        FindFilesCallPart,
        CreateDirectoryCallPart,
        FileInfoCallPart,
        ListFilesCallPart,
        GrepCallPart,
        ReadFileReturnPart,
    ]
except ImportError:  # pydantic-ai-slim 2.57: no tool kinds, so neither kinds nor typed parts
    kinds, parts = [], []


def veto_env_files(event: FileChangeRequestEvent) -> None:
    """A listener: refuse every change to a `.env` file, keep the rest."""
    operation: FileOperation = event.operation
    if event.path.endswith('.env') and operation != 'create_directory':
        event.cancel(f'{event.path} is managed by the deploy pipeline ({len(event.diff)} diff chars)')


def describe(
    event: FileReadEvent
    | DirectoryListedEvent
    | FileWrittenEvent
    | FileEditedEvent
    | DirectoryCreatedEvent
    | FilesSearchedEvent
    | CommandStartedEvent
    | CommandOutputEvent
    | CommandFinishedEvent,
) -> str:
    """One line per event, using each class's own fields."""
    if isinstance(event, FileEditedEvent):
        return f'edited {event.path} ({event.content_hash}), diff {len(event.diff)} chars, cut={event.truncated}'
    if isinstance(event, FileWrittenEvent):
        return f'wrote {event.path} in {event.root_dir} ({event.content_hash})'
    if isinstance(event, FileReadEvent):
        return f'read {event.path} ({event.content_hash})'
    if isinstance(event, DirectoryListedEvent):
        return f'listed {event.path}: {event.entry_count} entries'
    if isinstance(event, DirectoryCreatedEvent):
        return f'created {event.path}'
    if isinstance(event, FilesSearchedEvent):
        kind: SearchKind = event.search
        return f'{kind} {event.pattern!r} under {event.path}: {event.match_count} (cut={event.truncated})'
    if isinstance(event, CommandStartedEvent):
        return f'started {event.command!r} as {event.pid}'
    if isinstance(event, CommandOutputEvent):
        return event.text
    code: int | None = event.exit_code
    lines: int | None = event.total_lines
    return f'{event.pid} finished ({code}), log {event.output_path} / {event.status_path}, {lines} lines'


def needs_a_person(change: PlannedChange) -> bool:
    """A `FileSystem(require_approval=...)` callable: edits of Python files, and anything over a known version."""
    hashed: str | None = change.content_hash
    return change.operation == 'edit' and change.path.endswith('.py') or (hashed is not None and change.truncated)


async def background_only(planned: PlannedCommand) -> bool:
    """A `Shell(require_approval=...)` callable (async): commands that keep running."""
    return planned.background and planned.tool_name in APPROVAL_TOOL_NAMES and bool(planned.cwd)


def gated() -> list[FileSystem[None] | Shell[None]]:
    """Every `require_approval` shape."""
    return [
        FileSystem[None](root_dir='.', require_approval=True),
        FileSystem[None](root_dir='.', require_approval=list(CHANGE_TOOL_NAMES[:1])),
        FileSystem[None](root_dir='.', require_approval=needs_a_person),
        Shell[None](require_approval=['rm', 'git']),
        Shell[None](require_approval=background_only),
    ]


def build_agent(workspace: str) -> Agent[None, str]:
    """An agent with both capabilities, configured through their public fields."""
    files = FileSystem[None](
        root_dir=workspace,
        denied_patterns=['secrets/**'],
        max_read_lines=500,
        tools=[*DEFAULT_TOOL_NAMES, *RIPGREP_TOOL_NAMES],
    )
    shell = Shell[None](allowed_commands=['ls', 'pytest'], default_timeout=10.0, persist_cwd=True, interactive=True)
    checkpoints = Checkpoints[None](tools=list(CHECKPOINT_TOOL_NAMES), exclude=['.git/', 'build/'], root=workspace)
    return Agent('test', deps_type=type(None), capabilities=[files, shell, ReadBeforeWrite[None](), checkpoints])


async def undo_last(checkpoints: Checkpoints[None]) -> list[str]:
    """The Checkpoints API: list, diff, rewind (a person's change refused, then forced)."""
    listed = checkpoints.list()
    print(len(checkpoints.pruned()))
    assert await checkpoints.list_async(run_id=None) == listed and await checkpoints.pruned_async() == []
    if not listed:
        return []
    last: str = listed[-1]['id']
    diffs: list[tuple[str, str]] = await checkpoints.diff(last)
    try:
        done = await checkpoints.rewind(to=last, paths=[path for path, _ in diffs])
    except CheckpointError:
        done = await checkpoints.rewind(to=last, force=True)
    return list(done['restored'])


def main() -> None:
    agent = build_agent('.')
    assert len(gated()) == 5
    toolsets: list[FileSystemToolset[None] | ShellToolset[None]] = []
    request = FileChangeRequestEvent(path='app/.env', root_dir='/srv', operation='write', diff='', truncated=False)
    veto_env_files(request)
    assert request.cancelled and request.cancel_reason is not None
    events = [
        FileReadEvent(path='a.txt', root_dir='/srv', content_hash='0123456789ab'),
        FileEditedEvent(path='a.txt', root_dir='/srv', content_hash='0123456789ab', diff='', truncated=False),
        FilesSearchedEvent(path='.', root_dir='/srv', pattern='TODO', search='grep', match_count=3, truncated=False),
        CommandFinishedEvent(pid=1, output_path='o', status_path='s', exit_code=0, truncated=False),
    ]
    for event in events:
        print(describe(event))
    fix = Replacement(old_text='a', new_text='b')
    names = {
        *FILE_SYSTEM_TOOL_NAMES,
        *READ_ONLY_TOOL_NAMES,
        *SHELL_TOOL_NAMES,
        *RUN_SCOPED_TOOL_NAMES,
        *SESSION_TOOL_NAMES,
    }
    print(
        agent.name,
        len(toolsets),
        fix.new_text,
        sorted(names)[0],
        FILE_SYSTEM_EVENTS,
        SHELL_EVENTS,
        MAX_EVENT_DIFF_CHARS + MAX_DIFF_SOURCE_CHARS,
        MAX_FOREGROUND_WAIT,
        len(LLM_API_KEY_ENV_PATTERNS),
        len(ARG_SHAPES) + len(kinds) + len(parts),
        len(DEFAULT_PROTECTED_PATTERNS) + len(DEFAULT_READ_ONLY_PATTERNS) + len(NON_INTERACTIVE_ENV),
        __version__,
    )


if __name__ == '__main__':
    main()
