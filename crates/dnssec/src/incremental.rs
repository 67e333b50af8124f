//! A zone signed again from its previous signed version: only what
//! changed is signed (issue 24; docs/decisions/0014).
//!
//! [`resign_zone`] takes the previous signed version (the records
//! [`crate::sign_zone_with`] or this function made, in their canonical
//! order of owners), the zone's new records (unsigned, as for
//! `sign_zone`) and the key set ([`crate::KeySet`]: which keys are
//! published, which sign the DNSKEY RRset, which the zone, whose CDS and
//! CDNSKEY the apex publishes), and makes the same signed zone
//! `sign_zone_with` would (the same records, the same RRSIGs by owner,
//! type covered and key), but:
//!
//! - an RRSIG of the previous version is kept when the RRset it covers is
//!   unchanged (the same class, TTL and RDATA in canonical form), its key
//!   still signs that RRset under the key set, that key's DNSKEY was in
//!   the previous version's DNSKEY RRset (the only one there with its
//!   algorithm and tag), its inception has passed and it is not due for
//!   refresh ([`Refresh`]); every other RRSIG is made anew;
//! - so at a rollover step a key that stops signing leaves no RRSIG
//!   behind, and a key that starts signing signs every RRset it signs at
//!   that step (it has no previous signature to keep), as a whole signing
//!   would; a changed DNSKEY, CDS or CDNSKEY RRset is signed again by the
//!   keys that sign keys;
//! - so after an edit only the changed RRsets, the NSEC or NSEC3 records
//!   whose next name or type bitmap changed, and the SOA (whose serial
//!   changed) are signed; with the zone unchanged, only the signatures due
//!   for refresh (and the SOA's, when its serial is raised);
//! - the difference from the previous version (records deleted, records
//!   added, signatures included) comes with it, for the zone's IXFR
//!   history, without comparing the two zones again.
//!
//! When is a signature due? At its expiration less the policy's refresh
//! margin, less a share of the jitter drawn from the signature's own last
//! four octets (random for ECDSA, a function of the data for Ed25519 and
//! RSA): the signatures of a zone signed at one moment, which all expire
//! together, are refreshed spread over the jitter, each at a time of its
//! own that does not change while it lives. A refresh also takes the signatures
//! due within [`Refresh::window`] after it, so that they go in batches
//! rather than one version per signature.
//!
//! The NSEC3 chain is made with the parameters given: a caller that wants
//! the previous chain kept gives the previous salt (a new salt changes
//! every hashed owner, and so signs the whole chain again).
//!
//! Bound: the new records are sorted (as `sign_zone` does), then one pass
//! over them and one over the previous version in step (each a forward
//! cursor in canonical order of owners); one signature per RRset changed
//! or due and per key that signs it.

use std::cmp::Ordering;
use std::ops::Range;

use tern_wire::name::{LowerNameBuf, Name, NameBuf};
use tern_wire::types::RType;
use tern_zone::{Record, RecordList, RecordRef, Records, Sink};

use crate::canonical::{canonical_rrset, rrsig_labels};
use crate::key::{key_tag, SigningKey};
use crate::rrsig::{sign_rrset, Rrset};
use crate::zone::{
    merge, prepare, push_rrsig, KeySet, Pass, SignError, SignOptions, SignRrset, ZoneKey,
    BATCH_NAMES,
};

//----------- Refresh --------------------------------------------------------

/// When a signature kept from the previous version is made anew; times
/// in seconds, `now` a Unix time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refresh {
    /// The time now.
    pub now: u64,
    /// How long before its expiration a signature is refreshed at the
    /// latest (the policy's `rrsig-refresh`).
    pub refresh: u64,
    /// How much earlier still, at most, spread over the signatures (the
    /// policy's `rrsig-jitter`).
    pub jitter: u64,
    /// Signatures due within this long after `now` are refreshed now too:
    /// one batch rather than many versions.
    pub window: u64,
}

impl Refresh {
    /// When the signature of RRSIG RDATA `rrsig` is due for refresh (Unix
    /// time): its expiration less [`Refresh::refresh`] less its share of
    /// [`Refresh::jitter`]; `None` if the RDATA is too short for an RRSIG.
    pub fn due_at(&self, rrsig: &[u8]) -> Option<u64> {
        let fields = Fields::of(rrsig)?;
        let share = (u128::from(self.jitter) * u128::from(fields.jitter_draw)) >> 32;
        Some(
            absolute(fields.expiration, self.now)
                .saturating_sub(self.refresh)
                .saturating_sub(share as u64),
        )
    }

    /// Whether the signature of `rrsig` is to be refreshed now (or it does
    /// not read): due within [`Refresh::window`], or not yet valid.
    fn due(&self, rrsig: &[u8]) -> bool {
        let Some(fields) = Fields::of(rrsig) else {
            return true;
        };
        let not_yet_valid = absolute(fields.inception, self.now) > self.now;
        let due_at = self.due_at(rrsig).unwrap_or(0);
        not_yet_valid || due_at <= self.now.saturating_add(self.window)
    }
}

/// A 32-bit RRSIG time field as the Unix time nearest `now` (RFC 4034
/// section 3.1.5's serial arithmetic).
fn absolute(field: u32, now: u64) -> u64 {
    let delta = i64::from(field.wrapping_sub(now as u32) as i32);
    (now as i64).saturating_add(delta).max(0) as u64
}

/// What this module reads of an RRSIG's RDATA.
struct Fields<'a> {
    covered: RType,
    algorithm: u8,
    labels: u8,
    original_ttl: u32,
    expiration: u32,
    inception: u32,
    key_tag: u16,
    signer: &'a [u8],
    /// The last four octets of the signature, as a number.
    jitter_draw: u32,
}

impl<'a> Fields<'a> {
    /// The fields of RRSIG RDATA, if it holds them and a signature of at
    /// least four octets. Bound: the signer's labels, at most 255 octets.
    fn of(rdata: &'a [u8]) -> Option<Fields<'a>> {
        let u16_at = |at: usize| Some(u16::from_be_bytes(rdata.get(at..at + 2)?.try_into().ok()?));
        let u32_at = |at: usize| Some(u32::from_be_bytes(rdata.get(at..at + 4)?.try_into().ok()?));
        let mut end = 18;
        loop {
            let len = usize::from(*rdata.get(end)?);
            if len > 63 || end - 18 > 255 {
                return None;
            }
            end += 1 + len;
            if len == 0 {
                break;
            }
        }
        let tail = rdata.len().checked_sub(4).filter(|&tail| tail >= end)?;
        Some(Fields {
            covered: RType(u16_at(0)?),
            algorithm: *rdata.get(2)?,
            labels: *rdata.get(3)?,
            original_ttl: u32_at(4)?,
            expiration: u32_at(8)?,
            inception: u32_at(12)?,
            key_tag: u16_at(16)?,
            signer: rdata.get(18..end)?,
            jitter_draw: u32_at(tail)?,
        })
    }
}

//----------- Resigned -------------------------------------------------------

/// A zone signed again from its previous version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resigned {
    /// The records to serve, as [`crate::SignedZone::records`].
    pub records: Vec<Record>,
    /// The RRSIG records made.
    pub signatures: usize,
    /// The RRSIG records kept from the previous version.
    pub kept: usize,
    /// The input's DNSSEC records dropped, as [`crate::SignedZone::replaced`].
    pub replaced: usize,
    /// What changed from the previous version, or `None` when the previous
    /// version's owners were not in canonical order (the caller then
    /// compares the versions itself).
    pub difference: Option<Change>,
    /// When the first of the signatures served is due for refresh
    /// ([`Refresh::due_at`]), if any is.
    pub next_refresh: Option<u64>,
}

/// The records of the previous version not in the new one, and the new
/// one's not in the previous (the apex SOA in both when it changed), each
/// in canonical order of owners. Records compare by owner (ignoring
/// case), type, class, TTL and RDATA as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Change {
    /// Records deleted.
    pub deleted: Vec<Record>,
    /// Records added.
    pub added: Vec<Record>,
}

//----------- resign_zone ----------------------------------------------------

/// Signs the zone at `origin` made of `records` (in file order) with the
/// key set `keys`, as [`crate::sign_zone_with`] does, keeping what it can
/// of `previous` (the previous signed version, in canonical order of
/// owners); see the module documentation. The new signatures are valid as
/// `options` says; `refresh` says which of the previous ones are made
/// anew.
pub fn resign_zone<P, R>(
    origin: Name<'_>,
    previous: &P,
    records: &R,
    keys: &KeySet<'_>,
    options: &SignOptions,
    refresh: &Refresh,
) -> Result<Resigned, SignError>
where
    P: RecordList + ?Sized,
    R: RecordList + ?Sized,
{
    // The zone as a whole signing prepares it: its records sorted, each
    // once, with the new apex RRsets (DNSKEY, CDS, CDNSKEY, NSEC3PARAM).
    let (zone, replaced) = prepare(origin, records, keys, options)?;
    // Each previous record read once (a list may check its owner at every
    // read), then looked at through references: about 56 octets a record
    // for the time of the signing.
    let previous = &Read(
        (0..previous.len())
            .map(|index| previous.record(index))
            .collect(),
    );
    let known = known_keys(origin, previous, &keys.keys);
    let mut signer = Signer::new(origin.to_lower(), keys, &known, options, refresh, previous);
    let pass = Pass {
        zone: &zone,
        origin,
    };
    let mut out: Vec<Record> = Vec::with_capacity(zone.records.len() * 3);
    let mut by_owner = Keep {
        signer: &mut signer,
        at: Cursor::default(),
    };
    pass.sign_nodes(0..zone.nodes.len(), &mut by_owner, &mut out)?;
    if let Some(chain) = pass.chain() {
        let names = chain.hash_names(pass.hashed_names())?;
        let mut records: Vec<Record> = Vec::with_capacity(names.len() * 2);
        let mut by_hash = Keep {
            signer: &mut signer,
            at: Cursor::default(),
        };
        chain.sign_range(&names, 0..names.len(), &mut by_hash, &mut records)?;
        out = merge(out, records);
    }
    let difference = difference(previous, &out);
    Ok(Resigned {
        records: out,
        signatures: signer.signatures,
        kept: signer.kept,
        replaced,
        difference,
        next_refresh: signer.next_refresh,
    })
}

//----------- resign_zone_into -----------------------------------------------

/// What [`resign_zone_into`] made: [`Resigned`] but for its records (handed
/// to the sink) and the difference (not computed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResignStats {
    /// The records handed to the sink.
    pub records: usize,
    /// The RRSIG records made.
    pub signatures: usize,
    /// The RRSIG records kept from the previous version.
    pub kept: usize,
    /// The input's DNSSEC records dropped, as [`crate::SignedZone::replaced`].
    pub replaced: usize,
    /// When the first of the signatures served is due for refresh
    /// ([`Refresh::due_at`]), if any is.
    pub next_refresh: Option<u64>,
}

/// [`resign_zone`], each record handed to `sink` as it is made rather than
/// collected (a start from a saved signed copy, which needs no
/// difference): the records come in the order [`crate::sign_zone_into`]
/// gives them, and what is held besides `previous`, `records` and the
/// prepared zone is one batch of [`crate::zone::BATCH_NAMES`] names (and,
/// with NSEC3, the chain) in compact form, never one owned record per
/// record.
pub fn resign_zone_into<P, R>(
    origin: Name<'_>,
    previous: &P,
    records: &R,
    keys: &KeySet<'_>,
    options: &SignOptions,
    refresh: &Refresh,
    sink: &mut dyn Sink,
) -> Result<ResignStats, SignError>
where
    P: RecordList + ?Sized,
    R: RecordList + ?Sized,
{
    let (zone, replaced) = prepare(origin, records, keys, options)?;
    // Read in place, not through references collected first as
    // resign_zone does (56 octets a record, a quarter of the saved copy
    // again): each read checks its owner, a few per record, for memory.
    let known = known_keys(origin, previous, &keys.keys);
    let mut signer = Signer::new(origin.to_lower(), keys, &known, options, refresh, previous);
    let pass = Pass {
        zone: &zone,
        origin,
    };
    // The NSEC3 chain first, whole and compact: its records go between
    // the others in canonical order of owners.
    let mut chain = Records::new();
    if let Some(made) = pass.chain() {
        let names = made.hash_names(pass.hashed_names())?;
        let mut by_hash = Keep {
            signer: &mut signer,
            at: Cursor::default(),
        };
        made.sign_range(&names, 0..names.len(), &mut by_hash, &mut chain)?;
    }
    let mut by_owner = Keep {
        signer: &mut signer,
        at: Cursor::default(),
    };
    let mut stats = ResignStats {
        replaced,
        ..ResignStats::default()
    };
    let mut chained = 0;
    let mut start = 0;
    while start < zone.nodes.len() {
        let end = zone.nodes.len().min(start + BATCH_NAMES);
        let mut part = Records::new();
        pass.sign_nodes(start..end, &mut by_owner, &mut part)?;
        stats.records += crate::zone::hand_over(&part, &chain, &mut chained, sink, false)?;
        start = end;
    }
    stats.records += crate::zone::hand_over(&Records::new(), &chain, &mut chained, sink, true)?;
    stats.signatures = signer.signatures;
    stats.kept = signer.kept;
    stats.next_refresh = signer.next_refresh;
    Ok(stats)
}

//----------- resign_owners --------------------------------------------------

/// The most owners [`resign_owners`] signs again in one call: past it the
/// caller signs the zone again from its previous version whole
/// ([`resign_zone`]), one pass rather than a look-up per owner.
pub const MAX_OWNER_EDITS: usize = 4096;

/// One owner of a signed zone whose records an edit changed, for
/// [`resign_owners`].
#[derive(Clone, Debug)]
pub struct OwnerEdit<'a> {
    /// The owner.
    pub owner: Name<'a>,
    /// Its records in the previous signed version, RRSIG and NSEC
    /// included.
    pub previous: Vec<RecordRef<'a>>,
    /// Its records in the new version, unsigned: no RRSIG, NSEC, NSEC3 or
    /// NSEC3PARAM, and at the apex no DNSKEY (nor CDS or CDNSKEY when the
    /// key set publishes its own), which the signer makes as
    /// [`crate::sign_zone_with`] does.
    pub records: Vec<RecordRef<'a>>,
}

/// Owners signed again by [`resign_owners`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnersResigned {
    /// Each owner's records in the new version, signed, in the order of
    /// the edits; within an owner as [`crate::sign_zone_with`] gives them
    /// (by type, each RRset after its RRSIGs, the NSEC last).
    pub owners: Vec<Vec<Record>>,
    /// The RRSIG records made.
    pub signatures: usize,
    /// The RRSIG records of these owners kept from the previous version.
    pub kept: usize,
    /// What changed at these owners, as [`Resigned::difference`].
    pub difference: Change,
    /// When the first signature made or kept here is due for refresh.
    pub next_refresh: Option<u64>,
    /// Records visited: those of the edits, before and after (what
    /// "costs the change, not the zone" counts).
    pub visited: usize,
}

/// Signs again only `edits`' owners of the NSEC-signed zone at `origin`
/// (the apex among them: its SOA's serial is raised as `options` says,
/// and its DNSKEY, CDS and CDNSKEY RRsets made from `keys`), keeping the
/// previous RRSIG of each RRset unchanged as [`resign_zone`] does, and
/// each owner's NSEC's next name: the same records, but for the
/// signatures made, that `resign_zone` makes for those owners when no
/// other owner changed and no name was added or removed. `apex` holds the
/// previous version's apex records (its DNSKEY RRset tells whose
/// signatures are kept).
///
/// `None` when the edits are not for this: an owner without exactly one
/// NSEC in the previous version (glue, a delegation, a name new or gone),
/// an NSEC3 zone, no SOA at the apex, or an NSEC TTL that changes (the
/// SOA's TTL or minimum changed: every NSEC changes). The caller then
/// signs the zone again whole. Bound: at most [`MAX_OWNER_EDITS`] owners,
/// one signature per RRset changed and per key that signs it.
pub fn resign_owners(
    origin: Name<'_>,
    apex: &[RecordRef<'_>],
    edits: &[OwnerEdit<'_>],
    keys: &KeySet<'_>,
    options: &SignOptions,
    refresh: &Refresh,
) -> Result<Option<OwnersResigned>, SignError> {
    if !matches!(options.denial, crate::Denial::Nsec) {
        return Ok(None);
    }
    resign_owners_with(origin, apex, edits, None, keys, options, refresh)
}

/// [`resign_owners`] for a zone signed with NSEC3 (with opt-out or
/// without: which names have links is the caller's): the same, but no
/// owner has an NSEC (its NSEC3, at its hashed owner, is
/// [`resign_nsec3_links`]'), the apex's NSEC3PARAM is made from the
/// parameters, and the owners `glue[i]` says lie below a zone cut (glue,
/// or names a DNAME hides) keep their records unsigned. The caller reads
/// each owner's NSEC3 type bitmap from the records made (the types of
/// its RRsets but for glue's; at a delegation point, NS, DS and the
/// DS's RRSIG alone, as only its DS RRset is signed). `None` when the
/// edits are not for this: an NSEC zone, no SOA at the apex. Bound: as
/// [`resign_owners`].
pub fn resign_owners_nsec3(
    origin: Name<'_>,
    apex: &[RecordRef<'_>],
    edits: &[OwnerEdit<'_>],
    glue: &[bool],
    keys: &KeySet<'_>,
    options: &SignOptions,
    refresh: &Refresh,
) -> Result<Option<OwnersResigned>, SignError> {
    match &options.denial {
        crate::Denial::Nsec3(_) if glue.len() == edits.len() => {
            resign_owners_with(origin, apex, edits, Some(glue), keys, options, refresh)
        }
        _ => Ok(None),
    }
}

/// One NSEC3 record of a chain that an edit changes, for
/// [`resign_nsec3_links`].
#[derive(Clone, Debug)]
pub struct Nsec3Link<'a> {
    /// The hashed owner.
    pub owner: Name<'a>,
    /// Its records in the previous signed version (the NSEC3 and the
    /// RRSIGs over it; none for a link new in the chain).
    pub previous: Vec<RecordRef<'a>>,
    /// Its NSEC3 RDATA in the new version; `None`: the link is gone.
    pub rdata: Option<Vec<u8>>,
    /// The NSEC3's TTL (the SOA's TTL or minimum, the lower).
    pub ttl: u32,
}

/// The NSEC3 records `links` of an NSEC3 chain signed again: each
/// previous RRSIG kept when its NSEC3 is unchanged (as [`resign_zone`]
/// keeps them), else made anew. `apex` holds the previous version's apex
/// records (its DNSKEY RRset tells whose signatures are kept). The
/// owners' records (each NSEC3 after its RRSIGs; none for a link gone) in
/// the order of `links`. Bound: at most [`MAX_OWNER_EDITS`] links, one
/// signature per link changed and per key that signs the zone.
pub fn resign_nsec3_links(
    origin: Name<'_>,
    apex: &[RecordRef<'_>],
    links: &[Nsec3Link<'_>],
    keys: &KeySet<'_>,
    options: &SignOptions,
    refresh: &Refresh,
) -> Result<Option<OwnersResigned>, SignError> {
    let Some(known) = owners_set_up(origin, apex, links.len(), keys)? else {
        return Ok(None);
    };
    if !matches!(options.denial, crate::Denial::Nsec3(_)) {
        return Ok(None);
    }
    let class = apex
        .first()
        .map_or(tern_wire::types::RClass::IN, |record| record.class);
    let mut out = OwnersResigned::default();
    let lower_origin = origin.to_lower();
    for link in links {
        out.visited += link.previous.len();
        let previous = Read(link.previous.clone());
        let mut signer = Signer::new(lower_origin, keys, &known, options, refresh, &previous);
        let mut signed: Vec<Record> = Vec::with_capacity(4);
        if let Some(rdata) = &link.rdata {
            let nsec3 = [&rdata[..]];
            let rrset = Rrset {
                owner: link.owner,
                class,
                rtype: RType::NSEC3,
                ttl: link.ttl,
                rdata: &nsec3,
            };
            signer.sign_or_keep(&rrset, false, 0..previous.len(), &mut signed)?;
            Sink::record(
                &mut signed,
                RecordRef {
                    owner: link.owner,
                    class,
                    ttl: link.ttl,
                    rtype: RType::NSEC3,
                    rdata,
                    location: tern_zone::Location::default(),
                },
            )
            .map_err(SignError::Sink)?;
        }
        out.push_owner(&signer, signed);
    }
    Ok(Some(out))
}

/// [`resign_owners`] (`glue`: `None`) or [`resign_owners_nsec3`] (which
/// owners are glue).
fn resign_owners_with(
    origin: Name<'_>,
    apex: &[RecordRef<'_>],
    edits: &[OwnerEdit<'_>],
    glue: Option<&[bool]>,
    keys: &KeySet<'_>,
    options: &SignOptions,
    refresh: &Refresh,
) -> Result<Option<OwnersResigned>, SignError> {
    let Some(known) = owners_set_up(origin, apex, edits.len(), keys)? else {
        return Ok(None);
    };
    let nsec3param = match &options.denial {
        crate::Denial::Nsec3(params) => Some(crate::nsec3::nsec3param_rdata(params)),
        crate::Denial::Nsec => None,
    };
    let Some(apex_edit) = edits.iter().find(|edit| edit.owner.eq_ignore_case(origin)) else {
        return Ok(None);
    };
    let soa = match crate::zone::soa_of(apex_edit.records.iter().copied()) {
        Ok(soa) => soa,
        Err(_) => return Ok(None),
    };
    let nsec_ttl = soa.ttl.min(soa.minimum);
    let dnskey_ttl = options.dnskey_ttl.unwrap_or(soa.ttl);
    let mut dnskeys: Vec<&[u8]> = keys.keys.iter().map(|key| key.key.dnskey_rdata()).collect();
    dnskeys.sort_unstable();
    dnskeys.dedup();
    let cds = keys
        .cds
        .as_deref()
        .map(|cds| crate::zone::cds_records(apex_edit.owner, cds))
        .unwrap_or_default();
    let mut out = OwnersResigned::default();
    let lower_origin = origin.to_lower();
    for (at, edit) in edits.iter().enumerate() {
        let is_apex = edit.owner.eq_ignore_case(origin);
        let is_glue = glue.is_some_and(|glue| glue[at]) && !is_apex;
        out.visited += edit.previous.len() + edit.records.len();
        // A delegation's records are not signed as an authoritative
        // name's (nor is what it hides).
        let delegation = |records: &[RecordRef<'_>]| {
            records
                .iter()
                .any(|record| matches!(record.rtype, RType::NS | RType::DS))
        };
        // With NSEC3 (no owner's NSEC to keep) a delegation point made,
        // kept or removed is signed as the whole signer signs one: its DS
        // RRset only, its other records kept unsigned.
        if !is_apex && glue.is_none() && (delegation(&edit.previous) || delegation(&edit.records)) {
            return Ok(None);
        }
        let is_delegation = !is_apex
            && glue.is_some()
            && edit.records.iter().any(|record| record.rtype == RType::NS);
        // The previous NSEC: its next name is kept (an NSEC3 zone's
        // owners have none).
        let next = if glue.is_some() {
            None
        } else {
            let mut nsecs = edit
                .previous
                .iter()
                .filter(|record| record.rtype == RType::NSEC);
            let (Some(nsec), None) = (nsecs.next(), nsecs.next()) else {
                return Ok(None);
            };
            if nsec.ttl != nsec_ttl {
                return Ok(None);
            }
            let Ok((next, _)) = Name::parse_prefix(nsec.rdata) else {
                return Ok(None);
            };
            Some(next)
        };
        // The new records, the signer's own at the apex added; by type,
        // then canonical RDATA, each once.
        let mut raised = Vec::new();
        let mut records: Vec<(RType, Vec<u8>, RecordRef<'_>)> = Vec::new();
        for record in &edit.records {
            if matches!(
                record.rtype,
                RType::RRSIG | RType::NSEC | RType::NSEC3 | RType::NSEC3PARAM
            ) || (is_apex && record.rtype == RType::DNSKEY)
            {
                return Ok(None);
            }
            let mut record = *record;
            if is_apex && record.rtype == RType::SOA {
                if let Some(above) = options.serial_above {
                    raised = record.rdata.to_vec();
                    crate::zone::raise_serial_rdata(&mut raised, above);
                }
            }
            let canonical =
                tern_zone::print::canonical_rdata(record.rtype, record.rdata).into_owned();
            record.owner = edit.owner;
            records.push((record.rtype, canonical, record));
        }
        let made = |rtype, ttl, rdata| RecordRef {
            owner: edit.owner,
            class: soa.class,
            ttl,
            rtype,
            rdata,
            location: tern_zone::Location::default(),
        };
        if is_apex {
            for rdata in &dnskeys {
                let canonical = rdata.to_vec();
                records.push((
                    RType::DNSKEY,
                    canonical,
                    made(RType::DNSKEY, dnskey_ttl, rdata),
                ));
            }
            if keys.cds.is_some() {
                records.retain(|(rtype, _, _)| !matches!(*rtype, RType::CDS | RType::CDNSKEY));
                for (rtype, rdata) in &cds {
                    records.push((*rtype, rdata.clone(), made(*rtype, dnskey_ttl, rdata)));
                }
            }
            if let Some(rdata) = &nsec3param {
                records.push((
                    RType::NSEC3PARAM,
                    rdata.clone(),
                    made(RType::NSEC3PARAM, crate::zone::NSEC3PARAM_TTL, rdata),
                ));
            }
        }
        records.sort_by(|a, b| (a.0 .0, &a.1).cmp(&(b.0 .0, &b.1)));
        records.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        let previous = Read(edit.previous.clone());
        let mut signer = Signer::new(lower_origin, keys, &known, options, refresh, &previous);
        let mut signed: Vec<Record> = Vec::with_capacity(records.len() * 2 + 2);
        let mut types: Vec<RType> = Vec::new();
        let mut start = 0;
        while start < records.len() {
            let rtype = records[start].0;
            let end = start
                + records[start..]
                    .iter()
                    .take_while(|(other, _, _)| *other == rtype)
                    .count();
            let first = records[start].2;
            let rdata: Vec<&[u8]> = records[start..end]
                .iter()
                .map(|(_, _, record)| {
                    if is_apex && rtype == RType::SOA && !raised.is_empty() {
                        &raised[..]
                    } else {
                        record.rdata
                    }
                })
                .collect();
            let rrset = Rrset {
                owner: edit.owner,
                class: first.class,
                rtype,
                ttl: first.ttl,
                rdata: &rdata,
            };
            let by_key_signing_keys =
                is_apex && matches!(rtype, RType::DNSKEY | RType::CDS | RType::CDNSKEY);
            if !is_glue && (!is_delegation || rtype == RType::DS) {
                signer.sign_or_keep(&rrset, by_key_signing_keys, 0..previous.len(), &mut signed)?;
            }
            for rdata in &rdata {
                Sink::record(
                    &mut signed,
                    RecordRef {
                        ttl: first.ttl,
                        ..made(rtype, first.ttl, rdata)
                    },
                )
                .map_err(SignError::Sink)?;
            }
            types.push(rtype);
            start = end;
        }
        if let Some(next) = next {
            types.extend([RType::RRSIG, RType::NSEC]);
            let nsec_rdata = crate::nsec::nsec_rdata(next, &types);
            let nsec = [&nsec_rdata[..]];
            let rrset = Rrset {
                owner: edit.owner,
                class: soa.class,
                rtype: RType::NSEC,
                ttl: nsec_ttl,
                rdata: &nsec,
            };
            signer.sign_or_keep(&rrset, false, 0..previous.len(), &mut signed)?;
            Sink::record(&mut signed, made(RType::NSEC, nsec_ttl, &nsec_rdata))
                .map_err(SignError::Sink)?;
        }
        out.push_owner(&signer, signed);
    }
    Ok(Some(out))
}

/// The set-up [`resign_owners_with`] and [`resign_nsec3_links`] share:
/// the keys checked, and for each key whether its previous signatures
/// are kept ([`known_keys`], read from `apex`, the previous version's
/// apex records). `None`: more than [`MAX_OWNER_EDITS`] owners (`count`).
/// Bound: [`known_keys`]'.
fn owners_set_up(
    origin: Name<'_>,
    apex: &[RecordRef<'_>],
    count: usize,
    keys: &KeySet<'_>,
) -> Result<Option<Vec<bool>>, SignError> {
    crate::zone::check_keys(&keys.keys)?;
    if count > MAX_OWNER_EDITS {
        return Ok(None);
    }
    Ok(Some(known_keys(origin, &Read(apex.to_vec()), &keys.keys)))
}

impl OwnersResigned {
    /// One more owner: its records `signed` by `signer` (whose previous
    /// records are the owner's), what it made and kept counted and its
    /// change from the previous records added. Bound: the owner's records.
    fn push_owner(&mut self, signer: &Signer<'_, Read<'_>>, signed: Vec<Record>) {
        self.signatures += signer.signatures;
        self.kept += signer.kept;
        if let Some(at) = signer.next_refresh {
            self.next_refresh = Some(self.next_refresh.map_or(at, |next| next.min(at)));
        }
        self.visited += signed.len();
        let previous = signer.previous;
        compare_owner(previous, 0..previous.len(), &signed, &mut self.difference);
        self.owners.push(signed);
    }
}

/// When the first signature among `records` is due for refresh
/// ([`Refresh::due_at`]): for a zone `crate::sign_zone` signed. Bound: one
/// pass.
pub fn next_refresh<R: RecordList + ?Sized>(records: &R, refresh: &Refresh) -> Option<u64> {
    (0..records.len())
        .filter(|&index| records.rtype(index) == RType::RRSIG)
        .filter_map(|index| refresh.due_at(records.record(index).rdata))
        .min()
}

/// For each of `keys`, whether the previous version's RRSIGs with its
/// algorithm and tag are its own: its DNSKEY was in the previous
/// version's apex DNSKEY RRset, and no other key of that RRset had its
/// algorithm and tag (RFC 4034 key tags are not unique: a signature of a
/// key gone is never kept as another's). Bound: the apex's records, times
/// the keys (at most [`crate::MAX_KEYS`]).
fn known_keys<P: RecordList + ?Sized>(
    origin: Name<'_>,
    previous: &P,
    keys: &[ZoneKey<'_>],
) -> Vec<bool> {
    let dnskeys: Vec<&[u8]> = (0..previous.len())
        .map(|index| previous.record(index))
        .take_while(|record| record.owner.eq_ignore_case(origin))
        .filter(|record| record.rtype == RType::DNSKEY)
        .map(|record| record.rdata)
        .collect();
    keys.iter()
        .map(|key| {
            let rdata = key.key.dnskey_rdata();
            let same_tag = dnskeys
                .iter()
                .filter(|other| other.get(3) == rdata.get(3) && key_tag(other) == key.key.key_tag())
                .count();
            dnskeys.contains(&rdata) && same_tag == 1
        })
        .collect()
}

//----------- Read -----------------------------------------------------------

/// The records of a list, each read once.
struct Read<'a>(Vec<RecordRef<'a>>);

impl RecordList for Read<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn record(&self, index: usize) -> RecordRef<'_> {
        self.0[index]
    }

    fn rtype(&self, index: usize) -> RType {
        self.0[index].rtype
    }
}

//----------- Cursor ---------------------------------------------------------

/// A forward position in the previous version, for owners asked in
/// canonical order.
#[derive(Default)]
struct Cursor {
    at: usize,
}

impl Cursor {
    /// The previous version's records at `owner` (empty if none): the
    /// cursor moves past the owners before it. Owners asked out of order,
    /// or a previous version out of order, find less, never wrong records.
    fn seek<P: RecordList + ?Sized>(&mut self, previous: &P, owner: Name<'_>) -> Range<usize> {
        while self.at < previous.len()
            && previous.record(self.at).owner.canonical_cmp(owner) == Ordering::Less
        {
            self.at += 1;
        }
        let mut end = self.at;
        while end < previous.len() && previous.record(end).owner.eq_ignore_case(owner) {
            end += 1;
        }
        self.at..end
    }
}

//----------- Signer ---------------------------------------------------------

/// Signs RRsets, or keeps their previous signatures.
struct Signer<'a, P: ?Sized> {
    origin: LowerNameBuf,
    keys: &'a [ZoneKey<'a>],
    /// For each key, whether its previous signatures are its own
    /// ([`known_keys`]).
    known: &'a [bool],
    options: &'a SignOptions,
    refresh: &'a Refresh,
    previous: &'a P,
    signatures: usize,
    kept: usize,
    next_refresh: Option<u64>,
}

/// A [`Signer`] with its place in the previous version, for RRsets
/// whose owners come in canonical order: the zone's names, or the NSEC3
/// chain's hashed owners.
struct Keep<'s, 'a, P: ?Sized> {
    signer: &'s mut Signer<'a, P>,
    at: Cursor,
}

impl<P: RecordList + ?Sized> SignRrset for Keep<'_, '_, P> {
    fn sign(
        &mut self,
        rrset: &Rrset<'_>,
        by_key_signing_keys: bool,
        out: &mut dyn Sink,
    ) -> Result<usize, SignError> {
        let before = self.at.seek(self.signer.previous, rrset.owner);
        self.signer
            .sign_or_keep(rrset, by_key_signing_keys, before, out)
    }
}

impl<'a, P: RecordList + ?Sized> Signer<'a, P> {
    /// A signer that has made and kept nothing yet.
    fn new(
        origin: LowerNameBuf,
        keys: &'a KeySet<'a>,
        known: &'a [bool],
        options: &'a SignOptions,
        refresh: &'a Refresh,
        previous: &'a P,
    ) -> Self {
        Signer {
            origin,
            keys: &keys.keys,
            known,
            options,
            refresh,
            previous,
            signatures: 0,
            kept: 0,
            next_refresh: None,
        }
    }

    /// Pushes to `out` an RRSIG over `rrset` by each key that signs it
    /// under the key set (the apex's DNSKEY, CDS and CDNSKEY RRsets by the
    /// keys that sign keys, the others by those that sign the zone): the
    /// previous one (among the records `before`) when the RRset is
    /// unchanged, the key's previous signatures are its own and it is not
    /// due, else a new one; how many were made anew. A key that no longer
    /// signs this RRset has no RRSIG kept.
    fn sign_or_keep(
        &mut self,
        rrset: &Rrset<'_>,
        by_key_signing_keys: bool,
        before: Range<usize>,
        out: &mut dyn Sink,
    ) -> Result<usize, SignError> {
        let made = self.signatures;
        let unchanged = self.unchanged(rrset, before.clone());
        let chosen = self.keys.iter().zip(self.known);
        for (key, &known) in chosen.filter(|(key, _)| key.signs(by_key_signing_keys)) {
            let key = key.key;
            let previous = (unchanged && known)
                .then(|| self.kept_signature(rrset, key, before.clone()))
                .flatten();
            let rdata = match previous {
                Some(rdata) => {
                    self.kept += 1;
                    rdata
                }
                None => {
                    self.signatures += 1;
                    sign_rrset(rrset, self.origin.as_name(), key, self.options.validity)?
                }
            };
            if let Some(at) = self.refresh.due_at(&rdata) {
                self.next_refresh = Some(self.next_refresh.map_or(at, |next| next.min(at)));
            }
            push_rrsig(rrset, &rdata, out)?;
        }
        Ok(self.signatures - made)
    }

    /// Whether the previous version had this RRset as it is now: the same
    /// class, TTL and RDATA in canonical form.
    fn unchanged(&self, rrset: &Rrset<'_>, before: Range<usize>) -> bool {
        let mut old: Vec<&[u8]> = Vec::new();
        for index in before {
            if self.previous.rtype(index) != rrset.rtype {
                continue;
            }
            let record = self.previous.record(index);
            if record.class != rrset.class || record.ttl != rrset.ttl {
                return false;
            }
            old.push(record.rdata);
        }
        !old.is_empty()
            && canonical_rrset(rrset.rtype, &old) == canonical_rrset(rrset.rtype, rrset.rdata)
    }

    /// The previous RRSIG over the unchanged `rrset` by `key`, if it can be
    /// served on: made for this RRset's type, TTL and owner by this key
    /// for this zone, valid now and not due for refresh.
    fn kept_signature(
        &self,
        rrset: &Rrset<'_>,
        key: &SigningKey,
        before: Range<usize>,
    ) -> Option<Vec<u8>> {
        before
            .filter(|&index| self.previous.rtype(index) == RType::RRSIG)
            .map(|index| self.previous.record(index))
            .filter(|record| record.class == rrset.class)
            .map(|record| record.rdata)
            .find(|rdata| {
                Fields::of(rdata).is_some_and(|fields| {
                    fields.covered == rrset.rtype
                        && fields.algorithm == key.algorithm().number()
                        && fields.key_tag == key.key_tag()
                        && fields.labels == rrsig_labels(rrset.owner)
                        && fields.original_ttl == rrset.ttl
                        && fields.signer == self.origin.as_name().as_bytes()
                }) && !self.refresh.due(rdata)
            })
            .map(<[u8]>::to_vec)
    }
}

//----------- difference -----------------------------------------------------

/// The records of `previous` not in `new` and of `new` not in `previous`,
/// both in canonical order of owners (`None` if `previous` is not).
/// Bound: one pass over each, a sort of each owner's records.
fn difference<P: RecordList + ?Sized>(previous: &P, new: &[Record]) -> Option<Change> {
    let mut change = Change::default();
    let (mut old_at, mut new_at) = (0, 0);
    let mut last_old: Option<NameBuf> = None;
    while old_at < previous.len() || new_at < new.len() {
        let old_end = group_end(previous, old_at);
        let new_end = group_end(new, new_at);
        let order = match (old_at < previous.len(), new_at < new.len()) {
            (true, true) => previous
                .record(old_at)
                .owner
                .canonical_cmp(new[new_at].owner.as_name()),
            (true, false) => Ordering::Less,
            _ => Ordering::Greater,
        };
        if order != Ordering::Greater {
            let owner = previous.record(old_at).owner;
            if let Some(last) = &last_old {
                if last.as_name().canonical_cmp(owner) != Ordering::Less {
                    return None;
                }
            }
            last_old = Some(owner.to_buf());
        }
        match order {
            Ordering::Less => {
                change
                    .deleted
                    .extend((old_at..old_end).map(|index| previous.record(index).to_record()));
                old_at = old_end;
            }
            Ordering::Greater => {
                change.added.extend_from_slice(&new[new_at..new_end]);
                new_at = new_end;
            }
            Ordering::Equal => {
                compare_owner(
                    previous,
                    old_at..old_end,
                    &new[new_at..new_end],
                    &mut change,
                );
                old_at = old_end;
                new_at = new_end;
            }
        }
    }
    Some(change)
}

/// Where the records of the owner at `start` end.
fn group_end<L: RecordList + ?Sized>(list: &L, start: usize) -> usize {
    if start >= list.len() {
        return start;
    }
    let owner = list.record(start).owner;
    let mut end = start + 1;
    while end < list.len() && list.record(end).owner.eq_ignore_case(owner) {
        end += 1;
    }
    end
}

/// The difference at one owner: its previous records `old` and its new
/// ones.
fn compare_owner<P: RecordList + ?Sized>(
    previous: &P,
    old: Range<usize>,
    new: &[Record],
    change: &mut Change,
) {
    type Key<'k> = (u16, u16, u32, &'k [u8]);
    let mut before: Vec<(Key<'_>, usize)> = old
        .map(|index| {
            let record = previous.record(index);
            let key = (record.rtype.0, record.class.0, record.ttl, record.rdata);
            (key, index)
        })
        .collect();
    let mut after: Vec<(Key<'_>, usize)> = new
        .iter()
        .enumerate()
        .map(|(index, record)| {
            let key = (
                record.rtype.0,
                record.class.0,
                record.ttl,
                &record.rdata[..],
            );
            (key, index)
        })
        .collect();
    before.sort_unstable();
    after.sort_unstable();
    let (mut b, mut a) = (0, 0);
    while b < before.len() || a < after.len() {
        let order = match (before.get(b), after.get(a)) {
            (Some(x), Some(y)) => x.0.cmp(&y.0),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match order {
            Ordering::Less => {
                change
                    .deleted
                    .push(previous.record(before[b].1).to_record());
                b += 1;
            }
            Ordering::Greater => {
                change.added.push(new[after[a].1].clone());
                a += 1;
            }
            Ordering::Equal => {
                b += 1;
                a += 1;
            }
        }
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests;
