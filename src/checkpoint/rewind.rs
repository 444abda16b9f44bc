//! Rewinding: the plan (what putting each path back as it was before checkpoint `to` would
//! do, nothing changed) and its commit.
//!
//! For each path the checkpoints from `to` on changed, the target is its before-state in the
//! first of them and the expected current state its after-state in the last: the log keeps
//! each path's changes in the order in time ([`super::log`], a background job's later change
//! included), so these are the before-state of the earliest change undone and the last
//! recorded state. A path whose
//! current state is neither the target nor the expected one was changed by someone else: a
//! conflict; so is one where a checkpoint's before-state is not the after-state of the
//! previous checkpoint of that path (changed by someone else between two calls). A rewind is
//! planned and committed in one step under the store's lock ([`apply`]), so no other process's
//! checkpointed call lands between the two; one announced file by file in between (the model's
//! tool) is committed by [`commit`], which makes the plan again, compares each path's current
//! hash with the one the announced plan saw, and refuses a difference unless forced. Either
//! refuses on any conflict unless forced, then works path by path:
//! removals deepest first, then creations and restores in path order. Each file is written
//! whole to a temporary file (the store's `tmp/`, or beside it on another file system) and
//! renamed over its path, so a kill leaves each file old or new (except a file with other
//! hard links: written in place, so every link sees the old bytes, and a kill midway leaves
//! it partly written, as an in-place edit would); a rewind killed midway is
//! finished by running it again (paths already back are no conflict and need nothing).
//! Every directory is opened beneath the root with symlinks refused: a rewind never writes
//! through a symlinked parent.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::capture::{capture, parent, Bytes};
use super::log::Log;
use super::shown::change_text;
use super::state::{lstat_at, Meta, State};
use super::store::Objects;
use super::{checkpoint_error, Inner, STORE_DIR};
use crate::error::Result;
use crate::fs::root::path::Beneath;

static SEQ: AtomicU64 = AtomicU64::new(0);

/// What a rewind does to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Put back a file, symlink or directory where something else is now.
    Restore,
    /// Remove a file or symlink the calls made.
    Delete,
    /// Put back what the calls removed.
    Create,
    /// Remove a directory the calls made (when it is empty by then).
    Rmdir,
    /// Put back the permission bits only.
    Mode,
}

impl Action {
    /// The action's name in a plan.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Restore => "restore",
            Action::Delete => "delete",
            Action::Create => "create",
            Action::Rmdir => "rmdir",
            Action::Mode => "mode",
        }
    }
}

/// One path of a plan.
#[derive(Debug, Clone)]
pub struct PlanFile {
    /// Root-relative path bytes.
    pub path: Vec<u8>,
    /// What the commit does.
    pub action: Action,
    /// The current state's hash ([`State::shown_hash`]).
    pub old_hash: Option<String>,
    /// The restored state's hash.
    pub new_hash: Option<String>,
    /// Current -> restored, as [`change_text`] shows it.
    pub diff: String,
    pub(crate) current: State,
    pub(crate) target: State,
}

/// A rewind's plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The checkpoint rewound to (and everything after it).
    pub to: String,
    /// The paths it is limited to, if any.
    pub paths: Option<Vec<Vec<u8>>>,
    /// What changes, by path.
    pub files: Vec<PlanFile>,
    /// Paths changed since their last recorded state by someone else.
    pub conflicts: Vec<Vec<u8>>,
    /// Paths whose old bytes are not kept (above `max_file_bytes`, unreadable, or pruned).
    pub unrestorable: Vec<Vec<u8>>,
}

/// What a commit did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rewound {
    /// Files, symlinks and directories put back (content, kind or mode).
    pub restored: Vec<Vec<u8>>,
    /// Files and symlinks removed.
    pub deleted: Vec<Vec<u8>>,
    /// Directories removed.
    pub removed_dirs: Vec<Vec<u8>>,
    /// Paths that could not be put back (a parent replaced by a symlink or a file, a
    /// directory no longer empty): the checkpoints are kept so the rewind can be run again.
    pub failed: Vec<Vec<u8>>,
}

fn shown(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// The position of checkpoint `id`.
///
/// Errors: `Conflict` naming a pruned id (and the oldest kept) or an unknown one.
pub fn find(log: &Log, id: &str) -> Result<usize> {
    if let Some(pos) = log.position(id) {
        return Ok(pos);
    }
    if log.pruned.iter().any(|p| p == id) {
        let oldest = log
            .checkpoints
            .first()
            .map_or("none is left".to_string(), |c| {
                format!("the oldest kept is {}", c.id)
            });
        return Err(checkpoint_error(format!(
            "Checkpoint {id} was pruned to keep the checkpoint store within its budget_bytes ({oldest})."
        )));
    }
    Err(checkpoint_error(format!("No checkpoint {id}.")))
}

pub(crate) fn covered(path: &[u8], filter: &Option<Vec<Vec<u8>>>) -> bool {
    match filter {
        None => true,
        Some(fs) => fs.iter().any(|f| {
            f.is_empty()
                || path == f.as_slice()
                || (path.starts_with(f) && path.get(f.len()) == Some(&b'/'))
        }),
    }
}

fn is_dir(s: &State) -> bool {
    matches!(s, State::Dir { .. })
}

pub(crate) fn action(current: &State, target: &State) -> Option<Action> {
    Some(match (current, target) {
        (State::Absent, State::Absent) => return None,
        (State::Dir { .. }, State::Absent) => Action::Rmdir,
        (_, State::Absent) => Action::Delete,
        (State::Absent, _) => Action::Create,
        (State::Dir { mode: a }, State::Dir { mode: b }) => {
            if a == b {
                return None;
            }
            Action::Mode
        }
        (
            State::File {
                hash: ha, mode: ma, ..
            },
            State::File {
                hash: hb, mode: mb, ..
            },
        ) if ha == hb && ha != "?" => {
            if ma == mb {
                return None;
            }
            Action::Mode
        }
        (a, b) if a == b => return None,
        _ => Action::Restore,
    })
}

/// Per path: the target, the last after-state, and whether each entry's before-state was
/// the previous entry's after-state (else someone else changed the path in between).
pub(crate) type Targets = BTreeMap<Vec<u8>, (State, State, bool)>;

/// The [`Targets`] of rewinding `log` to `to`, limited to `paths`.
///
/// Errors: `Conflict` for an unknown or pruned id.
pub(crate) fn targets(log: &Log, to: &str, paths: &Option<Vec<Vec<u8>>>) -> Result<Targets> {
    let pos = find(log, to)?;
    let mut states = Targets::new();
    for cp in &log.checkpoints[pos..] {
        for c in cp.changes.iter().filter(|c| covered(&c.path, paths)) {
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
    Ok(states)
}

/// The plan of rewinding to `to` (limited to `paths`) from its `targets`, each path's current
/// state given by `current_of` (see the module doc). Either store plans through this: the
/// local one reads the tree ([`plan`]), the remote one takes the states its caller read.
///
/// Errors: what `current_of` returns.
pub(crate) fn plan_of(
    to: &str,
    paths: Option<Vec<Vec<u8>>>,
    targets: Targets,
    objects: &Objects,
    mut current_of: impl FnMut(&[u8]) -> Result<State>,
) -> Result<Plan> {
    let mut plan = Plan {
        to: to.to_string(),
        paths,
        files: Vec::new(),
        conflicts: Vec::new(),
        unrestorable: Vec::new(),
    };
    for (path, (target, expected, chained)) in targets {
        let current = current_of(&path)?;
        let Some(act) = action(&current, &target) else {
            continue;
        };
        if let State::File { hash, stored, .. } = &target {
            if !*stored || !objects.has(hash) {
                plan.unrestorable.push(path);
                continue;
            }
        }
        if !chained || !current.same(&expected) {
            plan.conflicts.push(path.clone());
        }
        plan.files.push(PlanFile {
            diff: change_text(objects, &path, &current, &target),
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

/// Makes the plan of rewinding to `to` (see the module doc), reading each path's current
/// state beneath the root.
pub(crate) fn plan(
    inner: &Inner,
    beneath: &Beneath,
    objects: &Objects,
    to: &str,
    paths: Option<Vec<Vec<u8>>>,
) -> Result<Plan> {
    let targets = targets(&inner.log, to, &paths)?;
    plan_of(to, paths, targets, objects, |path| {
        let (_, current, _) = capture(beneath, objects, Some(&inner.index), path, Bytes::HashOnly)
            .map_err(|e| checkpoint_error(format!("Cannot read {}: {}", shown(path), e.kind())))?;
        Ok(current)
    })
}

fn cvt(rc: libc::c_int) -> std::io::Result<()> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn cstr(b: &[u8]) -> std::io::Result<CString> {
    CString::new(b).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))
}

/// Removes `name` from `dir` (a directory with `rmdir`'s rules).
fn remove(dir: RawFd, name: &[u8], is_dir: bool) -> std::io::Result<()> {
    let c = cstr(name)?;
    let flags = if is_dir { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: dir is open; c is NUL-terminated.
    cvt(unsafe { libc::unlinkat(dir, c.as_ptr(), flags) })
}

/// Puts `target` at `name` in `dir`: a file or symlink made under a temporary name and
/// renamed over (a file with other hard links: written in place); a directory made (the path
/// is free by then) or its mode set.
fn put(
    objects: &Objects,
    tmp: &OwnedFd,
    dir: RawFd,
    name: &[u8],
    target: &State,
) -> std::io::Result<()> {
    let c = cstr(name)?;
    match target {
        State::Absent => Ok(()),
        State::Dir { mode } => {
            // SAFETY: dir is open; c is NUL-terminated.
            let made = cvt(unsafe { libc::mkdirat(dir, c.as_ptr(), 0o700) });
            match made {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                Err(e) => return Err(e),
            }
            // SAFETY: as above.
            cvt(unsafe { libc::fchmodat(dir, c.as_ptr(), *mode as libc::mode_t, 0) })
        }
        State::File { .. } | State::Symlink { .. } => {
            if let State::File { hash, mode, .. } = target {
                if let Some(file) = linked_file(dir, &c)? {
                    return objects.write_object_into(hash, &file, *mode);
                }
            }
            let seq = SEQ.fetch_add(1, Ordering::Relaxed);
            let tmp_name = format!("rewind-{}-{seq}", std::process::id());
            write_temp(objects, tmp.as_raw_fd(), tmp_name.as_bytes(), target)?;
            let tmp_dir = tmp.as_raw_fd();
            let from = cstr(tmp_name.as_bytes())?;
            // SAFETY: both directories are open; names NUL-terminated.
            match cvt(unsafe { libc::renameat(tmp_dir, from.as_ptr(), dir, c.as_ptr()) }) {
                Ok(()) => Ok(()),
                Err(e) => {
                    // SAFETY: as above.
                    unsafe { libc::unlinkat(tmp_dir, from.as_ptr(), 0) };
                    if e.raw_os_error() != Some(libc::EXDEV) {
                        return Err(e);
                    }
                    // Another file system: the temporary file goes beside the target.
                    let mut local = b".".to_vec();
                    local.extend_from_slice(name);
                    local.extend_from_slice(
                        format!(".hrs-tmp.{}.{seq}", std::process::id()).as_bytes(),
                    );
                    write_temp(objects, dir, &local, target)?;
                    let from = cstr(&local)?;
                    // SAFETY: as above.
                    let r = cvt(unsafe { libc::renameat(dir, from.as_ptr(), dir, c.as_ptr()) });
                    if r.is_err() {
                        // SAFETY: as above.
                        unsafe { libc::unlinkat(dir, from.as_ptr(), 0) };
                    }
                    r
                }
            }
        }
    }
}

/// The regular file `name` in `dir` opened for writing when it has other hard links (a
/// restore then writes it in place, so every link sees the old bytes); `None` otherwise.
fn linked_file(dir: RawFd, name: &CString) -> std::io::Result<Option<std::fs::File>> {
    // SAFETY: dir is open; name is NUL-terminated. No O_CREAT: the file must be there.
    let fd = unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Ok(None); // missing, a symlink, a directory, unwritable: replaced as usual
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let meta = file.metadata()?;
    use std::os::unix::fs::MetadataExt;
    Ok((meta.file_type().is_file() && meta.nlink() > 1).then_some(file))
}

fn write_temp(objects: &Objects, dir: RawFd, name: &[u8], target: &State) -> std::io::Result<()> {
    match target {
        State::File { hash, mode, .. } => objects.write_object_at(hash, dir, name, *mode),
        State::Symlink { target } => {
            let t = cstr(target)?;
            let n = cstr(name)?;
            // SAFETY: dir is open; both NUL-terminated.
            cvt(unsafe { libc::symlinkat(t.as_ptr(), dir, n.as_ptr()) })
        }
        _ => Ok(()),
    }
}

/// Commits a rewind (see the module doc) as planned earlier, in another locked step.
/// `pinned`: each path of the caller's plan and the current hash it saw; `plan`: the same rewind
/// planned again by the caller under the lock it holds now. A path whose current state is as the
/// checkpoints expect but not the one the caller's plan saw was changed by a checkpointed call in
/// between (another process's): refused, so that nothing is done that was not announced, and
/// said to be no one else's change.
///
/// `job_open`: a background job was open (the message then names it too).
///
/// Errors: `Conflict` naming the files changed by someone else, or by a checkpointed call
/// since the caller's plan (unless `force`).
pub(crate) fn commit(
    inner: &mut Inner,
    beneath: &Beneath,
    objects: &Objects,
    plan: &Plan,
    pinned: &[(Vec<u8>, Option<String>)],
    force: bool,
    job_open: bool,
) -> Result<Rewound> {
    let pinned: BTreeMap<&[u8], &Option<String>> =
        pinned.iter().map(|(p, h)| (p.as_slice(), h)).collect();
    let moved: Vec<String> = plan
        .files
        .iter()
        .filter(|f| {
            pinned.get(f.path.as_slice()) != Some(&&f.old_hash) && !plan.conflicts.contains(&f.path)
        })
        .map(|f| shown(&f.path))
        .collect();
    if !force && plan.conflicts.is_empty() && !moved.is_empty() {
        let (who, then) = if job_open {
            (
                "a checkpointed tool call or a running background job",
                " (a job that keeps writing: stop it first with stop_command)",
            )
        } else {
            ("a checkpointed tool call", "")
        };
        return Err(checkpoint_error(format!(
            "Cannot rewind: {who} changed {} after this rewind was planned (a recorded change, not someone else's). Nothing was rewound: rewind again{then}.",
            moved.join(", ")
        )));
    }
    apply(inner, beneath, objects, plan, force)
}

/// Carries out `plan`, made under the lock the caller still holds (see the module doc): refused
/// when the plan found conflicts, unless `force`. The log loses the rewound checkpoints when
/// every path was put back.
///
/// Errors: `Conflict` naming the files changed by someone else (unless `force`); `Io` when the
/// store's temporary directory is unavailable.
pub(crate) fn apply(
    inner: &mut Inner,
    beneath: &Beneath,
    objects: &Objects,
    plan: &Plan,
    force: bool,
) -> Result<Rewound> {
    let mut conflicts = plan.conflicts.clone();
    conflicts.sort();
    if !conflicts.is_empty() && !force {
        let names: Vec<String> = conflicts.iter().map(|p| shown(p)).collect();
        return Err(checkpoint_error(format!(
            "Cannot rewind: changed since the checkpoint by someone else: {}. Rewind with force=True to overwrite them.",
            names.join(", ")
        )));
    }
    let tmp = beneath
        .open(
            Path::new(&format!("{STORE_DIR}/tmp")),
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
        )
        .map_err(|e| crate::error::Error::io(&e, "The checkpoint store is unavailable."))?;
    let mut done = Rewound::default();
    let mut ok: Vec<&PlanFile> = Vec::new();
    // Removals, deepest first.
    for f in plan.files.iter().rev() {
        let must_remove = matches!(f.target, State::Absent)
            || (is_dir(&f.current) != is_dir(&f.target) && f.current != State::Absent);
        if !must_remove {
            continue;
        }
        let removed = parent(beneath, &f.path)
            .and_then(|(dir, name)| remove(dir.as_raw_fd(), &name, is_dir(&f.current)));
        match removed {
            Ok(()) => {
                if matches!(f.target, State::Absent) {
                    if is_dir(&f.current) {
                        done.removed_dirs.push(f.path.clone());
                    } else {
                        done.deleted.push(f.path.clone());
                    }
                    ok.push(f);
                }
            }
            // A directory the calls made that holds something else now is left.
            Err(e) if f.action == Action::Rmdir && e.raw_os_error() == Some(libc::ENOTEMPTY) => {}
            Err(_) => done.failed.push(f.path.clone()),
        }
    }
    // Creations and restores, parents first.
    for f in &plan.files {
        if matches!(f.target, State::Absent) || done.failed.contains(&f.path) {
            continue;
        }
        let put = parent(beneath, &f.path).and_then(|(dir, name)| {
            if f.action == Action::Mode {
                let c = cstr(&name)?;
                let mode = match f.target {
                    State::File { mode, .. } | State::Dir { mode } => mode,
                    _ => 0o644,
                };
                // SAFETY: dir is open; c NUL-terminated.
                cvt(unsafe { libc::fchmodat(dir.as_raw_fd(), c.as_ptr(), mode as libc::mode_t, 0) })
            } else {
                put(objects, &tmp, dir.as_raw_fd(), &name, &f.target)
            }
        });
        match put {
            Ok(()) => {
                done.restored.push(f.path.clone());
                ok.push(f);
            }
            Err(_) => done.failed.push(f.path.clone()),
        }
    }
    // The index learns the restored states.
    for f in ok {
        let meta = parent(beneath, &f.path)
            .ok()
            .and_then(|(dir, name)| lstat_at(dir.as_raw_fd(), &name).ok())
            .and_then(|st| Meta::of(&st));
        match (meta, &f.target) {
            (Some(m), State::Absent) => {
                let _ = m;
                inner.index.remove(&f.path);
            }
            (Some(m), t) => {
                inner.index.insert(f.path.clone(), (m, t.clone()));
            }
            (None, _) => {
                inner.index.remove(&f.path);
            }
        }
    }
    done.restored.sort();
    done.deleted.sort();
    done.removed_dirs.sort();
    done.failed.sort();
    if done.failed.is_empty() {
        let pos = find(&inner.log, &plan.to)?;
        match &plan.paths {
            None => inner.log.checkpoints.truncate(pos),
            Some(_) => {
                for cp in &mut inner.log.checkpoints[pos..] {
                    cp.changes.retain(|c| !covered(&c.path, &plan.paths));
                }
                inner.log.checkpoints.retain(|c| !c.changes.is_empty());
            }
        }
    }
    Ok(done)
}
