//! Bindings of the checkpoint store ([`crate::checkpoint`]): `CheckpointStore` and
//! `CheckpointError`. Every method releases the GIL; paths cross as `str` (bytes that are not
//! UTF-8 as `surrogateescape`'s lone surrogates, as `os.fsdecode` gives them).

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use std::sync::Arc;

use crate::checkpoint::around::Known;
use crate::checkpoint::jobs::JobRecord;
use crate::checkpoint::rewind::{Plan, Rewound};
use crate::checkpoint::rewinding::JobLook;
use crate::checkpoint::{io_error, CallInfo, CheckpointStore, For, Listing, Settings};
use crate::error::{Error, ErrorKind};
use crate::fs::change::write::{Operation, Plan as ChangePlan};
use crate::fs::patch::PatchPlan;
use crate::fs::root::path::Beneath;

use super::fs::{PyChangePlan, PyFileSystemCore, PyOutcome, PyPatchPlan};
use super::PyCancelToken;

create_exception!(
    _core,
    CheckpointError,
    PyException,
    "A checkpoint operation refused or failed; the message names root-relative paths only."
);

/// The core's error as Python sees it: OS failures (a full disk) as `OSError`, the rest as
/// `CheckpointError`.
pub(crate) fn to_py(err: Error) -> PyErr {
    match err.kind {
        ErrorKind::Io(_) | ErrorKind::Cancelled => err.into(),
        _ => CheckpointError::new_err(err.message),
    }
}

pub(crate) fn run<T: Send>(
    py: Python<'_>,
    op: impl FnOnce() -> crate::error::Result<T> + Send,
) -> PyResult<T> {
    py.detach(op).map_err(to_py)
}

/// A `str` path as bytes (`surrogateescape`).
pub(crate) fn path_bytes(s: &Bound<'_, PyString>) -> PyResult<Vec<u8>> {
    match s.to_str() {
        Ok(t) => Ok(t.as_bytes().to_vec()),
        Err(_) => Ok(s
            .call_method1("encode", ("utf-8", "surrogateescape"))?
            .cast::<PyBytes>()?
            .as_bytes()
            .to_vec()),
    }
}

/// The bytes a change plan writes, shared with the plan.
struct NewBytes(Arc<ChangePlan>);

impl AsRef<[u8]> for NewBytes {
    fn as_ref(&self) -> &[u8] {
        self.0.bytes()
    }
}

/// The bytes an edit's plan read, which its commit checks the file still holds.
struct OldBytes(Arc<ChangePlan>);

impl AsRef<[u8]> for OldBytes {
    fn as_ref(&self) -> &[u8] {
        self.0.old.as_deref().unwrap_or_default()
    }
}

/// The bytes a patch writes to its file `.1` (a file it removes: none).
struct PatchNew(Arc<PatchPlan>, usize);

impl AsRef<[u8]> for PatchNew {
    fn as_ref(&self) -> &[u8] {
        self.0.files[self.1].new.as_deref().unwrap_or_default()
    }
}

/// The bytes a patch's plan read from its file `.1`, which its commit checks the file still
/// holds.
struct PatchOld(Arc<PatchPlan>, usize);

impl AsRef<[u8]> for PatchOld {
    fn as_ref(&self) -> &[u8] {
        self.0.files[self.1].old.as_deref().unwrap_or_default()
    }
}

pub(crate) fn paths_of(list: Vec<Bound<'_, PyString>>) -> PyResult<Vec<Vec<u8>>> {
    list.iter().map(path_bytes).collect()
}

/// Path bytes as `str` (`surrogateescape`).
pub(crate) fn py_str<'py>(py: Python<'py>, p: &[u8]) -> PyResult<Bound<'py, PyString>> {
    match std::str::from_utf8(p) {
        Ok(t) => Ok(PyString::new(py, t)),
        Err(_) => Ok(PyBytes::new(py, p)
            .call_method1("decode", ("utf-8", "surrogateescape"))?
            .cast_into::<PyString>()?),
    }
}

/// Path bytes as `str`s (`surrogateescape`).
pub(crate) fn py_strs<'py>(py: Python<'py>, ps: &[Vec<u8>]) -> PyResult<Vec<Bound<'py, PyString>>> {
    ps.iter().map(|p| py_str(py, p)).collect()
}

pub(crate) fn py_paths<'py>(py: Python<'py>, ps: &[Vec<u8>]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, py_strs(py, ps)?)
}

pub(crate) fn listing<'py>(py: Python<'py>, l: &Listing) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", &l.id)?;
    d.set_item("run_id", &l.run_id)?;
    d.set_item("tool_call_id", &l.tool_call_id)?;
    d.set_item("tool_name", &l.tool_name)?;
    d.set_item("paths", py_paths(py, &l.paths)?)?;
    d.set_item("created_at", l.created_at)?;
    d.set_item("bytes_kept", l.bytes_kept)?;
    Ok(d)
}

/// A listing as [`listing`] gives it, or `None`.
pub(crate) fn maybe_listing<'py>(
    py: Python<'py>,
    l: Option<Listing>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    l.map(|l| listing(py, &l)).transpose()
}

/// Listings as [`listing`] gives them, in order.
pub(crate) fn listings<'py>(py: Python<'py>, ls: &[Listing]) -> PyResult<Vec<Bound<'py, PyDict>>> {
    ls.iter().map(|l| listing(py, l)).collect()
}

/// A checkpoint's diff as `[(path, diff text), ...]`.
pub(crate) fn diffs(
    py: Python<'_>,
    d: Vec<(Vec<u8>, String)>,
) -> PyResult<Vec<(Bound<'_, PyString>, String)>> {
    d.into_iter()
        .map(|(p, t)| Ok((py_str(py, &p)?, t)))
        .collect()
}

pub(crate) fn plan_dict<'py>(py: Python<'py>, plan: &Plan) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("to", &plan.to)?;
    match &plan.paths {
        Some(ps) => d.set_item("paths", py_paths(py, ps)?)?,
        None => d.set_item("paths", py.None())?,
    }
    let files = PyList::empty(py);
    for f in &plan.files {
        let fd = PyDict::new(py);
        fd.set_item("path", py_str(py, &f.path)?)?;
        fd.set_item("action", f.action.as_str())?;
        fd.set_item("old_hash", &f.old_hash)?;
        fd.set_item("new_hash", &f.new_hash)?;
        fd.set_item("diff", &f.diff)?;
        files.append(fd)?;
    }
    d.set_item("files", files)?;
    d.set_item("conflicts", py_paths(py, &plan.conflicts)?)?;
    d.set_item("unrestorable", py_paths(py, &plan.unrestorable)?)?;
    Ok(d)
}

fn rewound_dict<'py>(py: Python<'py>, r: &Rewound) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("restored", py_paths(py, &r.restored)?)?;
    d.set_item("deleted", py_paths(py, &r.deleted)?)?;
    d.set_item("removed_dirs", py_paths(py, &r.removed_dirs)?)?;
    d.set_item("failed", py_paths(py, &r.failed)?)?;
    Ok(d)
}

/// `to`, `paths` and the pinned `(path, old_hash)` of a plan dict (from `plan_rewind`).
///
/// Errors: `CheckpointError` for a dict that is not such a plan.
#[allow(clippy::type_complexity)]
pub(crate) fn plan_parts(
    plan: &Bound<'_, PyDict>,
) -> PyResult<(String, Option<Vec<Vec<u8>>>, Vec<(Vec<u8>, Option<String>)>)> {
    let bad = || CheckpointError::new_err("Not a plan from plan_rewind().");
    let to: String = plan.get_item("to")?.ok_or_else(bad)?.extract()?;
    let paths: Option<Vec<Bound<'_, PyString>>> = match plan.get_item("paths")? {
        Some(p) if !p.is_none() => Some(p.extract()?),
        _ => None,
    };
    let paths = paths.map(paths_of).transpose()?;
    let mut pinned = Vec::new();
    for f in plan.get_item("files")?.ok_or_else(bad)?.try_iter()? {
        let f = f?;
        let path = f.get_item("path")?;
        pinned.push((
            path_bytes(path.cast::<PyString>()?)?,
            f.get_item("old_hash")?.extract()?,
        ));
    }
    Ok((to, paths, pinned))
}

/// A store's settings from its constructor's arguments (`exclude`: `[".git/"]` when `None`).
pub(crate) fn settings(
    exclude: Option<Vec<String>>,
    max_file_bytes: u64,
    budget_bytes: u64,
) -> Settings {
    Settings {
        exclude: exclude.unwrap_or_else(|| vec![".git/".into()]),
        max_file_bytes,
        budget_bytes,
    }
}

/// The call a record is for.
pub(crate) fn call_info(
    run_id: Option<String>,
    tool_call_id: Option<String>,
    tool_name: String,
    created_at: f64,
) -> CallInfo {
    CallInfo {
        run_id,
        tool_call_id,
        tool_name,
        created_at,
    }
}

/// The call a keep or snapshot is for: `None` without a tool call id.
pub(crate) fn call_of(
    run_id: Option<String>,
    tool_call_id: Option<String>,
    tool_name: String,
    created_at: f64,
) -> Option<CallInfo> {
    tool_call_id
        .is_some()
        .then(|| call_info(run_id, tool_call_id, tool_name, created_at))
}

/// The checkpoints of one workspace root, kept in `<root>/.pydantic-ai-harness/checkpoints/`.
#[pyclass(
    name = "CheckpointStore",
    module = "pydantic_ai_harness_rs._core",
    frozen
)]
pub struct PyCheckpointStore {
    store: CheckpointStore,
}

#[pymethods]
impl PyCheckpointStore {
    #[new]
    #[pyo3(signature = (root, *, exclude = None, max_file_bytes = 67_108_864, budget_bytes = 1_073_741_824))]
    fn new(
        py: Python<'_>,
        root: String,
        exclude: Option<Vec<String>>,
        max_file_bytes: u64,
        budget_bytes: u64,
    ) -> PyResult<Self> {
        let settings = settings(exclude, max_file_bytes, budget_bytes);
        let store = run(py, move || CheckpointStore::open(&root, settings))?;
        Ok(PyCheckpointStore { store })
    }

    /// Captures the current state of `paths` before a file tool's change; returns a handle (the
    /// store's lock held until its record or release). With `tool_call_id` (a durable unit's
    /// call): the call's record on disk (see `CheckpointStore::keep_call`).
    #[pyo3(signature = (paths, *, run_id = None, tool_call_id = None, tool_name = String::new(), created_at = 0.0))]
    fn keep(
        &self,
        py: Python<'_>,
        paths: Vec<Bound<'_, PyString>>,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
    ) -> PyResult<u64> {
        let paths = paths_of(paths)?;
        let call = call_of(run_id, tool_call_id, tool_name, created_at);
        let purpose = call.as_ref().map_or(For::Call, For::Durable);
        run(py, || self.store.keep_call(&paths, purpose))
    }

    /// Walks the tree, keeping what differs from the index; returns a handle. `call`: before a
    /// shell command (the store's lock held until its record or release); with `tool_call_id`
    /// as well: the call's record on disk, as `keep` (`durable`), or, for a command outside a
    /// durable unit, for the next process to record should this one die mid-command (see
    /// `CheckpointStore::snapshot_call`).
    #[pyo3(signature = (*, call = false, run_id = None, tool_call_id = None, tool_name = String::new(), created_at = 0.0, durable = true))]
    #[allow(clippy::too_many_arguments)]
    fn snapshot(
        &self,
        py: Python<'_>,
        call: bool,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
        durable: bool,
    ) -> PyResult<u64> {
        let identity = call_of(run_id, tool_call_id, tool_name, created_at);
        let purpose = match (&identity, call) {
            (Some(c), _) if durable => For::Durable(c),
            (Some(c), _) => For::Adoptable(c),
            (None, true) => For::Call,
            (None, false) => For::Look,
        };
        run(py, || self.store.snapshot_call(purpose))
    }

    /// Commits `plan` (a change plan of `core`) and records it as one call's checkpoint, in one
    /// native call: keeps `paths` (root-relative: the plan's path), commits, records
    /// ([`CheckpointStore::around`]). Returns `(outcome, the new checkpoint's id or None)`; the commit's errors
    /// are raised as `core.commit` raises them, after the record. `durable`: a durable unit's
    /// call (its record on disk while it runs, as `keep` with `tool_call_id`). Without `wait`
    /// (a small commit on an event loop): `None` when another process holds the store's lock
    /// (nothing done; call again with `wait` off the event loop); else the checkpoint is
    /// recorded by `finish()` once the call has returned (the id is `None`), unless durable
    /// ([`CheckpointStore::around_later`]).
    #[pyo3(signature = (core, plan, paths, *, run_id, tool_call_id, tool_name, created_at, cancel, durable = false, wait = true))]
    #[allow(clippy::too_many_arguments)]
    fn commit<'py>(
        &self,
        py: Python<'py>,
        core: PyRef<'_, PyFileSystemCore>,
        plan: PyRef<'_, PyChangePlan>,
        paths: Vec<Bound<'_, PyString>>,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
        cancel: PyRef<'_, PyCancelToken>,
        durable: bool,
        wait: bool,
    ) -> PyResult<Option<(PyOutcome, Option<String>)>> {
        let paths = paths_of(paths)?;
        let (fs, plan, flag) = (core.inner.clone(), plan.plan.clone(), cancel.flag.clone());
        let call = call_info(run_id, tool_call_id, tool_name, created_at);
        let known = match (plan.operation, paths.first()) {
            (Operation::CreateDirectory, _) | (_, None) => Vec::new(),
            (op, Some(path)) => vec![Known {
                path: path.clone(),
                old: (op == Operation::Edit && plan.old.is_some())
                    .then(|| Arc::new(OldBytes(plan.clone())) as _),
                new: Arc::new(NewBytes(plan.clone())),
                new_hash: None,
            }],
        };
        // The store's descriptor of the root serves the commit too when both roots are one.
        let same_root = fs.root.real_root() == self.store.real_root();
        let body = |known: &mut [Known], root: &Beneath| {
            let root = same_root.then_some(root);
            let (outcome, digest) = fs.commit_hashed_in(&plan, &flag, root)?;
            if let Some(k) = known.first_mut() {
                k.new_hash = digest;
            }
            Ok(outcome)
        };
        let (outcome, id) = if wait {
            let done = run(py, || {
                self.store.around(&paths, known, call, durable, true, body)
            })?;
            let Some((outcome, l)) = done else {
                return Ok(None);
            };
            (outcome, l.map(|l| l.id))
        } else {
            let done = run(py, || {
                self.store.around_later(&paths, known, call, durable, body)
            })?;
            let Some(outcome) = done else {
                return Ok(None);
            };
            (outcome, None)
        };
        let outcome = outcome.map_err(PyErr::from)?;
        Ok(Some((outcome.into(), id)))
    }

    /// Records the checkpoint of the last `commit` run without `wait`, if it is not yet
    /// (nothing otherwise): call it once that call has returned. Whatever uses the store
    /// next in this process (a call, a listing, a rewind) records it first anyway; until then
    /// this process holds the store's lock.
    ///
    /// `flush`: then wait until the store's writer thread has put everything queued on disk
    /// (for a process about to exit).
    ///
    /// Raises `OSError` for a write that failed (a full disk): that checkpoint is lost, as if
    /// the process had been killed right after the commit.
    #[pyo3(signature = (*, flush = false))]
    fn finish(&self, py: Python<'_>, flush: bool) -> PyResult<()> {
        if flush {
            run(py, || self.store.finish_and_flush())
        } else {
            run(py, || self.store.finish())
        }
    }

    /// Commits the patch `plan` (a patch plan of `core`) and records it as one call's
    /// checkpoint in one native call, as [`PyCheckpointStore::commit`] does for one file:
    /// keeps `paths` (root-relative: the files' event paths and the paths moves leave), commits,
    /// records. The bytes each file gets (and the old ones its commit checks it still holds)
    /// come from the plan, so someone else's change right after the commit is never taken for
    /// the patch's. Returns `(the result text, the new checkpoint's id or None)`; the commit's
    /// errors are raised as `core.commit_patch` raises them, after the record. `durable`: as
    /// for `commit`. Waits for another process holding the store's lock (call it off the event
    /// loop).
    #[pyo3(signature = (core, plan, paths, *, run_id, tool_call_id, tool_name, created_at, cancel, durable = false))]
    #[allow(clippy::too_many_arguments)]
    fn commit_patch(
        &self,
        py: Python<'_>,
        core: PyRef<'_, PyFileSystemCore>,
        plan: PyRef<'_, PyPatchPlan>,
        paths: Vec<Bound<'_, PyString>>,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
        cancel: PyRef<'_, PyCancelToken>,
        durable: bool,
    ) -> PyResult<(String, Option<String>)> {
        let paths = paths_of(paths)?;
        let (fs, plan, flag) = (core.inner.clone(), plan.plan.clone(), cancel.flag.clone());
        let call = call_info(run_id, tool_call_id, tool_name, created_at);
        let known = plan
            .files
            .iter()
            .enumerate()
            .filter(|(_, f)| f.new.is_some())
            .map(|(i, f)| Known {
                path: f.event_path.as_bytes().to_vec(),
                old: f
                    .old
                    .is_some()
                    .then(|| Arc::new(PatchOld(plan.clone(), i)) as _),
                new: Arc::new(PatchNew(plan.clone(), i)),
                new_hash: None,
            })
            .collect();
        let done = run(py, || {
            self.store
                .around(&paths, known, call, durable, true, |_, _| {
                    fs.commit_patch(&plan, &flag)
                })
        })?;
        let Some((text, l)) = done else {
            // `around` waits for the lock (`wait`): never `None`.
            return Err(PyErr::from(Error::new(
                ErrorKind::Conflict,
                "The checkpoint store is busy. Retry.",
            )));
        };
        Ok((text.map_err(PyErr::from)?, l.map(|l| l.id)))
    }

    /// Records the call of `handle` (consumed): its listing, or `None` when nothing changed.
    #[pyo3(signature = (handle, *, run_id, tool_call_id, tool_name, created_at))]
    fn record<'py>(
        &self,
        py: Python<'py>,
        handle: u64,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let call = call_info(run_id, tool_call_id, tool_name, created_at);
        maybe_listing(py, run(py, || self.store.record(handle, call))?)
    }

    /// Records the call of `handle` (consumed) as `record` does; for a snapshot handle, the walk
    /// after the call is kept open as a new snapshot handle in the same step (nothing changed
    /// between the two is missed). Returns `(listing or None, new handle or None)`.
    #[pyo3(signature = (handle, *, run_id, tool_call_id, tool_name, created_at))]
    fn record_reopen<'py>(
        &self,
        py: Python<'py>,
        handle: u64,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
    ) -> PyResult<(Option<Bound<'py, PyDict>>, Option<u64>)> {
        let call = call_info(run_id, tool_call_id, tool_name, created_at);
        let (l, reopened) = run(py, || self.store.record_reopen(handle, call))?;
        Ok((maybe_listing(py, l)?, reopened))
    }

    /// Adds what snapshot `handle` found against the index to checkpoint `checkpoint_id`.
    fn extend<'py>(
        &self,
        py: Python<'py>,
        checkpoint_id: String,
        handle: u64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        maybe_listing(py, run(py, || self.store.extend(&checkpoint_id, handle))?)
    }

    /// Counts what snapshot `handle` found against the index against the checkpoint of the call
    /// (appended when it has none); the handle stays open. The listing, or `None` when nothing
    /// was found.
    #[pyo3(signature = (handle, *, run_id, tool_call_id, tool_name, created_at))]
    fn attribute_found<'py>(
        &self,
        py: Python<'py>,
        handle: u64,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let call = call_info(run_id, tool_call_id, tool_name, created_at);
        maybe_listing(py, run(py, || self.store.attribute_found(handle, &call))?)
    }

    /// Drops `handle` without recording.
    fn release(&self, py: Python<'_>, handle: u64) -> PyResult<()> {
        run(py, || self.store.release(handle))
    }

    /// Follows the background job of the call `tool_call_id` (of `run_id`): its record in
    /// `<store>/jobs/`, locked for as long as this store lives, so that the next process on the
    /// store takes the job over should this one end first ([`crate::checkpoint::jobs`]). Called
    /// again for a job followed already: `checkpoint_id` (the latest checkpoint of its call,
    /// `None` before it changed anything) noted. `directory`: the job's directory on this host.
    ///
    /// Raises `OSError` when the record cannot be written (a full disk); `CheckpointError` for
    /// a call without a tool call id.
    #[pyo3(signature = (directory, checkpoint_id, *, run_id, tool_call_id, tool_name, created_at))]
    #[allow(clippy::too_many_arguments)]
    fn follow_job(
        &self,
        py: Python<'_>,
        directory: String,
        checkpoint_id: Option<String>,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
    ) -> PyResult<()> {
        let record = JobRecord {
            call: call_info(run_id, tool_call_id, tool_name, created_at),
            directory,
            checkpoint_id,
        };
        run(py, || {
            self.store.jobs.follow(record).map_err(|e| {
                if e.kind() == std::io::ErrorKind::InvalidInput {
                    Error::new(
                        ErrorKind::InvalidArgument,
                        "A job's call needs a tool call id.",
                    )
                } else {
                    io_error(&e)
                }
            })
        })
    }

    /// Stops following the job of the call `tool_call_id` (of `run_id`): its record removed.
    #[pyo3(signature = (*, run_id, tool_call_id))]
    fn unfollow_job(&self, py: Python<'_>, run_id: Option<String>, tool_call_id: Option<String>) {
        let call = call_info(run_id, tool_call_id, String::new(), 0.0);
        py.detach(|| self.store.jobs.unfollow(&call));
    }

    /// The background jobs whose follower is gone (its process ended while the job ran),
    /// followed by this store from now on, oldest call first: each `{'run_id', 'tool_call_id',
    /// 'tool_name', 'created_at' (epoch seconds), 'directory', 'checkpoint_id'}`.
    /// A few file operations; none without a `jobs/` directory (one `lstat`).
    fn orphaned_jobs<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let found = py.detach(|| self.store.jobs.orphans());
        found
            .into_iter()
            .map(|r| {
                let d = PyDict::new(py);
                d.set_item("run_id", r.call.run_id)?;
                d.set_item("tool_call_id", r.call.tool_call_id)?;
                d.set_item("tool_name", r.call.tool_name)?;
                d.set_item("created_at", r.call.created_at)?;
                d.set_item("directory", r.directory)?;
                d.set_item("checkpoint_id", r.checkpoint_id)?;
                Ok(d)
            })
            .collect()
    }

    /// The checkpoints, oldest first (with `run_id`: that run's).
    #[pyo3(signature = (run_id = None))]
    fn list<'py>(
        &self,
        py: Python<'py>,
        run_id: Option<String>,
    ) -> PyResult<Vec<Bound<'py, PyDict>>> {
        listings(py, &py.detach(|| self.store.list(run_id.as_deref())))
    }

    /// The ids pruned to keep the store within `budget_bytes`, oldest first.
    fn pruned(&self, py: Python<'_>) -> Vec<String> {
        py.detach(|| self.store.pruned())
    }

    /// Bytes the store's objects hold.
    fn store_bytes(&self, py: Python<'_>) -> u64 {
        py.detach(|| self.store.store_bytes())
    }

    /// Per changed path: `(path, diff text)`.
    fn diff<'py>(
        &self,
        py: Python<'py>,
        checkpoint_id: String,
    ) -> PyResult<Vec<(Bound<'py, PyString>, String)>> {
        diffs(py, run(py, || self.store.diff(&checkpoint_id))?)
    }

    /// What rewinding to the state before `to` would do (nothing changed but what `job`, an open
    /// background job's call, changed since the last look: counted against it first, its
    /// listing under the plan's `job` key).
    #[pyo3(signature = (to, paths = None, *, job = None))]
    fn plan_rewind<'py>(
        &self,
        py: Python<'py>,
        to: String,
        paths: Option<Vec<Bound<'_, PyString>>>,
        job: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let paths = paths.map(paths_of).transpose()?;
        let job = job.map(job_of).transpose()?;
        let (plan, counted) = run(py, || {
            self.store
                .plan_rewind_with_job(&to, paths.as_deref(), job.as_ref())
        })?;
        let d = plan_dict(py, &plan)?;
        with_job(py, &d, job.as_ref(), counted.as_ref())?;
        Ok(d)
    }

    /// Plans and commits the rewind to before `to` in one step under the store's lock: the
    /// commit's result with the plan's `unrestorable` paths (and `job`, as `plan_rewind`).
    #[pyo3(signature = (to, paths = None, *, force = false, job = None))]
    fn rewind<'py>(
        &self,
        py: Python<'py>,
        to: String,
        paths: Option<Vec<Bound<'_, PyString>>>,
        force: bool,
        job: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let paths = paths.map(paths_of).transpose()?;
        let job = job.map(job_of).transpose()?;
        let (plan, done, counted) = run(py, || {
            self.store
                .rewind_with_job(&to, paths.as_deref(), force, job.as_ref())
        })?;
        let d = rewound_dict(py, &done)?;
        d.set_item("unrestorable", py_paths(py, &plan.unrestorable)?)?;
        with_job(py, &d, job.as_ref(), counted.as_ref())?;
        Ok(d)
    }

    /// Commits a plan from `plan_rewind` (and `job`, as `plan_rewind`).
    #[pyo3(signature = (plan, *, force = false, job = None))]
    fn commit_rewind<'py>(
        &self,
        py: Python<'py>,
        plan: &Bound<'py, PyDict>,
        force: bool,
        job: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let job = job.map(job_of).transpose()?;
        let (to, paths, pinned) = plan_parts(plan)?;
        let (done, counted) = run(py, || {
            self.store
                .commit_rewind_with_job(&to, paths.as_deref(), &pinned, force, job.as_ref())
        })?;
        let d = rewound_dict(py, &done)?;
        with_job(py, &d, job.as_ref(), counted.as_ref())?;
        Ok(d)
    }
}

/// An open background job: its call, `{'run_id', 'tool_call_id', 'tool_name', 'created_at'}`,
/// and optionally `'directory'` (its directory) with `'cpu'` (the CPU time, in nanoseconds, its
/// processes had used as the last look at it started: see [`JobLook::since`]).
fn job_of(job: &Bound<'_, PyDict>) -> PyResult<JobLook> {
    let item = |key: &str| {
        job.get_item(key)?.ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("A job names its call's {key}."))
        })
    };
    let call = CallInfo {
        run_id: item("run_id")?.extract()?,
        tool_call_id: Some(item("tool_call_id")?.extract()?),
        tool_name: item("tool_name")?.extract()?,
        created_at: item("created_at")?.extract()?,
    };
    let directory: Option<std::path::PathBuf> = match job.get_item("directory")? {
        Some(d) => d.extract()?,
        None => None,
    };
    let cpu: Option<u64> = match job.get_item("cpu")? {
        Some(c) => c.extract()?,
        None => None,
    };
    Ok(JobLook {
        call,
        since: directory.zip(cpu),
    })
}

/// With a job given, `d['job']`: the listing of its call's latest checkpoint when the step
/// counted a change against it, else `None`.
fn with_job(
    py: Python<'_>,
    d: &Bound<'_, PyDict>,
    job: Option<&JobLook>,
    counted: Option<&Listing>,
) -> PyResult<()> {
    if job.is_some() {
        match counted {
            Some(l) => d.set_item("job", listing(py, l)?)?,
            None => d.set_item("job", py.None())?,
        }
    }
    Ok(())
}

/// Adds `CheckpointStore` and `CheckpointError` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCheckpointStore>()?;
    m.add("CheckpointError", m.py().get_type::<CheckpointError>())?;
    Ok(())
}
