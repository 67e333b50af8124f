//! # tern-dnssec: DNSSEC signing, without I/O
//!
//! A zone given as records goes in, the same zone signed with NSEC or
//! NSEC3 comes out (RFC 4033, 4034, 4035, 5155): the DNSKEY RRset, an
//! RRSIG for every authoritative RRset and the NSEC or NSEC3 chain. Nothing here reads a file, a
//! clock or the network: the caller hands over the keys (PKCS#8 bytes),
//! the records and the signatures' inception and expiration, and gets
//! records back. The crypto is ring's (key generation, ECDSA P-256 and
//! Ed25519 signatures, randomness from its `SystemRandom`); the DS digest
//! is the `sha2` crate's SHA-256 and the NSEC3 hash the `sha1` crate's
//! SHA-1. No crypto of ours.
//!
//! Modules, each importing only those listed before it:
//! - [`key`]: algorithms and key roles, key generation and loading, the
//!   DNSKEY RDATA, key tag and DS;
//! - [`canonical`]: canonical RDATA and RRset order, the labels field;
//! - [`nsec`]: the NSEC RDATA and its type bitmap;
//! - [`nsec3`]: NSEC3 parameters, hashes and RDATA;
//! - [`rrsig`]: the signature over one RRset and its validity;
//! - [`parallel`]: numbered batches of work done on a few threads and
//!   handed on in order;
//! - [`zone`]: a whole zone signed with NSEC or NSEC3, on one thread or
//!   several;
//! - [`incremental`]: a zone signed again from its previous signed
//!   version, signing only what changed or is due for refresh.
//!
//! Signing a small zone with one combined signing key:
//!
//! ```
//! use tern_dnssec::{
//!     sign_zone, Algorithm, Denial, KeyRole, Nsec3Params, SignOptions, SigningKey, Validity,
//! };
//! use tern_wire::name::NameBuf;
//! use tern_wire::types::RType;
//! use tern_zone::{parse_bytes, NoInclude, Options};
//!
//! let origin = NameBuf::from_text(b"example.", None).unwrap();
//! let text = b"@ 3600 SOA ns hostmaster 1 2h 1h 1w 300\n  NS ns\nns A 192.0.2.1\n";
//! let zone = parse_bytes(text, "example.zone".as_ref(), origin.as_name(),
//!     &Options::default(), &mut NoInclude).unwrap();
//!
//! let (key, _pkcs8) = SigningKey::generate(Algorithm::EcdsaP256Sha256, KeyRole::Csk).unwrap();
//! let keys = [key];
//! let options = SignOptions {
//!     validity: Validity::new(1_700_000_000, 1_700_000_000 + 14 * 86_400).unwrap(),
//!     dnskey_ttl: None,
//!     denial: Denial::Nsec,
//!     serial_above: None,
//! };
//! let signed = sign_zone(origin.as_name(), &zone.records, &keys, &options).unwrap();
//!
//! // example.: SOA, NS, DNSKEY, NSEC and their 4 RRSIGs;
//! // ns.example.: A, NSEC and their 2 RRSIGs.
//! assert_eq!(signed.signatures, 6);
//! assert_eq!(signed.records.len(), 3 + 1 + 2 + 6);
//! let nsec = signed.records.iter().find(|record| record.rtype == RType::NSEC).unwrap();
//! // Next name ns.example., then window 0 of 7 octets: NS SOA RRSIG NSEC DNSKEY.
//! assert_eq!(nsec.rdata, b"\x02ns\x07example\x00\x00\x07\x22\x00\x00\x00\x00\x03\x80");
//! assert_eq!(nsec.ttl, 300); // the SOA's MINIMUM, lower than its TTL
//!
//! // With NSEC3 (RFC 9276: no further iteration, no salt) instead:
//! // an NSEC3PARAM at the apex, an NSEC3 per name, no NSEC.
//! let options = SignOptions { denial: Denial::Nsec3(Nsec3Params::default()), ..options };
//! let signed = sign_zone(origin.as_name(), &zone.records, &keys, &options).unwrap();
//! let count = |rtype| signed.records.iter().filter(|record| record.rtype == rtype).count();
//! assert_eq!((count(RType::NSEC3), count(RType::NSEC3PARAM), count(RType::NSEC)), (2, 1, 0));
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod canonical;
pub mod incremental;
pub mod key;
pub mod nsec;
pub mod nsec3;
pub mod parallel;
pub mod rrsig;
pub mod zone;

#[doc(hidden)]
pub mod fuzzing;

pub use incremental::{
    next_refresh, resign_nsec3_links, resign_owners, resign_owners_nsec3, resign_zone,
    resign_zone_into, Change, Nsec3Link, OwnerEdit, OwnersResigned, Refresh, ResignStats, Resigned,
    MAX_OWNER_EDITS,
};
pub use key::{Algorithm, KeyError, KeyRole, SigningKey};
pub use nsec3::Nsec3Params;
pub use rrsig::{sign_rrset, Rrset, Validity};
pub use zone::{
    serial_higher, sign_zone, sign_zone_into, sign_zone_with, Denial, KeySet, SignError,
    SignOptions, SignStats, SignedZone, ZoneKey, MAX_KEYS,
};
