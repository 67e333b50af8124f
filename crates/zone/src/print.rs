//! Wire RDATA back to presentation format, for `tern dump`.
//!
//! The text follows what BIND 9.18 prints with `named-checkzone -D -o -`, so
//! that a dump can be compared with it line by line:
//!
//! - names are absolute, in the case they were written, with RFC 1035
//!   escapes (`\.`, `\"`, `\DDD` for non-printable octets);
//! - character strings are always quoted; `"` and `\` are escaped with a
//!   backslash and octets outside 0x20..=0x7e are written as `\DDD`;
//! - hex is upper case and base64 is unwrapped, both split into chunks of
//!   [`CHUNK_CHARS`] characters separated by a space (BIND's 60-column RDATA
//!   width less two, rounded down to a multiple of four);
//! - LOC, APL, AAAA, SVCB and the DNSSEC types use BIND's formats (the
//!   unit tests below quote BIND's own output for each).
//!
//! RDATA that does not parse as its type (short, long, a compression
//! pointer in a name, a bad bitmap, an empty field that the text form
//! cannot express) and types without a formatter here are written in the
//! RFC 3597 generic form `\# LEN HEX`. (Scanners check generic data of a
//! known type against the type, so malformed RDATA of a known type does not
//! read back; the scanner never produces such RDATA.) The
//! printer never panics: every read is bounds-checked and every loop is
//! bounded by the RDATA length (at most 65535 octets).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Write as _;

use tern_wire::name::Name;
use tern_wire::rdata::Field as WireField;
use tern_wire::types::RType;

use crate::Record;

/// Characters of hex or base64 per space-separated chunk, as BIND prints them.
pub const CHUNK_CHARS: usize = 56;

//----------- write_zone -----------------------------------------------------

/// Writes a zone in canonical one-record-per-line form, in the order BIND's
/// `named-checkzone -D` uses:
///
/// - owners in canonical DNS name order (RFC 4034 section 6.1);
/// - at one owner SOA first, then NS, then the other types by number, each
///   RRSIG right after the type it covers (BIND `masterdump.c` `dump_order`);
/// - records of one RRset in canonical RDATA order, duplicates (equal once
///   names are lowercased, RFC 4034 section 6.2) written once.
///
/// As BIND does, an RRset is written with the owner spelling of its first
/// record in `records` and with the TTL BIND loads it with when its
/// records disagree ([`crate::ttl`]: the first record's of the group read
/// last), which is also the TTL tern serves. `records` must be in file
/// order.
pub fn write_zone(records: &[Record], out: &mut String) {
    let ttls = crate::ttl::RrsetTtls::of(records);
    let canonical: Vec<Cow<'_, [u8]>> = records
        .iter()
        .map(|record| canonical_rdata(record.rtype, &record.rdata))
        .collect();
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by(|&a, &b| {
        compare_rrset(&records[a], &records[b])
            .then_with(|| canonical[a].cmp(&canonical[b]))
            .then(a.cmp(&b))
    });
    let mut start = 0;
    while start < order.len() {
        let first = &records[order[start]];
        let mut end = start + 1;
        while end < order.len() && compare_rrset(first, &records[order[end]]) == Ordering::Equal {
            end += 1;
        }
        let group = &order[start..end];
        let spelling = group
            .iter()
            .copied()
            .min()
            .map_or(first, |index| &records[index]);
        let ttl = ttls.served(order[start], first.ttl);
        let mut previous: Option<usize> = None;
        for &index in group {
            if previous.is_some_and(|previous| canonical[previous] == canonical[index]) {
                continue;
            }
            previous = Some(index);
            let record = &records[index];
            write_line(spelling.owner.as_name(), ttl, record, out);
        }
        start = end;
    }
}

/// Orders records by owner (canonical order) and then by BIND's dump order
/// of types; records of one RRset compare equal.
fn compare_rrset(left: &Record, right: &Record) -> Ordering {
    left.owner
        .as_name()
        .canonical_cmp(right.owner.as_name())
        .then_with(|| dump_order(left).cmp(&dump_order(right)))
        .then_with(|| left.class.cmp(&right.class))
}

/// BIND's `dump_order`: SOA, NS, then by type number, with each RRSIG
/// (keyed by the type it covers) right after the covered type.
fn dump_order(record: &Record) -> u32 {
    let (rtype, signature) = if record.rtype == RType::RRSIG {
        (covered_type(&record.rdata).0, 1)
    } else {
        (record.rtype.0, 0)
    };
    let rank = match RType(rtype) {
        RType::SOA => 0,
        RType::NS => 1,
        other => u32::from(other.0) + 2,
    };
    (rank << 1) | signature
}

pub use crate::ttl::covered_type;

//----------- write_record ---------------------------------------------------

/// Writes one record as `owner<TAB>TTL<TAB>CLASS<TAB>TYPE<TAB>RDATA` and a
/// newline.
pub fn write_record(record: &Record, out: &mut String) {
    write_line(record.owner.as_name(), record.ttl, record, out);
}

fn write_line(owner: Name<'_>, ttl: u32, record: &Record, out: &mut String) {
    let _ = write!(out, "{owner}\t{ttl}\t{}\t{}\t", record.class, record.rtype);
    write_rdata(record.rtype, &record.rdata, out);
    out.push('\n');
}

//----------- write_rdata ----------------------------------------------------

/// Appends the presentation form of `rdata` read as type `rtype`, or the
/// RFC 3597 generic form when the type has no formatter here or the RDATA
/// does not parse as that type.
pub fn write_rdata(rtype: RType, rdata: &[u8], out: &mut String) {
    let start = out.len();
    if write_typed(rtype, rdata, out).is_none() {
        out.truncate(start);
        write_generic(rdata, out);
    }
}

/// Appends the RFC 3597 generic form: `\# LEN HEX` (`\# 0` when empty).
pub fn write_generic(rdata: &[u8], out: &mut String) {
    let _ = write!(out, "\\# {}", rdata.len());
    if !rdata.is_empty() {
        out.push(' ');
        write_hex_chunked(rdata, out);
    }
}

/// The RDATA in canonical form (RFC 4034 section 6.2, RFC 6840 section
/// 5.1): the names of the types listed there (`tern_wire::rdata::layout`)
/// lowercased. Other RDATA, and RDATA that does not parse, is returned as
/// it is.
pub fn canonical_rdata(rtype: RType, rdata: &[u8]) -> Cow<'_, [u8]> {
    if !tern_wire::rdata::layout(rtype).is_some_and(|layout| layout.canonical) {
        return Cow::Borrowed(rdata);
    }
    if !tern_wire::rdata::names(rtype, rdata).any(|(_, name)| has_upper(name.as_bytes())) {
        return Cow::Borrowed(rdata);
    }
    let mut owned = rdata.to_vec();
    for (at, name) in tern_wire::rdata::names(rtype, rdata) {
        owned[at..at + name.as_bytes().len()].make_ascii_lowercase();
    }
    Cow::Owned(owned)
}

fn has_upper(bytes: &[u8]) -> bool {
    bytes.iter().any(u8::is_ascii_uppercase)
}

//----------- Reader ---------------------------------------------------------

/// A bounds-checked cursor over RDATA; every read returns `None` past the end.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        if len > self.bytes.len() {
            return None;
        }
        let (head, tail) = self.bytes.split_at(len);
        self.bytes = tail;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|bytes| bytes[0])
    }

    fn u16(&mut self) -> Option<u16> {
        self.take(2)
            .map(|bytes| u16::from_be_bytes([bytes[0], bytes[1]]))
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|bytes| u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    fn name(&mut self) -> Option<Name<'a>> {
        let (name, used) = Name::parse_prefix(self.bytes).ok()?;
        self.bytes = &self.bytes[used..];
        Some(name)
    }

    fn char_string(&mut self) -> Option<&'a [u8]> {
        let len = self.u8()?;
        self.take(usize::from(len))
    }

    fn rest(&mut self) -> &'a [u8] {
        core::mem::take(&mut self.bytes)
    }

    fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// `Some(())` when every octet was read: trailing data makes the RDATA
    /// malformed.
    fn finish(&self) -> Option<()> {
        self.is_empty().then_some(())
    }
}

//----------- Per-type formatters --------------------------------------------

/// Writes `rdata` as `rtype`; `None` (with partial output that the caller
/// discards) when the type has no formatter or the RDATA does not parse.
fn write_typed(rtype: RType, rdata: &[u8], out: &mut String) -> Option<()> {
    let mut reader = Reader::new(rdata);
    let r = &mut reader;
    match rtype {
        RType::A => write_ipv4(r.take(4)?, out),
        RType::AAAA => write_ipv6(r.take(16)?, out),
        RType::TXT | RType::SPF | RType::AVC => write_strings(r, 1, usize::MAX, out)?,
        RType::HINFO => write_strings(r, 2, 2, out)?,
        RType::ISDN => write_strings(r, 1, 2, out)?,
        RType::X25 => write_strings(r, 1, 1, out)?,
        RType::GPOS => write_strings(r, 3, 3, out)?,
        RType::WKS => write_wks(r, out)?,
        RType::NSAP => {
            let address = r.rest();
            if address.is_empty() {
                return None;
            }
            out.push_str("0x");
            data_encoding::HEXLOWER.encode_append(address, out);
        }
        RType::LOC => write_loc(r, out)?,
        RType::NXT => {
            write_name(r.name()?, out);
            write_nxt_bitmap(r.rest(), out)?;
        }
        RType::A6 => write_a6(r, out)?,
        RType::CERT => {
            let cert_type = r.u16()?;
            match cert_type_mnemonic(cert_type) {
                Some(mnemonic) => out.push_str(mnemonic),
                None => {
                    let _ = write!(out, "{cert_type}");
                }
            }
            let _ = write!(out, " {} ", r.u16()?);
            let algorithm = r.u8()?;
            match algorithm_mnemonic(algorithm) {
                Some(mnemonic) => out.push_str(mnemonic),
                None => {
                    let _ = write!(out, "{algorithm}");
                }
            }
            out.push(' ');
            write_base64_field(r.rest(), out)?;
        }
        RType::APL => write_apl(r, out)?,
        RType::DS | RType::CDS | RType::TA | RType::DLV => {
            let _ = write!(out, "{} {} {} ", r.u16()?, r.u8()?, r.u8()?);
            write_hex_field(r.rest(), out)?;
        }
        RType::SSHFP => {
            let _ = write!(out, "{} {} ", r.u8()?, r.u8()?);
            write_hex_field(r.rest(), out)?;
        }
        RType::IPSECKEY => write_ipseckey(r, out)?,
        RType::SIG | RType::RRSIG => {
            let _ = write!(
                out,
                "{} {} {} {} ",
                RType(r.u16()?),
                r.u8()?,
                r.u8()?,
                r.u32()?
            );
            write_time(r.u32()?, out);
            out.push(' ');
            write_time(r.u32()?, out);
            let _ = write!(out, " {} ", r.u16()?);
            write_name(r.name()?, out);
            out.push(' ');
            write_base64_field(r.rest(), out)?;
        }
        RType::NSEC => {
            write_name(r.name()?, out);
            write_type_bitmap(r.rest(), out)?;
        }
        RType::KEY | RType::DNSKEY | RType::CDNSKEY => {
            let _ = write!(out, "{} {} {} ", r.u16()?, r.u8()?, r.u8()?);
            write_base64_field(r.rest(), out)?;
        }
        RType::DHCID | RType::OPENPGPKEY => write_base64_field(r.rest(), out)?,
        RType::NSEC3 => {
            let _ = write!(out, "{} {} {} ", r.u8()?, r.u8()?, r.u16()?);
            write_salt(r.char_string()?, out);
            out.push(' ');
            let hash = r.char_string()?;
            if hash.is_empty() {
                return None;
            }
            write_base32hex(hash, out);
            write_type_bitmap(r.rest(), out)?;
        }
        RType::NSEC3PARAM => {
            let _ = write!(out, "{} {} {} ", r.u8()?, r.u8()?, r.u16()?);
            write_salt(r.char_string()?, out);
        }
        RType::TLSA | RType::SMIMEA => {
            let _ = write!(out, "{} {} {} ", r.u8()?, r.u8()?, r.u8()?);
            write_hex_field(r.rest(), out)?;
        }
        RType::HIP => write_hip(r, out)?,
        RType::CSYNC => {
            let _ = write!(out, "{} {}", r.u32()?, r.u16()?);
            write_type_bitmap(r.rest(), out)?;
        }
        RType::ZONEMD => {
            let _ = write!(out, "{} {} {} ", r.u32()?, r.u8()?, r.u8()?);
            write_hex_field(r.rest(), out)?;
        }
        RType::SVCB | RType::HTTPS => write_svcb(r, out)?,
        RType::NID | RType::L64 => {
            let _ = write!(out, "{} ", r.u16()?);
            let locator = r.take(8)?;
            for (index, pair) in locator.chunks_exact(2).enumerate() {
                let separator = if index == 0 { "" } else { ":" };
                let _ = write!(
                    out,
                    "{separator}{:x}",
                    u16::from_be_bytes([pair[0], pair[1]])
                );
            }
        }
        RType::L32 => {
            let _ = write!(out, "{} ", r.u16()?);
            write_ipv4(r.take(4)?, out);
        }
        RType::EUI48 | RType::EUI64 => {
            let len = if rtype == RType::EUI48 { 6 } else { 8 };
            for (index, byte) in r.take(len)?.chunks(1).enumerate() {
                if index > 0 {
                    out.push('-');
                }
                data_encoding::HEXLOWER.encode_append(byte, out);
            }
        }
        RType::URI => {
            let _ = write!(out, "{} {} ", r.u16()?, r.u16()?);
            write_quoted(r.rest(), out);
        }
        RType::CAA => {
            let flags = r.u8()?;
            let tag = r.char_string()?;
            if tag.is_empty() || !tag.iter().all(u8::is_ascii_alphanumeric) {
                return None;
            }
            let _ = write!(out, "{flags} ");
            tag.iter().for_each(|&byte| out.push(char::from(byte)));
            out.push(' ');
            write_quoted(r.rest(), out);
        }
        RType::AMTRELAY => write_amtrelay(r, out)?,
        // The types with names whose fields have no presentation of their
        // own (numbers, strings, names): as tern-wire lays them out.
        _ => write_fields(tern_wire::rdata::layout(rtype)?.fields, r, out)?,
    }
    reader.finish()
}

/// Writes fields of a `tern_wire::rdata::Layout`, separated by spaces.
fn write_fields(fields: &[WireField], r: &mut Reader<'_>, out: &mut String) -> Option<()> {
    for (index, field) in fields.iter().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        match field {
            WireField::U8 => {
                let _ = write!(out, "{}", r.u8()?);
            }
            WireField::U16 => {
                let _ = write!(out, "{}", r.u16()?);
            }
            WireField::U32 => {
                let _ = write!(out, "{}", r.u32()?);
            }
            WireField::Text => write_quoted(r.char_string()?, out),
            WireField::Name => write_name(r.name()?, out),
            // Types with a field of their own format are written above.
            WireField::Rest => return None,
        }
    }
    Some(())
}

//----------- Field writers --------------------------------------------------

fn write_name(name: Name<'_>, out: &mut String) {
    let _ = write!(out, "{name}");
}

fn write_ipv4(bytes: &[u8], out: &mut String) {
    let _ = write!(out, "{}.{}.{}.{}", bytes[0], bytes[1], bytes[2], bytes[3]);
}

/// IPv6 text as BIND's `inet_ntop` writes it: the first longest run of two
/// or more zero groups becomes `::`, and `::a.b.c.d` / `::ffff:a.b.c.d` are
/// used for IPv4-compatible and IPv4-mapped addresses.
fn write_ipv6(bytes: &[u8], out: &mut String) {
    let mut groups = [0u16; 8];
    for (group, pair) in groups.iter_mut().zip(bytes.chunks_exact(2)) {
        *group = u16::from_be_bytes([pair[0], pair[1]]);
    }
    let (mut best_start, mut best_len) = (0, 0);
    let mut index = 0;
    while index < 8 {
        if groups[index] == 0 {
            let start = index;
            while index < 8 && groups[index] == 0 {
                index += 1;
            }
            if index - start > best_len {
                (best_start, best_len) = (start, index - start);
            }
        } else {
            index += 1;
        }
    }
    if best_len < 2 {
        best_len = 0;
    }
    let embedded_ipv4 =
        best_start == 0 && (best_len == 6 || (best_len == 5 && groups[5] == 0xffff));
    let mut index = 0;
    while index < 8 {
        if best_len > 0 && index == best_start {
            out.push_str("::");
            index += best_len;
            continue;
        }
        if index > 0 && !(best_len > 0 && index == best_start + best_len) {
            out.push(':');
        }
        if embedded_ipv4 && index == 6 {
            write_ipv4(&bytes[12..16], out);
            return;
        }
        let _ = write!(out, "{:x}", groups[index]);
        index += 1;
    }
}

/// Writes one quoted character string with BIND's escapes.
fn write_quoted(bytes: &[u8], out: &mut String) {
    out.push('"');
    for &byte in bytes {
        write_string_byte(byte, out);
    }
    out.push('"');
}

fn write_string_byte(byte: u8, out: &mut String) {
    match byte {
        b'"' | b'\\' => {
            out.push('\\');
            out.push(char::from(byte));
        }
        0x20..=0x7e => out.push(char::from(byte)),
        _ => {
            let _ = write!(out, "\\{byte:03}");
        }
    }
}

/// Writes between `min` and `max` character strings, space-separated, that
/// must use up the RDATA.
fn write_strings(r: &mut Reader<'_>, min: usize, max: usize, out: &mut String) -> Option<()> {
    let mut count = 0;
    while !r.is_empty() {
        if count == max {
            return None;
        }
        if count > 0 {
            out.push(' ');
        }
        write_quoted(r.char_string()?, out);
        count += 1;
    }
    (count >= min).then_some(())
}

fn write_hex_chunked(bytes: &[u8], out: &mut String) {
    for (index, chunk) in bytes.chunks(CHUNK_CHARS / 2).enumerate() {
        if index > 0 {
            out.push(' ');
        }
        data_encoding::HEXUPPER.encode_append(chunk, out);
    }
}

/// A hex field that the text form requires to be non-empty.
fn write_hex_field(bytes: &[u8], out: &mut String) -> Option<()> {
    if bytes.is_empty() {
        return None;
    }
    write_hex_chunked(bytes, out);
    Some(())
}

/// Standard base64 with padding (RFC 4648 section 4).
fn base64(bytes: &[u8]) -> String {
    data_encoding::BASE64.encode(bytes)
}

/// A base64 field split into [`CHUNK_CHARS`] chunks; must be non-empty.
fn write_base64_field(bytes: &[u8], out: &mut String) -> Option<()> {
    if bytes.is_empty() {
        return None;
    }
    let text = base64(bytes);
    for (index, chunk) in text.as_bytes().chunks(CHUNK_CHARS).enumerate() {
        if index > 0 {
            out.push(' ');
        }
        chunk.iter().for_each(|&byte| out.push(char::from(byte)));
    }
    Some(())
}

/// Base32 with the extended hex alphabet, upper case, no padding (RFC 5155
/// section 3.3).
fn write_base32hex(bytes: &[u8], out: &mut String) {
    data_encoding::BASE32HEX_NOPAD.encode_append(bytes, out);
}

/// An NSEC3 salt: `-` when empty, else upper-case hex in one piece.
fn write_salt(salt: &[u8], out: &mut String) {
    if salt.is_empty() {
        out.push('-');
    }
    data_encoding::HEXUPPER.encode_append(salt, out);
}

/// RRSIG times as `YYYYMMDDHHMMSS` (RFC 4034 section 3.2), UTC.
fn write_time(seconds: u32, out: &mut String) {
    let days = i64::from(seconds / 86_400);
    let rest = seconds % 86_400;
    // Days to civil date (Howard Hinnant's algorithm), valid for all u32.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    let _ = write!(
        out,
        "{year:04}{month:02}{day:02}{:02}{:02}{:02}",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    );
}

/// An NSEC/NSEC3/CSYNC type bitmap (RFC 4034 section 4.1.2), each type
/// preceded by a space. Windows must ascend and be 1..=32 octets long.
fn write_type_bitmap(bitmap: &[u8], out: &mut String) -> Option<()> {
    let mut r = Reader::new(bitmap);
    let mut previous_window: Option<u8> = None;
    while !r.is_empty() {
        let window = r.u8()?;
        if previous_window.is_some_and(|previous| window <= previous) {
            return None;
        }
        previous_window = Some(window);
        let len = r.u8()?;
        if !(1..=32).contains(&len) {
            return None;
        }
        for (octet_index, &octet) in r.take(usize::from(len))?.iter().enumerate() {
            for bit in 0..8u16 {
                if octet & (0x80 >> bit) != 0 {
                    let rtype = u16::from(window) * 256 + octet_index as u16 * 8 + bit;
                    let _ = write!(out, " {}", RType(rtype));
                }
            }
        }
    }
    Some(())
}

/// The NXT bitmap (RFC 2535 section 5.2): bit N set means type N present.
fn write_nxt_bitmap(bitmap: &[u8], out: &mut String) -> Option<()> {
    if bitmap.len() > 16 {
        return None;
    }
    for (octet_index, &octet) in bitmap.iter().enumerate() {
        for bit in 0..8u16 {
            if octet & (0x80 >> bit) != 0 {
                let _ = write!(out, " {}", RType(octet_index as u16 * 8 + bit));
            }
        }
    }
    Some(())
}

fn write_wks(r: &mut Reader<'_>, out: &mut String) -> Option<()> {
    write_ipv4(r.take(4)?, out);
    let _ = write!(out, " {}", r.u8()?);
    let bitmap = r.rest();
    if bitmap.len() > 8192 {
        return None;
    }
    for (octet_index, &octet) in bitmap.iter().enumerate() {
        for bit in 0..8usize {
            if octet & (0x80 >> bit) != 0 {
                let _ = write!(out, " {}", octet_index * 8 + bit);
            }
        }
    }
    Some(())
}

/// LOC (RFC 1876) as BIND writes it: degrees, minutes and seconds with
/// milliseconds always present, altitude with centimetres, and sizes in
/// whole metres from an exponent of 2 up, else as `0.NNm`.
fn write_loc(r: &mut Reader<'_>, out: &mut String) -> Option<()> {
    const EQUATOR: u32 = 1 << 31;
    const DEGREE: u32 = 3_600_000;
    const ALTITUDE_BASE: u32 = 10_000_000;
    if r.u8()? != 0 {
        return None;
    }
    let size = r.u8()?;
    let horizontal = r.u8()?;
    let vertical = r.u8()?;
    for precision in [size, horizontal, vertical] {
        if precision >> 4 > 9 || precision & 0x0f > 9 {
            return None;
        }
    }
    let latitude = r.u32()?;
    let longitude = r.u32()?;
    let altitude = r.u32()?;
    if latitude.abs_diff(EQUATOR) > 90 * DEGREE || longitude.abs_diff(EQUATOR) > 180 * DEGREE {
        return None;
    }
    let write_angle = |value: u32, positive: char, negative: char, out: &mut String| {
        let hemisphere = if value >= EQUATOR { positive } else { negative };
        let mut rest = value.abs_diff(EQUATOR);
        let milliseconds = rest % 1000;
        rest /= 1000;
        let seconds = rest % 60;
        rest /= 60;
        let _ = write!(
            out,
            "{} {} {seconds}.{milliseconds:03} {hemisphere}",
            rest / 60,
            rest % 60
        );
    };
    write_angle(latitude, 'N', 'S', out);
    out.push(' ');
    write_angle(longitude, 'E', 'W', out);
    let (sign, centimetres) = if altitude < ALTITUDE_BASE {
        ("-", ALTITUDE_BASE - altitude)
    } else {
        ("", altitude - ALTITUDE_BASE)
    };
    let _ = write!(
        out,
        " {sign}{}.{:02}m",
        centimetres / 100,
        centimetres % 100
    );
    for precision in [size, horizontal, vertical] {
        let mantissa = u64::from(precision >> 4);
        let exponent = u32::from(precision & 0x0f);
        if exponent > 1 {
            let _ = write!(out, " {}m", mantissa * 10u64.pow(exponent - 2));
        } else {
            let _ = write!(out, " 0.{:02}m", mantissa * 10u64.pow(exponent));
        }
    }
    Some(())
}

/// A6 (RFC 2874): prefix length, the address suffix, and the prefix name
/// when the prefix length is not zero.
fn write_a6(r: &mut Reader<'_>, out: &mut String) -> Option<()> {
    let prefix_len = r.u8()?;
    if prefix_len > 128 {
        return None;
    }
    let _ = write!(out, "{prefix_len}");
    let suffix_len = usize::from(128 - prefix_len) / 8 + usize::from((128 - prefix_len) % 8 != 0);
    if suffix_len > 0 {
        let mut address = [0u8; 16];
        address[16 - suffix_len..].copy_from_slice(r.take(suffix_len)?);
        out.push(' ');
        write_ipv6(&address, out);
    }
    if prefix_len > 0 {
        out.push(' ');
        write_name(r.name()?, out);
    }
    Some(())
}

/// APL (RFC 3123): `[!]family:address/prefix` items. BIND prints an empty
/// APL as nothing; that is not readable back everywhere, so empty RDATA
/// falls back to `\# 0`.
fn write_apl(r: &mut Reader<'_>, out: &mut String) -> Option<()> {
    if r.is_empty() {
        return None;
    }
    let mut first = true;
    while !r.is_empty() {
        let family = r.u16()?;
        let prefix = r.u8()?;
        let flags = r.u8()?;
        let afd = r.take(usize::from(flags & 0x7f))?;
        let (max_len, max_prefix) = match family {
            1 => (4, 32),
            2 => (16, 128),
            _ => return None,
        };
        if afd.len() > max_len || prefix > max_prefix || afd.last() == Some(&0) {
            return None;
        }
        if !first {
            out.push(' ');
        }
        first = false;
        let negation = if flags & 0x80 != 0 { "!" } else { "" };
        let _ = write!(out, "{negation}{family}:");
        let mut address = [0u8; 16];
        address[..afd.len()].copy_from_slice(afd);
        if family == 1 {
            write_ipv4(&address[..4], out);
        } else {
            write_ipv6(&address, out);
        }
        let _ = write!(out, "/{prefix}");
    }
    Some(())
}

/// IPSECKEY (RFC 4025): precedence, gateway type, algorithm, gateway and
/// the public key (omitted when empty).
fn write_ipseckey(r: &mut Reader<'_>, out: &mut String) -> Option<()> {
    let precedence = r.u8()?;
    let gateway_type = r.u8()?;
    let algorithm = r.u8()?;
    let _ = write!(out, "{precedence} {gateway_type} {algorithm} ");
    match gateway_type {
        0 => out.push('.'),
        1 => write_ipv4(r.take(4)?, out),
        2 => write_ipv6(r.take(16)?, out),
        3 => write_name(r.name()?, out),
        _ => return None,
    }
    let key = r.rest();
    if !key.is_empty() {
        out.push(' ');
        write_base64_field(key, out)?;
    }
    Some(())
}

/// HIP (RFC 8005): algorithm, HIT in hex, public key in base64 (BIND does
/// not split this one) and the rendezvous servers.
fn write_hip(r: &mut Reader<'_>, out: &mut String) -> Option<()> {
    let hit_len = r.u8()?;
    let algorithm = r.u8()?;
    let key_len = r.u16()?;
    let hit = r.take(usize::from(hit_len))?;
    let key = r.take(usize::from(key_len))?;
    if hit.is_empty() || key.is_empty() {
        return None;
    }
    let _ = write!(out, "{algorithm} ");
    data_encoding::HEXUPPER.encode_append(hit, out);
    out.push(' ');
    out.push_str(&base64(key));
    while !r.is_empty() {
        out.push(' ');
        write_name(r.name()?, out);
    }
    Some(())
}

/// AMTRELAY (RFC 8777): precedence, discovery-optional bit, type, relay.
fn write_amtrelay(r: &mut Reader<'_>, out: &mut String) -> Option<()> {
    let precedence = r.u8()?;
    let flags = r.u8()?;
    let relay_type = flags & 0x7f;
    let _ = write!(out, "{precedence} {} {relay_type} ", flags >> 7);
    match relay_type {
        0 => out.push('.'),
        1 => write_ipv4(r.take(4)?, out),
        2 => write_ipv6(r.take(16)?, out),
        3 => write_name(r.name()?, out),
        _ => return None,
    }
    Some(())
}

//----------- SVCB -----------------------------------------------------------

/// The SvcParamKey names of RFC 9460 section 14.3.2; other keys (including
/// later registrations) are written `keyNNNNN`, as BIND 9.18 does.
fn svc_param_key_name(key: u16) -> Option<&'static str> {
    Some(match key {
        0 => "mandatory",
        1 => "alpn",
        2 => "no-default-alpn",
        3 => "port",
        4 => "ipv4hint",
        5 => "ech",
        6 => "ipv6hint",
        _ => return None,
    })
}

fn write_svc_param_key(key: u16, out: &mut String) {
    match svc_param_key_name(key) {
        Some(name) => out.push_str(name),
        None => {
            let _ = write!(out, "key{key}");
        }
    }
}

/// SVCB and HTTPS (RFC 9460): priority, target, then the parameters in
/// wire order, which must strictly ascend.
fn write_svcb(r: &mut Reader<'_>, out: &mut String) -> Option<()> {
    let _ = write!(out, "{} ", r.u16()?);
    write_name(r.name()?, out);
    let mut previous_key: Option<u16> = None;
    while !r.is_empty() {
        let key = r.u16()?;
        if previous_key.is_some_and(|previous| key <= previous) {
            return None;
        }
        previous_key = Some(key);
        let len = r.u16()?;
        let value = r.take(usize::from(len))?;
        out.push(' ');
        write_svc_param_key(key, out);
        write_svc_param_value(key, value, out)?;
    }
    Some(())
}

fn write_svc_param_value(key: u16, value: &[u8], out: &mut String) -> Option<()> {
    match key {
        0 => {
            if value.is_empty() || !value.len().is_multiple_of(2) {
                return None;
            }
            out.push('=');
            for (index, pair) in value.chunks_exact(2).enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_svc_param_key(u16::from_be_bytes([pair[0], pair[1]]), out);
            }
        }
        1 => {
            let mut r = Reader::new(value);
            if r.is_empty() {
                return None;
            }
            out.push_str("=\"");
            let mut first = true;
            while !r.is_empty() {
                let id = r.char_string()?;
                if id.is_empty() {
                    return None;
                }
                if !first {
                    out.push(',');
                }
                first = false;
                for &byte in id {
                    // Value-list escaping (`\,` and `\\`), then the escaping
                    // of a quoted string on top of it.
                    if byte == b',' || byte == b'\\' {
                        out.push_str("\\\\");
                    }
                    write_string_byte(byte, out);
                }
            }
            out.push('"');
        }
        2 => {
            if !value.is_empty() {
                return None;
            }
        }
        3 => {
            let [high, low] = value else {
                return None;
            };
            let _ = write!(out, "={}", u16::from_be_bytes([*high, *low]));
        }
        4 | 6 => {
            let size = if key == 4 { 4 } else { 16 };
            if value.is_empty() || !value.len().is_multiple_of(size) {
                return None;
            }
            out.push('=');
            for (index, address) in value.chunks_exact(size).enumerate() {
                if index > 0 {
                    out.push(',');
                }
                if size == 4 {
                    write_ipv4(address, out);
                } else {
                    write_ipv6(address, out);
                }
            }
        }
        5 => {
            if value.is_empty() {
                return None;
            }
            out.push('=');
            out.push_str(&base64(value));
        }
        _ => {
            if !value.is_empty() {
                out.push('=');
                write_quoted(value, out);
            }
        }
    }
    Some(())
}

//----------- Mnemonics ------------------------------------------------------

/// CERT types (RFC 4398 section 2.1).
fn cert_type_mnemonic(cert_type: u16) -> Option<&'static str> {
    Some(match cert_type {
        1 => "PKIX",
        2 => "SPKI",
        3 => "PGP",
        4 => "IPKIX",
        5 => "ISPKI",
        6 => "IPGP",
        7 => "ACPKIX",
        8 => "IACPKIX",
        253 => "URI",
        254 => "OID",
        _ => return None,
    })
}

/// DNSSEC algorithm mnemonics as BIND prints them in CERT records.
fn algorithm_mnemonic(algorithm: u8) -> Option<&'static str> {
    Some(match algorithm {
        1 => "RSAMD5",
        2 => "DH",
        3 => "DSA",
        4 => "ECC",
        5 => "RSASHA1",
        6 => "NSEC3DSA",
        7 => "NSEC3RSASHA1",
        8 => "RSASHA256",
        10 => "RSASHA512",
        12 => "ECCGOST",
        13 => "ECDSAP256SHA256",
        14 => "ECDSAP384SHA384",
        15 => "ED25519",
        16 => "ED448",
        252 => "INDIRECT",
        253 => "PRIVATEDNS",
        254 => "PRIVATEOID",
        _ => return None,
    })
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::name::NameBuf;
    use tern_wire::types::RClass;

    use super::*;
    use crate::Location;

    fn text(rtype: RType, rdata: &[u8]) -> String {
        let mut out = String::new();
        write_rdata(rtype, rdata, &mut out);
        out
    }

    fn name(text: &str) -> Vec<u8> {
        NameBuf::from_text(text.as_bytes(), None)
            .unwrap()
            .as_bytes()
            .to_vec()
    }

    fn record(owner: &str, ttl: u32, rtype: RType, rdata: Vec<u8>) -> Record {
        Record {
            owner: NameBuf::from_text(owner.as_bytes(), None).unwrap(),
            class: RClass::IN,
            ttl,
            rtype,
            rdata,
            location: Location::default(),
        }
    }

    #[test]
    fn addresses() {
        assert_eq!(text(RType::A, &[192, 0, 2, 1]), "192.0.2.1");
        // Each expectation is BIND 9.18's output for the same address.
        let cases: &[(&str, [u16; 8])] = &[
            ("::", [0; 8]),
            ("::2", [0, 0, 0, 0, 0, 0, 0, 2]),
            ("::1.2.3.4", [0, 0, 0, 0, 0, 0, 0x0102, 0x0304]),
            ("::1:0:0", [0, 0, 0, 0, 0, 1, 0, 0]),
            ("::ffff:1.2.3.4", [0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304]),
            ("1:0:0:2::3", [1, 0, 0, 2, 0, 0, 0, 3]),
            ("1::2:0:0:3:4", [1, 0, 0, 2, 0, 0, 3, 4]),
            ("1:0:2:3:4:5:6:7", [1, 0, 2, 3, 4, 5, 6, 7]),
            ("2001:db8::", [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0]),
        ];
        for (expected, groups) in cases {
            let bytes: Vec<u8> = groups
                .iter()
                .flat_map(|group| group.to_be_bytes())
                .collect();
            assert_eq!(text(RType::AAAA, &bytes), *expected);
        }
    }

    #[test]
    fn names_are_absolute_and_escaped() {
        let mut rdata = vec![0, 10];
        rdata.extend(name("a\\.b.\\\"c\\000.example."));
        assert_eq!(text(RType::MX, &rdata), "10 a\\.b.\\\"c\\000.example.");
        let mut soa = name("ns.example.");
        soa.extend(name("host.example."));
        for value in [1u32, 2, 3, 4, 5] {
            soa.extend(value.to_be_bytes());
        }
        assert_eq!(
            text(RType::SOA, &soa),
            "ns.example. host.example. 1 2 3 4 5"
        );
    }

    #[test]
    fn character_strings() {
        let rdata = b"\x07a\"b\\c;d\x08tab\there\x02\xc3\xa9\x00";
        assert_eq!(
            text(RType::TXT, rdata),
            "\"a\\\"b\\\\c;d\" \"tab\\009here\" \"\\195\\169\" \"\""
        );
        assert_eq!(
            text(RType::HINFO, b"\x06KLH-10\x03ITS"),
            "\"KLH-10\" \"ITS\""
        );
        // A string running past the end, or no string at all: generic.
        assert_eq!(text(RType::TXT, b"\x05ab"), "\\# 3 056162");
        assert_eq!(text(RType::TXT, b""), "\\# 0");
        assert_eq!(text(RType::HINFO, b"\x01a"), "\\# 2 0161");
    }

    #[test]
    fn naptr_and_srv() {
        let mut rdata = vec![0, 100, 0, 10, 1, b'u', 7];
        rdata.extend(b"sip+E2U");
        rdata.push(31);
        rdata.extend(b"!^.*$!sip:information@tele2.se!");
        rdata.push(0);
        assert_eq!(
            text(RType::NAPTR, &rdata),
            "100 10 \"u\" \"sip+E2U\" \"!^.*$!sip:information@tele2.se!\" ."
        );
        let mut srv = vec![0, 0, 0, 1, 0, 9];
        srv.extend(name("old-slow-box.example."));
        assert_eq!(text(RType::SRV, &srv), "0 1 9 old-slow-box.example.");
    }

    #[test]
    fn generic_form_is_chunked_upper_hex() {
        assert_eq!(text(RType(65534), &[]), "\\# 0");
        assert_eq!(text(RType::NULL, &[0xab, 0xcd, 0xef]), "\\# 3 ABCDEF");
        assert_eq!(text(RType::A, &[1, 2, 3]), "\\# 3 010203");
        let long: Vec<u8> = (0..30).collect();
        let printed = text(RType(1234), &long);
        let hex: Vec<&str> = printed.split(' ').collect();
        assert_eq!(hex[0..2], ["\\#", "30"]);
        assert_eq!(hex[2].len(), CHUNK_CHARS);
        assert_eq!(hex[3], "1C1D");
    }

    #[test]
    fn dnssec_types() {
        // 100 octets 0..=99: BIND splits base64 into 56-character chunks.
        let key: Vec<u8> = (0..100).collect();
        let mut rdata = vec![1, 1, 3, 8];
        rdata.extend(&key);
        assert_eq!(
            text(RType::DNSKEY, &rdata),
            "257 3 8 AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygp \
             KissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJT VFVWV1hZWltcXV5fYGFiYw=="
        );
        let mut cert = vec![0, 1, 0, 2, 8];
        cert.extend(&key[..3]);
        assert_eq!(text(RType::CERT, &cert), "PKIX 2 RSASHA256 AAEC");
        let mut rrsig = vec![0, 1, 8, 1, 0, 0, 1, 44];
        rrsig.extend(2_524_608_000u32.to_be_bytes());
        rrsig.extend(1_569_223_323u32.to_be_bytes());
        rrsig.extend([0, 1]);
        rrsig.extend(name("example."));
        rrsig.extend([0, 0, 0]);
        assert_eq!(
            text(RType::RRSIG, &rrsig),
            "A 8 1 300 20500101000000 20190923072203 1 example. AAAA"
        );
        let mut ds = vec![0xe1, 0xff, 5, 1];
        ds.extend([0xb6; 40]);
        let printed = text(RType::DS, &ds);
        assert!(printed.starts_with("57855 5 1 B6B6"), "{printed}");
        assert_eq!(printed.split(' ').nth(4).map(str::len), Some(24));
        // Digest missing: not expressible as DS text.
        assert_eq!(text(RType::DS, &[0, 1, 5, 1]), "\\# 4 00010501");
    }

    #[test]
    fn nsec_family() {
        let mut nsec = name("a.example.");
        nsec.extend([0, 7, 0x22, 0x01, 0, 0, 0, 0x03, 0x80]);
        nsec.extend([0x04, 0x01, 0x40]);
        assert_eq!(
            text(RType::NSEC, &nsec),
            "a.example. NS SOA MX RRSIG NSEC DNSKEY TYPE1025"
        );
        // Windows out of order: generic.
        let mut bad = name("a.");
        bad.extend([1, 1, 0x40, 0, 1, 0x40]);
        assert!(text(RType::NSEC, &bad).starts_with("\\# "));
        let mut nsec3 = vec![1, 1, 0, 12, 0, 6, 0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe];
        nsec3.extend([0, 1, 0x22]);
        assert_eq!(text(RType::NSEC3, &nsec3), "1 1 12 - RQMRTRUAVO NS SOA");
        assert_eq!(
            text(RType::NSEC3PARAM, &[1, 0, 0, 10, 4, 0xde, 0xad, 0xbe, 0xef]),
            "1 0 10 DEADBEEF"
        );
    }

    #[test]
    fn loc_as_bind_prints_it() {
        let mut rdata = vec![0, 0x12, 0x16, 0x13];
        rdata.extend(2_031_844_648u32.to_be_bytes());
        rdata.extend(2_565_228_648u32.to_be_bytes());
        rdata.extend(10_001_000u32.to_be_bytes());
        assert_eq!(
            text(RType::LOC, &rdata),
            "32 7 19.000 S 116 2 25.000 E 10.00m 1m 10000m 10m"
        );
        // 0.5m, 0m, 1.1m -> BIND: 0.50m 0.00m 1m (1.1m is stored as 1m).
        let mut rdata = vec![0, 0x51, 0x00, 0x12];
        rdata.extend((1u32 << 31).to_be_bytes());
        rdata.extend((1u32 << 31).to_be_bytes());
        rdata.extend(0u32.to_be_bytes());
        assert_eq!(
            text(RType::LOC, &rdata),
            "0 0 0.000 N 0 0 0.000 E -100000.00m 0.50m 0.00m 1m"
        );
        rdata[1] = 0xa0; // mantissa 10: invalid
        assert!(text(RType::LOC, &rdata).starts_with("\\# 16 "));
    }

    #[test]
    fn svcb_parameters() {
        let mut rdata = vec![0, 16];
        rdata.extend(name("foo.example.org."));
        rdata.extend([0, 1, 0, 12, 8]);
        rdata.extend(b"f\\oo,bar");
        rdata.extend([2]);
        rdata.extend(b"h2");
        assert_eq!(
            text(RType::SVCB, &rdata),
            "16 foo.example.org. alpn=\"f\\\\\\\\oo\\\\,bar,h2\""
        );
        let mut rdata = vec![0, 1, 0];
        rdata.extend([0, 0, 0, 4, 0, 1, 0, 4]); // mandatory=alpn,ipv4hint
        rdata.extend([0, 1, 0, 3, 2, b'h', b'2']);
        rdata.extend([0, 2, 0, 0]);
        rdata.extend([0, 3, 0, 2, 1, 187]);
        rdata.extend([0, 4, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8]);
        rdata.extend([0, 5, 0, 3, 1, 2, 3]);
        rdata.extend([
            0, 6, 0, 16, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
        ]);
        rdata.extend([0, 7, 0, 0]);
        rdata.extend([2, 0x9b, 0, 6, b'h', b'e', b'"', 0xd2, b'\\', b',']);
        assert_eq!(
            text(RType::HTTPS, &rdata),
            "1 . mandatory=alpn,ipv4hint alpn=\"h2\" no-default-alpn port=443 \
             ipv4hint=1.2.3.4,5.6.7.8 ech=AQID ipv6hint=2001:db8::1 key7 \
             key667=\"he\\\"\\210\\\\,\""
        );
        // Keys out of order, or a port of the wrong size: generic.
        assert!(text(RType::SVCB, &[0, 1, 0, 0, 3, 0, 2, 0, 1, 0, 1, 0, 0]).starts_with("\\# "));
        assert!(text(RType::SVCB, &[0, 1, 0, 0, 3, 0, 1, 7]).starts_with("\\# "));
    }

    #[test]
    fn small_types() {
        assert_eq!(
            text(RType::EUI48, &[0, 0, 0x5e, 0, 0x53, 0x2a]),
            "00-00-5e-00-53-2a"
        );
        assert_eq!(
            text(
                RType::NID,
                &[0, 10, 0, 0x14, 0x4f, 0xff, 0xff, 0x20, 0xee, 0x64]
            ),
            "10 14:4fff:ff20:ee64"
        );
        assert_eq!(text(RType::L32, &[0, 10, 192, 0, 2, 1]), "10 192.0.2.1");
        let mut caa = vec![0, 5];
        caa.extend(b"issue");
        caa.extend(b"ca.example.net; a=\"1\"");
        assert_eq!(
            text(RType::CAA, &caa),
            "0 issue \"ca.example.net; a=\\\"1\\\"\""
        );
        let mut uri = vec![0, 10, 0, 1];
        uri.extend(b"ftp://ftp1.example.com/public");
        assert_eq!(
            text(RType::URI, &uri),
            "10 1 \"ftp://ftp1.example.com/public\""
        );
        let apl = [0, 1, 4, 1, 224, 0, 2, 8, 1, 0xff, 0, 1, 28, 0x82, 192, 168];
        assert_eq!(
            text(RType::APL, &apl),
            "1:224.0.0.0/4 2:ff00::/8 !1:192.168.0.0/28"
        );
        assert_eq!(text(RType::APL, &[]), "\\# 0");
        assert_eq!(text(RType::SSHFP, &[2, 1, 0x12, 0x34]), "2 1 1234");
        assert_eq!(text(RType::TLSA, &[3, 0, 0, 0x30, 0x82]), "3 0 0 3082");
        assert_eq!(text(RType::NSAP, &[0x47, 0, 5]), "0x470005");
        assert_eq!(
            text(RType::WKS, &[10, 0, 0, 1, 6, 0, 0, 0x40, 0x40]),
            "10.0.0.1 6 17 25"
        );
        let mut ipseckey = vec![10, 3, 2];
        ipseckey.extend(name("gw.example."));
        ipseckey.extend([1, 2, 3]);
        assert_eq!(text(RType::IPSECKEY, &ipseckey), "10 3 2 gw.example. AQID");
        assert_eq!(
            text(RType::AMTRELAY, &[0, 0x81, 203, 0, 113, 15]),
            "0 1 1 203.0.113.15"
        );
        assert_eq!(text(RType::ZONEMD, &[0, 0, 0, 1, 1, 1, 0xab]), "1 1 1 AB");
    }

    /// Printed RDATA reads back to the same wire bytes through the scanner,
    /// for every formatter and for the generic fallback.
    #[test]
    fn printed_rdata_reads_back() {
        let key: Vec<u8> = (0..100).collect();
        let samples: Vec<(RType, Vec<u8>)> = vec![
            (RType::A, vec![192, 0, 2, 1]),
            (
                RType::AAAA,
                [[0u8; 10].as_slice(), &[0xff, 0xff, 1, 2, 3, 4]].concat(),
            ),
            (RType::NS, name("a\\.b.\\\"c\\000.example.")),
            (RType::MX, [vec![0, 10], name("mail.example.")].concat()),
            (
                RType::TXT,
                b"\x07a\"b\\c;d\x08tab\there\x02\xc3\xa9\x00".to_vec(),
            ),
            (RType::SPF, b"\x0bv=spf1 -all".to_vec()),
            (RType::HINFO, b"\x06KLH-10\x03ITS".to_vec()),
            (
                RType::RP,
                [name("mbox.example."), name("txt.example.")].concat(),
            ),
            (RType::AFSDB, [vec![0, 1], name("afs.example.")].concat()),
            (
                RType::SRV,
                [vec![0, 0, 0, 1, 0, 9], name("box.example.")].concat(),
            ),
            (
                RType::NAPTR,
                [
                    vec![0, 100, 0, 10, 1, b'u', 3],
                    b"E2U".to_vec(),
                    vec![4],
                    b"!a!b".to_vec(),
                    name("."),
                ]
                .concat(),
            ),
            (RType::DNAME, name("target.example.")),
            (
                RType::LOC,
                [
                    vec![0, 0x12, 0x16, 0x13],
                    2_031_844_648u32.to_be_bytes().to_vec(),
                    2_565_228_648u32.to_be_bytes().to_vec(),
                    10_001_000u32.to_be_bytes().to_vec(),
                ]
                .concat(),
            ),
            (RType::CERT, [vec![0, 1, 0, 2, 8], key.clone()].concat()),
            (RType::SSHFP, vec![2, 1, 0x12, 0x34, 0x56]),
            (RType::TLSA, [vec![3, 1, 1], key[..40].to_vec()].concat()),
            (RType::SMIMEA, vec![0, 0, 1, 0xd2, 0xab]),
            (RType::OPENPGPKEY, key.clone()),
            (
                RType::CAA,
                [vec![128, 3], b"tbs".to_vec(), b"a\"b\\c \xc3\xa9".to_vec()].concat(),
            ),
            (
                RType::URI,
                [vec![0, 10, 0, 1], b"ftp://a/\"x\"".to_vec()].concat(),
            ),
            (
                RType::DS,
                [vec![0xe1, 0xff, 13, 2], key[..32].to_vec()].concat(),
            ),
            (RType::CDS, vec![0, 0, 0, 0, 0]),
            (RType::DNSKEY, [vec![1, 1, 3, 8], key.clone()].concat()),
            (RType::CDNSKEY, vec![0, 0, 3, 0, 0]),
            (
                RType::RRSIG,
                [
                    vec![0, 1, 8, 1, 0, 0, 1, 44],
                    2_524_608_000u32.to_be_bytes().to_vec(),
                    1_569_223_323u32.to_be_bytes().to_vec(),
                    vec![0, 1],
                    name("example."),
                    key.clone(),
                ]
                .concat(),
            ),
            (
                RType::NSEC,
                [
                    name("a.example."),
                    vec![0, 7, 0x22, 0x01, 0, 0, 0, 0x03, 0x80, 0x04, 0x01, 0x40],
                ]
                .concat(),
            ),
            (
                RType::NSEC3,
                [
                    vec![1, 1, 0, 12, 0, 20],
                    key[..20].to_vec(),
                    vec![0, 1, 0x22],
                ]
                .concat(),
            ),
            (
                RType::NSEC3,
                [
                    vec![1, 0, 0, 10, 4, 0xde, 0xad, 0xbe, 0xef, 6],
                    key[..6].to_vec(),
                ]
                .concat(),
            ),
            (
                RType::NSEC3PARAM,
                vec![1, 0, 0, 10, 4, 0xde, 0xad, 0xbe, 0xef],
            ),
            (
                RType::ZONEMD,
                [vec![0, 0, 0, 1, 1, 1], key[..48].to_vec()].concat(),
            ),
            (
                RType::SVCB,
                [
                    vec![0, 16],
                    name("foo.example.org."),
                    vec![0, 1, 0, 12, 8],
                    b"f\\oo,bar".to_vec(),
                    vec![2, b'h', b'2'],
                ]
                .concat(),
            ),
            (
                RType::HTTPS,
                [
                    vec![0, 1, 0],
                    vec![0, 0, 0, 4, 0, 1, 0, 4],
                    vec![0, 1, 0, 3, 2, b'h', b'2'],
                    vec![0, 2, 0, 0],
                    vec![0, 3, 0, 2, 1, 187],
                    vec![0, 4, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8],
                    vec![0, 5, 0, 3, 1, 2, 3],
                    vec![
                        0, 6, 0, 16, 0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                    ],
                    vec![2, 0x9b, 0, 6, b'h', b'e', b'"', 0xd2, b'\\', b','],
                ]
                .concat(),
            ),
            (RType(65534), vec![0x0a, 0, 0, 1]),
            (RType(65534), vec![]),
            // Malformed RDATA of a known type prints in generic form too, but
            // scanners (this one, BIND's, Knot's) check `\#` data against the
            // type, so it does not read back; the scanner never produces it.
        ];
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let mut failures = Vec::new();
        for (rtype, rdata) in samples {
            let mut line = format!("example. 300 IN {rtype} ");
            write_rdata(rtype, &rdata, &mut line);
            line.push('\n');
            let parsed = crate::parse_bytes(
                line.as_bytes(),
                std::path::Path::new("printed"),
                origin.as_name(),
                &crate::Options::default(),
                &mut crate::NoInclude,
            );
            match parsed {
                Ok(zone) if zone.records.len() == 1 && zone.records[0].rdata == rdata => {}
                Ok(zone) => failures.push(format!("{line} read back as {:?}", zone.records)),
                Err(errors) => failures.push(format!("{line}{errors}")),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn time_conversion() {
        let mut out = String::new();
        write_time(0, &mut out);
        out.push(' ');
        write_time(u32::MAX, &mut out);
        out.push(' ');
        write_time(951_782_400, &mut out); // 2000-02-29
        assert_eq!(out, "19700101000000 21060207062815 20000229000000");
    }

    #[test]
    fn never_panics_on_truncations() {
        let types = [
            RType::A,
            RType::SOA,
            RType::MX,
            RType::TXT,
            RType::LOC,
            RType::NAPTR,
            RType::RRSIG,
            RType::NSEC,
            RType::NSEC3,
            RType::SVCB,
            RType::HTTPS,
            RType::APL,
            RType::HIP,
            RType::IPSECKEY,
            RType::A6,
            RType::WKS,
            RType::CAA,
            RType::CERT,
            RType::AMTRELAY,
        ];
        let sample: Vec<u8> = (0..=255u8).cycle().take(600).collect();
        for rtype in types {
            for len in 0..sample.len() {
                for data in [&sample[..len], &sample[sample.len() - len..]] {
                    let mut out = String::new();
                    write_rdata(rtype, data, &mut out);
                    assert!(!out.is_empty() || data.is_empty());
                }
            }
        }
    }

    #[test]
    fn zone_order_matches_bind() {
        let mut rrsig_a = vec![0, 1];
        rrsig_a.extend([8, 1, 0, 0, 1, 44, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0x01]);
        let records = vec![
            record("example.", 300, RType::TXT, b"\x01x".to_vec()),
            record("example.", 300, RType::A, vec![1, 2, 3, 4]),
            record("example.", 300, RType::NS, name("ns.example.")),
            record("example.", 300, RType::RRSIG, rrsig_a),
            record("example.", 300, RType::SOA, {
                let mut soa = name("ns.example.");
                soa.extend(name("host.example."));
                soa.extend([0; 20]);
                soa
            }),
            record("ns.example.", 300, RType::A, vec![10, 0, 0, 1]),
            record("Ns.example.", 100, RType::A, vec![10, 0, 0, 2]),
            record("nS.example.", 50, RType::A, vec![10, 0, 0, 0]),
            record("b.a.example.", 300, RType::A, vec![1, 1, 1, 1]),
            record(
                "dupl.example.",
                300,
                RType::MX,
                [vec![0, 10], name("Some.Domain.")].concat(),
            ),
            record(
                "DUPL.example.",
                300,
                RType::MX,
                [vec![0, 10], name("some.domain.")].concat(),
            ),
        ];
        let mut out = String::new();
        write_zone(&records, &mut out);
        assert_eq!(
            out,
            "example.\t300\tIN\tSOA\tns.example. host.example. 0 0 0 0 0\n\
             example.\t300\tIN\tNS\tns.example.\n\
             example.\t300\tIN\tA\t1.2.3.4\n\
             example.\t300\tIN\tRRSIG\tA 8 1 300 19700101000001 19700101000000 1 . AAE=\n\
             example.\t300\tIN\tTXT\t\"x\"\n\
             b.a.example.\t300\tIN\tA\t1.1.1.1\n\
             dupl.example.\t300\tIN\tMX\t10 Some.Domain.\n\
             ns.example.\t50\tIN\tA\t10.0.0.0\n\
             ns.example.\t50\tIN\tA\t10.0.0.1\n\
             ns.example.\t50\tIN\tA\t10.0.0.2\n"
        );
    }

    #[test]
    fn canonical_rdata_lowercases_listed_types_only() {
        let mx = [vec![0, 10], name("Some.Domain.")].concat();
        assert_eq!(
            &*canonical_rdata(RType::MX, &mx),
            &[vec![0, 10], name("some.domain.")].concat()[..]
        );
        let txt = b"\x02AB".to_vec();
        assert_eq!(&*canonical_rdata(RType::TXT, &txt), &txt[..]);
        assert_eq!(&*canonical_rdata(RType::MX, &[0]), &[0][..]);
    }
}
