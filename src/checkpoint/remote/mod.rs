//! Checkpoints of a workspace whose files are not on this host (reached through the
//! workspace protocol): the store lives in a host directory of its own (objects, the log,
//! and the workspace root it belongs to), and the caller moves the bytes. Before a file
//! tool's change the caller reads each path's state through the protocol and hands it over
//! ([`Seen`]); after it, the new state; [`RemoteStore::record`] hashes, keeps and logs them.
//! A rewind is planned here from the states the caller read ([`RemoteStore::plan_rewind`]),
//! checked again and turned into ordered steps ([`RemoteStore::rewind_steps`]) that the
//! caller carries out through the protocol, then [`RemoteStore::finish_rewind`] drops the
//! rewound checkpoints.
//!
//! Shell commands are compared through metadata listings taken in the workspace ([`listing`]).
//!
//! Like a local store, the host directory may be shared by several stores (objects of one
//! process share one store through the Python layer; other processes have their own): each
//! operation, and each call from its keep or snapshot to its record or release, holds the
//! directory's lock ([`super::coord`]), and a store reloads the log and the index when another
//! wrote them ([`super::locked`]). A durable unit's call leaves a record on disk while it is in
//! progress ([`super::calls`]), so a retry after its worker died counts what the dead attempt did.
//!
//! The protocol carries no permission bits and follows symlinks: every state here is a file
//! (bytes), a directory or nothing, recorded with mode 0 ("not known").

pub mod listing;

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use sha2::{Digest, Sha256};

use super::calls::{self, CallRecord};
use super::coord::{Coord, Hold};
use super::locked;
use super::log::Change;
use super::rewind::{self, Action, Plan};
use super::scan::Excludes;
use super::state::State;
use super::store::Objects;
use super::{
    checkpoint_error, io_error, normalize, normalize_all, CallInfo, Inner, Listing, Settings,
    UNSEEN,
};
use crate::error::{Error, ErrorKind, Result};

/// The mode recorded for every remote state: the protocol does not carry one.
const NO_MODE: u32 = 0;

/// A path's state as the workspace protocol showed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Nothing there.
    Absent,
    /// A directory.
    Dir,
    /// A file and its bytes.
    File(Vec<u8>),
    /// A file whose bytes could not be read (recorded by hash `?`: not restorable).
    Unreadable,
}

/// One step of a rewind, carried out by the caller through the protocol, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Root-relative path bytes.
    pub path: Vec<u8>,
    /// `remove` (a file), `rmdir` (a directory, only when empty), `write` (the object `hash`)
    /// or `mkdir`.
    pub op: &'static str,
    /// The object to write (`write` only).
    pub hash: Option<String>,
    /// Where the path is reported once done: `restored`, `deleted` or `removed_dirs`;
    /// `None`: a removal that makes room for a `write` or `mkdir` of the same path.
    pub reported: Option<&'static str>,
    /// A `rmdir` of a directory the calls made: left without failing when no longer empty.
    pub may_stay: bool,
}

/// What an open handle is for.
enum What {
    /// A file tool's call: the state of each path it observes, before ([`RemoteStore::keep`]).
    Keep(BTreeMap<Vec<u8>, State>),
    /// A shell command between its two listings ([`listing`]).
    Snap(listing::Snap),
    /// A hold only ([`RemoteStore::hold`]: a rewind's steps and the call around its handles).
    Hold,
}

/// An open handle: it holds the store's lock until its record or release; a durable unit's
/// call has its record on disk ([`calls`]) meanwhile.
struct Open {
    what: What,
    call: Option<CallInfo>,
    record: Option<PathBuf>,
}

fn unknown_handle() -> Error {
    Error::new(ErrorKind::InvalidArgument, "Unknown checkpoint handle.")
}

/// An index as loaded (its states' modes taken from the listings' metadata) made as recorded
/// here: every state with mode 0, like the states read through the protocol.
fn without_modes(index: &mut super::index::Index) {
    for (_, state) in index.values_mut() {
        if let State::File { mode, .. } | State::Dir { mode } = state {
            *mode = NO_MODE;
        }
    }
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The checkpoints of one non-local workspace root, kept in a host directory. See the module doc.
pub struct RemoteStore {
    dir: PathBuf,
    root: Option<String>,
    excludes: Excludes,
    settings: Settings,
    objects: Objects,
    coord: Coord,
    inner: Mutex<Inner>,
    /// The calls in progress (each holding the lock), by handle.
    open: Mutex<HashMap<u64, Open>>,
    next_handle: AtomicU64,
}

impl RemoteStore {
    /// Opens (or creates) the store in the host directory `dir` for the workspace root `root`
    /// (a workspace path; `None`: whichever root the store was made for, if any). Opening never
    /// waits: while another process holds the directory's lock, the state is loaded by the
    /// first operation.
    ///
    /// Errors: `Conflict` when the store belongs to another root or its log is unreadable;
    /// `InvalidPattern` for a bad `exclude`; `Io` when it cannot be created.
    pub fn open(dir: &str, root: Option<&str>, settings: Settings) -> Result<RemoteStore> {
        let excludes = Excludes::new(&settings.exclude)?;
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).map_err(|e| io_error(&e))?;
        let objects = Objects::open(&dir).map_err(|e| io_error(&e))?;
        let root_file = dir.join("root");
        let known = std::fs::read(&root_file)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        let root = match (known, root) {
            (Some(k), Some(r)) if k != r => {
                return Err(checkpoint_error(format!(
                    "This store_dir holds the checkpoints of the workspace root {k}, not {r}: give each workspace its own store_dir."
                )))
            }
            (Some(k), _) => Some(k),
            (None, Some(r)) => {
                super::index::write_whole(&root_file, r.as_bytes()).map_err(|e| io_error(&e))?;
                Some(r.to_string())
            }
            (None, None) => None,
        };
        let coord = Coord::open(&dir).map_err(|e| io_error(&e))?;
        let store = RemoteStore {
            dir,
            root,
            excludes,
            settings,
            objects,
            coord,
            open: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(0),
            // Loaded under the lock ([`locked::begin`]): now, unless another process holds it.
            // No walk of this host to reuse: the listings come from the workspace.
            inner: Mutex::new(Inner::new(
                super::log::Log::default(),
                super::index::Index::new(),
                Default::default(),
                UNSEEN,
                false,
            )),
        };
        if store.coord.try_enter().is_some() {
            let hold = Hold(&store.coord);
            drop(store.begin()?);
            drop(hold);
        }
        Ok(store)
    }

    /// A hold of the lock and the state, current ([`locked::begin`]).
    fn begin(&self) -> Result<(Hold<'_>, MutexGuard<'_, Inner>)> {
        locked::begin(
            &self.coord,
            &self.inner,
            &self.dir,
            &self.objects,
            without_modes,
        )
    }

    /// The state for a read ([`locked::read`]).
    fn read(&self) -> (Option<Hold<'_>>, MutexGuard<'_, Inner>) {
        locked::read(
            &self.coord,
            &self.inner,
            &self.dir,
            &self.objects,
            without_modes,
        )
    }

    fn handles(&self) -> MutexGuard<'_, HashMap<u64, Open>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A handle for `what`, holding the lock until its record or release (the caller holds it
    /// now: counted, never waits).
    fn new_handle(&self, what: What, call: Option<CallInfo>, record: Option<PathBuf>) -> u64 {
        let _ = self.coord.enter();
        let handle = self.next_handle.fetch_add(1, Ordering::Relaxed) + 1;
        self.handles().insert(handle, Open { what, call, record });
        handle
    }

    /// Ends a handle's call: its record removed, its hold given back.
    fn close(&self, record: Option<&Path>) {
        if let Some(path) = record {
            calls::remove(path);
        }
        self.coord.leave();
    }

    /// After a write of the log or the index (the lock held): the next generation, so that the
    /// other stores of the directory reload.
    fn wrote(&self, inner: &mut Inner) -> Result<()> {
        inner.generation = self.coord.bump().map_err(|e| io_error(&e))?;
        Ok(())
    }

    /// Writes the index when it changed (the lock held).
    fn save_index(&self, inner: &mut Inner) -> Result<()> {
        if inner.index_dirty {
            super::index::save(&self.dir.join("index"), &inner.index).map_err(|e| io_error(&e))?;
            inner.index_dirty = false;
            self.wrote(inner)?;
        }
        Ok(())
    }

    /// Takes a hold of the store's lock until [`RemoteStore::release`] of the returned handle:
    /// no other process's call or rewind interleaves meanwhile (a rewind's steps, or a call's
    /// reads before its keep or snapshot).
    ///
    /// Errors: `Io` when the lock cannot be taken.
    pub fn hold(&self) -> Result<u64> {
        let (_hold, inner) = self.begin()?;
        drop(inner);
        Ok(self.new_handle(What::Hold, None, None))
    }

    /// The workspace root the store belongs to (`None`: nothing recorded yet, none given).
    pub fn root(&self) -> Option<&str> {
        self.root.as_deref()
    }

    /// The paths whose states a change of `paths` (root-relative) needs, before and after:
    /// each tracked path and its ancestors (so a rewind removes the directories the call
    /// makes), normalized and sorted. Excluded paths are left out.
    ///
    /// Errors: `InvalidArgument` for an absolute path or one with `..`.
    pub fn observed(&self, paths: &[Vec<u8>]) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for p in paths {
            let p = normalize(p)?;
            if p.is_empty() || self.excludes.excludes_path(&p) {
                continue;
            }
            for (i, _) in p.iter().enumerate().filter(|(_, b)| **b == b'/') {
                out.push(p[..i].to_vec());
            }
            out.push(p);
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// `seen` as a state; a file's bytes kept when `keep` (up to `max_file_bytes`), else
    /// kept only if their object is there already.
    fn state_of(&self, inner: &mut Inner, seen: &Seen, keep: bool) -> Result<State> {
        Ok(match seen {
            Seen::Absent => State::Absent,
            Seen::Dir => State::Dir { mode: NO_MODE },
            Seen::Unreadable => State::File {
                hash: "?".into(),
                size: 0,
                mode: NO_MODE,
                stored: false,
            },
            Seen::File(data) => {
                let size = data.len() as u64;
                if keep && size <= self.settings.max_file_bytes {
                    let kept = self.objects.keep_bytes(data).map_err(|e| io_error(&e))?;
                    if kept.added > 0 {
                        inner.sizes.insert(kept.hash.clone(), kept.size);
                    }
                    State::File {
                        hash: kept.hash,
                        size,
                        mode: NO_MODE,
                        stored: true,
                    }
                } else {
                    let hash = hex(&Sha256::digest(data));
                    let stored = self.objects.has(&hash);
                    State::File {
                        hash,
                        size,
                        mode: NO_MODE,
                        stored,
                    }
                }
            }
        })
    }

    /// Before a file tool's change: the states of the paths it observes ([`RemoteStore::observed`]),
    /// as read now (`before`), their bytes kept. For a durable unit's call (`durable`, with a
    /// tool call id) the states are written to a record on disk; a record of the same call
    /// already there is an earlier attempt's that died: its before states are the call's.
    /// Returns a handle for [`RemoteStore::record`] (holding the lock until then) and the paths
    /// to read after the change.
    ///
    /// Errors: `InvalidArgument` for a bad path; `Io` for a full disk.
    pub fn keep(
        &self,
        before: Vec<(Vec<u8>, Seen)>,
        durable: Option<&CallInfo>,
    ) -> Result<(u64, Vec<Vec<u8>>)> {
        let (_hold, mut inner) = self.begin()?;
        let mut states = BTreeMap::new();
        for (path, seen) in before {
            let path = normalize(&path)?;
            if path.is_empty() || self.excludes.excludes_path(&path) {
                continue;
            }
            let state = self.state_of(&mut inner, &seen, true)?;
            states.insert(path, state);
        }
        let record = durable.and_then(|c| calls::path_of(&self.dir, c));
        if let (Some(path), Some(call)) = (&record, durable) {
            if let Some((_, earlier)) = calls::earlier_kept(path, call) {
                states.extend(earlier);
            }
            let kept = Some((states.keys().cloned().collect(), states.clone()));
            calls::write(path, &CallRecord::of(call, kept)).map_err(|e| io_error(&e))?;
        }
        drop(inner);
        let paths = states.keys().cloned().collect();
        let handle = self.new_handle(What::Keep(states), durable.cloned(), record);
        Ok((handle, paths))
    }

    /// Records the file tool's call of `handle` (consumed): `after` is the state of each path
    /// [`RemoteStore::keep`] returned, read after the change; the paths whose state differs
    /// become its checkpoint (their bytes kept). Returns the listing, or `None` when nothing
    /// changed; prunes to the budget.
    ///
    /// Errors: `InvalidArgument` for an unknown handle or a bad path; `Io` for a full disk.
    pub fn record(
        &self,
        handle: u64,
        after: Vec<(Vec<u8>, Seen)>,
        call: CallInfo,
    ) -> Result<Option<Listing>> {
        self.finish(handle, |inner, what| match what {
            What::Keep(before) => {
                let changes = self.kept_changes(inner, &before, after)?;
                self.append(inner, changes, call, false)
            }
            _ => Err(unknown_handle()),
        })
    }

    /// Consumes `handle`: `f` runs on what it is for (the lock held, the state current); whatever
    /// `f` returns, the call's record is removed then (after the log: a kill before leaves the
    /// record, and the next attempt finds it) and its hold given back.
    ///
    /// Errors: `InvalidArgument` for an unknown handle; what `f` returns.
    fn finish<T>(&self, handle: u64, f: impl FnOnce(&mut Inner, What) -> Result<T>) -> Result<T> {
        let (_hold, mut inner) = self.begin()?;
        let open = self.handles().remove(&handle).ok_or_else(unknown_handle)?;
        let result = f(&mut inner, open.what);
        self.close(open.record.as_deref());
        result
    }

    fn kept_changes(
        &self,
        inner: &mut Inner,
        before: &BTreeMap<Vec<u8>, State>,
        after: Vec<(Vec<u8>, Seen)>,
    ) -> Result<Vec<Change>> {
        let mut found = Vec::new();
        for (path, seen) in after {
            let path = normalize(&path)?;
            let Some(before) = before.get(&path) else {
                continue; // not observed before: not this call's
            };
            let after = self.state_of(inner, &seen, true)?;
            if !before.same(&after) {
                found.push(Change {
                    path,
                    before: before.clone(),
                    after,
                });
            }
        }
        Ok(found)
    }

    /// The checkpoints, oldest first; with `run_id`, only that run's.
    pub fn list(&self, run_id: Option<&str>) -> Vec<Listing> {
        let (_hold, inner) = self.read();
        locked::listings(&inner.log, run_id)
    }

    /// The ids pruned to keep the store within its budget, oldest first.
    pub fn pruned(&self) -> Vec<String> {
        let (_hold, inner) = self.read();
        inner.log.pruned.clone()
    }

    /// Bytes the store's objects hold.
    pub fn store_bytes(&self) -> u64 {
        let (_hold, inner) = self.read();
        inner.store_bytes()
    }

    /// Per path changed by checkpoint `checkpoint_id`: the path and its diff.
    ///
    /// Errors: `Conflict` for an unknown or pruned id.
    pub fn diff(&self, checkpoint_id: &str) -> Result<Vec<(Vec<u8>, String)>> {
        let (_hold, inner) = self.begin()?;
        locked::diff(inner, &self.objects, checkpoint_id)
    }

    /// The bytes of object `hash`.
    ///
    /// Errors: `Conflict` when the store no longer has it.
    pub fn object(&self, hash: &str) -> Result<Vec<u8>> {
        // Held: another process's prune does not remove it meanwhile.
        let (_hold, inner) = self.begin()?;
        drop(inner);
        let mut data = Vec::new();
        self.objects
            .open_object(hash)
            .and_then(|mut f| f.read_to_end(&mut data))
            .map_err(|_| checkpoint_error("The checkpoint store no longer has these bytes."))?;
        Ok(data)
    }

    /// The paths a rewind to `to` (limited to `paths`) puts back: the caller reads their
    /// current states for [`RemoteStore::plan_rewind`].
    ///
    /// Errors: `Conflict` for an unknown or pruned id; `InvalidArgument` for a bad path.
    pub fn rewind_paths(&self, to: &str, paths: Option<&[Vec<u8>]>) -> Result<Vec<Vec<u8>>> {
        let filter = normalize_all(paths)?;
        let (_hold, inner) = self.begin()?;
        let pos = rewind::find(&inner.log, to)?;
        let mut out: Vec<Vec<u8>> = inner.log.checkpoints[pos..]
            .iter()
            .flat_map(|cp| cp.changes.iter())
            .filter(|c| rewind::covered(&c.path, &filter))
            .map(|c| c.path.clone())
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// What rewinding to the state before `to` would do, from `current` (each path of
    /// [`RemoteStore::rewind_paths`] and its state now; a missing one is taken as absent).
    /// As the local plan: a path whose current state is not the last recorded after-state, or
    /// that changed between two recorded calls, is a conflict.
    ///
    /// Errors: `Conflict` for an unknown or pruned id.
    pub fn plan_rewind(
        &self,
        to: &str,
        paths: Option<&[Vec<u8>]>,
        current: &[(Vec<u8>, Seen)],
    ) -> Result<Plan> {
        let filter = normalize_all(paths)?;
        let (_hold, mut inner) = self.begin()?;
        let targets = rewind::targets(&inner.log, to, &filter)?;
        let now: HashMap<&[u8], &Seen> = current.iter().map(|(p, s)| (p.as_slice(), s)).collect();
        rewind::plan_of(to, filter, targets, &self.objects, |path| {
            let seen = now.get(path).copied().unwrap_or(&Seen::Absent);
            // Kept (when small enough) so the plan's diff can show a person's change too.
            self.state_of(&mut inner, seen, true)
        })
    }

    /// The steps of a rewind planned by [`RemoteStore::plan_rewind`]: planned again from
    /// `current` (read again just now), each path's current hash compared with `pinned` (what
    /// the caller's plan saw); removals deepest first, then writes and directories parents
    /// first.
    ///
    /// Errors: `Conflict` naming the files changed by someone else (unless `force`) or since
    /// the plan.
    pub fn rewind_steps(
        &self,
        to: &str,
        paths: Option<&[Vec<u8>]>,
        pinned: &[(Vec<u8>, Option<String>)],
        current: &[(Vec<u8>, Seen)],
        force: bool,
    ) -> Result<Vec<Step>> {
        let plan = self.plan_rewind(to, paths, current)?;
        let pinned: BTreeMap<&[u8], &Option<String>> =
            pinned.iter().map(|(p, h)| (p.as_slice(), h)).collect();
        let mut conflicts = plan.conflicts.clone();
        for f in &plan.files {
            if pinned.get(f.path.as_slice()) != Some(&&f.old_hash) && !conflicts.contains(&f.path) {
                conflicts.push(f.path.clone());
            }
        }
        conflicts.sort();
        if !conflicts.is_empty() && !force {
            let names: Vec<String> = conflicts
                .iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            return Err(checkpoint_error(format!(
                "Cannot rewind: changed since the checkpoint by someone else: {}. Rewind with force=True to overwrite them.",
                names.join(", ")
            )));
        }
        let is_dir = |s: &State| matches!(s, State::Dir { .. });
        let mut steps = Vec::new();
        for f in plan.files.iter().rev() {
            let gone = matches!(f.target, State::Absent);
            if !gone && (f.current == State::Absent || is_dir(&f.current) == is_dir(&f.target)) {
                continue;
            }
            let dir = is_dir(&f.current);
            steps.push(Step {
                path: f.path.clone(),
                op: if dir { "rmdir" } else { "remove" },
                hash: None,
                reported: gone.then_some(if dir { "removed_dirs" } else { "deleted" }),
                may_stay: f.action == Action::Rmdir,
            });
        }
        for f in &plan.files {
            let (op, hash) = match &f.target {
                State::File { hash, .. } => ("write", Some(hash.clone())),
                State::Dir { .. } if !is_dir(&f.current) => ("mkdir", None),
                _ => continue, // absent (removed above), a directory already there, a symlink
            };
            steps.push(Step {
                path: f.path.clone(),
                op,
                hash,
                reported: Some("restored"),
                may_stay: false,
            });
        }
        Ok(steps)
    }

    /// After the steps of a rewind to `to` (limited to `paths`) all succeeded: the rewound
    /// checkpoints are dropped (with `paths`, only their changes of those paths).
    ///
    /// Errors: `Conflict` for an unknown id; `Io` for a full disk.
    pub fn finish_rewind(&self, to: &str, paths: Option<&[Vec<u8>]>) -> Result<()> {
        let filter = normalize_all(paths)?;
        let (_hold, mut inner) = self.begin()?;
        let pos = rewind::find(&inner.log, to)?;
        match &filter {
            None => inner.log.checkpoints.truncate(pos),
            Some(_) => {
                for cp in &mut inner.log.checkpoints[pos..] {
                    cp.changes.retain(|c| !rewind::covered(&c.path, &filter));
                }
                inner.log.checkpoints.retain(|c| !c.changes.is_empty());
            }
        }
        inner
            .log
            .save(&self.dir.join("log.jsonl"))
            .map_err(|e| io_error(&e))?;
        self.wrote(&mut inner)
    }

    /// The host directory of the store.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str) -> CallInfo {
        CallInfo {
            run_id: Some("r".into()),
            tool_call_id: Some(name.into()),
            tool_name: "write_file".into(),
            created_at: 1.0,
        }
    }

    /// The store in `dir` for the workspace root `/ws`, default settings.
    pub(super) fn open(dir: &Path) -> RemoteStore {
        RemoteStore::open(dir.to_str().unwrap(), Some("/ws"), Settings::default()).unwrap()
    }

    #[test]
    fn record_plan_and_steps_of_a_rewrite_and_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let (h, paths) = store
            .keep(
                vec![
                    (b"a".to_vec(), Seen::File(b"one".to_vec())),
                    (b"d".to_vec(), Seen::Absent),
                    (b"d/n".to_vec(), Seen::Absent),
                    (b"same".to_vec(), Seen::Dir),
                ],
                None,
            )
            .unwrap();
        assert_eq!(paths.len(), 4);
        let l = store
            .record(
                h,
                vec![
                    (b"a".to_vec(), Seen::File(b"two".to_vec())),
                    (b"d".to_vec(), Seen::Dir),
                    (b"d/n".to_vec(), Seen::File(b"x".to_vec())),
                    (b"same".to_vec(), Seen::Dir),
                ],
                call("c1"),
            )
            .unwrap()
            .unwrap();
        assert_eq!(l.paths, vec![b"a".to_vec(), b"d".to_vec(), b"d/n".to_vec()]);
        assert_eq!(l.bytes_kept, 3);
        let now = vec![
            (b"a".to_vec(), Seen::File(b"two".to_vec())),
            (b"d".to_vec(), Seen::Dir),
            (b"d/n".to_vec(), Seen::File(b"x".to_vec())),
        ];
        let plan = store.plan_rewind(&l.id, None, &now).unwrap();
        assert!(plan.conflicts.is_empty());
        let pinned: Vec<_> = plan
            .files
            .iter()
            .map(|f| (f.path.clone(), f.old_hash.clone()))
            .collect();
        let steps = store
            .rewind_steps(&l.id, None, &pinned, &now, false)
            .unwrap();
        let ops: Vec<(&[u8], &str)> = steps.iter().map(|s| (s.path.as_slice(), s.op)).collect();
        assert_eq!(
            ops,
            vec![(&b"d/n"[..], "remove"), (b"d", "rmdir"), (b"a", "write")]
        );
        assert_eq!(
            store.object(steps[2].hash.as_deref().unwrap()).unwrap(),
            b"one"
        );
        // A person's change is a conflict unless forced.
        let changed = vec![(b"a".to_vec(), Seen::File(b"three".to_vec()))];
        let plan = store.plan_rewind(&l.id, None, &changed).unwrap();
        assert_eq!(plan.conflicts, vec![b"a".to_vec()]);
        store.finish_rewind(&l.id, None).unwrap();
        assert!(store.list(None).is_empty());
        // Reopened: the root is remembered, another one refused.
        drop(store);
        let again =
            RemoteStore::open(dir.path().to_str().unwrap(), None, Settings::default()).unwrap();
        assert_eq!(again.root(), Some("/ws"));
        assert!(RemoteStore::open(
            dir.path().to_str().unwrap(),
            Some("/other"),
            Settings::default()
        )
        .is_err());
    }

    fn write(store: &RemoteStore, path: &[u8], old: &[u8], new: &[u8], c: &str) -> Listing {
        let (h, _) = store
            .keep(vec![(path.to_vec(), Seen::File(old.to_vec()))], None)
            .unwrap();
        store
            .record(h, vec![(path.to_vec(), Seen::File(new.to_vec()))], call(c))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn two_stores_of_one_directory_take_turns_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (open(dir.path()), open(dir.path()));
        assert_eq!(write(&a, b"f", b"1", b"2", "c1").id, "cp-000001");
        assert_eq!(write(&b, b"g", b"1", b"2", "c2").id, "cp-000002");
        assert_eq!(write(&a, b"f", b"2", b"3", "c3").id, "cp-000003");
        assert_eq!(a.list(None), b.list(None));
        // A call's handle holds the lock: the other store waits until its record.
        let (h, _) = a
            .keep(vec![(b"f".to_vec(), Seen::File(b"3".to_vec()))], None)
            .unwrap();
        assert_eq!(b.coord.try_enter(), None);
        a.record(
            h,
            vec![(b"f".to_vec(), Seen::File(b"4".to_vec()))],
            call("c4"),
        )
        .unwrap();
        assert!(b.coord.try_enter().is_some());
        b.coord.leave();
        // A rewind in one drops the checkpoints for the other too.
        b.finish_rewind("cp-000002", None).unwrap();
        let ids: Vec<String> = a.list(None).into_iter().map(|l| l.id).collect();
        assert_eq!(ids, vec!["cp-000001".to_string()]);
    }

    #[test]
    fn a_dead_attempts_before_states_are_the_calls() {
        let dir = tempfile::tempdir().unwrap();
        let durable = call("c1");
        let dead = open(dir.path());
        dead.keep(
            vec![(b"f".to_vec(), Seen::File(b"one".to_vec()))],
            Some(&durable),
        )
        .unwrap();
        drop(dead); // killed after its commit, before its record: the lock goes with it
        let store = open(dir.path());
        let (h, paths) = store
            .keep(
                vec![(b"f".to_vec(), Seen::File(b"two".to_vec()))],
                Some(&durable),
            )
            .unwrap();
        assert_eq!(paths, vec![b"f".to_vec()]);
        let l = store
            .record(
                h,
                vec![(b"f".to_vec(), Seen::File(b"two".to_vec()))],
                durable,
            )
            .unwrap()
            .unwrap();
        assert_eq!((l.paths, l.bytes_kept), (vec![b"f".to_vec()], 3));
        assert!(!calls::any_besides(dir.path(), None)); // the record is gone with the call
    }
}
