//! The bytes side of the FileSystem's I/O seam: every tool for a workspace whose files are not
//! on this host. Python lists, stats, reads and writes through the workspace protocol and hands
//! the results here; resolution, containment, access patterns, windows, hashes, diffs,
//! replacements, walk filtering, glob and regex matching and every result text stay here,
//! built from the same pieces the host-directory side uses ([`read`], [`write`], [`diff`],
//! [`search`], [`access`]).
//!
//! Paths are absolute POSIX strings inside the workspace. The contract is always the
//! workspace one (pydantic-ai-harness 0.62.0, `upstream-0.62.md` section 1).

use std::path::PathBuf;

use crate::cancel::CancelFlag;
use crate::error::{Error, ErrorKind, Result};
use crate::fs::access::{Access, Fnmatch};
use crate::fs::diff::unified_diff;
use crate::fs::hash::{bytes_hash, is_binary};
use crate::fs::path::Resolved;
use crate::fs::read::{self, ReadSpec, NOTICE_CHARS};
use crate::fs::search::{matching_lines, Pattern};
use crate::fs::text::py_repr;
use crate::fs::write::{self, Guard, Operation, Plan, ABSENT_HASH, DIFF_SOURCE_BYTES};
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
/// Leading bytes of a non-media binary file shown as hex. Source: `_HEX_PREVIEW_BYTES`.
const HEX_PREVIEW_BYTES: usize = 64;
/// Characters of one full hex row. Source: `_HEX_ROW_CHARS`.
const HEX_ROW_CHARS: usize = 58;
/// Unreadable files a search names before it only counts. Source: the `[:10]` of `_search_files`.
const MAX_SKIPPED_NAMED: usize = 10;

/// `posixpath.normpath`.
pub fn normpath(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    let initial = if path.starts_with("//") && !path.starts_with("///") {
        "//"
    } else if path.starts_with('/') {
        "/"
    } else {
        ""
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if initial.is_empty() {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = format!("{initial}{}", parts.join("/"));
    if joined.is_empty() {
        ".".to_string()
    } else {
        joined
    }
}

/// `posixpath.join(base, path)` then `normpath`, as `Workspace.resolve` does.
pub fn join(base: &str, path: &str) -> String {
    if path.starts_with('/') {
        normpath(path)
    } else if base.ends_with('/') || base.is_empty() {
        normpath(&format!("{base}{path}"))
    } else {
        normpath(&format!("{base}/{path}"))
    }
}

/// Whether the normalized absolute `path` is `root` or below it, compared as text.
pub fn contains(root: &str, path: &str) -> bool {
    path == root || path.starts_with(&format!("{}/", root.trim_end_matches('/')))
}

/// `posixpath.relpath(path, start)` of two normalized absolute paths.
pub fn relpath(path: &str, start: &str) -> String {
    let p: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let s: Vec<&str> = start.split('/').filter(|s| !s.is_empty()).collect();
    let common = p.iter().zip(&s).take_while(|(a, b)| a == b).count();
    let mut out: Vec<&str> = vec![".."; s.len() - common];
    out.extend(&p[common..]);
    if out.is_empty() {
        ".".to_string()
    } else {
        out.join("/")
    }
}

/// Whether a relative path has a dot-prefixed component. Source: `_is_hidden`.
pub fn is_hidden(rel: &str) -> bool {
    rel != "." && rel.split('/').any(|p| p.starts_with('.'))
}

/// Whether a glob names a dot-prefixed component. Source: `_explicit_hidden`.
pub fn explicit_hidden(pattern: &str) -> bool {
    pattern.split('/').any(|p| p.starts_with('.'))
}

/// Python's `re.escape`.
pub fn re_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "()[]{}?*+-|^$\\.&~# \t\n\r\x0b\x0c".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
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

/// A compiled `find_files` glob: its components and whether it only matches directories.
#[derive(Debug)]
pub struct Glob {
    parts: Vec<GlobPart>,
    recursive: bool,
    directories_only: bool,
    /// Whether the glob names a hidden component (the walk then enters hidden directories).
    pub include_hidden: bool,
}

#[derive(Debug)]
enum GlobPart {
    Any,
    Name(Fnmatch),
}

impl Glob {
    /// Splits and compiles a relative glob.
    ///
    /// Errors: `Pattern 'p' must be relative to the search path, not absolute.`,
    /// `Pattern 'p' is not a valid glob pattern.` (empty, or a `..` component).
    /// Source: `_find_files`, `glob_parts`.
    pub fn new(pattern: &str) -> Result<Self> {
        let invalid = |m: String| Error::new(ErrorKind::InvalidPattern, m);
        if pattern.starts_with('/') {
            return Err(invalid(format!(
                "Pattern {} must be relative to the search path, not absolute.",
                py_repr(pattern)
            )));
        }
        let names: Vec<&str> = pattern
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if names.is_empty() || names.contains(&"..") {
            return Err(invalid(format!(
                "Pattern {} is not a valid glob pattern.",
                py_repr(pattern)
            )));
        }
        let mut parts = Vec::with_capacity(names.len());
        for name in &names {
            parts.push(if *name == "**" {
                GlobPart::Any
            } else {
                GlobPart::Name(Fnmatch::new(name)?)
            });
        }
        Ok(Glob {
            recursive: names.contains(&"**"),
            parts,
            directories_only: pattern.ends_with('/'),
            include_hidden: explicit_hidden(pattern),
        })
    }

    /// Levels below the start a walk needs to list: `None` with a `**`.
    pub fn max_depth(&self) -> Option<usize> {
        (!self.recursive).then_some(self.parts.len())
    }

    /// `glob_match`: `*`, `?`, `[...]` within one component, `**` any number of them.
    pub fn is_match(&self, rel: &str) -> bool {
        let path: Vec<&str> = rel.split('/').collect();
        let (np, nq) = (self.parts.len(), path.len());
        // ok[p][q]: parts[p..] match path[q..]; filled from the end.
        let mut ok = vec![vec![false; nq + 1]; np + 1];
        ok[np][nq] = true;
        for p in (0..np).rev() {
            for q in (0..=nq).rev() {
                ok[p][q] = match &self.parts[p] {
                    GlobPart::Any => (q..=nq).any(|i| ok[p + 1][i]),
                    GlobPart::Name(m) => q < nq && m.is_match(path[q]) && ok[p + 1][q + 1],
                };
            }
        }
        ok[0][0]
    }
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

/// The media type of an image or PDF, from its leading bytes. Source: `sniff_media_type`.
pub fn sniff_media_type(data: &[u8]) -> Option<&'static str> {
    if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if data.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if data.starts_with(b"RIFF") && data.get(8..12) == Some(b"WEBP") {
        Some("image/webp")
    } else if data.starts_with(b"%PDF-") {
        Some("application/pdf")
    } else {
        None
    }
}

/// The first bytes as offset-prefixed hex rows of 16. Source: `hex_preview`.
pub fn hex_preview(data: &[u8], max_chars: Option<usize>) -> String {
    let limit = match max_chars {
        None => HEX_PREVIEW_BYTES,
        Some(m) => HEX_PREVIEW_BYTES.min(m / HEX_ROW_CHARS * 16),
    };
    let head = &data[..data.len().min(limit)];
    let mut out = String::new();
    for (row, chunk) in head.chunks(16).enumerate() {
        let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        out.push_str(&format!("{:08x}  {}\n", row * 16, hex.join(" ")));
    }
    if data.len() > head.len() {
        out.push_str(&format!("... ({} more bytes)\n", data.len() - head.len()));
    }
    out
}

/// A `read_file` result: the text, and the media type when the bytes go back as a file.
#[derive(Debug)]
pub struct Read {
    /// Text and event data.
    pub outcome: Outcome,
    /// `image/png` ... `application/pdf`: the caller appends the bytes as `BinaryContent`.
    pub media_type: Option<&'static str>,
}

impl Remote {
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
    /// Errors: `ErrorKind::Outside` with 0.62.0's message. Source: `_resolve_path`.
    pub fn resolve(&self, path: &str) -> Result<String> {
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

    /// The `limit` a read uses: capped at `max_read_lines`.
    ///
    /// Errors: `offset must be non-negative.`, `limit must be at least 1.`.
    pub fn read_limit(&self, offset: i64, limit: Option<i64>) -> Result<(usize, usize)> {
        if offset < 0 {
            return Err(retry(
                ErrorKind::InvalidArgument,
                "offset must be non-negative.".into(),
            ));
        }
        let max = self.limits.max_read_lines;
        let limit = match limit {
            Some(l) if l < 1 => {
                return Err(retry(
                    ErrorKind::InvalidArgument,
                    "limit must be at least 1.".into(),
                ))
            }
            Some(l) => (l as u64).min(max as u64) as usize,
            None => max,
        };
        Ok((offset as usize, limit))
    }

    fn path_label(&self, path: &str) -> String {
        read::label_of(path, self.limits.max_read_chars)
    }

    fn body_budget(&self, head: &str) -> Option<usize> {
        self.limits
            .max_read_chars
            .map(|m| m.saturating_sub(head.chars().count() + NOTICE_CHARS))
    }

    /// `read_file` of the bytes the backend returned for `resolved`.
    ///
    /// `size`: what `stat` reported (`None` with no `data`: nothing readable is there, the
    /// result is `Path not found: p`). `guessed_type`: `mimetypes.guess_type(path)[0]`.
    /// Errors: `Offset K exceeds file length (N lines).`. Source: `_read_file`, `_read_binary`.
    #[allow(clippy::too_many_arguments)]
    pub fn read_file(
        &self,
        path: &str,
        resolved: &str,
        size: Option<u64>,
        data: Option<&[u8]>,
        offset: usize,
        limit: usize,
        guessed_type: Option<&str>,
        cancel: &CancelFlag,
    ) -> Result<Read> {
        let event = self.event_path(resolved);
        let plain = |text: String, emit: bool| Read {
            outcome: found(text, event.clone(), emit),
            media_type: None,
        };
        let too_large = |n: u64| {
            format!(
                "[{} | {n} bytes]\nToo large to read: the limit is {MAX_READ_FILE_BYTES} bytes. Find the lines you need with a search tool, or read a byte range with a shell tool if you have one.\n",
                self.path_label(path)
            )
        };
        let data = match (data, size) {
            (Some(d), _) if d.len() as u64 > MAX_READ_FILE_BYTES => {
                return Ok(plain(too_large(d.len() as u64), false))
            }
            (Some(d), _) => d,
            (None, Some(n)) if n > MAX_READ_FILE_BYTES => return Ok(plain(too_large(n), false)),
            (None, _) => return Ok(plain(format!("Path not found: {path}"), false)),
        };
        let hash = bytes_hash(data);
        let media_type = sniff_media_type(data);
        if media_type.is_some() || is_binary(data) {
            let suffix = if self.limits.content_hashes {
                format!(" | hash:{hash}")
            } else {
                String::new()
            };
            let shown = media_type
                .or(guessed_type)
                .unwrap_or("application/octet-stream");
            let head = format!(
                "[{} | {shown} | {} bytes{suffix}]\n",
                self.path_label(path),
                data.len()
            );
            let (text, media) = match media_type {
                None => {
                    let intro = "Binary file; the first bytes in hex:\n";
                    let budget = self.body_budget(&format!("{head}{intro}"));
                    (format!("{head}{intro}{}", hex_preview(data, budget)), None)
                }
                Some(m) if data.len() <= MAX_MEDIA_BYTES => (head, Some(m)),
                Some(_) => (
                    format!("{head}Too large to view: the limit is {MAX_MEDIA_BYTES} bytes.\n"),
                    None,
                ),
            };
            let mut outcome = found(text, event, true);
            outcome.content_hash = Some(hash);
            return Ok(Read {
                outcome,
                media_type: media,
            });
        }
        let spec = ReadSpec {
            offset,
            limit,
            max_read_chars: self.limits.max_read_chars,
            content_hashes: self.limits.content_hashes,
        };
        let mut reader = data;
        let mut scan = read::scan(&mut reader, spec.window(path), cancel)
            .map_err(|e| Error::new(ErrorKind::Io(e.kind()), e.to_string()))??;
        scan.hash = hash.clone();
        let text = read::render(path, &scan, &spec)?;
        let mut outcome = found(text, event, true);
        outcome.content_hash = Some(hash);
        Ok(Read {
            outcome,
            media_type: None,
        })
    }

    /// `file_info` from a `stat` (`None`: nothing there) and, for a file up to
    /// [`MAX_READ_FILE_BYTES`], its bytes. Source: `_file_info`.
    pub fn file_info(
        &self,
        path: &str,
        resolved: &str,
        entry: Option<&Entry>,
        data: Option<&[u8]>,
    ) -> Outcome {
        let event = self.event_path(resolved);
        let missing = || found(format!("Path not found: {path}"), event.clone(), false);
        let Some(entry) = entry else {
            return missing();
        };
        let kind = if entry.is_dir { "directory" } else { "file" };
        let mut parts = vec![format!("path: {path}"), format!("type: {kind}")];
        if let Some(size) = entry.size {
            parts.push(format!("size: {size} bytes"));
        }
        if !entry.is_dir && entry.size.is_some_and(|s| s > MAX_READ_FILE_BYTES) {
            parts.push(format!(
                "contents: not read (over {MAX_READ_FILE_BYTES} bytes)"
            ));
        } else if !entry.is_dir {
            let Some(data) = data else {
                return missing();
            };
            let binary = is_binary(data);
            parts.push(format!("binary: {}", if binary { "True" } else { "False" }));
            if !binary {
                parts.push(format!("lines: {}", line_count(data)));
                parts.push(format!("hash: {}", bytes_hash(data)));
            }
        }
        found(parts.join("\n"), event, false)
    }

    fn plan(
        &self,
        operation: Operation,
        path: &str,
        resolved: &str,
        content: String,
        diff: (String, bool),
        guard: Guard,
    ) -> Plan {
        Plan {
            operation,
            path: path.to_string(),
            resolved: Resolved {
                abs: PathBuf::from(resolved),
                rel: PathBuf::from(match self.event_path(resolved).as_str() {
                    "." => "",
                    rel => rel,
                }),
            },
            diff: diff.0,
            truncated: diff.1,
            announced: true,
            content,
            guard,
            old: None,
        }
    }

    /// Plans a `write_file` from what `stat` said of the target (`Some(is_dir)`) and its parent,
    /// and, when `announce` and the target exists, its current bytes (`None`: the backend
    /// refused to read them).
    ///
    /// Errors: `Path 'p' exists and is not a regular file.`, `Parent directory 'd' does not
    /// exist. Create the parent directory first.`, `Path 'p' has a parent that is not a
    /// directory.`, the conflict message. Source: `_write_file`, `_announced_state`.
    #[allow(clippy::too_many_arguments)]
    pub fn plan_write(
        &self,
        path: &str,
        resolved: &str,
        target: Option<bool>,
        parent: Parent,
        old: Option<&[u8]>,
        content: String,
        expected_hash: Option<String>,
        announce: bool,
    ) -> Result<Plan> {
        if target == Some(true) {
            return Err(retry(
                ErrorKind::NotFound,
                format!("Path {} exists and is not a regular file.", py_repr(path)),
            ));
        }
        match parent {
            Parent::Dir => {}
            Parent::Missing => {
                let parent = resolved.rsplit_once('/').map_or("/", |(p, _)| p);
                let parent = if parent.is_empty() { "/" } else { parent };
                return Err(retry(
                    ErrorKind::NotFound,
                    format!(
                        "Parent directory '{}' does not exist. Create the parent directory first.",
                        relpath(parent, &self.root)
                    ),
                ));
            }
            Parent::NotDir => {
                return Err(retry(
                    ErrorKind::NotFound,
                    format!(
                        "Path {} has a parent that is not a directory.",
                        py_repr(path)
                    ),
                ))
            }
        }
        let exists = target.is_some();
        let mut guard = match (&expected_hash, exists) {
            (Some(h), true) => Guard::Hash(h.clone()),
            _ => Guard::None,
        };
        let mut diff = (String::new(), false);
        if announce {
            let previous = if !exists {
                guard = Guard::Hash(ABSENT_HASH.to_string());
                Some(String::new())
            } else if let Some(raw) = old {
                let current = bytes_hash(raw);
                if let Some(expected) = &expected_hash {
                    if *expected != current {
                        return Err(write::conflict(path, expected, &current));
                    }
                }
                guard = Guard::Hash(current);
                (raw.len() <= DIFF_SOURCE_BYTES).then(|| String::from_utf8_lossy(raw).into_owned())
            } else {
                guard = Guard::None;
                None
            };
            diff = unified_diff(previous.as_deref(), &content, &self.event_path(resolved));
        }
        let mut plan = self.plan(Operation::Write, path, resolved, content, diff, guard);
        plan.announced = announce;
        Ok(plan)
    }

    /// Plans an `edit_file` from the file's bytes (`None`: missing or a directory).
    ///
    /// Errors: `File not found: p`, binary and UTF-8 refusals, the conflict message,
    /// replacement errors. Source: `_edit_file`.
    pub fn plan_edit(
        &self,
        path: &str,
        resolved: &str,
        raw: Option<Vec<u8>>,
        replacements: &[(String, String)],
        expected_hash: Option<String>,
    ) -> Result<Plan> {
        let raw =
            raw.ok_or_else(|| retry(ErrorKind::NotFound, format!("File not found: {path}")))?;
        let current = bytes_hash(&raw);
        let text = write::edit_text(path, raw)?;
        if let Some(expected) = &expected_hash {
            if *expected != current {
                return Err(write::conflict(path, expected, &current));
            }
        }
        let new_content = write::apply_replacements(&text, replacements, path)?;
        let diff = unified_diff(Some(&text), &new_content, &self.event_path(resolved));
        Ok(self.plan(
            Operation::Edit,
            path,
            resolved,
            new_content,
            diff,
            Guard::Hash(current),
        ))
    }

    /// Plans a `create_directory` from what `stat` said of the target (`Some(is_dir)`) and
    /// whether its nearest existing ancestor is a directory; `None` when it already exists.
    ///
    /// Errors: `Path 'p' exists and is not a directory.`, `Path 'p' has a parent that is not
    /// a directory.`. Source: `_create_directory`.
    pub fn plan_create_directory(
        &self,
        path: &str,
        resolved: &str,
        target: Option<bool>,
        ancestor_is_dir: bool,
    ) -> Result<Option<Plan>> {
        match target {
            Some(true) => return Ok(None),
            Some(false) => return Err(exists_not_dir(path)),
            None => {}
        }
        if !ancestor_is_dir {
            return Err(parent_not_dir(path));
        }
        Ok(Some(self.plan(
            Operation::CreateDirectory,
            path,
            resolved,
            String::new(),
            (String::new(), false),
            Guard::None,
        )))
    }

    /// The conflict guard of a commit, on the bytes now at the target (`None`: nothing).
    ///
    /// A write whose file vanished goes ahead as a create; an edit's is `File not found: p`.
    /// Errors: the conflict message. Source: `_check_guard`, `_edit_file`.
    pub fn check_guard(&self, plan: &Plan, current: Option<&[u8]>) -> Result<()> {
        let Guard::Hash(expected) = &plan.guard else {
            return Ok(());
        };
        match current {
            None if plan.operation == Operation::Edit => Err(retry(
                ErrorKind::NotFound,
                format!("File not found: {}", plan.path),
            )),
            None => Ok(()),
            Some(now) => {
                let got = bytes_hash(now);
                if got == *expected {
                    Ok(())
                } else {
                    Err(write::conflict(&plan.path, expected, &got))
                }
            }
        }
    }

    /// The result of a committed write or edit.
    pub fn written(&self, plan: &Plan) -> Outcome {
        let (text, hash) = write::written_text(
            plan.operation,
            &plan.path,
            &plan.content,
            self.limits.content_hashes,
        );
        Outcome {
            text,
            path: plan.event_path(),
            content_hash: Some(hash),
            emit: true,
            ..Default::default()
        }
    }

    /// The result of a `create_directory` commit: `state` is what happened at the target:
    /// `created`, `existed` (a directory appeared), `file` (something else is there) or
    /// `parent` (a parent is not a directory).
    pub fn created(&self, plan: &Plan, state: &str) -> Result<Outcome> {
        let text = format!("Created directory: {}", plan.path);
        match state {
            "created" => Ok(found(text, plan.event_path(), true)),
            "existed" => Ok(found(text, plan.event_path(), false)),
            "file" => Err(exists_not_dir(&plan.path)),
            _ => Err(parent_not_dir(&plan.path)),
        }
    }

    /// `list_directory` from one listing (`None`: the backend found no directory there).
    /// Entries with an unknown size show `(size unknown)`. Source: `_list_directory`.
    pub fn list_directory(
        &self,
        path: &str,
        resolved: &str,
        entries: Option<Vec<Entry>>,
    ) -> Result<Outcome> {
        let mut entries = entries.ok_or_else(|| not_a_directory(path))?;
        entries.sort_by(|a, b| a.name().cmp(b.name()));
        let max = self.limits.max_list_results;
        let (mut lines, mut shown, mut hidden, mut truncated) = (Vec::new(), 0, 0, false);
        for entry in &entries {
            if entry.name().starts_with('.') {
                hidden += 1;
            }
            if self.walk_entry(&entry.path, resolved, false).is_none() {
                continue;
            }
            let rel = relpath(&entry.path, &self.cwd);
            let line = match (entry.is_dir, entry.size) {
                (true, _) => format!("{rel}/"),
                (false, Some(n)) => format!("{rel}  ({n} bytes)"),
                (false, None) => format!("{rel}  (size unknown)"),
            };
            if lines.len() >= max {
                lines.push(format!("[... truncated at {max} entries]"));
                truncated = true;
                break;
            }
            lines.push(line);
            shown += 1;
        }
        if hidden > 0 {
            lines.push(format!(
                "[{hidden} hidden entries omitted; name a hidden path explicitly to include it]"
            ));
        }
        let text = if lines.is_empty() {
            "(empty directory)".to_string()
        } else {
            lines.join("\n")
        };
        Ok(Outcome {
            text,
            path: self.event_path(resolved),
            count: shown,
            truncated,
            emit: true,
            ..Default::default()
        })
    }

    /// `find_files` (or, with `files_only`, the walker form of `list_files`) over the entries
    /// a walk from `resolved` collected (`None`: no directory there).
    ///
    /// Errors: `Not a directory: p`. Source: `_find_files`.
    pub fn find_files(
        &self,
        glob: &Glob,
        path: &str,
        resolved: &str,
        entries: Option<Vec<Entry>>,
        walk_cut: bool,
        files_only: bool,
    ) -> Result<Outcome> {
        let entries = entries.ok_or_else(|| not_a_directory(path))?;
        let rel_of = |e: &Entry| relpath(&e.path, resolved);
        let hidden = if glob.include_hidden {
            0
        } else {
            entries
                .iter()
                .filter(|e| {
                    let rel = rel_of(e);
                    is_hidden(&rel) && ((e.is_dir && glob.recursive) || glob.is_match(&rel))
                })
                .count()
        };
        let mut matched: Vec<&Entry> = entries
            .iter()
            .filter(|e| {
                (if files_only {
                    !e.is_dir
                } else {
                    e.is_dir || !glob.directories_only
                }) && glob.is_match(&rel_of(e))
            })
            .collect();
        matched.sort_by(|a, b| a.path.split('/').cmp(b.path.split('/')));
        let max = self.limits.max_find_results;
        let (mut lines, mut capped) = (Vec::new(), false);
        for e in matched {
            if self
                .walk_entry(&e.path, resolved, glob.include_hidden)
                .is_none()
            {
                continue;
            }
            if lines.len() >= max {
                capped = true;
                break;
            }
            let suffix = if e.is_dir { "/" } else { "" };
            lines.push(format!("{}{suffix}", relpath(&e.path, &self.cwd)));
        }
        let count = lines.len();
        if capped {
            lines.push(format!("[... truncated at {max} matches]"));
        }
        Ok(Outcome {
            text: with_walk_notice(lines, walk_cut, hidden),
            path: self.event_path(resolved),
            count,
            truncated: capped || walk_cut,
            emit: true,
            ..Default::default()
        })
    }
}

fn exists_not_dir(path: &str) -> Error {
    retry(
        ErrorKind::NotFound,
        format!("Path {} exists and is not a directory.", py_repr(path)),
    )
}

fn parent_not_dir(path: &str) -> Error {
    retry(
        ErrorKind::NotFound,
        format!(
            "Path {} has a parent that is not a directory.",
            py_repr(path)
        ),
    )
}

/// Lines split on `\n` only, a final unterminated line counted. Source: `split_lines`.
fn line_count(data: &[u8]) -> usize {
    let newlines = memchr::memchr_iter(b'\n', data).count();
    newlines + usize::from(!data.is_empty() && !data.ends_with(b"\n"))
}

/// One content search over files handed in one by one, in order: `search_files` (and the
/// walker form of `grep`). Source: `_search_files`.
#[derive(Debug)]
pub struct Search {
    pattern: Pattern,
    include_glob: Option<Fnmatch>,
    /// Whether the walk enters hidden directories (the glob names one).
    pub include_hidden: bool,
    resolved: String,
    candidates: Vec<Entry>,
    results: Vec<String>,
    skipped: Vec<String>,
    hidden: usize,
    capped: bool,
}

impl Remote {
    /// Compiles a search from `resolved` (already resolved and checked).
    ///
    /// Errors: `Invalid regex pattern: <message>`.
    pub fn search(
        &self,
        pattern: &str,
        resolved: &str,
        include_glob: Option<&str>,
    ) -> Result<Search> {
        let compiled = Pattern::new(pattern)?;
        let glob = include_glob.filter(|g| !g.is_empty());
        Ok(Search {
            pattern: compiled,
            include_glob: glob.map(Fnmatch::new).transpose()?,
            include_hidden: glob.is_some_and(explicit_hidden),
            resolved: resolved.to_string(),
            candidates: Vec::new(),
            results: Vec::new(),
            skipped: Vec::new(),
            hidden: 0,
            capped: false,
        })
    }

    /// Sets the files to search from what `stat` found at the start (`None`: nothing, a file,
    /// or a directory whose walked `entries` are given) and returns them: sorted, filtered by
    /// the walk rules and `include_glob`. Files over [`MAX_SEARCH_FILE_BYTES`] are counted as
    /// skipped here and not returned.
    pub fn search_files_of(
        &self,
        search: &mut Search,
        start: Option<&Entry>,
        entries: Vec<Entry>,
    ) -> Vec<Entry> {
        let files: Vec<Entry> = match start {
            None => Vec::new(),
            Some(e) if !e.is_dir => vec![e.clone()],
            Some(_) => {
                if !search.include_hidden {
                    search.hidden = entries
                        .iter()
                        .filter(|e| is_hidden(&relpath(&e.path, &search.resolved)))
                        .count();
                }
                entries.into_iter().filter(|e| !e.is_dir).collect()
            }
        };
        let mut files = files;
        files.sort_by(|a, b| a.path.split('/').cmp(b.path.split('/')));
        let mut keep = Vec::new();
        for file in files {
            let Some(rel) = self.walk_entry(&file.path, &search.resolved, search.include_hidden)
            else {
                continue;
            };
            if search
                .include_glob
                .as_ref()
                .is_some_and(|g| !g.is_match(&rel))
            {
                continue;
            }
            keep.push(file);
        }
        search.candidates = keep.clone();
        keep
    }

    /// Searches one candidate's bytes (`None`: the backend could not read it, or it is over
    /// [`MAX_SEARCH_FILE_BYTES`]); returns whether the match cap was hit (stop feeding).
    pub fn search_feed(&self, search: &mut Search, index: usize, data: Option<&[u8]>) -> bool {
        let Some(entry) = search.candidates.get(index) else {
            return search.capped;
        };
        let label = relpath(&entry.path, &self.cwd);
        let Some(data) = data.filter(|d| d.len() as u64 <= MAX_SEARCH_FILE_BYTES) else {
            search.skipped.push(label);
            return false;
        };
        if search.capped || is_binary(data) {
            return search.capped;
        }
        let text = String::from_utf8_lossy(data);
        let left = self
            .limits
            .max_search_results
            .saturating_sub(search.results.len());
        let (lines, capped) = matching_lines(&text, &search.pattern, None, &label, left);
        search.results.extend(lines);
        search.capped = capped;
        capped
    }

    /// The search's result; `walk_cut`: the walk stopped at its caps.
    pub fn search_result(&self, search: Search, walk_cut: bool) -> Outcome {
        let count = search.results.len();
        let mut lines = search.results;
        if search.capped {
            lines.push(format!(
                "[... truncated at {} matches]",
                self.limits.max_search_results
            ));
        }
        if !search.skipped.is_empty() {
            let named: Vec<&str> = search
                .skipped
                .iter()
                .take(MAX_SKIPPED_NAMED)
                .map(String::as_str)
                .collect();
            lines.push(format!(
                "[{} files skipped (too large or unreadable): {}{}]",
                search.skipped.len(),
                named.join(", "),
                if search.skipped.len() > MAX_SKIPPED_NAMED {
                    ", ..."
                } else {
                    ""
                }
            ));
        }
        Outcome {
            text: with_walk_notice(lines, walk_cut, search.hidden),
            path: self.event_path(&search.resolved),
            count,
            truncated: search.capped || walk_cut,
            emit: true,
            ..Default::default()
        }
    }
}

/// The `grep` arguments on a backend without commands, as the regex `search_files` runs.
///
/// Errors: `context must be between 0 and 20.`, the `file_type` and `context` refusals.
/// Source: `_grep` (the filesystem-only branch).
pub fn grep_pattern(
    pattern: &str,
    file_type: Option<&str>,
    ignore_case: bool,
    literal: bool,
    context: i64,
) -> Result<String> {
    let invalid = |m: &str| Error::new(ErrorKind::InvalidArgument, m.to_string());
    if !(0..=20).contains(&context) {
        return Err(invalid("context must be between 0 and 20."));
    }
    if file_type.is_some() {
        return Err(invalid(
            "`file_type` needs ripgrep, which this workspace cannot run; use `glob` instead.",
        ));
    }
    if context > 0 {
        return Err(invalid(
            "`context` needs a search command, which this workspace cannot run, so context lines are unavailable; search with `context=0`, then call `read_file` with an `offset` near the match.",
        ));
    }
    let regex = if literal {
        re_escape(pattern)
    } else {
        pattern.to_string()
    };
    Ok(if ignore_case {
        format!("(?i){regex}")
    } else {
        regex
    })
}

/// The glob the walker form of `list_files` finds: `**`, the glob, or `**/<glob>`.
pub fn list_files_glob(glob: Option<&str>) -> String {
    match glob {
        None => "**".to_string(),
        Some(g) if g.contains('/') => g.to_string(),
        Some(g) => format!("**/{g}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::tests::limits;
    use crate::fs::Contract;

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
                &c,
            )
            .unwrap();
        assert_eq!(o.media_type, Some("image/png"));
        let o = r
            .read_file("n", "/ws/n", None, None, 0, 10, None, &c)
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
                true
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
                &[("two".into(), "2".into())],
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
