//! `dnstap.proto` (proto2), the fields tern writes, as prost messages:
//! what the writer encodes and what a reader decodes.

use crate::Kind;

/// `dnstap.Dnstap` (dnstap.proto, proto2), the fields tern writes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DnstapFrame {
    /// Who wrote the message.
    #[prost(bytes = "vec", optional, tag = "1")]
    pub identity: Option<Vec<u8>>,
    /// The software's version.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub version: Option<Vec<u8>>,
    /// Not written.
    #[prost(bytes = "vec", optional, tag = "3")]
    pub extra: Option<Vec<u8>>,
    /// The DNS message.
    #[prost(message, optional, tag = "14")]
    pub message: Option<DnstapMessage>,
    /// `Dnstap.Type`: always MESSAGE (1).
    #[prost(int32, required, tag = "15")]
    pub r#type: i32,
}

/// `Dnstap.Type.MESSAGE`.
pub const DNSTAP_MESSAGE: i32 = 1;

/// `dnstap.SocketFamily`.
pub const FAMILY_INET: i32 = 1;
/// See [`FAMILY_INET`].
pub const FAMILY_INET6: i32 = 2;
/// `dnstap.SocketProtocol`.
pub const PROTOCOL_UDP: i32 = 1;
/// See [`PROTOCOL_UDP`].
pub const PROTOCOL_TCP: i32 = 2;

/// `dnstap.Message`, the fields tern writes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DnstapMessage {
    /// The [`Kind`].
    #[prost(enumeration = "Kind", required, tag = "1")]
    pub r#type: i32,
    /// [`FAMILY_INET`] or [`FAMILY_INET6`].
    #[prost(int32, optional, tag = "2")]
    pub socket_family: Option<i32>,
    /// [`PROTOCOL_UDP`] or [`PROTOCOL_TCP`].
    #[prost(int32, optional, tag = "3")]
    pub socket_protocol: Option<i32>,
    /// The initiator's address (the client; tern for FORWARDER_*).
    #[prost(bytes = "vec", optional, tag = "4")]
    pub query_address: Option<Vec<u8>>,
    /// The responder's address (tern; the upstream for FORWARDER_*).
    #[prost(bytes = "vec", optional, tag = "5")]
    pub response_address: Option<Vec<u8>>,
    /// The initiator's port.
    #[prost(uint32, optional, tag = "6")]
    pub query_port: Option<u32>,
    /// The responder's port.
    #[prost(uint32, optional, tag = "7")]
    pub response_port: Option<u32>,
    /// When the query was received or sent: seconds since the epoch.
    #[prost(uint64, optional, tag = "8")]
    pub query_time_sec: Option<u64>,
    /// And nanoseconds.
    #[prost(fixed32, optional, tag = "9")]
    pub query_time_nsec: Option<u32>,
    /// The query, for *_QUERY kinds.
    #[prost(bytes = "vec", optional, tag = "10")]
    pub query_message: Option<Vec<u8>>,
    /// The zone of the query (not written).
    #[prost(bytes = "vec", optional, tag = "11")]
    pub query_zone: Option<Vec<u8>>,
    /// When the response was sent or received: seconds since the epoch.
    #[prost(uint64, optional, tag = "12")]
    pub response_time_sec: Option<u64>,
    /// And nanoseconds.
    #[prost(fixed32, optional, tag = "13")]
    pub response_time_nsec: Option<u32>,
    /// The response, for *_RESPONSE kinds.
    #[prost(bytes = "vec", optional, tag = "14")]
    pub response_message: Option<Vec<u8>>,
}
