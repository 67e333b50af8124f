//! The runtime: several cores sharing one port through SO_REUSEPORT, IPv6,
//! reload under load, shutdown and statistics, on both drivers.

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tern_dnstap::{DnstapConfig, DnstapOutput, DnstapWriter};
use tern_server::{CoreStats, Server, ServerConfig};

use crate::*;

/// Datagrams sent from distinct source ports in the two-core test: with
/// the kernel hashing each flow to one of two sockets, all landing on one
/// core has probability 2^-63.
const FLOWS: usize = 64;

#[test]
fn two_cores_share_the_port() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, |config| config.cores = vec![0, 1]);
        let handle = server.handle();
        for id in 0..FLOWS as u16 {
            let answer = udp_exchange(addr, &query(id, "www.example.com.", 1, None)).unwrap();
            assert_eq!(summary(&answer), (id, 0, false, 1), "{driver:?}");
        }
        let stats = handle.stats();
        assert_eq!(stats.len(), 2);
        assert_eq!(stats[0].core, Some(0));
        assert_eq!(stats[1].core, Some(1));
        assert!(
            stats.iter().all(|core| core.queries > 0),
            "{driver:?}: {stats:?}"
        );
        let total: CoreStats = stats.iter().sum();
        assert_eq!(total.queries, FLOWS as u64);
        assert_eq!(total.answers_by_rcode[0], FLOWS as u64);
        handle.shutdown();
        server.join().unwrap();
    }
}

#[test]
fn ipv4_and_ipv6_on_one_server() {
    if UdpSocket::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback here: skipped");
        return;
    }
    for driver in DRIVERS {
        let Some(v6) = free_addr("::1") else {
            panic!("no free IPv6 port");
        };
        let v4 = free_addr("127.0.0.1").unwrap();
        let mut config = ServerConfig::new(vec![v4, v6]);
        config.driver = driver;
        config.cores = vec![0];
        let server = Server::start(config, catalog()).unwrap();
        for addr in [v4, v6] {
            let answer = udp_exchange(addr, &query(1, "www.example.com.", 1, None)).unwrap();
            assert_eq!(summary(&answer), (1, 0, false, 1), "{driver:?} {addr}");
            let mut stream = tcp_connect(addr);
            tcp_send(&mut stream, &query(2, "www.example.com.", 1, None));
            let answer = tcp_receive(&mut stream).unwrap();
            assert_eq!(summary(&answer), (2, 0, false, 1), "{driver:?} {addr}");
        }
        server.handle().shutdown();
        server.join().unwrap();
    }
}

/// A client sends queries back to back while the catalog is reloaded
/// several times: every query is answered, and after each reload the new
/// data (not a cached answer from the old catalog) comes back.
#[test]
fn reload_under_load_loses_nothing() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, |config| config.cores = vec![0, 1]);
        let handle = server.handle();
        let running = Arc::new(AtomicBool::new(true));
        let client = {
            let running = Arc::clone(&running);
            std::thread::spawn(move || {
                let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
                socket.set_read_timeout(Some(TIMEOUT)).unwrap();
                let (mut sent, mut lost) = (0u32, 0u32);
                let mut buf = [0u8; 1500];
                // Bounded by the main thread, which stops it within seconds.
                while running.load(Ordering::Relaxed) && sent < 1_000_000 {
                    let id = sent as u16;
                    socket
                        .send_to(&query(id, "www.example.com.", 1, None), addr)
                        .unwrap();
                    sent += 1;
                    // An answer to an earlier query that came after its
                    // wait (a descheduled client) is skipped, not taken
                    // for this one's loss.
                    loop {
                        match socket.recv_from(&mut buf) {
                            Ok((len, _)) if summary(&buf[..len]).0 == id => break,
                            Ok(_) => continue,
                            Err(_) => {
                                lost += 1;
                                break;
                            }
                        }
                    }
                }
                (sent, lost)
            })
        };
        for generation in 1..=5u8 {
            std::thread::sleep(Duration::from_millis(50));
            let www = 80 + generation;
            // A new version of the one zone, replacing the old in its slot.
            let zone = catalog_with(www).zones().next().cloned().unwrap();
            handle.update(vec![tern_authority::CatalogChange::Serve(zone)]);
            // Every core switches within a moment; from then on the new
            // address is all that is served. The bound is on the wait for
            // FLOWS new answers in a row, not on the switch: on a machine
            // at load 20, 64 exchanges once took longer than 2 s.
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut seen = 0;
            while seen < FLOWS && Instant::now() < deadline {
                let answer = udp_exchange(addr, &query(1, "www.example.com.", 1, None)).unwrap();
                if last_octet(&answer) == Some(www) {
                    seen += 1;
                } else {
                    seen = 0;
                }
            }
            assert_eq!(
                seen, FLOWS,
                "{driver:?}: generation {generation} not served"
            );
        }
        running.store(false, Ordering::Relaxed);
        let (sent, lost) = client.join().unwrap();
        assert!(
            sent > 100,
            "{driver:?}: the client kept the server busy ({sent})"
        );
        assert_eq!(lost, 0, "{driver:?}: {lost} of {sent} lost");
        // What the server saw: every query read was answered.
        let stats = CoreStats::sum(&handle.stats());
        assert_eq!(stats.answers(), stats.queries, "{driver:?}: {stats}");
        handle.shutdown();
        server.join().unwrap();
    }
}

#[test]
fn shutdown_finishes_within_two_seconds() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, |config| config.cores = vec![0, 1]);
        // An idle TCP connection and one mid-message must not hold it up.
        let _idle = tcp_connect(addr);
        let mut partial = tcp_connect(addr);
        partial.write_all(&[0, 40, 1, 2]).unwrap();
        let answer = udp_exchange(addr, &query(1, "www.example.com.", 1, None)).expect("an answer");
        assert_eq!(summary(&answer), (1, 0, false, 1), "{driver:?}");
        let started = Instant::now();
        server.handle().shutdown();
        server.join().unwrap();
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_secs(2), "{driver:?}: {elapsed:?}");
        // Nothing answers on the port any more.
        assert!(
            udp_exchange_within(addr, &query(2, "www.example.com.", 1, None), SILENCE).is_none()
        );
        assert!(std::net::TcpStream::connect(addr).is_err(), "{driver:?}");
    }
}

#[test]
fn stats_count_each_kind_of_answer() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, |config| config.cores = vec![0]);
        let handle = server.handle();
        for id in 0..3 {
            udp_exchange(addr, &query(id, "www.example.com.", 1, None)).unwrap();
        }
        let nxdomain = udp_exchange(addr, &query(3, "nope.example.com.", 1, None)).unwrap();
        assert_eq!(summary(&nxdomain).1, 3);
        let refused = udp_exchange(addr, &query(4, "www.example.org.", 1, None)).unwrap();
        assert_eq!(summary(&refused).1, 5);
        assert!(summary(&udp_exchange(addr, &query(5, "big.example.com.", 16, None)).unwrap()).2);
        let mut response = query(6, "www.example.com.", 1, None);
        response[2] |= 0x80;
        assert!(udp_exchange_within(addr, &response, SILENCE).is_none());
        let mut stream = tcp_connect(addr);
        tcp_send(&mut stream, &query(7, "www.example.com.", 1, None));
        tcp_receive(&mut stream).unwrap();

        let stats = handle.stats();
        assert_eq!(stats.len(), 1);
        let core = &stats[0];
        assert_eq!(core.core, Some(0));
        assert_eq!(core.queries, 8, "{driver:?}: {core}");
        let mut rcodes = [0u64; 16];
        rcodes[0] = 5; // www x3, big, TCP www
        rcodes[3] = 1;
        rcodes[5] = 1;
        assert_eq!(core.answers_by_rcode, rcodes, "{driver:?}: {core}");
        // www: one miss then two hits; NXDOMAIN and REFUSED and big: misses
        // (REFUSED and TC answers are never cached).
        assert_eq!(
            (core.cache_hits, core.cache_misses),
            (2, 4),
            "{driver:?}: {core}"
        );
        assert_eq!(core.truncated, 1);
        assert_eq!(core.dropped, 1);
        assert_eq!(
            (core.tcp_accepted, core.tcp_open, core.tcp_refused),
            (1, 1, 0)
        );
        assert_eq!(core.allocations, 0, "no allocation counter configured");
        assert!(core.to_string().starts_with("core 0: queries 8 answers 7"));
        handle.shutdown();
        server.join().unwrap();
    }
}

#[test]
fn allocation_counter_is_read_on_each_core() {
    fn fake_counter() -> u64 {
        // Any per-thread value will do: the thread's name length proves
        // the call happened on the core's own thread.
        std::thread::current().name().map_or(0, str::len) as u64
    }
    let (server, _) = start_with(Driver::Legacy, |config| {
        config.cores = vec![1];
        config.allocations = Some(fake_counter);
    });
    let stats = server.handle().stats();
    assert_eq!(stats[0].allocations, "tern-core-1".len() as u64);
    server.handle().shutdown();
    server.join().unwrap();
}

#[test]
fn auto_driver_serves() {
    // Auto picks io_uring where the kernel allows it and the legacy driver
    // otherwise; either way the server answers.
    let (server, addr) = start_with(Driver::Auto, |_| {});
    let answer = udp_exchange(addr, &query(1, "www.example.com.", 1, None)).expect("an answer");
    assert_eq!(summary(&answer), (1, 0, false, 1));
    assert_eq!(last_octet(&answer), Some(80));
    server.handle().shutdown();
    server.join().unwrap();
}

/// `start_then`'s hook runs with every core bound and none serving: a
/// query sent from inside it gets no answer until the hook returns (the
/// datagram waits in the bound socket), then it does. A failing hook fails
/// the start with its error, and the cores it stopped have released the
/// port.
#[test]
fn start_then_runs_its_hook_before_any_answer() {
    for driver in DRIVERS {
        let addr = free_addr("127.0.0.1").unwrap();
        let config = || {
            let mut config = ServerConfig::new(vec![addr]);
            config.driver = driver;
            config.cores = vec![0, 1];
            config
        };
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut buf = [0u8; 4096];
        let mut in_hook = None;
        let server = Server::start_then(config(), catalog(), || {
            client
                .send_to(&query(7, "www.example.com.", 1, None), addr)
                .unwrap();
            client.set_read_timeout(Some(SILENCE)).unwrap();
            in_hook = Some(client.recv_from(&mut buf).is_ok());
            Ok(())
        })
        .unwrap();
        assert_eq!(
            in_hook,
            Some(false),
            "{driver:?}: answered before the hook returned"
        );
        client.set_read_timeout(Some(TIMEOUT)).unwrap();
        let (len, _) = client.recv_from(&mut buf).expect("answered after the hook");
        assert_eq!(summary(&buf[..len]), (7, 0, false, 1), "{driver:?}");
        server.handle().shutdown();
        server.join().unwrap();

        let failed = Server::start_then(config(), catalog(), || {
            Err(std::io::Error::other("hook says no"))
        });
        assert_eq!(
            failed.err().map(|err| err.to_string()),
            Some("hook says no".to_string()),
            "{driver:?}"
        );
        // Plain sockets (no SO_REUSEPORT) bind only if no core holds the port.
        UdpSocket::bind(addr).expect("the cores released the UDP port");
        std::net::TcpListener::bind(addr).expect("the cores released the TCP port");
    }
}

/// The cores take one dnstap end each: ends made for another number of
/// cores fail the start before anything is bound.
#[test]
fn dnstap_ends_are_one_per_core() {
    let dir = std::env::temp_dir().join(format!("tern-dnstap-ends-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tap = DnstapConfig::new(DnstapOutput::File(dir.join("tap.fstrm")));
    let (writer, taps) = DnstapWriter::start(&tap, 2).unwrap();
    let addr = free_addr("127.0.0.1").unwrap();
    let mut config = ServerConfig::new(vec![addr]);
    config.dnstap = taps;
    let failed = Server::start(config, catalog());
    assert_eq!(
        failed.err().map(|err| err.kind()),
        Some(std::io::ErrorKind::InvalidInput)
    );
    UdpSocket::bind(addr).expect("nothing was bound");
    writer.finish();
    let _ = std::fs::remove_dir_all(&dir);
}
