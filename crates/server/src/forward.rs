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
//! synchronous (`MSG_DONTWAIT` through std's non-blocking socket), so the
//! UDP loop starts a forward without awaiting; each open socket has a
//! receive task that waits for readiness, drains the socket and feeds
//! every datagram to the forwarder, until its release; a tick task runs
//! the timeouts. TC=1 from an upstream: the query is repeated
//! over TCP in a task of its own. Answers for waiting UDP clients are
//! sent from the listening socket the query arrived on; answers for TCP
//! clients join their connection's queue (`crate::tcp::Connections`).
//!
//! ```text
//!  UDP loop ── Forward ──► worker.forward() ──► Transmit ──► open a socket, send(), spawn its receive task
//!  receive task: readable().await → recv() until empty → on_response() → Answer → send_to(client)
//!                ends on Release (the socket closes)
//!  tick task:    sleep(TICK) → on_timeout() → Transmit (retry) | Answer (stale, SERVFAIL)
//! ```

use std::cell::RefCell;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket as StdUdpSocket};
use std::ops::RangeInclusive;
use std::rc::Rc;
use std::time::Duration;

use hashbrown::HashMap;
use monoio::io::{AsyncReadRentExt, AsyncWriteRentExt};
use monoio::net::udp::UdpSocket;
use monoio::net::TcpStream;
use tern_cache::forward::{Action, Client, ForwardConfig, TcpToken};

use crate::cores::Core;
use crate::dnstap::{self, Kind};
use crate::signal::Notify;
use crate::tcp::Connections;

/// How often the tick task checks the timeouts: a tenth of the default
/// 800 ms timeout, so that a retry leaves at most this late.
const TICK: Duration = Duration::from_millis(20);

/// The largest upstream answer over UDP accepted into the receive buffer.
const MAX_UPSTREAM_DATAGRAM: usize = 65535;

/// Datagrams drained from one upstream socket before the receive task
/// lets the core's other tasks run.
const RECEIVE_BURST: usize = 64;

/// Random source ports tried for a new upstream socket before the kernel
/// is left to pick one (also at random): a port can be in use.
const PORT_ATTEMPTS: usize = 8;

/// Linux's default local port range, used where
/// `/proc/sys/net/ipv4/ip_local_port_range` cannot be read.
const DEFAULT_PORTS: RangeInclusive<u16> = 32768..=60999;

//----------- ForwardIo ------------------------------------------------------

/// An open upstream socket: one UDP transmit's.
struct OpenSocket {
    /// Connected and non-blocking.
    socket: StdUdpSocket,
    /// Fired when the forwarder releases the socket: its task ends.
    released: Notify,
    /// Its local and the upstream's address, for dnstap (when on).
    addresses: Option<(SocketAddr, SocketAddr)>,
}

/// One core's forwarding sockets.
pub(crate) struct ForwardIo {
    /// The open upstream sockets, by (upstream, socket number).
    open: RefCell<HashMap<(usize, usize), Rc<OpenSocket>>>,
    upstreams: Vec<SocketAddr>,
    timeout: Duration,
    /// The source ports drawn from.
    ports: RangeInclusive<u16>,
    /// The listening UDP sockets, by index (answers leave from them).
    listeners: Vec<Rc<UdpSocket>>,
    /// The open TCP connections, where answers for TCP clients go.
    pub(crate) connections: RefCell<Connections>,
    /// Where every receive task of the core reads a datagram: borrowed
    /// only between a `recv` and the forwarder's `on_response`, never
    /// across an await, so one buffer serves all the open sockets.
    receive_buffer: RefCell<Box<[u8]>>,
}

impl ForwardIo {
    /// The forwarding state of a core: no socket is open until a query
    /// leaves.
    pub(crate) fn new(config: &ForwardConfig, listeners: Vec<Rc<UdpSocket>>) -> ForwardIo {
        ForwardIo {
            open: RefCell::new(HashMap::new()),
            upstreams: config.upstreams.clone(),
            timeout: config.timeout,
            ports: local_port_range(),
            listeners,
            connections: RefCell::new(Connections::default()),
            receive_buffer: RefCell::new(vec![0; MAX_UPSTREAM_DATAGRAM].into_boxed_slice()),
        }
    }

    /// Upstream sockets open now.
    pub(crate) fn open_sockets(&self) -> usize {
        self.open.borrow().len()
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

/// The kernel's local port range (`net.ipv4.ip_local_port_range`, which
/// applies to IPv6 too), or Linux's default.
fn local_port_range() -> RangeInclusive<u16> {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| {
            let mut ports = text.split_whitespace().map(|port| port.parse::<u16>().ok());
            let (low, high) = (ports.next()??, ports.next()??);
            (1024 <= low && low <= high).then_some(low..=high)
        })
        .unwrap_or(DEFAULT_PORTS)
}

//----------- dispatch -------------------------------------------------------

/// Carries out the forwarder's actions: UDP transmits now (a full socket
/// buffer drops the datagram; the timeout retries), answers for TCP
/// clients into their connection's queue now (dropped if it has closed),
/// TCP attempts and UDP client answers in a task. Must not be called
/// while the worker is borrowed.
pub(crate) fn dispatch(core: &Rc<Core>, actions: &mut Vec<Action>) {
    let Some(io) = core.forward.as_ref() else {
        actions.clear();
        return;
    };
    let mut answers = Vec::new();
    for action in actions.drain(..) {
        match action {
            Action::Transmit {
                upstream,
                socket,
                bytes,
            } => transmit(core, io, upstream, socket, &bytes),
            Action::Release { upstream, socket } => {
                if let Some(open) = io.open.borrow_mut().remove(&(upstream, socket)) {
                    open.released.notify();
                }
            }
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
                client: Client::Udp { listener, address },
                bytes,
            } => {
                if let Some(tap) = &core.dnstap {
                    let local = tap.udp_local(listener);
                    let time = dnstap::now();
                    tap.log(Kind::ClientResponse, false, address, local, time, &bytes);
                }
                answers.push((listener, address, bytes));
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
    if !answers.is_empty() {
        let core = Rc::clone(core);
        monoio::spawn(async move {
            for (listener, address, bytes) in answers {
                core.worker.borrow_mut().count_forwarded(&bytes);
                let Some(listener) = core
                    .forward
                    .as_ref()
                    .and_then(|io| io.listeners.get(listener))
                else {
                    continue;
                };
                let listener = Rc::clone(listener);
                let (sent, _) = listener.send_to(bytes, address).await;
                if sent.is_err() {
                    core.worker.borrow_mut().count_dropped(0, 1);
                }
            }
        });
    }
}

/// Opens socket `number` for `upstream`, sends `bytes` on it and starts
/// its receive task. On failure (out of descriptors, say) nothing is
/// sent: the forwarder's timeout retries.
fn transmit(core: &Rc<Core>, io: &ForwardIo, upstream: usize, number: usize, bytes: &[u8]) {
    let Some(&address) = io.upstreams.get(upstream) else {
        return;
    };
    let opened = open_socket(address, &io.ports).and_then(|socket| {
        let ready = UdpSocket::from_std(socket.try_clone()?)?;
        Ok((socket, ready))
    });
    let Ok((socket, ready)) = opened else {
        return;
    };
    let sent = socket.send(bytes).is_ok();
    let addresses = core.dnstap.as_ref().and_then(|tap| {
        let local = socket.local_addr().ok()?;
        if sent {
            tap.log(
                Kind::ForwarderQuery,
                false,
                local,
                address,
                dnstap::now(),
                bytes,
            );
        }
        Some((local, address))
    });
    let open = Rc::new(OpenSocket {
        socket,
        released: Notify::default(),
        addresses,
    });
    io.open
        .borrow_mut()
        .insert((upstream, number), Rc::clone(&open));
    monoio::spawn(receive(Rc::clone(core), upstream, number, open, ready));
}

//----------- Tasks ----------------------------------------------------------

/// Receives the answers arriving on one upstream socket until the
/// forwarder releases it or the core stops; then the socket closes.
async fn receive(
    core: Rc<Core>,
    upstream: usize,
    number: usize,
    open: Rc<OpenSocket>,
    ready: UdpSocket,
) {
    let stop = core.stop.listener();
    let mut actions = Vec::new();
    loop {
        let readable = async {
            monoio::select! {
                _ = ready.readable(false) => true,
                _ = open.released.wait() => false,
            }
        };
        if stop.or(readable).await != Some(true) {
            break;
        }
        let Some(io) = core.forward.as_ref() else {
            break;
        };
        for _ in 0..RECEIVE_BURST {
            {
                let mut buffer = io.receive_buffer.borrow_mut();
                let len = match open.socket.recv(&mut buffer) {
                    Ok(len) => len,
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                    // WouldBlock: drained; ECONNREFUSED (ICMP port
                    // unreachable) and others: the timeout handles the query.
                    Err(_) => break,
                };
                if let (Some(tap), Some((local, remote))) = (&core.dnstap, open.addresses) {
                    let time = dnstap::now();
                    let answer = &buffer[..len];
                    tap.log(Kind::ForwarderResponse, false, local, remote, time, answer);
                }
                let now = core.clock();
                if let Some(forwarder) = core.worker.borrow_mut().forwarder() {
                    forwarder.on_response(upstream, number, &buffer[..len], now, &mut actions);
                }
            }
            dispatch(&core, &mut actions);
        }
        crate::signal::yield_now().await;
    }
    if let Some(io) = core.forward.as_ref() {
        // Ended by the core's stop: forget the socket here too.
        let mut sockets = io.open.borrow_mut();
        if sockets
            .get(&(upstream, number))
            .is_some_and(|entry| Rc::ptr_eq(entry, &open))
        {
            sockets.remove(&(upstream, number));
        }
    }
}

/// Runs the forwarder's timeouts every [`TICK`] until the core stops.
pub(crate) async fn tick(core: Rc<Core>) {
    let stop = core.stop.listener();
    let mut actions = Vec::new();
    loop {
        if stop.or(monoio::time::sleep(TICK)).await.is_none() {
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
    let answer = monoio::time::timeout(limit, exchange).await.ok().flatten();
    let mut actions = Vec::new();
    let now = core.clock();
    if let Some(forwarder) = core.worker.borrow_mut().forwarder() {
        forwarder.on_tcp_response(token, answer.as_deref(), now, &mut actions);
    }
    dispatch(&core, &mut actions);
}
