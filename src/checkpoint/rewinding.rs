//! A store's rewinds: the plan of putting the workspace back as it was before a checkpoint, and
//! its commit, each in one locked step ([`CheckpointStore::rewind`]) or in two with an approval
//! between them ([`CheckpointStore::plan_rewind`], [`CheckpointStore::commit_rewind`]). With a
//! background job open, what it changed since the last look is counted against its call in the
//! same step, first (see [`super::jobs`] for who follows a job). The plan and its commit on disk
//! are [`rewind`]'s.

use std::path::PathBuf;
use std::sync::MutexGuard;

use super::coord::Hold;
use super::scan::{self, rescan};
use super::{io_error, normalize_all, rewind, CallInfo, CheckpointStore, Inner, Listing, LogWrite};
use crate::error::{Error, ErrorKind, Result};
use crate::fs::root::path::Beneath;

/// An open background job as a rewind's locked step sees it: its call, and what tells whether it
/// did anything since the last look at it.
#[derive(Debug, Clone)]
pub struct JobLook {
    /// The call that started the job (its checkpoints get the job's changes).
    pub call: CallInfo,
    /// The job's directory and the CPU time (nanoseconds) its processes had used as the last
    /// look at it started: the same reading after this step's walk means the job ran no
    /// instruction since, so what the walk found is someone else's, not the job's. `None`: not
    /// known (everything found is counted against the job).
    pub since: Option<(PathBuf, u64)>,
}

impl From<CallInfo> for JobLook {
    fn from(call: CallInfo) -> JobLook {
        JobLook { call, since: None }
    }
}

impl JobLook {
    /// Whether the job may have run since the last look (see [`JobLook::since`]).
    fn ran(&self) -> bool {
        match &self.since {
            Some((dir, cpu)) => crate::process::job::cpu_ns(dir) != Some(*cpu),
            None => true,
        }
    }
}

/// How many times a rewind with a job open reads again the paths its plan finds changed by
/// someone else, counting what the job changed meanwhile ([`CheckpointStore::plan_with_job`]).
const JOB_SETTLES: usize = 8;

impl CheckpointStore {
    /// What rewinding to the state before checkpoint `to` (and every later one) would do;
    /// with `paths`, only those paths (a directory: everything below it). Changes nothing.
    ///
    /// Errors: `Conflict` for an unknown or pruned id.
    pub fn plan_rewind(&self, to: &str, paths: Option<&[Vec<u8>]>) -> Result<rewind::Plan> {
        self.plan_rewind_with_job(to, paths, None)
            .map(|(plan, _)| plan)
    }

    /// [`CheckpointStore::plan_rewind`], what an open background job changed since the last look
    /// at it counted against its call `job` first, in the same locked step
    /// ([`CheckpointStore::count_for_job`]; `None`: no job open). Returns the plan and the
    /// listing of the job's call's latest checkpoint when it changed something.
    ///
    /// Errors: as `plan_rewind`; `InvalidArgument` for a job without a tool call id.
    pub fn plan_rewind_with_job(
        &self,
        to: &str,
        paths: Option<&[Vec<u8>]>,
        job: Option<&JobLook>,
    ) -> Result<(rewind::Plan, Option<Listing>)> {
        let (beneath, _hold, mut inner, paths, counted) = self.begin_rewind(paths, job)?;
        self.plan_with_job(&mut inner, &beneath, to, paths, job, counted)
    }

    /// The plan of the rewind to before `to`, made in the caller's locked step after
    /// [`CheckpointStore::count_for_job`] brought the index up to the tree (`counted`: what it
    /// returned). With a job open (`job`), a path the plan finds changed since its last recorded
    /// state and also since that look was changed by the job in the moment between the two (a
    /// job rewriting a file every few milliseconds): it is counted against the job's call too
    /// (only those paths read again) and the plan made again, up to [`JOB_SETTLES`] times, so it
    /// is not refused as someone else's change. A path changed before the look (taken into the
    /// baseline then) stays someone else's. Returns the plan and the job's call's latest listing
    /// when anything was counted.
    ///
    /// Errors: as [`rewind::plan`]; `Io` when a path cannot be read or its bytes kept.
    pub(super) fn plan_with_job(
        &self,
        inner: &mut Inner,
        beneath: &Beneath,
        to: &str,
        paths: Option<Vec<Vec<u8>>>,
        job: Option<&JobLook>,
        mut counted: Option<Listing>,
    ) -> Result<(rewind::Plan, Option<Listing>)> {
        let mut plan = rewind::plan(inner, beneath, &self.objects, to, paths.clone())?;
        let Some(job) = job else {
            return Ok((plan, counted));
        };
        for _ in 0..JOB_SETTLES {
            if plan.conflicts.is_empty() {
                break;
            }
            let found = self.read_changes(inner, beneath, plan.conflicts.clone())?;
            if found.is_empty() || !job.ran() {
                break; // someone else's: from before the look, or the job did nothing since
            }
            if let Some(listing) = self.attribute_listed(inner, &job.call, found, true)? {
                counted = Some(listing);
            }
            plan = rewind::plan(inner, beneath, &self.objects, to, paths.clone())?;
        }
        Ok((plan, counted))
    }

    /// Within the caller's locked step (a rewind's), what an open background job changed since
    /// the last look at it (which brought the index up to the tree): a walk, and what differs
    /// from the index added to the checkpoints of the job's call `job` ([`Log::add_later`]: a
    /// path a later checkpoint changed goes to a new checkpoint of the call), or appended as its
    /// checkpoint. A change the job makes between that look and the rewind is then the call's,
    /// not someone else's; unless the job ran no instruction since that look
    /// ([`JobLook::since`]), when what was found is someone else's. Nothing to do for `None`.
    /// Returns the listing of the call's latest checkpoint; `None` when nothing was counted.
    ///
    /// Errors: `InvalidArgument` for a job without a tool call id; `Io` for a full disk.
    fn count_for_job(
        &self,
        inner: &mut Inner,
        beneath: &Beneath,
        job: Option<&JobLook>,
    ) -> Result<Option<Listing>> {
        let Some(job) = job else {
            return Ok(None);
        };
        if job.call.tool_call_id.is_none() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "Changes are counted against a call with a tool call id.",
            ));
        }
        let prev = inner.last_walk.take();
        let walk = rescan(beneath, b"", &self.excludes, scan::threads(), prev.as_ref())?;
        let found = self.settle_walk(inner, beneath, &walk)?;
        inner.last_walk = Some(walk);
        if !job.ran() {
            return Ok(None); // it did nothing since the last look: what was found is the baseline's
        }
        self.attribute_listed(inner, &job.call, found, true)
    }

    /// Commits a rewind planned by [`CheckpointStore::plan_rewind`] (`pinned`: each planned
    /// path and the current hash the plan saw). See [`rewind::commit`].
    ///
    /// Errors: `Conflict` naming the files changed by someone else (unless `force`), or
    /// changed since the plan; `Io` for a full disk.
    pub fn commit_rewind(
        &self,
        to: &str,
        paths: Option<&[Vec<u8>]>,
        pinned: &[(Vec<u8>, Option<String>)],
        force: bool,
    ) -> Result<rewind::Rewound> {
        self.commit_rewind_with_job(to, paths, pinned, force, None)
            .map(|(done, _)| done)
    }

    /// [`CheckpointStore::commit_rewind`], an open background job's changes since the last look
    /// counted against its call `job` first, in the same locked step (see
    /// [`CheckpointStore::plan_rewind_with_job`]): one on a planned path is then a recorded change
    /// since the plan (rewind again), not someone else's. Returns what was done and the listing
    /// of the job's call's latest checkpoint when it changed something.
    ///
    /// Errors: as `commit_rewind`; `InvalidArgument` for a job without a tool call id.
    pub fn commit_rewind_with_job(
        &self,
        to: &str,
        paths: Option<&[Vec<u8>]>,
        pinned: &[(Vec<u8>, Option<String>)],
        force: bool,
        job: Option<&JobLook>,
    ) -> Result<(rewind::Rewound, Option<Listing>)> {
        let (beneath, _hold, mut inner, paths, counted) = self.begin_rewind(paths, job)?;
        let (plan, counted) = self.plan_with_job(&mut inner, &beneath, to, paths, job, counted)?;
        let done = rewind::commit(
            &mut inner,
            &beneath,
            &self.objects,
            &plan,
            pinned,
            force,
            job.is_some(),
        )?;
        inner.index_dirty = true;
        self.persist(&mut inner, LogWrite::Whole, true)?;
        Ok((done, counted))
    }

    /// Plans and commits the rewind to the state before checkpoint `to` (and every later one)
    /// in one step under the store's lock, the latest log and index loaded first: no other
    /// process's checkpointed call lands between the plan and the commit, so a change a
    /// checkpoint records is never taken for someone else's. `paths`: as `plan_rewind`. Returns
    /// the plan (what was found, its `unrestorable` paths) and what was done.
    ///
    /// Errors: `Conflict` for an unknown or pruned id, or naming the files changed by someone
    /// else (unless `force`); `Io` for a full disk.
    pub fn rewind(
        &self,
        to: &str,
        paths: Option<&[Vec<u8>]>,
        force: bool,
    ) -> Result<(rewind::Plan, rewind::Rewound)> {
        self.rewind_with_job(to, paths, force, None)
            .map(|(plan, done, _)| (plan, done))
    }

    /// [`CheckpointStore::rewind`], an open background job's changes since the last look counted
    /// against its call `job` first, in the same locked step (see
    /// [`CheckpointStore::plan_rewind_with_job`]): a change it made as the rewind started is its
    /// call's, undone with it when that call's checkpoint is rewound, never refused as someone
    /// else's. Returns the plan, what was done, and the listing of the job's call's latest
    /// checkpoint when it changed something (before the rewind dropped it).
    ///
    /// Errors: as `rewind`; `InvalidArgument` for a job without a tool call id.
    pub fn rewind_with_job(
        &self,
        to: &str,
        paths: Option<&[Vec<u8>]>,
        force: bool,
        job: Option<&JobLook>,
    ) -> Result<(rewind::Plan, rewind::Rewound, Option<Listing>)> {
        let (beneath, _hold, mut inner, paths, counted) = self.begin_rewind(paths, job)?;
        let (plan, counted) = self.plan_with_job(&mut inner, &beneath, to, paths, job, counted)?;
        let done = rewind::apply(&mut inner, &beneath, &self.objects, &plan, force)?;
        inner.index_dirty = true;
        self.persist(&mut inner, LogWrite::Whole, true)?;
        Ok((plan, done, counted))
    }

    /// What a rewind's plan or commit starts from: the root opened, a hold of the lock with the
    /// state current, an open background job's changes counted against its call `job` (see
    /// [`CheckpointStore::count_for_job`]; its call's latest listing when it changed something),
    /// the writer thread's queued objects and lines on disk (see `later`), and `paths`
    /// normalized.
    ///
    /// Errors: as [`normalize`]; `InvalidArgument` for a job without a tool call id; `Io` when
    /// the root, the lock, the job's walk or a queued write fails.
    #[allow(clippy::type_complexity)]
    pub(super) fn begin_rewind(
        &self,
        paths: Option<&[Vec<u8>]>,
        job: Option<&JobLook>,
    ) -> Result<(
        Beneath,
        Hold<'_>,
        MutexGuard<'_, Inner>,
        Option<Vec<Vec<u8>>>,
        Option<Listing>,
    )> {
        let beneath = self.beneath()?;
        let (hold, mut inner) = self.begin()?;
        let counted = self.count_for_job(&mut inner, &beneath, job)?;
        self.objects.flush().map_err(|e| io_error(&e))?;
        Ok((beneath, hold, inner, normalize_all(paths)?, counted))
    }
}
