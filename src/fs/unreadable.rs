//! Paths a walker could not read (issue 19): a file or directory the process may not open
//! (mode `000`, say) no longer fails a whole `grep` or `list_files` (the document's reference
//! fails with `ripgrep failed: rg: ./locked: ... Permission denied`) nor disappears silently
//! from `search_files`; the readable results come back, ending with 0.62.0's note, under both
//! contracts: `[2 paths could not be read (Permission denied): locked, secret.txt]`, one
//! note per reason, at most five names each (then `, ...`), relative to the root. A path the
//! access patterns hide is counted but not named, so the note never reveals it.
//! Source: `_with_unreadable`, `_UNREADABLE` (0.62.0's _toolset.py, _ripgrep.py).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::fs::{FileSystem, Outcome};

/// Names one note shows per reason. Source: `_MAX_UNREADABLE_NAMED`.
pub const MAX_NAMED: usize = 5;

/// A path a walk could not open or list, and why (`Permission denied`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// Its absolute path.
    pub abs: PathBuf,
    /// The OS's reason, without an errno (`Permission denied`).
    pub reason: String,
}

impl Unreadable {
    /// `abs`, unreadable for the OS error `err`: its `strerror` text, never the error's own
    /// text (a wrapped error names the absolute path and the errno).
    pub fn new(abs: PathBuf, err: &std::io::Error) -> Self {
        let errno = err.raw_os_error().or_else(|| match err.kind() {
            std::io::ErrorKind::PermissionDenied => Some(libc::EACCES),
            std::io::ErrorKind::NotFound => Some(libc::ENOENT),
            _ => {
                // `... (os error 13)` at the end of a wrapped error's text.
                let text = err.to_string();
                let at = text.rfind("(os error ")?;
                text[at + 10..].trim_end_matches(')').parse().ok()
            }
        });
        Unreadable {
            abs,
            reason: reason_of(errno),
        }
    }
}

/// `rg`'s error lines (`rg: ./locked: IO error for operation on ./locked: Permission denied
/// (os error 13)`, `rg: ./secret.txt: Permission denied (os error 13)`) as unreadable paths
/// below `cwd` (`rg`'s working directory); `None` when a line is anything else (a fatal
/// error, which still fails the call as 0.62.0's does).
pub fn from_rg_lines(stderr: &str, cwd: &Path) -> Option<Vec<Unreadable>> {
    static LINE: OnceLock<regex::Regex> = OnceLock::new();
    let line_re = LINE.get_or_init(|| {
        regex::Regex::new(
            r"^rg: (?P<path>.+?): (?:IO error for operation on .+?: )?(?P<reason>[^:]+?) \(os error \d+\)$",
        )
        .expect("a valid regex")
    });
    let mut out = Vec::new();
    for line in stderr.lines().filter(|l| !l.is_empty()) {
        let caps = line_re.captures(line)?;
        let mut path = &caps["path"];
        while let Some(rest) = path.strip_prefix("./") {
            path = rest;
        }
        let path = path.trim_start_matches('/');
        out.push(Unreadable {
            abs: if path.is_empty() || path == "." {
                cwd.to_path_buf()
            } else {
                cwd.join(path)
            },
            reason: caps["reason"].to_string(),
        });
    }
    Some(out)
}

/// The note lines for unreadable paths grouped by reason, in order: `[N paths could not be
/// read (reason): a, b]`, at most [`MAX_NAMED`] names each (then `, ...`); a `None` name (a
/// path the patterns hide) is counted, not named. Shared by the host and protocol walkers.
pub fn notes<R: AsRef<str>>(by_reason: Vec<(R, Vec<Option<String>>)>) -> Vec<String> {
    let mut lines = Vec::with_capacity(by_reason.len());
    for (reason, paths) in by_reason {
        let named: Vec<&str> = paths.iter().flatten().map(String::as_str).collect();
        let mut shown = named[..named.len().min(MAX_NAMED)].join(", ");
        if named.len() > MAX_NAMED {
            shown.push_str(", ...");
        }
        let noun = if paths.len() == 1 { "path" } else { "paths" };
        let names = if shown.is_empty() {
            String::new()
        } else {
            format!(": {shown}")
        };
        lines.push(format!(
            "[{} {noun} could not be read ({}){names}]",
            paths.len(),
            reason.as_ref()
        ));
    }
    lines
}

/// The reason shown for the OS error number `errno` (its `strerror` text, `Permission
/// denied`), or `I/O error` when there is none.
pub fn reason_of(errno: Option<i32>) -> String {
    match errno {
        Some(errno) => crate::fs::root::path::strerror(errno),
        None => "I/O error".to_string(),
    }
}

impl FileSystem {
    /// `outcome` ending with one note per reason naming what could not be read (see the module
    /// doc); unchanged when `unreadable` is empty.
    pub fn with_unreadable(&self, mut outcome: Outcome, unreadable: &[Unreadable]) -> Outcome {
        let mut by_reason: Vec<(&str, Vec<Option<String>>)> = Vec::new();
        for u in unreadable {
            let shown = self.root.rel_to_root(&u.abs).and_then(|rel| {
                let rel = crate::fs::root::path::rel_display(&rel);
                (self.access.is_unrestricted() || self.access.is_readable(&rel))
                    .then(|| crate::fs::text::escape_name(&rel).into_owned())
            });
            match by_reason.iter_mut().find(|(r, _)| *r == u.reason) {
                Some((_, paths)) => paths.push(shown),
                None => by_reason.push((&u.reason, vec![shown])),
            }
        }
        for line in notes(by_reason) {
            outcome.text.push('\n');
            outcome.text.push_str(&line);
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rg_lines_parse_as_unreadable_paths() {
        let cwd = Path::new("/w");
        let got = from_rg_lines(
            "rg: ./locked: IO error for operation on ./locked: Permission denied (os error 13)\n\
             rg: ./secret.txt: Permission denied (os error 13)\n",
            cwd,
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                Unreadable {
                    abs: "/w/locked".into(),
                    reason: "Permission denied".into()
                },
                Unreadable {
                    abs: "/w/secret.txt".into(),
                    reason: "Permission denied".into()
                },
            ]
        );
        assert!(from_rg_lines("rg: regex parse error", cwd).is_none());
    }
}
