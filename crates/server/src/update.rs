//! Dynamic updates handed off the core (docs/decisions/0015): the core
//! checks an UPDATE cheaply (`worker::update`), hands it to whoever
//! applies updates ([`UpdateIn::submit`], the zones' owner in the binary)
//! and waits for the RCODE without blocking the reactor: UDP and TCP
//! answering go on meanwhile.
//!
//! The wait is a oneshot the owner's thread completes from outside the
//! core: [`UpdateReply::send`] puts `(id, rcode)` into the core's list and
//! writes one octet to the core's wake-up socket (a Unix datagram pair, as
//! the control path's); the core's reply task reads it, takes the list and
//! wakes the waiting tasks, all on the core (monoio's wakers are not for
//! other threads).
//!
//! ```text
//!  UDP loop / TCP read half ── take_update ──► Replies::submit ──► UpdateIn::submit (off the core)
//!        ▲                                                             │ owner thread: engine,
//!        │ Wait (future) ◄── reply task ◄── wake-up octet ◄── UpdateReply::send(rcode)
//!        └─► answer written (and signed), sent
//! ```

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::unix::net::UnixDatagram;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tern_wire::name::LowerNameBuf;

use crate::signal::StopListener;
use crate::update_in::{Answered, Sink, UpdateIn, UpdateReply, UpdateRequest};
use crate::worker::PendingUpdate;

/// Replies taken from the wake-up socket per read (each octet is one
/// reply's wake-up; more are taken from the list anyway).
const WAKE_BUFFER: usize = 64;

//----------- Replies --------------------------------------------------------

/// One waiting request on the core.
#[derive(Default)]
struct Slot {
    rcode: RefCell<Option<Answered>>,
    waker: RefCell<Option<Waker>>,
}

/// A core's waiting updates and its reply task's socket.
pub(crate) struct Replies {
    update_in: UpdateIn,
    sink: Arc<Sink>,
    wake: monoio::net::unix::UnixDatagram,
    waiting: RefCell<HashMap<u64, Rc<Slot>>>,
    next: Cell<u64>,
}

impl Replies {
    /// A core's replies (made on the core, in its runtime).
    pub(crate) fn new(update_in: UpdateIn) -> io::Result<Replies> {
        let (ours, theirs) = UnixDatagram::pair()?;
        ours.set_nonblocking(true)?;
        theirs.set_nonblocking(true)?;
        Ok(Replies {
            update_in,
            sink: Arc::new(Sink {
                done: Mutex::new(Vec::new()),
                wake: theirs,
            }),
            wake: monoio::net::unix::UnixDatagram::from_std(ours)?,
            waiting: RefCell::new(HashMap::new()),
            next: Cell::new(0),
        })
    }

    /// Hands a checked request off the core; the future gives its RCODE.
    pub(crate) fn submit(
        self: &Rc<Self>,
        origin: LowerNameBuf,
        message: Vec<u8>,
        key: Option<LowerNameBuf>,
        client: SocketAddr,
    ) -> Wait {
        let id = self.next.get();
        self.next.set(id.wrapping_add(1));
        let slot = Rc::new(Slot::default());
        self.waiting.borrow_mut().insert(id, Rc::clone(&slot));
        let reply = UpdateReply {
            sink: Arc::clone(&self.sink),
            id,
            sent: false,
        };
        (self.update_in.submit)(UpdateRequest {
            origin,
            message,
            key,
            client,
            reply,
        });
        Wait {
            replies: Rc::clone(self),
            id,
            slot,
        }
    }

    /// Completes the waiting requests whose replies came.
    fn deliver(&self) {
        let done = std::mem::take(&mut *self.sink.done.lock().unwrap_or_else(|p| p.into_inner()));
        let mut waiting = self.waiting.borrow_mut();
        for (id, answered) in done {
            if let Some(slot) = waiting.remove(&id) {
                *slot.rcode.borrow_mut() = Some(answered);
                if let Some(waker) = slot.waker.borrow_mut().take() {
                    waker.wake();
                }
            }
        }
    }
}

/// The core's reply task: wakes the waiting updates as their replies come,
/// until the core stops.
pub(crate) async fn run(replies: Rc<Replies>, stop: StopListener) {
    let mut buffer: Vec<u8> = Vec::with_capacity(WAKE_BUFFER);
    loop {
        let Some((result, returned)) = stop.or(replies.wake.recv(buffer)).await else {
            return;
        };
        buffer = returned;
        if result.is_err() {
            // Nothing is expected here; do not spin if it repeats.
            crate::tcp::deadline::sleep(std::time::Duration::from_millis(50)).await;
        }
        replies.deliver();
    }
}

//----------- Transports -----------------------------------------------------

/// The largest answer to an UPDATE: header, zone section (a name of at
/// most 255 octets) and a TSIG record (its names, a 64-octet MAC, 6
/// octets of other data).
const MAX_ANSWER: usize = 1024;

/// Hands `update` off and gives its answer once the owner has answered
/// (`None`: the core takes no updates, or the answer did not fit).
pub(crate) async fn answer(
    replies: Option<&Rc<Replies>>,
    mut update: PendingUpdate,
) -> Option<Vec<u8>> {
    let replies = replies?;
    let wait = replies.submit(
        update.origin,
        update.message.clone(),
        update.key,
        update.client,
    );
    let rcode = match wait.await {
        Answered::Rcode(rcode) => rcode,
        Answered::Relayed(mut answer) => {
            // The primary's answer, as signed by the primary; the client's
            // ID (the forwarder restores it; kept whatever it did).
            if let (Some(id), Some(to)) = (update.message.get(..2), answer.get_mut(..2)) {
                to.copy_from_slice(id);
            }
            return Some(answer);
        }
    };
    let mut out = vec![0; MAX_ANSWER];
    let len = update.answer(rcode, &mut out)?;
    out.truncate(len);
    Some(out)
}

/// [`answer`] of the UPDATE a worker left, if any (the TCP path).
pub(crate) async fn answer_update(
    replies: Option<&Rc<Replies>>,
    update: Option<PendingUpdate>,
) -> Option<Vec<u8>> {
    answer(replies, update?).await
}

/// Answers the UPDATEs of a UDP batch, each in a task of its own that
/// sends its answer from `socket` to the datagram's source once the owner
/// has answered; the loop goes on meanwhile.
pub(crate) fn answer_udp(
    replies: Option<&Rc<Replies>>,
    socket: &Rc<monoio::net::udp::UdpSocket>,
    updates: &mut Vec<(PendingUpdate, SocketAddr)>,
) {
    for (update, source) in updates.drain(..) {
        let replies = replies.cloned();
        let socket = Rc::clone(socket);
        monoio::spawn(async move {
            if let Some(answer) = answer(replies.as_ref(), update).await {
                let _ = socket.send_to(answer, source).await;
            }
        });
    }
}

//----------- Wait -----------------------------------------------------------

/// A request's RCODE, once the owner sent it.
pub(crate) struct Wait {
    replies: Rc<Replies>,
    id: u64,
    slot: Rc<Slot>,
}

impl Future for Wait {
    type Output = Answered;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answered> {
        match self.slot.rcode.borrow_mut().take() {
            Some(answered) => Poll::Ready(answered),
            None => {
                *self.slot.waker.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        // A connection closed while waiting: the reply finds no slot.
        self.replies.waiting.borrow_mut().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_wire::types::Rcode;

    /// A reply sent from another thread wakes the waiting task on the
    /// core, and a reply dropped unsent answers SERVFAIL.
    #[test]
    fn replies_cross_threads_and_a_dropped_one_is_servfail() {
        let mut runtime = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (tx, rx) = std::sync::mpsc::channel::<UpdateRequest>();
            let tx = Mutex::new(tx);
            let update_in = UpdateIn {
                takes: Arc::new(|_| true),
                submit: Arc::new(move |request| tx.lock().unwrap().send(request).unwrap()),
            };
            let replies = Rc::new(Replies::new(update_in).unwrap());
            let stop = crate::signal::Stop::default();
            let task = monoio::spawn(run(Rc::clone(&replies), stop.listener()));
            let origin = LowerNameBuf::from_name(tern_wire::name::Name::ROOT);
            let client: SocketAddr = "127.0.0.1:53".parse().unwrap();
            let first = replies.submit(origin, vec![1], None, client);
            let second = replies.submit(origin, vec![2], None, client);
            let owner = std::thread::spawn(move || {
                let a = rx.recv().unwrap();
                let b = rx.recv().unwrap();
                assert_eq!((a.message[0], b.message[0]), (1, 2));
                a.reply.send(Rcode::NOERROR);
                drop(b);
            });
            assert_eq!(first.await, Answered::Rcode(Rcode::NOERROR));
            assert_eq!(second.await, Answered::Rcode(Rcode::SERVFAIL));
            owner.join().unwrap();
            assert!(replies.waiting.borrow().is_empty());
            stop.fire();
            task.await;
        });
    }
}
