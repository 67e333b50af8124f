//! Secondary zones: the refresh, retry and expire timers of each zone and
//! the transfers that keep it current (RFC 1034 section 4.3.5, RFC 1995,
//! RFC 5936), off the query path.
//!
//! One thread, [`Secondaries`], owns every secondary zone's timers (as
//! NSD's `xfrd` keeps transfers away from the answering processes). When a
//! zone is due, it asks each primary in turn for the SOA over UDP (TCP if
//! truncated), and if the primary's serial is newer, transfers the zone
//! over TCP: IXFR from the version it has, falling back to AXFR when the
//! IXFR fails; AXFR when it has none. The messages are checked and
//! assembled by `tern_xfr::incoming`; the new version goes to the caller's
//! event handler, which saves it and swaps it into the cores as a reload
//! does. A failed or refused transfer changes nothing that is served.
//!
//! The SOA query only saves a transfer: when it brings no usable answer
//! (refused, as Knot answers for a catalog it generates; unsigned or badly
//! signed when the zone has a key; none in time; not authoritative), the
//! zone is asked for by IXFR anyway, whose answer is checked (and its
//! signature) like any transfer's and is the SOA alone when the zone is
//! current. Nothing from an unusable answer decides anything.
//!
//! Timers follow the zone's SOA: after a refresh (a transfer, or a SOA
//! that is not newer) the next one is due in REFRESH seconds; after a
//! failure, in RETRY seconds; EXPIRE seconds after the last successful
//! refresh the zone expires and the handler is told (Knot then answers
//! SERVFAIL for it). Each is kept between [`MIN_INTERVAL`] and
//! [`MAX_INTERVAL`]. A NOTIFY or `tern refresh` makes a zone due now;
//! `tern retransfer` also skips the serial check and asks for AXFR.
//!
//! A zone configured with `tls:` is asked over TLS instead (RFC 9103,
//! [`crate::xot`]): the SOA query and the transfer on one authenticated
//! connection to the primary's TLS port, never over plain DNS unless its
//! `fallback: plain` says so; NOTIFY still arrives over plain DNS.
//!
//! Limits: one transfer at a time (the thread is sequential); each
//! connection and read has [`IO_TIMEOUT`], each transfer
//! [`TRANSFER_TIMEOUT`] in all, each zone the `tern_xfr::incoming::Limits`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::Rng;
use tern_authority::Zone;
use tern_wire::build::MessageBuilder;
use tern_wire::name::{LowerNameBuf, NameBuf};
use tern_wire::parse::{MessageView, Section};
use tern_wire::types::{RClass, RType};
use tern_xfr::axfr::{serial_at_or_after, MAX_MESSAGE};
use tern_xfr::incoming::{Incoming, Limits, Outcome};
use tern_xfr::tsig::{Key, Session};

use crate::event::Event;
use crate::xot::{self, XotConfig, XotOutcome, XOT_IN};

use crate::unix_time;

/// The shortest refresh or retry interval honoured (a SOA with a smaller
/// one would have the thread asking its primary in a loop).
pub const MIN_INTERVAL: u64 = 2;

/// The longest refresh or retry interval honoured: a day.
pub const MAX_INTERVAL: u64 = 86_400;

/// The retry interval of a zone tern has never received (no SOA yet).
pub const FIRST_RETRY: u64 = 5;

/// How long a connection, a SOA query or one read of a transfer may take.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one whole transfer may take, however its primary trickles it.
pub const TRANSFER_TIMEOUT: Duration = Duration::from_secs(600);

//----------- Configuration and state ----------------------------------------

/// One secondary zone: where it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecondaryConfig {
    /// The zone's origin.
    pub origin: LowerNameBuf,
    /// Its primaries, asked in this order.
    pub primaries: Vec<SocketAddr>,
    /// The key that signs the SOA queries and transfers, if any.
    pub key: Option<Key>,
    /// With `tls:`, the SOA query and the transfers go over TLS to the
    /// primaries (RFC 9103, [`crate::xot`]).
    pub tls: Option<XotConfig>,
}

pub use crate::event::Timers;

/// A secondary zone to start with: its configuration, and the version
/// and timers saved when tern last stopped, if any.
pub type Start = (SecondaryConfig, Option<(Arc<Zone>, Timers)>);

/// What the transfer thread can be asked.
#[derive(Debug)]
enum Command {
    /// Refresh now (a NOTIFY, or `tern refresh`).
    Refresh(LowerNameBuf),
    /// Transfer in full now, whatever the serial (`tern retransfer`).
    Retransfer(LowerNameBuf),
    /// A new secondary zone (a member of a catalog), with its saved copy.
    Add(Box<Start>),
    /// A secondary zone no longer configured (a member that left its
    /// catalog).
    Remove(LowerNameBuf),
    Stop,
}

//----------- Secondaries ----------------------------------------------------

/// The transfer thread and a way to reach it.
pub struct Secondaries {
    commands: Sender<Command>,
    thread: Option<JoinHandle<()>>,
}

/// A handle to the transfer thread that cores and the control socket keep.
#[derive(Clone, Debug)]
pub struct SecondariesHandle {
    commands: Sender<Command>,
}

impl SecondariesHandle {
    /// Makes the zone due now (a NOTIFY, or `tern refresh`).
    pub fn refresh(&self, origin: LowerNameBuf) {
        let _ = self.commands.send(Command::Refresh(origin));
    }

    /// Transfers the zone in full now (`tern retransfer`).
    pub fn retransfer(&self, origin: LowerNameBuf) {
        let _ = self.commands.send(Command::Retransfer(origin));
    }

    /// Starts keeping a new secondary zone (a member added to a catalog),
    /// from its saved copy if there is one; due at once without.
    pub fn add(&self, start: Start) {
        let _ = self.commands.send(Command::Add(Box::new(start)));
    }

    /// Stops keeping a secondary zone (a member removed from its catalog).
    pub fn remove(&self, origin: LowerNameBuf) {
        let _ = self.commands.send(Command::Remove(origin));
    }
}

/// The transfer thread's command queue before the thread starts: the
/// cores get its handle (for NOTIFY) before the thread exists.
pub struct Queue {
    commands: Sender<Command>,
    receiver: Receiver<Command>,
}

impl Queue {
    /// A new queue.
    pub fn new() -> Self {
        let (commands, receiver) = mpsc::channel();
        Queue { commands, receiver }
    }

    /// A handle that will reach the thread once it runs.
    pub fn handle(&self) -> SecondariesHandle {
        SecondariesHandle {
            commands: self.commands.clone(),
        }
    }
}

impl Default for Queue {
    fn default() -> Self {
        Self::new()
    }
}

impl Secondaries {
    /// Starts the thread for `zones`, each with the version and timers it
    /// had when tern stopped, if saved, taking commands from `queue`.
    /// `events` receives every change.
    pub fn start(
        queue: Queue,
        zones: Vec<Start>,
        limits: Limits,
        events: impl FnMut(Event) + Send + 'static,
    ) -> io::Result<Self> {
        let Queue { commands, receiver } = queue;
        let thread = std::thread::Builder::new()
            .name("tern-xfr-in".to_string())
            .spawn(move || run(zones, limits, receiver, events))?;
        Ok(Secondaries {
            commands,
            thread: Some(thread),
        })
    }

    /// A handle for NOTIFY and the control socket.
    pub fn handle(&self) -> SecondariesHandle {
        SecondariesHandle {
            commands: self.commands.clone(),
        }
    }
}

impl Drop for Secondaries {
    /// Stops the thread: a transfer under way is abandoned within
    /// [`IO_TIMEOUT`].
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One zone's state in the thread.
struct Secondary {
    config: SecondaryConfig,
    zone: Option<Arc<Zone>>,
    timers: Timers,
    /// The next refresh skips the serial check and asks for AXFR.
    force: bool,
}

fn run(
    zones: Vec<Start>,
    limits: Limits,
    commands: Receiver<Command>,
    mut events: impl FnMut(Event),
) {
    let mut table = Table::default();
    for start in zones {
        table.add(secondary(start));
    }
    // Each pass waits for a command or the next due zone, then handles
    // every zone that is due. Bound per pass: the commands waiting and the
    // zones due, each a hash look-up and a heap operation; nothing walks
    // every zone.
    loop {
        let now = unix_time();
        let wait = table.next_due().map_or(MAX_INTERVAL, |due| {
            due.saturating_sub(now).min(MAX_INTERVAL)
        });
        let mut command = commands.recv_timeout(Duration::from_secs(wait));
        loop {
            match command {
                Ok(Command::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(Command::Refresh(origin)) => table.due_now(origin, false),
                Ok(Command::Retransfer(origin)) => table.due_now(origin, true),
                Ok(Command::Add(start)) => table.add(secondary(*start)),
                Ok(Command::Remove(origin)) => table.remove(origin.as_bytes()),
                Err(RecvTimeoutError::Timeout) => {}
            }
            // Every command already queued, before the due zones.
            command = match commands.try_recv() {
                Ok(next) => Ok(next),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
            };
        }
        let now = unix_time();
        while let Some(id) = table.pop_due(now) {
            let Some(secondary) = table.zones.get_mut(id as usize).and_then(Option::as_mut) else {
                continue;
            };
            if secondary.zone.is_some()
                && secondary.timers.expires != 0
                && now >= secondary.timers.expires
            {
                log::warn!(
                    "{}: expired: not refreshed within its SOA's EXPIRE",
                    secondary.config.origin.as_name()
                );
                secondary.zone = None;
                secondary.timers.expires = 0;
                events(Event::Expired {
                    origin: secondary.config.origin,
                });
            }
            if secondary.timers.next_refresh <= now {
                refresh(secondary, limits, &mut events);
            }
            table.schedule(id);
        }
    }
}

//----------- Table ----------------------------------------------------------

/// The thread's zones: a slab by id, an index by origin, and a heap of
/// when each is next due (refresh or expiry). An entry of the heap whose
/// zone is gone or whose time no longer matches is stale and skipped.
#[derive(Default)]
struct Table {
    zones: Vec<Option<Secondary>>,
    free: Vec<u32>,
    index: HashMap<Box<[u8]>, u32>,
    due: BinaryHeap<Reverse<(u64, u32)>>,
}

impl Table {
    /// Keeps a new zone (a second of the same origin is ignored) and
    /// schedules it.
    fn add(&mut self, secondary: Secondary) {
        let origin: Box<[u8]> = secondary.config.origin.as_bytes().into();
        if self.index.contains_key(&origin) {
            return;
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.zones[id as usize] = Some(secondary);
                id
            }
            None => {
                self.zones.push(Some(secondary));
                (self.zones.len() - 1) as u32
            }
        };
        self.index.insert(origin, id);
        self.schedule(id);
    }

    /// Stops keeping a zone.
    fn remove(&mut self, origin: &[u8]) {
        if let Some(id) = self.index.remove(origin) {
            self.zones[id as usize] = None;
            self.free.push(id);
        }
    }

    /// Makes a zone due now (a NOTIFY, `tern refresh`); with `force`, its
    /// next refresh skips the serial check and asks for AXFR.
    fn due_now(&mut self, origin: LowerNameBuf, force: bool) {
        let Some(&id) = self.index.get(origin.as_bytes()) else {
            log::warn!("{}: not a secondary zone", origin.as_name());
            return;
        };
        if let Some(secondary) = self.zones[id as usize].as_mut() {
            secondary.timers.next_refresh = 0;
            secondary.force |= force;
        }
        self.schedule(id);
    }

    /// When the zone `id` is next due: its refresh, or its expiry.
    fn due_of(&self, id: u32) -> Option<u64> {
        let secondary = self.zones.get(id as usize)?.as_ref()?;
        let due = secondary.timers.next_refresh.min(expiry_due(secondary));
        (due != u64::MAX).then_some(due)
    }

    /// Enters the zone's next due time in the heap.
    fn schedule(&mut self, id: u32) {
        if let Some(due) = self.due_of(id) {
            self.due.push(Reverse((due, id)));
        }
    }

    /// The earliest time a zone is due, dropping stale entries.
    fn next_due(&mut self) -> Option<u64> {
        while let Some(&Reverse((due, id))) = self.due.peek() {
            if self.due_of(id) == Some(due) {
                return Some(due);
            }
            self.due.pop();
        }
        None
    }

    /// A zone due at `now` or before, taken off the heap (it is scheduled
    /// again once handled).
    fn pop_due(&mut self, now: u64) -> Option<u32> {
        let due = self.next_due()?;
        if due > now {
            return None;
        }
        self.due.pop().map(|Reverse((_, id))| id)
    }
}

/// The thread's state of a zone it starts keeping.
fn secondary((config, saved): Start) -> Secondary {
    let (zone, timers) = match saved {
        Some((zone, timers)) => (Some(zone), timers),
        None => (None, Timers::default()),
    };
    Secondary {
        config,
        zone,
        timers,
        force: false,
    }
}

/// When the zone's expiry needs the thread awake (never without a zone).
fn expiry_due(secondary: &Secondary) -> u64 {
    if secondary.zone.is_some() && secondary.timers.expires != 0 {
        secondary.timers.expires
    } else {
        u64::MAX
    }
}

/// The SOA's REFRESH, RETRY and EXPIRE, clamped.
fn soa_timers(zone: &Zone) -> (u64, u64, u64) {
    let rdata = zone.soa_record().rdata;
    let field = |back: usize| {
        rdata
            .len()
            .checked_sub(back)
            .and_then(|at| rdata.get(at..at + 4))
            .map_or(0, |b| {
                u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            })
    };
    let clamp = |value: u64| value.clamp(MIN_INTERVAL, MAX_INTERVAL);
    (
        clamp(field(16)),
        clamp(field(12)),
        field(8).max(MIN_INTERVAL),
    )
}

/// Refreshes one zone from its primaries, in order, and reports.
fn refresh(secondary: &mut Secondary, limits: Limits, events: &mut impl FnMut(Event)) {
    let origin = secondary.config.origin;
    let mut failures = Vec::new();
    for &primary in &secondary.config.primaries {
        let started = Instant::now();
        match refresh_from(secondary, primary, limits) {
            Ok(Some((zone, incremental))) => {
                let now = unix_time();
                let (refresh, _, expire) = soa_timers(&zone);
                secondary.zone = Some(Arc::clone(&zone));
                secondary.force = false;
                secondary.timers = Timers {
                    last_refresh: now,
                    next_refresh: now + refresh,
                    expires: now + expire,
                    last_transfer: now,
                };
                // A transfer's version is always built whole (an IXFR's
                // differences applied to the current records, then built):
                // its work is the whole zone's, as an UPDATE's whole build
                // counts it (`update::next_version`).
                log::info!(
                    "{}: serial {} received from {primary} by {}, {} records, built whole ({} \
                     table octets, {} nodes), in {:.2} s",
                    origin.as_name(),
                    zone.serial(),
                    if incremental { "IXFR" } else { "AXFR" },
                    zone.record_count(),
                    zone.table_bytes(),
                    zone.node_count(),
                    started.elapsed().as_secs_f64()
                );
                events(Event::Received {
                    zone,
                    timers: secondary.timers,
                    incremental,
                    primary,
                });
                return;
            }
            Ok(None) => {
                let now = unix_time();
                let (refresh, _, expire) = secondary
                    .zone
                    .as_deref()
                    .map_or((FIRST_RETRY, 0, 0), soa_timers);
                secondary.timers.last_refresh = now;
                secondary.timers.next_refresh = now + refresh;
                secondary.timers.expires = now + expire;
                events(Event::Refreshed {
                    origin,
                    timers: secondary.timers,
                    failure: None,
                });
                return;
            }
            Err(reason) => {
                log::warn!(
                    "{}: refresh from {primary} failed: {reason}",
                    origin.as_name()
                );
                failures.push(format!("{primary}: {reason}"));
            }
        }
    }
    let retry = secondary
        .zone
        .as_deref()
        .map_or(FIRST_RETRY, |zone| soa_timers(zone).1);
    secondary.timers.next_refresh = unix_time() + retry;
    events(Event::Refreshed {
        origin,
        timers: secondary.timers,
        failure: Some(failures.join("; ")),
    });
}

/// One primary: `Ok(None)` if the zone is current, a new version, or why
/// not.
///
/// With a zone to refresh, the primary is first asked for its SOA; a usable
/// answer (NOERROR, authoritative, the zone's SOA, verified with the key
/// when there is one) that is not newer ends the refresh. Any other answer,
/// or none, is only logged: the IXFR that follows decides, as BIND goes on
/// to the transfer when its SOA query is refused or times out.
fn refresh_from(
    secondary: &Secondary,
    primary: SocketAddr,
    limits: Limits,
) -> Result<Option<(Arc<Zone>, bool)>, String> {
    let Some(tls) = &secondary.config.tls else {
        return refresh_plain(secondary, primary, limits);
    };
    let origin = secondary.config.origin;
    let failure = match refresh_tls(secondary, tls, primary, limits) {
        Ok(outcome) => {
            XOT_IN.count(if outcome.is_some() {
                XotOutcome::Received
            } else {
                XotOutcome::Current
            });
            return Ok(outcome);
        }
        Err(TlsFailure::Exchange(reason)) => {
            XOT_IN.count(XotOutcome::Transfer);
            return Err(format!("over TLS: {reason}"));
        }
        Err(TlsFailure::Connect(failure)) => failure,
    };
    XOT_IN.count(failure.outcome);
    let Some(port) = tls.fallback_port else {
        return Err(format!(
            "over TLS: {failure}; no fallback to plain DNS configured"
        ));
    };
    let plain = SocketAddr::new(primary.ip(), port);
    log::warn!(
        "{}: TLS to {primary} failed ({failure}); asking {plain} over plain DNS \
         (fallback: plain)",
        origin.as_name()
    );
    XOT_IN.count(XotOutcome::Fallback);
    refresh_plain(secondary, plain, limits).map_err(|reason| {
        format!("over TLS: {failure}; then over plain DNS from {plain}: {reason}")
    })
}

/// Why a refresh over TLS failed: no authenticated connection, or the DNS
/// exchange over one.
enum TlsFailure {
    Connect(xot::ConnectError),
    Exchange(String),
}

/// [`refresh_from`] over TLS: the SOA query and the transfer on one
/// connection (a new one for the AXFR after a failed IXFR, or after a
/// SOA query without a usable answer), each authenticated the same way.
fn refresh_tls(
    secondary: &Secondary,
    tls: &XotConfig,
    primary: SocketAddr,
    limits: Limits,
) -> Result<Option<(Arc<Zone>, bool)>, TlsFailure> {
    let config = &secondary.config;
    let connect = || xot::connect(tls, primary, IO_TIMEOUT).map_err(TlsFailure::Connect);
    let current = if secondary.force {
        None
    } else {
        secondary.zone.clone()
    };
    let mut stream = connect()?;
    let mut soa_failure = None;
    if let Some(zone) = &current {
        match soa_serial_over(config, &mut stream) {
            Ok(serial) if serial_at_or_after(zone.serial(), serial) => {
                xot::close(stream);
                return Ok(None);
            }
            Ok(_) => {}
            Err(reason) => {
                log::info!(
                    "{}: no usable answer to the SOA query over TLS from {primary} \
                     ({reason}); asking by IXFR",
                    config.origin.as_name()
                );
                soa_failure = Some(reason);
                stream = connect()?;
            }
        }
    }
    let ixfr = current.is_some();
    let outcome = match transfer(config, &mut stream, current, ixfr, limits) {
        Err(reason) if ixfr => {
            log::info!(
                "{}: IXFR over TLS from {primary} failed ({reason}); trying AXFR",
                config.origin.as_name()
            );
            drop(stream);
            stream = connect()?;
            transfer(config, &mut stream, None, false, limits)
        }
        outcome => outcome,
    };
    xot::close(stream);
    outcome.map_err(|reason| {
        TlsFailure::Exchange(match soa_failure {
            Some(soa) => format!("{reason} (and the SOA query before it: {soa})"),
            None => reason,
        })
    })
}

/// [`refresh_from`] over plain DNS: the SOA query over UDP (TCP if
/// truncated), the transfer over TCP.
fn refresh_plain(
    secondary: &Secondary,
    primary: SocketAddr,
    limits: Limits,
) -> Result<Option<(Arc<Zone>, bool)>, String> {
    let config = &secondary.config;
    let current = if secondary.force {
        None
    } else {
        secondary.zone.clone()
    };
    let mut soa_failure = None;
    if let Some(zone) = &current {
        match soa_serial(config, primary) {
            Ok(serial) if serial_at_or_after(zone.serial(), serial) => return Ok(None),
            Ok(_) => {}
            Err(reason) => {
                log::info!(
                    "{}: no usable answer to the SOA query from {primary} ({reason}); \
                     asking by IXFR",
                    config.origin.as_name()
                );
                soa_failure = Some(reason);
            }
        }
    }
    let ixfr = current.is_some();
    // A primary that takes no connection is not asked again for AXFR.
    let outcome = connect(primary).and_then(|mut stream| {
        match transfer(config, &mut stream, current, ixfr, limits) {
            Err(reason) if ixfr => {
                log::info!(
                    "{}: IXFR from {primary} failed ({reason}); trying AXFR",
                    config.origin.as_name()
                );
                drop(stream);
                let mut stream = connect(primary)?;
                transfer(config, &mut stream, None, false, limits)
            }
            outcome => outcome,
        }
    });
    outcome.map_err(|reason| match soa_failure {
        Some(soa) => format!("{reason} (and the SOA query before it: {soa})"),
        None => reason,
    })
}

/// A random message ID (from the thread's CSPRNG: a forger must not know
/// it).
fn random_id() -> u16 {
    rand::rng().random()
}

/// Asks `primary` for the zone's SOA serial over UDP, over TCP if the
/// answer is truncated.
fn soa_serial(config: &SecondaryConfig, primary: SocketAddr) -> Result<u32, String> {
    let (id, mut session, query) = soa_query(config)?;
    let query = &query[..];
    let local: SocketAddr = if primary.is_ipv6() {
        "[::]:0".parse().expect("a valid address")
    } else {
        "0.0.0.0:0".parse().expect("a valid address")
    };
    let socket = UdpSocket::bind(local).map_err(|e| e.to_string())?;
    socket.connect(primary).map_err(|e| e.to_string())?;
    socket.send(query).map_err(|e| e.to_string())?;
    let mut answer = vec![0u8; MAX_MESSAGE];
    let deadline = Instant::now() + IO_TIMEOUT;
    // Datagrams that are not the answer (a late one, a forgery with
    // another ID) are skipped until the deadline. The first with our ID is
    // the answer, usable or not: waiting on for a better one would let
    // any forger delay every refresh by the whole timeout.
    let answer = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("no answer to the SOA query".to_string());
        }
        socket
            .set_read_timeout(Some(left))
            .map_err(|e| e.to_string())?;
        let received = socket
            .recv(&mut answer)
            .map_err(|e| format!("no answer to the SOA query ({e})"))?;
        let reply = &answer[..received];
        if reply.len() >= 2 && u16::from_be_bytes([reply[0], reply[1]]) == id {
            break reply.to_vec();
        }
    };
    let answer = if MessageView::parse(&answer).is_ok_and(|view| view.header().tc()) {
        tcp_exchange(primary, query)?
    } else {
        answer
    };
    check_soa_answer(config, &mut session, &answer, id)
}

/// The SOA query for the zone: its ID, the TSIG session that signed it
/// (with a key), and the message.
fn soa_query(config: &SecondaryConfig) -> Result<(u16, Option<Session>, Vec<u8>), String> {
    let id = random_id();
    let mut session = config.key.as_ref().map(Session::new);
    let mut query = vec![0u8; 512];
    let len = {
        let reserve = session.as_ref().map_or(0, Session::record_len);
        let mut builder = MessageBuilder::new(&mut query, 512 - reserve).map_err(|_| "no room")?;
        builder.set_id(id);
        builder
            .push_question(config.origin.as_name(), RType::SOA, RClass::IN)
            .map_err(|_| "no room for the question")?;
        builder.finish()
    };
    let len = match &mut session {
        Some(session) => session
            .sign(&mut query, len, unix_time())
            .map_err(|_| "no room to sign")?,
        None => len,
    };
    query.truncate(len);
    Ok((id, session, query))
}

/// Asks for the zone's SOA serial on an open stream (TLS).
fn soa_serial_over(
    config: &SecondaryConfig,
    stream: &mut (impl Read + Write),
) -> Result<u32, String> {
    let (id, mut session, query) = soa_query(config)?;
    send_framed(stream, &query)?;
    let mut answer = vec![0u8; MAX_MESSAGE];
    let len = receive_framed(stream, &mut answer)?;
    answer.truncate(len);
    check_soa_answer(config, &mut session, &answer, id)
}

/// The serial in a SOA answer, its signature verified with a key.
fn check_soa_answer(
    config: &SecondaryConfig,
    session: &mut Option<Session>,
    answer: &[u8],
    id: u16,
) -> Result<u32, String> {
    if let Some(session) = session {
        session.verify(answer, unix_time()).map_err(|e| {
            // The rcode only names the answer in the log (Knot's REFUSED
            // for a catalog it generates is unsigned).
            let rcode = MessageView::parse(answer).map_or(String::new(), |view| {
                format!(" (rcode {})", view.header().rcode_bits())
            });
            format!("the SOA answer{rcode}: {e}")
        })?;
    }
    read_soa_serial(answer, id, config.origin)
}

/// The serial of the zone's SOA in the answer section of a SOA answer.
fn read_soa_serial(answer: &[u8], id: u16, origin: LowerNameBuf) -> Result<u32, String> {
    let view = MessageView::parse(answer).map_err(|e| e.what.to_string())?;
    let header = view.header();
    if header.id() != id || !header.qr() {
        return Err("not an answer to the SOA query".to_string());
    }
    if header.rcode_bits() != 0 {
        return Err(format!("the SOA answer has rcode {}", header.rcode_bits()));
    }
    if !header.aa() {
        return Err("the SOA answer is not authoritative".to_string());
    }
    view.section(Section::Answer)
        .flatten()
        .find(|record| {
            record.rtype == RType::SOA
                && LowerNameBuf::from_name(record.owner.to_buf().as_name()) == origin
        })
        .and_then(|record| {
            let at = record.rdata.len().checked_sub(20)?;
            let b = record.rdata.get(at..at + 4)?;
            Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        })
        .ok_or_else(|| "no SOA in the answer".to_string())
}

/// Connects to `primary` over TCP with the I/O timeouts.
fn connect(primary: SocketAddr) -> Result<TcpStream, String> {
    let stream = TcpStream::connect_timeout(&primary, IO_TIMEOUT).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    Ok(stream)
}

/// Writes one framed message.
fn send_framed(stream: &mut impl Write, message: &[u8]) -> Result<(), String> {
    let mut framed = Vec::with_capacity(2 + message.len());
    framed.extend_from_slice(&(message.len() as u16).to_be_bytes());
    framed.extend_from_slice(message);
    stream.write_all(&framed).map_err(|e| e.to_string())
}

/// Reads one framed message into `buf`; its length.
fn receive_framed(stream: &mut impl Read, buf: &mut [u8]) -> Result<usize, String> {
    let mut prefix = [0u8; 2];
    stream
        .read_exact(&mut prefix)
        .map_err(|e| format!("reading: {e}"))?;
    let len = usize::from(u16::from_be_bytes(prefix));
    stream
        .read_exact(&mut buf[..len])
        .map_err(|e| format!("reading: {e}"))?;
    Ok(len)
}

/// One query and its answer over TCP.
fn tcp_exchange(primary: SocketAddr, query: &[u8]) -> Result<Vec<u8>, String> {
    let mut stream = connect(primary)?;
    send_framed(&mut stream, query)?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    let len = receive_framed(&mut stream, &mut buf)?;
    buf.truncate(len);
    Ok(buf)
}

/// One transfer over `stream`: IXFR from `current` if `ixfr`, else AXFR.
/// `Ok(None)`: the primary says the zone is current.
fn transfer(
    config: &SecondaryConfig,
    stream: &mut (impl Read + Write),
    current: Option<Arc<Zone>>,
    ixfr: bool,
    limits: Limits,
) -> Result<Option<(Arc<Zone>, bool)>, String> {
    let session = config.key.as_ref().map(Session::new);
    let origin = NameBuf::from_name(config.origin.as_name());
    let mut incoming = Incoming::new(
        origin.as_name(),
        current,
        ixfr,
        random_id(),
        session,
        limits,
    );
    let mut buf = vec![0u8; MAX_MESSAGE];
    let len = incoming
        .request(&mut buf, unix_time())
        .map_err(|_| "no room for the request")?;
    send_framed(stream, &buf[..len])?;
    let deadline = Instant::now() + TRANSFER_TIMEOUT;
    // Each pass takes one message; the deadline and the limits end it.
    loop {
        if Instant::now() >= deadline {
            return Err("the transfer took too long".to_string());
        }
        let len = receive_framed(stream, &mut buf)?;
        match incoming.message(&buf[..len], unix_time()) {
            Ok(None) => continue,
            Ok(Some(Outcome::UpToDate { .. })) => return Ok(None),
            Ok(Some(Outcome::Zone { zone, incremental })) => {
                return Ok(Some((Arc::new(*zone), incremental)))
            }
            Err(err) => return Err(err.to_string()),
        }
    }
}
