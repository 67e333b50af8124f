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

/// An UPDATE of `example.`: each of `ops` an owner (labels under the
/// zone), its type, its class (ANY: delete the RRset), its TTL and RDATA.
fn update_message(ops: &[(&str, u16, u16, u32, &[u8])]) -> Vec<u8> {
    let mut m = vec![0, 1, 0x28, 0, 0, 1, 0, 0];
    m.extend_from_slice(&(ops.len() as u16).to_be_bytes());
    m.extend_from_slice(&[0, 0]);
    m.extend_from_slice(b"\x07example\x00\x00\x06\x00\x01");
    for (owner, rtype, class, ttl, rdata) in ops {
        for label in owner.split('.') {
            m.push(label.len() as u8);
            m.extend_from_slice(label.as_bytes());
        }
        m.extend_from_slice(&[0xc0, 12]);
        m.extend_from_slice(&rtype.to_be_bytes());
        m.extend_from_slice(&class.to_be_bytes());
        m.extend_from_slice(&ttl.to_be_bytes());
        m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        m.extend_from_slice(rdata);
    }
    m
}

/// An NSEC zone signed by others (an RRSIG over its SOA, no keys: tern
/// does not sign it) is the engine's base as served (`records_over`), so
/// the engine's exact check of names below a name asks the served
/// version's list of names (`Zone::any_name_below`, which only such
/// zones reach, decision 0026): a DNAME added at `x` in the UPDATE that
/// deletes both names below it (`a.x`, `b.x`) is added; added with only
/// `a.x` deleted, `b.x` still below it, it is ignored (RFC 6672: no
/// DNAME above names).
#[test]
fn a_dname_over_names_an_update_deletes_reads_the_served_list() {
    let origin = tern_wire::name::NameBuf::from_text(b"example.", None).unwrap();
    let text = format!(
        "{}@ NSEC a.x NS SOA RRSIG NSEC\na.x A 198.51.100.7\nb.x A 198.51.100.8\n",
        zone_text(0, 1, true)
    );
    let (records, _) = records_of(&text);
    let zone = Arc::new(zone_of(origin.as_name(), &records).unwrap());
    assert!(zone.keeps_name_order() && !zone.has_nsec3());
    let dname_added = |ops: &[(&str, u16, u16, u32, &[u8])]| {
        let mut over = records_over(&zone).unwrap();
        let message = UpdateMessage::parse(&update_message(ops)).unwrap();
        let access = Access {
            rules: &[UpdateRule::default()],
            requester: Requester {
                key: None,
                address: "127.0.0.1".parse().unwrap(),
            },
        };
        let difference =
            tern_update::update(&mut over, &message, &access, &UpdateOptions::default())
                .unwrap()
                .unwrap();
        convert(difference)
            .added
            .iter()
            .any(|record| record.rtype == RType::DNAME)
    };
    let target: &[u8] = b"\x07example\x03net\x00";
    let (a, dname) = (RType::A.0, RType::DNAME.0);
    assert!(dname_added(&[
        ("a.x", a, 255, 0, &[]),
        ("b.x", a, 255, 0, &[]),
        ("x", dname, 1, 60, target),
    ]));
    assert!(!dname_added(&[
        ("a.x", a, 255, 0, &[]),
        ("x", dname, 1, 60, target)
    ]));
}
