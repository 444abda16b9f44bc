//! What results say about what they leave out: the opt-in fields of issue 9 §3, off by
//! default (results then exactly as the documents give them).
//!
//! `FileSystem(report_skipped=True)`: walker results end with what the walk left out and why,
//! with counts: `[skipped: 3 hidden entries (name a hidden path explicitly to include them),
//! 2 ignored by .gitignore/.ignore (a glob naming them includes them), 1 binary file, 2 paths
//! that could not be read]`.
//! Beyond both references (issue 9): their walkers leave out dot entries, ignored and binary
//! files silently, so an empty or short result cannot be told from a tree without matches.
//! Off by default: results exactly as documented (0.62.0's own hidden-entries trailer stays
//! under the workspace contract; with the flag this line replaces it).

use crate::fs::change::tiers::Match;
use crate::fs::{FileSystem, Outcome};

/// `FileSystem(max_line_chars=..., report_skipped=..., match=..., show_changes=...)`: the
/// opt-in fields that change what results say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Disclosure {
    /// Clip lines longer than this many chars in `read_file`, `search_files` and `grep`
    /// results ([`crate::fs::read::clip`]); `None`: lines shown whole.
    pub max_line_chars: Option<usize>,
    /// End walker results with what they skipped and why ([`crate::fs::disclosure`]).
    pub report_skipped: bool,
    /// How `edit_file` matches `old_text` (`match=`): [`Match::Exact`], or the tolerant
    /// tiers, whose result then names the tier ([`crate::fs::change::tiers`]).
    pub matching: Match,
    /// Lines of context around the changed lines a write or edit result ends with
    /// (`show_changes=`, [`crate::fs::change::shown`]); 0: none.
    pub show_changes: usize,
}

/// What one walk left out, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Dot entries below the walk's root (a hidden directory counted once, not entered).
    pub hidden: usize,
    /// Entries `.gitignore`/`.ignore`/`.rgignore` rules left out (a directory counted once).
    pub ignored: usize,
    /// Files not searched because they are binary (a NUL byte).
    pub binary: usize,
    /// Paths that could not be read (named in the result's `could not be read` note).
    pub unreadable: usize,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl Skipped {
    /// The line a result ends with, or `None` when nothing was skipped.
    pub fn line(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.hidden > 0 {
            parts.push(format!(
                "{} (name a hidden path explicitly to include {})",
                plural(self.hidden, "hidden entry", "hidden entries"),
                if self.hidden == 1 { "it" } else { "them" }
            ));
        }
        if self.ignored > 0 {
            parts.push(format!(
                "{} by .gitignore/.ignore (a glob naming {} includes {})",
                plural(self.ignored, "entry ignored", "entries ignored"),
                if self.ignored == 1 { "it" } else { "them" },
                if self.ignored == 1 { "it" } else { "them" }
            ));
        }
        if self.binary > 0 {
            parts.push(plural(self.binary, "binary file", "binary files"));
        }
        if self.unreadable > 0 {
            parts.push(plural(
                self.unreadable,
                "path that could not be read",
                "paths that could not be read",
            ));
        }
        (!parts.is_empty()).then(|| format!("[skipped: {}]", parts.join(", ")))
    }
}

impl Outcome {
    /// Ends the result with `skipped`'s [`Skipped::line`], if any.
    pub fn with_skipped(mut self, skipped: Skipped) -> Self {
        if let Some(line) = skipped.line() {
            self.text.push('\n');
            self.text.push_str(&line);
        }
        self
    }

    /// Ends a `search_files` result with how many lines longer than
    /// [`MAX_LINE_BYTES`](crate::fs::search::scan::MAX_LINE_BYTES) it passed over unsearched
    /// (the pattern cannot be searched in windows), if any: a match there would be missed
    /// without a word (issue 19).
    pub fn with_long_lines(mut self, count: usize) -> Self {
        if count > 0 {
            self.text.push('\n');
            self.text.push_str(&format!(
                "[skipped: {} longer than 32 MiB not searched; a pattern of bounded length \
                 without anchors or lookaround (no *, + or {{n,}}) searches them]",
                plural(count, "line", "lines")
            ));
        }
        self
    }
}

impl FileSystem {
    /// A local walker's `outcome` with its `hidden` skipped dot entries said: with
    /// `report_skipped` as the [`Skipped`] line; else under the workspace contract as 0.62.0's
    /// trailer ([`Outcome::with_hidden`]); else (the document) not at all.
    pub fn skipped_hidden(&self, outcome: Outcome, hidden: usize) -> Outcome {
        if self.disclosure.report_skipped {
            outcome.with_skipped(Skipped {
                hidden,
                ..Default::default()
            })
        } else if self.limits.contract.is_workspace() {
            outcome.with_hidden(hidden)
        } else {
            outcome
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        assert_eq!(Skipped::default().line(), None);
        assert_eq!(
            Skipped {
                hidden: 1,
                ignored: 2,
                binary: 3,
                unreadable: 4,
            }
            .line()
            .unwrap(),
            "[skipped: 1 hidden entry (name a hidden path explicitly to include it), 2 entries ignored by .gitignore/.ignore (a glob naming them includes them), 3 binary files, 4 paths that could not be read]"
        );
    }
}
