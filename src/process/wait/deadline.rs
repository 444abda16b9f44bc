//! Sleeping until a deadline to the microsecond: a command's timeout fires when it is due.
//!
//! tokio's timer wheel counts whole milliseconds and rounds a deadline up to the next tick, so a
//! timeout fires up to a millisecond (and, with the driver's own rounding, often two) late. On
//! Linux a `timerfd` armed for the exact instant wakes the supervisor's `epoll` on time; elsewhere,
//! or if the kernel refuses one, this falls back to tokio's sleep.

use tokio::time::Instant;

/// Waits until `deadline`.
pub async fn sleep_until(deadline: Instant) {
    #[cfg(target_os = "linux")]
    if let Some(timer) = linux::Timer::new(deadline) {
        timer.wait().await;
        return;
    }
    tokio::time::sleep_until(deadline).await;
}

#[cfg(target_os = "linux")]
mod linux {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    use tokio::io::unix::AsyncFd;
    use tokio::time::Instant;

    /// A one-shot `timerfd` on `CLOCK_MONOTONIC` (the clock `Instant` reads), armed for a deadline.
    pub struct Timer {
        fd: AsyncFd<OwnedFd>,
    }

    impl Timer {
        /// A timer armed for `deadline`, or `None` when the kernel refuses one.
        pub fn new(deadline: Instant) -> Option<Timer> {
            // SAFETY: timerfd_create returns a new fd we own, or -1.
            let raw = unsafe {
                libc::timerfd_create(
                    libc::CLOCK_MONOTONIC,
                    libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                )
            };
            if raw < 0 {
                return None;
            }
            // SAFETY: just created, owned here.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            let left = deadline.saturating_duration_since(Instant::now());
            // A relative one-shot timer; zero would disarm it, so at least a nanosecond.
            let nanos = left.subsec_nanos().max(u32::from(left.as_secs() == 0));
            let spec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: libc::time_t::try_from(left.as_secs()).unwrap_or(libc::time_t::MAX),
                    tv_nsec: nanos as libc::c_long,
                },
            };
            // SAFETY: arming a timerfd we own with an initialised spec.
            let armed =
                unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
            if armed != 0 {
                return None;
            }
            // SAFETY: the timerfd is owned by the registration and closed only after it.
            unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
                .ok()
                .map(|fd| Timer { fd })
        }

        /// Waits until the timer has expired.
        pub async fn wait(&self) {
            loop {
                let Ok(mut guard) = self.fd.readable().await else {
                    return;
                };
                let mut expirations = 0u64;
                // SAFETY: reading the 8-byte expiration count into a local.
                let n = unsafe {
                    libc::read(
                        self.fd.get_ref().as_raw_fd(),
                        (&mut expirations as *mut u64).cast(),
                        8,
                    )
                };
                if n == 8 {
                    return;
                }
                guard.clear_ready();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn wakes_at_the_deadline_not_before() {
        crate::process::block_on(async {
            for wait in [
                Duration::ZERO,
                Duration::from_micros(300),
                Duration::from_millis(5),
            ] {
                let deadline = Instant::now() + wait;
                sleep_until(deadline).await;
                assert!(Instant::now() >= deadline, "{wait:?}");
            }
        });
    }
}
