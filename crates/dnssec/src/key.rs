//! DNSSEC keys: generation and loading (ring), the DNSKEY RDATA, its key
//! tag and its DS.
//!
//! The private key lives only inside ring's key pair; what leaves this
//! module is the PKCS#8 document ring generates (for whoever stores it)
//! and the public parts: the DNSKEY RDATA (RFC 4034 section 2.1), the key
//! tag (RFC 4034 appendix B) and the DS RDATA with a SHA-256 digest
//! (RFC 4034 section 5.1.4, RFC 4509).

use std::fmt;

use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use sha2::{Digest, Sha256};
use tern_wire::name::Name;

/// The DNSKEY protocol field: always 3 (RFC 4034 section 2.1.2).
pub const DNSKEY_PROTOCOL: u8 = 3;

/// The DNSKEY flags of a zone key (bit 7, RFC 4034 section 2.1.1).
pub const FLAG_ZONE: u16 = 0x0100;

/// The DNSKEY flag of a secure entry point (bit 15, RFC 4034 section
/// 2.1.1; RFC 3757): set on key-signing keys and combined signing keys.
pub const FLAG_SEP: u16 = 0x0001;

/// The DS digest type SHA-256 (RFC 4509).
pub const DIGEST_SHA256: u8 = 2;

/// The length of a P-256 public key in DNSSEC wire form: x and y, 32
/// octets each, without the 0x04 of the uncompressed SEC 1 form (RFC 6605
/// section 4).
pub const P256_PUBLIC_KEY_LEN: usize = 64;

/// The length of an Ed25519 public key (RFC 8080 section 3).
pub const ED25519_PUBLIC_KEY_LEN: usize = 32;

//----------- Algorithm ------------------------------------------------------

/// A DNSSEC signing algorithm this crate signs with (RFC 8624 lists both
/// as ones a signer should use).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// ECDSA on P-256 with SHA-256, number 13 (RFC 6605).
    EcdsaP256Sha256,
    /// Ed25519, number 15 (RFC 8080).
    Ed25519,
}

impl Algorithm {
    /// The algorithm number of the DNSKEY, RRSIG and DS fields.
    pub const fn number(self) -> u8 {
        match self {
            Algorithm::EcdsaP256Sha256 => 13,
            Algorithm::Ed25519 => 15,
        }
    }

    /// The algorithm with this number, if this crate signs with it.
    pub const fn from_number(number: u8) -> Option<Algorithm> {
        match number {
            13 => Some(Algorithm::EcdsaP256Sha256),
            15 => Some(Algorithm::Ed25519),
            _ => None,
        }
    }
}

//----------- KeyRole --------------------------------------------------------

/// What a key signs in its zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyRole {
    /// A combined signing key: the DNSKEY RRset and everything else.
    Csk,
    /// A key-signing key: the apex's DNSKEY, CDS and CDNSKEY RRsets.
    Ksk,
    /// A zone-signing key: every other authoritative RRset.
    Zsk,
}

impl KeyRole {
    /// The DNSKEY flags: 257 (zone key and SEP) for a KSK or CSK, 256 (zone
    /// key) for a ZSK.
    pub const fn flags(self) -> u16 {
        match self {
            KeyRole::Csk | KeyRole::Ksk => FLAG_ZONE | FLAG_SEP,
            KeyRole::Zsk => FLAG_ZONE,
        }
    }

    /// Whether the key signs the apex's DNSKEY, CDS and CDNSKEY RRsets.
    pub const fn signs_keys(self) -> bool {
        matches!(self, KeyRole::Csk | KeyRole::Ksk)
    }

    /// Whether the key signs the zone's other RRsets.
    pub const fn signs_zone(self) -> bool {
        matches!(self, KeyRole::Csk | KeyRole::Zsk)
    }
}

//----------- KeyError -------------------------------------------------------

/// Why a key could not be made, read or used.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum KeyError {
    /// ring could not generate a key pair (no randomness).
    Generate,
    /// The PKCS#8 document is not a key of the algorithm (ring's reason).
    Rejected(ring::error::KeyRejected),
    /// ring's P-256 public key is not the uncompressed point of 65 octets.
    PublicKey,
    /// ring could not sign (no randomness for ECDSA).
    Sign,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::Generate => f.write_str("cannot generate a key pair"),
            KeyError::Rejected(reason) => write!(f, "PKCS#8 key rejected: {reason}"),
            KeyError::PublicKey => f.write_str("P-256 public key not an uncompressed point"),
            KeyError::Sign => f.write_str("signing failed"),
        }
    }
}

impl std::error::Error for KeyError {}

//----------- generate_pkcs8 -------------------------------------------------

/// Generates a new key pair of `algorithm` with ring (randomness from
/// ring's `SystemRandom`) and returns it as a PKCS#8 v2 document (DER),
/// the form [`SigningKey::from_pkcs8`] reads.
pub fn generate_pkcs8(algorithm: Algorithm) -> Result<Vec<u8>, KeyError> {
    let random = SystemRandom::new();
    let document = match algorithm {
        Algorithm::EcdsaP256Sha256 => {
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &random)
        }
        Algorithm::Ed25519 => Ed25519KeyPair::generate_pkcs8(&random),
    }
    .map_err(|_| KeyError::Generate)?;
    Ok(document.as_ref().to_vec())
}

//----------- SigningKey -----------------------------------------------------

/// A private key ready to sign, with its DNSKEY RDATA and key tag worked
/// out once.
pub struct SigningKey {
    algorithm: Algorithm,
    role: KeyRole,
    pair: Pair,
    dnskey: Vec<u8>,
    key_tag: u16,
    random: SystemRandom,
}

enum Pair {
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

impl SigningKey {
    /// Reads a PKCS#8 (DER) private key of `algorithm`. ECDSA keys must
    /// carry their public key (as ring and OpenSSL write them); Ed25519
    /// keys may be PKCS#8 v1 (seed only) or v2 (seed and public key, which
    /// is then checked against the seed).
    pub fn from_pkcs8(algorithm: Algorithm, role: KeyRole, pkcs8: &[u8]) -> Result<Self, KeyError> {
        let random = SystemRandom::new();
        let (pair, public) = match algorithm {
            Algorithm::EcdsaP256Sha256 => {
                let pair =
                    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &random)
                        .map_err(KeyError::Rejected)?;
                // ring gives the SEC 1 uncompressed point: 0x04, x, y.
                let point = pair.public_key().as_ref();
                let public = match point.split_first() {
                    Some((0x04, coordinates)) if coordinates.len() == P256_PUBLIC_KEY_LEN => {
                        coordinates.to_vec()
                    }
                    _ => return Err(KeyError::PublicKey),
                };
                (Pair::Ecdsa(pair), public)
            }
            Algorithm::Ed25519 => {
                let pair = Ed25519KeyPair::from_pkcs8_maybe_unchecked(pkcs8)
                    .map_err(KeyError::Rejected)?;
                let public = pair.public_key().as_ref().to_vec();
                (Pair::Ed25519(pair), public)
            }
        };
        let dnskey = dnskey_rdata(role.flags(), algorithm.number(), &public);
        Ok(SigningKey {
            algorithm,
            role,
            pair,
            key_tag: key_tag(&dnskey),
            dnskey,
            random,
        })
    }

    /// Generates a new key ([`generate_pkcs8`]) and returns it with its
    /// PKCS#8 document, which is the only copy of the private key to keep.
    pub fn generate(algorithm: Algorithm, role: KeyRole) -> Result<(Self, Vec<u8>), KeyError> {
        let pkcs8 = generate_pkcs8(algorithm)?;
        let key = SigningKey::from_pkcs8(algorithm, role, &pkcs8)?;
        Ok((key, pkcs8))
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// What the key signs.
    pub fn role(&self) -> KeyRole {
        self.role
    }

    /// The DNSKEY RDATA: flags, protocol 3, algorithm, public key.
    pub fn dnskey_rdata(&self) -> &[u8] {
        &self.dnskey
    }

    /// The public key in DNSSEC wire form (the DNSKEY's last field).
    pub fn public_key(&self) -> &[u8] {
        &self.dnskey[4..]
    }

    /// The key tag (RFC 4034 appendix B) of the DNSKEY RDATA.
    pub fn key_tag(&self) -> u16 {
        self.key_tag
    }

    /// The DS RDATA for this key at `owner` (the zone's apex), with a
    /// SHA-256 digest.
    pub fn ds_rdata(&self, owner: Name<'_>) -> Vec<u8> {
        ds_rdata(owner, &self.dnskey)
    }

    /// Signs `message`: a 64-octet signature, for ECDSA the fixed r || s
    /// form of RFC 6605 section 4 (with a fresh random nonce from
    /// `SystemRandom`), for Ed25519 RFC 8032's.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, KeyError> {
        match &self.pair {
            Pair::Ecdsa(pair) => pair
                .sign(&self.random, message)
                .map(|signature| signature.as_ref().to_vec())
                .map_err(|_| KeyError::Sign),
            Pair::Ed25519(pair) => Ok(pair.sign(message).as_ref().to_vec()),
        }
    }
}

impl fmt::Debug for SigningKey {
    /// The public parts only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm)
            .field("role", &self.role)
            .field("key_tag", &self.key_tag)
            .finish_non_exhaustive()
    }
}

//----------- DNSKEY, key tag, DS --------------------------------------------

/// The DNSKEY RDATA of a public key: flags, protocol 3, algorithm, key
/// (RFC 4034 section 2.1).
pub fn dnskey_rdata(flags: u16, algorithm: u8, public_key: &[u8]) -> Vec<u8> {
    let mut rdata = Vec::with_capacity(4 + public_key.len());
    rdata.extend_from_slice(&flags.to_be_bytes());
    rdata.push(DNSKEY_PROTOCOL);
    rdata.push(algorithm);
    rdata.extend_from_slice(public_key);
    rdata
}

/// The key tag of a DNSKEY RDATA (RFC 4034 appendix B): the one's
/// complement-style sum of its 16-bit words. Not for algorithm 1
/// (RSA/MD5, which appendix B.1 treats apart and RFC 8624 forbids).
/// Bound: one pass over the RDATA; the sum is 64-bit, so no length a
/// caller can pass overflows it.
pub fn key_tag(dnskey_rdata: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    for (index, &octet) in dnskey_rdata.iter().enumerate() {
        sum += if index & 1 == 0 {
            u64::from(octet) << 8
        } else {
            u64::from(octet)
        };
    }
    sum += (sum >> 16) & 0xffff;
    (sum & 0xffff) as u16
}

/// The DS RDATA for the DNSKEY RDATA `dnskey_rdata` at `owner`: key tag,
/// algorithm, digest type 2 and SHA-256 over the owner in canonical
/// (lowercased) wire form followed by the DNSKEY RDATA (RFC 4034 section
/// 5.1.4, RFC 4509 section 2.1).
pub fn ds_rdata(owner: Name<'_>, dnskey_rdata: &[u8]) -> Vec<u8> {
    let algorithm = dnskey_rdata.get(3).copied().unwrap_or(0);
    let mut hasher = Sha256::new();
    hasher.update(owner.to_lower().as_bytes());
    hasher.update(dnskey_rdata);
    let digest = hasher.finalize();
    let mut rdata = Vec::with_capacity(4 + digest.len());
    rdata.extend_from_slice(&key_tag(dnskey_rdata).to_be_bytes());
    rdata.push(algorithm);
    rdata.push(DIGEST_SHA256);
    rdata.extend_from_slice(&digest);
    rdata
}

//=========== Tests ==========================================================

#[cfg(test)]
pub(crate) mod tests {
    use data_encoding::{BASE64, HEXUPPER};
    use tern_wire::name::NameBuf;

    use super::*;

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    /// RFC 4509 section 2.3 (the key of RFC 4034 section 5.4): this DNSKEY
    /// of `dskey.example.com.` has key tag 60485 and this SHA-256 DS.
    #[test]
    fn key_tag_and_ds_of_rfc4509_example() {
        let public = BASE64
            .decode(
                b"AQOeiiR0GOMYkDshWoSKz9XzfwJr1AYtsmx3TGkJaNXVbfi/2pHm822aJ5iI9BMzNXxeYCmZDRD9\
                  9WYwYqUSdjMmmAphXdvxegXd/M5+X7OrzKBaMbCVdFLUUh6DhweJBjEVv5f2wwjM9XzcnOf+EPbt\
                  G9DMBmADjFDc2w/rljwvFw==",
            )
            .unwrap();
        let dnskey = dnskey_rdata(256, 5, &public);
        assert_eq!(key_tag(&dnskey), 60485);
        // The owner's case does not change the digest.
        let ds = ds_rdata(name("DSKEY.example.COM.").as_name(), &dnskey);
        assert_eq!(&ds[..4], &[0xec, 0x45, 5, DIGEST_SHA256]);
        assert_eq!(
            HEXUPPER.encode(&ds[4..]),
            "D4B7D520E7BB5F0F67674A0CCEB1E3E0614B93C4F9E99B8383F6A1E4469DA50A"
        );
    }

    /// RFC 6605 section 6.1's P-256 key (private key
    /// `GU6SnQ/Ou+xC5RumuIUIuJZteXT2z0O/ok1s38Et6mQ=`), loaded from PKCS#8
    /// as a KSK, and its public key (64 octets, no 0x04).
    pub(crate) fn rfc6605_key() -> (SigningKey, Vec<u8>) {
        let private = BASE64
            .decode(b"GU6SnQ/Ou+xC5RumuIUIuJZteXT2z0O/ok1s38Et6mQ=")
            .unwrap();
        let public = BASE64
            .decode(
                b"GojIhhXUN/u4v54ZQqGSnyhWJwaubCvTmeexv7bR6edbkrSqQpF64cYbcB7wNcP+e+MAnLr+Wi9xMWyQLc8NAA==",
            )
            .unwrap();
        let key = SigningKey::from_pkcs8(
            Algorithm::EcdsaP256Sha256,
            KeyRole::Ksk,
            &p256_pkcs8(&private, &public),
        )
        .unwrap();
        (key, public)
    }

    /// RFC 6605 section 6.1: the P-256 key (private key
    /// `GU6SnQ/Ou+xC5RumuIUIuJZteXT2z0O/ok1s38Et6mQ=`) loaded from PKCS#8
    /// gives the RFC's DNSKEY (64 octets, no 0x04), key tag 55648 and DS.
    #[test]
    fn p256_key_of_rfc6605_example() {
        let (key, public) = rfc6605_key();
        assert_eq!(key.public_key(), public.as_slice());
        assert_eq!(key.dnskey_rdata()[..4], [1, 1, 3, 13]);
        assert_eq!(key.key_tag(), 55648);
        let ds = key.ds_rdata(name("example.net.").as_name());
        assert_eq!(
            HEXUPPER.encode(&ds),
            format!(
                "D960{}",
                "0D02B4C8C1FE2E7477127B27115656AD6256F424625BF5C1E2770CE6D6E37DF61D17"
            )
        );
    }

    /// The PKCS#8 v1 document ring reads for a P-256 key: the private
    /// scalar and the public point (0x04 || x || y).
    pub(crate) fn p256_pkcs8(private: &[u8], public: &[u8]) -> Vec<u8> {
        let mut der = vec![
            0x30, 0x81, 0x87, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce,
            0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04,
            0x6d, 0x30, 0x6b, 0x02, 0x01, 0x01, 0x04, 0x20,
        ];
        der.extend_from_slice(private);
        der.extend_from_slice(&[0xa1, 0x44, 0x03, 0x42, 0x00, 0x04]);
        der.extend_from_slice(public);
        der
    }

    /// The PKCS#8 v1 document of an Ed25519 seed (RFC 8410 section 7).
    pub(crate) fn ed25519_pkcs8(seed: &[u8]) -> Vec<u8> {
        let mut der = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        der.extend_from_slice(seed);
        der
    }

    /// RFC 8080 section 6.1: the Ed25519 seed gives the RFC's DNSKEY, key
    /// tag 3613 and DS.
    #[test]
    fn ed25519_key_of_rfc8080_example() {
        let seed = BASE64
            .decode(b"ODIyNjAzODQ2MjgwODAxMjI2NDUxOTAyMDQxNDIyNjI=")
            .unwrap();
        let key = SigningKey::from_pkcs8(Algorithm::Ed25519, KeyRole::Csk, &ed25519_pkcs8(&seed))
            .unwrap();
        assert_eq!(
            BASE64.encode(key.public_key()),
            "l02Woi0iS8Aa25FQkUd9RMzZHJpBoRQwAQEX1SxZJA4="
        );
        assert_eq!(key.key_tag(), 3613);
        let ds = key.ds_rdata(name("example.com.").as_name());
        assert_eq!(&ds[..4], &[0x0e, 0x1d, 15, DIGEST_SHA256]);
        assert_eq!(
            HEXUPPER.encode(&ds[4..]),
            "3AA5AB37EFCE57F737FC1627013FEE07BDF241BD10F3B1964AB55C78E79A304B"
        );
    }

    /// Generated keys load back from their PKCS#8, with the flags of their
    /// role and public keys of the DNSSEC lengths.
    #[test]
    fn generated_keys_round_trip() {
        for (algorithm, length) in [
            (Algorithm::EcdsaP256Sha256, P256_PUBLIC_KEY_LEN),
            (Algorithm::Ed25519, ED25519_PUBLIC_KEY_LEN),
        ] {
            let (key, pkcs8) = SigningKey::generate(algorithm, KeyRole::Zsk).unwrap();
            assert_eq!(key.public_key().len(), length);
            assert_eq!(key.dnskey_rdata()[..4], [1, 0, 3, algorithm.number()]);
            let again = SigningKey::from_pkcs8(algorithm, KeyRole::Zsk, &pkcs8).unwrap();
            assert_eq!(again.dnskey_rdata(), key.dnskey_rdata());
            assert_eq!(key.sign(b"data").unwrap().len(), 64);
        }
    }

    /// A key of one algorithm is not read as the other, nor is garbage.
    #[test]
    fn wrong_pkcs8_is_rejected() {
        let ed25519 = generate_pkcs8(Algorithm::Ed25519).unwrap();
        assert!(matches!(
            SigningKey::from_pkcs8(Algorithm::EcdsaP256Sha256, KeyRole::Csk, &ed25519),
            Err(KeyError::Rejected(_))
        ));
        assert!(SigningKey::from_pkcs8(Algorithm::Ed25519, KeyRole::Csk, b"\x30\x00").is_err());
    }
}
