"""The `file_system` event family, with one class identity across both packages, and `announce`.

Pydantic AI registers one class per event kind, and listeners written against
`pydantic_ai_harness.filesystem.FileChangeRequestEvent` must receive our events. So when
`pydantic-ai-harness` is installed these names are *its* classes; otherwise they are defined
here with the same namespace, kinds, fields, dispatch modes and `cancel(reason)` behaviour.
`announce` puts a planned change to the listeners (`FileChangeRequestEvent`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai_harness_rs._identity import harness_objects

if TYPE_CHECKING:
    from pydantic_ai.tools import RunContext

    from pydantic_ai_harness_rs.filesystem._engine import Plan

FILE_SYSTEM_EVENTS = 'file_system'
"""The namespace of every FileSystem event (`kind` is `file_system.<name>`)."""

MAX_EVENT_DIFF_CHARS = 8192
"""Characters of a unified diff kept in an event before it is cut (and `truncated` set)."""

MAX_DIFF_SOURCE_CHARS = 4 * MAX_EVENT_DIFF_CHARS
"""Longest text (characters) on either side of a change that is still diffed; past it the diff is the headers."""

FileOperation = Literal['write', 'edit', 'create_directory', 'delete']
"""The change a `FileChangeRequestEvent` announces (`'delete'`: a file `apply_patch` removes; ours)."""

SearchKind = Literal['find', 'grep']
"""Whether a `FilesSearchedEvent` matched names (`find_files`, `list_files`) or contents (`search_files`, `grep`)."""

_CLASSES = (
    'FileReadEvent DirectoryListedEvent FileWrittenEvent FileEditedEvent DirectoryCreatedEvent FilesSearchedEvent '
    'FileChangeRequestEvent'
).split()
_THEIRS = None if TYPE_CHECKING else harness_objects('pydantic_ai_harness.filesystem', _CLASSES)

if _THEIRS is not None:  # type checkers see the classes defined below, whichever branch runs
    globals().update(_THEIRS)
else:
    from pydantic_ai import CapabilityEvent

    @dataclass(kw_only=True)
    class FileReadEvent(CapabilityEvent, namespace=FILE_SYSTEM_EVENTS, name='file_read'):
        """`read_file` succeeded on `path` (root-relative), whose content hash is `content_hash`."""

        path: str
        root_dir: str
        content_hash: str

    @dataclass(kw_only=True)
    class DirectoryListedEvent(CapabilityEvent, namespace=FILE_SYSTEM_EVENTS, name='directory_listed'):
        """`list_directory` listed `path`, showing `entry_count` entries."""

        path: str
        root_dir: str
        entry_count: int

    @dataclass(kw_only=True)
    class FileWrittenEvent(CapabilityEvent, namespace=FILE_SYSTEM_EVENTS, name='file_written'):
        """`write_file` (or, through the subclass, `edit_file`) changed `path`; `content_hash` is the new content's."""

        path: str
        root_dir: str
        content_hash: str

    @dataclass(kw_only=True)
    class FileEditedEvent(FileWrittenEvent, name='file_edited'):
        """`edit_file` changed `path` in place; `diff` goes from the old content to the new one."""

        diff: str
        truncated: bool

    @dataclass(kw_only=True)
    class DirectoryCreatedEvent(CapabilityEvent, namespace=FILE_SYSTEM_EVENTS, name='directory_created'):
        """`create_directory` created `path` and any missing parents."""

        path: str
        root_dir: str

    @dataclass(kw_only=True)
    class FilesSearchedEvent(CapabilityEvent, namespace=FILE_SYSTEM_EVENTS, name='files_searched'):
        """A search under `path` finished: `match_count` results reached the model; `truncated` if capped."""

        path: str
        root_dir: str
        pattern: str
        search: SearchKind
        match_count: int
        truncated: bool

    @dataclass(kw_only=True)
    class FileChangeRequestEvent(
        CapabilityEvent, namespace=FILE_SYSTEM_EVENTS, name='file_change_request', dispatch='immediate'
    ):
        """A change to `path` is about to be applied; a listener may `cancel(reason)` it.

        Emitted after the access and conflict checks, so listeners only see changes that would
        go ahead. `diff` is the unified diff from the current to the proposed content (none for
        `create_directory`), cut at `MAX_EVENT_DIFF_CHARS` with `truncated` set.
        """

        path: str
        root_dir: str
        operation: FileOperation
        diff: str
        truncated: bool
        cancelled: bool = False
        cancel_reason: str | None = None

        def cancel(self, reason: str | None = None) -> None:
            """Stop the change; the last `reason` given (if any) is the tool result the model gets."""
            self.cancelled = True
            if reason is not None or self.cancel_reason is None:
                self.cancel_reason = reason


@dataclass(frozen=True)
class Announcement:
    """A change to announce made in Python (the custom-streams path): a `FileChangeRequestEvent`'s fields."""

    path: str
    root_dir: str
    operation: FileOperation
    diff: str
    truncated: bool


_REFUSALS: dict[str, str] = {
    'write': 'was not written',
    'edit': 'was not edited',
    'create_directory': 'was not created',
    'delete': 'was not deleted',
}
"""How a cancelled change is worded in the tool result, by operation."""


async def announce(ctx: RunContext[Any] | None, plan: Plan | Announcement) -> str | None:
    """Announce `plan` with a `FileChangeRequestEvent`; the tool result if a listener cancelled it.

    Outside a run there is nobody to ask. The core's `commit` re-resolves the path after
    the listener returns, so a path replaced while the request was held fails there.
    """
    if ctx is None:
        return None
    event = FileChangeRequestEvent(
        path=plan.path,
        root_dir=plan.root_dir,
        operation=plan.operation,
        diff=plan.diff,
        truncated=plan.truncated,
    )
    await ctx.emit(event)
    if not event.cancelled:
        return None
    reason = event.cancel_reason or 'cancelled by a listener'
    return f'[{plan.path!r} {_REFUSALS[plan.operation]}: {reason}]'
