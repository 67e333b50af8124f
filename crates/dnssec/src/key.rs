//! DNSSEC keys: generation and loading (ring), the DNSKEY RDATA, its key
//! tag and its DS.
//!
//! The private key lives only inside ring's key pair; what leaves this
//! module is the PKCS#8 document ring generates (for whoever stores it)
//! and the public parts: the DNSKEY RDATA (RFC 4034 section 2.1), the key
//! tag (RFC 4034 appendix B) and the DS RDATA with a SHA-256 digest
//! (RFC 4034 section 5.1.4, RFC 4509).
//!
//! RSA keys are the exception to "ring only": ring signs with RSA but
//! cannot generate an RSA key, so [`generate_rsa_pkcs8`] makes one with
//! RustCrypto's `rsa` crate (randomness from the operating system) and
//! hands ring its PKCS#8 document; every signature is still ring's.
//!
//! [`p256_pkcs8`], [`ed25519_pkcs8`] and [`rsa_pkcs8`] wrap private keys
//! given as their raw parts (BIND's `.private` files, say) into the PKCS#8
//! documents ring reads; ring then checks that the parts make a key.

use std::fmt;

use ring::rand::SystemRandom;
use ring::rsa::PublicKeyComponents;
use ring::signature::{
    EcdsaKeyPair, Ed25519KeyPair, KeyPair, RsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING,
    RSA_PKCS1_SHA256,
};
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

/// The length of a P-256 private key (the scalar) and of an Ed25519 seed.
pub const PRIVATE_KEY_LEN: usize = 32;

/// The smallest RSA modulus, in bits, tern generates or signs with: ring
/// signs with nothing smaller (and RFC 8624 section 3.1 and NIST SP 800-57
/// want at least 2048 bits).
pub const RSA_MIN_BITS: usize = 2048;

/// The largest RSA modulus, in bits: ring signs with nothing larger, and
/// RFC 3110 keys above it are rare.
pub const RSA_MAX_BITS: usize = 4096;

/// The RSA modulus generated when the policy names no size (BIND's and
/// Knot's default).
pub const RSA_DEFAULT_BITS: usize = 2048;

/// The public exponent of generated RSA keys (F4, as BIND and Knot).
const RSA_EXPONENT: u32 = 65_537;

//----------- Algorithm ------------------------------------------------------

/// A DNSSEC signing algorithm this crate signs with (RFC 8624 section
/// 3.1: a signer must implement RSA/SHA-256 and ECDSA P-256, and is
/// recommended Ed25519).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// RSA with SHA-256 (PKCS #1 v1.5), number 8 (RFC 5702).
    RsaSha256,
    /// ECDSA on P-256 with SHA-256, number 13 (RFC 6605).
    EcdsaP256Sha256,
    /// Ed25519, number 15 (RFC 8080).
    Ed25519,
}

impl Algorithm {
    /// The algorithm number of the DNSKEY, RRSIG and DS fields.
    pub const fn number(self) -> u8 {
        match self {
            Algorithm::RsaSha256 => 8,
            Algorithm::EcdsaP256Sha256 => 13,
            Algorithm::Ed25519 => 15,
        }
    }

    /// The algorithm with this number, if this crate signs with it.
    pub const fn from_number(number: u8) -> Option<Algorithm> {
        match number {
            8 => Some(Algorithm::RsaSha256),
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
    /// An RSA modulus size outside [`RSA_MIN_BITS`]..=[`RSA_MAX_BITS`].
    RsaSize(usize),
    /// A key's raw part has the wrong length or form (the part's name).
    Part(&'static str),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::Generate => f.write_str("cannot generate a key pair"),
            KeyError::Rejected(reason) => write!(f, "PKCS#8 key rejected: {reason}"),
            KeyError::PublicKey => f.write_str("P-256 public key not an uncompressed point"),
            KeyError::Sign => f.write_str("signing failed"),
            KeyError::RsaSize(bits) => write!(
                f,
                "an RSA key of {bits} bits: tern signs with {RSA_MIN_BITS} to {RSA_MAX_BITS} bits"
            ),
            KeyError::Part(part) => write!(f, "the key's {part} is malformed"),
        }
    }
}

impl std::error::Error for KeyError {}

//----------- generate_pkcs8 -------------------------------------------------

/// Generates a new key pair of `algorithm` and returns it as a PKCS#8
/// document (DER), the form [`SigningKey::from_pkcs8`] reads: ECDSA and
/// Ed25519 with ring (randomness from ring's `SystemRandom`, PKCS#8 v2),
/// RSA as [`generate_rsa_pkcs8`] with [`RSA_DEFAULT_BITS`].
pub fn generate_pkcs8(algorithm: Algorithm) -> Result<Vec<u8>, KeyError> {
    generate_pkcs8_sized(algorithm, RSA_DEFAULT_BITS)
}

/// [`generate_pkcs8`] with an RSA modulus of `rsa_bits` (not looked at
/// for the other algorithms).
pub fn generate_pkcs8_sized(algorithm: Algorithm, rsa_bits: usize) -> Result<Vec<u8>, KeyError> {
    let random = SystemRandom::new();
    let document = match algorithm {
        Algorithm::RsaSha256 => return generate_rsa_pkcs8(rsa_bits),
        Algorithm::EcdsaP256Sha256 => {
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &random)
        }
        Algorithm::Ed25519 => Ed25519KeyPair::generate_pkcs8(&random),
    }
    .map_err(|_| KeyError::Generate)?;
    Ok(document.as_ref().to_vec())
}

/// Generates an RSA key of `bits` bits (within [`RSA_MIN_BITS`] and
/// [`RSA_MAX_BITS`]) and public exponent 65537 with RustCrypto's `rsa`
/// crate, its primes from the operating system's randomness (`OsRng`),
/// and returns it as a PKCS#8 v1 document (DER). Only the generation is
/// that crate's: ring reads the document and makes every signature.
pub fn generate_rsa_pkcs8(bits: usize) -> Result<Vec<u8>, KeyError> {
    use rsa::pkcs8::EncodePrivateKey as _;
    if !(RSA_MIN_BITS..=RSA_MAX_BITS).contains(&bits) {
        return Err(KeyError::RsaSize(bits));
    }
    let exponent = rsa::BigUint::from(RSA_EXPONENT);
    let key = rsa::RsaPrivateKey::new_with_exp(&mut rsa::rand_core::OsRng, bits, &exponent)
        .map_err(|_| KeyError::Generate)?;
    let document = key.to_pkcs8_der().map_err(|_| KeyError::Generate)?;
    Ok(document.as_bytes().to_vec())
}

//----------- PKCS#8 from a key's parts -------------------------------------

/// The PKCS#8 v1 document ring reads for a P-256 key: the private scalar
/// (32 octets) and the public key in DNSSEC form (x and y, 64 octets),
/// as an RFC 5915 ECPrivateKey inside RFC 5208's PrivateKeyInfo. Whether
/// the two belong together is for ring to check when it reads it.
pub fn p256_pkcs8(private: &[u8], public: &[u8]) -> Result<Vec<u8>, KeyError> {
    if private.len() != PRIVATE_KEY_LEN {
        return Err(KeyError::Part("P-256 private key"));
    }
    if public.len() != P256_PUBLIC_KEY_LEN {
        return Err(KeyError::Part("P-256 public key"));
    }
    // SEQUENCE { INTEGER 0, SEQUENCE { id-ecPublicKey, prime256v1 },
    // OCTET STRING { SEQUENCE { INTEGER 1, OCTET STRING private,
    // [1] { BIT STRING 0x04 || public } } } }: every length is fixed.
    let mut der = vec![
        0x30, 0x81, 0x87, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d,
        0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04, 0x6d, 0x30,
        0x6b, 0x02, 0x01, 0x01, 0x04, 0x20,
    ];
    der.extend_from_slice(private);
    der.extend_from_slice(&[0xa1, 0x44, 0x03, 0x42, 0x00, 0x04]);
    der.extend_from_slice(public);
    Ok(der)
}

/// A P-256 private scalar as other software writes it, as the 32 octets
/// [`p256_pkcs8`] takes: leading zeros dropped, then padded to 32. BIND's
/// `.private` files (OpenSSL's `BN_bn2bin`) write it without its leading
/// zero octets (31 octets one key in 256), GnuTLS as an INTEGER (33 with
/// a leading zero when the top bit is set). Bound: one pass.
pub fn p256_scalar(scalar: &[u8]) -> Result<[u8; PRIVATE_KEY_LEN], KeyError> {
    let start = scalar.iter().position(|&b| b != 0).unwrap_or(scalar.len());
    let significant = &scalar[start..];
    if significant.is_empty() || significant.len() > PRIVATE_KEY_LEN {
        return Err(KeyError::Part("P-256 private key"));
    }
    let mut private = [0u8; PRIVATE_KEY_LEN];
    private[PRIVATE_KEY_LEN - significant.len()..].copy_from_slice(significant);
    Ok(private)
}

/// The id-ecPublicKey algorithm (RFC 5480 section 2.1.1).
const OID_EC_PUBLIC_KEY: &str = "1.2.840.10045.2.1";

/// The prime256v1 (secp256r1) curve (RFC 5480 section 2.1.1.1).
const OID_P256: &str = "1.2.840.10045.3.1.7";

/// A P-256 PKCS#8 document as other software writes it, rewritten in the
/// form ring reads ([`p256_pkcs8`]): GnuTLS, so Knot's `keys/*.pem`,
/// writes the private scalar as 33 octets with a leading zero (an
/// INTEGER's form; RFC 5915 wants 32), which ring refuses. The document
/// is parsed with RustCrypto's `pkcs8` and `der` crates: PrivateKeyInfo
/// of id-ecPublicKey on P-256 holding an ECPrivateKey of version 1 with
/// its public key (the curve parameters, if there, must be P-256's). The
/// scalar is taken without leading zeros, padded to 32 octets; whether it
/// and the public key belong together is for ring to check.
pub fn p256_pkcs8_repaired(document: &[u8]) -> Result<Vec<u8>, KeyError> {
    use rsa::pkcs8::der::asn1::{BitStringRef, ObjectIdentifier, OctetStringRef};
    use rsa::pkcs8::der::{Decode as _, Reader as _, SliceReader, TagMode, TagNumber};
    let bad = |_| KeyError::Part("P-256 PKCS#8 document");
    let info = rsa::pkcs8::PrivateKeyInfo::from_der(document).map_err(bad)?;
    let curve = info
        .algorithm
        .parameters_oid()
        .map_err(|_| KeyError::Part("P-256 PKCS#8 curve"))?;
    if info.algorithm.oid != ObjectIdentifier::new_unwrap(OID_EC_PUBLIC_KEY)
        || curve != ObjectIdentifier::new_unwrap(OID_P256)
    {
        return Err(KeyError::Part("P-256 PKCS#8 algorithm"));
    }
    let mut reader = SliceReader::new(info.private_key).map_err(bad)?;
    let (scalar, public) = reader
        .sequence(|reader| {
            let version = u8::decode(reader)?;
            let scalar = OctetStringRef::decode(reader)?;
            let parameters =
                reader.context_specific::<ObjectIdentifier>(TagNumber::N0, TagMode::Explicit)?;
            let public =
                reader.context_specific::<BitStringRef<'_>>(TagNumber::N1, TagMode::Explicit)?;
            Ok((version, scalar, parameters, public))
        })
        .map_err(bad)
        .and_then(|(version, scalar, parameters, public)| {
            if version != 1
                || parameters.is_some_and(|oid| oid != ObjectIdentifier::new_unwrap(OID_P256))
            {
                return Err(KeyError::Part("P-256 ECPrivateKey"));
            }
            let public = public
                .and_then(|bits| bits.as_bytes())
                .ok_or(KeyError::Part("P-256 public key"))?;
            Ok((scalar.as_bytes(), public))
        })?;
    let private = p256_scalar(scalar)?;
    let public = match public.split_first() {
        Some((0x04, coordinates)) => coordinates,
        _ => return Err(KeyError::Part("P-256 public key")),
    };
    p256_pkcs8(&private, public)
}

/// The PKCS#8 v1 document of an Ed25519 seed (32 octets; RFC 8410
/// section 7).
pub fn ed25519_pkcs8(seed: &[u8]) -> Result<Vec<u8>, KeyError> {
    if seed.len() != PRIVATE_KEY_LEN {
        return Err(KeyError::Part("Ed25519 private key"));
    }
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(seed);
    Ok(der)
}

/// An RSA private key's parts, each a big-endian unsigned integer (PKCS #1,
/// RFC 8017 appendix A.1.2), as BIND's `.private` files give them.
#[derive(Clone, Copy, Debug)]
pub struct RsaParts<'a> {
    /// n (BIND: `Modulus`).
    pub modulus: &'a [u8],
    /// e (`PublicExponent`).
    pub public_exponent: &'a [u8],
    /// d (`PrivateExponent`).
    pub private_exponent: &'a [u8],
    /// p (`Prime1`).
    pub prime1: &'a [u8],
    /// q (`Prime2`).
    pub prime2: &'a [u8],
    /// d mod (p - 1) (`Exponent1`).
    pub exponent1: &'a [u8],
    /// d mod (q - 1) (`Exponent2`).
    pub exponent2: &'a [u8],
    /// q^-1 mod p (`Coefficient`).
    pub coefficient: &'a [u8],
}

/// The PKCS#8 v1 document of an RSA key given by its parts: PKCS #1's
/// RSAPrivateKey inside PrivateKeyInfo, encoded by RustCrypto's `pkcs1`
/// and `pkcs8` crates. Only the encoding is checked here (a part longer
/// than a [`RSA_MAX_BITS`] modulus is refused); that the parts make one
/// key is ring's to check when it reads the document.
pub fn rsa_pkcs8(parts: &RsaParts<'_>) -> Result<Vec<u8>, KeyError> {
    use rsa::pkcs1::der::asn1::UintRef;
    use rsa::pkcs1::der::Encode as _;
    for (name, value) in [
        ("modulus", parts.modulus),
        ("public exponent", parts.public_exponent),
        ("private exponent", parts.private_exponent),
        ("first prime", parts.prime1),
        ("second prime", parts.prime2),
        ("first exponent", parts.exponent1),
        ("second exponent", parts.exponent2),
        ("coefficient", parts.coefficient),
    ] {
        // At most a leading zero more than a modulus of RSA_MAX_BITS.
        if value.is_empty() || value.len() > RSA_MAX_BITS / 8 + 1 {
            return Err(KeyError::Part(name));
        }
    }
    let part = |name: &'static str, value| UintRef::new(value).map_err(|_| KeyError::Part(name));
    let key = rsa::pkcs1::RsaPrivateKey {
        modulus: part("modulus", parts.modulus)?,
        public_exponent: part("public exponent", parts.public_exponent)?,
        private_exponent: part("private exponent", parts.private_exponent)?,
        prime1: part("first prime", parts.prime1)?,
        prime2: part("second prime", parts.prime2)?,
        exponent1: part("first exponent", parts.exponent1)?,
        exponent2: part("second exponent", parts.exponent2)?,
        coefficient: part("coefficient", parts.coefficient)?,
        other_prime_infos: None,
    };
    let inner = key.to_der().map_err(|_| KeyError::Part("encoding"))?;
    rsa::pkcs8::PrivateKeyInfo::new(rsa::pkcs1::ALGORITHM_ID, &inner)
        .to_der()
        .map_err(|_| KeyError::Part("encoding"))
}

/// The public key field of an RSA DNSKEY (RFC 3110 section 2): the
/// exponent's length (one octet, or zero and two octets when above 255),
/// the exponent, the modulus; both big-endian without leading zeros.
pub fn rsa_public_key(exponent: &[u8], modulus: &[u8]) -> Vec<u8> {
    let strip = |bytes: &[u8]| -> Vec<u8> {
        let start = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
        bytes[start..].to_vec()
    };
    let (exponent, modulus) = (strip(exponent), strip(modulus));
    let mut key = Vec::with_capacity(3 + exponent.len() + modulus.len());
    match u8::try_from(exponent.len()) {
        Ok(length) => key.push(length),
        Err(_) => {
            key.push(0);
            // An exponent above 65535 octets is not an RSA key anyone
            // reads; ring's are at most 33 bits.
            key.extend_from_slice(
                &u16::try_from(exponent.len())
                    .unwrap_or(u16::MAX)
                    .to_be_bytes(),
            );
        }
    }
    key.extend_from_slice(&exponent);
    key.extend_from_slice(&modulus);
    key
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
    Rsa(RsaKeyPair),
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

impl SigningKey {
    /// Reads a PKCS#8 (DER) private key of `algorithm`. ECDSA keys must
    /// carry their public key (as ring and OpenSSL write them); Ed25519
    /// keys may be PKCS#8 v1 (seed only) or v2 (seed and public key, which
    /// is then checked against the seed); RSA keys are PKCS #1 keys of two
    /// primes, [`RSA_MIN_BITS`] to [`RSA_MAX_BITS`] bits, with a public
    /// exponent of at least 65537, checked by ring.
    pub fn from_pkcs8(algorithm: Algorithm, role: KeyRole, pkcs8: &[u8]) -> Result<Self, KeyError> {
        let random = SystemRandom::new();
        let (pair, public) = match algorithm {
            Algorithm::RsaSha256 => {
                let pair = RsaKeyPair::from_pkcs8(pkcs8).map_err(KeyError::Rejected)?;
                let components = PublicKeyComponents::<Vec<u8>>::from(pair.public());
                let public = rsa_public_key(&components.e, &components.n);
                (Pair::Rsa(pair), public)
            }
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
        SigningKey::generate_sized(algorithm, role, RSA_DEFAULT_BITS)
    }

    /// [`SigningKey::generate`] with an RSA modulus of `rsa_bits` (not
    /// looked at for the other algorithms).
    pub fn generate_sized(
        algorithm: Algorithm,
        role: KeyRole,
        rsa_bits: usize,
    ) -> Result<(Self, Vec<u8>), KeyError> {
        let pkcs8 = generate_pkcs8_sized(algorithm, rsa_bits)?;
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

    /// Signs `message`: for ECDSA the fixed r || s form of RFC 6605
    /// section 4, 64 octets (with a fresh random nonce from
    /// `SystemRandom`), for Ed25519 RFC 8032's 64 octets, for RSA PKCS #1
    /// v1.5 with SHA-256 (RFC 5702 section 3), as long as the modulus.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, KeyError> {
        match &self.pair {
            Pair::Rsa(pair) => {
                let mut signature = vec![0; pair.public().modulus_len()];
                pair.sign(&RSA_PKCS1_SHA256, &self.random, message, &mut signature)
                    .map_err(|_| KeyError::Sign)?;
                Ok(signature)
            }
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
            &p256_pkcs8(&private, &public).unwrap(),
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

    /// RFC 8080 section 6.1: the Ed25519 seed gives the RFC's DNSKEY, key
    /// tag 3613 and DS.
    #[test]
    fn ed25519_key_of_rfc8080_example() {
        let seed = BASE64
            .decode(b"ODIyNjAzODQ2MjgwODAxMjI2NDUxOTAyMDQxNDIyNjI=")
            .unwrap();
        let key = SigningKey::from_pkcs8(
            Algorithm::Ed25519,
            KeyRole::Csk,
            &ed25519_pkcs8(&seed).unwrap(),
        )
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
        assert!(SigningKey::from_pkcs8(Algorithm::RsaSha256, KeyRole::Csk, &ed25519).is_err());
        // Parts of the wrong length are refused before ring sees them.
        assert!(matches!(
            p256_pkcs8(&[1; 31], &[2; 64]),
            Err(KeyError::Part(_))
        ));
        assert!(matches!(
            p256_pkcs8(&[1; 32], &[2; 65]),
            Err(KeyError::Part(_))
        ));
        assert!(matches!(ed25519_pkcs8(&[1; 33]), Err(KeyError::Part(_))));
        // A scalar as BIND and GnuTLS write it: 32 octets either way.
        let mut padded = [0u8; 32];
        padded[1..].copy_from_slice(&[7; 31]);
        assert_eq!(p256_scalar(&[7; 31]).ok(), Some(padded));
        assert_eq!(
            p256_scalar(&[[0u8].as_slice(), &padded].concat()).ok(),
            Some(padded)
        );
        assert_eq!(p256_scalar(&[9; 32]).ok(), Some([9; 32]));
        assert!(p256_scalar(&[1; 33]).is_err());
        assert!(p256_scalar(&[0; 32]).is_err());
        assert!(p256_scalar(&[]).is_err());
    }

    /// The RSA/SHA-256 key of RFC 5702 section 6.1 (512 bits), given by its
    /// parts as BIND's `.private` file gives them: its DNSKEY (RFC 3110's
    /// public key) and key tag 9033 are the RFC's, its PKCS#8 encodes, and
    /// ring refuses to sign with a key that small.
    #[test]
    fn rsa_key_of_rfc5702_example() {
        let part = |text: &str| BASE64.decode(text.as_bytes()).unwrap();
        let modulus = part(
            "wVwaxrHF2CK64aYKRUibLiH30KpPuPBjel7E8ZydQW1HYWHfoGmidzC2RnhwCC293hCzw+TFR2nqn8OVSY5t2Q==",
        );
        let exponent = part("AQAB");
        let public = rsa_public_key(&exponent, &modulus);
        assert_eq!(
            BASE64.encode(&public),
            "AwEAAcFcGsaxxdgiuuGmCkVImy4h99CqT7jwY3pexPGcnUFtR2Fh36BponcwtkZ4cAgtvd4Qs8PkxUdp6p/DlUmObdk="
        );
        assert_eq!(key_tag(&dnskey_rdata(256, 8, &public)), 9033);
        let (d, p, q, dp, dq, qi) = (
            part("UR44xX6zB3eaeyvTRzmskHADrPCmPWnr8dxsNwiDGHzrMKLN+i/HAam+97HxIKVWNDH2ba9Mf1SA8xu9dcHZAQ=="),
            part("4c8IvFu1AVXGWeFLLFh5vs7fbdzdC6U82fduE6KkSWk="),
            part("2zZpBE8ZXVnL74QjG4zINlDfH+EOEtjJJ3RtaYDugvE="),
            part("G2xAPFfK0KGxGANDVNxd1K1c9wOmmJ51mGbzKFFNMFk="),
            part("GYxP1Pa7CAwtHm8SAGX594qZVofOMhgd6YFCNyeVpKE="),
            part("icQdNRjlZGPmuJm2TIadubcO8X7V4y07aVhX464tx8Q="),
        );
        let parts = RsaParts {
            modulus: &modulus,
            public_exponent: &exponent,
            private_exponent: &d,
            prime1: &p,
            prime2: &q,
            exponent1: &dp,
            exponent2: &dq,
            coefficient: &qi,
        };
        let pkcs8 = rsa_pkcs8(&parts).unwrap();
        assert!(matches!(
            SigningKey::from_pkcs8(Algorithm::RsaSha256, KeyRole::Zsk, &pkcs8),
            Err(KeyError::Rejected(_))
        ));
        // An empty or overlong part is refused.
        assert!(matches!(
            rsa_pkcs8(&RsaParts {
                coefficient: &[],
                ..parts
            }),
            Err(KeyError::Part("coefficient"))
        ));
        let long = vec![0xff; RSA_MAX_BITS / 8 + 2];
        assert!(matches!(
            rsa_pkcs8(&RsaParts {
                modulus: &long,
                ..parts
            }),
            Err(KeyError::Part("modulus"))
        ));
    }

    /// Knot's (GnuTLS's) P-256 PKCS#8, its scalar as 33 octets with a
    /// leading zero, which ring refuses as it is: repaired, ring reads it,
    /// with the key tag `keymgr list` printed. Other documents are refused
    /// with a reason, and a well-formed one comes out as it went in.
    #[test]
    fn knot_p256_pkcs8_is_repaired() {
        let knot = BASE64
            .decode(
                b"MIGUAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHoweAIBAQQhAM//CuSCK2peRVtq\
                  q5fL0OVZl1IU6nYJj+fqRf0aoiZqoAoGCCqGSM49AwEHoUQDQgAETaEg2pTNbdAf\
                  X7fiSNONOkRJYhO9iyc2JO1Tpog3J+uaGToXFNgnnm1gqZWLYcro6dvIwGiTQVNF\
                  yMTq6dviEw==",
            )
            .unwrap();
        assert!(SigningKey::from_pkcs8(Algorithm::EcdsaP256Sha256, KeyRole::Csk, &knot).is_err());
        let repaired = p256_pkcs8_repaired(&knot).unwrap();
        let key =
            SigningKey::from_pkcs8(Algorithm::EcdsaP256Sha256, KeyRole::Csk, &repaired).unwrap();
        assert_eq!(key.key_tag(), 34649);
        let generated = generate_pkcs8(Algorithm::EcdsaP256Sha256).unwrap();
        let again = p256_pkcs8_repaired(&generated).unwrap();
        assert_eq!(
            SigningKey::from_pkcs8(Algorithm::EcdsaP256Sha256, KeyRole::Csk, &again)
                .unwrap()
                .dnskey_rdata(),
            SigningKey::from_pkcs8(Algorithm::EcdsaP256Sha256, KeyRole::Csk, &generated)
                .unwrap()
                .dnskey_rdata()
        );
        let ed25519 = generate_pkcs8(Algorithm::Ed25519).unwrap();
        assert!(matches!(
            p256_pkcs8_repaired(&ed25519),
            Err(KeyError::Part(_))
        ));
        for cut in 0..knot.len() {
            assert!(p256_pkcs8_repaired(&knot[..cut]).is_err());
        }
    }

    /// RFC 3110 section 2: an exponent above 255 octets is written after a
    /// zero octet in two octets.
    #[test]
    fn rsa_public_key_with_a_long_exponent() {
        let key = rsa_public_key(&[0, 0, 1, 0, 1], &[0, 0xc1, 2]);
        assert_eq!(key, [3, 1, 0, 1, 0xc1, 2]);
        let long = vec![1; 300];
        let key = rsa_public_key(&long, &[0xc1]);
        assert_eq!(key[..3], [0, 1, 44]);
        assert_eq!(key.len(), 3 + 300 + 1);
    }

    /// A generated RSA key (2048 bits, exponent 65537) loads back from its
    /// PKCS#8, its DNSKEY is RFC 3110's form, and its signatures (256
    /// octets) verify with ring against that public key.
    #[test]
    fn generated_rsa_key_signs_and_verifies() {
        let (key, pkcs8) =
            SigningKey::generate_sized(Algorithm::RsaSha256, KeyRole::Ksk, RSA_MIN_BITS).unwrap();
        assert_eq!(key.dnskey_rdata()[..4], [1, 1, 3, 8]);
        let public = key.public_key();
        assert_eq!(public[..4], [3, 1, 0, 1]);
        let modulus = &public[4..];
        assert_eq!(modulus.len(), 256);
        assert!(modulus[0] & 0x80 != 0);
        let again = SigningKey::from_pkcs8(Algorithm::RsaSha256, KeyRole::Ksk, &pkcs8).unwrap();
        assert_eq!(again.dnskey_rdata(), key.dnskey_rdata());
        let signature = key.sign(b"data").unwrap();
        assert_eq!(signature.len(), 256);
        let components = ring::rsa::PublicKeyComponents {
            n: modulus,
            e: &[1u8, 0, 1][..],
        };
        components
            .verify(
                &ring::signature::RSA_PKCS1_2048_8192_SHA256,
                b"data",
                &signature,
            )
            .unwrap();
        assert!(components
            .verify(
                &ring::signature::RSA_PKCS1_2048_8192_SHA256,
                b"other",
                &signature
            )
            .is_err());
        // PKCS #1 v1.5 signatures are deterministic.
        assert_eq!(again.sign(b"data").unwrap(), signature);
    }

    /// RSA sizes outside 2048..=4096 bits are refused before any work.
    #[test]
    fn rsa_sizes_outside_the_limits_are_refused() {
        for bits in [0, 1024, RSA_MIN_BITS - 1, RSA_MAX_BITS + 1] {
            assert!(matches!(generate_rsa_pkcs8(bits), Err(KeyError::RsaSize(b)) if b == bits));
        }
    }
}
