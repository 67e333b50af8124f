//! Outgoing zone transfers over TCP: AXFR and IXFR to allowed clients,
//! with and without TSIG, and every refusal (docs/decisions and
//! `xfr_out.rs` list the checks and their answers).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use tern_server::{Cidr, Driver, ServerConfig, TransferConfig};
use tern_wire::name::NameBuf;
use tern_wire::parse::{MessageView, Section};
use tern_xfr::tsig::{Algorithm, Key, Session, TsigRecord, BADKEY, BADSIG};

use crate::{catalog, start_with, tcp_connect, tcp_receive, tcp_send, udp_exchange, Running};

const AXFR: u16 = 252;
const IXFR: u16 = 251;
const SOA: u16 = 6;
const NOTIMP: u8 = 4;
const REFUSED: u8 = 5;
const NOTAUTH: u8 = 9;

/// The zone's serial (the test zone's SOA).
const SERIAL: u32 = 1;

/// A transfer can need at most this many messages here (the test zone is
/// about 80 KiB).
const MAX_MESSAGES: usize = 100;

fn key(secret: &[u8]) -> Key {
    let name = NameBuf::from_text(b"transfer-key.", None).unwrap();
    Key::new(name.as_name(), Algorithm::HmacSha256, secret)
}

fn running(driver: Driver, transfer: TransferConfig) -> Running {
    let (server, addr) = start_with(driver, |config: &mut ServerConfig| {
        config.transfer = transfer.clone();
    });
    Running {
        server: Some(server),
        addr,
    }
}

fn loopback_only() -> TransferConfig {
    TransferConfig {
        allow: vec![Cidr::parse("127.0.0.0/8").unwrap()],
        ..TransferConfig::default()
    }
}

/// A transfer request for `zone`: `qtype` AXFR or IXFR (with our SOA
/// serial `ixfr_serial` in the authority section).
fn request(id: u16, zone: &str, qtype: u16, ixfr_serial: Option<u32>) -> Vec<u8> {
    let mut query = tern_testkit::query(id, zone, qtype, None);
    query[2] &= !0x01; // RD off, as secondaries send it
    if let Some(serial) = ixfr_serial {
        query[9] = 1; // NSCOUNT
        query.extend_from_slice(&[0xc0, 12, 0, 6, 0, 1, 0, 0, 0, 0, 0, 22, 0, 0]);
        for field in [serial, 0, 0, 0, 0] {
            query.extend_from_slice(&field.to_be_bytes());
        }
    }
    query
}

/// Signs `message` with a new client session, which checks the answers.
fn signed(message: &[u8], key: &Key) -> (Vec<u8>, Session) {
    let mut session = Session::new(key);
    let mut buf = message.to_vec();
    let len = buf.len();
    buf.resize(len + session.record_len(), 0);
    let len = session.sign(&mut buf, len, now()).unwrap();
    buf.truncate(len);
    (buf, session)
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// What came back for a transfer request.
#[derive(Debug, Default)]
struct Received {
    messages: Vec<Vec<u8>>,
    /// (owner, type, RDATA) of every answer record, in order, owners
    /// lowercased.
    records: Vec<(Vec<u8>, u16, Vec<u8>)>,
}

/// Reads the answers to a transfer request on `stream`: until an error
/// answer, the second SOA, or (`single`) the first message.
fn receive(stream: &mut std::net::TcpStream, single: bool) -> Received {
    let mut received = Received::default();
    let mut soas = 0;
    for _ in 0..MAX_MESSAGES {
        let message = tcp_receive(stream).expect("the next message of the transfer");
        let view = MessageView::parse(&message).unwrap();
        let failed = view.header().rcode_bits() != 0;
        for record in view.section(Section::Answer) {
            let record = record.unwrap();
            soas += usize::from(record.rtype.0 == SOA);
            let owner = record.owner.to_buf().as_bytes().to_ascii_lowercase();
            received
                .records
                .push((owner, record.rtype.0, record.rdata.to_vec()));
        }
        received.messages.push(message);
        if failed || single || soas == 2 {
            return received;
        }
    }
    panic!("no end after {MAX_MESSAGES} messages");
}

/// (rcode, TSIG error) of a one-message answer.
fn rcode_and_tsig_error(message: &[u8]) -> (u8, Option<u16>) {
    let rcode = MessageView::parse(message).unwrap().header().rcode_bits();
    let tsig = TsigRecord::find(message)
        .unwrap()
        .map(|record| record.error);
    (rcode, tsig)
}

#[test]
fn axfr_sends_every_record_between_two_soas_and_the_connection_goes_on() {
    let zone = catalog();
    let zone = zone.zones().next().unwrap();
    let mut expected: BTreeMap<(Vec<u8>, u16), usize> = BTreeMap::new();
    let mut cursor = tern_authority::RecordCursor::default();
    while let Some(record) = zone.next_record(&mut cursor) {
        *expected
            .entry((record.owner.as_bytes().to_vec(), record.rtype.0))
            .or_default() += 1;
    }
    for driver in crate::DRIVERS {
        let running = running(driver, loopback_only());
        let mut stream = tcp_connect(running.addr);
        tcp_send(&mut stream, &request(0x4141, "example.com.", AXFR, None));
        let received = receive(&mut stream, false);
        assert!(received.messages.len() > 1, "{driver:?}: several messages");
        for (i, message) in received.messages.iter().enumerate() {
            let view = MessageView::parse(message).unwrap();
            let header = view.header();
            assert_eq!(
                (header.id(), header.qr(), header.aa()),
                (0x4141, true, true)
            );
            assert_eq!(
                view.question().is_some(),
                i == 0,
                "question in the first only"
            );
        }
        let records = &received.records;
        assert_eq!(
            records.first().map(|r| r.1),
            Some(SOA),
            "{driver:?}: SOA first"
        );
        assert_eq!(
            records.last().map(|r| r.1),
            Some(SOA),
            "{driver:?}: SOA last"
        );
        let mut got: BTreeMap<(Vec<u8>, u16), usize> = BTreeMap::new();
        for (owner, rtype, _) in &records[..records.len() - 1] {
            *got.entry((owner.clone(), *rtype)).or_default() += 1;
        }
        assert_eq!(got, expected, "{driver:?}: every record once");

        // The same connection answers a query after the transfer.
        tcp_send(
            &mut stream,
            &crate::query(0x4242, "www.example.com.", 1, None),
        );
        let answer = tcp_receive(&mut stream).expect("an answer after the transfer");
        assert_eq!(crate::summary(&answer), (0x4242, 0, false, 1));
    }
}

#[test]
fn ixfr_from_the_current_serial_gets_the_soa_alone_and_from_an_older_one_everything() {
    let running = running(Driver::Legacy, loopback_only());
    let mut stream = tcp_connect(running.addr);
    tcp_send(&mut stream, &request(1, "example.com.", IXFR, Some(SERIAL)));
    let current = receive(&mut stream, true);
    assert_eq!(current.messages.len(), 1);
    assert_eq!(current.records.len(), 1);
    assert_eq!(current.records[0].1, SOA);

    tcp_send(
        &mut stream,
        &request(2, "example.com.", IXFR, Some(SERIAL - 1)),
    );
    let older = receive(&mut stream, false);
    tcp_send(&mut stream, &request(3, "example.com.", AXFR, None));
    let axfr = receive(&mut stream, false);
    assert_eq!(older.records, axfr.records, "a full transfer in IXFR form");
}

#[test]
fn transfers_are_refused_to_other_clients_zones_and_over_udp() {
    // Nobody allowed (the default).
    let closed = running(Driver::Legacy, TransferConfig::default());
    let mut stream = tcp_connect(closed.addr);
    tcp_send(&mut stream, &request(1, "example.com.", AXFR, None));
    let answer = tcp_receive(&mut stream).unwrap();
    assert_eq!(rcode_and_tsig_error(&answer), (REFUSED, None));

    // Another client prefix.
    let elsewhere = running(
        Driver::Legacy,
        TransferConfig {
            allow: vec![Cidr::parse("192.0.2.0/24").unwrap()],
            ..TransferConfig::default()
        },
    );
    let mut stream = tcp_connect(elsewhere.addr);
    tcp_send(&mut stream, &request(2, "example.com.", IXFR, Some(0)));
    let answer = tcp_receive(&mut stream).unwrap();
    assert_eq!(rcode_and_tsig_error(&answer), (REFUSED, None));

    // Allowed, but not a zone of ours (nor a name inside one).
    let open = running(Driver::Legacy, loopback_only());
    let mut stream = tcp_connect(open.addr);
    for zone in ["example.org.", "www.example.com."] {
        tcp_send(&mut stream, &request(3, zone, AXFR, None));
        let answer = tcp_receive(&mut stream).unwrap();
        assert_eq!(rcode_and_tsig_error(&answer), (NOTAUTH, None), "{zone}");
    }

    // A zone's own rules replace the global ones: nobody globally, the
    // zone open to loopback.
    let own = running(
        Driver::Legacy,
        TransferConfig {
            zones: [tern_server::ZoneTransfer {
                origin: tern_wire::name::LowerNameBuf::from_name(
                    NameBuf::from_text(b"example.com.", None).unwrap().as_name(),
                ),
                allow: vec![Cidr::parse("127.0.0.0/8").unwrap()],
                key: None,
            }]
            .into_iter()
            .map(|zone| (zone.origin.as_bytes().into(), zone))
            .collect(),
            ..TransferConfig::default()
        },
    );
    let mut stream = tcp_connect(own.addr);
    tcp_send(&mut stream, &request(7, "example.com.", AXFR, None));
    let received = receive(&mut stream, false);
    assert!(
        received.messages.len() > 1,
        "the zone's own allow list lets it through"
    );

    // AXFR over UDP stays NOTIMP.
    let answer = udp_exchange(open.addr, &request(4, "example.com.", AXFR, None)).unwrap();
    assert_eq!(rcode_and_tsig_error(&answer), (NOTIMP, None));

    // IXFR over UDP (RFC 1995 section 4): the SOA alone to an allowed
    // client, whatever its serial; REFUSED to others.
    for serial in [SERIAL, SERIAL - 1] {
        let answer =
            udp_exchange(open.addr, &request(5, "example.com.", IXFR, Some(serial))).unwrap();
        let view = MessageView::parse(&answer).unwrap();
        assert!(view.header().aa());
        assert_eq!(crate::summary(&answer), (5, 0, false, 1));
        let soa = view.section(Section::Answer).next().unwrap().unwrap();
        assert_eq!(soa.rtype.0, SOA);
    }
    let answer = udp_exchange(closed.addr, &request(6, "example.com.", IXFR, Some(0))).unwrap();
    assert_eq!(rcode_and_tsig_error(&answer), (REFUSED, None));
}

#[test]
fn with_a_key_required_every_message_is_signed_and_bad_keys_are_notauth() {
    let key = key(b"the transfer secret");
    let transfer = TransferConfig {
        keys: vec![key.clone()],
        key: Some(key.clone()),
        ..loopback_only()
    };
    let running = running(Driver::IoUring, transfer);
    let addr: SocketAddr = running.addr;
    let axfr = request(0x5151, "example.com.", AXFR, None);

    // Unsigned: REFUSED, unsigned.
    let mut stream = tcp_connect(addr);
    tcp_send(&mut stream, &axfr);
    let answer = tcp_receive(&mut stream).unwrap();
    assert_eq!(rcode_and_tsig_error(&answer), (REFUSED, None));

    // Signed with the right key: every message signed and verified, the
    // unsigned intermediate messages RFC 8945 allows never used.
    let (query, mut session) = signed(&axfr, &key);
    tcp_send(&mut stream, &query);
    let received = receive(&mut stream, false);
    assert!(received.messages.len() > 1);
    for (i, message) in received.messages.iter().enumerate() {
        assert_eq!(session.verify(message, now()), Ok(true), "message {i}");
    }

    // An unknown key: NOTAUTH, BADKEY. The right name with another
    // secret: NOTAUTH, BADSIG.
    let other_name = NameBuf::from_text(b"other-key.", None).unwrap();
    let unknown = Key::new(other_name.as_name(), Algorithm::HmacSha256, b"x");
    for (wrong, error) in [(unknown, BADKEY), (self::key(b"not the secret"), BADSIG)] {
        let (query, _) = signed(&axfr, &wrong);
        tcp_send(&mut stream, &query);
        let answer = tcp_receive(&mut stream).unwrap();
        assert_eq!(rcode_and_tsig_error(&answer), (NOTAUTH, Some(error)));
    }
}

#[test]
fn signed_queries_get_signed_answers_over_udp_and_tcp() {
    let key = key(b"the query secret");
    let transfer = TransferConfig {
        keys: vec![key.clone()],
        ..TransferConfig::default()
    };
    let running = running(Driver::Legacy, transfer);

    // The SOA query a secondary sends before a transfer: answered and
    // signed, over UDP and TCP; twice, so that a cached answer cannot
    // stand in for the signed one.
    for round in 0..2 {
        let soa = tern_testkit::query(0x7000 + round, "example.com.", SOA, Some((1232, false)));
        let (query, mut session) = signed(&soa, &key);
        let answer = udp_exchange(running.addr, &query).expect("a UDP answer");
        assert_eq!(
            session.verify(&answer, now()),
            Ok(true),
            "UDP, round {round}"
        );
        assert_eq!(crate::summary(&answer), (0x7000 + round, 0, false, 1));

        let (query, mut session) = signed(&soa, &key);
        let mut stream = tcp_connect(running.addr);
        tcp_send(&mut stream, &query);
        let answer = tcp_receive(&mut stream).expect("a TCP answer");
        assert_eq!(
            session.verify(&answer, now()),
            Ok(true),
            "TCP, round {round}"
        );
    }

    // Too large for 512 octets with its signature: TC, the question
    // alone, signed.
    let big = tern_testkit::query(0x7100, "big.example.com.", 16, None);
    let (query, mut session) = signed(&big, &key);
    let answer = udp_exchange(running.addr, &query).expect("a UDP answer");
    assert!(answer.len() <= 512);
    assert_eq!(session.verify(&answer, now()), Ok(true));
    assert_eq!(crate::summary(&answer), (0x7100, 0, true, 0));

    // An unknown key: NOTAUTH with BADKEY, unsigned.
    let other_name = NameBuf::from_text(b"other-key.", None).unwrap();
    let unknown = Key::new(other_name.as_name(), Algorithm::HmacSha256, b"x");
    let soa = tern_testkit::query(0x7200, "example.com.", SOA, None);
    let (query, _) = signed(&soa, &unknown);
    let answer = udp_exchange(running.addr, &query).expect("a UDP answer");
    assert_eq!(rcode_and_tsig_error(&answer), (NOTAUTH, Some(BADKEY)));

    // The same query unsigned is answered as always.
    let answer = udp_exchange(running.addr, &soa).expect("a UDP answer");
    assert_eq!(rcode_and_tsig_error(&answer), (0, None));
}

/// `transfer.tls-only`: AXFR and IXFR over plain TCP and UDP are REFUSED
/// even to an allowed client with the right key; other queries are not
/// touched. (Over TLS they are served: tls.rs's
/// `transfers_over_tls_need_tls_only_and_the_client_ca`.)
#[test]
fn tls_only_refuses_transfers_over_plain_tcp_and_udp() {
    let key = key(b"the tls-only secret");
    let running = running(
        Driver::Legacy,
        TransferConfig {
            keys: vec![key.clone()],
            key: Some(key.clone()),
            tls_only: true,
            ..loopback_only()
        },
    );
    let mut stream = tcp_connect(running.addr);
    for (id, qtype, serial) in [(1, AXFR, None), (2, IXFR, Some(0))] {
        let (query, mut session) = signed(&request(id, "example.com.", qtype, serial), &key);
        tcp_send(&mut stream, &query);
        let answer = tcp_receive(&mut stream).unwrap();
        assert_eq!(rcode_and_tsig_error(&answer), (REFUSED, Some(0)), "{qtype}");
        assert_eq!(session.verify(&answer, now()), Ok(true), "signed: {qtype}");
    }
    let (query, _) = signed(&request(3, "example.com.", IXFR, Some(SERIAL)), &key);
    let answer = udp_exchange(running.addr, &query).unwrap();
    assert_eq!(rcode_and_tsig_error(&answer), (REFUSED, Some(0)));
    // Queries other than transfers are answered as before, on the same
    // connection.
    tcp_send(
        &mut stream,
        &tern_testkit::query(4, "example.com.", SOA, None),
    );
    let answer = tcp_receive(&mut stream).unwrap();
    assert_eq!(crate::summary(&answer), (4, 0, false, 1));
}
