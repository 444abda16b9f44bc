"""Progress events of the persistent `shell` tool, in the `shell` namespace.

Pydantic AI registers one class per event kind, and listeners written against
`pydantic_ai_harness.shell` must receive these events: so when `pydantic-ai-harness` is
importable its classes are used, and otherwise identical ones are defined here (same
namespace, names and fields). Events carry command text and output: render them as untrusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic_ai_harness_rs._identity import harness_objects

SHELL_EVENTS = 'shell'
"""The event namespace of Shell's events."""

_CLASSES = ('CommandStartedEvent', 'CommandOutputEvent', 'CommandFinishedEvent')
_THEIRS = None if TYPE_CHECKING else harness_objects('pydantic_ai_harness.shell._events', _CLASSES)

USING_HARNESS_EVENTS = _THEIRS is not None
"""Whether the classes are `pydantic_ai_harness`'s own."""

if _THEIRS is not None:  # type checkers see the classes defined below, whichever branch runs
    globals().update(_THEIRS)
else:
    from pydantic_ai import CapabilityEvent

    @dataclass(kw_only=True)
    class CommandStartedEvent(CapabilityEvent, namespace=SHELL_EVENTS, name='command_started'):  # type: ignore[no-redef]
        """A command's supervisor started; its output log combines stdout and stderr."""

        command: str
        """The command as the model wrote it."""
        pid: int
        """The supervisor's PID."""

    @dataclass(kw_only=True)
    class CommandOutputEvent(CapabilityEvent, namespace=SHELL_EVENTS, name='command_output'):  # type: ignore[no-redef]
        """A chunk (at most 4,096 bytes of log) of the command's combined output, decoded incrementally."""

        text: str
        """The decoded chunk."""

    @dataclass(kw_only=True)
    class CommandFinishedEvent(CapabilityEvent, namespace=SHELL_EVENTS, name='command_finished'):  # type: ignore[no-redef]
        """The tool stopped waiting; the command may still be running.

        `exit_code` is `None` while no completed status has been published.
        """

        pid: int
        """The supervisor's PID."""
        output_path: str
        """The combined log's path in the workspace."""
        status_path: str
        """The JSON status file's path in the workspace."""
        exit_code: int | None
        """The command's exit status, `None` while it runs."""
        truncated: bool
        """Whether the log held more than the output events showed."""
        total_lines: int | None = 0
        """Logical lines in the log up to 1 MiB; `None` for larger logs, which are not scanned."""


__all__ = ['SHELL_EVENTS', 'USING_HARNESS_EVENTS', 'CommandFinishedEvent', 'CommandOutputEvent', 'CommandStartedEvent']
