//! Presentation-format RDATA to uncompressed wire RDATA, per type.
//!
//! Most types are a fixed sequence of simple fields (numbers, names,
//! character-strings, addresses, a base64 or hex tail); they are described
//! by a [`Field`] list in [`shape`] and converted by one interpreter, which
//! also checks RDATA given in RFC 3597 generic form (`\# 4 0a000001`)
//! against the same shape. Types with structure of their own (LOC, APL,
//! IPSECKEY, HIP, SVCB/HTTPS) have their own modules.
//!
//! Names inside RDATA are written uncompressed and keep their case.

mod custom;
mod loc;
mod svcb;
pub(crate) mod text;
mod wire;

use tern_wire::rdata::Field as WireField;
use tern_wire::types::RType;

use crate::scan::lexer::{LexError, Lexer, Token};
use text::{
    decode_base32hex, decode_base64, decode_hex, parse_ipv4, parse_ipv6, parse_name, parse_time,
    parse_ttl, parse_type, parse_u16, parse_u32, parse_u8, push_character_string, push_split_text,
    push_type_bitmap, NameRules,
};

/// The largest RDATA (RFC 1035 section 3.2.1: RDLENGTH is 16 bits).
pub const MAX_RDATA_LEN: usize = 65_535;

//----------- RdataError -----------------------------------------------------

/// A problem in one record's RDATA, located.
#[derive(Clone, Debug)]
pub(crate) struct RdataError {
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) message: String,
    /// A structural (tokenizer) error: the file cannot be read further.
    pub(crate) structural: bool,
}

impl RdataError {
    /// An error at a token.
    pub(crate) fn at(token: &Token<'_>, message: impl Into<String>) -> Self {
        RdataError {
            line: token.line,
            col: token.col,
            message: message.into(),
            structural: false,
        }
    }
}

impl From<LexError> for RdataError {
    fn from(error: LexError) -> Self {
        RdataError {
            line: error.line,
            col: error.col,
            message: error.message.to_string(),
            structural: error.fatal,
        }
    }
}

/// Maps a field conversion error to an error located at `token`.
fn located<T>(token: &Token<'_>, result: Result<T, &'static str>) -> Result<T, RdataError> {
    result.map_err(|message| RdataError::at(token, message))
}

//----------- Fields ---------------------------------------------------------

/// The RDATA tokens of one entry, pulled from the lexer on demand.
pub(crate) struct Fields<'l, 'a> {
    lexer: &'l mut Lexer<'a>,
    /// Tokens read ahead and pushed back, the next one last.
    pushed: [Option<Token<'a>>; MAX_PUSHED_BACK],
    pushed_count: usize,
}

/// Tokens of look-ahead the converters need: `\#` and the length after it.
const MAX_PUSHED_BACK: usize = 2;

impl<'l, 'a> Fields<'l, 'a> {
    /// The tokens after the type, starting with `first` if one was read.
    pub(crate) fn new(lexer: &'l mut Lexer<'a>, first: Option<Token<'a>>) -> Self {
        let pushed_count = usize::from(first.is_some());
        Fields {
            lexer,
            pushed: [first, None],
            pushed_count,
        }
    }

    /// The next token, or `None` at the end of the entry.
    pub(crate) fn next(&mut self) -> Result<Option<Token<'a>>, RdataError> {
        if self.pushed_count > 0 {
            self.pushed_count -= 1;
            return Ok(self.pushed[self.pushed_count].take());
        }
        Ok(self.lexer.next_token()?)
    }

    /// Gives back a token taken with [`Fields::next`].
    pub(crate) fn push_back(&mut self, token: Token<'a>) {
        assert!(
            self.pushed_count < MAX_PUSHED_BACK,
            "more look-ahead than MAX_PUSHED_BACK"
        );
        self.pushed[self.pushed_count] = Some(token);
        self.pushed_count += 1;
    }

    /// The next token without consuming it.
    pub(crate) fn peek(&mut self) -> Result<Option<Token<'a>>, RdataError> {
        let token = self.next()?;
        if let Some(token) = token {
            self.push_back(token);
        }
        Ok(token)
    }

    /// The next token, which must exist.
    pub(crate) fn expect(&mut self, what: &str) -> Result<Token<'a>, RdataError> {
        match self.next()? {
            Some(token) => Ok(token),
            None => {
                let (line, col) = self.lexer.end_of_entry();
                Err(RdataError {
                    line,
                    col,
                    message: format!("missing {what}"),
                    structural: false,
                })
            }
        }
    }

    /// Concatenates the text of all remaining tokens into `scratch` (for
    /// base64 and hex, which may be split by blanks). Returns the first
    /// token, for locating errors, or `None` if there was none.
    pub(crate) fn rest(&mut self, scratch: &mut Vec<u8>) -> Result<Option<Token<'a>>, RdataError> {
        scratch.clear();
        let mut first = None;
        while let Some(token) = self.next()? {
            if token.quoted {
                return Err(RdataError::at(
                    &token,
                    "quoted text where encoded data was expected",
                ));
            }
            scratch.extend_from_slice(token.text);
            first.get_or_insert(token);
        }
        Ok(first)
    }

    /// Checks that no token is left.
    pub(crate) fn finish(&mut self) -> Result<(), RdataError> {
        match self.next()? {
            Some(token) => Err(RdataError::at(
                &token,
                format!("unexpected data \"{}\"", token.display()),
            )),
            None => Ok(()),
        }
    }
}

//----------- Field ----------------------------------------------------------

/// One field of a type's presentation and wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    /// 8-bit decimal.
    U8,
    /// 16-bit decimal.
    U16,
    /// 32-bit decimal.
    U32,
    /// 32-bit period in TTL syntax (`1h30m`): SOA timers, original TTL.
    Period,
    /// A domain name.
    Name,
    /// One character-string.
    Str,
    /// An optional last character-string (ISDN subaddress).
    StrOptional,
    /// One or more character-strings, long ones split (TXT, SPF).
    Strs,
    /// Text without a length octet that runs to the end (CAA value, URI target).
    Text,
    /// CAA tag: a length octet and 1..=255 letters and digits.
    Tag,
    /// IPv4 address.
    Ipv4,
    /// IPv6 address.
    Ipv6,
    /// DNSSEC algorithm number or mnemonic.
    Algorithm,
    /// CERT type number or mnemonic.
    CertType,
    /// A record type mnemonic (RRSIG type covered).
    Type,
    /// RRSIG time.
    Time,
    /// Base64 to the end; at least one octet.
    Base64,
    /// Hex to the end; at least one octet.
    Hex,
    /// NSEC/NSEC3/CSYNC type bitmap to the end.
    Bitmap,
    /// NSEC3 salt: `-` or hex, with a length octet.
    Salt,
    /// NSEC3 next hashed owner: base32hex, with a length octet.
    Hash,
    /// 64-bit locator or node id written as four 16-bit hex groups.
    Hex64,
    /// EUI-48, six hex pairs joined by `-`.
    Eui48,
    /// EUI-64, eight hex pairs joined by `-`.
    Eui64,
}

use Field as F;

/// The most fields of a [`Shape::Wire`].
const MAX_WIRE_FIELDS: usize = 9;

/// The presentation fields of a wire layout's fields (`None` for a layout
/// with a field of another format, which has a shape of its own).
fn presentation(list: &[WireField]) -> Option<([Field; MAX_WIRE_FIELDS], usize)> {
    let mut out = [F::U8; MAX_WIRE_FIELDS];
    for (slot, field) in out.iter_mut().zip(list) {
        *slot = match field {
            WireField::U8 => F::U8,
            WireField::U16 => F::U16,
            WireField::U32 => F::U32,
            WireField::Text => F::Str,
            WireField::Name => F::Name,
            WireField::Rest => return None,
        };
    }
    (list.len() <= MAX_WIRE_FIELDS).then_some((out, list.len()))
}

/// How a type's RDATA is written.
#[derive(Clone, Copy)]
enum Shape {
    /// A sequence of simple fields.
    Fields(&'static [Field]),
    /// The fields of its `tern_wire::rdata::layout` (numbers, strings and
    /// names, with no presentation of their own).
    Wire(&'static [WireField]),
    /// A type with its own converter.
    Custom(Custom),
}

/// Types converted by their own code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Custom {
    Apl,
    Hip,
    Ipseckey,
    Loc,
    Svcb,
}

/// The shape of a known type, or `None` for types that can only be written
/// in RFC 3597 generic form.
fn shape(rtype: RType) -> Option<Shape> {
    use Shape::Fields as S;
    Some(match rtype {
        RType::A => S(&[F::Ipv4]),
        RType::SOA => S(&[
            F::Name,
            F::Name,
            F::U32,
            F::Period,
            F::Period,
            F::Period,
            F::Period,
        ]),
        RType::HINFO => S(&[F::Str, F::Str]),
        RType::TXT | RType::SPF | RType::AVC => S(&[F::Strs]),
        RType::X25 => S(&[F::Str]),
        RType::ISDN => S(&[F::Str, F::StrOptional]),
        RType::GPOS => S(&[F::Str, F::Str, F::Str]),
        RType::AAAA => S(&[F::Ipv6]),
        RType::CERT => S(&[F::CertType, F::U16, F::Algorithm, F::Base64]),
        RType::DS | RType::CDS | RType::TA | RType::DLV => {
            S(&[F::U16, F::Algorithm, F::U8, F::Hex])
        }
        RType::SSHFP => S(&[F::U8, F::U8, F::Hex]),
        RType::RRSIG | RType::SIG => S(&[
            F::Type,
            F::Algorithm,
            F::U8,
            F::Period,
            F::Time,
            F::Time,
            F::U16,
            F::Name,
            F::Base64,
        ]),
        RType::NSEC => S(&[F::Name, F::Bitmap]),
        RType::DNSKEY | RType::CDNSKEY | RType::KEY => S(&[F::U16, F::U8, F::Algorithm, F::Base64]),
        RType::DHCID | RType::OPENPGPKEY => S(&[F::Base64]),
        RType::NSEC3 => S(&[F::U8, F::U8, F::U16, F::Salt, F::Hash, F::Bitmap]),
        RType::NSEC3PARAM => S(&[F::U8, F::U8, F::U16, F::Salt]),
        RType::TLSA | RType::SMIMEA => S(&[F::U8, F::U8, F::U8, F::Hex]),
        RType::CSYNC => S(&[F::U32, F::U16, F::Bitmap]),
        RType::ZONEMD => S(&[F::U32, F::U8, F::U8, F::Hex]),
        RType::NID | RType::L64 => S(&[F::U16, F::Hex64]),
        RType::L32 => S(&[F::U16, F::Ipv4]),
        RType::EUI48 => S(&[F::Eui48]),
        RType::EUI64 => S(&[F::Eui64]),
        RType::URI => S(&[F::U16, F::U16, F::Text]),
        RType::CAA => S(&[F::U8, F::Tag, F::Text]),
        RType::LOC => Shape::Custom(Custom::Loc),
        RType::APL => Shape::Custom(Custom::Apl),
        RType::IPSECKEY => Shape::Custom(Custom::Ipseckey),
        RType::HIP => Shape::Custom(Custom::Hip),
        RType::SVCB | RType::HTTPS => Shape::Custom(Custom::Svcb),
        // The other types with names: as tern-wire lays them out.
        _ => {
            let fields = tern_wire::rdata::layout(rtype)?.fields;
            presentation(fields)?;
            Shape::Wire(fields)
        }
    })
}

//----------- parse ----------------------------------------------------------

/// Converts the RDATA of one record (the tokens after the type) to wire
/// form, appending to `out` (which the caller cleared). Handles the RFC 3597
/// generic form for every type, checking it against the type's shape when
/// the type is known. Consumes the whole entry.
pub(crate) fn parse(
    rtype: RType,
    fields: &mut Fields<'_, '_>,
    names: NameRules<'_>,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), RdataError> {
    let first = fields.peek()?;
    if first.is_some_and(|token| token.is_generic_marker()) && generic_follows(rtype, fields)? {
        let marker = fields.next()?.expect("peeked token exists");
        parse_generic(fields, out, scratch)?;
        if let Some(shape) = shape(rtype) {
            wire::check(rtype, shape, out).map_err(|message| {
                RdataError::at(&marker, format!("invalid {rtype} RDATA: {message}"))
            })?;
        }
        return Ok(());
    }
    let Some(first) = first else {
        if rtype == RType::APL {
            return Ok(()); // an empty address prefix list is valid
        }
        let (line, col) = fields.lexer.end_of_entry();
        return Err(RdataError {
            line,
            col,
            message: format!("missing RDATA for {rtype}"),
            structural: false,
        });
    };
    match shape(rtype) {
        None => Err(RdataError::at(
            &first,
            format!("type {rtype} has no text format here; write its RDATA in RFC 3597 form (\\# length hex)"),
        )),
        Some(Shape::Fields(list)) => {
            for &field in list {
                parse_field(field, fields, names, out, scratch)?;
            }
            fields.finish()
        }
        Some(Shape::Wire(list)) => {
            let (list, count) = presentation(list).expect("checked by shape");
            for &field in &list[..count] {
                parse_field(field, fields, names, out, scratch)?;
            }
            fields.finish()
        }
        Some(Shape::Custom(kind)) => {
            match kind {
                Custom::Apl => custom::parse_apl(fields, out)?,
                Custom::Hip => custom::parse_hip(fields, names, out, scratch)?,
                Custom::Ipseckey => custom::parse_ipseckey(fields, names, out, scratch)?,
                Custom::Loc => loc::parse(fields, out)?,
                Custom::Svcb => svcb::parse(fields, names, out, scratch)?,
            }
            fields.finish()
        }
    }
}

/// Whether the `\#` marker at the front starts the generic form. For a
/// type with a text format, `\#` followed by something other than a length
/// is text (`TXT \# text`), as BIND and NSD read it.
fn generic_follows(rtype: RType, fields: &mut Fields<'_, '_>) -> Result<bool, RdataError> {
    if shape(rtype).is_none() {
        return Ok(true);
    }
    let marker = fields.next()?.expect("the caller peeked the marker");
    let length = fields.peek()?;
    fields.push_back(marker);
    Ok(length.is_some_and(|token| !token.quoted && token.text.iter().all(u8::is_ascii_digit)))
}

/// `\# length hex...` (RFC 3597 section 5); the marker is consumed.
fn parse_generic(
    fields: &mut Fields<'_, '_>,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), RdataError> {
    let length_token = fields.expect("RDATA length after \\#")?;
    let length = located(&length_token, parse_u16(length_token.text))?;
    let first = fields.rest(scratch)?;
    let at = first.unwrap_or(length_token);
    located(&at, decode_hex(scratch, out))?;
    if out.len() != usize::from(length) {
        return Err(RdataError::at(
            &length_token,
            format!(
                "RDATA length {length} does not match the {} octets given",
                out.len()
            ),
        ));
    }
    Ok(())
}

/// Converts one field.
fn parse_field(
    field: Field,
    fields: &mut Fields<'_, '_>,
    names: NameRules<'_>,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), RdataError> {
    match field {
        F::Base64 | F::Hex | F::Bitmap | F::Strs => return parse_tail(field, fields, out, scratch),
        F::StrOptional => {
            if let Some(token) = fields.next()? {
                located(&token, push_character_string(token.text, out))?;
            }
            return Ok(());
        }
        _ => {}
    }
    let token = fields.expect(describe(field))?;
    let text = token.text;
    if token.quoted && !matches!(field, F::Str | F::Text) {
        return Err(RdataError::at(
            &token,
            format!("quoted text where {} was expected", describe(field)),
        ));
    }
    let result: Result<(), &'static str> = match field {
        F::U8 => parse_u8(text).map(|value| out.push(value)),
        F::U16 => parse_u16(text).map(|value| out.extend_from_slice(&value.to_be_bytes())),
        F::U32 => parse_u32(text).map(|value| out.extend_from_slice(&value.to_be_bytes())),
        F::Period => parse_ttl(text).map(|value| out.extend_from_slice(&value.to_be_bytes())),
        F::Name => parse_name(text, names).map(|name| out.extend_from_slice(name.as_bytes())),
        F::Str => push_character_string(text, out),
        F::Text => text::decode_text(text, out),
        F::Tag => push_tag(text, out),
        F::Ipv4 => parse_ipv4(text).map(|address| out.extend_from_slice(&address)),
        F::Ipv6 => parse_ipv6(text).map(|address| out.extend_from_slice(&address)),
        F::Algorithm => parse_mnemonic(text, ALGORITHMS).map(|value| out.push(value as u8)),
        F::CertType => parse_mnemonic(text, CERT_TYPES)
            .map(|value| out.extend_from_slice(&value.to_be_bytes())),
        F::Type => parse_type(text).map(|rtype| out.extend_from_slice(&rtype.0.to_be_bytes())),
        F::Time => parse_time(text).map(|value| out.extend_from_slice(&value.to_be_bytes())),
        F::Salt => push_salt(text, out),
        F::Hash => push_hash(text, out),
        F::Hex64 => push_hex64(text, out),
        F::Eui48 => push_eui(text, 6, out),
        F::Eui64 => push_eui(text, 8, out),
        F::Base64 | F::Hex | F::Bitmap | F::Strs | F::StrOptional => unreachable!("handled above"),
    };
    located(&token, result)
}

/// Fields that take all remaining tokens.
fn parse_tail(
    field: Field,
    fields: &mut Fields<'_, '_>,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), RdataError> {
    match field {
        F::Strs => {
            let mut any = false;
            while let Some(token) = fields.next()? {
                located(&token, push_split_text(token.text, out, scratch))?;
                any = true;
            }
            if !any {
                return Err(fields.expect("character-string").unwrap_err());
            }
            Ok(())
        }
        F::Bitmap => {
            let mut types: Vec<u16> = Vec::new();
            while let Some(token) = fields.next()? {
                let rtype = located(&token, parse_type(token.text))?;
                types.push(rtype.0);
            }
            push_type_bitmap(&mut types, out);
            Ok(())
        }
        _ => {
            let Some(first) = fields.rest(scratch)? else {
                return Err(fields.expect(describe(field)).unwrap_err());
            };
            let before = out.len();
            let result = if field == F::Base64 {
                decode_base64(scratch, out)
            } else {
                decode_hex(scratch, out)
            };
            located(&first, result)?;
            if out.len() == before {
                return Err(RdataError::at(&first, format!("empty {}", describe(field))));
            }
            Ok(())
        }
    }
}

/// A human name of a field, for "missing ..." messages.
fn describe(field: Field) -> &'static str {
    match field {
        F::U8 | F::U16 | F::U32 => "number",
        F::Period => "time value",
        F::Name => "domain name",
        F::Str | F::StrOptional | F::Strs | F::Text => "character-string",
        F::Tag => "tag",
        F::Ipv4 => "IPv4 address",
        F::Ipv6 => "IPv6 address",
        F::Algorithm => "algorithm",
        F::CertType => "certificate type",
        F::Type => "record type",
        F::Time => "time stamp",
        F::Base64 => "base64 data",
        F::Hex => "hexadecimal data",
        F::Bitmap => "type list",
        F::Salt => "salt",
        F::Hash => "next hashed owner",
        F::Hex64 => "64-bit hexadecimal value",
        F::Eui48 | F::Eui64 => "EUI address",
    }
}

//----------- Small field converters -----------------------------------------

/// DNSSEC algorithm mnemonics (IANA "DNS Security Algorithm Numbers").
const ALGORITHMS: &[(&str, u16)] = &[
    ("RSAMD5", 1),
    ("DH", 2),
    ("DSA", 3),
    ("RSASHA1", 5),
    ("DSA-NSEC3-SHA1", 6),
    ("RSASHA1-NSEC3-SHA1", 7),
    ("RSASHA256", 8),
    ("RSASHA512", 10),
    ("ECC-GOST", 12),
    ("ECDSAP256SHA256", 13),
    ("ECDSAP384SHA384", 14),
    ("ED25519", 15),
    ("ED448", 16),
    ("INDIRECT", 252),
    ("PRIVATEDNS", 253),
    ("PRIVATEOID", 254),
];

/// CERT type mnemonics (RFC 4398 section 2.1).
const CERT_TYPES: &[(&str, u16)] = &[
    ("PKIX", 1),
    ("SPKI", 2),
    ("PGP", 3),
    ("IPKIX", 4),
    ("ISPKI", 5),
    ("IPGP", 6),
    ("ACPKIX", 7),
    ("IACPKIX", 8),
    ("URI", 253),
    ("OID", 254),
];

/// A number, or a mnemonic from `table` (any case). Algorithms take 8 bits,
/// so the caller truncates only values it already bounded.
fn parse_mnemonic(text: &[u8], table: &[(&str, u16)]) -> Result<u16, &'static str> {
    if text.first().is_some_and(u8::is_ascii_digit) {
        let max = if core::ptr::eq(table, ALGORITHMS) {
            u64::from(u8::MAX)
        } else {
            u64::from(u16::MAX)
        };
        return text::parse_number(text, max).map(|value| value as u16);
    }
    table
        .iter()
        .find(|(name, _)| name.as_bytes().eq_ignore_ascii_case(text))
        .map(|&(_, value)| value)
        .ok_or("unknown mnemonic")
}

/// CAA tag: letters and digits, 1..=255 of them, with a length octet.
fn push_tag(text: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    if text.is_empty() || text.len() > 255 || !text.iter().all(u8::is_ascii_alphanumeric) {
        return Err("CAA tag must be 1 to 255 letters and digits");
    }
    out.push(text.len() as u8);
    out.extend_from_slice(text);
    Ok(())
}

/// NSEC3 salt: `-` for none, else hex; with a length octet.
fn push_salt(text: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let length_at = out.len();
    out.push(0);
    if text != b"-" {
        decode_hex(text, out)?;
    }
    let length = out.len() - length_at - 1;
    out[length_at] = u8::try_from(length).map_err(|_| "salt longer than 255 octets")?;
    Ok(())
}

/// NSEC3 next hashed owner: base32hex, with a length octet.
fn push_hash(text: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let length_at = out.len();
    out.push(0);
    decode_base32hex(text, out)?;
    let length = out.len() - length_at - 1;
    if length == 0 {
        return Err("empty hash");
    }
    out[length_at] = u8::try_from(length).map_err(|_| "hash longer than 255 octets")?;
    Ok(())
}

/// Four groups of one to four hex digits separated by `:` (RFC 6742).
fn push_hex64(text: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
    const BAD: &str = "expected four 16-bit hexadecimal groups (xxxx:xxxx:xxxx:xxxx)";
    let mut count = 0;
    for group in text.split(|&byte| byte == b':') {
        if group.is_empty() || group.len() > 4 || count == 4 {
            return Err(BAD);
        }
        if !group.iter().all(u8::is_ascii_hexdigit) {
            return Err(BAD);
        }
        // Hex digits only (checked), so UTF-8 and at most 0xffff.
        let digits = std::str::from_utf8(group).map_err(|_| BAD)?;
        let value = u16::from_str_radix(digits, 16).map_err(|_| BAD)?;
        out.extend_from_slice(&value.to_be_bytes());
        count += 1;
    }
    if count != 4 {
        return Err(BAD);
    }
    Ok(())
}

/// `count` pairs of hex digits separated by `-` (RFC 7043).
fn push_eui(text: &[u8], count: usize, out: &mut Vec<u8>) -> Result<(), &'static str> {
    const BAD: &str = "expected hexadecimal pairs separated by '-'";
    if text.len() != count * 3 - 1 {
        return Err(BAD);
    }
    for (index, chunk) in text.chunks(3).enumerate() {
        if chunk.len() == 3 && chunk[2] != b'-' {
            return Err(BAD);
        }
        decode_hex(&chunk[..2], out).map_err(|_| BAD)?;
        debug_assert!(index < count);
    }
    Ok(())
}
