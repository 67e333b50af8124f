//! Fuzz target body for the forwarder's upstream-answer path: validation
//! ([`crate::forward`]'s `validate` and its cookie check), caching, and
//! the answers written for waiting clients and for later cache hits.
//! Compiled by every build (the rustls `msgs::fuzzing` pattern);
//! `crates/fuzz/fuzz_targets/forward_answer.rs` calls it and the unit
//! tests run it over the committed seed corpus. Not a stable API.
//!
//! The input is `[selector, answer without its ID and question...]`: the
//! selector picks the question's type and whether the client used EDNS;
//! the rest is an upstream answer's flags, counts and records. The body
//! asks the question through a [`Forwarder`], rebuilds the answer around
//! the ID and question the forwarder actually sent (its ID and 0x20 case
//! are random), so that the fuzzer reaches validation rather than the ID
//! check, and feeds it back; if the answer is truncated, it is fed again as
//! the TCP attempt's answer. Then the same question from a second client,
//! which a cached answer serves.
//!
//! What must hold, whatever the bytes: no panic; every answer to a client
//! parses completely (records, EDNS, no trailing octets), echoes that
//! client's ID and question bytes, has QR and RA set, has an OPT only if
//! the client sent one, and fits the client's UDP size (512 octets without
//! EDNS); an answer from the cache has the same rcode and records, in
//! number, as the first client's.

use std::net::SocketAddr;
use std::vec::Vec;

use tern_wire::parse::{MessageView, HEADER_LEN};
use tern_wire::types::RType;

use crate::forward::{Action, Client, ForwardConfig, Forwarder};

/// The question's types, picked by the selector's low four bits.
const TYPES: [RType; 16] = [
    RType::A,
    RType::AAAA,
    RType::CNAME,
    RType::DNAME,
    RType::MX,
    RType::SRV,
    RType::TXT,
    RType::NS,
    RType::SOA,
    RType::ANY,
    RType::PTR,
    RType::NAPTR,
    RType::HTTPS,
    RType::RRSIG,
    RType::MB,
    RType::MINFO,
];

/// The question's name.
const NAME: &[u8] = b"\x03www\x07example\x03com\x00";

/// A client query's header and question.
const HEAD_LEN: usize = HEADER_LEN + NAME.len() + 4;

/// The clients' EDNS UDP size, when the selector gives them EDNS.
const CLIENT_UDP_SIZE: u16 = 1232;

/// The UDP size without EDNS.
const CLASSIC_UDP_SIZE: usize = 512;

/// The size advertised to clients by the forwarder.
const SERVER_UDP_SIZE: u16 = 1232;

/// The clock, in milliseconds: the answer arrives 5 ms after the query,
/// the second client 1 s later.
const START: u64 = 1_000_000;

/// A client's query for the question, with an OPT if `edns`.
fn client_query(id: u16, qtype: RType, edns: bool) -> Vec<u8> {
    let mut query = id.to_be_bytes().to_vec();
    query.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, u8::from(edns)]);
    query.extend_from_slice(NAME);
    query.extend_from_slice(&qtype.0.to_be_bytes());
    query.extend_from_slice(&[0, 1]);
    if edns {
        query.extend_from_slice(&[0, 0, 41]);
        query.extend_from_slice(&CLIENT_UDP_SIZE.to_be_bytes());
        query.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    }
    query
}

/// The answer to the upstream query `sent`: its ID and question, then
/// `rest` (flags, counts and records).
fn upstream_answer(sent: &[u8], rest: &[u8]) -> Vec<u8> {
    let question_len = MessageView::parse(sent)
        .ok()
        .and_then(|view| view.question())
        .map_or(0, |question| question.bytes.len());
    let mut answer = sent[..2].to_vec();
    let flags_and_counts = rest.get(..10).unwrap_or(rest);
    answer.extend_from_slice(flags_and_counts);
    if flags_and_counts.len() == 10 {
        answer.extend_from_slice(&sent[HEADER_LEN..HEADER_LEN + question_len]);
        answer.extend_from_slice(&rest[10..]);
    }
    answer
}

/// The fuzz target body.
pub fn forward_answer(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let qtype = TYPES[usize::from(selector & 0x0f)];
    let edns = selector & 0x10 != 0;
    // The clients ask for our NSID: its room must count toward their limit.
    let nsid = selector & 0x20 != 0;
    let upstream = SocketAddr::from(([127, 0, 0, 1], 53));
    let mut config = ForwardConfig::new(std::vec![upstream]);
    config.retries = 0;
    let mut forwarder = Forwarder::new(config, SERVER_UDP_SIZE);
    forwarder.set_nsid(b"\x00\x03\x00\x04fuzz");

    let first = client_query(0x1111, qtype, edns);
    let answers = ask(&mut forwarder, &first, edns, nsid, rest);
    let Some(first_answer) = answers.first() else {
        return;
    };
    check_answer(first_answer, &first, edns);

    // A second client, a second later: from the cache, if it was cached.
    let second = client_query(0x2222, qtype, edns);
    let key = key_of(&second);
    let mut out = std::vec![0u8; 65535];
    let limit = limit(edns);
    let Some(len) = forwarder.answer_from_cache(
        &key,
        &second,
        HEAD_LEN,
        edns,
        nsid,
        limit,
        START + 1_000,
        &mut out,
    ) else {
        return;
    };
    let cached = &out[..len];
    check_answer(cached, &second, edns);
    let (first_view, cached_view) = (
        MessageView::parse(first_answer).expect("checked"),
        MessageView::parse(cached).expect("checked"),
    );
    assert_eq!(
        first_view.header().rcode_bits(),
        cached_view.header().rcode_bits(),
        "the cached answer's rcode"
    );
    if !first_view.header().tc() && !cached_view.header().tc() {
        assert_eq!(
            first_view.header().counts()[1..],
            cached_view.header().counts()[1..],
            "the cached answer's records"
        );
    }
}

/// Asks `query` through the forwarder and answers the upstream query with
/// `rest` (over TCP too, if the UDP answer was truncated); the answers to
/// clients that result.
fn ask(
    forwarder: &mut Forwarder,
    query: &[u8],
    edns: bool,
    nsid: bool,
    rest: &[u8],
) -> Vec<Vec<u8>> {
    let client = Client::Udp {
        listener: 0,
        address: SocketAddr::from(([127, 0, 0, 1], 40000)),
        behind: None,
    };
    let mut actions = Vec::new();
    let mut out = std::vec![0u8; 65535];
    let written = forwarder.start(
        key_of(query),
        client,
        query,
        HEAD_LEN,
        edns,
        nsid,
        limit(edns),
        START,
        &mut actions,
        &mut out,
    );
    assert!(written.is_none(), "a new question goes upstream");
    let Some(Action::Transmit {
        upstream,
        socket,
        bytes,
    }) = actions.first().cloned()
    else {
        panic!("a new question is transmitted: {actions:?}");
    };
    actions.clear();
    let answer = upstream_answer(&bytes, rest);
    forwarder.on_response(upstream, socket, &answer, START + 5, &mut actions);
    let tcp = actions.iter().find_map(|action| match action {
        Action::TransmitTcp { token, bytes, .. } => Some((*token, bytes.clone())),
        _ => None,
    });
    if let Some((token, sent)) = tcp {
        let mut over_tcp = upstream_answer(&sent, rest);
        if let Some(flags) = over_tcp.get_mut(2) {
            *flags &= !0x02; // TC
        }
        forwarder.on_tcp_response(token, Some(&over_tcp), START + 10, &mut actions);
    }
    if forwarder.in_flight() > 0 {
        // Neither answer was taken: the timeout ends the question.
        forwarder.on_timeout(START + 60_000, &mut actions);
    }
    assert_eq!(forwarder.in_flight(), 0, "the question ended");
    actions
        .into_iter()
        .filter_map(|action| match action {
            Action::Answer { bytes, .. } => Some(bytes),
            _ => None,
        })
        .collect()
}

fn key_of(query: &[u8]) -> crate::forward::ForwardKey {
    let view = MessageView::parse(query).expect("a query we built");
    Forwarder::key(&view, false).expect("it has a question")
}

fn limit(edns: bool) -> usize {
    if edns {
        usize::from(CLIENT_UDP_SIZE.min(SERVER_UDP_SIZE))
    } else {
        CLASSIC_UDP_SIZE
    }
}

/// What every answer to `query` must be.
fn check_answer(answer: &[u8], query: &[u8], edns: bool) {
    assert!(
        answer.len() <= limit(edns),
        "{} octets over the limit",
        answer.len()
    );
    let view = MessageView::parse(answer).expect("the answer parses");
    for record in view.records() {
        record.expect("every record parses");
    }
    let opt = view.edns().expect("its OPT parses");
    assert_eq!(opt.is_some(), edns, "an OPT only for an EDNS client");
    let header = view.header();
    assert_eq!(
        header.id(),
        u16::from_be_bytes([query[0], query[1]]),
        "the ID"
    );
    assert!(header.qr() && header.ra(), "QR and RA");
    let question = view.question().expect("a question");
    assert_eq!(
        question.bytes,
        &query[HEADER_LEN..HEAD_LEN],
        "the client's own question"
    );
    // Nothing after the last record.
    let mut end = HEADER_LEN + question.bytes.len();
    for record in view.records().flatten() {
        end = record.rdata_offset + record.rdata.len();
    }
    assert_eq!(end, answer.len(), "no trailing octets");
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_answer_seeds() {
        let seeds = tern_testkit::fuzz_seeds("forward_answer");
        assert!(seeds.len() >= 10, "too few seeds");
        let mut cached = 0;
        for seed in &seeds {
            forward_answer(seed);
            // How many seeds reach the cache: the corpus must hold real
            // answers, not only refused ones.
            let qtype = TYPES[usize::from(seed[0] & 0x0f)];
            let edns = seed[0] & 0x10 != 0;
            let mut config = ForwardConfig::new(std::vec![SocketAddr::from(([127, 0, 0, 1], 53))]);
            config.retries = 0;
            let mut forwarder = Forwarder::new(config, SERVER_UDP_SIZE);
            let query = client_query(1, qtype, edns);
            ask(&mut forwarder, &query, edns, false, &seed[1..]);
            cached += usize::from(forwarder.stats().upstream_answers == 1);
        }
        assert!(cached >= 5, "{cached} seeds accepted and cached");
    }

    #[test]
    fn short_and_empty_inputs() {
        forward_answer(&[]);
        forward_answer(&[0]);
        forward_answer(&[0x10, 0x81]);
        forward_answer(&[3; 11]);
    }
}
