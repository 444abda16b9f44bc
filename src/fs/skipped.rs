//! `FileSystem(report_skipped=True)`: walker results end with what the walk left out and why,
//! with counts: `[skipped: 3 hidden entries (name a hidden path explicitly to include them),
//! 2 ignored by .gitignore/.ignore (a glob naming them includes them), 1 binary file]`.
//!
//! Beyond both references (issue 9): their walkers leave out dot entries, ignored and binary
//! files silently, so an empty or short result cannot be told from a tree without matches.
//! Off by default: results exactly as documented (0.62.0's own hidden-entries trailer stays
//! under the workspace contract; with the flag this line replaces it).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::cancel::CancelFlag;
use crate::error::Result;
use crate::fs::{FileSystem, Outcome};
use crate::ripgrep::walker;

/// What one walk left out, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Dot entries below the walk's root (a hidden directory counted once, not entered).
    pub hidden: usize,
    /// Entries `.gitignore`/`.ignore`/`.rgignore` rules left out (a directory counted once).
    pub ignored: usize,
    /// Files not searched because they are binary (a NUL byte).
    pub binary: usize,
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

/// Whether a name is a dot entry.
fn is_dot(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().first() == Some(&b'.')
}

/// The hidden and ignored entries a ripgrep-rules walk of `dir` (as `list_files` and `grep`
/// run it) leaves out: a walk with ripgrep's filters gives what is kept, a walk without them
/// what is there; an entry there and not kept is counted (and not entered), unless the `glob`
/// or `file_type` excludes it, which is the caller's choice, not a skip. `hidden`: `--hidden`
/// was given (dot entries are not skipped). Stops early once `cancel` is set.
pub fn ripgrep_skipped(
    dir: &Path,
    glob: Option<&str>,
    file_type: Option<&str>,
    hidden: bool,
    cancel: &CancelFlag,
) -> Result<Skipped> {
    let overrides = walker::overrides(dir, glob)?;
    let types = walker::types(file_type)?;
    let (root, cwd) = (dir, dir);
    let kept: HashSet<PathBuf> = walker::walk(root, cwd, overrides.clone(), types.clone(), hidden)
        .take_while(|_| !cancel.is_cancelled())
        .filter_map(|e| e.ok().map(ignore::DirEntry::into_path))
        .collect();
    let mut skipped = Skipped::default();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if cancel.is_cancelled() {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let is_dir = kind.is_dir();
            if kept.contains(&path) {
                if is_dir {
                    stack.push(path);
                }
                continue;
            }
            if kind.is_symlink()
                || overrides.matched(&path, is_dir).is_ignore()
                || types.matched(&path, is_dir).is_ignore()
                || !(is_dir || kind.is_file())
            {
                // Left out by the caller's glob or type, or not a file ripgrep searches.
            } else if !hidden && is_dot(&entry.file_name()) {
                skipped.hidden += 1;
            } else {
                skipped.ignored += 1;
            }
        }
    }
    Ok(skipped)
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
                binary: 3
            }
            .line()
            .unwrap(),
            "[skipped: 1 hidden entry (name a hidden path explicitly to include it), 2 entries ignored by .gitignore/.ignore (a glob naming them includes them), 3 binary files]"
        );
    }

    #[test]
    fn ripgrep_walks_count_hidden_and_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join(".git")).unwrap();
        std::fs::create_dir_all(r.join("node_modules/x")).unwrap();
        std::fs::create_dir_all(r.join("src")).unwrap();
        std::fs::write(r.join(".gitignore"), "node_modules/\n*.log\n").unwrap();
        std::fs::write(r.join("node_modules/x/a.js"), "x").unwrap();
        std::fs::write(r.join("src/a.log"), "x").unwrap();
        std::fs::write(r.join("src/a.rs"), "x").unwrap();
        std::fs::write(r.join("src/.env"), "x").unwrap();
        let c = CancelFlag::new();
        assert_eq!(
            ripgrep_skipped(r, None, None, false, &c).unwrap(),
            Skipped {
                hidden: 3,
                ignored: 2,
                binary: 0
            }
        );
    }
}
