//! A foreground command waited for by the caller's event loop rather than a thread.
//!
//! [`Stepped`] holds a spawned shell (a [`Direct`]) and one epoll descriptor that becomes
//! readable whenever there is something to do: output in a pipe, the shell's exit (its pidfd),
//! a timer (a `timerfd` armed for the deadline, the grace after `SIGTERM` or the end of the
//! drain), or, while a timed-out group is stopped, a member's exit. The caller registers that one
//! descriptor with its loop and calls [`Stepped::step`] each time it is readable; every step is
//! non-blocking (at most [`READ_BUDGET`] bytes per pipe), so a waiting command costs no thread,
//! and the hand-off from a worker thread back to the loop (the slowest hop on a busy machine)
//! is gone from the path between a command's exit, or its deadline, and the caller's return.
//!
//! The few steps that must wait without an event to wait on (killing descendants that left
//! the group, or searching a group that outlived its known members) are left to
//! [`Stepped::finish`] on a worker thread: [`Step::Finish`] says so.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::error::{Error, Result};
use crate::process::group::{group_alive_after, last_pid, signal_group};
use crate::process::outcome::{RunOutcome, TIMEOUT_GRACE};
use crate::process::reaper::Tree;
use crate::process::wait::direct::{drain_until, Direct, Wake};
use crate::process::wait::fatal::dies_of_sigterm;

/// Bytes read from each pipe in one step at most, so a command that writes without pause
/// leaves the loop free between steps.
pub const READ_BUDGET: usize = 1 << 20;

/// Processes below the shell a timed-out step walks at most on the caller's thread; a bigger
/// tree's stop is left to [`Stepped::finish`] (a walk reads procfs about ten times a process).
pub const STEP_MAX_PROCESSES: usize = 32;

/// PIDs a step checks one by one at most for a straggler of a group that may have forked;
/// a wider window is searched by [`Stepped::finish`].
const STEP_MAX_PID_WINDOW: i32 = 256;

/// What the caller does after a [`Stepped::step`].
#[derive(Debug)]
pub enum Step {
    /// Wait until the descriptor is readable again, then step.
    Wait,
    /// The rest may block: call [`Stepped::finish`] on a worker thread.
    Finish,
    /// The command ended.
    Done(RunOutcome),
}

/// Where the wait stands.
#[derive(Debug)]
enum Phase {
    /// The shell runs; stopped at `deadline`.
    Running,
    /// The timed-out group was sent `SIGTERM`: the shell and the group's `members` have until
    /// `grace`; `sure` when each of them dies of the signal in the kernel; `since` the last
    /// PID allocated while the group was frozen (so any process forked later has a higher one). While a pipe is
    /// open, only the pipes are watched (`exits_watched` false): the last of the group to hold
    /// them closes them as it dies, one wake for all, and the pidfds are watched after that.
    Terminating {
        grace: Instant,
        members: Tree,
        exited: Vec<bool>,
        sure: bool,
        since: Option<i32>,
        exits_watched: bool,
    },
    /// The group was sent `SIGKILL`; waiting for the shell to exit.
    Killing,
    /// The shell is gone; output is read until the pipes close or `until`.
    Draining { until: Instant, timed_out: bool },
    /// The rest waits without events: [`Stepped::finish`] does it.
    Blocked(Rest),
    /// The outcome was returned.
    Done,
}

/// What [`Stepped::finish`] has left to do.
#[derive(Debug, Clone, Copy)]
enum Rest {
    /// Stop the timed-out group from the start ([`Direct::stop`]): descendants left it.
    Stop,
    /// The shell and every known member exited, yet the group has a live member (or may
    /// have: too many processes were forked since to check here): wait for it until `grace`,
    /// then `SIGKILL` what is left.
    GroupGone { grace: Instant },
}

/// A foreground command stepped by an event loop; see the module documentation.
pub struct Stepped {
    direct: Direct,
    epoll: OwnedFd,
    timer: OwnedFd,
    /// Whether the shell's pidfd is still in the epoll set (it stays readable once it exited).
    watching_shell: bool,
    deadline: Option<Instant>,
    reap: bool,
    phase: Phase,
}

impl std::fmt::Debug for Stepped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stepped")
            .field("pid", &self.direct.pid())
            .field("phase", &self.phase)
            .finish()
    }
}

/// An epoll instance and a `timerfd` (both close-on-exec, the timer non-blocking).
pub(crate) fn descriptors() -> std::io::Result<(OwnedFd, OwnedFd)> {
    // SAFETY: each call returns a new fd we own, or -1.
    let epoll = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if epoll < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
    let timer = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
        )
    };
    if timer < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let timer = unsafe { OwnedFd::from_raw_fd(timer) };
    Ok((epoll, timer))
}

impl Stepped {
    /// Takes over the spawned shell; `deadline` is when its group is stopped, `reap` whether
    /// the descendants that left the group are ended too. Errors: the OS's, registering the
    /// descriptors (the shell is then killed, as dropping a [`Direct`] does).
    pub(crate) fn new(
        direct: Direct,
        (epoll, timer): (OwnedFd, OwnedFd),
        deadline: Option<Instant>,
        reap: bool,
    ) -> std::io::Result<Stepped> {
        let stepped = Stepped {
            direct,
            epoll,
            timer,
            watching_shell: true,
            deadline,
            reap,
            phase: Phase::Running,
        };
        let epoll = stepped.epoll.as_raw_fd();
        watch(epoll, stepped.timer.as_raw_fd())?;
        watch(epoll, stepped.direct.pidfd())?;
        for fd in stepped.direct.pipe_fds() {
            watch(epoll, fd)?;
        }
        arm(stepped.timer.as_raw_fd(), deadline);
        Ok(stepped)
    }

    /// The descriptor to wait on: readable whenever [`Stepped::step`] has something to do.
    pub fn fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    /// Does what can be done now without waiting; see [`Step`].
    pub fn step(&mut self) -> Step {
        let (epoll, timer) = (self.epoll.as_raw_fd(), self.timer.as_raw_fd());
        for index in 0..2 {
            self.direct.read(index, READ_BUDGET);
        }
        self.direct.reap();
        if self.direct.exited() && self.watching_shell {
            unwatch(epoll, self.direct.pidfd());
            self.watching_shell = false;
        }
        loop {
            let now = Instant::now();
            let exited = self.direct.exited();
            match &mut self.phase {
                Phase::Running => {
                    // The deadline first: an exit seen only once the deadline has passed (a
                    // timeout shorter than the way to the first step) is not known to have
                    // come in time, so the command timed out, as with the threaded wait.
                    if self.deadline.is_some_and(|d| now >= d) {
                        self.phase = self.begin_stop();
                    } else if exited {
                        self.phase = Phase::Draining {
                            until: drain_until(self.deadline, false),
                            timed_out: false,
                        };
                    } else {
                        arm(timer, self.deadline);
                        return Step::Wait;
                    }
                }
                Phase::Terminating {
                    grace,
                    members,
                    exited: gone,
                    sure,
                    since,
                    exits_watched,
                } => {
                    let (grace, sure, since) = (*grace, *sure, *since);
                    let watch_now = !*exits_watched && self.direct.pipes_closed();
                    for (fd, gone) in members.fds().into_iter().zip(gone.iter_mut()) {
                        if !*gone && readable(fd) {
                            *gone = true;
                            if *exits_watched {
                                unwatch(epoll, fd);
                            }
                        } else if !*gone && watch_now {
                            let _ = watch(epoll, fd);
                        }
                    }
                    if watch_now {
                        *exits_watched = true;
                        if !exited && !self.watching_shell {
                            self.watching_shell = watch(epoll, self.direct.pidfd()).is_ok();
                        }
                    }
                    if exited && gone.iter().all(|g| *g) {
                        // Not sure: a member may have forked before it died. Zombies that
                        // init has not reaped yet hold the group, so the processes forked
                        // since the freeze are searched for a live member rather than waiting.
                        let alive = if sure {
                            Some(false)
                        } else {
                            group_alive_after(self.direct.pid(), since, STEP_MAX_PID_WINDOW)
                        };
                        self.phase = match alive {
                            Some(false) => Phase::Draining {
                                until: drain_until(None, true),
                                timed_out: true,
                            },
                            _ => Phase::Blocked(Rest::GroupGone { grace }),
                        };
                    } else if now >= grace {
                        let _ = signal_group(self.direct.pid(), Some(Signal::SIGKILL));
                        self.phase = Phase::Killing;
                    } else {
                        arm(timer, Some(grace));
                        return Step::Wait;
                    }
                }
                Phase::Killing => {
                    if !exited && !self.watching_shell {
                        self.watching_shell = watch(epoll, self.direct.pidfd()).is_ok();
                    }
                    if exited {
                        self.phase = Phase::Draining {
                            until: drain_until(None, true),
                            timed_out: true,
                        };
                    } else {
                        arm(timer, None);
                        return Step::Wait;
                    }
                }
                Phase::Draining { until, timed_out } => {
                    if self.direct.pipes_closed() || now >= *until {
                        let outcome = self.direct.outcome(*timed_out);
                        self.phase = Phase::Done;
                        arm(timer, None);
                        return Step::Done(outcome);
                    }
                    let until = *until;
                    arm(timer, Some(until));
                    return Step::Wait;
                }
                Phase::Blocked(_) | Phase::Done => {
                    arm(timer, None);
                    return Step::Finish;
                }
            }
        }
    }

    /// The non-blocking start of [`Direct::stop`]: freeze the group, walk the shell's tree,
    /// `SIGTERM` the group and let it run again, watching every member's pidfd. Descendants
    /// outside the group are killed with a wait, and a tree of more than
    /// [`STEP_MAX_PROCESSES`] takes long to walk: then the whole stop is left to
    /// [`Stepped::finish`].
    fn begin_stop(&mut self) -> Phase {
        let pid = self.direct.pid();
        let frozen = matches!(signal_group(pid, Some(Signal::SIGSTOP)), Ok(true));
        let Some((outside, members)) = Tree::split_at_most(pid, self.reap, STEP_MAX_PROCESSES)
        else {
            return Phase::Blocked(Rest::Stop);
        };
        if !outside.is_empty() {
            return Phase::Blocked(Rest::Stop);
        }
        let grace = Instant::now() + TIMEOUT_GRACE;
        if !matches!(signal_group(pid, Some(Signal::SIGTERM)), Ok(true)) {
            // Nothing left in the group: the shell has exited, its pidfd says so.
            return Phase::Killing;
        }
        // Read before the `SIGCONT`, as `Direct::stop` does.
        let sure = frozen && dies_of_sigterm(pid) && members.pids().all(dies_of_sigterm);
        // Nothing of a frozen group forks before the `SIGCONT`: any later process has a higher PID.
        let since = if frozen && !sure { last_pid() } else { None };
        let _ = signal_group(pid, Some(Signal::SIGCONT));
        if self.watching_shell && !self.direct.pipes_closed() {
            unwatch(self.epoll.as_raw_fd(), self.direct.pidfd());
            self.watching_shell = false;
        }
        Phase::Terminating {
            grace,
            exited: vec![false; members.len()],
            members,
            sure,
            since,
            exits_watched: false,
        }
    }

    /// Does the rest after [`Step::Finish`], blocking; `kill` is the handle's eventfd.
    /// Errors: `Cancelled` when `kill` is written meanwhile.
    pub fn finish(mut self, kill: BorrowedFd<'_>) -> Result<RunOutcome> {
        let kill = kill.as_raw_fd();
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Blocked(Rest::Stop) => {
                if self.direct.stop(kill, self.reap) == Wake::Killed {
                    return Err(self.direct.cancel(self.reap));
                }
            }
            Phase::Blocked(Rest::GroupGone { grace }) => {
                if !self.direct.group_gone(grace) {
                    let _ = signal_group(self.direct.pid(), Some(Signal::SIGKILL));
                }
            }
            _ => {
                let misuse = std::io::Error::from(std::io::ErrorKind::InvalidInput);
                return Err(Error::io(&misuse, "The command was not waiting to finish."));
            }
        }
        self.direct.drain(None, true, kill)
    }

    /// Ends the whole tree after the caller gave up (blocking: run it off the loop).
    pub fn cancel(mut self) {
        if !self.direct.exited() {
            let _ = self.direct.cancel(self.reap);
        }
    }
}

/// Whether `fd` (a pidfd) is readable now.
fn readable(fd: RawFd) -> bool {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd, no wait.
    unsafe { libc::poll(&mut poll, 1, 0) == 1 }
}

/// Adds `fd` to the epoll set (level-triggered, readable).
fn watch(epoll: RawFd, fd: RawFd) -> std::io::Result<()> {
    let mut event = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: fd as u64,
    };
    // SAFETY: registering a live fd with our epoll instance.
    let r = unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_ADD, fd, &mut event) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Removes `fd` from the epoll set.
fn unwatch(epoll: RawFd, fd: RawFd) {
    // SAFETY: removing an fd from our epoll instance; an fd not in it gives ENOENT.
    unsafe { libc::epoll_ctl(epoll, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
}

/// Arms the timer for `at` (at once when it has passed), or disarms it; either way, a
/// past expiry no longer makes it readable.
fn arm(timer: RawFd, at: Option<Instant>) {
    let value = match at {
        Some(at) => {
            let left = at
                .saturating_duration_since(Instant::now())
                .max(Duration::from_nanos(1));
            libc::timespec {
                tv_sec: left.as_secs() as libc::time_t,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            }
        }
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
    };
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: value,
    };
    // SAFETY: setting our own timerfd from a live itimerspec.
    unsafe { libc::timerfd_settime(timer, 0, &spec, std::ptr::null_mut()) };
}
