//! The root of a FileSystem: resolving a model path from `cwd` like `os.path.realpath`,
//! containment in the real root, the names shown to the model (relative to the root or to
//! `cwd`), and race-free I/O beneath a directory descriptor of the root.
//!
//! A path is checked on its resolved form, then opened *relative to the real root* beneath
//! a descriptor of the root with symlinks refused (Linux `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)`, elsewhere a component-by-component `openat(O_NOFOLLOW)` walk). A
//! resolved path holds no symlink, so a component swapped for one between the check and the
//! I/O makes the open fail instead of being followed.

use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use crate::error::{Error, ErrorKind, Result};
use crate::fs::contract::Contract;
use crate::fs::text::names::lossless;
use crate::fs::text::{pure_posix, py_repr};

/// Shown instead of an absolute path that is not inside the root.
pub const OUTSIDE_WORKSPACE: &str = "<outside-workspace>";

/// The longest file name, in bytes, on Linux (and macOS) file systems.
pub const NAME_MAX: usize = 255;

/// Symlinks followed while resolving one path before it counts as a loop.
const MAX_SYMLINKS: usize = 255;

/// A root directory and the working directory model paths resolve from.
#[derive(Debug, Clone)]
pub struct Root {
    real_root: PathBuf,
    cwd: PathBuf,
    contract: Contract,
    /// Whether the user named the root (`root_dir` under the workspace contract): its errors
    /// then say `` root_dir `<root>` `` rather than `` the project root `<root>` ``.
    named: bool,
}

/// A path resolved like `os.path.realpath` and found inside the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Absolute resolved path.
    pub abs: PathBuf,
    /// The same path relative to the real root; empty for the root itself.
    pub rel: PathBuf,
    /// The path as written (joined to `cwd`, normalized as text) relative to the root: the
    /// name events and diffs show under the workspace contract; `rel` under the document's.
    pub written: PathBuf,
}

impl Resolved {
    /// A resolved path whose written name is its real one.
    pub fn real(abs: PathBuf, rel: PathBuf) -> Self {
        let written = rel.clone();
        Resolved { abs, rel, written }
    }

    /// The root-relative name as Python's `str(path.relative_to(root))`: `.` for the root.
    pub fn rel_str(&self) -> String {
        rel_display(&self.rel)
    }

    /// The name events and diffs carry (see `written`): `.` for the root.
    pub fn event_str(&self) -> String {
        rel_display(&self.written)
    }
}

/// `rel` as Python prints a relative `Path`: `.` when empty.
/// A name that is not UTF-8 is marked text ([`crate::fs::text::names::lossless`]).
pub fn rel_display(rel: &Path) -> String {
    if rel.as_os_str().is_empty() {
        ".".to_string()
    } else {
        lossless(rel.as_os_str().as_bytes()).into_owned()
    }
}

fn errno_of(err: &io::Error) -> i32 {
    err.raw_os_error().unwrap_or(0)
}

/// The C library's `strerror` text for `errno`, as Python's `OSError.strerror` shows it.
pub fn strerror(errno: i32) -> String {
    // SAFETY: strerror returns a pointer to a static or thread-local NUL-terminated string.
    unsafe {
        let ptr = libc::strerror(errno);
        if ptr.is_null() {
            return format!("Unknown error {errno}");
        }
        std::ffi::CStr::from_ptr(ptr).to_string_lossy().into_owned()
    }
}

fn loop_error(path: &str) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        format!("Path {} resolves through a symlink loop.", py_repr(path)),
    )
}

/// The workspace contract's loop message (0.62.0 names no path).
const LOOP_MESSAGE: &str = "The path resolves through a symlink loop.";

/// `posixpath.normpath` of an absolute path: `.` and empty components dropped, `..` applied
/// as text (never above `/`). No I/O, symlinks not followed.
pub fn lexical_normalize(path: &[u8]) -> PathBuf {
    let mut parts: Vec<&[u8]> = Vec::new();
    for name in path.split(|&b| b == b'/') {
        match name {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            _ => parts.push(name),
        }
    }
    let mut out = PathBuf::from("/");
    for part in parts {
        out.push(OsStr::from_bytes(part));
    }
    out
}

/// `The path name is too long.`: the OS refused a name (ENAMETOOLONG), or a walk met a
/// literal name longer than any file name can be ([`NAME_MAX`]).
pub(crate) fn too_long() -> Error {
    Error::new(ErrorKind::InvalidArgument, "The path name is too long.")
}

/// Absolute form of `p` as `Path.resolve()` would start it: joined to the process cwd.
fn absolute(p: &Path) -> io::Result<PathBuf> {
    if p.is_absolute() {
        Ok(p.to_path_buf())
    } else {
        Ok(std::env::current_dir()?.join(p))
    }
}

enum RealpathError {
    Loop,
}

/// `os.path.realpath(path)` (non-strict, POSIX): symlinks followed, missing components kept,
/// `..` applied to the resolved prefix. `path` must be absolute.
fn realpath(path: &Path) -> std::result::Result<PathBuf, RealpathError> {
    let mut seen: HashMap<PathBuf, Option<PathBuf>> = HashMap::new();
    let mut budget = MAX_SYMLINKS;
    join_realpath(
        PathBuf::from("/"),
        path.as_os_str().as_bytes(),
        &mut seen,
        &mut budget,
    )
}

fn join_realpath(
    mut path: PathBuf,
    rest: &[u8],
    seen: &mut HashMap<PathBuf, Option<PathBuf>>,
    budget: &mut usize,
) -> std::result::Result<PathBuf, RealpathError> {
    let rest = if rest.first() == Some(&b'/') {
        path = PathBuf::from("/");
        &rest[1..]
    } else {
        rest
    };
    for name in rest.split(|&b| b == b'/') {
        if name.is_empty() || name == b"." {
            continue;
        }
        if name == b".." {
            path.pop();
            continue;
        }
        let newpath = path.join(OsStr::from_bytes(name));
        let is_link = std::fs::symlink_metadata(&newpath)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false);
        if !is_link {
            path = newpath;
            continue;
        }
        if let Some(known) = seen.get(&newpath) {
            match known {
                Some(target) => {
                    path = target.clone();
                    continue;
                }
                None => return Err(RealpathError::Loop),
            }
        }
        if *budget == 0 {
            return Err(RealpathError::Loop);
        }
        *budget -= 1;
        seen.insert(newpath.clone(), None);
        let target = match std::fs::read_link(&newpath) {
            Ok(t) => t,
            Err(_) => {
                path = newpath;
                continue;
            }
        };
        path = join_realpath(path, target.as_os_str().as_bytes(), seen, budget)?;
        seen.insert(newpath, Some(path.clone()));
    }
    Ok(path)
}

/// `path.strip_prefix(base)`, comparing bytes first: a walked path (names joined onto a
/// base, as walks build them) is stripped without iterating components; anything else
/// (`.` or empty components where the two meet) takes `Path::strip_prefix`, so the result
/// is always the same.
pub fn strip_base<'p>(path: &'p Path, base: &Path) -> Option<&'p Path> {
    let (bytes, head) = (path.as_os_str().as_bytes(), base.as_os_str().as_bytes());
    if let Some(rest) = bytes.strip_prefix(head) {
        let rest = match rest {
            [] => Some(rest),
            [b'/', tail @ ..] if !head.is_empty() && !head.ends_with(b"/") => Some(tail),
            _ if head.ends_with(b"/") => Some(rest),
            _ => None,
        };
        if let Some(rest) = rest {
            let plain = rest.is_empty()
                || !(rest.starts_with(b"/")
                    || rest.starts_with(b"./")
                    || rest == b"."
                    || rest.ends_with(b"/")
                    || rest.ends_with(b"/."));
            if plain && !head.ends_with(b"/.") && head != b"." {
                return Some(Path::new(OsStr::from_bytes(rest)));
            }
        }
    }
    path.strip_prefix(base).ok()
}

/// Maps an OS error met on `rel` (relative to the root) to a message for the model: the one
/// mapping every path uses ([`Root::os_error`] on this host, `RemoteCore::os_error` for an error
/// a workspace backend raised). See [`Root::os_error`] for the kinds.
pub fn os_error(err: &io::Error, rel: Option<&Path>) -> Error {
    let errno = errno_of(err);
    let (kind, reason) = match errno {
        libc::ENOENT => (ErrorKind::NotFound, "No such file or directory"),
        libc::ENOTDIR => (ErrorKind::NotFound, "Not a directory"),
        libc::EISDIR => (ErrorKind::NotFound, "Is a directory"),
        libc::EACCES => (ErrorKind::Denied, "Permission denied"),
        libc::EPERM => (ErrorKind::Denied, "Operation not permitted"),
        libc::ELOOP => {
            return Error::new(
                ErrorKind::InvalidArgument,
                "The path resolves through a symlink loop.",
            )
        }
        libc::ENAMETOOLONG => return too_long(),
        libc::EILSEQ => {
            return Error::new(
                ErrorKind::InvalidArgument,
                "The path name contains a byte sequence the filesystem cannot represent.",
            )
        }
        _ => {
            // Python shows it as `[Errno N] <strerror>` (OSError(errno, strerror)).
            let mut e = Error::io(err, strerror(errno));
            if errno == 0 {
                e.message = "I/O error".to_string();
            }
            return e;
        }
    };
    let message = match rel {
        Some(rel) => format!("{reason}: {}", py_repr(&rel_display(rel))),
        None => reason.to_string(),
    };
    let mut e = Error::new(kind, message);
    e.errno = Some(errno);
    e
}

#[cfg(test)]
mod strip_base_tests {
    use super::*;

    /// The byte path agrees with `Path::strip_prefix` wherever it answers.
    #[test]
    fn strip_base_is_strip_prefix() {
        let cases = [
            ("/a/b/c", "/a/b"),
            ("/a/b", "/a/b"),
            ("/a/bc", "/a/b"),
            ("/a/b/", "/a/b"),
            ("/a/b//c", "/a/b"),
            ("/a/b/./c", "/a/b"),
            ("/a/b/c/.", "/a/b"),
            ("/a/b/c/", "/a/b"),
            ("/a/b/c", "/a/b/"),
            ("/a/b/c", "/"),
            ("/a/./b/c", "/a/./b"),
            ("/a/b/c", "/a/./b"),
            ("/a/b/../c", "/a/b"),
            ("a/b", "a"),
            ("a/b", ""),
            ("./a", "."),
            ("/x", "/a"),
        ];
        for (path, base) in cases {
            let (p, b) = (Path::new(path), Path::new(base));
            assert_eq!(strip_base(p, b), p.strip_prefix(b).ok(), "{path} - {base}");
        }
    }
}

/// `os.path.relpath(path, start)` for two absolute, normalized paths.
pub fn relpath(path: &Path, start: &Path) -> String {
    let p: Vec<Component> = path.components().collect();
    let s: Vec<Component> = start.components().collect();
    let common = p.iter().zip(s.iter()).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..s.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c.as_os_str());
    }
    if out.as_os_str().is_empty() {
        ".".to_string()
    } else {
        lossless(out.as_os_str().as_bytes()).into_owned()
    }
}

impl Root {
    /// Resolves `root_dir` (it may not exist yet) and `cwd` (default: the root).
    ///
    /// Errors: `ErrorKind::InvalidArgument` with the reference's `ValueError` text
    /// `cwd '<cwd>' is outside root_dir '<root_dir>'.` when `cwd` resolves outside the root.
    /// Source: `FileSystemToolset.__init__`, pydantic_ai_harness/filesystem/_toolset.py.
    pub fn new(root_dir: &str, cwd: Option<&str>) -> Result<Root> {
        if root_dir.contains('\0') || cwd.is_some_and(|c| c.contains('\0')) {
            return Err(Error::new(ErrorKind::InvalidArgument, "embedded null byte"));
        }
        let io_err = |e: io::Error| Error::io(&e, "The current directory is unavailable.");
        let root_abs = absolute(Path::new(root_dir)).map_err(io_err)?;
        let real_root = realpath(&root_abs).map_err(|_| loop_error(root_dir))?;
        let cwd_real = match cwd {
            None => real_root.clone(),
            Some(c) => {
                let abs = absolute(Path::new(c)).map_err(io_err)?;
                realpath(&abs).map_err(|_| loop_error(c))?
            }
        };
        if !cwd_real.starts_with(&real_root) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "cwd {} is outside root_dir {}.",
                    py_repr(&cwd_real.to_string_lossy()),
                    py_repr(&pure_posix(root_dir))
                ),
            ));
        }
        Ok(Root {
            real_root,
            cwd: cwd_real,
            contract: Contract::Document,
            named: false,
        })
    }

    /// The same root under `contract`, whose texts its errors use.
    pub fn under(mut self, contract: Contract) -> Root {
        self.contract = contract;
        self
    }

    /// The same root, `named` by the user or not: under the workspace contract its errors then
    /// name `` root_dir `<root>` `` and `` `<root>` `` where they say "the project root" and
    /// "the project" otherwise (0.62.0's texts for a given `root_dir`).
    pub fn named(mut self, named: bool) -> Root {
        self.named = named;
        self
    }

    /// The symlink-loop error for `path`, worded by the contract.
    fn loop_error(&self, path: &str) -> Error {
        if self.contract.is_workspace() {
            Error::new(ErrorKind::InvalidArgument, LOOP_MESSAGE)
        } else {
            loop_error(path)
        }
    }

    /// The containment error for `path`: `through_link` when only its real path is outside.
    ///
    /// Document: `Path 'p' resolves outside the root directory.`. Workspace (0.62.0's texts,
    /// the root shown as the absolute path it is in the workspace; a path outside the root is
    /// never shown, `<outside-workspace>` stands in for it): `` `<outside-workspace>` is outside
    /// the project root `<root>`; ... `` or `` `p` leads outside the project root `<root>`
    /// through a symlink; ... ``; with a [`Root::named`] root, `` root_dir `<root>` `` and
    /// `` inside `<root>` `` in place of "the project root" and "inside the project".
    fn outside_error(&self, path: &str, through_link: bool) -> Error {
        let message = if !self.contract.is_workspace() {
            format!(
                "Path {} resolves outside the root directory.",
                py_repr(path)
            )
        } else {
            let root = self.real_root.to_string_lossy();
            let (name, place) = if self.named {
                (format!("root_dir `{root}`"), format!("`{root}`"))
            } else {
                (
                    format!("the project root `{root}`"),
                    "the project".to_string(),
                )
            };
            let path = crate::fs::text::names::inline(path);
            if through_link {
                format!(
                    "`{path}` leads outside {name} through a symlink; the file tools only work inside it. \
                     Use a path inside {place}, or a shell tool if you have one."
                )
            } else {
                format!(
                    "`{OUTSIDE_WORKSPACE}` is outside {name}; the file tools only work inside it. \
                     Create or clone it inside {place}, or use a shell tool if you have one."
                )
            }
        };
        Error::new(ErrorKind::Outside, message)
    }

    /// The real (symlink-resolved, absolute) root.
    pub fn real_root(&self) -> &Path {
        &self.real_root
    }

    /// The resolved working directory; inside the root.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Resolves a model path from `cwd` like `os.path.realpath` and checks containment.
    ///
    /// Errors (all retryable): `embedded null byte` (NUL in the path), `Path 'p' resolves
    /// through a symlink loop.`, `The path name is too long.`, `ErrorKind::Outside` with
    /// `Path 'p' resolves outside the root directory.`.
    /// Source: `_resolve_path`, pydantic_ai_harness/filesystem/_toolset.py.
    pub fn resolve(&self, path: &str) -> Result<Resolved> {
        // A name that is not UTF-8 arrives as marked text: resolved as its bytes.
        let raw = crate::fs::text::names::raw_bytes(path);
        let bytes: &[u8] = &raw;
        if bytes.contains(&0) {
            return Err(Error::new(ErrorKind::InvalidArgument, "embedded null byte"));
        }
        let mut written_rel: Option<PathBuf> = None;
        if self.contract.is_workspace() {
            // 0.62.0 checks the path as written first (joined to the working directory and
            // normalized as text), then where its symlinks lead.
            let written = if bytes.starts_with(b"/") {
                lexical_normalize(bytes)
            } else {
                let mut joined = self.cwd.as_os_str().as_bytes().to_vec();
                joined.push(b'/');
                joined.extend_from_slice(bytes);
                lexical_normalize(&joined)
            };
            match self.rel_to_root(&written) {
                Some(rel) => written_rel = Some(rel),
                None => return Err(self.outside_error(path, false)),
            }
        }
        // `cwd` is already real: resolve a relative path from it without re-checking its
        // components (an absolute path is resolved from `/`, like `os.path.realpath`).
        let real = if bytes.starts_with(b"/") {
            realpath(Path::new(OsStr::from_bytes(bytes)))
        } else {
            let mut seen = HashMap::new();
            let mut budget = MAX_SYMLINKS;
            join_realpath(self.cwd.clone(), bytes, &mut seen, &mut budget)
        }
        .map_err(|_| self.loop_error(path))?;
        if let Err(e) = std::fs::metadata(&real) {
            match e.raw_os_error() {
                Some(libc::ELOOP) => return Err(self.loop_error(path)),
                Some(libc::ENAMETOOLONG) => return Err(too_long()),
                _ => {}
            }
        }
        match self.rel_to_root(&real) {
            Some(rel) => Ok(Resolved {
                abs: real,
                written: written_rel.unwrap_or_else(|| rel.clone()),
                rel,
            }),
            None => Err(self.outside_error(path, true)),
        }
    }

    /// Resolves an entry met while walking (already absolute) like `os.path.realpath`;
    /// `None` when it resolves outside the root or through a loop.
    pub fn resolve_entry(&self, abs: &Path) -> Option<Resolved> {
        let real = match abs.strip_prefix(&self.real_root) {
            Ok(rest) => {
                let mut seen = HashMap::new();
                let mut budget = MAX_SYMLINKS;
                join_realpath(
                    self.real_root.clone(),
                    rest.as_os_str().as_bytes(),
                    &mut seen,
                    &mut budget,
                )
            }
            Err(_) => realpath(abs),
        }
        .ok()?;
        let rel = self.rel_to_root(&real)?;
        Some(Resolved::real(real, rel))
    }

    /// `abs` relative to the real root (component-wise), or `None` when outside.
    pub fn rel_to_root(&self, abs: &Path) -> Option<PathBuf> {
        strip_base(abs, &self.real_root).map(Path::to_path_buf)
    }

    /// `os.path.relpath(abs, cwd)`: the name a walker shows, `..` components allowed; a name
    /// holding a control character or a byte that is not UTF-8 as `repr()` writes it
    /// ([`crate::fs::text::escape_name`]).
    pub fn rel_to_cwd(&self, abs: &Path) -> String {
        let shown = self.rel_to_cwd_text(abs);
        match crate::fs::text::escape_name(&shown) {
            std::borrow::Cow::Borrowed(_) => shown,
            std::borrow::Cow::Owned(escaped) => escaped,
        }
    }

    /// [`Root::rel_to_cwd`] before escaping: marked text for a name that is not UTF-8.
    pub fn rel_to_cwd_text(&self, abs: &Path) -> String {
        match strip_base(abs, &self.cwd) {
            Some(below)
                if !below.as_os_str().is_empty()
                    && !below.components().any(|c| c == Component::ParentDir) =>
            {
                lossless(below.as_os_str().as_bytes()).into_owned()
            }
            _ => relpath(abs, &self.cwd),
        }
    }

    /// The name a walker shows for `abs`, met below the walk root `walk`: relative to `cwd`,
    /// through the walk root's written name (a symlinked directory keeps the name it was
    /// reached by, as 0.62.0 shows it; under the document the written name is the real one).
    pub fn shown(&self, abs: &Path, walk: &Resolved) -> String {
        let shown = self.shown_text(abs, walk);
        match crate::fs::text::escape_name(&shown) {
            std::borrow::Cow::Borrowed(_) => shown,
            std::borrow::Cow::Owned(escaped) => escaped,
        }
    }

    /// [`Root::shown`] before escaping ([`Root::rel_to_cwd_text`]).
    pub fn shown_text(&self, abs: &Path, walk: &Resolved) -> String {
        if walk.written != walk.rel {
            if let Ok(below) = abs.strip_prefix(&walk.abs) {
                let written = self.real_root.join(&walk.written);
                return self.rel_to_cwd_text(&if below.as_os_str().is_empty() {
                    written
                } else {
                    written.join(below)
                });
            }
        }
        self.rel_to_cwd_text(abs)
    }

    /// `_model_safe_filename`: a relative name normalized as `PurePosixPath`, an absolute one
    /// relative to the root (directly or after `realpath`), else `<outside-workspace>`.
    ///
    /// Workspace contract (0.62.0): a relative name is shown as it is, an absolute one is
    /// normalized as text (no symlinks followed) before it is made relative.
    pub fn safe_filename(&self, name: &OsStr) -> String {
        let raw = name.to_string_lossy();
        if self.contract.is_workspace() {
            if !raw.starts_with('/') {
                return raw.into_owned();
            }
            return match self.rel_to_root(&lexical_normalize(name.as_bytes())) {
                Some(rel) => rel_display(&rel),
                None => OUTSIDE_WORKSPACE.to_string(),
            };
        }
        if !raw.starts_with('/') {
            return pure_posix(&raw);
        }
        let p = Path::new(name);
        if let Ok(rel) = p.strip_prefix(&self.real_root) {
            return pure_posix(&rel.to_string_lossy());
        }
        if let Ok(real) = realpath(p) {
            if let Ok(rel) = real.strip_prefix(&self.real_root) {
                return pure_posix(&rel.to_string_lossy());
            }
        }
        OUTSIDE_WORKSPACE.to_string()
    }

    /// Maps an OS error met on `rel` (relative to the root) to a message for the model.
    ///
    /// ENOENT, ENOTDIR, EISDIR, EACCES, EPERM: retryable `<reason>: '<rel>'` (0.36.0's
    /// `[Errno N] <strerror>: '<rel>'` without the raw errno, its reason in fixed words);
    /// ELOOP, ENAMETOOLONG, EILSEQ: retryable, path-free reason (0.36.0's texts); anything
    /// else `ErrorKind::Io` with a path-free message, which aborts the run as in 0.36.0.
    /// Source: `_recoverable`, `_sanitize_recoverable_error`, _toolset.py.
    pub fn os_error(&self, err: &io::Error, rel: Option<&Path>) -> Error {
        os_error(err, rel)
    }

    /// Like [`Root::os_error`], but a symlink met by the beneath-open (ELOOP, EXDEV) means
    /// the resolved path was swapped meanwhile: a retryable `Path 'p' changed ...` error.
    pub fn open_error(&self, err: &io::Error, path: &str, rel: &Path) -> Error {
        match errno_of(err) {
            libc::ELOOP | libc::EXDEV => Error::new(
                ErrorKind::Conflict,
                format!(
                    "Path {} changed to a symlink while it was opened. Retry.",
                    py_repr(path)
                ),
            ),
            _ => self.os_error(err, Some(rel)),
        }
    }

    /// A descriptor of the real root, or `Ok(None)` when the root does not exist (yet).
    pub fn open_root_if_exists(&self) -> Result<Option<Beneath>> {
        match self.open_root() {
            Ok(b) => Ok(Some(b)),
            Err(e) if matches!(e.errno, Some(libc::ENOENT) | Some(libc::ENOTDIR)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A descriptor of the real root, creating the root and its missing parents first when
    /// it does not exist yet; `true` when this call created it. For `create_directory`, which
    /// creates a missing root as the reference's `mkdir(parents=True)` on the resolved path does.
    ///
    /// Errors: the root's path holds a non-directory (`Path 'p' has a parent that is not a
    /// directory.`, retryable), or another OS error mapped by [`Root::os_error`].
    pub fn create_root(&self, path: &str) -> Result<(Beneath, bool)> {
        if let Some(beneath) = self.open_root_if_exists()? {
            return Ok((beneath, false));
        }
        match std::fs::create_dir_all(&self.real_root) {
            Ok(()) => Ok((self.open_root()?, true)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR) | Some(libc::EEXIST)) => {
                Err(Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "Path {} has a parent that is not a directory.",
                        py_repr(path)
                    ),
                ))
            }
            Err(e) => Err(self.os_error(&e, Some(Path::new("")))),
        }
    }

    /// A descriptor of the real root to open paths beneath.
    ///
    /// Errors: a retryable NotFound when the root does not exist (yet).
    pub fn open_root(&self) -> Result<Beneath> {
        let c = cstr(self.real_root.as_os_str())?;
        // SAFETY: c is a valid NUL-terminated path.
        let fd = unsafe { libc::open(c.as_ptr(), DIR_FLAGS | libc::O_CLOEXEC) };
        if fd < 0 {
            let err = io::Error::last_os_error();
            return Err(self.os_error(&err, Some(Path::new(""))));
        }
        // SAFETY: fd was just opened and is owned here.
        Ok(Beneath {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }
}

fn cstr(s: &OsStr) -> Result<CString> {
    CString::new(s.as_bytes())
        .map_err(|_| Error::new(ErrorKind::InvalidArgument, "embedded null byte"))
}

#[cfg(target_os = "linux")]
const DIR_FLAGS: libc::c_int = libc::O_PATH | libc::O_DIRECTORY;
#[cfg(not(target_os = "linux"))]
const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY;

/// `openat2` availability: 0 unknown, 1 available, 2 missing (ENOSYS).
static OPENAT2: AtomicU8 = AtomicU8::new(0);

/// Forces (or stops forcing) the portable `openat` walk, as on a kernel without `openat2`.
#[cfg(test)]
pub(crate) fn force_walk_fallback(on: bool) {
    OPENAT2.store(if on { 2 } else { 0 }, Ordering::Relaxed);
}

/// A directory descriptor that paths are opened beneath, symlinks refused.
#[derive(Debug)]
pub struct Beneath {
    fd: OwnedFd,
}

impl Beneath {
    /// The raw descriptor of the directory.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Opens `rel` (a resolved, symlink-free path relative to this directory; empty means
    /// the directory itself) with `flags` (`O_CLOEXEC` is added) and `mode` for `O_CREAT`.
    ///
    /// Any symlink on the way, or `..`, fails (ELOOP / EXDEV) instead of being followed.
    pub fn open(&self, rel: &Path, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
        let rel_bytes = rel.as_os_str().as_bytes();
        let rel_bytes: &[u8] = if rel_bytes.is_empty() {
            b"."
        } else {
            rel_bytes
        };
        #[cfg(target_os = "linux")]
        {
            if OPENAT2.load(Ordering::Relaxed) != 2 {
                match openat2_beneath(self.raw(), rel_bytes, flags, mode) {
                    Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
                        OPENAT2.store(2, Ordering::Relaxed)
                    }
                    // Some seccomp profiles refuse unknown syscalls with EPERM: if the
                    // portable walk opens the path, openat2 is what was refused.
                    Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                        let walked = self.open_walk(rel_bytes, flags, mode);
                        if walked.is_ok() {
                            OPENAT2.store(2, Ordering::Relaxed);
                        }
                        return walked;
                    }
                    r => {
                        if OPENAT2.load(Ordering::Relaxed) == 0 {
                            OPENAT2.store(1, Ordering::Relaxed);
                        }
                        return r;
                    }
                }
            }
        }
        self.open_walk(rel_bytes, flags, mode)
    }

    /// The portable fallback: each directory component opened with `O_NOFOLLOW`.
    pub fn open_walk(
        &self,
        rel: &[u8],
        flags: libc::c_int,
        mode: libc::mode_t,
    ) -> io::Result<OwnedFd> {
        let parts: Vec<&[u8]> = rel
            .split(|&b| b == b'/')
            .filter(|p| !p.is_empty() && *p != b".")
            .collect();
        if parts.iter().any(|p| *p == b"..") {
            return Err(io::Error::from_raw_os_error(libc::EXDEV));
        }
        let Some((last, dirs)) = parts.split_last() else {
            return openat(self.raw(), b".", flags, mode);
        };
        let mut cur: Option<OwnedFd> = None;
        for d in dirs {
            let base = cur.as_ref().map_or(self.raw(), |f| f.as_raw_fd());
            cur = Some(openat(base, d, DIR_FLAGS | libc::O_NOFOLLOW, 0)?);
        }
        let base = cur.as_ref().map_or(self.raw(), |f| f.as_raw_fd());
        let fd = openat(base, last, flags | libc::O_NOFOLLOW, mode)?;
        #[cfg(target_os = "linux")]
        if flags & libc::O_PATH != 0 {
            // O_PATH | O_NOFOLLOW opens a symlink itself; refuse it like openat2 does.
            let st = fstat(fd.as_raw_fd())?;
            if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
                return Err(io::Error::from_raw_os_error(libc::ELOOP));
            }
        }
        Ok(fd)
    }

    /// Creates the directory `rel` and its missing parents beneath this directory, walking
    /// component by component with `O_NOFOLLOW`. Returns whether the last component was
    /// created by this call.
    ///
    /// Errors: EEXIST when the last component exists and is not a directory (a symlink
    /// included), ENOTDIR when a parent is not (a file or a symlink put there meanwhile), and
    /// any other OS error.
    pub fn mkdir_all(&self, rel: &Path) -> io::Result<bool> {
        let parts: Vec<&[u8]> = rel
            .as_os_str()
            .as_bytes()
            .split(|&b| b == b'/')
            .filter(|p| !p.is_empty() && *p != b".")
            .collect();
        let mut cur: Option<OwnedFd> = None;
        let mut created = false;
        let last = parts.len().saturating_sub(1);
        for (index, part) in parts.into_iter().enumerate() {
            if part == b".." {
                return Err(io::Error::from_raw_os_error(libc::EXDEV));
            }
            let base = cur.as_ref().map_or(self.raw(), |f| f.as_raw_fd());
            let name =
                CString::new(part).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
            // SAFETY: base is a valid descriptor and name a NUL-terminated name.
            let rc = unsafe { libc::mkdirat(base, name.as_ptr(), 0o777) };
            created = if rc == 0 {
                true
            } else {
                let err = io::Error::last_os_error();
                if err.raw_os_error() != Some(libc::EEXIST) {
                    return Err(err);
                }
                false
            };
            match openat(base, part, DIR_FLAGS | libc::O_NOFOLLOW, 0) {
                Ok(fd) => cur = Some(fd),
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR) | Some(libc::ELOOP)) => {
                    // The path itself is not a directory (EEXIST), or one of its parents is not (ENOTDIR).
                    let errno = if index == last {
                        libc::EEXIST
                    } else {
                        libc::ENOTDIR
                    };
                    return Err(io::Error::from_raw_os_error(errno));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(created)
    }
}

fn openat(
    dirfd: RawFd,
    name: &[u8],
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let c = CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    loop {
        // SAFETY: dirfd is valid, c is NUL-terminated.
        let fd = unsafe {
            libc::openat(
                dirfd,
                c.as_ptr(),
                flags | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        };
        if fd >= 0 {
            // SAFETY: fd was just opened and is owned here.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

#[cfg(target_os = "linux")]
fn openat2_beneath(
    dirfd: RawFd,
    rel: &[u8],
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    let c = CString::new(rel).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let creating = flags & (libc::O_CREAT | libc::O_TMPFILE) != 0;
    // SAFETY: open_how is a plain C struct; zeroed is a valid starting value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.mode = if creating { mode as u64 } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    loop {
        // SAFETY: arguments follow the openat2(2) ABI; how outlives the call.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dirfd,
                c.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            // SAFETY: the kernel returned a new descriptor we own.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) | Some(libc::EAGAIN) => continue,
            _ => return Err(err),
        }
    }
}

/// `fstat(fd)`.
pub fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: st is written by fstat before it is read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: the entry `name` of the directory `dir` itself,
/// never a symlink's target (an entry swapped for a symlink since it was listed is not stat'ed
/// through); `None` when it cannot be stat'ed.
pub fn lstat_at(dir: RawFd, name: &OsStr) -> Option<libc::stat> {
    let c = CString::new(name.as_bytes()).ok()?;
    // SAFETY: st is written by fstatat before it is read; c is a valid C string.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::fstatat(dir, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    (rc == 0).then_some(st)
}

/// Whether a `st_mode` is a regular file.
pub fn is_reg(mode: libc::mode_t) -> bool {
    mode & libc::S_IFMT == libc::S_IFREG
}

/// Whether a `st_mode` is a directory.
pub fn is_dir(mode: libc::mode_t) -> bool {
    mode & libc::S_IFMT == libc::S_IFDIR
}

/// Reads the whole of `rel` as raw bytes of a symlink target (for `file_info`).
pub fn read_link(path: &Path) -> Option<OsString> {
    std::fs::read_link(path)
        .ok()
        .map(|p| OsString::from_vec(p.into_os_string().into_vec()))
}

/// The flags a read opens with: read-only, non-blocking (a FIFO never stalls).
pub const READ_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_NONBLOCK;

/// The flags a stat-only open uses.
#[cfg(target_os = "linux")]
pub const STAT_FLAGS: libc::c_int = libc::O_PATH;
/// The flags a stat-only open uses.
#[cfg(not(target_os = "linux"))]
pub const STAT_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_NONBLOCK;

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, Root) {
        let dir = crate::testing::link_tree();
        let r = dir.path();
        symlink("d/sub", r.join("sublink")).unwrap();
        let root = Root::new(r.to_str().unwrap(), None).unwrap();
        (dir, root)
    }

    #[test]
    fn os_errors_read_without_raw_errno_or_host_path() {
        let (_d, root) = tree();
        let rel = Path::new("d/secret.txt");
        let text = |errno: i32| {
            let e = root.os_error(&io::Error::from_raw_os_error(errno), Some(rel));
            (e.kind.is_retryable(), e.message, e.errno)
        };
        // What the model can fix is a retry naming the path as written, with the errno.
        for (errno, message) in [
            (libc::EACCES, "Permission denied: 'd/secret.txt'"),
            (libc::EPERM, "Operation not permitted: 'd/secret.txt'"),
            (libc::ENOENT, "No such file or directory: 'd/secret.txt'"),
            (libc::ENOTDIR, "Not a directory: 'd/secret.txt'"),
            (libc::EISDIR, "Is a directory: 'd/secret.txt'"),
        ] {
            assert_eq!(text(errno), (true, message.to_string(), Some(errno)));
        }
        assert_eq!(text(libc::ENAMETOOLONG).1, "The path name is too long.");
        assert_eq!(
            text(libc::ELOOP).1,
            "The path resolves through a symlink loop."
        );
        // What the model cannot fix aborts the run: an OSError with the errno, no path.
        for errno in [libc::ENOSPC, libc::EROFS] {
            assert_eq!(text(errno), (false, strerror(errno), Some(errno)));
        }
    }

    #[test]
    fn resolves_like_realpath() {
        let (_d, root) = tree();
        let cases = [
            ("a.txt", Some("a.txt")),
            ("./d/../a.txt", Some("a.txt")),
            ("lnk", Some("a.txt")),
            ("abslnk", Some("a.txt")),
            ("dangle", Some("nothere")),
            ("sublink/..", Some("d")),
            ("missing/../a.txt", Some("a.txt")),
            ("", Some(".")),
            ("out", None),
            ("../x", None),
            ("/etc", None),
        ];
        for (input, expected) in cases {
            let got = root.resolve(input).ok().map(|r| r.rel_str());
            assert_eq!(got.as_deref(), expected, "{input}");
        }
        let abs = root.real_root().join("a.txt");
        assert_eq!(
            root.resolve(abs.to_str().unwrap()).unwrap().rel_str(),
            "a.txt"
        );
    }

    #[test]
    fn errors_have_reference_text() {
        let (_d, root) = tree();
        assert_eq!(
            root.resolve("loop").unwrap_err().message,
            "Path 'loop' resolves through a symlink loop."
        );
        assert_eq!(
            root.resolve("out").unwrap_err().message,
            "Path 'out' resolves outside the root directory."
        );
        assert_eq!(
            root.resolve("a\0b").unwrap_err().message,
            "embedded null byte"
        );
        assert_eq!(
            root.resolve(&"x".repeat(300)).unwrap_err().message,
            "The path name is too long."
        );
        assert!(root.resolve("out").unwrap_err().kind.is_retryable());
    }

    #[test]
    fn cwd_outside_root_is_rejected() {
        let (d, _root) = tree();
        let err = Root::new(d.path().join("d").to_str().unwrap(), Some("/tmp")).unwrap_err();
        assert!(
            err.message.starts_with("cwd '/tmp' is outside root_dir '"),
            "{}",
            err.message
        );
        let root = Root::new(
            d.path().to_str().unwrap(),
            Some(d.path().join("d").to_str().unwrap()),
        )
        .unwrap();
        assert_eq!(root.resolve("../a.txt").unwrap().rel_str(), "a.txt");
        assert_eq!(root.rel_to_cwd(&root.real_root().join("a.txt")), "../a.txt");
        assert_eq!(root.rel_to_cwd(&root.real_root().join("d/sub/x")), "sub/x");
        assert_eq!(root.rel_to_cwd(&root.real_root().join("d")), ".");
    }

    #[test]
    fn safe_filenames() {
        let (_d, root) = tree();
        assert_eq!(root.safe_filename(OsStr::new("a/./b/")), "a/b");
        assert_eq!(
            root.safe_filename(root.real_root().join("x/y").as_os_str()),
            "x/y"
        );
        assert_eq!(
            root.safe_filename(OsStr::new("/etc/passwd")),
            OUTSIDE_WORKSPACE
        );
    }

    #[test]
    fn workspace_contract_texts() {
        let (d, root) = tree();
        let root = root.under(Contract::Workspace);
        let real = root.real_root().to_string_lossy().into_owned();
        assert_eq!(
            root.resolve("../x").unwrap_err().message,
            format!(
                "`<outside-workspace>` is outside the project root `{real}`; the file tools only work inside \
                 it. Create or clone it inside the project, or use a shell tool if you have one."
            )
        );
        assert_eq!(
            root.resolve("out").unwrap_err().message,
            format!(
                "`out` leads outside the project root `{real}` through a symlink; the file tools only work \
                 inside it. Use a path inside the project, or a shell tool if you have one."
            )
        );
        assert_eq!(
            root.resolve("loop").unwrap_err().message,
            "The path resolves through a symlink loop."
        );
        let named = root.clone().named(true);
        assert_eq!(
            named.resolve("../x").unwrap_err().message,
            format!(
                "`<outside-workspace>` is outside root_dir `{real}`; the file tools only work inside it. \
                 Create or clone it inside `{real}`, or use a shell tool if you have one."
            )
        );
        assert_eq!(
            named.resolve("out").unwrap_err().message,
            format!(
                "`out` leads outside root_dir `{real}` through a symlink; the file tools only work inside \
                 it. Use a path inside `{real}`, or a shell tool if you have one."
            )
        );
        // The name as written is kept for events; the real one for I/O and patterns.
        let linked = root.resolve("sublink/x").unwrap();
        assert_eq!(
            (linked.rel_str(), linked.event_str()),
            ("d/sub/x".to_string(), "sublink/x".to_string())
        );
        let listed = root.resolve("sublink").unwrap();
        assert_eq!(root.shown(&listed.abs.join("y"), &listed), "sublink/y");
        assert_eq!(root.safe_filename(OsStr::new("./a.txt")), "./a.txt");
        assert_eq!(
            root.safe_filename(d.path().join("d/../a.txt").as_os_str()),
            "a.txt"
        );
        assert_eq!(
            lexical_normalize(b"/a/./b/../../..//c"),
            PathBuf::from("/c")
        );
    }

    #[test]
    fn beneath_refuses_symlinks() {
        let (_d, root) = tree();
        let b = root.open_root().unwrap();
        assert!(b.open(Path::new("a.txt"), READ_FLAGS, 0).is_ok());
        for p in ["lnk", "out", "sublink/x", "../etc"] {
            assert!(b.open(Path::new(p), READ_FLAGS, 0).is_err(), "{p}");
            assert!(b.open_walk(p.as_bytes(), READ_FLAGS, 0).is_err(), "{p}");
        }
        assert!(b.open_walk(b"d/sub", STAT_FLAGS, 0).is_ok());
        assert!(b.mkdir_all(Path::new("d/new/deeper")).unwrap());
        assert!(!b.mkdir_all(Path::new("d/new")).unwrap());
        assert!(b.mkdir_all(Path::new("sublink/x")).is_err());
        // A parent that is not a directory is ENOTDIR; the path itself EEXIST (the texts differ).
        let errno = |p: &str| b.mkdir_all(Path::new(p)).unwrap_err().raw_os_error();
        assert_eq!(errno("a.txt/x"), Some(libc::ENOTDIR));
        assert_eq!(errno("a.txt/x/y"), Some(libc::ENOTDIR));
        assert_eq!(errno("a.txt"), Some(libc::EEXIST));
    }
}
