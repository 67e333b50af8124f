//! The service manager's side of `tern serve`: systemd's notification
//! protocol (`sd_notify(3)`) for a `Type=notify` unit (dist/tern.service).
//!
//! - [`started`]: `READY=1` once every core answers;
//! - [`Reloading`]: `RELOADING=1` (with `MONOTONIC_USEC`, as
//!   `Type=notify-reload` expects too) when a SIGHUP reload begins, and
//!   `READY=1` when it ends, whether it succeeded or not;
//! - [`stopping`]: `STOPPING=1` when a stop begins;
//! - [`start_watchdog`]: `WATCHDOG=1` at half the `WatchdogSec=` interval,
//!   and only while every core still answers a counters round trip, so a
//!   wedged core makes systemd restart the service.
//!
//! Without `NOTIFY_SOCKET` (not started by systemd) every call does
//! nothing. A notification that cannot be sent is logged and otherwise
//! ignored: the server keeps serving either way.

use std::time::Duration;

use sd_notify::NotifyState;
use tern_server::Handle;

/// Sends `states` to the service manager, if there is one.
fn send(states: &[NotifyState]) {
    // `false`: keep NOTIFY_SOCKET, later notifications need it.
    if let Err(err) = sd_notify::notify(false, states) {
        log::warn!("cannot notify the service manager: {err}");
    }
}

/// The server has started: checks with a counters round trip that all
/// `cores` answer, then sends `READY=1` and starts the watchdog (if
/// systemd asked for one). Fails if a core does not answer.
pub(crate) fn started(handle: &Handle, cores: usize) -> anyhow::Result<()> {
    let answered = handle.stats().len();
    if answered != cores {
        anyhow::bail!("only {answered} of {cores} core(s) answered after the start");
    }
    send(&[NotifyState::Ready]);
    start_watchdog(handle.clone(), cores)
}

/// A reload in progress: [`Reloading::begin`] sends `RELOADING=1` with the
/// monotonic clock's time, and dropping it sends `READY=1`, so that every
/// way out of a reload (success or an aborted one) ends it.
pub(crate) struct Reloading(());

impl Reloading {
    /// A reload begins.
    pub(crate) fn begin() -> Reloading {
        match NotifyState::monotonic_usec_now() {
            Ok(now) => send(&[NotifyState::Reloading, now]),
            Err(err) => {
                log::warn!("cannot read the monotonic clock: {err}");
                send(&[NotifyState::Reloading]);
            }
        }
        Reloading(())
    }
}

impl Drop for Reloading {
    fn drop(&mut self) {
        send(&[NotifyState::Ready]);
    }
}

/// The server stops: `STOPPING=1`.
pub(crate) fn stopping() {
    send(&[NotifyState::Stopping]);
}

/// The interval between watchdog pings for a `WATCHDOG_USEC` of `usec`:
/// half of it, as `sd_watchdog_enabled(3)` advises; `None` for 0.
fn ping_interval(usec: u64) -> Option<Duration> {
    (usec > 0).then(|| Duration::from_micros(usec / 2).max(Duration::from_millis(1)))
}

/// If the service manager asked for a watchdog (`WatchdogSec=`, seen as
/// `WATCHDOG_USEC` and `WATCHDOG_PID`), pings it from a thread of its own
/// at half the interval, each time after all `cores` answered a counters
/// round trip through `handle`. A core that does not answer (within the
/// round trip's own one-second bound) skips the ping, and systemd restarts
/// the service when pings stay away for the whole interval.
fn start_watchdog(handle: Handle, cores: usize) -> anyhow::Result<()> {
    let mut usec = 0;
    if !sd_notify::watchdog_enabled(false, &mut usec) {
        return Ok(());
    }
    let Some(interval) = ping_interval(usec) else {
        return Ok(());
    };
    log::info!(
        "systemd watchdog: pinging every {} ms while every core answers",
        interval.as_millis()
    );
    std::thread::Builder::new()
        .name("tern-watchdog".into())
        .spawn(move || loop {
            // Bounded: one ping per interval until the process exits.
            std::thread::sleep(interval);
            let answered = handle.stats().len();
            if answered == cores {
                send(&[NotifyState::Watchdog]);
            } else {
                log::warn!("systemd watchdog: {answered} of {cores} core(s) answered; not pinging");
            }
        })
        .map(|_| ())
        .map_err(|err| anyhow::anyhow!("starting the watchdog thread: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pings_at_half_the_interval() {
        assert_eq!(ping_interval(0), None);
        assert_eq!(ping_interval(10_000_000), Some(Duration::from_secs(5)));
        assert_eq!(ping_interval(1), Some(Duration::from_millis(1)));
    }
}
