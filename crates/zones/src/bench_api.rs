//! For the benches and the fuzz target only (tern-benches:
//! `benches/update.rs` times [`sign_update`]; `benches/src/versions.rs`,
//! which makes the benches' inputs and checks them, and
//! `crate::fuzzing::signed_update` (crates/fuzz's `signed_update`) call
//! them), not an API: the update path's steps that are private to
//! [`crate::update`], wrapped with no logic of their own so that a bench
//! can time each. Hidden from the docs; nothing else in tern calls it.
//! Declared in `update.rs` (its file beside `lib.rs`): the signed
//! update's steps are private to `update` and its modules.

use std::sync::Arc;

use tern_authority::Zone;
use tern_update::ZoneRecords;
use tern_xfr::journal::Difference;
use tern_zone::{RecordList, Records};

use super::signed;
use crate::rollover::ZoneKeys;

/// The engine's difference as the update journal keeps it (the update
/// thread's conversion).
pub fn journal_difference(difference: tern_update::Difference) -> Difference {
    super::convert(difference)
}

/// The engine's records of the served version `zone` of an unsigned zone,
/// as the update thread keeps them: laid over it.
pub fn records_over(zone: &Arc<Zone>) -> Result<ZoneRecords, String> {
    super::records_over(zone)
}

/// The engine's records of the served signed version `zone` (its records
/// but the signer's), as the update thread keeps them for a zone signed
/// with `keys`.
pub fn unsigned_records(zone: &Zone, keys: &ZoneKeys) -> Result<ZoneRecords, String> {
    signed::unsigned_records(zone, signed::publishes_cds(keys))
}

/// Every record of the served signed version `zone`, in canonical order
/// of owners: what a signing starts from when the signer's own records
/// are not at hand (the update thread's `served_records`).
pub fn served_records(zone: &Zone) -> Result<Records, String> {
    signed::served_records(zone)
}

/// What [`sign_update`] made and what it cost.
pub struct SignedUpdate {
    /// The version to serve.
    pub zone: Arc<Zone>,
    /// Records read.
    pub visited: usize,
    /// RRSIGs made.
    pub signatures: usize,
    /// Records copied.
    pub copied: usize,
    /// Signed records kept for the next group's signing: none after a
    /// window's signing, every one after the whole zone's.
    pub kept: usize,
    /// The signed records kept (`kept` of them), as the update thread
    /// keeps them to sign the next group from.
    pub records: Records,
    /// The signed version's difference from the version served, as the
    /// update thread journals it (for IXFR).
    pub difference: Difference,
}

/// A group's updates to a signed zone signed as the update thread signs
/// them: a window of the zone when it can be, else the whole zone.
pub fn sign_update(
    served: &Zone,
    previous: &Records,
    unsigned: &ZoneRecords,
    differences: &[Difference],
    keys: &ZoneKeys,
) -> Result<SignedUpdate, String> {
    signed::sign_update(served, previous, unsigned, differences, keys).map(|update| SignedUpdate {
        zone: update.zone,
        visited: update.cost.visited,
        signatures: update.cost.signatures,
        copied: update.cost.copied,
        kept: RecordList::len(&update.records),
        records: update.records,
        difference: update.difference,
    })
}
