//! NSID (RFC 5001) in answers: with an identifier configured, every answer
//! with an OPT to a query whose OPT holds an NSID option carries the
//! identifier, and is otherwise the answer written without it, byte for
//! byte; never unasked, never unconfigured, and within the UDP size.

use tern_authority::nsid::Nsid;
use tern_authority::{bad_cookie, respond_with, Options, Response, Transport};
use tern_wire::parse::MessageView;
use tern_wire::types::RType;

use crate::support::{big_catalog, Ask};

/// An NSID request (empty option).
const ASK_NSID: &[u8] = &[0, 3, 0, 0];

/// A COOKIE option with a client cookie only.
const CLIENT_COOKIE: &[u8] = &[0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];

fn with_nsid() -> Options {
    Options {
        nsid: Some(Nsid::new(b"ns1.example").unwrap()),
        ..Options::default()
    }
}

/// A query (RD) with an OPT of `size`, `version` and `options`; `opcode`
/// and `class` as given.
fn query(name: &str, qtype: RType, opcode: u8, version: u8, size: u16, options: &[u8]) -> Vec<u8> {
    let mut q = crate::support::query(
        name,
        qtype,
        Ask {
            rd: true,
            edns: Some((size, false, version)),
            ..Ask::default()
        },
    );
    q[2] |= opcode << 3;
    let rdlength = q.len() - 2;
    q[rdlength..].copy_from_slice(&(options.len() as u16).to_be_bytes());
    q.extend_from_slice(options);
    q
}

fn answer(query: &[u8], transport: Transport, options: &Options, extra: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 65535];
    match respond_with(&big_catalog(), query, transport, options, extra, &mut out) {
        Response::Send(len) => out[..len].to_vec(),
        Response::Drop => panic!("dropped"),
    }
}

/// The OPT's options of an answer that parses completely.
fn opt_options(answer: &[u8]) -> Option<Vec<(u16, Vec<u8>)>> {
    let view = MessageView::parse(answer).expect("answer parses");
    let edns = view.edns().expect("EDNS reads, nothing trails")?;
    Some(
        edns.options()
            .map(|option| {
                let (code, value) = option.unwrap();
                (code, value.to_vec())
            })
            .collect(),
    )
}

/// `answer` with `option` added at the end of its OPT (the last record).
fn plus_option(answer: &[u8], option: &[u8]) -> Vec<u8> {
    let view = MessageView::parse(answer).unwrap();
    let opt = view
        .records()
        .map(Result::unwrap)
        .find(|record| record.rtype == RType::OPT)
        .expect("an OPT");
    assert_eq!(opt.rdata_offset + opt.rdata.len(), answer.len());
    let mut expected = answer.to_vec();
    let rdlength = (opt.rdata.len() + option.len()) as u16;
    expected[opt.rdata_offset - 2..opt.rdata_offset].copy_from_slice(&rdlength.to_be_bytes());
    expected.extend_from_slice(option);
    expected
}

/// Positive, NXDOMAIN, REFUSED (after EDE), NOTIMP, BADVERS, FORMERR of a
/// malformed COOKIE, class CH REFUSED: the answer without NSID plus the
/// option, over UDP and TCP.
#[test]
fn every_answer_with_an_opt_carries_it_when_asked() {
    let nsid = with_nsid();
    let option = nsid.nsid.as_ref().unwrap().as_option().to_vec();
    assert_eq!(option, b"\x00\x03\x00\x0bns1.example");
    let malformed_cookie = [ASK_NSID, &[0, 10, 0, 3, 1, 2, 3]].concat();
    let mut chaos = query("version.bind.", RType::TXT, 0, 0, 1232, ASK_NSID);
    chaos[12 + 14 + 3] = 3;
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        (
            "positive",
            query("www.example.", RType::A, 0, 0, 1232, ASK_NSID),
            0,
        ),
        (
            "nxdomain",
            query("nx.example.", RType::A, 0, 0, 1232, ASK_NSID),
            3,
        ),
        (
            "refused",
            query("www.example.org.", RType::A, 0, 0, 1232, ASK_NSID),
            5,
        ),
        (
            "notimp",
            query("www.example.", RType::A, 2, 0, 1232, ASK_NSID),
            4,
        ),
        (
            "badvers",
            query("www.example.", RType::A, 0, 1, 1232, ASK_NSID),
            16,
        ),
        (
            "formerr",
            query("www.example.", RType::A, 0, 0, 1232, &malformed_cookie),
            1,
        ),
        ("chaos", chaos, 5),
    ];
    for (what, q, rcode) in cases {
        for transport in [Transport::Udp, Transport::Tcp] {
            let without = answer(&q, transport, &Options::default(), &[]);
            let with = answer(&q, transport, &nsid, &[]);
            assert_eq!(with, plus_option(&without, &option), "{what} {transport:?}");
            let view = MessageView::parse(&with).unwrap();
            let extended = view.edns().unwrap().unwrap().extended_rcode;
            let header_rcode = u16::from(view.header().rcode_bits());
            assert_eq!(header_rcode | u16::from(extended) << 4, rcode, "{what}");
        }
    }
    // With a COOKIE to add: the NSID first.
    let q = query(
        "www.example.",
        RType::A,
        0,
        0,
        1232,
        &[ASK_NSID, CLIENT_COOKIE].concat(),
    );
    let cookie = [CLIENT_COOKIE, &[9; 16][..]].concat();
    let cookie = [&[0, 10, 0, 24][..], &cookie[4..]].concat();
    let with = answer(&q, Transport::Udp, &nsid, &cookie);
    let without = answer(&q, Transport::Udp, &Options::default(), &[]);
    assert_eq!(with, plus_option(&plus_option(&without, &option), &cookie));
}

#[test]
fn never_unasked_nor_unconfigured() {
    let nsid = with_nsid();
    for options in [
        &[][..],
        CLIENT_COOKIE,
        &[0, 10, 0, 8, 0, 3, 0, 0, 0, 0, 0, 0],
    ] {
        let q = query("www.example.", RType::A, 0, 0, 1232, options);
        assert_eq!(
            answer(&q, Transport::Udp, &nsid, &[]),
            answer(&q, Transport::Udp, &Options::default(), &[]),
            "{options:?}"
        );
    }
    // Asked, not configured: no option at all.
    let q = query("www.example.", RType::A, 0, 0, 1232, ASK_NSID);
    assert_eq!(
        opt_options(&answer(&q, Transport::Udp, &Options::default(), &[])),
        Some(vec![])
    );
    // No OPT in the query: none in the answer.
    let q = crate::support::query("www.example.", RType::A, Ask::no_edns());
    assert_eq!(opt_options(&answer(&q, Transport::Udp, &nsid, &[])), None);
}

/// The option counts toward the UDP limit: a large answer at 512 and 1232
/// octets stays within it, with TC, whole RRsets, and the NSID.
#[test]
fn the_option_counts_toward_the_udp_size() {
    let nsid = with_nsid();
    for size in [512u16, 1232] {
        let q = query("big.example.", RType::TXT, 0, 0, size, ASK_NSID);
        let with = answer(&q, Transport::Udp, &nsid, &[]);
        assert!(with.len() <= usize::from(size), "{size}: {}", with.len());
        let view = MessageView::parse(&with).unwrap();
        assert!(view.header().tc(), "{size}");
        assert_eq!(
            opt_options(&with).unwrap(),
            [(3, b"ns1.example".to_vec())],
            "{size}"
        );
        let without = answer(&q, Transport::Udp, &Options::default(), &[]);
        let records = |answer: &[u8]| MessageView::parse(answer).unwrap().header().counts()[1];
        assert!(records(&with) <= records(&without), "{size}");
    }
    // Over TCP nothing is cut.
    let q = query("big.example.", RType::TXT, 0, 0, 512, ASK_NSID);
    let with = answer(&q, Transport::Tcp, &nsid, &[]);
    let without = answer(&q, Transport::Tcp, &Options::default(), &[]);
    assert_eq!(
        with,
        plus_option(&without, nsid.nsid.as_ref().unwrap().as_option())
    );
}

/// BADCOOKIE carries it after the COOKIE.
#[test]
fn badcookie_carries_it() {
    let nsid = with_nsid();
    let q = query(
        "www.example.",
        RType::A,
        0,
        0,
        1232,
        &[CLIENT_COOKIE, ASK_NSID].concat(),
    );
    let secret = tern_authority::cookie::CookieSecret::new([0x5a; 16]);
    let client = std::net::IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 7));
    let view = MessageView::parse(&q).unwrap();
    let edns = view.edns().unwrap().unwrap();
    let check = tern_authority::cookie::check(Some(&edns), &secret, client, 1_700_000_000);
    let cookie = check.reply_option().unwrap();
    let mut out = vec![0u8; 512];
    let Response::Send(len) =
        bad_cookie(&tern_wire::query::Query::parse(&q), &nsid, cookie, &mut out)
    else {
        panic!("dropped");
    };
    let mut plain = vec![0u8; 512];
    let Response::Send(plain_len) = bad_cookie(
        &tern_wire::query::Query::parse(&q),
        &Options::default(),
        cookie,
        &mut plain,
    ) else {
        panic!("dropped");
    };
    assert_eq!(
        out[..len],
        plus_option(&plain[..plain_len], nsid.nsid.as_ref().unwrap().as_option())
    );
}
