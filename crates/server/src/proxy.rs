//! The PROXY protocol, version 2 (haproxy's `proxy-protocol.txt`, section
//! 2.2), on the listeners of `proxy.listen` (docs/decisions/0016).
//!
//! A load balancer such as dnsdist (`useProxyProtocol=true`) puts a binary
//! header before each UDP datagram and at the start of each TCP
//! connection; it carries the address of the client the balancer serves.
//! On a proxied listener that address is the client for everything the
//! core decides or records (`forward.allow`, `transfer.allow`, rate
//! limiting, cookies, dnstap, logs); the answer still goes to the
//! balancer (the datagram's source, or the same connection), without a
//! header.
//!
//! ```text
//!  0                   12    13    14     16        16+12 (IPv4) / 16+36 (IPv6)
//!  | signature (12)     | ver | fam | len  | addresses | TLVs ... | DNS message
//!  0d0a0d0a000d0a515549540a  0x21  0x12  0x000c  src dst sport dport
//! ```
//!
//! Accepted only from `proxy.allow`: on a proxied listener, anything from
//! another source is dropped, and so is a datagram or connection from an
//! allowed proxy without a valid header; each is counted by
//! [`Refusal`]. A LOCAL header (the proxy's own health checks) makes the
//! proxy itself the client. Version 1 (text), AF_UNIX and unspecified
//! addresses with the PROXY command are refused: none names an IP client.
//!
//! The fixed part and the address block are parsed by the `ppp` crate,
//! which borrows the input (no allocation: the UDP answer path stays
//! allocation-free); the TLVs are walked to check that they tile the rest
//! of the header exactly, and are otherwise skipped. The whole header is
//! bounded by [`MAX_HEADER`].

use std::cell::Cell;
use std::net::{IpAddr, SocketAddr, SocketAddrV4, SocketAddrV6};

use ppp::v2;
use tern_cache::forward::Cidr;

/// The fixed part of a version 2 header: signature, version and command,
/// family and protocol, length.
pub(crate) const FIXED_LEN: usize = 16;

/// The longest header accepted, fixed part included. The address block is
/// at most 216 octets (two AF_UNIX paths), which leaves 792 for TLVs:
/// dnsdist sends none unless told to, haproxy's TLS TLVs take a few
/// hundred. A longer header is refused as malformed (a TCP connection
/// then never buffers more than this before its first query).
pub const MAX_HEADER: usize = 1024;

/// The protocol signature that starts every version 2 header.
const SIGNATURE: &[u8] = v2::PROTOCOL_PREFIX;

/// How a version 1 (text) header starts.
const VERSION_1: &[u8] = b"PROXY";

/// Why PROXY headers were refused, by [`Refusal::index`]:
/// `proxy_refused[slot]`.
pub const PROXY_REFUSALS: [&str; 4] = ["untrusted", "missing", "malformed", "unsupported"];

//----------- ProxyConfig ----------------------------------------------------

/// The PROXY protocol: where it is expected and from whom.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyConfig {
    /// Proxies whose headers are accepted; empty (the default): none, so
    /// a proxied listener drops everything.
    pub allow: Vec<Cidr>,
    /// Addresses served over UDP and TCP, like `listen`, where every
    /// datagram and connection must start with a header; empty (the
    /// default): none.
    pub listen: Vec<SocketAddr>,
}

impl ProxyConfig {
    /// Whether `ip` may send headers.
    pub fn allows(&self, ip: IpAddr) -> bool {
        allowed(&self.allow, ip)
    }
}

/// Whether `ip` is in one of `allow`'s prefixes (an IPv4-mapped IPv6
/// address as its IPv4 address).
pub(crate) fn allowed(allow: &[Cidr], ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    allow.iter().any(|prefix| prefix.contains(ip))
}

//----------- Refusal --------------------------------------------------------

/// Why a datagram or connection on a proxied listener was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Its source is not in `proxy.allow`.
    Untrusted,
    /// It does not start with a PROXY header.
    Missing,
    /// Its header is cut short, too long, or breaks the format.
    Malformed,
    /// A well-formed header that names no IP client: version 1 (text),
    /// or the PROXY command with AF_UNIX or unspecified addresses.
    Unsupported,
}

impl Refusal {
    /// Its slot in [`PROXY_REFUSALS`].
    pub fn index(self) -> usize {
        match self {
            Refusal::Untrusted => 0,
            Refusal::Missing => 1,
            Refusal::Malformed => 2,
            Refusal::Unsupported => 3,
        }
    }
}

//----------- Header ---------------------------------------------------------

/// A header accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// Its length: what follows is the DNS message (UDP) or stream (TCP).
    pub(crate) len: usize,
    /// The client it names; `None` for a LOCAL header (the proxy itself).
    pub(crate) client: Option<SocketAddr>,
}

/// What the start of a datagram or stream is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// A valid header.
    Header(Header),
    /// The start of a header that needs this many octets in all (at most
    /// [`MAX_HEADER`]); over UDP, a malformed header.
    Incomplete(usize),
    /// Not a header it accepts.
    Refused(Refusal),
}

/// Parses the PROXY header at the start of `input`. Bounded: the fixed
/// part and addresses are read once, and each TLV step moves on by at
/// least 3 of at most [`MAX_HEADER`] octets.
pub(crate) fn parse(input: &[u8]) -> Parsed {
    if input.starts_with(VERSION_1) {
        return Parsed::Refused(Refusal::Unsupported);
    }
    let signature = input.len().min(SIGNATURE.len());
    if input[..signature] != SIGNATURE[..signature] {
        return Parsed::Refused(Refusal::Missing);
    }
    let Some(fixed) = input.get(..FIXED_LEN) else {
        return Parsed::Incomplete(FIXED_LEN);
    };
    let total = FIXED_LEN + usize::from(u16::from_be_bytes([fixed[14], fixed[15]]));
    if total > MAX_HEADER {
        return Parsed::Refused(Refusal::Malformed);
    }
    let Some(bytes) = input.get(..total) else {
        return Parsed::Incomplete(total);
    };
    let Ok(header) = v2::Header::try_from(bytes) else {
        return Parsed::Refused(Refusal::Malformed);
    };
    if header.len() != total || header.tlvs().any(|tlv| tlv.is_err()) {
        return Parsed::Refused(Refusal::Malformed);
    }
    let client =
        match (header.command, header.addresses) {
            (v2::Command::Local, _) => None,
            (v2::Command::Proxy, v2::Addresses::IPv4(v4)) => Some(SocketAddr::V4(
                SocketAddrV4::new(v4.source_address, v4.source_port),
            )),
            (v2::Command::Proxy, v2::Addresses::IPv6(v6)) => Some(SocketAddr::V6(
                SocketAddrV6::new(v6.source_address, v6.source_port, 0, 0),
            )),
            (v2::Command::Proxy, v2::Addresses::Unix(_) | v2::Addresses::Unspecified) => {
                return Parsed::Refused(Refusal::Unsupported)
            }
        };
    Parsed::Header(Header { len: total, client })
}

/// The client and DNS message of a datagram that arrived from `source` on
/// a proxied listener, or why it is dropped.
pub(crate) fn datagram<'a>(
    allow: &[Cidr],
    source: Option<SocketAddr>,
    datagram: &'a [u8],
) -> Result<(SocketAddr, &'a [u8]), Refusal> {
    let source = source.ok_or(Refusal::Untrusted)?;
    if !allowed(allow, source.ip()) {
        return Err(Refusal::Untrusted);
    }
    match parse(datagram) {
        Parsed::Header(header) => {
            let message = datagram.get(header.len..).ok_or(Refusal::Malformed)?;
            Ok((header.client.unwrap_or(source), message))
        }
        // A datagram carries the whole header or none.
        Parsed::Incomplete(_) => Err(Refusal::Malformed),
        Parsed::Refused(refusal) => Err(refusal),
    }
}

//----------- ProxyCounters --------------------------------------------------

/// A core's counts of PROXY headers, touched only by the core.
#[derive(Debug, Default)]
pub(crate) struct ProxyCounters {
    /// Headers accepted (datagrams and connections).
    pub(crate) accepted: Cell<u64>,
    /// Datagrams and connections dropped, by [`Refusal::index`].
    pub(crate) refused: [Cell<u64>; 4],
}

impl ProxyCounters {
    /// Counts one header accepted.
    pub(crate) fn accept(&self) {
        self.accepted.set(self.accepted.get() + 1);
    }

    /// Counts one refusal.
    pub(crate) fn refuse(&self, refusal: Refusal) {
        let slot = &self.refused[refusal.index()];
        slot.set(slot.get() + 1);
    }

    /// The result of [`datagram`], counted.
    pub(crate) fn count<T>(&self, result: Result<T, Refusal>) -> Option<T> {
        match result {
            Ok(value) => {
                self.accept();
                Some(value)
            }
            Err(refusal) => {
                self.refuse(refusal);
                None
            }
        }
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 2 header: `command` (0 LOCAL, 1 PROXY), `family` byte
    /// (e.g. 0x12, UDP over IPv4), the address block and TLV bytes.
    fn header(command: u8, family: u8, addresses: &[u8], tlvs: &[u8]) -> Vec<u8> {
        let mut out = SIGNATURE.to_vec();
        out.push(0x20 | command);
        out.push(family);
        let len = (addresses.len() + tlvs.len()) as u16;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(addresses);
        out.extend_from_slice(tlvs);
        out
    }

    fn ipv4(source: [u8; 4], port: u16) -> Vec<u8> {
        let mut out = source.to_vec();
        out.extend_from_slice(&[127, 0, 0, 1]);
        out.extend_from_slice(&port.to_be_bytes());
        out.extend_from_slice(&53u16.to_be_bytes());
        out
    }

    fn allow() -> Vec<Cidr> {
        vec![Cidr::parse("127.0.0.1/32").unwrap()]
    }

    const PROXY: Option<SocketAddr> = Some(SocketAddr::V4(SocketAddrV4::new(
        std::net::Ipv4Addr::LOCALHOST,
        4000,
    )));

    #[test]
    fn ipv4_header_names_the_client_and_the_message_follows() {
        let mut input = header(1, 0x12, &ipv4([192, 0, 2, 7], 5353), &[]);
        let len = input.len();
        input.extend_from_slice(b"dns message");
        let client: SocketAddr = "192.0.2.7:5353".parse().unwrap();
        assert_eq!(
            parse(&input),
            Parsed::Header(Header {
                len,
                client: Some(client)
            })
        );
        assert_eq!(len, FIXED_LEN + 12);
        assert_eq!(
            datagram(&allow(), PROXY, &input),
            Ok((client, &b"dns message"[..]))
        );
    }

    #[test]
    fn ipv6_header_names_the_client() {
        let mut addresses = vec![0x20, 0x01, 0x0d, 0xb8];
        addresses.extend_from_slice(&[0; 11]);
        addresses.push(9);
        addresses.extend_from_slice(&[0; 15]);
        addresses.push(1);
        addresses.extend_from_slice(&[0x30, 0x39, 0, 53]);
        let input = header(1, 0x21, &addresses, &[]);
        let Parsed::Header(parsed) = parse(&input) else {
            panic!("{:?}", parse(&input));
        };
        assert_eq!(parsed.len, FIXED_LEN + 36);
        assert_eq!(parsed.client, Some("[2001:db8::9]:12345".parse().unwrap()));
    }

    #[test]
    fn local_makes_the_proxy_the_client() {
        // Addresses may follow a LOCAL command: skipped, not used.
        for input in [
            header(0, 0x00, &[], &[]),
            header(0, 0x12, &ipv4([192, 0, 2, 7], 1), &[]),
        ] {
            let Parsed::Header(parsed) = parse(&input) else {
                panic!("{:?}", parse(&input));
            };
            assert_eq!(parsed.client, None);
            let mut with_query = input.clone();
            with_query.extend_from_slice(b"query");
            assert_eq!(
                datagram(&allow(), PROXY, &with_query),
                Ok((PROXY.unwrap(), &b"query"[..]))
            );
        }
    }

    #[test]
    fn tlvs_are_skipped() {
        // NOOP (4) with 2 octets, then UNIQUE_ID (5) with 3, an empty ALPN.
        let tlvs = [4, 0, 2, 0xaa, 0xbb, 5, 0, 3, 1, 2, 3, 1, 0, 0];
        let mut input = header(1, 0x11, &ipv4([198, 51, 100, 1], 80), &tlvs);
        let len = input.len();
        input.extend_from_slice(b"rest");
        let Parsed::Header(parsed) = parse(&input) else {
            panic!("{:?}", parse(&input));
        };
        assert_eq!(parsed.len, len);
        assert_eq!(parsed.client, Some("198.51.100.1:80".parse().unwrap()));
    }

    #[test]
    fn malformed_tlvs_are_refused() {
        // A TLV whose length runs past the header, and two stray octets.
        for tlvs in [&[4, 0, 9, 1][..], &[4, 0, 0, 7, 7][..]] {
            let input = header(1, 0x12, &ipv4([192, 0, 2, 1], 1), tlvs);
            assert_eq!(parse(&input), Parsed::Refused(Refusal::Malformed));
        }
    }

    #[test]
    fn truncated_headers_are_incomplete_and_dropped_over_udp() {
        let input = header(1, 0x12, &ipv4([192, 0, 2, 1], 1), &[]);
        for cut in 1..input.len() {
            let expected = if cut < FIXED_LEN {
                FIXED_LEN
            } else {
                input.len()
            };
            assert_eq!(parse(&input[..cut]), Parsed::Incomplete(expected), "{cut}");
            assert_eq!(
                datagram(&allow(), PROXY, &input[..cut]),
                Err(Refusal::Malformed)
            );
        }
    }

    #[test]
    fn broken_fixed_parts_are_malformed() {
        let good = header(1, 0x12, &ipv4([192, 0, 2, 1], 1), &[]);
        // Version 1 in the binary format, command 2, family 4, protocol 3,
        // an address block shorter than its family's.
        for (at, byte) in [(12, 0x11), (12, 0x22), (13, 0x42), (13, 0x13), (15, 4)] {
            let mut input = good.clone();
            input[at] = byte;
            assert_eq!(
                parse(&input),
                Parsed::Refused(Refusal::Malformed),
                "{at}: {byte:#x}"
            );
        }
    }

    #[test]
    fn headers_past_the_limit_are_refused() {
        let tlv_len = MAX_HEADER - FIXED_LEN - 12 - 3;
        let mut tlvs = vec![4, (tlv_len >> 8) as u8, tlv_len as u8];
        tlvs.resize(3 + tlv_len, 0);
        let at_limit = header(1, 0x12, &ipv4([192, 0, 2, 1], 1), &tlvs);
        assert_eq!(at_limit.len(), MAX_HEADER);
        assert!(matches!(parse(&at_limit), Parsed::Header(_)));
        let tlv_len = tlv_len + 1;
        tlvs = vec![4, (tlv_len >> 8) as u8, tlv_len as u8];
        tlvs.resize(3 + tlv_len, 0);
        let past = header(1, 0x12, &ipv4([192, 0, 2, 1], 1), &tlvs);
        // Refused from its fixed part alone: a stream never waits for it.
        assert_eq!(
            parse(&past[..FIXED_LEN]),
            Parsed::Refused(Refusal::Malformed)
        );
        assert_eq!(parse(&past), Parsed::Refused(Refusal::Malformed));
    }

    #[test]
    fn version_1_unix_and_unspecified_are_unsupported() {
        let text = b"PROXY TCP4 192.0.2.1 127.0.0.1 1234 53\r\n";
        assert_eq!(parse(text), Parsed::Refused(Refusal::Unsupported));
        let unix = header(1, 0x31, &[0; 216], &[]);
        assert_eq!(parse(&unix), Parsed::Refused(Refusal::Unsupported));
        let unspecified = header(1, 0x00, &[], &[]);
        assert_eq!(parse(&unspecified), Parsed::Refused(Refusal::Unsupported));
    }

    #[test]
    fn plain_dns_is_missing_a_header() {
        let query = tern_wire_query();
        assert_eq!(parse(&query), Parsed::Refused(Refusal::Missing));
        assert_eq!(datagram(&allow(), PROXY, &query), Err(Refusal::Missing));
        assert_eq!(parse(&[]), Parsed::Incomplete(FIXED_LEN));
    }

    #[test]
    fn sources_outside_the_allow_list_are_untrusted() {
        let input = header(1, 0x12, &ipv4([192, 0, 2, 1], 1), &[]);
        let stranger = Some("127.0.0.9:4000".parse().unwrap());
        assert_eq!(
            datagram(&allow(), stranger, &input),
            Err(Refusal::Untrusted)
        );
        assert_eq!(datagram(&[], PROXY, &input), Err(Refusal::Untrusted));
        assert_eq!(datagram(&allow(), None, &input), Err(Refusal::Untrusted));
        // An IPv4-mapped source is its IPv4 address.
        let mapped = Some("[::ffff:127.0.0.1]:4000".parse().unwrap());
        assert!(datagram(&allow(), mapped, &input).is_ok());
    }

    #[test]
    fn counters_count_by_reason() {
        let counters = ProxyCounters::default();
        assert_eq!(counters.count(Ok::<_, Refusal>(1)), Some(1));
        assert_eq!(counters.count::<()>(Err(Refusal::Malformed)), None);
        assert_eq!(counters.accepted.get(), 1);
        assert_eq!(counters.refused[Refusal::Malformed.index()].get(), 1);
        assert_eq!(PROXY_REFUSALS[Refusal::Malformed.index()], "malformed");
    }

    /// A DNS query for example.com A: 12 octets of header, then the
    /// question (no PROXY signature starts like that).
    fn tern_wire_query() -> Vec<u8> {
        let mut query = vec![0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        query.extend_from_slice(b"\x07example\x03com\x00\x00\x01\x00\x01");
        query
    }
}
