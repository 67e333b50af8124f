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

use crate::signing::unix_time;

/// Sends of one NOTIFY to one target before it is given up.
pub const MAX_ATTEMPTS: u32 = 6;

/// The wait after the first send; it doubles after each.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// How often the thread looks for commands while NOTIFYs are pending.
const POLL: Duration = Duration::from_millis(50);

/// Where NOTIFYs go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotifyTargets {
    /// The servers told of every change.
    pub targets: Vec<SocketAddr>,
    /// Signs the NOTIFYs when set.
    pub key: Option<Key>,
    /// Zones with their own targets and key (`notify:` in their
    /// `zones.list` or `zones.secondary` entry), which replace the two above
    /// for them.
    pub zones: Vec<ZoneNotify>,
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
        match self.zones.iter().find(|zone| zone.origin == origin) {
            Some(zone) => (&zone.targets, zone.key.as_ref()),
            None => (&self.targets, self.key.as_ref()),
        }
    }

    /// Whether any zone has a target.
    pub fn any(&self) -> bool {
        !self.targets.is_empty() || self.zones.iter().any(|zone| !zone.targets.is_empty())
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
            .chain(targets.zones.iter().flat_map(|zone| &zone.targets))
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

fn run(
    targets: &NotifyTargets,
    socket4: &UdpSocket,
    socket6: Option<&UdpSocket>,
    commands: &Receiver<Command>,
) {
    let mut pending: Vec<Pending> = Vec::new();
    let mut buf = vec![0u8; 65535];
    // Each pass takes the commands, sends what is due and reads answers
    // for one poll interval; with nothing pending it waits for a command.
    loop {
        let command = if pending.is_empty() {
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
                pending.retain(|p| p.origin != origin);
                let (zone_targets, _) = targets.for_zone(origin);
                for &target in zone_targets {
                    pending.push(Pending {
                        origin,
                        serial,
                        target,
                        id: 0,
                        sends: 0,
                        next: Instant::now(),
                        session: None,
                    });
                }
                continue; // take every queued command before sending
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        pending.retain_mut(|p| {
            if p.next > now {
                return true;
            }
            if p.sends == MAX_ATTEMPTS {
                log::warn!(
                    "NOTIFY for {} serial {} to {}: no answer after {} sends; given up",
                    p.origin.as_name(),
                    p.serial,
                    p.target,
                    p.sends
                );
                return false;
            }
            send(p, targets.for_zone(p.origin).1, socket4, socket6, &mut buf);
            true
        });
        for socket in std::iter::once(socket4).chain(socket6) {
            // Reads until the poll interval passes with nothing to read.
            while let Ok((len, from)) = socket.recv_from(&mut buf) {
                answered(&mut pending, &buf[..len], from);
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
fn answered(pending: &mut Vec<Pending>, answer: &[u8], from: SocketAddr) {
    let Ok(view) = MessageView::parse(answer) else {
        return;
    };
    let header = view.header();
    if !header.qr() || header.opcode() != Opcode::NOTIFY {
        return;
    }
    let Some(index) = pending
        .iter()
        .position(|p| p.sends > 0 && p.id == header.id() && p.target == from)
    else {
        return;
    };
    let p = &mut pending[index];
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
    pending.swap_remove(index);
}
