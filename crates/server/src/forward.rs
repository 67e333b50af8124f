//! Forwarding I/O: drives each core's [`Forwarder`] (sans-I/O, in
//! tern-cache) with its own upstream sockets and a timer.
//!
//! Every core owns, per upstream, [`ForwardConfig::sockets`] UDP sockets
//! bound to port 0 (the kernel picks a random ephemeral source port for
//! each) and connected to the upstream, so the kernel delivers only
//! datagrams from the upstream's address and port; the forwarder then
//! checks the ID and the question. Nothing is shared between cores: no
//! socket pool to wait on. Sends are synchronous (`MSG_DONTWAIT` through
//! std's non-blocking socket), so the UDP loop starts a forward without
//! awaiting; each socket has a receive task that waits for readiness,
//! drains the socket and feeds every datagram to the forwarder; a tick
//! task runs the timeouts. TC=1 from an upstream: the query is repeated
//! over TCP in a task of its own. Answers for waiting UDP clients are
//! sent from the listening socket the query arrived on; answers for TCP
//! clients join their connection's queue (`crate::tcp::Connections`).
//!
//! ```text
//!  UDP loop ── Forward ──► worker.forward() ──► Transmit ──► send() on a connected socket
//!  receive task: readable().await → recv() until empty → on_response() → Answer → send_to(client)
//!  tick task:    sleep(TICK) → on_timeout() → Transmit (retry) | Answer (stale, SERVFAIL)
//! ```

use std::cell::RefCell;
use std::io;
use std::net::{SocketAddr, UdpSocket as StdUdpSocket};
use std::rc::Rc;
use std::time::Duration;

use monoio::io::{AsyncReadRentExt, AsyncWriteRentExt};
use monoio::net::udp::UdpSocket;
use monoio::net::TcpStream;
use tern_cache::forward::{Action, Client, ForwardConfig, TcpToken};

use crate::cores::Core;
use crate::tcp::Connections;

/// How often the tick task checks the timeouts: a tenth of the default
/// 800 ms timeout, so that a retry leaves at most this late.
const TICK: Duration = Duration::from_millis(20);

/// The largest upstream answer over UDP accepted into the receive buffer.
const MAX_UPSTREAM_DATAGRAM: usize = 65535;

/// Datagrams drained from one upstream socket before the receive task
/// lets the core's other tasks run.
const RECEIVE_BURST: usize = 64;

//----------- ForwardIo ------------------------------------------------------

/// An upstream socket's readiness handle: (upstream, socket, handle).
pub(crate) type Readiness = (usize, usize, UdpSocket);

/// One core's forwarding sockets.
pub(crate) struct ForwardIo {
    /// Per upstream, its connected non-blocking sockets.
    sockets: Vec<Vec<StdUdpSocket>>,
    upstreams: Vec<SocketAddr>,
    timeout: Duration,
    /// The listening UDP sockets, by index (answers leave from them).
    listeners: Vec<Rc<UdpSocket>>,
    /// The open TCP connections, where answers for TCP clients go.
    pub(crate) connections: RefCell<Connections>,
}

impl ForwardIo {
    /// Binds and connects `config.sockets` sockets per upstream; returns
    /// them with a readiness handle (a duplicate descriptor registered with
    /// this thread's reactor) for each.
    pub(crate) fn bind(
        config: &ForwardConfig,
        listeners: Vec<Rc<UdpSocket>>,
    ) -> io::Result<(ForwardIo, Vec<Readiness>)> {
        let mut sockets = Vec::with_capacity(config.upstreams.len());
        let mut ready = Vec::new();
        for (upstream, &address) in config.upstreams.iter().enumerate() {
            let local: SocketAddr = if address.is_ipv4() {
                ([0, 0, 0, 0], 0).into()
            } else {
                (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
            };
            let mut own = Vec::with_capacity(config.sockets.max(1));
            for socket in 0..config.sockets.max(1) {
                let std_socket = StdUdpSocket::bind(local)?;
                std_socket.connect(address)?;
                std_socket.set_nonblocking(true)?;
                let readiness = UdpSocket::from_std(std_socket.try_clone()?)?;
                ready.push((upstream, socket, readiness));
                own.push(std_socket);
            }
            sockets.push(own);
        }
        let io = ForwardIo {
            sockets,
            upstreams: config.upstreams.clone(),
            timeout: config.timeout,
            listeners,
            connections: RefCell::new(Connections::default()),
        };
        Ok((io, ready))
    }
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
            } => {
                if let Some(socket) = io.sockets.get(upstream).and_then(|s| s.get(socket)) {
                    let _ = socket.send(&bytes);
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
            } => answers.push((listener, address, bytes)),
            Action::Answer {
                client: Client::Tcp { slot, connection },
                bytes,
            } => {
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

//----------- Tasks ----------------------------------------------------------

/// Receives the answers arriving on one upstream socket until the core
/// stops.
pub(crate) async fn receive(core: Rc<Core>, upstream: usize, socket: usize, ready: UdpSocket) {
    let stop = core.stop.listener();
    let mut buffer = vec![0u8; MAX_UPSTREAM_DATAGRAM];
    let mut actions = Vec::new();
    loop {
        if stop.or(ready.readable(false)).await.is_none() {
            break;
        }
        let Some(io) = core.forward.as_ref() else {
            break;
        };
        let Some(std_socket) = io.sockets.get(upstream).and_then(|s| s.get(socket)) else {
            break;
        };
        for _ in 0..RECEIVE_BURST {
            let len = match std_socket.recv(&mut buffer) {
                Ok(len) => len,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                // WouldBlock: drained; ECONNREFUSED (ICMP port
                // unreachable) and others: the timeout handles the query.
                Err(_) => break,
            };
            let now = core.clock();
            if let Some(forwarder) = core.worker.borrow_mut().forwarder() {
                forwarder.on_response(upstream, socket, &buffer[..len], now, &mut actions);
            }
            dispatch(&core, &mut actions);
        }
        crate::signal::yield_now().await;
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
        let mut framed = Vec::with_capacity(query.len() + 2);
        framed.extend_from_slice(&(query.len() as u16).to_be_bytes());
        framed.extend_from_slice(&query);
        let (written, _) = stream.write_all(framed).await;
        written.ok()?;
        let (read, length) = stream.read_exact(vec![0u8; 2]).await;
        read.ok()?;
        let length = usize::from(u16::from_be_bytes([length[0], length[1]]));
        let (read, answer) = stream.read_exact(vec![0u8; length]).await;
        read.ok()?;
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
