//! The `list_files` and `grep` tools: ripgrep's own crates run in-process, so no `rg`
//! executable is needed and the output is what the reference builds from `rg`'s.
//!
//! The reference runs `rg --null --color=never --files --sort path [--glob G]` in the walk
//! root for `list_files`, and `rg --null --color=never --line-number --with-filename --sort
//! path --max-columns 4096 --max-columns-preview --context C [--glob G] [--type T]
//! [--ignore-case] [--fixed-strings] --regexp PATTERN -- TARGET` for `grep`, then filters
//! every printed path (dot rule, containment, access patterns) and caps the result. This
//! module owns that whole pipeline: the walker configured as `rg` configures it (`walker`),
//! the matcher and searcher ([`grep`]), the sink that renders `rg`'s lines (`sink`), the
//! long-line preview (`preview`) and the capped, streamed result (`Collector`).
//!
//! Threads: the walk runs on a scoped helper thread, in `rg --sort path` order, handing
//! files over in batches; searching, authorizing and capping stay on the calling thread with
//! one searcher, so output order and the searcher's buffer state match `rg`'s exactly.
//! `list_files` gives that sorted walk a short time budget: a listing still going when it
//! runs out (a big tree) starts over on every core, unordered (`parallel`), authorizing on
//! the walking threads, and is sorted once at the end, which gives the same lines. `grep`
//! on a directory does the same with one searcher per walking thread (`grep_parallel`),
//! falling back to the sorted search wherever the result could differ.
//!
//! Known differences from the reference (all outside ordinary trees):
//! - `RIPGREP_CONFIG_PATH` is not read (`rg` would add its flags).
//! - An explicit file is read rather than memory-mapped; the slice strategy's binary
//!   detection is reproduced, so output differs only if the file changes while searched.
//! - A file [`Authorize`] drops is not read further (`rg` reads it, and an unreadable
//!   denied file would fail the whole call with `ripgrep failed`).
//! - `rg`'s binary notice is shown under the file's authorized display path; the reference
//!   authorizes the notice's text as if it were a path, so it shows the notice even for a
//!   denied file whose name the patterns only match as a whole.
//! - `ripgrep failed` texts carry `rg`'s fatal errors, not its non-fatal ignore-file
//!   warnings, which `rg` prints to the same stderr.
//! - A file name containing `\n` breaks the reference's record parsing; here it is shown
//!   as [`Authorize`] renders it. Non-UTF-8 names reach [`Authorize`] as the real bytes,
//!   where the reference resolves their lossy decoding.
//! - A searched file is opened with `O_NOFOLLOW | O_NONBLOCK` and skipped unless it is still
//!   a regular file, so a file swapped for a symlink or FIFO mid-walk is not followed.
//! - Long-line previews count grapheme clusters with the `regex` crate's Unicode tables
//!   rather than `bstr`'s; the file-type list and ignore semantics are those of the `ignore`
//!   crate version built here rather than the one in the user's `rg` (against `rg` 15.1.0,
//!   `ignore` 0.4.35 adds `c3 container hurl mojo ninja pkgbuild powershell proto pwsh rego
//!   rocq scheme toit` and changes `lisp lock msbuild ps`; the common types agree).
//!
//! Source: `_list_files`, `_grep`, `_ripgrep_entry`, `_match_line` in
//! pydantic_ai_harness/filesystem/_toolset.py and `run_ripgrep` in `_ripgrep.py`; ripgrep
//! 15.1 (`crates/core/flags/hiargs.rs`, `crates/printer/src/standard.rs`).

mod cancel_matcher;
pub(crate) mod grep;
mod grep_parallel;
mod list;
mod parallel;
mod preview;
pub(crate) mod sink;
pub mod skipped;
pub mod tool;
pub(crate) mod walker;

use std::path::{Component, Path};

use crate::error::{Error, ErrorKind};

pub use grep::grep;
pub use list::list_files;

/// Decides, for each path the walker yields, whether the model may see it and how.
///
/// `walked` is absolute and unresolved: the walk root joined with the path `rg` would have
/// printed (for a file target, the file itself). Returns the display path, relative to the
/// configured cwd, or `None` to drop the entry. Implementations apply containment and the
/// access patterns to the realpath-resolved target, as `_resolve_walk_entry` and
/// `_relative_to_cwd` do. The dot rule (no component of the printed path may start with
/// `.`) is applied by this module before calling, because only it knows which components
/// lie below the walk root. Called on the calling thread, or (`list_files` on a big tree)
/// on the parallel walk's threads, hence `Sync`.
///
/// `grep` calls it at most once per file, when the file's first line is about to be
/// shown (files without matches cost nothing); `list_files` once per regular file listed,
/// until the cap. The walker follows no symlinks and yields only regular files, so below a
/// resolved walk root every component of `walked` was a real directory when walked: an
/// implementation may cache resolved parents, or skip `realpath` when it accepts the same
/// rename race the reference's `realpath`-then-read already has.
pub trait Authorize: Sync {
    /// `Some(display path)` to show `walked`, `None` to drop it.
    fn authorize(&self, walked: &Path) -> Option<String>;

    /// `Some(prefix)` when [`Authorize::authorize`] shows every path a walk of `root` can
    /// yield (`root` joined with a relative path of normal components), as `prefix`
    /// followed by that relative path decoded lossily: a big listing then builds each line
    /// from the walked path and does not call `authorize` per file. `None` (the default):
    /// call `authorize` for each file.
    fn plain_prefix(&self, root: &Path) -> Option<String> {
        let _ = root;
        None
    }

    /// Opens the walked file `walked` for reading (`O_NONBLOCK`), or `None` (the default) to
    /// open it by its path, the last component not followed. An implementation that holds
    /// a root descriptor opens it beneath that, no symlink followed anywhere on the way, so
    /// a directory swapped for a symlink after the walk listed it is never read through.
    fn open(&self, walked: &Path) -> Option<std::io::Result<std::fs::File>> {
        let _ = walked;
        None
    }
}

impl<F> Authorize for F
where
    F: Fn(&Path) -> Option<String> + Sync,
{
    fn authorize(&self, walked: &Path) -> Option<String> {
        self(walked)
    }
}

/// Arguments of `list_files` beyond the directory.
#[derive(Debug, Clone, Default)]
pub struct ListFilesOptions {
    /// `--glob`: a whitelist (or `!`-negated) glob relative to the walk root; overrides
    /// ignore files and hidden-file skipping, as in `rg`.
    pub glob: Option<String>,
    /// `--hidden`: walk and show hidden files too (0.62.0 passes it when `glob` names one).
    pub hidden: bool,
    /// `max_find_results`: lines kept; one more accepted entry sets `truncated`.
    pub max_results: usize,
    /// How long the sorted walk may run before the listing is walked on every core and
    /// sorted at the end instead (the same lines either way); `None`: 10 ms.
    pub sorted_budget: Option<std::time::Duration>,
}

/// Arguments of `grep` beyond the target.
#[derive(Debug, Clone, Default)]
pub struct GrepOptions {
    /// `--regexp`: ripgrep (Rust `regex`) syntax, or exact text when `literal`.
    pub pattern: String,
    /// `--glob`, as in [`ListFilesOptions::glob`]; ignored for a file target, as by `rg`.
    pub glob: Option<String>,
    /// `--type`: a name from ripgrep's default type list (`py`, `rust`, ..., `all`).
    pub file_type: Option<String>,
    /// `--ignore-case`.
    pub ignore_case: bool,
    /// `--fixed-strings`.
    pub literal: bool,
    /// `--context`: lines before and after each match; the caller checks `0..=20`.
    pub context: usize,
    /// `--hidden`, as in [`ListFilesOptions::hidden`].
    pub hidden: bool,
    /// `max_search_results`: lines kept; one more accepted line sets `truncated`.
    pub max_results: usize,
    /// `FileSystem(max_line_chars=N)`: clip longer lines ([`crate::fs::read::clip`]).
    pub clip: Option<crate::fs::read::clip::GrepClip>,
    /// How long the sorted search may run before a directory is searched on every core and
    /// put in order at the end instead (the same lines either way); `None`: 10 ms.
    pub sorted_budget: Option<std::time::Duration>,
}

/// Lines shown to the model, and whether the cap dropped something.
///
/// `truncated` is set only when an accepted record existed beyond `max_results`, exactly
/// when the reference appends its `[... truncated at N ...]` line (which the caller adds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The lines, each followed by `\n`. `list_files`: display paths. `grep`:
    /// `{path}:{line}:{text}` for matches, `{path}-{line}-{text}` for context lines, and
    /// `rg`'s binary-file notices.
    pub text: String,
    /// Lines in `text`.
    pub count: usize,
    /// More accepted records existed than `max_results`.
    pub truncated: bool,
    /// `grep`: files left unsearched as binary with no match shown (`report_skipped`).
    pub binary_skipped: usize,
    /// The `rg: ...` lines of the errors the walk met and went on after (an unreadable file
    /// or directory), newline-separated; empty when there were none.
    pub errors: String,
}

impl Listing {
    /// A listing of `lines` (each without its `\n`).
    pub fn from_lines<S: AsRef<str>>(lines: impl IntoIterator<Item = S>, truncated: bool) -> Self {
        let mut listing = Listing {
            truncated,
            ..Default::default()
        };
        for line in lines {
            listing.text.push_str(line.as_ref());
            listing.text.push('\n');
            listing.count += 1;
        }
        listing
    }

    /// The lines of [`Listing::text`], owned (tests and small listings).
    pub fn lines(&self) -> Vec<String> {
        self.text
            .split_terminator('\n')
            .map(str::to_owned)
            .collect()
    }
}

/// The capped result being streamed into: stops the walk once `max + 1` records were
/// accepted, so memory stays bounded by the cap whatever the tree holds.
#[derive(Debug)]
pub(crate) struct Collector {
    text: String,
    count: usize,
    max: usize,
    truncated: bool,
    /// Files the search stopped reading as binary before any match.
    pub(crate) binary_skipped: usize,
}

impl Collector {
    pub(crate) fn new(max: usize) -> Self {
        Collector {
            text: String::new(),
            count: 0,
            max,
            truncated: false,
            binary_skipped: 0,
        }
    }

    /// Offers one accepted record. Returns `false` once the cap is exceeded: stop.
    pub(crate) fn push(&mut self, line: String) -> bool {
        if self.count >= self.max {
            self.truncated = true;
            return false;
        }
        self.text.push_str(&line);
        self.text.push('\n');
        self.count += 1;
        true
    }

    /// Whether a record beyond the cap was offered.
    pub(crate) fn is_full(&self) -> bool {
        self.truncated
    }

    pub(crate) fn into_listing(self) -> Listing {
        Listing {
            text: self.text,
            count: self.count,
            truncated: self.truncated,
            binary_skipped: self.binary_skipped,
            errors: String::new(),
        }
    }
}

/// The reference's dot rule: drop a path `rg` printed if any component starts with `.`
/// (`Path(record.path).parts`, the `.` component itself excepted).
pub(crate) fn has_dot_component(printed: &Path) -> bool {
    printed.components().any(|c| match c {
        Component::Normal(name) => name.as_encoded_bytes().first() == Some(&b'.'),
        Component::ParentDir => true,
        _ => false,
    })
}

/// What the reference raises when `rg` exits with an error: `ripgrep failed: <stderr>`,
/// where `stderr` holds `rg: `-prefixed lines; without the raw errno `rg` appends to an OS
/// error (` (os error 13)`), which no model-facing text carries.
pub fn rg_failed(kind: ErrorKind, stderr: &str) -> Error {
    let detail = without_os_error_codes(stderr.trim());
    Error::new(kind, format!("ripgrep failed: {detail}"))
}

/// `message` without Rust's `io::Error` errno suffixes, ` (os error N)`.
fn without_os_error_codes(message: &str) -> String {
    const MARK: &str = " (os error ";
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(MARK) {
        let tail = &rest[at + MARK.len()..];
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..at]);
        if digits > 0 && tail[digits..].starts_with(')') {
            rest = &tail[digits + 1..];
        } else {
            out.push_str(MARK);
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// The `rg: ...` line for one error message.
pub(crate) fn rg_line(message: impl std::fmt::Display) -> String {
    format!("rg: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_carry_no_raw_errno() {
        let err = rg_failed(
            ErrorKind::InvalidArgument,
            "rg: ./d: IO error for operation on ./d: Permission denied (os error 13)\n\
             rg: ./s (os error x): Permission denied (os error 13)\n",
        );
        assert_eq!(
            err.message,
            "ripgrep failed: rg: ./d: IO error for operation on ./d: Permission denied\n\
             rg: ./s (os error x): Permission denied"
        );
    }

    #[test]
    fn dot_rule_matches_reference_parts() {
        let cases = [
            ("a/b.txt", false),
            ("./a/b.txt", false),
            (".env", true),
            ("./.env", true),
            ("a/.git/config", true),
            ("a/b.c/d", false),
            ("..", true),
        ];
        for (path, expected) in cases {
            assert_eq!(has_dot_component(Path::new(path)), expected, "{path}");
        }
    }

    #[test]
    fn collector_truncates_only_past_the_cap() {
        let mut c = Collector::new(2);
        assert!(c.push("a".into()));
        assert!(c.push("b".into()));
        assert!(!c.is_full());
        assert!(!c.push("c".into()));
        let listing = c.into_listing();
        assert_eq!(listing.lines(), vec!["a", "b"]);
        assert_eq!((listing.text.as_str(), listing.count), ("a\nb\n", 2));
        assert!(listing.truncated);

        let mut zero = Collector::new(0);
        assert!(!zero.push("a".into()));
        assert_eq!(
            zero.into_listing(),
            Listing {
                truncated: true,
                ..Default::default()
            }
        );
    }
}
