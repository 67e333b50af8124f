//! One logged message as a core hands it to the writer (a [`Record`]:
//! raw, not encoded), and its encoding by the writer into a dnstap
//! protobuf inside one Frame Streams data frame.

use std::net::SocketAddr;
use std::time::Duration;

use prost::Message as _;

use crate::proto::{DnstapFrame, FAMILY_INET, FAMILY_INET6, PROTOCOL_TCP, PROTOCOL_UDP};
use crate::Kind;

/// A record's message capacity: the longest UDP query a core reads
/// (`MAX_UDP_QUERY` in tern-server's cores.rs), and any UDP answer with
/// `udp-size` up to 4096 (the AF_XDP path's answers are smaller still:
/// they fit the MTU). No such query or answer ever grows a record; a
/// longer message (a TCP answer, or a UDP answer with `udp-size` above
/// 4096) does, allocating on the core, and the writer gives the record
/// back at this size.
pub(crate) const RECORD_CAPACITY: usize = 4096;

/// One logged message, as a core hands it to the writer: raw, not
/// encoded.
#[derive(Debug)]
pub(crate) struct Record {
    /// What the message is.
    pub(crate) kind: Kind,
    /// Whether it came or went over TCP.
    pub(crate) tcp: bool,
    /// The initiator's address (the client; tern for FORWARDER_*).
    pub(crate) query_address: SocketAddr,
    /// The responder's address.
    pub(crate) response_address: SocketAddr,
    /// Since the epoch: when the message was received or sent.
    pub(crate) time: Duration,
    /// The message, as on the wire.
    pub(crate) message: Vec<u8>,
}

impl Record {
    /// A record holding messages of up to `capacity` octets unchanged.
    pub(crate) fn new(capacity: usize) -> Record {
        let unspecified = SocketAddr::from(([0, 0, 0, 0], 0));
        Record {
            kind: Kind::AuthQuery,
            tcp: false,
            query_address: unspecified,
            response_address: unspecified,
            time: Duration::ZERO,
            message: Vec::with_capacity(capacity),
        }
    }
}

/// Fills `frame` for `record`, reusing its buffers (`frame.message` must
/// be set); the record's message is moved in and must be taken back with
/// [`take_message`].
fn fill(frame: &mut DnstapFrame, record: &mut Record) {
    let Some(message) = frame.message.as_mut() else {
        return;
    };
    message.r#type = record.kind as i32;
    let ipv6 = record.query_address.ip().to_canonical().is_ipv6()
        || record.response_address.ip().to_canonical().is_ipv6();
    message.socket_family = Some(if ipv6 { FAMILY_INET6 } else { FAMILY_INET });
    message.socket_protocol = Some(if record.tcp {
        PROTOCOL_TCP
    } else {
        PROTOCOL_UDP
    });
    set_address(&mut message.query_address, record.query_address, ipv6);
    set_address(&mut message.response_address, record.response_address, ipv6);
    message.query_port = Some(u32::from(record.query_address.port()));
    message.response_port = Some(u32::from(record.response_address.port()));
    let seconds = Some(record.time.as_secs());
    let nanos = Some(record.time.subsec_nanos());
    let body = Some(std::mem::take(&mut record.message));
    if record.kind.is_query() {
        (message.query_time_sec, message.query_time_nsec) = (seconds, nanos);
        (message.response_time_sec, message.response_time_nsec) = (None, None);
        message.query_message = body;
        message.response_message = None;
    } else {
        // An authoritative answer is made when its query arrives: both
        // times are known (Knot sets both too).
        if record.kind == Kind::AuthResponse {
            (message.query_time_sec, message.query_time_nsec) = (seconds, nanos);
        } else {
            (message.query_time_sec, message.query_time_nsec) = (None, None);
        }
        (message.response_time_sec, message.response_time_nsec) = (seconds, nanos);
        message.query_message = None;
        message.response_message = body;
    }
}

/// Gives the record its message back after encoding.
fn take_message(frame: &mut DnstapFrame, record: &mut Record) {
    if let Some(message) = frame.message.as_mut() {
        let body = message
            .query_message
            .take()
            .or_else(|| message.response_message.take());
        if let Some(body) = body {
            record.message = body;
        }
    }
}

/// Sets an address field: 4 octets for IPv4, 16 for IPv6 (an IPv4 address
/// in a message whose other address is IPv6 is written mapped, so both
/// have the family's length).
fn set_address(field: &mut Option<Vec<u8>>, address: SocketAddr, ipv6: bool) {
    let bytes = field.get_or_insert_with(Vec::new);
    bytes.clear();
    match address.ip().to_canonical() {
        std::net::IpAddr::V4(ip) if !ipv6 => bytes.extend_from_slice(&ip.octets()),
        std::net::IpAddr::V4(ip) => bytes.extend_from_slice(&ip.to_ipv6_mapped().octets()),
        std::net::IpAddr::V6(ip) => bytes.extend_from_slice(&ip.octets()),
    }
}

/// Encodes `record` as one Frame Streams data frame in `buffer`.
pub(crate) fn encode(frame: &mut DnstapFrame, record: &mut Record, buffer: &mut Vec<u8>) {
    fill(frame, record);
    buffer.clear();
    buffer.extend_from_slice(&[0; 4]);
    // Into a Vec, encoding cannot run out of room.
    let _ = frame.encode(buffer);
    take_message(frame, record);
    let len = (buffer.len() - 4) as u32;
    buffer[..4].copy_from_slice(&len.to_be_bytes());
}
