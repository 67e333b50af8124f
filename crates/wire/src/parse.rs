//! Borrowed views over a received message.
//!
//! [`MessageView::parse`] checks the header and the question eagerly (a
//! query is useless without them) and leaves the other sections to lazy
//! iterators, so answering a query touches only the bytes it needs. Nothing
//! here allocates.
//!
//! Compressed names are followed through backward pointers only: a pointer
//! must point strictly before the start of the name that holds it, so a
//! loop is impossible and every name is read in at most
//! [`MAX_POINTER_HOPS`] jumps and 255 output octets, whatever the message
//! claims.

use crate::edns::Edns;
use crate::error::ParseError;
use crate::name::{Name, NameBuf, MAX_LABEL_LEN, MAX_NAME_LEN};
use crate::types::{Opcode, RClass, RType};

/// The size of the fixed header.
pub const HEADER_LEN: usize = 12;

/// The most compression pointers followed for one name. Each pointer moves
/// strictly backwards, so the bound is also implied by the message size;
/// the constant keeps the work per name small regardless.
pub const MAX_POINTER_HOPS: usize = 64;

//----------- Header ---------------------------------------------------------

/// The 12-octet message header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The raw header bytes.
    pub bytes: [u8; HEADER_LEN],
}

impl Header {
    /// Copies the header from the start of `message`.
    pub fn from_message(message: &[u8]) -> Result<Self, ParseError> {
        let bytes: [u8; HEADER_LEN] = message
            .get(..HEADER_LEN)
            .and_then(|b| b.try_into().ok())
            .ok_or(ParseError::new("message shorter than a header"))?;
        Ok(Header { bytes })
    }

    /// The message ID.
    pub fn id(&self) -> u16 {
        u16::from_be_bytes([self.bytes[0], self.bytes[1]])
    }

    /// QR: this is a response.
    pub fn qr(&self) -> bool {
        self.bytes[2] & 0x80 != 0
    }

    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        Opcode((self.bytes[2] >> 3) & 0x0f)
    }

    /// AA: authoritative answer.
    pub fn aa(&self) -> bool {
        self.bytes[2] & 0x04 != 0
    }

    /// TC: truncated.
    pub fn tc(&self) -> bool {
        self.bytes[2] & 0x02 != 0
    }

    /// RD: recursion desired.
    pub fn rd(&self) -> bool {
        self.bytes[2] & 0x01 != 0
    }

    /// RA: recursion available.
    pub fn ra(&self) -> bool {
        self.bytes[3] & 0x80 != 0
    }

    /// AD: authentic data.
    pub fn ad(&self) -> bool {
        self.bytes[3] & 0x20 != 0
    }

    /// CD: checking disabled.
    pub fn cd(&self) -> bool {
        self.bytes[3] & 0x10 != 0
    }

    /// The four low bits of the response code.
    pub fn rcode_bits(&self) -> u8 {
        self.bytes[3] & 0x0f
    }

    /// The four section counts: question, answer, authority, additional.
    pub fn counts(&self) -> [u16; 4] {
        let c = |i: usize| u16::from_be_bytes([self.bytes[i], self.bytes[i + 1]]);
        [c(4), c(6), c(8), c(10)]
    }
}

//----------- Question -------------------------------------------------------

/// The question of a message. The name keeps the case the client sent.
#[derive(Clone, Copy, Debug)]
pub struct Question<'a> {
    /// The query name, as received (it can never be compressed: a pointer
    /// in the first name could only point into the header).
    pub name: Name<'a>,
    /// The query type.
    pub qtype: RType,
    /// The query class.
    pub qclass: RClass,
    /// The question's exact bytes: name, type and class.
    pub bytes: &'a [u8],
}

//----------- MessageView ----------------------------------------------------

/// A parsed message borrowing the received bytes.
#[derive(Clone, Copy, Debug)]
pub struct MessageView<'a> {
    message: &'a [u8],
    header: Header,
    question: Option<Question<'a>>,
    /// Offset of the first record after the question section.
    records_start: usize,
}

impl<'a> MessageView<'a> {
    /// Parses the header and, if QDCOUNT is 1, the question. A QDCOUNT
    /// other than 0 or 1 is rejected: no server answers several questions.
    pub fn parse(message: &'a [u8]) -> Result<Self, ParseError> {
        Self::parse_inlined(message)
    }

    /// [`MessageView::parse`], inlined always: for
    /// [`Query::parse`](crate::query::Query::parse), once a query on a
    /// server's path, where the
    /// call's frame and the copy of the view it returned (from its return
    /// place into the query) cost about 30 instructions.
    #[inline(always)]
    pub(crate) fn parse_inlined(message: &'a [u8]) -> Result<Self, ParseError> {
        #[cfg(any(test, feature = "parse-count"))]
        count::note(message);
        let header = Header::from_message(message)?;
        let mut question = None;
        let mut records_start = HEADER_LEN;
        match header.counts()[0] {
            0 => {}
            1 => {
                let (name, name_len) = Name::parse_prefix(&message[HEADER_LEN..])?;
                let fixed = HEADER_LEN + name_len;
                let tail = message
                    .get(fixed..fixed + 4)
                    .ok_or(ParseError::new("question runs past the end"))?;
                question = Some(Question {
                    name,
                    qtype: RType(u16::from_be_bytes([tail[0], tail[1]])),
                    qclass: RClass(u16::from_be_bytes([tail[2], tail[3]])),
                    bytes: &message[HEADER_LEN..fixed + 4],
                });
                records_start = fixed + 4;
            }
            _ => return Err(ParseError::new("more than one question")),
        }
        Ok(MessageView {
            message,
            header,
            question,
            records_start,
        })
    }

    /// The whole message.
    pub fn bytes(&self) -> &'a [u8] {
        self.message
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The question, if QDCOUNT was 1.
    pub fn question(&self) -> Option<Question<'a>> {
        self.question
    }

    /// The question, if there is one, borrowed: for a caller that hands
    /// it on without a copy.
    pub fn question_ref(&self) -> Option<&Question<'a>> {
        self.question.as_ref()
    }

    /// The records of the answer, authority and additional sections, in
    /// order, each tagged with its section. Lazy: stops at the first error.
    pub fn records(&self) -> Records<'a> {
        let counts = self.header.counts();
        Records {
            message: self.message,
            pos: self.records_start,
            remaining: [counts[1], counts[2], counts[3]],
            section: 0,
            failed: false,
        }
    }

    /// The records of one section, lazily. A malformed record ends the
    /// iteration with an error.
    pub fn section(
        &self,
        section: Section,
    ) -> impl Iterator<Item = Result<RecordView<'a>, ParseError>> {
        self.records()
            .skip_while(move |record| matches!(record, Ok(r) if r.section != section))
            .take_while(move |record| !matches!(record, Ok(r) if r.section != section))
    }

    /// Walks every record and returns the query's EDNS view if there is
    /// one. Errors: malformed records, trailing bytes, more than one OPT,
    /// an OPT outside the additional section or with a non-root owner
    /// (RFC 6891 section 6.1.1). Bound: the loop runs at most as many times
    /// as there are records, and every record consumes at least 11 octets.
    ///
    /// Inlined: the two usual shapes cost a few compares, less than the
    /// call's frame; the walk is out of line.
    #[inline]
    pub fn edns(&self) -> Result<Option<Edns<'a>>, ParseError> {
        // The two shapes of nearly every query, read without the walk
        // (the same result): no records, or one OPT record alone with a
        // root owner (its first octet 0), ending the message.
        let rest = self.message.get(self.records_start..).unwrap_or(&[]);
        match self.header.counts() {
            [_, 0, 0, 0] if rest.is_empty() => return Ok(None),
            [_, 0, 0, 1] if rest.len() >= 11 && rest[..3] == [0, 0, 41] => {
                let rdlen = usize::from(u16::from_be_bytes([rest[9], rest[10]]));
                if rest.len() == 11 + rdlen {
                    let class = u16::from_be_bytes([rest[3], rest[4]]);
                    let ttl = u32::from_be_bytes([rest[5], rest[6], rest[7], rest[8]]);
                    return Edns::from_fields(class, ttl, &rest[11..]).map(Some);
                }
            }
            _ => {}
        }
        self.edns_walked()
    }

    /// [`MessageView::edns`] by walking every record.
    #[inline(never)]
    fn edns_walked(&self) -> Result<Option<Edns<'a>>, ParseError> {
        let mut found = None;
        let mut records = self.records();
        for record in records.by_ref() {
            let record = record?;
            if record.rtype != RType::OPT {
                continue;
            }
            if record.section != Section::Additional {
                return Err(ParseError::new("OPT record outside the additional section"));
            }
            if !record.owner_is_root() {
                return Err(ParseError::new("OPT record with a non-root owner"));
            }
            if found.is_some() {
                return Err(ParseError::new("more than one OPT record"));
            }
            found = Some(Edns::from_fields(record.class, record.ttl, record.rdata)?);
        }
        if records.pos != self.message.len() {
            return Err(ParseError::new("trailing bytes after the last record"));
        }
        Ok(found)
    }
}

//----------- Section --------------------------------------------------------

/// The three record sections of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// The answer section.
    Answer,
    /// The authority section.
    Authority,
    /// The additional section.
    Additional,
}

//----------- RecordView -----------------------------------------------------

/// One record of a message, borrowed. The owner may be compressed.
#[derive(Clone, Copy, Debug)]
pub struct RecordView<'a> {
    /// The section the record came from.
    pub section: Section,
    /// The owner name (possibly compressed).
    pub owner: CompressedName<'a>,
    /// The record type.
    pub rtype: RType,
    /// The class (for OPT: the UDP payload size).
    pub class: u16,
    /// The TTL (for OPT: extended rcode, version and flags).
    pub ttl: u32,
    /// The RDATA.
    pub rdata: &'a [u8],
    /// The offset of the RDATA within the message, for reading names in it.
    pub rdata_offset: usize,
}

impl RecordView<'_> {
    /// Whether the owner is the root name.
    pub fn owner_is_root(&self) -> bool {
        self.owner.message.get(self.owner.offset) == Some(&0)
    }
}

//----------- Records --------------------------------------------------------

/// Lazy iterator over the records of a message.
pub struct Records<'a> {
    message: &'a [u8],
    pos: usize,
    remaining: [u16; 3],
    section: usize,
    failed: bool,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<RecordView<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        while self.section < 3 && self.remaining[self.section] == 0 {
            self.section += 1;
        }
        if self.section == 3 {
            return None;
        }
        self.remaining[self.section] -= 1;
        let section = [Section::Answer, Section::Authority, Section::Additional][self.section];
        match read_record(self.message, self.pos, section) {
            Ok((record, end)) => {
                self.pos = end;
                Some(Ok(record))
            }
            Err(err) => {
                self.failed = true;
                Some(Err(err))
            }
        }
    }
}

fn read_record(
    message: &[u8],
    pos: usize,
    section: Section,
) -> Result<(RecordView<'_>, usize), ParseError> {
    let owner = CompressedName::parse(message, pos)?;
    let fixed = pos + owner.wire_len;
    let head = message
        .get(fixed..fixed + 10)
        .ok_or(ParseError::new("record header runs past the end"))?;
    let rdlen = usize::from(u16::from_be_bytes([head[8], head[9]]));
    let rdata_offset = fixed + 10;
    let rdata = message
        .get(rdata_offset..rdata_offset + rdlen)
        .ok_or(ParseError::new("RDATA runs past the end"))?;
    let record = RecordView {
        section,
        owner,
        rtype: RType(u16::from_be_bytes([head[0], head[1]])),
        class: u16::from_be_bytes([head[2], head[3]]),
        ttl: u32::from_be_bytes([head[4], head[5], head[6], head[7]]),
        rdata,
        rdata_offset,
    };
    Ok((record, rdata_offset + rdlen))
}

//----------- CompressedName -------------------------------------------------

/// A name inside a message, possibly ending in compression pointers. It was
/// checked when parsed: decompressing it cannot fail.
#[derive(Clone, Copy, Debug)]
pub struct CompressedName<'a> {
    message: &'a [u8],
    offset: usize,
    /// Octets the name occupies at `offset` (up to and including the first
    /// pointer or the root label).
    wire_len: usize,
}

impl<'a> CompressedName<'a> {
    /// Reads and checks the name at `offset` in `message`: pointers must
    /// point strictly backwards, labels are at most 63 octets, the expanded
    /// name at most 255 octets, label types 01 and 10 are rejected.
    pub fn parse(message: &'a [u8], offset: usize) -> Result<Self, ParseError> {
        let mut wire_len = None;
        let mut expanded = 0usize;
        let mut pos = offset;
        // Every pointer must point before the start of the name segment that
        // contains it; this is the position of that start.
        let mut segment_start = offset;
        let mut hops = 0;
        loop {
            let len = *message
                .get(pos)
                .ok_or(ParseError::new("name runs past the end"))?;
            match len & 0xc0 {
                0xc0 => {
                    let low = *message
                        .get(pos + 1)
                        .ok_or(ParseError::new("name runs past the end"))?;
                    let target = usize::from(u16::from_be_bytes([len & 0x3f, low]));
                    if target >= segment_start {
                        return Err(ParseError::new(
                            "compression pointer does not point backwards",
                        ));
                    }
                    hops += 1;
                    if hops > MAX_POINTER_HOPS {
                        return Err(ParseError::new("too many compression pointers"));
                    }
                    wire_len.get_or_insert_with(|| pos + 2 - offset);
                    pos = target;
                    segment_start = target;
                }
                0x00 => {
                    let len = usize::from(len);
                    debug_assert!(len <= MAX_LABEL_LEN);
                    expanded += 1 + len;
                    if expanded > MAX_NAME_LEN {
                        return Err(ParseError::new("name longer than 255 octets"));
                    }
                    if len == 0 {
                        let wire_len = *wire_len.get_or_insert_with(|| pos + 1 - offset);
                        return Ok(CompressedName {
                            message,
                            offset,
                            wire_len,
                        });
                    }
                    if pos + 1 + len > message.len() {
                        return Err(ParseError::new("name runs past the end"));
                    }
                    pos += 1 + len;
                }
                _ => return Err(ParseError::new("unknown label type")),
            }
        }
    }

    /// The number of octets the name takes at its position.
    pub fn wire_len(&self) -> usize {
        self.wire_len
    }

    /// Decompresses into an owned buffer.
    pub fn to_buf(&self) -> NameBuf {
        let mut bytes = [0u8; MAX_NAME_LEN];
        let mut len = 0;
        let mut pos = self.offset;
        loop {
            let octet = self.message[pos];
            if octet & 0xc0 == 0xc0 {
                pos = usize::from(u16::from_be_bytes([octet & 0x3f, self.message[pos + 1]]));
                continue;
            }
            let label = usize::from(octet);
            bytes[len..len + 1 + label].copy_from_slice(&self.message[pos..pos + 1 + label]);
            len += 1 + label;
            if label == 0 {
                break;
            }
            pos += 1 + label;
        }
        let name = Name::from_wire(&bytes[..len]).expect("checked by CompressedName::parse");
        name.to_buf()
    }
}

//----------- count ----------------------------------------------------------

/// Counts the parses of one message, for tests that prove a query is
/// parsed once on its way through a server (issue 23). Compiled only in
/// this crate's tests and with the `parse-count` feature, which only
/// test builds enable (as a dev-dependency feature): release builds have
/// neither the counter nor its branch.
///
/// The message is told apart by its address and length, so the parses of
/// other messages (answers read back, a copy of the query) do not count.
/// Per thread: each test thread counts its own.
#[cfg(any(test, feature = "parse-count"))]
pub mod count {
    use std::cell::Cell;

    std::thread_local! {
        /// The watched message's address and length, and its parses.
        static WATCHED: Cell<(usize, usize, usize)> = const { Cell::new((0, 0, 0)) };
    }

    /// Starts counting the parses of `message` on this thread, from 0
    /// (and stops counting the message watched before).
    pub fn watch(message: &[u8]) {
        WATCHED.set((message.as_ptr() as usize, message.len(), 0));
    }

    /// How many times [`super::MessageView::parse`] read the watched
    /// message since [`watch`].
    pub fn parses() -> usize {
        WATCHED.get().2
    }

    /// Called by every parse.
    pub(super) fn note(message: &[u8]) {
        let (address, len, parses) = WATCHED.get();
        if address == message.as_ptr() as usize && len == message.len() {
            WATCHED.set((address, len, parses + 1));
        }
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    const QUERY: &[u8] = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\
        \x03www\x07example\x03com\x00\x00\x01\x00\x01";

    #[test]
    fn parses_of_the_watched_message_are_counted() {
        // One binding: each use of a constant may have its own address.
        let query = QUERY;
        let copy = query.to_vec();
        count::watch(query);
        assert_eq!(count::parses(), 0);
        MessageView::parse(query).unwrap();
        MessageView::parse(&copy).unwrap();
        assert!(MessageView::parse(&query[..11]).is_err());
        assert_eq!(count::parses(), 1);
        MessageView::parse(query).unwrap();
        assert_eq!(count::parses(), 2);
    }

    #[test]
    fn parses_question() {
        let m = MessageView::parse(QUERY).unwrap();
        assert_eq!(m.header().id(), 0x1234);
        assert!(m.header().rd());
        let q = m.question().unwrap();
        assert_eq!(q.qtype, RType::A);
        assert_eq!(q.bytes.len(), 17 + 4);
        assert!(m.edns().unwrap().is_none());
    }

    #[test]
    fn rejects_short_and_multi_question() {
        assert!(MessageView::parse(&QUERY[..11]).is_err());
        let mut two = QUERY.to_vec();
        two[5] = 2;
        assert_eq!(
            MessageView::parse(&two).unwrap_err().what,
            "more than one question"
        );
        let mut cut = QUERY.to_vec();
        cut.truncate(QUERY.len() - 1);
        assert!(MessageView::parse(&cut).is_err());
    }

    #[test]
    fn compressed_names() {
        // Name at 12, then pointer to it at 29.
        let mut msg = QUERY.to_vec();
        msg.extend_from_slice(b"\x03ftp\xc0\x10");
        let n = CompressedName::parse(&msg, QUERY.len()).unwrap();
        assert_eq!(n.wire_len(), 6);
        assert_eq!(n.to_buf().to_string(), "ftp.example.com.");
        // Forward pointer and self-pointer are refused.
        let mut fwd = QUERY.to_vec();
        let here = fwd.len();
        fwd.extend_from_slice(&[0xc0, here as u8]);
        assert!(CompressedName::parse(&fwd, here).is_err());
        let mut past = QUERY.to_vec();
        past.extend_from_slice(b"\xc0\xff");
        assert!(CompressedName::parse(&past, QUERY.len()).is_err());
    }

    #[test]
    fn pointer_loop_is_impossible() {
        // Two pointers pointing at each other: the second points forward.
        let msg = b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xc0\x0e\xc0\x0c";
        assert!(CompressedName::parse(msg, 12).is_err());
        assert!(CompressedName::parse(msg, 14).is_err());
    }

    #[test]
    fn sections_iterate_separately() {
        // One answer, one authority, one additional record, all A records.
        let mut msg = QUERY.to_vec();
        msg[7] = 1;
        msg[9] = 1;
        msg[11] = 1;
        for last in 1..=3u8 {
            msg.extend_from_slice(b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\xc0\x00\x02");
            msg.push(last);
        }
        let m = MessageView::parse(&msg).unwrap();
        let octet =
            |section| -> Vec<u8> { m.section(section).map(|r| r.unwrap().rdata[3]).collect() };
        assert_eq!(octet(Section::Answer), [1]);
        assert_eq!(octet(Section::Authority), [2]);
        assert_eq!(octet(Section::Additional), [3]);
    }

    #[test]
    fn records_past_the_end_fail() {
        let mut msg = QUERY.to_vec();
        msg[7] = 1; // ANCOUNT 1, no bytes
        let m = MessageView::parse(&msg).unwrap();
        assert!(m.records().next().unwrap().is_err());
        assert!(m.edns().is_err());
    }

    #[test]
    fn edns_rules() {
        let opt = b"\x00\x00\x29\x04\xd0\x00\x00\x80\x00\x00\x00";
        let mut msg = QUERY.to_vec();
        msg[11] = 1;
        msg.extend_from_slice(opt);
        let edns = MessageView::parse(&msg).unwrap().edns().unwrap().unwrap();
        assert_eq!(edns.udp_size, 1232);
        assert!(edns.dnssec_ok);
        let mut two = msg.clone();
        two[11] = 2;
        two.extend_from_slice(opt);
        assert!(MessageView::parse(&two).unwrap().edns().is_err());
        let mut trailing = msg.clone();
        trailing.push(0);
        assert!(MessageView::parse(&trailing).unwrap().edns().is_err());
        let mut in_answer = msg.clone();
        in_answer[7] = 1;
        in_answer[11] = 0;
        assert!(MessageView::parse(&in_answer).unwrap().edns().is_err());
    }

    /// The shortcut for queries without records or with an OPT alone
    /// gives what the walk gives, for those shapes and the near misses.
    #[test]
    fn edns_shortcut_agrees_with_the_walk() {
        let opt = b"\x00\x00\x29\x04\xd0\x00\x00\x80\x00\x00\x00".to_vec();
        let with_option = b"\x00\x00\x29\x02\x00\x00\x00\x00\x00\x00\x04\x00\x03\x00\x00".to_vec();
        let bad_version = b"\x00\x00\x29\x02\x00\x00\x01\x00\x00\x00\x00".to_vec();
        let named = b"\x01a\x00\x00\x29\x02\x00\x00\x00\x00\x00\x00\x00".to_vec();
        let a_record = b"\x00\x00\x01\x00\x01\x00\x00\x00\x01\x00\x04\x01\x02\x03\x04".to_vec();
        let mut messages = Vec::new();
        for (records, counts) in [
            (vec![], [0, 0, 0]),
            (vec![0], [0, 0, 0]),
            (opt.clone(), [0, 0, 1]),
            (with_option.clone(), [0, 0, 1]),
            (with_option[..14].to_vec(), [0, 0, 1]),
            ([&with_option[..], &[0]].concat(), [0, 0, 1]),
            (bad_version, [0, 0, 1]),
            (named, [0, 0, 1]),
            (opt[..10].to_vec(), [0, 0, 1]),
            (opt.clone(), [1, 0, 0]),
            (opt.clone(), [0, 0, 0]),
            ([&a_record[..], &opt[..]].concat(), [0, 0, 2]),
            ([&opt[..], &opt[..]].concat(), [0, 0, 2]),
            (a_record, [0, 0, 1]),
        ] {
            let mut msg = QUERY.to_vec();
            msg[7] = counts[0];
            msg[9] = counts[1];
            msg[11] = counts[2];
            msg.extend_from_slice(&records);
            messages.push(msg);
        }
        let mut read = 0;
        for msg in &messages {
            let view = MessageView::parse(msg).unwrap();
            assert_eq!(view.edns(), view.edns_walked(), "{msg:?}");
            read += usize::from(matches!(view.edns(), Ok(Some(_))));
        }
        assert_eq!(read, 4);
    }
}
