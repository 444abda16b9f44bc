//! `RemoteCore` and `RemoteSearch` of `_core`: the FileSystem on a workspace whose files are
//! not on this host. Python moves bytes through the workspace protocol; every decision and
//! text comes from [`crate::fs::remote`]. Work on file bytes runs with the GIL released.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::fs::remote::{self, Entry, Glob, Parent, Remote, RgGrep, RgGrepArgs, RgWalk, Search};
use crate::fs::{Contract, Limits};

use super::fs::{replacements_of, run, PyChangePlan, PyOutcome, PyReplacement};
use super::paths::{py_path, ModelPath};
use super::ranged::{PyKept, PyRanged};
use super::PyCancelToken;

/// An entry as Python hands it in: `(path, is_dir, size)`. Paths cross as the host side's do
/// ([`super::paths`]): a name that is not UTF-8 (lone surrogates, as `surrogateescape` gives
/// it) travels through the core as marked text and comes back as the same `str`.
type PyEntry = (ModelPath, bool, Option<u64>);

fn entry((path, is_dir, size): PyEntry) -> Entry {
    Entry {
        path: path.0,
        is_dir,
        size,
    }
}

fn entries(list: Option<Vec<PyEntry>>) -> Option<Vec<Entry>> {
    list.map(|l| l.into_iter().map(entry).collect())
}

/// A compiled `find_files` glob (see `fs::remote::Glob`).
#[pyclass(name = "RemoteGlob", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PyGlob {
    glob: Arc<Glob>,
}

#[pymethods]
impl PyGlob {
    /// Levels below the start a walk lists; `None` with a `**`.
    #[getter]
    fn max_depth(&self) -> Option<usize> {
        self.glob.max_depth()
    }

    /// Whether the walk enters hidden directories.
    #[getter]
    fn include_hidden(&self) -> bool {
        self.glob.include_hidden
    }

    /// The `paths` (below `start`) the glob matches, in order.
    fn matching<'py>(
        &self,
        py: Python<'py>,
        start: ModelPath,
        paths: Vec<ModelPath>,
    ) -> PyResult<Vec<Bound<'py, PyString>>> {
        paths
            .into_iter()
            .filter(|p| self.glob.is_match(&remote::relpath(p, &start)))
            .map(|p| py_path(py, &p))
            .collect()
    }
}

/// One content search fed file by file (see `fs::remote::Search`).
#[pyclass(name = "RemoteSearch", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PySearch {
    core: Arc<Remote>,
    search: Mutex<Option<Search>>,
    include_hidden: bool,
}

impl PySearch {
    fn with<T>(&self, f: impl FnOnce(&mut Search) -> T) -> PyResult<T> {
        let mut guard = self.search.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_mut() {
            Some(s) => Ok(f(s)),
            None => Err(PyValueError::new_err("the search has finished")),
        }
    }
}

#[pymethods]
impl PySearch {
    /// Whether the walk enters hidden directories (`include_glob` names one).
    #[getter]
    fn include_hidden(&self) -> bool {
        self.include_hidden
    }

    /// The files to read, in order, as `(path, size)`: from the start's `stat` entry
    /// (`None`: nothing there) and, for a directory, the walked entries.
    fn files<'py>(
        &self,
        py: Python<'py>,
        start: Option<PyEntry>,
        walked: Vec<PyEntry>,
    ) -> PyResult<Vec<(Bound<'py, PyString>, Option<u64>)>> {
        let core = self.core.clone();
        let start = start.map(entry);
        let walked: Vec<Entry> = walked.into_iter().map(entry).collect();
        let files = self.with(|s| py.detach(|| core.search_files_of(s, start.as_ref(), walked)))?;
        files
            .into_iter()
            .map(|e| Ok((py_path(py, &e.path)?, e.size)))
            .collect()
    }

    /// The dot entries a ripgrep-rules walk left out, counted instead of the walked entries'
    /// (the walk that applied ignore files: `files` then gets only the kept files).
    #[pyo3(signature = (count, ignored=0))]
    fn hidden_skipped(&self, count: usize, ignored: usize) -> PyResult<()> {
        let core = self.core.clone();
        self.with(|s| core.search_hidden(s, count, ignored))
    }

    /// Takes the directories `walk` could not list (before `walk.finish()`): the result
    /// names them and `report_skipped` counts them.
    fn unlisted(&self, walk: PyRef<'_, PyRgWalk>) -> PyResult<()> {
        let core = self.core.clone();
        walk.with(|w| self.with(|s| core.search_unlisted(s, w)))?
    }

    /// Searches file `index`'s bytes (`None`: unreadable or too large); `True` once the
    /// match cap is hit (read no further).
    fn feed(
        &self,
        py: Python<'_>,
        index: usize,
        data: Option<&Bound<'_, PyBytes>>,
    ) -> PyResult<bool> {
        let core = self.core.clone();
        let bytes = data.map(|d| d.as_bytes());
        self.with(|s| py.detach(|| core.search_feed(s, index, bytes)))
    }

    /// The result; `walk_cut`: the walk stopped at its caps.
    fn result(&self, walk_cut: bool) -> PyResult<PyOutcome> {
        let search = self
            .search
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| PyValueError::new_err("the search has finished"))?;
        Ok(self.core.search_result(search, walk_cut).into())
    }
}

/// A file's bytes from a Python callable returning its next piece (`b''` at the end); the
/// first exception it raises is kept and ends the reading.
struct PyPieces {
    read: Py<PyAny>,
    current: Vec<u8>,
    at: usize,
    error: Option<PyErr>,
}

impl std::io::Read for PyPieces {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.current.len() {
            if self.error.is_some() {
                return Ok(0);
            }
            let next = Python::attach(|py| {
                self.read
                    .call0(py)
                    .and_then(|piece| Ok(piece.cast_bound::<PyBytes>(py)?.as_bytes().to_vec()))
            });
            match next {
                Ok(piece) if piece.is_empty() => return Ok(0),
                Ok(piece) => {
                    self.current = piece;
                    self.at = 0;
                }
                Err(error) => {
                    self.error = Some(error);
                    return Err(std::io::Error::other("the piece reader raised"));
                }
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// `paths` (from the core) as Python's `str`s ([`py_path`]).
fn py_paths(py: Python<'_>, paths: Vec<String>) -> PyResult<Vec<Bound<'_, PyString>>> {
    paths.iter().map(|p| py_path(py, p)).collect()
}

/// A ripgrep-rules walk driven level by level from Python (see `fs::remote::RgWalk`): `listed`
/// takes a directory's entries and names the ignore files to read, `rules` takes their bytes,
/// `enter` returns the child directories to list next.
#[pyclass(name = "RemoteRgWalk", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PyRgWalk {
    walk: Mutex<Option<RgWalk>>,
}

impl PyRgWalk {
    fn with<T>(&self, f: impl FnOnce(&mut RgWalk) -> T) -> PyResult<T> {
        let mut guard = self.walk.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_mut() {
            Some(w) => Ok(f(w)),
            None => Err(PyValueError::new_err("the walk has finished")),
        }
    }

    fn take(&self) -> PyResult<RgWalk> {
        self.walk
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| PyValueError::new_err("the walk has finished"))
    }
}

#[pymethods]
impl PyRgWalk {
    /// The directories above the start (inside the root) whose ignore files apply, root first:
    /// list each and pass it to `listed`, then `rules`, never `enter`.
    fn ancestors<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyString>>> {
        py_paths(py, self.with(|w| w.ancestors())?)
    }

    /// Takes `dir`'s listing; returns the ignore files in it to read (workspace paths).
    fn listed<'py>(
        &self,
        py: Python<'py>,
        dir: ModelPath,
        entries: Vec<PyEntry>,
    ) -> PyResult<Vec<Bound<'py, PyString>>> {
        let entries = entries.into_iter().map(entry).collect();
        py_paths(py, self.with(|w| w.listed(&dir, entries))?)
    }

    /// Takes the bytes of the ignore files `listed` named for `dir` (`None`: unreadable).
    fn rules(&self, dir: ModelPath, files: Vec<(ModelPath, Option<Vec<u8>>)>) -> PyResult<()> {
        let files = files.into_iter().map(|(p, d)| (p.0, d)).collect();
        self.with(|w| w.rules(&dir, files))
    }

    /// Notes that the backend could not list `dir` (below the start), with its error's
    /// number (`None`: unknown): the result names it as the host walkers do.
    #[pyo3(signature = (dir, errno=None))]
    fn unlisted(&self, dir: ModelPath, errno: Option<i32>) -> PyResult<()> {
        self.with(|w| w.unlisted(&dir, errno))
    }

    /// Decides `dir`'s children (after `listed` and `rules`); returns the directories to walk.
    fn enter<'py>(&self, py: Python<'py>, dir: ModelPath) -> PyResult<Vec<Bound<'py, PyString>>> {
        py_paths(py, self.with(|w| w.enter(&dir))?)
    }

    /// Ends the walk: the kept files in order, the dot entries and the ignored entries it
    /// left out.
    #[allow(clippy::type_complexity)]
    fn finish<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Vec<(Bound<'py, PyString>, bool, Option<u64>)>, usize, usize)> {
        let walk = self.take()?;
        let (hidden, ignored) = (walk.hidden_skipped, walk.ignored_skipped);
        let files = walk
            .into_files()
            .into_iter()
            .map(|e| Ok((py_path(py, &e.path)?, e.is_dir, e.size)))
            .collect::<PyResult<_>>()?;
        Ok((files, hidden, ignored))
    }
}

/// One `grep` with ripgrep's rules fed file by file (see `fs::remote::RgGrep`).
#[pyclass(name = "RemoteGrep", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PyRgGrep {
    core: Arc<Remote>,
    grep: Mutex<Option<RgGrep>>,
    files: Vec<(String, Option<u64>)>,
}

#[pymethods]
impl PyRgGrep {
    /// The files to read, in order, as `(path, size or None)`.
    #[getter]
    fn files<'py>(&self, py: Python<'py>) -> PyResult<Vec<(Bound<'py, PyString>, Option<u64>)>> {
        self.files
            .iter()
            .map(|(path, size)| Ok((py_path(py, path)?, *size)))
            .collect()
    }

    /// Searches file `index`'s bytes (`None`: it could not be read, for the backend error
    /// numbered `errno`, `None` unknown); `True` once the output cap was passed (read no further).
    #[pyo3(signature = (index, data, errno=None))]
    fn feed(
        &self,
        py: Python<'_>,
        index: usize,
        data: Option<&Bound<'_, PyBytes>>,
        errno: Option<i32>,
    ) -> PyResult<bool> {
        let core = self.core.clone();
        let bytes = data.map(|d| d.as_bytes());
        let mut guard = self.grep.lock().unwrap_or_else(|e| e.into_inner());
        let grep = guard
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the search has finished"))?;
        Ok(py.detach(|| core.rg_feed(grep, index, bytes, errno)))
    }

    /// Searches file `index` read in pieces: `read()` returns its next bytes (`b''` at the
    /// end) and is called from this call's thread with the GIL held; the search runs with the
    /// GIL released. `True` once the output cap was passed. An exception `read` raises ends the
    /// file's search and is raised here.
    fn feed_pieces(&self, py: Python<'_>, index: usize, read: Py<PyAny>) -> PyResult<bool> {
        let core = self.core.clone();
        let mut guard = self.grep.lock().unwrap_or_else(|e| e.into_inner());
        let grep = guard
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the search has finished"))?;
        let mut reader = PyPieces {
            read,
            current: Vec::new(),
            at: 0,
            error: None,
        };
        let full = py.detach(|| core.rg_feed_reader(grep, index, Some(&mut reader), None));
        match reader.error {
            Some(error) => Err(error),
            None => Ok(full),
        }
    }

    /// The result; `walk_cut`: the walk stopped at its caps.
    fn result(&self, walk_cut: bool) -> PyResult<PyOutcome> {
        let grep = self
            .grep
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| PyValueError::new_err("the search has finished"))?;
        Ok(self.core.rg_grep_result(grep, walk_cut).into())
    }
}

/// A workspace's root, working directory, patterns and limits: the FileSystem tools on bytes
/// the Python side moves through the workspace protocol.
#[pyclass(name = "RemoteCore", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PyRemoteCore {
    inner: Arc<Remote>,
}

impl PyRemoteCore {
    fn wrap(&self, plan: crate::fs::change::write::Plan) -> PyChangePlan {
        PyChangePlan {
            plan: Arc::new(plan),
            root_dir: self.inner.root.clone(),
            contract: Contract::Workspace,
            content_hashes: self.inner.limits.content_hashes,
        }
    }
}

fn parent(name: &str) -> PyResult<Parent> {
    match name {
        "dir" => Ok(Parent::Dir),
        "missing" => Ok(Parent::Missing),
        "notdir" => Ok(Parent::NotDir),
        other => Err(PyValueError::new_err(format!(
            "unknown parent state {other:?}"
        ))),
    }
}

#[pymethods]
impl PyRemoteCore {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (root, cwd, root_named, allowed_patterns, denied_patterns, protected_patterns,
        max_read_lines, max_read_chars, max_list_results, max_search_results, max_find_results, content_hashes,
        *, max_line_chars = None, report_skipped = false, r#match = "exact", show_changes = 0, big_diffs = false))]
    fn new(
        root: String,
        cwd: String,
        root_named: bool,
        allowed_patterns: Vec<String>,
        denied_patterns: Vec<String>,
        protected_patterns: Vec<String>,
        max_read_lines: usize,
        max_read_chars: Option<usize>,
        max_list_results: usize,
        max_search_results: usize,
        max_find_results: usize,
        content_hashes: bool,
        max_line_chars: Option<usize>,
        report_skipped: bool,
        r#match: &str,
        show_changes: usize,
        big_diffs: bool,
    ) -> PyResult<Self> {
        let matching = super::fs::match_mode(r#match)?;
        let limits = Limits {
            max_read_lines,
            max_read_chars,
            max_list_results,
            max_search_results,
            max_find_results,
            content_hashes,
            contract: Contract::Workspace,
            big_diffs,
        };
        let mut inner = Remote::new(
            &root,
            &cwd,
            root_named,
            &allowed_patterns,
            &denied_patterns,
            &protected_patterns,
            limits,
        )
        .map_err(|e| PyValueError::new_err(e.message))?;
        inner.disclosure.max_line_chars = max_line_chars;
        inner.disclosure.report_skipped = report_skipped;
        inner.disclosure.matching = matching;
        inner.disclosure.show_changes = show_changes;
        Ok(PyRemoteCore {
            inner: Arc::new(inner),
        })
    }

    /// The boundary (a workspace path).
    #[getter]
    fn root_dir(&self) -> String {
        self.inner.root.clone()
    }

    /// The working directory (a workspace path).
    #[getter]
    fn cwd(&self) -> String {
        self.inner.cwd.clone()
    }

    /// `(max_read_file_bytes, max_search_file_bytes, max_walk_directories, max_walk_entries)`.
    #[getter]
    fn caps(&self) -> (u64, u64, usize, usize) {
        (
            remote::MAX_READ_FILE_BYTES,
            remote::MAX_SEARCH_FILE_BYTES,
            remote::MAX_WALK_DIRECTORIES,
            remote::MAX_WALK_ENTRIES,
        )
    }

    fn resolve<'py>(&self, py: Python<'py>, path: ModelPath) -> PyResult<Bound<'py, PyString>> {
        py_path(py, &self.inner.resolve(&path)?)
    }

    #[pyo3(signature = (path, resolved, real, write, check_allowed))]
    fn check(
        &self,
        path: ModelPath,
        resolved: ModelPath,
        real: Option<ModelPath>,
        write: bool,
        check_allowed: bool,
    ) -> PyResult<()> {
        self.inner
            .check(&path, &resolved, real.as_deref(), write, check_allowed)
            .map_err(PyErr::from)
    }

    #[pyo3(signature = (errno, resolved=None))]
    fn raise_os_error(&self, errno: i32, resolved: Option<ModelPath>) -> PyResult<()> {
        Err(self.inner.os_error(errno, resolved.as_deref()).into())
    }

    fn event_path<'py>(
        &self,
        py: Python<'py>,
        resolved: ModelPath,
    ) -> PyResult<Bound<'py, PyString>> {
        py_path(py, &self.inner.event_path(&resolved))
    }

    fn descend(&self, path: ModelPath, real: ModelPath, include_hidden: bool) -> bool {
        self.inner.descend(&path, &real, include_hidden)
    }

    fn readable_real(&self, real: ModelPath) -> bool {
        self.inner.readable_real(&real)
    }

    fn read_limit(&self, offset: i64, limit: Option<i64>) -> PyResult<(usize, usize)> {
        self.inner.read_limit(offset, limit).map_err(PyErr::from)
    }

    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (path, resolved, size, data, offset, limit, guessed_type, *, cancel, column = 0,
        lookalike = None))]
    fn read_file(
        &self,
        py: Python<'_>,
        path: ModelPath,
        resolved: ModelPath,
        size: Option<u64>,
        data: Option<&Bound<'_, PyBytes>>,
        offset: usize,
        limit: usize,
        guessed_type: Option<String>,
        cancel: PyRef<'_, PyCancelToken>,
        column: usize,
        lookalike: Option<ModelPath>,
    ) -> PyResult<(PyOutcome, Option<&'static str>)> {
        let flag = cancel.flag.clone();
        let core = self.inner.clone();
        let bytes = data.map(|d| d.as_bytes());
        let read = run(py, move || {
            core.read_file(
                &path,
                &resolved,
                size,
                bytes,
                offset,
                limit,
                guessed_type.as_deref(),
                column,
                lookalike.as_deref(),
                &flag,
            )
        })?;
        Ok((read.outcome.into(), read.media_type))
    }

    #[pyo3(signature = (path, resolved, entry, data, *, lookalike = None))]
    fn file_info(
        &self,
        py: Python<'_>,
        path: ModelPath,
        resolved: ModelPath,
        entry: Option<PyEntry>,
        data: Option<&Bound<'_, PyBytes>>,
        lookalike: Option<ModelPath>,
    ) -> PyOutcome {
        let core = self.inner.clone();
        let bytes = data.map(|d| d.as_bytes());
        let entry = entry.map(self::entry);
        py.detach(move || {
            core.file_info(
                &path,
                &resolved,
                entry.as_ref(),
                bytes,
                lookalike.as_deref(),
            )
        })
        .into()
    }

    /// The look-alike of a missing `path` from its parents' `listings` (directory path to
    /// `[(name, is_dir)]`, `None`: not listable): `(directory to list next, None)`, or
    /// `(None, the existing spelling or None)` when done.
    #[allow(clippy::type_complexity)]
    fn lookalike<'py>(
        &self,
        py: Python<'py>,
        path: ModelPath,
        resolved: ModelPath,
        listings: &Bound<'py, PyDict>,
    ) -> PyResult<(Option<Bound<'py, PyString>>, Option<Bound<'py, PyString>>)> {
        let mut known = remote::Listings::new();
        for (directory, names) in listings.iter() {
            let names: Option<Vec<(ModelPath, bool)>> = names.extract()?;
            known.insert(
                directory.extract::<ModelPath>()?.0,
                names.map(|n| n.into_iter().map(|(name, d)| (name.0, d)).collect()),
            );
        }
        Ok(match self.inner.lookalike(&path, &resolved, &known) {
            remote::Lookalike::List(dir) => (Some(py_path(py, &dir)?), None),
            remote::Lookalike::Found(existing) => {
                (None, existing.map(|e| py_path(py, &e)).transpose()?)
            }
        })
    }

    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (path, resolved, target, parent, old, content, expected_hash, announce, *,
        lookalike = None))]
    fn plan_write(
        &self,
        py: Python<'_>,
        path: ModelPath,
        resolved: ModelPath,
        target: Option<bool>,
        parent: &str,
        old: Option<&Bound<'_, PyBytes>>,
        content: String,
        expected_hash: Option<String>,
        announce: bool,
        lookalike: Option<ModelPath>,
    ) -> PyResult<PyChangePlan> {
        let core = self.inner.clone();
        let parent = self::parent(parent)?;
        let old = old.map(|d| d.as_bytes());
        let plan = run(py, move || {
            core.plan_write(
                &path,
                &resolved,
                target,
                parent,
                old,
                content,
                expected_hash,
                announce,
                lookalike.as_deref(),
            )
        })?;
        Ok(self.wrap(plan))
    }

    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (path, resolved, raw, replacements, expected_hash, *, directory = false,
        lookalike = None))]
    fn plan_edit(
        &self,
        py: Python<'_>,
        path: ModelPath,
        resolved: ModelPath,
        raw: Option<Vec<u8>>,
        replacements: Vec<PyReplacement>,
        expected_hash: Option<String>,
        directory: bool,
        lookalike: Option<ModelPath>,
    ) -> PyResult<PyChangePlan> {
        let core = self.inner.clone();
        let plan = run(py, move || {
            core.plan_edit(
                &path,
                &resolved,
                raw,
                &replacements_of(replacements),
                expected_hash,
                directory,
                lookalike.as_deref(),
            )
        })?;
        Ok(self.wrap(plan))
    }

    /// Every path a patch names, in patch order (`patch::patch_paths`).
    fn patch_paths(&self, input: &str) -> PyResult<Vec<String>> {
        crate::fs::patch::patch_paths(input).map_err(PyErr::from)
    }

    /// Plans `apply_patch` on files handed in: `files` holds, per path of `patch_paths`,
    /// `(path, resolved, bytes or None, is_dir)` (`patch::plan_handed_in`).
    fn plan_patch(
        &self,
        py: Python<'_>,
        input: String,
        files: Vec<(String, String, Option<Vec<u8>>, bool)>,
    ) -> PyResult<super::fs::PyPatchPlan> {
        let core = self.inner.clone();
        let plan = run(py, move || {
            let handed: std::collections::HashMap<_, _> = files
                .into_iter()
                .map(|(path, resolved, bytes, is_dir)| {
                    let event_path = core.event_path(&resolved);
                    let handed = crate::fs::patch::HandedIn {
                        resolved,
                        event_path,
                        bytes,
                        is_dir,
                    };
                    (path, handed)
                })
                .collect();
            crate::fs::patch::plan_handed_in(
                &input,
                core.limits.contract,
                &core.disclosure,
                &handed,
            )
        })?;
        Ok(super::fs::PyPatchPlan {
            plan: std::sync::Arc::new(plan),
            root_dir: self.inner.root.clone(),
        })
    }

    /// The text of a committed patch (`Applied patch to N files:` ...).
    fn patch_result(&self, plan: PyRef<'_, super::fs::PyPatchPlan>) -> String {
        plan.plan.result_text(self.inner.limits.content_hashes)
    }

    fn plan_create_directory(
        &self,
        path: ModelPath,
        resolved: ModelPath,
        target: Option<bool>,
        ancestor_is_dir: bool,
    ) -> PyResult<Option<PyChangePlan>> {
        let plan = self
            .inner
            .plan_create_directory(&path, &resolved, target, ancestor_is_dir)?;
        Ok(plan.map(|p| self.wrap(p)))
    }

    /// The workspace path a plan changes.
    fn plan_target<'py>(
        &self,
        py: Python<'py>,
        plan: PyRef<'_, PyChangePlan>,
    ) -> PyResult<Bound<'py, PyString>> {
        py_path(py, &plan.plan.resolved.abs.to_string_lossy())
    }

    /// Whether the commit must re-read the target for the conflict guard.
    fn plan_guarded(&self, plan: PyRef<'_, PyChangePlan>) -> bool {
        plan.plan.guard != crate::fs::change::write::Guard::None
    }

    /// The bytes a write or edit plan writes.
    fn plan_content<'py>(
        &self,
        py: Python<'py>,
        plan: PyRef<'_, PyChangePlan>,
    ) -> Bound<'py, PyBytes> {
        PyBytes::new(py, plan.plan.bytes())
    }

    fn check_guard(
        &self,
        py: Python<'_>,
        plan: PyRef<'_, PyChangePlan>,
        current: Option<&Bound<'_, PyBytes>>,
    ) -> PyResult<()> {
        let core = self.inner.clone();
        let plan = plan.plan.clone();
        let bytes = current.map(|d| d.as_bytes());
        run(py, move || core.check_guard(&plan, bytes))
    }

    fn written(&self, plan: PyRef<'_, PyChangePlan>) -> PyOutcome {
        self.inner.written(&plan.plan).into()
    }

    fn created(&self, plan: PyRef<'_, PyChangePlan>, state: &str) -> PyResult<PyOutcome> {
        Ok(self.inner.created(&plan.plan, state)?.into())
    }

    fn list_directory(
        &self,
        py: Python<'_>,
        path: ModelPath,
        resolved: ModelPath,
        entries: Option<Vec<PyEntry>>,
    ) -> PyResult<PyOutcome> {
        let core = self.inner.clone();
        let entries = self::entries(entries);
        run(py, move || {
            crate::fs::noting_escaped_names(|| core.list_directory(&path, &resolved, entries))
        })
        .map(Into::into)
    }

    fn glob(&self, pattern: &str) -> PyResult<PyGlob> {
        Ok(PyGlob {
            glob: Arc::new(Glob::new(pattern)?),
        })
    }

    /// `find_files` over a walk's `entries`; `unlisted`: the directories below `resolved`
    /// the backend could not list, as `(path, errno or None)`, named in a note.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (glob, path, resolved, entries, walk_cut, files_only, unlisted=Vec::new()))]
    fn find_files(
        &self,
        py: Python<'_>,
        glob: PyRef<'_, PyGlob>,
        path: ModelPath,
        resolved: ModelPath,
        entries: Option<Vec<PyEntry>>,
        walk_cut: bool,
        files_only: bool,
        unlisted: Vec<(ModelPath, Option<i32>)>,
    ) -> PyResult<PyOutcome> {
        let core = self.inner.clone();
        let glob = glob.glob.clone();
        let entries = self::entries(entries);
        let unlisted = unlisted
            .into_iter()
            .map(|(p, errno)| remote::Unread::new(&p, errno))
            .collect();
        run(py, move || {
            crate::fs::noting_escaped_names(|| {
                core.find_files(
                    &glob, &path, &resolved, entries, walk_cut, files_only, unlisted,
                )
            })
        })
        .map(Into::into)
    }

    #[pyo3(signature = (pattern, resolved, include_glob))]
    fn search(
        &self,
        pattern: &str,
        resolved: ModelPath,
        include_glob: Option<&str>,
    ) -> PyResult<PySearch> {
        let search = self.inner.search(pattern, &resolved, include_glob)?;
        Ok(PySearch {
            core: self.inner.clone(),
            include_hidden: search.include_hidden,
            search: Mutex::new(Some(search)),
        })
    }

    /// A ranged `read_file` of a file too big to move whole (see `fs::remote::Ranged`);
    /// `column` as [`Self::read_file`]'s.
    #[pyo3(signature = (path, resolved, offset, limit, *, column = 0))]
    fn read_ranged(
        &self,
        path: ModelPath,
        resolved: ModelPath,
        offset: usize,
        limit: usize,
        column: usize,
    ) -> PyRanged {
        PyRanged::new(
            self.inner.clone(),
            self.inner
                .read_ranged(&path, &resolved, offset, limit, column),
        )
    }

    /// A ranged `read_file` of another window of the version of a file `kept` is of.
    #[pyo3(signature = (path, resolved, offset, limit, kept, *, column = 0))]
    fn window_ranged(
        &self,
        path: ModelPath,
        resolved: ModelPath,
        offset: usize,
        limit: usize,
        kept: PyRef<'_, PyKept>,
        column: usize,
    ) -> PyRanged {
        PyRanged::new(
            self.inner.clone(),
            self.inner
                .window_ranged(&path, &resolved, offset, limit, column, kept.kept.clone()),
        )
    }

    /// A `file_info` of the version of a file `kept` is of (no pieces needed).
    fn info_kept(
        &self,
        path: ModelPath,
        resolved: ModelPath,
        size: u64,
        kept: PyRef<'_, PyKept>,
    ) -> PyRanged {
        PyRanged::new(
            self.inner.clone(),
            self.inner
                .info_kept(&path, &resolved, size, kept.kept.clone()),
        )
    }

    /// A ranged `file_info` of a file `size` bytes long.
    fn info_ranged(&self, path: ModelPath, resolved: ModelPath, size: u64) -> PyRanged {
        PyRanged::new(
            self.inner.clone(),
            self.inner.info_ranged(&path, &resolved, size),
        )
    }

    /// A ripgrep-rules walk of the directory `resolved` as `list_files` and `grep` walk it
    /// (`--glob glob`, `--type file_type`, `--hidden` when the glob names a dot entry).
    ///
    /// Errors: `InvalidArgumentError` (unknown file type), `InvalidPatternError` (bad glob).
    #[pyo3(signature = (resolved, glob=None, file_type=None))]
    fn rg_walk(
        &self,
        resolved: ModelPath,
        glob: Option<&str>,
        file_type: Option<&str>,
    ) -> PyResult<PyRgWalk> {
        let walk = self.inner.rg_walk(&resolved, glob, file_type)?;
        Ok(PyRgWalk {
            walk: Mutex::new(Some(walk)),
        })
    }

    /// The walk `search_files` makes of the directory `resolved`: ignore files apply, an
    /// `include_glob` `rg --glob` would take overrides them (0.62.0's rules), hidden entries
    /// are walked when `include_hidden`.
    fn search_walk(
        &self,
        resolved: ModelPath,
        include_glob: Option<&str>,
        include_hidden: bool,
    ) -> PyRgWalk {
        PyRgWalk {
            walk: Mutex::new(Some(self.inner.search_walk(
                &resolved,
                include_glob,
                include_hidden,
            ))),
        }
    }

    /// `list_files` from the finished `walk` of `resolved` (`None`: no directory there).
    ///
    /// Errors: `NotFoundError` `Path 'p' is not a directory.`.
    fn rg_list(
        &self,
        py: Python<'_>,
        path: ModelPath,
        resolved: ModelPath,
        walk: Option<PyRef<'_, PyRgWalk>>,
        walk_cut: bool,
    ) -> PyResult<PyOutcome> {
        let walk = walk.map(|w| w.take()).transpose()?;
        let core = self.inner.clone();
        run(py, move || core.rg_list(&path, &resolved, walk, walk_cut)).map(Into::into)
    }

    /// A `grep` of `resolved`: a directory with its finished `walk`, or a file (`is_file`);
    /// `glob` only decides whether a hidden file named explicitly is searched.
    ///
    /// Errors: `NotFoundError` (nothing there), `InvalidPatternError` (a regex `rg` rejects).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (path, resolved, is_file, walk, pattern, ignore_case, literal, context, glob=None))]
    fn rg_grep(
        &self,
        path: ModelPath,
        resolved: ModelPath,
        is_file: bool,
        walk: Option<PyRef<'_, PyRgWalk>>,
        pattern: String,
        ignore_case: bool,
        literal: bool,
        context: usize,
        glob: Option<&str>,
    ) -> PyResult<PyRgGrep> {
        let walk = walk.map(|w| w.take()).transpose()?;
        let args = RgGrepArgs {
            pattern,
            ignore_case,
            literal,
            context,
            hidden: remote::rg::rg_hidden(glob),
        };
        let (grep, files) = self.inner.rg_grep(&path, &resolved, is_file, walk, &args)?;
        Ok(PyRgGrep {
            core: self.inner.clone(),
            grep: Mutex::new(Some(grep)),
            files: files.into_iter().map(|e| (e.path, e.size)).collect(),
        })
    }
}

/// Adds the remote classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRemoteCore>()?;
    m.add_class::<PySearch>()?;
    m.add_class::<PyGlob>()?;
    m.add_class::<PyRgWalk>()?;
    m.add_class::<PyRgGrep>()?;
    m.add_class::<PyRanged>()?;
    m.add_class::<PyKept>()?;
    m.add("NOT_REGULAR_FILE", crate::fs::NOT_REGULAR_FILE)?;
    Ok(())
}
