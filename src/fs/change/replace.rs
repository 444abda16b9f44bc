//! Crash-safe writes (issue 9, section 2): a process killed at any moment of a `write_file`
//! or `edit_file` leaves the file with exactly its old or exactly its new content.
//!
//! The new bytes go to a temporary file in the target's directory, which replaces the target
//! (`renameat`) only once it is complete. Where the filesystem supports it the temporary file
//! is nameless while it is written (`O_TMPFILE`), so a kill mid-write leaves nothing; it gets a
//! name, `.<name>.hrs-tmp` (hidden: the walkers skip dot entries), only for the instant
//! between `linkat` and `renameat`; elsewhere it is created under that name. Each writer holds
//! an `flock` on its temporary file, so the next write of the same file removes a leftover
//! whose writer died (its lock is free) and leaves a live writer's alone (then using a unique
//! name, `.<name>.hrs-tmp.<pid>.<n>`). A new file is linked in create-only (`linkat`, or
//! `renameat2(RENAME_NOREPLACE)`): if one appeared meanwhile, the caller learns so and never
//! replaces it blindly. A failed write (a full disk) removes its temporary file: nothing new
//! is left and the old content is untouched.
//!
//! No `fsync`: a killed process's writes are in the page cache and reach the file system
//! anyway, so a kill can never expose a partial file; durability across a power loss is what
//! `cp` and `perl -pi` leave to the system too, and an `fsync` would multiply a write's time.
//!
//! The replacement keeps the old file's mode and owner (`fchown`, then `fchmod`). Where it
//! cannot (an owner this process may not give, a directory it may not create in, no
//! `renameat` support), the caller writes in place instead ([`Replaced::InPlace`]); it also
//! does so for a file with other hard links, which must keep seeing the change.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::fs::root::path::{fstat, Beneath};

/// The suffix of a temporary file's name: `.<name>.hrs-tmp`.
pub const TEMP_SUFFIX: &str = ".hrs-tmp";

/// Whether `O_TMPFILE` plus linking through `/proc/self/fd` failed once (then: named temps).
static NO_TMPFILE: AtomicBool = AtomicBool::new(false);
/// Distinguishes this process's busy-fallback names.
static SEQUENCE: AtomicUsize = AtomicUsize::new(0);

/// How a replacement went.
#[derive(Debug, PartialEq, Eq)]
pub enum Replaced {
    /// The target now has the new content.
    Done,
    /// Not done, nothing changed: the caller writes in place (see the module doc).
    InPlace,
    /// The name no longer refers to the file that was checked: nothing changed.
    Swapped,
    /// The caller's check, made once the new content was written, failed: nothing changed.
    Refused,
}

/// How a create-only write went.
#[derive(Debug, PartialEq, Eq)]
pub enum Created {
    /// The new file is in place, complete.
    Done,
    /// Something appeared at the name meanwhile: nothing changed.
    Appeared,
    /// The directory does not allow it (no temporary files, no links): nothing changed.
    InPlace,
}

fn cvt(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

/// `.<name>.hrs-tmp`, cut to fit `NAME_MAX`.
fn temp_name(name: &OsStr) -> CString {
    let bytes = name.as_bytes();
    let room = crate::fs::root::path::NAME_MAX - 1 - TEMP_SUFFIX.len() - 24; // 24: `.<pid>.<n>`
    let mut out = Vec::with_capacity(bytes.len() + 16);
    out.push(b'.');
    out.extend_from_slice(&bytes[..bytes.len().min(room)]);
    out.extend_from_slice(TEMP_SUFFIX.as_bytes());
    CString::new(out).expect("a file name has no NUL")
}

fn unique(base: &CStr) -> CString {
    let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let mut out = base.to_bytes().to_vec();
    out.extend_from_slice(format!(".{}.{n}", std::process::id()).as_bytes());
    CString::new(out).expect("no NUL")
}

fn open_at(dir: RawFd, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    // SAFETY: name is NUL-terminated; a valid fd is owned on success.
    let fd = unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by openat.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn stat_at(dir: RawFd, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: st is written by fstatat before it is read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    cvt(unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

fn unlink_at(dir: RawFd, name: &CStr) {
    // SAFETY: name is NUL-terminated.
    unsafe { libc::unlinkat(dir, name.as_ptr(), 0) };
}

fn lock(fd: &OwnedFd) -> bool {
    // SAFETY: fd is valid.
    unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Removes the leftover at `name` when the writer that made it is gone (its `flock` is free).
/// Returns whether the name is free to use now.
fn clear_stale(dir: RawFd, name: &CStr) -> bool {
    let Ok(fd) = open_at(
        dir,
        name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
        0,
    ) else {
        return stat_at(dir, name).is_err(); // gone meanwhile: free
    };
    let (Ok(ours), true) = (fstat(fd.as_raw_fd()), lock(&fd)) else {
        return false; // a live writer's
    };
    if (ours.st_mode & libc::S_IFMT) != libc::S_IFREG {
        return false;
    }
    match stat_at(dir, name) {
        Ok(now) if (now.st_dev, now.st_ino) == (ours.st_dev, ours.st_ino) => {
            unlink_at(dir, name);
            true
        }
        _ => false,
    }
}

/// A temporary file in `dir`, locked; unlinked on drop while it still has a temporary name.
struct Temp<'a> {
    dir: RawFd,
    fd: OwnedFd,
    /// Its name, once it has one that is not the target's.
    name: Option<CString>,
    base: &'a CStr,
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            unlink_at(self.dir, &name);
        }
    }
}

impl<'a> Temp<'a> {
    /// A nameless (`O_TMPFILE`) or named temporary file with `mode` (the umask applies).
    fn create(dir: RawFd, base: &'a CStr, mode: libc::mode_t) -> io::Result<Temp<'a>> {
        #[cfg(target_os = "linux")]
        if !NO_TMPFILE.load(Ordering::Relaxed) {
            match open_at(dir, c".", libc::O_TMPFILE | libc::O_RDWR, mode) {
                Ok(fd) => {
                    lock(&fd);
                    return Ok(Temp {
                        dir,
                        fd,
                        name: None,
                        base,
                    });
                }
                Err(e) if matches!(errno(&e), libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL) => {
                    NO_TMPFILE.store(true, Ordering::Relaxed);
                }
                Err(e) => return Err(e),
            }
        }
        let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        let mut name = base.to_owned();
        for attempt in 0..3 {
            match open_at(dir, &name, flags, mode) {
                Ok(fd) => {
                    lock(&fd);
                    return Ok(Temp {
                        dir,
                        fd,
                        name: Some(name),
                        base,
                    });
                }
                Err(e) if errno(&e) == libc::EEXIST => {
                    if attempt > 0 || !clear_stale(dir, &name) {
                        name = unique(base);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::from_raw_os_error(libc::EEXIST))
    }

    /// Links a nameless temporary file at `to` (`EEXIST` when taken).
    fn link_nameless(&self, to: &CStr) -> io::Result<()> {
        let proc = CString::new(format!("/proc/self/fd/{}", self.fd.as_raw_fd())).expect("no NUL");
        // SAFETY: both names are NUL-terminated; dir is a valid directory descriptor.
        cvt(unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                proc.as_ptr(),
                self.dir,
                to.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        })
    }

    /// Gives a nameless temporary file its temporary name (a leftover cleared, a busy one avoided).
    fn name_it(&mut self) -> io::Result<()> {
        if self.name.is_some() {
            return Ok(());
        }
        let mut name = self.base.to_owned();
        for attempt in 0..3 {
            match self.link_nameless(&name) {
                Ok(()) => {
                    self.name = Some(name);
                    return Ok(());
                }
                Err(e) if errno(&e) == libc::EEXIST => {
                    if attempt > 0 || !clear_stale(self.dir, &name) {
                        name = unique(self.base);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::from_raw_os_error(libc::EEXIST))
    }

    fn write_all(&self, content: &[u8]) -> io::Result<()> {
        crate::fs::change::write::pwrite_all(&self.fd, content)
    }
}

/// `/proc/self/fd` linking (or `O_TMPFILE`) does not work here: named temporary files from now on.
fn tmpfile_unusable(e: &io::Error) -> bool {
    matches!(
        errno(e),
        libc::ENOENT | libc::EPERM | libc::EACCES | libc::EXDEV | libc::ENOTDIR
    )
}

/// The directory of `rel` beneath the root and its last component.
pub fn parent_of<'r>(beneath: &Beneath, rel: &'r Path) -> io::Result<(OwnedFd, &'r OsStr)> {
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EISDIR))?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    let dir = beneath.open(parent, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    Ok((dir, name))
}

/// Whether a write error means "this directory cannot hold a temporary file", not "the disk
/// is full": then the caller writes in place, as it would have before.
fn cannot_create_here(e: &io::Error) -> bool {
    matches!(
        errno(e),
        libc::EACCES | libc::EPERM | libc::EROFS | libc::EMLINK
    )
}

/// Replaces the content of the regular file `name` in `dir`, last seen as `old` (its
/// `fstat`), with `content`, atomically: see the module doc. `verify` runs once the new
/// content is written, right before the rename (`Refused` when it says no: the caller's
/// content check, overlapped with the write); `Swapped` when the name no longer refers to
/// that file then.
///
/// Errors: the write's (a full disk: `ENOSPC`, `EDQUOT`, `EFBIG`), with nothing left behind.
pub fn replace(
    dir: &OwnedFd,
    name: &OsStr,
    old: &libc::stat,
    content: &[u8],
    verify: impl FnOnce() -> bool,
) -> io::Result<Replaced> {
    let mut verify = Some(verify);
    let target =
        CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let base = temp_name(name);
    let dir = dir.as_raw_fd();
    for _ in 0..2 {
        let mut temp = match Temp::create(dir, &base, 0o600) {
            Ok(t) => t,
            Err(e) if cannot_create_here(&e) => return Ok(Replaced::InPlace),
            Err(e) => return Err(e),
        };
        let st = fstat(temp.fd.as_raw_fd())?;
        if (st.st_uid, st.st_gid) != (old.st_uid, old.st_gid) {
            // SAFETY: fd is valid.
            if unsafe { libc::fchown(temp.fd.as_raw_fd(), old.st_uid, old.st_gid) } != 0 {
                return Ok(Replaced::InPlace); // not ours to give: keep the owner by writing in place
            }
        }
        // SAFETY: fd is valid. After fchown, which clears set-id bits.
        cvt(unsafe { libc::fchmod(temp.fd.as_raw_fd(), old.st_mode & 0o7777) })?;
        temp.write_all(content)?;
        if let Err(e) = temp.name_it() {
            if temp.name.is_none() && tmpfile_unusable(&e) {
                NO_TMPFILE.store(true, Ordering::Relaxed);
                continue; // again, named from the start
            }
            return Err(e);
        }
        if !verify.take().is_some_and(|verify| verify()) {
            return Ok(Replaced::Refused);
        }
        match stat_at(dir, &target) {
            Ok(now) if (now.st_dev, now.st_ino) == (old.st_dev, old.st_ino) => {}
            _ => return Ok(Replaced::Swapped),
        }
        let from = temp.name.as_ref().expect("named above");
        // SAFETY: names are NUL-terminated; dir is valid.
        match cvt(unsafe { libc::renameat(dir, from.as_ptr(), dir, target.as_ptr()) }) {
            Ok(()) => {
                temp.name = None; // it is the target now
                return Ok(Replaced::Done);
            }
            Err(e) if matches!(errno(&e), libc::EXDEV | libc::EBUSY) => {
                return Ok(Replaced::InPlace)
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Replaced::InPlace)
}

/// `renameat2(RENAME_NOREPLACE)`; `EINVAL`/`ENOSYS` where unsupported.
fn rename_noreplace(dir: RawFd, from: &CStr, to: &CStr) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        const RENAME_NOREPLACE: libc::c_uint = 1;
        // SAFETY: names are NUL-terminated; dir is valid.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                dir,
                from.as_ptr(),
                dir,
                to.as_ptr(),
                RENAME_NOREPLACE,
            )
        };
        cvt(rc as libc::c_int)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (dir, from, to);
        Err(io::Error::from_raw_os_error(libc::EINVAL))
    }
}

/// Creates the regular file `name` in `dir` with `content`, complete or not at all, and only
/// if nothing is there: see the module doc. Mode `0o666` less the umask, as `open` gives.
///
/// Errors: the write's (a full disk), with nothing left behind.
pub fn create(dir: &OwnedFd, name: &OsStr, content: &[u8]) -> io::Result<Created> {
    let target =
        CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let base = temp_name(name);
    let dir = dir.as_raw_fd();
    for _ in 0..2 {
        let mut temp = match Temp::create(dir, &base, 0o666) {
            Ok(t) => t,
            Err(e) if cannot_create_here(&e) => return Ok(Created::InPlace),
            Err(e) => return Err(e),
        };
        temp.write_all(content)?;
        let Some(from) = temp.name.clone() else {
            match temp.link_nameless(&target) {
                Ok(()) => return Ok(Created::Done),
                Err(e) if errno(&e) == libc::EEXIST => return Ok(Created::Appeared),
                Err(e) if tmpfile_unusable(&e) => {
                    NO_TMPFILE.store(true, Ordering::Relaxed);
                    continue;
                }
                Err(e) => return Err(e),
            }
        };
        match rename_noreplace(dir, &from, &target) {
            Ok(()) => {
                temp.name = None;
                return Ok(Created::Done);
            }
            Err(e) if errno(&e) == libc::EEXIST => return Ok(Created::Appeared),
            Err(e) if matches!(errno(&e), libc::EINVAL | libc::ENOSYS) => {}
            Err(e) => return Err(e),
        }
        // SAFETY: names are NUL-terminated; dir is valid.
        return match cvt(unsafe { libc::linkat(dir, from.as_ptr(), dir, target.as_ptr(), 0) }) {
            Ok(()) => Ok(Created::Done), // the temporary name is unlinked on drop
            Err(e) if errno(&e) == libc::EEXIST => Ok(Created::Appeared),
            Err(_) => Ok(Created::InPlace),
        };
    }
    Ok(Created::InPlace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn dir_fd(p: &Path) -> OwnedFd {
        fs::File::open(p).unwrap().into()
    }

    fn names(p: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replace_keeps_mode_and_leaves_no_temp() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("a.txt");
        fs::write(&f, "old").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
        let before = fs::metadata(&f).unwrap();
        let st = stat_at(dir_fd(d.path()).as_raw_fd(), c"a.txt").unwrap();
        let r = replace(&dir_fd(d.path()), OsStr::new("a.txt"), &st, b"new", || true).unwrap();
        assert_eq!(r, Replaced::Done);
        let after = fs::metadata(&f).unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"new");
        assert_eq!(after.mode() & 0o7777, 0o640);
        assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
        assert_ne!(after.ino(), before.ino());
        assert_eq!(names(d.path()), ["a.txt"]);
    }

    #[test]
    fn a_failed_check_changes_nothing() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("a.txt"), "old").unwrap();
        let dir = dir_fd(d.path());
        let st = stat_at(dir.as_raw_fd(), c"a.txt").unwrap();
        let r = replace(&dir, OsStr::new("a.txt"), &st, b"new", || false).unwrap();
        assert_eq!(r, Replaced::Refused);
        assert_eq!(fs::read(d.path().join("a.txt")).unwrap(), b"old");
        assert_eq!(names(d.path()), ["a.txt"]);
    }

    #[test]
    fn replace_refuses_a_swapped_name() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("a.txt"), "old").unwrap();
        let st = stat_at(dir_fd(d.path()).as_raw_fd(), c"a.txt").unwrap();
        fs::remove_file(d.path().join("a.txt")).unwrap();
        fs::write(d.path().join("a.txt"), "other").unwrap();
        let r = replace(&dir_fd(d.path()), OsStr::new("a.txt"), &st, b"new", || true).unwrap();
        // (A new inode may reuse the number; then the rename goes ahead, as for the same file.)
        if r == Replaced::Swapped {
            assert_eq!(fs::read(d.path().join("a.txt")).unwrap(), b"other");
        }
        assert_eq!(names(d.path()), ["a.txt"]);
    }

    #[test]
    fn create_is_create_only() {
        let d = tempfile::tempdir().unwrap();
        let r = create(&dir_fd(d.path()), OsStr::new("n.txt"), b"x").unwrap();
        assert_eq!(r, Created::Done);
        assert_eq!(fs::read(d.path().join("n.txt")).unwrap(), b"x");
        let r = create(&dir_fd(d.path()), OsStr::new("n.txt"), b"y").unwrap();
        assert_eq!(r, Created::Appeared);
        assert_eq!(fs::read(d.path().join("n.txt")).unwrap(), b"x");
        assert_eq!(names(d.path()), ["n.txt"]);
    }

    #[test]
    fn a_dead_writers_leftover_is_removed_a_live_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("a.txt"), "old").unwrap();
        // A leftover nobody holds a lock on: removed by the next replacement of a.txt.
        fs::write(d.path().join(".a.txt.hrs-tmp"), "partial").unwrap();
        NO_TMPFILE.store(true, Ordering::Relaxed);
        let dir = dir_fd(d.path());
        let st = stat_at(dir.as_raw_fd(), c"a.txt").unwrap();
        assert_eq!(
            replace(&dir, OsStr::new("a.txt"), &st, b"new", || true).unwrap(),
            Replaced::Done
        );
        assert_eq!(names(d.path()), ["a.txt"]);
        // A live writer's (locked) temporary file is left alone.
        let held = fs::File::create(d.path().join(".a.txt.hrs-tmp")).unwrap();
        let held: OwnedFd = held.into();
        assert!(lock(&held));
        let st = stat_at(dir.as_raw_fd(), c"a.txt").unwrap();
        assert_eq!(
            replace(&dir, OsStr::new("a.txt"), &st, b"newer", || true).unwrap(),
            Replaced::Done
        );
        NO_TMPFILE.store(false, Ordering::Relaxed);
        assert_eq!(names(d.path()), [".a.txt.hrs-tmp", "a.txt"]);
        assert_eq!(fs::read(d.path().join("a.txt")).unwrap(), b"newer");
    }
}
