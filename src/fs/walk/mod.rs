//! Walking the tree for `list_directory`, `find_files` and `search_files`: the dot rule
//! (an entry with any root-relative component starting with `.` is skipped, so hidden
//! directories are never entered), resolution of each entry like `realpath` with
//! containment and read access checked on the target, output sorted component-wise like
//! Python's `sorted(Path)`, and the caps with their exact markers.
//!
//! `find_files` reproduces Python 3.11 `pathlib.Path.glob`: `*`/`?`/`[...]` within one
//! component, `**` for any number of real (non-symlink) directories including none, a
//! trailing `**` yielding directories, and symlinked directories entered only through a
//! named or wildcard component. It walks depth-first with sorted children, which is the
//! sorted order itself, so a capped search stops as soon as one entry past the cap is found.
//! A walk still going after a short budget (a big tree) starts over on every core and is
//! sorted at the end (`find_parallel`).

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::cancel::CancelFlag;
use crate::error::{Error, ErrorKind, Result};
use crate::fs::root::access::Fnmatch;
use crate::fs::root::braces;
use crate::fs::root::path::{fstat, is_dir, lstat_at, too_long, Resolved, NAME_MAX};
use crate::fs::text::py_repr;
use crate::fs::unreadable::Unreadable;
use crate::fs::{FileSystem, Outcome};

mod collected;
mod find_parallel;
mod ignoring;
mod map_parallel;
pub(crate) mod named;
pub mod pool;
mod sorted;

pub use collected::Collected;
pub use find_parallel::SORTED_BUDGET;
pub use map_parallel::Met;

/// The type of a directory entry as `readdir` reports it (symlinks not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// Anything else (FIFO, socket, device).
    Other,
}

/// One entry of a directory listing.
#[derive(Debug, Clone)]
pub struct DirEntry {
    /// The entry's name.
    pub name: OsString,
    /// Its type, symlinks not followed.
    pub kind: Kind,
}

fn kind_of_mode(mode: libc::mode_t) -> Kind {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFREG => Kind::File,
        libc::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    }
}

/// Lists the directory open at `fd` (consumed), without `.` and `..`, unsorted.
pub fn list_fd(fd: OwnedFd) -> std::io::Result<Vec<DirEntry>> {
    let raw = fd.into_raw_fd();
    // SAFETY: raw is an open directory descriptor; fdopendir takes ownership of it.
    let dir = unsafe { libc::fdopendir(raw) };
    if dir.is_null() {
        let err = std::io::Error::last_os_error();
        // SAFETY: fdopendir failed, so raw is still ours to close.
        unsafe { libc::close(raw) };
        return Err(err);
    }
    let mut out = Vec::new();
    loop {
        // SAFETY: dir is a valid DIR*; readdir's result is valid until the next call.
        let ent = unsafe { libc::readdir(dir) };
        if ent.is_null() {
            break;
        }
        // SAFETY: d_name is NUL-terminated.
        let name = unsafe { std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()) };
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        // SAFETY: ent is valid (see above).
        let d_type = unsafe { (*ent).d_type };
        let kind = match d_type {
            libc::DT_DIR => Some(Kind::Dir),
            libc::DT_REG => Some(Kind::File),
            libc::DT_LNK => Some(Kind::Symlink),
            libc::DT_UNKNOWN => None,
            _ => Some(Kind::Other),
        };
        let kind = match kind {
            Some(k) => k,
            None => {
                // SAFETY: st is written by fstatat before it is read.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                let rc = unsafe {
                    libc::fstatat(
                        libc::dirfd(dir),
                        name.as_ptr(),
                        &mut st,
                        libc::AT_SYMLINK_NOFOLLOW,
                    )
                };
                if rc != 0 {
                    continue;
                }
                kind_of_mode(st.st_mode)
            }
        };
        out.push(DirEntry {
            name: OsStr::from_bytes(bytes).to_os_string(),
            kind,
        });
    }
    // SAFETY: dir came from fdopendir and is closed once.
    unsafe { libc::closedir(dir) };
    Ok(out)
}

/// Lists `path` by name (following a symlink at `path`), unsorted.
fn list_path(path: &Path) -> std::io::Result<Vec<DirEntry>> {
    let rd = std::fs::read_dir(path)?;
    Ok(rd
        .filter_map(|e| {
            let e = e.ok()?;
            let ft = e.file_type().ok()?;
            let kind = if ft.is_dir() {
                Kind::Dir
            } else if ft.is_file() {
                Kind::File
            } else if ft.is_symlink() {
                Kind::Symlink
            } else {
                Kind::Other
            };
            Some(DirEntry {
                name: e.file_name(),
                kind,
            })
        })
        .collect())
}

fn is_hidden(name: &OsStr) -> bool {
    name.as_bytes().first() == Some(&b'.')
}

/// Whether a workspace-contract walk includes hidden entries because the caller's glob names
/// one: a component starting with `.` (`.*`, `.github/*`). Source: `_explicit_hidden` (0.62.0).
pub fn names_hidden(glob: &str) -> bool {
    glob.split('/').any(|part| part.starts_with('.'))
}

/// The notice 0.62.0 ends a listing or walker search with when it skipped hidden entries.
/// Source: `_with_walk_notice`, `_list_directory`, _toolset.py (0.62.0).
pub fn hidden_notice(count: usize) -> String {
    format!("[{count} hidden entries omitted; name a hidden path explicitly to include it]")
}

impl Outcome {
    /// Ends the result with [`hidden_notice`] when `count` hidden entries were skipped; an empty
    /// result (`No matches found.` and the like) becomes the notice alone, as in 0.62.0.
    pub fn with_hidden(mut self, count: usize) -> Self {
        if count > 0 {
            if self.count == 0 && !self.truncated {
                self.text = hidden_notice(count);
            } else {
                self.text.push('\n');
                self.text.push_str(&hidden_notice(count));
            }
        }
        self
    }
}

fn not_a_directory(path: &str) -> Error {
    let path = &*crate::fs::text::names::shown_path(path);
    Error::new(ErrorKind::NotFound, format!("Not a directory: {path}"))
}

/// Fails with `EACCES` when the open directory `dir` may be read but not searched (mode
/// `0644`, say): its names can be listed, but nothing in it can be opened or `stat`ed, so a
/// listing or search of it would answer as though it were empty (issue 19). Looking up `.`
/// in it takes the search permission the kernel checks.
pub(crate) fn check_searchable(dir: &OwnedFd) -> std::io::Result<()> {
    // SAFETY: a valid descriptor and a NUL-terminated name; the result is closed at once.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c".".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned here.
    unsafe { libc::close(fd) };
    Ok(())
}

impl FileSystem {
    /// A walker's root directory, refused as `Permission denied: 'p'` when it may be read but
    /// not searched ([`check_searchable`]); both references refuse it too.
    pub(crate) fn searchable_root(&self, path: &str, resolved: &Resolved) -> Result<()> {
        let Some(beneath) = self.root.open_root_if_exists()? else {
            return Ok(());
        };
        let fd = beneath
            .open(&resolved.rel, libc::O_RDONLY | libc::O_DIRECTORY, 0)
            .map_err(|e| self.root.open_error(&e, path, &resolved.rel))?;
        check_searchable(&fd).map_err(|e| self.root.os_error(&e, Some(&resolved.rel)))
    }

    /// `_resolve_walk_entry`: the target of a walked entry if it resolves inside the root
    /// and is readable. `is_real`: the entry path holds no symlink (no realpath needed).
    pub(crate) fn walk_target(&self, abs: &Path, is_real: bool) -> Option<Resolved> {
        let resolved = if is_real {
            let rel = self.root.rel_to_root(abs)?;
            Resolved::real(abs.to_path_buf(), rel)
        } else {
            self.root.resolve_entry(abs)?
        };
        (self.access.is_unrestricted() || self.access.is_readable(&resolved.rel_str()))
            .then_some(resolved)
    }

    /// Resolves a walker's root: containment and denied patterns, not allowed patterns.
    pub(crate) fn walk_root(&self, path: &str) -> Result<(Resolved, Option<libc::stat>)> {
        let resolved = self.safe_resolve(path, false, false)?;
        let st = match self.root.open_root_if_exists()? {
            Some(beneath) => {
                match beneath.open(&resolved.rel, crate::fs::root::path::STAT_FLAGS, 0) {
                    Ok(fd) => fstat(fd.as_raw_fd()).ok(),
                    Err(_) => None,
                }
            }
            None => None,
        };
        Ok((resolved, st))
    }

    /// `path` as the model wrote it, relative to `cwd` and normalized lexically (`..` taken
    /// against the components before it, symlinks not followed): `posixpath.relpath` of the
    /// workspace's textual resolution.
    pub(crate) fn named_path(&self, path: &str) -> String {
        self.root.rel_to_cwd(&self.lexical(path))
    }

    /// `path` made absolute from `cwd` and normalized lexically (symlinks not followed).
    fn lexical(&self, path: &str) -> std::path::PathBuf {
        let mut abs = std::path::PathBuf::from("/");
        let base = if path.starts_with('/') {
            Path::new("/")
        } else {
            self.root.cwd()
        };
        let raw = crate::fs::text::names::raw_bytes(path);
        for part in base.join(OsStr::from_bytes(&raw)).components() {
            match part {
                std::path::Component::ParentDir => {
                    abs.pop();
                }
                std::path::Component::Normal(name) => abs.push(name),
                _ => {}
            }
        }
        abs
    }

    /// `list_directory`: the entries of one directory, sorted by name, as `rel/` for
    /// directories and `rel  (N bytes)` for files (paths relative to `cwd`), capped at
    /// `max_list_results` with `[... truncated at N entries]`.
    ///
    /// Errors: `Not a directory: p`, access errors. Source: `_list_directory`, _toolset.py.
    pub fn list_directory(&self, path: &str, cancel: &CancelFlag) -> Result<Outcome> {
        let (resolved, st) = self.walk_root(path)?;
        if !st.is_some_and(|s| is_dir(s.st_mode)) {
            return Err(not_a_directory(path));
        }
        let beneath = self.root.open_root()?;
        let fd = beneath
            .open(&resolved.rel, libc::O_RDONLY | libc::O_DIRECTORY, 0)
            .map_err(|e| self.root.open_error(&e, path, &resolved.rel))?;
        check_searchable(&fd).map_err(|e| self.root.os_error(&e, Some(&resolved.rel)))?;
        let dir_fd = fd
            .try_clone()
            .map_err(|e| self.root.os_error(&e, Some(&resolved.rel)))?;
        let mut entries = list_fd(fd).map_err(|e| self.root.os_error(&e, Some(&resolved.rel)))?;
        entries.sort_unstable_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        let workspace = self.limits.contract.is_workspace();
        // The listed directory was named explicitly, so only its own hidden entries are left
        // out (and counted, workspace). The document's reference answers a hidden directory
        // with `(empty directory)`; ours lists it (issue 9).
        // Entry names relative to cwd: the directory's own relpath joined with the name,
        // except for an entry that is cwd or one of its ancestors.
        // Unescaped: an entry's whole name is escaped at once when it needs it.
        let dir_rel = self.root.shown_text(&resolved.abs, &resolved);
        let odd_dir = matches!(
            crate::fs::text::escape_name(&dir_rel),
            std::borrow::Cow::Owned(_)
        );
        let cwd_child = self
            .root
            .cwd()
            .strip_prefix(&resolved.abs)
            .ok()
            .and_then(|r| r.components().next());
        let plain = self.access.is_unrestricted();
        let max = self.limits.max_list_results;
        let mut count = 0;
        let mut truncated = false;
        let listed = entries.len();
        let entries: Vec<DirEntry> = if workspace {
            entries
        } else {
            entries
                .into_iter()
                .filter(|e| !is_hidden(&e.name))
                .collect()
        };
        let mut hidden = listed - entries.len();
        // Sizes of the regular entries that can be shown, fetched in parallel up front.
        let wanted = entries.len().min(max.saturating_add(65));
        let sizes = prefetch_stats(&dir_fd, &entries[..wanted]);
        let mut text = String::new();
        let mut linked: Option<(bool, u64)> = None;
        let prefix = if dir_rel == "." {
            String::new()
        } else {
            format!("{dir_rel}/")
        };
        for (index, entry) in entries.iter().enumerate() {
            if index % 1024 == 0 {
                cancel.check()?;
            }
            if workspace && is_hidden(&entry.name) {
                hidden += 1;
                continue;
            }
            let on_cwd_path = cwd_child.is_some_and(|c| c.as_os_str() == entry.name);
            let abs = (!plain || entry.kind == Kind::Symlink || on_cwd_path)
                .then(|| resolved.abs.join(&entry.name));
            let target = match &abs {
                Some(abs) if !plain || entry.kind == Kind::Symlink => {
                    match self.walk_target(abs, entry.kind != Kind::Symlink) {
                        Some(t) => Some(t),
                        None if workspace && entry.kind == Kind::Symlink => {
                            // 0.62.0 lists a link leading outside by its own name, with its
                            // target's type and size (never its content).
                            match self.listed_link(abs) {
                                Some(st) => {
                                    linked = Some(st);
                                    None
                                }
                                None => continue,
                            }
                        }
                        None => continue,
                    }
                }
                _ => None,
            };
            // The target's type and size, symlinks followed; a dangling one is skipped.
            let st = match (entry.kind, &target) {
                _ if linked.is_some() => linked.take(),
                (Kind::Symlink, Some(target)) => {
                    stat_beneath(&beneath, target).map(|s| (is_dir(s.st_mode), s.st_size as u64))
                }
                (Kind::Dir, _) => Some((true, 0)),
                _ => match sizes.get(index) {
                    Some(known) => *known,
                    None => lstat_at(dir_fd.as_raw_fd(), &entry.name)
                        .map(|s| (is_dir(s.st_mode), s.st_size as u64)),
                },
            };
            let Some((dir, size)) = st else { continue };
            if !text.is_empty() {
                text.push('\n');
            }
            if count >= max {
                text.push_str(&format!("[... truncated at {max} entries]"));
                truncated = true;
                break;
            }
            match (&abs, on_cwd_path) {
                (Some(abs), true) => text.push_str(&self.root.shown(abs, &resolved)),
                _ => {
                    let name = crate::fs::text::names::lossless(entry.name.as_bytes());
                    let odd = odd_dir
                        || matches!(
                            crate::fs::text::escape_name(&name),
                            std::borrow::Cow::Owned(_)
                        );
                    if odd {
                        // The directory and the name as one escaped name.
                        let whole = format!("{prefix}{name}");
                        text.push_str(&crate::fs::text::escape_name(&whole));
                    } else {
                        text.push_str(&prefix);
                        text.push_str(&name);
                    }
                }
            }
            if dir {
                text.push('/');
            } else {
                text.push_str("  (");
                text.push_str(&size.to_string());
                text.push_str(" bytes)");
            }
            count += 1;
        }
        if text.is_empty() {
            text.push_str("(empty directory)");
        }
        let outcome = Outcome {
            text,
            path: resolved.event_str(),
            count,
            truncated,
            emit: true,
            ..Default::default()
        };
        Ok(self.skipped_hidden(outcome, hidden))
    }

    /// Workspace contract: the type and size a symlink that leads outside the root (or to a
    /// path the patterns refuse) is listed with, when its own name is readable and its target
    /// exists; `None` to leave it out. Only `stat` follows the link; nothing is read.
    fn listed_link(&self, abs: &Path) -> Option<(bool, u64)> {
        let rel = abs.strip_prefix(self.root.real_root()).ok()?;
        // Only the last hop may lead outside: nothing below a linked directory outside is
        // listed (0.62.0's walk does not enter one).
        self.root.resolve_entry(abs.parent()?)?;
        let readable = self.access.is_unrestricted()
            || self
                .access
                .is_readable(&crate::fs::root::path::rel_display(rel));
        let meta = std::fs::metadata(abs).ok().filter(|_| readable)?;
        Some((meta.is_dir(), if meta.is_dir() { 0 } else { meta.len() }))
    }

    /// `find_files`: entries matching a glob relative to `path` (Python 3.11 `Path.glob`),
    /// sorted, as paths relative to `cwd` with `/` after directories, capped at
    /// `max_find_results` with `[... truncated at N matches]`.
    ///
    /// Errors: `Pattern 'p' must be relative to the search path, not absolute.`,
    /// `Unacceptable pattern: ''`, `Invalid pattern: '**' can only be an entire path
    /// component`, `Pattern 'p' is not a valid glob pattern.`, `Not a directory: p`,
    /// `The path name is too long.` (a literal component over [`NAME_MAX`] bytes that the
    /// walk looks up).
    /// Source: `_find_files`, _toolset.py; `pathlib._make_selector` (3.11).
    pub fn find_files(&self, pattern: &str, path: &str, cancel: &CancelFlag) -> Result<Outcome> {
        self.find_files_within(pattern, path, cancel, find_parallel::SORTED_BUDGET)
    }

    /// [`FileSystem::find_files`], the sorted walk given `budget` before the walk starts over
    /// in parallel (the result is the same either way).
    pub(crate) fn find_files_within(
        &self,
        pattern: &str,
        path: &str,
        cancel: &CancelFlag,
        budget: std::time::Duration,
    ) -> Result<Outcome> {
        if pattern.starts_with('/') {
            return Err(Error::new(
                ErrorKind::InvalidPattern,
                format!(
                    "Pattern {} must be relative to the search path, not absolute.",
                    py_repr(pattern)
                ),
            ));
        }
        let workspace = self.limits.contract.is_workspace();
        if workspace {
            // 0.62.0: no component at all, or a `..`, is not a glob (checked before the path).
            let named: Vec<&str> = pattern
                .split('/')
                .filter(|p| !p.is_empty() && *p != ".")
                .collect();
            if named.is_empty() || named.contains(&"..") {
                return Err(Error::new(
                    ErrorKind::InvalidPattern,
                    format!("Pattern {} is not a valid glob pattern.", py_repr(pattern)),
                ));
            }
        }
        let (resolved, st) = self.walk_root(path)?;
        if !st.is_some_and(|s| is_dir(s.st_mode)) {
            return Err(not_a_directory(path));
        }
        self.searchable_root(path, &resolved)?;
        if pattern.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidPattern,
                "Unacceptable pattern: ''",
            ));
        }
        let parts: Vec<&str> = pattern
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if parts.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidPattern,
                format!("Pattern {} is not a valid glob pattern.", py_repr(pattern)),
            ));
        }
        braces::check_components(pattern)?;
        let mut glob_parts = Vec::with_capacity(parts.len());
        for p in &parts {
            glob_parts.push(if *p == "**" {
                Part::Recursive
            } else if p.contains("**") && !workspace {
                return Err(Error::new(
                    ErrorKind::InvalidPattern,
                    "Invalid pattern: '**' can only be an entire path component",
                ));
            } else if p.contains(['*', '?', '[']) || braces::has_braces(p) {
                Part::Wild(braces::fnmatch(p)?)
            } else {
                Part::Exact(OsString::from(*p))
            });
        }
        let max = self.limits.max_find_results;
        // A trailing `/` makes the last component match directories only.
        let require_dir = pattern.ends_with('/');
        let workspace = self.limits.contract.is_workspace();
        let mut finder = Finder {
            fs: self,
            beneath: self.root.open_root_if_exists()?,
            recursive: glob_parts.iter().any(|p| matches!(p, Part::Recursive)),
            parts: glob_parts,
            require_dir,
            max,
            lines: Vec::new(),
            joined: None,
            truncated: false,
            cancel,
            workspace,
            walk: resolved.clone(),
            include_hidden: workspace && names_hidden(pattern),
            count_hidden: workspace || self.disclosure.report_skipped,
            hidden: 0,
            deadline: None,
            over_budget: false,
            unreadable: std::sync::Mutex::default(),
        };
        // Document: `..` components only ever produce hidden paths. Hidden is judged below the
        // walk's root, which was named explicitly (the document's reference found nothing in a
        // hidden root; ours does, issue 9).
        if !parts.contains(&"..") {
            let start = finder.closure(vec![0]);
            finder.run(&resolved.abs, &start, budget)?;
        }
        let outcome = match finder.joined {
            Some((text, count)) => Outcome::listing_text(
                resolved.event_str(),
                text,
                count,
                finder.truncated,
                max,
                "matches",
                "No matches found.",
            ),
            None => Outcome::listing(
                resolved.event_str(),
                finder.lines,
                finder.truncated,
                max,
                "matches",
                "No matches found.",
            ),
        };
        // Directories the walk could not list: named as the other walkers name them.
        let mut unreadable = finder
            .unreadable
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        unreadable.sort_by(|a, b| a.abs.cmp(&b.abs));
        unreadable.dedup_by(|a, b| a.abs == b.abs);
        let outcome = self.with_unreadable(outcome, &unreadable);
        if self.disclosure.report_skipped {
            return Ok(outcome.with_skipped(crate::fs::disclosure::Skipped {
                hidden: finder.hidden,
                unreadable: unreadable.len(),
                ..Default::default()
            }));
        }
        Ok(self.skipped_hidden(outcome, finder.hidden))
    }
}

/// `(is_dir, size)` of each non-directory, non-symlink entry (others: `None`), in order,
/// with the stats spread over the available cores.
fn prefetch_stats(dir: &OwnedFd, entries: &[DirEntry]) -> Vec<Option<(bool, u64)>> {
    let one = |e: &DirEntry| match e.kind {
        Kind::Dir | Kind::Symlink => None,
        _ => lstat_at(dir.as_raw_fd(), &e.name).map(|s| (is_dir(s.st_mode), s.st_size as u64)),
    };
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
        .clamp(1, 8);
    if entries.len() < 4096 || threads < 2 {
        return entries.iter().map(one).collect();
    }
    let chunk = entries.len().div_ceil(threads);
    let stats: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = entries
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    if stats.len() == entries.len() {
        stats
    } else {
        entries.iter().map(one).collect()
    }
}

/// `stat` of a resolved entry target beneath the root (symlinks refused), as `exists()`.
fn stat_beneath(beneath: &crate::fs::root::path::Beneath, target: &Resolved) -> Option<libc::stat> {
    let fd = beneath
        .open(&target.rel, crate::fs::root::path::STAT_FLAGS, 0)
        .ok()?;
    fstat(fd.as_raw_fd()).ok()
}

/// One component of a `find_files` pattern.
enum Part {
    /// `**`.
    Recursive,
    /// A component with `*`, `?` or `[`.
    Wild(Fnmatch),
    /// A literal name.
    Exact(OsString),
}

impl Part {
    fn matches(&self, name: &OsStr) -> bool {
        match self {
            Part::Recursive => false,
            Part::Wild(m) => m.is_match(&name.to_string_lossy()),
            Part::Exact(n) => n == name,
        }
    }
}

struct Finder<'a> {
    fs: &'a FileSystem,
    beneath: Option<crate::fs::root::path::Beneath>,
    parts: Vec<Part>,
    require_dir: bool,
    max: usize,
    lines: Vec<String>,
    /// The parallel walk's lines instead, already joined (each followed by `\n`), and
    /// their count.
    joined: Option<(String, usize)>,
    truncated: bool,
    cancel: &'a CancelFlag,
    /// 0.62.0's matching: `**` also matches files, and never the walk's own start.
    workspace: bool,
    /// The walk root, for the names shown.
    walk: Resolved,
    /// The pattern has a `**` component.
    recursive: bool,
    /// Workspace contract: the pattern names a hidden component, so hidden entries match.
    include_hidden: bool,
    /// Hidden entries are counted (workspace contract, or `report_skipped`).
    count_hidden: bool,
    /// Workspace contract: hidden entries the pattern would have matched (a hidden directory
    /// too under `**`), left out. Source: `_find_files`, _toolset.py (0.62.0).
    hidden: usize,
    /// When the sorted walk gives up and the walk starts over in parallel.
    deadline: Option<std::time::Instant>,
    /// The sorted walk gave up (its `lines` are incomplete).
    over_budget: bool,
    /// Directories that could not be listed (issue 19: noted as the other walkers note them).
    unreadable: std::sync::Mutex<Vec<Unreadable>>,
}

impl Finder<'_> {
    /// Adds `i + 1` for every state `i` at a `**` (it also matches zero directories).
    fn closure(&self, mut states: Vec<usize>) -> Vec<usize> {
        let mut k = 0;
        while k < states.len() {
            let i = states[k];
            if i < self.parts.len()
                && matches!(self.parts[i], Part::Recursive)
                && !states.contains(&(i + 1))
            {
                states.push(i + 1);
            }
            k += 1;
        }
        states.sort_unstable();
        states.dedup();
        states
    }

    /// The line shown for `abs` if accepted (a directory with `/`), `None` to leave it out.
    fn accept(&self, abs: &Path, is_real: bool, known_dir: Option<bool>) -> Option<String> {
        let dir = match self.fs.walk_target(abs, is_real) {
            // A real entry's type is known from `readdir`; a symlink's target is stat'ed
            // beneath the root (a dangling one is skipped).
            Some(target) => match known_dir {
                Some(d) if is_real => d,
                _ => is_dir(stat_beneath(self.beneath.as_ref()?, &target)?.st_mode),
            },
            None if self.workspace => self.fs.listed_link(abs)?.0,
            None => return None,
        };
        let mut rel = self.fs.root.shown(abs, &self.walk);
        if dir {
            rel.push('/');
        }
        Some(rel)
    }

    /// Emits `abs` if accepted; returns false once the cap is passed (stop the walk).
    fn emit(&mut self, abs: &Path, is_real: bool, known_dir: Option<bool>) -> bool {
        let Some(line) = self.accept(abs, is_real, known_dir) else {
            return true;
        };
        if self.lines.len() >= self.max {
            self.truncated = true;
            return false;
        }
        self.lines.push(line);
        true
    }

    /// Visits directory `dir` in state set `states` (closed); `is_real`: no symlink on the
    /// way from the walk root. Returns false when the walk must stop (the cap, or the
    /// sorted walk's budget).
    fn visit(
        &mut self,
        dir: &Path,
        is_real: bool,
        is_start: bool,
        states: &[usize],
    ) -> Result<bool> {
        self.cancel.check()?;
        let n = self.parts.len();
        if is_start
            && !self.workspace
            && states.contains(&n)
            && !self.emit(dir, is_real, Some(true))
        {
            return Ok(false);
        }
        if !states.iter().any(|&i| i < n) {
            return Ok(true);
        }
        for step in self.steps(dir, is_real, states)? {
            if self.deadline.is_some_and(|d| std::time::Instant::now() > d) {
                self.over_budget = true;
                return Ok(false);
            }
            if step.hidden {
                self.hidden += 1;
                continue;
            }
            if let Some(known_dir) = step.emit {
                if !self.emit(&step.child, step.real, known_dir) {
                    return Ok(false);
                }
            }
            if !step.next.is_empty() && !self.visit(&step.child, step.real, false, &step.next)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Lists `dir` (absolute, below the root through real directories only) through the
    /// root descriptor, no symlink followed on the way; empty when that fails.
    fn list_real(&self, dir: &Path) -> Vec<DirEntry> {
        let (Some(beneath), Some(rel)) = (self.beneath.as_ref(), self.fs.root.rel_to_root(dir))
        else {
            return Vec::new();
        };
        beneath
            .open(&rel, libc::O_RDONLY | libc::O_DIRECTORY, 0)
            .and_then(list_fd)
            .unwrap_or_else(|e| self.note_unreadable(dir, &e))
    }

    /// Notes directory `dir`, which could not be listed for `err` (not when it is gone, or
    /// swapped for something else since it was seen); no entries.
    fn note_unreadable(&self, dir: &Path, err: &std::io::Error) -> Vec<DirEntry> {
        if !matches!(
            err.raw_os_error(),
            Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)
        ) {
            let mut list = self.unreadable.lock().unwrap_or_else(|e| e.into_inner());
            list.push(Unreadable::new(dir.to_path_buf(), err));
        }
        Vec::new()
    }

    /// What the walk does with each entry of directory `dir` (state set `states`, closed),
    /// in name order: hidden entries the pattern would have matched (to count), entries to
    /// emit, directories to visit.
    fn steps(&self, dir: &Path, is_real: bool, states: &[usize]) -> Result<Vec<Step>> {
        let n = self.parts.len();
        // A literal component is looked up by name in `dir`, as `Path.glob` does: one longer
        // than a file name can be is the OS's ENAMETOOLONG there, a retry, not "no matches".
        if states
            .iter()
            .any(|&i| matches!(self.parts.get(i), Some(Part::Exact(name)) if name.len() > NAME_MAX))
        {
            return Err(too_long());
        }
        // A directory reached through real directories is listed beneath the root with no
        // symlink followed: one swapped for a symlink since it was seen lists as empty, not
        // as where the link points (its entries are shown unchecked, as real ones). Entries
        // below a symlink are each resolved and checked when shown.
        let mut entries = if is_real {
            self.list_real(dir)
        } else {
            list_path(dir).unwrap_or_else(|e| self.note_unreadable(dir, &e))
        };
        entries.sort_unstable_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        let mut steps = Vec::new();
        for entry in entries {
            let hidden = is_hidden(&entry.name) && !self.include_hidden;
            if hidden && !self.count_hidden {
                continue;
            }
            let child = dir.join(&entry.name);
            let mut follows_dir: Option<bool> = None;
            let mut is_dir_follow = |p: &Path| -> bool {
                *follows_dir.get_or_insert_with(|| match entry.kind {
                    Kind::Dir => true,
                    Kind::Symlink => std::fs::metadata(p).map(|m| m.is_dir()).unwrap_or(false),
                    _ => false,
                })
            };
            let mut next: Vec<usize> = Vec::new();
            let mut matched_last = false;
            for &i in states {
                if i >= n {
                    continue;
                }
                match &self.parts[i] {
                    Part::Recursive => {
                        if entry.kind == Kind::Dir {
                            next.push(i);
                        } else if self.workspace
                            && !self.require_dir
                            && self.closure(vec![i + 1]).contains(&n)
                        {
                            // The rest of the pattern is `**`: it takes this file as its last component.
                            matched_last = true;
                        }
                    }
                    part => {
                        if part.matches(&entry.name) {
                            if i + 1 == n {
                                matched_last =
                                    matched_last || !self.require_dir || is_dir_follow(&child);
                            } else if is_dir_follow(&child) {
                                next.push(i + 1);
                            }
                        }
                    }
                }
            }
            let next = self.closure(next);
            if hidden {
                if matched_last || next.contains(&n) || (self.recursive && is_dir_follow(&child)) {
                    steps.push(Step {
                        child,
                        real: false,
                        hidden: true,
                        emit: None,
                        next: Vec::new(),
                    });
                }
                continue;
            }
            let real = is_real && entry.kind != Kind::Symlink;
            let emit = (matched_last || next.contains(&n))
                .then_some((entry.kind != Kind::Symlink).then_some(entry.kind == Kind::Dir));
            let next = if next.iter().any(|&i| i < n) {
                next
            } else {
                Vec::new()
            };
            if emit.is_some() || !next.is_empty() {
                steps.push(Step {
                    child,
                    real,
                    hidden: false,
                    emit,
                    next,
                });
            }
        }
        Ok(steps)
    }
}

/// What a `find_files` walk does with one directory entry ([`Finder::steps`]).
struct Step {
    /// The entry's path as walked.
    child: std::path::PathBuf,
    /// No symlink on the way from the walk root to it, itself included.
    real: bool,
    /// A hidden entry the pattern would have matched: counted, not shown or entered.
    hidden: bool,
    /// Shown if accepted, with its type when `readdir` knows it (`Some(is_dir)`).
    emit: Option<Option<bool>>,
    /// The closed state set to visit it in, when it is a directory to enter (else empty).
    next: Vec<usize>,
}

/// A sort key equal to Python's component-wise `Path` order: the bytes with `/` lowest.
pub fn sort_key(rel: &Path) -> Vec<u8> {
    rel.as_os_str()
        .as_bytes()
        .iter()
        .map(|&b| if b == b'/' { 0 } else { b })
        .collect()
}

/// One entry met by a [`Walker`].
#[derive(Debug, Clone, Copy)]
pub struct WalkEntry<'a> {
    /// The entry's path as walked (absolute, not resolved).
    pub abs: &'a Path,
    /// The same path relative to the real root (what patterns and the dot rule see).
    pub rel: &'a Path,
    /// Its type, symlinks not followed.
    pub kind: Kind,
}

/// The recursive walk the walker tools share: every entry below a resolved directory, in
/// parallel and unordered (`ignore` with all its filters off), entries whose name starts
/// with `.` skipped and not entered, symlinked directories listed but not entered (Python's
/// `rglob('*')`). Callers resolve entries with [`FileSystem::walk_target`]-style checks and
/// order results with [`sort_key`].
pub struct Walker<'a> {
    fs: &'a FileSystem,
    root: &'a Resolved,
    threads: usize,
    include_hidden: bool,
    hidden: Arc<AtomicUsize>,
    /// Directories the walk could not list (issue 19).
    unreadable: Arc<std::sync::Mutex<Vec<Unreadable>>>,
    /// ripgrep's ignore files apply, with these `--glob` overrides (`search_files` under the
    /// workspace contract, as 0.62.0's `rg` on a workspace); `None`: no ignore rules.
    ignore_files: Option<ignore::overrides::Override>,
}

/// The kind of a walked entry the walker visits; `None` for a directory (walked into, not visited).
fn walked_kind(file_type: Option<std::fs::FileType>) -> Option<Kind> {
    match file_type {
        Some(ft) if ft.is_dir() => None,
        Some(ft) if ft.is_file() => Some(Kind::File),
        Some(ft) if ft.is_symlink() => Some(Kind::Symlink),
        _ => Some(Kind::Other),
    }
}

/// Entries up to which a tree is walked on the calling thread (see `visit_small_tree`).
pub const SMALL_TREE_ENTRIES: usize = 256;

impl<'a> Walker<'a> {
    /// A walker below `root` (a resolved directory of `fs`), on all available cores (at most 8).
    pub fn new(fs: &'a FileSystem, root: &'a Resolved) -> Self {
        let threads = std::thread::available_parallelism()
            .map(|t| t.get())
            .unwrap_or(1)
            .clamp(1, 8);
        Walker {
            fs,
            root,
            threads,
            include_hidden: false,
            hidden: Arc::new(AtomicUsize::new(0)),
            unreadable: Arc::default(),
            ignore_files: None,
        }
    }

    /// Applies ripgrep's ignore files (`.gitignore` in a git repository and its
    /// `.git/info/exclude`, `.ignore` and `.rgignore` anywhere, those of parent directories,
    /// the global git excludes), with `overrides` (`rg --glob`) above them, as `rg` does.
    /// Hidden entries are then skipped uncounted ([`Walker::hidden_skipped`] stays 0; the
    /// caller counts with [`crate::fs::ripgrep::skipped::ripgrep_skipped`]).
    pub fn ignore_files(mut self, overrides: ignore::overrides::Override) -> Self {
        self.ignore_files = Some(overrides);
        self
    }

    /// Whether ripgrep's ignore files apply ([`Walker::ignore_files`]); the parallel walk
    /// ([`Walker::visit_parallel`]) is then the `ignore` crate's, which reads them too.
    pub fn has_ignore_files(&self) -> bool {
        self.ignore_files.is_some()
    }

    /// The `ignore` walk every form of this walker runs: no filters of its own (the dot rule
    /// is [`Walker::filter`]'s), links not followed, ripgrep's ignore files when asked.
    fn builder(&self) -> ignore::WalkBuilder {
        let mut builder = ignore::WalkBuilder::new(&self.root.abs);
        builder
            .standard_filters(false)
            .hidden(false)
            .follow_links(false);
        if let Some(overrides) = &self.ignore_files {
            // Hidden entries are skipped by the walk itself, after it has read the ignore files
            // among them: the entry filter sees a directory's entries before they are looked
            // through for ignore files, so leaving them to it would miss nested ones.
            builder
                .hidden(!self.include_hidden)
                .parents(true)
                .ignore(true)
                .git_global(true)
                .git_ignore(true)
                .git_exclude(true)
                .require_git(true)
                .add_custom_ignore_filename(".rgignore")
                .overrides(overrides.clone());
        }
        builder
    }

    /// Notes a directory the walk could not list, and why.
    pub(crate) fn note_unreadable(&self, abs: &Path, err: &std::io::Error) {
        let mut list = self.unreadable.lock().unwrap_or_else(|e| e.into_inner());
        list.push(Unreadable::new(abs.to_path_buf(), err));
    }

    /// Notes the directory a walk error names (`ignore`'s errors carry the path).
    pub(crate) fn note_walk_error(&self, err: &ignore::Error) {
        fn named(err: &ignore::Error) -> Option<(&Path, &std::io::Error)> {
            match err {
                ignore::Error::WithPath { path, err } => Some((path, err.io_error()?)),
                ignore::Error::WithDepth { err, .. }
                | ignore::Error::WithLineNumber { err, .. } => named(err),
                _ => None,
            }
        }
        if let Some((path, io)) = named(err) {
            if io.raw_os_error() != Some(libc::ENOENT) {
                self.note_unreadable(path, io);
            }
        }
    }

    /// The directories the walk could not list, by path, each once.
    pub fn unreadable(&self) -> Vec<Unreadable> {
        let mut list = self
            .unreadable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        list.sort_by(|a, b| a.abs.cmp(&b.abs));
        list.dedup_by(|a, b| a.abs == b.abs);
        list
    }

    /// Walks hidden entries too (the workspace contract, when the caller named a hidden path).
    pub fn include_hidden(mut self, include: bool) -> Self {
        self.include_hidden = include;
        self
    }

    /// Hidden entries below the root the walk skipped, a pruned hidden directory counted once.
    pub fn hidden_skipped(&self) -> usize {
        self.hidden.load(Ordering::Relaxed)
    }

    /// The entry filter: the root itself, and then what is not hidden (or everything when
    /// hidden entries are included), counting what it skips into `counter`.
    fn filter(
        &self,
        counter: Arc<AtomicUsize>,
    ) -> impl Fn(&ignore::DirEntry) -> bool + Send + Sync + 'static {
        let include_hidden = self.include_hidden;
        move |e| {
            let keep = e.depth() == 0 || include_hidden || !is_hidden(e.file_name());
            if !keep {
                counter.fetch_add(1, Ordering::Relaxed);
            }
            keep
        }
    }

    /// Sets the number of walking threads (1: walk on the calling thread).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// A small tree is walked on the calling thread: starting walker threads costs more than
    /// searching a few files (a tiny `search_files` was 2x the reference's time). Walks up to
    /// [`SMALL_TREE_ENTRIES`] entries sequentially; if that was the whole tree, visits them and
    /// returns `true`, else visits nothing and returns `false` (the caller walks in parallel).
    fn visit_small_tree<S, I, F>(&self, cancel: &CancelFlag, init: &I, visit: &F) -> Result<bool>
    where
        I: Fn() -> S,
        F: Fn(&mut S, &WalkEntry<'_>),
    {
        // Counted apart: only a walk that was the whole tree adds its count.
        let hidden = Arc::new(AtomicUsize::new(0));
        let walk = self
            .builder()
            .filter_entry(self.filter(hidden.clone()))
            .build();
        let mut entries = Vec::new();
        for entry in walk {
            cancel.check()?;
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    self.note_walk_error(&err);
                    continue;
                }
            };
            if entry.depth() == 0 {
                continue;
            }
            let Some(kind) = walked_kind(entry.file_type()) else {
                continue;
            };
            if entries.len() == SMALL_TREE_ENTRIES {
                return Ok(false);
            }
            entries.push((entry.into_path(), kind));
        }
        self.hidden
            .fetch_add(hidden.load(Ordering::Relaxed), Ordering::Relaxed);
        let real_root = self.fs.root.real_root();
        let mut state = init();
        for (abs, kind) in &entries {
            cancel.check()?;
            if let Ok(rel) = abs.strip_prefix(real_root) {
                visit(
                    &mut state,
                    &WalkEntry {
                        abs,
                        rel,
                        kind: *kind,
                    },
                );
            }
        }
        Ok(true)
    }

    /// Calls `visit` for every file, symlink and special entry (not directories), with a
    /// per-thread state made by `init`. Polls `cancel` per entry.
    ///
    /// Errors: `ErrorKind::Cancelled` when cancelled.
    pub fn for_each_with<S: Send, I, F>(&self, cancel: &CancelFlag, init: I, visit: F) -> Result<()>
    where
        I: Fn() -> S + Sync,
        F: Fn(&mut S, &WalkEntry<'_>) + Sync,
    {
        // The dot rule is relative to the walk's own root, so a hidden directory named
        // explicitly is walked (the document's reference walked nothing there; issue 9).
        let real_root = self.fs.root.real_root();
        if self.threads > 1 && self.visit_small_tree(cancel, &init, &visit)? {
            return Ok(());
        }
        let walker = self
            .builder()
            .threads(self.threads)
            .filter_entry(self.filter(self.hidden.clone()))
            .build_parallel();
        // Each worker works for the calling tool call (names it escapes, `EscapeScope`).
        let call = crate::fs::text::names::EscapeScope::current();
        walker.run(|| {
            let (init, visit) = (&init, &visit);
            let mut state = init();
            let mut call = Some(call.clone());
            Box::new(move |entry| {
                if let Some(call) = call.take() {
                    call.adopt();
                }
                if cancel.is_cancelled() {
                    return ignore::WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return ignore::WalkState::Continue;
                };
                if entry.depth() == 0 {
                    return ignore::WalkState::Continue;
                }
                let Some(kind) = walked_kind(entry.file_type()) else {
                    return ignore::WalkState::Continue;
                };
                if let Ok(rel) = entry.path().strip_prefix(real_root) {
                    visit(
                        &mut state,
                        &WalkEntry {
                            abs: entry.path(),
                            rel,
                            kind,
                        },
                    );
                }
                ignore::WalkState::Continue
            })
        });
        cancel.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::tests::{limits, protected};
    use std::fs;
    use std::os::unix::fs::symlink;

    fn tree(cwd: Option<&str>, denied: &[&str]) -> (tempfile::TempDir, FileSystem) {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        fs::create_dir_all(r.join("src/pkg")).unwrap();
        fs::create_dir_all(r.join("src/a")).unwrap();
        fs::create_dir_all(r.join(".h")).unwrap();
        fs::write(r.join("src/main.py"), "x").unwrap();
        fs::write(r.join("src/pkg/m.py"), "y").unwrap();
        fs::write(r.join("src/a-b.py"), "y").unwrap();
        fs::write(r.join("src/a/b.py"), "y").unwrap();
        fs::write(r.join(".h/z.py"), "z").unwrap();
        fs::write(r.join("secrets.yaml"), "s").unwrap();
        symlink("src", r.join("sl")).unwrap();
        symlink("/etc", r.join("etc")).unwrap();
        symlink("nothere", r.join("dangle")).unwrap();
        symlink("secrets.yaml", r.join("alias.txt")).unwrap();
        let denied: Vec<String> = denied.iter().map(|s| s.to_string()).collect();
        let cwd = cwd.map(|c| r.join(c).to_string_lossy().into_owned());
        let f = FileSystem::new(
            r.to_str().unwrap(),
            cwd.as_deref(),
            &[],
            &denied,
            &protected(),
            limits(),
        )
        .unwrap();
        (dir, f)
    }

    /// Small trees take the sequential path, large ones the parallel walk: both visit every
    /// non-hidden file once and nothing else.
    #[test]
    fn walker_visits_the_same_entries_on_both_paths() {
        for count in [
            3,
            SMALL_TREE_ENTRIES - 1,
            SMALL_TREE_ENTRIES,
            SMALL_TREE_ENTRIES + 40,
        ] {
            let dir = tempfile::tempdir().unwrap();
            let r = dir.path();
            fs::create_dir_all(r.join("d/.hidden")).unwrap();
            fs::write(r.join("d/.hidden/no"), "").unwrap();
            fs::write(r.join(".no"), "").unwrap();
            let mut expected: Vec<String> = (0..count).map(|i| format!("d/f{i:04}")).collect();
            for name in &expected {
                fs::write(r.join(name), "").unwrap();
            }
            let f = FileSystem::new(r.to_str().unwrap(), None, &[], &[], &[], limits()).unwrap();
            let root = f.safe_resolve(".", false, false).unwrap();
            let seen = std::sync::Mutex::new(Vec::new());
            Walker::new(&f, &root)
                .threads(2)
                .for_each_with(
                    &CancelFlag::new(),
                    || (),
                    |_, e| {
                        seen.lock()
                            .unwrap()
                            .push(e.rel.to_string_lossy().into_owned())
                    },
                )
                .unwrap();
            let mut seen = seen.into_inner().unwrap();
            seen.sort();
            expected.sort();
            assert_eq!(seen, expected, "{count} files");
        }
    }

    #[test]
    fn find_matches_python_glob() {
        let (_d, f) = tree(None, &[]);
        let c = CancelFlag::new();
        // Expected outputs produced with the reference on the same tree (Python 3.11).
        let cases = [
            ("**", "./\nsrc/\nsrc/a/\nsrc/pkg/"),
            ("*", "alias.txt\nsecrets.yaml\nsl/\nsrc/"),
            (
                "**/*.py",
                "src/a/b.py\nsrc/a-b.py\nsrc/main.py\nsrc/pkg/m.py",
            ),
            ("sl/*", "sl/a/\nsl/a-b.py\nsl/main.py\nsl/pkg/"),
            ("**/sl", "sl/"),
            ("src/", "src/"),
            ("*/", "sl/\nsrc/"),
            ("**/", "./\nsrc/\nsrc/a/\nsrc/pkg/"),
            ("src/main.py/", "No matches found."),
            ("src//*.py", "src/a-b.py\nsrc/main.py"),
            ("[", "No matches found."),
            ("../*", "No matches found."),
            ("etc/*", "No matches found."),
            ("src/./pkg/*", "src/pkg/m.py"),
        ];
        for (pattern, expected) in cases {
            assert_eq!(
                f.find_files(pattern, ".", &c).unwrap().text,
                expected,
                "{pattern}"
            );
        }
        let err = |p: &str| f.find_files(p, ".", &c).unwrap_err().message;
        assert_eq!(err(""), "Unacceptable pattern: ''");
        assert_eq!(err("."), "Pattern '.' is not a valid glob pattern.");
        assert_eq!(
            err("a**"),
            "Invalid pattern: '**' can only be an entire path component"
        );
        assert_eq!(
            err("/x"),
            "Pattern '/x' must be relative to the search path, not absolute."
        );
        assert_eq!(
            f.find_files("*", "nope", &c).unwrap_err().message,
            "Not a directory: nope"
        );
        // A literal name the walk looks up that no file name can be: the OS's ENAMETOOLONG.
        let long = "L".repeat(NAME_MAX + 1);
        for pattern in [long.clone(), format!("src/{long}"), format!("**/{long}/*")] {
            assert_eq!(err(&pattern), "The path name is too long.", "{pattern}");
        }
        let fits = "L".repeat(NAME_MAX);
        for pattern in [fits, format!("nope/{long}"), format!("{long}*")] {
            assert_eq!(
                f.find_files(&pattern, ".", &c).unwrap().text,
                "No matches found.",
                "{pattern}"
            );
        }
    }

    #[test]
    fn find_caps_and_cwd() {
        let (_d, mut f) = tree(Some("src/pkg"), &[]);
        let c = CancelFlag::new();
        assert_eq!(
            f.find_files("*.py", "..", &c).unwrap().text,
            "../a-b.py\n../main.py"
        );
        f.limits.max_find_results = 2;
        let o = f.find_files("**/*.py", "../..", &c).unwrap();
        assert_eq!(o.text, "../a/b.py\n../a-b.py\n[... truncated at 2 matches]");
        assert!(o.truncated);
        f.limits.max_find_results = 4;
        let o = f.find_files("**/*.py", "../..", &c).unwrap();
        assert!(!o.truncated);
        assert_eq!(o.count, 4);
    }

    #[test]
    fn walker_visits_sorted_relative_paths() {
        let (_d, f) = tree(None, &[]);
        let root = f.safe_resolve(".", false, false).unwrap();
        let seen = std::sync::Mutex::new(Vec::new());
        Walker::new(&f, &root)
            .for_each_with(
                &CancelFlag::new(),
                || (),
                |_, e| {
                    seen.lock().unwrap().push((
                        sort_key(e.rel),
                        e.rel.to_string_lossy().into_owned(),
                        e.kind,
                    ));
                },
            )
            .unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.sort_by(|a, b| a.0.cmp(&b.0));
        let got: Vec<(String, Kind)> = seen.into_iter().map(|(_, p, k)| (p, k)).collect();
        let expected = [
            ("alias.txt", Kind::Symlink),
            ("dangle", Kind::Symlink),
            ("etc", Kind::Symlink),
            ("secrets.yaml", Kind::File),
            ("sl", Kind::Symlink),
            ("src/a/b.py", Kind::File),
            ("src/a-b.py", Kind::File),
            ("src/main.py", Kind::File),
            ("src/pkg/m.py", Kind::File),
        ];
        assert_eq!(got, expected.map(|(p, k)| (p.to_string(), k)));
    }

    #[test]
    fn list_directory_entries() {
        let (_d, f) = tree(None, &["*.yaml"]);
        let c = CancelFlag::new();
        let o = f.list_directory(".", &c).unwrap();
        assert_eq!(o.text, "sl/\nsrc/");
        assert_eq!(o.count, 2);
        assert_eq!(
            f.list_directory("src", &c).unwrap().text,
            "src/a/\nsrc/a-b.py  (1 bytes)\nsrc/main.py  (1 bytes)\nsrc/pkg/"
        );
        // A hidden directory named explicitly is listed (0.36.0: `(empty directory)`; issue 9).
        assert_eq!(
            f.list_directory(".h", &c).unwrap().text,
            ".h/z.py  (1 bytes)"
        );
        assert_eq!(
            f.list_directory("nope", &c).unwrap_err().message,
            "Not a directory: nope"
        );
        assert_eq!(
            f.list_directory("secrets.yaml", &c).unwrap_err().message,
            "Path 'secrets.yaml' is denied by pattern '*.yaml'."
        );
    }

    /// Switches `f` (its limits and its root's texts) to `contract`.
    fn set_contract(f: &mut FileSystem, contract: crate::fs::contract::Contract) {
        f.limits.contract = contract;
        f.root = f.root.clone().under(contract);
    }

    fn workspace_tree() -> (tempfile::TempDir, FileSystem) {
        let (d, mut f) = tree(None, &[]);
        set_contract(&mut f, crate::fs::contract::Contract::Workspace);
        fs::write(d.path().join(".env"), "x").unwrap();
        fs::write(d.path().join("src/.cache.py"), "c").unwrap();
        (d, f)
    }

    /// 0.62.0: hidden entries are left out unless named, and counted in the trailer; a link
    /// leading outside is listed (its target is only `stat`ed).
    #[test]
    fn workspace_walks_count_hidden_entries() {
        let (_d, f) = workspace_tree();
        let c = CancelFlag::new();
        let trailer = |n| hidden_notice(n);
        assert_eq!(
            f.list_directory(".", &c).unwrap().text,
            format!(
                "alias.txt  (1 bytes)\netc/\nsecrets.yaml  (1 bytes)\nsl/\nsrc/\n{}",
                trailer(2)
            )
        );
        assert_eq!(f.list_directory(".", &c).unwrap().count, 5);
        assert_eq!(
            f.list_directory(".h", &c).unwrap().text,
            ".h/z.py  (1 bytes)"
        );
        assert_eq!(
            f.find_files("*.py", "src", &c).unwrap().text,
            format!("src/a-b.py\nsrc/main.py\n{}", trailer(1))
        );
        assert_eq!(f.find_files(".*", ".", &c).unwrap().text, ".env\n.h/");
        assert_eq!(f.find_files("*", ".h", &c).unwrap().text, ".h/z.py");
        assert_eq!(
            f.find_files("*.none", ".", &c).unwrap().text,
            "No matches found."
        );
        let mut capped = workspace_tree();
        capped.1.limits.max_list_results = 1;
        assert_eq!(
            capped.1.list_directory(".", &c).unwrap().text,
            format!(
                "alias.txt  (1 bytes)\n[... truncated at 1 entries]\n{}",
                trailer(2)
            )
        );
        // The document's contract is unchanged: no trailer, outside links hidden.
        capped.1.limits.contract = crate::fs::contract::Contract::Document;
        capped.1.limits.max_list_results = 1000;
        assert_eq!(
            capped.1.list_directory(".", &c).unwrap().text,
            "alias.txt  (1 bytes)\nsecrets.yaml  (1 bytes)\nsl/\nsrc/"
        );
    }

    /// 0.62.0's events keep the name a file or directory was reached by; the document's
    /// name the resolved target.
    #[test]
    fn events_name_the_path_as_reached() {
        let (_d, mut f) = workspace_tree();
        let c = CancelFlag::new();
        let paths = |f: &FileSystem| {
            [
                f.read_file("alias.txt", 0, None, None, &c).unwrap().path,
                f.list_directory("sl", &c).unwrap().path,
                f.find_files("*", "sl/", &c).unwrap().path,
                f.search_files("x", "./sl/../sl", None, &c).unwrap().path,
                f.list_directory(".", &c).unwrap().path,
            ]
        };
        assert_eq!(paths(&f), ["alias.txt", "sl", "sl", "sl", "."]);
        set_contract(&mut f, crate::fs::contract::Contract::Document);
        assert_eq!(paths(&f), ["secrets.yaml", "src", "src", "src", "."]);
    }

    #[test]
    fn walker_counts_pruned_hidden_entries_on_both_paths() {
        for count in [3, SMALL_TREE_ENTRIES + 40] {
            let dir = crate::testing::tree(&[("d/.hidden/deep/no", ""), (".no", "")]);
            let r = dir.path();
            for i in 0..count {
                fs::write(r.join(format!("d/f{i:04}")), "").unwrap();
            }
            let f = FileSystem::new(r.to_str().unwrap(), None, &[], &[], &[], limits()).unwrap();
            let root = f.safe_resolve(".", false, false).unwrap();
            let walker = Walker::new(&f, &root).threads(2);
            walker
                .for_each_with(&CancelFlag::new(), || (), |_, _| {})
                .unwrap();
            assert_eq!(walker.hidden_skipped(), 2, "{count} files");
            let all = Walker::new(&f, &root).threads(2).include_hidden(true);
            let seen = std::sync::atomic::AtomicUsize::new(0);
            all.for_each_with(
                &CancelFlag::new(),
                || (),
                |_, _| {
                    seen.fetch_add(1, Ordering::Relaxed);
                },
            )
            .unwrap();
            assert_eq!((all.hidden_skipped(), seen.into_inner()), (0, count + 2));
        }
    }
}
