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
//! version's signed records: only the changed RRsets, their NSEC or NSEC3
//! neighbours and the SOA get new signatures. With no rollover step due,
//! only a window of the zone is signed: in an NSEC3 zone
//! ([`nsec3_window_update`]) the changed owners and the chain's links
//! their change adds, removes or rewrites (their predecessors in hash
//! order among them); in an NSEC zone ([`window_update`]) the apex, the
//! changed owners, their NSEC
//! neighbours and the zone cuts above them, through the same incremental
//! signer ([`crate::signing::sign_window`], `tern_dnssec::resign_zone`),
//! reading the served version one name at a time (its records, its NSEC
//! owners' order) and keeping no copy of its signed records for the next
//! group, so the signing costs the change, not the zone; otherwise (NSEC3
//! with a new salt, with opt-out a name removed below an empty
//! non-terminal that keeps other names below it, a key step due, a delegation
//! or DNAME made or removed above served names the group does not edit
//! and past the widening's bounds, a DNAME at the apex changed, the SOA's
//! TTL or minimum changed, a large group) the whole zone goes through
//! [`crate::signing::sign_again`]. The signed version is what is served
//! and what the IXFR difference is of; a signing that fails leaves the
//! zone as it was and answers SERVFAIL.
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
use tern_update::store::Key;
use tern_update::{Access, UpdateMessage, UpdateOptions, ZoneRecords};
use tern_wire::name::{Name, NameBuf};
use tern_wire::types::{RClass, RType, Rcode};
use tern_xfr::axfr::serial_at_or_after;
use tern_xfr::journal::{records_but_soa, Difference, Record};
use tern_zone::{RecordList, Records, Sink};

use crate::load::Stamp;
use crate::policy::CdsCdnskey;
use crate::rollover::ZoneKeys;
pub(super) use crate::signing::apex_serial;
use crate::window::{changed_owners, owner_range, sign_window_of, window_of, WindowSigned};

/// Every record of a served signed version, in canonical order of owners
/// (each owner's records in the version's walk order): the records an
/// update's signing starts from when the signer's own are not at hand.
/// The window signing ([`window_update`]) finds owners by binary search,
/// and a served version's walk is not in canonical order once patched.
/// Bound: one walk, a sort.
pub(super) fn served_records(zone: &Zone) -> Result<Records, String> {
    let walked = crate::signing::served_records(zone)?;
    let mut order: Vec<usize> = (0..walked.len()).collect();
    order.sort_by(|&a, &b| walked.record(a).owner.canonical_cmp(walked.record(b).owner));
    let mut records = Records::new();
    Sink::reserve(&mut records, walked.len());
    for index in order {
        Sink::record(&mut records, walked.record(index)).map_err(str::to_string)?;
    }
    Ok(records)
}

/// The signed records of a version served, kept by the update thread
/// for the next group's signing: those of a whole signing; none after a
/// window's (the next window reads the served version, and the next whole
/// signing walks it).
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
        list.push(crate::signing::record_ref(&record).to_record());
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
    /// What the signing cost.
    pub(super) cost: Cost,
}

/// What signing a group's updates cost (the window's, or the whole
/// zone's), for the tests that it is the change's, not the zone's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Cost {
    /// Records read: the new and previous records signed, and those passed
    /// over looking for NSEC neighbours (the binary searches' probes
    /// aside).
    pub(super) visited: usize,
    /// RRSIGs made.
    pub(super) signatures: usize,
    /// Records copied: into the signed records kept for the next group's
    /// signing ([`SignedUpdate::records`]), or into a version built whole.
    pub(super) copied: usize,
}

/// Signs `unsigned` (the engine's records after a group's updates, whose
/// unsigned `differences` they are) from `previous` (the signed records of
/// `served`, the version the group started from) with the zone's keys:
/// the version to serve above `served`'s serial. A window of the zone
/// when it can be ([`window_update`]), else the whole zone.
pub(super) fn sign_update(
    served: &Zone,
    previous: &Records,
    unsigned: &ZoneRecords,
    differences: &[Difference],
    keys: &ZoneKeys,
) -> Result<SignedUpdate, String> {
    let now = crate::unix_time();
    if let Some(update) = window_update(served, unsigned, differences, keys, now)? {
        return Ok(update);
    }
    // The whole zone signed again from `previous`, or from the served
    // version's records walked when none were kept (a window's signing
    // keeps none).
    let walked;
    let previous: &Records = if RecordList::len(previous) == 0 {
        walked = served_records(served)?;
        &walked
    } else {
        previous
    };
    let origin = served.origin();
    let list = unsigned.to_records();
    let state = state_directory(keys)?;
    let resigned = crate::signing::sign_again(
        origin,
        previous,
        &list,
        &keys.policy,
        &state,
        now,
        Some(served.serial()),
    )?;
    let mut cost = Cost {
        visited: list.len() + previous.len(),
        signatures: resigned.zone.signatures,
        copied: resigned.zone.records.len(),
    };
    drop(list);
    // The served version patched with the owners the signing changed,
    // else built whole.
    let patched = resigned.zone.difference.as_ref().and_then(|change| {
        crate::load::patch_signed(origin, served, &resigned.zone.records, change)
    });
    let (records, zone) = match patched {
        Some((zone, _)) => (compact(&resigned.zone.records)?, zone),
        None => {
            cost.copied += resigned.zone.records.len();
            build(origin, &resigned.zone.records)?
        }
    };
    let difference = match resigned.zone.difference {
        Some(change) => change_difference(served, &zone, change),
        None => Difference::between(served, &zone),
    };
    Ok(SignedUpdate {
        zone: Arc::new(zone),
        records,
        difference,
        cost,
    })
}

/// The TTL and the SOA minimum of a difference's SOA: the NSEC records'
/// TTL (and the DNSKEY RRset's without a policy TTL) follows them.
fn denial_ttls(soa: &(u32, Vec<u8>)) -> (u32, Option<&[u8]>) {
    (
        soa.0,
        soa.1.len().checked_sub(4).and_then(|at| soa.1.get(at..)),
    )
}

/// The owners, the apex aside, of the records `differences` delete and
/// add (in their order, repeated as they come), for a window; `None` when
/// the chain cannot be signed as one: its denial TTLs changed (the SOA's
/// TTL or minimum), or a DNAME changed at the apex. A delegation (an NS
/// RRset below the apex) or a DNAME below the apex changed is let
/// through: the NSEC and NSEC3 windows work out what a cut or a DNAME
/// made or removed changes (the engine makes no DNAME above names, nor
/// names below one).
fn edited_owners<'d>(
    differences: &'d [Difference],
    origin: Name<'_>,
) -> Result<Option<Vec<Name<'d>>>, String> {
    let (Some(first), Some(last)) = (differences.first(), differences.last()) else {
        return Ok(None);
    };
    if denial_ttls(&first.from_soa) != denial_ttls(&last.to_soa) {
        return Ok(None);
    }
    let mut owners = Vec::new();
    for record in differences
        .iter()
        .flat_map(|difference| difference.deleted.iter().chain(&difference.added))
    {
        let owner = Name::from_wire(&record.owner).map_err(|err| err.to_string())?;
        let apex = owner.eq_ignore_case(origin);
        if record.rtype == RType::DNAME && apex {
            return Ok(None);
        }
        if !apex {
            owners.push(owner);
        }
    }
    Ok(Some(owners))
}

/// Whether `name` is a zone cut (a delegation or a DNAME) in the updated
/// records.
fn is_cut_in(unsigned: &ZoneRecords, name: Name<'_>) -> bool {
    unsigned
        .node(&Key::of(name))
        .is_some_and(|node| node.has(RType::NS) || node.has(RType::DNAME))
}

/// The edited owners (`owners`, below the apex) that own an NS RRset in
/// `served` and none in `unsigned` (the updated records), or the other
/// way, and those that own a DNAME in one and not in the other. Bound: a
/// look-up of each per owner.
fn cuts_made_or_removed(served: &Zone, unsigned: &ZoneRecords, owners: &[NameBuf]) -> Vec<NameBuf> {
    owners
        .iter()
        .filter(|name| {
            let name = name.as_name();
            let records = served.owner_records(name);
            let had = |rtype: RType| records.iter().any(|record| record.rtype == rtype);
            let node = unsigned.node(&Key::of(name));
            let has = |rtype: RType| node.as_ref().is_some_and(|node| node.has(rtype));
            !name.eq_ignore_case(served.origin())
                && (had(RType::NS) != has(RType::NS) || had(RType::DNAME) != has(RType::DNAME))
        })
        .copied()
        .collect()
}

/// Whether a window of `owners` (the edited owners, lowercased, in
/// canonical order, each once) signs what the cuts made or removed at
/// `cuts` change below them: every name `served` holds below each is an
/// edited owner ([`crate::window::names_below_cuts_edited`]). When some
/// are not, the names below the cuts found by the served version's order
/// ([`crate::window::names_below_served`]: the NSEC owners below a cut,
/// the glue of the delegations there) are made edited owners too (their
/// records unchanged, read from the updated records as any owner's), and
/// the question asked again. `Some` of the NSEC owners and records looked
/// at to find them (none when not widened); `None`: not all found, or
/// past the window's bounds (the zone is signed whole). Bound:
/// [`crate::window::names_below_served`]'s and
/// [`crate::window::names_below_cuts_edited`]'s.
fn widened_below_cuts(served: &Zone, owners: &mut Vec<NameBuf>, cuts: &[NameBuf]) -> Option<usize> {
    if crate::window::names_below_cuts_edited(served, owners, cuts) {
        return Some(0);
    }
    if cuts.len() > crate::edited::MAX_WIDENED_CUTS {
        return None;
    }
    let known: BTreeSet<Key> = owners.iter().map(|name| Key::of(name.as_name())).collect();
    let (found, looked) = crate::window::names_below_served(served, cuts, &known)?;
    if owners.len() + found.len() > crate::window::MAX_WINDOW_OWNERS {
        return None;
    }
    log::debug!(
        "zone {}: {} names below {} cuts made or removed by an update edited too",
        served.origin(),
        found.len(),
        cuts.len()
    );
    owners.extend(found);
    owners.sort_unstable_by(|a, b| a.as_name().canonical_cmp(b.as_name()));
    owners.dedup_by(|a, b| a.as_name().eq_ignore_case(b.as_name()));
    crate::window::names_below_cuts_edited(served, owners, cuts).then_some(looked)
}

/// The signed version after `differences` made of a window of the zone,
/// or `None` when the whole zone is to be signed (an NSEC3 zone's window
/// not signed apart, [`nsec3_window_update`]; a rollover step due, a DNAME
/// at the apex changed, a delegation or DNAME made or removed above served
/// names the change does not edit and the widening does not find
/// ([`crate::window::names_below_cuts_edited`]), the SOA's
/// TTL or minimum changed, too many owners or NSEC owners to pass over).
/// A delegation made, removed, made secure or insecure is signed as any
/// window is: the incremental signer signs its DS and NSEC alone, keeps
/// its NS and the glue below it unsigned and out of the chain, and the
/// NSEC predecessor (a neighbour in the window) is signed again when the
/// chain changes; the names below a cut made or removed are all edited
/// owners, so in the window.
///
/// Everything previous is read from `served` (the version the group
/// started from) one name at a time: no copy of its signed records is
/// needed or made. The window: the apex, each changed owner, the nearest
/// NSEC owners of `served` before and after each (past the changed ones,
/// [`Zone::nsec_owners_around`]), and the zone cuts above each (so that
/// glue stays glue). Their new records (from `unsigned`) and previous ones
/// (from `served`) go through [`crate::signing::sign_window`]: what
/// changed is signed, the rest kept. An owner of the window whose next
/// NSEC owner lies outside it (only a neighbour's, whose NSEC did not
/// change) keeps its previous NSEC and signatures. The served version is
/// patched with the owners that changed (built whole, from its records
/// walked with the window's replaced, only when the patches' garbage has
/// grown past its share of the tables,
/// [`crate::window::garbage_within_share`]: compaction, spread over the updates
/// that made the garbage). Bound: the window's records, the neighbour
/// look-ups ([`crate::window::MAX_WINDOW_SCAN`]), a look-up of `served` per owner.
fn window_update(
    served: &Zone,
    unsigned: &ZoneRecords,
    differences: &[Difference],
    keys: &ZoneKeys,
    now: u64,
) -> Result<Option<SignedUpdate>, String> {
    if keys.next_event.is_some_and(|at| at <= now) {
        return Ok(None);
    }
    if keys.policy.nsec3.is_some() {
        return nsec3_window_update(served, unsigned, differences, keys, now);
    }
    let origin = served.origin();
    let Some(edited) = edited_owners(differences, origin)? else {
        return Ok(None);
    };
    let mut owners: Vec<NameBuf> = edited
        .into_iter()
        .map(|name| NameBuf::from_name(name.to_lower().as_name()))
        .collect();
    owners.sort_unstable_by(|a, b| a.as_name().canonical_cmp(b.as_name()));
    owners.dedup_by(|a, b| a.as_name().eq_ignore_case(b.as_name()));
    // A delegation or a DNAME made or removed (an NS or DNAME RRset below
    // the apex come or gone): every served name below it must be edited
    // too, so that the window makes its records glue or signs them again
    // (`widened_below_cuts`); else the whole zone is signed.
    let cuts = cuts_made_or_removed(served, unsigned, &owners);
    let Some(widened) = widened_below_cuts(served, &mut owners, &cuts) else {
        log::debug!(
            "zone {origin}: signed whole: a delegation made or removed above names not edited"
        );
        return Ok(None);
    };
    let is_cut = |parent: Name<'_>| is_cut_in(unsigned, parent);
    let Some(window) = window_of(served, owners.iter().map(NameBuf::as_name), &is_cut) else {
        return Ok(None);
    };
    // The window's new (unsigned) records.
    let mut input: Vec<tern_zone::Record> = Vec::new();
    for (key, name) in &window.owners {
        if let Some(node) = unsigned.node(key) {
            for rrset in node.rrsets() {
                for rdata in &rrset.records {
                    input.push(tern_zone::Record {
                        owner: *name,
                        class: RClass::IN,
                        ttl: rdata.ttl,
                        rtype: rrset.rtype,
                        rdata: rdata.data.to_vec(),
                        location: tern_zone::Location::default(),
                    });
                }
            }
        }
    }
    let state = state_directory(keys)?;
    let Some(signed) = sign_window_of(
        served,
        &window,
        &input,
        &keys.policy,
        &state,
        now,
        Some(served.serial()),
    )?
    else {
        return Ok(None);
    };
    drop(input);
    let WindowSigned {
        records: out,
        change,
        signatures,
        visited,
        ..
    } = signed;
    let window = window.owners;
    let mut cost = Cost {
        visited: visited + widened,
        signatures,
        copied: 0,
    };
    // The served version patched with the owners that changed, else built
    // whole; and, when a cut is made or removed, with each edited owner
    // that did not.
    let changed = changed_owners(&out, &change);
    let edited = if cuts.is_empty() {
        &owners[..0]
    } else {
        &owners[..]
    };
    let changes = crate::window::patch_changes(&out, &changed, edited.iter().map(NameBuf::as_name));
    let (zone, how, work) = match served.patch(&changes) {
        Ok(patched) if crate::window::garbage_within_share(&patched.zone) => {
            let work = crate::window::patch_work(&patched);
            (patched.zone, "patched", work)
        }
        _ => {
            let records = spliced(served, &window, &out)?;
            cost.copied += RecordList::len(&records);
            let zone = build(origin, &records)?.1;
            // A whole build's work, as `update::next_version` counts it.
            let work = tern_authority::Work {
                bytes_copied: zone.table_bytes(),
                nodes_touched: zone.node_count(),
                ..tern_authority::Work::default()
            };
            (zone, "rebuilt", work)
        }
    };
    log::debug!(
        "zone {origin}: an update signed as a window of {} owners ({} records read, {} RRSIGs \
         made), the served version {how} ({} table octets copied, {} nodes touched)",
        window.len(),
        cost.visited,
        cost.signatures,
        work.bytes_copied,
        work.nodes_touched
    );
    let difference = change_difference(served, &zone, change);
    Ok(Some(SignedUpdate {
        zone: Arc::new(zone),
        records: Records::new(),
        difference,
        cost,
    }))
}

/// [`window_update`] for a zone signed with NSEC3 (with opt-out, the
/// insecure delegations and the empty non-terminals with only those
/// below them left out of the chain). The owners signed: the apex and each
/// changed owner (their previous records read from `served` one name at a
/// time), through [`crate::signing::sign_nsec3_window`]. The chain's
/// links signed: for each of those owners and the names between it and
/// the apex (empty non-terminals that come or go with it), the link of
/// its hash when it is in the chain before or after (added, removed, or
/// its type bitmap made again); and the predecessor in hash order, in the
/// new chain, of each link added or removed (its next hashed owner
/// changes). Each link's next hash is read from the served chain
/// ([`Zone::nsec3_links_around`]) past the links removed, and from the
/// links added. The served version is patched with the owners and links
/// that changed ([`Zone::patch`], which moves the chain's tables); when it
/// cannot be, `None` (the whole zone is signed). Bound: the changed
/// owners and their ancestors (at most [`crate::window::MAX_WINDOW_OWNERS`]),
/// a binary search of the served chain per link and per link removed
/// passed over.
fn nsec3_window_update(
    served: &Zone,
    unsigned: &ZoneRecords,
    differences: &[Difference],
    keys: &ZoneKeys,
    now: u64,
) -> Result<Option<SignedUpdate>, String> {
    use std::collections::BTreeMap;
    let origin = served.origin();
    let lower = |name: Name<'_>| NameBuf::from_name(name.to_lower().as_name());
    let Some(edited) = edited_owners(differences, origin)? else {
        return Ok(None);
    };
    // The changed owners, the apex first.
    let mut owners: BTreeMap<Key, NameBuf> = BTreeMap::new();
    for owner in edited {
        owners.entry(Key::of(owner)).or_insert_with(|| lower(owner));
        if owners.len() > crate::window::MAX_WINDOW_OWNERS {
            return Ok(None);
        }
    }
    // The names below a delegation or a DNAME made or removed, found by
    // the served version's order (without NSEC, a cut removed's glue
    // alone), made edited owners too; the window checks that they are
    // all ([`crate::window::names_below_cuts_edited`]).
    let mut listed: Vec<NameBuf> = owners.values().copied().collect();
    listed.sort_unstable_by(|a, b| a.as_name().canonical_cmp(b.as_name()));
    let cuts = cuts_made_or_removed(served, unsigned, &listed);
    let widened = if cuts.is_empty() {
        0
    } else {
        let Some(looked) = widened_below_cuts(served, &mut listed, &cuts) else {
            log::debug!(
                "zone {origin}: signed whole: a delegation made or removed above names not edited"
            );
            return Ok(None);
        };
        looked
    };
    let mut names: Vec<NameBuf> = vec![lower(origin)];
    names.extend(listed);
    let is_cut = |name: Name<'_>| is_cut_in(unsigned, name);
    let has_records = |name: Name<'_>| unsigned.node(&Key::of(name)).is_some();
    let has_names_below = |name: Name<'_>| unsigned.has_names_below(&Key::of(name));
    let shape = crate::window::Nsec3Shape {
        is_cut: &is_cut,
        has_records: &has_records,
        has_names_below: &has_names_below,
        cuts_checked: false,
    };
    // The owners' new records (unsigned).
    let mut new_records: Vec<Vec<tern_zone::Record>> = Vec::with_capacity(names.len());
    for name in &names {
        let mut list = Vec::new();
        if let Some(node) = unsigned.node(&Key::of(name.as_name())) {
            for rrset in node.rrsets() {
                for rdata in &rrset.records {
                    list.push(tern_zone::Record {
                        owner: *name,
                        class: RClass::IN,
                        ttl: rdata.ttl,
                        rtype: rrset.rtype,
                        rdata: rdata.data.to_vec(),
                        location: tern_zone::Location::default(),
                    });
                }
            }
        }
        new_records.push(list);
    }
    // `edited_owners` found the differences not empty.
    let Some(last) = differences.last() else {
        return Ok(None);
    };
    let (soa_ttl, minimum) = denial_ttls(&last.to_soa);
    let nsec3_ttl = minimum
        .and_then(|m| m.try_into().ok())
        .map_or(soa_ttl, |m: [u8; 4]| soa_ttl.min(u32::from_be_bytes(m)));
    let state = state_directory(keys)?;
    let Some(signed) = crate::window::sign_nsec3_window_of(
        served,
        &names,
        &new_records,
        &shape,
        nsec3_ttl,
        &keys.policy,
        &state,
        now,
        Some(served.serial()),
    )?
    else {
        return Ok(None);
    };
    let cost = Cost {
        visited: signed.visited + widened,
        signatures: signed.signatures,
        copied: 0,
    };
    // `sign_nsec3_window_of` patches the served version or gives `None`
    // (the whole zone signed): a window is never rebuilt.
    log::debug!(
        "zone {origin}: an update signed as a window of {} owners and {} NSEC3 links ({} \
         records read, {} RRSIGs made), the served version patched ({} table octets \
         copied, {} nodes touched)",
        signed.sizes.0,
        signed.sizes.1,
        cost.visited,
        cost.signatures,
        signed.work.bytes_copied,
        signed.work.nodes_touched
    );
    let difference = change_difference(served, &signed.zone, signed.change);
    Ok(Some(SignedUpdate {
        zone: Arc::new(signed.zone),
        records: Records::new(),
        difference,
        cost,
    }))
}

/// The signed records of `served` (walked, in canonical order) with the
/// window's owners' replaced by theirs in `out` (signed, in canonical
/// order): for a version built whole. Bound: one walk and sort of
/// `served`, a binary search of it per owner of the window.
fn spliced(
    served: &Zone,
    window: &std::collections::BTreeMap<Key, NameBuf>,
    out: &[tern_zone::Record],
) -> Result<Records, String> {
    let previous = served_records(served)?;
    let mut records = Records::new();
    Sink::reserve(&mut records, previous.len() + out.len());
    let mut copied = 0;
    for name in window.values() {
        let range = owner_range(&previous, name.as_name());
        if range.start < copied {
            return Err("the window's owners are not in canonical order".to_string());
        }
        for index in copied..range.start {
            Sink::record(&mut records, previous.record(index)).map_err(str::to_string)?;
        }
        for index in owner_range(out, name.as_name()) {
            Sink::record(&mut records, out.record(index)).map_err(str::to_string)?;
        }
        copied = range.end;
    }
    for index in copied..previous.len() {
        Sink::record(&mut records, previous.record(index)).map_err(str::to_string)?;
    }
    Ok(records)
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
        let (access, options) = signed_by_anyone(&anyone);
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

    /// The NSEC3 policy of the tests' NSEC3 fixtures: a salt of 4 octets,
    /// 1 further iteration (kept: no lifetime), no opt-out.
    fn nsec3_policy() -> Option<crate::policy::Nsec3Policy> {
        Some(crate::policy::Nsec3Policy {
            iterations: 1,
            salt_length: 4,
            opt_out: false,
            salt_lifetime: 0,
        })
    }

    /// [`nsec3_policy`] with opt-out: the fixtures' delegation (`sub`, no
    /// DS) is left out of the chain.
    fn opt_out_policy() -> Option<crate::policy::Nsec3Policy> {
        nsec3_policy().map(|nsec3| crate::policy::Nsec3Policy {
            opt_out: true,
            ..nsec3
        })
    }

    /// A signed zone `example.` of `hosts` A records (and two delegations
    /// without DS, with glue: `sub`, and `x.e` below the empty
    /// non-terminal `e`), loaded and signed in `dir` (with NSEC, or NSEC3 as
    /// `nsec3` says): the served version, its signed records and its keys.
    fn signed_fixture_with(
        dir: &Path,
        hosts: usize,
        nsec3: Option<crate::policy::Nsec3Policy>,
    ) -> (Arc<Zone>, Records, Arc<ZoneKeys>) {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).unwrap();
        let file = dir.join("example.zone");
        let mut text = String::from(
            "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
             ns A 192.0.2.1\nsub NS ns.sub\nns.sub A 192.0.2.9\n\
             x.e NS ns.x.e\nns.x.e A 192.0.2.10\n",
        );
        for i in 0..hosts {
            text.push_str(&format!("h{i} A 192.0.2.{}\n", i % 250));
        }
        std::fs::write(&file, text).unwrap();
        let origin: Box<[u8]> = b"\x07example\x00".to_vec().into();
        let mut policy = crate::signing::Policy::new("p".to_string());
        policy.nsec3 = nsec3;
        let policy = Arc::new(policy);
        let sources = crate::load::Sources {
            dir: None,
            listed: vec![("example.".to_string(), file)],
            signing: Some(crate::signing::Signing::new(
                dir.join("state"),
                1,
                vec![(origin, policy)],
            )),
        };
        let loaded = crate::load::load_all(&sources, None).unwrap();
        let (zone, stamp) = &loaded.zones[0];
        let records = stamp.signed().unwrap().records().unwrap();
        (Arc::clone(zone), records, Arc::clone(stamp.keys().unwrap()))
    }

    /// An UPDATE of `example.` with the given update records (owner label,
    /// type, class, TTL, RDATA).
    fn update_message(updates: &[(&str, RType, u16, u32, &[u8])]) -> UpdateMessage {
        crate::fuzzing::update_message(updates).expect("a well-formed UPDATE")
    }

    /// Access for a requester at 127.0.0.1 without a key under `rules`
    /// (the tests' allow-everything rule), and the options of an update
    /// to a signed zone.
    fn signed_by_anyone(rules: &[tern_update::UpdateRule]) -> (Access<'_>, UpdateOptions) {
        let access = Access {
            rules,
            requester: tern_update::Requester {
                key: None,
                address: "127.0.0.1".parse().unwrap(),
            },
        };
        let options = UpdateOptions {
            signed: true,
            ..UpdateOptions::default()
        };
        (access, options)
    }

    /// `message` through the engine on `unsigned`: its difference as the
    /// journal keeps it.
    fn engine_difference(unsigned: &mut ZoneRecords, message: &UpdateMessage) -> Difference {
        let anyone = [tern_update::UpdateRule::default()];
        let (access, options) = signed_by_anyone(&anyone);
        let difference = tern_update::update(unsigned, message, &access, &options)
            .unwrap()
            .expect("a change");
        let record = |r: tern_update::ChangedRecord| Record {
            owner: r.owner.into_vec(),
            rtype: r.rtype,
            ttl: r.ttl,
            rdata: r.rdata.into_vec(),
        };
        Difference {
            from_soa: (difference.from_soa.0, difference.from_soa.1.into_vec()),
            to_soa: (difference.to_soa.0, difference.to_soa.1.into_vec()),
            deleted: difference.deleted.into_iter().map(record).collect(),
            added: difference.added.into_iter().map(record).collect(),
        }
    }

    /// What a signed zone's records say, signatures as (owner, type
    /// covered, key tag, original TTL): two signings of the same records
    /// agree on it (ECDSA signatures themselves differ).
    fn meaning<L: RecordList + ?Sized>(records: &L) -> BTreeSet<(Vec<u8>, u16, u32, Vec<u8>)> {
        (0..records.len())
            .map(|index| records.record(index))
            .map(|record| {
                let owner = record.owner.to_lower().as_name().as_bytes().to_vec();
                let rdata = if record.rtype == RType::RRSIG {
                    [
                        &record.rdata[..2],
                        &record.rdata[4..8],
                        &record.rdata[16..18],
                    ]
                    .concat()
                } else {
                    record.rdata.to_vec()
                };
                (owner, record.rtype.0, record.ttl, rdata)
            })
            .collect()
    }

    /// The zone cuts of the served NSEC version `zone`, read from its
    /// records alone (not from the signer): at each delegation point the
    /// RRSIGs cover its DS and NSEC only and its NSEC's type bitmap is NS,
    /// RRSIG, NSEC and DS when it has one; below one, no RRSIG and no
    /// NSEC. How many delegation points.
    fn assert_nsec_cuts(zone: &Zone) -> usize {
        let records = served_records(zone).unwrap();
        let origin = zone.origin();
        let mut cut: Option<NameBuf> = None;
        let mut points = 0;
        let mut at = 0;
        while at < RecordList::len(&records) {
            let owner = records.record(at).owner;
            let mut end = at;
            while end < RecordList::len(&records) && records.record(end).owner.eq_ignore_case(owner)
            {
                end += 1;
            }
            let owned: Vec<_> = (at..end).map(|index| records.record(index)).collect();
            at = end;
            if cut.is_some_and(|cut| owner.ends_with(cut.as_name())) {
                assert!(
                    owned
                        .iter()
                        .all(|record| !matches!(record.rtype, RType::RRSIG | RType::NSEC)),
                    "{owner}: below a cut, signed or in the chain"
                );
                continue;
            }
            cut = None;
            if owner.eq_ignore_case(origin) || !owned.iter().any(|record| record.rtype == RType::NS)
            {
                continue;
            }
            cut = Some(NameBuf::from_name(owner));
            points += 1;
            let ds = owned.iter().any(|record| record.rtype == RType::DS);
            for record in &owned {
                if record.rtype == RType::RRSIG {
                    let covered = RType(u16::from_be_bytes([record.rdata[0], record.rdata[1]]));
                    assert!(
                        matches!(covered, RType::DS | RType::NSEC),
                        "{owner}: a delegation's {covered} signed"
                    );
                }
            }
            let nsec = owned
                .iter()
                .find(|record| record.rtype == RType::NSEC)
                .unwrap_or_else(|| panic!("{owner}: a delegation without NSEC"));
            let mut length = 0;
            while nsec.rdata[length] != 0 {
                length += 1 + usize::from(nsec.rdata[length]);
            }
            let next = Name::from_wire(&nsec.rdata[..=length]).unwrap();
            let mut expected = vec![RType::NS, RType::RRSIG, RType::NSEC];
            if ds {
                expected.push(RType::DS);
            }
            expected.sort_unstable();
            assert_eq!(
                nsec.rdata,
                &tern_dnssec::nsec::nsec_rdata(next, &expected)[..],
                "{owner}: a delegation's NSEC bitmap"
            );
        }
        points
    }

    /// The records a served version holds, as [`meaning`] reads them.
    fn served_meaning(zone: &Zone) -> BTreeSet<(Vec<u8>, u16, u32, Vec<u8>)> {
        let mut list = Vec::new();
        let mut cursor = RecordCursor::default();
        while let Some(record) = zone.next_record(&mut cursor) {
            list.push(crate::signing::record_ref(&record).to_record());
        }
        meaning(&list)
    }

    /// The octets a list of signed records holds (each record's owner,
    /// RDATA and fixed fields): what the update thread keeps of a group for
    /// the next one's signing.
    fn held_bytes(records: &Records) -> usize {
        records
            .iter()
            .map(|record| record.owner.as_bytes().len() + record.rdata.len() + 10)
            .sum()
    }

    /// Two groups of updates to a signed NSEC zone of `hosts` names (a
    /// name added, one deleted, glue added below a delegation, an RRset
    /// changed), each signed from what the update thread keeps of the
    /// group before (the signed records the last signing returned) as the
    /// thread does: what each costs (records visited, RRSIGs made, records
    /// copied) and the octets of signed records it leaves held for the
    /// next group; each checked against the whole zone signed again from
    /// the same previous version (the same records and signatures by
    /// owner, type and key), and the served version against its records.
    fn two_groups(hosts: usize) -> Vec<(Cost, usize)> {
        two_groups_with(hosts, None)
    }

    /// [`two_groups`], the zone signed with NSEC3 when `nsec3` says so.
    fn two_groups_with(
        hosts: usize,
        nsec3: Option<crate::policy::Nsec3Policy>,
    ) -> Vec<(Cost, usize)> {
        let groups = [
            vec![
                ("new", RType::TXT, 1, 60, &b"\x03new"[..]),
                ("h3", RType::A, 255, 0, &b""[..]),
                ("ns2.sub", RType::A, 1, 60, &[192, 0, 2, 77][..]),
            ],
            vec![
                ("h5", RType::A, 1, 300, &[192, 0, 2, 55][..]),
                ("new", RType::ANY, 255, 0, &b""[..]),
                ("h30", RType::TXT, 1, 300, &b"\x02hi"[..]),
            ],
        ];
        groups_with(hosts, nsec3, "two", &groups, true)
    }

    /// The costs of the same groups at 5,000 names (`small`) and 50,000
    /// (`large`): equal, and each a window's (few records visited and
    /// RRSIGs made, none copied or held).
    fn assert_windows_at_both_sizes(small: &[(Cost, usize)], large: &[(Cost, usize)]) {
        eprintln!("(cost, octets held) per group: {small:?} at 5,000 names, {large:?} at 50,000");
        assert_eq!(small, large, "cost and octets held, per group");
        for (cost, held) in small {
            assert!(
                cost.visited < 300 && cost.signatures < 30 && cost.copied == 0 && *held == 0,
                "{small:?}"
            );
        }
    }

    /// The groups `groups` of updates, as [`two_groups_with`] signs them
    /// (`tag` names the fixture's directory).
    #[allow(clippy::type_complexity)]
    fn groups_with(
        hosts: usize,
        nsec3: Option<crate::policy::Nsec3Policy>,
        tag: &str,
        groups: &[Vec<(&str, RType, u16, u32, &[u8])>],
        against_whole: bool,
    ) -> Vec<(Cost, usize)> {
        let dir = std::env::temp_dir().join(format!(
            "tern-update-window-{tag}-{}-{hosts}-{}",
            std::process::id(),
            nsec3
                .as_ref()
                .map_or(0, |nsec3| 1 + u8::from(nsec3.opt_out))
        ));
        let (mut served, first, keys) = signed_fixture_with(&dir, hosts, nsec3);
        let mut previous = first;
        let cds = publishes_cds(&keys);
        let mut unsigned = unsigned_records(&served, cds).unwrap();
        let mut costs = Vec::new();
        for updates in groups {
            let difference = engine_difference(&mut unsigned, &update_message(updates));
            let update = sign_update(
                &served,
                &previous,
                &unsigned,
                std::slice::from_ref(&difference),
                &keys,
            )
            .unwrap();
            assert!(update.zone.serial() > served.serial());
            costs.push((update.cost, held_bytes(&update.records)));
            if !against_whole {
                served = update.zone;
                previous = update.records;
                continue;
            }
            // The whole zone signed again from the served version's
            // records (in canonical order).
            let walked = served_records(&served).unwrap();
            let whole = crate::signing::sign_again(
                served.origin(),
                &walked,
                &unsigned.to_records(),
                &keys.policy,
                &state_directory(&keys).unwrap(),
                crate::unix_time(),
                Some(served.serial()),
            )
            .unwrap();
            assert_eq!(served_meaning(&update.zone), meaning(&whole.zone.records));
            // `meaning` reads signatures' types and key tags: the ones at
            // the owners that changed verify.
            assert!(crate::verified::assert_changed_rrsigs_verify(&served, &update.zone) > 0);
            served = update.zone;
            // The served (patched) version's records, walked, are in
            // canonical order.
            let walked = served_records(&served).unwrap();
            assert_eq!(meaning(&walked), meaning(&whole.zone.records));
            assert!((1..walked.len()).all(|at| {
                walked
                    .record(at - 1)
                    .owner
                    .canonical_cmp(walked.record(at).owner)
                    != std::cmp::Ordering::Greater
            }));
            // What the thread keeps for the next group.
            previous = update.records;
        }
        let _ = std::fs::remove_dir_all(&dir);
        costs
    }

    /// Groups of pseudo-random updates (names added and deleted first and
    /// last in the zone, beside a delegation, as glue below it, under
    /// empty non-terminals, wildcards, the apex; one or two UPDATEs a
    /// group): after each, the window's version is what the whole zone
    /// signed again from the same version makes, and the served version
    /// holds its records.
    #[test]
    fn windows_sign_as_the_whole_zone_does() {
        windows_as_whole(None);
    }

    /// [`windows_sign_as_the_whole_zone_does`] in a zone signed with
    /// NSEC3: the same records, the same chain (hashed owners, next
    /// hashes, type bitmaps), with empty non-terminals coming and going.
    #[test]
    fn nsec3_windows_sign_as_the_whole_zone_does() {
        windows_as_whole(nsec3_policy());
    }

    /// [`windows_sign_as_the_whole_zone_does`] in a zone signed with NSEC3
    /// with opt-out: the insecure delegation and what lies below it left
    /// out of the chain, the flags of every link set; before, every
    /// update to such a zone signed the whole zone.
    #[test]
    fn opt_out_nsec3_windows_sign_as_the_whole_zone_does() {
        windows_as_whole(opt_out_policy());
    }

    fn windows_as_whole(nsec3: Option<crate::policy::Nsec3Policy>) {
        let nsec = nsec3.is_none();
        let dir = std::env::temp_dir().join(format!(
            "tern-update-windows-{}-{}",
            std::process::id(),
            nsec3
                .as_ref()
                .map_or(0, |nsec3| 1 + u8::from(nsec3.opt_out))
        ));
        let (mut served, mut previous, keys) = signed_fixture_with(&dir, 40, nsec3);
        let mut unsigned = unsigned_records(&served, publishes_cds(&keys)).unwrap();
        let names = [
            "a",
            "h0",
            "h1",
            "h10",
            "h15",
            "h2",
            "m",
            "x.y.h5",
            "y.h5",
            "*.w",
            "q.w",
            "ns3.sub",
            "deep.ns.sub",
            "zzz",
            "zz.zzz",
            "sub0",
            "ns1",
            "h39",
            "y.e",
            "ns.x.e",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound as u64) as usize
        };
        let mut windows = 0;
        let mut delegation_points = 0;
        for group in 0..40 {
            let mut differences = Vec::new();
            for _ in 0..1 + next(2) {
                let mut updates: Vec<(String, RType, u16, u32, Vec<u8>)> = Vec::new();
                for _ in 0..1 + next(3) {
                    let name = names[next(names.len())].to_string();
                    let value = next(200) as u8;
                    // Delegations made (with glue or none below), made
                    // secure by a DS, insecure again, removed.
                    let mut ds = vec![0x30, 0x39, 13, 2];
                    ds.extend([value; 32]);
                    if next(4) == 0 {
                        // A delegation made or removed with glue below
                        // it, in one update.
                        let glue = format!("g.{name}");
                        if next(2) == 0 {
                            updates.push((glue, RType::A, 1, 300, vec![192, 0, 2, value]));
                            updates.push((
                                name,
                                RType::NS,
                                1,
                                300,
                                b"\x03ns1\x07example\x00".to_vec(),
                            ));
                        } else {
                            updates.push((glue, RType::ANY, 255, 0, Vec::new()));
                            updates.push((name, RType::NS, 255, 0, Vec::new()));
                        }
                        continue;
                    }
                    updates.push(match next(10) {
                        // A DNAME made or changed (the engine ignores it
                        // at a name with names below).
                        8 => (
                            name,
                            RType::DNAME,
                            1,
                            300,
                            [&[1, b'a' + value % 3][..], b"\x03net\x00"].concat(),
                        ),
                        0 => (name, RType::TXT, 1, 60, vec![1, value]),
                        1 => (name, RType::A, 1, 300, vec![192, 0, 2, value]),
                        2 => (name, RType::ANY, 255, 0, Vec::new()),
                        3 => (name, RType::A, 255, 0, Vec::new()),
                        4 => (name, RType::NS, 1, 300, b"\x03ns1\x07example\x00".to_vec()),
                        5 => (name, RType::NS, 255, 0, Vec::new()),
                        6 => (name, RType::DS, 1, 300, ds),
                        7 => (name, RType::DS, 255, 0, Vec::new()),
                        _ => ("@".to_string(), RType::TXT, 1, 300, vec![1, value]),
                    });
                }
                let updates: Vec<(&str, RType, u16, u32, &[u8])> = updates
                    .iter()
                    .map(|(name, rtype, class, ttl, rdata)| {
                        (name.as_str(), *rtype, *class, *ttl, &rdata[..])
                    })
                    .collect();
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
                let message = update_message(&updates);
                if let Ok(Some(_)) =
                    tern_update::update(&mut unsigned.clone(), &message, &access, &options)
                {
                    differences.push(engine_difference(&mut unsigned, &message));
                }
            }
            if differences.is_empty() {
                continue;
            }
            let update = sign_update(&served, &previous, &unsigned, &differences, &keys).unwrap();
            let whole = crate::signing::sign_again(
                served.origin(),
                &served_records(&served).unwrap(),
                &unsigned.to_records(),
                &keys.policy,
                &state_directory(&keys).unwrap(),
                crate::unix_time(),
                Some(served.serial()),
            )
            .unwrap();
            assert_eq!(
                served_meaning(&update.zone),
                meaning(&whole.zone.records),
                "group {group}"
            );
            assert!(crate::verified::assert_changed_rrsigs_verify(&served, &update.zone) > 0);
            if nsec {
                delegation_points += assert_nsec_cuts(&update.zone);
            }
            // A window keeps no signed records for the next group (it reads
            // the served version); the whole zone's signing keeps them all.
            if RecordList::len(&update.records) == 0 {
                windows += 1;
            } else {
                assert_eq!(meaning(&update.records), meaning(&whole.zone.records));
            }
            served = update.zone;
            previous = if group % 3 == 0 {
                served_records(&served).unwrap()
            } else {
                update.records
            };
        }
        eprintln!("{windows} groups signed as windows, {delegation_points} delegation points seen");
        assert!(windows >= 12, "{windows} groups signed as windows");
        assert!(!nsec || delegation_points > 40, "{delegation_points}");
        // With NSEC, a delegation made, removed or its DS toggled is a
        // window too (before, 14 of these groups were).
        assert!(!nsec || windows >= 28, "{windows} groups signed as windows");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An update to a zone tern signs costs its change, not the zone: the
    /// records it visits, the RRSIGs it makes, the records it copies and
    /// the octets of signed records it leaves held for the next group are
    /// the same for a zone of 1,000 names and one of 10,000 (signing the
    /// whole zone again reads every record; keeping the signed records
    /// whole for the next group copies and holds every one), and the
    /// outcome is what signing the whole zone makes.
    #[test]
    fn a_signed_update_costs_its_change_not_the_zone() {
        let small = two_groups(1_000);
        let large = two_groups(10_000);
        eprintln!("(cost, octets held) per group: {small:?} at 1,000 names, {large:?} at 10,000");
        assert_eq!(small, large, "cost and octets held, per group");
        for (cost, held) in &small {
            assert!(
                cost.visited < 200 && cost.signatures < 20 && cost.copied < 200 && *held < 16_384,
                "{small:?}"
            );
        }
    }

    /// An update to a zone tern signs with NSEC3 costs its change, not the
    /// zone: the records it visits and the RRSIGs it makes are the same
    /// at 5,000 names and at 50,000 (signing the whole zone again reads
    /// every record), and the outcome is what signing the whole zone makes.
    #[test]
    fn a_signed_nsec3_update_costs_its_change_not_the_zone() {
        nsec3_updates_cost_their_change(nsec3_policy());
    }

    /// The two groups of [`two_groups_with`] in a zone signed with
    /// `nsec3`: as much at 5,000 names as at 50,000, few records visited
    /// and RRSIGs made, none copied or held. Without a salt: the counts
    /// hang on where the changed names' hashes fall in the chain, which a
    /// random salt moved at each run (the two sizes differed once in a
    /// helper's run of the whole crate).
    fn nsec3_updates_cost_their_change(nsec3: Option<crate::policy::Nsec3Policy>) {
        let nsec3 = nsec3.map(|nsec3| crate::policy::Nsec3Policy {
            salt_length: 0,
            ..nsec3
        });
        let small = two_groups_with(5_000, nsec3.clone());
        let large = two_groups_with(50_000, nsec3);
        assert_windows_at_both_sizes(&small, &large);
    }

    /// [`a_signed_nsec3_update_costs_its_change_not_the_zone`] with
    /// opt-out (glue added below the insecure delegation among the
    /// updates): before, each group signed the whole zone, and its records
    /// visited grew with it.
    #[test]
    fn a_signed_opt_out_nsec3_update_costs_its_change_not_the_zone() {
        nsec3_updates_cost_their_change(opt_out_policy());
    }

    /// [`nsec3_delegations_edited_cost_their_change_not_the_zone`] in a
    /// zone signed with NSEC: each delegation's NSEC (type bitmap NS, DS
    /// when it has one, RRSIG, NSEC) made again and its DS alone signed,
    /// its glue kept out of the chain, the predecessor's NSEC signed
    /// again when the chain changes. Before, an NS RRset below the apex
    /// changed made the update sign the whole zone (records visited and
    /// copied grew with it).
    #[test]
    fn nsec_delegations_edited_cost_their_change_not_the_zone() {
        delegations_cost_their_change(None);
    }

    /// Delegations edited in a zone signed with NSEC3: an insecure
    /// delegation made (`dnew`, with its glue in the next group), made
    /// secure by a DS, insecure again, then removed with its glue; the
    /// fixture's delegation `sub` removed with its glue, and `x.e` (below
    /// the empty non-terminal `e`, which goes with it) made secure. Each
    /// group is checked against the whole zone signed again, and costs
    /// as much at 5,000 names as at 50,000 (before, each signed the whole
    /// zone: records visited and copied grew with it).
    #[test]
    fn nsec3_delegations_edited_cost_their_change_not_the_zone() {
        delegations_cost_their_change(nsec3_policy());
    }

    /// [`nsec3_delegations_edited_cost_their_change_not_the_zone`] with
    /// opt-out: the insecure delegations have no link, a DS brings one
    /// (and one for the empty non-terminal above it).
    #[test]
    fn opt_out_nsec3_delegations_edited_cost_their_change_not_the_zone() {
        delegations_cost_their_change(opt_out_policy());
    }

    fn delegations_cost_their_change(nsec3: Option<crate::policy::Nsec3Policy>) {
        let nsec3 = nsec3.map(|nsec3| crate::policy::Nsec3Policy {
            salt_length: 0,
            ..nsec3
        });
        let ns: &[u8] = b"\x02ns\x04dnew\x07example\x00";
        let ds: &[u8] = &[
            0x30, 0x39, 13, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
            20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
        ];
        let groups = [
            vec![("dnew", RType::NS, 1, 300, ns)],
            vec![("ns.dnew", RType::A, 1, 300, &[192, 0, 2, 44][..])],
            vec![("dnew", RType::DS, 1, 300, ds)],
            vec![("dnew", RType::DS, 255, 0, &b""[..])],
            vec![
                ("dnew", RType::NS, 255, 0, &b""[..]),
                ("ns.dnew", RType::A, 255, 0, &b""[..]),
            ],
            vec![
                ("sub", RType::NS, 255, 0, &b""[..]),
                ("ns.sub", RType::A, 255, 0, &b""[..]),
            ],
            vec![("x.e", RType::DS, 1, 300, ds)],
            vec![
                ("x.e", RType::ANY, 255, 0, &b""[..]),
                ("ns.x.e", RType::ANY, 255, 0, &b""[..]),
            ],
        ];
        // Checked against the whole signing at 5,000 names (at 50,000 it
        // would take minutes on a shared machine; the counts are equal).
        let small = groups_with(5_000, nsec3.clone(), "deleg", &groups, true);
        let large = groups_with(50_000, nsec3, "deleg", &groups, false);
        assert_windows_at_both_sizes(&small, &large);
    }

    /// DNAMEs edited by updates, and delegations made or removed above
    /// names the update does not touch: names added below `up` (`a.up`,
    /// `b.up`, `c.d.up` below the empty non-terminal `d.up`, the
    /// delegation `sub2.up` with its glue `ns.sub2.up`), then `up` made a
    /// delegation (they become glue or occluded) and removed again (they
    /// come back; none is `up`'s NS target, which is outside the zone):
    /// the names below it found by the served version's list of them
    /// (`Zone::names_below`); the fixture's delegation `sub` removed with
    /// its glue `ns.sub` left (authoritative again), a DNAME made at the
    /// new name `dn`, its target changed, removed, and a DNAME made beside
    /// `h1`'s address. Each group is checked against the whole zone signed
    /// again (at 5,000 names) and costs as much at 5,000 names as at
    /// 50,000. Before, `up` removed (the names below it out of the NSEC
    /// chain, not its NS targets) and, in an NSEC3 zone, `up` made (no NSEC
    /// order to follow) signed the whole zone (records visited and copied
    /// grew with it), as each group with a DNAME, and each cut made or
    /// removed above names not edited, did earlier.
    #[allow(clippy::type_complexity)]
    fn dnames_and_cuts_cost_their_change(nsec3: Option<crate::policy::Nsec3Policy>) {
        let nsec3 = nsec3.map(|nsec3| crate::policy::Nsec3Policy {
            salt_length: 0,
            ..nsec3
        });
        let out: &[u8] = b"\x02ns\x07example\x03net\x00";
        let net: &[u8] = b"\x07example\x03net\x00";
        let org: &[u8] = b"\x07example\x03org\x00";
        let mut groups: Vec<Vec<(&str, RType, u16, u32, &[u8])>> = vec![
            vec![
                ("a.up", RType::A, 1, 300, &[192, 0, 2, 61][..]),
                ("b.up", RType::A, 1, 300, &[192, 0, 2, 62][..]),
                ("c.d.up", RType::A, 1, 300, &[192, 0, 2, 63][..]),
                (
                    "sub2.up",
                    RType::NS,
                    1,
                    300,
                    b"\x02ns\x04sub2\x02up\x07example\x00",
                ),
                ("ns.sub2.up", RType::A, 1, 300, &[192, 0, 2, 64][..]),
            ],
            vec![("up", RType::NS, 1, 300, out)],
            vec![("up", RType::NS, 255, 0, &b""[..])],
        ];
        groups.extend([
            vec![("sub", RType::NS, 255, 0, &b""[..])],
            vec![("dn", RType::DNAME, 1, 300, net)],
            vec![("dn", RType::DNAME, 1, 300, org)],
            vec![("dn", RType::DNAME, 255, 0, &b""[..])],
            vec![("h1", RType::DNAME, 1, 300, net)],
        ]);
        let small = groups_with(5_000, nsec3.clone(), "dname", &groups, true);
        let large = groups_with(50_000, nsec3, "dname", &groups, false);
        assert_windows_at_both_sizes(&small, &large);
    }

    #[test]
    fn nsec_dnames_and_cuts_above_names_cost_their_change() {
        dnames_and_cuts_cost_their_change(None);
    }

    #[test]
    fn nsec3_dnames_and_cuts_above_names_cost_their_change() {
        dnames_and_cuts_cost_their_change(nsec3_policy());
    }

    #[test]
    fn opt_out_nsec3_dnames_and_cuts_above_names_cost_their_change() {
        dnames_and_cuts_cost_their_change(opt_out_policy());
    }

    /// One signed update of `updates` from `served` (the signed records
    /// kept `previous`), checked against the whole zone signed again from
    /// the same version: the new served version and its signed records
    /// (none when signed as a window).
    fn update_as_whole(
        served: &Zone,
        previous: &Records,
        unsigned: &mut ZoneRecords,
        keys: &ZoneKeys,
        updates: &[(&str, RType, u16, u32, &[u8])],
    ) -> (Arc<Zone>, Records) {
        let difference = engine_difference(unsigned, &update_message(updates));
        let update = sign_update(
            served,
            previous,
            unsigned,
            std::slice::from_ref(&difference),
            keys,
        )
        .unwrap();
        let whole = crate::signing::sign_again(
            served.origin(),
            &served_records(served).unwrap(),
            &unsigned.to_records(),
            &keys.policy,
            &state_directory(keys).unwrap(),
            crate::unix_time(),
            Some(served.serial()),
        )
        .unwrap();
        assert_eq!(served_meaning(&update.zone), meaning(&whole.zone.records));
        assert!(crate::verified::assert_changed_rrsigs_verify(served, &update.zone) > 0);
        (update.zone, update.records)
    }

    /// Whether `zone`'s NSEC3 chain has a link for `name`.
    fn has_nsec3_link(zone: &Zone, name: &str) -> bool {
        let (iterations, salt) = zone.nsec3_chain_params().expect("an NSEC3 chain");
        let name = NameBuf::from_text(name.as_bytes(), None).unwrap();
        let hash = tern_dnssec::nsec3::nsec3_hash(name.as_name(), iterations, salt);
        !zone.nsec3_link_records(&hash).is_empty()
    }

    /// A DS added at, then removed from, the insecure delegation `sub` of
    /// a zone signed with NSEC3 with opt-out: the delegation becomes
    /// secure (its link comes into the chain, its DS signed), then
    /// insecure again (the link goes), each as the whole zone signed again
    /// makes it, each signed as a window (before, the window declined an
    /// owner with NS or DS before or after, and the zone was signed whole:
    /// signed records were returned).
    #[test]
    fn opt_out_ds_at_a_delegation_signs_as_the_whole_zone_does() {
        let dir =
            std::env::temp_dir().join(format!("tern-update-opt-out-ds-{}", std::process::id()));
        let (served, previous, keys) = signed_fixture_with(&dir, 20, opt_out_policy());
        let mut unsigned = unsigned_records(&served, publishes_cds(&keys)).unwrap();
        assert!(!has_nsec3_link(&served, "sub.example."));
        let ds: &[u8] = &[
            0x30, 0x39, 13, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
            20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
        ];
        let (served, previous) = update_as_whole(
            &served,
            &previous,
            &mut unsigned,
            &keys,
            &[("sub", RType::DS, 1, 300, ds)],
        );
        assert!(
            has_nsec3_link(&served, "sub.example."),
            "a secure delegation"
        );
        assert_eq!(RecordList::len(&previous), 0, "a window");
        let (served, previous) = update_as_whole(
            &served,
            &previous,
            &mut unsigned,
            &keys,
            &[("sub", RType::DS, 255, 0, &[])],
        );
        assert!(!has_nsec3_link(&served, "sub.example."), "insecure again");
        assert_eq!(RecordList::len(&previous), 0, "a window");
        // An update elsewhere is signed as a window again.
        let (_, previous) = update_as_whole(
            &served,
            &previous,
            &mut unsigned,
            &keys,
            &[("h3", RType::TXT, 1, 300, b"\x02hi")],
        );
        assert_eq!(RecordList::len(&previous), 0, "a window");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Updates one after another to a small signed zone (NSEC, NSEC3):
    /// the version served never carries more garbage (the space its
    /// patches left unused) than the unsigned path lets it,
    /// [`crate::update::MAX_GARBAGE_SHARE`], and it is built again (or the
    /// zone signed whole) when it would. Before, the signed paths let
    /// garbage grow to half of the tables.
    #[test]
    fn signed_updates_keep_the_garbage_share_of_unsigned_ones() {
        for nsec3 in [None, nsec3_policy()] {
            let dir = std::env::temp_dir().join(format!(
                "tern-update-garbage-{}-{}",
                std::process::id(),
                nsec3.is_some()
            ));
            let (mut served, mut previous, keys) = signed_fixture_with(&dir, 10, nsec3);
            let mut unsigned = unsigned_records(&served, publishes_cds(&keys)).unwrap();
            let (mut patched, mut compacted) = (0, 0);
            for round in 0..60u8 {
                let had = served.garbage_bytes();
                (served, previous) = update_as_whole(
                    &served,
                    &previous,
                    &mut unsigned,
                    &keys,
                    &[("h1", RType::TXT, 1, 300, &[1, round])],
                );
                assert!(
                    served.garbage_bytes()
                        <= served.table_bytes() / crate::update::MAX_GARBAGE_SHARE,
                    "round {round}: {} of {} octets garbage",
                    served.garbage_bytes(),
                    served.table_bytes()
                );
                if served.garbage_bytes() > 0 {
                    patched += 1;
                } else if had > 0 {
                    compacted += 1;
                }
            }
            assert!(
                patched > 10 && compacted > 0,
                "{patched} patched, {compacted} compacted"
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
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
