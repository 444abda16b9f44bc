//! Interactive sessions: a command on a pseudo-terminal in its own session, driven by writes and
//! reads, as a person at a terminal would.
//!
//! [`pty`] opens the terminal pair; [`screen`] keeps what a person would see (an emulator and a
//! bounded transcript); [`idle`] tells when the program waits for input. A [`Session`] owns the
//! master side, a reader thread feeding the emulator and a waiter thread reaping the program.
//! The program is `/bin/sh -c command` started as every command is ([`crate::process::spawn`]:
//! exact environment, Landlock sandbox, child subreaper), with the terminal's slave side as its
//! standard streams and controlling terminal. [`Session::stop`] ends it as a background job is
//! ended (`TERM`, grace, `KILL`, descendants that left the group included); dropping a session
//! kills it.

pub mod clean;
pub mod idle;
pub mod pty;
pub mod relay;
pub mod screen;
pub mod transcript;

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::cancel::CancelFlag;
use crate::error::{Error, ErrorKind, Result};
use crate::process::group::{group_alive, signal_group, wait_group_gone};
use crate::process::outcome::{os_reason, shell_exit_code, REAP_GRACE};
use crate::process::reaper::Tree;
use crate::process::sandbox::{Prepared, SandboxSpec};
use crate::process::spawn::{shell_command, ShellArgs};

pub use screen::Output;
pub use transcript::{SpillSpec, Spilled};

/// Bytes read from the terminal at most before they are fed to the emulator.
const READ_CHUNK: usize = 256 * 1024;

/// How often the reader checks that its session is still wanted while nothing arrives.
const READER_POLL: Duration = Duration::from_millis(200);

/// How long after the last write or wait the reader thread keeps resting: callers driving the
/// session read the terminal themselves, and a write is followed by a wait, so the reader does
/// not wake with them on every keystroke's echo (nor take the state lock from them).
const ATTENDED: Duration = Duration::from_millis(100);

/// Quiet time after the call began before a program in a read is taken to wait for input, when it
/// printed nothing since: keys written to the terminal reach the program through the kernel's
/// line discipline a moment later, and until then it still sleeps in the read they end.
pub const SETTLE: Duration = Duration::from_millis(30);

/// Quiet time after output that arrived during the call: the program (or the terminal's echo,
/// which the same kernel step that wakes the reader writes) has acted on the keys already.
pub const SETTLE_AFTER_OUTPUT: Duration = Duration::from_millis(5);

/// How long a write may wait for a program that does not read its input.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// What to start.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    /// The model's command (`/bin/sh -c` runs it).
    pub command: Vec<u8>,
    /// The directory it starts in.
    pub cwd: PathBuf,
    /// Its complete environment, as `(name, value)` bytes.
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
    /// The terminal's width and height in character cells.
    pub cols: u16,
    /// See `cols`.
    pub rows: u16,
    /// The Landlock sandbox it runs in, if any.
    pub sandbox: Option<SandboxSpec>,
    /// Bytes of a transcript kept from its start between two reads.
    pub head_bytes: usize,
    /// Bytes of a transcript kept from its end between two reads.
    pub tail_bytes: usize,
    /// Where long transcripts are written whole, if anywhere.
    pub spill: Option<SpillSpec>,
}

/// What waiting stopped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woke {
    /// The pattern appeared in the output.
    Matched,
    /// The program waits for input (read on its terminal, output quiet).
    Waiting,
    /// The program exited.
    Exited,
    /// The time ran out.
    TimedOut,
}

/// How the wait for a program's end ended: the `exit` of [`Session::adopt`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The program exited with this code (`128 + N` for signal `N`).
    Exited(i32),
    /// A relayed session's relay ended without telling the exit (it was killed): the program is
    /// ended too (its group `SIGKILL`ed) and its exit code is unknown.
    RelayLost,
}

/// What a caller is told when it writes to a session whose relay was lost.
pub const RELAY_LOST: &str = "The session's relay process was killed, and its program was ended \
with it; the session is gone. Start a new session with start_session.";

struct State {
    terminal: screen::Terminal,
    /// Exit code once the program was reaped (`128 + N` for a signal).
    exit_code: Option<i32>,
    /// When this process learned the program was over (reaped, or its relay lost).
    ended_at: Option<Instant>,
    /// The relay of a relayed session was lost ([`Ended::RelayLost`]).
    lost: bool,
    /// The reader saw the terminal close (every slave descriptor gone).
    closed: bool,
    last_output: Instant,
    /// When keys were last written, if ever: "waits for input" is judged from there.
    last_write: Option<Instant>,
    /// Bytes the program printed in all.
    bytes: u64,
    /// Text printed since the last read, for matching (bounded to its last `MATCH_WINDOW`).
    recent: Vec<u8>,
    /// The buffer reads from the terminal go through.
    buf: Vec<u8>,
}

impl State {
    /// Whether the program is over: exited, or its relay lost.
    fn over(&self) -> bool {
        self.exit_code.is_some() || self.lost
    }

    /// Reads what the terminal holds (up to [`READ_CHUNK`], never blocking) and feeds it to the
    /// emulator; marks the terminal closed on end of file or `EIO` (every slave descriptor gone).
    /// Returns whether anything was read. Called under the state lock, so what is read is fed
    /// in order whichever thread reads.
    fn drain(&mut self, fd: std::os::fd::RawFd) -> bool {
        if self.closed {
            return false;
        }
        let mut filled = 0;
        let n = loop {
            // SAFETY: reading into our own buffer from our own descriptor.
            let n = unsafe {
                libc::read(
                    fd,
                    self.buf[filled..].as_mut_ptr().cast(),
                    self.buf.len() - filled,
                )
            };
            if n <= 0 {
                break n;
            }
            filled += n as usize;
            if filled == self.buf.len() {
                break n;
            }
        };
        if n == 0
            || (n < 0
                && !matches!(
                    std::io::Error::last_os_error().raw_os_error(),
                    Some(libc::EAGAIN) | Some(libc::EINTR)
                ))
        {
            self.closed = true;
        }
        if filled == 0 {
            return false;
        }
        let buf = std::mem::take(&mut self.buf);
        let chunk = &buf[..filled];
        self.terminal.feed(chunk);
        self.bytes += chunk.len() as u64;
        self.last_output = Instant::now();
        self.recent.extend_from_slice(chunk);
        if self.recent.len() > MATCH_WINDOW {
            let cut = self.recent.len() - MATCH_WINDOW;
            self.recent.drain(..cut);
        }
        self.buf = buf;
        true
    }
}

/// Bytes of recent output a `wait_for` pattern is matched against.
const MATCH_WINDOW: usize = 64 * 1024;

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    ended: AtomicBool,
    /// Callers in [`Session::wait`]: while there are any, they read the terminal themselves (no
    /// hand-over from the reader thread on the way to them) and the reader thread rests.
    waiters: AtomicUsize,
    /// When a caller last wrote or waited, in nanoseconds since `epoch`: the reader thread rests
    /// until [`ATTENDED`] after it.
    touched: AtomicU64,
    epoch: Instant,
}

impl Shared {
    /// Marks the session as driven by a caller now.
    fn touch(&self) {
        self.touched
            .store(self.epoch.elapsed().as_nanos() as u64, Ordering::SeqCst);
    }

    /// How much longer the reader thread rests (zero: it reads the terminal).
    fn attended_for(&self) -> Duration {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            return ATTENDED;
        }
        let since = Duration::from_nanos(
            (self.epoch.elapsed().as_nanos() as u64)
                .saturating_sub(self.touched.load(Ordering::SeqCst)),
        );
        ATTENDED.saturating_sub(since)
    }
}

/// A running (or ended) interactive session.
pub struct Session {
    shared: Arc<Shared>,
    master: Arc<OwnedFd>,
    pid: i32,
    started: Instant,
    /// Dropping leaves the program running (a relay holds the terminal).
    detached: bool,
    /// The connection to the relay of a relayed session ([`relay::attach`]), shut down on drop.
    link: Option<Arc<OwnedFd>>,
}

impl Session {
    /// Starts `spec.command` on a new terminal. Errors: the sandbox's preparation or the spawn,
    /// as OS errors (the run aborts), worded without host paths.
    pub fn start(spec: SessionSpec) -> Result<Session> {
        let (master, mut child) = spawn(&spec)?;
        let pid = child.id().map(|p| p as i32).unwrap_or(0);
        let exit = Box::new(move || {
            Ended::Exited(
                crate::process::block_on(child.wait())
                    .map(shell_exit_code)
                    .unwrap_or(-1),
            )
        });
        let size = (spec.cols, spec.rows, spec.head_bytes, spec.tail_bytes);
        Session::adopt(master, pid, Instant::now(), size, spec.spill, exit, false)
    }

    /// A session over a terminal's `master` side whose program (`pid`) another party started at
    /// `started`: reader and waiter threads as [`Session::start`] gives, `exit` blocking until
    /// the program's end is known ([`Ended::RelayLost`] ends the program, unless the session
    /// was dropped first). `size` is `(cols, rows, head_bytes, tail_bytes)`; `spill`
    /// where long output goes (a relayed session's worker keeps none). A
    /// `detached` session leaves the program running when dropped (its relay ends it, see
    /// [`relay`]). Errors: a thread that cannot start.
    pub fn adopt(
        master: OwnedFd,
        pid: i32,
        started: Instant,
        size: (u16, u16, usize, usize),
        spill: Option<SpillSpec>,
        exit: Box<dyn FnOnce() -> Ended + Send>,
        detached: bool,
    ) -> Result<Session> {
        let (cols, rows, head_bytes, tail_bytes) = size;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                terminal: screen::Terminal::new(cols, rows, head_bytes, tail_bytes, spill),
                exit_code: None,
                ended_at: None,
                lost: false,
                closed: false,
                last_output: Instant::now(),
                last_write: None,
                bytes: 0,
                recent: Vec::new(),
                buf: vec![0; READ_CHUNK],
            }),
            changed: Condvar::new(),
            ended: AtomicBool::new(false),
            waiters: AtomicUsize::new(0),
            touched: AtomicU64::new(0),
            // Unattended from the start: the reader reads what the program prints at once.
            epoch: Instant::now()
                .checked_sub(ATTENDED)
                .unwrap_or_else(Instant::now),
        });
        let master = Arc::new(master);
        {
            let (shared, master) = (shared.clone(), master.clone());
            std::thread::Builder::new()
                .name("harness-session-reader".into())
                .spawn(move || read_loop(&shared, &master))
                .map_err(|e| Error::io(&e, "Unable to start the session's reader"))?;
        }
        {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("harness-session-waiter".into())
                .spawn(move || {
                    let ended = exit();
                    if ended == Ended::RelayLost && !shared.ended.load(Ordering::SeqCst) {
                        // Nobody reaps the program or ends it with the run now: end it here.
                        end_program(pid, Duration::ZERO);
                    }
                    let mut state = shared.state.lock().unwrap();
                    state.ended_at = Some(Instant::now());
                    match ended {
                        Ended::Exited(code) => state.exit_code = Some(code),
                        Ended::RelayLost => state.lost = true,
                    }
                    shared.changed.notify_all();
                })
                .map_err(|e| Error::io(&e, "Unable to start the session's waiter"))?;
        }
        Ok(Session {
            shared,
            master,
            pid,
            started,
            detached,
            link: None,
        })
    }

    /// The program's PID (also its process group and session ID).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Time from the start to the program's end (reaped, or its relay lost), or to now while it
    /// runs.
    pub fn runtime(&self) -> Duration {
        let ended = self.shared.state.lock().unwrap().ended_at;
        ended
            .unwrap_or_else(Instant::now)
            .saturating_duration_since(self.started)
    }

    /// The exit code once the program has exited and been reaped.
    pub fn exit_code(&self) -> Option<i32> {
        self.shared.state.lock().unwrap().exit_code
    }

    /// Whether the relay of this relayed session was lost ([`Ended::RelayLost`]): the program
    /// was ended and its exit code is unknown.
    pub fn relay_lost(&self) -> bool {
        self.shared.state.lock().unwrap().lost
    }

    /// Bytes the program printed in all.
    pub fn bytes(&self) -> u64 {
        self.shared.state.lock().unwrap().bytes
    }

    /// Sends `data` to the program as typed keys. Errors: `InvalidArgument` when the program
    /// has ended, or has not read its input for [`WRITE_TIMEOUT`].
    pub fn write(&self, data: &[u8]) -> Result<()> {
        let deadline = Instant::now() + WRITE_TIMEOUT;
        let fd = self.master.as_raw_fd();
        self.shared.touch();
        let mut rest = data;
        while !rest.is_empty() {
            if self.relay_lost() {
                return Err(Error::new(ErrorKind::InvalidArgument, RELAY_LOST));
            }
            if self.exit_code().is_some() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "The session's program has exited; it reads no more input.",
                ));
            }
            // SAFETY: writing from a live slice to our own descriptor.
            let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
            if n > 0 {
                rest = &rest[n as usize..];
                self.shared.state.lock().unwrap().last_write = Some(Instant::now());
                continue;
            }
            let err = std::io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => {}
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        "The session's terminal is closed; it reads no more input.",
                    ))
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "The session's program is not reading its input; read its output or stop it.",
                ));
            }
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLOUT,
                revents: 0,
            };
            let wait = (deadline - now).as_millis().min(100) as libc::c_int;
            // SAFETY: poll on one pollfd we own.
            unsafe { libc::poll(&mut pfd, 1, wait) };
        }
        Ok(())
    }

    /// Waits until `pattern` appears in the output since the last read (when given), the
    /// program waits for input (when `until_input`; judged no sooner than [`SETTLE`] after the
    /// last write (or the call, when earlier), or [`SETTLE_AFTER_OUTPUT`] after output that came
    /// since, so a program just sent keys has woken up), it exits, `timeout` passes or `cancel` is
    /// set (then `Cancelled`). Blocks the calling thread; call with the GIL released.
    pub fn wait(
        &self,
        pattern: Option<&regex::bytes::Regex>,
        until_input: bool,
        timeout: Duration,
        cancel: Option<&CancelFlag>,
    ) -> Result<Woke> {
        let begun = Instant::now();
        let deadline = begun + timeout;
        let fd = self.master.as_raw_fd();
        let _waiting = Waiting::new(&self.shared);
        let mut state = self.shared.state.lock().unwrap();
        loop {
            if let Some(cancel) = cancel {
                cancel.check()?;
            }
            state.drain(fd);
            if let Some(p) = pattern {
                if p.is_match(&state.recent) {
                    return Ok(Woke::Matched);
                }
            }
            if state.over() {
                // The last output can trail the exit: the reader drains until the terminal closes.
                if state.closed || state.last_output.elapsed() >= SETTLE {
                    return Ok(Woke::Exited);
                }
            }
            let now = Instant::now();
            // From the last write (keys sent just before this call), else from the call.
            let since = state.last_write.map_or(begun, |w| w.min(begun));
            let settle = if state.last_output > since {
                SETTLE_AFTER_OUTPUT
            } else {
                SETTLE
            };
            if until_input
                && !state.over()
                && now.duration_since(state.last_output.max(since)) >= settle
                && idle::waits_for_input(self.master.as_raw_fd())
            {
                return Ok(Woke::Waiting);
            }
            if now >= deadline {
                return Ok(Woke::TimedOut);
            }
            // Output wakes the poll and the exit the condition; "waits for input" and cancellation
            // are looked at every step.
            let poll = Duration::from_millis(if until_input { 2 } else { 50 });
            let step = (deadline - now).min(poll);
            if state.closed {
                state = self.shared.changed.wait_timeout(state, step).unwrap().0;
            } else {
                drop(state);
                let mut pfd = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: poll on one pollfd we own.
                unsafe { libc::poll(&mut pfd, 1, step.as_millis().max(1) as libc::c_int) };
                state = self.shared.state.lock().unwrap();
            }
        }
    }

    /// The output since the last read (which starts a new one); its spill file is kept when
    /// the text is longer than `room` chars (`None`: only when cut in memory).
    pub fn take_output(&self, room: Option<usize>) -> Output {
        let mut state = self.shared.state.lock().unwrap();
        state.drain(self.master.as_raw_fd());
        state.recent.clear();
        state.terminal.take(room)
    }

    /// Removes the spill files this session's reads kept; returns how many.
    pub fn remove_files(&self) -> usize {
        self.shared.state.lock().unwrap().terminal.remove_files()
    }

    /// Stops the program: the descendants that left its group are killed, its group gets
    /// `SIGTERM` and up to `grace` to end, then `SIGKILL` (descendants outside looked for again).
    /// Returns whether it had to be killed. Blocks; call with the GIL released.
    pub fn stop(&self, grace: Duration) -> bool {
        let killed = end_program(self.pid, grace);
        // The waiter reaps the leader; wait briefly so the exit code is known.
        let state = self.shared.state.lock().unwrap();
        let _ = self
            .shared
            .changed
            .wait_timeout_while(state, Duration::from_secs(1), |s| !s.over());
        killed
    }

    /// Whether the program is still running (neither exited nor lost with its relay).
    pub fn is_running(&self) -> bool {
        !self.shared.state.lock().unwrap().over()
    }

    /// Whether a full-screen program has the alternate screen up.
    pub fn is_full_screen(&self) -> bool {
        self.shared.state.lock().unwrap().terminal.is_full_screen()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shared.ended.store(true, Ordering::SeqCst);
        if !self.detached && self.is_running() {
            self.stop(Duration::ZERO);
        }
        if let Some(link) = &self.link {
            // SAFETY: shutting down our own socket; the waiter's read on it returns.
            unsafe { libc::shutdown(link.as_raw_fd(), libc::SHUT_RDWR) };
        }
    }
}

/// Ends the program `pid` leads: the descendants that left its group are killed, its group
/// gets `SIGTERM` and up to `grace` to end, then `SIGKILL` (descendants outside looked for
/// again); a zero `grace` is `SIGKILL` at once. Returns whether it had to be killed. Blocks.
pub(crate) fn end_program(pid: i32, grace: Duration) -> bool {
    if pid > 1 && group_alive(pid) {
        crate::process::block_on(Tree::end_outside(pid, REAP_GRACE));
        // No grace (the run is over): `SIGKILL` at once, so the program cannot die of a
        // `SIGTERM` first and report 143 instead.
        let gone = !grace.is_zero() && {
            let _ = signal_group(pid, Some(Signal::SIGTERM));
            let _ = signal_group(pid, Some(Signal::SIGCONT));
            crate::process::block_on(wait_group_gone(pid, grace))
        };
        if !gone {
            crate::process::block_on(Tree::end_outside(pid, REAP_GRACE));
            let _ = signal_group(pid, Some(Signal::SIGKILL));
            crate::process::block_on(wait_group_gone(pid, Duration::from_secs(1)));
        }
        !gone
    } else {
        false
    }
}

/// Opens a terminal and starts `spec.command` on it: `(master, child)`. Errors: the terminal,
/// the sandbox's preparation or the spawn, as OS errors worded without host paths.
pub(crate) fn spawn(spec: &SessionSpec) -> Result<(OwnedFd, tokio::process::Child)> {
    let (master, slave) = pty::open(spec.cols, spec.rows)
        .map_err(|e| Error::io(&e, format!("Unable to open a terminal: {}", os_reason(&e))))?;
    let sandbox = match &spec.sandbox {
        Some(s) => Some(Prepared::new(s).map_err(|e| {
            Error::io(
                &e,
                format!("Unable to prepare the sandbox: {}", os_reason(&e)),
            )
        })?),
        None => None,
    };
    let args = vec![b"-c".to_vec(), spec.command.clone()];
    let dup = |fd: &OwnedFd| {
        fd.try_clone()
            .map(Stdio::from)
            .map_err(|e| Error::io(&e, format!("Unable to open a terminal: {}", os_reason(&e))))
    };
    let shell = ShellArgs {
        args: &args,
        cwd: &spec.cwd,
        env: &spec.env,
        file_limit: None,
        sandbox: sandbox.as_ref(),
        subreaper: true,
    };
    let mut cmd = shell_command(shell, dup(&slave)?, dup(&slave)?);
    cmd.stdin(dup(&slave)?);
    // SAFETY: one async-signal-safe ioctl, after `shell_command`'s `setsid`.
    unsafe {
        cmd.pre_exec(|| pty::take_controlling_terminal());
    }
    let child = {
        let _entered = crate::process::runtime().enter();
        cmd.spawn()
    };
    drop(slave);
    let child = child.map_err(|e| {
        Error::io(
            &e,
            format!("Unable to start the command: {}", os_reason(&e)),
        )
    })?;
    Ok((master, child))
}

/// Counts a caller in [`Session::wait`] while it lives; the reader thread resumes after.
struct Waiting<'a>(&'a Shared);

impl<'a> Waiting<'a> {
    fn new(shared: &'a Shared) -> Self {
        shared.waiters.fetch_add(1, Ordering::SeqCst);
        Waiting(shared)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        // The reader resumes by itself once the session has gone [`ATTENDED`] unattended.
        self.0.touch();
        self.0.waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The reader thread: feeds what the program prints to the emulator while nobody drives the
/// session (nobody waits in [`Session::wait`], and no write or wait for [`ATTENDED`]; so a
/// program printing with no reader still runs), until the terminal closes or the session is
/// dropped.
fn read_loop(shared: &Shared, master: &OwnedFd) {
    let fd = master.as_raw_fd();
    loop {
        if shared.ended.load(Ordering::SeqCst) {
            break;
        }
        let rest = shared.attended_for();
        if !rest.is_zero() {
            let state = shared.state.lock().unwrap();
            let _ = shared.changed.wait_timeout(state, rest.min(READER_POLL));
            continue;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on one pollfd we own.
        let ready = unsafe { libc::poll(&mut pfd, 1, READER_POLL.as_millis() as libc::c_int) };
        if ready == 0 {
            continue;
        }
        let mut state = shared.state.lock().unwrap();
        if !shared.attended_for().is_zero() {
            continue;
        }
        let read = state.drain(fd);
        let closed = state.closed;
        drop(state);
        if read {
            shared.changed.notify_all();
        }
        if closed {
            break;
        }
    }
    shared.changed.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(command: &str) -> Session {
        Session::start(SessionSpec {
            command: command.as_bytes().to_vec(),
            cwd: PathBuf::from("/"),
            env: vec![
                (b"PATH".to_vec(), b"/usr/bin:/bin".to_vec()),
                (b"TERM".to_vec(), b"xterm-256color".to_vec()),
            ],
            cols: 80,
            rows: 24,
            sandbox: None,
            head_bytes: 1 << 16,
            tail_bytes: 1 << 16,
            spill: None,
        })
        .unwrap()
    }

    fn text(out: &Output) -> String {
        String::from_utf8_lossy(&[&out.head[..], &out.tail].concat()).into_owned()
    }

    #[test]
    fn the_runtime_stops_at_the_programs_end() {
        let s = start("true");
        assert_eq!(
            s.wait(None, false, Duration::from_secs(5), None).unwrap(),
            Woke::Exited
        );
        let at_exit = s.runtime();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(s.runtime(), at_exit);
    }

    #[test]
    fn cat_echoes_a_line_and_ends_on_eof() {
        let s = start("cat");
        assert_eq!(
            s.wait(None, true, Duration::from_secs(5), None).unwrap(),
            Woke::Waiting
        );
        s.write(b"hello\n").unwrap();
        let re = regex::bytes::Regex::new("hello\r\nhello").unwrap();
        assert_eq!(
            s.wait(Some(&re), false, Duration::from_secs(5), None)
                .unwrap(),
            Woke::Matched
        );
        assert_eq!(text(&s.take_output(None)), "hello\nhello\n");
        s.write(b"\x04").unwrap();
        assert_eq!(
            s.wait(None, false, Duration::from_secs(5), None).unwrap(),
            Woke::Exited
        );
        assert_eq!(s.exit_code(), Some(0));
    }

    #[test]
    fn a_program_printing_after_a_write_runs_on_with_nobody_waiting() {
        // The reader rests while callers drive the session, then reads again by itself: the
        // program's 300 kB (far past the terminal's buffer) all arrive with no wait called.
        let s = start("read go; head -c 300000 /dev/zero | tr '\\0' x; echo; echo end");
        s.write(b"go\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while s.bytes() < 300_000 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(s.bytes() >= 300_000, "{}", s.bytes());
    }

    #[test]
    fn has_a_controlling_terminal_in_its_own_session() {
        let s = start("tty >/dev/null && ps -o sid= -p $$ | tr -d ' ' && echo $$");
        s.wait(None, false, Duration::from_secs(5), None).unwrap();
        let out = text(&s.take_output(None));
        let lines: Vec<&str> = out.lines().map(str::trim).collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert_eq!(lines[0], lines[1]);
        assert_eq!(s.exit_code(), Some(0));
    }

    #[test]
    fn ctrl_c_interrupts_the_foreground_program() {
        let s = start("sleep 100; echo after $?");
        std::thread::sleep(Duration::from_millis(200));
        s.write(b"\x03").unwrap();
        assert_eq!(
            s.wait(None, false, Duration::from_secs(5), None).unwrap(),
            Woke::Exited
        );
        assert_eq!(s.exit_code(), Some(130));
    }

    #[test]
    fn stop_ends_the_group_and_descendants_that_left_it() {
        let s = start("(setsid sleep 300 &); trap '' TERM; sleep 300");
        std::thread::sleep(Duration::from_millis(300));
        let pid = s.pid();
        assert!(s.stop(Duration::from_millis(200)));
        assert!(!group_alive(pid));
        assert!(s.exit_code().is_some());
        // The detached `sleep` was a descendant in another session: gone too.
        let out = std::process::Command::new("pgrep")
            .args(["-f", "^sleep 300$"])
            .output()
            .unwrap();
        let left: Vec<i32> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/status"))
                    .map(|s| s.lines().any(|l| l == format!("PPid:\t{pid}")))
                    .unwrap_or(false)
            })
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
