//! `RemoteRanged` of `_core`: a big file's bytes fed piece by piece to the core's streaming
//! read (see `fs::remote::Ranged`), rendered as `read_file` or `file_info` at the end.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::cancel::CancelFlag;
use crate::fs::remote::{Kept, Ranged, Remote};

use super::fs::{run, PyOutcome};

/// What a full ranged pass learned of one version of a file (see `fs::remote::Kept`): another
/// window of it reads from its line index (`RemoteCore.window_ranged`).
#[pyclass(name = "RemoteKept", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PyKept {
    pub(crate) kept: Arc<Kept>,
}

/// One ranged pass over a file (`RemoteCore.read_ranged` / `info_ranged` / `window_ranged` / `info_kept`).
#[pyclass(name = "RemoteRanged", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PyRanged {
    core: Arc<Remote>,
    ranged: Mutex<Option<Ranged>>,
    flag: CancelFlag,
    start: Option<u64>,
    kept: Mutex<Option<Arc<Kept>>>,
}

impl PyRanged {
    pub(crate) fn new(core: Arc<Remote>, ranged: Ranged) -> Self {
        PyRanged {
            core,
            flag: ranged.cancel_flag(),
            start: ranged.needs.then_some(ranged.start),
            ranged: Mutex::new(Some(ranged)),
            kept: Mutex::new(None),
        }
    }
}

#[pymethods]
impl PyRanged {
    /// Feeds the next piece (GIL released; blocks while the scan is two pieces behind, so call
    /// it from a worker thread). `False` once the pass has stopped (cancelled or finished).
    fn feed(&self, py: Python<'_>, data: &Bound<'_, PyBytes>) -> bool {
        let piece = data.as_bytes().to_vec();
        let guard = self.ranged.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            Some(ranged) => py.detach(|| ranged.feed(piece)),
            None => false,
        }
    }

    /// The byte offset the pieces start at; `None` when the pass needs no bytes (call `finish`).
    #[getter]
    fn start(&self) -> Option<u64> {
        self.start
    }

    /// After `finish` of a full pass: what it learned, for reading other windows of the same
    /// version of the file; `None` before, or for a window pass.
    fn kept(&self) -> Option<PyKept> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner()).clone();
        kept.map(|kept| PyKept { kept })
    }

    /// Stops the pass: its scan ends at its next chunk, a blocked `feed` returns `False`.
    fn cancel(&self) {
        self.flag.cancel();
    }

    /// The result once every piece is fed: `read_file`'s or `file_info`'s outcome.
    ///
    /// Raises `OffsetPastEndError`, `CancelledError` (after `cancel`), `ValueError` when
    /// already finished.
    #[pyo3(signature = (guessed_type=None))]
    fn finish(&self, py: Python<'_>, guessed_type: Option<String>) -> PyResult<PyOutcome> {
        let ranged = self
            .ranged
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| PyValueError::new_err("the ranged read has finished"))?;
        let core = self.core.clone();
        let (outcome, kept) = run(py, move || {
            core.finish_ranged(ranged, guessed_type.as_deref())
        })?;
        *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = kept;
        Ok(outcome.into())
    }
}
