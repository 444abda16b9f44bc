//! Rust core of `pydantic-ai-harness-rs`: sandboxed file tools (`FileSystem`) and a process
//! supervisor (`Shell`) for Pydantic AI agents.
//!
//! Everything that touches the disk or a process lives here; the Python package
//! (`python/pydantic_ai_harness_rs`) only declares tools, emits events and maps errors.
//! Only [`py`] knows about Python; it is compiled with the `python` feature, which maturin
//! enables, so `cargo test` needs no interpreter.
//!
//! - [`error`] and [`cancel`]: the one error type every tool returns, and the flag a cancelled
//!   call sets for its native work.
//! - [`fs`]: the FileSystem: paths and containment, reads, changes, walks and searches,
//!   `list_files` and `grep` on ripgrep's crates, and the same tools on a workspace backend's bytes.
//! - [`checkpoint`]: checkpoints of the workspace before each tool call that may change it,
//!   and the rewind that puts it back.
//! - [`process`]: the Shell's supervisor: spawning, waiting, jobs, the reaper, the sandbox.

pub mod cancel;
pub mod checkpoint;
pub mod error;
pub mod fs;
pub mod process;
#[cfg(feature = "python")]
pub mod py;
#[cfg(test)]
pub(crate) mod testing;
