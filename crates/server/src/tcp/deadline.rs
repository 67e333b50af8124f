//! Connection timeouts without a timer per connection (issue 26: 10,000
//! idle TLS connections in 100 MiB).
//!
//! monoio's `Sleep` is 640 octets (a timer-wheel entry whose fields are
//! cache-padded to 128 octets), and it makes every future holding it
//! 128-aligned; a connection held one per half (the read's timeout, the
//! write's), 1,280 octets of every open connection's task, idle or not,
//! plus the padding the alignment costs around them. Here a timeout is a
//! slot in a table of the core's own (a deadline and a waker, a few dozen
//! octets, taken when the timed future first waits and freed when it ends),
//! and one task per core, the *sweeper*, sleeps on a single monoio timer
//! and wakes the futures whose deadline has passed.
//!
//! Precision: a deadline is noticed at the sweeper's next pass, which
//! comes at the earliest deadline it knew of, but no sooner than
//! [`MIN_TICK`] after the previous pass and no later than [`MAX_TICK`]
//! after it (a deadline set meanwhile, earlier than that, is late by at
//! most [`MAX_TICK`]). A pass scans the table (one entry per timed wait in
//! progress: at most two per open connection), so its cost is bounded by
//! the connection limit, [`MIN_TICK`] apart at most.
//!
//! Core-local (a thread-local table, as the buffer pool is): no locks, and
//! the sweeper runs on the core whose connections it times. No allocation
//! per wait once the table has grown to the most waits at once.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

/// The shortest pause between two passes of the sweeper.
const MIN_TICK: Duration = Duration::from_millis(10);

/// The longest pause between two passes of the sweeper while anything
/// waits: how late a deadline set during a pause can be noticed.
const MAX_TICK: Duration = Duration::from_millis(25);

/// A timed future's deadline passed first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Elapsed;

/// One timed wait in progress.
struct Entry {
    /// When it ends; `None` for a free slot.
    when: Option<Instant>,
    /// Who to wake then.
    waker: Option<Waker>,
}

/// The core's timed waits.
struct Table {
    entries: Vec<Entry>,
    /// Free slots of `entries`.
    free: Vec<usize>,
    /// Slots in use.
    used: usize,
    /// The sweeper task runs (it ends once nothing waits for a whole pass).
    sweeping: bool,
}

thread_local! {
    static TABLE: RefCell<Table> = const {
        RefCell::new(Table { entries: Vec::new(), free: Vec::new(), used: 0, sweeping: false })
    };
}

/// Runs `future` for at most `wait`: its output, or [`Elapsed`] if the
/// deadline passed first (the caller then drops the future, which cancels
/// its I/O). As `monoio::time::timeout`, without a timer of its own: a few
/// octets in the caller's future instead of 640. `future` is pinned by the
/// caller (`pin!`) and lent: moved in, it would be held twice, the argument
/// and the pinned local (the generator does not overlap them). Must run
/// inside a monoio runtime with timers enabled (the sweeper's).
pub(crate) async fn timeout<F: Future + Unpin>(
    wait: Duration,
    mut future: F,
) -> Result<F::Output, Elapsed> {
    let now = Instant::now();
    // A wait too long to add (no configuration gives one) is a year.
    let when = now
        .checked_add(wait)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 86_400));
    let mut slot = Slot(None);
    poll_fn(|cx| {
        if let Poll::Ready(output) = Pin::new(&mut future).poll(cx) {
            return Poll::Ready(Ok(output));
        }
        if Instant::now() >= when {
            return Poll::Ready(Err(Elapsed));
        }
        slot.arm(when, cx.waker());
        Poll::Pending
    })
    .await
}

/// A slot of the table held by a timed wait, freed when it ends or is
/// dropped.
struct Slot(Option<usize>);

impl Slot {
    /// Records `when` and `waker` in the slot, taking one on the first call
    /// (and starting the sweeper if it does not run).
    fn arm(&mut self, when: Instant, waker: &Waker) {
        let (start, replaced) = TABLE.with(|table| {
            let mut table = table.borrow_mut();
            let index = match self.0 {
                Some(index) => index,
                None => {
                    let index = match table.free.pop() {
                        Some(index) => index,
                        None => {
                            table.entries.push(Entry {
                                when: None,
                                waker: None,
                            });
                            table.entries.len() - 1
                        }
                    };
                    table.used += 1;
                    self.0 = Some(index);
                    index
                }
            };
            let entry = &mut table.entries[index];
            entry.when = Some(when);
            let replaced = match &entry.waker {
                Some(known) if known.will_wake(waker) => None,
                _ => entry.waker.replace(waker.clone()),
            };
            (!std::mem::replace(&mut table.sweeping, true), replaced)
        });
        // Dropped outside the borrow: the last reference to a task drops
        // its future, whose waits free their slots.
        drop(replaced);
        if start {
            monoio::spawn(sweep());
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let Some(index) = self.0 else {
            return;
        };
        // Not while the thread is torn down (the table may be gone).
        let _ = TABLE.try_with(|table| {
            let mut table = table.borrow_mut();
            let entry = &mut table.entries[index];
            entry.when = None;
            let waker = entry.waker.take();
            table.free.push(index);
            table.used -= 1;
            drop(table);
            // Outside the borrow, as in `arm`.
            drop(waker);
        });
    }
}

/// Clears the sweeping mark when the sweeper ends, however it ends (its
/// runtime dropped too), so that a later wait starts a new one.
struct Sweeping;

impl Drop for Sweeping {
    fn drop(&mut self) {
        let _ = TABLE.try_with(|table| table.borrow_mut().sweeping = false);
    }
}

/// The sweeper: wakes every wait whose deadline has passed, then sleeps
/// until the earliest one left (within [`MIN_TICK`] and [`MAX_TICK`]);
/// ends after a pass that found nothing waiting. Each pass is bounded by
/// the table's size.
async fn sweep() {
    let _sweeping = Sweeping;
    loop {
        monoio::time::sleep(MIN_TICK).await;
        let now = Instant::now();
        // Wakers are woken outside the borrow (a woken task may run a wait
        // of its own only later, but waking is foreign code).
        let (earliest, used) = TABLE.with(|table| {
            let mut table = table.borrow_mut();
            let mut earliest: Option<Instant> = None;
            for entry in table.entries.iter_mut() {
                let Some(when) = entry.when else {
                    continue;
                };
                if when <= now {
                    // Woken once: the wait ends at its next poll, and
                    // re-arms (a later deadline) if it does not.
                    entry.when = None;
                    if let Some(waker) = &entry.waker {
                        waker.wake_by_ref();
                    }
                } else {
                    earliest = Some(earliest.map_or(when, |earliest| earliest.min(when)));
                }
            }
            (earliest, table.used)
        });
        if used == 0 {
            return;
        }
        // Until the earliest deadline, MIN_TICK of which was slept above.
        let pause = earliest.map_or(MAX_TICK, |earliest| earliest.saturating_duration_since(now));
        let rest = pause.clamp(MIN_TICK, MAX_TICK) - MIN_TICK;
        if !rest.is_zero() {
            monoio::time::sleep(rest).await;
        }
    }
}

/// Timed waits in progress on this thread, for tests.
#[cfg(test)]
pub(crate) fn in_use() -> usize {
    TABLE.with(|table| table.borrow().used)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::pin::pin;

    use super::*;

    fn runtime() -> monoio::Runtime<monoio::time::TimeDriver<monoio::LegacyDriver>> {
        monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .expect("a runtime")
    }

    /// A future that never ends is ended by its deadline, not before it,
    /// and not much later; its slot is freed.
    #[test]
    fn a_deadline_ends_a_wait() {
        runtime().block_on(async {
            let wait = Duration::from_millis(60);
            let start = Instant::now();
            let outcome = timeout(wait, pin!(std::future::pending::<()>())).await;
            let took = start.elapsed();
            assert_eq!(outcome, Err(Elapsed));
            assert!(took >= wait, "{took:?}");
            assert_eq!(in_use(), 0);
        });
    }

    /// A future that ends first gives its output and frees its slot;
    /// many waits at once, with different deadlines, each end by their
    /// own.
    #[test]
    fn waits_end_by_their_own_deadline() {
        runtime().block_on(async {
            let ready = timeout(Duration::from_secs(10), pin!(async { 7 })).await;
            assert_eq!(ready, Ok(7));
            let never = pin!(std::future::pending::<()>());
            let short = timeout(Duration::from_millis(30), never);
            let long = pin!(async {
                monoio::time::sleep(Duration::from_millis(80)).await;
                1
            });
            let long = timeout(Duration::from_secs(30), long);
            let (short, long) = monoio::join!(short, long);
            assert_eq!(short, Err(Elapsed));
            assert_eq!(long, Ok(1));
            assert_eq!(in_use(), 0);
        });
    }

    /// A wait dropped unfinished (its connection closed) frees its slot,
    /// and the slot is reused.
    #[test]
    fn a_dropped_wait_frees_its_slot() {
        runtime().block_on(async {
            {
                let never = pin!(std::future::pending::<()>());
                let wait = timeout(Duration::from_secs(30), never);
                let mut wait = pin!(wait);
                let polled = poll_fn(|cx| Poll::Ready(wait.as_mut().poll(cx).is_pending())).await;
                assert!(polled);
                assert_eq!(in_use(), 1);
            }
            assert_eq!(in_use(), 0);
            let outcome = timeout(
                Duration::from_millis(20),
                pin!(std::future::pending::<()>()),
            )
            .await;
            assert_eq!(outcome, Err(Elapsed));
            TABLE.with(|table| assert_eq!(table.borrow().entries.len(), 1, "slot reused"));
        });
    }
}
