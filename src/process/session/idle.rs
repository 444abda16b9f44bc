//! Telling when a session's program waits for input: every live process of the terminal's
//! foreground group is asleep, and one sleeps in a terminal read or a poll for input.

use std::os::fd::RawFd;

use super::pty::foreground_group;

/// Kernel wait channels of a process blocked reading a terminal or polling for input.
const INPUT_WAITS: &[&str] = &[
    "wait_woken",
    "n_tty_read",
    "poll_schedule_timeout",
    "do_select",
    "ep_poll",
    "do_sys_poll",
];

/// Whether the program on the terminal behind `master` waits for input.
pub fn waits_for_input(master: RawFd) -> bool {
    let Some(pgrp) = foreground_group(master) else {
        return false;
    };
    let Some(members) = crate::process::group::members(pgrp) else {
        return false;
    };
    let mut reading = false;
    for (pid, fields) in members {
        match fields.split_whitespace().next().unwrap_or("") {
            "Z" | "X" => continue,
            "S" => {}
            _ => return false,
        }
        let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
        if INPUT_WAITS.iter().any(|w| wchan.starts_with(w)) {
            reading = true;
        }
    }
    reading
}
