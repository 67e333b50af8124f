//! Fuzz target body for [`crate::respond`](fn@crate::respond), compiled by every build (the
//! rustls `msgs::fuzzing` pattern); `crates/fuzz/fuzz_targets/respond.rs`
//! calls it and the unit tests run it over the committed seed corpus. Not a
//! stable API.
//!
//! The body answers arbitrary bytes over UDP and TCP from a small fixed
//! catalog and checks what must hold for every query, whatever its bytes:
//! no panic; nothing sent for fewer than 12 octets or QR=1; otherwise the
//! answer parses completely (records, EDNS, no trailing bytes), echoes the
//! ID, opcode and question bytes, sets QR, never sets RD the query did not
//! set, carries an OPT only if the query had a valid one, and over UDP fits
//! the client's size (512 without EDNS) capped by our maximum.
//!
//! When the query carries a well-formed client cookie, the same holds for
//! [`crate::respond_with`] with the COOKIE option [`crate::cookie::check`]
//! makes for it, for that option added to the plain answer by
//! [`crate::append_option`], and for [`crate::bad_cookie`].

use std::net::{IpAddr, Ipv4Addr};
use std::sync::OnceLock;
use std::vec::Vec;

use tern_wire::name::NameBuf;
use tern_wire::parse::{Header, MessageView};
use tern_wire::types::{RClass, RType};

use crate::cookie::{self, CookieSecret};
use crate::respond::{ChaosIdentity, Options, Response, Transport, DEFAULT_UDP_SIZE};
use crate::{Catalog, ZoneBuilder};

/// The largest message (TCP's two-octet length prefix).
const MAX_MESSAGE: usize = 65535;

/// The UDP size limit without EDNS, and the smallest EDNS size honoured.
const CLASSIC_UDP_SIZE: usize = 512;

/// TXT records at `big.example.com.`: enough 200-octet strings to exceed
/// any UDP size up to 4096, so truncation is exercised.
const BIG_TXT_RECORDS: usize = 24;

//----------- catalog --------------------------------------------------------

/// The fixed catalog: `example.com.` as in `zones/example.com.zone`, plus a
/// DNAME, a CNAME loop and a large TXT RRset.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(build_catalog)
}

fn build_catalog() -> Catalog {
    let origin = NameBuf::from_text(b"example.com.", None).expect("a valid literal name");
    let name = |text: &str| -> NameBuf {
        NameBuf::from_text(text.as_bytes(), Some(origin.as_name())).expect("a valid literal name")
    };
    let names = |texts: &[&str]| -> Vec<u8> {
        texts
            .iter()
            .flat_map(|text| name(text).as_bytes().to_vec())
            .collect()
    };
    let mut soa = names(&["ns1", "hostmaster"]);
    for timer in [2026112101u32, 7200, 3600, 1209600, 300] {
        soa.extend_from_slice(&timer.to_be_bytes());
    }
    let mut mx = std::vec![0, 10];
    mx.extend_from_slice(&names(&["mail"]));
    let mut srv = std::vec![0, 10, 0, 60, 0x13, 0xc4];
    srv.extend_from_slice(&names(&["sip"]));
    let spf = b"\x0ev=spf1 mx -all".to_vec();
    let records: Vec<(&str, RType, Vec<u8>)> = std::vec![
        ("@", RType::SOA, soa),
        ("@", RType::NS, names(&["ns1"])),
        ("@", RType::NS, names(&["ns2"])),
        ("@", RType::MX, mx),
        ("@", RType::TXT, spf),
        ("ns1", RType::A, std::vec![192, 0, 2, 1]),
        (
            "ns1",
            RType::AAAA,
            [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1].to_vec()
        ),
        ("ns2", RType::A, std::vec![192, 0, 2, 2]),
        ("mail", RType::A, std::vec![192, 0, 2, 25]),
        ("www", RType::A, std::vec![192, 0, 2, 80]),
        ("web", RType::CNAME, names(&["www"])),
        ("loop1", RType::CNAME, names(&["loop2"])),
        ("loop2", RType::CNAME, names(&["loop1"])),
        ("_sip._udp", RType::SRV, srv),
        ("sip", RType::A, std::vec![192, 0, 2, 50]),
        ("*.users", RType::A, std::vec![192, 0, 2, 99]),
        ("lab", RType::NS, names(&["ns.lab"])),
        ("ns.lab", RType::A, std::vec![192, 0, 2, 53]),
        ("old", RType::DNAME, names(&["users"])),
    ];
    let mut zone = ZoneBuilder::new(origin.as_name());
    for (owner, rtype, rdata) in records {
        zone.insert(name(owner).as_name(), rtype, RClass::IN, 3600, &rdata)
            .expect("a valid fixed record");
    }
    for i in 0..BIG_TXT_RECORDS {
        let mut rdata = std::vec![200u8];
        rdata.extend(std::iter::repeat_n(b'a' + i as u8, 200));
        zone.insert(name("big").as_name(), RType::TXT, RClass::IN, 3600, &rdata)
            .expect("a valid fixed record");
    }
    Catalog::new([zone.finish().expect("the fixed zone builds")])
}

//----------- respond --------------------------------------------------------

/// Answers `data` over UDP and over TCP and checks the answers.
pub fn respond(data: &[u8]) {
    let options = Options {
        max_udp_size: DEFAULT_UDP_SIZE,
        chaos: Some(ChaosIdentity {
            version: Some("tern".into()),
            identity: Some("fuzz".into()),
        }),
        // Sent to fuzzed queries that ask for it: its room counts toward
        // the size limits `check` verifies.
        nsid: Some(crate::nsid::Nsid::new(b"fuzz-nsid").expect("a short identifier")),
    };
    let mut out = std::vec![0u8; MAX_MESSAGE];
    let cookie = MessageView::parse(data)
        .ok()
        .and_then(|message| message.edns().ok().flatten())
        .and_then(|edns| {
            let secret = CookieSecret::new([0x5a; 16]);
            let client = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));
            cookie::check(Some(&edns), &secret, client, 1_700_000_000)
                .reply_option()
                .copied()
        });
    for transport in [Transport::Udp, Transport::Tcp] {
        let response = crate::respond(catalog(), data, transport, &options, &mut out);
        check(data, transport, &options, response, &out);
        let Some(cookie) = cookie else {
            continue;
        };
        if let Response::Send(len) = response {
            let limit = answer_limit(data, transport, &options);
            if let Some(len) = crate::append_option(&mut out, len, limit, cookie.as_bytes()) {
                check(data, transport, &options, Response::Send(len), &out);
            }
        }
        let extra = cookie.as_bytes();
        let response = crate::respond_with(catalog(), data, transport, &options, extra, &mut out);
        check(data, transport, &options, response, &out);
        let query = tern_wire::query::Query::parse(data);
        let response = crate::bad_cookie(&query, &options, &cookie, &mut out);
        check(data, Transport::Udp, &options, response, &out);
    }
}

/// The size limit `check` holds an answer to, written out here rather
/// than taken from `respond`'s own `size_limit`: an oracle that shared the
/// code under test could not catch a mistake in it.
fn answer_limit(query: &[u8], transport: Transport, options: &Options) -> usize {
    let edns = MessageView::parse(query)
        .ok()
        .and_then(|q| q.edns().ok().flatten());
    match (transport, edns) {
        (Transport::Tcp, _) => MAX_MESSAGE,
        (Transport::Udp, None) => CLASSIC_UDP_SIZE,
        (Transport::Udp, Some(edns)) => usize::from(edns.udp_size)
            .max(CLASSIC_UDP_SIZE)
            .min(usize::from(options.max_udp_size).max(CLASSIC_UDP_SIZE)),
    }
}

/// The properties every answer has.
fn check(query: &[u8], transport: Transport, options: &Options, response: Response, out: &[u8]) {
    let query_header = Header::from_message(query);
    let Response::Send(len) = response else {
        return;
    };
    let query_header = query_header.expect("no answer to fewer than 12 octets");
    assert!(!query_header.qr(), "no answer to a response");
    let answer = &out[..len];
    let message = MessageView::parse(answer).expect("the answer parses");
    for record in message.records() {
        record.expect("every answer record parses");
    }
    let answer_edns = message
        .edns()
        .expect("the answer's EDNS is valid and nothing trails");
    let header = message.header();
    assert_eq!(header.id(), query_header.id(), "ID echoed");
    assert!(header.qr(), "QR set");
    assert_eq!(header.opcode(), query_header.opcode(), "opcode echoed");
    assert!(!header.rd() || query_header.rd(), "RD set only if asked");
    let parsed = MessageView::parse(query).ok();
    if let Some(question) = message.question() {
        let asked = parsed
            .and_then(|q| q.question())
            .expect("a question only if asked");
        assert_eq!(question.bytes, asked.bytes, "question echoed as received");
    }
    let query_edns = parsed.and_then(|q| q.edns().ok().flatten());
    if answer_edns.is_some() {
        assert!(query_edns.is_some(), "an OPT only if the query had one");
    }
    if transport == Transport::Udp {
        let limit = answer_limit(query, transport, options);
        assert!(
            len <= limit,
            "UDP answer of {len} octets over the limit {limit}"
        );
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn respond_seeds() {
        let seeds = tern_testkit::fuzz_seeds("respond");
        assert!(seeds.len() >= 5, "too few seeds");
        let mut answered = 0;
        for seed in &seeds {
            respond(seed);
            let mut out = std::vec![0u8; MAX_MESSAGE];
            let sent = crate::respond(
                catalog(),
                seed,
                Transport::Udp,
                &Options::default(),
                &mut out,
            );
            answered += usize::from(matches!(sent, Response::Send(_)));
        }
        assert!(answered >= 5, "the corpus holds answerable queries");
    }

    /// The cookie branches of the body: client cookies on every kind of
    /// query, malformed and duplicate ones, a server cookie, a truncated
    /// answer that leaves no room for `append_option`.
    #[test]
    fn respond_cookie_queries() {
        let question = b"\x03www\x07example\x03com\x00\x00\x01\x00\x01";
        let big = b"\x03big\x07example\x03com\x00\x00\x10\x00\x01";
        let cookie = |len: usize| {
            let mut option = std::vec![0, 10, 0, len as u8];
            option.extend((0..len).map(|i| i as u8));
            option
        };
        let query = |flags: [u8; 2], question: &[u8], version: u8, options: &[u8]| {
            let mut q = std::vec![0x12, 0x34, flags[0], flags[1], 0, 1, 0, 0, 0, 0, 0, 1];
            q.extend_from_slice(question);
            q.extend_from_slice(&[0, 0, 41, 0x02, 0x00, 0, version, 0x80, 0]);
            q.extend_from_slice(&(options.len() as u16).to_be_bytes());
            q.extend_from_slice(options);
            q
        };
        let mut duplicate = cookie(8);
        duplicate.extend_from_slice(&cookie(24));
        let mut answered_with_cookie = 0;
        for (flags, question, version, options) in [
            ([0x01, 0x10], &question[..], 0, cookie(8)),
            ([0x01, 0x10], &question[..], 0, cookie(24)),
            ([0x01, 0x10], &question[..], 0, cookie(40)),
            ([0x01, 0x10], &question[..], 0, cookie(9)),
            ([0x01, 0x10], &question[..], 0, duplicate.clone()),
            ([0x01, 0x10], &question[..], 1, cookie(8)),
            ([0x79, 0x10], &question[..], 0, cookie(8)),
            ([0x01, 0x10], &big[..], 0, cookie(8)),
        ] {
            let q = query(flags, question, version, &options);
            respond(&q);
            let mut out = std::vec![0u8; MAX_MESSAGE];
            let extra = cookie(24);
            if let Response::Send(len) = crate::respond_with(
                catalog(),
                &q,
                Transport::Udp,
                &Options::default(),
                &extra,
                &mut out,
            ) {
                answered_with_cookie += usize::from(out[..len].ends_with(&extra));
            }
        }
        // The client cookies of length 8, 24, 40, the duplicates, opcode
        // 15, the truncated TXT; not the malformed one nor BADVERS.
        assert_eq!(answered_with_cookie, 6);
        // A cookie-only query (no question).
        let mut q = std::vec![0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        q.extend_from_slice(&[0, 0, 41, 0x02, 0x00, 0, 0, 0, 0, 0, 12]);
        q.extend_from_slice(&cookie(8));
        respond(&q);
        let mut out = std::vec![0u8; MAX_MESSAGE];
        let extra = cookie(24);
        let sent = crate::respond_with(
            catalog(),
            &q,
            Transport::Udp,
            &Options::default(),
            &extra,
            &mut out,
        );
        assert_eq!(
            sent,
            Response::Send(12 + 11 + 28),
            "NOERROR, header and OPT"
        );
    }

    #[test]
    fn big_rrset_is_truncated_over_udp_within_512() {
        let query = b"\x00\x07\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\
            \x03big\x07example\x03com\x00\x00\x10\x00\x01";
        respond(query);
        let mut out = std::vec![0u8; MAX_MESSAGE];
        let Response::Send(len) = crate::respond(
            catalog(),
            query,
            Transport::Udp,
            &Options::default(),
            &mut out,
        ) else {
            panic!("answered");
        };
        assert!(len <= CLASSIC_UDP_SIZE);
        assert!(Header::from_message(&out[..len]).unwrap().tc());
    }
}
