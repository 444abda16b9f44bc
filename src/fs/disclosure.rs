//! What results say about what they leave out: the opt-in fields of issue 9 §3, off by
//! default (results then exactly as the documents give them).

/// `FileSystem(max_line_chars=..., report_skipped=...)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Disclosure {
    /// Clip lines longer than this many chars in `read_file`, `search_files` and `grep`
    /// results ([`crate::fs::clip`]); `None`: lines shown whole.
    pub max_line_chars: Option<usize>,
    /// End walker results with what they skipped and why ([`crate::fs::skipped`]).
    pub report_skipped: bool,
}
