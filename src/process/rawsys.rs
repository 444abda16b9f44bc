//! System calls made without the C library, for code that runs in a process sharing this one's
//! memory (a `clone(CLONE_VM)` child, see [`crate::process::logcap`]): the C library's wrappers
//! write `errno` and read cancellation state in the calling thread's thread-local block, which
//! such a child shares with the thread that cloned it. Each call returns the kernel's result:
//! `-errno` on failure.
//!
//! Available on Linux x86-64 and AArch64 ([`SUPPORTED`]); elsewhere the functions go through
//! the C library (for a forked child, which has memory of its own).

#![allow(clippy::missing_safety_doc)]

/// Whether these calls bypass the C library on this target.
pub const SUPPORTED: bool = cfg!(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
));

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[inline(always)]
unsafe fn raw(n: libc::c_long, a: [usize; 6]) -> isize {
    let ret: isize;
    core::arch::asm!(
        "syscall",
        inlateout("rax") n as isize => ret,
        in("rdi") a[0], in("rsi") a[1], in("rdx") a[2],
        in("r10") a[3], in("r8") a[4], in("r9") a[5],
        lateout("rcx") _, lateout("r11") _,
        options(nostack),
    );
    ret
}

#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
#[inline(always)]
unsafe fn raw(n: libc::c_long, a: [usize; 6]) -> isize {
    let ret: isize;
    core::arch::asm!(
        "svc 0",
        in("x8") n as usize,
        inlateout("x0") a[0] as isize => ret,
        in("x1") a[1], in("x2") a[2], in("x3") a[3], in("x4") a[4], in("x5") a[5],
        options(nostack),
    );
    ret
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
#[inline(always)]
unsafe fn raw(n: libc::c_long, a: [usize; 6]) -> isize {
    let r = libc::syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
    if r == -1 {
        -(*libc::__errno_location() as isize)
    } else {
        r as isize
    }
}

/// `read(2)`.
#[inline(always)]
pub unsafe fn read(fd: i32, buf: *mut u8, len: usize) -> isize {
    raw(libc::SYS_read, [fd as usize, buf as usize, len, 0, 0, 0])
}

/// `write(2)`.
#[inline(always)]
pub unsafe fn write(fd: i32, buf: *const u8, len: usize) -> isize {
    raw(libc::SYS_write, [fd as usize, buf as usize, len, 0, 0, 0])
}

/// `openat(AT_FDCWD, path, flags, mode)`; `path` NUL-terminated.
#[inline(always)]
pub unsafe fn open(path: *const u8, flags: i32, mode: u32) -> isize {
    raw(
        libc::SYS_openat,
        [
            libc::AT_FDCWD as usize,
            path as usize,
            flags as usize,
            mode as usize,
            0,
            0,
        ],
    )
}

/// `close(2)`.
#[inline(always)]
pub unsafe fn close(fd: i32) -> isize {
    raw(libc::SYS_close, [fd as usize, 0, 0, 0, 0, 0])
}

/// `close_range(first, last, 0)` (Linux 5.9+; `-ENOSYS` before).
#[inline(always)]
pub unsafe fn close_range(first: u32, last: u32) -> isize {
    raw(
        libc::SYS_close_range,
        [first as usize, last as usize, 0, 0, 0, 0],
    )
}

/// `dup3(old, new, 0)`.
#[inline(always)]
pub unsafe fn dup3(old: i32, new: i32) -> isize {
    raw(libc::SYS_dup3, [old as usize, new as usize, 0, 0, 0, 0])
}

/// `lseek(2)`: the new offset.
#[inline(always)]
pub unsafe fn lseek(fd: i32, offset: i64, whence: i32) -> isize {
    raw(
        libc::SYS_lseek,
        [fd as usize, offset as usize, whence as usize, 0, 0, 0],
    )
}

/// `ftruncate(2)`.
#[inline(always)]
pub unsafe fn ftruncate(fd: i32, len: i64) -> isize {
    raw(libc::SYS_ftruncate, [fd as usize, len as usize, 0, 0, 0, 0])
}

/// `renameat2(AT_FDCWD, from, AT_FDCWD, to, 0)`; NUL-terminated paths.
#[inline(always)]
pub unsafe fn rename(from: *const u8, to: *const u8) -> isize {
    let cwd = libc::AT_FDCWD as usize;
    raw(
        libc::SYS_renameat2,
        [cwd, from as usize, cwd, to as usize, 0, 0],
    )
}

/// `ppoll(fds, n, timeout, NULL)`; `timeout_ms < 0` waits without end.
#[inline(always)]
pub unsafe fn poll(fds: *mut libc::pollfd, n: usize, timeout_ms: i64) -> isize {
    let ts = libc::timespec {
        tv_sec: (timeout_ms / 1000) as libc::time_t,
        tv_nsec: ((timeout_ms % 1000) * 1_000_000) as libc::c_long,
    };
    let tsp = if timeout_ms < 0 {
        0
    } else {
        &ts as *const libc::timespec as usize
    };
    raw(libc::SYS_ppoll, [fds as usize, n, tsp, 0, 8, 0])
}

/// Milliseconds on the monotonic clock.
#[inline(always)]
#[allow(clippy::unnecessary_cast)] // `time_t` and `c_long` are not `i64` everywhere
pub unsafe fn now_ms() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    raw(
        libc::SYS_clock_gettime,
        [
            libc::CLOCK_MONOTONIC as usize,
            &mut ts as *mut libc::timespec as usize,
            0,
            0,
            0,
            0,
        ],
    );
    (ts.tv_sec as i64)
        .wrapping_mul(1000)
        .wrapping_add(ts.tv_nsec as i64 / 1_000_000)
}

/// `setsid(2)`.
#[inline(always)]
pub unsafe fn setsid() -> isize {
    raw(libc::SYS_setsid, [0; 6])
}

/// `exit(2)` of the calling thread (the whole process, for a process of one thread).
#[inline(always)]
pub unsafe fn exit(code: i32) -> ! {
    raw(libc::SYS_exit, [code as usize, 0, 0, 0, 0, 0]);
    loop {
        core::hint::spin_loop();
    }
}
