//! One update's heap cost at two zone sizes, measured by dhat (one test
//! in this binary: dhat's profiler is global). Adding a TXT record and
//! deleting an A record must allocate as much in a zone of 100,000 names
//! as in one of 1,000: a representation that copied, rebuilt or walked the
//! zone per update would allocate in proportion to it.

use std::net::{IpAddr, Ipv4Addr};

use tern_update::{
    update, Access, Requester, UpdateMessage, UpdateOptions, UpdateRule, ZoneRecords,
};
use tern_wire::name::NameBuf;
use tern_wire::types::{RClass, RType};
use tern_zone::Record;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn name(text: &str, origin: Option<&NameBuf>) -> NameBuf {
    NameBuf::from_text(text.as_bytes(), origin.map(|o| o.as_name())).unwrap()
}

/// `example.` with a SOA, an NS and `names` names of one A record each.
fn zone(names: usize) -> ZoneRecords {
    let origin = name("example.", None);
    let mut soa = name("ns1", Some(&origin)).as_bytes().to_vec();
    soa.extend_from_slice(name("hostmaster", Some(&origin)).as_bytes());
    for field in [7u32, 3600, 900, 604_800, 300] {
        soa.extend_from_slice(&field.to_be_bytes());
    }
    let record = |owner: NameBuf, rtype, rdata: Vec<u8>| Record {
        owner,
        class: RClass::IN,
        ttl: 300,
        rtype,
        rdata,
        location: Default::default(),
    };
    let mut records = vec![
        record(origin, RType::SOA, soa),
        record(
            origin,
            RType::NS,
            name("ns1", Some(&origin)).as_bytes().to_vec(),
        ),
    ];
    for i in 0..names {
        let owner = name(&format!("host{i}"), Some(&origin));
        records.push(record(owner, RType::A, vec![192, 0, 2, i as u8]));
    }
    ZoneRecords::from_records(origin.as_name(), &records).unwrap()
}

/// Adds `_acme-challenge.host7` TXT and deletes `host5` A 192.0.2.5.
fn message() -> Vec<u8> {
    let mut out = vec![0x12, 0x34, 0x28, 0x00, 0, 1, 0, 0, 0, 2, 0, 0];
    out.extend_from_slice(b"\x07example\x00\x00\x06\x00\x01");
    out.extend_from_slice(b"\x0f_acme-challenge\x05host7\xc0\x0c");
    out.extend_from_slice(&[0, 16, 0, 1, 0, 0, 0, 60, 0, 6, 5]);
    out.extend_from_slice(b"token");
    out.extend_from_slice(b"\x05host5\xc0\x0c");
    out.extend_from_slice(&[0, 1, 0, 254, 0, 0, 0, 0, 0, 4, 192, 0, 2, 5]);
    out
}

#[test]
fn one_update_allocates_the_same_at_both_sizes() {
    // The zones are built before the profiler starts: only the updates
    // are measured.
    let mut zones = [zone(1_000), zone(100_000)];
    let bytes = message();
    let rules = [UpdateRule::default()];
    let access = Access {
        rules: &rules,
        requester: Requester {
            key: None,
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        },
    };
    let _profiler = dhat::Profiler::builder().testing().build();
    let mut costs = Vec::new();
    for zone in &mut zones {
        let before = dhat::HeapStats::get();
        let message = UpdateMessage::parse(&bytes).unwrap();
        let difference = update(zone, &message, &access, &UpdateOptions::default())
            .unwrap()
            .expect("the update changes the zone");
        drop((message, difference));
        let after = dhat::HeapStats::get();
        costs.push((
            after.total_blocks - before.total_blocks,
            after.total_bytes - before.total_bytes,
        ));
    }
    let (small, large) = (costs[0], costs[1]);
    assert!(small.0 > 0);
    // Equal up to a B-tree node split or two.
    dhat::assert!(large.0 <= small.0 + 4, "blocks per update: {costs:?}");
    dhat::assert!(large.1 <= small.1 + 4096, "bytes per update: {costs:?}");
}
