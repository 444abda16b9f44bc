//! `RemoteRanged` of `_core`: a big file's bytes fed piece by piece to the core's streaming
//! read (see `fs::remote::Ranged`), rendered as `read_file` or `file_info` at the end.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::cancel::CancelFlag;
use crate::fs::remote::{Ranged, Remote};

use super::fs::{run, PyOutcome};

/// One ranged pass over a file (`RemoteCore.read_ranged` / `info_ranged`).
#[pyclass(name = "RemoteRanged", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PyRanged {
    core: Arc<Remote>,
    ranged: Mutex<Option<Ranged>>,
    flag: CancelFlag,
}

impl PyRanged {
    pub(crate) fn new(core: Arc<Remote>, ranged: Ranged) -> Self {
        PyRanged {
            core,
            flag: ranged.cancel_flag(),
            ranged: Mutex::new(Some(ranged)),
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
        Ok(run(py, move || {
            core.finish_ranged(ranged, guessed_type.as_deref())
        })?
        .into())
    }
}
