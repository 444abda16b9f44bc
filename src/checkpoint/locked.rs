//! What a store does under its lock ([`super::coord`]), whichever store it is: take a hold and
//! the state's mutex, reloading the log, the index and the object sizes when another process
//! wrote them ([`begin`], [`read`]); append a call's checkpoint ([`new_checkpoint`]); answer
//! the reads both stores answer alike ([`listings`], [`diff`]). The host-side store of a
//! non-local workspace ([`super::remote`]) uses these; the local store's `begin` and `record`
//! take the same steps, and its reads are these.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use super::coord::{Coord, Hold};
use super::index::Index;
use super::log::{Change, Checkpoint, Log};
use super::store::Objects;
use super::{io_error, load_state, rewind, shown, CallInfo, Inner, Listing};
use crate::error::Result;

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(|p| p.into_inner())
}

/// Takes a hold of the lock of the store in `dir` (waiting for another process's operation or
/// call to end; the caller must not hold the GIL), then `inner`; reloads the log, the index and
/// the object sizes when another process wrote them since this one last looked (the index
/// passed through `loaded` first).
///
/// Errors: `Io` when the lock cannot be taken; as [`load_state`] for a reload.
pub(crate) fn begin<'a>(
    coord: &'a Coord,
    inner: &'a Mutex<Inner>,
    dir: &Path,
    objects: &Objects,
    loaded: fn(&mut Index),
) -> Result<(Hold<'a>, MutexGuard<'a, Inner>)> {
    let generation = coord.enter().map_err(|e| io_error(&e))?;
    let hold = Hold(coord);
    let mut guard = lock(inner);
    if guard.generation != generation {
        let (log, mut index, sizes) = load_state(dir, objects)?;
        loaded(&mut index);
        guard.log = log;
        guard.index = index;
        guard.sizes = sizes;
        guard.index_dirty = false;
        guard.generation = generation;
    }
    Ok((hold, guard))
}

/// The state for a read: current as [`begin`] makes it, or, when the lock or the files cannot
/// be read, as this process last saw it.
pub(crate) fn read<'a>(
    coord: &'a Coord,
    inner: &'a Mutex<Inner>,
    dir: &Path,
    objects: &Objects,
    loaded: fn(&mut Index),
) -> (Option<Hold<'a>>, MutexGuard<'a, Inner>) {
    match begin(coord, inner, dir, objects, loaded) {
        Ok((hold, guard)) => (Some(hold), guard),
        Err(_) => (None, lock(inner)),
    }
}

/// Appends the checkpoint of `call` with `changes` (sorted by the caller) to the log in memory
/// when there are any; returns its listing.
pub(crate) fn new_checkpoint(
    inner: &mut Inner,
    changes: Vec<Change>,
    call: CallInfo,
) -> Option<Listing> {
    if changes.is_empty() {
        return None;
    }
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
}

/// The listings of `log`'s checkpoints, oldest first; with `run_id`, only that run's.
pub(crate) fn listings(log: &Log, run_id: Option<&str>) -> Vec<Listing> {
    log.checkpoints
        .iter()
        .filter(|c| run_id.is_none() || c.run_id.as_deref() == run_id)
        .map(Listing::of)
        .collect()
}

/// Per path changed by checkpoint `checkpoint_id`: the path and its diff text
/// ([`shown::change_text`]). The objects still being written are waited for first; `inner`
/// is let go before the objects are read (the caller's hold of the lock keeps other
/// processes from pruning them).
///
/// Errors: `Conflict` (a `CheckpointError`) for an unknown or pruned id; `Io` when an object
/// could not be written.
pub(crate) fn diff(
    inner: MutexGuard<'_, Inner>,
    objects: &Objects,
    checkpoint_id: &str,
) -> Result<Vec<(Vec<u8>, String)>> {
    objects.flush().map_err(|e| io_error(&e))?;
    let pos = rewind::find(&inner.log, checkpoint_id)?;
    let cp = inner.log.checkpoints[pos].clone();
    drop(inner);
    Ok(cp
        .changes
        .iter()
        .map(|c| {
            let text = shown::change_text(objects, &c.path, &c.before, &c.after);
            (c.path.clone(), text)
        })
        .collect())
}
