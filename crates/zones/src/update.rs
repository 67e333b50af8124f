//! Dynamic updates (RFC 2136) of primary zones, off the cores
//! (docs/decisions/0015): the `tern-update` thread.
//!
//! A core checks an UPDATE cheaply (its zone is ours and has rules, its
//! TSIG verifies) and hands it here through a [`Submitter`]; the answer's
//! RCODE goes back through the request's `reply`. This thread keeps, per
//! updatable zone, the records as `tern_update` changes them
//! ([`ZoneRecords`] laid over the served version: it reads that version
//! name by name and holds only the names a group of updates changed, until
//! the version made of them is served and the records are laid over it;
//! a zone tern signs, or with NSEC3 records, is copied whole instead), and
//! takes requests in groups (those that arrived together, at most
//! [`UPDATE_GROUP`]):
//!
//! ```text
//!  requests ─► engine (each, in order) ─► journal append, one fsync per zone
//!           ─► one new version per zone (ZoneBuilder) ─► Zones::updated
//!              (IXFR history, catalog change to every core, NOTIFY) ─► replies
//! ```
//!
//! Durable before answered: a difference is in the zone's update journal
//! (`ZONEFILE.tern-journal`, beside the zone file) and synced before any
//! reply of its group leaves. At start and at each reload the zone file is
//! read and the journal applied on top ([`replay`]). The zone file is
//! rewritten from the served version every `zone-file-sync` (and at stop),
//! through a temporary file and a rename, and the journal then emptied.
//!
//! A zone file changed by hand while updates are kept in the journal
//! (Knot's `zonefile-load: whole` with `journal-content: changes`): the
//! journal is applied only if it continues from the file's serial; a file
//! with another serial wins, and the updates not written to it yet are
//! dropped with a warning (docs/decisions/0015).
//!
//! A zone tern signs (`dnssec-policy`) is updated as its unsigned records,
//! and each group's changes to it are signed between the engine and
//! [`Zones::updated`], before the journal is written: the version served
//! and its IXFR difference carry the new signatures and denial records,
//! and a signing that fails changes nothing and answers SERVFAIL. The
//! journal keeps the unsigned changes, signed again at each load
//! (`signed`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha1::{Digest, Sha1};
use tern_authority::{PatchError, RecordCursor, Work, Zone, ZoneBuilder, ZoneChanges};
use tern_update::store::{Base, Node, RecordVisitor};
use tern_update::{Access, Requester, UpdateMessage, UpdateOptions, UpdateRule, ZoneRecords};
use tern_wire::name::{LowerNameBuf, Name};
use tern_wire::types::{RClass, RType, Rcode};
use tern_xfr::journal::{Difference, Journal, Record};

use crate::load::Origin;
use crate::owner::Zones;

/// The most requests taken together: applied one after the other, written
/// to their zones' journals with one fsync per zone, served as one new
/// version per zone.
pub const UPDATE_GROUP: usize = 64;

/// The default of `update-queue` (updates waiting per zone): beyond it an
/// UPDATE is answered SERVFAIL at once (BIND's answer when its update
/// queue is full; the client retries).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;

/// The default of `update-rate` (updates per second per TSIG key, and for
/// unsigned requests together): beyond it REFUSED. A burst of one second's
/// worth is allowed.
pub const DEFAULT_RATE_PER_KEY: u32 = 1_000;

/// The most keys whose rates are tracked; past it the oldest are forgotten.
const MAX_RATE_KEYS: usize = 4_096;

/// The requests waiting for the thread, all zones together.
const QUEUE_LEN: usize = 4_096;

/// The update journal's file name is the zone file's with this appended.
pub const JOURNAL_SUFFIX: &str = ".tern-journal";

/// The largest frame read back from a journal (a difference of an UPDATE
/// of at most 64 KiB, with the SOAs: well under it).
const MAX_FRAME: usize = 1 << 20;

/// The most frames read back from one journal (a zone synced to its file
/// every minute does not come near it; a journal longer is cut here, and
/// what follows is dropped with a warning).
const MAX_FRAMES: usize = 1 << 20;

/// A version made by patches is built whole once the unused space they
/// left in its tables passes one part in this many of them: the one rule
/// of the paths that patch, signed or not (defined beside the signed
/// windows, `window::garbage_within_share`).
pub use crate::window::MAX_GARBAGE_SHARE;

//----------- Configuration --------------------------------------------------

/// One updatable zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneUpdates {
    /// The zone's origin, lowercased.
    pub origin: LowerNameBuf,
    /// Its zone file (rewritten by `zone-file-sync`).
    pub file: PathBuf,
    /// Who may update what.
    pub rules: Vec<UpdateRule>,
}

/// The updatable zones and the limits.
#[derive(Clone, Debug)]
pub struct UpdateConfig {
    /// The zones with `update:` rules.
    pub zones: Vec<ZoneUpdates>,
    /// How often an updated zone's file is rewritten; zero: at stop only.
    pub sync_interval: Duration,
    /// `transfer.max-zone-records`: an update growing a zone past it is
    /// REFUSED.
    pub max_zone_records: usize,
    /// Updates per second per key; 0: no limit.
    pub rate_per_key: u32,
    /// Updates waiting per zone; beyond: SERVFAIL.
    pub max_in_flight: usize,
    /// The secondary zones that answer UPDATE other than REFUSED.
    pub secondaries: Vec<SecondaryZone>,
    /// Has the allocator give back the free memory it keeps (the binary's
    /// `tern_server::give_back_free_memory`, glibc's `malloc_trim`):
    /// called [`GIVE_BACK_AFTER`] after a whole build of an updated zone,
    /// once the cores have let the previous version go. Without it, the previous version's tables stay
    /// resident as free memory the allocator keeps (docs/benchmarks.md,
    /// "memory after 100,000 updates").
    pub give_back: Option<fn()>,
}

/// How long after a whole build the freed memory is given back ([`UpdateConfig::give_back`]): the cores then
/// serve the new version, and the old one is freed.
pub const GIVE_BACK_AFTER: Duration = Duration::from_secs(1);

/// A secondary zone's answer to UPDATE (`zones.secondary[].update`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecondaryZone {
    /// The zone's origin, lowercased.
    pub origin: LowerNameBuf,
    /// What an UPDATE of it gets.
    pub answer: SecondaryUpdate,
    /// Its primaries, forwarded to in this order.
    pub primaries: Vec<std::net::SocketAddr>,
}

/// The journal of the zone whose file is `file`.
pub fn journal_path(file: &Path) -> PathBuf {
    let mut path = file.as_os_str().to_owned();
    path.push(JOURNAL_SUFFIX);
    PathBuf::from(path)
}

//----------- Request, Submitter ---------------------------------------------

/// One UPDATE handed off a core.
pub struct Request {
    /// The zone (the UPDATE's zone section), lowercased.
    pub origin: LowerNameBuf,
    /// The whole message, TSIG record included (the engine skips it).
    pub message: Vec<u8>,
    /// The TSIG key the core verified, if the request was signed.
    pub key: Option<LowerNameBuf>,
    /// The client's address.
    pub client: IpAddr,
    /// Called once with the answer's RCODE (the core writes and signs the
    /// answer).
    pub reply: Box<dyn FnOnce(Rcode) + Send>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("origin", &self.origin.as_name().to_string())
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

enum Message {
    /// Boxed: a request holds two inline names (some 600 octets).
    Update(Box<Request>),
    Stop(mpsc::Sender<()>),
    /// The rules of a configuration read again (`tern reload`).
    Rules(Vec<ZoneUpdates>),
}

/// A secondary zone's answer to UPDATE, and its primaries.
type SecondaryAnswer = (SecondaryUpdate, Arc<[std::net::SocketAddr]>);

/// Hands requests to the update thread (cloned into each core's hook).
#[derive(Clone)]
pub struct Submitter {
    sender: SyncSender<Message>,
    in_flight: Arc<InFlight>,
    /// The secondary zones that answer UPDATE other than REFUSED, with
    /// their primaries.
    secondaries: Arc<HashMap<Origin, SecondaryAnswer>>,
    /// The forwarding threads, when a secondary zone forwards.
    forwarder: Option<forward::Forwarder>,
}

/// Requests queued per zone.
struct InFlight {
    counts: Mutex<HashMap<Origin, usize>>,
    limit: usize,
}

impl InFlight {
    fn take(&self, origin: &[u8]) -> bool {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let Some(count) = counts.get_mut(origin) else {
            return false;
        };
        if *count >= self.limit {
            return false;
        }
        *count += 1;
        true
    }

    fn give(&self, origin: &[u8]) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = counts.get_mut(origin) {
            *count = count.saturating_sub(1);
        }
    }
}

impl Submitter {
    /// Queues `request`; answers it SERVFAIL at once when its zone has
    /// [`UpdateConfig::max_in_flight`] waiting already or the thread is
    /// gone, REFUSED when the zone takes no updates.
    pub fn submit(&self, request: Request) {
        let origin: Origin = request.origin.as_bytes().into();
        if let Some((answer, _)) = self.secondaries.get(&origin) {
            // Forwards go through Submitter::forward.
            let rcode = match answer {
                SecondaryUpdate::NotAuth => Rcode::NOTAUTH,
                SecondaryUpdate::Refused => Rcode::REFUSED,
                SecondaryUpdate::Forward => Rcode::SERVFAIL,
            };
            (request.reply)(rcode);
            return;
        }
        {
            let counts = self
                .in_flight
                .counts
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if !counts.contains_key(&origin) {
                drop(counts);
                (request.reply)(Rcode::REFUSED);
                return;
            }
        }
        if !self.in_flight.take(&origin) {
            (request.reply)(Rcode::SERVFAIL);
            return;
        }
        match self.sender.try_send(Message::Update(Box::new(request))) {
            Ok(()) => {}
            Err(TrySendError::Full(Message::Update(request)))
            | Err(TrySendError::Disconnected(Message::Update(request))) => {
                self.in_flight.give(&origin);
                (request.reply)(Rcode::SERVFAIL);
            }
            Err(_) => {}
        }
    }

    /// Whether `origin` (lowercased wire form) is a secondary zone whose
    /// UPDATEs are forwarded ([`Submitter::forward`]).
    pub fn forwards(&self, origin: &[u8]) -> bool {
        self.secondaries
            .get(origin)
            .is_some_and(|(answer, _)| *answer == SecondaryUpdate::Forward)
    }

    /// Forwards `request` to the primaries of the secondary zone `origin`
    /// ([`forward`]); SERVFAIL at once when it does not forward or too
    /// many forwards wait.
    pub fn forward(&self, origin: LowerNameBuf, request: ForwardRequest) {
        match (self.secondaries.get(origin.as_bytes()), &self.forwarder) {
            (Some((SecondaryUpdate::Forward, primaries)), Some(forwarder)) => {
                forwarder.forward(request, origin, Arc::clone(primaries));
            }
            _ => (request.relay)(None),
        }
    }

    /// Whether `origin` (lowercased wire form) takes updates (or answers
    /// them otherwise than REFUSED, a secondary zone).
    pub fn takes(&self, origin: &[u8]) -> bool {
        if self
            .secondaries
            .get(origin)
            .is_some_and(|(answer, _)| *answer != SecondaryUpdate::Refused)
        {
            return true;
        }
        self.in_flight
            .counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(origin)
    }
}

/// The receiving end, until the thread starts ([`Updater::start`]).
pub struct Queue {
    receiver: Receiver<Message>,
    sender: SyncSender<Message>,
    in_flight: Arc<InFlight>,
}

/// The submitter for the cores and the queue for the thread, made before
/// the cores start (the thread needs the zones' owner, made after).
pub fn channel(config: &UpdateConfig) -> (Submitter, Queue) {
    let (sender, receiver) = mpsc::sync_channel(QUEUE_LEN);
    let in_flight = Arc::new(InFlight {
        counts: Mutex::new(
            config
                .zones
                .iter()
                .map(|zone| (zone.origin.as_bytes().into(), 0))
                .collect(),
        ),
        limit: config.max_in_flight.max(1),
    });
    let secondaries: HashMap<Origin, SecondaryAnswer> = config
        .secondaries
        .iter()
        .map(|zone| {
            (
                zone.origin.as_bytes().into(),
                (zone.answer, zone.primaries.clone().into()),
            )
        })
        .collect();
    let forwarder = if secondaries
        .values()
        .any(|(answer, _)| *answer == SecondaryUpdate::Forward)
    {
        match forward::Forwarder::start() {
            Ok(forwarder) => Some(forwarder),
            Err(err) => {
                log::error!("cannot start the update forwarding threads: {err}");
                None
            }
        }
    } else {
        None
    };
    let submitter = Submitter {
        sender: sender.clone(),
        in_flight: Arc::clone(&in_flight),
        secondaries: Arc::new(secondaries),
        forwarder,
    };
    (
        submitter,
        Queue {
            receiver,
            sender,
            in_flight,
        },
    )
}

//----------- Updater --------------------------------------------------------

/// The running update thread.
pub struct Updater {
    sender: SyncSender<Message>,
    thread: Option<std::thread::JoinHandle<()>>,
    journals: Journals,
    in_flight: Arc<InFlight>,
}

/// The update journals replayed at each load, by zone: those of the zones
/// with rules at start and of those given rules by a reload since.
type Journals = Arc<Mutex<HashMap<Origin, PathBuf>>>;

impl Updater {
    /// Starts the thread over `zones`, replaying each updatable zone's
    /// journal at every reload from now on (the start's versions were
    /// replayed by [`replay_start`]).
    pub fn start(config: UpdateConfig, queue: Queue, zones: Arc<Zones>) -> io::Result<Updater> {
        let journals: Journals = Arc::new(Mutex::new(
            config
                .zones
                .iter()
                .map(|zone| (zone.origin.as_bytes().into(), journal_path(&zone.file)))
                .collect(),
        ));
        let replayed = Arc::clone(&journals);
        zones.set_replay(Box::new(
            move |zone: Arc<Zone>, stamp: &crate::load::Stamp| {
                let path = replayed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(zone.origin().as_bytes())
                    .cloned();
                match path {
                    Some(path) => replay_stamped(zone, stamp, &path),
                    None => zone,
                }
            },
        ));
        let Queue {
            receiver,
            sender,
            in_flight,
        } = queue;
        let mut state = State::new(config, zones, Arc::clone(&in_flight));
        let thread = std::thread::Builder::new()
            .name("tern-update".into())
            .spawn(move || state.run(&receiver))?;
        Ok(Updater {
            sender,
            thread: Some(thread),
            journals,
            in_flight,
        })
    }

    /// Where `tern reload` sends the rules it read ([`Rules::set`]).
    pub fn rules(&self) -> Rules {
        Rules {
            sender: self.sender.clone(),
            journals: Arc::clone(&self.journals),
            in_flight: Arc::clone(&self.in_flight),
        }
    }

    /// Writes every updated zone's file and ends the thread.
    pub fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        let (done, wait) = mpsc::channel();
        if self.sender.send(Message::Stop(done)).is_ok() {
            let _ = wait.recv();
        }
        let _ = thread.join();
    }
}

impl Drop for Updater {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Hands the update rules of a configuration read again to the update
/// thread.
#[derive(Clone)]
pub struct Rules {
    sender: SyncSender<Message>,
    journals: Journals,
    in_flight: Arc<InFlight>,
}

impl Rules {
    /// The zones' rules from now on: each zone that takes updates gets the
    /// rules `zones` gives it (none: every UPDATE REFUSED), and a zone given
    /// rules for the first time (added by the reload, or given `update:`)
    /// takes updates from now on: its journal is replayed by the loads from
    /// now on (the reload's own, which follows), and the cores hand its
    /// UPDATEs to the thread once the thread has its rules (the rules are
    /// sent first: the channel keeps the order). A zone's file (and so its
    /// journal) stays the one it had until a restart.
    pub fn set(&self, zones: Vec<ZoneUpdates>) {
        let origins: Vec<Origin> = zones
            .iter()
            .map(|zone| zone.origin.as_bytes().into())
            .collect();
        {
            let mut journals = self.journals.lock().unwrap_or_else(|p| p.into_inner());
            for zone in &zones {
                journals
                    .entry(zone.origin.as_bytes().into())
                    .or_insert_with(|| journal_path(&zone.file));
            }
        }
        if self.sender.send(Message::Rules(zones)).is_err() {
            log::warn!("the update thread is gone; the update rules are not reloaded");
            return;
        }
        let mut counts = self
            .in_flight
            .counts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for origin in origins {
            counts.entry(origin).or_insert(0);
        }
    }
}

//----------- State ----------------------------------------------------------

/// One updatable zone on the thread.
struct ZoneState {
    config: ZoneUpdates,
    journal: PathBuf,
    /// The served version the records were made from (or made).
    base: Option<(Arc<Zone>, ZoneRecords)>,
    /// Updated since its file was last written.
    dirty: bool,
    /// A signed zone's signed records of the version it last made.
    signed: Option<signed::SignedBase>,
}

struct State {
    zones: Arc<Zones>,
    by_origin: HashMap<Origin, ZoneState>,
    sync_interval: Duration,
    next_sync: Option<Instant>,
    /// When to give back freed memory ([`UpdateConfig::give_back`]).
    give_back: Option<fn()>,
    give_back_at: Option<Instant>,
    max_zone_records: usize,
    rate_per_key: u32,
    /// Per key (None: unsigned): tokens left and when last filled.
    rates: HashMap<Option<LowerNameBuf>, (f64, Instant)>,
    in_flight: Arc<InFlight>,
}

/// What became of one request of a group.
struct Outcome {
    request: Request,
    rcode: Rcode,
    /// The zone it changed, if it did.
    changed: Option<Origin>,
}

impl State {
    fn new(config: UpdateConfig, zones: Arc<Zones>, in_flight: Arc<InFlight>) -> State {
        let mut state = State {
            zones,
            by_origin: config
                .zones
                .into_iter()
                .map(|zone| {
                    let journal = journal_path(&zone.file);
                    // Updates replayed from the journal at start are not in
                    // the file yet: the next sync (or the stop) writes it.
                    let dirty = std::fs::metadata(&journal).is_ok_and(|m| m.len() > 0);
                    let state = ZoneState {
                        journal,
                        config: zone,
                        base: None,
                        dirty,
                        signed: None,
                    };
                    (state.config.origin.as_bytes().into(), state)
                })
                .collect(),
            sync_interval: config.sync_interval,
            next_sync: None,
            give_back: config.give_back,
            give_back_at: None,
            max_zone_records: config.max_zone_records,
            rate_per_key: config.rate_per_key,
            rates: HashMap::new(),
            in_flight,
        };
        if state.by_origin.values().any(|zone| zone.dirty) && !state.sync_interval.is_zero() {
            state.next_sync = Some(Instant::now() + state.sync_interval);
        }
        state
    }

    fn run(&mut self, receiver: &Receiver<Message>) {
        loop {
            let next = match (self.next_sync, self.give_back_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let message = match next {
                Some(at) => {
                    match receiver.recv_timeout(at.saturating_duration_since(Instant::now())) {
                        Ok(message) => message,
                        Err(RecvTimeoutError::Timeout) => {
                            if self.next_sync.is_some_and(|at| at <= Instant::now()) {
                                self.sync_files();
                            }
                            self.give_back_due();
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                None => match receiver.recv() {
                    Ok(message) => message,
                    Err(_) => break,
                },
            };
            let mut group = Vec::new();
            let mut stop = None;
            let mut rules = None;
            match message {
                Message::Update(request) => group.push(*request),
                Message::Stop(done) => stop = Some(done),
                Message::Rules(zones) => rules = Some(zones),
            }
            // New rules end a group: the updates before them are checked
            // against the old ones, those after against the new.
            while stop.is_none() && rules.is_none() && group.len() < UPDATE_GROUP {
                match receiver.try_recv() {
                    Ok(Message::Update(request)) => group.push(*request),
                    Ok(Message::Stop(done)) => stop = Some(done),
                    Ok(Message::Rules(zones)) => rules = Some(zones),
                    Err(_) => break,
                }
            }
            if !group.is_empty() {
                self.process(group);
            }
            if let Some(zones) = rules {
                self.set_rules(zones);
            }
            if let Some(done) = stop {
                self.sync_files();
                let _ = done.send(());
                return;
            }
            if self.next_sync.is_some_and(|at| at <= Instant::now()) {
                self.sync_files();
            }
            self.give_back_due();
        }
        self.sync_files();
    }

    /// Gives freed memory back if a whole build asked for it at least
    /// [`GIVE_BACK_AFTER`] ago.
    fn give_back_due(&mut self) {
        if self.give_back_at.is_some_and(|at| at <= Instant::now()) {
            self.give_back_at = None;
            if let Some(give_back) = self.give_back {
                give_back();
            }
        }
    }

    /// Asks for freed memory to be given back [`GIVE_BACK_AFTER`] from
    /// now (a later ask does not move an earlier one).
    fn give_back_later(&mut self) {
        if self.give_back.is_some() && self.give_back_at.is_none() {
            self.give_back_at = Some(Instant::now() + GIVE_BACK_AFTER);
        }
    }

    /// Applies a group of requests, makes it durable, serves it, answers.
    fn process(&mut self, group: Vec<Request>) {
        let zones = Arc::clone(&self.zones);
        let writer = zones.writer();
        let mut outcomes: Vec<Outcome> = Vec::with_capacity(group.len());
        let mut differences: HashMap<Origin, Vec<Difference>> = HashMap::new();
        for request in group {
            let (rcode, difference) = self.apply(&request);
            let changed = difference.map(|difference| {
                let origin: Origin = request.origin.as_bytes().into();
                differences
                    .entry(origin.clone())
                    .or_default()
                    .push(difference);
                origin
            });
            outcomes.push(Outcome {
                request,
                rcode,
                changed,
            });
        }
        for (origin, differences) in differences {
            let ok = self.commit(&origin, differences);
            if !ok {
                for outcome in outcomes
                    .iter_mut()
                    .filter(|o| o.changed.as_ref() == Some(&origin))
                {
                    outcome.rcode = Rcode::SERVFAIL;
                }
            }
        }
        drop(writer);
        for outcome in outcomes {
            let origin = outcome.request.origin;
            self.in_flight.give(origin.as_bytes());
            self.zones.count_update(origin.as_bytes(), outcome.rcode);
            (outcome.request.reply)(outcome.rcode);
        }
    }

    /// Replaces the rules of the zones that take updates by `zones`'.
    fn set_rules(&mut self, zones: Vec<ZoneUpdates>) {
        let mut given: HashMap<Origin, ZoneUpdates> = zones
            .into_iter()
            .map(|zone| (zone.origin.as_bytes().into(), zone))
            .collect();
        for (origin, zone) in &mut self.by_origin {
            match given.remove(origin) {
                Some(next) => {
                    if next.file != zone.config.file {
                        log::warn!(
                            "zone {}: its file changed in the configuration; its updates go \
                             to {} until a restart",
                            zone.config.origin.as_name(),
                            zone.config.file.display()
                        );
                    }
                    if next.rules != zone.config.rules {
                        log::info!(
                            "zone {}: {} update rule(s) from the configuration read again",
                            zone.config.origin.as_name(),
                            next.rules.len()
                        );
                    }
                    zone.config.rules = next.rules;
                }
                None => {
                    if !zone.config.rules.is_empty() {
                        log::info!(
                            "zone {}: no update rules in the configuration read again; its \
                             updates are REFUSED",
                            zone.config.origin.as_name()
                        );
                    }
                    zone.config.rules.clear();
                }
            }
        }
        for (origin, zone) in given {
            log::info!(
                "zone {}: {} update rule(s) added; the zone takes updates",
                zone.origin.as_name(),
                zone.rules.len()
            );
            let journal = journal_path(&zone.file);
            let dirty = std::fs::metadata(&journal).is_ok_and(|m| m.len() > 0);
            self.by_origin.insert(
                origin,
                ZoneState {
                    journal,
                    config: zone,
                    base: None,
                    dirty,
                    signed: None,
                },
            );
            if dirty && self.next_sync.is_none() && !self.sync_interval.is_zero() {
                self.next_sync = Some(Instant::now() + self.sync_interval);
            }
        }
    }

    /// One request through the engine: its RCODE, and its difference if it
    /// changed the zone (then the zone's records are the new version's).
    /// A key's `update-rate` token is spent only on an update the rules
    /// and the zone took (any RCODE but REFUSED and NOTAUTH): one no rule
    /// allows costs its key nothing (a bad TSIG never gets here).
    fn apply(&mut self, request: &Request) -> (Rcode, Option<Difference>) {
        if !self.rate_allows(request.key, false) {
            return (Rcode::REFUSED, None);
        }
        let outcome = self.apply_within_rate(request);
        if !matches!(outcome.0, Rcode::REFUSED | Rcode::NOTAUTH) {
            self.rate_allows(request.key, true);
        }
        outcome
    }

    /// [`State::apply`] once the key's rate allows it.
    fn apply_within_rate(&mut self, request: &Request) -> (Rcode, Option<Difference>) {
        let origin = request.origin.as_bytes();
        // A zone tern signs: its records are kept without the signer's.
        let cds = self
            .zones
            .zone_keys(origin)
            .map(|keys| signed::publishes_cds(&keys));
        let Some(served) = self.zones.primary_version(origin) else {
            return (Rcode::NOTAUTH, None);
        };
        let max_zone_records = self.max_zone_records;
        let Some(zone) = self.by_origin.get_mut(origin) else {
            return (Rcode::REFUSED, None);
        };
        if zone
            .base
            .as_ref()
            .is_none_or(|(base, _)| !Arc::ptr_eq(base, &served))
        {
            let records = match cds {
                Some(cds) => signed::unsigned_records(&served, cds),
                None => records_over(&served),
            };
            match records {
                Ok(records) => zone.base = Some((Arc::clone(&served), records)),
                Err(err) => {
                    log::error!("zone {}: {err}", request.origin.as_name());
                    return (Rcode::SERVFAIL, None);
                }
            }
        }
        let Some((_, records)) = zone.base.as_mut() else {
            return (Rcode::SERVFAIL, None);
        };
        let message = match UpdateMessage::parse(&request.message) {
            Ok(message) => message,
            Err(rcode) => return (rcode, None),
        };
        if cds.is_some() && signed::touches_signer_records(request.origin.as_name(), &message) {
            log::info!(
                "zone {}: an UPDATE refused: it names DNSSEC records the signer makes",
                request.origin.as_name()
            );
            return (Rcode::REFUSED, None);
        }
        let signed = cds.is_some()
            || records
                .node(records.origin_key())
                .is_some_and(|apex| apex.has(RType::RRSIG));
        let access = Access {
            rules: &zone.config.rules,
            requester: Requester {
                key: request.key.as_ref().map(|key| key.as_name()),
                address: request.client,
            },
        };
        let options = UpdateOptions {
            max_zone_records,
            signed,
        };
        match signed::engine(records, &message, &access, &options, &served, cds) {
            Ok(Some(difference)) => (Rcode::NOERROR, Some(convert(difference))),
            Ok(None) => (Rcode::NOERROR, None),
            Err(rcode) => (rcode, None),
        }
    }

    /// Whether the key may make one more update now (a token bucket of
    /// `rate_per_key` a second, as deep); with `take`, spends its token.
    fn rate_allows(&mut self, key: Option<LowerNameBuf>, take: bool) -> bool {
        if self.rate_per_key == 0 {
            return true;
        }
        let now = Instant::now();
        let rate = f64::from(self.rate_per_key);
        if self.rates.len() >= MAX_RATE_KEYS && !self.rates.contains_key(&key) {
            // Keys come from the configuration: this only bounds memory.
            self.rates.clear();
        }
        let (tokens, last) = self.rates.entry(key).or_insert((rate, now));
        *tokens = (*tokens + now.duration_since(*last).as_secs_f64() * rate).min(rate);
        *last = now;
        if *tokens >= 1.0 {
            if take {
                *tokens -= 1.0;
            }
            true
        } else {
            false
        }
    }

    /// Writes a zone's differences to its journal (one fsync), then serves
    /// the new version. False if the journal could not be written: the
    /// zone's records are dropped (made again from the served version),
    /// and the group's updates to it are answered SERVFAIL.
    fn commit(&mut self, origin: &[u8], differences: Vec<Difference>) -> bool {
        let Some(zone) = self.by_origin.get_mut(origin) else {
            return false;
        };
        let name = zone.config.origin;
        // A zone tern signs: the group's changes signed before anything is
        // written, from the signed records of the version they started
        // from (this thread's own, else its load's, else its served ones).
        let signed_update = match (self.zones.zone_keys(origin), zone.base.as_ref()) {
            (Some(keys), Some((base, records))) => {
                let from_stamp;
                let from_served;
                let previous = match zone
                    .signed
                    .as_ref()
                    .filter(|own| Arc::ptr_eq(&own.version, base))
                {
                    Some(own) => Ok(&own.records),
                    // The load's records are on disk: read once, then
                    // used only if they are the served version's.
                    None => match self
                        .zones
                        .primary_signed(origin)
                        .and_then(|loaded| loaded.records().ok())
                        .filter(|loaded| {
                            signed::apex_serial(name.as_name(), loaded) == Some(base.serial())
                        }) {
                        Some(loaded) => {
                            from_stamp = loaded;
                            Ok(&from_stamp)
                        }
                        None => match signed::served_records(base) {
                            Ok(records) => {
                                from_served = records;
                                Ok(&from_served)
                            }
                            Err(err) => Err(err),
                        },
                    },
                };
                let update = previous.and_then(|previous| {
                    signed::sign_update(base, previous, records, &differences, &keys)
                });
                match update {
                    Ok(update) => Some(update),
                    Err(err) => {
                        log::error!(
                            "zone {}: the updated zone cannot be signed: {err}; the updates \
                             are not applied",
                            name.as_name()
                        );
                        zone.base = None;
                        zone.signed = None;
                        return false;
                    }
                }
            }
            _ => None,
        };
        if let Err(err) = append_journal(&zone.journal, &differences) {
            log::error!(
                "zone {}: cannot write its update journal {}: {err}; the updates are refused",
                name.as_name(),
                zone.journal.display()
            );
            zone.base = None;
            zone.signed = None;
            return false;
        }
        let Some((base, records)) = zone.base.as_mut() else {
            return false;
        };
        if let Some(update) = signed_update {
            log::debug!(
                "zone {}: serial {} signed, {} records",
                name.as_name(),
                update.zone.serial(),
                update.zone.record_count()
            );
            *base = Arc::clone(&update.zone);
            zone.signed = Some(signed::SignedBase {
                version: Arc::clone(&update.zone),
                records: update.records,
            });
            zone.dirty = true;
            self.zones.updated(update.zone, vec![update.difference]);
            if self.next_sync.is_none() && !self.sync_interval.is_zero() {
                self.next_sync = Some(Instant::now() + self.sync_interval);
            }
            return true;
        }
        let started = Instant::now();
        let (built, work, how) = match made_version(name.as_name(), base, records, &differences) {
            Ok((built, work, how)) => (Arc::new(built), work, how),
            Err(err) => {
                // Never expected: the engine keeps a zone's records whole.
                log::error!(
                    "zone {}: the updated version does not build: {err}",
                    name.as_name()
                );
                zone.base = None;
                return false;
            }
        };
        log::debug!(
            "zone {}: serial {}, the served version {how} ({} table octets copied, {} nodes \
             touched), {} records, in {:?}",
            name.as_name(),
            built.serial(),
            work.bytes_copied,
            work.nodes_touched,
            built.record_count(),
            started.elapsed()
        );
        // The built version holds the changes: the records are laid over
        // it afresh, and what they held of the changes is freed (never
        // expected to fail: the version has its SOA; then the next update
        // reads the served version again).
        let failed = match records.has_base().then(|| records_over(&built)) {
            Some(Ok(over)) => {
                *records = over;
                None
            }
            Some(Err(err)) => Some(err),
            None => None,
        };
        // A whole build (no unused space left, where the previous
        // version had some) frees the previous tables once the cores
        // let them go.
        let rebuilt = built.garbage_bytes() == 0 && base.garbage_bytes() > 0;
        *base = Arc::clone(&built);
        zone.dirty = true;
        if let Some(err) = failed {
            log::error!("zone {}: {err}", name.as_name());
            zone.base = None;
        }
        self.zones.updated(built, differences);
        if self.next_sync.is_none() && !self.sync_interval.is_zero() {
            self.next_sync = Some(Instant::now() + self.sync_interval);
        }
        if rebuilt {
            self.give_back_later();
        }
        true
    }

    /// Writes every updated zone's file from its served version and
    /// empties its journal.
    fn sync_files(&mut self) {
        self.next_sync = None;
        let zones = Arc::clone(&self.zones);
        let _writer = zones.writer();
        for zone in self.by_origin.values_mut().filter(|zone| zone.dirty) {
            let name = zone.config.origin;
            let Some(served) = self.zones.primary_version(name.as_bytes()) else {
                continue;
            };
            // A zone tern signs: its file holds what the signer signs.
            let written = match self.zones.zone_keys(name.as_bytes()) {
                Some(keys) => {
                    let cds = signed::publishes_cds(&keys);
                    write_zone_file_where(&zone.config.file, &served, |owner, rtype| {
                        !signed::signer_made(served.origin(), owner, rtype, cds)
                    })
                }
                None => write_zone_file(&zone.config.file, &served),
            };
            match written {
                Ok(()) => {
                    zone.dirty = false;
                    if let Err(err) = clear_journal(&zone.journal) {
                        log::warn!(
                            "zone {}: cannot empty its update journal {}: {err} (its \
                             updates are in the zone file; the next start skips them)",
                            name.as_name(),
                            zone.journal.display()
                        );
                    }
                    log::info!(
                        "zone {}: serial {} written to {}",
                        name.as_name(),
                        served.serial(),
                        zone.config.file.display()
                    );
                }
                Err(err) => log::error!(
                    "zone {}: cannot write its zone file {}: {err}; its updates stay in \
                     the journal",
                    name.as_name(),
                    zone.config.file.display()
                ),
            }
        }
    }
}

//----------- Conversions ----------------------------------------------------

/// A served version as the engine's [`Base`]: read one name at a time.
struct Served(Arc<Zone>);

impl Base for Served {
    fn node(&self, owner: Name<'_>) -> Option<Node> {
        let records = self.0.owner_records(owner);
        let mut node = Node::default();
        for record in records {
            node.add(record.rtype, record.ttl, record.rdata);
        }
        (!node.is_empty()).then_some(node)
    }

    fn has_names_below(&self, owner: Name<'_>) -> bool {
        self.0.has_names_below(owner)
    }

    fn any_name_below(&self, owner: Name<'_>, visit: &mut dyn FnMut(Name<'_>) -> bool) -> bool {
        self.0.any_name_below(owner, visit)
    }

    fn record_count(&self) -> usize {
        self.0.record_count()
    }

    fn for_each_record(&self, visit: &mut RecordVisitor<'_>) {
        let mut cursor = RecordCursor::default();
        while let Some(record) = self.0.next_record(&mut cursor) {
            visit(record.owner, record.rtype, record.ttl, record.rdata);
        }
    }
}

/// The engine's records of a served version: laid over it (memory for
/// the names updates change, not the zone's), but for a zone with NSEC3
/// records, whose owners are outside the served version's name tree: its
/// records are copied ([`records_of`]).
fn records_over(zone: &Arc<Zone>) -> Result<ZoneRecords, String> {
    if zone.has_nsec3() {
        return records_of(zone);
    }
    ZoneRecords::over(zone.origin(), Arc::new(Served(Arc::clone(zone))))
        .map_err(|err| format!("its records do not take updates: {err}"))
}

/// The engine's records of a served version, copied whole.
fn records_of(zone: &Zone) -> Result<ZoneRecords, String> {
    let mut list = Vec::with_capacity(zone.record_count());
    let mut cursor = RecordCursor::default();
    while let Some(record) = zone.next_record(&mut cursor) {
        list.push(tern_zone::Record {
            owner: record.owner.to_buf(),
            class: RClass::IN,
            ttl: record.ttl,
            rtype: record.rtype,
            rdata: record.rdata.to_vec(),
            location: tern_zone::Location::default(),
        });
    }
    ZoneRecords::from_records(zone.origin(), &list)
        .map_err(|err| format!("its records do not take updates: {err}"))
}

/// The version after `previous` that `differences` made of it, `records`
/// being the engine's records after them: `previous` patched with the
/// owners the differences touched (their records now, from `records`), in
/// time proportional to the change; and what the patch copied. Built
/// whole ([`zone_of`]: the work is then the whole zone's tables and
/// names) where a patch does not apply
/// (NSEC3, a delegation moved above other names) and when the patches'
/// unused space has grown past a quarter of the zone's tables
/// ([`MAX_GARBAGE_SHARE`]; compaction: its cost spread over the updates
/// that made the garbage).
pub fn next_version(
    origin: Name<'_>,
    previous: &Zone,
    records: &ZoneRecords,
    differences: &[Difference],
) -> Result<(Zone, Work), String> {
    made_version(origin, previous, records, differences).map(|(zone, work, _)| (zone, work))
}

/// [`next_version`], and how the version was made, for the update
/// thread's log line: "patched" or "built whole".
fn made_version(
    origin: Name<'_>,
    previous: &Zone,
    records: &ZoneRecords,
    differences: &[Difference],
) -> Result<(Zone, Work, &'static str), String> {
    let whole = || {
        zone_of(origin, records).map(|zone| {
            let work = Work {
                bytes_copied: zone.table_bytes(),
                nodes_touched: zone.node_count(),
                ..Work::default()
            };
            (zone, work, "built whole")
        })
    };
    let mut changes = ZoneChanges::new();
    let mut owners: Vec<&[u8]> = differences
        .iter()
        .flat_map(|d| d.deleted.iter().chain(&d.added))
        .map(|record| &record.owner[..])
        .collect();
    owners.push(origin.as_bytes());
    owners.sort_unstable();
    owners.dedup();
    for owner in owners {
        let Ok(owner) = Name::from_wire(owner) else {
            return whole();
        };
        let node = records.node(&tern_update::store::Key::of(owner));
        changes.set(
            owner,
            node.as_deref().into_iter().flat_map(|node| {
                node.rrsets().iter().flat_map(|rrset| {
                    rrset
                        .records
                        .iter()
                        .map(move |record| (rrset.rtype, record.ttl, &record.data[..]))
                })
            }),
        );
    }
    match previous.patch(&changes) {
        Ok(patched) if crate::window::garbage_within_share(&patched.zone) => {
            // The order of the names a signed zone keeps is counted apart
            // from the tables (the chain's work is in `work` already): an
            // UPDATE that signs an unsigned zone (an RRSIG over its SOA
            // added) pays the whole list's build, once.
            let work = crate::window::patch_work(&patched);
            Ok((patched.zone, work, "patched"))
        }
        Ok(patched) => {
            // Info: a whole build costs the zone (a pause of the updates).
            log::info!(
                "zone {origin}: built whole, the patches' unused space at {} of its {} table \
                 octets",
                patched.zone.garbage_bytes(),
                patched.zone.table_bytes()
            );
            drop(patched);
            whole()
        }
        Err(PatchError::Rebuild(_)) => whole(),
        Err(err) => Err(err.to_string()),
    }
}

/// A served version made of the engine's records: a whole build (at a
/// zone's first update, and where [`next_version`] cannot patch).
pub fn zone_of(origin: Name<'_>, records: &ZoneRecords) -> Result<Zone, String> {
    let mut builder = ZoneBuilder::new(origin);
    builder.reserve(records.len(), 0);
    let mut inserted = Ok(());
    records.for_each_record(|owner, rtype, ttl, rdata| {
        if inserted.is_ok() {
            inserted = builder
                .insert(owner, rtype, RClass::IN, ttl, rdata)
                .map(|_| ())
                .map_err(|err| err.to_string());
        }
    });
    inserted?;
    builder.finish().map_err(|err| err.to_string())
}

/// The engine's difference as the IXFR history keeps it.
fn convert(difference: tern_update::Difference) -> Difference {
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

//----------- The journal ----------------------------------------------------

/// A frame: the payload's length (4 octets), the payload (a one-difference
/// [`Journal`] encoding), the first 8 octets of its SHA-1. A frame cut by
/// a crash, or damaged, ends the journal there.
fn frame(difference: &Difference, out: &mut Vec<u8>) {
    let mut journal = Journal::new();
    journal.push(difference.clone(), usize::MAX);
    let payload = journal.encode();
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&payload);
    out.extend_from_slice(&Sha1::digest(&payload)[..8]);
}

/// Appends `differences` to the journal at `path` and syncs it (and, when
/// it is new, its directory).
pub fn append_journal(path: &Path, differences: &[Difference]) -> io::Result<()> {
    let mut bytes = Vec::new();
    for difference in differences {
        frame(difference, &mut bytes);
    }
    let created = !path.exists();
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(&bytes)?;
    file.sync_data()?;
    if created {
        sync_directory(path)?;
    }
    Ok(())
}

/// The differences of the journal at `path`, up to the first frame that
/// does not read (none if there is no journal).
pub fn read_journal(path: &Path) -> Vec<Difference> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let mut differences = Vec::new();
    let mut rest = &bytes[..];
    // Each pass consumes a frame or ends; at most MAX_FRAMES.
    while differences.len() < MAX_FRAMES {
        let Some(len) = rest.get(..4) else { break };
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        if len > MAX_FRAME {
            break;
        }
        let (Some(payload), Some(check)) = (rest.get(4..4 + len), rest.get(4 + len..12 + len))
        else {
            break;
        };
        if Sha1::digest(payload)[..8] != *check {
            break;
        }
        let Some(journal) = Journal::decode(payload) else {
            break;
        };
        differences.extend(journal.differences());
        rest = &rest[12 + len..];
    }
    if !rest.is_empty() {
        log::warn!(
            "{}: {} octets at its end do not read (cut by a crash?); not applied",
            path.display(),
            rest.len()
        );
    }
    differences
}

/// Empties a journal (after its zone file took its updates).
fn clear_journal(path: &Path) -> io::Result<()> {
    match OpenOptions::new().write(true).open(path) {
        Ok(file) => {
            file.set_len(0)?;
            file.sync_all()
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

/// Replaces a journal by `differences`, atomically.
fn rewrite_journal(path: &Path, differences: &[Difference]) -> io::Result<()> {
    let mut bytes = Vec::new();
    for difference in differences {
        frame(difference, &mut bytes);
    }
    write_synced(path, &bytes)
}

fn sync_directory(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// Writes `bytes` to `path` through a synced temporary file and a rename,
/// then syncs the directory: after a crash, `path` is the old file or the
/// new one, whole.
fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_synced_with(path, |out| out.write_all(bytes))
}

/// [`write_synced`] of what `write` writes, through a [`BufWriter`].
fn write_synced_with(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tern-tmp");
    let temporary = PathBuf::from(temporary);
    let mut out = BufWriter::new(File::create(&temporary)?);
    write(&mut out)?;
    let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temporary, path)?;
    sync_directory(path)
}

/// Writes a zone file from a served version (lowercased owners, one
/// record a line, as Knot's `zonefile-sync` writes it).
pub fn write_zone_file(path: &Path, zone: &Zone) -> io::Result<()> {
    write_zone_file_where(path, zone, |_, _| true)
}

/// [`write_zone_file`], with only the records `keep` keeps. Streamed:
/// each record's line is formatted into one small buffer and written
/// through a [`BufWriter`] to the temporary file, so that the rewrite
/// holds no second copy of the zone (a whole file's text in memory would
/// be some 40 octets a record, which the allocator keeps after it is
/// freed; docs/benchmarks.md, "memory after 100,000 updates").
fn write_zone_file_where(
    path: &Path,
    zone: &Zone,
    keep: impl Fn(Name<'_>, RType) -> bool,
) -> io::Result<()> {
    write_synced_with(path, |out| {
        writeln!(
            out,
            "; {} serial {}: written by tern from the updated zone (zone-file-sync)",
            zone.origin(),
            zone.serial()
        )?;
        let mut line = String::new();
        let mut cursor = RecordCursor::default();
        while let Some(record) = zone.next_record(&mut cursor) {
            if !keep(record.owner, record.rtype) {
                continue;
            }
            line.clear();
            let _ = write!(
                line,
                "{}\t{}\t{}\t{}\t",
                record.owner,
                record.ttl,
                RClass::IN,
                record.rtype
            );
            tern_zone::print::write_rdata(record.rtype, record.rdata, &mut line);
            line.push('\n');
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    })
}

//----------- Replay ---------------------------------------------------------

/// `zone` (loaded from its file) with the journal at `path` applied: the
/// differences from the file's serial on, in a chain. Differences before
/// that serial are already in the file (written by `zone-file-sync` before
/// the journal could be emptied); a journal that does not reach the file's
/// serial belongs to another version of the file (edited by hand): it is
/// dropped, with a warning. The journal is rewritten to what was applied
/// when anything was skipped.
pub fn replay(zone: Arc<Zone>, path: &Path) -> Arc<Zone> {
    let differences = read_journal(path);
    if differences.is_empty() {
        return zone;
    }
    let serial = zone.serial();
    let name = zone.origin().to_string();
    let Some(first) = differences.iter().position(|d| d.from_serial() == serial) else {
        if differences.last().is_some_and(|d| d.to_serial() == serial) {
            // The file has every update: the journal only was not emptied.
            if let Err(err) = clear_journal(path) {
                log::warn!("{}: cannot empty it: {err}", path.display());
            }
        } else {
            log::warn!(
                "zone {name}: its update journal {} does not continue from the zone file's \
                 serial {serial} (the file was edited?); its {} update(s) are dropped, the \
                 file is served",
                path.display(),
                differences.len()
            );
            if let Err(err) = clear_journal(path) {
                log::warn!("{}: cannot empty it: {err}", path.display());
            }
        }
        return zone;
    };
    let mut records = tern_xfr::journal::records_but_soa(&zone);
    let mut soa = {
        let soa = zone.soa_record();
        (soa.ttl, soa.rdata.to_vec())
    };
    let mut applied = 0;
    let mut current = serial;
    for difference in &differences[first..] {
        if difference.from_serial() != current {
            break;
        }
        for record in &difference.deleted {
            records.remove(record);
        }
        for record in &difference.added {
            records.insert(record.clone());
        }
        soa = difference.to_soa.clone();
        current = difference.to_serial();
        applied += 1;
    }
    if first + applied < differences.len() {
        log::warn!(
            "zone {name}: {} update(s) of its journal do not follow serial {current}; dropped",
            differences.len() - first - applied
        );
    }
    if first > 0 || first + applied < differences.len() {
        if let Err(err) = rewrite_journal(path, &differences[first..first + applied]) {
            log::warn!("{}: cannot rewrite it: {err}", path.display());
        }
    }
    let mut builder = ZoneBuilder::new(zone.origin());
    builder.reserve(records.len() + 1, 0);
    let origin = zone.origin();
    let mut built = builder
        .insert(origin, RType::SOA, RClass::IN, soa.0, &soa.1)
        .map_err(|err| err.to_string());
    for record in &records {
        if built.is_err() {
            break;
        }
        built = Name::from_wire(&record.owner)
            .map_err(|err| err.to_string())
            .and_then(|owner| {
                builder
                    .insert(owner, record.rtype, RClass::IN, record.ttl, &record.rdata)
                    .map_err(|err| err.to_string())
            });
    }
    match built.and_then(|()| builder.finish().map_err(|err| err.to_string())) {
        Ok(updated) => {
            log::info!(
                "zone {name}: {applied} update(s) of its journal applied, serial {serial} -> {}",
                updated.serial()
            );
            Arc::new(updated)
        }
        Err(err) => {
            log::error!(
                "zone {name}: its update journal does not apply ({err}); the file is served"
            );
            zone
        }
    }
}

/// The start's primary zones, each updatable one with its journal applied
/// (before the cores serve them).
pub fn replay_start(config: &UpdateConfig, primaries: &mut [(Arc<Zone>, crate::load::Stamp)]) {
    let journals: HashMap<&[u8], PathBuf> = config
        .zones
        .iter()
        .map(|zone| (zone.origin.as_bytes(), journal_path(&zone.file)))
        .collect();
    for (zone, stamp) in primaries.iter_mut() {
        if let Some(path) = journals.get(zone.origin().as_bytes()) {
            *zone = replay_stamped(Arc::clone(zone), stamp, path);
        }
    }
}

/// [`replay`], or for a zone tern signs (its load `stamp` has signed
/// records) [`signed::replay_signed`].
fn replay_stamped(zone: Arc<Zone>, stamp: &crate::load::Stamp, path: &Path) -> Arc<Zone> {
    if stamp.signed().is_some() {
        signed::replay_signed(zone, stamp, path)
    } else {
        replay(zone, path)
    }
}

pub mod forward;
mod signed;

#[doc(hidden)]
#[path = "bench_api.rs"]
pub mod bench_api;

pub use forward::{ForwardRequest, SecondaryUpdate};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_order;
