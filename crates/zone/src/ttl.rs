//! The TTL an RRset is served with when its records in the file disagree:
//! BIND's reading of a master file (`docs/decisions/0002`).
//!
//! RFC 2181 section 5.2 wants one TTL per RRset and leaves the reading of
//! a file that gives several to the server. BIND 9.18's loader
//! (`lib/dns/master.c`, checked with `named-checkzone -D`) reads the file
//! in *groups* and this module does the same:
//!
//! - a group is a run of consecutive records whose owner is spelled the
//!   same, byte for byte (`www` then `WWW` are two groups);
//! - records whose owner is a name server of the group's NS records (its
//!   glue) form groups of their own in between without ending it, so
//!   `sub NS ns.sub` / `ns.sub A ...` / `sub NS ns2.sub` is one `sub`
//!   group;
//! - `$INCLUDE` ends every group, in and out of the included file (tern
//!   sees it as the records' file changing);
//! - each record of a `$GENERATE` is a group of its own, ended at once,
//!   and does not end the group around it (tern knows them as consecutive
//!   records sharing one location);
//! - within a group, an RRset (owner, type; RRSIGs by the type they cover)
//!   takes the TTL of its first record, duplicates included; BIND warns
//!   at each other record ("TTL set to prior TTL"), and so does tern;
//! - across groups, the group ended last gives the RRset its TTL: the
//!   later group of `www 600 A`, `mail A`, `www 100 A` makes it 100. BIND
//!   is silent here; tern warns at the first record of the later group.
//!
//! What tern does not model: BIND also ends every group when a group's
//! RDATA outgrows its 64 KiB buffer, and an `$INCLUDE` of a file without
//! records ends the groups around it (tern sees no change of file); a
//! `$GENERATE` of one record looks like a plain record here.
//!
//! Cost: one pass over the records with two small per-group tables, one
//! hash table of RRsets (16 octets each, the table made with room for one
//! per record: about 10 octets a record) and two `u32` per record.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use hashbrown::{hash_table, DefaultHashBuilder, HashTable};
use tern_wire::name::{Name, MAX_NAME_LEN};
use tern_wire::types::RType;

use crate::diagnostic::{Diagnostic, Severity};
use crate::records::{RecordList, RecordRef};
use crate::{Location, Record};

/// The type an RRSIG covers (its first two octets), or type 0 when short:
/// an RRSIG's TTL goes with the RRset it covers.
pub fn covered_type(rdata: &[u8]) -> RType {
    match rdata {
        [high, low, ..] => RType(u16::from_be_bytes([*high, *low])),
        _ => RType(0),
    }
}

/// Gives every record of `records` the TTL its RRset is served with, where
/// the file gave the RRset several (BIND's reading, see the module docs).
/// Call it after [`crate::check::check_zone`], which reports the records
/// whose TTL this changes.
pub fn settle_ttls(records: &mut crate::Records) {
    let ttls = RrsetTtls::of(&*records);
    settle_ttls_with(records, &ttls);
}

/// [`settle_ttls`] with `ttls` read already by [`RrsetTtls::of`] from
/// these records (unchanged since): so that a caller can read them while
/// another thread checks the zone. Bound: the records changed.
pub fn settle_ttls_with(records: &mut crate::Records, ttls: &RrsetTtls) {
    for &(index, ttl) in ttls.changes() {
        records.set_ttl(index as usize, ttl);
    }
}

//----------- RrsetTtls ------------------------------------------------------

/// The TTLs the RRsets of a zone file are served with, and the warnings
/// about records whose TTL is not their RRset's: see the module docs.
#[derive(Clone, Debug, Default)]
pub struct RrsetTtls {
    /// `(record index, served TTL)` of every record whose own TTL is not
    /// its RRset's, in file order.
    changes: Vec<(u32, u32)>,
    /// The warnings, in file order.
    diagnostics: Vec<Diagnostic>,
}

impl RrsetTtls {
    /// Reads the TTLs of `records`, which must be in file order.
    pub fn of<R: RecordList + ?Sized>(records: &R) -> Self {
        Reader::new(records).read()
    }

    /// The records whose served TTL is not the one written: `(index,
    /// served TTL)`, in file order. Empty for a file that gives each
    /// RRset one TTL.
    pub fn changes(&self) -> &[(u32, u32)] {
        &self.changes
    }

    /// The TTL the record at `index` is served with: its own unless
    /// [`RrsetTtls::changes`] names it.
    pub fn served(&self, index: usize, written: u32) -> u32 {
        match self
            .changes
            .binary_search_by_key(&(index as u64), |&(at, _)| u64::from(at))
        {
            Ok(found) => self.changes[found].1,
            Err(_) => written,
        }
    }

    /// A warning at every record whose TTL differs from the first record
    /// of its RRset before it in its group (where BIND warns "TTL set to
    /// prior TTL"), and at the first record of a later group whose TTL
    /// differs from the earlier group's; each says the TTL served.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Gives every record of `records` its RRset's TTL.
    pub fn apply(&self, records: &mut [Record]) {
        for &(index, ttl) in &self.changes {
            if let Some(record) = records.get_mut(index as usize) {
                record.ttl = ttl;
            }
        }
    }
}

//----------- Reader ---------------------------------------------------------

/// No group, or no record.
const NONE: u32 = u32::MAX;

/// An open group: the record that opened it (its owner spelling and file),
/// and the first record of each RRset in it.
struct Group {
    id: u32,
    opener: u32,
    file: u32,
    /// (type, type covered) -> the first record of that RRset in the group.
    leads: HashMap<(RType, RType), u32>,
    /// The group's NS records (the current group only): whose targets'
    /// records are its glue.
    ns: Vec<u32>,
}

/// One RRset of the zone: a record of it (for the key), the lead record of
/// the group that gives its TTL and when that group ended, and the lead of
/// the last group seen in file order.
struct Rrset {
    key: u32,
    best_lead: u32,
    best_end: u32,
    last_lead: u32,
}

struct Reader<'r, R: RecordList + ?Sized> {
    records: &'r R,
    /// The group of each record.
    group_of: Vec<u32>,
    /// The first record of each record's RRset within its group.
    lead_of: Vec<u32>,
    /// When each group ended: a sequence number.
    ended: Vec<u32>,
    current: Option<Group>,
    glue: Option<Group>,
    /// Recycled group tables.
    spare: Vec<Group>,
}

impl<'r, R: RecordList + ?Sized> Reader<'r, R> {
    fn new(records: &'r R) -> Self {
        Reader {
            records,
            group_of: Vec::with_capacity(records.len()),
            lead_of: Vec::with_capacity(records.len()),
            ended: Vec::new(),
            current: None,
            glue: None,
            spare: Vec::new(),
        }
    }

    fn record(&self, index: u32) -> RecordRef<'r> {
        self.records.record(index as usize)
    }

    fn open(&mut self, opener: u32, file: u32) -> Group {
        let id = self.ended.len() as u32;
        self.ended.push(NONE);
        let mut group = self.spare.pop().unwrap_or_else(|| Group {
            id,
            opener,
            file,
            leads: HashMap::new(),
            ns: Vec::new(),
        });
        group.id = id;
        group.opener = opener;
        group.file = file;
        group
    }

    fn end(&mut self, group: Option<Group>, sequence: &mut u32) {
        if let Some(mut group) = group {
            self.ended[group.id as usize] = *sequence;
            *sequence += 1;
            group.leads.clear();
            group.ns.clear();
            self.spare.push(group);
        }
    }

    /// Whether `owner` is the target of one of the current group's NS
    /// records (compared ignoring case, as BIND's `is_glue` does).
    fn is_glue(&self, owner: Name<'_>) -> bool {
        self.current.as_ref().is_some_and(|current| {
            current
                .ns
                .iter()
                .any(|&ns| self.record(ns).rdata.eq_ignore_ascii_case(owner.as_bytes()))
        })
    }

    /// Whether the record at `index` came from a `$GENERATE`: it shares
    /// its location with a neighbour (a line holds one record otherwise).
    fn generated(&self, index: usize, location: Location) -> bool {
        let same = |other: usize| self.records.record(other).location == location;
        (index > 0 && same(index - 1)) || (index + 1 < self.records.len() && same(index + 1))
    }

    /// The groups: fills `group_of`, `lead_of` and `ended`.
    fn group(&mut self) {
        let mut sequence = 0u32;
        for index in 0..self.records.len() {
            let record = self.records.record(index);
            let at = index as u32;
            let key = (record.rtype, covered(&record));
            if self.generated(index, record.location) {
                let group = self.open(at, record.location.file);
                self.group_of.push(group.id);
                self.lead_of.push(at);
                self.end(Some(group), &mut sequence);
                continue;
            }
            let same_as = |group: &Option<Group>, reader: &Self| {
                group.as_ref().is_some_and(|group| {
                    group.file == record.location.file
                        && reader.record(group.opener).owner.as_bytes() == record.owner.as_bytes()
                })
            };
            if self.glue.is_some() && !same_as(&self.glue, self) {
                let glue = self.glue.take();
                self.end(glue, &mut sequence);
            }
            if self.glue.is_none() && !same_as(&self.current, self) {
                let in_file = self
                    .current
                    .as_ref()
                    .is_some_and(|current| current.file == record.location.file);
                if in_file && self.is_glue(record.owner) {
                    self.glue = Some(self.open(at, record.location.file));
                } else {
                    let current = self.current.take();
                    self.end(current, &mut sequence);
                    self.current = Some(self.open(at, record.location.file));
                }
            }
            let in_glue = self.glue.is_some();
            let group = if in_glue {
                self.glue.as_mut()
            } else {
                self.current.as_mut()
            }
            .expect("a group is open");
            let lead = *group.leads.entry(key).or_insert(at);
            if !in_glue && record.rtype == RType::NS {
                group.ns.push(at);
            }
            self.group_of.push(group.id);
            self.lead_of.push(lead);
        }
        let glue = self.glue.take();
        self.end(glue, &mut sequence);
        let current = self.current.take();
        self.end(current, &mut sequence);
    }

    fn read(mut self) -> RrsetTtls {
        self.group();
        let records = self.records;
        let hasher = DefaultHashBuilder::default();
        let hash = |record: &RecordRef<'_>| {
            let mut lower = [0u8; MAX_NAME_LEN];
            let owner = &mut lower[..record.owner.len()];
            owner.copy_from_slice(record.owner.as_bytes());
            owner.make_ascii_lowercase();
            let mut state = hasher.build_hasher();
            state.write(owner);
            state.write_u16(record.rtype.0);
            state.write_u16(covered(record).0);
            state.finish()
        };
        let same_rrset = |a: &RecordRef<'_>, b: &RecordRef<'_>| {
            a.rtype == b.rtype
                && covered(a) == covered(b)
                && a.owner.as_bytes().eq_ignore_ascii_case(b.owner.as_bytes())
        };
        let mut rrsets: Vec<Rrset> = Vec::new();
        // Room for an RRset per record from the start: a table that grew
        // would hash every RRset again at each doubling, each reading its
        // key record from the list (a cache miss apiece in a large zone).
        let mut table: HashTable<u32> = HashTable::with_capacity(records.len());
        let mut rrset_of: Vec<u32> = Vec::with_capacity(records.len());
        // (record, earlier group's lead) where a later group's TTL differs.
        let mut regrouped: Vec<(u32, u32)> = Vec::new();
        for index in 0..records.len() {
            let record = records.record(index);
            let at = index as u32;
            let hashed = hash(&record);
            // One probe of the table for the look-up and the insertion
            // (in a large zone, each probe is a cache miss).
            let entry = table.entry(
                hashed,
                |&id| same_rrset(&records.record(rrsets[id as usize].key as usize), &record),
                |&other| hash(&records.record(rrsets[other as usize].key as usize)),
            );
            let id = match entry {
                hash_table::Entry::Occupied(entry) => *entry.get(),
                hash_table::Entry::Vacant(entry) => {
                    let id = rrsets.len() as u32;
                    entry.insert(id);
                    rrsets.push(Rrset {
                        key: at,
                        best_lead: at,
                        best_end: self.ended[self.group_of[index] as usize],
                        last_lead: at,
                    });
                    id
                }
            };
            rrset_of.push(id);
            let rrset = &mut rrsets[id as usize];
            if self.lead_of[index] == at && rrset.last_lead != at {
                if records.record(rrset.last_lead as usize).ttl != record.ttl {
                    regrouped.push((at, rrset.last_lead));
                }
                rrset.last_lead = at;
                let end = self.ended[self.group_of[index] as usize];
                if end > rrset.best_end {
                    rrset.best_lead = at;
                    rrset.best_end = end;
                }
            }
        }
        let served = |index: usize| {
            let best = rrsets[rrset_of[index] as usize].best_lead;
            records.record(best as usize).ttl
        };
        let mut out = RrsetTtls::default();
        let mut regrouped = regrouped.into_iter().peekable();
        for index in 0..records.len() {
            let record = records.record(index);
            let ttl = served(index);
            if ttl != record.ttl {
                out.changes.push((index as u32, ttl));
            }
            let lead = self.lead_of[index];
            let lead_record = records.record(lead as usize);
            if lead as usize != index && lead_record.ttl != record.ttl {
                let what = format!(
                    "TTL {} differs from the TTL {} of the {} record at line {} before it; \
                     the RRset is served with TTL {ttl}",
                    record.ttl, lead_record.ttl, record.rtype, lead_record.location.line,
                );
                out.diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    record.location,
                    record.owner,
                    &what,
                ));
            }
            if let Some((_, earlier)) = regrouped.next_if(|&(at, _)| at as usize == index) {
                let earlier = records.record(earlier as usize);
                let place = if earlier.location.file == record.location.file {
                    format!("line {}", earlier.location.line)
                } else {
                    format!("line {} of another file", earlier.location.line)
                };
                let what = format!(
                    "TTL {} replaces the TTL {} of the {} records at {place}, an earlier group \
                     of this name (the last group's TTL is kept); the RRset is served with \
                     TTL {ttl}",
                    record.ttl, earlier.ttl, record.rtype,
                );
                out.diagnostics.push(Diagnostic::new(
                    Severity::Warning,
                    record.location,
                    record.owner,
                    &what,
                ));
            }
        }
        out
    }
}

/// The type an RRSIG covers; type 0 for any other record.
fn covered(record: &RecordRef<'_>) -> RType {
    if record.rtype == RType::RRSIG {
        covered_type(record.rdata)
    } else {
        RType(0)
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::path::Path;

    use tern_wire::name::NameBuf;

    use super::*;
    use crate::{parse_bytes, NoInclude, Options};

    /// `text`, a zone of `example.` read from `t.zone`.
    fn parse_example(text: &str) -> crate::ParsedZone {
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        parse_bytes(
            text.as_bytes(),
            Path::new("t.zone"),
            origin.as_name(),
            &Options::default(),
            &mut NoInclude,
        )
        .unwrap()
    }

    /// The served TTL of every `www` A record and the lines warned at, for
    /// the records after a 3-line head. `crates/zone/tests/dump` checks
    /// more cases against `named-checkzone -D` itself; these numbers are
    /// what it printed.
    fn read(body: &str) -> (Vec<u32>, Vec<u32>) {
        let text = format!("$TTL 300\n@ SOA ns1 host 1 2 3 4 5\n NS ns1\n{body}");
        let zone = parse_example(&text);
        let ttls = RrsetTtls::of(&zone.records);
        let mut records = zone.records.clone();
        ttls.apply(&mut records);
        let www: Vec<u32> = records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.rtype == RType::A && r.owner.to_string() == "www.example.")
            .map(|(index, r)| {
                assert_eq!(ttls.served(index, zone.records[index].ttl), r.ttl);
                r.ttl
            })
            .collect();
        let lines = ttls
            .diagnostics()
            .iter()
            .map(|diagnostic| diagnostic.location.line)
            .collect();
        (www, lines)
    }

    #[test]
    fn first_of_a_group_last_group_wins() {
        // One group: the first record's TTL, duplicates included.
        assert_eq!(
            read("www 600 A 192.0.2.1\nwww 100 A 192.0.2.1\n"),
            (vec![600, 600], vec![5])
        );
        assert_eq!(
            read("www 600 A 192.0.2.1\nwww A 192.0.2.2\n"),
            (vec![600, 600], vec![5])
        );
        // Another name between: the later group's TTL, warned at its start.
        assert_eq!(
            read("www 600 A 192.0.2.1\nmail A 192.0.2.9\nwww 100 A 192.0.2.2\n"),
            (vec![100, 100], vec![6])
        );
        // Another type of the same name does not end the group.
        assert_eq!(
            read("www 600 A 192.0.2.1\nwww TXT x\nwww 100 A 192.0.2.2\n"),
            (vec![600, 600], vec![6])
        );
        // Nor does glue below a delegation of the group.
        assert_eq!(
            read("www 600 A 192.0.2.1\nwww NS ns.www\nns.www A 192.0.2.5\nwww 100 A 192.0.2.2\n"),
            (vec![600, 600], vec![7])
        );
        // A $GENERATE's records are groups of their own, ended at once.
        assert_eq!(
            read("www 600 A 192.0.2.1\n$GENERATE 7-8 www 100 A 192.0.2.$\nwww 50 A 192.0.2.2\n"),
            (vec![600, 600, 600, 600], vec![5, 6])
        );
        // Spelled otherwise: another group.
        assert_eq!(
            read("www 600 A 192.0.2.1\nWWW 100 A 192.0.2.2\n"),
            (vec![100], vec![5])
        );
    }

    /// Cost: reading the TTLs of a zone of `names` A RRsets reads each
    /// record a fixed number of times, at 1,000 names as at 20,000: the
    /// RRsets' table never grows, so no RRset is hashed again (a table
    /// that grew read each RRset's key record again at every doubling:
    /// 9.5 to 9.9 reads per record at these sizes, against 8.0 without).
    #[test]
    fn reads_per_record_do_not_grow_with_the_zone() {
        use std::cell::Cell;

        use crate::records::RecordList;

        struct Counted<'a> {
            records: &'a [Record],
            reads: Cell<usize>,
        }
        impl RecordList for Counted<'_> {
            fn len(&self) -> usize {
                self.records.len()
            }
            fn record(&self, index: usize) -> RecordRef<'_> {
                self.reads.set(self.reads.get() + 1);
                self.records.record(index)
            }
        }
        let reads = |names: usize| {
            let mut text = String::from("$TTL 300\n@ SOA ns1 host 1 2 3 4 5\n NS ns1\n");
            for name in 0..names {
                text.push_str(&format!("h{name} A 192.0.2.1\n"));
            }
            let zone = parse_example(&text);
            let counted = Counted {
                records: &zone.records,
                reads: Cell::new(0),
            };
            assert!(RrsetTtls::of(&counted).changes().is_empty());
            counted.reads.get() as f64 / zone.records.len() as f64
        };
        let (small, large) = (reads(1_000), reads(20_000));
        eprintln!("reads per record: {small:.2} at 1,000 names, {large:.2} at 20,000");
        assert!(large < 8.1, "{large:.2} reads per record at 20,000 names");
        assert!(
            large - small < 0.1,
            "{small:.2} then {large:.2} reads per record"
        );
    }
}
