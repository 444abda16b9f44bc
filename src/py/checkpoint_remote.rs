//! Bindings of the store of a non-local workspace ([`crate::checkpoint::remote`]):
//! `RemoteCheckpointStore`. Python reads and writes the workspace through its protocol and
//! hands states over: `None` (nothing there), `'dir'`, `'?'` (a file it could not read), or the
//! file's `bytes`. Every method
//! releases the GIL.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use super::checkpoint::{
    call_info, call_of, diffs, listings, maybe_listing, path_bytes, paths_of, plan_dict,
    plan_parts, py_str, py_strs, run, settings,
};
use crate::checkpoint::remote::listing::LISTING_COMMAND;
use crate::checkpoint::remote::{RemoteStore, Seen};

/// A state as Python gives it: `None`, `'dir'` or `bytes`.
fn seen(value: &Bound<'_, PyAny>) -> PyResult<Seen> {
    if value.is_none() {
        return Ok(Seen::Absent);
    }
    if let Ok(b) = value.cast::<PyBytes>() {
        return Ok(Seen::File(b.as_bytes().to_vec()));
    }
    match value.extract::<String>() {
        Ok(s) if s == "dir" => Ok(Seen::Dir),
        Ok(s) if s == "?" => Ok(Seen::Unreadable),
        _ => Err(PyValueError::new_err(
            "A state is None (nothing there), 'dir', '?' (unreadable) or the file's bytes.",
        )),
    }
}

/// `[(path, state), ...]` from Python.
fn path_states(
    items: Vec<(Bound<'_, PyString>, Bound<'_, PyAny>)>,
) -> PyResult<Vec<(Vec<u8>, Seen)>> {
    items
        .iter()
        .map(|(p, s)| Ok((path_bytes(p)?, seen(s)?)))
        .collect()
}

/// The checkpoints of one non-local workspace root, kept in a host directory (`store_dir`).
#[pyclass(
    name = "RemoteCheckpointStore",
    module = "pydantic_ai_harness_rs._core",
    frozen
)]
pub struct PyRemoteCheckpointStore {
    store: RemoteStore,
}

#[pymethods]
impl PyRemoteCheckpointStore {
    #[new]
    #[pyo3(signature = (store_dir, *, root = None, exclude = None, max_file_bytes = 67_108_864, budget_bytes = 1_073_741_824))]
    fn new(
        py: Python<'_>,
        store_dir: String,
        root: Option<String>,
        exclude: Option<Vec<String>>,
        max_file_bytes: u64,
        budget_bytes: u64,
    ) -> PyResult<Self> {
        let settings = settings(exclude, max_file_bytes, budget_bytes);
        let store = run(py, move || {
            RemoteStore::open(&store_dir, root.as_deref(), settings)
        })?;
        Ok(PyRemoteCheckpointStore { store })
    }

    /// The workspace root the store belongs to (`None`: none yet).
    #[getter]
    fn root(&self) -> Option<String> {
        self.store.root().map(str::to_string)
    }

    /// The paths (root-relative) whose states a change of `paths` needs: each and its ancestors.
    fn observed<'py>(
        &self,
        py: Python<'py>,
        paths: Vec<Bound<'py, PyString>>,
    ) -> PyResult<Vec<Bound<'py, PyString>>> {
        let paths = paths_of(paths)?;
        py_strs(py, &run(py, || self.store.observed(&paths))?)
    }

    /// Before a file tool's change: `[(path, state), ...]` of the paths `observed` gave, read
    /// now. Returns a handle (the store's lock held until its `record` or `release`) and the
    /// paths to read again after the change. With `tool_call_id` (a durable unit's call): the
    /// call's record on disk (an earlier attempt's before states are the call's).
    #[pyo3(signature = (before, *, run_id = None, tool_call_id = None, tool_name = String::new(), created_at = 0.0))]
    fn keep<'py>(
        &self,
        py: Python<'py>,
        before: Vec<(Bound<'py, PyString>, Bound<'py, PyAny>)>,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
    ) -> PyResult<(u64, Vec<Bound<'py, PyString>>)> {
        let before = path_states(before)?;
        let durable = call_of(run_id, tool_call_id, tool_name, created_at);
        let (handle, paths) = run(py, || self.store.keep(before, durable.as_ref()))?;
        Ok((handle, py_strs(py, &paths)?))
    }

    /// Records the call of a `keep` handle (consumed) from `after`, `[(path, state), ...]` of
    /// the paths `keep` gave, read after the change: its listing, or `None` when nothing changed.
    #[pyo3(signature = (handle, after, *, run_id, tool_call_id, tool_name, created_at))]
    #[allow(clippy::too_many_arguments)]
    fn record<'py>(
        &self,
        py: Python<'py>,
        handle: u64,
        after: Vec<(Bound<'py, PyString>, Bound<'py, PyAny>)>,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let after = path_states(after)?;
        let call = call_info(run_id, tool_call_id, tool_name, created_at);
        maybe_listing(py, run(py, || self.store.record(handle, after, call))?)
    }

    /// Takes a hold of the store's lock (no other process's call or rewind runs meanwhile)
    /// until `release` of the returned handle.
    fn hold(&self, py: Python<'_>) -> PyResult<u64> {
        run(py, || self.store.hold())
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

    /// The kept bytes of object `hash`.
    fn object<'py>(&self, py: Python<'py>, hash: String) -> PyResult<Bound<'py, PyBytes>> {
        let data = run(py, || self.store.object(&hash))?;
        Ok(PyBytes::new(py, &data))
    }

    /// The root-relative paths a rewind to `to` (limited to `paths`) puts back.
    #[pyo3(signature = (to, paths = None))]
    fn rewind_paths<'py>(
        &self,
        py: Python<'py>,
        to: String,
        paths: Option<Vec<Bound<'py, PyString>>>,
    ) -> PyResult<Vec<Bound<'py, PyString>>> {
        let paths = paths.map(paths_of).transpose()?;
        py_strs(
            py,
            &run(py, || self.store.rewind_paths(&to, paths.as_deref()))?,
        )
    }

    /// The rewind's plan from `current` (`[(path, state now), ...]`), as `CheckpointStore.plan_rewind`.
    #[pyo3(signature = (to, paths, current))]
    fn plan_rewind<'py>(
        &self,
        py: Python<'py>,
        to: String,
        paths: Option<Vec<Bound<'py, PyString>>>,
        current: Vec<(Bound<'py, PyString>, Bound<'py, PyAny>)>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let paths = paths.map(paths_of).transpose()?;
        let current = path_states(current)?;
        let plan = run(py, || {
            self.store.plan_rewind(&to, paths.as_deref(), &current)
        })?;
        plan_dict(py, &plan)
    }

    /// The steps of `plan` (from `plan_rewind`), checked against `current` (read again):
    /// `[(path, op, hash, reported, may_stay), ...]` in order (`op`: `remove`, `rmdir`,
    /// `write`, `mkdir`). Raises `CheckpointError` on a conflict without `force`.
    #[pyo3(signature = (plan, current, *, force = false))]
    #[allow(clippy::type_complexity)]
    fn rewind_steps<'py>(
        &self,
        py: Python<'py>,
        plan: &Bound<'py, PyDict>,
        current: Vec<(Bound<'py, PyString>, Bound<'py, PyAny>)>,
        force: bool,
    ) -> PyResult<
        Vec<(
            Bound<'py, PyString>,
            &'static str,
            Option<String>,
            Option<&'static str>,
            bool,
        )>,
    > {
        let (to, paths, pinned) = plan_parts(plan)?;
        let current = path_states(current)?;
        let steps = run(py, || {
            self.store
                .rewind_steps(&to, paths.as_deref(), &pinned, &current, force)
        })?;
        steps
            .into_iter()
            .map(|s| Ok((py_str(py, &s.path)?, s.op, s.hash, s.reported, s.may_stay)))
            .collect()
    }

    /// The command that prints a listing in the workspace root (`snapshot`, `changed`).
    #[classattr]
    fn listing_command() -> &'static str {
        LISTING_COMMAND
    }

    /// Before a shell command: its listing's output compared with the index. Returns a handle
    /// (the store's lock held until its `record_command` or `release`) and the files to read
    /// now (`settle`). With `tool_call_id` (a durable unit's call): the call's record on disk,
    /// written by `settle` (an earlier attempt's changes are the call's).
    #[pyo3(signature = (listing, *, run_id = None, tool_call_id = None, tool_name = String::new(), created_at = 0.0))]
    fn snapshot<'py>(
        &self,
        py: Python<'py>,
        listing: Vec<u8>,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
    ) -> PyResult<(u64, Vec<Bound<'py, PyString>>)> {
        let durable = call_of(run_id, tool_call_id, tool_name, created_at);
        let (handle, need) = run(py, || self.store.snapshot(&listing, durable.as_ref()))?;
        Ok((handle, py_strs(py, &need)?))
    }

    /// The files `snapshot` asked for, as read: `[(path, state), ...]`.
    fn settle(
        &self,
        py: Python<'_>,
        handle: u64,
        states: Vec<(Bound<'_, PyString>, Bound<'_, PyAny>)>,
    ) -> PyResult<()> {
        let states = path_states(states)?;
        run(py, || self.store.settle(handle, states))
    }

    /// After the command: its second listing; returns the files to read for `record_command`.
    fn changed<'py>(
        &self,
        py: Python<'py>,
        handle: u64,
        listing: Vec<u8>,
    ) -> PyResult<Vec<Bound<'py, PyString>>> {
        py_strs(py, &run(py, || self.store.changed(handle, &listing))?)
    }

    /// Records the command of `handle` from the files `changed` asked for, as read. `merge`:
    /// added to the checkpoint the call has already, if any (a durable unit's call run again).
    #[pyo3(signature = (handle, states, *, run_id, tool_call_id, tool_name, created_at, merge = false))]
    #[allow(clippy::too_many_arguments)]
    fn record_command<'py>(
        &self,
        py: Python<'py>,
        handle: u64,
        states: Vec<(Bound<'py, PyString>, Bound<'py, PyAny>)>,
        run_id: Option<String>,
        tool_call_id: Option<String>,
        tool_name: String,
        created_at: f64,
        merge: bool,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let states = path_states(states)?;
        let call = call_info(run_id, tool_call_id, tool_name, created_at);
        let l = run(py, || {
            self.store.record_command(handle, states, call, merge)
        })?;
        maybe_listing(py, l)
    }

    /// Drops a handle (`keep`, `snapshot`, `hold`) without recording; its hold of the lock given back.
    fn release(&self, py: Python<'_>, handle: u64) -> PyResult<()> {
        run(py, || self.store.release(handle))
    }

    /// After every step of `plan` succeeded: drops the rewound checkpoints.
    fn finish_rewind(&self, py: Python<'_>, plan: &Bound<'_, PyDict>) -> PyResult<()> {
        let (to, paths, _) = plan_parts(plan)?;
        run(py, || self.store.finish_rewind(&to, paths.as_deref()))
    }
}

/// Adds `RemoteCheckpointStore` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRemoteCheckpointStore>()
}
