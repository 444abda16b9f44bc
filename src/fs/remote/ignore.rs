//! ripgrep's walk filters over listings a workspace backend hands in: `.rgignore`, `.ignore`
//! anywhere, `.gitignore` and `.git/info/exclude` inside a git repository (a directory holding
//! `.git`), hidden entries, `--glob` overrides and `--type` file types, with the precedence the
//! `ignore` crate gives them (`Ignore::matched` in its `dir.rs`), so a walk through the workspace
//! protocol keeps and skips what `rg` (and the local `list_files`/`grep`) does on the same tree.
//!
//! The walk is driven from Python one directory level at a time: [`RgWalk::listed`] takes a
//! directory's listing and names the ignore files to read, [`RgWalk::rules`] takes their
//! bytes, and [`RgWalk::enter`] decides each child, returning the directories to list next.
//! Only the ignore files the walk meets are read: those of the walked directories and of the
//! directories from the root down to the walk's start (rg's parent ignore files, bounded by
//! the root). The user's global git excludes file is not read (it is not in the workspace).

use std::collections::HashMap;
use std::path::Path;

use ::ignore::gitignore::{Gitignore, GitignoreBuilder};
use ::ignore::overrides::Override;
use ::ignore::types::Types;
use ::ignore::Match;

use super::posix::{contains, join, normpath};
use super::Entry;
use crate::error::Result;
use crate::fs::ripgrep::walker;

/// The ignore files a directory may hold, highest precedence first.
const IGNORE_FILES: [&str; 3] = [".rgignore", ".ignore", ".gitignore"];
/// A repository's own excludes, read where `.git` is a directory.
const EXCLUDE: &str = ".git/info/exclude";

/// The rules one directory contributes.
#[derive(Debug, Default)]
struct DirRules {
    custom: Option<Gitignore>,
    ignore: Option<Gitignore>,
    git: Option<Gitignore>,
    exclude: Option<Gitignore>,
    has_git: bool,
}

/// An ignore file's bytes compiled as the `ignore` crate reads one (`GitignoreBuilder::add`):
/// lines split at `\n` (a trailing `\r` dropped), a line that is not UTF-8 skipped, a leading
/// BOM dropped, a line that fails to parse skipped. `None` when it holds no rule.
fn compile(dir: &str, name: &str, data: &[u8]) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(dir);
    let from = Path::new(dir).join(name);
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if data.ends_with(b"\n") || data.is_empty() {
        lines.pop();
    }
    for (i, line) in lines.into_iter().enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Ok(line) = std::str::from_utf8(line) else {
            continue;
        };
        let line = if i == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        let _ = builder.add_line(Some(from.clone()), line);
    }
    builder.build().ok().filter(|g| !g.is_empty())
}

fn matched(rules: &Option<Gitignore>, path: &Path, is_dir: bool) -> Match<()> {
    match rules {
        Some(g) => g.matched(path, is_dir).map(|_| ()),
        None => Match::None,
    }
}

/// What a walk does with one child entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    /// Walked (a directory entered, a file kept).
    Kept,
    /// Left out by the caller's glob or file type: not a skip.
    Excluded,
    /// A dot entry left out.
    Hidden,
    /// Left out by an ignore file.
    Ignored,
}

/// One ripgrep-rules walk below `start` (see the module docs).
#[derive(Debug)]
pub struct RgWalk {
    root: String,
    /// The walk's start (`rg`'s working directory), resolved.
    pub start: String,
    overrides: Override,
    types: Types,
    /// `--hidden`: dot entries are walked too.
    pub hidden: bool,
    /// A dot entry the glob leaves out still counts as hidden (`search_files`' trailer counts
    /// every hidden entry the walk met, as 0.62.0's walker does).
    hidden_before_glob: bool,
    rules: HashMap<String, DirRules>,
    listed: HashMap<String, Vec<Entry>>,
    files: Vec<Entry>,
    /// Dot entries left out (a directory counted once).
    pub hidden_skipped: usize,
    /// Entries ignore files left out (a directory counted once).
    pub ignored_skipped: usize,
    /// Directories below the start the backend could not list ([`RgWalk::unlisted`]).
    pub unreadable: Vec<super::Unread>,
}

impl RgWalk {
    /// A walk of the directory `start` inside `root` with `rg`'s `--glob glob`, `--type
    /// file_type` and `--hidden` (`hidden`).
    ///
    /// Errors, in `rg`'s order: an unknown file type (`InvalidArgument`), a glob `rg` rejects
    /// (`InvalidPattern`), both `ripgrep failed: rg: ...`.
    pub fn new(
        root: &str,
        start: &str,
        glob: Option<&str>,
        file_type: Option<&str>,
        hidden: bool,
    ) -> Result<Self> {
        let types = walker::types(file_type)?;
        let overrides = walker::overrides(Path::new(start), glob)?;
        Ok(RgWalk {
            root: normpath(root),
            start: normpath(start),
            overrides,
            types,
            hidden,
            hidden_before_glob: false,
            rules: HashMap::new(),
            listed: HashMap::new(),
            files: Vec::new(),
            hidden_skipped: 0,
            ignored_skipped: 0,
            unreadable: Vec::new(),
        })
    }

    /// Notes that the backend could not list the directory `dir` below the start (`errno`:
    /// its error's number, `None` unknown): the result names it as the host walkers do.
    pub fn unlisted(&mut self, dir: &str, errno: Option<i32>) {
        self.unreadable.push(super::Unread::new(dir, errno));
    }

    /// The directories above the start whose ignore files apply, root first (inside the root).
    pub fn ancestors(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut dir = self.start.clone();
        while dir != self.root && contains(&self.root, &dir) {
            let parent = match dir.rfind('/') {
                Some(0) => "/".to_string(),
                Some(i) => dir[..i].to_string(),
                None => break,
            };
            if !contains(&self.root, &parent) {
                break;
            }
            out.push(parent.clone());
            dir = parent;
        }
        out.reverse();
        out
    }

    /// Takes the listing of `dir` (walked, or an ancestor of the start) and returns the ignore
    /// files in it to read, as workspace paths.
    pub fn listed(&mut self, dir: &str, entries: Vec<Entry>) -> Vec<String> {
        let mut read = Vec::new();
        let mut has_git = false;
        for entry in &entries {
            let name = entry.name();
            if name == ".git" {
                has_git = true;
                if entry.is_dir {
                    read.push(join(dir, EXCLUDE));
                }
            } else if !entry.is_dir && IGNORE_FILES.contains(&name) {
                read.push(entry.path.clone());
            }
        }
        if has_git {
            self.rules.entry(dir.to_string()).or_default().has_git = true;
        }
        self.listed.insert(dir.to_string(), entries);
        read
    }

    /// Takes the bytes of the ignore files [`RgWalk::listed`] named for `dir` (`None`: could
    /// not be read, as if absent).
    pub fn rules(&mut self, dir: &str, files: Vec<(String, Option<Vec<u8>>)>) {
        for (path, data) in files {
            let Some(data) = data else { continue };
            let name = path.rsplit('/').next().unwrap_or("");
            let compiled = compile(dir, name, &data);
            let rules = self.rules.entry(dir.to_string()).or_default();
            match name {
                ".rgignore" => rules.custom = compiled,
                ".ignore" => rules.ignore = compiled,
                ".gitignore" => rules.git = compiled,
                _ => rules.exclude = compiled,
            }
        }
    }

    /// Decides each child of the listed directory `dir`: keeps files, counts skips, and returns
    /// the child directories to walk next, in listing order.
    pub fn enter(&mut self, dir: &str) -> Vec<String> {
        let entries = self.listed.remove(dir).unwrap_or_default();
        let mut below = Vec::new();
        for entry in entries {
            match self.decide(dir, &entry) {
                Decision::Kept if entry.is_dir => below.push(entry.path),
                Decision::Kept => self.files.push(entry),
                Decision::Excluded => {}
                Decision::Hidden => self.hidden_skipped += 1,
                Decision::Ignored => self.ignored_skipped += 1,
            }
        }
        below
    }

    /// The kept files, in `rg --sort path` order (component-wise).
    pub fn into_files(self) -> Vec<Entry> {
        let mut files = self.files;
        files.sort_by(|a, b| a.path.split('/').cmp(b.path.split('/')));
        files
    }

    /// `Ignore::matched_dir_entry` for `entry`, a child of `dir`.
    fn decide(&self, dir: &str, entry: &Entry) -> Decision {
        let path = Path::new(&entry.path);
        let is_dir = entry.is_dir;
        let over = self.overrides.matched(path, is_dir);
        if over.is_ignore() {
            let hidden = self.hidden_before_glob && !self.hidden && entry.name().starts_with('.');
            return if hidden {
                Decision::Hidden
            } else {
                Decision::Excluded
            };
        }
        if over.is_whitelist() {
            return Decision::Kept;
        }
        let mut whitelisted = false;
        let by_files = self.matched_ignore(dir, path, is_dir);
        if by_files.is_ignore() {
            return self.skipped(entry);
        }
        whitelisted |= by_files.is_whitelist();
        let by_type = self.types.matched(path, is_dir);
        if by_type.is_ignore() {
            return Decision::Excluded;
        }
        whitelisted |= by_type.is_whitelist();
        if !whitelisted && !self.hidden && entry.name().starts_with('.') {
            return Decision::Hidden;
        }
        Decision::Kept
    }

    /// How a child an ignore file leaves out is counted (`ripgrep_skipped`'s rules).
    fn skipped(&self, entry: &Entry) -> Decision {
        if self
            .types
            .matched(Path::new(&entry.path), entry.is_dir)
            .is_ignore()
        {
            Decision::Excluded
        } else if !self.hidden && entry.name().starts_with('.') {
            Decision::Hidden
        } else {
            Decision::Ignored
        }
    }

    /// `Ignore::matched_ignore`: the ignore files of `dir` and every directory above it, the
    /// deepest first; `.gitignore` and excludes only inside a repository, and not above its
    /// top; `.rgignore` over `.ignore` over `.gitignore` over the excludes.
    fn matched_ignore(&self, dir: &str, path: &Path, is_dir: bool) -> Match<()> {
        if self.rules.is_empty() {
            return Match::None;
        }
        let mut chain = Vec::new();
        let mut at = dir.to_string();
        loop {
            if let Some(rules) = self.rules.get(&at) {
                chain.push(rules);
            }
            match at.rfind('/') {
                Some(0) if at != "/" => at = "/".to_string(),
                Some(i) if i > 0 => at.truncate(i),
                _ => break,
            }
        }
        let any_git = chain.iter().any(|r| r.has_git);
        let (mut custom, mut ignore, mut git, mut exclude) =
            (Match::None, Match::None, Match::None, Match::None);
        let mut saw_git = false;
        for rules in chain {
            if custom.is_none() {
                custom = matched(&rules.custom, path, is_dir);
            }
            if ignore.is_none() {
                ignore = matched(&rules.ignore, path, is_dir);
            }
            if any_git && !saw_git && git.is_none() {
                git = matched(&rules.git, path, is_dir);
            }
            if any_git && !saw_git && exclude.is_none() {
                exclude = matched(&rules.exclude, path, is_dir);
            }
            saw_git |= rules.has_git;
        }
        custom.or(ignore).or(git).or(exclude)
    }

    /// Counts a dot entry the glob leaves out as hidden (`search_files`).
    pub fn hidden_before_glob(mut self) -> Self {
        self.hidden_before_glob = true;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, is_dir: bool) -> Entry {
        Entry {
            path: path.into(),
            is_dir,
            size: if is_dir { None } else { Some(1) },
        }
    }

    /// A tree handed in level by level keeps and skips what `rg` does.
    #[test]
    fn walks_as_rg_filters() {
        let mut w = RgWalk::new("/ws", "/ws", None, None, false).unwrap();
        let read = w.listed(
            "/ws",
            vec![
                entry("/ws/.git", true),
                entry("/ws/.gitignore", false),
                entry("/ws/ignored", true),
                entry("/ws/src", true),
                entry("/ws/a.log", false),
                entry("/ws/.env", false),
            ],
        );
        assert_eq!(read, ["/ws/.git/info/exclude", "/ws/.gitignore"]);
        w.rules(
            "/ws",
            vec![
                ("/ws/.git/info/exclude".into(), None),
                (
                    "/ws/.gitignore".into(),
                    Some(b"ignored/\n*.log\r\n!keep.log".to_vec()),
                ),
            ],
        );
        assert_eq!(w.enter("/ws"), ["/ws/src"]);
        w.listed(
            "/ws/src",
            vec![
                entry("/ws/src/keep.log", false),
                entry("/ws/src/v.py", false),
            ],
        );
        assert!(w.enter("/ws/src").is_empty());
        assert_eq!((w.hidden_skipped, w.ignored_skipped), (3, 2));
        let files: Vec<String> = w.into_files().into_iter().map(|e| e.path).collect();
        assert_eq!(files, ["/ws/src/keep.log", "/ws/src/v.py"]);
    }

    /// Without `.git`, `.gitignore` is not applied; `.ignore` is.
    #[test]
    fn gitignore_needs_a_repository() {
        let mut w = RgWalk::new("/ws", "/ws/sub", None, None, false).unwrap();
        assert_eq!(w.ancestors(), ["/ws"]);
        w.listed("/ws", vec![entry("/ws/.ignore", false)]);
        w.rules(
            "/ws",
            vec![("/ws/.ignore".into(), Some(b"*.tmp\n".to_vec()))],
        );
        w.listed(
            "/ws/sub",
            vec![
                entry("/ws/sub/.gitignore", false),
                entry("/ws/sub/a.txt", false),
                entry("/ws/sub/b.tmp", false),
            ],
        );
        w.rules(
            "/ws/sub",
            vec![("/ws/sub/.gitignore".into(), Some(b"a.txt\n".to_vec()))],
        );
        w.enter("/ws/sub");
        let files: Vec<String> = w.into_files().into_iter().map(|e| e.path).collect();
        assert_eq!(files, ["/ws/sub/a.txt"]);
    }
}
