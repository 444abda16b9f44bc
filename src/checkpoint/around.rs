//! A file tool's checkpoint in the same call as its commit: [`CheckpointStore::around`] keeps
//! the paths' states, runs the commit, and records what it changed, taking what it can from
//! the bytes the tool holds instead of reading the files again:
//! - before: an edit's plan holds the bytes the file had, and its commit checks, through the
//!   descriptor it writes by, that the file still holds them. So a file the index cannot vouch
//!   for is only `lstat`ed before the commit; once the commit succeeded, its before-state is
//!   those bytes: recognised by comparing them with the bytes a file tool wrote there last
//!   ([`Recent`]), else hashed (beside the commit, [`beside`], unless small), and kept in the store before the
//!   checkpoint names them.
//! - after: the bytes the commit wrote, hashed by the commit (or here), kept by the store's
//!   writer thread ([`super::later`]). The index takes the file's metadata as racy, so the next
//!   look reads the file again: a change by someone else right after the commit is never
//!   hidden behind the bytes in memory.
//!
//! A commit that fails changed nothing (the replacement is atomic): the paths are captured as
//! they are, and no checkpoint is appended.
//!
//! When the call queued objects for the writer thread, the checkpoint's log line is appended by
//! the writer after them; the store's generation is bumped at once, and the call's hold of the
//! store's lock is given back by the writer once the line is on disk ([`super::later`]), so
//! another process that takes the lock reloads and finds the line and its objects. When
//! nothing is queued (the bytes on both sides were kept before: an edit undone, a file put
//! back), the line is appended before the call returns, which costs less than a hand-off to
//! the writer. Where the log or the index must be written whole, and for a durable unit's call
//! (whose record on disk is removed only once its line is there), everything is written before
//! the call returns.
//!
//! On an event loop ([`CheckpointStore::around_later`]) the call returns once its commit is done:
//! the rest (the after-state's `lstat`, recognising the old bytes, the checkpoint, the hand-off to
//! the writer) is an `Unfinished` in the store's state, done by [`CheckpointStore::finish`] at
//! the loop's next iteration, or first thing by the store's next operation in this process (and
//! by its drop). The call's hold of the store's lock is kept until then, so other processes wait
//! as they do for any call in progress.

use std::collections::{BTreeMap, HashMap};

use super::beside::{self, sha256_hex};
use super::calls;
use super::capture::{parent_dir, Deferred};
use super::later::Shared;
use super::log::{line_of, Change};
use super::state::{lstat_at, Kind, Meta, State};
use super::{normalize, prune, CallInfo, CheckpointStore, Inner, Listing, LogWrite};
use crate::error::Result;
use crate::fs::root::path::Beneath;

/// Old bytes from this size on are hashed on a second thread while the commit runs (smaller
/// ones cost less to hash than to hand over).
const BESIDE_BYTES: usize = 8 << 10;

/// Old bytes from this size on are compared with the bytes written there last (see [`Recent`])
/// on that thread too.
const COMPARE_BESIDE_BYTES: usize = 256 << 10;

/// The new bytes [`Recent`] holds at most (each shared with its plan, which also holds the
/// edit's old bytes: about twice this in memory).
const RECENT_BYTES: u64 = 16 << 20;

/// A path a file tool's commit writes, with the bytes the tool holds.
pub struct Known {
    /// Root-relative, as the store names it ([`normalize`]d by [`CheckpointStore::around`]).
    pub path: Vec<u8>,
    /// The bytes the commit checks the file still holds before it writes (an edit's), if any.
    pub old: Option<Shared>,
    /// The bytes the commit writes.
    pub new: Shared,
    /// SHA-256 of `new`, 64 hex chars, when the commit computed it (the body may set it).
    pub new_hash: Option<String>,
}

fn len(data: &Shared) -> u64 {
    (**data).as_ref().len() as u64
}

/// The bytes file tools wrote last, by path, with their SHA-256 (at most [`RECENT_BYTES`]):
/// the next edit of a path recognises its old bytes by comparing, not hashing. A memo of
/// content to hash only; whether the object is still stored is checked when it is used.
#[derive(Default)]
pub struct Recent {
    by_path: HashMap<Vec<u8>, (String, Shared)>,
    bytes: u64,
}

impl Recent {
    fn insert(&mut self, path: Vec<u8>, hash: String, data: Shared) {
        if let Some((_, old)) = self.by_path.remove(&path) {
            self.bytes -= len(&old);
        }
        let n = len(&data);
        if n > RECENT_BYTES {
            return;
        }
        while self.bytes + n > RECENT_BYTES {
            let Some(k) = self.by_path.keys().next().cloned() else {
                break;
            };
            if let Some((_, d)) = self.by_path.remove(&k) {
                self.bytes -= len(&d);
            }
        }
        self.bytes += n;
        self.by_path.insert(path, (hash, data));
    }

    /// What a file tool wrote at `path` last, with its hash.
    fn get(&self, path: &[u8]) -> Option<(String, Shared)> {
        self.by_path.get(path).cloned()
    }
}

/// A file tool's checkpoint whose commit ran: what its record needs
/// ([`CheckpointStore::finish_with`]). Held in the store's state between a commit run
/// on the event loop and its record ([`CheckpointStore::around_later`]).
pub(crate) struct Unfinished {
    beneath: Beneath,
    known: Vec<Known>,
    tops: Vec<Vec<u8>>,
    before: BTreeMap<Vec<u8>, State>,
    deferred: BTreeMap<Vec<u8>, Deferred>,
    hashing: Vec<(Vec<u8>, beside::Hashing)>,
    /// Whether the commit succeeded.
    ok: bool,
    call: CallInfo,
    /// A durable unit's call record on disk.
    record: Option<std::path::PathBuf>,
    /// Whether it holds a hold of the store's lock of its own (given back once recorded).
    holds: bool,
}

impl CheckpointStore {
    /// A file tool's call in one: keeps the state of `paths` (as [`CheckpointStore::keep`]),
    /// runs `body` (the commit, given the store's descriptor of the root), records what changed as `call`'s checkpoint (as
    /// [`CheckpointStore::record`]). `known`: the paths the commit writes with the bytes the
    /// tool holds (see the module doc); `body` may fill in their `new_hash`. `durable`: a
    /// durable unit's call, whose record is on disk while it runs (see [`calls`]; as
    /// [`super::For::Durable`]). The store's lock is held throughout (and, for writes left to
    /// the writer thread, until they are done). Returns the body's result and the listing
    /// (`None`: nothing changed); `None` without `wait` when another process holds the store's
    /// lock (nothing done: call again with `wait`, off the event loop), when a background job
    /// is followed (by any process: its follower may be gone, and what the job changed since
    /// the last look must be counted first; see [`super::jobs`]), or when `calls/` holds a
    /// record (a dead command's is adopted with a walk: see [`super::calls`]).
    ///
    /// Errors (the outer result): `InvalidArgument` for an absolute path or one with `..`
    /// (the body does not run); `Io` for a full disk (before the body: it does not run).
    #[allow(clippy::type_complexity)]
    pub fn around<T>(
        &self,
        paths: &[Vec<u8>],
        known: Vec<Known>,
        call: CallInfo,
        durable: bool,
        wait: bool,
        body: impl FnOnce(&mut [Known], &Beneath) -> Result<T>,
    ) -> Result<Option<(Result<T>, Option<Listing>)>> {
        let Some((_hold, mut inner, result, unfinished)) =
            self.around_begin(paths, known, call, durable, wait, body)?
        else {
            return Ok(None);
        };
        let recorded = self.finish_with(&mut inner, unfinished);
        Ok(Some((result, recorded?)))
    }

    /// [`CheckpointStore::around`] without waiting, for a call on an event loop: runs the
    /// commit and returns its result; the checkpoint is recorded by the next
    /// [`CheckpointStore::finish`] (the caller's, once its call has returned), or by whatever
    /// uses the store next in this process, which finishes it first. Until then the call holds
    /// the store's lock: no other process reads the store half recorded. `None` as for
    /// `around` without `wait`. A durable call (`durable` with a tool call id) is recorded
    /// before this returns.
    ///
    /// Errors: as `around`'s outer result.
    pub fn around_later<T>(
        &self,
        paths: &[Vec<u8>],
        known: Vec<Known>,
        call: CallInfo,
        durable: bool,
        body: impl FnOnce(&mut [Known], &Beneath) -> Result<T>,
    ) -> Result<Option<Result<T>>> {
        let Some((hold, mut inner, result, mut unfinished)) =
            self.around_begin(paths, known, call, durable, false, body)?
        else {
            return Ok(None);
        };
        if unfinished.record.is_some() || !unfinished.ok {
            // A durable call's record, or a commit that failed (its error goes to the caller, who
            // then has nothing to finish): recorded now.
            self.finish_with(&mut inner, unfinished)?;
            return Ok(Some(result));
        }
        // The hold goes with the record: given back once it is done.
        std::mem::forget(hold);
        unfinished.holds = true;
        inner.unfinished = Some(unfinished);
        self.unfinished
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(Some(result))
    }

    /// Records the checkpoint of a commit [`CheckpointStore::around_later`] left unrecorded, if
    /// any (nothing otherwise).
    ///
    /// Errors: `Io` for a write that failed (a full disk): that checkpoint is lost, as if the
    /// process had been killed after the commit; what is on disk is loaded next time.
    pub fn finish(&self) -> Result<()> {
        if !self.unfinished.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        let mut inner = self.lock();
        self.finish_in(&mut inner)
    }

    /// [`CheckpointStore::finish`], then waits until the writer thread has put everything queued
    /// on disk (and given back its hold of the store's lock): for a process about to exit, whose
    /// writer thread would otherwise end with it.
    ///
    /// Errors: as `finish`, or the first write of the writer thread that failed.
    pub fn finish_and_flush(&self) -> Result<()> {
        self.finish()?;
        self.objects.flush().map_err(|e| super::io_error(&e))
    }

    /// [`CheckpointStore::finish`] with the store's state locked.
    pub(super) fn finish_in(&self, inner: &mut Inner) -> Result<()> {
        let Some(unfinished) = inner.unfinished.take() else {
            return Ok(());
        };
        self.unfinished
            .store(false, std::sync::atomic::Ordering::Release);
        match self.finish_with(inner, unfinished) {
            Ok(_) => Ok(()),
            Err(e) => {
                inner.generation = super::UNSEEN;
                Err(e)
            }
        }
    }

    /// The part of `around` up to and including the body: the hold of the store's lock, its
    /// state locked, the body's result and what its record needs.
    #[allow(clippy::type_complexity)]
    fn around_begin<T>(
        &self,
        paths: &[Vec<u8>],
        mut known: Vec<Known>,
        call: CallInfo,
        durable: bool,
        wait: bool,
        body: impl FnOnce(&mut [Known], &Beneath) -> Result<T>,
    ) -> Result<
        Option<(
            super::coord::Hold<'_>,
            std::sync::MutexGuard<'_, Inner>,
            Result<T>,
            Unfinished,
        )>,
    > {
        for k in &mut known {
            k.path = normalize(&k.path)?;
        }
        let beneath = self.beneath()?;
        let (hold, mut inner) = if wait {
            self.begin()?
        } else if !self.jobs.none_at() || !calls::none_at(&self.calls_dir) {
            // A job to count first, or a record in `calls/`: a dead command's, which the reload
            // taking the lock adopts with a walk of the tree (never on the caller's event loop).
            return Ok(None);
        } else {
            match self.try_begin()? {
                Some(begun) => begun,
                None => return Ok(None),
            }
        };
        if self.objects.later_failed() {
            // A write left to the writer failed (a full disk): said now, the log reloaded next.
            self.persist(&mut inner, LogWrite::None, false)?;
        }
        let durable = (durable && call.tool_call_id.is_some()).then_some(&call);
        // A durable call's record names its before states: their objects are written first.
        let defer: Vec<Vec<u8>> = known
            .iter()
            .filter(|k| k.old.is_some() && durable.is_none())
            .map(|k| k.path.clone())
            .collect();
        let (mut tops, mut before, deferred) =
            self.keep_paths(&mut inner, &beneath, paths, &defer)?;
        let record = self.write_call_record(durable, &mut tops, &mut before)?;
        // Old bytes not recognised (new to the store) are hashed beside the commit; those a
        // file tool wrote there last are compared with them once it is done.
        let mut hashing: Vec<(Vec<u8>, beside::Hashing)> = Vec::new();
        for k in &known {
            if let (true, Some(old)) = (deferred.contains_key(&k.path), &k.old) {
                let data = (**old).as_ref();
                let recent = inner.recent.get(&k.path);
                if data.len() >= COMPARE_BESIDE_BYTES
                    || (recent.is_none() && data.len() >= BESIDE_BYTES)
                {
                    hashing.push((k.path.clone(), beside::sha256_beside(old.clone(), recent)));
                }
            }
        }
        let result = body(&mut known, &beneath);
        let unfinished = Unfinished {
            beneath,
            known,
            tops,
            before,
            deferred,
            hashing,
            ok: result.is_ok(),
            call,
            record,
            holds: false,
        };
        Ok(Some((hold, inner, result, unfinished)))
    }

    /// Records what a commit changed (`around`'s part after the body); returns the listing
    /// (`None`: nothing changed).
    fn finish_with(&self, inner: &mut Inner, u: Unfinished) -> Result<Option<Listing>> {
        let Unfinished {
            beneath,
            mut known,
            tops,
            mut before,
            deferred,
            hashing,
            ok,
            call,
            record,
            holds,
        } = u;
        let mut hashes: HashMap<Vec<u8>, String> = HashMap::new();
        for (path, h) in hashing {
            hashes.insert(path, h.wait());
        }
        let mut given = BTreeMap::new();
        let recorded = if ok {
            for k in &mut known {
                if !tops.contains(&k.path) {
                    continue; // excluded
                }
                let at = deferred.get(&k.path);
                if let (Some(d), Some(old)) = (at, &k.old) {
                    let hash = hashes.remove(&k.path).or_else(|| {
                        // Bytes a file tool wrote there last, compared (else hashed).
                        inner
                            .recent
                            .get(&k.path)
                            .filter(|(_, d)| (**d).as_ref() == (**old).as_ref())
                            .map(|(h, _)| h)
                    });
                    let state = self.kept_old(inner, old, hash, d.meta.mode);
                    before.insert(k.path.clone(), state);
                }
                let after = self.written(inner, &beneath, k, at);
                given.insert(k.path.clone(), after);
            }
            Ok(())
        } else {
            // Nothing was written: the deferred paths are as they were.
            let rels: Vec<Vec<u8>> = deferred.into_keys().collect();
            self.capture_into_index(inner, &beneath, &rels)
                .map(|states| before.extend(rels.into_iter().zip(states)))
        };
        let recorded = recorded
            .and_then(|()| self.keep_changes_given(inner, &beneath, tops, before, given))
            .and_then(|changes| self.append_fused(inner, changes, call, record.as_deref()));
        // After the log: a kill before this leaves the record, and the call's next attempt
        // finds its checkpoint (the call's own hold is given back by `_hold`, or here).
        self.close(record.as_deref(), holds);
        recorded
    }

    /// Appends a checkpoint of `changes` (none: nothing) as `call`'s and prunes to the budget.
    /// When this call queued objects for the writer thread (or it is still writing earlier
    /// ones), the line goes to the writer after them, with a hold of the store's lock it gives
    /// back when done; when nothing is queued, the line is appended here (one `write` through
    /// the log's kept descriptor: cheaper than waking the writer). The log or the index is
    /// written now, whole where it must be, when pruning, with no log file yet, with another
    /// call's record on disk, or for `own`, this call's.
    fn append_fused(
        &self,
        inner: &mut Inner,
        changes: Vec<Change>,
        call: CallInfo,
        own: Option<&std::path::Path>,
    ) -> Result<Option<Listing>> {
        let listing = super::locked::new_checkpoint(inner, changes, call);
        if inner.store_bytes() > self.settings.budget_bytes {
            // The index on disk must not name objects the pruning may remove.
            self.persist(inner, LogWrite::None, true)?;
        }
        // A dead attempt's retry compares the tree with the index on disk (`index`: it must be
        // current); its before states' objects stay.
        let (protect, index) = if own.is_none() && calls::none_at(&self.calls_dir) {
            Default::default()
        } else {
            calls::objects_and_others(&self.dir, own)
        };
        let pruned = prune::prune(inner, &self.objects, self.settings.budget_bytes, &protect);
        let later = listing.is_some()
            && !pruned
            && !index
            && own.is_none()
            && inner.log_on_disk
            && !self.objects.later_idle();
        let last = inner.log.checkpoints.last().filter(|_| later).cloned();
        let Some(cp) = last else {
            let log = match (pruned, listing.is_some()) {
                (true, _) => LogWrite::Whole,
                (false, true) => LogWrite::Append,
                (false, false) => LogWrite::None,
            };
            self.persist(inner, log, index)?;
            return Ok(listing);
        };
        // Already held by this call: counted, never waits; given back after the line.
        let _ = self.coord.enter();
        let coord = std::sync::Arc::clone(&self.coord);
        let marks = std::sync::Arc::clone(&coord);
        self.objects.append_then_later(
            self.dir.join("log.jsonl"),
            Box::new(move || {
                // The new generation reaches the lock file before the line reaches the log: a
                // process killed with its lock held (a hold is taken again before the last is
                // given back: calls back to back) leaves no line another process would not
                // reload for.
                marks.write_generation();
                line_of(&cp)
            }),
            Box::new(move || coord.leave()),
        );
        inner.generation = self.coord.bump_by_leave();
        Ok(listing)
    }

    /// The before-state of a file that held `old` (its SHA-256 `hash` when known; mode `mode`):
    /// its object kept by the writer thread (before the checkpoint's log line) unless above
    /// `max_file_bytes`.
    fn kept_old(&self, inner: &mut Inner, old: &Shared, hash: Option<String>, mode: u32) -> State {
        let data = (**old).as_ref();
        let size = data.len() as u64;
        let stored = size <= self.settings.max_file_bytes;
        let hash = hash.unwrap_or_else(|| sha256_hex(data));
        // An object the store counts is on disk (or queued): no `stat` for it.
        if stored && !inner.sizes.contains_key(&hash) {
            let added = self.objects.later(&hash, old.clone());
            if added > 0 {
                inner.add_sizes(vec![(hash.clone(), added)]);
            }
        }
        State::File {
            hash,
            size,
            mode,
            stored,
        }
    }

    /// The after-state of `k`'s path once its commit wrote `k.new`: those bytes, from memory,
    /// whatever is there by now. A file someone else changed right after the commit (another
    /// size, another kind, gone) is then a change since the checkpoint, which a rewind refuses
    /// (see `force`), never taken for the call's own change. The path is looked at only for
    /// the file's mode (the commit keeps the old file's; another kind there: the mode before,
    /// else 0644) and for the index: a regular file of that size is the commit's (racy, so the
    /// next look reads it again), anything else is left for the next look to capture. `at`:
    /// where the path was looked at before the commit (its directory still open).
    fn written(
        &self,
        inner: &mut Inner,
        beneath: &Beneath,
        k: &mut Known,
        at: Option<&Deferred>,
    ) -> State {
        let data = (*k.new).as_ref();
        let size = data.len() as u64;
        let st = match at {
            Some(d) => lstat_at(d.dir.raw(beneath), &d.name).ok(),
            None => parent_dir(beneath, &k.path)
                .ok()
                .and_then(|(dir, name)| lstat_at(dir.raw(beneath), &name).ok()),
        };
        let meta = st.as_ref().and_then(Meta::of);
        let mode = match (&meta, at) {
            (Some(m), _) if m.kind == Kind::File => m.mode,
            (_, Some(d)) => d.meta.mode,
            _ => 0o644,
        };
        let hash = k.new_hash.take().unwrap_or_else(|| sha256_hex(data));
        let stored = size <= self.settings.max_file_bytes;
        if stored && !inner.sizes.contains_key(&hash) {
            let added = self.objects.later(&hash, k.new.clone());
            if added > 0 {
                inner.add_sizes(vec![(hash.clone(), added)]);
            }
        }
        if stored {
            inner
                .recent
                .insert(k.path.clone(), hash.clone(), k.new.clone());
        }
        let state = State::File {
            hash,
            size,
            mode,
            stored,
        };
        match meta {
            Some(meta) if meta.kind == Kind::File && meta.size == size => {
                // Racy whatever its times say: the bytes are the commit's, the metadata a later
                // look's.
                let racy = Meta {
                    mtime_ns: i64::MIN,
                    ..meta
                };
                inner.index.insert(k.path.clone(), (racy, state.clone()));
            }
            _ => {
                inner.index.remove(&k.path);
            }
        }
        inner.index_dirty = true;
        state
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::checkpoint::Settings;
    use crate::error::{Error, ErrorKind};

    fn call() -> CallInfo {
        CallInfo {
            tool_name: "edit_file".into(),
            ..Default::default()
        }
    }

    /// What an edit of `a.txt` from `old` to `new` knows.
    fn known(old: &str, new: &str) -> Vec<Known> {
        vec![Known {
            path: b"a.txt".to_vec(),
            old: Some(Arc::new(old.as_bytes().to_vec())),
            new: Arc::new(new.as_bytes().to_vec()),
            new_hash: None,
        }]
    }

    /// An edit of `a.txt` from `old` to `new`, its commit a plain write.
    fn edit(store: &CheckpointStore, root: &Path, old: &str, new: &str) -> Option<Listing> {
        let known = known(old, new);
        let (written, listing) = store
            .around(&[b"a.txt".to_vec()], known, call(), false, true, |_, _| {
                std::fs::write(root.join("a.txt"), new).map_err(|e| Error::io(&e, "write"))
            })
            .unwrap()
            .unwrap();
        written.unwrap();
        listing
    }

    /// An edit of `a.txt` from `old` to `new` by `around_later` (its commit a plain write): the
    /// file written, its checkpoint not recorded yet.
    fn later(store: &CheckpointStore, root: &Path, old: &str, new: &str) {
        store
            .around_later(
                &[b"a.txt".to_vec()],
                known(old, new),
                call(),
                false,
                |_, _| std::fs::write(root.join("a.txt"), new).map_err(|e| Error::io(&e, "write")),
            )
            .unwrap()
            .unwrap()
            .unwrap();
    }

    fn rewind(store: &CheckpointStore, to: &str, force: bool) -> Result<()> {
        let plan = store.plan_rewind(to, None)?;
        let pinned: Vec<_> = plan
            .files
            .iter()
            .map(|f| (f.path.clone(), f.old_hash.clone()))
            .collect();
        store.commit_rewind(to, None, &pinned, force).map(|_| ())
    }

    #[test]
    fn edits_recorded_from_memory_diff_and_rewind_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::write(r.join("a.txt"), "one\n").unwrap();
        let store = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
        let first = edit(&store, r, "one\n", "two\n").unwrap();
        let second = edit(&store, r, "two\n", "three\n").unwrap();
        assert_eq!((first.bytes_kept, second.bytes_kept), (4, 4));
        let diff = |id: &str| store.diff(id).unwrap()[0].1.clone();
        assert_eq!(
            diff(&first.id),
            "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two"
        );
        assert_eq!(
            diff(&second.id),
            "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+three"
        );
        // Every object is on disk and the log names both, as a restart reads them.
        drop(store);
        let store = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
        assert_eq!(store.list(None), vec![first.clone(), second]);
        rewind(&store, &first.id, false).unwrap();
        assert_eq!(std::fs::read(r.join("a.txt")).unwrap(), b"one\n");
    }

    /// An edit run by `around_later`: the file is written when it returns, its checkpoint
    /// recorded by `finish`, by the store's next operation, or by its drop; until then the
    /// store's lock stays held, so another process never reads the store half recorded.
    #[test]
    fn an_edit_recorded_later_holds_the_lock_until_it_is_recorded() {
        let locked_by_us = |r: &Path| {
            let other =
                std::fs::File::open(r.join(".pydantic-ai-harness/checkpoints/lock")).unwrap();
            // SAFETY: a valid descriptor; a non-blocking try on another open file description.
            let free = unsafe {
                libc::flock(
                    std::os::fd::AsRawFd::as_raw_fd(&other),
                    libc::LOCK_EX | libc::LOCK_NB,
                )
            } == 0;
            !free
        };
        for how in ["finish", "list", "edit", "drop"] {
            let dir = tempfile::tempdir().unwrap();
            let r = dir.path();
            std::fs::write(r.join("a.txt"), "one\n").unwrap();
            let store = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
            later(&store, r, "one\n", "two\n");
            assert_eq!(std::fs::read(r.join("a.txt")).unwrap(), b"two\n", "{how}");
            assert!(locked_by_us(r), "{how}: the lock is held until the record");
            if how == "drop" {
                drop(store);
                let store =
                    CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
                let listed = store.list(None);
                assert_eq!(listed.len(), 1, "{how}");
                rewind(&store, &listed[0].id, false).unwrap();
                assert_eq!(std::fs::read(r.join("a.txt")).unwrap(), b"one\n", "{how}");
                continue;
            }
            let listed = match how {
                "finish" => {
                    store.finish().unwrap();
                    store.finish().unwrap(); // nothing left: nothing done
                    store.list(None)
                }
                "list" => store.list(None),
                _ => {
                    edit(&store, r, "two\n", "three\n").unwrap();
                    store.list(None)
                }
            };
            let n = if how == "edit" { 2 } else { 1 };
            assert_eq!(listed.len(), n, "{how}");
            assert_eq!(listed[0].paths, vec![b"a.txt".to_vec()], "{how}");
            store_flushed(r);
            let again = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
            assert_eq!(again.list(None), listed, "{how}: on disk as listed");
            drop(again);
            rewind(&store, &listed[0].id, false).unwrap();
            assert_eq!(std::fs::read(r.join("a.txt")).unwrap(), b"one\n", "{how}");
        }
    }

    /// A commit that fails under `around_later` leaves nothing to finish: the lock is free when it
    /// returns (its caller gets the error and schedules no record).
    #[test]
    fn a_failed_commit_recorded_later_leaves_the_lock_free() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::write(r.join("a.txt"), "one\n").unwrap();
        let store = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
        let failed = store
            .around_later(
                &[b"a.txt".to_vec()],
                known("one\n", "two\n"),
                call(),
                false,
                |_, _| Err::<(), _>(Error::new(ErrorKind::Conflict, "changed")),
            )
            .unwrap()
            .unwrap();
        assert!(failed.is_err());
        store_flushed(r); // would wait for ever with the lock kept
        assert!(store.list(None).is_empty());
    }

    /// Calls back to back keep the store's lock taken from one to the next (the second takes its
    /// hold before the writer gives back the first's). A process killed then must still leave a
    /// generation that makes another process reload: the first call's line is on disk.
    #[test]
    fn a_process_killed_between_calls_back_to_back_leaves_its_lines_seen() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::write(r.join("a.txt"), "one\n").unwrap();
        let store = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
        edit(&store, r, "zero\n", "one\n").unwrap(); // a generation other than a new store's
        let other = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
        assert_eq!(other.list(None).len(), 1); // loaded: the other process's view
        store_flushed(r);
        assert_eq!(store.list(None).len(), 1);
        for (old, new) in [("one\n", "two\n"), ("two\n", "three\n")] {
            later(&store, r, old, new);
        }
        // The first call's line is on disk (the second call recorded it before its commit); the
        // second call waits for its record, its hold kept. Then the process is killed.
        store.objects.flush().unwrap();
        store.coord.give_up_as_if_killed();
        std::mem::forget(store);
        let listed = other.list(None);
        assert_eq!(
            listed.len(),
            2,
            "the other process reloads and finds the first call's line"
        );
        let fresh = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
        assert_eq!(fresh.list(None), listed);
        // A call of the other process now gets the next id, not the lost line's.
        let next = edit(&other, r, "three\n", "four\n").unwrap();
        assert!(listed.iter().all(|l| l.id != next.id));
        assert_eq!(other.list(None).len(), 3);
    }

    /// Waits until the store's lock is free (the writer thread gave back the last hold).
    fn store_flushed(r: &Path) {
        let f = std::fs::File::open(r.join(".pydantic-ai-harness/checkpoints/lock")).unwrap();
        // SAFETY: a valid descriptor; blocks until the lock is free, then gives it back.
        unsafe {
            libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX);
            libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_UN);
        }
    }

    #[test]
    fn a_change_right_after_the_commit_is_a_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::write(r.join("a.txt"), "one\n").unwrap();
        let store = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
        let first = edit(&store, r, "one\n", "two\n").unwrap();
        // Same size, same clock tick: only the content tells.
        std::fs::write(r.join("a.txt"), "tw0\n").unwrap();
        let err = rewind(&store, &first.id, false).unwrap_err();
        assert!(
            err.message.contains("someone else: a.txt"),
            "{}",
            err.message
        );
        // The next edit's old bytes are the person's: the chain is broken, the person's change kept.
        let second = edit(&store, r, "tw0\n", "two\n").unwrap();
        assert!(rewind(&store, &first.id, false).is_err());
        rewind(&store, &second.id, false).unwrap();
        assert_eq!(std::fs::read(r.join("a.txt")).unwrap(), b"tw0\n");
    }

    /// Someone else replaces the file (another size) or removes it right after the commit,
    /// before the checkpoint looks at it again: the checkpoint still holds the call's own bytes
    /// as its after-state, so a rewind refuses the person's change instead of undoing it unseen.
    #[test]
    fn a_change_of_another_size_right_after_the_commit_is_not_the_calls() {
        for person in [Some("someone else's, longer\n"), None] {
            let dir = tempfile::tempdir().unwrap();
            let r = dir.path();
            std::fs::write(r.join("a.txt"), "one\n").unwrap();
            let store = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
            let (written, listing) = store
                .around(
                    &[b"a.txt".to_vec()],
                    known("one\n", "two\n"),
                    call(),
                    false,
                    true,
                    |_, _| {
                        std::fs::write(r.join("a.txt"), "two\n").unwrap();
                        match person {
                            Some(text) => std::fs::write(r.join("a.txt"), text).unwrap(),
                            None => std::fs::remove_file(r.join("a.txt")).unwrap(),
                        }
                        Ok(())
                    },
                )
                .unwrap()
                .unwrap();
            written.unwrap();
            let first = listing.unwrap();
            assert_eq!(
                store.diff(&first.id).unwrap()[0].1,
                "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two"
            );
            let err = rewind(&store, &first.id, false).unwrap_err();
            assert!(
                err.message.contains("someone else: a.txt"),
                "{}",
                err.message
            );
            let on_disk = std::fs::read_to_string(r.join("a.txt")).ok();
            assert_eq!(on_disk.as_deref(), person);
        }
    }

    #[test]
    fn a_failed_commit_records_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::write(r.join("a.txt"), "one\n").unwrap();
        let store = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
        let (result, listing) = store
            .around(
                &[b"a.txt".to_vec()],
                known("one\n", "two\n"),
                call(),
                false,
                true,
                |_, _| -> Result<()> { Err(Error::new(ErrorKind::Conflict, "changed")) },
            )
            .unwrap()
            .unwrap();
        assert!(result.is_err());
        assert_eq!(listing, None);
        assert!(store.list(None).is_empty());
        let first = edit(&store, r, "one\n", "two\n").unwrap();
        assert_eq!(first.id, "cp-000001");
    }
}
