//! `list_files`: `rg --files --sort path [--glob G]` run in the walk root, each printed path
//! passed through the dot rule and [`Authorize`], capped.
//!
//! Source: `_list_files` in pydantic_ai_harness/filesystem/_toolset.py; ripgrep's `files`
//! and `HaystackBuilder::build` (`crates/core/main.rs`, `crates/core/haystack.rs`).

use std::path::Path;
use std::time::{Duration, Instant};

use ignore::overrides::Override;
use ignore::types::Types;

use super::parallel::collect_files;
use super::walker::{for_each_file, overrides, types};
use super::{Authorize, Collector, ListFilesOptions, Listing};
use crate::cancel::CancelFlag;
use crate::error::Result;
use crate::fs::walk::Collected;

/// Lists the files below `dir` as `rg --files --sort path` does, shown through `auth`.
///
/// `dir` is the resolved, absolute walk root (`rg`'s cwd). Lines are display paths in walk
/// order; symlinks are not followed or listed, binary files are listed. The sorted walk stops
/// once `opts.max_results + 1` entries were accepted; if it is still going after
/// `opts.sorted_budget`, the tree is walked again on every core and sorted at the end.
/// Errors: `ErrorKind::InvalidPattern` for a glob `rg` rejects; `ErrorKind::Cancelled` once
/// `cancel` is set. Errors the walk met and went on after (an unreadable directory, say) are
/// in [`Listing::errors`] as `rg: ...` lines (the caller decides, issue 19).
pub fn list_files(
    dir: &Path,
    opts: &ListFilesOptions,
    auth: &dyn Authorize,
    cancel: &CancelFlag,
) -> Result<Listing> {
    let types = types(None)?;
    let overrides = overrides(dir, opts.glob.as_deref())?;
    // A small tree, or a listing the cap cuts early, is done by the sorted walk alone.
    let walk = |budget| {
        list_sorted(
            dir,
            opts,
            overrides.clone(),
            types.clone(),
            auth,
            cancel,
            budget,
        )
    };
    let budget = Instant::now() + opts.sorted_budget.unwrap_or(SORTED_BUDGET);
    if let Some(listing) = walk(Some(budget))? {
        return Ok(listing);
    }
    // A big one is walked on every core and sorted at the end; where every file is shown
    // as a prefix and its walked path, lines are built from the sorted keys.
    let prefix = auth.plain_prefix(dir);
    let shown = |path: &Path, _: &Path| auth.authorize(path);
    let parts = collect_files(
        dir,
        dir,
        overrides.clone(),
        types.clone(),
        opts.hidden,
        cancel,
        prefix.is_none().then_some(&shown),
    )?;
    match parts {
        Some(parts) => {
            let prefix = prefix.as_deref().unwrap_or_default();
            let (text, count, past) =
                Collected::into_prefixed_text(parts, opts.max_results, prefix);
            Ok(Listing {
                text,
                count,
                truncated: past.is_some(),
                binary_skipped: 0,
                errors: String::new(),
            })
        }
        None => Ok(walk(None)?.unwrap_or_default()),
    }
}

/// How long the sorted walk may run before [`list_files`] walks in parallel instead.
const SORTED_BUDGET: Duration = Duration::from_millis(10);

/// The sorted walk's listing; `None` when it was still going at `budget` (neither the tree
/// nor the cap reached). An error `rg` reports lifts the budget.
fn list_sorted(
    dir: &Path,
    opts: &ListFilesOptions,
    overrides: Override,
    types: Types,
    auth: &dyn Authorize,
    cancel: &CancelFlag,
    budget: Option<Instant>,
) -> Result<Option<Listing>> {
    let mut out = Collector::new(opts.max_results);
    let mut stderr = String::new();
    let within = for_each_file(
        dir,
        dir,
        "./",
        overrides,
        types,
        opts.hidden,
        cancel,
        budget,
        &mut stderr,
        |_, path, _| {
            Ok(match auth.authorize(&path) {
                Some(display) => out.push(display),
                None => true,
            })
        },
    )?;
    cancel.check()?;
    if !within {
        return Ok(None);
    }
    let mut listing = out.into_listing();
    listing.errors = stderr;
    Ok(Some(listing))
}
