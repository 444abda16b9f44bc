//! What a walk leaves out: the harness's state directory and the `exclude` patterns.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::error::{Error, ErrorKind, Result};

/// The directory at the root that holds the harness's own state; never walked.
pub const STATE_DIR: &[u8] = b".pydantic-ai-harness";

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

/// Whether `rel` is the state directory or below it.
pub fn in_state_dir(rel: &[u8]) -> bool {
    rel.strip_prefix(STATE_DIR)
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
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
        if in_state_dir(rel) {
            return true;
        }
        let name = match rel.iter().rposition(|&b| b == b'/') {
            Some(i) => &rel[i + 1..],
            None => rel,
        };
        self.by_name(name, is_dir) || self.by_matcher(rel, is_dir)
    }

    /// [`Excludes::excludes`] for the entry `name` of the directory `dir` (root-relative),
    /// without building its path unless a pattern needs it (`buf` is scratch space).
    pub fn excludes_entry(&self, dir: &[u8], name: &[u8], is_dir: bool, buf: &mut Vec<u8>) -> bool {
        if dir.is_empty() && name == STATE_DIR {
            return true;
        }
        if self.by_name(name, is_dir) {
            return true;
        }
        if self.matcher.is_none() {
            return false;
        }
        buf.clear();
        if !dir.is_empty() {
            buf.extend_from_slice(dir);
            buf.push(b'/');
        }
        buf.extend_from_slice(name);
        self.by_matcher(buf, is_dir)
    }

    fn by_name(&self, name: &[u8], is_dir: bool) -> bool {
        self.any_names.iter().any(|n| n == name)
            || (is_dir && self.dir_names.iter().any(|n| n == name))
    }

    fn by_matcher(&self, rel: &[u8], is_dir: bool) -> bool {
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
