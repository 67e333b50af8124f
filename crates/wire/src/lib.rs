//! # tern-wire: the DNS wire format, with no I/O and no dependencies
//!
//! This crate turns received bytes into typed, borrowed views and writes
//! answers into a caller's buffer. It never allocates while parsing, never
//! performs I/O, and has no dependencies, so every layer above it (zone
//! loading, the authority database, the cache, the server) shares one
//! definition of the format.
//!
//! Types at a glance:
//!
//! | type | what it is |
//! |---|---|
//! | [`types::RType`], [`types::RClass`], [`types::Rcode`], [`types::Opcode`] | numeric parameters with RFC mnemonics |
//! | [`name::Name`] | a valid uncompressed name, borrowed |
//! | [`name::NameBuf`], [`name::LowerNameBuf`] | owned names on the stack, the latter lowercased |
//! | [`parse::MessageView`] | a parsed message: header and question eagerly, sections lazily |
//! | [`edns::Edns`] | the OPT pseudo-record of a query |
//! | [`query::Query`] | a received query parsed once: view (or why not) and OPT, for every stage |
//! | [`build::MessageBuilder`] | writes a message into `&mut [u8]` with compression and rollback |
//!
//! A query, byte by byte:
//!
//! ```
//! use tern_wire::parse::MessageView;
//! use tern_wire::types::RType;
//! let query = [
//!     0x12, 0x34,             // ID
//!     0x01, 0x00,             // flags: RD
//!     0x00, 0x01, 0, 0, 0, 0, 0, 0, // QDCOUNT 1, others 0
//!     3, b'W', b'w', b'w', 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 3, b'c', b'o', b'm', 0,
//!     0x00, 0x01,             // QTYPE A
//!     0x00, 0x01,             // QCLASS IN
//! ];
//! let message = MessageView::parse(&query).unwrap();
//! let question = message.question().unwrap();
//! assert_eq!(question.qtype, RType::A);
//! assert_eq!(question.name.to_string(), "Www.example.com.");
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod build;
pub mod edns;
pub mod error;
pub mod frame;
#[doc(hidden)]
pub mod fuzzing;
pub mod hash;
pub mod name;
pub mod parse;
pub mod query;
pub mod rdata;
pub mod types;

pub use error::{ParseError, TruncationError};
