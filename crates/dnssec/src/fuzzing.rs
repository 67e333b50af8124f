//! Fuzz target body for the signer (issue 24). Compiled by every build
//! (the rustls `msgs::fuzzing` pattern); `crates/fuzz/fuzz_targets/sign_zone.rs`
//! calls it and the unit tests run it over the committed seed corpus. Not
//! a stable API.
//!
//! The input is `[options, (name, name, type, value)...]`: the options
//! octet chooses NSEC or NSEC3 (bit 0), opt-out (bit 1), KSK+ZSK or a CSK
//! (bit 2), Ed25519 or ECDSA P-256 (bit 3), 0, 1 or 5 NSEC3 iterations
//! (bits 4 and 5), a salt (bit 6) and a serial served before (bit 7); each
//! further 4 octets make one record of zone-file text under `example.`:
//! an owner of up to 3 labels from a small table (so that names repeat,
//! nest, and make wildcards, delegations, glue and empty non-terminals),
//! a type from a table of 16 (DNSSEC types included: the signer must
//! replace them) and RDATA varied by the last octet. At most
//! [`MAX_RECORDS`] records, after an apex SOA, NS and the NS's address.
//! The text is scanned and checked as the loader does; a zone the checks
//! refuse is not signed. The others are signed with fixed keys, and the
//! output is checked against the zone's own records, independently of
//! the signer's code:
//!
//! - every authoritative RRset (at a delegation only the DS) has exactly
//!   one RRSIG per key of its role (the apex's DNSKEY and CDS by the KSK
//!   or CSK, every other by the ZSK or CSK), with the right type covered,
//!   algorithm, labels (a wildcard's `*` not counted), original TTL (the
//!   RRset's one TTL), validity, key tag and signer, and its signature
//!   verifies (ring) over the RRset's canonical form; nothing else is
//!   signed (glue, a delegation's NS);
//! - the DNSKEY RRset is the keys', and the records are in canonical
//!   order of owners;
//! - NSEC: one NSEC for each authoritative name and delegation, none
//!   elsewhere, each naming the next in canonical order (the last names
//!   the apex) and exactly its types with RRSIG and NSEC (a delegation:
//!   NS, DS if any, RRSIG, NSEC); no NSEC3 or NSEC3PARAM;
//! - NSEC3: the NSEC3PARAM, and one NSEC3 for each authoritative name,
//!   delegation (less insecure ones with opt-out) and empty non-terminal
//!   above them, at its hashed owner, with the parameters and flags, the
//!   next hash in hash order (the last naming the first) and its types
//!   (with RRSIG when any is signed; nothing for an empty non-terminal);
//!   no NSEC;
//! - with a serial served before, the signed serial is higher (RFC 1982).
//!
//! And no panic, whatever the bytes.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use data_encoding::{BASE32HEX_NOPAD, BASE64, HEXLOWER};
use ring::signature::{
    RsaPublicKeyComponents, UnparsedPublicKey, ECDSA_P256_SHA256_FIXED, ED25519,
    RSA_PKCS1_2048_8192_SHA256,
};
use tern_wire::name::{Name, NameBuf};
use tern_wire::types::{RClass, RType};
use tern_zone::check::{check_zone, has_errors};
use tern_zone::{parse_bytes, NoInclude, Options, Record};

use crate::canonical::canonical_rrset;
use crate::key::{Algorithm, KeyRole, SigningKey};
use crate::nsec3::{hashed_owner, nsec3_hash, Hash, Nsec3Params, HASH_LEN};
use crate::rrsig::Validity;
use crate::zone::{serial_higher, sign_zone, Denial, SignOptions};

/// The most records one input makes (besides the apex's three).
pub const MAX_RECORDS: usize = 64;

/// Octets per record of the input.
const RECORD_OCTETS: usize = 4;

/// The zone's apex.
const ORIGIN: &str = "example.";

/// The apex's SOA (TTL 3600, MINIMUM 300), NS and the NS's address.
const APEX: &str =
    "@ 3600 SOA ns hostmaster 1 7200 3600 1209600 300\n@ 3600 NS ns\nns 3600 A 192.0.2.1\n";

/// Labels owners and targets are made of: repeated, nested, a wildcard,
/// capitals (names are compared without case), escapes.
const LABELS: [&str; 16] = [
    "a", "b", "c", "*", "www", "ns", "sub", "A", "B", "xn--9a", "x-y", "\\.", "\\255", "0", "z",
    "Sub",
];

/// The types records get.
const TYPES: [&str; 16] = [
    "A",
    "AAAA",
    "TXT",
    "NS",
    "DS",
    "MX",
    "CNAME",
    "DNAME",
    "SOA",
    "NSEC",
    "RRSIG",
    "DNSKEY",
    "NSEC3PARAM",
    "CAA",
    "CDS",
    "TYPE1234",
];

/// Validity of every signature: fixed, so that runs repeat.
const INCEPTION: u64 = 1_700_000_000;
const EXPIRATION: u64 = 1_700_000_000 + 14 * 86_400;

/// The P-256 key of RFC 6605 section 6.1: private scalar, public point.
const P256_A: (&str, &str) = (
    "GU6SnQ/Ou+xC5RumuIUIuJZteXT2z0O/ok1s38Et6mQ=",
    "GojIhhXUN/u4v54ZQqGSnyhWJwaubCvTmeexv7bR6edbkrSqQpF64cYbcB7wNcP+e+MAnLr+Wi9xMWyQLc8NAA==",
);
/// A second P-256 key (made once with `openssl ecparam -genkey`), in hex.
const P256_B: (&str, &str) = (
    "37072070f4e549071b3f2e17b9ea4d373bcada631a1d7bc008eb8fc95913be96",
    "f72089c25cc4690dfac87a5e8e5ee7e9f8dc149a67ad33bfbab2585f0ab93f8c\
     d03d1ff6feb9a786cb8c1baa8e39e7497c57443c119377da62f0bf06b2dcc1c9",
);
/// Ed25519 seeds: RFC 8080 section 6.1's, and 32 octets of 0x5a.
const ED25519_A: &str = "ODIyNjAzODQ2MjgwODAxMjI2NDUxOTAyMDQxNDIyNjI=";
const ED25519_B: [u8; 32] = [0x5a; 32];

/// A P-256 PKCS#8 v1 document (the form ring reads) of a private scalar
/// and a public point without its 0x04.
fn p256_pkcs8(private: &[u8], public: &[u8]) -> Vec<u8> {
    let mut der = vec![
        0x30, 0x81, 0x87, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d,
        0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04, 0x6d, 0x30,
        0x6b, 0x02, 0x01, 0x01, 0x04, 0x20,
    ];
    der.extend_from_slice(private);
    der.extend_from_slice(&[0xa1, 0x44, 0x03, 0x42, 0x00, 0x04]);
    der.extend_from_slice(public);
    der
}

/// An Ed25519 PKCS#8 v1 document of a seed (RFC 8410 section 7).
fn ed25519_pkcs8(seed: &[u8]) -> Vec<u8> {
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(seed);
    der
}

/// The fixed keys: a CSK, or a KSK and a ZSK, of Ed25519 or else ECDSA
/// P-256 (RSA, slow to sign, is left to the unit and integration tests).
fn keys(ed25519: bool, split: bool) -> Vec<SigningKey> {
    let algorithm = if ed25519 {
        Algorithm::Ed25519
    } else {
        Algorithm::EcdsaP256Sha256
    };
    let (a, b) = if !ed25519 {
        (
            p256_pkcs8(
                &BASE64.decode(P256_A.0.as_bytes()).expect("base64"),
                &BASE64.decode(P256_A.1.as_bytes()).expect("base64"),
            ),
            p256_pkcs8(
                &HEXLOWER.decode(P256_B.0.as_bytes()).expect("hex"),
                &HEXLOWER.decode(P256_B.1.as_bytes()).expect("hex"),
            ),
        )
    } else {
        (
            ed25519_pkcs8(&BASE64.decode(ED25519_A.as_bytes()).expect("base64")),
            ed25519_pkcs8(&ED25519_B),
        )
    };
    let key = |role, pkcs8: &[u8]| {
        SigningKey::from_pkcs8(algorithm, role, pkcs8).expect("a fixed key loads")
    };
    if split {
        vec![key(KeyRole::Ksk, &a), key(KeyRole::Zsk, &b)]
    } else {
        vec![key(KeyRole::Csk, &a)]
    }
}

/// The name of labels `first`, `second`, `third` (up to `depth` of them)
/// relative to the apex: `@` for none.
fn owner_text(depth: u8, labels: [u8; 3]) -> String {
    let depth = usize::from(depth % 4);
    if depth == 0 {
        return "@".to_string();
    }
    let parts: Vec<&str> = labels[..depth]
        .iter()
        .map(|&label| LABELS[usize::from(label % 16)])
        .collect();
    parts.join(".")
}

/// One record's line of zone-file text from its 4 octets.
fn record_line(octets: &[u8]) -> String {
    let (a, b, c, value) = (octets[0], octets[1], octets[2], octets[3]);
    let owner = owner_text(a, [a >> 4, b, b >> 4]);
    let rtype = TYPES[usize::from(c & 15)];
    // A target in the zone (from the value's labels) or outside it.
    let target = match value % 4 {
        0 => "ns.example.net.".to_string(),
        _ => owner_text(value, [value >> 2, value >> 4, c >> 4]),
    };
    let ttl = [3600, 300, 60, 86_400][usize::from(c >> 6)];
    let rdata = match rtype {
        "A" => format!("192.0.2.{value}"),
        "AAAA" => format!("2001:db8::{value:x}"),
        "TXT" => format!("\"t{value}\""),
        "NS" | "CNAME" | "DNAME" => target,
        "DS" | "CDS" => format!("{value} 13 2 {}", "ab".repeat(32)),
        "MX" => format!("{value} {target}"),
        "SOA" => format!("ns hostmaster {value} 7200 3600 1209600 300"),
        "NSEC" => format!("{target} A NSEC"),
        "RRSIG" => format!("A 13 2 300 20300101000000 20200101000000 {value} example. AAAA"),
        "DNSKEY" => format!("256 3 13 {}", BASE64.encode(&[value; 64])),
        "NSEC3PARAM" => format!("1 0 {value} -"),
        "CAA" => format!("0 issue \"ca{value}\""),
        _ => format!("\\# 1 {value:02x}"),
    };
    format!("{owner} {ttl} {rtype} {rdata}\n")
}

/// The signing options the options octet chooses.
fn sign_options(options: u8) -> SignOptions {
    let denial = if options & 1 == 0 {
        Denial::Nsec
    } else {
        Denial::Nsec3(Nsec3Params {
            iterations: [0, 1, 5, 0][usize::from((options >> 4) & 3)],
            salt: if options & 0x40 != 0 {
                vec![0xab, 0xcd]
            } else {
                Vec::new()
            },
            opt_out: options & 2 != 0,
        })
    };
    SignOptions {
        validity: Validity::new(INCEPTION, EXPIRATION).expect("fixed validity"),
        dnskey_ttl: (options & 0x30 == 0x30).then_some(60),
        denial,
        serial_above: (options & 0x80 != 0).then_some(u32::MAX),
    }
}

/// The fuzz target body: whether the input made a zone that was signed
/// (for the seed test: the corpus must hold zones that sign).
pub fn sign(data: &[u8]) -> bool {
    let Some(zone) = Input::read(data) else {
        return false;
    };
    let signed = zone.sign();
    check(
        zone.origin.as_name(),
        &signed,
        &zone.keys,
        &zone.options,
        &zone.text,
    );
    true
}

/// A zone made from an input, with the keys and options to sign it.
struct Input {
    origin: NameBuf,
    text: String,
    records: Vec<Record>,
    keys: Vec<SigningKey>,
    options: SignOptions,
}

impl Input {
    /// The zone of `data`, if it scans and passes the checks.
    fn read(data: &[u8]) -> Option<Input> {
        let (&options, rest) = data.split_first()?;
        let mut text = String::from(APEX);
        for octets in rest.chunks_exact(RECORD_OCTETS).take(MAX_RECORDS) {
            text.push_str(&record_line(octets));
        }
        let origin = NameBuf::from_text(ORIGIN.as_bytes(), None).expect("a valid name");
        let zone = parse_bytes(
            text.as_bytes(),
            Path::new("fuzz"),
            origin.as_name(),
            &Options::default(),
            &mut NoInclude,
        )
        .ok()?;
        if has_errors(&check_zone(origin.as_name(), &zone.records)) {
            return None;
        }
        Some(Input {
            origin,
            text,
            records: zone.records,
            keys: keys(options & 8 != 0, options & 4 != 0),
            options: sign_options(options),
        })
    }

    /// The signed records; a zone the checks accept must sign.
    fn sign(&self) -> Vec<Record> {
        sign_zone(
            self.origin.as_name(),
            &self.records,
            &self.keys,
            &self.options,
        )
        .unwrap_or_else(|err| {
            panic!(
                "a zone the checks accept is not signed: {err}\n{}",
                self.text
            )
        })
        .records
    }
}

//----------- The oracle -----------------------------------------------------

/// What a name is in the signed zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Apex,
    Authoritative,
    Delegation,
    /// Below a delegation: neither signed nor chained.
    Occluded,
}

/// The parsed RDATA of an RRSIG, up to and with the signature.
struct Rrsig<'a> {
    covered: RType,
    algorithm: u8,
    labels: u8,
    original_ttl: u32,
    expiration: u32,
    inception: u32,
    key_tag: u16,
    signer: Name<'a>,
    /// The RDATA without the signature, which the signature covers.
    prefix: &'a [u8],
    signature: &'a [u8],
}

fn parse_rrsig(rdata: &[u8]) -> Option<Rrsig<'_>> {
    let fixed = rdata.get(..18)?;
    let u32_at =
        |at: usize| u32::from_be_bytes([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]]);
    let (signer, len) = Name::parse_prefix(&rdata[18..]).ok()?;
    Some(Rrsig {
        covered: RType(u16::from_be_bytes([fixed[0], fixed[1]])),
        algorithm: fixed[2],
        labels: fixed[3],
        original_ttl: u32_at(4),
        expiration: u32_at(8),
        inception: u32_at(12),
        key_tag: u16::from_be_bytes([fixed[16], fixed[17]]),
        signer,
        prefix: &rdata[..18 + len],
        signature: &rdata[18 + len..],
    })
}

/// The types of a type bitmap (RFC 4034 section 4.1.2), or `None` if it
/// is malformed (windows out of order, lengths out of 1..=32, trailing
/// zero octets, octets past the end). Bound: one pass over the octets.
fn bitmap_types(mut bitmap: &[u8]) -> Option<BTreeSet<u16>> {
    let mut types = BTreeSet::new();
    let mut last_window: Option<u8> = None;
    while !bitmap.is_empty() {
        let (&window, rest) = bitmap.split_first()?;
        let (&len, rest) = rest.split_first()?;
        let len = usize::from(len);
        if !(1..=32).contains(&len) || last_window.is_some_and(|last| last >= window) {
            return None;
        }
        let octets = rest.get(..len)?;
        if octets[len - 1] == 0 {
            return None;
        }
        for (index, &octet) in octets.iter().enumerate() {
            for bit in 0..8 {
                if octet & (0x80 >> bit) != 0 {
                    types.insert((u16::from(window) << 8) | (index * 8 + bit) as u16);
                }
            }
        }
        last_window = Some(window);
        bitmap = &rest[len..];
    }
    Some(types)
}

/// The RRsets of the signed zone, by lowercased owner then type: indexes
/// into the records.
type Rrsets = HashMap<Vec<u8>, HashMap<u16, Vec<usize>>>;

/// Checks the signed `records` of the zone at `origin`; panics with what
/// is wrong and the zone's text.
fn check(
    origin: Name<'_>,
    records: &[Record],
    keys: &[SigningKey],
    options: &SignOptions,
    text: &str,
) {
    macro_rules! fail {
        ($($arg:tt)*) => {
            panic!("{}\nzone:\n{text}", format!($($arg)*))
        };
    }
    let lower = |name: Name<'_>| name.to_lower().as_bytes().to_vec();
    let apex = lower(origin);

    // Ordered: owners in canonical order.
    for pair in records.windows(2) {
        if pair[0]
            .owner
            .as_name()
            .canonical_cmp(pair[1].owner.as_name())
            == Ordering::Greater
        {
            fail!("{} before {}", pair[0].owner, pair[1].owner);
        }
    }

    let mut rrsets: Rrsets = HashMap::new();
    let mut names: HashMap<Vec<u8>, NameBuf> = HashMap::new();
    for (index, record) in records.iter().enumerate() {
        let owner = lower(record.owner.as_name());
        names
            .entry(owner.clone())
            .or_insert_with(|| record.owner.as_name().to_lower().as_name().to_buf());
        rrsets
            .entry(owner)
            .or_default()
            .entry(record.rtype.0)
            .or_default()
            .push(index);
    }
    let data_types = |owner: &[u8]| -> BTreeSet<u16> {
        rrsets.get(owner).map_or_else(BTreeSet::new, |types| {
            types
                .keys()
                .copied()
                .filter(|&t| !matches!(RType(t), RType::RRSIG | RType::NSEC | RType::NSEC3))
                .collect()
        })
    };
    // Each owner with data, and what it is.
    let cut = |owner: &[u8]| owner != apex.as_slice() && data_types(owner).contains(&RType::NS.0);
    let mut kinds: HashMap<Vec<u8>, Kind> = HashMap::new();
    for owner in rrsets.keys() {
        if data_types(owner).is_empty() {
            continue;
        }
        let name = names[owner].as_name();
        let mut occluded = false;
        let mut up = name.parent();
        while let Some(parent) = up {
            if parent.label_count() <= origin.label_count() {
                break;
            }
            occluded |= cut(parent.as_bytes());
            up = parent.parent();
        }
        let kind = if owner == &apex {
            Kind::Apex
        } else if occluded {
            Kind::Occluded
        } else if cut(owner) {
            Kind::Delegation
        } else {
            Kind::Authoritative
        };
        kinds.insert(owner.clone(), kind);
    }
    if kinds.get(&apex) != Some(&Kind::Apex) {
        fail!("no apex data");
    }

    // The SOA, the DNSKEY RRset, the serial.
    let soa = &records[rrsets[&apex][&RType::SOA.0][0]];
    let minimum_at = soa.rdata.len() - 4;
    let minimum = u32::from_be_bytes(soa.rdata[minimum_at..].try_into().expect("4 octets"));
    let nsec_ttl = soa.ttl.min(minimum);
    let serial_at = soa.rdata.len() - 20;
    let serial = u32::from_be_bytes(
        soa.rdata[serial_at..serial_at + 4]
            .try_into()
            .expect("4 octets"),
    );
    if let Some(above) = options.serial_above {
        if !serial_higher(serial, above) {
            fail!("serial {serial} is not above {above}");
        }
    }
    let dnskeys: BTreeSet<&[u8]> = rrsets[&apex]
        .get(&RType::DNSKEY.0)
        .map(|indexes| indexes.iter().map(|&i| &records[i].rdata[..]).collect())
        .unwrap_or_default();
    let wanted: BTreeSet<&[u8]> = keys.iter().map(SigningKey::dnskey_rdata).collect();
    if dnskeys != wanted {
        fail!(
            "apex DNSKEY RRset of {} keys, not the {} given",
            dnskeys.len(),
            wanted.len()
        );
    }

    // Signatures: exactly the RRsets to sign, each by the keys of its role.
    let mut signed_sets = 0;
    for (owner, types) in &rrsets {
        let kind = kinds.get(owner).copied();
        let name = names[owner].as_name();
        let sigs: Vec<Rrsig<'_>> = types
            .get(&RType::RRSIG.0)
            .map(|indexes| {
                indexes
                    .iter()
                    .map(|&i| {
                        parse_rrsig(&records[i].rdata)
                            .unwrap_or_else(|| fail!("bad RRSIG at {name}"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        for (&rtype, indexes) in types {
            if rtype == RType::RRSIG.0 {
                continue;
            }
            let chain = matches!(RType(rtype), RType::NSEC | RType::NSEC3);
            let to_sign = chain
                || match kind {
                    Some(Kind::Apex | Kind::Authoritative) => true,
                    Some(Kind::Delegation) => rtype == RType::DS.0,
                    Some(Kind::Occluded) | None => false,
                };
            let by_ksk = kind == Some(Kind::Apex)
                && matches!(RType(rtype), RType::DNSKEY | RType::CDS | RType::CDNSKEY);
            let mut signers: Vec<&SigningKey> = keys
                .iter()
                .filter(|key| {
                    if by_ksk {
                        key.role().signs_keys()
                    } else {
                        key.role().signs_zone()
                    }
                })
                .collect();
            if !to_sign {
                signers.clear();
            }
            let over: Vec<&Rrsig<'_>> = sigs.iter().filter(|sig| sig.covered.0 == rtype).collect();
            if over.len() != signers.len() {
                fail!(
                    "{name} {}: {} RRSIGs, wanted {} ({kind:?})",
                    RType(rtype),
                    over.len(),
                    signers.len()
                );
            }
            let ttl = records[indexes[0]].ttl;
            if indexes.iter().any(|&i| records[i].ttl != ttl) {
                fail!("{name} {}: TTLs differ within the RRset", RType(rtype));
            }
            let rdata: Vec<&[u8]> = indexes.iter().map(|&i| &records[i].rdata[..]).collect();
            for key in signers {
                let sig = over
                    .iter()
                    .find(|sig| sig.key_tag == key.key_tag())
                    .unwrap_or_else(|| {
                        fail!("{name} {}: no RRSIG by key {}", RType(rtype), key.key_tag())
                    });
                let fields = (
                    sig.algorithm,
                    sig.labels,
                    sig.original_ttl,
                    sig.inception,
                    sig.expiration,
                );
                // RFC 4034 section 3.1.3: the labels, less the root and a
                // leading `*` (not the signer's `rrsig_labels`, which the
                // signature would agree with whatever it returns).
                let labels = name.label_count() - usize::from(name.is_wildcard());
                let expected = (
                    key.algorithm().number(),
                    labels as u8,
                    ttl,
                    options.validity.inception(),
                    options.validity.expiration(),
                );
                if fields != expected || sig.signer.as_bytes() != apex.as_slice() {
                    fail!(
                        "{name} {}: RRSIG fields {fields:?}, wanted {expected:?}",
                        RType(rtype)
                    );
                }
                verify(
                    name,
                    records[indexes[0]].class.0,
                    RType(rtype),
                    ttl,
                    &rdata,
                    sig,
                    key.algorithm(),
                    key.public_key(),
                )
                .unwrap_or_else(|()| {
                    fail!("{name} {}: the signature does not verify", RType(rtype))
                });
                signed_sets += 1;
            }
        }
        // No RRSIG over a type the owner does not have.
        if let Some(sig) = sigs.iter().find(|sig| !types.contains_key(&sig.covered.0)) {
            fail!(
                "{name}: an RRSIG over {}, which it does not own",
                sig.covered
            );
        }
    }
    debug_assert!(signed_sets > 0);

    // The chain.
    let chained = |kind: &Kind| *kind != Kind::Occluded;
    let count = |rtype: RType| {
        records
            .iter()
            .filter(|record| record.rtype == rtype)
            .count()
    };
    // The apex's NSEC3PARAM records (one below the apex is data like any
    // other, signed and kept).
    let apex_params = rrsets[&apex].get(&RType::NSEC3PARAM.0).map_or(0, Vec::len);
    match &options.denial {
        Denial::Nsec => {
            if count(RType::NSEC3) + apex_params != 0 {
                fail!("NSEC3 or NSEC3PARAM in an NSEC zone");
            }
            let mut owners: Vec<&Vec<u8>> = kinds
                .iter()
                .filter(|(_, kind)| chained(kind))
                .map(|(owner, _)| owner)
                .collect();
            owners.sort_by(|a, b| names[*a].as_name().canonical_cmp(names[*b].as_name()));
            if count(RType::NSEC) != owners.len() {
                fail!(
                    "{} NSEC records for {} names",
                    count(RType::NSEC),
                    owners.len()
                );
            }
            for (at, owner) in owners.iter().enumerate() {
                let name = names[*owner].as_name();
                let Some(nsec) = rrsets[*owner].get(&RType::NSEC.0) else {
                    fail!("{name}: no NSEC");
                };
                let record = &records[nsec[0]];
                let (next, len) =
                    Name::parse_prefix(&record.rdata).unwrap_or_else(|_| fail!("{name}: bad NSEC"));
                let wanted_next = owners
                    .get(at + 1)
                    .map_or(apex.as_slice(), |next| next.as_slice());
                if next.as_bytes() != wanted_next {
                    fail!(
                        "{name}: NSEC next {next}, wanted {}",
                        Name::from_validated(wanted_next)
                    );
                }
                let mut wanted = match kinds[*owner] {
                    Kind::Delegation => data_types(owner)
                        .into_iter()
                        .filter(|&t| t == RType::NS.0 || t == RType::DS.0)
                        .collect(),
                    _ => data_types(owner),
                };
                wanted.extend([RType::RRSIG.0, RType::NSEC.0]);
                let types = bitmap_types(&record.rdata[len..])
                    .unwrap_or_else(|| fail!("{name}: bad NSEC bitmap"));
                if types != wanted || record.ttl != nsec_ttl {
                    fail!(
                        "{name}: NSEC types {types:?} TTL {}, wanted {wanted:?} TTL {nsec_ttl}",
                        record.ttl
                    );
                }
            }
        }
        Denial::Nsec3(params) => {
            if count(RType::NSEC) != 0 {
                fail!("NSEC in an NSEC3 zone");
            }
            let param = rrsets[&apex]
                .get(&RType::NSEC3PARAM.0)
                .map(|indexes| &records[indexes[0]].rdata[..]);
            let mut wanted_param = vec![1, 0];
            wanted_param.extend_from_slice(&params.iterations.to_be_bytes());
            wanted_param.push(params.salt.len() as u8);
            wanted_param.extend_from_slice(&params.salt);
            if param != Some(&wanted_param[..]) || apex_params != 1 {
                fail!("NSEC3PARAM {param:?}, wanted {wanted_param:?}");
            }
            // The names the chain covers, with their bitmaps.
            let mut members: HashMap<Vec<u8>, BTreeSet<u16>> = HashMap::new();
            for (owner, kind) in &kinds {
                let types = data_types(owner);
                let wanted = match kind {
                    Kind::Occluded => continue,
                    Kind::Delegation if !types.contains(&RType::DS.0) => {
                        if params.opt_out {
                            continue;
                        }
                        BTreeSet::from([RType::NS.0])
                    }
                    Kind::Delegation => BTreeSet::from([RType::NS.0, RType::DS.0, RType::RRSIG.0]),
                    _ => types.into_iter().chain([RType::RRSIG.0]).collect(),
                };
                members.insert(owner.clone(), wanted);
            }
            let mut empty = Vec::new();
            for owner in members.keys() {
                let mut up = Name::from_validated(owner).parent();
                while let Some(parent) = up {
                    if parent.label_count() <= origin.label_count() {
                        break;
                    }
                    if !members.contains_key(parent.as_bytes()) {
                        empty.push(parent.as_bytes().to_vec());
                    }
                    up = parent.parent();
                }
            }
            for owner in empty {
                members.insert(owner, BTreeSet::new());
            }
            let mut chain: Vec<(Hash, &Vec<u8>)> = members
                .keys()
                .map(|owner| {
                    (
                        nsec3_hash(Name::from_validated(owner), params.iterations, &params.salt),
                        owner,
                    )
                })
                .collect();
            chain.sort();
            if count(RType::NSEC3) != chain.len() {
                fail!(
                    "{} NSEC3 records for {} names",
                    count(RType::NSEC3),
                    chain.len()
                );
            }
            for (at, (hash, owner)) in chain.iter().enumerate() {
                let name = Name::from_validated(owner);
                let hashed = hashed_owner(hash, origin).expect("a short apex");
                let hashed = lower(hashed.as_name());
                let Some(nsec3) = rrsets
                    .get(&hashed)
                    .and_then(|types| types.get(&RType::NSEC3.0))
                else {
                    fail!("{name}: no NSEC3 at its hash");
                };
                if nsec3.len() != 1 {
                    fail!("{name}: {} NSEC3 records at its hash", nsec3.len());
                }
                let record = &records[nsec3[0]];
                let next = &chain[(at + 1) % chain.len()].0;
                let mut head = vec![1, params.flags()];
                head.extend_from_slice(&params.iterations.to_be_bytes());
                head.push(params.salt.len() as u8);
                head.extend_from_slice(&params.salt);
                head.push(HASH_LEN as u8);
                head.extend_from_slice(next);
                let Some(bitmap) = record.rdata.strip_prefix(&head[..]) else {
                    fail!("{name}: NSEC3 parameters or next hash differ");
                };
                let types =
                    bitmap_types(bitmap).unwrap_or_else(|| fail!("{name}: bad NSEC3 bitmap"));
                if types != members[*owner] || record.ttl != nsec_ttl {
                    fail!(
                        "{name}: NSEC3 types {types:?}, wanted {:?}",
                        members[*owner]
                    );
                }
                // The hashed owner is the hash in base32hex.
                let label = Name::from_validated(&hashed)
                    .first_label()
                    .to_ascii_uppercase();
                if BASE32HEX_NOPAD.decode(&label).ok().as_deref() != Some(&hash[..]) {
                    fail!("{name}: hashed owner is not its hash");
                }
            }
        }
    }
}

/// Whether the RRSIG `rrsig` (its RDATA) verifies with the DNSKEY `dnskey`
/// (its RDATA; algorithm 8, 13 or 15) over the class IN RRset at `owner`
/// of the type it covers, whose records' RDATA are `rdata` (any order),
/// with its original TTL, and is valid at `now` (inception to expiration,
/// as plain numbers). For tests: that a signing made no signature over
/// data that since changed, and kept none.
pub fn rrsig_verifies(
    owner: Name<'_>,
    rdata: &[&[u8]],
    rrsig: &[u8],
    dnskey: &[u8],
    now: u32,
) -> bool {
    let Some(sig) = parse_rrsig(rrsig) else {
        return false;
    };
    let Some((&[_, _, _, number], public)) = dnskey.split_first_chunk::<4>() else {
        return false;
    };
    let Some(algorithm) = Algorithm::from_number(number) else {
        return false;
    };
    sig.algorithm == number
        && sig.inception <= now
        && now <= sig.expiration
        && verify(
            owner,
            RClass::IN.0,
            sig.covered,
            sig.original_ttl,
            rdata,
            &sig,
            algorithm,
            public,
        )
        .is_ok()
}

/// Whether `sig` by the key of `algorithm` and `public` (its DNSKEY's
/// public key field) verifies over the RRset, rebuilt here in canonical
/// form (RFC 4034 section 3.1.8.1).
#[allow(clippy::too_many_arguments)]
fn verify(
    owner: Name<'_>,
    class: u16,
    rtype: RType,
    ttl: u32,
    rdata: &[&[u8]],
    sig: &Rrsig<'_>,
    algorithm: Algorithm,
    public: &[u8],
) -> Result<(), ()> {
    let owner = owner.to_lower();
    let mut data = sig.prefix.to_vec();
    for rdata in canonical_rrset(rtype, rdata) {
        data.extend_from_slice(owner.as_bytes());
        data.extend_from_slice(&rtype.0.to_be_bytes());
        data.extend_from_slice(&class.to_be_bytes());
        data.extend_from_slice(&ttl.to_be_bytes());
        data.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        data.extend_from_slice(&rdata);
    }
    match algorithm {
        Algorithm::EcdsaP256Sha256 => {
            let mut point = vec![0x04];
            point.extend_from_slice(public);
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point).verify(&data, sig.signature)
        }
        Algorithm::Ed25519 => UnparsedPublicKey::new(&ED25519, public).verify(&data, sig.signature),
        Algorithm::RsaSha256 => {
            let (e, n) = rsa_components(public).ok_or(())?;
            RsaPublicKeyComponents { n, e }.verify(
                &RSA_PKCS1_2048_8192_SHA256,
                &data,
                sig.signature,
            )
        }
    }
    .map_err(|_| ())
}

/// The exponent and modulus of an RSA DNSKEY's public key field (RFC 3110
/// section 2: the exponent's length in one octet, or in two after a zero).
fn rsa_components(public: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&first, rest) = public.split_first()?;
    let (len, rest) = match first {
        0 => {
            let (len, rest) = rest.split_at_checked(2)?;
            (usize::from(u16::from_be_bytes([len[0], len[1]])), rest)
        }
        len => (usize::from(len), rest),
    };
    rest.split_at_checked(len)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    /// Every seed of `crates/fuzz/corpus/sign_zone/` passes the oracle,
    /// and most of them make a zone that is signed.
    #[test]
    fn seeds_run_and_sign() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/sign_zone");
        let mut seeds = 0;
        let mut signed = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let data = std::fs::read(entry.unwrap().path()).unwrap();
            seeds += 1;
            signed += usize::from(sign(&data));
        }
        assert!(
            seeds >= 8 && signed >= seeds / 2,
            "{signed} of {seeds} seeds signed"
        );
    }

    /// Each combination of the options octet signs a zone with a
    /// wildcard, a secure and an insecure delegation with glue, empty
    /// non-terminals and DNSSEC records to replace.
    #[test]
    fn every_option_signs() {
        // owner a.b.c (depth 3: labels 0, 1, 2) A; sub NS, its glue, DS at b;
        // *.a TXT; RRSIG and NSEC at www.
        let records: &[[u8; 4]] = &[
            [0x03, 0x21, 0x00, 7], // a.b.c A
            [0x61, 0x00, 0x03, 5], // sub NS (value 5: a target in the zone)
            [0x01, 0x00, 0x03, 1], // a NS
            [0x01, 0x00, 0x04, 1], // a DS
            [0x32, 0x00, 0x02, 9], // *.a TXT: glue-like below a, occluded
            [0x32, 0x01, 0x02, 9], // *.b TXT
            [0x41, 0x00, 0x0a, 3], // www RRSIG
            [0x41, 0x00, 0x09, 3], // www NSEC
            [0x41, 0x00, 0x0e, 3], // www CDS
            [0x40, 0x00, 0x0f, 3], // @ TYPE1234
            [0x40, 0x00, 0x0d, 3], // @ CAA
            [0x40, 0x00, 0x0e, 3], // @ CDS
        ];
        let body: Vec<u8> = records.iter().flatten().copied().collect();
        for options in 0..=255u8 {
            let mut data = vec![options];
            data.extend_from_slice(&body);
            assert!(sign(&data), "options {options:#x}");
        }
    }

    /// The oracle is not blind: a signed zone with one record removed or
    /// changed (an RRSIG, a signature octet, an NSEC's next name, an NSEC3's
    /// bitmap, a record's TTL) fails it.
    #[test]
    fn oracle_catches_broken_output() {
        let seed = |name: &str| {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/sign_zone");
            Input::read(&std::fs::read(dir.join(name)).unwrap()).unwrap()
        };
        let fails = |zone: &Input, records: &[Record]| {
            let records = records.to_vec();
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                check(
                    zone.origin.as_name(),
                    &records,
                    &zone.keys,
                    &zone.options,
                    "",
                )
            }))
            .is_err()
        };
        type Break = (&'static str, fn(&mut Vec<Record>));
        let breaks: [Break; 5] = [
            ("an RRSIG removed", |records| {
                let at = records
                    .iter()
                    .position(|r| r.rtype == RType::RRSIG)
                    .unwrap();
                records.remove(at);
            }),
            ("a signature octet flipped", |records| {
                let sig = records
                    .iter_mut()
                    .rev()
                    .find(|r| r.rtype == RType::RRSIG)
                    .unwrap();
                *sig.rdata.last_mut().unwrap() ^= 1;
            }),
            ("a chain record's first octet changed", |records| {
                let link = records
                    .iter_mut()
                    .find(|r| matches!(r.rtype, RType::NSEC | RType::NSEC3))
                    .unwrap();
                link.rdata[0] ^= 0x20;
            }),
            ("a chain record's last octet changed", |records| {
                let link = records
                    .iter_mut()
                    .rev()
                    .find(|r| matches!(r.rtype, RType::NSEC | RType::NSEC3))
                    .unwrap();
                *link.rdata.last_mut().unwrap() ^= 0x01;
            }),
            ("a TTL changed", |records| {
                let record = records.iter_mut().find(|r| r.rtype == RType::A).unwrap();
                record.ttl += 1;
            }),
        ];
        for name in [
            "nsec-kz-ed25519",
            "nsec3-salt-kz-ed25519",
            "nsec3-optout-csk-p256",
        ] {
            let zone = seed(name);
            let signed = zone.sign();
            assert!(!fails(&zone, &signed), "{name}: the signer's output passes");
            for (what, change) in &breaks {
                let mut broken = signed.clone();
                change(&mut broken);
                assert!(fails(&zone, &broken), "{name}: {what} passes the oracle");
            }
        }
    }

    /// The oracle's RSA path (the target signs with P-256 and Ed25519
    /// only): a zone signed with an RSA CSK passes, and fails with one
    /// signature octet flipped.
    #[test]
    fn rsa_signatures_verify() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/sign_zone");
        let mut zone = Input::read(&std::fs::read(dir.join("nsec-csk-p256")).unwrap()).unwrap();
        let pkcs8 = crate::key::generate_pkcs8_sized(Algorithm::RsaSha256, 2048).unwrap();
        zone.keys =
            vec![SigningKey::from_pkcs8(Algorithm::RsaSha256, KeyRole::Csk, &pkcs8).unwrap()];
        let mut signed = zone.sign();
        check(
            zone.origin.as_name(),
            &signed,
            &zone.keys,
            &zone.options,
            "",
        );
        let sig = signed.iter_mut().find(|r| r.rtype == RType::RRSIG).unwrap();
        *sig.rdata.last_mut().unwrap() ^= 1;
        let broken = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check(
                zone.origin.as_name(),
                &signed,
                &zone.keys,
                &zone.options,
                "",
            )
        }));
        assert!(broken.is_err());
    }

    /// `rrsig_verifies`: an A RRset's RRSIG verifies with the apex's
    /// DNSKEY over that RRset while valid, and not over the RRset with
    /// one address changed (a signature kept over data that changed), nor
    /// after its expiration.
    #[test]
    fn an_rrsig_verifies_over_its_rrset_only() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/sign_zone");
        let zone = Input::read(&std::fs::read(dir.join("nsec-csk-p256")).unwrap()).unwrap();
        let signed = zone.sign();
        let dnskeys: Vec<&[u8]> = signed
            .iter()
            .filter(|r| r.rtype == RType::DNSKEY)
            .map(|r| r.rdata.as_slice())
            .collect();
        let sig = signed
            .iter()
            .find(|r| r.rtype == RType::RRSIG && r.rdata[..2] == RType::A.0.to_be_bytes())
            .unwrap();
        let mut rrset: Vec<Vec<u8>> = signed
            .iter()
            .filter(|r| {
                r.rtype == RType::A && r.owner.as_name().eq_ignore_case(sig.owner.as_name())
            })
            .map(|r| r.rdata.clone())
            .collect();
        let owner = sig.owner.as_name();
        let verifies = |rrset: &[Vec<u8>], now: u64| {
            let rdata: Vec<&[u8]> = rrset.iter().map(Vec::as_slice).collect();
            dnskeys
                .iter()
                .any(|key| rrsig_verifies(owner, &rdata, &sig.rdata, key, now as u32))
        };
        assert!(verifies(&rrset, INCEPTION + 1));
        assert!(!verifies(&rrset, EXPIRATION + 1));
        rrset[0][3] ^= 1;
        assert!(!verifies(&rrset, INCEPTION + 1));
    }

    #[test]
    fn short_and_empty_inputs() {
        assert!(!sign(&[]));
        assert!(sign(&[0]));
        assert!(sign(&[1, 2, 3]));
        sign(&[0xff; 1 + RECORD_OCTETS * (MAX_RECORDS + 10)]);
    }

    /// The bitmap reader refuses what RFC 4034 section 4.1.2 forbids.
    #[test]
    fn bitmap_reader() {
        assert_eq!(bitmap_types(&[0, 1, 0x40]), Some(BTreeSet::from([1])));
        assert_eq!(bitmap_types(&[0, 0]), None);
        assert_eq!(bitmap_types(&[0, 1, 0]), None);
        assert_eq!(bitmap_types(&[1, 1, 0x80, 0, 1, 0x40]), None);
        assert_eq!(bitmap_types(&[0, 2, 0x40]), None);
    }
}
