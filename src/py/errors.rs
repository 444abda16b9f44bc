//! The exception hierarchy of `_core` and the single `From<Error> for PyErr`.
//!
//! `HarnessError` → `RetryableError` → one class per retryable [`ErrorKind`]. Errors the
//! model cannot fix become builtin `OSError` with the errno, so the run aborts.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError};
use pyo3::prelude::*;

use crate::error::{Error, ErrorKind};

create_exception!(
    _core,
    HarnessError,
    PyException,
    "Base class of the core's errors."
);
create_exception!(
    _core,
    RetryableError,
    HarnessError,
    "An error the model can correct: becomes `ModelRetry`."
);
create_exception!(
    _core,
    OutsideRootError,
    RetryableError,
    "The path resolves outside `root_dir`."
);
create_exception!(
    _core,
    DeniedError,
    RetryableError,
    "The path is denied by the access patterns."
);
create_exception!(
    _core,
    ProtectedError,
    RetryableError,
    "A write to a protected path."
);
create_exception!(
    _core,
    NotFoundError,
    RetryableError,
    "The file or directory does not exist."
);
create_exception!(
    _core,
    ConflictError,
    RetryableError,
    "A stale `expected_hash` or a path replaced mid-change."
);
create_exception!(
    _core,
    NoMatchError,
    RetryableError,
    "An edit's `old_text` was not found."
);
create_exception!(
    _core,
    AmbiguousMatchError,
    RetryableError,
    "An edit's `old_text` matched more than once."
);
create_exception!(
    _core,
    OffsetPastEndError,
    RetryableError,
    "A read's offset lies past the last line."
);
create_exception!(
    _core,
    InvalidPatternError,
    RetryableError,
    "A regex or glob the engine rejects."
);
create_exception!(
    _core,
    InvalidArgumentError,
    RetryableError,
    "Any other argument the model can correct."
);
create_exception!(
    _core,
    CommandTooLongError,
    RetryableError,
    "The OS refused the command as too long (`E2BIG`); a shorter one would start."
);
create_exception!(
    _core,
    CancelledError,
    HarnessError,
    "The native call was cancelled."
);

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        let msg = err.message;
        match err.kind {
            ErrorKind::Outside => OutsideRootError::new_err(msg),
            ErrorKind::Denied => DeniedError::new_err(msg),
            ErrorKind::Protected => ProtectedError::new_err(msg),
            ErrorKind::NotFound => NotFoundError::new_err(msg),
            ErrorKind::Conflict => ConflictError::new_err(msg),
            ErrorKind::NoMatch => NoMatchError::new_err(msg),
            ErrorKind::AmbiguousMatch => AmbiguousMatchError::new_err(msg),
            ErrorKind::OffsetPastEnd => OffsetPastEndError::new_err(msg),
            ErrorKind::InvalidPattern => InvalidPatternError::new_err(msg),
            ErrorKind::InvalidArgument => InvalidArgumentError::new_err(msg),
            ErrorKind::CommandTooLong => CommandTooLongError::new_err(msg),
            ErrorKind::Cancelled => CancelledError::new_err(msg),
            ErrorKind::Io(_) => match err.errno {
                Some(errno) => PyOSError::new_err((errno, msg)),
                None => PyOSError::new_err(msg),
            },
            #[allow(unreachable_patterns)]
            _ => RetryableError::new_err(msg),
        }
    }
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("HarnessError", py.get_type::<HarnessError>())?;
    m.add("RetryableError", py.get_type::<RetryableError>())?;
    m.add("OutsideRootError", py.get_type::<OutsideRootError>())?;
    m.add("DeniedError", py.get_type::<DeniedError>())?;
    m.add("ProtectedError", py.get_type::<ProtectedError>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    m.add("NoMatchError", py.get_type::<NoMatchError>())?;
    m.add("AmbiguousMatchError", py.get_type::<AmbiguousMatchError>())?;
    m.add("OffsetPastEndError", py.get_type::<OffsetPastEndError>())?;
    m.add("InvalidPatternError", py.get_type::<InvalidPatternError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    m.add("CommandTooLongError", py.get_type::<CommandTooLongError>())?;
    m.add("CancelledError", py.get_type::<CancelledError>())?;
    Ok(())
}
