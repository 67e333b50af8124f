//! The server over real loopback sockets, on both monoio drivers.
//!
//! - `udp`: answers, case echo, truncation, drops, the answer cache;
//! - `tcp`: framing, pipelining and each RFC 7766 limit;
//! - `malformed`: malformed queries, other opcodes, EDNS and query flags
//!   (docs/decisions/0005), over UDP and TCP;
//! - `nsid`: NSID (RFC 5001) on the cache, respond, TCP and forward
//!   paths;
//! - `proxy`: the PROXY protocol v2 on `proxy.listen`, over UDP and TCP;
//! - `rrl`: response rate limiting of a loopback burst, and an exempt
//!   client;
//! - `update`: UPDATE handed off the core and answered once its owner
//!   has, while queries are answered;
//! - `runtime`: several cores on one port (SO_REUSEPORT), IPv6, reload
//!   under load, shutdown, statistics.
//!
//! Each test starts its own server on a free loopback port with a small
//! zone and talks to it with plain std sockets, bounded by timeouts.
//! Every server is shut down at the end of its test (`start` returns a
//! guard that does it when dropped).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use tern_authority::Catalog;
use tern_server::{Driver, Server, ServerConfig};
use tern_wire::parse::MessageView;

mod forward;
mod malformed;
mod nsid;
mod proxy;
mod rrl;
mod runtime;
mod tcp;
mod tls;
mod udp;
mod update;
mod xfr;

/// Both reactors; every runtime test runs on each.
const DRIVERS: [Driver; 2] = [Driver::Legacy, Driver::IoUring];

/// The test zone; `{www}` is the last octet of www's address, so that a
/// reload can be seen.
const ZONE: &str = "\
$ORIGIN example.com.
$TTL 300
@    SOA ns1 hostmaster 1 7200 3600 1209600 300
     NS  ns1
ns1  A   192.0.2.1
www  A   192.0.2.{www}
";

/// How long a test waits for one answer.
const TIMEOUT: Duration = Duration::from_secs(3);

/// How long a test waits to be sure that no answer comes.
const SILENCE: Duration = Duration::from_millis(500);

/// A catalog whose www.example.com. has address 192.0.2.`www`.
fn catalog_with(www: u8) -> Arc<Catalog> {
    let mut text = ZONE.replace("{www}", &www.to_string());
    // A TXT RRset far larger than 512 octets, to force truncation over UDP.
    for i in 0..40 {
        text.push_str(&format!("big TXT \"{i:02} {}\"\n", "x".repeat(60)));
    }
    // About 800 octets: fits the default EDNS size, not 512.
    for i in 0..10 {
        text.push_str(&format!("mid TXT \"{i:02} {}\"\n", "m".repeat(60)));
    }
    // An RRset of about 60 KiB, to fill socket buffers over TCP.
    for i in 0..240 {
        text.push_str(&format!("huge TXT \"{i:03} {}\"\n", "y".repeat(240)));
    }
    zone_catalog("example.com.", &text)
}

/// A catalog of one zone, `origin`, read from zone-file `text`.
fn zone_catalog(origin: &str, text: &str) -> Arc<Catalog> {
    Arc::new(tern_testkit::catalog(origin, text))
}

fn catalog() -> Arc<Catalog> {
    catalog_with(80)
}

/// A loopback port free for both UDP and TCP right now (the server binds
/// it again with SO_REUSEPORT right after these probes are closed).
fn free_addr(ip: &str) -> Option<SocketAddr> {
    for _ in 0..50 {
        let udp = UdpSocket::bind((ip, 0)).ok()?;
        let addr = udp.local_addr().unwrap();
        if std::net::TcpListener::bind(addr).is_ok() {
            return Some(addr);
        }
    }
    None
}

/// Starts a server on a free 127.0.0.1 port with `configure` applied to a
/// default configuration for `driver`.
fn start_with(driver: Driver, configure: impl Fn(&mut ServerConfig)) -> (Server, SocketAddr) {
    for _ in 0..20 {
        let addr = free_addr("127.0.0.1").expect("a free loopback port");
        let mut config = ServerConfig::new(vec![addr]);
        config.driver = driver;
        configure(&mut config);
        match Server::start(config, catalog()) {
            Ok(server) => return (server, addr),
            Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(err) => panic!("starting on {driver:?}: {err}"),
        }
    }
    panic!("no free loopback port");
}

/// A default server that shuts down when dropped.
struct Running {
    server: Option<Server>,
    addr: SocketAddr,
}

impl Running {
    /// Every core's statistics, summed.
    fn stats(&self) -> tern_server::CoreStats {
        let server = self.server.as_ref().expect("running");
        tern_server::CoreStats::sum(&server.handle().stats())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.handle().shutdown();
            let joined = server.join();
            if !std::thread::panicking() {
                joined.expect("the server stops cleanly");
            }
        }
    }
}

/// Starts a default server, shut down when the result is dropped.
fn start(driver: Driver) -> Running {
    let (server, addr) = start_with(driver, |_| {});
    Running {
        server: Some(server),
        addr,
    }
}

/// The ID of the query that [`udp_replies_before`] sends after a message.
const NEXT_ID: u16 = 0x6161;

/// Sends `message` over UDP, then a normal query from the same socket,
/// and returns every datagram that came before the normal query's
/// answer. One socket's datagrams reach one core, which handles them in
/// order, so the normal answer is the event that shows `message` was
/// handled: an empty result means it was dropped, not merely slow.
fn udp_replies_before(server: SocketAddr, message: &[u8]) -> Vec<Vec<u8>> {
    let local = if server.is_ipv6() {
        "[::1]:0"
    } else {
        "127.0.0.1:0"
    };
    let socket = UdpSocket::bind(local).unwrap();
    socket.set_read_timeout(Some(TIMEOUT)).unwrap();
    socket.send_to(message, server).unwrap();
    let next = query(NEXT_ID, "www.example.com.", 1, None);
    socket.send_to(&next, server).unwrap();
    let mut replies = Vec::new();
    let mut buf = [0u8; 65535];
    loop {
        let (len, _) = socket
            .recv_from(&mut buf)
            .expect("an answer to the query sent after the message");
        let reply = &buf[..len];
        if is_answer_to_next(reply) {
            return replies;
        }
        replies.push(reply.to_vec());
    }
}

/// Whether `reply` is the answer to [`NEXT_ID`]'s `www.example.com. A`.
fn is_answer_to_next(reply: &[u8]) -> bool {
    MessageView::parse(reply).is_ok_and(|view| {
        view.header().id() == NEXT_ID
            && view.header().qr()
            && view.header().rcode_bits() == 0
            && view.question().is_some_and(|question| {
                question.name.as_bytes() == b"\x03www\x07example\x03com\x00"
            })
    })
}

/// Asserts that the server answers nothing to `message` over UDP (seen
/// by the answer to a query sent after it) and counts it as dropped.
fn assert_udp_dropped(running: &Running, message: &[u8], context: &str) {
    let before = running.stats().dropped;
    let replies = udp_replies_before(running.addr, message);
    assert!(replies.is_empty(), "{context}: answered {replies:?}");
    let stats = running.stats();
    assert_eq!(stats.dropped, before + 1, "{context}: {stats}");
}

/// A query for `name` and `qtype` (RD set), with an EDNS OPT of
/// `udp_size` if given.
fn query(id: u16, name: &str, qtype: u16, udp_size: Option<u16>) -> Vec<u8> {
    tern_testkit::query(id, name, qtype, udp_size.map(|size| (size, false)))
}

fn udp_exchange(server: SocketAddr, message: &[u8]) -> Option<Vec<u8>> {
    udp_exchange_within(server, message, TIMEOUT)
}

fn udp_exchange_within(server: SocketAddr, message: &[u8], wait: Duration) -> Option<Vec<u8>> {
    let local = if server.is_ipv6() {
        "[::1]:0"
    } else {
        "127.0.0.1:0"
    };
    let socket = UdpSocket::bind(local).unwrap();
    socket.set_read_timeout(Some(wait)).unwrap();
    socket.send_to(message, server).unwrap();
    let mut buf = [0u8; 65535];
    match socket.recv_from(&mut buf) {
        Ok((len, _)) => Some(buf[..len].to_vec()),
        Err(_) => None,
    }
}

fn tcp_connect(server: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(server).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream
}

fn tcp_send(stream: &mut TcpStream, message: &[u8]) {
    let mut framed = (message.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(message);
    stream.write_all(&framed).unwrap();
}

fn tcp_receive(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut length = [0u8; 2];
    stream.read_exact(&mut length).ok()?;
    let mut message = vec![0u8; usize::from(u16::from_be_bytes(length))];
    stream.read_exact(&mut message).ok()?;
    Some(message)
}

/// Whether the server closed the connection: a read returns end of file
/// or a reset within [`TIMEOUT`], never data.
fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 16];
    match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(err) => !matches!(
            err.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// (id, rcode, tc, answer count) of an answer.
fn summary(answer: &[u8]) -> (u16, u8, bool, u16) {
    let view = MessageView::parse(answer).unwrap();
    let header = view.header();
    (
        header.id(),
        header.rcode_bits(),
        header.tc(),
        header.counts()[1],
    )
}

/// The last octet of the first A record's address in an answer.
fn last_octet(answer: &[u8]) -> Option<u8> {
    let view = MessageView::parse(answer).ok()?;
    view.records()
        .filter_map(Result::ok)
        .find(|record| record.rtype.0 == 1 && record.rdata.len() == 4)
        .map(|record| record.rdata[3])
}
