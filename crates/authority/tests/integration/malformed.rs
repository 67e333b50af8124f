//! Hostile and unusual queries through `respond`, one named test per case
//! of docs/decisions/0005-malformed-and-edns.md: malformed names and
//! records (FORMERR with the question, or dropped when there is no
//! question to echo), opcodes other than QUERY, EDNS per RFC 6891 and RFC
//! 8906, header flags in queries, and the work bound whatever the counts
//! claim.

use std::time::{Duration, Instant};

use tern_authority::{Catalog, Options, Transport};
use tern_wire::types::RType;

use crate::support::*;

const ZONE: &str = r#"
$TTL 300
@    SOA ns1 host 1 3600 900 604800 60
     NS  ns1
ns1  A   192.0.2.1
www  A   192.0.2.80
"#;

/// Generous: the cases below take microseconds; a loop driven by a count
/// would take far longer than this on the worst message.
const WORK_BOUND: Duration = Duration::from_secs(2);

fn catalog() -> Catalog {
    let mut text = ZONE.to_string();
    // About 430 octets: more than a 100-octet EDNS size, less than 512.
    for i in 0..6 {
        text.push_str(&format!("big TXT \"{i:02} {}\"\n", "b".repeat(60)));
    }
    Catalog::new(vec![zone_text("example.", &text)])
}

/// `www.example. A` with ID 0x4242, no EDNS: header and question.
fn base() -> Vec<u8> {
    query("www.example.", RType::A, Ask::no_edns())
}

/// The query with `records` appended and the counts set.
fn with_records(an: u16, ns: u16, ar: u16, records: &[u8]) -> Vec<u8> {
    let mut q = base();
    q[6..8].copy_from_slice(&an.to_be_bytes());
    q[8..10].copy_from_slice(&ns.to_be_bytes());
    q[10..12].copy_from_slice(&ar.to_be_bytes());
    q.extend_from_slice(records);
    q
}

/// An OPT record: root owner, UDP size, version, flags, options.
fn opt(size: u16, version: u8, flags: u16, options: &[u8]) -> Vec<u8> {
    let mut r = vec![0, 0, 41];
    r.extend_from_slice(&size.to_be_bytes());
    r.extend_from_slice(&[0, version]);
    r.extend_from_slice(&flags.to_be_bytes());
    r.extend_from_slice(&(options.len() as u16).to_be_bytes());
    r.extend_from_slice(options);
    r
}

/// Type A, class IN, TTL 300, RDLENGTH 4, 192.0.2.1: what follows an owner.
const A_TAIL: [u8; 14] = [0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 1];

/// Where the first record starts in `base()`.
fn after_question() -> u16 {
    base().len() as u16
}

fn answer(bytes: &[u8]) -> Option<Reply> {
    send(&catalog(), bytes, Transport::Udp, &Options::default())
}

/// FORMERR with the question echoed and no OPT, over UDP and TCP.
fn assert_formerr_with_question(bytes: &[u8]) {
    let catalog = catalog();
    for transport in [Transport::Udp, Transport::Tcp] {
        let r = send(&catalog, bytes, transport, &Options::default()).expect("answered");
        assert_eq!(r.rcode, 1, "{transport:?}");
        assert_eq!(&r.raw[4..12], &[0, 1, 0, 0, 0, 0, 0, 0], "{transport:?}");
        assert_eq!(
            &r.raw[12..],
            &base()[12..],
            "{transport:?}: question echoed"
        );
        assert!(r.opt.is_none());
    }
}

fn assert_dropped(bytes: &[u8]) {
    let catalog = catalog();
    for transport in [Transport::Udp, Transport::Tcp] {
        assert!(
            send(&catalog, bytes, transport, &Options::default()).is_none(),
            "{transport:?}"
        );
    }
}

fn pointer(offset: u16) -> [u8; 2] {
    (0xc000 | offset).to_be_bytes()
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

/// A question made of `name`, type A, class IN.
fn with_question_name(name: &[u8]) -> Vec<u8> {
    let mut q = base()[..12].to_vec();
    q.extend_from_slice(name);
    q.extend_from_slice(&[0, 1, 0, 1]);
    q
}

//--- Dropped: no question to echo

#[test]
fn question_with_compression_pointer_is_dropped() {
    assert_dropped(&with_question_name(&pointer(12)));
}

#[test]
fn question_label_over_63_is_dropped() {
    let mut name = vec![64];
    name.extend_from_slice(&[b'a'; 64]);
    name.push(0);
    assert_dropped(&with_question_name(&name));
}

#[test]
fn question_name_over_255_is_dropped() {
    assert_dropped(&with_question_name(&long_name()));
}

//--- FORMERR with the question: the records after it are malformed

#[test]
fn record_compression_loop_is_formerr() {
    let mut record = pointer(after_question()).to_vec();
    record.extend_from_slice(&A_TAIL);
    assert_formerr_with_question(&with_records(0, 0, 1, &record));
}

#[test]
fn record_forward_pointer_is_formerr() {
    // The first owner points at the second record's owner, further on.
    let second = after_question() + 2 + A_TAIL.len() as u16;
    let mut records = pointer(second).to_vec();
    records.extend_from_slice(&A_TAIL);
    records.extend_from_slice(b"\x03www\x07example\x00");
    records.extend_from_slice(&A_TAIL);
    assert_formerr_with_question(&with_records(0, 0, 2, &records));
}

#[test]
fn record_pointer_past_the_end_is_formerr() {
    let mut record = pointer(0x3fff).to_vec();
    record.extend_from_slice(&A_TAIL);
    assert_formerr_with_question(&with_records(0, 0, 1, &record));
}

#[test]
fn record_label_over_63_is_formerr() {
    let mut record = vec![64];
    record.extend_from_slice(&[b'a'; 64]);
    record.push(0);
    record.extend_from_slice(&A_TAIL);
    assert_formerr_with_question(&with_records(0, 0, 1, &record));
}

#[test]
fn record_name_over_255_is_formerr() {
    let mut record = long_name();
    record.extend_from_slice(&A_TAIL);
    assert_formerr_with_question(&with_records(0, 0, 1, &record));
    // The same length reached through a pointer to a 250-octet name.
    let mut records = Vec::new();
    let first = after_question();
    for _ in 0..5 {
        records.push(49);
        records.extend_from_slice(&[b'b'; 49]);
    }
    records.push(0); // 251 octets
    records.extend_from_slice(&A_TAIL);
    records.extend_from_slice(b"\x05extra");
    records.extend_from_slice(&pointer(first));
    records.extend_from_slice(&A_TAIL);
    assert_formerr_with_question(&with_records(0, 0, 2, &records));
}

#[test]
fn counts_past_the_end_are_formerr_at_once() {
    for (an, ns, ar) in [
        (65535, 0, 0),
        (0, 65535, 0),
        (0, 0, 65535),
        (65535, 65535, 65535),
    ] {
        let started = Instant::now();
        assert_formerr_with_question(&with_records(an, ns, ar, &[]));
        assert!(started.elapsed() < WORK_BOUND, "{an} {ns} {ar}");
    }
}

#[test]
fn rdlength_past_the_end_is_formerr() {
    let mut record = vec![0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 100];
    record.extend_from_slice(&[1, 2, 3, 4]);
    assert_formerr_with_question(&with_records(0, 0, 1, &record));
}

#[test]
fn trailing_garbage_is_formerr() {
    assert_formerr_with_question(&with_records(
        0,
        0,
        1,
        &[opt(1232, 0, 0, &[]), vec![1, 2, 3]].concat(),
    ));
}

#[test]
fn two_opt_records_are_formerr() {
    let opt = opt(1232, 0, 0, &[]);
    assert_formerr_with_question(&with_records(0, 0, 2, &[opt.clone(), opt].concat()));
}

#[test]
fn opt_outside_the_additional_section_is_formerr() {
    let opt = opt(1232, 0, 0, &[]);
    assert_formerr_with_question(&with_records(1, 0, 0, &opt));
    assert_formerr_with_question(&with_records(0, 1, 0, &opt));
}

#[test]
fn opt_with_a_non_root_owner_is_formerr() {
    let mut record = b"\x03www\x07example\x00".to_vec();
    record.extend_from_slice(&opt(1232, 0, 0, &[])[1..]);
    assert_formerr_with_question(&with_records(0, 0, 1, &record));
}

#[test]
fn malformed_option_is_formerr() {
    // An option whose length runs past the OPT's RDATA.
    let opt = opt(1232, 0, 0, &[0, 100, 0, 9, 1]);
    assert_formerr_with_question(&with_records(0, 0, 1, &opt));
}

/// The largest message (65535 octets over TCP) filled with small records
/// whose owners are pointers, and counts claiming more: bounded work.
#[test]
fn largest_message_of_records_is_bounded() {
    let mut records = Vec::new();
    let first = after_question();
    while base().len() + records.len() + 2 + A_TAIL.len() <= 65535 {
        records.extend_from_slice(&pointer(first.min(12)));
        records.extend_from_slice(&A_TAIL);
    }
    let catalog = catalog();
    let q = with_records(0, 0, 65535, &records);
    let started = Instant::now();
    for _ in 0..10 {
        let r = send(&catalog, &q, Transport::Tcp, &Options::default()).expect("answered");
        assert_eq!(r.rcode, 1);
    }
    assert!(started.elapsed() < WORK_BOUND, "{:?}", started.elapsed());
}

//--- Header-level

#[test]
fn short_messages_and_responses_are_dropped() {
    assert_dropped(&base()[..11]);
    assert_dropped(&[]);
    let mut response = base();
    response[2] |= 0x80;
    assert_dropped(&response);
}

#[test]
fn qdcount_zero_and_two_are_formerr_header_only() {
    let mut zero = base()[..12].to_vec();
    zero[5] = 0;
    let mut two = base();
    two[5] = 2;
    two.extend_from_slice(&base()[12..]);
    for q in [zero, two] {
        let r = answer(&q).expect("answered");
        assert_eq!((r.rcode, r.raw.len()), (1, 12));
        assert_eq!(r.raw[2], 0x80, "QR, opcode QUERY");
    }
}

//--- Opcodes

#[test]
fn unknown_opcode_bare_header_is_notimp_with_only_qr() {
    // genreport `opcodeflg`: opcode 15, QDCOUNT 0, TC RD RA Z AD CD AA set.
    let q = [0x12, 0x34, (15 << 3) | 0x07, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0];
    let catalog = catalog();
    for transport in [Transport::Udp, Transport::Tcp] {
        let r = send(&catalog, &q, transport, &Options::default()).expect("answered");
        assert_eq!(
            r.raw,
            [0x12, 0x34, 0x80 | (15 << 3), 0x04, 0, 0, 0, 0, 0, 0, 0, 0],
            "{transport:?}"
        );
    }
}

#[test]
fn notimp_echoes_question_and_opt_but_no_flags() {
    let mut q = query("www.example.", RType::A, Ask::default());
    q[2] = (5 << 3) | 0x03; // UPDATE, TC, RD
    q[3] = 0x70; // Z, AD, CD
    let r = answer(&q).expect("answered");
    assert_eq!(&r.raw[2..4], &[0x80 | (5 << 3), 0x04]);
    assert_eq!(&r.raw[12..29], &q[12..29]);
    assert_eq!(r.opt, Some((1232, 0, false)));
    // NOTIFY too, until transfers exist.
    let mut notify = base();
    notify[2] = 4 << 3;
    assert_eq!(answer(&notify).expect("answered").rcode, 4);
}

//--- EDNS (RFC 6891, RFC 8906)

#[test]
fn edns_version_1_is_badvers_with_version_0_and_no_records() {
    for (flags, dnssec_ok) in [(0u16, false), (0x8000, true)] {
        let q = with_records(0, 0, 1, &opt(4096, 1, flags, &[0, 100, 0, 0]));
        let r = answer(&q).expect("answered");
        assert_eq!(r.rcode, 16, "BADVERS");
        assert!(r.answer.is_empty() && r.authority.is_empty());
        assert_eq!(r.opt, Some((1232, 0, dnssec_ok)), "version 0, DO copied");
        assert!(!r.raw.ends_with(&[0, 100, 0, 0]), "option not echoed");
    }
}

#[test]
fn unknown_options_and_flags_are_ignored_not_echoed() {
    let options = [
        &[0, 100, 0, 0][..],                    // unknown
        &[0, 3, 0, 0],                          // NSID
        &[0, 8, 0, 4, 0, 1, 0, 0],              // ECS 0.0.0.0/0
        &[0, 9, 0, 0],                          // EXPIRE
        &[0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8], // COOKIE (client)
    ]
    .concat();
    let q = with_records(0, 0, 1, &opt(4096, 0, 0x4080, &options));
    let r = answer(&q).expect("answered");
    assert_eq!((r.rcode, r.answer.len()), (0, 1));
    let opt_at = r.raw.len() - 11;
    assert_eq!(
        &r.raw[opt_at..],
        &opt(1232, 0, 0, &[])[..],
        "bare OPT, flags clear"
    );
}

#[test]
fn do_is_copied() {
    let q = with_records(0, 0, 1, &opt(4096, 0, 0x8000, &[]));
    assert_eq!(answer(&q).expect("answered").opt, Some((1232, 0, true)));
}

#[test]
fn udp_size_below_512_counts_as_512() {
    let catalog = catalog();
    for size in [0, 1, 100, 511] {
        let how = Ask {
            edns: Some((size, false, 0)),
            ..Ask::default()
        };
        let r = ask(&catalog, "big.example.", RType::TXT, how);
        assert!(!r.tc, "size {size}");
        assert_eq!(r.answer.len(), 6, "size {size}");
        assert!(r.raw.len() <= 512 && r.raw.len() > 400);
    }
}

//--- Flags in queries

#[test]
fn tc_z_ad_aa_ra_in_queries_are_ignored_and_cleared() {
    let catalog = catalog();
    for edns in [None, Some((1232, false, 0))] {
        let mut q = query(
            "www.example.",
            RType::A,
            Ask {
                edns,
                ..Ask::default()
            },
        );
        q[2] |= 0x04 | 0x02; // AA, TC
        q[3] |= 0x80 | 0x40 | 0x20; // RA, Z, AD
        for transport in [Transport::Udp, Transport::Tcp] {
            let r = send(&catalog, &q, transport, &Options::default()).expect("answered");
            assert_eq!(
                &r.raw[2..4],
                &[0x84, 0x00],
                "{edns:?} {transport:?}: QR AA only"
            );
            assert_eq!(r.answer, ["www.example. 300 a 192.0.2.80"]);
        }
    }
}

#[test]
fn rd_and_cd_are_copied() {
    let mut q = query(
        "www.example.",
        RType::A,
        Ask {
            rd: true,
            ..Ask::default()
        },
    );
    q[3] |= 0x10;
    let r = answer(&q).expect("answered");
    assert_eq!(&r.raw[2..4], &[0x85, 0x10]);
}
