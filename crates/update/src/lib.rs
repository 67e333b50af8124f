//! # tern-update: dynamic updates (RFC 2136), sans-I/O
//!
//! What a primary does with an UPDATE, without sockets, clocks or files:
//! the server hands it the message's bytes, the checked TSIG key and the
//! client's address, and gets back either a new version of the zone's
//! records and the difference from the old one (for the journal, IXFR
//! and the signer), or the RCODE to answer with the zone untouched.
//!
//! | module | what it does |
//! |---|---|
//! | [`message`] | reads an UPDATE: zone, prerequisites, updates, the TSIG record's place (FORMERR for anything malformed) |
//! | [`store`] | a zone's records by owner in canonical order, held whole or laid over a served version (holding only the changed names), changed in place: an update costs the names it touches |
//! | [`prereq`] | the five prerequisite forms, with their RCODEs |
//! | [`apply`] | the four kinds of update applied all or nothing, SOA, apex NS, CNAME and DNAME rules, the difference |
//! | [`policy`] | update rules: which key, from where, may update which types at which owners |
//! | [`engine`] | the whole of RFC 2136 section 3 in order: [`update`] |
//!
//! Adding a TXT record, byte by byte:
//!
//! ```
//! use std::path::Path;
//! use tern_update::{update, Access, UpdateMessage, UpdateOptions, UpdateRule, Requester, ZoneRecords};
//! use tern_wire::name::NameBuf;
//! use tern_zone::{parse_bytes, NoInclude, Options};
//!
//! let origin = NameBuf::from_text(b"example.", None).unwrap();
//! let text = b"@ 300 SOA ns host 7 3600 900 604800 300\n@ 300 NS ns\nns 300 A 192.0.2.1\n";
//! let parsed = parse_bytes(text, Path::new("z"), origin.as_name(), &Options::default(),
//!     &mut NoInclude).unwrap();
//! let mut zone = ZoneRecords::from_records(origin.as_name(), &parsed.records).unwrap();
//!
//! let message = [
//!     0x12, 0x34, 0x28, 0x00,     // ID, opcode UPDATE
//!     0, 1, 0, 0, 0, 1, 0, 0,     // ZOCOUNT 1, PRCOUNT 0, UPCOUNT 1, ADCOUNT 0
//!     7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, 0, 6, 0, 1, // zone example. SOA IN
//!     3, b'w', b'w', b'w', 0xc0, 12, // update: www.example.
//!     0, 16, 0, 1, 0, 0, 0, 60,   // TXT IN TTL 60
//!     0, 3, 2, b'h', b'i',        // RDATA "hi"
//! ];
//! let message = UpdateMessage::parse(&message).unwrap();
//! let anyone = [UpdateRule::default()];
//! let access = Access {
//!     rules: &anyone,
//!     requester: Requester { key: None, address: "127.0.0.1".parse().unwrap() },
//! };
//! let difference = update(&mut zone, &message, &access, &UpdateOptions::default())
//!     .unwrap()
//!     .expect("a record was added");
//! assert_eq!((difference.from_serial(), difference.to_serial()), (7, 8));
//! assert_eq!(difference.added.len(), 1);
//! assert_eq!(zone.len(), 4);
//! ```
//!
//! Every input is hostile: the message is read through tern-wire's bounded
//! views, the limits are named constants, and no octet can make this crate
//! panic (the `update` fuzz target in crates/fuzz checks it). Where Knot,
//! BIND and the RFC differ, docs/decisions/0015-dynamic-update.md says
//! which tern follows.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod apply;
pub mod engine;
#[doc(hidden)]
pub mod fuzzing;
pub mod message;
pub mod policy;
pub mod prereq;
pub mod rdata;
pub mod store;

pub use apply::{ChangedRecord, Difference};
pub use engine::{update, update_signed, Access, UpdateOptions};
pub use message::{TsigHook, UpdateMessage, UpdateRecord};
pub use policy::{AddressPrefix, OwnerMatch, OwnerRule, Requester, UpdateRule};
pub use prereq::{SignerRrsets, Unsigned};
pub use store::{StoreError, ZoneRecords};

/// The largest UPDATE read: what TCP's two-octet length can carry. A
/// larger one is REFUSED.
pub const MAX_UPDATE_MESSAGE_LEN: usize = 65_535;

/// The most prerequisite and update records one UPDATE may hold together.
/// An ACME client sends one or two, external-dns a few per name changed;
/// one message of this size rewrites a large RRset. More is REFUSED
/// before any is read.
pub const MAX_UPDATE_RECORDS: usize = 1_024;

#[cfg(test)]
mod tests;
