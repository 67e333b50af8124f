//! Reading the fields of RDATA that answering needs: embedded names (for
//! compression and additional-section processing) and SOA timers.
//!
//! RDATA here is always uncompressed wire form (as stored in a zone). The
//! functions never panic: RDATA that does not parse as its type yields no
//! names, and is then copied verbatim.

use crate::error::ParseError;
use crate::name::Name;
use crate::parse::CompressedName;
use crate::types::RType;

//----------- Layouts --------------------------------------------------------

/// One field of a type's RDATA in wire form, as far as finding its names
/// needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// One octet.
    U8,
    /// Two octets.
    U16,
    /// Four octets.
    U32,
    /// A `<character-string>`: a length octet and that many octets.
    Text,
    /// A domain name.
    Name,
    /// Whatever is left, of any length (the type's other fields).
    Rest,
}

impl Field {
    /// The octets of a fixed-size field.
    const fn size(self) -> Option<usize> {
        match self {
            Field::U8 => Some(1),
            Field::U16 => Some(2),
            Field::U32 => Some(4),
            _ => None,
        }
    }
}

/// Where a type's embedded names stand, and what may be done to them.
/// The one table of this knowledge: compression (the builder, an upstream
/// answer's checks), canonical form, the zone file's presentation of these
/// types and additional-section targets all read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The RDATA's fields in order; without a final [`Field::Rest`], the
    /// fields are the whole RDATA.
    pub fields: &'static [Field],
    /// Its names may be compressed in messages (RFC 3597 section 4: the
    /// RFC 1035 types).
    pub compressible: bool,
    /// Its names are lowercased in canonical form (RFC 4034 section 6.2 as
    /// amended by RFC 6840 section 5.1).
    pub canonical: bool,
}

/// The layout of a type that holds domain names in its RDATA; `None` for
/// the others (and for types whose names sit behind a variable selector:
/// IPSECKEY, A6, HIP).
pub fn layout(rtype: RType) -> Option<Layout> {
    use Field::{Name as N, Rest, Text, U16, U32, U8};
    const fn both(fields: &'static [Field]) -> Layout {
        Layout {
            fields,
            compressible: true,
            canonical: true,
        }
    }
    const fn canonical(fields: &'static [Field]) -> Layout {
        Layout {
            fields,
            compressible: false,
            canonical: true,
        }
    }
    const fn plain(fields: &'static [Field]) -> Layout {
        Layout {
            fields,
            compressible: false,
            canonical: false,
        }
    }
    Some(match rtype {
        RType::NS
        | RType::MD
        | RType::MF
        | RType::CNAME
        | RType::MB
        | RType::MG
        | RType::MR
        | RType::PTR => both(&[N]),
        RType::SOA => both(&[N, N, U32, U32, U32, U32, U32]),
        RType::MINFO => both(&[N, N]),
        RType::MX => both(&[U16, N]),
        RType::DNAME => canonical(&[N]),
        RType::NXT => canonical(&[N, Rest]),
        RType::RP => canonical(&[N, N]),
        RType::AFSDB | RType::RT | RType::KX => canonical(&[U16, N]),
        RType::PX => canonical(&[U16, N, N]),
        RType::SRV => canonical(&[U16, U16, U16, N]),
        RType::NAPTR => canonical(&[U16, U16, Text, Text, Text, N]),
        RType::SIG | RType::RRSIG => canonical(&[U16, U8, U8, U32, U32, U32, U16, N, Rest]),
        RType::LP => plain(&[U16, N]),
        RType::NSEC => plain(&[N, Rest]),
        RType::SVCB | RType::HTTPS => plain(&[U16, N, Rest]),
        _ => return None,
    })
}

/// The names in `rdata` that may be compressed: those of the RFC 1035 types
/// listed in RFC 3597 section 4 (NS, MD, MF, CNAME, SOA, MB, MG, MR, PTR,
/// MINFO, MX). Yields `(offset in rdata, name)`, in order.
pub fn compressible_names(rtype: RType, rdata: &[u8]) -> NameFields<'_> {
    match layout(rtype) {
        Some(layout) if layout.compressible => NameFields::new(rdata, layout.fields),
        _ => NameFields::new(rdata, &[]),
    }
}

/// Every name in `rdata` of a type with a [`layout`], `(offset, name)` in
/// order; none if the RDATA does not parse as its layout.
pub fn names(rtype: RType, rdata: &[u8]) -> NameFields<'_> {
    NameFields::new(rdata, layout(rtype).map_or(&[], |layout| layout.fields))
}

/// The name whose address records belong in the additional section, and
/// its offset: for NS, MX and SRV (RFC 1035 section 3.3, RFC 2782), and
/// SVCB and HTTPS (RFC 9460 section 4.1).
pub fn additional_target(rtype: RType, rdata: &[u8]) -> Option<(usize, Name<'_>)> {
    match rtype {
        RType::NS | RType::MX | RType::SRV | RType::SVCB | RType::HTTPS => {
            names(rtype, rdata).next()
        }
        _ => None,
    }
}

/// Walks `fields` over a message: `fixed(n)` for a fixed field of `n`
/// octets, `text()` for a `<character-string>`, `name()` for a name, each
/// returning the position after the field; `Rest` ends the walk at `end`.
/// The result is the position after the last field (which must be `end`
/// for well-formed RDATA).
pub fn walk<E>(
    fields: &[Field],
    start: usize,
    end: usize,
    mut text: impl FnMut(usize) -> Result<usize, E>,
    mut name: impl FnMut(usize) -> Result<usize, E>,
) -> Result<usize, E> {
    let mut pos = start;
    for &field in fields {
        pos = match field {
            Field::Rest => return Ok(end),
            Field::Text => text(pos)?,
            Field::Name => name(pos)?,
            fixed => pos + fixed.size().unwrap_or(0),
        };
    }
    Ok(pos)
}

/// Appends to `out` the RDATA at `message[start..end]` in uncompressed wire
/// form: every name of a type with a [`layout`] is read where it stands
/// (following compression pointers into the rest of the message) and
/// written in full; the other fields, and the RDATA of types without
/// names, are copied. Errors, with `out` as it was: a name that does not
/// parse or a field that runs past `end`, or octets left after the last
/// field. Bound: one pass over the fields, each name bounded by
/// [`crate::parse::CompressedName::parse`].
pub fn expand(
    message: &[u8],
    rtype: RType,
    start: usize,
    end: usize,
    out: &mut Vec<u8>,
) -> Result<(), ParseError> {
    let rdata = message
        .get(start..end)
        .ok_or(ParseError::new("RDATA runs past the end"))?;
    let Some(layout) = layout(rtype) else {
        out.extend_from_slice(rdata);
        return Ok(());
    };
    let before = out.len();
    let mut copied = start;
    let inside = |pos: usize| {
        if pos <= end {
            Ok(pos)
        } else {
            Err(ParseError::new("a field runs past its RDATA"))
        }
    };
    let walked = walk(
        layout.fields,
        start,
        end,
        |pos| {
            let len = *message
                .get(pos)
                .ok_or(ParseError::new("RDATA runs past the end"))?;
            inside(pos + 1 + usize::from(len))
        },
        |pos| {
            let name = CompressedName::parse(message, pos)?;
            let name_end = inside(pos + name.wire_len())?;
            out.extend_from_slice(&message[copied..pos]);
            out.extend_from_slice(name.to_buf().as_bytes());
            copied = name_end;
            Ok(name_end)
        },
    )
    .and_then(|pos| match inside(pos)? {
        pos if pos == end => Ok(()),
        _ => Err(ParseError::new("octets after the last field of RDATA")),
    });
    match walked {
        Ok(()) => {
            out.extend_from_slice(&message[copied..end]);
            Ok(())
        }
        Err(err) => {
            out.truncate(before);
            Err(err)
        }
    }
}

/// The single name that makes up the RDATA of CNAME and DNAME.
pub fn single_name(rdata: &[u8]) -> Option<Name<'_>> {
    Name::from_wire(rdata).ok()
}

/// The MINIMUM field of SOA RDATA (RFC 2308: the negative-caching TTL).
pub fn soa_minimum(rdata: &[u8]) -> Option<u32> {
    let (_, mname) = Name::parse_prefix(rdata).ok()?;
    let (_, rname) = Name::parse_prefix(rdata.get(mname..)?).ok()?;
    let timers = rdata.get(mname + rname..)?;
    if timers.len() != 20 {
        return None;
    }
    Some(u32::from_be_bytes([
        timers[16], timers[17], timers[18], timers[19],
    ]))
}

//----------- NameFields -----------------------------------------------------

/// Iterator over the names of RDATA laid out as a [`Layout`]'s fields.
pub struct NameFields<'a> {
    rdata: &'a [u8],
    /// `(offset, length)` of each name, all checked up front.
    found: [(usize, usize); MAX_NAMES],
    count: usize,
    next: usize,
}

/// The most names one layout holds.
const MAX_NAMES: usize = 3;

impl<'a> NameFields<'a> {
    fn new(rdata: &'a [u8], fields: &[Field]) -> Self {
        // Check every field up front, so that the iterator yields all of
        // the names or none.
        let mut found = [(0, 0); MAX_NAMES];
        let mut count = 0;
        let walked = walk(
            fields,
            0,
            rdata.len(),
            |pos| match rdata.get(pos) {
                Some(&len) => Ok(pos + 1 + usize::from(len)),
                None => Err(()),
            },
            |pos| {
                let (_, len) = Name::parse_prefix(rdata.get(pos..).ok_or(())?).map_err(|_| ())?;
                *found.get_mut(count).ok_or(())? = (pos, len);
                count += 1;
                Ok(pos + len)
            },
        );
        let whole = matches!(walked, Ok(end) if end == rdata.len());
        NameFields {
            rdata,
            found,
            count: if whole { count } else { 0 },
            next: 0,
        }
    }
}

impl<'a> Iterator for NameFields<'a> {
    type Item = (usize, Name<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.count {
            return None;
        }
        let (offset, len) = self.found[self.next];
        self.next += 1;
        let name = Name::from_wire(&self.rdata[offset..offset + len]).ok()?;
        Some((offset, name))
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soa_fields() {
        let mut soa = b"\x02ns\x00\x04host\x00".to_vec();
        for v in [1u32, 2, 3, 4, 300] {
            soa.extend_from_slice(&v.to_be_bytes());
        }
        assert_eq!(soa_minimum(&soa), Some(300));
        let names: Vec<_> = compressible_names(RType::SOA, &soa)
            .map(|(o, _)| o)
            .collect();
        assert_eq!(names, [0, 4]);
        assert_eq!(soa_minimum(&soa[..soa.len() - 1]), None);
    }

    #[test]
    fn expand_writes_names_in_full() {
        // A message: 12 octets of header, then "example." at 12, then an
        // MX RDATA at 21: preference 10 and "mail" + pointer to 12.
        let mut message = vec![0u8; 12];
        message.extend_from_slice(b"\x07example\x00");
        let start = message.len();
        message.extend_from_slice(&[0, 10, 4, b'm', b'a', b'i', b'l', 0xc0, 12]);
        let end = message.len();
        let mut out = vec![0xaa];
        expand(&message, RType::MX, start, end, &mut out).unwrap();
        assert_eq!(out, b"\xaa\x00\x0a\x04mail\x07example\x00");
        // A type without names: copied as it is, pointer-like octets too.
        let mut out = Vec::new();
        expand(&message, RType::TXT, start, end, &mut out).unwrap();
        assert_eq!(out, &message[start..end]);
        // A SOA whose timers are cut short, a pointer forward, RDATA past
        // the message: errors, and `out` unchanged.
        let soa_start = message.len();
        message.extend_from_slice(&[0xc0, 12, 0xc0, 12, 0, 0, 0, 1]);
        let soa_end = message.len();
        let mut out = vec![1, 2];
        assert!(expand(&message, RType::SOA, soa_start, soa_end, &mut out).is_err());
        assert!(expand(&message, RType::NS, start + 1, end, &mut out).is_err());
        let forward = message.len();
        message.extend_from_slice(&[0xc0, 0xff]);
        assert!(expand(&message, RType::CNAME, forward, forward + 2, &mut out).is_err());
        assert!(expand(&message, RType::TXT, forward, forward + 9, &mut out).is_err());
        assert_eq!(out, [1, 2]);
    }

    #[test]
    fn malformed_rdata_yields_no_names() {
        assert_eq!(compressible_names(RType::MX, b"\x00").count(), 0);
        assert_eq!(compressible_names(RType::NS, b"\x05ab").count(), 0);
        assert!(additional_target(RType::SRV, b"\x00\x00\x00\x00\x00\x35\x00").is_some());
        assert_eq!(
            additional_target(RType::HTTPS, b"\x00\x01\x00\x00\x01\x00\x01").map(|(at, _)| at),
            Some(2)
        );
        // A name short of its RDATA's end, or fields past it: no names.
        assert_eq!(
            names(RType::SRV, b"\x00\x00\x00\x00\x00\x35\x00\x00").count(),
            0
        );
        assert_eq!(names(RType::NAPTR, b"\x00\x00\x00\x00\x05ab").count(), 0);
        assert!(additional_target(RType::SRV, b"\x00").is_none());
    }
}
