//! DNSSEC answers (DO=1) from pre-signed zones, pinned against Knot 3.2.6
//! (NSD 4.6.1 agrees on every case here except where noted).
//!
//! Pins: RFC 4035 Appendix B (B.1-B.8) on the Appendix A zone signed with
//! NSEC, and the same queries on its NSEC3 version (RFC 5155 section 7.2:
//! closest encloser proof, next closer, wildcard); an opt-out NSEC3 zone
//! (RFC 5155 sections 7.2.4 and 7.2.7: no NSEC3 for insecure delegations,
//! closest provable encloser proof); RRSIGs with every RRset and with the
//! TTL of the RRset they cover; DO=0 answers without DNSSEC records except
//! when asked for by type; AD and CD never set; TC instead of a signed
//! RRset without its signatures.

use tern_authority::{Catalog, Transport};
use tern_wire::types::RType;

use crate::support::{ask, zone_file, zone_text, Ask, Reply};

const NSEC_ZONE: &str = "knot/tests-extra__tests__basic__nsec__data__example.zone.nsec";
const NSEC3_ZONE: &str = "knot/tests-extra__tests__basic__nsec3__data__example.zone.nsec3";

fn nsec() -> Catalog {
    Catalog::new(vec![zone_file("example.", NSEC_ZONE)])
}

fn nsec3() -> Catalog {
    Catalog::new(vec![zone_file("example.", NSEC3_ZONE)])
}

fn do_bit() -> Ask {
    Ask {
        edns: Some((1232, true, 0)),
        ..Ask::default()
    }
}

/// A section as sorted `owner TYPE` lines, RRSIGs as `owner RRSIG
/// <covered>`: which RRsets and signatures, not their bytes.
fn shape(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = lines
        .iter()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields[2] == "rrsig" {
                format!("{} rrsig {}", fields[0], fields[3])
            } else {
                format!("{} {}", fields[0], fields[2])
            }
        })
        .collect();
    out.sort();
    out
}

fn expect(reply: &Reply, rcode: u16, answer: &[&str], authority: &[&str]) {
    let sorted = |v: &[&str]| {
        let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(reply.rcode, rcode, "{reply:#?}");
    assert_eq!(shape(&reply.answer), sorted(answer), "answer of {reply:#?}");
    assert_eq!(
        shape(&reply.authority),
        sorted(authority),
        "authority of {reply:#?}"
    );
}

fn sorted(lines: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

const SOA: [&str; 2] = ["example. soa", "example. rrsig soa"];

//--- RFC 4035 Appendix B, NSEC

#[test]
fn b1_answer() {
    let reply = ask(&nsec(), "x.w.example.", RType::MX, do_bit());
    expect(
        &reply,
        0,
        &["x.w.example. mx", "x.w.example. rrsig mx"],
        &[],
    );
    assert_eq!(
        shape(&reply.additional),
        [
            "xx.example. a",
            "xx.example. aaaa",
            "xx.example. rrsig a",
            "xx.example. rrsig aaaa"
        ]
    );
    assert!(reply.aa && !reply.tc);
    assert_eq!(reply.opt, Some((1232, 0, true)));
}

#[test]
fn b2_name_error() {
    let reply = ask(&nsec(), "ml.example.", RType::A, do_bit());
    let proof = [
        "b.example. nsec",
        "b.example. rrsig nsec",
        "example. nsec",
        "example. rrsig nsec",
    ];
    expect(&reply, 3, &[], &[&SOA[..], &proof[..]].concat());
}

#[test]
fn b3_no_data() {
    let reply = ask(&nsec(), "ns1.example.", RType::MX, do_bit());
    let proof = ["ns1.example. nsec", "ns1.example. rrsig nsec"];
    expect(&reply, 0, &[], &[&SOA[..], &proof[..]].concat());
}

#[test]
fn b4_referral_to_signed_zone() {
    let reply = ask(&nsec(), "mc.a.example.", RType::MX, do_bit());
    expect(
        &reply,
        0,
        &[],
        &[
            "a.example. ns",
            "a.example. ns",
            "a.example. ds",
            "a.example. rrsig ds",
        ],
    );
    assert!(!reply.aa);
    // Glue is not signed.
    assert_eq!(
        shape(&reply.additional),
        ["ns1.a.example. a", "ns2.a.example. a"]
    );
}

#[test]
fn b5_referral_to_unsigned_zone() {
    let reply = ask(&nsec(), "mc.b.example.", RType::MX, do_bit());
    expect(
        &reply,
        0,
        &[],
        &[
            "b.example. ns",
            "b.example. ns",
            "b.example. nsec",
            "b.example. rrsig nsec",
        ],
    );
}

#[test]
fn b6_wildcard_expansion() {
    let reply = ask(&nsec(), "a.z.w.example.", RType::MX, do_bit());
    // The RRSIG keeps its label count (2): the validator sees the expansion.
    expect(
        &reply,
        0,
        &["a.z.w.example. mx", "a.z.w.example. rrsig mx"],
        &["x.y.w.example. nsec", "x.y.w.example. rrsig nsec"],
    );
    assert!(reply.answer.iter().any(|l| l.contains(" rrsig mx 5 2 ")));
}

#[test]
fn b7_wildcard_no_data() {
    let reply = ask(&nsec(), "a.z.w.example.", RType::AAAA, do_bit());
    let proof = [
        "x.y.w.example. nsec",
        "x.y.w.example. rrsig nsec",
        "*.w.example. nsec",
        "*.w.example. rrsig nsec",
    ];
    expect(&reply, 0, &[], &[&SOA[..], &proof[..]].concat());
}

#[test]
fn b8_ds_child_zone_no_data() {
    let reply = ask(&nsec(), "example.", RType::DS, do_bit());
    let proof = ["example. nsec", "example. rrsig nsec"];
    expect(&reply, 0, &[], &[&SOA[..], &proof[..]].concat());
}

#[test]
fn empty_non_terminal_and_wildcard_blocked_by_it() {
    // y.w.example exists only as the parent of x.y.w.example: its
    // covering NSEC proves it has no data.
    let reply = ask(&nsec(), "y.w.example.", RType::A, do_bit());
    let proof = ["x.w.example. nsec", "x.w.example. rrsig nsec"];
    expect(&reply, 0, &[], &[&SOA[..], &proof[..]].concat());
    let reply = ask(&nsec(), "a.y.w.example.", RType::AAAA, do_bit());
    expect(&reply, 3, &[], &[&SOA[..], &proof[..]].concat());
}

#[test]
fn wildcard_cname_chain_to_a_name_error() {
    let reply = ask(&nsec(), "a.to-nxdomain.example.", RType::A, do_bit());
    expect(
        &reply,
        3,
        &[
            "a.to-nxdomain.example. cname",
            "a.to-nxdomain.example. rrsig cname",
        ],
        &[
            &SOA[..],
            &[
                "*.to-nxdomain.example. nsec",
                "*.to-nxdomain.example. rrsig nsec",
                "ns2.example. nsec",
                "ns2.example. rrsig nsec",
                "example. nsec",
                "example. rrsig nsec",
            ][..],
        ]
        .concat(),
    );
}

//--- The same zone with NSEC3 (RFC 5155 section 7.2)

#[test]
fn nsec3_name_error_has_the_closest_encloser_proof() {
    let reply = ask(&nsec3(), "ml.example.", RType::A, do_bit());
    let proof = [
        // matches the closest encloser, example.
        "q0tt0cnbos6ecvmbdbacq2jbfi6u53g5.example. nsec3",
        // covers the next closer name, ml.example.
        "bgbqcjj2hgnu20verkkalgns4c0befol.example. nsec3",
        // covers *.example.
        "r86ivoiu3c2pog7c65erglgdhaibhk6q.example. nsec3",
    ];
    let sigs: Vec<String> = proof
        .iter()
        .map(|p| p.replace(" nsec3", " rrsig nsec3"))
        .collect();
    let sigs: Vec<&str> = sigs.iter().map(String::as_str).collect();
    expect(&reply, 3, &[], &[&SOA[..], &proof[..], &sigs[..]].concat());
}

#[test]
fn nsec3_no_data_wildcard_and_referrals() {
    let catalog = nsec3();
    let reply = ask(&catalog, "ns1.example.", RType::MX, do_bit());
    let proof = ["j795u0ukq5051m5m57fs8u3n0h9qibke.example. nsec3"];
    assert_eq!(shape(&reply.authority).len(), 4, "{reply:#?}");
    assert!(shape(&reply.authority).contains(&proof[0].to_string()));

    // B.7-style wildcard NODATA: closest encloser, next closer, wildcard.
    let reply = ask(&catalog, "a.z.w.example.", RType::AAAA, do_bit());
    let authority = shape(&reply.authority);
    for owner in [
        "6tf0e8mesjjqljkv6kamrv3rn66i16id.example. nsec3",
        "4riu8qjs32lf6obvil9koplnld2dbvjn.example. nsec3",
        "q1p62jkk9753oa2fva0cc5ep89ksmlcg.example. nsec3",
    ] {
        assert!(
            authority.contains(&owner.to_string()),
            "{owner} in {authority:?}"
        );
    }
    assert_eq!(authority.len(), 8);

    // Wildcard answer: only the next closer name's cover.
    let reply = ask(&catalog, "a.z.w.example.", RType::MX, do_bit());
    assert_eq!(
        shape(&reply.authority),
        [
            "4riu8qjs32lf6obvil9koplnld2dbvjn.example. nsec3",
            "4riu8qjs32lf6obvil9koplnld2dbvjn.example. rrsig nsec3"
        ]
    );

    // Referral to an unsigned zone: the NSEC3 matching the cut.
    let reply = ask(&catalog, "mc.b.example.", RType::MX, do_bit());
    assert!(shape(&reply.authority)
        .contains(&"4jid9hemjtdkkj18lvc29jmsmjhiosva.example. nsec3".to_string()));

    // NSEC3 owners are not names of the zone (Knot keeps them apart).
    let reply = ask(
        &catalog,
        "q0tt0cnbos6ecvmbdbacq2jbfi6u53g5.example.",
        RType::NSEC3,
        do_bit(),
    );
    assert_eq!(reply.rcode, 3);
}

//--- Opt-out (RFC 5155 sections 7.2.4, 7.2.7)

#[test]
fn opt_out_insecure_delegation() {
    let catalog = Catalog::new(vec![zone_text(
        "example.",
        tern_testkit::NSEC3_OPT_OUT_ZONE,
    )]);
    let apex = "3msev9usmd4br9s97v51r2tdvmr9iqo1.example. nsec3";
    // The referral: no DS, no NSEC3 for the cut; the apex is the closest
    // provable encloser, and its NSEC3 also covers the next closer name
    // (the cut), with the opt-out flag.
    let reply = ask(&catalog, "x.insecure.example.", RType::A, do_bit());
    assert_eq!(
        shape(&reply.authority),
        sorted(&["insecure.example. ns", apex])
    );
    let reply = ask(&catalog, "insecure.example.", RType::DS, do_bit());
    assert_eq!(
        shape(&reply.authority),
        sorted(&[apex, "example. soa", "example. rrsig soa"])
    );
    // An empty non-terminal above an insecure delegation has no NSEC3
    // either: the apex, and the cover of ent.example.
    let reply = ask(&catalog, "b.ent.example.", RType::A, do_bit());
    assert_eq!(
        shape(&reply.authority),
        sorted(&[
            apex,
            "example. soa",
            "example. rrsig soa",
            "kncb8asp44gj31sjvi5s29d8q49gb30r.example. nsec3"
        ])
    );
    // A secure delegation: DS in the referral.
    let reply = ask(&catalog, "x.secure.example.", RType::A, do_bit());
    assert_eq!(
        shape(&reply.authority),
        sorted(&["secure.example. ds", "secure.example. ns"])
    );
    // NXDOMAIN: apex match, next closer cover, wildcard cover.
    let reply = ask(&catalog, "nx.example.", RType::A, do_bit());
    assert_eq!(
        shape(&reply.authority),
        sorted(&[
            apex,
            "8agm2crj5dm2hpi9emkk214ccj3738k9.example. nsec3",
            "9kqnrpnekplbct2m3k9jh3cljviok2b5.example. nsec3",
            "example. soa",
            "example. rrsig soa"
        ])
    );
}

//--- Flags, DO=0, types asked for directly, truncation

#[test]
fn unsigned_zones_get_no_dnssec_processing() {
    // An unsigned zone with a DS at a cut: no DS in referrals even with
    // DO=1 (Knot, NSD); asked for directly, the DS is answered.
    let zone = "@ 300 IN SOA ns hostmaster 1 3600 900 604800 300\n\
                @ 300 IN NS ns\n\
                ns 300 IN A 192.0.2.1\n\
                sub 300 IN NS ns.elsewhere.test.\n\
                sub 300 IN DS 1 13 2 abcdef01\n";
    let catalog = Catalog::new(vec![zone_text("example.", zone)]);
    let reply = ask(&catalog, "x.sub.example.", RType::A, do_bit());
    expect(&reply, 0, &[], &["sub.example. ns"]);
    let reply = ask(&catalog, "sub.example.", RType::DS, do_bit());
    expect(&reply, 0, &["sub.example. ds"], &[]);
    let reply = ask(&catalog, "nx.example.", RType::A, do_bit());
    expect(&reply, 3, &[], &["example. soa"]);
}

#[test]
fn do_zero_has_no_dnssec_records_unless_asked_for() {
    let catalog = nsec();
    let reply = ask(&catalog, "ml.example.", RType::A, Ask::default());
    expect(&reply, 3, &[], &["example. soa"]);
    let reply = ask(&catalog, "x.w.example.", RType::MX, Ask::no_edns());
    expect(&reply, 0, &["x.w.example. mx"], &[]);
    assert_eq!(
        shape(&reply.additional),
        ["xx.example. a", "xx.example. aaaa"]
    );
    // Asked for by type: answered, without RRSIGs.
    let reply = ask(&catalog, "example.", RType::DNSKEY, Ask::default());
    expect(&reply, 0, &["example. dnskey", "example. dnskey"], &[]);
    let reply = ask(&catalog, "ns1.example.", RType::NSEC, Ask::default());
    expect(&reply, 0, &["ns1.example. nsec"], &[]);
    // RRSIG: the signatures of the lowest type only (Knot; NSD sends all).
    let reply = ask(&catalog, "ns1.example.", RType::RRSIG, Ask::default());
    expect(&reply, 0, &["ns1.example. rrsig a"], &[]);
    let reply = ask(&catalog, "example.", RType::RRSIG, do_bit());
    expect(&reply, 0, &["example. rrsig ns"], &[]);
}

#[test]
fn rrsig_ttl_is_the_ttl_of_the_rrset() {
    // NSEC3PARAM has TTL 0 in this zone, the other apex RRsets 3600.
    let reply = ask(&nsec3(), "example.", RType::NSEC3PARAM, do_bit());
    assert!(
        reply.answer.iter().all(|l| l.starts_with("example. 0 ")),
        "{reply:#?}"
    );
    assert_eq!(reply.answer.len(), 2);
}

#[test]
fn ad_is_never_set_and_cd_is_copied() {
    let catalog = nsec();
    let mut query = crate::support::query("x.w.example.", RType::MX, do_bit());
    query[3] |= 0x30; // AD and CD
    let reply =
        crate::support::send(&catalog, &query, Transport::Udp, &Default::default()).unwrap();
    assert_eq!(reply.raw[3] & 0x30, 0x10, "AD clear, CD copied");
    assert_eq!(shape(&reply.answer).len(), 2);
    query[3] &= !0x10;
    let reply =
        crate::support::send(&catalog, &query, Transport::Udp, &Default::default()).unwrap();
    assert_eq!(
        reply.raw[3] & 0x30,
        0,
        "no CD in the query, none in the answer"
    );
}

#[test]
fn signed_answers_truncate_rather_than_lose_signatures() {
    let catalog = nsec();
    // Two 1024-bit DNSKEYs and two RSA signatures do not fit in 512
    // octets: TC, and no DNSKEY without its RRSIGs.
    let small = Ask {
        edns: Some((512, true, 0)),
        ..Ask::default()
    };
    let reply = ask(&catalog, "example.", RType::DNSKEY, small);
    assert!(reply.tc);
    assert!(reply.answer.is_empty(), "{reply:#?}");
    // Over TCP the whole answer goes out.
    let tcp = Ask {
        transport: Transport::Tcp,
        ..small
    };
    let reply = ask(&catalog, "example.", RType::DNSKEY, tcp);
    assert!(!reply.tc);
    assert_eq!(reply.answer.len(), 4);
    // A negative answer cut short keeps whole signed RRsets only.
    let reply = ask(&catalog, "ml.example.", RType::A, small);
    assert!(reply.tc);
    let authority = shape(&reply.authority);
    for line in &authority {
        if !line.contains(" rrsig ") {
            let (owner, rtype) = line.split_once(' ').unwrap();
            assert!(
                authority.contains(&format!("{owner} rrsig {rtype}")),
                "{authority:?}"
            );
        }
    }
    // Additional-section signatures may be left out (RFC 4035 section
    // 3.1.1) without TC: records first, then as many RRSIG sets as fit.
    let reply = ask(&catalog, "x.w.example.", RType::MX, small);
    assert!(!reply.tc);
    assert_eq!(shape(&reply.answer).len(), 2);
    assert!(shape(&reply.additional).starts_with(&["xx.example. a".to_string()]));
}
