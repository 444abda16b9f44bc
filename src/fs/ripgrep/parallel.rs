//! The walk `rg` does without `--sort`: its filters, on every core, unordered; what it keeps
//! is collected compactly per thread ([`Collected`]) for the caller to sort once at the end,
//! which gives what the sorted walk ([`super::walker::for_each_file`]) gives.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use ignore::overrides::Override;
use ignore::types::Types;
use ignore::WalkState;

use super::walker::builder;
use crate::cancel::CancelFlag;
use crate::error::Result;
use crate::fs::root::path::strip_base;
use crate::fs::walk::Collected;

/// Threads for a parallel walk: the available cores, at most 8.
fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
        .clamp(1, 8)
}

/// [`super::has_dot_component`] of a walked path (no `.` or empty components), by its bytes.
fn has_dot_name(printed: &Path) -> bool {
    let bytes = printed.as_os_str().as_bytes();
    bytes.first() == Some(&b'.') || memchr::memmem::find(bytes, b"/.").is_some()
}

/// A thread's collection, handed over when the walk drops the thread's visitor.
struct Part<'a> {
    collected: Collected,
    parts: &'a Mutex<Vec<Collected>>,
}

impl Drop for Part<'_> {
    fn drop(&mut self) {
        let collected = std::mem::take(&mut self.collected);
        if let Ok(mut parts) = self.parts.lock() {
            parts.push(collected);
        }
    }
}

/// A visitor's answer that the parallel walk cannot give the sorted walk's result (a file it
/// cannot treat alike, too many lines): the walk stops and the caller walks sorted.
pub(crate) struct GiveUp;

/// Walks `root` as [`super::walker::for_each_file`] does (same filters, same files: regular
/// files below the root that pass the dot rule), on all cores and unordered, collecting
/// `shown(path, printed)` of each file `shown` keeps, keyed by `printed` (the path `rg`
/// prints, relative to `cwd`); with no `shown`, every file by its path alone
/// ([`Collected::push_named`], for [`Collected::into_prefixed_text`]).
///
/// `Ok(None)` when the walk met an error `rg` would report (an unreadable directory, say):
/// the caller then walks sorted, which gives `rg`'s messages in `rg`'s order.
/// Errors: `ErrorKind::Cancelled` once `cancel` is set.
pub(crate) fn collect_files(
    root: &Path,
    cwd: &Path,
    overrides: Override,
    types: Types,
    hidden: bool,
    cancel: &CancelFlag,
    shown: Option<&Shown>,
) -> Result<Option<Vec<Collected>>> {
    let visitor = || -> Box<Visitor> {
        Box::new(move |path, printed| Ok(shown.map_or(Some(String::new()), |f| f(path, printed))))
    };
    walk_files(
        root,
        cwd,
        overrides,
        types,
        hidden,
        cancel,
        shown.is_none(),
        &visitor,
    )
}

/// What [`collect_files`] collects of a file, from its path and printed path: its line,
/// or `None` to leave it out.
pub(crate) type Shown<'a> = dyn Fn(&Path, &Path) -> Option<String> + Sync + 'a;

/// A walking thread's visitor: `Some(line)` to collect a file, `None` to leave it out.
type Visitor<'a> =
    dyn FnMut(&Path, &Path) -> std::result::Result<Option<String>, GiveUp> + Send + 'a;

/// [`collect_files`] with one visitor per walking thread, made by `visitor`; a visitor's
/// [`GiveUp`] stops the walk with `Ok(None)`, as an error does.
pub(crate) fn visit_files<'a>(
    root: &Path,
    cwd: &Path,
    overrides: Override,
    types: Types,
    hidden: bool,
    cancel: &CancelFlag,
    visitor: &(dyn Fn() -> Box<Visitor<'a>> + Sync),
) -> Result<Option<Vec<Collected>>> {
    walk_files(root, cwd, overrides, types, hidden, cancel, false, visitor)
}

/// [`visit_files`]; `named`: each kept file is collected by its path, not its line.
#[allow(clippy::too_many_arguments)]
fn walk_files<'a>(
    root: &Path,
    cwd: &Path,
    overrides: Override,
    types: Types,
    hidden: bool,
    cancel: &CancelFlag,
    named: bool,
    visitor: &(dyn Fn() -> Box<Visitor<'a>> + Sync),
) -> Result<Option<Vec<Collected>>> {
    let failed = AtomicBool::new(false);
    let parts = Mutex::new(Vec::new());
    let walk = builder(root, cwd, overrides, types, hidden)
        .threads(threads())
        .build_parallel();
    // Each worker works for the calling tool call (names it escapes, `EscapeScope`).
    let call = crate::fs::text::names::EscapeScope::current();
    walk.run(|| {
        let (failed, parts) = (&failed, &parts);
        let mut part = Part {
            collected: Collected::default(),
            parts,
        };
        let mut shown = visitor();
        let mut call = Some(call.clone());
        Box::new(move |result| {
            if let Some(call) = call.take() {
                call.adopt();
            }
            if cancel.is_cancelled() || failed.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let entry = match result {
                Ok(entry) => entry,
                Err(_) => {
                    failed.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
            };
            if entry.depth() == 0 || !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let path = entry.path();
            let printed = strip_base(path, cwd).unwrap_or(path);
            if !hidden && has_dot_name(printed) {
                return WalkState::Continue;
            }
            match shown(path, printed) {
                Ok(Some(_)) if named => part
                    .collected
                    .push_named(printed.as_os_str().as_encoded_bytes(), ""),
                Ok(Some(line)) => part
                    .collected
                    .push(printed.as_os_str().as_encoded_bytes(), &line),
                Ok(None) => {}
                Err(GiveUp) => {
                    failed.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
            }
            WalkState::Continue
        })
    });
    cancel.check()?;
    if failed.load(Ordering::Relaxed) {
        return Ok(None);
    }
    Ok(Some(parts.into_inner().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::super::{list_files, ListFilesOptions};
    use crate::cancel::CancelFlag;
    use std::fs;
    use std::path::Path;
    use std::time::Duration;

    /// `list_files` walked on every core and sorted at the end (budget 0) lists exactly what
    /// the sorted walk lists, with ignore files, hidden files, globs, denied files and caps.
    #[test]
    fn parallel_listing_is_the_sorted_listing() {
        let dir = crate::testing::tree(&[
            ("a/m.py", "x"),
            ("a-b/n.rs", "x"),
            ("a/.h/z.py", "x"),
            (".env", "x"),
            ("c/keep.log", "x"),
            ("c/skip/x.py", "x"),
            ("a/b/", ""),
            ("d/", ""),
            (".ignore", "skip/\n*.txt\n!g07.txt\n"),
        ]);
        let r = dir.path();
        for i in 0..50 {
            fs::write(r.join(format!("a/b/f{i:02}.py")), "x").unwrap();
            fs::write(r.join(format!("d/g{i:02}.txt")), "x").unwrap();
        }
        std::os::unix::fs::symlink("a", r.join("la")).unwrap();
        // Drops every `.rs` file, shows the rest relative to the root.
        let auth = |walked: &Path| {
            let rel = walked.strip_prefix(r).ok()?.to_str()?;
            (!rel.ends_with(".rs")).then(|| format!("./{rel}"))
        };
        let c = CancelFlag::new();
        for glob in [
            None,
            Some("*.py"),
            Some("!a/**"),
            Some(".*"),
            Some("*.none"),
        ] {
            for hidden in [false, true] {
                for max in [0, 1, 2, 51, 1000] {
                    let opts = |budget| ListFilesOptions {
                        glob: glob.map(str::to_owned),
                        hidden,
                        max_results: max,
                        sorted_budget: Some(budget),
                    };
                    let sorted = list_files(r, &opts(Duration::from_secs(3600)), &auth, &c);
                    let parallel = list_files(r, &opts(Duration::ZERO), &auth, &c);
                    assert_eq!(
                        parallel.unwrap(),
                        sorted.unwrap(),
                        "{glob:?} hidden {hidden} cap {max}"
                    );
                }
            }
        }
    }
}
