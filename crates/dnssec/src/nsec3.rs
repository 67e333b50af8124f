//! NSEC3 (RFC 5155): the parameters, the hash of an owner name, the
//! hashed owner, and the NSEC3 and NSEC3PARAM RDATA.
//!
//! - The hash (section 5) is SHA-1, the only algorithm defined (number
//!   1), from the `sha1` crate: `IH(0) = H(name || salt)` over the name in
//!   canonical (lowercased) wire form, then `IH(k) = H(IH(k - 1) || salt)`
//!   for each further iteration.
//! - The hashed owner is the hash in base32hex without padding (RFC 4648
//!   section 7; lowercased here) as one label before the zone's apex.
//!   base32hex keeps the order of the octets it encodes, so the chain
//!   sorted by hash octets is the chain in canonical order of the owners.
//! - RFC 9276's defaults are [`Nsec3Params::default`]: no further
//!   iterations, an empty salt, no opt-out. More iterations than
//!   [`MAX_ITERATIONS`] are refused.

use tern_wire::name::{Name, NameBuf};
use tern_wire::types::RType;

use crate::nsec::push_type_bitmap;

/// The most further iterations signed with. RFC 9276 section 3.1 says 0;
/// BIND 9.18's `dnssec-signzone` refuses more than 150 ("NSEC3
/// iterations too big. Maximum iterations allowed 150", seen on this
/// machine), and validators treat more as insecure (BIND's since 9.16.16,
/// Knot Resolver's `KR_NSEC3_MAX_ITERATIONS` 150, later 50), so a zone
/// signed with more would silently lose its protection. Knot 3.2 accepts
/// 0 to 65535 (`nsec3-iterations`, default 0; its configuration check
/// notes values above 20).
pub const MAX_ITERATIONS: u16 = 150;

/// The most octets of salt (its length is one octet in the RDATA).
pub const MAX_SALT_LEN: usize = 255;

/// SHA-1, the only NSEC3 hash algorithm (RFC 5155 section 11).
pub const SHA1: u8 = 1;

/// The opt-out flag of the NSEC3 flags field (RFC 5155 section 3.1.2.1).
pub const OPT_OUT: u8 = 0x01;

/// The octets of a SHA-1 hash.
pub const HASH_LEN: usize = 20;

/// An NSEC3 hash.
pub type Hash = [u8; HASH_LEN];

//----------- Nsec3Params ----------------------------------------------------

/// How the NSEC3 chain is made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nsec3Params {
    /// Further iterations of the hash (RFC 9276: 0); at most
    /// [`MAX_ITERATIONS`].
    pub iterations: u16,
    /// The salt (RFC 9276: empty); at most [`MAX_SALT_LEN`] octets.
    pub salt: Vec<u8>,
    /// Whether insecure delegations (without DS) are left out of the
    /// chain, with the opt-out flag set on every NSEC3 (RFC 5155 section
    /// 6).
    pub opt_out: bool,
}

impl Nsec3Params {
    /// The flags field of the chain's NSEC3 records.
    pub fn flags(&self) -> u8 {
        if self.opt_out {
            OPT_OUT
        } else {
            0
        }
    }
}

//----------- Hashing --------------------------------------------------------

/// The NSEC3 hash of `name` (lowercased here) with `iterations` further
/// iterations and `salt` (RFC 5155 section 5). Bound: `iterations + 1`
/// SHA-1 digests.
pub fn nsec3_hash(name: Name<'_>, iterations: u16, salt: &[u8]) -> Hash {
    use sha1::{Digest, Sha1};
    let lower = name.to_lower();
    let mut hash: Hash = Sha1::new()
        .chain_update(lower.as_bytes())
        .chain_update(salt)
        .finalize()
        .into();
    for _ in 0..iterations {
        hash = Sha1::new()
            .chain_update(hash)
            .chain_update(salt)
            .finalize()
            .into();
    }
    hash
}

/// The owner of the NSEC3 for `hash` in the zone at `origin`: the hash in
/// lowercase base32hex as one label before `origin`; `None` if that name
/// would be longer than 255 octets (an apex longer than 222).
pub fn hashed_owner(hash: &Hash, origin: Name<'_>) -> Option<NameBuf> {
    let mut label = [32u8; 33];
    data_encoding::BASE32HEX_NOPAD.encode_mut(hash, &mut label[1..]);
    // base32hex is ASCII: digits and capital letters.
    label[1..].make_ascii_lowercase();
    NameBuf::concat(&label, origin).ok()
}

//----------- RDATA ----------------------------------------------------------

/// The NSEC3 RDATA (RFC 5155 section 3.2): SHA-1, `params`' flags,
/// iterations and salt, the `next` hashed owner and the types at the
/// original owner (any order, duplicates allowed). The salt must be at
/// most [`MAX_SALT_LEN`] octets (checked by the caller; a longer one is
/// cut there).
pub fn nsec3_rdata(params: &Nsec3Params, next: &Hash, types: &[RType]) -> Vec<u8> {
    let mut rdata = Vec::with_capacity(6 + params.salt.len() + HASH_LEN + 2 + 32);
    push_parameters(params.flags(), params, &mut rdata);
    rdata.push(HASH_LEN as u8);
    rdata.extend_from_slice(next);
    push_type_bitmap(types, &mut rdata);
    rdata
}

/// The NSEC3PARAM RDATA (RFC 5155 section 4.2) of `params`: flags 0 (the
/// opt-out flag is the NSEC3 records' alone, section 4.1.2).
pub fn nsec3param_rdata(params: &Nsec3Params) -> Vec<u8> {
    let mut rdata = Vec::with_capacity(5 + params.salt.len());
    push_parameters(0, params, &mut rdata);
    rdata
}

/// Hash algorithm, `flags`, iterations, salt length and salt.
fn push_parameters(flags: u8, params: &Nsec3Params, rdata: &mut Vec<u8>) {
    let salt = &params.salt[..params.salt.len().min(MAX_SALT_LEN)];
    rdata.extend_from_slice(&[SHA1, flags]);
    rdata.extend_from_slice(&params.iterations.to_be_bytes());
    // At most 255.
    rdata.push(salt.len() as u8);
    rdata.extend_from_slice(salt);
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::path::Path;

    use tern_zone::{parse_bytes, NoInclude, Options};

    use super::*;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    fn base32hex(hash: &Hash) -> String {
        data_encoding::BASE32HEX_NOPAD
            .encode(hash)
            .to_ascii_lowercase()
    }

    /// RFC 5155 appendix A: the `example.` zone hashed with salt aabbccdd
    /// and 12 iterations (each also given by ldns's `ldns-nsec3-hash -s
    /// aabbccdd -t 12`), whatever the case of the name.
    #[test]
    fn rfc5155_appendix_a_hashes() {
        let salt = [0xaa, 0xbb, 0xcc, 0xdd];
        let vectors = [
            ("example.", "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom"),
            ("a.example.", "35mthgpgcu1qg68fab165klnsnk3dpvl"),
            ("ai.example.", "gjeqe526plbf1g8mklp59enfd789njgi"),
            ("ns1.example.", "2t7b4g4vsa5smi47k61mv5bv1a22bojr"),
            ("w.example.", "k8udemvp1j2f7eg6jebps17vp3n8i58h"),
            ("*.w.example.", "r53bq7cc2uvmubfu5ocmm6pers9tk9en"),
            ("x.y.w.example.", "2vptu5timamqttgl4luu9kg21e0aor3s"),
            ("xx.example.", "t644ebqk9bibcna874givr6joj62mlhv"),
            ("XX.Example.", "t644ebqk9bibcna874givr6joj62mlhv"),
            (
                "2t7b4g4vsa5smi47k61mv5bv1a22bojr.example.",
                "kohar7mbb8dc2ce8a9qvl8hon4k53uhi",
            ),
        ];
        for (owner, expected) in vectors {
            let hash = nsec3_hash(name(owner).as_name(), 12, &salt);
            assert_eq!(base32hex(&hash), expected, "H({owner})");
        }
        let hash = nsec3_hash(name("example.").as_name(), 12, &salt);
        let owner = hashed_owner(&hash, name("example.").as_name()).unwrap();
        assert_eq!(
            owner.to_string(),
            "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example."
        );
    }

    /// RFC 9276's parameters (no salt, no further iteration): one SHA-1 of
    /// the name, as `ldns-nsec3-hash -t 0 example.` gives it.
    #[test]
    fn hash_without_salt_or_iterations() {
        let hash = nsec3_hash(name("example.").as_name(), 0, &[]);
        assert_eq!(base32hex(&hash), "3msev9usmd4br9s97v51r2tdvmr9iqo1");
    }

    /// The apex's NSEC3 of RFC 5155 appendix A, `1 1 12 aabbccdd
    /// 2t7b4g4vsa5smi47k61mv5bv1a22bojr NS SOA MX RRSIG DNSKEY
    /// NSEC3PARAM`, built here is the RDATA tern-zone's scanner reads from
    /// that text; its NSEC3PARAM `1 0 12 aabbccdd` likewise.
    #[test]
    fn rdata_of_rfc5155_apex() {
        let origin = name("example.");
        let text = b"@ 3600 NSEC3 1 1 12 aabbccdd 2t7b4g4vsa5smi47k61mv5bv1a22bojr \
                     NS SOA MX RRSIG DNSKEY NSEC3PARAM\n\
                     @ 3600 NSEC3PARAM 1 0 12 aabbccdd\n";
        let scanned = parse_bytes(
            text,
            Path::new("test"),
            origin.as_name(),
            &Options::default(),
            &mut NoInclude,
        )
        .unwrap()
        .records;
        let params = Nsec3Params {
            iterations: 12,
            salt: vec![0xaa, 0xbb, 0xcc, 0xdd],
            opt_out: true,
        };
        let next = nsec3_hash(name("ns1.example.").as_name(), 12, &params.salt);
        let rdata = nsec3_rdata(
            &params,
            &next,
            &[
                RType::NSEC3PARAM,
                RType::DNSKEY,
                RType::RRSIG,
                RType::MX,
                RType::SOA,
                RType::NS,
                RType::SOA,
            ],
        );
        assert_eq!(rdata, scanned[0].rdata);
        // Window 0, 7 octets: NS SOA (0x22), MX (0x01), RRSIG (0x02),
        // DNSKEY NSEC3PARAM (0x90).
        assert_eq!(
            rdata[rdata.len() - 9..],
            [0x00, 0x07, 0x22, 0x01, 0x00, 0x00, 0x00, 0x02, 0x90]
        );
        assert_eq!(nsec3param_rdata(&params), scanned[1].rdata);
    }

    /// An empty non-terminal's NSEC3 has no bitmap at all; RFC 9276's
    /// parameters give salt length 0 and flags 0.
    #[test]
    fn rdata_of_empty_non_terminal() {
        let params = Nsec3Params::default();
        let rdata = nsec3_rdata(&params, &[0x11; HASH_LEN], &[]);
        let mut expected = vec![1, 0, 0, 0, 0, 20];
        expected.extend_from_slice(&[0x11; HASH_LEN]);
        assert_eq!(rdata, expected);
        assert_eq!(nsec3param_rdata(&params), [1, 0, 0, 0, 0]);
    }

    /// A hashed owner fits only below an apex of at most 222 octets.
    #[test]
    fn hashed_owner_length() {
        let label = "a".repeat(63);
        let long = name(&format!("{label}.{label}.{label}.{}.", "a".repeat(28)));
        assert_eq!(long.as_name().len(), 222);
        assert!(hashed_owner(&[0; HASH_LEN], long.as_name()).is_some());
        let longer = name(&format!("{label}.{label}.{label}.{}.", "a".repeat(29)));
        assert!(hashed_owner(&[0; HASH_LEN], longer.as_name()).is_none());
    }
}
