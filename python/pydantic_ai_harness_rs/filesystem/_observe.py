"""`ReadBeforeWrite`: no write or edit of a file the run has not seen as it is (issue 9, section 1).

The observation policy of `dsh-tool-fs.md`, as a Pydantic AI capability beside `FileSystem`:
`Agent(capabilities=[FileSystem(...), ReadBeforeWrite()])`. Its `wrap_tool_execute` hook (the
hook one capability has on another's tool calls) makes the run's `Observations` current while
each tool call runs; the `FileSystem` toolset records into it what its reads, writes and edits
saw, and passes the version a change expects to the core as the change's guard. The core checks
that guard under the file's descriptor right before it replaces the file, and the toolset holds
the file's turn (`_locks.py`) from the check to the record, so parallel tool calls on one file
see each other's writes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import AgentDepsT, RunContext, ToolDefinition

from pydantic_ai_harness_rs._core import ConflictError

if TYPE_CHECKING:
    from pydantic_ai.capabilities.abstract import ValidatedToolArgs, WrapToolExecuteHandler

    from pydantic_ai_harness_rs._core import Outcome
    from pydantic_ai_harness_rs.filesystem._engine import Engine

__all__ = ['ReadBeforeWrite']

ABSENT = '<absent>'
"""The core's guard for "nothing may be at the path" (`ABSENT_HASH`, write.rs): create-only."""


def conflict(path: str, expected: str, got: str) -> ConflictError:
    """The core's conflict (`write.rs`, `conflict`) for a check made here: `path` as the model named
    it, the hash it was planned on and the one it has (`ABSENT`: no file)."""
    return ConflictError(
        f'Conflict: file {path!r} has changed (expected hash:{expected}, got hash:{got}). Re-read the file and retry.'
    )


class Observations:
    """What one run has seen of each file: the content hash of the version it last read or wrote,
    or `ABSENT` for a read that found nothing. Keys are `(engine.storage, lock_key)` (`_locks.py`)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[object, Hashable], str] = {}

    def saw(self, engine: object, key: Hashable, content_hash: str | None) -> None:
        """Record the version a read (`read_file`, `file_info` with a hash), write or edit saw."""
        if content_hash is not None:
            self._seen[(engine, key)] = content_hash

    def saw_absent(self, engine: object, key: Hashable) -> None:
        """Record that a read found no file at `key`: creating it is allowed."""
        self._seen[(engine, key)] = ABSENT

    def forget(self, engine: object, key: Hashable) -> None:
        """Drop what was seen of `key` (a change whose result's hash is not known)."""
        self._seen.pop((engine, key), None)

    def guard(self, engine: object, key: Hashable, path: str, expected_hash: str | None) -> str:
        """The content hash a change of `key` must find: the version last seen, or `ABSENT`
        (create-only) for a file never seen.

        Raises:
            ModelRetry: the model's own `expected_hash` is not the version this run last saw.
        """
        seen = self._seen.get((engine, key), ABSENT)
        if expected_hash is not None and expected_hash != seen:
            raise ModelRetry(stale_message(path, seen))
        return seen

    def refusal(self, path: str, guard: str) -> ModelRetry:
        """The retry for a change whose guard failed (the core's conflict, reworded)."""
        if guard == ABSENT:
            return ModelRetry(
                f'{path!r} exists and has not been read in this run: read it first (read_file), '
                'then retry. No changes were written.'
            )
        return ModelRetry(stale_message(path, guard))


def stale_message(path: str, seen: str) -> str:
    """A change against a version other than the one the run last saw."""
    if seen == ABSENT:
        return (
            f'{path!r} has not been read in this run: read it first (read_file), then retry. No changes were written.'
        )
    return (
        f'{path!r} has changed since this run last read it: read it again (read_file), then retry. '
        'No changes were written.'
    )


def _found_nothing(outcome: Outcome, path: str) -> bool:
    """A workspace-contract read or `file_info` of nothing: a result, not an error (0.62.0)."""
    return outcome.content_hash is None and outcome.text == f'Path not found: {path}'


async def note_read(engine: Engine, path: str, outcome: Outcome | None) -> None:
    """Record what a `read_file` or `file_info` saw (`None`: it found no file), when the run is observed."""
    observations = OBSERVING.get()
    if observations is None:
        return
    key = await engine.lock_key(path)
    if outcome is None or _found_nothing(outcome, path):
        observations.saw_absent(engine.storage, key)
    else:
        observations.saw(engine.storage, key, outcome.content_hash)


@dataclass
class GuardedChange:
    """One `write_file` / `edit_file` under the run's observations (`None`: not observed)."""

    observations: Observations | None
    engine: object
    key: Hashable
    path: str
    expected_hash: str | None
    """The guard the core checks: the model's `expected_hash`, or the version the run last saw."""

    @contextmanager
    def checked(self) -> Iterator[None]:
        """Reword the core's hash conflict as this policy's retry (read it first / again)."""
        try:
            yield
        except ConflictError as e:
            if self.observations is None or self.expected_hash is None or not str(e).startswith('Conflict: file '):
                raise
            raise self.observations.refusal(self.path, self.expected_hash) from e

    def saw(self, content_hash: str | None) -> None:
        """Record the version the change produced (`None`: unknown, so forgotten)."""
        if self.observations is None:
            return
        if content_hash is None:
            self.observations.forget(self.engine, self.key)
        else:
            self.observations.saw(self.engine, self.key, content_hash)


def guarded_change(engine: object, key: Hashable, path: str, expected_hash: str | None) -> GuardedChange:
    """The guard of a change of `key`, taken inside the file's turn.

    Raises:
        ModelRetry: observed, and the model's `expected_hash` is not the version the run last saw.
    """
    observations = OBSERVING.get()
    if observations is not None:
        expected_hash = observations.guard(engine, key, path, expected_hash)
    return GuardedChange(observations, engine, key, path, expected_hash)


OBSERVING: ContextVar[Observations | None] = ContextVar('pydantic_ai_harness_rs.read_before_write', default=None)
"""The `Observations` of the run whose tool call is running, set by `ReadBeforeWrite`; `None` without it."""


@dataclass
class ReadBeforeWrite(AbstractCapability[AgentDepsT]):
    """Refuse `FileSystem` writes and edits of files this run has not seen as they are.

    Add it beside `FileSystem`: `Agent(capabilities=[FileSystem(...), ReadBeforeWrite()])`. For
    every `FileSystem` of the agent, under either contract (`root_dir`, or a local or remote
    workspace), for one run:

    - An existing file the run has not read (`read_file`, or `file_info` showing its hash)
      cannot be overwritten (`write_file`) or edited (`edit_file`): a retry says to read it
      first, and the file is untouched.
    - A file read at one version and changed since (by anyone) cannot be written or edited: a
      retry says to read it again. The check compares content hashes, in the core, right
      before the file is replaced.
    - A path never seen may be created, create-only: if a file appears there meanwhile, the
      write is refused. A read that found no file records that absence, so creating it is
      allowed afterwards.
    - The run's own writes and edits count as reads of the version they produced.
    - A model's `expected_hash` must be the version the run last saw.

    State belongs to one run (`for_run` gives each run a fresh instance). Tool calls of one
    model response run concurrently: changes of one file take turns, each checked against the
    previous one's result. A file deleted after it was read may be written again (it is then
    created, create-only). Direct calls on the toolset (outside a run) are not observed.
    Beyond both references: the seed `dsh-tool-fs.md`'s observation policy (issue 9).
    """

    _observations: Observations = field(default_factory=Observations, init=False, repr=False, compare=False)

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> ReadBeforeWrite[AgentDepsT]:
        """A fresh instance per run: what one run saw never lets another write."""
        return replace(self)  # the same fields, new (empty) observations

    async def wrap_tool_execute(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        """Run the tool call with this run's observations current (only `FileSystem` tools use them)."""
        token = OBSERVING.set(self._observations)
        try:
            return await handler(args)
        finally:
            OBSERVING.reset(token)
