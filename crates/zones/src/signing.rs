//! Zones signed as they are loaded (issue 24; docs/decisions/0014): the
//! policies of `dnssec.policies`, which zones name one, and the signing
//! of a zone's records with its keys ([`crate::keys`]) before the zone is
//! built.
//!
//! This slice signs a zone whole each time its file is loaded, on the
//! thread that loads it (start, or the reload thread), never on a core,
//! and again, whole, `rrsig-refresh` before its signatures expire
//! ([`crate::resign`]) and at each step of a key rollover
//! ([`crate::rollover`]). Incremental signing and re-signing spread over
//! time are later slices.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rand::Rng as _;
use tern_dnssec::{sign_zone_with, Denial, Nsec3Params, SignOptions, SignedZone, Validity};
use tern_wire::name::Name;
use tern_wire::types::RType;
use tern_zone::RecordList;

use crate::keys;
pub use crate::policy::{CdsCdnskey, Nsec3Policy, ParentCheck, Policy};
use crate::rollover::{self, Timing};

/// How long before "now" signatures start to be valid (BIND's choice;
/// docs/decisions/0014): clocks of validators running a little behind
/// still accept them.
pub const INCEPTION_BACKDATE: u64 = 3600;

//----------- Signing --------------------------------------------------------

/// The signing configuration as the loader takes it: where keys live and
/// which zone (of those loaded from files) is signed with which policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signing {
    /// The state directory, where keys live (`STATE/keys`).
    pub state_directory: PathBuf,
    /// Threads that sign (parsed; this slice signs on the loading thread).
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
/// again: its signatures' expiration (they all expire together in this
/// slice) less `rrsig-refresh`.
pub fn resign_due(policy: &Policy, now: u64) -> u64 {
    now.saturating_add(policy.rrsig_lifetime)
        .saturating_sub(policy.rrsig_refresh)
}

/// A zone signed by [`sign`], and what its keys call for next.
#[derive(Debug)]
pub struct Signed {
    /// The signed zone.
    pub zone: SignedZone,
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

/// Signs the zone `origin` made of `records` (each RRset's TTL settled)
/// under `policy` at Unix time `now`, with its keys from `state_directory`
/// (generated on its first signing) as their rollover times have them at
/// `now`, after the steps due ([`crate::rollover::step`]). With
/// `serial_above` (the serial served now), the signed serial is higher
/// than it (the file's if that is higher, else one more:
/// `tern_dnssec::SignOptions::serial_above`). Errors name the zone's key
/// file or the signer's reason.
pub fn sign<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    policy: &Policy,
    state_directory: &Path,
    now: u64,
    serial_above: Option<u32>,
) -> Result<Signed, String> {
    let timing = timing(origin, records, policy);
    let stored = {
        let _lock = keys::lock();
        let stored = keys::load_or_generate(
            state_directory,
            origin,
            policy.algorithm,
            policy.key_size,
            policy.keys,
            now,
        )?;
        let dir = keys::key_dir(state_directory, origin);
        let (stored, notes) = rollover::step(&dir, stored, policy, timing, now)?;
        for note in notes {
            log::info!("zone {origin}: {note}");
        }
        stored
    };
    let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
    let next_key_event = rollover::next_event(&metas, policy, now);
    let awaiting_ds = !rollover::awaiting_ds(&metas, now).is_empty();
    let keys = rollover::key_set(&stored, policy, now);
    let validity = Validity::new(
        now.saturating_sub(INCEPTION_BACKDATE),
        now.saturating_add(policy.rrsig_lifetime),
    )
    .ok_or_else(|| {
        format!(
            "signatures from {now} for {} s do not fit the RRSIG time fields",
            policy.rrsig_lifetime
        )
    })?;
    let denial = match &policy.nsec3 {
        None => Denial::Nsec,
        Some(nsec3) => {
            let mut salt = vec![0; usize::from(nsec3.salt_length)];
            rand::rng().fill(&mut salt[..]);
            Denial::Nsec3(Nsec3Params {
                iterations: nsec3.iterations,
                salt,
                opt_out: nsec3.opt_out,
            })
        }
    };
    let options = SignOptions {
        validity,
        dnskey_ttl: policy.dnskey_ttl,
        denial,
        serial_above,
    };
    let zone = sign_zone_with(origin, records, &keys, &options)
        .map_err(|err| format!("signing: {err}"))?;
    Ok(Signed {
        zone,
        next_key_event,
        awaiting_ds,
    })
}
