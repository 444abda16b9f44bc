//! `list_files` and `grep` on a [`FileSystem`]: the ripgrep engine ([`crate::fs::ripgrep`]) behind
//! the same resolution, containment, dotfile rule and access patterns as the other walkers.
//!
//! The engine walks the resolved (symlink-free) root without following links, so each path it
//! yields is real; [`FileSystem::walk_target`] then checks containment and read access, and the
//! model sees the path relative to `cwd`. Source: `_list_files`, `_grep`, `_ripgrep_entry`,
//! pydantic_ai_harness/filesystem/_toolset.py (0.36.0), which runs the `rg` executable instead.

use std::path::Path;

use crate::cancel::CancelFlag;
use crate::error::{Error, ErrorKind, Result};
use crate::fs::ripgrep::{self, GrepOptions, ListFilesOptions, Listing};
use crate::fs::root::path::{is_dir, is_reg, Resolved};
use crate::fs::text::py_repr;
use crate::fs::unreadable::{from_rg_lines, Unreadable};
use crate::fs::{FileSystem, Outcome};

/// Whether 0.62.0 passes `rg --hidden` for `glob`: it names a hidden file or directory (a
/// component starting with `.` other than `.`/`..`, or a brace alternative starting with one,
/// as in `{.github,src}`), and does not start with the excluding `!`.
/// Source: `_ripgrep_hidden`, _toolset.py (0.62.0).
pub fn names_hidden_for_rg(glob: &str) -> bool {
    !glob.starts_with('!')
        && glob.split('/').any(|part| {
            (part.starts_with('.') && part != "." && part != "..")
                || part.contains("{.")
                || part.contains(",.")
        })
}

/// What a `list_files` / `grep` root is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Directory,
}

impl FileSystem {
    /// `list_files`: regular files below `path` (relative to `cwd`), recursively, sorted by
    /// path, with ripgrep's ignore rules and an optional `glob`; at most `max_find_results`,
    /// then `[... truncated at N files]`; `No files found.` when empty.
    ///
    /// Errors: `Path 'p' is not a directory.` (NotFound), containment and denied patterns on
    /// the root, an invalid glob (InvalidPattern).
    pub fn list_files(
        &self,
        path: &str,
        glob: Option<&str>,
        cancel: &CancelFlag,
    ) -> Result<Outcome> {
        self.list_files_within(path, glob, cancel, None)
    }

    /// [`FileSystem::list_files`], the sorted walk given `budget` (`None`: the engine's
    /// default) before the listing is walked on every core instead (the same result).
    pub(crate) fn list_files_within(
        &self,
        path: &str,
        glob: Option<&str>,
        cancel: &CancelFlag,
        budget: Option<std::time::Duration>,
    ) -> Result<Outcome> {
        let (resolved, kind) = self.ripgrep_root(path)?;
        if kind != Some(Kind::Directory) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("Path {} is not a directory.", py_repr(path)),
            ));
        }
        let options = ListFilesOptions {
            glob: glob.map(str::to_owned),
            hidden: self.limits.contract.is_workspace() && glob.is_some_and(names_hidden_for_rg),
            max_results: self.limits.max_find_results,
            sorted_budget: budget,
        };
        let mut listing = ripgrep::list_files(&resolved.abs, &options, &Entries(self), cancel)?;
        let unreadable = self.unreadable_of(&mut listing, &resolved.abs)?;
        let cap = self.limits.max_find_results;
        let outcome = listed(&resolved, listing, cap, "files", "No files found.");
        let outcome = self.with_unreadable(outcome, &unreadable);
        let found = (0, unreadable.len());
        self.ripgrep_skipped(
            outcome,
            &resolved,
            glob,
            None,
            options.hidden,
            found,
            cancel,
        )
    }

    /// `grep`: lines matching `pattern` in the file or below the directory `path`, as
    /// `path:line:text` (context lines `path-line-text`), sorted by path; at most
    /// `max_search_results` lines, then `[... truncated at N lines]`; `No matches found.`.
    ///
    /// `context` is lines before and after each match (the caller checks 0..=20).
    /// Errors: `Path 'p' is not a file or directory.` (NotFound), a pattern, glob or file type
    /// ripgrep rejects (InvalidPattern, with ripgrep's message), containment and denied patterns.
    #[allow(clippy::too_many_arguments)]
    pub fn grep(
        &self,
        pattern: &str,
        path: &str,
        glob: Option<&str>,
        file_type: Option<&str>,
        ignore_case: bool,
        literal: bool,
        context: usize,
        cancel: &CancelFlag,
    ) -> Result<Outcome> {
        let (resolved, kind) = self.ripgrep_root(path)?;
        if kind.is_none() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("Path {} is not a file or directory.", py_repr(path)),
            ));
        }
        let options = GrepOptions {
            pattern: pattern.to_owned(),
            glob: glob.map(str::to_owned),
            file_type: file_type.map(str::to_owned),
            ignore_case,
            literal,
            context,
            hidden: self.limits.contract.is_workspace() && glob.is_some_and(names_hidden_for_rg),
            max_results: self.limits.max_search_results,
            clip: self.disclosure.max_line_chars.map(|max| {
                crate::fs::read::clip::GrepClip::new(max, pattern, literal, ignore_case)
            }),
            sorted_budget: None,
        };
        // Workspace: a file named explicitly is shown by the name it was reached by (0.62.0
        // prints what `rg` was given), not its resolved target's.
        let named = (self.limits.contract.is_workspace() && kind == Some(Kind::File))
            .then(|| self.named_path(path));
        let searched = Searched {
            fs: self,
            named,
            beneath: self.root.open_root_if_exists()?,
        };
        let mut listing = ripgrep::grep(&resolved.abs, &options, &searched, cancel)?;
        let rg_cwd = if kind == Some(Kind::Directory) {
            resolved.abs.as_path()
        } else {
            resolved.abs.parent().unwrap_or(&resolved.abs)
        };
        let unreadable = self.unreadable_of(&mut listing, rg_cwd)?;
        let binary = listing.binary_skipped;
        let cap = self.limits.max_search_results;
        let outcome = listed(&resolved, listing, cap, "lines", "No matches found.");
        let outcome = self.with_unreadable(outcome, &unreadable);
        if kind != Some(Kind::Directory) {
            return Ok(outcome);
        }
        self.ripgrep_skipped(
            outcome,
            &resolved,
            glob,
            file_type,
            options.hidden,
            (binary, unreadable.len()),
            cancel,
        )
    }

    /// The walk root: resolved, contained, not denied (allowed patterns apply to entries only);
    /// with what it is, `None` when it is missing or neither a regular file nor a directory.
    ///
    /// Errors: a directory root that cannot be opened is the OS error on its name
    /// (`Permission denied: 'p'`), as the reference's `rg` run in that directory fails to
    /// start, rather than `rg`'s complaint about `./`.
    fn ripgrep_root(&self, path: &str) -> Result<(Resolved, Option<Kind>)> {
        let (resolved, st) = self.walk_root(path)?;
        let kind = match st.map(|s| s.st_mode) {
            Some(mode) if is_dir(mode) => Some(Kind::Directory),
            Some(mode) if is_reg(mode) => Some(Kind::File),
            _ => None,
        };
        if kind == Some(Kind::Directory) {
            let fd = self
                .root
                .open_root()?
                .open(&resolved.rel, libc::O_RDONLY | libc::O_DIRECTORY, 0)
                .map_err(|e| self.root.open_error(&e, path, &resolved.rel))?;
            crate::fs::walk::check_searchable(&fd)
                .map_err(|e| self.root.os_error(&e, Some(&resolved.rel)))?;
        }
        Ok((resolved, kind))
    }

    /// The paths a walk could not read, from `listing`'s error lines (`rg`'s working
    /// directory `cwd`). A line of another kind fails the call as before (`ripgrep failed:
    /// rg: ...`), unless the cap cut the walk short (then `rg` would have been stopped first).
    fn unreadable_of(&self, listing: &mut Listing, cwd: &Path) -> Result<Vec<Unreadable>> {
        let errors = std::mem::take(&mut listing.errors);
        if errors.is_empty() {
            return Ok(Vec::new());
        }
        match from_rg_lines(&errors, cwd) {
            Some(unreadable) => Ok(unreadable),
            None if listing.truncated => Ok(Vec::new()),
            None => Err(ripgrep::rg_failed(ErrorKind::InvalidArgument, &errors)),
        }
    }

    /// `outcome` with what the walk of directory `resolved` skipped when `report_skipped`
    /// ([`crate::fs::ripgrep::skipped::ripgrep_skipped`], plus `binary` unsearched and
    /// `unreadable` unread paths: `found`).
    #[allow(clippy::too_many_arguments)]
    fn ripgrep_skipped(
        &self,
        outcome: Outcome,
        resolved: &Resolved,
        glob: Option<&str>,
        file_type: Option<&str>,
        hidden: bool,
        (binary, unreadable): (usize, usize),
        cancel: &CancelFlag,
    ) -> Result<Outcome> {
        if !self.disclosure.report_skipped {
            return Ok(outcome);
        }
        let mut skipped = crate::fs::ripgrep::skipped::ripgrep_skipped(
            &resolved.abs,
            glob,
            file_type,
            hidden,
            cancel,
        )?;
        skipped.binary = binary;
        skipped.unreadable = unreadable;
        cancel.check()?;
        Ok(outcome.with_skipped(skipped))
    }

    /// `_ripgrep_entry`: drop a walked path outside the root or unreadable; else its name
    /// relative to `cwd`. The engine has already dropped paths with a dot component below the
    /// directory it walks (the dotfile rule), and yields only real paths (it follows no links).
    fn ripgrep_entry(&self, walked: &Path) -> Option<String> {
        if self.access.is_unrestricted() {
            // `walk_target` without its copies: only containment is left to check.
            crate::fs::root::path::strip_base(walked, self.root.real_root())?;
            return Some(self.root.rel_to_cwd(walked));
        }
        let target = self.walk_target(walked, true)?;
        Some(self.root.rel_to_cwd(&target.abs))
    }
}

/// `grep`'s view of its walk: [`FileSystem::ripgrep_entry`] per file with hits (or the name
/// a file was given by), each file opened beneath the root descriptor.
struct Searched<'a> {
    fs: &'a FileSystem,
    /// Workspace: the name an explicitly named file is shown by.
    named: Option<String>,
    beneath: Option<crate::fs::root::path::Beneath>,
}

impl ripgrep::Authorize for Searched<'_> {
    fn authorize(&self, walked: &Path) -> Option<String> {
        let shown = self.fs.ripgrep_entry(walked)?;
        Some(self.named.clone().unwrap_or(shown))
    }

    fn open(&self, walked: &Path) -> Option<std::io::Result<std::fs::File>> {
        let beneath = self.beneath.as_ref()?;
        let Some(rel) = self.fs.root.rel_to_root(walked) else {
            return Some(Err(std::io::Error::from_raw_os_error(libc::EXDEV)));
        };
        let opened = beneath.open(&rel, libc::O_RDONLY | libc::O_NONBLOCK, 0);
        Some(opened.map(std::fs::File::from))
    }
}

/// `list_files`' view of its walk: [`FileSystem::ripgrep_entry`] per file, or the prefix every
/// file is shown with ([`FileSystem::plain_prefix`]).
struct Entries<'a>(&'a FileSystem);

impl ripgrep::Authorize for Entries<'_> {
    fn authorize(&self, walked: &Path) -> Option<String> {
        self.0.ripgrep_entry(walked)
    }

    fn plain_prefix(&self, root: &Path) -> Option<String> {
        self.0.plain_prefix(root)
    }
}

/// `listing` as the tool's result for `resolved`: its lines, then `[... truncated at {cap}
/// {unit}]` when the cap cut it, or `empty` when it has none.
fn listed(resolved: &Resolved, listing: Listing, cap: usize, unit: &str, empty: &str) -> Outcome {
    let (text, count, truncated) = (listing.text, listing.count, listing.truncated);
    Outcome::listing_text(
        resolved.event_str(),
        text,
        count,
        truncated,
        cap,
        unit,
        empty,
    )
}

#[cfg(test)]
mod tests {
    use crate::cancel::CancelFlag;
    use crate::fs::walk::named::tests::{each_layout, show, tree};
    use std::time::Duration;

    /// `grep` opens each walked file beneath the root descriptor: a path through a symlink
    /// (a directory swapped for one after the walk listed it) is refused, where opening by
    /// the path with only its last component not followed would read the link's target.
    #[test]
    fn grep_opens_walked_files_beneath_the_root() {
        use crate::fs::ripgrep::Authorize;
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("root"), dir.path().join("outside"));
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(root.join("real/f.txt"), "inside\n").unwrap();
        std::fs::write(outside.join("f.txt"), "TOP SECRET\n").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("swapped")).unwrap();
        let fs = crate::fs::tests::over(&root);
        let searched = super::Searched {
            fs: &fs,
            named: None,
            beneath: fs.root.open_root_if_exists().unwrap(),
        };
        let real = std::fs::canonicalize(&root).unwrap();
        let read = |p: &std::path::Path| {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut searched.open(p).unwrap()?, &mut text)?;
            Ok::<_, std::io::Error>(text)
        };
        assert_eq!(read(&real.join("real/f.txt")).unwrap(), "inside\n");
        let through_link = real.join("swapped/f.txt");
        assert_eq!(
            read(&through_link).unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
        let by_path = std::fs::read_to_string(&through_link).unwrap();
        assert_eq!(
            by_path, "TOP SECRET\n",
            "the path open the opener replaces follows it"
        );
        let out_of_root = std::fs::canonicalize(&outside).unwrap().join("f.txt");
        assert_eq!(
            read(&out_of_root).unwrap_err().raw_os_error(),
            Some(libc::EXDEV)
        );
    }

    /// `list_files` walked on every core (budget 0), lines built from the walked paths where
    /// nothing but the name is left to decide, gives exactly what the sorted walk gives, in
    /// each layout, with ignore files, hidden files, symlinks, globs and caps.
    #[test]
    fn parallel_listing_is_the_sorted_listing() {
        let dir = tree();
        let c = CancelFlag::new();
        let mut lossy = 0;
        each_layout(
            dir.path().to_str().unwrap(),
            &[0, 1, 41, 1000],
            |f, path, label| {
                for glob in [None, Some("*.py"), Some(".*"), Some("!b/**")] {
                    let list = |budget| show(f.list_files_within(path, glob, &c, Some(budget)));
                    let sorted = list(Duration::from_secs(3600));
                    assert_eq!(list(Duration::ZERO), sorted, "{label} {glob:?}");
                    lossy += usize::from(sorted.contains("\\udc"));
                }
            },
        );
        // The non-UTF-8 name was listed (as its surrogateescape text, issue 19) in some of the
        // listings compared.
        assert!(lossy > 0);
    }

    /// The escaped-names note of a listing walked on every core (budget 0) is its call's:
    /// there whenever a name was shown escaped, and only then (issue 19).
    #[test]
    fn the_parallel_listing_notes_the_names_it_escapes() {
        let dir = tree();
        let c = CancelFlag::new();
        let mut noted = 0;
        each_layout(dir.path().to_str().unwrap(), &[1000], |f, path, label| {
            for budget in [Duration::ZERO, Duration::from_secs(3600)] {
                let outcome = crate::fs::noting_escaped_names(|| {
                    f.list_files_within(path, None, &c, Some(budget))
                });
                let Ok(outcome) = outcome else { continue };
                let escaped = outcome.text.contains("\\udc");
                let note = outcome.text.ends_with(crate::fs::text::ESCAPED_NOTE);
                assert_eq!(note, escaped, "{label} {budget:?}");
                noted += usize::from(note);
            }
        });
        assert!(noted > 0);
    }
}
