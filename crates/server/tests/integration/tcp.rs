//! TCP (RFC 7766): framing, pipelining, and each limit closing the
//! connection: the per-core connection limit, the idle and per-message
//! timeouts, and the in-flight limit with the write timeout.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use tern_server::Driver;

use crate::*;

/// Short limits, so that the tests see them fire.
fn short_limits(config: &mut tern_server::ServerConfig) {
    config.cores = vec![0];
    config.tcp.idle_timeout = Duration::from_millis(300);
    config.tcp.message_timeout = Duration::from_millis(300);
    config.tcp.write_timeout = Duration::from_millis(300);
    config.tcp.max_connections = 2;
    config.tcp.max_in_flight = 4;
}

#[test]
fn tcp_pipelined_queries_all_answered() {
    for driver in DRIVERS {
        let server = start(driver);
        let mut stream = tcp_connect(server);
        // All frames in one write, then one at a time.
        let mut burst = Vec::new();
        for id in 0..50u16 {
            let q = query(id, "www.example.com.", 1, Some(1232));
            burst.extend_from_slice(&(q.len() as u16).to_be_bytes());
            burst.extend_from_slice(&q);
        }
        stream.write_all(&burst).unwrap();
        for id in 50..70u16 {
            tcp_send(&mut stream, &query(id, "www.example.com.", 1, Some(1232)));
        }
        for id in 0..70u16 {
            let answer = tcp_receive(&mut stream).unwrap();
            assert_eq!(summary(&answer), (id, 0, false, 1), "{driver:?}");
        }
    }
}

#[test]
fn tcp_frame_split_across_writes_is_answered() {
    for driver in DRIVERS {
        let server = start(driver);
        let mut stream = tcp_connect(server);
        let q = query(9, "www.example.com.", 1, None);
        let mut framed = (q.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&q);
        for chunk in framed.chunks(5) {
            stream.write_all(chunk).unwrap();
            std::thread::sleep(Duration::from_millis(10));
        }
        let answer = tcp_receive(&mut stream).unwrap();
        assert_eq!(summary(&answer), (9, 0, false, 1), "{driver:?}");
    }
}

#[test]
fn tcp_short_length_prefix_closes_connection() {
    for driver in DRIVERS {
        let server = start(driver);
        let mut stream = tcp_connect(server);
        stream.write_all(&[0, 5, 1, 2, 3, 4, 5]).unwrap();
        assert!(closed_by_server(&mut stream), "{driver:?}");
    }
}

#[test]
fn refused_outside_our_zones_over_tcp() {
    for driver in DRIVERS {
        let server = start(driver);
        let mut stream = tcp_connect(server);
        tcp_send(&mut stream, &query(9, "www.example.org.", 1, None));
        let answer = tcp_receive(&mut stream).unwrap();
        assert_eq!(summary(&answer), (9, 5, false, 0), "{driver:?}");
    }
}

#[test]
fn tcp_connections_past_the_limit_are_closed() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, short_limits);
        let handle = server.handle();
        let mut open = Vec::new();
        for id in 0..2 {
            let mut stream = tcp_connect(addr);
            tcp_send(&mut stream, &query(id, "www.example.com.", 1, None));
            assert!(tcp_receive(&mut stream).is_some(), "{driver:?}");
            open.push(stream);
        }
        let mut third = tcp_connect(addr);
        assert!(
            closed_by_server(&mut third),
            "{driver:?}: the third is closed"
        );
        let stats = handle.stats();
        assert_eq!(
            (
                stats[0].tcp_accepted,
                stats[0].tcp_open,
                stats[0].tcp_refused
            ),
            (2, 2, 1),
            "{driver:?}: {}",
            stats[0]
        );
        // Once one closes, a new connection is served again.
        drop(open.pop());
        std::thread::sleep(Duration::from_millis(100));
        let mut fourth = tcp_connect(addr);
        tcp_send(&mut fourth, &query(4, "www.example.com.", 1, None));
        assert!(tcp_receive(&mut fourth).is_some(), "{driver:?}");
        handle.shutdown();
        server.join().unwrap();
    }
}

#[test]
fn tcp_idle_connection_is_closed_after_the_idle_timeout() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, short_limits);
        let mut stream = tcp_connect(addr);
        tcp_send(&mut stream, &query(1, "www.example.com.", 1, None));
        assert!(tcp_receive(&mut stream).is_some());
        let idle = Instant::now();
        assert!(closed_by_server(&mut stream), "{driver:?}");
        let elapsed = idle.elapsed();
        assert!(
            elapsed >= Duration::from_millis(200) && elapsed < Duration::from_secs(2),
            "{driver:?}: closed after {elapsed:?}"
        );
        server.handle().shutdown();
        server.join().unwrap();
    }
}

#[test]
fn tcp_slow_message_is_closed_after_the_message_timeout() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, short_limits);
        let mut stream = tcp_connect(addr);
        let q = query(1, "www.example.com.", 1, None);
        // The length and half the message; the rest never comes. Keep
        // trickling one octet well within the idle timeout each time: only
        // the per-message clock can close the connection.
        stream.write_all(&(q.len() as u16).to_be_bytes()).unwrap();
        stream.write_all(&q[..q.len() / 2]).unwrap();
        let started = Instant::now();
        let mut closed = false;
        for &octet in &q[q.len() / 2..q.len() - 1] {
            std::thread::sleep(Duration::from_millis(100));
            if stream.write_all(&[octet]).is_err() {
                closed = true;
                break;
            }
        }
        let closed = closed || closed_by_server(&mut stream);
        assert!(closed, "{driver:?}");
        assert!(started.elapsed() < Duration::from_secs(2), "{driver:?}");
        server.handle().shutdown();
        server.join().unwrap();
    }
}

/// A client that pipelines large answers and never reads them: the server
/// stops at the in-flight limit, its write times out, and the connection
/// is closed; the core keeps serving others.
#[test]
fn tcp_client_that_does_not_read_is_closed() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, short_limits);
        let mut stream = tcp_connect(addr);
        let mut burst = Vec::new();
        for id in 0..200u16 {
            let q = query(id, "huge.example.com.", 16, None);
            burst.extend_from_slice(&(q.len() as u16).to_be_bytes());
            burst.extend_from_slice(&q);
        }
        stream.write_all(&burst).unwrap();
        // Let the server fill the socket buffers and time out.
        std::thread::sleep(Duration::from_millis(1500));
        let mut answers = 0;
        let mut length = [0u8; 2];
        stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        while stream.read_exact(&mut length).is_ok() {
            let mut message = vec![0u8; usize::from(u16::from_be_bytes(length))];
            if stream.read_exact(&mut message).is_err() {
                break;
            }
            answers += 1;
            assert!(answers <= 200);
        }
        assert!(
            answers < 200,
            "{driver:?}: closed before all {answers} answers"
        );
        let mut other = tcp_connect(addr);
        tcp_send(&mut other, &query(1, "www.example.com.", 1, None));
        assert!(tcp_receive(&mut other).is_some(), "{driver:?}");
        server.handle().shutdown();
        server.join().unwrap();
    }
}

#[test]
fn tcp_queries_bypass_the_cache() {
    let (server, addr) = start_with(Driver::Legacy, |config| config.cores = vec![0]);
    let handle = server.handle();
    let mut stream = tcp_connect(addr);
    for id in 0..3 {
        tcp_send(&mut stream, &query(id, "www.example.com.", 1, None));
        assert!(tcp_receive(&mut stream).is_some());
    }
    let stats = handle.stats();
    assert_eq!((stats[0].cache_hits, stats[0].cache_misses), (0, 0));
    assert_eq!(stats[0].queries, 3);
    handle.shutdown();
    server.join().unwrap();
}
