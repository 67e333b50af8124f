//! Reading the fields of RDATA that answering needs: embedded names (for
//! compression and additional-section processing) and SOA timers.
//!
//! RDATA here is always uncompressed wire form (as stored in a zone). The
//! functions never panic: RDATA that does not parse as its type yields no
//! names, and is then copied verbatim.

use crate::name::Name;
use crate::types::RType;

//----------- Compressible names ---------------------------------------------

/// The names in `rdata` that may be compressed: those of the RFC 1035 types
/// listed in RFC 3597 section 4 (NS, MD, MF, CNAME, SOA, MB, MG, MR, PTR,
/// MINFO, MX). Yields `(offset in rdata, name)`, in order.
pub fn compressible_names(rtype: RType, rdata: &[u8]) -> NameFields<'_> {
    NameFields::new(rdata, compressible_layout(rtype))
}

/// Where a type's compressible names are: `names` consecutive names after
/// `skip` octets (none for types not listed in RFC 3597 section 4).
pub(crate) fn compressible_layout(rtype: RType) -> Layout {
    match rtype {
        RType::NS
        | RType::MD
        | RType::MF
        | RType::CNAME
        | RType::MB
        | RType::MG
        | RType::MR
        | RType::PTR => Layout { skip: 0, names: 1 },
        RType::SOA | RType::MINFO => Layout { skip: 0, names: 2 },
        RType::MX => Layout { skip: 2, names: 1 },
        _ => Layout { skip: 0, names: 0 },
    }
}

/// The name whose address records belong in the additional section, for NS,
/// MX and SRV (RFC 1035 section 3.3, RFC 2782).
pub fn additional_target(rtype: RType, rdata: &[u8]) -> Option<Name<'_>> {
    let skip = match rtype {
        RType::NS => 0,
        RType::MX => 2,
        RType::SRV => 6,
        _ => return None,
    };
    Name::parse_prefix(rdata.get(skip..)?)
        .ok()
        .map(|(name, _)| name)
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

/// Where consecutive names stand in a type's RDATA.
#[derive(Clone, Copy)]
pub(crate) struct Layout {
    /// Octets before the first name.
    pub(crate) skip: usize,
    /// How many names follow.
    pub(crate) names: usize,
}

/// Iterator over consecutive names at a fixed position in RDATA.
pub struct NameFields<'a> {
    rdata: &'a [u8],
    pos: usize,
    left: usize,
}

impl<'a> NameFields<'a> {
    fn new(rdata: &'a [u8], layout: Layout) -> Self {
        // Check every name up front, so that the iterator yields all of
        // them or none.
        let mut pos = layout.skip;
        for _ in 0..layout.names {
            match rdata.get(pos..).map(Name::parse_prefix) {
                Some(Ok((_, len))) => pos += len,
                _ => {
                    return NameFields {
                        rdata,
                        pos: 0,
                        left: 0,
                    }
                }
            }
        }
        NameFields {
            rdata,
            pos: layout.skip,
            left: layout.names,
        }
    }
}

impl<'a> Iterator for NameFields<'a> {
    type Item = (usize, Name<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let (name, len) = Name::parse_prefix(&self.rdata[self.pos..]).ok()?;
        let offset = self.pos;
        self.pos += len;
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
    fn malformed_rdata_yields_no_names() {
        assert_eq!(compressible_names(RType::MX, b"\x00").count(), 0);
        assert_eq!(compressible_names(RType::NS, b"\x05ab").count(), 0);
        assert!(additional_target(RType::SRV, b"\x00\x00\x00\x00\x00\x35\x00").is_some());
        assert!(additional_target(RType::SRV, b"\x00").is_none());
    }
}
