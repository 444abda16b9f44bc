//! The crash-safe commit of a multi-file patch: after a `SIGKILL` at any moment the tree holds
//! every file's old content or every file's new content, never a mix.
//!
//! A commit works in a directory of its own, `.pydantic-ai-harness/patch/<id>/` beneath the
//! root, holding an `flock`ed `lock` file while it runs:
//! 1. **stage**: each new content is written complete as `new-<i>` (an updated file's mode and
//!    owner kept), and each file that will be replaced or removed is kept as `old-<i>` (a hard
//!    link, or a copy where linking fails, and always a copy for a file written in place); the
//!    caller's check that every file still holds what was planned runs after this, right
//!    before the next step;
//! 2. **journal**: `journal` (written as `journal.tmp`, then renamed) lists each target with
//!    whether it gets a new content or is removed, which updated files are written in place,
//!    and the directories to create: from here on the commit is decided;
//! 3. **apply**: removals, then the missing directories, then each `new-<i>` renamed over its
//!    target, or, for an updated file with other hard links (which must all see the change, as
//!    `edit_file` keeps them), its bytes written into the file in place and then `new-<i>`
//!    removed;
//! 4. **done**: `journal` removed, then the directory.
//!
//! [`recover`] runs before every patch and when a FileSystem is built on the root: a directory
//! whose `lock` is free belongs to a dead commit; with a `journal` it is finished (roll
//! forward: every step of 3 is idempotent), without one it is dropped (nothing outside it was
//! touched yet). A journal is only trusted as far as it checks out: every path it names must
//! be plain (relative, no `..`), pass the caller's `allowed` check (contained, no symlinked
//! parent, writable under the FileSystem's access rules now) and every staged `new-<i>` not
//! yet renamed must hash to the SHA-256 the journal recorded; otherwise the journal is dropped
//! and the tree left untouched, so a journal forged by anything that can write the state
//! directory (a shell command) cannot reach a file the FileSystem would refuse to change. A failure while applying (not a kill: an error) puts every old file back from
//! `old-<i>` and removes the directories it made, so an error leaves the old tree too.
//! Deleting the last file of a directory leaves the directory (as Codex does). No `fsync`, as
//! for single-file writes (`change/replace.rs`): this guards against kills, not power loss.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::fs::change::replace::parent_of;
use crate::fs::root::path::{fstat, Beneath};

/// Where commits keep their journals, relative to the root.
pub const JOURNAL_DIR: &str = ".pydantic-ai-harness/patch";

const HEADER: &str = "pydantic-ai-harness patch journal 2";

/// Whether the journal's path (a target or a directory to create) may be changed now.
pub type Allowed<'a> = &'a dyn Fn(&Path) -> bool;

/// One journal entry: index, target, the SHA-256 (hex) of its staged new content (`None`:
/// removed), whether it is written in place (a file with other hard links).
type Entry = (usize, PathBuf, Option<String>, bool);

static SEQUENCE: AtomicUsize = AtomicUsize::new(0);

/// One file of a commit.
#[derive(Debug)]
pub struct Target<'a> {
    /// The path beneath the root.
    pub rel: &'a Path,
    /// Its bytes now (`None`: nothing there).
    pub old: Option<&'a [u8]>,
    /// Its bytes after (`None`: removed).
    pub new: Option<&'a [u8]>,
    /// For a new file (`old` is `None`): the file whose permission bits it takes (a move's
    /// source, still in place while staging); `None` or a missing file: the default mode.
    pub mode_from: Option<&'a Path>,
}

fn cvt(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn c(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn open_at(dir: RawFd, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    // SAFETY: name is NUL-terminated; dir is a valid descriptor.
    let fd = unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            flags | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn unlink_at(dir: RawFd, name: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: as above.
    cvt(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) })
}

fn rename_at(from_dir: RawFd, from: &CStr, to_dir: RawFd, to: &CStr) -> io::Result<()> {
    // SAFETY: as above.
    cvt(unsafe { libc::renameat(from_dir, from.as_ptr(), to_dir, to.as_ptr()) })
}

fn write_file(dir: RawFd, name: &CStr, data: &[u8], mode: libc::mode_t) -> io::Result<OwnedFd> {
    let fd = open_at(dir, name, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL, mode)?;
    crate::fs::change::write::pwrite_all(&fd, data)?;
    Ok(fd)
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(Sha256::digest(bytes).as_slice())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    s.len()
        .is_multiple_of(2)
        .then(|| {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
                .collect()
        })
        .flatten()
}

fn name(prefix: &str, i: usize) -> CString {
    CString::new(format!("{prefix}-{i}")).expect("no NUL")
}

/// A commit's own directory, open and locked.
struct Tx {
    state: OwnedFd,
    id: CString,
    dir: OwnedFd,
    _lock: OwnedFd,
}

impl Tx {
    fn begin(beneath: &Beneath) -> io::Result<Tx> {
        let state_rel = Path::new(JOURNAL_DIR);
        beneath.mkdir_all(state_rel)?;
        let state = beneath.open(state_rel, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        let ignore = c"../.gitignore";
        if let Ok(fd) = open_at(
            state.as_raw_fd(),
            ignore,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            0o666,
        ) {
            let _ = crate::fs::change::write::pwrite_all(&fd, b"*\n");
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let id = CString::new(format!(
            "{}-{nanos}-{}",
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        ))
        .expect("no NUL");
        // SAFETY: id is NUL-terminated; state is a directory descriptor.
        cvt(unsafe { libc::mkdirat(state.as_raw_fd(), id.as_ptr(), 0o700) })?;
        let dir = open_at(
            state.as_raw_fd(),
            &id,
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
        )?;
        let lock = open_at(
            dir.as_raw_fd(),
            c"lock",
            libc::O_RDWR | libc::O_CREAT,
            0o600,
        )?;
        // SAFETY: lock is a valid descriptor.
        cvt(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) })?;
        Ok(Tx {
            state,
            id,
            dir,
            _lock: lock,
        })
    }

    /// Removes the commit's directory and everything in it.
    fn remove(self) {
        clear(self.dir.as_raw_fd());
        // SAFETY: as above.
        let _ = unlink_at(self.state.as_raw_fd(), &self.id, libc::AT_REMOVEDIR);
    }
}

/// Unlinks every entry of the (flat) directory `dir`.
fn clear(dir: RawFd) {
    for entry in entries(dir) {
        if let Ok(n) = c(&entry) {
            let _ = unlink_at(dir, &n, 0);
        }
    }
}

/// The names in directory `dir` (not `.`, `..`).
fn entries(dir: RawFd) -> Vec<OsString> {
    // SAFETY: dup gives fdopendir its own descriptor, closed by closedir.
    let dup = unsafe { libc::dup(dir) };
    if dup < 0 {
        return Vec::new();
    }
    // SAFETY: dup is a valid directory descriptor.
    let d = unsafe { libc::fdopendir(dup) };
    if d.is_null() {
        // SAFETY: dup is ours.
        unsafe { libc::close(dup) };
        return Vec::new();
    }
    // SAFETY: d is a valid DIR*.
    unsafe { libc::rewinddir(d) };
    let mut out = Vec::new();
    loop {
        // SAFETY: d is valid; the entry is read before the next call.
        let e = unsafe { libc::readdir(d) };
        if e.is_null() {
            break;
        }
        // SAFETY: d_name is NUL-terminated.
        let n = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) };
        if n.to_bytes() != b"." && n.to_bytes() != b".." {
            out.push(OsString::from_vec(n.to_bytes().to_vec()));
        }
    }
    // SAFETY: d is valid, closed once.
    unsafe { libc::closedir(d) };
    out
}

/// The directories of `rel`'s ancestors that do not exist, shallowest first.
fn missing_dirs(beneath: &Beneath, rel: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dir = rel.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
        match beneath.open(d, libc::O_PATH | libc::O_DIRECTORY, 0) {
            Ok(_) => break,
            Err(_) => out.push(d.to_path_buf()),
        }
        dir = d.parent();
    }
    out.reverse();
    out
}

/// Commits `targets` through a journal (see the module doc). `verify` runs once everything is
/// staged, right before the journal is written: its error stops the commit with nothing changed.
///
/// Errors: `verify`'s; an I/O error (staging: nothing changed; applying: every file put back).
pub fn commit<E>(
    beneath: &Beneath,
    allowed: Allowed<'_>,
    targets: &[Target<'_>],
    verify: impl FnOnce() -> Result<(), E>,
    io_error: impl Fn(io::Error) -> E,
) -> Result<(), E> {
    recover(beneath, allowed);
    let tx = Tx::begin(beneath).map_err(&io_error)?;
    let in_place = match stage(beneath, &tx, targets) {
        Ok(in_place) => in_place,
        Err(e) => {
            tx.remove();
            return Err(io_error(e));
        }
    };
    if let Err(e) = verify() {
        tx.remove();
        return Err(e);
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for t in targets.iter().filter(|t| t.new.is_some()) {
        for d in missing_dirs(beneath, t.rel) {
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    dirs.sort_by_key(|d| d.components().count());
    let mut journal = format!("{HEADER}\n");
    for (i, t) in targets.iter().enumerate() {
        journal.push_str(&format!(
            "f {i} {} {}\n",
            hex(t.rel.as_os_str().as_bytes()),
            t.new.map_or_else(|| "-".to_string(), sha256)
        ));
    }
    for (i, _) in in_place.iter().enumerate().filter(|(_, &w)| w) {
        journal.push_str(&format!("w {i}\n"));
    }
    for d in &dirs {
        journal.push_str(&format!("d {}\n", hex(d.as_os_str().as_bytes())));
    }
    journal.push_str("end\n");
    let written = write_file(
        tx.dir.as_raw_fd(),
        c"journal.tmp",
        journal.as_bytes(),
        0o600,
    )
    .and_then(|_| {
        rename_at(
            tx.dir.as_raw_fd(),
            c"journal.tmp",
            tx.dir.as_raw_fd(),
            c"journal",
        )
    });
    if let Err(e) = written {
        tx.remove();
        return Err(io_error(e));
    }
    let entries: Vec<Entry> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| (i, t.rel.to_path_buf(), t.new.map(sha256), in_place[i]))
        .collect();
    if let Err(e) = apply(beneath, tx.dir.as_raw_fd(), &entries, &dirs) {
        roll_back(beneath, &tx, targets, &in_place, &dirs);
        let _ = unlink_at(tx.dir.as_raw_fd(), c"journal", 0);
        tx.remove();
        return Err(io_error(e));
    }
    let _ = unlink_at(tx.dir.as_raw_fd(), c"journal", 0);
    tx.remove();
    Ok(())
}

/// Step 1: `new-<i>` and `old-<i>` in the commit's directory. Returns, per target, whether
/// it is written in place (an updated file with other hard links).
fn stage(beneath: &Beneath, tx: &Tx, targets: &[Target<'_>]) -> io::Result<Vec<bool>> {
    let dir = tx.dir.as_raw_fd();
    let mut in_place = Vec::with_capacity(targets.len());
    for (i, t) in targets.iter().enumerate() {
        let existing = match t.old {
            Some(_) => Some(parent_of(beneath, t.rel)?),
            None => None,
        };
        let st = match &existing {
            Some((parent, n)) => {
                let fd = open_at(
                    parent.as_raw_fd(),
                    &c(n)?,
                    libc::O_RDONLY | libc::O_NONBLOCK,
                    0,
                )?;
                Some(fstat(fd.as_raw_fd())?)
            }
            None => None,
        };
        let through = t.new.is_some() && st.as_ref().is_some_and(|st| st.st_nlink > 1);
        in_place.push(through);
        if let Some(new) = t.new {
            let fd = write_file(dir, &name("new", i), new, 0o666)?;
            if let (None, Some(src)) = (&st, t.mode_from) {
                if let Ok(src) = beneath.open(src, libc::O_PATH, 0) {
                    if let Ok(st) = fstat(src.as_raw_fd()) {
                        // SAFETY: fd is valid. The permission bits only (not set-id, not owner).
                        unsafe { libc::fchmod(fd.as_raw_fd(), st.st_mode & 0o777) };
                    }
                }
            }
            if let Some(st) = &st {
                // SAFETY: fd is valid. The owner first (it clears set-id bits), then the mode.
                unsafe {
                    libc::fchown(fd.as_raw_fd(), st.st_uid, st.st_gid);
                    libc::fchmod(fd.as_raw_fd(), st.st_mode & 0o7777);
                }
            }
        }
        if let (Some((parent, n)), Some(old)) = (&existing, t.old) {
            if through {
                // Written in place: a link would change with it.
                write_file(dir, &name("old", i), old, 0o600)?;
                continue;
            }
            // SAFETY: names are NUL-terminated; both descriptors are directories.
            let linked = cvt(unsafe {
                libc::linkat(
                    parent.as_raw_fd(),
                    c(n)?.as_ptr(),
                    dir,
                    name("old", i).as_ptr(),
                    0,
                )
            });
            if linked.is_err() {
                let mode = st.as_ref().map_or(0o600, |st| st.st_mode & 0o7777);
                write_file(dir, &name("old", i), old, mode)?;
            }
        }
    }
    Ok(in_place)
}

/// Writes `bytes` into the file at `rel` in place (its other hard links see them).
fn write_through(beneath: &Beneath, rel: &Path, bytes: &[u8]) -> io::Result<()> {
    let (parent, n) = parent_of(beneath, rel)?;
    let fd = open_at(
        parent.as_raw_fd(),
        &c(n)?,
        libc::O_WRONLY | libc::O_NONBLOCK,
        0,
    )?;
    crate::fs::change::write::pwrite_all(&fd, bytes)?;
    // SAFETY: fd is valid.
    cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), bytes.len() as libc::off_t) })
}

/// The bytes of `name` in the commit's directory; `None` when it is gone.
fn staged(tx: RawFd, name: &CStr) -> io::Result<Option<Vec<u8>>> {
    match open_at(tx, name, libc::O_RDONLY | libc::O_NONBLOCK, 0) {
        Ok(fd) => {
            let mut bytes = Vec::new();
            io::Read::read_to_end(&mut std::fs::File::from(fd), &mut bytes)?;
            Ok(Some(bytes))
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Step 3, idempotent: removals, directories, renames.
fn apply(beneath: &Beneath, tx: RawFd, entries: &[Entry], dirs: &[PathBuf]) -> io::Result<()> {
    for (_, rel, new, _) in entries {
        if new.is_none() {
            let (parent, n) = match parent_of(beneath, rel) {
                Ok(p) => p,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
                    continue
                }
                Err(e) => return Err(e),
            };
            match unlink_at(parent.as_raw_fd(), &c(n)?, 0) {
                Err(e) if e.raw_os_error() != Some(libc::ENOENT) => return Err(e),
                _ => {}
            }
        }
    }
    for d in dirs {
        beneath.mkdir_all(d)?;
    }
    for (i, rel, new, in_place) in entries {
        if new.is_some() && *in_place {
            // Written through, then its staged copy removed: gone means done (a kill between
            // the two writes it again).
            let from = name("new", *i);
            if let Some(bytes) = staged(tx, &from)? {
                write_through(beneath, rel, &bytes)?;
                unlink_at(tx, &from, 0)?;
            }
        } else if new.is_some() {
            let from = name("new", *i);
            let (parent, n) = parent_of(beneath, rel)?;
            match rename_at(tx, &from, parent.as_raw_fd(), &c(n)?) {
                // Already renamed by the commit a kill interrupted.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                other => other?,
            }
        }
    }
    Ok(())
}

/// Puts every target back as it was (an error while applying): `old-<i>` renamed back (its
/// bytes written back in place for a file written in place), new files removed, the
/// directories made removed (when empty).
fn roll_back(
    beneath: &Beneath,
    tx: &Tx,
    targets: &[Target<'_>],
    in_place: &[bool],
    dirs: &[PathBuf],
) {
    for (i, t) in targets.iter().enumerate().rev() {
        if let (true, Some(old)) = (in_place[i], t.old) {
            let _ = write_through(beneath, t.rel, old);
            continue;
        }
        let Ok((parent, n)) = parent_of(beneath, t.rel) else {
            continue;
        };
        let Ok(n) = c(n) else { continue };
        if t.old.is_some() {
            let _ = rename_at(tx.dir.as_raw_fd(), &name("old", i), parent.as_raw_fd(), &n);
        } else if t.new.is_some() {
            // Only the file this commit put there (its staged name is gone).
            if open_at(tx.dir.as_raw_fd(), &name("new", i), libc::O_RDONLY, 0).is_err() {
                let _ = unlink_at(parent.as_raw_fd(), &n, 0);
            }
        }
    }
    for d in dirs.iter().rev() {
        if let Ok((parent, n)) = parent_of(beneath, d) {
            if let Ok(n) = c(n) {
                let _ = unlink_at(parent.as_raw_fd(), &n, libc::AT_REMOVEDIR);
            }
        }
    }
}

/// Finishes or drops every commit a dead process left (see the module doc). Commits still
/// running (their `lock` held) are left alone. A journal failing [`trusted`] is dropped
/// unapplied. Errors are ignored: the next call tries again.
pub fn recover(beneath: &Beneath, allowed: Allowed<'_>) {
    let Ok(state) = beneath.open(
        Path::new(JOURNAL_DIR),
        libc::O_RDONLY | libc::O_DIRECTORY,
        0,
    ) else {
        return;
    };
    for id in entries(state.as_raw_fd()) {
        let Ok(id_c) = c(&id) else { continue };
        let Ok(dir) = open_at(
            state.as_raw_fd(),
            &id_c,
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
        ) else {
            continue;
        };
        let Ok(lock) = open_at(
            dir.as_raw_fd(),
            c"lock",
            libc::O_RDWR | libc::O_CREAT,
            0o600,
        ) else {
            continue;
        };
        // SAFETY: lock is valid.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            continue; // a live commit
        }
        if let Some((entries, dirs)) = read_journal(dir.as_raw_fd())
            .filter(|(entries, dirs)| trusted(dir.as_raw_fd(), allowed, entries, dirs))
        {
            if apply(beneath, dir.as_raw_fd(), &entries, &dirs).is_err() {
                continue; // kept, to be finished by a later start
            }
            let _ = unlink_at(dir.as_raw_fd(), c"journal", 0);
        }
        clear(dir.as_raw_fd());
        let _ = unlink_at(state.as_raw_fd(), &id_c, libc::AT_REMOVEDIR);
    }
}

/// Whether `rel` is a plain relative path: not empty, no root, no `.` or `..` component.
fn plain(rel: &Path) -> bool {
    !rel.as_os_str().is_empty()
        && rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// Whether a journal may be finished: every path plain and `allowed`, every index distinct,
/// and every staged `new-<i>` still there hashing to what the journal recorded (one already
/// renamed is gone: a kill after that rename).
fn trusted(tx: RawFd, allowed: Allowed<'_>, entries: &[Entry], dirs: &[PathBuf]) -> bool {
    let mut seen = std::collections::HashSet::new();
    let paths_ok = entries
        .iter()
        .map(|(_, rel, _, _)| rel)
        .chain(dirs)
        .all(|rel| plain(rel) && allowed(rel))
        && entries.iter().all(|(i, _, _, _)| seen.insert(*i));
    paths_ok
        && entries.iter().all(|(i, _, new, _)| {
            let Some(want) = new else { return true };
            match open_at(tx, &name("new", *i), libc::O_RDONLY | libc::O_NONBLOCK, 0) {
                Ok(fd) => {
                    let mut bytes = Vec::new();
                    io::Read::read_to_end(&mut std::fs::File::from(fd), &mut bytes).is_ok()
                        && sha256(&bytes) == *want
                }
                Err(e) => e.raw_os_error() == Some(libc::ENOENT),
            }
        })
}

/// A complete journal's entries and directories; `None` without one.
fn read_journal(dir: RawFd) -> Option<(Vec<Entry>, Vec<PathBuf>)> {
    let fd = open_at(dir, c"journal", libc::O_RDONLY, 0).ok()?;
    let mut text = String::new();
    io::Read::read_to_string(&mut std::fs::File::from(fd), &mut text).ok()?;
    let mut lines = text.lines();
    if lines.next()? != HEADER {
        return None;
    }
    let (mut entries, mut dirs, mut complete) = (Vec::new(), Vec::new(), false);
    let path = |h: &str| unhex(h).map(|b| PathBuf::from(OsString::from_vec(b)));
    for line in lines {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts.as_slice() {
            ["f", i, rel, new] => {
                let new = match *new {
                    "-" => None,
                    h if h.len() == 64 && unhex(h).is_some() => Some(h.to_string()),
                    _ => return None,
                };
                entries.push((i.parse().ok()?, path(rel)?, new, false));
            }
            // Entry `i`, an update, is written in place.
            ["w", i] => {
                let i: usize = i.parse().ok()?;
                let entry = entries.iter_mut().find(|e| e.0 == i && e.2.is_some())?;
                entry.3 = true;
            }
            ["d", rel] => dirs.push(path(rel)?),
            ["end"] => complete = true,
            _ => return None,
        }
    }
    complete.then_some((entries, dirs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::root::path::Root;

    fn beneath(dir: &Path) -> Beneath {
        Root::new(dir.to_str().unwrap(), None)
            .unwrap()
            .open_root()
            .unwrap()
    }

    #[test]
    fn commits_moves_adds_and_deletes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "old a").unwrap();
        std::fs::write(d.path().join("gone"), "bye").unwrap();
        let b = beneath(d.path());
        let targets = [
            Target {
                rel: Path::new("a"),
                old: Some(b"old a"),
                new: Some(b"new a"),
                mode_from: None,
            },
            Target {
                rel: Path::new("gone"),
                old: Some(b"bye"),
                new: None,
                mode_from: None,
            },
            Target {
                rel: Path::new("x/y/new"),
                old: None,
                new: Some(b"n"),
                mode_from: None,
            },
        ];
        commit(&b, &|_| true, &targets, || Ok(()), |e| e).unwrap();
        assert_eq!(std::fs::read(d.path().join("a")).unwrap(), b"new a");
        assert!(!d.path().join("gone").exists());
        assert_eq!(std::fs::read(d.path().join("x/y/new")).unwrap(), b"n");
        assert_eq!(
            entries(
                b.open(
                    Path::new(JOURNAL_DIR),
                    libc::O_RDONLY | libc::O_DIRECTORY,
                    0
                )
                .unwrap()
                .as_raw_fd()
            ),
            Vec::<OsString>::new()
        );
    }

    #[test]
    fn a_file_with_other_links_is_written_in_place() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "old a").unwrap();
        std::fs::hard_link(d.path().join("a"), d.path().join("twin")).unwrap();
        std::fs::write(d.path().join("b"), "old b").unwrap();
        let b = beneath(d.path());
        let targets = [
            Target {
                rel: Path::new("a"),
                old: Some(b"old a"),
                new: Some(b"new a, longer"),
                mode_from: None,
            },
            Target {
                rel: Path::new("b"),
                old: Some(b"old b"),
                new: Some(b"new b"),
                mode_from: None,
            },
        ];
        commit(&b, &|_| true, &targets, || Ok(()), |e| e).unwrap();
        assert_eq!(
            std::fs::read(d.path().join("twin")).unwrap(),
            b"new a, longer"
        );
        assert_eq!(std::fs::read(d.path().join("b")).unwrap(), b"new b");
        // An error while applying writes its old bytes back in place too.
        let targets = [
            Target {
                rel: Path::new("a"),
                old: Some(b"new a, longer"),
                new: Some(b"x"),
                mode_from: None,
            },
            Target {
                rel: Path::new("b/under/a/file"),
                old: None,
                new: Some(b"x"),
                mode_from: None,
            },
        ];
        assert!(commit(&b, &|_| true, &targets, || Ok(()), |e| e).is_err());
        assert_eq!(
            std::fs::read(d.path().join("twin")).unwrap(),
            b"new a, longer"
        );
        assert_eq!(std::fs::read(d.path().join("a")).unwrap(), b"new a, longer");
    }

    #[test]
    fn recovery_writes_in_place_what_the_journal_says() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "half-writ").unwrap(); // a kill mid-write
        std::fs::hard_link(d.path().join("a"), d.path().join("twin")).unwrap();
        let b = beneath(d.path());
        let tx = d.path().join(JOURNAL_DIR).join("1-1-1");
        std::fs::create_dir_all(&tx).unwrap();
        std::fs::write(tx.join("lock"), "").unwrap();
        std::fs::write(tx.join("new-0"), "new").unwrap();
        std::fs::write(
            tx.join("journal"),
            format!("{HEADER}\nf 0 {} {}\nw 0\nend\n", hex(b"a"), sha256(b"new")),
        )
        .unwrap();
        recover(&b, &|_| true);
        assert_eq!(std::fs::read(d.path().join("twin")).unwrap(), b"new");
        assert_eq!(std::fs::read(d.path().join("a")).unwrap(), b"new");
        assert!(!tx.exists());
    }

    #[test]
    fn a_refused_check_changes_nothing() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "old").unwrap();
        let b = beneath(d.path());
        let targets = [Target {
            rel: Path::new("a"),
            old: Some(b"old"),
            new: Some(b"new"),
            mode_from: None,
        }];
        let r = commit(
            &b,
            &|_| true,
            &targets,
            || Err(io::Error::other("no")),
            |e| e,
        );
        assert!(r.is_err());
        assert_eq!(std::fs::read(d.path().join("a")).unwrap(), b"old");
    }

    #[test]
    fn an_error_while_applying_puts_every_file_back() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("gone"), "keep me").unwrap();
        std::fs::write(d.path().join("f"), "a file, not a directory").unwrap();
        let b = beneath(d.path());
        let targets = [
            Target {
                rel: Path::new("gone"),
                old: Some(b"keep me"),
                new: None,
                mode_from: None,
            },
            // Its parent is a file: making the directory fails after `gone` was removed.
            Target {
                rel: Path::new("f/x"),
                old: None,
                new: Some(b"x"),
                mode_from: None,
            },
        ];
        assert!(commit(&b, &|_| true, &targets, || Ok(()), |e| e).is_err());
        assert_eq!(std::fs::read(d.path().join("gone")).unwrap(), b"keep me");
        assert_eq!(
            std::fs::read(d.path().join("f")).unwrap(),
            b"a file, not a directory"
        );
        let state = b
            .open(
                Path::new(JOURNAL_DIR),
                libc::O_RDONLY | libc::O_DIRECTORY,
                0,
            )
            .unwrap();
        assert_eq!(entries(state.as_raw_fd()), Vec::<OsString>::new());
    }

    #[test]
    fn recovery_finishes_a_journaled_commit_and_drops_an_unjournaled_one() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "old").unwrap();
        std::fs::write(d.path().join("b"), "old b").unwrap();
        let b = beneath(d.path());
        // A commit killed after its journal, with one rename done.
        let state = d.path().join(JOURNAL_DIR);
        let tx = state.join("1-1-1");
        std::fs::create_dir_all(&tx).unwrap();
        std::fs::write(tx.join("lock"), "").unwrap();
        std::fs::write(tx.join("new-1"), "new b").unwrap();
        std::fs::write(d.path().join("a"), "new a").unwrap(); // new-0 already renamed
        std::fs::write(
            tx.join("journal"),
            format!(
                "{HEADER}\nf 0 {} {}\nf 1 {} {}\nf 2 {} -\nd {}\nend\n",
                hex(b"a"),
                sha256(b"new a"),
                hex(b"b"),
                sha256(b"new b"),
                hex(b"c"),
                hex(b"dir")
            ),
        )
        .unwrap();
        std::fs::write(d.path().join("c"), "to delete").unwrap();
        // A commit killed while staging.
        let early = state.join("1-1-2");
        std::fs::create_dir_all(&early).unwrap();
        std::fs::write(early.join("new-0"), "never").unwrap();
        recover(&b, &|_| true);
        assert_eq!(std::fs::read(d.path().join("a")).unwrap(), b"new a");
        assert_eq!(std::fs::read(d.path().join("b")).unwrap(), b"new b");
        assert!(!d.path().join("c").exists());
        assert!(d.path().join("dir").is_dir());
        assert!(!tx.exists() && !early.exists());
    }
}
