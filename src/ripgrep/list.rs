//! `list_files`: `rg --files --sort path [--glob G]` run in the walk root, each printed path
//! passed through the dot rule and [`Authorize`], capped.
//!
//! Source: `_list_files` in pydantic_ai_harness/filesystem/_toolset.py; ripgrep's `files`
//! and `HaystackBuilder::build` (`crates/core/main.rs`, `crates/core/haystack.rs`).

use std::path::Path;

use super::walker::{for_each_file, overrides, types, Walked};
use super::{rg_failed, Authorize, Collector, ListFilesOptions, Listing};
use crate::cancel::CancelFlag;
use crate::error::{ErrorKind, Result};

/// Lists the files below `dir` as `rg --files --sort path` does, shown through `auth`.
///
/// `dir` is the resolved, absolute walk root (`rg`'s cwd). Lines are display paths in walk
/// order; symlinks are not followed or listed, binary files are listed. Stops walking once
/// `opts.max_results + 1` entries were accepted.
/// Errors: `ErrorKind::InvalidPattern` for a glob `rg` rejects; `ErrorKind::InvalidArgument`
/// with `ripgrep failed: rg: ...` when the walk hit errors (an unreadable directory, say) and
/// was not cut by the cap, as the reference reports `rg`'s exit code 2;
/// `ErrorKind::Cancelled` once `cancel` is set.
pub fn list_files(
    dir: &Path,
    opts: &ListFilesOptions,
    auth: &dyn Authorize,
    cancel: &CancelFlag,
) -> Result<Listing> {
    let types = types(None)?;
    let overrides = overrides(dir, opts.glob.as_deref())?;
    let mut out = Collector::new(opts.max_results);
    let mut stderr = String::new();
    for_each_file(
        dir,
        dir,
        "./",
        overrides,
        types,
        opts.hidden,
        cancel,
        |item| {
            cancel.check()?;
            Ok(match item {
                Walked::Error(line) => {
                    push_line(&mut stderr, &line);
                    true
                }
                Walked::File { path, .. } => match auth.authorize(&path) {
                    Some(display) => out.push(display),
                    None => true,
                },
            })
        },
    )?;
    cancel.check()?;
    if !out.is_full() && !stderr.is_empty() {
        return Err(rg_failed(ErrorKind::InvalidArgument, &stderr));
    }
    Ok(out.into_listing())
}

/// Appends one line to collected `rg` stderr text.
pub(crate) fn push_line(stderr: &mut String, line: &str) {
    if !stderr.is_empty() {
        stderr.push('\n');
    }
    stderr.push_str(line);
}
