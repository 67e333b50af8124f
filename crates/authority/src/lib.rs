//! # tern-authority: the zone database and the authoritative answer
//!
//! This crate holds what an authoritative server knows and decides what it
//! says, without any I/O:
//!
//! - [`ZoneBuilder`] takes records (from the zone-file parser, or from a
//!   test's list) and [`ZoneBuilder::finish`] runs the load-time adjust pass
//!   into an immutable [`Zone`]: dense node ids, parent ids, cut and wildcard
//!   flags, additional-section targets resolved to ids, RDATA in one arena;
//! - [`Catalog`] holds the zones and finds the deepest one containing a name;
//! - [`respond`](fn@respond) turns one query's bytes into one answer's bytes: parsing,
//!   the RFC 1034 section 4.3.2 walk (wildcards per RFC 4592, DNAME per RFC
//!   6672, referrals, CNAME chains), EDNS, truncation, and for DO=1 the
//!   RRSIGs of pre-signed zones and the NSEC or NSEC3 proofs of RFC 4035
//!   section 3.1.3 and RFC 5155 section 7.2 (`docs/decisions/0004`). It
//!   allocates nothing:
//!   the answer plan has fixed capacity and lives on the stack, and the
//!   message is written into the caller's buffer;
//! - [`cookie`] checks DNS cookies (RFC 7873) with RFC 9018 server cookies
//!   (SipHash-2-4), and [`respond_with`], [`append_option`] and
//!   [`bad_cookie`] put the COOKIE option into answers
//!   (`docs/decisions/0006-dns-cookies.md`).
//!
//! Answers are meant to equal Knot's or NSD's section by section (the
//! differential suite in `tests/differential` checks it). Where the two
//! differ, this crate follows Knot 3.2 and says so at the decision:
//! positive answers carry no apex NS in the authority section (minimal
//! responses: smaller answers, and RFC 2181 section 6.1 does not ask for
//! it); ANY is answered with the RRset of the lowest type (RFC 8482); CNAME
//! chains stay inside the answering zone and stop after
//! [`lookup::CNAME_CHAIN_MAX`] steps. One exception follows NSD: referral
//! glue is written A records first, then AAAA, and never sets TC.
//!
//! ```
//! use tern_authority::{respond, Catalog, Options, Response, Transport, ZoneBuilder};
//! use tern_wire::name::NameBuf;
//! use tern_wire::types::{RClass, RType};
//!
//! let origin = NameBuf::from_text(b"example.", None).unwrap();
//! let mut zone = ZoneBuilder::new(origin.as_name());
//! //        mname root, rname root, serial refresh retry expire minimum
//! let soa = [0, 0, 0, 0, 0, 1, 0, 0, 0, 60, 0, 0, 0, 60, 0, 0, 0, 60, 0, 0, 0, 60];
//! zone.insert(origin.as_name(), RType::SOA, RClass::IN, 60, &soa).unwrap();
//! let www = NameBuf::from_text(b"www.example.", None).unwrap();
//! zone.insert(www.as_name(), RType::A, RClass::IN, 300, &[192, 0, 2, 1]).unwrap();
//! let catalog = Catalog::new(vec![zone.finish().unwrap()]);
//!
//! let query = [
//!     0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, // ID, RD, QDCOUNT 1
//!     3, b'W', b'w', b'W', 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, // WwW.example.
//!     0, 1, 0, 1, // A, IN
//! ];
//! let mut out = vec![0; 65535];
//! let Response::Send(len) = respond(&catalog, &query, Transport::Udp, &Options::default(), &mut out)
//! else { panic!("answered") };
//! assert_eq!(&out[..4], &[0xab, 0xcd, 0x85, 0x00]); // QR AA RD, NOERROR
//! assert_eq!(&out[12..29], &query[12..29]); // the question, case kept
//! // the answer: pointer to the question, A IN, TTL 300, 192.0.2.1
//! assert_eq!(&out[29..len], &[0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 1]);
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod answer;
mod arena;
mod builder;
mod catalog;
pub mod cookie;
#[doc(hidden)]
pub mod fuzzing;
mod index;
pub mod lookup;
mod nsec3;
pub mod nsid;
mod order;
mod parts;
mod patch;
mod proof;
mod respond;
mod targets;
#[cfg(test)]
mod test_model;
mod zone;

pub use arena::Work;
pub use builder::{BuildError, ZoneBuilder};
pub use catalog::{Applied, Catalog, CatalogChange};
pub use patch::lineage::{ChangedNames, MAX_CHANGED_NAMES};
pub use patch::{PatchError, Patched, ZoneChanges};
pub use respond::{
    append_option, append_options, bad_cookie, respond, respond_to, respond_to_at, respond_vetted,
    respond_with, summary, ChaosIdentity, Options, Response, Transport, DEFAULT_UDP_SIZE,
};
pub use zone::{RecordCursor, Zone, ZoneRecord};

/// Compile-time check: zones and catalogs are shared across cores.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Zone>();
    shared::<Catalog>();
};
