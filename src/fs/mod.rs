//! The FileSystem: a [`Root`], its [`Access`] lists and its [`Limits`], with one method per
//! tool. Each method resolves and checks its path, does the I/O beneath the root descriptor and
//! returns an [`Outcome`]: the model-facing text plus what the tool's event needs.
//!
//! One folder a concern, lowest first (each imports only those above it in this list, and
//! this module for the `impl FileSystem` blocks of its tools):
//! - [`text`]: the Python text semantics results depend on (`repr`, `splitlines`, `re` patterns);
//!   [`contract`]: which documented contract applies and the limits.
//! - [`root`]: where a path may go (resolution beneath the root descriptor, containment, access
//!   patterns, special files).
//! - [`read`]: streaming windows, encodings, clipping, content hashes, the scan cache.
//! - [`disclosure`]: the opt-in notices of what results leave out.
//! - [`change`]: plan and commit of writes, edits and mkdir; matching; the event diff.
//! - [`walk`]: `list_directory`, `find_files` and the walks the searches share.
//! - [`ripgrep`]: `list_files` and `grep` on ripgrep's crates.
//! - [`search`]: `search_files` and its matching lines.
//! - [`remote`]: the same tools on bytes a workspace backend that is not on this host hands
//!   in (Python moves them through the workspace protocol), built from the pieces above.

pub mod change;
pub mod contract;
pub mod disclosure;
pub mod read;
pub mod remote;
pub mod ripgrep;
pub mod room;
pub mod root;
pub mod search;
pub mod text;
pub mod unreadable;
pub mod walk;

use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::cancel::CancelFlag;
use crate::error::{Error, ErrorKind, Result};
use crate::fs::read::{cache, clip, encoding, gate, ReadSpec, WindowSpec};
use crate::fs::root::access::Access;
use crate::fs::root::path::{fstat, is_dir, is_reg, Resolved, Root, READ_FLAGS, STAT_FLAGS};
use crate::fs::root::{lookalike, special};
use crate::fs::text::pure_posix;

use contract::not_regular_file;
pub use contract::{Contract, Limits, NOT_REGULAR_FILE};

/// The workspace contract's answer for a path with no file to read (a normal result, no event).
fn path_not_found(fs: &FileSystem, path: &str, resolved: &Resolved) -> Outcome {
    Outcome {
        text: fs.with_lookalike(
            format!("Path not found: {}", text::names::shown_path(path)),
            resolved,
            path,
        ),
        path: resolved.event_str(),
        ..Default::default()
    }
}

/// A finished operation: the model-facing text plus what its event needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The tool result the model reads.
    pub text: String,
    /// Event path: resolved, relative to the real root (`.` for the root).
    pub path: String,
    /// The content hash (read, write, edit), also when hashes are not shown.
    pub content_hash: Option<String>,
    /// Entries shown (list_directory) or matches the model received (searches).
    pub count: usize,
    /// Walkers: an entry or match was dropped at the cap.
    pub truncated: bool,
    /// Whether the tool emits its event.
    pub emit: bool,
    /// read_file, workspace contract: an image or PDF returned as file content (`text` is then
    /// its header alone).
    pub media: Option<read::Media>,
}

impl Outcome {
    /// A walker's result: `lines` joined by newlines, then `[... truncated at {cap} {unit}]`
    /// when `truncated`, or `empty` when there is nothing; `count` is the lines shown.
    /// Source: the tails of `_search_files`, `_find_files`, `_list_files`, `_grep`.
    pub fn listing(
        path: String,
        lines: Vec<String>,
        truncated: bool,
        cap: usize,
        unit: &str,
        empty: &str,
    ) -> Self {
        let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
        for line in &lines {
            text.push_str(line);
            text.push('\n');
        }
        Self::listing_text(path, text, lines.len(), truncated, cap, unit, empty)
    }

    /// [`Outcome::listing`] of `count` lines already written into `text`, each followed by
    /// `\n` (a search's results, appended file by file as they come).
    pub fn listing_text(
        path: String,
        mut text: String,
        count: usize,
        truncated: bool,
        cap: usize,
        unit: &str,
        empty: &str,
    ) -> Self {
        if truncated {
            text.push_str(&format!("[... truncated at {cap} {unit}]"));
        } else if count == 0 {
            text = empty.to_string();
        } else {
            text.pop();
        }
        Outcome {
            text,
            path,
            count,
            truncated,
            emit: true,
            ..Default::default()
        }
    }
}

/// Runs the walker `f` (`list_directory`, `find_files`, `search_files`, `list_files`, `grep`);
/// its result ends with [`text::ESCAPED_NOTE`] when this call showed a name escaped
/// ([`text::escape_name`], issue 19): the call runs in its own [`text::names::EscapeScope`],
/// so a name escaped by a call running beside it never adds the note here.
pub fn noting_escaped_names(f: impl FnOnce() -> Result<Outcome>) -> Result<Outcome> {
    let scope = text::names::EscapeScope::new();
    let mut outcome = scope.enter(f)?;
    if scope.escaped() {
        outcome.text.push('\n');
        outcome.text.push_str(text::ESCAPED_NOTE);
    }
    Ok(outcome)
}

/// A root directory with its access patterns and limits; all tools run here.
#[derive(Debug)]
pub struct FileSystem {
    /// The root and working directory.
    pub root: Root,
    /// The pattern lists.
    pub access: Access,
    /// The limits.
    pub limits: Limits,
    /// Opt-in notices of what results leave out (issue 9): none by default.
    pub disclosure: disclosure::Disclosure,
    /// What full passes over unchanged files found ([`cache`]): one per FileSystem.
    pub cache: cache::ScanCache,
}

impl FileSystem {
    /// Builds a FileSystem.
    ///
    /// Errors: `ErrorKind::InvalidArgument` when `cwd` is outside the root (the reference's
    /// `ValueError` text), `ErrorKind::InvalidPattern` for a pattern that cannot compile.
    pub fn new(
        root_dir: &str,
        cwd: Option<&str>,
        allowed: &[String],
        denied: &[String],
        protected: &[String],
        limits: Limits,
    ) -> Result<Self> {
        Ok(FileSystem {
            root: Root::new(root_dir, cwd)?.under(limits.contract),
            access: Access::new(allowed, denied, protected)?,
            limits,
            disclosure: Default::default(),
            cache: cache::ScanCache::new(),
        })
    }

    /// This FileSystem with its root named by the user (`root_dir` under the workspace
    /// contract), which its containment errors then name: see [`Root::named`].
    pub fn with_root_named(mut self, named: bool) -> Self {
        self.root = self.root.named(named);
        self
    }

    /// This FileSystem with `disclosure`'s opt-in notices.
    pub fn with_disclosure(mut self, disclosure: disclosure::Disclosure) -> Self {
        self.disclosure = disclosure;
        self
    }

    /// Resolves `path` from `cwd` and checks containment and access.
    /// Source: `_safe_resolve`, _toolset.py.
    pub fn safe_resolve(&self, path: &str, write: bool, check_allowed: bool) -> Result<Resolved> {
        let resolved = self.root.resolve(path)?;
        // Under the workspace contract the path as written is checked too, first (0.62.0).
        if resolved.written != resolved.rel {
            self.access
                .check(&resolved.event_str(), write, check_allowed)?;
        }
        self.access
            .check(&resolved.rel_str(), write, check_allowed)?;
        Ok(resolved)
    }

    /// `message` followed by [`lookalike::suggestion`] when a look-alike of `path` exists
    /// ([`lookalike::lookalike`]).
    pub fn with_lookalike(&self, message: String, resolved: &Resolved, path: &str) -> String {
        match lookalike::lookalike(&self.root, &self.access, resolved, path) {
            Some(existing) => format!("{message}. {}", lookalike::suggestion(&existing)),
            None => message,
        }
    }

    /// Refuses to create `path` (which does not exist) when a name differing only in
    /// Unicode normalization does: writing would make a look-alike twin.
    ///
    /// Errors: `ErrorKind::Conflict`, naming the existing spelling.
    pub fn refuse_lookalike(&self, resolved: &Resolved, path: &str) -> Result<()> {
        match lookalike::lookalike(&self.root, &self.access, resolved, path) {
            Some(existing) => Err(lookalike::twin_refusal(path, &existing)),
            None => Ok(()),
        }
    }

    /// `read_file`: numbered lines `offset..offset + limit` with the header, streaming.
    ///
    /// `limit`: `None` means `max_read_lines`; larger values are capped at it. Negative
    /// `offset` or `limit`: `ErrorKind::InvalidArgument`. Other errors as the reference:
    /// `File not found: p`, `'p' is a directory, not a file.`, `Offset K exceeds file
    /// length (N lines).`, OS errors. Source: `_read_file`, _toolset.py.
    ///
    /// Workspace contract (0.62.0): `\n` lines, raw-byte hash, a binary file described by
    /// [`read::render_binary`] (an image or PDF returned in [`Outcome::media`]), with
    /// `guessed_type` the name's `mimetypes` type for that description; a file of any size
    /// is read by window.
    pub fn read_file(
        &self,
        path: &str,
        offset: i64,
        limit: Option<i64>,
        guessed_type: Option<&str>,
        cancel: &CancelFlag,
    ) -> Result<Outcome> {
        self.read_file_from(path, offset, limit, 0, guessed_type, cancel)
    }

    /// [`FileSystem::read_file`] with each line shown from char `column` (0-based), as the
    /// notice of a line clipped by `max_line_chars` suggests ([`clip`]); `column` is
    /// ignored without `max_line_chars`.
    pub fn read_file_from(
        &self,
        path: &str,
        offset: i64,
        limit: Option<i64>,
        column: usize,
        guessed_type: Option<&str>,
        cancel: &CancelFlag,
    ) -> Result<Outcome> {
        let workspace = self.limits.contract.is_workspace();
        if offset < 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                if workspace {
                    "offset must be non-negative.".to_string()
                } else {
                    format!("offset must be >= 0, got {offset}.")
                },
            ));
        }
        let max = self.limits.max_read_lines;
        let limit = match limit {
            None => max,
            // 0.62.0 also refuses `limit=0`, which shows no line.
            Some(l) if workspace && l < 1 => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "limit must be at least 1.",
                ))
            }
            // The document is silent; 0.36.0 answers `limit=0` with no line and a hint to
            // continue at the same offset, which loops: a retry, worded as the offset's.
            Some(l) if l < 1 => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("limit must be >= 1, got {l}."),
                ))
            }
            Some(l) => (l as u64).min(max as u64) as usize,
        };
        let resolved = self.safe_resolve(path, false, true)?;
        let mut file = match self.open_regular(
            &resolved,
            path,
            || {
                self.with_lookalike(
                    format!("File not found: {}", text::names::shown_path(path)),
                    &resolved,
                    path,
                )
            },
            true,
        ) {
            Err(e) if workspace && e.kind == ErrorKind::NotFound => {
                return Ok(path_not_found(self, path, &resolved))
            }
            r => r?,
        };
        let spec = ReadSpec {
            offset: offset as usize,
            limit,
            max_read_chars: self.limits.max_read_chars,
            content_hashes: self.limits.content_hashes,
            contract: self.limits.contract,
        };
        let mut window = spec.window(path);
        let clip = self.disclosure.max_line_chars;
        if clip.is_some() {
            // Long lines are kept whole, then clipped to what the result shows.
            window.cap = None;
            window.rendered = false;
        }
        // Held until the result is rendered: it bounds the windows in memory at once.
        let _permit = gate::enter(&file, cancel)?;
        let mut scan = cache::scan_file(&mut file, path, window, cancel, &self.cache)
            .map_err(|e| self.root.os_error(&e, Some(&resolved.rel)))??;
        if let Some(kind) = scan.utf16 {
            scan = self.rescan_utf16(&mut file, scan, kind, window, &resolved, cancel)?;
        }
        if let Some(max) = clip {
            clip::clip_window(&mut scan, path, spec.offset, column, max);
        }
        let (text, media) = match self.limits.contract {
            Contract::Workspace if scan.is_binary_read() => {
                read::render_binary(path, &mut scan, &spec, guessed_type)
            }
            Contract::Document if scan.binary => (read::binary_placeholder(scan.size), None),
            _ => (read::render_owned(path, &mut scan, &spec)?, None),
        };
        Ok(Outcome {
            text,
            path: resolved.event_str(),
            content_hash: Some(scan.hash),
            emit: true,
            media,
            ..Default::default()
        })
    }

    /// The scan of a file recognised as UTF-16, over its decoded text
    /// ([`encoding::rescan_utf16`]), read again from the start of `file`.
    fn rescan_utf16(
        &self,
        file: &mut File,
        first: read::Scan,
        kind: encoding::Utf16,
        window: WindowSpec,
        resolved: &Resolved,
        cancel: &CancelFlag,
    ) -> Result<read::Scan> {
        use std::io::{Seek, SeekFrom};
        let os = |e: std::io::Error| self.root.os_error(&e, Some(&resolved.rel));
        file.seek(SeekFrom::Start(0)).map_err(os)?;
        encoding::rescan_utf16(file, first, kind, window, cancel).map_err(os)?
    }

    /// Opens a resolved path for reading and checks it is a regular file.
    ///
    /// A directory: `'p' is a directory, not a file.` when `dir_message`, else the
    /// `missing` message, which is also used for a missing path or a special file (both
    /// `ErrorKind::NotFound`: 0.62.0's `read_file` answers either as `Path not found: p`).
    /// Workspace contract: a FIFO, socket or device is [`NOT_REGULAR_FILE`].
    pub(crate) fn open_regular(
        &self,
        resolved: &Resolved,
        path: &str,
        missing: impl Fn() -> String,
        dir_message: bool,
    ) -> Result<File> {
        let workspace = self.limits.contract.is_workspace();
        let missing_error = || Error::new(ErrorKind::NotFound, missing());
        // Not a directory and not a regular file (its mode when known).
        let special = |mode: Option<libc::mode_t>| {
            if workspace {
                not_regular_file()
            } else {
                special::not_regular(path, mode)
            }
        };
        let not_found = missing_error;
        let Some(beneath) = self.root.open_root_if_exists()? else {
            return Err(not_found());
        };
        let is_directory = || {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "'{}' is a directory, not a file.",
                    text::names::inline(path)
                ),
            )
        };
        let fd = match beneath.open(&resolved.rel, READ_FLAGS, 0) {
            Ok(fd) => fd,
            Err(e) => {
                return Err(match e.raw_os_error() {
                    Some(libc::ENOENT) | Some(libc::ENOTDIR) => not_found(),
                    Some(libc::ENXIO) | Some(libc::ENODEV) => special(
                        beneath
                            .open(&resolved.rel, STAT_FLAGS, 0)
                            .and_then(|f| fstat(std::os::fd::AsRawFd::as_raw_fd(&f)))
                            .ok()
                            .map(|st| st.st_mode),
                    ),
                    Some(libc::EACCES) => {
                        // Classify by a stat-only open, as `is_file()`/`is_dir()` would.
                        match beneath
                            .open(&resolved.rel, STAT_FLAGS, 0)
                            .and_then(|f| fstat(std::os::fd::AsRawFd::as_raw_fd(&f)))
                        {
                            Ok(st) if is_dir(st.st_mode) && dir_message => is_directory(),
                            Ok(st) if is_dir(st.st_mode) => not_found(),
                            Ok(st) if !is_reg(st.st_mode) => special(Some(st.st_mode)),
                            _ => self.root.os_error(&e, Some(&resolved.rel)),
                        }
                    }
                    _ => self.root.open_error(&e, path, &resolved.rel),
                });
            }
        };
        let st = fstat(std::os::fd::AsRawFd::as_raw_fd(&fd))
            .map_err(|e| self.root.os_error(&e, Some(&resolved.rel)))?;
        if is_dir(st.st_mode) {
            return Err(if dir_message {
                is_directory()
            } else {
                not_found()
            });
        }
        if !is_reg(st.st_mode) {
            return Err(special(Some(st.st_mode)));
        }
        Ok(File::from(fd))
    }

    /// `file_info`: path, type, size, and for a regular file binary, lines and hash (text
    /// only), plus `symlink_target` when the name as given is a symlink.
    ///
    /// Errors: `Path not found: p`, access errors, OS errors.
    /// Source: `file_info`, _toolset.py.
    ///
    /// Workspace contract (0.62.0): nothing at the path is the normal result `Path not found:
    /// p`, a directory shows no size, a FIFO, socket or device is [`NOT_REGULAR_FILE`].
    pub fn file_info(&self, path: &str, cancel: &CancelFlag) -> Result<Outcome> {
        let resolved = self.safe_resolve(path, false, true)?;
        match self.file_info_resolved(path, &resolved, cancel) {
            Err(e) if self.limits.contract.is_workspace() && e.kind == ErrorKind::NotFound => {
                Ok(path_not_found(self, path, &resolved))
            }
            r => r,
        }
    }

    fn file_info_resolved(
        &self,
        path: &str,
        resolved: &Resolved,
        cancel: &CancelFlag,
    ) -> Result<Outcome> {
        let workspace = self.limits.contract.is_workspace();
        let not_found = || {
            Error::new(
                ErrorKind::NotFound,
                self.with_lookalike(
                    format!("Path not found: {}", text::names::shown_path(path)),
                    resolved,
                    path,
                ),
            )
        };
        let Some(beneath) = self.root.open_root_if_exists()? else {
            return Err(not_found());
        };
        let fd = match beneath.open(&resolved.rel, STAT_FLAGS, 0) {
            Ok(fd) => fd,
            Err(e) => {
                return Err(match e.raw_os_error() {
                    Some(libc::ENOENT) | Some(libc::ENOTDIR) => not_found(),
                    _ => self.root.open_error(&e, path, &resolved.rel),
                })
            }
        };
        let st = fstat(std::os::fd::AsRawFd::as_raw_fd(&fd))
            .map_err(|e| self.root.os_error(&e, Some(&resolved.rel)))?;
        let original = self.root.cwd().join(pure_posix(path));
        let link_target = match std::fs::symlink_metadata(&original) {
            Ok(m) if m.file_type().is_symlink() => std::fs::read_link(&original).ok(),
            _ => None,
        };
        let kind = special::type_name(st.st_mode);
        if workspace && !is_dir(st.st_mode) && !is_reg(st.st_mode) {
            return Err(not_regular_file());
        }
        let mut parts = vec![
            format!("path: {}", text::names::shown_path(path)),
            format!("type: {kind}"),
        ];
        // The hash shown, for `ReadBeforeWrite` (a text file's `file_info` counts as a read).
        let mut content_hash = None;
        if !(workspace && is_dir(st.st_mode)) {
            parts.push(format!("size: {} bytes", st.st_size));
        }
        if is_reg(st.st_mode) {
            let mut file = self.open_regular(
                resolved,
                path,
                || format!("Path not found: {}", text::names::shown_path(path)),
                false,
            )?;
            let window = WindowSpec::count_only(self.limits.contract);
            let mut scan = cache::scan_file(&mut file, path, window, cancel, &self.cache)
                .map_err(|e| self.root.os_error(&e, Some(&resolved.rel)))??;
            if let Some(kind) = scan.utf16 {
                scan = self.rescan_utf16(&mut file, scan, kind, window, resolved, cancel)?;
            }
            parts.push(format!(
                "binary: {}",
                if scan.binary { "True" } else { "False" }
            ));
            if !scan.binary {
                parts.push(format!("lines: {}", scan.total_lines));
                parts.push(format!("hash: {}", scan.hash));
                content_hash = Some(scan.hash);
            }
        }
        if let Some(target) = link_target {
            parts.push(format!(
                "symlink_target: {}",
                self.root.safe_filename(target.as_os_str())
            ));
        }
        Ok(Outcome {
            text: parts.join("\n"),
            path: resolved.event_str(),
            content_hash,
            ..Default::default()
        })
    }

    /// The error for an OS error a Python override (`open_read`/`open_write`) raised: the
    /// same message as the core's own I/O gives ([`Root::os_error`]), with `filename` shown
    /// relative to the root (`<outside-workspace>` outside it), never as a host path.
    pub fn os_error_of(&self, errno: i32, filename: Option<&std::ffi::OsStr>) -> Error {
        let err = std::io::Error::from_raw_os_error(errno);
        let shown = filename.map(|f| self.root.safe_filename(f));
        self.root.os_error(&err, shown.as_deref().map(Path::new))
    }

    /// `resolve` for the Python slow path: the absolute resolved path after the checks.
    pub fn resolve_checked(&self, path: &str, write: bool, check_allowed: bool) -> Result<String> {
        let abs = self.safe_resolve(path, write, check_allowed)?.abs;
        Ok(text::names::lossless(abs.as_os_str().as_bytes()).into_owned())
    }

    /// The root-relative name of an absolute resolved path (`_relative_to_root`).
    ///
    /// Errors: `ErrorKind::Outside` when it is not inside the root.
    pub fn relative_to_root(&self, resolved: &str) -> Result<String> {
        let raw = text::names::raw_bytes(resolved);
        match self
            .root
            .rel_to_root(Path::new(std::ffi::OsStr::from_bytes(&raw)))
        {
            Some(rel) => Ok(crate::fs::root::path::rel_display(&rel)),
            None => Err(Error::new(
                ErrorKind::Outside,
                format!(
                    "Path {} resolves outside the root directory.",
                    crate::fs::text::py_repr(resolved)
                ),
            )),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    pub(crate) fn limits() -> Limits {
        Limits {
            max_read_lines: 2000,
            max_read_chars: None,
            max_list_results: 1000,
            max_search_results: 1000,
            max_find_results: 1000,
            content_hashes: true,
            contract: Contract::Document,
            big_diffs: false,
        }
    }

    pub(crate) fn protected() -> Vec<String> {
        [".git/*", ".env", ".env.*", "*.pem", "*.key", "**/secrets*"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// A FileSystem over `root` with the default limits and protected patterns, no cwd and
    /// no access patterns.
    pub(crate) fn over(root: &std::path::Path) -> FileSystem {
        FileSystem::new(
            root.to_str().unwrap(),
            None,
            &[],
            &[],
            &protected(),
            limits(),
        )
        .unwrap()
    }

    pub(crate) fn setup() -> (tempfile::TempDir, FileSystem) {
        let dir = crate::testing::link_tree();
        let fsys = over(dir.path());
        (dir, fsys)
    }

    fn result(r: Result<Outcome>) -> String {
        match r {
            Ok(o) => format!("OK {}", o.text),
            Err(e) => format!("ERR {}", e.message),
        }
    }

    #[test]
    fn read_and_info_match_reference() {
        let (_d, f) = setup();
        let c = CancelFlag::new();
        // Expected strings produced with the reference (pydantic_ai_harness 0.3.6).
        let cases = [
            ("a\0b", "ERR embedded null byte", "ERR embedded null byte"),
            ("loop", "ERR Path 'loop' resolves through a symlink loop.", "ERR Path 'loop' resolves through a symlink loop."),
            ("out", "ERR Path 'out' resolves outside the root directory.", "ERR Path 'out' resolves outside the root directory."),
            ("d", "ERR 'd' is a directory, not a file.", "OK path: d\ntype: directory\nsize: 4096 bytes"),
            ("nope", "ERR File not found: nope", "ERR Path not found: nope"),
            ("dangle", "ERR File not found: dangle", "ERR Path not found: dangle"),
            ("a.txt/x", "ERR File not found: a.txt/x", "ERR Path not found: a.txt/x"),
            (
                "lnk",
                "OK [lnk | 2 lines | hash:09834d488008]\n     1\tx\n     2\ty\n",
                "OK path: lnk\ntype: file\nsize: 4 bytes\nbinary: False\nlines: 2\nhash: 09834d488008\nsymlink_target: a.txt",
            ),
            (
                "abslnk",
                "OK [abslnk | 2 lines | hash:09834d488008]\n     1\tx\n     2\ty\n",
                "OK path: abslnk\ntype: file\nsize: 4 bytes\nbinary: False\nlines: 2\nhash: 09834d488008\nsymlink_target: a.txt",
            ),
        ];
        for (path, read, info) in cases {
            assert_eq!(
                result(f.read_file(path, 0, None, None, &c)),
                read,
                "read {path:?}"
            );
            assert_eq!(result(f.file_info(path, &c)), info, "info {path:?}");
        }
        assert_eq!(
            result(f.read_file("a.txt", -1, None, None, &c)),
            "ERR offset must be >= 0, got -1."
        );
        assert_eq!(
            result(f.read_file("a.txt", 0, Some(-1), None, &c)),
            "ERR limit must be >= 1, got -1."
        );
        assert_eq!(
            result(f.read_file("a.txt", 0, Some(0), None, &c)),
            "ERR limit must be >= 1, got 0."
        );
        assert_eq!(
            result(f.read_file("a.txt", 5, None, None, &c)),
            "ERR Offset 5 exceeds file length (2 lines)."
        );
        fs::write(f.root.real_root().join("bin"), b"a\0b").unwrap();
        assert_eq!(
            result(f.read_file("bin", 0, None, None, &c)),
            "OK [Binary file: 3 bytes. Use a binary-aware tool to inspect.]"
        );
        assert_eq!(
            result(f.file_info("bin", &c)),
            "OK path: bin\ntype: file\nsize: 3 bytes\nbinary: True"
        );
    }

    #[test]
    fn workspace_contract_reads_and_infos() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir(r.join("d")).unwrap();
        fs::write(r.join("a.txt"), "x\ny\n").unwrap();
        symlink("nothere", r.join("dangle")).unwrap();
        let fifo = std::ffi::CString::new(r.join("pipe").to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let limits = Limits {
            contract: Contract::Workspace,
            ..limits()
        };
        let f = FileSystem::new(r.to_str().unwrap(), None, &[], &[], &[], limits).unwrap();
        let c = CancelFlag::new();
        for path in ["nope", "d", "dangle", "a.txt/x"] {
            let read = f.read_file(path, 0, None, None, &c).unwrap();
            assert_eq!(
                (read.text.as_str(), read.emit),
                (
                    format!("Path not found: {}", text::names::shown_path(path)).as_str(),
                    false
                )
            );
        }
        for path in ["nope", "dangle"] {
            assert_eq!(
                result(f.file_info(path, &c)),
                format!("OK Path not found: {path}")
            );
        }
        assert_eq!(result(f.file_info("d", &c)), "OK path: d\ntype: directory");
        let special = format!("ERR {NOT_REGULAR_FILE}");
        assert_eq!(result(f.read_file("pipe", 0, None, None, &c)), special);
        assert_eq!(result(f.file_info("pipe", &c)), special);
        assert_eq!(
            f.plan_write("pipe", "x".into(), None, false, &c)
                .unwrap_err()
                .message,
            NOT_REGULAR_FILE
        );
        assert_eq!(
            f.plan_write("no/x", "x".into(), None, false, &c)
                .unwrap_err()
                .message,
            "Parent directory 'no' does not exist. Create the parent directory first."
        );
        assert_eq!(
            result(f.read_file("a.txt", -1, None, None, &c)),
            "ERR offset must be non-negative."
        );
        assert_eq!(
            result(f.read_file("a.txt", 0, Some(0), None, &c)),
            "ERR limit must be at least 1."
        );
        assert_eq!(f.find_files("**", ".", &c).unwrap().text, "a.txt\nd/\npipe");
        for bad in ["../*", "a/../b", ""] {
            assert_eq!(
                f.find_files(bad, ".", &c).unwrap_err().message,
                format!(
                    "Pattern {} is not a valid glob pattern.",
                    crate::fs::text::py_repr(bad)
                )
            );
        }
    }

    #[test]
    fn missing_root_fails_at_use() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("later");
        let f = FileSystem::new(
            root.to_str().unwrap(),
            None,
            &[],
            &[],
            &protected(),
            limits(),
        )
        .unwrap();
        let c = CancelFlag::new();
        assert_eq!(
            result(f.read_file("a.txt", 0, None, None, &c)),
            "ERR File not found: a.txt"
        );
        assert_eq!(
            result(f.file_info("a.txt", &c)),
            "ERR Path not found: a.txt"
        );
        assert_eq!(result(f.list_directory(".", &c)), "ERR Not a directory: .");
        assert_eq!(
            result(f.search_files("x", ".", None, &c)),
            "ERR Path '.' is not a file or directory."
        );
        assert_eq!(
            f.plan_write("a.txt", "x".into(), None, true, &c)
                .unwrap_err()
                .message,
            "Parent directory '.' does not exist. Use create_directory first."
        );
        fs::create_dir(&root).unwrap();
        fs::write(root.join("a.txt"), "x\n").unwrap();
        assert_eq!(
            result(f.read_file("a.txt", 0, None, None, &c)),
            "OK [a.txt | 1 lines | hash:73cb3858a687]\n     1\tx\n"
        );
    }

    #[test]
    fn cancelled_calls_stop() {
        let (_d, f) = setup();
        let c = CancelFlag::new();
        c.cancel();
        assert_eq!(
            f.read_file("a.txt", 0, None, None, &c).unwrap_err().kind,
            ErrorKind::Cancelled
        );
        assert_eq!(
            f.search_files("x", ".", None, &c).unwrap_err().kind,
            ErrorKind::Cancelled
        );
        assert_eq!(
            f.find_files("**", ".", &c).unwrap_err().kind,
            ErrorKind::Cancelled
        );
        assert_eq!(
            f.list_directory(".", &c).unwrap_err().kind,
            ErrorKind::Cancelled
        );
    }

    #[test]
    fn walkers_never_show_outside_or_denied_targets() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.txt"), "TOKEN outside\n").unwrap();
        fs::create_dir(r.join("logs")).unwrap();
        fs::write(r.join("logs/app.log"), "TOKEN denied\n").unwrap();
        fs::write(r.join("ok.txt"), "TOKEN ok\n").unwrap();
        symlink(outside.path().join("secret.txt"), r.join("escape.txt")).unwrap();
        symlink(outside.path(), r.join("escdir")).unwrap();
        symlink("logs/app.log", r.join("alias.txt")).unwrap();
        symlink(r.join("ok.txt"), r.join("abs_inside.txt")).unwrap();
        symlink("loop2", r.join("loop1")).unwrap();
        symlink("loop1", r.join("loop2")).unwrap();
        let denied = vec!["logs".to_string()];
        let f = FileSystem::new(
            r.to_str().unwrap(),
            None,
            &[],
            &denied,
            &protected(),
            limits(),
        )
        .unwrap();
        let c = CancelFlag::new();
        assert_eq!(
            f.search_files("TOKEN", ".", None, &c).unwrap().text,
            "abs_inside.txt:1:TOKEN ok\nok.txt:1:TOKEN ok"
        );
        assert_eq!(
            f.list_directory(".", &c).unwrap().text,
            "abs_inside.txt  (9 bytes)\nok.txt  (9 bytes)"
        );
        assert_eq!(
            f.find_files("**/*", ".", &c).unwrap().text,
            "abs_inside.txt\nok.txt"
        );
        assert_eq!(
            f.find_files("escdir/*", ".", &c).unwrap().text,
            "No matches found."
        );
        assert_eq!(
            f.read_file("alias.txt", 0, None, None, &c)
                .unwrap_err()
                .message,
            "Path 'logs/app.log' is denied by pattern 'logs'."
        );
        assert_eq!(
            f.read_file("escape.txt", 0, None, None, &c)
                .unwrap_err()
                .message,
            "Path 'escape.txt' resolves outside the root directory."
        );
    }

    #[test]
    fn swapped_path_is_never_followed() {
        swap_race(false);
    }

    #[test]
    fn swapped_path_is_never_followed_by_the_openat_walk() {
        swap_race(true);
    }

    /// Reads a path that another thread flips between a file and a symlink to an outside
    /// file: the outside content must never be read, and some opens must meet the symlink.
    fn swap_race(fallback: bool) {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let (d, f) = setup();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        fs::write(&secret, "OUTSIDE SECRET\n").unwrap();
        let master = d.path().join("master");
        fs::write(&master, "inside\n").unwrap();
        let target = d.path().join("swap");
        fs::hard_link(&master, &target).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, target, root) = (stop.clone(), target.clone(), d.path().to_path_buf());
            std::thread::spawn(move || {
                let (tmp_file, tmp_link) = (root.join("swap.file"), root.join("swap.link"));
                while !stop.load(Ordering::Relaxed) {
                    let _ = fs::hard_link(&master, &tmp_file);
                    let _ = fs::rename(&tmp_file, &target);
                    let _ = symlink(&secret, &tmp_link);
                    let _ = fs::rename(&tmp_link, &target);
                }
            })
        };
        let c = CancelFlag::new();
        if fallback {
            crate::fs::root::path::force_walk_fallback(true);
        }
        let (mut reads, mut refused) = (0, 0);
        let started = std::time::Instant::now();
        // Until the race was hit both ways (or 20 s on a loaded machine).
        while (reads == 0
            || refused == 0
            || started.elapsed() < std::time::Duration::from_millis(500))
            && started.elapsed() < std::time::Duration::from_secs(20)
        {
            match f.read_file("swap", 0, None, None, &c) {
                Ok(o) => {
                    assert!(
                        !o.text.contains("SECRET"),
                        "read through a swapped symlink: {}",
                        o.text
                    );
                    reads += 1;
                }
                Err(e) if e.message.contains("changed to a symlink") => refused += 1,
                Err(_) => {}
            }
            if let Ok(o) = f.file_info("swap", &c) {
                assert!(!o.text.contains("size: 15 bytes"), "{}", o.text);
            }
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        if fallback {
            crate::fs::root::path::force_walk_fallback(false);
        }
        assert!(reads > 0);
        // The race was really hit: some opens met the swapped-in symlink and refused it.
        assert!(refused > 0, "reads {reads}, refused {refused}");
    }
}
