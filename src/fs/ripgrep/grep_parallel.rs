//! `grep` over a big directory: the files searched on every core, one searcher per walking
//! thread, each file's lines kept under its path and put in walk order once at the end.
//!
//! This gives what the sorted search with one searcher gives as long as no file is longer
//! than the searcher's first buffer (64 KiB): such a file is read whole by the first read
//! whatever the buffer held before, so where its NUL byte is seen (and so which of its lines
//! show) does not depend on the files searched before it. A longer file, a read error, or
//! more lines than the cap keeps (where the sorted search stops early, and counts binary
//! files only up to there) give up: the caller searches sorted.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use grep_regex::RegexMatcher;
use grep_searcher::BinaryDetection;
use ignore::overrides::Override;
use ignore::types::Types;

use super::cancel_matcher::Cuts;
use super::grep::{open_walked, searcher, CancelReader};
use super::parallel::{visit_files, GiveUp};
use super::sink::{Binary, FileSink};
use super::{Authorize, Collector, GrepOptions, Listing};
use crate::cancel::CancelFlag;
use crate::error::Result;
use crate::fs::walk::Collected;

/// `DEFAULT_BUFFER_CAPACITY` of grep-searcher: a file up to this size is read whole at once.
const FIRST_READ: u64 = 64 * 1024;

/// Searches the files below the directory `target` on every core; `Ok(None)` when the
/// result could differ from the sorted search's (see the module docs) or the walk met an
/// error: the caller then searches sorted.
/// Errors: `ErrorKind::Cancelled` once `cancel` is set.
pub(crate) fn search_parallel(
    target: &Path,
    opts: &GrepOptions,
    matcher: &RegexMatcher,
    (overrides, types): (Override, Types),
    auth: &dyn Authorize,
    cancel: &CancelFlag,
) -> Result<Option<Listing>> {
    let lines = AtomicUsize::new(0);
    let binary = AtomicUsize::new(0);
    let (lines_ref, binary_ref) = (&lines, &binary);
    let cuts = Cuts::new(&opts.pattern, opts.literal, opts.ignore_case);
    let cuts = &cuts;
    let visitor = || {
        let mut searcher = searcher(opts.context, BinaryDetection::quit(0));
        Box::new(move |walked: &Path, _: &Path| {
            let file = match open_walked(walked, auth) {
                Ok(Some((file, len))) if len <= FIRST_READ => file,
                Ok(None) => return Ok(None),
                _ => return Err(GiveUp),
            };
            let mut out = Collector::new(opts.max_results);
            let mut sink = FileSink::new(walked, auth, &mut out, cancel, Binary::Quit)
                .clipping(opts.clip.as_ref());
            let reader = CancelReader {
                inner: file,
                cancel,
            };
            let matcher = cuts.matcher(matcher, cancel);
            if searcher.search_reader(&matcher, reader, &mut sink).is_err() {
                return Err(GiveUp);
            }
            binary_ref.fetch_add(out.binary_skipped, Ordering::Relaxed);
            let before = lines_ref.fetch_add(out.count, Ordering::Relaxed);
            if out.is_full() || before + out.count > opts.max_results {
                return Err(GiveUp);
            }
            let mut text = out.text;
            Ok(text.pop().map(|_| text))
        })
            as Box<dyn FnMut(&Path, &Path) -> std::result::Result<Option<String>, GiveUp> + Send>
    };
    let Some(parts) = visit_files(
        target,
        target,
        overrides,
        types,
        opts.hidden,
        cancel,
        &visitor,
    )?
    else {
        return Ok(None);
    };
    let (text, _, _) = Collected::into_sorted_text(parts, usize::MAX);
    Ok(Some(Listing {
        text,
        count: lines.into_inner(),
        truncated: false,
        binary_skipped: binary.into_inner(),
        errors: String::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::ripgrep::grep;
    use crate::fs::ripgrep::walker::{overrides, types};
    use std::fs;
    use std::time::Duration;

    /// The parallel search itself (not a fallback) gives the sorted search's listing, binary
    /// notices and binary count included; a file over 64 KiB or more lines than the cap
    /// make it give up.
    #[test]
    fn parallel_search_is_the_sorted_search() {
        let dir = crate::testing::tree(&[
            ("a-b/n.rs", "needle denied\n"),
            ("a/.h/z.py", "needle hidden\n"),
            ("a/m.py", "needle\nafter\n\0 bin\n"),
            ("a/bin.dat", "\0needle\n"),
            ("a/b/", ""),
            ("c/late.txt", "needle one\nneedle two\n"),
        ]);
        let r = dir.path();
        for i in 0..40 {
            fs::write(
                r.join(format!("a/b/f{i:02}.py")),
                format!("x\nneedle {i}\ny\n"),
            )
            .unwrap();
            fs::write(r.join(format!("c/g{i:02}.txt")), "nothing\n").unwrap();
        }
        let auth = |walked: &Path| {
            let rel = walked.strip_prefix(r).ok()?.to_str()?;
            (!rel.ends_with(".rs")).then(|| rel.to_owned())
        };
        let c = CancelFlag::new();
        for context in [0, 1] {
            let opts = GrepOptions {
                pattern: "needle".into(),
                context,
                max_results: 1000,
                sorted_budget: Some(Duration::from_secs(3600)),
                ..Default::default()
            };
            let sorted = grep(r, &opts, &auth, &c).unwrap();
            assert!(sorted.binary_skipped > 0 && sorted.count > 40, "{sorted:?}");
            let parts = (overrides(r, None).unwrap(), types(None).unwrap());
            let parallel = search_parallel(r, &opts, &matcher(&opts), parts.clone(), &auth, &c);
            assert_eq!(parallel.unwrap(), Some(sorted.clone()));
            // More lines than the cap: the sorted search stops early; this gives up.
            let capped = GrepOptions {
                max_results: sorted.count - 1,
                ..opts.clone()
            };
            let parallel = search_parallel(r, &capped, &matcher(&opts), parts.clone(), &auth, &c);
            assert_eq!(parallel.unwrap(), None);
        }
        fs::write(r.join("c/big.txt"), "needle\n".repeat(10_000)).unwrap();
        let opts = GrepOptions {
            pattern: "zzz".into(),
            max_results: 1000,
            ..Default::default()
        };
        let parts = (overrides(r, None).unwrap(), types(None).unwrap());
        let parallel = search_parallel(r, &opts, &matcher(&opts), parts, &auth, &c);
        assert_eq!(parallel.unwrap(), None);
    }

    fn matcher(opts: &GrepOptions) -> RegexMatcher {
        super::super::grep::matcher(opts).unwrap()
    }
}
