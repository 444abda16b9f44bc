//! The metadata walk of a snapshot: every file, directory and symlink beneath the root (or
//! beneath one directory of it), `lstat`ed on every core, returned sorted by path bytes.
//!
//! It skips what checkpoints never keep: the state directory `.pydantic-ai-harness/` at the
//! root, entries matching `exclude` (gitignore syntax: `.git/` is any directory named
//! `.git`), special files (FIFOs, sockets, devices) and directories on the kernel's pseudo
//! file systems (procfs, sysfs, ...), as the walkers do. Symlinks are recorded, never
//! followed; every directory is opened beneath the root with symlinks refused, so a
//! directory swapped for a symlink mid-walk is passed over, not followed out of the root.

use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::state::{lstat_at, Kind, Meta};
use crate::error::{Error, ErrorKind, Result};
use crate::fs::root::path::Beneath;
use crate::fs::root::pseudo::on_pseudo_fs;
use crate::fs::walk::list_fd;
use crate::fs::walk::pool::run_jobs;

/// The directory at the root that holds the harness's own state; never walked.
pub const STATE_DIR: &[u8] = b".pydantic-ai-harness";

/// A root-relative path (bytes, `/`-separated, no leading `./`) and its metadata.
pub type Scanned = Vec<(Vec<u8>, Meta)>;

/// What a walk leaves out: the `exclude` patterns, compiled once. Plain names (`.git/`,
/// `node_modules/`, `build`: no glob character, no inner `/`, not negated) are matched by
/// the entry's name alone; the others through a gitignore matcher.
pub struct Excludes {
    /// Names excluded as directories only (`name/`).
    dir_names: Vec<Vec<u8>>,
    /// Names excluded whatever the entry is.
    any_names: Vec<Vec<u8>>,
    /// The other patterns, if any.
    matcher: Option<Gitignore>,
}

/// A pattern's plain name and whether it names directories only, if it is that simple.
fn plain_name(p: &str) -> Option<(Vec<u8>, bool)> {
    let (name, dir_only) = match p.strip_suffix('/') {
        Some(n) => (n, true),
        None => (p, false),
    };
    let plain = !name.is_empty()
        && !name.starts_with('!')
        && !name.starts_with('#')
        && !name.contains(['/', '*', '?', '[', '\\', ' '])
        && name != "."
        && name != "..";
    plain.then(|| (name.as_bytes().to_vec(), dir_only))
}

impl Excludes {
    /// Compiles `patterns` (gitignore syntax, relative to the root).
    ///
    /// Errors: `ErrorKind::InvalidPattern` naming a pattern gitignore rejects.
    pub fn new(patterns: &[String]) -> Result<Excludes> {
        let mut dir_names = Vec::new();
        let mut any_names = Vec::new();
        let mut builder = GitignoreBuilder::new("");
        let mut others = 0;
        for p in patterns {
            if let Some((name, dir_only)) = plain_name(p) {
                if dir_only {
                    dir_names.push(name);
                } else {
                    any_names.push(name);
                }
                continue;
            }
            others += 1;
            builder.add_line(None, p).map_err(|_| {
                Error::new(
                    ErrorKind::InvalidPattern,
                    format!("Invalid exclude pattern: {p:?}"),
                )
            })?;
        }
        let matcher =
            if others == 0 {
                None
            } else {
                Some(builder.build().map_err(|_| {
                    Error::new(ErrorKind::InvalidPattern, "Invalid exclude patterns")
                })?)
            };
        Ok(Excludes {
            dir_names,
            any_names,
            matcher,
        })
    }

    /// Whether the walk leaves `rel` out (`is_dir`: it is a directory). Its parents are not
    /// looked at: the walk does not enter an excluded directory.
    pub fn excludes(&self, rel: &[u8], is_dir: bool) -> bool {
        if rel == STATE_DIR || rel.starts_with(b".pydantic-ai-harness/") {
            return true;
        }
        let name = match rel.iter().rposition(|&b| b == b'/') {
            Some(i) => &rel[i + 1..],
            None => rel,
        };
        if self.any_names.iter().any(|n| n == name)
            || (is_dir && self.dir_names.iter().any(|n| n == name))
        {
            return true;
        }
        match &self.matcher {
            None => false,
            Some(m) => m
                .matched(Path::new(std::ffi::OsStr::from_bytes(rel)), is_dir)
                .is_ignore(),
        }
    }

    /// Whether `rel` or one of its parents is excluded (a path a file tool names).
    pub fn excludes_path(&self, rel: &[u8]) -> bool {
        let mut end = 0;
        while let Some(i) = rel[end..].iter().position(|&b| b == b'/') {
            if self.excludes(&rel[..end + i], true) {
                return true;
            }
            end += i + 1;
        }
        self.excludes(rel, false)
    }
}

/// Joins a directory's path and an entry name.
pub fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir.is_empty() {
        name.to_vec()
    } else {
        let mut p = Vec::with_capacity(dir.len() + 1 + name.len());
        p.extend_from_slice(dir);
        p.push(b'/');
        p.extend_from_slice(name);
        p
    }
}

/// Walks beneath the directory `under` (root-relative; empty for the whole root), on
/// `threads` threads, and returns every entry below it (not `under` itself) sorted by path.
/// A directory that cannot be opened or listed is passed over (its entries unknown).
pub fn scan(
    beneath: &Beneath,
    under: &[u8],
    excludes: &Excludes,
    threads: usize,
) -> Result<Scanned> {
    let work = |found: &mut Scanned, dir: Vec<u8>, more: &mut Vec<Vec<u8>>| -> Result<()> {
        let Ok(fd) = beneath.open(
            Path::new(std::ffi::OsStr::from_bytes(&dir)),
            libc::O_RDONLY | libc::O_DIRECTORY,
            0,
        ) else {
            return Ok(());
        };
        if on_pseudo_fs(&fd) {
            return Ok(());
        }
        let Ok(listing) = fd.try_clone().and_then(list_fd) else {
            return Ok(());
        };
        for entry in listing {
            let name = entry.name.as_bytes();
            let rel = join(&dir, name);
            let Ok(st) = lstat_at(fd.as_raw_fd(), name) else {
                continue; // gone meanwhile
            };
            let Some(meta) = Meta::of(&st) else { continue };
            let is_dir = meta.kind == Kind::Dir;
            if excludes.excludes(&rel, is_dir) {
                continue;
            }
            if is_dir {
                more.push(rel.clone());
            }
            found.push((rel, meta));
        }
        Ok(())
    };
    let parts = run_jobs(threads, under.to_vec(), Vec::new, work)?;
    let mut all: Scanned = parts.into_iter().flatten().collect();
    all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(all)
}

/// The number of threads a walk uses: the machine's cores, at most 8.
pub fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::root::path::Root;

    fn paths(s: &Scanned) -> Vec<String> {
        s.iter()
            .map(|(p, _)| String::from_utf8_lossy(p).into_owned())
            .collect()
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
        let root = Root::new(r.to_str().unwrap(), None).unwrap();
        let beneath = root.open_root().unwrap();
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
            assert_eq!(s[4].1.kind, Kind::Symlink);
        }
        let s = scan(&beneath, b"a", &ex, 2).unwrap();
        assert_eq!(paths(&s), ["a/b", "a/b/c.txt"]);
    }
}
