//! The differences between versions of a zone, and the bounded history of
//! them that IXFR answers come from (RFC 1995).
//!
//! [`Difference::between`] compares two versions record by record (owner,
//! type, RDATA; a changed TTL is a deletion and an addition). A
//! [`Journal`] keeps the differences of one zone, oldest first, each
//! starting at the serial the previous one ended at, and drops the oldest
//! when their encoded size passes its bound. [`Journal::since`] condenses
//! the chain from a client's serial into one difference (RFC 1995 section
//! 5): a record added and then deleted appears in neither list.
//!
//! A journal is saved and read back with [`Journal::encode`] and
//! [`Journal::decode`] (length-prefixed records; `decode` checks every
//! length and gives up on anything malformed: a journal that does not
//! read is simply empty, and clients get the whole zone).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use tern_authority::{RecordCursor, Zone};
use tern_wire::name::Name;
use tern_wire::types::RType;

use crate::reader::Reader;
use crate::serial::serial_at_or_after;

/// The journal's magic and version, first in an encoded journal.
const MAGIC: &[u8; 8] = b"ternjnl1";

/// One record: owner (lowercased wire form), type, TTL, RDATA.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Record {
    /// The owner, lowercased, in wire form.
    pub owner: Vec<u8>,
    /// The type.
    pub rtype: RType,
    /// The TTL.
    pub ttl: u32,
    /// The RDATA, uncompressed.
    pub rdata: Vec<u8>,
}

impl Record {
    fn encoded_len(&self) -> usize {
        1 + self.owner.len() + 2 + 4 + 2 + self.rdata.len()
    }
}

/// What changed from one version of a zone to the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The SOA RDATA (and TTL) of the version it starts from.
    pub from_soa: (u32, Vec<u8>),
    /// The SOA RDATA (and TTL) of the version it ends at.
    pub to_soa: (u32, Vec<u8>),
    /// Records of the old version that are not in the new, sorted.
    pub deleted: Vec<Record>,
    /// Records of the new version that were not in the old, sorted.
    pub added: Vec<Record>,
}

/// The SERIAL of SOA RDATA.
fn serial_of(rdata: &[u8]) -> u32 {
    rdata
        .len()
        .checked_sub(20)
        .and_then(|at| rdata.get(at..at + 4))
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// A zone's records but its apex SOA, in the order of [`Record`]: what a
/// [`Difference`] deletes from and adds to.
pub fn records_but_soa(zone: &Zone) -> BTreeSet<Record> {
    let origin = zone.origin();
    let mut cursor = RecordCursor::default();
    let mut all = BTreeSet::new();
    while let Some(record) = zone.next_record(&mut cursor) {
        if record.rtype == RType::SOA && record.owner.as_bytes() == origin.as_bytes() {
            continue;
        }
        all.insert(Record {
            owner: record.owner.as_bytes().to_vec(),
            rtype: record.rtype,
            ttl: record.ttl,
            rdata: record.rdata.to_vec(),
        });
    }
    all
}

impl Difference {
    /// The difference from `old` to `new` (versions of one zone).
    pub fn between(old: &Zone, new: &Zone) -> Difference {
        let (before, after) = (records_but_soa(old), records_but_soa(new));
        let soa = |zone: &Zone| {
            let soa = zone.soa_record();
            (soa.ttl, soa.rdata.to_vec())
        };
        Difference {
            from_soa: soa(old),
            to_soa: soa(new),
            deleted: before.difference(&after).cloned().collect(),
            added: after.difference(&before).cloned().collect(),
        }
    }

    /// The serial it starts from.
    pub fn from_serial(&self) -> u32 {
        serial_of(&self.from_soa.1)
    }

    /// The serial it ends at.
    pub fn to_serial(&self) -> u32 {
        serial_of(&self.to_soa.1)
    }

    /// Whether nothing but the SOA changed.
    pub fn is_empty(&self) -> bool {
        self.deleted.is_empty() && self.added.is_empty()
    }

    /// Octets it takes in a journal (its bound counts these).
    pub fn encoded_len(&self) -> usize {
        let soas = 2 * (4 + 2) + self.from_soa.1.len() + self.to_soa.1.len();
        let records: usize = self
            .deleted
            .iter()
            .chain(&self.added)
            .map(Record::encoded_len)
            .sum();
        soas + 8 + records
    }

    /// `self` followed by `next` as one difference: a record added by one
    /// and deleted by the other appears in neither list.
    fn then(mut self, next: &Difference) -> Difference {
        let mut deleted: BTreeSet<Record> = self.deleted.drain(..).collect();
        let mut added: BTreeSet<Record> = self.added.drain(..).collect();
        for record in &next.deleted {
            if !added.remove(record) {
                deleted.insert(record.clone());
            }
        }
        for record in &next.added {
            if !deleted.remove(record) {
                added.insert(record.clone());
            }
        }
        Difference {
            from_soa: self.from_soa,
            to_soa: next.to_soa.clone(),
            deleted: deleted.into_iter().collect(),
            added: added.into_iter().collect(),
        }
    }
}

/// A zone's recent differences, oldest first, within a size bound.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Journal {
    differences: VecDeque<Difference>,
    bytes: usize,
}

impl Journal {
    /// An empty journal.
    pub fn new() -> Self {
        Journal::default()
    }

    /// The differences kept, oldest first.
    pub fn differences(&self) -> impl Iterator<Item = &Difference> {
        self.differences.iter()
    }

    /// Octets the differences take.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Records a difference, dropping the oldest ones while the journal is
    /// over `max_bytes`. A difference that does not start where the last
    /// one ended (a reload that went back, or a gap) starts the journal
    /// afresh: the chain must be whole to answer from it.
    pub fn push(&mut self, difference: Difference, max_bytes: usize) {
        if self
            .differences
            .back()
            .is_some_and(|last| last.to_soa.1 != difference.from_soa.1)
        {
            self.clear();
        }
        self.bytes += difference.encoded_len();
        self.differences.push_back(difference);
        while self.bytes > max_bytes {
            let Some(oldest) = self.differences.pop_front() else {
                break;
            };
            self.bytes -= oldest.encoded_len();
        }
    }

    /// Forgets every difference (the zone changed without a new serial).
    pub fn clear(&mut self) {
        self.differences.clear();
        self.bytes = 0;
    }

    /// The condensed difference from `serial` to the latest version, if the
    /// journal reaches back to `serial`.
    pub fn since(&self, serial: u32) -> Option<Difference> {
        let start = self
            .differences
            .iter()
            .position(|difference| difference.from_serial() == serial)?;
        let mut chain = self.differences.iter().skip(start);
        let first = chain.next()?.clone();
        Some(chain.fold(first, |condensed, next| condensed.then(next)))
    }

    /// Whether the journal's latest version is `serial`.
    pub fn ends_at(&self, serial: u32) -> bool {
        self.differences
            .back()
            .is_some_and(|last| last.to_serial() == serial)
    }

    /// The journal in its saved form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&(self.differences.len() as u32).to_be_bytes());
        for difference in &self.differences {
            for (ttl, rdata) in [&difference.from_soa, &difference.to_soa] {
                out.extend_from_slice(&ttl.to_be_bytes());
                out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
                out.extend_from_slice(rdata);
            }
            for list in [&difference.deleted, &difference.added] {
                out.extend_from_slice(&(list.len() as u32).to_be_bytes());
                for record in list {
                    out.push(record.owner.len() as u8);
                    out.extend_from_slice(&record.owner);
                    out.extend_from_slice(&record.rtype.0.to_be_bytes());
                    out.extend_from_slice(&record.ttl.to_be_bytes());
                    out.extend_from_slice(&(record.rdata.len() as u16).to_be_bytes());
                    out.extend_from_slice(&record.rdata);
                }
            }
        }
        out
    }

    /// Reads a saved journal; `None` if anything in it is malformed or a
    /// difference does not start where the previous one ended.
    pub fn decode(bytes: &[u8]) -> Option<Journal> {
        let mut reader = Reader { bytes, pos: 0 };
        if reader.take(MAGIC.len())? != MAGIC {
            return None;
        }
        let count = reader.u32()?;
        let mut journal = Journal::new();
        // Bounded by the input: each difference reads at least 20 octets.
        for _ in 0..count {
            let mut soas = [(0u32, Vec::new()), (0u32, Vec::new())];
            for soa in &mut soas {
                let ttl = reader.u32()?;
                let len = usize::from(reader.u16()?);
                *soa = (ttl, reader.take(len)?.to_vec());
            }
            let mut lists = [Vec::new(), Vec::new()];
            for list in &mut lists {
                let len = reader.u32()?;
                for _ in 0..len {
                    let owner_len = usize::from(reader.take(1)?[0]);
                    let owner = reader.take(owner_len)?;
                    Name::from_wire(owner).ok()?;
                    let rtype = RType(reader.u16()?);
                    let ttl = reader.u32()?;
                    let rdata_len = usize::from(reader.u16()?);
                    list.push(Record {
                        owner: owner.to_vec(),
                        rtype,
                        ttl,
                        rdata: reader.take(rdata_len)?.to_vec(),
                    });
                }
            }
            let [from_soa, to_soa] = soas;
            let [deleted, added] = lists;
            let difference = Difference {
                from_soa,
                to_soa,
                deleted,
                added,
            };
            if journal
                .differences
                .back()
                .is_some_and(|last| last.to_soa.1 != difference.from_soa.1)
            {
                return None;
            }
            journal.bytes += difference.encoded_len();
            journal.differences.push_back(difference);
        }
        (reader.pos == bytes.len()).then_some(journal)
    }
}

/// Whether a reload from `old` to `new` is a new version IXFR can describe:
/// a higher serial. A lower or equal serial with changed data is served
/// but recorded as no difference (the journal is cleared, so clients get
/// the whole zone).
pub fn is_newer(old: &Zone, new: &Zone) -> bool {
    old.serial() != new.serial() && serial_at_or_after(new.serial(), old.serial())
}

/// Keeps the journals of many zones, by lowercased origin.
pub type Journals = BTreeMap<Vec<u8>, Journal>;

/// Each zone's IXFR history, shared: written by the zones' owner as zones
/// are loaded or received, read by a core for each IXFR request (never on
/// the query path).
pub type SharedJournals = std::sync::Arc<std::sync::Mutex<Journals>>;

#[cfg(test)]
mod tests;
