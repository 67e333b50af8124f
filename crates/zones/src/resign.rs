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
//!
//! A key rollover's next step ([`crate::rollover`]) is the same timer:
//! the owner enters the earlier of the two times, and the signing at that
//! time takes the step. A zone whose new KSK or CSK awaits its DS at the
//! parent, with `parent.servers` in its policy, also has a parent check
//! here: every `parent.check-interval` the thread asks those servers
//! ([`crate::parent`]; each bounded by its timeout, off the cores) and,
//! once all of them show the DS, records it and asks for the zone to be
//! signed again (its next step is planned then).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tern_wire::name::{LowerNameBuf, Name};

use crate::load::Origin;
use crate::rollover::ZoneKeys;

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
    /// The time is a key rollover's step (for the log).
    key_step: bool,
}

/// A zone's parent check: when, and the zone's keys.
#[derive(Clone)]
struct Check {
    at: u64,
    keys: Arc<ZoneKeys>,
}

/// The zones' timers, and a heap of them; an entry of the heap whose time
/// no longer matches its zone's is stale and skipped. The parent checks
/// likewise.
#[derive(Default)]
struct Table {
    timers: HashMap<Origin, Timer>,
    heap: BinaryHeap<Reverse<(u64, Origin)>>,
    checks: HashMap<Origin, Check>,
    check_heap: BinaryHeap<Reverse<(u64, Origin)>>,
    stopped: bool,
}

impl Table {
    /// The zone whose parent check is due first, if due at `now`, taken
    /// off the heap (its next check is entered after it ran).
    fn pop_check(&mut self, now: u64) -> Option<(Origin, Arc<ZoneKeys>)> {
        while let Some(Reverse((at, origin))) = self.check_heap.peek() {
            let current = self.checks.get(origin).is_some_and(|check| check.at == *at);
            if !current {
                self.check_heap.pop();
                continue;
            }
            if *at > now {
                return None;
            }
            let Reverse((_, origin)) = self.check_heap.pop()?;
            let keys = Arc::clone(&self.checks.get(&origin)?.keys);
            return Some((origin, keys));
        }
        None
    }

    /// When the first parent check is due, dropping stale entries.
    fn next_check(&mut self) -> Option<u64> {
        while let Some(Reverse((at, origin))) = self.check_heap.peek() {
            if self.checks.get(origin).is_some_and(|check| check.at == *at) {
                return Some(*at);
            }
            self.check_heap.pop();
        }
        None
    }

    /// Enters the zone's next parent check at `at`, if it still awaits one
    /// (with the keys its latest version left).
    fn recheck(&mut self, origin: &Origin, at: u64) {
        if let Some(check) = self.checks.get_mut(origin) {
            check.at = at;
            self.check_heap.push(Reverse((at, origin.clone())));
        }
    }

    /// The zone due first, if due at `now`, taken off the heap and set to
    /// be retried; its name, how many times it was asked for and whether
    /// for a key step.
    fn pop_due(&mut self, now: u64) -> Option<(Origin, u32, bool)> {
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
            crate::sign_status::set_next_resign(&origin, timer.at);
            self.heap.push(Reverse((timer.at, origin.clone())));
            return Some((origin, timer.attempts, timer.key_step));
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
    /// Unix time `at` (for a key step, with `key_step`): a new signed
    /// version replaces its timer.
    pub(crate) fn schedule(&self, origin: &[u8], at: u64, key_step: bool) {
        let mut table = self.lock();
        let timer = Timer {
            at,
            attempts: 0,
            key_step,
        };
        crate::sign_status::set_next_resign(origin, at);
        if table.timers.insert(origin.into(), timer) == Some(timer) {
            return;
        }
        table.heap.push(Reverse((at, origin.into())));
        self.shared.1.notify_one();
    }

    /// A signing of the zone `origin` failed outside its timer (a version
    /// received): it is tried again after the back-off of its attempts so
    /// far, or at its own time if that is sooner.
    pub(crate) fn retry(&self, origin: &[u8]) {
        let now = crate::unix_time();
        let mut table = self.lock();
        let timer = table.timers.entry(origin.into()).or_insert(Timer {
            at: u64::MAX,
            attempts: 0,
            key_step: false,
        });
        timer.attempts = timer.attempts.saturating_add(1);
        timer.at = timer
            .at
            .min(now.saturating_add(retry_after(timer.attempts)));
        let at = timer.at;
        table.heap.push(Reverse((at, origin.into())));
        self.shared.1.notify_one();
    }

    /// The zone `origin`'s keys as its new signed version left them: a
    /// parent check is kept (or entered, due now) while a DS is awaited
    /// and the policy names the parent's servers, and dropped otherwise.
    pub(crate) fn watch_parent(&self, origin: &[u8], keys: Option<&Arc<ZoneKeys>>) {
        let mut table = self.lock();
        let wanted = keys.filter(|keys| {
            keys.awaiting_ds
                && keys
                    .policy
                    .parent
                    .as_ref()
                    .is_some_and(|parent| !parent.servers.is_empty())
        });
        let Some(keys) = wanted else {
            table.checks.remove(origin);
            return;
        };
        if let Some(check) = table.checks.get_mut(origin) {
            check.keys = Arc::clone(keys);
            return;
        }
        let at = crate::unix_time();
        table.checks.insert(
            origin.into(),
            Check {
                at,
                keys: Arc::clone(keys),
            },
        );
        table.check_heap.push(Reverse((at, origin.into())));
        self.shared.1.notify_one();
    }

    /// The zone `origin` is no longer signed (or served): no timer.
    pub(crate) fn cancel(&self, origin: &[u8]) {
        // Its heap entries go stale.
        let mut table = self.lock();
        table.timers.remove(origin);
        table.checks.remove(origin);
        crate::sign_status::forget(origin);
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
        if let Some((origin, keys)) = table.pop_check(now) {
            drop(table);
            let servers = keys
                .policy
                .parent
                .as_ref()
                .map_or(&[][..], |parent| &parent.servers[..]);
            let seen = crate::parent::check(&keys.dir, keys.origin.as_name(), servers, now);
            let interval = keys
                .policy
                .parent
                .as_ref()
                .map_or(RETRY_MAX, |parent| parent.check_interval.max(1));
            if seen.is_empty() {
                crate::sign_status::ds_not_seen(&origin, crate::unix_time());
            }
            table = lock(shared);
            // Checked again after the interval, unless the new version
            // signed for what was seen drops the check.
            table.recheck(&origin, crate::unix_time().saturating_add(interval));
            if !seen.is_empty() {
                drop(table);
                if let Some(name) = Name::from_wire(&origin).ok().map(LowerNameBuf::from_name) {
                    on_due(name);
                }
                table = lock(shared);
            }
            continue;
        }
        if let Some((origin, attempts, key_step)) = table.pop_due(now) {
            drop(table);
            if let Some(name) = Name::from_wire(&origin).ok().map(LowerNameBuf::from_name) {
                if attempts == 1 && key_step {
                    log::info!(
                        "zone {}: a key rollover step is due; signing it again",
                        name.as_name()
                    );
                } else if attempts == 1 {
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
        let next = match (table.next_due(), table.next_check()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let sleep = next
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
            resigner.schedule(origin, at, false);
        }
        resigner.schedule(b"\x01c\x00", 40, true);
        resigner.cancel(b"\x01a\x00");
        std::mem::swap(&mut table, &mut *resigner.lock());
        assert_eq!(table.pop_due(5), None);
        assert_eq!(table.pop_due(50), Some((b"\x01b\x00"[..].into(), 1, false)));
        assert_eq!(table.pop_due(50), Some((b"\x01c\x00"[..].into(), 1, true)));
        assert_eq!(table.pop_due(50), None, "a is cancelled, b and c wait");
        assert_eq!(table.next_due(), Some(50 + RETRY_FIRST));
        assert_eq!(
            table.pop_due(50 + RETRY_FIRST),
            Some((b"\x01b\x00"[..].into(), 2, false))
        );
        assert_eq!(retry_after(2), 2 * RETRY_FIRST);
        assert_eq!(retry_after(40), RETRY_MAX);
    }

    /// A parent check is entered (due now) only for a zone awaiting a DS
    /// whose policy names the parent's servers; it is kept, with the
    /// keys of the latest version, until a version awaits none; the next
    /// check is entered after one ran; a cancelled zone has none.
    #[test]
    fn parent_checks_follow_the_awaited_ds() {
        let keys = |awaiting_ds: bool, servers: bool| {
            let mut policy = crate::signing::Policy::new("p".into());
            policy.parent = Some(crate::signing::ParentCheck {
                servers: if servers {
                    vec!["127.0.0.1:53".parse().unwrap()]
                } else {
                    Vec::new()
                },
                check_interval: 5,
            });
            Arc::new(ZoneKeys {
                origin: tern_wire::name::NameBuf::from_text(b"a.", None).unwrap(),
                dir: std::path::PathBuf::from("/nonexistent"),
                policy: Arc::new(policy),
                next_event: None,
                awaiting_ds,
            })
        };
        let origin = &b"\x01a\x00"[..];
        let resigner = Resigner::default();
        resigner.watch_parent(origin, Some(&keys(false, true)));
        resigner.watch_parent(origin, Some(&keys(true, false)));
        assert!(
            resigner.lock().checks.is_empty(),
            "nothing awaited, or no servers"
        );
        resigner.watch_parent(origin, Some(&keys(true, true)));
        let mut table = Table::default();
        std::mem::swap(&mut table, &mut *resigner.lock());
        let now = crate::unix_time();
        let (due, _) = table.pop_check(now + 1).unwrap();
        assert_eq!(&*due, origin);
        assert_eq!(table.pop_check(now + 1).map(|(o, _)| o), None, "taken off");
        table.recheck(&due, now + 10);
        assert_eq!(table.next_check(), Some(now + 10));
        std::mem::swap(&mut table, &mut *resigner.lock());
        resigner.watch_parent(origin, Some(&keys(false, true)));
        assert!(resigner.lock().checks.is_empty(), "no DS awaited any more");
        resigner.watch_parent(origin, Some(&keys(true, true)));
        resigner.cancel(origin);
        assert_eq!(resigner.lock().next_check(), None);
    }
}
