//! A flood of forwarded misses makes no heap allocation (issue 22).
//!
//! A forwarding server (one core, a forward cache of 64 entries) in front
//! of a local upstream written here, which answers every name at once
//! with an A or AAAA record, or NXDOMAIN with an SOA for names whose first
//! label starts with `nx`. Clients ask names never asked before, eight at
//! a time: each is a forward cache miss, an upstream query on a socket of
//! its own, an answer checked and written for the client, and an insert
//! into a full cache that evicts. After a warm-up (the cache full and
//! evicting, every pool and table at its high-water mark), the flood must
//! not allocate at all, for each driver (epoll, then io_uring where the
//! kernel has it).
//!
//! dhat counts every thread of the process: the upstream and the client
//! (this test's threads) allocate nothing while measured, and the server
//! runs no thread but its core, so the count is the core's.
//!
//! One check per process: dhat's testing mode allows a single profiler per
//! process. Runs without libtest (`harness = false`): see
//! `alloc_miss_flood.rs`.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tern_cache::CacheLimits;
use tern_server::{Cidr, Driver, ForwardConfig, Server, ServerConfig};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// The forwarder's own zone (a forwarder has at least one).
const OWN_ZONE: &str = "\
$ORIGIN local.test.
$TTL 300
@    SOA ns1 hostmaster 1 7200 3600 1209600 300
     NS  ns1
ns1  A   192.0.2.53
";

/// The forward cache: small, so that it is full after the warm-up and
/// every insert of the flood evicts.
const LIMITS: CacheLimits = CacheLimits {
    max_entries: 64,
    max_bytes: 64 << 10,
};

/// Queries sent before a reply is awaited.
const BURST: usize = 8;

/// Warm-up queries: the cache fills and evicts.
const WARM_UP: usize = 400;

/// Measured queries, each a new name.
const FLOOD: usize = 4000;

/// How long the client waits for one answer before the test fails (a
/// guard against a lost datagram, not a wait for an event).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

const A: u16 = 1;
const AAAA: u16 = 28;

/// Query `i` of a run: a new name each, A or AAAA, with and without EDNS
/// and DO, some in mixed case, one in four an NXDOMAIN.
fn flood_query(prefix: &str, i: usize) -> Vec<u8> {
    let id = i as u16;
    match i % 4 {
        0 => tern_testkit::query(id, &format!("{prefix}{i}.flood.example.org."), A, None),
        1 => tern_testkit::query(
            id,
            &format!("{prefix}{i}.flood.example.org."),
            AAAA,
            Some((1232, false)),
        ),
        2 => tern_testkit::query(
            id,
            &format!("nx{prefix}{i}.flood.example.org."),
            A,
            Some((1232, true)),
        ),
        _ => tern_testkit::query(id, &format!("{prefix}{i}.Flood.Example.ORG."), A, None),
    }
}

/// The upstream: answers every query on `socket` until a datagram of one
/// octet arrives. Allocates nothing: one buffer in, one out.
fn upstream(socket: UdpSocket) {
    let mut query = [0u8; 512];
    let mut answer = [0u8; 512];
    loop {
        let Ok((len, from)) = socket.recv_from(&mut query) else {
            continue;
        };
        if len == 1 {
            return;
        }
        if let Some(answer_len) = answer_for(&query[..len], &mut answer) {
            let _ = socket.send_to(&answer[..answer_len], from);
        }
    }
}

/// An answer to `query` (its OPT and COOKIE left unanswered): an A or
/// AAAA record for the name, or NXDOMAIN with a root SOA for a name whose
/// first label starts with `nx` (in any case).
fn answer_for(query: &[u8], out: &mut [u8; 512]) -> Option<usize> {
    let mut end = 12;
    while *query.get(end)? != 0 {
        end += 1 + usize::from(query[end]);
    }
    let question_end = end + 5;
    let question = query.get(12..question_end)?;
    let qtype = u16::from_be_bytes([question[question.len() - 4], question[question.len() - 3]]);
    let nx = question.len() > 3 && question[1..3].eq_ignore_ascii_case(b"nx");
    out[..2].copy_from_slice(&query[..2]);
    out[2] = 0x80 | (query[2] & 0x01);
    out[3] = 0x80 | if nx { 3 } else { 0 };
    out[4..12].copy_from_slice(&[0, 1, 0, u8::from(!nx), 0, u8::from(nx), 0, 0]);
    let mut at = question_end;
    out[12..at].copy_from_slice(question);
    let mut push = |bytes: &[u8]| {
        out[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    if nx {
        // Root owner, SOA, IN, TTL 60, RDLENGTH 22: root MNAME and RNAME,
        // serial, refresh, retry, expire, MINIMUM 60.
        push(&[0, 0, 6, 0, 1, 0, 0, 0, 60, 0, 22, 0, 0]);
        push(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 60]);
    } else if qtype == AAAA {
        push(&[0xc0, 12, 0, 28, 0, 1, 0, 0, 1, 44, 0, 16]);
        push(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    } else {
        push(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 1]);
    }
    Some(at)
}

/// Starts the forwarder on a free loopback port, in front of `upstream`.
fn start(driver: Driver, upstream: SocketAddr) -> Option<(Server, SocketAddr)> {
    let catalog = Arc::new(tern_testkit::catalog("local.test.", OWN_ZONE));
    let mut forward = ForwardConfig::new(vec![upstream]);
    forward.allow = vec![Cidr::parse("127.0.0.0/8").unwrap()];
    forward.cache = LIMITS;
    forward.timeout = Duration::from_secs(2);
    for _ in 0..20 {
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let mut config = ServerConfig::new(vec![addr]);
        config.driver = driver;
        config.forward = Some(forward.clone());
        match Server::start(config, Arc::clone(&catalog)) {
            Ok(server) => return Some((server, addr)),
            Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => continue,
            // No io_uring in this kernel (or refused by its settings).
            Err(err) if driver == Driver::IoUring => {
                println!("io_uring unavailable ({err}): skipped");
                return None;
            }
            Err(err) => panic!("starting the forwarder: {err}"),
        }
    }
    panic!("no free loopback port");
}

/// Sends `queries` in bursts of [`BURST`] and checks every answer: its ID,
/// NXDOMAIN or one record, RA set.
fn ask(client: &UdpSocket, server: SocketAddr, queries: &[Vec<u8>]) {
    let mut answer = [0u8; 1024];
    for burst in queries.chunks(BURST) {
        for query in burst {
            client.send_to(query, server).unwrap();
        }
        let mut answered = [false; BURST];
        for _ in burst {
            let (len, _) = client.recv_from(&mut answer).expect("an answer");
            assert!(len > 12, "an answer");
            let id = u16::from_be_bytes([answer[0], answer[1]]);
            let Some(k) = burst
                .iter()
                .position(|query| query[..2] == id.to_be_bytes())
            else {
                panic!("an answer to no query of the burst: ID {id}");
            };
            assert!(!answered[k], "one answer per query");
            answered[k] = true;
            let nx = burst[k][13..15].eq_ignore_ascii_case(b"nx");
            let rcode = answer[3] & 0x0f;
            let answers = u16::from_be_bytes([answer[6], answer[7]]);
            assert!(answer[3] & 0x80 != 0, "RA set");
            if nx {
                assert_eq!((rcode, answers), (3, 0), "NXDOMAIN");
            } else {
                assert_eq!((rcode, answers), (0, 1), "one record");
            }
        }
    }
}

/// The process's allocations while `server`'s core answers the flood,
/// after a warm-up.
fn measure(server: SocketAddr, warm_up: &[Vec<u8>], flood: &[Vec<u8>]) -> (u64, u64) {
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client.set_read_timeout(Some(ANSWER_TIMEOUT)).unwrap();
    ask(&client, server, warm_up);
    let before = dhat::HeapStats::get();
    ask(&client, server, flood);
    let after = dhat::HeapStats::get();
    (
        after.total_blocks - before.total_blocks,
        after.total_bytes - before.total_bytes,
    )
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let upstream_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let upstream_addr = upstream_socket.local_addr().unwrap();
    let upstream_thread = thread::spawn(move || upstream(upstream_socket));

    let mut counts = Vec::new();
    for driver in [Driver::Legacy, Driver::IoUring] {
        let Some((server, addr)) = start(driver, upstream_addr) else {
            continue;
        };
        // Every query made before measuring; new names per driver.
        let warm_up: Vec<Vec<u8>> = (0..WARM_UP)
            .map(|i| flood_query(&format!("w{driver:?}"), i))
            .collect();
        let flood: Vec<Vec<u8>> = (0..FLOOD)
            .map(|i| flood_query(&format!("f{driver:?}"), i))
            .collect();
        let (blocks, bytes) = measure(addr, &warm_up, &flood);
        println!("{driver:?}: {blocks} allocations ({bytes} bytes) over {FLOOD} forwarded misses");
        let stats: tern_server::CoreStats = server.handle().stats().iter().sum();
        let asked = (WARM_UP + FLOOD) as u64;
        assert_eq!(stats.forward.upstream_queries, asked, "{stats}");
        assert_eq!(stats.forward.cache_misses, asked, "{stats}");
        // The cache stored the answers and evicted for them: the last
        // name asked is answered from it, the first has been evicted and
        // goes upstream again.
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.set_read_timeout(Some(ANSWER_TIMEOUT)).unwrap();
        ask(&client, addr, &flood[FLOOD - 1..]);
        ask(&client, addr, &warm_up[..1]);
        let after: tern_server::CoreStats = server.handle().stats().iter().sum();
        assert_eq!(after.forward.cache_hits, 1, "{after}");
        assert_eq!(after.forward.upstream_queries, asked + 1, "{after}");
        counts.push((driver, blocks, bytes));
        server.handle().shutdown();
        server.join().unwrap();
    }
    let stop = UdpSocket::bind("127.0.0.1:0").unwrap();
    stop.send_to(&[0], upstream_addr).unwrap();
    upstream_thread.join().unwrap();

    for (driver, blocks, bytes) in counts {
        dhat::assert_eq!(blocks, 0, "{:?}: allocations", driver);
        dhat::assert_eq!(bytes, 0, "{:?}: bytes", driver);
    }
    println!("a_flood_of_forwarded_misses_allocates_nothing: 1 passed, 0 failed");
}
