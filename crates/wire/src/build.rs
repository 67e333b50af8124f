//! Writing messages into a caller's buffer.
//!
//! [`MessageBuilder`] writes header, question and records into a borrowed
//! `&mut [u8]` up to a size limit (the client's UDP size, 65535 over TCP).
//! It compresses names by offsets into the bytes already written: the table
//! holds at most [`COMPRESSION_ENTRIES`] offsets, lives inside the builder,
//! and nothing is allocated per name.
//!
//! Writes are transactional. [`MessageBuilder::mark`] remembers the length,
//! the section counts and the compression table size; when an RRset does
//! not fit, [`MessageBuilder::rollback`] returns to the mark, so a truncated
//! answer never carries half an RRset nor pointers to rolled-back bytes.
//!
//! ```
//! use tern_wire::build::MessageBuilder;
//! use tern_wire::name::NameBuf;
//! use tern_wire::parse::Section;
//! use tern_wire::types::{RClass, RType};
//! let mut buf = [0u8; 512];
//! let mut builder = MessageBuilder::new(&mut buf, 512).unwrap();
//! let name = NameBuf::from_text(b"www.example.com.", None).unwrap();
//! builder.push_question(name.as_name(), RType::A, RClass::IN).unwrap();
//! builder.set_section(Section::Answer);
//! builder.push_record(name.as_name(), RType::A, RClass::IN, 300, &[192, 0, 2, 1]).unwrap();
//! let len = builder.finish();
//! // header 12 + question 21 + answer (pointer 2 + 10 + 4) = 49
//! assert_eq!(len, 49);
//! assert_eq!(&buf[33..35], &[0xc0, 0x0c]); // the owner points at the question
//! ```

use std::sync::Arc;

use crate::error::TruncationError;
use crate::name::{eq_ignore_case, lowercase8, Name};
use crate::parse::{Question, Section, HEADER_LEN};
use crate::rdata::compressible_names;
use crate::types::{RClass, RType, Rcode};

/// Compression table size. A referral with 13 NS names and their glue needs
/// about 30 entries (one per distinct name suffix written); 64 covers large
/// answers while keeping the linear search short. Names past the table's
/// capacity are still written, only uncompressed.
pub const COMPRESSION_ENTRIES: usize = 64;

/// An OPT record's octets before its options: the root owner, type, class,
/// TTL and RDLENGTH.
const OPT_HEAD_LEN: usize = 11;

/// Offsets at or beyond this cannot be the target of a pointer (14 bits).
const MAX_POINTER_TARGET: usize = 0x3fff;

//----------- Mark -----------------------------------------------------------

/// A point in the message to roll back to.
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    len: usize,
    counts: [u16; 4],
    entries: usize,
}

//----------- MessageBuilder -------------------------------------------------

/// Writes one message into a borrowed buffer.
pub struct MessageBuilder<'b> {
    buf: &'b mut [u8],
    len: usize,
    limit: usize,
    counts: [u16; 4],
    section: usize,
    entries: [u16; COMPRESSION_ENTRIES],
    entry_count: usize,
}

impl<'b> MessageBuilder<'b> {
    /// Starts a message with an all-zero header. `limit` is the largest
    /// message allowed; it is capped at the buffer's length.
    pub fn new(buf: &'b mut [u8], limit: usize) -> Result<Self, TruncationError> {
        let limit = limit.min(buf.len());
        if limit < HEADER_LEN {
            return Err(TruncationError);
        }
        buf[..HEADER_LEN].fill(0);
        Ok(MessageBuilder {
            buf,
            len: HEADER_LEN,
            limit,
            counts: [0; 4],
            section: 0,
            entries: [0; COMPRESSION_ENTRIES],
            entry_count: 0,
        })
    }

    //--- Header

    /// The header bytes, for setting ID and flags directly.
    pub fn header_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..HEADER_LEN]
    }

    /// Sets the message ID.
    #[inline]
    pub fn set_id(&mut self, id: u16) {
        self.buf[..2].copy_from_slice(&id.to_be_bytes());
    }

    /// Sets or clears a flag of the third header octet (QR, opcode, AA, TC, RD).
    #[inline]
    fn set_bit(&mut self, byte: usize, mask: u8, on: bool) {
        if on {
            self.buf[byte] |= mask;
        } else {
            self.buf[byte] &= !mask;
        }
    }

    /// Sets QR.
    #[inline]
    pub fn set_qr(&mut self, on: bool) {
        self.set_bit(2, 0x80, on);
    }

    /// Sets the opcode.
    #[inline]
    pub fn set_opcode(&mut self, opcode: u8) {
        self.buf[2] = (self.buf[2] & 0x87) | ((opcode & 0x0f) << 3);
    }

    /// Sets AA.
    #[inline]
    pub fn set_aa(&mut self, on: bool) {
        self.set_bit(2, 0x04, on);
    }

    /// Sets TC.
    #[inline]
    pub fn set_tc(&mut self, on: bool) {
        self.set_bit(2, 0x02, on);
    }

    /// Sets RD.
    #[inline]
    pub fn set_rd(&mut self, on: bool) {
        self.set_bit(2, 0x01, on);
    }

    /// Sets RA.
    #[inline]
    pub fn set_ra(&mut self, on: bool) {
        self.set_bit(3, 0x80, on);
    }

    /// Sets CD.
    #[inline]
    pub fn set_cd(&mut self, on: bool) {
        self.set_bit(3, 0x10, on);
    }

    /// Sets the low four bits of the rcode (the rest goes into the OPT).
    #[inline]
    pub fn set_rcode(&mut self, rcode: Rcode) {
        self.buf[3] = (self.buf[3] & 0xf0) | rcode.header_bits();
    }

    //--- Size

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether only the header has been written.
    pub fn is_empty(&self) -> bool {
        self.len == HEADER_LEN
    }

    /// The current size limit.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Lowers the limit by `size` bytes, keeping room for something written
    /// last (the OPT record). Fails if that room is already used.
    pub fn reserve(&mut self, size: usize) -> Result<(), TruncationError> {
        if self.len + size > self.limit {
            return Err(TruncationError);
        }
        self.limit -= size;
        Ok(())
    }

    /// Gives back room taken by [`MessageBuilder::reserve`].
    pub fn release(&mut self, size: usize) {
        self.limit = (self.limit + size).min(self.buf.len());
    }

    //--- Transactions

    /// Remembers the current state.
    pub fn mark(&self) -> Mark {
        Mark {
            len: self.len,
            counts: self.counts,
            entries: self.entry_count,
        }
    }

    /// Returns to a mark: drops the bytes, records and compression entries
    /// written since.
    pub fn rollback(&mut self, mark: Mark) {
        self.len = mark.len;
        self.counts = mark.counts;
        self.entry_count = mark.entries;
    }

    //--- Writing

    /// Moves on to a record section. Sections only move forward.
    pub fn set_section(&mut self, section: Section) {
        let index = match section {
            Section::Answer => 1,
            Section::Authority => 2,
            Section::Additional => 3,
        };
        debug_assert!(index >= self.section, "sections are written in order");
        self.section = index;
    }

    /// The number of records written in a section.
    pub fn count(&self, section: Section) -> u16 {
        match section {
            Section::Answer => self.counts[1],
            Section::Authority => self.counts[2],
            Section::Additional => self.counts[3],
        }
    }

    /// Copies a question as received (name, type, class), preserving the
    /// client's case; the name becomes a compression target.
    pub fn push_question_bytes(&mut self, question: &[u8]) -> Result<(), TruncationError> {
        let start = self.len;
        self.write(question)?;
        self.counts[0] += 1;
        if Name::parse_prefix(question).is_ok() {
            self.register(start);
        }
        Ok(())
    }

    /// [`MessageBuilder::push_question_bytes`] for a question the parser
    /// read: its name is known valid and uncompressed (a pointer in the
    /// first name could only point into the header), so it is registered
    /// without being parsed again.
    pub fn push_parsed_question(&mut self, question: &Question<'_>) -> Result<(), TruncationError> {
        let start = self.len;
        self.write(question.bytes)?;
        self.counts[0] += 1;
        // The name at the start of the bytes (as the parser makes them, the
        // name a slice of the bytes: the same address, no octets compared),
        // else compared: not a parse.
        if question.name.len() + 4 == question.bytes.len()
            && (core::ptr::eq(question.name.as_bytes().as_ptr(), question.bytes.as_ptr())
                || question.bytes.starts_with(question.name.as_bytes()))
        {
            self.register(start);
        }
        Ok(())
    }

    /// Writes a question.
    pub fn push_question(
        &mut self,
        name: Name<'_>,
        qtype: RType,
        qclass: RClass,
    ) -> Result<(), TruncationError> {
        let mark = self.mark();
        let result = (|| {
            self.push_name(name, true)?;
            self.write(&qtype.0.to_be_bytes())?;
            self.write(&qclass.0.to_be_bytes())
        })();
        self.count_or_rollback(0, mark, result)
    }

    /// Writes one record into the current section. Names in the RDATA of the
    /// types RFC 3597 section 4 allows are compressed; other RDATA is copied.
    /// On error nothing is left of the record.
    pub fn push_record(
        &mut self,
        owner: Name<'_>,
        rtype: RType,
        class: RClass,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), TruncationError> {
        debug_assert!(self.section > 0, "set_section before push_record");
        let mark = self.mark();
        let result = self.write_record(owner, rtype, class, ttl, rdata);
        self.count_or_rollback(self.section, mark, result)
    }

    /// [`MessageBuilder::push_record`] for a record owned by the
    /// question's name, `owner`: its owner is written at once as a pointer
    /// to the question, which is what `push_record` writes after searching
    /// the compression table (the question's name is the table's first
    /// entry, and equals `owner`), without the search. Without a question
    /// at its place (nothing registered at offset 12), `push_record`.
    pub fn push_record_owned_by_question(
        &mut self,
        owner: Name<'_>,
        rtype: RType,
        class: RClass,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), TruncationError> {
        if self.counts[0] != 1
            || self.entry_count == 0
            || usize::from(self.entries[0]) != HEADER_LEN
        {
            return self.push_record(owner, rtype, class, ttl, rdata);
        }
        debug_assert!(self.written_name_eq(HEADER_LEN, owner));
        debug_assert!(self.section > 0, "set_section before push_record");
        let mark = self.mark();
        let result = self
            .write(&(0xc000 | HEADER_LEN as u16).to_be_bytes())
            .and_then(|()| self.write_record_data(rtype, class, ttl, rdata));
        self.count_or_rollback(self.section, mark, result)
    }

    /// The end of a question's or a record's writing: counted in `section`
    /// if it was all written, else nothing of it left (back to `mark`).
    #[inline]
    fn count_or_rollback(
        &mut self,
        section: usize,
        mark: Mark,
        result: Result<(), TruncationError>,
    ) -> Result<(), TruncationError> {
        match result {
            Ok(()) => {
                self.counts[section] += 1;
                Ok(())
            }
            Err(err) => {
                self.rollback(mark);
                Err(err)
            }
        }
    }

    fn write_record(
        &mut self,
        owner: Name<'_>,
        rtype: RType,
        class: RClass,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), TruncationError> {
        self.push_name(owner, true)?;
        self.write_record_data(rtype, class, ttl, rdata)
    }

    /// A record after its owner: type, class, TTL, RDLENGTH and the RDATA
    /// with its names compressed.
    fn write_record_data(
        &mut self,
        rtype: RType,
        class: RClass,
        ttl: u32,
        rdata: &[u8],
    ) -> Result<(), TruncationError> {
        if !may_compress(rtype) {
            // No name to compress: type, class, TTL, RDLENGTH and the RDATA
            // in one bounds check (the writes one by one and the walk for
            // names cost about 100 instructions an A record).
            let rdlen = u16::try_from(rdata.len()).map_err(|_| TruncationError)?;
            let start = self.len;
            let end = start + 10 + rdata.len();
            if end > self.limit {
                return Err(TruncationError);
            }
            let out = &mut self.buf[start..end];
            out[..2].copy_from_slice(&rtype.0.to_be_bytes());
            out[2..4].copy_from_slice(&class.0.to_be_bytes());
            out[4..8].copy_from_slice(&ttl.to_be_bytes());
            out[8..10].copy_from_slice(&rdlen.to_be_bytes());
            out[10..].copy_from_slice(rdata);
            self.len = end;
            return Ok(());
        }
        self.write(&rtype.0.to_be_bytes())?;
        self.write(&class.0.to_be_bytes())?;
        self.write(&ttl.to_be_bytes())?;
        let rdlen_at = self.len;
        self.write(&[0, 0])?;
        let rdata_start = self.len;
        let mut copied = 0;
        for (offset, name) in compressible_names(rtype, rdata) {
            self.write(&rdata[copied..offset])?;
            self.push_name(name, true)?;
            copied = offset + name.len();
        }
        self.write(&rdata[copied..])?;
        let rdlen = u16::try_from(self.len - rdata_start).map_err(|_| TruncationError)?;
        self.buf[rdlen_at..rdlen_at + 2].copy_from_slice(&rdlen.to_be_bytes());
        Ok(())
    }

    /// Writes an OPT record into the additional section.
    pub fn push_opt(
        &mut self,
        udp_size: u16,
        rcode: Rcode,
        dnssec_ok: bool,
        options: &[u8],
    ) -> Result<(), TruncationError> {
        self.set_section(Section::Additional);
        let ttl = u32::from(rcode.extended_bits()) << 24 | if dnssec_ok { 0x8000 } else { 0 };
        // What `push_record` writes for the root owner and RDATA without
        // names (nothing to compress, no compression target), written at
        // once: the root octet, type, class (the UDP size), TTL, RDLENGTH.
        let rdlen = u16::try_from(options.len()).map_err(|_| TruncationError)?;
        let start = self.len;
        let end = start + OPT_HEAD_LEN + options.len();
        if end > self.limit {
            return Err(TruncationError);
        }
        let out = &mut self.buf[start..end];
        out[0] = 0;
        out[1..3].copy_from_slice(&RType::OPT.0.to_be_bytes());
        out[3..5].copy_from_slice(&udp_size.to_be_bytes());
        out[5..9].copy_from_slice(&ttl.to_be_bytes());
        out[9..11].copy_from_slice(&rdlen.to_be_bytes());
        out[OPT_HEAD_LEN..].copy_from_slice(options);
        self.len = end;
        self.counts[self.section] += 1;
        Ok(())
    }

    /// Writes the section counts into the header and returns the length.
    pub fn finish(mut self) -> usize {
        self.finish_in_place()
    }

    /// [`MessageBuilder::finish`] through a reference, for a caller that
    /// lends the builder out rather than moving it (a builder is a couple
    /// of hundred octets: its compression table).
    pub fn finish_in_place(&mut self) -> usize {
        for (i, count) in self.counts.iter().enumerate() {
            self.buf[4 + 2 * i..6 + 2 * i].copy_from_slice(&count.to_be_bytes());
        }
        self.len
    }

    /// Writes a name, compressed against the names already written if
    /// `compress` is set, and makes its new suffixes compression targets.
    pub fn push_name(&mut self, name: Name<'_>, compress: bool) -> Result<(), TruncationError> {
        let start = self.len;
        let mut suffix = name;
        loop {
            if suffix.is_root() {
                self.write(&[0])?;
                break;
            }
            if compress {
                if let Some(target) = self.find(suffix) {
                    self.write(&(0xc000 | target as u16).to_be_bytes())?;
                    break;
                }
            }
            let label_len = 1 + suffix.first_label().len();
            self.write(&suffix.as_bytes()[..label_len])?;
            suffix = suffix.parent().expect("a non-root name has a parent");
        }
        self.register(start);
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), TruncationError> {
        let end = self.len + bytes.len();
        if end > self.limit {
            return Err(TruncationError);
        }
        self.buf[self.len..end].copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    /// Records where each label of a name just written at `start` begins,
    /// while the table has room and the offset fits a pointer. Only the
    /// labels written literally (before any pointer) are new targets.
    /// Reads the labels back from the buffer (the name's own, as written):
    /// no walk of the name beside it.
    fn register(&mut self, start: usize) {
        let mut pos = start;
        // Bound: each step moves past one label of a name already written
        // (at most MAX_LABELS), and `pos` stays below `len`.
        while pos <= MAX_POINTER_TARGET && pos < self.len && self.entry_count < COMPRESSION_ENTRIES
        {
            let octet = self.buf[pos];
            if octet == 0 || octet & 0xc0 == 0xc0 {
                break;
            }
            self.entries[self.entry_count] = pos as u16;
            self.entry_count += 1;
            pos += 1 + usize::from(octet);
        }
    }

    /// Finds an entry whose name in the buffer equals `suffix`, ignoring case.
    fn find(&self, suffix: Name<'_>) -> Option<usize> {
        self.entries[..self.entry_count]
            .iter()
            .map(|&offset| usize::from(offset))
            .find(|&offset| self.written_name_eq(offset, suffix))
    }

    /// Compares the (possibly compressed) name written at `offset` with
    /// `name`. Pointers written by this builder always point backwards, so
    /// the walk ends; `MAX_NAME_LEN` bounds it regardless.
    fn written_name_eq(&self, mut offset: usize, name: Name<'_>) -> bool {
        let mut expected = name.as_bytes();
        for _ in 0..crate::name::MAX_NAME_LEN {
            let octet = self.buf[offset];
            if octet & 0xc0 == 0xc0 {
                offset = usize::from(u16::from_be_bytes([octet & 0x3f, self.buf[offset + 1]]));
                continue;
            }
            let len = usize::from(octet);
            if expected.first() != Some(&octet) {
                return false;
            }
            if len == 0 {
                return true;
            }
            let label = &self.buf[offset + 1..offset + 1 + len];
            if !eq_ignore_case(label, &expected[1..1 + len]) {
                return false;
            }
            expected = &expected[1 + len..];
            offset += 1 + len;
        }
        false
    }
}

//----------- Precompressed -------------------------------------------------

/// The most RDATA names a [`Precompressed`] plan covers (an SOA's two).
const PLANNED_NAMES: usize = 2;

/// [`PlannedName::target`] of a name written whole, without a pointer.
const NO_POINTER: u16 = u16::MAX;

/// [`PlannedName::target`] flag: the pointer targets the record itself (an
/// earlier name of its RDATA), not the origin.
const RECORD_RELATIVE: u16 = 0x4000;

/// [`PlannedName::below`] of a name not strictly below the origin.
const NOT_BELOW: u8 = u8::MAX;

/// The most compression targets a [`Precompressed`] plan registers from a
/// list made with the plan (an SOA's names below the origin have one or
/// two labels each); a plan with more registers them by reading the
/// labels back.
const PLANNED_TARGETS: usize = 6;

/// How one RDATA name of a [`Precompressed`] record is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PlannedName {
    /// Where the name starts in the RDATA.
    at: u16,
    /// Where it starts in the RDATA as written (in [`Precompressed::tail`],
    /// after the record's fixed part).
    written_at: u16,
    /// Its length uncompressed.
    len: u8,
    /// The octets written as they are (labels) before the pointer; `len`
    /// if there is no pointer.
    literal: u8,
    /// The pointer's target: an offset into the origin as it stands in the
    /// question, or with [`RECORD_RELATIVE`] into the record (whose owner
    /// is two octets); [`NO_POINTER`] for none.
    target: u16,
    /// Where, in the name, its label just below the origin starts, if the
    /// name is strictly below the origin; [`NOT_BELOW`] otherwise.
    below: u8,
    /// That label's length octet (0 if not below): most question labels
    /// differ from it there, without a comparison of the labels.
    below_len: u8,
}

/// A record owned by a zone's origin whose RDATA names were compressed
/// once, when the zone was built, as [`MessageBuilder::push_record`]
/// compresses them right after a question in the zone: NSD's way with the
/// SOA of negative answers. [`MessageBuilder::push_precompressed`] then
/// writes it as the owner's pointer and one copy of the rest (type,
/// class, RDLENGTH and the RDATA as written; the TTL written over), its
/// pointers (at most two) relocated, without searching the compression
/// table, and gives the same octets as `push_record`.
///
/// That holds when the message holds a question and nothing else, the
/// question's name ends with the origin, and no RDATA name strictly below
/// the origin shares its label just below the origin with the question's
/// name (else that name would compress against the question): the plan
/// then only relocates its pointers. Otherwise `push_precompressed` calls
/// `push_record`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Precompressed {
    names: [PlannedName; PLANNED_NAMES],
    count: u8,
    /// The labels written literally, each a new compression target.
    labels: u8,
    /// The origin's length and label count, the type, and the RDATA's
    /// length, as planned (checked when the plan is used; the class is IN).
    origin_len: u8,
    origin_labels: u8,
    rtype: RType,
    rdata_len: u16,
    /// Where each pointer of the RDATA as written starts, from the
    /// record's start, and its target as in [`PlannedName::target`]; the
    /// first `pointer_count`.
    pointers: [(u16, u16); PLANNED_NAMES],
    pointer_count: u8,
    /// Where each label written literally starts, from the record's start,
    /// in the order `push_record` registers them (the first `labels`, if
    /// there are at most [`PLANNED_TARGETS`]).
    targets: [u16; PLANNED_TARGETS],
    /// The origin, lowercased, in eight-octet words from its end (little
    /// endian, as read from a message), the last one's octets in front of
    /// the origin zero; and the mask of that last word's octets that are
    /// the origin's. A question's name is compared with these, not octet
    /// by octet.
    origin_words: Arc<[u64]>,
    origin_mask: u64,
    /// The record as written after a question for the origin, from its
    /// type on: type, class IN, a TTL of zero (written over), RDLENGTH and
    /// the RDATA with its pointers zero (each is relocated when written).
    tail: Arc<[u8]>,
}

impl Precompressed {
    /// Plans a record of `rtype` with `rdata` owned by `origin` (not the
    /// root). `None` if there is nothing the plan can do: the root, more
    /// than two names, more labels than the compression table holds, or
    /// RDATA too long for a message.
    pub fn plan(origin: Name<'_>, rtype: RType, rdata: &[u8]) -> Option<Self> {
        if origin.is_root() {
            return None;
        }
        let mut plan = Precompressed {
            origin_len: u8::try_from(origin.len()).ok()?,
            origin_labels: u8::try_from(origin.label_count()).ok()?,
            rtype,
            rdata_len: u16::try_from(rdata.len()).ok()?,
            ..Precompressed::default()
        };
        let (words, mask) = origin_words(origin.as_bytes());
        plan.origin_words = words;
        plan.origin_mask = mask;
        let mut labels = origin.label_count();
        for (at, name) in compressible_names(rtype, rdata) {
            let slot = plan.names.get_mut(usize::from(plan.count))?;
            labels += name.label_count();
            let below = below_origin(name, origin);
            *slot = PlannedName {
                at: u16::try_from(at).ok()?,
                len: u8::try_from(name.len()).ok()?,
                below,
                below_len: name
                    .as_bytes()
                    .get(usize::from(below))
                    .copied()
                    .filter(|_| below != NOT_BELOW)
                    .unwrap_or(0),
                ..PlannedName::default()
            };
            plan.count += 1;
        }
        if labels > COMPRESSION_ENTRIES {
            return None;
        }
        // The record written after a question for the origin itself.
        let question_end = HEADER_LEN + origin.len() + 4;
        let record = question_end;
        let mut buf = vec![0u8; record + 12 + rdata.len()];
        let len = buf.len();
        let mut builder = MessageBuilder::new(&mut buf, len).ok()?;
        builder.push_question(origin, rtype, RClass::IN).ok()?;
        builder.set_section(Section::Answer);
        builder
            .push_record(origin, rtype, RClass::IN, 0, rdata)
            .ok()?;
        let end = builder.len();
        let pointer = (0xc000 | HEADER_LEN as u16).to_be_bytes();
        if buf[record..record + 2] != pointer {
            return None;
        }
        // Read each name back as written.
        let start = record + 12;
        let mut out = start;
        let mut copied = 0;
        for planned in &mut plan.names[..usize::from(plan.count)] {
            out += usize::from(planned.at) - copied;
            planned.written_at = u16::try_from(out - start).ok()?;
            let mut literal = 0;
            let target = loop {
                let octet = *buf.get(out + literal)?;
                if octet == 0 {
                    literal += 1;
                    break NO_POINTER;
                }
                if octet & 0xc0 == 0xc0 {
                    let low = *buf.get(out + literal + 1)?;
                    let to = usize::from(u16::from_be_bytes([octet & 0x3f, low]));
                    break if (HEADER_LEN..HEADER_LEN + origin.len()).contains(&to) {
                        (to - HEADER_LEN) as u16
                    } else if to >= record {
                        RECORD_RELATIVE | u16::try_from(to - record).ok()?
                    } else {
                        return None;
                    };
                }
                if let Some(target) = plan.targets.get_mut(usize::from(plan.labels)) {
                    *target = u16::try_from(out + literal - record).ok()?;
                }
                plan.labels += 1;
                literal += 1 + usize::from(octet);
            };
            planned.literal = u8::try_from(literal).ok()?;
            planned.target = target;
            if (target == NO_POINTER) != (literal == usize::from(planned.len)) {
                return None;
            }
            if target != NO_POINTER {
                // Relocated when written.
                let pointer = out + literal;
                buf.get_mut(pointer..pointer + 2)?.fill(0);
                let slot = plan.pointers.get_mut(usize::from(plan.pointer_count))?;
                *slot = (u16::try_from(pointer - record).ok()?, target);
                plan.pointer_count += 1;
            }
            out += literal + if target == NO_POINTER { 0 } else { 2 };
            copied = usize::from(planned.at) + usize::from(planned.len);
        }
        plan.tail = Arc::from(buf.get(record + 2..end)?);
        Some(plan)
    }
}

/// `origin`'s octets as [`Precompressed::origin_words`] holds them: eight
/// at a time from the end, each word lowercased, and the mask of the last
/// (partial) word's octets that are the origin's (the high ones: read
/// little endian, the octets in front come first).
fn origin_words(origin: &[u8]) -> (Arc<[u64]>, u64) {
    let count = origin.len().div_ceil(8);
    let in_last = origin.len() - 8 * (count - 1);
    let mask = u64::MAX << (8 * (8 - in_last));
    let words = (0..count)
        .map(|k| {
            let end = origin.len() - 8 * k;
            let mut word = [0u8; 8];
            let start = end.saturating_sub(8);
            word[8 - (end - start)..].copy_from_slice(&origin[start..end]);
            let word = lowercase8(u64::from_le_bytes(word));
            if k + 1 == count {
                word & mask
            } else {
                word
            }
        })
        .collect();
    (words, mask)
}

/// Where `name`'s label just below `origin` starts, if `name` is strictly
/// below it; [`NOT_BELOW`] otherwise.
fn below_origin(name: Name<'_>, origin: Name<'_>) -> u8 {
    if name.len() <= origin.len() || !name.ends_with(origin) {
        return NOT_BELOW;
    }
    let mut at = 0;
    let mut rest = name;
    // Bound: each step drops a label; the origin is a suffix.
    while let Some(parent) = rest.parent() {
        if parent.len() == origin.len() {
            return at as u8;
        }
        at += 1 + rest.first_label().len();
        rest = parent;
    }
    NOT_BELOW
}

impl MessageBuilder<'_> {
    /// Writes a record of the zone's origin `owner` with a plan made by
    /// [`Precompressed::plan`] for the same origin, type and RDATA: the
    /// same octets as [`MessageBuilder::push_record`], by one copy with
    /// relocated pointers when the message holds only a question in the
    /// zone, by `push_record` otherwise.
    pub fn push_precompressed(
        &mut self,
        owner: Name<'_>,
        rtype: RType,
        class: RClass,
        ttl: u32,
        rdata: &[u8],
        plan: &Precompressed,
    ) -> Result<(), TruncationError> {
        self.push_precompressed_in(owner, rtype, class, ttl, rdata, plan, false)
    }

    /// [`MessageBuilder::push_precompressed`]; `in_question`: the caller
    /// knows that the question's name is `owner` or below it (ignoring
    /// case), as a server that found the zone by that name knows, so that
    /// the origin's octets are not compared again (about 40 instructions a
    /// record). Given `true` for a question outside the origin, the plan is
    /// still declined when the question's labels do not end where the
    /// origin's would, but a name of the origin's labels and length
    /// outside it would be taken for it: checked in debug builds.
    #[allow(clippy::too_many_arguments)]
    pub fn push_precompressed_in(
        &mut self,
        owner: Name<'_>,
        rtype: RType,
        class: RClass,
        ttl: u32,
        rdata: &[u8],
        plan: &Precompressed,
        in_question: bool,
    ) -> Result<(), TruncationError> {
        match self.origin_in_question(owner, rtype, class, rdata, plan, in_question) {
            Some(origin_at) => self.write_planned(origin_at, ttl, rdata, plan),
            None => self.push_record(owner, rtype, class, ttl, rdata),
        }
    }

    /// Where `owner` stands in the question, if the plan holds for this
    /// message (see [`Precompressed`]). The question's labels are read
    /// from the compression table, which holds where each begins (the
    /// question is its only name so far).
    fn origin_in_question(
        &self,
        owner: Name<'_>,
        rtype: RType,
        class: RClass,
        rdata: &[u8],
        plan: &Precompressed,
        in_question: bool,
    ) -> Option<usize> {
        if self.counts != [1, 0, 0, 0]
            || owner.len() != usize::from(plan.origin_len)
            || rdata.len() != usize::from(plan.rdata_len)
            || rtype != plan.rtype
            || class != RClass::IN
            || self.entry_count + usize::from(plan.labels) > COMPRESSION_ENTRIES
        {
            return None;
        }
        // The origin's first label, if the question's name ends with the
        // origin: its labels are the table's last `origin_labels` entries,
        // and its root octet ends the name, four octets (type and class)
        // before the end of the message.
        let index = self
            .entry_count
            .checked_sub(usize::from(plan.origin_labels))?;
        let origin_at = usize::from(self.entries[index]);
        let end = self.len.checked_sub(4)?;
        debug_assert!(!in_question || self.ends_with_origin(end, plan));
        if origin_at + owner.len() != end
            || (!in_question && !self.ends_with_origin(end, plan))
            || self.len + 2 + plan.tail.len() > MAX_POINTER_TARGET
        {
            return None;
        }
        debug_assert!(eq_ignore_case(&self.buf[origin_at..end], owner.as_bytes()));
        if let Some(index) = index.checked_sub(1) {
            // No name below the origin may share the question's label
            // just below it; the length octets first (most labels differ
            // there).
            let label = &self.buf[usize::from(self.entries[index])..origin_at];
            for name in &plan.names[..usize::from(plan.count)] {
                if label.first() == Some(&name.below_len) && shares_label(name, rdata, label) {
                    return None;
                }
            }
        }
        Some(origin_at)
    }

    /// Whether the octets before `end` are the plan's origin, ignoring
    /// case: compared eight at a time from the end with
    /// [`Precompressed::origin_words`], the last word read from in front
    /// of the origin (the question's own octets, or the header's) and
    /// masked. The caller has checked that the origin fits in front of
    /// `end` after the header. Inlined always, for an origin of one word
    /// (a call and its frame cost as much as the compare; `#[inline]` was
    /// not followed); a longer origin is compared by
    /// [`MessageBuilder::ends_with_long_origin`].
    #[inline(always)]
    fn ends_with_origin(&self, end: usize, plan: &Precompressed) -> bool {
        ends_with_origin(self.buf, end, plan)
    }

    fn write_planned(
        &mut self,
        origin_at: usize,
        ttl: u32,
        rdata: &[u8],
        plan: &Precompressed,
    ) -> Result<(), TruncationError> {
        let record = self.len;
        let end = record + 2 + plan.tail.len();
        if end > self.limit {
            return Err(TruncationError);
        }
        write_plan(&mut self.buf[record..end], plan, ttl, record, origin_at);
        let out = &self.buf[record..end];
        let names = &plan.names[..usize::from(plan.count)];
        for name in names {
            debug_assert_eq!(
                &rdata[usize::from(name.at)..usize::from(name.at) + usize::from(name.literal)],
                &out[12 + usize::from(name.written_at)..][..usize::from(name.literal)],
            );
        }
        self.len = end;
        // The targets `push_record` would register: with the room checked
        // in `origin_in_question`, each label written literally.
        match plan.targets.get(..usize::from(plan.labels)) {
            Some(targets) => {
                for &target in targets {
                    self.entries[self.entry_count] = (record + usize::from(target)) as u16;
                    self.entry_count += 1;
                }
            }
            None => {
                for name in names {
                    self.register(record + 12 + usize::from(name.written_at));
                }
            }
        }
        self.counts[self.section] += 1;
        Ok(())
    }
}

//----------- PlannedAnswer --------------------------------------------------

/// A negative answer's question and planned record, as
/// [`write_question_and_planned`] takes them: `origin_at` is where the
/// owner, the zone's origin, starts in the question's name.
pub struct PlannedAnswer<'p> {
    /// The question, as received (its name's octets in its own).
    pub question: &'p Question<'p>,
    /// Where the origin starts in the question's name.
    pub origin_at: usize,
    /// The record's type: the plan's.
    pub rtype: RType,
    /// The record's TTL.
    pub ttl: u32,
    /// The record's RDATA, as the plan was made from.
    pub rdata: &'p [u8],
    /// The zone's plan of the record.
    pub plan: &'p Precompressed,
}

/// A negative answer's question and its planned record at once, without
/// a builder, for a message that ends after the record (an OPT may
/// follow, nothing else): written into `out` after a header (which is not
/// written and may hold anything: the caller writes it after, as the
/// counts), the question copied as received, then the record as
/// [`MessageBuilder::push_precompressed_in`] writes it (told `true`) after
/// [`MessageBuilder::push_parsed_question`], the same octets, for a
/// message of at most `limit` octets (the caller's room for what follows
/// taken off). Returns where the record ends.
///
/// Checked in every build: that the question's name ends, ignoring
/// case, with the plan's origin at `origin_at` (the record's owner and
/// its names below the origin are pointers there); any other
/// `origin_at` is declined. The caller must guarantee that `origin_at`
/// is where a label of the question's name starts (checked in debug
/// builds only): a suffix of the right octets that starts inside a
/// label still reads as the origin, so the answer means the same, but
/// its octets may differ from the long way's (the label just below the
/// origin is looked for in the wrong place). The labels are not walked
/// for the plan's conditions: the question's labels are bounded by its
/// length (a name whose length would allow more labels than the table
/// holds with the plan's, `(len - 1) / 2 + plan.labels` above
/// [`COMPRESSION_ENTRIES`], is declined, as the longest names are), and
/// the label just below the origin is looked for where a planned name's
/// would start.
///
/// `None` (octets past the header may have been written) when that
/// cannot be decided so (the plan does not apply, may not apply, the
/// question does not end with the origin at `origin_at`, or it does not
/// fit the limit): the caller then writes the answer the long way, the
/// question and the record one by one on a builder. For a writer of a
/// whole negative answer: a builder's setting up (its compression table)
/// and its header and count writes one field at a time cost more than the
/// answer's octets. Inlined always (`#[inline]` was not followed across
/// the crates: a call and its frame of about 20 instructions): its one
/// caller in a server's answering writes the header around it.
#[inline(always)]
pub fn write_question_and_planned(
    out: &mut [u8],
    limit: usize,
    planned: &PlannedAnswer<'_>,
) -> Option<usize> {
    let PlannedAnswer {
        question,
        origin_at,
        rtype,
        ttl,
        rdata,
        plan,
    } = *planned;
    let name_len = question.name.len();
    let origin_len = usize::from(plan.origin_len);
    // The question's labels: each at least two octets, the root one.
    let most_labels = name_len.checked_sub(1)? / 2;
    if !core::ptr::eq(question.name.as_bytes().as_ptr(), question.bytes.as_ptr())
        || name_len + 4 != question.bytes.len()
        || origin_at + origin_len != name_len
        || rdata.len() != usize::from(plan.rdata_len)
        || rtype != plan.rtype
        || question.name.is_root()
        || most_labels + usize::from(plan.labels) > COMPRESSION_ENTRIES
    {
        return None;
    }
    let origin = HEADER_LEN + origin_at;
    debug_assert!(
        core::iter::successors(Some(question.name), |name| name.parent())
            .any(|name| name.len() == origin_len),
        "the origin starts at a label of the question's name"
    );
    // No name below the origin may share the question's label just
    // below it. Where a planned name's label would start: a length
    // octet there that is not a label's start only sends the caller
    // the long way.
    let name = question.name.as_bytes();
    for planned in &plan.names[..usize::from(plan.count)] {
        if planned.below == NOT_BELOW {
            continue;
        }
        let len = usize::from(planned.below_len);
        if let Some(at) = origin_at.checked_sub(len + 1) {
            if name[at] == planned.below_len && shares_label(planned, rdata, &name[at..origin_at]) {
                return None;
            }
        }
    }
    let question_end = HEADER_LEN + question.bytes.len();
    let record = question_end;
    let end = record + 2 + plan.tail.len();
    if end > limit.min(out.len()) || end > MAX_POINTER_TARGET {
        return None;
    }
    out[HEADER_LEN..question_end].copy_from_slice(question.bytes);
    // The pointers to the origin read the question's octets: they must
    // be the origin's.
    if !ends_with_origin(out, question_end - 4, plan) {
        return None;
    }
    write_plan(&mut out[record..end], plan, ttl, record, origin);
    Some(end)
}

/// A positive answer's question and the records of one RRset owned by
/// the question's name, written into `out` after a header (which is not
/// written: the caller writes it, as the counts), for a message of at
/// most `limit` octets (the caller's room for what follows taken off):
/// the question copied as received, then each record as
/// [`MessageBuilder::push_record_owned_by_question`] writes it after
/// [`MessageBuilder::push_parsed_question`] (its owner a pointer to the
/// question, class IN), the same octets. Returns where the records end
/// and how many there are; `None` (octets past the header may have been
/// written) when that does not hold or they do not all fit: RDATA of a
/// type whose names are compressed ([`compressible_names`]), the root's
/// question (written without a pointer to it), a question not read from
/// a message as it stands. The caller then writes the answer the long
/// way, which truncates as it does.
#[inline]
pub fn write_question_and_records<'r>(
    out: &mut [u8],
    limit: usize,
    question: &Question<'_>,
    (rtype, ttl): (RType, u32),
    rdatas: impl Iterator<Item = &'r [u8]>,
) -> Option<(usize, u16)> {
    if may_compress(rtype)
        || question.name.is_root()
        || !core::ptr::eq(question.name.as_bytes().as_ptr(), question.bytes.as_ptr())
        || question.name.len() + 4 != question.bytes.len()
    {
        return None;
    }
    let limit = limit.min(out.len());
    let mut end = HEADER_LEN + question.bytes.len();
    if end > limit {
        return None;
    }
    out[HEADER_LEN..end].copy_from_slice(question.bytes);
    // The owner's pointer, the type, class IN and the TTL: the same for
    // every record.
    let [t0, t1] = rtype.0.to_be_bytes();
    let [l0, l1, l2, l3] = ttl.to_be_bytes();
    let fixed = [0xc0, HEADER_LEN as u8, t0, t1, 0, 1, l0, l1, l2, l3];
    let mut count = 0u16;
    // Bound: one pass over the RRset's records, each at least 12 octets
    // of `out`.
    for rdata in rdatas {
        let rdlen = u16::try_from(rdata.len()).ok()?;
        let start = end;
        end = start + 12 + rdata.len();
        if end > limit {
            return None;
        }
        let record = &mut out[start..end];
        record[..10].copy_from_slice(&fixed);
        record[10..12].copy_from_slice(&rdlen.to_be_bytes());
        record[12..].copy_from_slice(rdata);
        count = count.checked_add(1)?;
    }
    Some((end, count))
}

/// Whether the octets of `buf` before `end` are the plan's origin,
/// ignoring case (see [`MessageBuilder::ends_with_origin`]).
#[inline(always)]
fn ends_with_origin(buf: &[u8], end: usize, plan: &Precompressed) -> bool {
    if let [want] = *plan.origin_words {
        // An origin of up to eight octets (most): one word.
        let Some(octets) = end.checked_sub(8).and_then(|start| buf.get(start..end)) else {
            return false;
        };
        let word = u64::from_le_bytes(octets.try_into().unwrap_or([0xff; 8]));
        return lowercase8(word) & plan.origin_mask == want;
    }
    ends_with_long_origin(buf, end, plan)
}

/// [`ends_with_origin`] for an origin of more than eight octets, out of
/// line.
#[inline(never)]
fn ends_with_long_origin(buf: &[u8], end: usize, plan: &Precompressed) -> bool {
    let last = plan.origin_words.len().wrapping_sub(1);
    plan.origin_words.iter().enumerate().all(|(k, &want)| {
        let Some(word) = end
            .checked_sub(8 * (k + 1))
            .and_then(|start| buf.get(start..start + 8))
            .and_then(|octets| <[u8; 8]>::try_from(octets).ok())
        else {
            return false;
        };
        let mask = if k == last {
            plan.origin_mask
        } else {
            u64::MAX
        };
        lowercase8(u64::from_le_bytes(word)) & mask == want
    })
}

/// Whether RDATA of `rtype` may hold names to compress: the RFC 1035
/// types RFC 3597 section 4 lists (NS, MD, MF, CNAME, SOA, MB, MG, MR,
/// PTR, MINFO, MX), those [`compressible_names`] walks; one compare where
/// the walk's set-up is a look-up of the type's layout.
#[inline(always)]
fn may_compress(rtype: RType) -> bool {
    matches!(rtype.0, 2..=9 | 12 | 14 | 15)
}

/// Writes a planned record at `out` (the record's octets, at `record` in
/// the message): the owner a pointer to the origin at `origin_at`, the
/// plan's type, class, RDATA length and RDATA, `ttl`, and each of the
/// plan's pointers made absolute (to the record, or to the origin).
#[inline(always)]
fn write_plan(out: &mut [u8], plan: &Precompressed, ttl: u32, record: usize, origin_at: usize) {
    let (owner, tail) = out.split_at_mut(2);
    owner.copy_from_slice(&(0xc000 | origin_at as u16).to_be_bytes());
    tail.copy_from_slice(&plan.tail);
    out[6..10].copy_from_slice(&ttl.to_be_bytes());
    for &(at, target) in &plan.pointers[..usize::from(plan.pointer_count)] {
        let target = if target & RECORD_RELATIVE != 0 {
            record + usize::from(target & !RECORD_RELATIVE)
        } else {
            origin_at + usize::from(target)
        };
        let at = usize::from(at);
        out[at..at + 2].copy_from_slice(&(0xc000 | target as u16).to_be_bytes());
    }
}

/// Whether a planned RDATA name below the origin has `label` (the
/// question's label just below the origin) as its own label there,
/// ignoring case.
#[inline(never)]
fn shares_label(name: &PlannedName, rdata: &[u8], label: &[u8]) -> bool {
    name.below != NOT_BELOW && {
        let at = usize::from(name.at) + usize::from(name.below);
        rdata
            .get(at..at + label.len())
            .is_some_and(|theirs| eq_ignore_case(theirs, label))
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;
    use crate::name::NameBuf;
    use crate::parse::MessageView;

    /// `may_compress` names the types whose RDATA `compressible_names`
    /// walks, every one of the 65,536: `write_record_data` copies the
    /// others' RDATA whole.
    #[test]
    fn may_compress_is_the_types_with_compressible_names() {
        for rtype in 0..=u16::MAX {
            let compressible = crate::rdata::layout(RType(rtype)).is_some_and(|l| l.compressible);
            assert_eq!(may_compress(RType(rtype)), compressible, "{rtype}");
        }
        assert!(may_compress(RType::MX) && !may_compress(RType::A));
    }

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    #[test]
    fn compresses_owner_and_rdata_names() {
        let mut buf = [0u8; 512];
        let mut b = MessageBuilder::new(&mut buf, 512).unwrap();
        b.push_question(name("Example.COM.").as_name(), RType::MX, RClass::IN)
            .unwrap();
        b.set_section(Section::Answer);
        let mut mx = vec![0, 10];
        mx.extend_from_slice(name("mail.example.com.").as_bytes());
        b.push_record(
            name("example.com.").as_name(),
            RType::MX,
            RClass::IN,
            60,
            &mx,
        )
        .unwrap();
        let len = b.finish();
        // 12 + 17 question, owner ptr 2 + 10, rdata: pref 2 + "mail" 5 + ptr 2 = 50
        assert_eq!(len, 50);
        assert_eq!(&buf[41..50], b"\x00\x0a\x04mail\xc0\x0c");
        let view = MessageView::parse(&buf[..len]).unwrap();
        let record = view.records().next().unwrap().unwrap();
        assert_eq!(record.owner.to_buf().to_string(), "Example.COM.");
        assert_eq!(record.rdata.len(), 9);
    }

    #[test]
    fn rollback_drops_bytes_counts_and_entries() {
        let mut buf = [0u8; 64];
        let mut b = MessageBuilder::new(&mut buf, 64).unwrap();
        b.push_question(name("a.example.").as_name(), RType::A, RClass::IN)
            .unwrap();
        b.set_section(Section::Answer);
        let mark = b.mark();
        b.push_record(
            name("b.other.").as_name(),
            RType::A,
            RClass::IN,
            1,
            &[1, 2, 3, 4],
        )
        .unwrap();
        let err = b.push_record(
            name("c.other.").as_name(),
            RType::TXT,
            RClass::IN,
            1,
            &[40; 40],
        );
        assert_eq!(err, Err(TruncationError));
        assert_eq!(b.count(Section::Answer), 1);
        b.rollback(mark);
        assert_eq!(b.count(Section::Answer), 0);
        // "other." must not compress against rolled-back bytes.
        b.push_record(
            name("x.other.").as_name(),
            RType::A,
            RClass::IN,
            1,
            &[1, 2, 3, 4],
        )
        .unwrap();
        let len = b.finish();
        assert_eq!(&buf[12 + 15..12 + 15 + 9], b"\x01x\x05other\x00");
        assert_eq!(len, 12 + 15 + 9 + 14);
    }

    #[test]
    fn opt_carries_extended_rcode_and_do() {
        let mut buf = [0u8; 64];
        let mut b = MessageBuilder::new(&mut buf, 64).unwrap();
        b.push_opt(1232, Rcode::BADVERS, true, &[]).unwrap();
        let len = b.finish();
        assert_eq!(
            &buf[12..len],
            b"\x00\x00\x29\x04\xd0\x01\x00\x80\x00\x00\x00"
        );
    }

    /// `push_opt` writes what `push_record` writes for an OPT (root owner,
    /// options as RDATA), after a question and records, and on a limit it
    /// does not fit leaves the message as it was.
    #[test]
    fn opt_is_written_as_push_record_writes_it() {
        let options = b"\x00\x03\x00\x04nsid\x00\x0a\x00\x08abcdefgh";
        let q = name("www.example.");
        for limit in [40, 59, 60, 61, 512] {
            let write = |direct: bool| {
                let mut buf = [0u8; 512];
                let mut b = MessageBuilder::new(&mut buf, limit).unwrap();
                b.push_question(q.as_name(), RType::A, RClass::IN).unwrap();
                let pushed = if direct {
                    b.push_opt(1232, Rcode::BADVERS, true, options)
                } else {
                    b.set_section(Section::Additional);
                    b.push_record(Name::ROOT, RType::OPT, RClass(1232), 0x0100_8000, options)
                };
                let len = b.finish();
                (pushed.is_ok(), buf[..len].to_vec())
            };
            assert_eq!(write(true), write(false), "limit {limit}");
        }
    }

    /// A message's octets, or why it could not be written.
    type Written = Result<Vec<u8>, TruncationError>;

    /// A message with `qname`'s question (as received) and, in the
    /// authority section, the SOA of `origin`: by `push_record`, and by
    /// `push_precompressed` with a plan. Returns both and whether the plan
    /// was used. When `qname` is the origin or below it, the plan's message
    /// is also written by `push_precompressed_in` told so (the origin not
    /// compared), and must be the same.
    fn soa_both_ways(
        origin: &str,
        soa: &[u8],
        qname: &str,
        limit: usize,
    ) -> (Written, Written, bool) {
        let origin = name(origin);
        let plan = Precompressed::plan(origin.as_name(), RType::SOA, soa).unwrap();
        let mut question = name(qname).as_bytes().to_vec();
        question.extend_from_slice(&[0, 6, 0, 1]);
        let in_zone = name(qname).as_name().ends_with(origin.as_name());
        let mut results = Vec::new();
        let mut planned = false;
        for (precompressed, in_question) in [(false, false), (true, false), (true, true)] {
            if in_question && !in_zone {
                continue;
            }
            let mut buf = [0u8; 1024];
            // `limit`: the room after the question.
            let limit = HEADER_LEN + question.len() + limit;
            let mut b = MessageBuilder::new(&mut buf, limit).unwrap();
            b.push_question_bytes(&question).unwrap();
            b.set_section(Section::Authority);
            let result = if precompressed {
                let used = b
                    .origin_in_question(
                        origin.as_name(),
                        RType::SOA,
                        RClass::IN,
                        soa,
                        &plan,
                        in_question,
                    )
                    .is_some();
                if in_question {
                    assert_eq!(used, planned, "{qname} told in the zone");
                }
                planned = used;
                b.push_precompressed_in(
                    origin.as_name(),
                    RType::SOA,
                    RClass::IN,
                    300,
                    soa,
                    &plan,
                    in_question,
                )
            } else {
                b.push_record(origin.as_name(), RType::SOA, RClass::IN, 300, soa)
            };
            // Later records compress against what the SOA registered: an
            // NS record for each of its names.
            let after = compressible_names(RType::SOA, soa).try_for_each(|(_, name)| {
                b.push_record(origin.as_name(), RType::NS, RClass::IN, 1, name.as_bytes())
            });
            let len = b.finish();
            results.push(result.and(after).map(|()| buf[..len].to_vec()));
        }
        if in_zone {
            let told = results.pop().unwrap();
            assert_eq!(results.last(), Some(&told), "{qname} told in the zone");
            let origin_at = name(qname).as_bytes().len() - origin.as_bytes().len();
            let at_once = question_and_planned(&question, origin_at, soa, &plan, limit);
            assert!(
                at_once.is_none() || planned,
                "{qname}: at once, not planned"
            );
            if let Some(at_once) = at_once {
                QUESTION_AND_PLANNED.with(|count| count.set(count.get() + 1));
                let mut buf = [0u8; 1024];
                let limit = HEADER_LEN + question.len() + limit;
                let mut b = MessageBuilder::new(&mut buf, limit).unwrap();
                b.push_question_bytes(&question).unwrap();
                b.set_section(Section::Authority);
                b.push_record(origin.as_name(), RType::SOA, RClass::IN, 300, soa)
                    .unwrap();
                let len = b.finish();
                assert_eq!(at_once, &buf[..len], "{qname} at once");
            }
        } else {
            // A name outside, told that the origin starts at its label of
            // the origin's length: declined (its pointers would read other
            // octets).
            let qname = name(qname);
            let origin_len = origin.as_bytes().len();
            let at_label = core::iter::successors(Some(qname.as_name()), |name| name.parent())
                .any(|name| name.len() == origin_len);
            if at_label {
                let origin_at = qname.as_bytes().len() - origin_len;
                assert_eq!(
                    question_and_planned(&question, origin_at, soa, &plan, limit),
                    None,
                    "{qname} outside"
                );
                OUTSIDE_DECLINED.with(|count| count.set(count.get() + 1));
            }
        }
        let second = results.pop().unwrap();
        (results.pop().unwrap(), second, planned)
    }

    thread_local! {
        /// How many messages `question_and_planned` wrote.
        static QUESTION_AND_PLANNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        /// How many names outside the origin `question_and_planned` was
        /// given as if in it.
        static OUTSIDE_DECLINED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// The question and the SOA by `write_question_and_planned`, if it
    /// wrote them, into a buffer of garbage (0xA5: its header too, while it
    /// writes), then the header a builder's `finish` writes.
    fn question_and_planned(
        question: &[u8],
        origin_at: usize,
        soa: &[u8],
        plan: &Precompressed,
        limit: usize,
    ) -> Option<Vec<u8>> {
        let (qname, at) = Name::parse_prefix(question).unwrap();
        let parsed = Question {
            name: qname,
            qtype: RType::SOA,
            qclass: RClass::IN,
            bytes: &question[..at + 4],
        };
        let mut buf = [0xa5u8; 1024];
        let limit = HEADER_LEN + question.len() + limit;
        let planned = PlannedAnswer {
            question: &parsed,
            origin_at,
            rtype: RType::SOA,
            ttl: 300,
            rdata: soa,
            plan,
        };
        let len = write_question_and_planned(&mut buf, limit, &planned)?;
        buf[..HEADER_LEN].copy_from_slice(&[0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0]);
        Some(buf[..len].to_vec())
    }

    fn soa_rdata(mname: &str, rname: &str) -> Vec<u8> {
        let mut rdata = name(mname).as_bytes().to_vec();
        rdata.extend_from_slice(name(rname).as_bytes());
        rdata.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5]);
        rdata
    }

    #[test]
    fn precompressed_soa_is_written_as_push_record_writes_it() {
        let long = "a.".repeat(70);
        let sixty = "a.".repeat(60);
        // Origins of one, two and three eight-octet words, whole or not
        // (`abcdef.` is 8 octets, `ab.abcdefghijk.` 16).
        let origins = [
            "example.com.",
            "Sub.Example.",
            "com.",
            "abcdef.",
            "ab.abcdefghijk.",
            "Zz.a-longer-origin.Example.org.",
        ];
        let mut used = 0;
        let mut cases = 0;
        for origin in origins {
            let names = [
                format!("ns1.{origin}"),
                format!("hostmaster.{origin}"),
                format!("NS1.{}", origin.to_uppercase()),
                format!("x.ns1.{origin}"),
                format!("b.a.{origin}"),
                origin.to_string(),
                "ns.other.net.".to_string(),
                "mail.example.com.".to_string(),
                "com.".to_string(),
                ".".to_string(),
            ];
            // A name of the origin's length and labels, its last letter
            // another: not in the zone.
            let other = format!(
                "{}{}.",
                &origin[..origin.len() - 2],
                if origin.ends_with("z.") { 'y' } else { 'z' }
            );
            let qnames = [
                other.clone(),
                format!("x.{other}"),
                origin.to_string(),
                origin.to_uppercase(),
                format!("random123.{origin}"),
                format!("ns1.{origin}"),
                format!("Ns1.{origin}"),
                format!("x.ns1.{origin}"),
                format!("hostmaster.{}", origin.to_uppercase()),
                format!("a.{origin}"),
                format!("c.b.a.{origin}"),
                format!("x.{origin}"),
                format!("{long}{origin}"),
                format!("{sixty}{origin}"),
            ];
            for mname in &names {
                for rname in &names {
                    let soa = soa_rdata(mname, rname);
                    for qname in &qnames {
                        for limit in [600, 70, 20] {
                            let (general, planned, fast) =
                                soa_both_ways(origin, &soa, qname, limit);
                            assert_eq!(
                                general, planned,
                                "origin {origin} mname {mname} rname {rname} qname {qname}"
                            );
                            cases += 1;
                            used += usize::from(fast);
                        }
                    }
                }
            }
        }
        // The plan is used in most cases, and not in all.
        assert!(used > cases / 2 && used < cases, "{used} of {cases}");
        // The question and the SOA at once in most cases the plan is used.
        let at_once = QUESTION_AND_PLANNED.with(std::cell::Cell::get);
        assert!(at_once > used / 2 && at_once < used, "{at_once} of {used}");
        // Every origin had names outside it of its length at a label.
        let outside = OUTSIDE_DECLINED.with(std::cell::Cell::get);
        assert!(outside >= origins.len(), "{outside}");
    }

    #[test]
    fn precompressed_soa_after_other_records_is_written_by_push_record() {
        let origin = name("example.com.");
        let soa = soa_rdata("ns1.example.com.", "hostmaster.example.com.");
        let plan = Precompressed::plan(origin.as_name(), RType::SOA, &soa).unwrap();
        let mut buf = [0u8; 512];
        let mut b = MessageBuilder::new(&mut buf, 512).unwrap();
        b.push_question(name("www.example.com.").as_name(), RType::A, RClass::IN)
            .unwrap();
        b.set_section(Section::Answer);
        b.push_record(origin.as_name(), RType::A, RClass::IN, 1, &[1, 2, 3, 4])
            .unwrap();
        assert_eq!(
            b.origin_in_question(origin.as_name(), RType::SOA, RClass::IN, &soa, &plan, false),
            None
        );
        assert_eq!(Precompressed::plan(Name::ROOT, RType::SOA, &soa), None);
    }

    /// The plan's tail holds the type, class IN and a TTL written over:
    /// a record of another class or type is written by `push_record` (the
    /// plan is not used), and each TTL is the one given.
    #[test]
    fn precompressed_soa_keeps_the_class_type_and_ttl_given() {
        let origin = name("example.com.");
        let soa = soa_rdata("ns1.example.com.", "hostmaster.example.com.");
        let plan = Precompressed::plan(origin.as_name(), RType::SOA, &soa).unwrap();
        let question = name("x.example.com.");
        for (rtype, class, ttl, used) in [
            (RType::SOA, RClass::IN, 0, true),
            (RType::SOA, RClass::IN, 0x0102_0304, true),
            (RType::SOA, RClass::IN, u32::MAX, true),
            (RType::SOA, RClass::CH, 300, false),
            (RType(65280), RClass::IN, 300, false),
        ] {
            let mut written = Vec::new();
            for precompressed in [false, true] {
                let mut buf = [0u8; 512];
                let mut b = MessageBuilder::new(&mut buf, 512).unwrap();
                b.push_question(question.as_name(), RType::A, RClass::IN)
                    .unwrap();
                b.set_section(Section::Authority);
                if precompressed {
                    let planned =
                        b.origin_in_question(origin.as_name(), rtype, class, &soa, &plan, false);
                    assert_eq!(planned.is_some(), used, "{rtype:?} {class:?}");
                    b.push_precompressed(origin.as_name(), rtype, class, ttl, &soa, &plan)
                        .unwrap();
                } else {
                    b.push_record(origin.as_name(), rtype, class, ttl, &soa)
                        .unwrap();
                }
                let len = b.finish();
                written.push(buf[..len].to_vec());
            }
            assert_eq!(written[0], written[1], "{rtype:?} {class:?} {ttl}");
        }
    }

    #[test]
    fn reserve_keeps_room() {
        let mut buf = [0u8; 40];
        let mut b = MessageBuilder::new(&mut buf, 40).unwrap();
        b.reserve(11).unwrap();
        assert_eq!(b.limit(), 29);
        assert!(b
            .push_question(name("abcdefghijklmn.").as_name(), RType::A, RClass::IN)
            .is_err());
        b.release(11);
        assert!(b
            .push_question(name("abcdefghijklmn.").as_name(), RType::A, RClass::IN)
            .is_ok());
    }
}
