//! A file tool's fused call ([`CheckpointStore::around`]) under the store's coordination: the
//! writer thread's objects and log line are on disk before another process (a second store on
//! the root, with its own open lock file) can take the lock; what is on disk while they are
//! queued (what a kill leaves) names no missing object; a durable call's record still gives a
//! dead attempt's change to its retry.

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;

use super::around::Known;
use super::*;

fn open(root: &Path) -> CheckpointStore {
    CheckpointStore::open(root.to_str().unwrap(), Settings::default()).unwrap()
}

fn call(name: &str, id: Option<&str>) -> CallInfo {
    CallInfo {
        run_id: Some("run".into()),
        tool_call_id: id.map(str::to_string),
        tool_name: name.into(),
        // Now: a dead attempt's record older than a day is swept when a store opens.
        created_at: super::state::now_ns() as f64 / 1e9,
    }
}

/// A fused edit (`old`: an edit's bytes before; `None`: a write) of `a.txt` to `new`.
fn fused(
    store: &CheckpointStore,
    root: &Path,
    old: Option<&str>,
    new: &str,
    call: CallInfo,
    durable: bool,
) -> Option<Listing> {
    fused_waiting(store, root, old, new, call, durable, true).unwrap()
}

/// [`fused`], without waiting when `wait` is false: `None` when the store declines to run inline.
fn fused_waiting(
    store: &CheckpointStore,
    root: &Path,
    old: Option<&str>,
    new: &str,
    call: CallInfo,
    durable: bool,
    wait: bool,
) -> Option<Option<Listing>> {
    let known = vec![Known {
        path: b"a.txt".to_vec(),
        old: old.map(|o| Arc::new(o.as_bytes().to_vec()) as _),
        new: Arc::new(new.as_bytes().to_vec()),
        new_hash: None,
    }];
    let (written, listing) = store
        .around(&[b"a.txt".to_vec()], known, call, durable, wait, |_, _| {
            std::fs::write(root.join("a.txt"), new).map_err(|e| Error::io(&e, "write"))
        })
        .unwrap()?;
    written.unwrap();
    Some(listing)
}

/// Every stored object the log and the index on disk name is there.
fn names_no_missing_object(dir: &Path) {
    let objects = store::Objects::open(dir).unwrap();
    let log = Log::load(&dir.join("log.jsonl")).unwrap();
    let index = index::load(&dir.join("index"));
    let states = index.values().map(|(_, s)| s).chain(
        log.checkpoints
            .iter()
            .flat_map(|c| c.changes.iter().flat_map(|ch| [&ch.before, &ch.after])),
    );
    for s in states {
        if let Some(h) = s.object() {
            assert!(objects.path(h).exists(), "object {h} missing");
        }
    }
}

#[test]
fn another_process_waits_for_the_writer_and_finds_the_line_and_its_objects() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let store_dir = r.join(STORE_DIR);
    std::fs::write(r.join("a.txt"), "one\n").unwrap();
    let store = open(r);
    let first = fused(
        &store,
        r,
        Some("one\n"),
        "two\n",
        call("edit_file", None),
        false,
    )
    .unwrap();
    store.objects.flush().unwrap();
    // The writer is held up: the next edit's objects and line stay queued.
    let (go, wait) = mpsc::channel::<()>();
    store.objects.then_later(Box::new(move || {
        let _ = wait.recv();
    }));
    let second = fused(
        &store,
        r,
        Some("two\n"),
        "three\n",
        call("edit_file", None),
        false,
    )
    .unwrap();
    assert_eq!(
        (first.id.as_str(), second.id.as_str()),
        ("cp-000001", "cp-000002")
    );
    // The call has returned; its hold of the lock has not been given back.
    let other = coord::Coord::open(&store_dir).unwrap();
    assert_eq!(other.try_enter(), None);
    let log = std::fs::read_to_string(store_dir.join("log.jsonl")).unwrap();
    assert!(log.contains("cp-000001") && !log.contains("cp-000002"));
    // What a kill now would leave names no missing object.
    names_no_missing_object(&store_dir);
    go.send(()).unwrap();
    // Taken once the writer is done: the line and its objects are there, the generation new.
    assert!(other.enter().unwrap() > 0);
    other.leave();
    names_no_missing_object(&store_dir);
    let theirs = open(r);
    assert_eq!(theirs.list(None), vec![first, second.clone()]);
    assert_eq!(
        theirs.diff(&second.id).unwrap()[0].1,
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+three"
    );
    // Its own fused edit follows under the next id, and this store sees it.
    let third = fused(
        &theirs,
        r,
        Some("three\n"),
        "four\n",
        call("edit_file", None),
        false,
    )
    .unwrap();
    assert_eq!(third.id, "cp-000003");
    assert_eq!(store.list(None), theirs.list(None));
    assert_eq!(
        store.diff(&third.id).unwrap()[0].1,
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-three\n+four"
    );
}

#[test]
fn a_durable_fused_call_dead_after_its_commit_is_recorded_by_its_retry() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let calls_dir = r.join(STORE_DIR).join("calls");
    std::fs::write(r.join("a.txt"), "one\n").unwrap();
    let first = open(r);
    let c = call("write_file", Some("w1"));
    // The worker dies right after the commit (the body's panic stands for it).
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let known = vec![Known {
            path: b"a.txt".to_vec(),
            old: None,
            new: Arc::new(b"two\n".to_vec()),
            new_hash: None,
        }];
        let _ = first.around(
            &[b"a.txt".to_vec()],
            known,
            c.clone(),
            true,
            true,
            |_, _| -> Result<()> {
                std::fs::write(r.join("a.txt"), "two\n").unwrap();
                panic!("the worker dies");
            },
        );
    }));
    assert!(died.is_err());
    assert_eq!(std::fs::read_dir(&calls_dir).unwrap().count(), 1);
    drop(first);
    // The retry writes the same bytes: its checkpoint holds the first attempt's before state.
    let again = open(r);
    let cp = fused(&again, r, None, "two\n", c, true).unwrap();
    // Its record gone, and `calls/` with it (the last one).
    assert!(!calls_dir.exists());
    assert_eq!(
        again.diff(&cp.id).unwrap()[0].1,
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two"
    );
    // Written before the call returned: another store finds it at once.
    let other = coord::Coord::open(&r.join(STORE_DIR)).unwrap();
    assert!(other.try_enter().is_some());
    other.leave();
    assert_eq!(open(r).list(None), vec![cp]);
}

/// A file tool's record leaves the index on disk behind it (a cache), and a process killed then
/// (no drop: nothing more written) leaves it so. The next store's load puts the recorded
/// after-states in (`replay`): a look finds nothing new, so nothing recorded is counted again as
/// a change, which a process taking over a background job would attribute to the job. What
/// changed after the record is still found.
#[test]
fn a_killed_processs_recorded_edits_are_not_found_again() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a.txt"), "one\n").unwrap();
    std::fs::write(r.join("b.txt"), "bee\n").unwrap();
    let store = open(r);
    let h = store.snapshot().unwrap();
    store.release(h).unwrap(); // the index on disk: the tree as it was
    for (old, new) in [("one\n", "two\n"), ("two\n", "three\n")] {
        fused(&store, r, Some(old), new, call("edit_file", None), false).unwrap();
    }
    store.objects.flush().unwrap();
    std::mem::forget(store); // as a SIGKILL: no drop, so no index written
    std::fs::write(r.join("b.txt"), "changed\n").unwrap();
    let next = open(r);
    let look = next.snapshot().unwrap();
    let job = call("start_command", Some("job"));
    let listing = next.attribute_found(look, &job).unwrap().unwrap();
    assert_eq!(listing.paths, vec![b"b.txt".to_vec()]);
    next.release(look).unwrap();
    let ids: Vec<String> = next.list(None).into_iter().map(|l| l.id).collect();
    assert_eq!(ids, ["cp-000001", "cp-000002", "cp-000003"]);
}

/// A dead command's record in `calls/` is adopted by the reload that takes the lock, with a walk
/// of the tree: a file tool's inline call (on the caller's event loop) declines while one is
/// there, and so it does while a background job is followed; the call made off the loop (with
/// `wait`) adopts it, and inline calls go on from then.
#[test]
fn an_inline_call_leaves_a_dead_commands_adoption_and_a_followed_job_to_a_waiting_one() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a.txt"), "one\n").unwrap();
    let dying = open(r);
    let command = call("run_command", Some("dead"));
    let _handle = dying.snapshot_call(For::Adoptable(&command)).unwrap();
    std::fs::write(r.join("made.txt"), "by the command\n").unwrap();
    drop(dying); // as if SIGKILLed mid-command: its record stays, its lock goes with it
    let next = open(r);
    let edit = |old, new, wait| {
        fused_waiting(
            &next,
            r,
            Some(old),
            new,
            call("edit_file", None),
            false,
            wait,
        )
    };
    assert_eq!(edit("one\n", "two\n", false), None); // declined: nothing done
    assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "one\n");
    let listing = edit("one\n", "two\n", true).unwrap().unwrap();
    let ids: Vec<(String, String)> = next
        .list(None)
        .into_iter()
        .map(|l| (l.id, l.tool_name))
        .collect();
    assert_eq!(
        ids,
        [
            ("cp-000001".to_string(), "run_command".to_string()),
            ("cp-000002".to_string(), "edit_file".to_string())
        ]
    );
    assert_eq!(listing.id, "cp-000002");
    assert!(edit("two\n", "three\n", false).unwrap().is_some()); // inline again
    let job = super::jobs::JobRecord {
        call: call("start_command", Some("job")),
        directory: "/nowhere".into(),
        checkpoint_id: None,
    };
    next.jobs.follow(job.clone()).unwrap();
    assert_eq!(edit("three\n", "four\n", false), None);
    next.jobs.unfollow(&job.call);
    assert!(edit("three\n", "four\n", false).unwrap().is_some());
}
