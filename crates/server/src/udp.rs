//! The UDP loop: wait until the socket is readable, receive a batch with
//! one `recvmmsg`, answer each datagram synchronously, send the answers
//! with one `sendmmsg`, and repeat while batches of more than one
//! datagram keep coming (a full batch, or a partial one that suggests the
//! next queries are already on their way: [`RECEIVE_AGAIN_AFTER`]).
//!
//! The reactor (io_uring or epoll) is used only for the readiness wait;
//! the datagrams never pass through it (see [`crate::sys`] for why). The
//! buffers are taken from the core's pool when the loop starts and kept
//! for its life: receiving and answering allocate nothing.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;

use monoio::net::udp::UdpSocket;
use tern_cache::forward::Client;
use tern_dnstap::{self as dnstap, Kind};
use tern_wire::query::Query;

use crate::core::Core;
use crate::forward;
use crate::pool::{self, Size};
use crate::signal::{yield_now, StopListener};
use crate::sys::{Batch, BATCH};
use crate::worker::UdpAnswer;

/// Full batches answered back to back before the loop lets the core's
/// other tasks (TCP, the other sockets, control) run. 16 batches of 32 is
/// about a millisecond of work: long enough to keep the syscall savings,
/// short enough that TCP and reloads do not wait noticeably.
const BATCHES_BEFORE_YIELD: usize = 16;

/// A receive that brought at least this many datagrams, but not a full
/// batch, is followed by another receive before the loop waits for the
/// socket to become readable: queries arriving that fast are likely to have
/// come in while the batch was answered, and the receive that finds them
/// costs less than a wait for readiness (the reactor's poll operation, its
/// park, the task's poll and this loop's own turn: about 1,250 user-space
/// instructions, see docs/benchmarks.md). A single datagram is taken as a
/// quiet socket: the loop waits, as one failed receive per query would
/// cost a system call for nothing.
const RECEIVE_AGAIN_AFTER: usize = 2;

/// How many times one batch's send waits for the socket to become
/// writable before the rest of its answers is dropped (the client will
/// retry); bounds the time a stalled send buffer can hold the loop.
const SEND_WAITS: usize = 3;

//----------- serve ----------------------------------------------------------

/// Serves one UDP socket (the core's listener number `index`) until the
/// core stops; `proxied`: a `proxy.listen` socket, whose datagrams each
/// start with a PROXY header ([`crate::proxy`]).
pub(crate) async fn serve(
    socket: Rc<UdpSocket>,
    index: usize,
    proxied: bool,
    core: Rc<Core>,
) -> io::Result<()> {
    let stop = core.stop.listener();
    // The stop ends the readiness wait by shutting the socket for reading
    // (it stays readable from then on): the wait below needs no race
    // against the listener, only a look at it once it ends.
    core.stop.shut_on_fire(&socket);
    let mut udp = Exchange {
        // The batch owns the receive buffers: its I/O vectors point at
        // them once, not at every receive.
        batch: Batch::new((0..BATCH).map(|_| pool::take(Size::Datagram)).collect()),
        answers: (0..BATCH).map(|_| pool::take(Size::Datagram)).collect(),
        sends: [(0, 0); BATCH],
        count: 0,
        updates: Vec::new(),
        fd: socket.as_raw_fd(),
        index,
        proxied,
        // The slot of UDP over this socket's family in the transport
        // counters.
        transport: match socket.local_addr() {
            Ok(address) if address.is_ipv6() => 1,
            _ => 0,
        },
        core,
    };
    'serve: loop {
        // Readiness errors (none are expected on a bound UDP socket) are
        // ignored: the receive below reports the socket's real state.
        let _ = socket.readable(false).await;
        if stop.fired() {
            break;
        }
        for batches in 1.. {
            let (received, sent) = match exchange(&mut udp) {
                Ok(exchanged) => exchanged,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock: drained. Anything else (ENOMEM, a pending
                // ICMP error): wait for readiness rather than spin.
                Err(_) => break,
            };
            // The usual send took every answer at once; only a full send
            // buffer makes the loop wait (`send_waiting`, the async part).
            if sent < udp.count {
                let rest = &udp.sends[sent..udp.count];
                let (batch, answers) = (&mut udp.batch, &udp.answers);
                send_waiting(&socket, batch, answers, rest, &stop, &udp.core).await;
            }
            if !udp.updates.is_empty() {
                crate::update::answer_udp(udp.core.updates.as_ref(), &socket, &mut udp.updates);
            }
            if received < RECEIVE_AGAIN_AFTER {
                break; // the socket's queue is empty, or nearly
            }
            if stop.fired() {
                break 'serve;
            }
            if batches % BATCHES_BEFORE_YIELD == 0 {
                yield_now().await;
            }
        }
    }
    for buffer in udp.batch.into_buffers().into_iter().chain(udp.answers) {
        pool::put(buffer);
    }
    Ok(())
}

/// What [`exchange`] works with: the loop's buffers and descriptors and
/// the listener it serves, in one place, so that a batch's call passes
/// one pointer rather than a copy of each (and its result comes back in
/// registers).
struct Exchange {
    batch: Batch,
    /// The answer buffers, one per slot of the batch.
    answers: Vec<Vec<u8>>,
    /// `(slot, answer length)` of the last batch's answers to send:
    /// `sends[..count]`.
    sends: [(usize, usize); BATCH],
    count: usize,
    /// UPDATEs of the last batch, handed off once its answers are sent.
    updates: Vec<(crate::worker::PendingUpdate, std::net::SocketAddr)>,
    fd: RawFd,
    /// The socket's index among the core's listeners.
    index: usize,
    /// A `proxy.listen` socket.
    proxied: bool,
    /// The slot of UDP over the socket's family in the transport counters.
    transport: usize,
    core: Rc<Core>,
}

/// Receives a batch without waiting, answers it and sends the answers as
/// far as the socket takes them: all a batch that does not wait does, in
/// one plain function, so that the loop's async state is read once a
/// batch rather than at each step. Returns the datagrams received and
/// how many of the answers to send (`udp.sends[..udp.count]`) are done
/// with (all, unless the socket's send buffer was full); `WouldBlock` (or
/// another error of the receive) if nothing was received.
fn exchange(udp: &mut Exchange) -> io::Result<(usize, usize)> {
    let received = udp.batch.receive(udp.fd)?;
    let listener = (udp.index, udp.proxied, udp.transport);
    let lent = (&mut udp.answers[..], &mut udp.updates);
    let count = answer_batch(
        &udp.core,
        listener,
        &udp.batch,
        lent,
        received,
        &mut udp.sends,
    );
    udp.count = count;
    let sent = send_batch(
        &mut udp.batch,
        udp.fd,
        &udp.answers,
        &udp.sends[..count],
        &udp.core,
    );
    Ok((received, sent))
}

/// Answers the `received` datagrams of a batch; `sends[..count]` then
/// lists `(slot, answer length)` of the answers to send, in order.
/// Queries to forward start their upstream queries here (sends without
/// waiting); their answers leave later, from the forwarding tasks.
/// `listener`: the socket's index, whether it is proxied and its slot in
/// the transport counters. A proxied
/// datagram's header is checked and taken off here: the client it names
/// is the client of every later stage, and the answer still goes to the
/// datagram's source (the proxy), without a header.
fn answer_batch(
    core: &Rc<Core>,
    (index, proxied, transport): (usize, bool, usize),
    batch: &Batch,
    (answers, updates): (
        &mut [Vec<u8>],
        &mut Vec<(crate::worker::PendingUpdate, std::net::SocketAddr)>,
    ),
    received: usize,
    sends: &mut [(usize, usize); BATCH],
) -> usize {
    let mut worker = core.worker.borrow_mut();
    worker.count_transport(transport, received as u64);
    let mut count = 0;
    let rate_limiting = worker.rate_limiting();
    let now = core.now(rate_limiting);
    worker.tick_cookie_clock();
    // dnstap: one branch per batch when off; the clock read once a batch.
    let tap = core.dnstap.as_ref().map(|tap| (tap, dnstap::now()));
    // The core's list, lent for the rest of the batch at its first use
    // (forwarding allocates none); a batch that forwards nothing (all of
    // them without forwarding) does not take it.
    let mut actions = None;
    let received = received.min(answers.len());
    for (slot, answer) in answers[..received].iter_mut().enumerate() {
        let Some(datagram) = batch.datagram(slot) else {
            // Longer than the receive buffer: no DNS query is.
            worker.count_dropped(1, 0);
            continue;
        };
        let (query, client) = if proxied {
            let unwrapped = crate::proxy::datagram(&core.proxy_allow, batch.peer(slot), datagram);
            match core.proxy.count(unwrapped) {
                Some((client, query)) => (query, Some(client)),
                None => continue,
            }
        } else {
            (datagram, None)
        };
        // Parsed once: every stage of the worker takes it.
        let parsed = Query::parse(query);
        // The worker reads the address only if it needs it.
        let peer = || client.or_else(|| batch.peer(slot));
        let outcome = worker.answer_udp_lazy(&parsed, &peer, now, answer);
        let forwarded = matches!(outcome, UdpAnswer::Forward);
        let answer_len = match outcome {
            UdpAnswer::Send(answer_len) => Some(answer_len),
            UdpAnswer::Drop => None,
            // Answered from a task of its own, to the datagram's source.
            UdpAnswer::Update => {
                if let (Some(update), Some(source)) = (worker.take_update(), batch.peer(slot)) {
                    updates.push((update, source));
                }
                None
            }
            // The forwarded answer goes where this one would: to the
            // datagram's source.
            UdpAnswer::Forward => batch.peer(slot).and_then(|address| {
                let client = Client::Udp {
                    listener: index,
                    address,
                    behind: client,
                };
                let actions = actions.get_or_insert_with(|| forward::actions(core));
                worker.forward_query(&parsed, client, now, actions, answer)
            }),
        };
        if let Some((tap, time)) = tap {
            let answer = answer_len.map(|len| &answer[..len]);
            log_exchange(tap, time, peer(), index, forwarded, query, answer);
        }
        if let Some(answer_len) = answer_len {
            sends[count] = (slot, answer_len);
            count += 1;
        }
    }
    if let Some(forwarder) = worker.forwarder() {
        if forwarder.has_prefetches() {
            let actions = actions.get_or_insert_with(|| forward::actions(core));
            forwarder.prefetches(now, actions);
        }
    }
    drop(worker);
    if let Some(actions) = &mut actions {
        if !actions.is_empty() {
            forward::dispatch(core, actions);
        }
    }
    count
}

/// Logs one query and its answer, if any, to dnstap: out of line, so the
/// answer loop stays as it is when dnstap is off.
#[cold]
#[inline(never)]
pub(crate) fn log_exchange(
    tap: &dnstap::Tap,
    time: std::time::Duration,
    client: Option<std::net::SocketAddr>,
    index: usize,
    forwarded: bool,
    query: &[u8],
    answer: Option<&[u8]>,
) {
    let Some(client) = client else {
        return;
    };
    let local = tap.udp_local(index);
    tap.log(Kind::query(forwarded), false, client, local, time, query);
    if let Some(answer) = answer {
        tap.log(
            Kind::response(forwarded),
            false,
            client,
            local,
            time,
            answer,
        );
    }
}

/// Sends the answers of a batch without waiting, continuing after
/// partial sends and skipping an answer the kernel refuses (an unreachable
/// peer address, for one). Returns how many of `sends` are done with (sent,
/// skipped, or dropped and counted): all of them, unless the socket's
/// buffer is full, when the rest is for [`send_waiting`].
#[inline(always)]
fn send_batch(
    batch: &mut Batch,
    fd: RawFd,
    answers: &[Vec<u8>],
    sends: &[(usize, usize)],
    core: &Core,
) -> usize {
    let mut next = 0;
    // Each pass sends at least one answer or skips one, returns, or
    // repeats a send interrupted by a signal.
    while next < sends.len() {
        match batch.send(fd, answers, &sends[next..]) {
            Ok(0) => break,
            Ok(sent) => next += sent,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => return next,
            Err(_) => {
                core.worker.borrow_mut().count_dropped(0, 1);
                next += 1;
            }
        }
    }
    if next < sends.len() {
        let unsent = (sends.len() - next) as u64;
        core.worker.borrow_mut().count_dropped(0, unsent);
    }
    sends.len()
}

/// Sends the answers [`send_batch`] could not because the socket's buffer
/// was full: waits (at most [`SEND_WAITS`] times) for the socket to become
/// writable and sends again; what is still unsent then, or when the core
/// stops, is dropped and counted.
async fn send_waiting(
    socket: &UdpSocket,
    batch: &mut Batch,
    answers: &[Vec<u8>],
    sends: &[(usize, usize)],
    stop: &StopListener,
    core: &Core,
) {
    let fd = socket.as_raw_fd();
    let mut next = 0;
    for _ in 0..SEND_WAITS {
        if stop.or(socket.writable(false)).await.is_none() {
            break;
        }
        next += send_batch(batch, fd, answers, &sends[next..], core);
        if next == sends.len() {
            return;
        }
    }
    let unsent = (sends.len() - next) as u64;
    core.worker.borrow_mut().count_dropped(0, unsent);
}
