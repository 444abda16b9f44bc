//! Pseudo-files: regular-typed files whose size is not what they hold. procfs, sysfs and
//! their kin (`/proc/self/pagemap` reads as hundreds of GiB of page-table entries, with an
//! `st_size` of 0) and any regular file that claims 0 bytes. Such a file is read with a bound,
//! [`PSEUDO_MAX_BYTES`]: one that ends within it reads as usual; one that does not is refused
//! with a message naming the bound, never read to its (possibly unreachable) end. Nor are they
//! cached: their content changes with no change to their `stat`.

use std::io::Read;
use std::os::fd::AsRawFd;

use crate::error::{Error, ErrorKind};
use crate::fs::text::thousands;

/// Bytes a pseudo-file is read up to (8 MiB): every ordinary `/proc` and `/sys` file fits.
pub const PSEUDO_MAX_BYTES: u64 = 8 << 20;

/// `statfs` magics of the kernel's virtual file systems, whose files report sizes that are not
/// their content (`linux/magic.h`).
const PSEUDO_FS_MAGICS: [u32; 16] = [
    0x9fa0,      // proc
    0x6265_6572, // sysfs
    0x6462_6720, // debugfs
    0x7472_6163, // tracefs
    0x7363_6673, // securityfs
    0x0027_e0eb, // cgroup
    0x6367_7270, // cgroup2
    0xcafe_4a11, // bpf
    0x6265_6570, // configfs
    0xde5e_81e4, // efivarfs
    0x6165_676c, // pstore
    0xf97c_ff8c, // selinuxfs
    0x4341_5d53, // smackfs
    0x4249_4e4d, // binfmt_misc
    0x6573_5543, // fusectl
    0x6e73_6673, // nsfs
];

/// Whether the open regular file `file` (whose `fstat` is `st`) may hold more or other bytes
/// than its `st_size` says: it claims 0 bytes, or it lives on a virtual file system.
pub fn is_pseudo(file: &impl AsRawFd, st: &libc::stat) -> bool {
    st.st_size == 0 || on_pseudo_fs(file)
}

/// Whether the open file `file` lives on one of the kernel's virtual file systems (procfs,
/// sysfs, ...): its writes are commands to the kernel, taken by `write(2)` at the file's
/// start (many refuse `pwrite`, `fallocate` and replacement by rename).
pub fn on_pseudo_fs(file: &impl AsRawFd) -> bool {
    fs_magic(file.as_raw_fd()).is_some_and(|m| PSEUDO_FS_MAGICS.contains(&m))
}

/// The `statfs` magic number of the file system of the open `fd` (`linux/magic.h`), `None`
/// when `fstatfs` fails.
pub fn fs_magic(fd: std::os::fd::RawFd) -> Option<u32> {
    // SAFETY: `sfs` is written by fstatfs before it is read.
    let mut sfs: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(fd, &mut sfs) } != 0 {
        return None;
    }
    Some(magic_of(&sfs))
}

/// The magic number in `sfs`: the low 32 bits of `f_type`, whose type libc gives per platform
/// (a signed 32- or 64-bit word, or an unsigned one). Every magic is 32 bits; a magic with the
/// top bit set (bpf's `0xcafe4a11`) is negative in a signed 32-bit word, and sign-extended where
/// such a word is widened, so a comparison in any wider type would miss it.
#[allow(clippy::unnecessary_cast)] // f_type's type differs between platforms
pub fn magic_of(sfs: &libc::statfs) -> u32 {
    sfs.f_type as u32
}

/// A reader of at most [`PSEUDO_MAX_BYTES`] of `inner`, then the end; [`Bounded::overflow`]
/// tells whether `inner` had more. Reads keep the caller's sizes up to the bound (procfs files
/// such as `pagemap` refuse reads of odd sizes), and the probe past it reads 4,096 bytes.
#[derive(Debug)]
pub struct Bounded<R> {
    inner: R,
    left: u64,
    probed: bool,
    /// Whether `inner` had bytes past the bound (or failed when probed there).
    pub overflow: bool,
}

/// [`Bounded`] over `inner`.
pub fn bounded<R: Read>(inner: R) -> Bounded<R> {
    Bounded {
        inner,
        left: PSEUDO_MAX_BYTES,
        probed: false,
        overflow: false,
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            if !self.probed {
                self.probed = true;
                let mut probe = [0u8; 4096];
                self.overflow = loop {
                    match self.inner.read(&mut probe) {
                        Ok(n) => break n > 0,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break true,
                    }
                };
            }
            return Ok(0);
        }
        let n = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let got = self.inner.read(&mut buf[..n])?;
        self.left -= got as u64;
        Ok(got)
    }
}

/// The refusal of a pseudo-file that did not end within [`PSEUDO_MAX_BYTES`]
/// (`overflow`); `Ok` when it did.
///
/// Errors: `ErrorKind::InvalidArgument`, `'p' is a pseudo-file (its size is not known
/// before reading) that holds more than 8,388,608 bytes; it was not read to the end. Read
/// part of it with a shell command instead.`
pub fn check_bound(path: &str, overflow: bool) -> crate::error::Result<()> {
    if !overflow {
        return Ok(());
    }
    let path = &*crate::fs::text::names::inline(path);
    Err(Error::new(
        ErrorKind::InvalidArgument,
        format!(
            "'{path}' is a pseudo-file (its size is not known before reading) that holds more \
             than {} bytes; it was not read to the end. Read part of it with a shell command \
             instead.",
            thousands(PSEUDO_MAX_BYTES)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A magic with its top bit set, as a signed 32-bit `f_type` holds it, widened with its
    /// sign (as a 64-bit comparison of it saw it): still that file system's.
    #[test]
    fn magics_with_the_top_bit_set_match() {
        // SAFETY: statfs is plain data; all zeroes is a valid value.
        let mut sfs: libc::statfs = unsafe { std::mem::zeroed() };
        sfs.f_type = 0xcafe_4a11_u32 as i32 as _; // bpf
        assert_eq!(magic_of(&sfs), 0xcafe_4a11);
        assert!(PSEUDO_FS_MAGICS.contains(&magic_of(&sfs)));
        sfs.f_type = 0xcafe_4a11_u32 as _;
        assert!(PSEUDO_FS_MAGICS.contains(&magic_of(&sfs)));
        sfs.f_type = 0xef53; // ext4
        assert!(!PSEUDO_FS_MAGICS.contains(&magic_of(&sfs)));
    }

    #[test]
    fn proc_files_are_pseudo_and_bounded() {
        let f = std::fs::File::open("/proc/self/status").unwrap();
        let st = crate::fs::root::path::fstat(f.as_raw_fd()).unwrap();
        assert!(is_pseudo(&f, &st));
        let mut all = Vec::new();
        let mut r = bounded(f);
        r.read_to_end(&mut all).unwrap();
        assert!(!r.overflow && all.starts_with(b"Name:"));
        assert!(check_bound("s", r.overflow).is_ok());
        // pagemap yields far more than the bound (8 bytes per page of the address space).
        let f = std::fs::File::open("/proc/self/pagemap").unwrap();
        let mut r = bounded(f);
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        loop {
            match r.read(&mut buf).unwrap() {
                0 => break,
                k => n += k as u64,
            }
        }
        assert_eq!((n, r.overflow), (PSEUDO_MAX_BYTES, true));
        let e = check_bound("proc/self/pagemap", r.overflow).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(
            e.message.contains("more than 8,388,608 bytes"),
            "{}",
            e.message
        );
    }

    #[test]
    fn ordinary_files_are_not_pseudo() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, b"x\n").unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let st = crate::fs::root::path::fstat(f.as_raw_fd()).unwrap();
        assert!(!is_pseudo(&f, &st));
        std::fs::write(&p, b"").unwrap();
        let f = std::fs::File::open(&p).unwrap();
        let st = crate::fs::root::path::fstat(f.as_raw_fd()).unwrap();
        assert!(
            is_pseudo(&f, &st),
            "a file claiming 0 bytes is read with the bound"
        );
    }
}
