//! `search_files` over a directory (`search_walk`): the sorted search
//! ([`Walker::map_sorted`]) gets a short time budget; one still going when it runs out goes
//! on every core ([`Walker::visit_parallel`]) for the files after the last one it took,
//! keeps each file's hits under its sort key and takes them in walk order at the end, which
//! gives what the sorted search gives: the same lines, cap marker and binary count (hidden
//! entries: see `search_walk`).
//!
//! Only files with hits hold a buffer, and no more of them than the cap needs: once the
//! files kept pass the cap, the last one needed is the cut, and nothing whose key comes
//! after it is searched, entered or kept.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::cancel::CancelFlag;
use crate::error::Result;
use crate::fs::search::hits::Hits;
use crate::fs::search::scan::{LineSearch, Scratch};
use crate::fs::walk::{Collected, Met, WalkEntry, Walker};

/// The result text in walk order: each file's hits appended until the cap is passed.
pub(crate) struct Taken {
    max: usize,
    /// The result lines so far, each followed by `\n`.
    pub text: String,
    /// Lines in `text`.
    pub count: usize,
    /// A file's hits passed the cap (its rest, and every later file, left out).
    pub truncated: bool,
}

impl Taken {
    /// Nothing taken yet, at most `max` lines to take.
    pub fn new(max: usize) -> Self {
        Taken {
            max,
            text: String::new(),
            count: 0,
            truncated: false,
        }
    }

    /// Takes the next file's hits in walk order; `false` once the cap is passed.
    pub fn take(&mut self, found: Hits) -> bool {
        let room = self.max - self.count;
        self.text.push_str(found.head(room));
        self.count += found.len().min(room);
        self.truncated = found.len() > room;
        !self.truncated
    }
}

/// The files with hits kept so far, by sort key: the fewest, in walk order, that pass the
/// cap (all of them while they do not).
#[derive(Default)]
struct Kept {
    files: BTreeMap<Vec<u8>, Hits>,
    /// Lines in `files`.
    total: usize,
}

impl Kept {
    /// Keeps a file's hits (unless they come after the cut); returns the cut, the key of the
    /// file whose hits pass the cap, once there is one.
    fn add(&mut self, key: &[u8], hits: Hits, max: usize) -> Option<Vec<u8>> {
        if self.total > max
            && self
                .files
                .last_key_value()
                .is_some_and(|(k, _)| key > k.as_slice())
        {
            return None;
        }
        self.total += hits.len();
        self.files.insert(key.to_vec(), hits);
        // The last file is not needed when the ones before it already pass the cap.
        while let Some((_, last)) = self.files.last_key_value() {
            if self.total - last.len() <= max {
                break;
            }
            self.total -= last.len();
            self.files.pop_last();
        }
        if self.total > max {
            self.files.last_key_value().map(|(k, _)| k.clone())
        } else {
            None
        }
    }
}

/// The cut shared between the searching threads: set (and `version` moved) whenever it
/// moves earlier; each thread reads it again only when `version` moved.
#[derive(Default)]
struct Cut {
    kept: Mutex<(Kept, Option<Arc<Vec<u8>>>)>,
    version: AtomicUsize,
}

/// A searching thread's state: its scratch space and its own count of binary files, so
/// that each file's search tells whether it passed the file over as binary.
#[derive(Default)]
struct Searcher {
    scratch: Scratch,
    binary: AtomicUsize,
}

impl Searcher {
    /// `search` of one entry with `lines` (its binary counter replaced by this thread's):
    /// the file's hits, and whether it was passed over as binary.
    fn search<W>(
        &mut self,
        lines: &LineSearch<'_>,
        search: &W,
        entry: &WalkEntry<'_>,
    ) -> (Hits, bool)
    where
        W: Fn(&LineSearch<'_>, &mut Scratch, &WalkEntry<'_>) -> Hits,
    {
        let own = LineSearch {
            binary: Some(&self.binary),
            ..*lines
        };
        let before = self.binary.load(Ordering::Relaxed);
        let hits = search(&own, &mut self.scratch, entry);
        (hits, self.binary.load(Ordering::Relaxed) != before)
    }
}

/// One parallel searching thread's state.
#[derive(Default)]
struct Part {
    searcher: Searcher,
    binary_keys: Collected,
    hidden_keys: Collected,
    /// This thread's copy of the cut, as of `version`.
    cut: Option<Arc<Vec<u8>>>,
    version: usize,
}

/// What a search of a directory found.
pub(crate) struct Found {
    /// The result text.
    pub taken: Taken,
    /// Files passed over as binary before the file that passed the cap (all of them when
    /// none did).
    pub binary: usize,
    /// Hidden entries the walk skipped (see [`search_walk`]).
    pub hidden: usize,
}

/// `search_files` below `walker`'s root: `search` (given `lines`, its binary counter
/// replaced by the thread's own) of every entry `select` keeps, at most `max` lines, in walk
/// order. Sorted first ([`Walker::map_sorted`], reading ahead on the other core); once
/// `give_up` says so (asked before each file is taken: the caller's time budget), the search
/// goes on in parallel for the files after the last one taken,
/// which gives the same result text and binary count. Hidden entries: the sorted search
/// counts those its walk met (reading ahead, that may be past the cap); the parallel one
/// counts all, up to the file that passed the cap if one did.
///
/// Errors: `ErrorKind::Cancelled` once `cancel` is set (every thread stops at its next entry).
#[allow(clippy::too_many_arguments)]
pub(crate) fn search_walk<P, W>(
    walker: &Walker<'_>,
    cancel: &CancelFlag,
    give_up: &mut dyn FnMut() -> bool,
    max: usize,
    lines: &LineSearch<'_>,
    select: P,
    search: W,
) -> Result<Found>
where
    P: Fn(&WalkEntry<'_>) -> bool + Sync + Copy,
    W: Fn(&LineSearch<'_>, &mut Scratch, &WalkEntry<'_>) -> Hits + Sync,
{
    let mut taken = Taken::new(max);
    let (mut binary, mut last, mut over) = (0, None::<Vec<u8>>, false);
    let sorted = |searcher: &mut Searcher, entry: &WalkEntry<'_>| {
        let (hits, is_binary) = searcher.search(lines, &search, entry);
        (hits, is_binary, walker.key(entry.abs))
    };
    walker.map_sorted(
        cancel,
        Searcher::default,
        select,
        sorted,
        |(hits, is_binary, key)| {
            over = give_up();
            if over {
                return false;
            }
            binary += usize::from(is_binary);
            last = Some(key);
            taken.take(hits)
        },
    )?;
    if !over {
        let hidden = walker.hidden_skipped();
        return Ok(Found {
            taken,
            binary,
            hidden,
        });
    }
    // No hidden entry met up to the last file taken (the walk is ahead of it): the parallel
    // walk need not go through what comes before it again to count them.
    let prefix = match last {
        Some(key) if walker.hidden_skipped() == 0 => Some(Prefix::Done(key)),
        Some(key) => Some(Prefix::Searched(key)),
        None => None,
    };
    let rest = search_parallel(
        walker,
        cancel,
        max - taken.count,
        prefix,
        lines,
        select,
        search,
    )?;
    for hits in rest.files {
        if !taken.take(hits) {
            break;
        }
    }
    Ok(Found {
        taken,
        binary: binary + rest.binary,
        hidden: rest.hidden,
    })
}

/// What the parallel search found after the sorted search's last file.
struct Rest {
    /// Each file's hits, in walk order, up to the file that passes the cap.
    files: Vec<Hits>,
    /// Files passed over as binary before that file (all of them when there is none).
    binary: usize,
    /// Hidden entries of the whole walk before that file (all of them when there is none).
    hidden: usize,
}

/// What the sorted search did before the parallel one: up to a sort key, the files are
/// searched (`Searched`), or the walk is done too (`Done`: no hidden entry to count there).
enum Prefix {
    Searched(Vec<u8>),
    Done(Vec<u8>),
}

/// Whether everything below the directory `dir` (a sort key) comes before `key`.
fn all_below_before(dir: &[u8], key: &[u8]) -> bool {
    key > dir && !(key.starts_with(dir) && key.get(dir.len()) == Some(&0))
}

/// Searches the files after the prefix (all when `None`) on every core, at most `max` lines;
/// walks the tree up to the cut (from the prefix's end when it is `Done`), counting hidden
/// entries.
fn search_parallel<P, W>(
    walker: &Walker<'_>,
    cancel: &CancelFlag,
    max: usize,
    prefix: Option<Prefix>,
    lines: &LineSearch<'_>,
    select: P,
    search: W,
) -> Result<Rest>
where
    P: Fn(&WalkEntry<'_>) -> bool + Sync,
    W: Fn(&LineSearch<'_>, &mut Scratch, &WalkEntry<'_>) -> Hits + Sync,
{
    let cut = Cut::default();
    let visit = |part: &mut Part, key: &[u8], met: Met<'_>| {
        let version = cut.version.load(Ordering::Acquire);
        if version != part.version {
            part.cut = cut.kept.lock().unwrap().1.clone();
            part.version = version;
        }
        if part.cut.as_ref().is_some_and(|c| key > c.as_slice()) {
            return false;
        }
        let entry = match met {
            Met::Hidden => {
                part.hidden_keys.push(key, "");
                return false;
            }
            Met::Dir => {
                return !matches!(&prefix, Some(Prefix::Done(a)) if all_below_before(key, a));
            }
            Met::Entry(entry) => entry,
        };
        // Searched already, by the sorted search.
        let after = match &prefix {
            Some(Prefix::Searched(a) | Prefix::Done(a)) => Some(a.as_slice()),
            None => None,
        };
        if after.is_some_and(|a| key <= a) || !select(&entry) {
            return false;
        }
        let (hits, is_binary) = part.searcher.search(lines, &search, &entry);
        if is_binary {
            part.binary_keys.push(key, "");
        }
        if !hits.is_empty() {
            let mut kept = cut.kept.lock().unwrap();
            if let Some(new) = kept.0.add(key, hits, max) {
                if kept.1.as_deref() != Some(&new) {
                    kept.1 = Some(Arc::new(new));
                    cut.version.fetch_add(1, Ordering::Release);
                }
            }
        }
        true
    };
    let parts = walker.visit_parallel(cancel, Part::default, visit)?;
    let kept = cut.kept.into_inner().unwrap().0;
    let cutoff = (kept.total > max)
        .then(|| kept.files.last_key_value().map(|(k, _)| k.clone()))
        .flatten();
    let cutoff = cutoff.as_deref();
    let (binary, hidden): (Vec<_>, Vec<_>) = parts
        .into_iter()
        .map(|p| (p.binary_keys, p.hidden_keys))
        .unzip();
    Ok(Rest {
        files: kept.files.into_values().collect(),
        binary: Collected::count_before(&binary, cutoff),
        hidden: Collected::count_before(&hidden, cutoff),
    })
}

#[cfg(test)]
mod tests {
    use super::{Hits, Kept};
    use crate::cancel::CancelFlag;
    use crate::error::Result;
    use crate::fs::tests::{limits, protected};
    use crate::fs::{Contract, FileSystem, Outcome};
    use std::fs;
    use std::os::unix::fs::symlink;

    /// A tree with hits spread over directories (names that sort differently by component
    /// and by bytes), binary files, hidden entries, a long line, `\r\n` and `\x0b` line ends,
    /// a denied file and symlinks in and out (without the hidden entries: all of them walked
    /// by the time the sorted search gives up, so the parallel one starts after it).
    fn tree(hidden: bool) -> tempfile::TempDir {
        tree_with(hidden, false)
    }

    /// [`tree`], with `.ignore` files at the root and nested when `ignores`.
    fn tree_with(hidden: bool, ignores: bool) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for d in ["a/b", "a-b", "a/.h", "c/d", ".top", "e"] {
            fs::create_dir_all(r.join(d)).unwrap();
        }
        // Directories of more than a parallel job's entries (`c/d`, `e`) too.
        for i in 0..150 {
            if i < 30 {
                let text = format!("x\nneedle {i}\r\nmid\x0bneedle again {i}\n");
                fs::write(r.join(format!("a/b/f{i:02}.py")), text).unwrap();
            }
            fs::write(r.join(format!("c/d/g{i:03}.txt")), "nothing\n").unwrap();
            if i < 100 {
                let e = if i % 3 == 0 {
                    "needle\0bin\n".to_string()
                } else {
                    format!("needle {i}\n")
                };
                fs::write(r.join(format!("e/h{i:02}.dat")), e).unwrap();
            }
        }
        let long = format!("needle {}\n", "y".repeat(500));
        let files = [
            ("a/m.py", "needle m\n"),
            ("a-b/n.py", "needle n\nneedle n2\n"),
            ("a/.h/z.py", "needle hidden\n"),
            ("a/.hid.py", "needle hidden file\n"),
            (".top/t.py", "needle top\n"),
            ("a/bin.dat", "\0needle\n"),
            ("c/long.txt", long.as_str()),
            ("s.pem", "needle secret\n"),
            ("z.py", "needle last\n"),
        ];
        for (f, text) in files {
            fs::write(r.join(f), text).unwrap();
        }
        if !hidden {
            for d in [".top", "a/.h", "a/.hid.py"] {
                let _ = fs::remove_dir_all(r.join(d));
                let _ = fs::remove_file(r.join(d));
            }
        }
        if ignores {
            fs::write(r.join(".ignore"), "a/b/f1*.py\nc/long.txt\n").unwrap();
            fs::write(r.join("e/.ignore"), "h2*.dat\n!h25.dat\n").unwrap();
        }
        symlink("a", r.join("la")).unwrap();
        symlink("a/m.py", r.join("lm.py")).unwrap();
        symlink("/etc/hostname", r.join("out.py")).unwrap();
        symlink("s.pem", r.join("key.py")).unwrap();
        dir
    }

    /// Files kept in any order: the fewest that pass the cap, in walk order; the cut is the
    /// last of them, and a file after it is not kept.
    #[test]
    fn kept_files_are_the_fewest_that_pass_the_cap() {
        let hits = |n: usize| {
            let mut h = Hits::default();
            for i in 0..n {
                h.push("f", i + 1, "x");
            }
            h
        };
        let mut kept = Kept::default();
        assert_eq!(kept.add(b"m", hits(2), 3), None);
        assert_eq!(kept.add(b"z", hits(2), 3), Some(b"z".to_vec()));
        assert_eq!(kept.add(b"zz", hits(1), 3), None);
        // a, m: 3 lines, the cap; z passes it.
        assert_eq!(kept.add(b"a", hits(1), 3), Some(b"z".to_vec()));
        assert_eq!(kept.add(b"b", hits(1), 3), Some(b"m".to_vec()));
        let keys: Vec<_> = kept.files.keys().cloned().collect();
        assert_eq!(keys, [b"a".to_vec(), b"b".to_vec(), b"m".to_vec()]);
        assert_eq!(kept.total, 4);
        assert_eq!(kept.add(b"0", hits(4), 3), Some(b"0".to_vec()));
        assert_eq!((kept.files.len(), kept.total), (1, 4));
    }

    fn show(o: &Result<Outcome>) -> String {
        match o {
            Ok(o) => format!("{}|{}|{}", o.text, o.count, o.truncated),
            Err(e) => e.message.clone(),
        }
    }

    /// The parallel search, from the start or after some files were taken sorted, gives
    /// exactly what the sorted search gives: lines, order, cap marker, binary and hidden
    /// counts, under both contracts, with globs, clipped lines and any cap.
    #[test]
    fn parallel_search_finds_what_the_sorted_search_finds() {
        for hidden in [true, false] {
            same_search_both_ways(hidden);
        }
    }

    fn same_search_both_ways(hidden: bool) {
        let dir = tree(hidden);
        let c = CancelFlag::new();
        let root = dir.path().to_str().unwrap();
        let searches = [
            ("needle", None),
            ("needle \\d+$", None),
            ("(?<=needle )a", None),
            ("needle", Some("*.py")),
            ("needle", Some("a/**")),
            ("needle", Some(".*/*")),
            ("needle", Some("**/.h/*")),
            ("nowhere", None),
        ];
        for contract in [Contract::Document, Contract::Workspace] {
            for clip in [None, Some(20)] {
                for max in [0, 1, 2, 3, 31, 45, 61, 90, 1000] {
                    let mut limits = limits();
                    limits.max_search_results = max;
                    limits.contract = contract;
                    let mut f =
                        FileSystem::new(root, None, &[], &[], &protected(), limits).unwrap();
                    f.root = f.root.clone().under(contract);
                    f.disclosure.report_skipped = true;
                    f.disclosure.max_line_chars = clip;
                    for (pattern, glob) in searches {
                        let run = |after: usize| {
                            // Gives up after `after` files taken (never for `usize::MAX`).
                            let mut taken = 0;
                            let mut give_up = || {
                                taken += 1;
                                taken > after
                            };
                            f.search_files_within(pattern, ".", glob, &c, &mut give_up)
                        };
                        let sorted = show(&run(usize::MAX));
                        for after in [0, 1, 5, 40] {
                            assert_eq!(
                                show(&run(after)),
                                sorted,
                                "{pattern} {glob:?} cap {max} clip {clip:?} {contract:?} after {after} hidden {hidden}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Under the workspace contract a search applies ripgrep's ignore files, and its parallel
    /// walk (the `ignore` crate's, `walk/ignoring.rs`) leaves out what the sorted one does.
    #[test]
    fn parallel_search_with_ignore_files_finds_what_the_sorted_search_finds() {
        let dir = tree_with(false, true);
        let c = CancelFlag::new();
        let root = dir.path().to_str().unwrap();
        for max in [1, 3, 31, 1000] {
            let mut limits = limits();
            limits.max_search_results = max;
            limits.contract = Contract::Workspace;
            let mut f = FileSystem::new(root, None, &[], &[], &protected(), limits).unwrap();
            f.root = f.root.clone().under(Contract::Workspace);
            for (pattern, glob) in [
                ("needle", None),
                ("needle", Some("*.dat")),
                ("needle \\d+$", None),
            ] {
                let run = |after: usize| {
                    let mut taken = 0;
                    let mut give_up = || {
                        taken += 1;
                        taken > after
                    };
                    f.search_files_within(pattern, ".", glob, &c, &mut give_up)
                };
                let sorted = show(&run(usize::MAX));
                if max == 1000 && glob.is_none() && pattern == "needle" {
                    assert!(
                        !sorted.contains("f12.py") && !sorted.contains("long.txt"),
                        "{sorted}"
                    );
                    assert!(
                        !sorted.contains("h21.dat") && sorted.contains("h25.dat"),
                        "{sorted}"
                    );
                }
                for after in [0, 1, 5, 40] {
                    assert_eq!(
                        show(&run(after)),
                        sorted,
                        "{pattern} {glob:?} cap {max} after {after}"
                    );
                }
            }
        }
    }

    /// With the cap passed, the parallel search counts the hidden entries and binary files
    /// before the cut, not those after it (which it never reaches).
    #[test]
    fn counts_stop_at_the_cut() {
        let dir = tree(true);
        let r = dir.path();
        fs::create_dir_all(r.join("y/.late")).unwrap();
        fs::write(r.join("y/bin.dat"), "\0needle\n").unwrap();
        let mut limits = limits();
        limits.max_search_results = 1;
        let mut f =
            FileSystem::new(r.to_str().unwrap(), None, &[], &[], &protected(), limits).unwrap();
        f.disclosure.report_skipped = true;
        let c = CancelFlag::new();
        let o = f.search_files_within("needle", ".", None, &c, &mut || true);
        // The cut is a/b/f00.py (its second line): before it, `.top`, `a/.h` and `a/.hid.py`
        // are hidden and nothing is binary.
        assert_eq!(
            show(&o),
            "a/b/f00.py:2:needle 0\n[... truncated at 1 matches]\n\
             [skipped: 3 hidden entries (name a hidden path explicitly to include them)]|1|true"
        );
        f.limits.max_search_results = 1000;
        let all = f.search_files_within("needle", ".", None, &c, &mut || true);
        let all = show(&all);
        assert!(
            all.ends_with(
                "[skipped: 4 hidden entries (name a hidden path explicitly to include them), \
                 36 binary files]|134|false"
            ),
            "{all}"
        );
    }

    /// A search cancelled as it goes parallel stops there with `Cancelled`.
    #[test]
    fn cancelled_parallel_search_stops() {
        let dir = tree(true);
        let f = crate::fs::tests::over(dir.path());
        let c = CancelFlag::new();
        let mut give_up = || {
            c.cancel();
            true
        };
        let err = f
            .search_files_within("needle", ".", None, &c, &mut give_up)
            .unwrap_err();
        assert_eq!(err.kind, crate::error::ErrorKind::Cancelled);
    }
}
