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
//! ([`DnstapConfig::buffer`] records, made when the server starts and
//! recycled by the writer) and hands it over with `try_send`. When every record is waiting for the writer, the
//! message is dropped and counted; so are messages the writer cannot
//! deliver (no reader on the socket, a failed write). When dnstap is off,
//! the core has no `Tap` and the cost is one branch per batch or query.
//!
//! A message counts as written once the last octet of its frame is handed
//! to the file or socket (`write(2)` took it), not when it enters the
//! writer's output buffer: frames still in that buffer when the connection
//! fails, or when the stop's grace runs out, are counted as lost
//! ([`DNSTAP_DROPPED`]), and the writer logs its totals when it closes.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::cell::Cell;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prost::Message as _;

/// The Frame Streams content type of dnstap.
pub const CONTENT_TYPE: &[u8] = b"protobuf:dnstap.Dnstap";

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

/// A record's message capacity: the longest UDP query a core reads
/// (`MAX_UDP_QUERY` in tern-server's cores.rs), and any UDP answer with `udp-size` up to
/// 4096 (the AF_XDP path's answers are smaller still: they fit the MTU).
/// No such query or answer ever grows a record; a longer message (a TCP
/// answer, or a UDP answer with `udp-size` above 4096) does, allocating on
/// the core, and the writer gives the record back at this size.
const RECORD_CAPACITY: usize = 4096;

/// Records the writer takes from one core before it looks at the next.
const DRAIN_BURST: usize = 256;

/// The writer's longest sleep while every core's buffer is empty; it
/// starts at [`IDLE_SLEEP_MIN`] and doubles while nothing comes.
const IDLE_SLEEP_MAX: Duration = Duration::from_millis(20);

/// See [`IDLE_SLEEP_MAX`].
const IDLE_SLEEP_MIN: Duration = Duration::from_millis(1);

/// The output buffer of the writer: frames are written out when the next
/// would not fit, whenever the cores have nothing more, and at the end.
const OUTPUT_BUFFER: usize = 64 * 1024;

/// The first wait before reconnecting to the socket; it doubles up to
/// [`RECONNECT_MAX`] while attempts fail, and starts again after a
/// success.
const RECONNECT_MIN: Duration = Duration::from_millis(250);

/// See [`RECONNECT_MIN`] (fstrm's own reopen interval is 5 s).
const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// How long the handshake may take, and one read or write on the socket
/// may block, before the connection is given up (then reopened): a reader
/// that stops reading costs records, never the writer's progress or the
/// shutdown.
const SOCKET_TIMEOUT: Duration = Duration::from_millis(500);

/// How long writing STOP and waiting for FINISH may take at the end.
const FINISH_TIMEOUT: Duration = Duration::from_millis(200);

/// Once the cores have stopped, how long all further socket writes (the
/// records they left) may take together; a reader too slow for that loses
/// them. With [`FINISH_TIMEOUT`], the most the writer adds to a stop: the
/// cores take at most 0.8 s, so everything ends within the binary's 1.5 s
/// shutdown deadline.
const STOP_GRACE: Duration = Duration::from_millis(300);

/// Frame Streams' limit on a control frame's length (fstrm's
/// `FSTRM_CONTROL_FRAME_LENGTH_MAX`); a longer one from the reader ends
/// the connection.
const MAX_CONTROL_FRAME: usize = 512;

/// Frame Streams' limit on a content type field
/// (`FSTRM_CONTROL_FIELD_CONTENT_TYPE_LENGTH_MAX`).
const MAX_CONTENT_TYPE: usize = 256;

/// Frame Streams control frame types.
const CONTROL_ACCEPT: u32 = 1;
const CONTROL_START: u32 = 2;
const CONTROL_STOP: u32 = 3;
const CONTROL_READY: u32 = 4;
const CONTROL_FINISH: u32 = 5;

/// The only control field: a content type.
const FIELD_CONTENT_TYPE: u32 = 1;

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

//----------- dnstap.proto ---------------------------------------------------

/// `dnstap.Dnstap` (dnstap.proto, proto2), the fields tern writes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DnstapFrame {
    /// Who wrote the message.
    #[prost(bytes = "vec", optional, tag = "1")]
    pub identity: Option<Vec<u8>>,
    /// The software's version.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub version: Option<Vec<u8>>,
    /// Not written.
    #[prost(bytes = "vec", optional, tag = "3")]
    pub extra: Option<Vec<u8>>,
    /// The DNS message.
    #[prost(message, optional, tag = "14")]
    pub message: Option<DnstapMessage>,
    /// `Dnstap.Type`: always MESSAGE (1).
    #[prost(int32, required, tag = "15")]
    pub r#type: i32,
}

/// `Dnstap.Type.MESSAGE`.
pub const DNSTAP_MESSAGE: i32 = 1;

/// `dnstap.SocketFamily`.
pub const FAMILY_INET: i32 = 1;
/// See [`FAMILY_INET`].
pub const FAMILY_INET6: i32 = 2;
/// `dnstap.SocketProtocol`.
pub const PROTOCOL_UDP: i32 = 1;
/// See [`PROTOCOL_UDP`].
pub const PROTOCOL_TCP: i32 = 2;

/// `dnstap.Message`, the fields tern writes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DnstapMessage {
    /// The [`Kind`].
    #[prost(enumeration = "Kind", required, tag = "1")]
    pub r#type: i32,
    /// [`FAMILY_INET`] or [`FAMILY_INET6`].
    #[prost(int32, optional, tag = "2")]
    pub socket_family: Option<i32>,
    /// [`PROTOCOL_UDP`] or [`PROTOCOL_TCP`].
    #[prost(int32, optional, tag = "3")]
    pub socket_protocol: Option<i32>,
    /// The initiator's address (the client; tern for FORWARDER_*).
    #[prost(bytes = "vec", optional, tag = "4")]
    pub query_address: Option<Vec<u8>>,
    /// The responder's address (tern; the upstream for FORWARDER_*).
    #[prost(bytes = "vec", optional, tag = "5")]
    pub response_address: Option<Vec<u8>>,
    /// The initiator's port.
    #[prost(uint32, optional, tag = "6")]
    pub query_port: Option<u32>,
    /// The responder's port.
    #[prost(uint32, optional, tag = "7")]
    pub response_port: Option<u32>,
    /// When the query was received or sent: seconds since the epoch.
    #[prost(uint64, optional, tag = "8")]
    pub query_time_sec: Option<u64>,
    /// And nanoseconds.
    #[prost(fixed32, optional, tag = "9")]
    pub query_time_nsec: Option<u32>,
    /// The query, for *_QUERY kinds.
    #[prost(bytes = "vec", optional, tag = "10")]
    pub query_message: Option<Vec<u8>>,
    /// The zone of the query (not written).
    #[prost(bytes = "vec", optional, tag = "11")]
    pub query_zone: Option<Vec<u8>>,
    /// When the response was sent or received: seconds since the epoch.
    #[prost(uint64, optional, tag = "12")]
    pub response_time_sec: Option<u64>,
    /// And nanoseconds.
    #[prost(fixed32, optional, tag = "13")]
    pub response_time_nsec: Option<u32>,
    /// The response, for *_RESPONSE kinds.
    #[prost(bytes = "vec", optional, tag = "14")]
    pub response_message: Option<Vec<u8>>,
}

//----------- Record ---------------------------------------------------------

/// One logged message, as a core hands it to the writer: raw, not
/// encoded.
#[derive(Debug)]
pub(crate) struct Record {
    kind: Kind,
    tcp: bool,
    /// The initiator's address (the client; tern for FORWARDER_*).
    query_address: SocketAddr,
    /// The responder's address.
    response_address: SocketAddr,
    /// Since the epoch: when the message was received or sent.
    time: Duration,
    message: Vec<u8>,
}

impl Record {
    /// A record holding messages of up to `capacity` octets unchanged.
    fn new(capacity: usize) -> Record {
        let unspecified = SocketAddr::from(([0, 0, 0, 0], 0));
        Record {
            kind: Kind::AuthQuery,
            tcp: false,
            query_address: unspecified,
            response_address: unspecified,
            time: Duration::ZERO,
            message: Vec::with_capacity(capacity),
        }
    }
}

/// The wall-clock time dnstap records (read once per UDP batch, or per
/// TCP message, and only with dnstap on).
#[inline(never)]
pub fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Fills `frame` for `record`, reusing its buffers (`frame.message` must
/// be set); the record's message is moved in and must be taken back with
/// [`take_message`].
fn fill(frame: &mut DnstapFrame, record: &mut Record) {
    let Some(message) = frame.message.as_mut() else {
        return;
    };
    message.r#type = record.kind as i32;
    let ipv6 = record.query_address.ip().to_canonical().is_ipv6()
        || record.response_address.ip().to_canonical().is_ipv6();
    message.socket_family = Some(if ipv6 { FAMILY_INET6 } else { FAMILY_INET });
    message.socket_protocol = Some(if record.tcp {
        PROTOCOL_TCP
    } else {
        PROTOCOL_UDP
    });
    set_address(&mut message.query_address, record.query_address, ipv6);
    set_address(&mut message.response_address, record.response_address, ipv6);
    message.query_port = Some(u32::from(record.query_address.port()));
    message.response_port = Some(u32::from(record.response_address.port()));
    let seconds = Some(record.time.as_secs());
    let nanos = Some(record.time.subsec_nanos());
    let body = Some(std::mem::take(&mut record.message));
    if record.kind.is_query() {
        (message.query_time_sec, message.query_time_nsec) = (seconds, nanos);
        (message.response_time_sec, message.response_time_nsec) = (None, None);
        message.query_message = body;
        message.response_message = None;
    } else {
        // An authoritative answer is made when its query arrives: both
        // times are known (Knot sets both too).
        if record.kind == Kind::AuthResponse {
            (message.query_time_sec, message.query_time_nsec) = (seconds, nanos);
        } else {
            (message.query_time_sec, message.query_time_nsec) = (None, None);
        }
        (message.response_time_sec, message.response_time_nsec) = (seconds, nanos);
        message.query_message = None;
        message.response_message = body;
    }
}

/// Gives the record its message back after encoding.
fn take_message(frame: &mut DnstapFrame, record: &mut Record) {
    if let Some(message) = frame.message.as_mut() {
        let body = message
            .query_message
            .take()
            .or_else(|| message.response_message.take());
        if let Some(body) = body {
            record.message = body;
        }
    }
}

/// Sets an address field: 4 octets for IPv4, 16 for IPv6 (an IPv4 address
/// in a message whose other address is IPv6 is written mapped, so both
/// have the family's length).
fn set_address(field: &mut Option<Vec<u8>>, address: SocketAddr, ipv6: bool) {
    let bytes = field.get_or_insert_with(Vec::new);
    bytes.clear();
    match address.ip().to_canonical() {
        std::net::IpAddr::V4(ip) if !ipv6 => bytes.extend_from_slice(&ip.octets()),
        std::net::IpAddr::V4(ip) => bytes.extend_from_slice(&ip.to_ipv6_mapped().octets()),
        std::net::IpAddr::V6(ip) => bytes.extend_from_slice(&ip.octets()),
    }
}

//----------- Frame Streams --------------------------------------------------

/// A control frame of `kind`, with the dnstap content type if `typed`.
fn control_frame(kind: u32, typed: bool) -> Vec<u8> {
    let mut payload = kind.to_be_bytes().to_vec();
    if typed {
        payload.extend_from_slice(&FIELD_CONTENT_TYPE.to_be_bytes());
        payload.extend_from_slice(&(CONTENT_TYPE.len() as u32).to_be_bytes());
        payload.extend_from_slice(CONTENT_TYPE);
    }
    let mut frame = Vec::with_capacity(8 + payload.len());
    frame.extend_from_slice(&0u32.to_be_bytes()); // the escape: a zero length
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(&payload);
    frame
}

/// A control frame read from the socket's reader.
#[derive(Debug, PartialEq, Eq)]
struct Control {
    kind: u32,
    /// Whether the frame lists no content type, or lists dnstap's.
    dnstap: bool,
}

/// Reads one control frame. Every octet is the peer's: the length is
/// checked against [`MAX_CONTROL_FRAME`] before anything is read into the
/// fixed buffer, and the fields are walked within it.
fn read_control(reader: &mut impl Read) -> io::Result<Control> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut word = [0u8; 4];
    reader.read_exact(&mut word)?;
    if word != [0; 4] {
        return Err(invalid("a data frame where a control frame was expected"));
    }
    reader.read_exact(&mut word)?;
    let len = u32::from_be_bytes(word) as usize;
    if !(4..=MAX_CONTROL_FRAME).contains(&len) {
        return Err(invalid("a control frame of a bad length"));
    }
    let mut frame = [0u8; MAX_CONTROL_FRAME];
    let frame = &mut frame[..len];
    reader.read_exact(frame)?;
    parse_control(frame).ok_or_else(|| invalid("a malformed control frame"))
}

/// Parses a control frame's payload (after its length); `None` if a field
/// overruns it or a content type is too long. Bounded: each field moves
/// on by at least 8 octets.
fn parse_control(frame: &[u8]) -> Option<Control> {
    let word = |at: usize| -> Option<u32> {
        let bytes = frame.get(at..at.checked_add(4)?)?;
        Some(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    };
    let kind = word(0)?;
    let mut at = 4;
    let mut types = 0;
    let mut dnstap = false;
    while at < frame.len() {
        let field = word(at)?;
        let len = word(at + 4)? as usize;
        if len > MAX_CONTENT_TYPE {
            return None;
        }
        let value = frame.get(at + 8..(at + 8).checked_add(len)?)?;
        if field == FIELD_CONTENT_TYPE {
            types += 1;
            dnstap |= value == CONTENT_TYPE;
        }
        at += 8 + len;
    }
    Some(Control {
        kind,
        dnstap: types == 0 || dnstap,
    })
}

//----------- Tap ------------------------------------------------------------

/// A core's counters that the writer adds to.
#[derive(Debug, Default)]
struct SharedCounters {
    /// Records of this core whose frame was wholly written out.
    written: AtomicU64,
    /// Records of this core the writer had no reader for.
    no_reader: AtomicU64,
    /// Records of this core in the output buffer when the connection
    /// failed or the stop's grace ran out.
    lost: AtomicU64,
}

/// What the writer keeps of each core.
struct CoreEnd {
    records: Receiver<Record>,
    free: SyncSender<Record>,
    counters: Arc<SharedCounters>,
}

/// One core's end, before its core takes it.
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
    /// message over [`RECORD_CAPACITY`]).
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

//----------- Writer ---------------------------------------------------------

/// The writer thread: started with the server, stopped after its cores.
pub struct DnstapWriter {
    thread: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
}

impl DnstapWriter {
    /// Starts the writer for `cores` cores and returns each core's end. A
    /// file is created (or truncated) here, so that an error reaches the
    /// caller (before tern drops root: the file may be where only root
    /// writes); a socket is connected by the writer, again and again, and
    /// not before `go` is given: the first connection is made as the user
    /// tern serves as, like every later one (a closed `go`: the server
    /// never served, nothing is connected).
    pub fn start(
        config: &DnstapConfig,
        cores: usize,
        go: mpsc::Receiver<()>,
    ) -> io::Result<(DnstapWriter, Vec<TapParts>)> {
        let limit = config.buffer.clamp(1, MAX_BUFFER);
        let capacity = RECORD_CAPACITY;
        let stop = Arc::new(AtomicBool::new(false));
        let output = match &config.output {
            DnstapOutput::File(path) => {
                // Not through a symbolic link: the file may be in a
                // directory the configured `user` can write, and this runs
                // before tern drops root.
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(path)
                    .map_err(|err| {
                        io::Error::new(err.kind(), format!("dnstap.file {}: {err}", path.display()))
                    })?;
                let mut out = file;
                out.write_all(&control_frame(CONTROL_START, true))?;
                Output::File(out)
            }
            DnstapOutput::Socket(path) => Output::Socket(SocketOutput {
                path: path.clone(),
                stop: Arc::clone(&stop),
                stream: None,
                next_attempt: Instant::now(),
                backoff: RECONNECT_MIN,
                logged_failure: false,
            }),
        };
        let mut ends = Vec::with_capacity(cores);
        let mut parts = Vec::with_capacity(cores);
        for _ in 0..cores {
            let (records_sender, records) = mpsc::sync_channel(limit);
            let (free, free_receiver) = mpsc::sync_channel(limit);
            // Every record the core will use, made now, on this thread:
            // the core never makes one.
            for _ in 0..limit {
                let _ = free.try_send(Record::new(capacity));
            }
            let counters = Arc::new(SharedCounters::default());
            ends.push(CoreEnd {
                records,
                free,
                counters: Arc::clone(&counters),
            });
            parts.push(TapParts {
                records: records_sender,
                free: free_receiver,
                counters,
                log_queries: config.log_queries,
                log_responses: config.log_responses,
            });
        }
        let mut frame = DnstapFrame {
            identity: (!config.identity.is_empty()).then(|| config.identity.clone()),
            version: (!config.version.is_empty()).then(|| config.version.clone()),
            extra: None,
            message: Some(DnstapMessage::default()),
            r#type: DNSTAP_MESSAGE,
        };
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("tern-dnstap".to_string())
            .spawn(move || {
                let mut writer = Writer {
                    output,
                    ends,
                    buffer: Vec::with_capacity(capacity * 2),
                    capacity,
                    pending: Pending {
                        octets: Vec::with_capacity(OUTPUT_BUFFER),
                        frames: Vec::new(),
                    },
                    totals: [0; 3],
                };
                if go.recv().is_err() {
                    writer.output.close();
                    return;
                }
                writer.run(&mut frame, &stopping);
            })?;
        Ok((
            DnstapWriter {
                thread: Some(thread),
                stop,
            },
            parts,
        ))
    }

    /// Once the cores have stopped: writes what they left, then STOP (and
    /// waits a bounded time for FINISH on a socket), and closes.
    pub fn finish(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

impl Drop for DnstapWriter {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The writer thread's state.
struct Writer {
    output: Output,
    ends: Vec<CoreEnd>,
    /// One encoded data frame (length and protobuf).
    buffer: Vec<u8>,
    /// The records' message capacity: one that grew past it is replaced.
    capacity: usize,
    /// Frames encoded but not yet written out.
    pending: Pending,
    /// Messages written, without a reader, and lost, over all cores: for
    /// the log line at the end.
    totals: [u64; 3],
}

/// The writer's output buffer: frames not yet written out, and whose each
/// one is, so that each is counted written only once it was.
struct Pending {
    /// The frames back to back (about [`OUTPUT_BUFFER`] octets at most:
    /// more only to hold one longer frame).
    octets: Vec<u8>,
    /// Where each frame ends in `octets`, and the index of its core.
    frames: Vec<(usize, usize)>,
}

impl Writer {
    /// Drains the cores until told to stop (then once more), sleeping a
    /// little longer each time they have nothing.
    fn run(&mut self, frame: &mut DnstapFrame, stop: &AtomicBool) {
        let mut idle = IDLE_SLEEP_MIN;
        loop {
            // Read before draining: what the cores wrote before they
            // stopped is drained after the flag is seen.
            let stopping = stop.load(Ordering::Acquire);
            self.output.reconnect_if_due();
            let drained = self.drain(frame);
            if drained == 0 {
                self.pending
                    .write_out(&mut self.output, &self.ends, &mut self.totals);
                if stopping {
                    break;
                }
                std::thread::park_timeout(idle);
                idle = (idle * 2).min(IDLE_SLEEP_MAX);
            } else {
                idle = IDLE_SLEEP_MIN;
            }
        }
        // Nothing is pending here: the last pass wrote it out or lost it.
        self.output.close();
        let [written, no_reader, lost] = self.totals;
        log::info!(
            "dnstap: closed: {written} messages written, {no_reader} not written (no reader), \
             {lost} lost with the connection or at the stop"
        );
    }

    /// Writes (or drops) what every core has waiting, at most
    /// [`DRAIN_BURST`] records each; returns how many were taken.
    fn drain(&mut self, frame: &mut DnstapFrame) -> usize {
        let mut taken = 0;
        for (core, end) in self.ends.iter().enumerate() {
            for _ in 0..DRAIN_BURST {
                let mut record = match end.records.try_recv() {
                    Ok(record) => record,
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                };
                taken += 1;
                let mut queued = false;
                if self.output.connected() {
                    encode(frame, &mut record, &mut self.buffer);
                    if self.pending.octets.len() + self.buffer.len() > OUTPUT_BUFFER {
                        self.pending
                            .write_out(&mut self.output, &self.ends, &mut self.totals);
                    }
                    // The write above may have lost the connection.
                    if self.output.connected() {
                        self.pending.octets.extend_from_slice(&self.buffer);
                        let frame_end = self.pending.octets.len();
                        self.pending.frames.push((frame_end, core));
                        queued = true;
                    }
                }
                if !queued {
                    end.counters.no_reader.fetch_add(1, Ordering::Relaxed);
                    self.totals[1] += 1;
                }
                if record.message.capacity() > self.capacity {
                    record.message = Vec::with_capacity(self.capacity);
                }
                // The return channel holds every record there is: never
                // full. A core gone: the record is freed here.
                let _ = end.free.try_send(record);
            }
        }
        taken
    }
}

impl Pending {
    /// Writes the frames out and counts each, for its core and in
    /// `totals`: written if its last octet was, lost otherwise (the
    /// connection failed first).
    fn write_out(&mut self, output: &mut Output, ends: &[CoreEnd], totals: &mut [u64; 3]) {
        if self.octets.is_empty() {
            return;
        }
        let done = output.write(&self.octets);
        for &(frame_end, core) in &self.frames {
            let (counter, total) = if frame_end <= done {
                (&ends[core].counters.written, &mut totals[0])
            } else {
                (&ends[core].counters.lost, &mut totals[2])
            };
            counter.fetch_add(1, Ordering::Relaxed);
            *total += 1;
        }
        self.octets.clear();
        self.frames.clear();
    }
}

/// Encodes `record` as one Frame Streams data frame in `buffer`.
fn encode(frame: &mut DnstapFrame, record: &mut Record, buffer: &mut Vec<u8>) {
    fill(frame, record);
    buffer.clear();
    buffer.extend_from_slice(&[0; 4]);
    // Into a Vec, encoding cannot run out of room.
    let _ = frame.encode(buffer);
    take_message(frame, record);
    let len = (buffer.len() - 4) as u32;
    buffer[..4].copy_from_slice(&len.to_be_bytes());
}

//----------- Output ---------------------------------------------------------

/// Where the writer writes (unbuffered: the writer collects frames in its
/// own buffer, to count each one written only when it is).
enum Output {
    /// An open file.
    File(File),
    Socket(SocketOutput),
    /// A file whose write failed, or closed: every record is dropped.
    Failed,
}

/// A Unix socket with a Frame Streams reader, connected when there is
/// one.
struct SocketOutput {
    path: PathBuf,
    /// Set when the server stops (see [`Bounded`]).
    stop: Arc<AtomicBool>,
    stream: Option<Bounded>,
    next_attempt: Instant,
    backoff: Duration,
    /// Whether the current run of failures was logged (once per run).
    logged_failure: bool,
}

impl Output {
    fn connected(&self) -> bool {
        match self {
            Output::File(_) => true,
            Output::Socket(socket) => socket.stream.is_some(),
            Output::Failed => false,
        }
    }

    /// Connects to the socket when disconnected and the backoff has run
    /// out.
    fn reconnect_if_due(&mut self) {
        let Output::Socket(socket) = self else {
            return;
        };
        // Once the server stops, no new connection: what is left is
        // dropped rather than the stop delayed by a handshake.
        if socket.stream.is_some()
            || Instant::now() < socket.next_attempt
            || socket.stop.load(Ordering::Relaxed)
        {
            return;
        }
        match connect(&socket.path, &socket.stop) {
            Ok(stream) => {
                log::info!("dnstap: connected to {}", socket.path.display());
                socket.stream = Some(stream);
                socket.backoff = RECONNECT_MIN;
                socket.logged_failure = false;
            }
            Err(err) => {
                if !socket.logged_failure {
                    log::warn!(
                        "dnstap: cannot connect to {} ({err}); retrying, messages are dropped until then",
                        socket.path.display()
                    );
                    socket.logged_failure = true;
                }
                socket.next_attempt = Instant::now() + socket.backoff;
                socket.backoff = (socket.backoff * 2).min(RECONNECT_MAX);
            }
        }
    }

    /// Writes `octets` (whole frames) and returns how many were written:
    /// all of them, or those before a failure (a file then fails for good;
    /// a socket is closed and reopened later, since a frame cut short
    /// leaves the stream unreadable past it).
    fn write(&mut self, octets: &[u8]) -> usize {
        let (done, failure) = match self {
            Output::File(out) => write_counted(out, octets),
            Output::Socket(socket) => match socket.stream.as_mut() {
                Some(stream) => write_counted(stream, octets),
                None => return 0,
            },
            Output::Failed => return 0,
        };
        if let Some(err) = failure {
            match self {
                Output::File(_) => {
                    log::error!("dnstap: writing the file failed ({err}); messages are dropped");
                    *self = Output::Failed;
                }
                Output::Socket(socket) => socket.disconnect(&err),
                Output::Failed => {}
            }
        }
        done
    }

    /// Writes STOP and closes (on a socket, after FINISH or a bounded
    /// wait for it).
    fn close(&mut self) {
        let stop = control_frame(CONTROL_STOP, false);
        match std::mem::replace(self, Output::Failed) {
            Output::File(mut out) => {
                if let Err(err) = out.write_all(&stop) {
                    log::error!("dnstap: closing the file failed: {err}");
                }
            }
            Output::Socket(SocketOutput {
                stream: Some(mut stream),
                ..
            }) => {
                // STOP and FINISH together within FINISH_TIMEOUT: a reader
                // that stalls now delays the shutdown no further.
                stream.deadline = Some(Instant::now() + FINISH_TIMEOUT);
                if stream.write_all(&stop).is_ok() {
                    // Whatever the reader answers, the stream ends here.
                    let finish = read_control(&mut stream);
                    if !matches!(
                        finish,
                        Ok(Control {
                            kind: CONTROL_FINISH,
                            ..
                        })
                    ) {
                        log::debug!("dnstap: the reader did not answer STOP with FINISH");
                    }
                }
            }
            Output::Socket(_) | Output::Failed => {}
        }
    }
}

impl SocketOutput {
    fn disconnect(&mut self, err: &io::Error) {
        log::warn!(
            "dnstap: the reader on {} went away ({err}); reconnecting",
            self.path.display()
        );
        self.stream = None;
        self.logged_failure = true;
        self.next_attempt = Instant::now() + self.backoff;
        self.backoff = (self.backoff * 2).min(RECONNECT_MAX);
    }
}

/// Writes `octets` to `out` until done or a failure: how many octets were
/// written, and the failure. A write of nothing is one
/// (`WriteZero`), and an interrupted one is made again.
fn write_counted(out: &mut impl Write, octets: &[u8]) -> (usize, Option<io::Error>) {
    let mut done = 0;
    while done < octets.len() {
        match out.write(&octets[done..]) {
            Ok(0) => {
                return (
                    done,
                    Some(io::Error::new(io::ErrorKind::WriteZero, "nothing written")),
                )
            }
            Ok(written) => done += written,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return (done, Some(err)),
        }
    }
    (done, None)
}

/// The socket to the reader, every read and write bounded in time: each
/// call by [`SOCKET_TIMEOUT`]; all of them by `deadline` when it is set
/// (the handshake, the close), and from the moment the server stops by
/// [`STOP_GRACE`]. A reader that trickles octets cannot hold the writer,
/// nor the shutdown, for longer.
struct Bounded {
    stream: UnixStream,
    stop: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl Bounded {
    /// The timeout of the next call, or `TimedOut` past the deadline.
    fn timeout(&mut self) -> io::Result<Duration> {
        if self.stop.load(Ordering::Acquire) {
            let grace = Instant::now() + STOP_GRACE;
            self.deadline = Some(self.deadline.map_or(grace, |deadline| deadline.min(grace)));
        }
        let Some(deadline) = self.deadline else {
            return Ok(SOCKET_TIMEOUT);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the reader is too slow",
            ));
        }
        Ok(left.min(SOCKET_TIMEOUT))
    }
}

/// A socket timeout reads as EAGAIN (`WouldBlock`) on Linux: say what it
/// is.
fn timed_out(err: io::Error) -> io::Error {
    if err.kind() == io::ErrorKind::WouldBlock {
        io::Error::new(io::ErrorKind::TimedOut, "the reader is too slow")
    } else {
        err
    }
}

impl Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let timeout = self.timeout()?;
        self.stream.set_read_timeout(Some(timeout))?;
        self.stream.read(buf).map_err(timed_out)
    }
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let timeout = self.timeout()?;
        self.stream.set_write_timeout(Some(timeout))?;
        self.stream.write(buf).map_err(timed_out)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Connects to a Frame Streams reader and makes the bidirectional
/// handshake, all within [`SOCKET_TIMEOUT`]: READY with our content type,
/// ACCEPT that lists it (or none), then START.
fn connect(path: &Path, stop: &Arc<AtomicBool>) -> io::Result<Bounded> {
    // A reader that listens but never accepts fills its backlog, and a
    // plain connect then blocks for ever: bounded by the send timeout,
    // which Linux applies to a Unix stream connect.
    let socket = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None)?;
    socket.set_write_timeout(Some(SOCKET_TIMEOUT))?;
    socket.connect(&socket2::SockAddr::unix(path)?)?;
    let mut stream = Bounded {
        stream: UnixStream::from(std::os::fd::OwnedFd::from(socket)),
        stop: Arc::clone(stop),
        deadline: Some(Instant::now() + SOCKET_TIMEOUT),
    };
    stream.write_all(&control_frame(CONTROL_READY, true))?;
    let accept = read_control(&mut stream)?;
    if accept.kind != CONTROL_ACCEPT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the reader did not answer READY with ACCEPT",
        ));
    }
    if !accept.dnstap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the reader does not accept protobuf:dnstap.Dnstap",
        ));
    }
    stream.write_all(&control_frame(CONTROL_START, true))?;
    // From here on, each call is bounded (and all, once the server stops).
    stream.deadline = None;
    Ok(stream)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;

    /// The writer, given its go at once (as after the server's start).
    fn start_now(config: &DnstapConfig, cores: usize) -> io::Result<(DnstapWriter, Vec<TapParts>)> {
        let (gate, go) = mpsc::channel();
        gate.send(()).unwrap();
        DnstapWriter::start(config, cores, go)
    }

    fn parts(buffer: usize) -> (DnstapWriter, Tap, PathBuf, tempdir::Dir) {
        let dir = tempdir::Dir::new();
        let path = dir.path().join("tap.fstrm");
        let mut config = DnstapConfig::new(DnstapOutput::File(path.clone()));
        config.identity = b"ns1".to_vec();
        config.version = b"tern test".to_vec();
        config.buffer = buffer;
        let (writer, mut parts) = start_now(&config, 1).unwrap();
        let tap = Tap::new(parts.remove(0), Vec::new());
        (writer, tap, path, dir)
    }

    /// Splits a Frame Streams file into its START payload, its data frames
    /// and its STOP payload.
    fn frames(bytes: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>, Vec<u8>) {
        fn word(bytes: &[u8], at: &mut usize) -> usize {
            let value = u32::from_be_bytes(bytes[*at..*at + 4].try_into().unwrap()) as usize;
            *at += 4;
            value
        }
        let mut at = 0;
        assert_eq!(word(bytes, &mut at), 0, "escape");
        let len = word(bytes, &mut at);
        let start = bytes[at..at + len].to_vec();
        at += len;
        let mut data = Vec::new();
        loop {
            let len = word(bytes, &mut at);
            if len == 0 {
                let len = word(bytes, &mut at);
                let stop = bytes[at..at + len].to_vec();
                assert_eq!(at + len, bytes.len(), "nothing after STOP");
                return (start, data, stop);
            }
            data.push(bytes[at..at + len].to_vec());
            at += len;
        }
    }

    #[test]
    fn a_file_holds_start_the_messages_and_stop() {
        let (writer, tap, path, _dir) = parts(16);
        let client: SocketAddr = "192.0.2.7:5300".parse().unwrap();
        let server: SocketAddr = "127.0.0.1:53".parse().unwrap();
        let time = Duration::new(1_700_000_000, 123_456_789);
        tap.log(Kind::AuthQuery, false, client, server, time, b"query");
        tap.log(Kind::AuthResponse, true, client, server, time, b"answer");
        let upstream: SocketAddr = "[2001:db8::1]:53".parse().unwrap();
        tap.log(Kind::ForwarderQuery, false, client, upstream, time, b"up");
        writer.finish();
        assert_eq!((tap.written(), tap.dropped()), (3, [0; 3]));

        let bytes = std::fs::read(&path).unwrap();
        let (start, data, stop) = frames(&bytes);
        let mut expected_start = CONTROL_START.to_be_bytes().to_vec();
        expected_start.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 22]);
        expected_start.extend_from_slice(b"protobuf:dnstap.Dnstap");
        assert_eq!(start, expected_start);
        assert_eq!(stop, CONTROL_STOP.to_be_bytes());
        assert_eq!(data.len(), 3);

        let query = DnstapFrame::decode(data[0].as_slice()).unwrap();
        assert_eq!(query.identity.as_deref(), Some(&b"ns1"[..]));
        assert_eq!(query.version.as_deref(), Some(&b"tern test"[..]));
        assert_eq!(query.r#type, DNSTAP_MESSAGE);
        let message = query.message.unwrap();
        assert_eq!(message.r#type, Kind::AuthQuery as i32);
        assert_eq!(message.socket_family, Some(FAMILY_INET));
        assert_eq!(message.socket_protocol, Some(PROTOCOL_UDP));
        assert_eq!(message.query_address.as_deref(), Some(&[192, 0, 2, 7][..]));
        assert_eq!(
            message.response_address.as_deref(),
            Some(&[127, 0, 0, 1][..])
        );
        assert_eq!(
            (message.query_port, message.response_port),
            (Some(5300), Some(53))
        );
        assert_eq!(message.query_time_sec, Some(1_700_000_000));
        assert_eq!(message.query_time_nsec, Some(123_456_789));
        assert_eq!(message.query_message.as_deref(), Some(&b"query"[..]));
        assert_eq!(message.response_message, None);
        assert_eq!(message.response_time_sec, None);

        let answer = DnstapFrame::decode(data[1].as_slice())
            .unwrap()
            .message
            .unwrap();
        assert_eq!(answer.r#type, Kind::AuthResponse as i32);
        assert_eq!(answer.socket_protocol, Some(PROTOCOL_TCP));
        assert_eq!(answer.response_message.as_deref(), Some(&b"answer"[..]));
        assert_eq!(answer.query_message, None);
        assert_eq!(answer.response_time_sec, Some(1_700_000_000));
        assert_eq!(answer.query_time_sec, Some(1_700_000_000));

        // A mixed pair is written in IPv6 form, the IPv4 side mapped.
        let up = DnstapFrame::decode(data[2].as_slice())
            .unwrap()
            .message
            .unwrap();
        assert_eq!(up.r#type, Kind::ForwarderQuery as i32);
        assert_eq!(up.socket_family, Some(FAMILY_INET6));
        let mapped = "::ffff:192.0.2.7".parse::<std::net::Ipv6Addr>().unwrap();
        assert_eq!(up.query_address.as_deref(), Some(&mapped.octets()[..]));
        let v6 = "2001:db8::1".parse::<std::net::Ipv6Addr>().unwrap();
        assert_eq!(up.response_address.as_deref(), Some(&v6.octets()[..]));
    }

    #[test]
    fn a_full_buffer_drops_and_counts_without_blocking() {
        // A socket nobody listens on: what the writer drains it drops,
        // and what it has not drained yet fills the core's two records,
        // so the core drops the rest itself. Every message is counted
        // dropped, none is waited for.
        let dir = tempdir::Dir::new();
        let mut config = DnstapConfig::new(DnstapOutput::Socket(dir.path().join("none")));
        config.buffer = 2;
        let (writer, mut parts) = start_now(&config, 1).unwrap();
        let tap = Tap::new(parts.remove(0), Vec::new());
        let any: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let started = Instant::now();
        for _ in 0..1000 {
            tap.log(Kind::AuthQuery, false, any, any, now(), b"query");
        }
        assert!(started.elapsed() < Duration::from_secs(1));
        writer.finish();
        assert_eq!(tap.written(), 0);
        let [buffer, no_reader, lost] = tap.dropped();
        assert_eq!((buffer + no_reader, lost), (1000, 0));
        // The writer gave both records back, and there are no others.
        let records = std::iter::from_fn(|| tap.free.try_recv().ok()).count();
        assert_eq!(records, 2);
    }

    /// Issue 22: the writer connects to its socket only once the server
    /// gives it the go (after tern dropped root), so that the first
    /// connection is made as the user every later one is made as. A
    /// server that never served (its go dropped) connects nothing.
    #[test]
    fn a_socket_is_not_connected_before_the_go() {
        let dir = tempdir::Dir::new();
        let path = dir.path().join("tap.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let config = DnstapConfig::new(DnstapOutput::Socket(path));
        let (gate, go) = mpsc::channel();
        let (writer, _parts) = DnstapWriter::start(&config, 1, go).unwrap();
        drop(gate);
        // Without its go the writer ends by itself (it is not told to
        // stop): then whatever it connected is queued.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !writer.thread.as_ref().is_some_and(JoinHandle::is_finished) {
            assert!(Instant::now() < deadline, "the writer runs without its go");
            std::thread::sleep(Duration::from_millis(1));
        }
        writer.finish();
        listener.set_nonblocking(true).unwrap();
        let accepted = listener.accept();
        assert!(
            matches!(&accepted, Err(err) if err.kind() == io::ErrorKind::WouldBlock),
            "the writer connected before its go: {accepted:?}"
        );
    }

    /// Issue 22: a message counts as written when its frame was, not when
    /// it entered the writer's buffer. A reader that makes the handshake
    /// and then stops reading: the socket's buffer fills, a write times
    /// out, and what the writer still held is lost. Once the writer has
    /// finished, the reader reads everything the connection brought:
    /// exactly as many whole data frames as were counted written; every
    /// message is counted once, and those the failed write held are lost.
    #[test]
    fn written_counts_what_the_reader_receives_and_lost_what_it_never_can() {
        const MESSAGES: usize = 4000;
        let dir = tempdir::Dir::new();
        let path = dir.path().join("tap.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let mut config = DnstapConfig::new(DnstapOutput::Socket(path));
        config.buffer = MESSAGES;
        let (writer, mut parts) = start_now(&config, 1).unwrap();
        let tap = Tap::new(parts.remove(0), Vec::new());
        let (handshake_done, handshake) = mpsc::channel();
        let (writer_done, finished) = mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            let (mut reader, _) = listener.accept().unwrap();
            reader
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            assert_eq!(read_control(&mut reader).unwrap().kind, CONTROL_READY);
            reader
                .write_all(&control_frame(CONTROL_ACCEPT, true))
                .unwrap();
            assert_eq!(read_control(&mut reader).unwrap().kind, CONTROL_START);
            handshake_done.send(()).unwrap();
            // Stalled until the writer has finished; then everything.
            finished.recv().unwrap();
            let mut bytes = Vec::new();
            reader.read_to_end(&mut bytes).unwrap();
            // Whole data frames (a control frame, length 0, ends them; a
            // frame cut short by the failed write is not whole).
            let mut whole = 0;
            let mut at = 0;
            while at + 4 <= bytes.len() {
                let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
                if len == 0 || at + 4 + len > bytes.len() {
                    break;
                }
                at += 4 + len;
                whole += 1;
            }
            whole
        });
        handshake.recv().unwrap();
        let any: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let message = [0x5a; 1000];
        for _ in 0..MESSAGES {
            tap.log(Kind::AuthQuery, false, any, any, now(), &message);
        }
        writer.finish();
        writer_done.send(()).unwrap();
        let received = reader.join().unwrap();
        let [buffer, no_reader, lost] = tap.dropped();
        assert_eq!(
            tap.written(),
            received as u64,
            "dropped {:?}",
            tap.dropped()
        );
        assert_eq!(tap.written() + buffer + no_reader + lost, MESSAGES as u64);
        assert!(lost > 0, "dropped {:?}", tap.dropped());
    }

    /// A reader that listens but never accepts: its backlog fills, and
    /// each connect must still end within the socket timeout, not block.
    #[test]
    fn a_reader_that_never_accepts_does_not_block_the_writer() {
        let dir = tempdir::Dir::new();
        let path = dir.path().join("never-accepts");
        let listener =
            socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None).unwrap();
        listener
            .bind(&socket2::SockAddr::unix(&path).unwrap())
            .unwrap();
        listener.listen(0).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        for attempt in 0..4 {
            let started = Instant::now();
            assert!(connect(&path, &stop).is_err(), "attempt {attempt}");
            let took = started.elapsed();
            assert!(took < SOCKET_TIMEOUT * 4, "attempt {attempt} took {took:?}");
        }
        // A file where the path should be is not written through a link.
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let config = DnstapConfig::new(DnstapOutput::File(link));
        assert!(start_now(&config, 1).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }

    #[test]
    fn queries_or_responses_alone() {
        let dir = tempdir::Dir::new();
        let path = dir.path().join("tap");
        let mut config = DnstapConfig::new(DnstapOutput::File(path.clone()));
        config.log_queries = false;
        let (writer, mut parts) = start_now(&config, 1).unwrap();
        let tap = Tap::new(parts.remove(0), Vec::new());
        let any: SocketAddr = "127.0.0.1:1".parse().unwrap();
        tap.log(Kind::AuthQuery, false, any, any, now(), b"q");
        tap.log(Kind::ClientQuery, false, any, any, now(), b"q");
        tap.log(Kind::ClientResponse, false, any, any, now(), b"r");
        writer.finish();
        let (_, data, _) = frames(&std::fs::read(&path).unwrap());
        assert_eq!(data.len(), 1);
        let message = DnstapFrame::decode(data[0].as_slice())
            .unwrap()
            .message
            .unwrap();
        assert_eq!(message.r#type, Kind::ClientResponse as i32);
        // No identity configured: none written.
        assert_eq!(
            DnstapFrame::decode(data[0].as_slice()).unwrap().identity,
            None
        );
    }

    #[test]
    fn the_socket_handshake_then_data_then_stop_and_finish() {
        let dir = tempdir::Dir::new();
        let path = dir.path().join("tap.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let config = DnstapConfig::new(DnstapOutput::Socket(path));
        let (writer, mut parts) = start_now(&config, 1).unwrap();
        let tap = Tap::new(parts.remove(0), Vec::new());
        let (mut reader, _) = listener.accept().unwrap();
        reader
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let ready = read_control(&mut reader).unwrap();
        assert_eq!(
            ready,
            Control {
                kind: CONTROL_READY,
                dnstap: true
            }
        );
        reader
            .write_all(&control_frame(CONTROL_ACCEPT, true))
            .unwrap();
        let start = read_control(&mut reader).unwrap();
        assert_eq!(
            start,
            Control {
                kind: CONTROL_START,
                dnstap: true
            }
        );
        let any: SocketAddr = "127.0.0.1:1".parse().unwrap();
        tap.log(Kind::AuthQuery, false, any, any, now(), b"query");
        let mut len = [0u8; 4];
        reader.read_exact(&mut len).unwrap();
        let mut data = vec![0; u32::from_be_bytes(len) as usize];
        reader.read_exact(&mut data).unwrap();
        let message = DnstapFrame::decode(data.as_slice())
            .unwrap()
            .message
            .unwrap();
        assert_eq!(message.query_message.as_deref(), Some(&b"query"[..]));
        let finishing = std::thread::spawn(move || writer.finish());
        let stop = read_control(&mut reader).unwrap();
        assert_eq!(
            stop,
            Control {
                kind: CONTROL_STOP,
                dnstap: true
            }
        );
        reader
            .write_all(&control_frame(CONTROL_FINISH, false))
            .unwrap();
        finishing.join().unwrap();
        assert_eq!((tap.written(), tap.dropped()), (1, [0; 3]));
    }

    #[test]
    fn hostile_control_frames_are_refused() {
        // A data frame, an oversized control frame, a field that overruns
        // its frame, a content type too long, another content type only.
        let mut data = Vec::new();
        data.extend_from_slice(&5u32.to_be_bytes());
        assert!(read_control(&mut data.as_slice()).is_err());
        let mut huge = vec![0, 0, 0, 0];
        huge.extend_from_slice(&(MAX_CONTROL_FRAME as u32 + 1).to_be_bytes());
        huge.resize(2000, 0);
        assert!(read_control(&mut huge.as_slice()).is_err());
        let mut overrun = CONTROL_ACCEPT.to_be_bytes().to_vec();
        overrun.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 40]);
        overrun.extend_from_slice(b"short");
        assert_eq!(parse_control(&overrun), None);
        let mut long = CONTROL_ACCEPT.to_be_bytes().to_vec();
        long.extend_from_slice(&FIELD_CONTENT_TYPE.to_be_bytes());
        long.extend_from_slice(&(MAX_CONTENT_TYPE as u32 + 1).to_be_bytes());
        long.resize(long.len() + MAX_CONTENT_TYPE + 1, b'x');
        assert_eq!(parse_control(&long), None);
        let mut other = CONTROL_ACCEPT.to_be_bytes().to_vec();
        other.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 4]);
        other.extend_from_slice(b"json");
        assert_eq!(
            parse_control(&other),
            Some(Control {
                kind: CONTROL_ACCEPT,
                dnstap: false
            })
        );
        assert_eq!(parse_control(&[0, 0]), None);
        assert_eq!(
            parse_control(&CONTROL_FINISH.to_be_bytes()),
            Some(Control {
                kind: CONTROL_FINISH,
                dnstap: true
            })
        );
    }

    #[test]
    fn a_reader_that_refuses_dnstap_gets_nothing() {
        let dir = tempdir::Dir::new();
        let path = dir.path().join("tap.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let reader = std::thread::spawn(move || {
            let (mut reader, _) = listener.accept().unwrap();
            read_control(&mut reader).unwrap();
            let mut accept = CONTROL_ACCEPT.to_be_bytes().to_vec();
            accept.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 4]);
            accept.extend_from_slice(b"json");
            reader.write_all(&[0, 0, 0, 0]).unwrap();
            reader
                .write_all(&(accept.len() as u32).to_be_bytes())
                .unwrap();
            reader.write_all(&accept).unwrap();
            let mut rest = Vec::new();
            let _ = reader.read_to_end(&mut rest);
            rest
        });
        let stop = Arc::new(AtomicBool::new(false));
        assert!(connect(&dir.path().join("tap.sock"), &stop).is_err());
        // The writer closed without START.
        assert_eq!(reader.join().unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn a_reader_that_trickles_cannot_hold_the_handshake() {
        // It answers READY with a valid ACCEPT, one octet every 100 ms:
        // the handshake gives up after SOCKET_TIMEOUT, not 42 octets (4.2 s)
        // later.
        let dir = tempdir::Dir::new();
        let path = dir.path().join("tap.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let reader = std::thread::spawn(move || {
            let (mut reader, _) = listener.accept().unwrap();
            read_control(&mut reader).unwrap();
            for octet in control_frame(CONTROL_ACCEPT, true) {
                if reader.write_all(&[octet]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let err = connect(&path, &stop).err().expect("the handshake fails");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut, "{err}");
        let took = started.elapsed();
        assert!(took < SOCKET_TIMEOUT + Duration::from_secs(2), "{took:?}");
        reader.join().unwrap();
    }

    /// A temporary directory removed on drop (std only).
    mod tempdir {
        use std::path::{Path, PathBuf};
        use std::sync::atomic::{AtomicUsize, Ordering};

        pub(super) struct Dir(PathBuf);

        impl Dir {
            pub(super) fn new() -> Dir {
                static NEXT: AtomicUsize = AtomicUsize::new(0);
                let path = std::env::temp_dir().join(format!(
                    "tern-dnstap-{}-{}",
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&path).unwrap();
                Dir(path)
            }

            pub(super) fn path(&self) -> &Path {
                &self.0
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }
}
