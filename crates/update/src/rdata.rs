//! RDATA as updates compare and check it: equality with names compared
//! without case, the SOA serial, and the shape checks a received record
//! must pass.
//!
//! RFC 2136 section 1.1.1 makes two RRs equal when their RDATA is equal,
//! names in it compared as RFC 1035 section 2.3.3 says (without case). The
//! types whose embedded names RFC 4034 section 6.2 lowercases in canonical
//! form are the ones compared so here; every other RDATA is compared octet
//! by octet (RFC 3597 section 6). BIND compares the same way; Knot compares
//! every RDATA octet by octet (docs/decisions/0015-dynamic-update.md).

use tern_wire::name::Name;
use tern_wire::rdata::{layout, names};
use tern_wire::types::RType;

/// The octets of the five SOA timers after its two names.
const SOA_TIMERS_LEN: usize = 20;

//----------- Equality -------------------------------------------------------

/// Whether `a` and `b`, RDATA of type `rtype`, are equal as RFC 2136
/// section 1.1.1 compares them. Bound: one pass over each.
pub fn rdata_equal(rtype: RType, a: &[u8], b: &[u8]) -> bool {
    if a == b {
        return true;
    }
    if a.len() != b.len() || !layout(rtype).is_some_and(|layout| layout.canonical) {
        return false;
    }
    // Same length, different octets: equal only if the differences are
    // case in the embedded names, which stand at the same offsets in both.
    let a_names = names(rtype, a);
    let b_names = names(rtype, b);
    let mut at = 0;
    for ((a_offset, a_name), (b_offset, b_name)) in a_names.zip(b_names) {
        if a_offset != b_offset
            || a[at..a_offset] != b[at..b_offset]
            || !a_name.eq_ignore_case(b_name)
        {
            return false;
        }
        at = a_offset + a_name.len();
    }
    at > 0 && a[at..] == b[at..]
}

//----------- SOA ------------------------------------------------------------

/// The offset of the SERIAL field in SOA RDATA, if the RDATA is a SOA's.
fn serial_offset(rdata: &[u8]) -> Option<usize> {
    let (_, mname) = Name::parse_prefix(rdata).ok()?;
    let (_, rname) = Name::parse_prefix(rdata.get(mname..)?).ok()?;
    let at = mname + rname;
    (rdata.len() == at + SOA_TIMERS_LEN).then_some(at)
}

/// The SERIAL of SOA RDATA; `None` if it is not a SOA's.
pub fn soa_serial(rdata: &[u8]) -> Option<u32> {
    let at = serial_offset(rdata)?;
    let field = rdata.get(at..at + 4)?;
    Some(u32::from_be_bytes([field[0], field[1], field[2], field[3]]))
}

/// Writes `serial` into SOA RDATA; false if it is not a SOA's.
pub fn set_soa_serial(rdata: &mut [u8], serial: u32) -> bool {
    let Some(at) = serial_offset(rdata) else {
        return false;
    };
    rdata[at..at + 4].copy_from_slice(&serial.to_be_bytes());
    true
}

/// Whether serial `a` is higher than `b` in RFC 1982 arithmetic (the
/// undefined case, 2^31 apart, is not higher).
pub fn serial_higher(a: u32, b: u32) -> bool {
    a != b && (a.wrapping_sub(b) as i32) > 0
}

//----------- Shape ----------------------------------------------------------

/// Checks the shape of received RDATA (already expanded, so its names are
/// whole) where a wrong one would be stored and served: the fixed sizes of
/// A and AAAA, the SOA's names and five timers, a CNAME's or DNAME's one
/// name, and TXT's character-strings. Other types are kept as sent, as a
/// secondary keeps what a transfer brings. Bound: one pass.
pub fn check_shape(rtype: RType, rdata: &[u8]) -> Result<(), &'static str> {
    match rtype {
        RType::A if rdata.len() != 4 => Err("A RDATA is 4 octets"),
        RType::AAAA if rdata.len() != 16 => Err("AAAA RDATA is 16 octets"),
        RType::SOA if serial_offset(rdata).is_none() => Err("malformed SOA RDATA"),
        RType::CNAME | RType::DNAME if Name::from_wire(rdata).is_err() => {
            Err("CNAME or DNAME RDATA is one name")
        }
        RType::TXT | RType::SPF => check_strings(rdata),
        _ => Ok(()),
    }
}

/// One or more `<character-string>`s filling `rdata` exactly.
fn check_strings(rdata: &[u8]) -> Result<(), &'static str> {
    if rdata.is_empty() {
        return Err("TXT RDATA holds at least one string");
    }
    let mut at = 0;
    while at < rdata.len() {
        at += 1 + usize::from(rdata[at]);
    }
    if at == rdata.len() {
        Ok(())
    } else {
        Err("a TXT string runs past its RDATA")
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn soa(serial: u32) -> Vec<u8> {
        let mut rdata = b"\x02ns\x00\x0ahostmaster\x00".to_vec();
        for field in [serial, 3600, 900, 604_800, 300] {
            rdata.extend_from_slice(&field.to_be_bytes());
        }
        rdata
    }

    #[test]
    fn names_in_rdata_compare_without_case() {
        assert!(rdata_equal(RType::NS, b"\x02NS\x00", b"\x02ns\x00"));
        assert!(rdata_equal(
            RType::MX,
            b"\x00\x0a\x02MX\x00",
            b"\x00\x0a\x02mx\x00"
        ));
        assert!(!rdata_equal(
            RType::MX,
            b"\x00\x0b\x02MX\x00",
            b"\x00\x0a\x02mx\x00"
        ));
        // TXT and unknown types: octet by octet.
        assert!(!rdata_equal(RType::TXT, b"\x01A", b"\x01a"));
        assert!(!rdata_equal(RType(65280), b"\x02NS\x00", b"\x02ns\x00"));
        // NSEC is not lowercased in canonical form (RFC 6840 section 5.1).
        assert!(!rdata_equal(
            RType::NSEC,
            b"\x01A\x00\x00\x01\x40",
            b"\x01a\x00\x00\x01\x40"
        ));
        // SOA: case in the names, not in the timers.
        let mut upper = soa(7);
        upper[1] = b'N';
        assert!(rdata_equal(RType::SOA, &upper, &soa(7)));
        assert!(!rdata_equal(RType::SOA, &upper, &soa(8)));
        // RDATA that does not parse as its type: octets only.
        assert!(!rdata_equal(RType::NS, b"\x05NS", b"\x05ns"));
    }

    #[test]
    fn serials() {
        let mut rdata = soa(7);
        assert_eq!(soa_serial(&rdata), Some(7));
        assert!(set_soa_serial(&mut rdata, u32::MAX));
        assert_eq!(soa_serial(&rdata), Some(u32::MAX));
        assert_eq!(soa_serial(&rdata[..rdata.len() - 1]), None);
        assert!(serial_higher(0, u32::MAX));
        assert!(serial_higher(8, 7));
        assert!(!serial_higher(7, 7));
        assert!(!serial_higher(7, 8));
        assert!(!serial_higher(1 << 31, 0));
    }

    #[test]
    fn shapes() {
        assert!(check_shape(RType::A, &[192, 0, 2, 1]).is_ok());
        assert!(check_shape(RType::A, &[192, 0, 2]).is_err());
        assert!(check_shape(RType::AAAA, &[0; 15]).is_err());
        assert!(check_shape(RType::SOA, &soa(1)).is_ok());
        assert!(check_shape(RType::SOA, &soa(1)[..30]).is_err());
        assert!(check_shape(RType::CNAME, b"\x01a\x00").is_ok());
        assert!(check_shape(RType::CNAME, b"\x01a\x00\x00").is_err());
        assert!(check_shape(RType::TXT, b"\x02ab\x00").is_ok());
        assert!(check_shape(RType::TXT, b"").is_err());
        assert!(check_shape(RType::TXT, b"\x03ab").is_err());
        assert!(check_shape(RType(65280), b"").is_ok());
    }
}
