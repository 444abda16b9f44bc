//! How a command ended, shared by spawning, waiting and jobs: the captured streams
//! ([`Captured`]), the outcome of a foreground command ([`RunOutcome`]), the shell's exit code
//! for a status, the OS's reason for a failure without its path, and the graces a stop gives.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use crate::process::tail::HeadTail;

/// How long a timed-out command's group gets between `SIGTERM` and `SIGKILL`.
pub const TIMEOUT_GRACE: Duration = Duration::from_millis(100);

/// How long the shell gets to reap the descendants that left its group, once killed.
pub const REAP_GRACE: Duration = Duration::from_millis(100);

/// How long output is still read after the command exits, for children that keep its pipes
/// open (`sleep 30 & echo done`); the same bound as `LocalWorkspaceBackend`'s.
pub const OUTPUT_DRAIN_GRACE: Duration = Duration::from_secs(2);

/// One captured stream: its first and last bytes, sizes, and whether it was spilled to a file.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    /// The first `head_bytes` bytes.
    pub head: Vec<u8>,
    /// The last `tail_bytes` bytes after the head; the stream is `head + tail` unless `truncated`.
    pub tail: Vec<u8>,
    /// Bytes written in total.
    pub total: u64,
    /// Newlines written in total.
    pub lines: u64,
    /// Whether bytes between head and tail were dropped.
    pub truncated: bool,
    /// Whether the whole stream is in its spill file.
    pub spilled: bool,
}

impl From<HeadTail> for Captured {
    /// What a finished capture kept, and its counts.
    fn from(capture: HeadTail) -> Self {
        let (total, lines) = (capture.total(), capture.lines());
        let (truncated, spilled) = (capture.is_truncated(), capture.is_spilled());
        let (head, tail) = capture.into_parts();
        Captured {
            head,
            tail,
            total,
            lines,
            truncated,
            spilled,
        }
    }
}

/// How a foreground command ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// Exit status as a shell reports it: the code, or `128 + signal`.
    pub exit_code: i32,
    /// The signal that ended the shell, if one did.
    pub signal: Option<i32>,
    /// What stdout wrote.
    pub stdout: Captured,
    /// What stderr wrote.
    pub stderr: Captured,
    /// Whether the timeout stopped the command (then `exit_code` is how it died).
    pub timed_out: bool,
}

/// Exit status as a shell reports it: the code, or `128 + signal` for a signal death.
pub fn shell_exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// The OS's description of `err` without any path.
pub fn os_reason(err: &std::io::Error) -> String {
    match err.raw_os_error() {
        Some(code) => nix::errno::Errno::from_raw(code).desc().to_string(),
        None => err.kind().to_string(),
    }
}
