//! The bytes side of the FileSystem's I/O seam: every tool for a workspace whose files are not
//! on this host. Python lists, stats, reads and writes through the workspace protocol and hands
//! the results here; resolution, containment, access patterns, windows, hashes, diffs,
//! replacements, walk filtering, glob and regex matching and every result text stay here,
//! built from the same pieces the host-directory side uses ([`crate::fs::read`],
//! [`crate::fs::change::write`], [`crate::fs::change::diff`], [`crate::fs::search`], [`crate::fs::root::access`]).
//!
//! Paths are absolute POSIX strings inside the workspace. The contract is always the
//! workspace one (pydantic-ai-harness 0.62.0, `upstream-0.62.md` section 1).
//!
//! One job a module: [`posix`] (path text as `posixpath`), `content` (read windows, binaries,
//! file_info), `change` (write, edit and mkdir plans, the conflict guard), `walk`
//! (list_directory, find_files and its glob), `search` (search_files), [`ignore`] (ripgrep's
//! walk filters over handed-in listings), [`rg`] (`list_files` and `grep` with ripgrep's rules),
//! `lookalike` (the Unicode look-alike hint from the parents' listings), `ranged` (read_file and
//! file_info of a big file fed in pieces).

mod change;
mod content;
pub mod ignore;
mod lookalike;
pub mod posix;
mod ranged;
pub mod rg;
mod search;
mod walk;

pub use content::Read;
pub use ignore::RgWalk;
pub use lookalike::{Listings, Lookalike};
pub use posix::{contains, explicit_hidden, is_hidden, join, normpath, re_escape, relpath};
pub use ranged::{Kept, Ranged};
pub use rg::{RgGrep, RgGrepArgs};
pub use search::Search;
pub use walk::Glob;

use crate::error::{Error, ErrorKind, Result};
use crate::fs::disclosure::Disclosure;
use crate::fs::root::access::Access;
use crate::fs::{Limits, Outcome};

/// Largest file `read_file` and `file_info` read whole (bytes). Source: `_MAX_READ_FILE_BYTES`.
pub const MAX_READ_FILE_BYTES: u64 = 64 << 20;
/// Largest file a content search reads (bytes). Source: `_MAX_SEARCH_FILE_BYTES`.
pub const MAX_SEARCH_FILE_BYTES: u64 = 10 << 20;
/// Largest image or PDF returned as file content (bytes). Source: `MAX_MEDIA_BYTES`.
pub const MAX_MEDIA_BYTES: usize = 5_000_000;
/// Directories one walk lists before it stops. Source: `_MAX_WALK_DIRECTORIES`.
pub const MAX_WALK_DIRECTORIES: usize = 10_000;
/// Entries one walk collects before it stops. Source: `_MAX_WALK_ENTRIES`.
pub const MAX_WALK_ENTRIES: usize = 100_000;
/// Unreadable files a search names before it only counts. Source: the `[:10]` of `_search_files`.
const MAX_SKIPPED_NAMED: usize = 10;

/// A path a walk or search could not list or read through the backend, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// Absolute POSIX path inside the workspace.
    pub path: String,
    /// The reason the note gives (`Permission denied`), from the backend error's errno.
    pub reason: String,
}

impl Unread {
    /// `path`, unread for the backend error whose errno is `errno` (`None`: `I/O error`).
    pub fn new(path: &str, errno: Option<i32>) -> Self {
        Unread {
            path: path.to_string(),
            reason: crate::fs::unreadable::reason_of(errno),
        }
    }
}

/// One entry a backend listed or stated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Absolute POSIX path inside the workspace.
    pub path: String,
    /// Whether it is a directory (a symlink followed).
    pub is_dir: bool,
    /// Size in bytes of a regular file, when the backend knows it.
    pub size: Option<u64>,
}

impl Entry {
    fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or("")
    }
}

/// What `stat` said of a write target's parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parent {
    /// A directory.
    Dir,
    /// Nothing there.
    Missing,
    /// A file, or something below a file.
    NotDir,
}

/// A workspace's boundary, working directory, patterns and limits: every tool's logic on
/// bytes handed in.
#[derive(Debug)]
pub struct Remote {
    /// The boundary: the real workspace path of `root_dir`.
    pub root: String,
    /// The working directory relative paths resolve from (inside `root`).
    pub cwd: String,
    /// Whether `root_dir` was given (errors then name it rather than "the project root").
    pub root_named: bool,
    /// The access pattern lists.
    pub access: Access,
    /// Limits and switches.
    pub limits: Limits,
    /// The opt-in notices (`max_line_chars`, ...), as on a host directory: none by default.
    pub disclosure: Disclosure,
}

/// Whether `path` holds a NUL that is not the mark of a raw byte (a name that is not UTF-8
/// crosses the bindings as marked text, [`crate::fs::text::names::lossless`]).
fn has_nul(path: &str) -> bool {
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\0' {
            if crate::fs::text::names::raw_byte_after(c, chars.peek()).is_none() {
                return true;
            }
            chars.next();
        }
    }
    false
}

fn retry(kind: ErrorKind, message: String) -> Error {
    Error::new(kind, message)
}

fn not_a_directory(path: &str) -> Error {
    retry(ErrorKind::NotFound, format!("Not a directory: {path}"))
}

fn found(text: String, path: String, emit: bool) -> Outcome {
    Outcome {
        text,
        path,
        emit,
        ..Default::default()
    }
}

/// `_with_walk_notice`: the hidden-entries trailer and the walk-cut notice.
fn with_walk_notice(mut lines: Vec<String>, walk_cut: bool, hidden: usize) -> String {
    if hidden > 0 {
        lines.push(format!(
            "[{hidden} hidden entries omitted; name a hidden path explicitly to include it]"
        ));
    }
    if walk_cut {
        if lines.is_empty() {
            lines.push("No matches found.".to_string());
        }
        lines.push(format!(
            "[... walk cut short after {MAX_WALK_DIRECTORIES} directories or {MAX_WALK_ENTRIES} entries; narrow the path]"
        ));
    }
    if lines.is_empty() {
        "No matches found.".to_string()
    } else {
        lines.join("\n")
    }
}

impl Remote {
    /// A walker's text: `lines`, then with `report_skipped` the walk-cut notice and the
    /// `[skipped: ...]` line in place of the hidden-entries trailer, else `_with_walk_notice`.
    fn walk_text(
        &self,
        lines: Vec<String>,
        walk_cut: bool,
        skipped: crate::fs::disclosure::Skipped,
    ) -> String {
        if !self.disclosure.report_skipped {
            return with_walk_notice(lines, walk_cut, skipped.hidden);
        }
        let mut text = with_walk_notice(lines, walk_cut, 0);
        if let Some(line) = skipped.line() {
            text.push('\n');
            text.push_str(&line);
        }
        text
    }

    /// The `[N paths could not be read (reason): ...]` notes for `unread`, as the host walkers
    /// give them ([`crate::fs::unreadable`]): sorted by path, one per reason, root-relative
    /// names escaped as listings escape them, a path the patterns hide counted but not named.
    /// Also returns whether a name was shown escaped.
    pub fn unreadable_notes(&self, mut unread: Vec<Unread>) -> (Vec<String>, bool) {
        unread.sort_by(|a, b| a.path.split('/').cmp(b.path.split('/')));
        unread.dedup_by(|a, b| a.path == b.path);
        let mut escaped = false;
        let mut by_reason: Vec<(String, Vec<Option<String>>)> = Vec::new();
        for u in unread {
            let shown = self.walk_entry(&u.path, &self.root, true).map(|rel| {
                match crate::fs::text::names::escape_name(&rel) {
                    std::borrow::Cow::Owned(name) => {
                        escaped = true;
                        name
                    }
                    std::borrow::Cow::Borrowed(_) => rel,
                }
            });
            match by_reason.iter_mut().find(|(r, _)| *r == u.reason) {
                Some((_, paths)) => paths.push(shown),
                None => by_reason.push((u.reason, vec![shown])),
            }
        }
        (crate::fs::unreadable::notes(by_reason), escaped)
    }

    /// Builds the logic for one workspace. Errors: `InvalidPattern` for a bad pattern.
    pub fn new(
        root: &str,
        cwd: &str,
        root_named: bool,
        allowed: &[String],
        denied: &[String],
        protected: &[String],
        limits: Limits,
    ) -> Result<Self> {
        Ok(Remote {
            root: normpath(root),
            cwd: normpath(cwd),
            root_named,
            access: Access::new(allowed, denied, protected)?,
            limits,
            disclosure: Disclosure::default(),
        })
    }

    fn root_name(&self) -> String {
        if self.root_named {
            format!("root_dir `{}`", self.root)
        } else {
            format!("the project root `{}`", self.root)
        }
    }

    fn root_place(&self) -> String {
        if self.root_named {
            format!("`{}`", self.root)
        } else {
            "the project".to_string()
        }
    }

    /// Joins `path` onto the working directory and checks it lies inside the root, as text.
    ///
    /// Errors: `ErrorKind::InvalidArgument` (`embedded null byte`: no workspace call may see a NUL,
    /// which a host backend's `os` calls raise `ValueError` for, as the host side answers);
    /// `ErrorKind::Outside` with 0.62.0's message. Source: `_resolve_path`.
    pub fn resolve(&self, path: &str) -> Result<String> {
        if has_nul(path) {
            return Err(retry(
                ErrorKind::InvalidArgument,
                "embedded null byte".to_string(),
            ));
        }
        let resolved = join(&self.cwd, path);
        if !contains(&self.root, &resolved) {
            return Err(retry(
                ErrorKind::Outside,
                format!(
                    "`{resolved}` is outside {}; the file tools only work inside it. Create or clone it inside {}, or use a shell tool if you have one.",
                    self.root_name(),
                    self.root_place()
                ),
            ));
        }
        Ok(resolved)
    }

    /// Checks the real path the backend resolved (`None`: not resolved, the backend cannot see
    /// links) stays inside the root, then the access patterns on both spellings.
    ///
    /// Errors: `ErrorKind::Outside` (leads outside through a symlink), access errors.
    /// Source: `_resolve_path`, `_safe_resolve_real`.
    pub fn check(
        &self,
        path: &str,
        resolved: &str,
        real: Option<&str>,
        write: bool,
        check_allowed: bool,
    ) -> Result<()> {
        if let Some(real) = real {
            if !contains(&self.root, real) {
                return Err(retry(
                    ErrorKind::Outside,
                    format!(
                        "`{path}` leads outside {} through a symlink; the file tools only work inside it. Use a path inside {}, or a shell tool if you have one.",
                        self.root_name(),
                        self.root_place()
                    ),
                ));
            }
        }
        self.access
            .check(&relpath(resolved, &self.root), write, check_allowed)?;
        if let Some(real) = real.filter(|r| *r != resolved) {
            self.access
                .check(&relpath(real, &self.root), write, check_allowed)?;
        }
        Ok(())
    }

    /// The event `path` of a resolved path: root-relative, or `<outside-workspace>`.
    pub fn event_path(&self, resolved: &str) -> String {
        if contains(&self.root, resolved) {
            relpath(resolved, &self.root)
        } else {
            "<outside-workspace>".to_string()
        }
    }

    /// The error for an OS error the backend raised on `resolved` (a workspace path; `None`:
    /// no path): the native path's text ([`crate::fs::root::path::os_error`]: a retry such as
    /// `Permission denied: 'a.txt'` or the `cannot represent` one for EILSEQ, else an I/O error
    /// that ends the run), the path shown root-relative, never as the backend spelled it.
    pub fn os_error(&self, errno: i32, resolved: Option<&str>) -> Error {
        let err = std::io::Error::from_raw_os_error(errno);
        let shown = resolved.map(|r| self.event_path(r));
        crate::fs::root::path::os_error(&err, shown.as_deref().map(std::path::Path::new))
    }

    /// `_walk_entry`: an entry's root-relative path, or `None` when a walk skips it (hidden
    /// below `start`, or not readable by the patterns).
    pub fn walk_entry(&self, path: &str, start: &str, include_hidden: bool) -> Option<String> {
        if !contains(&self.root, path) {
            return None;
        }
        let rel = relpath(path, &self.root);
        if (!include_hidden && is_hidden(&relpath(path, start))) || !self.access.is_readable(&rel) {
            return None;
        }
        Some(rel)
    }

    /// Whether a walk enters a listed directory whose real path is `real`: not hidden (unless
    /// named), inside the root, not denied. Source: `_walk`.
    pub fn descend(&self, path: &str, real: &str, include_hidden: bool) -> bool {
        let name = path.rsplit('/').next().unwrap_or("");
        (include_hidden || !name.starts_with('.'))
            && contains(&self.root, real)
            && !self.access.is_denied(&relpath(path, &self.root))
    }

    /// Whether a file reached through a walk may be read: its real path inside the root and
    /// readable by the patterns. Source: `_readable_entry`.
    pub fn readable_real(&self, real: &str) -> bool {
        contains(&self.root, real) && self.access.is_readable(&relpath(real, &self.root))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::CancelFlag;
    use crate::fs::contract::Contract;
    use crate::fs::read::hash::bytes_hash;
    use crate::fs::tests::limits;

    fn remote() -> Remote {
        let mut l = limits();
        l.contract = Contract::Workspace;
        Remote::new(
            "/ws",
            "/ws",
            false,
            &[],
            &["logs".into()],
            &["*.key".into()],
            l,
        )
        .unwrap()
    }

    fn file(path: &str, size: u64) -> Entry {
        Entry {
            path: path.into(),
            is_dir: false,
            size: Some(size),
        }
    }

    #[test]
    fn paths_follow_posixpath() {
        assert_eq!(normpath("/a/./b/../c//"), "/a/c");
        assert_eq!(normpath("//a"), "//a");
        assert_eq!(normpath("/.."), "/");
        assert_eq!(join("/", "x"), "/x");
        assert_eq!(join("/ws", "/etc"), "/etc");
        assert_eq!(relpath("/ws", "/ws"), ".");
        assert_eq!(relpath("/ws/a/b", "/ws/c"), "../a/b");
        assert!(contains("/", "/x") && contains("/ws", "/ws") && !contains("/ws", "/wsx"));
    }

    #[test]
    fn resolution_and_access() {
        let r = remote();
        assert_eq!(r.resolve("a/../b").unwrap(), "/ws/b");
        assert_eq!(
            r.resolve("../etc").unwrap_err().message,
            "`/etc` is outside the project root `/ws`; the file tools only work inside it. Create or clone it inside the project, or use a shell tool if you have one."
        );
        assert_eq!(
            r.check("l", "/ws/l", Some("/etc/x"), false, true)
                .unwrap_err()
                .message,
            "`l` leads outside the project root `/ws` through a symlink; the file tools only work inside it. Use a path inside the project, or a shell tool if you have one."
        );
        assert_eq!(
            r.check("l", "/ws/l", Some("/ws/logs/a"), false, true)
                .unwrap_err()
                .kind,
            ErrorKind::Denied
        );
        assert!(r.check("a.key", "/ws/a.key", None, false, true).is_ok());
        assert_eq!(
            r.check("a.key", "/ws/a.key", None, true, true)
                .unwrap_err()
                .kind,
            ErrorKind::Protected
        );
    }

    #[test]
    fn globs_match_components() {
        let g = Glob::new("**/*.py").unwrap();
        assert!(g.is_match("a.py") && g.is_match("x/y/a.py") && !g.is_match("a.pyc"));
        assert_eq!(g.max_depth(), None);
        assert_eq!(Glob::new("src/*").unwrap().max_depth(), Some(2));
        assert_eq!(
            Glob::new("../*").unwrap_err().message,
            "Pattern '../*' is not a valid glob pattern."
        );
    }

    #[test]
    fn search_feeds_in_order_and_caps() {
        let mut r = remote();
        r.limits.max_search_results = 2;
        let mut s = r.search("x", "/ws", None).unwrap();
        let entries = vec![
            file("/ws/b.txt", 4),
            file("/ws/a.txt", 4),
            file("/ws/.h", 2),
            file("/ws/logs/z", 2),
        ];
        let start = Entry {
            path: "/ws".into(),
            is_dir: true,
            size: None,
        };
        let files = r.search_files_of(&mut s, Some(&start), entries);
        let names: Vec<&str> = files.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(names, ["/ws/a.txt", "/ws/b.txt"]);
        assert!(!r.search_feed(&mut s, 0, Some(b"x\ny\n")));
        assert!(r.search_feed(&mut s, 1, Some(b"x\nx\n")));
        let o = r.search_result(s, false);
        assert_eq!(
            o.text,
            "a.txt:1:x\nb.txt:1:x\n[... truncated at 2 matches]\n[1 hidden entries omitted; name a hidden path explicitly to include it]"
        );
        assert_eq!((o.count, o.truncated), (2, true));
    }

    #[test]
    fn reads_render_windows_and_binaries() {
        let r = remote();
        let c = CancelFlag::new();
        let o = r
            .read_file(
                "a.txt",
                "/ws/a.txt",
                Some(4),
                Some(b"x\ny\n"),
                0,
                2000,
                None,
                0,
                None,
                &c,
            )
            .unwrap();
        assert_eq!(
            o.outcome.text,
            format!(
                "[a.txt | 2 lines | hash:{}]\n     1\tx\n     2\ty\n",
                bytes_hash(b"x\ny\n")
            )
        );
        let o = r
            .read_file(
                "b.bin",
                "/ws/b.bin",
                Some(3),
                Some(b"a\0b"),
                0,
                2000,
                None,
                0,
                None,
                &c,
            )
            .unwrap();
        assert!(o
            .outcome
            .text
            .ends_with("Binary file; the first bytes in hex:\n00000000  61 00 62\n"));
        let o = r
            .read_file(
                "p.png",
                "/ws/p.png",
                None,
                Some(b"\x89PNG\r\n\x1a\nrest"),
                0,
                10,
                None,
                0,
                None,
                &c,
            )
            .unwrap();
        assert_eq!(o.media_type, Some("image/png"));
        let o = r
            .read_file("n", "/ws/n", None, None, 0, 10, None, 0, None, &c)
            .unwrap();
        assert_eq!(
            (o.outcome.text.as_str(), o.outcome.emit),
            ("Path not found: n", false)
        );
    }

    #[test]
    fn writes_plan_and_guard() {
        let r = remote();
        let p = r
            .plan_write(
                "a.txt",
                "/ws/a.txt",
                Some(false),
                Parent::Dir,
                Some(b"old\n"),
                "new\n".into(),
                None,
                true,
                None,
            )
            .unwrap();
        assert!(p.diff.contains("-old\n+new"));
        assert!(r.check_guard(&p, Some(b"old\n")).is_ok());
        assert_eq!(
            r.check_guard(&p, Some(b"other")).unwrap_err().kind,
            ErrorKind::Conflict
        );
        assert_eq!(
            r.plan_write(
                "d/a",
                "/ws/d/a",
                None,
                Parent::Missing,
                None,
                "x".into(),
                None,
                true,
                None
            )
            .unwrap_err()
            .message,
            "Parent directory 'd' does not exist. Create the parent directory first."
        );
        let e = r
            .plan_edit(
                "a.txt",
                "/ws/a.txt",
                Some(b"one two".to_vec()),
                &[crate::fs::change::write::Replacement::once("two", "2")],
                None,
                false,
                None,
            )
            .unwrap();
        assert_eq!(
            r.written(&e).text,
            format!("Edited a.txt. [hash:{}]", bytes_hash(b"one 2"))
        );
        assert_eq!(
            r.check_guard(&e, None).unwrap_err().message,
            "File not found: a.txt"
        );
    }
}
