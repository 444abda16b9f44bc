//! `find_files` on a big tree: the sorted walk gets a short time budget; a walk still going
//! when it runs out starts over on every core ([`run_jobs`], a directory per job), collects
//! compactly ([`Collected`]) and sorts once at the end, which gives what the sorted walk
//! would have given: the same lines, cap marker and hidden count.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::pool::run_jobs;
use super::{Collected, Finder};
use crate::error::{ErrorKind, Result};
use crate::fs::root::path::strip_base;

/// How long the sorted walk may run before the walk starts over in parallel: a small tree,
/// or a search the cap cuts early, is done by then.
pub const SORTED_BUDGET: Duration = Duration::from_millis(10);

/// A directory to visit in a state set, as [`Finder::visit`] takes it.
struct Job {
    dir: PathBuf,
    real: bool,
    start: bool,
    states: Vec<usize>,
}

/// What one thread found: lines shown, and hidden entries counted, keyed by walked path.
#[derive(Default)]
struct Found {
    shown: Collected,
    hidden: Collected,
}

impl Finder<'_> {
    /// Walks below `root` (the walk root, in state set `start`): sorted, and if that takes
    /// longer than `budget`, again in parallel. Fills `lines`, `truncated`, `hidden`.
    pub(super) fn run(&mut self, root: &Path, start: &[usize], budget: Duration) -> Result<()> {
        self.deadline = Some(Instant::now() + budget);
        self.visit(root, true, true, start)?;
        if !self.over_budget {
            return Ok(());
        }
        self.lines.clear();
        self.truncated = false;
        self.hidden = 0;
        self.over_budget = false;
        self.deadline = None;
        match self.parallel(root, start) {
            Err(err) if err.kind != ErrorKind::Cancelled => {
                // An error met somewhere in the tree: the sorted walk says whether the cap
                // stopped it first.
                self.visit(root, true, true, start).map(|_| ())
            }
            done => done,
        }
    }

    fn parallel(&mut self, root: &Path, start: &[usize]) -> Result<()> {
        let threads = std::thread::available_parallelism()
            .map(|t| t.get())
            .unwrap_or(1)
            .clamp(1, 8);
        let first = Job {
            dir: root.to_path_buf(),
            real: true,
            start: true,
            states: start.to_vec(),
        };
        let this = &*self;
        // Where an entry's line follows from its path, the line is built at the end.
        let named = (self.walk.written == self.walk.rel)
            .then(|| self.fs.plain_prefix(root))
            .flatten();
        let found = run_jobs(threads, first, Found::default, |found, job, more| {
            this.job(root, named.is_some(), found, job, more)
        })?;
        let (shown, hidden): (Vec<_>, Vec<_>) =
            found.into_iter().map(|f| (f.shown, f.hidden)).unzip();
        let prefix = named.as_deref().unwrap_or_default();
        let (text, count, past) = Collected::into_prefixed_text(shown, self.max, prefix);
        // The sorted walk stops at the first entry past the cap: it counted the hidden
        // entries before that one.
        self.hidden = Collected::count_before(&hidden, past.as_deref());
        self.truncated = past.is_some();
        self.joined = Some((text, count));
        Ok(())
    }

    /// [`Finder::visit`] of one directory, its subdirectories made jobs; `named`: a real
    /// entry of known type is collected by its path ([`crate::fs::FileSystem::plain_prefix`]).
    fn job(
        &self,
        root: &Path,
        named: bool,
        found: &mut Found,
        job: Job,
        more: &mut Vec<Job>,
    ) -> Result<()> {
        self.cancel.check()?;
        let n = self.parts.len();
        if job.start && !self.workspace && job.states.contains(&n) {
            if let Some(line) = self.accept(&job.dir, job.real, Some(true)) {
                found.shown.push(key(&job.dir, root), &line);
            }
        }
        if !job.states.iter().any(|&i| i < n) {
            return Ok(());
        }
        for step in self.steps(&job.dir, job.real, &job.states)? {
            if step.hidden {
                found.hidden.push(key(&step.child, root), "");
                continue;
            }
            match step.emit {
                Some(Some(dir)) if named && step.real => {
                    let suffix = if dir { "/" } else { "" };
                    found.shown.push_named(key(&step.child, root), suffix);
                }
                Some(known_dir) => {
                    if let Some(line) = self.accept(&step.child, step.real, known_dir) {
                        found.shown.push(key(&step.child, root), &line);
                    }
                }
                None => {}
            }
            if !step.next.is_empty() {
                more.push(Job {
                    dir: step.child,
                    real: step.real,
                    start: false,
                    states: step.next,
                });
            }
        }
        Ok(())
    }
}

/// The sort key of walked path `p`: its bytes below the walk root `root`.
fn key<'p>(p: &'p Path, root: &Path) -> &'p [u8] {
    strip_base(p, root).unwrap_or(p).as_os_str().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::super::named::tests::{each_layout, show, tree};
    use crate::cancel::CancelFlag;
    use std::time::Duration;

    /// The parallel walk (budget 0) gives exactly what the sorted walk gives: lines, cap
    /// marker, counts and the hidden-entry trailer, under both contracts and any cap, from
    /// each layout (lines built from walked paths, or entry by entry).
    #[test]
    fn parallel_walk_finds_what_the_sorted_walk_finds() {
        let dir = tree();
        let c = CancelFlag::new();
        let patterns = [
            "**/*.py",
            "**",
            "**/",
            "*",
            "*/*",
            "la/*",
            "**/*.txt",
            "a/**",
            ".*",
            "**/.h/**",
            "**/b/*",
            "c/g0?.txt",
            "**/nothing",
        ];
        let mut lossy = 0;
        each_layout(
            dir.path().to_str().unwrap(),
            &[0, 1, 3, 41, 1000],
            |f, path, label| {
                for pattern in patterns {
                    let find = |budget| show(f.find_files_within(pattern, path, &c, budget));
                    let sorted = find(Duration::from_secs(3600));
                    assert_eq!(find(Duration::ZERO), sorted, "{pattern} {label}");
                    lossy += usize::from(sorted.contains("\\udc"));
                }
            },
        );
        // The non-UTF-8 name was found (shown as its surrogateescape text, issue 19) in some
        // of the walks compared.
        assert!(lossy > 0);
    }

    /// The escaped-names note of a walk on worker threads (the parallel walk, budget 0) is
    /// its call's: there whenever a name was shown escaped, and only then (issue 19).
    #[test]
    fn the_parallel_walk_notes_the_names_it_escapes() {
        let dir = tree();
        let c = CancelFlag::new();
        let mut noted = 0;
        each_layout(dir.path().to_str().unwrap(), &[1000], |f, path, label| {
            for budget in [Duration::ZERO, Duration::from_secs(3600)] {
                let outcome =
                    crate::fs::noting_escaped_names(|| f.find_files_within("**", path, &c, budget));
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
