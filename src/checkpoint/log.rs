//! The log: the checkpoints, oldest first, each with the before and after state of every
//! path its call changed, plus the ids pruned to keep the store within its budget. Persisted
//! as `log.jsonl`: a versioned header line (`next`, `pruned`), then one JSON line per
//! checkpoint. A new checkpoint is appended (one `write`, so a call's cost does not grow
//! with the log); any other change (an extension, pruning, a rewind) replaces the file whole
//! through a temporary file and a rename. A kill leaves the old log, the new one, or the old
//! one with a torn last line, which the next load drops (and rewrites the file without it).
//!
//! Per path, the order of the log is the order in time: the last checkpoint that changed a
//! path holds its last recorded state, the first one from a rewind's checkpoint on its state
//! before them. A change added to an earlier checkpoint (a background job's, found after later
//! calls were recorded) keeps it so: [`Log::add_later`] puts a change of a path a later
//! checkpoint changed too in a new checkpoint of the same call instead.

use std::path::Path;

use serde_json::{json, Value};

use super::index::write_whole;
use super::state::{esc, unesc, State};

const VERSION: u64 = 1;

/// One path a call changed: its state before the call and after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Root-relative path bytes.
    pub path: Vec<u8>,
    /// The state before the call.
    pub before: State,
    /// The state the call left.
    pub after: State,
}

/// A recorded tool call and what it changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// `cp-` and a six-digit sequence number.
    pub id: String,
    /// The run the call belongs to.
    pub run_id: Option<String>,
    /// The tool call's id.
    pub tool_call_id: Option<String>,
    /// The tool's name.
    pub tool_name: String,
    /// When the call started, in epoch seconds.
    pub created_at: f64,
    /// The changed paths, sorted by path.
    pub changes: Vec<Change>,
}

impl Checkpoint {
    /// The bytes kept to restore the state before this call (its stored before-states).
    pub fn bytes_kept(&self) -> u64 {
        self.changes.iter().map(|c| c.before.kept_bytes()).sum()
    }

    /// Merges `more` (sorted) into the changes: a path already there keeps its before-state
    /// and takes the new after-state; a path back at its before-state is dropped.
    pub fn merge(&mut self, more: Vec<Change>) {
        let mut map: std::collections::BTreeMap<Vec<u8>, Change> =
            std::mem::take(&mut self.changes)
                .into_iter()
                .map(|c| (c.path.clone(), c))
                .collect();
        for c in more {
            match map.get_mut(&c.path) {
                Some(old) => old.after = c.after,
                None => {
                    map.insert(c.path.clone(), c);
                }
            }
        }
        self.changes = map
            .into_values()
            .filter(|c| !c.before.same(&c.after))
            .collect();
    }
}

/// What [`Log::add_later`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Added {
    /// Changes went into the call's latest checkpoint (already in the log).
    pub merged: bool,
    /// A new checkpoint of the call was appended.
    pub appended: bool,
    /// The position of the call's latest checkpoint now.
    pub latest: usize,
}

/// The checkpoints and the ids pruned so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Log {
    /// The next sequence number.
    pub next: u64,
    /// Oldest first.
    pub checkpoints: Vec<Checkpoint>,
    /// Ids removed to keep within the budget, oldest first.
    pub pruned: Vec<String>,
}

impl Log {
    /// A new id (`cp-000017`).
    pub fn new_id(&mut self) -> String {
        self.next += 1;
        format!("cp-{:06}", self.next)
    }

    /// Where checkpoint `id` is in the list.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.checkpoints.iter().position(|c| c.id == id)
    }

    /// Adds `more` (changes found after everything the log holds, sorted by path) to the call of
    /// the checkpoint at `pos`: its latest checkpoint (the last with its run and tool call id;
    /// without a tool call id, the one at `pos`) takes the changes of paths no later checkpoint
    /// changed ([`Checkpoint::merge`]); the others go to a new checkpoint of the same call,
    /// appended, so that the log's order per path stays the order in time (see the module doc)
    /// and no checkpoint's diff claims what a later call changed.
    pub fn add_later(&mut self, pos: usize, more: Vec<Change>) -> Added {
        let call = &self.checkpoints[pos];
        let last = match call.tool_call_id {
            Some(_) => self
                .checkpoints
                .iter()
                .rposition(|c| c.run_id == call.run_id && c.tool_call_id == call.tool_call_id)
                .unwrap_or(pos),
            None => pos,
        };
        let later: std::collections::HashSet<&[u8]> = self.checkpoints[last + 1..]
            .iter()
            .flat_map(|c| c.changes.iter().map(|ch| ch.path.as_slice()))
            .collect();
        let (after_others, own): (Vec<Change>, Vec<Change>) = more
            .into_iter()
            .partition(|c| later.contains(c.path.as_slice()));
        let merged = !own.is_empty();
        if merged {
            self.checkpoints[last].merge(own);
        }
        let rest: Vec<Change> = after_others
            .into_iter()
            .filter(|c| !c.before.same(&c.after))
            .collect();
        if rest.is_empty() {
            return Added {
                merged,
                appended: false,
                latest: last,
            };
        }
        let id = self.new_id();
        let of = &self.checkpoints[last];
        let next = Checkpoint {
            id,
            run_id: of.run_id.clone(),
            tool_call_id: of.tool_call_id.clone(),
            tool_name: of.tool_name.clone(),
            created_at: of.created_at,
            changes: rest,
        };
        self.checkpoints.push(next);
        Added {
            merged,
            appended: true,
            latest: self.checkpoints.len() - 1,
        }
    }

    fn header(&self) -> Value {
        json!({"version": VERSION, "next": self.next, "pruned": self.pruned})
    }

    /// The log stored at `path`: empty when there is none. A torn last line (a kill during an
    /// append) is dropped and the file rewritten without it.
    ///
    /// Errors: a log this version cannot read (a newer format): the store refuses to open
    /// rather than overwrite it.
    pub fn load(path: &Path) -> Result<Log, String> {
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Log::default()),
            Err(_) => return Err("the checkpoint log could not be read".into()),
        };
        let foreign = || "the checkpoint log is not in a format this version reads".to_string();
        let mut lines = text.split(|&b| b == b'\n');
        let header: Value = lines
            .next()
            .and_then(|l| serde_json::from_slice(l).ok())
            .ok_or_else(foreign)?;
        if header.get("version").and_then(Value::as_u64) != Some(VERSION) {
            return Err(foreign());
        }
        let mut log = Log {
            next: header
                .get("next")
                .and_then(Value::as_u64)
                .ok_or_else(foreign)?,
            checkpoints: Vec::new(),
            pruned: header
                .get("pruned")
                .and_then(Value::as_array)
                .ok_or_else(foreign)?
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        };
        let mut torn = false;
        let lines: Vec<&[u8]> = lines.collect();
        for (i, line) in lines.iter().enumerate() {
            let last = i + 1 == lines.len();
            if line.is_empty() && last {
                break; // the newline after the last line
            }
            let parsed = serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|v| checkpoint_from_json(&v));
            match parsed {
                Some(cp) => log.checkpoints.push(cp),
                // A torn append is the last line, with no newline after it.
                None if last => torn = true,
                None => return Err(foreign()),
            }
        }
        if let Some(n) = log
            .checkpoints
            .iter()
            .filter_map(|c| c.id.strip_prefix("cp-")?.parse::<u64>().ok())
            .max()
        {
            log.next = log.next.max(n);
        }
        if torn {
            log.save(path)
                .map_err(|_| "the checkpoint log could not be written".to_string())?;
        }
        Ok(log)
    }

    /// Persists the whole log at `path` (old or new after a kill).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut out = self.header().to_string();
        out.push('\n');
        let mut out = out.into_bytes();
        for cp in &self.checkpoints {
            out.extend_from_slice(&line_of(cp));
        }
        write_whole(path, &out)
    }

    /// Appends the last checkpoint to the log at `path` (the whole log is written when there
    /// is no file yet).
    pub fn append_last(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let Some(line) = self.last_line() else {
            return self.save(path);
        };
        if !path.exists() {
            return self.save(path);
        }
        let mut f = std::fs::OpenOptions::new().append(true).open(path)?;
        f.write_all(&line)
    }

    /// [`Log::append_last`] through `file`, the descriptor of the log kept from the last append
    /// (no `open` of the log's path per checkpoint).
    pub fn append_last_to(&self, file: &mut LogFile, path: &Path) -> std::io::Result<()> {
        match self.last_line() {
            Some(line) => file.append(path, &line, || self.save(path)),
            None => {
                file.forget();
                self.save(path)
            }
        }
    }

    /// The last checkpoint's line as [`Log::append_last`] appends it (newline included).
    pub fn last_line(&self) -> Option<Vec<u8>> {
        Some(line_of(self.checkpoints.last()?))
    }
}

/// A descriptor of the log file open for appending, kept from one append to the next: a
/// file tool's checkpoint then costs one `write` (and an `fstat`), not an `open` of the log's
/// path as well. It is used only while it still names a file in the store: a log replaced
/// whole (a rename over it, by this process or another, even one killed before it told
/// anybody) leaves the kept descriptor on a file with no links, and the path is opened again.
#[derive(Default)]
pub struct LogFile(Option<std::fs::File>);

impl LogFile {
    /// Appends `line` to the log at `path`; `whole()` writes the log whole instead when there
    /// is no file at `path` (the first checkpoint, or a log removed by hand).
    ///
    /// Errors: the append or the write failed (a full disk, a read-only file system).
    pub fn append(
        &mut self,
        path: &Path,
        line: &[u8],
        whole: impl FnOnce() -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::MetadataExt;
        if let Some(f) = &mut self.0 {
            if f.metadata().is_ok_and(|m| m.nlink() > 0) {
                return f.write_all(line);
            }
        }
        self.0 = None;
        match std::fs::OpenOptions::new().append(true).open(path) {
            Ok(mut f) => {
                f.write_all(line)?;
                self.0 = Some(f);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => whole(),
            Err(e) => Err(e),
        }
    }

    /// Drops the kept descriptor (the log was, or may have been, replaced).
    pub fn forget(&mut self) {
        self.0 = None;
    }
}

/// The line of `cp` in the log file (newline included): the bytes of
/// `checkpoint_to_json(cp)` (keys sorted, as `serde_json`'s map writes them), written
/// straight into the buffer instead of through a `Value` tree (a file tool's checkpoint
/// formats one per call).
pub fn line_of(cp: &Checkpoint) -> Vec<u8> {
    let mut out = Vec::with_capacity(160 + 240 * cp.changes.len());
    out.extend_from_slice(b"{\"changes\":[");
    for (i, ch) in cp.changes.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"after\":");
        state_json(&mut out, &ch.after);
        out.extend_from_slice(b",\"before\":");
        state_json(&mut out, &ch.before);
        out.extend_from_slice(b",\"path\":");
        json_str(&mut out, &esc(&ch.path));
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"created_at\":");
    // As a `Value` writes an f64 (`null` when not finite).
    let _ = serde_json::to_writer(&mut out, &cp.created_at);
    out.extend_from_slice(b",\"id\":");
    json_str(&mut out, &cp.id);
    out.extend_from_slice(b",\"run_id\":");
    json_opt(&mut out, cp.run_id.as_deref());
    out.extend_from_slice(b",\"tool_call_id\":");
    json_opt(&mut out, cp.tool_call_id.as_deref());
    out.extend_from_slice(b",\"tool_name\":");
    json_str(&mut out, &cp.tool_name);
    out.extend_from_slice(b"}\n");
    out
}

fn json_str(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *out, s);
}

fn json_opt(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => json_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// [`State::to_json`]'s bytes.
fn state_json(out: &mut Vec<u8>, state: &State) {
    use std::io::Write;
    let _ = match state {
        State::Absent => write!(out, "{{\"k\":\"a\"}}"),
        State::File {
            hash,
            size,
            mode,
            stored,
        } => {
            out.extend_from_slice(b"{\"h\":");
            json_str(out, hash);
            write!(
                out,
                ",\"k\":\"f\",\"m\":{mode},\"s\":{size},\"st\":{stored}}}"
            )
        }
        State::Dir { mode } => write!(out, "{{\"k\":\"d\",\"m\":{mode}}}"),
        State::Symlink { target } => {
            out.extend_from_slice(b"{\"k\":\"l\",\"t\":");
            json_str(out, &esc(target));
            write!(out, "}}")
        }
    };
}

/// The JSON of `cp` as a `Value`: what [`line_of`] writes (the test holding them equal).
#[cfg(test)]
fn checkpoint_to_json(c: &Checkpoint) -> Value {
    json!({
        "id": c.id,
        "run_id": c.run_id,
        "tool_call_id": c.tool_call_id,
        "tool_name": c.tool_name,
        "created_at": c.created_at,
        "changes": c.changes.iter().map(|ch| json!({
            "path": esc(&ch.path),
            "before": ch.before.to_json(),
            "after": ch.after.to_json(),
        })).collect::<Vec<_>>(),
    })
}

fn checkpoint_from_json(c: &Value) -> Option<Checkpoint> {
    let opt = |v: &Value| v.as_str().map(str::to_string);
    let mut changes = Vec::new();
    for ch in c.get("changes")?.as_array()? {
        changes.push(Change {
            path: unesc(ch.get("path")?.as_str()?)?,
            before: State::from_json(ch.get("before")?)?,
            after: State::from_json(ch.get("after")?)?,
        });
    }
    Some(Checkpoint {
        id: c.get("id")?.as_str()?.to_string(),
        run_id: opt(c.get("run_id")?),
        tool_call_id: opt(c.get("tool_call_id")?),
        tool_name: c.get("tool_name")?.as_str()?.to_string(),
        created_at: c.get("created_at")?.as_f64()?,
        changes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept descriptor follows the log: a log replaced whole (by this process or another)
    /// gets the next line, not the unlinked file; a log removed is written whole again.
    #[test]
    fn a_kept_log_descriptor_is_dropped_when_the_log_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let mut file = LogFile::default();
        let whole = |text: &str| {
            let p = path.clone();
            let text = text.to_string();
            move || std::fs::write(&p, text)
        };
        file.append(&path, b"a\n", whole("header\n")).unwrap(); // no log: written whole
        file.append(&path, b"b\n", whole("unused")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "header\nb\n");
        let other = dir.path().join("new");
        std::fs::write(&other, "replaced\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        file.append(&path, b"c\n", whole("unused")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "replaced\nc\n");
        std::fs::remove_file(&path).unwrap();
        file.append(&path, b"d\n", whole("again\n")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "again\n");
    }

    #[test]
    fn a_line_is_its_json_value_written() {
        let states = [
            State::Absent,
            State::File {
                hash: "ab\"c".into(),
                size: u64::MAX,
                mode: 0o100755,
                stored: false,
            },
            State::Dir { mode: 0o40700 },
            State::Symlink {
                target: b"t\xff\n%\\\"\x7f".to_vec(),
            },
        ];
        for (i, created_at) in [1.5, 0.1 + 0.2, 1e300, -0.0, f64::NAN, 1764000000.123456]
            .into_iter()
            .enumerate()
        {
            let cp = Checkpoint {
                id: format!("cp-{i:06}"),
                run_id: (i % 2 == 0).then(|| "r\u{e9}\t\"".to_string()),
                tool_call_id: (i % 3 == 0).then(|| "call\u{1}".to_string()),
                tool_name: "edit_file".into(),
                created_at,
                changes: states
                    .iter()
                    .zip(states.iter().rev())
                    .take(i)
                    .map(|(a, b)| Change {
                        path: format!("d/\u{2603}{i}").into_bytes(),
                        before: a.clone(),
                        after: b.clone(),
                    })
                    .collect(),
            };
            let mut want = checkpoint_to_json(&cp).to_string();
            want.push('\n');
            assert_eq!(String::from_utf8(line_of(&cp)).unwrap(), want);
        }
    }

    fn file(h: &str) -> State {
        State::File {
            hash: h.into(),
            size: 1,
            mode: 0o644,
            stored: true,
        }
    }

    #[test]
    fn saves_loads_and_merges() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        assert_eq!(Log::load(&path).unwrap(), Log::default());
        let mut log = Log::default();
        let id = log.new_id();
        assert_eq!(id, "cp-000001");
        let mut cp = Checkpoint {
            id,
            run_id: Some("r".into()),
            tool_call_id: None,
            tool_name: "write_file".into(),
            created_at: 1.5,
            changes: vec![Change {
                path: b"a".to_vec(),
                before: State::Absent,
                after: file("x"),
            }],
        };
        cp.merge(vec![
            Change {
                path: b"a".to_vec(),
                before: file("x"),
                after: State::Absent,
            },
            Change {
                path: b"b".to_vec(),
                before: file("y"),
                after: file("z"),
            },
        ]);
        // `a` was created and removed: no change left; `b` added.
        assert_eq!(cp.changes.len(), 1);
        assert_eq!(cp.changes[0].path, b"b");
        assert_eq!(cp.bytes_kept(), 1);
        log.checkpoints.push(cp.clone());
        log.pruned.push("cp-000000".into());
        log.save(&path).unwrap();
        assert_eq!(Log::load(&path).unwrap(), log);
        // Appended checkpoints load; a torn last line is dropped and the file rewritten.
        let mut second = cp;
        second.id = log.new_id();
        log.checkpoints.push(second);
        log.append_last(&path).unwrap();
        assert_eq!(Log::load(&path).unwrap(), log);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(br#"{"id": "cp-000003", "chan"#);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(Log::load(&path).unwrap(), log);
        let whole = dir.path().join("whole");
        log.save(&whole).unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            std::fs::read(&whole).unwrap()
        );
        std::fs::write(&path, r#"{"version": 99}"#).unwrap();
        assert!(Log::load(&path).is_err());
    }
    fn call(log: &mut Log, tool_call_id: &str, changes: Vec<Change>) {
        let id = log.new_id();
        log.checkpoints.push(Checkpoint {
            id,
            run_id: Some("r".into()),
            tool_call_id: Some(tool_call_id.into()),
            tool_name: tool_call_id.into(),
            created_at: 1.0,
            changes,
        });
    }

    fn change(path: &str, before: State, after: State) -> Change {
        Change {
            path: path.as_bytes().to_vec(),
            before,
            after,
        }
    }

    #[test]
    fn a_later_change_of_a_path_a_later_checkpoint_changed_gets_a_new_checkpoint_of_its_call() {
        let mut log = Log::default();
        call(&mut log, "job", vec![change("j", State::Absent, file("1"))]);
        call(&mut log, "cmd", vec![change("j", file("1"), file("2"))]);
        // `j` changed by the command since: a new checkpoint of the job's call; `k` joins the job's.
        let added = log.add_later(
            0,
            vec![
                change("j", file("2"), file("3")),
                change("k", State::Absent, file("k")),
            ],
        );
        assert_eq!(
            added,
            Added {
                merged: true,
                appended: true,
                latest: 2
            }
        );
        let shown: Vec<(&str, Vec<&[u8]>)> = log
            .checkpoints
            .iter()
            .map(|c| {
                let paths = c.changes.iter().map(|ch| ch.path.as_slice()).collect();
                (c.tool_call_id.as_deref().unwrap(), paths)
            })
            .collect();
        assert_eq!(
            shown,
            vec![
                ("job", vec![&b"j"[..], b"k"]),
                ("cmd", vec![b"j"]),
                ("job", vec![b"j"])
            ]
        );
        assert_eq!(log.checkpoints[0].changes[0].after, file("1"));
        assert_eq!(log.checkpoints[2].id, "cp-000003");
        assert_eq!(log.checkpoints[2].changes[0].before, file("2"));
        // Added to through its first checkpoint: the latest of the call takes what no later one
        // changed.
        let added = log.add_later(0, vec![change("j", file("3"), file("4"))]);
        assert_eq!(
            (added.merged, added.appended, added.latest),
            (true, false, 2)
        );
        assert_eq!(log.checkpoints[2].changes[0].after, file("4"));
        assert_eq!(log.checkpoints.len(), 3);
    }
}
