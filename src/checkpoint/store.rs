//! The object store: file contents kept by their SHA-256 under `objects/<2 hex>/<62 hex>`.
//!
//! An object is written to `tmp/` first and renamed into place once complete, so a killed
//! process never leaves a partial object under its name (leftovers in `tmp/` are removed at
//! the next open). A big file is cloned (`FICLONE`, a reflink sharing its extents) where the
//! file system can, else copied; never hard-linked, since an in-place write through a link
//! would change the kept bytes. The object's name is the hash of what was written, read
//! back from the copy itself, so a file changing while it is kept never mislabels an object.
//! No `fsync`, as for writes (`fs/change/replace.rs`): a kill cannot lose what was written.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use super::later::{Later, Line, Shared};

/// Files up to this size are read whole, hashed, and written only when new.
const SMALL: u64 = 1 << 20;
/// Read size for big files.
const CHUNK: usize = 1 << 20;

static SEQ: AtomicU64 = AtomicU64::new(0);

/// What keeping a file gave: its hash, size and whether the bytes are in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// SHA-256 of the bytes, 64 hex chars.
    pub hash: String,
    /// Bytes read.
    pub size: u64,
    /// Whether the object is in the store (false above `max_file_bytes`).
    pub stored: bool,
    /// Bytes this call added to the store (0 when the object was there).
    pub added: u64,
}

/// The content-addressed objects of one checkpoint store.
pub struct Objects {
    dir: PathBuf,
    tmp: PathBuf,
    later: Later,
}

/// The 64 hex chars of a SHA-256 digest: an object's name.
pub fn hex(digest: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * digest.len());
    for &b in digest {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// `ioctl(dst, FICLONE, src)`: whether `dst` now shares `src`'s extents.
fn reflink(dst: RawFd, src: RawFd) -> bool {
    #[cfg(target_os = "linux")]
    {
        const FICLONE: libc::c_ulong = 0x4004_9409;
        // SAFETY: both are open descriptors; FICLONE takes the source fd as its argument.
        unsafe { libc::ioctl(dst, FICLONE as _, src) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (dst, src);
        false
    }
}

/// Reads `file` from its start to its end, feeding each chunk to `f`.
fn read_all(file: &mut File, mut f: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<u64> {
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total += n as u64;
        f(&buf[..n])?;
    }
}

fn object_path(dir: &Path, hash: &str) -> PathBuf {
    let (a, b) = hash.split_at(2.min(hash.len()));
    dir.join(a).join(b)
}

/// A fresh temporary file in `tmp`.
fn temp_in(tmp: &Path) -> io::Result<(File, PathBuf)> {
    let name = format!(
        "{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let path = tmp.join(name);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .create_new(true)
        .open(&path)?;
    Ok((file, path))
}

/// Writes `data` as the new object `hash` in `dir` through a temporary file in `tmp` (nothing
/// left there on failure). Returns true (it was added).
fn write_new(dir: &Path, tmp: &Path, hash: &str, data: &[u8]) -> io::Result<bool> {
    let (mut file, tmp_path) = temp_in(tmp)?;
    let result = file
        .write_all(data)
        .and_then(|()| std::fs::rename(&tmp_path, object_path(dir, hash)));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp_path);
    }
    result.map(|()| true)
}

/// [`write_new`] unless object `hash` is there: what the writer thread does.
fn write_object(dir: &Path, tmp: &Path, hash: &str, data: &[u8]) -> io::Result<()> {
    if object_path(dir, hash).exists() {
        return Ok(());
    }
    write_new(dir, tmp, hash, data).map(|_| ())
}

/// A temporary file left for good: its name's process (`<pid>-<n>`, [`temp_in`]) is gone, or it
/// is over an hour old (a pid used again). One of this process (another store of the same
/// directory writing it) or of another live process is being written.
fn stale_temporary(entry: &std::fs::DirEntry) -> bool {
    const LEFT_FOR_GOOD: std::time::Duration = std::time::Duration::from_secs(3600);
    let old = entry
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| std::time::SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age > LEFT_FOR_GOOD);
    let name = entry.file_name();
    let pid = name
        .to_str()
        .and_then(|n| n.split_once('-'))
        .and_then(|(pid, _)| pid.parse::<libc::pid_t>().ok())
        .filter(|pid| *pid > 0);
    match pid {
        None => true,
        Some(pid) if pid as u32 == std::process::id() => old,
        Some(pid) => old || crate::process::retention::gone(pid),
    }
}

impl Objects {
    /// The store in `dir` (created, with `objects/` and `tmp/`, if missing); a leftover
    /// temporary file of a killed process is removed ([`stale_temporary`]), never one another
    /// live process is writing (opening takes no lock).
    pub fn open(dir: &Path) -> io::Result<Objects> {
        let objects = dir.join("objects");
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&objects)?;
        std::fs::create_dir_all(&tmp)?;
        // The 256 fan-out directories, made once (not checked per object).
        for i in 0..256 {
            let sub = objects.join(format!("{i:02x}"));
            if let Err(e) = std::fs::create_dir(&sub) {
                if e.kind() != io::ErrorKind::AlreadyExists {
                    return Err(e);
                }
            }
        }
        for entry in std::fs::read_dir(&tmp)? {
            let entry = entry?;
            if stale_temporary(&entry) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let later = Later::new(objects.clone(), tmp.clone(), write_object);
        Ok(Objects {
            dir: objects,
            tmp,
            later,
        })
    }

    /// The path of object `hash`.
    pub fn path(&self, hash: &str) -> PathBuf {
        object_path(&self.dir, hash)
    }

    /// Whether object `hash` is in the store (or queued to be written, see [`Objects::later`]).
    pub fn has(&self, hash: &str) -> bool {
        hash.len() == 64 && (self.later.is_pending(hash) || self.path(hash).exists())
    }

    /// Keeps `data`, whose SHA-256 is `hash` (64 hex chars), off the call's path: written by the
    /// store's writer thread ([`super::later`]), which finds an object there already and leaves
    /// it. Returns the bytes this adds to the store (0 when the object is queued already). The
    /// caller knows the object is not among the store's (its sizes): no look at `objects/`.
    pub fn later(&self, hash: &str, data: Shared) -> u64 {
        let size = (*data).as_ref().len() as u64;
        if self.later.queue_object(hash.to_string(), data) {
            size
        } else {
            0
        }
    }

    /// Appends the line `line()` makes to the file at `path` (existing) once everything queued
    /// before it by [`Objects::later`] is written, then runs `then` (see
    /// [`Objects::then_later`]): off the call's path, one wake-up of the writer thread (see
    /// [`super::later`]).
    pub fn append_then_later(&self, path: PathBuf, line: Line, then: Box<dyn FnOnce() + Send>) {
        self.later.queue_append_then(path, line, then);
    }

    /// Whether nothing written off the call's path is queued or being written.
    pub fn later_idle(&self) -> bool {
        self.later.is_idle()
    }

    /// Whether a write of the writer thread failed since the last flush.
    pub fn later_failed(&self) -> bool {
        self.later.failed()
    }

    /// Runs `then` on the writer thread once everything queued before it is done (see
    /// [`super::later`]).
    pub fn then_later(&self, then: Box<dyn FnOnce() + Send>) {
        self.later.queue_then(then);
    }

    /// Waits until everything queued by [`Objects::later`] and [`Objects::append_then_later`] is
    /// written.
    ///
    /// Errors: the first write that failed since the last flush (a full disk).
    pub fn flush(&self) -> io::Result<()> {
        self.later.flush()
    }

    /// Opens object `hash` for reading.
    pub fn open_object(&self, hash: &str) -> io::Result<File> {
        File::open(self.path(hash))
    }

    /// A fresh temporary file in `tmp/`.
    fn temp(&self) -> io::Result<(File, PathBuf)> {
        temp_in(&self.tmp)
    }

    /// Moves the complete temporary file `tmp` into place as object `hash` (dropping it when
    /// the object is there already). Returns whether it was added.
    fn settle(&self, tmp: &Path, hash: &str, checked: bool) -> io::Result<bool> {
        let dest = self.path(hash);
        if !checked && dest.exists() {
            std::fs::remove_file(tmp)?;
            return Ok(false);
        }
        // Two threads keeping the same new bytes both rename: the second replaces an identical
        // object.
        std::fs::rename(tmp, dest)?;
        Ok(true)
    }

    /// Keeps the bytes of the open regular file `src` (read from its start; `size` is its
    /// `st_size`): hashed only when `size > max_file_bytes`, else stored.
    ///
    /// Errors: the read's or the store's (a full disk), nothing left in `tmp/`.
    pub fn keep_fd(&self, src: &OwnedFd, size: u64, max_file_bytes: u64) -> io::Result<Kept> {
        // SAFETY: dup'ed so the caller's descriptor stays open and ours is closed on drop.
        let dup = unsafe { libc::dup(src.as_raw_fd()) };
        if dup < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: dup is a fresh descriptor nobody else owns.
        let mut file = unsafe { File::from_raw_fd(dup) };
        if size > max_file_bytes || max_file_bytes == 0 {
            let mut h = Sha256::new();
            let n = read_all(&mut file, |c| {
                h.update(c);
                Ok(())
            })?;
            return Ok(Kept {
                hash: hex(&h.finalize()),
                size: n,
                stored: false,
                added: 0,
            });
        }
        if size <= SMALL {
            let mut data = Vec::with_capacity(size as usize + 1);
            file.read_to_end(&mut data)?;
            if data.len() as u64 > max_file_bytes {
                return Ok(Kept {
                    hash: hex(&Sha256::digest(&data)),
                    size: data.len() as u64,
                    stored: false,
                    added: 0,
                });
            }
            return self.keep_bytes(&data);
        }
        let (mut tmp, tmp_path) = self.temp()?;
        let result = (|| {
            let mut h = Sha256::new();
            let n = if reflink(tmp.as_raw_fd(), file.as_raw_fd()) {
                // Hash the clone: it is what the object holds.
                let mut clone = File::open(&tmp_path)?;
                read_all(&mut clone, |c| {
                    h.update(c);
                    Ok(())
                })?
            } else {
                read_all(&mut file, |c| {
                    h.update(c);
                    tmp.write_all(c)
                })?
            };
            let hash = hex(&h.finalize());
            let added = self.settle(&tmp_path, &hash, false)?;
            Ok(Kept {
                hash,
                size: n,
                stored: true,
                added: if added { n } else { 0 },
            })
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp_path);
        }
        result
    }

    /// Keeps `data` (written only when its object is new).
    pub fn keep_bytes(&self, data: &[u8]) -> io::Result<Kept> {
        let hash = hex(&Sha256::digest(data));
        let size = data.len() as u64;
        if self.has(&hash) {
            return Ok(Kept {
                hash,
                size,
                stored: true,
                added: 0,
            });
        }
        let added = write_new(&self.dir, &self.tmp, &hash, data)?;
        Ok(Kept {
            hash,
            size,
            stored: true,
            added: if added { size } else { 0 },
        })
    }

    /// Removes object `hash`; returns the bytes freed.
    pub fn remove(&self, hash: &str) -> u64 {
        let path = self.path(hash);
        let size = std::fs::symlink_metadata(&path)
            .map(|m| m.len())
            .unwrap_or(0);
        match std::fs::remove_file(&path) {
            Ok(()) => size,
            Err(_) => 0,
        }
    }

    /// Every object in the store: `(hash, size)`. Sizes come from `known` (hash to size, what
    /// the index and the log record); only an object missing there is `stat`ed.
    pub fn all(&self, known: &HashMap<String, u64>) -> io::Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        for sub in std::fs::read_dir(&self.dir)? {
            let sub = sub?;
            let a = sub.file_name();
            let Ok(listing) = std::fs::read_dir(sub.path()) else {
                continue;
            };
            for obj in listing.flatten() {
                let mut hash = String::from_utf8_lossy(a.as_bytes()).into_owned();
                hash.push_str(&obj.file_name().to_string_lossy());
                let size = match known.get(&hash) {
                    Some(&n) => n,
                    None => obj.metadata().map(|m| m.len()).unwrap_or(0),
                };
                out.push((hash, size));
            }
        }
        Ok(out)
    }

    /// Writes object `hash` as the new file `name` in the directory `dir` (created exclusively
    /// with `mode`; a reflink where the file system allows it, else a copy).
    ///
    /// Errors: EEXIST when `name` exists; the copy's (a full disk), `name` then removed.
    pub fn write_object_at(
        &self,
        hash: &str,
        dir: RawFd,
        name: &[u8],
        mode: u32,
    ) -> io::Result<()> {
        let mut src = self.open_object(hash)?;
        let c = CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: dir is an open directory; c is NUL-terminated.
        let fd = unsafe {
            libc::openat(
                dir,
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor nobody else owns.
        let mut dst = unsafe { File::from_raw_fd(fd) };
        let result = (|| {
            if !reflink(dst.as_raw_fd(), src.as_raw_fd()) {
                read_all(&mut src, |chunk| dst.write_all(chunk))?;
            }
            // SAFETY: fd is valid.
            if unsafe { libc::fchmod(dst.as_raw_fd(), mode as libc::mode_t) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })();
        if result.is_err() {
            // SAFETY: c is NUL-terminated; dir is valid.
            unsafe { libc::unlinkat(dir, c.as_ptr(), 0) };
        }
        result
    }

    /// Writes object `hash` over the open regular file `dst` in place (from offset 0, then
    /// truncated to the object's length) and sets `mode`: every hard link of the file sees the
    /// old bytes. The new length is reserved first where the file system can
    /// (`fallocate(FALLOC_FL_KEEP_SIZE)`), so a full disk mostly fails before any byte is
    /// written; a kill midway leaves the file partly written.
    ///
    /// Errors: the object's read, the write's (a full disk).
    pub fn write_object_into(&self, hash: &str, dst: &File, mode: u32) -> io::Result<()> {
        let mut src = self.open_object(hash)?;
        let len = src.metadata()?.len();
        #[cfg(target_os = "linux")]
        // SAFETY: dst is an open descriptor; a refusal (EOPNOTSUPP) only skips the reservation.
        unsafe {
            if libc::fallocate(
                dst.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                0,
                len as libc::off_t,
            ) != 0
            {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::ENOSPC) {
                    return Err(e);
                }
            }
        }
        let mut offset = 0u64;
        read_all(&mut src, |chunk| {
            std::os::unix::fs::FileExt::write_all_at(dst, chunk, offset)?;
            offset += chunk.len() as u64;
            Ok(())
        })?;
        dst.set_len(offset)?;
        // SAFETY: dst is an open descriptor.
        if unsafe { libc::fchmod(dst.as_raw_fd(), mode as libc::mode_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd_of(path: &Path) -> OwnedFd {
        OwnedFd::from(File::open(path).unwrap())
    }

    #[test]
    fn keeps_by_content_once_and_hashes_big_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::open(&dir.path().join("cp")).unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"hello").unwrap();
        let k = objects.keep_fd(&fd_of(&f), 5, 100).unwrap();
        assert_eq!(
            k.hash,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!((k.size, k.stored, k.added), (5, true, 5));
        let again = objects.keep_fd(&fd_of(&f), 5, 100).unwrap();
        assert_eq!(again.added, 0);
        assert_eq!(std::fs::read(objects.path(&k.hash)).unwrap(), b"hello");
        let big = objects.keep_fd(&fd_of(&f), 5, 4).unwrap();
        assert!(!big.stored);
        assert_eq!(big.hash, k.hash);
        // A big file streams through a temporary file.
        let data: Vec<u8> = (0..(3u32 << 20)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&f, &data).unwrap();
        let k = objects
            .keep_fd(&fd_of(&f), data.len() as u64, u64::MAX)
            .unwrap();
        assert_eq!(k.hash, hex(&Sha256::digest(&data)));
        assert_eq!(std::fs::read(objects.path(&k.hash)).unwrap(), data);
        assert_eq!(
            std::fs::read_dir(dir.path().join("cp/tmp"))
                .unwrap()
                .count(),
            0
        );
        assert_eq!(objects.all(&HashMap::new()).unwrap().len(), 2);
        // Written back as a new file with its mode.
        let out = File::open(dir.path()).unwrap();
        objects
            .write_object_at(&k.hash, out.as_raw_fd(), b"back", 0o640)
            .unwrap();
        let back = dir.path().join("back");
        assert_eq!(std::fs::read(&back).unwrap(), data);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&back).unwrap().permissions().mode() & 0o7777,
            0o640
        );
        assert_eq!(objects.remove(&k.hash), data.len() as u64);
        assert!(!objects.has(&k.hash));
    }

    /// Opening a store (another process starting, a listing) removes only what a process that
    /// is gone left in `tmp/`: a live one's temporary file, being written into an object by its
    /// writer thread, stays.
    #[test]
    fn opening_leaves_a_live_processs_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let cp = dir.path().join("cp");
        drop(Objects::open(&cp).unwrap());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let names = [
            format!("{}-7", std::process::id()), // this process's (another store of the directory)
            "1-3".to_string(),                   // init's: live
            format!("{gone}-1"),                 // a process that ended
            "left-by-an-older-version".to_string(),
        ];
        for n in &names {
            std::fs::write(cp.join("tmp").join(n), b"x").unwrap();
        }
        drop(Objects::open(&cp).unwrap());
        let mut left: Vec<String> = std::fs::read_dir(cp.join("tmp"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut expected = vec![names[0].clone(), names[1].clone()];
        expected.sort();
        assert_eq!(left, expected);
    }
}
