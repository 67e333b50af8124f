//! # tern-cache: core-local pre-serialized answers
//!
//! An authoritative answer depends on the zone data and on a handful of
//! query fields. Everything else in it is either a copy of the query (ID,
//! RD, the question as the client spelled it) or fixed. So once
//! `tern_authority::respond` has written an answer, the next query with the
//! same [`CacheKey`] can be answered by copying bytes: no lookup, no
//! encoding, no compression table. NSD reaches the same place by
//! pre-computing answers at zone load; this crate does it lazily, for the
//! names actually asked, in memory that each core owns.
//!
//! ## What is stored
//!
//! For an answer of `n` octets to a question of `q` octets, the entry holds
//! the header's flags (RD cleared: each query brings its own) and counts,
//! the lowercased query name (the key), and the *tail*: the `n - 12 - q`
//! octets after the question, answer, authority and additional sections,
//! OPT record included, byte for byte.
//!
//! ```text
//!   answer as written by respond           answer written by a cache hit
//!   ┌────┬──────┬────────┬──────────┐      ┌────┬──────┬────────┬──────────┐
//!   │ ID │flags │ counts │ question │tail  │ ID'│flags │ counts │question' │tail
//!   └────┴──────┴────────┴──────────┘      └────┴──────┴────────┴──────────┘
//!     ✗    kept    kept     ✗      kept      new  +RD'   same     new       same
//! ```
//!
//! The tail's compression pointers point at offset 12 (the question name)
//! or into it. A query that hits has a name equal ignoring case, hence the
//! same labels and length, so every pointer still lands on the same label
//! and owner names come out in the client's own case, as 0x20
//! randomization requires (STYLE R5).
//!
//! ## What is not stored
//!
//! [`ResponseCache::insert`] keeps only complete, successful answers:
//! NOERROR or NXDOMAIN, QR set, TC clear, opcode QUERY, a question equal to
//! the key and an OPT matching the key's EDNS and DO flags. Truncated
//! answers depend on the client's size; errors are cheap to recompute and
//! depend on more than the key. [`CacheKey::from_query`] returns `None` for
//! the queries only the slow path may answer (QR set, opcodes other than
//! QUERY, EDNS versions other than 0). On a hit, [`ResponseCache::answer`]
//! checks the stored answer against the caller's size limit and declines
//! rather than truncating: the slow path truncates RRset by RRset.
//!
//! ## Cost
//!
//! A hit hashes the lowercased name once (foldhash under a per-process
//! random key: query names are attacker-controlled, and the cache is
//! bounded and evicts, so colliding names can at worst slow one core's
//! cache, never grow its memory; see `hash.rs`), probes a
//! `hashbrown::HashTable`, compares the name, and makes three copies into
//! the caller's buffer. It allocates nothing and sets one bit (SIEVE's
//! `visited`). A miss followed by an insert allocates nothing either: the
//! cache takes all its memory when it is made (the index and slot array
//! for its entry limit, an arena for its byte limit whose pages are
//! written only as entries reach them), and each entry's bytes are an
//! extent of that arena, so a random-subdomain flood, every query a miss
//! and an insert that evicts, runs without `malloc`. Memory is bounded in
//! entries and in bytes, each entry charged its stored bytes (rounded up
//! to 32 octets) plus [`ENTRY_OVERHEAD`]; eviction is SIEVE, amortized
//! O(1). [`ResponseCache::clear`] empties the cache when the zones change.
//!
//! ## The forwarding cache
//!
//! [`forward`] holds the caching forwarder, sans I/O: a
//! [`forward::Forwarder`] with its own core-local cache of upstream
//! answers, whose TTLs count down (the offset of every TTL field is stored
//! and patched on each hit from `now`, a parameter), negative answers per
//! RFC 2308, brief SERVFAIL entries, serve-stale (RFC 8767), prefetch,
//! coalescing of identical questions in flight and the checks that keep
//! hostile upstream answers out. The server crate owns its sockets and
//! timers.
//!
//! ## Example
//!
//! ```
//! use tern_authority::{respond, Catalog, Options, Response, Transport, ZoneBuilder};
//! use tern_cache::{CacheKey, CacheLimits, ResponseCache};
//! use tern_wire::name::NameBuf;
//! use tern_wire::parse::MessageView;
//! use tern_wire::types::{RClass, RType};
//!
//! // A zone with one A record.
//! let origin = NameBuf::from_text(b"example.", None).unwrap();
//! let mut zone = ZoneBuilder::new(origin.as_name());
//! let soa = [0, 0, 0, 0, 0, 1, 0, 0, 0, 60, 0, 0, 0, 60, 0, 0, 0, 60, 0, 0, 0, 60];
//! zone.insert(origin.as_name(), RType::SOA, RClass::IN, 60, &soa).unwrap();
//! let www = NameBuf::from_text(b"www.example.", None).unwrap();
//! zone.insert(www.as_name(), RType::A, RClass::IN, 300, &[192, 0, 2, 1]).unwrap();
//! let catalog = Catalog::new(vec![zone.finish().unwrap()]);
//!
//! // The key of a query, built once at ingress.
//! fn key(query: &[u8]) -> CacheKey {
//!     let view = MessageView::parse(query).unwrap();
//!     let edns = view.edns().unwrap();
//!     CacheKey::from_query(&view, edns.as_ref()).unwrap()
//! }
//!
//! let mut cache = ResponseCache::new(CacheLimits::default());
//! let first = [
//!     0x11, 0x11, 0x00, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, // ID 0x1111, RD clear
//!     3, b'w', b'w', b'w', 7, b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0, // www.example.
//!     0, 1, 0, 1, // A, IN
//! ];
//! let mut out = [0u8; 512];
//!
//! // Miss: the slow path answers, then the answer is stored.
//! assert_eq!(cache.answer(&key(&first), &first, 512, &mut out), None);
//! let Response::Send(len) = respond(&catalog, &first, Transport::Udp, &Options::default(), &mut out)
//! else { panic!("answered") };
//! assert!(cache.insert(key(&first), &out[..len]));
//! let original = out;
//!
//! // Hit: another ID, RD set, another case.
//! let mut second = first;
//! second[..3].copy_from_slice(&[0x22, 0x22, 0x01]);
//! second[13..16].copy_from_slice(b"WwW");
//! let hit = cache.answer(&key(&second), &second, 512, &mut out).unwrap();
//! assert_eq!(hit, len);
//! assert_eq!(&out[..4], &[0x22, 0x22, 0x85, 0x00]); // new ID; QR AA and the new RD
//! assert_eq!(&out[4..12], &original[4..12]); // the same counts
//! assert_eq!(&out[12..29], &second[12..29]); // the question as this client wrote it
//! assert_eq!(&out[29..len], &original[29..len]); // the tail, byte for byte
//!
//! // Too long for the caller's limit: decline, the slow path truncates.
//! assert_eq!(cache.answer(&key(&second), &second, len - 1, &mut out), None);
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod forward;
#[doc(hidden)]
pub mod fuzzing;
mod hash;
mod key;
mod response;
mod slab;

pub use hash::KeyedHash;
pub use key::CacheKey;
pub use response::{
    CacheCounters, CacheLimits, KeyHash, ResponseCache, DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES,
    ENTRY_OVERHEAD, MAX_ANSWER_LEN, MAX_ENTRY_LEN, MAX_EVICTIONS_TO_FIT, MAX_TRACKED_NAMES,
};
