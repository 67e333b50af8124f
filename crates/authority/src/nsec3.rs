//! NSEC3 hashing (RFC 5155 section 5): SHA-1, base32hex owner labels, the
//! parameters of NSEC3 and NSEC3PARAM records, and the sorted chain.
//!
//! SHA-1 is RustCrypto's `sha1` crate (no hash of ours), checked here
//! against the FIPS 180 example vectors; base32hex is `data-encoding`'s.
//! SHA-1's weakness against chosen-prefix collisions does not matter here:
//! NSEC3 uses it to order names, not to authenticate them.
//!
//! What is hashed when: every name of the zone, and `*.<name>` for every
//! name, once at load ([`crate::ZoneBuilder::finish`]); per query only the
//! "next closer" name of a name that does not exist, which cannot be known
//! in advance (RFC 5155 section 7.2.1).

use tern_wire::name::Name;

/// The length of a SHA-1 digest, the only NSEC3 hash (algorithm 1).
pub(crate) const HASH_LEN: usize = 20;

/// NSEC3 hash algorithm 1, SHA-1 (RFC 5155 section 11).
pub(crate) const HASH_SHA1: u8 = 1;

/// The most extra iterations accepted. RFC 5155 section 10.3 allowed up to
/// 2,500 (for 4096-bit keys); every query for a name that does not exist
/// costs `iterations + 1` SHA-1 compressions per hashed name, so a zone
/// asking for more is refused at load rather than becoming a CPU lever.
pub(crate) const MAX_ITERATIONS: u16 = 2500;

/// One NSEC3 hash.
pub(crate) type Hash = [u8; HASH_LEN];

//----------- Params ---------------------------------------------------------

/// Hash algorithm, iterations and salt of an NSEC3 or NSEC3PARAM record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Params {
    pub(crate) algorithm: u8,
    pub(crate) iterations: u16,
    pub(crate) salt: Box<[u8]>,
}

impl Params {
    /// The parameters at the start of NSEC3 or NSEC3PARAM RDATA (hash
    /// algorithm, flags, iterations, salt length, salt), and the RDATA
    /// after the salt. `None` if the RDATA is too short.
    pub(crate) fn parse(rdata: &[u8]) -> Option<(Params, u8, &[u8])> {
        let (&algorithm, rest) = rdata.split_first()?;
        let (&flags, rest) = rest.split_first()?;
        let iterations = u16::from_be_bytes([*rest.first()?, *rest.get(1)?]);
        let salt_len = usize::from(*rest.get(2)?);
        let salt = rest.get(3..3 + salt_len)?;
        let params = Params {
            algorithm,
            iterations,
            salt: salt.into(),
        };
        Some((params, flags, &rest[3 + salt_len..]))
    }

    /// Whether NSEC3 RDATA carries these parameters.
    pub(crate) fn matches(&self, nsec3_rdata: &[u8]) -> bool {
        Params::parse(nsec3_rdata).is_some_and(|(other, _, _)| other == *self)
    }

    /// The NSEC3 hash of a lowercased name (RFC 5155 section 5):
    /// `IH(salt, x, 0) = H(x || salt)`, `IH(salt, x, k) = H(IH(k-1) ||
    /// salt)`. Bound: `iterations + 1` digests, each of at most 255 + 255
    /// octets.
    pub(crate) fn hash(&self, lower: Name<'_>) -> Hash {
        let mut input = [0u8; 255 + 255];
        let name = lower.as_bytes();
        input[..name.len()].copy_from_slice(name);
        input[name.len()..name.len() + self.salt.len()].copy_from_slice(&self.salt);
        let mut digest = sha1(&input[..name.len() + self.salt.len()]);
        for _ in 0..self.iterations {
            input[..HASH_LEN].copy_from_slice(&digest);
            input[HASH_LEN..HASH_LEN + self.salt.len()].copy_from_slice(&self.salt);
            digest = sha1(&input[..HASH_LEN + self.salt.len()]);
        }
        digest
    }
}

//----------- Chain ----------------------------------------------------------

/// One NSEC3 record of the chain: its hash, the (unindexed) node that owns
/// it and its RRset.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Link {
    pub(crate) hash: Hash,
    pub(crate) node: u32,
    pub(crate) set: u32,
}

/// The NSEC3 chain of a zone, sorted by hash, with the facts per zone
/// node computed at load.
#[derive(Clone, Debug)]
pub(crate) struct Chain {
    pub(crate) params: Params,
    pub(crate) links: Vec<Link>,
    /// Per node id: the link whose hash equals the node's, or [`NONE`].
    pub(crate) matching: Vec<u32>,
    /// Per node id: the link that matches or covers `*.<node>`, or
    /// [`NONE`] (empty chain).
    pub(crate) wildcard: Vec<u32>,
}

/// No link.
pub(crate) const NONE: u32 = u32::MAX;

impl Chain {
    /// The link whose hash equals `hash`, or else the one that covers it
    /// (the greatest hash below it; the last link covers hashes below the
    /// first, RFC 5155 section 1.3 "covers"), and whether it matched.
    /// `None` only for an empty chain. Bound: a binary search.
    pub(crate) fn find(&self, hash: &Hash) -> Option<(u32, bool)> {
        match self.links.binary_search_by(|link| link.hash.cmp(hash)) {
            Ok(index) => Some((index as u32, true)),
            Err(0) => self.links.len().checked_sub(1).map(|i| (i as u32, false)),
            Err(index) => Some(((index - 1) as u32, false)),
        }
    }
}

//----------- base32hex ------------------------------------------------------

/// Decodes the first label of an NSEC3 owner (base32hex without padding,
/// RFC 4648 section 7, either case) into a SHA-1 hash; `None` if it is
/// not exactly 32 valid characters.
pub(crate) fn decode_label(label: &[u8]) -> Option<Hash> {
    let mut upper = [0u8; 32];
    if label.len() != upper.len() {
        return None;
    }
    upper.copy_from_slice(label);
    upper.make_ascii_uppercase();
    let mut out = [0u8; HASH_LEN];
    let written = data_encoding::BASE32HEX_NOPAD
        .decode_mut(&upper, &mut out)
        .ok()?;
    (written == HASH_LEN).then_some(out)
}

//----------- SHA-1 ----------------------------------------------------------

/// SHA-1 of `data` (FIPS 180-4).
pub(crate) fn sha1(data: &[u8]) -> Hash {
    use sha1::Digest;
    sha1::Sha1::digest(data).into()
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::name::NameBuf;

    use super::*;

    fn hex(bytes: &[u8]) -> String {
        data_encoding::HEXLOWER.encode(bytes)
    }

    #[test]
    fn sha1_fips_180_vectors() {
        // FIPS 180-2 appendix A.1, A.2 and A.3; the empty message.
        assert_eq!(
            hex(&sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex(&sha1(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        assert_eq!(
            hex(&sha1(&vec![b'a'; 1_000_000])),
            "34aa973cd4c4daa4f61eeb2bdbad27316534016f"
        );
        assert_eq!(hex(&sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        // Lengths around the padding boundary (55, 56, 64 octets).
        assert_eq!(
            hex(&sha1(&[b'a'; 55])),
            "c1c8bbdc22796e28c0e15163d20899b65621d65a"
        );
        assert_eq!(
            hex(&sha1(&[b'a'; 56])),
            "c2db330f6083854c99d4b5bfb6e8f29f201be699"
        );
        assert_eq!(
            hex(&sha1(&[b'a'; 64])),
            "0098ba824b5c16427bd7a1122a5a442a25ec644d"
        );
    }

    /// RFC 5155 Appendix A: salt AABBCCDD, 12 iterations.
    #[test]
    fn rfc5155_appendix_a_hashes() {
        let params = Params {
            algorithm: HASH_SHA1,
            iterations: 12,
            salt: Box::new([0xaa, 0xbb, 0xcc, 0xdd]),
        };
        let cases = [
            ("example.", "0p9mhaveqvm6t7vbl5lop2u3t2rp3tom"),
            ("a.example.", "35mthgpgcu1qg68fab165klnsnk3dpvl"),
            ("ai.example.", "gjeqe526plbf1g8mklp59enfd789njgi"),
            ("ns1.example.", "2t7b4g4vsa5smi47k61mv5bv1a22bojr"),
            ("*.w.example.", "r53bq7cc2uvmubfu5ocmm6pers9tk9en"),
            ("x.w.example.", "b4um86eghhds6nea196smvmlo4ors995"),
        ];
        for (name, expected) in cases {
            let name = NameBuf::from_text(name.as_bytes(), None).unwrap();
            let hash = params.hash(name.as_name());
            assert_eq!(Some(hash), decode_label(expected.as_bytes()), "{name}");
            let upper = expected.to_ascii_uppercase();
            assert_eq!(Some(hash), decode_label(upper.as_bytes()));
        }
    }

    #[test]
    fn base32hex_rejects_bad_labels() {
        assert_eq!(decode_label(b"0p9mhaveqvm6t7vbl5lop2u3t2rp3to"), None);
        assert_eq!(decode_label(b"0p9mhaveqvm6t7vbl5lop2u3t2rp3toW"), None);
        assert_eq!(decode_label(b"0p9mhaveqvm6t7vbl5lop2u3t2rp3to="), None);
    }

    #[test]
    fn params_and_chain_search() {
        // NSEC3: SHA-1, opt-out, 10 iterations, salt DEADBEEF, hash length 20...
        let rdata = [1, 1, 0, 10, 4, 0xde, 0xad, 0xbe, 0xef, 20];
        let (params, flags, rest) = Params::parse(&rdata).unwrap();
        assert_eq!((params.algorithm, params.iterations, flags), (1, 10, 1));
        assert_eq!(&*params.salt, &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(rest, &[20]);
        assert!(params.matches(&[1, 0, 0, 10, 4, 0xde, 0xad, 0xbe, 0xef]));
        assert!(!params.matches(&[1, 0, 0, 11, 4, 0xde, 0xad, 0xbe, 0xef]));
        assert_eq!(Params::parse(&[1, 0, 0, 10, 4, 0xde]), None);

        let link = |first: u8| Link {
            hash: [first; HASH_LEN],
            node: u32::from(first),
            set: 0,
        };
        let chain = Chain {
            params,
            links: vec![link(10), link(20), link(30)],
            matching: vec![],
            wildcard: vec![],
        };
        assert_eq!(chain.find(&[20; HASH_LEN]), Some((1, true)));
        assert_eq!(chain.find(&[25; HASH_LEN]), Some((1, false)));
        assert_eq!(chain.find(&[5; HASH_LEN]), Some((2, false)));
        assert_eq!(chain.find(&[255; HASH_LEN]), Some((2, false)));
    }
}
