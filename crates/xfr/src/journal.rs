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
//! read is simply empty, and clients get the whole zone). A zone's IXFR
//! history file is [`Journal::encode_history`]: a magic, then one
//! checked frame per difference, so that a new difference is saved by
//! appending its frame; [`Journal::decode_history`] keeps the frames up to
//! the first that does not read (a tail torn by a crash).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use tern_authority::{RecordCursor, Zone};
use tern_wire::name::Name;
use tern_wire::types::RType;

use sha1::Digest as _;

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

    /// Whether its journal form reads back as it is: every owner and
    /// RDATA within the lengths the form can carry.
    fn encodable(&self) -> bool {
        let soas = [&self.from_soa.1, &self.to_soa.1];
        soas.iter()
            .all(|rdata| rdata.len() <= usize::from(u16::MAX))
            && [&self.deleted, &self.added]
                .iter()
                .all(|list| u32::try_from(list.len()).is_ok())
            && self.deleted.iter().chain(&self.added).all(|record| {
                Name::from_wire(&record.owner).is_ok()
                    && record.rdata.len() <= usize::from(u16::MAX)
            })
    }
}

/// A difference as a journal keeps it in memory: its journal form (as
/// [`encode_difference`] writes it, one allocation of
/// [`Difference::encoded_len`] octets), decoded only when an IXFR answer
/// or a save needs it. Held decoded, a difference took twice its encoded
/// size in eight allocations (the test `history_memory`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Encoded(Box<[u8]>);

impl Encoded {
    fn new(difference: &Difference) -> Encoded {
        let mut out = Vec::with_capacity(difference.encoded_len());
        encode_difference(difference, &mut out);
        Encoded(out.into_boxed_slice())
    }

    /// The SOA RDATA it starts from (`to`: false) or ends at (true).
    fn soa(&self, to: bool) -> Option<&[u8]> {
        let mut reader = Reader {
            bytes: &self.0,
            pos: 0,
        };
        let mut rdata: &[u8] = &[];
        // The first SOA, then the second if `to`: two passes at most.
        for _ in 0..=usize::from(to) {
            reader.take(4)?;
            let len = usize::from(reader.u16()?);
            rdata = reader.take(len)?;
        }
        Some(rdata)
    }

    /// The serial it starts from.
    fn start_serial(&self) -> Option<u32> {
        self.soa(false).map(serial_of)
    }

    /// The serial it ends at.
    fn end_serial(&self) -> Option<u32> {
        self.soa(true).map(serial_of)
    }

    /// The difference; `None` only if it was not encoded by
    /// [`Encoded::new`] or read by [`decode_difference`] (never: both
    /// check what they keep).
    fn decode(&self) -> Option<Difference> {
        let mut reader = Reader {
            bytes: &self.0,
            pos: 0,
        };
        let difference = decode_difference(&mut reader)?;
        (reader.pos == self.0.len()).then_some(difference)
    }
}

/// A zone's recent differences, oldest first, within a size bound, each
/// kept in its journal form (`Encoded`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Journal {
    differences: VecDeque<Encoded>,
    bytes: usize,
}

impl Journal {
    /// An empty journal.
    pub fn new() -> Self {
        Journal::default()
    }

    /// The differences kept, oldest first (each decoded as it is reached).
    pub fn differences(&self) -> impl Iterator<Item = Difference> + '_ {
        self.differences.iter().map_while(Encoded::decode)
    }

    /// How many differences it keeps.
    pub fn len(&self) -> usize {
        self.differences.len()
    }

    /// Whether it keeps none.
    pub fn is_empty(&self) -> bool {
        self.differences.is_empty()
    }

    /// Octets the differences take.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Records a difference, dropping the oldest ones while the journal is
    /// over `max_bytes`. A difference that does not start where the last
    /// one ended (a reload that went back, or a gap) starts the journal
    /// afresh (and it returns false): the chain must be whole to answer
    /// from it. A difference its journal form cannot carry (an owner or
    /// RDATA too long: never one of a zone tern serves) is not kept
    /// either: the journal is left empty.
    pub fn push(&mut self, difference: Difference, max_bytes: usize) -> bool {
        let continued = self.continues(&difference);
        if !continued {
            self.clear();
        }
        if !difference.encodable() {
            self.clear();
            return false;
        }
        let encoded = Encoded::new(&difference);
        self.bytes += encoded.0.len();
        self.differences.push_back(encoded);
        self.trim(max_bytes);
        continued
    }

    /// Forgets every difference (the zone changed without a new serial).
    pub fn clear(&mut self) {
        self.differences.clear();
        self.bytes = 0;
    }

    /// The condensed difference from `serial` to the latest version, if the
    /// journal reaches back to `serial`.
    /// A record added by one difference and deleted by a later one
    /// appears in neither list; a chain of more than one difference gives
    /// its lists sorted. `None` too if a difference does not decode
    /// (never: the journal checks what it keeps).
    pub fn since(&self, serial: u32) -> Option<Difference> {
        let start = self
            .differences
            .iter()
            .position(|difference| difference.start_serial() == Some(serial))?;
        let mut chain = self.differences.iter().skip(start);
        let first = chain.next()?.decode()?;
        if chain.len() == 0 {
            return Some(first);
        }
        let mut deleted: BTreeSet<Record> = first.deleted.into_iter().collect();
        let mut added: BTreeSet<Record> = first.added.into_iter().collect();
        let mut to_soa = first.to_soa;
        // Bounded by the journal: one pass per difference kept.
        for next in chain {
            let next = next.decode()?;
            for record in next.deleted {
                if !added.remove(&record) {
                    deleted.insert(record);
                }
            }
            for record in next.added {
                if !deleted.remove(&record) {
                    added.insert(record);
                }
            }
            to_soa = next.to_soa;
        }
        Some(Difference {
            from_soa: first.from_soa,
            to_soa,
            deleted: deleted.into_iter().collect(),
            added: added.into_iter().collect(),
        })
    }

    /// Whether the journal's latest version is `serial`.
    pub fn ends_at(&self, serial: u32) -> bool {
        self.differences
            .back()
            .is_some_and(|last| last.end_serial() == Some(serial))
    }

    /// The journal in its saved form (one piece; the update journal's
    /// frames carry this form).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&(self.differences.len() as u32).to_be_bytes());
        for difference in &self.differences {
            out.extend_from_slice(&difference.0);
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
            let start = reader.pos;
            let difference = decode_difference(&mut reader)?;
            if !journal.continues(&difference) {
                return None;
            }
            journal.keep(&bytes[start..reader.pos]);
        }
        (reader.pos == bytes.len()).then_some(journal)
    }

    /// Keeps `encoded`, a difference [`decode_difference`] has read.
    fn keep(&mut self, encoded: &[u8]) {
        self.bytes += encoded.len();
        self.differences.push_back(Encoded(encoded.into()));
    }

    /// Whether `difference` starts where the journal ends (or it is empty).
    fn continues(&self, difference: &Difference) -> bool {
        self.differences
            .back()
            .is_none_or(|last| last.soa(true) == Some(&difference.from_soa.1[..]))
    }

    /// Drops the oldest differences while the journal is over `max_bytes`
    /// (a history file read back may hold more than its bound).
    pub fn trim(&mut self, max_bytes: usize) {
        while self.bytes > max_bytes {
            let Some(oldest) = self.differences.pop_front() else {
                break;
            };
            self.bytes -= oldest.0.len();
        }
    }

    /// Octets the journal takes as a history file
    /// ([`Journal::encode_history`]).
    pub fn history_len(&self) -> usize {
        HISTORY_MAGIC.len() + self.bytes + FRAME_OVERHEAD * self.differences.len()
    }

    /// The journal as a history file: [`HISTORY_MAGIC`], then a
    /// [`history_frame`] per difference. A difference pushed later is
    /// saved by appending its frame.
    pub fn encode_history(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.history_len());
        out.extend_from_slice(HISTORY_MAGIC);
        for difference in &self.differences {
            encoded_frame(&difference.0, &mut out);
        }
        out
    }

    /// Reads a history file: the differences of its frames up to the first
    /// that does not read (a tail torn by a crash, damage) or does not
    /// start where the previous ended; `None` if its start is not a
    /// history's. The older one-piece form ([`Journal::encode`]) reads too.
    /// Whether the result ends at the version served is the caller's to
    /// check: a good prefix can end earlier.
    pub fn decode_history(bytes: &[u8]) -> Option<Journal> {
        if bytes.starts_with(MAGIC) {
            return Journal::decode(bytes);
        }
        let mut reader = Reader {
            bytes: bytes.strip_prefix(HISTORY_MAGIC)?,
            pos: 0,
        };
        let mut journal = Journal::new();
        // Each pass consumes at least FRAME_OVERHEAD octets or ends.
        while let Some((payload, difference)) = read_frame(&mut reader) {
            if !journal.continues(&difference) {
                break;
            }
            journal.keep(payload);
        }
        Some(journal)
    }
}

/// A history file's magic and version, first in it.
pub const HISTORY_MAGIC: &[u8; 8] = b"ternhst1";

/// Octets a history frame adds to its difference: the length before it,
/// the check after it.
pub const FRAME_OVERHEAD: usize = 4 + CHECK_LEN;

/// Octets of a frame's check (the first of its payload's SHA-1).
const CHECK_LEN: usize = 8;

/// The largest payload a history frame may declare: a difference of a
/// zone within the transfer limits is far below it; a larger length is
/// damage.
const MAX_FRAME: usize = 1 << 30;

/// Appends `difference`'s history frame to `out`: its encoded length (4
/// octets), the encoded difference, the first 8 octets of its SHA-1.
pub fn history_frame(difference: &Difference, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&(difference.encoded_len() as u32).to_be_bytes());
    encode_difference(difference, out);
    let check = sha1::Sha1::digest(&out[start + 4..]);
    out.extend_from_slice(&check[..CHECK_LEN]);
}

/// Appends the history frame of a difference in its journal form.
fn encoded_frame(encoded: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
    out.extend_from_slice(encoded);
    out.extend_from_slice(&sha1::Sha1::digest(encoded)[..CHECK_LEN]);
}

/// Reads one history frame: its payload and the difference it holds;
/// `None` if it is cut short, its check fails or its payload is not
/// exactly one difference.
fn read_frame<'a>(reader: &mut Reader<'a>) -> Option<(&'a [u8], Difference)> {
    let len = usize::try_from(reader.u32()?).ok()?;
    if len > MAX_FRAME {
        return None;
    }
    let payload = reader.take(len)?;
    let check = reader.take(CHECK_LEN)?;
    if sha1::Sha1::digest(payload)[..CHECK_LEN] != *check {
        return None;
    }
    let mut inner = Reader {
        bytes: payload,
        pos: 0,
    };
    let difference = decode_difference(&mut inner)?;
    (inner.pos == payload.len()).then_some((payload, difference))
}

/// Appends `difference` in the journal's record form to `out`.
fn encode_difference(difference: &Difference, out: &mut Vec<u8>) {
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

/// Reads one difference in the journal's record form; `None` if anything
/// in it is cut short or malformed. Bounded by the input: each record
/// reads at least 9 octets.
fn decode_difference(reader: &mut Reader<'_>) -> Option<Difference> {
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
    Some(Difference {
        from_soa,
        to_soa,
        deleted,
        added,
    })
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
