//! The caching forwarder over real loopback sockets: a second tern serving
//! example.com as the upstream, and a hostile upstream written here that
//! answers each query name with a different kind of bad answer.
//!
//! Checks: forwarded answers carry RA, the client's ID and question case;
//! the forward cache answers repeats (counted upstream queries) with TTLs
//! that count down; NXDOMAIN is cached; REFUSED for clients outside
//! `forward.allow`, for RD=0, and never a forward for our own zone;
//! identical questions in flight are coalesced; TC=1 from upstream is
//! retried over TCP; every bad upstream answer is dropped and the client
//! gets SERVFAIL; serve-stale once the upstream is stopped. Over TCP:
//! forwarded answers (never truncated, out of order with our own),
//! clients that leave before their answer, and forwarded queries counted
//! against the connection's in-flight limit.

use std::io::Write;
use std::net::{Shutdown, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tern_server::{Cidr, CoreStats, Driver, ForwardConfig, Server, ServerConfig};
use tern_wire::name::NameBuf;
use tern_wire::parse::{MessageView, Section};

use crate::*;

/// The forwarder's own zone: queries for it are never forwarded.
const OWN_ZONE: &str = "\
$ORIGIN local.test.
$TTL 300
@    SOA ns1 hostmaster 1 7200 3600 1209600 300
     NS  ns1
ns1  A   192.0.2.53
";

/// How long the hostile upstream runs at most (it stops earlier when its
/// test drops it).
const HOSTILE_LIFETIME: Duration = Duration::from_secs(60);

/// Starts a forwarding tern (one core, own zone local.test.) in front of
/// `upstreams`, with `configure` applied to its forward configuration.
fn start_forwarder(
    driver: Driver,
    upstreams: Vec<SocketAddr>,
    configure: impl Fn(&mut ForwardConfig),
) -> (Server, SocketAddr) {
    start_forwarder_with(driver, upstreams, configure, |_| {})
}

/// [`start_forwarder`], with `server` applied to the server configuration.
fn start_forwarder_with(
    driver: Driver,
    upstreams: Vec<SocketAddr>,
    configure: impl Fn(&mut ForwardConfig),
    server: impl Fn(&mut ServerConfig),
) -> (Server, SocketAddr) {
    let mut forward = ForwardConfig::new(upstreams);
    forward.allow = vec![Cidr::parse("127.0.0.0/8").unwrap()];
    forward.timeout = Duration::from_millis(300);
    forward.retries = 1;
    configure(&mut forward);
    for _ in 0..20 {
        let addr = free_addr("127.0.0.1").expect("a free loopback port");
        let mut config = ServerConfig::new(vec![addr]);
        config.driver = driver;
        config.answer.max_udp_size = 4096;
        config.forward = Some(forward.clone());
        server(&mut config);
        match Server::start(config, zone_catalog("local.test.", OWN_ZONE)) {
            Ok(server) => return (server, addr),
            Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(err) => panic!("starting the forwarder on {driver:?}: {err}"),
        }
    }
    panic!("no free loopback port");
}

fn forward_stats(server: &Server) -> CoreStats {
    server.handle().stats().iter().sum()
}

/// Polls the server's summed statistics until `done` holds; panics with
/// `what` and the last statistics if it does not within [`TIMEOUT`].
fn wait_for_stats(server: &Server, what: &str, done: impl Fn(&CoreStats) -> bool) -> CoreStats {
    let until = Instant::now() + TIMEOUT;
    loop {
        let stats = forward_stats(server);
        if done(&stats) {
            return stats;
        }
        assert!(Instant::now() < until, "{what}: {stats}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// The first TTL in the answer section.
fn first_ttl(answer: &[u8]) -> u32 {
    let view = MessageView::parse(answer).unwrap();
    view.section(Section::Answer).next().unwrap().unwrap().ttl
}

fn stop(server: Server) {
    server.handle().shutdown();
    server.join().unwrap();
}

#[test]
fn forwards_caches_and_marks_ra() {
    for driver in DRIVERS {
        let (upstream, upstream_addr) = start_with(driver, |_| {});
        let (server, addr) = start_forwarder(driver, vec![upstream_addr], |_| {});

        let answer = udp_exchange(addr, &query(0x1111, "WwW.ExAmple.com.", 1, None)).unwrap();
        assert_eq!(summary(&answer), (0x1111, 0, false, 1), "{driver:?}");
        let view = MessageView::parse(&answer).unwrap();
        assert!(view.header().ra() && !view.header().aa() && view.header().rd());
        assert_eq!(
            view.question().unwrap().name.as_bytes(),
            b"\x03WwW\x07ExAmple\x03com\x00"
        );
        assert_eq!(last_octet(&answer), Some(80));

        // A repeat (other ID, other case, with EDNS) comes from the cache.
        let again = udp_exchange(addr, &query(0x2222, "www.EXAMPLE.com.", 1, Some(1232))).unwrap();
        assert_eq!(summary(&again), (0x2222, 0, false, 1), "{driver:?}");
        let view = MessageView::parse(&again).unwrap();
        assert_eq!(
            view.question().unwrap().name.as_bytes(),
            b"\x03www\x07EXAMPLE\x03com\x00"
        );
        assert!(view.edns().unwrap().is_some(), "an EDNS client gets an OPT");
        assert!(first_ttl(&again) <= first_ttl(&answer));

        // NXDOMAIN: forwarded once, then cached (RFC 2308).
        for id in [3, 4] {
            let nx = udp_exchange(addr, &query(id, "nope.example.com.", 1, None)).unwrap();
            let (_, rcode, _, answers) = summary(&nx);
            assert_eq!((rcode, answers), (3, 0), "{driver:?}");
            let view = MessageView::parse(&nx).unwrap();
            let soa = view.section(Section::Authority).next().unwrap().unwrap();
            assert_eq!(soa.rtype.0, 6);
            assert!(soa.ttl <= 300);
        }
        let stats = forward_stats(&server);
        assert_eq!(stats.forward.upstream_queries, 2, "{driver:?}: {stats}");
        assert_eq!(stats.forward.upstream_answers, 2, "{driver:?}: {stats}");
        assert_eq!(stats.forward.cache_hits, 2, "{driver:?}: {stats}");
        assert_eq!(stats.forward.cache_misses, 2, "{driver:?}: {stats}");
        assert_eq!(stats.forward.upstreams.len(), 1);
        assert!(stats.to_string().contains("forward queries 2"), "{stats}");
        stop(server);
        stop(upstream);
    }
}

#[test]
fn refuses_outside_the_acl_without_rd_and_never_forwards_our_zone() {
    for driver in DRIVERS {
        let (upstream, upstream_addr) = start_with(driver, |_| {});
        let (closed, closed_addr) = start_forwarder(driver, vec![upstream_addr], |forward| {
            forward.allow = vec![Cidr::parse("10.0.0.0/8").unwrap()];
        });
        let answer = udp_exchange(closed_addr, &query(1, "www.example.com.", 1, None)).unwrap();
        assert_eq!(
            summary(&answer).1,
            5,
            "{driver:?}: REFUSED outside forward.allow"
        );

        let (server, addr) = start_forwarder(driver, vec![upstream_addr], |_| {});
        let mut no_rd = query(2, "www.example.com.", 1, None);
        no_rd[2] &= !0x01;
        let answer = udp_exchange(addr, &no_rd).unwrap();
        assert_eq!(summary(&answer).1, 5, "{driver:?}: REFUSED without RD");

        // Our own zone: answered authoritatively, RD or not, never forwarded.
        for name in ["ns1.local.test.", "missing.local.test."] {
            let answer = udp_exchange(addr, &query(3, name, 1, None)).unwrap();
            let view = MessageView::parse(&answer).unwrap();
            assert!(view.header().aa(), "{driver:?} {name}");
        }
        let stats = forward_stats(&server);
        assert_eq!(stats.forward.upstream_queries, 0, "{driver:?}: {stats}");
        assert_eq!(forward_stats(&closed).forward.upstream_queries, 0);
        stop(server);
        stop(closed);
        stop(upstream);
    }
}

#[test]
fn truncated_upstream_answers_are_retried_over_tcp() {
    for driver in DRIVERS {
        let (upstream, upstream_addr) = start_with(driver, |_| {});
        let (server, addr) = start_forwarder(driver, vec![upstream_addr], |_| {});
        // About 2.6 KB: TC over UDP at 1232, whole over TCP.
        let answer = udp_exchange(addr, &query(9, "big.example.com.", 16, Some(4096))).unwrap();
        assert_eq!(summary(&answer), (9, 0, false, 40), "{driver:?}");
        // A client without EDNS gets TC and retries over TCP itself.
        let small = udp_exchange(addr, &query(10, "big.example.com.", 16, None)).unwrap();
        assert_eq!(summary(&small), (10, 0, true, 0), "{driver:?}");
        assert_eq!(forward_stats(&server).forward.cache_hits, 1);
        stop(server);
        stop(upstream);
    }
}

#[test]
fn ttls_count_down_and_stale_answers_outlive_the_upstream() {
    let zone = "\
$ORIGIN example.net.
@     300 SOA ns1 hostmaster 1 7200 3600 1209600 300
      300 NS  ns1
ns1   300 A   192.0.2.1
count 30  A   192.0.2.3
short 1   A   192.0.2.2
";
    let driver = Driver::Legacy;
    let upstream_addr = free_addr("127.0.0.1").unwrap();
    let mut config = ServerConfig::new(vec![upstream_addr]);
    config.driver = driver;
    let upstream = Server::start(config, zone_catalog("example.net.", zone)).unwrap();
    let (server, addr) = start_forwarder(driver, vec![upstream_addr], |forward| {
        forward.stale_ttl = Duration::from_secs(7);
        forward.timeout = Duration::from_millis(200);
    });
    // The TTL counts down: asked again until it has (a second or so; the
    // entry lives 30), every repeat from the cache.
    let first = udp_exchange(addr, &query(1, "count.example.net.", 1, None)).unwrap();
    assert_eq!(first_ttl(&first), 30);
    let until = Instant::now() + TIMEOUT;
    let mut repeats = 0;
    let ttl = loop {
        repeats += 1;
        let later = udp_exchange(addr, &query(2, "count.example.net.", 1, None)).unwrap();
        let ttl = first_ttl(&later);
        if ttl < 30 || Instant::now() > until {
            break ttl;
        }
        thread::sleep(Duration::from_millis(50));
    };
    assert!(ttl < 30, "the TTL counts down: {ttl}");
    let stats = forward_stats(&server);
    assert_eq!(stats.forward.cache_hits, repeats, "{stats}");

    // Cache a one-second answer and stop the upstream; once the entry
    // expires, every attempt fails and the stale answer is served with
    // the stale TTL (RFC 8767). Until then, answers come from the cache
    // with their remaining TTL, never the stale one.
    let first = udp_exchange(addr, &query(3, "short.example.net.", 1, None)).unwrap();
    assert_eq!(first_ttl(&first), 1);
    stop(upstream);
    let until = Instant::now() + TIMEOUT + TIMEOUT;
    let stale = loop {
        let answer = udp_exchange(addr, &query(3, "short.example.net.", 1, None)).unwrap();
        if first_ttl(&answer) == 7 {
            break answer;
        }
        assert!(first_ttl(&answer) <= 1);
        assert!(Instant::now() < until, "no stale answer");
        thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(summary(&stale), (3, 0, false, 1));
    assert_eq!(last_octet(&stale), Some(2));
    let stats = forward_stats(&server);
    assert_eq!(stats.forward.stale_answers, 1, "{stats}");
    assert!(stats.forward.upstream_timeouts >= 2, "{stats}");
    // A name never cached: SERVFAIL.
    let fail = udp_exchange(addr, &query(4, "other.example.net.", 1, None)).unwrap();
    assert_eq!(summary(&fail).1, 2);
    stop(server);
}

//----------- The hostile upstream -------------------------------------------

/// A UDP upstream on loopback that answers by the query name's first
/// label; it counts the queries it receives, and stops when dropped.
/// Answers for names whose first label starts with "held" wait until
/// [`Hostile::release`], so that a test can see what the forwarder does
/// while a question is upstream without racing a delay.
struct Hostile {
    addr: SocketAddr,
    queries: Arc<AtomicUsize>,
    /// The source port of every query received, in order.
    ports: Arc<Mutex<Vec<u16>>>,
    released: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Hostile {
    fn start() -> Hostile {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let addr = socket.local_addr().unwrap();
        let queries = Arc::new(AtomicUsize::new(0));
        let ports = Arc::new(Mutex::new(Vec::new()));
        let released = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (counter, seen, release, stopped) = (
            Arc::clone(&queries),
            Arc::clone(&ports),
            Arc::clone(&released),
            Arc::clone(&stop),
        );
        thread::spawn(move || {
            let started = Instant::now();
            let mut buf = [0u8; 4096];
            let mut held: Vec<(Vec<u8>, SocketAddr)> = Vec::new();
            while !stopped.load(Ordering::Relaxed) && started.elapsed() < HOSTILE_LIFETIME {
                if release.load(Ordering::Acquire) {
                    for (answer, peer) in held.drain(..) {
                        let _ = socket.send_to(&answer, peer);
                    }
                }
                let Ok((len, peer)) = socket.recv_from(&mut buf) else {
                    continue;
                };
                seen.lock().unwrap().push(peer.port());
                counter.fetch_add(1, Ordering::Relaxed);
                let query = &buf[..len];
                for answer in hostile_answers(query) {
                    if is_held(query) && !release.load(Ordering::Acquire) {
                        held.push((answer, peer));
                    } else {
                        let _ = socket.send_to(&answer, peer);
                    }
                }
            }
        });
        Hostile {
            addr,
            queries,
            ports,
            released,
            stop,
        }
    }

    /// Waits until the upstream has received `count` queries (the
    /// forwarder counts a query sent before this thread has read it).
    fn wait_for_queries(&self, count: usize) {
        let until = Instant::now() + TIMEOUT;
        while self.queries.load(Ordering::Relaxed) < count {
            assert!(Instant::now() < until, "{count} upstream queries");
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends the held answers (within the socket's 50 ms read timeout),
    /// and every later one at once.
    fn release(&self) {
        self.released.store(true, Ordering::Release);
    }
}

/// Whether the query's first label starts with "held".
fn is_held(query: &[u8]) -> bool {
    MessageView::parse(query)
        .ok()
        .and_then(|view| view.question())
        .is_some_and(|question| {
            question
                .name
                .first_label()
                .to_ascii_lowercase()
                .starts_with(b"held")
        })
}

/// An A record answer owned by a pointer to the question name.
const GOOD_RECORD: [u8; 16] = [0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 7];

fn encode(name: &str) -> Vec<u8> {
    NameBuf::from_text(name.as_bytes(), None)
        .unwrap()
        .as_bytes()
        .to_vec()
}

/// The answers sent for one query (usually one; none for a bad query).
fn hostile_answers(query: &[u8]) -> Vec<Vec<u8>> {
    let Ok(view) = MessageView::parse(query) else {
        return Vec::new();
    };
    let Some(question) = view.question() else {
        return Vec::new();
    };
    let label = question.name.first_label().to_ascii_lowercase();
    let id = view.header().id();
    let answer = |id: u16, question: &[u8], counts: [u16; 3], records: &[u8]| {
        let mut out = id.to_be_bytes().to_vec();
        out.extend_from_slice(&[0x81, 0x80, 0, 1]);
        for count in counts {
            out.extend_from_slice(&count.to_be_bytes());
        }
        out.extend_from_slice(question);
        out.extend_from_slice(records);
        out
    };
    let q = question.bytes;
    match label.as_slice() {
        label if label.starts_with(b"good") || label.starts_with(b"held") => {
            vec![answer(id, q, [1, 0, 0], &GOOD_RECORD)]
        }
        b"wrongid" => vec![answer(id ^ 0x5555, q, [1, 0, 0], &GOOD_RECORD)],
        b"wrongq" => {
            let mut other = encode("wrongq.elsewhere.test.");
            other.extend_from_slice(&q[q.len() - 4..]);
            let mut record = encode("wrongq.elsewhere.test.");
            record.extend_from_slice(&GOOD_RECORD[2..]);
            vec![answer(id, &other, [1, 0, 0], &record)]
        }
        b"lowercase" => {
            // The question in another case than sent (0x20 check).
            let mut lower = q.to_vec();
            lower.make_ascii_lowercase();
            let mut upper = q.to_vec();
            upper.make_ascii_uppercase();
            let other = if lower == q { upper } else { lower };
            vec![answer(id, &other, [1, 0, 0], &GOOD_RECORD)]
        }
        b"malformed" => vec![answer(id, q, [2, 0, 0], &GOOD_RECORD)],
        b"garbage" => vec![id
            .to_be_bytes()
            .iter()
            .chain(&[0x81, 0x80, 0, 1, 0])
            .copied()
            .collect()],
        b"loop" => {
            // qname CNAME b.loop.test., b.loop.test. CNAME qname.
            let target = encode("b.loop.test.");
            let mut records = vec![0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60];
            records.extend_from_slice(&(target.len() as u16).to_be_bytes());
            records.extend_from_slice(&target);
            records.extend_from_slice(&target);
            records.extend_from_slice(&[0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 0xc0, 12]);
            vec![answer(id, q, [2, 0, 0], &records)]
        }
        b"outside" => {
            let mut records = GOOD_RECORD.to_vec();
            records.extend_from_slice(&encode("victim.test."));
            records.extend_from_slice(&GOOD_RECORD[2..]);
            vec![answer(id, q, [2, 0, 0], &records)]
        }
        b"header" => {
            // An owner pointer into the header, which a client's copy replaces.
            let mut records = GOOD_RECORD.to_vec();
            records[1] = 2;
            vec![answer(id, q, [1, 0, 0], &records)]
        }
        b"spoofed" => {
            // A bad answer first, then a good one: the good one wins.
            vec![
                answer(id ^ 1, q, [1, 0, 0], &GOOD_RECORD),
                answer(id, q, [1, 0, 0], &GOOD_RECORD),
            ]
        }
        _ => Vec::new(),
    }
}

#[test]
fn hostile_answers_are_dropped_and_never_cached() {
    let driver = Driver::Legacy;
    let hostile = Hostile::start();
    // Each name waits out two timeouts; long enough that the hostile
    // thread's bad answer arrives within it on a loaded machine.
    let (server, addr) = start_forwarder(driver, vec![hostile.addr], |forward| {
        forward.timeout = Duration::from_millis(500);
        forward.retries = 1;
    });
    let bad = [
        "wrongid",
        "wrongq",
        "lowercase",
        "malformed",
        "garbage",
        "loop",
        "outside",
        "header",
    ];
    for (id, label) in bad.iter().enumerate() {
        let name = format!("{label}.hostile.test.");
        for attempt in 0..2u16 {
            let id = (id as u16) << 8 | attempt;
            let answer = udp_exchange(addr, &query(id, &name, 1, None)).unwrap();
            let (got_id, rcode, _, answers) = summary(&answer);
            assert_eq!((got_id, rcode, answers), (id, 2, 0), "{label}: SERVFAIL");
        }
    }
    let stats = forward_stats(&server);
    assert_eq!(stats.forward.upstream_answers, 0, "{stats}");
    assert!(
        stats.forward.upstream_rejected >= bad.len() as u64 * 2,
        "{stats}"
    );
    // The second query of each name was the cached SERVFAIL: two attempts
    // (one retry) per name, no more.
    hostile.wait_for_queries(bad.len() * 2);
    assert_eq!(
        hostile.queries.load(Ordering::Relaxed),
        bad.len() * 2,
        "{stats}"
    );

    // A spoofed answer before the real one: the real one is taken.
    let answer = udp_exchange(addr, &query(77, "spoofed.hostile.test.", 1, None)).unwrap();
    assert_eq!(summary(&answer), (77, 0, false, 1));
    let answer = udp_exchange(addr, &query(78, "good.hostile.test.", 1, None)).unwrap();
    assert_eq!(summary(&answer), (78, 0, false, 1));
    assert_eq!(last_octet(&answer), Some(7));
    stop(server);
}

/// Each upstream query leaves from a socket of its own on a random port
/// (issue 15: 2,000 queries for different names from at least 400
/// ports), and every socket closes once its answer is in.
#[test]
fn each_upstream_query_leaves_from_a_random_port() {
    const QUERIES: usize = 2000;
    let hostile = Hostile::start();
    let (server, addr) = start_forwarder(Driver::Legacy, vec![hostile.addr], |_| {});
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut buf = [0u8; 512];
    for n in 0..QUERIES {
        let id = n as u16;
        let message = query(id, &format!("good{n}.hostile.test."), 1, None);
        client.send_to(&message, addr).unwrap();
        let (len, _) = client.recv_from(&mut buf).expect("an answer");
        assert_eq!(summary(&buf[..len]), (id, 0, false, 1), "query {n}");
    }
    hostile.wait_for_queries(QUERIES);
    let ports = hostile.ports.lock().unwrap().clone();
    let distinct: std::collections::HashSet<u16> = ports.iter().copied().collect();
    assert!(
        distinct.len() >= 400,
        "{} ports for {QUERIES} queries",
        distinct.len()
    );
    // A port seen is no guide to the next query's: the same port twice in
    // a row is as rare as chance makes it (about 1 in 28,000 per pair),
    // where sockets reused in turn would repeat every few queries.
    let repeats = ports.windows(2).filter(|pair| pair[0] == pair[1]).count();
    assert!(repeats < 10, "{repeats} repeats in a row");
    let stats = wait_for_stats(&server, "every upstream socket closed", |stats| {
        stats.forward.upstream_answers == QUERIES as u64 && stats.forward.open_sockets == 0
    });
    assert_eq!(stats.forward.upstream_queries, QUERIES as u64, "{stats}");
    stop(server);
}

#[test]
fn identical_questions_in_flight_are_coalesced() {
    let driver = Driver::Legacy;
    let hostile = Hostile::start();
    let (server, addr) = start_forwarder(driver, vec![hostile.addr], |forward| {
        forward.timeout = Duration::from_secs(10);
    });
    let names = [
        "held.hostile.test.",
        "HELD.hostile.test.",
        "hElD.HOSTILE.test.",
    ];
    let clients: Vec<_> = (0..6u16)
        .map(|i| {
            let message = query(100 + i, names[usize::from(i) % 3], 1, None);
            thread::spawn(move || (message.clone(), udp_exchange(addr, &message)))
        })
        .collect();
    // The answer is held upstream until every client has joined the one
    // question in flight.
    wait_for_stats(&server, "five questions coalesced", |stats| {
        stats.forward.coalesced == 5 && stats.forward.upstream_queries == 1
    });
    hostile.wait_for_queries(1);
    hostile.release();
    for client in clients {
        let (message, answer) = client.join().unwrap();
        let answer = answer.expect("every waiting client is answered");
        assert_eq!(&answer[..2], &message[..2], "its own ID");
        let view = MessageView::parse(&answer).unwrap();
        assert_eq!(
            view.question().unwrap().bytes,
            &message[12..],
            "its own question"
        );
        assert_eq!(summary(&answer).1, 0);
    }
    assert_eq!(
        hostile.queries.load(Ordering::Relaxed),
        1,
        "one upstream query"
    );
    let stats = forward_stats(&server);
    assert_eq!(stats.forward.coalesced, 5, "{stats}");
    stop(server);
}

//----------- TCP clients ----------------------------------------------------

/// Reads `count` answers from `stream`, in whatever order they come.
fn tcp_answers(stream: &mut std::net::TcpStream, count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|n| tcp_receive(stream).unwrap_or_else(|| panic!("answer {n} of {count}")))
        .collect()
}

/// The answer with ID `id` among `answers`.
fn with_id(answers: &[Vec<u8>], id: u16) -> &[u8] {
    answers
        .iter()
        .find(|answer| answer[..2] == id.to_be_bytes())
        .unwrap_or_else(|| panic!("no answer with ID {id}"))
}

#[test]
fn tcp_clients_are_forwarded_and_never_truncated() {
    for driver in DRIVERS {
        let (upstream, upstream_addr) = start_with(driver, |_| {});
        let (server, addr) = start_forwarder(driver, vec![upstream_addr], |_| {});

        let mut stream = tcp_connect(addr);
        tcp_send(&mut stream, &query(0x3333, "WwW.ExAmple.com.", 1, None));
        let answer = tcp_receive(&mut stream).expect("a forwarded answer over TCP");
        assert_eq!(summary(&answer), (0x3333, 0, false, 1), "{driver:?}");
        let view = MessageView::parse(&answer).unwrap();
        assert!(view.header().ra() && !view.header().aa() && view.header().rd());
        assert_eq!(
            view.question().unwrap().name.as_bytes(),
            b"\x03WwW\x07ExAmple\x03com\x00"
        );
        assert!(
            view.edns().unwrap().is_none(),
            "no OPT for a client without"
        );
        assert_eq!(last_octet(&answer), Some(80));

        // Pipelined on the same connection: a forwarded question and one
        // of our own zone, both answered (in either order).
        tcp_send(
            &mut stream,
            &query(0x4444, "nope.example.com.", 1, Some(1232)),
        );
        tcp_send(&mut stream, &query(0x5555, "ns1.local.test.", 1, None));
        let answers = tcp_answers(&mut stream, 2);
        let nx = with_id(&answers, 0x4444);
        assert_eq!(summary(nx).1, 3, "{driver:?}: NXDOMAIN forwarded");
        let nx = MessageView::parse(nx).unwrap();
        assert!(nx.header().ra() && nx.edns().unwrap().is_some());
        let own = MessageView::parse(with_id(&answers, 0x5555)).unwrap();
        assert!(own.header().aa() && !own.header().ra(), "{driver:?}");

        // About 2.6 KB: a client without EDNS gets TC over UDP, then the
        // whole answer over TCP, from the forward cache.
        let small = udp_exchange(addr, &query(10, "big.example.com.", 16, None)).unwrap();
        assert_eq!(summary(&small), (10, 0, true, 0), "{driver:?}");
        tcp_send(&mut stream, &query(11, "big.example.com.", 16, None));
        let big = tcp_receive(&mut stream).expect("the whole answer over TCP");
        assert_eq!(summary(&big), (11, 0, false, 40), "{driver:?}");
        assert!(big.len() > 2048, "{}", big.len());

        let stats = forward_stats(&server);
        assert_eq!(stats.forward.upstream_answers, 3, "{driver:?}: {stats}");
        assert_eq!(stats.forward.cache_hits, 1, "{driver:?}: {stats}");
        drop(stream);
        stop(server);
        stop(upstream);
    }
}

#[test]
fn tcp_clients_leaving_before_their_answer_do_not_disturb_the_server() {
    let driver = Driver::Legacy;
    let hostile = Hostile::start();
    let (server, addr) = start_forwarder(driver, vec![hostile.addr], |forward| {
        forward.timeout = Duration::from_secs(10);
    });
    // Gone at once, while its question is upstream (the hostile upstream
    // holds the answer for "held" until released).
    let mut gone = tcp_connect(addr);
    tcp_send(&mut gone, &query(1, "held.hostile.test.", 1, None));
    wait_for_stats(&server, "the first question upstream", |stats| {
        stats.forward.upstream_queries == 1
    });
    drop(gone);
    // Half-closed: done sending, still reading; its answer still comes.
    let mut half = tcp_connect(addr);
    tcp_send(&mut half, &query(2, "HELD.hostile.test.", 1, None));
    half.shutdown(Shutdown::Write).unwrap();
    wait_for_stats(&server, "the second question coalesced", |stats| {
        stats.forward.coalesced == 1
    });
    hostile.release();
    let answer = tcp_receive(&mut half).expect("an answer after a half-close");
    assert_eq!(summary(&answer), (2, 0, false, 1));
    let view = MessageView::parse(&answer).unwrap();
    assert_eq!(
        view.question().unwrap().bytes,
        &query(2, "HELD.hostile.test.", 1, None)[12..],
        "its own question case"
    );
    drop(half);

    // The server carries on: over TCP and UDP, forwarded or not.
    let mut next = tcp_connect(addr);
    tcp_send(&mut next, &query(3, "good.hostile.test.", 1, None));
    let answer = tcp_receive(&mut next).expect("the next TCP client is answered");
    assert_eq!(summary(&answer), (3, 0, false, 1));
    let answer = udp_exchange(addr, &query(4, "held.hostile.test.", 1, None)).unwrap();
    assert_eq!(summary(&answer), (4, 0, false, 1), "from the forward cache");
    let answer = udp_exchange(addr, &query(5, "ns1.local.test.", 1, None)).unwrap();
    assert_eq!(summary(&answer), (5, 0, false, 1));
    drop(next);
    // Every connection ends (all three were accepted: each was answered
    // or coalesced).
    wait_for_stats(&server, "every connection closed", |stats| {
        stats.tcp_accepted == 3 && stats.tcp_open == 0
    });
    assert_eq!(
        hostile.queries.load(Ordering::Relaxed),
        2,
        "coalesced, then good"
    );
    stop(server);
}

#[test]
fn forwarded_queries_count_against_the_tcp_in_flight_limit() {
    let driver = Driver::Legacy;
    // The hostile upstream holds these answers until released.
    let hostile = Hostile::start();
    let (server, addr) = start_forwarder_with(
        driver,
        vec![hostile.addr],
        |forward| {
            forward.timeout = Duration::from_secs(10);
            forward.retries = 0;
        },
        |config| config.tcp.max_in_flight = 2,
    );
    let mut stream = tcp_connect(addr);
    let mut queries = Vec::new();
    for id in 1..=4u16 {
        let message = query(id, &format!("held{id}.hostile.test."), 1, None);
        queries.extend_from_slice(&(message.len() as u16).to_be_bytes());
        queries.extend_from_slice(&message);
    }
    stream.write_all(&queries).unwrap();
    // Two questions upstream; the other two stay unread while those are
    // in flight, however long that is.
    wait_for_stats(&server, "two questions upstream", |stats| {
        stats.forward.upstream_queries >= 2
    });
    let stats = forward_stats(&server);
    assert_eq!(stats.forward.upstream_queries, 2, "{stats}");
    // The two in flight and at most one read and waiting for room.
    assert!(stats.queries <= 3, "at most three of four read: {stats}");
    hostile.wait_for_queries(2);
    hostile.release();
    let answers = tcp_answers(&mut stream, 4);
    for id in 1..=4u16 {
        assert_eq!(summary(with_id(&answers, id)), (id, 0, false, 1));
    }
    assert_eq!(hostile.queries.load(Ordering::Relaxed), 4);
    // The connection still answers.
    tcp_send(&mut stream, &query(5, "ns1.local.test.", 1, None));
    let answer = tcp_receive(&mut stream).expect("answered after the limit");
    assert_eq!(summary(&answer), (5, 0, false, 1));
    stop(server);
}
