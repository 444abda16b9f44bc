//! A job's log copier: the process that owns the pipe between a background command and its log
//! file, so `max_log_bytes` holds as the log is written rather than after the fact.
//!
//! A job outlives the Python process that started it, so the copier cannot be a thread of it:
//! [`start`] clones a small process (its own session, no exec) that reads the command's output
//! from one pipe per log and appends it to the log. A write that would take a log past the limit
//! empties the log instead, leaving `[Log exceeded max_log_bytes=N; earlier output was cleared.]`,
//! and the bytes of that read go with the rest; a log holding just the notice is left alone (the
//! overflowing bytes are dropped), so output past the cap in one stretch costs one clear. When a
//! stream ends right after such a dropped read (nothing appended since), the read's end is
//! written after the notice, as much as fits, so the log ends as the output did. Each clear appends one byte to `log_clears` before
//! and one after, as the reference's watcher does. So a log never holds more than
//! `max(limit, notice)` bytes, however fast the command writes, and a command that reads its own
//! log cannot grow it. The copier exits once every writer has closed its pipe.
//!
//! The copier also publishes the job's final status, so the wrapper waits for it without polling
//! and forks no `mv`: the wrapper writes `status.tmp`, closes its log pipes and `done`, and
//! reads `ack` to its end. Once `done` has hung up and every log writer has closed (all output
//! is in the logs), or [`DRAIN_GRACE_MS`] after `done` hung up (a background process still
//! writing), whichever comes first, the copier renames `status.tmp` over `status.json` and closes its end of
//! `ack`; it goes on copying after that until its last writer closes.
//!
//! The copier is a `clone(CLONE_VM)` child that runs raw system calls only (`ppoll`, `read`,
//! `write`, `lseek`, `ftruncate`, `openat`, `close`, `renameat2`, `clock_gettime`, `exit`) on a
//! mapping prepared for it (see [`start`]).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::process::rawsys;

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

/// Longest path (with its NUL) the copier can hold: a job directory's file names past it make
/// [`start`] fail with `InvalidInput`.
const PATH_CAP: usize = 4096;

/// Bytes of stack the copier runs on.
const STACK_BYTES: usize = 64 * 1024;

/// Everything the copier uses, in memory it alone touches once started (see [`start`]).
#[repr(C)]
struct Ctx {
    /// `(read end, log)` per stream.
    streams: [[RawFd; 2]; 2],
    nstreams: usize,
    /// `done`'s read end and `ack`'s write end.
    done: RawFd,
    ack: RawFd,
    /// Descriptors to keep open, ascending; the rest are closed.
    keep: [RawFd; 6],
    nkeep: usize,
    limit: u64,
    notice: [u8; 128],
    notice_len: usize,
    /// `status.tmp`, `status.json`, `log_clears`: NUL-terminated.
    status_tmp: [u8; PATH_CAP],
    status_json: [u8; PATH_CAP],
    clears: [u8; PATH_CAP],
    polls: [libc::pollfd; 3],
    buffer: [u8; CHUNK_BYTES],
    /// Per stream, the end of its last read when that read was dropped (nothing appended since):
    /// written after the notice at the stream's end. `dropped_len[i] == 0`: none.
    dropped: [[u8; CHUNK_BYTES]; 2],
    dropped_len: [usize; 2],
}

/// The copier's memory: a [`Ctx`] and its stack, mapped privately for it and unmapped once it
/// has been reaped.
struct Region {
    base: *mut libc::c_void,
    len: usize,
}

// SAFETY: a raw mapping, handed to the reaping thread to unmap.
unsafe impl Send for Region {}

impl Region {
    fn new() -> io::Result<Self> {
        let len = (std::mem::size_of::<Ctx>() + STACK_BYTES + 4095) & !4095;
        // SAFETY: an anonymous private mapping of `len` bytes, zeroed by the kernel.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Region { base, len })
    }

    fn ctx(&self) -> *mut Ctx {
        self.base.cast()
    }

    /// The top of the stack (16-byte aligned), past the [`Ctx`].
    fn stack_top(&self) -> *mut libc::c_void {
        let top = self.base as usize + self.len;
        (top & !15) as *mut libc::c_void
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: our mapping, no longer used by anyone.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

fn put_path(into: &mut [u8; PATH_CAP], path: &Path) -> io::Result<()> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= PATH_CAP || bytes.contains(&0) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    into[..bytes.len()].copy_from_slice(bytes);
    into[bytes.len()] = 0;
    Ok(())
}

/// Starts the copier for the job in `dir`: `logs` are the log files (created already) it appends
/// to, one pipe each, each kept at or under `limit` bytes. The pipes are anonymous: the wrapper
/// gets its ends when it is spawned ([`Copier::wrapper_fds`]), so nothing waits on a name and a
/// launcher that dies at any point leaves no process blocked.
///
/// The copier is a `clone(CLONE_VM)` of this process, not a `fork`: it shares this process's
/// memory (no copy of the interpreter's page tables, which made the fork of a large process
/// cost milliseconds) and touches only a mapping made for it here, through raw system calls
/// ([`crate::process::rawsys`]), with every signal blocked. It keeps that memory if this process
/// exits; the mapping is unmapped once the copier has been reaped. Where raw calls are not
/// available ([`crate::process::rawsys::SUPPORTED`]) it is forked.
///
/// Errors: the OS errors of creating the pipes, opening the logs, mapping or cloning;
/// `InvalidInput` for paths longer than the copier holds.
pub fn start(dir: &Path, logs: &[&str], limit: u64) -> io::Result<Copier> {
    let mut reads = Vec::new();
    let mut writes = Vec::new();
    let mut log_fds = Vec::new();
    for log in logs.iter().take(2) {
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
    let region = Region::new()?;
    // SAFETY: the mapping is ours, zeroed, and large enough for a `Ctx`.
    let ctx = unsafe { &mut *region.ctx() };
    put_path(&mut ctx.status_tmp, &dir.join("status.tmp"))?;
    put_path(&mut ctx.status_json, &dir.join("status.json"))?;
    put_path(&mut ctx.clears, &dir.join("log_clears"))?;
    let text = format!("{}\n", notice(limit)).into_bytes();
    let n = text.len().min(ctx.notice.len());
    ctx.notice[..n].copy_from_slice(&text[..n]);
    ctx.notice_len = n;
    ctx.limit = limit;
    ctx.nstreams = reads.len();
    for (i, (r, l)) in reads.iter().zip(&log_fds).enumerate() {
        ctx.streams[i] = [r.as_raw_fd(), l.as_raw_fd()];
    }
    ctx.done = done_read.as_raw_fd();
    ctx.ack = ack_write.as_raw_fd();
    let mut keep: Vec<RawFd> = ctx.streams[..ctx.nstreams]
        .iter()
        .flatten()
        .copied()
        .chain([ctx.done, ctx.ack])
        .collect();
    keep.sort_unstable();
    ctx.keep[..keep.len()].copy_from_slice(&keep);
    ctx.nkeep = keep.len();
    // The streams, then `done` (its hang-up is the only event looked for).
    for i in 0..=ctx.nstreams {
        let fd = if i < ctx.nstreams {
            ctx.streams[i][0]
        } else {
            ctx.done
        };
        ctx.polls[i] = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
    }
    let ctx_ptr = region.ctx();
    // SAFETY: every signal is blocked around the clone (the child keeps them blocked, so no
    // handler of this process ever runs on its stack); the child runs `body` on the mapping
    // alone, through raw system calls, and leaves by `exit`.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = if crate::process::rawsys::SUPPORTED {
            libc::clone(
                entry,
                region.stack_top(),
                libc::CLONE_VM | libc::SIGCHLD,
                ctx_ptr.cast(),
            )
        } else {
            let pid = libc::fork();
            if pid == 0 {
                body(ctx_ptr)
            }
            pid
        };
        let error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid == -1 {
            return Err(error);
        }
        pid
    };
    drop(reads);
    drop(log_fds);
    drop(done_read);
    drop(ack_write);
    // Unmapped only once the copier has been reaped; left mapped if no thread can reap it.
    let region = std::mem::ManuallyDrop::new(region);
    let _ = std::thread::Builder::new()
        .name("harness-log-copier".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            loop {
                let mut status = 0;
                // SAFETY: reaping our own child.
                let r = unsafe { libc::waitpid(pid, &mut status, 0) };
                if r == pid || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            drop(std::mem::ManuallyDrop::into_inner(region));
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

extern "C" fn entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the copier's `Ctx`, which only it uses from here on.
    unsafe { body(arg.cast()) }
}

/// Publishes the status the wrapper wrote before it closed its pipes (a rename, so the wrapper
/// forks no `mv`; nothing when there is none), then lets the wrapper go on.
unsafe fn ack(c: *mut Ctx) {
    rawsys::rename((*c).status_tmp.as_ptr(), (*c).status_json.as_ptr());
    rawsys::close((*c).ack);
}

/// The copier's body; never returns. Raw system calls only, on `*c` and its own stack; no
/// indexing that could panic.
unsafe fn body(c: *mut Ctx) -> ! {
    rawsys::setsid();
    // Nothing of this process but our pipes and logs: stdio to /dev/null, the rest closed.
    let null = rawsys::open(c"/dev/null".as_ptr().cast(), libc::O_RDWR, 0) as RawFd;
    let mut fd = 0;
    while fd < 3 {
        if null >= 0 && null != fd {
            rawsys::dup3(null, fd);
        }
        fd += 1;
    }
    let keep = &(*c).keep;
    let nkeep = (*c).nkeep;
    let mut from: u32 = 3;
    let mut k = 0;
    while k <= nkeep {
        let next = if k < nkeep { keep[k] as u32 } else { u32::MAX };
        if next > from && rawsys::close_range(from, next - 1) < 0 {
            let mut f = from;
            while f < next && f < 65_536 {
                rawsys::close(f as RawFd);
                f += 1;
            }
        }
        from = next.wrapping_add(1);
        k += 1;
    }
    if null >= 3 && !keep[..nkeep].contains(&null) {
        rawsys::close(null);
    }
    let nstreams = (*c).nstreams;
    let mut open_streams = nstreams;
    // When the wrapper's command ended (`done` hung up), plus the grace; `None` before.
    let mut deadline: Option<i64> = None;
    let mut acked = false;
    // Until every stream is at its end and the wrapper has hung up `done` (it has written
    // `status.tmp` by then): a command's end closes the streams first, and an ack before the
    // wrapper's `status.tmp` would leave the wrapper to publish with a forked `mv`.
    while open_streams > 0 || (*c).polls[nstreams].fd >= 0 {
        let polls = &mut (*c).polls;
        for p in polls.iter_mut() {
            p.revents = 0;
        }
        let mut timeout = -1;
        if let (Some(at), false) = (deadline, acked) {
            let left = at - rawsys::now_ms();
            if left <= 0 {
                // The grace is over: the status is published while a background process writes on.
                ack(c);
                acked = true;
            } else {
                timeout = left;
            }
        }
        if rawsys::poll(polls.as_mut_ptr(), nstreams + 1, timeout) < 0 {
            continue;
        }
        if polls[nstreams].fd >= 0 && polls[nstreams].revents != 0 {
            // Every writer of `done` is gone: the wrapper's command has ended.
            polls[nstreams].fd = -1;
            deadline = Some(rawsys::now_ms() + DRAIN_GRACE_MS);
        }
        let mut i = 0;
        while i < nstreams {
            let p = &mut (*c).polls[i];
            if p.fd < 0 || p.revents == 0 {
                i += 1;
                continue;
            }
            let [read, log] = (*c).streams[i];
            let buffer = &mut (*c).buffer;
            let n = rawsys::read(read, buffer.as_mut_ptr(), buffer.len());
            if n > 0 {
                let n = n as usize;
                (*c).dropped_len[i] = 0;
                if !append(c, log, n) {
                    // Kept (at most what fits after the notice) in case the stream ends here.
                    let room = ((*c).limit as usize).saturating_sub((*c).notice_len);
                    let keep = if n < room { n } else { room };
                    std::ptr::copy_nonoverlapping(
                        (*c).buffer.as_ptr().add(n - keep),
                        (*c).dropped[i].as_mut_ptr(),
                        keep,
                    );
                    (*c).dropped_len[i] = keep;
                }
            } else if n == -(libc::EAGAIN as isize) || n == -(libc::EINTR as isize) {
            } else {
                // End of file: every writer has closed it. The log holds just the notice if the
                // last read was dropped: its end goes after it.
                write_all(log, (*c).dropped[i].as_ptr(), (*c).dropped_len[i]);
                (*c).polls[i].fd = -1;
                open_streams -= 1;
            }
            i += 1;
        }
    }
    if !acked {
        ack(c);
    }
    rawsys::exit(0)
}

unsafe fn write_all(fd: RawFd, mut data: *const u8, mut len: usize) {
    while len > 0 {
        let n = rawsys::write(fd, data, len);
        if n > 0 {
            data = data.add(n as usize);
            len -= n as usize;
        } else if n == -(libc::EINTR as isize) {
            continue;
        } else {
            return;
        }
    }
}

/// Appends the first `n` bytes of the buffer to `log`, or empties `log` to the notice when they
/// would take it past the limit. Returns whether they were written (else the log holds just the
/// notice).
unsafe fn append(c: *mut Ctx, log: RawFd, n: usize) -> bool {
    let size = rawsys::lseek(log, 0, libc::SEEK_END).max(0) as u64;
    let after = size + n as u64;
    let (limit, notice_len) = ((*c).limit, (*c).notice_len);
    if after <= limit {
        write_all(log, (*c).buffer.as_ptr(), n);
        return true;
    }
    // A log holding just the notice is left alone (the chunk is dropped), so a command that goes
    // on writing past the cap adds no clear per read.
    if size != notice_len as u64 && after > notice_len as u64 {
        let marks = rawsys::open(
            (*c).clears.as_ptr(),
            libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC,
            0o600,
        ) as RawFd;
        if marks >= 0 {
            write_all(marks, b"x".as_ptr(), 1);
        }
        rawsys::ftruncate(log, 0);
        write_all(log, (*c).notice.as_ptr(), notice_len);
        if marks >= 0 {
            write_all(marks, b"x".as_ptr(), 1);
            rawsys::close(marks);
        }
    }
    false
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
    fn a_last_read_past_the_cap_still_ends_the_log() {
        // The output's last read (64 KiB blocks from `dd`, the last one 40,000 bytes with `done`)
        // passes the cap and is dropped: once the stream ends, its end follows the notice.
        let tmp = tempfile::tempdir().unwrap();
        let job = run(
            tmp.path(),
            "(head -c 20028475 /dev/zero; echo done) | dd bs=65536 iflag=fullblock 2>/dev/null",
            true,
            100_000,
        );
        let log = std::fs::read(job.join("output.log")).unwrap();
        let head = format!("{}\n", notice(100_000));
        assert!(log.starts_with(head.as_bytes()) && log.ends_with(b"\0done\n"));
        assert!(log.len() <= 100_000, "{}", log.len());
    }

    #[test]
    fn streams_are_capped_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let job = run(tmp.path(), "printf '%200s' x; echo small >&2", false, 100);
        // The one read passed the cap: the notice, then its end as far as fits.
        let head = format!("{}\n", notice(100));
        let tail = format!("{:>width$}", "x", width = 100 - head.len());
        assert_eq!(
            std::fs::read(job.join("stdout.log")).unwrap(),
            format!("{head}{tail}").as_bytes()
        );
        assert_eq!(std::fs::read(job.join("stderr.log")).unwrap(), b"small\n");
    }
}
