//! The sorted walk: entries met in [`sort_key`](super::sort_key) order (a depth-first walk
//! with each directory's names sorted), handed to worker threads that do the per-entry work
//! ahead of need, their results given back in walk order. The caller stops the walk as soon
//! as it has what it needs (a capped search stops at its cap), and both cores work meanwhile.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use super::{walked_kind, Kind, WalkEntry, Walker, SMALL_TREE_ENTRIES};
use crate::cancel::CancelFlag;
use crate::error::Result;

/// Entries the walk may run ahead of the results given back.
const AHEAD: usize = 1024;

/// How often a waiting thread looks at the cancel flag.
const POLL: Duration = Duration::from_millis(20);

impl Walker<'_> {
    /// The sorted, filtered walk below the root: `(path, kind)` of every non-directory entry
    /// `select` keeps, in sort-key order.
    fn sorted_entries<'s, P>(
        &'s self,
        hidden: Arc<AtomicUsize>,
        select: &'s P,
    ) -> impl Iterator<Item = (PathBuf, Kind)> + 's
    where
        P: Fn(&WalkEntry<'_>) -> bool,
    {
        let real_root = self.fs.root.real_root();
        self.builder()
            .filter_entry(self.filter(hidden))
            .sort_by_file_name(|a, b| a.cmp(b))
            .build()
            .filter_map(move |entry| {
                let entry = entry.map_err(|err| self.note_walk_error(&err)).ok()?;
                if entry.depth() == 0 {
                    return None;
                }
                let kind = walked_kind(entry.file_type())?;
                let rel = entry.path().strip_prefix(real_root).ok()?;
                let walked = WalkEntry {
                    abs: entry.path(),
                    rel,
                    kind,
                };
                select(&walked).then(|| (entry.into_path(), kind))
            })
    }

    /// Calls `work` on every entry `select` keeps (files, symlinks and special entries, not
    /// directories), several at a time on worker threads, and hands the results to `consume`
    /// in sort-key order until it returns `false` (then the walk stops). `select` runs on the
    /// walking thread and should be cheap; `work` gets a per-thread state made by `init`.
    ///
    /// Errors: `ErrorKind::Cancelled` when cancelled (polled per entry and while waiting).
    pub fn map_sorted<S, T, I, P, W, C>(
        &self,
        cancel: &CancelFlag,
        init: I,
        select: P,
        work: W,
        mut consume: C,
    ) -> Result<()>
    where
        T: Send,
        I: Fn() -> S + Sync,
        P: Fn(&WalkEntry<'_>) -> bool + Sync,
        W: Fn(&mut S, &WalkEntry<'_>) -> T + Sync,
        C: FnMut(T) -> bool,
    {
        // The dot rule is relative to the walk's own root, so a hidden directory named
        // explicitly is walked (the document's reference walked nothing there; issue 9).
        let real_root = self.fs.root.real_root();
        let run = |state: &mut S, (abs, kind): &(PathBuf, Kind)| {
            let rel = abs.strip_prefix(real_root).unwrap_or(abs);
            work(
                state,
                &WalkEntry {
                    abs,
                    rel,
                    kind: *kind,
                },
            )
        };
        let mut entries = self.sorted_entries(self.hidden.clone(), &select);
        // A small tree is worked on the calling thread: starting threads costs more.
        let mut head = Vec::new();
        for entry in entries.by_ref() {
            cancel.check()?;
            head.push(entry);
            if head.len() > SMALL_TREE_ENTRIES {
                break;
            }
        }
        if head.len() <= SMALL_TREE_ENTRIES || self.threads < 2 {
            let mut state = init();
            for entry in head.into_iter().chain(entries) {
                cancel.check()?;
                if !consume(run(&mut state, &entry)) {
                    return Ok(());
                }
            }
            return cancel.check();
        }
        let stop = AtomicBool::new(false);
        // Results taken so far, and the walker's wake-up when that moves.
        let window = (Mutex::new(0usize), Condvar::new());
        let (work_tx, work_rx) = sync_channel::<(usize, (PathBuf, Kind))>(AHEAD);
        let work_rx = Mutex::new(work_rx);
        let (done_tx, done_rx) = channel::<(usize, T)>();
        // Each worker works for the calling tool call (names it escapes, `EscapeScope`).
        let call = crate::fs::text::names::EscapeScope::current();
        std::thread::scope(|scope| {
            for _ in 0..self.threads {
                let (done_tx, work_rx, stop, init, run, call) =
                    (done_tx.clone(), &work_rx, &stop, &init, &run, &call);
                scope.spawn(move || {
                    call.enter(|| {
                        let mut state = init();
                        loop {
                            let item = work_rx.lock().unwrap().recv();
                            let Ok((seq, entry)) = item else { break };
                            // After a stop, drain what the walk sent without working on it.
                            if stop.load(Ordering::Relaxed) {
                                continue;
                            }
                            if done_tx.send((seq, run(&mut state, &entry))).is_err() {
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                    })
                });
            }
            drop(done_tx);
            let (stop_ref, window_ref) = (&stop, &window);
            scope.spawn(move || {
                for (seq, entry) in head.into_iter().chain(entries).enumerate() {
                    // At most `AHEAD` entries past the last result taken are in flight.
                    let mut taken = window_ref.0.lock().unwrap();
                    while seq >= *taken + AHEAD && !stop_ref.load(Ordering::Relaxed) {
                        taken = window_ref.1.wait_timeout(taken, POLL).unwrap().0;
                        if cancel.is_cancelled() {
                            return;
                        }
                    }
                    drop(taken);
                    if stop_ref.load(Ordering::Relaxed) || cancel.is_cancelled() {
                        break;
                    }
                    if work_tx.send((seq, entry)).is_err() {
                        break;
                    }
                }
            });
            let mut pending = std::collections::BTreeMap::new();
            let mut next = 0usize;
            'results: loop {
                match done_rx.recv_timeout(POLL) {
                    Ok((seq, t)) => {
                        pending.insert(seq, t);
                        let before = next;
                        while let Some(t) = pending.remove(&next) {
                            next += 1;
                            if !consume(t) {
                                break 'results;
                            }
                        }
                        if next > before {
                            *window.0.lock().unwrap() = next;
                            window.1.notify_one();
                        }
                    }
                    Err(RecvTimeoutError::Timeout) if cancel.is_cancelled() => break,
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            stop.store(true, Ordering::Relaxed);
            window.1.notify_one();
            drop(done_rx);
        });
        cancel.check()
    }
}

#[cfg(test)]
mod tests {
    use super::super::sort_key;
    use super::*;
    use crate::fs::tests::limits;
    use crate::fs::FileSystem;
    use std::fs;

    /// Both paths (calling thread, worker threads) give every non-hidden entry once, in
    /// sort-key order (`a/b` before `a-b`), and stop soon after `consume` says so.
    #[test]
    fn results_come_in_sort_key_order_and_stop_early() {
        for count in [5, AHEAD + 1000] {
            let dir = crate::testing::tree(&[("a/.h/no", ""), ("a-b", ""), ("a/b", "")]);
            let r = dir.path();
            for i in 0..count {
                fs::create_dir_all(r.join(format!("d{}", i % 7))).unwrap();
                fs::write(r.join(format!("d{}/f{i}", i % 7)), "").unwrap();
            }
            let f = FileSystem::new(r.to_str().unwrap(), None, &[], &[], &[], limits()).unwrap();
            let root = f.safe_resolve(".", false, false).unwrap();
            let walker = Walker::new(&f, &root).threads(2);
            let rel = |_: &mut (), e: &WalkEntry<'_>| e.rel.to_string_lossy().into_owned();
            let mut seen = Vec::new();
            walker
                .map_sorted(
                    &CancelFlag::new(),
                    || (),
                    |_| true,
                    rel,
                    |p| {
                        seen.push(p);
                        true
                    },
                )
                .unwrap();
            let mut expected = seen.clone();
            expected.sort_by_key(|p| sort_key(std::path::Path::new(p)));
            assert_eq!(seen, expected);
            assert_eq!(seen.len(), count + 2);
            assert_eq!(&seen[..2], ["a/b", "a-b"]);
            assert_eq!(walker.hidden_skipped(), 1);

            let worked = AtomicUsize::new(0);
            let mut taken = Vec::new();
            let work = |_: &mut (), e: &WalkEntry<'_>| {
                worked.fetch_add(1, Ordering::Relaxed);
                e.rel.to_string_lossy().into_owned()
            };
            walker
                .map_sorted(
                    &CancelFlag::new(),
                    || (),
                    |_| true,
                    work,
                    |p| {
                        taken.push(p);
                        taken.len() < 3
                    },
                )
                .unwrap();
            assert_eq!(taken, seen[..3]);
            // Worked ahead at most by the read-ahead bound, not through the whole tree.
            let bound = 3 + AHEAD + 2;
            assert!(worked.load(Ordering::Relaxed) <= bound.min(count + 2));
            assert!(count < bound || bound < count + 2, "the bound must bind");
        }
    }
}
