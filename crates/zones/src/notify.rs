//! NOTIFY out (RFC 1996): when a zone's serial changes (a reload of its
//! file, or a transfer into a secondary zone), its secondaries are told, so
//! that they refresh at once instead of at their next REFRESH.
//!
//! One thread, [`Notifier`], sends each NOTIFY over UDP to every target
//! and sends it again until the target answers: after 1, 2, 4, 8 and 16
//! seconds, and gives up 32 seconds after the sixth send
//! ([`MAX_ATTEMPTS`]), as BIND and Knot retry. A newer NOTIFY for the same zone and target replaces one
//! still pending. Answers are matched by ID and source address; with a key
//! the NOTIFY is signed and the answer must verify.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::Rng;
use tern_wire::build::MessageBuilder;
use tern_wire::name::LowerNameBuf;
use tern_wire::parse::MessageView;
use tern_wire::types::{Opcode, RClass, RType};
use tern_xfr::tsig::{Key, Session};

use crate::unix_time;

/// Sends of one NOTIFY to one target before it is given up.
pub const MAX_ATTEMPTS: u32 = 6;

/// The wait after the first send; it doubles after each.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// How often the thread looks for commands while NOTIFYs are pending.
const POLL: Duration = Duration::from_millis(50);

/// The most NOTIFYs sent in one pass (one [`POLL`]): 100,000 zones changed
/// at once (a start) go out at 20,000 a second, not in one burst that
/// overflows the secondaries' receive buffers.
const SENDS_PER_PASS: usize = 1000;

/// Where NOTIFYs go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotifyTargets {
    /// The servers told of every change.
    pub targets: Vec<SocketAddr>,
    /// Signs the NOTIFYs when set.
    pub key: Option<Key>,
    /// Zones with their own targets and key (`notify:` in their
    /// `zones.list` or `zones.secondary` entry), which replace the two above
    /// for them, by lowercased wire origin ([`NotifyTargets::add_zone`]).
    pub zones: std::collections::BTreeMap<Box<[u8]>, ZoneNotify>,
}

/// One zone's own NOTIFY targets and key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneNotify {
    /// The zone.
    pub origin: LowerNameBuf,
    /// The servers told of its changes.
    pub targets: Vec<SocketAddr>,
    /// Signs its NOTIFYs when set.
    pub key: Option<Key>,
}

impl NotifyTargets {
    /// The targets and key for `origin`: its own, or the global ones.
    pub fn for_zone(&self, origin: LowerNameBuf) -> (&[SocketAddr], Option<&Key>) {
        match self.zones.get(origin.as_bytes()) {
            Some(zone) => (&zone.targets, zone.key.as_ref()),
            None => (&self.targets, self.key.as_ref()),
        }
    }

    /// Gives a zone its own targets and key.
    pub fn add_zone(&mut self, zone: ZoneNotify) {
        self.zones.insert(zone.origin.as_bytes().into(), zone);
    }

    /// Whether any zone has a target.
    pub fn any(&self) -> bool {
        !self.targets.is_empty() || self.zones.values().any(|zone| !zone.targets.is_empty())
    }
}

/// What the thread is asked: a zone and its new serial, or (`None`) to
/// stop.
type Command = Option<(LowerNameBuf, u32)>;

/// A handle that queues NOTIFYs.
#[derive(Clone)]
pub struct NotifierHandle {
    commands: Sender<Command>,
}

impl std::fmt::Debug for NotifierHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NotifierHandle")
    }
}

impl NotifierHandle {
    /// Tells every target that `origin` now has `serial`.
    pub fn notify(&self, origin: LowerNameBuf, serial: u32) {
        let _ = self.commands.send(Some((origin, serial)));
    }
}

/// The NOTIFY thread.
pub struct Notifier {
    commands: Sender<Command>,
    thread: Option<JoinHandle<()>>,
}

impl Notifier {
    /// Starts the thread for `targets`.
    pub fn start(targets: NotifyTargets) -> io::Result<Self> {
        let (commands, receiver) = mpsc::channel();
        let socket4 = UdpSocket::bind("0.0.0.0:0")?;
        let any_ipv6 = targets
            .targets
            .iter()
            .chain(targets.zones.values().flat_map(|zone| &zone.targets))
            .any(SocketAddr::is_ipv6);
        let socket6 = if any_ipv6 {
            Some(UdpSocket::bind("[::]:0")?)
        } else {
            None
        };
        for socket in std::iter::once(&socket4).chain(socket6.as_ref()) {
            socket.set_read_timeout(Some(POLL))?;
        }
        let thread = std::thread::Builder::new()
            .name("tern-notify".to_string())
            .spawn(move || run(&targets, &socket4, socket6.as_ref(), &receiver))?;
        Ok(Notifier {
            commands,
            thread: Some(thread),
        })
    }

    /// A handle to queue NOTIFYs.
    pub fn handle(&self) -> NotifierHandle {
        NotifierHandle {
            commands: self.commands.clone(),
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        let _ = self.commands.send(None);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One NOTIFY waiting for its answer.
struct Pending {
    origin: LowerNameBuf,
    serial: u32,
    target: SocketAddr,
    id: u16,
    sends: u32,
    next: Instant,
    session: Option<Session>,
}

/// The NOTIFYs waiting for their answers: a slab, indexed by zone (a newer
/// serial replaces the zone's pending ones) and by the ID and target an
/// answer comes back with, and a heap of their next sends. Every operation
/// is a few look-ups, whatever the number of zones; a heap entry whose
/// NOTIFY is gone or was rescheduled is stale and skipped.
#[derive(Default)]
struct Queue {
    pending: Vec<Option<Pending>>,
    free: Vec<u32>,
    by_zone: HashMap<Box<[u8]>, Vec<u32>>,
    by_answer: HashMap<(u16, SocketAddr), u32>,
    due: BinaryHeap<Reverse<(Instant, u32)>>,
}

impl Queue {
    /// Queues a NOTIFY of `serial` for `origin` to each of `targets`,
    /// ending any still pending for the zone.
    fn add(&mut self, origin: LowerNameBuf, serial: u32, targets: &[SocketAddr]) {
        if let Some(ids) = self.by_zone.remove(origin.as_bytes()) {
            for id in ids {
                self.end(id);
            }
        }
        let now = Instant::now();
        let mut ids = Vec::with_capacity(targets.len());
        for &target in targets {
            let pending = Pending {
                origin,
                serial,
                target,
                id: 0,
                sends: 0,
                next: now,
                session: None,
            };
            let slot = match self.free.pop() {
                Some(slot) => {
                    self.pending[slot as usize] = Some(pending);
                    slot
                }
                None => {
                    self.pending.push(Some(pending));
                    (self.pending.len() - 1) as u32
                }
            };
            self.due.push(Reverse((now, slot)));
            ids.push(slot);
        }
        if !ids.is_empty() {
            self.by_zone.insert(origin.as_bytes().into(), ids);
        }
    }

    /// Forgets a NOTIFY (answered, given up or replaced).
    fn end(&mut self, slot: u32) {
        let Some(pending) = self.pending.get_mut(slot as usize).and_then(Option::take) else {
            return;
        };
        if pending.sends > 0 {
            self.by_answer.remove(&(pending.id, pending.target));
        }
        if let Some(ids) = self.by_zone.get_mut(pending.origin.as_bytes()) {
            ids.retain(|&id| id != slot);
            if ids.is_empty() {
                self.by_zone.remove(pending.origin.as_bytes());
            }
        }
        self.free.push(slot);
    }

    /// A NOTIFY whose next send is due at `now`, if any.
    fn pop_due(&mut self, now: Instant) -> Option<u32> {
        while let Some(&Reverse((when, slot))) = self.due.peek() {
            let current = self
                .pending
                .get(slot as usize)
                .and_then(Option::as_ref)
                .is_some_and(|pending| pending.next == when);
            if !current {
                self.due.pop();
                continue;
            }
            if when > now {
                return None;
            }
            self.due.pop();
            return Some(slot);
        }
        None
    }

    fn is_empty(&self) -> bool {
        self.by_zone.is_empty()
    }
}

fn run(
    targets: &NotifyTargets,
    socket4: &UdpSocket,
    socket6: Option<&UdpSocket>,
    commands: &Receiver<Command>,
) {
    let mut queue = Queue::default();
    let mut buf = vec![0u8; 65535];
    // Each pass takes the commands, sends what is due (at most
    // SENDS_PER_PASS) and reads answers for one poll interval; with
    // nothing pending it waits for a command.
    loop {
        let command = if queue.is_empty() {
            commands.recv().map_err(|_| RecvTimeoutError::Disconnected)
        } else {
            match commands.try_recv() {
                Ok(command) => Ok(command),
                Err(TryRecvError::Empty) => Err(RecvTimeoutError::Timeout),
                Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
            }
        };
        match command {
            Ok(None) | Err(RecvTimeoutError::Disconnected) => return,
            Ok(Some((origin, serial))) => {
                let (zone_targets, _) = targets.for_zone(origin);
                queue.add(origin, serial, zone_targets);
                continue; // take every queued command before sending
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        for _ in 0..SENDS_PER_PASS {
            let Some(slot) = queue.pop_due(now) else {
                break;
            };
            let Some(pending) = queue.pending[slot as usize].as_mut() else {
                continue;
            };
            if pending.sends == MAX_ATTEMPTS {
                log::warn!(
                    "NOTIFY for {} serial {} to {}: no answer after {} sends; given up",
                    pending.origin.as_name(),
                    pending.serial,
                    pending.target,
                    pending.sends
                );
                queue.end(slot);
                continue;
            }
            if pending.sends > 0 {
                queue.by_answer.remove(&(pending.id, pending.target));
            }
            let key = targets.for_zone(pending.origin).1;
            send(pending, key, socket4, socket6, &mut buf);
            queue.by_answer.insert((pending.id, pending.target), slot);
            queue.due.push(Reverse((pending.next, slot)));
        }
        for socket in std::iter::once(socket4).chain(socket6) {
            // Reads until the poll interval passes with nothing to read.
            while let Ok((len, from)) = socket.recv_from(&mut buf) {
                answered(&mut queue, &buf[..len], from);
            }
        }
    }
}

/// Sends (again) one NOTIFY and sets its next send.
fn send(
    pending: &mut Pending,
    key: Option<&Key>,
    socket4: &UdpSocket,
    socket6: Option<&UdpSocket>,
    buf: &mut [u8],
) {
    pending.id = rand::rng().random();
    pending.session = key.map(Session::new);
    pending.sends += 1;
    pending.next = Instant::now() + FIRST_BACKOFF * (1 << (pending.sends - 1));
    let reserve = pending.session.as_ref().map_or(0, Session::record_len);
    let Ok(mut builder) = MessageBuilder::new(buf, 512 - reserve) else {
        return;
    };
    builder.set_id(pending.id);
    builder.set_opcode(Opcode::NOTIFY.0);
    builder.set_aa(true);
    if builder
        .push_question(pending.origin.as_name(), RType::SOA, RClass::IN)
        .is_err()
    {
        return;
    }
    let len = builder.finish();
    let len = match &mut pending.session {
        Some(session) => match session.sign(buf, len, unix_time()) {
            Ok(len) => len,
            Err(_) => return,
        },
        None => len,
    };
    let socket = match (pending.target.is_ipv6(), socket6) {
        (true, Some(socket6)) => socket6,
        _ => socket4,
    };
    if let Err(err) = socket.send_to(&buf[..len], pending.target) {
        log::debug!("NOTIFY to {}: {err}", pending.target);
    }
}

/// Matches an answer to its pending NOTIFY and ends it.
fn answered(queue: &mut Queue, answer: &[u8], from: SocketAddr) {
    let Ok(view) = MessageView::parse(answer) else {
        return;
    };
    let header = view.header();
    if !header.qr() || header.opcode() != Opcode::NOTIFY {
        return;
    }
    let Some(&slot) = queue.by_answer.get(&(header.id(), from)) else {
        return;
    };
    let Some(p) = queue.pending[slot as usize].as_mut() else {
        return;
    };
    if let Some(session) = &mut p.session {
        if let Err(err) = session.verify(answer, unix_time()) {
            log::warn!(
                "NOTIFY for {} to {}: the answer's TSIG: {err}",
                p.origin.as_name(),
                from
            );
            return;
        }
    }
    match header.rcode_bits() {
        0 => log::info!(
            "NOTIFY for {} serial {} to {}: answered",
            p.origin.as_name(),
            p.serial,
            from
        ),
        rcode => log::warn!(
            "NOTIFY for {} serial {} to {}: answered rcode {rcode}; not sent again",
            p.origin.as_name(),
            p.serial,
            from
        ),
    }
    queue.end(slot);
}
