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
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

//----------- Stop -----------------------------------------------------------

/// The core's stop signal. Fired once, by the control task; every loop
/// holds a [`StopListener`] and races its waits against it.
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

    /// Fires the signal and wakes every waiting listener.
    pub(crate) fn fire(&self) {
        self.inner.fired.set(true);
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
