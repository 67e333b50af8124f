//! Checks RDATA given in RFC 3597 generic form against its type's shape.
//!
//! RFC 3597 section 5 lets a known type be written as `\# length hex`, but
//! the octets must still be valid RDATA of that type: a TXT needs at least
//! one character-string, an A exactly four octets, and names must be
//! uncompressed (a compression pointer in a generic SOA is rejected, as BIND
//! and NSD do). Bound: one pass over the RDATA.

use tern_wire::name::Name;
use tern_wire::types::RType;

use super::{Custom, Field, Shape};

/// Checks `rdata` against `shape`.
pub(super) fn check(rtype: RType, shape: Shape, rdata: &[u8]) -> Result<(), &'static str> {
    match shape {
        Shape::Fields(fields) => check_fields(fields, rdata),
        Shape::Wire(list) => {
            let (fields, count) = super::presentation(list).ok_or("no presentation")?;
            check_fields(&fields[..count], rdata)
        }
        Shape::Custom(Custom::Svcb) => check_svcb(rdata),
        Shape::Custom(Custom::Hip) => check_hip(rdata),
        Shape::Custom(Custom::Loc) => match rdata.first() {
            Some(0) if rdata.len() == 16 => Ok(()),
            Some(0) => Err("LOC version 0 RDATA is 16 octets"),
            _ => Ok(()),
        },
        Shape::Custom(Custom::Apl | Custom::Ipseckey) => {
            let _ = rtype;
            Ok(())
        }
    }
}

/// A cursor over RDATA.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], &'static str> {
        if self.rest.len() < count {
            return Err("RDATA too short");
        }
        let (head, tail) = self.rest.split_at(count);
        self.rest = tail;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, &'static str> {
        Ok(self.take(1)?[0])
    }

    fn name(&mut self) -> Result<(), &'static str> {
        let (_, used) = Name::parse_prefix(self.rest).map_err(|error| error.what)?;
        self.rest = &self.rest[used..];
        Ok(())
    }

    fn character_string(&mut self) -> Result<(), &'static str> {
        let length = self.byte()? as usize;
        self.take(length).map(|_| ())
    }
}

fn check_fields(fields: &[Field], rdata: &[u8]) -> Result<(), &'static str> {
    let mut cursor = Cursor { rest: rdata };
    for &field in fields {
        match field {
            Field::U8 | Field::Algorithm => cursor.take(1).map(|_| ())?,
            Field::U16 | Field::CertType | Field::Type => cursor.take(2).map(|_| ())?,
            Field::U32 | Field::Period | Field::Time | Field::Ipv4 => cursor.take(4).map(|_| ())?,
            Field::Ipv6 => cursor.take(16).map(|_| ())?,
            Field::Hex64 | Field::Eui64 => cursor.take(8).map(|_| ())?,
            Field::Eui48 => cursor.take(6).map(|_| ())?,
            Field::Name => cursor.name()?,
            Field::Str | Field::Salt => cursor.character_string()?,
            Field::Hash | Field::Tag => {
                if cursor.rest.first() == Some(&0) {
                    return Err("empty length-prefixed field");
                }
                cursor.character_string()?;
            }
            Field::StrOptional => {
                if !cursor.rest.is_empty() {
                    cursor.character_string()?;
                }
            }
            Field::Strs => {
                if cursor.rest.is_empty() {
                    return Err("at least one character-string is required");
                }
                while !cursor.rest.is_empty() {
                    cursor.character_string()?;
                }
            }
            Field::Text => cursor.rest = &[],
            Field::Base64 | Field::Hex => {
                if cursor.rest.is_empty() {
                    return Err("data missing");
                }
                cursor.rest = &[];
            }
            Field::Bitmap => {
                check_bitmap(cursor.rest)?;
                cursor.rest = &[];
            }
        }
    }
    if !cursor.rest.is_empty() {
        return Err("trailing octets");
    }
    Ok(())
}

/// Type bitmap windows: ascending window numbers, lengths 1..=32.
fn check_bitmap(mut rest: &[u8]) -> Result<(), &'static str> {
    let mut previous: Option<u8> = None;
    while !rest.is_empty() {
        if rest.len() < 2 {
            return Err("truncated type bitmap");
        }
        let (window, length) = (rest[0], rest[1] as usize);
        if previous.is_some_and(|previous| window <= previous) || length == 0 || length > 32 {
            return Err("malformed type bitmap");
        }
        if rest.len() < 2 + length {
            return Err("truncated type bitmap");
        }
        previous = Some(window);
        rest = &rest[2 + length..];
    }
    Ok(())
}

/// SVCB/HTTPS: priority, target, then parameters in strictly increasing key
/// order, each fitting the RDATA.
fn check_svcb(rdata: &[u8]) -> Result<(), &'static str> {
    let mut cursor = Cursor { rest: rdata };
    cursor.take(2)?;
    cursor.name()?;
    let mut previous: Option<u16> = None;
    while !cursor.rest.is_empty() {
        let key = cursor.take(2)?;
        let key = u16::from_be_bytes([key[0], key[1]]);
        if previous.is_some_and(|previous| key <= previous) {
            return Err("SvcParamKeys out of order or repeated");
        }
        previous = Some(key);
        let length = cursor.take(2)?;
        cursor.take(usize::from(u16::from_be_bytes([length[0], length[1]])))?;
    }
    Ok(())
}

/// HIP: HIT length, algorithm, public key length, HIT, key, names.
fn check_hip(rdata: &[u8]) -> Result<(), &'static str> {
    let mut cursor = Cursor { rest: rdata };
    let hit_length = cursor.byte()? as usize;
    cursor.take(1)?;
    let key_length = cursor.take(2)?;
    cursor.take(hit_length)?;
    cursor.take(usize::from(u16::from_be_bytes([
        key_length[0],
        key_length[1],
    ])))?;
    while !cursor.rest.is_empty() {
        cursor.name()?;
    }
    Ok(())
}
