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

use tern_wire::types::{RClass, RType, Rcode};

use crate::message::UpdateRecord;
use crate::store::{Key, ZoneRecords};

/// A value-dependent prerequisite's RRset: owner, type and RDATA.
type Gathered = (Key, RType, Vec<Box<[u8]>>);

/// Checks `prerequisites` against `zone`; the RCODE of the first that
/// fails. Bound: one node look-up per record, then one comparison per
/// value-dependent RRset (quadratic in its records, at most
/// [`crate::MAX_UPDATE_RECORDS`]).
pub fn check_prerequisites(
    zone: &ZoneRecords,
    prerequisites: &[UpdateRecord],
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
                if !node.is_some_and(|node| node.has(rtype)) {
                    return Err(Rcode::NXRRSET);
                }
            }
            RClass::NONE if rtype == RType::ANY => {
                if node.is_some() {
                    return Err(Rcode::YXDOMAIN);
                }
            }
            RClass::NONE => {
                if node.is_some_and(|node| node.has(rtype)) {
                    return Err(Rcode::YXRRSET);
                }
            }
            RClass::IN => {
                let rdata = &prerequisite.rdata;
                match gathered
                    .iter_mut()
                    .find(|(k, t, _)| *t == rtype && *k == key)
                {
                    Some((_, _, set)) => set.push(rdata.clone()),
                    None => gathered.push((key, rtype, vec![rdata.clone()])),
                }
            }
            _ => return Err(Rcode::FORMERR),
        }
    }
    for (key, rtype, rdata) in &gathered {
        let rrset = zone.node(key).and_then(|node| node.rrset(*rtype));
        if !rrset.is_some_and(|rrset| rrset.same_rdata(rdata)) {
            return Err(Rcode::NXRRSET);
        }
    }
    Ok(())
}
