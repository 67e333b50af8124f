//! Secondary zones signed by tern ("bump in the wire", issue 24;
//! docs/decisions/0014): a `zones.secondary` entry with `dnssec-policy`
//! is received unsigned from its (hidden) primary and served signed with
//! tern's own keys.
//!
//! The refresh thread ([`crate::refresh`]) keeps the zone as received, and
//! asks the primary for IXFR from that version's serial: the increments
//! apply to the unsigned copy, which is also the one saved in
//! `STATE/secondary/` (a restart transfers on from it). The unsigned copy
//! is never served. Each version received is handed here (`Bump::received`)
//! and signed on a thread of its own (`tern-bump`, off the cores and off
//! the refresh thread, one zone at a time) as a primary zone is signed as
//! it is loaded: whole the first time ([`crate::signing::sign`]), then
//! from the previous signed version ([`crate::signing::sign_again`]), with
//! the same policies, keys and rollover steps. The signed version goes to
//! the owner ([`crate::owner::Zones`]), which serves it, records the
//! signer's difference in the zone's IXFR history and NOTIFYs it, and
//! enters its re-signing time on `tern-resign`; when that time comes the
//! last version received is signed again (never transferred again).
//!
//! The serial served is the signer's: one more than the higher of the
//! serial received and the serial served before (RFC 1982 arithmetic), so
//! it never equals the primary's and never goes back. A version that
//! cannot be signed (a key file missing or corrupt) is logged with the
//! zone and the cause and replaces nothing: the previous signed version
//! serves on, and the signing is tried again after a back-off
//! ([`crate::resign`]).
//!
//! Each signed version is saved in `STATE/signed/ORIGIN.zone` (and its
//! serial in `STATE/signed/ORIGIN.serial`), in the signer's order: a
//! restart serves it at once, signs the next version from it, and signs
//! the saved unsigned copy again (the keys' steps and signatures due since)
//! before refreshing from the primary.
//!
//! A consumed catalog (`zones.catalog`) with `dnssec-policy` has each of
//! its members signed the same way, under the catalog's policy: a member
//! gets its entry here when its catalog first lists it (at start, from the
//! catalog's saved copy, [`Bump::plan_start`]; later, as the catalog
//! changes, [`Bump::add_member`]), its keys made at its first signing.
//! A member the catalog drops ([`Bump::remove_member`]) stops being signed
//! and served: its saved signed copy is deleted, its keys and last serial
//! stay in the state directory, so that the same zone listed again is
//! signed with the same keys above the serial it was served with.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, Weak};

use tern_authority::{Zone, ZoneBuilder};
use tern_dnssec::Change;
use tern_wire::name::{LowerNameBuf, Name, NameBuf};
use tern_xfr::axfr::serial_at_or_after;
use tern_zone::{RecordList, Records, Sink};

use crate::load::Origin;
use crate::refresh::SecondaryConfig;
use crate::rollover::ZoneKeys;
use crate::signing::{apex_serial, served_records, Policy, Signing};
use crate::start::Plan;
use crate::{file_stem, unix_time};

//----------- SignedSecondary ------------------------------------------------

/// A signed version of a secondary zone, for the owner to serve.
#[derive(Debug)]
pub(crate) struct SignedSecondary {
    /// The zone to serve.
    pub(crate) zone: Arc<Zone>,
    /// The serial of the signed version it was signed from and what
    /// changed since, when signed from one.
    pub(crate) change: Option<(u32, Change)>,
    /// When it must be signed again.
    pub(crate) resign_at: u64,
    /// `resign_at` is a key rollover's step.
    pub(crate) key_event_first: bool,
    /// The zone's keys as this signing left them.
    pub(crate) keys: Arc<ZoneKeys>,
    /// The serial of the version received that was signed.
    pub(crate) received: u32,
}

//----------- Bump -----------------------------------------------------------

/// The secondary zones tern signs: each one's policy, last version
/// received and signed records, and the thread that signs them.
pub struct Bump {
    state_directory: PathBuf,
    zones: Mutex<HashMap<Origin, Entry>>,
    /// The consumed catalogs with a policy: their members are signed.
    catalogs: HashMap<Origin, Arc<Policy>>,
    /// The signing thread's queue, once it runs.
    jobs: Mutex<Option<Sender<Origin>>>,
}

/// One signed secondary zone.
struct Entry {
    policy: Arc<Policy>,
    /// The last version received, unsigned (never served).
    unsigned: Option<Arc<Zone>>,
    /// The records of the signed version served, in the signer's order:
    /// the next version is signed from them.
    signed: Option<Arc<Records>>,
    /// Its keys, as the last signing left them.
    keys: Option<Arc<ZoneKeys>>,
    /// A signing is queued and has not started.
    queued: bool,
}

impl Bump {
    /// The secondary zones of `secondaries` that `signing` names a policy
    /// for, and the members of those of `catalogs` it names one for (added
    /// as they are listed); `None` if there are none.
    pub fn new(
        signing: Option<&Signing>,
        secondaries: &[SecondaryConfig],
        catalogs: &[SecondaryConfig],
    ) -> Option<Arc<Bump>> {
        let signing = signing?;
        let catalogs: HashMap<Origin, Arc<Policy>> = catalogs
            .iter()
            .filter_map(|config| {
                let origin = config.origin.as_bytes();
                Some((origin.into(), Arc::clone(signing.shared_policy(origin)?)))
            })
            .collect();
        let zones: HashMap<Origin, Entry> = secondaries
            .iter()
            .filter_map(|config| {
                let origin = config.origin.as_bytes();
                let policy = signing.shared_policy(origin)?;
                Some((
                    origin.into(),
                    Entry {
                        policy: Arc::clone(policy),
                        unsigned: None,
                        signed: None,
                        keys: None,
                        queued: false,
                    },
                ))
            })
            .collect();
        (!(zones.is_empty() && catalogs.is_empty())).then(|| {
            Arc::new(Bump {
                state_directory: signing.state_directory.clone(),
                zones: Mutex::new(zones),
                catalogs,
                jobs: Mutex::new(None),
            })
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Origin, Entry>> {
        // Every change to the table is whole: go on after a panic.
        self.zones
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether `origin` (lowercased wire form) is a secondary zone tern
    /// signs.
    pub fn signs(&self, origin: &[u8]) -> bool {
        self.lock().contains_key(origin)
    }

    /// Whether members of the consumed catalog `catalog` (lowercased wire
    /// form) are signed.
    pub fn signs_members_of(&self, catalog: &[u8]) -> bool {
        self.catalogs.contains_key(catalog)
    }

    /// The consumed catalog `catalog` (lowercased wire form) lists
    /// `member`: if the catalog has a policy, the member is signed under
    /// it from now on (an entry with nothing received yet; a member
    /// already known is left as it is). Whether it is signed.
    pub fn add_member(&self, member: LowerNameBuf, catalog: &[u8]) -> bool {
        let Some(policy) = self.catalogs.get(catalog) else {
            return false;
        };
        self.lock()
            .entry(member.as_bytes().into())
            .or_insert_with(|| Entry {
                policy: Arc::clone(policy),
                unsigned: None,
                signed: None,
                keys: None,
                queued: false,
            });
        true
    }

    /// The member `origin` (lowercased wire form) left its catalog: it is
    /// no longer signed, its status entry and saved signed copy go; its
    /// keys and the serial it was last served with stay (`STATE/keys/`,
    /// `STATE/signed/ORIGIN.serial`). A signing under way finishes, but
    /// its version is not served (the owner no longer has the zone).
    pub fn remove_member(&self, origin: LowerNameBuf) {
        if self.lock().remove(origin.as_bytes()).is_none() {
            return;
        }
        crate::sign_status::forget(origin.as_bytes());
        let path = signed_path(&self.state_directory, origin);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => log::warn!("{}: cannot delete: {err}", path.display()),
        }
    }

    /// Changes the start `plan` for the signed secondary zones: the
    /// members that the saved copies of catalogs with a policy list are
    /// signed; the saved unsigned copies go to the refresh thread only
    /// (kept here, to be signed), and the saved signed copies, if any,
    /// serve at once. Bound: the zones in the plan, and the signed copies
    /// read.
    pub fn plan_start(&self, plan: &mut Plan) {
        for (catalog, members) in &plan.consumed {
            for member in members {
                self.add_member(*member, catalog.origin.as_bytes());
            }
        }
        let mut zones = self.lock();
        for (config, saved) in &plan.starts {
            let Some(entry) = zones.get_mut(config.origin.as_bytes()) else {
                continue;
            };
            if let Some((unsigned, _)) = saved {
                plan.served.retain(|zone| !Arc::ptr_eq(zone, unsigned));
                entry.unsigned = Some(Arc::clone(unsigned));
            }
            match load_signed(&self.state_directory, config.origin) {
                Ok(Some((zone, records))) => {
                    log::info!(
                        "zone {}: serving its saved signed version, serial {}",
                        config.origin.as_name(),
                        zone.serial()
                    );
                    plan.served.push(Arc::new(zone));
                    entry.signed = Some(Arc::new(records));
                }
                Ok(None) => {}
                Err(err) => log::warn!(
                    "zone {}: its saved signed copy is not used ({err}); it is signed again \
                     from its unsigned copy",
                    config.origin.as_name()
                ),
            }
        }
    }

    /// A new version of `zone` was received: it is kept, unsigned, and
    /// signed on the signing thread.
    pub(crate) fn received(&self, zone: Arc<Zone>) {
        let origin: Origin = zone.origin().as_bytes().into();
        match self.lock().get_mut(&origin) {
            Some(entry) => entry.unsigned = Some(zone),
            None => return,
        }
        self.queue(&origin);
    }

    /// The zone expired (not refreshed within its SOA's EXPIRE): its
    /// unsigned copy is dropped, so that nothing signs it again until a
    /// transfer brings a new one.
    pub(crate) fn expired(&self, origin: &[u8]) {
        if let Some(entry) = self.lock().get_mut(origin) {
            entry.unsigned = None;
        }
    }

    /// Asks for the zone `origin` (lowercased wire form) to be signed again
    /// from its last version received (its re-signing time, a rollover
    /// step, a DS seen). A signing already queued is not queued twice.
    pub(crate) fn queue(&self, origin: &[u8]) {
        {
            let mut zones = self.lock();
            let Some(entry) = zones.get_mut(origin) else {
                return;
            };
            if entry.queued {
                return;
            }
            entry.queued = true;
        }
        let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(jobs) = &*jobs {
            let _ = jobs.send(origin.into());
        }
    }

    /// The keys of the signed secondary zone `origin`, as its last
    /// signing left them.
    pub(crate) fn keys(&self, origin: &[u8]) -> Option<Arc<ZoneKeys>> {
        self.lock().get(origin)?.keys.clone()
    }

    /// Every signed secondary zone's keys.
    pub(crate) fn all_keys(&self) -> Vec<Arc<ZoneKeys>> {
        self.lock()
            .values()
            .filter_map(|entry| entry.keys.clone())
            .collect()
    }

    /// Starts the signing thread, which hands each signed version to
    /// `zones`, and queues the signing of every zone that has a copy
    /// received (a start: what is due since the last signing).
    pub(crate) fn start(self: &Arc<Self>, zones: Weak<dyn Publish>) -> std::io::Result<()> {
        let (sender, jobs) = mpsc::channel();
        *self.jobs.lock().unwrap_or_else(|p| p.into_inner()) = Some(sender);
        let bump = Arc::clone(self);
        std::thread::Builder::new()
            .name("tern-bump".into())
            .spawn(move || run(&bump, &jobs, &zones))?;
        let waiting: Vec<Origin> = self
            .lock()
            .iter()
            .filter(|(_, entry)| entry.unsigned.is_some())
            .map(|(origin, _)| origin.clone())
            .collect();
        for origin in waiting {
            self.queue(&origin);
        }
        Ok(())
    }

    /// Signs the last version received of `origin`: `None` if there is
    /// none (nothing received, or expired).
    fn sign(&self, origin: &[u8]) -> Option<Result<SignedSecondary, String>> {
        let (policy, unsigned, previous) = {
            let mut zones = self.lock();
            let entry = zones.get_mut(origin)?;
            entry.queued = false;
            (
                Arc::clone(&entry.policy),
                entry.unsigned.clone()?,
                entry.signed.clone(),
            )
        };
        let result = sign_received(
            &unsigned,
            previous.as_deref(),
            &policy,
            &self.state_directory,
        );
        // Counted and kept for the metrics and `tern zone-status`, as a
        // primary zone's failure is.
        if let Err(cause) = &result {
            crate::sign_status::failed(origin, &policy, cause, unix_time());
        }
        Some(result.map(|(signed, records)| {
            if let Err(err) = save_signed(&self.state_directory, signed.zone.origin(), &records) {
                log::warn!(
                    "zone {}: cannot save its signed version: {err}",
                    signed.zone.origin()
                );
            }
            let mut zones = self.lock();
            let Some(entry) = zones.get_mut(origin) else {
                // A member removed while it was signed
                // ([`Bump::remove_member`]): neither its saved copy nor
                // its status stays.
                drop(zones);
                let origin = LowerNameBuf::from_name(signed.zone.origin());
                let _ = std::fs::remove_file(signed_path(&self.state_directory, origin));
                crate::sign_status::forget(origin.as_bytes());
                return signed;
            };
            entry.signed = Some(Arc::new(records));
            entry.keys = Some(Arc::clone(&signed.keys));
            signed
        }))
    }
}

/// Where the signing thread hands its outcomes: the owner of the zones'
/// versions, which holds the [`Bump`] (a trait, so that this module need
/// not know the owner's type).
pub(crate) trait Publish: Send + Sync {
    /// Serves `signed`, records its difference and NOTIFYs.
    fn serve_signed_secondary(&self, signed: SignedSecondary);
    /// Notes that the version received of `origin` could not be signed,
    /// and schedules a retry.
    fn signed_secondary_failed(&self, origin: &[u8], reason: &str);
}

/// The signing thread: one zone at a time, until the owner is gone or the
/// queue closes.
fn run(bump: &Bump, jobs: &Receiver<Origin>, zones: &Weak<dyn Publish>) {
    for origin in jobs {
        let Some(outcome) = bump.sign(&origin) else {
            continue;
        };
        let Some(zones) = zones.upgrade() else {
            return;
        };
        let name = crate::load::origin_text(&origin);
        match outcome {
            Ok(signed) => zones.serve_signed_secondary(signed),
            Err(err) => {
                log::error!(
                    "zone {name}: the version received is not signed, the previous signed \
                     version serves on: {err}"
                );
                zones.signed_secondary_failed(&origin, &err);
            }
        }
    }
}

/// The records of `zone` as a list to sign, each RRset's TTL settled.
fn records_of(zone: &Zone) -> Result<Records, String> {
    let mut records = served_records(zone)?;
    tern_zone::ttl::settle_ttls(&mut records);
    Ok(records)
}

/// The serial a signed version is made above: the higher of the serial
/// received and the one served before (if any), so that the signer's is
/// above both.
fn serial_above(received: u32, served: Option<u32>) -> u32 {
    match served {
        Some(served) if serial_at_or_after(served, received) => served,
        _ => received,
    }
}

/// Signs the version received `unsigned` under `policy`, from `previous`
/// (the signed records served) when given: the version to serve and its
/// records, in the signer's order.
fn sign_received(
    unsigned: &Zone,
    previous: Option<&Records>,
    policy: &Arc<Policy>,
    state_directory: &Path,
) -> Result<(SignedSecondary, Records), String> {
    let started = std::time::Instant::now();
    let origin = NameBuf::from_name(unsigned.origin());
    let name = origin.as_name();
    let records = records_of(unsigned)?;
    let served = previous
        .and_then(|previous| apex_serial(name, previous))
        .or_else(|| crate::signed_serial::load_signed_serial(state_directory, name.as_bytes()));
    let above = Some(serial_above(unsigned.serial(), served));
    let now = unix_time();
    let (signed, next, change, made, kept) = match previous {
        Some(previous) => {
            let resigned = crate::signing::sign_again(
                name,
                previous,
                &records,
                policy,
                state_directory,
                now,
                above,
            )?;
            let zone = resigned.zone;
            let next = zone
                .next_refresh
                .unwrap_or_else(|| crate::signing::resign_due(policy, now));
            let change = apex_serial(name, previous).zip(zone.difference);
            let signed = crate::signing::Signed {
                zone: zone.records,
                next_key_event: resigned.next_key_event,
                awaiting_ds: resigned.awaiting_ds,
            };
            (signed, next, change, zone.signatures, zone.kept)
        }
        None => {
            let signed = crate::signing::sign(name, &records, policy, state_directory, now, above)?;
            let next = crate::signing::next_resign(policy, now, &signed.zone.records);
            let made = signed.zone.signatures;
            let signed = crate::signing::Signed {
                zone: signed.zone.records,
                next_key_event: signed.next_key_event,
                awaiting_ds: signed.awaiting_ds,
            };
            (signed, next, None, made, 0)
        }
    };
    drop(records);
    let mut compact = Records::new();
    Sink::reserve(&mut compact, signed.zone.len());
    for record in &signed.zone {
        Sink::record(&mut compact, record.as_record_ref()).map_err(str::to_string)?;
    }
    let key_event = signed.next_key_event;
    // Recorded for the metrics and `tern zone-status`, as a primary
    // zone's signing is.
    crate::sign_status::signed(
        LowerNameBuf::from_name(name).as_bytes(),
        policy,
        crate::sign_status::LastSigning {
            at: now,
            duration: started.elapsed().as_secs_f64(),
            signatures: made as u64,
        },
        crate::sign_status::earliest_expiry(&compact, now),
        key_event,
    );
    let keys = ZoneKeys {
        origin,
        dir: crate::keys::key_dir(state_directory, name),
        policy: Arc::clone(policy),
        next_event: key_event,
        awaiting_ds: signed.awaiting_ds,
    };
    drop(signed);
    let zone = build(name, &compact)?;
    log::info!(
        "zone {name}: serial {} received signed as serial {}, {made} signatures made, {kept} \
         kept, in {} ms",
        unsigned.serial(),
        zone.serial(),
        started.elapsed().as_millis()
    );
    Ok((
        SignedSecondary {
            zone: Arc::new(zone),
            change,
            resign_at: key_event.map_or(next, |at| at.min(next)),
            key_event_first: key_event.is_some_and(|at| at < next),
            keys: Arc::new(keys),
            received: unsigned.serial(),
        },
        compact,
    ))
}

/// Builds the zone `origin` served from `records`.
pub(crate) fn build<R: RecordList + ?Sized>(origin: Name<'_>, records: &R) -> Result<Zone, String> {
    let mut builder = ZoneBuilder::new(origin);
    let rdata: usize = (0..records.len())
        .map(|index| records.record(index).rdata.len())
        .sum();
    builder.reserve(records.len(), rdata);
    for record in (0..records.len()).map(|index| records.record(index)) {
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
    builder
        .finish()
        .map_err(|err| format!("building the signed zone: {err}"))
}

/// `STATE/signed/ORIGIN.zone`: the signed version of a secondary zone
/// served last, in the signer's order.
fn signed_path(state_directory: &Path, origin: LowerNameBuf) -> PathBuf {
    state_directory
        .join("signed")
        .join(format!("{}zone", file_stem(origin)))
}

/// Saves the signed version of `origin` made of `records`, in the
/// signer's order (canonical order of owners: the incremental signer
/// reads the previous version in step with the new one).
fn save_signed(state_directory: &Path, origin: Name<'_>, records: &Records) -> std::io::Result<()> {
    let origin = LowerNameBuf::from_name(origin);
    let mut text = format!(
        "; {} received by transfer and signed by tern; tern rewrites this file\n",
        origin.as_name()
    );
    for record in records.iter() {
        tern_zone::print::write_record(&record.to_record(), &mut text);
    }
    crate::state::write_atomically(&signed_path(state_directory, origin), text.as_bytes())
}

/// The saved signed version of `origin` and its records, in the order
/// saved; `None` if there is none.
fn load_signed(
    state_directory: &Path,
    origin: LowerNameBuf,
) -> Result<Option<(Zone, Records)>, String> {
    let path = signed_path(state_directory, origin);
    let data = match std::fs::read(&path) {
        Ok(data) => data,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("{}: {err}", path.display())),
    };
    let mut records = Records::new();
    tern_zone::scan_bytes(
        &data,
        &path,
        origin.as_name(),
        &tern_zone::Options::default(),
        &mut NoInclude,
        &mut records,
    )
    .map_err(|errors| format!("{}: {errors}", path.display()))?;
    let zone = build(origin.as_name(), &records)?;
    Ok(Some((zone, records)))
}

/// A saved copy includes nothing: tern wrote it.
struct NoInclude;

impl tern_zone::Include for NoInclude {
    fn include(&mut self, _: &Path, target: &str) -> Result<tern_zone::IncludedFile, String> {
        Err(format!("$INCLUDE {target} in a saved copy"))
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    /// The signer's serial is above both the serial received and the one
    /// served before, in serial arithmetic.
    #[test]
    fn serial_above_received_and_served() {
        assert_eq!(serial_above(10, None), 10);
        assert_eq!(serial_above(10, Some(12)), 12);
        assert_eq!(serial_above(13, Some(12)), 13);
        assert_eq!(serial_above(2, Some(u32::MAX)), 2, "wrapped");
        assert_eq!(serial_above(u32::MAX, Some(2)), 2, "wrapped");
    }

    const ORIGIN: &str = "bump.test.";

    /// The zone received at `serial`, with a name added when `extra`.
    fn received(serial: u32, extra: bool) -> Arc<Zone> {
        received_in(ORIGIN, serial, extra)
    }

    /// The zone `origin` received at `serial`, with a name added when
    /// `extra`.
    fn received_in(origin: &str, serial: u32, extra: bool) -> Arc<Zone> {
        let mut text = format!(
            "$TTL 3600\n@ SOA ns1 hostmaster {serial} 7200 3600 1209600 300\n@ NS ns1\n\
             ns1 A 192.0.2.1\nwww A 192.0.2.80\n"
        );
        if extra {
            text.push_str("added A 192.0.2.7\n");
        }
        let origin = NameBuf::from_text(origin.as_bytes(), None).unwrap();
        let mut records = Records::new();
        tern_zone::scan_bytes(
            text.as_bytes(),
            Path::new("received"),
            origin.as_name(),
            &tern_zone::Options::default(),
            &mut NoInclude,
            &mut records,
        )
        .unwrap();
        Arc::new(build(origin.as_name(), &records).unwrap())
    }

    /// A version received is signed whole, then from the signed version
    /// before (the signer's difference from its serial), each at a serial
    /// above both the one received and the one served; one that cannot be
    /// signed (a key file gone) changes nothing kept; the signed copy
    /// saved reads back in the signer's order (the next signing from it
    /// is incremental).
    #[test]
    fn received_versions_signed_above_both_serials() {
        let dir = std::env::temp_dir().join(format!("tern-bump-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let name = NameBuf::from_text(ORIGIN.as_bytes(), None).unwrap();
        let origin = LowerNameBuf::from_name(name.as_name());
        let key: Origin = origin.as_bytes().into();
        let policy = Arc::new(Policy::new("p".to_string()));
        let signing = Signing::new(dir.clone(), 1, vec![(key.clone(), policy)]);
        let config = SecondaryConfig {
            origin,
            primaries: Vec::new(),
            key: None,
            tls: None,
        };
        let bump = Bump::new(Some(&signing), &[config], &[]).unwrap();
        assert!(bump.signs(&key) && !bump.signs(b"\x01x\x00"));
        let sign = |zone: Arc<Zone>| {
            bump.lock().get_mut(&key).unwrap().unsigned = Some(zone);
            bump.sign(&key).unwrap()
        };

        let first = sign(received(100, false)).unwrap();
        assert_eq!((first.zone.serial(), first.received), (101, 100));
        assert!(first.change.is_none(), "signed whole");
        assert!(
            first.zone.record_count() > 5,
            "signed: DNSKEY, NSEC, RRSIGs"
        );
        assert!(first.resign_at > unix_time());

        let second = sign(received(200, true)).unwrap();
        assert_eq!(second.zone.serial(), 201);
        let (from, change) = second.change.expect("signed from the version before");
        assert_eq!(from, 101);
        assert!(change
            .added
            .iter()
            .any(|record| record.owner.to_string() == "added.bump.test."));

        // A primary that went back: still above the serial served.
        assert_eq!(sign(received(150, false)).unwrap().zone.serial(), 202);

        // A key file gone: an error, and the signed records kept are the
        // version served.
        let keys = crate::keys::key_dir(&dir, name.as_name());
        let pem = std::fs::read_dir(&keys)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .find(|path| path.extension().is_some_and(|ext| ext == "pem"))
            .unwrap();
        let hidden = dir.join("hidden.pem");
        std::fs::rename(&pem, &hidden).unwrap();
        assert!(sign(received(300, false)).is_err());
        let kept = bump.lock().get(&key).unwrap().signed.clone().unwrap();
        assert_eq!(apex_serial(name.as_name(), &*kept), Some(202));
        std::fs::rename(&hidden, &pem).unwrap();

        // The saved copy: the version served, in the signer's order.
        let (zone, records) = load_signed(&dir, origin).unwrap().unwrap();
        assert_eq!(zone.serial(), 202);
        bump.lock().get_mut(&key).unwrap().signed = Some(Arc::new(records));
        let again = sign(received(300, true)).unwrap();
        assert_eq!(again.zone.serial(), 301);
        assert_eq!(again.change.map(|(from, _)| from), Some(202));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A fresh state directory for the test `tag` and a bump signing the
    /// secondary zone `origin` under a default policy there.
    fn bump_for(tag: &str, origin: &str) -> (PathBuf, Arc<Bump>, Origin) {
        let dir = std::env::temp_dir().join(format!("tern-bump-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let name = NameBuf::from_text(origin.as_bytes(), None).unwrap();
        let origin = LowerNameBuf::from_name(name.as_name());
        let key: Origin = origin.as_bytes().into();
        let policy = Arc::new(Policy::new("p".to_string()));
        let signing = Signing::new(dir.clone(), 1, vec![(key.clone(), policy)]);
        let config = SecondaryConfig {
            origin,
            primaries: Vec::new(),
            key: None,
            tls: None,
        };
        let bump = Bump::new(Some(&signing), &[config], &[]).unwrap();
        (dir, bump, key)
    }

    /// Each signing of a signed secondary zone is recorded as a primary
    /// zone's is (`tern_zone_*` metrics, `tern zone-status`): signatures
    /// made, when and how long, the earliest RRSIG expiration and the next
    /// key event; a failure is counted with its cause.
    #[test]
    fn signings_are_recorded_for_the_metrics() {
        const METRICS: &str = "metrics.bump.test.";
        let (dir, bump, key) = bump_for("metrics", METRICS);
        let sign = |zone: Arc<Zone>| {
            bump.lock().get_mut(&key).unwrap().unsigned = Some(zone);
            bump.sign(&key).unwrap()
        };
        let before = unix_time();
        let first = sign(received_in(METRICS, 100, false)).unwrap();
        let status = crate::sign_status::get(&key).expect("recorded");
        let last = status.last.clone().expect("a signing recorded");
        assert!(last.signatures > 3 && last.at >= before, "{status:?}");
        assert_eq!(status.signatures_total, last.signatures);
        assert_eq!(status.policy, "p");
        assert!(status.earliest_expiry.is_some_and(|at| at > before));
        assert_eq!(status.next_key_event, first.keys.next_event);

        sign(received_in(METRICS, 200, true)).unwrap();
        let again = crate::sign_status::get(&key).unwrap();
        let made = again.last.as_ref().unwrap().signatures;
        assert!(made > 0 && made < last.signatures, "incremental: {again:?}");
        assert_eq!(again.signatures_total, last.signatures + made);

        let keys = crate::keys::key_dir(&dir, Name::from_wire(&key).unwrap());
        for entry in std::fs::read_dir(&keys).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "pem") {
                std::fs::remove_file(path).unwrap();
            }
        }
        assert!(sign(received_in(METRICS, 300, false)).is_err());
        let failed = crate::sign_status::get(&key).unwrap();
        assert_eq!(failed.failures_total, 1);
        assert!(failed
            .last_failure
            .is_some_and(|failure| !failure.cause.is_empty()));
        assert_eq!(failed.signatures_total, again.signatures_total);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
