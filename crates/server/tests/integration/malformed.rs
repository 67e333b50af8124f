//! Malformed and unusual queries over real sockets, each case over UDP and
//! TCP on both drivers, as decided in docs/decisions/0005: what is dropped,
//! what gets FORMERR (with the question when there is one), NOTIMP for
//! other opcodes, EDNS per RFC 6891 and RFC 8906, flags in queries, and
//! CPU bounded whatever the counts claim. Over TCP every case is followed
//! by a normal query on the same connection, which must be answered: a
//! malformed message never costs a client its connection (only a length
//! prefix below a header's size closes it).

use std::time::{Duration, Instant};

use crate::*;

/// Generous: an answer to any of these takes microseconds of CPU; this
/// only catches work proportional to what the counts claim (65535 records
/// per section) or a hang.
const ANSWER_BOUND: Duration = Duration::from_secs(2);

/// What a case must get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// No answer; over TCP the connection stays open.
    Drop,
    /// FORMERR with the header only.
    FormerrBare,
    /// FORMERR with the query's question, no OPT.
    FormerrWithQuestion,
}

/// `www.example.com. A` with ID 0x5151 and no EDNS.
fn base() -> Vec<u8> {
    query(0x5151, "www.example.com.", 1, None)
}

/// `base()` with `records` appended and the answer, authority and
/// additional counts set.
fn with_records(counts: [u16; 3], records: &[u8]) -> Vec<u8> {
    let mut q = base();
    for (i, count) in counts.iter().enumerate() {
        q[6 + 2 * i..8 + 2 * i].copy_from_slice(&count.to_be_bytes());
    }
    q.extend_from_slice(records);
    q
}

/// A header for `www.example.com. A` followed by `name` as the question.
fn with_question_name(name: &[u8]) -> Vec<u8> {
    let mut q = base()[..12].to_vec();
    q.extend_from_slice(name);
    q.extend_from_slice(&[0, 1, 0, 1]);
    q
}

/// An OPT record with `version` and EDNS `flags`.
fn opt(version: u8, flags: u16) -> Vec<u8> {
    let mut r = vec![0, 0, 41, 0x04, 0xd0, 0, version];
    r.extend_from_slice(&flags.to_be_bytes());
    r.extend_from_slice(&[0, 0]);
    r
}

/// Type A, class IN, TTL 300, RDLENGTH 4, 192.0.2.1.
const A_TAIL: [u8; 14] = [0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 1];

fn pointer(offset: usize) -> [u8; 2] {
    (0xc000 | offset as u16).to_be_bytes()
}

/// 257 octets: four 63-octet labels and the root.
fn long_name() -> Vec<u8> {
    let mut name = Vec::new();
    for _ in 0..4 {
        name.push(63);
        name.extend_from_slice(&[b'a'; 63]);
    }
    name.push(0);
    name
}

fn check_answer(answer: &[u8], message: &[u8], expect: Expect, context: &str) {
    assert_eq!(&answer[..2], &message[..2], "{context}: ID");
    assert_eq!(answer[2] & 0x80, 0x80, "{context}: QR");
    assert_eq!(answer[3] & 0x0f, 1, "{context}: FORMERR");
    match expect {
        Expect::FormerrBare => assert_eq!(answer.len(), 12, "{context}: header only"),
        Expect::FormerrWithQuestion => {
            assert_eq!(&answer[4..12], &[0, 1, 0, 0, 0, 0, 0, 0], "{context}");
            assert_eq!(&answer[12..], &base()[12..], "{context}: the question");
        }
        Expect::Drop => unreachable!("checked by the caller"),
    }
}

/// Sends `message` over UDP and over a new TCP connection and checks the
/// outcome, then checks that the TCP connection still answers a normal
/// query. A drop is seen as the answer to a normal query sent after
/// `message` arriving first (over UDP with the server's drop counter
/// raised by one), never as silence for a while.
fn assert_outcome(running: &Running, message: &[u8], expect: Expect, context: &str) {
    let server = running.addr;
    if expect == Expect::Drop {
        assert_udp_dropped(running, message, &format!("{context} UDP"));
    } else {
        let started = Instant::now();
        let answer =
            udp_exchange(server, message).unwrap_or_else(|| panic!("{context}: no UDP answer"));
        assert!(started.elapsed() < ANSWER_BOUND, "{context}: slow over UDP");
        check_answer(&answer, message, expect, &format!("{context} UDP"));
    }

    let mut stream = tcp_connect(server);
    let started = Instant::now();
    tcp_send(&mut stream, message);
    if expect != Expect::Drop {
        let answer = tcp_receive(&mut stream).unwrap_or_else(|| panic!("{context}: no TCP answer"));
        assert!(started.elapsed() < ANSWER_BOUND, "{context}: slow over TCP");
        check_answer(&answer, message, expect, &format!("{context} TCP"));
    }
    // Over TCP, a dropped message's connection answers the next query
    // first: anything before it would be the dropped message's answer.
    tcp_send(&mut stream, &query(0x6262, "www.example.com.", 1, None));
    let next = tcp_receive(&mut stream).expect("the connection still answers");
    assert_eq!(summary(&next), (0x6262, 0, false, 1), "{context}");
}

fn on_both_drivers(message: &[u8], expect: Expect) {
    for driver in DRIVERS {
        let running = start(driver);
        assert_outcome(&running, message, expect, &format!("{driver:?}"));
    }
}

//--- Dropped

#[test]
fn runts_are_dropped_and_close_tcp() {
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        assert_udp_dropped(&running, &base()[..11], "11 octets");
        assert_udp_dropped(&running, &[], "empty");
        // Over TCP a length below a header's size closes the connection.
        let mut stream = tcp_connect(server);
        tcp_send(&mut stream, &base()[..11]);
        assert!(closed_by_server(&mut stream), "{driver:?}");
    }
}

#[test]
fn responses_are_dropped() {
    let mut response = base();
    response[2] |= 0x80;
    on_both_drivers(&response, Expect::Drop);
}

#[test]
fn question_with_compression_pointer_is_dropped() {
    on_both_drivers(&with_question_name(&pointer(12)), Expect::Drop);
}

#[test]
fn question_label_over_63_is_dropped() {
    let mut name = vec![64];
    name.extend_from_slice(&[b'a'; 64]);
    name.push(0);
    on_both_drivers(&with_question_name(&name), Expect::Drop);
}

#[test]
fn question_name_over_255_is_dropped() {
    on_both_drivers(&with_question_name(&long_name()), Expect::Drop);
}

//--- FORMERR (RFC 9619 for the question count)

#[test]
fn qdcount_zero_is_formerr() {
    let mut q = base()[..12].to_vec();
    q[5] = 0;
    on_both_drivers(&q, Expect::FormerrBare);
}

#[test]
fn qdcount_two_is_formerr() {
    let mut q = base();
    q[5] = 2;
    q.extend_from_slice(&base()[12..]);
    on_both_drivers(&q, Expect::FormerrBare);
}

#[test]
fn record_compression_loop_is_formerr() {
    let mut record = pointer(base().len()).to_vec();
    record.extend_from_slice(&A_TAIL);
    on_both_drivers(
        &with_records([0, 0, 1], &record),
        Expect::FormerrWithQuestion,
    );
}

#[test]
fn record_forward_pointer_is_formerr() {
    let second = base().len() + 2 + A_TAIL.len();
    let mut records = pointer(second).to_vec();
    records.extend_from_slice(&A_TAIL);
    records.extend_from_slice(b"\x03www\x00");
    records.extend_from_slice(&A_TAIL);
    on_both_drivers(
        &with_records([0, 0, 2], &records),
        Expect::FormerrWithQuestion,
    );
}

#[test]
fn record_pointer_past_the_end_is_formerr() {
    let mut record = pointer(0x3fff).to_vec();
    record.extend_from_slice(&A_TAIL);
    on_both_drivers(
        &with_records([1, 0, 0], &record),
        Expect::FormerrWithQuestion,
    );
}

#[test]
fn record_label_over_63_is_formerr() {
    let mut record = vec![64];
    record.extend_from_slice(&[b'a'; 64]);
    record.push(0);
    record.extend_from_slice(&A_TAIL);
    on_both_drivers(
        &with_records([0, 1, 0], &record),
        Expect::FormerrWithQuestion,
    );
}

#[test]
fn record_name_over_255_is_formerr() {
    let mut record = long_name();
    record.extend_from_slice(&A_TAIL);
    on_both_drivers(
        &with_records([0, 0, 1], &record),
        Expect::FormerrWithQuestion,
    );
}

#[test]
fn counts_past_the_end_are_formerr_at_once() {
    for counts in [[65535, 0, 0], [0, 65535, 0], [0, 0, 65535], [65535; 3]] {
        on_both_drivers(&with_records(counts, &[]), Expect::FormerrWithQuestion);
    }
}

#[test]
fn rdlength_past_the_end_is_formerr() {
    let mut record = vec![0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 100];
    record.extend_from_slice(&[1, 2, 3, 4]);
    on_both_drivers(
        &with_records([0, 0, 1], &record),
        Expect::FormerrWithQuestion,
    );
}

#[test]
fn trailing_garbage_is_formerr() {
    let records = [opt(0, 0), vec![1, 2, 3]].concat();
    on_both_drivers(
        &with_records([0, 0, 1], &records),
        Expect::FormerrWithQuestion,
    );
}

#[test]
fn two_opt_records_are_formerr() {
    let records = [opt(0, 0), opt(0, 0)].concat();
    on_both_drivers(
        &with_records([0, 0, 2], &records),
        Expect::FormerrWithQuestion,
    );
}

#[test]
fn opt_outside_the_additional_section_is_formerr() {
    on_both_drivers(
        &with_records([1, 0, 0], &opt(0, 0)),
        Expect::FormerrWithQuestion,
    );
    on_both_drivers(
        &with_records([0, 1, 0], &opt(0, 0)),
        Expect::FormerrWithQuestion,
    );
}

#[test]
fn opt_with_a_non_root_owner_is_formerr() {
    let mut record = b"\x03www\x00".to_vec();
    record.extend_from_slice(&opt(0, 0)[1..]);
    on_both_drivers(
        &with_records([0, 0, 1], &record),
        Expect::FormerrWithQuestion,
    );
}

/// The largest messages the transports carry, packed with small records
/// whose owners are compression pointers and with counts claiming more:
/// answered at once, then the server still answers.
#[test]
fn largest_messages_of_records_are_formerr_at_once() {
    // UDP queries are read into a 4096-octet buffer; TCP carries 65535.
    for (size, tcp) in [(4000, false), (65535, true)] {
        let mut records = Vec::new();
        while base().len() + records.len() + 2 + A_TAIL.len() <= size {
            records.extend_from_slice(&pointer(12));
            records.extend_from_slice(&A_TAIL);
        }
        let message = with_records([0, 0, 65535], &records);
        for driver in DRIVERS {
            let running = start(driver);
            let server = running.addr;
            let started = Instant::now();
            let answer = if tcp {
                let mut stream = tcp_connect(server);
                tcp_send(&mut stream, &message);
                tcp_receive(&mut stream)
            } else {
                udp_exchange(server, &message)
            };
            let answer = answer.expect("answered");
            assert!(started.elapsed() < ANSWER_BOUND, "{driver:?} {size}");
            check_answer(&answer, &message, Expect::FormerrWithQuestion, "largest");
            let next = udp_exchange(server, &query(3, "www.example.com.", 1, None)).unwrap();
            assert_eq!(summary(&next), (3, 0, false, 1));
        }
    }
}

//--- Opcodes

#[test]
fn unknown_opcode_is_notimp_with_only_qr_and_tcp_stays_open() {
    // genreport `opcodeflg`: opcode 15, bare header, TC RD RA Z AD CD AA.
    let message = [0x12, 0x34, (15 << 3) | 0x07, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0];
    let expected = [0x12, 0x34, 0x80 | (15 << 3), 0x04, 0, 0, 0, 0, 0, 0, 0, 0];
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        assert_eq!(
            udp_exchange(server, &message).unwrap(),
            expected,
            "{driver:?}"
        );
        let mut stream = tcp_connect(server);
        tcp_send(&mut stream, &message);
        assert_eq!(tcp_receive(&mut stream).unwrap(), expected, "{driver:?}");
        tcp_send(&mut stream, &query(7, "www.example.com.", 1, None));
        let answer = tcp_receive(&mut stream).expect("the connection stays open");
        assert_eq!(summary(&answer), (7, 0, false, 1), "{driver:?}");
    }
}

#[test]
fn notimp_echoes_opcode_and_question_but_not_rd_or_cd() {
    let mut message = query(8, "www.example.com.", 1, Some(1232));
    message[2] |= 2 << 3; // STATUS, RD already set
    message[3] |= 0x10; // CD
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        let udp = udp_exchange(server, &message).unwrap();
        let mut stream = tcp_connect(server);
        tcp_send(&mut stream, &message);
        let tcp = tcp_receive(&mut stream).unwrap();
        for answer in [udp, tcp] {
            assert_eq!(&answer[2..4], &[0x80 | (2 << 3), 0x04], "{driver:?}");
            assert_eq!(&answer[4..12], &[0, 1, 0, 0, 0, 0, 0, 1]);
            assert_eq!(&answer[12..33], &message[12..33], "the question");
        }
    }
}

//--- EDNS and flags

#[test]
fn edns_version_1_is_badvers_with_version_0() {
    let mut message = base();
    message[11] = 1;
    message.extend_from_slice(&opt(1, 0x8000 | 0x0080));
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        let udp = udp_exchange(server, &message).unwrap();
        let mut stream = tcp_connect(server);
        tcp_send(&mut stream, &message);
        let tcp = tcp_receive(&mut stream).unwrap();
        for answer in [udp, tcp] {
            // BADVERS = 16: low bits 0 in the header, 1 in the OPT's TTL.
            assert_eq!(answer[3] & 0x0f, 0, "{driver:?}");
            assert_eq!(
                &answer[6..12],
                &[0, 0, 0, 0, 0, 1],
                "no records but the OPT"
            );
            let opt_at = answer.len() - 11;
            assert_eq!(
                &answer[opt_at..],
                &[0, 0, 41, 0x04, 0xd0, 1, 0, 0x80, 0, 0, 0],
                "{driver:?}: version 0, DO copied, other flags clear"
            );
        }
    }
}

#[test]
fn udp_size_below_512_counts_as_512() {
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        let at_512 = udp_exchange(server, &query(1, "mid.example.com.", 16, Some(512))).unwrap();
        let at_100 = udp_exchange(server, &query(1, "mid.example.com.", 16, Some(100))).unwrap();
        assert_eq!(at_100, at_512, "{driver:?}");
        assert!(summary(&at_100).2, "TC: mid does not fit 512");
    }
}

/// TC, Z, AD, AA and RA in a query are ignored and cleared; RD and CD are
/// copied; on the cache-hit path too (the second UDP query).
#[test]
fn flags_in_queries_are_ignored_and_cleared() {
    for driver in DRIVERS {
        let running = start(driver);
        let server = running.addr;
        for edns in [None, Some(1232)] {
            let mut message = query(9, "www.example.com.", 1, edns);
            message[2] |= 0x04 | 0x02; // AA, TC (RD already set)
            message[3] |= 0x80 | 0x40 | 0x20 | 0x10; // RA, Z, AD, CD
            let first = udp_exchange(server, &message).unwrap();
            let cached = udp_exchange(server, &message).unwrap();
            let mut stream = tcp_connect(server);
            tcp_send(&mut stream, &message);
            let tcp = tcp_receive(&mut stream).unwrap();
            for answer in [first, cached, tcp] {
                assert_eq!(&answer[2..4], &[0x85, 0x10], "{driver:?} {edns:?}");
                assert_eq!(summary(&answer), (9, 0, false, 1));
            }
        }
    }
}
