//! The checks of a reloaded zone file that cost its change: when a signed
//! zone's file is loaded again and its records differ from the previous
//! load's (which loaded, so had no errors) in a few records
//! ([`crate::edited::diff`]), only the owners of those records, their
//! ancestors and the apex are checked ([`tern_zone::check::check_zone`]
//! over them), and the TTLs of their RRsets alone are looked at for
//! settling.
//!
//! Each error `check_zone` finds is at one owner (a CNAME beside other
//! data, two CNAMEs or DNAMEs, a record out of the zone), at the apex (its
//! SOA and NS), or at an owner below a DNAME (the DNAME an ancestor): the
//! owners checked here hold every error the whole file could have that
//! the previous load did not. The whole file is checked instead (when in
//! doubt) when the records that differ are:
//!
//! - many (`diff` gives up), or more than [`MAX_CHECKED_OWNERS`] owners;
//! - of a type whose check relates owners: NS and DS at the apex, a DNAME
//!   at the apex, or DNSSEC records (the NSEC and NSEC3 chain checks); a
//!   DNAME below the apex is checked with the names the file holds below
//!   its owner (records below a DNAME, an error; found in the pass over
//!   the types, comparing an owner only when a DNAME changed and the
//!   owner is longer than the shortest DNAME owner), unless more than
//!   [`MAX_CHECKED_DNAMES`] DNAMEs differ; an NS or DS below the apex (a
//!   delegation) is checked with
//!   the owners of its NS targets in the zone (missing glue, a warning;
//!   occluded data below a cut is silent), and addresses (A, AAAA) that
//!   differ with the owners of the file's NS records that name them (glue
//!   added, changed or removed) and the owners of every in-zone target of
//!   those owners' NS records; more of those than [`MAX_CHECKED_OWNERS`]
//!   has the whole file checked;
//! - at a wildcard (the glue of an NS target may be its address);
//!
//! or when the file holds NSEC, NSEC3 or NSEC3PARAM records at all (the
//! chain checks read every owner). Warnings at the owners not checked
//! were reported by the previous load and are not repeated.
//!
//! The apex is checked with the owners of its NS targets in the zone (its
//! glue; else it would look missing).
//!
//! Bound: [`crate::edited::diff`], a pass over the new records' types (and
//! the NS records' owners and targets; when DNAMEs differ, each owner
//! longer than the shortest of them compared with at most
//! [`MAX_CHECKED_DNAMES`] DNAME owners), a second pass over the NS records
//! when glue changed, and a pass comparing an owner only when its length
//! is a checked name's.

use tern_wire::name::{LowerNameBuf, Name};
use tern_wire::types::RType;
use tern_zone::{RecordList, RecordRef, Records};

/// The most owners (changed, their ancestors and the apex) checked apart
/// from the whole file; past it, the whole file is checked.
pub(super) const MAX_CHECKED_OWNERS: usize = 4096;

/// The most DNAMEs below the apex a reload may add, remove or change for
/// the names below them to be found apart from the whole file's check
/// (each owner of the file longer than the shortest is compared with
/// every one of them); past it, the whole file is checked.
pub(super) const MAX_CHECKED_DNAMES: usize = crate::edited::MAX_WIDENED_CUTS;

/// The records of the owners a reload changed, their ancestors' and the
/// apex's, in file order: what is checked instead of the whole file.
pub(super) struct Changed<'r>(Vec<RecordRef<'r>>);

impl RecordList for Changed<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn record(&self, index: usize) -> RecordRef<'_> {
        self.0[index]
    }
}

/// The records of `records` (a zone file's, in file order) to check when
/// they differ from `previous` (the previous load's, which loaded) in a
/// few owners, see the module documentation (`known`: what differs, when
/// the reload found it, `super::region`); `None`: check the whole file.
pub(super) fn changed_records<'r>(
    origin: Name<'_>,
    previous: &Records,
    records: &'r Records,
    known: Option<&crate::edited::Diff>,
) -> Option<Changed<'r>> {
    let diff = known
        .cloned()
        .or_else(|| crate::edited::diff(previous, records))?;
    let mut owners: Vec<LowerNameBuf> = Vec::new();
    let mut addresses: Vec<LowerNameBuf> = Vec::new();
    // The delegations whose NS targets in the zone are all checked (below).
    let mut cuts: Vec<LowerNameBuf> = Vec::new();
    // The owners of DNAMEs that differ (added, removed or changed).
    let mut dnames: Vec<LowerNameBuf> = Vec::new();
    let changed = diff
        .old
        .iter()
        .map(|&index| previous.record(index))
        .chain(diff.new.iter().map(|&index| records.record(index)));
    for record in changed {
        let owner = record.owner.to_lower();
        // A delegation's NS or DS below the apex: the NS targets in the
        // zone are checked too (missing glue), whose addresses the file
        // may hold unchanged.
        let delegation = matches!(record.rtype, RType::NS | RType::DS)
            && !owner.as_name().eq_ignore_case(origin);
        // A DNAME below the apex: its owner and ancestors are checked (two
        // DNAMEs, a CNAME beside it, a DNAME above it), and, when it is
        // added, the names the file holds below it (records below a
        // DNAME), found in the pass below.
        let dname = record.rtype == RType::DNAME && !owner.as_name().eq_ignore_case(origin);
        if dname {
            dnames.push(owner);
        }
        if (!delegation && !dname && !crate::edited::edit_stays_at_owner(record.rtype))
            || owner.as_bytes().starts_with(b"\x01*")
        {
            return None;
        }
        if record.rtype == RType::NS {
            let target = Name::from_wire(record.rdata).ok()?;
            if target.ends_with(origin) {
                owners.push(target.to_lower());
            }
        }
        if matches!(record.rtype, RType::A | RType::AAAA) {
            addresses.push(owner);
        }
        if delegation {
            // Its other NS targets too (a DS added, one NS of several
            // removed: the targets kept would look without glue).
            cuts.push(owner);
        }
        owners.push(owner);
    }
    addresses.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    addresses.dedup();
    // The file's types: a chain of NSEC or NSEC3 records is checked whole;
    // an NS record naming a changed address is glue that changed: its
    // owner is checked too, with the owners of all its NS targets in the
    // zone (below); the apex (always checked) with the owners of its NS
    // targets in the zone.
    dnames.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    dnames.dedup();
    // Each owner below the shortest is compared with every DNAME: past
    // a few, the whole file is checked (as bounded as this pass).
    if dnames.len() > MAX_CHECKED_DNAMES {
        return None;
    }
    // The shortest DNAME owner's length: a record's owner is compared with
    // them only when longer.
    let shortest = dnames.iter().map(|name| name.as_bytes().len()).min();
    for index in 0..records.len() {
        if let Some(shortest) = shortest {
            let record = records.record(index);
            let bytes = record.owner.as_bytes();
            if bytes.len() > shortest
                && dnames.iter().any(|dname| {
                    bytes.len() > dname.as_bytes().len() && record.owner.ends_with(dname.as_name())
                })
            {
                // A name below a DNAME: checked with it (an error).
                owners.push(record.owner.to_lower());
                if owners.len() > MAX_CHECKED_OWNERS {
                    return None;
                }
            }
        }
        match records.rtype(index) {
            RType::NSEC | RType::NSEC3 | RType::NSEC3PARAM => return None,
            RType::NS => {
                let record = records.record(index);
                let target = Name::from_wire(record.rdata).ok()?.to_lower();
                if record.owner.eq_ignore_case(origin) {
                    if target.as_name().ends_with(origin) {
                        owners.push(target);
                    }
                } else if addresses
                    .binary_search_by(|address| address.as_bytes().cmp(target.as_bytes()))
                    .is_ok()
                {
                    owners.push(record.owner.to_lower());
                    cuts.push(record.owner.to_lower());
                }
                if owners.len() > MAX_CHECKED_OWNERS {
                    return None;
                }
            }
            _ => {}
        }
    }
    // The in-zone targets of every NS record at a delegation whose glue
    // changed (one target's address changed, the others' not: their
    // owners are checked too, else their glue looks missing): a second
    // pass over the NS records, only when glue changed.
    if !cuts.is_empty() {
        cuts.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        cuts.dedup();
        for index in 0..records.len() {
            if records.rtype(index) != RType::NS {
                continue;
            }
            let record = records.record(index);
            let owner = record.owner.to_lower();
            if cuts
                .binary_search_by(|cut| cut.as_bytes().cmp(owner.as_bytes()))
                .is_err()
            {
                continue;
            }
            let target = Name::from_wire(record.rdata).ok()?;
            if target.ends_with(origin) {
                owners.push(target.to_lower());
                if owners.len() > MAX_CHECKED_OWNERS {
                    return None;
                }
            }
        }
    }
    // The names checked: the changed owners, each ancestor of them up to
    // the apex, and the apex.
    let origin_len = origin.as_bytes().len();
    let mut names: Vec<Vec<u8>> = vec![origin.to_lower().as_bytes().to_vec()];
    for owner in &owners {
        let bytes = owner.as_bytes();
        let mut at = 0;
        // Each step drops a label (a length octet, then as many), so the
        // walk ends at the root at the latest.
        while at < bytes.len() && bytes.len() - at > origin_len {
            names.push(bytes[at..].to_vec());
            at += 1 + usize::from(bytes[at]);
        }
        if names.len() > MAX_CHECKED_OWNERS * 2 {
            names.sort_unstable();
            names.dedup();
            if names.len() > MAX_CHECKED_OWNERS {
                return None;
            }
        }
    }
    names.sort_unstable();
    names.dedup();
    if names.len() > MAX_CHECKED_OWNERS {
        return None;
    }
    let mut lengths = [false; 256];
    for name in &names {
        lengths[name.len()] = true;
    }
    let mut out = Vec::new();
    // Each owner of the file compared (lowercased, then looked up among
    // the sorted names) only when its length is a name's.
    for index in 0..records.len() {
        let record = records.record(index);
        let owner = record.owner.as_bytes();
        if !lengths[owner.len()] {
            continue;
        }
        let lower = record.owner.to_lower();
        if names
            .binary_search_by(|name| name.as_slice().cmp(lower.as_bytes()))
            .is_ok()
        {
            out.push(record);
        }
    }
    Some(Changed(out))
}
