//! The zones being served, primary and secondary, and the state directory
//! (`state-directory`; without one, nothing is saved).
//!
//! [`Served`] holds the primary zones (from files, replaced by each reload)
//! and the secondary zones (replaced by each transfer), builds the catalog
//! of both (primaries first: a name configured as both is served from its
//! file) and swaps it into the cores. The transfer thread
//! (`tern_server::xfr_in`) reports to [`Served::on_event`], which saves a
//! received zone before it is served: to `STATE/secondary/ORIGIN.zone`, as
//! a zone file written to a temporary file and renamed over the old one,
//! beside `ORIGIN.timers`, so that a restart serves it at once and keeps
//! its timers. A copy that does not load at start is reported and
//! ignored: the zone is transferred again.
//!
//! Each new version of a zone, loaded or received, adds its difference
//! from the previous one to the zone's IXFR history (`tern_xfr::journal`),
//! bounded by `transfer.ixfr-history` and saved to `STATE/journal/`
//! after each change, so that IXFR answers survive a restart.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tern_authority::{Catalog, RecordCursor, Zone};
use tern_server::notify_out::NotifierHandle;
use tern_server::xfr_in::{Event, SecondariesHandle, SecondaryConfig, Timers};
use tern_server::Handle;
use tern_server::SharedJournals;
use tern_wire::name::LowerNameBuf;
use tern_wire::types::RClass;
use tern_xfr::journal::{self, Difference, Journal, Journals};

/// The secondary zones whose NOTIFYs the cores take (shared with them).
pub(crate) type NotifyZones = Arc<std::sync::RwLock<Vec<SecondaryConfig>>>;

//----------- Status ---------------------------------------------------------

/// What `tern zone-status` shows of a secondary zone.
#[derive(Clone, Debug, Default)]
pub(crate) struct Status {
    pub(crate) timers: Timers,
    /// The last refresh or transfer and how it ended.
    pub(crate) last_outcome: String,
    /// Past its EXPIRE: answered SERVFAIL until a transfer succeeds.
    pub(crate) expired: bool,
    /// `secondary`, `catalog` (a consumed catalog, not served), or
    /// `member of CATALOG`.
    pub(crate) role: String,
    /// Refreshes that failed since tern started (every primary tried).
    pub(crate) failures: u64,
    /// Transfers received since tern started: full (AXFR), incremental.
    pub(crate) transfers: [u64; 2],
}

//----------- Served ---------------------------------------------------------

/// The zones being served and the handle that swaps them into the cores.
pub(crate) struct Served {
    handle: Handle,
    state_directory: Option<PathBuf>,
    /// Each zone's IXFR history, shared with the cores.
    journals: SharedJournals,
    /// The octets of history kept per zone; 0: none.
    history_bytes: usize,
    /// Told of every serial that changes, when `notify.targets` is set.
    notifier: Option<NotifierHandle>,
    /// The transfer thread, for catalog members that come and go.
    secondaries_handle: Option<SecondariesHandle>,
    /// The secondary zones NOTIFY is taken for (shared with the cores).
    notify_zones: NotifyZones,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    primaries: Vec<Arc<Zone>>,
    /// When each served zone's version was loaded or received (Unix
    /// seconds), by lowercased origin.
    loaded: BTreeMap<Vec<u8>, u64>,
    /// By lowercased origin.
    secondaries: BTreeMap<Vec<u8>, Arc<Zone>>,
    status: BTreeMap<Vec<u8>, Status>,
    catalog: Arc<Catalog>,
    /// The catalog zone tern produces, if configured.
    producer: Option<Producer>,
    /// The catalogs tern consumes, by lowercased origin: their
    /// configuration (the members' primaries and key) and members now.
    consumed: BTreeMap<Vec<u8>, (SecondaryConfig, Vec<LowerNameBuf>)>,
}

/// The catalog zone tern produces (`zones.catalog-producer`), rebuilt when
/// the set of served zones changes.
struct Producer {
    origin: tern_wire::name::NameBuf,
    serial: u32,
    /// The lowercased origins it lists now.
    members: Vec<Vec<u8>>,
    zone: Option<Arc<Zone>>,
}

impl Inner {
    /// Builds the catalog of every served zone (and the produced catalog
    /// zone, updated if the members changed); the produced zone's origin and
    /// serial come back when they changed, for NOTIFY.
    fn rebuild(&mut self) -> (Arc<Catalog>, Option<(LowerNameBuf, u32)>) {
        let mut changed = None;
        // Consumed catalogs are kept, not served (as Knot does).
        let mut zones: Vec<Arc<Zone>> = self
            .primaries
            .iter()
            .chain(
                self.secondaries
                    .iter()
                    .filter(|(origin, _)| !self.consumed.contains_key(*origin))
                    .map(|(_, zone)| zone),
            )
            .cloned()
            .collect();
        if let Some(producer) = &mut self.producer {
            let origin = producer.origin.as_name();
            let mut members: Vec<Vec<u8>> = zones
                .iter()
                .filter(|zone| !zone.is_expired() && !zone.origin().eq_ignore_case(origin))
                .map(|zone| zone.origin().as_bytes().to_vec())
                .collect();
            members.sort();
            members.dedup();
            if producer.zone.is_none() || producer.members != members {
                producer.serial = producer.serial.wrapping_add(1);
                let listed: Vec<Arc<Zone>> = zones
                    .iter()
                    .filter(|zone| {
                        members
                            .binary_search(&zone.origin().as_bytes().to_vec())
                            .is_ok()
                    })
                    .cloned()
                    .collect();
                match crate::catalog::build(origin, producer.serial, &listed) {
                    Ok(zone) => {
                        producer.zone = Some(Arc::new(zone));
                        producer.members = members;
                        changed = Some((LowerNameBuf::from_name(origin), producer.serial));
                    }
                    Err(err) => log::error!("catalog zone {origin}: {err:#}; not updated"),
                }
            }
            if let Some(zone) = &producer.zone {
                zones.push(Arc::clone(zone));
            }
        }
        self.catalog = Arc::new(Catalog::new(zones));
        (Arc::clone(&self.catalog), changed)
    }
}

impl Served {
    /// The zones a server was started with: `catalog` holds `primaries`
    /// and the saved `secondaries`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        handle: Handle,
        notifier: Option<NotifierHandle>,
        journals: SharedJournals,
        history_bytes: usize,
        state_directory: Option<PathBuf>,
        primaries: Vec<Arc<Zone>>,
        secondaries: Vec<Arc<Zone>>,
        catalog: Arc<Catalog>,
        producer: Option<tern_wire::name::NameBuf>,
        consumed: Vec<(SecondaryConfig, Vec<LowerNameBuf>)>,
        secondaries_handle: Option<SecondariesHandle>,
        notify_zones: NotifyZones,
    ) -> Self {
        let now = unix_now();
        let loaded = primaries
            .iter()
            .chain(&secondaries)
            .map(|zone| (origin_key(zone), now))
            .collect();
        let secondaries = secondaries
            .into_iter()
            .map(|zone| (zone.origin().as_bytes().to_vec(), zone))
            .collect();
        Served {
            handle,
            notifier,
            secondaries_handle,
            notify_zones,
            journals,
            history_bytes,
            state_directory,
            inner: Mutex::new(Inner {
                primaries,
                loaded,
                secondaries,
                status: BTreeMap::new(),
                catalog,
                // Serials from the clock, so that they grow across restarts.
                consumed: consumed
                    .into_iter()
                    .map(|(config, members)| (config.origin.as_bytes().to_vec(), (config, members)))
                    .collect(),
                producer: producer.map(|origin| Producer {
                    origin,
                    serial: tern_server::xfr_in::unix_seconds() as u32,
                    members: Vec::new(),
                    zone: None,
                }),
            }),
        }
    }

    /// Builds the catalog again and serves it (at start, to add the
    /// produced catalog zone).
    pub(crate) fn publish(&self) {
        let (catalog, _) = self.lock().rebuild();
        self.handle.reload(catalog);
    }

    /// Serves `catalog` and NOTIFYs the produced catalog zone's new serial.
    fn serve(&self, (catalog, changed): (Arc<Catalog>, Option<(LowerNameBuf, u32)>)) {
        self.handle.reload(catalog);
        if let Some((origin, serial)) = changed {
            let _ = self.notify(origin, serial);
        }
    }

    /// The catalog being served.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.lock().catalog)
    }

    /// Replaces the primary zones (a reload), serves the result, and sends
    /// NOTIFY for each zone whose serial changed or that is new.
    pub(crate) fn set_primaries(&self, primaries: Vec<Arc<Zone>>) {
        let mut inner = self.lock();
        for zone in &primaries {
            let old = inner
                .primaries
                .iter()
                .find(|old| old.origin().as_bytes() == zone.origin().as_bytes());
            if let Some(old) = old {
                self.record_difference(old, zone);
            }
        }
        let now = unix_now();
        for zone in &primaries {
            let same = inner.primaries.iter().any(|old| Arc::ptr_eq(old, zone));
            if !same {
                inner.loaded.insert(origin_key(zone), now);
            }
        }
        let changed: Vec<(LowerNameBuf, u32)> = primaries
            .iter()
            .filter(|zone| {
                !inner.primaries.iter().any(|old| {
                    old.origin().as_bytes() == zone.origin().as_bytes()
                        && old.serial() == zone.serial()
                })
            })
            .map(|zone| (LowerNameBuf::from_name(zone.origin()), zone.serial()))
            .collect();
        inner.primaries = primaries;
        let rebuilt = inner.rebuild();
        drop(inner);
        self.serve(rebuilt);
        for (origin, serial) in changed {
            let _ = self.notify(origin, serial);
        }
    }

    /// Sends NOTIFY for every zone served now (at start, as Knot and BIND
    /// do once their zones are loaded).
    pub(crate) fn notify_all(&self) {
        for zone in self.catalog().zones() {
            let _ = self.notify(LowerNameBuf::from_name(zone.origin()), zone.serial());
        }
    }

    /// Queues NOTIFY for `origin` at `serial`; false if there are no
    /// targets.
    pub(crate) fn notify(&self, origin: LowerNameBuf, serial: u32) -> bool {
        match &self.notifier {
            Some(notifier) => {
                notifier.notify(origin, serial);
                true
            }
            None => false,
        }
    }

    /// Enters a secondary zone in the status table: with the timers of
    /// its saved copy, or as never received.
    pub(crate) fn set_status(&self, origin: LowerNameBuf, timers: Option<Timers>, role: String) {
        let status = Status {
            timers: timers.unwrap_or_default(),
            last_outcome: match timers {
                Some(_) => "loaded from the state directory".to_string(),
                None => "not received yet".to_string(),
            },
            expired: false,
            role,
            ..Status::default()
        };
        self.lock()
            .status
            .insert(origin.as_bytes().to_vec(), status);
    }

    /// When the served version of each zone was loaded or received (Unix
    /// seconds), by lowercased wire origin.
    pub(crate) fn load_times(&self) -> BTreeMap<Vec<u8>, u64> {
        self.lock().loaded.clone()
    }

    /// The status of each secondary zone, by origin.
    pub(crate) fn status(&self) -> Vec<(Vec<u8>, Option<u32>, Status)> {
        let inner = self.lock();
        inner
            .status
            .iter()
            .map(|(origin, status)| {
                let serial = inner
                    .secondaries
                    .get(origin)
                    .filter(|zone| !zone.is_expired())
                    .map(|zone| zone.serial());
                (origin.clone(), serial, status.clone())
            })
            .collect()
    }

    /// A report from the transfer thread: a new zone is saved, then
    /// served; timers are saved.
    pub(crate) fn on_event(&self, event: Event) {
        match event {
            Event::Updated {
                zone,
                timers,
                incremental,
                primary,
            } => {
                let origin = LowerNameBuf::from_name(zone.origin());
                let key = origin.as_bytes().to_vec();
                // A member its catalog dropped while its transfer ran: the
                // transfer thread forgets it too; nothing is kept.
                if !self.lock().status.contains_key(&key) {
                    return;
                }
                if let Some(dir) = &self.state_directory {
                    if let Err(err) = save_zone(dir, &zone) {
                        log::error!("{}: cannot save the received zone: {err}", origin.as_name());
                    }
                }
                self.save_timers(origin, timers);
                let mut inner = self.lock();
                let (role, failures, mut transfers) = inner.status.get(&key).map_or_else(
                    || ("secondary".to_string(), 0, [0; 2]),
                    |s| (s.role.clone(), s.failures, s.transfers),
                );
                transfers[usize::from(incremental)] += 1;
                inner.loaded.insert(key.clone(), unix_now());
                inner.status.insert(
                    key.clone(),
                    Status {
                        timers,
                        last_outcome: format!(
                            "serial {} by {} from {primary}",
                            zone.serial(),
                            if incremental { "IXFR" } else { "AXFR" }
                        ),
                        expired: false,
                        role,
                        failures,
                        transfers,
                    },
                );
                let serial = zone.serial();
                if let Some(old) = inner.secondaries.get(&key).filter(|old| !old.is_expired()) {
                    self.record_difference(old, &zone);
                }
                inner.secondaries.insert(key.clone(), Arc::clone(&zone));
                if inner.consumed.contains_key(&key) {
                    self.apply_catalog(&mut inner, &key, &zone);
                }
                let rebuilt = inner.rebuild();
                drop(inner);
                self.serve(rebuilt);
                let _ = self.notify(origin, serial);
            }
            Event::Timers {
                origin,
                timers,
                failure,
            } => {
                let mut inner = self.lock();
                // Nothing for a member its catalog dropped meanwhile.
                let Some(status) = inner.status.get_mut(origin.as_bytes()) else {
                    return;
                };
                status.timers = timers;
                status.failures += u64::from(failure.is_some());
                status.last_outcome = match failure {
                    Some(reason) => format!("refresh failed: {reason}"),
                    None => "refresh: current".to_string(),
                };
                drop(inner);
                self.save_timers(origin, timers);
            }
            Event::Expired { origin } => {
                // The zone stays in the catalog as a stand-in that answers
                // SERVFAIL, until a transfer brings a fresh copy.
                let mut inner = self.lock();
                let key = origin.as_bytes().to_vec();
                let Some(status) = inner.status.get_mut(&key) else {
                    return;
                };
                status.last_outcome = "expired".to_string();
                status.expired = true;
                if let Some(zone) = inner.secondaries.get(&key) {
                    let stand_in = Arc::new(zone.expired());
                    inner.secondaries.insert(key, stand_in);
                }
                let rebuilt = inner.rebuild();
                drop(inner);
                self.serve(rebuilt);
            }
        }
    }

    /// A new version of a consumed catalog: members that joined become
    /// secondary zones from the catalog's primaries (with its key), members
    /// that left stop being kept and served. A catalog that does not read
    /// (not version 2) changes nothing.
    fn apply_catalog(&self, inner: &mut Inner, key: &[u8], catalog: &Zone) {
        let members = match crate::catalog::members(catalog) {
            Ok(members) => members,
            Err(err) => {
                log::error!("{err:#}; its members are unchanged");
                return;
            }
        };
        let Some((config, old)) = inner.consumed.get(key).cloned() else {
            return;
        };
        let catalog_name = config.origin.as_name().to_string();
        let mut kept = Vec::new();
        for member in &members {
            let taken = inner
                .primaries
                .iter()
                .any(|zone| LowerNameBuf::from_name(zone.origin()) == *member)
                || (!old.contains(member) && inner.status.contains_key(member.as_bytes()))
                || inner.consumed.contains_key(member.as_bytes());
            if taken {
                log::warn!(
                    "catalog {catalog_name}: member {} is configured otherwise; not taken",
                    member.as_name()
                );
                continue;
            }
            kept.push(*member);
            if old.contains(member) {
                continue;
            }
            let member_config = SecondaryConfig {
                origin: *member,
                primaries: config.primaries.clone(),
                key: config.key.clone(),
            };
            log::info!("catalog {catalog_name}: member {} added", member.as_name());
            self.notify_zones
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(member_config.clone());
            let saved = load_saved(self.state_directory.as_deref(), &member_config);
            inner.status.insert(
                member.as_bytes().to_vec(),
                Status {
                    timers: saved
                        .as_ref()
                        .map(|(_, timers)| *timers)
                        .unwrap_or_default(),
                    last_outcome: "added by its catalog".to_string(),
                    expired: false,
                    role: format!("member of {catalog_name}"),
                    ..Status::default()
                },
            );
            if let Some((zone, _)) = &saved {
                inner
                    .secondaries
                    .insert(member.as_bytes().to_vec(), Arc::clone(zone));
            }
            if let Some(handle) = &self.secondaries_handle {
                handle.add((member_config, saved));
            }
        }
        for member in old.iter().filter(|member| !kept.contains(member)) {
            log::info!(
                "catalog {catalog_name}: member {} removed",
                member.as_name()
            );
            inner.secondaries.remove(member.as_bytes());
            inner.status.remove(member.as_bytes());
            self.notify_zones
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .retain(|zone| zone.origin != *member);
            if let Some(handle) = &self.secondaries_handle {
                handle.remove(*member);
            }
        }
        if let Some(entry) = inner.consumed.get_mut(key) {
            entry.1 = kept;
        }
    }

    /// Records the difference from `old` to `new` in the zone's IXFR
    /// history and saves it. A new version without a higher serial is
    /// served but recorded as no difference: its history is cleared, so
    /// that clients get the whole zone rather than a wrong increment.
    fn record_difference(&self, old: &Arc<Zone>, new: &Arc<Zone>) {
        if self.history_bytes == 0 || Arc::ptr_eq(old, new) {
            return;
        }
        let origin = LowerNameBuf::from_name(new.origin());
        let newer = journal::is_newer(old, new);
        if !newer && old.serial() == new.serial() && old.record_count() == new.record_count() {
            // Most reloads: the file did not change. Only a full comparison
            // could tell a same-sized edit; it is made below when sizes or
            // serials differ.
            return;
        }
        let difference = Difference::between(old, new);
        let mut journals = self
            .journals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let journal = journals.entry(origin.as_bytes().to_vec()).or_default();
        if newer {
            journal.push(difference, self.history_bytes);
        } else if difference.is_empty() {
            return;
        } else {
            log::warn!(
                "zone {}: its data changed but its serial {} is not higher than {}; served, \
                 and IXFR clients get the whole zone",
                origin.as_name(),
                new.serial(),
                old.serial()
            );
            journal.clear();
        }
        let bytes = journal.encode();
        drop(journals);
        let Some(dir) = &self.state_directory else {
            return;
        };
        let path = journal_path(dir, origin);
        if let Err(err) = write_atomically(&path, &bytes) {
            log::warn!(
                "zone {}: cannot save its IXFR history to {}: {err}",
                origin.as_name(),
                path.display()
            );
        }
    }

    fn save_timers(&self, origin: LowerNameBuf, timers: Timers) {
        let Some(dir) = &self.state_directory else {
            return;
        };
        if let Err(err) = save_timers(dir, origin, timers) {
            log::error!("{}: cannot save the zone's timers: {err}", origin.as_name());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves data that is still whole
        // (every change is one assignment): go on with it.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

//----------- Start ----------------------------------------------------------

/// What the secondary zones start from: each zone's configuration and saved
/// copy (configured secondaries, consumed catalogs, and the members their
/// saved copies list), its role, the copies to serve at once (catalogs are
/// kept, not served), and the zones NOTIFY is taken for.
pub(crate) struct Plan {
    pub(crate) starts: Vec<tern_server::xfr_in::Start>,
    pub(crate) roles: Vec<String>,
    pub(crate) served: Vec<Arc<Zone>>,
    pub(crate) consumed: Vec<(SecondaryConfig, Vec<LowerNameBuf>)>,
    pub(crate) notify_zones: NotifyZones,
}

impl Plan {
    /// The plan for `secondaries` and `catalogs`, from the state directory.
    pub(crate) fn new(
        state_directory: Option<&Path>,
        secondaries: &[SecondaryConfig],
        catalogs: &[SecondaryConfig],
    ) -> Plan {
        let mut plan = Plan {
            starts: Vec::new(),
            roles: Vec::new(),
            served: Vec::new(),
            consumed: Vec::new(),
            notify_zones: NotifyZones::default(),
        };
        let add = |plan: &mut Plan, config: &SecondaryConfig, role: String, serve: bool| {
            let saved = load_saved(state_directory, config);
            if let (true, Some((zone, _))) = (serve, &saved) {
                plan.served.push(Arc::clone(zone));
            }
            plan.starts.push((config.clone(), saved));
            plan.roles.push(role);
        };
        for config in secondaries {
            add(&mut plan, config, "secondary".to_string(), true);
        }
        for catalog in catalogs {
            add(&mut plan, catalog, "catalog".to_string(), false);
            let listed = plan
                .starts
                .last()
                .and_then(|(_, saved)| saved.as_ref())
                .and_then(|(zone, _)| crate::catalog::members(zone).ok())
                .unwrap_or_default();
            let mut members = Vec::new();
            for member in listed {
                let known = plan
                    .starts
                    .iter()
                    .any(|(config, _)| config.origin == member);
                if known {
                    continue;
                }
                let config = SecondaryConfig {
                    origin: member,
                    primaries: catalog.primaries.clone(),
                    key: catalog.key.clone(),
                };
                let role = format!("member of {}", catalog.origin.as_name());
                add(&mut plan, &config, role, true);
                members.push(member);
            }
            plan.consumed.push((catalog.clone(), members));
        }
        *plan
            .notify_zones
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = plan
            .starts
            .iter()
            .map(|(config, _)| config.clone())
            .collect();
        plan
    }
}

//----------- State directory ------------------------------------------------

/// `STATE/secondary`.
fn secondary_dir(state_directory: &Path) -> PathBuf {
    state_directory.join("secondary")
}

/// The file name of a zone's files: its origin in presentation form, with
/// anything but letters, digits, `-`, `_` and `.` written `%XX`.
fn file_stem(origin: LowerNameBuf) -> String {
    let text = origin.as_name().to_string();
    let mut stem = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.') {
            stem.push(byte as char);
        } else {
            let _ = write!(stem, "%{byte:02X}");
        }
    }
    stem
}

/// Writes `bytes` to `path` through a temporary file and a rename, so that
/// `path` always holds a whole file.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path)
}

/// `STATE/journal/ORIGIN.ixfr`.
fn journal_path(state_directory: &Path, origin: LowerNameBuf) -> PathBuf {
    state_directory
        .join("journal")
        .join(format!("{}ixfr", file_stem(origin)))
}

/// The saved IXFR histories of `zones` that end at the version served (a
/// history that does not, or does not read, is dropped).
pub(crate) fn load_journals(state_directory: Option<&Path>, zones: &[Arc<Zone>]) -> Journals {
    let mut journals = Journals::new();
    let Some(state_directory) = state_directory else {
        return journals;
    };
    for zone in zones {
        let origin = LowerNameBuf::from_name(zone.origin());
        let Ok(bytes) = std::fs::read(journal_path(state_directory, origin)) else {
            continue;
        };
        match Journal::decode(&bytes) {
            Some(journal) if journal.ends_at(zone.serial()) => {
                journals.insert(origin.as_bytes().to_vec(), journal);
            }
            _ => log::info!(
                "zone {}: its saved IXFR history does not end at serial {}; not used",
                origin.as_name(),
                zone.serial()
            ),
        }
    }
    journals
}

/// Saves a received zone as a zone file.
fn save_zone(state_directory: &Path, zone: &Zone) -> io::Result<()> {
    let origin = LowerNameBuf::from_name(zone.origin());
    let mut text = format!(
        "; {} received by transfer; tern rewrites this file\n",
        origin.as_name()
    );
    let mut cursor = RecordCursor::default();
    while let Some(record) = zone.next_record(&mut cursor) {
        let record = tern_zone::Record {
            owner: record.owner.to_buf(),
            class: RClass::IN,
            ttl: record.ttl,
            rtype: record.rtype,
            rdata: record.rdata.to_vec(),
            location: tern_zone::Location::default(),
        };
        tern_zone::print::write_record(&record, &mut text);
    }
    let path = secondary_dir(state_directory).join(format!("{}zone", file_stem(origin)));
    write_atomically(&path, text.as_bytes())
}

/// Saves a zone's timers: one `name value` line each.
fn save_timers(state_directory: &Path, origin: LowerNameBuf, timers: Timers) -> io::Result<()> {
    let text = format!(
        "last-refresh {}\nnext-refresh {}\nexpires {}\nlast-transfer {}\n",
        timers.last_refresh, timers.next_refresh, timers.expires, timers.last_transfer
    );
    let path = secondary_dir(state_directory).join(format!("{}timers", file_stem(origin)));
    write_atomically(&path, text.as_bytes())
}

/// A zone's lowercased wire origin, the key of the tables here.
fn origin_key(zone: &Zone) -> Vec<u8> {
    zone.origin().as_bytes().to_ascii_lowercase()
}

/// The time now in Unix seconds.
fn unix_now() -> u64 {
    tern_server::xfr_in::unix_seconds()
}

/// The saved copy and timers of a secondary zone, if both load.
pub(crate) fn load_saved(
    state_directory: Option<&Path>,
    config: &SecondaryConfig,
) -> Option<(Arc<Zone>, Timers)> {
    let state_directory = state_directory?;
    let stem = file_stem(config.origin);
    let dir = secondary_dir(state_directory);
    let zone_path = dir.join(format!("{stem}zone"));
    if !zone_path.exists() {
        return None;
    }
    let origin_text = config.origin.as_name().to_string();
    let mut warnings = Vec::new();
    let zone = match crate::zones::load_zone(&origin_text, &zone_path, &mut warnings) {
        Ok(zone) => zone,
        Err(errors) => {
            log::warn!(
                "{origin_text}: the saved copy {} does not load ({}); transferring it again",
                zone_path.display(),
                errors.join("; ")
            );
            return None;
        }
    };
    let timers = std::fs::read_to_string(dir.join(format!("{stem}timers")))
        .map(|text| parse_timers(&text))
        .unwrap_or_default();
    Some((Arc::new(zone), timers))
}

fn parse_timers(text: &str) -> Timers {
    let mut timers = Timers::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(name), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(value) = value.parse() else { continue };
        match name {
            "last-refresh" => timers.last_refresh = value,
            "next-refresh" => timers.next_refresh = value,
            "expires" => timers.expires = value,
            "last-transfer" => timers.last_transfer = value,
            _ => {}
        }
    }
    timers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_and_timers_round_trip() {
        let name = tern_wire::name::NameBuf::from_text(b"Ex/ample.net.", None).unwrap();
        assert_eq!(
            file_stem(LowerNameBuf::from_name(name.as_name())),
            "ex%2Fample.net."
        );
        let timers = Timers {
            last_refresh: 1,
            next_refresh: 2,
            expires: 3,
            last_transfer: 4,
        };
        let dir = std::env::temp_dir().join(format!("tern-secondary-test-{}", std::process::id()));
        let origin = LowerNameBuf::from_name(name.as_name());
        save_timers(&dir, origin, timers).unwrap();
        let text =
            std::fs::read_to_string(secondary_dir(&dir).join("ex%2Fample.net.timers")).unwrap();
        assert_eq!(parse_timers(&text), timers);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
