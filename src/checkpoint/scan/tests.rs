//! The walk: its order, what it leaves out, what it refuses to follow, and the names it takes
//! again from an earlier walk (only where nothing can have changed them).

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use super::*;
use crate::fs::root::path::Root;

fn paths(s: &Scanned) -> Vec<String> {
    s.iter()
        .map(|(p, _)| String::from_utf8_lossy(p).into_owned())
        .collect()
}

fn all(s: &Scanned) -> Vec<(Vec<u8>, Meta)> {
    s.iter().map(|(p, m)| (p.to_vec(), *m)).collect()
}

/// Every path below `dir`, relative to `root`, as bytes, by a plain recursive walk.
fn listed_by_std(root: &Path, dir: &Path, out: &mut Vec<Vec<u8>>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        out.push(
            p.strip_prefix(root)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec(),
        );
        if e.file_type().unwrap().is_dir() {
            listed_by_std(root, &p, out);
        }
    }
}

/// Waits out the racy window, so what was made before counts as settled.
fn settle() {
    std::thread::sleep(Duration::from_nanos(RACY_NS as u64 + 10_000_000));
}

fn open(r: &Path) -> (Root, Beneath) {
    let root = Root::new(r.to_str().unwrap(), None).unwrap();
    let beneath = root.open_root().unwrap();
    (root, beneath)
}

fn root_fd(beneath: &Beneath) -> OwnedFd {
    beneath
        .open(Path::new(""), libc::O_RDONLY | libc::O_DIRECTORY, 0)
        .unwrap()
}

#[test]
fn walks_sorted_and_skips_state_excludes_and_fifos() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::create_dir_all(r.join("a/b")).unwrap();
    std::fs::create_dir_all(r.join(".git/objects")).unwrap();
    std::fs::create_dir_all(r.join(".pydantic-ai-harness/checkpoints")).unwrap();
    std::fs::write(r.join("a/b/c.txt"), "c").unwrap();
    std::fs::write(r.join(".env"), "e").unwrap();
    std::fs::write(r.join("x.pyc"), "x").unwrap();
    std::os::unix::fs::symlink("/etc", r.join("link")).unwrap();
    nix::unistd::mkfifo(&r.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (_root, beneath) = open(r);
    let ex = Excludes::new(&[".git/".into(), "*.pyc".into()]).unwrap();
    assert!(ex.excludes_path(b"a/.git/config"));
    assert!(ex.excludes_path(b".pydantic-ai-harness/x"));
    assert!(ex.excludes_path(b"a/x.pyc"));
    assert!(!ex.excludes_path(b"a/.gitignore"));
    assert!(
        !ex.excludes(b".git", false),
        "a file named .git is not the directory"
    );
    let named = Excludes::new(&["build".into(), "/top/".into()]).unwrap();
    assert!(named.excludes(b"x/build", false) && named.excludes(b"build", true));
    assert!(named.excludes(b"top", true) && !named.excludes(b"x/top", true));
    for threads in [1, 3] {
        let s = scan(&beneath, b"", &ex, threads).unwrap();
        assert_eq!(paths(&s), [".env", "a", "a/b", "a/b/c.txt", "link"]);
        assert_eq!(s.get(4).unwrap().1.kind, Kind::Symlink);
    }
    let s = scan(&beneath, b"a", &ex, 2).unwrap();
    assert_eq!(paths(&s), ["a/b", "a/b/c.txt"]);
    let s = scan(&beneath, b".pydantic-ai-harness", &ex, 2).unwrap();
    assert!(s.is_empty(), "{:?}", paths(&s));
}

/// Paths come in byte order, whole paths compared: `a`, `a!`, `a-b`, `a.txt`, `a/x`, `a0`
/// (`!`, `-` and `.` sort before `/`, `0` after), at every depth, on any number of threads.
#[test]
fn paths_come_in_byte_order() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let names: [&[u8]; 9] = [
        b"a",
        b"a!",
        b"a-b",
        b"a.txt",
        b"a0",
        b"A",
        b"~",
        b"\xc3\xa9",
        b"\xff",
    ];
    for top in names {
        let top = std::ffi::OsStr::from_bytes(top);
        for (i, mid) in names.iter().enumerate() {
            let mid = std::ffi::OsStr::from_bytes(mid);
            if i % 2 == 0 {
                std::fs::create_dir_all(r.join(top).join(mid)).unwrap();
                std::fs::write(r.join(top).join(mid).join("f"), "").unwrap();
                std::fs::write(r.join(top).join(mid).join("f.x"), "").unwrap();
            } else if r.join(top).is_dir() || std::fs::create_dir(r.join(top)).is_ok() {
                std::fs::write(r.join(top).join(mid), "").unwrap();
            }
        }
    }
    let mut want = Vec::new();
    listed_by_std(r, r, &mut want);
    want.sort();
    let (_root, beneath) = open(r);
    let ex = Excludes::new(&[]).unwrap();
    for threads in [1, 2, 5] {
        let s = scan(&beneath, b"", &ex, threads).unwrap();
        let got: Vec<Vec<u8>> = s.iter().map(|(p, _)| p.to_vec()).collect();
        assert_eq!(got, want);
    }
    let s = scan(&beneath, b"a", &ex, 2).unwrap();
    let below_a: Vec<&Vec<u8>> = want.iter().filter(|p| p.starts_with(b"a/")).collect();
    let got: Vec<Vec<u8>> = s.iter().map(|(p, _)| p.to_vec()).collect();
    assert_eq!(got.iter().collect::<Vec<_>>(), below_a);
}

/// A directory listed as a directory and swapped for a symlink before it is opened is passed
/// over: its parent's descriptor opens it with `O_NOFOLLOW`, so the link's target (outside
/// the root) is never listed.
#[test]
fn a_directory_swapped_for_a_symlink_is_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::create_dir(r.join("d")).unwrap();
    let (_root, beneath) = open(r);
    let ex = Excludes::new(&[]).unwrap();
    let parent = root_fd(&beneath);
    let name = std::ffi::CString::new("d").unwrap();
    assert!(dir::open_child(&parent, &name).is_ok());
    // The swap, after the parent's listing saw a directory.
    std::fs::remove_dir(r.join("d")).unwrap();
    std::os::unix::fs::symlink(outside.path(), r.join("d")).unwrap();
    assert!(dir::open_child(&parent, &name).is_err());
    let walk = Walk {
        beneath: &beneath,
        excludes: &ex,
        prev: None,
        since: 0,
        next_id: AtomicU32::new(1),
    };
    let job = Job {
        id: 1,
        rel: b"d".to_vec(),
        parent: Some((Arc::new(parent), 0, false)),
        old: None,
    };
    let (mut more, mut scratch, mut read) = (Vec::new(), Vec::new(), 0);
    assert!(walk.list(job, &mut more, &mut scratch, &mut read).is_none());
    assert!(more.is_empty());
    // The whole walk records the symlink and nothing below it.
    let s = scan(&beneath, b"", &ex, 2).unwrap();
    assert_eq!(paths(&s), ["d"]);
    assert_eq!(s.get(0).unwrap().1.kind, Kind::Symlink);
}

/// Patterns with a path are matched against the whole root-relative path, at any depth;
/// nothing below an excluded directory is walked.
#[test]
fn excluded_directories_are_not_entered() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    for d in ["a/skip/in", "b/skip", "b/gen/x", "gen", "node_modules/m"] {
        std::fs::create_dir_all(r.join(d)).unwrap();
    }
    for f in [
        "a/skip/in/f",
        "b/skip/f",
        "b/gen/x/f",
        "gen/f",
        "node_modules/m/f",
        "b/f.log",
        "f.log",
    ] {
        std::fs::write(r.join(f), "").unwrap();
    }
    let (_root, beneath) = open(r);
    let ex = Excludes::new(&[
        "a/skip/".into(),
        "**/gen/".into(),
        "node_modules/".into(),
        "/f.log".into(),
    ])
    .unwrap();
    let s = scan(&beneath, b"", &ex, 2).unwrap();
    assert_eq!(paths(&s), ["a", "b", "b/f.log", "b/skip", "b/skip/f"]);
}

/// The kernel's pseudo file systems are not listed: a root on one lists nothing, and a
/// directory where one is mounted (the device changes) is recorded with nothing below it.
#[test]
fn pseudo_file_systems_are_not_listed() {
    let ex = Excludes::new(&[]).unwrap();
    let (_root, beneath) = open(Path::new("/proc"));
    assert!(scan(&beneath, b"", &ex, 2).unwrap().is_empty());
    // Where the machine has one: a directory holding pseudo file system mounts (cgroup v1's
    // tmpfs at /sys/fs/cgroup).
    let cgroup = Path::new("/sys/fs/cgroup");
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let below: Vec<&str> = mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let rest = f.get(1)?.strip_prefix("/sys/fs/cgroup/")?;
            (!rest.contains('/') && matches!(*f.get(2)?, "cgroup" | "cgroup2")).then_some(rest)
        })
        .collect();
    if !mounts.contains(" /sys/fs/cgroup tmpfs ") || below.is_empty() {
        eprintln!("no tmpfs at /sys/fs/cgroup with cgroup mounts below: part skipped");
        return;
    }
    let (_root, beneath) = open(cgroup);
    let s = scan(&beneath, b"", &ex, 2).unwrap();
    for name in below {
        assert!(paths(&s).iter().any(|p| p == name), "{name} missing");
        let prefix = format!("{name}/");
        assert!(
            !paths(&s).iter().any(|p| p.starts_with(&prefix)),
            "{name} was listed"
        );
    }
}

/// A tree made of settled directories: `d0` .. `d5`, each with two files.
fn settled_tree(r: &Path) {
    for d in 0..6 {
        std::fs::create_dir_all(r.join(format!("d{d}/sub"))).unwrap();
        std::fs::write(r.join(format!("d{d}/f")), "one").unwrap();
        std::fs::write(r.join(format!("d{d}/sub/g")), "one").unwrap();
    }
    settle();
}

/// A second walk takes the names of the directories nothing changed from the first and reads
/// the others again; it finds what a walk from scratch finds, whatever changed: a file's
/// content (its directory untouched), a created, removed or renamed entry, a directory swapped
/// for another, and a creation whose directory's modification time was put back (its change
/// time tells).
#[test]
fn rescan_takes_unchanged_names_and_sees_every_change() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    settled_tree(r);
    let (_root, beneath) = open(r);
    let ex = Excludes::new(&[]).unwrap();
    let tracks = dir::times_track_entries(&root_fd(&beneath));
    let first = scan(&beneath, b"", &ex, 2).unwrap();
    assert_eq!(first.names_read(), 13);
    let again = rescan(&beneath, b"", &ex, 2, Some(&first)).unwrap();
    assert_eq!(all(&again), all(&first));
    if tracks {
        assert_eq!(
            again.names_read(),
            0,
            "nothing changed: every listing taken again"
        );
    }

    std::fs::write(r.join("d0/f"), "two, longer").unwrap();
    std::fs::write(r.join("d1/sub/new"), "n").unwrap();
    std::fs::remove_file(r.join("d2/f")).unwrap();
    std::fs::rename(r.join("d3/f"), r.join("d3/h")).unwrap();
    std::fs::create_dir_all(r.join("swap/sub")).unwrap();
    std::fs::write(r.join("swap/sub/other"), "o").unwrap();
    std::fs::rename(r.join("d4"), r.join("gone")).unwrap();
    std::fs::rename(r.join("swap"), r.join("d4")).unwrap();
    let d5 = std::fs::File::open(r.join("d5")).unwrap();
    let mtime = d5.metadata().unwrap().modified().unwrap();
    std::fs::write(r.join("d5/hidden"), "h").unwrap();
    d5.set_times(std::fs::FileTimes::new().set_modified(mtime))
        .unwrap();
    assert_eq!(d5.metadata().unwrap().modified().unwrap(), mtime);

    let fresh = scan(&beneath, b"", &ex, 2).unwrap();
    for prev in [&first, &again] {
        let s = rescan(&beneath, b"", &ex, 2, Some(prev)).unwrap();
        assert_eq!(all(&s), all(&fresh));
        assert!(paths(&s).contains(&"d5/hidden".to_string()));
        assert!(paths(&s).contains(&"d4/sub/other".to_string()));
        assert!(!paths(&s).contains(&"d4/f".to_string()));
        if tracks {
            // Read again: the root (d4, gone), d1/sub, d2, d3, d4 (another) and d4/sub, d5,
            // and gone and gone/sub (no walk listed them there).
            assert_eq!(s.names_read(), 9, "{:?}", paths(&s));
        }
    }
    // A directory differs by its mode only: d4, another directory, does not.
    let changed = fresh.differs_from(&first, i64::MAX);
    let changed: Vec<String> = changed
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    assert_eq!(
        changed,
        [
            "d0/f",
            "d1/sub/new",
            "d2/f",
            "d3/f",
            "d3/h",
            "d4/f",
            "d4/sub/g",
            "d4/sub/other",
            "d5/hidden",
            "gone",
            "gone/f",
            "gone/sub",
            "gone/sub/g"
        ]
    );
}

/// Directories changed within the racy window before a walk are read again by the next one,
/// whatever their metadata: a change in the same clock tick would leave it as it was.
#[test]
fn racy_directories_are_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    settled_tree(r);
    std::fs::write(r.join("d0/sub/late"), "l").unwrap();
    let (_root, beneath) = open(r);
    let ex = Excludes::new(&[]).unwrap();
    let first = scan(&beneath, b"", &ex, 1).unwrap();
    let again = rescan(&beneath, b"", &ex, 1, Some(&first)).unwrap();
    assert_eq!(all(&again), all(&first));
    if dir::times_track_entries(&root_fd(&beneath)) {
        assert_eq!(again.names_read(), 1, "d0/sub only");
    }
    // Beneath another directory, an earlier walk is not used.
    let below = rescan(&beneath, b"d0", &ex, 1, Some(&first)).unwrap();
    assert_eq!(below.names_read(), 2);
    assert_eq!(paths(&below), ["d0/f", "d0/sub", "d0/sub/g", "d0/sub/late"]);
}

/// End to end on a store: a shell command's record (whose walk takes the unchanged
/// directories' names from the snapshot's) and the next snapshot (from that record's) see a
/// content change in an untouched directory and a creation.
#[test]
fn a_store_sees_changes_in_settled_directories() {
    use crate::checkpoint::{CallInfo, CheckpointStore, Settings};
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    settled_tree(r);
    let store = CheckpointStore::open(r.to_str().unwrap(), Settings::default()).unwrap();
    let call = || CallInfo {
        tool_name: "run_command".into(),
        ..CallInfo::default()
    };
    let h = store.snapshot().unwrap();
    assert!(store.record(h, call()).unwrap().is_none());
    settle();
    for (i, d) in ["d0", "d1", "d2"].iter().enumerate() {
        let h = store.snapshot().unwrap();
        std::fs::write(r.join(format!("{d}/sub/g")), format!("changed {i}")).unwrap();
        std::fs::write(r.join(format!("{d}/new")), "n").unwrap();
        let cp = store.record(h, call()).unwrap().unwrap();
        let got: Vec<String> = cp
            .paths
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        assert_eq!(got, [format!("{d}/new"), format!("{d}/sub/g")]);
        settle();
    }
}

/// Read syscalls this thread made so far (`/proc/thread-self/io`); `None` without task I/O
/// accounting.
fn reads_so_far() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/io").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("syscr:"))?
        .trim()
        .parse()
        .ok()
}

/// The walkers' thread count is found once per process: asking again reads nothing (the
/// standard library's count reads `/proc/self/cgroup` and the cgroup's CPU quota each time).
#[test]
fn the_thread_count_is_found_once() {
    let n = threads();
    let (Some(a), Some(b)) = (reads_so_far(), reads_so_far()) else {
        return; // no task I/O accounting here
    };
    let per_look = b - a;
    let before = reads_so_far().unwrap();
    for _ in 0..10 {
        assert_eq!(threads(), n);
    }
    assert_eq!(reads_so_far().unwrap() - before, per_look);
}
