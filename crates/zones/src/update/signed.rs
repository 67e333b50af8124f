//! Updates to zones tern signs (issue 25 with issue 24's signer;
//! docs/decisions/0015).
//!
//! The update thread keeps such a zone's records unsigned: the served
//! version's records without the signer's (every RRSIG, NSEC and NSEC3;
//! the apex's DNSKEY and NSEC3PARAM; the apex's CDS and CDNSKEY when the
//! policy publishes them), so that the engine sees only what updates may
//! change. An update that names one of the types the signer owns is
//! REFUSED before the engine runs, as Knot refuses it (`ddns.c`,
//! `is_dnssec_protected`: RRSIG, NSEC, NSEC3, CDS and CDNSKEY anywhere,
//! DNSKEY and NSEC3PARAM at the apex).
//!
//! A group's updates to the zone are signed together, from the served
//! version's signed records, by [`crate::signing::sign_again`]: only the
//! changed RRsets, their NSEC or NSEC3 neighbours and the SOA get new
//! signatures (and what the keys' due rollover steps call for). The
//! signed version is what is served and what the IXFR difference is of; a
//! signing that fails leaves the zone as it was and answers SERVFAIL.
//!
//! The update journal keeps the unsigned differences. A load (start,
//! `tern reload`, the re-signing timer) signs the zone file, then
//! [`replay_signed`] applies the journal on top of it as a difference
//! (merged, whatever the file's serial: the signer's serials never match
//! the file's) and signs the result again above both serials.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tern_authority::{RecordCursor, Zone, ZoneBuilder};
use tern_update::{Access, UpdateMessage, UpdateOptions, ZoneRecords};
use tern_wire::name::{Name, NameBuf};
use tern_wire::types::{RClass, RType, Rcode};
use tern_xfr::axfr::serial_at_or_after;
use tern_xfr::journal::{records_but_soa, Difference, Record};
use tern_zone::{RecordList, Records, Sink};

use crate::load::Stamp;
use crate::policy::CdsCdnskey;
use crate::rollover::ZoneKeys;
pub(super) use crate::signing::{apex_serial, served_records};

/// The signed records of a version served, kept by the update thread
/// for the next group's signing.
pub(super) struct SignedBase {
    /// The version they are the records of.
    pub(super) version: Arc<Zone>,
    /// Its records, in the signer's order.
    pub(super) records: Records,
}

/// Whether the signer makes the record of `rtype` at `owner` in the zone
/// `origin` (`cds`: the policy publishes CDS and CDNSKEY): it drops the
/// input's own and makes its own.
pub(super) fn signer_made(origin: Name<'_>, owner: Name<'_>, rtype: RType, cds: bool) -> bool {
    match rtype {
        RType::RRSIG | RType::NSEC | RType::NSEC3 => true,
        RType::DNSKEY | RType::NSEC3PARAM => owner.eq_ignore_case(origin),
        RType::CDS | RType::CDNSKEY => cds && owner.eq_ignore_case(origin),
        _ => false,
    }
}

/// The signer's RRsets of a served signed version, as the prerequisites
/// of an update see them ([`tern_update::SignerRrsets`]): those at the
/// apex (DNSKEY, NSEC3PARAM, CDS and CDNSKEY when published, and the
/// apex's RRSIG and NSEC) as served, as Knot's prerequisites see its
/// signed zone (docs/decisions/0015). Below the apex, RRSIG, NSEC and
/// NSEC3 are left to the engine's records, which hold none of them.
pub(super) struct ServedSigner<'a> {
    pub(super) zone: &'a Zone,
    pub(super) cds: bool,
}

impl tern_update::SignerRrsets for ServedSigner<'_> {
    /// Bound: the apex's records (the served zone's first node).
    fn rrset(&self, owner: Name<'_>, rtype: RType) -> Option<Vec<Box<[u8]>>> {
        let origin = self.zone.origin();
        if !owner.eq_ignore_case(origin) || !signer_made(origin, owner, rtype, self.cds) {
            return None;
        }
        let mut cursor = RecordCursor::default();
        let mut rdata = Vec::new();
        while let Some(record) = self.zone.next_record(&mut cursor) {
            if !record.owner.eq_ignore_case(origin) {
                break;
            }
            if record.rtype == rtype {
                rdata.push(Box::from(record.rdata));
            }
        }
        Some(rdata)
    }
}

/// The engine on `records`, the zone's whose served version is `served`;
/// in a zone tern signs (`cds`: whether its policy publishes CDS and
/// CDNSKEY) prerequisites see the signer's RRsets at the apex as served
/// ([`ServedSigner`]).
pub(super) fn engine(
    records: &mut ZoneRecords,
    message: &UpdateMessage,
    access: &Access<'_>,
    options: &UpdateOptions,
    served: &Zone,
    cds: Option<bool>,
) -> Result<Option<tern_update::Difference>, Rcode> {
    match cds {
        Some(cds) => {
            let signer = ServedSigner { zone: served, cds };
            tern_update::update_signed(records, message, access, options, &signer)
        }
        None => tern_update::update(records, message, access, options),
    }
}

/// Whether the policy of `keys` publishes CDS and CDNSKEY.
pub(super) fn publishes_cds(keys: &ZoneKeys) -> bool {
    keys.policy.cds_cdnskey != CdsCdnskey::None
}

/// Whether an update to the signed zone `origin` names a type the signer
/// owns (Knot's list, `is_dnssec_protected`): then REFUSED. Records
/// outside the zone are left to the engine (NOTZONE).
pub(super) fn touches_signer_records(origin: Name<'_>, message: &UpdateMessage) -> bool {
    message.updates.iter().any(|record| {
        let owner = record.owner();
        owner.ends_with(origin)
            && match record.rtype {
                RType::RRSIG | RType::NSEC | RType::NSEC3 | RType::CDS | RType::CDNSKEY => true,
                RType::DNSKEY | RType::NSEC3PARAM => owner.eq_ignore_case(origin),
                _ => false,
            }
    })
}

/// The engine's records of a served signed version: its records but the
/// signer's.
pub(super) fn unsigned_records(zone: &Zone, cds: bool) -> Result<ZoneRecords, String> {
    let origin = zone.origin();
    let mut list = Vec::with_capacity(zone.record_count());
    let mut cursor = RecordCursor::default();
    while let Some(record) = zone.next_record(&mut cursor) {
        if signer_made(origin, record.owner, record.rtype, cds) {
            continue;
        }
        list.push(tern_zone::Record {
            owner: record.owner.to_buf(),
            class: RClass::IN,
            ttl: record.ttl,
            rtype: record.rtype,
            rdata: record.rdata.to_vec(),
            location: tern_zone::Location::default(),
        });
    }
    ZoneRecords::from_records(origin, &list)
        .map_err(|err| format!("its records do not take updates: {err}"))
}

/// The state directory of a zone's keys (`STATE/keys/ZONE`).
fn state_directory(keys: &ZoneKeys) -> Result<PathBuf, String> {
    keys.dir
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("{}: not under a state directory", keys.dir.display()))
}

/// A signed version made by updates: the zone to serve, its records in
/// the signer's order, and its difference from the version served.
pub(super) struct SignedUpdate {
    pub(super) zone: Arc<Zone>,
    pub(super) records: Records,
    pub(super) difference: Difference,
}

/// Signs `unsigned` (the engine's records after a group's updates) from
/// `previous` (the signed records of `served`, the version the group
/// started from) with the zone's keys: the version to serve above
/// `served`'s serial.
pub(super) fn sign_update<P: RecordList + ?Sized>(
    served: &Zone,
    previous: &P,
    unsigned: &ZoneRecords,
    keys: &ZoneKeys,
) -> Result<SignedUpdate, String> {
    let origin = served.origin();
    let list = unsigned.to_records();
    let state = state_directory(keys)?;
    let resigned = crate::signing::sign_again(
        origin,
        previous,
        &list,
        &keys.policy,
        &state,
        crate::unix_time(),
        Some(served.serial()),
    )?;
    drop(list);
    // The served version patched with the owners the signing changed,
    // else built whole.
    let patched = resigned.zone.difference.as_ref().and_then(|change| {
        crate::load::patch_signed(origin, served, &resigned.zone.records, change)
    });
    let (records, zone) = match patched {
        Some(zone) => (compact(&resigned.zone.records)?, zone),
        None => build(origin, &resigned.zone.records)?,
    };
    let difference = match resigned.zone.difference {
        Some(change) => change_difference(served, &zone, change),
        None => Difference::between(served, &zone),
    };
    Ok(SignedUpdate {
        zone: Arc::new(zone),
        records,
        difference,
    })
}

/// The signer's change as the IXFR history keeps it (the apex SOA in the
/// SOAs only).
fn change_difference(old: &Zone, new: &Zone, change: tern_dnssec::Change) -> Difference {
    let apex = new.origin();
    let records = |records: Vec<tern_zone::Record>| {
        let mut list: Vec<Record> = records
            .into_iter()
            .filter(|record| {
                !(record.rtype == RType::SOA && record.owner.as_name().eq_ignore_case(apex))
            })
            .map(|record| Record {
                owner: record.owner.as_name().to_lower().as_bytes().to_vec(),
                rtype: record.rtype,
                ttl: record.ttl,
                rdata: record.rdata,
            })
            .collect();
        list.sort_unstable();
        list.dedup();
        list
    };
    let soa = |zone: &Zone| {
        let soa = zone.soa_record();
        (soa.ttl, soa.rdata.to_vec())
    };
    Difference {
        from_soa: soa(old),
        to_soa: soa(new),
        deleted: records(change.deleted),
        added: records(change.added),
    }
}

/// Signed `records` compact for the next signing.
fn compact<R: RecordList + ?Sized>(records: &R) -> Result<Records, String> {
    let mut compact = Records::new();
    Sink::reserve(&mut compact, records.len());
    for record in (0..records.len()).map(|index| records.record(index)) {
        Sink::record(&mut compact, record).map_err(str::to_string)?;
    }
    Ok(compact)
}

/// The zone `origin` served from signed `records`, and the records
/// compact for the next signing.
fn build<R: RecordList + ?Sized>(origin: Name<'_>, records: &R) -> Result<(Records, Zone), String> {
    let mut compact = Records::new();
    Sink::reserve(&mut compact, records.len());
    let mut builder = ZoneBuilder::new(origin);
    let rdata: usize = (0..records.len())
        .map(|index| records.record(index).rdata.len())
        .sum();
    builder.reserve(records.len(), rdata);
    for record in (0..records.len()).map(|index| records.record(index)) {
        Sink::record(&mut compact, record).map_err(str::to_string)?;
        builder
            .insert(
                record.owner,
                record.rtype,
                record.class,
                record.ttl,
                record.rdata,
            )
            .map_err(|err| format!("building the signed zone: {err}"))?;
    }
    let zone = builder
        .finish()
        .map_err(|err| format!("building the signed zone: {err}"))?;
    Ok((compact, zone))
}

/// A signed `zone` (loaded and signed from its file, `stamp` its load's)
/// with the update journal at `path` applied on top as a difference, and
/// signed again from it: serial above both the loaded one and the
/// journal's last. The stamp's change is taken, so that the owner
/// compares the served version and this one for the IXFR history. A
/// journal that does not apply (or a signing that fails) leaves the
/// loaded version, with an error logged; the journal is kept.
pub(super) fn replay_signed(zone: Arc<Zone>, stamp: &Stamp, path: &Path) -> Arc<Zone> {
    let (Some(signed), Some(keys)) = (stamp.signed(), stamp.keys()) else {
        return zone;
    };
    let differences = super::read_journal(path);
    let Some(last) = differences.last() else {
        return zone;
    };
    let origin = zone.origin();
    let cds = publishes_cds(keys);
    let mut records: BTreeSet<Record> = records_but_soa(&zone)
        .into_iter()
        .filter(|record| {
            Name::from_wire(&record.owner)
                .is_ok_and(|owner| !signer_made(origin, owner, record.rtype, cds))
        })
        .collect();
    for difference in &differences {
        for record in &difference.deleted {
            records.remove(record);
        }
        for record in &difference.added {
            records.insert(record.clone());
        }
    }
    let above = if serial_at_or_after(last.to_serial(), zone.serial()) {
        last.to_serial()
    } else {
        zone.serial()
    };
    let replayed = (|| -> Result<Zone, String> {
        let mut list = Vec::with_capacity(records.len() + 1);
        list.push(tern_zone::Record {
            owner: NameBuf::from_name(origin),
            class: RClass::IN,
            ttl: last.to_soa.0,
            rtype: RType::SOA,
            rdata: last.to_soa.1.clone(),
            location: tern_zone::Location::default(),
        });
        for record in &records {
            list.push(tern_zone::Record {
                owner: NameBuf::from_name(
                    Name::from_wire(&record.owner).map_err(|err| err.to_string())?,
                ),
                class: RClass::IN,
                ttl: record.ttl,
                rtype: record.rtype,
                rdata: record.rdata.clone(),
                location: tern_zone::Location::default(),
            });
        }
        let state = state_directory(keys)?;
        let previous = signed.records().map_err(|err| err.to_string())?;
        let resigned = crate::signing::sign_again(
            origin,
            &previous,
            &list,
            &keys.policy,
            &state,
            crate::unix_time(),
            Some(above),
        )?;
        drop(list);
        build(origin, &resigned.zone.records).map(|(_, zone)| zone)
    })();
    match replayed {
        Ok(replayed) => {
            let _ = signed.take_change();
            log::info!(
                "zone {origin}: {} update(s) of its journal applied to its file and signed, \
                 serial {} -> {}",
                differences.len(),
                zone.serial(),
                replayed.serial()
            );
            Arc::new(replayed)
        }
        Err(err) => {
            log::error!(
                "zone {origin}: its update journal {} does not apply to the signed zone \
                 ({err}); the file is served, the journal kept",
                path.display()
            );
            zone
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An UPDATE of `example.` deleting the RRset of `rtype` at `owner`
    /// (`None`: the apex).
    fn deleting(owner: Option<&str>, rtype: RType) -> UpdateMessage {
        let mut m = vec![0, 1, 0x28, 0, 0, 1, 0, 0, 0, 1, 0, 0];
        m.extend_from_slice(b"\x07example\x00\x00\x06\x00\x01");
        match owner {
            Some(label) => {
                m.push(label.len() as u8);
                m.extend_from_slice(label.as_bytes());
                m.extend_from_slice(&[0xc0, 12]);
            }
            None => m.extend_from_slice(&[0xc0, 12]),
        }
        m.extend_from_slice(&rtype.0.to_be_bytes());
        m.extend_from_slice(&[0, 255, 0, 0, 0, 0, 0, 0]);
        UpdateMessage::parse(&m).expect("a well-formed UPDATE")
    }

    /// Knot's list: RRSIG, NSEC, NSEC3, CDS, CDNSKEY anywhere; DNSKEY and
    /// NSEC3PARAM at the apex only; other types never.
    #[test]
    fn the_signers_types_are_knots() {
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let origin = origin.as_name();
        for rtype in [
            RType::RRSIG,
            RType::NSEC,
            RType::NSEC3,
            RType::CDS,
            RType::CDNSKEY,
        ] {
            assert!(touches_signer_records(
                origin,
                &deleting(Some("www"), rtype)
            ));
            assert!(touches_signer_records(origin, &deleting(None, rtype)));
        }
        for rtype in [RType::DNSKEY, RType::NSEC3PARAM] {
            assert!(touches_signer_records(origin, &deleting(None, rtype)));
            assert!(!touches_signer_records(
                origin,
                &deleting(Some("www"), rtype)
            ));
        }
        for rtype in [RType::TXT, RType::A, RType::DS, RType::NS] {
            assert!(!touches_signer_records(
                origin,
                &deleting(Some("www"), rtype)
            ));
            assert!(!touches_signer_records(origin, &deleting(None, rtype)));
        }
    }

    /// A signed version of `example.`: SOA, NS, its DNSKEY RRset (two
    /// keys) with an RRSIG, and www's A with its RRSIG and NSEC.
    fn signed_zone() -> Zone {
        let origin = NameBuf::from_text(b"example.", None).unwrap();
        let text = b"@ 300 SOA ns host 7 3600 900 604800 300\n\
            @ 300 NS ns\n\
            @ 300 DNSKEY 257 3 15 l02Woi0iS8Aa25FQkUd9RMzZHJpBoRQwAQEX1SxZJA4=\n\
            @ 300 DNSKEY 256 3 15 zPnZ/QwEe7S8C5SPz2OfS5RR40ATk2/rYnE9xHIEijs=\n\
            @ 300 RRSIG DNSKEY 15 1 300 20300101000000 20200101000000 1 example. \
              AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\n\
            ns 300 A 192.0.2.1\n\
            www 300 A 192.0.2.2\n\
            www 300 NSEC example. A RRSIG NSEC\n";
        let parsed = tern_zone::parse_bytes(
            text,
            Path::new("z"),
            origin.as_name(),
            &tern_zone::Options::default(),
            &mut tern_zone::NoInclude,
        )
        .unwrap();
        let mut builder = ZoneBuilder::new(origin.as_name());
        for record in &parsed.records {
            builder
                .insert(
                    record.owner.as_name(),
                    record.rtype,
                    record.class,
                    record.ttl,
                    &record.rdata,
                )
                .unwrap();
        }
        builder.finish().unwrap()
    }

    /// An UPDATE of `example.` adding `new.example. TXT "x"` under the
    /// prerequisite `prerequisite` (class, type and RDATA at the apex).
    fn adding_under(class: u16, rtype: RType, rdata: &[u8]) -> UpdateMessage {
        let mut m = vec![0, 1, 0x28, 0, 0, 1, 0, 1, 0, 1, 0, 0];
        m.extend_from_slice(b"\x07example\x00\x00\x06\x00\x01");
        m.extend_from_slice(&[0xc0, 12]);
        m.extend_from_slice(&rtype.0.to_be_bytes());
        m.extend_from_slice(&class.to_be_bytes());
        m.extend_from_slice(&[0, 0, 0, 0]);
        m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        m.extend_from_slice(rdata);
        m.extend_from_slice(b"\x03new\xc0\x0c\x00\x10\x00\x01\x00\x00\x00\x3c\x00\x02\x01x");
        UpdateMessage::parse(&m).expect("a well-formed UPDATE")
    }

    /// In a zone tern signs, prerequisites on the apex's DNSKEY RRset see
    /// the one served (the signer's keys), as Knot's see its signed zone:
    /// "exists" (RFC 2136 2.4.1) holds, "does not exist" (2.4.3) is
    /// YXRRSET, the value-dependent form (2.4.2) holds with the served
    /// keys and is NXRRSET with another; other types still see the
    /// engine's records.
    #[test]
    fn prerequisites_see_the_served_dnskey_rrset() {
        let zone = signed_zone();
        let keys: Vec<Vec<u8>> = {
            let mut cursor = RecordCursor::default();
            let mut keys = Vec::new();
            while let Some(record) = zone.next_record(&mut cursor) {
                if record.rtype == RType::DNSKEY {
                    keys.push(record.rdata.to_vec());
                }
            }
            keys
        };
        assert_eq!(keys.len(), 2);
        let anyone = [tern_update::UpdateRule::default()];
        let access = Access {
            rules: &anyone,
            requester: tern_update::Requester {
                key: None,
                address: "127.0.0.1".parse().unwrap(),
            },
        };
        let options = UpdateOptions {
            signed: true,
            ..UpdateOptions::default()
        };
        let run = |message: UpdateMessage| {
            let mut records = unsigned_records(&zone, false).unwrap();
            engine(
                &mut records,
                &message,
                &access,
                &options,
                &zone,
                Some(false),
            )
            .map(|difference| difference.is_some())
        };
        const ANY: u16 = 255;
        const NONE: u16 = 254;
        assert_eq!(run(adding_under(ANY, RType::DNSKEY, &[])), Ok(true));
        assert_eq!(
            run(adding_under(NONE, RType::DNSKEY, &[])),
            Err(Rcode::YXRRSET)
        );
        // Value-dependent: both served keys (two prerequisite records).
        let mut both = adding_under(1, RType::DNSKEY, &keys[0]);
        both.prerequisites.push(both.prerequisites[0].clone());
        both.prerequisites[1].rdata = keys[1].clone().into();
        assert_eq!(run(both), Ok(true));
        assert_eq!(
            run(adding_under(1, RType::DNSKEY, &keys[0])),
            Err(Rcode::NXRRSET),
            "one key of two is not the RRset"
        );
        assert_eq!(
            run(adding_under(ANY, RType::NSEC3PARAM, &[])),
            Err(Rcode::NXRRSET)
        );
        assert_eq!(run(adding_under(ANY, RType::NS, &[])), Ok(true));
        assert_eq!(run(adding_under(ANY, RType::TXT, &[])), Err(Rcode::NXRRSET));
    }

    /// What the engine does not see of a signed version: the signer's
    /// records; CDS and CDNSKEY only when the policy makes them.
    #[test]
    fn the_engine_sees_no_signer_record() {
        let (origin, www) = (
            NameBuf::from_text(b"example.", None).unwrap(),
            NameBuf::from_text(b"www.example.", None).unwrap(),
        );
        let (origin, www) = (origin.as_name(), www.as_name());
        assert!(signer_made(origin, www, RType::RRSIG, false));
        assert!(signer_made(origin, www, RType::NSEC3, false));
        assert!(signer_made(origin, origin, RType::DNSKEY, false));
        assert!(!signer_made(origin, www, RType::DNSKEY, false));
        assert!(!signer_made(origin, origin, RType::CDS, false));
        assert!(signer_made(origin, origin, RType::CDS, true));
        assert!(!signer_made(origin, www, RType::TXT, true));
        assert!(!signer_made(origin, www, RType::DS, true));
    }
}
