//! Foreground commands: run `/bin/sh -c script`, capture the tail of stdout and stderr, and
//! stop the whole process group on timeout or when the caller gives up.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::process::group::{signal_group, wait_group_gone};
use crate::process::outcome::{
    os_reason, shell_exit_code, Captured, RunOutcome, OUTPUT_DRAIN_GRACE, REAP_GRACE, TIMEOUT_GRACE,
};
use crate::process::reaper::Tree;
use crate::process::sandbox::{Prepared, SandboxSpec};
use crate::process::spawn::{spawn_error, spawn_shell, Child, ShellArgs, Sink};
use crate::process::tail::HeadTail;

/// Bytes read from a pipe at once.
const READ_CHUNK: usize = 64 * 1024;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The lines before the model's command (the script for `/bin/sh -c` is `prologue` +
    /// `command`), so a refusal as too long can tell whose bytes are to blame.
    pub prologue: Vec<u8>,
    /// The model's command, the end of the script.
    pub command: Vec<u8>,
    /// The directory the shell starts in.
    pub cwd: PathBuf,
    /// The complete environment, as `(name, value)` bytes.
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
    /// Time until the group is stopped; `None` waits forever.
    pub timeout: Option<Duration>,
    /// Per-file size limit (`RLIMIT_FSIZE`) in bytes, before rounding to blocks.
    pub max_file_bytes: Option<u64>,
    /// Bytes kept from the end of each of stdout and stderr.
    pub tail_bytes: usize,
    /// Bytes kept from the start of each of stdout and stderr (before the tail; `0`: none).
    pub head_bytes: usize,
    /// Files the whole of stdout and stderr are written to once they outgrow head and tail.
    pub spill: [Option<PathBuf>; 2],
    /// The Landlock sandbox the command runs in, if any.
    pub sandbox: Option<SandboxSpec>,
    /// Start the shell as a child subreaper, so a timeout or a kill also ends descendants
    /// that left its process group ([`crate::process::reaper`]).
    pub reap_descendants: bool,
}

impl RunSpec {
    /// The shell this spec runs, given its arguments and its prepared sandbox.
    fn shell<'a>(&'a self, args: &'a [Vec<u8>], sandbox: Option<&'a Prepared>) -> ShellArgs<'a> {
        ShellArgs {
            args,
            cwd: &self.cwd,
            env: &self.env,
            file_limit: self.max_file_bytes,
            sandbox,
            subreaper: self.reap_descendants,
        }
    }
}

/// One foreground command: [`Foreground::run`] blocks until it ends; [`Foreground::kill`]
/// (from any thread, or dropping the handle) kills its whole process group at once.
#[derive(Debug, Default)]
pub struct Foreground {
    killed: AtomicBool,
    notify: Notify,
    /// An eventfd written by [`Foreground::kill`], which wakes a [`crate::process::wait::direct`] wait.
    wake: Option<OwnedFd>,
    /// The command [`Foreground::start`] spawned, until it is done or killed.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    stepped: Mutex<Option<crate::process::wait::stepped::Stepped>>,
}

/// What the caller of [`Foreground::step`] does next.
#[derive(Debug)]
pub enum Step {
    /// Wait until the descriptor [`Foreground::start`] returned is readable, then step.
    Wait,
    /// Call [`Foreground::finish`] on a worker thread: the rest may block.
    Finish,
    /// The command ended.
    Done(RunOutcome),
}

/// A non-blocking eventfd, or `None` where there is none.
fn eventfd() -> Option<OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: eventfd returns a new fd we own, or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
    }
    #[cfg(not(target_os = "linux"))]
    None
}

impl Foreground {
    /// A handle that has not started anything yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Foreground {
            killed: AtomicBool::new(false),
            notify: Notify::new(),
            wake: eventfd(),
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            stepped: Mutex::new(None),
        })
    }

    /// Kills the command's process group (`SIGKILL`); before the spawn, prevents it.
    ///
    /// A command [`Foreground::start`] spawned is ended (its whole tree, as a cancelled
    /// [`Foreground::run`] ends it) on a thread of its own, so the caller never waits.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.notify.notify_one();
        if let Some(fd) = &self.wake {
            let one = 1u64;
            // SAFETY: writing 8 bytes from a local to an eventfd we own.
            unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        }
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        if let Some(stepped) = self
            .stepped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            let _ = std::thread::Builder::new()
                .name("harness-cancel".into())
                .spawn(move || stepped.cancel());
        }
    }

    /// Spawns the command for a caller that waits on its own event loop: returns a descriptor
    /// that is readable whenever [`Foreground::step`] has something to do, or `None` (nothing
    /// spawned) where this cannot be done; then [`Foreground::run`] is the way.
    ///
    /// Only a shell that reaps its descendants is stepped (Linux 5.3+ with pidfds, glibc).
    /// The spawn itself happens on the calling thread. Errors: as [`Foreground::run`]'s spawn.
    pub fn start(&self, spec: RunSpec) -> Result<Option<std::os::fd::RawFd>> {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        if spec.reap_descendants
            && self.wake.is_some()
            && crate::process::wait::direct::pidfds_supported()
        {
            return self.start_stepped(spec).map(Some);
        }
        let _ = spec;
        Ok(None)
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn start_stepped(&self, spec: RunSpec) -> Result<std::os::fd::RawFd> {
        use crate::process::wait::direct::{pidfd_open, Direct};
        use crate::process::wait::stepped::{descriptors, Stepped};
        if self.killed.load(Ordering::SeqCst) {
            return Err(Error::cancelled());
        }
        let started = std::time::Instant::now();
        let unable = |e: std::io::Error| {
            Error::io(
                &e,
                format!("Unable to start the command: {}", os_reason(&e)),
            )
        };
        let fds = descriptors().map_err(unable)?;
        let (pid, out, err) = Self::clone_piped(&spec)?;
        let Some(pidfd) = pidfd_open(pid) else {
            let e = std::io::Error::last_os_error();
            let _ = signal_group(pid, Some(Signal::SIGKILL));
            // SAFETY: reaping our own child, just killed.
            unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
            return Err(unable(e));
        };
        let captures = Self::captures(&spec);
        let direct = Direct::new(pid, pidfd, out, err, captures);
        let deadline = spec.timeout.map(|t| started + t);
        let stepped = Stepped::new(direct, fds, deadline, spec.reap_descendants).map_err(unable)?;
        let fd = stepped.fd();
        *self.stepped.lock().unwrap_or_else(|e| e.into_inner()) = Some(stepped);
        if self.killed.load(Ordering::SeqCst) {
            // Killed during the spawn: `kill` may have found nothing to end yet.
            self.kill();
            return Err(Error::cancelled());
        }
        Ok(fd)
    }

    /// Does what can be done now for the command [`Foreground::start`] spawned, without
    /// waiting. Errors: `Cancelled` after [`Foreground::kill`].
    pub fn step(&self) -> Result<Step> {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            use crate::process::wait::stepped::Step as Inner;
            let mut slot = self.stepped.lock().unwrap_or_else(|e| e.into_inner());
            let Some(stepped) = slot.as_mut() else {
                return Err(Error::cancelled());
            };
            return Ok(match stepped.step() {
                Inner::Wait => Step::Wait,
                Inner::Finish => Step::Finish,
                Inner::Done(outcome) => {
                    *slot = None;
                    Step::Done(outcome)
                }
            });
        }
        #[allow(unreachable_code)]
        Err(Error::cancelled())
    }

    /// Does the rest of the command after [`Step::Finish`], blocking (on a worker thread).
    /// Errors: `Cancelled` after [`Foreground::kill`].
    pub fn finish(&self) -> Result<RunOutcome> {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            let taken = self
                .stepped
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let (Some(stepped), Some(wake)) = (taken, &self.wake) {
                return stepped.finish(wake.as_fd());
            }
        }
        Err(Error::cancelled())
    }

    /// Spawns the command and waits for it, on the calling thread.
    ///
    /// A shell that reaps its descendants (Linux, glibc) is waited for by [`crate::process::wait::direct`],
    /// on this thread alone; otherwise through the supervisor's runtime.
    /// Errors: the spawn's OS error (`ErrorKind::Io`), or `Cancelled` after [`Foreground::kill`].
    ///
    /// A run that ends in an error (cancelled by [`Foreground::kill`], or failed) removes the
    /// spill files it may have written: no result names them.
    pub fn run(&self, spec: RunSpec) -> Result<RunOutcome> {
        let spill = spec.spill.clone();
        let result = self.run_unspilled(spec);
        if result.is_err() {
            for path in spill.iter().flatten() {
                let _ = std::fs::remove_file(path);
            }
        }
        result
    }

    fn run_unspilled(&self, spec: RunSpec) -> Result<RunOutcome> {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        if spec.reap_descendants {
            if let Some(wake) = &self.wake {
                return self.run_direct(spec, wake.as_fd());
            }
        }
        crate::process::block_on(self.run_async(spec))
    }

    /// The script's arguments and the prepared sandbox, or the error preparing it.
    fn prepare(spec: &RunSpec) -> Result<(Vec<Vec<u8>>, Option<Prepared>)> {
        let args = vec![b"-c".to_vec(), [&spec.prologue[..], &spec.command].concat()];
        let sandbox = match &spec.sandbox {
            Some(s) => Some(Prepared::new(s).map_err(|e| {
                Error::io(
                    &e,
                    format!("Unable to prepare the sandbox: {}", os_reason(&e)),
                )
            })?),
            None => None,
        };
        Ok((args, sandbox))
    }

    /// Spawns the shell as a child subreaper in its own session with both outputs piped
    /// ([`crate::process::spawn::clone::spawn`]). Errors: the sandbox's preparation, or the spawn's error as
    /// [`spawn_error`] words it (`CommandTooLong` when the model's command is the cause).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn clone_piped(spec: &RunSpec) -> Result<crate::process::spawn::clone::Raw> {
        let (args, sandbox) = Self::prepare(spec)?;
        let shell = ShellArgs {
            subreaper: true,
            ..spec.shell(&args, sandbox.as_ref())
        };
        crate::process::spawn::clone::spawn(shell, Sink::Pipe, Sink::Pipe).map_err(|e| {
            let without = [b"-c".to_vec(), spec.prologue.clone()];
            crate::process::block_on(spawn_error(e, &without, &spec.cwd, &spec.env))
        })
    }

    /// What keeps stdout's and stderr's bytes: `head_bytes` and `tail_bytes` of each, spilled
    /// to `spec.spill`'s files once outgrown.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn captures(spec: &RunSpec) -> [HeadTail; 2] {
        let [out_spill, err_spill] = spec.spill.clone();
        [
            HeadTail::new(spec.head_bytes, spec.tail_bytes, out_spill),
            HeadTail::new(spec.head_bytes, spec.tail_bytes, err_spill),
        ]
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn run_direct(&self, spec: RunSpec, wake: BorrowedFd<'_>) -> Result<RunOutcome> {
        use crate::process::wait::direct::{pidfd_open, Direct};
        if self.killed.load(Ordering::SeqCst) {
            return Err(Error::cancelled());
        }
        let started = std::time::Instant::now();
        let (pid, out, err) = Self::clone_piped(&spec)?;
        let Some(pidfd) = pidfd_open(pid) else {
            // No pidfds (Linux before 5.3): wait through the runtime.
            let tokio_started = Instant::now() - started.elapsed();
            return crate::process::block_on(async {
                let spawned = crate::process::spawn::wrap_cloned(pid, out, err).map_err(|e| {
                    Error::io(
                        &e,
                        format!("Unable to start the command: {}", os_reason(&e)),
                    )
                })?;
                self.wait_spawned(spawned, spec, tokio_started).await
            });
        };
        let captures = Self::captures(&spec);
        Direct::new(pid, pidfd, out, err, captures).finish(
            spec.timeout.map(|t| started + t),
            wake,
            spec.reap_descendants,
        )
    }

    async fn run_async(&self, spec: RunSpec) -> Result<RunOutcome> {
        if self.killed.load(Ordering::SeqCst) {
            return Err(Error::cancelled());
        }
        let started = Instant::now();
        let (args, sandbox) = Self::prepare(&spec)?;
        let spawned = match spawn_shell(spec.shell(&args, sandbox.as_ref()), Sink::Pipe, Sink::Pipe)
        {
            Ok(spawned) => spawned,
            Err(e) => {
                let without = [b"-c".to_vec(), spec.prologue];
                return Err(spawn_error(e, &without, &spec.cwd, &spec.env).await);
            }
        };
        self.wait_spawned(spawned, spec, started).await
    }

    async fn wait_spawned(
        &self,
        spawned: crate::process::spawn::Spawned,
        spec: RunSpec,
        started: Instant,
    ) -> Result<RunOutcome> {
        let mut child = spawned.child;
        let pgid = child.id();
        let [out_spill, err_spill] = spec.spill;
        let capture = |spill| HeadTail::new(spec.head_bytes, spec.tail_bytes, spill);
        let stdout = Arc::new(Mutex::new(capture(out_spill)));
        let stderr = Arc::new(Mutex::new(capture(err_spill)));
        let readers = [
            spawned
                .stdout
                .map(|p| tokio::spawn(read_into(p, stdout.clone()))),
            spawned
                .stderr
                .map(|p| tokio::spawn(read_into(p, stderr.clone()))),
        ];
        let deadline = spec.timeout.map(|t| started + t);
        let until_deadline = async {
            match deadline {
                Some(d) => crate::process::wait::deadline::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };

        enum Ended {
            Exited(std::io::Result<ExitStatus>),
            TimedOut,
            Killed,
        }
        let ended = tokio::select! {
            status = child.wait() => Ended::Exited(status),
            _ = until_deadline => Ended::TimedOut,
            _ = self.notify.notified() => Ended::Killed,
        };

        let (status, timed_out, drain) = match ended {
            Ended::Exited(status) => {
                let grace = Instant::now() + OUTPUT_DRAIN_GRACE;
                let drain_until = deadline.map_or(grace, |d| d.min(grace));
                (status, false, drain_until)
            }
            Ended::TimedOut => {
                if spec.reap_descendants {
                    // Left stopped: `stop` sends the `SIGTERM` before the `SIGCONT`.
                    Tree::end_outside(pgid, REAP_GRACE).await;
                }
                let status = stop(&mut child, pgid, TIMEOUT_GRACE).await;
                (status, true, Instant::now() + TIMEOUT_GRACE)
            }
            Ended::Killed => {
                if spec.reap_descendants {
                    Tree::end_outside(pgid, REAP_GRACE).await;
                }
                let _ = signal_group(pgid, Some(Signal::SIGKILL));
                let _ = child.wait().await;
                for reader in readers.into_iter().flatten() {
                    reader.abort();
                }
                return Err(Error::cancelled());
            }
        };
        let status = status.map_err(|e| {
            Error::io(
                &e,
                format!("Unable to wait for the command: {}", os_reason(&e)),
            )
        })?;
        for reader in readers.into_iter().flatten() {
            let abort = reader.abort_handle();
            tokio::select! {
                _ = reader => {}
                _ = tokio::time::sleep_until(drain) => abort.abort(),
                _ = self.notify.notified() => { abort.abort(); return Err(Error::cancelled()); }
            }
        }
        let take = |buf: &Arc<Mutex<HeadTail>>| {
            Captured::from(std::mem::replace(
                &mut *buf.lock().unwrap(),
                HeadTail::new(0, 0, None),
            ))
        };
        Ok(RunOutcome {
            exit_code: shell_exit_code(status),
            signal: status.signal(),
            stdout: take(&stdout),
            stderr: take(&stderr),
            timed_out,
        })
    }
}

/// Stops the shell's group as [`crate::process::group::stop_group`] does (`SIGTERM`, up to `grace` for the group to
/// end, then `SIGKILL`) and reaps the shell, waiting on events rather than polling: the shell's
/// exit and a pidfd per group member found before the signal. Only a group that still has a
/// process once all of those exited (one forked meanwhile, or a zombie its new parent has not
/// reaped yet) is polled for, as [`wait_group_gone`] does.
async fn stop(child: &mut Child, pgid: i32, grace: Duration) -> std::io::Result<ExitStatus> {
    let deadline = Instant::now() + grace;
    let members = Tree::group(pgid);
    if !matches!(signal_group(pgid, Some(Signal::SIGTERM)), Ok(true)) {
        return child.wait().await;
    }
    // A stopped member acts on the `SIGTERM` once continued.
    let _ = signal_group(pgid, Some(Signal::SIGCONT));
    let ended = tokio::time::timeout_at(deadline, async {
        let status = child.wait().await;
        members.wait_exited().await;
        status
    })
    .await;
    let left = deadline.saturating_duration_since(Instant::now());
    match ended {
        Ok(status) if wait_group_gone(pgid, left).await => status,
        Ok(status) => {
            let _ = signal_group(pgid, Some(Signal::SIGKILL));
            status
        }
        Err(_) => {
            let _ = signal_group(pgid, Some(Signal::SIGKILL));
            child.wait().await
        }
    }
}

impl Drop for Foreground {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn read_into(mut pipe: impl AsyncRead + Unpin + Send, buf: Arc<Mutex<HeadTail>>) {
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.lock().unwrap().push(&chunk[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(script: &str, timeout: Option<Duration>) -> RunSpec {
        RunSpec {
            prologue: Vec::new(),
            command: script.as_bytes().to_vec(),
            cwd: std::env::temp_dir(),
            env: vec![(b"PATH".to_vec(), b"/usr/bin:/bin".to_vec())],
            timeout,
            max_file_bytes: None,
            tail_bytes: 8,
            head_bytes: 0,
            spill: [None, None],
            sandbox: None,
            reap_descendants: true,
        }
    }

    #[test]
    fn captures_tails_and_exit_codes() {
        let cases = [
            (
                "echo hello; echo oops >&2; exit 3",
                3,
                &b"hello\n"[..],
                &b"oops\n"[..],
            ),
            ("printf 0123456789abcdef", 0, &b"89abcdef"[..], &b""[..]),
            ("kill -9 $$", 137, &b""[..], &b""[..]),
        ];
        for (script, code, out, err) in cases {
            let outcome = Foreground::new().run(spec(script, None)).unwrap();
            assert_eq!(
                (
                    outcome.exit_code,
                    &outcome.stdout.tail[..],
                    &outcome.stderr.tail[..]
                ),
                (code, out, err),
                "{script}"
            );
            assert!(!outcome.timed_out);
        }
    }

    #[test]
    fn timeout_stops_the_group() {
        let outcome = Foreground::new()
            .run(spec(
                "echo start; sleep 100 & sleep 100",
                Some(Duration::from_millis(200)),
            ))
            .unwrap();
        assert!(outcome.timed_out);
        assert_eq!(outcome.stdout.tail, b"start\n");
        assert_eq!(outcome.exit_code, 143);
    }

    #[test]
    fn too_long_blames_the_command_only_when_it_is_the_cause() {
        let huge = "x".repeat(200 * 1024);
        let mut long_command = spec(&format!(": {huge}"), None);
        long_command.prologue = b"cd / || exit\n".to_vec();
        let err = Foreground::new().run(long_command).unwrap_err();
        assert_eq!(err.kind, crate::error::ErrorKind::CommandTooLong);
        assert_eq!(err.message, super::super::spawn::COMMAND_TOO_LONG);

        let mut big_env = spec("true", None);
        big_env.env.push((b"BIG".to_vec(), huge.into_bytes()));
        let err = Foreground::new().run(big_env).unwrap_err();
        assert!(matches!(err.kind, crate::error::ErrorKind::Io(_)));
        assert_eq!(err.errno, Some(libc::E2BIG));
    }

    /// Drives a [`Foreground::start`]ed command as an event loop would: poll its descriptor,
    /// step, and finish on this thread when told to.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn stepped(fg: &Foreground, spec: RunSpec) -> Result<RunOutcome> {
        stepped_with(fg, spec).map(|(outcome, _)| outcome)
    }

    /// [`stepped`], with whether the rest was left to [`Foreground::finish`].
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn stepped_with(fg: &Foreground, spec: RunSpec) -> Result<(RunOutcome, bool)> {
        let fd = fg.start(spec)?.expect("stepped on Linux");
        loop {
            match fg.step()? {
                Step::Wait => {
                    let mut poll = libc::pollfd {
                        fd,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: one live pollfd.
                    unsafe { libc::poll(&mut poll, 1, 10_000) };
                }
                Step::Finish => return fg.finish().map(|outcome| (outcome, true)),
                Step::Done(outcome) => return Ok((outcome, false)),
            }
        }
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn stepped_matches_run() {
        let cases = [
            ("echo hello; echo oops >&2; exit 3", None),
            ("printf 0123456789abcdef", None),
            ("kill -9 $$", None),
            ("echo start; sleep 100 & sleep 100", Some(200)),
            // SIGTERM ignored by the shell: the grace runs out, then SIGKILL.
            ("trap '' TERM; echo start; sleep 100", Some(100)),
            // A writer that outlives the shell keeps the pipe open until the drain ends.
            ("(sleep 0.2; echo late) & echo now", Some(5000)),
            // More than one step's budget of output.
            ("head -c 3000000 /dev/zero | tr '\\0' x; echo end", None),
        ];
        for (script, ms) in cases {
            let timeout = ms.map(Duration::from_millis);
            let by_run = Foreground::new().run(spec(script, timeout)).unwrap();
            let by_step = stepped(&Foreground::new(), spec(script, timeout)).unwrap();
            let view = |o: &RunOutcome| {
                (
                    o.exit_code,
                    o.signal,
                    o.timed_out,
                    o.stdout.tail.clone(),
                    o.stdout.total,
                    o.stderr.tail.clone(),
                )
            };
            assert_eq!(view(&by_step), view(&by_run), "{script}");
        }
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn stepped_timeout_leaves_nothing_and_kill_ends_the_tree() {
        let marker = format!("sleep 1{}", std::process::id() % 100_000);
        let alive = || {
            std::process::Command::new("pgrep")
                .args(["-f", &marker])
                .output()
                .map(|o| !o.stdout.is_empty())
                .unwrap_or(false)
        };
        let script = format!("{marker} & (setsid {marker} &) ; {marker}");
        let outcome = stepped(
            &Foreground::new(),
            spec(&script, Some(Duration::from_millis(100))),
        )
        .unwrap();
        assert!(outcome.timed_out);
        assert!(!alive(), "a timed-out tree left a process");

        let fg = Foreground::new();
        fg.start(spec(&script, None)).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(alive());
        fg.kill();
        assert!(matches!(fg.step(), Err(e) if e.kind == crate::error::ErrorKind::Cancelled));
        let gone = std::time::Instant::now() + Duration::from_secs(5);
        while alive() && std::time::Instant::now() < gone {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!alive(), "a killed tree left a process");
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_tree_too_big_to_walk_in_a_step_is_stopped_by_finish() {
        let marker = format!("sleep 2{}", std::process::id() % 100_000);
        let n = super::super::wait::stepped::STEP_MAX_PROCESSES + 8;
        let script = format!("for i in $(seq {n}); do {marker} & done; wait");
        let (outcome, finished) = stepped_with(
            &Foreground::new(),
            spec(&script, Some(Duration::from_millis(300))),
        )
        .unwrap();
        assert!(finished, "a tree of {n} was walked inside a step");
        assert!(outcome.timed_out);
        let left = std::process::Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap();
        assert!(left.stdout.is_empty(), "a timed-out tree left a process");
    }

    #[test]
    fn kill_before_run_cancels() {
        let fg = Foreground::new();
        fg.kill();
        assert!(fg.run(spec("true", None)).is_err());
    }
}
