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

use core::cmp::Ordering;

use tern_wire::name::Name;

use crate::arena::Work;
use crate::parts::{Keyed, Parts};

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

/// The NSEC3 chain of a zone, sorted by hash, with the hashes of each zone
/// node's name and of its wildcard computed at load.
///
/// A node's links are found by its hashes when a query needs them (a
/// binary search), not stored as link numbers: so a patch that adds or
/// removes a link changes no node's entry ([`crate::Zone::patch`] hashes
/// only the nodes it changed), and both tables are shared between
/// versions in parts, copied on write.
#[derive(Clone, Debug)]
pub(crate) struct Chain {
    pub(crate) params: Params,
    pub(crate) links: Links,
    /// Per node id: the hashes of its name and of `*.<name>`.
    pub(crate) hashes: NodeHashes,
}

/// The hashes of one node: of its name, and of `*.<name>`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NodeHash {
    pub(crate) own: Hash,
    pub(crate) wildcard: Hash,
    /// [`NodeHash::OWN`] and [`NodeHash::WILDCARD`]: which hash is set
    /// (neither for an NSEC3 owner, a non-authoritative or dead node).
    pub(crate) flags: u8,
}

impl NodeHash {
    /// The node's own hash is set.
    pub(crate) const OWN: u8 = 1;
    /// The hash of its wildcard is set.
    pub(crate) const WILDCARD: u8 = 2;

    /// The hashes of `name`'s node with `params`.
    pub(crate) fn of(params: &Params, name: Name<'_>) -> NodeHash {
        let mut hashes = NodeHash {
            own: params.hash(name),
            flags: NodeHash::OWN,
            ..NodeHash::default()
        };
        if let Ok(wildcard) = tern_wire::name::NameBuf::concat(b"\x01*", name) {
            hashes.wildcard = params.hash(wildcard.as_name());
            hashes.flags |= NodeHash::WILDCARD;
        }
        hashes
    }
}

/// The per-node hashes in shared chunks (512 entries, 20 KiB).
pub(crate) type NodeHashes = crate::arena::Arena<NodeHash, 9>;

impl Chain {
    /// The octets of the chain's tables: its links (and their list of
    /// parts) and the nodes' hashes, for [`Zone::table_bytes`].
    ///
    /// [`Zone::table_bytes`]: crate::Zone::table_bytes
    pub(crate) fn table_bytes(&self) -> usize {
        self.links.0.len() * core::mem::size_of::<Link>()
            + self.links.0.list_bytes()
            + self.hashes.size_bytes()
    }

    /// The link whose hash equals `hash`, or else the one that covers it
    /// (the greatest hash below it; the last link covers hashes below the
    /// first, RFC 5155 section 1.3 "covers"), and whether it matched.
    /// `None` only for an empty chain. Bound: a binary search.
    pub(crate) fn find(&self, hash: &Hash) -> Option<(&Link, bool)> {
        self.links.find(hash)
    }

    /// The link matching node `node`'s name, if there is one. Bound: a
    /// binary search.
    pub(crate) fn matching(&self, node: u32) -> Option<&Link> {
        let hashes = self.node_hash(node)?;
        if hashes.flags & NodeHash::OWN == 0 {
            return None;
        }
        self.links.get(&hashes.own)
    }

    /// The link matching or covering `*.<node>`. Bound: a binary search.
    pub(crate) fn wildcard(&self, node: u32) -> Option<&Link> {
        let hashes = self.node_hash(node)?;
        if hashes.flags & NodeHash::WILDCARD == 0 {
            return None;
        }
        self.find(&hashes.wildcard).map(|(link, _)| link)
    }

    fn node_hash(&self, node: u32) -> Option<&NodeHash> {
        (node < self.hashes.end()).then(|| self.hashes.get(node))
    }
}

//----------- Links ----------------------------------------------------------

/// The links of a chain sorted by hash, in parts of at most
/// [`Parts::MAX_PART`] links, each shared between versions until a patch
/// changes it ([`Parts`]): adding or removing a link copies its part (and
/// the list of parts, one pointer and one hash per part), not the chain.
#[derive(Clone, Debug, Default)]
pub(crate) struct Links(Parts<Link>);

impl Keyed for Link {
    type Key = Hash;

    #[inline]
    fn key(&self) -> Hash {
        self.hash
    }
}

/// The order of two hashes: their first eight octets as one integer
/// (which almost always decides), then the rest.
#[inline]
fn hash_cmp(a: &Hash, b: &Hash) -> Ordering {
    let prefix = |hash: &Hash| {
        let mut octets = [0; 8];
        octets.copy_from_slice(&hash[..8]);
        u64::from_be_bytes(octets)
    };
    prefix(a).cmp(&prefix(b)).then_with(|| a[8..].cmp(&b[8..]))
}

/// The order of a link's hash against `hash`.
#[inline]
fn against(hash: &Hash) -> impl Fn(&Hash) -> Ordering + '_ {
    move |key: &Hash| hash_cmp(key, hash)
}

impl Links {
    /// The most links in a part: a longer part is split in two.
    #[cfg(test)]
    pub(crate) const MAX_PART: usize = Parts::<Link>::MAX_PART;

    /// The links of a sorted list without equal hashes.
    pub(crate) fn from_sorted(links: &[Link]) -> Links {
        Links(Parts::from_sorted(links))
    }

    /// The number of links.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is no link.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The links in order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Link> {
        self.0.iter()
    }

    /// The octets of the list of parts (copied by a version that changes
    /// the chain).
    #[cfg(test)]
    pub(crate) fn list_bytes(&self) -> usize {
        self.0.list_bytes()
    }

    /// The link whose hash is `hash`. Bound: two binary searches.
    pub(crate) fn get(&self, hash: &Hash) -> Option<&Link> {
        self.0.get(against(hash))
    }

    /// [`Chain::find`].
    pub(crate) fn find(&self, hash: &Hash) -> Option<(&Link, bool)> {
        let link = self.0.covering(against(hash))?;
        Some((link, link.hash == *hash))
    }

    /// The links nearest `hash`: the greatest below it and the least above
    /// it, each wrapping around the ends; `None` when no link but one with
    /// `hash` itself is there.
    pub(crate) fn around(&self, hash: &Hash) -> Option<(&Link, &Link)> {
        let others = self.0.len() - usize::from(self.get(hash).is_some());
        if others == 0 {
            return None;
        }
        let (below, above) = self.0.neighbours(against(hash));
        Some((below.or(self.0.last())?, above.or(self.0.first())?))
    }

    /// The link `hash` to change. Bound: two binary searches, a part
    /// copied (its links counted in `work.nsec_moved`).
    pub(crate) fn get_mut(&mut self, hash: &Hash, work: &mut Work) -> Option<&mut Link> {
        self.0.get_mut(against(hash), work)
    }

    /// Adds `link`, or replaces the link with its hash. Bound: a part
    /// copied, and split in two when full.
    pub(crate) fn insert(&mut self, link: Link, work: &mut Work) {
        let hash = link.hash;
        self.0.insert(link, against(&hash), work);
    }

    /// Removes the link `hash`; whether there was one. Bound: a part
    /// copied (and merged with a neighbour when short).
    pub(crate) fn remove(&mut self, hash: &Hash, work: &mut Work) -> bool {
        self.0.remove(against(hash), work)
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
            links: Links::from_sorted(&[link(10), link(20), link(30)]),
            hashes: NodeHashes::default(),
        };
        let found = |hash: u8| {
            chain
                .find(&[hash; HASH_LEN])
                .map(|(link, matched)| (link.node, matched))
        };
        assert_eq!(found(20), Some((20, true)));
        assert_eq!(found(25), Some((20, false)));
        assert_eq!(found(5), Some((30, false)));
        assert_eq!(found(255), Some((30, false)));
    }

    /// [`Links`] against a sorted list, in hash order (octets past the
    /// eighth deciding too) with the wrap around the ends in `find` and
    /// `around`, at sizes flat and in parts (the parts themselves are
    /// tested in `crate::parts`).
    #[test]
    fn links_search_in_hash_order_and_wrap() {
        use rand::rngs::StdRng;
        use rand::{Rng, SeedableRng};

        let mut rng = StdRng::seed_from_u64(5155);
        let hash = |rng: &mut StdRng| -> Hash {
            let mut hash = [0; HASH_LEN];
            hash[0] = rng.random_range(0..8);
            hash[HASH_LEN - 1] = rng.random_range(0..64);
            hash
        };
        for size in [0, 1, 2, 5, 300, 700] {
            let mut model: Vec<Link> = (0..size)
                .map(|node| Link {
                    hash: hash(&mut rng),
                    node,
                    set: node,
                })
                .collect();
            model.sort_by_key(|link| link.hash);
            model.dedup_by(|a, b| a.hash == b.hash);
            let links = Links::from_sorted(&model);
            assert_eq!(links.len(), model.len());
            assert!(links
                .iter()
                .map(|l| l.node)
                .eq(model.iter().map(|l| l.node)));
            for _ in 0..200 {
                let probe = hash(&mut rng);
                let below = model.partition_point(|link| link.hash < probe);
                let exact = model.get(below).filter(|link| link.hash == probe);
                let expected = match exact {
                    Some(link) => Some((link.node, true)),
                    None => below
                        .checked_sub(1)
                        .or(model.len().checked_sub(1))
                        .map(|at| (model[at].node, false)),
                };
                let found = links
                    .find(&probe)
                    .map(|(link, matched)| (link.node, matched));
                assert_eq!(found, expected, "size {size}");
                assert_eq!(links.get(&probe).map(|l| l.node), exact.map(|l| l.node));
                let above = model.partition_point(|link| link.hash <= probe);
                let around = (model.len() > usize::from(exact.is_some())).then(|| {
                    let before = below.checked_sub(1).unwrap_or(model.len() - 1);
                    let after = if above == model.len() { 0 } else { above };
                    (model[before].node, model[after].node)
                });
                assert_eq!(
                    links.around(&probe).map(|(b, a)| (b.node, a.node)),
                    around,
                    "size {size}"
                );
            }
        }
    }
}
