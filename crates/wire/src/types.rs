//! Numeric DNS parameters as newtypes over their wire integers.
//!
//! Each type wraps the integer that appears on the wire and names the values
//! this server knows with their RFC mnemonics (`RType::AAAA`, `Rcode::NXDOMAIN`).
//! Unknown values stay representable: a `RType(65534)` is as valid as `RType::A`.

use core::fmt;

//----------- RType ----------------------------------------------------------

/// A resource record type (RFC 1035 section 3.2.2 and the IANA registry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RType(pub u16);

macro_rules! rtypes {
    ($($name:ident = $value:expr),* $(,)?) => {
        #[allow(missing_docs)]
        impl RType {
            $(pub const $name: RType = RType($value);)*

            /// The mnemonic of a known type, or `None`.
            pub const fn mnemonic(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($name)),)*
                    _ => None,
                }
            }

            /// The type named by `text` (a mnemonic, any case, or `TYPEnnn`).
            pub fn from_text(text: &[u8]) -> Option<RType> {
                $(if text.eq_ignore_ascii_case(stringify!($name).as_bytes()) {
                    return Some(RType($value));
                })*
                parse_generic(text, b"TYPE").map(RType)
            }
        }
    };
}

rtypes! {
    A = 1, NS = 2, MD = 3, MF = 4, CNAME = 5, SOA = 6, MB = 7, MG = 8, MR = 9, NULL = 10,
    WKS = 11, PTR = 12, HINFO = 13, MINFO = 14, MX = 15, TXT = 16, RP = 17, AFSDB = 18,
    X25 = 19, ISDN = 20, RT = 21, NSAP = 22, SIG = 24, KEY = 25, PX = 26, GPOS = 27,
    AAAA = 28, LOC = 29, NXT = 30, SRV = 33, NAPTR = 35, KX = 36, CERT = 37, A6 = 38,
    DNAME = 39, OPT = 41, APL = 42, DS = 43, SSHFP = 44, IPSECKEY = 45, RRSIG = 46,
    NSEC = 47, DNSKEY = 48, DHCID = 49, NSEC3 = 50, NSEC3PARAM = 51, TLSA = 52,
    SMIMEA = 53, HIP = 55, CDS = 59, CDNSKEY = 60, OPENPGPKEY = 61, CSYNC = 62,
    ZONEMD = 63, SVCB = 64, HTTPS = 65, SPF = 99, NID = 104, L32 = 105, L64 = 106,
    LP = 107, EUI48 = 108, EUI64 = 109, TKEY = 249, TSIG = 250, IXFR = 251, AXFR = 252,
    MAILB = 253, MAILA = 254, ANY = 255, URI = 256, CAA = 257, AVC = 258, DOA = 259,
    AMTRELAY = 260, TA = 32768, DLV = 32769,
}

impl RType {
    /// Meta and query-only types (RFC 6895 section 3.1): never stored in a zone.
    pub const fn is_meta(self) -> bool {
        matches!(self.0, 41 | 128..=255)
    }
}

impl fmt::Display for RType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.mnemonic() {
            Some(name) => f.write_str(name),
            None => write!(f, "TYPE{}", self.0),
        }
    }
}

//----------- RClass ---------------------------------------------------------

/// A resource record class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RClass(pub u16);

#[allow(missing_docs)]
impl RClass {
    pub const IN: RClass = RClass(1);
    pub const CH: RClass = RClass(3);
    pub const HS: RClass = RClass(4);
    pub const NONE: RClass = RClass(254);
    pub const ANY: RClass = RClass(255);

    /// The class named by `text` (`IN`, `CH`, `HS`, `CLASSnnn`), any case.
    pub fn from_text(text: &[u8]) -> Option<RClass> {
        for (name, class) in [(&b"IN"[..], 1), (b"CH", 3), (b"CS", 2), (b"HS", 4)] {
            if text.eq_ignore_ascii_case(name) {
                return Some(RClass(class));
            }
        }
        parse_generic(text, b"CLASS").map(RClass)
    }
}

impl fmt::Display for RClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            1 => f.write_str("IN"),
            3 => f.write_str("CH"),
            4 => f.write_str("HS"),
            n => write!(f, "CLASS{n}"),
        }
    }
}

/// Parses `PREFIXnnn` (case-insensitive prefix, decimal 0..=65535).
fn parse_generic(text: &[u8], prefix: &[u8]) -> Option<u16> {
    if text.len() <= prefix.len() || !text[..prefix.len()].eq_ignore_ascii_case(prefix) {
        return None;
    }
    let digits = &text[prefix.len()..];
    if digits.len() > 5 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits
        .iter()
        .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'));
    u16::try_from(value).ok()
}

//----------- Opcode ---------------------------------------------------------

/// A message opcode (4 bits of the header).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Opcode(pub u8);

#[allow(missing_docs)]
impl Opcode {
    pub const QUERY: Opcode = Opcode(0);
    pub const IQUERY: Opcode = Opcode(1);
    pub const STATUS: Opcode = Opcode(2);
    pub const NOTIFY: Opcode = Opcode(4);
    pub const UPDATE: Opcode = Opcode(5);
}

//----------- Rcode ----------------------------------------------------------

/// A response code. Values above 15 are extended rcodes whose upper eight
/// bits travel in the OPT record (RFC 6891 section 6.1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rcode(pub u16);

#[allow(missing_docs)]
impl Rcode {
    pub const NOERROR: Rcode = Rcode(0);
    pub const FORMERR: Rcode = Rcode(1);
    pub const SERVFAIL: Rcode = Rcode(2);
    pub const NXDOMAIN: Rcode = Rcode(3);
    pub const NOTIMP: Rcode = Rcode(4);
    pub const REFUSED: Rcode = Rcode(5);
    pub const YXDOMAIN: Rcode = Rcode(6);
    pub const YXRRSET: Rcode = Rcode(7);
    pub const NXRRSET: Rcode = Rcode(8);
    pub const NOTAUTH: Rcode = Rcode(9);
    pub const NOTZONE: Rcode = Rcode(10);
    pub const BADVERS: Rcode = Rcode(16);
    pub const BADCOOKIE: Rcode = Rcode(23);

    /// The low four bits, carried in the header.
    pub const fn header_bits(self) -> u8 {
        (self.0 & 0x0f) as u8
    }

    /// The high eight bits, carried in the OPT record's TTL field.
    pub const fn extended_bits(self) -> u8 {
        (self.0 >> 4) as u8
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtype_text_round_trip() {
        assert_eq!(RType::from_text(b"aaaa"), Some(RType::AAAA));
        assert_eq!(RType::from_text(b"TYPE65534"), Some(RType(65534)));
        assert_eq!(RType::from_text(b"TYPE65536"), None);
        assert_eq!(RType::from_text(b"TYPE"), None);
        assert_eq!(RType(65534).to_string(), "TYPE65534");
        assert_eq!(RType::NSEC3PARAM.to_string(), "NSEC3PARAM");
    }

    #[test]
    fn class_text() {
        assert_eq!(RClass::from_text(b"in"), Some(RClass::IN));
        assert_eq!(RClass::from_text(b"CLASS1"), Some(RClass::IN));
        assert_eq!(RClass::from_text(b"CLASSX"), None);
    }

    #[test]
    fn extended_rcode_split() {
        assert_eq!(Rcode::BADVERS.header_bits(), 0);
        assert_eq!(Rcode::BADVERS.extended_bits(), 1);
    }
}
