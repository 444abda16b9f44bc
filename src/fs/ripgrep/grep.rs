//! `grep`: `rg --line-number --with-filename --sort path --max-columns 4096
//! --max-columns-preview --context C [--glob G] [--type T] [--ignore-case] [--fixed-strings]
//! --regexp PATTERN -- TARGET`, run in the target directory (TARGET `.`) or in a file's
//! parent (TARGET `./name`), each line passed through the dot rule and [`Authorize`], capped.
//!
//! The matcher and searcher are configured as `rg` configures them (`matcher_rust`,
//! `searcher` in ripgrep's `hiargs.rs`). Walked files use `rg`'s implicit binary detection
//! (stop at the first NUL) through one searcher reused in walk order, as `rg --sort path`
//! does (its line buffer grows across files, which decides where a late NUL is seen). An
//! explicit file is what `rg` memory-maps: we read it instead (no SIGBUS if it shrinks while
//! searched) and reproduce the slice strategy's binary detection, see [`Binary::Slice`].
//!
//! Source: `_grep`, `_match_line` in pydantic_ai_harness/filesystem/_toolset.py.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, MmapChoice, Searcher, SearcherBuilder};

use std::time::{Duration, Instant};

use ignore::overrides::Override;
use ignore::types::Types;

use super::cancel_matcher::Cuts;
use super::grep_parallel::search_parallel;
use super::sink::{Binary, FileSink};
use super::walker::{for_each_file, overrides, push_line, types};
use super::{has_dot_component, rg_failed, rg_line, Authorize, Collector, GrepOptions, Listing};
use crate::cancel::CancelFlag;
use crate::error::{ErrorKind, Result};

/// `DEFAULT_BUFFER_CAPACITY` of grep-searcher: how much of a slice is checked for binary
/// data before searching it.
const SLICE_BINARY_WINDOW: usize = 64 * 1024;

/// Searches `target` (a directory, walked, or a file, searched explicitly) as `rg` does,
/// shown through `auth`.
///
/// `target` is resolved and absolute. Lines are `{display}:{n}:{text}` for matches and
/// `{display}-{n}-{text}` for context lines, in walk order, plus `rg`'s binary-file
/// notices; a line longer than 4096 bytes is previewed as `rg --max-columns-preview` does.
/// Stops once `opts.max_results + 1` lines were accepted.
/// Errors, checked in `rg`'s order: `ErrorKind::InvalidArgument` for an unknown
/// `file_type`, `ErrorKind::InvalidPattern` for a bad glob or a regex `rg` rejects (message
/// `ripgrep failed: rg: <rg's text>`); `ErrorKind::Cancelled` once `cancel` is set. Files
/// or directories that could not be read do not fail the search: their `rg: ...` lines are
/// in [`Listing::errors`] (the caller decides, issue 19).
pub fn grep(
    target: &Path,
    opts: &GrepOptions,
    auth: &dyn Authorize,
    cancel: &CancelFlag,
) -> Result<Listing> {
    let is_dir = target.is_dir();
    let cwd = if is_dir {
        target
    } else {
        target.parent().unwrap_or(target)
    };
    let types = types(opts.file_type.as_deref())?;
    let overrides = overrides(cwd, opts.glob.as_deref())?;
    let matcher = matcher(opts)?;
    let mut out = Collector::new(opts.max_results);
    let mut stderr = String::new();
    if is_dir {
        // A small tree, or a search the cap cuts early, is done by the sorted walk alone; a
        // big one is searched on every core and put in order at the end.
        let budget = Instant::now() + opts.sorted_budget.unwrap_or(SORTED_BUDGET);
        let walk = |budget, out: &mut Collector, stderr: &mut String| {
            let (overrides, types) = (overrides.clone(), types.clone());
            search_sorted(
                target,
                cwd,
                opts,
                &matcher,
                (overrides, types),
                auth,
                out,
                stderr,
                cancel,
                budget,
            )
        };
        if !walk(Some(budget), &mut out, &mut stderr)? {
            let parallel = (overrides.clone(), types.clone());
            if let Some(listing) = search_parallel(target, opts, &matcher, parallel, auth, cancel)?
            {
                return Ok(listing);
            }
            out = Collector::new(opts.max_results);
            stderr.clear();
            walk(None, &mut out, &mut stderr)?;
        }
    } else {
        let name = target.file_name().map(Path::new).unwrap_or(target);
        if opts.hidden || !has_dot_component(name) {
            if let Err(err) = search_explicit(target, opts, &matcher, auth, &mut out, cancel) {
                push_line(
                    &mut stderr,
                    &rg_line(format_args!("./{}: {err}", name.display())),
                );
            }
        }
    }
    cancel.check()?;
    let mut listing = out.into_listing();
    listing.errors = stderr;
    Ok(listing)
}

/// How long the sorted search may run before [`grep`] searches on every core instead.
const SORTED_BUDGET: Duration = Duration::from_millis(10);

/// Searches the files below the directory `target` in walk order with one searcher, as `rg
/// --sort path` does, into `out` and `stderr`. Returns `false` when it was still going at
/// `budget` (neither the tree nor the cap reached; an error `rg` reports lifts the budget).
#[allow(clippy::too_many_arguments)]
fn search_sorted(
    target: &Path,
    cwd: &Path,
    opts: &GrepOptions,
    matcher: &RegexMatcher,
    (overrides, types): (Override, Types),
    auth: &dyn Authorize,
    out: &mut Collector,
    stderr: &mut String,
    cancel: &CancelFlag,
    budget: Option<Instant>,
) -> Result<bool> {
    let cuts = Cuts::new(&opts.pattern, opts.literal, opts.ignore_case);
    let matcher = &cuts.matcher(matcher, cancel);
    let mut searcher = searcher(opts.context, BinaryDetection::quit(0));
    for_each_file(
        target,
        cwd,
        ".",
        overrides,
        types,
        opts.hidden,
        cancel,
        budget,
        stderr,
        |errors, walked, printed| {
            let mut sink = FileSink::new(&walked, auth, out, cancel, Binary::Quit)
                .clipping(opts.clip.as_ref());
            // `search_path` without memory maps is `search_reader` on the opened file; the
            // reader wrapper lets a cancel interrupt a long file between reads.
            let result = open_walked(&walked, auth).and_then(|file| match file {
                Some((inner, _)) => {
                    searcher.search_reader(matcher, CancelReader { inner, cancel }, &mut sink)
                }
                None => Ok(()),
            });
            let stopped = sink.stopped();
            cancel.check()?;
            if let Err(err) = result {
                errors.push(&rg_line(format_args!("./{}: {err}", printed.display())));
            }
            Ok(!stopped)
        },
    )
}

/// The Rust-regex matcher `rg` builds (`HiArgs::matcher_rust`), with its error text.
pub(crate) fn matcher(opts: &GrepOptions) -> Result<RegexMatcher> {
    let mut builder = RegexMatcherBuilder::new();
    builder
        .multi_line(true)
        .unicode(true)
        .octal(false)
        .fixed_strings(opts.literal)
        .case_insensitive(opts.ignore_case)
        .line_terminator(Some(b'\n'))
        .dot_matches_new_line(false)
        .ban_byte(Some(b'\x00'));
    let escaped;
    let syntax = if opts.literal {
        escaped = regex_syntax::escape(&opts.pattern);
        escaped.as_str()
    } else {
        opts.pattern.as_str()
    };
    if let Err(msg) = crate::fs::text::pattern::capture_room(syntax, opts.ignore_case) {
        return Err(rg_failed(ErrorKind::InvalidPattern, &rg_line(msg)));
    }
    builder.build_many(&[opts.pattern.as_str()]).map_err(|err| {
        let text = suggest_text(suggest_multiline(err.to_string()));
        rg_failed(ErrorKind::InvalidPattern, &rg_line(text))
    })
}

/// `rg`'s hint for a literal line terminator in the pattern.
fn suggest_multiline(msg: String) -> String {
    if msg.contains("the literal") && msg.contains("not allowed") {
        format!(
            "{msg}\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\n\
             When multiline mode is enabled, new line characters can be matched."
        )
    } else {
        msg
    }
}

/// `rg`'s hint for a pattern that needs a NUL byte.
fn suggest_text(msg: String) -> String {
    if msg.contains("pattern contains \"\\0\"") {
        format!(
            "{msg}\n\nConsider enabling text mode with the --text flag (or -a for short). Otherwise,\n\
             binary detection is enabled and matching a NUL byte is impossible."
        )
    } else {
        msg
    }
}

/// The searcher `rg` builds (`HiArgs::searcher`), memory maps off.
pub(crate) fn searcher(context: usize, binary: BinaryDetection) -> Searcher {
    SearcherBuilder::new()
        .line_terminator(LineTerminator::byte(b'\n'))
        .invert_match(false)
        .line_number(true)
        .multi_line(false)
        .memory_map(MmapChoice::never())
        .stop_on_nonmatch(false)
        .before_context(context)
        .after_context(context)
        .binary_detection(binary)
        .build()
}

/// Searches the one file `rg` was given, which it memory-maps and searches as a slice.
///
/// A slice with a byte-order mark is transcoded through a reader in convert mode; any other
/// slice has its first 64 KiB checked for a NUL before the search and each reported line
/// checked during it. A file whose size is 0 maps to an empty slice.
fn search_explicit(
    path: &Path,
    opts: &GrepOptions,
    matcher: &RegexMatcher,
    auth: &dyn Authorize,
    out: &mut Collector,
    cancel: &CancelFlag,
) -> std::io::Result<()> {
    let Some((file, len)) = open_regular(path)? else {
        return Ok(());
    };
    if len == 0 {
        return Ok(());
    }
    let mut head = vec![0; (len as usize).min(SLICE_BINARY_WINDOW)];
    let mut filled = 0;
    while filled < head.len() {
        match file.read_at(&mut head[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(filled);
    let has_bom = head.starts_with(b"\xEF\xBB\xBF")
        || head.starts_with(b"\xFF\xFE")
        || head.starts_with(b"\xFE\xFF");
    let (detection, binary) = if has_bom {
        (BinaryDetection::convert(0), Binary::Convert)
    } else {
        let preset = memchr::memchr(0, &head).map(|i| i as u64);
        (BinaryDetection::none(), Binary::Slice { preset })
    };
    let mut searcher = searcher(opts.context, detection);
    let cuts = Cuts::new(&opts.pattern, opts.literal, opts.ignore_case);
    let matcher = &cuts.matcher(matcher, cancel);
    let mut sink = FileSink::new(path, auth, out, cancel, binary).clipping(opts.clip.as_ref());
    searcher.search_reader(
        matcher,
        CancelReader {
            inner: file,
            cancel,
        },
        &mut sink,
    )
}

/// Opens a file the walk saw as a regular file, for reading.
///
/// Hardening beyond `rg`, which only matters if the tree changes under the walk: the last
/// component is not followed (`O_NOFOLLOW`) and the open does not block (`O_NONBLOCK`), so a
/// file swapped for a symlink or a FIFO after it was listed is skipped (`Ok(None)`) rather
/// than followed or waited on. Gives the file with its size in bytes.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<Option<(File, u64)>> {
    regular(
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path),
    )
}

/// [`open_regular`] for a file the walk met, opened by [`Authorize::open`] where `auth` has
/// an opener (a symlink anywhere on the way, or a path out of its root, is skipped too).
pub(crate) fn open_walked(
    path: &Path,
    auth: &dyn Authorize,
) -> std::io::Result<Option<(File, u64)>> {
    match auth.open(path) {
        Some(opened) => regular(opened),
        None => open_regular(path),
    }
}

/// The opened file with its size when it is a regular file; `Ok(None)` for a symlink met
/// (`ELOOP`), a path out of the root (`EXDEV`) or anything not a regular file.
fn regular(opened: std::io::Result<File>) -> std::io::Result<Option<(File, u64)>> {
    let file = match opened {
        Ok(file) => file,
        Err(err) if matches!(err.raw_os_error(), Some(libc::ELOOP | libc::EXDEV)) => {
            return Ok(None)
        }
        Err(err) => return Err(err),
    };
    let meta = file.metadata()?;
    Ok(meta.is_file().then_some((file, meta.len())))
}

/// A reader that fails once the call is cancelled, so a long file stops between reads.
pub(crate) struct CancelReader<'a, R> {
    pub(crate) inner: R,
    pub(crate) cancel: &'a CancelFlag,
}

impl<R: Read> Read for CancelReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        self.inner.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_regular_skips_symlinks_and_fifos() {
        let tmp = crate::testing::tree(&[("f.txt", "x\n")]);
        let file = tmp.path().join("f.txt");
        assert!(open_regular(&file).unwrap().is_some());
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(open_regular(&link).unwrap().is_none());
        let fifo = tmp.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(open_regular(&fifo).unwrap().is_none());
        assert!(open_regular(&tmp.path().join("missing")).is_err());
    }

    #[test]
    fn regex_errors_carry_rg_hints() {
        let error = |pattern: &str| {
            matcher(&GrepOptions {
                pattern: pattern.into(),
                ..Default::default()
            })
            .unwrap_err()
            .message
        };
        assert_eq!(
            error("a\nb"),
            "ripgrep failed: rg: the literal \"\\n\" is not allowed in a regex\n\n\
             Consider enabling multiline mode with the --multiline flag (or -U for short).\n\
             When multiline mode is enabled, new line characters can be matched."
        );
        assert!(error("\\x00")
            .ends_with("binary detection is enabled and matching a NUL byte is impossible."));
        assert_eq!(
            error("(a)\\1"),
            "ripgrep failed: rg: regex parse error:\n    (?:(a)\\1)\n          ^^\nerror: backreferences are not supported"
        );
        assert!(matcher(&GrepOptions {
            pattern: "a.b(c".into(),
            literal: true,
            ..Default::default()
        })
        .is_ok());
    }
}
