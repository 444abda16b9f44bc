//! The one error type of the core: a kind the Python layer maps onto an exception class,
//! and a message written for the model (never an absolute host path).

use std::fmt;
use std::io;

/// What went wrong, coarse enough for the Python layer to pick an exception class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The path resolves outside `root_dir`.
    Outside,
    /// The path matches a denied pattern or misses every allowed pattern.
    Denied,
    /// A write to a path matching a protected pattern.
    Protected,
    /// The file or directory does not exist (or is the wrong type for the call).
    NotFound,
    /// An `expected_hash` mismatch, or a path replaced while a change was announced.
    Conflict,
    /// An edit's `old_text` was not found.
    NoMatch,
    /// An edit's `old_text` matched more than once.
    AmbiguousMatch,
    /// A read's offset lies past the last line.
    OffsetPastEnd,
    /// A regex or glob the engine rejects.
    InvalidPattern,
    /// Any other argument the model can correct (negative offset, bad context, ...).
    InvalidArgument,
    /// The OS refused to start a command as too long (`E2BIG`) and the same invocation
    /// without the model's command starts: the model can send a shorter one.
    CommandTooLong,
    /// The call was cancelled from Python; no result is wanted.
    Cancelled,
    /// An OS error the model cannot fix (disk full, read-only disk): the run aborts.
    Io(io::ErrorKind),
}

impl ErrorKind {
    /// Whether the model can correct the call (the Python layer raises `ModelRetry`).
    pub fn is_retryable(&self) -> bool {
        !matches!(self, ErrorKind::Io(_) | ErrorKind::Cancelled)
    }
}

/// An error with a model-facing message.
#[derive(Debug, Clone)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// Text the model reads; identical to the reference's wording where it has one.
    pub message: String,
    /// The OS `errno`, when the error came from the OS.
    pub errno: Option<i32>,
}

impl Error {
    /// An error of `kind` with a model-facing `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            errno: None,
        }
    }

    /// An unrecoverable OS error; `message` must not carry a host path.
    pub fn io(err: &io::Error, message: impl Into<String>) -> Self {
        Error {
            kind: ErrorKind::Io(err.kind()),
            message: message.into(),
            errno: err.raw_os_error(),
        }
    }

    /// The call was cancelled.
    pub fn cancelled() -> Self {
        Error::new(ErrorKind::Cancelled, "cancelled")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The core's result type.
pub type Result<T> = std::result::Result<T, Error>;
