//! Response rate limiting over real loopback sockets (docs/decisions/0007):
//! a bounded burst from one client gets the configured rate of full
//! answers, every second limited answer as a TC=1 slip and nothing for the
//! rest, and the core's counters say the same; an exempt client gets
//! every answer.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use tern_server::{Cidr, CoreStats, Handle, RateLimitConfig};
use tern_wire::parse::MessageView;

use crate::*;

/// Responses per second for one prefix and name in these tests.
const RATE: u32 = 40;

/// Queries per burst.
const BURST: usize = 2000;

/// Queries sent before the client reads what came back: few enough that
/// neither socket buffer overflows, so every datagram arrives.
const CHUNK: usize = 25;

/// How long the client waits for more answers after each chunk.
const DRAIN: Duration = Duration::from_millis(20);

/// What a burst got back.
#[derive(Debug, Default)]
struct Received {
    full: u64,
    slipped: u64,
    elapsed: Duration,
}

/// Sends `count` queries for www.example.com A (every other one with
/// EDNS) from one socket, `CHUNK` at a time, reading the answers between
/// chunks, then reads until it has every answer the server counts as
/// sent once the server has counted every query (late answers are waited
/// for, never missed); checks each answer's ID and question, and that
/// slips carry no records.
fn burst(server: SocketAddr, handle: &Handle, count: usize) -> Received {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.connect(server).unwrap();
    let start = Instant::now();
    let mut received = Received::default();
    let mut buffer = [0u8; 2048];
    let mut read = |socket: &UdpSocket, wait: Duration, received: &mut Received, most: u64| {
        socket.set_read_timeout(Some(wait)).unwrap();
        while received.full + received.slipped < most {
            let Ok(len) = socket.recv(&mut buffer) else {
                break;
            };
            let answer = &buffer[..len];
            let view = MessageView::parse(answer).unwrap();
            let id = usize::from(view.header().id());
            assert!(id < count, "an answer to a query not sent");
            assert_eq!(
                view.question().unwrap().name.as_bytes(),
                b"\x03www\x07example\x03com\x00"
            );
            if view.header().tc() {
                assert_eq!(
                    view.header().counts()[..3],
                    [1, 0, 0],
                    "a slip has no records"
                );
                assert_eq!(view.edns().unwrap().is_some(), id % 2 == 0);
                received.slipped += 1;
            } else {
                assert_eq!(summary(answer).3, 1);
                received.full += 1;
            }
        }
    };
    for chunk in (0..count).collect::<Vec<_>>().chunks(CHUNK) {
        for &id in chunk {
            let edns = (id % 2 == 0).then_some(1232);
            socket
                .send(&query(id as u16, "www.example.com.", 1, edns))
                .unwrap();
        }
        read(&socket, DRAIN, &mut received, u64::MAX);
    }
    let until = Instant::now() + TIMEOUT;
    let stats = loop {
        let stats = CoreStats::sum(&handle.stats());
        if stats.queries >= count as u64 {
            break stats;
        }
        assert!(
            Instant::now() < until,
            "the server read every query: {stats}"
        );
        std::thread::sleep(DRAIN);
    };
    let sent = stats.answers();
    read(&socket, TIMEOUT, &mut received, sent);
    assert_eq!(
        received.full + received.slipped,
        sent,
        "every answer sent arrives: {stats}"
    );
    received.elapsed = start.elapsed();
    received
}

fn rate_limit(exempt: &[&str]) -> RateLimitConfig {
    RateLimitConfig {
        responses_per_second: RATE,
        slip: 2,
        exempt: exempt
            .iter()
            .map(|cidr| Cidr::parse(cidr).unwrap())
            .collect(),
        ..RateLimitConfig::default()
    }
}

#[test]
fn a_burst_from_loopback_is_limited_and_slipped() {
    for driver in DRIVERS {
        // 127.0.0.0/8 is not exempt: the client is limited.
        let (server, addr) = start_with(driver, |config| {
            config.rate_limit = Some(rate_limit(&["192.0.2.0/24"]));
        });
        let received = burst(addr, &server.handle(), BURST);
        let stats = CoreStats::sum(&server.handle().stats());
        server.handle().shutdown();
        server.join().unwrap();

        // The burst may cross second boundaries: each crossed boundary can
        // add at most RATE answers (until the debt outgrows a second's
        // refill, it usually adds none).
        let seconds = received.elapsed.as_secs() + 1;
        let rate = u64::from(RATE);
        assert!(
            (rate..=rate * (seconds + 1)).contains(&received.full),
            "{driver:?}: {received:?}"
        );
        let queries = BURST as u64;
        assert_eq!(stats.queries, queries, "{driver:?}: {stats}");
        let limited = queries - received.full;
        assert_eq!(stats.rrl_limited, limited, "{driver:?}: {stats}");
        // slip 2: the first limited answer of every two is a slip.
        assert_eq!(received.slipped, limited.div_ceil(2), "{driver:?}");
        assert_eq!(stats.rrl_slipped, received.slipped, "{driver:?}: {stats}");
        assert_eq!(stats.truncated, received.slipped, "{driver:?}: {stats}");
        assert_eq!(
            stats.answers(),
            received.full + received.slipped,
            "{driver:?}: {stats}"
        );
        assert_eq!(
            stats.dropped,
            limited - received.slipped,
            "{driver:?}: {stats}"
        );
    }
}

#[test]
fn an_exempt_client_gets_every_answer() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, |config| {
            config.rate_limit = Some(rate_limit(&["127.0.0.0/8", "::1"]));
        });
        let count = 500;
        let received = burst(addr, &server.handle(), count);
        let stats = CoreStats::sum(&server.handle().stats());
        server.handle().shutdown();
        server.join().unwrap();
        assert_eq!(received.full, count as u64, "{driver:?}: {received:?}");
        assert_eq!(received.slipped, 0, "{driver:?}");
        assert_eq!((stats.rrl_limited, stats.rrl_slipped), (0, 0), "{driver:?}");
        assert_eq!(stats.answers(), count as u64, "{driver:?}: {stats}");
    }
}
