//! One core's forwarding sockets ([`ForwardIo`]): the table of open
//! upstream sockets and their epoll set, the listening sockets answers
//! leave from and the TCP connections they reach. The tasks that drive
//! them are in `forward.rs`; this part is apart because [`Core`] holds it
//! and those tasks take `Core`, so that every arrow between the three
//! files points one way (STYLE.md 1.5).
//!
//! [`Core`]: crate::core::Core

use std::cell::RefCell;
use std::io;
use std::net::{SocketAddr, UdpSocket as StdUdpSocket};
use std::ops::RangeInclusive;
use std::rc::Rc;
use std::time::Duration;

use hashbrown::HashMap;
use monoio::net::udp::UdpSocket;
use tern_cache::forward::{Action, ForwardConfig, Policy};

use crate::sys::Epoll;
use crate::tcp::connections::Connections;

/// The largest upstream answer over UDP accepted into the receive buffer.
const MAX_UPSTREAM_DATAGRAM: usize = 65535;

/// Readable upstream sockets taken from the set per wait.
const READY_BATCH: usize = 64;

/// Open upstream sockets the core's table is made for at start (fewer if
/// the forwarder can never have so many: `max-in-flight` times the
/// upstreams of a race). Past it, the table grows once to the most open
/// at once.
pub(super) const RESERVED_SOCKETS: usize = 1024;

/// Actions a lent list holds before it grows (once).
pub(super) const RESERVED_ACTIONS: usize = 64;

/// Linux's default local port range, used where
/// `/proc/sys/net/ipv4/ip_local_port_range` cannot be read.
const DEFAULT_PORTS: RangeInclusive<u16> = 32768..=60999;

//----------- ForwardIo ------------------------------------------------------

/// An open upstream socket: one UDP transmit's.
pub(super) struct OpenSocket {
    /// Connected and non-blocking; a member of the core's set.
    pub(super) socket: StdUdpSocket,
    /// The forwarder's upstream index and socket number.
    pub(super) upstream: usize,
    pub(super) number: usize,
    /// Its local and the upstream's address, for dnstap (when on).
    pub(super) addresses: Option<(SocketAddr, SocketAddr)>,
}

/// The open upstream sockets of a core: a table whose index is the
/// socket's token in the set, and the forwarder's numbers for them.
pub(super) struct Sockets {
    pub(super) table: Vec<Option<OpenSocket>>,
    /// Free indices of `table`.
    free: Vec<u32>,
    /// (upstream, socket number) -> index.
    by_number: HashMap<(usize, usize), u32>,
}

/// One core's forwarding sockets.
pub(crate) struct ForwardIo {
    pub(super) sockets: RefCell<Sockets>,
    /// The open sockets as one descriptor.
    pub(super) set: RefCell<Epoll>,
    /// The set's descriptor, as the reactor waits for it.
    pub(super) readiness: monoio::net::unix::UnixDatagram,
    pub(super) upstreams: Vec<SocketAddr>,
    pub(super) timeout: Duration,
    /// The source ports drawn from.
    pub(super) ports: RangeInclusive<u16>,
    /// The listening UDP sockets, by index (answers leave from them).
    pub(super) listeners: Vec<Rc<UdpSocket>>,
    /// The open TCP connections, where answers for TCP clients go.
    pub(crate) connections: RefCell<Connections>,
    /// Where the receive task reads a datagram: borrowed only between a
    /// `recv` and the forwarder's `on_response`, never across an await,
    /// so one buffer serves all the open sockets.
    pub(super) receive_buffer: RefCell<Box<[u8]>>,
    /// The list [`actions`](super::actions) lends.
    pub(super) actions: RefCell<Vec<Action>>,
}

impl ForwardIo {
    /// The forwarding state of a core: no socket is open until a query
    /// leaves. Fails if the system refuses the epoll set.
    pub(crate) fn new(
        config: &ForwardConfig,
        listeners: Vec<Rc<UdpSocket>>,
    ) -> io::Result<ForwardIo> {
        let per_question = if config.policy == Policy::Race {
            config.race.min(config.upstreams.len()).max(1)
        } else {
            1
        };
        let sockets = config
            .max_in_flight
            .saturating_mul(per_question)
            .min(RESERVED_SOCKETS);
        let set = Epoll::new(READY_BATCH)?;
        let readiness = set.readiness()?;
        Ok(ForwardIo {
            sockets: RefCell::new(Sockets {
                table: Vec::with_capacity(sockets),
                free: Vec::with_capacity(sockets),
                by_number: HashMap::with_capacity(sockets.saturating_mul(2)),
            }),
            set: RefCell::new(set),
            readiness,
            upstreams: config.upstreams.clone(),
            timeout: config.timeout,
            ports: local_port_range(),
            listeners,
            connections: RefCell::new(Connections::default()),
            receive_buffer: RefCell::new(vec![0; MAX_UPSTREAM_DATAGRAM].into_boxed_slice()),
            actions: RefCell::new(Vec::with_capacity(RESERVED_ACTIONS)),
        })
    }

    /// Upstream sockets open now.
    pub(crate) fn open_sockets(&self) -> usize {
        self.sockets.borrow().by_number.len()
    }

    /// Adds `socket` to the table and the set as the forwarder's socket
    /// `number` of `upstream`, then sends `bytes` on it (after: an answer
    /// that comes at once is seen); returns whether they were sent. If
    /// the set refuses it, the socket closes unused: the forwarder's
    /// timeout retries.
    pub(super) fn open(
        &self,
        socket: StdUdpSocket,
        upstream: usize,
        number: usize,
        addresses: Option<(SocketAddr, SocketAddr)>,
        bytes: &[u8],
    ) -> Option<bool> {
        let mut sockets = self.sockets.borrow_mut();
        let index = match sockets.free.pop() {
            Some(index) => index,
            None => {
                sockets.table.push(None);
                u32::try_from(sockets.table.len() - 1).ok()?
            }
        };
        if self.set.borrow().add(&socket, u64::from(index)).is_err() {
            sockets.free.push(index);
            return None;
        }
        let sent = socket.send(bytes).is_ok();
        sockets.table[index as usize] = Some(OpenSocket {
            socket,
            upstream,
            number,
            addresses,
        });
        sockets.by_number.insert((upstream, number), index);
        Some(sent)
    }

    /// Closes the forwarder's socket `number` of `upstream` (it leaves
    /// the set as it closes).
    pub(super) fn close(&self, upstream: usize, number: usize) {
        let mut sockets = self.sockets.borrow_mut();
        let Some(index) = sockets.by_number.remove(&(upstream, number)) else {
            return;
        };
        if let Some(entry) = sockets.table.get_mut(index as usize) {
            *entry = None;
        }
        sockets.free.push(index);
    }
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
