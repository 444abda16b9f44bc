//! A `vfork`-style spawn that runs a few setup syscalls in the child before exec: what
//! `posix_spawn` does, plus `PR_SET_CHILD_SUBREAPER`, `RLIMIT_FSIZE` and Landlock, which it
//! cannot express. The child shares this process's memory until its `execve` (no copy of a
//! large parent's page tables, unlike `fork`); the parent thread waits meanwhile.
//!
//! The child runs only async-signal-safe libc calls on data prepared before the clone. As
//! glibc's `posix_spawn` does, the parent blocks every signal around the clone, and the child
//! resets caught signals to their default before unblocking, so no handler of this process
//! ever runs on the child's borrowed memory.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{ShellArgs, Sink, SHELL};
use crate::process::sandbox::Prepared;

/// Bytes of stack the child gets; it calls a handful of syscall wrappers and then execs.
const STACK_BYTES: usize = 64 * 1024;

/// What the child needs, all prepared by the parent.
struct ChildArgs {
    program: *const libc::c_char,
    argv: *const *mut libc::c_char,
    envp: *const *mut libc::c_char,
    cwd: *const libc::c_char,
    dev_null: *const libc::c_char,
    /// Write ends for fds 1 and 2; `-1` for `/dev/null`.
    out: [libc::c_int; 2],
    file_limit: Option<u64>,
    ruleset: libc::c_int,
    subreaper: bool,
    /// Close-on-exec pipe the child reports a failed setup or exec to (its errno).
    report: libc::c_int,
    /// Descriptors the shell gets as 3, 4, ... (`pass_count` of them).
    pass: [libc::c_int; PASS_MAX],
    pass_count: usize,
}

/// The most descriptors [`spawn_passing`] hands on beyond the standard streams.
pub const PASS_MAX: usize = 8;

/// A pipe with both ends close-on-exec: `(read, write)`.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just created, owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// What an `execve` of `/bin/sh args...` in `cwd` with exactly `env` needs, as C strings made
/// before the spawn (a `vfork`-style child must not allocate): `argv` and `envp` are
/// NULL-terminated pointer arrays into strings this value owns.
pub(crate) struct Exec {
    pub(crate) program: CString,
    pub(crate) argv: Vec<*mut libc::c_char>,
    pub(crate) envp: Vec<*mut libc::c_char>,
    pub(crate) cwd: CString,
    /// The strings `argv` and `envp` point into (a `CString`'s bytes do not move with it).
    _owned: (Vec<CString>, Vec<CString>),
}

impl Exec {
    /// Errors: `InvalidInput` for a NUL byte in an argument, a variable or `cwd`.
    pub(crate) fn new(
        args: &[Vec<u8>],
        cwd: &Path,
        env: &[(Vec<u8>, Vec<u8>)],
    ) -> io::Result<Self> {
        let program = cstring(SHELL.as_bytes())?;
        let argv: Vec<CString> = std::iter::once(Ok(program.clone()))
            .chain(args.iter().map(|a| cstring(a)))
            .collect::<io::Result<_>>()?;
        let envp: Vec<CString> = env
            .iter()
            .map(|(k, v)| cstring(&[k.as_slice(), b"=", v.as_slice()].concat()))
            .collect::<io::Result<_>>()?;
        let pointers = |strings: &[CString]| {
            let mut p: Vec<*mut libc::c_char> =
                strings.iter().map(|c| c.as_ptr() as *mut _).collect();
            p.push(std::ptr::null_mut());
            p
        };
        Ok(Exec {
            argv: pointers(&argv),
            envp: pointers(&envp),
            cwd: cstring(cwd.as_os_str().as_bytes())?,
            program,
            _owned: (argv, envp),
        })
    }
}

/// A data pipe for each stream that is [`Sink::Pipe`] (see [`data_pipe`]).
pub(crate) fn data_pipes(
    stdout: Sink,
    stderr: Sink,
) -> io::Result<[Option<(OwnedFd, OwnedFd)>; 2]> {
    let piped = |sink: Sink| (sink == Sink::Pipe).then(data_pipe).transpose();
    Ok([piped(stdout)?, piped(stderr)?])
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "embedded null byte"))
}

unsafe fn errno() -> libc::c_int {
    *libc::__errno_location()
}

/// The child: setup, exec; on failure report errno and `_exit(127)`.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points at the parent's `ChildArgs`, alive (the parent waits) and unshared.
    unsafe {
        let a = &*(arg as *const ChildArgs);
        let fail = |code: libc::c_int| -> ! {
            let bytes = code.to_ne_bytes();
            libc::write(a.report, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127)
        };
        // Default dispositions for every caught signal (and SIGPIPE/SIGXFSZ, which Python
        // ignores), then an empty mask.
        for sig in 1..libc::SIGRTMAX() {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            let ignored = old.sa_sigaction == libc::SIG_IGN;
            let reset = sig == libc::SIGPIPE || sig == libc::SIGXFSZ || sig == libc::SIGXCPU;
            if (old.sa_sigaction != libc::SIG_DFL && !ignored) || (ignored && reset) {
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &new, std::ptr::null_mut());
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());

        if libc::setsid() == -1 {
            fail(errno());
        }
        if a.subreaper && libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1 {
            fail(errno());
        }
        let null_in = libc::open(a.dev_null, libc::O_RDONLY);
        if null_in == -1 || libc::dup2(null_in, 0) == -1 {
            fail(errno());
        }
        for (target, source) in [(1, a.out[0]), (2, a.out[1])] {
            let fd = if source >= 0 {
                source
            } else {
                libc::open(a.dev_null, libc::O_WRONLY)
            };
            if fd == -1 || libc::dup2(fd, target) == -1 {
                fail(errno());
            }
        }
        if libc::chdir(a.cwd) == -1 {
            fail(errno());
        }
        if let Some(bytes) = a.file_limit {
            let rl = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &rl) == -1 {
                fail(errno());
            }
        }
        if a.ruleset >= 0 {
            let code = Prepared::enforce(a.ruleset);
            if code != 0 {
                fail(code);
            }
        }
        super::inherit_standard_streams_only();
        // The passed descriptors as 3, 4, ...: those in the way first moved above the targets
        // (close-on-exec), then each duplicated onto its number (which clears close-on-exec).
        let first_free = 3 + a.pass_count as libc::c_int;
        let mut pass = a.pass;
        for fd in pass.iter_mut().take(a.pass_count) {
            if *fd < first_free {
                *fd = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, first_free);
                if *fd == -1 {
                    fail(errno());
                }
            }
        }
        for (i, &fd) in pass.iter().take(a.pass_count).enumerate() {
            if libc::dup2(fd, 3 + i as libc::c_int) == -1 {
                fail(errno());
            }
        }
        libc::execve(a.program, a.argv.cast(), a.envp.cast());
        fail(errno())
    }
}

/// A data pipe: `(read end, non-blocking; write end)`, both close-on-exec.
pub type Pipe = Option<(OwnedFd, OwnedFd)>;

/// The spawned shell's PID and the pipes asked for (the caller closes the write ends).
pub type Raw = (libc::pid_t, Pipe, Pipe);

pub(crate) fn data_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = pipe()?;
    // SAFETY: fcntl on a fd we own.
    unsafe {
        let flags = libc::fcntl(r.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(r.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    Ok((r, w))
}

/// Spawns `/bin/sh args...` in `cwd` with exactly `env`, in its own session, stdin at EOF;
/// `file_limit` (rounded as `ulimit -f` would), `sandbox` and `subreaper` applied before exec.
///
/// Errors: the setup's or exec's OS error in the child, or the clone's.
pub fn spawn(shell: ShellArgs, stdout: Sink, stderr: Sink) -> io::Result<Raw> {
    spawn_passing(shell, stdout, stderr, &[])
}

/// [`spawn`], with `pass` (at most [`PASS_MAX`] open descriptors of this process) handed to the
/// shell as descriptors 3, 4, ... in that order; every other descriptor is closed on exec.
///
/// Errors: as [`spawn`]; `InvalidInput` for more than [`PASS_MAX`] descriptors.
pub fn spawn_passing(
    shell: ShellArgs,
    stdout: Sink,
    stderr: Sink,
    pass: &[libc::c_int],
) -> io::Result<Raw> {
    if pass.len() > PASS_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many descriptors to pass",
        ));
    }
    let mut passed = [-1; PASS_MAX];
    passed[..pass.len()].copy_from_slice(pass);
    let file_limit = shell.file_limit.map(super::file_limit_bytes);
    let (sandbox, subreaper) = (shell.sandbox, shell.subreaper);
    let exec = Exec::new(shell.args, shell.cwd, shell.env)?;
    let dev_null = c"/dev/null";
    let [out_pipe, err_pipe] = data_pipes(stdout, stderr)?;
    let (report_read, report_write) = pipe()?;
    let write_end = |p: &Option<(OwnedFd, OwnedFd)>| p.as_ref().map_or(-1, |(_, w)| w.as_raw_fd());
    let args = ChildArgs {
        program: exec.program.as_ptr(),
        argv: exec.argv.as_ptr(),
        envp: exec.envp.as_ptr(),
        cwd: exec.cwd.as_ptr(),
        dev_null: dev_null.as_ptr(),
        out: [write_end(&out_pipe), write_end(&err_pipe)],
        file_limit,
        ruleset: sandbox.map_or(-1, Prepared::raw_fd),
        subreaper,
        report: report_write.as_raw_fd(),
        pass: passed,
        pass_count: pass.len(),
    };
    let mut stack = vec![0u8; STACK_BYTES];
    // SAFETY: the stack top is 16-byte aligned and inside `stack`, which outlives the child's
    // use of it (CLONE_VFORK: we resume once it has exec'd or exited). All signals are blocked
    // around the clone and restored after.
    let pid = unsafe {
        let top = stack.as_mut_ptr().add(STACK_BYTES);
        let top = (top as usize & !15) as *mut libc::c_void;
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            child_main,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            &args as *const ChildArgs as *mut libc::c_void,
        );
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid == -1 {
            return Err(clone_error);
        }
        pid
    };
    drop(report_write);
    let mut code = [0u8; 4];
    // SAFETY: reading into a local buffer from a pipe we own; EOF means the exec succeeded.
    let n = unsafe { libc::read(report_read.as_raw_fd(), code.as_mut_ptr().cast(), 4) };
    if n == 4 {
        let mut status = 0;
        // SAFETY: reaping our own child, which has exited.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        return Err(io::Error::from_raw_os_error(i32::from_ne_bytes(code)));
    }
    Ok((pid, out_pipe, err_pipe))
}
