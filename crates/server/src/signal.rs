//! Core-local wake-ups between tasks: [`Stop`] tells every task of a core
//! to finish, [`Notify`] passes "something changed" between the two halves
//! of a TCP connection, [`yield_now`] lets a busy loop give the others a
//! turn.
//!
//! Both are single-threaded (`Rc`, `Cell`): they never leave their core, so
//! they need no atomics. Waiting registers the task's waker in a slot that
//! belongs to the waiter; nothing is allocated per wait.

use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::os::fd::AsRawFd;
use std::pin::pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};

use monoio::net::udp::UdpSocket;

//----------- Stop -----------------------------------------------------------

/// The core's stop signal. Fired once, by the control task; every loop
/// holds a [`StopListener`] and races its waits against it, except the
/// UDP loops' readiness waits: firing shuts their sockets for reading
/// ([`Stop::shut_on_fire`]), which ends those waits.
#[derive(Clone, Default)]
pub(crate) struct Stop {
    inner: Rc<StopInner>,
}

#[derive(Default)]
struct StopInner {
    fired: Cell<bool>,
    /// One waker slot per listener; `None` when it is not waiting.
    wakers: RefCell<Vec<Option<Waker>>>,
    /// Slots of dropped listeners, reused by new ones.
    free: RefCell<Vec<usize>>,
    /// The sockets to shut for reading when the signal fires (those
    /// already closed are passed over).
    sockets: RefCell<Vec<Weak<UdpSocket>>>,
}

impl Stop {
    /// A listener with its own waker slot (a slot of a dropped listener is
    /// reused, so the slot list is as long as the most listeners alive at
    /// once: the loops plus the open connections).
    pub(crate) fn listener(&self) -> StopListener {
        let slot = match self.inner.free.borrow_mut().pop() {
            Some(slot) => slot,
            None => {
                let mut wakers = self.inner.wakers.borrow_mut();
                wakers.push(None);
                wakers.len() - 1
            }
        };
        StopListener {
            inner: Rc::clone(&self.inner),
            slot,
        }
    }

    /// Makes the signal shut `socket` for reading when it fires (at once
    /// if it has), which ends every wait for its readiness and leaves it
    /// readable: a loop that waits only for that readiness and looks at
    /// its listener after each wait ([`StopListener::fired`]) stops
    /// without racing each wait against the listener ([`StopListener::or`]
    /// costs about 50 instructions a wait). Sending is not affected. The
    /// socket is not kept open for this.
    pub(crate) fn shut_on_fire(&self, socket: &Rc<UdpSocket>) {
        if self.inner.fired.get() {
            shut(socket);
        } else {
            self.inner.sockets.borrow_mut().push(Rc::downgrade(socket));
        }
    }

    /// Fires the signal, shuts the sockets of [`Stop::shut_on_fire`] for
    /// reading and wakes every waiting listener.
    pub(crate) fn fire(&self) {
        self.inner.fired.set(true);
        let sockets = std::mem::take(&mut *self.inner.sockets.borrow_mut());
        for socket in sockets.iter().filter_map(Weak::upgrade) {
            shut(&socket);
        }
        let wakers: Vec<Waker> = self
            .inner
            .wakers
            .borrow_mut()
            .iter_mut()
            .filter_map(Option::take)
            .collect();
        for waker in wakers {
            waker.wake();
        }
    }
}

/// Shuts `socket` for reading. It cannot fail on an open socket (the
/// descriptor is one, open while the `Rc` lives); were it to, the loop
/// waiting on it would still end at the core's end, when the runtime drops
/// its task.
fn shut(socket: &UdpSocket) {
    let _ = crate::sys::shut_reading(socket.as_raw_fd());
}

//----------- StopListener ---------------------------------------------------

/// One task's view of the core's [`Stop`].
pub(crate) struct StopListener {
    inner: Rc<StopInner>,
    slot: usize,
}

impl StopListener {
    /// Whether the signal has fired.
    pub(crate) fn fired(&self) -> bool {
        self.inner.fired.get()
    }

    /// Runs `future` unless the signal fires first: `None` then (and
    /// `future` is dropped, which cancels its I/O).
    pub(crate) async fn or<F: Future>(&self, future: F) -> Option<F::Output> {
        let mut future = pin!(future);
        poll_fn(|cx| {
            if self.inner.fired.get() {
                return Poll::Ready(None);
            }
            if let Poll::Ready(output) = future.as_mut().poll(cx) {
                return Poll::Ready(Some(output));
            }
            self.register(cx);
            Poll::Pending
        })
        .await
    }

    fn register(&self, cx: &Context<'_>) {
        let mut wakers = self.inner.wakers.borrow_mut();
        let Some(slot) = wakers.get_mut(self.slot) else {
            return;
        };
        match slot {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => *slot = Some(cx.waker().clone()),
        }
    }
}

impl Drop for StopListener {
    fn drop(&mut self) {
        if let Some(slot) = self.inner.wakers.borrow_mut().get_mut(self.slot) {
            *slot = None;
        }
        self.inner.free.borrow_mut().push(self.slot);
    }
}

//----------- Notify ---------------------------------------------------------

/// A one-waiter wake-up: [`Notify::notify`] wakes the task waiting in
/// [`Notify::wait`], or makes its next wait return at once.
#[derive(Default)]
pub(crate) struct Notify {
    notified: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Notify {
    /// Wakes the waiter.
    pub(crate) fn notify(&self) {
        self.notified.set(true);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }

    /// Marks the waiter notified without waking it, for a notifier that
    /// runs inside the waiter's own task before the waiter's next poll in
    /// the same pass (the read half of a TCP connection, which `join!`
    /// polls just before the write half): there a wake would only poll the
    /// whole task once more for nothing.
    pub(crate) fn mark(&self) {
        self.notified.set(true);
    }

    /// Waits for the next [`Notify::notify`] or [`Notify::mark`] (or
    /// returns at once if one came since the last wait).
    pub(crate) async fn wait(&self) {
        poll_fn(|cx| {
            if self.notified.replace(false) {
                return Poll::Ready(());
            }
            self.waker.set(Some(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }
}

//----------- yield_now ------------------------------------------------------

/// Lets the core's other ready tasks run once before continuing.
pub(crate) async fn yield_now() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn stop_ends_a_pending_wait_and_later_ones() {
        let mut runtime = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap();
        runtime.block_on(async {
            let stop = Stop::default();
            let listener = stop.listener();
            let waiter = monoio::spawn(async move {
                listener
                    .or(monoio::time::sleep(Duration::from_secs(60)))
                    .await
            });
            monoio::time::sleep(Duration::from_millis(10)).await;
            stop.fire();
            assert_eq!(waiter.await, None);
            let late = stop.listener();
            assert!(late.fired());
            assert_eq!(late.or(async { 1 }).await, None);
        });
    }

    /// A UDP socket's readiness wait ends when the stop fires (which shuts
    /// the socket for reading), and so do later waits, also on a socket
    /// given after the stop; the socket still sends. Bounded: a wait the
    /// stop does not end fails after ten seconds (a timer's).
    async fn stop_ends_a_socket_wait() {
        let bind = || Rc::new(UdpSocket::bind("127.0.0.1:0").expect("a socket"));
        let stop = Stop::default();
        let socket = bind();
        stop.shut_on_fire(&socket);
        let listener = stop.listener();
        let ended = Rc::new(Cell::new(false));
        let waiter = monoio::spawn({
            let (socket, ended) = (Rc::clone(&socket), Rc::clone(&ended));
            async move {
                let _ = socket.readable(false).await;
                ended.set(true);
                listener.fired()
            }
        });
        for _ in 0..10 {
            yield_now().await;
        }
        assert!(!ended.get(), "a quiet socket was readable");
        stop.fire();
        let bound = crate::timer::Timer::new().expect("a timerfd");
        let ten = Duration::from_secs(10);
        let waited = bound.within(ten, waiter).await.expect("the bound's timer");
        assert_eq!(waited, Some(true), "not ended, or before the stop");
        let again = bound.within(ten, socket.readable(false)).await;
        assert!(again.expect("the bound's timer").is_some(), "not readable");
        let late = bind();
        stop.shut_on_fire(&late);
        let waited = bound.within(ten, late.readable(false)).await;
        assert!(
            waited.expect("the bound's timer").is_some(),
            "late: not shut"
        );
        let to = socket.local_addr().expect("bound");
        let sent = crate::sys::send_now(late.as_raw_fd(), &[1, 2], to);
        assert_eq!(sent.expect("sends"), 2);
    }

    #[test]
    fn stop_shuts_the_sockets_given_and_ends_their_waits() {
        crate::timer::testing::on_both_drivers(stop_ends_a_socket_wait);
    }

    #[test]
    fn listener_slots_are_reused() {
        let stop = Stop::default();
        let first = stop.listener();
        let second = stop.listener();
        drop(first);
        let third = stop.listener();
        assert_eq!(third.slot, 0);
        assert_eq!(second.slot, 1);
        assert_eq!(stop.inner.wakers.borrow().len(), 2);
    }

    #[test]
    fn notify_before_wait_is_remembered() {
        let mut runtime = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap();
        runtime.block_on(async {
            let notify = Notify::default();
            notify.notify();
            let waited = monoio::time::timeout(Duration::from_secs(1), notify.wait()).await;
            assert!(waited.is_ok());
            let waited = monoio::time::timeout(Duration::from_millis(20), notify.wait()).await;
            assert!(waited.is_err(), "one notify, one wake-up");
        });
    }
}
