//! Building the `/bin/sh` command every shell command runs as: its own session, stdin at EOF,
//! default signal dispositions, an exact environment and an optional per-file size limit.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub mod clone;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::process::Stdio;

use tokio::process::Command;

use crate::error::{Error, ErrorKind};
use crate::process::sandbox::Prepared;

/// The shell that runs every command, as `subprocess` does for `shell=True`.
pub const SHELL: &str = "/bin/sh";

/// Block size the per-file limit is rounded up to, as `ulimit -f` in POSIX `sh` counts it.
pub const FILE_LIMIT_BLOCK: u64 = 512;

/// Marks every descriptor above the standard streams close-on-exec, so a command inherits
/// stdin, stdout and stderr only: not the host's inheritable descriptors, as `subprocess`
/// with `close_fds=True` (the reference's spawn) leaves none either.
///
/// Async-signal-safe, for the child between fork and exec: one `close_range` (Linux 5.11+),
/// else an `fcntl` per descriptor below the soft `RLIMIT_NOFILE` (at most 65,536).
///
/// # Safety
/// Call only in a child about to exec: the descriptors it marks are the whole process's.
pub unsafe fn inherit_standard_streams_only() {
    #[cfg(target_os = "linux")]
    {
        const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
        let all = libc::syscall(
            libc::SYS_close_range,
            3,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        );
        if all == 0 {
            return;
        }
    }
    let mut limit: libc::rlimit = std::mem::zeroed();
    let end = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
        limit.rlim_cur.min(65_536) as libc::c_int
    } else {
        1024
    };
    for fd in 3..end {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

/// `max_file_bytes` rounded up to whole [`FILE_LIMIT_BLOCK`]s, the value `RLIMIT_FSIZE` gets.
pub fn file_limit_bytes(max_file_bytes: u64) -> u64 {
    max_file_bytes
        .div_ceil(FILE_LIMIT_BLOCK)
        .saturating_mul(FILE_LIMIT_BLOCK)
}

/// Whether the per-file limit can be applied: not above the current hard `RLIMIT_FSIZE`.
pub fn file_limit_allowed(max_file_bytes: u64) -> bool {
    use nix::sys::resource::{getrlimit, Resource};
    match getrlimit(Resource::RLIMIT_FSIZE) {
        Ok((_, hard)) => {
            hard == nix::sys::resource::RLIM_INFINITY || file_limit_bytes(max_file_bytes) <= hard
        }
        Err(_) => false,
    }
}

/// What every spawn of `/bin/sh` is given, whichever way it spawns.
#[derive(Debug, Clone, Copy)]
pub struct ShellArgs<'a> {
    /// The shell's arguments (`-c script ...`).
    pub args: &'a [Vec<u8>],
    /// Its working directory.
    pub cwd: &'a Path,
    /// Its exact environment.
    pub env: &'a [(Vec<u8>, Vec<u8>)],
    /// `RLIMIT_FSIZE` in bytes (rounded by the spawn as `ulimit -f` would), or none.
    pub file_limit: Option<u64>,
    /// The Landlock ruleset the child enforces just before exec, or none.
    pub sandbox: Option<&'a Prepared>,
    /// Whether the child becomes a child subreaper ([`crate::process::reaper`]).
    pub subreaper: bool,
}

/// A `/bin/sh` command with `args` (`-c script ...`), started in `cwd` with exactly `env`.
///
/// The child calls `setsid` (its own session and process group, no controlling terminal),
/// resets `SIGPIPE`, `SIGXFSZ` and `SIGXFZ` to their defaults (Python ignores them, and
/// `subprocess` restores them too), and sets `RLIMIT_FSIZE` to `file_limit` bytes when given.
/// With `sandbox`, the child enforces that Landlock ruleset last, just before exec; with
/// `subreaper`, it becomes a child subreaper (see [`crate::process::reaper`]).
/// stdin is `/dev/null`; stdout and stderr are as given.
pub fn shell_command(shell: ShellArgs, stdout: Stdio, stderr: Stdio) -> Command {
    let ShellArgs {
        args,
        cwd,
        env,
        file_limit,
        sandbox,
        subreaper,
    } = shell;
    let mut cmd = Command::new(SHELL);
    cmd.args(args.iter().map(|a| OsString::from_vec(a.clone())));
    cmd.env_clear();
    cmd.envs(
        env.iter()
            .map(|(k, v)| (OsString::from_vec(k.clone()), OsString::from_vec(v.clone()))),
    );
    cmd.current_dir(cwd);
    cmd.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
    let limit = file_limit.map(file_limit_bytes);
    let ruleset = sandbox.map(Prepared::raw_fd);
    // SAFETY: only async-signal-safe calls (setsid, signal, setrlimit, prctl,
    // landlock_restrict_self) run between fork and exec; the ruleset fd outlives the spawn.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            for sig in [libc::SIGPIPE, libc::SIGXFSZ] {
                libc::signal(sig, libc::SIG_DFL);
            }
            #[cfg(target_os = "linux")]
            libc::signal(libc::SIGXCPU, libc::SIG_DFL);
            if let Some(bytes) = limit {
                // Soft and hard, as `ulimit -f` sets them, so the command cannot raise it again.
                let rl = libc::rlimit {
                    rlim_cur: bytes as libc::rlim_t,
                    rlim_max: bytes as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &rl) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            #[cfg(target_os = "linux")]
            if subreaper && libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(fd) = ruleset {
                let errno = Prepared::enforce(fd);
                if errno != 0 {
                    return Err(std::io::Error::from_raw_os_error(errno));
                }
            }
            inherit_standard_streams_only();
            Ok(())
        });
    }
    cmd
}

/// Where a spawned command's stdout or stderr goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// A pipe whose read end the caller gets.
    Pipe,
    /// `/dev/null`.
    Null,
}

/// The read end of a command's output pipe.
pub type Reader = Box<dyn tokio::io::AsyncRead + Unpin + Send>;

/// A spawned `/bin/sh`: its [`Child`] and the read ends of the pipes asked for.
pub struct Spawned {
    /// The process, to wait for (and reap).
    pub child: Child,
    /// stdout's read end, with [`Sink::Pipe`].
    pub stdout: Option<Reader>,
    /// stderr's read end, with [`Sink::Pipe`].
    pub stderr: Option<Reader>,
}

impl Spawned {
    /// A child spawned through tokio, the read ends of its piped stdout and stderr taken.
    fn of(mut child: tokio::process::Child) -> Spawned {
        let stdout = child.stdout.take().map(|p| Box::new(p) as Reader);
        let stderr = child.stderr.take().map(|p| Box::new(p) as Reader);
        Spawned {
            child: Child::Tokio(child),
            stdout,
            stderr,
        }
    }
}

/// A spawned process to wait for: through tokio, or a raw PID from `posix_spawn`.
pub enum Child {
    /// Spawned by `tokio::process` (fork, `pre_exec`).
    Tokio(tokio::process::Child),
    /// Spawned by `posix_spawn`; waited for through a pidfd where the kernel has them.
    Raw(RawChild),
}

impl Child {
    /// The PID (also the process group and session ID: the child called `setsid`).
    pub fn id(&self) -> i32 {
        match self {
            Child::Tokio(c) => c.id().map(|p| p as i32).unwrap_or(0),
            Child::Raw(c) => c.pid,
        }
    }

    /// Waits for the process to exit and reaps it.
    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self {
            Child::Tokio(c) => c.wait().await,
            Child::Raw(c) => c.wait().await,
        }
    }
}

/// A child from `posix_spawn`, reaped by [`RawChild::wait`] (or, if dropped unreaped, by a
/// supervisor task).
pub struct RawChild {
    pid: i32,
    pidfd: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
    status: Option<std::process::ExitStatus>,
}

impl RawChild {
    fn try_reap(pid: i32) -> std::io::Result<Option<std::process::ExitStatus>> {
        use std::os::unix::process::ExitStatusExt;
        let mut status = 0;
        // SAFETY: plain waitpid on our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        match r {
            0 => Ok(None),
            -1 => Err(std::io::Error::last_os_error()),
            _ => Ok(Some(std::process::ExitStatus::from_raw(status))),
        }
    }

    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        if let Some(pidfd) = &self.pidfd {
            loop {
                let mut guard = pidfd.readable().await?;
                if let Some(status) = Self::try_reap(self.pid)? {
                    self.status = Some(status);
                    return Ok(status);
                }
                guard.clear_ready();
            }
        }
        // No pidfd (old kernel): a blocking waitpid on the runtime's blocking pool.
        use std::os::unix::process::ExitStatusExt;
        let pid = self.pid;
        let status = tokio::task::spawn_blocking(move || loop {
            let mut status = 0;
            // SAFETY: plain waitpid on our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            if r == pid {
                return Ok(std::process::ExitStatus::from_raw(status));
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(err);
            }
        })
        .await
        .map_err(std::io::Error::other)??;
        self.status = Some(status);
        Ok(status)
    }
}

impl Drop for RawChild {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        // Never leave a zombie: whoever dropped us did not wait, so a task does.
        let child = RawChild {
            pid: self.pid,
            pidfd: self.pidfd.take(),
            status: None,
        };
        crate::process::runtime().spawn(async move {
            let mut child = child;
            let _ = child.wait().await;
        });
    }
}

/// Spawns `/bin/sh args...` in `cwd` with exactly `env`, in its own session, stdin at EOF.
///
/// With `subreaper` on Linux this uses [`clone::spawn`] (a `vfork`-style clone running
/// the setup before exec). Without a file limit on Linux/glibc this uses `posix_spawn` (`POSIX_SPAWN_SETSID`, a
/// vfork-like clone: no copy of a large parent's page tables, as `subprocess` avoids with
/// `vfork`), from a thread confined by `sandbox` when given; otherwise, or when the C library
/// lacks what is needed, [`shell_command`]'s fork with `pre_exec` (which enforces `sandbox` in
/// the child before exec). Must run inside the supervisor runtime. Errors: the spawn's OS error.
pub fn spawn_shell(shell: ShellArgs, stdout: Sink, stderr: Sink) -> std::io::Result<Spawned> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if shell.subreaper {
        let (pid, out, err) = clone::spawn(shell, stdout, stderr)?;
        return fast::wrap(pid, out, err);
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if shell.file_limit.is_none() {
        let ShellArgs {
            args,
            cwd,
            env,
            sandbox,
            ..
        } = shell;
        if let Some(spawned) = fast::spawn(args, cwd, env, sandbox, stdout, stderr)? {
            return Ok(spawned);
        }
    }
    let stdio = |sink| {
        if sink == Sink::Pipe {
            Stdio::piped()
        } else {
            Stdio::null()
        }
    };
    Ok(Spawned::of(
        shell_command(shell, stdio(stdout), stdio(stderr)).spawn()?,
    ))
}

/// [`spawn_shell`], with `pass` (open descriptors of this process) handed to the shell as
/// descriptors 3, 4, ... in that order; every other descriptor above the standard streams is
/// closed on exec. Must run inside the supervisor runtime. Errors: the spawn's OS error.
pub fn spawn_shell_passing(
    shell: ShellArgs,
    stdout: Sink,
    stderr: Sink,
    pass: &[std::os::fd::RawFd],
) -> std::io::Result<Spawned> {
    if pass.is_empty() {
        return spawn_shell(shell, stdout, stderr);
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let (pid, out, err) = clone::spawn_passing(shell, stdout, stderr, pass)?;
        fast::wrap(pid, out, err)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let stdio = |sink| {
            if sink == Sink::Pipe {
                Stdio::piped()
            } else {
                Stdio::null()
            }
        };
        let mut cmd = shell_command(shell, stdio(stdout), stdio(stderr));
        const MAX: usize = 8;
        if pass.len() > MAX {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "too many descriptors to pass",
            ));
        }
        let count = pass.len();
        let mut passed = [-1; MAX];
        passed[..count].copy_from_slice(pass);
        // SAFETY: only fcntl and dup2 run between fork and exec, after `shell_command`'s setup
        // (which marked every descriptor close-on-exec); dup2 clears it on the targets.
        unsafe {
            cmd.pre_exec(move || {
                let first_free = 3 + count as libc::c_int;
                let mut moved = passed;
                for fd in moved.iter_mut().take(count) {
                    if *fd < first_free {
                        *fd = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, first_free);
                        if *fd == -1 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                }
                for (i, &fd) in moved.iter().take(count).enumerate() {
                    if libc::dup2(fd, 3 + i as libc::c_int) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        Ok(Spawned::of(cmd.spawn()?))
    }
}

/// A shell from [`clone::spawn`] as a [`Spawned`] to wait for through the runtime (its
/// pidfd, or a blocking `waitpid` without one). Must run inside the supervisor runtime.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn wrap_cloned(
    pid: libc::pid_t,
    out: clone::Pipe,
    err: clone::Pipe,
) -> std::io::Result<Spawned> {
    fast::wrap(pid, out, err)
}

/// What the model is told when the OS refuses its command as too long to start (`E2BIG`).
pub const COMMAND_TOO_LONG: &str =
    "The command is too long to start; write the script to a file, with a file \
     tool or in several shorter commands, then run the file.";

/// The error for a spawn of `args` that failed with `err`.
///
/// `E2BIG` is the model's to fix only when its command is what makes the invocation too long:
/// `without_command` (the same arguments with the command left out) is handed to `/bin/sh`
/// after an empty script, which starts nothing; when that starts, the error is
/// [`ErrorKind::CommandTooLong`] with [`COMMAND_TOO_LONG`]. Otherwise (the environment alone is
/// too big, or any other errno) it is the OS error, which aborts the run. Must run inside the
/// supervisor runtime.
pub async fn spawn_error(
    err: std::io::Error,
    without_command: &[Vec<u8>],
    cwd: &Path,
    env: &[(Vec<u8>, Vec<u8>)],
) -> Error {
    if err.raw_os_error() == Some(libc::E2BIG) {
        let probe: Vec<Vec<u8>> = [b"-c".to_vec(), Vec::new(), b"sh".to_vec()]
            .into_iter()
            .chain(without_command.iter().cloned())
            .collect();
        let shell = ShellArgs {
            args: &probe,
            cwd,
            env,
            file_limit: None,
            sandbox: None,
            subreaper: false,
        };
        if let Ok(mut spawned) = spawn_shell(shell, Sink::Null, Sink::Null) {
            let _ = spawned.child.wait().await;
            return Error::new(ErrorKind::CommandTooLong, COMMAND_TOO_LONG);
        }
    }
    Error::io(
        &err,
        format!(
            "Unable to start the command: {}",
            crate::process::outcome::os_reason(&err)
        ),
    )
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod fast {
    use std::io;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::path::Path;
    use std::sync::OnceLock;

    use super::clone::{data_pipes, Exec};
    use super::{Child, Prepared, RawChild, Reader, Sink, Spawned};

    type AddChdir = unsafe extern "C" fn(
        *mut libc::posix_spawn_file_actions_t,
        *const libc::c_char,
    ) -> libc::c_int;

    /// `posix_spawn_file_actions_addchdir_np` (glibc 2.29+), looked up at run time so the
    /// module still loads on an older C library.
    fn addchdir() -> Option<AddChdir> {
        static FN: OnceLock<Option<AddChdir>> = OnceLock::new();
        *FN.get_or_init(|| {
            // SAFETY: dlsym with a NUL-terminated name; the symbol has this signature.
            let ptr = unsafe {
                libc::dlsym(
                    libc::RTLD_DEFAULT,
                    c"posix_spawn_file_actions_addchdir_np".as_ptr(),
                )
            };
            (!ptr.is_null())
                .then(|| unsafe { std::mem::transmute::<*mut libc::c_void, AddChdir>(ptr) })
        })
    }

    fn check(r: libc::c_int) -> io::Result<()> {
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(r))
        }
    }

    struct Actions(libc::posix_spawn_file_actions_t);
    impl Drop for Actions {
        fn drop(&mut self) {
            // SAFETY: initialised in `spawn`.
            unsafe { libc::posix_spawn_file_actions_destroy(&mut self.0) };
        }
    }
    struct Attr(libc::posix_spawnattr_t);
    impl Drop for Attr {
        fn drop(&mut self) {
            // SAFETY: initialised in `spawn`.
            unsafe { libc::posix_spawnattr_destroy(&mut self.0) };
        }
    }

    type Pipe = Option<(OwnedFd, OwnedFd)>;

    /// `Ok(None)` when this C library cannot do it (the caller forks instead).
    ///
    /// With `sandbox`, the spawn runs on a short-lived thread that first restricts itself
    /// with the ruleset (`PR_SET_NO_NEW_PRIVS` and `landlock_restrict_self` act on the calling
    /// thread only): the child inherits that thread's Landlock domain at its birth, so it is
    /// confined before its first instruction, without forking this process.
    pub fn spawn(
        args: &[Vec<u8>],
        cwd: &Path,
        env: &[(Vec<u8>, Vec<u8>)],
        sandbox: Option<&Prepared>,
        stdout: Sink,
        stderr: Sink,
    ) -> io::Result<Option<Spawned>> {
        let Some(addchdir) = addchdir() else {
            return Ok(None);
        };
        let raw = match sandbox {
            None => raw_spawn(addchdir, args, cwd, env, stdout, stderr)?,
            Some(prepared) => {
                let fd = prepared.raw_fd();
                std::thread::scope(|scope| {
                    scope
                        .spawn(|| {
                            // SAFETY: raw syscalls on this thread only; `fd` is a live ruleset.
                            let errno = unsafe { Prepared::enforce(fd) };
                            if errno != 0 {
                                return Err(io::Error::from_raw_os_error(errno));
                            }
                            raw_spawn(addchdir, args, cwd, env, stdout, stderr)
                        })
                        .join()
                        .unwrap_or_else(|_| Err(io::Error::other("the spawning thread panicked")))
                })?
            }
        };
        let (pid, out_pipe, err_pipe) = raw;
        Ok(Some(wrap(pid, out_pipe, err_pipe)?))
    }

    /// `posix_spawn` of `/bin/sh args...`: the PID and the pipes asked for.
    fn raw_spawn(
        addchdir: AddChdir,
        args: &[Vec<u8>],
        cwd: &Path,
        env: &[(Vec<u8>, Vec<u8>)],
        stdout: Sink,
        stderr: Sink,
    ) -> io::Result<(libc::pid_t, Pipe, Pipe)> {
        let exec = Exec::new(args, cwd, env)?;
        let dev_null = c"/dev/null";
        let [out_pipe, err_pipe] = data_pipes(stdout, stderr)?;

        // SAFETY: every libc call gets initialised structures and NUL-terminated strings that
        // outlive the spawn; the fds are ours.
        let pid = unsafe {
            let mut actions = Actions(std::mem::zeroed());
            check(libc::posix_spawn_file_actions_init(&mut actions.0))?;
            let mut attr = Attr(std::mem::zeroed());
            check(libc::posix_spawnattr_init(&mut attr.0))?;
            check(libc::posix_spawn_file_actions_addopen(
                &mut actions.0,
                0,
                dev_null.as_ptr(),
                libc::O_RDONLY,
                0,
            ))?;
            for (fd, sink, pipe) in [(1, stdout, &out_pipe), (2, stderr, &err_pipe)] {
                match (sink, pipe) {
                    (Sink::Pipe, Some((_, w))) => {
                        use std::os::fd::AsRawFd;
                        check(libc::posix_spawn_file_actions_adddup2(
                            &mut actions.0,
                            w.as_raw_fd(),
                            fd,
                        ))?
                    }
                    _ => check(libc::posix_spawn_file_actions_addopen(
                        &mut actions.0,
                        fd,
                        dev_null.as_ptr(),
                        libc::O_WRONLY,
                        0,
                    ))?,
                }
            }
            check(addchdir(&mut actions.0, exec.cwd.as_ptr()))?;
            // Python ignores SIGPIPE and SIGXFSZ; `subprocess` restores their defaults, so do we.
            let mut defaults: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut defaults);
            libc::sigaddset(&mut defaults, libc::SIGPIPE);
            libc::sigaddset(&mut defaults, libc::SIGXFSZ);
            check(libc::posix_spawnattr_setsigdefault(&mut attr.0, &defaults))?;
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut mask);
            check(libc::posix_spawnattr_setsigmask(&mut attr.0, &mask))?;
            let flags = libc::POSIX_SPAWN_SETSID
                | (libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK) as libc::c_short;
            check(libc::posix_spawnattr_setflags(&mut attr.0, flags))?;
            let mut pid: libc::pid_t = 0;
            check(libc::posix_spawn(
                &mut pid,
                exec.program.as_ptr(),
                &actions.0,
                &attr.0,
                exec.argv.as_ptr(),
                exec.envp.as_ptr(),
            ))?;
            pid
        };
        Ok((pid, out_pipe, err_pipe))
    }

    /// The spawned child as a [`Spawned`]: a pidfd to wait on, and the pipes' read ends.
    pub(crate) fn wrap(pid: libc::pid_t, out_pipe: Pipe, err_pipe: Pipe) -> io::Result<Spawned> {
        // SAFETY: pidfd_open returns a new fd we own, or -1.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
        let pidfd = if raw >= 0 {
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            // SAFETY: the fd is an owned, open pidfd that stays registered only while owned here.
            unsafe {
                tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
            }
            .ok()
        } else {
            None
        };
        let child = Child::Raw(RawChild {
            pid,
            pidfd,
            status: None,
        });
        let reader = |p: Option<(OwnedFd, OwnedFd)>| -> io::Result<Option<Reader>> {
            match p {
                Some((r, w)) => {
                    drop(w);
                    let rx = tokio::net::unix::pipe::Receiver::from_owned_fd_unchecked(r)?;
                    Ok(Some(Box::new(rx) as Reader))
                }
                None => Ok(None),
            }
        };
        let stdout = reader(out_pipe)?;
        let stderr = reader(err_pipe)?;
        Ok(Spawned {
            child,
            stdout,
            stderr,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What a spawned shell wrote to its piped stdout, once it exited, and its exit code.
    pub(crate) async fn finished(mut spawned: Spawned) -> (i32, Vec<u8>) {
        let mut out = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(spawned.stdout.as_mut().unwrap(), &mut out)
            .await
            .unwrap();
        let status = spawned.child.wait().await.unwrap();
        (super::super::outcome::shell_exit_code(status), out)
    }

    fn run(limit: Option<u64>, script: &str) -> (i32, String) {
        let env = vec![
            (b"PATH".to_vec(), b"/usr/bin:/bin".to_vec()),
            (b"ONLY".to_vec(), b"this".to_vec()),
        ];
        let args = vec![b"-c".to_vec(), script.as_bytes().to_vec()];
        let (code, out) = super::super::block_on(async {
            let shell = ShellArgs {
                args: &args,
                cwd: Path::new("/"),
                env: &env,
                file_limit: limit,
                sandbox: None,
                subreaper: limit.is_some(),
            };
            let spawned = spawn_shell(shell, Sink::Pipe, Sink::Null).unwrap();
            finished(spawned).await
        });
        (code, String::from_utf8(out).unwrap())
    }

    #[test]
    fn own_session_exact_env_cwd_and_stdin_at_eof() {
        for limit in [None, Some(1 << 20)] {
            let (code, out) = run(limit, "ps -o sid= -p $$ | tr -d ' '; echo $$; env | grep -v -e ^PWD= -e ^SHLVL= -e ^_= | sort; pwd; cat; trap");
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(code, 0, "{out}");
            assert_eq!(lines[0], lines[1], "session leader: {out}");
            assert_eq!(
                &lines[2..],
                &["ONLY=this", "PATH=/usr/bin:/bin", "/"],
                "{limit:?}"
            );
        }
    }

    #[test]
    fn file_limit_rounds_to_blocks_and_kills_with_sigxfsz() {
        assert_eq!(file_limit_bytes(1), 512);
        assert_eq!(file_limit_bytes(512), 512);
        assert_eq!(file_limit_bytes(1000), 1024);
        let (code, _) = run(
            Some(1000),
            "printf '%5000s' x > /dev/null; f=$(mktemp); printf '%5000s' x > $f; rm -f $f",
        );
        assert_eq!(code, 128 + libc::SIGXFSZ);
    }

    #[test]
    fn default_signal_dispositions() {
        // The Rust test harness (like Python) ignores SIGPIPE; the command must get the default back.
        for limit in [None, Some(1 << 20)] {
            assert_eq!(
                run(limit, "kill -PIPE $$; echo survived").0,
                128 + libc::SIGPIPE
            );
            assert_eq!(
                run(limit, "kill -XFSZ $$; echo survived").0,
                128 + libc::SIGXFSZ
            );
        }
    }
}
