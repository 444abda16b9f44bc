//! The store across processes (two stores on one root stand for two processes: each has its
//! own open lock file) and across a dead attempt of a durable unit's call (its store dropped
//! with the call's handle still open, as a killed worker leaves it).

use std::path::Path;

use super::*;

fn open(root: &Path) -> CheckpointStore {
    CheckpointStore::open(root.to_str().unwrap(), Settings::default()).unwrap()
}

fn call(name: &str) -> CallInfo {
    CallInfo {
        run_id: Some("run".into()),
        tool_call_id: Some(format!("{name}-call")),
        tool_name: name.into(),
        // Started now: the record of a call whose last attempt started over a day before is
        // swept when a store is opened.
        created_at: state::now_ns() as f64 / 1e9,
    }
}

fn strs(ps: &[Vec<u8>]) -> Vec<String> {
    ps.iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

fn rewind(store: &CheckpointStore, to: &str) -> rewind::Rewound {
    let plan = store.plan_rewind(to, None).unwrap();
    let pinned: Vec<_> = plan
        .files
        .iter()
        .map(|f| (f.path.clone(), f.old_hash.clone()))
        .collect();
    store.commit_rewind(to, None, &pinned, false).unwrap()
}

fn records(root: &Path) -> usize {
    std::fs::read_dir(root.join(STORE_DIR).join("calls")).map_or(0, |d| d.count())
}

#[test]
fn a_dead_commands_changes_go_to_its_checkpoint_not_the_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a.txt"), "one").unwrap();
    let first = open(r);
    let _ = first
        .snapshot_call(For::Durable(&call("run_command")))
        .unwrap();
    assert_eq!(records(r), 1);
    // The command changes a.txt and creates c.txt; its worker dies before the record.
    std::fs::write(r.join("a.txt"), "two!").unwrap();
    std::fs::write(r.join("c.txt"), "c").unwrap();
    drop(first);
    // The attempt run again finds them: its call's checkpoint.
    let again = open(r);
    let h = again
        .snapshot_call(For::Durable(&call("run_command")))
        .unwrap();
    let [cp] = again.list(None).try_into().unwrap();
    assert_eq!(cp.tool_call_id.as_deref(), Some("run_command-call"));
    assert_eq!(strs(&cp.paths), ["a.txt", "c.txt"]);
    again.release(h).unwrap();
    assert_eq!(records(r), 0);
    rewind(&again, &cp.id);
    assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "one");
    assert!(!r.join("c.txt").exists());
    // Without a record (a plain snapshot, or a call recorded), a change is the baseline's.
    std::fs::write(r.join("a.txt"), "person").unwrap();
    let h = again
        .snapshot_call(For::Durable(&call("run_command")))
        .unwrap();
    assert!(again.list(None).is_empty());
    assert_eq!(again.record(h, call("run_command")).unwrap(), None);
}

#[test]
fn a_dead_commits_before_states_are_recorded_by_the_retry() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a.txt"), "one").unwrap();
    let first = open(r);
    let _ = first
        .keep_call(
            &[b"a.txt".to_vec(), b"new/b.txt".to_vec()],
            For::Durable(&call("write_file")),
        )
        .unwrap();
    std::fs::write(r.join("a.txt"), "two").unwrap();
    std::fs::create_dir(r.join("new")).unwrap();
    std::fs::write(r.join("new/b.txt"), "b").unwrap();
    drop(first); // died between the commit and the record
    let again = open(r);
    // The retried commit finds its files written already and changes nothing.
    let h = again
        .keep_call(&[b"a.txt".to_vec()], For::Durable(&call("write_file")))
        .unwrap();
    let cp = again.record(h, call("write_file")).unwrap().unwrap();
    assert_eq!(strs(&cp.paths), ["a.txt", "new", "new/b.txt"]);
    assert_eq!(records(r), 0);
    rewind(&again, &cp.id);
    assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "one");
    assert!(!r.join("new").exists());
}

#[test]
fn two_stores_on_one_root_share_ids_and_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a.txt"), "one").unwrap();
    std::fs::write(r.join("b.txt"), "one").unwrap();
    let (p1, p2) = (open(r), open(r));
    let h = p1.snapshot().unwrap();
    std::fs::write(r.join("a.txt"), "two").unwrap();
    let one = p1.record(h, call("run_command")).unwrap().unwrap();
    // The other store sees the first one's checkpoint and baseline: its command's checkpoint
    // holds b.txt only, under the next id.
    let h = p2.snapshot().unwrap();
    std::fs::write(r.join("b.txt"), "two").unwrap();
    let two = p2.record(h, call("run_command")).unwrap().unwrap();
    assert_eq!(
        (one.id.as_str(), two.id.as_str()),
        ("cp-000001", "cp-000002")
    );
    assert_eq!(strs(&two.paths), ["b.txt"]);
    let h = p1.keep(&[b"a.txt".to_vec()]).unwrap();
    std::fs::write(r.join("a.txt"), "three").unwrap();
    let three = p1.record(h, call("edit_file")).unwrap().unwrap();
    assert_eq!(three.id, "cp-000003");
    assert_eq!(p1.list(None), p2.list(None));
    // A rewind in one undoes the other's checkpoints too.
    rewind(&p2, "cp-000001");
    assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "one");
    assert_eq!(std::fs::read_to_string(r.join("b.txt")).unwrap(), "one");
    assert!(p1.list(None).is_empty());
    // A call's lock is held from its snapshot or keep to its record or release; a look's is not.
    let other = coord::Coord::open(&r.join(STORE_DIR)).unwrap();
    let h = p1.snapshot_call(For::Call).unwrap();
    assert_eq!(other.try_enter(), None);
    p1.record(h, call("run_command")).unwrap();
    let h = p1.keep(&[b"a.txt".to_vec()]).unwrap();
    assert_eq!(other.try_enter(), None);
    p1.release(h).unwrap();
    let look = p1.snapshot().unwrap();
    assert!(other.try_enter().is_some());
    other.leave();
    p1.release(look).unwrap();
}

#[test]
fn opening_does_not_wait_for_another_processs_call() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a.txt"), "one").unwrap();
    let p1 = open(r);
    let h = p1.keep_call(&[b"a.txt".to_vec()], For::Call).unwrap();
    std::fs::write(r.join("a.txt"), "two").unwrap();
    let p2 = open(r); // p1's call holds the lock: p2 opens without loading
    p1.record(h, call("write_file")).unwrap().unwrap();
    // p2's first operation loads what p1 recorded meanwhile.
    assert_eq!(p2.list(None), p1.list(None));
    assert_eq!(p2.list(None).len(), 1);
}

#[test]
fn a_failed_record_gives_the_lock_back() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("ws");
    std::fs::create_dir(&r).unwrap();
    let store = open(&r);
    let h = store.snapshot_call(For::Call).unwrap();
    let other = coord::Coord::open(&r.join(STORE_DIR)).unwrap();
    std::fs::rename(&r, dir.path().join("moved")).unwrap(); // the root is gone
    assert!(store.record(h, call("run_command")).is_err());
    assert!(other.try_enter().is_some());
    other.leave();
}

#[test]
fn another_calls_change_meanwhile_is_not_the_dead_commands() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a.txt"), "one").unwrap();
    std::fs::write(r.join("b.txt"), "one").unwrap();
    let first = open(r);
    let _ = first
        .snapshot_call(For::Durable(&call("run_command")))
        .unwrap();
    std::fs::write(r.join("a.txt"), "two").unwrap();
    drop(first); // died mid-command
                 // Another process's file tool call before the retry: its own checkpoint, not the command's.
    let other = open(r);
    let h = other.keep(&[b"b.txt".to_vec()]).unwrap();
    std::fs::write(r.join("b.txt"), "two").unwrap();
    other.record(h, call("write_file")).unwrap().unwrap();
    let again = open(r);
    let h = again
        .snapshot_call(For::Durable(&call("run_command")))
        .unwrap();
    let listed = again.list(None);
    assert_eq!(
        listed
            .iter()
            .map(|c| (c.tool_name.as_str(), strs(&c.paths)))
            .collect::<Vec<_>>(),
        [
            ("write_file", vec!["b.txt".to_string()]),
            ("run_command", vec!["a.txt".to_string()])
        ]
    );
    again.release(h).unwrap();
}

#[test]
fn records_go_with_their_calls_and_old_dead_ones_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let calls_dir = r.join(STORE_DIR).join("calls");
    let store = open(r);
    let h = store.keep_call(&[b"a.txt".to_vec()], For::Durable(&call("write_file")));
    assert_eq!(records(r), 1);
    std::fs::write(r.join("a.txt"), "a").unwrap();
    let listing = store.record(h.unwrap(), call("write_file")).unwrap();
    assert_eq!(listing.unwrap().paths, vec![b"a.txt".to_vec()]);
    // The last record took its directory.
    assert!(!calls_dir.exists());
    // Two attempts die mid-call: one started two days ago, one now.
    let old = CallInfo {
        created_at: call("run_command").created_at - 2.0 * calls::ORPHAN_AFTER_SECS,
        ..call("run_command")
    };
    let _ = store.snapshot_call(For::Durable(&old)).unwrap();
    let _ = store.snapshot_call(For::Durable(&call("shell"))).unwrap();
    drop(store);
    assert_eq!(records(r), 2);
    // Opened with no call in progress: the old one's run is over; the recent one waits.
    let store = open(r);
    let left: Vec<_> = std::fs::read_dir(&calls_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        left,
        vec![calls::path_of(&store.dir, &call("shell")).unwrap()]
    );
}

/// A shell command outside a durable unit whose process died mid-command (its store dropped
/// with the handle open): the next process to take the lock records what the command changed as
/// its checkpoint, whether it opens the store afterwards or had it open all along; a call of
/// its own in progress is not taken for a dead one.
#[test]
fn a_dead_processs_command_is_recorded_by_the_next_process() {
    for open_before in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::write(r.join("a.txt"), "one").unwrap();
        let other = open_before.then(|| open(r));
        let dying = open(r);
        // An earlier command of the dying process: the index on disk is current, so the next
        // snapshot writes nothing but the call's record.
        let h = dying.snapshot_call(For::Call).unwrap();
        assert!(dying.record(h, call("earlier")).unwrap().is_none());
        if let Some(other) = &other {
            assert!(other.list(None).is_empty()); // seen up to here
        }
        let _ = dying
            .snapshot_call(For::Adoptable(&call("run_command")))
            .unwrap();
        assert_eq!(records(r), 1);
        // The adopting look never counts its own call in progress as dead.
        let own = dying.snapshot_call(For::Look).unwrap();
        dying.release(own).unwrap();
        std::fs::write(r.join("a.txt"), "two!").unwrap();
        std::fs::write(r.join("c.txt"), "c").unwrap();
        drop(dying);
        let next = other.unwrap_or_else(|| open(r));
        let [cp] = next.list(None).try_into().unwrap();
        assert_eq!(
            (cp.tool_call_id.as_deref(), strs(&cp.paths)),
            (
                Some("run_command-call"),
                vec!["a.txt".into(), "c.txt".into()]
            )
        );
        assert_eq!(records(r), 0);
        rewind(&next, &cp.id);
        assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "one");
        assert!(!r.join("c.txt").exists());
    }
}
