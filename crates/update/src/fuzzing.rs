//! Fuzz target body for UPDATE messages. Compiled by every build (the
//! rustls `msgs::fuzzing` pattern); `crates/fuzz/fuzz_targets/update.rs`
//! calls it and the unit tests run it over the committed seed corpus. Not
//! a stable API.
//!
//! The input is one message, applied to a small zone `example.` (a SOA,
//! two apex NS, addresses, a CNAME, a DNAME, a delegation with glue, a
//! TXT) by an unsigned requester every rule allows. The message's ID picks
//! the options: its low bit makes the zone signed, its next bit caps the
//! zone at four records more than it has.
//!
//! What must hold, whatever the bytes: no panic; an RCODE, or NOERROR with
//! nothing changed, leaves the zone's records exactly as they were; a
//! difference starts at the old SOA, ends at the new one with a higher
//! serial, and turns the old records into the new ones; the zone keeps
//! one SOA and at least one apex NS, and no name has a CNAME beside other
//! data. The same message applied twice to the zone laid over itself
//! ([`ZoneRecords::over`], as the server keeps a zone: its served version
//! and the changes), the second time over the first's changes, answers
//! the same and leaves the same records as applied to the zone held whole.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use tern_wire::name::NameBuf;
use tern_wire::types::{RType, Rcode};
use tern_zone::{parse_bytes, NoInclude, Options};

use crate::engine::{update as apply_update, Access, UpdateOptions};
use crate::message::UpdateMessage;
use crate::policy::{Requester, UpdateRule};
use crate::rdata::serial_higher;
use crate::store::ZoneRecords;

/// The zone every input updates.
const ZONE: &[u8] = b"$TTL 300\n\
@ SOA ns1 hostmaster 7 3600 900 604800 300\n\
@ NS ns1\n\
@ NS ns2\n\
ns1 A 192.0.2.1\n\
ns2 AAAA 2001:db8::2\n\
www A 192.0.2.80\n\
www TXT \"hello\"\n\
alias CNAME www\n\
old DNAME example.net.\n\
sub NS ns.sub\n\
ns.sub A 192.0.2.53\n\
a.b.c TXT \"deep\"\n";

/// The zone as the fuzz target starts from (scanned once, then cloned).
pub fn zone() -> ZoneRecords {
    static SCANNED: OnceLock<ZoneRecords> = OnceLock::new();
    SCANNED.get_or_init(scan_zone).clone()
}

fn scan_zone() -> ZoneRecords {
    let origin = NameBuf::from_text(b"example.", None).expect("a valid name");
    let parsed = parse_bytes(
        ZONE,
        Path::new("fuzz"),
        origin.as_name(),
        &Options::default(),
        &mut NoInclude,
    )
    .expect("the fuzz zone scans");
    ZoneRecords::from_records(origin.as_name(), &parsed.records).expect("the fuzz zone is whole")
}

/// A zone's records as a multiset: (owner, type, TTL, RDATA) -> count.
type Contents = BTreeMap<(Vec<u8>, RType, u32, Vec<u8>), usize>;

fn contents(zone: &ZoneRecords, with_soa: bool) -> Contents {
    let mut all = Contents::new();
    zone.for_each_record(|owner, rtype, ttl, rdata| {
        if rtype == RType::SOA && !with_soa {
            return;
        }
        *all.entry((
            owner.to_lower().as_bytes().to_vec(),
            rtype,
            ttl,
            rdata.to_vec(),
        ))
        .or_default() += 1;
    });
    all
}

/// `message` applied twice to the zone held whole and to the zone laid
/// over itself: the same outcomes, the same records.
fn check_over(message: &UpdateMessage, access: &Access<'_>, options: &UpdateOptions) {
    let mut whole = zone();
    let mut over =
        ZoneRecords::over(whole.origin(), Arc::new(zone())).expect("the zone has its SOA");
    for _ in 0..2 {
        let expected = apply_update(&mut whole, message, access, options);
        let got = apply_update(&mut over, message, access, options);
        assert_eq!(
            expected, got,
            "laid over a base, the update answers otherwise"
        );
        assert_eq!(contents(&whole, true), contents(&over, true));
        assert_eq!(whole.len(), over.len());
    }
}

/// Applies `data` as an UPDATE to [`zone`] and checks the oracle (see the
/// module documentation); returns the RCODE answered.
pub fn update(data: &[u8]) -> Rcode {
    let mut zone = zone();
    let message = match UpdateMessage::parse(data) {
        Ok(message) => message,
        Err(rcode) => {
            assert!(
                matches!(rcode, Rcode::FORMERR | Rcode::NOTAUTH | Rcode::REFUSED),
                "{rcode:?}"
            );
            return rcode;
        }
    };
    let before = contents(&zone, true);
    let serial = zone.serial();
    let options = UpdateOptions {
        max_zone_records: if message.id & 2 != 0 {
            zone.len() + 4
        } else {
            usize::MAX
        },
        signed: message.id & 1 != 0,
    };
    let rules = [UpdateRule::default()];
    let access = Access {
        rules: &rules,
        requester: Requester {
            key: None,
            address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        },
    };
    let outcome = apply_update(&mut zone, &message, &access, &options);
    check_over(&message, &access, &options);
    let after = contents(&zone, true);
    assert_eq!(zone.len(), zone.iter().count());
    let apex = zone.node(zone.origin_key()).expect("the apex stays");
    assert_eq!(apex.rrset(RType::SOA).map(|soa| soa.records.len()), Some(1));
    assert!(apex.has(RType::NS), "the last apex NS was deleted");
    let mut checked = 0;
    for (key, node) in zone.nodes() {
        assert!(
            !(node.has(RType::CNAME) && node.has_other_than_cname()),
            "{:?}",
            key.name()
        );
        checked += 1;
    }
    assert!(checked > 0);
    match outcome {
        Err(rcode) => {
            assert_eq!(before, after, "{rcode:?} changed the zone");
            rcode
        }
        Ok(None) => {
            assert_eq!(
                before, after,
                "an update without a difference changed the zone"
            );
            Rcode::NOERROR
        }
        Ok(Some(difference)) => {
            assert_eq!(difference.from_serial(), serial);
            assert!(serial_higher(difference.to_serial(), serial));
            assert_eq!(zone.serial(), difference.to_serial());
            let mut replayed = before;
            replayed.retain(|(_, rtype, _, _), _| *rtype != RType::SOA);
            for record in &difference.deleted {
                let entry = (
                    record.owner.to_vec(),
                    record.rtype,
                    record.ttl,
                    record.rdata.to_vec(),
                );
                let count = replayed
                    .get_mut(&entry)
                    .expect("a deleted record was there");
                *count -= 1;
                if *count == 0 {
                    replayed.remove(&entry);
                }
            }
            for record in &difference.added {
                let entry = (
                    record.owner.to_vec(),
                    record.rtype,
                    record.ttl,
                    record.rdata.to_vec(),
                );
                *replayed.entry(entry).or_default() += 1;
            }
            assert_eq!(
                replayed,
                contents(&zone, false),
                "the difference does not replay"
            );
            Rcode::NOERROR
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every seed of `crates/fuzz/corpus/update/` passes the oracle, and
    /// enough of them are applied.
    #[test]
    fn update_seeds() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/update");
        let mut answered = std::collections::HashMap::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let data = std::fs::read(entry.unwrap().path()).unwrap();
            *answered.entry(super::update(&data).0).or_insert(0) += 1;
        }
        assert!(answered.get(&0).copied().unwrap_or(0) >= 5, "{answered:?}");
        assert!(answered.len() >= 5, "too few kinds of answer: {answered:?}");
    }
}
