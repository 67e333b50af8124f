//! Where scanned records go: sinks, and a compact record list.
//!
//! The scanner hands each record to a [`Sink`] as a borrowed
//! [`RecordRef`] (the owner and RDATA live in the scanner's buffers until
//! the next record), so what is kept, and how, is the caller's choice:
//!
//! - `Vec<Record>` keeps one owned [`Record`] per record: convenient for
//!   tests, `tern dump` and small zones, but each record carries a
//!   256-octet name buffer and a heap-allocated RDATA;
//! - [`Records`] keeps every record as a fixed-size entry of offsets into
//!   two byte arenas (owners, RDATA), about 32 octets plus the owner and
//!   RDATA bytes, with no allocation per record: what a server loading a
//!   large zone wants. Consecutive records of one owner (the usual case)
//!   share one copy of the owner.
//!
//! [`RecordList`] gives [`crate::check::check_zone`] the same read access
//! to either.

use tern_wire::name::Name;
use tern_wire::types::{RClass, RType};

use crate::{Location, Record};

//----------- RecordRef ------------------------------------------------------

/// One record, borrowed: from the scanner while it is being handed to a
/// [`Sink`], or from a [`RecordList`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// The owner, absolute, in the case it was written.
    pub owner: Name<'a>,
    /// The class.
    pub class: RClass,
    /// The TTL in seconds.
    pub ttl: u32,
    /// The record type.
    pub rtype: RType,
    /// The RDATA in uncompressed wire form.
    pub rdata: &'a [u8],
    /// Where the record was written.
    pub location: Location,
}

impl RecordRef<'_> {
    /// Copies the record into an owned [`Record`].
    pub fn to_record(&self) -> Record {
        Record {
            owner: self.owner.to_buf(),
            class: self.class,
            ttl: self.ttl,
            rtype: self.rtype,
            rdata: self.rdata.to_vec(),
            location: self.location,
        }
    }
}

//----------- Sink -----------------------------------------------------------

/// Receives the records of a zone as the scanner reads them, in file order.
pub trait Sink {
    /// Room for about `records` more records is wanted (a hint).
    fn reserve(&mut self, records: usize) {
        let _ = records;
    }

    /// Takes one record. An error (such as a zone too large for the sink)
    /// is reported at the record's location, and the scan goes on.
    fn record(&mut self, record: RecordRef<'_>) -> Result<(), &'static str>;

    /// Takes the records of a part of a file read on a thread of its own,
    /// in file order, if it can take them at once; `false`: they are
    /// handed to [`Sink::record`] one by one instead.
    fn append(&mut self, records: &Records) -> bool {
        let _ = records;
        false
    }
}

impl Sink for Vec<Record> {
    fn reserve(&mut self, records: usize) {
        Vec::reserve(self, records);
    }

    fn record(&mut self, record: RecordRef<'_>) -> Result<(), &'static str> {
        self.push(record.to_record());
        Ok(())
    }
}

//----------- RecordList -----------------------------------------------------

/// Read access by index to the records of a zone, in file order.
pub trait RecordList {
    /// The number of records.
    fn len(&self) -> usize;

    /// Whether there are no records.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The record at `index` (less than [`RecordList::len`]).
    fn record(&self, index: usize) -> RecordRef<'_>;

    /// The type of the record at `index`; cheaper than a whole
    /// [`RecordList::record`] for some lists.
    fn rtype(&self, index: usize) -> RType {
        self.record(index).rtype
    }
}

impl RecordList for [Record] {
    fn len(&self) -> usize {
        <[Record]>::len(self)
    }

    fn record(&self, index: usize) -> RecordRef<'_> {
        let record = &self[index];
        record.as_record_ref()
    }

    fn rtype(&self, index: usize) -> RType {
        self[index].rtype
    }
}

impl RecordList for Vec<Record> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn record(&self, index: usize) -> RecordRef<'_> {
        self.as_slice().record(index)
    }

    fn rtype(&self, index: usize) -> RType {
        self[index].rtype
    }
}

//----------- Records --------------------------------------------------------

/// One record of [`Records`]: offsets into its arenas. 32 octets.
#[derive(Clone, Copy, Debug)]
struct Entry {
    location: Location,
    ttl: u32,
    owner_start: u32,
    rdata_start: u32,
    rtype: RType,
    class: RClass,
    rdata_len: u16,
    owner_len: u8,
}

/// The records of a zone in flat arenas: no allocation per record.
///
/// Offsets are 32-bit, so a list holds at most 4 GiB of owner names and
/// 4 GiB of RDATA; past that, [`Sink::record`] refuses records.
#[derive(Clone, Debug, Default)]
pub struct Records {
    entries: Vec<Entry>,
    /// Owner names in wire form, as written; a record whose owner is
    /// spelled exactly like the previous record's shares its copy.
    owners: Vec<u8>,
    rdata: Vec<u8>,
}

impl Records {
    /// An empty list.
    pub fn new() -> Self {
        Records::default()
    }

    /// The records in file order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = RecordRef<'_>> + '_ {
        (0..self.entries.len()).map(|index| self.record(index))
    }

    /// The octets of RDATA held, over all records.
    pub fn rdata_len(&self) -> usize {
        self.rdata.len()
    }

    /// Serves the record at `index` with `ttl` (see
    /// [`crate::ttl::settle_ttls`]).
    pub(crate) fn set_ttl(&mut self, index: usize, ttl: u32) {
        if let Some(entry) = self.entries.get_mut(index) {
            entry.ttl = ttl;
        }
    }

    /// Appends `other`'s records, if the offsets fit (see [`Records`]).
    fn append_records(&mut self, other: &Records) -> bool {
        let fits = |base: usize, more: usize| {
            base.checked_add(more)
                .is_some_and(|end| u32::try_from(end).is_ok())
        };
        if !fits(self.owners.len(), other.owners.len())
            || !fits(self.rdata.len(), other.rdata.len())
        {
            return false;
        }
        // The first owner shares the last one's copy when spelled alike, as
        // if the records had come one by one.
        let shared = match (self.entries.last(), other.entries.first()) {
            (Some(last), Some(first)) if self.owner_bytes(last) == other.owner_bytes(first) => {
                Some((last.owner_start, first.owner_start))
            }
            _ => None,
        };
        let owner_base = self.owners.len() as u32;
        let rdata_base = self.rdata.len() as u32;
        self.owners.extend_from_slice(&other.owners);
        self.rdata.extend_from_slice(&other.rdata);
        self.entries.reserve(other.entries.len());
        for entry in &other.entries {
            let owner_start = match shared {
                Some((last, first)) if entry.owner_start == first => last,
                _ => owner_base + entry.owner_start,
            };
            self.entries.push(Entry {
                owner_start,
                rdata_start: rdata_base + entry.rdata_start,
                ..*entry
            });
        }
        true
    }

    /// A copy of the list with the records `range` replaced by `with`'s
    /// (a reload's changed part of a file, [`crate::scan_region`]), the
    /// lines of the records after it moved by `line_shift`; `None` when
    /// `range` is not in the list or the offsets do not fit. Bound: a copy
    /// of each arena, and a pass over the records after `range`.
    pub fn spliced(
        &self,
        range: std::ops::Range<usize>,
        with: &Records,
        line_shift: i64,
    ) -> Option<Records> {
        if range.start > range.end || range.end > self.entries.len() {
            return None;
        }
        let before = &self.entries[..range.start];
        let after = &self.entries[range.end..];
        // Owners and RDATA are stored in record order: the records before
        // `range` use the arenas up to the last one's ends, those after
        // from the first one's starts.
        let (owners_end, rdata_end) = before.last().map_or((0, 0), |last| {
            (
                last.owner_start as usize + usize::from(last.owner_len),
                last.rdata_start as usize + usize::from(last.rdata_len),
            )
        });
        let mut out = Records {
            entries: Vec::with_capacity(before.len() + with.entries.len() + after.len()),
            owners: Vec::with_capacity(self.owners.len() + with.owners.len()),
            rdata: Vec::with_capacity(self.rdata.len() + with.rdata.len()),
        };
        out.entries.extend_from_slice(before);
        out.owners.extend_from_slice(&self.owners[..owners_end]);
        out.rdata.extend_from_slice(&self.rdata[..rdata_end]);
        if !out.append_records(with) {
            return None;
        }
        if let Some(first) = after.first() {
            let (owner_from, rdata_from) = (first.owner_start as usize, first.rdata_start as usize);
            let owner_base = i64::try_from(out.owners.len()).ok()? - owner_from as i64;
            let rdata_base = i64::try_from(out.rdata.len()).ok()? - rdata_from as i64;
            if u32::try_from(out.owners.len() + self.owners.len() - owner_from).is_err()
                || u32::try_from(out.rdata.len() + self.rdata.len() - rdata_from).is_err()
            {
                return None;
            }
            out.owners.extend_from_slice(&self.owners[owner_from..]);
            out.rdata.extend_from_slice(&self.rdata[rdata_from..]);
            for entry in after {
                let mut location = entry.location;
                location.line = u32::try_from(i64::from(location.line) + line_shift).ok()?;
                out.entries.push(Entry {
                    location,
                    // Within u32: checked above.
                    owner_start: (i64::from(entry.owner_start) + owner_base) as u32,
                    rdata_start: (i64::from(entry.rdata_start) + rdata_base) as u32,
                    ..*entry
                });
            }
        }
        Some(out)
    }

    fn owner_bytes(&self, entry: &Entry) -> &[u8] {
        let start = entry.owner_start as usize;
        &self.owners[start..start + usize::from(entry.owner_len)]
    }
}

impl Sink for Records {
    fn reserve(&mut self, records: usize) {
        self.entries.reserve(records);
    }

    fn append(&mut self, records: &Records) -> bool {
        self.append_records(records)
    }

    fn record(&mut self, record: RecordRef<'_>) -> Result<(), &'static str> {
        const TOO_LARGE: &str = "zone too large: more than 4 GiB of names or RDATA";
        let owner = record.owner.as_bytes();
        let owner_start = match self.entries.last() {
            Some(last) if self.owner_bytes(last) == owner => last.owner_start,
            _ => {
                let start = u32::try_from(self.owners.len()).map_err(|_| TOO_LARGE)?;
                self.owners.extend_from_slice(owner);
                start
            }
        };
        let rdata_start = u32::try_from(self.rdata.len()).map_err(|_| TOO_LARGE)?;
        let rdata_len = u16::try_from(record.rdata.len()).map_err(|_| "RDATA exceeds 65535")?;
        self.rdata.extend_from_slice(record.rdata);
        self.entries.push(Entry {
            location: record.location,
            ttl: record.ttl,
            owner_start,
            rdata_start,
            rtype: record.rtype,
            class: record.class,
            rdata_len,
            // A wire name is at most 255 octets.
            owner_len: owner.len() as u8,
        });
        Ok(())
    }
}

impl RecordList for Records {
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn record(&self, index: usize) -> RecordRef<'_> {
        let entry = &self.entries[index];
        let start = entry.rdata_start as usize;
        RecordRef {
            owner: Name::from_wire(self.owner_bytes(entry))
                .expect("owners are valid names when stored"),
            class: entry.class,
            ttl: entry.ttl,
            rtype: entry.rtype,
            rdata: &self.rdata[start..start + usize::from(entry.rdata_len)],
            location: entry.location,
        }
    }

    fn rtype(&self, index: usize) -> RType {
        self.entries[index].rtype
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::path::Path;

    use tern_wire::name::NameBuf;

    use super::*;
    use crate::{scan_bytes, NoInclude, Options};

    const TEXT: &[u8] = b"$TTL 60\n@ SOA ns host 1 2 3 4 5\n NS ns\nns A 192.0.2.1\n\
                          NS AAAA ::1\nwww 30 TXT \"a\" \"b\"\n";

    /// Both sinks see the same records; the compact list shares the owner
    /// of consecutive records spelled alike.
    #[test]
    fn compact_list_matches_owned_records() {
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let mut owned: Vec<Record> = Vec::new();
        let mut compact = Records::new();
        for sink in [&mut owned as &mut dyn Sink, &mut compact] {
            let files = scan_bytes(
                TEXT,
                Path::new("z"),
                origin.as_name(),
                &Options::default(),
                &mut NoInclude,
                sink,
            )
            .unwrap();
            assert_eq!(files, [Path::new("z")]);
        }
        assert_eq!(RecordList::len(&compact), 5);
        assert_eq!(compact.iter().len(), 5);
        for (index, record) in compact.iter().enumerate() {
            assert_eq!(record, owned.record(index));
            assert_eq!(record.to_record(), owned[index]);
            assert_eq!(compact.rtype(index), owned[index].rtype);
        }
        // example. twice, ns., NS. (spelled differently), www.
        let lengths = ["example.", "ns.example.", "NS.example.", "www.example."].map(|text| {
            NameBuf::from_text(text.as_bytes(), None)
                .unwrap()
                .as_bytes()
                .len()
        });
        assert_eq!(compact.owners.len(), lengths.iter().sum::<usize>());
        assert_eq!(
            compact.rdata_len(),
            owned.iter().map(|r| r.rdata.len()).sum::<usize>()
        );
        assert_eq!(core::mem::size_of::<Entry>(), 32);
    }

    /// The checks read both lists alike: same findings, same locations.
    #[test]
    fn checks_agree_on_both_lists() {
        let text = b"@ SOA ns host 1 2 3 4 5\nmail A 192.0.2.1\nwww CNAME mail\n\
                     sub NS ns.sub\nWWW TXT x\nother.net. A 192.0.2.2\nns A 192.0.2.3\n";
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let mut owned: Vec<Record> = Vec::new();
        let mut compact = Records::new();
        for sink in [&mut owned as &mut dyn Sink, &mut compact] {
            scan_bytes(
                text,
                Path::new("z"),
                origin.as_name(),
                &Options::default(),
                &mut NoInclude,
                sink,
            )
            .unwrap();
        }
        let render = |diagnostics: Vec<crate::check::Diagnostic>| -> Vec<String> {
            diagnostics.iter().map(ToString::to_string).collect()
        };
        let findings = render(crate::check::check_zone(origin.as_name(), &compact));
        assert_eq!(
            findings,
            render(crate::check::check_zone(origin.as_name(), &owned))
        );
        assert_eq!(
            findings,
            [
                "1:1: error: example.: missing NS at the zone apex",
                "4:1: warning: sub.example.: missing glue record (ns.sub.example. has no A or AAAA)",
                "5:1: error: WWW.example.: another record exists beside CNAME",
                "6:1: error: other.net.: record is out of zone example.",
            ]
        );
    }
}
