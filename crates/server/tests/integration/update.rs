//! UPDATE (RFC 2136) taken on the cores and handed off: the core answers
//! NOTAUTH and REFUSED itself, hands the rest to `UpdateIn::submit` and
//! answers with the RCODE sent back, over UDP and TCP, while it goes on
//! answering queries.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use tern_server::{UpdateIn, UpdateRequest};
use tern_wire::types::Rcode;

use super::*;

/// An UPDATE of `zone` adding a TXT at its apex.
fn update(id: u16, zone: &str) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&[0x28, 0, 0, 1, 0, 0, 0, 1, 0, 0]);
    for label in zone.split('.').filter(|l| !l.is_empty()) {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.extend_from_slice(&[0, 0, 6, 0, 1]);
    m.extend_from_slice(&[0xc0, 12, 0, 16, 0, 1, 0, 0, 0, 60, 0, 3, 2, b'h', b'i']);
    m
}

/// A server whose updates go to the returned channel; `takes` says which
/// zones take them.
fn start_taking(driver: Driver, takes: bool) -> (Running, mpsc::Receiver<UpdateRequest>) {
    let (tx, rx) = mpsc::channel();
    let tx = Arc::new(Mutex::new(tx));
    let (server, addr) = start_with(driver, |config| {
        let tx = Arc::clone(&tx);
        config.update_in = Some(UpdateIn {
            takes: Arc::new(move |origin| takes && origin == b"\x07example\x03com\x00"),
            submit: Arc::new(move |request| {
                let _ = tx.lock().unwrap().send(request);
            }),
        });
    });
    (
        Running {
            server: Some(server),
            addr,
        },
        rx,
    )
}

/// (id, opcode, rcode) of an answer.
fn head(answer: &[u8]) -> (u16, u8, u8) {
    let (id, rcode, _, _) = summary(answer);
    (id, (answer[2] >> 3) & 0x0f, rcode)
}

#[test]
fn an_update_waits_for_its_owner_while_queries_are_answered() {
    for driver in DRIVERS {
        let (running, requests) = start_taking(driver, true);
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.set_read_timeout(Some(TIMEOUT)).unwrap();
        client
            .send_to(&update(7, "example.com."), running.addr)
            .unwrap();
        let request = requests.recv_timeout(TIMEOUT).expect("handed off");
        assert_eq!(request.origin.as_bytes(), b"\x07example\x03com\x00");
        assert_eq!(request.key, None);
        assert_eq!(request.client.ip(), client.local_addr().unwrap().ip());
        // The owner has not answered: the core answers queries meanwhile,
        // and nothing came for the UPDATE.
        let answer = udp_exchange(running.addr, &query(9, "www.example.com.", 1, None)).unwrap();
        assert_eq!(summary(&answer), (9, 0, false, 1), "{driver:?}");
        client.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 512];
        assert!(
            client.recv_from(&mut buf).is_err(),
            "no answer before the owner's"
        );
        client.set_nonblocking(false).unwrap();
        request.reply.send(Rcode::NOERROR);
        let (len, _) = client.recv_from(&mut buf).expect("the UPDATE's answer");
        assert_eq!(head(&buf[..len]), (7, 5, 0), "{driver:?}");

        // Over TCP; a reply dropped unsent answers SERVFAIL.
        let mut stream = tcp_connect(running.addr);
        tcp_send(&mut stream, &update(8, "example.com."));
        let request = requests.recv_timeout(TIMEOUT).expect("handed off");
        request.reply.send(Rcode::REFUSED);
        assert_eq!(head(&tcp_receive(&mut stream).unwrap()), (8, 5, 5));
        tcp_send(&mut stream, &update(9, "example.com."));
        drop(requests.recv_timeout(TIMEOUT).expect("handed off"));
        assert_eq!(head(&tcp_receive(&mut stream).unwrap()), (9, 5, 2));

        // A zone not ours: NOTAUTH from the core, nothing handed off.
        let answer = udp_exchange(running.addr, &update(10, "example.org.")).unwrap();
        assert_eq!(head(&answer), (10, 5, 9));
        assert!(requests.try_recv().is_err());
    }
}

#[test]
fn a_zone_without_rules_is_refused_on_the_core() {
    for driver in DRIVERS {
        let (running, requests) = start_taking(driver, false);
        let answer = udp_exchange(running.addr, &update(3, "example.com.")).unwrap();
        assert_eq!(head(&answer), (3, 5, 5), "{driver:?}");
        // Without UPDATE configured at all: REFUSED too.
        let plain = start(driver);
        let answer = udp_exchange(plain.addr, &update(4, "example.com.")).unwrap();
        assert_eq!(head(&answer), (4, 5, 5), "{driver:?}");
        assert!(requests.try_recv().is_err());
    }
}
