//! dnstap adds no heap allocation to answering, once each core's records
//! exist (issue 11, docs/decisions/0011-dnstap.md).
//!
//! Two servers, one without dnstap and one with `dnstap.file` and a small
//! per-core buffer (its writer started here, as the binary does: before
//! the server, given its go once it serves, finished after it), each count their core thread's allocations
//! ([`CountingAllocator`], read through [`CoreStats::allocations`]). Each
//! is warmed (its answer cache filled; dnstap's records are made at start),
//! then answers the same queries over UDP one at a time; the core's
//! allocations over those queries, less what a statistics snapshot itself
//! costs, must be the same with dnstap as without. The file written is
//! then checked to hold the measured queries (so the tap was not idle).
//! The warm-up asks for small answers only and the measured queries
//! alternate with an answer of about 1,100 octets: a record must hold any
//! UDP message from the start (records that grew on the core allocated).
//!
//! A third server has dnstap and a PROXY protocol listener
//! (`proxy.listen`, issue 26): the same queries, each behind a PROXY v2
//! header naming a client, must cost its core no more allocations either
//! (the header is parsed in place and taken off; the client it names is
//! what dnstap logs).

/// A PROXY v2 header (UDP over IPv4) naming client 192.0.2.7:12345.
const PROXY_HEADER: [u8; 28] = [
    0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a, 0x21, 0x12, 0, 12, 192,
    0, 2, 7, 127, 0, 0, 1, 0x30, 0x39, 0, 53,
];

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use tern_dnstap::{DnstapConfig, DnstapOutput, DnstapWriter};
use tern_server::{
    thread_allocations, Cidr, CountingAllocator, Driver, ProxyConfig, Server, ServerConfig,
};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The zone the tests answer from.
const ZONE: &str = tern_testkit::EXAMPLE_COM_ZONE;

/// Records per core: small, so that the writer's lag fills them and some
/// messages are dropped (a drop must not allocate either).
const BUFFER: usize = 32;

/// Queries answered while the core's allocations are measured.
const MEASURED: usize = 400;

/// A query for the small answer; with `large`, every other one asks for
/// the TXT of about 1,100 octets (EDNS 1232, so it is not truncated).
fn query(id: u16, large: bool) -> Vec<u8> {
    if large && id % 2 == 1 {
        tern_testkit::query(id, "big.example.com.", 16, Some((1232, false)))
    } else {
        tern_testkit::query(id, "www.example.com.", 1, None)
    }
}

/// Starts a server on a free loopback port, with its dnstap writer when
/// `dnstap` is set; with `proxied`, also a PROXY listener on the next
/// port, whose address is returned instead.
fn start(
    dnstap: Option<DnstapConfig>,
    proxied: bool,
) -> (Server, Option<DnstapWriter>, SocketAddr) {
    // Four strings of 250 octets: an answer of about 1,100.
    let strings: Vec<String> = ["a", "b", "c", "d"]
        .iter()
        .map(|letter| format!("\"{}\"", letter.repeat(250)))
        .collect();
    let zone = format!("{ZONE}big  TXT {}\n", strings.join(" "));
    let catalog = Arc::new(tern_testkit::catalog("example.com.", &zone));
    for _ in 0..20 {
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let mut config = ServerConfig::new(vec![addr]);
        config.driver = Driver::Legacy;
        config.allocations = Some(thread_allocations);
        let target = if proxied {
            let Ok(probe) = UdpSocket::bind("127.0.0.1:0") else {
                continue;
            };
            let proxy = probe.local_addr().unwrap();
            drop(probe);
            config.proxy = ProxyConfig {
                allow: vec![Cidr::parse("127.0.0.1/32").unwrap()],
                listen: vec![proxy],
            };
            proxy
        } else {
            addr
        };
        let mut writer = dnstap.as_ref().map(|tap| {
            let (writer, taps) = DnstapWriter::start(tap, 1).expect("starting the writer");
            config.dnstap = taps;
            writer
        });
        match Server::start(config, Arc::clone(&catalog)) {
            Ok(server) => {
                if let Some(writer) = &mut writer {
                    writer.go();
                }
                return (server, writer, target);
            }
            Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => continue,
            Err(err) => panic!("starting: {err}"),
        }
    }
    panic!("no free loopback port");
}

/// Asks `count` queries one at a time, each answered (the large answers
/// whole); `proxied`: each behind [`PROXY_HEADER`].
fn ask(client: &UdpSocket, server: SocketAddr, count: usize, large: bool, proxied: bool) {
    let mut answer = [0u8; 2048];
    for id in 0..count {
        let mut datagram = if proxied {
            PROXY_HEADER.to_vec()
        } else {
            Vec::new()
        };
        datagram.extend_from_slice(&query(id as u16, large));
        client.send_to(&datagram, server).unwrap();
        let (len, _) = client.recv_from(&mut answer).expect("an answer");
        assert!(len > 12 && answer[..2] == (id as u16).to_be_bytes());
        if large && id % 2 == 1 {
            assert!(len > 1000 && answer[2] & 0x02 == 0, "the TXT answer, whole");
        }
    }
}

/// The core's allocations over [`MEASURED`] queries, less one snapshot's
/// own, after a warm-up.
fn measure(server: &Server, addr: SocketAddr, proxied: bool) -> u64 {
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    // The cache, the pools and (with dnstap) every record.
    ask(&client, addr, 4 * BUFFER, false, proxied);
    let allocations = || server.handle().stats()[0].allocations;
    let first = allocations();
    let second = allocations();
    ask(&client, addr, MEASURED, true, proxied);
    let third = allocations();
    (third - second) - (second - first)
}

fn main() {
    let (plain, _, addr) = start(None, false);
    let without = measure(&plain, addr, false);
    plain.handle().shutdown();
    plain.join().unwrap();

    let dir = std::env::temp_dir().join(format!("tern-dnstap-alloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tap.fstrm");
    let mut config = DnstapConfig::new(DnstapOutput::File(path.clone()));
    config.buffer = BUFFER;
    let (tapped, writer, addr) = start(Some(config), false);
    let with = measure(&tapped, addr, false);
    let stats = tapped.handle().stats();
    tapped.handle().shutdown();
    tapped.join().unwrap();
    // The cores have stopped: the writer writes what they left, then STOP.
    writer.expect("dnstap is on").finish();
    let written = std::fs::metadata(&path).unwrap().len();
    let _ = std::fs::remove_dir_all(&dir);

    println!("core allocations over {MEASURED} queries: without dnstap {without}, with {with}");
    assert_eq!(
        with, without,
        "dnstap allocated on the core: {with} allocations, {without} without it"
    );
    // The tap was busy: at least the measured queries and answers were
    // handed over (written, or dropped when the writer lagged).
    let core = &stats[0];
    assert!(
        core.dnstap_written + core.dnstap_dropped.iter().sum::<u64>() >= 2 * MEASURED as u64,
        "{core}"
    );
    assert!(
        written > (core.dnstap_written as usize * 30) as u64,
        "{written} octets"
    );

    // dnstap and PROXY headers together.
    let proxy_path = dir.join("proxy.fstrm");
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = DnstapConfig::new(DnstapOutput::File(proxy_path.clone()));
    config.buffer = BUFFER;
    let (proxied, writer, addr) = start(Some(config), true);
    let behind_proxy = measure(&proxied, addr, true);
    let stats = proxied.handle().stats();
    proxied.handle().shutdown();
    proxied.join().unwrap();
    writer.expect("dnstap is on").finish();
    let logged = std::fs::read(&proxy_path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    println!("core allocations over {MEASURED} queries behind a PROXY header: {behind_proxy}");
    assert_eq!(
        behind_proxy, without,
        "PROXY headers allocated on the core: {behind_proxy} allocations, {without} without"
    );
    let core = &stats[0];
    assert_eq!(
        core.proxy.accepted,
        (4 * BUFFER + MEASURED) as u64,
        "{core}"
    );
    // dnstap logged the client in the header (192.0.2.7), not the proxy.
    assert!(
        logged.windows(4).any(|octets| octets == [192, 0, 2, 7]),
        "the header's client is not in the dnstap log"
    );
    println!("dnstap_adds_no_allocation: 1 passed, 0 failed");
}
