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

pub mod access;
pub mod diff;
pub mod fs;
pub mod fs_ripgrep;
pub mod hash;
pub mod path;
#[cfg(feature = "python")]
pub mod py;
pub mod read;
pub mod search;
pub mod text;
pub mod walk;
pub mod write;

// Shell: the process supervisor.
pub mod process;
