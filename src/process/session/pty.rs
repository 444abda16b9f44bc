//! The pseudo-terminal pair a session runs on: the master side stays with the supervisor, the
//! slave side becomes the program's standard streams and controlling terminal.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A new pseudo-terminal of `cols` x `rows`: `(master, slave)`, both close-on-exec, the master
/// non-blocking. Errors: the OS error of `posix_openpt`, `grantpt`, `unlockpt` or the open.
pub fn open(cols: u16, rows: u16) -> io::Result<(OwnedFd, OwnedFd)> {
    // SAFETY: plain libc calls; every returned fd is checked and owned at once.
    unsafe {
        let raw = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        let master = OwnedFd::from_raw_fd(raw);
        if libc::grantpt(raw) != 0 || libc::unlockpt(raw) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut name = [0 as libc::c_char; 128];
        let r = libc::ptsname_r(raw, name.as_mut_ptr(), name.len());
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        let slave = libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        if slave < 0 {
            return Err(io::Error::last_os_error());
        }
        let slave = OwnedFd::from_raw_fd(slave);
        set_size(master.as_raw_fd(), cols, rows)?;
        let flags = libc::fcntl(raw, libc::F_GETFL);
        if flags < 0 || libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((master, slave))
    }
}

/// Sets the terminal's size (`TIOCSWINSZ`) in character cells.
pub fn set_size(fd: RawFd, cols: u16, rows: u16) -> io::Result<()> {
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize from the pointer.
    if unsafe { libc::ioctl(fd, libc::TIOCSWINSZ, &size) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The terminal's foreground process group (`tcgetpgrp` through the master), if any.
pub fn foreground_group(master: RawFd) -> Option<i32> {
    // SAFETY: tcgetpgrp only reads.
    let pgrp = unsafe { libc::tcgetpgrp(master) };
    (pgrp > 0).then_some(pgrp)
}

/// Makes the slave on stdin the calling process's controlling terminal (`TIOCSCTTY`).
///
/// # Safety
/// Call only in a child between fork and exec, after `setsid`: async-signal-safe.
pub unsafe fn take_controlling_terminal() -> io::Result<()> {
    if libc::ioctl(0, libc::TIOCSCTTY as _, 0) == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_a_pair_of_the_size_asked() {
        let (master, slave) = open(100, 30).unwrap();
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        assert_eq!(
            unsafe { libc::ioctl(slave.as_raw_fd(), libc::TIOCGWINSZ, &mut size) },
            0
        );
        assert_eq!((size.ws_col, size.ws_row), (100, 30));
        drop(master);
    }
}
