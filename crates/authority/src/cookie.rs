//! DNS cookies (RFC 7873) with interoperable server cookies (RFC 9018).
//!
//! A client sends a COOKIE option (code 10) holding its 8-octet client
//! cookie and, once it has one, the server cookie it last received. The
//! server cookie proves the client received an earlier answer at its
//! address: a spoofed source cannot know it. tern builds it as RFC 9018
//! asks, so that anycast instances from different vendors sharing a secret
//! accept each other's cookies:
//!
//! ```text
//!   server cookie (16 octets):
//!   01          version 1
//!   00 00 00    reserved
//!   5c f7 9f 11 timestamp, seconds (serial number arithmetic, RFC 1982)
//!   1f 81 .. 80 SipHash-2-4(client cookie | version | reserved | timestamp
//!               | client IP (4 or 16 octets), key = the 16-octet secret)
//! ```
//!
//! [`check`] reads a query's COOKIE option and says what it proves, with
//! at most one SipHash in the common cases (two when a valid cookie is old
//! enough to be renewed, at most once per client per half hour). It
//! allocates nothing; the answer's option is a 28-octet array on the stack
//! ([`CookieOption`]). Malformed options are found by
//! [`crate::respond_with`] too, which answers them with FORMERR; the
//! decisions per case are in `docs/decisions/0006-dns-cookies.md`.
//!
//! ```
//! use std::net::{IpAddr, Ipv4Addr};
//! use tern_authority::cookie::{self, CookieCheck, CookieSecret};
//! use tern_wire::edns::Edns;
//!
//! let secret = CookieSecret::new([0xe5; 16]);
//! let client = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));
//! // option code 10, length 8, the client cookie
//! let options = [0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8];
//! let edns = Edns { udp_size: 1232, extended_rcode: 0, version: 0, dnssec_ok: false, options: &options };
//! let first = cookie::check(Some(&edns), &secret, client, 1_000_000);
//! assert!(matches!(first, CookieCheck::ClientOnly(_)));
//! assert!(!first.is_verified());
//!
//! // The client sends back what it got: now it is verified.
//! let reply = first.reply_option().unwrap();
//! assert_eq!(reply.as_bytes()[..12], [0, 10, 0, 24, 1, 2, 3, 4, 5, 6, 7, 8]);
//! let edns = Edns { options: reply.as_bytes(), ..edns };
//! assert!(cookie::check(Some(&edns), &secret, client, 1_000_010).is_verified());
//! ```

use std::fmt;
use std::net::IpAddr;

use tern_wire::edns::{Edns, OPTION_COOKIE};

/// The length of a client cookie (RFC 7873 section 4).
pub const CLIENT_COOKIE_LEN: usize = 8;

/// The length of an RFC 9018 server cookie.
pub const SERVER_COOKIE_LEN: usize = 16;

/// The length of the COOKIE option tern sends: code, length, client
/// cookie, server cookie.
pub const COOKIE_OPTION_LEN: usize = 4 + CLIENT_COOKIE_LEN + SERVER_COOKIE_LEN;

/// The shortest and longest server cookie RFC 7873 section 4 allows; a
/// COOKIE option is 8 octets or 8 plus this many.
const MIN_SERVER_COOKIE_LEN: usize = 8;
const MAX_SERVER_COOKIE_LEN: usize = 32;

/// The server cookie version of RFC 9018.
const VERSION: u8 = 1;

/// A server cookie older than this (seconds) is no longer valid (RFC 9018
/// section 4.3: one hour).
pub const COOKIE_LIFETIME: u32 = 3600;

/// How far in the future a timestamp may be, for clock skew between
/// instances sharing the secret (RFC 9018 section 4.3: five minutes).
pub const COOKIE_MAX_SKEW: u32 = 300;

/// A valid server cookie younger than this (seconds) is sent back as it
/// came, saving a hash; an older one is renewed (RFC 9018 section 4.3:
/// half an hour).
pub const COOKIE_RENEW_AGE: u32 = 1800;

/// The hash input: client cookie, version, reserved, timestamp, and an
/// IPv6 address at most.
const HASH_INPUT_MAX: usize = CLIENT_COOKIE_LEN + 8 + 16;

//----------- CookieSecret ---------------------------------------------------

/// The 16-octet SipHash key server cookies are made with. Anycast
/// instances that share it accept each other's cookies. Its `Debug` does
/// not show the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct CookieSecret([u8; 16]);

impl CookieSecret {
    /// A secret from its bytes.
    pub const fn new(bytes: [u8; 16]) -> Self {
        CookieSecret(bytes)
    }

    /// A secret from 32 hexadecimal digits (either case), as configured.
    pub fn from_hex(text: &str) -> Option<Self> {
        let text = text.as_bytes();
        let hex = &data_encoding::HEXUPPER_PERMISSIVE;
        if hex.decode_len(text.len()).ok()? != 16 {
            return None;
        }
        let mut bytes = [0u8; 16];
        hex.decode_mut(text, &mut bytes).ok()?;
        Some(CookieSecret(bytes))
    }

    /// The key bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Debug for CookieSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CookieSecret(..)")
    }
}

//----------- CookieOption ---------------------------------------------------

/// A COOKIE option as tern sends it, wire format: code 10, length 24, the
/// client's cookie, our server cookie.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CookieOption([u8; COOKIE_OPTION_LEN]);

impl CookieOption {
    /// The option carrying `client_cookie` and `server_cookie`.
    pub fn new(
        client_cookie: &[u8; CLIENT_COOKIE_LEN],
        server_cookie: &[u8; SERVER_COOKIE_LEN],
    ) -> Self {
        let mut bytes = [0u8; COOKIE_OPTION_LEN];
        bytes[..2].copy_from_slice(&OPTION_COOKIE.to_be_bytes());
        bytes[2..4]
            .copy_from_slice(&((CLIENT_COOKIE_LEN + SERVER_COOKIE_LEN) as u16).to_be_bytes());
        bytes[4..12].copy_from_slice(client_cookie);
        bytes[12..].copy_from_slice(server_cookie);
        CookieOption(bytes)
    }

    /// The whole option, ready for [`crate::respond_with`],
    /// [`crate::append_option`] or [`crate::bad_cookie`].
    pub fn as_bytes(&self) -> &[u8; COOKIE_OPTION_LEN] {
        &self.0
    }

    /// The client cookie echoed.
    pub fn client_cookie(&self) -> [u8; CLIENT_COOKIE_LEN] {
        let mut cookie = [0u8; CLIENT_COOKIE_LEN];
        cookie.copy_from_slice(&self.0[4..12]);
        cookie
    }

    /// The server cookie sent.
    pub fn server_cookie(&self) -> [u8; SERVER_COOKIE_LEN] {
        let mut cookie = [0u8; SERVER_COOKIE_LEN];
        cookie.copy_from_slice(&self.0[12..]);
        cookie
    }
}

impl fmt::Debug for CookieOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CookieOption(")?;
        for byte in &self.0[4..] {
            write!(f, "{byte:02x}")?;
        }
        write!(f, ")")
    }
}

//----------- CookieCheck ----------------------------------------------------

/// What a query's COOKIE option proves, and the option to answer with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CookieCheck {
    /// No COOKIE option (or no OPT): answer without one.
    None,
    /// A COOKIE option of a length RFC 7873 does not allow: the query gets
    /// FORMERR ([`crate::respond_with`] does it).
    Malformed,
    /// A client cookie only: a first contact. Answer with a fresh server
    /// cookie.
    ClientOnly(CookieOption),
    /// A server cookie that is not ours, was made for another client
    /// address or cookie, has another version or is expired or too far in
    /// the future. Answer with a fresh one.
    Invalid(CookieOption),
    /// Our server cookie, made for this client: the source address is
    /// verified. The option echoes it, or renews it when it is older than
    /// [`COOKIE_RENEW_AGE`].
    Valid(CookieOption),
}

impl CookieCheck {
    /// Whether the client proved its address with a valid server cookie
    /// (only these are exempt from response rate limiting).
    pub fn is_verified(&self) -> bool {
        matches!(self, CookieCheck::Valid(_))
    }

    /// The COOKIE option the answer carries, if any.
    pub fn reply_option(&self) -> Option<&CookieOption> {
        match self {
            CookieCheck::None | CookieCheck::Malformed => None,
            CookieCheck::ClientOnly(option)
            | CookieCheck::Invalid(option)
            | CookieCheck::Valid(option) => Some(option),
        }
    }
}

//----------- Received -------------------------------------------------------

/// The COOKIE option of a query, as read by [`received`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Received<'a> {
    /// No COOKIE option.
    Absent,
    /// A COOKIE option of a bad length (any of them, if several).
    Malformed,
    /// The first COOKIE option: the client cookie and the server cookie
    /// (empty, or 8 to 32 octets).
    Present {
        client: [u8; CLIENT_COOKIE_LEN],
        server: &'a [u8],
    },
}

/// Reads the COOKIE option from raw EDNS options. Every COOKIE option must
/// have a valid length (8, or 16 to 40 octets), else the result is
/// `Malformed`; of several valid ones the first counts and the others are
/// ignored. This is what BIND 9.18 does (`docs/decisions/0006`). Options
/// that run past the end end the scan (an [`Edns`] has none). Bound: one
/// step per option, each at least four octets.
pub(crate) fn received(options: &[u8]) -> Received<'_> {
    let mut found = Received::Absent;
    let mut rest = options;
    while let Some(head) = rest.get(..4) {
        let code = u16::from_be_bytes([head[0], head[1]]);
        let len = usize::from(u16::from_be_bytes([head[2], head[3]]));
        let Some(value) = rest.get(4..4 + len) else {
            break;
        };
        rest = &rest[4 + len..];
        if code != OPTION_COOKIE {
            continue;
        }
        let server_len = len.wrapping_sub(CLIENT_COOKIE_LEN);
        if len < CLIENT_COOKIE_LEN
            || (server_len != 0
                && !(MIN_SERVER_COOKIE_LEN..=MAX_SERVER_COOKIE_LEN).contains(&server_len))
        {
            return Received::Malformed;
        }
        if found == Received::Absent {
            let mut client = [0u8; CLIENT_COOKIE_LEN];
            client.copy_from_slice(&value[..CLIENT_COOKIE_LEN]);
            found = Received::Present {
                client,
                server: &value[CLIENT_COOKIE_LEN..],
            };
        }
    }
    found
}

/// Whether raw EDNS options hold a COOKIE option of a bad length, which
/// makes the query a FORMERR whether or not cookies are on (what
/// [`crate::respond_with`] answers). For a server's fast path, which must
/// leave such queries to `respond`.
pub fn is_malformed(options: &[u8]) -> bool {
    received(options) == Received::Malformed
}

//----------- check ----------------------------------------------------------

/// Reads the COOKIE option of a query's OPT and checks its server cookie
/// against `secret`, the client's address and the time `now_secs`
/// (seconds; any epoch shared by the instances, normally Unix time). See
/// [`CookieCheck`] for the outcomes. One SipHash, two when a valid cookie
/// is renewed; no allocation.
pub fn check(
    edns: Option<&Edns<'_>>,
    secret: &CookieSecret,
    client_ip: IpAddr,
    now_secs: u32,
) -> CookieCheck {
    match edns {
        Some(edns) => check_options(edns.options, secret, client_ip, now_secs),
        None => CookieCheck::None,
    }
}

/// [`check`] for the raw options of a query's OPT (`code, length, value`
/// each).
pub fn check_options(
    options: &[u8],
    secret: &CookieSecret,
    client_ip: IpAddr,
    now_secs: u32,
) -> CookieCheck {
    let (client, server) = match received(options) {
        Received::Absent => return CookieCheck::None,
        Received::Malformed => return CookieCheck::Malformed,
        Received::Present { client, server } => (client, server),
    };
    let fresh = |secret| {
        CookieOption::new(
            &client,
            &server_cookie(secret, &client, client_ip, now_secs),
        )
    };
    if server.is_empty() {
        return CookieCheck::ClientOnly(fresh(secret));
    }
    match verify(secret, &client, server, client_ip, now_secs) {
        Some(age) if (0..COOKIE_RENEW_AGE as i64).contains(&age) => {
            let mut echoed = [0u8; SERVER_COOKIE_LEN];
            echoed.copy_from_slice(server);
            CookieCheck::Valid(CookieOption::new(&client, &echoed))
        }
        Some(_) => CookieCheck::Valid(fresh(secret)),
        None => CookieCheck::Invalid(fresh(secret)),
    }
}

/// A new RFC 9018 server cookie for `client_cookie` at `client_ip`, dated
/// `now_secs`. IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, as a
/// dual-stack socket reports IPv4 clients) count as IPv4.
pub fn server_cookie(
    secret: &CookieSecret,
    client_cookie: &[u8; CLIENT_COOKIE_LEN],
    client_ip: IpAddr,
    now_secs: u32,
) -> [u8; SERVER_COOKIE_LEN] {
    let mut cookie = [0u8; SERVER_COOKIE_LEN];
    cookie[0] = VERSION;
    cookie[4..8].copy_from_slice(&now_secs.to_be_bytes());
    let hash = cookie_hash(secret, client_cookie, &cookie[..8], client_ip);
    cookie[8..].copy_from_slice(&hash.to_le_bytes());
    cookie
}

/// Whether `server_cookie` is a valid RFC 9018 cookie of ours for
/// `client_cookie` at `client_ip` at time `now_secs`: 16 octets, version
/// 1, the hash matches (the reserved octets are hashed as received, RFC
/// 9018 section 4.2), and the timestamp is at most [`COOKIE_LIFETIME`]
/// seconds old and at most [`COOKIE_MAX_SKEW`] seconds ahead (RFC 1982
/// serial arithmetic, so the 2106 wrap is harmless).
pub fn server_cookie_is_valid(
    secret: &CookieSecret,
    client_cookie: &[u8; CLIENT_COOKIE_LEN],
    server_cookie: &[u8],
    client_ip: IpAddr,
    now_secs: u32,
) -> bool {
    verify(secret, client_cookie, server_cookie, client_ip, now_secs).is_some()
}

/// The age in seconds (negative: ahead of our clock) of a valid cookie.
/// The time is checked before the hash, so an expired cookie costs none.
fn verify(
    secret: &CookieSecret,
    client_cookie: &[u8; CLIENT_COOKIE_LEN],
    server_cookie: &[u8],
    client_ip: IpAddr,
    now_secs: u32,
) -> Option<i64> {
    if server_cookie.len() != SERVER_COOKIE_LEN || server_cookie[0] != VERSION {
        return None;
    }
    let timestamp = u32::from_be_bytes([
        server_cookie[4],
        server_cookie[5],
        server_cookie[6],
        server_cookie[7],
    ]);
    let age = i64::from(now_secs.wrapping_sub(timestamp) as i32);
    if !(-i64::from(COOKIE_MAX_SKEW)..=i64::from(COOKIE_LIFETIME)).contains(&age) {
        return None;
    }
    let mut received = [0u8; 8];
    received.copy_from_slice(&server_cookie[8..]);
    // One 64-bit comparison: no early exit an attacker could time.
    let expected = cookie_hash(secret, client_cookie, &server_cookie[..8], client_ip);
    (expected == u64::from_le_bytes(received)).then_some(age)
}

/// SipHash-2-4 over client cookie, version, reserved, timestamp and
/// address (RFC 9018 section 4.4).
fn cookie_hash(
    secret: &CookieSecret,
    client_cookie: &[u8; CLIENT_COOKIE_LEN],
    version_to_timestamp: &[u8],
    client_ip: IpAddr,
) -> u64 {
    let mut input = [0u8; HASH_INPUT_MAX];
    input[..8].copy_from_slice(client_cookie);
    input[8..16].copy_from_slice(version_to_timestamp);
    let len = match client_ip {
        IpAddr::V4(v4) => {
            input[16..20].copy_from_slice(&v4.octets());
            20
        }
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => {
                input[16..20].copy_from_slice(&v4.octets());
                20
            }
            None => {
                input[16..32].copy_from_slice(&v6.octets());
                32
            }
        },
    };
    siphash24(secret.as_bytes(), &input[..len])
}

//----------- siphash24 ------------------------------------------------------

/// SipHash-2-4 with a 128-bit key and 64-bit output (Aumasson and
/// Bernstein, 2012), from the `siphasher` crate. The output's wire form is
/// its little-endian bytes.
pub fn siphash24(key: &[u8; 16], data: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut hasher = siphasher::sip::SipHasher24::new_with_key(key);
    hasher.write(data);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    fn hex<const N: usize>(text: &str) -> [u8; N] {
        let bytes = data_encoding::HEXLOWER_PERMISSIVE
            .decode(text.as_bytes())
            .unwrap();
        bytes.try_into().unwrap()
    }

    /// The 64 vectors of the SipHash paper's reference code (`vectors.h`):
    /// key 00..0f, message i octets 00..i-1, output as little-endian bytes.
    #[rustfmt::skip]
    const SIPHASH_VECTORS: [[u8; 8]; 64] = [
        [0x31, 0x0e, 0x0e, 0xdd, 0x47, 0xdb, 0x6f, 0x72], [0xfd, 0x67, 0xdc, 0x93, 0xc5, 0x39, 0xf8, 0x74],
        [0x5a, 0x4f, 0xa9, 0xd9, 0x09, 0x80, 0x6c, 0x0d], [0x2d, 0x7e, 0xfb, 0xd7, 0x96, 0x66, 0x67, 0x85],
        [0xb7, 0x87, 0x71, 0x27, 0xe0, 0x94, 0x27, 0xcf], [0x8d, 0xa6, 0x99, 0xcd, 0x64, 0x55, 0x76, 0x18],
        [0xce, 0xe3, 0xfe, 0x58, 0x6e, 0x46, 0xc9, 0xcb], [0x37, 0xd1, 0x01, 0x8b, 0xf5, 0x00, 0x02, 0xab],
        [0x62, 0x24, 0x93, 0x9a, 0x79, 0xf5, 0xf5, 0x93], [0xb0, 0xe4, 0xa9, 0x0b, 0xdf, 0x82, 0x00, 0x9e],
        [0xf3, 0xb9, 0xdd, 0x94, 0xc5, 0xbb, 0x5d, 0x7a], [0xa7, 0xad, 0x6b, 0x22, 0x46, 0x2f, 0xb3, 0xf4],
        [0xfb, 0xe5, 0x0e, 0x86, 0xbc, 0x8f, 0x1e, 0x75], [0x90, 0x3d, 0x84, 0xc0, 0x27, 0x56, 0xea, 0x14],
        [0xee, 0xf2, 0x7a, 0x8e, 0x90, 0xca, 0x23, 0xf7], [0xe5, 0x45, 0xbe, 0x49, 0x61, 0xca, 0x29, 0xa1],
        [0xdb, 0x9b, 0xc2, 0x57, 0x7f, 0xcc, 0x2a, 0x3f], [0x94, 0x47, 0xbe, 0x2c, 0xf5, 0xe9, 0x9a, 0x69],
        [0x9c, 0xd3, 0x8d, 0x96, 0xf0, 0xb3, 0xc1, 0x4b], [0xbd, 0x61, 0x79, 0xa7, 0x1d, 0xc9, 0x6d, 0xbb],
        [0x98, 0xee, 0xa2, 0x1a, 0xf2, 0x5c, 0xd6, 0xbe], [0xc7, 0x67, 0x3b, 0x2e, 0xb0, 0xcb, 0xf2, 0xd0],
        [0x88, 0x3e, 0xa3, 0xe3, 0x95, 0x67, 0x53, 0x93], [0xc8, 0xce, 0x5c, 0xcd, 0x8c, 0x03, 0x0c, 0xa8],
        [0x94, 0xaf, 0x49, 0xf6, 0xc6, 0x50, 0xad, 0xb8], [0xea, 0xb8, 0x85, 0x8a, 0xde, 0x92, 0xe1, 0xbc],
        [0xf3, 0x15, 0xbb, 0x5b, 0xb8, 0x35, 0xd8, 0x17], [0xad, 0xcf, 0x6b, 0x07, 0x63, 0x61, 0x2e, 0x2f],
        [0xa5, 0xc9, 0x1d, 0xa7, 0xac, 0xaa, 0x4d, 0xde], [0x71, 0x65, 0x95, 0x87, 0x66, 0x50, 0xa2, 0xa6],
        [0x28, 0xef, 0x49, 0x5c, 0x53, 0xa3, 0x87, 0xad], [0x42, 0xc3, 0x41, 0xd8, 0xfa, 0x92, 0xd8, 0x32],
        [0xce, 0x7c, 0xf2, 0x72, 0x2f, 0x51, 0x27, 0x71], [0xe3, 0x78, 0x59, 0xf9, 0x46, 0x23, 0xf3, 0xa7],
        [0x38, 0x12, 0x05, 0xbb, 0x1a, 0xb0, 0xe0, 0x12], [0xae, 0x97, 0xa1, 0x0f, 0xd4, 0x34, 0xe0, 0x15],
        [0xb4, 0xa3, 0x15, 0x08, 0xbe, 0xff, 0x4d, 0x31], [0x81, 0x39, 0x62, 0x29, 0xf0, 0x90, 0x79, 0x02],
        [0x4d, 0x0c, 0xf4, 0x9e, 0xe5, 0xd4, 0xdc, 0xca], [0x5c, 0x73, 0x33, 0x6a, 0x76, 0xd8, 0xbf, 0x9a],
        [0xd0, 0xa7, 0x04, 0x53, 0x6b, 0xa9, 0x3e, 0x0e], [0x92, 0x59, 0x58, 0xfc, 0xd6, 0x42, 0x0c, 0xad],
        [0xa9, 0x15, 0xc2, 0x9b, 0xc8, 0x06, 0x73, 0x18], [0x95, 0x2b, 0x79, 0xf3, 0xbc, 0x0a, 0xa6, 0xd4],
        [0xf2, 0x1d, 0xf2, 0xe4, 0x1d, 0x45, 0x35, 0xf9], [0x87, 0x57, 0x75, 0x19, 0x04, 0x8f, 0x53, 0xa9],
        [0x10, 0xa5, 0x6c, 0xf5, 0xdf, 0xcd, 0x9a, 0xdb], [0xeb, 0x75, 0x09, 0x5c, 0xcd, 0x98, 0x6c, 0xd0],
        [0x51, 0xa9, 0xcb, 0x9e, 0xcb, 0xa3, 0x12, 0xe6], [0x96, 0xaf, 0xad, 0xfc, 0x2c, 0xe6, 0x66, 0xc7],
        [0x72, 0xfe, 0x52, 0x97, 0x5a, 0x43, 0x64, 0xee], [0x5a, 0x16, 0x45, 0xb2, 0x76, 0xd5, 0x92, 0xa1],
        [0xb2, 0x74, 0xcb, 0x8e, 0xbf, 0x87, 0x87, 0x0a], [0x6f, 0x9b, 0xb4, 0x20, 0x3d, 0xe7, 0xb3, 0x81],
        [0xea, 0xec, 0xb2, 0xa3, 0x0b, 0x22, 0xa8, 0x7f], [0x99, 0x24, 0xa4, 0x3c, 0xc1, 0x31, 0x57, 0x24],
        [0xbd, 0x83, 0x8d, 0x3a, 0xaf, 0xbf, 0x8d, 0xb7], [0x0b, 0x1a, 0x2a, 0x32, 0x65, 0xd5, 0x1a, 0xea],
        [0x13, 0x50, 0x79, 0xa3, 0x23, 0x1c, 0xe6, 0x60], [0x93, 0x2b, 0x28, 0x46, 0xe4, 0xd7, 0x06, 0x66],
        [0xe1, 0x91, 0x5f, 0x5c, 0xb1, 0xec, 0xa4, 0x6c], [0xf3, 0x25, 0x96, 0x5c, 0xa1, 0x6d, 0x62, 0x9f],
        [0x57, 0x5f, 0xf2, 0x8e, 0x60, 0x38, 0x1b, 0xe5], [0x72, 0x45, 0x06, 0xeb, 0x4c, 0x32, 0x8a, 0x95],
    ];

    #[test]
    fn siphash_reference_vectors() {
        let key: [u8; 16] = std::array::from_fn(|i| i as u8);
        let message: [u8; 64] = std::array::from_fn(|i| i as u8);
        for (len, expected) in SIPHASH_VECTORS.iter().enumerate() {
            assert_eq!(
                siphash24(&key, &message[..len]).to_le_bytes(),
                *expected,
                "message of {len} octets"
            );
        }
    }

    //--- RFC 9018 Appendix A

    const SECRET: &str = "e5e973e5a6b2a43f48e7dc849e37bfcf";
    const CLIENT_1: IpAddr = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 100));
    const CLIENT_2: IpAddr = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 203));
    const CLIENT_6: IpAddr = IpAddr::V6(Ipv6Addr::new(
        0x2001, 0xdb8, 0x220, 0x1, 0x59de, 0xd0f4, 0x8769, 0x82b8,
    ));

    fn secret(text: &str) -> CookieSecret {
        CookieSecret::from_hex(text).unwrap()
    }

    /// An OPT holding `options`.
    fn edns(options: &[u8]) -> Edns<'_> {
        Edns {
            udp_size: 1232,
            extended_rcode: 0,
            version: 0,
            dnssec_ok: false,
            options,
        }
    }

    /// A COOKIE option with `value`.
    fn option(value: &[u8]) -> Vec<u8> {
        let mut bytes = vec![0, 10];
        bytes.extend_from_slice(&(value.len() as u16).to_be_bytes());
        bytes.extend_from_slice(value);
        bytes
    }

    fn check_value(value: &[u8], key: &CookieSecret, ip: IpAddr, now: u32) -> CookieCheck {
        check(Some(&edns(&option(value))), key, ip, now)
    }

    #[test]
    fn rfc9018_a1_learning_a_new_server_cookie() {
        let key = secret(SECRET);
        let client = hex::<8>("2464c4abcf10c957");
        assert_eq!(
            server_cookie(&key, &client, CLIENT_1, 1559731985),
            hex::<16>("010000005cf79f111f8130c3eee29480")
        );
        let result = check_value(&client, &key, CLIENT_1, 1559731985);
        let CookieCheck::ClientOnly(reply) = result else {
            panic!("{result:?}");
        };
        assert!(!result.is_verified());
        assert_eq!(
            reply.as_bytes()[4..],
            hex::<24>("2464c4abcf10c957010000005cf79f111f8130c3eee29480")
        );
        assert_eq!(reply.as_bytes()[..4], [0, 10, 0, 24]);
    }

    #[test]
    fn rfc9018_a2_the_same_client_renewing_it() {
        let key = secret(SECRET);
        let sent = hex::<24>("2464c4abcf10c957010000005cf79f111f8130c3eee29480");
        // 2400 s later: valid, and older than half an hour, so renewed.
        let result = check_value(&sent, &key, CLIENT_1, 1559734385);
        assert!(result.is_verified());
        assert_eq!(
            result.reply_option().unwrap().as_bytes()[4..],
            hex::<24>("2464c4abcf10c957010000005cf7a871d4a564a1442aca77")
        );
    }

    #[test]
    fn rfc9018_a3_nonzero_reserved_octets_are_hashed_as_received() {
        let key = secret(SECRET);
        let client = hex::<8>("fc93fc62807ddb86");
        let sent = hex::<16>("01abcdef5cf78f71a314227b6679ebf5");
        assert!(server_cookie_is_valid(
            &key, &client, &sent, CLIENT_2, 1559727985
        ));
        assert!(!server_cookie_is_valid(
            &key, &client, &sent, CLIENT_1, 1559727985
        ));
        // The example's renewal comes 6715 s later: past the lifetime, so
        // tern counts the cookie invalid and sends the same fresh cookie.
        let mut value = client.to_vec();
        value.extend_from_slice(&sent);
        let result = check_value(&value, &key, CLIENT_2, 1559734700);
        assert!(matches!(result, CookieCheck::Invalid(_)), "{result:?}");
        assert_eq!(
            result.reply_option().unwrap().as_bytes()[4..],
            hex::<24>("fc93fc62807ddb86010000005cf7a9acf73a7810aca2381e")
        );
    }

    #[test]
    fn rfc9018_a4_ipv6_with_a_rolled_over_secret() {
        let old = secret("dd3bdf9344b678b185a6f5cb60fca715");
        let new = secret("445536bcd2513298075a5d379663c962");
        let client = hex::<8>("22681ab97d52c298");
        let sent = hex::<16>("010000005cf7c57926556bd0934c72f8");
        assert!(server_cookie_is_valid(
            &old, &client, &sent, CLIENT_6, 1559741817
        ));
        assert!(!server_cookie_is_valid(
            &new, &client, &sent, CLIENT_6, 1559741817
        ));
        let mut value = client.to_vec();
        value.extend_from_slice(&sent);
        let result = check_value(&value, &new, CLIENT_6, 1559741961);
        assert!(matches!(result, CookieCheck::Invalid(_)), "{result:?}");
        assert_eq!(
            result.reply_option().unwrap().as_bytes()[4..],
            hex::<24>("22681ab97d52c298010000005cf7c609a6bb79d16625507a")
        );
    }

    //--- Parsing

    #[test]
    fn no_opt_or_no_cookie_is_none() {
        let key = secret(SECRET);
        assert_eq!(check(None, &key, CLIENT_1, 0), CookieCheck::None);
        assert_eq!(
            check(Some(&edns(&[])), &key, CLIENT_1, 0),
            CookieCheck::None
        );
        // NSID (3), empty, and an unknown option.
        let other = [0, 3, 0, 0, 0xfd, 0xe9, 0, 2, 1, 2];
        assert_eq!(
            check(Some(&edns(&other)), &key, CLIENT_1, 0),
            CookieCheck::None
        );
    }

    #[test]
    fn every_length_is_classified() {
        let key = secret(SECRET);
        for len in 0..=48usize {
            let value: Vec<u8> = (0..len as u8).collect();
            let result = check_value(&value, &key, CLIENT_1, 1000);
            let expected_ok = len == 8 || (16..=40).contains(&len);
            match result {
                CookieCheck::Malformed => assert!(!expected_ok, "length {len}"),
                CookieCheck::ClientOnly(_) => assert_eq!(len, 8),
                CookieCheck::Invalid(reply) => {
                    assert!((16..=40).contains(&len), "length {len}");
                    assert_eq!(reply.client_cookie(), [0, 1, 2, 3, 4, 5, 6, 7]);
                }
                other => panic!("length {len}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_first_of_several_valid_cookies_counts() {
        let key = secret(SECRET);
        let mut options = option(&[1; 8]);
        options.extend_from_slice(&option(&[2; 8]));
        let result = check(Some(&edns(&options)), &key, CLIENT_1, 1000);
        let CookieCheck::ClientOnly(reply) = result else {
            panic!("{result:?}");
        };
        assert_eq!(reply.client_cookie(), [1; 8]);
    }

    #[test]
    fn a_malformed_cookie_anywhere_is_malformed() {
        let key = secret(SECRET);
        for (first, second) in [(8usize, 7usize), (7, 8), (24, 9), (8, 41)] {
            let mut options = option(&vec![1; first]);
            options.extend_from_slice(&[0, 3, 0, 0]); // NSID between
            options.extend_from_slice(&option(&vec![2; second]));
            assert_eq!(
                check(Some(&edns(&options)), &key, CLIENT_1, 1000),
                CookieCheck::Malformed,
                "{first} then {second}"
            );
        }
    }

    //--- Validity

    /// The option value a client echoes after an answer at `issued`.
    fn echoed(key: &CookieSecret, ip: IpAddr, issued: u32) -> Vec<u8> {
        let client = [9u8; 8];
        let mut value = client.to_vec();
        value.extend_from_slice(&server_cookie(key, &client, ip, issued));
        value
    }

    #[test]
    fn young_valid_cookies_are_echoed_and_old_ones_renewed() {
        let key = secret(SECRET);
        let issued = 1_000_000;
        let value = echoed(&key, CLIENT_1, issued);
        for (now, echo) in [
            (issued, true),
            (issued + COOKIE_RENEW_AGE - 1, true),
            (issued + COOKIE_RENEW_AGE, false),
            (issued + COOKIE_LIFETIME, false),
            (issued - 1, false), // ahead of our clock: renewed with ours
        ] {
            let result = check_value(&value, &key, CLIENT_1, now);
            assert!(result.is_verified(), "at {now}");
            let reply = result.reply_option().unwrap();
            assert_eq!(reply.client_cookie(), [9; 8]);
            if echo {
                assert_eq!(reply.server_cookie()[..], value[8..], "at {now}");
            } else {
                assert_eq!(
                    reply.server_cookie(),
                    server_cookie(&key, &[9; 8], CLIENT_1, now),
                    "at {now}"
                );
            }
        }
    }

    #[test]
    fn timestamps_at_the_boundaries() {
        let key = secret(SECRET);
        let issued = 1_000_000;
        let value = echoed(&key, CLIENT_1, issued);
        let at = |now: u32| check_value(&value, &key, CLIENT_1, now).is_verified();
        assert!(at(issued + COOKIE_LIFETIME));
        assert!(!at(issued + COOKIE_LIFETIME + 1), "expired");
        assert!(at(issued - COOKIE_MAX_SKEW));
        assert!(!at(issued - COOKIE_MAX_SKEW - 1), "too far in the future");
        assert!(
            !at(issued.wrapping_add(1 << 31)),
            "half the serial space away"
        );
    }

    #[test]
    fn timestamps_wrap_with_serial_arithmetic() {
        let key = secret(SECRET);
        let issued = u32::MAX - 10;
        let value = echoed(&key, CLIENT_1, issued);
        assert!(check_value(&value, &key, CLIENT_1, 100).is_verified());
        assert!(check_value(&value, &key, CLIENT_1, COOKIE_LIFETIME - 11).is_verified());
        assert!(!check_value(&value, &key, CLIENT_1, COOKIE_LIFETIME - 10).is_verified());
    }

    #[test]
    fn wrong_address_secret_version_or_client_cookie_is_invalid() {
        let key = secret(SECRET);
        let now = 1_000_000;
        let value = echoed(&key, CLIENT_1, now);
        let invalid = |value: &[u8], key: &CookieSecret, ip: IpAddr| {
            let result = check_value(value, key, ip, now);
            assert!(matches!(result, CookieCheck::Invalid(_)), "{result:?}");
            // The fresh cookie is the one for this client.
            let client: [u8; 8] = value[..8].try_into().unwrap();
            assert_eq!(
                result.reply_option().unwrap().server_cookie(),
                server_cookie(key, &client, ip, now)
            );
        };
        invalid(&value, &key, CLIENT_2);
        invalid(&value, &key, CLIENT_6);
        invalid(
            &value,
            &secret("00000000000000000000000000000000"),
            CLIENT_1,
        );
        let mut version = value.clone();
        version[8] = 2;
        invalid(&version, &key, CLIENT_1);
        let mut client = value.clone();
        client[0] ^= 1;
        invalid(&client, &key, CLIENT_1);
        let mut hash = value.clone();
        hash[23] ^= 0x80;
        invalid(&hash, &key, CLIENT_1);
        // A valid cookie with octets appended is another (unknown) cookie.
        let mut longer = value.clone();
        longer.extend_from_slice(&[0; 8]);
        invalid(&longer, &key, CLIENT_1);
        // Checked for the right inputs, the same cookie is valid.
        assert!(check_value(&value, &key, CLIENT_1, now).is_verified());
    }

    #[test]
    fn ipv4_mapped_addresses_count_as_ipv4() {
        let key = secret(SECRET);
        let mapped = IpAddr::V6(Ipv4Addr::new(198, 51, 100, 100).to_ipv6_mapped());
        let client = hex::<8>("2464c4abcf10c957");
        assert_eq!(
            server_cookie(&key, &client, mapped, 1559731985),
            hex::<16>("010000005cf79f111f8130c3eee29480")
        );
    }

    #[test]
    fn secrets_from_hex() {
        assert_eq!(secret("E5E973E5A6B2A43F48E7DC849E37BFCF"), secret(SECRET));
        assert_eq!(secret(SECRET).as_bytes()[..2], [0xe5, 0xe9]);
        for bad in [
            "",
            "e5",
            "e5e973e5a6b2a43f48e7dc849e37bfc",
            "g5e973e5a6b2a43f48e7dc849e37bfcf",
        ] {
            assert!(CookieSecret::from_hex(bad).is_none(), "{bad}");
        }
        assert_eq!(format!("{:?}", secret(SECRET)), "CookieSecret(..)");
    }
}
