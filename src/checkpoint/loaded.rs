//! What a store reads from disk when it opens or reloads: the log, the index brought up to the
//! log ([`replay`]: a file tool's record leaves the index on disk to a later write), and the
//! sizes of the objects either names.

use std::collections::HashMap;

use super::index::{self, Index};
use super::log::{Checkpoint, Log};
use super::sizes::Sizes;
use super::state::{self, State};
use super::store::Objects;
use super::{checkpoint_error, io_error};
use crate::error::Result;

/// The log, the index and the object sizes stored in `dir` (a temporary file a killed process
/// left is removed first). Errors: `Conflict` for a log this version cannot read, `Io`.
pub(crate) fn load_state(dir: &std::path::Path, objects: &Objects) -> Result<(Log, Index, Sizes)> {
    let _ = std::fs::remove_file(dir.join("log.tmp"));
    let _ = std::fs::remove_file(dir.join("index.tmp"));
    let log = Log::load(&dir.join("log.jsonl")).map_err(checkpoint_error)?;
    let (mut index, logged) = index::load_marked(&dir.join("index"));
    if let Some(logged) = logged {
        replay(&mut index, &log, logged);
    }
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
    Ok((log, index, sizes))
}

/// Brings `index`, written when the log's sequence number was `logged`, up to `log`: a file
/// tool's record leaves the index on disk to a later write (see `persist`), so the checkpoints
/// numbered above `logged` may be missing from it. Their after-states are put in, in the log's
/// order (each path's changes are in time order there), each with metadata no entry on disk
/// has ([`unseen`]): the next walk reads those paths again and compares what it finds with the
/// state recorded, instead of counting a recorded change as a new one (which a process taking
/// over a background job or a dead command would attribute to that call).
fn replay(index: &mut Index, log: &Log, logged: u64) {
    let numbered = |c: &Checkpoint| c.id.strip_prefix("cp-").and_then(|n| n.parse::<u64>().ok());
    for cp in log
        .checkpoints
        .iter()
        .filter(|c| numbered(c).is_some_and(|n| n > logged))
    {
        for change in &cp.changes {
            match unseen(&change.after) {
                Some(meta) => {
                    index.insert(change.path.clone(), (meta, change.after.clone()));
                }
                None => {
                    index.remove(&change.path);
                }
            }
        }
    }
}

/// Metadata for an index entry of `state` that no file on disk matches (`None` for
/// [`State::Absent`]: no entry). A directory's matches any directory of its mode, which is all
/// a directory's state holds.
fn unseen(state: &State) -> Option<state::Meta> {
    let (kind, size, mode) = match state {
        State::Absent => return None,
        State::File { size, mode, .. } => (state::Kind::File, *size, *mode),
        State::Dir { mode } => (state::Kind::Dir, 0, *mode),
        State::Symlink { target } => (state::Kind::Symlink, target.len() as u64, 0o777),
    };
    Some(state::Meta {
        kind,
        dev: 0,
        ino: 0,
        size,
        mtime_ns: i64::MIN,
        ctime_ns: i64::MIN,
        mode,
    })
}

/// Whether the store in `dir` has a log file (a line can be appended to it).
pub(crate) fn log_on_disk(dir: &std::path::Path) -> bool {
    dir.join("log.jsonl").exists()
}
