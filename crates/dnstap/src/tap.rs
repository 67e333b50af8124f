//! A core's side of dnstap: its [`Tap`] (core-local, no locks), and the
//! bounded channel of records between it and the writer (both ends).

use std::cell::Cell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use crate::record::{Record, RECORD_CAPACITY};
use crate::{DnstapConfig, Kind, DNSTAP_DROPPED, DROPPED_BUFFER, DROPPED_LOST, DROPPED_NO_READER};

/// A core's counters that the writer adds to.
#[derive(Debug, Default)]
pub(crate) struct SharedCounters {
    /// Records of this core whose frame was wholly written out.
    pub(crate) written: AtomicU64,
    /// Records of this core the writer had no reader for.
    pub(crate) no_reader: AtomicU64,
    /// Records of this core in the output buffer when the connection
    /// failed or the stop's grace ran out.
    pub(crate) lost: AtomicU64,
}

/// What the writer keeps of each core.
pub(crate) struct CoreEnd {
    /// The records the core logged, in order.
    pub(crate) records: Receiver<Record>,
    /// Where the writer gives each record back.
    pub(crate) free: SyncSender<Record>,
    /// The core's counters, which the writer adds to.
    pub(crate) counters: Arc<SharedCounters>,
}

/// One core's end, before its core takes it.
#[derive(Debug)]
pub struct TapParts {
    records: SyncSender<Record>,
    free: Receiver<Record>,
    counters: Arc<SharedCounters>,
    log_queries: bool,
    log_responses: bool,
}

/// One core's dnstap handle: core-local, no locks; see the crate docs.
pub struct Tap {
    records: SyncSender<Record>,
    free: Receiver<Record>,
    /// Messages dropped on the core: no free record, or no writer.
    dropped: Cell<u64>,
    counters: Arc<SharedCounters>,
    log_queries: bool,
    log_responses: bool,
    /// The local address of each UDP listener, by index.
    udp_local: Vec<SocketAddr>,
}

impl Tap {
    /// The core's tap; `udp_local`: its UDP listeners' addresses.
    pub fn new(parts: TapParts, udp_local: Vec<SocketAddr>) -> Tap {
        Tap {
            records: parts.records,
            free: parts.free,
            dropped: Cell::new(0),
            counters: parts.counters,
            log_queries: parts.log_queries,
            log_responses: parts.log_responses,
            udp_local,
        }
    }

    /// The local address of UDP listener `index`.
    pub fn udp_local(&self, index: usize) -> SocketAddr {
        self.udp_local
            .get(index)
            .copied()
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// Hands one message to the writer, or counts it dropped. Never
    /// blocks; allocates only if the message outgrows its record (a TCP
    /// message over a record's capacity, 4096 octets).
    pub fn log(
        &self,
        kind: Kind,
        tcp: bool,
        query_address: SocketAddr,
        response_address: SocketAddr,
        time: Duration,
        message: &[u8],
    ) {
        let wanted = if kind.is_query() {
            self.log_queries
        } else {
            self.log_responses
        };
        if !wanted {
            return;
        }
        let mut record = match self.free.try_recv() {
            Ok(record) => record,
            // Every record is waiting for the writer (or the writer is
            // gone with them).
            Err(_) => {
                self.dropped.set(self.dropped.get() + 1);
                return;
            }
        };
        record.kind = kind;
        record.tcp = tcp;
        record.query_address = query_address;
        record.response_address = response_address;
        record.time = time;
        record.message.clear();
        record.message.extend_from_slice(message);
        match self.records.try_send(record) {
            Ok(()) => {}
            // Never full (there are no more records than room); a writer
            // gone takes the record with it.
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.dropped.set(self.dropped.get() + 1);
            }
        }
    }

    /// Messages written out so far.
    pub fn written(&self) -> u64 {
        self.counters.written.load(Ordering::Relaxed)
    }

    /// Messages dropped so far, on the core and by the writer, by
    /// [`DNSTAP_DROPPED`].
    pub fn dropped(&self) -> [u64; DNSTAP_DROPPED.len()] {
        let mut dropped = [0; DNSTAP_DROPPED.len()];
        dropped[DROPPED_BUFFER] = self.dropped.get();
        dropped[DROPPED_NO_READER] = self.counters.no_reader.load(Ordering::Relaxed);
        dropped[DROPPED_LOST] = self.counters.lost.load(Ordering::Relaxed);
        dropped
    }
}

/// The channel between one core and the writer, with every record the
/// core will use (`limit` of them, each holding [`RECORD_CAPACITY`]
/// octets), made now, on the calling thread: the core never makes one.
pub(crate) fn channel(limit: usize, config: &DnstapConfig) -> (CoreEnd, TapParts) {
    let (records_sender, records) = mpsc::sync_channel(limit);
    let (free, free_receiver) = mpsc::sync_channel(limit);
    for _ in 0..limit {
        let _ = free.try_send(Record::new(RECORD_CAPACITY));
    }
    let counters = Arc::new(SharedCounters::default());
    let end = CoreEnd {
        records,
        free,
        counters: Arc::clone(&counters),
    };
    let parts = TapParts {
        records: records_sender,
        free: free_receiver,
        counters,
        log_queries: config.log_queries,
        log_responses: config.log_responses,
    };
    (end, parts)
}

#[cfg(test)]
impl Tap {
    /// Takes every free record the core holds now, and counts them.
    pub(crate) fn take_free(&self) -> usize {
        std::iter::from_fn(|| self.free.try_recv().ok()).count()
    }
}
