//! What each signed zone's signing did last, for `tern zone-status` and
//! the metrics (issue 24, "Control" and "Failure"; docs/operations.md):
//! its last signing (time, duration, signatures made), its failures
//! (counted, the last one's time and cause), the earliest expiration of
//! the signatures it serves, when it is signed next, its keys by role and
//! state, and a KSK or CSK rollover waiting for the parent's DS.
//!
//! The loader ([`crate::load`]) and the signer ([`crate::signing`])
//! record here as they sign, the re-sign thread ([`crate::resign`]) its
//! timers; the control socket and the metrics endpoint read copies. One
//! entry per signed zone (its lowercased wire origin), dropped when the
//! zone stops being signed or served ([`forget`]): the metrics' series
//! are bounded by the signed zones. A process has one table
//! ([`TABLE`]): what it records is the process's signing, however many
//! owners or loads there are.
//!
//! Also here, the checks a signing makes beside the signer's own:
//! a clock in the past ([`check_clock`]) and records of keys that are not
//! the zone's own in its file ([`foreign_keys`], reported once per load).

use std::collections::BTreeMap;
use std::sync::Mutex;

use tern_dnssec::KeyRole;
use tern_wire::name::{LowerNameBuf, Name};
use tern_wire::types::RType;
use tern_zone::RecordList;

use crate::keys::{self, StoredKey};
use crate::policy::Policy;

/// How far the clock may be behind a time tern recorded earlier (a key's
/// creation, the zone's last signing) before a signing is refused as "a
/// clock in the past": small steps of a clock being corrected pass.
pub const CLOCK_TOLERANCE: u64 = 300;

/// The longest failure cause kept (a key file's path and an error).
pub const MAX_CAUSE: usize = 512;

/// The most key tags named in one report of foreign keys.
pub const MAX_FOREIGN_TAGS: usize = 16;

//----------- ZoneSigning ----------------------------------------------------

/// The last successful signing of a zone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LastSigning {
    /// When it began (Unix seconds).
    pub at: u64,
    /// How long it took, in seconds.
    pub duration: f64,
    /// The signatures it made (those kept from the version before not
    /// counted).
    pub signatures: u64,
}

/// The last failed signing of a zone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LastFailure {
    /// When (Unix seconds).
    pub at: u64,
    /// Why: the key file and its error, the clock, the signer's error.
    pub cause: String,
}

/// One signed zone's signing, as recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZoneSigning {
    /// The policy's name.
    pub policy: String,
    /// The policy's `rrsig-refresh`: signatures expiring within this are
    /// overdue for refresh.
    pub refresh: u64,
    /// The policy's `parent-ds-timeout` (0: none).
    pub ds_timeout: u64,
    /// The last successful signing.
    pub last: Option<LastSigning>,
    /// Signatures made by every signing since the start.
    pub signatures_total: u64,
    /// Signings that failed since the start.
    pub failures_total: u64,
    /// The last failed signing.
    pub last_failure: Option<LastFailure>,
    /// The earliest RRSIG expiration of the last version signed (the one
    /// served: a failed signing serves the version before on).
    pub earliest_expiry: Option<u64>,
    /// When the zone is signed again next (the re-sign thread's timer:
    /// signatures due, a key step, or the retry after a failure).
    pub next_resign: Option<u64>,
    /// When a key's next step is due.
    pub next_key_event: Option<u64>,
    /// A KSK or CSK rollover waiting for the parent's DS: since when (the
    /// new key's DS was submitted).
    pub ds_awaited_since: Option<u64>,
    /// The zone's keys by role and state ([`crate::rollover::describe`]'s
    /// word), counted, as the last signing left them.
    pub keys: Vec<(KeyRole, &'static str, u32)>,
}

impl ZoneSigning {
    /// Whether the rollover waiting for the parent's DS has waited longer
    /// than `parent-ds-timeout` at `now`.
    pub fn ds_overdue(&self, now: u64) -> bool {
        self.ds_timeout > 0
            && self
                .ds_awaited_since
                .is_some_and(|since| now.saturating_sub(since) > self.ds_timeout)
    }

    /// Whether the signatures served expire within the refresh margin at
    /// `now` (they should have been made anew by then).
    pub fn expiry_near(&self, now: u64) -> bool {
        self.earliest_expiry
            .is_some_and(|expiry| expiry.saturating_sub(now) < self.refresh)
    }

    /// The words `tern zone-status` shows for a signed zone at `now`:
    /// ` policy P next-resign T rrsig-expiry T last-signing T duration D
    /// signatures N failures N last-failure T "CAUSE"`, then what is
    /// wrong, loudly: signatures expiring within `rrsig-refresh`, a
    /// rollover waiting for the parent's DS (and whether longer than
    /// `parent-ds-timeout`).
    pub fn describe(&self, now: u64) -> String {
        let time = |time: Option<u64>| time.map_or_else(|| "none".to_string(), |t| t.to_string());
        let mut text = format!(
            " policy {} next-resign {} rrsig-expiry {}",
            self.policy,
            time(self.next_resign),
            time(self.earliest_expiry)
        );
        match &self.last {
            Some(last) => text.push_str(&format!(
                " last-signing {} duration {:.3}s signatures {}",
                last.at, last.duration, last.signatures
            )),
            None => text.push_str(" last-signing none"),
        }
        text.push_str(&format!(" failures {}", self.failures_total));
        match &self.last_failure {
            Some(failure) => {
                text.push_str(&format!(" last-failure {} {:?}", failure.at, failure.cause))
            }
            None => text.push_str(" last-failure none"),
        }
        if let Some(since) = self.ds_awaited_since {
            text.push_str(&format!(" awaiting-ds-since {since}"));
            if self.ds_overdue(now) {
                text.push_str(&format!(
                    " DS-OVERDUE (waiting {} s, parent-ds-timeout {} s)",
                    now.saturating_sub(since),
                    self.ds_timeout
                ));
            }
        }
        if self.expiry_near(now) {
            text.push_str(" EXPIRING (signatures served expire within rrsig-refresh)");
        }
        text
    }

    fn policy(&mut self, policy: &Policy) {
        if self.policy != policy.name {
            self.policy.clone_from(&policy.name);
        }
        self.refresh = policy.rrsig_refresh;
        self.ds_timeout = policy.parent_ds_timeout;
    }
}

//----------- the table ------------------------------------------------------

/// Every signed zone's entry, by lowercased wire origin.
pub static TABLE: Mutex<BTreeMap<Box<[u8]>, ZoneSigning>> = Mutex::new(BTreeMap::new());

fn with<T>(f: impl FnOnce(&mut BTreeMap<Box<[u8]>, ZoneSigning>) -> T) -> T {
    // Every change is whole: go on after a panic elsewhere.
    let mut table = TABLE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    f(&mut table)
}

fn entry<'t>(
    table: &'t mut BTreeMap<Box<[u8]>, ZoneSigning>,
    origin: &[u8],
) -> &'t mut ZoneSigning {
    table.entry(origin.into()).or_default()
}

/// The entry of the zone `origin` (lowercased wire form), if signed.
pub fn get(origin: &[u8]) -> Option<ZoneSigning> {
    with(|table| table.get(origin).cloned())
}

/// Every signed zone's entry, in canonical order of their wire origins.
pub fn all() -> Vec<(Box<[u8]>, ZoneSigning)> {
    with(|table| {
        table
            .iter()
            .map(|(origin, zone)| (origin.clone(), zone.clone()))
            .collect()
    })
}

/// The zone `origin` is no longer signed or served: its entry goes.
pub fn forget(origin: &[u8]) {
    with(|table| table.remove(origin));
    with_salts(|salts| salts.remove(origin));
}

//----------- NSEC3 salts ----------------------------------------------------

/// Each NSEC3 zone's salt in use and when this process first used it, by
/// lowercased wire origin: a salt is drawn at a zone's first signing in a
/// process (a start signs whole) and kept by the signings from the
/// previous version, so its age needs no file. A salt read from a saved
/// signed version (a bump-in-the-wire secondary's restart) counts from its
/// first use after the start: a rotation is at most that late.
static SALTS: Mutex<Salts> = Mutex::new(BTreeMap::new());

/// A salt and when it was first used, by lowercased wire origin.
type Salts = BTreeMap<Box<[u8]>, (Vec<u8>, u64)>;

fn with_salts<T>(f: impl FnOnce(&mut Salts) -> T) -> T {
    let mut salts = SALTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    f(&mut salts)
}

/// When the zone `origin` started using `salt`: the time recorded for it,
/// or `now`, recorded, when the zone's salt was another (or none).
pub fn salt_since(origin: Name<'_>, salt: &[u8], now: u64) -> u64 {
    let wire = LowerNameBuf::from_name(origin);
    with_salts(|salts| {
        match salts.get(wire.as_bytes()) {
            Some((known, since)) if known[..] == *salt => return *since,
            _ => {}
        }
        salts.insert(wire.as_bytes().into(), (salt.to_vec(), now));
        now
    })
}

/// When the zone `origin`'s NSEC3 `salt`, in use at `now`, is to be
/// replaced under `nsec3`'s `salt-lifetime` (Knot's `nsec3-salt-lifetime`):
/// `None` for no salt (RFC 9276's empty salt has nothing to rotate) or a
/// lifetime of 0 (never).
pub fn salt_rotation_at(
    origin: Name<'_>,
    nsec3: &crate::policy::Nsec3Policy,
    salt: &[u8],
    now: u64,
) -> Option<u64> {
    if nsec3.salt_lifetime == 0 || salt.is_empty() {
        return None;
    }
    Some(salt_since(origin, salt, now).saturating_add(nsec3.salt_lifetime))
}

/// The re-sign thread's next time for the zone `origin`.
pub fn set_next_resign(origin: &[u8], at: u64) {
    with(|table| {
        if let Some(zone) = table.get_mut(origin) {
            zone.next_resign = Some(at);
        }
    });
}

/// A signing of the zone `origin` under `policy` succeeded: begun at
/// `at`, taking `duration` seconds, making `signatures`; the version's
/// earliest RRSIG expiration.
pub fn signed(
    origin: &[u8],
    policy: &Policy,
    last: LastSigning,
    earliest_expiry: Option<u64>,
    next_key_event: Option<u64>,
) {
    with(|table| {
        let zone = entry(table, origin);
        zone.policy(policy);
        zone.signatures_total = zone.signatures_total.saturating_add(last.signatures);
        zone.last = Some(last);
        zone.earliest_expiry = earliest_expiry;
        zone.next_key_event = next_key_event;
    });
}

/// A signing of the zone `origin` under `policy` failed at `now` for
/// `cause` (the version before, if any, serves on): counted, kept as the
/// last failure, and, when the signatures served expire within the
/// policy's `rrsig-refresh`, logged loudly (at every attempt).
pub fn failed(origin: &[u8], policy: &Policy, cause: &str, now: u64) {
    let mut cause = cause.to_string();
    if cause.len() > MAX_CAUSE {
        let mut end = MAX_CAUSE;
        while !cause.is_char_boundary(end) {
            end -= 1;
        }
        cause.truncate(end);
    }
    let expiring = with(|table| {
        let zone = entry(table, origin);
        zone.policy(policy);
        zone.failures_total = zone.failures_total.saturating_add(1);
        zone.last_failure = Some(LastFailure { at: now, cause });
        zone.earliest_expiry
            .filter(|_| zone.expiry_near(now))
            .map(|expiry| (expiry, zone.failures_total))
    });
    if let Some((expiry, failures)) = expiring {
        let name = crate::origin_text(origin);
        if expiry > now {
            log::error!(
                "zone {name}: signing failed ({failures} failures so far) and the signatures \
                 served expire at {expiry} (in {} s, within rrsig-refresh {} s): fix the cause \
                 before then or the zone goes bogus",
                expiry - now,
                policy.rrsig_refresh
            );
        } else {
            log::error!(
                "zone {name}: signing failed ({failures} failures so far) and the signatures \
                 served expired at {expiry} ({} s ago): validators fail the zone (bogus) until \
                 it is signed",
                now - expiry
            );
        }
    }
}

/// A signing's keys of the zone `origin` after the rollover steps due at
/// `now`: counted by role and state, and the rollover waiting for the
/// parent's DS, if any, logged loudly once it waited longer than the
/// policy's `parent-ds-timeout` (at every signing; it keeps waiting).
pub fn keys_stepped(origin: Name<'_>, stored: &[StoredKey], policy: &Policy, now: u64) {
    let mut counts: Vec<(KeyRole, &'static str, u32)> = Vec::new();
    for key in stored {
        let (state, _) = crate::rollover::describe(&key.meta, policy, now);
        match counts
            .iter_mut()
            .find(|(role, known, _)| *role == key.meta.role && *known == state)
        {
            Some((_, _, count)) => *count = count.saturating_add(1),
            None => counts.push((key.meta.role, state, 1)),
        }
    }
    counts.sort_by_key(|(role, state, _)| (keys::role_text(*role), *state));
    let since = ds_awaited_since(stored, now);
    let wire = LowerNameBuf::from_name(origin);
    let zone = with(|table| {
        let zone = entry(table, wire.as_bytes());
        zone.policy(policy);
        zone.keys = counts;
        zone.ds_awaited_since = since;
        zone.clone()
    });
    warn_ds_overdue(origin, &zone, now);
}

/// The parent check of the zone `origin` (lowercased wire form) did not
/// see the DS awaited at `now`: logged loudly if the rollover has waited
/// longer than `parent-ds-timeout`.
pub fn ds_not_seen(origin: &[u8], now: u64) {
    let (Some(zone), Ok(name)) = (get(origin), Name::from_wire(origin)) else {
        return;
    };
    warn_ds_overdue(name, &zone, now);
}

fn warn_ds_overdue(origin: Name<'_>, zone: &ZoneSigning, now: u64) {
    let Some(since) = zone.ds_awaited_since.filter(|_| zone.ds_overdue(now)) else {
        return;
    };
    log::error!(
        "zone {origin}: the key rollover has waited {} s for the parent's DS (since {since}), \
         longer than parent-ds-timeout {} s: put the DS of `tern keys ds {origin}` at the \
         parent (or check parent.servers); the old key stays until the DS is seen",
        now.saturating_sub(since),
        zone.ds_timeout
    );
}

/// When the zone's KSK or CSK rollover began waiting for the parent's DS
/// at `now`: the submission of the new key's DS, while a rollover is in
/// progress and that DS is not seen. A zone's first key awaiting its DS
/// is no rollover (nothing waits on it) and gives `None`.
pub fn ds_awaited_since(stored: &[StoredKey], now: u64) -> Option<u64> {
    let metas: Vec<&keys::KeyMeta> = stored.iter().map(|key| &key.meta).collect();
    let outgoing = metas[crate::rollover::in_progress(&metas, now)?];
    let successor = outgoing.successor?;
    crate::rollover::awaiting_ds(&metas, now)
        .into_iter()
        .filter(|meta| meta.key_tag == successor)
        .filter_map(|meta| meta.ds_published)
        .min()
}

//----------- checks ---------------------------------------------------------

/// A signing of the zone `origin` at `now` with `stored` keys: refused
/// when the clock is more than [`CLOCK_TOLERANCE`] behind a key's
/// creation or the zone's last signing in this process (signatures made
/// then would expire before those served, and a rollover's times would
/// go back).
pub fn check_clock(origin: Name<'_>, stored: &[StoredKey], now: u64) -> Result<(), String> {
    let behind = |time: u64| time > now.saturating_add(CLOCK_TOLERANCE);
    if let Some(key) = stored.iter().find(|key| behind(key.meta.created)) {
        return Err(format!(
            "the clock ({now}) is in the past: key {} was created at {}; not signing",
            key.meta.key_tag, key.meta.created
        ));
    }
    let wire = LowerNameBuf::from_name(origin);
    let last = with(|table| {
        table
            .get(wire.as_bytes())
            .and_then(|zone| zone.last.as_ref().map(|last| last.at))
    });
    if let Some(last) = last.filter(|&last| behind(last)) {
        return Err(format!(
            "the clock ({now}) is in the past: the zone was last signed at {last}; not signing"
        ));
    }
    Ok(())
}

/// The key tags of the RRSIGs anywhere in `records` and of the DNSKEYs at
/// the apex `origin` that are not of the zone's `stored` keys (an RRSIG
/// is the zone's when a key of its algorithm has its tag; a DNSKEY when
/// its RDATA is a key's): sorted, once each, at most
/// [`MAX_FOREIGN_TAGS`]. The signer replaces them all.
pub fn foreign_keys<R: RecordList + ?Sized>(
    origin: Name<'_>,
    records: &R,
    stored: &[StoredKey],
) -> Vec<u16> {
    let mut tags: Vec<u16> = Vec::new();
    for index in 0..records.len() {
        let record = records.record(index);
        let tag = if record.rtype == RType::RRSIG {
            // Type covered (2), algorithm (1), labels (1), original TTL
            // (4), expiration (4), inception (4), key tag (2), signer.
            let (Some(&algorithm), Some(tag)) = (record.rdata.get(2), record.rdata.get(16..18))
            else {
                continue;
            };
            let tag = u16::from_be_bytes([tag[0], tag[1]]);
            let own = stored
                .iter()
                .any(|key| key.meta.key_tag == tag && key.meta.algorithm.number() == algorithm);
            (!own).then_some(tag)
        } else if record.rtype == RType::DNSKEY && record.owner.eq_ignore_case(origin) {
            let own = stored
                .iter()
                .any(|key| key.key.dnskey_rdata() == record.rdata);
            (!own).then(|| tern_dnssec::key::key_tag(record.rdata))
        } else {
            None
        };
        if let Some(tag) = tag {
            if let Err(at) = tags.binary_search(&tag) {
                if tags.len() < MAX_FOREIGN_TAGS {
                    tags.insert(at, tag);
                }
            }
        }
    }
    tags
}

/// [`foreign_keys`], logged as a warning naming them when there are any
/// (the loader calls it once per load of the zone).
pub fn report_foreign<R: RecordList + ?Sized>(origin: Name<'_>, records: &R, stored: &[StoredKey]) {
    let tags = foreign_keys(origin, records, stored);
    if tags.is_empty() {
        return;
    }
    let list: Vec<String> = tags.iter().map(u16::to_string).collect();
    log::warn!(
        "zone {origin}: its file holds RRSIG or DNSKEY records of keys that are not the zone's \
         own (key tags {}); they are not served: tern signs with its own keys (tern keys list), \
         import those keys (tern keys import) to keep them",
        list.join(", ")
    );
}

/// The Unix time of an RRSIG time field (RFC 4034 section 3.1.5: serial
/// number arithmetic), taken as the one nearest `now`.
pub fn rrsig_time(field: u32, now: u64) -> u64 {
    let low = now & 0xffff_ffff;
    let high = now - low;
    let delta = field.wrapping_sub(low as u32) as i32;
    (high + low).saturating_add_signed(i64::from(delta))
}

/// The earliest expiration of the RRSIGs among `records`, at `now`.
pub fn earliest_expiry<R: RecordList + ?Sized>(records: &R, now: u64) -> Option<u64> {
    (0..records.len())
        .map(|index| records.record(index))
        .filter(|record| record.rtype == RType::RRSIG)
        .filter_map(|record| {
            let field = record.rdata.get(8..12)?;
            Some(rrsig_time(
                u32::from_be_bytes([field[0], field[1], field[2], field[3]]),
                now,
            ))
        })
        .min()
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrsig_times_are_read_near_now() {
        assert_eq!(rrsig_time(1_700_000_100, 1_700_000_000), 1_700_000_100);
        assert_eq!(rrsig_time(1_699_999_000, 1_700_000_000), 1_699_999_000);
        // After 2106 the field wraps: the time nearest now.
        let now = (1u64 << 32) + 10;
        assert_eq!(rrsig_time(4_294_967_000, now), 4_294_967_000);
        assert_eq!(rrsig_time(100, now), (1 << 32) + 100);
    }

    #[test]
    fn failures_are_counted_and_expiry_near_is_seen() {
        let origin = b"\x0bsign-status\x04test\x00";
        let mut policy = Policy::new("p".into());
        policy.rrsig_refresh = 100;
        signed(
            origin,
            &policy,
            LastSigning {
                at: 1000,
                duration: 0.5,
                signatures: 7,
            },
            Some(1500),
            None,
        );
        signed(
            origin,
            &policy,
            LastSigning {
                at: 1100,
                duration: 0.25,
                signatures: 3,
            },
            Some(1600),
            Some(2000),
        );
        failed(origin, &policy, &"x".repeat(2 * MAX_CAUSE), 1200);
        let zone = get(origin).unwrap();
        assert_eq!(zone.signatures_total, 10);
        assert_eq!(zone.failures_total, 1);
        assert_eq!(zone.last.as_ref().map(|last| last.at), Some(1100));
        let failure = zone.last_failure.clone().unwrap();
        assert_eq!((failure.at, failure.cause.len()), (1200, MAX_CAUSE));
        assert!(!zone.expiry_near(1400));
        assert!(zone.expiry_near(1501));
        set_next_resign(origin, 1230);
        assert_eq!(get(origin).unwrap().next_resign, Some(1230));
        forget(origin);
        assert_eq!(get(origin), None);
        set_next_resign(origin, 1);
        assert_eq!(get(origin), None, "a timer alone makes no entry");
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tern-sign-status-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A zone file's RRSIG and apex DNSKEY of keys not the zone's are
    /// found by tag; the zone's own (in what tern signed) are not.
    #[test]
    fn foreign_keys_are_found_by_tag() {
        let dir = scratch("foreign");
        let origin = tern_wire::name::NameBuf::from_text(b"example.", None).unwrap();
        let now = crate::unix_time();
        let stored = keys::load_or_generate(
            &dir,
            origin.as_name(),
            tern_dnssec::Algorithm::EcdsaP256Sha256,
            2048,
            keys::KeyScheme::Csk,
            now,
        )
        .unwrap();
        let foreign_key = [7u8; 64];
        let dnskey = tern_dnssec::key::dnskey_rdata(257, 13, &foreign_key);
        let foreign_tag = tern_dnssec::key::key_tag(&dnskey);
        let encode = |octets: &[u8]| data_encoding::BASE64.encode(octets);
        let text = format!(
            "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\nns A 192.0.2.1\n\
             @ DNSKEY 257 3 13 {}\nns RRSIG A 13 2 300 20300101000000 20200101000000 4321 \
             example. {}\nsub DNSKEY 257 3 13 {}\n",
            encode(&foreign_key),
            encode(&[0; 64]),
            encode(&[9; 64])
        );
        let file = dir.join("example.zone");
        let mut records = tern_zone::Records::new();
        tern_zone::scan_bytes(
            text.as_bytes(),
            &file,
            origin.as_name(),
            &tern_zone::Options::default(),
            &mut tern_zone::FileInclude,
            &mut records,
        )
        .unwrap();
        let mut wanted = vec![4321, foreign_tag];
        wanted.sort_unstable();
        assert_eq!(
            foreign_keys(origin.as_name(), &records, &stored),
            wanted,
            "the DNSKEY below the apex is data, not a key of the zone"
        );
        let policy = Policy::new("p".into());
        tern_zone::ttl::settle_ttls(&mut records);
        let signed =
            crate::signing::sign(origin.as_name(), &records, &policy, &dir, now, None).unwrap();
        assert!(foreign_keys(origin.as_name(), &signed.zone.records, &stored).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An NSEC3 salt is kept by the signings from the previous version
    /// until it is `salt-lifetime` old, then a new one is drawn (the
    /// whole chain made again in that version); its rotation is the
    /// zone's next key event. An empty salt or a lifetime of 0 is never
    /// rotated.
    #[test]
    fn nsec3_salts_rotate_after_their_lifetime() {
        let dir = scratch("salt");
        let origin = tern_wire::name::NameBuf::from_text(b"salt.test.", None).unwrap();
        let text = "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
                    ns A 192.0.2.1\nwww A 192.0.2.80\n";
        let mut records = tern_zone::Records::new();
        tern_zone::scan_bytes(
            text.as_bytes(),
            &dir.join("salt.zone"),
            origin.as_name(),
            &tern_zone::Options::default(),
            &mut tern_zone::FileInclude,
            &mut records,
        )
        .unwrap();
        tern_zone::ttl::settle_ttls(&mut records);
        let mut policy = Policy::new("p".into());
        policy.nsec3 = Some(crate::policy::Nsec3Policy {
            salt_length: 4,
            salt_lifetime: 1000,
            ..Default::default()
        });
        let salt_of = |records: &[tern_zone::Record]| -> Vec<u8> {
            let param = records
                .iter()
                .find(|record| record.rtype == RType::NSEC3PARAM)
                .unwrap();
            param.rdata[5..].to_vec()
        };
        let t0 = 1_800_000_000;
        let first =
            crate::signing::sign(origin.as_name(), &records, &policy, &dir, t0, None).unwrap();
        let salt = salt_of(&first.zone.records);
        assert_eq!(first.next_key_event, Some(t0 + 1000), "the salt's rotation");
        let again = |previous: &[tern_zone::Record], now: u64| {
            crate::signing::sign_again(
                origin.as_name(),
                previous,
                &records,
                &policy,
                &dir,
                now,
                Some(1),
            )
            .unwrap()
        };
        let kept = again(&first.zone.records, t0 + 999);
        assert_eq!(
            salt_of(&kept.zone.records),
            salt,
            "younger than its lifetime"
        );
        assert_eq!(kept.next_key_event, Some(t0 + 1000));
        let rotated = again(&kept.zone.records, t0 + 1000);
        let new_salt = salt_of(&rotated.zone.records);
        assert_ne!(new_salt, salt, "a new salt at its lifetime");
        assert_eq!(new_salt.len(), 4);
        assert_eq!(rotated.next_key_event, Some(t0 + 2000));
        let previous_hashes = |records: &[tern_zone::Record]| -> Vec<String> {
            records
                .iter()
                .filter(|record| record.rtype == RType::NSEC3)
                .map(|record| record.owner.as_name().to_string())
                .collect()
        };
        let before = previous_hashes(&kept.zone.records);
        let after = previous_hashes(&rotated.zone.records);
        assert_eq!(before.len(), after.len());
        assert!(
            before.iter().all(|owner| !after.contains(owner)),
            "a whole new chain"
        );
        // No rotation without a salt, nor with a lifetime of 0.
        let never = crate::policy::Nsec3Policy {
            salt_length: 4,
            salt_lifetime: 0,
            ..Default::default()
        };
        assert_eq!(
            salt_rotation_at(origin.as_name(), &never, &new_salt, t0),
            None
        );
        let empty = crate::policy::Nsec3Policy {
            salt_lifetime: 1000,
            ..Default::default()
        };
        assert_eq!(salt_rotation_at(origin.as_name(), &empty, &[], t0), None);
        forget(LowerNameBuf::from_name(origin.as_name()).as_bytes());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A signing more than the tolerance before a key's creation, or
    /// before the zone's last signing, is refused.
    #[test]
    fn a_clock_in_the_past_is_refused() {
        let dir = scratch("clock");
        let origin = tern_wire::name::NameBuf::from_text(b"clock.test.", None).unwrap();
        let stored = keys::load_or_generate(
            &dir,
            origin.as_name(),
            tern_dnssec::Algorithm::EcdsaP256Sha256,
            2048,
            keys::KeyScheme::Csk,
            10_000,
        )
        .unwrap();
        assert!(check_clock(origin.as_name(), &stored, 10_000 - CLOCK_TOLERANCE).is_ok());
        let err = check_clock(origin.as_name(), &stored, 10_000 - CLOCK_TOLERANCE - 1).unwrap_err();
        assert!(err.contains("in the past"), "{err}");
        let wire = LowerNameBuf::from_name(origin.as_name());
        signed(
            wire.as_bytes(),
            &Policy::new("p".into()),
            LastSigning {
                at: 20_000,
                ..LastSigning::default()
            },
            None,
            None,
        );
        assert!(check_clock(origin.as_name(), &stored, 20_000).is_ok());
        assert!(check_clock(origin.as_name(), &stored, 19_000).is_err());
        forget(wire.as_bytes());
        // Through the signer: nothing is signed, the keys are untouched.
        let records = tern_zone::Records::new();
        let policy = Policy::new("p".into());
        let err = crate::signing::sign(origin.as_name(), &records, &policy, &dir, 5_000, None)
            .unwrap_err();
        assert!(err.contains("in the past"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A load whose signing fails (a corrupt key) is counted with its
    /// cause; one that succeeds records the signing and the earliest
    /// expiry of what it made.
    #[test]
    fn loads_record_signings_and_failures() {
        let dir = scratch("load");
        let zone_file = dir.join("status.zone");
        std::fs::write(
            &zone_file,
            "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\nns A 192.0.2.1\n",
        )
        .unwrap();
        let origin: Box<[u8]> = b"\x0bstatus-load\x04test\x00"[..].into();
        let policy = std::sync::Arc::new(Policy::new("p".to_string()));
        let sources = crate::load::Sources {
            dir: None,
            listed: vec![("status-load.test.".to_string(), zone_file)],
            signing: Some(crate::signing::Signing::new(
                dir.join("state"),
                1,
                vec![(origin.clone(), policy.clone())],
            )),
        };
        let now = crate::unix_time();
        let loaded = crate::load::load_one(&sources, &origin, None).unwrap();
        assert_eq!(loaded.zones.len(), 1);
        let zone = get(&origin).unwrap();
        assert_eq!(zone.policy, "p");
        assert_eq!(zone.failures_total, 0);
        let last = zone.last.clone().unwrap();
        assert!(last.signatures >= 4 && last.at >= now, "{last:?}");
        let expiry = zone.earliest_expiry.unwrap();
        assert!(
            expiry >= now + policy.rrsig_lifetime
                && expiry <= crate::unix_time() + policy.rrsig_lifetime
        );
        assert_eq!(zone.keys, vec![(KeyRole::Csk, "active", 1)]);
        assert_eq!(zone.ds_awaited_since, None, "a first key is no rollover");

        let key_dir = dir.join("state/keys/status-load.test.");
        let pem = std::fs::read_dir(&key_dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .find(|path| path.extension().is_some_and(|ext| ext == "pem"))
            .unwrap();
        std::fs::write(
            &pem,
            "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let loaded = crate::load::load_one(&sources, &origin, None).unwrap();
        assert_eq!((loaded.zones.len(), loaded.signing_failed), (0, 1));
        let zone = get(&origin).unwrap();
        assert_eq!(zone.failures_total, 1);
        let cause = &zone.last_failure.as_ref().unwrap().cause;
        assert!(cause.contains(&*pem.to_string_lossy()), "{cause}");
        assert_eq!(zone.last, Some(last), "the last success is kept");
        assert!(zone
            .describe(crate::unix_time())
            .contains(" failures 1 last-failure "));
        forget(&origin);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ds_overdue_only_with_a_timeout() {
        let mut zone = ZoneSigning {
            ds_awaited_since: Some(100),
            ..ZoneSigning::default()
        };
        assert!(!zone.ds_overdue(10_000), "no timeout: never overdue");
        zone.ds_timeout = 50;
        assert!(!zone.ds_overdue(150));
        assert!(zone.ds_overdue(151));
        zone.ds_awaited_since = None;
        assert!(!zone.ds_overdue(10_000));
    }
}
