//! RFC 1034 section 6.2 example queries against the section 6.1 zones (root
//! and EDU. loaded together, EDU. also delegated from the root).
//!
//! Pins: positive answers, ANY as one RRset (RFC 8482: the lowest type, as
//! Knot), MX with additional A, NODATA and NXDOMAIN with the SOA at the
//! negative TTL, a referral with glue (AA=0), a CNAME whose target lies
//! below a cut of the answering zone (referral in authority, AA=1, as
//! Knot), QTYPE=CNAME. Expected sections are Knot 3.2.6's answers.

use tern_authority::Catalog;
use tern_wire::types::RType;

use crate::support::{ask, corpus_queries, lines, sorted, zone_file, Ask};

fn catalog() -> Catalog {
    Catalog::new(vec![
        zone_file(".", "domain/test-data__zonefiles__rfc1034-6-1-root.zone"),
        zone_file("EDU.", "domain/test-data__zonefiles__rfc1034-6-1-edu.zone"),
    ])
}

/// (rcode, AA, answer, authority, additional) per query of the corpus list.
fn expected(
    qname: &str,
    qtype: RType,
) -> (
    u16,
    bool,
    Vec<&'static str>,
    Vec<&'static str>,
    Vec<&'static str>,
) {
    let sri_a = [
        "sri-nic.arpa. 3600 A 10.0.0.51",
        "sri-nic.arpa. 3600 A 26.0.0.73",
    ];
    let soa = ". 3600 SOA sri-nic.arpa. hostmaster.sri-nic.arpa. 870611 1800 300 604800 86400";
    match (qname, qtype) {
        ("SRI-NIC.ARPA.", RType::A) | ("SRI-NIC.ARPA.", RType::ANY) => {
            (0, true, sri_a.to_vec(), vec![], vec![])
        }
        ("SRI-NIC.ARPA.", RType::MX) => (
            0,
            true,
            vec!["sri-nic.arpa. 3600 MX 0 sri-nic.arpa."],
            vec![],
            sri_a.to_vec(),
        ),
        ("SRI-NIC.ARPA.", RType::NS) => (0, true, vec![], vec![soa], vec![]),
        ("SIR-NIC.ARPA.", RType::A) => (3, true, vec![], vec![soa], vec![]),
        ("BRL.MIL.", RType::A) => (
            0,
            false,
            vec![],
            vec!["mil. 86400 NS a.isi.edu.", "mil. 86400 NS sri-nic.arpa."],
            vec!["a.isi.edu. 86400 A 26.3.0.103", sri_a[0], sri_a[1]],
        ),
        ("USC-ISIC.ARPA.", RType::A) => (
            0,
            true,
            vec!["usc-isic.arpa. 3600 CNAME c.isi.edu."],
            vec!["edu. 86400 NS c.isi.edu.", "edu. 86400 NS sri-nic.arpa."],
            vec!["c.isi.edu. 86400 A 10.0.0.52", sri_a[0], sri_a[1]],
        ),
        ("USC-ISIC.ARPA.", RType::CNAME) => (
            0,
            true,
            vec!["usc-isic.arpa. 3600 CNAME c.isi.edu."],
            vec![],
            vec![],
        ),
        other => panic!("no expectation for {other:?}"),
    }
}

#[test]
fn section_6_2_examples() {
    let catalog = catalog();
    let queries = corpus_queries("derived/rfc1034-6.2__domain-auth_zones.queries");
    assert_eq!(queries.len(), 8);
    for (qname, qtype) in queries {
        let (rcode, aa, answer, authority, additional) = expected(&qname, qtype);
        for how in [Ask::default(), Ask::no_edns()] {
            let reply = ask(&catalog, &qname, qtype, how);
            let what = format!("{qname} {qtype}");
            assert_eq!(reply.rcode, rcode, "{what}");
            assert_eq!(reply.aa, aa, "{what}");
            assert!(!reply.tc, "{what}");
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
            assert_eq!(reply.opt.is_some(), how.edns.is_some(), "{what}");
        }
    }
}

#[test]
fn edu_zone_answers_for_itself_below_the_root_delegation() {
    let catalog = catalog();
    // The root delegates EDU.; the loaded EDU. zone is deeper and answers.
    let reply = ask(&catalog, "edu.", RType::SOA, Ask::default());
    assert!(reply.aa);
    assert_eq!(
        reply.answer,
        ["edu. 3600 soa sri-nic.arpa. hostmaster.sri-nic.arpa. 870729 1800 300 604800 86400"]
    );
    // ...and refers for its own delegations, with in-bailiwick glue.
    let reply = ask(&catalog, "www.isi.edu.", RType::A, Ask::default());
    assert!(!reply.aa);
    assert_eq!(
        sorted(&reply.authority),
        lines(&[
            "isi.edu. 172800 NS a.isi.edu.",
            "isi.edu. 172800 NS vaxa.isi.edu.",
            "isi.edu. 172800 NS venera.isi.edu."
        ])
    );
    assert_eq!(
        sorted(&reply.additional),
        lines(&[
            "a.isi.edu. 172800 A 26.3.0.103",
            "vaxa.isi.edu. 172800 A 10.2.0.27",
            "vaxa.isi.edu. 172800 A 128.9.0.33",
            "venera.isi.edu. 172800 A 10.1.0.52",
            "venera.isi.edu. 172800 A 128.9.0.32",
        ])
    );
    // DS for EDU. is answered by the parent (the root): NODATA there.
    let reply = ask(&catalog, "edu.", RType::DS, Ask::default());
    assert!(reply.aa);
    assert_eq!(reply.authority.len(), 1);
    assert!(
        reply.authority[0].starts_with(". 3600 soa"),
        "{:?}",
        reply.authority
    );
}
