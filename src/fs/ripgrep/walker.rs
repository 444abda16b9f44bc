//! The directory walker as `rg --sort path` configures it, and the `rg: ...` text of the
//! errors it yields.
//!
//! `rg` walks relative to its working directory (`./`); we walk the absolute root, since a
//! process-wide cwd cannot be changed under Python, and tell the walker that root is the
//! cwd for global gitignores ([`ignore::WalkBuilder::current_dir`]). Error messages are
//! rewritten from the absolute root back to `./` so they read as `rg`'s do.
//!
//! Source: `HiArgs::walk_builder`, `types`, `globs` in ripgrep's
//! `crates/core/flags/hiargs.rs`.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::{Types, TypesBuilder};
use ignore::{Walk, WalkBuilder};

use super::{has_dot_component, rg_failed, rg_line};
use crate::cancel::CancelFlag;
use crate::error::{ErrorKind, Result};

/// Entries handed from the walker thread to the consumer at once: one channel handoff per
/// batch keeps thread wake-ups off the per-file path.
const BATCH: usize = 64;

/// How far the walker thread may run ahead of the consumer, in batches.
const AHEAD: usize = 2;

/// One item of a walk, in walk order.
pub(crate) enum Walked {
    /// A regular file below the walk root that passes the dot rule: its absolute path, and
    /// the path `rg` prints for it relative to its cwd (without `./`).
    File { path: PathBuf, printed: PathBuf },
    /// An error `rg` reports and continues after, as its `rg: ...` line.
    Error(String),
    /// A directory below the walk root was entered (nothing to show; lets the consumer
    /// watch the time while the walk finds no file).
    Dir,
}

/// Walks `root` on a helper thread and feeds the files `rg` would search or list to `f`,
/// in `rg --sort path` order, so walking overlaps the consumer's work.
///
/// Only regular files below the root are fed (`rg` skips the root directory, symlinks and
/// other types), minus those the dot rule drops, each with the walk's [`ErrorLines`] (where
/// the walk's own errors go too) as `f(errors, path, printed)`. `f` returns `Ok(false)` to
/// stop early; the walker then stops too, having run at most a bounded number of entries
/// ahead. `cancel` is checked before each file, and the walk stops once `budget` has passed:
/// then it returns `Ok(false)`, else `Ok(true)`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn for_each_file(
    root: &Path,
    cwd: &Path,
    root_shown: &str,
    overrides: Override,
    types: Types,
    hidden: bool,
    cancel: &CancelFlag,
    budget: Option<Instant>,
    stderr: &mut String,
    mut f: impl FnMut(&mut ErrorLines, PathBuf, PathBuf) -> Result<bool>,
) -> Result<bool> {
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<Vec<Walked>>(AHEAD);
        scope.spawn(move || {
            let mut batch = Vec::with_capacity(BATCH);
            for result in walk(root, cwd, overrides, types, hidden) {
                if cancel.is_cancelled() {
                    break;
                }
                let item = match result {
                    Err(err) => {
                        Walked::Error(rg_line(rg_error_text(&err.to_string(), cwd, root_shown)))
                    }
                    Ok(entry) => {
                        if entry.depth() == 0 {
                            continue;
                        }
                        if entry.file_type().is_some_and(|t| t.is_dir()) {
                            Walked::Dir
                        } else if !entry.file_type().is_some_and(|t| t.is_file()) {
                            continue;
                        } else {
                            let path = entry.into_path();
                            let printed = path.strip_prefix(cwd).unwrap_or(&path).to_path_buf();
                            if !hidden && has_dot_component(&printed) {
                                continue;
                            }
                            Walked::File { path, printed }
                        }
                    }
                };
                batch.push(item);
                if batch.len() == BATCH
                    && tx
                        .send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))
                        .is_err()
                {
                    return; // the consumer stopped
                }
            }
            if !batch.is_empty() {
                let _ = tx.send(batch);
            }
        });
        let mut errors = ErrorLines {
            lines: stderr,
            budget,
        };
        let (mut outcome, mut within) = (Ok(()), true);
        let mut feed = |item| {
            cancel.check()?;
            if errors.budget.is_some_and(|b| Instant::now() > b) {
                within = false;
                return Ok(false);
            }
            match item {
                Walked::Error(line) => errors.push(&line),
                Walked::Dir => {}
                Walked::File { path, printed } => return f(&mut errors, path, printed),
            }
            Ok(true)
        };
        'batches: for batch in rx.iter() {
            for item in batch {
                match feed(item) {
                    Ok(true) => {}
                    Ok(false) => break 'batches,
                    Err(err) => {
                        outcome = Err(err);
                        break 'batches;
                    }
                }
            }
        }
        // Dropping the receiver makes the walker's next send fail, so it ends.
        drop(rx);
        outcome.map(|()| within)
    })
}

/// Appends one line to collected `rg` stderr text.
pub(crate) fn push_line(stderr: &mut String, line: &str) {
    if !stderr.is_empty() {
        stderr.push('\n');
    }
    stderr.push_str(line);
}

/// The `rg: ...` error lines a walk collects as it goes on. The first one also ends the walk's
/// time budget: a walk that will fail runs to the end, so the failure lists every line.
pub(crate) struct ErrorLines<'a> {
    lines: &'a mut String,
    budget: Option<Instant>,
}

impl ErrorLines<'_> {
    /// Appends `line` and drops the time budget.
    pub(crate) fn push(&mut self, line: &str) {
        push_line(self.lines, line);
        self.budget = None;
    }
}

/// `--glob G` with `rg`'s cwd `root`: an empty override when `glob` is `None`.
///
/// Errors: `ErrorKind::InvalidPattern`, `ripgrep failed: rg: error parsing glob ...`.
pub(crate) fn overrides(root: &Path, glob: Option<&str>) -> Result<Override> {
    let Some(glob) = glob else {
        return Ok(Override::empty());
    };
    let mut builder = OverrideBuilder::new(root);
    builder
        .add(glob)
        .map_err(|e| rg_failed(ErrorKind::InvalidPattern, &rg_line(e)))?;
    builder
        .build()
        .map_err(|e| rg_failed(ErrorKind::InvalidPattern, &rg_line(e)))
}

/// `--type T` over ripgrep's default type list: an empty matcher when `file_type` is `None`.
///
/// Errors: `ErrorKind::InvalidArgument`, `ripgrep failed: rg: unrecognized file type: T`.
pub(crate) fn types(file_type: Option<&str>) -> Result<Types> {
    let mut builder = TypesBuilder::new();
    builder.add_defaults();
    if let Some(name) = file_type {
        builder.select(name);
    }
    builder
        .build()
        .map_err(|e| rg_failed(ErrorKind::InvalidArgument, &rg_line(e)))
}

/// A sorted, single-threaded walk of `path` with ripgrep's default filters: hidden files
/// skipped, `.ignore`/`.rgignore` anywhere, `.gitignore`/`.git/info/exclude`/the global
/// excludes file inside a git repository, ignore files of parent directories, entries
/// sorted by file name bytes in each directory (a depth-first sorted walk).
///
/// `cwd` is the directory `rg` would run in: it roots global gitignore matching. `hidden`
/// is `--hidden`: hidden files are walked too.
pub(crate) fn walk(
    path: &Path,
    cwd: &Path,
    overrides: Override,
    types: Types,
    hidden: bool,
) -> Walk {
    let mut builder = builder(path, cwd, overrides, types, hidden);
    builder.sort_by_file_name(|a, b| a.cmp(b));
    builder.build()
}

/// The walk [`walk`] makes, before it is sorted: `rg`'s filters on one thread.
pub(crate) fn builder(
    path: &Path,
    cwd: &Path,
    overrides: Override,
    types: Types,
    hidden: bool,
) -> WalkBuilder {
    let mut builder = WalkBuilder::new(path);
    builder
        .max_depth(None)
        .follow_links(false)
        .max_filesize(None)
        .threads(1)
        .same_file_system(false)
        .overrides(overrides)
        .types(types)
        .hidden(!hidden)
        .parents(true)
        .ignore(true)
        .git_global(true)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(true)
        .ignore_case_insensitive(false)
        .current_dir(cwd)
        .add_custom_ignore_filename(".rgignore");
    builder
}

/// Rewrites an error's text from the absolute walk root to the form `rg` prints: paths
/// below the root as `./rel`, the root itself as `root_shown`.
pub(crate) fn rg_error_text(message: &str, root: &Path, root_shown: &str) -> String {
    let root = root.to_string_lossy();
    let root = root.trim_end_matches('/');
    if root.is_empty() {
        return message.to_string();
    }
    let below = format!("{root}/");
    message.replace(&below, "./").replace(root, root_shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_text_reads_relative() {
        let root = Path::new("/w/t");
        let msg =
            "/w/t/d/sec: IO error for operation on /w/t/d/sec: Permission denied (os error 13)";
        assert_eq!(
            rg_error_text(msg, root, "."),
            "./d/sec: IO error for operation on ./d/sec: Permission denied (os error 13)"
        );
        assert_eq!(rg_error_text("/w/t: nope", root, "./"), "./: nope");
    }

    #[test]
    fn bad_glob_and_type_read_as_rg() {
        let err = overrides(Path::new("/"), Some("{a")).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidPattern);
        assert_eq!(
            err.message,
            "ripgrep failed: rg: error parsing glob '{a': unclosed alternate group; missing '}' \
             (maybe escape '{' with '[{]'?)"
        );
        let err = types(Some("zz")).unwrap_err();
        assert_eq!(
            err.message,
            "ripgrep failed: rg: unrecognized file type: zz"
        );
        assert!(types(Some("py")).is_ok());
        assert!(types(None).is_ok());
    }
}
