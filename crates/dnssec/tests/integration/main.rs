//! Zones signed by tern-dnssec, written as master files with tern-zone's
//! printer, checked by BIND's `dnssec-verify` and ldns's
//! `ldns-verify-zone` (both installed by scripts/install-test-deps.sh),
//! and by this file for what the verifiers may let pass.
//!
//! Pins:
//! - a zone with a delegation (with DS) and its glue, an insecure
//!   delegation, empty non-terminals, wildcards, a CNAME, mixed-case
//!   names (owners and inside RDATA) and stale DNSSEC records in the input
//!   verifies when signed with one ECDSA P-256 CSK and when signed with an
//!   Ed25519 KSK and ZSK; a smaller zone with an RSA/SHA-256 KSK (3072
//!   bits) and ZSK (2048 bits), and the RSA signatures' lengths;
//! - both verifiers reject each of those zones once one octet of one
//!   signature is flipped (an RRSIG over an A RRset, over the DNSKEY
//!   RRset), so a passing run means the signatures were checked;
//! - glue is neither signed nor in the NSEC chain, a delegation signs only
//!   its DS and its bitmap holds NS and DS, empty non-terminals get no
//!   NSEC, a wildcard's labels field leaves out the `*`, the NSEC TTL is
//!   the SOA's MINIMUM when lower than its TTL, the DNSKEY RRset is signed
//!   by the KSK alone and the rest by the ZSK alone;
//! - the same zones signed with NSEC3 instead (RFC 9276's parameters, no
//!   opt-out; opt-out with 5 iterations and a salt; and the reverse)
//!   verify too, and each verifier rejects them once one octet of the
//!   signature over an NSEC3 is flipped;
//! - with NSEC3: an NSEC3 for the apex, each name with data, each
//!   delegation and each empty non-terminal, none for glue, none for an
//!   insecure delegation nor the empty non-terminal only it makes when
//!   opted out; bitmaps with RRSIG where something is signed (an insecure
//!   delegation's is NS alone, an empty non-terminal's empty); one
//!   circular chain in hash order; the flags, parameters and TTLs; the
//!   NSEC3PARAM at the apex with flags 0; every NSEC3 signed by the ZSK.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use tern_dnssec::nsec3::{hashed_owner, nsec3_hash};
use tern_dnssec::{
    sign_zone, Algorithm, Denial, KeyRole, Nsec3Params, SignOptions, SigningKey, Validity,
};
use tern_wire::name::NameBuf;
use tern_wire::types::RType;
use tern_zone::print::write_zone;
use tern_zone::{parse_bytes, NoInclude, Options, Record};

//----------- The zones ------------------------------------------------------

/// `example.`: signed with one CSK. `c.example.` and `b.c.example.` are
/// empty non-terminals, and so is `CASE.example.` above `Mixed.CASE`,
/// whose owner is never spelled in lower case; `sub` is a signed delegation with glue (and glue
/// below the glue), `insecure` an unsigned one with an A record at the
/// cut, `a.optout` an unsigned one below an empty non-terminal; the
/// input's RRSIG, NSEC and apex DNSKEY are stale and replaced.
const EXAMPLE: &str = "\
$TTL 3600
@         SOA   ns1 hostmaster 2026112701 7200 3600 1209600 300
          NS    ns1
          NS    ns2.example.net.
          MX    10 Mail
          DNSKEY 257 3 13 GojIhhXUN/u4v54ZQqGSnyhWJwaubCvTmeexv7bR6edbkrSqQpF64cYbcB7wNcP+e+MAnLr+Wi9xMWyQLc8NAA==
ns1       A     192.0.2.1
mail      A     192.0.2.2
www       A     192.0.2.3
www       A     192.0.2.4
www       NSEC  zzz.example. A RRSIG NSEC
www       RRSIG A 13 2 3600 20300101000000 20200101000000 12345 example. AAAA
WWW       AAAA  2001:db8::1
www       A     192.0.2.3
a.b.c     TXT   \"below two empty non-terminals\"
*.wild    TXT   \"wildcard\"
*.wild    MX    10 mail
alias     CNAME WWW.example.
_dns._tcp SRV   0 0 53 NS1.Example.
sub       NS    ns.sub
sub       NS    ns2.example.net.
sub       DS    60485 5 2 D4B7D520E7BB5F0F67674A0CCEB1E3E0614B93C4F9E99B8383F6A1E4469DA50A
ns.sub    A     192.0.2.53
deep.ns.sub A   192.0.2.54
insecure  NS    ns.insecure
insecure  A     192.0.2.55
ns.insecure AAAA 2001:db8::53
zzz       TXT   \"last name\"
Mixed.CASE A    192.0.2.9
a.optout  NS    ns2.example.net.
";

/// `example.org.`: signed with an Ed25519 KSK and ZSK; a wildcard right
/// below the apex, a delegation without DS, an empty non-terminal.
const EXAMPLE_ORG: &str = "\
$TTL 7200
@         SOA   ns.example.org. hostmaster.example.org. 1 7200 3600 1209600 86400
          NS    ns
          TXT   \"v=spf1 -all\"
ns        A     198.51.100.1
ns        AAAA  2001:db8::1
*         A     198.51.100.2
x.y       A     198.51.100.3
child     NS    ns.child
ns.child  A     198.51.100.4
";

//----------- Tests ----------------------------------------------------------

#[test]
fn csk_p256_zone_verifies() {
    let (key, _) = SigningKey::generate(Algorithm::EcdsaP256Sha256, KeyRole::Csk).unwrap();
    let key_tag = key.key_tag();
    let (origin, records) = signed("example.", EXAMPLE, vec![key], 3, Denial::Nsec);
    check_structure(&records);
    // Every RRSIG is the CSK's.
    assert!(rrsigs(&records).all(|rdata| key_tag_of(rdata) == key_tag));
    // The NSEC TTL: MINIMUM 300 is lower than the SOA's TTL 3600.
    assert!(of_type(&records, RType::NSEC).all(|record| record.ttl == 300));
    verify_all("csk-p256", &origin, &records, Keys::Csk);
}

#[test]
fn ksk_zsk_ed25519_zone_verifies() {
    let (ksk, _) = SigningKey::generate(Algorithm::Ed25519, KeyRole::Ksk).unwrap();
    let (zsk, _) = SigningKey::generate(Algorithm::Ed25519, KeyRole::Zsk).unwrap();
    let (ksk_tag, zsk_tag) = (ksk.key_tag(), zsk.key_tag());
    let (origin, records) = signed("example.org.", EXAMPLE_ORG, vec![ksk, zsk], 0, Denial::Nsec);
    // The DNSKEY RRset by the KSK only, everything else by the ZSK only.
    for record in of_type(&records, RType::RRSIG) {
        let expected = if covered(&record.rdata) == RType::DNSKEY {
            ksk_tag
        } else {
            zsk_tag
        };
        assert_eq!(key_tag_of(&record.rdata), expected, "{}", line(record));
    }
    assert_eq!(of_type(&records, RType::DNSKEY).count(), 2);
    // The NSEC TTL: the SOA's TTL 7200 is lower than MINIMUM 86400.
    assert!(of_type(&records, RType::NSEC).all(|record| record.ttl == 7200));
    // The wildcard right below the apex: labels 2 (example, org).
    let wildcard = at(&records, "*.example.org.", RType::RRSIG);
    assert_eq!(wildcard.len(), 2);
    assert!(wildcard.iter().all(|record| record.rdata[3] == 2));
    // child is an insecure delegation: NS, RRSIG, NSEC; its glue unsigned.
    assert_eq!(
        nsec_types(&records, "child.example.org."),
        [RType::NS, RType::RRSIG, RType::NSEC]
    );
    assert!(at(&records, "ns.child.example.org.", RType::RRSIG).is_empty());
    assert!(at(&records, "y.example.org.", RType::NSEC).is_empty());
    verify_all("ksk-zsk-ed25519", &origin, &records, Keys::KskZsk);
}

#[test]
fn ksk_zsk_rsa_zone_verifies() {
    let (ksk, _) = SigningKey::generate_sized(Algorithm::RsaSha256, KeyRole::Ksk, 3072).unwrap();
    let (zsk, _) = SigningKey::generate_sized(Algorithm::RsaSha256, KeyRole::Zsk, 2048).unwrap();
    let (ksk_tag, zsk_tag) = (ksk.key_tag(), zsk.key_tag());
    let (origin, records) = signed("example.org.", EXAMPLE_ORG, vec![ksk, zsk], 0, Denial::Nsec);
    for record in of_type(&records, RType::RRSIG) {
        let (tag, length) = if covered(&record.rdata) == RType::DNSKEY {
            (ksk_tag, 384)
        } else {
            (zsk_tag, 256)
        };
        assert_eq!(key_tag_of(&record.rdata), tag, "{}", line(record));
        assert_eq!(record.rdata[2], 8, "{}", line(record));
        // The signature ends the RDATA after the signer's name.
        let signer_end = 18 + origin.as_name().as_bytes().len();
        assert_eq!(record.rdata.len() - signer_end, length, "{}", line(record));
    }
    verify_all("ksk-zsk-rsa", &origin, &records, Keys::KskZsk);
}

/// The names of `example.` that own data or are delegations, less glue,
/// and its empty non-terminals; and which of those are insecure
/// delegations or the empty non-terminals only those make.
const EXAMPLE_NAMES: [&str; 11] = [
    "example.",
    "_dns._tcp.example.",
    "alias.example.",
    "a.b.c.example.",
    "Mixed.CASE.example.",
    "mail.example.",
    "ns1.example.",
    "sub.example.",
    "*.wild.example.",
    "www.example.",
    "zzz.example.",
];
const EXAMPLE_EMPTY: [&str; 5] = [
    "_tcp.example.",
    "c.example.",
    "b.c.example.",
    "CASE.example.",
    "wild.example.",
];
const EXAMPLE_OPTED_OUT: [&str; 3] = ["insecure.example.", "a.optout.example.", "optout.example."];

#[test]
fn csk_p256_zone_nsec3_verifies() {
    let (key, _) = SigningKey::generate(Algorithm::EcdsaP256Sha256, KeyRole::Csk).unwrap();
    let key_tag = key.key_tag();
    let params = Nsec3Params::default();
    let denial = Denial::Nsec3(params.clone());
    let (origin, records) = signed("example.", EXAMPLE, vec![key], 3, denial);
    let mut names: Vec<&str> = EXAMPLE_NAMES.to_vec();
    names.extend(EXAMPLE_EMPTY);
    names.extend(EXAMPLE_OPTED_OUT);
    check_nsec3(&origin, &records, &params, &names, 300, key_tag);
    check_example_nsec3_bitmaps(&origin, &records, &params);
    // The insecure delegations are in the chain: NS alone.
    assert_eq!(
        nsec3_types(&origin, &records, &params, "insecure.example."),
        [RType::NS]
    );
    assert_eq!(
        nsec3_types(&origin, &records, &params, "a.optout.example."),
        [RType::NS]
    );
    assert_eq!(
        nsec3_types(&origin, &records, &params, "optout.example."),
        []
    );
    verify_all("csk-p256-nsec3", &origin, &records, Keys::Csk);
}

#[test]
fn csk_p256_zone_nsec3_opt_out_verifies() {
    let (key, _) = SigningKey::generate(Algorithm::EcdsaP256Sha256, KeyRole::Csk).unwrap();
    let key_tag = key.key_tag();
    let params = Nsec3Params {
        iterations: 5,
        salt: vec![0xc0, 0x1d, 0xca, 0xfe],
        opt_out: true,
    };
    let denial = Denial::Nsec3(params.clone());
    let (origin, records) = signed("example.", EXAMPLE, vec![key], 3, denial);
    let mut names: Vec<&str> = EXAMPLE_NAMES.to_vec();
    names.extend(EXAMPLE_EMPTY);
    check_nsec3(&origin, &records, &params, &names, 300, key_tag);
    check_example_nsec3_bitmaps(&origin, &records, &params);
    verify_all("csk-p256-nsec3-opt-out", &origin, &records, Keys::Csk);
}

#[test]
fn ksk_zsk_ed25519_zone_nsec3_verifies() {
    let (ksk, _) = SigningKey::generate(Algorithm::Ed25519, KeyRole::Ksk).unwrap();
    let (zsk, _) = SigningKey::generate(Algorithm::Ed25519, KeyRole::Zsk).unwrap();
    let zsk_tag = zsk.key_tag();
    let params = Nsec3Params {
        iterations: 5,
        salt: vec![0xaa, 0xbb, 0xcc, 0xdd],
        opt_out: false,
    };
    let denial = Denial::Nsec3(params.clone());
    let (origin, records) = signed("example.org.", EXAMPLE_ORG, vec![ksk, zsk], 0, denial);
    let names = [
        "example.org.",
        "ns.example.org.",
        "*.example.org.",
        "x.y.example.org.",
        "y.example.org.",
        "child.example.org.",
    ];
    // The SOA's TTL 7200 is lower than MINIMUM 86400.
    check_nsec3(&origin, &records, &params, &names, 7200, zsk_tag);
    assert_eq!(
        nsec3_types(&origin, &records, &params, "child.example.org."),
        [RType::NS]
    );
    assert_eq!(
        nsec3_types(&origin, &records, &params, "*.example.org."),
        [RType::A, RType::RRSIG]
    );
    verify_all("ksk-zsk-ed25519-nsec3", &origin, &records, Keys::KskZsk);
}

#[test]
fn ksk_zsk_ed25519_zone_nsec3_opt_out_verifies() {
    let (ksk, _) = SigningKey::generate(Algorithm::Ed25519, KeyRole::Ksk).unwrap();
    let (zsk, _) = SigningKey::generate(Algorithm::Ed25519, KeyRole::Zsk).unwrap();
    let zsk_tag = zsk.key_tag();
    let params = Nsec3Params {
        opt_out: true,
        ..Nsec3Params::default()
    };
    let denial = Denial::Nsec3(params.clone());
    let (origin, records) = signed("example.org.", EXAMPLE_ORG, vec![ksk, zsk], 0, denial);
    let names = [
        "example.org.",
        "ns.example.org.",
        "*.example.org.",
        "x.y.example.org.",
        "y.example.org.",
    ];
    check_nsec3(&origin, &records, &params, &names, 7200, zsk_tag);
    verify_all(
        "ksk-zsk-ed25519-nsec3-opt-out",
        &origin,
        &records,
        Keys::KskZsk,
    );
}

//----------- Signing and checking -------------------------------------------

/// Parses `text` at `origin`, signs it (valid from an hour ago for 14
/// days) and returns the signed records; `replaced` is the number of the
/// input's DNSSEC records the signer must drop.
fn signed(
    origin: &str,
    text: &str,
    keys: Vec<SigningKey>,
    replaced: usize,
    denial: Denial,
) -> (NameBuf, Vec<Record>) {
    let origin = NameBuf::from_text(origin.as_bytes(), None).unwrap();
    let zone = parse_bytes(
        text.as_bytes(),
        Path::new("test.zone"),
        origin.as_name(),
        &Options::default(),
        &mut NoInclude,
    )
    .unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let options = SignOptions {
        validity: Validity::new(now - 3600, now + 14 * 86400).unwrap(),
        dnskey_ttl: None,
        denial,
        serial_above: None,
    };
    let signed = sign_zone(origin.as_name(), &zone.records, &keys, &options).unwrap();
    assert_eq!(signed.replaced, replaced);
    assert_eq!(signed.signatures, rrsigs(&signed.records).count());
    (origin, signed.records)
}

/// What `example.` must look like, signed.
fn check_structure(records: &[Record]) {
    // Glue, at and below the cut: no signature, no NSEC.
    for glue in [
        "ns.sub.example.",
        "deep.ns.sub.example.",
        "ns.insecure.example.",
    ] {
        assert!(at(records, glue, RType::RRSIG).is_empty(), "{glue} signed");
        assert!(
            at(records, glue, RType::NSEC).is_empty(),
            "{glue} in the chain"
        );
    }
    // The signed delegation signs its DS only; the insecure one nothing
    // but its NSEC; the A at its cut is not in its bitmap.
    let covered_at = |owner| {
        at(records, owner, RType::RRSIG)
            .iter()
            .map(|record| covered(&record.rdata))
            .collect::<Vec<_>>()
    };
    assert_eq!(covered_at("sub.example."), [RType::DS, RType::NSEC]);
    assert_eq!(covered_at("insecure.example."), [RType::NSEC]);
    assert_eq!(
        nsec_types(records, "sub.example."),
        [RType::NS, RType::DS, RType::RRSIG, RType::NSEC]
    );
    assert_eq!(
        nsec_types(records, "insecure.example."),
        [RType::NS, RType::RRSIG, RType::NSEC]
    );
    // Empty non-terminals (c, b.c, case, wild) have no NSEC; the chain skips
    // them and the glue, and ends at the apex.
    for empty in [
        "c.example.",
        "b.c.example.",
        "case.example.",
        "wild.example.",
        "optout.example.",
    ] {
        assert!(
            at(records, empty, RType::NSEC).is_empty(),
            "{empty} in the chain"
        );
    }
    assert_eq!(nsec_next(records, "_dns._tcp.example."), "alias.example.");
    assert_eq!(nsec_next(records, "alias.example."), "a.b.c.example.");
    assert_eq!(nsec_next(records, "a.b.c.example."), "mixed.case.example.");
    assert_eq!(
        nsec_next(records, "Mixed.Case.example."),
        "insecure.example."
    );
    assert_eq!(nsec_next(records, "insecure.example."), "mail.example.");
    assert_eq!(nsec_next(records, "sub.example."), "*.wild.example.");
    assert_eq!(nsec_next(records, "zzz.example."), "example.");
    // The wildcard's labels field: *.wild.example. counts 2 (wild,
    // example).
    let wildcard = at(records, "*.wild.example.", RType::RRSIG);
    assert_eq!(wildcard.len(), 3);
    assert!(wildcard.iter().all(|record| record.rdata[3] == 2));
    // The duplicate A of www is written once; www's stale NSEC is gone.
    assert_eq!(at(records, "www.example.", RType::A).len(), 2);
    assert_eq!(
        nsec_types(records, "www.example."),
        [RType::A, RType::AAAA, RType::RRSIG, RType::NSEC]
    );
    assert_eq!(at(records, "example.", RType::DNSKEY).len(), 1);
}

/// What the NSEC3 records of `example.` must say, opted out or not.
fn check_example_nsec3_bitmaps(origin: &NameBuf, records: &[Record], params: &Nsec3Params) {
    let types = |owner| nsec3_types(origin, records, params, owner);
    assert_eq!(
        types("example."),
        [
            RType::NS,
            RType::SOA,
            RType::MX,
            RType::RRSIG,
            RType::DNSKEY,
            RType::NSEC3PARAM
        ]
    );
    assert_eq!(types("sub.example."), [RType::NS, RType::DS, RType::RRSIG]);
    assert_eq!(types("www.example."), [RType::A, RType::AAAA, RType::RRSIG]);
    assert_eq!(
        types("*.wild.example."),
        [RType::MX, RType::TXT, RType::RRSIG]
    );
    for empty in EXAMPLE_EMPTY {
        assert_eq!(types(empty), [], "{empty}");
    }
    // Glue, at and below the cuts: no NSEC3 (check_nsec3 counts them all).
    for glue in [
        "ns.sub.example.",
        "deep.ns.sub.example.",
        "ns.insecure.example.",
    ] {
        assert!(nsec3_of(origin, records, params, glue).is_none(), "{glue}");
    }
}

/// The zone's NSEC3 chain: an NSEC3 for each of `names` and nothing
/// else, in one circle in hash order with `params`' flags, iterations and
/// salt and the TTL `ttl`; each signed by the key `zsk` alone; the
/// NSEC3PARAM at the apex (flags 0, TTL 0) signed; no NSEC.
fn check_nsec3(
    origin: &NameBuf,
    records: &[Record],
    params: &Nsec3Params,
    names: &[&str],
    ttl: u32,
    zsk: u16,
) {
    assert_eq!(of_type(records, RType::NSEC).count(), 0);
    let nsec3param = at(records, &origin.to_string(), RType::NSEC3PARAM);
    assert_eq!(nsec3param.len(), 1);
    let mut expected = vec![1, 0];
    expected.extend_from_slice(&params.iterations.to_be_bytes());
    expected.push(params.salt.len() as u8);
    expected.extend_from_slice(&params.salt);
    assert_eq!(nsec3param[0].rdata, expected);
    assert_eq!(nsec3param[0].ttl, 0);
    let signed_over = |record: &Record| {
        at(records, &record.owner.to_string(), RType::RRSIG)
            .iter()
            .filter(|rrsig| covered(&rrsig.rdata) == record.rtype)
            .map(|rrsig| key_tag_of(&rrsig.rdata))
            .collect::<Vec<_>>()
    };
    assert_eq!(signed_over(nsec3param[0]), [zsk]);

    let mut hashes: Vec<[u8; 20]> = names
        .iter()
        .map(|name| {
            let name = NameBuf::from_text(name.as_bytes(), None).unwrap();
            nsec3_hash(name.as_name(), params.iterations, &params.salt)
        })
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    let chain: Vec<&Record> = of_type(records, RType::NSEC3).collect();
    assert_eq!(chain.len(), hashes.len(), "NSEC3 records");
    for (index, hash) in hashes.iter().enumerate() {
        let owner = hashed_owner(hash, origin.as_name()).unwrap();
        let record = chain
            .iter()
            .find(|record| record.owner.as_name() == owner.as_name())
            .unwrap_or_else(|| panic!("no NSEC3 at {owner}"));
        let rdata = &record.rdata;
        let salt_len = usize::from(rdata[4]);
        assert_eq!(rdata[0], 1, "{}", line(record));
        assert_eq!(rdata[1], u8::from(params.opt_out), "{}", line(record));
        assert_eq!(rdata[2..4], params.iterations.to_be_bytes());
        assert_eq!(rdata[5..5 + salt_len], params.salt[..]);
        assert_eq!(rdata[5 + salt_len], 20);
        let next = &rdata[6 + salt_len..26 + salt_len];
        assert_eq!(next, hashes[(index + 1) % hashes.len()], "{}", line(record));
        assert_eq!(record.ttl, ttl);
        assert_eq!(signed_over(record), [zsk], "{}", line(record));
    }
}

/// The NSEC3 whose hashed owner is `name`'s hash, if any.
fn nsec3_of<'a>(
    origin: &NameBuf,
    records: &'a [Record],
    params: &Nsec3Params,
    name: &str,
) -> Option<&'a Record> {
    let name = NameBuf::from_text(name.as_bytes(), None).unwrap();
    let hash = nsec3_hash(name.as_name(), params.iterations, &params.salt);
    let owner = hashed_owner(&hash, origin.as_name()).unwrap();
    records
        .iter()
        .find(|record| record.rtype == RType::NSEC3 && record.owner.as_name() == owner.as_name())
}

/// The types of the NSEC3 of `name`, in bitmap order.
fn nsec3_types(
    origin: &NameBuf,
    records: &[Record],
    params: &Nsec3Params,
    name: &str,
) -> Vec<RType> {
    let record =
        nsec3_of(origin, records, params, name).unwrap_or_else(|| panic!("no NSEC3 for {name}"));
    let rdata = &record.rdata;
    let salt_len = usize::from(rdata[4]);
    bitmap_types(rdata, 6 + salt_len + 20)
}

/// The zone passes both verifiers, and each of them fails it once one
/// octet of the signature over www's A RRset (or the first of the
/// signatures over the DNSKEY RRset, or over an NSEC3 when there are
/// some) is flipped.
fn verify_all(name: &str, origin: &NameBuf, records: &[Record], keys: Keys) {
    let directory = std::env::temp_dir().join(format!("tern-dnssec-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let good = write(&directory, "signed.zone", records);
    let origin_text = origin.to_string();
    let (ok, report) = dnssec_verify(&origin_text, &good, keys);
    assert!(ok, "dnssec-verify rejects {}:\n{report}", good.display());
    let (ok, report) = ldns_verify(&good);
    assert!(ok, "ldns-verify-zone rejects {}:\n{report}", good.display());

    let www = format!("www.{origin_text}");
    let mut targets = vec![
        (
            if origin_text == "example." {
                www.clone()
            } else {
                "ns.example.org.".to_owned()
            },
            RType::A,
        ),
        (origin_text.clone(), RType::DNSKEY),
    ];
    if let Some(nsec3) = of_type(records, RType::NSEC3).nth(2) {
        targets.push((nsec3.owner.to_string(), RType::NSEC3));
    }
    for (owner, rtype) in targets {
        let mut broken = records.to_vec();
        let victim = broken
            .iter_mut()
            .find(|record| {
                record.rtype == RType::RRSIG
                    && covered(&record.rdata) == rtype
                    && record.owner.to_string().eq_ignore_ascii_case(&owner)
            })
            .unwrap_or_else(|| panic!("no RRSIG over {owner} {rtype}"));
        // An octet in the middle of the signature (the last 64 octets).
        let at = victim.rdata.len() - 32;
        victim.rdata[at] ^= 0x01;
        let file = write(&directory, &format!("flipped-{rtype}.zone"), &broken);
        let (ok, report) = dnssec_verify(&origin_text, &file, keys);
        assert!(
            !ok,
            "dnssec-verify accepts {} (a signature over {owner} {rtype} flipped):\n{report}",
            file.display()
        );
        let (ok, report) = ldns_verify(&file);
        assert!(
            !ok,
            "ldns-verify-zone accepts {} (a signature over {owner} {rtype} flipped):\n{report}",
            file.display()
        );
    }
    std::fs::remove_dir_all(&directory).unwrap();
}

fn write(directory: &Path, name: &str, records: &[Record]) -> PathBuf {
    let mut text = String::new();
    write_zone(records, &mut text);
    let path = directory.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// How the zone's keys are split; `dnssec-verify` wants to know.
#[derive(Clone, Copy)]
enum Keys {
    Csk,
    KskZsk,
}

/// `dnssec-verify -o ORIGIN FILE`, with `-z` for a CSK: BIND's verifier
/// takes a key with the SEP flag for a KSK and wants a ZSK beside it
/// ("Missing ZSK for algorithm") unless told that KSKs sign everything.
fn dnssec_verify(origin: &str, file: &Path, keys: Keys) -> (bool, String) {
    let file = file.to_string_lossy();
    match keys {
        Keys::Csk => run_tool("dnssec-verify", &["-z", "-o", origin, &file]),
        Keys::KskZsk => run_tool("dnssec-verify", &["-o", origin, &file]),
    }
}

fn ldns_verify(file: &Path) -> (bool, String) {
    run_tool("ldns-verify-zone", &[&file.to_string_lossy()])
}

/// Runs a verifier; one that is not installed fails the test.
fn run_tool(program: &str, args: &[&str]) -> (bool, String) {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run {program} ({error}): the signing tests need BIND's and ldns's \
             verifiers; run scripts/install-test-deps.sh (`make deps`)"
            )
        });
    let report = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), report)
}

//----------- Reading the signed records -------------------------------------

fn of_type(records: &[Record], rtype: RType) -> impl Iterator<Item = &Record> {
    records.iter().filter(move |record| record.rtype == rtype)
}

fn rrsigs(records: &[Record]) -> impl Iterator<Item = &[u8]> {
    of_type(records, RType::RRSIG).map(|record| &record.rdata[..])
}

fn at<'a>(records: &'a [Record], owner: &str, rtype: RType) -> Vec<&'a Record> {
    let owner = NameBuf::from_text(owner.as_bytes(), None).unwrap();
    records
        .iter()
        .filter(|record| record.rtype == rtype && record.owner.as_name() == owner.as_name())
        .collect()
}

fn covered(rrsig: &[u8]) -> RType {
    RType(u16::from_be_bytes([rrsig[0], rrsig[1]]))
}

fn key_tag_of(rrsig: &[u8]) -> u16 {
    u16::from_be_bytes([rrsig[16], rrsig[17]])
}

/// The one NSEC at `owner`.
fn nsec_at<'a>(records: &'a [Record], owner: &str) -> &'a Record {
    let nsec = at(records, owner, RType::NSEC);
    assert_eq!(nsec.len(), 1, "NSEC records at {owner}");
    nsec[0]
}

fn nsec_next(records: &[Record], owner: &str) -> String {
    let rdata = &nsec_at(records, owner).rdata;
    let (next, _) = tern_wire::name::Name::parse_prefix(rdata).unwrap();
    next.to_string()
}

/// The types of the NSEC at `owner`, in bitmap order.
fn nsec_types(records: &[Record], owner: &str) -> Vec<RType> {
    let rdata = &nsec_at(records, owner).rdata;
    let (_, at) = tern_wire::name::Name::parse_prefix(rdata).unwrap();
    bitmap_types(rdata, at)
}

/// The types of the bitmap that starts at `at` in `rdata`.
fn bitmap_types(rdata: &[u8], mut at: usize) -> Vec<RType> {
    let mut types = Vec::new();
    while at < rdata.len() {
        let (window, length) = (u16::from(rdata[at]), usize::from(rdata[at + 1]));
        for (index, octet) in rdata[at + 2..at + 2 + length].iter().enumerate() {
            for bit in 0..8 {
                if octet & (0x80 >> bit) != 0 {
                    types.push(RType(window * 256 + (index * 8 + bit) as u16));
                }
            }
        }
        at += 2 + length;
    }
    types
}

fn line(record: &Record) -> String {
    let mut text = String::new();
    tern_zone::print::write_record(record, &mut text);
    text
}
