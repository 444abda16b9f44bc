//! Whether a signalled process is sure to die without running any more of its own code.
//!
//! A timed-out group is frozen (`SIGSTOP`) before it is walked, so the walk finds every member and
//! none can fork meanwhile. If each member then dies of the group's `SIGTERM` in the kernel (the
//! default action, not caught, ignored, blocked or traced), nobody can have forked a process the walk
//! missed, and the group is gone once the members' pidfds report their exits: no need to wait for
//! their zombies to be reaped (by init, which may take seconds) or to search `/proc` for stragglers.

/// Whether `pid`, with `SIGTERM` pending, dies of it in the kernel: one thread, not traced,
/// `SIGTERM` neither blocked, ignored nor caught, and no caught signal pending that the kernel
/// delivers first (which would run a handler); or it has already exited. `false` whenever that cannot be read (the caller then
/// checks the group).
///
/// Read after the `SIGTERM` is sent: a process running then has had its fate decided by the
/// kernel at the send (a fatal signal ends the whole process at once); a stopped one cannot change
/// its dispositions before it is continued.
pub fn dies_of_sigterm(pid: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        match read_status(pid) {
            Ok(status) => status_dies_of(&status, libc::SIGTERM),
            // Reaped already: it exited, and a process cannot fork once its group is frozen.
            Err(e) => {
                e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH)
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        false
    }
}

/// `/proc/<pid>/status` (about 1.5 KiB) read with one `read` where `read_to_string` takes seven.
#[cfg(target_os = "linux")]
fn read_status(pid: i32) -> std::io::Result<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(format!("/proc/{pid}/status"))?;
    let mut buf = Vec::with_capacity(4096);
    file.read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Whether a `/proc/<pid>/status` text shows a process that `signal` ends in the kernel.
fn status_dies_of(status: &str, signal: i32) -> bool {
    let mut masks = [None::<u64>; 5];
    let (mut threads, mut tracer, mut dead) = (None, None, false);
    const MASKS: [&str; 5] = ["SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"];
    for line in status.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            "State" => dead = value.starts_with('Z') || value.starts_with('X'),
            "Threads" => threads = value.parse::<u32>().ok(),
            "TracerPid" => tracer = value.parse::<i32>().ok(),
            _ => {
                if let Some(i) = MASKS.iter().position(|k| *k == key) {
                    masks[i] = u64::from_str_radix(value, 16).ok();
                }
            }
        }
    }
    if dead {
        return true;
    }
    let [Some(pending), Some(shared), Some(blocked), Some(ignored), Some(caught)] = masks else {
        return false;
    };
    let bit = 1u64 << (signal - 1);
    // The kernel takes the thread's own pending signals first, then the process's (where a
    // group's signal waits) by number, synchronous ones (faults) ahead.
    let ahead = (bit - 1) | SYNCHRONOUS;
    threads == Some(1)
        && tracer == Some(0)
        && (blocked | ignored | caught) & bit == 0
        && (pending | shared & ahead) & caught == 0
}

/// The signals the kernel delivers before any other: `SIGILL`, `SIGTRAP`, `SIGBUS`, `SIGFPE`,
/// `SIGSEGV`, `SIGSYS` (its `SYNCHRONOUS_MASK`).
const SYNCHRONOUS: u64 = (1 << 3) | (1 << 4) | (1 << 6) | (1 << 7) | (1 << 10) | (1 << 30);

#[cfg(test)]
mod tests {
    use super::*;

    fn status(blocked: &str, ignored: &str, caught: &str, pending: &str, threads: u32) -> String {
        format!(
            "Name:\tsleep\nState:\tT (stopped)\nTracerPid:\t0\nThreads:\t{threads}\n\
             SigQ:\t1/100\nSigPnd:\t{pending}\nShdPnd:\t0000000000004000\nSigBlk:\t{blocked}\n\
             SigIgn:\t{ignored}\nSigCgt:\t{caught}\n"
        )
    }

    #[test]
    fn only_a_default_unblocked_sigterm_in_one_untraced_thread_is_sure() {
        let zero = "0000000000000000";
        let term = "0000000000004000";
        let usr1 = "0000000000000200";
        assert!(status_dies_of(&status(zero, zero, zero, zero, 1), 15));
        // A shell ignoring SIGINT/SIGQUIT and catching SIGCHLD is still sure to die.
        assert!(status_dies_of(
            &status(zero, "0000000000000006", "0000000000010000", zero, 1),
            15
        ));
        assert!(!status_dies_of(&status(term, zero, zero, zero, 1), 15));
        assert!(!status_dies_of(&status(zero, term, zero, zero, 1), 15));
        assert!(!status_dies_of(&status(zero, zero, term, zero, 1), 15));
        assert!(!status_dies_of(&status(zero, zero, usr1, usr1, 1), 15));
        // A caught SIGCHLD waiting beside the group's SIGTERM comes after it; SIGUSR1 before.
        let chld = "0000000000010000";
        let shared = |s: String, bits: &str| {
            s.replace("ShdPnd:\t0000000000004000", &format!("ShdPnd:\t{bits}"))
        };
        assert!(status_dies_of(
            &shared(status(zero, zero, chld, zero, 1), "0000000000014000"),
            15
        ));
        assert!(!status_dies_of(
            &shared(status(zero, zero, usr1, zero, 1), "0000000000004200"),
            15
        ));
        assert!(!status_dies_of(&status(zero, zero, zero, zero, 2), 15));
        let traced = status(zero, zero, zero, zero, 1).replace("TracerPid:\t0", "TracerPid:\t7");
        assert!(!status_dies_of(&traced, 15));
        assert!(!status_dies_of("Name:\tsleep\n", 15));
    }

    #[test]
    fn reads_live_and_gone_processes() {
        use std::process::{Command, Stdio};
        let spawn = |script: &str| {
            Command::new("/bin/sh")
                .args(["-c", script])
                .stdin(Stdio::null())
                .spawn()
                .unwrap()
        };
        let comm =
            |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let mut plain = spawn("exec sleep 100");
        let mut deaf = spawn("trap '' TERM; exec sleep 100");
        for child in [&plain, &deaf] {
            while comm(child.id()).trim() != "sleep" {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        assert!(dies_of_sigterm(plain.id() as i32));
        assert!(!dies_of_sigterm(deaf.id() as i32));
        for child in [&mut plain, &mut deaf] {
            child.kill().unwrap();
            child.wait().unwrap();
        }
        assert!(dies_of_sigterm(plain.id() as i32));
    }
}
