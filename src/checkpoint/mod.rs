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
//! - `loaded`: the log, the index (brought up to the log) and the object sizes read from disk;
//! - [`later`]: the objects and log lines a writer thread puts in the store off the call's
//!   path (the store's lock held until they are on disk);
//! - [`rewind`]: the plan of a rewind and its crash-safe commit;
//! - `rewinding`: a store's rewinds, each in its locked step, an open job's changes counted first;
//! - [`prune`]: keeping the store within its byte budget, oldest checkpoints first;
//! - [`shown`]: the per-file diff texts;
//! - [`coord`]: the lock the processes sharing a store take turns with, and its generation;
//! - [`calls`]: the on-disk records of calls in progress (a durable unit's, run again when its
//!   worker dies).
//! - [`jobs`]: the background jobs followed, each record locked by its follower (taken over
//!   when that process is gone).
//! - [`locked`]: the steps any store takes under its lock (a hold, a reload, an appended
//!   checkpoint, the listings and a checkpoint's diff).
//! - [`remote`]: the store of a workspace whose files are not on this host (bytes handed over).
//!
//! A file tool's call is [`CheckpointStore::keep`] (its paths, before) then
//! [`CheckpointStore::record`], or both around its commit in one [`CheckpointStore::around`];
//! a shell command's is [`CheckpointStore::snapshot`] (a walk, and
//! the bytes of whatever differs from the index) then `record` (a second walk: what differs
//! from the first is the command's change). Every method takes the store's lock for its whole
//! run, so calls from several threads are serialised; across processes, each operation and each
//! call (from its keep or snapshot to its record or release) holds the store's `flock`
//! ([`coord`]), and a process taking it reloads the log and the index when another wrote them.

pub mod around;
pub mod beside;
pub mod calls;
pub mod capture;
pub mod coord;
pub mod index;
pub mod jobs;
pub mod later;
mod loaded;
pub(crate) mod locked;
pub mod log;
pub mod prune;
pub mod remote;
pub mod rewind;
pub mod rewinding;
pub mod scan;
pub mod shown;
pub(crate) mod sizes;
pub mod state;
pub mod store;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::{Error, ErrorKind, Result};
use crate::fs::root::path::{Beneath, Root};
use calls::CallRecord;
use capture::{capture_all, Bytes};
use coord::{Coord, Hold};
use index::Index;
use loaded::{load_state, log_on_disk};
use log::{Change, Checkpoint, Log};
use scan::{rescan, scan, Excludes, Scanned};
use sizes::Sizes;
use state::{Kind, State};
use store::Objects;

/// Where a store lives below the root.
pub const STORE_DIR: &str = ".pydantic-ai-harness/checkpoints";

/// The error a checkpoint operation gives the model or the user: relative paths only.
pub fn checkpoint_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Conflict, message)
}

pub(crate) fn io_error(e: &std::io::Error) -> Error {
    let message = match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => {
            "The checkpoint store could not be written (is the disk full?)."
        }
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => {
            "The checkpoint store could not be written (no permission, or a read-only file system)."
        }
        _ => "The checkpoint store could not be written.",
    };
    Error::io(e, message)
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
#[derive(Debug, Clone, Default, PartialEq)]
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

/// What a keep or snapshot is taken for.
#[derive(Debug, Clone, Copy)]
pub enum For<'a> {
    /// A look only (a background job's, an extension's): the store's lock is held for the
    /// operation alone.
    Look,
    /// A tool call: the handle holds the store's lock until its record or release, so no
    /// other process's operation or call interleaves with the call.
    Call,
    /// A durable unit's call (one an engine runs again when its worker dies): as `Call`, and
    /// the call's record on disk (see [`calls`]) while it is in progress.
    Durable(&'a CallInfo),
    /// A shell command outside a durable unit (a snapshot's purpose): as `Call`, and the call's
    /// record on disk while it is in progress, so that, should this process die mid-command,
    /// the next process to take the store's lock records what the command changed as its
    /// checkpoint (see [`calls::adoptable`]).
    Adoptable(&'a CallInfo),
}

/// How a change reaches the log file.
pub(crate) enum LogWrite {
    /// It does not change.
    None,
    /// The last checkpoint is new: appended.
    Append,
    /// Anything else: the whole log replaced.
    Whole,
}

impl LogWrite {
    /// How the log changes after [`Log::add_later`] did `added`.
    pub(crate) fn of(added: log::Added) -> LogWrite {
        match (added.merged, added.appended) {
            (true, _) => LogWrite::Whole,
            (false, true) => LogWrite::Append,
            (false, false) => LogWrite::None,
        }
    }
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

/// An open handle: the call in progress, its record on disk (a call with a tool call id) and
/// whether it holds the store's lock until its record or release.
struct Open {
    what: Pending,
    record: Option<PathBuf>,
    holds: bool,
}

/// The mutable part of a store.
pub(crate) struct Inner {
    pub(crate) index: Index,
    pub(crate) log: Log,
    /// Object hash to size in bytes: everything in `objects/`.
    pub(crate) sizes: Sizes,
    pending: HashMap<u64, Open>,
    next_handle: u64,
    index_dirty: bool,
    /// The last record's walk, whose unchanged directories the next snapshot need not list.
    last_walk: Option<Scanned>,
    /// The store's generation the log and the index in memory are of (see [`coord`]).
    generation: u64,
    /// The bytes file tools wrote last, by path ([`around`]).
    recent: around::Recent,
    /// Whether `log.jsonl` was there at the last look (a line can be appended to it).
    log_on_disk: bool,
    /// The log file's descriptor kept for appends.
    log_file: log::LogFile,
    /// A file tool's commit not recorded yet ([`CheckpointStore::around_later`]).
    unfinished: Option<around::Unfinished>,
}

impl Inner {
    /// The state of a store whose log, index and object sizes are these, as of `generation`.
    pub(crate) fn new(
        log: Log,
        index: Index,
        sizes: Sizes,
        generation: u64,
        log_on_disk: bool,
    ) -> Inner {
        Inner {
            index,
            log,
            sizes,
            pending: HashMap::new(),
            next_handle: 0,
            index_dirty: false,
            last_walk: None,
            generation,
            recent: around::Recent::default(),
            log_on_disk,
            log_file: log::LogFile::default(),
            unfinished: None,
        }
    }

    fn add_sizes(&mut self, added: Vec<(String, u64)>) {
        for (h, n) in added {
            self.sizes.insert(h, n);
        }
    }

    /// Bytes in the store.
    pub(crate) fn store_bytes(&self) -> u64 {
        self.sizes.total()
    }
}

/// The checkpoints of one workspace root. See the module doc.
pub struct CheckpointStore {
    root: Root,
    dir: PathBuf,
    excludes: Excludes,
    settings: Settings,
    objects: Objects,
    /// Shared with the writer thread ([`later`]), which gives back the hold a call's queued
    /// writes keep.
    coord: Arc<Coord>,
    inner: Mutex<Inner>,
    /// `<dir>/calls`, for [`calls::none_at`].
    calls_dir: std::ffi::CString,
    /// The background jobs this store follows (see [`jobs`]).
    pub jobs: jobs::Followed,
    /// Whether `Inner::unfinished` holds a commit to record (read without the mutex).
    unfinished: std::sync::atomic::AtomicBool,
}

/// A generation no store has: the state in memory is none yet (loaded by the next operation).
const UNSEEN: u64 = u64::MAX - 1;

impl CheckpointStore {
    /// Opens (or creates) the store of the workspace at `root_dir` (an existing directory).
    /// State written before (the log, the index, the objects) is loaded (by the first operation
    /// when another process holds the store's lock: opening never waits); a half-written state
    /// (temporary files of a killed process) is cleared, and so are the records of calls in
    /// progress that no attempt will come back for ([`calls::sweep`]).
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
        let coord = Arc::new(Coord::open(&dir).map_err(|e| io_error(&e))?);
        // Opening never waits (it may run where nothing should block): while another process
        // holds the lock, the state is loaded by the first operation instead.
        let (generation, log, index, sizes) = match coord.try_enter() {
            Some(generation) => {
                let hold = Hold(&coord);
                let (log, index, sizes) = load_state(&dir, &objects)?;
                // No call is in progress anywhere (each holds the lock): what `calls/` holds is
                // dead attempts'.
                calls::sweep(&dir, state::now_ns() as f64 / 1e9);
                drop(hold);
                // A dead shell command's record: adopted by the first operation (its reload).
                let generation = if calls::adoptable(&dir, &[]).is_empty() {
                    generation
                } else {
                    UNSEEN
                };
                (generation, log, index, sizes)
            }
            None => (UNSEEN, Log::default(), Index::new(), Sizes::default()),
        };
        let on_disk = log_on_disk(&dir);
        // A path the file system gave holds no NUL byte.
        let calls_dir = std::ffi::CString::new(std::os::unix::ffi::OsStringExt::into_vec(
            dir.join("calls").into_os_string(),
        ))
        .map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                "The checkpoint root is not a directory.",
            )
        })?;
        Ok(CheckpointStore {
            calls_dir,
            jobs: jobs::Followed::new(&dir),
            root,
            dir,
            excludes,
            settings,
            objects,
            coord,
            inner: Mutex::new(Inner::new(log, index, sizes, generation, on_disk)),
            unfinished: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Takes a hold of the store's lock (waiting for another process's operation or call to
    /// end), then the store's mutex; reloads the log and the index when another process wrote
    /// them since this one last looked.
    fn begin(&self) -> Result<(Hold<'_>, MutexGuard<'_, Inner>)> {
        let generation = self.coord.enter().map_err(|e| io_error(&e))?;
        self.begun(generation)
    }

    /// [`CheckpointStore::begin`] without waiting: `None` while another process holds the
    /// store's lock.
    fn try_begin(&self) -> Result<Option<(Hold<'_>, MutexGuard<'_, Inner>)>> {
        match self.coord.try_enter() {
            Some(generation) => self.begun(generation).map(Some),
            None => Ok(None),
        }
    }

    /// The rest of a begin, a hold taken that saw `generation`. A reload (another process wrote
    /// the store, one that died mid-command included) adopts the records of shell commands whose
    /// process died ([`CheckpointStore::adopt_dead`]).
    fn begun(&self, generation: u64) -> Result<(Hold<'_>, MutexGuard<'_, Inner>)> {
        let hold = Hold(&self.coord);
        let mut inner = self.lock();
        let mut generation = generation;
        if inner.unfinished.is_some() {
            // This process's file tool call, recorded first (under its own hold: nobody else
            // wrote the store since, and the generation is the one it leaves). A failure
            // leaves the state to reload from disk.
            let _ = self.finish_in(&mut inner);
            generation = self.coord.generation();
        }
        if inner.generation != generation {
            let (log, index, sizes) = load_state(&self.dir, &self.objects)?;
            inner.log = log;
            inner.index = index;
            inner.sizes = sizes;
            inner.index_dirty = false;
            inner.generation = generation;
            inner.log_on_disk = log_on_disk(&self.dir);
            if self.adopt_dead(&mut inner).is_err() {
                // Left for the next operation: its reload starts from what is on disk.
                inner.generation = UNSEEN;
            }
        }
        Ok((hold, inner))
    }

    /// The workspace root, symlinks resolved.
    pub fn real_root(&self) -> &std::path::Path {
        self.root.real_root()
    }

    /// Records the shell commands whose process died mid-command (their `adopt` records in
    /// `calls/`, not this process's calls in progress): what differs from the index on disk
    /// (written before the record, when the command's snapshot began) is that call's change,
    /// added to its checkpoint or appended as one, not taken into the baseline; the records
    /// are removed. With several (one per process that died), the oldest call gets the
    /// changes. The caller holds the store's lock, the state just loaded.
    ///
    /// Errors: `Io` for a walk or a write that failed (the records stay).
    fn adopt_dead(&self, inner: &mut Inner) -> Result<()> {
        let own: Vec<&std::path::Path> = inner
            .pending
            .values()
            .filter_map(|o| o.record.as_deref())
            .collect();
        let dead = calls::adoptable(&self.dir, &own);
        let Some((_, oldest)) = dead.first() else {
            return Ok(());
        };
        let beneath = self.beneath()?;
        let walk = rescan(&beneath, b"", &self.excludes, scan::threads(), None)?;
        let found = self.settle_walk(inner, &beneath, &walk)?;
        inner.last_walk = Some(walk);
        let log = if found.is_empty() {
            LogWrite::None
        } else {
            Self::attribute(inner, oldest, found)
        };
        self.persist(inner, log, true)?;
        for (path, _) in &dead {
            calls::remove(path);
        }
        Ok(())
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

    /// A handle for `pending` (`record`: its call's record on disk); unless `purpose` is a
    /// look, the handle holds the store's lock until its record or release (the caller holds
    /// it now).
    fn new_handle(
        &self,
        inner: &mut Inner,
        pending: Pending,
        purpose: For<'_>,
        record: Option<PathBuf>,
    ) -> u64 {
        let holds = !matches!(purpose, For::Look);
        if holds {
            // Already held by this operation: counted, never waits.
            let _ = self.coord.enter();
        }
        inner.next_handle += 1;
        inner.pending.insert(
            inner.next_handle,
            Open {
                what: pending,
                record,
                holds,
            },
        );
        inner.next_handle
    }

    /// Ends a handle's call: its record (at `record`) removed, its hold of the lock given back.
    fn close(&self, record: Option<&std::path::Path>, holds: bool) {
        if let Some(path) = record {
            calls::remove(path);
        }
        if holds {
            self.coord.leave();
        }
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
        self.keep_call(paths, For::Call)
    }

    /// [`CheckpointStore::keep`] for `purpose` (`keep` is for a call). For a durable unit's
    /// call with a tool call id, its before states are written to a record on disk (removed at
    /// its record or release); a record of the same call already there is an earlier attempt's
    /// that died (between its commit and its record, say): its before states are the call's,
    /// so the record finds what that attempt changed too.
    ///
    /// Errors: as `keep`.
    pub fn keep_call(&self, paths: &[Vec<u8>], purpose: For<'_>) -> Result<u64> {
        let beneath = self.beneath()?;
        let (_hold, mut inner) = self.begin()?;
        let (mut tops, mut before, _) = self.keep_paths(&mut inner, &beneath, paths, &[])?;
        let call = match purpose {
            For::Durable(call) => Some(call),
            _ => None,
        };
        let record = self.write_call_record(call, &mut tops, &mut before)?;
        Ok(self.new_handle(&mut inner, Pending::Keep { tops, before }, purpose, record))
    }

    /// For a durable unit's call with a tool call id (`call`): the path of its record on disk,
    /// written with `tops` and `before`; a record of the same call already there (an earlier
    /// attempt's that died) adds its tops and before states to them first. `None` otherwise.
    ///
    /// Errors: `Io` when the record cannot be written.
    fn write_call_record(
        &self,
        call: Option<&CallInfo>,
        tops: &mut Vec<Vec<u8>>,
        before: &mut BTreeMap<Vec<u8>, State>,
    ) -> Result<Option<PathBuf>> {
        let record = call.and_then(|c| calls::path_of(&self.dir, c));
        if let (Some(path), Some(call)) = (&record, call) {
            if let Some((earlier_tops, earlier_before)) = calls::earlier_kept(path, call) {
                before.extend(earlier_before);
                for t in earlier_tops {
                    if !tops.contains(&t) {
                        tops.push(t);
                    }
                }
            }
            let kept = Some((tops.clone(), before.clone()));
            calls::write(path, &CallRecord::of(call, kept)).map_err(|e| io_error(&e))?;
        }
        Ok(record)
    }

    /// [`CheckpointStore::keep`]'s work: the tops (normalized, not excluded) and the states
    /// before. A file among `defer` that the index cannot vouch for is not read: it is returned
    /// with its metadata and its directory instead (its bytes are known to the caller, see
    /// [`around`]).
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
        BTreeMap<Vec<u8>, capture::Deferred>,
    )> {
        let mut tops = Vec::new();
        let mut wanted: Vec<Vec<u8>> = Vec::new();
        for p in paths {
            let p = normalize(p)?;
            if p.is_empty() || self.excludes.excludes_path(&p) {
                continue;
            }
            // Missing ancestors: a rewind removes the directories the call makes. A deferred
            // path's commit changes a file that is there (else it changes nothing): its
            // ancestors are there too.
            if !defer.contains(&p) {
                for (i, _) in p.iter().enumerate().filter(|(_, b)| **b == b'/') {
                    wanted.push(p[..i].to_vec());
                }
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
                    capture::Looked::File(meta, dir, name) => {
                        deferred.insert(rel.clone(), capture::Deferred { meta, dir, name });
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
            .iter()
            .map(|(p, _)| p.to_vec())
            .collect())
    }

    /// Before a shell command: walks the tree's metadata and keeps the bytes of every entry
    /// that differs from the index (the first time: the whole tree). Returns a handle for
    /// [`CheckpointStore::record`] or [`CheckpointStore::extend`].
    ///
    /// Errors: `Io` for a full disk.
    pub fn snapshot(&self) -> Result<u64> {
        self.snapshot_call(For::Look)
    }

    /// [`CheckpointStore::snapshot`] for `purpose` (`snapshot` is a look). For a durable
    /// unit's call with a tool call id, the index (brought up to the tree) is written and a
    /// record that the call started is written after it (removed at its record or release). A
    /// record of the same call already there is an earlier attempt's that died mid-command:
    /// what differs from the index is that attempt's change, added to the call's checkpoint
    /// (appended when it has none yet) instead of being taken into the baseline. A shell
    /// command outside a durable unit (`For::Adoptable`) gets the same record, marked for the
    /// next process to adopt should this one die mid-command ([`calls::adoptable`]).
    ///
    /// Errors: `Io` for a full disk.
    pub fn snapshot_call(&self, purpose: For<'_>) -> Result<u64> {
        let beneath = self.beneath()?;
        let (_hold, mut inner) = self.begin()?;
        let since = state::now_ns() - state::RACY_NS;
        let prev = inner.last_walk.take();
        let walk = rescan(
            &beneath,
            b"",
            &self.excludes,
            scan::threads(),
            prev.as_ref(),
        )?;
        let found = self.settle_walk(&mut inner, &beneath, &walk)?;
        let (call, adopt) = match purpose {
            For::Durable(call) => (Some(call), false),
            For::Adoptable(call) => (Some(call), true),
            _ => (None, false),
        };
        let record = call.and_then(|c| calls::path_of(&self.dir, c));
        if let (Some(path), Some(call)) = (&record, call) {
            let earlier = calls::read(path).filter(|r| r.is_of(call) && r.kept.is_none());
            let log = match earlier {
                Some(r) if !found.is_empty() && !adopt => {
                    Self::attribute(&mut inner, &r, found.clone())
                }
                _ => LogWrite::None,
            };
            // The record says the call started from the index on disk: it must be there first.
            self.persist(&mut inner, log, true)?;
            let record = if adopt {
                CallRecord::adoptable(call)
            } else {
                CallRecord::of(call, None)
            };
            calls::write(path, &record).map_err(|e| io_error(&e))?;
            if adopt {
                // A new generation, written or not: a process that has the store open reloads at
                // its next operation, so it finds the record should this one die.
                inner.generation = self.coord.bump().map_err(|e| io_error(&e))?;
            }
        }
        Ok(self.new_handle(
            &mut inner,
            Pending::Snapshot { walk, found, since },
            purpose,
            record,
        ))
    }

    /// Adds `changes` to the checkpoints of `record`'s call (by run and tool call id: see
    /// [`Log::add_later`]), or appends one for it; returns how the log changes.
    fn attribute(inner: &mut Inner, record: &CallRecord, changes: Vec<Change>) -> LogWrite {
        let existing = inner.log.checkpoints.iter().position(|c| {
            c.run_id == record.run_id && c.tool_call_id.as_deref() == Some(&record.tool_call_id)
        });
        if let Some(pos) = existing {
            return LogWrite::of(inner.log.add_later(pos, changes));
        }
        let id = inner.log.new_id();
        inner.log.checkpoints.push(Checkpoint {
            id,
            run_id: record.run_id.clone(),
            tool_call_id: Some(record.tool_call_id.clone()),
            tool_name: record.tool_name.clone(),
            created_at: record.created_at,
            changes,
        });
        LogWrite::Append
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
            for (p, m) in walk.iter() {
                while let Some((ip, _)) = idx.peek() {
                    if ip.as_slice() < p {
                        gone.push((*ip).clone());
                        idx.next();
                    } else {
                        break;
                    }
                }
                match idx.peek() {
                    Some((ip, (im, _))) if ip.as_slice() == p => {
                        if !im.same(m) {
                            differ.push(p.to_vec());
                        }
                        idx.next();
                    }
                    _ => differ.push(p.to_vec()),
                }
            }
            gone.extend(idx.map(|(p, _)| p.clone()));
        }
        let mut all = differ;
        all.extend(gone);
        self.read_changes(inner, beneath, all)
    }

    /// `paths` read again into the index (their bytes kept), and those whose state differs from
    /// the one the index held: the changes since the index last saw them, sorted by path.
    ///
    /// Errors: `Io` when a path cannot be read or its bytes kept.
    fn read_changes(
        &self,
        inner: &mut Inner,
        beneath: &Beneath,
        paths: Vec<Vec<u8>>,
    ) -> Result<Vec<Change>> {
        let befores: Vec<State> = paths
            .iter()
            .map(|p| inner.index.get(p).map_or(State::Absent, |(_, s)| s.clone()))
            .collect();
        let afters = self.capture_into_index(inner, beneath, &paths)?;
        let mut changes: Vec<Change> = paths
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
        self.record_handle(handle, call, false)
            .map(|(listing, _)| listing)
    }

    /// [`CheckpointStore::record`], then, in the same locked step, the walk the record took
    /// after the call kept open as a new snapshot handle (a look: it holds no lock and has no
    /// record on disk), returned with the listing; `None` for a keep handle. What changes
    /// after that walk is what the new handle's record finds, so nothing falls between the two
    /// (a background job's changes, followed from one look to the next: one walk per look).
    ///
    /// Errors: as `record`.
    pub fn record_reopen(
        &self,
        handle: u64,
        call: CallInfo,
    ) -> Result<(Option<Listing>, Option<u64>)> {
        self.record_handle(handle, call, true)
    }

    /// [`CheckpointStore::record`] of `handle`; with `reopen`, as
    /// [`CheckpointStore::record_reopen`].
    fn record_handle(
        &self,
        handle: u64,
        call: CallInfo,
        reopen: bool,
    ) -> Result<(Option<Listing>, Option<u64>)> {
        // The handle's call holds the lock: nothing to wait for, nothing to reload.
        let (_hold, mut inner) = self.begin()?;
        // Before the walk after the call: an entry changed since then is looked at again.
        let since = state::now_ns() - state::RACY_NS;
        let Open {
            what,
            record,
            holds,
        } = inner
            .pending
            .remove(&handle)
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "Unknown checkpoint handle."))?;
        let reopen = reopen && matches!(what, Pending::Snapshot { .. });
        // Whatever fails, the handle is consumed and its hold given back.
        let result = self.beneath().and_then(|beneath| {
            self.record_open(&mut inner, &beneath, what, call, record.as_deref())
        });
        let walk = match (&result, reopen) {
            (Ok(_), true) => inner.last_walk.clone(),
            _ => None,
        };
        let reopened = walk.map(|walk| {
            let found = Vec::new();
            let pending = Pending::Snapshot { walk, found, since };
            self.new_handle(&mut inner, pending, For::Look, None)
        });
        // After the log: a kill before this leaves the record, and the call's next attempt
        // finds its checkpoint.
        self.close(record.as_deref(), holds);
        result.map(|listing| (listing, reopened))
    }

    fn record_open(
        &self,
        inner: &mut Inner,
        beneath: &Beneath,
        pending: Pending,
        call: CallInfo,
        own: Option<&std::path::Path>,
    ) -> Result<Option<Listing>> {
        let is_snapshot = matches!(pending, Pending::Snapshot { .. });
        let changes = match pending {
            Pending::Keep { tops, before } => self.keep_changes(inner, beneath, tops, before)?,
            Pending::Snapshot { walk, since, .. } => {
                self.walk_changes(inner, beneath, walk, since)?
            }
        };
        let listing = locked::new_checkpoint(inner, changes, call);
        if inner.store_bytes() > self.settings.budget_bytes {
            // The index on disk must not name objects the pruning may remove.
            self.persist(inner, LogWrite::None, true)?;
        }
        let protect = calls::objects(&self.dir);
        let pruned = prune::prune(inner, &self.objects, self.settings.budget_bytes, &protect);
        let log = match (pruned, listing.is_some()) {
            (true, _) => LogWrite::Whole,
            (false, true) => LogWrite::Append,
            (false, false) => LogWrite::None,
        };
        // A file tool's record leaves the index to the next snapshot's record, unless a dead
        // attempt's retry will compare the tree with the index on disk.
        let index = is_snapshot || calls::any_besides(&self.dir, own);
        self.persist(inner, log, index)?;
        Ok(listing)
    }

    fn keep_changes(
        &self,
        inner: &mut Inner,
        beneath: &Beneath,
        tops: Vec<Vec<u8>>,
        before: BTreeMap<Vec<u8>, State>,
    ) -> Result<Vec<Change>> {
        self.keep_changes_given(inner, beneath, tops, before, BTreeMap::new())
    }

    /// The changes of a keep: each path of `before` (and below a top that is a directory now)
    /// from its state before to its state now, captured (or taken from `given`, the after-states
    /// the caller knows).
    fn keep_changes_given(
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
        let after = rescan(beneath, b"", &self.excludes, scan::threads(), Some(&walk))?;
        let differ = after.differs_from(&walk, since);
        drop(walk);
        inner.last_walk = Some(after);
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
            // Dirty only when the entry changed: a file looked at again because it was racy (a
            // file tool wrote it just before) leaves the index as the snapshot saved it.
            let changed = match meta {
                Some(m) => {
                    let entry = (m.settled(settle_since), after.clone());
                    inner.index.insert(path.clone(), entry.clone()).as_ref() != Some(&entry)
                }
                None => inner.index.remove(&path).is_some(),
            };
            inner.index_dirty |= changed;
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
    /// made since the last look, by the job running meanwhile) is added to the call of
    /// checkpoint `checkpoint_id` ([`Log::add_later`]: to its latest checkpoint, or, for a path
    /// a later checkpoint changed, to a new checkpoint of the same call). The handle stays open
    /// (record or release it). Returns the listing of the call's latest checkpoint, or `None`
    /// when checkpoint `checkpoint_id` is gone (rewound or pruned; what the handle found is
    /// left for [`CheckpointStore::attribute_found`]).
    ///
    /// Errors: `InvalidArgument` for an unknown handle or a keep handle.
    pub fn extend(&self, checkpoint_id: &str, handle: u64) -> Result<Option<Listing>> {
        let (_hold, mut inner) = self.begin()?;
        let pos = inner.log.position(checkpoint_id);
        let found = match (inner.pending.get_mut(&handle).map(|o| &mut o.what), pos) {
            (Some(Pending::Snapshot { .. }), None) => return Ok(None),
            (Some(Pending::Snapshot { found, .. }), Some(_)) => std::mem::take(found),
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "Unknown snapshot handle.",
                ))
            }
        };
        let pos = pos.expect("checked above");
        let added = inner.log.add_later(pos, found);
        let listing = Listing::of(&inner.log.checkpoints[added.latest]);
        self.persist(&mut inner, LogWrite::of(added), false)?;
        Ok(Some(listing))
    }

    /// What snapshot `handle` found against the index (the changes made since the last look,
    /// which the snapshot took into the baseline), counted against `call`'s checkpoint instead:
    /// added to it (found by run and tool call id), or appended as its checkpoint when it has
    /// none. The handle stays open. For a background job whose change landed between the look at
    /// it and the snapshot of the next call. Returns the listing; `None` when nothing was found.
    ///
    /// Errors: `InvalidArgument` for an unknown handle, a keep handle or a call without a tool
    /// call id; `Io` for a full disk.
    pub fn attribute_found(&self, handle: u64, call: &CallInfo) -> Result<Option<Listing>> {
        if call.tool_call_id.is_none() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "Changes are counted against a call with a tool call id.",
            ));
        }
        let (_hold, mut inner) = self.begin()?;
        let found = match inner.pending.get_mut(&handle).map(|o| &mut o.what) {
            Some(Pending::Snapshot { found, .. }) => std::mem::take(found),
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "Unknown snapshot handle.",
                ))
            }
        };
        self.attribute_listed(&mut inner, call, found, false)
    }

    /// `found` counted against `call` ([`CheckpointStore::attribute`]) and persisted (the index
    /// too with `index`); the listing of the call's latest checkpoint, `None` when nothing was
    /// found.
    ///
    /// Errors: `Io` for a full disk.
    fn attribute_listed(
        &self,
        inner: &mut Inner,
        call: &CallInfo,
        found: Vec<Change>,
        index: bool,
    ) -> Result<Option<Listing>> {
        if found.is_empty() {
            return Ok(None);
        }
        let log = Self::attribute(inner, &CallRecord::of(call, None), found);
        let listing = inner
            .log
            .checkpoints
            .iter()
            .rfind(|c| c.run_id == call.run_id && c.tool_call_id == call.tool_call_id)
            .map(Listing::of);
        self.persist(inner, log, index)?;
        Ok(listing)
    }

    /// Drops `handle` without recording (the call failed before it ran). Unknown handles are
    /// ignored.
    pub fn release(&self, handle: u64) -> Result<()> {
        let (_hold, mut inner) = self.begin()?;
        let open = inner.pending.remove(&handle);
        let result = if inner.index_dirty {
            self.persist(&mut inner, LogWrite::None, true)
        } else {
            Ok(())
        };
        if let Some(open) = open {
            self.close(open.record.as_deref(), open.holds);
        }
        result
    }

    /// The store's state for a read: current (after another process's operation or call in
    /// progress ends), or, when the lock or the files cannot be read, as this process last saw it.
    fn read(&self) -> (Option<Hold<'_>>, MutexGuard<'_, Inner>) {
        match self.begin() {
            Ok((hold, inner)) => (Some(hold), inner),
            Err(_) => (None, self.lock()),
        }
    }

    /// The checkpoints, oldest first; with `run_id`, only that run's. Waits while another
    /// process's call on the store is in progress.
    pub fn list(&self, run_id: Option<&str>) -> Vec<Listing> {
        let (_hold, inner) = self.read();
        locked::listings(&inner.log, run_id)
    }

    /// The ids pruned to keep the store within its budget, oldest first (as `list`).
    pub fn pruned(&self) -> Vec<String> {
        let (_hold, inner) = self.read();
        inner.log.pruned.clone()
    }

    /// Per path changed by checkpoint `checkpoint_id`: the path and its diff (see [`shown`]).
    ///
    /// Errors: `Conflict` (a `CheckpointError`) for an unknown or pruned id.
    pub fn diff(&self, checkpoint_id: &str) -> Result<Vec<(Vec<u8>, String)>> {
        let (_hold, inner) = self.begin()?;
        locked::diff(inner, &self.objects, checkpoint_id)
    }

    /// Writes the log (with `log`) and the index (with `index`, when changed).
    ///
    /// The index is a cache of what was last seen: a file tool's record leaves it to the next
    /// shell command's record, a rewind or the store's drop. It is written with the log's
    /// sequence number, and a load puts in the after-states of the checkpoints appended since
    /// (`loaded::replay`), so after a kill (or in another process) an older index only makes the next
    /// snapshot read those files again, never counts their recorded change as a new one; every
    /// object it names is on disk, since objects are written before anything refers to them.
    ///
    /// The log goes first: a kill between the two leaves an older index, never an index that
    /// took a call's change into the baseline without the log holding the call. Every write
    /// bumps the store's generation, so the other processes reload. The caller holds the
    /// store's lock. Whatever the writer thread has queued ([`later`]) is written first:
    /// nothing on disk names an object not there yet, and no line queued lands after a log
    /// replaced (pruning, which may follow, removes objects only once all are written).
    fn persist(&self, inner: &mut Inner, log: LogWrite, index: bool) -> Result<()> {
        self.objects.flush().map_err(|e| {
            // A line the writer dropped (see `later`): what is on disk is reloaded next time.
            inner.generation = UNSEEN;
            io_error(&e)
        })?;
        let path = self.dir.join("log.jsonl");
        let mut wrote = true;
        match log {
            LogWrite::None => wrote = false,
            LogWrite::Append => inner
                .log
                .append_last_to(&mut inner.log_file, &path)
                .map_err(|e| io_error(&e))?,
            LogWrite::Whole => inner.log.save(&path).map_err(|e| io_error(&e))?,
        }
        if wrote {
            inner.log_on_disk = true;
        }
        if index && inner.index_dirty {
            index::save_marked(&self.dir.join("index"), &inner.index, Some(inner.log.next))
                .map_err(|e| io_error(&e))?;
            inner.index_dirty = false;
            wrote = true;
        }
        if wrote {
            inner.generation = self.coord.bump().map_err(|e| io_error(&e))?;
        }
        Ok(())
    }

    /// Bytes the store's objects hold.
    pub fn store_bytes(&self) -> u64 {
        let _ = self.finish();
        self.lock().store_bytes()
    }
}

impl Drop for CheckpointStore {
    /// Writes the index if a file tool's record left it changed, unless another process holds
    /// the store's lock or wrote the store since (the index is a cache: an older one on disk
    /// only makes the next snapshot read more).
    fn drop(&mut self) {
        // A commit left unrecorded holds the lock: recorded now.
        let _ = self.finish();
        let Some(generation) = self.coord.try_enter() else {
            return;
        };
        // What the writer thread queued goes first (its hold given back as it finishes).
        let flushed = self.objects.flush().is_ok();
        let inner = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        if flushed
            && inner.index_dirty
            && inner.generation == generation
            && index::save_marked(&self.dir.join("index"), &inner.index, Some(inner.log.next))
                .is_ok()
        {
            let _ = self.coord.bump();
        }
        self.coord.leave();
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

/// Each of `paths` normalized ([`normalize`]).
///
/// Errors: as [`normalize`].
pub fn normalize_all(paths: Option<&[Vec<u8>]>) -> Result<Option<Vec<Vec<u8>>>> {
    paths
        .map(|ps| ps.iter().map(|p| normalize(p)).collect::<Result<Vec<_>>>())
        .transpose()
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_later;
#[cfg(test)]
mod tests_procs;
