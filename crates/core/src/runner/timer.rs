//! Sub-millisecond sleeps inside the async runtime, for the open-loop dispatcher.
//!
//! tokio's timer wheel has 1 ms granularity, far too coarse for a send lag target under 1 ms.
//! A dispatcher on its own OS thread sleeps precisely, but then every send costs two thread
//! wake-ups (the dispatcher's, then a runtime worker's to pick the request up), which on a
//! small or virtualised machine is most of the lag. A Linux `timerfd` registered with the
//! runtime's reactor wakes the worker itself at the instant, and the request task it spawns
//! runs on that same worker next.

use std::time::Instant;

/// A reusable precise sleep. On Linux a `timerfd` (no timer slack, nanosecond resolution);
/// elsewhere, or if the kernel refuses one, tokio's own timer (the send lag then shows its
/// millisecond granularity).
pub(super) struct PreciseTimer {
    #[cfg(target_os = "linux")]
    fd: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
}

impl PreciseTimer {
    /// Must be called inside the runtime (the timerfd registers with its reactor).
    pub(super) fn new() -> PreciseTimer {
        PreciseTimer {
            #[cfg(target_os = "linux")]
            fd: linux::timerfd().ok(),
        }
    }

    /// Returns at `target` or just after; at once if it has passed.
    pub(super) async fn sleep_until(&mut self, target: Instant) {
        let now = Instant::now();
        if target <= now {
            return;
        }
        #[cfg(target_os = "linux")]
        if let Some(fd) = &self.fd
            && linux::wait(fd, target - now).await.is_ok()
        {
            return;
        }
        tokio::time::sleep_until(target.into()).await;
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::Duration;

    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;

    pub(super) fn timerfd() -> io::Result<AsyncFd<OwnedFd>> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(io::Error::other("no async runtime"));
        }
        // SAFETY: plain syscall; the returned descriptor is owned by nothing else.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh, valid descriptor that we now own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the OwnedFd stays open, and the same descriptor, for the AsyncFd's lifetime.
        unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(|e| e.into())
    }

    /// Arms the timer `after` from now and waits for it. Re-arming resets the expiration
    /// count, so a wait abandoned earlier (an interrupt) cannot end this one early.
    pub(super) async fn wait(fd: &AsyncFd<OwnedFd>, after: Duration) -> io::Result<()> {
        // A zero it_value would disarm the timer instead of firing it.
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: valid descriptor, valid pointer to a fully initialised itimerspec.
        let rc = unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            let mut guard = fd.readable().await?;
            let read = guard.try_io(|inner| {
                let mut expirations = 0u64;
                // SAFETY: reads 8 bytes into a u64 we own.
                let n = unsafe {
                    libc::read(
                        inner.as_raw_fd(),
                        (&mut expirations as *mut u64).cast(),
                        std::mem::size_of::<u64>(),
                    )
                };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(())
                }
            });
            match read {
                Ok(result) => {
                    // The read took every expiration, so the descriptor is not readable
                    // until the timer fires again: forget the readiness now (no system
                    // call) rather than keep it, which made the next wait read the
                    // not-yet-expired timer once for its `EAGAIN` (a read per send).
                    if result.is_ok() {
                        guard.clear_ready();
                    }
                    return result;
                }
                // Stale readiness from an earlier expiration: wait for this one.
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn sleeps_until_the_target_and_not_before() {
        let mut timer = PreciseTimer::new();
        for _ in 0..20 {
            let target = Instant::now() + Duration::from_micros(300);
            timer.sleep_until(target).await;
            assert!(Instant::now() >= target);
        }
    }

    #[tokio::test]
    async fn an_abandoned_wait_does_not_end_the_next_one_early() {
        let mut timer = PreciseTimer::new();
        let first = Instant::now() + Duration::from_millis(1);
        // Abandon the first wait, then let its expiry pass unread.
        let _ = tokio::time::timeout(Duration::from_micros(100), timer.sleep_until(first)).await;
        std::thread::sleep(Duration::from_millis(3));
        let target = Instant::now() + Duration::from_millis(5);
        timer.sleep_until(target).await;
        assert!(Instant::now() >= target);
    }

    #[tokio::test]
    async fn a_past_target_returns_at_once() {
        let mut timer = PreciseTimer::new();
        let start = Instant::now();
        timer.sleep_until(start - Duration::from_millis(1)).await;
        assert!(start.elapsed() < Duration::from_secs(1));
    }
}
