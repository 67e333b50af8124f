//! The Name Server Identifier option (NSID, RFC 5001).
//!
//! A client that wants to know which server (of an anycast set, say)
//! answered puts an empty NSID option (code 3) in its query's OPT; a server
//! configured with an identifier puts it, as the option's value, in the
//! OPT of its answer. It is never sent unasked, and never without an OPT.
//!
//! ```text
//!   query OPT options:   00 03  00 00                  code 3, length 0
//!   answer OPT options:  00 03  00 03  6e 73 31        code 3, length 3, "ns1"
//! ```
//!
//! The option is encoded once, at start-up ([`Nsid::new`]); answering
//! only copies it. [`requested`] reads a query's options without
//! allocating, one step per option.
//!
//! ```
//! use tern_authority::nsid::{self, Nsid};
//!
//! let nsid = Nsid::new(b"ns1").unwrap();
//! assert_eq!(nsid.as_option(), [0, 3, 0, 3, b'n', b's', b'1']);
//! assert!(nsid::requested(&[0, 3, 0, 0]));
//! assert!(!nsid::requested(&[0, 10, 0, 0]));
//! ```

use std::fmt;

use tern_wire::edns::OPTION_NSID;

/// The longest identifier accepted: long enough for any host name label
/// or a hex-encoded hash (Knot and NSD operators use both), and short
/// enough that the option (4 + 128 octets) always fits beside the largest
/// question, an OPT and a COOKIE in a 512-octet answer.
pub const MAX_NSID_LEN: usize = 128;

/// The option header: code and length.
const OPTION_HEADER: usize = 4;

//----------- Nsid -----------------------------------------------------------

/// A server's identifier, encoded as the EDNS option it is sent as.
#[derive(Clone, PartialEq, Eq)]
pub struct Nsid {
    option: Box<[u8]>,
}

impl Nsid {
    /// The option carrying `value`: 1 to [`MAX_NSID_LEN`] octets, any
    /// bytes (RFC 5001 leaves the content to the operator).
    pub fn new(value: &[u8]) -> Result<Self, NsidError> {
        if value.is_empty() {
            return Err(NsidError::Empty);
        }
        if value.len() > MAX_NSID_LEN {
            return Err(NsidError::TooLong(value.len()));
        }
        let mut option = Vec::with_capacity(OPTION_HEADER + value.len());
        option.extend_from_slice(&OPTION_NSID.to_be_bytes());
        option.extend_from_slice(&(value.len() as u16).to_be_bytes());
        option.extend_from_slice(value);
        Ok(Nsid {
            option: option.into_boxed_slice(),
        })
    }

    /// The identifier.
    pub fn value(&self) -> &[u8] {
        &self.option[OPTION_HEADER..]
    }

    /// The whole option (`code, length, value`), as appended to an OPT.
    pub fn as_option(&self) -> &[u8] {
        &self.option
    }
}

impl fmt::Debug for Nsid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Nsid")
            .field(&String::from_utf8_lossy(self.value()))
            .finish()
    }
}

//----------- NsidError ------------------------------------------------------

/// Why an identifier was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NsidError {
    /// No octets: leave `nsid` out instead.
    Empty,
    /// More than [`MAX_NSID_LEN`] octets (the length given).
    TooLong(usize),
}

impl fmt::Display for NsidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NsidError::Empty => f.write_str("the identifier is empty"),
            NsidError::TooLong(len) => write!(
                f,
                "the identifier is {len} octets long; at most {MAX_NSID_LEN} are allowed"
            ),
        }
    }
}

impl std::error::Error for NsidError {}

//----------- requested ------------------------------------------------------

/// Whether a query's OPT options (`code, length, value` each) hold an NSID
/// option. Its value should be empty (RFC 5001 section 2.1); one that is
/// not is still taken as the request, as Knot and NSD do. Options that run
/// past the end stop the walk (the message parser has rejected such an
/// OPT already). Bound: one step per option, each at least 4 octets.
pub fn requested(options: &[u8]) -> bool {
    let mut rest = options;
    while let [c0, c1, l0, l1, tail @ ..] = rest {
        if u16::from_be_bytes([*c0, *c1]) == OPTION_NSID {
            return true;
        }
        let len = usize::from(u16::from_be_bytes([*l0, *l1]));
        let Some(next) = tail.get(len..) else {
            return false;
        };
        rest = next;
    }
    false
}

//=== Tests ===

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_option_once() {
        let nsid = Nsid::new(b"\x00\xffab").unwrap();
        assert_eq!(nsid.as_option(), b"\x00\x03\x00\x04\x00\xffab");
        assert_eq!(nsid.value(), b"\x00\xffab");
        assert_eq!(Nsid::new(b""), Err(NsidError::Empty));
        assert!(Nsid::new(&[b'a'; MAX_NSID_LEN]).is_ok());
        assert_eq!(
            Nsid::new(&[b'a'; MAX_NSID_LEN + 1]),
            Err(NsidError::TooLong(MAX_NSID_LEN + 1))
        );
    }

    #[test]
    fn finds_the_request_among_other_options() {
        assert!(!requested(&[]));
        assert!(requested(&[0, 3, 0, 0]));
        // After a COOKIE, and with a (non-standard) value.
        let mut options = vec![0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];
        options.extend_from_slice(&[0, 3, 0, 2, b'x', b'y']);
        assert!(requested(&options));
        // The code 3 inside another option's value is not a request.
        assert!(!requested(&[0, 10, 0, 8, 0, 3, 0, 0, 5, 6, 7, 8]));
        // Cut short: no request, no panic.
        assert!(!requested(&[0, 10, 0, 9, 0, 3, 0, 0]));
        assert!(!requested(&[0, 3, 0]));
    }
}
