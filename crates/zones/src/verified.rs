//! For tests and the signed-update fuzz target ([`crate::fuzzing`]): the
//! signatures a new signed version made or kept at the owners that changed
//! verify, cryptographically, with its apex DNSKEYs
//! over its RRsets (an RRSIG kept over data that changed, or made over
//! other data, fails). The tests that compare a version with a whole
//! signing compare signatures by type covered and key tag only (ECDSA
//! signatures differ from one signing to the next).

use std::collections::{BTreeMap, BTreeSet};

use tern_authority::{RecordCursor, Zone};
use tern_wire::name::Name;
use tern_wire::types::RType;

/// A served version's records: (owner lowercased, type, TTL, RDATA).
type Records = BTreeSet<(Vec<u8>, u16, u32, Vec<u8>)>;

fn records(zone: &Zone) -> Records {
    let mut cursor = RecordCursor::default();
    let mut out = Records::new();
    while let Some(record) = zone.next_record(&mut cursor) {
        out.insert((
            record.owner.to_lower().as_bytes().to_vec(),
            record.rtype.0,
            record.ttl,
            record.rdata.to_vec(),
        ));
    }
    out
}

/// Asserts that every RRSIG of `after` at an owner whose records
/// (signatures included) differ from `before`'s verifies with one of
/// `after`'s apex DNSKEYs over `after`'s RRset of the type it covers, and
/// is valid now; the number of RRSIGs verified.
pub(crate) fn assert_changed_rrsigs_verify(before: &Zone, after: &Zone) -> usize {
    let old = records(before);
    let new = records(after);
    let owners: BTreeSet<&[u8]> = old
        .symmetric_difference(&new)
        .map(|record| record.0.as_slice())
        .collect();
    let apex = after.origin().to_lower().as_bytes().to_vec();
    let keys: Vec<&[u8]> = new
        .iter()
        .filter(|record| record.0 == apex && record.1 == RType::DNSKEY.0)
        .map(|record| record.3.as_slice())
        .collect();
    assert!(!keys.is_empty(), "no apex DNSKEY");
    let mut rrsets: BTreeMap<(&[u8], u16), Vec<&[u8]>> = BTreeMap::new();
    for record in &new {
        if owners.contains(record.0.as_slice()) && record.1 != RType::RRSIG.0 {
            rrsets
                .entry((record.0.as_slice(), record.1))
                .or_default()
                .push(record.3.as_slice());
        }
    }
    let now = crate::unix_time() as u32;
    let mut verified = 0;
    for record in new.iter().filter(|record| record.1 == RType::RRSIG.0) {
        if !owners.contains(record.0.as_slice()) {
            continue;
        }
        let owner = Name::from_wire(&record.0).unwrap();
        let covered = u16::from_be_bytes([record.3[0], record.3[1]]);
        let rdata = rrsets
            .get(&(record.0.as_slice(), covered))
            .unwrap_or_else(|| panic!("{owner}: an RRSIG over {covered}, no such RRset"));
        assert!(
            keys.iter()
                .any(|key| tern_dnssec::fuzzing::rrsig_verifies(owner, rdata, &record.3, key, now)),
            "{owner}: the RRSIG over {} does not verify",
            RType(covered)
        );
        verified += 1;
    }
    verified
}
