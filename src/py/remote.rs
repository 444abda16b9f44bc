//! `RemoteCore` and `RemoteSearch` of `_core`: the FileSystem on a workspace whose files are
//! not on this host. Python moves bytes through the workspace protocol; every decision and
//! text comes from [`crate::fs::remote`]. Work on file bytes runs with the GIL released.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::fs::remote::{self, Entry, Glob, Parent, Remote, Search};
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
        *, max_line_chars = None))]
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
    ) -> PyResult<Self> {
        let limits = Limits {
            max_read_lines,
            max_read_chars,
            max_list_results,
            max_search_results,
            max_find_results,
            content_hashes,
            contract: Contract::Workspace,
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

    #[allow(clippy::too_many_arguments)]
    fn find_files(
        &self,
        py: Python<'_>,
        glob: PyRef<'_, PyGlob>,
        path: ModelPath,
        resolved: ModelPath,
        entries: Option<Vec<PyEntry>>,
        walk_cut: bool,
        files_only: bool,
    ) -> PyResult<PyOutcome> {
        let core = self.inner.clone();
        let glob = glob.glob.clone();
        let entries = self::entries(entries);
        run(py, move || {
            crate::fs::noting_escaped_names(|| {
                core.find_files(&glob, &path, &resolved, entries, walk_cut, files_only)
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
}

/// The regex the walker form of `grep` searches with (see `fs::remote::grep_pattern`).
#[pyfunction]
#[pyo3(signature = (pattern, file_type, ignore_case, literal, context))]
fn remote_grep_pattern(
    pattern: &str,
    file_type: Option<&str>,
    ignore_case: bool,
    literal: bool,
    context: i64,
) -> PyResult<String> {
    remote::grep_pattern(pattern, file_type, ignore_case, literal, context).map_err(PyErr::from)
}

/// The glob the walker form of `list_files` finds.
#[pyfunction]
#[pyo3(signature = (glob))]
fn remote_list_files_glob(glob: Option<&str>) -> String {
    remote::list_files_glob(glob)
}

/// Adds the remote classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRemoteCore>()?;
    m.add_class::<PySearch>()?;
    m.add_class::<PyGlob>()?;
    m.add_class::<PyRanged>()?;
    m.add_class::<PyKept>()?;
    m.add_function(wrap_pyfunction!(remote_grep_pattern, m)?)?;
    m.add_function(wrap_pyfunction!(remote_list_files_glob, m)?)?;
    m.add("NOT_REGULAR_FILE", crate::fs::NOT_REGULAR_FILE)?;
    Ok(())
}
