//! Forwarding I/O: drives each core's [`Forwarder`] (sans-I/O, in
//! tern-cache) with its own upstream sockets and a timer.
//!
//! Every UDP transmit gets a socket of its own (as Unbound's), bound to a
//! source port drawn from the CSPRNG within the kernel's local port range
//! and connected to the upstream, so the kernel delivers only datagrams
//! from the upstream's address and port; the forwarder then checks the
//! ID, the question and the upstream's DNS cookie. The socket closes when
//! the forwarder releases it (answered, abandoned or timed out), so an
//! off-path forger cannot learn a port before the query leaves
//! (docs/security.md). Nothing is shared between cores. Sends are
//! synchronous (`MSG_DONTWAIT`), so the UDP loop starts a forward
//! without awaiting. The open sockets of a core are members of one epoll
//! set (level-triggered), whose descriptor the reactor watches: one
//! receive task waits until any member is readable, drains the readable
//! ones and feeds every datagram to the forwarder. A tick task runs the
//! timeouts. TC=1 from an upstream: the query is repeated over TCP in a
//! task of its own. Answers for waiting UDP clients are sent at once from
//! the listening socket the query arrived on (in a task of their own only
//! if its buffer is full); answers for TCP clients join their
//! connection's queue (`crate::tcp::Connections`).
//!
//! ```text
//!  UDP loop ── Forward ──► worker.forward() ──► Transmit ──► open a socket, add it to the set, send()
//!  receive task: set readable().await → each readable socket: recv() until empty
//!                → on_response() → Answer → sendto(client) │ Release → close the socket
//!  tick task:    sleep(TICK) → on_timeout() → Transmit (retry) | Answer (stale, SERVFAIL)
//! ```
//!
//! Memory (issue 22): a forwarded miss allocates nothing on the core
//! once the core has seen as many questions in flight as it will. The
//! sockets' table and the map from the forwarder's socket numbers are
//! made at start for up to [`RESERVED_SOCKETS`](sockets::RESERVED_SOCKETS) open sockets; the set
//! needs no reactor object per socket (monoio allocates one for each
//! socket it wraps); one receive buffer serves every socket; the lists of
//! actions are lent and given back ([`Actions`]); and the bytes of every
//! action go back to the forwarder once sent (`Forwarder::recycle`).
//! What still allocates: an answer whose listening socket's buffer is
//! full (it waits in a task), and TCP (the attempt's task and buffers,
//! and answers queued on a client's connection).

use std::cell::RefMut;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket as StdUdpSocket};
use std::ops::{Deref, DerefMut, RangeInclusive};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::Duration;

use monoio::io::{AsyncReadRentExt, AsyncWriteRentExt};
use monoio::net::TcpStream;
use tern_cache::forward::{Action, Client, TcpToken};
use tern_dnstap::{self as dnstap, Kind};

use crate::core::Core;
use crate::sys;

pub(crate) mod sockets;

use sockets::{ForwardIo, RESERVED_ACTIONS};

/// How often the tick task checks the timeouts: a tenth of the default
/// 800 ms timeout, so that a retry leaves at most this late.
const TICK: Duration = Duration::from_millis(20);

/// Datagrams drained from one upstream socket before the receive task
/// turns to the next (a socket left readable is reported again).
const RECEIVE_BURST: usize = 64;

/// Random source ports tried for a new upstream socket before the kernel
/// is left to pick one (also at random): a port can be in use.
const PORT_ATTEMPTS: usize = 8;

//----------- Actions --------------------------------------------------------

/// A list for the forwarder's actions, lent by the core (to a UDP loop's
/// batch, say) and given back, its memory with it, when dropped: a batch
/// that forwards allocates no list. Lending costs a borrow flag's check,
/// not a move of the list (the batches of cache hits take one too).
pub(crate) enum Actions<'c> {
    /// The core's list.
    Lent(RefMut<'c, Vec<Action>>),
    /// A list of its own: forwarding is off (it never grows), or the
    /// core's is lent already.
    Own(Vec<Action>),
}

/// Lends the core's list of actions (empty); see [`Actions`].
pub(crate) fn actions(core: &Core) -> Actions<'_> {
    match core.forward.as_ref().map(|io| io.actions.try_borrow_mut()) {
        Some(Ok(list)) => Actions::Lent(list),
        _ => Actions::Own(Vec::new()),
    }
}

impl Deref for Actions<'_> {
    type Target = Vec<Action>;

    fn deref(&self) -> &Vec<Action> {
        match self {
            Actions::Lent(list) => list,
            Actions::Own(list) => list,
        }
    }
}

impl DerefMut for Actions<'_> {
    fn deref_mut(&mut self) -> &mut Vec<Action> {
        match self {
            Actions::Lent(list) => list,
            Actions::Own(list) => list,
        }
    }
}

impl Drop for Actions<'_> {
    /// Actions never dispatched are dropped, not left to the next
    /// borrower.
    fn drop(&mut self) {
        if !self.is_empty() {
            self.clear();
        }
    }
}

/// A non-blocking UDP socket connected to `upstream`, bound to a source
/// port drawn at random from `ports` (or, if those are taken, one the
/// kernel picks).
fn open_socket(upstream: SocketAddr, ports: &RangeInclusive<u16>) -> io::Result<StdUdpSocket> {
    use rand::Rng;
    let ip: IpAddr = if upstream.is_ipv4() {
        Ipv4Addr::UNSPECIFIED.into()
    } else {
        Ipv6Addr::UNSPECIFIED.into()
    };
    let mut bound = None;
    let mut random = rand::rng();
    for _ in 0..PORT_ATTEMPTS {
        let port = random.random_range(ports.clone());
        match StdUdpSocket::bind((ip, port)) {
            Ok(socket) => {
                bound = Some(socket);
                break;
            }
            Err(err) if err.kind() == io::ErrorKind::AddrInUse => continue,
            Err(err) => return Err(err),
        }
    }
    let socket = match bound {
        Some(socket) => socket,
        None => StdUdpSocket::bind((ip, 0))?,
    };
    socket.connect(upstream)?;
    socket.set_nonblocking(true)?;
    Ok(socket)
}

//----------- dispatch -------------------------------------------------------

/// Carries out the forwarder's actions: UDP transmits now (a full socket
/// buffer drops the datagram; the timeout retries), answers for UDP
/// clients now (in a task if the listening socket's buffer is full),
/// answers for TCP clients into their connection's queue now (dropped if
/// it has closed), TCP attempts in a task. The bytes of the actions done
/// go back to the forwarder. Must not be called while the worker is
/// borrowed.
pub(crate) fn dispatch(core: &Rc<Core>, actions: &mut Vec<Action>) {
    let Some(io) = core.forward.as_ref() else {
        actions.clear();
        return;
    };
    for action in actions.drain(..) {
        match action {
            Action::Transmit {
                upstream,
                socket,
                bytes,
            } => {
                transmit(core, io, upstream, socket, &bytes);
                recycle(core, bytes);
            }
            Action::Release { upstream, socket } => io.close(upstream, socket),
            Action::TransmitTcp {
                upstream,
                token,
                bytes,
            } => {
                if let Some(&address) = io.upstreams.get(upstream) {
                    monoio::spawn(tcp_attempt(Rc::clone(core), address, token, bytes));
                }
            }
            Action::Answer {
                client:
                    Client::Udp {
                        listener,
                        address,
                        behind,
                    },
                bytes,
            } => {
                if let Some(tap) = &core.dnstap {
                    // The client behind a proxy, as the query's entry
                    // named it; the answer goes to the proxy.
                    let client = behind.unwrap_or(address);
                    let local = tap.udp_local(listener);
                    let time = dnstap::now();
                    tap.log(Kind::ClientResponse, false, client, local, time, &bytes);
                }
                answer_udp(core, io, listener, address, bytes);
            }
            Action::Answer {
                client: Client::Tcp { slot, connection },
                bytes,
            } => {
                if let Some(tap) = &core.dnstap {
                    let addresses = io.connections.borrow().addresses(slot, connection);
                    if let Some((client, local)) = addresses {
                        let time = dnstap::now();
                        tap.log(Kind::ClientResponse, true, client, local, time, &bytes);
                    }
                }
                let mut worker = core.worker.borrow_mut();
                worker.count_forwarded(&bytes);
                if !io.connections.borrow().deliver(slot, connection, bytes) {
                    worker.count_dropped(0, 1);
                }
            }
        }
    }
}

/// Gives an action's bytes back to the forwarder.
fn recycle(core: &Core, bytes: Vec<u8>) {
    if let Some(forwarder) = core.worker.borrow_mut().forwarder() {
        forwarder.recycle(bytes);
    }
}

/// Sends a forwarded answer to `address` from listening socket
/// `listener`, at once; if the socket's buffer is full, from a task that
/// waits for room (which allocates: rare).
fn answer_udp(
    core: &Rc<Core>,
    io: &ForwardIo,
    listener: usize,
    address: SocketAddr,
    bytes: Vec<u8>,
) {
    let Some(socket) = io.listeners.get(listener) else {
        recycle(core, bytes);
        return;
    };
    match sys::send_now(socket.as_raw_fd(), &bytes, address) {
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
            ) =>
        {
            let socket = Rc::clone(socket);
            let core = Rc::clone(core);
            monoio::spawn(async move {
                core.worker.borrow_mut().count_forwarded(&bytes);
                let (sent, bytes) = socket.send_to(bytes, address).await;
                if sent.is_err() {
                    core.worker.borrow_mut().count_dropped(0, 1);
                }
                recycle(&core, bytes);
            });
        }
        sent => {
            let mut worker = core.worker.borrow_mut();
            worker.count_forwarded(&bytes);
            if sent.is_err() {
                worker.count_dropped(0, 1);
            }
            if let Some(forwarder) = worker.forwarder() {
                forwarder.recycle(bytes);
            }
        }
    }
}

/// Opens socket `number` for `upstream`, adds it to the set and sends
/// `bytes` on it. On failure (out of descriptors, say) nothing is sent:
/// the forwarder's timeout retries.
fn transmit(core: &Rc<Core>, io: &ForwardIo, upstream: usize, number: usize, bytes: &[u8]) {
    let Some(&address) = io.upstreams.get(upstream) else {
        return;
    };
    let Ok(socket) = open_socket(address, &io.ports) else {
        return;
    };
    let addresses = core.dnstap.as_ref().and_then(|_| {
        let local = socket.local_addr().ok()?;
        Some((local, address))
    });
    let sent = io.open(socket, upstream, number, addresses, bytes) == Some(true);
    if let (Some(tap), Some((local, _)), true) = (&core.dnstap, addresses, sent) {
        tap.log(
            Kind::ForwarderQuery,
            false,
            local,
            address,
            dnstap::now(),
            bytes,
        );
    }
}

//----------- Tasks ----------------------------------------------------------

/// The core's forwarding task: receives the upstreams' answers and runs
/// the timeouts, until the core stops.
pub(crate) async fn tick(core: Rc<Core>) {
    monoio::join!(receive(Rc::clone(&core)), timeouts(core));
}

/// Waits until an open upstream socket is readable, then drains each
/// readable one ([`RECEIVE_BURST`] datagrams at most, then the next) and
/// feeds every datagram to the forwarder; until the core stops.
async fn receive(core: Rc<Core>) {
    let Some(io) = core.forward.as_ref() else {
        return;
    };
    let stop = core.stop.listener();
    let mut actions = Vec::with_capacity(RESERVED_ACTIONS);
    loop {
        if stop.or(io.readiness.readable(false)).await.is_none() {
            break;
        }
        let ready = io.set.borrow_mut().poll().unwrap_or(0);
        for i in 0..ready {
            let Some(index) = io.set.borrow().token(i) else {
                break;
            };
            drain(&core, io, index, &mut actions);
        }
        crate::signal::yield_now().await;
    }
}

/// Receives up to [`RECEIVE_BURST`] datagrams from the socket at `index`
/// of the table (if it is still open) and hands each to the forwarder.
fn drain(core: &Rc<Core>, io: &ForwardIo, index: u64, actions: &mut Vec<Action>) {
    for _ in 0..RECEIVE_BURST {
        {
            let sockets = io.sockets.borrow();
            let Some(Some(open)) = sockets.table.get(index as usize) else {
                return;
            };
            let mut buffer = io.receive_buffer.borrow_mut();
            let len = match open.socket.recv(&mut buffer) {
                Ok(len) => len,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock: drained; ECONNREFUSED (ICMP port
                // unreachable) and others: the timeout handles the query.
                Err(_) => return,
            };
            if let (Some(tap), Some((local, remote))) = (&core.dnstap, open.addresses) {
                let time = dnstap::now();
                let answer = &buffer[..len];
                tap.log(Kind::ForwarderResponse, false, local, remote, time, answer);
            }
            let (upstream, number) = (open.upstream, open.number);
            drop(sockets);
            let now = core.clock();
            if let Some(forwarder) = core.worker.borrow_mut().forwarder() {
                forwarder.on_response(upstream, number, &buffer[..len], now, actions);
            }
        }
        dispatch(core, actions);
    }
}

/// Runs the forwarder's timeouts every [`TICK`] until the core stops.
async fn timeouts(core: Rc<Core>) {
    let stop = core.stop.listener();
    let mut actions = Vec::with_capacity(RESERVED_ACTIONS);
    // A timer of the loop's own, set every tick; without one (no
    // descriptor left), the core's shared one (`deadline::sleep`).
    let timer = crate::timer::Timer::new().ok();
    loop {
        let tick = async {
            let slept = match &timer {
                Some(timer) => timer.sleep(TICK).await.is_ok(),
                None => false,
            };
            if !slept {
                crate::tcp::deadline::sleep(TICK).await;
            }
        };
        if stop.or(tick).await.is_none() {
            break;
        }
        if core.forward.is_none() {
            break;
        }
        let now = core.clock();
        if let Some(forwarder) = core.worker.borrow_mut().forwarder() {
            forwarder.on_timeout(now, &mut actions);
            if forwarder.has_prefetches() {
                forwarder.prefetches(now, &mut actions);
            }
        }
        dispatch(&core, &mut actions);
    }
}

/// One TCP attempt: connect, send the framed query, read one framed
/// answer, all within twice the timeout; the result goes to the
/// forwarder.
async fn tcp_attempt(core: Rc<Core>, address: SocketAddr, token: TcpToken, query: Vec<u8>) {
    let Some(io) = core.forward.as_ref() else {
        return;
    };
    let limit = io.timeout * 2;
    let exchange = async {
        let mut stream = TcpStream::connect_addr(address).await.ok()?;
        let tap = core
            .dnstap
            .as_ref()
            .and_then(|tap| Some((tap, stream.local_addr().ok()?)));
        let mut framed = Vec::with_capacity(query.len() + 2);
        framed.extend_from_slice(&(query.len() as u16).to_be_bytes());
        framed.extend_from_slice(&query);
        let (written, _) = stream.write_all(framed).await;
        written.ok()?;
        if let Some((tap, local)) = tap {
            tap.log(
                Kind::ForwarderQuery,
                true,
                local,
                address,
                dnstap::now(),
                &query,
            );
        }
        let (read, length) = stream.read_exact(vec![0u8; 2]).await;
        read.ok()?;
        let length = usize::from(u16::from_be_bytes([length[0], length[1]]));
        let (read, answer) = stream.read_exact(vec![0u8; length]).await;
        read.ok()?;
        if let Some((tap, local)) = tap {
            let time = dnstap::now();
            tap.log(Kind::ForwarderResponse, true, local, address, time, &answer);
        }
        Some(answer)
    };
    let answer = crate::tcp::deadline::timeout(limit, std::pin::pin!(exchange))
        .await
        .ok()
        .flatten();
    let mut actions = Vec::new();
    let now = core.clock();
    if let Some(forwarder) = core.worker.borrow_mut().forwarder() {
        forwarder.on_tcp_response(token, answer.as_deref(), now, &mut actions);
        forwarder.recycle(query);
    }
    dispatch(&core, &mut actions);
}
