//! A job's log copier: the process that owns the pipe between a background command and its log
//! file, so `max_log_bytes` holds as the log is written rather than after the fact.
//!
//! A job outlives the Python process that started it, so the copier cannot be a thread of it:
//! [`start`] forks a small process (its own session, no exec) that reads the command's output
//! from one pipe per log and appends it to the log. A write that would take a log past the limit
//! empties the log instead, leaving `[Log exceeded max_log_bytes=N; earlier output was cleared.]`,
//! and the bytes of that read go with the rest; a log holding just the notice is left alone (the
//! overflowing bytes are dropped), so output past the cap in one stretch costs one clear. Each clear appends one byte to `log_clears` before
//! and one after, as the reference's watcher does. So a log never holds more than
//! `max(limit, notice)` bytes, however fast the command writes, and a command that reads its own
//! log cannot grow it. The copier exits once every writer has closed its pipe.
//!
//! The copier also publishes the job's final status, so the wrapper waits for it without polling
//! and forks no `mv`: the wrapper writes `status.tmp`, closes its log pipes and `done`, and
//! reads `ack` to its end. Once every log writer has closed (all output is in the logs), or
//! [`DRAIN_GRACE_MS`] after `done` hung up (a background process still writing), whichever
//! comes first, the copier renames `status.tmp` over `status.json` and closes its end of
//! `ack`; it goes on copying after that until its last writer closes.
//!
//! The forked child runs only async-signal-safe calls (`poll`, `read`, `write`, `fstat`,
//! `ftruncate`, `open`, `close`, `rename`, `clock_gettime`, `_exit`) on data prepared before the fork.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Bytes read from a pipe at a time (the pipe buffer's default size).
pub const CHUNK_BYTES: usize = 64 * 1024;

/// Milliseconds after the wrapper's command has ended (`done` hung up) that the copier
/// still waits for output a background process writes before it publishes the exit status
/// (and lets the wrapper go on); it copies what comes later all the same.
pub const DRAIN_GRACE_MS: i64 = 250;

/// The notice a cleared log is left holding (without its newline).
pub fn notice(limit: u64) -> String {
    format!("[Log exceeded max_log_bytes={limit}; earlier output was cleared.]")
}

/// A running copier, and the ends of its pipes the wrapper is to get.
#[derive(Debug)]
pub struct Copier {
    /// The copier's PID (reaped by a thread of this process while it lives).
    pub pid: i32,
    /// The wrapper's descriptors 3 to 6, in order: the write ends of stdout's and stderr's pipes
    /// (the same pipe twice when the logs are combined), `done`'s write end (held while the
    /// command runs) and `ack`'s read end (at its end once the logs hold the output).
    ends: Vec<OwnedFd>,
    /// Which of `ends` each of the wrapper's descriptors 3 to 6 is.
    order: [usize; 4],
}

impl Copier {
    /// The descriptors to hand the wrapper as 3, 4, 5 and 6.
    pub fn wrapper_fds(&self) -> [RawFd; 4] {
        self.order.map(|i| self.ends[i].as_raw_fd())
    }

    /// Called once the wrapper is spawned (holding its own copies) or will never be: drops
    /// this process's ends, so the copier ends with the wrapper's.
    pub fn release(self) {
        drop(self.ends);
    }
}

struct Stream {
    read: RawFd,
    log: RawFd,
}

fn cstring(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "embedded null byte"))
}

fn open(path: &CString, flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: open with a NUL-terminated path; the fd is then owned.
    let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
    if fd == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just opened, owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A pipe, both ends close-on-exec, the read end non-blocking when `nonblocking_read`:
/// `(read, write)`.
fn pipe(nonblocking_read: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just created, owned here.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    if nonblocking_read {
        // SAFETY: fcntl on a fd we own.
        unsafe {
            let flags = libc::fcntl(r.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(r.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
    Ok((r, w))
}

/// Starts the copier for the job in `dir`: `logs` are the log files (created already) it appends
/// to, one pipe each, each kept at or under `limit` bytes. The pipes are anonymous: the wrapper
/// gets its ends when it is spawned ([`Copier::wrapper_fds`]), so nothing waits on a name and a
/// launcher that dies at any point leaves no process blocked.
///
/// Errors: the OS errors of creating the pipes, opening the logs, or forking.
pub fn start(dir: &Path, logs: &[&str], limit: u64) -> io::Result<Copier> {
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    let mut log_fds = Vec::new();
    for log in logs {
        let (read, write) = pipe(true)?;
        reads.push(read);
        writes.push(write);
        log_fds.push(open(
            &cstring(&dir.join(log))?,
            libc::O_WRONLY | libc::O_APPEND,
        )?);
    }
    let (done_read, done_write) = pipe(true)?;
    let (ack_read, ack_write) = pipe(false)?;
    let status = [
        cstring(&dir.join("status.tmp"))?,
        cstring(&dir.join("status.json"))?,
    ];
    let clears = cstring(&dir.join("log_clears"))?;
    let notice = format!("{}\n", notice(limit)).into_bytes();
    let streams: Vec<Stream> = reads
        .iter()
        .zip(&log_fds)
        .map(|(r, l)| Stream {
            read: r.as_raw_fd(),
            log: l.as_raw_fd(),
        })
        .collect();
    // The streams, then `done` (its hang-up is the only event looked for).
    let mut polls: Vec<libc::pollfd> = streams
        .iter()
        .map(|s| s.read)
        .chain([done_read.as_raw_fd()])
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut buffer = vec![0u8; CHUNK_BYTES];
    let ends = Handshake {
        done: done_read.as_raw_fd(),
        ack: ack_write.as_raw_fd(),
        status: &status,
    };
    let keep: Vec<RawFd> = streams
        .iter()
        .flat_map(|s| [s.read, s.log])
        .chain([ends.done, ends.ack])
        .collect();
    // SAFETY: the child runs only async-signal-safe calls on memory prepared above (a copy of
    // this process's, after fork) and leaves by `_exit`; every signal is blocked around the fork
    // so no handler of this process runs in the child before its dispositions are reset.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::fork();
        if pid == 0 {
            child(
                &streams,
                ends,
                &mut polls,
                &mut buffer,
                &keep,
                &clears,
                &notice,
                limit,
            );
        }
        let fork_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid == -1 {
            return Err(fork_error);
        }
        pid
    };
    drop(reads);
    drop(log_fds);
    drop(done_read);
    drop(ack_write);
    let _ = std::thread::Builder::new()
        .name("harness-log-copier".into())
        .stack_size(64 * 1024)
        .spawn(move || loop {
            let mut status = 0;
            // SAFETY: reaping our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            if r == pid || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break;
            }
        });
    let err = if writes.len() > 1 { 1 } else { 0 };
    let n = writes.len();
    let mut ends = writes;
    ends.push(done_write);
    ends.push(ack_read);
    Ok(Copier {
        pid,
        ends,
        order: [0, err, n, n + 1],
    })
}

/// The copier's ends of its handshake with the wrapper: `done`'s read end, `ack`'s
/// write end, and the wrapper's final status (`status.tmp`) with the name it is published under
/// (`status.json`).
#[derive(Clone, Copy)]
struct Handshake<'a> {
    done: RawFd,
    ack: RawFd,
    status: &'a [CString; 2],
}

impl Handshake<'_> {
    /// Publishes the status the wrapper wrote before it closed its pipes (a rename, so the wrapper
    /// forks no `mv`; nothing when there is none), then lets the wrapper go on.
    unsafe fn ack(&self) {
        libc::rename(self.status[0].as_ptr(), self.status[1].as_ptr());
        libc::close(self.ack);
    }
}

/// Milliseconds on the monotonic clock (async-signal-safe).
unsafe fn now_ms() -> i64 {
    let mut ts: libc::timespec = std::mem::zeroed();
    libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    ts.tv_sec as i64 * 1000 + ts.tv_nsec as i64 / 1_000_000
}

/// The copier's body; never returns.
#[allow(clippy::too_many_arguments)]
unsafe fn child(
    streams: &[Stream],
    ends: Handshake,
    polls: &mut [libc::pollfd],
    buffer: &mut [u8],
    keep: &[RawFd],
    clears: &CString,
    notice: &[u8],
    limit: u64,
) -> ! {
    for sig in 1..libc::SIGRTMAX() {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction != libc::SIG_DFL
            && old.sa_sigaction != libc::SIG_IGN
        {
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &new, std::ptr::null_mut());
        }
    }
    // Not stopped with the job's group (it has none) nor by a terminal: it ends at EOF.
    for sig in [
        libc::SIGINT,
        libc::SIGHUP,
        libc::SIGTERM,
        libc::SIGPIPE,
        libc::SIGXFSZ,
    ] {
        libc::signal(sig, libc::SIG_IGN);
    }
    let mut empty: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut empty);
    libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    libc::setsid();
    // Nothing of this process but our pipes and logs: close every other descriptor.
    let max = {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) == 0 {
            rl.rlim_cur.min(1 << 20) as RawFd
        } else {
            1024
        }
    };
    let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
    for fd in 0..3 {
        if null >= 0 && null != fd {
            libc::dup2(null, fd);
        }
    }
    let mut fd = 3;
    while fd < max {
        if !keep.contains(&fd) {
            // One close_range for the run of descriptors up to the next kept one.
            let next = keep
                .iter()
                .copied()
                .filter(|&k| k > fd)
                .min()
                .unwrap_or(max);
            if libc::syscall(
                libc::SYS_close_range,
                fd as libc::c_uint,
                (next - 1) as libc::c_uint,
                0,
            ) != 0
            {
                for f in fd..next.min(65_536) {
                    libc::close(f);
                }
            }
            fd = next;
            continue;
        }
        fd += 1;
    }
    let mut open_streams = streams.len();
    let done = streams.len();
    // When the wrapper's command ended (`done` hung up), plus the grace; `None` before.
    let mut deadline: Option<i64> = None;
    let mut acked = false;
    while open_streams > 0 {
        for p in polls.iter_mut() {
            p.revents = 0;
        }
        let mut timeout = -1;
        if let (Some(at), false) = (deadline, acked) {
            let left = at - now_ms();
            if left <= 0 {
                // The grace is over: the status is published while a background process writes on.
                ends.ack();
                acked = true;
            } else {
                timeout = left.min(i32::MAX as i64) as libc::c_int;
            }
        }
        let ready = libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, timeout);
        if ready == -1 {
            continue;
        }
        if polls[done].fd >= 0 && polls[done].revents != 0 {
            // Every writer of `done` is gone: the wrapper's command has ended.
            polls[done].fd = -1;
            deadline = Some(now_ms() + DRAIN_GRACE_MS);
        }
        for (i, stream) in streams.iter().enumerate() {
            if polls[i].fd < 0 || polls[i].revents == 0 {
                continue;
            }
            let n = libc::read(stream.read, buffer.as_mut_ptr().cast(), buffer.len());
            if n > 0 {
                append(stream.log, &buffer[..n as usize], clears, notice, limit);
                continue;
            }
            let errno = *libc::__errno_location();
            if n == -1 && (errno == libc::EAGAIN || errno == libc::EINTR) {
                continue;
            }
            // End of file: every writer has closed it.
            polls[i].fd = -1;
            open_streams -= 1;
        }
    }
    if !acked {
        ends.ack();
    }
    libc::_exit(0)
}

unsafe fn write_all(fd: RawFd, mut data: &[u8]) {
    while !data.is_empty() {
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        if n > 0 {
            data = &data[n as usize..];
        } else if n == -1 && *libc::__errno_location() == libc::EINTR {
            continue;
        } else {
            return;
        }
    }
}

/// Appends `chunk` to `log`, or empties `log` to the notice when it would pass `limit`.
unsafe fn append(log: RawFd, chunk: &[u8], clears: &CString, notice: &[u8], limit: u64) {
    let mut st: libc::stat = std::mem::zeroed();
    let size = if libc::fstat(log, &mut st) == 0 {
        st.st_size as u64
    } else {
        0
    };
    let after = size + chunk.len() as u64;
    if after <= limit {
        write_all(log, chunk);
        return;
    }
    // A log holding just the notice is left alone (the chunk is dropped), so a command that goes
    // on writing past the cap adds no clear per read.
    if size != notice.len() as u64 && after > notice.len() as u64 {
        let marks = libc::open(
            clears.as_ptr(),
            libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
            0o600,
        );
        if marks >= 0 {
            write_all(marks, b"x");
        }
        libc::ftruncate(log, 0);
        write_all(log, notice);
        if marks >= 0 {
            write_all(marks, b"x");
            libc::close(marks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::job::{exit_code, launch, status_text, wait_exit, Launch, LaunchSpec};
    use std::time::Duration;

    fn run(dir: &Path, command: &str, combined: bool, limit: u64) -> std::path::PathBuf {
        let spec = LaunchSpec {
            dir: dir.join("job"),
            cwd: dir.to_path_buf(),
            env: vec![(b"PATH".to_vec(), b"/usr/bin:/bin".to_vec())],
            command: command.as_bytes().to_vec(),
            combined,
            max_file_bytes: None,
            max_log_bytes: Some(limit),
            exclusive: true,
            sandbox: None,
            reap_descendants: true,
        };
        let Launch::Started(handle) = launch(spec).unwrap() else {
            panic!()
        };
        assert!(wait_exit(handle.pid, Duration::from_secs(20)));
        dir.join("job")
    }

    #[test]
    fn a_burst_leaves_the_notice_and_what_follows() {
        let tmp = tempfile::tempdir().unwrap();
        let job = run(
            tmp.path(),
            "head -c 3000000 /dev/zero; sleep 0.2; echo end; exit 7",
            true,
            1000,
        );
        assert_eq!(exit_code(&status_text(&job).unwrap()), Some(7));
        let log = std::fs::read(job.join("output.log")).unwrap();
        assert_eq!(log, format!("{}\nend\n", notice(1000)).as_bytes());
        // One stretch past the cap, one clear.
        assert_eq!(std::fs::read(job.join("log_clears")).unwrap(), b"xx");
    }

    #[test]
    fn streams_are_capped_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let job = run(tmp.path(), "printf '%200s' x; echo small >&2", false, 100);
        assert_eq!(
            std::fs::read(job.join("stdout.log")).unwrap(),
            format!("{}\n", notice(100)).as_bytes()
        );
        assert_eq!(std::fs::read(job.join("stderr.log")).unwrap(), b"small\n");
    }
}
