//! Ethernet frames carrying UDP: the AF_XDP path's parser and builder.
//!
//! The AF_XDP path (tern-server's `xdp` module, issue 12) receives whole
//! frames, not datagrams: the kernel's IP and UDP code never saw them, so
//! everything that code checks is checked here, against a frame an attacker
//! may have built byte by byte. [`parse`] accepts exactly one shape and
//! says why it refused anything else ([`Refusal`]); the serving loop drops
//! refused frames and counts them by reason (a refused frame is never
//! answered, as the kernel would drop it too):
//!
//! ```text
//!   Ethernet (14) [802.1Q or 802.1ad tag (4)]
//!     IPv4 (20, no options, not a fragment) | IPv6 (40, next header UDP)
//!       UDP (8) | DNS message
//! ```
//!
//! | check | refusal |
//! |---|---|
//! | the frame ends inside a header | `Short` |
//! | a multicast or broadcast Ethernet source or destination, a second VLAN tag, not IP | `Link` |
//! | IPv4 version/IHL not 4/5 (options), a fragment, not UDP; IPv6 next header not UDP | `IpHeader` |
//! | IP total/payload length beyond the frame or below the UDP header | `IpLength` |
//! | UDP length below 8 or beyond the IP payload | `UdpLength` |
//! | a bad IPv4 header checksum, a bad UDP checksum (see below), an IPv6 UDP checksum of 0 | `Checksum` |
//! | source unspecified, loopback, multicast, broadcast, reserved, IPv4-mapped, equal to the destination; source port 0 | `Source` |
//! | destination as the source may not be (but equal); destination port 0 | `Destination` |
//!
//! Ethernet padding after the IP packet and octets after the UDP length are
//! ignored, as the kernel does (it trims to the IP and then the UDP length).
//! A UDP checksum holding only the pseudo-header's sum is accepted: that is
//! what a Linux sender with checksum offload writes for the device to
//! complete, and a frame from a veth peer (another namespace, a container)
//! arrives so, with no device on the way to complete it (the kernel marks
//! such packets and does not check them either). A checksum protects
//! against corruption, not against forgery, so this admits nothing an
//! attacker could not send with a correct checksum.
//! IPv4 options, fragments and IPv6 extension headers never reach here in
//! normal operation: tern's XDP program passes them to the kernel, whose
//! sockets answer them; `IpHeader` is the fallback if one does.
//!
//! [`Datagram::write_reply`] then writes the headers of the answer in front
//! of a payload already written at [`Datagram::reply_header_len`]: the
//! Ethernet addresses, IP addresses and ports swapped, the VLAN tag kept,
//! TTL/hop limit 64, and both checksums computed. A query, byte by byte:
//!
//! ```
//! use tern_wire::frame::{parse, Refusal};
//! let mut frame = vec![
//!     2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00,      // Ethernet: to, from, IPv4
//!     0x45, 0, 0, 29, 0, 0, 0x40, 0, 64, 17, 0, 0,          // IPv4: 29 octets, DF, TTL 64, UDP
//!     198, 51, 100, 2, 198, 51, 100, 1,                     // from 198.51.100.2 to .1
//!     0x30, 0x39, 0, 53, 0, 9, 0, 0,                        // UDP: 12345 to 53, 9 octets, no checksum
//!     0xAB,                                                 // one octet of payload
//! ];
//! // Without its header checksum the packet is refused...
//! assert_eq!(parse(&frame).unwrap_err(), Refusal::Checksum);
//! // ...with it, accepted.
//! frame[24..26].copy_from_slice(&[0xE6, 0x65]);
//! let datagram = parse(&frame).unwrap();
//! assert_eq!(&frame[datagram.payload()], &[0xAB]);
//! assert_eq!(datagram.source().to_string(), "198.51.100.2:12345");
//! ```

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use core::ops::Range;

/// An Ethernet header: two addresses and the EtherType.
pub const ETHERNET_LEN: usize = 14;

/// An 802.1Q or 802.1ad tag: its TCI and the inner EtherType.
pub const VLAN_LEN: usize = 4;

/// An IPv4 header without options.
pub const IPV4_LEN: usize = 20;

/// The fixed IPv6 header.
pub const IPV6_LEN: usize = 40;

/// A UDP header.
pub const UDP_LEN: usize = 8;

/// The longest headers a reply carries: Ethernet, a VLAN tag, IPv6, UDP.
pub const MAX_HEADERS_LEN: usize = ETHERNET_LEN + VLAN_LEN + IPV6_LEN + UDP_LEN;

/// The TTL (IPv4) or hop limit (IPv6) of a reply (Linux's default).
pub const REPLY_TTL: u8 = 64;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const ETHERTYPE_8021Q: u16 = 0x8100;
const ETHERTYPE_8021AD: u16 = 0x88A8;
const PROTOCOL_UDP: u8 = 17;

/// The IPv4 flags and fragment offset that mark a fragment: MF and the
/// 13-bit offset (DF may be set).
const FRAGMENT_BITS: u16 = 0x3FFF;

/// IPv4 "don't fragment", set in replies: they fit the interface's MTU.
const DONT_FRAGMENT: u16 = 0x4000;

//----------- Refusal --------------------------------------------------------

/// Why a frame is not a query to answer (see the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The frame ends inside a header.
    Short,
    /// A multicast or broadcast Ethernet address, two VLAN tags, or a
    /// frame that is not IP.
    Link,
    /// An IP header tern does not take here: not version 4 with IHL 5 or
    /// version 6, a fragment, or a protocol other than UDP.
    IpHeader,
    /// An IP length beyond the frame or too short for a UDP header.
    IpLength,
    /// A UDP length below 8 or beyond the IP payload.
    UdpLength,
    /// A bad IPv4 header or UDP checksum.
    Checksum,
    /// A source no answer may go to: unspecified, loopback, multicast,
    /// broadcast, reserved, IPv4-mapped, the destination itself, or port 0.
    Source,
    /// A destination no query may arrive at: unspecified, loopback,
    /// multicast, broadcast, reserved, IPv4-mapped, or port 0.
    Destination,
}

impl Refusal {
    /// Every refusal, in the order of [`Refusal::index`].
    pub const ALL: [Refusal; 8] = [
        Refusal::Short,
        Refusal::Link,
        Refusal::IpHeader,
        Refusal::IpLength,
        Refusal::UdpLength,
        Refusal::Checksum,
        Refusal::Source,
        Refusal::Destination,
    ];

    /// The refusal's position in [`Refusal::ALL`] (a counter's index).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The refusal's name in metrics (`reason="..."`).
    pub const fn name(self) -> &'static str {
        match self {
            Refusal::Short => "short",
            Refusal::Link => "link",
            Refusal::IpHeader => "ip_header",
            Refusal::IpLength => "ip_length",
            Refusal::UdpLength => "udp_length",
            Refusal::Checksum => "checksum",
            Refusal::Source => "source",
            Refusal::Destination => "destination",
        }
    }
}

//----------- Datagram -------------------------------------------------------

/// The IP addresses of a datagram, by family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addresses {
    /// IPv4 source and destination.
    V4 {
        /// The client.
        source: [u8; 4],
        /// Ours.
        destination: [u8; 4],
    },
    /// IPv6 source and destination.
    V6 {
        /// The client.
        source: [u8; 16],
        /// Ours.
        destination: [u8; 16],
    },
}

/// A UDP datagram found in a frame by [`parse`]: what a reply needs, and
/// where the payload is. Plain values: the frame can be reused at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Datagram {
    /// The frame's Ethernet destination (ours) and source (the next hop).
    link_destination: [u8; 6],
    link_source: [u8; 6],
    /// The VLAN tag's EtherType (TPID) and TCI, when tagged.
    vlan: Option<(u16, u16)>,
    addresses: Addresses,
    source_port: u16,
    destination_port: u16,
    /// The UDP payload's offset and length in the frame.
    payload_start: usize,
    payload_len: usize,
}

impl Datagram {
    /// The payload's place in the frame it was parsed from.
    pub fn payload(&self) -> Range<usize> {
        self.payload_start..self.payload_start + self.payload_len
    }

    /// The client's address and port.
    pub fn source(&self) -> SocketAddr {
        match self.addresses {
            Addresses::V4 { source, .. } => {
                SocketAddr::new(IpAddr::V4(Ipv4Addr::from(source)), self.source_port)
            }
            Addresses::V6 { source, .. } => {
                SocketAddr::new(IpAddr::V6(Ipv6Addr::from(source)), self.source_port)
            }
        }
    }

    /// The address and port the query was sent to (one of ours).
    pub fn destination(&self) -> SocketAddr {
        match self.addresses {
            Addresses::V4 { destination, .. } => SocketAddr::new(
                IpAddr::V4(Ipv4Addr::from(destination)),
                self.destination_port,
            ),
            Addresses::V6 { destination, .. } => SocketAddr::new(
                IpAddr::V6(Ipv6Addr::from(destination)),
                self.destination_port,
            ),
        }
    }

    /// The Ethernet address the frame was sent to.
    pub fn link_destination(&self) -> [u8; 6] {
        self.link_destination
    }

    /// Whether the datagram came over IPv6.
    pub fn is_ipv6(&self) -> bool {
        matches!(self.addresses, Addresses::V6 { .. })
    }

    /// The octets of the reply's headers: the reply's payload goes at this
    /// offset of its frame.
    pub fn reply_header_len(&self) -> usize {
        let network = match self.addresses {
            Addresses::V4 { .. } => IPV4_LEN,
            Addresses::V6 { .. } => IPV6_LEN,
        };
        ETHERNET_LEN + self.vlan.map_or(0, |_| VLAN_LEN) + network + UDP_LEN
    }

    /// Writes the reply's headers into `frame`, whose payload (`payload_len`
    /// octets at [`Datagram::reply_header_len`]) is already written, and
    /// returns the frame's length; `None` if `frame` is too short or the
    /// payload too long for a UDP datagram.
    pub fn write_reply(&self, frame: &mut [u8], payload_len: usize) -> Option<usize> {
        let header_len = self.reply_header_len();
        let total = header_len.checked_add(payload_len)?;
        let udp_len = u16::try_from(UDP_LEN + payload_len).ok()?;
        if frame.len() < total {
            return None;
        }
        let frame = &mut frame[..total];
        frame[0..6].copy_from_slice(&self.link_source);
        frame[6..12].copy_from_slice(&self.link_destination);
        let mut at = 12;
        if let Some((tpid, tci)) = self.vlan {
            put16(frame, at, tpid);
            put16(frame, at + 2, tci);
            at += VLAN_LEN;
        }
        let udp_at;
        // The pseudo-header's sum (RFC 768, RFC 8200 section 8.1).
        let mut sum;
        match self.addresses {
            Addresses::V4 {
                source,
                destination,
            } => {
                put16(frame, at, ETHERTYPE_IPV4);
                let ip = at + 2;
                let ip_len = u16::try_from(IPV4_LEN + usize::from(udp_len)).ok()?;
                frame[ip] = 0x45;
                frame[ip + 1] = 0;
                put16(frame, ip + 2, ip_len);
                put16(frame, ip + 4, 0);
                put16(frame, ip + 6, DONT_FRAGMENT);
                frame[ip + 8] = REPLY_TTL;
                frame[ip + 9] = PROTOCOL_UDP;
                put16(frame, ip + 10, 0);
                frame[ip + 12..ip + 16].copy_from_slice(&destination);
                frame[ip + 16..ip + 20].copy_from_slice(&source);
                let header_sum = finish(add(0, &frame[ip..ip + IPV4_LEN]));
                put16(frame, ip + 10, header_sum);
                sum = add(0, &frame[ip + 12..ip + 20]);
                udp_at = ip + IPV4_LEN;
            }
            Addresses::V6 {
                source,
                destination,
            } => {
                put16(frame, at, ETHERTYPE_IPV6);
                let ip = at + 2;
                frame[ip..ip + 4].copy_from_slice(&[0x60, 0, 0, 0]);
                put16(frame, ip + 4, udp_len);
                frame[ip + 6] = PROTOCOL_UDP;
                frame[ip + 7] = REPLY_TTL;
                frame[ip + 8..ip + 24].copy_from_slice(&destination);
                frame[ip + 24..ip + 40].copy_from_slice(&source);
                sum = add(0, &frame[ip + 8..ip + 40]);
                udp_at = ip + IPV6_LEN;
            }
        }
        sum += u64::from(PROTOCOL_UDP) + u64::from(udp_len);
        put16(frame, udp_at, self.destination_port);
        put16(frame, udp_at + 2, self.source_port);
        put16(frame, udp_at + 4, udp_len);
        put16(frame, udp_at + 6, 0);
        let checksum = match finish(add(sum, &frame[udp_at..])) {
            // A computed 0 is sent as all ones (RFC 768; 0 means "none").
            0 => 0xFFFF,
            checksum => checksum,
        };
        put16(frame, udp_at + 6, checksum);
        Some(total)
    }
}

//----------- parse ----------------------------------------------------------

/// Finds the UDP datagram in `frame`, checking every header as the module
/// describes; any other frame is refused with the reason.
pub fn parse(frame: &[u8]) -> Result<Datagram, Refusal> {
    if frame.len() < ETHERNET_LEN {
        return Err(Refusal::Short);
    }
    let link_destination: [u8; 6] = array(frame, 0);
    let link_source: [u8; 6] = array(frame, 6);
    // The group bit: multicast and broadcast addresses.
    if link_destination[0] & 1 != 0 || link_source[0] & 1 != 0 {
        return Err(Refusal::Link);
    }
    let mut ethertype = get16(frame, 12);
    let mut at = ETHERNET_LEN;
    let mut vlan = None;
    if ethertype == ETHERTYPE_8021Q || ethertype == ETHERTYPE_8021AD {
        if frame.len() < at + VLAN_LEN {
            return Err(Refusal::Short);
        }
        vlan = Some((ethertype, get16(frame, at)));
        ethertype = get16(frame, at + 2);
        at += VLAN_LEN;
        if ethertype == ETHERTYPE_8021Q || ethertype == ETHERTYPE_8021AD {
            return Err(Refusal::Link);
        }
    }
    let (addresses, udp_at, udp_room, pseudo) = match ethertype {
        ETHERTYPE_IPV4 => ipv4(frame, at)?,
        ETHERTYPE_IPV6 => ipv6(frame, at)?,
        _ => return Err(Refusal::Link),
    };
    // `udp_room`: the IP payload, which the IP layer found inside the frame.
    if udp_room < UDP_LEN {
        return Err(Refusal::IpLength);
    }
    let source_port = get16(frame, udp_at);
    let destination_port = get16(frame, udp_at + 2);
    let udp_len = usize::from(get16(frame, udp_at + 4));
    let checksum = get16(frame, udp_at + 6);
    if udp_len < UDP_LEN || udp_len > udp_room {
        return Err(Refusal::UdpLength);
    }
    let udp = &frame[udp_at..udp_at + udp_len];
    let pseudo = pseudo + udp_len as u64;
    let checked = match addresses {
        // IPv4 may leave the checksum out (RFC 768); IPv6 may not (RFC 8200
        // section 8.1: a zero checksum is discarded).
        Addresses::V4 { .. } if checksum == 0 => true,
        Addresses::V6 { .. } if checksum == 0 => false,
        // What a Linux sender with checksum offload leaves for the device
        // to complete (the pseudo-header's sum): frames from a veth peer
        // (a container, another namespace) arrive so, no device having
        // completed it. Accepted as the kernel accepts them; a checksum
        // guards against corruption, not forgery.
        _ if checksum == !finish(pseudo) => true,
        _ => finish(add(pseudo, udp)) == 0,
    };
    if !checked {
        return Err(Refusal::Checksum);
    }
    if source_port == 0 {
        return Err(Refusal::Source);
    }
    if destination_port == 0 {
        return Err(Refusal::Destination);
    }
    Ok(Datagram {
        link_destination,
        link_source,
        vlan,
        addresses,
        source_port,
        destination_port,
        payload_start: udp_at + UDP_LEN,
        payload_len: udp_len - UDP_LEN,
    })
}

/// The IPv4 header at `at`: the addresses, where UDP starts, the octets
/// the IP packet gives it, and the pseudo-header's partial sum (without
/// the UDP length).
fn ipv4(frame: &[u8], at: usize) -> Result<(Addresses, usize, usize, u64), Refusal> {
    if frame.len() < at + IPV4_LEN {
        return Err(Refusal::Short);
    }
    let header = &frame[at..at + IPV4_LEN];
    if header[0] != 0x45 || get16(header, 6) & FRAGMENT_BITS != 0 || header[9] != PROTOCOL_UDP {
        return Err(Refusal::IpHeader);
    }
    let total = usize::from(get16(header, 2));
    if total < IPV4_LEN || at + total > frame.len() {
        return Err(Refusal::IpLength);
    }
    if finish(add(0, header)) != 0 {
        return Err(Refusal::Checksum);
    }
    let source: [u8; 4] = array(header, 12);
    let destination: [u8; 4] = array(header, 16);
    let usable = |address: [u8; 4]| {
        // 0/8 (this network), 127/8 (loopback), 224/4 (multicast) and
        // 240/4 (reserved, with the limited broadcast) are never a
        // unicast host on the wire, at either end.
        !matches!(address[0], 0 | 127 | 224..=255)
    };
    if !usable(source) || source == destination {
        return Err(Refusal::Source);
    }
    if !usable(destination) {
        return Err(Refusal::Destination);
    }
    let pseudo = add(u64::from(PROTOCOL_UDP), &header[12..20]);
    Ok((
        Addresses::V4 {
            source,
            destination,
        },
        at + IPV4_LEN,
        total - IPV4_LEN,
        pseudo,
    ))
}

/// The IPv6 header at `at`, as [`ipv4`].
fn ipv6(frame: &[u8], at: usize) -> Result<(Addresses, usize, usize, u64), Refusal> {
    if frame.len() < at + IPV6_LEN {
        return Err(Refusal::Short);
    }
    let header = &frame[at..at + IPV6_LEN];
    if header[0] >> 4 != 6 || header[6] != PROTOCOL_UDP {
        return Err(Refusal::IpHeader);
    }
    let payload = usize::from(get16(header, 4));
    if at + IPV6_LEN + payload > frame.len() {
        return Err(Refusal::IpLength);
    }
    let source: [u8; 16] = array(header, 8);
    let destination: [u8; 16] = array(header, 24);
    let usable = |address: [u8; 16]| {
        let ip = Ipv6Addr::from(address);
        let mapped = address[..12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF];
        !(ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() || mapped)
    };
    if !usable(source) || source == destination {
        return Err(Refusal::Source);
    }
    if !usable(destination) {
        return Err(Refusal::Destination);
    }
    let pseudo = add(u64::from(PROTOCOL_UDP), &header[8..40]);
    Ok((
        Addresses::V6 {
            source,
            destination,
        },
        at + IPV6_LEN,
        payload,
        pseudo,
    ))
}

//----------- Checksums and fields -------------------------------------------

/// Adds `bytes` to a ones'-complement sum as big-endian 16-bit words (an
/// odd last octet padded with zero), four octets at a time: the carries
/// collect in the upper half of the 64-bit sum and [`finish`] folds them
/// back (RFC 1071 section 2).
pub fn add(mut sum: u64, bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(4);
    for word in &mut words {
        sum += u64::from(u32::from_be_bytes([word[0], word[1], word[2], word[3]]));
    }
    let rest = words.remainder();
    let mut last = [0u8; 4];
    last[..rest.len()].copy_from_slice(rest);
    sum + u64::from(u32::from_be_bytes(last))
}

/// Folds a sum from [`add`] to 16 bits and complements it: the checksum
/// to write, or 0 when checking a sum that includes a correct checksum.
pub fn finish(mut sum: u64) -> u16 {
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

fn get16(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

fn put16(bytes: &mut [u8], at: usize, value: u16) {
    bytes[at..at + 2].copy_from_slice(&value.to_be_bytes());
}

/// `N` octets of `bytes` from `at`; the caller checked the length.
fn array<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
    const SERVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

    /// A well-formed query frame: IPv4 or IPv6, optionally tagged.
    fn query(v6: bool, vlan: bool, payload: &[u8]) -> Vec<u8> {
        let datagram = Datagram {
            link_destination: CLIENT_MAC,
            link_source: SERVER_MAC,
            vlan: vlan.then_some((ETHERTYPE_8021Q, 7)),
            addresses: if v6 {
                Addresses::V6 {
                    source: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).octets(),
                    destination: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2).octets(),
                }
            } else {
                Addresses::V4 {
                    source: [198, 51, 100, 1],
                    destination: [198, 51, 100, 2],
                }
            },
            source_port: 53,
            destination_port: 40000,
            payload_start: 0,
            payload_len: 0,
        };
        // A reply of the server is a query from the client, swapped.
        let mut frame = vec![0; datagram.reply_header_len() + payload.len()];
        frame[datagram.reply_header_len()..].copy_from_slice(payload);
        let len = datagram.write_reply(&mut frame, payload.len()).unwrap();
        frame.truncate(len);
        frame
    }

    #[test]
    fn round_trip_of_every_shape() {
        for v6 in [false, true] {
            for vlan in [false, true] {
                let payload = b"\x12\x34query";
                let frame = query(v6, vlan, payload);
                let datagram = parse(&frame).unwrap();
                assert_eq!(&frame[datagram.payload()], payload);
                assert_eq!(datagram.source().port(), 40000);
                assert_eq!(datagram.destination().port(), 53);
                assert_eq!(datagram.is_ipv6(), v6);
                // The reply parses as a datagram back to the client.
                let mut reply = vec![0; 200];
                let at = datagram.reply_header_len();
                reply[at..at + 3].copy_from_slice(b"ans");
                let len = datagram.write_reply(&mut reply, 3).unwrap();
                let back = parse(&reply[..len]).unwrap();
                assert_eq!(back.source(), datagram.destination());
                assert_eq!(back.destination(), datagram.source());
                assert_eq!(&reply[back.payload()], b"ans");
                assert_eq!(back.vlan, datagram.vlan);
                assert_eq!(&reply[0..6], &CLIENT_MAC);
            }
        }
    }

    #[test]
    fn odd_payloads_and_padding() {
        for len in 0..9 {
            let payload: Vec<u8> = (0..len as u8).collect();
            let mut frame = query(false, false, &payload);
            // Ethernet padding after the packet is ignored.
            frame.extend_from_slice(&[0xEE; 11]);
            assert_eq!(&frame[parse(&frame).unwrap().payload()], &payload[..]);
            let frame = query(true, true, &payload);
            assert_eq!(&frame[parse(&frame).unwrap().payload()], &payload[..]);
        }
    }

    /// Recomputes the IPv4 header checksum of an untagged frame.
    fn fix_ipv4(frame: &mut [u8]) {
        put16(frame, 24, 0);
        let sum = finish(add(0, &frame[14..34]));
        put16(frame, 24, sum);
    }

    #[test]
    fn hostile_frames_are_refused_with_their_reason() {
        let good = query(false, false, b"payload");
        for cut in 0..34 {
            assert_eq!(
                parse(&good[..cut]).unwrap_err(),
                Refusal::Short,
                "cut {cut}"
            );
        }
        let case = |change: &dyn Fn(&mut Vec<u8>), fix: bool| {
            let mut frame = good.clone();
            change(&mut frame);
            if fix {
                fix_ipv4(&mut frame);
            }
            parse(&frame).unwrap_err()
        };
        assert_eq!(case(&|f| f[0] = 0xFF, false), Refusal::Link);
        assert_eq!(case(&|f| f[6] |= 1, false), Refusal::Link);
        assert_eq!(case(&|f| put16(f, 12, 0x0806), false), Refusal::Link);
        assert_eq!(case(&|f| f[14] = 0x46, true), Refusal::IpHeader);
        assert_eq!(case(&|f| f[14] = 0x44, true), Refusal::IpHeader);
        assert_eq!(case(&|f| f[14] = 0x4F, true), Refusal::IpHeader);
        assert_eq!(case(&|f| put16(f, 20, 0x2000), true), Refusal::IpHeader);
        assert_eq!(case(&|f| put16(f, 20, 0x0001), true), Refusal::IpHeader);
        assert_eq!(case(&|f| f[23] = 6, true), Refusal::IpHeader);
        assert_eq!(case(&|f| put16(f, 16, 5000), true), Refusal::IpLength);
        assert_eq!(case(&|f| put16(f, 16, 19), true), Refusal::IpLength);
        assert_eq!(case(&|f| put16(f, 16, 24), true), Refusal::IpLength);
        assert_eq!(case(&|f| put16(f, 38, 200), false), Refusal::UdpLength);
        assert_eq!(case(&|f| put16(f, 38, 7), false), Refusal::UdpLength);
        assert_eq!(case(&|f| f[22] = 1, false), Refusal::Checksum);
        assert_eq!(case(&|f| f[44] ^= 1, false), Refusal::Checksum);
        assert_eq!(case(&|f| f[26] = 224, true), Refusal::Source);
        assert_eq!(case(&|f| f[26..30].fill(255), true), Refusal::Source);
        assert_eq!(case(&|f| f[26..30].fill(0), true), Refusal::Source);
        assert_eq!(case(&|f| f[26] = 127, true), Refusal::Source);
        assert_eq!(case(&|f| f.copy_within(30..34, 26), true), Refusal::Source);
        assert_eq!(case(&|f| f[30..34].fill(255), true), Refusal::Destination);
        assert_eq!(case(&|f| f[30] = 127, true), Refusal::Destination);
        assert_eq!(case(&|f| f[30] = 0, true), Refusal::Destination);
        // Source port 0: the UDP checksum is recomputed by zeroing it.
        assert_eq!(
            case(
                &|f| {
                    put16(f, 34, 0);
                    put16(f, 40, 0);
                },
                false
            ),
            Refusal::Source
        );
        // Destination port 0 (a reply would come from port 0; found by
        // the fuzzer's round trip).
        assert_eq!(
            case(
                &|f| {
                    put16(f, 36, 0);
                    put16(f, 40, 0);
                },
                false
            ),
            Refusal::Destination
        );
        // A shorter UDP length than the IP payload is trimmed, as by the
        // kernel: the payload ends where UDP says (checksum left out).
        let mut frame = good.clone();
        put16(&mut frame, 38, 10);
        put16(&mut frame, 40, 0);
        assert_eq!(&frame[parse(&frame).unwrap().payload()], b"pa");
        // A checksum left for offload (the pseudo-header's sum) passes.
        let mut frame = good.clone();
        let pseudo = add(u64::from(PROTOCOL_UDP) + 15, &frame[26..34]);
        put16(&mut frame, 40, !finish(pseudo));
        assert!(parse(&frame).is_ok());
        put16(&mut frame, 40, !finish(pseudo) ^ 0x0100);
        assert_eq!(parse(&frame).unwrap_err(), Refusal::Checksum);
    }

    #[test]
    fn ipv6_zero_checksum_and_extension_headers_are_refused() {
        let good = query(true, false, b"payload");
        let mut frame = good.clone();
        put16(&mut frame, 14 + 40 + 6, 0);
        assert_eq!(parse(&frame).unwrap_err(), Refusal::Checksum);
        let mut frame = good.clone();
        frame[14 + 6] = 0; // hop-by-hop options
        assert_eq!(parse(&frame).unwrap_err(), Refusal::IpHeader);
        let mut frame = good.clone();
        frame[14 + 8] = 0xFF; // multicast source
        assert_eq!(parse(&frame).unwrap_err(), Refusal::Source);
        // A loopback destination (found by the fuzzer's round trip).
        let mut frame = good.clone();
        frame[14 + 24..14 + 40].copy_from_slice(&Ipv6Addr::LOCALHOST.octets());
        assert_eq!(parse(&frame).unwrap_err(), Refusal::Destination);
        let mut frame = good;
        put16(&mut frame, 14 + 4, 900);
        assert_eq!(parse(&frame).unwrap_err(), Refusal::IpLength);
    }

    #[test]
    fn checksum_matches_rfc_1071_example() {
        // RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
        let sum = add(0, &[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]);
        assert_eq!(!finish(sum), 0xddf2);
    }

    #[test]
    fn reply_refuses_short_frames_and_huge_payloads() {
        let frame = query(false, false, b"x");
        let datagram = parse(&frame).unwrap();
        let mut small = [0u8; 30];
        assert_eq!(datagram.write_reply(&mut small, 10), None);
        let mut big = vec![0u8; 70000];
        assert_eq!(datagram.write_reply(&mut big, 65530), None);
    }
}
