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
//!   share one copy of the owner. A list a reload splices
//!   ([`Records::spliced`]) shares the runs of records it keeps with the
//!   list it was made from.
//!
//! [`RecordList`] gives [`crate::check::check_zone`] the same read access
//! to either.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

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

/// Entries, owner octets and RDATA octets: the room records take.
type Room = (usize, usize, usize);

/// Records in flat arenas: entries, and the owner names and RDATA they
/// point into, in record order.
#[derive(Clone, Debug, Default)]
struct Flat {
    entries: Vec<Entry>,
    /// Owner names in wire form, as written; a record whose owner is
    /// spelled exactly like the previous record's shares its copy.
    owners: Vec<u8>,
    rdata: Vec<u8>,
}

impl Flat {
    fn owner_bytes(&self, entry: &Entry) -> &[u8] {
        let start = entry.owner_start as usize;
        &self.owners[start..start + usize::from(entry.owner_len)]
    }

    /// The owner and RDATA octets the entries `range` point into: the
    /// spans of the two arenas they use (offsets grow with the entries).
    fn spans(&self, range: Range<usize>) -> (Range<usize>, Range<usize>) {
        let entries = &self.entries[range];
        match (entries.first(), entries.last()) {
            (Some(first), Some(last)) => (
                first.owner_start as usize..last.owner_start as usize + usize::from(last.owner_len),
                first.rdata_start as usize..last.rdata_start as usize + usize::from(last.rdata_len),
            ),
            _ => (0..0, 0..0),
        }
    }

    /// The room the records `range` take: entries, owner and RDATA
    /// octets.
    fn room(&self, range: Range<usize>) -> Room {
        let (owners, rdata) = self.spans(range.clone());
        (range.len(), owners.len(), rdata.len())
    }

    /// Reserves `room` more.
    fn reserve(&mut self, (entries, owners, rdata): Room) {
        self.entries.reserve(entries);
        self.owners.reserve(owners);
        self.rdata.reserve(rdata);
    }

    /// Appends the records `range` of `other`, their lines moved by
    /// `line_shift`, if the offsets fit (see [`Records`]): their entries
    /// and the arena spans they use, copied whole. Bound: the run's
    /// entries and octets.
    fn append_run(&mut self, other: &Flat, range: Range<usize>, line_shift: i64) -> bool {
        let fits = |base: usize, more: usize| {
            base.checked_add(more)
                .is_some_and(|end| u32::try_from(end).is_ok())
        };
        let (owners, rdata) = other.spans(range.clone());
        if !fits(self.owners.len(), owners.len()) || !fits(self.rdata.len(), rdata.len()) {
            return false;
        }
        // The first owner shares the last one's copy when spelled alike, as
        // if the records had come one by one.
        let shared = match (self.entries.last(), other.entries.get(range.start)) {
            (Some(last), Some(first))
                if !range.is_empty() && self.owner_bytes(last) == other.owner_bytes(first) =>
            {
                Some((last.owner_start, first.owner_start))
            }
            _ => None,
        };
        // Both fit in `u32` (checked above; the spans are in `other`'s).
        let owner_base = self.owners.len() as u32;
        let rdata_base = self.rdata.len() as u32;
        let (owner_from, rdata_from) = (owners.start as u32, rdata.start as u32);
        self.owners.extend_from_slice(&other.owners[owners]);
        self.rdata.extend_from_slice(&other.rdata[rdata]);
        self.entries.reserve(range.len());
        for entry in &other.entries[range] {
            let owner_start = match shared {
                Some((last, first)) if entry.owner_start == first => last,
                _ => owner_base + (entry.owner_start - owner_from),
            };
            self.entries.push(Entry {
                owner_start,
                rdata_start: rdata_base + (entry.rdata_start - rdata_from),
                location: moved(entry.location, line_shift),
                ..*entry
            });
        }
        true
    }

    fn push(&mut self, record: RecordRef<'_>) -> Result<(), &'static str> {
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

/// A run of records of [`Records`]: `range` of a flat list's entries
/// (shared with other lists), their lines moved by `line_shift`.
#[derive(Clone, Debug)]
struct Part {
    flat: Arc<Flat>,
    range: Range<usize>,
    line_shift: i64,
}

/// The most parts a list made by [`Records::spliced`] has; past it, the
/// splice copies the list into one flat list again (as it does when the
/// list lost more than half of the records it would share).
pub const MAX_PARTS: usize = 16;

/// The records of a zone in flat arenas: no allocation per record.
///
/// A list read from a file is one flat list; one made by
/// [`Records::spliced`] shares the runs of records it keeps with the list
/// it was made from (at most [`MAX_PARTS`] runs), so a reload's splice
/// copies the records of the change, not the zone; a TTL set in such a
/// list copies the run it is in ([`crate::ttl::settle_ttls`]).
///
/// Offsets are 32-bit, so a list holds at most 4 GiB of owner names and
/// 4 GiB of RDATA; past that, [`Sink::record`] refuses records.
#[derive(Debug, Default)]
pub struct Records {
    parts: Vec<Part>,
    /// Each part's first index in the list.
    starts: Vec<usize>,
    len: usize,
    /// The part the last record read was in: the next one read, in a
    /// pass over the list, is in it too (no search).
    hint: AtomicUsize,
}

impl Clone for Records {
    fn clone(&self) -> Self {
        Records {
            parts: self.parts.clone(),
            starts: self.starts.clone(),
            len: self.len,
            hint: AtomicUsize::new(0),
        }
    }
}

impl Records {
    /// An empty list.
    pub fn new() -> Self {
        Records::default()
    }

    /// The records in file order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = RecordRef<'_>> + '_ {
        (0..self.len).map(|index| self.record(index))
    }

    /// The octets of RDATA held, over all records.
    pub fn rdata_len(&self) -> usize {
        self.room().2
    }

    /// The room the records take (shared or not), summed over the parts.
    fn room(&self) -> Room {
        self.parts.iter().fold((0, 0, 0), |sum, part| {
            let room = part.flat.room(part.range.clone());
            (sum.0 + room.0, sum.1 + room.1, sum.2 + room.2)
        })
    }

    /// How many runs of records shared with other lists this one is made
    /// of (see [`Records::spliced`]).
    pub fn parts(&self) -> usize {
        self.parts.len()
    }

    /// The part holding `index`, and the index in its flat list.
    ///
    /// Panics if `index` is not less than the length (a caller's bug: no
    /// index comes from the network).
    fn locate(&self, index: usize) -> (&Part, usize) {
        assert!(
            index < self.len,
            "record {index} of a list of {} records",
            self.len
        );
        let hint = self.hint.load(Ordering::Relaxed);
        if let (Some(part), Some(&start)) = (self.parts.get(hint), self.starts.get(hint)) {
            if index >= start && index - start < part.range.len() {
                return (part, part.range.start + (index - start));
            }
        }
        let at = self.part_at(index);
        self.hint.store(at, Ordering::Relaxed);
        let part = &self.parts[at];
        (part, part.range.start + (index - self.starts[at]))
    }

    /// The index of the part holding record `index` (less than the
    /// length): a binary search of the parts' starts.
    fn part_at(&self, index: usize) -> usize {
        self.starts.partition_point(|&start| start <= index) - 1
    }

    /// Serves the record at `index` with `ttl` (see
    /// [`crate::ttl::settle_ttls`]). A part whose flat list is shared
    /// (with another list, or another part of this one, as after
    /// [`Records::spliced`]) first gets a flat list of its own holding its
    /// records only, not the shared list's others; a TTL already served
    /// copies nothing. With the number of records copied. Bound: the
    /// part's records, once per part.
    pub(crate) fn set_ttl(&mut self, index: usize, ttl: u32) -> usize {
        if index >= self.len {
            return 0;
        }
        let at = self.part_at(index);
        let offset = index - self.starts[at];
        let part = &mut self.parts[at];
        if part.flat.entries[part.range.start + offset].ttl == ttl {
            return 0;
        }
        let mut copied = 0;
        if Arc::get_mut(&mut part.flat).is_none() {
            let mut own = Flat::default();
            own.reserve(part.flat.room(part.range.clone()));
            // A run of a list whose offsets fit fits alone.
            if own.append_run(&part.flat, part.range.clone(), part.line_shift) {
                copied = part.range.len();
                *part = Part {
                    flat: Arc::new(own),
                    range: 0..copied,
                    line_shift: 0,
                };
            }
        }
        let position = part.range.start + offset;
        if let Some(entry) = Arc::make_mut(&mut part.flat).entries.get_mut(position) {
            entry.ttl = ttl;
        }
        copied
    }

    /// The last part's flat list, if records can be added to it: its
    /// records end the flat list, lines unmoved, and no other list shares
    /// it; else a new part with a flat list of its own.
    fn tail_flat(&mut self) -> &mut Flat {
        let usable = self.parts.last_mut().is_some_and(|part| {
            part.line_shift == 0
                && part.range.end == part.flat.entries.len()
                && Arc::get_mut(&mut part.flat).is_some()
        });
        if !usable {
            self.starts.push(self.len);
            self.parts.push(Part {
                flat: Arc::new(Flat::default()),
                range: 0..0,
                line_shift: 0,
            });
        }
        let part = self
            .parts
            .last_mut()
            .expect("a part was pushed if there was none");
        Arc::get_mut(&mut part.flat).expect("the last part's flat list is this list's alone")
    }

    /// Updates the last part's range and the length after records were
    /// added to its flat list.
    fn grown(&mut self) {
        if let Some(part) = self.parts.last_mut() {
            let added = part.flat.entries.len() - part.range.end;
            part.range.end = part.flat.entries.len();
            self.len += added;
        }
    }

    /// Appends `other`'s records, if the offsets fit (see [`Records`]).
    fn append_records(&mut self, other: &Records) -> bool {
        for part in &other.parts {
            let appended =
                self.tail_flat()
                    .append_run(&part.flat, part.range.clone(), part.line_shift);
            self.grown();
            if !appended {
                return false;
            }
        }
        true
    }

    /// The list copied into one flat list of its own, room reserved
    /// first; `None` if the offsets do not fit. Bound: the list's records
    /// and octets.
    fn flattened(&self) -> Option<Records> {
        let mut flat = Flat::default();
        flat.reserve(self.room());
        for part in &self.parts {
            if !flat.append_run(&part.flat, part.range.clone(), part.line_shift) {
                return None;
            }
        }
        let mut out = Records::new();
        let len = flat.entries.len();
        out.push_part(Part {
            flat: Arc::new(flat),
            range: 0..len,
            line_shift: 0,
        });
        Some(out)
    }

    /// The entries the flat lists this list's parts use hold, each list
    /// counted once: what this list keeps alive.
    fn held(&self) -> usize {
        let mut held = 0;
        for (at, part) in self.parts.iter().enumerate() {
            let first_use = !self.parts[..at]
                .iter()
                .any(|earlier| Arc::ptr_eq(&earlier.flat, &part.flat));
            if first_use {
                held += part.flat.entries.len();
            }
        }
        held
    }

    /// The list with the records `range` replaced by `with`'s (a reload's
    /// changed part of a file, [`crate::scan_region`]), the lines of the
    /// records after it moved by `line_shift` (lines that would leave the
    /// `u32` range stay at its ends); `None` when `range` is not in the
    /// list or the offsets do not fit. The records kept are shared with
    /// this list, not copied: the new list is this one's parts before
    /// `range`, a copy of `with`, and its parts after, unless that makes
    /// more than [`MAX_PARTS`] parts or its records are fewer than half
    /// of those the flat lists it would share hold (a list that shrank
    /// does not keep the records it lost alive), when all is copied into
    /// one flat list. With the number of records copied. Bound: a copy of
    /// `with`, a pass over the parts (and the copy of the list, every
    /// [`MAX_PARTS`] / 2 splices at least, or after it lost more records
    /// than it keeps).
    pub fn spliced(
        &self,
        range: std::ops::Range<usize>,
        with: &Records,
        line_shift: i64,
    ) -> Option<(Records, usize)> {
        if range.start > range.end || range.end > self.len {
            return None;
        }
        let mut out = Records::new();
        let mut copied = 0;
        // The parts before `range`, cut at its start.
        for (part, &start) in self.parts.iter().zip(&self.starts) {
            if start >= range.start {
                break;
            }
            let end = (part.range.start + (range.start - start)).min(part.range.end);
            out.push_part(Part {
                flat: Arc::clone(&part.flat),
                range: part.range.start..end,
                line_shift: part.line_shift,
            });
        }
        // `with`, copied into a flat list of its own.
        let with = with.flattened()?;
        copied += with.len;
        for part in with.parts {
            out.push_part(part);
        }
        // The parts after, from its end, their lines moved.
        for (part, &start) in self.parts.iter().zip(&self.starts) {
            let end = start + part.range.len();
            if end <= range.end {
                continue;
            }
            let from = part.range.start + range.end.saturating_sub(start);
            out.push_part(Part {
                flat: Arc::clone(&part.flat),
                range: from..part.range.end,
                line_shift: part.line_shift.saturating_add(line_shift),
            });
        }
        if out.parts.len() > MAX_PARTS || out.len < out.held() / 2 {
            out = out.flattened()?;
            copied += out.len;
        }
        Some((out, copied))
    }

    /// Appends a part (nothing if it is empty).
    fn push_part(&mut self, part: Part) {
        if part.range.is_empty() {
            return;
        }
        self.starts.push(self.len);
        self.len += part.range.len();
        self.parts.push(part);
    }
}

/// The record at `position` of `part`'s flat list, its line moved.
fn part_record(part: &Part, position: usize) -> RecordRef<'_> {
    let flat = &part.flat;
    let entry = &flat.entries[position];
    let start = entry.rdata_start as usize;
    RecordRef {
        owner: Name::from_wire(flat.owner_bytes(entry))
            .expect("owners are valid names when stored"),
        class: entry.class,
        ttl: entry.ttl,
        rtype: entry.rtype,
        rdata: &flat.rdata[start..start + usize::from(entry.rdata_len)],
        location: moved(entry.location, part.line_shift),
    }
}

/// `location` with its line moved by `line_shift` (kept in the `u32`
/// range, at its ends).
fn moved(mut location: Location, line_shift: i64) -> Location {
    if line_shift != 0 {
        let line = (i64::from(location.line) + line_shift).clamp(0, i64::from(u32::MAX));
        location.line = line as u32;
    }
    location
}

impl Sink for Records {
    fn reserve(&mut self, records: usize) {
        self.tail_flat().entries.reserve(records);
    }

    fn append(&mut self, records: &Records) -> bool {
        self.append_records(records)
    }

    fn record(&mut self, record: RecordRef<'_>) -> Result<(), &'static str> {
        let pushed = self.tail_flat().push(record);
        self.grown();
        pushed
    }
}

impl RecordList for Records {
    fn len(&self) -> usize {
        self.len
    }

    fn record(&self, index: usize) -> RecordRef<'_> {
        let (part, position) = self.locate(index);
        part_record(part, position)
    }

    fn rtype(&self, index: usize) -> RType {
        let (part, position) = self.locate(index);
        part.flat.entries[position].rtype
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
        assert_eq!(compact.parts.len(), 1);
        assert_eq!(
            compact.parts[0].flat.owners.len(),
            lengths.iter().sum::<usize>()
        );
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
            crate::scan_example(text, sink);
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

    /// Splices one after another share the records kept and read as a
    /// list copied whole would (lines moved, the replaced records gone),
    /// past [`MAX_PARTS`] too; a TTL set in one list is not the other's.
    #[test]
    fn spliced_lists_share_what_they_keep() {
        let read = |text: &str| {
            let mut records: Vec<Record> = Vec::new();
            crate::scan_example(text.as_bytes(), &mut records);
            records
        };
        let compact = |records: &[Record]| {
            let mut list = Records::new();
            for record in records {
                Sink::record(&mut list, record.as_record_ref()).unwrap();
            }
            list
        };
        let mut text = String::from("@ SOA ns host 1 2 3 4 5\n");
        for i in 0..200 {
            text.push_str(&format!("h{i} A 192.0.2.{}\n", i % 250));
        }
        let mut expected = read(&text);
        let mut list = compact(&expected);
        let mut copied_whole = false;
        for round in 0..3 * MAX_PARTS {
            // Replace record `at` by two (one line more), or two by one.
            let at = 1 + (round * 37) % 150;
            let (count, with) = if round % 2 == 0 {
                (
                    1,
                    vec![
                        format!("x{round} A 192.0.2.1"),
                        format!("y{round} A 192.0.2.2"),
                    ],
                )
            } else {
                (2, vec![format!("z{round} TXT r{round}")])
            };
            let line = expected[at].location.line;
            let mut new: Vec<Record> = read(&with.join("\n"));
            for (k, record) in new.iter_mut().enumerate() {
                record.location.line = line + k as u32;
            }
            let shift = new.len() as i64 - count as i64;
            let (next, copied) = list.spliced(at..at + count, &compact(&new), shift).unwrap();
            assert!(next.parts() <= MAX_PARTS, "{round}");
            if copied > new.len() {
                copied_whole = true;
                assert_eq!(next.parts(), 1, "{round}");
            } else {
                assert_eq!(copied, new.len(), "{round}");
            }
            let mut after: Vec<Record> = expected[at + count..].to_vec();
            for record in &mut after {
                record.location.line = (i64::from(record.location.line) + shift) as u32;
            }
            expected.truncate(at);
            expected.extend(new);
            expected.extend(after);
            assert_eq!(next.iter().len(), expected.len(), "{round}");
            for (index, record) in next.iter().enumerate() {
                assert_eq!(record, expected[index].as_record_ref(), "{round} {index}");
                assert_eq!(next.rtype(index), expected[index].rtype);
            }
            assert_eq!(
                next.rdata_len(),
                expected.iter().map(|r| r.rdata.len()).sum::<usize>()
            );
            // A TTL set in the new list leaves the old one as it was.
            let mut changed = next.clone();
            changed.set_ttl(0, 7);
            assert_eq!(changed.record(0).ttl, 7);
            assert_ne!(next.record(0).ttl, 7);
            list = next;
        }
        assert!(copied_whole, "past MAX_PARTS the list is copied whole");
        // Out of the list: none.
        assert!(list
            .spliced(0..list.len() + 1, &Records::new(), 0)
            .is_none());
    }

    /// A list of the SOA and `hosts` A records, one a line.
    fn hosts(hosts: usize) -> Records {
        let mut text = String::from("@ SOA ns host 1 2 3 4 5\n");
        for i in 0..hosts {
            text.push_str(&format!("h{i} 60 A 192.0.2.{}\n", i % 250));
        }
        let mut list = Records::new();
        crate::scan_example(text.as_bytes(), &mut list);
        list
    }

    /// A TTL set in a spliced list copies the records of the part it is
    /// in, not the flat list that part shares with the list it was
    /// spliced from (nor with the part on the other side of the splice):
    /// the same count at two sizes of that list; the list spliced from is
    /// left as it was. A TTL already served copies nothing.
    #[test]
    fn a_ttl_set_copies_its_part_only() {
        for size in [1000, 4000] {
            let base = hosts(size);
            let len = base.len();
            let with = hosts(0);
            // The SOA again, for the record 10 before the end.
            let (mut list, copied) = base.spliced(len - 10..len - 9, &with, 0).unwrap();
            assert_eq!((copied, list.parts()), (1, 3), "{size}");
            // In the part after the splice: its 9 records.
            assert_eq!(list.set_ttl(len - 5, 7), 9, "{size}");
            assert_eq!(list.set_ttl(len - 4, 7), 0, "{size}: its own now");
            // Served already: nothing.
            assert_eq!(list.set_ttl(3, 60), 0, "{size}");
            // In the spliced-in part, its own: nothing.
            assert_eq!(list.set_ttl(len - 10, 8), 0, "{size}");
            assert_eq!(list.parts(), 3);
            for (index, record) in list.iter().enumerate() {
                let ttl = match index {
                    i if i == len - 10 => 8,
                    i if i == len - 5 || i == len - 4 => 7,
                    _ => base.record(index).ttl,
                };
                assert_eq!(record.ttl, ttl, "{size} {index}");
                if index != len - 10 {
                    let mut expected = base.record(index);
                    expected.ttl = ttl;
                    assert_eq!(record, expected, "{size} {index}");
                }
            }
            assert!(base.iter().all(|record| record.ttl != 7 && record.ttl != 8));
            // The part before the splice: its records, not the base's all.
            assert_eq!(list.set_ttl(1, 9), len - 10, "{size}");
            assert_eq!(list.record(1).ttl, 9);
            assert_eq!(base.record(1).ttl, 60);
        }
    }

    /// A list that lost more than half of the records of the flat lists
    /// it would share is copied into one of its own (the lost records are
    /// not kept alive); one that lost few shares.
    #[test]
    fn a_shrunk_list_is_copied() {
        let base = hosts(200);
        let (kept, copied) = base.spliced(10..20, &Records::new(), 0).unwrap();
        assert_eq!((kept.parts(), copied), (2, 0));
        assert!(Arc::ptr_eq(&kept.parts[0].flat, &base.parts[0].flat));
        let (shrunk, copied) = base.spliced(10..160, &Records::new(), -150).unwrap();
        assert_eq!((shrunk.parts(), copied), (1, 51));
        assert_eq!(shrunk.parts[0].flat.entries.len(), 51);
        assert_eq!(shrunk.parts[0].flat.entries.capacity(), 51);
        for (index, record) in shrunk.iter().enumerate() {
            let mut expected = base.record(if index < 10 { index } else { index + 150 });
            if index >= 10 {
                expected.location.line -= 150;
            }
            assert_eq!(record, expected, "{index}");
        }
        assert_eq!(
            shrunk.rdata_len(),
            shrunk.parts[0].flat.rdata.len(),
            "only the records kept"
        );
    }

    /// A record past the end is a caller's bug, not another record.
    #[test]
    #[should_panic(expected = "record 190 of a list of 190 records")]
    fn a_record_past_the_end_panics() {
        // The list's one part ends before its flat list does.
        let (list, _) = hosts(200).spliced(190..201, &Records::new(), 0).unwrap();
        assert_eq!((list.parts(), list.len()), (1, 190));
        let _ = list.record(190);
    }
}
