//! NSID (RFC 5001) over real sockets, on both drivers: a query that asks
//! gets the configured identifier in its answer's OPT, over UDP (a cache
//! miss, then hits), over TCP, in a truncated answer (within the client's
//! size), in REFUSED, and in a forwarded answer; a query that does not
//! ask gets none, from the same cache entry; a server without `nsid`
//! sends none.

use std::net::SocketAddr;

use tern_authority::nsid::Nsid;
use tern_server::{Cidr, Driver, ForwardConfig, Server, ServerConfig};
use tern_wire::parse::MessageView;

use crate::*;

const NSID: &[u8] = b"tern-1.example";

/// `query` (with an OPT, the last record, without options) asking for the
/// NSID.
fn asking(mut query: Vec<u8>) -> Vec<u8> {
    let rdlen = query.len() - 2;
    query[rdlen..].copy_from_slice(&4u16.to_be_bytes());
    query.extend_from_slice(&[0, 3, 0, 0]);
    query
}

/// The NSID option's value in an answer's OPT (`None`: no option or no
/// OPT).
fn nsid_of(answer: &[u8]) -> Option<Vec<u8>> {
    let view = MessageView::parse(answer).unwrap();
    let edns = view.edns().unwrap()?;
    edns.options()
        .map(Result::unwrap)
        .find(|(code, _)| *code == 3)
        .map(|(_, value)| value.to_vec())
}

fn start_nsid(driver: Driver, configure: impl Fn(&mut ServerConfig)) -> Running {
    let (server, addr) = start_with(driver, |config| {
        config.answer.nsid = Some(Nsid::new(NSID).unwrap());
        configure(config);
    });
    Running {
        server: Some(server),
        addr,
    }
}

#[test]
fn nsid_on_every_answer_path_when_asked() {
    for driver in DRIVERS {
        let running = start_nsid(driver, |_| {});
        let server = running.addr;
        let ask = asking(query(1, "www.example.com.", 1, Some(1232)));
        let plain = query(2, "www.example.com.", 1, Some(1232));
        let hits = running.stats().cache_hits;
        for round in 0..3 {
            let answer = udp_exchange(server, &ask).unwrap();
            assert_eq!(
                nsid_of(&answer).as_deref(),
                Some(NSID),
                "{driver:?} {round}"
            );
            assert_eq!(summary(&answer), (1, 0, false, 1), "{driver:?} {round}");
            let answer = udp_exchange(server, &plain).unwrap();
            assert_eq!(nsid_of(&answer), None, "{driver:?} {round}");
        }
        // One miss, then hits for both kinds of query (one core).
        assert_eq!(running.stats().cache_hits, hits + 5, "{driver:?}");

        // Truncated at the client's 512 octets, the option included.
        let big = asking(query(3, "big.example.com.", 16, Some(512)));
        let answer = udp_exchange(server, &big).unwrap();
        assert!(answer.len() <= 512, "{driver:?}: {}", answer.len());
        assert!(summary(&answer).2, "{driver:?}: TC");
        assert_eq!(nsid_of(&answer).as_deref(), Some(NSID), "{driver:?}");

        // REFUSED, and class ANY, and TCP.
        let refused = asking(query(4, "www.example.net.", 1, Some(1232)));
        let answer = udp_exchange(server, &refused).unwrap();
        assert_eq!(summary(&answer).1, 5, "{driver:?}");
        assert_eq!(nsid_of(&answer).as_deref(), Some(NSID), "{driver:?}");
        let mut any = query(5, "www.example.com.", 1, Some(1232));
        let class_at = any.len() - 11 - 1;
        any[class_at] = 255;
        let answer = udp_exchange(server, &asking(any)).unwrap();
        assert_eq!(summary(&answer), (5, 0, false, 1), "{driver:?}");
        assert_eq!(nsid_of(&answer).as_deref(), Some(NSID), "{driver:?}");
        let mut stream = tcp_connect(server);
        tcp_send(
            &mut stream,
            &asking(query(6, "big.example.com.", 16, Some(512))),
        );
        let answer = tcp_receive(&mut stream).unwrap();
        assert_eq!(summary(&answer), (6, 0, false, 40), "{driver:?}");
        assert_eq!(nsid_of(&answer).as_deref(), Some(NSID), "{driver:?}");
    }
}

#[test]
fn nsid_off_sends_none() {
    for driver in DRIVERS {
        let running = start(driver);
        for _ in 0..2 {
            let ask = asking(query(1, "www.example.com.", 1, Some(1232)));
            let answer = udp_exchange(running.addr, &ask).unwrap();
            assert_eq!(summary(&answer), (1, 0, false, 1), "{driver:?}");
            assert_eq!(nsid_of(&answer), None, "{driver:?}");
        }
    }
}

/// A forwarder with an NSID in front of a tern without one: the client
/// that asks gets the forwarder's identifier, first from upstream, then
/// from the forward cache; one that does not ask gets none.
#[test]
fn forwarded_answers_carry_the_forwarders_nsid() {
    let upstream_zone = "\
$ORIGIN example.net.
$TTL 300
@    SOA ns1 hostmaster 1 7200 3600 1209600 300
     NS  ns1
ns1  A   192.0.2.1
www  A   192.0.2.99
";
    for driver in DRIVERS {
        let upstream = start_server(driver, zone_catalog("example.net.", upstream_zone), |_| {});
        let mut forward = ForwardConfig::new(vec![upstream.1]);
        forward.allow = vec![Cidr::parse("127.0.0.0/8").unwrap()];
        let forwarder = start_nsid(driver, |config| config.forward = Some(forward.clone()));
        let ask = asking(query(1, "www.example.net.", 1, Some(1232)));
        for round in 0..2 {
            let answer = udp_exchange(forwarder.addr, &ask).unwrap();
            assert_eq!(summary(&answer), (1, 0, false, 1), "{driver:?} {round}");
            assert_eq!(
                nsid_of(&answer).as_deref(),
                Some(NSID),
                "{driver:?} {round}"
            );
        }
        let plain = query(2, "www.example.net.", 1, Some(1232));
        let answer = udp_exchange(forwarder.addr, &plain).unwrap();
        assert_eq!(summary(&answer), (2, 0, false, 1), "{driver:?}");
        assert_eq!(nsid_of(&answer), None, "{driver:?}");
        upstream.0.handle().shutdown();
        upstream.0.join().unwrap();
    }
}

/// A server of `catalog` on a free loopback port.
fn start_server(
    driver: Driver,
    catalog: std::sync::Arc<tern_authority::Catalog>,
    configure: impl Fn(&mut ServerConfig),
) -> (Server, SocketAddr) {
    for _ in 0..20 {
        let addr = free_addr("127.0.0.1").expect("a free loopback port");
        let mut config = ServerConfig::new(vec![addr]);
        config.driver = driver;
        configure(&mut config);
        match Server::start(config, catalog.clone()) {
            Ok(server) => return (server, addr),
            Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(err) => panic!("starting on {driver:?}: {err}"),
        }
    }
    panic!("no free loopback port");
}
