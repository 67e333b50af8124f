//! The owner of every zone's versions (docs/decisions/0013): [`Zones`].
//!
//! Producers report what happened to a zone as an [`Event`] to
//! [`Zones::apply`]: the loader its new versions (`Loaded`), the refresh
//! thread a transfer received, a refresh, an expiry; the control socket a
//! NOTIFY asked for. The owner commits each event for the zones it names:
//! the difference from the version replaced into the zone's IXFR history
//! (`tern_xfr::journal`, bounded by `transfer.ixfr-history`, saved to
//! `STATE/journal/`), a received zone's copy and timers in the state
//! directory (`crate::state`: a restart serves it at once), the catalog
//! the cores serve (a primary wins over a secondary of its origin), catalog
//! zones, and NOTIFY.
//!
//! Every change is made per zone: a new version becomes one
//! [`CatalogChange`] that the cores apply to their own copies
//! ([`Cores::update`]), so a reload of one zone among 100,000 costs that
//! zone, not a new catalog of all of them. The tables here are keyed by
//! origin or by catalog slot; nothing walks every zone for one zone.
//!
//! The catalog zone tern produces (`zones.catalog-producer`) lists every
//! served zone. Its members are kept as a set, changed per zone; the zone
//! itself is rebuilt on a thread of its own once changes settle
//! (`PRODUCER_SETTLE`, at most `PRODUCER_DELAY` after the first), so
//! that 100,000 zones arriving one by one cost a few rebuilds, not one
//! each.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tern_authority::{Applied, Catalog, CatalogChange, Zone};
use tern_wire::name::{LowerNameBuf, Name, NameBuf};
use tern_xfr::journal::{self, Difference, SharedJournals};
use tern_xfr::notify::NotifyZones;

use crate::event::Event;
use crate::notify::NotifierHandle;
use crate::refresh::{SecondariesHandle, SecondaryConfig, Timers};

use crate::load::{FileStamp, Origin, Stamp};
use crate::start::notify_source;
use crate::state::{
    append_history, journal_path, load_saved, save_timers, save_zone, write_atomically,
};
use crate::Cores;

/// How long the produced catalog zone waits for changes to stop before it
/// is rebuilt.
const PRODUCER_SETTLE: Duration = Duration::from_millis(100);

/// The longest the produced catalog zone waits after a change, however
/// many follow.
const PRODUCER_DELAY: Duration = Duration::from_secs(1);

//----------- Status ---------------------------------------------------------

/// What `tern zone-status` shows of a secondary zone.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// The zone's refresh timers.
    pub timers: Timers,
    /// The last refresh or transfer and how it ended.
    pub last_outcome: String,
    /// Past its EXPIRE: answered SERVFAIL until a transfer succeeds.
    pub expired: bool,
    /// `secondary`, `catalog` (a consumed catalog, not served), or
    /// `member of CATALOG`.
    pub role: String,
    /// Refreshes that failed since tern started (every primary tried).
    pub failures: u64,
    /// Transfers received since tern started: full (AXFR), incremental.
    pub transfers: [u64; 2],
}

//----------- ZoneView -------------------------------------------------------

/// One zone as `tern zone-status` and the metrics show it.
#[derive(Clone, Debug)]
pub struct ZoneView {
    /// The origin, lowercased wire form.
    pub origin: Origin,
    /// The serial served (`None`: a secondary not received, expired, or a
    /// consumed catalog's when not received).
    pub serial: Option<u32>,
    /// The serial of the version the cores serve, if they serve it (an
    /// expired zone's stand-in keeps its last serial).
    pub served: Option<u32>,
    /// When the version held was loaded or received (Unix seconds).
    pub loaded: Option<u64>,
    /// For secondary zones (and consumed catalogs): their status.
    pub secondary: Option<Status>,
}

//----------- Zones ---------------------------------------------------------

/// The zones being served and the handle that changes them on the cores.
pub struct Zones {
    cores: Arc<dyn Cores>,
    state_directory: Option<PathBuf>,
    /// Each zone's IXFR history, shared with the cores.
    journals: SharedJournals,
    /// The octets of history kept per zone; 0: none.
    history_bytes: usize,
    /// Octets written to history files so far (the test of issue 25).
    history_written: std::sync::atomic::AtomicU64,
    /// The octets of each zone's history file as this run wrote it, by
    /// lowercased origin; absent (at start, after an error): the next
    /// save writes the file whole. Held across a save, so that saves reach
    /// a file in the order their differences were pushed.
    history_files: Mutex<HashMap<Vec<u8>, u64>>,
    /// Told of every serial that changes, when `notify.targets` is set.
    notifier: Option<NotifierHandle>,
    /// The transfer thread, for catalog members that come and go.
    secondaries_handle: Option<SecondariesHandle>,
    /// The secondary zones NOTIFY is taken for (shared with the cores).
    notify_zones: NotifyZones,
    /// Wakes the thread that rebuilds the produced catalog zone.
    producer_wake: Mutex<Option<Sender<()>>>,
    /// When each signed zone is to be signed again ([`crate::resign`]).
    resigner: crate::resign::Resigner,
    /// The secondary zones tern signs ([`crate::bump`]), if any.
    bump: std::sync::OnceLock<Arc<crate::bump::Bump>>,
    inner: Mutex<Inner>,
    /// Held by whoever makes a new version of a primary zone (a reload, an
    /// update group: [`Zones::writer`]), so that the two never interleave.
    writer: Mutex<()>,
    /// Applies an updatable zone's journal to a version loaded from its
    /// file ([`crate::update`]).
    replay: Mutex<Option<Replay>>,
    /// UPDATEs answered, by zone and RCODE (`tern_updates_total`).
    update_counts: Mutex<std::collections::BTreeMap<(Origin, u8), u64>>,
}

/// See [`Zones::set_replay`].
pub type Replay = Box<dyn Fn(Arc<Zone>, &Stamp) -> Arc<Zone> + Send + Sync>;

/// A version held, and when it was loaded or received (Unix seconds).
type Held = (Arc<Zone>, u64);

/// A zone loaded from a file: when, and from what (the version is the one
/// in the catalog).
struct Primary {
    loaded: u64,
    stamp: Stamp,
}

struct Inner {
    /// What the cores serve: every change to it is sent to them.
    catalog: Catalog,
    /// Zones loaded from files, by their slot in `catalog`: a primary zone
    /// is always served (it wins over a secondary of the same origin), so
    /// its slot finds it, and no table of its own is kept per zone.
    primaries: Vec<Option<Primary>>,
    /// How many of `primaries` are set.
    primary_count: usize,
    /// Versions received (consumed catalogs too: kept, not served).
    secondaries: HashMap<Origin, Held>,
    /// Every secondary zone and consumed catalog, received or not.
    status: HashMap<Origin, Status>,
    /// The catalog zone tern produces, if configured.
    producer: Option<Producer>,
    /// The catalogs tern consumes: their configuration (the members'
    /// primaries and key) and members now.
    consumed: HashMap<Origin, (SecondaryConfig, HashSet<Origin>)>,
}

/// The catalog zone tern produces (`zones.catalog-producer`): its members
/// follow the served zones, and the zone is rebuilt from them when they
/// changed ([`Zones::rebuild_producer`]).
struct Producer {
    origin: NameBuf,
    key: Origin,
    serial: u32,
    /// The served zones it lists: every served zone but itself and expired
    /// ones, lowercased.
    members: BTreeSet<Origin>,
    /// The members differ from those of `zone`.
    stale: bool,
    zone: Option<Held>,
}

impl Inner {
    /// The version the cores should serve for `origin`: its file's, else
    /// the received one (not for a consumed catalog), else the produced
    /// catalog zone.
    fn wanted(&self, origin: &[u8]) -> Option<&Arc<Zone>> {
        if self.primary(origin).is_some() {
            return Name::from_wire(origin)
                .ok()
                .and_then(|name| self.catalog.get(name));
        }
        if !self.consumed.contains_key(origin) {
            if let Some((zone, _)) = self.secondaries.get(origin) {
                return Some(zone);
            }
        }
        self.producer
            .as_ref()
            .filter(|producer| &*producer.key == origin)
            .and_then(|producer| producer.zone.as_ref())
            .map(|(zone, _)| zone)
    }

    /// Brings the catalog in line with [`Inner::wanted`] for `origin`,
    /// pushing the change (if any) for the cores, and keeps the produced
    /// catalog's members in step. Bound: a few hash look-ups.
    fn sync(&mut self, origin: &[u8], changes: &mut Vec<CatalogChange>) {
        crate::work::visit(1);
        let wanted = self.wanted(origin).cloned();
        let name = Name::from_wire(origin).unwrap_or(Name::ROOT);
        let served = self.catalog.get(name);
        let change = match (&wanted, served) {
            (Some(zone), Some(served)) if Arc::ptr_eq(zone, served) => None,
            (Some(zone), _) => Some(CatalogChange::Serve(Arc::clone(zone))),
            (None, Some(_)) => Some(CatalogChange::Remove(origin.into())),
            (None, None) => None,
        };
        if let Some(change) = change {
            self.catalog.apply(change.clone());
            changes.push(change);
        }
        if let Some(producer) = &mut self.producer {
            if &*producer.key != origin {
                let member = wanted.is_some_and(|zone| !zone.is_expired());
                let changed = if member {
                    producer.members.insert(origin.into())
                } else {
                    producer.members.remove(origin)
                };
                producer.stale |= changed;
            }
        }
    }

    /// The primary zone `origin` (lowercased), if it is one.
    fn primary(&self, origin: &[u8]) -> Option<&Primary> {
        let slot = self.catalog.position(Name::from_wire(origin).ok()?)?;
        self.primaries.get(slot as usize)?.as_ref()
    }

    /// Serves a new version of a primary zone from its slot.
    fn set_primary(&mut self, zone: Arc<Zone>, primary: Primary, changes: &mut Vec<CatalogChange>) {
        let origin = origin_key(&zone);
        let change = CatalogChange::Serve(zone);
        let slot = match self.catalog.apply(change.clone()) {
            Applied::Added(slot) | Applied::Replaced(slot) => slot as usize,
            Applied::Removed(_) | Applied::Nothing => return,
        };
        changes.push(change);
        if self.primaries.len() <= slot {
            self.primaries.resize_with(slot + 1, || None);
        }
        if self.primaries[slot].replace(primary).is_none() {
            self.primary_count += 1;
        }
        self.sync(&origin, changes); // the produced catalog's members
    }

    /// Stops keeping the primary zone in `slot`; a secondary version of
    /// its origin, if any, serves instead.
    fn clear_primary(&mut self, slot: u32, changes: &mut Vec<CatalogChange>) {
        let Some(origin) = self.catalog.zone_at(slot).map(|zone| origin_key(zone)) else {
            return;
        };
        if let Some(entry) = self.primaries.get_mut(slot as usize) {
            if entry.take().is_some() {
                self.primary_count -= 1;
            }
        }
        self.sync(&origin, changes);
    }

    /// A received version's serial, if it is current (not expired).
    fn secondary_serial(&self, origin: &[u8]) -> Option<u32> {
        self.secondaries
            .get(origin)
            .filter(|(zone, _)| !zone.is_expired())
            .map(|(zone, _)| zone.serial())
    }
}

/// Everything a server starts serving: the zones loaded from files and the
/// saved copies of secondary zones, as the cores' first catalog holds them
/// (primaries first).
pub struct Start {
    /// The zones loaded from files, with what each was loaded from.
    pub primaries: Vec<(Arc<Zone>, Stamp)>,
    /// The saved copies of secondary zones that serve at once.
    pub secondaries: Vec<Arc<Zone>>,
    /// The catalog the cores start with: the primaries, then the
    /// secondaries.
    pub catalog: Catalog,
}

impl Zones {
    /// The zones a server was started with, and how to reach what runs
    /// beside the cores.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cores: Arc<dyn Cores>,
        notifier: Option<NotifierHandle>,
        journals: SharedJournals,
        history_bytes: usize,
        state_directory: Option<PathBuf>,
        start: Start,
        producer: Option<NameBuf>,
        consumed: Vec<(SecondaryConfig, Vec<LowerNameBuf>)>,
        secondaries_handle: Option<SecondariesHandle>,
        notify_zones: NotifyZones,
    ) -> Arc<Self> {
        let now = unix_now();
        let held = |zones: Vec<Arc<Zone>>| -> HashMap<Origin, Held> {
            zones
                .into_iter()
                .map(|zone| (origin_key(&zone), (zone, now)))
                .collect()
        };
        // A history file read back may hold differences trimming had
        // dropped (appended frames are not taken back).
        for journal in journals
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .values_mut()
        {
            journal.trim(history_bytes);
        }
        let served = Arc::new(Zones {
            cores,
            notifier,
            secondaries_handle,
            notify_zones,
            journals,
            history_bytes,
            history_written: std::sync::atomic::AtomicU64::new(0),
            history_files: Mutex::new(HashMap::new()),
            state_directory,
            producer_wake: Mutex::new(None),
            resigner: crate::resign::Resigner::default(),
            bump: std::sync::OnceLock::new(),
            writer: Mutex::new(()),
            replay: Mutex::new(None),
            update_counts: Mutex::new(std::collections::BTreeMap::new()),
            inner: Mutex::new(Inner {
                catalog: Catalog::default(),
                primaries: Vec::new(),
                primary_count: 0,
                secondaries: held(start.secondaries),
                status: HashMap::new(),
                consumed: consumed
                    .into_iter()
                    .map(|(config, members)| {
                        let members = members.iter().map(|m| m.as_bytes().into()).collect();
                        (config.origin.as_bytes().into(), (config, members))
                    })
                    .collect(),
                producer: producer.map(|origin| Producer {
                    key: origin.as_name().to_lower().as_bytes().into(),
                    origin,
                    // Serials from the clock, so that they grow across
                    // restarts.
                    serial: crate::unix_time() as u32,
                    members: BTreeSet::new(),
                    stale: true,
                    zone: None,
                }),
            }),
        });
        {
            // The first catalog, as the cores have it: the primaries in
            // their slots, then the saved secondary zones.
            let mut inner = served.lock();
            inner.catalog = start.catalog;
            let slots = inner.catalog.slot_count();
            inner.primaries.reserve_exact(slots);
            for (zone, stamp) in start.primaries {
                let slot = inner.catalog.position(zone.origin());
                let Some(slot) = slot.map(|slot| slot as usize) else {
                    continue;
                };
                if inner.primaries.len() <= slot {
                    inner.primaries.resize_with(slot + 1, || None);
                }
                if let Some(at) = stamp.resign_at() {
                    let origin = zone.origin().as_bytes();
                    served
                        .resigner
                        .schedule(origin, at, stamp.key_event_first());
                    served.resigner.watch_parent(origin, stamp.keys());
                }
                if stamp.signed().is_some() {
                    served.save_signed_serial(&zone);
                }
                inner.primaries[slot] = Some(Primary { loaded: now, stamp });
                inner.primary_count += 1;
            }
        }
        if served.lock().producer.is_some() {
            let (wake, woken) = mpsc::channel();
            let weak = Arc::downgrade(&served);
            let thread = std::thread::Builder::new()
                .name("tern-catalog".into())
                .spawn(move || producer_loop(&weak, &woken));
            match thread {
                Ok(_) => {
                    *served
                        .producer_wake
                        .lock()
                        .unwrap_or_else(|p| p.into_inner()) = Some(wake)
                }
                Err(err) => log::error!("cannot start the catalog producer's thread: {err}"),
            }
        }
        served
    }

    /// An owner of the primary zones `primaries` only (no NOTIFY, no
    /// secondaries, no catalogs), for tests.
    #[cfg(test)]
    pub(crate) fn of_primaries(
        cores: Arc<dyn Cores>,
        journals: SharedJournals,
        history_bytes: usize,
        state_directory: Option<PathBuf>,
        primaries: Vec<(Arc<Zone>, Stamp)>,
    ) -> Arc<Self> {
        let catalog = Catalog::new(primaries.iter().map(|(zone, _)| Arc::clone(zone)));
        Zones::new(
            cores,
            None,
            journals,
            history_bytes,
            state_directory,
            Start {
                primaries,
                secondaries: Vec::new(),
                catalog,
            },
            None,
            Vec::new(),
            None,
            NotifyZones::default(),
        )
    }

    /// Lists every served zone in the produced catalog zone and serves it
    /// (at start, before the first NOTIFY).
    pub fn publish(&self) {
        let mut changes = Vec::new();
        {
            let mut inner = self.lock();
            let origins: Vec<Origin> = inner
                .catalog
                .zones()
                .map(|zone| zone.origin().as_bytes().into())
                .collect();
            for origin in origins {
                inner.sync(&origin, &mut changes);
            }
        }
        self.cores.update(changes);
        self.rebuild_producer();
    }

    /// Builds the produced catalog zone again if its members changed,
    /// serves it and NOTIFYs its new serial. Costs the members, once per
    /// settled burst of changes (see [`producer_loop`]).
    fn rebuild_producer(&self) {
        let mut changes = Vec::new();
        let mut notify = None;
        {
            let mut inner = self.lock();
            let Some(producer) = inner.producer.as_mut().filter(|p| p.stale) else {
                return;
            };
            let serial = producer.serial.wrapping_add(1);
            let built = crate::catalog_zone::build(
                producer.origin.as_name(),
                serial,
                producer
                    .members
                    .iter()
                    .filter_map(|origin| Name::from_wire(origin).ok()),
            );
            match built {
                Ok(zone) => {
                    producer.serial = serial;
                    producer.stale = false;
                    producer.zone = Some((Arc::new(zone), unix_now()));
                    let key = producer.key.clone();
                    notify = Some((LowerNameBuf::from_name(producer.origin.as_name()), serial));
                    inner.sync(&key, &mut changes);
                }
                Err(err) => {
                    producer.stale = false;
                    log::error!("catalog zone {}: {err:#}; not updated", producer.origin);
                }
            }
        }
        self.cores.update(changes);
        if let Some((origin, serial)) = notify {
            let _ = self.notify(origin, serial);
        }
    }

    /// Sends the cores `changes` and, if the produced catalog's members
    /// changed, wakes its thread.
    fn commit(&self, changes: Vec<CatalogChange>, producer_stale: bool) {
        crate::work::visit(changes.len());
        self.cores.update(changes);
        if producer_stale {
            if let Some(wake) = &*self.producer_wake.lock().unwrap_or_else(|p| p.into_inner()) {
                let _ = wake.send(());
            }
        }
    }

    /// Whether the produced catalog's members changed since it was built.
    fn producer_stale(inner: &Inner) -> bool {
        inner
            .producer
            .as_ref()
            .is_some_and(|producer| producer.stale)
    }

    /// Starts the thread that re-signs the signed zones (`tern-resign`,
    /// [`crate::resign`]): `on_due` is called with each signed zone when
    /// its signatures near expiry, and must load and sign it again from
    /// its file as `tern reload ZONE` does (on the reload thread: the only
    /// one that changes primary zones), handing the new version here as
    /// [`Event::Loaded`].
    pub fn start_resigning(
        &self,
        on_due: impl Fn(LowerNameBuf) + Send + 'static,
    ) -> std::io::Result<()> {
        // A signed secondary zone is signed again from its last version
        // received, on the signer of secondary zones.
        let bump = self.bump.get().cloned();
        self.resigner.start(Box::new(move |origin| match &bump {
            Some(bump) if bump.signs(origin.as_bytes()) => bump.queue(origin.as_bytes()),
            _ => on_due(origin),
        }))
    }

    /// Whether `origin` (lowercased) is a zone loaded from a file.
    pub fn is_primary(&self, origin: &[u8]) -> bool {
        self.lock().primary(origin).is_some()
    }

    /// Commits one event for the zones it names (docs/decisions/0013),
    /// on the producer's thread: the parts as long as a zone (a
    /// difference, a saved copy) are done before the owner's lock is taken;
    /// under it, a few look-ups and the catalog changes, which reach every
    /// core before this returns; then NOTIFY.
    pub fn apply(&self, event: Event) {
        match event {
            Event::Loaded { zones, unloaded } => self.loaded(zones, &unloaded),
            Event::NotifyAsked { origin } => {
                if let Some(serial) = self.serial(origin.as_name()) {
                    let _ = self.notify(origin, serial);
                }
            }
            refreshed => self.refreshed(refreshed),
        }
    }

    /// Held while a new version of a primary zone is made: by a reload
    /// (`Event::Loaded`) and by each group of updates, so that an update
    /// never starts from a version a reload is replacing, and a reload's
    /// replay of the update journal sees every update served.
    pub fn writer(&self) -> std::sync::MutexGuard<'_, ()> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets what a reload does to each zone loaded from its file before
    /// serving it: applies its update journal ([`crate::update::replay`]).
    pub fn set_replay(&self, replay: Replay) {
        *self.replay.lock().unwrap_or_else(|p| p.into_inner()) = Some(replay);
    }

    fn replayed(&self, zones: Vec<(Arc<Zone>, Stamp)>) -> Vec<(Arc<Zone>, Stamp)> {
        let replay = self.replay.lock().unwrap_or_else(|p| p.into_inner());
        match &*replay {
            Some(replay) => zones
                .into_iter()
                .map(|(zone, stamp)| (replay(zone, &stamp), stamp))
                .collect(),
            None => zones,
        }
    }

    /// The signed records of the primary zone `origin` (lowercased) as its
    /// last load signed them, if tern signs it ([`crate::update`] signs
    /// an update from them when they are the served version's).
    pub fn primary_signed(&self, origin: &[u8]) -> Option<Arc<crate::load::SignedVersion>> {
        self.lock().primary(origin)?.stamp.signed().cloned()
    }

    /// The version served of the primary zone `origin` (lowercased).
    pub fn primary_version(&self, origin: &[u8]) -> Option<Arc<Zone>> {
        let inner = self.lock();
        inner.primary(origin)?;
        inner.catalog.get(Name::from_wire(origin).ok()?).cloned()
    }

    /// [`crate::update`]: serves `zone`, a new version of a primary zone
    /// made by updates (under [`Zones::writer`], from the version served),
    /// as a reload does: its `differences` (in order, each from the serial
    /// the previous ended at) into the IXFR history, the catalog change to
    /// every core, then NOTIFY. Costs the differences and a hash look-up,
    /// not the zone. The place where a signer is to sign the changed
    /// RRsets first (issue 24).
    pub fn updated(&self, zone: Arc<Zone>, differences: Vec<Difference>) {
        let origin = LowerNameBuf::from_name(zone.origin());
        self.push_history(origin, false, differences);
        let serial = zone.serial();
        let mut changes = Vec::new();
        let stale = {
            let mut inner = self.lock();
            if inner.primary(origin.as_bytes()).is_none() {
                return; // unloaded meanwhile (not under the writer: never)
            }
            let change = CatalogChange::Serve(zone);
            inner.catalog.apply(change.clone());
            changes.push(change);
            Self::producer_stale(&inner)
        };
        self.commit(changes, stale);
        let _ = self.notify(origin, serial);
    }

    /// Counts an UPDATE answered with `rcode` for `origin`.
    pub fn count_update(&self, origin: &[u8], rcode: tern_wire::types::Rcode) {
        let mut counts = self.update_counts.lock().unwrap_or_else(|p| p.into_inner());
        *counts.entry((origin.into(), rcode.0 as u8)).or_default() += 1;
    }

    /// UPDATEs answered so far: zone (lowercased wire form), RCODE, count.
    pub fn update_counts(&self) -> Vec<(Origin, u8, u64)> {
        let counts = self.update_counts.lock().unwrap_or_else(|p| p.into_inner());
        counts
            .iter()
            .map(|((origin, rcode), count)| (origin.clone(), *rcode, *count))
            .collect()
    }

    /// How many zones loaded from files there are.
    pub fn primary_count(&self) -> usize {
        self.lock().primary_count
    }

    /// Whether NOTIFYs go anywhere (`notify.targets`).
    pub fn notifies(&self) -> bool {
        self.notifier.is_some()
    }

    /// [`Event::Loaded`]: serves new versions of primary zones and stops
    /// serving the `removed` ones, then sends NOTIFY for each zone whose
    /// serial changed or that is new. Costs the zones given, not the zones
    /// served.
    fn loaded(&self, zones: Vec<(Arc<Zone>, Stamp)>, removed: &[Origin]) {
        let _writer = self.writer();
        let zones = self.replayed(zones);
        // The reload thread is the only one that changes primaries: the
        // old versions read here stay current while the differences (as
        // long as the zones) are computed without the lock.
        let old: Vec<Option<Arc<Zone>>> = {
            let inner = self.lock();
            zones
                .iter()
                .map(|(zone, _)| {
                    crate::work::visit(1);
                    inner.primary(zone.origin().as_bytes())?;
                    inner.catalog.get(zone.origin()).cloned()
                })
                .collect()
        };
        let mut notify = Vec::new();
        for ((zone, stamp), old) in zones.iter().zip(&old) {
            if let Some(signed) = stamp.signed() {
                self.save_signed_serial(zone);
                // What the signer found changed, if it signed from `old`:
                // no comparison of the two versions.
                let change = signed.take_change();
                if let (Some(old), Some((from, change))) = (old, change) {
                    if from == old.serial() && self.record_change(old, zone, change) {
                        notify.push((LowerNameBuf::from_name(zone.origin()), zone.serial()));
                        continue;
                    }
                }
            }
            match old {
                Some(old) => {
                    self.record_difference(old, zone);
                    if old.serial() != zone.serial() {
                        notify.push((LowerNameBuf::from_name(zone.origin()), zone.serial()));
                    }
                }
                None => notify.push((LowerNameBuf::from_name(zone.origin()), zone.serial())),
            }
        }
        let now = unix_now();
        let mut changes = Vec::new();
        let stale = {
            let mut inner = self.lock();
            for (zone, stamp) in zones {
                let origin = zone.origin().as_bytes();
                match stamp.resign_at() {
                    Some(at) => {
                        self.resigner.schedule(origin, at, stamp.key_event_first());
                        self.resigner.watch_parent(origin, stamp.keys());
                    }
                    None => self.resigner.cancel(origin),
                }
                let primary = Primary { loaded: now, stamp };
                inner.set_primary(zone, primary, &mut changes);
            }
            for origin in removed {
                self.resigner.cancel(origin);
                let slot = Name::from_wire(origin)
                    .ok()
                    .and_then(|name| inner.catalog.position(name));
                if let Some(slot) = slot {
                    inner.clear_primary(slot, &mut changes);
                }
            }
            Self::producer_stale(&inner)
        };
        self.commit(changes, stale);
        for (origin, serial) in notify {
            let _ = self.notify(origin, serial);
        }
    }

    /// Sends NOTIFY for every zone served now (at start, as Knot and BIND
    /// do once their zones are loaded).
    pub fn notify_all(&self) {
        if self.notifier.is_none() {
            return;
        }
        let zones: Vec<(LowerNameBuf, u32)> = self
            .lock()
            .catalog
            .zones()
            .map(|zone| (LowerNameBuf::from_name(zone.origin()), zone.serial()))
            .collect();
        for (origin, serial) in zones {
            let _ = self.notify(origin, serial);
        }
    }

    /// Queues NOTIFY for `origin` at `serial`; false if there are no
    /// targets.
    fn notify(&self, origin: LowerNameBuf, serial: u32) -> bool {
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
    pub fn set_status(&self, origin: LowerNameBuf, timers: Option<Timers>, role: String) {
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
        self.lock().status.insert(origin.as_bytes().into(), status);
    }

    /// The serial served for `origin` (lowercased), if it is served.
    pub fn serial(&self, origin: Name<'_>) -> Option<u32> {
        self.lock().catalog.get(origin).map(|zone| zone.serial())
    }

    /// The keys of the signed zone `origin` (lowercased wire form), as
    /// its served version's signing left them (`tern keys`).
    pub fn zone_keys(&self, origin: &[u8]) -> Option<Arc<crate::rollover::ZoneKeys>> {
        let keys = self
            .lock()
            .primary(origin)
            .and_then(|primary| primary.stamp.keys().cloned());
        keys.or_else(|| self.bump.get()?.keys(origin))
    }

    /// The signed zones' keys, in the catalog's order (`tern keys list`).
    pub fn all_zone_keys(&self) -> Vec<Arc<crate::rollover::ZoneKeys>> {
        let inner = self.lock();
        inner
            .primaries
            .iter()
            .flatten()
            .filter_map(|primary| primary.stamp.keys().cloned())
            .chain(
                self.bump
                    .get()
                    .map(|bump| bump.all_keys())
                    .unwrap_or_default(),
            )
            .collect()
    }

    /// Whether `origin` (lowercased) is a secondary zone or a consumed
    /// catalog.
    pub fn is_secondary(&self, origin: &[u8]) -> bool {
        self.lock().status.contains_key(origin)
    }

    /// How many zones are served, and how many secondary zones (and
    /// consumed catalogs) are kept, served or not.
    pub fn counts(&self) -> (usize, usize, usize) {
        let inner = self.lock();
        let served = inner.catalog.len();
        let secondary_served = inner
            .status
            .keys()
            .filter(|origin| {
                inner.primary(origin).is_none()
                    && Name::from_wire(origin).is_ok_and(|name| inner.catalog.get(name).is_some())
            })
            .count();
        (served, served - secondary_served, inner.status.len())
    }

    /// Every zone served or kept (served zones in slot order, then the
    /// secondary zones not served), or only `only`. Bound: one pass over
    /// the zones, a hash look-up each.
    pub fn views(&self, only: Option<&[u8]>) -> Vec<ZoneView> {
        let inner = self.lock();
        let view = |origin: &[u8], zone: Option<&Arc<Zone>>| {
            let secondary = inner.status.get(origin);
            let primary = inner.primary(origin).is_some();
            ZoneView {
                origin: origin.into(),
                serial: match (zone, secondary) {
                    (Some(zone), _) if primary || secondary.is_none() => Some(zone.serial()),
                    _ => inner.secondary_serial(origin),
                },
                served: zone.map(|zone| zone.serial()),
                loaded: inner
                    .primary(origin)
                    .map(|primary| primary.loaded)
                    .or_else(|| inner.secondaries.get(origin).map(|(_, when)| *when))
                    .or_else(|| {
                        inner
                            .producer
                            .as_ref()
                            .filter(|producer| &*producer.key == origin)
                            .and_then(|producer| producer.zone.as_ref())
                            .map(|(_, when)| *when)
                    }),
                secondary: secondary.filter(|_| !primary).cloned(),
            }
        };
        if let Some(only) = only {
            let zone = Name::from_wire(only)
                .ok()
                .and_then(|name| inner.catalog.get(name));
            if zone.is_none() && !inner.status.contains_key(only) {
                return Vec::new();
            }
            return vec![view(only, zone)];
        }
        let mut views: Vec<ZoneView> = inner
            .catalog
            .zones()
            .map(|zone| view(zone.origin().as_bytes(), Some(zone)))
            .collect();
        for origin in inner.status.keys() {
            let served =
                Name::from_wire(origin).is_ok_and(|name| inner.catalog.get(name).is_some());
            if !served {
                views.push(view(origin, None));
            }
        }
        views
    }

    /// The refresh thread's events: a new zone is saved, then served;
    /// timers are saved; an expired zone answers SERVFAIL.
    fn refreshed(&self, event: Event) {
        match event {
            Event::Received {
                zone,
                timers,
                incremental,
                primary,
            } => {
                let origin = LowerNameBuf::from_name(zone.origin());
                let key: Origin = origin.as_bytes().into();
                // A member its catalog dropped while its transfer ran: the
                // transfer thread forgets it too; nothing is kept.
                let old = {
                    let inner = self.lock();
                    if !inner.status.contains_key(&key) {
                        return;
                    }
                    inner
                        .secondaries
                        .get(&key)
                        .filter(|(old, _)| !old.is_expired())
                        .map(|(old, _)| Arc::clone(old))
                };
                if let Some(dir) = &self.state_directory {
                    if let Err(err) = save_zone(dir, &zone) {
                        log::error!("{}: cannot save the received zone: {err}", origin.as_name());
                    }
                }
                self.save_timers(origin, timers);
                if let Some(bump) = self.bump.get().filter(|bump| bump.signs(&key)) {
                    // Kept unsigned and signed on the signer's thread,
                    // which serves the signed version.
                    self.received_for_signing(&key, &zone, timers, incremental, primary);
                    bump.received(zone);
                    return;
                }
                // Only this thread's events change secondaries: `old` is
                // still the version held.
                if let Some(old) = &old {
                    self.record_difference(old, &zone);
                }
                let serial = zone.serial();
                let mut changes = Vec::new();
                let stale = {
                    let mut inner = self.lock();
                    let Some(status) = inner.status.get_mut(&key) else {
                        return;
                    };
                    status.transfers[usize::from(incremental)] += 1;
                    status.timers = timers;
                    status.expired = false;
                    status.last_outcome = format!(
                        "serial {serial} by {} from {primary}",
                        if incremental { "IXFR" } else { "AXFR" }
                    );
                    inner
                        .secondaries
                        .insert(key.clone(), (Arc::clone(&zone), unix_now()));
                    if inner.consumed.contains_key(&key) {
                        self.apply_catalog(&mut inner, &key, &zone, &mut changes);
                    }
                    inner.sync(&key, &mut changes);
                    Self::producer_stale(&inner)
                };
                self.commit(changes, stale);
                let _ = self.notify(origin, serial);
            }
            Event::Refreshed {
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
                let key: Origin = origin.as_bytes().into();
                let mut changes = Vec::new();
                let stale = {
                    let mut inner = self.lock();
                    let Some(status) = inner.status.get_mut(&key) else {
                        return;
                    };
                    status.last_outcome = "expired".to_string();
                    status.expired = true;
                    if let Some(bump) = self.bump.get() {
                        bump.expired(&key);
                    }
                    if let Some((zone, when)) = inner.secondaries.get(&key) {
                        let stand_in = (Arc::new(zone.expired()), *when);
                        inner.secondaries.insert(key.clone(), stand_in);
                    }
                    inner.sync(&key, &mut changes);
                    Self::producer_stale(&inner)
                };
                self.commit(changes, stale);
            }
            Event::Loaded { .. } | Event::NotifyAsked { .. } => {}
        }
    }

    /// A new version of a consumed catalog: members that joined become
    /// secondary zones from the catalog's primaries (with its key), members
    /// that left stop being kept and served. A catalog that does not read
    /// (not version 2) changes nothing. Costs the catalog's members.
    fn apply_catalog(
        &self,
        inner: &mut Inner,
        key: &[u8],
        catalog: &Zone,
        changes: &mut Vec<CatalogChange>,
    ) {
        let members = match crate::catalog_zone::members(catalog) {
            Ok(members) => members,
            Err(err) => {
                log::error!("{err:#}; its members are unchanged");
                return;
            }
        };
        let Some((config, old)) = inner
            .consumed
            .get_mut(key)
            .map(|(config, old)| (config.clone(), std::mem::take(old)))
        else {
            return;
        };
        let catalog_name = config.origin.as_name().to_string();
        let mut kept: HashSet<Origin> = HashSet::with_capacity(members.len());
        for member in &members {
            crate::work::visit(1);
            let member_key: Origin = member.as_bytes().into();
            if old.contains(&member_key) {
                kept.insert(member_key);
                continue;
            }
            let taken = inner.primary(&member_key).is_some()
                || inner.status.contains_key(&member_key)
                || inner.consumed.contains_key(&member_key)
                || kept.contains(&member_key);
            if taken {
                log::warn!(
                    "catalog {catalog_name}: member {} is configured otherwise; not taken",
                    member.as_name()
                );
                continue;
            }
            kept.insert(member_key.clone());
            // A catalog with a policy: the member is signed (bump in the
            // wire) and only its signed versions are served.
            let signed = self
                .bump
                .get()
                .is_some_and(|bump| bump.add_member(*member, key));
            let member_config = SecondaryConfig {
                origin: *member,
                primaries: config.primaries.clone(),
                key: config.key.clone(),
                tls: config.tls.clone(),
            };
            log::info!("catalog {catalog_name}: member {} added", member.as_name());
            self.notify_zones
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .insert(member_key.clone(), notify_source(&member_config));
            let saved = load_saved(self.state_directory.as_deref(), &member_config);
            inner.status.insert(
                member_key.clone(),
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
            match (&saved, self.bump.get().filter(|_| signed)) {
                (Some((zone, _)), Some(bump)) => bump.received(Arc::clone(zone)),
                (Some((zone, _)), None) => {
                    inner
                        .secondaries
                        .insert(member_key.clone(), (Arc::clone(zone), unix_now()));
                    inner.sync(&member_key, changes);
                }
                (None, _) => {}
            }
            if let Some(handle) = &self.secondaries_handle {
                handle.add((member_config, saved));
            }
        }
        for member in old.iter().filter(|member| !kept.contains(*member)) {
            let Ok(name) = Name::from_wire(member) else {
                continue;
            };
            log::info!("catalog {catalog_name}: member {name} removed");
            inner.secondaries.remove(member);
            inner.status.remove(member);
            // Signed: no longer (its keys stay, crate::bump).
            if let Some(bump) = self.bump.get() {
                bump.remove_member(LowerNameBuf::from_name(name));
            }
            self.resigner.cancel(member);
            inner.sync(member, changes);
            self.notify_zones
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .remove(member);
            if let Some(handle) = &self.secondaries_handle {
                handle.remove(LowerNameBuf::from_name(name));
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
        if newer {
            self.push_history(origin, false, vec![difference]);
        } else if !difference.is_empty() {
            log::warn!(
                "zone {}: its data changed but its serial {} is not higher than {}; served, \
                 and IXFR clients get the whole zone",
                origin.as_name(),
                new.serial(),
                old.serial()
            );
            self.push_history(origin, true, Vec::new());
        }
    }

    /// Records in the zone's IXFR history the `change` the signer found
    /// from `old` to the signed `new`; false (nothing recorded) if `new`'s
    /// serial is not higher. Bound: the change's records, sorted.
    fn record_change(&self, old: &Arc<Zone>, new: &Arc<Zone>, change: tern_dnssec::Change) -> bool {
        if !journal::is_newer(old, new) {
            return false;
        }
        if self.history_bytes == 0 {
            return true;
        }
        let origin = LowerNameBuf::from_name(new.origin());
        let apex = new.origin();
        let records = |records: Vec<tern_zone::Record>| {
            let mut list: Vec<journal::Record> = records
                .into_iter()
                .filter(|record| {
                    !(record.rtype == tern_wire::types::RType::SOA
                        && record.owner.as_name().eq_ignore_case(apex))
                })
                .map(|record| journal::Record {
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
        let difference = Difference {
            from_soa: soa(old),
            to_soa: soa(new),
            deleted: records(change.deleted),
            added: records(change.added),
        };
        self.push_history(origin, false, vec![difference]);
        true
    }

    /// Pushes `differences` (in order) into the zone's IXFR history, after
    /// clearing it when `clear`, and saves it in the state directory: by
    /// appending their frames to its file, or by writing the file whole
    /// when this run has not written it yet (it may end in a torn frame),
    /// when the history started afresh, or when trimming has left more
    /// than half of the file stale. A save costs the differences, and a
    /// whole write the history once per as many octets appended.
    fn push_history(&self, origin: LowerNameBuf, clear: bool, differences: Vec<Difference>) {
        if self.history_bytes == 0 {
            return;
        }
        let key = origin.as_bytes().to_vec();
        let mut files = self
            .history_files
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (bytes, appended_to) = {
            let mut journals = self
                .journals
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let journal = journals.entry(key.clone()).or_default();
            let mut afresh = clear;
            if clear {
                journal.clear();
            }
            let saving = self.state_directory.is_some();
            let mut frames = Vec::new();
            for difference in differences {
                if saving {
                    journal::history_frame(&difference, &mut frames);
                }
                afresh |= !journal.push(difference, self.history_bytes);
            }
            if !saving {
                return;
            }
            let live = journal.history_len() as u64;
            match files.get(&key) {
                Some(&len) if !afresh && len + frames.len() as u64 <= 2 * live => {
                    (frames, Some(len))
                }
                _ => (journal.encode_history(), None),
            }
        };
        let Some(dir) = &self.state_directory else {
            return;
        };
        let path = journal_path(dir, origin);
        let written = match appended_to {
            Some(len) => append_history(&path, &bytes).map(|()| len + bytes.len() as u64),
            None => write_atomically(&path, &bytes).map(|()| bytes.len() as u64),
        };
        self.history_written
            .fetch_add(bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
        match written {
            Ok(len) => {
                files.insert(key, len);
            }
            Err(err) => {
                files.remove(&key);
                log::warn!(
                    "zone {}: cannot save its IXFR history to {}: {err}",
                    origin.as_name(),
                    path.display()
                );
            }
        }
    }

    /// Saves the serial a signed zone is served with, so that a restart
    /// signs it with a higher one.
    fn save_signed_serial(&self, zone: &Zone) {
        let Some(dir) = &self.state_directory else {
            return;
        };
        let origin = LowerNameBuf::from_name(zone.origin());
        if let Err(err) = crate::signed_serial::save_signed_serial(dir, origin, zone.serial()) {
            log::warn!(
                "zone {}: cannot save its serial in the state directory: {err}",
                origin.as_name()
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

//----------- signed secondary zones ------------------------------------------

/// The secondary zones tern signs ([`crate::bump`]): the received version
/// is kept there and signed, and the signed one is served from here.
impl Zones {
    /// Starts signing the secondary zones of `bump` (before the refresh
    /// thread and [`Zones::start_resigning`], so that their versions
    /// received and their re-signing go to it).
    pub fn start_bump(self: &Arc<Self>, bump: Arc<crate::bump::Bump>) -> std::io::Result<()> {
        let zones: std::sync::Weak<Zones> = Arc::downgrade(self);
        bump.start(zones)?;
        let _ = self.bump.set(bump);
        Ok(())
    }

    /// Queues the signing of the signed secondary zone `origin`
    /// (lowercased wire form) from its last version received (`tern keys`
    /// after a rollover or a DS seen); false if it is not one (a primary
    /// zone is loaded again instead).
    pub fn sign_secondary_again(&self, origin: &[u8]) -> bool {
        match self.bump.get().filter(|bump| bump.signs(origin)) {
            Some(bump) => {
                bump.queue(origin);
                true
            }
            None => false,
        }
    }

    /// A version of a signed secondary zone was received (saved already):
    /// its status says so; what is served changes once it is signed.
    fn received_for_signing(
        &self,
        key: &[u8],
        zone: &Zone,
        timers: Timers,
        incremental: bool,
        primary: std::net::SocketAddr,
    ) {
        let mut inner = self.lock();
        let Some(status) = inner.status.get_mut(key) else {
            return;
        };
        status.transfers[usize::from(incremental)] += 1;
        status.timers = timers;
        status.expired = false;
        status.last_outcome = format!(
            "serial {} by {} from {primary}, being signed",
            zone.serial(),
            if incremental { "IXFR" } else { "AXFR" }
        );
    }
}

/// The bump-in-the-wire signer hands its outcomes here.
impl crate::bump::Publish for Zones {
    /// Serves a signed version of a secondary zone: the signer's
    /// difference from the version served goes into its IXFR history (or
    /// the two are compared), its serial is saved, its re-signing is
    /// timed, and it is NOTIFYed. Nothing for a zone no longer configured
    /// or expired meanwhile.
    fn serve_signed_secondary(&self, signed: crate::bump::SignedSecondary) {
        let zone = signed.zone;
        let origin = LowerNameBuf::from_name(zone.origin());
        let key: Origin = origin.as_bytes().into();
        // Only the signer's thread serves these zones, and the refresh
        // thread's events do not change them: `old` stays the one served.
        let old = {
            let inner = self.lock();
            match inner.status.get(&key) {
                Some(status) if !status.expired => {}
                _ => return,
            }
            inner
                .secondaries
                .get(&key)
                .filter(|(old, _)| !old.is_expired())
                .map(|(old, _)| Arc::clone(old))
        };
        self.save_signed_serial(&zone);
        if let Some(old) = &old {
            let recorded = match signed.change {
                Some((from, change)) if from == old.serial() => {
                    self.record_change(old, &zone, change)
                }
                _ => false,
            };
            if !recorded {
                self.record_difference(old, &zone);
            }
        }
        self.resigner
            .schedule(&key, signed.resign_at, signed.key_event_first);
        self.resigner.watch_parent(&key, Some(&signed.keys));
        let serial = zone.serial();
        let mut changes = Vec::new();
        let stale = {
            let mut inner = self.lock();
            if let Some(status) = inner.status.get_mut(&key) {
                status.last_outcome = format!(
                    "serial {} received, served signed as serial {serial}",
                    signed.received
                );
            }
            inner.secondaries.insert(key.clone(), (zone, unix_now()));
            inner.sync(&key, &mut changes);
            Self::producer_stale(&inner)
        };
        self.commit(changes, stale);
        if old.is_none_or(|old| old.serial() != serial) {
            let _ = self.notify(origin, serial);
        }
    }

    /// A version of a signed secondary zone could not be signed (logged
    /// by the signer): the version served stays, the status says why, and
    /// the signing is tried again after a back-off.
    fn signed_secondary_failed(&self, origin: &[u8], reason: &str) {
        self.resigner.retry(origin);
        if let Some(status) = self.lock().status.get_mut(origin) {
            status.last_outcome = format!("not signed: {reason}");
        }
    }
}

/// Rebuilds the produced catalog zone once the changes that woke it have
/// settled: no new one for [`PRODUCER_SETTLE`], or [`PRODUCER_DELAY`]
/// after the first. Ends with the server.
fn producer_loop(served: &Weak<Zones>, woken: &Receiver<()>) {
    while woken.recv().is_ok() {
        let deadline = Instant::now() + PRODUCER_DELAY;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match woken.recv_timeout(left.min(PRODUCER_SETTLE)) {
                Ok(()) => continue,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        let Some(served) = served.upgrade() else {
            return;
        };
        served.rebuild_producer();
    }
}

impl crate::load::Previous for Zones {
    fn count(&self) -> usize {
        self.lock().primary_count
    }

    fn serial(&self, origin: &[u8]) -> Option<u32> {
        let inner = self.lock();
        inner.primary(origin)?;
        Some(inner.catalog.get(Name::from_wire(origin).ok()?)?.serial())
    }

    fn signed(&self, origin: &[u8]) -> Option<Arc<crate::load::SignedVersion>> {
        self.lock().primary(origin)?.stamp.signed().cloned()
    }

    fn served(&self, origin: &[u8]) -> Option<Arc<Zone>> {
        self.primary_version(origin)
    }

    fn unchanged(
        &self,
        origin: &[u8],
        path: &Path,
        file: Option<FileStamp>,
        near: &mut u32,
    ) -> Option<bool> {
        crate::work::visit(1);
        let inner = self.lock();
        let slot = inner
            .catalog
            .position_from(Name::from_wire(origin).ok()?, near.wrapping_add(1))?;
        *near = slot;
        // A stat per included file, under the lock: no copy of the stamp.
        let primary = inner.primaries.get(slot as usize)?.as_ref()?;
        Some(primary.stamp.unchanged(path, file))
    }

    fn not_configured(&self, configured: &dyn Fn(&[u8]) -> bool) -> Vec<Origin> {
        let inner = self.lock();
        inner
            .primaries
            .iter()
            .enumerate()
            .filter(|(_, primary)| {
                crate::work::visit(1);
                primary.is_some()
            })
            .filter_map(|(slot, _)| inner.catalog.zone_at(slot as u32))
            .map(|zone| zone.origin().as_bytes())
            .filter(|origin| !configured(origin))
            .map(Origin::from)
            .collect()
    }
}

/// A zone's lowercased wire origin, the key of the tables here.
fn origin_key(zone: &Zone) -> Origin {
    zone.origin().as_bytes().into()
}

/// The time now in Unix seconds.
fn unix_now() -> u64 {
    crate::unix_time()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{self, Previous as _, Sources};

    /// Cores that count the changes they are sent.
    #[derive(Default)]
    struct CountedCores {
        changes: Mutex<usize>,
    }

    impl Cores for CountedCores {
        fn update(&self, changes: Vec<CatalogChange>) {
            *self.changes.lock().unwrap() += changes.len();
        }
    }

    /// A small zone, as a hosting provider's (scripts/gen-zones.py).
    fn small_zone(index: usize, serial: u32) -> String {
        format!(
            "$TTL 3600\n@ SOA ns1.example.net. hostmaster {serial} 3600 900 604800 300\n\
             @ NS ns1.example.net.\n@ NS ns2.example.net.\n@ A 192.0.2.{}\nwww CNAME @\n",
            index % 250 + 1
        )
    }

    /// The work of a reload of every zone and of a reload of one zone,
    /// each after one zone of `count` changed: (zones visited, zones
    /// visited), counted by `crate::work`; each sends the cores one change.
    fn reload_work(count: usize) -> (u64, u64) {
        let dir =
            std::env::temp_dir().join(format!("tern-reload-work-{}-{count}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for index in 0..count {
            std::fs::write(
                dir.join(format!("z{index}.example.zone")),
                small_zone(index, 1),
            )
            .unwrap();
        }
        let sources = Sources {
            dir: Some(dir.clone()),
            listed: Vec::new(),
            signing: None,
        };
        let loaded = load::load_all(&sources, None).unwrap();
        assert_eq!(loaded.zones.len(), count);
        let cores = Arc::new(CountedCores::default());
        let served = Zones::of_primaries(
            Arc::clone(&cores) as Arc<dyn Cores>,
            SharedJournals::default(),
            0,
            None,
            loaded.zones,
        );
        let changed = "z7.example.";
        let origin = NameBuf::from_text(changed.as_bytes(), None).unwrap();
        let edit = |serial: u32| {
            // A size of its own, so that the stamp differs at once.
            let mut text = small_zone(7, serial);
            text.push_str(&format!(
                "edit{serial} TXT \"{}\"\n",
                "x".repeat(serial as usize)
            ));
            std::fs::write(dir.join(format!("{}zone", changed)), text).unwrap();
        };

        edit(2);
        crate::work::take();
        let loaded = load::load_all(&sources, Some(&*served)).unwrap();
        assert_eq!((loaded.zones.len(), loaded.unchanged), (1, count - 1));
        served.apply(Event::Loaded {
            zones: loaded.zones,
            unloaded: loaded.removed,
        });
        let full = crate::work::take();
        assert_eq!(served.serial(origin.as_name()), Some(2));

        edit(3);
        crate::work::take();
        let loaded = load::load_one(&sources, origin.as_bytes(), Some(&*served)).unwrap();
        served.apply(Event::Loaded {
            zones: loaded.zones,
            unloaded: loaded.removed,
        });
        let one = crate::work::take();
        assert_eq!(served.serial(origin.as_name()), Some(3));
        let path = dir.join("z7.example.zone");
        assert_eq!(
            served.unchanged(origin.as_bytes(), &path, FileStamp::of(&path), &mut 0),
            Some(true)
        );

        assert_eq!(*cores.changes.lock().unwrap(), 2, "one change each");
        std::fs::remove_dir_all(&dir).unwrap();
        (full, one)
    }

    /// Issue 22: a reload of N zones with one changed visits each zone a
    /// bounded number of times (its file's stamp, its name sorted once),
    /// not every zone per zone as set_primaries did (53 s at 100,000
    /// zones); a reload of that one zone costs the same whatever N; and the
    /// cores are sent that zone's change alone.
    #[test]
    fn reload_work_grows_with_the_zones_not_their_square() {
        let (small, large) = (250, 1000);
        let (full_small, one_small) = reload_work(small);
        let (full_large, one_large) = reload_work(large);
        eprintln!(
            "reload of {small} zones: {full_small} visits, of one: {one_small}; \
             of {large}: {full_large}, of one: {one_large}"
        );
        // N log N at most (the names are sorted): 4 times the zones cost
        // at most 6 times the work; N squared would cost 16 times.
        assert!(
            full_large * 10 <= full_small * 60,
            "{full_small} -> {full_large}"
        );
        assert!(
            full_large <= 48 * large as u64,
            "{full_large} visits for {large} zones"
        );
        // One zone: the same work at both sizes, and little of it.
        assert_eq!(one_small, one_large);
        assert!(one_small <= 8, "{one_small} visits to reload one zone");
    }

    /// A difference of `example.` from `serial` to the next, adding one
    /// TXT record of 100 octets.
    fn update_difference(serial: u32) -> Difference {
        let soa = |serial: u32| {
            let mut rdata = vec![0u8, 0];
            rdata.extend_from_slice(&serial.to_be_bytes());
            rdata.extend_from_slice(&[0; 16]);
            (3600, rdata)
        };
        Difference {
            from_soa: soa(serial),
            to_soa: soa(serial + 1),
            deleted: Vec::new(),
            added: vec![journal::Record {
                owner: {
                    let label = format!("a{serial:05}");
                    let mut owner = vec![label.len() as u8];
                    owner.extend_from_slice(label.as_bytes());
                    owner.extend_from_slice(b"\x07example\x00");
                    owner
                },
                rtype: tern_wire::types::RType::TXT,
                ttl: 60,
                rdata: vec![b'x'; 100],
            }],
        }
    }

    /// Octets written to the IXFR history file (of at most `bound` octets)
    /// by one update group after `before` groups, by all of them, and what
    /// a restart reads back of that file.
    fn history_octets_per_group(before: u32, bound: usize) -> (u64, u64, Option<journal::Journal>) {
        let dir =
            std::env::temp_dir().join(format!("tern-history-save-{}-{before}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("example.zone"), small_zone(1, 1)).unwrap();
        let sources = Sources {
            dir: Some(dir.clone()),
            listed: Vec::new(),
            signing: None,
        };
        let loaded = load::load_all(&sources, None).unwrap();
        let zone = Arc::clone(&loaded.zones[0].0);
        let state = dir.join("state");
        let served = Zones::of_primaries(
            Arc::new(CountedCores::default()) as Arc<dyn Cores>,
            SharedJournals::default(),
            bound,
            Some(state.clone()),
            loaded.zones,
        );
        let written = || {
            served
                .history_written
                .load(std::sync::atomic::Ordering::Relaxed)
        };
        for serial in 1..=before {
            served.updated(Arc::clone(&zone), vec![update_difference(serial)]);
        }
        let start = written();
        served.updated(Arc::clone(&zone), vec![update_difference(before + 1)]);
        let one = written() - start;
        let total = written();
        let origin = LowerNameBuf::from_name(zone.origin());
        let bytes = std::fs::read(journal_path(&state, origin)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        (one, total, journal::Journal::decode_history(&bytes))
    }

    /// Issue 25: saving an update group's differences in the IXFR history
    /// file costs the differences, not the history (the whole history
    /// was written per group, 400 updates a second fell to 78); and the
    /// file read back is the whole chain.
    #[test]
    fn saving_an_update_costs_its_difference_not_the_history() {
        let (small, large) = (10, 400);
        let (one_small, _, read_small) = history_octets_per_group(small, 1 << 30);
        let (one_large, _, read_large) = history_octets_per_group(large, 1 << 30);
        eprintln!("history octets per group: {one_small} after {small}, {one_large} after {large}");
        assert_eq!(one_small, one_large);
        let frame = journal::FRAME_OVERHEAD + update_difference(1).encoded_len();
        assert_eq!(one_small, frame as u64);
        for (read, count) in [(read_small, small), (read_large, large)] {
            let read = read.expect("the history file reads back");
            assert_eq!(read.differences().count(), count as usize + 1);
            assert!(read.ends_at(count + 2));
        }
    }

    /// Issue 25: with trimming, the file is written whole only when more
    /// than half of it is stale: all the octets written stay within three
    /// times the frames, and the file read back (trimmed to its bound as a
    /// start does) is the latest history, ending at the last serial.
    #[test]
    fn a_trimmed_history_is_rewritten_rarely_and_reads_back_whole() {
        let frame = journal::FRAME_OVERHEAD + update_difference(1).encoded_len();
        let bound = 10 * update_difference(1).encoded_len();
        let groups = 300;
        let (_, total, read) = history_octets_per_group(groups - 1, bound);
        eprintln!("{total} octets written for {groups} groups of {frame}");
        assert!(total <= 3 * (groups as u64) * frame as u64, "{total}");
        let mut read = read.expect("the history file reads back");
        assert!(read.differences().count() <= 21, "at most half stale");
        read.trim(bound);
        assert_eq!(read.differences().count(), 10);
        assert!(read.ends_at(groups + 1));
    }

    /// `example.` at `serial` loaded from a file in `dir`, and the IXFR
    /// histories a start reads for it from `dir/state` holding `history`.
    fn restart_with_history(dir: &Path, serial: u32, history: &[u8]) -> journal::Journals {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("example.zone"), small_zone(1, serial)).unwrap();
        let sources = Sources {
            dir: Some(dir.to_path_buf()),
            listed: Vec::new(),
            signing: None,
        };
        let loaded = load::load_all(&sources, None).unwrap();
        let zone = Arc::clone(&loaded.zones[0].0);
        let state = dir.join("state");
        let path = journal_path(&state, LowerNameBuf::from_name(zone.origin()));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, history).unwrap();
        let journals = crate::state::load_journals(Some(&state), &[zone]);
        std::fs::remove_dir_all(dir).unwrap();
        journals
    }

    /// Issue 25: a start serves an appended history that ends at the
    /// served serial as the whole chain (IXFR from its first serial gives
    /// every difference, condensed); one whose last frame a crash cut reads
    /// as its good prefix, which ends before the served serial (the update
    /// journal's replay serves the cut difference): dropped, never served
    /// as a chain to the served version.
    #[test]
    fn a_start_serves_a_whole_history_and_drops_a_torn_one() {
        let mut file = journal::Journal::new().encode_history();
        for serial in 1..=5 {
            journal::history_frame(&update_difference(serial), &mut file);
        }
        let dir = std::env::temp_dir().join(format!("tern-history-start-{}", std::process::id()));
        let journals = restart_with_history(&dir, 6, &file);
        let history = journals.values().next().expect("the history is served");
        assert!(history.ends_at(6));
        let chain = history.since(1).expect("IXFR from serial 1");
        assert_eq!((chain.from_serial(), chain.to_serial()), (1, 6));
        assert_eq!(chain.added.len(), 5);
        assert!(chain.deleted.is_empty());

        let last = journal::FRAME_OVERHEAD + update_difference(5).encoded_len();
        for cut in [1, last / 2, last - 1] {
            let torn = &file[..file.len() - cut];
            assert!(
                restart_with_history(&dir, 6, torn).is_empty(),
                "a history cut by {cut} octets served"
            );
            // Its good prefix, were serial 5 the one served.
            let journals = restart_with_history(&dir, 5, torn);
            assert!(journals.values().next().is_some_and(|h| h.ends_at(5)));
        }
    }
}
