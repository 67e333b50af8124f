//! DNS over TLS (RFC 7858) on the `tls.listen` addresses.
//!
//! Each core has its own SO_REUSEPORT listener per address, as for TCP,
//! and serves the connections it accepts on its reactor. A connection is
//! a TLS handshake (rustls's unbuffered API over monoio's `TcpStream`:
//! `UnbufferedServerConnection::process_tls_records` and its states, with
//! buffers of our own), then the decrypted stream is served by the same
//! framing as TCP (`crate::tcp::serve_stream`): RFC 7766 frames,
//! pipelining, out-of-order forwarded answers, the same timeouts and
//! in-flight limit. One `Tls` (the rustls connection and its buffers) is
//! shared by the two halves through a `RefCell`, borrowed only between
//! awaits.
//!
//! Memory (issue 26: 10,000 idle connections in 100 MiB): a connection
//! waiting for its next query holds no ciphertext or plaintext buffer (its
//! pending read is a five-octet record header), and its answers are
//! encrypted into a stream buffer of the core's pool, many records per
//! write, given back once written; what remains is rustls's state (keys,
//! the handshake's outcome) and the framing's own small read buffer. See
//! docs/decisions/0017. Reading allocates nothing per record: the header
//! is awaited in five octets of the connection's own, the rest of a record
//! read into a stream buffer of the pool (`Tls::incoming`), given back once
//! rustls has consumed it (a client stalled mid-record holds one until the
//! message timeout, as a TCP client stalled mid-frame holds its read
//! buffer). rustls itself allocates once per record it decrypts (it copies
//! the plaintext into its queue) and once per record it encrypts (its
//! record layer's output message): two per query and answer
//! (tests/tls/allocations.py).
//!
//! Limits, each closing the connection:
//! - per core, `tcp.max-connections` open TLS connections (counted apart
//!   from TCP's, so that a flood on one port does not starve the other);
//! - the handshake must finish within `tcp.initial-timeout` (a client
//!   that never finishes it, or trickles it, holds its slot no longer);
//!   then the first query has `tcp.initial-timeout` again and later ones
//!   `tcp.idle-timeout` and `tcp.message-timeout`, as over TCP;
//! - ciphertext held for an unfinished record (or handshake message) is
//!   at most `MAX_INCOMING` octets; rustls refuses longer records,
//!   renegotiation (TLS 1.2: a ClientHello after the handshake is a fatal
//!   unexpected message) and key-update floods itself.
//!
//! Zone transfers (XoT, RFC 9103) are served over these connections as
//! over TCP (`crate::xfr_out`, which `transfer.tls-only` restricts to
//! them); with `tls.client-ca` set, only to a client whose certificate
//! chained to it ([`config::ClientRoots`], RFC 9103 section 9.3.3).
//! NOTIFY stays on port 53.
//!
//! EDNS padding (RFC 7830): the answer to a query that carried a Padding
//! option is padded to a multiple of [`padding::PADDING_BLOCK`] octets (RFC 8467's
//! recommended block for responses), over TLS only.

use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use monoio::buf::{IoBuf, IoBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt, Splitable};
use monoio::net::tcp::{TcpOwnedReadHalf, TcpOwnedWriteHalf};
use monoio::net::{TcpListener, TcpStream};
use rustls::server::{ServerConnectionData, UnbufferedServerConnection};
use rustls::unbuffered::{
    ConnectionState, EncodeError, InsufficientSizeError, UnbufferedStatus, WriteTraffic,
};

use crate::core::Core;
use crate::pool::{self, Size, STREAM_BUFFER};
use crate::stats::{TlsCounters, TRANSPORT_TLS};
use crate::tcp::{deadline, serve_stream, ReadStream, Stream, WriteStream};
use crate::xfr_out::{Channel, ClientCertificate};

pub mod config;
pub mod padding;

/// Ciphertext read from the socket at once, past the rest of a record
/// whose header was read: a ClientHello, or dozens of queries' records.
/// Read into a pool buffer, given back once rustls has processed it.
const CIPHER_READ: usize = 2048;

/// A TLS record's header: type, version, length.
const RECORD_HEADER: usize = 5;

/// The most plaintext in one record (RFC 8446 section 5.1).
const MAX_FRAGMENT: usize = 1 << 14;

/// Room for a record's overhead past its plaintext: header, explicit
/// nonce (TLS 1.2), content type (TLS 1.3) and tag; 21 to 29 octets with
/// the suites rustls offers.
const RECORD_OVERHEAD: usize = 32;

/// Room for an encrypted close_notify alert.
const CLOSE_NOTIFY_ROOM: usize = 64;

/// The most ciphertext a connection holds unprocessed: a handshake
/// message rustls is still joining (up to 64 KiB) and a whole record
/// (2^14 + 256 octets of ciphertext and its header) more. Past it, the
/// connection ends.
const MAX_INCOMING: usize = 0xffff + MAX_FRAGMENT + 256 + RECORD_HEADER;

/// The most states rustls may yield in one processing pass: one per record
/// of at most [`MAX_INCOMING`] octets (six at least each) and per message
/// it queued, with room to spare. A pass past it ends the connection.
const MAX_STATES: usize = 1 << 16;

/// How long the accept loop pauses after a failed accept.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// The outcomes and protocol versions of handshakes (in `stats`, whose
/// text line names them too).
pub use crate::stats::{HANDSHAKE_OUTCOMES, TLS_VERSIONS};

const OUTCOME_OK: usize = 0;
const OUTCOME_FAILED: usize = 1;
const OUTCOME_TIMEOUT: usize = 2;
const OUTCOME_CLOSED: usize = 3;

//----------- TlsConfig ------------------------------------------------------

/// DNS over TLS: the addresses and the rustls configuration (built by
/// [`config::server_config`]; its certificate is swapped in place on
/// reload, [`config::Certificates::replace`]).
#[derive(Clone, Debug)]
pub struct TlsConfig {
    /// Addresses to serve DNS over TLS on (port 853, usually).
    pub listen: Vec<SocketAddr>,
    /// The rustls server configuration every core serves with.
    pub server: Arc<rustls::ServerConfig>,
    /// The trust anchors of client certificates the configuration
    /// verifies with (`tls.client-ca`), asked whether transfers need one.
    pub clients: Arc<config::ClientRoots>,
}

impl PartialEq for TlsConfig {
    fn eq(&self, other: &Self) -> bool {
        self.listen == other.listen
            && Arc::ptr_eq(&self.server, &other.server)
            && Arc::ptr_eq(&self.clients, &other.clients)
    }
}

//----------- handshake counts -----------------------------------------------

/// Counts a handshake by its outcome ([`HANDSHAKE_OUTCOMES`]) and the
/// protocol version it settled on ([`TLS_VERSIONS`]).
fn count_handshake(
    counters: &TlsCounters,
    outcome: usize,
    connection: &UnbufferedServerConnection,
) {
    let version = match connection.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => 0,
        Some(rustls::ProtocolVersion::TLSv1_2) => 1,
        _ => 2,
    };
    if let Some(count) = counters
        .handshakes
        .get(outcome)
        .and_then(|row| row.get(version))
    {
        count.set(count.get() + 1);
    }
}

//----------- serve ----------------------------------------------------------

/// Accepts TLS connections on `listener` until the core stops.
pub(crate) async fn serve(
    listener: TcpListener,
    server: Arc<rustls::ServerConfig>,
    clients: Arc<config::ClientRoots>,
    core: Rc<Core>,
) -> io::Result<()> {
    let stop = core.stop.listener();
    loop {
        let Some(accepted) = stop.or(listener.accept()).await else {
            return Ok(());
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(_) => {
                if stop
                    .or(crate::tcp::deadline::sleep(ACCEPT_BACKOFF))
                    .await
                    .is_none()
                {
                    return Ok(());
                }
                continue;
            }
        };
        let counters = &core.tls_counters.connections;
        if counters.open.get() >= core.tcp.max_connections as u64 {
            counters.refused.set(counters.refused.get() + 1);
            drop(stream);
            continue;
        }
        let Ok(connection) = UnbufferedServerConnection::new(Arc::clone(&server)) else {
            continue; // never: the configuration was built to be valid
        };
        // Moved to the heap here, not in the task: rustls's connection
        // (over 1 KiB) would otherwise stay in the task's captures and
        // arguments for the connection's life, idle or not (issue 26).
        let tls = Rc::new(RefCell::new(Tls::new(connection)));
        counters.accepted.set(counters.accepted.get() + 1);
        counters.open.set(counters.open.get() + 1);
        let core = Rc::clone(&core);
        // Whether this handshake asks for a client certificate: read
        // once, as rustls reads it once at the handshake.
        let required = clients.required();
        monoio::spawn(async move {
            serve_connection(stream, peer, tls, required, &core).await;
            let open = &core.tls_counters.connections.open;
            open.set(open.get() - 1);
        });
    }
}

/// One connection: the handshake within the initial timeout, then DNS
/// over the decrypted stream; at the end, a close_notify (or the alert
/// that ended it), written within the write timeout. `client_ca`: the
/// handshake asks for a client certificate, and transfers need one.
async fn serve_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    tls: Rc<RefCell<Tls>>,
    client_ca: bool,
    core: &Rc<Core>,
) {
    let stop = core.stop.listener();
    // Pinned here and lent to `or`, which would otherwise hold a second
    // copy of the handshake's state (and timer) for the whole connection.
    let outcome = {
        let handshake = pin!(handshake(&mut stream, &tls));
        let handshake = pin!(deadline::timeout(core.tcp.initial_timeout, handshake));
        stop.or(handshake).await
    };
    let outcome = match outcome {
        None => return,
        Some(Err(_)) => OUTCOME_TIMEOUT,
        Some(Ok(outcome)) => outcome,
    };
    {
        let tls = tls.borrow();
        count_handshake(&core.tls_counters, outcome, &tls.connection);
        if outcome == OUTCOME_OK
            && tls.connection.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
        {
            let resumed = &core.tls_counters.resumed;
            resumed.set(resumed.get() + 1);
        }
    }
    if outcome != OUTCOME_OK {
        if outcome == OUTCOME_FAILED {
            // The alert saying why, if the client still reads.
            let alert = std::mem::take(&mut tls.borrow_mut().outgoing);
            if !alert.is_empty() {
                let _ =
                    deadline::timeout(core.tcp.write_timeout, pin!(stream.write_all(alert))).await;
            }
        }
        return;
    }
    let certificate = if !client_ca {
        ClientCertificate::NotRequired
    } else if tls.borrow().connection.peer_certificates().is_some() {
        ClientCertificate::Verified
    } else {
        ClientCertificate::Missing
    };
    let local = core.dnstap.as_ref().and_then(|_| stream.local_addr().ok());
    let fd = stream.as_raw_fd();
    let (reader, writer) = stream.into_split();
    let failed = Rc::new(std::cell::Cell::new(false));
    let reader = TlsReader {
        tcp: reader,
        fd,
        tls: Rc::clone(&tls),
        busy: false,
        failed: Rc::clone(&failed),
    };
    let writer = TlsWriter {
        tcp: writer,
        tls: Rc::clone(&tls),
    };
    let stream = Stream {
        counters: &core.tls_counters.connections,
        transport: TRANSPORT_TLS,
        channel: Channel::Tls(certificate),
    };
    let mut writer = serve_stream(reader, writer, Vec::new(), (peer, local), stream, core).await;
    if failed.get() {
        let errors = &core.tls_counters.protocol_errors;
        errors.set(errors.get() + 1);
    }
    if !stop.fired() {
        let _ = deadline::timeout(core.tcp.write_timeout, pin!(writer.close())).await;
    }
}

/// Runs the handshake: reads the client's flights and writes ours until
/// rustls is done (TLS 1.3 session tickets written too). What the client
/// sent after its Finished (its first queries) stays, decrypted in
/// `plain` or not yet processed in `incoming`, for the reader. Returns an
/// outcome of [`HANDSHAKE_OUTCOMES`].
async fn handshake(stream: &mut TcpStream, tls: &RefCell<Tls>) -> usize {
    // Each pass writes what rustls made, then ends or reads at least one
    // octet; the caller's timeout bounds the whole, and `MAX_INCOMING`
    // what a pass may hold.
    loop {
        let pumped = {
            let mut tls = tls.borrow_mut();
            let mut sink = std::mem::take(&mut tls.plain);
            let pumped = tls.pump(&mut sink, None);
            tls.plain = sink;
            pumped
        };
        let Ok(pumped) = pumped else {
            return OUTCOME_FAILED;
        };
        let flight = std::mem::take(&mut tls.borrow_mut().outgoing);
        if !flight.is_empty() && stream.write_all(flight).await.0.is_err() {
            return OUTCOME_CLOSED;
        }
        match pumped {
            Pumped::Closed => return OUTCOME_CLOSED,
            Pumped::Traffic if !tls.borrow().connection.is_handshaking() => return OUTCOME_OK,
            Pumped::Traffic | Pumped::Blocked => {}
        }
        let want = {
            let tls = tls.borrow();
            if tls.incoming.len() >= MAX_INCOMING {
                return OUTCOME_FAILED;
            }
            read_size(&tls.incoming, true)
        };
        // Allocated per read of the handshake (a few per connection).
        let (result, fresh) = stream.read(Vec::with_capacity(want)).await;
        match result {
            Ok(0) | Err(_) => return OUTCOME_CLOSED,
            Ok(_) => tls.borrow_mut().append(&fresh),
        }
    }
}

//----------- Tls ------------------------------------------------------------

/// What [`Tls::pump`] stopped at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pumped {
    /// rustls needs more ciphertext (mid-handshake).
    Blocked,
    /// Everything complete was processed; application data may be sent
    /// (and was, if the caller gave data to encrypt).
    Traffic,
    /// Both sides sent their close_notify.
    Closed,
}

/// Writes application data (or a close_notify) into the output at a
/// `WriteTraffic` state, given the records rustls queued before it
/// (`outgoing`), which must leave first.
type Encrypt<'a> = dyn FnMut(&mut WriteTraffic<'_, ServerConnectionData>, &mut Vec<u8>) -> Result<(), rustls::Error>
    + 'a;

/// One connection's TLS state, shared by the read and write halves and
/// borrowed only between awaits. rustls's unbuffered API: the buffers are
/// ours, and a connection with nothing in flight holds none of them.
struct Tls {
    connection: UnbufferedServerConnection,
    /// Ciphertext read and not yet discarded by rustls: at most a partial
    /// record (and the records of a handshake message still being
    /// joined) once processed; freed when empty.
    incoming: Vec<u8>,
    /// Plaintext decrypted while the writer drove rustls, for the reader
    /// (rarely anything: the reader processes what it reads at once).
    plain: Vec<u8>,
    /// Records rustls made (handshake flights, tickets, alerts, key
    /// updates) and not yet written; they leave before anything encrypted
    /// after them.
    outgoing: Vec<u8>,
    /// The reader's own buffer for the wait for a record's header
    /// ([`RECORD_HEADER`] octets; allocated at the first such wait, then
    /// reused): an idle connection's pending read holds this, not a pool
    /// buffer. Here rather than in the reader, which the task holds.
    header: Vec<u8>,
    /// The client's close_notify was seen: no more data will come.
    peer_closed: bool,
    /// rustls refused the client's input: it is not called again past
    /// collecting its alert (processing more input after an error would
    /// make it queue a second fatal alert, which it asserts against).
    failed: bool,
}

impl Tls {
    fn new(connection: UnbufferedServerConnection) -> Self {
        Self {
            connection,
            incoming: Vec::new(),
            plain: Vec::new(),
            outgoing: Vec::new(),
            header: Vec::new(),
            peer_closed: false,
            failed: false,
        }
    }

    /// Appends ciphertext read from the socket to `incoming` (a stream
    /// buffer of the pool, taken if it holds none).
    fn append(&mut self, fresh: &[u8]) {
        self.incoming_buffer();
        self.incoming.extend_from_slice(fresh);
    }

    /// Makes `incoming` a buffer of the pool (emptied) if it holds none.
    fn incoming_buffer(&mut self) {
        if self.incoming.capacity() == 0 {
            self.incoming = pool::take(Size::Stream);
            self.incoming.clear();
        }
    }

    /// Lets rustls process `incoming` until it needs more: decrypted data
    /// is appended to `sink`, records it makes to `outgoing`; at the
    /// `WriteTraffic` state, `encrypt` (if any) writes the output. An error
    /// is rustls refusing what the client sent (its alert is then queued,
    /// [`Self::collect_alert`]), and every later call fails at once.
    fn pump(
        &mut self,
        sink: &mut Vec<u8>,
        mut encrypt: Option<&mut Encrypt<'_>>,
    ) -> Result<Pumped, rustls::Error> {
        if self.failed {
            return Err(rustls::Error::General("the connection failed".into()));
        }
        // Each pass handles one state; rustls yields a bounded number
        // (one per record of `incoming`, per queued message), and the
        // guard ends a connection that would loop.
        for _ in 0..MAX_STATES {
            let UnbufferedStatus { mut discard, state } =
                self.connection.process_tls_records(&mut self.incoming);
            let result = match state {
                Err(err) => Err(err),
                Ok(ConnectionState::ReadTraffic(mut traffic)) => {
                    // Each pass takes one decrypted record.
                    loop {
                        match traffic.next_record() {
                            Some(Ok(record)) => {
                                discard += record.discard;
                                sink.extend_from_slice(record.payload);
                            }
                            Some(Err(err)) => break Err(err),
                            None => break Ok(None),
                        }
                    }
                }
                Ok(ConnectionState::EncodeTlsData(mut data)) => {
                    let start = self.outgoing.len();
                    match data.encode(&mut []) {
                        Err(EncodeError::InsufficientSize(InsufficientSizeError {
                            required_size,
                        })) => {
                            self.outgoing.resize(start + required_size, 0);
                            match data.encode(&mut self.outgoing[start..]) {
                                Ok(written) => {
                                    self.outgoing.truncate(start + written);
                                    Ok(None)
                                }
                                Err(_) => Err(rustls::Error::General("encoding failed".into())),
                            }
                        }
                        Ok(_) | Err(_) => Ok(None), // an empty record: nothing to send
                    }
                }
                // What was encoded sits in `outgoing`, which the next
                // write sends before anything else.
                Ok(ConnectionState::TransmitTlsData(data)) => {
                    data.done();
                    Ok(None)
                }
                Ok(ConnectionState::BlockedHandshake) => Ok(Some(Pumped::Blocked)),
                Ok(ConnectionState::PeerClosed) => {
                    self.peer_closed = true;
                    Ok(None)
                }
                Ok(ConnectionState::Closed) => Ok(Some(Pumped::Closed)),
                Ok(ConnectionState::WriteTraffic(mut traffic)) => match encrypt.as_mut() {
                    Some(encrypt) => {
                        encrypt(&mut traffic, &mut self.outgoing).map(|()| Some(Pumped::Traffic))
                    }
                    None => Ok(Some(Pumped::Traffic)),
                },
                // Early data is never accepted (no `max_early_data_size`).
                Ok(_) => Err(rustls::Error::General("unexpected TLS state".into())),
            };
            // The discard is applied before rustls is called again.
            discard = discard.min(self.incoming.len());
            self.incoming.drain(..discard);
            if self.incoming.is_empty() && self.incoming.capacity() > 0 {
                // Back to the pool (a buffer grown past its size is freed).
                pool::put(std::mem::take(&mut self.incoming));
            }
            match result {
                Ok(Some(pumped)) => return Ok(pumped),
                Ok(None) => {}
                Err(err) => {
                    self.collect_alert();
                    return Err(err);
                }
            }
        }
        self.failed = true;
        Err(rustls::Error::General("too many TLS states".into()))
    }

    /// After rustls refused the client's input: queues in `outgoing` what
    /// it had queued (the alert saying why, after a ServerHello if the
    /// handshake got that far), and marks the connection failed. rustls is
    /// called only while it has records queued, which it hands out before
    /// processing any more input: processing more after an error would make
    /// it queue a second fatal alert, which it asserts against.
    fn collect_alert(&mut self) {
        self.failed = true;
        // Each pass takes one queued message; rustls queued a few at most.
        for _ in 0..MAX_STATES {
            if !self.connection.wants_write() {
                break;
            }
            let UnbufferedStatus { discard, state } =
                self.connection.process_tls_records(&mut self.incoming);
            let encoded = match state {
                Ok(ConnectionState::EncodeTlsData(mut data)) => {
                    let start = self.outgoing.len();
                    if let Err(EncodeError::InsufficientSize(InsufficientSizeError {
                        required_size,
                    })) = data.encode(&mut [])
                    {
                        self.outgoing.resize(start + required_size, 0);
                        match data.encode(&mut self.outgoing[start..]) {
                            Ok(written) => self.outgoing.truncate(start + written),
                            Err(_) => self.outgoing.truncate(start),
                        }
                    }
                    true
                }
                _ => false,
            };
            let discard = discard.min(self.incoming.len());
            self.incoming.drain(..discard);
            if !encoded {
                break;
            }
        }
    }
}

/// How many octets to read next, given what `incoming` holds: the rest of
/// its record and [`CIPHER_READ`] more; with nothing held, a record header
/// only unless the last read was `busy` (filled its buffer: the client has
/// more queued), so that a connection waiting for its next query holds a
/// five-octet buffer, not a read's worth.
fn read_size(incoming: &[u8], busy: bool) -> usize {
    match incoming.get(..RECORD_HEADER) {
        Some(header) => {
            let record = RECORD_HEADER + usize::from(u16::from_be_bytes([header[3], header[4]]));
            record.saturating_sub(incoming.len()).max(CIPHER_READ)
        }
        None if busy || !incoming.is_empty() => CIPHER_READ,
        None => RECORD_HEADER,
    }
}

//----------- TlsReader, TlsWriter -------------------------------------------

/// The plaintext read side of a TLS connection.
struct TlsReader {
    tcp: TcpOwnedReadHalf,
    /// The socket, for the reads that do not wait: valid while `tcp`
    /// (which holds the stream) lives.
    fd: RawFd,
    tls: Rc<RefCell<Tls>>,
    /// The last read filled its buffer.
    busy: bool,
    /// Set when rustls refused what the client sent after the handshake
    /// (a record that does not decrypt, a KeyUpdate, warning-alert or
    /// renegotiation flood past rustls's limits): the connection ends.
    failed: Rc<std::cell::Cell<bool>>,
}

impl ReadStream for TlsReader {
    async fn read_into(
        &mut self,
        mut buffer: Vec<u8>,
        filled: usize,
    ) -> (io::Result<usize>, Vec<u8>) {
        buffer.truncate(filled);
        // Each pass returns, or reads at least one octet from the socket
        // (or ends); `MAX_INCOMING` bounds what waits for a record's end.
        loop {
            let want = {
                let mut tls = self.tls.borrow_mut();
                if !tls.plain.is_empty() {
                    let plain = std::mem::take(&mut tls.plain);
                    buffer.extend_from_slice(&plain);
                    return (Ok(buffer.len() - filled), buffer);
                }
                // Decrypted queries go straight into the framing's buffer
                // (growing it past its room when a read held more: at most
                // `MAX_INCOMING` octets).
                if let Err(err) = tls.pump(&mut buffer, None) {
                    self.failed.set(true);
                    return (Err(io::Error::new(io::ErrorKind::InvalidData, err)), buffer);
                }
                if buffer.len() > filled || tls.peer_closed {
                    return (Ok(buffer.len() - filled), buffer);
                }
                if tls.incoming.len() >= MAX_INCOMING {
                    self.failed.set(true);
                    return (Err(io::ErrorKind::InvalidData.into()), buffer);
                }
                read_size(&tls.incoming, self.busy)
            };
            // Nothing allocated per read: a record's header is awaited in
            // the connection's own five octets; the rest of a record (and
            // whatever follows it) is read straight into `incoming`, a
            // buffer of the pool, given back once rustls has consumed it.
            // One read, into one of two buffers (a single await: the
            // task holds one read's state, not one per buffer).
            let waiting = want == RECORD_HEADER;
            let mut target = if waiting {
                let mut header = std::mem::take(&mut self.tls.borrow_mut().header);
                header.clear();
                header
            } else {
                // Out of the shared state while the read is pending: the
                // write half's processing meanwhile sees no ciphertext (it
                // only ever consumes it), and nothing else appends to it.
                // Dropped unfinished (a timeout), the buffer is lost with
                // the read, and the connection closes.
                let mut tls = self.tls.borrow_mut();
                tls.incoming_buffer();
                std::mem::take(&mut tls.incoming)
            };
            let held = target.len();
            // Past what was held, the rest of its record or more: within a
            // pool buffer (the most held once processed is less than a
            // record), grown only if a handshake left more. The header's
            // five octets are allocated once per connection.
            target.reserve_exact(want);
            let (result, slice) = self.tcp.read(target.slice_mut(held..held + want)).await;
            let target = slice.into_inner();
            {
                let mut tls = self.tls.borrow_mut();
                if waiting {
                    if matches!(result, Ok(read) if read > 0) {
                        tls.append(&target);
                    }
                    tls.header = target;
                } else {
                    let mut target = target;
                    if !tls.incoming.is_empty() {
                        // Never (nothing else appends): kept in order anyway.
                        target.extend_from_slice(&std::mem::take(&mut tls.incoming));
                    }
                    tls.incoming = target;
                }
            }
            match result {
                // The end of the socket's stream, with or without the
                // client's close_notify: nothing more will come.
                Ok(0) => return (Ok(0), buffer),
                Ok(read) => self.busy = read == want,
                Err(err) => return (Err(err), buffer),
            }
        }
    }

    fn filled_last_read(&self) -> bool {
        self.busy
    }

    fn read_now(&mut self, buffer: &mut Vec<u8>) -> io::Result<usize> {
        let before = buffer.len();
        let mut tls = self.tls.borrow_mut();
        if !tls.plain.is_empty() {
            buffer.extend_from_slice(&std::mem::take(&mut tls.plain));
            return Ok(buffer.len() - before);
        }
        // Ciphertext the socket holds now, into `incoming` (a pool
        // buffer, given back below or by `pump` once consumed): as much as
        // the awaited read would take.
        let want = read_size(&tls.incoming, true);
        tls.incoming_buffer();
        tls.incoming.reserve(want);
        let read = crate::sys::receive_now(self.fd, &mut tls.incoming, want);
        if tls.incoming.is_empty() {
            pool::put(std::mem::take(&mut tls.incoming));
        }
        match read {
            Ok(0) => return Ok(0),
            Ok(read) => self.busy = read == want,
            Err(err) => {
                // Nothing there: the connection is not busy, and its
                // next awaited read takes the small size.
                self.busy = false;
                return Err(err);
            }
        }
        if let Err(err) = tls.pump(buffer, None) {
            self.failed.set(true);
            return Err(io::Error::new(io::ErrorKind::InvalidData, err));
        }
        match buffer.len() - before {
            // Part of a record (or a record with no data for us): the
            // awaited read takes it from here.
            0 if !tls.peer_closed => Err(io::ErrorKind::WouldBlock.into()),
            read => Ok(read),
        }
    }
}

/// The plaintext write side of a TLS connection.
struct TlsWriter {
    tcp: TcpOwnedWriteHalf,
    tls: Rc<RefCell<Tls>>,
}

impl TlsWriter {
    /// Writes a close_notify after what rustls queued, or, if the
    /// connection failed, the alert that says why.
    async fn close(&mut self) -> io::Result<()> {
        let out = {
            let mut tls = self.tls.borrow_mut();
            let mut sink = std::mem::take(&mut tls.plain);
            let mut out = Vec::new();
            let mut close = |traffic: &mut WriteTraffic<'_, ServerConnectionData>,
                             outgoing: &mut Vec<u8>| {
                out.append(outgoing);
                let start = out.len();
                out.resize(start + CLOSE_NOTIFY_ROOM, 0);
                let written = traffic
                    .queue_close_notify(&mut out[start..])
                    .map_err(|err| rustls::Error::General(err.to_string()))?;
                out.truncate(start + written);
                Ok(())
            };
            // Failed: the alert saying why is queued instead.
            let _ = tls.pump(&mut sink, Some(&mut close));
            let mut queued = std::mem::take(&mut tls.outgoing);
            queued.append(&mut out);
            queued
        };
        if out.is_empty() {
            return Ok(());
        }
        self.tcp.write_all(out).await.0.map(|_| ())
    }
}

impl WriteStream for TlsWriter {
    async fn write_from(&mut self, buffer: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let mut written = 0;
        // Each pass encrypts at least one octet into an output buffer of
        // the pool (as many records as fit: one write for a whole batch of
        // answers), and writes it, or ends.
        while written < len {
            let mut out = pool::take(Size::Stream);
            let mut used = 0;
            let encrypted = {
                let mut tls = self.tls.borrow_mut();
                let mut sink = std::mem::take(&mut tls.plain);
                let plaintext = &buffer[written..len];
                let mut taken = 0;
                let mut encrypt = |traffic: &mut WriteTraffic<'_, ServerConnectionData>,
                                   outgoing: &mut Vec<u8>| {
                    if !outgoing.is_empty() {
                        // Rare and small (a key update, tickets): ahead
                        // of the records, growing the buffer if it must.
                        out.truncate(used);
                        out.append(outgoing);
                        used = out.len();
                        let end = (used + MAX_FRAGMENT + RECORD_OVERHEAD).max(STREAM_BUFFER);
                        out.resize(end, 0);
                    }
                    taken = fitting(plaintext.len(), out.len() - used);
                    let encrypted = traffic
                        .encrypt(&plaintext[..taken], &mut out[used..])
                        .map_err(|err| rustls::Error::General(err.to_string()))?;
                    used += encrypted;
                    Ok(())
                };
                let pumped = tls.pump(&mut sink, Some(&mut encrypt));
                tls.plain = sink;
                match pumped {
                    Ok(Pumped::Traffic) if taken > 0 => Ok(taken),
                    Ok(_) => Err(io::Error::from(io::ErrorKind::WriteZero)),
                    Err(err) => Err(io::Error::new(io::ErrorKind::InvalidData, err)),
                }
            };
            let taken = match encrypted {
                Ok(taken) => taken,
                Err(err) => {
                    pool::put(out);
                    return (Err(err), buffer);
                }
            };
            written += taken;
            let (result, out) = self.tcp.write_all(out.slice(..used)).await;
            pool::put(out.into_inner());
            if let Err(err) = result {
                return (Err(err), buffer);
            }
        }
        (Ok(()), buffer)
    }
}

/// How much of `plaintext` octets to encrypt into `room` octets: as much
/// as fits with each record's overhead ([`RECORD_OVERHEAD`] per
/// [`MAX_FRAGMENT`] octets), at least one octet if anything fits.
fn fitting(plaintext: usize, room: usize) -> usize {
    let records = room.div_ceil(MAX_FRAGMENT).max(1);
    plaintext.min(room.saturating_sub(records * RECORD_OVERHEAD))
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::tests::future_size;

    /// A TLS connection's task (handshake, then the framing over the
    /// decrypted stream) stays near a TCP connection's (issue 26); its
    /// rustls state (1,088 octets) is on the heap, not in the task.
    #[test]
    fn a_tls_connections_task_is_small() {
        type Args = (
            TcpStream,
            SocketAddr,
            Rc<RefCell<Tls>>,
            bool,
            &'static Rc<Core>,
        );
        let task = future_size(|(s, p, c, r, core): Args| serve_connection(s, p, c, r, core));
        type StreamArgs = (
            TlsReader,
            TlsWriter,
            Vec<u8>,
            (SocketAddr, Option<SocketAddr>),
            Stream<'static>,
            &'static Rc<Core>,
        );
        let served = future_size(|(r, w, b, a, s, c): StreamArgs| serve_stream(r, w, b, a, s, c));
        eprintln!("serve_stream {served} octets, serve_connection {task}");
        assert!(
            served <= crate::tcp::MAX_STREAM_TASK,
            "serve_stream: {served} octets"
        );
        assert!(
            task <= crate::tcp::MAX_CONNECTION_TASK,
            "serve_connection: {task} octets"
        );
    }
}
