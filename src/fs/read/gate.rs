//! Admission for reads that keep a window in memory: at most one per core runs its scan and
//! rendering at once, the others wait (polling their cancel flag). Sixty-four concurrent
//! `read_file` calls of 1 MiB files (one model response) then hold two windows in flight, not
//! forty (the worker-thread pool's size), and still keep both cores busy. Files up to
//! [`UNGATED_BYTES`] never wait: their window is small, and a tiny read is never queued behind
//! a big one.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use crate::cancel::CancelFlag;
use crate::error::{Error, Result};

/// Files up to this size (bytes) are read without waiting for a permit.
pub const UNGATED_BYTES: i64 = 64 * 1024;

struct Gate {
    running: Mutex<usize>,
    freed: Condvar,
    permits: usize,
}

fn gate() -> &'static Gate {
    static GATE: OnceLock<Gate> = OnceLock::new();
    GATE.get_or_init(|| Gate {
        running: Mutex::new(0),
        freed: Condvar::new(),
        permits: std::thread::available_parallelism().map_or(2, |n| n.get().max(2)),
    })
}

/// A running read's place; the next waiting read starts when it is dropped.
#[derive(Debug)]
pub struct Permit(bool);

impl Drop for Permit {
    fn drop(&mut self) {
        if self.0 {
            let g = gate();
            *g.running.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
            g.freed.notify_one();
        }
    }
}

/// Waits for a permit to read `file` (at once when it is small or not a regular file's size).
///
/// Errors: `Cancelled` when `cancel` is set while waiting.
pub fn enter(file: &File, cancel: &CancelFlag) -> Result<Permit> {
    let size = crate::fs::root::path::fstat(file.as_raw_fd()).map_or(0, |st| st.st_size);
    if size <= UNGATED_BYTES {
        return Ok(Permit(false));
    }
    let g = gate();
    let mut running = g.running.lock().unwrap_or_else(|e| e.into_inner());
    while *running >= g.permits {
        if cancel.is_cancelled() {
            return Err(Error::cancelled());
        }
        running = g
            .freed
            .wait_timeout(running, Duration::from_millis(20))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    *running += 1;
    Ok(Permit(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_bound_the_running_reads() {
        let big = "x".repeat(UNGATED_BYTES as usize + 1);
        let dir = crate::testing::tree(&[("big", &big)]);
        let p = dir.path().join("big");
        let f = File::open(&p).unwrap();
        let cancel = CancelFlag::new();
        let held: Vec<Permit> = (0..gate().permits)
            .map(|_| enter(&f, &cancel).unwrap())
            .collect();
        // Full: a small file still goes through; a big one waits until cancelled.
        let small = dir.path().join("small");
        std::fs::write(&small, b"x").unwrap();
        assert!(!enter(&File::open(&small).unwrap(), &cancel).unwrap().0);
        let waiter = {
            let f = f.try_clone().unwrap();
            let cancel = cancel.clone();
            std::thread::spawn(move || enter(&f, &cancel).map(|p| p.0))
        };
        drop(held);
        assert!(waiter.join().unwrap().unwrap());
        let cancelled = CancelFlag::new();
        cancelled.cancel();
        let held: Vec<Permit> = (0..gate().permits)
            .map(|_| enter(&f, &cancel).unwrap())
            .collect();
        assert!(enter(&f, &cancelled).is_err());
        drop(held);
    }
}
