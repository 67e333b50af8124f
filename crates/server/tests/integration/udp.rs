//! UDP: answers, the client's case echoed, truncation, what is dropped,
//! and the answer cache, on both drivers.

use tern_wire::parse::MessageView;

use crate::*;

#[test]
fn udp_answers_and_echoes_case() {
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        let answer = udp_exchange(server, &query(7, "WwW.Example.com.", 1, None)).unwrap();
        assert_eq!(summary(&answer), (7, 0, false, 1), "{driver:?}");
        let view = MessageView::parse(&answer).unwrap();
        assert_eq!(
            view.question().unwrap().name.as_bytes(),
            b"\x03WwW\x07Example\x03com\x00"
        );
        assert!(view.header().aa());
    }
}

#[test]
fn udp_truncates_then_tcp_carries_everything() {
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        let answer = udp_exchange(server, &query(1, "big.example.com.", 16, None)).unwrap();
        let (_, rcode, tc, _) = summary(&answer);
        assert_eq!((rcode, tc), (0, true), "{driver:?}");
        assert!(answer.len() <= 512);
        let mut stream = tcp_connect(server);
        tcp_send(&mut stream, &query(2, "big.example.com.", 16, None));
        let answer = tcp_receive(&mut stream).unwrap();
        assert_eq!(summary(&answer), (2, 0, false, 40), "{driver:?}");
    }
}

#[test]
fn responses_and_runts_are_dropped_but_server_keeps_answering() {
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        let mut response = query(3, "www.example.com.", 1, None);
        response[2] |= 0x80; // QR=1
        assert_udp_dropped(&running, &response, "QR=1");
        assert_udp_dropped(&running, &[1, 2, 3], "3 octets");
        // Longer than any query: cut by the receive buffer, dropped.
        let mut long = query(4, "www.example.com.", 1, None);
        long.resize(5000, 0);
        assert_udp_dropped(&running, &long, "5000 octets");
        let answer = udp_exchange(server, &query(4, "www.example.com.", 1, None)).unwrap();
        assert_eq!(summary(&answer), (4, 0, false, 1), "{driver:?}");
    }
}

/// A cache hit is byte for byte what respond wrote, apart from the ID and
/// the question's case; a client with a small EDNS size gets respond's
/// truncated answer rather than a cached one too large for it.
#[test]
fn cached_answers_equal_fresh_ones() {
    for driver in DRIVERS {
        let (server, addr) = start_with(driver, |config| config.cores = vec![0]);
        let handle = server.handle();
        for edns in [None, Some(1232)] {
            let first = udp_exchange(addr, &query(1, "www.example.com.", 1, edns)).unwrap();
            let second = udp_exchange(addr, &query(2, "WWW.example.com.", 1, edns)).unwrap();
            assert_eq!(&second[..2], &[0, 2]);
            assert_eq!(&first[2..13], &second[2..13]);
            assert_eq!(&second[13..16], b"WWW");
            assert_eq!(&first[16..], &second[16..], "{driver:?} {edns:?}");
        }
        // About 800 octets: fits 1232, not 512.
        let full = udp_exchange(addr, &query(3, "mid.example.com.", 16, Some(1232))).unwrap();
        assert_eq!(summary(&full), (3, 0, false, 10), "{driver:?}");
        let small = udp_exchange(addr, &query(4, "mid.example.com.", 16, Some(512))).unwrap();
        assert!(small.len() <= 512);
        let (_, rcode, tc, _) = summary(&small);
        assert_eq!(
            (rcode, tc),
            (0, true),
            "{driver:?}: TC for a 512-octet client"
        );
        let again = udp_exchange(addr, &query(5, "mid.example.com.", 16, Some(4096))).unwrap();
        assert_eq!(&again[2..], &full[2..]);
        let stats = handle.stats();
        assert_eq!(stats.len(), 1);
        // Hits: www twice (with and without EDNS), mid once at 4096.
        assert_eq!(stats[0].cache_hits, 3, "{driver:?}: {}", stats[0]);
        assert_eq!(stats[0].cache_misses, 4, "{driver:?}: {}", stats[0]);
        handle.shutdown();
        server.join().unwrap();
    }
}
