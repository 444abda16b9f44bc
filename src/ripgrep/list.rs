//! `list_files`: `rg --files --sort path [--glob G]` run in the walk root, each printed path
//! passed through the dot rule and [`Authorize`], capped.
//!
//! Source: `_list_files` in pydantic_ai_harness/filesystem/_toolset.py; ripgrep's `files`
//! and `HaystackBuilder::build` (`crates/core/main.rs`, `crates/core/haystack.rs`).

use std::path::Path;

use super::walker::{overrides, rg_error_text, types, walk};
use super::{
    has_dot_component, rg_failed, rg_line, Authorize, Collector, ListFilesOptions, Listing,
};
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
    for result in walk(dir, dir, overrides, types) {
        cancel.check()?;
        let entry = match result {
            Ok(entry) => entry,
            Err(err) => {
                push_line(
                    &mut stderr,
                    &rg_line(rg_error_text(&err.to_string(), dir, "./")),
                );
                continue;
            }
        };
        // `rg --files` prints regular files only; the root and symlinks are skipped.
        if entry.depth() == 0 || !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let walked = entry.path();
        let printed = walked.strip_prefix(dir).unwrap_or(walked);
        if has_dot_component(printed) {
            continue;
        }
        let Some(display) = auth.authorize(walked) else {
            continue;
        };
        if !out.push(display) {
            break;
        }
    }
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
