//! The prerequisite section (RFC 2136 sections 2.4 and 3.2), checked
//! against the zone as it is before the update.
//!
//! | class | type | RDATA | means | fails with |
//! |---|---|---|---|---|
//! | ANY | ANY | empty | name is in use | NXDOMAIN |
//! | ANY | T | empty | RRset of T exists (value-independent) | NXRRSET |
//! | NONE | ANY | empty | name is not in use | YXDOMAIN |
//! | NONE | T | empty | RRset of T does not exist | YXRRSET |
//! | zone's (IN) | T | RR | RRset exists with exactly these RRs (value-dependent) | NXRRSET |
//!
//! Every record must have TTL 0 and RDATA as the table says, and a class
//! of the table (else FORMERR), and an owner in the zone (else NOTZONE).
//! The records are read in order and the first failure answers; the
//! value-dependent ones are gathered into RRsets (by owner and type) and
//! compared after the others, as the RFC's pseudocode of section 3.2.5
//! does (and Knot). "In use" means owning at least one record: an empty
//! non-terminal is not in use (RFC 2136 section 2.4.4, and Knot).
//!
//! In a zone tern signs, the zone's records are the unsigned ones; the
//! type-dependent forms on an RRset the signer makes (its DNSKEY at the
//! apex, say) see the RRset served instead ([`SignerRrsets`]), as Knot's
//! prerequisites see its signed zone (docs/decisions/0015).

use tern_wire::name::Name;
use tern_wire::types::{RClass, RType, Rcode};

use crate::message::UpdateRecord;
use crate::store::{Key, Rdata, Rrset, ZoneRecords};

/// The RRsets a signed zone serves that its records (the engine's) do not
/// hold: the signer's.
pub trait SignerRrsets {
    /// `None` when the RRset of `rtype` at `owner` is not the signer's
    /// (the zone's records answer for it); else its RDATA as served
    /// (empty: the zone serves none).
    fn rrset(&self, owner: Name<'_>, rtype: RType) -> Option<Vec<Box<[u8]>>>;
}

/// A zone whose records are all it serves: no RRset is the signer's.
pub struct Unsigned;

impl SignerRrsets for Unsigned {
    fn rrset(&self, _: Name<'_>, _: RType) -> Option<Vec<Box<[u8]>>> {
        None
    }
}

/// Whether the RRset of `rtype` at `key` exists: the signer's as served,
/// else the zone's.
fn exists(
    zone: &ZoneRecords,
    signer: &dyn SignerRrsets,
    (key, owner): (&Key, Name<'_>),
    rtype: RType,
) -> bool {
    match signer.rrset(owner, rtype) {
        Some(served) => !served.is_empty(),
        None => zone.node(key).is_some_and(|node| node.has(rtype)),
    }
}

/// A value-dependent prerequisite's RRset: owner (its key and name), type
/// and RDATA.
type Gathered<'m> = (Key, Name<'m>, RType, Vec<Box<[u8]>>);

/// Checks `prerequisites` against `zone`; the RCODE of the first that
/// fails. Bound: one node look-up per record, then one comparison per
/// value-dependent RRset (quadratic in its records, at most
/// [`crate::MAX_UPDATE_RECORDS`]).
pub fn check_prerequisites(
    zone: &ZoneRecords,
    prerequisites: &[UpdateRecord],
) -> Result<(), Rcode> {
    check_prerequisites_signed(zone, prerequisites, &Unsigned)
}

/// [`check_prerequisites`] in a zone tern signs: the RRsets `signer` makes
/// are seen as served. Bound: as [`check_prerequisites`], and one look-up
/// of `signer` per type-dependent record.
pub fn check_prerequisites_signed(
    zone: &ZoneRecords,
    prerequisites: &[UpdateRecord],
    signer: &dyn SignerRrsets,
) -> Result<(), Rcode> {
    // Value-dependent RRsets: (key, type, RDATA), gathered in order.
    let mut gathered: Vec<Gathered> = Vec::new();
    for prerequisite in prerequisites {
        if prerequisite.ttl != 0 {
            return Err(Rcode::FORMERR);
        }
        if !prerequisite.owner().ends_with(zone.origin()) {
            return Err(Rcode::NOTZONE);
        }
        let key = Key::of(prerequisite.owner());
        let node = zone.node(&key);
        let rtype = prerequisite.rtype;
        match prerequisite.class {
            RClass::ANY | RClass::NONE if !prerequisite.rdata.is_empty() => {
                return Err(Rcode::FORMERR);
            }
            RClass::ANY if rtype == RType::ANY => {
                if node.is_none() {
                    return Err(Rcode::NXDOMAIN);
                }
            }
            RClass::ANY => {
                if !exists(zone, signer, (&key, prerequisite.owner()), rtype) {
                    return Err(Rcode::NXRRSET);
                }
            }
            RClass::NONE if rtype == RType::ANY => {
                if node.is_some() {
                    return Err(Rcode::YXDOMAIN);
                }
            }
            RClass::NONE => {
                if exists(zone, signer, (&key, prerequisite.owner()), rtype) {
                    return Err(Rcode::YXRRSET);
                }
            }
            RClass::IN => {
                let rdata = &prerequisite.rdata;
                match gathered
                    .iter_mut()
                    .find(|(k, _, t, _)| *t == rtype && *k == key)
                {
                    Some((_, _, _, set)) => set.push(rdata.clone()),
                    None => gathered.push((key, prerequisite.owner(), rtype, vec![rdata.clone()])),
                }
            }
            _ => return Err(Rcode::FORMERR),
        }
    }
    for (key, owner, rtype, rdata) in &gathered {
        let same = match signer.rrset(*owner, *rtype) {
            Some(served) => {
                let served = Rrset {
                    rtype: *rtype,
                    records: served
                        .into_iter()
                        .map(|data| Rdata { ttl: 0, data })
                        .collect(),
                };
                !served.records.is_empty() && served.same_rdata(rdata)
            }
            None => {
                let node = zone.node(key);
                node.as_deref()
                    .and_then(|node| node.rrset(*rtype))
                    .is_some_and(|rrset| rrset.same_rdata(rdata))
            }
        };
        if !same {
            return Err(Rcode::NXRRSET);
        }
    }
    Ok(())
}
