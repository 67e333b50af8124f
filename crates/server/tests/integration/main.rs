//! The server over real loopback sockets: UDP and TCP answers, framing,
//! pipelining, truncation and fallback to TCP, and what must be dropped.
//!
//! Each test starts its own server on a free 127.0.0.1 port with a small
//! zone, talks to it with plain std sockets (bounded by timeouts), and
//! leaves it running until the test process exits.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tern_authority::{Catalog, Options, ZoneBuilder};
use tern_server::{Server, ServerConfig, TcpConfig};
use tern_wire::name::NameBuf;
use tern_wire::parse::MessageView;

const ZONE: &str = "\
$ORIGIN example.com.
$TTL 300
@    SOA ns1 hostmaster 1 7200 3600 1209600 300
     NS  ns1
ns1  A   192.0.2.1
www  A   192.0.2.80
";

/// How long a test waits for one answer.
const TIMEOUT: Duration = Duration::from_secs(3);

/// How long a test waits to be sure that no answer comes.
const SILENCE: Duration = Duration::from_millis(500);

fn catalog() -> Arc<Catalog> {
    let origin = NameBuf::from_text(b"example.com.", None).unwrap();
    let mut text = ZONE.to_string();
    // A TXT RRset far larger than 512 octets, to force truncation over UDP.
    for i in 0..40 {
        text.push_str(&format!("big TXT \"{i:02} {}\"\n", "x".repeat(60)));
    }
    let parsed = tern_zone::parse_bytes(
        text.as_bytes(),
        Path::new("test.zone"),
        origin.as_name(),
        &tern_zone::Options::default(),
        &mut tern_zone::NoInclude,
    )
    .unwrap();
    let mut builder = ZoneBuilder::new(origin.as_name());
    for r in &parsed.records {
        builder
            .insert(r.owner.as_name(), r.rtype, r.class, r.ttl, &r.rdata)
            .unwrap();
    }
    Arc::new(Catalog::new(vec![builder.finish().unwrap()]))
}

/// Starts a server on a free loopback port.
fn start() -> SocketAddr {
    // Find a port free for both UDP and TCP; the server binds it again with
    // SO_REUSEPORT right after these probes are closed.
    for _ in 0..50 {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = udp.local_addr().unwrap();
        if std::net::TcpListener::bind(addr).is_err() {
            continue;
        }
        drop(udp);
        let config = ServerConfig {
            listen: vec![addr],
            cores: Vec::new(),
            answer: Options::default(),
            tcp: TcpConfig::default(),
        };
        if let Ok(server) = Server::start(config, catalog()) {
            std::mem::forget(server);
            return addr;
        }
    }
    panic!("no free loopback port");
}

/// A query for `name` and `qtype`, with an EDNS OPT of `udp_size` if given.
fn query(id: u16, name: &str, qtype: u16, udp_size: Option<u16>) -> Vec<u8> {
    let mut q = id.to_be_bytes().to_vec();
    q.extend_from_slice(&[
        0x01,
        0x00,
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        u8::from(udp_size.is_some()),
    ]);
    q.extend_from_slice(
        NameBuf::from_text(name.as_bytes(), None)
            .unwrap()
            .as_bytes(),
    );
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&[0, 1]);
    if let Some(size) = udp_size {
        q.extend_from_slice(&[0, 0, 41]);
        q.extend_from_slice(&size.to_be_bytes());
        q.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    }
    q
}

fn udp_exchange(server: SocketAddr, message: &[u8]) -> Option<Vec<u8>> {
    udp_exchange_within(server, message, TIMEOUT)
}

fn udp_exchange_within(server: SocketAddr, message: &[u8], wait: Duration) -> Option<Vec<u8>> {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
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

//=========== Tests ==========================================================

#[test]
fn udp_answers_and_echoes_case() {
    let server = start();
    let answer = udp_exchange(server, &query(7, "WwW.Example.com.", 1, None)).unwrap();
    assert_eq!(summary(&answer), (7, 0, false, 1));
    let view = MessageView::parse(&answer).unwrap();
    assert_eq!(
        view.question().unwrap().name.as_bytes(),
        b"\x03WwW\x07Example\x03com\x00"
    );
    assert!(view.header().aa());
}

#[test]
fn udp_truncates_then_tcp_carries_everything() {
    let server = start();
    let answer = udp_exchange(server, &query(1, "big.example.com.", 16, None)).unwrap();
    let (_, rcode, tc, _) = summary(&answer);
    assert_eq!((rcode, tc), (0, true));
    assert!(answer.len() <= 512);
    let mut stream = tcp_connect(server);
    tcp_send(&mut stream, &query(2, "big.example.com.", 16, None));
    let answer = tcp_receive(&mut stream).unwrap();
    assert_eq!(summary(&answer), (2, 0, false, 40));
}

#[test]
fn tcp_pipelined_queries_all_answered() {
    let server = start();
    let mut stream = tcp_connect(server);
    for id in 0..20u16 {
        tcp_send(&mut stream, &query(id, "www.example.com.", 1, Some(1232)));
    }
    for id in 0..20u16 {
        let answer = tcp_receive(&mut stream).unwrap();
        assert_eq!(summary(&answer), (id, 0, false, 1));
    }
}

#[test]
fn tcp_short_length_prefix_closes_connection() {
    let server = start();
    let mut stream = tcp_connect(server);
    stream.write_all(&[0, 5, 1, 2, 3, 4, 5]).unwrap();
    let mut buf = [0u8; 16];
    // Closed: read returns 0 (or a reset), never an answer.
    let read = stream.read(&mut buf).unwrap_or(0);
    assert_eq!(read, 0);
}

#[test]
fn responses_and_runts_are_dropped_but_server_keeps_answering() {
    let server = start();
    let mut response = query(3, "www.example.com.", 1, None);
    response[2] |= 0x80; // QR=1
    assert!(udp_exchange_within(server, &response, SILENCE).is_none());
    assert!(udp_exchange_within(server, &[1, 2, 3], SILENCE).is_none());
    let answer = udp_exchange(server, &query(4, "www.example.com.", 1, None)).unwrap();
    assert_eq!(summary(&answer), (4, 0, false, 1));
}

#[test]
fn refused_outside_our_zones_over_tcp() {
    let server = start();
    let mut stream = tcp_connect(server);
    tcp_send(&mut stream, &query(9, "www.example.org.", 1, None));
    let answer = tcp_receive(&mut stream).unwrap();
    assert_eq!(summary(&answer), (9, 5, false, 0));
}
