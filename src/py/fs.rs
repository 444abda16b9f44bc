//! The FileSystem classes of `_core`: `FileSystemCore`, `ChangePlan`, `Outcome`, and the
//! functions `content_hash`, `text_hash`, `unified_diff`. Every method converts its
//! arguments to owned values, runs the work with the GIL released, then maps errors.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyString, PyTuple};

use crate::error::Result;
use crate::fs::change::content::Content;
use crate::fs::change::write::{Plan, Replacement};
use crate::fs::disclosure::Disclosure;
use crate::fs::patch::PatchPlan;
use crate::fs::{noting_escaped_names, Contract, FileSystem, Limits, Outcome};

use super::paths::{py_path, ModelPath};
use super::PyCancelToken;

/// A finished operation: the model-facing `text` plus what its event needs.
#[pyclass(name = "Outcome", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PyOutcome {
    text: Text,
    path: String,
    #[pyo3(get)]
    content_hash: Option<String>,
    #[pyo3(get)]
    count: usize,
    #[pyo3(get)]
    truncated: bool,
    #[pyo3(get)]
    emit: bool,
    /// read_file, workspace contract: the media type of an image or PDF returned as content.
    #[pyo3(get)]
    media_type: Option<&'static str>,
    /// Its bytes (converted to `bytes` when read, not before).
    media_data: Option<Vec<u8>>,
}

/// An outcome's text: as the core made it, or (a result that may be large, `read_file`'s)
/// already a Python `str`, so the Rust copy is freed at once and every `.text` is that object.
enum Text {
    Rust(String),
    Py(Py<PyString>),
}

impl PyOutcome {
    /// The outcome with its text converted to a Python `str` now (one copy, then the Rust
    /// string is freed).
    pub(crate) fn with_py_text(py: Python<'_>, mut o: Outcome) -> Self {
        let text = PyString::new(py, &std::mem::take(&mut o.text)).unbind();
        PyOutcome {
            text: Text::Py(text),
            ..o.into()
        }
    }
}

impl From<Outcome> for PyOutcome {
    fn from(o: Outcome) -> Self {
        let (media_type, media_data) = match o.media {
            Some(m) => (Some(m.media_type), Some(m.data)),
            None => (None, None),
        };
        PyOutcome {
            text: Text::Rust(o.text),
            path: o.path,
            content_hash: o.content_hash,
            count: o.count,
            truncated: o.truncated,
            emit: o.emit,
            media_type,
            media_data,
        }
    }
}

#[pymethods]
impl PyOutcome {
    /// The model-facing text.
    #[getter]
    fn text<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        match &self.text {
            Text::Rust(s) => PyString::new(py, s),
            Text::Py(s) => s.bind(py).clone(),
        }
    }

    /// The event path (a name that is not UTF-8 as `os.fsdecode` gives it).
    #[getter]
    fn path<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        py_path(py, &self.path)
    }

    /// The bytes of the image or PDF in `media_type`, or `None`.
    #[getter]
    fn media_data<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.media_data.as_deref().map(|d| PyBytes::new(py, d))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let text = match &self.text {
            Text::Rust(s) => s.clone(),
            Text::Py(s) => s.bind(py).to_string(),
        };
        format!(
            "Outcome(text={:?}, path={:?}, content_hash={:?}, count={}, truncated={}, emit={})",
            text, self.path, self.content_hash, self.count, self.truncated, self.emit
        )
    }
}

/// A change checked and ready to announce with `FileChangeRequestEvent`, then commit.
#[pyclass(name = "ChangePlan", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PyChangePlan {
    pub(crate) plan: Arc<Plan>,
    pub(crate) root_dir: String,
    /// The contract the plan's hashes follow (the workspace's: raw bytes; the document's).
    pub(crate) contract: Contract,
    /// Whether results carry `[hash:H]` (`content_hashes`).
    pub(crate) content_hashes: bool,
}

#[pymethods]
impl PyChangePlan {
    /// Event path: resolved, relative to the real root (a name that is not UTF-8 as
    /// `os.fsdecode` gives it).
    #[getter]
    fn path<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        py_path(py, &self.plan.event_path())
    }

    #[getter]
    fn root_dir(&self) -> String {
        self.root_dir.clone()
    }

    /// `'write'`, `'edit'` or `'create_directory'`.
    #[getter]
    fn operation(&self) -> &'static str {
        self.plan.operation.as_str()
    }

    #[getter]
    fn diff(&self) -> String {
        self.plan.diff.clone()
    }

    #[getter]
    fn truncated(&self) -> bool {
        self.plan.truncated
    }

    /// The content hash the file has once this plan is committed, as `read_file` then reports
    /// it; `None` for a `create_directory`. Hashed with the GIL released.
    #[getter]
    fn result_hash(&self, py: Python<'_>) -> Option<String> {
        let (plan, contract) = (Arc::clone(&self.plan), self.contract);
        py.detach(move || plan.result_hash(contract))
    }

    /// The tool result committing this plan answers (`Wrote N chars (L lines) to p. [hash:H]`,
    /// `Edited p. [hash:H]`); `None` for a `create_directory`. Hashed with the GIL released.
    #[getter]
    fn result_text(&self, py: Python<'_>) -> Option<String> {
        let (plan, contract, hashes) = (Arc::clone(&self.plan), self.contract, self.content_hashes);
        py.detach(move || plan.result_text(contract, hashes))
    }

    fn __repr__(&self) -> String {
        format!(
            "ChangePlan(path={:?}, operation={:?}, truncated={})",
            self.plan.event_path(),
            self.plan.operation.as_str(),
            self.plan.truncated
        )
    }
}

/// One file of a planned patch (`PatchPlan.files`).
#[pyclass(name = "PatchFile", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PyPatchFile {
    plan: Arc<PatchPlan>,
    index: usize,
}

impl PyPatchFile {
    fn file(&self) -> &crate::fs::patch::FileChange {
        &self.plan.files[self.index]
    }
}

#[pymethods]
impl PyPatchFile {
    /// Event path: resolved, relative to the root.
    #[getter]
    fn path<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        py_path(py, &self.file().event_path)
    }

    /// The path as the patch names it (a move's destination).
    #[getter]
    fn path_argument(&self) -> String {
        self.file().path.clone()
    }

    /// A move's source as the patch names it.
    #[getter]
    fn moved_from(&self) -> Option<String> {
        self.file().moved_from.clone()
    }

    /// `'write'` (a new file), `'edit'` or `'delete'`.
    #[getter]
    fn operation(&self) -> &'static str {
        self.file().operation()
    }

    #[getter]
    fn diff(&self) -> String {
        self.file().diff.clone()
    }

    #[getter]
    fn truncated(&self) -> bool {
        self.file().truncated
    }

    /// The path beneath the root (a workspace path on a backend): what the commit writes.
    #[getter]
    fn target(&self) -> String {
        self.file().rel.to_string_lossy().into_owned()
    }

    /// The bytes the file had when planned; `None`: no file.
    #[getter]
    fn old_content<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.file().old.as_deref().map(|b| PyBytes::new(py, b))
    }

    /// The bytes it will have; `None`: removed.
    #[getter]
    fn new_content<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.file().new.as_deref().map(|b| PyBytes::new(py, b))
    }

    /// The content hash the file had when planned; `None`: no file.
    #[getter]
    fn old_hash(&self) -> Option<String> {
        self.file().old_hash.clone()
    }

    /// The content hash it will have; `None`: removed.
    #[getter]
    fn new_hash(&self) -> Option<String> {
        self.file().new_hash.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "PatchFile(path={:?}, operation={:?})",
            self.file().event_path,
            self.file().operation()
        )
    }
}

/// A patch planned whole (`FileSystemCore.plan_patch`), ready to announce file by file, then commit.
#[pyclass(name = "PatchPlan", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PyPatchPlan {
    pub(crate) plan: Arc<PatchPlan>,
    pub(crate) root_dir: String,
}

#[pymethods]
impl PyPatchPlan {
    /// The files, sorted by event path.
    #[getter]
    fn files(&self) -> Vec<PyPatchFile> {
        (0..self.plan.files.len())
            .map(|index| PyPatchFile {
                plan: self.plan.clone(),
                index,
            })
            .collect()
    }

    #[getter]
    fn root_dir(&self) -> String {
        self.root_dir.clone()
    }

    /// The result the commit answers (`Applied patch to N files:` ...).
    #[pyo3(signature = (content_hashes))]
    fn result_text(&self, content_hashes: bool) -> String {
        self.plan.result_text(content_hashes)
    }

    fn __repr__(&self) -> String {
        format!("PatchPlan(files={})", self.plan.files.len())
    }
}

/// One `edit_file` replacement as Python passes it: `(old, new)`, or `(old, new, replace_all)`.
pub(crate) enum PyReplacement {
    /// With the `replace_all` flag (`FileSystem(replace_all=True)`).
    Flagged(String, String, bool),
    /// The document's pair: exactly one match.
    Pair(String, String),
}

/// Extracted by hand, not derived: a derived enum turns every failure into `TypeError: failed
/// to extract enum`, hiding the `UnicodeEncodeError` of a text with a lone surrogate, which
/// the toolset answers with a retry as it does for `write_file`'s content (issue 19).
impl<'a, 'py> FromPyObject<'a, 'py> for PyReplacement {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let item = obj.cast::<PyTuple>().map_err(|_| {
            PyTypeError::new_err("a replacement is a tuple (old_text, new_text[, replace_all])")
        })?;
        match item.len() {
            2 => Ok(Self::Pair(
                item.get_item(0)?.extract()?,
                item.get_item(1)?.extract()?,
            )),
            3 => Ok(Self::Flagged(
                item.get_item(0)?.extract()?,
                item.get_item(1)?.extract()?,
                item.get_item(2)?.extract()?,
            )),
            n => Err(PyTypeError::new_err(format!(
                "a replacement is a tuple of 2 or 3 items, got {n}"
            ))),
        }
    }
}

/// The core's replacements for the ones Python passed.
pub(crate) fn replacements_of(items: Vec<PyReplacement>) -> Vec<Replacement> {
    items
        .into_iter()
        .map(|item| match item {
            PyReplacement::Flagged(old, new, replace_all) => Replacement {
                old,
                new,
                replace_all,
            },
            PyReplacement::Pair(old, new) => Replacement::once(old, new),
        })
        .collect()
}

/// Runs `op` with the GIL released and maps its error to the exception hierarchy.
pub(crate) fn run<T: Send>(py: Python<'_>, op: impl FnOnce() -> Result<T> + Send) -> PyResult<T> {
    py.detach(op).map_err(PyErr::from)
}

/// A root directory with its access patterns and limits; all FileSystem tools run here.
#[pyclass(
    name = "FileSystemCore",
    module = "pydantic_ai_harness_rs._core",
    frozen
)]
pub struct PyFileSystemCore {
    pub(crate) inner: Arc<FileSystem>,
}

/// `match=`'s value as the core takes it.
///
/// Errors: `ValueError` for anything but `'exact'` or `'tolerant'`.
pub(crate) fn match_mode(name: &str) -> PyResult<crate::fs::change::tiers::Match> {
    crate::fs::change::tiers::Match::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!("match must be 'exact' or 'tolerant', got {name:?}"))
    })
}

impl PyFileSystemCore {
    fn wrap(&self, plan: Plan) -> PyChangePlan {
        PyChangePlan {
            plan: Arc::new(plan),
            root_dir: self.root_dir(),
            contract: self.inner.limits.contract,
            content_hashes: self.inner.limits.content_hashes,
        }
    }
}

#[pymethods]
impl PyFileSystemCore {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (root_dir, cwd, allowed_patterns, denied_patterns, protected_patterns, max_read_lines,
        max_read_chars, max_list_results, max_search_results, max_find_results, content_hashes, contract = "document",
        max_line_chars = None, report_skipped = false, root_named = false, r#match = "exact", show_changes = 0, big_diffs = false))]
    fn new(
        py: Python<'_>,
        root_dir: String,
        cwd: Option<String>,
        allowed_patterns: Vec<String>,
        denied_patterns: Vec<String>,
        protected_patterns: Vec<String>,
        max_read_lines: usize,
        max_read_chars: Option<usize>,
        max_list_results: usize,
        max_search_results: usize,
        max_find_results: usize,
        content_hashes: bool,
        contract: &str,
        max_line_chars: Option<usize>,
        report_skipped: bool,
        root_named: bool,
        r#match: &str,
        show_changes: usize,
        big_diffs: bool,
    ) -> PyResult<Self> {
        let contract = Contract::from_name(contract)
            .ok_or_else(|| PyValueError::new_err(format!("unknown contract {contract:?}")))?;
        let matching = match_mode(r#match)?;
        let limits = Limits {
            max_read_lines,
            max_read_chars,
            max_list_results,
            max_search_results,
            max_find_results,
            content_hashes,
            contract,
            big_diffs,
        };
        let fs = py
            .detach(|| {
                FileSystem::new(
                    &root_dir,
                    cwd.as_deref(),
                    &allowed_patterns,
                    &denied_patterns,
                    &protected_patterns,
                    limits,
                )
                .map(|fs| {
                    let fs = fs
                        .with_disclosure(Disclosure {
                            max_line_chars,
                            report_skipped,
                            matching,
                            show_changes,
                        })
                        .with_root_named(root_named);
                    // A patch commit a killed process left is finished or dropped first.
                    fs.recover_patches();
                    fs
                })
            })
            .map_err(|e| PyValueError::new_err(e.message))?;
        Ok(PyFileSystemCore {
            inner: Arc::new(fs),
        })
    }

    /// The real (symlink-resolved, absolute) root.
    #[getter]
    fn root_dir(&self) -> String {
        self.inner.root.real_root().to_string_lossy().into_owned()
    }

    /// `'document'` or `'workspace'`: whose defaults and texts this core follows.
    #[getter]
    fn contract(&self) -> &'static str {
        match self.inner.limits.contract {
            Contract::Document => "document",
            Contract::Workspace => "workspace",
        }
    }

    /// The resolved working directory.
    #[getter]
    fn cwd(&self) -> String {
        self.inner.root.cwd().to_string_lossy().into_owned()
    }

    #[pyo3(signature = (path, offset, limit, *, cancel, guessed_type = None, column = 0))]
    #[allow(clippy::too_many_arguments)]
    fn read_file(
        &self,
        py: Python<'_>,
        path: ModelPath,
        offset: i64,
        limit: Option<i64>,
        cancel: PyRef<'_, PyCancelToken>,
        guessed_type: Option<String>,
        column: usize,
    ) -> PyResult<PyOutcome> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        run(py, move || {
            fs.read_file_from(&path, offset, limit, column, guessed_type.as_deref(), &flag)
        })
        .map(|o| PyOutcome::with_py_text(py, o))
    }

    #[pyo3(signature = (path, *, cancel))]
    fn file_info(
        &self,
        py: Python<'_>,
        path: ModelPath,
        cancel: PyRef<'_, PyCancelToken>,
    ) -> PyResult<PyOutcome> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        run(py, move || fs.file_info(&path, &flag)).map(Into::into)
    }

    /// `list_files` (ripgrep rules, in-process): see `FileSystem::list_files`.
    #[pyo3(signature = (path, glob, *, cancel))]
    fn list_files(
        &self,
        py: Python<'_>,
        path: ModelPath,
        glob: Option<String>,
        cancel: PyRef<'_, PyCancelToken>,
    ) -> PyResult<PyOutcome> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        run(py, move || {
            noting_escaped_names(|| fs.list_files(&path, glob.as_deref(), &flag))
        })
        .map(Into::into)
    }

    /// `grep` (ripgrep rules, in-process): see `FileSystem::grep`.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (pattern, path, glob, file_type, ignore_case, literal, context, *, cancel))]
    fn grep(
        &self,
        py: Python<'_>,
        pattern: String,
        path: ModelPath,
        glob: Option<String>,
        file_type: Option<String>,
        ignore_case: bool,
        literal: bool,
        context: usize,
        cancel: PyRef<'_, PyCancelToken>,
    ) -> PyResult<PyOutcome> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        run(py, move || {
            noting_escaped_names(|| {
                fs.grep(
                    &pattern,
                    &path,
                    glob.as_deref(),
                    file_type.as_deref(),
                    ignore_case,
                    literal,
                    context,
                    &flag,
                )
            })
        })
        .map(Into::into)
    }

    #[pyo3(signature = (path, *, cancel))]
    fn list_directory(
        &self,
        py: Python<'_>,
        path: ModelPath,
        cancel: PyRef<'_, PyCancelToken>,
    ) -> PyResult<PyOutcome> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        run(py, move || {
            noting_escaped_names(|| fs.list_directory(&path, &flag))
        })
        .map(Into::into)
    }

    #[pyo3(signature = (pattern, path, include_glob, *, cancel))]
    fn search_files(
        &self,
        py: Python<'_>,
        pattern: String,
        path: ModelPath,
        include_glob: Option<String>,
        cancel: PyRef<'_, PyCancelToken>,
    ) -> PyResult<PyOutcome> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        run(py, move || {
            noting_escaped_names(|| {
                fs.search_files(&pattern, &path, include_glob.as_deref(), &flag)
            })
        })
        .map(Into::into)
    }

    #[pyo3(signature = (pattern, path, *, cancel))]
    fn find_files(
        &self,
        py: Python<'_>,
        pattern: String,
        path: ModelPath,
        cancel: PyRef<'_, PyCancelToken>,
    ) -> PyResult<PyOutcome> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        run(py, move || {
            noting_escaped_names(|| fs.find_files(&pattern, &path, &flag))
        })
        .map(Into::into)
    }

    #[pyo3(signature = (path, content, expected_hash, announce, *, cancel))]
    fn plan_write(
        &self,
        py: Python<'_>,
        path: ModelPath,
        content: Bound<'_, PyString>,
        expected_hash: Option<String>,
        announce: bool,
        cancel: PyRef<'_, PyCancelToken>,
    ) -> PyResult<PyChangePlan> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        // The str's own UTF-8, shared, not copied: it is immutable and kept alive by the plan.
        let chars = content.len()?;
        let content = Content::shared(PyBackedStr::try_from(content)?, chars);
        let plan = run(py, move || {
            fs.plan_write(&path, content, expected_hash, announce, &flag)
        })?;
        Ok(self.wrap(plan))
    }

    #[pyo3(signature = (path, replacements, expected_hash, *, cancel))]
    fn plan_edit(
        &self,
        py: Python<'_>,
        path: ModelPath,
        replacements: Vec<PyReplacement>,
        expected_hash: Option<String>,
        cancel: PyRef<'_, PyCancelToken>,
    ) -> PyResult<PyChangePlan> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        let plan = run(py, move || {
            fs.plan_edit(&path, &replacements_of(replacements), expected_hash, &flag)
        })?;
        Ok(self.wrap(plan))
    }

    /// None when the directory already exists (nothing to announce, nothing to emit).
    fn plan_create_directory(
        &self,
        py: Python<'_>,
        path: ModelPath,
    ) -> PyResult<Option<PyChangePlan>> {
        let fs = self.inner.clone();
        let plan = run(py, move || fs.plan_create_directory(&path))?;
        Ok(plan.map(|p| self.wrap(p)))
    }

    /// Every path a patch names, in patch order, repeats included (`patch::patch_paths`): the
    /// parse only, so the files' turns can be taken before the one plan.
    fn patch_paths(&self, input: &str) -> PyResult<Vec<String>> {
        Ok(crate::fs::patch::patch_paths(input)?)
    }

    /// Plans `apply_patch` (`FileSystem::plan_patch`): nothing on disk changes.
    #[pyo3(signature = (input, *, cancel))]
    fn plan_patch(
        &self,
        py: Python<'_>,
        input: String,
        cancel: PyRef<'_, PyCancelToken>,
    ) -> PyResult<PyPatchPlan> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        let plan = run(py, move || fs.plan_patch(&input, &flag))?;
        Ok(PyPatchPlan {
            plan: Arc::new(plan),
            root_dir: self.root_dir(),
        })
    }

    /// Commits a planned patch through the journal (`FileSystem::commit_patch`); returns the result text.
    #[pyo3(signature = (plan, *, cancel))]
    fn commit_patch(
        &self,
        py: Python<'_>,
        plan: PyRef<'_, PyPatchPlan>,
        cancel: PyRef<'_, PyCancelToken>,
    ) -> PyResult<String> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        let plan = plan.plan.clone();
        run(py, move || fs.commit_patch(&plan, &flag))
    }

    /// Re-resolve, then write under the descriptor guard (or create the directory).
    #[pyo3(signature = (plan, *, cancel))]
    fn commit(
        &self,
        py: Python<'_>,
        plan: PyRef<'_, PyChangePlan>,
        cancel: PyRef<'_, PyCancelToken>,
    ) -> PyResult<PyOutcome> {
        let flag = cancel.flag.clone();
        let fs = self.inner.clone();
        let plan = plan.plan.clone();
        run(py, move || fs.commit(&plan, &flag)).map(Into::into)
    }

    /// Resolve and access-check `path`; returns the absolute resolved path (a name that is
    /// not UTF-8 as `os.fsdecode` gives it).
    fn resolve<'py>(
        &self,
        py: Python<'py>,
        path: ModelPath,
        write: bool,
        check_allowed: bool,
    ) -> PyResult<Bound<'py, PyString>> {
        let fs = self.inner.clone();
        let abs = run(py, move || fs.resolve_checked(&path, write, check_allowed))?;
        py_path(py, &abs)
    }

    fn relative_to_root<'py>(
        &self,
        py: Python<'py>,
        resolved: ModelPath,
    ) -> PyResult<Bound<'py, PyString>> {
        let rel = self.inner.relative_to_root(&resolved)?;
        py_path(py, &rel)
    }

    /// Raise the core's error for an OS error (`errno`, `filename`) met in a Python override:
    /// a `RetryableError` the model can act on, or an `OSError` without the host path.
    #[pyo3(signature = (errno, filename))]
    fn raise_os_error(&self, errno: i32, filename: Option<String>) -> PyResult<()> {
        let name = filename.as_deref().map(std::ffi::OsStr::new);
        Err(self.inner.os_error_of(errno, name).into())
    }
}

/// 12 hex chars of sha256 of `data` as the reference's `_disk_hash`.
#[pyfunction]
fn content_hash(py: Python<'_>, data: &Bound<'_, PyBytes>) -> String {
    let bytes = data.as_bytes();
    if bytes.len() < (1 << 16) {
        crate::fs::read::hash::content_hash(bytes)
    } else {
        let owned = bytes.to_vec();
        py.detach(move || crate::fs::read::hash::content_hash(&owned))
    }
}

/// 12 hex chars of sha256 of `text` encoded as UTF-8.
#[pyfunction]
fn text_hash(text: &str) -> String {
    crate::fs::read::hash::text_hash(text)
}

/// The event diff `(diff, truncated)` from `old` to `new` (see `diff::unified_diff`).
#[pyfunction]
fn unified_diff(
    py: Python<'_>,
    old: Option<String>,
    new: String,
    path: ModelPath,
) -> (String, bool) {
    py.detach(move || crate::fs::change::diff::unified_diff(old.as_deref(), &new, &path))
}

/// `text` with each `(old, new)` applied in order, each `old` matching exactly once
/// (`write::apply_replacements`; the custom-stream slow path of `edit_file`).
#[pyfunction]
fn apply_replacements(
    py: Python<'_>,
    text: String,
    replacements: Vec<PyReplacement>,
    path: ModelPath,
) -> PyResult<String> {
    run(py, move || {
        crate::fs::change::write::apply_replacements(&text, &replacements_of(replacements), &path)
    })
}

/// Adds the FileSystem classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFileSystemCore>()?;
    m.add_class::<PyOutcome>()?;
    m.add_class::<PyChangePlan>()?;
    m.add_class::<PyPatchPlan>()?;
    m.add_class::<PyPatchFile>()?;
    m.add_function(wrap_pyfunction!(content_hash, m)?)?;
    m.add_function(wrap_pyfunction!(text_hash, m)?)?;
    m.add_function(wrap_pyfunction!(unified_diff, m)?)?;
    m.add_function(wrap_pyfunction!(apply_replacements, m)?)?;
    Ok(())
}
