//! The metadata walk of a snapshot: every file, directory and symlink beneath the root (or
//! beneath one directory of it), `lstat`ed on every core, returned sorted by path bytes.
//!
//! It skips what checkpoints never keep: the state directory `.pydantic-ai-harness/` at the
//! root, entries matching `exclude` (gitignore syntax: `.git/` is any directory named
//! `.git`), special files (FIFOs, sockets, devices) and directories on the kernel's pseudo
//! file systems (procfs, sysfs, ...), as the walkers do. Symlinks are recorded, never
//! followed: the top directory is opened beneath the root with symlinks refused, and each
//! directory below it relative to its parent's descriptor with `O_NOFOLLOW`, so a directory
//! swapped for a symlink mid-walk is passed over, not followed out of the root. A directory's
//! descriptor stays open until its subdirectories are opened (depth first: about as many at a
//! time as the tree is deep, per thread).
//!
//! How it stays cheap (one `lstat` per entry, as `git status`):
//! - each directory's entries are sorted by name (a directory's own entries at `name`, the
//!   ones below it at `name/`), and the sorted directories are spliced into one list in
//!   path order, so no comparison of whole paths is made;
//! - paths live back to back in one buffer, names in one buffer per directory;
//! - a directory's file system is asked about only where the device changes;
//! - [`rescan`] takes the names of a directory from an earlier walk instead of reading them
//!   again when the directory's metadata is exactly as that walk saw it, the walk saw it
//!   settled (changed more than [`RACY_NS`](super::state::RACY_NS) before it began, git's
//!   racy rule) and its file system changes a directory's times with its entries. Its entries
//!   are `lstat`ed again all the same: a file's content changes leave its directory alone.

mod dir;
mod excludes;

use std::cmp::Ordering;
use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering as AtomicOrdering};
use std::sync::Arc;

pub use excludes::{Excludes, STATE_DIR};

use super::state::{now_ns, Kind, Meta, RACY_NS};
use crate::error::Result;
use crate::fs::root::path::Beneath;
use crate::fs::root::pseudo::on_pseudo_fs;
use crate::fs::walk::pool::run_jobs;

/// A walk's entries: root-relative paths (bytes, `/`-separated, no leading `./`) sorted by
/// bytes, each with its metadata; and the directories as listed, for a later [`rescan`].
#[derive(Clone)]
pub struct Scanned {
    /// The directory walked beneath (root-relative; empty for the root).
    under: Vec<u8>,
    /// Every path, back to back.
    paths: Vec<u8>,
    /// Per entry, in path order: where its path ends in `paths` (it starts where the one
    /// before ends) and its metadata.
    entries: Vec<(usize, Meta)>,
    /// The directories listed, by id (0: `under`); `None` for one that could not be listed.
    dirs: Vec<Option<Listed>>,
    /// How many directories had their names read (the others' were taken from a walk before).
    names_read: usize,
}

/// One directory as a walk listed it.
#[derive(Clone)]
struct Listed {
    /// The directory's metadata, when a later walk may take its names from here (it was
    /// settled when listed, on a file system whose directory times follow their entries).
    reusable: Option<Meta>,
    /// Its entries' names, each followed by a NUL.
    names: Vec<u8>,
    /// Its entries (an entry of a directory twice: itself, and what is below it), sorted.
    items: Vec<Item>,
}

/// An item of a listed directory: an entry, or the place of what is below a directory entry.
#[derive(Clone, Copy)]
struct Item {
    /// Where the entry's name starts in `Listed::names`.
    start: u32,
    /// The name's length in bytes.
    len: u32,
    what: What,
}

#[derive(Clone, Copy)]
enum What {
    /// The entry itself, sorted at `name`.
    Entry(Meta),
    /// The entries below the directory entry, the listed directory of this id; sorted at
    /// `name/`.
    Below(u32),
}

impl Item {
    fn name<'a>(&self, names: &'a [u8]) -> &'a [u8] {
        &names[self.start as usize..(self.start + self.len) as usize]
    }

    fn is_below(&self) -> bool {
        matches!(self.what, What::Below(_))
    }
}

/// Orders `a` (followed by `/` when `a_below`) against `b` (likewise): how the full paths of
/// the two sort, since a name holds no `/`.
fn key_cmp(a: &[u8], a_below: bool, b: &[u8], b_below: bool) -> Ordering {
    let n = a.len().min(b.len());
    match a[..n].cmp(&b[..n]) {
        Ordering::Equal => {}
        o => return o,
    }
    let next = |s: &[u8], below: bool| match s.get(n) {
        Some(&c) => Some(c),
        None => below.then_some(b'/'),
    };
    next(a, a_below).cmp(&next(b, b_below))
}

impl Listed {
    /// The id of the listed directory below the entry `name`, if it was walked.
    fn below(&self, name: &[u8]) -> Option<u32> {
        let i = self
            .items
            .binary_search_by(|it| key_cmp(it.name(&self.names), it.is_below(), name, true))
            .ok()?;
        match self.items[i].what {
            What::Below(id) => Some(id),
            What::Entry(_) => None,
        }
    }
}

/// A directory to list.
struct Job {
    /// Its id in `Scanned::dirs`.
    id: u32,
    /// Its path, root-relative.
    rel: Vec<u8>,
    /// Its parent's descriptor, device and whether the parent's file system's directory
    /// times follow their entries; `None` for the top, opened beneath the root.
    parent: Option<(Arc<OwnedFd>, u64, bool)>,
    /// Its id in the earlier walk, if that walk listed it.
    old: Option<u32>,
}

/// What every job of a walk shares.
struct Walk<'a> {
    beneath: &'a Beneath,
    excludes: &'a Excludes,
    prev: Option<&'a Scanned>,
    /// Directory metadata from this time on is too recent to vouch for its names.
    since: i64,
    next_id: AtomicU32,
}

impl Walk<'_> {
    /// Lists the directory of `job`, `lstat`s its entries and adds a job for each directory
    /// among them; `None` when it cannot be opened or listed, or is on a pseudo file system.
    ///
    /// `read` counts the directories whose names were read (not taken from the walk before).
    fn list(
        &self,
        job: Job,
        more: &mut Vec<Job>,
        scratch: &mut Vec<u8>,
        read: &mut usize,
    ) -> Option<Listed> {
        let name_at = job
            .rel
            .iter()
            .rposition(|&b| b == b'/')
            .map_or(0, |i| i + 1);
        let (fd, parent) = match job.parent {
            None => {
                let fd = self
                    .beneath
                    .open(
                        Path::new(std::ffi::OsStr::from_bytes(&job.rel)),
                        libc::O_RDONLY | libc::O_DIRECTORY,
                        0,
                    )
                    .ok()?;
                (fd, None)
            }
            Some((parent_fd, dev, tracks)) => {
                let name = std::ffi::CString::new(&job.rel[name_at..]).ok()?;
                (
                    dir::open_child(&parent_fd, &name).ok()?,
                    Some((dev, tracks)),
                )
            }
        };
        let st = dir::fstat(&fd).ok()?;
        let meta = Meta::of(&st)?;
        let tracks = match parent {
            Some((dev, tracks)) if dev == meta.dev => tracks,
            _ => {
                if on_pseudo_fs(&fd) {
                    return None;
                }
                dir::times_track_entries(&fd)
            }
        };
        let old = job
            .old
            .and_then(|id| self.prev?.dirs.get(id as usize)?.as_ref());
        let mut spots: Vec<(u32, u32)> = Vec::new();
        let names = match old.filter(|o| o.reusable == Some(meta)) {
            Some(o) => {
                spots.extend(
                    o.items
                        .iter()
                        .filter(|it| !it.is_below())
                        .map(|it| (it.start, it.len)),
                );
                o.names.clone()
            }
            None => {
                let mut names = Vec::new();
                *read += 1;
                dir::read_names(&fd, &mut names, &mut spots).ok()?;
                names
            }
        };
        let fd = Arc::new(fd);
        let rel = &job.rel;
        let mut items = Vec::with_capacity(spots.len() + 8);
        for (start, len) in spots {
            let with_nul = &names[start as usize..(start + len) as usize + 1];
            let Ok(cname) = CStr::from_bytes_with_nul(with_nul) else {
                continue;
            };
            let Ok(st) = dir::lstat_at(&fd, cname) else {
                continue; // gone meanwhile
            };
            let Some(m) = Meta::of(&st) else { continue };
            let name = cname.to_bytes();
            let is_dir = m.kind == Kind::Dir;
            if self.excludes.excludes_entry(rel, name, is_dir, scratch) {
                continue;
            }
            items.push(Item {
                start,
                len,
                what: What::Entry(m),
            });
            if is_dir {
                let id = self.next_id.fetch_add(1, AtomicOrdering::Relaxed);
                items.push(Item {
                    start,
                    len,
                    what: What::Below(id),
                });
                let mut child = Vec::with_capacity(rel.len() + 1 + name.len());
                if !rel.is_empty() {
                    child.extend_from_slice(rel);
                    child.push(b'/');
                }
                child.extend_from_slice(name);
                more.push(Job {
                    id,
                    rel: child,
                    parent: Some((Arc::clone(&fd), meta.dev, tracks)),
                    old: old.and_then(|o| o.below(name)),
                });
            }
        }
        // Stable: a listing taken again is sorted already, and the sort sees that.
        items.sort_by(|a, b| key_cmp(a.name(&names), a.is_below(), b.name(&names), b.is_below()));
        let settled = meta.mtime_ns < self.since && meta.ctime_ns < self.since;
        Some(Listed {
            reusable: (tracks && settled).then_some(meta),
            names,
            items,
        })
    }
}

/// Walks beneath the directory `under` (root-relative; empty for the whole root), on
/// `threads` threads, and returns every entry below it (not `under` itself) sorted by path.
/// A directory that cannot be opened or listed is passed over (its entries unknown).
pub fn scan(
    beneath: &Beneath,
    under: &[u8],
    excludes: &Excludes,
    threads: usize,
) -> Result<Scanned> {
    rescan(beneath, under, excludes, threads, None)
}

/// [`scan`], taking the names of each directory unchanged since `prev` (an earlier walk
/// beneath the same `under` with the same `excludes`) from it; see the module doc.
pub fn rescan(
    beneath: &Beneath,
    under: &[u8],
    excludes: &Excludes,
    threads: usize,
    prev: Option<&Scanned>,
) -> Result<Scanned> {
    let mut scanned = Scanned {
        under: under.to_vec(),
        paths: Vec::new(),
        entries: Vec::new(),
        dirs: Vec::new(),
        names_read: 0,
    };
    if excludes::in_state_dir(under) {
        return Ok(scanned);
    }
    let walk = Walk {
        beneath,
        excludes,
        prev: prev.filter(|p| p.under == under),
        since: now_ns() - RACY_NS,
        next_id: AtomicU32::new(1),
    };
    let first = Job {
        id: 0,
        rel: under.to_vec(),
        parent: None,
        old: walk.prev.map(|_| 0),
    };
    let work = |(listed, scratch, read): &mut (Vec<(u32, Listed)>, Vec<u8>, usize),
                job: Job,
                more: &mut Vec<Job>|
     -> Result<()> {
        let id = job.id;
        if let Some(l) = walk.list(job, more, scratch, read) {
            listed.push((id, l));
        }
        Ok(())
    };
    let parts = run_jobs(threads, first, || (Vec::new(), Vec::new(), 0), work)?;
    scanned.dirs = (0..walk.next_id.into_inner()).map(|_| None).collect();
    let mut count = 0;
    scanned.names_read = parts.iter().map(|p| p.2).sum();
    for (id, l) in parts.into_iter().flat_map(|(listed, _, _)| listed) {
        count += l.items.iter().filter(|it| !it.is_below()).count();
        scanned.dirs[id as usize] = Some(l);
    }
    scanned.entries.reserve(count);
    scanned.splice();
    Ok(scanned)
}

impl Scanned {
    /// Fills `paths` and `entries` from the listed directories, depth first, each
    /// directory's items in their (path) order.
    fn splice(&mut self) {
        let mut prefix = self.under.clone();
        // (directory id, next item, its path's length in `prefix`)
        let mut stack: Vec<(u32, usize, usize)> = vec![(0, 0, prefix.len())];
        while let Some(top) = stack.last_mut() {
            let (id, i, len) = *top;
            let Some(l) = self.dirs.get(id as usize).and_then(Option::as_ref) else {
                stack.pop();
                continue;
            };
            let Some(item) = l.items.get(i) else {
                stack.pop();
                continue;
            };
            top.1 += 1;
            prefix.truncate(len);
            let name = item.name(&l.names);
            match item.what {
                What::Entry(meta) => {
                    if !prefix.is_empty() {
                        self.paths.extend_from_slice(&prefix);
                        self.paths.push(b'/');
                    }
                    self.paths.extend_from_slice(name);
                    self.entries.push((self.paths.len(), meta));
                }
                What::Below(child) => {
                    if !prefix.is_empty() {
                        prefix.push(b'/');
                    }
                    prefix.extend_from_slice(name);
                    stack.push((child, 0, prefix.len()));
                }
            }
        }
    }

    /// How many directories the walk read the names of (the others' it took from the walk
    /// before, unchanged).
    pub fn names_read(&self) -> usize {
        self.names_read
    }

    /// How many entries the walk found.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the walk found nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `i`th entry in path order: its path and metadata.
    pub fn get(&self, i: usize) -> Option<(&[u8], &Meta)> {
        let (end, meta) = self.entries.get(i)?;
        let start = if i == 0 { 0 } else { self.entries[i - 1].0 };
        Some((&self.paths[start..*end], meta))
    }

    /// The entries in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Meta)> + '_ {
        let mut start = 0;
        self.entries.iter().map(move |(end, meta)| {
            let path = &self.paths[start..*end];
            start = *end;
            (path, meta)
        })
    }
}

impl Scanned {
    /// The paths whose entries differ between `earlier` and this walk, in path order: found
    /// in one only, or with metadata not [`Meta::same`], or racy in `earlier` (changed at or
    /// after `racy_since`: a change within the same clock tick leaves the same metadata).
    pub fn differs_from(&self, earlier: &Scanned, racy_since: i64) -> Vec<Vec<u8>> {
        let mut differ = Vec::new();
        let (mut old, mut new) = (earlier.iter().peekable(), self.iter().peekable());
        loop {
            let ord = match (old.peek(), new.peek()) {
                (Some(o), Some(n)) => o.0.cmp(n.0),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => break,
            };
            match ord {
                Ordering::Less => differ.extend(old.next().map(|(p, _)| p.to_vec())),
                Ordering::Greater => differ.extend(new.next().map(|(p, _)| p.to_vec())),
                Ordering::Equal => {
                    let ((p, om), (_, nm)) = (old.next().unwrap(), new.next().unwrap());
                    if !om.same(nm) || om.is_racy(racy_since) {
                        differ.push(p.to_vec());
                    }
                }
            }
        }
        differ
    }
}

/// The number of threads a walk uses: the machine's cores (as the process may use them: its
/// CPU affinity and cgroup quota), at most 8. Found once per process: the standard library reads
/// the cgroup files each time it is asked.
pub fn threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(8)
    })
}
#[cfg(test)]
mod tests;
