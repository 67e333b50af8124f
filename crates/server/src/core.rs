//! What the tasks of one core share: the [`Core`] each of them holds an
//! `Rc` of (`cores.rs` builds it and spawns the tasks). It imports none of
//! the loops that use it (UDP, TCP, AF_XDP, forwarding, control), so that
//! every arrow between them and it points one way (STYLE.md 1.5).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use crate::signal::Stop;
use crate::stats::TcpCounters;
use crate::worker::Worker;
use crate::TcpConfig;

//----------- Core -----------------------------------------------------------

/// What the tasks of one core share.
pub(crate) struct Core {
    /// The CPU this core is pinned to, if any.
    pub(crate) id: Option<usize>,
    pub(crate) worker: RefCell<Worker>,
    pub(crate) tcp: TcpConfig,
    pub(crate) tcp_counters: TcpCounters,
    pub(crate) stop: Stop,
    /// The output buffer of TCP answers (65535 octets): answering is
    /// synchronous, so one per core suffices; a connection copies the
    /// answer into its own pending buffer.
    pub(crate) scratch: RefCell<Vec<u8>>,
    /// Reads this thread's allocation count, for statistics.
    pub(crate) allocations: Option<fn() -> u64>,
    /// The forwarding sockets, when `forward` is configured.
    pub(crate) forward: Option<crate::forward::sockets::ForwardIo>,
    /// The core's clock (forwarder timers, rate limiting): milliseconds
    /// since this.
    pub(crate) epoch: Instant,
    /// Who may transfer our zones.
    pub(crate) transfer: crate::TransferConfig,
    /// Outgoing transfers on this core.
    pub(crate) xfr_out: crate::xfr_out::XfrOutCounters,
    /// The zones' IXFR histories.
    pub(crate) journals: crate::SharedJournals,
    /// dnstap logging, when on: checked once per UDP batch, TCP message
    /// and forwarded message.
    pub(crate) dnstap: Option<tern_dnstap::Tap>,
    /// The AF_XDP path's counters on this core.
    pub(crate) xdp: RefCell<crate::stats::XdpStats>,
    /// This core's AF_XDP sockets (read for the kernel's drop counts).
    pub(crate) xdp_sockets: Vec<Rc<RefCell<crate::xdp::Xsk>>>,
    /// The listen addresses, by UDP listener index: a query received by
    /// AF_XDP and forwarded is answered through the listener of its
    /// destination (`crate::xdp::listener_for`), as if read from it.
    pub(crate) listen: Vec<std::net::SocketAddr>,
    /// The XDP program, on the first core only: its pass counters.
    pub(crate) xdp_attachment: Option<Arc<crate::xdp::Attachment>>,
    /// The proxies whose PROXY headers the `proxy.listen` listeners
    /// accept.
    pub(crate) proxy_allow: Vec<tern_cache::forward::Cidr>,
    /// This core's counts of PROXY headers.
    pub(crate) proxy: crate::proxy::ProxyCounters,
    /// This core's DNS over TLS counters.
    pub(crate) tls_counters: crate::stats::TlsCounters,
    /// The updates this core handed off and waits for, when UPDATE is
    /// taken (`crate::update`).
    pub(crate) updates: Option<Rc<crate::update::Replies>>,
}

impl Core {
    /// Milliseconds of the core's clock.
    pub(crate) fn clock(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// The time for the worker: the core's clock when forwarding or rate
    /// limiting, else 0 (nothing needs the time: the clock is not read).
    pub(crate) fn now(&self, rate_limiting: bool) -> u64 {
        if self.forward.is_some() || rate_limiting {
            self.clock()
        } else {
            0
        }
    }
}
