//! DNS cookies in answers: `respond_with` adds the COOKIE option to every
//! answer that should carry one and leaves the rest of the answer as
//! `respond` writes it; `append_option` does the same to an answer already
//! written; `bad_cookie` writes BADCOOKIE as BIND 9.18 does; malformed
//! COOKIE options get FORMERR with the question and an empty OPT, whatever
//! the opcode or EDNS version (BIND). Each answer is compared byte for
//! byte. Decisions: `docs/decisions/0006-dns-cookies.md`.

use std::net::{IpAddr, Ipv4Addr};

use tern_authority::cookie::{self, CookieCheck, CookieOption, CookieSecret};
use tern_authority::{
    append_option, bad_cookie, respond, respond_with, ChaosIdentity, Options, Response, Transport,
};
use tern_wire::parse::{Header, MessageView};
use tern_wire::query::Query;
use tern_wire::types::RType;

use crate::support::{big_catalog, Ask};

const CLIENT_COOKIE: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];
const NOW: u32 = 1_700_000_000;
const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));

fn options() -> Options {
    Options {
        chaos: Some(ChaosIdentity {
            version: Some("tern".into()),
            identity: None,
        }),
        ..Options::default()
    }
}

fn secret() -> CookieSecret {
    CookieSecret::new([0x5a; 16])
}

/// A COOKIE option with `value`.
fn cookie_option(value: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0, 10];
    bytes.extend_from_slice(&(value.len() as u16).to_be_bytes());
    bytes.extend_from_slice(value);
    bytes
}

/// A query with ID 0x4242, RD and CD, and an OPT (size 1232 unless
/// `size`, DO, `version`) holding `options`.
fn query(qname: &str, qtype: RType, opcode: u8, version: u8, options: &[u8]) -> Vec<u8> {
    query_sized(qname, qtype, opcode, version, 1232, options)
}

fn query_sized(
    qname: &str,
    qtype: RType,
    opcode: u8,
    version: u8,
    size: u16,
    options: &[u8],
) -> Vec<u8> {
    let mut q = crate::support::query(
        qname,
        qtype,
        Ask {
            rd: true,
            edns: Some((size, true, version)),
            ..Ask::default()
        },
    );
    q[2] |= opcode << 3;
    q[3] |= 0x10; // CD
    let rdlength = q.len() - 2;
    q[rdlength..].copy_from_slice(&(options.len() as u16).to_be_bytes());
    q.extend_from_slice(options);
    q
}

/// The class CH variant of `query`.
fn chaos_query(options: &[u8]) -> Vec<u8> {
    let mut q = query("version.bind.", RType::TXT, 0, 0, options);
    let class_at = 12 + 14 + 2;
    q[class_at..class_at + 2].copy_from_slice(&[0, 3]);
    q
}

fn run(query: &[u8], transport: Transport, extra: &[u8]) -> Option<Vec<u8>> {
    let mut out = vec![0u8; 65535];
    match respond_with(
        &big_catalog(),
        query,
        transport,
        &options(),
        extra,
        &mut out,
    ) {
        Response::Send(len) => Some(out[..len].to_vec()),
        Response::Drop => None,
    }
}

fn plain(query: &[u8], transport: Transport) -> Option<Vec<u8>> {
    let mut out = vec![0u8; 65535];
    match respond(&big_catalog(), query, transport, &options(), &mut out) {
        Response::Send(len) => Some(out[..len].to_vec()),
        Response::Drop => None,
    }
}

/// The OPT record of an answer: (offset, its RDATA), checking the answer
/// parses completely and the OPT is the last record.
fn opt_of(answer: &[u8]) -> Option<(usize, Vec<u8>)> {
    let view = MessageView::parse(answer).expect("answer parses");
    view.edns().expect("EDNS reads and nothing trails");
    let mut found = None;
    for record in view.records() {
        let record = record.expect("record parses");
        let last_end = record.rdata_offset + record.rdata.len();
        if record.rtype == RType::OPT {
            found = Some((record.rdata_offset - 11, record.rdata.to_vec()));
            assert_eq!(last_end, answer.len(), "the OPT is last");
        }
    }
    found
}

/// `answer` with `option` added to the end of its OPT.
fn with_option(answer: &[u8], option: &[u8]) -> Vec<u8> {
    let (start, rdata) = opt_of(answer).expect("an OPT");
    let mut expected = answer.to_vec();
    let rdlength = (rdata.len() + option.len()) as u16;
    expected[start + 9..start + 11].copy_from_slice(&rdlength.to_be_bytes());
    expected.extend_from_slice(option);
    expected
}

/// The option a client sending only its cookie gets.
fn fresh_option() -> CookieOption {
    let options = cookie_option(&CLIENT_COOKIE);
    let q = query("www.example.", RType::A, 0, 0, &options);
    let view = MessageView::parse(&q).unwrap();
    let edns = view.edns().unwrap();
    let result = cookie::check(edns.as_ref(), &secret(), CLIENT, NOW);
    assert!(matches!(result, CookieCheck::ClientOnly(_)), "{result:?}");
    *result.reply_option().unwrap()
}

#[test]
fn answers_carry_the_cookie_and_are_otherwise_unchanged() {
    let reply = fresh_option();
    let extra = reply.as_bytes();
    let client = cookie_option(&CLIENT_COOKIE);
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("answer", query("www.example.", RType::A, 0, 0, &client), 0),
        ("nodata", query("www.example.", RType::MX, 0, 0, &client), 0),
        (
            "nxdomain",
            query("nope.example.", RType::A, 0, 0, &client),
            3,
        ),
        ("refused", query("www.other.", RType::A, 0, 0, &client), 5),
        (
            "axfr over udp",
            query("example.", RType::AXFR, 0, 0, &client),
            4,
        ),
        ("class CH", chaos_query(&client), 0),
        (
            "opcode 15",
            query("www.example.", RType::A, 15, 0, &client),
            4,
        ),
        (
            "opcode NOTIFY",
            query("example.", RType::SOA, 4, 0, &client),
            4,
        ),
    ];
    for (name, q, rcode) in cases {
        for transport in [Transport::Udp, Transport::Tcp] {
            let before = plain(&q, transport).expect("answered");
            let after = run(&q, transport, extra).expect("answered");
            assert_eq!(after, with_option(&before, extra), "{name} {transport:?}");
            let header = Header::from_message(&after).unwrap();
            // AXFR over TCP is REFUSED.
            let rcode = if name == "axfr over udp" && transport == Transport::Tcp {
                5
            } else {
                rcode
            };
            assert_eq!(
                u16::from(header.rcode_bits()),
                rcode,
                "{name} {transport:?}"
            );
            let (_, rdata) = opt_of(&after).unwrap();
            assert_eq!(
                rdata[rdata.len() - 28..],
                extra[..],
                "{name}: the cookie is last"
            );
            if name == "refused" {
                // EDE 20 "Not Authoritative" first, then the cookie.
                assert_eq!(rdata[..6], [0, 15, 0, 2, 0, 20]);
            }
        }
    }
}

#[test]
fn badvers_and_answers_without_opt_carry_no_cookie() {
    let extra = fresh_option();
    let client = cookie_option(&CLIENT_COOKIE);
    let badvers = query("www.example.", RType::A, 0, 1, &client);
    let answer = run(&badvers, Transport::Udp, extra.as_bytes()).unwrap();
    assert_eq!(Some(answer.clone()), plain(&badvers, Transport::Udp));
    assert_eq!(opt_of(&answer).unwrap().1, Vec::<u8>::new());
    // No OPT in the query: no OPT, so no option.
    let no_edns = crate::support::query("www.example.", RType::A, Ask::no_edns());
    let answer = run(&no_edns, Transport::Udp, extra.as_bytes()).unwrap();
    assert_eq!(Some(answer.clone()), plain(&no_edns, Transport::Udp));
    assert!(opt_of(&answer).is_none());
}

#[test]
fn room_is_kept_for_the_cookie_when_truncating() {
    let extra = fresh_option();
    let client = cookie_option(&CLIENT_COOKIE);
    for size in [512u16, 700, 1232] {
        let q = query_sized("big.example.", RType::TXT, 0, 0, size, &client);
        let answer = run(&q, Transport::Udp, extra.as_bytes()).unwrap();
        assert!(
            answer.len() <= usize::from(size),
            "{size}: {}",
            answer.len()
        );
        assert!(Header::from_message(&answer).unwrap().tc(), "{size}: TC");
        assert_eq!(opt_of(&answer).unwrap().1, extra.as_bytes());
        // Over TCP all of it, and the cookie.
        let answer = run(&q, Transport::Tcp, extra.as_bytes()).unwrap();
        assert!(!Header::from_message(&answer).unwrap().tc());
        assert_eq!(
            answer,
            with_option(&plain(&q, Transport::Tcp).unwrap(), extra.as_bytes())
        );
    }
}

/// FORMERR, RD and CD copied for QUERY, the question, an OPT without
/// options (DO copied): what BIND 9.18 sends for a bad COOKIE length.
fn assert_formerr_with_empty_opt(q: &[u8], opcode: u8) {
    for transport in [Transport::Udp, Transport::Tcp] {
        for extra in [&[][..], fresh_option().as_bytes()] {
            let answer = run(q, transport, extra).expect("answered");
            let question_end = 12 + 13 + 4;
            let flags = if opcode == 0 { 0x01 } else { 0 };
            let mut expected = vec![
                0x42,
                0x42,
                0x80 | opcode << 3 | flags,
                if opcode == 0 { 0x11 } else { 0x01 },
            ];
            expected.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 1]);
            expected.extend_from_slice(&q[12..question_end]);
            expected.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0]);
            assert_eq!(answer, expected, "{transport:?}");
        }
    }
}

#[test]
fn malformed_cookie_lengths_get_formerr_with_an_empty_opt() {
    for len in [0usize, 1, 7, 9, 15, 41, 48] {
        let value: Vec<u8> = (0..len as u8).collect();
        let q = query("www.example.", RType::A, 0, 0, &cookie_option(&value));
        assert_formerr_with_empty_opt(&q, 0);
        assert_eq!(plain(&q, Transport::Udp), run(&q, Transport::Udp, &[]));
    }
}

#[test]
fn one_malformed_cookie_among_several_gets_formerr() {
    let mut options = cookie_option(&CLIENT_COOKIE);
    options.extend_from_slice(&cookie_option(&[9; 7]));
    assert_formerr_with_empty_opt(&query("www.example.", RType::A, 0, 0, &options), 0);
}

#[test]
fn several_valid_cookies_are_answered_with_the_first() {
    let mut options = cookie_option(&CLIENT_COOKIE);
    options.extend_from_slice(&cookie_option(&[9; 8]));
    let q = query("www.example.", RType::A, 0, 0, &options);
    let view = MessageView::parse(&q).unwrap();
    let result = cookie::check(view.edns().unwrap().as_ref(), &secret(), CLIENT, NOW);
    assert_eq!(result, CookieCheck::ClientOnly(fresh_option()));
    let answer = run(&q, Transport::Udp, fresh_option().as_bytes()).unwrap();
    assert_eq!(Header::from_message(&answer).unwrap().rcode_bits(), 0);
}

#[test]
fn malformed_cookie_beats_badvers_and_notimp() {
    let bad = cookie_option(&[1; 9]);
    assert_formerr_with_empty_opt(&query("www.example.", RType::A, 0, 1, &bad), 0);
    assert_formerr_with_empty_opt(&query("www.example.", RType::A, 15, 0, &bad), 15);
}

#[test]
fn a_cookie_only_query_is_answered_noerror_with_the_cookie() {
    let extra = fresh_option();
    let client = cookie_option(&CLIENT_COOKIE);
    // Header and OPT, no question (RFC 7873 section 5.4).
    let mut q = vec![0x42, 0x42, 0x01, 0x10, 0, 0, 0, 0, 0, 0, 0, 1];
    q.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0]);
    q.extend_from_slice(&(client.len() as u16).to_be_bytes());
    q.extend_from_slice(&client);
    for transport in [Transport::Udp, Transport::Tcp] {
        let answer = run(&q, transport, extra.as_bytes()).unwrap();
        let mut expected = vec![0x42, 0x42, 0x81, 0x10, 0, 0, 0, 0, 0, 0, 0, 1];
        expected.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 28]);
        expected.extend_from_slice(extra.as_bytes());
        assert_eq!(answer, expected);
        // Without a cookie to give, it stays a FORMERR (RFC 9619).
        let answer = run(&q, transport, &[]).unwrap();
        assert_eq!(Header::from_message(&answer).unwrap().rcode_bits(), 1);
        assert_eq!(Some(answer), plain(&q, transport));
    }
}

#[test]
fn append_option_equals_respond_with() {
    let extra = fresh_option();
    let client = cookie_option(&CLIENT_COOKIE);
    for (qname, qtype) in [
        ("www.example.", RType::A),
        ("nope.example.", RType::A),
        ("example.", RType::NS),
    ] {
        let q = query(qname, qtype, 0, 0, &client);
        let before = plain(&q, Transport::Udp).unwrap();
        let mut out = vec![0u8; 65535];
        out[..before.len()].copy_from_slice(&before);
        let len = append_option(&mut out, before.len(), 1232, extra.as_bytes()).expect("appended");
        assert_eq!(
            out[..len],
            run(&q, Transport::Udp, extra.as_bytes()).unwrap()[..],
            "{qname}"
        );
        // The OPT now holds an option: a second append is refused.
        let again = append_option(&mut out, len, 1232, extra.as_bytes());
        assert_eq!(again, None, "the OPT is no longer empty");
    }
}

#[test]
fn append_option_refuses_what_it_cannot_extend() {
    let extra = fresh_option();
    let client = cookie_option(&CLIENT_COOKIE);
    let refuse = |answer: &[u8], limit: usize| {
        let mut out = vec![0u8; 4096];
        out[..answer.len()].copy_from_slice(answer);
        let result = append_option(&mut out, answer.len(), limit, extra.as_bytes());
        assert_eq!(result, None);
        assert_eq!(out[..answer.len()], answer[..], "left as it was");
        assert!(
            out[answer.len()..].iter().all(|&b| b == 0),
            "nothing written past it"
        );
    };
    // No OPT.
    let no_edns = crate::support::query("www.example.", RType::A, Ask::no_edns());
    refuse(&plain(&no_edns, Transport::Udp).unwrap(), 1232);
    // An OPT with an option already (REFUSED with EDE).
    refuse(
        &plain(
            &query("www.other.", RType::A, 0, 0, &client),
            Transport::Udp,
        )
        .unwrap(),
        1232,
    );
    // Over the limit.
    let answer = plain(
        &query("www.example.", RType::A, 0, 0, &client),
        Transport::Udp,
    )
    .unwrap();
    refuse(&answer, answer.len() + 27);
    // ARCOUNT 0 though the bytes end like an empty OPT.
    let mut zeroed = answer.clone();
    zeroed[10..12].copy_from_slice(&[0, 0]);
    refuse(&zeroed, 1232);
    // Too short to hold a header and an OPT, or a length past the buffer.
    refuse(&answer[..20], 1232);
    let mut out = vec![0u8; 100];
    assert_eq!(append_option(&mut out, 200, 1232, extra.as_bytes()), None);
    assert_eq!(
        append_option(&mut [0u8; 4], 4, 1232, extra.as_bytes()),
        None
    );
    // Exactly at the limit: fits.
    let mut out = vec![0u8; 4096];
    out[..answer.len()].copy_from_slice(&answer);
    assert_eq!(
        append_option(&mut out, answer.len(), answer.len() + 28, extra.as_bytes()),
        Some(answer.len() + 28)
    );
}

#[test]
fn bad_cookie_answer_as_bind_writes_it() {
    let extra = fresh_option();
    let mut value = CLIENT_COOKIE.to_vec();
    value.extend_from_slice(&[0xee; 16]); // a server cookie that is not ours
    let q = query("www.example.", RType::A, 0, 0, &cookie_option(&value));
    let view = MessageView::parse(&q).unwrap();
    let result = cookie::check(view.edns().unwrap().as_ref(), &secret(), CLIENT, NOW);
    assert!(matches!(result, CookieCheck::Invalid(_)));
    assert_eq!(result.reply_option(), Some(&extra), "the same fresh cookie");
    let mut out = vec![0u8; 65535];
    let Response::Send(len) = bad_cookie(&Query::parse(&q), &options(), &extra, &mut out) else {
        panic!("answered");
    };
    // ID, QR RD, CD and rcode 23 & 15 = 7; one question, one additional.
    let mut expected = vec![0x42, 0x42, 0x81, 0x17, 0, 1, 0, 0, 0, 0, 0, 1];
    expected.extend_from_slice(&q[12..12 + 13 + 4]);
    // OPT: size 1232, extended rcode 23 >> 4 = 1, version 0, DO copied.
    expected.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 1, 0, 0x80, 0, 0, 28]);
    expected.extend_from_slice(extra.as_bytes());
    assert_eq!(out[..len], expected[..]);
    assert!(opt_of(&out[..len]).is_some());
}

#[test]
fn bad_cookie_is_only_for_queries_with_a_cookie() {
    let extra = fresh_option();
    let client = cookie_option(&CLIENT_COOKIE);
    let mut response = query("www.example.", RType::A, 0, 0, &client);
    response[2] |= 0x80;
    let mut qdcount_0 = vec![0x42, 0x42, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 1];
    qdcount_0.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 12]);
    qdcount_0.extend_from_slice(&client);
    for (name, q) in [
        ("no cookie", query("www.example.", RType::A, 0, 0, &[])),
        (
            "malformed cookie",
            query("www.example.", RType::A, 0, 0, &cookie_option(&[1; 9])),
        ),
        (
            "no OPT",
            crate::support::query("www.example.", RType::A, Ask::no_edns()),
        ),
        (
            "EDNS version 1",
            query("www.example.", RType::A, 0, 1, &client),
        ),
        ("opcode 15", query("www.example.", RType::A, 15, 0, &client)),
        ("a response", response),
        ("no question", qdcount_0),
        ("short", vec![0x42; 11]),
    ] {
        let mut out = vec![0u8; 65535];
        assert_eq!(
            bad_cookie(&Query::parse(&q), &options(), &extra, &mut out),
            Response::Drop,
            "{name}"
        );
    }
}

#[test]
fn a_valid_cookie_round_trips_through_an_answer() {
    // First contact, then the client echoes what the answer carried.
    let first = fresh_option();
    let echoed = cookie_option(&first.as_bytes()[4..]);
    let q = query("www.example.", RType::A, 0, 0, &echoed);
    let view = MessageView::parse(&q).unwrap();
    let result = cookie::check(view.edns().unwrap().as_ref(), &secret(), CLIENT, NOW + 60);
    assert!(result.is_verified());
    assert_eq!(
        result.reply_option(),
        Some(&first),
        "young: echoed as it came"
    );
    let answer = run(
        &q,
        Transport::Udp,
        result.reply_option().unwrap().as_bytes(),
    )
    .unwrap();
    assert_eq!(opt_of(&answer).unwrap().1, first.as_bytes());
}
