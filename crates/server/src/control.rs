//! The control path: reload, statistics and shutdown, from any thread to
//! every core, never touching the query path's data from outside.
//!
//! Each core has a mailbox (an `mpsc` channel) and a wake-up socket (one
//! end of a Unix datagram pair; the core's reactor waits on the other). A
//! [`Handle`] posts a [`Command`] in every mailbox and writes one octet to
//! every wake-up socket. The core's control task, one task among its UDP
//! and TCP loops, wakes, drains its mailbox and acts between two batches:
//! a reload swaps the catalog and empties the cache before the next batch
//! is read, so no query is dropped or answered half from each; a
//! statistics request is answered with a copy of the core's own counters,
//! made by the core itself.

use std::os::unix::net::UnixDatagram;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[cfg(doc)]
use tern_authority::Catalog;
use tern_authority::{CatalogChange, Zone};

use crate::core::Core;
use crate::stats::CoreStats;

/// How long [`Handle::stats`] waits for the cores to answer. A core
/// answers between two batches, within a millisecond or so; one that does
/// not answer within this is left out of the result rather than hanging
/// the caller.
const STATS_TIMEOUT: Duration = Duration::from_secs(1);

/// How long [`Handle::update`] waits for the cores to apply a change (a
/// core applies it between two batches).
const UPDATE_TIMEOUT: Duration = Duration::from_secs(1);

/// Wake-up datagrams are one octet; the receive buffer only has to hold
/// one.
const WAKE_BUFFER: usize = 16;

//----------- Command --------------------------------------------------------

/// The zones a core stopped serving, on their way back to the thread that
/// changed the catalog, which drops them (see [`run`]).
pub(crate) type Retired = Vec<Arc<Zone>>;

/// What a core can be asked to do.
pub(crate) enum Command {
    /// Apply these changes to the catalog (see `Worker::apply`), then say
    /// so, sending back the zones that stopped serving in the list given
    /// (made with room for one a change by the sender, so that the core
    /// neither allocates it nor frees what it held: see [`run`]).
    Update(Arc<[CatalogChange]>, Retired, SyncSender<Retired>),
    /// Send a snapshot of the counters, tagged with the core's index.
    Stats(Sender<(usize, CoreStats)>),
    /// Stop accepting, finish what is in flight, end the thread.
    Shutdown,
}

//----------- Handle ---------------------------------------------------------

/// A core's ends of its control path: its mailbox and wake-up socket.
pub(crate) type CoreEnds = (Receiver<Command>, UnixDatagram);

/// Controls a running server from any thread: reload, statistics,
/// shutdown. Cheap to clone; `Send` and `Sync`.
#[derive(Clone)]
pub struct Handle {
    links: Arc<[Link]>,
}

/// The way to one core.
struct Link {
    commands: Sender<Command>,
    wake: UnixDatagram,
}

impl Handle {
    /// A handle and, per core, the receiving ends of its mailbox and
    /// wake-up socket.
    pub(crate) fn new(cores: usize) -> std::io::Result<(Handle, Vec<CoreEnds>)> {
        let mut links = Vec::with_capacity(cores);
        let mut ends = Vec::with_capacity(cores);
        for _ in 0..cores {
            let (commands, mailbox) = mpsc::channel();
            let (wake, waker_end) = UnixDatagram::pair()?;
            wake.set_nonblocking(true)?;
            links.push(Link { commands, wake });
            ends.push((mailbox, waker_end));
        }
        Ok((
            Handle {
                links: links.into(),
            },
            ends,
        ))
    }

    /// Every core applies `changes` to its catalog, in order (between two
    /// batches, so no query is lost, and each core's copy stays slot for
    /// slot the same as [`Catalog::apply`] makes the caller's). Returns once
    /// every core has applied them (within about a millisecond), so that
    /// whoever is told of a new version next (a secondary, by NOTIFY) finds
    /// it served; a core that has stopped, or has not answered within
    /// `UPDATE_TIMEOUT`, is not waited for. Costs the zones changed, not
    /// the zones served.
    ///
    /// The versions the cores stop serving come back here and are dropped
    /// on this thread, after every core answered: a core is not left
    /// holding the last reference to a whole version, whose free would be
    /// its cost, beside the queries it answers (under callgrind, some
    /// 3,100 instructions a version of a 14-record zone, 5,200 of a
    /// 100,014-record one: `scripts/bench-update.sh`, `CALLGRIND=1`). The reply channel holds a reply
    /// of every core, so that no core's send allocates or waits.
    pub fn update(&self, changes: Vec<CatalogChange>) {
        if changes.is_empty() {
            return;
        }
        let room = changes.len();
        let changes: Arc<[CatalogChange]> = changes.into();
        let (sender, replies) = mpsc::sync_channel(self.links.len());
        self.post(|| {
            Command::Update(
                Arc::clone(&changes),
                Vec::with_capacity(room),
                sender.clone(),
            )
        });
        drop(sender);
        let deadline = Instant::now() + UPDATE_TIMEOUT;
        let mut retired = Vec::with_capacity(self.links.len());
        for _ in 0..self.links.len() {
            let wait = deadline.saturating_duration_since(Instant::now());
            match replies.recv_timeout(wait) {
                Ok(zones) => retired.push(zones),
                Err(_) => break, // every core answered or stopped, or time is up
            }
        }
        // The versions replaced, freed here when this holds their last
        // references, and the changes with them.
        drop(retired);
        drop(changes);
    }

    /// Every core stops accepting, finishes what it has started (bounded
    /// to well under two seconds) and ends its thread. Returns at once;
    /// [`crate::Server::join`] waits for the threads.
    pub fn shutdown(&self) {
        self.post(|| Command::Shutdown);
    }

    /// A fresh snapshot of each core's counters, in core order. A core
    /// that has stopped (or does not answer within a second) is left out.
    pub fn stats(&self) -> Vec<CoreStats> {
        let (sender, replies) = mpsc::channel();
        self.post(|| Command::Stats(sender.clone()));
        drop(sender);
        let deadline = Instant::now() + STATS_TIMEOUT;
        let mut stats = Vec::with_capacity(self.links.len());
        while stats.len() < self.links.len() {
            let wait = deadline.saturating_duration_since(Instant::now());
            match replies.recv_timeout(wait) {
                Ok(reply) => stats.push(reply),
                Err(_) => break, // every core answered or stopped, or time is up
            }
        }
        stats.sort_by_key(|(index, _)| *index);
        stats.into_iter().map(|(_, stats)| stats).collect()
    }

    /// Posts a command to every core and wakes it. A core that has stopped
    /// is skipped; a full wake-up socket means a wake-up is pending
    /// already.
    fn post(&self, command: impl Fn() -> Command) {
        for link in self.links.iter() {
            if link.commands.send(command()).is_ok() {
                let _ = link.wake.send(&[1]);
            }
        }
    }
}

//----------- run ------------------------------------------------------------

/// The core's control task: waits for wake-ups and executes commands until
/// told to shut down. If every handle is gone, the core serves on.
pub(crate) async fn run(
    core: &Core,
    index: usize,
    commands: Receiver<Command>,
    wake: monoio::net::unix::UnixDatagram,
) {
    let mut buffer: Vec<u8> = Vec::with_capacity(WAKE_BUFFER);
    loop {
        let (result, returned) = wake.recv(buffer).await;
        buffer = returned;
        if result.is_err() {
            // Nothing is expected here; do not spin if it repeats.
            crate::tcp::deadline::sleep(Duration::from_millis(50)).await;
        }
        // Bounded: the handle posts one command per wake-up octet, and
        // each is taken once.
        loop {
            match commands.try_recv() {
                Ok(Command::Update(changes, mut retired, applied)) => {
                    core.worker.borrow_mut().apply(&changes, &mut retired);
                    // Dropped before the reply: the handle, which waits
                    // for it, holds the changes' last reference.
                    drop(changes);
                    // The versions this core stopped serving go back (a
                    // handle that stopped waiting drops them here).
                    let _ = applied.try_send(retired);
                }
                Ok(Command::Stats(reply)) => {
                    let _ = reply.send((index, snapshot(core)));
                }
                Ok(Command::Shutdown) => return,
                Err(TryRecvError::Empty) => break,
                // No handle is left to send anything: serve on, quietly.
                Err(TryRecvError::Disconnected) => std::future::pending::<()>().await,
            }
        }
    }
}

/// A copy of the core's counters, made on the core.
fn snapshot(core: &Core) -> CoreStats {
    let worker = core.worker.borrow();
    let counters = worker.counters();
    CoreStats {
        core: core.id,
        queries: counters.queries,
        queries_by_type: counters.queries_by_type,
        queries_by_transport: counters.queries_by_transport,
        cookies: counters.cookies,
        tcp_timeouts: core
            .tcp_counters
            .timeouts
            .each_ref()
            .map(std::cell::Cell::get),
        zones: counters.zone_snapshot(worker.catalog().slot_count(), |slot| {
            let zone = worker.catalog().zone_at(slot)?;
            Some(zone.origin().as_bytes().to_vec())
        }),
        answers_by_rcode: counters.answers_by_rcode,
        badcookie: counters.badcookie,
        cache_hits: counters.cache_hits,
        cache_misses: counters.cache_misses,
        truncated: counters.truncated,
        dropped: counters.dropped,
        rrl_limited: counters.rrl_limited,
        rrl_slipped: counters.rrl_slipped,
        tcp_accepted: core.tcp_counters.accepted.get(),
        tcp_open: core.tcp_counters.open.get(),
        tcp_refused: core.tcp_counters.refused.get(),
        forward: {
            let mut forward = worker.forward_stats();
            forward.open_sockets = core
                .forward
                .as_ref()
                .map_or(0, |io| io.open_sockets() as u64);
            forward
        },
        allocations: core.allocations.map_or(0, |read| read()),
        dnstap_written: core.dnstap.as_ref().map_or(0, |tap| tap.written()),
        dnstap_dropped: core.dnstap.as_ref().map_or([0; 3], |tap| tap.dropped()),
        xdp: {
            let mut xdp = core.xdp.borrow().clone();
            xdp.kernel_dropped = core
                .xdp_sockets
                .iter()
                .filter_map(|xsk| xsk.try_borrow().ok())
                .map(|xsk| xsk.kernel_drops())
                .sum();
            if let Some(attachment) = &core.xdp_attachment {
                xdp.passed = attachment.passed();
            }
            xdp
        },
        proxy: crate::stats::ProxyStats {
            accepted: core.proxy.accepted.get(),
            refused: core.proxy.refused.each_ref().map(std::cell::Cell::get),
        },
        tls: core.tls_counters.stats(),
        // Over TCP and TLS, and IXFR over UDP (the worker's).
        transfers_out: {
            let mut transfers = core.xfr_out.stats();
            transfers.add(&worker.transfers_out());
            transfers
        },
    }
}
