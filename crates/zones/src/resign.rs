//! When each signed zone must be signed again (issue 24; docs/decisions/0014):
//! a timer per zone in a heap, on a thread of its own (`tern-resign`), off
//! the cores.
//!
//! The owner ([`crate::owner::Zones`]) enters a zone's time when a signed
//! version of it is served: when its first signature is due for refresh
//! (its expiration less the policy's `rrsig-refresh`, less its share of
//! `rrsig-jitter`: [`crate::signing::next_resign`]). When that time comes
//! the thread asks for the zone to be loaded and signed again, only the
//! signatures due then and soon after made anew, one batch (the binary
//! queues a `tern reload ZONE` on the reload thread, so the previous
//! version serves on if it fails), and
//! sets the zone's timer to retry after [`RETRY_FIRST`], doubling up to
//! [`RETRY_MAX`]: a new version replaces that time with its own. One
//! zone's timer costs a hash look-up and a heap operation; nothing walks
//! every zone.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tern_wire::name::{LowerNameBuf, Name};

use crate::load::Origin;

/// How long after asking for a re-signing that has not brought a new
/// version (it failed, or still runs) it is asked for again, the first
/// time; each further time waits twice as long, up to [`RETRY_MAX`].
pub const RETRY_FIRST: u64 = 30;

/// The longest wait between two attempts to re-sign a zone.
pub const RETRY_MAX: u64 = 3600;

/// The longest the thread sleeps without looking at the clock again (a
/// clock set forward is noticed within it).
const MAX_SLEEP: Duration = Duration::from_secs(60);

/// A zone's timer: when it is due, and how many times it was asked for
/// since its last signed version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Timer {
    at: u64,
    attempts: u32,
}

/// The zones' timers, and a heap of them; an entry of the heap whose time
/// no longer matches its zone's is stale and skipped.
#[derive(Default)]
struct Table {
    timers: HashMap<Origin, Timer>,
    heap: BinaryHeap<Reverse<(u64, Origin)>>,
    stopped: bool,
}

impl Table {
    /// The zone due first, if due at `now`, taken off the heap and set to
    /// be retried; its name and how many times it was asked for.
    fn pop_due(&mut self, now: u64) -> Option<(Origin, u32)> {
        while let Some(Reverse((at, origin))) = self.heap.peek() {
            let current = self.timers.get(origin).is_some_and(|timer| timer.at == *at);
            if !current {
                self.heap.pop();
                continue;
            }
            if *at > now {
                return None;
            }
            let Reverse((_, origin)) = self.heap.pop()?;
            let timer = self.timers.get_mut(&origin)?;
            timer.attempts = timer.attempts.saturating_add(1);
            timer.at = now.saturating_add(retry_after(timer.attempts));
            self.heap.push(Reverse((timer.at, origin.clone())));
            return Some((origin, timer.attempts));
        }
        None
    }

    /// When the first zone is due, dropping stale entries.
    fn next_due(&mut self) -> Option<u64> {
        while let Some(Reverse((at, origin))) = self.heap.peek() {
            if self.timers.get(origin).is_some_and(|timer| timer.at == *at) {
                return Some(*at);
            }
            self.heap.pop();
        }
        None
    }
}

/// The wait before asking again, after `attempts` asks without a new
/// version: [`RETRY_FIRST`], doubled each time, at most [`RETRY_MAX`].
fn retry_after(attempts: u32) -> u64 {
    let doublings = attempts.saturating_sub(1).min(16);
    (RETRY_FIRST << doublings).min(RETRY_MAX)
}

type Shared = Arc<(Mutex<Table>, Condvar)>;

/// The signed zones' timers, kept by the owner; the thread that acts on
/// them is started by [`Resigner::start`] and ends when this is dropped.
#[derive(Default)]
pub(crate) struct Resigner {
    shared: Shared,
}

impl Resigner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        lock(&self.shared)
    }

    /// The zone `origin` (lowercased wire form) is to be signed again at
    /// Unix time `at`: a new signed version replaces its timer.
    pub(crate) fn schedule(&self, origin: &[u8], at: u64) {
        let mut table = self.lock();
        let timer = Timer { at, attempts: 0 };
        if table.timers.insert(origin.into(), timer) == Some(timer) {
            return;
        }
        table.heap.push(Reverse((at, origin.into())));
        self.shared.1.notify_one();
    }

    /// The zone `origin` is no longer signed (or served): no timer.
    pub(crate) fn cancel(&self, origin: &[u8]) {
        // Its heap entry goes stale.
        self.lock().timers.remove(origin);
    }

    /// Starts the thread that calls `on_due` with each zone when its time
    /// comes (at most once per [`RETRY_FIRST`] and more for one zone).
    pub(crate) fn start(&self, on_due: Box<dyn Fn(LowerNameBuf) + Send>) -> std::io::Result<()> {
        let shared = Arc::clone(&self.shared);
        std::thread::Builder::new()
            .name("tern-resign".into())
            .spawn(move || run(&shared, &*on_due))
            .map(drop)
    }
}

impl Drop for Resigner {
    fn drop(&mut self) {
        self.lock().stopped = true;
        self.shared.1.notify_one();
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Table> {
    // Every change to the table is whole: go on after a panic.
    shared
        .0
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The thread: sleeps until the first zone is due (or a timer changes),
/// then hands each due zone to `on_due`, outside the lock.
fn run(shared: &Shared, on_due: &dyn Fn(LowerNameBuf)) {
    let mut table = lock(shared);
    loop {
        if table.stopped {
            return;
        }
        let now = crate::unix_time();
        if let Some((origin, attempts)) = table.pop_due(now) {
            drop(table);
            if let Some(name) = Name::from_wire(&origin).ok().map(LowerNameBuf::from_name) {
                if attempts == 1 {
                    log::info!(
                        "zone {}: its signatures near expiry; signing it again",
                        name.as_name()
                    );
                } else {
                    log::warn!(
                        "zone {}: not signed again yet (attempt {attempts}; see the errors \
                         logged for it); trying again, next in {} s",
                        name.as_name(),
                        retry_after(attempts)
                    );
                }
                on_due(name);
            }
            table = lock(shared);
            continue;
        }
        let sleep = table
            .next_due()
            .map_or(MAX_SLEEP, |at| Duration::from_secs(at.saturating_sub(now)))
            .clamp(Duration::from_millis(100), MAX_SLEEP);
        table = shared
            .1
            .wait_timeout(table, sleep)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Due zones come off in time order, once each until retried after the
    /// back-off; a new time replaces the old; a cancelled zone never comes.
    #[test]
    fn timers_in_time_order_with_back_off() {
        let mut table = Table::default();
        let resigner = Resigner::default();
        for (origin, at) in [
            (&b"\x01a\x00"[..], 30),
            (b"\x01b\x00", 10),
            (b"\x01c\x00", 20),
        ] {
            resigner.schedule(origin, at);
        }
        resigner.schedule(b"\x01c\x00", 40);
        resigner.cancel(b"\x01a\x00");
        std::mem::swap(&mut table, &mut *resigner.lock());
        assert_eq!(table.pop_due(5), None);
        assert_eq!(table.pop_due(50), Some((b"\x01b\x00"[..].into(), 1)));
        assert_eq!(table.pop_due(50), Some((b"\x01c\x00"[..].into(), 1)));
        assert_eq!(table.pop_due(50), None, "a is cancelled, b and c wait");
        assert_eq!(table.next_due(), Some(50 + RETRY_FIRST));
        assert_eq!(
            table.pop_due(50 + RETRY_FIRST),
            Some((b"\x01b\x00"[..].into(), 2))
        );
        assert_eq!(retry_after(2), 2 * RETRY_FIRST);
        assert_eq!(retry_after(40), RETRY_MAX);
    }
}
