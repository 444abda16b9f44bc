//! The processes sharing one store take turns: an advisory `flock` on `<store>/lock`, held for
//! each operation (a listing, a diff, a rewind) and for a call from its keep or snapshot to its
//! record or release, so that no other process's walk or write interleaves. The lock file
//! also holds the store's generation (a counter, 8 bytes little-endian), bumped by every write
//! of the log or the index: a process that takes the lock and finds another generation than
//! the one it last saw reloads the log and the index.
//!
//! Within a process the lock is counted: threads of one store share it (they are serialised
//! by the store's own mutex). A process killed while holding it releases it (the kernel drops
//! an `flock` with the last descriptor of its open file).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Mutex;

/// The lock of a store directory and the generation seen through it.
pub struct Coord {
    file: File,
    held: Mutex<Held>,
}

/// What this process holds of the lock.
#[derive(Default)]
struct Held {
    /// How many holds (operations and open calls).
    holds: usize,
    /// The generation read when the lock was taken (or written since).
    generation: u64,
    /// Whether `generation` is one [`Coord::bump_by_leave`] left for the last hold's
    /// [`Coord::leave`] to write.
    unwritten: bool,
}

fn flock(file: &File, op: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: the descriptor is open for the life of `file`.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

impl Coord {
    /// Opens (or creates) `<dir>/lock`.
    ///
    /// Errors: the file cannot be created (a read-only or full disk).
    pub fn open(dir: &Path) -> io::Result<Coord> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(dir.join("lock"))?;
        Ok(Coord {
            file,
            held: Mutex::new(Held::default()),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn read_generation(&self) -> u64 {
        let mut b = [0u8; 8];
        match self.file.read_at(&mut b, 0) {
            Ok(8) => u64::from_le_bytes(b),
            // A new store (or a torn write of a killed process): not one anybody saw.
            Ok(0) => 0,
            _ => u64::MAX,
        }
    }

    /// Takes a hold, waiting for the lock when this process has none (the caller must not hold
    /// the GIL or an event loop). Returns the store's generation. Each hold is given back with
    /// [`Coord::leave`].
    ///
    /// Errors: `flock` failed (never for a lock another process holds: that is waited for).
    pub fn enter(&self) -> io::Result<u64> {
        let mut s = self.state();
        if s.holds == 0 {
            flock(&self.file, libc::LOCK_EX)?;
            s.generation = self.read_generation();
        }
        s.holds += 1;
        Ok(s.generation)
    }

    /// Like [`Coord::enter`] without waiting: `None` when another process holds the lock (or
    /// another thread of this one is waiting for it).
    pub fn try_enter(&self) -> Option<u64> {
        let mut s = match self.held.try_lock() {
            Ok(s) => s,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        if s.holds == 0 {
            flock(&self.file, libc::LOCK_EX | libc::LOCK_NB).ok()?;
            s.generation = self.read_generation();
        }
        s.holds += 1;
        Some(s.generation)
    }

    /// Writes the generation [`Coord::bump_by_leave`] left to the lock file now, if not yet (a
    /// hold must be taken): as [`Coord::leave`] would, for a write about to reach the store while
    /// further holds may keep the lock taken.
    pub fn write_generation(&self) {
        let mut s = self.state();
        if s.unwritten && s.holds > 0 {
            // A failed write leaves other processes on the old generation (as a failed `bump`).
            if self.file.write_at(&s.generation.to_le_bytes(), 0).is_ok() {
                s.unwritten = false;
            }
        }
    }

    /// Gives the lock up without writing anything or counting holds, as the kernel does when the
    /// process is killed (tests only).
    #[cfg(test)]
    pub fn give_up_as_if_killed(&self) {
        let _ = flock(&self.file, libc::LOCK_UN);
    }

    /// The generation this process saw or wrote last (the store's, while it holds the lock).
    pub fn generation(&self) -> u64 {
        self.state().generation
    }

    /// Gives back a hold; the last one writes the generation [`Coord::bump_by_leave`] left,
    /// then unlocks.
    pub fn leave(&self) {
        let mut s = self.state();
        s.holds = s.holds.saturating_sub(1);
        if s.holds == 0 {
            if s.unwritten {
                // A failed write leaves other processes on the old generation (as a failed
                // `bump` does); each later operation of this one bumps it again.
                let _ = self.file.write_at(&s.generation.to_le_bytes(), 0);
                s.unwritten = false;
            }
            let _ = flock(&self.file, libc::LOCK_UN);
        }
    }

    /// [`Coord::bump`] for a write whose hold is given back right after it (a file tool's
    /// checkpoint): the next generation, written to the lock file by the writer thread before
    /// the checkpoint's line ([`Coord::write_generation`]) or by the last hold's
    /// [`Coord::leave`] (nobody reads it before the lock is given back), so the caller pays no
    /// write. A hold must be taken.
    pub fn bump_by_leave(&self) -> u64 {
        let mut s = self.state();
        debug_assert!(s.holds > 0, "bump_by_leave without a hold");
        s.generation = s.generation.wrapping_add(1);
        s.unwritten = true;
        s.generation
    }

    /// After a write of the log or the index (a hold taken): the next generation, written to
    /// the lock file; returns it. While this process holds the lock nobody else writes the
    /// file, so the generation it saw (or wrote) last is the file's: not read again.
    pub fn bump(&self) -> io::Result<u64> {
        let mut s = self.state();
        let seen = if s.holds > 0 {
            s.generation
        } else {
            self.read_generation()
        };
        let next = seen.wrapping_add(1).max(s.generation.wrapping_add(1));
        self.file.write_at(&next.to_le_bytes(), 0)?;
        s.generation = next;
        s.unwritten = false;
        Ok(next)
    }
}

/// A hold for the length of one operation, given back on drop.
pub struct Hold<'a>(pub &'a Coord);

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_holds_and_bumps_the_generation() {
        let dir = tempfile::tempdir().unwrap();
        let a = Coord::open(dir.path()).unwrap();
        let b = Coord::open(dir.path()).unwrap();
        assert_eq!(a.enter().unwrap(), 0);
        assert_eq!(a.enter().unwrap(), 0); // a second hold of the same process
        assert_eq!(b.try_enter(), None); // another open file: another process as far as flock goes
        assert_eq!(a.bump().unwrap(), 1);
        a.leave();
        assert_eq!(b.try_enter(), None);
        a.leave();
        assert_eq!(b.try_enter(), Some(1));
        assert_eq!(b.bump().unwrap(), 2);
        b.leave();
        assert_eq!(a.enter().unwrap(), 2);
        a.leave();
    }

    #[test]
    fn a_generation_bumped_by_leave_is_written_by_the_last_hold() {
        let dir = tempfile::tempdir().unwrap();
        let a = Coord::open(dir.path()).unwrap();
        let b = Coord::open(dir.path()).unwrap();
        assert_eq!(a.enter().unwrap(), 0);
        assert_eq!(a.enter().unwrap(), 0); // the writer thread's hold
        assert_eq!(a.bump_by_leave(), 1);
        assert_eq!(a.bump_by_leave(), 2);
        a.leave();
        assert_eq!(b.try_enter(), None);
        a.leave(); // the last hold: writes 2, then unlocks
        assert_eq!(b.try_enter(), Some(2));
        assert_eq!(b.bump().unwrap(), 3);
        b.leave();
        assert_eq!(a.enter().unwrap(), 3);
        a.leave();
    }

    /// Whether some process waits for an `flock` (`/proc/locks` lists waiters with `->`).
    fn someone_waits() -> bool {
        std::fs::read_to_string("/proc/locks")
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains("->") && l.contains("FLOCK"))
    }

    #[test]
    fn try_enter_does_not_wait_behind_a_thread_waiting_for_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let a = std::sync::Arc::new(Coord::open(dir.path()).unwrap());
        let b = Coord::open(dir.path()).unwrap();
        b.enter().unwrap(); // another process holds the lock
        let waiter = {
            let a = std::sync::Arc::clone(&a);
            std::thread::spawn(move || {
                a.enter().unwrap();
                a.leave();
            })
        };
        while !someone_waits() {
            std::thread::yield_now();
        }
        // The event loop's inline call: told to go elsewhere, not held up (it used to wait on
        // the waiting thread's state, so until the other process let go).
        assert_eq!(a.try_enter(), None);
        b.leave();
        waiter.join().unwrap();
    }
}
