//! `list_files` and `grep` through the workspace protocol with ripgrep's rules: the files an
//! [`RgWalk`] kept (or the one file named), their bytes searched by the same matcher, searcher
//! and sink the local `grep` uses ([`crate::fs::ripgrep`]), so the same tree gives the same
//! lines: context lines, file types, long-line previews, binary notices, the output cap and
//! `[... truncated at N lines]`, and with `report_skipped` the same `[skipped: ...]` counts.

use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher};

use super::ignore::RgWalk;
use super::posix::{is_hidden, relpath};
use super::*;
use crate::cancel::CancelFlag;
use crate::fs::disclosure::Skipped;
use crate::fs::ripgrep::grep::{matcher, searcher};
use crate::fs::ripgrep::sink::{Binary, FileSink};
use crate::fs::ripgrep::{has_dot_component, Collector, GrepOptions};
use crate::fs::text::names::escape_name;

/// `DEFAULT_BUFFER_CAPACITY` of grep-searcher: how much of an explicit file is checked for
/// binary data before it is searched (as `rg` checks a memory-mapped slice).
const SLICE_BINARY_WINDOW: usize = 64 * 1024;

/// One `grep` through the protocol: files fed in order (see [`Remote::rg_grep`]).
pub struct RgGrep {
    matcher: RegexMatcher,
    searcher: Searcher,
    context: usize,
    out: Collector,
    files: Vec<Entry>,
    /// The resolved target (a directory walked, or the file named).
    resolved: String,
    /// The display name of a file named explicitly (`None`: a directory was walked).
    named: Option<String>,
    /// Directories the walk could not list, then files that could not be read.
    unreadable: Vec<Unread>,
    skipped: Skipped,
    cancel: CancelFlag,
    /// `max_line_chars`: long lines clipped as the local `grep` clips them.
    clip: Option<crate::fs::read::clip::GrepClip>,
    /// Whether a name was shown escaped ([`escape_name`]).
    escaped: bool,
}

impl std::fmt::Debug for RgGrep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RgGrep")
            .field("resolved", &self.resolved)
            .finish_non_exhaustive()
    }
}

/// `grep` options as the core takes them.
#[derive(Debug, Clone, Default)]
pub struct RgGrepArgs {
    /// The pattern (ripgrep syntax, or text when `literal`).
    pub pattern: String,
    /// `--ignore-case`.
    pub ignore_case: bool,
    /// `--fixed-strings`.
    pub literal: bool,
    /// Lines before and after each match (checked 0..=20 by the caller).
    pub context: usize,
    /// `--hidden` (the glob names a dot entry): a hidden file named explicitly is searched.
    pub hidden: bool,
}

/// `outcome` ending with the escaped-names note when a name was shown escaped (as the local
/// walkers' results end, [`crate::fs::noting_escaped_names`]).
fn with_escaped_note(mut outcome: Outcome, escaped: bool) -> Outcome {
    if escaped {
        outcome.text.push('\n');
        outcome.text.push_str(crate::fs::text::ESCAPED_NOTE);
    }
    outcome
}

/// Whether `glob` makes `rg` walk hidden entries (`--hidden`), as the local tools decide.
pub fn rg_hidden(glob: Option<&str>) -> bool {
    glob.is_some_and(crate::fs::ripgrep::tool::names_hidden_for_rg)
}

/// Glob syntax `rg --glob` gives a meaning `fnmatch` lacks: `**`, braces, escapes, `[^`, and
/// a leading `!` or `/` (0.62.0 hands such a glob to `rg` even when it holds a `/`).
pub fn rg_only_glob(glob: &str) -> bool {
    glob.contains("**")
        || glob.contains(['{', '}', '\\'])
        || glob.contains("[^")
        || glob.starts_with(['!', '/'])
}

impl Remote {
    /// A ripgrep-rules walk of the directory `resolved` (see [`RgWalk`]).
    ///
    /// Errors: an unknown `file_type`, a glob `rg` rejects.
    pub fn rg_walk(
        &self,
        resolved: &str,
        glob: Option<&str>,
        file_type: Option<&str>,
    ) -> Result<RgWalk> {
        RgWalk::new(&self.root, resolved, glob, file_type, rg_hidden(glob))
    }

    /// The walk `search_files` makes of the directory `resolved`: ignore files apply, and
    /// an `include_glob` that 0.62.0 hands `rg` as `--glob` (no `/`, or syntax only `rg`
    /// reads) overrides them as there; a glob `rg` rejects is only matched afterwards.
    pub fn search_walk(
        &self,
        resolved: &str,
        include_glob: Option<&str>,
        include_hidden: bool,
    ) -> RgWalk {
        let glob = include_glob.filter(|g| !g.is_empty() && (!g.contains('/') || rg_only_glob(g)));
        let walk = RgWalk::new(&self.root, resolved, glob, None, include_hidden)
            .or_else(|_| RgWalk::new(&self.root, resolved, None, None, include_hidden));
        let walk = walk.expect("a walk without glob or type cannot fail");
        // The trailer counts what 0.62.0's walker counts; `report_skipped` what the local one does.
        if self.disclosure.report_skipped {
            walk
        } else {
            walk.hidden_before_glob()
        }
    }

    /// `list_files` from a finished walk (`None`: no directory at `resolved`): the kept files
    /// the patterns let the model see, sorted, relative to the working directory; at most
    /// `max_find_results`, then `[... truncated at N files]`; `No files found.` when empty.
    ///
    /// Errors: `Path 'p' is not a directory.`.
    pub fn rg_list(
        &self,
        path: &str,
        resolved: &str,
        walk: Option<RgWalk>,
        walk_cut: bool,
    ) -> Result<Outcome> {
        let mut walk = walk.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "Path {} is not a directory.",
                    crate::fs::text::py_repr(path)
                ),
            )
        })?;
        let skipped = Skipped {
            hidden: walk.hidden_skipped,
            ignored: walk.ignored_skipped,
            unreadable: walk.unreadable.len(),
            ..Default::default()
        };
        let hidden = walk.hidden;
        let unread = std::mem::take(&mut walk.unreadable);
        let max = self.limits.max_find_results;
        let mut out = Collector::new(max);
        let mut escaped = false;
        for file in walk.into_files() {
            if !hidden && is_hidden(&relpath(&file.path, resolved)) {
                continue;
            }
            if self.walk_entry(&file.path, resolved, true).is_none() {
                continue;
            }
            let shown = match escape_name(&relpath(&file.path, &self.cwd)) {
                Cow::Owned(name) => (name, true),
                Cow::Borrowed(name) => (name.to_string(), false),
            };
            if !out.push(shown.0) {
                break;
            }
            escaped |= shown.1;
        }
        let listing = out.into_listing();
        let outcome = Outcome::listing_text(
            self.event_path(resolved),
            listing.text,
            listing.count,
            listing.truncated,
            max,
            "files",
            "No files found.",
        );
        let (outcome, noted) = self.rg_trailers(outcome, walk_cut, Some(skipped), unread);
        Ok(with_escaped_note(outcome, escaped || noted))
    }

    /// A `grep` of `resolved`: a directory whose finished `walk` is given, or the file
    /// `path` named (`walk` `None`, `is_file`); `None` for both: nothing there.
    ///
    /// Errors, in the local `grep`'s order: `Path 'p' is not a file or directory.`, an unknown
    /// file type or bad glob (checked by the walk), a regex `rg` rejects.
    pub fn rg_grep(
        &self,
        path: &str,
        resolved: &str,
        is_file: bool,
        walk: Option<RgWalk>,
        args: &RgGrepArgs,
    ) -> Result<(RgGrep, Vec<Entry>)> {
        if walk.is_none() && !is_file {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "Path {} is not a file or directory.",
                    crate::fs::text::py_repr(path)
                ),
            ));
        }
        let opts = GrepOptions {
            pattern: args.pattern.clone(),
            ignore_case: args.ignore_case,
            literal: args.literal,
            context: args.context,
            ..Default::default()
        };
        let matcher = matcher(&opts)?;
        let mut skipped = Skipped::default();
        let mut unreadable = Vec::new();
        let (files, named) = match walk {
            Some(mut walk) => {
                unreadable = std::mem::take(&mut walk.unreadable);
                skipped.hidden = walk.hidden_skipped;
                skipped.ignored = walk.ignored_skipped;
                let hidden = walk.hidden;
                let files: Vec<Entry> = walk
                    .into_files()
                    .into_iter()
                    .filter(|f| hidden || !is_hidden(&relpath(&f.path, resolved)))
                    .collect();
                (files, None)
            }
            None => {
                let name = resolved.rsplit('/').next().unwrap_or("");
                let files = if !args.hidden && has_dot_component(Path::new(name)) {
                    Vec::new()
                } else {
                    vec![Entry {
                        path: resolved.to_string(),
                        is_dir: false,
                        size: None,
                    }]
                };
                (files, Some(relpath(resolved, &self.cwd)))
            }
        };
        let grep = RgGrep {
            matcher,
            searcher: searcher(args.context, BinaryDetection::quit(0)),
            context: args.context,
            out: Collector::new(self.limits.max_search_results),
            files: files.clone(),
            resolved: resolved.to_string(),
            named,
            unreadable,
            skipped,
            cancel: CancelFlag::new(),
            escaped: false,
            clip: self.disclosure.max_line_chars.map(|max| {
                crate::fs::read::clip::GrepClip::new(
                    max,
                    &args.pattern,
                    args.literal,
                    args.ignore_case,
                )
            }),
        };
        Ok((grep, files))
    }

    /// Searches the bytes of file `index` of `grep` (`None`: it could not be read, for the
    /// backend error numbered `errno`, `None` unknown); returns whether the output cap was
    /// passed (read no further).
    pub fn rg_feed(
        &self,
        grep: &mut RgGrep,
        index: usize,
        data: Option<&[u8]>,
        errno: Option<i32>,
    ) -> bool {
        self.rg_feed_reader(grep, index, data, errno)
    }

    /// [`Remote::rg_feed`] of bytes read as they come (a file too big to move whole, read in
    /// pieces): the same lines the whole bytes give, in memory bounded by the searcher's buffer.
    /// A read error ends the file's search where it happened.
    pub fn rg_feed_reader<R: std::io::Read>(
        &self,
        grep: &mut RgGrep,
        index: usize,
        data: Option<R>,
        errno: Option<i32>,
    ) -> bool {
        if grep.out.is_full() {
            return true;
        }
        let Some(entry) = grep.files.get(index) else {
            return false;
        };
        let Some(data) = data else {
            grep.unreadable.push(Unread::new(&entry.path, errno));
            return false;
        };
        let start = match &grep.named {
            Some(_) => entry.path.rsplit_once('/').map_or("/", |(p, _)| p),
            None => grep.resolved.as_str(),
        };
        let shown: Option<String> = self
            .walk_entry(
                &entry.path,
                if start.is_empty() { "/" } else { start },
                true,
            )
            .map(|_| {
                grep.named
                    .clone()
                    .unwrap_or_else(|| relpath(&entry.path, &self.cwd))
            });
        let (shown, escapes) = match shown {
            Some(name) => match escape_name(&name) {
                Cow::Owned(escaped) => (Some(escaped), true),
                Cow::Borrowed(_) => (Some(name), false),
            },
            None => (None, false),
        };
        let used = AtomicBool::new(false);
        let auth = |_: &Path| {
            used.store(true, Ordering::Relaxed);
            shown.clone()
        };
        let walked = Path::new(&entry.path);
        let RgGrep {
            matcher,
            searcher: walk_searcher,
            out,
            cancel,
            clip,
            ..
        } = grep;
        if grep.named.is_none() {
            let mut sink =
                FileSink::new(walked, &auth, out, cancel, Binary::Quit).clipping(clip.as_ref());
            let _ = walk_searcher.search_reader(&*matcher, data, &mut sink);
        } else {
            // The one file `rg` was given, which it searches as a memory-mapped slice.
            let mut data = data;
            let mut first = Vec::new();
            let _ = std::io::Read::read_to_end(
                &mut std::io::Read::take(&mut data, SLICE_BINARY_WINDOW as u64),
                &mut first,
            );
            let head = first.as_slice();
            let has_bom = head.starts_with(b"\xEF\xBB\xBF")
                || head.starts_with(b"\xFF\xFE")
                || head.starts_with(b"\xFE\xFF");
            let (detection, binary) = if has_bom {
                (BinaryDetection::convert(0), Binary::Convert)
            } else {
                let preset = memchr::memchr(0, head).map(|i| i as u64);
                (BinaryDetection::none(), Binary::Slice { preset })
            };
            if !head.is_empty() {
                let mut explicit = searcher(grep.context, detection);
                let mut sink =
                    FileSink::new(walked, &auth, out, cancel, binary).clipping(clip.as_ref());
                let data = std::io::Read::chain(head, data);
                let _ = explicit.search_reader(&*matcher, data, &mut sink);
            }
        }
        grep.escaped |= escapes && used.load(Ordering::Relaxed);
        grep.out.is_full()
    }

    /// The `grep` result: its lines, `[... truncated at N lines]` or `No matches found.`, the
    /// unreadable files named, and with `report_skipped` (a directory walked) the counts.
    pub fn rg_grep_result(&self, grep: RgGrep, walk_cut: bool) -> Outcome {
        let listing = grep.out.into_listing();
        let mut skipped = grep.skipped;
        skipped.binary = listing.binary_skipped;
        skipped.unreadable = grep.unreadable.len();
        let outcome = Outcome::listing_text(
            self.event_path(&grep.resolved),
            listing.text,
            listing.count,
            listing.truncated,
            self.limits.max_search_results,
            "lines",
            "No matches found.",
        );
        let skipped = grep.named.is_none().then_some(skipped);
        let (outcome, noted) = self.rg_trailers(outcome, walk_cut, skipped, grep.unreadable);
        with_escaped_note(outcome, grep.escaped || noted)
    }

    /// The notes a ripgrep-rules result ends with: what could not be read (as the host
    /// walkers name it, [`Remote::unreadable_notes`]), a walk cut at its caps, and with
    /// `report_skipped` what was skipped. Also returns whether a name was shown escaped.
    fn rg_trailers(
        &self,
        mut outcome: Outcome,
        walk_cut: bool,
        skipped: Option<Skipped>,
        unreadable: Vec<Unread>,
    ) -> (Outcome, bool) {
        let (notes, escaped) = self.unreadable_notes(unreadable);
        for note in notes {
            outcome.text.push('\n');
            outcome.text.push_str(&note);
        }
        if walk_cut {
            outcome.truncated = true;
            outcome.text.push_str(&format!(
                "\n[... walk cut short after {MAX_WALK_DIRECTORIES} directories or {MAX_WALK_ENTRIES} entries; narrow the path]"
            ));
        }
        let outcome = match skipped {
            Some(skipped) if self.disclosure.report_skipped => outcome.with_skipped(skipped),
            _ => outcome,
        };
        (outcome, escaped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::contract::Contract;
    use crate::fs::tests::limits;

    fn remote(max: usize) -> Remote {
        let mut l = limits();
        l.contract = Contract::Workspace;
        l.max_search_results = max;
        Remote::new("/ws", "/ws", false, &[], &[], &[], l).unwrap()
    }

    fn file(path: &str) -> Entry {
        Entry {
            path: path.into(),
            is_dir: false,
            size: Some(8),
        }
    }

    fn grep(r: &Remote, context: usize, data: &[u8]) -> Outcome {
        let mut walk = r.rg_walk("/ws", None, Some("py")).unwrap();
        walk.listed("/ws", vec![file("/ws/b.txt"), file("/ws/a.py")]);
        walk.enter("/ws");
        let args = RgGrepArgs {
            pattern: "x".into(),
            context,
            ..Default::default()
        };
        let (mut g, files) = r.rg_grep(".", "/ws", false, Some(walk), &args).unwrap();
        assert_eq!(files, [file("/ws/a.py")]);
        r.rg_feed(&mut g, 0, Some(data), None);
        r.rg_grep_result(g, false)
    }

    /// What could not be read is named as the host walkers name it: one note per reason,
    /// sorted, root-relative, a name that is not UTF-8 escaped (and said to be).
    #[test]
    fn unreadable_notes_read_as_the_host_walkers_notes() {
        let r = remote(10);
        let (notes, escaped) = r.unreadable_notes(vec![
            Unread::new("/ws/secret.txt", Some(libc::EACCES)),
            Unread::new("/ws/bad\0\u{ff}.txt", Some(libc::EACCES)),
            Unread::new("/ws/sub", Some(libc::EIO)),
        ]);
        assert_eq!(
            notes,
            [
                "[2 paths could not be read (Permission denied): 'bad\\udcff.txt', secret.txt]",
                "[1 path could not be read (Input/output error): sub]",
            ]
        );
        assert!(escaped);
    }

    /// Bytes handed in are searched as the local `grep` searches a file: context lines,
    /// file types, the cap and its line.
    #[test]
    fn grep_renders_context_types_and_the_cap() {
        let o = grep(&remote(10), 1, b"a\nx\nb\nc\n");
        assert_eq!(o.text, "a.py-1-a\na.py:2:x\na.py-3-b");
        let o = grep(&remote(2), 0, b"x\nx\nx\n");
        assert_eq!(o.text, "a.py:1:x\na.py:2:x\n[... truncated at 2 lines]");
        assert!(o.truncated);
    }
}
