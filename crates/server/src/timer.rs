//! The core's timers, without monoio's timer wheel.
//!
//! A core's runtime is built without monoio's timers: with them, every
//! park of the reactor (one per query or two at a low rate) read the clock,
//! looked for the wheel's next expiration and polled the wheel, even with
//! no timer set: 275 user-space instructions a park (under callgrind, the
//! NXDOMAIN flood at 2,000 queries a second: docs/benchmarks.md, "What a
//! core spends per wake-up outside the answering"). Here a timer is a
//! `timerfd(2)` the reactor waits on as on a socket: nothing is done per
//! park, and a timer costs only when it is set or expires.
//!
//! A [`Timer`] is one such descriptor, for a loop that waits again and
//! again (the forwarder's tick, the AF_XDP loop's retry, the sweeper of
//! `tcp::deadline`). One-off waits (`deadline::sleep`, and the timeouts of
//! `deadline`) share the core's sweeper, and so its one descriptor.

use std::future::{poll_fn, Future};
use std::io;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::sys::TimerFd;

//----------- Timer ----------------------------------------------------------

/// One timer: set it, then wait for it.
pub(crate) struct Timer {
    fd: TimerFd,
    /// The descriptor as the reactor sees it (a duplicate).
    readiness: monoio::net::unix::UnixDatagram,
}

impl Timer {
    /// A timer not set (a wait would last until it is set and expires).
    /// Inside a monoio runtime, whose reactor its waits use.
    pub(crate) fn new() -> io::Result<Self> {
        let fd = TimerFd::new()?;
        let readiness = fd.readiness()?;
        Ok(Timer { fd, readiness })
    }

    /// Sets the timer to expire at `when` (at once if it has passed),
    /// replacing any earlier setting. A wait in progress keeps waiting,
    /// for the new time.
    pub(crate) fn set(&self, when: Instant) -> io::Result<()> {
        self.fd.set(when.saturating_duration_since(Instant::now()))
    }

    /// Waits until the timer expires (returns at once if it expired since
    /// it was set and no wait saw it), or until the reactor fails to wait
    /// for it (not expected: an error rather than a spin or a wait that
    /// never ends; the caller gives up on the timer).
    pub(crate) async fn wait(&self) -> io::Result<()> {
        self.wait_from(true).await
    }

    /// As [`Timer::wait`]; `look_first` false right after a [`Timer::set`]
    /// to a later time, whose expiry cannot be there yet: the first
    /// `read(2)` (which would find nothing, `EAGAIN`) is skipped.
    async fn wait_from(&self, look_first: bool) -> io::Result<()> {
        if look_first && self.fd.expired() {
            return Ok(());
        }
        // Each pass returns, or waits for the descriptor to become readable
        // again: a readiness that found no expiry (the timer was set again
        // meanwhile) was an event, so the loop goes on only as events come.
        loop {
            self.readiness.readable(false).await?;
            if self.fd.expired() {
                return Ok(());
            }
        }
    }

    /// Runs `future` for at most `wait` (this timer set to it): its
    /// output, or `None` if the timer expired first (and `future` is
    /// dropped, which cancels its I/O). `future` is polled once before the
    /// timer is set, which is set only if `future` is not ready then (an
    /// AF_XDP retry whose frames are already there costs no system call of
    /// the timer's). An error if the timer cannot be set or waited for
    /// (not expected).
    pub(crate) async fn within<F: Future>(
        &self,
        wait: Duration,
        future: F,
    ) -> io::Result<Option<F::Output>> {
        let mut future = pin!(future);
        // Not started (the timer not set) until polled below, after
        // `future` was found pending.
        let mut expiry = pin!(async {
            self.set(later(wait))?;
            self.wait_from(false).await
        });
        poll_fn(|cx| {
            if let Poll::Ready(output) = future.as_mut().poll(cx) {
                return Poll::Ready(Ok(Some(output)));
            }
            expiry.as_mut().poll(cx).map(|waited| waited.map(|()| None))
        })
        .await
    }

    /// Sets the timer to `wait` from now and waits for it.
    pub(crate) async fn sleep(&self, wait: Duration) -> io::Result<()> {
        self.set(later(wait))?;
        self.wait_from(false).await
    }
}

/// `wait` from now; a wait too long to add (no configuration gives one)
/// is a year.
fn later(wait: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(wait)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 86_400))
}

//=========== Tests ==========================================================

/// Runtimes as a core's, for the tests of the core's timers.
#[cfg(test)]
pub(crate) mod testing {
    use std::future::Future;

    /// Without monoio's timers, as a core's runtime: `monoio::time` would
    /// panic in it.
    pub(crate) fn runtime() -> monoio::Runtime<monoio::LegacyDriver> {
        monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .build()
            .expect("a runtime")
    }

    /// Runs what `task` makes as a task (not the runtime's main future,
    /// whose yields would not let other tasks run), to its end, on the
    /// legacy driver, then on io_uring when the kernel lets this process
    /// have it; both without monoio's timers.
    pub(crate) fn on_both_drivers<F>(task: impl Fn() -> F)
    where
        F: Future<Output = ()> + 'static,
    {
        runtime().block_on(async { monoio::spawn(task()).await });
        if let Ok(mut runtime) = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new().build() {
            runtime.block_on(async { monoio::spawn(task()).await });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::future::pending;
    use std::rc::Rc;

    use super::testing::on_both_drivers;
    use super::*;
    use crate::signal::yield_now;

    /// A wait set far ahead does not end until the timer is set again, to
    /// now: the wait in progress follows the new setting (as the sweeper's
    /// does when a nearer deadline comes). Bounded: a wait that the new
    /// setting does not end fails after ten seconds (another timer's).
    async fn set_again_ends_the_wait() {
        let timer = Rc::new(Timer::new().expect("a timerfd"));
        timer
            .set(Instant::now() + Duration::from_secs(3600))
            .expect("set");
        let ended = Rc::new(Cell::new(false));
        let waiter = monoio::spawn({
            let (timer, ended) = (Rc::clone(&timer), Rc::clone(&ended));
            async move {
                timer.wait().await.expect("the reactor waits");
                ended.set(true);
            }
        });
        for _ in 0..10 {
            yield_now().await;
        }
        assert!(!ended.get(), "ended an hour early");
        assert!(!timer.fd.expired(), "the waiter read no expiry");
        timer.set(Instant::now()).expect("set");
        let bound = Timer::new().expect("a timerfd");
        let waited = bound.within(Duration::from_secs(10), waiter).await;
        assert!(waited.expect("the bound's timer").is_some(), "not ended");
        assert!(ended.get());
        // Within: the future's output when it is first, `None` when the
        // timer is.
        assert_eq!(
            timer
                .within(Duration::from_secs(3600), async { 7 })
                .await
                .expect("set"),
            Some(7)
        );
        let never = pending::<()>();
        assert_eq!(
            timer.within(Duration::ZERO, never).await.expect("set"),
            None
        );
    }

    #[test]
    fn a_timer_set_again_ends_the_wait_in_progress() {
        on_both_drivers(set_again_ends_the_wait);
    }

    /// A future ready at its first poll is not timed: the timer is not set
    /// (an expiry left unread is still there, where a setting would have
    /// cleared it), so the AF_XDP retry whose frames are there costs no
    /// system call of the timer's. A wait too long to add to the clock
    /// does not panic.
    async fn a_ready_future_sets_no_timer() {
        let timer = Timer::new().expect("a timerfd");
        timer.set(Instant::now()).expect("set");
        // Until the expiry is there (set to now: within a nanosecond).
        let other = Timer::new().expect("a timerfd");
        other.sleep(Duration::from_millis(1)).await.expect("slept");
        let output = timer.within(Duration::from_secs(3600), async { 7 }).await;
        assert_eq!(output.expect("set"), Some(7));
        assert!(timer.fd.expired(), "the timer was set again");
        let late = async {
            yield_now().await;
            8
        };
        let output = timer.within(Duration::MAX, late).await;
        assert_eq!(output.expect("set"), Some(8));
    }

    #[test]
    fn a_future_ready_at_once_is_not_timed() {
        on_both_drivers(a_ready_future_sets_no_timer);
    }
}
