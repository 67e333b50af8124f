//! One RRSIG over one RRset (RFC 4034 sections 3 and 6).
//!
//! The signed data (section 3.1.8.1) is the RRSIG RDATA without its
//! signature, the signer's name lowercased, followed by each RR of the
//! RRset in canonical order (`canonical`): owner lowercased, type, class,
//! the original TTL, RDATA length and canonical RDATA.

use tern_wire::name::Name;
use tern_wire::types::{RClass, RType};

use crate::canonical::{canonical_rrset, rrsig_labels};
use crate::key::{KeyError, SigningKey};

/// The most seconds between inception and expiration: below 2^31, as the
/// serial-number arithmetic of RFC 4034 section 3.1.5 needs to tell which
/// comes first.
pub const MAX_VALIDITY: u32 = (1 << 31) - 1;

//----------- Validity -------------------------------------------------------

/// When signatures are valid: inception and expiration as Unix times
/// (seconds), stored modulo 2^32 as the RRSIG fields hold them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validity {
    inception: u32,
    expiration: u32,
}

impl Validity {
    /// The interval from `inception` to `expiration` (Unix times), or
    /// `None` when expiration is not after inception or the interval is
    /// longer than [`MAX_VALIDITY`].
    pub fn new(inception: u64, expiration: u64) -> Option<Validity> {
        let length = expiration.checked_sub(inception)?;
        if length == 0 || length > u64::from(MAX_VALIDITY) {
            return None;
        }
        Some(Validity {
            inception: inception as u32,
            expiration: expiration as u32,
        })
    }

    /// The inception field (the Unix time modulo 2^32).
    pub fn inception(self) -> u32 {
        self.inception
    }

    /// The expiration field (the Unix time modulo 2^32).
    pub fn expiration(self) -> u32 {
        self.expiration
    }
}

//----------- Rrset ----------------------------------------------------------

/// An RRset to sign: its owner (as written; it is lowercased here), class,
/// type, TTL (the original TTL of the RRSIG) and RDATA in any order,
/// duplicates allowed.
#[derive(Clone, Copy, Debug)]
pub struct Rrset<'a> {
    /// The owner.
    pub owner: Name<'a>,
    /// The class.
    pub class: RClass,
    /// The type.
    pub rtype: RType,
    /// The TTL.
    pub ttl: u32,
    /// The RDATA of each record, uncompressed.
    pub rdata: &'a [&'a [u8]],
}

//----------- sign_rrset -----------------------------------------------------

/// The RRSIG RDATA of `key`'s signature over `rrset`, with `signer` (the
/// zone's apex) as signer's name, written lowercased.
pub fn sign_rrset(
    rrset: &Rrset<'_>,
    signer: Name<'_>,
    key: &SigningKey,
    validity: Validity,
) -> Result<Vec<u8>, KeyError> {
    let mut rdata = rrsig_prefix(rrset, signer, key, validity);
    let data = signed_data(rrset, &rdata);
    let signature = key.sign(&data)?;
    rdata.extend_from_slice(&signature);
    Ok(rdata)
}

/// The RRSIG RDATA up to the signature (RFC 4034 section 3.1).
fn rrsig_prefix(
    rrset: &Rrset<'_>,
    signer: Name<'_>,
    key: &SigningKey,
    validity: Validity,
) -> Vec<u8> {
    let signer = signer.to_lower();
    let mut rdata = Vec::with_capacity(18 + signer.as_bytes().len() + 64);
    rdata.extend_from_slice(&rrset.rtype.0.to_be_bytes());
    rdata.push(key.algorithm().number());
    rdata.push(rrsig_labels(rrset.owner));
    rdata.extend_from_slice(&rrset.ttl.to_be_bytes());
    rdata.extend_from_slice(&validity.expiration().to_be_bytes());
    rdata.extend_from_slice(&validity.inception().to_be_bytes());
    rdata.extend_from_slice(&key.key_tag().to_be_bytes());
    rdata.extend_from_slice(signer.as_bytes());
    rdata
}

/// What the signature covers: `prefix` (the RRSIG RDATA without the
/// signature) and each RR in canonical form and order (RFC 4034 section
/// 3.1.8.1).
fn signed_data(rrset: &Rrset<'_>, prefix: &[u8]) -> Vec<u8> {
    let owner = rrset.owner.to_lower();
    let records = canonical_rrset(rrset.rtype, rrset.rdata);
    let per_record = owner.as_bytes().len() + 10;
    let size = prefix.len()
        + records
            .iter()
            .map(|rdata| per_record + rdata.len())
            .sum::<usize>();
    let mut data = Vec::with_capacity(size);
    data.extend_from_slice(prefix);
    for rdata in &records {
        data.extend_from_slice(owner.as_bytes());
        data.extend_from_slice(&rrset.rtype.0.to_be_bytes());
        data.extend_from_slice(&rrset.class.0.to_be_bytes());
        data.extend_from_slice(&rrset.ttl.to_be_bytes());
        // RDATA of a record is at most 65535 octets (the zone scanner's
        // MAX_RDATA_LEN, the wire's 16-bit length).
        data.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        data.extend_from_slice(rdata);
    }
    data
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use data_encoding::BASE64;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
    use tern_wire::name::NameBuf;

    use super::*;
    use crate::key::ed25519_pkcs8;
    use crate::key::{Algorithm, KeyRole};

    fn name(text: &str) -> NameBuf {
        NameBuf::from_text(text.as_bytes(), None).unwrap()
    }

    /// RFC 8080 section 6.1 (as corrected by verified erratum 4935: labels
    /// 2): Ed25519 is deterministic, so the RRSIG over `example.com. 3600
    /// IN MX 10 mail.example.com.` is the RFC's to the octet. The owner and
    /// the name in the MX are written in upper case here: the signature
    /// covers their canonical form.
    #[test]
    fn ed25519_rrsig_of_rfc8080_example() {
        let seed = BASE64
            .decode(b"ODIyNjAzODQ2MjgwODAxMjI2NDUxOTAyMDQxNDIyNjI=")
            .unwrap();
        let key = SigningKey::from_pkcs8(
            Algorithm::Ed25519,
            KeyRole::Csk,
            &ed25519_pkcs8(&seed).unwrap(),
        )
        .unwrap();
        let owner = name("EXAMPLE.com.");
        let mx: &[u8] = b"\x00\x0a\x04MAIL\x07example\x03com\x00";
        let rrset = Rrset {
            owner: owner.as_name(),
            class: RClass::IN,
            rtype: RType::MX,
            ttl: 3600,
            rdata: &[mx],
        };
        let validity = Validity::new(1438207200, 1440021600).unwrap();
        let rdata = sign_rrset(&rrset, name("Example.COM.").as_name(), &key, validity).unwrap();
        let mut expected = vec![0, 15, 15, 2, 0, 0, 0x0e, 0x10];
        expected.extend_from_slice(&1440021600u32.to_be_bytes());
        expected.extend_from_slice(&1438207200u32.to_be_bytes());
        expected.extend_from_slice(&3613u16.to_be_bytes());
        expected.extend_from_slice(b"\x07example\x03com\x00");
        expected.extend_from_slice(
            &BASE64
                .decode(
                    b"oL9krJun7xfBOIWcGHi7mag5/hdZrKWw15jPGrHpjQeRAvTdszaPD+QLs3fx8A4M3e23mRZ9VrbpMngwcrqNAg==",
                )
                .unwrap(),
        );
        assert_eq!(rdata, expected);
    }

    /// RFC 6605 section 6.1: the RFC's ECDSA signature over
    /// `www.example.net. 3600 IN A 192.0.2.1` verifies over the data this
    /// module builds; a signature made here verifies with the public key,
    /// and fails once one octet of it is flipped.
    #[test]
    fn p256_signed_data_of_rfc6605_example() {
        let (key, public) = crate::key::tests::rfc6605_key();
        let owner = name("www.example.net.");
        let address: &[u8] = &[192, 0, 2, 1];
        let rrset = Rrset {
            owner: owner.as_name(),
            class: RClass::IN,
            rtype: RType::A,
            ttl: 3600,
            rdata: &[address],
        };
        // 20100812100439 and 20100909100439.
        let validity = Validity::new(1281607479, 1284026679).unwrap();
        let prefix = rrsig_prefix(&rrset, name("example.net.").as_name(), &key, validity);
        let data = signed_data(&rrset, &prefix);
        let mut point = vec![0x04];
        point.extend_from_slice(&public);
        let verifier = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point);
        let rfc_signature = BASE64
            .decode(
                b"qx6wLYqmh+l9oCKTN6qIc+bw6ya+KJ8oMz0YP107epXAyGmt+3SNruPFKG7tZoLBLlUzGGus7ZwmwWep666VCw==",
            )
            .unwrap();
        verifier.verify(&data, &rfc_signature).unwrap();

        let rdata = sign_rrset(&rrset, name("example.net.").as_name(), &key, validity).unwrap();
        let (fields, signature) = rdata.split_at(rdata.len() - 64);
        assert_eq!(fields, prefix.as_slice());
        verifier.verify(&data, signature).unwrap();
        let mut flipped = signature.to_vec();
        flipped[10] ^= 0x01;
        assert!(verifier.verify(&data, &flipped).is_err());
    }

    /// The order and case of the records given do not change what is
    /// signed; another TTL does.
    #[test]
    fn signed_data_is_canonical() {
        let (key, _) = SigningKey::generate(Algorithm::Ed25519, KeyRole::Zsk).unwrap();
        let validity = Validity::new(1_000_000, 2_000_000).unwrap();
        let upper = name("WWW.Example.");
        let lower = name("www.example.");
        let first: [&[u8]; 3] = [&[192, 0, 2, 2], &[192, 0, 2, 1], &[192, 0, 2, 2]];
        let second: [&[u8]; 2] = [&[192, 0, 2, 1], &[192, 0, 2, 2]];
        fn rrset<'a>(owner: &'a NameBuf, rdata: &'a [&'a [u8]], ttl: u32) -> Rrset<'a> {
            Rrset {
                owner: owner.as_name(),
                class: RClass::IN,
                rtype: RType::A,
                ttl,
                rdata,
            }
        }
        let signer = name("example.");
        let one = sign_rrset(
            &rrset(&upper, &first, 300),
            signer.as_name(),
            &key,
            validity,
        );
        let two = sign_rrset(
            &rrset(&lower, &second, 300),
            signer.as_name(),
            &key,
            validity,
        );
        assert_eq!(one.unwrap(), two.unwrap());
        let three = sign_rrset(
            &rrset(&lower, &second, 301),
            signer.as_name(),
            &key,
            validity,
        );
        let two = sign_rrset(
            &rrset(&lower, &second, 300),
            signer.as_name(),
            &key,
            validity,
        );
        assert_ne!(three.unwrap()[18..], two.unwrap()[18..]);
    }

    /// Expiration must come after inception, within 2^31 - 1 seconds.
    #[test]
    fn validity_bounds() {
        assert!(Validity::new(10, 10).is_none());
        assert!(Validity::new(10, 9).is_none());
        assert!(Validity::new(0, u64::from(MAX_VALIDITY) + 1).is_none());
        let wrapped = Validity::new(u64::from(u32::MAX), u64::from(u32::MAX) + 10).unwrap();
        assert_eq!((wrapped.inception(), wrapped.expiration()), (u32::MAX, 9));
    }
}
