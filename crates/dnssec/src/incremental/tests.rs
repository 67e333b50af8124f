//! The incremental signer against the whole-zone signer.

use std::collections::BTreeSet;
use std::path::Path;

use tern_zone::{parse_bytes, NoInclude, Options};

use super::*;
use crate::key::{Algorithm, KeyRole};
use crate::nsec3::Nsec3Params;
use crate::rrsig::Validity;
use crate::zone::{sign_zone, sign_zone_with, Denial};

const NOW: u64 = 1_800_000_000;
const LIFETIME: u64 = 14 * 86_400;
const REFRESH: u64 = 7 * 86_400;

fn origin() -> NameBuf {
    NameBuf::from_text(b"example.", None).unwrap()
}

fn zone(text: &str) -> Vec<Record> {
    parse_bytes(
        text.as_bytes(),
        Path::new("test"),
        origin().as_name(),
        &Options::default(),
        &mut NoInclude,
    )
    .unwrap()
    .records
}

fn options(now: u64, denial: &Denial, serial_above: Option<u32>) -> SignOptions {
    SignOptions {
        validity: Validity::new(now - 3600, now + LIFETIME).unwrap(),
        dnskey_ttl: None,
        denial: denial.clone(),
        serial_above,
    }
}

fn refresh(now: u64, jitter: u64, window: u64) -> Refresh {
    Refresh {
        now,
        refresh: REFRESH,
        jitter,
        window,
    }
}

fn nsec3() -> Denial {
    Denial::Nsec3(Nsec3Params {
        salt: vec![0xab, 0xcd],
        ..Nsec3Params::default()
    })
}

/// A zone of every kind of name: delegations (secure and not) with glue,
/// an empty non-terminal, a wildcard, the apex's own records.
const MIXED: &str = "$TTL 300\n@ SOA ns hostmaster 1 7200 3600 1209600 300\n@ NS ns\n\
                     @ MX 10 mail\nns A 192.0.2.1\nmail A 192.0.2.2\nwww A 192.0.2.3\n\
                     WWW AAAA 2001:db8::3\na.b.c TXT \"deep\"\n*.wild TXT \"any\"\n\
                     sub NS ns.sub\nsub DS 1 13 2 00\nns.sub A 192.0.2.4\n\
                     insecure NS ns.example.net.\n";

/// The same zone with edits of every kind: a record changed, a name
/// added, a name deleted, a TTL changed, a delegation made secure.
const MIXED_EDITED: &str = "$TTL 300\n@ SOA ns hostmaster 2 7200 3600 1209600 300\n@ NS ns\n\
                            @ MX 10 mail\nns A 192.0.2.1\nmail A 192.0.2.2\nwww A 192.0.2.30\n\
                            WWW 600 AAAA 2001:db8::3\n*.wild TXT \"any\"\nnew TXT \"new\"\n\
                            sub NS ns.sub\nsub DS 1 13 2 00\nns.sub A 192.0.2.4\n\
                            insecure NS ns.example.net.\ninsecure DS 2 13 2 00\n";

/// Each record but RRSIGs as (owner lowercased, type, TTL, RDATA), and
/// each RRSIG as (owner lowercased, type covered, key tag).
type Shape = (
    BTreeSet<(Vec<u8>, u16, u32, Vec<u8>)>,
    BTreeSet<(Vec<u8>, u16, u16)>,
);

fn shape(records: &[Record]) -> Shape {
    let mut plain = BTreeSet::new();
    let mut signatures = BTreeSet::new();
    for record in records {
        let owner = record.owner.as_name().to_lower().as_bytes().to_vec();
        if record.rtype == RType::RRSIG {
            let fields = Fields::of(&record.rdata).unwrap();
            assert!(
                signatures.insert((owner, fields.covered.0, fields.key_tag)),
                "one RRSIG per RRset and key"
            );
        } else {
            plain.insert((owner, record.rtype.0, record.ttl, record.rdata.clone()));
        }
    }
    (plain, signatures)
}

fn keys(scheme: &[KeyRole]) -> Vec<SigningKey> {
    scheme
        .iter()
        .map(|&role| {
            SigningKey::generate(Algorithm::EcdsaP256Sha256, role)
                .unwrap()
                .0
        })
        .collect()
}

/// Edited and signed again, the zone is the one a whole signing makes
/// (the same records, an RRSIG for the same RRsets and keys), with NSEC
/// and NSEC3, a CSK and a KSK and ZSK; the RRSIGs kept are the previous
/// version's, octet for octet; and the difference given turns the
/// previous version into the new one.
#[test]
fn the_same_zone_as_a_whole_signing() {
    for denial in [Denial::Nsec, nsec3()] {
        for scheme in [&[KeyRole::Csk][..], &[KeyRole::Ksk, KeyRole::Zsk]] {
            let keys = keys(scheme);
            let origin = origin();
            let before = zone(MIXED);
            let after = zone(MIXED_EDITED);
            let previous = sign_zone(
                origin.as_name(),
                &before,
                &keys,
                &options(NOW, &denial, None),
            )
            .unwrap();
            let later = NOW + 3600;
            let resigned = resign_zone(
                origin.as_name(),
                &previous.records,
                &after,
                &KeySet::by_role(&keys),
                &options(later, &denial, Some(1)),
                &refresh(later, 0, 0),
            )
            .unwrap();
            let whole = sign_zone(
                origin.as_name(),
                &after,
                &keys,
                &options(later, &denial, Some(1)),
            )
            .unwrap();
            assert_eq!(shape(&resigned.records), shape(&whole.records));
            assert_eq!(resigned.replaced, whole.replaced);
            assert_eq!(
                resigned.signatures + resigned.kept,
                whole.signatures,
                "every RRSIG made or kept"
            );
            assert!(resigned.kept > 0 && resigned.signatures < whole.signatures / 2);
            let old: BTreeSet<&Vec<u8>> = previous
                .records
                .iter()
                .filter(|record| record.rtype == RType::RRSIG)
                .map(|record| &record.rdata)
                .collect();
            let reused = resigned
                .records
                .iter()
                .filter(|record| record.rtype == RType::RRSIG && old.contains(&record.rdata))
                .count();
            assert_eq!(reused, resigned.kept);

            let change = resigned.difference.unwrap();
            let mut applied = shape(&previous.records);
            let mut rrsigs: BTreeSet<Vec<u8>> = old.into_iter().cloned().collect();
            let (deleted, added) = (shape(&change.deleted), shape(&change.added));
            for record in &deleted.0 {
                assert!(applied.0.remove(record), "{record:?} was not there");
            }
            applied.0.extend(added.0);
            for record in &change.deleted {
                if record.rtype == RType::RRSIG {
                    assert!(rrsigs.remove(&record.rdata));
                }
            }
            for record in &change.added {
                if record.rtype == RType::RRSIG {
                    assert!(rrsigs.insert(record.rdata.clone()));
                }
            }
            assert_eq!(applied.0, shape(&resigned.records).0);
            let now: BTreeSet<Vec<u8>> = resigned
                .records
                .iter()
                .filter(|record| record.rtype == RType::RRSIG)
                .map(|record| record.rdata.clone())
                .collect();
            assert_eq!(rrsigs, now);
        }
    }
}

/// A zone of `hosts` A records, with serial `serial`; `extra` appended.
fn hosts(count: usize, serial: u32, extra: &str) -> String {
    let mut text = format!(
        "$TTL 3600\n@ SOA ns hostmaster {serial} 7200 3600 1209600 300\n@ NS ns\nns A 192.0.2.1\n"
    );
    for index in 0..count {
        text.push_str(&format!(
            "h{index} A 10.{}.{}.{}\n",
            index >> 16,
            (index >> 8) & 255,
            index & 255
        ));
    }
    text.push_str(extra);
    text
}

/// The RRSIGs made by signing again after one record changed, and after
/// one name was added, in a zone of `count` hosts (NSEC or NSEC3).
fn signatures_after_edits(count: usize, denial: &Denial) -> (usize, usize, usize) {
    let keys = keys(&[KeyRole::Csk]);
    let origin = origin();
    let first = zone(&hosts(count, 1, ""));
    let signed = sign_zone(origin.as_name(), &first, &keys, &options(NOW, denial, None)).unwrap();
    let later = NOW + 60;
    let resign = |previous: &[Record], text: &str, above: u32| {
        resign_zone(
            origin.as_name(),
            previous,
            &zone(text),
            &KeySet::by_role(&keys),
            &options(later, denial, Some(above)),
            &refresh(later, 86_400, 3600),
        )
        .unwrap()
    };
    // h7's address changes: its A and the SOA.
    let edit = |extra: &str| hosts(count, 1, extra).replace("h7 A 10.0.0.7\n", "h7 A 192.0.2.7\n");
    let one = resign(&signed.records, &edit(""), 1);
    // A name added: its A, its NSEC (or NSEC3), its predecessor's, the SOA.
    let added = resign(&one.records, &edit("h7x A 192.0.2.8\n"), 2);
    // Nothing changed: the SOA alone (its serial raised).
    let none = resign(&added.records, &edit("h7x A 192.0.2.8\n"), 3);
    let change = added.difference.as_ref().unwrap();
    assert!(
        change.added.len() <= 10 && change.deleted.len() <= 10,
        "{change:?}"
    );
    (one.signatures, added.signatures, none.signatures)
}

/// Issue 24: an incremental signing costs what changed, not the zone: the
/// same number of signatures at 1,000 and 10,000 records.
#[test]
fn signatures_made_do_not_grow_with_the_zone() {
    for denial in [Denial::Nsec, nsec3()] {
        let small = signatures_after_edits(1_000, &denial);
        let large = signatures_after_edits(10_000, &denial);
        assert_eq!(small, large, "{denial:?}");
        assert_eq!(small, (2, 4, 1), "{denial:?}");
    }
}

/// A zone signed whole at one moment (its signatures expire together) is
/// refreshed in batches spread over the jitter: each batch a small share
/// of the zone, every original signature replaced by the time the last
/// would be due without jitter, and none left due after a batch.
#[test]
fn refresh_spread_over_the_jitter_in_batches() {
    const JITTER: u64 = 2 * 86_400;
    const WINDOW: u64 = JITTER / 24;
    let keys = keys(&[KeyRole::Csk]);
    let origin = origin();
    let records = zone(&hosts(200, 1, ""));
    let mut signed = sign_zone(
        origin.as_name(),
        &records,
        &keys,
        &options(NOW, &Denial::Nsec, None),
    )
    .unwrap()
    .records;
    let total = signed
        .iter()
        .filter(|record| record.rtype == RType::RRSIG)
        .count();
    let originals: BTreeSet<Vec<u8>> = signed
        .iter()
        .filter(|record| record.rtype == RType::RRSIG)
        .map(|record| record.rdata.clone())
        .collect();
    let first = next_refresh(&signed, &refresh(NOW, JITTER, WINDOW)).unwrap();
    assert!((NOW + LIFETIME - REFRESH - JITTER..=NOW + LIFETIME - REFRESH).contains(&first));
    let mut now = first;
    let mut batches = 0;
    let mut serial = 1;
    loop {
        let resigned = resign_zone(
            origin.as_name(),
            &signed,
            &records,
            &KeySet::by_role(&keys),
            &options(now, &Denial::Nsec, Some(serial)),
            &refresh(now, JITTER, WINDOW),
        )
        .unwrap();
        serial += 1;
        batches += 1;
        assert!(
            resigned.signatures < total / 4,
            "batch {batches}: {} of {total} signatures",
            resigned.signatures
        );
        let next = resigned.next_refresh.unwrap();
        assert!(next > now + WINDOW, "a signature left due after a batch");
        signed = resigned.records;
        let left = signed
            .iter()
            .filter(|record| record.rtype == RType::RRSIG && originals.contains(&record.rdata))
            .count();
        if left == 0 {
            break;
        }
        assert!(batches < 100);
        now = next;
    }
    assert!(batches >= 10, "{batches} batches");
    assert!(now <= NOW + LIFETIME - REFRESH);
}

/// A signature whose inception has not come (a clock set back), or by a
/// key no longer given, is made anew; one due within the window too.
#[test]
fn signatures_not_kept() {
    let origin = origin();
    let records = zone(&hosts(3, 1, ""));
    let keys = keys(&[KeyRole::Csk]);
    let signed = sign_zone(
        origin.as_name(),
        &records,
        &keys,
        &options(NOW, &Denial::Nsec, None),
    )
    .unwrap();
    let total = signed.signatures;
    let again = |keys: &[SigningKey], now: u64, window: u64| {
        resign_zone(
            origin.as_name(),
            &signed.records,
            &records,
            &KeySet::by_role(keys),
            &options(now, &Denial::Nsec, None),
            &refresh(now, 0, window),
        )
        .unwrap()
        .signatures
    };
    assert_eq!(again(&keys, NOW, 0), 0, "nothing changed, serial kept");
    assert_eq!(again(&keys, NOW - 2 * 3600, 0), total, "clock set back");
    let other = self::keys(&[KeyRole::Csk]);
    assert_eq!(again(&other, NOW, 0), total, "another key");
    assert_eq!(
        again(&keys, NOW, LIFETIME - REFRESH),
        total,
        "all due in the window"
    );
    let rdata = &signed
        .records
        .iter()
        .find(|r| r.rtype == RType::RRSIG)
        .unwrap()
        .rdata;
    let expiration = (NOW + LIFETIME) as u32;
    assert_eq!(Fields::of(rdata).unwrap().expiration, expiration);
    assert_eq!(
        refresh(NOW, 0, 0).due_at(rdata),
        Some(NOW + LIFETIME - REFRESH)
    );
    assert_eq!(
        absolute(5, u64::from(u32::MAX) - 5),
        u64::from(u32::MAX) + 6
    );
}

/// The key set of a KSK and ZSKs as a rollover has them: each ZSK of
/// `zsks` published, signing the zone when its flag says; the KSK's CDS
/// and CDNSKEY with `cds`.
fn rollover_set<'k>(ksk: &'k SigningKey, zsks: &[(&'k SigningKey, bool)], cds: bool) -> KeySet<'k> {
    let mut keys = vec![ZoneKey {
        key: ksk,
        published: true,
        signs_keys: true,
        signs_zone: false,
    }];
    keys.extend(zsks.iter().map(|&(key, signs_zone)| ZoneKey {
        key,
        published: true,
        signs_keys: false,
        signs_zone,
    }));
    KeySet {
        keys,
        cds: cds.then(|| vec![ksk]),
    }
}

/// The RRSIGs of `records` by the key with tag `tag`.
fn signatures_by(records: &[Record], tag: u16) -> usize {
    records
        .iter()
        .filter(|record| record.rtype == RType::RRSIG)
        .filter(|record| Fields::of(&record.rdata).unwrap().key_tag == tag)
        .count()
}

/// A ZSK pre-publication rollover and CDS publication, each step signed
/// again from the step before: every version is the zone a whole signing
/// with that key set makes; a key that stops signing leaves no RRSIG, the
/// new ZSK signs every RRset at its first step, the KSK's signature of an
/// unchanged DNSKEY RRset is kept, and a changed DNSKEY RRset, or new CDS
/// and CDNSKEY RRsets, are signed again.
#[test]
fn rollover_steps_signed_again() {
    for denial in [Denial::Nsec, nsec3()] {
        let keys = keys(&[KeyRole::Ksk, KeyRole::Zsk, KeyRole::Zsk]);
        let (ksk, old, new) = (&keys[0], &keys[1], &keys[2]);
        let origin = origin();
        let records = zone(MIXED);
        let steps = [
            // The new ZSK published: the DNSKEY RRset and the SOA.
            (
                rollover_set(ksk, &[(old, true), (new, false)], false),
                2,
                None,
            ),
            // The new ZSK signs, the old one stops: every RRset but the
            // DNSKEY RRset, whose KSK signature is kept.
            (
                rollover_set(ksk, &[(old, false), (new, true)], false),
                0,
                Some(1),
            ),
            // The old ZSK removed, the KSK's CDS and CDNSKEY published:
            // DNSKEY, CDS, CDNSKEY, the SOA and the apex's NSEC or NSEC3.
            (rollover_set(ksk, &[(new, true)], true), 5, None),
        ];
        let first = rollover_set(ksk, &[(old, true)], false);
        let mut previous = sign_zone_with(
            origin.as_name(),
            &records,
            &first,
            &options(NOW, &denial, None),
        )
        .unwrap()
        .records;
        for (step, (set, made, kept)) in steps.into_iter().enumerate() {
            let now = NOW + 3600 * (step as u64 + 1);
            let serial = Some(step as u32 + 1);
            let resigned = resign_zone(
                origin.as_name(),
                &previous,
                &records,
                &set,
                &options(now, &denial, serial),
                &refresh(now, 0, 0),
            )
            .unwrap();
            let whole = sign_zone_with(
                origin.as_name(),
                &records,
                &set,
                &options(now, &denial, serial),
            )
            .unwrap();
            assert_eq!(
                shape(&resigned.records),
                shape(&whole.records),
                "step {step}"
            );
            assert_eq!(resigned.signatures + resigned.kept, whole.signatures);
            if made > 0 {
                assert_eq!(resigned.signatures, made, "step {step} {denial:?}");
            }
            if let Some(kept) = kept {
                assert_eq!(resigned.kept, kept, "step {step}");
                assert_eq!(
                    signatures_by(&resigned.records, new.key_tag()),
                    resigned.signatures,
                    "the new ZSK signs every RRset but the DNSKEY RRset"
                );
            }
            assert_eq!(
                signatures_by(&resigned.records, old.key_tag()),
                usize::from(step == 0) * signatures_by(&previous, old.key_tag()),
                "step {step}: the old ZSK's RRSIGs only while it signs"
            );
            previous = resigned.records;
        }
    }
}

/// A signature is kept only by a key whose DNSKEY the previous version
/// published: a previous version whose DNSKEY RRset lacks the ZSK (a key
/// of the same tag may have made its RRSIGs) has all of them made anew.
#[test]
fn signatures_of_a_key_not_published_before_not_kept() {
    let keys = keys(&[KeyRole::Ksk, KeyRole::Zsk]);
    let origin = origin();
    let records = zone(&hosts(3, 1, ""));
    let set = KeySet::by_role(&keys);
    let signed = sign_zone_with(
        origin.as_name(),
        &records,
        &set,
        &options(NOW, &Denial::Nsec, None),
    )
    .unwrap();
    let again = |previous: &[Record]| {
        resign_zone(
            origin.as_name(),
            previous,
            &records,
            &set,
            &options(NOW, &Denial::Nsec, None),
            &refresh(NOW, 0, 0),
        )
        .unwrap()
    };
    assert_eq!(again(&signed.records).signatures, 0, "all kept");
    let zsk = keys[1].dnskey_rdata();
    let without: Vec<Record> = signed
        .records
        .iter()
        .filter(|record| !(record.rtype == RType::DNSKEY && record.rdata == zsk))
        .cloned()
        .collect();
    let resigned = again(&without);
    assert_eq!(resigned.kept, 0, "the ZSK's and the changed DNSKEY RRset's");
    assert_eq!(resigned.signatures, signed.signatures);
}

/// An algorithm rollover's steps (RFC 6781 section 4.1.4), each signed
/// again from the step before: the new algorithm's CSK signing
/// unpublished, both published, the old one withdrawn but signing, the
/// new one alone. Every version is the zone a whole signing with that key
/// set makes, and while both sign every RRset has an RRSIG of each
/// algorithm; the old key's RRSIGs go only when it stops signing.
#[test]
fn algorithm_rollover_steps_signed_again() {
    for denial in [Denial::Nsec, nsec3()] {
        let old = keys(&[KeyRole::Csk]).remove(0);
        let new = SigningKey::generate(Algorithm::Ed25519, KeyRole::Csk)
            .unwrap()
            .0;
        let set = |old_key: Option<bool>, new_key: Option<bool>| KeySet {
            keys: [(&old, old_key), (&new, new_key)]
                .into_iter()
                .filter_map(|(key, published)| {
                    published.map(|published| ZoneKey {
                        key,
                        published,
                        signs_keys: true,
                        signs_zone: true,
                    })
                })
                .collect(),
            cds: None,
        };
        let origin = origin();
        let records = zone(MIXED);
        let mut previous = sign_zone_with(
            origin.as_name(),
            &records,
            &set(Some(true), None),
            &options(NOW, &denial, None),
        )
        .unwrap()
        .records;
        let rrsets = signatures_by(&previous, old.key_tag());
        let steps = [
            (Some(true), Some(false)),
            (Some(true), Some(true)),
            (Some(false), Some(true)),
            (None, Some(true)),
        ];
        for (step, (old_key, new_key)) in steps.into_iter().enumerate() {
            let now = NOW + 3600 * (step as u64 + 1);
            let serial = Some(step as u32 + 1);
            let keys = set(old_key, new_key);
            let resigned = resign_zone(
                origin.as_name(),
                &previous,
                &records,
                &keys,
                &options(now, &denial, serial),
                &refresh(now, 0, 0),
            )
            .unwrap();
            let whole = sign_zone_with(
                origin.as_name(),
                &records,
                &keys,
                &options(now, &denial, serial),
            )
            .unwrap();
            assert_eq!(
                shape(&resigned.records),
                shape(&whole.records),
                "step {step}"
            );
            let by_new = signatures_by(&resigned.records, new.key_tag());
            let by_old = signatures_by(&resigned.records, old.key_tag());
            assert_eq!(
                by_new, rrsets,
                "step {step} {denial:?}: the new key signs all"
            );
            let old_signs = old_key.is_some();
            assert_eq!(
                by_old,
                usize::from(old_signs) * rrsets,
                "step {step}: the old key's RRSIGs while it signs"
            );
            let dnskeys = resigned
                .records
                .iter()
                .filter(|record| record.rtype == RType::DNSKEY)
                .count();
            let published = [old_key, new_key]
                .iter()
                .filter(|k| **k == Some(true))
                .count();
            assert_eq!(dnskeys, published, "step {step}");
            previous = resigned.records;
        }
    }
}

/// The records of `owner` among `records` (any case).
fn at_owner<'r>(records: &'r [Record], owner: &str) -> Vec<RecordRef<'r>> {
    let owner = NameBuf::from_text(owner.as_bytes(), Some(origin().as_name())).unwrap();
    records
        .iter()
        .filter(|record| record.owner.as_name().eq_ignore_case(owner.as_name()))
        .map(|record| RecordRef {
            location: tern_zone::Location::default(),
            ..record.as_record_ref()
        })
        .collect()
}

/// Records changed at names that stay (an RRset changed, a type added,
/// one removed, a wildcard's, the apex's MX): signing only those owners
/// and the apex gives, at them, what signing the zone again from its
/// previous version gives (the same records, RRSIGs for the same RRsets
/// and keys, the unchanged RRsets' RRSIGs kept octet for octet), with a
/// CSK and with a KSK and ZSK; the difference is `resign_zone`'s. A name
/// added, glue, a delegation or NSEC3 are refused (`None`).
#[test]
fn owners_signed_as_the_zone_signed_again() {
    let edited = MIXED
        .replace(" 1 7200", " 2 7200")
        .replace("www A 192.0.2.3", "www A 192.0.2.30\nwww TXT \"new\"")
        .replace("WWW AAAA 2001:db8::3\n", "")
        .replace(
            "mail A 192.0.2.2",
            "mail A 192.0.2.2\nmail AAAA 2001:db8::2",
        )
        .replace("*.wild TXT \"any\"", "*.wild TXT \"every\"")
        .replace("@ MX 10 mail", "@ MX 20 mail");
    for scheme in [&[KeyRole::Csk][..], &[KeyRole::Ksk, KeyRole::Zsk]] {
        let keys = keys(scheme);
        let origin = origin();
        let before = zone(MIXED);
        let after = zone(&edited);
        let previous = sign_zone(
            origin.as_name(),
            &before,
            &keys,
            &options(NOW, &Denial::Nsec, None),
        )
        .unwrap();
        let later = NOW + 3600;
        let key_set = KeySet::by_role(&keys);
        let again = resign_zone(
            origin.as_name(),
            &previous.records,
            &after,
            &key_set,
            &options(later, &Denial::Nsec, Some(1)),
            &refresh(later, 0, 0),
        )
        .unwrap();
        let owners = [
            "example.",
            "www.example.",
            "mail.example.",
            "*.wild.example.",
        ];
        let edits: Vec<OwnerEdit<'_>> = owners
            .iter()
            .map(|owner| {
                let previous = at_owner(&previous.records, owner);
                OwnerEdit {
                    owner: previous[0].owner,
                    previous,
                    records: at_owner(&after, owner),
                }
            })
            .collect();
        let apex = at_owner(&previous.records, "example.");
        let by_owner = resign_owners(
            origin.as_name(),
            &apex,
            &edits,
            &key_set,
            &options(later, &Denial::Nsec, Some(1)),
            &refresh(later, 0, 0),
        )
        .unwrap()
        .expect("owners that stay");
        let mut mine: Vec<Record> = by_owner.owners.concat();
        let mut theirs: Vec<Record> = owners
            .iter()
            .flat_map(|owner| at_owner(&again.records, owner))
            .map(|record| record.to_record())
            .collect();
        assert_eq!(shape(&mine), shape(&theirs));
        // The RRSIGs kept are the same ones.
        let rrsigs = |records: &mut Vec<Record>| {
            records.retain(|record| record.rtype == RType::RRSIG);
            records
                .iter()
                .map(|record| record.rdata.clone())
                .collect::<BTreeSet<_>>()
        };
        let old = rrsigs(&mut previous.records.clone());
        let kept_mine: BTreeSet<_> = rrsigs(&mut mine).intersection(&old).cloned().collect();
        let kept_theirs: BTreeSet<_> = rrsigs(&mut theirs).intersection(&old).cloned().collect();
        assert_eq!(kept_mine, kept_theirs);
        assert_eq!(by_owner.kept, kept_mine.len());
        assert!(by_owner.signatures > 0 && by_owner.signatures < again.signatures + 1);
        let change = again.difference.unwrap();
        let without_rrsig_bytes = |records: &[Record]| shape(records).0;
        assert_eq!(
            without_rrsig_bytes(&by_owner.difference.deleted),
            without_rrsig_bytes(&change.deleted)
        );
        assert_eq!(
            without_rrsig_bytes(&by_owner.difference.added),
            without_rrsig_bytes(&change.added)
        );

        // Refused: a name the previous version lacks, glue, a delegation;
        // NSEC3.
        for owner in ["new.example.", "ns.sub.example.", "sub.example."] {
            let name = NameBuf::from_text(owner.as_bytes(), None).unwrap();
            let mut refused = edits.clone();
            refused.push(OwnerEdit {
                owner: name.as_name(),
                previous: at_owner(&previous.records, owner),
                records: at_owner(&after, "www.example."),
            });
            let signed = resign_owners(
                origin.as_name(),
                &apex,
                &refused,
                &key_set,
                &options(later, &Denial::Nsec, Some(1)),
                &refresh(later, 0, 0),
            );
            assert_eq!(signed.unwrap(), None, "{owner}");
        }
        let signed = resign_owners(
            origin.as_name(),
            &apex,
            &edits,
            &key_set,
            &options(later, &nsec3(), Some(1)),
            &refresh(later, 0, 0),
        );
        assert_eq!(signed.unwrap(), None, "NSEC3");
    }
}
