//! Waiting for a spawned foreground shell until it exits, times out or is cancelled, and
//! stopping its whole tree: on the calling thread ([`direct`], with [`deadline`] for the
//! runtime fallback) or stepped by the caller's event loop ([`stepped`]); [`fatal`] tells
//! whether a frozen member is sure to die of `SIGTERM`, a timed-out group's fast path.

pub mod deadline;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub mod direct;
pub mod fatal;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub mod stepped;
