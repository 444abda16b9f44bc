//! `search_files` over files fed one by one in path order, with the core's regex engines.

use super::*;
use crate::fs::read::hash::is_binary;
use crate::fs::root::access::Fnmatch;
use crate::fs::search::lines::matching_lines;
use crate::fs::text::pattern::Pattern;

/// One content search over files handed in one by one, in order: `search_files` (and the
/// walker form of `grep`). Source: `_search_files`.
#[derive(Debug)]
pub struct Search {
    pattern: Pattern,
    include_glob: Option<Fnmatch>,
    /// Whether the walk enters hidden directories (the glob names one).
    pub include_hidden: bool,
    resolved: String,
    candidates: Vec<Entry>,
    results: Vec<String>,
    skipped: Vec<String>,
    /// Directories the walk could not list (named as the host walkers name them).
    unlisted: Vec<Unread>,
    hidden: usize,
    /// Entries ignore files left out of the walk (`report_skipped`).
    ignored: usize,
    /// Files not searched as binary (`report_skipped`).
    binary: usize,
    capped: bool,
    /// Whether a label was shown escaped ([`crate::fs::text::names::escape_name`]).
    escaped: bool,
}

impl Remote {
    /// Compiles a search from `resolved` (already resolved and checked).
    ///
    /// Errors: `Invalid regex pattern: <message>`.
    pub fn search(
        &self,
        pattern: &str,
        resolved: &str,
        include_glob: Option<&str>,
    ) -> Result<Search> {
        let compiled = Pattern::new(pattern)?;
        let glob = include_glob.filter(|g| !g.is_empty());
        Ok(Search {
            pattern: compiled,
            include_glob: glob.map(crate::fs::root::braces::fnmatch).transpose()?,
            include_hidden: glob.is_some_and(explicit_hidden),
            resolved: resolved.to_string(),
            candidates: Vec::new(),
            results: Vec::new(),
            skipped: Vec::new(),
            unlisted: Vec::new(),
            hidden: 0,
            ignored: 0,
            binary: 0,
            capped: false,
            escaped: false,
        })
    }

    /// Sets the files to search from what `stat` found at the start (`None`: nothing, a file,
    /// or a directory whose walked `entries` are given) and returns them: sorted, filtered by
    /// the walk rules and `include_glob`. Files over [`MAX_SEARCH_FILE_BYTES`] are counted as
    /// skipped here and not returned.
    pub fn search_files_of(
        &self,
        search: &mut Search,
        start: Option<&Entry>,
        entries: Vec<Entry>,
    ) -> Vec<Entry> {
        let files: Vec<Entry> = match start {
            None => Vec::new(),
            Some(e) if !e.is_dir => vec![e.clone()],
            Some(_) => {
                if !search.include_hidden {
                    search.hidden = entries
                        .iter()
                        .filter(|e| is_hidden(&relpath(&e.path, &search.resolved)))
                        .count();
                }
                entries.into_iter().filter(|e| !e.is_dir).collect()
            }
        };
        let mut files = files;
        files.sort_by(|a, b| a.path.split('/').cmp(b.path.split('/')));
        let mut keep = Vec::new();
        for file in files {
            let Some(rel) = self.walk_entry(&file.path, &search.resolved, search.include_hidden)
            else {
                continue;
            };
            if search
                .include_glob
                .as_ref()
                .is_some_and(|g| !g.is_match(&rel))
            {
                continue;
            }
            keep.push(file);
        }
        search.candidates = keep.clone();
        keep
    }

    /// Counts `count` hidden entries for the trailer instead of those among the walked
    /// entries (a ripgrep-rules walk hands in only the files it kept).
    pub fn search_hidden(&self, search: &mut Search, count: usize, ignored: usize) {
        if !search.include_hidden {
            search.hidden = count;
        }
        search.ignored = ignored;
    }

    /// Takes the directories `walk` could not list, for the result's note and counts.
    pub fn search_unlisted(&self, search: &mut Search, walk: &mut super::RgWalk) {
        search.unlisted.append(&mut walk.unreadable);
    }

    /// Searches one candidate's bytes (`None`: the backend could not read it, or it is over
    /// [`MAX_SEARCH_FILE_BYTES`]); returns whether the match cap was hit (stop feeding).
    pub fn search_feed(&self, search: &mut Search, index: usize, data: Option<&[u8]>) -> bool {
        let Some(entry) = search.candidates.get(index) else {
            return search.capped;
        };
        let label = relpath(&entry.path, &self.cwd);
        let label = match crate::fs::text::names::escape_name(&label) {
            std::borrow::Cow::Owned(shown) => {
                search.escaped = true;
                shown
            }
            std::borrow::Cow::Borrowed(_) => label,
        };
        let Some(data) = data.filter(|d| d.len() as u64 <= MAX_SEARCH_FILE_BYTES) else {
            search.skipped.push(label);
            return false;
        };
        if search.capped {
            return true;
        }
        if is_binary(data) {
            search.binary += 1;
            return false;
        }
        let text = String::from_utf8_lossy(data);
        let left = self
            .limits
            .max_search_results
            .saturating_sub(search.results.len());
        let (mut lines, capped) = matching_lines(&text, &search.pattern, None, &label, left);
        if let Some(max) = self.disclosure.max_line_chars {
            crate::fs::read::clip::clip_hits(&mut lines, &label, &search.pattern, max);
        }
        search.results.extend(lines);
        search.capped = capped;
        capped
    }

    /// The search's result; `walk_cut`: the walk stopped at its caps.
    pub fn search_result(&self, search: Search, walk_cut: bool) -> Outcome {
        let count = search.results.len();
        let mut lines = search.results;
        if search.capped {
            lines.push(format!(
                "[... truncated at {} matches]",
                self.limits.max_search_results
            ));
        }
        if !search.skipped.is_empty() {
            let named: Vec<&str> = search
                .skipped
                .iter()
                .take(MAX_SKIPPED_NAMED)
                .map(String::as_str)
                .collect();
            lines.push(format!(
                "[{} files skipped (too large or unreadable): {}{}]",
                search.skipped.len(),
                named.join(", "),
                if search.skipped.len() > MAX_SKIPPED_NAMED {
                    ", ..."
                } else {
                    ""
                }
            ));
        }
        let unlisted = search.unlisted.len();
        let (notes, noted) = self.unreadable_notes(search.unlisted);
        if lines.is_empty() && !notes.is_empty() {
            lines.push("No matches found.".to_string());
        }
        lines.extend(notes);
        let mut text = self.walk_text(
            lines,
            walk_cut,
            crate::fs::disclosure::Skipped {
                hidden: search.hidden,
                ignored: search.ignored,
                binary: search.binary,
                unreadable: search.skipped.len() + unlisted,
            },
        );
        if search.escaped || noted {
            text.push('\n');
            text.push_str(crate::fs::text::names::ESCAPED_NOTE);
        }
        Outcome {
            text,
            path: self.event_path(&search.resolved),
            count,
            truncated: search.capped || walk_cut,
            emit: true,
            ..Default::default()
        }
    }
}
