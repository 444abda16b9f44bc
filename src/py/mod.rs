//! The `pydantic_ai_harness_rs._core` extension module: the only place that knows about Python.
//!
//! Each submodule wraps one core noun in a `#[pyclass]`; `errors` maps [`crate::error::Error`]
//! onto the exception hierarchy the Python layer catches.

use pyo3::prelude::*;

pub mod checkpoint;
pub mod checkpoint_remote;
pub mod errors;
pub mod fs;
pub mod paths;
pub mod ranged;
pub mod remote;

// Shell: the process supervisor's bindings.
pub mod shell;
// Interactive sessions on a pseudo-terminal.
pub mod session;

/// A cancellation flag handed to a native call; Python sets it when the awaiting task is cancelled.
#[pyclass(name = "CancelToken", module = "pydantic_ai_harness_rs._core", frozen)]
#[derive(Default)]
pub struct PyCancelToken {
    /// The flag the native work polls.
    pub flag: crate::cancel::CancelFlag,
}

#[pymethods]
impl PyCancelToken {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Asks the native work holding this token to stop.
    fn cancel(&self) {
        self.flag.cancel();
    }

    /// Whether `cancel()` was called.
    #[getter]
    fn cancelled(&self) -> bool {
        self.flag.is_cancelled()
    }
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyCancelToken>()?;
    errors::register(m)?;
    fs::register(m)?;
    remote::register(m)?;
    // Shell
    shell::register(m)?;
    session::register(m)?;
    checkpoint::register(m)?;
    checkpoint_remote::register(m)?;
    Ok(())
}
