//! The [`Walker`]'s walk on every core, unordered, for a caller that puts what it keeps in
//! walk order at the end: a directory per job ([`run_jobs`]; a big one's entries split into
//! several), each entry handed over with its sort key, and the caller may decline to enter
//! a directory (a capped search that already has its cut needs nothing whose key comes
//! after it).
//!
//! It walks what [`Walker::map_sorted`] walks: the same entries (symlinks not followed,
//! hidden entries skipped and not entered unless included), the same types, and an
//! unreadable directory passed over.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::pool::run_jobs;
use super::{is_hidden, list_fd, sort_key, DirEntry, Kind, WalkEntry, Walker};
use crate::cancel::CancelFlag;
use crate::error::Result;
use crate::fs::root::path::strip_base;

/// One entry the parallel walk meets, handed to the caller's visitor with its sort key
/// (the path below the walk root, `/` written as 0: compared bytewise, keys are in walk
/// order, a directory's before everything below it).
pub enum Met<'a> {
    /// A hidden entry the walk skips (and does not enter): the caller may count it.
    Hidden,
    /// A directory: entered when the visitor returns `true`.
    Dir,
    /// A file, symlink or special entry.
    Entry(WalkEntry<'a>),
}

/// Entries of a directory visited as one job: a directory with more is shared out between
/// the threads in jobs of this many (one thread would otherwise search a big one alone).
const CHUNK: usize = 64;

/// A listed directory: its path as walked, and the start of its entries' sort keys (its
/// own key and a separator; empty for the walk root).
struct Listed {
    abs: PathBuf,
    prefix: Vec<u8>,
}

/// Work for a walking thread.
enum Job {
    /// A directory to list: its path as walked and its sort key.
    List { abs: PathBuf, key: Vec<u8> },
    /// Entries of a listed directory to visit.
    Visit(Arc<Listed>, Vec<DirEntry>),
}

impl Job {
    /// Where the job's entries come in walk order.
    fn key(&self) -> &[u8] {
        match self {
            Job::List { key, .. } => key,
            Job::Visit(dir, _) => &dir.prefix,
        }
    }
}

/// A big directory's listing cut into jobs of [`CHUNK`] entries, each its own allocation of
/// that size: the jobs together hold the listing once (a `split_off` loop would leave each
/// job holding the capacity of everything after it, memory growing with the square of the
/// directory's size; issue 19).
fn chunks(entries: Vec<DirEntry>) -> impl Iterator<Item = Vec<DirEntry>> {
    let mut entries = entries.into_iter();
    std::iter::from_fn(move || {
        let part: Vec<DirEntry> = entries.by_ref().take(CHUNK).collect();
        (!part.is_empty()).then_some(part)
    })
}

/// Opens the directory `path` for listing, not following a symlink there.
fn open_dir(path: &Path) -> Option<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a NUL-terminated path; the descriptor returned is ours.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    // SAFETY: a non-negative `fd` is an open descriptor nobody else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Walker<'_> {
    /// The sort key [`Walker::visit_parallel`] gives the entry walked as `abs`.
    pub fn key(&self, abs: &Path) -> Vec<u8> {
        sort_key(strip_base(abs, &self.root.abs).unwrap_or(abs))
    }

    /// Walks below the root on every core (at most the walker's thread count), calling
    /// `visit` with a per-thread state (made by `init`) for every entry: hidden ones it skips,
    /// directories (entered when `visit` returns `true`; the return value is ignored for the
    /// rest) and the other entries. Returns each thread's state once the walk is done.
    ///
    /// Errors: `ErrorKind::Cancelled` when cancelled (polled per entry).
    pub fn visit_parallel<S, I, V>(&self, cancel: &CancelFlag, init: I, visit: V) -> Result<Vec<S>>
    where
        S: Send,
        I: Fn() -> S + Sync,
        V: Fn(&mut S, &[u8], Met<'_>) -> bool + Sync,
    {
        if self.ignore_files.is_some() {
            return self.visit_parallel_ignoring(cancel, init, visit);
        }
        let first = Job::List {
            abs: self.root.abs.clone(),
            key: Vec::new(),
        };
        let work = |state: &mut S, job: Job, more: &mut Vec<Job>| {
            cancel.check()?;
            match job {
                Job::List { abs, mut key } => {
                    let listed = open_dir(&abs)
                        .ok_or_else(std::io::Error::last_os_error)
                        .and_then(list_fd);
                    let entries = match listed {
                        Ok(entries) => entries,
                        Err(err) => {
                            if err.raw_os_error() != Some(libc::ENOENT) {
                                self.note_unreadable(&abs, &err);
                            }
                            return Ok(());
                        }
                    };
                    if !key.is_empty() {
                        key.push(0);
                    }
                    let dir = Arc::new(Listed { abs, prefix: key });
                    if entries.len() <= CHUNK {
                        self.visit_entries(state, &dir, entries, more, &visit, cancel)?;
                    } else {
                        more.extend(chunks(entries).map(|part| Job::Visit(dir.clone(), part)));
                    }
                }
                Job::Visit(dir, entries) => {
                    self.visit_entries(state, &dir, entries, more, &visit, cancel)?;
                }
            }
            // Smallest key first (the pool takes the first of a job's new jobs next):
            // the walk then goes roughly in walk order, and a capped caller finds its cut early.
            more.sort_by(|a, b| a.key().cmp(b.key()));
            Ok(())
        };
        run_jobs(self.threads, first, init, work)
    }

    /// Visits `entries` of the listed directory `dir`, queueing the directories to enter.
    fn visit_entries<S, V>(
        &self,
        state: &mut S,
        dir: &Listed,
        entries: Vec<DirEntry>,
        more: &mut Vec<Job>,
        visit: &V,
        cancel: &CancelFlag,
    ) -> Result<()>
    where
        V: Fn(&mut S, &[u8], Met<'_>) -> bool,
    {
        let real_root = self.fs.root.real_root();
        let mut key = dir.prefix.clone();
        let base = key.len();
        for entry in entries {
            cancel.check()?;
            key.truncate(base);
            key.extend_from_slice(entry.name.as_bytes());
            if !self.include_hidden && is_hidden(&entry.name) {
                visit(state, &key, Met::Hidden);
                continue;
            }
            let abs = dir.abs.join(&entry.name);
            if entry.kind == Kind::Dir {
                if visit(state, &key, Met::Dir) {
                    more.push(Job::List {
                        abs,
                        key: key.clone(),
                    });
                }
                continue;
            }
            let rel = strip_base(&abs, real_root).unwrap_or(&abs);
            let met = Met::Entry(WalkEntry {
                abs: &abs,
                rel,
                kind: entry.kind,
            });
            visit(state, &key, met);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::tests::limits;
    use crate::fs::FileSystem;
    use std::fs;

    /// A big listing's jobs hold it once: each job's allocation is a job's size, not the
    /// rest of the listing (which made a flat directory's memory quadratic).
    #[test]
    fn chunks_hold_the_listing_once() {
        let listing: Vec<DirEntry> = (0..10 * CHUNK + 3)
            .map(|i| DirEntry {
                name: format!("f{i}").into(),
                kind: Kind::File,
            })
            .collect();
        let parts: Vec<Vec<DirEntry>> = chunks(listing).collect();
        assert_eq!(parts.len(), 11);
        assert!(parts.iter().all(|p| p.capacity() <= CHUNK && !p.is_empty()));
        let names: Vec<String> = parts
            .iter()
            .flatten()
            .map(|e| e.name.to_string_lossy().into_owned())
            .collect();
        let expected: Vec<String> = (0..10 * CHUNK + 3).map(|i| format!("f{i}")).collect();
        assert_eq!(names, expected);
    }

    /// What one walking thread met: (rel, kind, sort key) per entry, and hidden ones counted.
    type Seen = (Vec<(String, Kind, Vec<u8>)>, usize);

    /// The parallel walk meets what the sorted walk meets (sorted by key: the same entries
    /// in the same order), counts the same hidden entries, and enters no directory the
    /// visitor declines.
    #[test]
    fn parallel_walk_meets_what_the_sorted_walk_meets() {
        let files = [
            "a/b/f", "a-b/g", "a/.h/x/z", "a/.hid", ".top/t", "c/d/e", "c/k",
        ];
        let dir = crate::testing::tree(&files.map(|f| (f, "x")));
        let r = dir.path();
        // More than a job's entries, a hidden one among them.
        for i in 0..150 {
            fs::write(r.join(format!("a/b/m{i:03}")), "x").unwrap();
        }
        fs::write(r.join("a/b/.m"), "x").unwrap();
        std::os::unix::fs::symlink("a", r.join("la")).unwrap();
        std::os::unix::fs::symlink("/etc", r.join("out")).unwrap();
        let f = FileSystem::new(r.to_str().unwrap(), None, &[], &[], &[], limits()).unwrap();
        let root = f.safe_resolve(".", false, false).unwrap();
        let c = CancelFlag::new();
        for include in [false, true] {
            let walker = Walker::new(&f, &root).include_hidden(include).threads(2);
            let mut sorted = Vec::new();
            walker
                .map_sorted(
                    &c,
                    || (),
                    |_| true,
                    |_, e| (e.rel.to_string_lossy().into_owned(), e.kind),
                    |x| {
                        sorted.push(x);
                        true
                    },
                )
                .unwrap();
            // Each thread: entries met (rel, kind, key) and hidden entries counted; `c` not entered.
            let visit = |(seen, hidden): &mut Seen, key: &[u8], met: Met<'_>| match met {
                Met::Hidden => {
                    *hidden += 1;
                    false
                }
                Met::Dir => key != b"c",
                Met::Entry(e) => {
                    seen.push((e.rel.to_string_lossy().into_owned(), e.kind, key.to_vec()));
                    true
                }
            };
            let parts = walker.visit_parallel(&c, Default::default, visit).unwrap();
            let hidden: usize = parts.iter().map(|p| p.1).sum();
            let mut met: Vec<_> = parts.into_iter().flat_map(|p| p.0).collect();
            met.sort_by(|a, b| a.2.cmp(&b.2));
            for (rel, _, key) in &met {
                assert_eq!(key, &super::super::sort_key(Path::new(rel)));
            }
            let met: Vec<_> = met.into_iter().map(|(rel, kind, _)| (rel, kind)).collect();
            let expected: Vec<_> = sorted
                .into_iter()
                .filter(|(rel, _)| !rel.starts_with("c/"))
                .collect();
            assert_eq!(met, expected, "include hidden {include}");
            assert_eq!(hidden, walker.hidden_skipped(), "include hidden {include}");
            assert_eq!(hidden, if include { 0 } else { 4 });
        }
    }
}
