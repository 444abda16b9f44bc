//! Which documented contract a FileSystem follows ([`Contract`]: `filesystem.md`'s 0.36.0 or
//! the workspace's 0.62.0) and its numeric limits and switches ([`Limits`], the capability's
//! fields): the values every concern below reads, so this module imports none of them.

use crate::error::{Error, ErrorKind};

/// Which of the two documented contracts a FileSystem follows where they differ: defaults,
/// result and message texts. One set of tools serves both; this value selects the wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Contract {
    /// `root_dir` on the host, as `filesystem.md` documents (pydantic-ai-harness 0.36.0).
    #[default]
    Document,
    /// The run's workspace, as pydantic-ai-harness 0.62.0 behaves (`upstream-0.62.md`).
    Workspace,
}

impl Contract {
    /// Parses the Python-side name: `'document'` or `'workspace'`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "document" => Some(Contract::Document),
            "workspace" => Some(Contract::Workspace),
            _ => None,
        }
    }

    /// Whether this is the workspace (0.62.0) contract.
    pub fn is_workspace(self) -> bool {
        self == Contract::Workspace
    }
}

/// 0.62.0's refusal of a FIFO, socket or device, the same for every tool (workspace contract).
pub const NOT_REGULAR_FILE: &str =
    "The path is not a regular file (a FIFO, socket, or device); use a regular file.";

pub(crate) fn not_regular_file() -> Error {
    Error::new(ErrorKind::InvalidArgument, NOT_REGULAR_FILE)
}

/// The numeric limits and switches of a FileSystem (the capability's fields).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Lines a `read_file` shows at most (also the default `limit`).
    pub max_read_lines: usize,
    /// Cap on a whole `read_file` result in chars, or none.
    pub max_read_chars: Option<usize>,
    /// Entries a `list_directory` shows at most.
    pub max_list_results: usize,
    /// Matches a `search_files` shows at most.
    pub max_search_results: usize,
    /// Paths a `find_files` shows at most.
    pub max_find_results: usize,
    /// Whether results show content hashes.
    pub content_hashes: bool,
    /// Which contract's defaults and texts apply.
    pub contract: Contract,
    /// Event diffs of sources too big for difflib show their first hunks (a linear pass, read
    /// up to [`BIG_DIFF_SOURCE_BYTES`]) instead of the headers alone: `require_approval` (issue 21).
    pub big_diffs: bool,
}

/// With [`Limits::big_diffs`], an old file up to this many bytes is kept for the event diff.
pub const BIG_DIFF_SOURCE_BYTES: usize = 64 << 20;

impl Limits {
    /// Bytes of an old file kept for the event diff: more are not diffed (headers only).
    pub fn diff_source_bytes(&self) -> usize {
        if self.big_diffs {
            BIG_DIFF_SOURCE_BYTES
        } else {
            crate::fs::change::write::DIFF_SOURCE_BYTES
        }
    }
}
