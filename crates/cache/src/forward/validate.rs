//! Checking an upstream's answer before anything of it reaches a client or
//! the cache, and cutting it into the parts a forwarded answer is written
//! from (STYLE R6: every byte is hostile, every loop bounded).
//!
//! An answer is accepted only if: it parses; QR is set, the opcode is
//! QUERY; its question is byte for byte the one we sent (the name's 0x20
//! case included); every compression pointer lands on the start of a label
//! of a name read before it (the question's, an owner's, or one in the
//! RDATA of a type with names): never in the header, which a client's
//! answer replaces, nor in a TTL, which the cache rewrites, nor in other
//! data;
//! an OPT record, if any, is the last record; the answer section holds
//! only the question's chain (the name, then each CNAME target in turn,
//! no loop, at most [`MAX_CNAME_CHAIN`] links) with the question's type,
//! CNAME, RRSIG, or a DNAME above a chain name (or at one, when DNAME is
//! the type asked); and the SOA and NS records
//! of the authority section sit at or above the chain's last name.

use tern_wire::name::NameBuf;
use tern_wire::parse::{CompressedName, MessageView, HEADER_LEN, MAX_POINTER_HOPS};
use tern_wire::types::{Opcode, RType};

use crate::response::MAX_ANSWER_LEN;

/// The longest CNAME chain followed in an answer (the query name plus this
/// many targets). Resolvers stop between 8 and 16 links; longer chains are
/// misconfigurations or attacks.
pub const MAX_CNAME_CHAIN: usize = 12;

/// The longest TTL kept (one day): longer TTLs are capped, as resolvers do
/// (RFC 8767 section 4 suggests capping at days, not weeks).
pub const MAX_CACHE_TTL: u32 = 86_400;

/// The most records one answer may carry: each costs at least 11 octets,
/// so 65535 octets cannot hold more; the bound keeps the walks explicit.
const MAX_RECORDS: usize = 65535 / 11;

/// Header octet 2: QR.
const QR: u8 = 0x80;
/// Header octet 3: RA.
const RA: u8 = 0x80;
/// Header octet 3: AD.
const AD: u8 = 0x20;

//----------- Prepared -------------------------------------------------------

/// A checked upstream answer, cut into what every client's copy shares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Prepared {
    /// Header octets 2 and 3 as sent to clients: QR, RA, AD as upstream
    /// set it and the rcode; RD and CD are the client's own, added later.
    pub(crate) flags: [u8; 2],
    /// ANCOUNT, NSCOUNT and ARCOUNT without the upstream's OPT.
    pub(crate) counts: [u16; 3],
    /// The records after the question, upstream's OPT left out.
    pub(crate) tail: Vec<u8>,
    /// Offsets in `tail` of every record's TTL field, two octets each,
    /// little-endian (as the cache stores them).
    pub(crate) ttl_offsets: Vec<u8>,
    /// How long the answer may be cached, in seconds (0: not cached).
    pub(crate) ttl: u32,
}

impl Prepared {
    /// A SERVFAIL with no records, cached for `ttl` seconds. No
    /// allocation (empty vectors).
    pub(crate) fn servfail(ttl: u32) -> Prepared {
        Prepared {
            flags: [QR, RA | 2],
            counts: [0; 3],
            tail: Vec::new(),
            ttl_offsets: Vec::new(),
            ttl,
        }
    }
}

//----------- Verdict --------------------------------------------------------

/// What an upstream's answer is worth.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A checked answer (NOERROR or NXDOMAIN), cut up in
    /// [`Validator::prepared`].
    Good,
    /// TC set: ask again over TCP.
    Truncated,
    /// A well-formed error (SERVFAIL, REFUSED, ...): try another upstream.
    Failure,
    /// Malformed, mismatched or outside the question's chain: dropped.
    Bad(&'static str),
}

//----------- Validator ------------------------------------------------------

/// Records whose facts the validator holds without growing: answers with
/// more make its list grow once, to the most seen.
const RECORDS_RESERVED: usize = 32;

/// TTL offsets held without growing (two octets each).
const TTL_OFFSETS_RESERVED: usize = 64;

/// Checks upstream answers in memory of its own, reserved once and reused
/// for every answer (the bit per octet of the message, the records'
/// facts, the chain, the cut-up answer), so that checking allocates
/// nothing; only an answer with more records than any before it, or a
/// tail longer, makes a list grow, once.
pub(crate) struct Validator {
    scratch: Scratch,
    /// The last answer found [`Verdict::Good`], cut up.
    pub(crate) prepared: Prepared,
}

/// What [`cut`] works in.
struct Scratch {
    labels: LabelStarts,
    records: Vec<Record>,
    chain: Vec<NameBuf>,
    /// Offsets in the message of every kept record's TTL field.
    ttl_fields: Vec<usize>,
}

impl Validator {
    /// A validator with its memory reserved: a bit per octet of the
    /// longest message, [`RECORDS_RESERVED`] records, the longest chain,
    /// and a tail of `tail` octets.
    pub(crate) fn new(tail: usize) -> Self {
        Validator {
            scratch: Scratch {
                labels: LabelStarts(Vec::with_capacity(MAX_ANSWER_LEN / 64 + 1)),
                records: Vec::with_capacity(RECORDS_RESERVED),
                chain: Vec::with_capacity(MAX_CNAME_CHAIN + 1),
                ttl_fields: Vec::with_capacity(RECORDS_RESERVED),
            },
            prepared: Prepared {
                tail: Vec::with_capacity(tail),
                ttl_offsets: Vec::with_capacity(TTL_OFFSETS_RESERVED),
                ..Prepared::default()
            },
        }
    }

    /// Checks `answer` against the question we sent (`question`: name as
    /// sent, type, class) and, if good, cuts it up into
    /// [`Validator::prepared`]. `negative_ttl_max` caps the TTL of
    /// NXDOMAIN and NODATA answers (RFC 2308 section 5). The ID is the
    /// caller's business: it matched the answer to the query.
    pub(crate) fn check(
        &mut self,
        question: &[u8],
        answer: &[u8],
        negative_ttl_max: u32,
    ) -> Verdict {
        if answer.len() > MAX_ANSWER_LEN {
            return Verdict::Bad("longer than a DNS message");
        }
        let Ok(view) = MessageView::parse(answer) else {
            return Verdict::Bad("malformed header or question");
        };
        let header = view.header();
        if !header.qr() || header.opcode() != Opcode::QUERY {
            return Verdict::Bad("not a response to a query");
        }
        let Some(asked) = view.question() else {
            return Verdict::Bad("no question");
        };
        if asked.bytes != question {
            return Verdict::Bad("question differs from the one sent");
        }
        if header.tc() {
            return Verdict::Truncated;
        }
        let edns = match view.edns() {
            Ok(edns) => edns,
            Err(_) => return Verdict::Bad("malformed records"),
        };
        let extended = edns.map_or(0, |edns| edns.extended_rcode);
        match (extended, header.rcode_bits()) {
            (0, 0 | 3) => {}
            _ => return Verdict::Failure,
        }
        let nxdomain = header.rcode_bits() == 3;
        let qname = asked.name.to_lower().as_name().to_buf();
        let cut = match cut(&view, qname, asked.qtype, &mut self.scratch) {
            Ok(cut) => cut,
            Err(what) => return Verdict::Bad(what),
        };
        let counts = header.counts();
        // The OPT counted in ARCOUNT is left out (cut found it among the
        // additional records, so the count is at least one).
        let Some(additional) = counts[3].checked_sub(u16::from(cut.opt)) else {
            return Verdict::Bad("an OPT record outside the additional section");
        };
        let tail_start = HEADER_LEN + question.len();
        let negative = cut.negative || nxdomain;
        let ttl = if negative {
            cut.negative_ttl.map_or(0, |ttl| ttl.min(negative_ttl_max))
        } else {
            cut.min_answer_ttl.unwrap_or(0)
        }
        .min(MAX_CACHE_TTL);
        let prepared = &mut self.prepared;
        prepared.tail.clear();
        prepared
            .tail
            .extend_from_slice(&answer[tail_start..cut.end]);
        prepared.ttl_offsets.clear();
        // Cap every TTL: at a day, and for a negative answer at its
        // negative TTL (RFC 2308 section 5: the SOA's TTL is that).
        let cap = if negative { ttl } else { MAX_CACHE_TTL };
        for &offset in &self.scratch.ttl_fields {
            let at = offset - tail_start;
            let field = &mut prepared.tail[at..at + 4];
            let value = u32::from_be_bytes([field[0], field[1], field[2], field[3]]);
            // RFC 2181 section 8: a TTL with the top bit set is zero.
            let value = if value > i32::MAX as u32 { 0 } else { value }.min(cap);
            field.copy_from_slice(&value.to_be_bytes());
            // Within a message of at most 65535 octets: no wrap.
            prepared
                .ttl_offsets
                .extend_from_slice(&(at as u16).to_le_bytes());
        }
        prepared.flags = [QR, RA | (answer[3] & AD) | header.rcode_bits()];
        prepared.counts = [counts[1], counts[2], additional];
        prepared.ttl = ttl;
        Verdict::Good
    }
}

/// Checks `answer` with a validator of its own (tests).
#[cfg(test)]
pub(crate) fn validate(question: &[u8], answer: &[u8], negative_ttl_max: u32) -> Verdict {
    Validator::new(0).check(question, answer, negative_ttl_max)
}

//----------- Cut ------------------------------------------------------------

/// What the walk over the records found (the TTL fields in
/// `Scratch::ttl_fields`).
struct Cut {
    /// Where the records we keep end (the OPT's start, or the message end).
    end: usize,
    opt: bool,
    /// The smallest TTL in the answer section.
    min_answer_ttl: Option<u32>,
    /// NOERROR without the question's type at the chain's end (NODATA).
    negative: bool,
    /// min(SOA TTL, SOA MINIMUM) of the authority section's SOA.
    negative_ttl: Option<u32>,
}

/// One parsed record's facts.
struct Record {
    section: usize,
    owner: NameBuf,
    rtype: RType,
    class: u16,
    ttl: u32,
    /// The target name of a CNAME, lowercased.
    target: Option<NameBuf>,
    rdata: (usize, usize),
}

/// Walks every record once: checks pointers and the answer chain.
fn cut(
    view: &MessageView<'_>,
    qname: NameBuf,
    qtype: RType,
    scratch: &mut Scratch,
) -> Result<Cut, &'static str> {
    let message = view.bytes();
    let counts = view.header().counts();
    let total = usize::from(counts[1]) + usize::from(counts[2]) + usize::from(counts[3]);
    if total > MAX_RECORDS {
        return Err("too many records");
    }
    let Some(question) = view.question() else {
        return Err("no question");
    };
    let Scratch {
        labels,
        records,
        chain,
        ttl_fields,
    } = scratch;
    labels.reset(message.len());
    records.clear();
    chain.clear();
    ttl_fields.clear();
    check_name(message, HEADER_LEN, labels)?;
    let mut pos = HEADER_LEN + question.bytes.len();
    let mut end = message.len();
    let mut opt = false;
    for index in 0..total {
        let section = if index < usize::from(counts[1]) {
            0
        } else if index < usize::from(counts[1]) + usize::from(counts[2]) {
            1
        } else {
            2
        };
        let start = pos;
        let name_end = check_name(message, pos, labels)?;
        let fixed = message
            .get(name_end..name_end + 10)
            .ok_or("record runs past the end")?;
        let rtype = RType(u16::from_be_bytes([fixed[0], fixed[1]]));
        let class = u16::from_be_bytes([fixed[2], fixed[3]]);
        let ttl = u32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]);
        let rdlen = usize::from(u16::from_be_bytes([fixed[8], fixed[9]]));
        let rdata = name_end + 10;
        let rdata_end = rdata + rdlen;
        if rdata_end > message.len() {
            return Err("RDATA runs past the end");
        }
        if rtype == RType::OPT {
            if index + 1 != total {
                return Err("OPT record is not the last record");
            }
            opt = true;
            end = start;
            break;
        }
        check_rdata_names(message, rtype, rdata, rdata_end, labels)?;
        let owner = lower(message, start)?;
        let target = if rtype == RType::CNAME {
            Some(lower(message, rdata)?)
        } else {
            None
        };
        records.push(Record {
            section,
            owner,
            rtype,
            class,
            ttl,
            target,
            rdata: (rdata, rdata_end),
        });
        pos = rdata_end;
    }
    if !opt && pos != message.len() {
        return Err("trailing bytes");
    }
    let qclass = question.qclass.0;

    // The chain: the query name, then each CNAME target in turn.
    chain.push(qname);
    let chasing = qtype != RType::CNAME && qtype != RType::ANY;
    // Bounded: each round adds a new name to the chain, at most
    // MAX_CNAME_CHAIN + 1 of them.
    for _ in 0..=MAX_CNAME_CHAIN {
        if !chasing {
            break;
        }
        let current = chain[chain.len() - 1];
        let mut targets = records
            .iter()
            .filter(|r| r.section == 0 && r.rtype == RType::CNAME && r.owner == current);
        let Some(next) = targets.next() else { break };
        if targets.next().is_some() {
            return Err("two CNAMEs at one name");
        }
        let target = next.target.ok_or("CNAME without a target")?;
        if chain.contains(&target) {
            return Err("CNAME loop");
        }
        if chain.len() > MAX_CNAME_CHAIN {
            return Err("CNAME chain too long");
        }
        chain.push(target);
    }
    let last = chain[chain.len() - 1];

    let mut min_answer_ttl: Option<u32> = None;
    let mut found = false;
    let mut negative_ttl = None;
    for record in records.iter() {
        ttl_fields.push(record.rdata.0 - 6);
        if record.section == 0 {
            if record.class != qclass {
                return Err("answer record of another class");
            }
            let in_chain = chain.contains(&record.owner);
            let allowed = match record.rtype {
                // Above a chain name, synthesising it; or at a chain name
                // when asked for by type (the answer itself).
                RType::DNAME => chain.iter().any(|name| {
                    name.as_name().ends_with(record.owner.as_name())
                        && (*name != record.owner || qtype == RType::DNAME || qtype == RType::ANY)
                }),
                RType::CNAME | RType::RRSIG => in_chain,
                rtype => in_chain && (rtype == qtype || qtype == RType::ANY),
            };
            if !allowed {
                return Err("answer record outside the question's chain");
            }
            if record.owner == last && (record.rtype == qtype || qtype == RType::ANY) {
                found = true;
            }
            if qtype == RType::CNAME && record.rtype == RType::CNAME {
                found = true;
            }
            let ttl = if record.ttl > i32::MAX as u32 {
                0
            } else {
                record.ttl
            };
            min_answer_ttl = Some(min_answer_ttl.map_or(ttl, |min| min.min(ttl)));
        } else if record.section == 1 && matches!(record.rtype, RType::SOA | RType::NS) {
            if !last.as_name().ends_with(record.owner.as_name()) {
                return Err("authority record not above the question's name");
            }
            if record.rtype == RType::SOA {
                let (start, end) = record.rdata;
                let minimum = soa_minimum(message, start, end)?;
                negative_ttl = Some(record.ttl.min(minimum).min(i32::MAX as u32));
            }
        }
    }
    Ok(Cut {
        end,
        opt,
        min_answer_ttl,
        negative: !found,
        negative_ttl,
    })
}

/// The offsets in a message where a label of an already checked name
/// starts: the only places a compression pointer may land. One bit per
/// octet of the message.
struct LabelStarts(Vec<u64>);

impl LabelStarts {
    /// No label known yet in a message of `message_len` octets. Within
    /// the capacity reserved for the longest message: no allocation.
    fn reset(&mut self, message_len: usize) {
        self.0.clear();
        self.0.resize(message_len / 64 + 1, 0);
    }

    fn mark(&mut self, offset: usize) {
        if let Some(word) = self.0.get_mut(offset / 64) {
            *word |= 1 << (offset % 64);
        }
    }

    fn contains(&self, offset: usize) -> bool {
        self.0
            .get(offset / 64)
            .is_some_and(|word| word & (1 << (offset % 64)) != 0)
    }
}

/// Checks the name at `offset` and marks where its labels start: each
/// pointer points backwards, onto the start of a label of a name checked
/// before (which is never in the header); at most [`MAX_POINTER_HOPS`]
/// pointers. Returns where the name ends at `offset`.
fn check_name(
    message: &[u8],
    offset: usize,
    labels: &mut LabelStarts,
) -> Result<usize, &'static str> {
    let mut pos = offset;
    let mut end = None;
    let mut hops = 0;
    let mut length = 0usize;
    loop {
        let octet = *message.get(pos).ok_or("name runs past the end")?;
        match octet & 0xc0 {
            0xc0 => {
                let low = *message.get(pos + 1).ok_or("name runs past the end")?;
                let target = usize::from(u16::from_be_bytes([octet & 0x3f, low]));
                if target >= pos || !labels.contains(target) {
                    return Err("compression pointer not onto an earlier name's label");
                }
                hops += 1;
                if hops > MAX_POINTER_HOPS {
                    return Err("too many compression pointers");
                }
                end.get_or_insert(pos + 2);
                pos = target;
            }
            0x00 => {
                if end.is_none() {
                    labels.mark(pos);
                }
                let len = usize::from(octet);
                length += 1 + len;
                if length > 255 {
                    return Err("name longer than 255 octets");
                }
                if len == 0 {
                    return Ok(*end.get_or_insert(pos + 1));
                }
                pos += 1 + len;
            }
            _ => return Err("unknown label type"),
        }
    }
}

/// Checks the RDATA of a type with names (`tern_wire::rdata::layout`):
/// its fields end exactly at the RDATA's end, and every name is whole,
/// inside the RDATA, and points (if compressed) only into the question or
/// the records, so that a client's copy, with its own header, reads the
/// same name. The RDATA of other types is copied as it is.
fn check_rdata_names(
    message: &[u8],
    rtype: RType,
    start: usize,
    end: usize,
    labels: &mut LabelStarts,
) -> Result<(), &'static str> {
    let Some(layout) = tern_wire::rdata::layout(rtype) else {
        return Ok(());
    };
    let inside = |field_end: usize| {
        if field_end <= end {
            Ok(field_end)
        } else {
            Err("a field runs past its RDATA")
        }
    };
    let fields_end = tern_wire::rdata::walk(
        layout.fields,
        start,
        end,
        |pos| inside(pos + 1 + usize::from(*message.get(pos).ok_or("RDATA runs past the end")?)),
        |pos| inside(check_name(message, pos, labels)?),
    )?;
    if inside(fields_end)? != end {
        return Err("bytes after the last field of RDATA");
    }
    Ok(())
}

/// The SOA's MINIMUM field (its last four RDATA octets).
fn soa_minimum(message: &[u8], start: usize, end: usize) -> Result<u32, &'static str> {
    if end < start + 22 {
        return Err("malformed SOA");
    }
    let m = &message[end - 4..end];
    Ok(u32::from_be_bytes([m[0], m[1], m[2], m[3]]))
}

/// The (checked) name at `offset`, decompressed and lowercased.
fn lower(message: &[u8], offset: usize) -> Result<NameBuf, &'static str> {
    let name = CompressedName::parse(message, offset).map_err(|_| "malformed name")?;
    let mut buf = name.to_buf();
    buf.make_lowercase();
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer to `name` `qtype` with one answer record of `qtype` owned
    /// by the question's name (a pointer to it) with `rdata`.
    fn answer(name: &[u8], qtype: u16, rdata: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let mut question = name.to_vec();
        question.extend_from_slice(&qtype.to_be_bytes());
        question.extend_from_slice(&[0, 1]);
        let mut message = vec![0, 1, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0];
        message.extend_from_slice(&question);
        message.extend_from_slice(&[0xc0, 12]);
        message.extend_from_slice(&qtype.to_be_bytes());
        message.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
        message.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        message.extend_from_slice(rdata);
        (question, message)
    }

    const NAME: &[u8] = b"\x01q\x07example\x00";

    /// Found by the forward_answer fuzz target: a CNAME whose target ends
    /// in a pointer into its own record's TTL (a zero octet there reads as
    /// the root). The cache rewrites TTLs, so the cached copy's name then
    /// read as garbage. Pointers may land only on the labels of names read
    /// before: into a TTL, RDATA without names, or the middle of a label,
    /// the answer is refused; onto an owner's or an RDATA name's label it
    /// is taken.
    #[test]
    fn pointers_land_only_on_labels_of_earlier_names() {
        const CNAME: u16 = 5;
        const A: u16 = 1;
        let ttl_at = 12 + NAME.len() + 4 + 2 + 4;
        // The TTL 0x2700_012c: its second octet (ttl_at + 1) is zero.
        let with_target = |target: &[u8]| {
            let (question, mut message) = answer(NAME, CNAME, target);
            message[ttl_at..ttl_at + 4].copy_from_slice(&0x2700_012c_u32.to_be_bytes());
            (question, message)
        };
        let into_ttl = [3, b'w', b'e', b'b', 0xc0, ttl_at as u8 + 1];
        let (question, message) = with_target(&into_ttl);
        assert!(
            CompressedName::parse(&message, message.len() - 6).is_ok(),
            "a valid name"
        );
        assert!(matches!(
            validate(&question, &message, 300),
            Verdict::Bad(_)
        ));

        // Into the middle of the question's label "example".
        let mid_label = [0xc0, 12 + 3];
        let (question, message) = with_target(&mid_label);
        assert!(matches!(
            validate(&question, &message, 300),
            Verdict::Bad(_)
        ));

        // Onto the question's second label ("example."), and then an A
        // record whose owner points at the start of the CNAME target's
        // first label: both taken.
        let (question, mut message) = with_target(&[3, b'w', b'e', b'b', 0xc0, 12 + 2]);
        assert!(matches!(validate(&question, &message, 300), Verdict::Good));
        let target_at = message.len() - 6;
        message[7] = 2; // ANCOUNT
        message.extend_from_slice(&[0xc0, target_at as u8]);
        message.extend_from_slice(&A.to_be_bytes());
        message.extend_from_slice(&[0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]);
        // A question for A, so that the chain's end is the answer.
        let mut question_a = question.clone();
        let type_at = question_a.len() - 4;
        question_a[type_at..type_at + 2].copy_from_slice(&A.to_be_bytes());
        let question_in_message = 12 + type_at;
        message[question_in_message..question_in_message + 2].copy_from_slice(&A.to_be_bytes());
        assert!(matches!(
            validate(&question_a, &message, 300),
            Verdict::Good
        ));
        // The same A record pointing one octet further, at "web"'s first
        // letter: refused.
        let last_owner = message.len() - 16 + 1;
        message[last_owner] += 1;
        assert!(matches!(
            validate(&question_a, &message, 300),
            Verdict::Bad(_)
        ));
    }

    /// Every type with names is checked from the one layout table: the
    /// RFC 1035 types that the wire crate compresses (MB, MINFO, ...) and
    /// the others (SRV, NAPTR, RRSIG, SVCB), where the old list knew only
    /// CNAME, NS, PTR, DNAME, MX and SOA.
    #[test]
    fn names_in_rdata_are_checked_for_every_type_with_names() {
        const MB: u16 = 7;
        const MINFO: u16 = 14;
        const SRV: u16 = 33;
        const NAPTR: u16 = 35;
        const HTTPS: u16 = 65;
        let good: [(u16, &[u8]); 5] = [
            (MB, &[0xc0, 12]),
            (MINFO, &[0xc0, 12, 0xc0, 12]),
            (SRV, &[0, 1, 0, 2, 0, 3, 0xc0, 12]),
            (NAPTR, &[0, 1, 0, 2, 1, b'u', 0, 0, 0xc0, 12]),
            (HTTPS, &[0, 1, 0, 0, 1, 0, 1]),
        ];
        for (qtype, rdata) in good {
            let (question, message) = answer(NAME, qtype, rdata);
            assert!(
                matches!(validate(&question, &message, 300), Verdict::Good),
                "type {qtype}"
            );
        }
        let bad: [(u16, &[u8], &str); 7] = [
            // A pointer past the message's end.
            (MB, &[0xc0, 0xff], "MB past the end"),
            // A pointer into the header, which a client's copy replaces.
            (SRV, &[0, 1, 0, 2, 0, 3, 0xc0, 2], "SRV into the header"),
            (
                MINFO,
                &[0xc0, 12, 0xc0, 4],
                "MINFO's second name into the header",
            ),
            // Bytes after the last field, or fields past the RDATA.
            (
                SRV,
                &[0, 1, 0, 2, 0, 3, 0xc0, 12, 0],
                "SRV with a trailing octet",
            ),
            (NAPTR, &[0, 1, 0, 2, 9, b'u'], "NAPTR string past its RDATA"),
            (MB, &[1, b'a'], "MB name without its end"),
            (HTTPS, &[0, 1], "HTTPS without its target"),
        ];
        for (qtype, rdata, what) in bad {
            let (question, message) = answer(NAME, qtype, rdata);
            assert!(
                matches!(validate(&question, &message, 300), Verdict::Bad(_)),
                "{what}"
            );
        }
    }
}
