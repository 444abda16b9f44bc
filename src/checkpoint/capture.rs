//! Capturing a path's state beneath the root: `lstat` it (a parent that is a symlink or not a
//! directory means nothing is there as far as the tree goes), then keep a file's bytes in the
//! store (or only hash them), read a symlink's target, note a directory's mode. An entry whose
//! metadata equals the index's reuses the index's state without reading the file again.
//! Many paths are captured on several threads.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::index::Index;
use super::state::{lstat_at, Kind, Meta, State};
use super::store::Objects;
use crate::fs::root::path::Beneath;

/// How a capture treats a file's bytes.
#[derive(Clone, Copy)]
pub enum Bytes {
    /// Keep them in the store (up to `max_file_bytes`; beyond, the hash only).
    Keep(u64),
    /// Hash them only (a rewind plan's look at the current state).
    HashOnly,
}

/// A captured path: its metadata (`None`: nothing there) and state, and the bytes added to
/// the store.
pub type Captured = (Option<Meta>, State, Vec<(String, u64)>);

/// The parent directory of `rel` opened beneath the root, and `rel`'s last component.
pub fn parent(beneath: &Beneath, rel: &[u8]) -> std::io::Result<(OwnedFd, Vec<u8>)> {
    let (dir, name) = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&b""[..], rel),
    };
    let fd = beneath.open(
        Path::new(OsStr::from_bytes(dir)),
        libc::O_RDONLY | libc::O_DIRECTORY,
        0,
    )?;
    Ok((fd, name.to_vec()))
}

/// The directory a path is in: the root itself (its descriptor is the `Beneath`'s), or one
/// opened beneath it.
pub enum Dir {
    /// The root: no lookup, no descriptor of its own.
    Root,
    /// A directory below the root.
    Open(OwnedFd),
}

/// A file a fused call's commit changes, not read before it (see `around`): its metadata then,
/// and where it is, looked at again once the commit is done.
pub struct Deferred {
    /// Its metadata before the commit.
    pub meta: Meta,
    /// Its directory.
    pub dir: Dir,
    /// Its name there.
    pub name: Vec<u8>,
}

impl Dir {
    /// Its descriptor (the root's for [`Dir::Root`]).
    pub fn raw(&self, beneath: &Beneath) -> RawFd {
        match self {
            Dir::Root => beneath.raw(),
            Dir::Open(fd) => fd.as_raw_fd(),
        }
    }
}

/// [`parent`], the root itself not opened again (a file tool's path is often at the top).
pub fn parent_dir(beneath: &Beneath, rel: &[u8]) -> std::io::Result<(Dir, Vec<u8>)> {
    if rel.contains(&b'/') {
        let (fd, name) = parent(beneath, rel)?;
        return Ok((Dir::Open(fd), name));
    }
    Ok((Dir::Root, rel.to_vec()))
}

fn open_at(dir: RawFd, name: &[u8]) -> std::io::Result<OwnedFd> {
    let c = CString::new(name).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: dir is open; c is NUL-terminated; the descriptor returned is ours.
    let fd = unsafe {
        libc::openat(
            dir,
            c.as_ptr(),
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is fresh.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `readlinkat(dir, name)`.
pub fn read_link_at(dir: RawFd, name: &[u8]) -> std::io::Result<Vec<u8>> {
    let c = CString::new(name).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let mut buf = vec![0u8; 4096];
    // SAFETY: buf has buf.len() writable bytes; c is NUL-terminated.
    let n = unsafe { libc::readlinkat(dir, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// An unreadable file: recorded, never restorable.
fn unreadable(meta: &Meta) -> State {
    State::File {
        hash: "?".into(),
        size: meta.size,
        mode: meta.mode,
        stored: false,
    }
}

/// What looking at `rel` without reading a file found.
pub enum Looked {
    /// Its state is known: nothing there (or an entry kind checkpoints skip), a directory, a
    /// symlink, or a file whose metadata equals the index's.
    Known(Captured),
    /// A regular file to read: its metadata, its parent directory and name.
    File(Meta, Dir, Vec<u8>),
}

/// Looks at `rel` (`lstat`, a symlink's `readlink`; see the module doc) without reading a file.
pub fn look(beneath: &Beneath, index: Option<&Index>, rel: &[u8]) -> Looked {
    let nothing = || Looked::Known((None, State::Absent, Vec::new()));
    let Ok((dir, name)) = parent_dir(beneath, rel) else {
        return nothing();
    };
    let Ok(st) = lstat_at(dir.raw(beneath), &name) else {
        return nothing();
    };
    let Some(meta) = Meta::of(&st) else {
        return nothing(); // a FIFO, socket or device: not tracked
    };
    if let Some((m, s)) = index.and_then(|i| i.get(rel)) {
        if *m == meta && !matches!(s, State::File { hash, .. } if hash == "?") {
            return Looked::Known((Some(meta), s.clone(), Vec::new()));
        }
    }
    match meta.kind {
        Kind::Dir => Looked::Known((Some(meta), State::Dir { mode: meta.mode }, Vec::new())),
        Kind::Symlink => match read_link_at(dir.raw(beneath), &name) {
            Ok(target) => Looked::Known((Some(meta), State::Symlink { target }, Vec::new())),
            Err(_) => nothing(),
        },
        Kind::File => Looked::File(meta, dir, name),
    }
}

/// Captures the state of `rel` (see the module doc). Errors of the store (a full disk) are
/// returned; a file that cannot be read is recorded as unrestorable (hash `?`).
pub fn capture(
    beneath: &Beneath,
    objects: &Objects,
    index: Option<&Index>,
    rel: &[u8],
    bytes: Bytes,
) -> std::io::Result<Captured> {
    let (meta, dir, name) = match look(beneath, index, rel) {
        Looked::Known(captured) => return Ok(captured),
        Looked::File(meta, dir, name) => (meta, dir, name),
    };
    let Ok(fd) = open_at(dir.raw(beneath), &name) else {
        return Ok((Some(meta), unreadable(&meta), Vec::new()));
    };
    // The open file's own metadata: what was read.
    let meta = crate::fs::root::path::fstat(fd.as_raw_fd())
        .ok()
        .and_then(|st| Meta::of(&st))
        .unwrap_or(meta);
    let max = match bytes {
        Bytes::Keep(max) => max,
        Bytes::HashOnly => 0,
    };
    match objects.keep_fd(&fd, meta.size, max) {
        Ok(kept) => {
            let added = if kept.added > 0 {
                vec![(kept.hash.clone(), kept.added)]
            } else {
                Vec::new()
            };
            let state = State::File {
                hash: kept.hash,
                size: kept.size,
                mode: meta.mode,
                stored: kept.stored,
            };
            Ok((Some(meta), state, added))
        }
        Err(e) if is_store_error(&e) => Err(e),
        Err(_) => Ok((Some(meta), unreadable(&meta), Vec::new())),
    }
}

/// Whether an error is the store's own (a full disk), not the file's.
fn is_store_error(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EROFS)
    )
}

/// Paths from this many on are captured on several threads.
pub const PARALLEL_MIN: usize = 64;

/// Captures every path of `rels` (on several threads when there are many), in order.
pub fn capture_all(
    beneath: &Beneath,
    objects: &Objects,
    index: Option<&Index>,
    rels: &[Vec<u8>],
    bytes: Bytes,
    threads: usize,
) -> std::io::Result<Vec<Captured>> {
    if rels.len() < PARALLEL_MIN || threads <= 1 {
        return rels
            .iter()
            .map(|r| capture(beneath, objects, index, r, bytes))
            .collect();
    }
    let per = rels.len().div_ceil(threads);
    let parts: Vec<std::io::Result<Vec<Captured>>> = std::thread::scope(|s| {
        let handles: Vec<_> = rels
            .chunks(per)
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|r| capture(beneath, objects, index, r, bytes))
                        .collect::<std::io::Result<Vec<Captured>>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut out = Vec::with_capacity(rels.len());
    for p in parts {
        out.extend(p?);
    }
    Ok(out)
}
