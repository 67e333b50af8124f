//! Key rollovers (issue 24; RFC 7583; docs/decisions/0014): which of a
//! zone's keys are published and which sign what at a given time, the
//! steps of a rollover and when the next one is due.
//!
//! Every step is a time in a key's metadata file ([`crate::keys::KeyMeta`],
//! RFC 7583's names), written before it takes effect; what the zone
//! publishes and who signs follow from those times and "now" alone
//! ([`key_use`]), so a restart at any step resumes where the files say,
//! never generating a key or starting a rollover the files do not call
//! for. A rollover starts by publishing a successor ([`start`]: the old
//! key names it in `successor`, the new key gets `published`); the
//! loader, which knows the zone's TTLs, then plans the rest ([`advance`]):
//!
//! - **ZSK, pre-publication** (RFC 7583 section 3.2.1): the new key is
//!   published at P and signs from P + Ipub (Ipub = `propagation-delay` +
//!   the DNSKEY TTL); the old key stops signing then and its DNSKEY is
//!   removed Iret later (`propagation-delay` + the zone's highest TTL: the
//!   new key signs every RRset at the step that makes it a signer, the
//!   incremental signer having none of its signatures to keep, so RFC
//!   7583's Dsgn is 0).
//! - **KSK, double-KSK** (RFC 7583 section 3.3.1): the new key is
//!   published and signs the DNSKEY RRset from P, beside the old one; its
//!   DS is submitted at P + Ipub (CDS and CDNSKEY name it from then); once
//!   the parent's DS set is seen to include it (at D, by the parent check
//!   or `tern keys ds-seen`) the old key is retired and removed at D +
//!   `propagation-delay` + the parent's DS TTL. Both KSKs sign the DNSKEY
//!   RRset throughout, so a resolver holding either DS validates it.
//! - **CSK**: both at once: the new key signs the DNSKEY RRset from P and
//!   the zone from P + Ipub, when the old one stops signing the zone and
//!   its DS is submitted; the old key keeps signing the DNSKEY RRset until
//!   it is removed, the later of the KSK's and the ZSK's removal times.
//!
//! - **Algorithm** (RFC 6781 section 4.1.4, RFC 7583 section 3.4.1; a
//!   policy's algorithm changed, or its `keys` switched between `csk` and
//!   `ksk-zsk`): the whole key set is replaced ([`policy_change`],
//!   `begin_key_set`, `advance_key_set`): the new keys sign every RRset
//!   unpublished from A, are published at A + `propagation-delay` + the
//!   zone's highest TTL, their DS submitted Ipub later; once it is seen
//!   (D) the old keys are retired, their DNSKEYs withdrawn at D +
//!   `propagation-delay` + the DS TTL while they still sign, and they are
//!   removed with their signatures Ipub after that. The keys carry
//!   `key-set-rollover: old|new` meanwhile ([`keys::RolloverSide`]).
//!
//! One rollover at a time per zone: a key with a `successor` not yet
//! removed (or a key of an algorithm rollover) is one in progress. A key
//! removed is deleted from the key directory at the next signing. Lifetimes (`zsk-lifetime`,
//! `ksk-lifetime` for KSKs and CSKs; 0: never) count from a key's
//! `active` time.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tern_dnssec::{KeyRole, KeySet, SigningKey, ZoneKey};
use tern_wire::name::NameBuf;

use crate::keys::{self, RolloverSide, StoredKey};
use crate::policy::{CdsCdnskey, Policy};

/// The zone's TTLs a rollover waits for, as the loader reads them at a
/// signing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// The DNSKEY RRset's TTL.
    pub dnskey_ttl: u64,
    /// The highest TTL of any RRset of the zone (its signatures' too).
    pub max_ttl: u64,
}

/// A signed zone's keys as its last signing left them: where they are,
/// under which policy, and what is due next (the `tern-resign` thread's
/// key events and parent checks, the control socket's `tern keys`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneKeys {
    /// The zone.
    pub origin: NameBuf,
    /// Its key directory.
    pub dir: PathBuf,
    /// Its policy.
    pub policy: Arc<Policy>,
    /// When a key's next step is due.
    pub next_event: Option<u64>,
    /// Whether a KSK's or CSK's DS is awaited at the parent.
    pub awaiting_ds: bool,
}

//----------- what each key does now -----------------------------------------

/// What one key does at a given time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyUse {
    /// Its DNSKEY is published.
    pub published: bool,
    /// It signs the apex's DNSKEY, CDS and CDNSKEY RRsets.
    pub signs_keys: bool,
    /// It signs the other RRsets.
    pub signs_zone: bool,
    /// Its CDS and CDNSKEY are published.
    pub cds: bool,
}

fn at_or_before(time: Option<u64>, now: u64) -> bool {
    time.is_some_and(|time| time <= now)
}

/// What the key of `meta` does at `now` under the policy's `cds`.
///
/// An algorithm (or key-set) rollover's keys differ (RFC 6781 section
/// 4.1.4): a new key signs from its `active` time, before its DNSKEY is
/// published; an old key keeps signing until it is `removed`, after its
/// DNSKEY is `withdrawn` and after it is `retired` (its DS no longer
/// needed).
pub fn key_use(meta: &keys::KeyMeta, cds: CdsCdnskey, now: u64) -> KeyUse {
    let gone = at_or_before(meta.removed, now);
    let published =
        at_or_before(meta.published, now) && !at_or_before(meta.withdrawn, now) && !gone;
    let presigning =
        meta.key_set_rollover == Some(RolloverSide::New) && at_or_before(meta.active, now);
    let live = (at_or_before(meta.published, now) || presigning) && !gone;
    let signs_until_removed = meta.key_set_rollover == Some(RolloverSide::Old);
    let signs_keys = live && meta.role.signs_keys();
    let signs_zone = live
        && meta.role.signs_zone()
        && at_or_before(meta.active, now)
        && (signs_until_removed || !at_or_before(meta.retired, now));
    let submitted = at_or_before(meta.ds_published, now);
    let cds = published
        && meta.role.signs_keys()
        && match cds {
            CdsCdnskey::None => false,
            // While the parent has not been seen to take it.
            CdsCdnskey::Rollover => {
                submitted && meta.ds_seen.is_none() && !at_or_before(meta.retired, now)
            }
            // Every key the DS set should name: submitted (or from
            // before submissions were recorded) and not retired.
            CdsCdnskey::Always => {
                (submitted || meta.ds_published.is_none())
                    && at_or_before(meta.active, now)
                    && !at_or_before(meta.retired, now)
            }
        };
    KeyUse {
        published,
        signs_keys,
        signs_zone,
        cds,
    }
}

/// The key set to sign with at `now`: every key published or signing,
/// with what it does, and the CDS and CDNSKEY to publish (`None` under
/// `cds-cdnskey: none`: the zone file's are kept).
pub fn key_set<'k>(stored: &'k [StoredKey], policy: &Policy, now: u64) -> KeySet<'k> {
    let mut set = KeySet {
        keys: Vec::with_capacity(stored.len()),
        cds: (policy.cds_cdnskey != CdsCdnskey::None).then(Vec::new),
    };
    for key in stored {
        let used = key_use(&key.meta, policy.cds_cdnskey, now);
        if !(used.published || used.signs_keys || used.signs_zone) {
            continue;
        }
        set.keys.push(ZoneKey {
            key: &key.key,
            published: used.published,
            signs_keys: used.signs_keys,
            signs_zone: used.signs_zone,
        });
        if used.cds {
            if let Some(cds) = &mut set.cds {
                cds.push(&key.key);
            }
        }
    }
    set
}

//----------- rollovers -------------------------------------------------------

/// Whether two roles are rolled together (a CSK replaces a CSK; a KSK a
/// KSK; a ZSK a ZSK).
fn same_kind(a: KeyRole, b: KeyRole) -> bool {
    a == b
}

/// The lifetime of a key of `role` under `policy` (0: never rolled):
/// `zsk-lifetime` for a ZSK, `ksk-lifetime` for a KSK or CSK (its DS is
/// at the parent: rolling it involves the parent).
pub fn lifetime(policy: &Policy, role: KeyRole) -> u64 {
    match role {
        KeyRole::Zsk => policy.zsk_lifetime,
        KeyRole::Ksk | KeyRole::Csk => policy.ksk_lifetime,
    }
}

/// The rollover in progress, if any: the index of the outgoing key (a
/// successor named, not yet removed at `now`), or of an algorithm
/// rollover's new key whose start was interrupted before the old keys
/// were marked.
pub fn in_progress(metas: &[&keys::KeyMeta], now: u64) -> Option<usize> {
    let live = |meta: &&&keys::KeyMeta| !at_or_before(meta.removed, now);
    metas
        .iter()
        .position(|meta| live(&meta) && meta.successor.is_some())
        .or_else(|| {
            metas
                .iter()
                .position(|meta| live(&meta) && meta.key_set_rollover.is_some())
        })
}

/// The key of `role` in use at `now`: active, not retired, not being
/// replaced; the oldest if several.
fn current(metas: &[&keys::KeyMeta], role: KeyRole, now: u64) -> Option<usize> {
    metas
        .iter()
        .enumerate()
        .filter(|(_, meta)| {
            meta.role == role
                && at_or_before(meta.published, now)
                && at_or_before(meta.active, now)
                && !at_or_before(meta.retired, now)
                && meta.removed.is_none()
                && meta.successor.is_none()
        })
        .min_by_key(|(_, meta)| (meta.active, meta.key_tag))
        .map(|(index, _)| index)
}

/// A standby key of `role`: generated, never published, in no rollover.
fn standby(metas: &[&keys::KeyMeta], role: KeyRole) -> Option<usize> {
    metas.iter().position(|meta| {
        meta.role == role && meta.published.is_none() && meta.key_set_rollover.is_none()
    })
}

/// The algorithm of a new key replacing the key of `old` in a rollover of
/// one role: its own. One role's key of a new algorithm beside the
/// other's of the old (a ZSK by pre-publication, say) would publish a
/// DNSKEY RRset of two algorithms with RRsets signed by one, which RFC
/// 4035 section 2.2 forbids and validators that check it find bogus: a
/// policy whose algorithm changed is met by an algorithm rollover of the
/// whole key set instead ([`policy_change`]).
fn successor_algorithm(old: &keys::KeyMeta) -> tern_dnssec::Algorithm {
    old.algorithm
}

/// The algorithm of the zone's keys in use at `now` (the oldest active
/// one's), if any: what a standby key is made with.
fn zone_algorithm(metas: &[&keys::KeyMeta], now: u64) -> Option<tern_dnssec::Algorithm> {
    [KeyRole::Csk, KeyRole::Ksk, KeyRole::Zsk]
        .iter()
        .find_map(|&role| current(metas, role, now))
        .map(|index| metas[index].algorithm)
}

/// Why the zone's keys in use at `now` are not what `policy` asks for (an
/// algorithm, or CSK against KSK and ZSK), when no rollover is in
/// progress: the cause of an algorithm (key-set) rollover. `None` when
/// they are, or when the zone has no key in use.
pub fn policy_change(metas: &[&keys::KeyMeta], policy: &Policy, now: u64) -> Option<String> {
    if in_progress(metas, now).is_some() {
        return None;
    }
    let in_use: Vec<&keys::KeyMeta> = metas
        .iter()
        .copied()
        .filter(|meta| {
            let used = key_use(meta, CdsCdnskey::None, now);
            used.published && (used.signs_keys || used.signs_zone)
        })
        .collect();
    if in_use.is_empty() {
        return None;
    }
    if let Some(key) = in_use
        .iter()
        .find(|meta| meta.algorithm != policy.algorithm)
    {
        return Some(format!(
            "policy {} names {}, key {} is {}",
            policy.name,
            keys::algorithm_name(policy.algorithm),
            key.key_tag,
            keys::algorithm_name(key.algorithm)
        ));
    }
    let roles = policy.keys.roles();
    let mismatch = in_use.iter().any(|meta| !roles.contains(&meta.role))
        || roles
            .iter()
            .any(|role| !in_use.iter().any(|meta| meta.role == *role));
    mismatch.then(|| {
        format!(
            "policy {} has keys: {}, the zone's keys in use are {}",
            policy.name,
            scheme_name(policy.keys),
            in_use
                .iter()
                .map(|meta| format!("{} {}", keys::role_text(meta.role), meta.key_tag))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

fn scheme_name(scheme: keys::KeyScheme) -> &'static str {
    match scheme {
        keys::KeyScheme::Csk => "csk",
        keys::KeyScheme::KskZsk => "ksk-zsk",
    }
}

/// The role whose lifetime is over at `now` (the earliest due), when no
/// rollover is in progress.
pub fn due_by_lifetime(metas: &[&keys::KeyMeta], policy: &Policy, now: u64) -> Option<KeyRole> {
    if in_progress(metas, now).is_some() {
        return None;
    }
    lifetime_ends(metas, policy, now)
        .filter(|&(due, _)| due <= now)
        .min_by_key(|(due, _)| *due)
        .map(|(_, role)| role)
}

/// When each role's current key reaches the end of its lifetime, for the
/// roles whose lifetime is not 0 (never rolled).
fn lifetime_ends<'a>(
    metas: &'a [&keys::KeyMeta],
    policy: &'a Policy,
    now: u64,
) -> impl Iterator<Item = (u64, KeyRole)> + 'a {
    policy.keys.roles().iter().filter_map(move |&role| {
        let lifetime = lifetime(policy, role);
        let key = metas[current(metas, role, now)?];
        let due = key.active?.checked_add(lifetime)?;
        (lifetime > 0).then_some((due, role))
    })
}

/// The outcome of [`advance`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Advanced {
    /// The indices of the keys whose metadata changed.
    pub changed: Vec<usize>,
    /// The indices of the keys removed by `now`, to delete.
    pub removed: Vec<usize>,
    /// A rollover to start now (a lifetime is over), of this role.
    pub start: Option<KeyRole>,
    /// What is worth a line in the log.
    pub notes: Vec<String>,
}

/// Plans the steps the metadata calls for at `now` with the zone's
/// `timing` (see the module documentation): the times of a rollover
/// started since the last signing, the old key's retirement and removal
/// once its successor's DS was seen; the keys removed by now; and
/// whether a lifetime is over. Idempotent: a time once written is kept.
pub fn advance(metas: &mut [keys::KeyMeta], policy: &Policy, timing: Timing, now: u64) -> Advanced {
    let mut out = Advanced::default();
    let delay = policy.propagation_delay;
    let publish_interval = delay.saturating_add(timing.dnskey_ttl);
    let zone_retire_interval = delay.saturating_add(timing.max_ttl);
    for old in 0..metas.len() {
        let Some(tag) = metas[old].successor else {
            continue;
        };
        if at_or_before(metas[old].removed, now) || metas[old].key_set_rollover.is_some() {
            continue;
        }
        let new = metas
            .iter()
            .position(|meta| meta.key_tag == tag && same_kind(meta.role, metas[old].role));
        let Some(new) = new.filter(|&new| new != old) else {
            out.notes.push(format!(
                "key {} names its successor {tag}, which is not in the key directory: the \
                 rollover is abandoned",
                metas[old].key_tag
            ));
            metas[old].successor = None;
            out.changed.push(old);
            continue;
        };
        let before = (metas[old].clone(), metas[new].clone());
        // An interrupted start: the old key names a successor never
        // published.
        let published = *metas[new].published.get_or_insert(now);
        let ready = published.saturating_add(publish_interval);
        match metas[new].role {
            KeyRole::Zsk => {
                let active = *metas[new].active.get_or_insert(ready);
                let retired = *metas[old].retired.get_or_insert(active);
                metas[old]
                    .removed
                    .get_or_insert(retired.saturating_add(zone_retire_interval));
            }
            KeyRole::Ksk => {
                metas[new].active.get_or_insert(published);
                metas[new].ds_published.get_or_insert(ready);
                if let Some(seen) = metas[new].ds_seen {
                    let ds_ttl = ds_ttl(&metas[new], policy);
                    let retired = *metas[old].retired.get_or_insert(seen);
                    metas[old]
                        .removed
                        .get_or_insert(retired.saturating_add(delay).saturating_add(ds_ttl));
                }
            }
            KeyRole::Csk => {
                let active = *metas[new].active.get_or_insert(ready);
                metas[new].ds_published.get_or_insert(ready);
                let retired = *metas[old].retired.get_or_insert(active);
                if let Some(seen) = metas[new].ds_seen {
                    let ds_ttl = ds_ttl(&metas[new], policy);
                    let by_parent = seen.saturating_add(delay).saturating_add(ds_ttl);
                    let by_zone = retired.saturating_add(zone_retire_interval);
                    metas[old].removed.get_or_insert(by_parent.max(by_zone));
                }
            }
        }
        if metas[old] != before.0 {
            out.changed.push(old);
        }
        if metas[new] != before.1 {
            out.changed.push(new);
        }
    }
    advance_key_set(metas, policy, timing, now, &mut out);
    out.removed = (0..metas.len())
        .filter(|&index| at_or_before(metas[index].removed, now))
        .collect();
    let views: Vec<&keys::KeyMeta> = metas.iter().collect();
    out.start = due_by_lifetime(&views, policy, now);
    out.changed.sort_unstable();
    out.changed.dedup();
    out
}

/// Plans an algorithm (key-set) rollover (RFC 6781 section 4.1.4, RFC
/// 7583 section 3.4.1), the conservative order, each step once its
/// predecessor's data has left every cache:
///
/// 1. at the start (A, the new keys' `active`) the new keys sign every
///    RRset (the DNSKEY RRset too) beside the old ones, their DNSKEYs not
///    published;
/// 2. at A + `propagation-delay` + the zone's highest TTL (no cache holds
///    an RRset without the new algorithm's signature) their DNSKEYs are
///    published;
/// 3. `propagation-delay` + the DNSKEY TTL later the new KSK's or CSK's
///    DS is submitted (CDS, CDNSKEY);
/// 4. once it is seen at the parent (D), the old keys are retired (their
///    DS no longer named in CDS) and, at D + `propagation-delay` + the DS
///    TTL (no cache holds the old DS), their DNSKEYs are withdrawn, the old
///    keys still signing;
/// 5. `propagation-delay` + the DNSKEY TTL later (no cache holds the old
///    DNSKEY RRset) the old keys are removed, their signatures with them,
///    and the new keys' mark is cleared.
///
/// A start interrupted before the old keys were marked is completed.
/// Idempotent: a time once written is kept.
fn advance_key_set(
    metas: &mut [keys::KeyMeta],
    policy: &Policy,
    timing: Timing,
    now: u64,
    out: &mut Advanced,
) {
    let side = |meta: &keys::KeyMeta, side| {
        meta.key_set_rollover == Some(side) && !at_or_before(meta.removed, now)
    };
    let new: Vec<usize> = (0..metas.len())
        .filter(|&index| metas[index].key_set_rollover == Some(RolloverSide::New))
        .collect();
    // Old keys removed by now are deleted at this step: a rollover that
    // has them alone is over, not abandoned.
    let old_marked = metas.iter().any(|meta| side(meta, RolloverSide::Old));
    if new.is_empty() && !old_marked {
        return;
    }
    let delay = policy.propagation_delay;
    let signer = new
        .iter()
        .copied()
        .find(|&index| metas[index].role.signs_keys());
    let Some(signer) = signer else {
        // Its files deleted by hand: the old keys are the zone's again,
        // whatever step they had reached.
        out.notes.push(
            "the algorithm rollover's new keys have no KSK or CSK (deleted?): the rollover is \
             abandoned, the new keys removed and the old ones kept"
                .to_string(),
        );
        for &index in &new {
            metas[index].removed = Some(now);
            out.changed.push(index);
        }
        for (index, meta) in metas.iter_mut().enumerate() {
            if side(meta, RolloverSide::Old) {
                meta.key_set_rollover = None;
                meta.successor = None;
                meta.retired = None;
                meta.withdrawn = None;
                meta.removed = None;
                out.changed.push(index);
            }
        }
        return;
    };
    let signer_tag = metas[signer].key_tag;
    // An interrupted start: the keys in use not yet marked as the old.
    if !metas.iter().any(|meta| side(meta, RolloverSide::Old)) && metas[signer].published.is_none()
    {
        for (index, meta) in metas.iter_mut().enumerate() {
            if meta.key_set_rollover.is_none()
                && at_or_before(meta.published, now)
                && !at_or_before(meta.removed, now)
            {
                meta.key_set_rollover = Some(RolloverSide::Old);
                meta.successor = Some(signer_tag);
                out.changed.push(index);
            }
        }
    }
    // The new keys: published once every RRset's new signature is in
    // every cache, the DS submitted once the DNSKEYs are.
    for &index in &new {
        let before = metas[index].clone();
        let meta = &mut metas[index];
        let active = *meta.active.get_or_insert(now);
        let published = *meta
            .published
            .get_or_insert(active.saturating_add(delay).saturating_add(timing.max_ttl));
        if meta.role.signs_keys() {
            meta.ds_published.get_or_insert(
                published
                    .saturating_add(delay)
                    .saturating_add(timing.dnskey_ttl),
            );
        }
        if metas[index] != before {
            out.changed.push(index);
        }
    }
    // The old keys, once the new DS is seen.
    if let Some(seen) = metas[signer].ds_seen {
        let ds_ttl = ds_ttl(&metas[signer], policy);
        for (index, meta) in metas.iter_mut().enumerate() {
            if meta.key_set_rollover != Some(RolloverSide::Old) {
                continue;
            }
            let before = meta.clone();
            meta.retired.get_or_insert(seen);
            let withdrawn = *meta
                .withdrawn
                .get_or_insert(seen.saturating_add(delay).saturating_add(ds_ttl));
            meta.removed.get_or_insert(
                withdrawn
                    .saturating_add(delay)
                    .saturating_add(timing.dnskey_ttl),
            );
            if *meta != before {
                out.changed.push(index);
            }
        }
    }
    // Done: every old key removed.
    let old_left = metas.iter().any(|meta| side(meta, RolloverSide::Old));
    let started = metas[signer].published.is_some();
    if started && !old_left {
        for &index in &new {
            metas[index].key_set_rollover = None;
            out.changed.push(index);
        }
        out.notes.push(format!(
            "algorithm rollover done: the zone is signed by the {} keys alone",
            keys::algorithm_name(metas[signer].algorithm)
        ));
    }
}

/// The DS TTL waited for after a key's DS was seen: the one seen, else
/// the policy's `parent-ds-ttl`.
fn ds_ttl(meta: &keys::KeyMeta, policy: &Policy) -> u64 {
    meta.ds_ttl.map_or(policy.parent_ds_ttl, u64::from)
}

/// When the next step of any key is due after `now`: a planned time, or
/// a lifetime's end (when no rollover is in progress); `None`: nothing
/// planned (a zone waiting for its parent's DS is woken by the parent
/// check or `tern keys ds-seen`).
pub fn next_event(metas: &[&keys::KeyMeta], policy: &Policy, now: u64) -> Option<u64> {
    let planned = metas.iter().flat_map(|meta| {
        [
            meta.published,
            meta.active,
            meta.retired,
            meta.removed,
            meta.ds_published,
            meta.withdrawn,
        ]
    });
    let lifetimes = if in_progress(metas, now).is_some() {
        Vec::new()
    } else {
        lifetime_ends(metas, policy, now)
            .map(|(due, _)| due)
            .collect()
    };
    planned
        .flatten()
        .chain(lifetimes)
        .filter(|&time| time > now)
        .min()
}

/// The keys (KSK, CSK) whose DS the parent is awaited to show at `now`:
/// submitted, not seen, still published.
pub fn awaiting_ds<'m>(metas: &[&'m keys::KeyMeta], now: u64) -> Vec<&'m keys::KeyMeta> {
    metas
        .iter()
        .copied()
        .filter(|meta| {
            meta.role.signs_keys()
                && at_or_before(meta.ds_published, now)
                && meta.ds_seen.is_none()
                && !at_or_before(meta.removed, now)
        })
        .collect()
}

//----------- operations on a key directory ----------------------------------

/// Reads the keys of `dir` and applies [`advance`] at `now`: writes the
/// changed metadata, deletes the keys removed, and starts a rollover a
/// lifetime calls for (then plans it too). Returns the keys left and the
/// notes to log. The caller holds [`keys::lock`].
pub fn step(
    dir: &Path,
    mut stored: Vec<StoredKey>,
    policy: &Policy,
    timing: Timing,
    now: u64,
) -> Result<(Vec<StoredKey>, Vec<String>), String> {
    let mut notes = Vec::new();
    // Twice at most: a rollover started (an algorithm rollover, or a
    // lifetime's), then planned.
    for _ in 0..2 {
        let mut metas: Vec<keys::KeyMeta> = stored.iter().map(|key| key.meta.clone()).collect();
        let advanced = advance(&mut metas, policy, timing, now);
        notes.extend(advanced.notes);
        for &index in &advanced.changed {
            stored[index].meta = metas[index].clone();
            stored[index].write_meta()?;
        }
        for &index in advanced.removed.iter().rev() {
            let key = stored.remove(index);
            key.delete()?;
            notes.push(format!(
                "{} key {} removed from the zone; its files are deleted",
                keys::role_text(key.meta.role),
                key.meta.key_tag
            ));
        }
        let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
        if let Some(cause) = policy_change(&metas, policy, now) {
            let (new, old) = begin_key_set(dir, &mut stored, policy, now)?;
            notes.push(format!(
                "{cause}: algorithm rollover started, keys {} replace keys {}",
                tag_list(&new),
                tag_list(&old)
            ));
            continue;
        }
        let Some(role) = advanced.start else {
            break;
        };
        let (new, old) = begin(dir, &mut stored, policy, role, now)?;
        notes.push(format!(
            "{} lifetime over: rollover started, key {new} replaces key {old}",
            keys::role_text(role)
        ));
    }
    Ok((stored, notes))
}

/// Starts a rollover of `role` among `stored` at `now`: takes the standby
/// key of that role or generates one, names it as the current key's
/// successor, then publishes it (in that order: an interruption between
/// the two is completed by [`advance`]). Returns the new and old tags.
fn begin(
    dir: &Path,
    stored: &mut Vec<StoredKey>,
    policy: &Policy,
    role: KeyRole,
    now: u64,
) -> Result<(u16, u16), String> {
    let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
    if let Some(index) = in_progress(&metas, now) {
        return Err(format!(
            "a rollover is in progress: key {} is being replaced by key {}",
            metas[index].key_tag,
            metas[index].successor.unwrap_or_default()
        ));
    }
    let Some(old) = current(&metas, role, now) else {
        return Err(format!(
            "no active {} to replace",
            keys::role_text(role).to_uppercase()
        ));
    };
    let algorithm = successor_algorithm(metas[old]);
    let new = match standby(&metas, role).filter(|&index| metas[index].algorithm == algorithm) {
        Some(index) => index,
        None => {
            let key = keys::generate_one(dir, algorithm, policy.key_size, role, stored, now)?;
            stored.push(key);
            stored.len() - 1
        }
    };
    let new_tag = stored[new].meta.key_tag;
    stored[old].meta.successor = Some(new_tag);
    stored[old].write_meta()?;
    stored[new].meta.published = Some(now);
    stored[new].write_meta()?;
    Ok((new_tag, stored[old].meta.key_tag))
}

/// Starts an algorithm (key-set) rollover among `stored` at `now`: a key
/// of the policy's algorithm for each of its roles (a standby key of that
/// role and algorithm if there is one, else a new one), marked new and
/// signing from now, then every key in use marked old, naming the new
/// KSK or CSK (in that order: an interruption between the two is
/// completed by [`advance`]). Returns the new tags and the old ones.
fn begin_key_set(
    dir: &Path,
    stored: &mut Vec<StoredKey>,
    policy: &Policy,
    now: u64,
) -> Result<(Vec<u16>, Vec<u16>), String> {
    let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
    if let Some(index) = in_progress(&metas, now) {
        return Err(format!(
            "a rollover is in progress: key {} is being replaced",
            metas[index].key_tag,
        ));
    }
    let old: Vec<usize> = (0..stored.len())
        .filter(|&index| {
            let meta = &stored[index].meta;
            at_or_before(meta.published, now) && !at_or_before(meta.removed, now)
        })
        .collect();
    let mut new = Vec::new();
    for &role in policy.keys.roles() {
        let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
        let index = match standby(&metas, role)
            .filter(|&index| metas[index].algorithm == policy.algorithm)
        {
            Some(index) => index,
            None => {
                let key =
                    keys::generate_one(dir, policy.algorithm, policy.key_size, role, stored, now)?;
                stored.push(key);
                stored.len() - 1
            }
        };
        new.push(index);
    }
    for &index in &new {
        let meta = &mut stored[index].meta;
        meta.key_set_rollover = Some(RolloverSide::New);
        meta.active = Some(now);
        stored[index].write_meta()?;
    }
    let signer = new
        .iter()
        .map(|&index| &stored[index].meta)
        .find(|meta| meta.role.signs_keys())
        .map(|meta| meta.key_tag)
        .unwrap_or_default();
    for &index in &old {
        let meta = &mut stored[index].meta;
        meta.key_set_rollover = Some(RolloverSide::Old);
        meta.successor = Some(signer);
        stored[index].write_meta()?;
    }
    let tags = |indices: &[usize]| indices.iter().map(|&i| stored[i].meta.key_tag).collect();
    Ok((tags(&new), tags(&old)))
}

fn tag_list(tags: &[u16]) -> String {
    tags.iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `tern keys rollover ZONE ROLE`: starts a rollover of `role` for the
/// zone whose keys are in `dir`, now; the next signing plans it. Refused
/// when one is in progress or the policy has no such role. Returns the
/// new key's tag and the old one's.
pub fn start(dir: &Path, policy: &Policy, role: KeyRole, now: u64) -> Result<(u16, u16), String> {
    check_role(policy, role)?;
    let _lock = keys::lock();
    let mut stored = keys::read_keys(dir)?;
    begin(dir, &mut stored, policy, role, now)
}

/// `tern keys generate ZONE ROLE`: a standby key of `role` (published by
/// the next rollover of that role); refused when one is there already.
/// Its algorithm is the zone's keys' (a rollover of one role keeps it),
/// the policy's when the zone has none in use; a policy's new algorithm
/// is met by an algorithm rollover, which makes its own keys.
pub fn generate_standby(
    dir: &Path,
    policy: &Policy,
    role: KeyRole,
    now: u64,
) -> Result<u16, String> {
    check_role(policy, role)?;
    let _lock = keys::lock();
    let stored = keys::read_keys(dir)?;
    let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
    if let Some(index) = standby(&metas, role) {
        return Err(format!(
            "key {} is a standby {} already",
            metas[index].key_tag,
            keys::role_text(role).to_uppercase()
        ));
    }
    let algorithm = zone_algorithm(&metas, now).unwrap_or(policy.algorithm);
    keys::generate_one(dir, algorithm, policy.key_size, role, &stored, now)
        .map(|key| key.meta.key_tag)
}

fn check_role(policy: &Policy, role: KeyRole) -> Result<(), String> {
    if policy.keys.roles().contains(&role) {
        Ok(())
    } else {
        Err(format!(
            "policy {} has no {} (keys: {})",
            policy.name,
            keys::role_text(role).to_uppercase(),
            match policy.keys {
                keys::KeyScheme::Csk => "csk",
                keys::KeyScheme::KskZsk => "ksk-zsk",
            }
        ))
    }
}

/// How [`ds_seen`] went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DsSeen {
    /// Recorded now.
    Recorded,
    /// It had been seen before.
    Already,
}

/// `tern keys ds-seen ZONE KEYTAG`, or the parent check: the parent's DS
/// set includes the key `tag` (seen with this TTL, if by a query).
/// Refused for a key that is not a KSK or CSK, not published, or whose DS
/// is not submitted yet (its DNSKEY may not be in caches everywhere:
/// RFC 7583's Trdy).
pub fn ds_seen(dir: &Path, tag: u16, ttl: Option<u32>, now: u64) -> Result<DsSeen, String> {
    let _lock = keys::lock();
    let mut stored = keys::read_keys(dir)?;
    let Some(key) = stored.iter_mut().find(|key| key.meta.key_tag == tag) else {
        return Err(format!("no key {tag}"));
    };
    let meta = &mut key.meta;
    if !meta.role.signs_keys() {
        return Err(format!("key {tag} is a ZSK: the parent has no DS for it"));
    }
    if meta.ds_seen.is_some() {
        return Ok(DsSeen::Already);
    }
    if !key_use(meta, CdsCdnskey::None, now).published {
        return Err(format!("key {tag} is not published"));
    }
    match meta.ds_published {
        Some(at) if at <= now => {}
        Some(at) => {
            return Err(format!(
                "key {tag}'s DS is submitted only at {at} (in {} s), once its DNSKEY is in \
                 every cache",
                at - now
            ))
        }
        // A key from before submissions were recorded: its DS was given
        // by hand.
        None => {}
    }
    meta.ds_seen = Some(now);
    meta.ds_ttl = ttl;
    key.write_meta()?;
    Ok(DsSeen::Recorded)
}

//----------- describing -----------------------------------------------------

/// A key's state at `now` in one word, and its next step with its time.
pub fn describe(meta: &keys::KeyMeta, policy: &Policy, now: u64) -> (&'static str, String) {
    let used = key_use(meta, policy.cds_cdnskey, now);
    let at =
        |what: &str, time: u64| format!("{what} at {time} (in {} s)", time.saturating_sub(now));
    if at_or_before(meta.removed, now) {
        return ("removed", "deleted at the next signing".to_string());
    }
    if meta.key_set_rollover == Some(RolloverSide::New) && !used.published {
        let next = match meta.published {
            Some(published) => at("published", published),
            None => "published as planned at the next signing".to_string(),
        };
        return ("signing-unpublished", next);
    }
    if at_or_before(meta.withdrawn, now) {
        let next = meta
            .removed
            .map_or_else(String::new, |removed| at("signatures removed", removed));
        return ("withdrawn", next);
    }
    let Some(published) = meta.published else {
        return ("standby", "published by the next rollover".to_string());
    };
    if published > now {
        return ("planned", at("published", published));
    }
    let waiting_ds = meta.role.signs_keys() && meta.ds_seen.is_none();
    let next = if let Some(withdrawn) = meta.withdrawn {
        at("DNSKEY withdrawn", withdrawn)
    } else if let Some(removed) = meta.removed {
        at("removed", removed)
    } else if meta.successor.is_some() && meta.retired.is_none() {
        format!(
            "retired once key {}'s DS is seen at the parent",
            meta.successor.unwrap_or_default()
        )
    } else if let Some(active) = meta.active.filter(|&active| active > now) {
        at("active", active)
    } else if let Some(submitted) = meta.ds_published.filter(|&time| time > now) {
        at("DS submitted", submitted)
    } else if waiting_ds && meta.ds_published.is_some() {
        "waiting for the parent's DS (tern keys ds-seen)".to_string()
    } else if meta.successor.is_some() {
        "removed once its successor's DS is seen at the parent".to_string()
    } else {
        let lifetime = lifetime(policy, meta.role);
        match meta.active.and_then(|active| active.checked_add(lifetime)) {
            Some(due) if lifetime > 0 => at("rollover", due),
            _ => "none (no lifetime)".to_string(),
        }
    };
    let state = if used.signs_zone
        || (meta.role == KeyRole::Ksk && used.signs_keys && meta.retired.is_none())
    {
        "active"
    } else if at_or_before(meta.retired, now) {
        "retired"
    } else {
        "published"
    };
    (state, next)
}

/// The zone's rollover in progress as `ROLE:OLD->NEW`, if any.
pub fn describe_rollover(stored: &[StoredKey], now: u64) -> Option<String> {
    let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
    let old = metas[in_progress(&metas, now)?];
    if old.key_set_rollover.is_some() {
        let tags = |side| {
            metas
                .iter()
                .filter(|meta| meta.key_set_rollover == Some(side))
                .map(|meta| format!("{}/{}", meta.key_tag, keys::algorithm_name(meta.algorithm)))
                .collect::<Vec<_>>()
                .join(",")
        };
        return Some(format!(
            "algorithm:{}->{}",
            tags(RolloverSide::Old),
            tags(RolloverSide::New)
        ));
    }
    let new = old.successor.unwrap_or_default();
    Some(format!(
        "{}:{}->{}",
        keys::role_text(old.role),
        old.key_tag,
        new
    ))
}

/// The DS RDATA of the keys whose DS the parent should have at `now`:
/// the KSKs and CSKs published, not retired, submitted (or from before
/// submissions were recorded).
pub fn ds_keys(stored: &[StoredKey], now: u64) -> Vec<&SigningKey> {
    stored
        .iter()
        .filter(|key| {
            let meta = &key.meta;
            let used = key_use(meta, CdsCdnskey::None, now);
            used.published
                && meta.role.signs_keys()
                && !at_or_before(meta.retired, now)
                && (meta.ds_published.is_none() || at_or_before(meta.ds_published, now))
        })
        .map(|key| &key.key)
        .collect()
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::KeyScheme;
    use tern_dnssec::Algorithm;

    const DELAY: u64 = 5;
    const TIMING: Timing = Timing {
        dnskey_ttl: 10,
        max_ttl: 20,
    };
    /// Ipub: the propagation delay and the DNSKEY TTL.
    const IPUB: u64 = DELAY + 10;
    /// A ZSK's Iret: the propagation delay and the zone's highest TTL.
    const IRET_ZONE: u64 = DELAY + 20;
    const T0: u64 = 1_000_000;

    fn policy(keys: KeyScheme, zsk_lifetime: u64, ksk_lifetime: u64) -> Policy {
        Policy {
            keys,
            algorithm: Algorithm::Ed25519,
            zsk_lifetime,
            ksk_lifetime,
            propagation_delay: DELAY,
            parent_ds_ttl: 40,
            ..Policy::new("test".into())
        }
    }

    struct Zone {
        state: PathBuf,
        dir: PathBuf,
        origin: NameBuf,
        policy: Policy,
    }

    /// What a signing at some time used: the tags published, signing the
    /// DNSKEY RRset, signing the zone, in the CDS; and the next event.
    #[derive(Debug, PartialEq, Eq)]
    struct Signing {
        published: Vec<u16>,
        unpublished: Vec<u16>,
        keys: Vec<u16>,
        zone: Vec<u16>,
        cds: Vec<u16>,
        next: Option<u64>,
        files: usize,
    }

    impl Zone {
        fn new(name: &str, policy: Policy) -> Zone {
            let state =
                std::env::temp_dir().join(format!("tern-rollover-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&state);
            let origin = NameBuf::from_text(b"example.", None).unwrap();
            let dir = keys::key_dir(&state, origin.as_name());
            Zone {
                state,
                dir,
                origin,
                policy,
            }
        }

        /// A signing at `now`, as after a restart: everything read from
        /// the files again.
        fn sign(&self, now: u64) -> Signing {
            let _lock = keys::lock();
            let stored = keys::load_or_generate(
                &self.state,
                self.origin.as_name(),
                self.policy.algorithm,
                self.policy.key_size,
                self.policy.keys,
                now,
            )
            .unwrap();
            let (stored, _) = step(&self.dir, stored, &self.policy, TIMING, now).unwrap();
            let set = key_set(&stored, &self.policy, now);
            let tags = |filter: &dyn Fn(&ZoneKey<'_>) -> bool| -> Vec<u16> {
                let mut tags: Vec<u16> = set
                    .keys
                    .iter()
                    .filter(|key| filter(key))
                    .map(|key| key.key.key_tag())
                    .collect();
                tags.sort_unstable();
                tags
            };
            let mut cds: Vec<u16> = set.cds.iter().flatten().map(|key| key.key_tag()).collect();
            cds.sort_unstable();
            let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
            // RFC 4035 section 2.2: every algorithm of the DNSKEY RRset
            // signs the DNSKEY RRset and every other RRset.
            for key in set.keys.iter().filter(|key| key.published) {
                let algorithm = key.key.algorithm();
                for zone_rrsets in [false, true] {
                    assert!(
                        set.keys.iter().any(|signer| signer.signs(!zone_rrsets)
                            && signer.key.algorithm() == algorithm),
                        "at {now}: {algorithm:?} published, not signing (zone: {zone_rrsets})"
                    );
                }
            }
            Signing {
                published: tags(&|key| key.published),
                unpublished: tags(&|key| !key.published),
                keys: tags(&|key| key.signs_keys),
                zone: tags(&|key| key.signs_zone),
                cds,
                next: next_event(&metas, &self.policy, now),
                files: std::fs::read_dir(&self.dir).unwrap().count(),
            }
        }

        fn tags(&self, role: KeyRole) -> Vec<u16> {
            let mut tags: Vec<u16> = keys::read_keys(&self.dir)
                .unwrap()
                .iter()
                .filter(|key| key.meta.role == role)
                .map(|key| key.meta.key_tag)
                .collect();
            tags.sort_unstable();
            tags
        }
    }

    impl Drop for Zone {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.state);
        }
    }

    fn sorted(mut tags: Vec<u16>) -> Vec<u16> {
        tags.sort_unstable();
        tags
    }

    /// The algorithm of a key: its metadata's.
    fn algorithm_of(zone: &Zone, tag: u16) -> Algorithm {
        keys::read_keys(&zone.dir)
            .unwrap()
            .iter()
            .find(|key| key.meta.key_tag == tag)
            .unwrap()
            .meta
            .algorithm
    }

    /// The tags of `role` not among `old`.
    fn new_tags(zone: &Zone, role: KeyRole, old: &[u16]) -> Vec<u16> {
        zone.tags(role)
            .into_iter()
            .filter(|tag| !old.contains(tag))
            .collect()
    }

    /// A policy whose algorithm changed (Ed25519 to ECDSA P-256) rolls the
    /// whole key set, RFC 6781 section 4.1.4's conservative order: the new
    /// keys sign every RRset unpublished for the zone's highest TTL, are
    /// published, their DS is submitted Ipub later, and once it is seen
    /// the old DNSKEYs are withdrawn after the DS TTL and the old
    /// signatures removed Ipub after that. Every step's time is the
    /// previous signing's next event; a signing again at any time (a
    /// restart: the files read anew) makes no key and changes nothing;
    /// every signing has each published algorithm sign every RRset.
    #[test]
    fn algorithm_rollover_resumes_at_every_step() {
        let mut zone = Zone::new("alg", policy(KeyScheme::KskZsk, 0, 0));
        let first = zone.sign(T0);
        let (ksk, zsk) = (zone.tags(KeyRole::Ksk)[0], zone.tags(KeyRole::Zsk)[0]);
        assert_eq!(ds_seen(&zone.dir, ksk, None, T0 + 1), Ok(DsSeen::Recorded));
        assert_eq!(first.next, None);
        assert!(
            super::start(&zone.dir, &zone.policy, KeyRole::Zsk, T0 + 2).is_ok(),
            "a ZSK rollover"
        );
        zone.sign(T0 + 2);
        let err = begin_key_set(
            &zone.dir,
            &mut keys::read_keys(&zone.dir).unwrap(),
            &zone.policy,
            T0 + 3,
        )
        .unwrap_err();
        assert!(err.contains("in progress"), "one rollover at a time: {err}");
        let zsk = *new_tags(&zone, KeyRole::Zsk, &[zsk]).first().unwrap();
        zone.sign(T0 + 2 + IPUB + IRET_ZONE);
        assert_eq!(zone.tags(KeyRole::Zsk), vec![zsk], "the ZSK rollover done");

        let start = T0 + 100;
        zone.policy.algorithm = Algorithm::EcdsaP256Sha256;
        let presigned = zone.sign(start);
        let ksk2 = new_tags(&zone, KeyRole::Ksk, &[ksk])[0];
        let zsk2 = new_tags(&zone, KeyRole::Zsk, &[zsk])[0];
        for tag in [ksk2, zsk2] {
            assert_eq!(algorithm_of(&zone, tag), Algorithm::EcdsaP256Sha256);
        }
        assert_eq!(presigned.published, sorted(vec![ksk, zsk]));
        assert_eq!(presigned.unpublished, sorted(vec![ksk2, zsk2]));
        assert_eq!(presigned.keys, sorted(vec![ksk, ksk2]));
        assert_eq!(presigned.zone, sorted(vec![zsk, zsk2]));
        assert!(presigned.cds.is_empty());
        assert_eq!(presigned.next, Some(start + IRET_ZONE), "the zone's TTL");
        for now in [start, start + 1, start + IRET_ZONE - 1] {
            assert_eq!(zone.sign(now), presigned, "restart at {now}");
        }
        let described = describe_rollover(&keys::read_keys(&zone.dir).unwrap(), start).unwrap();
        assert!(described.starts_with("algorithm:"), "{described}");

        let published_at = start + IRET_ZONE;
        let published = zone.sign(published_at);
        assert_eq!(published.published, sorted(vec![ksk, zsk, ksk2, zsk2]));
        assert!(published.unpublished.is_empty());
        assert_eq!(published.keys, sorted(vec![ksk, ksk2]));
        assert_eq!(published.zone, sorted(vec![zsk, zsk2]));
        assert!(published.cds.is_empty());
        assert_eq!(published.next, Some(published_at + IPUB), "DS submitted");
        assert_eq!(zone.sign(published_at + 1), published, "restart");
        let early = ds_seen(&zone.dir, ksk2, None, published_at + 1).unwrap_err();
        assert!(early.contains("submitted only at"), "{early}");

        let submitted_at = published_at + IPUB;
        let submitted = zone.sign(submitted_at);
        assert_eq!(submitted.cds, vec![ksk2], "the new KSK's CDS alone");
        assert_eq!(submitted.published, published.published);
        assert_eq!(submitted.next, None, "waiting for the parent");
        assert_eq!(
            zone.sign(submitted_at + 500),
            submitted,
            "restart while waiting"
        );

        let seen = submitted_at + 1000;
        assert_eq!(
            ds_seen(&zone.dir, ksk2, Some(30), seen),
            Ok(DsSeen::Recorded)
        );
        let retired = zone.sign(seen);
        assert!(retired.cds.is_empty());
        assert_eq!(retired.published, published.published, "old DNSKEYs kept");
        assert_eq!(retired.zone, sorted(vec![zsk, zsk2]), "old ZSK signs");
        assert_eq!(retired.next, Some(seen + DELAY + 30), "the DS TTL seen");
        assert_eq!(zone.sign(seen + 1), retired, "restart");

        let withdrawn_at = seen + DELAY + 30;
        let withdrawn = zone.sign(withdrawn_at);
        assert_eq!(withdrawn.published, sorted(vec![ksk2, zsk2]));
        assert_eq!(withdrawn.unpublished, sorted(vec![ksk, zsk]), "old sign");
        assert_eq!(withdrawn.keys, sorted(vec![ksk, ksk2]));
        assert_eq!(withdrawn.zone, sorted(vec![zsk, zsk2]));
        assert_eq!(withdrawn.next, Some(withdrawn_at + IPUB), "the DNSKEY TTL");
        assert_eq!(zone.sign(withdrawn_at + IPUB - 1), withdrawn, "restart");

        let done = zone.sign(withdrawn_at + IPUB);
        assert_eq!(done.published, sorted(vec![ksk2, zsk2]));
        assert!(done.unpublished.is_empty());
        assert_eq!(
            (done.keys.clone(), done.zone.clone()),
            (vec![ksk2], vec![zsk2])
        );
        assert_eq!(done.files, 4, "the old keys' files deleted");
        assert_eq!(done.next, None);
        for key in keys::read_keys(&zone.dir).unwrap() {
            assert_eq!(key.meta.key_set_rollover, None, "key {}", key.meta.key_tag);
        }
        assert_eq!(zone.sign(withdrawn_at + 100_000), done, "nothing more");
        assert!(describe_rollover(&keys::read_keys(&zone.dir).unwrap(), T0 + 100_000).is_none());
    }

    /// A policy switched from a CSK to a KSK and a ZSK (same algorithm)
    /// replaces the key set the same way: without it the zone's CSK
    /// matched no role of the policy and was never rolled again.
    #[test]
    fn csk_to_ksk_zsk_rolls_the_key_set() {
        let mut zone = Zone::new("scheme", policy(KeyScheme::Csk, 0, 0));
        zone.sign(T0);
        let csk = zone.tags(KeyRole::Csk)[0];
        assert_eq!(ds_seen(&zone.dir, csk, None, T0 + 1), Ok(DsSeen::Recorded));
        zone.policy.keys = KeyScheme::KskZsk;
        zone.policy.ksk_lifetime = 1000;
        let start = T0 + 10;
        let presigned = zone.sign(start);
        let (ksk, zsk) = (zone.tags(KeyRole::Ksk)[0], zone.tags(KeyRole::Zsk)[0]);
        assert_eq!(presigned.published, vec![csk]);
        assert_eq!(presigned.unpublished, sorted(vec![ksk, zsk]));
        assert_eq!(presigned.keys, sorted(vec![csk, ksk]));
        assert_eq!(presigned.zone, sorted(vec![csk, zsk]));
        assert_eq!(zone.sign(start + 1), presigned, "restart");
        let published = zone.sign(start + IRET_ZONE);
        assert_eq!(published.published, sorted(vec![csk, ksk, zsk]));
        let submitted = zone.sign(start + IRET_ZONE + IPUB);
        assert_eq!(submitted.cds, vec![ksk]);
        let seen = start + IRET_ZONE + IPUB + 1;
        assert_eq!(ds_seen(&zone.dir, ksk, None, seen), Ok(DsSeen::Recorded));
        zone.sign(seen);
        let withdrawn = zone.sign(seen + DELAY + 40);
        assert_eq!(withdrawn.published, sorted(vec![ksk, zsk]));
        assert_eq!(withdrawn.unpublished, vec![csk]);
        let done = zone.sign(seen + DELAY + 40 + IPUB);
        assert_eq!(done.published, sorted(vec![ksk, zsk]));
        assert_eq!(
            (done.keys.clone(), done.zone.clone()),
            (vec![ksk], vec![zsk])
        );
        assert_eq!(zone.tags(KeyRole::Csk), Vec::<u16>::new());
        assert_eq!(
            done.next,
            Some(start + 1000),
            "the KSK's lifetime, rolled again"
        );
    }

    /// An algorithm rollover's start interrupted after the new keys were
    /// written and before the old ones were marked is completed at the
    /// next signing, making no key; `tern keys generate` makes a standby
    /// key of the zone's algorithm, not the policy's new one.
    #[test]
    fn interrupted_algorithm_rollover_and_standby_algorithm() {
        let mut zone = Zone::new("alg-interrupted", policy(KeyScheme::Csk, 0, 0));
        zone.sign(T0);
        let old = zone.tags(KeyRole::Csk)[0];
        zone.policy.algorithm = Algorithm::EcdsaP256Sha256;
        let standby = generate_standby(&zone.dir, &zone.policy, KeyRole::Csk, T0 + 1).unwrap();
        assert_eq!(
            algorithm_of(&zone, standby),
            Algorithm::Ed25519,
            "the zone's"
        );
        zone.policy.algorithm = Algorithm::Ed25519;
        zone.sign(T0 + 1);
        zone.policy.algorithm = Algorithm::EcdsaP256Sha256;
        // The new key written and marked; the crash comes before the old
        // one is marked.
        let new = {
            let stored = keys::read_keys(&zone.dir).unwrap();
            let mut key = keys::generate_one(
                &zone.dir,
                Algorithm::EcdsaP256Sha256,
                0,
                KeyRole::Csk,
                &stored,
                T0 + 2,
            )
            .unwrap();
            key.meta.key_set_rollover = Some(RolloverSide::New);
            key.meta.active = Some(T0 + 2);
            key.write_meta().unwrap();
            key.meta.key_tag
        };
        let resumed = zone.sign(T0 + 3);
        assert_eq!(resumed.published, vec![old]);
        assert_eq!(resumed.unpublished, vec![new]);
        assert_eq!(resumed.next, Some(T0 + 2 + IRET_ZONE));
        assert_eq!(
            zone.tags(KeyRole::Csk).len(),
            3,
            "old, standby, new: none made"
        );
        let stored = keys::read_keys(&zone.dir).unwrap();
        let old_meta = &stored
            .iter()
            .find(|key| key.meta.key_tag == old)
            .unwrap()
            .meta;
        assert_eq!(old_meta.key_set_rollover, Some(RolloverSide::Old));
        assert_eq!(old_meta.successor, Some(new));
        assert_eq!(zone.sign(T0 + 4), resumed, "restart");

        // The new CSK's files deleted by hand (and the policy back to the
        // zone's algorithm): the rollover is abandoned, the old key the
        // zone's again.
        zone.policy.algorithm = Algorithm::Ed25519;
        stored
            .iter()
            .find(|key| key.meta.key_tag == new)
            .unwrap()
            .delete()
            .unwrap();
        let abandoned = zone.sign(T0 + 5);
        assert_eq!(abandoned.published, vec![old]);
        assert!(abandoned.unpublished.is_empty());
        assert_eq!(
            (abandoned.keys.clone(), abandoned.zone.clone()),
            (vec![old], vec![old])
        );
        let stored = keys::read_keys(&zone.dir).unwrap();
        let old_meta = &stored
            .iter()
            .find(|key| key.meta.key_tag == old)
            .unwrap()
            .meta;
        assert_eq!(
            (old_meta.key_set_rollover, old_meta.successor),
            (None, None)
        );
    }

    /// A ZSK rolled by its lifetime, by pre-publication: published Ipub
    /// before it signs, the old one removed Iret after it stopped; each
    /// step's time is the previous signing's next event, and a signing
    /// again at any time (a restart: the files read anew) makes no key
    /// and changes nothing.
    #[test]
    fn zsk_rollover_by_lifetime_resumes_at_every_step() {
        let zone = Zone::new("zsk", policy(KeyScheme::KskZsk, 100, 0));
        let first = zone.sign(T0);
        let (ksk, old) = (zone.tags(KeyRole::Ksk)[0], zone.tags(KeyRole::Zsk)[0]);
        assert_eq!(first.published, sorted(vec![ksk, old]));
        assert_eq!(
            (first.keys.clone(), first.zone.clone()),
            (vec![ksk], vec![old])
        );
        assert_eq!(first.cds, vec![ksk], "the first KSK's DS is submitted");
        assert_eq!(first.next, Some(T0 + 100), "the ZSK's lifetime");
        assert_eq!(zone.sign(T0 + 50), first, "nothing due: no change");

        // The lifetime is over: a new ZSK published, the old one signs.
        let start = T0 + 100;
        let published = zone.sign(start);
        let new = *zone
            .tags(KeyRole::Zsk)
            .iter()
            .find(|&&tag| tag != old)
            .unwrap();
        assert_eq!(published.published, sorted(vec![ksk, old, new]));
        assert_eq!(published.zone, vec![old]);
        assert_eq!(published.next, Some(start + IPUB));
        for now in [start, start + 1, start + IPUB - 1] {
            assert_eq!(zone.sign(now), published, "restart at {now}");
        }
        // Ipub later the new one signs, the old one stays published.
        let switched = zone.sign(start + IPUB);
        assert_eq!(switched.published, sorted(vec![ksk, old, new]));
        assert_eq!(switched.zone, vec![new]);
        assert_eq!(switched.next, Some(start + IPUB + IRET_ZONE));
        assert_eq!(zone.sign(start + IPUB + 1), switched, "restart");
        // Iret later the old one is removed and its files deleted.
        let done = zone.sign(start + IPUB + IRET_ZONE);
        assert_eq!(done.published, sorted(vec![ksk, new]));
        assert_eq!(done.zone, vec![new]);
        assert_eq!(done.files, 4);
        assert_eq!(zone.tags(KeyRole::Zsk), vec![new]);
        assert_eq!(
            done.next,
            Some(start + IPUB + 100),
            "the new ZSK's lifetime"
        );
    }

    /// A KSK rolled by hand, double-KSK: both sign the DNSKEY RRset from
    /// the new one's publication; its DS is submitted (CDS) Ipub later;
    /// once seen at the parent the old one is removed after the DS TTL.
    /// Restarts at every step make no key and change nothing; a second
    /// rollover is refused meanwhile; the DS cannot be seen early.
    #[test]
    fn ksk_rollover_double_ksk_waits_for_the_parent() {
        let zone = Zone::new("ksk", policy(KeyScheme::KskZsk, 0, 0));
        let first = zone.sign(T0);
        let (old, zsk) = (zone.tags(KeyRole::Ksk)[0], zone.tags(KeyRole::Zsk)[0]);
        assert_eq!(first.next, None, "no lifetime, nothing planned");
        assert_eq!(ds_seen(&zone.dir, old, None, T0 + 1), Ok(DsSeen::Recorded));
        assert_eq!(ds_seen(&zone.dir, old, None, T0 + 2), Ok(DsSeen::Already));
        assert!(
            ds_seen(&zone.dir, zsk, None, T0 + 2).is_err(),
            "a ZSK has no DS"
        );
        let settled = zone.sign(T0 + 10);
        assert!(
            settled.cds.is_empty(),
            "cds-cdnskey: rollover, none in progress"
        );
        assert_eq!(zone.sign(T0 + 10_000), settled, "a restart starts nothing");

        let start = T0 + 20;
        let (new, replaced) = super::start(&zone.dir, &zone.policy, KeyRole::Ksk, start).unwrap();
        assert_eq!(replaced, old);
        assert!(
            super::start(&zone.dir, &zone.policy, KeyRole::Zsk, start).is_err(),
            "one rollover at a time"
        );
        let published = zone.sign(start);
        assert_eq!(published.published, sorted(vec![old, new, zsk]));
        assert_eq!(published.keys, sorted(vec![old, new]), "double-KSK");
        assert_eq!(published.zone, vec![zsk]);
        assert!(published.cds.is_empty());
        assert_eq!(published.next, Some(start + IPUB), "the DS submitted");
        let early = ds_seen(&zone.dir, new, None, start + 1).unwrap_err();
        assert!(early.contains("submitted only at"), "{early}");
        assert_eq!(zone.sign(start + 3), published, "restart");

        let submitted = zone.sign(start + IPUB);
        assert_eq!(submitted.cds, vec![new], "the new key's CDS alone");
        assert_eq!(submitted.keys, sorted(vec![old, new]));
        assert_eq!(submitted.next, None, "waiting for the parent");
        {
            let stored = keys::read_keys(&zone.dir).unwrap();
            let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
            let awaited: Vec<u16> = awaiting_ds(&metas, start + IPUB)
                .iter()
                .map(|meta| meta.key_tag)
                .collect();
            assert_eq!(awaited, vec![new]);
        }
        assert_eq!(zone.sign(start + 1000), submitted, "restart while waiting");

        let seen = start + 2000;
        assert_eq!(
            ds_seen(&zone.dir, new, Some(30), seen),
            Ok(DsSeen::Recorded)
        );
        let retiring = zone.sign(seen);
        assert!(retiring.cds.is_empty(), "the parent has it: no CDS");
        assert_eq!(
            retiring.keys,
            sorted(vec![old, new]),
            "old signs until removed"
        );
        assert_eq!(retiring.next, Some(seen + DELAY + 30), "the DS TTL seen");
        assert_eq!(zone.sign(seen + 1), retiring, "restart");
        let done = zone.sign(seen + DELAY + 30);
        assert_eq!(done.published, sorted(vec![new, zsk]));
        assert_eq!(done.keys, vec![new]);
        assert_eq!(zone.tags(KeyRole::Ksk), vec![new]);
    }

    /// A CSK rolled by its lifetime: the new one signs the DNSKEY RRset
    /// at once and the zone Ipub later, when its DS is submitted; the old
    /// one signs the DNSKEY RRset until removed, after both the zone's
    /// TTL and the parent's DS TTL (the policy's, seen by hand).
    #[test]
    fn csk_rollover_by_lifetime() {
        let mut policy = policy(KeyScheme::Csk, 0, 50);
        policy.cds_cdnskey = CdsCdnskey::Always;
        let zone = Zone::new("csk", policy);
        let first = zone.sign(T0);
        let old = zone.tags(KeyRole::Csk)[0];
        assert_eq!(first.cds, vec![old], "cds-cdnskey: always");
        assert_eq!(first.next, Some(T0 + 50));
        let start = T0 + 50;
        let published = zone.sign(start);
        let new = *zone
            .tags(KeyRole::Csk)
            .iter()
            .find(|&&tag| tag != old)
            .unwrap();
        assert_eq!(published.keys, sorted(vec![old, new]));
        assert_eq!(published.zone, vec![old]);
        assert_eq!(published.cds, vec![old]);
        assert_eq!(zone.sign(start + 1), published, "restart");
        let active = zone.sign(start + IPUB);
        assert_eq!(active.keys, sorted(vec![old, new]));
        assert_eq!(active.zone, vec![new]);
        assert_eq!(active.cds, vec![new]);
        assert_eq!(active.next, None, "waiting for the parent");
        let seen = start + IPUB + 1;
        assert_eq!(ds_seen(&zone.dir, new, None, seen), Ok(DsSeen::Recorded));
        let retiring = zone.sign(seen);
        // The parent's DS TTL (40, the policy's) outlasts the zone's.
        assert_eq!(retiring.next, Some(seen + DELAY + 40));
        assert_eq!(retiring.keys, sorted(vec![old, new]));
        assert_eq!(zone.sign(seen + 2), retiring, "restart");
        let done = zone.sign(seen + DELAY + 40);
        assert_eq!(
            (done.published.clone(), done.keys.clone()),
            (vec![new], vec![new])
        );
        assert_eq!(done.zone, vec![new]);
        assert_eq!(done.next, Some(start + IPUB + 50), "the new CSK's lifetime");
    }

    /// A start interrupted between its two writes (the old key names a
    /// standby successor never published) is completed at the next
    /// signing; a standby key made by hand is the one a rollover takes; a
    /// successor that is gone abandons the rollover, making no key.
    #[test]
    fn interrupted_starts_and_standby_keys() {
        let zone = Zone::new("standby", policy(KeyScheme::Csk, 0, 0));
        zone.sign(T0);
        let old = zone.tags(KeyRole::Csk)[0];
        let standby = generate_standby(&zone.dir, &zone.policy, KeyRole::Csk, T0 + 1).unwrap();
        assert!(generate_standby(&zone.dir, &zone.policy, KeyRole::Csk, T0 + 1).is_err());
        assert!(generate_standby(&zone.dir, &zone.policy, KeyRole::Zsk, T0 + 1).is_err());
        let idle = zone.sign(T0 + 2);
        assert_eq!(idle.published, vec![old], "a standby key is not published");
        // The old key names it; the crash comes before it is published.
        {
            let mut stored = keys::read_keys(&zone.dir).unwrap();
            let key = stored
                .iter_mut()
                .find(|key| key.meta.key_tag == old)
                .unwrap();
            key.meta.successor = Some(standby);
            key.write_meta().unwrap();
        }
        let resumed = zone.sign(T0 + 3);
        assert_eq!(resumed.published, sorted(vec![old, standby]));
        assert_eq!(resumed.next, Some(T0 + 3 + IPUB));
        assert_eq!(zone.tags(KeyRole::Csk).len(), 2, "no key made");
        // The successor's files deleted by hand: the rollover is abandoned.
        let stored = keys::read_keys(&zone.dir).unwrap();
        stored
            .iter()
            .find(|key| key.meta.key_tag == standby)
            .unwrap()
            .delete()
            .unwrap();
        let abandoned = zone.sign(T0 + 4);
        assert_eq!(abandoned.published, vec![old]);
        assert_eq!(abandoned.zone, vec![old]);
        assert_eq!(zone.tags(KeyRole::Csk), vec![old], "no key made");
    }
}
