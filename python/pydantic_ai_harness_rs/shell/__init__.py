"""Shell capability: command execution for agents, backed by a Rust process supervisor.

Drop-in for `pydantic_ai_harness.shell`: same tools, arguments, results, errors and events.
"""

from pydantic_ai_harness_rs.shell._approval import APPROVAL_TOOL_NAMES, PlannedCommand
from pydantic_ai_harness_rs.shell._capability import LLM_API_KEY_ENV_PATTERNS, Shell
from pydantic_ai_harness_rs.shell._events import (
    SHELL_EVENTS,
    CommandFinishedEvent,
    CommandOutputEvent,
    CommandStartedEvent,
)
from pydantic_ai_harness_rs.shell._modes import NON_INTERACTIVE_ENV
from pydantic_ai_harness_rs.shell._persistent import MAX_FOREGROUND_WAIT
from pydantic_ai_harness_rs.shell._sessions import SESSION_TOOL_NAMES
from pydantic_ai_harness_rs.shell._toolset import RUN_SCOPED_TOOL_NAMES, SHELL_TOOL_NAMES, ShellToolset

__all__ = [
    'APPROVAL_TOOL_NAMES',
    'LLM_API_KEY_ENV_PATTERNS',
    'MAX_FOREGROUND_WAIT',
    'NON_INTERACTIVE_ENV',
    'PlannedCommand',
    'RUN_SCOPED_TOOL_NAMES',
    'SESSION_TOOL_NAMES',
    'SHELL_EVENTS',
    'SHELL_TOOL_NAMES',
    'CommandFinishedEvent',
    'CommandOutputEvent',
    'CommandStartedEvent',
    'Shell',
    'ShellToolset',
]
