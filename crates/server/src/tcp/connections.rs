//! The open TCP connections of a core: what the two halves of one
//! connection share ([`Pipe`]: the answers queued for the write half and
//! the counts that bound them), and the table of them forwarded answers
//! find ([`Connections`]). `tcp.rs` runs the connections; this part is
//! apart because [`Core`] holds the table (through the forwarding
//! sockets) and the connections' tasks take `Core`, so that every arrow
//! between the files points one way (STYLE.md 1.5).
//!
//! [`Core`]: crate::core::Core

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;

use tern_cache::forward::Client;

use crate::pool::{self, Size, STREAM_BUFFER};
use crate::signal::Notify;

/// The length prefix of a frame.
pub(super) const PREFIX: usize = 2;

//----------- Pipe -----------------------------------------------------------

/// What the two halves of a connection share.
pub(super) struct Pipe {
    /// Framed answers waiting for the write half. Empty until the first
    /// answer; then its length is its capacity ([`STREAM_BUFFER`]); `used`
    /// octets are queued.
    pub(super) pending: RefCell<Vec<u8>>,
    pub(super) used: Cell<usize>,
    /// Answers in `pending`.
    pub(super) queued: Cell<usize>,
    /// Answers not yet handed to the kernel: queued, being written,
    /// arrived from the forwarder and waiting for room, or still upstream.
    pub(super) in_flight: Cell<usize>,
    /// Forwarded queries whose answers have not arrived yet (counted in
    /// `in_flight` too).
    pub(super) waiting: Cell<usize>,
    /// Forwarded answers that arrived while `pending` had no room for
    /// them; moved there by the write half. At most `in_flight` of them.
    pub(super) arrived: RefCell<VecDeque<Vec<u8>>>,
    /// The read half has finished: the write half flushes and ends.
    pub(super) reading_done: Cell<bool>,
    /// The write half has failed or timed out: the read half ends.
    pub(super) writing_failed: Cell<bool>,
    pub(super) to_writer: Notify,
    /// After each write and on failure: room may have been made.
    pub(super) to_reader: Notify,
    /// Only on failure: ends the read half's wait for input.
    failure: Notify,
    /// The client's and our address, for dnstap's CLIENT_RESPONSE of a
    /// forwarded answer (set only when dnstap is on).
    pub(super) addresses: Cell<Option<(SocketAddr, SocketAddr)>>,
}

impl Pipe {
    /// An empty pipe, holding no buffer yet.
    pub(super) fn new() -> Self {
        Pipe {
            pending: RefCell::new(Vec::new()),
            used: Cell::new(0),
            queued: Cell::new(0),
            in_flight: Cell::new(0),
            waiting: Cell::new(0),
            arrived: RefCell::new(VecDeque::new()),
            reading_done: Cell::new(false),
            writing_failed: Cell::new(false),
            to_writer: Notify::default(),
            to_reader: Notify::default(),
            failure: Notify::default(),
            addresses: Cell::new(None),
        }
    }

    /// Whether an answer of `len` octets can be queued now.
    pub(super) fn has_room(&self, len: usize, max_in_flight: usize) -> bool {
        self.in_flight.get() < max_in_flight && self.fits(len)
    }

    /// Whether `pending` has room for an answer of `len` octets.
    fn fits(&self, len: usize) -> bool {
        self.used.get() + PREFIX + len <= STREAM_BUFFER
    }

    /// Queues a framed answer, counting it in flight. Only from the read
    /// half: the write half is told without a wake-up ([`Notify::mark`]),
    /// since `join!` polls it right after the read half, in the same pass
    /// (one poll of the connection's task per batch of answers, not two).
    pub(super) fn push(&self, answer: &[u8]) {
        self.in_flight.set(self.in_flight.get() + 1);
        self.queue(answer);
        self.to_writer.mark();
    }

    /// Queues a framed answer already counted in flight; it must fit. The
    /// caller tells the write half.
    fn queue(&self, answer: &[u8]) {
        let used = self.used.get();
        let mut pending = self.pending.borrow_mut();
        if pending.is_empty() {
            *pending = pool::take(Size::Stream);
        }
        pending[used..used + PREFIX].copy_from_slice(&(answer.len() as u16).to_be_bytes());
        pending[used + PREFIX..used + PREFIX + answer.len()].copy_from_slice(answer);
        self.used.set(used + PREFIX + answer.len());
        self.queued.set(self.queued.get() + 1);
    }

    /// A forwarded query was handed to the forwarder: its answer comes
    /// through [`Pipe::deliver`], and counts in flight until written.
    pub(super) fn forwarded(&self) {
        self.waiting.set(self.waiting.get() + 1);
        self.in_flight.set(self.in_flight.get() + 1);
    }

    /// The answer of a forwarded query: queued if `pending` has room,
    /// else kept for the write half. False if the connection expected no
    /// more answers, or can no longer send them (it is dropped).
    fn deliver(&self, answer: Vec<u8>) -> bool {
        let Some(waiting) = self.waiting.get().checked_sub(1) else {
            return false;
        };
        self.waiting.set(waiting);
        if answer.len() > usize::from(u16::MAX) || self.writing_failed.get() {
            self.in_flight.set(self.in_flight.get() - 1);
            self.to_reader.notify();
            self.to_writer.notify();
            return false;
        }
        let mut arrived = self.arrived.borrow_mut();
        if arrived.is_empty() && self.fits(answer.len()) {
            drop(arrived);
            self.queue(&answer);
        } else {
            arrived.push_back(answer);
            drop(arrived);
        }
        // From the forwarder's task: a wake-up.
        self.to_writer.notify();
        true
    }

    /// Moves arrived forwarded answers into `pending` while they fit (any
    /// one fits an empty `pending`). Only from the write half, which then
    /// writes what it moved.
    pub(super) fn move_arrived(&self) {
        // Each pass moves one answer or ends.
        loop {
            let mut arrived = self.arrived.borrow_mut();
            let Some(answer) = arrived.pop_front() else {
                return;
            };
            if !self.fits(answer.len()) {
                arrived.push_front(answer);
                return;
            }
            drop(arrived);
            self.queue(&answer);
        }
    }

    /// Marks the write half failed and wakes the read half, wherever it
    /// waits.
    pub(super) fn fail(&self) {
        self.writing_failed.set(true);
        self.to_reader.notify();
        self.failure.notify();
    }

    /// Runs `future` unless the write half fails first: `None` then (and
    /// `future` is dropped, which cancels its I/O).
    pub(super) async fn unless_failed<F: Future>(&self, future: F) -> Option<F::Output> {
        let mut future = pin!(future);
        let mut failure = pin!(self.failure.wait());
        poll_fn(|cx| {
            if self.writing_failed.get() {
                return Poll::Ready(None);
            }
            if let Poll::Ready(output) = future.as_mut().poll(cx) {
                return Poll::Ready(Some(output));
            }
            // `failure` is notified only after `writing_failed` is set, so
            // once ready it is never polled again: the check above returns
            // first.
            if failure.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            Poll::Pending
        })
        .await
    }
}

//----------- Connections ----------------------------------------------------

/// The core's table of open TCP connections that forwarded answers can
/// reach: a slot per connection (reused once it closes) and a number
/// unique on the core, so that an answer for a closed connection is
/// dropped rather than given to a later one in its slot. Core-local: an
/// `Rc` per open connection, no locks. As long as the most connections
/// open at once ([`crate::TcpConfig::max_connections`]).
#[derive(Default)]
pub(crate) struct Connections {
    slots: Vec<Option<(u64, Rc<Pipe>)>>,
    free: Vec<u32>,
    next: u64,
}

impl Connections {
    /// Enters an open connection; returns its forwarding identity.
    pub(super) fn register(&mut self, pipe: &Rc<Pipe>) -> Client {
        let connection = self.next;
        self.next += 1;
        let entry = Some((connection, Rc::clone(pipe)));
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = entry;
                slot
            }
            None => {
                self.slots.push(entry);
                (self.slots.len() - 1) as u32
            }
        };
        Client::Tcp { slot, connection }
    }

    /// Removes a closed connection.
    pub(super) fn remove(&mut self, client: Client) {
        let Client::Tcp { slot, connection } = client else {
            return;
        };
        if let Some(entry) = self.slots.get_mut(slot as usize) {
            if entry
                .as_ref()
                .is_some_and(|(number, _)| *number == connection)
            {
                *entry = None;
                self.free.push(slot);
            }
        }
    }

    /// Hands a forwarded answer to connection `connection` in `slot`;
    /// false if it has closed (the answer is dropped).
    pub(crate) fn deliver(&self, slot: u32, connection: u64, answer: Vec<u8>) -> bool {
        match self.slots.get(slot as usize) {
            Some(Some((number, pipe))) if *number == connection => pipe.deliver(answer),
            _ => false,
        }
    }

    /// The client's and our address of connection `connection` in `slot`,
    /// if it is open and dnstap is on.
    pub(crate) fn addresses(&self, slot: u32, connection: u64) -> Option<(SocketAddr, SocketAddr)> {
        match self.slots.get(slot as usize) {
            Some(Some((number, pipe))) if *number == connection => pipe.addresses.get(),
            _ => None,
        }
    }

    /// Open connections in the table.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.slots.iter().flatten().count()
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
    use monoio::net::{TcpListener, TcpStream};

    use super::*;

    /// A forwarded answer reaches its connection while it is open and is
    /// dropped once it has closed, even when a later connection has its
    /// slot; answers beyond those awaited are refused; answers that do not
    /// fit the pending buffer wait for the write half, counted in flight.
    #[test]
    fn forwarded_answers_reach_only_their_own_open_connection() {
        let mut table = Connections::default();
        let first = Rc::new(Pipe::new());
        let first_client = table.register(&first);
        let Client::Tcp { slot, connection } = first_client else {
            panic!("a TCP client");
        };
        assert!(!table.deliver(slot, connection, vec![1; 12]), "not awaited");
        first.forwarded();
        first.forwarded();
        assert_eq!(first.in_flight.get(), 2);
        assert!(table.deliver(slot, connection, vec![1; 65530]));
        assert_eq!((first.queued.get(), first.used.get()), (1, 65532));
        // No room left in `pending`: kept until the write half moves it.
        assert!(table.deliver(slot, connection, vec![2; 12]));
        assert_eq!(first.arrived.borrow().len(), 1);
        assert_eq!(first.in_flight.get(), 2, "still in flight until written");
        first.used.set(0);
        first.move_arrived();
        assert!(first.arrived.borrow().is_empty());
        assert_eq!(first.used.get(), 14);

        first.forwarded();
        table.remove(first_client);
        assert_eq!(table.len(), 0);
        let second = Rc::new(Pipe::new());
        let second_client = table.register(&second);
        second.forwarded();
        assert!(
            matches!(second_client, Client::Tcp { slot: s, connection: c } if s == slot && c != connection)
        );
        assert!(
            !table.deliver(slot, connection, vec![3; 12]),
            "the closed connection's answer is dropped"
        );
        assert_eq!((second.used.get(), second.waiting.get()), (0, 1));
        assert!(
            !table.deliver(slot + 1, connection, vec![3; 12]),
            "no such slot"
        );
        for pipe in [first, second] {
            pool::put(pipe.pending.take());
        }
    }

    /// The read half's wait for input ends when the write half fails (a
    /// client that sent all its queries and reads no answers is closed by
    /// the write timeout, not the idle timeout), and only then: a write
    /// that succeeds does not cancel the read, and input ends it normally.
    #[test]
    fn only_a_failed_write_ends_the_wait_for_input() {
        let mut runtime = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
            .enable_timer()
            .build()
            .unwrap();
        runtime.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut client = TcpStream::connect(listener.local_addr().unwrap())
                .await
                .unwrap();
            let (mut server, _) = listener.accept().await.unwrap();
            let pipe = Rc::new(Pipe::new());

            let waiting = Rc::clone(&pipe);
            let reader = monoio::spawn(async move {
                let (result, buffer) = waiting.unless_failed(server.read(vec![0; 16])).await?;
                Some((result.ok()?, buffer[0], server))
            });
            monoio::time::sleep(Duration::from_millis(20)).await;
            pipe.to_reader.notify(); // as after a successful write
            monoio::time::sleep(Duration::from_millis(20)).await;
            let (result, _) = client.write_all(vec![7]).await;
            result.unwrap();
            let (read, octet, mut server) = reader.await.expect("the read, not a failure");
            assert_eq!((read, octet), (1, 7));

            let waiting = Rc::clone(&pipe);
            let reader = monoio::spawn(async move {
                waiting
                    .unless_failed(server.read(vec![0; 16]))
                    .await
                    .is_none()
            });
            monoio::time::sleep(Duration::from_millis(20)).await;
            pipe.fail();
            let ended = monoio::time::timeout(Duration::from_secs(5), reader).await;
            assert_eq!(ended, Ok(true), "the failure ends the wait");
            // And a wait begun after the failure ends at once.
            assert!(pipe
                .unless_failed(std::future::pending::<()>())
                .await
                .is_none());
        });
    }
}
