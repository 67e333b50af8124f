//! DNS over TLS (RFC 7858) on the `tls.listen` addresses.
//!
//! Each core has its own SO_REUSEPORT listener per address, as for TCP,
//! and serves the connections it accepts on its reactor. A connection is
//! a TLS handshake (rustls, through its buffer-oriented API over monoio's
//! `TcpStream`: `read_tls`, `process_new_packets`, `reader`, `writer`,
//! `write_tls`), then the decrypted stream is served by the same framing
//! as TCP ([`crate::tcp::serve_stream`]): RFC 7766 frames, pipelining,
//! out-of-order forwarded answers, the same timeouts and in-flight limit.
//! One `ServerConnection` is shared by the two halves through a
//! `RefCell`, borrowed only between awaits.
//!
//! Limits, each closing the connection:
//! - per core, `tcp.max-connections` open TLS connections (counted apart
//!   from TCP's, so that a flood on one port does not starve the other);
//! - the handshake must finish within `tcp.initial-timeout` (a client
//!   that never finishes it, or trickles it, holds its slot no longer);
//!   then the first query has `tcp.initial-timeout` again and later ones
//!   `tcp.idle-timeout` and `tcp.message-timeout`, as over TCP;
//! - rustls bounds what it buffers (received plaintext, records, queued
//!   output) and refuses renegotiation and key-update floods itself.
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
use std::io::{self, BufRead};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use monoio::io::{AsyncReadRent, AsyncWriteRentExt, Splitable};
use monoio::net::tcp::{TcpOwnedReadHalf, TcpOwnedWriteHalf};
use monoio::net::{TcpListener, TcpStream};
use rustls::ServerConnection;

use crate::core::Core;
use crate::pool::{self, Size};
use crate::stats::{TlsCounters, TRANSPORT_TLS};
use crate::tcp::{serve_stream, ReadStream, Stream, WriteStream};
use crate::xfr_out::{Channel, ClientCertificate};

pub mod config;
pub mod padding;

/// Ciphertext read from the socket at once: a ClientHello, or dozens of
/// queries' records (rustls joins a longer record's reads). Small, since
/// every open connection holds it, idle ones too (issue 26: 10,000 idle
/// connections in 100 MiB).
const CIPHER_READ: usize = 2048;

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
fn count_handshake(counters: &TlsCounters, outcome: usize, connection: &ServerConnection) {
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
                if stop.or(monoio::time::sleep(ACCEPT_BACKOFF)).await.is_none() {
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
        let Ok(connection) = ServerConnection::new(Arc::clone(&server)) else {
            continue; // never: the configuration was built to be valid
        };
        counters.accepted.set(counters.accepted.get() + 1);
        counters.open.set(counters.open.get() + 1);
        let core = Rc::clone(&core);
        // Whether this handshake asks for a client certificate: read
        // once, as rustls reads it once at the handshake.
        let required = clients.required();
        monoio::spawn(async move {
            serve_connection(stream, peer, connection, required, &core).await;
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
    connection: ServerConnection,
    client_ca: bool,
    core: &Rc<Core>,
) {
    let connection = Rc::new(RefCell::new(connection));
    let mut cipher = Vec::with_capacity(CIPHER_READ);
    let stop = core.stop.listener();
    let handshake = monoio::time::timeout(
        core.tcp.initial_timeout,
        handshake(&mut stream, &connection, &mut cipher),
    );
    let outcome = match stop.or(handshake).await {
        None => return,
        Some(Err(_)) => OUTCOME_TIMEOUT,
        Some(Ok(outcome)) => outcome,
    };
    {
        let connection = connection.borrow();
        count_handshake(&core.tls_counters, outcome, &connection);
        if outcome == OUTCOME_OK
            && connection.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
        {
            let resumed = &core.tls_counters.resumed;
            resumed.set(resumed.get() + 1);
        }
    }
    if outcome != OUTCOME_OK {
        if outcome == OUTCOME_FAILED {
            // The alert saying why, if the client still reads.
            let _ = monoio::time::timeout(core.tcp.write_timeout, flush(&mut stream, &connection))
                .await;
        }
        return;
    }
    let certificate = if !client_ca {
        ClientCertificate::NotRequired
    } else if connection.borrow().peer_certificates().is_some() {
        ClientCertificate::Verified
    } else {
        ClientCertificate::Missing
    };
    let local = core.dnstap.as_ref().and_then(|_| stream.local_addr().ok());
    let (reader, writer) = stream.into_split();
    let failed = Rc::new(std::cell::Cell::new(false));
    let reader = TlsReader {
        tcp: reader,
        connection: Rc::clone(&connection),
        cipher,
        start: 0,
        failed: Rc::clone(&failed),
    };
    let writer = TlsWriter {
        tcp: writer,
        connection: Rc::clone(&connection),
        out: Vec::new(),
    };
    let mut buffer = pool::take(Size::Stream);
    buffer.clear();
    let stream = Stream {
        counters: &core.tls_counters.connections,
        transport: TRANSPORT_TLS,
        channel: Channel::Tls(certificate),
    };
    let mut writer = serve_stream(reader, writer, buffer, (peer, local), stream, core).await;
    if failed.get() {
        let errors = &core.tls_counters.protocol_errors;
        errors.set(errors.get() + 1);
    }
    if !stop.fired() {
        connection.borrow_mut().send_close_notify();
        let _ = monoio::time::timeout(core.tcp.write_timeout, writer.flush()).await;
    }
}

/// Runs the handshake: reads the client's flights and writes ours until
/// rustls is done (TLS 1.3 session tickets written too). What the client
/// sent after its Finished (its first queries) stays in rustls or, not yet
/// fed to it, in `cipher`. Returns an outcome of [`HANDSHAKE_OUTCOMES`].
async fn handshake(
    stream: &mut TcpStream,
    connection: &RefCell<ServerConnection>,
    cipher: &mut Vec<u8>,
) -> usize {
    // Each pass writes what rustls has queued, then reads at least one
    // octet or ends; the caller's timeout bounds the whole.
    loop {
        if flush(stream, connection).await.is_err() {
            return OUTCOME_CLOSED;
        }
        if !connection.borrow().is_handshaking() {
            return OUTCOME_OK;
        }
        let buffer = std::mem::take(cipher);
        let (result, buffer) = stream.read(buffer).await;
        *cipher = buffer;
        let read = match result {
            Ok(0) | Err(_) => return OUTCOME_CLOSED,
            Ok(read) => read,
        };
        let mut connection = connection.borrow_mut();
        let mut input = &cipher[..read];
        // Each pass consumes at least one octet or ends.
        while !input.is_empty() {
            match connection.read_tls(&mut input) {
                Ok(0) | Err(_) => return OUTCOME_FAILED,
                Ok(_) => {}
            }
            if connection.process_new_packets().is_err() {
                return OUTCOME_FAILED;
            }
            if !connection.is_handshaking() {
                // The rest is the stream's: keep it for the reader.
                let consumed = read - input.len();
                cipher.copy_within(consumed..read, 0);
                cipher.truncate(read - consumed);
                break;
            }
        }
        if connection.is_handshaking() {
            cipher.clear();
        }
    }
}

/// Writes everything rustls has queued (records, alerts) to `stream`.
async fn flush(stream: &mut TcpStream, connection: &RefCell<ServerConnection>) -> io::Result<()> {
    let mut out = Vec::new();
    // Each pass writes what was queued; rustls queues no more unless fed.
    while connection.borrow().wants_write() {
        out.clear();
        connection.borrow_mut().write_tls(&mut out)?;
        let (result, returned) = stream.write_all(out).await;
        out = returned;
        result?;
    }
    Ok(())
}

//----------- TlsReader, TlsWriter -------------------------------------------

/// The plaintext read side of a TLS connection.
struct TlsReader {
    tcp: TcpOwnedReadHalf,
    connection: Rc<RefCell<ServerConnection>>,
    /// Ciphertext read and not yet fed to rustls: `cipher[start..]`.
    cipher: Vec<u8>,
    start: usize,
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
        let room = buffer.capacity() - filled;
        // Each pass returns, feeds rustls at least one octet, or reads at
        // least one from the socket (or ends).
        loop {
            {
                let mut connection = self.connection.borrow_mut();
                let mut reader = connection.reader();
                match reader.fill_buf() {
                    Ok(plain) => {
                        // Empty: the client's close_notify.
                        let take = plain.len().min(room);
                        buffer.extend_from_slice(&plain[..take]);
                        reader.consume(take);
                        return (Ok(take), buffer);
                    }
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                    Err(err) => return (Err(err), buffer),
                }
                if self.start < self.cipher.len() {
                    let mut input = &self.cipher[self.start..];
                    let before = input.len();
                    match connection.read_tls(&mut input) {
                        Ok(0) => return (Err(io::ErrorKind::InvalidData.into()), buffer),
                        Ok(_) => self.start += before - input.len(),
                        Err(err) => {
                            self.failed.set(true);
                            return (Err(err), buffer);
                        }
                    }
                    if let Err(err) = connection.process_new_packets() {
                        self.failed.set(true);
                        return (Err(io::Error::new(io::ErrorKind::InvalidData, err)), buffer);
                    }
                    continue;
                }
            }
            let mut cipher = std::mem::take(&mut self.cipher);
            cipher.clear();
            if cipher.capacity() == 0 {
                cipher.reserve(CIPHER_READ);
            }
            let (result, cipher) = self.tcp.read(cipher).await;
            self.cipher = cipher;
            self.start = 0;
            match result {
                Ok(0) => {
                    // The end of the socket's stream: rustls then tells a
                    // close_notify seen (Ok(0)) from a cut (an error).
                    let mut connection = self.connection.borrow_mut();
                    let _ = connection.read_tls(&mut io::empty());
                    if let Err(err) = connection.process_new_packets() {
                        return (Err(io::Error::new(io::ErrorKind::InvalidData, err)), buffer);
                    }
                    let mut reader = connection.reader();
                    return match reader.fill_buf() {
                        Ok(plain) => {
                            let take = plain.len().min(room);
                            buffer.extend_from_slice(&plain[..take]);
                            reader.consume(take);
                            (Ok(take), buffer)
                        }
                        Err(err) if err.kind() == io::ErrorKind::WouldBlock => (Ok(0), buffer),
                        Err(err) => (Err(err), buffer),
                    };
                }
                Ok(_) => {}
                Err(err) => return (Err(err), buffer),
            }
        }
    }
}

/// The plaintext write side of a TLS connection.
struct TlsWriter {
    tcp: TcpOwnedWriteHalf,
    connection: Rc<RefCell<ServerConnection>>,
    /// Records to write, reused.
    out: Vec<u8>,
}

impl TlsWriter {
    /// Writes what rustls has queued.
    async fn flush(&mut self) -> io::Result<()> {
        // Each pass writes what was queued; nothing is queued meanwhile.
        loop {
            let mut out = std::mem::take(&mut self.out);
            out.clear();
            {
                let mut connection = self.connection.borrow_mut();
                // Each pass appends at least one record, or ends.
                while connection.wants_write() {
                    connection.write_tls(&mut out)?;
                }
            }
            if out.is_empty() {
                self.out = out;
                return Ok(());
            }
            let (result, returned) = self.tcp.write_all(out).await;
            self.out = returned;
            result?;
        }
    }
}

impl WriteStream for TlsWriter {
    async fn write_from(&mut self, buffer: Vec<u8>, len: usize) -> (io::Result<()>, Vec<u8>) {
        let mut written = 0;
        // Each pass hands rustls at least one octet (it takes up to its
        // buffer limit) and writes the records it made, or ends.
        while written < len {
            let taken = {
                let mut connection = self.connection.borrow_mut();
                io::Write::write(&mut connection.writer(), &buffer[written..len])
            };
            match taken {
                Ok(0) if !self.connection.borrow().wants_write() => {
                    return (Err(io::ErrorKind::WriteZero.into()), buffer);
                }
                Ok(taken) => written += taken,
                Err(err) => return (Err(err), buffer),
            }
            if let Err(err) = self.flush().await {
                return (Err(err), buffer);
            }
        }
        (Ok(()), buffer)
    }
}
