//! Shell commands on a non-local workspace: a metadata listing of the tree, taken through one
//! command in the workspace before and after each checkpointed command, compared here.
//!
//! The listing is what [`LISTING_COMMAND`] prints: the workspace's clock (`date +%s%N`), then
//! per entry `%y %D %i %s %T@ %C@ %m %P` and a NUL, then [`DONE`] (a listing cut short by the
//! backend is refused, never read as deletions). The index (the baseline: every tracked
//! file's metadata and state as last read) is kept up to date the same way as the local
//! store's: before a command, whatever differs from it is read through the protocol by the
//! caller ([`RemoteStore::snapshot`], [`RemoteStore::settle`]), so the old bytes of whatever
//! the command changes are on this host before it runs; after it, the entries whose metadata
//! moved between the two listings are read and recorded ([`RemoteStore::changed`],
//! [`RemoteStore::record_command`]). Symlinks are not tracked (the protocol follows them).

use std::collections::BTreeMap;

use super::{io_error, unknown_handle, RemoteStore, Seen, What};
use crate::checkpoint::calls::{self, CallRecord};
use crate::checkpoint::log::Change;
use crate::checkpoint::scan::Excludes;
use crate::checkpoint::{locked, CheckpointStore, LogWrite};

/// A listing's entries: root-relative paths sorted by bytes, each with its metadata.
pub type Scanned = Vec<(Vec<u8>, Meta)>;
use crate::checkpoint::state::{Kind, Meta, State, RACY_NS};
use crate::checkpoint::{prune, CallInfo, Inner, Listing};
use crate::error::{Error, ErrorKind, Result};

/// The command that prints a listing, run in the workspace root (GNU `find` and `date`).
pub const LISTING_COMMAND: &str = "date +%s%N && find . -xdev \\( -path ./.git -prune \\) -o -printf '%y %D %i %s %T@ %C@ %m %P\\0' && echo harness-listing-done";

/// The last line of a complete listing.
pub const DONE: &[u8] = b"harness-listing-done\n";

/// A command between its two listings.
pub(super) struct Snap {
    walk: Scanned,
    since: i64,
    /// What the first listing (and the reads it asked for) found against the index.
    found: Vec<Change>,
    /// After [`RemoteStore::changed`]: the second listing, its start, and the paths that moved.
    after: Option<(Scanned, i64, Vec<Vec<u8>>)>,
}

fn refused() -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        "The workspace's listing is incomplete or not in the expected format.",
    )
}

/// `1700000000.123456789` as nanoseconds.
fn seconds_ns(text: &str) -> Option<i64> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let mut digits: String = frac.chars().take(9).collect();
    while digits.len() < 9 {
        digits.push('0');
    }
    Some(whole.parse::<i64>().ok()? * 1_000_000_000 + digits.parse::<i64>().ok()?)
}

fn entry(record: &[u8]) -> Option<(Vec<u8>, Option<Meta>)> {
    let mut fields = record.splitn(8, |&b| b == b' ');
    let mut next = || std::str::from_utf8(fields.next()?).ok();
    let kind = match next()? {
        "f" => Some(Kind::File),
        "d" => Some(Kind::Dir),
        _ => None, // symlinks (the protocol follows them), FIFOs, sockets, devices
    };
    let dev = next()?.parse().ok()?;
    let ino = next()?.parse().ok()?;
    let size = next()?.parse().ok()?;
    let mtime_ns = seconds_ns(next()?)?;
    let ctime_ns = seconds_ns(next()?)?;
    let mode = u32::from_str_radix(next()?, 8).ok()?;
    let path = fields.next()?.to_vec();
    Some((
        path,
        kind.map(|kind| Meta {
            kind,
            dev,
            ino,
            size,
            mtime_ns,
            ctime_ns,
            mode,
        }),
    ))
}

/// The entries of a listing (sorted, excluded ones left out) and the workspace clock then.
///
/// Errors: `InvalidArgument` for a listing cut short or not in the format.
pub fn parse(text: &[u8], excludes: &Excludes) -> Result<(Scanned, i64)> {
    let text = text.strip_suffix(DONE).ok_or_else(refused)?;
    let newline = text.iter().position(|&b| b == b'\n').ok_or_else(refused)?;
    let clock = std::str::from_utf8(&text[..newline]).map_err(|_| refused())?;
    let now: i64 = clock.trim().parse().map_err(|_| refused())?;
    let mut out: Scanned = Vec::new();
    for record in text[newline + 1..].split(|&b| b == 0) {
        if record.is_empty() {
            continue;
        }
        let (path, meta) = entry(record).ok_or_else(refused)?;
        let Some(meta) = meta else { continue };
        // A name the backend could not decode (U+FFFD in its output) cannot be read back: untracked.
        let undecoded = path.windows(3).any(|w| w == "\u{FFFD}".as_bytes());
        if path.is_empty() || undecoded || excluded(excludes, &path, meta.kind == Kind::Dir) {
            continue;
        }
        out.push((path, meta));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((out, now))
}

fn excluded(excludes: &Excludes, rel: &[u8], is_dir: bool) -> bool {
    let parents = rel
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'/')
        .any(|(i, _)| excludes.excludes(&rel[..i], true));
    parents || excludes.excludes(rel, is_dir)
}

fn find(walk: &Scanned, path: &[u8]) -> Option<Meta> {
    walk.binary_search_by(|(p, _)| p.as_slice().cmp(path))
        .ok()
        .map(|i| walk[i].1)
}

impl RemoteStore {
    /// Before a command: the listing `text` compared with the index. Directories and
    /// vanished entries update the index at once; returns a handle (holding the store's lock
    /// until [`RemoteStore::record_command`] or [`RemoteStore::release`]) and the files whose
    /// bytes the caller must read now (new or changed since the index: [`RemoteStore::settle`]).
    /// `durable`: a durable unit's call (see `settle`).
    ///
    /// Errors: `InvalidArgument` for an incomplete listing.
    pub fn snapshot(&self, text: &[u8], durable: Option<&CallInfo>) -> Result<(u64, Vec<Vec<u8>>)> {
        let (walk, now) = parse(text, &self.excludes)?;
        let since = now - RACY_NS;
        let (_hold, mut inner) = self.begin()?;
        let mut need = Vec::new();
        let mut found = Vec::new();
        let gone: Vec<Vec<u8>> = inner
            .index
            .keys()
            .filter(|p| find(&walk, p).is_none())
            .cloned()
            .collect();
        for p in gone {
            if let Some((_, before)) = inner.index.remove(&p) {
                found.push(Change {
                    path: p,
                    before,
                    after: State::Absent,
                });
            }
            inner.index_dirty = true;
        }
        for (path, meta) in &walk {
            let known = inner.index.get(path);
            if known.is_some_and(|(m, _)| m.same(meta)) {
                continue;
            }
            if meta.kind == Kind::Dir {
                let before = known.map_or(State::Absent, |(_, s)| s.clone());
                let state = State::Dir {
                    mode: super::NO_MODE,
                };
                if !before.same(&state) {
                    found.push(Change {
                        path: path.clone(),
                        before,
                        after: state.clone(),
                    });
                }
                inner.index.insert(path.clone(), (*meta, state));
                inner.index_dirty = true;
            } else {
                need.push(path.clone());
            }
        }
        drop(inner);
        let record = durable.and_then(|c| calls::path_of(self.dir(), c));
        let snap = Snap {
            walk,
            since,
            found,
            after: None,
        };
        let handle = self.new_handle(What::Snap(snap), durable.cloned(), record);
        Ok((handle, need))
    }

    /// The files [`RemoteStore::snapshot`] asked for, as read (`states`): kept, into the index.
    /// For a durable unit's call with a tool call id, the index is then written and a record
    /// that the call started after it; a record of the same call already there is an earlier
    /// attempt's that died mid-command: what differs from the index is that attempt's change,
    /// added to the call's checkpoint (appended when it has none yet) instead of being taken
    /// into the baseline.
    ///
    /// Errors: `InvalidArgument` for an unknown handle; `Io` for a full disk.
    pub fn settle(&self, handle: u64, states: Vec<(Vec<u8>, Seen)>) -> Result<()> {
        let (_hold, mut inner) = self.begin()?;
        let mut handles = self.handles();
        let open = handles.get_mut(&handle).ok_or_else(unknown_handle)?;
        let What::Snap(snap) = &mut open.what else {
            return Err(unknown_handle());
        };
        for (path, seen) in states {
            let meta = find(&snap.walk, &path);
            let before = inner
                .index
                .get(&path)
                .map_or(State::Absent, |(_, s)| s.clone());
            let after = self.put_index(&mut inner, path.clone(), meta, &seen, snap.since)?;
            if !before.same(&after) {
                snap.found.push(Change {
                    path,
                    before,
                    after,
                });
            }
        }
        let found = std::mem::take(&mut snap.found);
        let (Some(path), Some(call)) = (open.record.clone(), open.call.clone()) else {
            return Ok(());
        };
        drop(handles);
        let earlier = calls::read(&path).filter(|r| r.is_of(&call) && r.kept.is_none());
        if let Some(r) = earlier.filter(|_| !found.is_empty()) {
            let mut changes = found;
            changes.sort_by(|a, b| a.path.cmp(&b.path));
            self.attribute(&mut inner, &r, changes)?;
        }
        // The record says the call started from the index on disk: it must be there first.
        self.save_index(&mut inner)?;
        calls::write(&path, &CallRecord::of(&call, None)).map_err(|e| io_error(&e))
    }

    /// Adds `changes` to the checkpoint of `record`'s call, or appends one for it; writes the log.
    fn attribute(
        &self,
        inner: &mut Inner,
        record: &CallRecord,
        changes: Vec<Change>,
    ) -> Result<()> {
        let path = self.dir().join("log.jsonl");
        match CheckpointStore::attribute(inner, record, changes) {
            LogWrite::None => return Ok(()),
            LogWrite::Append => inner.log.append_last(&path),
            LogWrite::Whole => inner.log.save(&path),
        }
        .map_err(|e| io_error(&e))?;
        self.wrote(inner)
    }

    fn put_index(
        &self,
        inner: &mut Inner,
        path: Vec<u8>,
        meta: Option<Meta>,
        seen: &Seen,
        since: i64,
    ) -> Result<State> {
        let state = self.state_of(inner, seen, true)?;
        match (meta, &state) {
            (Some(m), State::File { .. } | State::Dir { .. }) => {
                inner.index.insert(path, (m.settled(since), state.clone()));
            }
            _ => {
                inner.index.remove(&path);
            }
        }
        inner.index_dirty = true;
        Ok(state)
    }

    /// After the command: the second listing `text` against the first. Returns the files the
    /// caller must read (what moved between the two, or was changed within the first
    /// listing's clock tick, and is a file now).
    ///
    /// Errors: `InvalidArgument` for an unknown handle or an incomplete listing.
    pub fn changed(&self, handle: u64, text: &[u8]) -> Result<Vec<Vec<u8>>> {
        let (after, now) = parse(text, &self.excludes)?;
        let mut handles = self.handles();
        let Some(What::Snap(snap)) = handles.get_mut(&handle).map(|o| &mut o.what) else {
            return Err(unknown_handle());
        };
        let mut moved: Vec<Vec<u8>> = Vec::new();
        let mut all: BTreeMap<&[u8], (Option<&Meta>, Option<&Meta>)> = BTreeMap::new();
        for (p, m) in &snap.walk {
            all.entry(p).or_default().0 = Some(m);
        }
        for (p, m) in &after {
            all.entry(p).or_default().1 = Some(m);
        }
        for (p, (a, b)) in all {
            let differ = match (a, b) {
                (Some(a), Some(b)) => !a.same(b) || a.is_racy(snap.since),
                _ => true,
            };
            if differ {
                moved.push(p.to_vec());
            }
        }
        let read: Vec<Vec<u8>> = moved
            .iter()
            .filter(|p| find(&after, p).is_some_and(|m| m.kind == Kind::File))
            .cloned()
            .collect();
        snap.after = Some((after, now - RACY_NS, moved));
        Ok(read)
    }

    /// Records the command of `handle` (consumed): the files [`RemoteStore::changed`] asked
    /// for as read now (`states`), every moved path's state before from the index. Returns
    /// the listing, or `None` when nothing changed; the index learns the new states. `merge`:
    /// the changes go to the checkpoint `call` has already, if any (a durable unit's call run
    /// again), instead of a new one.
    ///
    /// Errors: `InvalidArgument` for an unknown handle or one `changed` has not seen; `Io`.
    pub fn record_command(
        &self,
        handle: u64,
        states: Vec<(Vec<u8>, Seen)>,
        call: CallInfo,
        merge: bool,
    ) -> Result<Option<Listing>> {
        self.finish(handle, |inner, what| match what {
            What::Snap(Snap {
                after: Some(after), ..
            }) => self.command_changes(inner, after, states, call, merge),
            _ => Err(unknown_handle()),
        })
    }

    fn command_changes(
        &self,
        inner: &mut Inner,
        (after, since, moved): (Scanned, i64, Vec<Vec<u8>>),
        states: Vec<(Vec<u8>, Seen)>,
        call: CallInfo,
        merge: bool,
    ) -> Result<Option<Listing>> {
        let read: BTreeMap<Vec<u8>, Seen> = states.into_iter().collect();
        let mut changes = Vec::new();
        for path in moved {
            let before = inner
                .index
                .get(&path)
                .map_or(State::Absent, |(_, s)| s.clone());
            let meta = find(&after, &path);
            let seen = match (meta, read.get(&path)) {
                (None, _) => Seen::Absent,
                (Some(m), _) if m.kind == Kind::Dir => Seen::Dir,
                (Some(_), Some(seen)) => seen.clone(),
                (Some(_), None) => continue, // not read: left to the next look
            };
            let after_state = self.put_index(inner, path.clone(), meta, &seen, since)?;
            if !before.same(&after_state) {
                changes.push(Change {
                    path,
                    before,
                    after: after_state,
                });
            }
        }
        let listing = self.append(inner, changes, call, merge)?;
        self.save_index(inner)?;
        Ok(listing)
    }

    /// Drops `handle` without recording (unknown handles are ignored); the index is saved.
    ///
    /// Errors: `Io` for a full disk.
    pub fn release(&self, handle: u64) -> Result<()> {
        let (_hold, mut inner) = self.begin()?;
        let open = self.handles().remove(&handle);
        let result = self.save_index(&mut inner);
        if let Some(open) = open {
            self.close(open.record.as_deref());
        }
        result
    }

    /// Appends a checkpoint of `changes` (sorted here) when there are any (`merge`: added to
    /// the checkpoints `call` has already, if any, as [`super::super::log::Log::add_later`]
    /// adds them); prunes; writes the log.
    pub(super) fn append(
        &self,
        inner: &mut Inner,
        mut changes: Vec<Change>,
        call: CallInfo,
        merge: bool,
    ) -> Result<Option<Listing>> {
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        let existing = inner.log.checkpoints.iter().position(|c| {
            merge
                && call.tool_call_id.is_some()
                && c.run_id == call.run_id
                && c.tool_call_id == call.tool_call_id
        });
        if let Some(pos) = existing {
            if changes.is_empty() {
                return Ok(None);
            }
            let added = inner.log.add_later(pos, changes);
            let listing = Listing::of(&inner.log.checkpoints[added.latest]);
            inner
                .log
                .save(&self.dir().join("log.jsonl"))
                .map_err(|e| io_error(&e))?;
            self.wrote(inner)?;
            return Ok(Some(listing));
        }
        let listing = locked::new_checkpoint(inner, changes, call);
        let path = self.dir().join("log.jsonl");
        if inner.store_bytes() > self.settings.budget_bytes {
            // The index on disk must not name objects the pruning may remove.
            self.save_index(inner)?;
        }
        let protect = calls::objects(self.dir());
        if prune::prune(inner, &self.objects, self.settings.budget_bytes, &protect) {
            inner.log.save(&path).map_err(|e| io_error(&e))?;
        } else if listing.is_some() {
            inner.log.append_last(&path).map_err(|e| io_error(&e))?;
        } else {
            return Ok(None);
        }
        self.wrote(inner)?;
        Ok(listing)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::open;
    use super::*;

    fn listing(now: &str, entries: &[&str]) -> Vec<u8> {
        let mut out = format!("{now}\n").into_bytes();
        for e in entries {
            out.extend_from_slice(e.as_bytes());
            out.push(0);
        }
        out.extend_from_slice(DONE);
        out
    }

    /// When the tests' first listing is taken.
    const FIRST: &str = "2000000000000000000";
    /// A listing's entry of the file `a` (4 bytes).
    const A: &str = "f 1 2 4 1000.5 1000.5 644 a";

    /// A snapshot of a workspace holding only `a` (`one\n`), its file read and settled: the
    /// handle.
    fn snapshot_of_a(store: &RemoteStore, durable: Option<&CallInfo>) -> u64 {
        let (h, need) = store.snapshot(&listing(FIRST, &[A]), durable).unwrap();
        assert_eq!(need, vec![b"a".to_vec()]);
        store
            .settle(h, vec![(b"a".to_vec(), Seen::File(b"one\n".to_vec()))])
            .unwrap();
        h
    }

    #[test]
    fn a_command_between_two_listings() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let first = listing(
            FIRST,
            &[
                "d 1 1 0 1000.5 1000.5 755 ",
                "f 1 2 4 1000.5 1000.5 644 a b.txt",
                "d 1 3 0 1000.5 1000.5 755 .git",
                "f 1 4 4 1000.5 1000.5 644 .git/HEAD",
                "l 1 5 4 1000.5 1000.5 777 link",
                "f 1 6 1 1000.5 1000.5 644 gone",
            ],
        );
        let (h, need) = store.snapshot(&first, None).unwrap();
        assert_eq!(need, vec![b"a b.txt".to_vec(), b"gone".to_vec()]);
        store
            .settle(
                h,
                vec![
                    (b"a b.txt".to_vec(), Seen::File(b"one\n".to_vec())),
                    (b"gone".to_vec(), Seen::File(b"x".to_vec())),
                ],
            )
            .unwrap();
        let second = listing(
            "2000000000000000001",
            &[
                "d 1 1 0 1000.5 1000.5 755 ",
                "f 1 2 4 1001.25 1001.25 644 a b.txt",
                "d 1 7 0 1001.25 1001.25 755 new",
                "f 1 8 1 1001.25 1001.25 644 new/f",
            ],
        );
        let read = store.changed(h, &second).unwrap();
        assert_eq!(read, vec![b"a b.txt".to_vec(), b"new/f".to_vec()]);
        let call = CallInfo {
            tool_name: "run_command".into(),
            ..CallInfo::default()
        };
        let l = store
            .record_command(
                h,
                vec![
                    (b"a b.txt".to_vec(), Seen::File(b"two\n".to_vec())),
                    (b"new/f".to_vec(), Seen::File(b"f".to_vec())),
                ],
                call,
                false,
            )
            .unwrap()
            .unwrap();
        assert_eq!(
            l.paths,
            vec![
                b"a b.txt".to_vec(),
                b"gone".to_vec(),
                b"new".to_vec(),
                b"new/f".to_vec()
            ]
        );
        assert_eq!(l.bytes_kept, 5);
        // A listing cut short is refused.
        let mut cut = second.clone();
        cut.truncate(cut.len() - 3);
        assert!(store.snapshot(&cut, None).is_err());
    }

    #[test]
    fn a_dead_attempts_command_is_the_calls() {
        let dir = tempfile::tempdir().unwrap();
        let call = CallInfo {
            run_id: Some("r".into()),
            tool_call_id: Some("c1".into()),
            tool_name: "run_command".into(),
            created_at: 1.0,
        };
        let dead = open(dir.path());
        snapshot_of_a(&dead, Some(&call));
        drop(dead); // killed mid-command, after it changed `a` and made `b`
        let second = listing(
            "2000000000000000009",
            &["f 1 2 8 1001.5 1001.5 644 a", "f 1 3 2 1001.5 1001.5 644 b"],
        );
        let store = open(dir.path());
        let (h, need) = store.snapshot(&second, Some(&call)).unwrap();
        assert_eq!(need, vec![b"a".to_vec(), b"b".to_vec()]);
        store
            .settle(
                h,
                vec![
                    (b"a".to_vec(), Seen::File(b"one\ntwo\n".to_vec())),
                    (b"b".to_vec(), Seen::File(b"b\n".to_vec())),
                ],
            )
            .unwrap();
        // The retry changes nothing more: its record adds nothing, the dead attempt's stays the call's.
        assert_eq!(store.changed(h, &second).unwrap(), Vec::<Vec<u8>>::new());
        assert_eq!(store.record_command(h, vec![], call, true).unwrap(), None);
        let [l] = &store.list(None)[..] else {
            panic!("one checkpoint")
        };
        assert_eq!(
            (l.tool_call_id.as_deref(), &l.paths, l.bytes_kept),
            (Some("c1"), &vec![b"a".to_vec(), b"b".to_vec()], 4)
        );
    }

    #[test]
    fn a_reloaded_index_has_no_modes_the_protocol_does_not_carry() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let h = snapshot_of_a(&store, None);
        store.release(h).unwrap(); // the index written, with the listing's metadata
        drop(store);
        // Another process (a restart): a command that only touches `a` changes nothing.
        let store = open(dir.path());
        let (h, need) = store.snapshot(&listing(FIRST, &[A]), None).unwrap();
        assert!(need.is_empty());
        let touched = listing("2000000000000000009", &["f 1 2 4 1001.5 1001.5 644 a"]);
        assert_eq!(store.changed(h, &touched).unwrap(), vec![b"a".to_vec()]);
        let states = vec![(b"a".to_vec(), Seen::File(b"one\n".to_vec()))];
        let call = CallInfo::default();
        assert_eq!(store.record_command(h, states, call, false).unwrap(), None);
    }
}
