//! The PROXY protocol v2 on `proxy.listen` (crates/server/src/proxy.rs):
//! over UDP and TCP the client named in the header is the client
//! (`transfer.allow` here), the answer goes back to the proxy without a
//! header, and datagrams and connections from outside `proxy.allow`,
//! without a header or with a broken one are dropped and counted.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};

use tern_server::{Cidr, CoreStats, Driver, ProxyConfig, ServerConfig, TransferConfig};
use tern_wire::parse::MessageView;

use crate::{
    closed_by_server, free_addr, query, start_with, tcp_receive, tcp_send, Running, TIMEOUT,
};

const AXFR: u16 = 252;
const SOA: u16 = 6;
const REFUSED: u8 = 5;

/// The client allowed to transfer: only ever named in PROXY headers.
const CLIENT: [u8; 4] = [192, 0, 2, 7];

/// A PROXY v2 header from `client` (TCP or UDP over IPv4) to 127.0.0.1:53.
fn header(stream: bool, client: [u8; 4]) -> Vec<u8> {
    let mut out = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    out.extend_from_slice(&[0x21, if stream { 0x11 } else { 0x12 }, 0, 12]);
    out.extend_from_slice(&client);
    out.extend_from_slice(&[127, 0, 0, 1, 0x30, 0x39, 0, 53]);
    out
}

/// A server with a plain listener (`running.addr`) and a proxied one,
/// returned; proxies allowed from 127.0.0.1 only; transfers allowed to
/// [`CLIENT`] only.
fn start(driver: Driver) -> (Running, SocketAddr) {
    let proxied = free_addr("127.0.0.1").expect("a free loopback port");
    let (server, addr) = start_with(driver, |config: &mut ServerConfig| {
        config.proxy = ProxyConfig {
            allow: vec![Cidr::parse("127.0.0.1/32").unwrap()],
            listen: vec![proxied],
        };
        config.transfer = TransferConfig {
            allow: vec![Cidr::parse("192.0.2.7/32").unwrap()],
            ..TransferConfig::default()
        };
    });
    let running = Running {
        server: Some(server),
        addr,
    };
    (running, proxied)
}

fn proxy_stats(running: &Running) -> tern_server::ProxyStats {
    running.stats().proxy
}

/// Sends `datagrams` from `socket`, then a valid proxied query, and
/// returns what came back before the valid query's answer (one socket's
/// datagrams are handled by one core, in order: that answer is the event
/// showing the others were handled).
fn replies_before(socket: &UdpSocket, to: SocketAddr, datagrams: &[Vec<u8>]) -> Vec<Vec<u8>> {
    for datagram in datagrams {
        socket.send_to(datagram, to).unwrap();
    }
    let mut last = header(false, CLIENT);
    last.extend_from_slice(&query(0x7777, "www.example.com.", 1, None));
    socket.send_to(&last, to).unwrap();
    let mut replies = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let (len, _) = socket.recv_from(&mut buf).expect("the last query's answer");
        if buf[..2] == [0x77, 0x77] {
            return replies;
        }
        replies.push(buf[..len].to_vec());
    }
}

#[test]
fn udp_headers_are_taken_off_and_bad_ones_dropped_and_counted() {
    for driver in crate::DRIVERS {
        let (running, proxied) = start(driver);
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(TIMEOUT)).unwrap();
        // Answered to the proxy, without a header.
        assert!(replies_before(&socket, proxied, &[]).is_empty());
        assert_eq!(proxy_stats(&running).accepted, 1, "{driver:?}");

        let plain = query(1, "www.example.com.", 1, None);
        let mut cut = header(false, CLIENT);
        cut.truncate(20);
        let mut version_1 = b"PROXY UDP4 192.0.2.7 127.0.0.1 1 53\r\n".to_vec();
        version_1.extend_from_slice(&plain);
        let replies = replies_before(&socket, proxied, &[plain.clone(), cut, version_1]);
        assert!(replies.is_empty(), "{driver:?}: {replies:?}");
        let stats = proxy_stats(&running);
        assert_eq!(stats.accepted, 2, "{driver:?}");
        // missing, malformed, unsupported
        assert_eq!(stats.refused, [0, 1, 1, 1], "{driver:?}");

        // IXFR over UDP follows the client in the header: allowed for
        // CLIENT, refused for another (the proxy sends both).
        for (client, rcode) in [(CLIENT, 0), ([192, 0, 2, 8], REFUSED)] {
            let mut request = header(false, client);
            request.extend_from_slice(&ixfr(9));
            let replies = replies_before(&socket, proxied, &[request]);
            assert_eq!(replies.len(), 1, "{driver:?}");
            let view = MessageView::parse(&replies[0]).unwrap();
            assert_eq!(view.header().rcode_bits(), rcode, "{driver:?}: {client:?}");
        }
        let stats = proxy_stats(&running);
        assert_eq!(stats.accepted, 6, "{driver:?}");

        // From a source outside proxy.allow: dropped, whatever it carries.
        let stranger = UdpSocket::bind("127.0.0.2:0").unwrap();
        stranger.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut proxied_query = header(false, CLIENT);
        proxied_query.extend_from_slice(&plain);
        stranger.send_to(&proxied_query, proxied).unwrap();
        // The plain listener still answers it (the event that shows the
        // core got that far: one socket, one core).
        stranger.send_to(&plain, running.addr).unwrap();
        let mut buf = [0u8; 512];
        let (_, from) = stranger.recv_from(&mut buf).expect("the plain answer");
        assert_eq!(
            from, running.addr,
            "{driver:?}: only the plain listener answers"
        );
        let untrusted = wait_for(&running, |stats| stats.proxy.refused[0] == 1);
        assert_eq!(untrusted.proxy.refused, [1, 1, 1, 1], "{driver:?}");
        assert_eq!(untrusted.proxy.accepted, 6);
    }
}

/// An IXFR request for example.com. from our own serial (1): answered
/// with the SOA alone when allowed.
fn ixfr(id: u16) -> Vec<u8> {
    let mut request = query(id, "example.com.", 251, None);
    request[2] &= !0x01;
    request[9] = 1; // NSCOUNT
    request.extend_from_slice(&[0xc0, 12, 0, 6, 0, 1, 0, 0, 0, 0, 0, 22, 0, 0]);
    for field in [1u32, 0, 0, 0, 0] {
        request.extend_from_slice(&field.to_be_bytes());
    }
    request
}

/// The stats once `done` holds (each core's counts are read on the core:
/// a datagram handled by another core shows on the next snapshot).
fn wait_for(running: &Running, done: impl Fn(&CoreStats) -> bool) -> CoreStats {
    for _ in 0..300 {
        let stats = running.stats();
        if done(&stats) {
            return stats;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("never: {}", running.stats());
}

/// An AXFR request for example.com., RD off.
fn axfr(id: u16) -> Vec<u8> {
    let mut request = query(id, "example.com.", AXFR, None);
    request[2] &= !0x01;
    request
}

/// The rcode of the first answer and the number of SOA records seen until
/// the transfer's end (2 for a whole transfer).
fn transfer(stream: &mut TcpStream) -> (u8, usize) {
    let mut soas = 0;
    let mut rcode = None;
    for _ in 0..100 {
        let message = tcp_receive(stream).expect("the next message");
        let view = MessageView::parse(&message).unwrap();
        let bits = view.header().rcode_bits();
        rcode.get_or_insert(bits);
        soas += view
            .records()
            .filter_map(Result::ok)
            .filter(|record| record.rtype.0 == SOA)
            .count();
        if bits != 0 || soas >= 2 {
            break;
        }
    }
    (rcode.unwrap(), soas)
}

fn connect(from: &str, to: SocketAddr) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let from: SocketAddr = format!("{from}:0").parse().unwrap();
    socket.bind(&from.into()).unwrap();
    socket.connect(&to.into()).unwrap();
    let stream: TcpStream = socket.into();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream
}

#[test]
fn tcp_transfers_follow_the_client_in_the_header() {
    for driver in crate::DRIVERS {
        let (running, proxied) = start(driver);
        // The allowed client, its header and the request in one write.
        let mut stream = connect("127.0.0.1", proxied);
        let mut first = header(true, CLIENT);
        first.extend_from_slice(&(axfr(1).len() as u16).to_be_bytes());
        first.extend_from_slice(&axfr(1));
        stream.write_all(&first).unwrap();
        assert_eq!(transfer(&mut stream), (0, 2), "{driver:?}");
        // The connection goes on, with the same client.
        tcp_send(&mut stream, &axfr(2));
        assert_eq!(transfer(&mut stream), (0, 2), "{driver:?}");

        // Another client, its header cut over two writes: refused.
        let mut stream = connect("127.0.0.1", proxied);
        let other = header(true, [192, 0, 2, 8]);
        stream.write_all(&other[..10]).unwrap();
        stream.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        stream.write_all(&other[10..]).unwrap();
        tcp_send(&mut stream, &axfr(3));
        assert_eq!(transfer(&mut stream).0, REFUSED, "{driver:?}");

        // On the plain listener the proxy itself is the client: refused.
        let mut stream = connect("127.0.0.1", running.addr);
        tcp_send(&mut stream, &axfr(4));
        assert_eq!(transfer(&mut stream).0, REFUSED, "{driver:?}");
        assert_eq!(proxy_stats(&running).accepted, 2, "{driver:?}");

        // No header, a broken one, an untrusted source: closed, counted.
        let mut stream = connect("127.0.0.1", proxied);
        tcp_send(&mut stream, &axfr(5));
        assert!(closed_by_server(&mut stream), "{driver:?}");
        let mut stream = connect("127.0.0.1", proxied);
        let mut broken = header(true, CLIENT);
        broken[12] = 0x23; // command 3
        stream.write_all(&broken).unwrap();
        assert!(closed_by_server(&mut stream), "{driver:?}");
        let mut stream = connect("127.0.0.2", proxied);
        let mut request = header(true, CLIENT);
        request.extend_from_slice(&(axfr(6).len() as u16).to_be_bytes());
        request.extend_from_slice(&axfr(6));
        // Closed at once: the write may already fail.
        let _ = stream.write_all(&request);
        assert!(closed_by_server(&mut stream), "{driver:?}");
        let stats = wait_for(&running, |stats| stats.proxy.refused[..3] == [1, 1, 1]);
        assert_eq!(stats.proxy.refused, [1, 1, 1, 0], "{driver:?}: {stats}");
        assert_eq!(stats.proxy.accepted, 2, "{driver:?}");
    }
}
