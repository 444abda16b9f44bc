//! Calls in progress, on disk: a small record per call with a tool call id (a durable unit's
//! call, which an engine runs again when its worker dies; a shell command elsewhere), written
//! when its keep or snapshot starts and removed at its record or release, in `<store>/calls/`.
//! A durable unit's record still there when a keep or snapshot of the same call starts is an
//! earlier attempt's that died: what that attempt changed is the call's change, not the
//! baseline (see `CheckpointStore::snapshot_call` and `CheckpointStore::keep_call`). A shell
//! command's record outside a durable unit (`adopt`) has no attempt coming back: the next
//! process to take the store's lock finds it and records what changed since as that call's
//! checkpoint (see [`adoptable`]).

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::index::write_whole;
use super::state::{esc, unesc, State};
use super::CallInfo;

/// A file tool's call's paths and the state of each before the call.
pub type Kept = (Vec<Vec<u8>>, BTreeMap<Vec<u8>, State>);

/// A call in progress as its record says.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// Who the call is.
    pub run_id: Option<String>,
    /// Its tool call id.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// When the call started, epoch seconds.
    pub created_at: f64,
    /// A file tool's call: the paths it changes and the state of each before the call (its
    /// bytes in the store). `None` for a shell command (the index on disk is its before).
    pub kept: Option<Kept>,
    /// A shell command outside a durable unit: should its process die mid-call, no attempt
    /// comes back, and the next process to take the store's lock records what changed since
    /// the index on disk as this call's checkpoint.
    pub adopt: bool,
}

/// Where the record of `call` lives; `None` for a call without a tool call id.
pub fn path_of(dir: &Path, call: &CallInfo) -> Option<PathBuf> {
    Some(dir.join("calls").join(name_of(call)?))
}

/// The file name a record of `call` has (here, and in `jobs/`): 32 hex digits of a hash of its
/// run id and tool call id; `None` for a call without a tool call id.
pub fn name_of(call: &CallInfo) -> Option<String> {
    let id = call.tool_call_id.as_deref()?;
    let key = json!([call.run_id, id]).to_string();
    let hash = Sha256::digest(key.as_bytes());
    Some(hash[..16].iter().map(|b| format!("{b:02x}")).collect())
}

impl CallRecord {
    /// The record of `call`.
    pub fn of(call: &CallInfo, kept: Option<Kept>) -> CallRecord {
        CallRecord {
            run_id: call.run_id.clone(),
            tool_call_id: call.tool_call_id.clone().unwrap_or_default(),
            tool_name: call.tool_name.clone(),
            created_at: call.created_at,
            kept,
            adopt: false,
        }
    }

    /// The record of `call`, a shell command outside a durable unit (see [`CallRecord::adopt`]).
    pub fn adoptable(call: &CallInfo) -> CallRecord {
        CallRecord {
            adopt: true,
            ..CallRecord::of(call, None)
        }
    }

    /// Whether this is the record of `call`'s tool call (a hash collision is not).
    pub fn is_of(&self, call: &CallInfo) -> bool {
        self.run_id == call.run_id && Some(&self.tool_call_id) == call.tool_call_id.as_ref()
    }

    fn to_json(&self) -> Value {
        let kept = self.kept.as_ref().map(|(tops, before)| {
            json!({
                "tops": tops.iter().map(|t| esc(t)).collect::<Vec<_>>(),
                "before": before.iter().map(|(p, s)| json!([esc(p), s.to_json()])).collect::<Vec<_>>(),
            })
        });
        let mut v = json!({
            "run_id": self.run_id,
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "created_at": self.created_at,
            "kept": kept,
        });
        if self.adopt {
            v["adopt"] = Value::Bool(true); // absent: a durable unit's (records before it had none)
        }
        v
    }

    fn from_json(v: &Value) -> Option<CallRecord> {
        let kept = match v.get("kept")? {
            Value::Null => None,
            k => {
                let mut tops = Vec::new();
                for t in k.get("tops")?.as_array()? {
                    tops.push(unesc(t.as_str()?)?);
                }
                let mut before = BTreeMap::new();
                for pair in k.get("before")?.as_array()? {
                    before.insert(
                        unesc(pair.get(0)?.as_str()?)?,
                        State::from_json(pair.get(1)?)?,
                    );
                }
                Some((tops, before))
            }
        };
        Some(CallRecord {
            run_id: v.get("run_id")?.as_str().map(str::to_string),
            tool_call_id: v.get("tool_call_id")?.as_str()?.to_string(),
            tool_name: v.get("tool_name")?.as_str()?.to_string(),
            created_at: v.get("created_at")?.as_f64()?,
            kept,
            adopt: v.get("adopt").and_then(Value::as_bool).unwrap_or(false),
        })
    }
}

/// Writes `record` at `path` (whole: a kill leaves the old record or the new one).
pub fn write(path: &Path, record: &CallRecord) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    write_whole(path, record.to_json().to_string().as_bytes())
}

/// The record at `path`, if there is a readable one.
pub fn read(path: &Path) -> Option<CallRecord> {
    let text = std::fs::read(path).ok()?;
    CallRecord::from_json(&serde_json::from_slice(&text).ok()?)
}

/// What an earlier attempt of a file tool's `call` kept, as its record at `path` says (its
/// worker died before the record was removed); `None` without one.
pub fn earlier_kept(path: &Path, call: &CallInfo) -> Option<Kept> {
    read(path).filter(|r| r.is_of(call))?.kept
}

/// Removes the record at `path` (gone already is fine), and `calls/` with it when no other
/// record is left there. The caller holds the store's lock (records are written under it).
pub fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
    if let Some(dir) = path.parent() {
        let _ = std::fs::remove_dir(dir); // refused while another record is there
    }
}

/// How long a dead attempt's record waits for its call to be run again, in seconds from the
/// start of its last attempt (a day: an engine retries a unit within minutes, or its run is
/// over). An older record is removed when a store is opened ([`sweep`]).
pub const ORPHAN_AFTER_SECS: f64 = 24.0 * 60.0 * 60.0;

/// Clears `<dir>/calls/` of what no call will come back for: the temporary file of a record
/// write a kill cut short, a record that cannot be read, and the record of a call whose last
/// attempt started more than [`ORPHAN_AFTER_SECS`] before `now` (epoch seconds; its run is over
/// or will not run it again); then the directory itself when it is empty. The caller holds the
/// store's lock with no call of its own open, so no record there is of a call in progress.
pub fn sweep(dir: &Path, now: f64) {
    let calls = dir.join("calls");
    let Ok(entries) = std::fs::read_dir(&calls) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        // An `adopt` record is not waiting for anything: the next operation records it.
        let stale = path.extension().is_some()
            || read(&path).is_none_or(|r| !r.adopt && now - r.created_at > ORPHAN_AFTER_SECS);
        if stale {
            let _ = std::fs::remove_file(&path);
        }
    }
    let _ = std::fs::remove_dir(&calls);
}

/// The `adopt` records in `<dir>/calls/` other than those at `own` (this process's calls in
/// progress), oldest call first: shell commands whose process died mid-call. The caller holds
/// the store's lock (a live process's call holds it from its record's write to its removal).
pub fn adoptable(dir: &Path, own: &[&Path]) -> Vec<(PathBuf, CallRecord)> {
    let Ok(entries) = std::fs::read_dir(dir.join("calls")) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, CallRecord)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_none() && !own.contains(&p.as_path()))
        .filter_map(|p| read(&p).filter(|r| r.adopt).map(|r| (p, r)))
        .collect();
    out.sort_by(|a, b| a.1.created_at.total_cmp(&b.1.created_at));
    out
}

/// Whether `<dir>/calls/` holds a record other than `own`: a call in progress elsewhere, or a
/// dead attempt's (whose retry compares the tree with the index on disk, so the index must not
/// lag behind what other calls recorded meanwhile).
pub fn any_besides(dir: &Path, own: Option<&Path>) -> bool {
    let Ok(entries) = std::fs::read_dir(dir.join("calls")) else {
        return false;
    };
    entries
        .flatten()
        .any(|e| Some(e.path().as_path()) != own && e.path().extension().is_none())
}

/// The objects the records in `<dir>/calls/` need (a dead attempt's before states, which
/// nothing else may refer to until the call is run again).
pub fn objects(dir: &Path) -> HashSet<String> {
    let mut out = HashSet::new();
    let Ok(entries) = std::fs::read_dir(dir.join("calls")) else {
        return out;
    };
    for e in entries.flatten() {
        if let Some(CallRecord {
            kept: Some((_, before)),
            ..
        }) = read(&e.path())
        {
            out.extend(
                before
                    .values()
                    .filter_map(|s| s.object().map(str::to_string)),
            );
        }
    }
    out
}

/// Whether there is no `calls/` directory at `calls` (its path, made once): no call in progress
/// has a record, as the directory goes with its last record ([`remove`]). One `lstat`, nothing
/// allocated: a file tool's checkpoint asks on every call.
pub fn none_at(calls: &std::ffi::CStr) -> bool {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: a NUL-terminated path and a buffer of the size `lstat` writes.
    let failed = unsafe { libc::lstat(calls.as_ptr(), st.as_mut_ptr()) } != 0;
    failed && io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT)
}

/// [`objects`] and [`any_besides`] in one read of `<dir>/calls/` (a file tool's record: one
/// directory read, none of its records when there are none).
pub fn objects_and_others(dir: &Path, own: Option<&Path>) -> (HashSet<String>, bool) {
    let mut out = HashSet::new();
    let mut others = false;
    let Ok(entries) = std::fs::read_dir(dir.join("calls")) else {
        return (out, false);
    };
    for e in entries.flatten() {
        let path = e.path();
        others |= Some(path.as_path()) != own && path.extension().is_none();
        if let Some(CallRecord {
            kept: Some((_, before)),
            ..
        }) = read(&path)
        {
            out.extend(
                before
                    .values()
                    .filter_map(|s| s.object().map(str::to_string)),
            );
        }
    }
    (out, others)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_name_their_objects() {
        let dir = tempfile::tempdir().unwrap();
        let call = CallInfo {
            run_id: Some("r".into()),
            tool_call_id: Some("t\n1".into()),
            tool_name: "write_file".into(),
            created_at: 2.5,
        };
        assert_eq!(
            path_of(
                dir.path(),
                &CallInfo {
                    tool_call_id: None,
                    ..call.clone()
                }
            ),
            None
        );
        let path = path_of(dir.path(), &call).unwrap();
        let mut before = BTreeMap::new();
        before.insert(
            b"a\xff".to_vec(),
            State::File {
                hash: "h1".into(),
                size: 2,
                mode: 0o644,
                stored: true,
            },
        );
        before.insert(b"d".to_vec(), State::Absent);
        let record = CallRecord::of(&call, Some((vec![b"a\xff".to_vec()], before)));
        write(&path, &record).unwrap();
        assert_eq!(read(&path), Some(record.clone()));
        assert!(record.is_of(&call));
        assert_eq!(objects(dir.path()), HashSet::from(["h1".to_string()]));
        assert!(!any_besides(dir.path(), Some(&path)));
        assert!(any_besides(dir.path(), None));
        assert_eq!(
            objects_and_others(dir.path(), Some(&path)),
            (HashSet::from(["h1".to_string()]), false)
        );
        assert!(objects_and_others(dir.path(), None).1);
        let shell = CallRecord::of(&call, None);
        write(&path, &shell).unwrap();
        assert_eq!(read(&path), Some(shell));
        remove(&path);
        assert_eq!(read(&path), None);
        assert!(!dir.path().join("calls").exists()); // the last record took the directory
    }

    /// At open: a record whose call last started over a day ago, a torn write's temporary file
    /// and an unreadable record are removed; a recent dead attempt's record waits for its retry.
    #[test]
    fn sweeping_removes_what_no_call_comes_back_for() {
        let dir = tempfile::tempdir().unwrap();
        let now = 1_000_000.0;
        let call = |id: &str, created_at: f64| CallInfo {
            run_id: Some("r".into()),
            tool_call_id: Some(id.into()),
            tool_name: "run_command".into(),
            created_at,
        };
        let old = call("old", now - ORPHAN_AFTER_SECS - 1.0);
        let recent = call("recent", now - 60.0);
        for c in [&old, &recent] {
            write(&path_of(dir.path(), c).unwrap(), &CallRecord::of(c, None)).unwrap();
        }
        let calls = dir.path().join("calls");
        std::fs::write(calls.join("0123.tmp"), b"{\"run_id\"").unwrap();
        std::fs::write(calls.join("4567"), b"not a record").unwrap();
        sweep(dir.path(), now);
        let left: Vec<_> = std::fs::read_dir(&calls)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(left, vec![path_of(dir.path(), &recent).unwrap()]);
        sweep(dir.path(), now + ORPHAN_AFTER_SECS);
        assert!(!calls.exists());
    }

    /// A dead shell command's record (`adopt`) round-trips, is listed by [`adoptable`] (not at a
    /// path given as this process's own) and is not swept however old: it waits for no retry.
    #[test]
    fn adoptable_records_are_listed_and_never_swept() {
        let dir = tempfile::tempdir().unwrap();
        let call = CallInfo {
            run_id: None,
            tool_call_id: Some("c".into()),
            tool_name: "shell".into(),
            created_at: 1.0,
        };
        let durable = CallInfo {
            tool_call_id: Some("d".into()),
            ..call.clone()
        };
        let path = path_of(dir.path(), &call).unwrap();
        write(&path, &CallRecord::adoptable(&call)).unwrap();
        write(
            &path_of(dir.path(), &durable).unwrap(),
            &CallRecord::of(&durable, None),
        )
        .unwrap();
        assert_eq!(read(&path), Some(CallRecord::adoptable(&call)));
        assert_eq!(
            adoptable(dir.path(), &[]),
            vec![(path.clone(), CallRecord::adoptable(&call))]
        );
        assert!(adoptable(dir.path(), &[path.as_path()]).is_empty());
        sweep(dir.path(), 1.0 + 2.0 * ORPHAN_AFTER_SECS);
        assert_eq!(adoptable(dir.path(), &[]).len(), 1);
        assert!(read(&path_of(dir.path(), &durable).unwrap()).is_none()); // swept
    }
}
