//! Zones signed as they are loaded (issue 24; docs/decisions/0014): the
//! policies of `dnssec.policies`, which zones name one, and the signing
//! of a zone's records with its keys ([`crate::keys`]) before the zone is
//! built.
//!
//! A zone is signed by the thread that loads it (start, or the reload
//! thread), never on a core: whole when it has no signed version yet
//! ([`sign`]; the loader streams it on `dnssec.signing-threads` threads,
//! [`sign_into`]), else from its previous signed version, signing only what
//! changed, what its keys' changes call for and the signatures due for
//! refresh ([`sign_again`]). It is loaded again when its first signature
//! is due ([`crate::resign`], [`next_resign`]): `rrsig-refresh` before its
//! expiration, less a share of `rrsig-jitter`, so that a zone's signatures
//! are refreshed in batches spread over the jitter; and at each step of a
//! key rollover ([`crate::rollover`]), whichever comes first. Either
//! signing takes the rollover steps due and signs with the key set they
//! leave ([`crate::rollover::key_set`]): a key that stops signing leaves
//! no signature behind, one that starts signing signs every RRset it is
//! for at that step.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::Rng as _;
use tern_authority::{RecordCursor, Zone};
use tern_dnssec::{
    resign_zone, sign_zone_into, sign_zone_with, Denial, KeySet, Nsec3Params, Refresh, Resigned,
    SignError, SignOptions, SignStats, SignedZone, Validity,
};
use tern_wire::name::Name;
use tern_wire::types::{RClass, RType};
use tern_zone::{RecordList, Records, Sink};

use crate::keys;
use crate::policy::signer_serial_above;
pub use crate::policy::{
    CdsCdnskey, Nsec3Policy, ParentCheck, Policy, SerialPolicy, DEFAULT_RRSIG_JITTER,
};
use crate::rollover::{self, Timing};

/// How long before "now" signatures start to be valid (BIND's choice;
/// docs/decisions/0014): clocks of validators running a little behind
/// still accept them.
pub const INCEPTION_BACKDATE: u64 = 3600;

//----------- Records of a version ------------------------------------------

/// Every record of a served version, compact, in its walk's order (the
/// apex's records first): the records a signing starts from when the
/// signer's own are not at hand (a received zone to sign, a served
/// version to sign an update on).
pub(crate) fn served_records(zone: &Zone) -> Result<Records, String> {
    let mut records = Records::new();
    Sink::reserve(&mut records, zone.record_count());
    let mut cursor = RecordCursor::default();
    while let Some(record) = zone.next_record(&mut cursor) {
        Sink::record(&mut records, record_ref(&record)).map_err(str::to_string)?;
    }
    Ok(records)
}

/// The serial of the apex SOA among `records`, which list the apex's
/// records first (the signer's canonical order, a served version's walk):
/// only those are read.
pub(crate) fn apex_serial<R: RecordList + ?Sized>(origin: Name<'_>, records: &R) -> Option<u32> {
    let rdata = (0..records.len())
        .map(|index| records.record(index))
        .take_while(|record| record.owner.eq_ignore_case(origin))
        .find(|record| record.rtype == RType::SOA)?
        .rdata;
    let at = rdata.len().checked_sub(20)?;
    Some(u32::from_be_bytes(rdata.get(at..at + 4)?.try_into().ok()?))
}

//----------- Signing --------------------------------------------------------

/// The signing configuration as the loader takes it: where keys live and
/// which zone (of those loaded from files) is signed with which policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signing {
    /// The state directory, where keys live (`STATE/keys`).
    pub state_directory: PathBuf,
    /// Threads that sign one zone signed whole (`dnssec.signing-threads`),
    /// started by the thread that loads it, not pinned to a serving core.
    pub threads: usize,
    /// The policy of each signed zone, by lowercased wire origin.
    pub zones: hashbrown::HashMap<Box<[u8]>, Arc<Policy>>,
}

impl Signing {
    /// Keys under `state_directory`, signing on `threads` threads, and
    /// each zone (lowercased wire origin) with its policy.
    pub fn new(
        state_directory: PathBuf,
        threads: usize,
        zones: Vec<(Box<[u8]>, Arc<Policy>)>,
    ) -> Signing {
        Signing {
            state_directory,
            threads,
            zones: zones.into_iter().collect(),
        }
    }

    /// The policy of the zone `origin` (lowercased wire form), if signed.
    pub fn policy(&self, origin: &[u8]) -> Option<&Policy> {
        self.zones.get(origin).map(|policy| &**policy)
    }

    /// [`Signing::policy`], shared.
    pub fn shared_policy(&self, origin: &[u8]) -> Option<&Arc<Policy>> {
        self.zones.get(origin)
    }
}

/// When a zone signed under `policy` at Unix time `now` must be signed
/// again at the latest: the expiration of the signatures made at `now`
/// less `rrsig-refresh` ([`next_resign`]'s time when no signature reads).
pub fn resign_due(policy: &Policy, now: u64) -> u64 {
    now.saturating_add(policy.rrsig_lifetime)
        .saturating_sub(policy.rrsig_refresh)
}

/// A zone signed by [`sign`] (or, as a [`Resigned`], by [`sign_again`]),
/// and what its keys call for next.
#[derive(Debug)]
pub struct Signed<Z = SignedZone> {
    /// The signed zone.
    pub zone: Z,
    /// When a key's next step is due ([`crate::rollover::next_event`]).
    pub next_key_event: Option<u64>,
    /// Whether a KSK's or CSK's DS is awaited at the parent.
    pub awaiting_ds: bool,
}

/// The DNSKEY TTL (the policy's, else the SOA's) and the highest TTL of
/// `records` (and of the DNSKEY RRset): what a rollover waits for.
fn timing<R: RecordList + ?Sized>(origin: Name<'_>, records: &R, policy: &Policy) -> Timing {
    let mut soa_ttl = None;
    let mut max_ttl = 0;
    for index in 0..records.len() {
        let record = records.record(index);
        max_ttl = max_ttl.max(record.ttl);
        if record.rtype == RType::SOA && record.owner.eq_ignore_case(origin) {
            soa_ttl = Some(record.ttl);
        }
    }
    let dnskey_ttl = policy.dnskey_ttl.or(soa_ttl).unwrap_or(0);
    Timing {
        dnskey_ttl: u64::from(dnskey_ttl),
        max_ttl: u64::from(max_ttl.max(dnskey_ttl)),
    }
}

/// A zone's keys after the rollover steps due, and what they call for
/// next.
struct Stepped {
    stored: Vec<keys::StoredKey>,
    next_key_event: Option<u64>,
    awaiting_ds: bool,
}

/// The keys of the zone `origin` made of `records` from `state_directory`
/// (generated on its first signing), after the rollover steps due at
/// `now` ([`crate::rollover::step`]), each logged.
fn step_keys<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
) -> Result<Stepped, String> {
    step_keys_reporting(origin, records, policy, state_directory, now, true)
}

/// [`step_keys`]; the zone's own DNSSEC records that are not its keys'
/// reported only with `report_foreign` (a signing of a few owners, none
/// of them DNSSEC records, has nothing new to report).
fn step_keys_reporting<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    report_foreign: bool,
) -> Result<Stepped, String> {
    let timing = timing(origin, records, policy);
    let stored = {
        let _lock = keys::lock();
        let stored = stored_keys(origin, policy, state_directory, now)?;
        let dir = keys::key_dir(state_directory, origin);
        let (stored, notes) = rollover::step(&dir, stored, policy, timing, now)?;
        for note in notes {
            log::info!("zone {origin}: {note}");
        }
        stored
    };
    crate::sign_status::keys_stepped(origin, &stored, policy, now);
    if report_foreign {
        crate::sign_status::report_foreign(origin, records, &stored);
    }
    Ok(Stepped::new(stored, policy, now))
}

/// The zone's keys from `state_directory` (generated on its first
/// signing), the clock checked against them; the caller holds
/// [`keys::lock`].
fn stored_keys(
    origin: Name<'_>,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
) -> Result<Vec<keys::StoredKey>, String> {
    let stored = keys::load_or_generate(
        state_directory,
        origin,
        policy.algorithm,
        policy.key_size,
        policy.keys,
        now,
    )?;
    crate::sign_status::check_clock(origin, &stored, now)?;
    Ok(stored)
}

impl Stepped {
    /// `stored` and what the keys call for next at `now`.
    fn new(stored: Vec<keys::StoredKey>, policy: &Policy, now: u64) -> Stepped {
        let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
        let next_key_event = rollover::next_event(&metas, policy, now);
        let awaiting_ds = !rollover::awaiting_ds(&metas, now).is_empty();
        Stepped {
            stored,
            next_key_event,
            awaiting_ds,
        }
    }
}

/// A zone's keys as stored, no rollover step taken: for a signing of part
/// of the zone ([`sign_window`]), whose records do not give the whole
/// zone's timing; its caller signs the whole zone when a step is due.
fn unstepped_keys(
    origin: Name<'_>,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
) -> Result<Stepped, String> {
    let stored = {
        let _lock = keys::lock();
        stored_keys(origin, policy, state_directory, now)?
    };
    Ok(Stepped::new(stored, policy, now))
}

/// The denial of existence of `policy`: NSEC, or NSEC3 with `salt` when
/// given, else a new random salt of the policy's length.
fn denial(policy: &Policy, salt: Option<Vec<u8>>) -> Denial {
    match &policy.nsec3 {
        None => Denial::Nsec,
        Some(nsec3) => Denial::Nsec3(Nsec3Params {
            iterations: nsec3.iterations,
            salt: salt.unwrap_or_else(|| {
                let mut salt = vec![0; usize::from(nsec3.salt_length)];
                rand::rng().fill(&mut salt[..]);
                salt
            }),
            opt_out: nsec3.opt_out,
        }),
    }
}

/// Signs the zone `origin` made of `records` (each RRset's TTL settled)
/// under `policy` at Unix time `now`, with its keys from `state_directory`
/// (generated on its first signing) as their rollover times have them at
/// `now`, after the steps due ([`crate::rollover::step`]). With
/// `serial_above` (the serial served now), the signed serial is higher
/// than it: the file's if that is higher, else the policy's
/// `serial-policy` ([`crate::policy::next_serial`]), which also applies
/// to a first signing. Errors name the zone's key
/// file or the signer's reason.
pub fn sign<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
) -> Result<Signed, String> {
    let stepped = step_keys(origin, records, policy, state_directory, now)?;
    let serial_above = signer_serial_above(origin, records, policy, serial_above, now);
    with_keys(
        origin,
        &stepped,
        policy,
        now,
        serial_above,
        None,
        |keys, options| sign_zone_with(origin, records, keys, options),
    )
}

/// [`sign`], on `threads` threads, handing the signed zone's records to
/// `sink` in canonical order as they are made rather than collecting
/// them (`tern_dnssec::sign_zone_into`): how the loader signs a zone that
/// has no signed version yet, and `tern sign` writes one, with only the
/// batches being signed held besides the input and what `sink` keeps.
#[allow(clippy::too_many_arguments)]
pub fn sign_into<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
    threads: usize,
    sink: &mut dyn Sink,
) -> Result<Signed<SignStats>, String> {
    let stepped = step_keys(origin, records, policy, state_directory, now)?;
    let serial_above = signer_serial_above(origin, records, policy, serial_above, now);
    with_keys(
        origin,
        &stepped,
        policy,
        now,
        serial_above,
        None,
        |keys, options| sign_zone_into(origin, records, keys, options, threads, sink),
    )
}

/// What `signing` makes with the key set of `stepped` and the options of
/// `policy` at `now` (NSEC3 with `salt` when given, else a new one), with
/// what the keys call for next.
fn with_keys<Z>(
    origin: Name<'_>,
    stepped: &Stepped,
    policy: &Policy,
    now: u64,
    serial_above: Option<u32>,
    salt: Option<Vec<u8>>,
    signing: impl FnOnce(&KeySet<'_>, &SignOptions) -> Result<Z, SignError>,
) -> Result<Signed<Z>, String> {
    let keys = rollover::key_set(&stepped.stored, policy, now);
    let options = SignOptions {
        validity: validity(policy, now)?,
        dnskey_ttl: policy.dnskey_ttl,
        denial: denial(policy, salt),
        serial_above,
    };
    let zone = signing(&keys, &options).map_err(|err| format!("signing: {err}"))?;
    // A salt's rotation is a key event: the zone is signed again then.
    let salt_rotation = match (&options.denial, &policy.nsec3) {
        (Denial::Nsec3(params), Some(nsec3)) => {
            crate::sign_status::salt_rotation_at(origin, nsec3, &params.salt, now)
        }
        _ => None,
    };
    Ok(Signed {
        zone,
        next_key_event: stepped
            .next_key_event
            .into_iter()
            .chain(salt_rotation)
            .min(),
        awaiting_ds: stepped.awaiting_ds,
    })
}

/// A refresh takes the signatures due within `rrsig-jitter` divided by
/// this after it: a zone's signatures are refreshed in about this many
/// batches (each a new version and an IXFR increment) over the jitter.
pub const RESIGN_BATCHES: u64 = 24;

/// [`sign_again`] of a window of an NSEC zone: `records` and `previous`
/// are the new and previous records of some of its owners (the apex
/// among them), as an update's signing takes them
/// (`update::signed`, docs/decisions/0015). The keys are taken as stored:
/// no rollover step (the caller signs the whole zone when one is due,
/// since a step's timing is the whole zone's). What comes out is what
/// [`sign_again`] makes of those owners, but for the NSEC records whose
/// next owner lies outside the window, which the caller takes from
/// `previous`.
pub(crate) fn sign_window<P: RecordList + ?Sized, R: RecordList + ?Sized>(
    origin: Name<'_>,
    previous: &P,
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
) -> Result<Signed<Resigned>, String> {
    if policy.nsec3.is_some() {
        return Err("a window of an NSEC3 zone is not signed apart".to_string());
    }
    let stepped = unstepped_keys(origin, policy, state_directory, now)?;
    let serial_above = signer_serial_above(origin, records, policy, serial_above, now);
    let refresh = refresh_of(policy, now);
    with_keys(
        origin,
        &stepped,
        policy,
        now,
        serial_above,
        None,
        |keys, options| resign_zone(origin, previous, records, keys, options, &refresh),
    )
}

/// When the signatures of a zone signed under `policy` are refreshed, at
/// Unix time `now`.
pub fn refresh_of(policy: &Policy, now: u64) -> Refresh {
    Refresh {
        now,
        refresh: policy.rrsig_refresh,
        jitter: policy.rrsig_jitter,
        window: policy.rrsig_jitter / RESIGN_BATCHES,
    }
}

/// When the zone signed under `policy` at `now` into `records` must be
/// signed again: its first signature due for refresh, else (no signature
/// read) [`resign_due`].
pub fn next_resign<R: RecordList + ?Sized>(policy: &Policy, now: u64, records: &R) -> u64 {
    tern_dnssec::next_refresh(records, &refresh_of(policy, now))
        .unwrap_or_else(|| resign_due(policy, now))
}

/// [`sign`], keeping what it can of `previous` (the zone's previous
/// signed version, in the order the signer made it): only the RRsets that
/// changed, their NSEC or NSEC3 neighbours, the SOA, the signatures due
/// for refresh and what the rollover steps due change (the RRsets of a
/// key that starts signing them, the DNSKEY, CDS and CDNSKEY RRsets) are
/// signed ([`tern_dnssec::resign_zone`], with the same key set as
/// [`sign`]). With NSEC3, the previous salt is kept when the policy's
/// length and iterations did not change (a new salt would change every
/// hashed owner) and it is younger than its `salt-lifetime`.
pub fn sign_again<P: RecordList + ?Sized, R: RecordList + ?Sized>(
    origin: Name<'_>,
    previous: &P,
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
) -> Result<Signed<Resigned>, String> {
    let started = std::time::Instant::now();
    let stepped = step_keys(origin, records, policy, state_directory, now)?;
    let serial_above = signer_serial_above(origin, records, policy, serial_above, now);
    let keys_stepped = started.elapsed();
    let salt = salt_kept(origin, previous, policy, now);
    let refresh = refresh_of(policy, now);
    let signed = with_keys(
        origin,
        &stepped,
        policy,
        now,
        serial_above,
        salt,
        |keys, options| resign_zone(origin, previous, records, keys, options, &refresh),
    );
    log::debug!(
        "zone {origin}: keys stepped in {} ms, signed again in {} ms",
        keys_stepped.as_millis(),
        (started.elapsed() - keys_stepped).as_millis()
    );
    signed
}

/// [`sign_again`], each signed record handed to `sink` as it is made
/// ([`tern_dnssec::resign_zone_into`]) rather than collected, and no
/// difference computed: a start from the zone's saved signed copy, whose
/// records a whole signing's would otherwise be held beside.
#[allow(clippy::too_many_arguments)]
pub fn sign_again_into<P: RecordList + ?Sized, R: RecordList + ?Sized>(
    origin: Name<'_>,
    previous: &P,
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
    sink: &mut dyn Sink,
) -> Result<Signed<tern_dnssec::ResignStats>, String> {
    let stepped = step_keys(origin, records, policy, state_directory, now)?;
    let serial_above = signer_serial_above(origin, records, policy, serial_above, now);
    let salt = salt_kept(origin, previous, policy, now);
    let refresh = refresh_of(policy, now);
    with_keys(
        origin,
        &stepped,
        policy,
        now,
        serial_above,
        salt,
        |keys, options| {
            tern_dnssec::resign_zone_into(origin, previous, records, keys, options, &refresh, sink)
        },
    )
}

/// The zone's keys' metadata as a signing under `policy` at `now` leaves
/// them (after the rollover steps due): with the same metadata, and
/// before their next event, a later signing has the same key set.
pub(crate) type KeyState = Vec<keys::KeyMeta>;

/// [`sign_again`] for the few owners an edit changed (`edits`, the apex
/// among them; `apex` the previous version's apex records): only they
/// are signed ([`tern_dnssec::resign_owners`]), if the keys' metadata
/// after the steps due is `key_state` (the previous signing's: the same
/// key set signs) and the zone is signed with NSEC. `Ok(None)`: not so,
/// or the edits are not for this; the caller signs the zone again from
/// its previous version.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sign_owners<R: RecordList + ?Sized>(
    origin: Name<'_>,
    apex: &[tern_zone::RecordRef<'_>],
    edits: &[tern_dnssec::OwnerEdit<'_>],
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
    key_state: &KeyState,
) -> Result<Option<Signed<tern_dnssec::OwnersResigned>>, String> {
    if policy.nsec3.is_some() {
        return Ok(None);
    }
    let stepped = step_keys_reporting(origin, records, policy, state_directory, now, false)?;
    // The same keys, in whatever order they were read.
    let same = stepped.stored.len() == key_state.len()
        && stepped
            .stored
            .iter()
            .all(|key| key_state.contains(&key.meta));
    if !same {
        return Ok(None);
    }
    let serial_above = signer_serial_above(origin, records, policy, serial_above, now);
    let refresh = refresh_of(policy, now);
    let signed = with_keys(
        origin,
        &stepped,
        policy,
        now,
        serial_above,
        None,
        |keys, options| tern_dnssec::resign_owners(origin, apex, edits, keys, options, &refresh),
    )?;
    let Some(zone) = signed.zone else {
        return Ok(None);
    };
    Ok(Some(Signed {
        zone,
        next_key_event: signed.next_key_event,
        awaiting_ds: signed.awaiting_ds,
    }))
}

/// [`sign_window`] for a zone signed with NSEC3 (the links of an opt-out
/// chain chosen by the caller, `links`): the
/// owners `edits` (the apex among them; `glue` tells which lie below a
/// zone cut) signed through [`tern_dnssec::resign_owners_nsec3`], then the
/// chain's links that `links` makes of them (each owner's records signed,
/// and the chain's parameters) through
/// [`tern_dnssec::resign_nsec3_links`], with the keys as stored and the
/// salt `salt` of the served chain. `Ok(None)`: not for this (the policy's
/// NSEC3 differs from the served chain's: a new salt or iterations; or
/// `links` says no), the caller signs the zone whole.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sign_nsec3_window<'e, R: RecordList + ?Sized>(
    origin: Name<'_>,
    apex: &[tern_zone::RecordRef<'_>],
    edits: &[tern_dnssec::OwnerEdit<'_>],
    glue: &[bool],
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
    salt: &[u8],
    links: impl FnOnce(
        &tern_dnssec::OwnersResigned,
        &Nsec3Params,
    ) -> Result<Option<Vec<tern_dnssec::Nsec3Link<'e>>>, String>,
) -> Result<Option<Signed<(tern_dnssec::OwnersResigned, tern_dnssec::OwnersResigned)>>, String> {
    if policy.nsec3.is_none() {
        return Ok(None);
    }
    let apex_list: Vec<tern_zone::Record> = apex.iter().map(|record| record.to_record()).collect();
    if salt_kept(origin, &apex_list, policy, now).as_deref() != Some(salt) {
        return Ok(None);
    }
    let stepped = unstepped_keys(origin, policy, state_directory, now)?;
    let serial_above = signer_serial_above(origin, records, policy, serial_above, now);
    let refresh = refresh_of(policy, now);
    let mut failure: Option<String> = None;
    let signed = with_keys(
        origin,
        &stepped,
        policy,
        now,
        serial_above,
        Some(salt.to_vec()),
        |keys, options| {
            let Denial::Nsec3(params) = &options.denial else {
                return Ok(None);
            };
            let Some(owners) = tern_dnssec::resign_owners_nsec3(
                origin, apex, edits, glue, keys, options, &refresh,
            )?
            else {
                return Ok(None);
            };
            let made = match links(&owners, params) {
                Ok(Some(made)) => made,
                Ok(None) => return Ok(None),
                Err(err) => {
                    failure = Some(err);
                    return Ok(None);
                }
            };
            let chain =
                tern_dnssec::resign_nsec3_links(origin, apex, &made, keys, options, &refresh)?;
            Ok(chain.map(|chain| (owners, chain)))
        },
    )?;
    if let Some(err) = failure {
        return Err(err);
    }
    let Some(zone) = signed.zone else {
        return Ok(None);
    };
    Ok(Some(Signed {
        zone,
        next_key_event: signed.next_key_event,
        awaiting_ds: signed.awaiting_ds,
    }))
}

/// The keys' metadata of the zone `origin` as they are in
/// `state_directory` now (what the signing just made left), for
/// [`sign_owners`]' check; `None` when they do not read (the next signing
/// is then not one of a few owners).
pub(crate) fn key_state(origin: Name<'_>, state_directory: &Path) -> Option<KeyState> {
    let _lock = keys::lock();
    let stored = keys::read_keys(&keys::key_dir(state_directory, origin)).ok()?;
    Some(stored.into_iter().map(|key| key.meta).collect())
}

/// The signatures' validity for a signing under `policy` at `now`.
fn validity(policy: &Policy, now: u64) -> Result<Validity, String> {
    Validity::new(
        now.saturating_sub(INCEPTION_BACKDATE),
        now.saturating_add(policy.rrsig_lifetime),
    )
    .ok_or_else(|| {
        format!(
            "signatures from {now} for {} s do not fit the RRSIG time fields",
            policy.rrsig_lifetime
        )
    })
}

/// The NSEC3 salt of `previous` that a signing at `now` keeps: `None`
/// (a new salt, the chain made again) without NSEC3, when the policy's
/// length or iterations changed, or past its `salt-lifetime`.
fn salt_kept<P: RecordList + ?Sized>(
    origin: Name<'_>,
    previous: &P,
    policy: &Policy,
    now: u64,
) -> Option<Vec<u8>> {
    let nsec3 = policy.nsec3.as_ref()?;
    previous_salt(origin, previous, nsec3).filter(|salt| {
        crate::sign_status::salt_rotation_at(origin, nsec3, salt, now).is_none_or(|at| at > now)
    })
}

/// The salt of the previous version's NSEC3PARAM (at the apex, first in
/// canonical order), if it has the iterations and salt length `nsec3`
/// asks for. Bound: the apex's records.
fn previous_salt<P: RecordList + ?Sized>(
    origin: Name<'_>,
    previous: &P,
    nsec3: &Nsec3Policy,
) -> Option<Vec<u8>> {
    let rdata = (0..previous.len())
        .map(|index| previous.record(index))
        .take_while(|record| record.owner.eq_ignore_case(origin))
        .find(|record| record.rtype == RType::NSEC3PARAM)?
        .rdata;
    // Algorithm, flags, iterations (2 octets), salt length, salt.
    let iterations = u16::from_be_bytes([*rdata.get(2)?, *rdata.get(3)?]);
    let salt = rdata.get(5..)?;
    (iterations == nsec3.iterations
        && salt.len() == usize::from(nsec3.salt_length)
        && usize::from(*rdata.get(4)?) == salt.len())
    .then(|| salt.to_vec())
}

/// A served record as the zone-file reader's borrowed form (class IN, no
/// location), for the signer and the printer.
pub(crate) fn record_ref<'z>(record: &tern_authority::ZoneRecord<'z>) -> tern_zone::RecordRef<'z> {
    tern_zone::RecordRef {
        owner: record.owner,
        class: RClass::IN,
        ttl: record.ttl,
        rtype: record.rtype,
        rdata: record.rdata,
        location: tern_zone::Location::default(),
    }
}
