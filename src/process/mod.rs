//! The process supervisor behind `Shell` on a local workspace: spawning commands in their own
//! session, capturing their output with bounded memory, timeouts that stop the whole process
//! group, and background jobs whose logs and status live in files under the workspace.
//!
//! Lowest first: [`outcome`] (how a command ended), [`tail`] (bounded capture), [`group`] and
//! [`reaper`] (signalling and ending a process group and the descendants that left it),
//! [`sandbox`] (Landlock); [`spawn`] starts the shell; [`wait`] waits for a foreground one, on a
//! thread or stepped by the caller's event loop; [`foreground`] joins the two for a tool call;
//! [`job`] runs background commands.
//!
//! Everything async runs on one process-wide tokio runtime ([`runtime`]), driven by a
//! dedicated thread; callers block on futures from their own (Python worker) threads.

pub mod foreground;
pub mod group;
pub mod job;
pub mod logcap;
pub mod outcome;
pub mod rawsys;
pub mod reaper;
pub mod retention;
pub mod sandbox;
pub mod session;
pub mod spawn;
pub mod tail;
pub mod wait;

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle};

/// The handle of the supervisor's runtime, built on first use.
///
/// A current-thread runtime whose IO and timer drivers are driven by one dedicated thread
/// (`harness-supervisor`), so [`block_on`] works from any number of other threads.
pub fn runtime() -> &'static Handle {
    static HANDLE: OnceLock<Handle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let rt = Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .expect("the supervisor runtime cannot start");
        let handle = rt.handle().clone();
        std::thread::Builder::new()
            .name("harness-supervisor".into())
            .spawn(move || rt.block_on(std::future::pending::<()>()))
            .expect("the supervisor thread cannot start");
        handle
    })
}

/// Runs `fut` to completion on the calling thread, with the supervisor driving IO and timers.
///
/// Must not be called from inside the runtime (a tokio task).
pub fn block_on<F: Future>(fut: F) -> F::Output {
    runtime().block_on(fut)
}
