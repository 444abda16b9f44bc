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
    Some(members(pgid)?.any(|(_, fields)| live(&fields)))
}

/// The processes of group `pgid` as `/proc` lists them now: each PID with the fields of its
/// `/proc/<pid>/stat` after `comm` (`state ppid pgrp session ...`, whitespace-separated; `comm`
/// may hold spaces and parentheses, so they start after its last `)`). One `getpgid` rules out
/// each other process; only members' `stat` is read. `None` without `/proc`.
#[cfg(target_os = "linux")]
pub(crate) fn members(pgid: i32) -> Option<impl Iterator<Item = (i32, String)>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    Some(entries.flatten().filter_map(move |entry| {
        let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
        member_stat(pid, pgid).map(|fields| (pid, fields))
    }))
}

/// The fields of `/proc/<pid>/stat` after `comm` (see [`members`]) when `pid` is in group
/// `pgid`; `None` otherwise, or when it is gone.
#[cfg(target_os = "linux")]
fn member_stat(pid: i32, pgid: i32) -> Option<String> {
    // SAFETY: getpgid on any PID only reads.
    if unsafe { libc::getpgid(pid) } != pgid {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields = &stat[stat.rfind(')')? + 1..];
    // The group as `stat` says it (the PID may have been reused since `getpgid`).
    (fields.split_whitespace().nth(2)?.parse::<i32>().ok()? == pgid).then(|| fields.to_string())
}

/// Whether a process whose `stat` fields (after `comm`) are `fields` is alive (not a zombie).
#[cfg(target_os = "linux")]
fn live(fields: &str) -> bool {
    !matches!(fields.split_whitespace().next(), Some("Z" | "X") | None)
}

/// The CPU time the live processes of group `pgid` have used, in nanoseconds: each thread's
/// time on a CPU (`/proc/<pid>/task/<tid>/schedstat`, nanosecond-exact) plus the children each
/// process reaped (`cutime` and `cstime` of `/proc/<pid>/stat`, in clock ticks). A group that ran
/// any instruction between two readings reads higher the second time, so a group that reads the
/// same cannot have changed a file in between (a write is a system call, made on a CPU).
/// `None` where it cannot be told (no `/proc`, or a kernel without `schedstat`).
pub fn group_cpu_ns(pgid: i32) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        if pgid <= 1 {
            return None;
        }
        // SAFETY: sysconf only reads.
        let tick_ns = match unsafe { libc::sysconf(libc::_SC_CLK_TCK) } {
            t if t > 0 => 1_000_000_000 / t as u64,
            _ => return None,
        };
        let mut total: u64 = 0;
        for (pid, fields) in members(pgid)? {
            // After `comm`: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
            // cmajflt utime stime cutime cstime.
            let reaped: u64 = fields
                .split_whitespace()
                .skip(13)
                .take(2)
                .filter_map(|s| s.parse::<u64>().ok())
                .sum();
            total = total.wrapping_add(reaped.wrapping_mul(tick_ns));
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for task in tasks.flatten() {
                let path = task.path().join("schedstat");
                match std::fs::read_to_string(&path) {
                    Ok(text) => {
                        let on_cpu = text.split_whitespace().next()?.parse::<u64>().ok()?;
                        total = total.wrapping_add(on_cpu);
                    }
                    Err(e)
                        if e.kind() == std::io::ErrorKind::NotFound && path.parent()?.exists() =>
                    {
                        return None; // no schedstat on this kernel
                    }
                    Err(_) => {} // the thread ended meanwhile
                }
            }
        }
        Some(total)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pgid;
        None
    }
}

/// Whether `pid` is a live (not zombie) member of group `pgid`.
#[cfg(target_os = "linux")]
fn live_in_group(pid: i32, pgid: i32) -> bool {
    member_stat(pid, pgid).is_some_and(|fields| live(&fields))
}

/// The last PID the kernel allocated in this PID namespace (`/proc/sys/kernel/ns_last_pid`),
/// or `None` where it cannot be read.
pub fn last_pid() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        let text = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid").ok()?;
        text.trim().parse().ok()
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// [`group_alive`] for a group whose every process as of [`last_pid`] `since` is known to
/// have exited: a live member can then only be one forked later, and PIDs are handed out in
/// increasing order (until they wrap), so only the PIDs allocated since are checked, one
/// `getpgid` each (none at all when nothing was forked).
///
/// `None` when that cannot tell: the window is unknown, wrapped, or holds more than
/// `max_window` PIDs (then only a search of all of `/proc`, [`group_alive`], can).
pub fn group_alive_after(pgid: i32, since: Option<i32>, max_window: i32) -> Option<bool> {
    if !matches!(signal_group(pgid, None), Ok(true)) {
        return Some(false);
    }
    #[cfg(target_os = "linux")]
    if let (Some(first), Some(last)) = (since, last_pid()) {
        if (0..=max_window).contains(&(last - first)) {
            return Some((first + 1..=last).any(|pid| live_in_group(pid, pgid)));
        }
    }
    let _ = (since, max_window);
    None
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn a_member_forked_after_the_mark_is_found_and_zombies_are_not_members() {
        let since = last_pid();
        assert!(since.is_some(), "ns_last_pid is readable here");
        let mut leader = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = leader.id() as i32;
        // Forked after the mark: found by its PID alone, as by the search of all of `/proc`.
        assert_eq!(group_alive_after(pgid, since, 4096), Some(true));
        assert!(group_alive(pgid));
        // Unknown or too wide a window: no answer without searching all of `/proc`.
        assert_eq!(group_alive_after(pgid, None, 4096), None);
        assert_eq!(group_alive_after(pgid, since.map(|p| p - 10), 5), None);
        // A mark after it: the window holds only later PIDs (none of this group).
        assert_eq!(group_alive_after(pgid, last_pid(), 4096), Some(false));

        let _ = signal_group(pgid, Some(Signal::SIGKILL));
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        // Unreaped, the leader is a zombie: the group exists but has no live member.
        while std::fs::read_to_string(format!("/proc/{pgid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(signal_group(pgid, None), Ok(true));
        assert_eq!(group_alive_after(pgid, since, 4096), Some(false));
        assert!(!group_alive(pgid));
        leader.wait().unwrap();
        assert_eq!(group_alive_after(pgid, None, 4096), Some(false));
    }

    /// A group's CPU time stays put while its processes sleep and moves once one runs: what tells
    /// a job that did nothing between two looks from one that may have written.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_sleeping_groups_cpu_time_stays_put_and_a_running_ones_moves() {
        use std::os::unix::process::CommandExt;
        let mut leader = std::process::Command::new("sh")
            .args([
                "-c",
                "read line; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 5",
            ])
            .stdin(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = leader.id() as i32;
        std::thread::sleep(Duration::from_millis(50)); // started, now waiting for its line
        let Some(first) = group_cpu_ns(pgid) else {
            let _ = leader.kill();
            let _ = leader.wait();
            return; // no `schedstat` here: nothing to tell
        };
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(group_cpu_ns(pgid), Some(first)); // waiting: no instruction run
        use std::io::Write as _;
        leader.stdin.take().unwrap().write_all(b"go\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while group_cpu_ns(pgid) == Some(first) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(group_cpu_ns(pgid).unwrap_or(0) > first);
        assert_eq!(group_cpu_ns(1), None);
        let _ = signal_group(pgid, Some(Signal::SIGKILL));
        leader.wait().unwrap();
    }
}
