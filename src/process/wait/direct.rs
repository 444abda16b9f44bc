//! A foreground command waited for on the calling thread: one `ppoll` over the shell's pidfd,
//! its two output pipes and the handle's kill eventfd, with the deadline (to the nanosecond) as
//! the poll's timeout.
//!
//! Nothing else is on the path from the command's exit to the caller's return: no supervisor
//! thread to wake, no tasks, no timer wheel. On a busy machine every hand-off between threads
//! waits for a core; this path has none. The supervisor's runtime is still used where waiting
//! is rare and slow anyway: stopping the out-of-group descendants of a timed-out or cancelled
//! tree, and polling a group that outlives its known members.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::error::{Error, Result};
use crate::process::group::{group_alive, signal_group, wait_group_gone};
use crate::process::outcome::{
    Captured, RunOutcome, OUTPUT_DRAIN_GRACE, REAP_GRACE, TIMEOUT_GRACE,
};
use crate::process::reaper::Tree;
use crate::process::spawn::clone::Pipe;
use crate::process::tail::HeadTail;
use crate::process::wait::fatal::dies_of_sigterm;

/// Bytes read from a pipe at once.
const READ_CHUNK: usize = 64 * 1024;

/// How long a group whose known members all exited is given for their zombies to be reaped
/// before it is searched for live members (a search costs less than a longer wait on a busy
/// machine, where each pause lasts until a core is free).
const ZOMBIE_WAIT: Duration = Duration::from_micros(100);

/// What ended a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// What was waited for happened.
    Done,
    /// The deadline passed first.
    Deadline,
    /// The handle was killed.
    Killed,
}

/// A spawned shell with its pidfd and the read ends of its output pipes.
pub(crate) struct Direct {
    pid: i32,
    pidfd: OwnedFd,
    pipes: [Option<OwnedFd>; 2],
    captures: [HeadTail; 2],
    status: Option<ExitStatus>,
    chunk: Vec<u8>,
}

/// Whether this kernel has pidfds (Linux 5.3+), probed once on this process.
pub(crate) fn pidfds_supported() -> bool {
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED.get_or_init(|| pidfd_open(std::process::id() as i32).is_some())
}

/// A pidfd for `pid`, or `None` when the kernel has none (before Linux 5.3).
pub(crate) fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open returns a new fd we own, or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Direct {
    /// Takes over the shell `pid` (with `pidfd`, from [`pidfd_open`]) and its pipes, closing
    /// their write ends; `captures` keep stdout's and stderr's bytes.
    pub(crate) fn new(
        pid: i32,
        pidfd: OwnedFd,
        out: Pipe,
        err: Pipe,
        captures: [HeadTail; 2],
    ) -> Direct {
        let read_end = |p: Pipe| p.map(|(r, _w)| r);
        Direct {
            pid,
            pidfd,
            pipes: [read_end(out), read_end(err)],
            captures,
            status: None,
            chunk: vec![0u8; READ_CHUNK],
        }
    }

    /// Reads what `pipe` holds now, up to about `budget` bytes; closes it at end of file or on
    /// an error. Returns whether the budget ran out first (the pipe may hold more).
    pub(crate) fn read(&mut self, index: usize, budget: usize) -> bool {
        let Some(fd) = self.pipes[index].as_ref().map(AsRawFd::as_raw_fd) else {
            return false;
        };
        let mut left = budget;
        loop {
            if left == 0 {
                return true;
            }
            // SAFETY: reading into our buffer from a pipe we own.
            let n = unsafe { libc::read(fd, self.chunk.as_mut_ptr().cast(), self.chunk.len()) };
            if n > 0 {
                self.captures[index].push(&self.chunk[..n as usize]);
                left = left.saturating_sub(n as usize);
                continue;
            }
            if n < 0 {
                let err = std::io::Error::last_os_error();
                match err.kind() {
                    std::io::ErrorKind::WouldBlock => return false,
                    std::io::ErrorKind::Interrupted => continue,
                    _ => {}
                }
            }
            self.pipes[index] = None;
            return false;
        }
    }

    /// Reaps the shell if it has exited; a shell reaped elsewhere (`ECHILD`) counts as killed,
    /// as [`Direct::reap_blocking`] reports it.
    pub(crate) fn reap(&mut self) {
        if self.status.is_some() {
            return;
        }
        let mut status = 0;
        // SAFETY: plain waitpid on our own child.
        let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        if r == self.pid {
            self.status = Some(ExitStatus::from_raw(status));
        } else if r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
            self.status = Some(ExitStatus::from_raw(libc::SIGKILL));
        }
    }

    /// The shell's PID, which is also its process group's ID.
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// The shell's pidfd.
    pub(crate) fn pidfd(&self) -> RawFd {
        self.pidfd.as_raw_fd()
    }

    /// The read ends of stdout's and stderr's pipes still open.
    pub(crate) fn pipe_fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.pipes.iter().flatten().map(AsRawFd::as_raw_fd)
    }

    /// Whether the shell has been reaped.
    pub(crate) fn exited(&self) -> bool {
        self.status.is_some()
    }

    /// Whether both pipes reached end of file (every writer closed them).
    pub(crate) fn pipes_closed(&self) -> bool {
        self.pipes.iter().all(Option::is_none)
    }

    /// Reaps the shell, waiting as long as it takes (after a `SIGKILL`).
    pub(crate) fn reap_blocking(&mut self) {
        while self.status.is_none() {
            let mut status = 0;
            // SAFETY: plain waitpid on our own child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                self.status = Some(ExitStatus::from_raw(status));
            } else if r == -1 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)
            {
                // Reaped elsewhere or not ours: report a kill, as it was.
                self.status = Some(ExitStatus::from_raw(libc::SIGKILL));
            }
        }
    }

    /// Reads output until `done` holds, `until` passes, or `kill` (an eventfd) is written.
    ///
    /// `members` are pidfds of other processes to watch; `done` gets, per member, whether it
    /// has exited. The pipes are read all along, so a writer never blocks on a full pipe.
    fn wait(
        &mut self,
        until: Option<Instant>,
        kill: RawFd,
        members: &[RawFd],
        exited: &mut [bool],
        done: impl Fn(&Direct, &[bool]) -> bool,
    ) -> Wake {
        loop {
            if done(self, exited) {
                return Wake::Done;
            }
            let mut fds: Vec<libc::pollfd> = Vec::with_capacity(4 + members.len());
            let mut push = |fd: RawFd| {
                fds.push(libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
            };
            push(kill);
            push(if self.status.is_none() {
                self.pidfd.as_raw_fd()
            } else {
                -1
            });
            for pipe in &self.pipes {
                push(pipe.as_ref().map_or(-1, AsRawFd::as_raw_fd));
            }
            for (fd, gone) in members.iter().zip(exited.iter()) {
                push(if *gone { -1 } else { *fd });
            }
            let timeout = until.map(|u| {
                let left = u.saturating_duration_since(Instant::now());
                libc::timespec {
                    tv_sec: left.as_secs() as libc::time_t,
                    tv_nsec: left.subsec_nanos() as libc::c_long,
                }
            });
            if timeout.is_some_and(|t| t.tv_sec == 0 && t.tv_nsec == 0) {
                return Wake::Deadline;
            }
            // SAFETY: `fds` is a live array of initialised pollfds; a null timeout waits forever.
            let ready = unsafe {
                libc::ppoll(
                    fds.as_mut_ptr(),
                    fds.len() as libc::nfds_t,
                    timeout.as_ref().map_or(std::ptr::null(), |t| t as *const _),
                    std::ptr::null(),
                )
            };
            if ready < 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                // Cannot poll (ENOMEM): wait a little rather than spin.
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            let fired = |i: usize| fds[i].revents != 0;
            if fired(0) {
                return Wake::Killed;
            }
            for index in 0..2 {
                if fired(2 + index) {
                    self.read(index, usize::MAX);
                }
            }
            if fired(1) {
                self.reap();
            }
            for (i, gone) in exited.iter_mut().enumerate() {
                if fired(4 + i) {
                    *gone = true;
                }
            }
            if ready == 0 && until.is_some_and(|u| Instant::now() >= u) {
                return Wake::Deadline;
            }
        }
    }

    /// Waits for the command (see the module documentation) and returns how it ended.
    ///
    /// `deadline` is when the group is stopped; `kill` the handle's eventfd; `reap` whether the
    /// descendants that left the group are ended too. Errors: `Cancelled` after a kill.
    pub(crate) fn finish(
        mut self,
        deadline: Option<Instant>,
        kill: BorrowedFd<'_>,
        reap: bool,
    ) -> Result<RunOutcome> {
        let kill = kill.as_raw_fd();
        let exited = |d: &Direct, _: &[bool]| d.status.is_some();
        let timed_out = match self.wait(deadline, kill, &[], &mut [], exited) {
            Wake::Done => false,
            Wake::Killed => return Err(self.cancel(reap)),
            Wake::Deadline => {
                if self.stop(kill, reap) == Wake::Killed {
                    return Err(self.cancel(reap));
                }
                true
            }
        };
        self.drain(deadline, timed_out, kill)
    }

    /// Reads what is left of the output until the pipes close or [`drain_until`] passes, then
    /// returns how the command ended. Errors: `Cancelled` when `kill` (an eventfd) is written.
    pub(crate) fn drain(
        mut self,
        deadline: Option<Instant>,
        timed_out: bool,
        kill: RawFd,
    ) -> Result<RunOutcome> {
        let pipes_closed = |d: &Direct, _: &[bool]| d.pipes_closed();
        let until = drain_until(deadline, timed_out);
        if self.wait(Some(until), kill, &[], &mut [], pipes_closed) == Wake::Killed {
            return Err(Error::cancelled());
        }
        Ok(self.outcome(timed_out))
    }

    /// How the command ended, with what its streams kept (taken out of `self`).
    pub(crate) fn outcome(&mut self, timed_out: bool) -> RunOutcome {
        let status = self.status.unwrap_or(ExitStatus::from_raw(libc::SIGKILL));
        let empty = || HeadTail::new(0, 0, None);
        let [out, err] = std::mem::replace(&mut self.captures, [empty(), empty()]);
        RunOutcome {
            exit_code: crate::process::outcome::shell_exit_code(status),
            signal: status.signal(),
            stdout: Captured::from(out),
            stderr: Captured::from(err),
            timed_out,
        }
    }

    /// Stops the timed-out group: `SIGTERM`, up to [`TIMEOUT_GRACE`] for it to end, then
    /// `SIGKILL`; the shell is reaped.
    ///
    /// The group is frozen first (`SIGSTOP`), so the walk of the shell's tree finds every member
    /// and none forks past it; with `reap`, the descendants that left the group are killed
    /// (the group runs again meanwhile, for the shells to reap them). After the `SIGTERM` (and a
    /// `SIGCONT`, so stopped members act on it) the shell and the members are waited for
    /// through their pidfds (events, not polling). When each of them was sure to die of the
    /// `SIGTERM` in the kernel ([`dies_of_sigterm`]), nothing can have forked since the freeze and
    /// the group is gone; otherwise it is checked for what is left ([`Direct::group_gone`]) until
    /// the grace ends, then `SIGKILL`.
    pub(crate) fn stop(&mut self, kill: RawFd, reap: bool) -> Wake {
        let mut sure = matches!(signal_group(self.pid, Some(Signal::SIGSTOP)), Ok(true));
        let (outside, mut tree) = Tree::split(self.pid, reap);
        if !outside.is_empty() {
            sure = false;
            tree = crate::process::block_on(Tree::end_outside(self.pid, REAP_GRACE));
        }
        let grace = Instant::now() + TIMEOUT_GRACE;
        if !matches!(signal_group(self.pid, Some(Signal::SIGTERM)), Ok(true)) {
            self.reap_blocking();
            return Wake::Done;
        }
        // Read before the `SIGCONT`: a stopped member cannot change its dispositions, and a
        // running one was ended at the send if the `SIGTERM` was fatal to it.
        sure = sure && dies_of_sigterm(self.pid) && tree.pids().all(dies_of_sigterm);
        let _ = signal_group(self.pid, Some(Signal::SIGCONT));
        let members = tree.fds();
        let mut exited = vec![false; members.len()];
        let all_exited = |d: &Direct, e: &[bool]| d.status.is_some() && e.iter().all(|x| *x);
        match self.wait(Some(grace), kill, &members, &mut exited, all_exited) {
            Wake::Killed => return Wake::Killed,
            Wake::Done => {
                if sure || self.group_gone(grace) {
                    return Wake::Done;
                }
                let _ = signal_group(self.pid, Some(Signal::SIGKILL));
            }
            Wake::Deadline => {
                let _ = signal_group(self.pid, Some(Signal::SIGKILL));
                self.reap_blocking();
            }
        }
        Wake::Done
    }

    /// Whether the group is gone by `until`, once the shell and every known member exited.
    ///
    /// The members' zombies hold the group until their new parent (init, once the shell is
    /// gone) reaps them, which a prompt init does in microseconds: `kill(-pgid, 0)` is retried
    /// for up to [`ZOMBIE_WAIT`], then the group is searched for live members through `/proc`
    /// (one `getpgid` per process, a `stat` read per member) on this thread, and only a group
    /// that still has one is polled for until `until`.
    pub(crate) fn group_gone(&self, until: Instant) -> bool {
        let quick = Instant::now() + ZOMBIE_WAIT;
        let mut pause = Duration::from_micros(20);
        loop {
            if !matches!(signal_group(self.pid, None), Ok(true)) {
                return true;
            }
            let now = Instant::now();
            if now >= quick.min(until) {
                break;
            }
            std::thread::sleep(pause.min(quick.min(until) - now));
            pause *= 2;
        }
        if !group_alive(self.pid) {
            return true;
        }
        let left = until.saturating_duration_since(Instant::now());
        crate::process::block_on(wait_group_gone(self.pid, left))
    }

    /// Ends the whole tree at once after a kill of the handle (descendants that left the
    /// group through [`Tree::end_outside`]); the error to return.
    pub(crate) fn cancel(&mut self, reap: bool) -> Error {
        if reap {
            crate::process::block_on(Tree::end_outside(self.pid, REAP_GRACE));
        }
        let _ = signal_group(self.pid, Some(Signal::SIGKILL));
        self.reap_blocking();
        Error::cancelled()
    }
}

/// Until when output is read once the shell is gone: [`TIMEOUT_GRACE`] after a timeout; else
/// [`OUTPUT_DRAIN_GRACE`], but never past the `deadline`.
pub(crate) fn drain_until(deadline: Option<Instant>, timed_out: bool) -> Instant {
    if timed_out {
        return Instant::now() + TIMEOUT_GRACE;
    }
    let grace = Instant::now() + OUTPUT_DRAIN_GRACE;
    deadline.map_or(grace, |d| d.min(grace))
}

impl Drop for Direct {
    fn drop(&mut self) {
        if self.status.is_none() {
            // Never leave the group running or a zombie behind.
            let _ = signal_group(self.pid, Some(Signal::SIGKILL));
            self.reap_blocking();
        }
    }
}
