//! The store end to end on temp trees: a file tool's keep/record, a shell command's
//! snapshot/record, rewinds (bytes, modes, creations, deletions, symlinks), conflicts,
//! restarts, the size limit, pruning and a background job's extension.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::*;

fn open(root: &Path, settings: Settings) -> CheckpointStore {
    CheckpointStore::open(root.to_str().unwrap(), settings).unwrap()
}

fn call(name: &str) -> CallInfo {
    CallInfo {
        run_id: Some("run".into()),
        tool_call_id: Some(format!("{name}-call")),
        tool_name: name.into(),
        created_at: 1.0,
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn strs(ps: &[Vec<u8>]) -> Vec<String> {
    ps.iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

/// Rewinds to `to`, committing the plan as made.
fn rewind(store: &CheckpointStore, to: &str, force: bool) -> Result<rewind::Rewound> {
    let plan = store.plan_rewind(to, None)?;
    let pinned: Vec<_> = plan
        .files
        .iter()
        .map(|f| (f.path.clone(), f.old_hash.clone()))
        .collect();
    store.commit_rewind(to, None, &pinned, force)
}

#[test]
fn a_file_tools_changes_are_rewound() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a.txt"), "one\n").unwrap();
    std::fs::set_permissions(r.join("a.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
    let store = open(r, Settings::default());
    // edit_file on a.txt
    let h = store.keep(&[b"a.txt".to_vec()]).unwrap();
    std::fs::write(r.join("a.txt"), "two\n").unwrap();
    let cp1 = store.record(h, call("edit_file")).unwrap().unwrap();
    assert_eq!(cp1.id, "cp-000001");
    assert_eq!(strs(&cp1.paths), ["a.txt"]);
    assert_eq!(cp1.bytes_kept, 4);
    // write_file of new/deep/b.txt creates two directories
    let h = store.keep(&[b"new/deep/b.txt".to_vec()]).unwrap();
    std::fs::create_dir_all(r.join("new/deep")).unwrap();
    std::fs::write(r.join("new/deep/b.txt"), "b").unwrap();
    let cp2 = store.record(h, call("write_file")).unwrap().unwrap();
    assert_eq!(strs(&cp2.paths), ["new", "new/deep", "new/deep/b.txt"]);
    // A call that changes nothing records nothing.
    let h = store.keep(&[b"a.txt".to_vec()]).unwrap();
    assert_eq!(store.record(h, call("edit_file")).unwrap(), None);
    let diff = store.diff("cp-000001").unwrap();
    assert_eq!(diff.len(), 1);
    assert!(
        diff[0].1.ends_with("@@ -1 +1 @@\n-one\n+two"),
        "{}",
        diff[0].1
    );
    assert_eq!(
        store.diff("cp-000002").unwrap()[2].1,
        "created file (1 bytes)"
    );

    let plan = store.plan_rewind("cp-000001", None).unwrap();
    let actions: Vec<(String, &str)> = plan
        .files
        .iter()
        .map(|f| {
            (
                String::from_utf8_lossy(&f.path).into_owned(),
                f.action.as_str(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("a.txt".into(), "restore"),
            ("new".into(), "rmdir"),
            ("new/deep".into(), "rmdir"),
            ("new/deep/b.txt".into(), "delete")
        ]
    );
    assert!(plan.conflicts.is_empty());
    let done = rewind(&store, "cp-000001", false).unwrap();
    assert_eq!(strs(&done.restored), ["a.txt"]);
    assert_eq!(strs(&done.deleted), ["new/deep/b.txt"]);
    assert_eq!(strs(&done.removed_dirs), ["new", "new/deep"]);
    assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "one\n");
    assert_eq!(mode(&r.join("a.txt")), 0o640);
    assert!(!r.join("new").exists());
    assert!(store.list(None).is_empty());
    // No temporary file is left anywhere.
    let left: Vec<_> = std::fs::read_dir(r)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}"); // a.txt and the state directory
}

#[test]
fn a_shell_commands_changes_are_rewound() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::create_dir_all(r.join("src/pkg")).unwrap();
    std::fs::create_dir_all(r.join(".git")).unwrap();
    std::fs::write(r.join(".git/HEAD"), "ref").unwrap();
    std::fs::write(r.join("src/main.py"), "print(1)\n").unwrap();
    std::fs::write(r.join("src/pkg/mod.py"), "x = 1\n").unwrap();
    std::fs::write(r.join("run.sh"), "echo\n").unwrap();
    std::fs::write(r.join("bin.dat"), [0u8, 1, 2]).unwrap();
    std::os::unix::fs::symlink("src/main.py", r.join("link")).unwrap();
    let store = open(r, Settings::default());
    let h = store.snapshot().unwrap();
    // sed -i, rm -rf, chmod +x, a new tree, a symlink replaced by a file, git's own files
    std::fs::write(r.join("src/main.py"), "print(2)\n").unwrap();
    std::fs::remove_dir_all(r.join("src/pkg")).unwrap();
    std::fs::set_permissions(r.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(r.join("gen/a")).unwrap();
    for i in 0..100 {
        std::fs::write(r.join(format!("gen/a/{i}.txt")), format!("{i}")).unwrap();
    }
    std::fs::remove_file(r.join("link")).unwrap();
    std::fs::write(r.join("link"), "now a file").unwrap();
    std::fs::write(r.join("bin.dat"), [9u8, 0, 9]).unwrap();
    std::fs::write(r.join(".git/HEAD"), "other").unwrap();
    let cp = store.record(h, call("run_command")).unwrap().unwrap();
    let paths = strs(&cp.paths);
    assert_eq!(paths.len(), 2 + 100 + 6, "{paths:?}");
    assert!(!paths
        .iter()
        .any(|p| p.starts_with(".git") || p.starts_with(".pydantic")));
    let diff: BTreeMap<String, String> = store
        .diff(&cp.id)
        .unwrap()
        .into_iter()
        .map(|(p, d)| (String::from_utf8_lossy(&p).into_owned(), d))
        .collect();
    assert_eq!(diff["run.sh"], "mode 644 -> 755");
    assert_eq!(diff["link"], "symlink -> src/main.py -> file (10 bytes)");
    assert_eq!(diff["bin.dat"], "binary: content changed");
    assert_eq!(diff["src/pkg"], "deleted directory");

    let done = rewind(&store, &cp.id, false).unwrap();
    assert!(done.failed.is_empty());
    assert_eq!(
        std::fs::read_to_string(r.join("src/main.py")).unwrap(),
        "print(1)\n"
    );
    assert_eq!(
        std::fs::read_to_string(r.join("src/pkg/mod.py")).unwrap(),
        "x = 1\n"
    );
    assert_eq!(mode(&r.join("run.sh")), 0o644);
    assert!(!r.join("gen").exists());
    assert_eq!(
        std::fs::read_link(r.join("link")).unwrap(),
        Path::new("src/main.py")
    );
    assert_eq!(std::fs::read(r.join("bin.dat")).unwrap(), [0u8, 1, 2]);
    assert_eq!(
        std::fs::read_to_string(r.join(".git/HEAD")).unwrap(),
        "other"
    );
    // The next command starts from the rewound tree: nothing is a change.
    let h = store.snapshot().unwrap();
    assert_eq!(store.record(h, call("run_command")).unwrap(), None);
}

#[test]
fn someone_elses_change_is_a_conflict_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a.txt"), "one").unwrap();
    let store = open(r, Settings::default());
    let h = store.keep(&[b"a.txt".to_vec()]).unwrap();
    std::fs::write(r.join("a.txt"), "two").unwrap();
    store.record(h, call("write_file")).unwrap().unwrap();
    std::fs::write(r.join("a.txt"), "person").unwrap();
    let plan = store.plan_rewind("cp-000001", None).unwrap();
    assert_eq!(strs(&plan.conflicts), ["a.txt"]);
    let err = rewind(&store, "cp-000001", false).unwrap_err();
    assert_eq!(
        err.message,
        "Cannot rewind: changed since the checkpoint by someone else: a.txt. Rewind with force=True to overwrite them."
    );
    assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "person");
    // A change after the plan is a conflict too.
    let plan = store.plan_rewind("cp-000001", None).unwrap();
    let pinned: Vec<_> = plan
        .files
        .iter()
        .map(|f| (f.path.clone(), f.old_hash.clone()))
        .collect();
    std::fs::write(r.join("a.txt"), "later").unwrap();
    assert!(store
        .commit_rewind("cp-000001", None, &pinned, false)
        .is_err());
    rewind(&store, "cp-000001", true).unwrap();
    assert_eq!(std::fs::read_to_string(r.join("a.txt")).unwrap(), "one");
    assert_eq!(
        store.plan_rewind("cp-000001", None).unwrap_err().message,
        "No checkpoint cp-000001."
    );
}

#[test]
fn state_survives_a_restart_and_paths_rewind_alone() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a"), "a1").unwrap();
    std::fs::write(r.join("b"), "b1").unwrap();
    {
        let store = open(r, Settings::default());
        let h = store.snapshot().unwrap();
        std::fs::write(r.join("a"), "a2").unwrap();
        std::fs::write(r.join("b"), "b2").unwrap();
        store.record(h, call("shell")).unwrap().unwrap();
    }
    // A killed process's temporary files are cleared at open.
    // A temporary file a killed process left (its pid gone).
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let left = r.join(format!(".pydantic-ai-harness/checkpoints/tmp/{gone}-1"));
    std::fs::write(&left, "x").unwrap();
    std::fs::write(r.join(".pydantic-ai-harness/checkpoints/log.tmp"), "{").unwrap();
    let store = open(r, Settings::default());
    assert_eq!(store.list(Some("run")).len(), 1);
    assert!(store.list(Some("other")).is_empty());
    let plan = store
        .plan_rewind("cp-000001", Some(&[b"b".to_vec()]))
        .unwrap();
    let pinned: Vec<_> = plan
        .files
        .iter()
        .map(|f| (f.path.clone(), f.old_hash.clone()))
        .collect();
    store
        .commit_rewind("cp-000001", Some(&[b"b".to_vec()]), &pinned, false)
        .unwrap();
    assert_eq!(std::fs::read_to_string(r.join("a")).unwrap(), "a2");
    assert_eq!(std::fs::read_to_string(r.join("b")).unwrap(), "b1");
    assert_eq!(strs(&store.list(None)[0].paths), ["a"]);
    assert!(!left.exists());
    // Ids keep increasing after a restart.
    drop(store);
    let store = open(r, Settings::default());
    let h = store.keep(&[b"c".to_vec()]).unwrap();
    std::fs::write(r.join("c"), "c").unwrap();
    assert_eq!(
        store.record(h, call("write_file")).unwrap().unwrap().id,
        "cp-000002"
    );
}

#[test]
fn big_files_are_kept_by_hash_and_said_unrestorable() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("big"), "0123456789").unwrap();
    let store = open(
        r,
        Settings {
            max_file_bytes: 5,
            ..Settings::default()
        },
    );
    let h = store.snapshot().unwrap();
    std::fs::write(r.join("big"), "abcdefghij").unwrap();
    let cp = store.record(h, call("run_command")).unwrap().unwrap();
    assert_eq!(cp.bytes_kept, 0);
    assert_eq!(
        store.diff(&cp.id).unwrap()[0].1,
        "too big to keep: content changed"
    );
    let plan = store.plan_rewind(&cp.id, None).unwrap();
    assert_eq!(strs(&plan.unrestorable), ["big"]);
    assert!(plan.files.is_empty());
}

#[test]
fn the_oldest_checkpoints_are_pruned_to_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let store = open(
        r,
        Settings {
            budget_bytes: 3000,
            ..Settings::default()
        },
    );
    for i in 0..5u8 {
        let h = store.keep(&[b"f".to_vec()]).unwrap();
        std::fs::write(r.join("f"), vec![b'a' + i; 1000]).unwrap();
        store.record(h, call("write_file")).unwrap().unwrap();
    }
    assert!(store.store_bytes() <= 3000, "{}", store.store_bytes());
    // Reopened, the store counts the same bytes (sizes from the index and the log, an orphan
    // object left by a kill stat'ed).
    let bytes = store.store_bytes();
    drop(store);
    let orphan = r.join(".pydantic-ai-harness/checkpoints/objects/00/orphan");
    std::fs::write(&orphan, [0u8; 10]).unwrap();
    let store = open(
        r,
        Settings {
            budget_bytes: 3000,
            ..Settings::default()
        },
    );
    assert_eq!(store.store_bytes(), bytes + 10);
    std::fs::remove_file(&orphan).unwrap();
    let store = open(
        r,
        Settings {
            budget_bytes: 3000,
            ..Settings::default()
        },
    );
    assert_eq!(store.store_bytes(), bytes);
    let ids: Vec<String> = store.list(None).into_iter().map(|l| l.id).collect();
    assert_eq!(ids, ["cp-000004", "cp-000005"]);
    assert_eq!(store.pruned(), ["cp-000001", "cp-000002", "cp-000003"]);
    assert_eq!(
        store.plan_rewind("cp-000002", None).unwrap_err().message,
        "Checkpoint cp-000002 was pruned to keep the checkpoint store within its budget_bytes (the oldest kept is cp-000004)."
    );
    rewind(&store, "cp-000004", false).unwrap();
    assert_eq!(std::fs::read(r.join("f")).unwrap(), vec![b'c'; 1000]);
}

#[test]
fn a_background_jobs_changes_extend_its_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a"), "a1").unwrap();
    let store = open(r, Settings::default());
    // start_command: records the start (it wrote `a`), the job keeps running
    let h = store.snapshot().unwrap();
    std::fs::write(r.join("a"), "a2").unwrap();
    let job = store.record(h, call("start_command")).unwrap().unwrap();
    // the job writes `b`; the next call's snapshot finds it and gives it to the job
    std::fs::write(r.join("b"), "b").unwrap();
    let h = store.snapshot().unwrap();
    let ext = store.extend(&job.id, h).unwrap().unwrap();
    assert_eq!(strs(&ext.paths), ["a", "b"]);
    // the next call itself changes nothing
    assert_eq!(store.record(h, call("run_command")).unwrap(), None);
    rewind(&store, &job.id, false).unwrap();
    assert_eq!(std::fs::read_to_string(r.join("a")).unwrap(), "a1");
    assert!(!r.join("b").exists());
}

#[test]
fn a_rewind_never_writes_through_a_symlinked_parent() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::create_dir(r.join("d")).unwrap();
    std::fs::write(r.join("d/f"), "old").unwrap();
    let store = open(r, Settings::default());
    let h = store.keep(&[b"d/f".to_vec()]).unwrap();
    std::fs::write(r.join("d/f"), "new").unwrap();
    store.record(h, call("write_file")).unwrap().unwrap();
    // someone swaps the directory for a symlink out of the root
    std::fs::rename(r.join("d"), outside.path().join("d")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("d"), r.join("d")).unwrap();
    let plan = store.plan_rewind("cp-000001", None).unwrap();
    assert_eq!(plan.files[0].action.as_str(), "create");
    assert_eq!(strs(&plan.conflicts), ["d/f"]);
    let done = rewind(&store, "cp-000001", true).unwrap();
    assert_eq!(strs(&done.failed), ["d/f"]);
    assert_eq!(
        std::fs::read_to_string(outside.path().join("d/f")).unwrap(),
        "new"
    );
    assert_eq!(store.list(None).len(), 1, "kept for another try");
}

#[test]
fn paths_are_normalized_and_checked() {
    assert_eq!(normalize(b"./a//b/").unwrap(), b"a/b");
    assert!(normalize(b"/etc/passwd").is_err());
    assert!(normalize(b"a/../../b").is_err());
}

#[test]
fn a_kill_after_a_file_tools_record_leaves_a_usable_store() {
    // A file tool's record writes the log, not the index (a cache): after a kill (no drop)
    // the older index only makes the next snapshot read the changed file again.
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a"), "one").unwrap();
    let store = open(r, Settings::default());
    let h = store.snapshot().unwrap();
    store.record(h, call("run_command")).unwrap();
    let h = store.keep(&[b"a".to_vec()]).unwrap();
    std::fs::write(r.join("a"), "two, longer").unwrap();
    store.record(h, call("write_file")).unwrap().unwrap();
    std::mem::forget(store); // killed: no drop
    let store = open(r, Settings::default());
    let h = store.snapshot().unwrap();
    assert_eq!(store.record(h, call("run_command")).unwrap(), None);
    rewind(&store, "cp-000001", false).unwrap();
    assert_eq!(std::fs::read_to_string(r.join("a")).unwrap(), "one");
}

#[test]
fn a_person_between_two_calls_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("a"), "one\n").unwrap();
    let store = open(r, Settings::default());
    let h = store.keep(&[b"a".to_vec()]).unwrap();
    std::fs::write(r.join("a"), "agent\n").unwrap();
    store.record(h, call("write_file")).unwrap().unwrap();
    std::fs::write(r.join("a"), "agent\nperson\n").unwrap();
    let h = store.keep(&[b"a".to_vec()]).unwrap();
    std::fs::write(r.join("a"), "agent again\n").unwrap();
    store.record(h, call("write_file")).unwrap().unwrap();
    // The current file is what the last call left, but the person's line came in between.
    let plan = store.plan_rewind("cp-000001", None).unwrap();
    assert_eq!(strs(&plan.conflicts), ["a"]);
    assert!(rewind(&store, "cp-000001", false)
        .unwrap_err()
        .message
        .contains("changed since the checkpoint by someone else: a."));
    assert_eq!(
        std::fs::read_to_string(r.join("a")).unwrap(),
        "agent again\n"
    );
    // The last call alone is no conflict; forced, the whole rewind goes through.
    assert!(store
        .plan_rewind("cp-000002", None)
        .unwrap()
        .conflicts
        .is_empty());
    rewind(&store, "cp-000001", true).unwrap();
    assert_eq!(std::fs::read_to_string(r.join("a")).unwrap(), "one\n");
}

#[test]
fn hard_linked_files_are_restored_in_place() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("h1"), "hard\n").unwrap();
    std::fs::hard_link(r.join("h1"), r.join("h2")).unwrap();
    let ino = std::fs::metadata(r.join("h1")).unwrap().ino();
    let store = open(r, Settings::default());
    // A file tool's in-place write (through one name).
    let h = store.keep(&[b"h1".to_vec()]).unwrap();
    std::fs::write(r.join("h1"), "agent, longer\n").unwrap();
    store.record(h, call("write_file")).unwrap().unwrap();
    // A shell command's append (both names change).
    let h = store.snapshot().unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(r.join("h1"))
        .unwrap();
    std::io::Write::write_all(&mut f, b"x\n").unwrap();
    drop(f);
    let cp = store.record(h, call("run_command")).unwrap().unwrap();
    assert_eq!(strs(&cp.paths), ["h1", "h2"]);
    rewind(&store, "cp-000002", false).unwrap();
    for name in ["h1", "h2"] {
        let meta = std::fs::metadata(r.join(name)).unwrap();
        assert_eq!((meta.ino(), meta.nlink()), (ino, 2));
        assert_eq!(
            std::fs::read_to_string(r.join(name)).unwrap(),
            "agent, longer\n"
        );
    }
    rewind(&store, "cp-000001", false).unwrap();
    for name in ["h1", "h2"] {
        let meta = std::fs::metadata(r.join(name)).unwrap();
        assert_eq!((meta.ino(), meta.nlink()), (ino, 2));
        assert_eq!(std::fs::read_to_string(r.join(name)).unwrap(), "hard\n");
    }
}

/// A job followed from look to look: each record keeps its walk as the next snapshot, so a
/// change made right after a record is the next one's; a change found by another call's
/// snapshot is counted against the job's checkpoint instead of taken into the baseline.
#[test]
fn a_jobs_looks_are_chained_and_a_snapshots_find_goes_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("log.txt"), "start\n").unwrap();
    let store = open(r, Settings::default());
    let job = call("start_command");
    let h = store.snapshot().unwrap();
    let (listing, h) = store.record_reopen(h, job.clone()).unwrap();
    assert_eq!(listing, None);
    std::fs::write(r.join("log.txt"), "start\njob\n").unwrap(); // right after the record
    let (listing, reopened) = store.record_reopen(h.unwrap(), job.clone()).unwrap();
    let listing = listing.unwrap();
    assert_eq!(strs(&listing.paths), ["log.txt"]);
    store.release(reopened.unwrap()).unwrap();
    // A change the next call's snapshot finds: the job's, added to its checkpoint.
    std::fs::write(r.join("out.txt"), "o").unwrap();
    let next = store.snapshot_call(For::Call).unwrap();
    let added = store.attribute_found(next, &job).unwrap().unwrap();
    assert_eq!(
        (added.id.as_str(), strs(&added.paths)),
        (
            listing.id.as_str(),
            vec!["log.txt".into(), "out.txt".into()]
        )
    );
    assert_eq!(store.record(next, call("run_command")).unwrap(), None);
    let rewound = store.rewind(&listing.id, None, false).unwrap().1;
    assert_eq!(
        (strs(&rewound.restored), strs(&rewound.deleted)),
        (vec!["log.txt".into()], vec!["out.txt".into()])
    );
    assert_eq!(
        std::fs::read_to_string(r.join("log.txt")).unwrap(),
        "start\n"
    );
    assert!(store.list(None).is_empty());
}

/// A job's change made after the last look at it and before a rewind's step: counted against
/// the job's call in that step (`rewind_with_job`), so the rewind undoes it instead of refusing
/// it as someone else's; without the job named, the same change is a conflict.
#[test]
fn a_rewind_counts_a_jobs_change_since_the_last_look_against_its_call() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("log.txt"), "start\n").unwrap();
    let store = open(r, Settings::default());
    let job = call("start_command");
    let h = store.snapshot_call(For::Call).unwrap();
    std::fs::write(r.join("log.txt"), "start\n1\n").unwrap();
    let started = store.record(h, job.clone()).unwrap().unwrap();
    // The last look at the job (a sweep's), then its change as the rewind starts.
    let look = store.snapshot().unwrap();
    assert!(store.extend(&started.id, look).unwrap().is_some());
    store.release(look).unwrap();
    std::fs::write(r.join("log.txt"), "start\n1\n2\n").unwrap();
    std::fs::write(r.join("new.txt"), "n").unwrap();
    let refused = store.rewind(&started.id, None, false).unwrap_err();
    assert!(
        refused.message.contains("someone else: log.txt"),
        "{}",
        refused.message
    );
    let (plan, done, counted) = store
        .rewind_with_job(&started.id, None, false, Some(&job.clone().into()))
        .unwrap();
    let counted = counted.unwrap();
    assert_eq!(
        (counted.id.as_str(), strs(&counted.paths)),
        (
            started.id.as_str(),
            vec!["log.txt".into(), "new.txt".into()]
        )
    );
    assert!(plan.conflicts.is_empty());
    assert_eq!(
        (strs(&done.restored), strs(&done.deleted)),
        (vec!["log.txt".into()], vec!["new.txt".into()])
    );
    assert_eq!(
        std::fs::read_to_string(r.join("log.txt")).unwrap(),
        "start\n"
    );
    assert!(store.list(None).is_empty());
}

/// A job's change in the moment between a rewind's look at the job and its plan (a job that
/// rewrites a file every few milliseconds) is counted against the job's call, not refused as
/// someone else's; a person's change from before the look (taken into the baseline) stays a
/// conflict.
#[test]
fn a_jobs_change_between_the_rewinds_look_and_its_plan_is_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::write(r.join("log.txt"), "start\n").unwrap();
    std::fs::write(r.join("other.txt"), "o\n").unwrap();
    let store = open(r, Settings::default());
    let job = call("start_command");
    let h = store.snapshot_call(For::Call).unwrap();
    std::fs::write(r.join("log.txt"), "start\n1\n").unwrap();
    std::fs::write(r.join("other.txt"), "o2\n").unwrap();
    let started = store.record(h, job.clone()).unwrap().unwrap();
    let job_look = rewinding::JobLook::from(job.clone());
    std::fs::write(r.join("other.txt"), "person\n").unwrap();
    let look = store.snapshot().unwrap(); // a plain look: the person's change is the baseline's
    store.release(look).unwrap();
    // The rewind's locked step, its look at the job done; then the job writes.
    let (beneath, hold, mut inner, paths, counted) =
        store.begin_rewind(None, Some(&job_look)).unwrap();
    assert!(counted.is_none());
    std::fs::write(r.join("log.txt"), "start\n1\n2\n").unwrap();
    let unsettled = rewind::plan(&inner, &beneath, &store.objects, &started.id, None).unwrap();
    assert_eq!(strs(&unsettled.conflicts), ["log.txt", "other.txt"]);
    let (plan, counted) = store
        .plan_with_job(
            &mut inner,
            &beneath,
            &started.id,
            paths,
            Some(&job_look),
            None,
        )
        .unwrap();
    assert_eq!(strs(&plan.conflicts), ["other.txt"]);
    let counted = counted.unwrap();
    assert_eq!(
        (counted.id.as_str(), strs(&counted.paths)),
        (
            started.id.as_str(),
            vec!["log.txt".into(), "other.txt".into()]
        )
    );
    drop(inner);
    drop(hold);
    let (_, done, _) = store
        .rewind_with_job(&started.id, None, true, Some(&job_look))
        .unwrap();
    assert_eq!(strs(&done.restored), ["log.txt", "other.txt"]);
    assert_eq!(
        std::fs::read_to_string(r.join("log.txt")).unwrap(),
        "start\n"
    );
}
