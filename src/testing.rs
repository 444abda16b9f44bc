//! Fixtures the unit tests share: directory trees written from tables, so each test states the
//! tree it needs in one literal.

use std::path::Path;

/// A temporary directory holding `entries`: `(path, content)` pairs relative to it, parents
/// created; a path ending in `/` is a directory (its content ignored).
pub(crate) fn tree(entries: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path(), entries);
    dir
}

/// Writes `entries` below `root` as [`tree`] does.
pub(crate) fn write_tree(root: &Path, entries: &[(&str, &str)]) {
    for (path, content) in entries {
        let full = root.join(path);
        if path.ends_with('/') {
            std::fs::create_dir_all(&full).unwrap();
        } else {
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, content).unwrap();
        }
    }
}

/// The tree containment tests walk: `d/sub/`, `a.txt` and links of every kind (out of the root,
/// a loop, relative and absolute in-root links, a dangling one).
pub(crate) fn link_tree() -> tempfile::TempDir {
    use std::os::unix::fs::symlink;
    let dir = tree(&[("d/sub/", ""), ("a.txt", "x\ny\n")]);
    let r = dir.path();
    symlink("/etc/passwd", r.join("out")).unwrap();
    symlink("loop", r.join("loop")).unwrap();
    symlink("a.txt", r.join("lnk")).unwrap();
    symlink(r.join("a.txt"), r.join("abslnk")).unwrap();
    symlink("nothere", r.join("dangle")).unwrap();
    dir
}
