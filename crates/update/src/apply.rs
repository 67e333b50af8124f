//! The update section applied (RFC 2136 section 3.4.2), all or nothing,
//! and the difference it made.
//!
//! A [`Transaction`] changes the zone in place and keeps, for each name it
//! touches, the node as it was: [`Transaction::rollback`] puts those back
//! (nothing changed), `Transaction::difference` compares them with the
//! new ones (the records removed and added, as the IXFR history wants
//! them). Both cost the names touched, not the zone.
//!
//! What each update record does, in order (the prescan has checked every
//! record's class, TTL, RDATA and owner before this runs):
//!
//! - class IN, an addition:
//!   - SOA: only at the apex and only with a serial higher than the
//!     current one (RFC 1982), which it replaces; otherwise ignored.
//!   - CNAME: replaces the name's CNAME; ignored at a name with other data
//!     (RRSIG and NSEC aside, RFC 4035 section 2.5) or below a DNAME.
//!   - DNAME: replaces the name's DNAME; ignored at a name with names
//!     below it or with a CNAME (RFC 6672 section 5.2).
//!   - NSEC3PARAM: only at the apex (else the update is REFUSED), and
//!     ignored when there is one.
//!   - any other type: ignored at a name with a CNAME or below a DNAME;
//!     else added, an equal record (RFC 2136 section 1.1.1) replaced. The
//!     whole RRset takes the added record's TTL (RFC 2181 section 5.2: one
//!     TTL per RRset; BIND and Knot do the same), RRSIGs aside (each
//!     keeps its own).
//! - class ANY, type ANY: deletes every RRset of the name, at the apex
//!   every one but the SOA and NS.
//! - class ANY, type T: deletes the RRset; ignored for SOA and NS at the
//!   apex.
//! - class NONE: deletes the one record; ignored for the SOA and for the
//!   apex's last NS.
//!
//! This is Knot's `ddns.c` for CNAME and DNAME; where Knot, BIND and the
//! RFC differ, docs/decisions/0015-dynamic-update.md says which is
//! followed.

use std::collections::BTreeMap;

use tern_wire::types::{RClass, RType, Rcode};

use crate::message::UpdateRecord;
use crate::rdata::{rdata_equal, serial_higher, soa_serial};
use crate::store::{Key, Node, ZoneRecords};

//----------- Difference -----------------------------------------------------

/// One record added or removed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ChangedRecord {
    /// The owner, lowercased, in wire form.
    pub owner: Box<[u8]>,
    /// The type.
    pub rtype: RType,
    /// The TTL.
    pub ttl: u32,
    /// The RDATA, uncompressed.
    pub rdata: Box<[u8]>,
}

/// What an update changed: the SOA before and after, and the other records
/// removed and added, each list sorted by owner (wire octets), type, TTL
/// and RDATA (the order of tern-xfr's journal). A record whose TTL changed
/// is in both lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The SOA's TTL and RDATA before the update.
    pub from_soa: (u32, Box<[u8]>),
    /// The SOA's TTL and RDATA after it.
    pub to_soa: (u32, Box<[u8]>),
    /// Records of the old version not in the new (the apex SOA aside).
    pub deleted: Vec<ChangedRecord>,
    /// Records of the new version not in the old (the apex SOA aside).
    pub added: Vec<ChangedRecord>,
}

impl Difference {
    /// The serial the difference starts from.
    pub fn from_serial(&self) -> u32 {
        soa_serial(&self.from_soa.1).unwrap_or(0)
    }

    /// The serial it ends at.
    pub fn to_serial(&self) -> u32 {
        soa_serial(&self.to_soa.1).unwrap_or(0)
    }
}

//----------- Transaction ----------------------------------------------------

/// Changes to a zone that can be undone: each touched name's node as it
/// was before its first change.
pub struct Transaction<'z> {
    zone: &'z mut ZoneRecords,
    saved: BTreeMap<Key, Option<Node>>,
    soa_replaced: bool,
}

impl<'z> Transaction<'z> {
    /// Starts changing `zone`.
    pub fn new(zone: &'z mut ZoneRecords) -> Self {
        Transaction {
            zone,
            saved: BTreeMap::new(),
            soa_replaced: false,
        }
    }

    /// The zone as changed so far.
    pub fn zone(&self) -> &ZoneRecords {
        self.zone
    }

    /// Changes the node of `key` (an empty one if the name owns nothing),
    /// keeping its first state for [`Transaction::rollback`].
    fn change<R>(&mut self, key: &Key, change: impl FnOnce(&mut Node) -> R) -> R {
        let mut node = self.zone.take(key);
        if !self.saved.contains_key(key) {
            let original = (!node.is_empty()).then(|| node.clone());
            self.saved.insert(key.clone(), original);
        }
        let result = change(&mut node);
        self.zone.put(key.clone(), node);
        result
    }

    /// Undoes every change: the zone is as it was.
    pub fn rollback(self) {
        for (key, original) in self.saved {
            self.zone.take(&key);
            self.zone.put(key, original.unwrap_or_default());
        }
    }

    /// Whether the SOA was replaced by an update record.
    pub fn soa_replaced(&self) -> bool {
        self.soa_replaced
    }

    /// The records removed and added so far, the apex SOA aside, each list
    /// sorted. Bound: the records of the touched names.
    pub fn changes(&self) -> (Vec<ChangedRecord>, Vec<ChangedRecord>) {
        let origin = self.zone.origin_key();
        let empty = Node::default();
        let mut deleted = Vec::new();
        let mut added = Vec::new();
        for (key, original) in &self.saved {
            let old = original.as_ref().unwrap_or(&empty);
            let new = self.zone.node(key);
            let new = new.as_deref().unwrap_or(&empty);
            if old == new {
                continue;
            }
            let owner: Box<[u8]> = key.name().as_bytes().into();
            let apex = key == origin;
            for (from, to, out) in [(old, new, &mut deleted), (new, old, &mut added)] {
                for rrset in from.rrsets() {
                    if apex && rrset.rtype == RType::SOA {
                        continue;
                    }
                    let other = to.rrset(rrset.rtype);
                    for record in &rrset.records {
                        let kept = other.is_some_and(|other| {
                            other.records.iter().any(|o| {
                                o.ttl == record.ttl
                                    && rdata_equal(rrset.rtype, &o.data, &record.data)
                            })
                        });
                        if !kept {
                            out.push(ChangedRecord {
                                owner: owner.clone(),
                                rtype: rrset.rtype,
                                ttl: record.ttl,
                                rdata: record.data.clone(),
                            });
                        }
                    }
                }
            }
        }
        deleted.sort_unstable();
        added.sort_unstable();
        (deleted, added)
    }

    /// Whether any name's records differ from what they were.
    pub fn changed(&self) -> bool {
        self.saved.iter().any(|(key, original)| {
            let empty = Node::default();
            original.as_ref().unwrap_or(&empty) != self.zone.node(key).as_deref().unwrap_or(&empty)
        })
    }

    /// Gives the SOA the serial after the current one (RFC 1982: plus one,
    /// modulo 2^32).
    pub fn increment_serial(&mut self) {
        let origin = self.zone.origin_key().clone();
        let next = self.zone.serial().wrapping_add(1);
        self.change(&origin, |apex| {
            let (ttl, mut rdata) = match apex.rrset(RType::SOA).and_then(|s| s.records.first()) {
                Some(soa) => (soa.ttl, soa.data.to_vec()),
                None => return,
            };
            if crate::rdata::set_soa_serial(&mut rdata, next) {
                apex.remove_rrset(RType::SOA);
                apex.add(RType::SOA, ttl, &rdata);
            }
        });
    }
}

//----------- Applying -------------------------------------------------------

/// Applies `updates` (prescanned) in order. The only failure is an
/// NSEC3PARAM below the apex (REFUSED, as Knot); the caller then rolls
/// back. Bound: per record, one node change and at most one look-up per
/// label between the owner and the apex (the DNAME check).
pub fn apply_updates(
    transaction: &mut Transaction<'_>,
    updates: &[UpdateRecord],
) -> Result<(), Rcode> {
    for update in updates {
        let key = Key::of(update.owner());
        let apex = &key == transaction.zone.origin_key();
        match update.class {
            RClass::ANY if update.rtype == RType::ANY => {
                transaction.change(&key, |node| {
                    let types: Vec<RType> = node.rrsets().iter().map(|r| r.rtype).collect();
                    for rtype in types {
                        if !(apex && matches!(rtype, RType::SOA | RType::NS)) {
                            node.remove_rrset(rtype);
                        }
                    }
                });
            }
            RClass::ANY => {
                let protected = apex && matches!(update.rtype, RType::SOA | RType::NS);
                let present = transaction
                    .zone
                    .node(&key)
                    .is_some_and(|n| n.has(update.rtype));
                if !protected && present {
                    transaction.change(&key, |node| node.remove_rrset(update.rtype));
                }
            }
            RClass::NONE => delete_record(transaction, &key, apex, update),
            _ => add_record(transaction, &key, apex, update)?,
        }
    }
    Ok(())
}

/// Class NONE: deletes one record, but never the SOA nor the apex's last
/// NS.
fn delete_record(transaction: &mut Transaction<'_>, key: &Key, apex: bool, update: &UpdateRecord) {
    let rtype = update.rtype;
    if rtype == RType::SOA {
        return;
    }
    let node = transaction.zone.node(key);
    let Some(rrset) = node.as_deref().and_then(|node| node.rrset(rtype)) else {
        return;
    };
    if rrset.find(&update.rdata).is_none()
        || (apex && rtype == RType::NS && rrset.records.len() == 1)
    {
        return;
    }
    drop(node);
    transaction.change(key, |node| node.remove_rdata(rtype, &update.rdata));
}

/// Class IN: adds one record, as the module documentation says.
fn add_record(
    transaction: &mut Transaction<'_>,
    key: &Key,
    apex: bool,
    update: &UpdateRecord,
) -> Result<(), Rcode> {
    let (rtype, ttl, rdata) = (update.rtype, update.ttl, &update.rdata[..]);
    let held = transaction.zone.node(key);
    let node = held.as_deref();
    let identical = |rtype| {
        node.and_then(|node| node.rrset(rtype))
            .is_some_and(|rrset| {
                rrset.records.len() == 1
                    && rrset.records[0].ttl == ttl
                    && rdata_equal(rtype, &rrset.records[0].data, rdata)
            })
    };
    let has = |rtype| node.is_some_and(|node| node.has(rtype));
    let replace = match rtype {
        RType::SOA => {
            let higher =
                soa_serial(rdata).is_some_and(|s| serial_higher(s, transaction.zone.serial()));
            if !apex || !higher {
                return Ok(());
            }
            transaction.soa_replaced = true;
            true
        }
        RType::CNAME if has(RType::CNAME) => {
            if identical(RType::CNAME) {
                return Ok(());
            }
            true
        }
        RType::CNAME => {
            if node.is_some_and(Node::has_other_than_cname) || dname_above(transaction, key) {
                return Ok(());
            }
            false
        }
        RType::DNAME if has(RType::DNAME) => {
            if identical(RType::DNAME) {
                return Ok(());
            }
            true
        }
        RType::DNAME => {
            if transaction.zone.has_names_below(key) || has(RType::CNAME) {
                return Ok(());
            }
            false
        }
        RType::NSEC3PARAM => {
            if !apex {
                return Err(Rcode::REFUSED);
            }
            if has(RType::NSEC3PARAM) {
                return Ok(());
            }
            false
        }
        RType::RRSIG | RType::NSEC => false,
        _ => {
            if has(RType::CNAME) || dname_above(transaction, key) {
                return Ok(());
            }
            false
        }
    };
    transaction.change(key, |node| {
        if replace {
            node.remove_rrset(rtype);
        }
        node.add(rtype, ttl, rdata);
        if rtype != RType::RRSIG {
            node.set_ttl(rtype, ttl);
        }
    });
    Ok(())
}

/// Whether a name strictly above `key`'s, up to the apex, owns a DNAME:
/// then `key`'s name is occluded (RFC 6672 section 2.3) and nothing is
/// added there. Bound: one look-up per label between the name and the
/// apex.
fn dname_above(transaction: &Transaction<'_>, key: &Key) -> bool {
    let zone = transaction.zone();
    let origin = zone.origin();
    let name = key.name();
    let mut above = name.as_name().parent();
    while let Some(ancestor) = above {
        if ancestor.len() < origin.len() {
            break;
        }
        if zone
            .node(&Key::of(ancestor))
            .is_some_and(|node| node.has(RType::DNAME))
        {
            return true;
        }
        above = ancestor.parent();
    }
    false
}
