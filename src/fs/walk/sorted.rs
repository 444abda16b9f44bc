//! The sorted walk: entries met in [`sort_key`](super::sort_key) order (a depth-first walk
//! with each directory's names sorted), handed to worker threads that do the per-entry work
//! ahead of need, their results given back in walk order. The caller stops the walk as soon
//! as it has what it needs (a capped search stops at its cap), and both cores work meanwhile.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{has_hidden_component, walked_kind, Kind, WalkEntry, Walker, SMALL_TREE_ENTRIES};
use crate::cancel::CancelFlag;
use crate::error::Result;

/// Entries the walk may run ahead of the results given back.
const AHEAD: usize = 1024;

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
        ignore::WalkBuilder::new(&self.root.abs)
            .standard_filters(false)
            .hidden(false)
            .follow_links(false)
            .filter_entry(self.filter(hidden))
            .sort_by_file_name(|a, b| a.cmp(b))
            .build()
            .filter_map(move |entry| {
                let entry = entry.ok()?;
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
        if !self.fs.limits.contract.is_workspace() && has_hidden_component(&self.root.rel) {
            return Ok(());
        }
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
        let (work_tx, work_rx) = sync_channel::<(usize, (PathBuf, Kind))>(AHEAD);
        let work_rx = Mutex::new(work_rx);
        let (done_tx, done_rx) = channel::<(usize, T)>();
        std::thread::scope(|scope| {
            for _ in 0..self.threads {
                let (done_tx, work_rx, stop, init, run) =
                    (done_tx.clone(), &work_rx, &stop, &init, &run);
                scope.spawn(move || {
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
                });
            }
            drop(done_tx);
            let stop_ref = &stop;
            scope.spawn(move || {
                for (seq, entry) in head.into_iter().chain(entries).enumerate() {
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
                match done_rx.recv_timeout(Duration::from_millis(20)) {
                    Ok((seq, t)) => {
                        pending.insert(seq, t);
                        while let Some(t) = pending.remove(&next) {
                            next += 1;
                            if !consume(t) {
                                break 'results;
                            }
                        }
                    }
                    Err(RecvTimeoutError::Timeout) if cancel.is_cancelled() => break,
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            }
            stop.store(true, Ordering::Relaxed);
            drop(done_rx);
        });
        cancel.check()
    }
}
