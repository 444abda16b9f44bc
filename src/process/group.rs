//! Signalling a process group: the unit every command runs as (its own session, `setsid`).

use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Sends `signal` (or only checks existence with `None`) to process group `pgid`.
///
/// Returns `Ok(false)` when no process is left in the group (`ESRCH`), `Ok(true)` when the
/// signal was delivered. Errors: `EPERM` and the like, as the OS reports them.
pub fn signal_group(pgid: i32, signal: Option<Signal>) -> Result<bool, Errno> {
    if pgid <= 1 {
        return Err(Errno::EINVAL);
    }
    match killpg(Pid::from_raw(pgid), signal) {
        Ok(()) => Ok(true),
        Err(Errno::ESRCH) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether any process of group `pgid` is still alive (zombies excluded on Linux).
///
/// `kill(-pgid, 0)` also succeeds for a group whose members are all zombies waiting for a
/// reaper outside our control; on Linux those are told apart by scanning `/proc`.
pub fn group_alive(pgid: i32) -> bool {
    match signal_group(pgid, None) {
        Ok(false) | Err(_) => false,
        Ok(true) => live_member(pgid).unwrap_or(true),
    }
}

#[cfg(target_os = "linux")]
fn live_member(pgid: i32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        // One syscall rules out the other groups' processes; only members' `stat` is read.
        // SAFETY: getpgid on any PID only reads.
        if unsafe { libc::getpgid(pid) } != pgid {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("");
        let _ppid = fields.next();
        let pgrp = fields.next().and_then(|s| s.parse::<i32>().ok());
        if pgrp == Some(pgid) && state != "Z" && state != "X" {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(not(target_os = "linux"))]
fn live_member(_pgid: i32) -> Option<bool> {
    None
}

/// Waits until group `pgid` has no live process or `grace` has passed; returns whether it emptied.
///
/// Polls with a backoff from 1 ms to 20 ms: a group has no file descriptor to wait on.
pub async fn wait_group_gone(pgid: i32, grace: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + grace;
    let mut interval = Duration::from_millis(1);
    loop {
        if !group_alive(pgid) {
            return true;
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return false;
        }
        tokio::time::sleep(interval.min(deadline - now)).await;
        interval = (interval * 2).min(Duration::from_millis(20));
    }
}

/// Stops group `pgid`: `SIGTERM`, up to `grace` for it to exit, then `SIGKILL`.
///
/// Returns `Ok(false)` when the group was already gone. Errors: a refused signal (`EPERM`).
pub async fn stop_group(pgid: i32, grace: Duration) -> Result<bool, Errno> {
    if !signal_group(pgid, Some(Signal::SIGTERM))? {
        return Ok(false);
    }
    if !wait_group_gone(pgid, grace).await {
        signal_group(pgid, Some(Signal::SIGKILL))?;
    }
    Ok(true)
}
