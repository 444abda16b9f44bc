//! Python bindings of the process supervisor ([`crate::process`]): a foreground command
//! handle and the background job operations. Every blocking call releases the GIL.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::process::foreground::{Foreground, RunSpec, Step};
use crate::process::job::{self, JobHandle, Launch, LaunchSpec};
use crate::process::outcome::{Captured, RunOutcome};
use crate::process::sandbox::{self, SandboxSpec};

type EnvPairs = Vec<(Vec<u8>, Vec<u8>)>;

/// The Python form of a sandbox: `(restrict_fs, writable_dirs, network)`.
pub(crate) type PySandbox = (bool, Vec<PathBuf>, bool);

pub(crate) fn sandbox_spec(value: Option<PySandbox>) -> Option<SandboxSpec> {
    value.map(|(restrict_fs, writable, network)| SandboxSpec {
        restrict_fs,
        writable,
        network,
    })
}

/// A captured stream as `(head, tail, total_bytes, total_lines, truncated, spilled)`.
type PyCaptured<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    u64,
    u64,
    bool,
    bool,
);

/// `run_captured`'s result: `(exit_code, signal, timed_out, stdout, stderr)`.
type PyOutcome<'py> = (i32, Option<i32>, bool, PyCaptured<'py>, PyCaptured<'py>);

fn outcome<'py>(py: Python<'py>, o: &RunOutcome) -> PyOutcome<'py> {
    (
        o.exit_code,
        o.signal,
        o.timed_out,
        captured(py, &o.stdout),
        captured(py, &o.stderr),
    )
}

fn captured<'py>(py: Python<'py>, c: &Captured) -> PyCaptured<'py> {
    (
        PyBytes::new(py, &c.head),
        PyBytes::new(py, &c.tail),
        c.total,
        c.lines,
        c.truncated,
        c.spilled,
    )
}

pub(crate) fn env_pairs(env: Vec<(Bound<'_, PyBytes>, Bound<'_, PyBytes>)>) -> PyResult<EnvPairs> {
    env.into_iter()
        .map(|(k, v)| {
            let (k, v) = (k.as_bytes().to_vec(), v.as_bytes().to_vec());
            if k.contains(&0) || v.contains(&0) {
                return Err(PyValueError::new_err("embedded null byte"));
            }
            if k.is_empty() || k.contains(&b'=') {
                return Err(PyValueError::new_err("illegal environment variable name"));
            }
            Ok((k, v))
        })
        .collect()
}

/// The longest wait honoured, about 34 years: a longer one (`timeout_seconds=1e308`) would
/// overflow the `Instant` its deadline is taken from.
const MAX_WAIT: Duration = Duration::from_secs(1 << 30);

pub(crate) fn seconds(value: f64) -> Duration {
    Duration::try_from_secs_f64(value.max(0.0))
        .unwrap_or(MAX_WAIT)
        .min(MAX_WAIT)
}

/// One foreground command: `run(...)` blocks (GIL released) until it ends; `kill()` from any
/// thread, or dropping the handle, kills its whole process group.
#[pyclass(
    name = "ForegroundCommand",
    module = "pydantic_ai_harness_rs._core",
    frozen
)]
pub struct PyForegroundCommand {
    inner: Arc<Foreground>,
}

#[pymethods]
impl PyForegroundCommand {
    #[new]
    fn new() -> Self {
        PyForegroundCommand {
            inner: Foreground::new(),
        }
    }

    /// Runs `/bin/sh -c prologue+command` in `cwd` with exactly `env` and waits for it.
    ///
    /// `prologue` is the script's start, `command` the model's command that ends it.
    /// `timeout` is in seconds (`None`: no limit), `max_file_bytes` the per-file size limit,
    /// `tail_bytes` how much of the end of each stream is kept. Returns `(exit_code,
    /// stdout_tail, stderr_tail, timed_out)`; exit codes of signal deaths are `128 + N`.
    /// Raises `CommandTooLongError` when the OS refuses `command` as too long, `OSError` when
    /// the spawn fails otherwise (or the sandbox cannot be prepared), `CancelledError` after
    /// `kill()`. The script `/bin/sh -c` runs is `prologue + command`.
    ///
    /// `sandbox` is `None` or `(restrict_fs, writable_dirs, network)` (Landlock, enforced
    /// before exec); `reap_descendants` starts the shell as a child subreaper, so a timeout
    /// or `kill()` also ends descendants that left its group.
    #[pyo3(signature = (prologue, command, cwd, env, timeout, max_file_bytes, tail_bytes, *, sandbox=None, reap_descendants=false))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &self,
        py: Python<'py>,
        prologue: &[u8],
        command: &[u8],
        cwd: PathBuf,
        env: Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>,
        timeout: Option<f64>,
        max_file_bytes: Option<u64>,
        tail_bytes: usize,
        sandbox: Option<PySandbox>,
        reap_descendants: bool,
    ) -> PyResult<(i32, Bound<'py, PyBytes>, Bound<'py, PyBytes>, bool)> {
        let spec = run_spec(
            prologue,
            command,
            cwd,
            env,
            timeout,
            max_file_bytes,
            tail_bytes,
            sandbox,
            reap_descendants,
        )?;
        let inner = self.inner.clone();
        let outcome = py.detach(move || inner.run(spec))?;
        Ok((
            outcome.exit_code,
            PyBytes::new(py, &outcome.stdout.tail),
            PyBytes::new(py, &outcome.stderr.tail),
            outcome.timed_out,
        ))
    }

    /// Like `run`, keeping `head_bytes` from the start of each stream as well, and writing
    /// a stream to its `spill` path (`(stdout_path, stderr_path)`, either `None`) once it
    /// outgrows head and tail.
    ///
    /// Returns `(exit_code, signal, timed_out, stdout, stderr)`, each stream as `(head, tail,
    /// total_bytes, total_lines, truncated, spilled)`; `signal` is the number that ended the
    /// shell, or `None`.
    #[pyo3(signature = (prologue, command, cwd, env, timeout, max_file_bytes, tail_bytes, *, head_bytes, spill, sandbox=None, reap_descendants=false))]
    #[allow(clippy::too_many_arguments)]
    fn run_captured<'py>(
        &self,
        py: Python<'py>,
        prologue: &[u8],
        command: &[u8],
        cwd: PathBuf,
        env: Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>,
        timeout: Option<f64>,
        max_file_bytes: Option<u64>,
        tail_bytes: usize,
        head_bytes: usize,
        spill: (Option<PathBuf>, Option<PathBuf>),
        sandbox: Option<PySandbox>,
        reap_descendants: bool,
    ) -> PyResult<PyOutcome<'py>> {
        let mut spec = run_spec(
            prologue,
            command,
            cwd,
            env,
            timeout,
            max_file_bytes,
            tail_bytes,
            sandbox,
            reap_descendants,
        )?;
        spec.head_bytes = head_bytes;
        spec.spill = [spill.0, spill.1];
        let inner = self.inner.clone();
        let ended = py.detach(move || inner.run(spec))?;
        Ok(outcome(py, &ended))
    }

    /// Spawns the command as `run_captured` would (same arguments), for a caller that waits
    /// on its own event loop, and returns at once: a file descriptor that is readable whenever
    /// `step()` has something to do, or `None` (nothing spawned) where that cannot be done
    /// (no pidfds, no glibc, or `reap_descendants` off); then call `run_captured`.
    ///
    /// The spawn happens on the calling thread, with the GIL released. The descriptor is the
    /// handle's own: do not close it. Raises as `run_captured`'s spawn does.
    #[pyo3(signature = (prologue, command, cwd, env, timeout, max_file_bytes, tail_bytes, *, head_bytes, spill, sandbox=None, reap_descendants=false))]
    #[allow(clippy::too_many_arguments)]
    fn start<'py>(
        &self,
        py: Python<'py>,
        prologue: &[u8],
        command: &[u8],
        cwd: PathBuf,
        env: Vec<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>,
        timeout: Option<f64>,
        max_file_bytes: Option<u64>,
        tail_bytes: usize,
        head_bytes: usize,
        spill: (Option<PathBuf>, Option<PathBuf>),
        sandbox: Option<PySandbox>,
        reap_descendants: bool,
    ) -> PyResult<Option<i32>> {
        let mut spec = run_spec(
            prologue,
            command,
            cwd,
            env,
            timeout,
            max_file_bytes,
            tail_bytes,
            sandbox,
            reap_descendants,
        )?;
        spec.head_bytes = head_bytes;
        spec.spill = [spill.0, spill.1];
        let inner = self.inner.clone();
        Ok(py.detach(move || inner.start(spec))?)
    }

    /// Does what can be done now for the command `start()` spawned, never waiting (at most
    /// 1 MiB is read from each pipe per call).
    ///
    /// Returns `None` (wait until the descriptor is readable, then call again), `'finish'`
    /// (the rest may block: call `finish()` on a worker thread), or `run_captured`'s result.
    /// Raises `CancelledError` after `kill()`.
    fn step<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        Ok(match py.detach(move || inner.step())? {
            Step::Wait => py.None().into_bound(py),
            Step::Finish => "finish".into_pyobject(py)?.into_any(),
            Step::Done(ended) => outcome(py, &ended).into_pyobject(py)?.into_any(),
        })
    }

    /// The rest of the command after `step()` returned `'finish'`; blocks (GIL released)
    /// until it ends. Returns `run_captured`'s result; raises `CancelledError` after `kill()`.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<PyOutcome<'py>> {
        let inner = self.inner.clone();
        let ended = py.detach(move || inner.finish())?;
        Ok(outcome(py, &ended))
    }

    /// Kills the command's process group at once (or prevents a spawn not yet made); a
    /// command `start()` spawned is ended, whole tree, on a thread of its own.
    fn kill(&self) {
        self.inner.kill();
    }
}

#[allow(clippy::too_many_arguments)]
fn run_spec(
    prologue: &[u8],
    command: &[u8],
    cwd: PathBuf,
    env: Vec<(Bound<'_, PyBytes>, Bound<'_, PyBytes>)>,
    timeout: Option<f64>,
    max_file_bytes: Option<u64>,
    tail_bytes: usize,
    sandbox: Option<PySandbox>,
    reap_descendants: bool,
) -> PyResult<RunSpec> {
    if prologue.contains(&0) || command.contains(&0) {
        return Err(PyValueError::new_err("embedded null byte"));
    }
    Ok(RunSpec {
        prologue: prologue.to_vec(),
        command: command.to_vec(),
        cwd,
        env: env_pairs(env)?,
        timeout: timeout.map(seconds),
        max_file_bytes,
        tail_bytes,
        head_bytes: 0,
        spill: [None, None],
        sandbox: sandbox_spec(sandbox),
        reap_descendants,
    })
}

/// The Landlock ABI of this kernel (`0`: none), and why a sandbox with `network` allowed or
/// not cannot be enforced (`None` when it can).
#[pyfunction]
fn sandbox_support(network: bool) -> (i32, Option<String>) {
    let spec = SandboxSpec {
        restrict_fs: true,
        writable: Vec::new(),
        network,
    };
    (sandbox::abi_version(), sandbox::unsupported_reason(&spec))
}

fn handle_tuple(h: JobHandle) -> (i32, Option<i32>) {
    (h.pid, h.pgid)
}

/// Starts a background job in `dir` (see `process::job::launch`).
///
/// Returns `(pid, pgid)`, or `None` when `exclusive` and the directory holds a job (its `handle`
/// is there) or a launch a live launcher is still making; a claim whose launcher died before its
/// command could start is taken over and launched afresh.
/// Raises `CommandTooLongError` when the OS refuses `command` as too long, `OSError` for any
/// other failure (the directory is then removed).
///
/// `sandbox` is `None` or `(restrict_fs, writable_dirs, network)`, as for `ForegroundCommand.run`;
/// `reap_descendants` starts the wrapper as a child subreaper.
#[pyfunction]
#[pyo3(signature = (dir, cwd, env, command, combined, max_file_bytes, max_log_bytes, exclusive, *, sandbox=None, reap_descendants=false))]
#[allow(clippy::too_many_arguments)]
fn job_launch(
    py: Python<'_>,
    dir: PathBuf,
    cwd: PathBuf,
    env: Vec<(Bound<'_, PyBytes>, Bound<'_, PyBytes>)>,
    command: &[u8],
    combined: bool,
    max_file_bytes: Option<u64>,
    max_log_bytes: Option<u64>,
    exclusive: bool,
    sandbox: Option<PySandbox>,
    reap_descendants: bool,
) -> PyResult<Option<(i32, Option<i32>)>> {
    if command.contains(&0) {
        return Err(PyValueError::new_err("embedded null byte"));
    }
    let spec = LaunchSpec {
        dir,
        cwd,
        env: env_pairs(env)?,
        command: command.to_vec(),
        combined,
        max_file_bytes,
        max_log_bytes,
        exclusive,
        sandbox: sandbox_spec(sandbox),
        reap_descendants,
    };
    match py.detach(move || job::launch(spec))? {
        Launch::Started(h) => Ok(Some(handle_tuple(h))),
        Launch::Exists => Ok(None),
    }
}

/// The `(pid, pgid)` in `dir/handle`, or `None` when there is no usable handle.
#[pyfunction]
fn job_attach(py: Python<'_>, dir: PathBuf) -> Option<(i32, Option<i32>)> {
    py.detach(move || job::attach(&dir)).map(handle_tuple)
}

/// Whether the job in `dir` is over: no handle, an exit code published, or no process of it
/// left (its wrapper killed before it could publish).
#[pyfunction]
fn job_ended(py: Python<'_>, dir: PathBuf) -> bool {
    py.detach(move || job::ended(&dir))
}

/// The CPU time the job in `dir` has used so far, in nanoseconds; `None` when it cannot be told.
/// The same reading twice means the job ran no instruction in between.
#[pyfunction]
fn job_cpu_ns(py: Python<'_>, dir: PathBuf) -> Option<u64> {
    py.detach(move || job::cpu_ns(&dir))
}

/// `dir/status.json` as published (lossily decoded), or `None` before it exists.
#[pyfunction]
fn job_status(py: Python<'_>, dir: PathBuf) -> Option<String> {
    py.detach(move || job::status_text(&dir))
}

/// Size of the file at `path` in bytes, 0 when missing.
#[pyfunction]
fn job_size(py: Python<'_>, path: PathBuf) -> u64 {
    py.detach(move || job::size(&path))
}

/// Up to `length` bytes of `path` from `offset` (empty when missing).
#[pyfunction]
fn job_read<'py>(
    py: Python<'py>,
    path: PathBuf,
    offset: u64,
    length: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let data = py.detach(move || job::read_at(&path, offset, length))?;
    Ok(PyBytes::new(py, &data))
}

/// The last `max_bytes` bytes of `path` (empty when missing).
#[pyfunction]
fn job_tail<'py>(py: Python<'py>, path: PathBuf, max_bytes: u64) -> PyResult<Bound<'py, PyBytes>> {
    let data = py.detach(move || job::tail(&path, max_bytes))?;
    Ok(PyBytes::new(py, &data))
}

/// Stops the job: `SIGTERM` to its group, `grace` seconds, then `SIGKILL`.
///
/// Returns `'gone'` (nothing was left to signal), `'ended'` (the command ended within the
/// grace) or `'killed'` (still running after the grace: its group got `SIGKILL`). Raises
/// `OSError` for a refused signal.
#[pyfunction]
fn job_kill(
    py: Python<'_>,
    dir: PathBuf,
    pid: i32,
    pgid: Option<i32>,
    grace: f64,
) -> PyResult<&'static str> {
    let stopped = py.detach(move || job::kill(&dir, JobHandle { pid, pgid }, seconds(grace)))?;
    Ok(match stopped {
        job::Stopped::Gone => "gone",
        job::Stopped::Ended => "ended",
        job::Stopped::Killed => "killed",
    })
}

/// Waits up to `timeout` seconds for the wrapper `pid` to exit; returns whether it has.
#[pyfunction]
fn job_wait(py: Python<'_>, pid: i32, timeout: f64) -> bool {
    py.detach(move || job::wait_exit(pid, seconds(timeout)))
}

/// Removes the job directory `dir` (a missing one is fine).
#[pyfunction]
fn job_cleanup(py: Python<'_>, dir: PathBuf) -> PyResult<()> {
    Ok(py.detach(move || job::cleanup(&dir))?)
}

/// Removes finished jobs under `base`: those that finished more than `max_age` seconds ago,
/// then the oldest until the rest hold at most `max_total_bytes` (`None` skips a rule).
/// Running jobs are never removed. Returns `(jobs, bytes)` removed.
#[pyfunction]
#[pyo3(signature = (base, max_age, max_total_bytes))]
fn job_prune(
    py: Python<'_>,
    base: PathBuf,
    max_age: Option<f64>,
    max_total_bytes: Option<u64>,
) -> (usize, u64) {
    let pruned = py.detach(move || {
        let age = max_age.map(|a| Duration::try_from_secs_f64(a.max(0.0)).unwrap_or(Duration::MAX));
        crate::process::retention::prune(&base, age, max_total_bytes)
    });
    (pruned.jobs, pruned.bytes)
}

/// Adds the shell classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyForegroundCommand>()?;
    m.add("COMMAND_TOO_LONG", crate::process::spawn::COMMAND_TOO_LONG)?;
    m.add("LOG_WATCHER", job::LOG_WATCHER)?;
    m.add("LOG_CHECK_INTERVAL", job::LOG_CHECK_INTERVAL)?;
    m.add_function(wrap_pyfunction!(job_launch, m)?)?;
    m.add_function(wrap_pyfunction!(sandbox_support, m)?)?;
    m.add_function(wrap_pyfunction!(job_attach, m)?)?;
    m.add_function(wrap_pyfunction!(job_status, m)?)?;
    m.add_function(wrap_pyfunction!(job_ended, m)?)?;
    m.add_function(wrap_pyfunction!(job_cpu_ns, m)?)?;
    m.add_function(wrap_pyfunction!(job_size, m)?)?;
    m.add_function(wrap_pyfunction!(job_read, m)?)?;
    m.add_function(wrap_pyfunction!(job_tail, m)?)?;
    m.add_function(wrap_pyfunction!(job_kill, m)?)?;
    m.add_function(wrap_pyfunction!(job_wait, m)?)?;
    m.add_function(wrap_pyfunction!(job_cleanup, m)?)?;
    m.add_function(wrap_pyfunction!(job_prune, m)?)?;
    Ok(())
}
