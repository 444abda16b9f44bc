//! One directory of a walk at the system-call level: opened beneath its parent's descriptor
//! (a symlink refused), its own `fstat`, its names read into one buffer, its entries
//! `lstat`ed by name, and whether its file system changes a directory's times with its entries.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Opens the directory `name` (one component, from a listing of `parent`) of the directory
/// open at `parent`: `openat(O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)`, so a directory swapped
/// for a symlink since it was listed fails (`ELOOP`/`ENOTDIR`) rather than being followed.
/// `parent` is inside the root, and `name` has no `/` and is not `..`: the result is too.
pub fn open_child(parent: &OwnedFd, name: &CStr) -> io::Result<OwnedFd> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: name is NUL-terminated; the descriptor returned is owned by the OwnedFd.
    let fd = unsafe { libc::openat(parent.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstat` of the open `fd`.
pub fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: st is written by fstat before it is read.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`, with no allocation.
pub fn lstat_at(dir: &OwnedFd, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: st is written by fstatat before it is read; name is NUL-terminated.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// Appends the names of the directory open at `fd` (without `.` and `..`) to `names`, each
/// followed by a NUL, and each name's start and length (NUL excluded) to `spots`.
pub fn read_names(
    fd: &OwnedFd,
    names: &mut Vec<u8>,
    spots: &mut Vec<(u32, u32)>,
) -> io::Result<()> {
    // The listing reads through a duplicate (fdopendir owns and closes it); `fd` stays open
    // for the `lstat`s and the children's `openat`s, which do not use the shared offset.
    // SAFETY: fd is an open descriptor; the duplicate is owned below.
    let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: dup is an open directory descriptor; fdopendir takes ownership of it.
    let dir = unsafe { libc::fdopendir(dup) };
    if dir.is_null() {
        let err = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so dup is still ours to close.
        unsafe { libc::close(dup) };
        return Err(err);
    }
    loop {
        // SAFETY: dir is a valid DIR*; the entry is valid until the next readdir.
        let ent = unsafe { libc::readdir(dir) };
        if ent.is_null() {
            break;
        }
        // SAFETY: d_name is NUL-terminated.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) }.to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        spots.push((names.len() as u32, name.len() as u32));
        names.extend_from_slice(name);
        names.push(0);
    }
    // SAFETY: dir came from fdopendir and is closed once.
    unsafe { libc::closedir(dir) };
    Ok(())
}

/// `statfs` magics of local file systems that change a directory's modification and change
/// times whenever an entry is added, removed or renamed in it (`linux/magic.h`): ext2/3/4,
/// xfs, btrfs, tmpfs, f2fs, overlayfs, zfs, bcachefs. Elsewhere (network and FUSE file
/// systems, whose times may be cached or made up) a directory's times do not vouch for its names.
#[cfg(target_os = "linux")]
const MTIME_TRACKING_MAGICS: [u32; 8] = [
    0xef53,      // ext2/3/4
    0x5846_5342, // xfs
    0x9123_683e, // btrfs
    0x0102_1994, // tmpfs
    0xf2f5_2010, // f2fs
    0x794c_7630, // overlayfs
    0x2fc1_2fc1, // zfs
    0xca45_1a4e, // bcachefs
];

/// Whether the file system of the open `fd` changes a directory's times with its entries
/// (see `MTIME_TRACKING_MAGICS`); false when unknown or off Linux.
pub fn times_track_entries(fd: &OwnedFd) -> bool {
    #[cfg(target_os = "linux")]
    {
        crate::fs::root::pseudo::fs_magic(fd.as_raw_fd())
            .is_some_and(|m| MTIME_TRACKING_MAGICS.contains(&m))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = fd;
        false
    }
}
