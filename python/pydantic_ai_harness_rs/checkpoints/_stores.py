"""One checkpoint store per workspace root, its turn, and the background jobs still writing to it.

`RootState` wraps the core's `CheckpointStore` (`_core`, Rust: snapshots, content-addressed old
bytes, rewind plans and commits) for one root. Every store call runs in a worker thread (the core
releases the GIL), so the event loop never waits on a walk or a copy. Checkpointed calls on one
root take turns (`turn`): a shell command's before/after walks then see only its own changes.

A background job (`start_command`, or `shell` still running when the call returns) stays open:
what changed while it ran is counted against the checkpoint of the call that started it
(`sweep_jobs`, at the start of every later tool call, and in `Checkpoints.list_async`/`diff`/`rewind`); a
change of a file a later checkpoint changed too goes to a new checkpoint of that call (the store's
`extend`), and so does what it changes after its checkpoint was rewound. The process following a job
keeps a locked record of it in the store (`follow_job`); should that process end while the job runs,
the next sweep in any process on the store takes the job over (`orphaned_jobs`), and what the job
changed meanwhile is still its call's.
"""

from __future__ import annotations

import asyncio
import functools
import os
import posixpath
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from pydantic_ai_harness_rs import _core
from pydantic_ai_harness_rs.checkpoints._recording import call_info

if TYPE_CHECKING:
    from pydantic_ai_harness_rs.checkpoints._recording import CallRecorder


@dataclass
class OpenJob:
    """A background job started by a checkpointed call, whose changes still count against it."""

    directory: str
    """The job's directory (`.pydantic-ai-harness/shell/<id>`), where its status is published."""
    run_id: str | None
    tool_call_id: str | None
    tool_name: str
    created_at: float
    checkpoint_id: str | None = None
    """A checkpoint of its call (the latest seen), whose call its changes go to; `None` until it changed
    something."""
    handle: int | None = None
    """While `checkpoint_id` is `None`: the snapshot the job's changes are looked for against (the
    store leaves out what other calls recorded meanwhile), recorded as its checkpoint once it
    changed something. `None` with no checkpoint either: a job taken over from a process that
    ended (`RootState.sweep_jobs`), whose changes are what differs from the index on disk."""
    cpu: int | None = None
    """The CPU time (nanoseconds) its processes had used as the last look at it started
    (`_core.job_cpu_ns`; `None`: not known). The same reading after a later look's walk means the job
    ran no instruction in between: what that look found is someone else's, not the job's."""

    async def finished(self) -> bool:
        """Whether the job is over: exited, stopped and cleaned up, or killed with nothing of it left
        running (`_core.job_ended`)."""
        return await anyio.to_thread.run_sync(_core.job_ended, self.directory)

    async def cpu_now(self) -> int | None:
        """The CPU time (nanoseconds) its processes have used so far; `None` when it cannot be told."""
        return await anyio.to_thread.run_sync(_core.job_cpu_ns, self.directory)

    def call(self) -> dict[str, Any]:
        """Its call as the store's job methods name it (`run_id`, `tool_call_id`)."""
        return {'run_id': self.run_id, 'tool_call_id': self.tool_call_id}


_TURNS: anyio.lowlevel.RunVar[weakref.WeakKeyDictionary[RootState, anyio.Lock]] = anyio.lowlevel.RunVar(
    'harness_checkpoint_turns'
)


class RootState:
    """The store of one workspace root (absolute, symlink-free) and its open background jobs."""

    def __init__(self, root: str, store: _core.CheckpointStore) -> None:
        self.root = root
        self.store = store
        self.jobs: list[OpenJob] = []
        self._last_turn: tuple[weakref.ref[asyncio.AbstractEventLoop], anyio.Lock] | None = None
        """The turn last asked for under asyncio, with its event loop (most calls ask on the loop that
        asked last: found without anyio's run-variable lookup)."""

    def turn(self) -> anyio.Lock:
        """This root's turn (one per event loop), held with `async with`: checkpointed calls on it run
        one at a time."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # another backend (trio)
            loop = None
        last = self._last_turn
        if loop is not None and last is not None and last[0]() is loop:
            return last[1]
        lock = self._turn_of_run()
        if loop is not None:
            try:
                self._last_turn = (weakref.ref(loop), lock)
            except TypeError:  # a loop without weak references: looked up each time
                pass
        return lock

    def _turn_of_run(self) -> anyio.Lock:
        try:
            turns = _TURNS.get()
        except LookupError:
            turns = weakref.WeakKeyDictionary()
            _TURNS.set(turns)
        lock = turns.get(self)
        if lock is None:
            # `fast_acquire`: an uncontended turn costs no trip through the event loop (a file tool's
            # checkpoint is a fraction of a millisecond; two trips would be most of it).
            lock = turns[self] = anyio.Lock(fast_acquire=True)
        return lock

    async def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """`store.<method>(*args, **kwargs)` in a worker thread.

        Raises:
            CheckpointError: the store's refusal (a model-safe message).
        """
        return await anyio.to_thread.run_sync(functools.partial(getattr(self.store, method), *args, **kwargs))

    async def plan_rewind(self, to: str, paths: list[str] | None) -> dict[str, Any]:
        """What rewinding to before `to` would do (`store.plan_rewind`); nothing changed but what an
        open job changed since the last look, counted against its call in the same step (`_job`)."""
        return await self._counted(await self.call('plan_rewind', to, paths, job=self._job()))

    async def commit_rewind(self, plan: dict[str, Any], *, force: bool = False) -> dict[str, Any]:
        """Commit `plan` (`store.commit_rewind`), an open job's latest changes counted first (`_job`):
        one on a planned path is a recorded change since the plan, to rewind again."""
        return await self._counted(await self.call('commit_rewind', plan, force=force, job=self._job()))

    async def rewind_whole(self, to: str, paths: list[str] | None, *, force: bool = False) -> dict[str, Any]:
        """Plan and commit the rewind to before `to` in one step under the store's lock
        (`store.rewind`): no other process's checkpointed call lands between the two, and what an open
        job changed since the last look is counted against its call first (`_job`), never taken for
        someone else's change. The commit's result with the plan's `unrestorable` paths."""
        return await self._counted(await self.call('rewind', to, paths, force=force, job=self._job()))

    def _job(self) -> dict[str, Any] | None:
        """The oldest open job (it gets the changes, as in `sweep_jobs`), for a rewind's store step to
        count what changed since the last look against; `None` without open jobs. With one job open and
        its CPU time at that look known, its directory and that reading (`directory`, `cpu`): the store
        step reads it again after its walk, and counts nothing against a job that ran no instruction
        since (a person's change then is refused without `force`). The caller holds the turn, after
        `sweep_jobs`."""
        if not self.jobs:
            return None
        job = self.jobs[0]
        found = call_info(job)
        if len(self.jobs) == 1 and job.cpu is not None:
            found.update(directory=job.directory, cpu=job.cpu)
        return found

    def _quiet(self, job: OpenJob, now: int | None) -> bool:
        """Whether `job` surely ran no instruction since the last look at it started: its CPU time read
        `now` is the one read then. Only with one job open (with several, a change is not told apart
        by job) and when both readings are known."""
        return len(self.jobs) == 1 and now is not None and now == job.cpu

    async def _counted(self, result: dict[str, Any]) -> dict[str, Any]:
        """`result` without its `job` key; a change that step counted against the oldest open job
        makes its call's latest checkpoint the job's (followed through `extend` from then on)."""
        listing = result.pop('job', None)
        if listing is not None and self.jobs:
            job = self.jobs[0]
            await self._moved(job, listing['id'])
            if job.handle is not None:
                with anyio.CancelScope(shield=True):
                    await self.call('release', job.handle)
                job.handle = None
        return result

    async def record_for_job(self, handle: int, recorder: CallRecorder) -> tuple[dict[str, Any] | None, int | None]:
        """`record` of the snapshot `handle` of a call that left a background job running: with the
        listing, a snapshot handle for the job's changes from then on when the call has no checkpoint
        yet (`None` otherwise). Taken in the same step as the record (`store.record_reopen`), so a
        change the job makes right after the record is counted, not taken into the baseline."""
        if recorder.once and (earlier := await self.recorded_for(recorder)) is not None:
            with anyio.CancelScope(shield=True):  # an earlier attempt's checkpoint: added to (`record`)
                listing = await self._extend_with_changes(earlier, handle)
                return listing, None if listing is not None else await self.call('snapshot')
        return await self._record_reopen(handle, recorder)

    async def _record_reopen(
        self, handle: int, call: CallRecorder | OpenJob
    ) -> tuple[dict[str, Any] | None, int | None]:
        """`store.record_reopen` as `call`'s (shielded): the listing, and the reopened handle while
        nothing is recorded (released otherwise: a job with a checkpoint is followed through `extend`)."""
        with anyio.CancelScope(shield=True):
            listing, reopened = await self.call('record_reopen', handle, **call_info(call))
            if listing is not None and reopened is not None:
                await self.call('release', reopened)
                reopened = None
        return listing, reopened

    async def record(self, handle: int, recorder: CallRecorder, *, kept: bool = False) -> dict[str, Any] | None:
        """Record `handle` as `recorder`'s call (shielded: a cancelled call's changes are still recorded).

        `recorder.once` (a durable unit) and a checkpoint of that call already there (an earlier
        attempt's): nothing appended; a snapshot's changes (`kept` false: a shell command) are added
        to that checkpoint instead (its listing returned), a kept file's handle is released (a
        retried commit finds the file already written, so it changes nothing again)."""
        listing: dict[str, Any] | None = None
        with anyio.CancelScope(shield=True):
            earlier = await self.recorded_for(recorder) if recorder.once else None
            if earlier is not None:
                if kept:
                    await self.call('release', handle)
                    return None
                return await self._extend_with_changes(earlier, handle)
            listing = await self.call('record', handle, **recorder.call_info())
        # A pending job's open snapshot needs nothing here: the store counts an entry only where it
        # differs from the index too, and this record brought the index up to what this call did.
        return listing

    async def recorded_for(self, recorder: CallRecorder) -> str | None:
        """The id of the checkpoint `recorder`'s call already has (same run and tool call id), if any."""
        if recorder.tool_call_id is None:
            return None
        listings = await self.call('list', recorder.run_id)
        return next((c['id'] for c in listings if c['tool_call_id'] == recorder.tool_call_id), None)

    async def _extend_with_changes(self, checkpoint_id: str, before: int) -> dict[str, Any] | None:
        """Add what changed since snapshot `before` (taken before the command) to `checkpoint_id`:
        `before` brought the index up to the tree then (what differed was taken into the baseline, as
        in any snapshot: the store cannot tell whose it was), so a snapshot now finds the command's
        changes against it. Both handles released."""
        try:
            after = await self.call('snapshot')
            try:
                return await self.call('extend', checkpoint_id, after)
            finally:
                await self.call('release', after)
        finally:
            await self.call('release', before)

    async def open_job(self, job: OpenJob, listing: dict[str, Any] | None, handle: int | None) -> None:
        """Keep counting `job`'s changes against its call's checkpoint (`listing`; `None`: none yet,
        then against `handle`, the snapshot kept open by that call's record: `record_for_job`), and
        keep its locked record in the store (`_follow`). `job.cpu`: read before that record."""
        if listing is not None:
            job.checkpoint_id = listing['id']
        else:
            job.handle = handle
        self.jobs.append(job)
        await self._follow(job)

    async def _follow(self, job: OpenJob) -> None:
        """Write `job`'s record in the store, locked while this process follows it (`store.follow_job`),
        so that another process takes it over should this one end first. A record that cannot be
        written (a full disk) is done without: only that takeover is lost."""
        try:
            await self.call('follow_job', job.directory, job.checkpoint_id, **call_info(job))
        except OSError:
            pass

    async def _moved(self, job: OpenJob, checkpoint_id: str) -> None:
        """`checkpoint_id` is now the latest checkpoint of `job`'s call: noted, in its record too."""
        if job.checkpoint_id != checkpoint_id:
            job.checkpoint_id = checkpoint_id
            await self._follow(job)

    def _adopt(self) -> None:
        """Follow the jobs whose follower's process ended while they ran (`store.orphaned_jobs`: their
        records' locks were free): the sweep that follows counts what they changed since the index on
        disk against their calls. Inline: without a `jobs/` directory in the store, one `lstat`."""
        found = self.store.orphaned_jobs()
        if found:
            self.jobs.extend(
                OpenJob(
                    r['directory'],
                    r['run_id'],
                    r['tool_call_id'],
                    r['tool_name'],
                    r['created_at'],
                    checkpoint_id=r['checkpoint_id'],
                )
                for r in found
            )
            self.jobs.sort(key=lambda job: job.created_at)

    async def sweep_jobs(self) -> None:
        """Count what the open jobs changed since the last look against their checkpoints; forget
        those that have finished (checked before the walk, so all a finished job did is seen).
        First, the jobs of a process that ended are taken over (`_adopt`). The caller holds the
        turn. With several jobs open, the oldest one gets the changes."""
        self._adopt()
        if not self.jobs:
            return
        with anyio.CancelScope(shield=True):
            for job in list(self.jobs):
                finished = await job.finished()
                before = await job.cpu_now()  # kept for the next look: a write during this one is its
                if job.checkpoint_id is None and job.handle is not None:
                    if not finished and self._quiet(job, before):
                        await self._renew(job, before)
                    else:
                        # The walk after the record stays open in the same step: a change the job
                        # makes right after it is the next look's (a snapshot taken separately would
                        # take it into the baseline).
                        listing, job.handle = await self._record_reopen(job.handle, job)
                        if listing is not None:
                            await self._moved(job, listing['id'])
                        elif finished and job.handle is not None:
                            await self.call('release', job.handle)
                            job.handle = None
                else:
                    handle = await self.call('snapshot')
                    try:
                        # Read after the walk: a job that ran while it went counts.
                        if finished or not self._quiet(job, await job.cpu_now()):
                            await self._count_found(job, handle)
                    finally:
                        await self.call('release', handle)
                job.cpu = before
                if finished:
                    self.jobs.remove(job)
                    await self.call('unfollow_job', **job.call())

    async def _count_found(self, job: OpenJob, handle: int) -> None:
        """What snapshot `handle` found, counted against `job`'s call: added to its checkpoint
        (`extend`), or appended as one (a job taken over with none yet, or whose checkpoint was
        rewound or pruned while it ran: what it changed since is still its call's)."""
        listing = None if job.checkpoint_id is None else await self.call('extend', job.checkpoint_id, handle)
        if listing is None:
            listing = await self._attribute(handle, job)
        if listing is not None:
            await self._moved(job, listing['id'])  # a later one of its call (`extend`)

    async def _renew(self, job: OpenJob, before: int | None) -> None:
        """A job with no checkpoint yet that did nothing since the last look (`_quiet`): its open
        snapshot is replaced by a new one, so what changed meanwhile (someone else's) is the baseline
        from now on, not its first checkpoint. Should it have run while the new snapshot walked (its
        CPU time moved since `before`), what that walk found is counted against it after all."""
        assert job.handle is not None
        await self.call('release', job.handle)
        job.handle = None
        handle = await self.call('snapshot')
        if await job.cpu_now() == before:
            job.handle = handle
            return
        try:
            listing = await self._attribute(handle, job)
        finally:
            await self.call('release', handle)
        if listing is not None:
            await self._moved(job, listing['id'])
        else:
            job.handle = await self.call('snapshot')

    async def count_for_jobs(self, handle: int) -> None:
        """What the snapshot `handle` of a call starting now (taken right after `sweep_jobs`) found against
        the baseline: a change an open job made between that look and the snapshot, counted against the
        oldest open job's checkpoint (appended when it has none yet) instead of taken into the baseline.
        The caller holds the turn."""
        if not self.jobs:
            return
        job = self.jobs[0]
        if self._quiet(job, await job.cpu_now()):
            return  # it did nothing since the look: what the snapshot found is someone else's
        with anyio.CancelScope(shield=True):
            listing = await self._attribute(handle, job)
            if listing is not None:
                await self._moved(job, listing['id'])  # followed through `extend` from now on
                if job.handle is not None:
                    await self.call('release', job.handle)
                    job.handle = None

    async def _attribute(self, handle: int, job: OpenJob) -> dict[str, Any] | None:
        """What snapshot `handle` found against the baseline, counted against `job`'s call
        (`store.attribute_found`): its latest checkpoint's listing, `None` when nothing was found."""
        return await self.call('attribute_found', handle, **call_info(job))


def job_directory_of(root: str, run_id: str | None, tool_call_id: str | None) -> str | None:
    """Where the background job of the call `tool_call_id` of `run_id` keeps its files (`None`: no id)."""
    from pydantic_ai_harness_rs.durable._commands import call_job_id
    from pydantic_ai_harness_rs.shell._workspace import METADATA_DIR

    job_id = call_job_id(run_id, tool_call_id)
    if job_id is None:
        return None
    return posixpath.join(root, METADATA_DIR, 'shell', job_id)


def real_root(path: str) -> str:
    """`path` absolute and symlink-free: the key a root's store is kept under."""
    return os.path.realpath(os.path.abspath(path))
