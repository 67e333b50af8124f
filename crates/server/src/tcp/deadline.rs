//! The core's one-off timed waits: connection timeouts without a timer per
//! connection (issue 26: 10,000 idle TLS connections in 100 MiB), and
//! every other wait that is not a loop's own timer ([`sleep`]: back-offs,
//! the shutdown's polls; [`timeout`]: the forwarder's TCP attempt, the
//! shutdown's grace), each noticed up to [`MIN_TICK`] late.
//!
//! monoio's `Sleep` is 640 octets (a timer-wheel entry whose fields are
//! cache-padded to 128 octets), and it makes every future holding it
//! 128-aligned; a connection held one per half (the read's timeout, the
//! write's), 1,280 octets of every open connection's task, idle or not,
//! plus the padding the alignment costs around them. Here a timeout is a
//! slot in a table of the core's own (a deadline and a waker, a few dozen
//! octets, taken when the timed future first waits and freed when it ends),
//! and one task per core, the *sweeper*, sleeps on a single timer (the
//! core's [`Timer`], a timerfd: the core's runtime has no timer wheel, see
//! [`crate::timer`]) and wakes the futures whose deadline has passed.
//!
//! Precision and wake-ups: the sweeper sleeps until the earliest deadline
//! it knows of (its *target*), and a wait whose deadline is earlier than
//! that target wakes it to sleep towards the new one instead; a later
//! deadline (a connection's next read, timed from now: the common case)
//! costs the sweeper nothing. So a core whose connections are busy or idle
//! sees one pass per deadline that actually passes, not a pass every few
//! milliseconds. Two passes are at least [`MIN_TICK`] apart (a deadline is
//! noticed up to that late), so a pass, which scans the table (one entry
//! per timed wait in progress: at most two per open connection), costs at
//! most the connection limit per [`MIN_TICK`].
//!
//! Core-local (a thread-local table, as the buffer pool is): no locks, and
//! the sweeper runs on the core whose connections it times. No allocation
//! per wait once the table has grown to the most waits at once.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use crate::timer::Timer;

/// The shortest pause between two passes of the sweeper: how late a
/// deadline may be noticed.
const MIN_TICK: Duration = Duration::from_millis(10);

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
    /// The sweeper is asked to end ([`stop_sweeper`]).
    stopping: bool,
    /// Who waits in [`stop_sweeper`] for the sweeper to end.
    stopper: Option<Waker>,
    /// Set by [`stop_sweeper`] (cleared by [`install_timer`]): every timed
    /// wait is elapsed at its first poll and none starts a sweeper, so that
    /// a task woken by the stop that waits again cannot start a new one
    /// for `stop_sweeper` to wait for.
    closed: bool,
    /// When the sweeper's next pass comes: the earliest deadline it knew
    /// of, but not before [`MIN_TICK`] after its last pass (`not_before`).
    /// `None` while it is not asleep (running a pass, or not running).
    target: Option<Instant>,
    /// [`MIN_TICK`] after the sweeper's last pass.
    not_before: Option<Instant>,
    /// The sleeping sweeper, woken by a wait whose deadline is earlier
    /// than `target`.
    sweeper: Option<Waker>,
    /// The sweeper's passes so far on this thread (tests count them).
    passes: u64,
}

thread_local! {
    /// The core's timer, for its sweeper ([`install_timer`]).
    static CORE_TIMER: RefCell<Option<Rc<Timer>>> = const { RefCell::new(None) };
}

thread_local! {
    static TABLE: RefCell<Table> = const {
        RefCell::new(Table {
            entries: Vec::new(),
            free: Vec::new(),
            used: 0,
            sweeping: false,
            stopping: false,
            stopper: None,
            closed: false,
            target: None,
            not_before: None,
            sweeper: None,
            passes: 0,
        })
    };
}

/// Runs `future` for at most `wait`: its output, or [`Elapsed`] if the
/// deadline passed first (the caller then drops the future, which cancels
/// its I/O). As `monoio::time::timeout`, without a timer of its own: a few
/// octets in the caller's future instead of 640. `future` is pinned by the
/// caller (`pin!`) and lent: moved in, it would be held twice, the argument
/// and the pinned local (the generator does not overlap them). Must run
/// inside a monoio runtime (the sweeper's, whose timer it waits on).
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
    // Polled again and again while it waits (its task is woken for its
    // other futures too: a connection's write half): after the first
    // poll, a glance at its slot, no clock read. (`wait` is not read in
    // here: held across the await, it would grow every connection's task.)
    poll_fn(|cx| {
        if let Poll::Ready(output) = Pin::new(&mut future).poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let elapsed = match slot.0 {
            None if Instant::now() >= when => true,
            // Not armed once the sweeper is stopped for good.
            None => !slot.arm(when, cx.waker()),
            Some(_) => slot.passed(cx.waker()),
        };
        if elapsed {
            Poll::Ready(Err(Elapsed))
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Waits for `wait` (noticed up to [`MIN_TICK`] late): a slot of the
/// core's table, no timer of its own. For the rare waits (a back-off after
/// an error, the shutdown's polls).
pub(crate) async fn sleep(wait: Duration) {
    let _ = timeout(wait, std::pin::pin!(std::future::pending::<()>())).await;
}

/// A slot of the table held by a timed wait, freed when it ends or is
/// dropped.
struct Slot(Option<usize>);

impl Slot {
    /// Records `when` and `waker` in the slot, taking one on the first call
    /// (and starting the sweeper if it does not run, or waking it if it
    /// sleeps towards a later pass than `when`). `false`, and nothing
    /// recorded, once [`stop_sweeper`] has closed the table.
    fn arm(&mut self, when: Instant, waker: &Waker) -> bool {
        let armed = TABLE.with(|table| {
            let mut table = table.borrow_mut();
            if table.closed {
                return None;
            }
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
            // An earlier deadline than the sleeping sweeper's next pass
            // (never earlier than `not_before`: passes stay MIN_TICK apart).
            let sweeper = match table.target {
                Some(target) if when < target => {
                    let sooner = table
                        .not_before
                        .map_or(when, |not_before| when.max(not_before));
                    if sooner < target {
                        table.target = Some(sooner);
                        table.sweeper.take()
                    } else {
                        None
                    }
                }
                _ => None,
            };
            Some((
                !std::mem::replace(&mut table.sweeping, true),
                replaced,
                sweeper,
            ))
        });
        let Some((start, replaced, sweeper)) = armed else {
            return false;
        };
        // Dropped and woken outside the borrow: the last reference to a
        // task drops its future, whose waits free their slots.
        drop(replaced);
        if let Some(sweeper) = sweeper {
            sweeper.wake();
        }
        if start {
            monoio::spawn(sweep());
        }
        true
    }

    /// Whether the sweeper found the armed slot's deadline passed; if not,
    /// the slot's waker is `waker` from now on.
    fn passed(&mut self, waker: &Waker) -> bool {
        let Some(index) = self.0 else {
            return false;
        };
        let (passed, replaced) = TABLE.with(|table| {
            let mut table = table.borrow_mut();
            let entry = &mut table.entries[index];
            if entry.when.is_none() {
                return (true, None);
            }
            let replaced = match &entry.waker {
                Some(known) if known.will_wake(waker) => None,
                _ => entry.waker.replace(waker.clone()),
            };
            (false, replaced)
        });
        // Outside the borrow, as in `arm`.
        drop(replaced);
        passed
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
        let _ = TABLE.try_with(|table| {
            let mut table = table.borrow_mut();
            table.sweeping = false;
            table.stopping = false;
            table.target = None;
            table.not_before = None;
            let sweeper = table.sweeper.take();
            let stopper = table.stopper.take();
            drop(table);
            drop(sweeper);
            if let Some(stopper) = stopper {
                stopper.wake();
            }
        });
    }
}

/// The sweeper: wakes every wait whose deadline has passed, then sleeps
/// until the earliest one left (its target, at least [`MIN_TICK`] after
/// the pass), or until a new wait moves that target earlier; ends after a
/// pass that found nothing waiting. Each pass is bounded by the table's
/// size.
async fn sweep() {
    let _sweeping = Sweeping;
    let Some(timer) = sweeper_timer() else {
        // No descriptor for a timer (outside a core, which has its own
        // from its start): every wait ends now rather than never.
        elapse_all();
        return;
    };
    // The first pass: MIN_TICK after the first wait started it.
    let mut target = Instant::now() + MIN_TICK;
    if timer.set(target).is_err() {
        // Not expected: every wait ends now rather than never (a timer
        // not set would not wake the sweeper).
        elapse_all();
        return;
    }
    TABLE.with(|table| table.borrow_mut().target = Some(target));
    loop {
        let mut sleep = std::pin::pin!(timer.wait());
        // Sleeps until the target, or until a wait moved it earlier (the
        // waker registered here each time: the arm that moves the target
        // takes it), or until asked to end, or until its timer fails (not
        // expected: the sweeper then ends every wait and itself rather
        // than spin or sleep for ever).
        let stopping = poll_fn(|cx| {
            let (moved, stopping) = TABLE.with(|table| {
                let mut table = table.borrow_mut();
                if table.stopping {
                    return (None, true);
                }
                let replace = match &table.sweeper {
                    Some(known) => !known.will_wake(cx.waker()),
                    None => true,
                };
                if replace {
                    table.sweeper = Some(cx.waker().clone());
                }
                (table.target.filter(|&moved| moved != target), false)
            });
            if stopping {
                return Poll::Ready(true);
            }
            if let Some(moved) = moved {
                target = moved;
                // The wait in progress waits for the new time.
                if timer.set(target).is_err() {
                    return Poll::Ready(true);
                }
            }
            sleep.as_mut().poll(cx).map(|waited| waited.is_err())
        })
        .await;
        if stopping {
            elapse_all();
            return;
        }
        let now = Instant::now();
        // Wakers are woken outside the borrow (a woken task may run a wait
        // of its own only later, but waking is foreign code).
        let (earliest, used) = TABLE.with(|table| {
            let mut table = table.borrow_mut();
            table.passes += 1;
            let mut earliest: Option<Instant> = None;
            for entry in table.entries.iter_mut() {
                let Some(when) = entry.when else {
                    continue;
                };
                if when <= now {
                    // Woken once: the wait ends at its next poll
                    // (`Slot::passed`).
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
        // A slot in use whose wait is being woken has no deadline until it
        // re-arms (which moves the target earlier if it must): until
        // then, the earliest known, or a pass MIN_TICK from now.
        let not_before = now + MIN_TICK;
        target = earliest.map_or(not_before, |earliest| earliest.max(not_before));
        if timer.set(target).is_err() {
            elapse_all();
            return;
        }
        TABLE.with(|table| {
            let mut table = table.borrow_mut();
            table.target = Some(target);
            table.not_before = Some(not_before);
        });
    }
}

/// The timer the sweeper sleeps on: the core's (installed for its life by
/// [`install_timer`]), else one of its own for this run of the sweeper;
/// `None` if no descriptor is to be had.
fn sweeper_timer() -> Option<Rc<Timer>> {
    CORE_TIMER
        .with(|timer| timer.borrow().clone())
        .or_else(|| Timer::new().ok().map(Rc::new))
}

/// Ends every timed wait of the table (each as elapsed, at its next poll).
fn elapse_all() {
    let wakers: Vec<Waker> = TABLE.with(|table| {
        let mut table = table.borrow_mut();
        let mut wakers = Vec::new();
        for entry in table.entries.iter_mut() {
            if entry.when.take().is_some() {
                wakers.extend(entry.waker.clone());
            }
        }
        wakers
    });
    for waker in wakers {
        waker.wake();
    }
}

/// Ends this thread's sweeper, if it runs, and with it every timed wait
/// left (each as elapsed), and returns once it has ended: a core that
/// stops calls it last, inside its runtime. A sweeper left asleep would
/// keep the runtime's io_uring alive (the ring holds the waker of its
/// timer's poll, the sweeper's task, which holds the ring), and with it
/// the sockets the ring was to close (the test
/// `runtime::shutdown_finishes_within_two_seconds`).
///
/// It closes the table too, until [`install_timer`] (the core's end): a
/// timed wait started since is elapsed at once and starts no sweeper. So
/// the wait is bounded by the sweeper's next poll, even when a task that
/// its stop woke waits again at once.
pub(crate) async fn stop_sweeper() {
    let sweeper = TABLE.with(|table| {
        let mut table = table.borrow_mut();
        table.closed = true;
        if table.sweeping {
            table.stopping = true;
        }
        table.sweeper.take()
    });
    if let Some(sweeper) = sweeper {
        sweeper.wake();
    }
    // The woken sweeper ends at its next poll (the first thing it checks),
    // and wakes this wait as it ends.
    poll_fn(|cx| {
        TABLE.with(|table| {
            let mut table = table.borrow_mut();
            if !table.sweeping {
                return Poll::Ready(());
            }
            table.stopper = Some(cx.waker().clone());
            Poll::Pending
        })
    })
    .await;
}

/// Makes `timer` the one the sweeper of this thread sleeps on, from its
/// next start (`None`: none). A core installs one when it starts, so that
/// the waits of its connections, and its back-offs, never lack a timer
/// (a descriptor made at each start of the sweeper could fail when
/// descriptors run out: just when an accept loop backs off), and removes
/// it when it ends, before its runtime goes. Either opens the table that
/// [`stop_sweeper`] closed.
pub(crate) fn install_timer(timer: Option<Rc<Timer>>) {
    TABLE.with(|table| table.borrow_mut().closed = false);
    let previous = CORE_TIMER.with(|slot| slot.replace(timer));
    drop(previous);
}

/// Timed waits in progress on this thread, for tests.
#[cfg(test)]
pub(crate) fn in_use() -> usize {
    TABLE.with(|table| table.borrow().used)
}

/// The sweeper's passes so far on this thread, for tests.
#[cfg(test)]
fn passes() -> u64 {
    TABLE.with(|table| table.borrow().passes)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::pin::pin;

    use super::*;
    // Without monoio's timers, as a core's runtime (`cores::run`): the
    // sweeper sleeps on a timerfd of its own.
    use crate::timer::testing::{on_both_drivers, runtime};

    /// A pause that is not a timed wait of the table (so that it does not
    /// move the sweeper).
    async fn pause(wait: Duration) {
        let timer = Timer::new().expect("a timerfd");
        timer.sleep(wait).await.expect("the timer set");
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
                pause(Duration::from_millis(80)).await;
                1
            });
            let long = timeout(Duration::from_secs(30), long);
            let (short, long) = monoio::join!(short, long);
            assert_eq!(short, Err(Elapsed));
            assert_eq!(long, Ok(1));
            assert_eq!(in_use(), 0);
        });
    }

    /// While only a long wait is pending, the sweeper sleeps towards its
    /// deadline instead of passing every few milliseconds (it did every
    /// 25 ms: 8 passes in the 200 ms watched here); a shorter wait started
    /// meanwhile wakes it to sleep towards the shorter deadline, which
    /// then ends that wait in time. (The 200 ms are the interval whose
    /// passes are counted, not a wait for an event.)
    #[test]
    fn the_sweeper_sleeps_until_the_earliest_deadline() {
        runtime().block_on(async {
            let long = monoio::spawn(async {
                timeout(Duration::from_secs(30), pin!(std::future::pending::<()>())).await
            });
            pause(Duration::from_millis(200)).await;
            assert_eq!(in_use(), 1, "the long wait started");
            let before = passes();
            assert!(
                before <= 1,
                "{before} passes while only a 30 s wait was pending"
            );
            let start = Instant::now();
            let wait = Duration::from_millis(40);
            let short = timeout(wait, pin!(std::future::pending::<()>())).await;
            let took = start.elapsed();
            assert_eq!(short, Err(Elapsed));
            assert!(took >= wait, "{took:?}");
            assert!(took < Duration::from_secs(5), "{took:?}");
            let passes = passes() - before;
            assert!(passes <= 2, "{passes} passes for one 40 ms wait");
            drop(long);
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

    /// The timed waits a core's tasks use end in a runtime without
    /// monoio's timers (as a core's): a sleep and a timeout of the table,
    /// whose sweeper sleeps on a timerfd (it slept on monoio's timer, which
    /// panics here), with the core's timer installed and without; a
    /// stopped sweeper ends, and once the table is open again the next
    /// wait starts another.
    async fn timed_waits() {
        sleep(Duration::from_millis(1)).await;
        let outcome = timeout(Duration::from_millis(1), pin!(std::future::pending::<()>())).await;
        assert_eq!(outcome, Err(Elapsed));
        install_timer(Some(Rc::new(Timer::new().expect("a timerfd"))));
        sleep(Duration::from_millis(1)).await;
        let long = monoio::spawn(async {
            timeout(Duration::from_secs(30), pin!(std::future::pending::<()>())).await
        });
        pause(Duration::from_millis(20)).await;
        assert!(TABLE.with(|table| table.borrow().sweeping));
        stop_sweeper().await;
        assert!(!TABLE.with(|table| table.borrow().sweeping));
        assert_eq!(long.await, Err(Elapsed), "ended by the sweeper's stop");
        install_timer(None);
        sleep(Duration::from_millis(1)).await;
        // Stopped, so that the next runtime on this thread starts afresh.
        stop_sweeper().await;
        install_timer(None);
    }

    #[test]
    fn timed_waits_end_without_monoio_timers() {
        on_both_drivers(timed_waits);
    }

    /// A task that the sweeper's stop wakes (its wait elapsed) and that
    /// waits again at once starts no new sweeper for `stop_sweeper` to
    /// wait for: the stop ends (it waited for the new sweeper, up to the
    /// 30 s of the new wait), and the waits started after it end at once.
    /// Bounded by another timer: fails after ten seconds, does not hang.
    async fn rearm_during_stop() {
        install_timer(Some(Rc::new(Timer::new().expect("a timerfd"))));
        let waits = Rc::new(std::cell::Cell::new(0u32));
        let again = monoio::spawn({
            let waits = Rc::clone(&waits);
            async move {
                for _ in 0..3 {
                    let never = pin!(std::future::pending::<()>());
                    assert_eq!(timeout(Duration::from_secs(30), never).await, Err(Elapsed));
                    waits.set(waits.get() + 1);
                }
            }
        });
        pause(Duration::from_millis(20)).await;
        assert_eq!(in_use(), 1, "the first wait started");
        let bound = Timer::new().expect("a timerfd");
        let stopped = bound.within(Duration::from_secs(10), stop_sweeper()).await;
        assert!(
            stopped.expect("the bound's timer").is_some(),
            "stop_sweeper hung"
        );
        let ended = bound.within(Duration::from_secs(10), again).await;
        assert!(
            ended.expect("the bound's timer").is_some(),
            "waits not ended"
        );
        assert_eq!(waits.get(), 3);
        assert!(!TABLE.with(|table| table.borrow().sweeping));
        assert_eq!(in_use(), 0);
        install_timer(None);
    }

    #[test]
    fn a_task_waiting_again_during_the_stop_starts_no_sweeper() {
        on_both_drivers(rearm_during_stop);
    }
}
