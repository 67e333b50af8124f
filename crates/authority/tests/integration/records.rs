//! `Zone::next_record`: a walk over a built zone gives back every record
//! that went in, once (what a zone transfer sends).

use std::collections::BTreeSet;
use std::path::Path;

use tern_authority::{RecordCursor, Zone};
use tern_wire::name::NameBuf;
use tern_wire::types::RType;
use tern_zone::ParsedZone;

use crate::support::corpora;

/// (lowercased owner, type, TTL, RDATA); RRSIGs with no TTL, since the
/// zone gives them their RRset's TTL (as answers do).
type Key = (Vec<u8>, u16, Option<u32>, Vec<u8>);

fn parse(origin: &str, text_or_path: Result<&str, &Path>) -> ParsedZone {
    let name = NameBuf::from_text(origin.as_bytes(), None).unwrap();
    let options = tern_zone::Options::default();
    match text_or_path {
        Ok(text) => tern_zone::parse_bytes(
            text.as_bytes(),
            Path::new("test.zone"),
            name.as_name(),
            &options,
            &mut tern_zone::NoInclude,
        ),
        Err(path) => tern_zone::parse_file(path, name.as_name(), &options),
    }
    .unwrap_or_else(|e| panic!("{e:?}"))
}

fn key(owner: &[u8], rtype: RType, ttl: u32, rdata: &[u8]) -> Key {
    let ttl = (rtype != RType::RRSIG).then_some(ttl);
    (owner.to_ascii_lowercase(), rtype.0, ttl, rdata.to_vec())
}

/// Every record of `zone` by walking it; fails on a record given twice.
fn walk(zone: &Zone) -> BTreeSet<Key> {
    let mut cursor = RecordCursor::default();
    let mut seen = BTreeSet::new();
    let mut count = 0;
    while let Some(record) = zone.next_record(&mut cursor) {
        let k = key(
            record.owner.as_bytes(),
            record.rtype,
            record.ttl,
            record.rdata,
        );
        assert!(seen.insert(k.clone()), "given twice: {k:?}");
        count += 1;
    }
    assert_eq!(count, zone.record_count(), "record_count");
    assert!(
        zone.next_record(&mut cursor).is_none(),
        "the walk stays ended"
    );
    seen
}

fn check(origin: &str, parsed: &ParsedZone) {
    let zone = tern_testkit::build(origin, parsed);
    let expected: BTreeSet<Key> = parsed
        .records
        .iter()
        .map(|r| key(r.owner.as_bytes(), r.rtype, r.ttl, &r.rdata))
        .collect();
    let walked = walk(&zone);
    assert_eq!(walked, expected, "{origin}");
    let soa = zone.soa_record();
    assert_eq!(
        (soa.rtype, soa.owner.as_bytes()),
        (RType::SOA, zone.origin().as_bytes())
    );
    assert!(walked.contains(&key(soa.owner.as_bytes(), RType::SOA, soa.ttl, soa.rdata)));
}

#[test]
fn every_record_once_from_signed_zones() {
    for (origin, file) in [
        (
            "example.",
            "knot/tests-extra__tests__basic__nsec__data__example.zone.nsec",
        ),
        (
            "example.",
            "knot/tests-extra__tests__basic__nsec3__data__example.zone.nsec3",
        ),
    ] {
        check(origin, &parse(origin, Err(&corpora().join(file))));
    }
}

#[test]
fn every_record_once_with_delegations_glue_wildcards_and_case() {
    let text = "
@ 300 IN SOA ns hostmaster 1 3600 900 604800 300
@ 300 IN NS ns
NS 300 IN A 192.0.2.53
Sub 300 IN NS ns.sub
ns.SUB 300 IN A 192.0.2.54
ns.sub 300 IN AAAA 2001:db8::54
* 60 IN TXT \"wild\"
a.b.c 60 IN A 192.0.2.1
a.b.c 60 IN A 192.0.2.2
a.b.c 120 IN MX 10 Mail.Example.
";
    check("example.", &parse("example.", Ok(text)));
}
