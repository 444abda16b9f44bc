//! Checkpoints (issue 23): what the workspace was before each tool call that could change
//! it, and the rewind that puts it back.
//!
//! A [`CheckpointStore`] lives in `<root>/.pydantic-ai-harness/checkpoints/`:
//! - [`store`]: the content-addressed objects (reflink or copy, never a hard link);
//! - [`index`]: the baseline, every tracked path's metadata and state as last seen;
//! - [`log`]: the checkpoints, each a call's changed paths with their before and after states;
//! - [`scan`]: the parallel metadata walk a shell command's snapshot compares;
//! - [`capture`]: one path's state beneath the root, its bytes kept;
//! - [`around`]: a file tool's keep, commit and record as one call, its bytes from memory;
//! - [`later`]: the objects a writer thread puts in the store off the call's path;
//! - [`rewind`]: the plan of a rewind and its crash-safe commit;
//! - [`prune`]: keeping the store within its byte budget, oldest checkpoints first;
//! - [`shown`]: the per-file diff texts.
//!
//! A file tool's call is [`CheckpointStore::keep`] (its paths, before) then
//! [`CheckpointStore::record`], or both around its commit in one [`CheckpointStore::around`];
//! a shell command's is [`CheckpointStore::snapshot`] (a walk, and
//! the bytes of whatever differs from the index) then `record` (a second walk: what differs
//! from the first is the command's change). Every method takes the store's lock for its whole
//! run, so calls from several threads are serialised.

pub mod around;
pub mod capture;
pub mod index;
pub mod later;
pub mod log;
pub mod prune;
pub mod rewind;
pub mod scan;
pub mod shown;
pub mod state;
pub mod store;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Mutex;

use crate::error::{Error, ErrorKind, Result};
use crate::fs::root::path::{Beneath, Root};
use capture::{capture_all, Bytes};
use index::Index;
use log::{Change, Checkpoint, Log};
use scan::{scan, Excludes, Scanned};
use state::{Kind, State};
use store::Objects;

/// Where a store lives below the root.
pub const STORE_DIR: &str = ".pydantic-ai-harness/checkpoints";

/// The error a checkpoint operation gives the model or the user: relative paths only.
pub fn checkpoint_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Conflict, message)
}

fn io_error(e: &std::io::Error) -> Error {
    Error::io(
        e,
        "The checkpoint store could not be written (is the disk full?).",
    )
}

/// The settings of a store.
#[derive(Debug, Clone)]
pub struct Settings {
    /// gitignore-style patterns the snapshots leave out.
    pub exclude: Vec<String>,
    /// Files above this many bytes are recorded by hash only.
    pub max_file_bytes: u64,
    /// The store's size bound in bytes; the oldest checkpoints are pruned beyond it.
    pub budget_bytes: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            exclude: vec![".git/".into()],
            max_file_bytes: 64 << 20,
            budget_bytes: 1 << 30,
        }
    }
}

/// A checkpoint as listed: what `list` and `record` return.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// `cp-000017`.
    pub id: String,
    /// The run the call belongs to.
    pub run_id: Option<String>,
    /// The tool call's id.
    pub tool_call_id: Option<String>,
    /// The tool's name.
    pub tool_name: String,
    /// The paths the call changed, sorted, root-relative bytes.
    pub paths: Vec<Vec<u8>>,
    /// Epoch seconds.
    pub created_at: f64,
    /// Bytes kept to restore the state before the call.
    pub bytes_kept: u64,
}

impl Listing {
    fn of(cp: &Checkpoint) -> Listing {
        Listing {
            id: cp.id.clone(),
            run_id: cp.run_id.clone(),
            tool_call_id: cp.tool_call_id.clone(),
            tool_name: cp.tool_name.clone(),
            paths: cp.changes.iter().map(|c| c.path.clone()).collect(),
            created_at: cp.created_at,
            bytes_kept: cp.bytes_kept(),
        }
    }
}

/// Who the recorded call was.
#[derive(Debug, Clone, Default)]
pub struct CallInfo {
    /// The run id.
    pub run_id: Option<String>,
    /// The tool call id.
    pub tool_call_id: Option<String>,
    /// The tool name.
    pub tool_name: String,
    /// Epoch seconds.
    pub created_at: f64,
}

/// How a change reaches the log file.
enum LogWrite {
    /// It does not change.
    None,
    /// The last checkpoint is new: appended.
    Append,
    /// Anything else: the whole log replaced.
    Whole,
}

/// A call in progress.
enum Pending {
    /// A file tool's paths (`tops`) and the state of each path below or above them, before.
    Keep {
        tops: Vec<Vec<u8>>,
        before: BTreeMap<Vec<u8>, State>,
    },
    /// A shell command: the walk before it, and the changes found against the index then
    /// (taken by `extend`).
    Snapshot {
        walk: Scanned,
        found: Vec<Change>,
        since: i64,
    },
}

/// The mutable part of a store.
pub(crate) struct Inner {
    pub(crate) index: Index,
    pub(crate) log: Log,
    /// Object hash to size in bytes: everything in `objects/`.
    pub(crate) sizes: HashMap<String, u64>,
    pending: HashMap<u64, Pending>,
    next_handle: u64,
    index_dirty: bool,
    /// The bytes file tools wrote last, by path ([`around`]).
    recent: around::Recent,
    /// Whether `log.jsonl` was there at the last look (a line can be appended to it).
    log_on_disk: bool,
}

impl Inner {
    fn add_sizes(&mut self, added: Vec<(String, u64)>) {
        for (h, n) in added {
            self.sizes.insert(h, n);
        }
    }

    /// Bytes in the store.
    pub(crate) fn store_bytes(&self) -> u64 {
        self.sizes.values().sum()
    }
}

/// The checkpoints of one workspace root. See the module doc.
pub struct CheckpointStore {
    root: Root,
    dir: PathBuf,
    excludes: Excludes,
    settings: Settings,
    objects: Objects,
    inner: Mutex<Inner>,
}

impl CheckpointStore {
    /// Opens (or creates) the store of the workspace at `root_dir` (an existing directory).
    /// State written before (the log, the index, the objects) is loaded; a half-written state
    /// (temporary files of a killed process) is cleared.
    ///
    /// Errors: `InvalidArgument` for a missing root, `InvalidPattern` for a bad `exclude`,
    /// `Conflict` for a log in a format this version cannot read, `Io` when the store cannot be
    /// created.
    pub fn open(root_dir: &str, settings: Settings) -> Result<CheckpointStore> {
        let root = Root::new(root_dir, None)?;
        if !root.real_root().is_dir() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "The checkpoint root is not a directory.",
            ));
        }
        let excludes = Excludes::new(&settings.exclude)?;
        let dir = root.real_root().join(STORE_DIR);
        let objects = Objects::open(&dir).map_err(|e| io_error(&e))?;
        let _ = std::fs::remove_file(dir.join("log.tmp"));
        let _ = std::fs::remove_file(dir.join("index.tmp"));
        let log = Log::load(&dir.join("log.jsonl")).map_err(checkpoint_error)?;
        let log_on_disk = dir.join("log.jsonl").exists();
        let index = index::load(&dir.join("index"));
        let mut known: HashMap<String, u64> = HashMap::new();
        let states = index.values().map(|(_, s)| s).chain(
            log.checkpoints
                .iter()
                .flat_map(|c| c.changes.iter().flat_map(|ch| [&ch.before, &ch.after])),
        );
        for state in states {
            if let State::File {
                hash,
                size,
                stored: true,
                ..
            } = state
            {
                known.insert(hash.clone(), *size);
            }
        }
        let sizes = objects
            .all(&known)
            .map_err(|e| io_error(&e))?
            .into_iter()
            .collect();
        Ok(CheckpointStore {
            root,
            dir,
            excludes,
            settings,
            objects,
            inner: Mutex::new(Inner {
                index,
                log,
                sizes,
                pending: HashMap::new(),
                next_handle: 0,
                index_dirty: false,
                recent: around::Recent::default(),
                log_on_disk,
            }),
        })
    }

    fn beneath(&self) -> Result<Beneath> {
        self.root.open_root()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn keep_bytes(&self) -> Bytes {
        Bytes::Keep(self.settings.max_file_bytes)
    }

    fn new_handle(inner: &mut Inner, pending: Pending) -> u64 {
        inner.next_handle += 1;
        inner.pending.insert(inner.next_handle, pending);
        inner.next_handle
    }

    /// Captures `rels` and updates the index with what was seen; returns their states.
    fn capture_into_index(
        &self,
        inner: &mut Inner,
        beneath: &Beneath,
        rels: &[Vec<u8>],
    ) -> Result<Vec<State>> {
        let since = state::now_ns() - state::RACY_NS;
        // `scan::threads()` reads the cgroup's CPU quota: not for the few paths of a file tool.
        let threads = if rels.len() < capture::PARALLEL_MIN {
            1
        } else {
            scan::threads()
        };
        let captured = capture_all(
            beneath,
            &self.objects,
            Some(&inner.index),
            rels,
            self.keep_bytes(),
            threads,
        )
        .map_err(|e| io_error(&e))?;
        let mut states = Vec::with_capacity(rels.len());
        for (rel, (meta, state, added)) in rels.iter().zip(captured) {
            inner.add_sizes(added);
            match meta.map(|m| m.settled(since)) {
                Some(m) => {
                    let changed = inner
                        .index
                        .get(rel)
                        .is_none_or(|(om, os)| *om != m || *os != state);
                    if changed {
                        inner.index.insert(rel.clone(), (m, state.clone()));
                        inner.index_dirty = true;
                    }
                }
                None => {
                    if inner.index.remove(rel).is_some() {
                        inner.index_dirty = true;
                    }
                }
            }
            states.push(state);
        }
        Ok(states)
    }

    /// Before a file tool's change: captures the current state of `paths` (root-relative,
    /// resolved; a directory with everything below it; missing parent directories too, so a
    /// rewind removes those the call makes). Paths the snapshots exclude are left out.
    /// Returns a handle for [`CheckpointStore::record`].
    ///
    /// Errors: `InvalidArgument` for an absolute path or one with `..`; `Io` for a full disk.
    pub fn keep(&self, paths: &[Vec<u8>]) -> Result<u64> {
        let beneath = self.beneath()?;
        let mut inner = self.lock();
        let (tops, before, _) = self.keep_paths(&mut inner, &beneath, paths, &[])?;
        Ok(Self::new_handle(&mut inner, Pending::Keep { tops, before }))
    }

    /// [`CheckpointStore::keep`]'s work: the tops (normalized, not excluded) and the states
    /// before. A file among `defer` that the index cannot vouch for is not read: it is returned
    /// with its metadata instead (its bytes are known to the caller, see [`around`]).
    #[allow(clippy::type_complexity)]
    fn keep_paths(
        &self,
        inner: &mut Inner,
        beneath: &Beneath,
        paths: &[Vec<u8>],
        defer: &[Vec<u8>],
    ) -> Result<(
        Vec<Vec<u8>>,
        BTreeMap<Vec<u8>, State>,
        BTreeMap<Vec<u8>, state::Meta>,
    )> {
        let mut tops = Vec::new();
        let mut wanted: Vec<Vec<u8>> = Vec::new();
        for p in paths {
            let p = normalize(p)?;
            if p.is_empty() || self.excludes.excludes_path(&p) {
                continue;
            }
            // Missing ancestors: a rewind removes the directories the call makes.
            for (i, _) in p.iter().enumerate().filter(|(_, b)| **b == b'/') {
                wanted.push(p[..i].to_vec());
            }
            wanted.push(p.clone());
            tops.push(p);
        }
        wanted.sort();
        wanted.dedup();
        let mut deferred = BTreeMap::new();
        if !defer.is_empty() {
            wanted.retain(|rel| {
                if !defer.contains(rel) {
                    return true;
                }
                match capture::look(beneath, Some(&inner.index), rel) {
                    capture::Looked::File(meta, ..) => {
                        deferred.insert(rel.clone(), meta);
                        false
                    }
                    capture::Looked::Known(_) => true,
                }
            });
        }
        let states = self.capture_into_index(inner, beneath, &wanted)?;
        let mut before = BTreeMap::new();
        for (rel, state) in wanted.into_iter().zip(states) {
            let is_top = tops.contains(&rel);
            // An ancestor that exists is not the call's business: only a missing one is.
            if !is_top && state != State::Absent {
                continue;
            }
            if is_top && matches!(state, State::Dir { .. }) {
                let below = self.scan_below(beneath, &rel)?;
                let below_states = self.capture_into_index(inner, beneath, &below)?;
                before.extend(below.into_iter().zip(below_states));
            }
            before.insert(rel, state);
        }
        Ok((tops, before, deferred))
    }

    fn scan_below(&self, beneath: &Beneath, rel: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(scan(beneath, rel, &self.excludes, scan::threads())?
            .into_iter()
            .map(|(p, _)| p)
            .collect())
    }

    /// Before a shell command: walks the tree's metadata and keeps the bytes of every entry
    /// that differs from the index (the first time: the whole tree). Returns a handle for
    /// [`CheckpointStore::record`] or [`CheckpointStore::extend`].
    ///
    /// Errors: `Io` for a full disk.
    pub fn snapshot(&self) -> Result<u64> {
        let beneath = self.beneath()?;
        let mut inner = self.lock();
        let since = state::now_ns() - state::RACY_NS;
        let walk = scan(&beneath, b"", &self.excludes, scan::threads())?;
        let found = self.settle_walk(&mut inner, &beneath, &walk)?;
        Ok(Self::new_handle(
            &mut inner,
            Pending::Snapshot { walk, found, since },
        ))
    }

    /// Brings the index up to `walk`: captures what differs, drops what is gone; returns the
    /// changes against the index.
    fn settle_walk(
        &self,
        inner: &mut Inner,
        beneath: &Beneath,
        walk: &Scanned,
    ) -> Result<Vec<Change>> {
        let mut differ: Vec<Vec<u8>> = Vec::new();
        let mut gone: Vec<Vec<u8>> = Vec::new();
        {
            let mut idx = inner.index.iter().peekable();
            for (p, m) in walk {
                while let Some((ip, _)) = idx.peek() {
                    if ip.as_slice() < p.as_slice() {
                        gone.push((*ip).clone());
                        idx.next();
                    } else {
                        break;
                    }
                }
                match idx.peek() {
                    Some((ip, (im, _))) if ip.as_slice() == p.as_slice() => {
                        if !im.same(m) {
                            differ.push(p.clone());
                        }
                        idx.next();
                    }
                    _ => differ.push(p.clone()),
                }
            }
            gone.extend(idx.map(|(p, _)| p.clone()));
        }
        let befores: Vec<State> = differ
            .iter()
            .chain(gone.iter())
            .map(|p| inner.index.get(p).map_or(State::Absent, |(_, s)| s.clone()))
            .collect();
        let mut all = differ;
        all.extend(gone);
        let afters = self.capture_into_index(inner, beneath, &all)?;
        let mut changes: Vec<Change> = all
            .into_iter()
            .zip(befores.into_iter().zip(afters))
            .filter(|(_, (b, a))| !b.same(a))
            .map(|(path, (before, after))| Change {
                path,
                before,
                after,
            })
            .collect();
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(changes)
    }

    /// After the call of `handle`: its changes (a keep handle: its paths again; a snapshot
    /// handle: a second walk against the first). Appends a checkpoint when something changed
    /// and returns its listing; prunes to the budget. The handle is consumed.
    ///
    /// Errors: `InvalidArgument` for an unknown handle; `Io` for a full disk.
    pub fn record(&self, handle: u64, call: CallInfo) -> Result<Option<Listing>> {
        let beneath = self.beneath()?;
        let mut inner = self.lock();
        let pending = inner
            .pending
            .remove(&handle)
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "Unknown checkpoint handle."))?;
        let is_snapshot = matches!(pending, Pending::Snapshot { .. });
        let changes = match pending {
            Pending::Keep { tops, before } => {
                self.keep_changes(&mut inner, &beneath, tops, before, BTreeMap::new())?
            }
            Pending::Snapshot { walk, since, .. } => {
                self.walk_changes(&mut inner, &beneath, walk, since)?
            }
        };
        self.append(&mut inner, changes, call, is_snapshot, false)
    }

    /// Appends a checkpoint of `changes` (none: nothing) as `call`'s, prunes to the budget and
    /// persists the log (and with `index`, the index). `later`: the log line is appended by
    /// the writer thread, after the objects queued before it ([`later`]).
    fn append(
        &self,
        inner: &mut Inner,
        changes: Vec<Change>,
        call: CallInfo,
        index: bool,
        later: bool,
    ) -> Result<Option<Listing>> {
        let listing = if changes.is_empty() {
            None
        } else {
            let id = inner.log.new_id();
            let cp = Checkpoint {
                id,
                run_id: call.run_id,
                tool_call_id: call.tool_call_id,
                tool_name: call.tool_name,
                created_at: call.created_at,
                changes,
            };
            let listing = Listing::of(&cp);
            inner.log.checkpoints.push(cp);
            Some(listing)
        };
        if inner.store_bytes() > self.settings.budget_bytes {
            // The index on disk must not name objects the pruning may remove (and the objects
            // queued must be on disk before any is removed).
            self.objects.flush().map_err(|e| io_error(&e))?;
            self.persist(inner, LogWrite::None, true)?;
        }
        let pruned = prune::prune(inner, &self.objects, self.settings.budget_bytes);
        let path = self.dir.join("log.jsonl");
        let log = match (pruned, listing.is_some()) {
            (true, _) => LogWrite::Whole,
            (false, true) if later && inner.log_on_disk => {
                if let Some(cp) = inner.log.checkpoints.last().cloned() {
                    self.objects
                        .append_later(path, Box::new(move || log::line_of(&cp)));
                }
                LogWrite::None
            }
            (false, true) => LogWrite::Append,
            (false, false) => LogWrite::None,
        };
        self.persist(inner, log, index)?;
        Ok(listing)
    }

    /// The changes of a keep: each path of `before` (and below a top that is a directory now)
    /// from its state before to its state now, captured (or taken from `given`, the after-states
    /// the caller knows).
    fn keep_changes(
        &self,
        inner: &mut Inner,
        beneath: &Beneath,
        tops: Vec<Vec<u8>>,
        mut before: BTreeMap<Vec<u8>, State>,
        mut given: BTreeMap<Vec<u8>, State>,
    ) -> Result<Vec<Change>> {
        let mut rels: Vec<Vec<u8>> = before.keys().cloned().collect();
        for top in &tops {
            if matches!(given.get(top), Some(State::File { .. })) {
                continue; // a file now, as the caller saw
            }
            let is_dir = matches!(
                capture::parent_dir(beneath, top)
                    .ok()
                    .and_then(|(d, n)| state::lstat_at(d.raw(beneath), &n).ok())
                    .and_then(|st| state::Meta::of(&st)),
                Some(m) if m.kind == Kind::Dir
            );
            if is_dir {
                rels.extend(self.scan_below(beneath, top)?);
            }
        }
        rels.extend(given.keys().cloned());
        rels.sort();
        rels.dedup();
        let captured: Vec<Vec<u8>> = rels
            .iter()
            .filter(|r| !given.contains_key(*r))
            .cloned()
            .collect();
        let mut captured = captured
            .iter()
            .zip(self.capture_into_index(inner, beneath, &captured)?);
        let afters: Vec<State> = rels
            .iter()
            .map(|r| match given.remove(r) {
                Some(s) => s,
                None => captured.next().expect("one capture per path").1,
            })
            .collect();
        Ok(rels
            .into_iter()
            .zip(afters)
            .filter_map(|(path, after)| {
                let before = before.remove(&path).unwrap_or(State::Absent);
                (!before.same(&after)).then_some(Change {
                    path,
                    before,
                    after,
                })
            })
            .collect())
    }

    fn walk_changes(
        &self,
        inner: &mut Inner,
        beneath: &Beneath,
        walk: Scanned,
        since: i64,
    ) -> Result<Vec<Change>> {
        let settle_since = state::now_ns() - state::RACY_NS;
        let after = scan(beneath, b"", &self.excludes, scan::threads())?;
        let mut differ: Vec<Vec<u8>> = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < walk.len() || j < after.len() {
            let ord = match (walk.get(i), after.get(j)) {
                (Some(a), Some(b)) => a.0.cmp(&b.0),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            match ord {
                std::cmp::Ordering::Less => {
                    differ.push(walk[i].0.clone());
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    differ.push(after[j].0.clone());
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    // A racy entry may have changed within the tick of the first look.
                    if !walk[i].1.same(&after[j].1) || walk[i].1.is_racy(since) {
                        differ.push(walk[i].0.clone());
                    }
                    i += 1;
                    j += 1;
                }
            }
        }
        let befores: Vec<State> = differ
            .iter()
            .map(|p| inner.index.get(p).map_or(State::Absent, |(_, s)| s.clone()))
            .collect();
        // The walk found the changes; the index must not hide them (capture without it).
        let captured = capture_all(
            beneath,
            &self.objects,
            None,
            &differ,
            self.keep_bytes(),
            scan::threads(),
        )
        .map_err(|e| io_error(&e))?;
        let mut changes = Vec::new();
        for ((path, before), (meta, after, added)) in differ.into_iter().zip(befores).zip(captured)
        {
            inner.add_sizes(added);
            match meta {
                Some(m) => inner
                    .index
                    .insert(path.clone(), (m.settled(settle_since), after.clone())),
                None => inner.index.remove(&path),
            };
            inner.index_dirty = true;
            if !before.same(&after) {
                changes.push(Change {
                    path,
                    before,
                    after,
                });
            }
        }
        Ok(changes)
    }

    /// A background job's changes: what snapshot `handle` found against the index (changes
    /// made since the last look, by the job running meanwhile) is added to checkpoint
    /// `checkpoint_id`. The handle stays open (record or release it). Returns the new listing,
    /// or `None` when the checkpoint is gone (rewound or pruned).
    ///
    /// Errors: `InvalidArgument` for an unknown handle or a keep handle.
    pub fn extend(&self, checkpoint_id: &str, handle: u64) -> Result<Option<Listing>> {
        let mut inner = self.lock();
        let found = match inner.pending.get_mut(&handle) {
            Some(Pending::Snapshot { found, .. }) => std::mem::take(found),
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "Unknown snapshot handle.",
                ))
            }
        };
        let Some(pos) = inner.log.position(checkpoint_id) else {
            return Ok(None);
        };
        let cp = &mut inner.log.checkpoints[pos];
        cp.merge(found);
        let listing = Listing::of(cp);
        self.persist(&mut inner, LogWrite::Whole, false)?;
        Ok(Some(listing))
    }

    /// Drops `handle` without recording (the call failed before it ran). Unknown handles are
    /// ignored.
    pub fn release(&self, handle: u64) -> Result<()> {
        let mut inner = self.lock();
        inner.pending.remove(&handle);
        if inner.index_dirty {
            self.persist(&mut inner, LogWrite::None, true)?;
        }
        Ok(())
    }

    /// The checkpoints, oldest first; with `run_id`, only that run's.
    pub fn list(&self, run_id: Option<&str>) -> Vec<Listing> {
        let inner = self.lock();
        inner
            .log
            .checkpoints
            .iter()
            .filter(|c| run_id.is_none() || c.run_id.as_deref() == run_id)
            .map(Listing::of)
            .collect()
    }

    /// The ids pruned to keep the store within its budget, oldest first.
    pub fn pruned(&self) -> Vec<String> {
        self.lock().log.pruned.clone()
    }

    /// Per path changed by checkpoint `checkpoint_id`: the path and its diff (see [`shown`]).
    ///
    /// Errors: `Conflict` (a `CheckpointError`) for an unknown or pruned id.
    pub fn diff(&self, checkpoint_id: &str) -> Result<Vec<(Vec<u8>, String)>> {
        self.objects.flush().map_err(|e| io_error(&e))?;
        let cp = {
            let inner = self.lock();
            let pos = rewind::find(&inner.log, checkpoint_id)?;
            inner.log.checkpoints[pos].clone()
        };
        Ok(cp
            .changes
            .iter()
            .map(|c| {
                (
                    c.path.clone(),
                    shown::change_text(&self.objects, &c.path, &c.before, &c.after),
                )
            })
            .collect())
    }

    /// What rewinding to the state before checkpoint `to` (and every later one) would do;
    /// with `paths`, only those paths (a directory: everything below it). Changes nothing.
    ///
    /// Errors: `Conflict` for an unknown or pruned id.
    pub fn plan_rewind(&self, to: &str, paths: Option<&[Vec<u8>]>) -> Result<rewind::Plan> {
        self.objects.flush().map_err(|e| io_error(&e))?;
        let beneath = self.beneath()?;
        let inner = self.lock();
        let paths = paths
            .map(|ps| ps.iter().map(|p| normalize(p)).collect::<Result<Vec<_>>>())
            .transpose()?;
        rewind::plan(&inner, &beneath, &self.objects, to, paths)
    }

    /// Commits a rewind planned by [`CheckpointStore::plan_rewind`] (`pinned`: each planned
    /// path and the current hash the plan saw). See [`rewind::commit`].
    ///
    /// Errors: `Conflict` naming the files changed by someone else (unless `force`), or
    /// changed since the plan; `Io` for a full disk.
    pub fn commit_rewind(
        &self,
        to: &str,
        paths: Option<&[Vec<u8>]>,
        pinned: &[(Vec<u8>, Option<String>)],
        force: bool,
    ) -> Result<rewind::Rewound> {
        self.objects.flush().map_err(|e| io_error(&e))?;
        let beneath = self.beneath()?;
        let mut inner = self.lock();
        let paths = paths
            .map(|ps| ps.iter().map(|p| normalize(p)).collect::<Result<Vec<_>>>())
            .transpose()?;
        let done = rewind::commit(
            &mut inner,
            &beneath,
            &self.objects,
            to,
            paths,
            pinned,
            force,
        )?;
        inner.index_dirty = true;
        self.persist(&mut inner, LogWrite::Whole, true)?;
        Ok(done)
    }

    /// Writes the log (with `log`) and the index (with `index`, when changed).
    ///
    /// The index is a cache of what was last seen: a file tool's record leaves it to the next
    /// shell command's record, a rewind or the store's drop (after a kill, an older index only
    /// makes the next snapshot read the files changed since again; every object it names is
    /// on disk, since objects are written before anything refers to them).
    fn persist(&self, inner: &mut Inner, log: LogWrite, index: bool) -> Result<()> {
        let index = index && inner.index_dirty;
        if index || !matches!(log, LogWrite::None) {
            // Nothing on disk may name an object not written yet, nor a line queued after it.
            self.objects.flush().map_err(|e| io_error(&e))?;
        }
        if index {
            index::save(&self.dir.join("index"), &inner.index).map_err(|e| io_error(&e))?;
            inner.index_dirty = false;
        }
        let path = self.dir.join("log.jsonl");
        match log {
            LogWrite::None => {}
            LogWrite::Append => inner.log.append_last(&path).map_err(|e| io_error(&e))?,
            LogWrite::Whole => inner.log.save(&path).map_err(|e| io_error(&e))?,
        }
        if !matches!(log, LogWrite::None) {
            inner.log_on_disk = true;
        }
        Ok(())
    }

    /// Bytes the store's objects hold.
    pub fn store_bytes(&self) -> u64 {
        self.lock().store_bytes()
    }
}

impl Drop for CheckpointStore {
    /// Writes the index if a file tool's record left it changed.
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        if inner.index_dirty && self.objects.flush().is_ok() {
            let _ = index::save(&self.dir.join("index"), &inner.index);
        }
    }
}

/// `path` as the store keys it: `/`-separated, no `.` components, no trailing `/`.
///
/// Errors: `InvalidArgument` for an absolute path or one with `..`.
pub fn normalize(path: &[u8]) -> Result<Vec<u8>> {
    if path.first() == Some(&b'/') {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "Checkpoint paths are relative to the workspace root.",
        ));
    }
    let mut out: Vec<u8> = Vec::with_capacity(path.len());
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "Checkpoint paths may not contain '..'.",
                ))
            }
            _ => {
                if !out.is_empty() {
                    out.push(b'/');
                }
                out.extend_from_slice(part);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
