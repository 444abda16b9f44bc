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
//! The protocol carries no permission bits and follows symlinks: every state here is a file
//! (bytes), a directory or nothing, recorded with mode 0 ("not known").

pub mod listing;

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::log::Change;
use super::rewind::{self, Action, Plan, PlanFile};
use super::scan::Excludes;
use super::shown::change_text;
use super::state::State;
use super::store::Objects;
use super::{checkpoint_error, normalize, CallInfo, Inner, Listing, Settings};
use crate::error::{Error, Result};

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

fn io_error(e: &std::io::Error) -> Error {
    Error::io(
        e,
        "The checkpoint store could not be written (is the disk full?).",
    )
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
    inner: Mutex<Inner>,
    /// Shell commands between their two listings ([`listing`]).
    snaps: Mutex<HashMap<u64, listing::Snap>>,
    next_snap: AtomicU64,
}

impl RemoteStore {
    /// Opens (or creates) the store in the host directory `dir` for the workspace root `root`
    /// (a workspace path; `None`: whichever root the store was made for, if any).
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
        let (log, index, sizes) = super::load_state(&dir, &objects)?;
        Ok(RemoteStore {
            dir,
            root,
            excludes,
            settings,
            objects,
            snaps: Mutex::new(HashMap::new()),
            next_snap: AtomicU64::new(0),
            // One process records on a host-side store: no walk to reuse, no generation.
            inner: Mutex::new(Inner::new(log, index, sizes, 0, false)),
        })
    }

    /// The workspace root the store belongs to (`None`: nothing recorded yet, none given).
    pub fn root(&self) -> Option<&str> {
        self.root.as_deref()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
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

    /// Records a file tool's call: `changes` are `(path, before, after)`; the paths whose
    /// state differs become its checkpoint (their before and after bytes kept). Returns the
    /// listing, or `None` when nothing changed; prunes to the budget.
    ///
    /// Errors: `InvalidArgument` for a bad path; `Io` for a full disk.
    pub fn record(
        &self,
        changes: Vec<(Vec<u8>, Seen, Seen)>,
        call: CallInfo,
    ) -> Result<Option<Listing>> {
        let mut inner = self.lock();
        let mut found: BTreeMap<Vec<u8>, Change> = BTreeMap::new();
        for (path, before, after) in changes {
            let path = normalize(&path)?;
            if path.is_empty() || self.excludes.excludes_path(&path) || before == after {
                continue;
            }
            let before = self.state_of(&mut inner, &before, true)?;
            let after = self.state_of(&mut inner, &after, true)?;
            if !before.same(&after) {
                found.insert(
                    path.clone(),
                    Change {
                        path,
                        before,
                        after,
                    },
                );
            }
        }
        self.append(&mut inner, found.into_values().collect(), call)
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

    /// Bytes the store's objects hold.
    pub fn store_bytes(&self) -> u64 {
        self.lock().store_bytes()
    }

    /// Per path changed by checkpoint `checkpoint_id`: the path and its diff.
    ///
    /// Errors: `Conflict` for an unknown or pruned id.
    pub fn diff(&self, checkpoint_id: &str) -> Result<Vec<(Vec<u8>, String)>> {
        let inner = self.lock();
        let cp = &inner.log.checkpoints[rewind::find(&inner.log, checkpoint_id)?];
        Ok(cp
            .changes
            .iter()
            .map(|c| {
                let text = change_text(&self.objects, &c.path, &c.before, &c.after);
                (c.path.clone(), text)
            })
            .collect())
    }

    /// The bytes of object `hash`.
    ///
    /// Errors: `Conflict` when the store no longer has it.
    pub fn object(&self, hash: &str) -> Result<Vec<u8>> {
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
        let filter = normalized(paths)?;
        let inner = self.lock();
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
        let filter = normalized(paths)?;
        let mut inner = self.lock();
        let pos = rewind::find(&inner.log, to)?;
        let mut states: BTreeMap<Vec<u8>, (State, State, bool)> = BTreeMap::new();
        for cp in &inner.log.checkpoints[pos..] {
            for c in cp
                .changes
                .iter()
                .filter(|c| rewind::covered(&c.path, &filter))
            {
                match states.get_mut(&c.path) {
                    Some((_, last, chained)) => {
                        *chained &= c.before.same(last);
                        *last = c.after.clone();
                    }
                    None => {
                        states.insert(c.path.clone(), (c.before.clone(), c.after.clone(), true));
                    }
                }
            }
        }
        let now: HashMap<&[u8], &Seen> = current.iter().map(|(p, s)| (p.as_slice(), s)).collect();
        let mut plan = Plan {
            to: to.to_string(),
            paths: filter,
            files: Vec::new(),
            conflicts: Vec::new(),
            unrestorable: Vec::new(),
        };
        for (path, (target, expected, chained)) in states {
            let seen = now.get(path.as_slice()).copied().unwrap_or(&Seen::Absent);
            // Kept (when small enough) so the plan's diff can show a person's change too.
            let current = self.state_of(&mut inner, seen, true)?;
            let Some(act) = rewind::action(&current, &target) else {
                continue;
            };
            if let State::File { hash, stored, .. } = &target {
                if !*stored || !self.objects.has(hash) {
                    plan.unrestorable.push(path);
                    continue;
                }
            }
            if !chained || !current.same(&expected) {
                plan.conflicts.push(path.clone());
            }
            plan.files.push(PlanFile {
                diff: change_text(&self.objects, &path, &current, &target),
                old_hash: current.shown_hash(),
                new_hash: target.shown_hash(),
                action: act,
                path,
                current,
                target,
            });
        }
        Ok(plan)
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
        let filter = normalized(paths)?;
        let mut inner = self.lock();
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
            .map_err(|e| io_error(&e))
    }

    /// The host directory of the store.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn normalized(paths: Option<&[Vec<u8>]>) -> Result<Option<Vec<Vec<u8>>>> {
    paths
        .map(|ps| ps.iter().map(|p| normalize(p)).collect::<Result<Vec<_>>>())
        .transpose()
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

    #[test]
    fn record_plan_and_steps_of_a_rewrite_and_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = RemoteStore::open(
            dir.path().to_str().unwrap(),
            Some("/ws"),
            Settings::default(),
        )
        .unwrap();
        let l = store
            .record(
                vec![
                    (
                        b"a".to_vec(),
                        Seen::File(b"one".to_vec()),
                        Seen::File(b"two".to_vec()),
                    ),
                    (b"d".to_vec(), Seen::Absent, Seen::Dir),
                    (b"d/n".to_vec(), Seen::Absent, Seen::File(b"x".to_vec())),
                    (b"same".to_vec(), Seen::Dir, Seen::Dir),
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
}
