//! EDNS(0): the OPT pseudo-record (RFC 6891).
//!
//! The OPT record borrows the CLASS field for the requester's UDP payload
//! size and the TTL field for the extended rcode, version and flags:
//!
//! ```text
//!   owner  type   class(udp size)  ttl: ext-rcode version DO|Z   rdlen  options
//!   00     00 29  04 d0            00       00      80 00        00 00
//! ```

use crate::error::ParseError;

/// The option code of the Name Server Identifier (RFC 5001).
pub const OPTION_NSID: u16 = 3;

/// The option code of DNS cookies (RFC 7873).
pub const OPTION_COOKIE: u16 = 10;

/// The smallest UDP payload size a requester may announce; smaller values
/// are treated as 512 (RFC 6891 section 6.2.3).
pub const MIN_UDP_SIZE: u16 = 512;

//----------- Edns -----------------------------------------------------------

/// The OPT record of a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edns<'a> {
    /// The requester's UDP payload size, raised to [`MIN_UDP_SIZE`].
    pub udp_size: u16,
    /// The upper eight bits of the extended rcode.
    pub extended_rcode: u8,
    /// The EDNS version.
    pub version: u8,
    /// The DO bit (RFC 3225).
    pub dnssec_ok: bool,
    /// The options, as raw `code, length, value` triples.
    pub options: &'a [u8],
}

impl<'a> Edns<'a> {
    /// Reads an OPT record from its CLASS, TTL and RDATA fields (a record
    /// view of `crate::parse` hands them over: this module reads no
    /// message); the options must be well-formed.
    pub fn from_fields(class: u16, ttl: u32, rdata: &'a [u8]) -> Result<Self, ParseError> {
        let edns = Edns {
            udp_size: class.max(MIN_UDP_SIZE),
            extended_rcode: (ttl >> 24) as u8,
            version: (ttl >> 16) as u8,
            dnssec_ok: ttl & 0x8000 != 0,
            options: rdata,
        };
        for option in edns.options() {
            option?;
        }
        Ok(edns)
    }

    /// The options, as `(code, value)`.
    pub fn options(&self) -> EdnsOptions<'a> {
        EdnsOptions { rest: self.options }
    }
}

//----------- EdnsOptions ----------------------------------------------------

/// Iterator over EDNS options.
pub struct EdnsOptions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for EdnsOptions<'a> {
    type Item = Result<(u16, &'a [u8]), ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let Some(head) = self.rest.get(..4) else {
            self.rest = &[];
            return Some(Err(ParseError::new("EDNS option header runs past the end")));
        };
        let code = u16::from_be_bytes([head[0], head[1]]);
        let len = usize::from(u16::from_be_bytes([head[2], head[3]]));
        let Some(value) = self.rest.get(4..4 + len) else {
            self.rest = &[];
            return Some(Err(ParseError::new("EDNS option runs past the end")));
        };
        self.rest = &self.rest[4 + len..];
        Some(Ok((code, value)))
    }
}
