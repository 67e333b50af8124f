//! Field-level conversions from presentation text: numbers, TTLs, names,
//! character-strings, base64, base32hex, hex, IP addresses, time stamps and
//! type bitmaps.
//!
//! Every function takes the raw token bytes (escapes still in place) and
//! either appends wire bytes to an output buffer or returns a value; errors
//! are static messages that the caller locates. Every loop is bounded by the
//! length of its input.

use tern_wire::name::{Name, NameBuf};
use tern_wire::types::RType;

/// The longest character-string (RFC 1035 section 3.3): a one-octet length.
pub(crate) const MAX_CHARACTER_STRING: usize = 255;

//----------- Numbers --------------------------------------------------------

/// A decimal number of at most `max`.
pub(crate) fn parse_number(text: &[u8], max: u64) -> Result<u64, &'static str> {
    if text.is_empty() {
        return Err("empty number");
    }
    let mut value: u64 = 0;
    for &byte in text {
        if !byte.is_ascii_digit() {
            return Err("not a decimal number");
        }
        value = value * 10 + u64::from(byte - b'0');
        if value > max {
            return Err("number out of range");
        }
    }
    Ok(value)
}

/// A decimal 8-bit number.
pub(crate) fn parse_u8(text: &[u8]) -> Result<u8, &'static str> {
    parse_number(text, u64::from(u8::MAX)).map(|value| value as u8)
}

/// A decimal 16-bit number.
pub(crate) fn parse_u16(text: &[u8]) -> Result<u16, &'static str> {
    parse_number(text, u64::from(u16::MAX)).map(|value| value as u16)
}

/// A decimal 32-bit number.
pub(crate) fn parse_u32(text: &[u8]) -> Result<u32, &'static str> {
    parse_number(text, u64::from(u32::MAX)).map(|value| value as u32)
}

/// A TTL: a decimal number of seconds, or a sequence of numbers with units
/// `s`, `m`, `h`, `d`, `w` (any case) as BIND writes them (`1h30m`, `1w2d`).
/// A last number without unit counts seconds. The sum must fit 32 bits.
pub(crate) fn parse_ttl(text: &[u8]) -> Result<u32, &'static str> {
    if text.is_empty() || !text[0].is_ascii_digit() {
        return Err("not a TTL");
    }
    let mut total: u64 = 0;
    let mut current: u64 = 0;
    let mut digits = 0usize;
    for &byte in text {
        if byte.is_ascii_digit() {
            current = current * 10 + u64::from(byte - b'0');
            digits += 1;
            if current > u64::from(u32::MAX) {
                return Err("TTL out of range");
            }
            continue;
        }
        let unit: u64 = match byte.to_ascii_lowercase() {
            b's' => 1,
            b'm' => 60,
            b'h' => 3600,
            b'd' => 86_400,
            b'w' => 604_800,
            _ => return Err("bad TTL unit (use s, m, h, d or w)"),
        };
        if digits == 0 {
            return Err("TTL unit without a number");
        }
        total += current * unit;
        if total > u64::from(u32::MAX) {
            return Err("TTL out of range");
        }
        current = 0;
        digits = 0;
    }
    total += current;
    u32::try_from(total).map_err(|_| "TTL out of range")
}

//----------- Names ----------------------------------------------------------

/// How names are read: the origin that completes relative names, and which
/// octets may appear unescaped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NameRules<'o> {
    /// The origin (`@`, and the suffix of relative names).
    pub(crate) origin: Name<'o>,
    /// Accept any printable ASCII except `"` unescaped (BIND's and NSD's
    /// reading) instead of Knot's set.
    pub(crate) lenient: bool,
}

/// Whether `byte` may appear unescaped in a name. The strict set is Knot's:
/// letters, digits, `-`, `_`, `/` and `*`; everything else must be escaped.
fn is_name_byte(byte: u8, lenient: bool) -> bool {
    if lenient {
        return (0x21..=0x7e).contains(&byte) && byte != b'"';
    }
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'/' | b'*')
}

/// A domain name in presentation format, relative names completed with the
/// origin, `@` meaning the origin. Case is kept.
pub(crate) fn parse_name(text: &[u8], rules: NameRules<'_>) -> Result<NameBuf, &'static str> {
    if text == b"@" {
        return Ok(rules.origin.to_buf());
    }
    let mut index = 0;
    while index < text.len() {
        let byte = text[index];
        if byte == b'\\' {
            index += 2;
            continue;
        }
        if byte != b'.' && !is_name_byte(byte, rules.lenient) {
            return Err("invalid character in name (escape it with a backslash)");
        }
        index += 1;
    }
    NameBuf::from_text(text, Some(rules.origin)).map_err(|error| error.what)
}

//----------- Character strings ----------------------------------------------

/// Decodes `\DDD` and `\X` escapes of `text`, appending the octets to `out`.
pub(crate) fn decode_text(text: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let mut index = 0;
    while index < text.len() {
        // Copy the run up to the next backslash in one go.
        let run = text[index..].iter().position(|&byte| byte == b'\\');
        let end = run.map_or(text.len(), |offset| index + offset);
        out.extend_from_slice(&text[index..end]);
        index = end;
        if index == text.len() {
            break;
        }
        let (value, used) =
            tern_wire::name::parse_escape(&text[index + 1..]).map_err(|error| error.what)?;
        out.push(value);
        index += 1 + used;
    }
    Ok(())
}

/// One character-string: a length octet and at most 255 octets.
pub(crate) fn push_character_string(text: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let length_at = out.len();
    out.push(0);
    decode_text(text, out)?;
    let length = out.len() - length_at - 1;
    if length > MAX_CHARACTER_STRING {
        return Err("character-string longer than 255 octets");
    }
    out[length_at] = length as u8;
    Ok(())
}

/// Text that becomes one or more character-strings: longer text is split
/// into strings of 255 octets, as Knot does (BIND and NSD reject it).
pub(crate) fn push_split_text(
    text: &[u8],
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), &'static str> {
    scratch.clear();
    decode_text(text, scratch)?;
    if scratch.is_empty() {
        out.push(0);
        return Ok(());
    }
    for chunk in scratch.chunks(MAX_CHARACTER_STRING) {
        out.push(chunk.len() as u8);
        out.extend_from_slice(chunk);
    }
    Ok(())
}

//----------- Binary encodings -----------------------------------------------
//
// The codecs are `data-encoding`'s; these wrappers append to the caller's
// buffer and give the zone parser's error messages.

/// Decodes `text` with `encoding`, appending to `out` (nothing on error).
fn decode_into(
    encoding: &data_encoding::Encoding,
    text: &[u8],
    out: &mut Vec<u8>,
    error: &'static str,
) -> Result<(), &'static str> {
    let start = out.len();
    let len = encoding.decode_len(text.len()).map_err(|_| error)?;
    out.resize(start + len, 0);
    match encoding.decode_mut(text, &mut out[start..]) {
        Ok(written) => {
            out.truncate(start + written);
            Ok(())
        }
        Err(_) => {
            out.truncate(start);
            Err(error)
        }
    }
}

/// Decodes base64 (RFC 4648 section 4, padding required to a multiple of
/// four digits), appending to `out`.
pub(crate) fn decode_base64(text: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    decode_into(&data_encoding::BASE64, text, out, "invalid base64")
}

/// Decodes hexadecimal digits (even count, any case), appending to `out`.
pub(crate) fn decode_hex(text: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    decode_into(
        &data_encoding::HEXUPPER_PERMISSIVE,
        text,
        out,
        "invalid hexadecimal digits",
    )
}

/// Decodes base32hex without padding (RFC 4648 section 7, as NSEC3 writes
/// hashes, either case), appending to `out`.
pub(crate) fn decode_base32hex(text: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let upper = text.to_ascii_uppercase();
    decode_into(
        &data_encoding::BASE32HEX_NOPAD,
        &upper,
        out,
        "invalid base32hex (no padding allowed)",
    )
}

//----------- Addresses ------------------------------------------------------

/// A dotted-quad IPv4 address (four decimal parts of at most three digits).
pub(crate) fn parse_ipv4(text: &[u8]) -> Result<[u8; 4], &'static str> {
    const BAD: &str = "invalid IPv4 address";
    let mut out = [0u8; 4];
    let mut parts = text.split(|&byte| byte == b'.');
    for slot in &mut out {
        let part = parts.next().ok_or(BAD)?;
        if part.is_empty() || part.len() > 3 {
            return Err(BAD);
        }
        *slot = parse_u8(part).map_err(|_| BAD)?;
    }
    if parts.next().is_some() {
        return Err(BAD);
    }
    Ok(out)
}

/// An IPv6 address in any RFC 4291 text form.
pub(crate) fn parse_ipv6(text: &[u8]) -> Result<[u8; 16], &'static str> {
    let text = core::str::from_utf8(text).map_err(|_| "invalid IPv6 address")?;
    text.parse::<std::net::Ipv6Addr>()
        .map(|address| address.octets())
        .map_err(|_| "invalid IPv6 address")
}

//----------- Time -----------------------------------------------------------

/// An RRSIG time (RFC 4034 section 3.2): `YYYYMMDDHHmmSS` in UTC, or a
/// decimal number of seconds. Dates map to 32-bit serial time (modulo 2^32).
pub(crate) fn parse_time(text: &[u8]) -> Result<u32, &'static str> {
    if text.len() != 14 {
        return parse_u32(text).map_err(|_| "invalid time (use YYYYMMDDHHmmSS)");
    }
    if !text.iter().all(u8::is_ascii_digit) {
        return Err("invalid time (use YYYYMMDDHHmmSS)");
    }
    let number = |range: core::ops::Range<usize>| {
        text[range]
            .iter()
            .fold(0i64, |acc, &digit| acc * 10 + i64::from(digit - b'0'))
    };
    let (year, month, day) = (number(0..4), number(4..6), number(6..8));
    let (hour, minute, second) = (number(8..10), number(10..12), number(12..14));
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => return Err("invalid month in time"),
    };
    if year < 1970 || day < 1 || day > days_in_month || hour > 23 || minute > 59 || second > 59 {
        return Err("invalid date in time");
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    Ok((seconds as u64 & u64::from(u32::MAX)) as u32)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

//----------- Type bitmaps ---------------------------------------------------

/// A record type mnemonic or `TYPEnnn`.
pub(crate) fn parse_type(text: &[u8]) -> Result<RType, &'static str> {
    RType::from_text(text).ok_or("unknown record type")
}

/// Writes the type bitmap (RFC 4034 section 4.1.2) of `types`, which is
/// sorted and deduplicated first.
pub(crate) fn push_type_bitmap(types: &mut Vec<u16>, out: &mut Vec<u8>) {
    types.sort_unstable();
    types.dedup();
    let mut index = 0;
    while index < types.len() {
        let window = types[index] >> 8;
        let mut bitmap = [0u8; 32];
        let mut used = 0;
        while index < types.len() && types[index] >> 8 == window {
            let low = (types[index] & 0xff) as usize;
            bitmap[low / 8] |= 0x80 >> (low % 8);
            used = low / 8 + 1;
            index += 1;
        }
        out.push(window as u8);
        out.push(used as u8);
        out.extend_from_slice(&bitmap[..used]);
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_units() {
        assert_eq!(parse_ttl(b"3600"), Ok(3600));
        assert_eq!(parse_ttl(b"1h30m"), Ok(5400));
        assert_eq!(parse_ttl(b"1W2d"), Ok(777_600));
        assert_eq!(parse_ttl(b"1h30"), Ok(3630));
        assert_eq!(parse_ttl(b"4294967295"), Ok(u32::MAX));
        assert!(parse_ttl(b"4294967296").is_err());
        assert!(parse_ttl(b"7102w").is_err(), "overflow through units");
        assert!(parse_ttl(b"1x").is_err());
        assert!(parse_ttl(b"h").is_err());
        assert!(parse_ttl(b"1hh").is_err());
    }

    #[test]
    fn encodings() {
        let mut out = Vec::new();
        decode_base64(b"Zm9vYg==", &mut out).unwrap();
        assert_eq!(out, b"foob");
        assert!(decode_base64(b"W", &mut out).is_err());
        out.clear();
        decode_hex(b"0aFF", &mut out).unwrap();
        assert_eq!(out, [0x0a, 0xff]);
        out.clear();
        decode_base32hex(b"CPNMUOJ1", &mut out).unwrap();
        assert_eq!(out, b"fooba");
        assert!(decode_base32hex(b"CPNMU===", &mut out).is_err());
    }

    #[test]
    fn times() {
        assert_eq!(parse_time(b"19700101000000"), Ok(0));
        assert_eq!(parse_time(b"20380119031408"), Ok(0x8000_0000));
        assert_eq!(parse_time(b"1234"), Ok(1234));
        assert!(parse_time(b"20230231000000").is_err());
    }

    #[test]
    fn bitmap_windows() {
        let mut out = Vec::new();
        push_type_bitmap(&mut vec![1, 15, 46, 47, 1234, 1], &mut out);
        // Window 0: A (bit 1), MX (15), RRSIG (46), NSEC (47); window 4:
        // type 1234 = 4 * 256 + 210, bit 210 is octet 26, mask 0x20.
        let mut expected = vec![0, 6, 0x40, 0x01, 0, 0, 0, 0x03, 4, 27];
        expected.extend_from_slice(&[0; 26]);
        expected.push(0x20);
        assert_eq!(out, expected);
    }

    #[test]
    fn names_follow_knot_character_set() {
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let strict = NameRules {
            origin: origin.as_name(),
            lenient: false,
        };
        let lenient = NameRules {
            lenient: true,
            ..strict
        };
        assert_eq!(
            parse_name(b"www", strict).unwrap().to_string(),
            "www.example."
        );
        assert!(parse_name(b"a,b", strict).is_err());
        assert!(parse_name(b"@@", strict).is_err());
        assert_eq!(
            parse_name(b"a\\,b.", strict).unwrap().as_bytes(),
            b"\x03a,b\x00"
        );
        assert_eq!(
            parse_name(b"a,b&c.", lenient).unwrap().as_bytes(),
            b"\x05a,b&c\x00"
        );
        assert!(parse_name(b"a\"b.", lenient).is_err());
    }
}
