//! What [`next_version`] reports of the order of names a signed zone
//! keeps (`tern_authority::Zone::names_below`).

use std::path::Path;

use super::*;

fn zone_text(hosts: usize, serial: u32, signed: bool) -> String {
    let mut text = format!(
        "$TTL 300\n@ SOA ns host {serial} 3600 900 604800 300\n@ NS ns\nns A 198.51.100.1\n"
    );
    if signed {
        text.push_str("@ RRSIG SOA 13 1 3600 20300101000000 20200101000000 1 example. AAAA\n");
    }
    for i in 0..hosts {
        text.push_str(&format!("h{i} A 198.51.100.{}\n", i % 250));
    }
    text
}

fn records_of(text: &str) -> (ZoneRecords, Vec<tern_zone::Record>) {
    let origin = tern_wire::name::NameBuf::from_text(b"example.", None).unwrap();
    let parsed = tern_zone::parse_bytes(
        text.as_bytes(),
        Path::new("z"),
        origin.as_name(),
        &tern_zone::Options::default(),
        &mut tern_zone::NoInclude,
    )
    .unwrap();
    let records = ZoneRecords::from_records(origin.as_name(), &parsed.records).unwrap();
    (records, parsed.records)
}

/// An UPDATE that adds an RRSIG over the SOA of an unsigned zone (which
/// the engine takes: tern does not sign the zone) signs it: the version
/// after it keeps the order of its names, built whole, and the work
/// `next_version` reports counts the list's entries (at least a name
/// each, at 1,000 and at 4,000 names: without the list's work in it, a
/// few entries, the zone having no NSEC records). A TXT added next copies
/// a part or two of the list at both sizes (at most 512 entries).
#[test]
fn an_update_that_signs_a_zone_reports_its_list_of_names() {
    let origin = tern_wire::name::NameBuf::from_text(b"example.", None).unwrap();
    let mut costs = Vec::new();
    for hosts in [1_000, 4_000] {
        let (before, _) = records_of(&zone_text(hosts, 1, false));
        let zone = zone_of(origin.as_name(), &before).unwrap();
        assert!(!zone.keeps_name_order());
        let (after, parsed) = records_of(&zone_text(hosts, 2, true));
        let rrsig = parsed
            .iter()
            .find(|record| record.rtype == RType::RRSIG)
            .unwrap();
        let soa = |serial: u32| {
            let (_, parsed) = records_of(&zone_text(0, serial, false));
            let soa = parsed.iter().find(|r| r.rtype == RType::SOA).unwrap();
            (soa.ttl, soa.rdata.to_vec())
        };
        let difference = Difference {
            from_soa: soa(1),
            to_soa: soa(2),
            deleted: Vec::new(),
            added: vec![Record {
                owner: origin.as_bytes().to_vec(),
                rtype: RType::RRSIG,
                ttl: rrsig.ttl,
                rdata: rrsig.rdata.to_vec(),
            }],
        };
        let (signed, work) = next_version(
            origin.as_name(),
            &zone,
            &after,
            std::slice::from_ref(&difference),
        )
        .unwrap();
        assert!(signed.keeps_name_order());
        assert!(
            work.nsec_moved >= signed.node_count() && signed.node_count() > hosts,
            "{work:?}, {} names",
            signed.node_count()
        );
        // A name added to the signed zone: a part of the list.
        let (more, parsed) = records_of(&format!("{}new TXT \"x\"\n", zone_text(hosts, 3, true)));
        let txt = parsed.iter().find(|r| r.rtype == RType::TXT).unwrap();
        let difference = Difference {
            from_soa: soa(2),
            to_soa: soa(3),
            deleted: Vec::new(),
            added: vec![Record {
                owner: txt.owner.as_bytes().to_vec(),
                rtype: RType::TXT,
                ttl: txt.ttl,
                rdata: txt.rdata.to_vec(),
            }],
        };
        let (_, added) = next_version(
            origin.as_name(),
            &signed,
            &more,
            std::slice::from_ref(&difference),
        )
        .unwrap();
        costs.push(added.nsec_moved);
    }
    eprintln!("a name added to a signed zone, entries copied: {costs:?}");
    // A part or two of the list (up to 256 entries each), not the list
    // (1,000 and 4,000 entries).
    for cost in costs {
        assert!(cost > 0 && cost <= 512, "{cost}");
    }
}
