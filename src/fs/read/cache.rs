//! The scan cache: what a full pass over an unchanged file found, so a re-read costs its
//! window, not the file. One cache per [`crate::fs::FileSystem`] (one per `FileSystem`
//! capability's core), bounded: [`CACHE_ENTRIES`] files, least recently used dropped first,
//! each entry a hash, a line count and at most [`MAX_CHECKPOINTS`] checkpoints (under 64 KiB).
//!
//! An entry is keyed by the file's device, inode, size, mtime and ctime (nanoseconds) and the
//! contract: any change to the file changes its ctime, which a user cannot set back, so a
//! changed file misses even with its size and mtime restored. A file is cached only when its
//! ctime is older than the coarse clock when the pass began: a write in the same clock tick as
//! the last one could leave every field equal, and such a file is scanned again next time
//! instead. Pseudo-files ([`crate::fs::root::pseudo`]) are never cached. Not seen: writes through a
//! shared `mmap` the kernel has not stamped yet, and a clock set back.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};

use crate::cancel::CancelFlag;
use crate::error::Result;
use crate::fs::contract::Contract;
use crate::fs::read::encoding::{InvalidUtf8, Utf16};
use crate::fs::read::{
    self, Index, Scan, ScanOptions, WindowSpec, HEX_PREVIEW_BYTES, MAX_CHECKPOINTS, MAX_MEDIA_BYTES,
};
use crate::fs::root::path::fstat;
use crate::fs::root::pseudo;

/// Files a cache remembers.
pub const CACHE_ENTRIES: usize = 64;

/// Files from this size up are hashed on a second thread while read and counted on the first.
pub const PIPE_MIN_BYTES: u64 = 4 << 20;

/// What identifies one version of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    dev: u64,
    ino: u64,
    size: i64,
    mtime_ns: i128,
    ctime_ns: i128,
    contract: Contract,
}

impl Key {
    fn of(st: &libc::stat, contract: Contract) -> Self {
        Key {
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size,
            mtime_ns: st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128,
            ctime_ns: st.st_ctime as i128 * 1_000_000_000 + st.st_ctime_nsec as i128,
            contract,
        }
    }
}

/// What a full pass over one file version found.
#[derive(Debug)]
struct Entry {
    binary: bool,
    media_type: Option<&'static str>,
    hash: String,
    total_lines: usize,
    index: Index,
    invalid_utf8: Option<InvalidUtf8>,
    utf16: Option<Utf16>,
}

#[derive(Debug, Default)]
struct Slots {
    slots: Vec<(Key, Arc<Entry>, u64)>,
    clock: u64,
}

/// A bounded LRU of file versions → hash, line count and line-offset index.
#[derive(Debug, Default)]
pub struct ScanCache {
    inner: Mutex<Slots>,
}

impl ScanCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    fn get(&self, key: &Key) -> Option<Arc<Entry>> {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.clock += 1;
        let now = s.clock;
        let slot = s.slots.iter_mut().find(|(k, ..)| k == key)?;
        slot.2 = now;
        Some(slot.1.clone())
    }

    fn put(&self, key: Key, entry: Entry) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.clock += 1;
        let now = s.clock;
        // An older version of the same file is of no further use.
        s.slots.retain(|(k, ..)| {
            !(k.dev == key.dev && k.ino == key.ino && k.contract == key.contract)
        });
        if s.slots.len() >= CACHE_ENTRIES {
            if let Some(oldest) = (0..s.slots.len()).min_by_key(|&i| s.slots[i].2) {
                s.slots.swap_remove(oldest);
            }
        }
        s.slots.push((key, Arc::new(entry), now));
    }

    /// Files remembered now.
    pub fn len(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .slots
            .len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The coarse wall clock (ns): the clock file timestamps are taken from.
fn coarse_now_ns() -> i128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
    ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
}

/// [`read::scan`] of the open regular file `file` (`path` is the model's name for it, for
/// messages), through `cache`: a version seen before is answered from the cache, reading only
/// from the checkpoint before the window to the window's end (nothing for `file_info`); a new
/// one is scanned in one pass (piped across two threads from [`PIPE_MIN_BYTES`]) that also
/// builds its index. A pseudo-file is read up to [`pseudo::PSEUDO_MAX_BYTES`].
///
/// Errors: I/O errors as `Err(io)` in the outer result; `Cancelled` and the pseudo-file
/// refusal ([`pseudo::check_bound`]) in the inner one.
pub fn scan_file(
    file: &mut File,
    path: &str,
    window: WindowSpec,
    cancel: &CancelFlag,
    cache: &ScanCache,
) -> std::io::Result<Result<Scan>> {
    let started = coarse_now_ns();
    let st = fstat(file.as_raw_fd())?;
    if pseudo::is_pseudo(file, &st) {
        let mut bounded = pseudo::bounded(&mut *file);
        let scan = match read::scan(&mut bounded, window, cancel)? {
            Ok(scan) => scan,
            Err(e) => return Ok(Err(e)),
        };
        return Ok(pseudo::check_bound(path, bounded.overflow).map(|()| scan));
    }
    let key = Key::of(&st, window.contract);
    if let Some(entry) = cache.get(&key) {
        return hit(file, &st, &entry, window, cancel);
    }
    let options = ScanOptions {
        piped: st.st_size as u64 >= PIPE_MIN_BYTES,
        index: true,
    };
    let (scan, index) = match read::scan_with(file, window, cancel, options)? {
        Ok(found) => found,
        Err(e) => return Ok(Err(e)),
    };
    let unchanged =
        fstat(file.as_raw_fd()).is_ok_and(|after| Key::of(&after, window.contract) == key);
    if unchanged && key.ctime_ns < started && scan.size == st.st_size as u64 {
        cache.put(
            key,
            Entry {
                binary: scan.binary,
                media_type: scan.media_type,
                hash: scan.hash.clone(),
                total_lines: scan.total_lines,
                index,
                invalid_utf8: scan.invalid_utf8,
                utf16: scan.utf16,
            },
        );
    }
    Ok(Ok(scan))
}

/// The scan of a version `entry` remembers: the window read from its checkpoint; for a binary
/// file (workspace contract) the hex-preview head, and an image or PDF read whole.
fn hit(
    file: &mut File,
    st: &libc::stat,
    entry: &Entry,
    window: WindowSpec,
    cancel: &CancelFlag,
) -> std::io::Result<Result<Scan>> {
    let mut scan = Scan {
        size: st.st_size as u64,
        binary: entry.binary,
        media_type: entry.media_type,
        hash: entry.hash.clone(),
        total_lines: entry.total_lines,
        invalid_utf8: entry.invalid_utf8,
        utf16: entry.utf16,
        ..Default::default()
    };
    let described = entry.binary || entry.media_type.is_some();
    if described && window.contract.is_workspace() && window.keep_media {
        if entry.media_type.is_some() && scan.size <= MAX_MEDIA_BYTES {
            return read::scan(file, window, cancel);
        }
        let mut head = Vec::with_capacity(HEX_PREVIEW_BYTES);
        file.by_ref()
            .take(HEX_PREVIEW_BYTES as u64)
            .read_to_end(&mut head)?;
        scan.head = head;
        return Ok(Ok(scan));
    }
    if entry.binary || window.limit == 0 || window.offset >= entry.total_lines {
        return Ok(Ok(scan));
    }
    let from = entry.index.start_for(window.offset);
    file.seek(SeekFrom::Start(from.offset))?;
    match read::scan_window(file, window, from, cancel)? {
        Ok((lines, body, first_len)) => {
            scan.lines = lines;
            scan.body = body;
            scan.first_len = first_len;
            Ok(Ok(scan))
        }
        Err(e) => Ok(Err(e)),
    }
}

const _: () = assert!(MAX_CHECKPOINTS * 40 < 64 * 1024);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::read::{render, ReadSpec};

    fn read(cache: &ScanCache, path: &std::path::Path, offset: usize, limit: usize) -> String {
        let spec = ReadSpec {
            offset,
            limit,
            max_read_chars: None,
            content_hashes: true,
            contract: Contract::Document,
        };
        let mut file = File::open(path).unwrap();
        let scan = scan_file(&mut file, "f", spec.window("f"), &CancelFlag::new(), cache)
            .unwrap()
            .unwrap();
        render("f", &scan, &spec).unwrap()
    }

    /// Waits past the coarse clock tick of the file's last change, so its version is cached.
    fn age() {
        std::thread::sleep(std::time::Duration::from_millis(60));
    }

    #[test]
    fn rereads_hit_and_any_change_misses() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        let text: String = (0..300_000).map(|i| format!("line {i:07}\n")).collect();
        std::fs::write(&p, &text).unwrap();
        age();
        let cache = ScanCache::new();
        let first = read(&cache, &p, 250_000, 3);
        assert_eq!(cache.len(), 1);
        // From the cache: the same result, from any offset.
        assert_eq!(read(&cache, &p, 250_000, 3), first);
        let uncached = ScanCache::new();
        for offset in [0, 1, 4095, 150_000, 299_999] {
            assert_eq!(read(&cache, &p, offset, 5), read(&uncached, &p, offset, 5));
        }
        // Same size, mtime restored: the ctime differs, the new content is read and hashed.
        let before = std::fs::metadata(&p).unwrap();
        std::fs::write(&p, text.replace("line 0250000", "LINE 0250000")).unwrap();
        let f = File::options().write(true).open(&p).unwrap();
        f.set_modified(before.modified().unwrap()).unwrap();
        let after = std::fs::metadata(&p).unwrap();
        assert_eq!(
            (after.len(), after.modified().unwrap()),
            (before.len(), before.modified().unwrap())
        );
        let changed = read(&cache, &p, 250_000, 3);
        assert!(changed.contains("\tLINE 0250000\n"), "{changed}");
        assert_ne!(
            changed.lines().next(),
            first.lines().next(),
            "the hash changed"
        );
        assert_eq!(changed, read(&ScanCache::new(), &p, 250_000, 3));
    }

    #[test]
    fn just_changed_files_are_not_cached() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        std::fs::write(&p, "x\n").unwrap();
        let cache = ScanCache::new();
        // Written in the current clock tick: a same-tick write could leave every key field equal.
        let ctime_now = {
            let st = std::fs::metadata(&p).unwrap();
            use std::os::unix::fs::MetadataExt;
            st.ctime() as i128 * 1_000_000_000 + st.ctime_nsec() as i128 >= coarse_now_ns()
        };
        read(&cache, &p, 0, 10);
        if ctime_now {
            assert!(cache.is_empty());
        }
        age();
        read(&cache, &p, 0, 10);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn bounded_lru() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ScanCache::new();
        let paths: Vec<_> = (0..CACHE_ENTRIES + 3)
            .map(|i| {
                let p = dir.path().join(format!("f{i}"));
                std::fs::write(&p, format!("{i}\n")).unwrap();
                p
            })
            .collect();
        age();
        for p in &paths {
            read(&cache, p, 0, 10);
        }
        assert_eq!(cache.len(), CACHE_ENTRIES);
    }
}
