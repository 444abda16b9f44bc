//! Names a walk can build from the walked path alone: below a walk root at or below `cwd`,
//! with no access pattern to check, an entry reached through real directories is shown as
//! the root's name, `/` and its path below the root, so a big walk collects paths
//! ([`super::Collected::push_named`]) and builds no line per entry.

use std::path::Path;

use crate::fs::root::path::strip_base;
use crate::fs::FileSystem;

impl FileSystem {
    /// The prefix every real entry below the walk root `root` (resolved: absolute,
    /// normalized, its written name its real one) is shown with: `root`'s name relative to
    /// `cwd` and `/`, or empty for `cwd` itself; `None` when an access pattern applies, or
    /// `root` is outside the root directory, above `cwd` or named in non-UTF-8.
    ///
    /// What [`FileSystem::walk_target`] and [`crate::fs::root::path::Root::rel_to_cwd`] give such
    /// an entry: containment holds below a contained root, and every path is readable.
    pub(crate) fn plain_prefix(&self, root: &Path) -> Option<String> {
        if !self.access.is_unrestricted() {
            return None;
        }
        strip_base(root, self.root.real_root())?;
        let below = strip_base(root, self.root.cwd())?.to_str()?;
        Some(if below.is_empty() {
            String::new()
        } else {
            format!("{below}/")
        })
    }
}

/// What the parallel walks' tests compare in: a tree, and the FileSystems over it.
#[cfg(test)]
pub(crate) mod tests {
    use crate::fs::tests::{limits, protected};
    use crate::fs::{Contract, FileSystem};
    use std::ffi::OsStr;
    use std::fs;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::symlink;

    /// A tree with hidden entries, an ignore file, symlinks in and out, a denied file, a
    /// non-UTF-8 name and enough files that a parallel walk has several directories to
    /// share out.
    pub(crate) fn tree() -> tempfile::TempDir {
        let files = [
            "a/m.py",
            "a-b/n.py",
            "a/.h/x/z.py",
            "a/.hid.py",
            ".top/t.py",
            "s.pem",
        ];
        let dir = crate::testing::tree(&files.map(|f| (f, "x")));
        let r = dir.path();
        fs::create_dir_all(r.join("a/b")).unwrap();
        fs::create_dir_all(r.join("c")).unwrap();
        for i in 0..40 {
            fs::write(r.join(format!("a/b/f{i:02}.py")), "x").unwrap();
            fs::write(r.join(format!("c/g{i:02}.txt")), "x").unwrap();
        }
        fs::write(r.join(OsStr::from_bytes(b"c/bad\xff.txt")), "x").unwrap();
        fs::write(r.join("c/.ignore"), "g1*.txt\n").unwrap();
        symlink("a", r.join("la")).unwrap();
        symlink("/etc", r.join("out")).unwrap();
        symlink("nowhere", r.join("dangle.py")).unwrap();
        symlink("s.pem", r.join("key.py")).unwrap();
        dir
    }

    /// Calls `check(fs, path, label)` for FileSystems over `root` (both contracts, each cap
    /// in `caps`, no access pattern, a denied and an allowed one, `report_skipped`) walking
    /// `path` from a `cwd` at, above and below it, so lines are built from walked paths in
    /// some and entry by entry in others.
    pub(crate) fn each_layout(
        root: &str,
        caps: &[usize],
        mut check: impl FnMut(&FileSystem, &str, &str),
    ) {
        let denied = ["**/f1?.py".to_string()];
        let allowed = ["a/**".to_string(), "c/**".to_string()];
        let places = [
            (None, "."),
            (None, "a"),
            (Some("a"), "."),
            (Some("a/b"), ".."),
            (None, "la"),
            (Some("a"), "../la"),
        ];
        for (cwd, path) in places {
            let cwd = cwd.map(|c| format!("{root}/{c}"));
            for (allowed, denied) in [
                (&[][..], &[][..]),
                (&[][..], &denied[..]),
                (&allowed[..], &[][..]),
            ] {
                for contract in [Contract::Document, Contract::Workspace] {
                    for &max in caps {
                        let mut limits = limits();
                        limits.max_find_results = max;
                        limits.contract = contract;
                        let mut f = FileSystem::new(
                            root,
                            cwd.as_deref(),
                            allowed,
                            denied,
                            &protected(),
                            limits,
                        )
                        .unwrap();
                        f.disclosure.report_skipped = true;
                        let label =
                            format!("{cwd:?} {path} {allowed:?} {denied:?} {contract:?} cap {max}");
                        check(&f, path, &label);
                    }
                }
            }
        }
    }

    /// An outcome as the tests compare it: text, count and cap marker, or the error text.
    pub(crate) fn show(outcome: crate::error::Result<crate::fs::Outcome>) -> String {
        match outcome {
            Ok(o) => format!("{}|{}|{}", o.text, o.count, o.truncated),
            Err(e) => e.message,
        }
    }
}
