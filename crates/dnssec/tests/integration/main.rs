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
//!   Ed25519 KSK and ZSK;
//! - both verifiers reject each of those zones once one octet of one
//!   signature is flipped (an RRSIG over an A RRset, over the DNSKEY
//!   RRset), so a passing run means the signatures were checked;
//! - glue is neither signed nor in the NSEC chain, a delegation signs only
//!   its DS and its bitmap holds NS and DS, empty non-terminals get no
//!   NSEC, a wildcard's labels field leaves out the `*`, the NSEC TTL is
//!   the SOA's MINIMUM when lower than its TTL, the DNSKEY RRset is signed
//!   by the KSK alone and the rest by the ZSK alone.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use tern_dnssec::{sign_zone, Algorithm, KeyRole, SignOptions, SigningKey, Validity};
use tern_wire::name::NameBuf;
use tern_wire::types::RType;
use tern_zone::print::write_zone;
use tern_zone::{parse_bytes, NoInclude, Options, Record};

//----------- The zones ------------------------------------------------------

/// `example.`: signed with one CSK. `c.example.` and `b.c.example.` are
/// empty non-terminals, and so is `CASE.example.` above `Mixed.CASE`,
/// whose owner is never spelled in lower case; `sub` is a signed delegation with glue (and glue
/// below the glue), `insecure` an unsigned one with an A record at the
/// cut; the input's RRSIG, NSEC and apex DNSKEY are stale and replaced.
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
    let (origin, records) = signed("example.", EXAMPLE, vec![key], 3);
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
    let (origin, records) = signed("example.org.", EXAMPLE_ORG, vec![ksk, zsk], 0);
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

//----------- Signing and checking -------------------------------------------

/// Parses `text` at `origin`, signs it (valid from an hour ago for 14
/// days) and returns the signed records; `replaced` is the number of the
/// input's DNSSEC records the signer must drop.
fn signed(
    origin: &str,
    text: &str,
    keys: Vec<SigningKey>,
    replaced: usize,
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

/// The zone passes both verifiers, and each of them fails it once one
/// octet of the signature over www's A RRset (or the first of the
/// signatures over the DNSKEY RRset) is flipped.
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
    let targets = [
        (
            if origin_text == "example." {
                www.as_str()
            } else {
                "ns.example.org."
            },
            RType::A,
        ),
        (origin_text.as_str(), RType::DNSKEY),
    ];
    for (owner, rtype) in targets {
        let mut broken = records.to_vec();
        let victim = broken
            .iter_mut()
            .find(|record| {
                record.rtype == RType::RRSIG
                    && covered(&record.rdata) == rtype
                    && record.owner.to_string().eq_ignore_ascii_case(owner)
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
    let (_, mut at) = tern_wire::name::Name::parse_prefix(rdata).unwrap();
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
