//! Rust core of `pydantic-ai-harness-rs`: sandboxed file tools (`FileSystem`) and a process
//! supervisor (`Shell`) for Pydantic AI agents.
//!
//! Everything that touches the disk or a process lives here; the Python package
//! (`python/pydantic_ai_harness_rs`) only declares tools, emits events and maps errors.
//! Only [`py`] knows about Python; it is compiled with the `python` feature, which maturin
//! enables, so `cargo test` needs no interpreter.

pub mod cancel;
pub mod error;
pub mod ripgrep;

// FileSystem: paths and containment, access patterns, reads, writes, walks and searches.
pub mod fs;
#[cfg(feature = "python")]
pub mod py;

// Shell: the process supervisor.
pub mod process;
