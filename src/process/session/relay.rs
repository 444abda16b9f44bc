//! Sessions that outlive the process that started them: a small relay process holds the
//! terminal, and any process of the same user finds the session again by its directory.
//!
//! A relayed session is one owner-only directory holding `sock` (the relay's Unix socket, a
//! `SOCK_SEQPACKET` listener) and `status.json` (`{"pid": <program pid>, "exit_code": null | N}`,
//! as a background job publishes it). [`launch`] starts the relay: the Python interpreter that
//! runs the caller, loading this extension module by its path (`python -I -S -c BOOT core dir`,
//! about 15 ms; the wheel ships no other binary), in its own session, reading the
//! [`SessionSpec`] on its standard input. The relay ([`serve`]) opens the terminal, starts the
//! program on it as [`super::Session::start`] does, and then only holds the master side and
//! reaps the program: each process that connects ([`connect`]) gets a duplicate of the master
//! side (`SCM_RIGHTS`) with the program's PID, start time and the caller's note, and reads and
//! writes the terminal itself, so keys and output take the same path as an in-process session.
//! Output printed while no process reads waits in the terminal's buffer (the program blocks
//! once it is full), so nothing printed after a reader died is lost; what the dead reader had
//! read but not shown is.
//!
//! The relay publishes the exit code in `status.json` and sends `exit N` to every connected
//! process, then exits. It ends the program (its group `SIGKILL`ed, descendants that left it
//! too) when its directory's `sock` is removed (the run that started it ended) or when no process
//! has been connected for [`ORPHAN_GRACE`].

use std::fs;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::process::outcome::{os_reason, shell_exit_code};
use crate::process::sandbox::SandboxSpec;

use super::{end_program, spawn, Ended, Session, SessionSpec};

/// How long a relay keeps its program with no process connected before it ends it: a worker
/// restarted by a durable engine connects again well within it.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(15 * 60);

/// How often the relay checks that its directory is still there and someone is connected.
const TICK: Duration = Duration::from_millis(250);

/// The relay's Python: loads the extension module at `argv[1]` (without the package, whose
/// import is slow) and serves the directory `argv[2]`.
const BOOT: &str = "import importlib.util as u, sys
s = u.spec_from_file_location('pydantic_ai_harness_rs._core', sys.argv[1])
m = u.module_from_spec(s)
s.loader.exec_module(m)
m._session_relay(sys.argv[2])
";

/// What a connecting process learns with the terminal's master side.
#[derive(Debug, Clone)]
pub struct Hello {
    /// The program's PID (its process group and session ID).
    pub pid: i32,
    /// When the program started, in seconds since the Unix epoch.
    pub started: f64,
    /// The terminal's width and height.
    pub cols: u16,
    /// See `cols`.
    pub rows: u16,
    /// The text the starter gave [`launch`].
    pub note: String,
}

fn bytes_json(b: &[u8]) -> Value {
    Value::Array(b.iter().map(|&x| Value::from(x)).collect())
}

fn json_bytes(v: &Value) -> Option<Vec<u8>> {
    v.as_array()?
        .iter()
        .map(|x| x.as_u64().and_then(|n| u8::try_from(n).ok()))
        .collect()
}

fn spec_json(spec: &SessionSpec, note: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let sandbox = spec.sandbox.as_ref().map(|s| {
        json!({
            "restrict_fs": s.restrict_fs,
            "network": s.network,
            "writable": s.writable.iter().map(|p| bytes_json(p.as_os_str().as_bytes())).collect::<Vec<_>>(),
        })
    });
    json!({
        "command": bytes_json(&spec.command),
        "cwd": bytes_json(spec.cwd.as_os_str().as_bytes()),
        "env": spec.env.iter().map(|(k, v)| [bytes_json(k), bytes_json(v)]).collect::<Vec<_>>(),
        "cols": spec.cols,
        "rows": spec.rows,
        "sandbox": sandbox,
        "note": note,
    })
    .to_string()
}

fn path_of(b: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(b))
}

fn spec_from_json(text: &str) -> Option<(SessionSpec, String)> {
    let v: Value = serde_json::from_str(text).ok()?;
    let env = v["env"]
        .as_array()?
        .iter()
        .map(|pair| Some((json_bytes(&pair[0])?, json_bytes(&pair[1])?)))
        .collect::<Option<Vec<_>>>()?;
    let sandbox = match &v["sandbox"] {
        Value::Null => None,
        s => Some(SandboxSpec {
            restrict_fs: s["restrict_fs"].as_bool()?,
            network: s["network"].as_bool()?,
            writable: s["writable"]
                .as_array()?
                .iter()
                .map(|p| json_bytes(p).map(path_of))
                .collect::<Option<Vec<_>>>()?,
        }),
    };
    let spec = SessionSpec {
        command: json_bytes(&v["command"])?,
        cwd: path_of(json_bytes(&v["cwd"])?),
        env,
        cols: u16::try_from(v["cols"].as_u64()?).ok()?,
        rows: u16::try_from(v["rows"].as_u64()?).ok()?,
        sandbox,
        head_bytes: 0,
        tail_bytes: 0,
        spill: None,
    };
    Some((spec, v["note"].as_str()?.to_string()))
}

fn io_err(e: &std::io::Error, what: &str) -> Error {
    Error::io(e, format!("{what}: {}", os_reason(e)))
}

/// Starts a relay for `spec` in `dir` (created owner-only, with missing parents) with
/// `python` running the extension module at `core`, and waits until the program runs on its
/// terminal. `note` is handed to every process that connects. Errors: the directory, the
/// relay's start, or the program's (the terminal, the sandbox, the spawn), worded without host
/// paths.
pub fn launch(
    dir: &Path,
    python: &Path,
    core: &Path,
    spec: &SessionSpec,
    note: &str,
) -> Result<()> {
    fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir)
        .map_err(|e| io_err(&e, "Unable to create the session's directory"))?;
    let mut cmd = Command::new(python);
    cmd.args(["-I", "-S", "-c", BOOT])
        .arg(core)
        .arg(dir)
        // This process's environment (a `LD_LIBRARY_PATH` the interpreter needs); `-I` ignores
        // `PYTHON*`, and the program gets exactly `spec.env`.
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| io_err(&e, "Unable to start the session's relay"))?;
    let written = child
        .stdin
        .take()
        .map(|mut stdin| stdin.write_all(spec_json(spec, note).as_bytes()));
    let mut answer = String::new();
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut answer);
    }
    // The relay outlives this process; while this one lives it reaps the relay.
    let _ = std::thread::Builder::new()
        .name("harness-relay-reaper".into())
        .spawn(move || child.wait());
    if let Some(message) = answer.strip_prefix("error ") {
        return Err(Error::new(
            ErrorKind::Io(std::io::ErrorKind::Other),
            message.trim_end().to_string(),
        ));
    }
    if answer != "ok\n" {
        let e = match written {
            Some(Err(e)) => e,
            _ => std::io::Error::other("no answer"),
        };
        return Err(Error::io(
            &e,
            "Unable to start the session's relay: it ended at once.",
        ));
    }
    Ok(())
}

/// `dir/sock` reached through `dir`'s descriptor: `(descriptor, path)`, so a deep directory
/// still fits a socket address.
fn socket_path(dir: &Path) -> std::io::Result<(fs::File, String)> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)?;
    let path = format!("/proc/self/fd/{}/sock", file.as_raw_fd());
    Ok((file, path))
}

fn unix_addr(path: &str) -> std::io::Result<nix::sys::socket::UnixAddr> {
    nix::sys::socket::UnixAddr::new(path).map_err(std::io::Error::from)
}

fn seqpacket() -> std::io::Result<OwnedFd> {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
    socket(
        AddressFamily::Unix,
        SockType::SeqPacket,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(std::io::Error::from)
}

/// Connects to the relay of the session in `dir`: the terminal's master side, the connection
/// (it reads `exit N` once the program has ended; closing it tells the relay this process is
/// gone) and what the relay tells. `None` when no relay answers there (no such directory, or
/// the program has ended and its relay with it).
pub fn connect(dir: &Path) -> Option<(OwnedFd, OwnedFd, Hello)> {
    use nix::sys::socket::{connect as connect_to, recvmsg, ControlMessageOwned, MsgFlags};
    let (_dir, path) = socket_path(dir).ok()?;
    let sock = seqpacket().ok()?;
    connect_to(sock.as_raw_fd(), &unix_addr(&path).ok()?).ok()?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut space = nix::cmsg_space!(RawFd);
    let (n, fd) = {
        let mut iov = [std::io::IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .ok()?;
        let fd = msg.cmsgs().ok()?.find_map(|c| match c {
            ControlMessageOwned::ScmRights(fds) => fds.first().copied(),
            _ => None,
        });
        (msg.bytes, fd)
    };
    // SAFETY: the descriptor arrived with the message and is ours alone.
    let master = unsafe { OwnedFd::from_raw_fd(fd?) };
    let v: Value = serde_json::from_slice(&buf[..n]).ok()?;
    let hello = Hello {
        pid: i32::try_from(v["pid"].as_i64()?).ok()?,
        started: v["started"].as_f64()?,
        cols: u16::try_from(v["cols"].as_u64()?).ok()?,
        rows: u16::try_from(v["rows"].as_u64()?).ok()?,
        note: v["note"].as_str()?.to_string(),
    };
    Some((master, sock, hello))
}

/// The exit code the relay in `dir` published, if any.
pub fn published_exit(dir: &Path) -> Option<i32> {
    let text = crate::process::job::status_text(dir)?;
    crate::process::job::exit_code(&text).and_then(|c| i32::try_from(c).ok())
}

/// Whether the session in `dir` was lost: its relay ended without publishing the program's exit
/// (killed), so no process can reach it again. Ends the program if it still runs (it still
/// leads its own session, so a reused PID is not taken for it). `false` while a relay answers.
pub fn lost(dir: &Path) -> bool {
    if connect(dir).is_some() {
        return false;
    }
    let Some(text) = crate::process::job::status_text(dir) else {
        return false;
    };
    if crate::process::job::exit_code(&text).is_some() {
        return false;
    }
    let pid = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v["pid"].as_i64())
        .and_then(|p| i32::try_from(p).ok());
    if let Some(pid) = pid.filter(|&p| p > 1) {
        // SAFETY: getsid only reads.
        if unsafe { libc::getsid(pid) } == pid {
            end_program(pid, Duration::ZERO);
        }
    }
    true
}

/// The session in `dir`, driven from this process: `(session, note)`; `None` when no relay
/// answers there. `head_bytes` and `tail_bytes` bound the transcript between two reads.
/// Dropping the session leaves the program running. Errors: a thread that cannot start.
pub fn attach(
    dir: &Path,
    head_bytes: usize,
    tail_bytes: usize,
) -> Result<Option<(Session, String)>> {
    let Some((master, link, hello)) = connect(dir) else {
        return Ok(None);
    };
    let ago = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|now| (now.as_secs_f64() - hello.started).max(0.0))
        .unwrap_or(0.0);
    let started = Instant::now()
        .checked_sub(Duration::from_secs_f64(ago))
        .unwrap_or_else(Instant::now);
    let link = std::sync::Arc::new(link);
    let watched = link.clone();
    let dir = dir.to_path_buf();
    let exit = Box::new(move || {
        let mut buf = [0u8; 64];
        // SAFETY: reading into our own buffer from our own descriptor.
        let n = loop {
            let n =
                unsafe { libc::recv(watched.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break n;
            }
        };
        let told = (n > 0)
            .then(|| std::str::from_utf8(&buf[..n as usize]).ok())
            .flatten()
            .and_then(|s| s.strip_prefix("exit "))
            .and_then(|s| s.trim().parse().ok());
        // No `exit N` and none published: the relay died (killed) without reaping the program.
        match told.or_else(|| published_exit(&dir)) {
            Some(code) => Ended::Exited(code),
            None => Ended::RelayLost,
        }
    });
    let size = (hello.cols, hello.rows, head_bytes, tail_bytes);
    let mut session = Session::adopt(master, hello.pid, started, size, None, exit, true)?;
    session.link = Some(link);
    Ok(Some((session, hello.note)))
}

fn publish(dir: &Path, pid: i32, exit_code: Option<i32>) {
    let code = exit_code.map_or("null".to_string(), |c| c.to_string());
    let tmp = dir.join("status.tmp");
    let written = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(format!("{{\"pid\": {pid}, \"exit_code\": {code}}}").as_bytes())
        });
    if written.is_ok() {
        let _ = fs::rename(tmp, dir.join("status.json"));
    }
}

/// Sends `hello` and the master side to a process that connected.
fn greet(client: RawFd, master: RawFd, hello: &[u8]) -> bool {
    use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
    let iov = [std::io::IoSlice::new(hello)];
    let fds = [master];
    sendmsg::<()>(
        client,
        &iov,
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::MSG_NOSIGNAL,
        None,
    )
    .is_ok()
}

/// Whether the peer of `client` runs as this process's user.
fn same_user(client: &OwnedFd) -> bool {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    // SAFETY: getuid only reads.
    let uid = unsafe { libc::getuid() };
    getsockopt(client, PeerCredentials).is_ok_and(|c| c.uid() == uid)
}

/// The relay's body (`_core._session_relay(dir)`): reads the spec on standard input, starts the
/// program, answers `ok` (or `error <message>`) on standard output and closes it, then serves
/// `dir` until the program ends. Returns once it has published the exit code.
pub fn serve(dir: &Path) -> Result<()> {
    let mut input = String::new();
    let _ = std::io::stdin().read_to_string(&mut input);
    let started = match start_relay(dir, &input) {
        Ok(s) => s,
        Err(e) => {
            let mut out = std::io::stdout();
            let _ = out.write_all(format!("error {}\n", e.message.replace('\n', " ")).as_bytes());
            let _ = out.flush();
            return Ok(());
        }
    };
    let (listener, master, child, hello, _dirfd) = started;
    let pid = hello.pid;
    publish(dir, pid, None);
    {
        let mut out = std::io::stdout();
        let _ = out.write_all(b"ok\n");
        let _ = out.flush();
    }
    // Standard streams to /dev/null: the starter reads stdout to its end.
    if let Ok(null) = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..3 {
            // SAFETY: replacing our own standard descriptors.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
    let (exit_read, exit_write) = nix::unistd::pipe().map_err(|e| {
        let e = std::io::Error::from(e);
        io_err(&e, "Unable to start the session's relay")
    })?;
    let mut child = child;
    std::thread::spawn(move || {
        let code = crate::process::block_on(child.wait())
            .map(shell_exit_code)
            .unwrap_or(-1);
        let mut w = fs::File::from(exit_write);
        let _ = w.write_all(&code.to_le_bytes());
    });
    let greeting = json!({
        "pid": hello.pid,
        "started": hello.started,
        "cols": hello.cols,
        "rows": hello.rows,
        "note": hello.note,
    })
    .to_string();
    let mut clients: Vec<OwnedFd> = Vec::new();
    let mut alone_since = Some(Instant::now());
    let mut ending = false;
    let sock_path = dir.join("sock");
    let code = loop {
        let mut pfds = vec![
            libc::pollfd {
                fd: exit_read.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        pfds.extend(clients.iter().map(|c| libc::pollfd {
            fd: c.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }));
        // SAFETY: poll over pollfds we own.
        unsafe {
            libc::poll(
                pfds.as_mut_ptr(),
                pfds.len() as libc::nfds_t,
                TICK.as_millis() as libc::c_int,
            )
        };
        if pfds[0].revents != 0 {
            let mut buf = [0u8; 4];
            let mut r = fs::File::from(exit_read.try_clone().map_err(|e| io_err(&e, "relay"))?);
            break if r.read_exact(&mut buf).is_ok() {
                i32::from_le_bytes(buf)
            } else {
                -1
            };
        }
        if pfds[1].revents & libc::POLLIN != 0 {
            // SAFETY: accept on our listener; the new descriptor is owned at once.
            let fd = unsafe {
                libc::accept4(
                    listener.as_raw_fd(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_CLOEXEC,
                )
            };
            if fd >= 0 {
                // SAFETY: a fresh descriptor from accept.
                let client = unsafe { OwnedFd::from_raw_fd(fd) };
                if same_user(&client)
                    && greet(client.as_raw_fd(), master.as_raw_fd(), greeting.as_bytes())
                {
                    clients.push(client);
                }
            }
        }
        let mut gone = Vec::new();
        for (i, p) in pfds[2..].iter().enumerate() {
            if p.revents != 0 {
                let mut buf = [0u8; 64];
                // SAFETY: reading into our own buffer.
                let n = unsafe {
                    libc::recv(p.fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT)
                };
                if n <= 0 {
                    gone.push(i);
                }
            }
        }
        for i in gone.into_iter().rev() {
            clients.remove(i);
        }
        if clients.is_empty() {
            alone_since.get_or_insert_with(Instant::now);
        } else {
            alone_since = None;
        }
        let orphaned = alone_since.is_some_and(|t| t.elapsed() >= ORPHAN_GRACE);
        if !ending && (orphaned || fs::symlink_metadata(&sock_path).is_err()) {
            ending = true;
            std::thread::spawn(move || end_program(pid, Duration::ZERO));
        }
    };
    publish(dir, pid, Some(code));
    let message = format!("exit {code}");
    for c in &clients {
        // SAFETY: a send from our own buffer on our own descriptor.
        unsafe {
            libc::send(
                c.as_raw_fd(),
                message.as_ptr().cast(),
                message.len(),
                libc::MSG_NOSIGNAL,
            )
        };
    }
    let _ = fs::remove_file(&sock_path);
    drop(master);
    Ok(())
}

type Started = (OwnedFd, OwnedFd, tokio::process::Child, Hello, fs::File);

fn start_relay(dir: &Path, input: &str) -> Result<Started> {
    let (spec, note) = spec_from_json(input).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidArgument,
            "The session's relay got an unreadable spec.",
        )
    })?;
    let (dirfd, path) =
        socket_path(dir).map_err(|e| io_err(&e, "Unable to open the session's directory"))?;
    let _ = fs::remove_file(dir.join("sock"));
    let listener = seqpacket().map_err(|e| io_err(&e, "Unable to open the session's socket"))?;
    nix::sys::socket::bind(
        listener.as_raw_fd(),
        &unix_addr(&path).map_err(|e| io_err(&e, "Unable to open the session's socket"))?,
    )
    .and_then(|_| nix::sys::socket::listen(&listener, nix::sys::socket::Backlog::new(16).unwrap()))
    .map_err(|e| {
        io_err(
            &std::io::Error::from(e),
            "Unable to open the session's socket",
        )
    })?;
    let (master, child) = spawn(&spec)?;
    let pid = child.id().map(|p| p as i32).unwrap_or(0);
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let hello = Hello {
        pid,
        started,
        cols: spec.cols,
        rows: spec.rows,
        note,
    };
    Ok((listener, master, child, hello, dirfd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_crosses_to_the_relay_unchanged() {
        let spec = SessionSpec {
            command: b"printf '\xff'; cat".to_vec(),
            cwd: path_of(b"/tmp/\xfe dir".to_vec()),
            env: vec![
                (b"A".to_vec(), b"\x00\xff=".to_vec()),
                (b"B".to_vec(), Vec::new()),
            ],
            cols: 132,
            rows: 43,
            sandbox: Some(SandboxSpec {
                restrict_fs: true,
                writable: vec![PathBuf::from("/w"), path_of(b"/\xfa".to_vec())],
                network: false,
            }),
            head_bytes: 7,
            tail_bytes: 9,
            spill: None,
        };
        let (back, note) = spec_from_json(&spec_json(&spec, "n \u{e9}")).unwrap();
        assert_eq!(note, "n \u{e9}");
        assert_eq!(
            (back.command, back.cwd, back.env),
            (spec.command, spec.cwd, spec.env)
        );
        assert_eq!((back.cols, back.rows), (132, 43));
        let (a, b) = (back.sandbox.unwrap(), spec.sandbox.unwrap());
        assert_eq!(
            (a.restrict_fs, a.writable, a.network),
            (b.restrict_fs, b.writable, b.network)
        );
        assert!(spec_from_json("{}").is_none());
    }
}
