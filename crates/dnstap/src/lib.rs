//! # tern-dnstap: each message tern takes or sends, logged off the cores
//!
//! dnstap (issue 11): each DNS message the server takes or sends, logged
//! as a dnstap protobuf inside a Frame Streams data frame, to a file or a
//! Unix socket, as Knot, NSD and BIND emit them (docs/decisions/0011).
//!
//! ```text
//!  core N: Tap ── free record ──► fill (addresses, time, message) ──► try_send ─┐
//!             ◄──────────── recycled records (bounded return channel) ──────────┼─┐
//!  writer thread: try_recv from every core ◄────────────────────────────────────┘ │
//!                 encode (prost) → frame → file or socket; record goes back ──────┘
//! ```
//!
//! A core never encodes, never blocks and never allocates: it copies the
//! message into a record taken from its own bounded supply
//! ([`DnstapConfig::buffer`] records, made when the writer starts and
//! recycled by it) and hands it over with `try_send`. When every record
//! is waiting for the writer, the message is dropped and counted; so are
//! messages the writer cannot deliver (no reader on the socket, a failed
//! write). When dnstap is off, the core has no [`Tap`] and the cost is one
//! branch per batch or query.
//!
//! A message counts as written once the last octet of its frame is handed
//! to the file or socket (`write(2)` took it), not when it enters the
//! writer's output buffer: frames still in that buffer when the connection
//! fails, or when the stop's grace runs out, are counted as lost
//! ([`DNSTAP_DROPPED`]), and the writer logs its totals when it closes.
//!
//! Modules, each importing only those listed before it:
//! - [`proto`]: `dnstap.proto`, the messages tern writes, as prost types;
//! - `frames`: Frame Streams control frames, made and read (bounded);
//! - `record`: one logged message as a core hands it over, and its
//!   encoding into a data frame;
//! - `tap`: the core's side ([`Tap`]) and the bounded channel of records
//!   between it and the writer;
//! - `output`: the file or the Unix socket (handshake, reconnection,
//!   every read and write bounded in time);
//! - `writer`: the thread ([`DnstapWriter`]).
//!
//! This crate root holds what they share: the configuration
//! ([`DnstapConfig`]), the message [`Kind`]s, the clock ([`now`]) and the
//! counters' names ([`DNSTAP_DROPPED`]).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod frames;
mod output;
pub mod proto;
mod record;
mod tap;
mod writer;

#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use frames::CONTENT_TYPE;
pub use tap::{Tap, TapParts};
pub use writer::DnstapWriter;

//----------- Counters -------------------------------------------------------

/// Why dnstap messages were dropped, in the order of [`Tap::dropped`]:
/// `buffer`, the core's buffer was full (the writer is behind); `no_reader`,
/// the writer had no reader to write to (no connection to the socket, a
/// failed file); `lost`, the message was in the writer's output buffer, not
/// yet wholly written, when the connection failed or the stop's grace ran
/// out.
pub const DNSTAP_DROPPED: [&str; 3] = ["buffer", "no_reader", "lost"];

/// Indices in [`DNSTAP_DROPPED`].
const DROPPED_BUFFER: usize = 0;
const DROPPED_NO_READER: usize = 1;
const DROPPED_LOST: usize = 2;

/// The default number of records each core may have waiting for the
/// writer: at 100,000 messages a second on a core, 40 ms of them.
pub const DEFAULT_BUFFER: usize = 4096;

/// The largest per-core buffer accepted (records of 4 KiB each, made at
/// start: 256 MiB per core at the limit).
pub const MAX_BUFFER: usize = 1 << 16;

/// The longest identity or version string (Knot's limit is the same
/// order; a DNS name's presentation form fits).
pub const MAX_IDENTITY: usize = 255;

//----------- Configuration --------------------------------------------------

/// Where the dnstap stream goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DnstapOutput {
    /// A Unix socket with a Frame Streams reader listening on it
    /// (`fstrm_capture`, a collector): the bidirectional handshake,
    /// reconnected with backoff; while there is no reader, messages are
    /// dropped and counted.
    Socket(PathBuf),
    /// A file, created or truncated at start; closed with a STOP frame.
    File(PathBuf),
}

/// dnstap logging, already validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnstapConfig {
    /// Where the stream goes.
    pub output: DnstapOutput,
    /// The `identity` of every message (the host name, by default, as
    /// Knot's); empty: left out.
    pub identity: Vec<u8>,
    /// The `version` of every message; empty: left out.
    pub version: Vec<u8>,
    /// Records each core may have waiting for the writer (1 to
    /// [`MAX_BUFFER`]); past it, messages are dropped and counted.
    pub buffer: usize,
    /// Log queries (AUTH_QUERY, CLIENT_QUERY, FORWARDER_QUERY).
    pub log_queries: bool,
    /// Log responses (AUTH_RESPONSE, CLIENT_RESPONSE, FORWARDER_RESPONSE).
    pub log_responses: bool,
}

impl DnstapConfig {
    /// Defaults for everything but the output: no identity or version,
    /// [`DEFAULT_BUFFER`], queries and responses logged.
    pub fn new(output: DnstapOutput) -> Self {
        DnstapConfig {
            output,
            identity: Vec::new(),
            version: Vec::new(),
            buffer: DEFAULT_BUFFER,
            log_queries: true,
            log_responses: true,
        }
    }
}

//----------- Kind -----------------------------------------------------------

/// The dnstap `Message.Type`s tern logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum Kind {
    /// A query to an authoritative server (tern answering from its zones).
    AuthQuery = 1,
    /// Its response.
    AuthResponse = 2,
    /// A query tern forwards, as it came from the client.
    ClientQuery = 5,
    /// The answer to a forwarded query, as it goes back to the client.
    ClientResponse = 6,
    /// A query tern sends upstream.
    ForwarderQuery = 7,
    /// An upstream's answer, as tern receives it.
    ForwarderResponse = 8,
}

impl Kind {
    /// The query kind: CLIENT_QUERY for a forwarded query, AUTH_QUERY
    /// otherwise.
    pub fn query(forwarded: bool) -> Kind {
        if forwarded {
            Kind::ClientQuery
        } else {
            Kind::AuthQuery
        }
    }

    /// The response kind: CLIENT_RESPONSE for a forwarded query's answer,
    /// AUTH_RESPONSE otherwise.
    pub fn response(forwarded: bool) -> Kind {
        if forwarded {
            Kind::ClientResponse
        } else {
            Kind::AuthResponse
        }
    }

    fn is_query(self) -> bool {
        matches!(
            self,
            Kind::AuthQuery | Kind::ClientQuery | Kind::ForwarderQuery
        )
    }
}

//----------- Clock ----------------------------------------------------------

/// The wall-clock time dnstap records (read once per UDP batch, or per
/// TCP message, and only with dnstap on).
#[inline(never)]
pub fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}
