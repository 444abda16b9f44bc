//! `list_directory` from one listing and `find_files` over a walk's entries, with 0.62.0's glob
//! (`**` spans directories, `*` stays in a component).

use super::*;
use crate::fs::root::access::Fnmatch;
use crate::fs::text::py_repr;

/// A compiled `find_files` glob: its components and whether it only matches directories.
#[derive(Debug)]
pub struct Glob {
    parts: Vec<GlobPart>,
    recursive: bool,
    directories_only: bool,
    /// Whether the glob names a hidden component (the walk then enters hidden directories).
    pub include_hidden: bool,
}

#[derive(Debug)]
enum GlobPart {
    Any,
    Name(Fnmatch),
}

impl Glob {
    /// Splits and compiles a relative glob.
    ///
    /// Errors: `Pattern 'p' must be relative to the search path, not absolute.`,
    /// `Pattern 'p' is not a valid glob pattern.` (empty, or a `..` component).
    /// Source: `_find_files`, `glob_parts`.
    pub fn new(pattern: &str) -> Result<Self> {
        let invalid = |m: String| Error::new(ErrorKind::InvalidPattern, m);
        if pattern.starts_with('/') {
            return Err(invalid(format!(
                "Pattern {} must be relative to the search path, not absolute.",
                py_repr(pattern)
            )));
        }
        let names: Vec<&str> = pattern
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if names.is_empty() || names.contains(&"..") {
            return Err(invalid(format!(
                "Pattern {} is not a valid glob pattern.",
                py_repr(pattern)
            )));
        }
        crate::fs::root::braces::check_components(pattern)?;
        let mut parts = Vec::with_capacity(names.len());
        for name in &names {
            parts.push(if *name == "**" {
                GlobPart::Any
            } else {
                GlobPart::Name(crate::fs::root::braces::fnmatch(name)?)
            });
        }
        Ok(Glob {
            recursive: names.contains(&"**"),
            parts,
            directories_only: pattern.ends_with('/'),
            include_hidden: explicit_hidden(pattern),
        })
    }

    /// Levels below the start a walk needs to list: `None` with a `**`.
    pub fn max_depth(&self) -> Option<usize> {
        (!self.recursive).then_some(self.parts.len())
    }

    /// `glob_match`: `*`, `?`, `[...]` within one component, `**` any number of them.
    pub fn is_match(&self, rel: &str) -> bool {
        let path: Vec<&str> = rel.split('/').collect();
        let (np, nq) = (self.parts.len(), path.len());
        // ok[p][q]: parts[p..] match path[q..]; filled from the end.
        let mut ok = vec![vec![false; nq + 1]; np + 1];
        ok[np][nq] = true;
        for p in (0..np).rev() {
            for q in (0..=nq).rev() {
                ok[p][q] = match &self.parts[p] {
                    GlobPart::Any => (q..=nq).any(|i| ok[p + 1][i]),
                    GlobPart::Name(m) => q < nq && m.is_match(path[q]) && ok[p + 1][q + 1],
                };
            }
        }
        ok[0][0]
    }
}

impl Remote {
    /// `list_directory` from one listing (`None`: the backend found no directory there).
    /// Entries with an unknown size show `(size unknown)`. Source: `_list_directory`.
    pub fn list_directory(
        &self,
        path: &str,
        resolved: &str,
        entries: Option<Vec<Entry>>,
    ) -> Result<Outcome> {
        let mut entries = entries.ok_or_else(|| not_a_directory(path))?;
        entries.sort_by(|a, b| a.name().cmp(b.name()));
        let max = self.limits.max_list_results;
        let (mut lines, mut shown, mut hidden, mut truncated) = (Vec::new(), 0, 0, false);
        for entry in &entries {
            if entry.name().starts_with('.') {
                hidden += 1;
            }
            if self.walk_entry(&entry.path, resolved, false).is_none() {
                continue;
            }
            let rel = relpath(&entry.path, &self.cwd);
            let rel = crate::fs::text::names::escape_name(&rel);
            let line = match (entry.is_dir, entry.size) {
                (true, _) => format!("{rel}/"),
                (false, Some(n)) => format!("{rel}  ({n} bytes)"),
                (false, None) => format!("{rel}  (size unknown)"),
            };
            if lines.len() >= max {
                lines.push(format!("[... truncated at {max} entries]"));
                truncated = true;
                break;
            }
            lines.push(line);
            shown += 1;
        }
        let skipped = crate::fs::disclosure::Skipped {
            hidden,
            ..Default::default()
        };
        let skipped_line = skipped.line().filter(|_| self.disclosure.report_skipped);
        if hidden > 0 && !self.disclosure.report_skipped {
            lines.push(format!(
                "[{hidden} hidden entries omitted; name a hidden path explicitly to include it]"
            ));
        }
        let mut text = if lines.is_empty() {
            "(empty directory)".to_string()
        } else {
            lines.join("\n")
        };
        if let Some(line) = skipped_line {
            text.push('\n');
            text.push_str(&line);
        }
        Ok(Outcome {
            text,
            path: self.event_path(resolved),
            count: shown,
            truncated,
            emit: true,
            ..Default::default()
        })
    }

    /// `find_files` (or, with `files_only`, the walker form of `list_files`) over the entries
    /// a walk from `resolved` collected (`None`: no directory there); `unlisted`: the
    /// directories below it the backend could not list, named in a note as the host walkers
    /// name them (0.62.0 drops them silently).
    ///
    /// Errors: `Not a directory: p`. Source: `_find_files`.
    #[allow(clippy::too_many_arguments)]
    pub fn find_files(
        &self,
        glob: &Glob,
        path: &str,
        resolved: &str,
        entries: Option<Vec<Entry>>,
        walk_cut: bool,
        files_only: bool,
        unlisted: Vec<Unread>,
    ) -> Result<Outcome> {
        let entries = entries.ok_or_else(|| not_a_directory(path))?;
        let rel_of = |e: &Entry| relpath(&e.path, resolved);
        let hidden = if glob.include_hidden {
            0
        } else {
            entries
                .iter()
                .filter(|e| {
                    let rel = rel_of(e);
                    is_hidden(&rel) && ((e.is_dir && glob.recursive) || glob.is_match(&rel))
                })
                .count()
        };
        let mut matched: Vec<&Entry> = entries
            .iter()
            .filter(|e| {
                (if files_only {
                    !e.is_dir
                } else {
                    e.is_dir || !glob.directories_only
                }) && glob.is_match(&rel_of(e))
            })
            .collect();
        matched.sort_by(|a, b| a.path.split('/').cmp(b.path.split('/')));
        let max = self.limits.max_find_results;
        let (mut lines, mut capped) = (Vec::new(), false);
        for e in matched {
            if self
                .walk_entry(&e.path, resolved, glob.include_hidden)
                .is_none()
            {
                continue;
            }
            if lines.len() >= max {
                capped = true;
                break;
            }
            let suffix = if e.is_dir { "/" } else { "" };
            let rel = relpath(&e.path, &self.cwd);
            lines.push(format!(
                "{}{suffix}",
                crate::fs::text::names::escape_name(&rel)
            ));
        }
        let count = lines.len();
        if capped {
            lines.push(format!("[... truncated at {max} matches]"));
        }
        let unreadable = unlisted.len();
        let notes = self.unreadable_notes(unlisted).0;
        if lines.is_empty() && !notes.is_empty() {
            lines.push("No matches found.".to_string());
        }
        lines.extend(notes);
        Ok(Outcome {
            text: self.walk_text(
                lines,
                walk_cut,
                crate::fs::disclosure::Skipped {
                    hidden,
                    unreadable,
                    ..Default::default()
                },
            ),
            path: self.event_path(resolved),
            count,
            truncated: capped || walk_cut,
            emit: true,
            ..Default::default()
        })
    }
}
