//! Building the `/bin/sh` command every shell command runs as: its own session, stdin at EOF,
//! default signal dispositions, an exact environment and an optional per-file size limit.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;
use std::process::Stdio;

use tokio::process::Command;

/// The shell that runs every command, as `subprocess` does for `shell=True`.
pub const SHELL: &str = "/bin/sh";

/// Block size the per-file limit is rounded up to, as `ulimit -f` in POSIX `sh` counts it.
pub const FILE_LIMIT_BLOCK: u64 = 512;

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

/// A `/bin/sh` command with `args` (`-c script ...`), started in `cwd` with exactly `env`.
///
/// The child calls `setsid` (its own session and process group, no controlling terminal),
/// resets `SIGPIPE`, `SIGXFSZ` and `SIGXFZ` to their defaults (Python ignores them, and
/// `subprocess` restores them too), and sets `RLIMIT_FSIZE` to `file_limit` bytes when given.
/// stdin is `/dev/null`; stdout and stderr are as given.
pub fn shell_command(
    args: &[Vec<u8>],
    cwd: &Path,
    env: &[(Vec<u8>, Vec<u8>)],
    file_limit: Option<u64>,
    stdout: Stdio,
    stderr: Stdio,
) -> Command {
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
    // SAFETY: only async-signal-safe calls (setsid, signal, setrlimit) run between fork and exec.
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
            Ok(())
        });
    }
    cmd
}
