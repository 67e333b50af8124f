//! Behaviour pinned against Knot 3.2.6 and NSD 4.6.1 (each case names the
//! server(s) whose answer it reproduces; checked on loopback).
//!
//! Pins: message-level errors (drop, FORMERR, NOTIMP, BADVERS, REFUSED with
//! EDE), CH TXT, flags (RD and CD copied, AD cleared), OPT echo, UDP size limits
//! and TC with whole RRsets, glue that does not fit, CNAME chains (limit, loops,
//! leaving the zone, NXDOMAIN at the end), DNAME synthesis, ANY, DS at a
//! cut, a child zone under its parent's delegation, additional records from
//! wildcards and without duplicates.

use tern_authority::{
    respond, respond_to_at, Catalog, ChaosIdentity, Options, Response, Transport,
};
use tern_wire::types::RType;

use crate::support::{ask, lines, query, send, sorted, zone_text, Ask};

const EXAMPLE: &str = r#"
$TTL 3600
@        3600 IN SOA ns1 host 1 3600 900 604800 60
@        3600 IN NS  ns1
@        3600 IN NS  ns2.other.test.
ns1      3600 IN A   192.0.2.1
www      300  IN A   192.0.2.80
any      3600 IN TXT "t"
any      3600 IN AAAA 2001:db8::1
any      3600 IN MX  10 ns1
c1       3600 IN CNAME c2
c2       3600 IN CNAME c3
c3       3600 IN CNAME c4
c4       3600 IN CNAME c5
c5       3600 IN CNAME c6
c6       3600 IN CNAME c7
c7       3600 IN A   192.0.2.7
self     3600 IN CNAME self
loopa    3600 IN CNAME loopb
loopb    3600 IN CNAME loopa
out      3600 IN CNAME www.elsewhere.test.
tonx     3600 IN CNAME nothing
tosub    3600 IN CNAME www.sub
dn       3600 IN DNAME target
www.target 3600 IN A 192.0.2.9
sub      3600 IN NS  ns.sub
sub      3600 IN DS  1 8 2 abcdef01
ns.sub   3600 IN A   192.0.2.53
mxdup    3600 IN MX  10 ns1
mxdup    3600 IN MX  20 ns1
mxwild   3600 IN MX  10 foo.wc
*.wc     3600 IN A   192.0.2.77
*.wc     3600 IN AAAA 2001:db8::77
*.wcname 3600 IN CNAME www
"#;

const SUB: &str = r#"
@    600 IN SOA ns host 7 3600 900 604800 600
@    600 IN NS  ns
ns   600 IN A   192.0.2.53
www  300 IN A   192.0.2.151
"#;

fn catalog() -> Catalog {
    Catalog::new(vec![
        zone_text("example.", EXAMPLE),
        zone_text("sub.example.", SUB),
    ])
}

fn soa() -> &'static str {
    "example. 60 SOA ns1.example. host.example. 1 3600 900 604800 60"
}

//--- Message-level errors

#[test]
fn drops_short_messages_and_responses() {
    let catalog = catalog();
    let q = query("www.example.", RType::A, Ask::default());
    assert!(send(&catalog, &q[..11], Transport::Udp, &Options::default()).is_none());
    let mut response = q.clone();
    response[2] |= 0x80;
    assert!(send(&catalog, &response, Transport::Udp, &Options::default()).is_none());
    // An unreadable question (label type 01) is dropped, as Knot does.
    let mut bad = q[..12].to_vec();
    bad[11] = 0;
    bad.extend_from_slice(b"\x41a\x00\x00\x01\x00\x01");
    assert!(send(&catalog, &bad, Transport::Udp, &Options::default()).is_none());
}

#[test]
fn formerr_cases() {
    let catalog = catalog();
    let options = Options::default();
    // QDCOUNT 0: header only (Knot and NSD).
    let mut q = query("www.example.", RType::A, Ask::no_edns());
    q[5] = 0;
    q.truncate(12);
    let r = send(&catalog, &q, Transport::Udp, &options).unwrap();
    assert_eq!((r.rcode, r.raw.len()), (1, 12));
    // QDCOUNT 2: header only (NSD).
    let mut q = query("www.example.", RType::A, Ask::no_edns());
    q[5] = 2;
    let r = send(&catalog, &q, Transport::Udp, &options).unwrap();
    assert_eq!((r.rcode, r.raw.len()), (1, 12));
    // Trailing bytes, or two OPTs: FORMERR with the question, no OPT (Knot).
    let mut q = query("www.example.", RType::A, Ask::default());
    q.push(0);
    let r = send(&catalog, &q, Transport::Udp, &options).unwrap();
    assert_eq!(r.rcode, 1);
    assert_eq!(&r.raw[4..6], &[0, 1]);
    assert!(r.opt.is_none());
    let mut q = query("www.example.", RType::A, Ask::default());
    let opt = q[q.len() - 11..].to_vec();
    q.extend_from_slice(&opt);
    q[11] = 2;
    assert_eq!(
        send(&catalog, &q, Transport::Udp, &options).unwrap().rcode,
        1
    );
}

#[test]
fn notimp_echoes_opcode_and_question_only() {
    let catalog = catalog();
    let mut q = query(
        "www.example.",
        RType::A,
        Ask {
            rd: true,
            ..Ask::default()
        },
    );
    q[2] |= 2 << 3; // STATUS
    q[3] |= 0x10; // CD
    let r = send(&catalog, &q, Transport::Udp, &Options::default()).unwrap();
    // QR and the opcode only: RD and CD are defined for QUERY (genreport
    // `opcodeflg`; BIND does the same, Knot and NSD copy RD).
    assert_eq!(&r.raw[2..4], &[0x80 | (2 << 3), 0x04]);
    assert_eq!(r.rcode, 4);
    assert_eq!(&r.raw[4..6], &[0, 1]);
    assert!(r.opt.is_some());
}

#[test]
fn badvers_for_edns_above_zero() {
    let catalog = catalog();
    let r = ask(
        &catalog,
        "www.example.",
        RType::A,
        Ask {
            edns: Some((1232, true, 1)),
            ..Ask::default()
        },
    );
    assert_eq!(r.rcode, 16);
    assert!(!r.aa);
    assert!(r.answer.is_empty());
    assert_eq!(r.opt, Some((1232, 0, true)));
}

#[test]
fn refused_outside_our_zones_and_for_other_classes() {
    let catalog = catalog();
    for name in ["www.example.org.", "xexample.", "."] {
        let r = ask(
            &catalog,
            name,
            RType::A,
            Ask {
                rd: true,
                ..Ask::default()
            },
        );
        assert_eq!((r.rcode, r.aa, r.rd), (5, false, true), "{name}");
        assert!(r.answer.is_empty() && r.authority.is_empty());
        // EDE 20 "Not Authoritative" as Knot and NSD send it.
        assert!(
            r.raw.ends_with(&[0x00, 0x0f, 0x00, 0x02, 0x00, 0x14]),
            "{name}"
        );
    }
    let mut q = query("www.example.", RType::A, Ask::no_edns());
    let class_at = q.len() - 1;
    for class in [3u8, 4, 254] {
        q[class_at] = class;
        assert_eq!(
            send(&catalog, &q, Transport::Udp, &Options::default())
                .unwrap()
                .rcode,
            5
        );
    }
}

/// QCLASS ANY (255) is answered as IN (Knot 3.2.6, NSD 4.6.1): the same
/// bytes as the class IN answer but for the question's class, echoed as
/// asked; records of class IN; AA as for IN (Knot). Positive, NXDOMAIN,
/// NODATA and referral answers, with and without EDNS; outside our zones
/// it is REFUSED like IN.
#[test]
fn class_any_is_answered_as_in() {
    let catalog = catalog();
    let cases = [
        ("www.example.", RType::A),
        ("nothing.example.", RType::A),
        ("www.example.", RType::MX),
        ("www.sub.example.", RType::A),
        ("www.example.org.", RType::A),
    ];
    for (name, rtype) in cases {
        for ask in [Ask::no_edns(), Ask::default()] {
            let opt_len = if ask.edns.is_some() { 11 } else { 0 };
            let q_in = query(name, rtype, ask);
            let question_end = q_in.len() - opt_len;
            let mut q_any = q_in.clone();
            q_any[question_end - 1] = 255;
            let mut a_in = vec![0u8; 65535];
            let mut a_any = vec![0u8; 65535];
            let Response::Send(len_in) = respond(
                &catalog,
                &q_in,
                Transport::Udp,
                &Options::default(),
                &mut a_in,
            ) else {
                panic!("{name}: IN dropped");
            };
            let Response::Send(len_any) = respond(
                &catalog,
                &q_any,
                Transport::Udp,
                &Options::default(),
                &mut a_any,
            ) else {
                panic!("{name}: ANY dropped");
            };
            let mut expected = a_in[..len_in].to_vec();
            expected[question_end - 1] = 255;
            assert_eq!(&a_any[..len_any], &expected[..], "{name} {rtype:?}");
        }
    }
}

#[test]
fn chaos_answers_only_when_configured() {
    let catalog = catalog();
    let mut q = query("VERSION.bind.", RType::TXT, Ask::no_edns());
    let class_at = q.len() - 1;
    q[class_at] = 3;
    assert_eq!(
        send(&catalog, &q, Transport::Udp, &Options::default())
            .unwrap()
            .rcode,
        5
    );
    let options = Options {
        chaos: Some(ChaosIdentity {
            version: Some("tern 0.1".into()),
            identity: None,
        }),
        ..Options::default()
    };
    let r = send(&catalog, &q, Transport::Udp, &options).unwrap();
    assert_eq!((r.rcode, r.aa), (0, false));
    assert_eq!(r.answer, ["version.bind. 0 txt \"tern 0.1\""]);
    let mut id = query("id.server.", RType::TXT, Ask::no_edns());
    let at = id.len() - 1;
    id[at] = 3;
    assert_eq!(
        send(&catalog, &id, Transport::Udp, &options).unwrap().rcode,
        5
    );
}

/// Class CH as Knot answers it (issue 22): the four names in any case,
/// TXT only, the owner as asked; ANY, other types, other names and hidden
/// strings are REFUSED without the EDE option that REFUSED carries for
/// class IN names outside our zones.
#[test]
fn chaos_refusals_carry_no_ede() {
    let catalog = catalog();
    let options = Options {
        chaos: Some(ChaosIdentity {
            version: Some("tern 0.1".into()),
            identity: Some("ns1".into()),
        }),
        ..Options::default()
    };
    let ch = |name: &str, rtype: RType| {
        let mut q = query(name, rtype, Ask::default());
        // The class of the question, before the 11-octet OPT.
        let class_at = q.len() - 11 - 1;
        q[class_at] = 3;
        send(&catalog, &q, Transport::Udp, &options).unwrap()
    };
    let id = ch("Hostname.BIND.", RType::TXT);
    assert_eq!((id.rcode, id.aa), (0, false));
    assert_eq!(id.answer, ["hostname.bind. 0 txt \"ns1\""]);
    assert_eq!(&id.raw[12 + 1..12 + 9], b"Hostname", "the owner as asked");
    for (name, rtype) in [
        ("id.server.", RType::ANY),
        ("version.bind.", RType::A),
        ("authors.bind.", RType::TXT),
        ("example.", RType::TXT),
    ] {
        let r = ch(name, rtype);
        assert_eq!((r.rcode, r.aa), (5, false), "{name} {rtype}");
        // The OPT is the last record and has no options.
        assert_eq!(r.raw[r.raw.len() - 2..], [0, 0], "{name} {rtype}: no EDE");
    }
    let hidden = Options {
        chaos: Some(ChaosIdentity::default()),
        ..Options::default()
    };
    let mut q = query("id.server.", RType::TXT, Ask::default());
    let class_at = q.len() - 11 - 1;
    q[class_at] = 3;
    let r = send(&catalog, &q, Transport::Udp, &hidden).unwrap();
    assert_eq!(r.rcode, 5);
    assert_eq!(r.raw[r.raw.len() - 2..], [0, 0]);
    // Class IN outside our zones keeps its EDE 20.
    let r = ask(&catalog, "example.org.", RType::A, Ask::default());
    assert_eq!(r.rcode, 5);
    assert_eq!(r.raw[r.raw.len() - 2..], [0, 0x14]);
}

#[test]
fn transfers_are_not_served() {
    let catalog = catalog();
    assert_eq!(
        ask(&catalog, "example.", RType::AXFR, Ask::no_edns()).rcode,
        4
    );
    let tcp = Ask {
        transport: Transport::Tcp,
        ..Ask::no_edns()
    };
    assert_eq!(ask(&catalog, "example.", RType::IXFR, tcp).rcode, 5);
}

//--- Flags, OPT, case

#[test]
fn flags_and_opt() {
    let catalog = catalog();
    let mut q = query(
        "www.example.",
        RType::A,
        Ask {
            rd: true,
            edns: Some((4096, true, 0)),
            ..Ask::default()
        },
    );
    q[3] |= 0x10 | 0x20; // CD and AD in the query
    let r = send(&catalog, &q, Transport::Udp, &Options::default()).unwrap();
    assert_eq!(
        &r.raw[2..4],
        &[0x85, 0x10],
        "QR AA RD CD; AD cleared (CD copied per RFC 4035 3.1.6)"
    );
    assert_eq!(r.opt, Some((1232, 0, true)));
    assert_eq!(r.answer, ["www.example. 300 a 192.0.2.80"]);
    let r = ask(&catalog, "www.example.", RType::A, Ask::no_edns());
    assert!(r.opt.is_none());
}

#[test]
fn question_bytes_round_trip() {
    let catalog = catalog();
    let q = query("wWw.ExAmPlE.", RType::A, Ask::default());
    let r = send(&catalog, &q, Transport::Udp, &Options::default()).unwrap();
    assert_eq!(&r.raw[12..12 + 17], &q[12..12 + 17]);
}

//--- Answers

#[test]
fn any_is_one_rrset_of_the_lowest_type() {
    let catalog = catalog();
    let r = ask(&catalog, "any.example.", RType::ANY, Ask::default());
    assert_eq!(r.answer, ["any.example. 3600 mx 10 ns1.example."]);
    assert_eq!(r.additional, ["ns1.example. 3600 a 192.0.2.1"]);
    let r = ask(&catalog, "example.", RType::ANY, Ask::default());
    assert_eq!(
        sorted(&r.answer),
        lines(&[
            "example. 3600 NS ns1.example.",
            "example. 3600 NS ns2.other.test."
        ])
    );
}

#[test]
fn cname_chain_limit_and_loops() {
    let catalog = catalog();
    // Knot: five CNAMEs, then stop with NOERROR and no authority.
    let r = ask(&catalog, "c1.example.", RType::A, Ask::default());
    assert_eq!((r.rcode, r.aa), (0, true));
    assert_eq!(r.answer.len(), 5);
    assert!(r.authority.is_empty());
    let r = ask(&catalog, "c2.example.", RType::A, Ask::default());
    assert_eq!(r.answer.len(), 6);
    assert_eq!(r.answer[5], "c7.example. 3600 a 192.0.2.7");
    // Loops end when a CNAME repeats.
    let r = ask(&catalog, "self.example.", RType::A, Ask::default());
    assert_eq!((r.rcode, r.answer.len(), r.authority.len()), (0, 1, 0));
    let r = ask(&catalog, "loopa.example.", RType::A, Ask::default());
    assert_eq!((r.rcode, r.answer.len()), (0, 2));
}

#[test]
fn cname_chain_ends() {
    let catalog = catalog();
    let r = ask(&catalog, "out.example.", RType::A, Ask::default());
    assert_eq!((r.rcode, r.answer.len(), r.authority.len()), (0, 1, 0));
    // NXDOMAIN at the end of the chain (RFC 6604), SOA in authority.
    let r = ask(&catalog, "tonx.example.", RType::A, Ask::default());
    assert_eq!(r.rcode, 3);
    assert_eq!(r.answer, ["tonx.example. 3600 cname nothing.example."]);
    assert_eq!(r.authority, [soa().to_ascii_lowercase()]);
    // Into the child zone: Knot stays in the parent and refers (AA=1).
    let r = ask(&catalog, "tosub.example.", RType::A, Ask::default());
    assert!(r.aa);
    assert_eq!(r.answer, ["tosub.example. 3600 cname www.sub.example."]);
    assert_eq!(r.authority, ["sub.example. 3600 ns ns.sub.example."]);
    assert_eq!(r.additional, ["ns.sub.example. 3600 a 192.0.2.53"]);
    // QTYPE CNAME is not followed.
    let r = ask(&catalog, "c1.example.", RType::CNAME, Ask::default());
    assert_eq!(r.answer, ["c1.example. 3600 cname c2.example."]);
}

#[test]
fn dname_synthesis() {
    let catalog = catalog();
    let r = ask(&catalog, "www.dn.example.", RType::A, Ask::default());
    assert_eq!(
        r.answer,
        [
            "dn.example. 3600 dname target.example.",
            "www.dn.example. 3600 cname www.target.example.",
            "www.target.example. 3600 a 192.0.2.9",
        ]
    );
    let r = ask(&catalog, "www.dn.example.", RType::CNAME, Ask::default());
    assert_eq!(r.answer.len(), 2);
    // The DNAME owner itself is not redirected.
    let r = ask(&catalog, "dn.example.", RType::A, Ask::default());
    assert_eq!((r.answer.len(), r.authority.len()), (0, 1));
    // Too long a result: YXDOMAIN with the DNAME (RFC 6672 section 2.2).
    let long = format!(
        "{0}.{0}.{0}.{1}.dn.example.",
        "a".repeat(63),
        "b".repeat(50)
    );
    let r = ask(&catalog, &long, RType::A, Ask::default());
    assert_eq!(r.rcode, 6);
    assert_eq!(r.answer, ["dn.example. 3600 dname target.example."]);
}

#[test]
fn wildcards() {
    let catalog = catalog();
    let r = ask(&catalog, "x.wcname.example.", RType::A, Ask::default());
    assert_eq!(
        r.answer,
        [
            "x.wcname.example. 3600 cname www.example.",
            "www.example. 300 a 192.0.2.80"
        ]
    );
    let r = ask(&catalog, "mxwild.example.", RType::MX, Ask::default());
    assert_eq!(
        sorted(&r.additional),
        lines(&[
            "foo.wc.example. 3600 A 192.0.2.77",
            "foo.wc.example. 3600 AAAA 2001:db8::77"
        ])
    );
    // Two MX with the same target: its A once (NSD; Knot repeats it).
    let r = ask(&catalog, "mxdup.example.", RType::MX, Ask::default());
    assert_eq!(r.additional, ["ns1.example. 3600 a 192.0.2.1"]);
}

#[test]
fn delegations_and_ds() {
    let catalog = catalog();
    // DS at the cut: answered by the parent, authoritatively.
    let r = ask(&catalog, "sub.example.", RType::DS, Ask::default());
    assert!(r.aa);
    assert_eq!(r.answer, ["sub.example. 3600 ds 1 8 2 abcdef01"]);
    // The child zone answers for itself.
    let r = ask(&catalog, "www.sub.example.", RType::A, Ask::default());
    assert!(r.aa);
    assert_eq!(r.answer, ["www.sub.example. 300 a 192.0.2.151"]);
    // NODATA in the child: its own SOA, TTL min(600, 600).
    let r = ask(&catalog, "www.sub.example.", RType::TXT, Ask::default());
    assert_eq!(
        r.authority,
        ["sub.example. 600 soa ns.sub.example. host.sub.example. 7 3600 900 604800 600"]
    );
}

//--- Sizes and truncation

fn big_catalog() -> Catalog {
    let mut text = String::from(
        "@ 3600 IN SOA ns1 host 1 3600 900 604800 60\n@ 3600 IN NS ns1\nns1 3600 IN A 192.0.2.1\n",
    );
    for i in 0..40 {
        text.push_str(&format!("big 3600 IN TXT \"{}{i:02}\"\n", "x".repeat(30)));
    }
    text.push_str("tobig 3600 IN CNAME big\n");
    for i in 1..=13 {
        text.push_str(&format!("bd 3600 IN NS ns{i:02}.bd\nns{i:02}.bd 3600 IN A 192.0.2.{i}\nns{i:02}.bd 3600 IN AAAA 2001:db8::{i}\n"));
        text.push_str(&format!("mxs 3600 IN MX {i} mx{i:02}.mxs\nmx{i:02}.mxs 3600 IN A 192.0.2.{i}\nmx{i:02}.mxs 3600 IN AAAA 2001:db8::{i}\n"));
    }
    Catalog::new(vec![zone_text("lab.", &text)])
}

#[test]
fn truncation_keeps_whole_rrsets() {
    let catalog = big_catalog();
    // 40 TXT of ~35 octets: TC over 512 without EDNS, nothing half-written.
    let r = ask(&catalog, "big.lab.", RType::TXT, Ask::no_edns());
    assert!(r.tc && r.aa);
    assert!(r.answer.is_empty() && r.authority.is_empty() && r.additional.is_empty());
    // The CNAME before it stays (Knot and NSD).
    let r = ask(&catalog, "tobig.lab.", RType::TXT, Ask::no_edns());
    assert!(r.tc);
    assert_eq!(r.answer, ["tobig.lab. 3600 cname big.lab."]);
    // With EDNS 1232 it fits... not either (40 * 47 > 1232), but the OPT is kept.
    let r = ask(&catalog, "big.lab.", RType::TXT, Ask::default());
    assert!(r.tc && r.opt.is_some());
    // The client's size is honoured up to our maximum, and TCP has room.
    let r = ask(
        &catalog,
        "big.lab.",
        RType::TXT,
        Ask {
            edns: Some((4096, false, 0)),
            ..Ask::default()
        },
    );
    assert!(r.tc && r.raw.len() <= 1232);
    let options = Options {
        max_udp_size: 4096,
        ..Options::default()
    };
    let q = query(
        "big.lab.",
        RType::TXT,
        Ask {
            edns: Some((4096, false, 0)),
            ..Ask::default()
        },
    );
    let r = send(&catalog, &q, Transport::Udp, &options).unwrap();
    assert!(!r.tc && r.answer.len() == 40 && r.opt == Some((4096, 0, false)));
    let r = ask(
        &catalog,
        "big.lab.",
        RType::TXT,
        Ask {
            transport: Transport::Tcp,
            ..Ask::no_edns()
        },
    );
    assert!(!r.tc && r.answer.len() == 40);
}

#[test]
fn glue_that_does_not_fit() {
    let catalog = big_catalog();
    // Referral glue: every A first, then the AAAA that fit, no TC (NSD).
    let r = ask(&catalog, "x.bd.lab.", RType::A, Ask::no_edns());
    assert!(!r.tc && !r.aa);
    assert_eq!(r.authority.len(), 13);
    assert_eq!(
        r.additional.iter().filter(|rr| rr.contains(" a ")).count(),
        13
    );
    assert!(r.additional.iter().any(|rr| rr.contains(" aaaa ")));
    assert!(r.additional.len() < 26);
    assert!(r.raw.len() <= 512);
    // Answer additionals: per target A then AAAA, skipping what does not
    // fit (Knot).
    let r = ask(&catalog, "mxs.lab.", RType::MX, Ask::no_edns());
    assert!(!r.tc);
    assert_eq!(r.answer.len(), 13);
    assert!(r.additional[..2].iter().any(|rr| rr.contains(" aaaa ")));
    assert!(!r.additional.is_empty() && r.additional.len() < 26);
    // Over TCP all glue fits.
    let r = ask(
        &catalog,
        "x.bd.lab.",
        RType::A,
        Ask {
            transport: Transport::Tcp,
            ..Ask::no_edns()
        },
    );
    assert!(!r.tc && r.additional.len() == 26);
}

#[test]
fn every_prefix_of_a_query_is_handled() {
    // No panic and a sane result for every truncation of a valid query.
    let catalog = catalog();
    let q = query("www.example.", RType::A, Ask::default());
    // Header, name (ending at its root label), type and class; an OPT
    // record follows.
    let question_end = 12 + q[12..].iter().position(|&octet| octet == 0).unwrap() + 1 + 4;
    assert!(question_end < q.len(), "an OPT after the question");
    let mut out = vec![0u8; 65535];
    for len in 0..q.len() {
        let response = respond(
            &catalog,
            &q[..len],
            Transport::Udp,
            &Options::default(),
            &mut out,
        );
        // Until the question is whole (under a header, or its name or
        // type and class cut short): dropped, as a question that cannot
        // be read (decision 0005). Then, with the OPT record cut short:
        // FORMERR echoing ID, opcode, RD and the question, no OPT.
        if len < question_end {
            assert!(matches!(response, Response::Drop), "{len}: dropped");
            continue;
        }
        let Response::Send(n) = response else {
            panic!("{len}: no answer");
        };
        assert_eq!(&out[..2], &q[..2], "{len}: ID");
        assert_eq!(out[2], 0x80 | (q[2] & 0x79), "{len}: QR, opcode and RD");
        assert_eq!(out[3] & 0x0f, 1, "{len}: FORMERR");
        assert_eq!(&out[4..12], &[0, 1, 0, 0, 0, 0, 0, 0], "{len}: counts");
        assert_eq!(&out[12..n], &q[12..question_end], "{len}: the question");
    }
    // The whole query is answered.
    let response = respond(&catalog, &q, Transport::Udp, &Options::default(), &mut out);
    let Response::Send(n) = response else {
        panic!("the whole query: no answer");
    };
    assert!(n > q.len() && out[3] & 0x0f == 0, "NOERROR with an answer");
}

/// A secondary zone past its EXPIRE is answered SERVFAIL for every name in
/// it (as Knot does), over UDP and TCP; its parent zone does not answer
/// for it instead, and other zones are unaffected.
#[test]
fn an_expired_zone_is_servfail() {
    let parent = zone_text(
        "example.",
        "@ 300 IN SOA ns hm 1 2 3 4 5\n@ 300 IN NS ns\nns 300 IN A 192.0.2.1\n\
         sub 300 IN NS ns.sub\nns.sub 300 IN A 192.0.2.2\n",
    );
    let child = zone_text(
        "sub.example.",
        "@ 300 IN SOA ns hm 7 2 3 4 5\n@ 300 IN NS ns\nns 300 IN A 192.0.2.2\nwww 300 IN A 192.0.2.3\n",
    );
    let expired = child.expired();
    assert!(expired.is_expired() && !child.is_expired());
    assert_eq!(expired.serial(), 7);
    let catalog = Catalog::new(vec![parent, expired]);
    for transport in [Transport::Udp, Transport::Tcp] {
        let how = Ask {
            transport,
            ..Ask::default()
        };
        for name in ["www.sub.example.", "sub.example.", "nx.sub.example."] {
            let reply = ask(&catalog, name, RType::A, how);
            assert_eq!((reply.rcode, reply.aa), (2, false), "{name}");
            assert!(reply.answer.is_empty() && reply.authority.is_empty());
        }
        let reply = ask(&catalog, "ns.example.", RType::A, how);
        assert_eq!((reply.rcode, reply.answer.len()), (0, 1));
    }
}

/// `respond_to_at` writes what `respond` writes (with the name lowercased
/// and hashed by the caller or not) and tells the slot of the
/// zone the name is in, as `Catalog::find_position` finds it (the server
/// counts answers by it without walking the catalog again); DS is answered
/// from the parent side and still reports the name's own zone.
#[test]
fn respond_to_at_reports_the_zone_of_the_name() {
    let catalog = catalog();
    let options = Options::default();
    for (name, qtype) in [
        ("www.example.", RType::A),
        ("NoPe.Example.", RType::AAAA),
        ("www.sub.example.", RType::A),
        ("sub.example.", RType::DS),
        ("www.example.org.", RType::A),
    ] {
        let bytes = query(name, qtype, Ask::default());
        let parsed = tern_wire::query::Query::parse(&bytes);
        let mut expected = vec![0u8; 65535];
        let mut out = vec![0u8; 65535];
        let response = respond(&catalog, &bytes, Transport::Udp, &options, &mut expected);
        let (at, slot) = respond_to_at(
            &catalog,
            &parsed,
            None,
            Transport::Udp,
            &options,
            &[],
            &mut out,
        );
        // The same with the name lowercased by the caller.
        let lower = parsed.question().unwrap().name.to_lower();
        let mut given = vec![0u8; 65535];
        let (with_name, given_slot) = respond_to_at(
            &catalog,
            &parsed,
            Some(tern_wire::hash::NameHasher::hashed(lower.as_name())),
            Transport::Udp,
            &options,
            &[],
            &mut given,
        );
        assert_eq!((with_name, given_slot), (at, slot), "{name}");
        assert_eq!(at, response, "{name}");
        let Response::Send(len) = response else {
            panic!("{name}: dropped");
        };
        assert_eq!(out[..len], expected[..len], "{name}");
        assert_eq!(given[..len], expected[..len], "{name}");
        assert_eq!(slot, catalog.find_position(lower.as_name()), "{name}");
        assert_eq!(slot.is_some(), !name.ends_with(".org."), "{name}");
    }
}
