//! Python bindings of interactive sessions ([`crate::process::session`]): one `Session` handle
//! per program on a terminal. Every blocking call releases the GIL.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::{Error, ErrorKind};
use crate::process::session::{relay, Session, SessionSpec, SpillSpec, Woke};
use crate::py::shell::{env_pairs, sandbox_spec, seconds, PySandbox};
use crate::py::PyCancelToken;

/// `take_output()`'s result: `(head, tail, total_bytes, total_lines, truncated, screen,
/// cursor, size, spill_path, spill_cleared, spill_held)`.
type PyOutput<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    u64,
    u64,
    bool,
    Option<String>,
    (u16, u16),
    (u16, u16),
    Option<PathBuf>,
    bool,
    u64,
);

/// A program running on a pseudo-terminal in its own session; dropping the handle kills it.
#[pyclass(name = "Session", module = "pydantic_ai_harness_rs._core", frozen)]
pub struct PySession {
    inner: Session,
    /// The last `wait` pattern, compiled (a caller polling with one pattern compiles it once).
    pattern: std::sync::Mutex<Option<(String, regex::bytes::Regex)>>,
    /// The note a relayed session was started with (`''` for one in this process).
    note: String,
}

#[pymethods]
impl PySession {
    /// Starts `/bin/sh -c command` on a new `cols` x `rows` terminal in `cwd` with exactly
    /// `env`, in its own session with the terminal as its controlling terminal.
    ///
    /// `sandbox` is `None` or `(restrict_fs, writable_dirs, network)`; between two reads the
    /// transcript (cleaned text) keeps its first `head_bytes` and last `tail_bytes`. With
    /// `spill_dir`, a transcript past `spill_after` bytes (at most `head_bytes`) is written
    /// whole to `spill_dir/output-<32 hex>-stdout.log` as it arrives, each file kept under
    /// `max_log_bytes` (emptied to the jobs' notice). Raises `OSError` when the terminal, the
    /// sandbox or the spawn fails.
    #[staticmethod]
    #[pyo3(signature = (command, cwd, env, *, cols, rows, head_bytes, tail_bytes, sandbox=None, spill_dir=None, spill_after=0, max_log_bytes=None))]
    #[allow(clippy::too_many_arguments)]
    fn start<'py>(
        py: Python<'py>,
        command: &[u8],
        cwd: PathBuf,
        env: Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>,
        cols: u16,
        rows: u16,
        head_bytes: usize,
        tail_bytes: usize,
        sandbox: Option<PySandbox>,
        spill_dir: Option<PathBuf>,
        spill_after: u64,
        max_log_bytes: Option<u64>,
    ) -> PyResult<PySession> {
        let spill = spill_dir.map(|dir| SpillSpec {
            dir,
            after: spill_after,
            limit: max_log_bytes,
        });
        let spec = spec(
            command,
            cwd,
            env,
            (cols, rows),
            (head_bytes, tail_bytes),
            sandbox,
            spill,
        )?;
        let inner = py.detach(move || Session::start(spec))?;
        Ok(PySession::wrap(inner, String::new()))
    }

    /// Starts the session as `start` does, but on a terminal that a relay process holds, so it
    /// outlives this process: the relay (`python -I -S` loading the extension module `core`)
    /// runs in its own session and serves `directory` (created owner-only), where any process
    /// of this user finds the session again with `attach`. `note` (text) is handed back by
    /// `attach`. Dropping the handle leaves the program running; `stop` ends it, and so does
    /// removing `directory/sock`, or 15 minutes with no handle connected. Raises `OSError` when
    /// the directory, the relay, the terminal, the sandbox or the spawn fails.
    #[staticmethod]
    #[pyo3(signature = (directory, python, core, note, command, cwd, env, *, cols, rows, head_bytes, tail_bytes, sandbox=None))]
    #[allow(clippy::too_many_arguments)]
    fn start_relayed<'py>(
        py: Python<'py>,
        directory: PathBuf,
        python: PathBuf,
        core: PathBuf,
        note: String,
        command: &[u8],
        cwd: PathBuf,
        env: Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>,
        cols: u16,
        rows: u16,
        head_bytes: usize,
        tail_bytes: usize,
        sandbox: Option<PySandbox>,
    ) -> PyResult<PySession> {
        let kept = (head_bytes, tail_bytes);
        let spec = spec(command, cwd, env, (cols, rows), kept, sandbox, None)?;
        let found = py.detach(move || {
            relay::launch(&directory, &python, &core, &spec, &note)?;
            relay::attach(&directory, head_bytes, tail_bytes)
        })?;
        match found {
            Some((inner, note)) => Ok(PySession::wrap(inner, note)),
            None => Err(Error::new(
                ErrorKind::Io(std::io::ErrorKind::Other),
                "The session's program ended before it could be reached.",
            )
            .into()),
        }
    }

    /// The relayed session served in `directory` (`start_relayed`), driven from this process;
    /// `None` when no relay answers there (no such session, or its program has ended: then
    /// `published_exit_code(directory)` tells how). `head_bytes` and `tail_bytes` as for `start`.
    #[staticmethod]
    #[pyo3(signature = (directory, *, head_bytes, tail_bytes))]
    fn attach(
        py: Python<'_>,
        directory: PathBuf,
        head_bytes: usize,
        tail_bytes: usize,
    ) -> PyResult<Option<PySession>> {
        let found = py.detach(move || relay::attach(&directory, head_bytes, tail_bytes))?;
        Ok(found.map(|(inner, note)| PySession::wrap(inner, note)))
    }

    /// The exit code a relayed session's relay published in `directory` once its program
    /// ended, else `None`.
    #[staticmethod]
    fn published_exit_code(directory: PathBuf) -> Option<i32> {
        relay::published_exit(&directory)
    }

    /// Whether the relayed session in `directory` was lost (no relay answers, and it was killed
    /// before it published an exit code); its program, if it still runs, is ended (`SIGKILL`).
    #[staticmethod]
    fn relay_lost_in(py: Python<'_>, directory: PathBuf) -> bool {
        py.detach(move || relay::lost(&directory))
    }

    /// The `note` a relayed session was started with; `''` for one started by `start`.
    #[getter]
    fn note(&self) -> &str {
        &self.note
    }

    /// Sends `data` as typed keys. Raises `InvalidArgumentError` when the program has exited
    /// or has not read its input for 5 seconds.
    fn write(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let data = data.to_vec();
        Ok(py.detach(|| self.inner.write(&data))?)
    }

    /// Waits up to `timeout` seconds until `pattern` (a regular expression, matched against
    /// the raw output since the last read) appears, the program waits for input (with
    /// `until_input`) or it exits. Returns `'matched'`, `'waiting'`, `'exited'` or
    /// `'timed_out'`. Raises `InvalidPatternError` for a pattern that does not compile,
    /// `CancelledError` once `cancel` is cancelled.
    #[pyo3(signature = (pattern, until_input, timeout, cancel=None))]
    fn wait(
        &self,
        py: Python<'_>,
        pattern: Option<&str>,
        until_input: bool,
        timeout: f64,
        cancel: Option<PyRef<'_, PyCancelToken>>,
    ) -> PyResult<&'static str> {
        let regex = match pattern {
            Some(p) => Some(self.compiled(p)?),
            None => None,
        };
        let flag = cancel.map(|c| c.flag.clone());
        let woke = py.detach(|| {
            self.inner
                .wait(regex.as_ref(), until_input, seconds(timeout), flag.as_ref())
        })?;
        Ok(match woke {
            Woke::Matched => "matched",
            Woke::Waiting => "waiting",
            Woke::Exited => "exited",
            Woke::TimedOut => "timed_out",
        })
    }

    /// The output since the last read, which starts a new one: `(head, tail, total_bytes,
    /// total_lines, truncated, screen, cursor, size, spill_path, spill_cleared, spill_held)`; the
    /// transcript (UTF-8 text, cleaned) is `head + tail` (bytes between them dropped when
    /// `truncated`), `screen` the screen's text while a full-screen program has the alternate
    /// screen up (else `None`), `cursor` 1-based `(row, col)`, `size` `(cols, rows)`.
    /// `spill_path` is the file holding the whole transcript when it was cut or is longer than
    /// `room` chars (else `None`; the file is removed), `spill_cleared` whether `max_log_bytes`
    /// emptied it to the notice, `spill_held` the bytes of the transcript's end it holds then
    /// (after the notice; the whole transcript otherwise).
    #[pyo3(signature = (room=None))]
    fn take_output<'py>(&self, py: Python<'py>, room: Option<usize>) -> PyOutput<'py> {
        let out = py.detach(|| self.inner.take_output(room));
        let (spill_path, spill_cleared, spill_held) = match out.spill {
            Some(s) => (Some(s.path), s.cleared, s.held),
            None => (None, false, 0),
        };
        (
            PyBytes::new(py, &out.head),
            PyBytes::new(py, &out.tail),
            out.total,
            out.lines,
            out.truncated,
            out.screen,
            out.cursor,
            out.size,
            spill_path,
            spill_cleared,
            spill_held,
        )
    }

    /// Removes the spill files this session's reads kept; returns how many.
    fn remove_files(&self, py: Python<'_>) -> usize {
        py.detach(|| self.inner.remove_files())
    }

    /// Stops the program and every descendant (`SIGTERM`, up to `grace` seconds, `SIGKILL`);
    /// returns whether it had to be killed.
    fn stop(&self, py: Python<'_>, grace: f64) -> bool {
        let grace: Duration = seconds(grace);
        py.detach(|| self.inner.stop(grace))
    }

    /// The program's PID (its process group and session ID too).
    #[getter]
    fn pid(&self) -> i32 {
        self.inner.pid()
    }

    /// The exit code once it has exited (`128 + N` for signal `N`), else `None`.
    #[getter]
    fn exit_code(&self) -> Option<i32> {
        self.inner.exit_code()
    }

    /// Whether the relay of a relayed session was killed: the program was ended with it and
    /// its exit code is unknown (`exit_code` stays `None`; `write` raises `InvalidArgumentError`).
    #[getter]
    fn relay_lost(&self) -> bool {
        self.inner.relay_lost()
    }

    /// Bytes the program has printed in all.
    #[getter]
    fn output_bytes(&self) -> u64 {
        self.inner.bytes()
    }

    /// Seconds since the start.
    #[getter]
    fn runtime(&self) -> f64 {
        self.inner.runtime().as_secs_f64()
    }
}

impl PySession {
    fn wrap(inner: Session, note: String) -> PySession {
        PySession {
            inner,
            pattern: std::sync::Mutex::new(None),
            note,
        }
    }

    /// `pattern` compiled, from the one-entry cache when it was the last one.
    fn compiled(&self, pattern: &str) -> PyResult<regex::bytes::Regex> {
        let mut cached = self.pattern.lock().unwrap();
        if let Some((source, regex)) = cached.as_ref() {
            if source == pattern {
                return Ok(regex.clone());
            }
        }
        let regex = regex::bytes::Regex::new(pattern).map_err(|e| {
            Error::new(
                ErrorKind::InvalidPattern,
                format!("Invalid wait_for pattern {pattern:?}: {e}"),
            )
        })?;
        *cached = Some((pattern.to_string(), regex.clone()));
        Ok(regex)
    }
}

/// The spec `start` and `start_relayed` give: `command` on a `(cols, rows)` terminal, the
/// transcript keeping `kept` (`(head_bytes, tail_bytes)`) between two reads.
///
/// Errors: `ValueError` for an environment name or value with a NUL byte, or a name that is
/// empty or holds `=`.
fn spec(
    command: &[u8],
    cwd: PathBuf,
    env: Vec<(Bound<'_, PyBytes>, Bound<'_, PyBytes>)>,
    (cols, rows): (u16, u16),
    (head_bytes, tail_bytes): (usize, usize),
    sandbox: Option<PySandbox>,
    spill: Option<SpillSpec>,
) -> PyResult<SessionSpec> {
    Ok(SessionSpec {
        command: command.to_vec(),
        cwd,
        env: env_pairs(env)?,
        cols,
        rows,
        sandbox: sandbox_spec(sandbox),
        head_bytes,
        tail_bytes,
        spill,
    })
}

/// A relayed session's relay process (`Session.start_relayed` starts it): serves `directory`
/// until the program ends. Not for direct use.
#[pyfunction]
fn _session_relay(directory: PathBuf) -> PyResult<()> {
    Ok(relay::serve(&directory)?)
}

/// Adds `Session` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySession>()?;
    m.add_function(wrap_pyfunction!(_session_relay, m)?)?;
    Ok(())
}
