//! DNS over TCP (RFC 7766).
//!
//! Each connection runs two halves in one task. The read half reads as
//! much as the client has sent, answers every complete frame
//! synchronously and appends the framed answers to the connection's
//! *pending* buffer; the write half swaps that buffer for its own and
//! writes everything queued with one `write_all`. The read half never
//! waits for a write, so pipelined queries are answered as fast as they
//! arrive (RFC 7766 section 6.2.1.1). Answers leave in order, except
//! forwarded ones (issue 5): a query the worker routes to the forwarder
//! (as over UDP: RD, the client in `forward.allow`, a name outside our
//! zones, not in the forward cache) is handed to it with the connection's
//! [`Client::Tcp`] identity, and its answer (or the stale answer or
//! SERVFAIL) joins the pending buffer whenever it arrives, which the RFC
//! allows. The core's [`Connections`](connections::Connections) table
//! finds the open connection; an answer for a closed one is dropped.
//!
//! Limits, each closing the connection when passed, never queueing
//! without bound (section 6.2.3):
//! - per core, `max_connections` open connections: further ones are
//!   closed as soon as they are accepted;
//! - `initial_timeout` from accepting a connection to the first octet of
//!   its first message, `idle_timeout` between later messages, and
//!   `message_timeout` from a message's first octet to its last, so a
//!   client that sends part of a message and stalls holds its slot for
//!   less than a second by default, and a flood of such clients at the
//!   connection limit delays a new client by at most that long;
//! - `max_in_flight` answers not yet handed to the kernel, forwarded
//!   queries still upstream included: the read half
//!   stops reading (the kernel's window then pushes back on the client)
//!   and the write half's `write_timeout` closes a connection whose client
//!   does not read its answers, ending the read half at once, whatever it
//!   waits for;
//! - a length prefix below a header's size closes the connection.
//!
//! Answers share writes where the client lets them: before the write half
//! writes what one read's queries were answered with, the read half tries
//! a non-blocking receive and answers what it finds into the same write
//! ([`GATHER_READS`] in a row at most, ending at the first that finds
//! nothing: no answer waits for a query that is not there), so a
//! pipelining client's next query, already in the socket, costs no
//! segment of its own (issue 26). A connection whose tries find nothing
//! tries less often ([`GATHER_BACKOFF`]).
//!
//! The framing ([`serve_stream`]) is generic over the byte stream: DNS over
//! TLS (`crate::tls`) hands it a connection's decrypted stream, so its
//! answers, limits and timeouts are these.
//!
//! Buffers: a read buffer of the connection's own, [`READ_SIZE`] octets
//! while its queries are small and few (grown to a longer frame's size or
//! for a deep pipeline, up to a whole frame, and shrunk back once empty),
//! and up to two stream buffers from the core's pool for answers
//! (pending, being written), plus one while an answer waits for room. The
//! answer buffers are taken with the first answer and given back as soon
//! as everything queued is written, so a connection waiting for its next
//! query holds no pool buffer: 10,000 idle connections cost their read
//! buffers, not 10,000 times 64 KiB (issue 26). Memory is bounded by
//! `max_connections` times four buffers per core, whatever the clients
//! send or fail to read, plus
//! forwarded answers that arrived while the pending buffer was full: at
//! most `max_in_flight` per connection, each the forwarder's own
//! allocation (an upstream answer, up to 64 KiB over upstream TCP). The
//! write half waits for forwarded answers still upstream after the read
//! half ends (a client may half-close); the forwarder ends every question
//! within its timeouts, and a stopping core waits for none.
//!
//! The task: every open connection holds its whole future, sized for its
//! largest await, idle or not (issue 26). So the rarely taken awaits
//! (a zone transfer, an UPDATE) are boxed, a future awaited under a guard
//! (`StopListener::or`, `Pipe::unless_failed`, a timeout) is pinned in the
//! caller's frame and lent to it (moved in, each wrapper would hold a
//! copy), and nothing large is held across the read. The timeouts hold no
//! timer of their own (monoio's is 640 octets, 128-aligned): each is a
//! slot of the core's table, which one task sweeps ([`deadline`]).
//! A test bounds the future (`MAX_STREAM_TASK`, `MAX_CONNECTION_TASK`).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::pin;
use std::rc::Rc;
use std::time::{Duration, Instant};

use monoio::buf::{IoBuf, IoBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt, Splitable};
use monoio::net::tcp::{TcpOwnedReadHalf, TcpOwnedWriteHalf};
use monoio::net::{TcpListener, TcpStream};
use tern_cache::forward::Client;
use tern_dnstap::{self as dnstap, Kind};
use tern_wire::query::Query;

use crate::core::Core;
use crate::forward;
use crate::pool::{self, Size, STREAM_BUFFER};
use crate::signal::{yield_now, StopListener};
use crate::stats::TcpCounters;
use crate::worker::{Forwarding, UdpAnswer};
use crate::xfr_out::{self, Start, Transfer};

pub(crate) mod connections;
pub(crate) mod deadline;

use connections::{Pipe, PREFIX};

/// The smallest message worth reading: a header.
const MIN_MESSAGE: usize = 12;

/// The read buffer's capacity while a connection's queries are small and
/// few: each read takes at most this, and a connection waiting for its
/// next query holds this much rather than a pool buffer of
/// [`STREAM_BUFFER`] octets. A frame longer than the buffer grows it to
/// the frame's size; a read that fills it doubles it (a deep pipeline),
/// up to [`STREAM_BUFFER`]; once empty after [`SHRINK_AFTER`] reads in a
/// row that got at most half of this, it shrinks back to it.
const READ_SIZE: usize = 1024;

/// Small reads in a row after which a grown read buffer shrinks back (not
/// at the first: a pipeline whose reads alternate between more and less
/// than [`READ_SIZE`] would reallocate at every read).
const SHRINK_AFTER: u8 = 8;

/// Non-blocking receives the read half tries in a row after answering
/// what a read gave, while answers wait for the write half: each that
/// finds more queries (a pipelining client's next, already in the
/// socket) has them answered into the same write, one segment for
/// several answers (issue 26: with 2 queries in flight per connection,
/// most of the CPU went to a segment per answer). One that finds nothing
/// ends the gathering at once: an answer never waits for a query that is
/// not there. Bounds how long a client that keeps its socket full defers
/// its answers' write: this many reads' worth of queries at most.
pub(crate) const GATHER_READS: u8 = 4;

/// The most batches of answers a connection writes without first trying
/// [`GATHER_READS`] after a first try that found nothing, doubling from
/// one with each such try in a row (and back to none after one that
/// found queries; a read that filled its buffer tries anyway). A client
/// whose queries never wait in the socket (dnsperf's TCP mode, which
/// sends each query on the next of its connections in turn) costs a
/// failed receive per this many batches, not one per answer.
const GATHER_BACKOFF: u8 = 16;

/// How long the accept loop pauses after a failed accept (out of file
/// descriptors, typically), instead of retrying at once in a busy loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

//----------- serve ----------------------------------------------------------

/// Accepts connections until the core stops; `proxied`: a `proxy.listen`
/// listener, whose connections each start with a PROXY header
/// ([`crate::proxy`]), accepted only from `proxy.allow`.
pub(crate) async fn serve(listener: TcpListener, proxied: bool, core: Rc<Core>) -> io::Result<()> {
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
        if proxied && !crate::proxy::allowed(&core.proxy_allow, peer.ip()) {
            core.proxy.refuse(crate::proxy::Refusal::Untrusted);
            drop(stream);
            continue;
        }
        let counters = &core.tcp_counters;
        if counters.open.get() >= core.tcp.max_connections as u64 {
            counters.refused.set(counters.refused.get() + 1);
            drop(stream);
            continue;
        }
        counters.accepted.set(counters.accepted.get() + 1);
        counters.open.set(counters.open.get() + 1);
        let core = Rc::clone(&core);
        monoio::spawn(async move {
            connection(stream, peer, proxied, &core).await;
            let open = &core.tcp_counters.open;
            open.set(open.get() - 1);
        });
    }
}

//----------- connection -----------------------------------------------------

/// Serves one connection from `peer` until the client closes it, a limit
/// closes it or the core stops; then gives its buffers back. With
/// forwarding on, the connection has a slot in the core's table of
/// [`Connections`](connections::Connections) while it is open, where
/// forwarded answers find it. `proxied`: the connection must start with a
/// PROXY header, whose client replaces `peer`; without a valid one within
/// the initial timeout it is closed.
async fn connection(mut stream: TcpStream, peer: SocketAddr, proxied: bool, core: &Rc<Core>) {
    // The read half's buffer starts small ([`READ_SIZE`]); a PROXY header
    // is read into a pool buffer first.
    let mut buffer = Vec::new();
    let peer = if proxied {
        buffer = pool::take(Size::Stream);
        buffer.clear(); // length = octets read and not yet consumed
        let (header, returned) = proxy_header(&mut stream, buffer, peer, core).await;
        let Some(returned) = returned else {
            return; // a cancelled read kept the buffer
        };
        buffer = returned;
        match header {
            Some(client) => client,
            None => {
                pool::put(buffer);
                return;
            }
        }
    } else {
        peer
    };
    // Our address, for dnstap (one getsockname per connection, only when on).
    let local = core.dnstap.as_ref().and_then(|_| stream.local_addr().ok());
    let fd = stream.as_raw_fd();
    let (reader, writer) = stream.into_split();
    let reader = TcpReader { half: reader, fd };
    let stream = Stream {
        counters: &core.tcp_counters,
        transport: TRANSPORT_TCP,
        channel: xfr_out::Channel::Tcp,
    };
    serve_stream(reader, writer, buffer, (peer, local), stream, core).await;
}

//----------- serve_stream ---------------------------------------------------

/// The transport slot of TCP in [`crate::stats::TRANSPORTS`].
const TRANSPORT_TCP: usize = 1;

/// What differs between the byte streams the framing serves (TCP's, and
/// the plaintext of DNS over TLS): where timeouts are counted, and the
/// transport its queries are counted under, and the one zone transfers
/// are checked and counted for.
#[derive(Clone, Copy)]
pub(crate) struct Stream<'a> {
    pub(crate) counters: &'a TcpCounters,
    /// The slot in [`crate::stats::TRANSPORTS`].
    pub(crate) transport: usize,
    /// The transport as `xfr_out` sees it (TLS: with what the client's
    /// certificate proved).
    pub(crate) channel: xfr_out::Channel,
}

/// The read side of a connection's byte stream.
pub(crate) trait ReadStream {
    /// Reads into `buffer[filled..]` (filled < len); `Ok(0)` when the
    /// stream has ended. Dropped unfinished (a timeout), the buffer is
    /// lost with it.
    async fn read_into(&mut self, buffer: Vec<u8>, filled: usize) -> (io::Result<usize>, Vec<u8>);

    /// Appends what the stream holds now to `buffer` without waiting
    /// (within its capacity, or past it by what a TLS record decrypted
    /// to): the octets appended; `Ok(0)` when the stream has ended;
    /// `WouldBlock` if nothing (or nothing complete) is there.
    fn read_now(&mut self, buffer: &mut Vec<u8>) -> io::Result<usize>;

    /// Whether the stream's own last read from the socket took all it
    /// asked for (the client has more queued, likely), past what the
    /// framing's buffer shows: a TLS reader's ciphertext read.
    fn filled_last_read(&self) -> bool {
        false
    }
}

/// The write side of a connection's byte stream.
pub(crate) trait WriteStream {
    /// Writes `buffer[..len]` whole.
    async fn write_from(&mut self, buffer: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>);
}

/// The read half of a TCP connection and its socket, for the reads that
/// do not wait ([`ReadStream::read_now`]): valid while the half (which
/// holds the stream) lives.
pub(crate) struct TcpReader {
    pub(crate) half: TcpOwnedReadHalf,
    pub(crate) fd: RawFd,
}

impl ReadStream for TcpReader {
    async fn read_into(&mut self, buffer: Vec<u8>, filled: usize) -> (io::Result<usize>, Vec<u8>) {
        let (result, slice) = self.half.read(buffer.slice_mut(filled..)).await;
        (result, slice.into_inner())
    }

    fn read_now(&mut self, buffer: &mut Vec<u8>) -> io::Result<usize> {
        crate::sys::receive_now(self.fd, buffer, usize::MAX)
    }
}

impl WriteStream for TcpOwnedWriteHalf {
    async fn write_from(&mut self, buffer: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let (result, slice) = self.write_all(buffer.slice(..len)).await;
        (result.map(|_| ()), slice.into_inner())
    }
}

/// Serves RFC 7766 frames over an open byte stream from `peer` (and to
/// `local`, known when dnstap is on) until the client closes it, a limit
/// closes it or the core stops; then gives its buffers back. `buffer`: a
/// stream buffer from the pool, empty or holding what was read already.
/// With forwarding on, the connection has a slot in the core's table of
/// [`Connections`](connections::Connections) while it is open, where
/// forwarded answers find it.
pub(crate) async fn serve_stream<R: ReadStream, W: WriteStream>(
    reader: R,
    writer: W,
    buffer: Vec<u8>,
    (peer, local): (SocketAddr, Option<SocketAddr>),
    stream: Stream<'_>,
    core: &Rc<Core>,
) -> W {
    let pipe = Rc::new(Pipe::new());
    pipe.addresses.set(local.map(|local| (peer, local)));
    let client = core
        .forward
        .as_ref()
        .map(|io| (peer, io.connections.borrow_mut().register(&pipe)));
    let read_side = read_half(reader, buffer, &pipe, core, (peer, local), client, stream);
    let write_side = write_half(writer, &pipe, core, stream);
    let (read_buffer, (writer, write_buffer)) = monoio::join!(read_side, write_side);
    if let (Some(io), Some((_, client))) = (core.forward.as_ref(), client) {
        // Answers still upstream are dropped when they arrive.
        io.connections.borrow_mut().remove(client);
    }
    pipe.arrived.borrow_mut().clear();
    // A buffer still held by a cancelled read or write is freed by the
    // reactor instead; the pool makes a new one when it runs out.
    drop(read_buffer); // the connection's own, not the pool's
    let buffers = [write_buffer, Some(pipe.pending.take())];
    for buffer in buffers.into_iter().flatten() {
        // An answer buffer never taken is empty and not the pool's.
        if !buffer.is_empty() {
            pool::put(buffer);
        }
    }
    writer
}

/// Reads and answers frames from `peer` into `buffer` (a stream buffer
/// from the pool, holding what was read past a PROXY header, if any);
/// `client`: the peer and its forwarding identity, when forwarding is on.
/// Returns its buffer unless a cancelled read kept it.
async fn read_half<R: ReadStream>(
    mut reader: R,
    mut buffer: Vec<u8>,
    pipe: &Pipe,
    core: &Rc<Core>,
    addresses: (SocketAddr, Option<SocketAddr>),
    client: Option<(SocketAddr, Client)>,
    stream: Stream<'_>,
) -> Option<Vec<u8>> {
    let stop = core.stop.listener();
    let limits = &core.tcp;
    // A pool buffer from the caller (what a PROXY header's reading left, or
    // nothing): its octets move to a buffer of the connection's own, which
    // grows only as its queries need.
    if buffer.capacity() == STREAM_BUFFER {
        let mut own = Vec::with_capacity(READ_SIZE.max(buffer.len()));
        own.extend_from_slice(&buffer);
        pool::put(buffer);
        buffer = own;
    }
    // Whether the last read filled the buffer (the client has more
    // queued), and how many reads in a row got at most half of READ_SIZE.
    let mut last_read = (false, 0u8);
    // Whether to try a non-blocking read before the write half writes.
    let mut gathering = Gathering::default();
    // When the first octet of the frame now in `buffer` arrived.
    let mut frame_started: Option<Instant> = None;
    // Until a first message has arrived, the wait for one is the initial
    // timeout; then the idle timeout.
    let mut between_messages = limits.initial_timeout;
    let mut first_message = true;
    let buffer = loop {
        let Ok(consumed) =
            answer_frames(&buffer, pipe, core, &stop, addresses, client, stream).await
        else {
            break Some(buffer);
        };
        if consumed > 0 {
            buffer.copy_within(consumed.., 0);
            buffer.truncate(buffer.len() - consumed);
            // What is left, if anything, is a frame that began in the last
            // read: its clock starts now.
            frame_started = None;
            between_messages = limits.idle_timeout;
            first_message = false;
        }
        if stop.fired() || pipe.writing_failed.get() {
            break Some(buffer);
        }
        let wait = if buffer.is_empty() {
            between_messages
        } else {
            let started = *frame_started.get_or_insert_with(Instant::now);
            limits.message_timeout.saturating_sub(started.elapsed())
        };
        let filled = buffer.len();
        size_read_buffer(&mut buffer, last_read);
        // Answers wait for the write half (polled once this half waits):
        // queries already in the socket are answered first, into the same
        // write (GATHER_READS).
        if pipe.used.get() > 0 && gathering.try_now(last_read.0 || reader.filled_last_read()) {
            match reader.read_now(&mut buffer) {
                Ok(0) => break Some(buffer), // closed by the client
                Ok(read) => {
                    last_read = next_last_read(last_read, &buffer, read);
                    gathering.found();
                    continue;
                }
                Err(err)
                    if matches!(
                        err.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    gathering.missed();
                }
                Err(_) => break Some(buffer), // reset, or a TLS failure
            }
        }
        gathering.awaited();
        // Pinned here and lent to the guards below: each async wrapper
        // would otherwise hold a copy of the read's state (a timer entry
        // of 640 octets, cache-aligned, with it), doubling it per layer
        // in every connection's task, idle ones too (issue 26).
        let outcome = {
            let read = pin!(reader.read_into(buffer, filled));
            let read = pin!(deadline::timeout(wait, read));
            let guarded = pin!(pipe.unless_failed(read));
            stop.or(guarded).await
        };
        let (result, returned) = match outcome {
            Some(Some(Ok(read))) => read,
            Some(Some(Err(_))) => {
                // Timed out: the cancelled read kept the buffer.
                let timeout = if filled > 0 {
                    crate::stats::TIMEOUT_MESSAGE
                } else if first_message {
                    crate::stats::TIMEOUT_INITIAL
                } else {
                    crate::stats::TIMEOUT_IDLE
                };
                stream.counters.timed_out(timeout);
                break None;
            }
            // Stopped, or the write half failed.
            _ => break None,
        };
        buffer = returned;
        last_read = next_last_read(last_read, &buffer, buffer.len() - filled);
        if matches!(result, Ok(0) | Err(_)) {
            break Some(buffer); // closed by the client, or reset
        }
    };
    pipe.reading_done.set(true);
    // `join!` polls the write half right after this one ends.
    pipe.to_writer.mark();
    buffer
}

/// When the read half tries a non-blocking read before the write half
/// writes what it answered ([`GATHER_READS`], [`GATHER_BACKOFF`]).
#[derive(Default)]
struct Gathering {
    /// Non-blocking reads tried since the last awaited one.
    tries: u8,
    /// Batches to write before the next try, and how many the last miss
    /// made it.
    skip: u8,
    backoff: u8,
}

impl Gathering {
    /// Whether to try a non-blocking read now, with answers queued;
    /// `filled`: the last read took all it asked for.
    fn try_now(&mut self, filled: bool) -> bool {
        if self.tries >= GATHER_READS {
            return false;
        }
        if self.tries == 0 && self.skip > 0 && !filled {
            self.skip -= 1;
            // Skipped: no more tries until the next awaited read.
            self.tries = GATHER_READS;
            return false;
        }
        self.tries += 1;
        true
    }

    /// The try found queries: no batch skipped from now on.
    fn found(&mut self) {
        self.backoff = 0;
        self.skip = 0;
    }

    /// The try found nothing: at a batch's first, the next batches skip
    /// longer.
    fn missed(&mut self) {
        if self.tries == 1 {
            self.backoff = (self.backoff * 2).clamp(1, GATHER_BACKOFF);
            self.skip = self.backoff;
        }
    }

    /// An awaited read follows: a new batch.
    fn awaited(&mut self) {
        self.tries = 0;
    }
}

/// What the read size keeps of a read that appended `read` octets to
/// `buffer`: whether it filled it, and the small reads in a row
/// ([`size_read_buffer`]).
fn next_last_read((_, small_reads): (bool, u8), buffer: &Vec<u8>, read: usize) -> (bool, u8) {
    let filled_up = buffer.len() >= buffer.capacity();
    if read <= READ_SIZE / 2 {
        (filled_up, small_reads.saturating_add(1))
    } else {
        (filled_up, 0)
    }
}

/// Gives the read buffer, holding `filled` octets of a frame not yet
/// complete (or none), room for the next read: the rest of that frame
/// when its length is known, double its capacity after a read that
/// filled it, [`READ_SIZE`] otherwise. An empty buffer that grew is shrunk
/// back after [`SHRINK_AFTER`] small reads in a row, so that a quiet
/// connection holds little and a deep pipeline keeps its room.
/// `(filled_up, small_reads)`: whether the last read filled the buffer,
/// and the small reads in a row. Grows or shrinks only when the client's
/// traffic changes (an allocation then, none per query).
fn size_read_buffer(buffer: &mut Vec<u8>, (filled_up, small_reads): (bool, u8)) {
    let filled = buffer.len();
    let frame = match buffer.get(..PREFIX) {
        Some(prefix) => PREFIX + usize::from(u16::from_be_bytes([prefix[0], prefix[1]])),
        None => 0,
    };
    let wanted = if filled_up {
        (buffer.capacity() * 2).min(STREAM_BUFFER)
    } else {
        READ_SIZE
    };
    let wanted = wanted.max(frame).max(filled + 1);
    if buffer.capacity() < wanted {
        buffer.reserve_exact(wanted - filled);
    } else if filled == 0 && small_reads >= SHRINK_AFTER && buffer.capacity() > READ_SIZE {
        buffer.shrink_to(READ_SIZE);
    }
}

/// Reads the PROXY header that must start a connection from `peer` on a
/// proxied listener into `buffer` (empty), within the initial timeout.
/// Returns the client it names (`peer` itself for LOCAL), or `None` if
/// the connection must close (counted: malformed, cut short or refused;
/// a connection closed or timed out before its first octet is not), and
/// the buffer holding what followed the header, unless a cancelled read
/// kept it. Bounded: the header is at most [`crate::proxy::MAX_HEADER`]
/// octets, and each read adds at least one.
async fn proxy_header(
    stream: &mut TcpStream,
    mut buffer: Vec<u8>,
    peer: SocketAddr,
    core: &Core,
) -> (Option<SocketAddr>, Option<Vec<u8>>) {
    use crate::proxy::{self, Parsed, Refusal};
    let stop = core.stop.listener();
    let deadline = Instant::now() + core.tcp.initial_timeout;
    loop {
        let want = match proxy::parse(&buffer) {
            Parsed::Header(header) => {
                core.proxy.accept();
                buffer.copy_within(header.len.., 0);
                buffer.truncate(buffer.len() - header.len);
                return (Some(header.client.unwrap_or(peer)), Some(buffer));
            }
            Parsed::Incomplete(needed) => needed,
            Parsed::Refused(refusal) => {
                core.proxy.refuse(refusal);
                return (None, Some(buffer));
            }
        };
        // Only up to the header's end: the queries after it are read by
        // the read half, into the same buffer.
        let filled = buffer.len();
        let wait = deadline.saturating_duration_since(Instant::now());
        let read = pin!(stream.read(buffer.slice_mut(filled..want)));
        let read = deadline::timeout(wait, read);
        let (result, slice) = match stop.or(read).await {
            Some(Ok(read)) => read,
            Some(Err(_)) => {
                core.tcp_counters.timed_out(crate::stats::TIMEOUT_INITIAL);
                if filled > 0 {
                    core.proxy.refuse(Refusal::Malformed);
                }
                return (None, None);
            }
            None => return (None, None),
        };
        buffer = slice.into_inner();
        if matches!(result, Ok(0) | Err(_)) {
            // A partial header is refused (proxy-protocol.txt 2.2).
            if !buffer.is_empty() {
                core.proxy.refuse(Refusal::Malformed);
            }
            return (None, Some(buffer));
        }
    }
}

/// Answers every complete frame at the start of `input`; returns how many
/// octets were consumed, or `Err` to close the connection (a malformed
/// length, the write half failed, or the core stopped while waiting for
/// room). A query to forward waits for room in flight first, then is
/// handed to the forwarder; its answer arrives later (out of order, as
/// RFC 7766 section 6.2.1.1 allows).
async fn answer_frames(
    input: &[u8],
    pipe: &Pipe,
    core: &Rc<Core>,
    stop: &StopListener,
    (peer, local): (SocketAddr, Option<SocketAddr>),
    client: Option<(SocketAddr, Client)>,
    stream: Stream<'_>,
) -> Result<usize, ()> {
    let transport = stream.transport;
    let local = local.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
    let mut consumed = 0;
    // Each pass consumes a frame of at least PREFIX + MIN_MESSAGE octets.
    loop {
        // Once the write half has failed (or timed out), nothing answered
        // here can reach the client: stop instead of answering the rest of
        // what is buffered.
        if pipe.writing_failed.get() {
            return Err(());
        }
        let rest = &input[consumed..];
        let Some(prefix) = rest.get(..PREFIX) else {
            return Ok(consumed);
        };
        let size = usize::from(u16::from_be_bytes([prefix[0], prefix[1]]));
        if size < MIN_MESSAGE {
            return Err(());
        }
        let Some(query) = rest.get(PREFIX..PREFIX + size) else {
            return Ok(consumed);
        };
        consumed += PREFIX + size;
        // Parsed once: the transfer check and every stage of the worker
        // take it.
        let parsed = Query::parse(query);
        let max_in_flight = core.tcp.max_in_flight;
        let transfer = {
            let mut scratch = core.scratch.borrow_mut();
            let worker = core.worker.borrow();
            xfr_out::start(
                worker.catalog(),
                &core.transfer,
                Some(&core.journals),
                &core.xfr_out,
                &parsed,
                peer.ip(),
                stream.channel,
                &mut scratch,
            )
        };
        let answered = match transfer {
            Start::Stream(transfer) => {
                if let Some(tap) = &core.dnstap {
                    let time = dnstap::now();
                    tap.log(Kind::AuthQuery, true, peer, local, time, query);
                }
                // Boxed, as the update below: a transfer's state is large,
                // and every connection's task would otherwise be sized for
                // it, idle ones too (issue 26: 10,000 idle TLS connections
                // in 100 MiB). One allocation per transfer.
                if !Box::pin(send_transfer(pipe, core, stop, transfer)).await {
                    return Err(());
                }
                continue;
            }
            Start::Answer(0) => UdpAnswer::Drop,
            Start::Answer(len) => UdpAnswer::Send(len),
            Start::NotTransfer => {
                let mut scratch = core.scratch.borrow_mut();
                let now = core.now(false);
                let mut worker = core.worker.borrow_mut();
                worker.tick_cookie_clock();
                // TCP or TLS over IPv4 or IPv6 (see stats::TRANSPORTS).
                let family = usize::from(peer.ip().to_canonical().is_ipv6());
                worker.count_transport(2 * transport + family, 1);
                worker.answer_tcp(&parsed, Some(peer), now, &mut scratch)
            }
        };
        // dnstap: the query now, its answer once known (from the scratch
        // buffer); one branch per message when off.
        let forwarded = matches!(answered, UdpAnswer::Forward);
        let tapped = core.dnstap.as_ref().map(|tap| {
            let time = dnstap::now();
            tap.log(Kind::query(forwarded), true, peer, local, time, query);
            (tap, time)
        });
        let len = match answered {
            UdpAnswer::Send(len) => len,
            UdpAnswer::Drop => continue,
            // Waits for the zones' owner (this connection only: the core
            // answers everything else meanwhile), then queues the answer.
            UdpAnswer::Update => {
                let update = core.worker.borrow_mut().take_update();
                let Some(answer) =
                    Box::pin(crate::update::answer_update(core.updates.as_ref(), update)).await
                else {
                    continue;
                };
                if let Some((tap, time)) = tapped {
                    tap.log(Kind::response(false), true, peer, local, time, &answer);
                }
                if !wait_for_room(pipe, answer.len(), max_in_flight, stop).await {
                    return Err(());
                }
                pipe.push(&answer);
                continue;
            }
            UdpAnswer::Forward => {
                let Some((_, client)) = client else {
                    continue; // never: no peer, no forwarding
                };
                if !wait_for_room(pipe, 0, max_in_flight, stop).await {
                    return Err(());
                }
                match forward_query(core, pipe, &parsed, client) {
                    Some(len) => len,
                    None => continue,
                }
            }
        };
        // EDNS padding (RFC 7830) over TLS only, for queries that ask.
        let len = if transport == crate::stats::TRANSPORT_TLS
            && crate::tls::padding::asks_padding(parsed.edns_options())
        {
            crate::tls::padding::pad(&mut core.scratch.borrow_mut(), len)
        } else {
            len
        };
        if let Some((tap, time)) = tapped {
            let scratch = core.scratch.borrow();
            let answer = &scratch[..len];
            tap.log(Kind::response(forwarded), true, peer, local, time, answer);
        }
        // The answer is in the core's scratch buffer: queued at once, or,
        // since it must outlive the wait for room, copied into a buffer of
        // the connection's own.
        let (held, len) = {
            let scratch = core.scratch.borrow();
            if pipe.has_room(len, max_in_flight) {
                pipe.push(&scratch[..len]);
                continue;
            }
            let mut held = pool::take(Size::Stream);
            held[..len].copy_from_slice(&scratch[..len]);
            (held, len)
        };
        let room = wait_for_room(pipe, len, max_in_flight, stop).await;
        if room {
            pipe.push(&held[..len]);
        }
        pool::put(held);
        if !room {
            return Err(());
        }
    }
}

/// Queues the messages of an outgoing zone transfer one at a time, each
/// once the connection has room for it, letting the core's other tasks
/// run between messages. False if the connection must close: the client
/// stopped reading (the write half timed out), the core is stopping, or a
/// message could not be written; closing is how a transfer fails.
async fn send_transfer(
    pipe: &Pipe,
    core: &Rc<Core>,
    stop: &StopListener,
    mut transfer: Box<Transfer>,
) -> bool {
    let counters = &core.xfr_out;
    counters.begin();
    let mut held = pool::take(Size::Stream);
    // Each pass queues one message, or ends; the transfer has a bounded
    // number of them (its records plus two).
    let complete = loop {
        let len = match transfer.next(&mut held) {
            Ok(Some(len)) => len,
            Ok(None) => break true,
            Err(()) => break false,
        };
        if !wait_for_room(pipe, len, core.tcp.max_in_flight, stop).await {
            break false;
        }
        pipe.push(&held[..len]);
        yield_now().await;
        if stop.fired() {
            break false;
        }
    };
    pool::put(held);
    counters.finish(&transfer, complete);
    complete
}

/// Hands a query to the forwarder for `client` (this connection): the
/// upstream transmits leave at once and the connection counts one more
/// answer in flight, or, when the forwarder answers at once (a stale
/// answer or SERVFAIL), that answer's length in the core's scratch buffer.
fn forward_query(core: &Rc<Core>, pipe: &Pipe, query: &Query<'_>, client: Client) -> Option<usize> {
    let now = core.now(false);
    // Allocates: a forwarded query does anyway (its upstream query).
    let mut actions = Vec::new();
    let forwarding = {
        let mut scratch = core.scratch.borrow_mut();
        core.worker
            .borrow_mut()
            .forward_tcp(query, client, now, &mut actions, &mut scratch)
    };
    let answered = match forwarding {
        Forwarding::Answered(len) => Some(len),
        Forwarding::Waiting => {
            pipe.forwarded();
            None
        }
        Forwarding::Dropped => None,
    };
    if !actions.is_empty() {
        forward::dispatch(core, &mut actions);
    }
    answered
}

/// Waits until the write half has made room for an answer of `len`
/// octets; false if it failed or the core stopped first. Bounded by the
/// write half's timeout: every write it starts ends within it.
async fn wait_for_room(pipe: &Pipe, len: usize, max_in_flight: usize, stop: &StopListener) -> bool {
    // Each pass waits for a notification from the write half, which
    // comes after each write it completes or when it fails.
    while !pipe.has_room(len, max_in_flight) {
        if pipe.writing_failed.get() || stop.or(pipe.to_reader.wait()).await.is_none() {
            return false;
        }
    }
    !pipe.writing_failed.get()
}

/// Writes queued answers until the read half is done and everything is
/// written (forwarded answers too, unless the core stops first), or a
/// write fails or times out. Returns the writer and its buffer unless a
/// timed-out write kept it.
async fn write_half<W: WriteStream>(
    mut writer: W,
    pipe: &Pipe,
    core: &Core,
    stream: Stream<'_>,
) -> (W, Option<Vec<u8>>) {
    let stop = core.stop.listener();
    // Empty until the first swap with `pending`; the read half fills
    // whichever buffer `pending` holds, taking one when it is empty.
    let mut active = Vec::new();
    loop {
        pipe.move_arrived();
        if pipe.used.get() == 0 {
            // Forwarded answers still upstream end within the forwarder's
            // timeouts, or are given up when the core stops.
            let awaited = pipe.waiting.get() > 0 && !stop.fired();
            if pipe.reading_done.get() && !awaited {
                return (writer, Some(active));
            }
            if awaited {
                // The read half's end comes with a notification; the stop
                // does not.
                let _ = stop.or(pipe.to_writer.wait()).await;
            } else {
                pipe.to_writer.wait().await;
            }
            continue;
        }
        let len = pipe.used.replace(0);
        let answers = pipe.queued.replace(0);
        std::mem::swap(&mut active, &mut pipe.pending.borrow_mut());
        let outcome = {
            let write = pin!(writer.write_from(active, len));
            deadline::timeout(core.tcp.write_timeout, write).await
        };
        let result = match outcome {
            Ok((result, returned)) => {
                active = returned;
                result
            }
            // Timed out: the cancelled write keeps the buffer.
            Err(_) => {
                stream.counters.timed_out(crate::stats::TIMEOUT_WRITE);
                pipe.in_flight.set(pipe.in_flight.get() - answers);
                pipe.fail();
                return (writer, None);
            }
        };
        pipe.in_flight.set(pipe.in_flight.get() - answers);
        if result.is_err() {
            pipe.fail();
            return (writer, Some(active));
        }
        if pipe.used.get() == 0 && pipe.arrived.borrow().is_empty() {
            // Nothing more to write: the buffer goes back to the pool
            // (its length is its capacity: no cost), and a connection
            // waiting for its next query holds no answer buffer. The
            // next answer takes one.
            pool::put(std::mem::take(&mut active));
        }
        pipe.to_reader.notify();
    }
}

/// The most octets a connection's [`serve_stream`] future may take, TCP's
/// or TLS's (a test checks it): what every open connection's task holds,
/// idle or not. No timer in it: the timeouts are slots of the core's
/// [`deadline`] table (monoio's `Sleep`, one per half, was 1,280 octets
/// of it and made it 128-aligned).
#[cfg(test)]
pub(crate) const MAX_STREAM_TASK: usize = 2 * 1024 + 576;

/// The most octets a whole connection's future may take (the framing's,
/// [`MAX_STREAM_TASK`], and what comes before and after it: a PROXY
/// header, a TLS handshake and close).
#[cfg(test)]
pub(crate) const MAX_CONNECTION_TASK: usize = 2 * 1024 + 896;

//=========== Tests ==========================================================

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The size of the future `start` returns, without making one (its
    /// arguments, a core among them, need not exist).
    pub(crate) fn future_size<A, F: std::future::Future>(_: impl FnOnce(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// A TCP connection's task, an idle one too, is this size (issue 26:
    /// 10,000 idle TLS connections in 100 MiB); a large local added to
    /// the common read-answer path grows it past this bound. Rarely
    /// taken arms (transfers, updates) are boxed.
    #[test]
    fn a_connections_task_is_small() {
        type Addresses = (SocketAddr, Option<SocketAddr>);
        let connection = future_size(
            |(stream, peer, proxied, core): (TcpStream, SocketAddr, bool, &'static Rc<Core>)| {
                connection(stream, peer, proxied, core)
            },
        );
        type Args = (
            TcpReader,
            TcpOwnedWriteHalf,
            Vec<u8>,
            Addresses,
            Stream<'static>,
            &'static Rc<Core>,
        );
        let served = future_size(|(r, w, b, a, s, c): Args| serve_stream(r, w, b, a, s, c));
        eprintln!("serve_stream {served} octets, connection {connection}");
        assert!(served <= MAX_STREAM_TASK, "serve_stream: {served} octets");
        assert!(
            connection <= MAX_CONNECTION_TASK,
            "connection: {connection} octets"
        );
    }

    /// Gathering's tries cost a client whose queries never wait in the
    /// socket one failed receive per [`GATHER_BACKOFF`] batches (counted
    /// at two sizes: the tries grow with the batches by 1/16, plus the
    /// doubling's first few); one that found queries tries again at the
    /// next batch, a batch tries at most [`GATHER_READS`] times, and a read
    /// that filled its buffer always tries.
    #[test]
    fn gathering_backs_off_from_a_client_whose_queries_never_wait() {
        let tries_over = |batches: usize| {
            let mut gathering = Gathering::default();
            let mut tries = 0;
            for _ in 0..batches {
                if gathering.try_now(false) {
                    tries += 1;
                    gathering.missed();
                }
                gathering.awaited();
            }
            tries
        };
        // Five tries in the first 20 batches (1, 2, 4 and 8 skipped after
        // the first four misses), then one in every 17 (16 skipped).
        assert_eq!(tries_over(1_000), 5 + (1_000 - 20) / 17);
        assert_eq!(tries_over(2_000), 5 + (2_000 - 20) / 17);

        let mut gathering = Gathering::default();
        assert!(gathering.try_now(false));
        gathering.missed();
        gathering.awaited();
        assert!(!gathering.try_now(false), "skipped after a miss");
        gathering.awaited();
        assert!(gathering.try_now(true), "a full read tries anyway");
        gathering.found();
        for _ in 1..GATHER_READS {
            assert!(gathering.try_now(false), "found: tries on");
            gathering.found();
        }
        assert!(!gathering.try_now(false), "at most GATHER_READS a batch");
        gathering.awaited();
        assert!(gathering.try_now(false), "found: the next batch tries");

        // A miss, then a full read that tries anyway and finds queries:
        // the skip the miss set is forgotten.
        let mut gathering = Gathering::default();
        assert!(gathering.try_now(false));
        gathering.missed();
        gathering.awaited();
        assert!(gathering.try_now(true), "a full read tries anyway");
        gathering.found();
        gathering.awaited();
        assert!(
            gathering.try_now(false),
            "found after a miss: no batch skipped"
        );
    }

    /// The read buffer stays small for small queries, grows to a longer
    /// frame and for a deep pipeline, and shrinks back once reads fit
    /// again, only when empty.
    #[test]
    fn the_read_buffer_holds_little_while_queries_are_small() {
        let mut buffer = Vec::new();
        size_read_buffer(&mut buffer, (false, 0));
        assert_eq!(buffer.capacity(), READ_SIZE);
        // Part of a 3000-octet frame: room for all of it.
        buffer.extend_from_slice(&[0x0b, 0xb8, 0, 0]);
        size_read_buffer(&mut buffer, (false, 1));
        assert!(buffer.capacity() >= 3002, "{}", buffer.capacity());
        // Consumed; small reads: kept until SHRINK_AFTER of them in a row.
        buffer.clear();
        let grown = buffer.capacity();
        size_read_buffer(&mut buffer, (false, SHRINK_AFTER - 1));
        assert_eq!(buffer.capacity(), grown);
        size_read_buffer(&mut buffer, (false, SHRINK_AFTER));
        assert_eq!(buffer.capacity(), READ_SIZE);
        // A read that filled it: doubled.
        size_read_buffer(&mut buffer, (true, 0));
        assert!(buffer.capacity() >= 2 * READ_SIZE);
        // Never past a whole frame's room.
        for _ in 0..16 {
            size_read_buffer(&mut buffer, (true, 0));
        }
        assert!(buffer.capacity() >= STREAM_BUFFER && buffer.capacity() < 2 * STREAM_BUFFER);
        // Not shrunk while it holds part of a frame.
        buffer.push(0);
        size_read_buffer(&mut buffer, (false, SHRINK_AFTER));
        assert!(buffer.capacity() >= STREAM_BUFFER);
    }
}
