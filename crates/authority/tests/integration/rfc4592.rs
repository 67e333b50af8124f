//! RFC 4592 section 2.2.1 examples against its example zone (BIND's copy,
//! with one extra SRV that changes none of the results).
//!
//! Pins: synthesis from `*.example.` with the query name as owner, NODATA
//! at a wildcard, no synthesis at an existing name, at an empty
//! non-terminal's descendants, below a cut, or when the closest encloser is
//! `*.example.` itself. Expected sections are Knot 3.2.6's.

use tern_authority::Catalog;
use tern_wire::types::RType;

use crate::support::{ask, corpus_queries, lines, sorted, zone_file, Ask};

fn catalog() -> Catalog {
    Catalog::new(vec![zone_file(
        "example.",
        "bind9/bin__tests__system__wildcard__ns1__example.db.in",
    )])
}

#[test]
fn section_2_2_1_examples() {
    let catalog = catalog();
    let soa = "example. 0 SOA . . 0 0 0 0 0";
    let queries = corpus_queries("derived/rfc4592-2.2.1__wildcard.queries");
    assert_eq!(queries.len(), 8);
    for (qname, qtype) in queries {
        let (rcode, aa, answer, authority, additional): (
            u16,
            bool,
            Vec<&str>,
            Vec<&str>,
            Vec<&str>,
        ) = match (qname.as_str(), qtype) {
            ("host3.example.", RType::MX) => (
                0,
                true,
                vec!["host3.example. 3600 MX 10 host1.example."],
                vec![],
                vec!["host1.example. 3600 A 192.0.2.1"],
            ),
            ("foo.bar.example.", RType::TXT) => (
                0,
                true,
                vec!["foo.bar.example. 3600 TXT \"this is a wildcard\""],
                vec![],
                vec![],
            ),
            ("host3.example.", RType::A)
            | ("host1.example.", RType::MX)
            | ("sub.*.example.", RType::MX) => (0, true, vec![], vec![soa], vec![]),
            ("_telnet._tcp.host1.example.", RType::SRV) | ("ghost.*.example.", RType::MX) => {
                (3, true, vec![], vec![soa], vec![])
            }
            ("host.subdel.example.", RType::A) => (
                0,
                false,
                vec![],
                vec![
                    "subdel.example. 3600 NS ns.example.com.",
                    "subdel.example. 3600 NS ns.example.net.",
                ],
                vec![],
            ),
            other => panic!("no expectation for {other:?}"),
        };
        let reply = ask(&catalog, &qname, qtype, Ask::default());
        let what = format!("{qname} {qtype}");
        assert_eq!(
            (reply.rcode, reply.aa, reply.tc),
            (rcode, aa, false),
            "{what}"
        );
        assert_eq!(sorted(&reply.answer), lines(&answer), "{what} answer");
        assert_eq!(
            sorted(&reply.authority),
            lines(&authority),
            "{what} authority"
        );
        assert_eq!(
            sorted(&reply.additional),
            lines(&additional),
            "{what} additional"
        );
    }
}

#[test]
fn synthesized_owner_keeps_the_client_case() {
    let catalog = catalog();
    let reply = ask(&catalog, "FoO.BaR.example.", RType::TXT, Ask::default());
    // The owner is a pointer to the question (offset 12), which carries the
    // client's spelling.
    let question_end = 12 + 17 + 4;
    assert_eq!(&reply.raw[12..12 + 9], b"\x03FoO\x03BaR\x07");
    assert_eq!(&reply.raw[question_end..question_end + 2], &[0xc0, 12]);
}
