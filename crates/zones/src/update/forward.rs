//! UPDATEs to secondary zones (issue 25; docs/decisions/0015): answered
//! REFUSED (the default, as BIND without `allow-update-forwarding`),
//! NOTAUTH (as Knot without an update ACL), or forwarded to the zone's
//! primary and its answer relayed (`zones.secondary[].update`).
//!
//! A forward is Knot's (`knot/nameserver/update.c`, `forward_request`):
//! the core has verified the request's TSIG with tern's keys (so tern
//! must know the key, as Knot must); the message goes to the primary
//! unchanged but for a new random ID (the TSIG's original ID lets the
//! primary verify it), over TCP, to each primary in turn until one
//! answers; the primary's answer is relayed unchanged but for the
//! client's ID (its TSIG, made by the primary, is the client's to check;
//! tern does not sign it again). BIND relays the raw messages the same
//! way. No answer from any primary within [`FORWARD_TIMEOUT`]: SERVFAIL.
//!
//! Forwards run on [`FORWARD_THREADS`] threads of their own
//! (`tern-update-fwd`), off the cores and off the update thread, from a
//! queue of [`MAX_FORWARDS_WAITING`]; beyond it SERVFAIL at once.

use std::io::{self, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng as _;
use tern_wire::name::LowerNameBuf;

/// Threads that forward UPDATEs (each one forward at a time).
pub const FORWARD_THREADS: usize = 2;

/// Forwards waiting for a thread, all zones together; beyond: SERVFAIL.
pub const MAX_FORWARDS_WAITING: usize = 64;

/// The longest a forward waits for its primaries' answer, all of them
/// together (connect, send, read).
pub const FORWARD_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest answer taken from a primary (what TCP's length carries).
const MAX_ANSWER: usize = 65_535;

/// What a secondary zone answers to an UPDATE (`zones.secondary[].update`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SecondaryUpdate {
    /// REFUSED (the default).
    #[default]
    Refused,
    /// NOTAUTH.
    NotAuth,
    /// Forwarded to its primary, whose answer is relayed.
    Forward,
}

/// One UPDATE to forward.
pub struct ForwardRequest {
    /// The whole message (TSIG included), as the client sent it.
    pub message: Vec<u8>,
    /// Called once: the primary's answer (the client's ID restored), or
    /// `None` (SERVFAIL).
    pub relay: Box<dyn FnOnce(Option<Vec<u8>>) + Send>,
}

type Job = (ForwardRequest, LowerNameBuf, Arc<[SocketAddr]>);

/// The forwarding threads' queue.
#[derive(Clone)]
pub(super) struct Forwarder {
    sender: SyncSender<Job>,
}

impl Forwarder {
    /// Starts the threads.
    pub(super) fn start() -> io::Result<Forwarder> {
        let (sender, receiver) = mpsc::sync_channel::<Job>(MAX_FORWARDS_WAITING);
        let receiver = Arc::new(Mutex::new(receiver));
        for index in 0..FORWARD_THREADS {
            let receiver = Arc::clone(&receiver);
            std::thread::Builder::new()
                .name(format!("tern-update-fwd{index}"))
                .spawn(move || run(&receiver))?;
        }
        Ok(Forwarder { sender })
    }

    /// Queues `request` for `origin`'s `primaries`; SERVFAIL at once when
    /// the queue is full.
    pub(super) fn forward(
        &self,
        request: ForwardRequest,
        origin: LowerNameBuf,
        primaries: Arc<[SocketAddr]>,
    ) {
        match self.sender.try_send((request, origin, primaries)) {
            Ok(()) => {}
            Err(TrySendError::Full((request, origin, _)))
            | Err(TrySendError::Disconnected((request, origin, _))) => {
                log::warn!(
                    "zone {}: an UPDATE not forwarded: {MAX_FORWARDS_WAITING} forwards wait \
                     already",
                    origin.as_name()
                );
                (request.relay)(None);
            }
        }
    }
}

fn run(receiver: &Mutex<Receiver<Job>>) {
    loop {
        let job = receiver.lock().unwrap_or_else(|p| p.into_inner()).recv();
        let Ok((request, origin, primaries)) = job else {
            return;
        };
        let answer = forward(&request.message, &origin, &primaries);
        (request.relay)(answer);
    }
}

/// The primaries' answer to `message`, with the client's ID; `None` when
/// none answered within [`FORWARD_TIMEOUT`].
fn forward(message: &[u8], origin: &LowerNameBuf, primaries: &[SocketAddr]) -> Option<Vec<u8>> {
    let client_id = [*message.first()?, *message.get(1)?];
    let id: u16 = rand::rng().random();
    let mut sent = message.to_vec();
    sent[..2].copy_from_slice(&id.to_be_bytes());
    let deadline = Instant::now() + FORWARD_TIMEOUT;
    for primary in primaries {
        match exchange(*primary, &sent, deadline) {
            Ok(mut answer) => {
                log::info!(
                    "zone {}: an UPDATE forwarded to {primary}, answered rcode {}",
                    origin.as_name(),
                    answer[3] & 0x0f
                );
                answer[..2].copy_from_slice(&client_id);
                return Some(answer);
            }
            Err(err) => log::warn!(
                "zone {}: forwarding an UPDATE to {primary}: {err}",
                origin.as_name()
            ),
        }
    }
    None
}

/// One exchange over TCP with `primary`, by `deadline`: an answer with
/// our ID, QR set and opcode UPDATE.
fn exchange(primary: SocketAddr, message: &[u8], deadline: Instant) -> io::Result<Vec<u8>> {
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero())
            .ok_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "timed out"))
    };
    let len = u16::try_from(message.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "message too long"))?;
    let mut stream = TcpStream::connect_timeout(&primary, left()?)?;
    stream.set_write_timeout(Some(left()?))?;
    let mut framed = Vec::with_capacity(message.len() + 2);
    framed.extend_from_slice(&len.to_be_bytes());
    framed.extend_from_slice(message);
    stream.write_all(&framed)?;
    stream.set_read_timeout(Some(left()?))?;
    let mut prefix = [0; 2];
    stream.read_exact(&mut prefix)?;
    let len = usize::from(u16::from_be_bytes(prefix));
    if !(12..=MAX_ANSWER).contains(&len) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "answer too short",
        ));
    }
    let mut answer = vec![0; len];
    stream.set_read_timeout(Some(left()?))?;
    stream.read_exact(&mut answer)?;
    let answers_ours =
        answer[..2] == message[..2] && answer[2] & 0x80 != 0 && (answer[2] >> 3) & 0x0f == 5;
    if !answers_ours {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not an answer to the UPDATE",
        ));
    }
    Ok(answer)
}
