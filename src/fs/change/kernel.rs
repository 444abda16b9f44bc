//! Writes to the kernel's pseudo-files (procfs, sysfs, debugfs ...; issue 19): each `write(2)`
//! is a command the kernel takes from the file's start, and many of them refuse `pwrite`
//! (`ESPIPE`), `fallocate`, truncation and replacement by rename. So such a file is written
//! in place with plain `write(2)` calls from offset 0, as 0.36.0 and 0.62.0 write it (`open(...,
//! 'w').write(...)`), and a value the kernel refuses (`EINVAL`, `EBUSY`, ...) is a retry naming
//! the file, never an `OSError` out of the run. A regular file elsewhere that cannot be written
//! at an offset (`ESPIPE`) is written the same way.

use crate::error::{Error, ErrorKind};
use crate::fs::text::py_repr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// Writes all of `content` with `write(2)` from the start of `fd` (its offset is moved there
/// first where it can be), in the calls the kernel takes; nothing is truncated.
pub(crate) fn write_sequential(fd: &OwnedFd, mut content: &[u8]) -> io::Result<()> {
    // SAFETY: fd is a valid open descriptor.
    unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_SET) };
    while !content.is_empty() {
        // SAFETY: content points to content.len() readable bytes.
        let n = unsafe { libc::write(fd.as_raw_fd(), content.as_ptr().cast(), content.len()) };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(err);
        }
        if n == 0 {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        content = &content[n as usize..];
    }
    Ok(())
}

/// The retry for a write the kernel refused (`path` as the model gave it): `The kernel refused the write to 'p' (a pseudo-file,
/// written in place): Invalid argument. Nothing was changed; check what the file accepts.`
/// Permission errors are left to the caller's usual `Permission denied: 'p'`.
pub(crate) fn refused(err: &io::Error, path: &str) -> Option<Error> {
    let errno = err.raw_os_error()?;
    if matches!(
        errno,
        libc::EACCES | libc::EPERM | libc::ENOSPC | libc::EDQUOT | libc::EROFS | libc::EFBIG
    ) {
        return None;
    }
    let reason = crate::fs::root::path::strerror(errno);
    Some(Error::new(
        ErrorKind::InvalidArgument,
        format!(
            "The kernel refused the write to {} (a pseudo-file, written in place): {reason}. \
             Nothing was changed; check what the file accepts.",
            py_repr(path)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::FromRawFd;

    #[test]
    fn proc_files_take_sequential_writes_and_refusals_are_retries() {
        let open = |p: &str| {
            let c = std::ffi::CString::new(p).unwrap();
            // SAFETY: a valid C string; the descriptor is owned once checked.
            let fd = unsafe { libc::open(c.as_ptr(), libc::O_WRONLY) };
            assert!(fd >= 0, "{p}");
            unsafe { OwnedFd::from_raw_fd(fd) }
        };
        // Another thread's name, so the test runner's own is not touched.
        std::thread::spawn(move || {
            let fd = open("/proc/thread-self/comm");
            write_sequential(&fd, b"kernel-test").unwrap();
            let name = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
            assert_eq!(name, "kernel-test\n");
        })
        .join()
        .unwrap();
        let err = io::Error::from_raw_os_error(libc::EINVAL);
        let e = refused(&err, "proc/self/oom_score_adj").unwrap();
        assert_eq!(
            e.message,
            "The kernel refused the write to 'proc/self/oom_score_adj' (a pseudo-file, written in \
             place): Invalid argument. Nothing was changed; check what the file accepts."
        );
        assert!(refused(&io::Error::from_raw_os_error(libc::EACCES), "a").is_none());
    }
}
