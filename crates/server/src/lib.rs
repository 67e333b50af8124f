//! # tern-server: the thread-per-core runtime around the answer pipeline
//!
//! This crate performs the cores' I/O (the threads off the cores live in
//! `tern-zones`, `tern-dnstap` and the binary). [`Server::start`] starts one
//! OS thread per configured CPU, pins it, and runs its own monoio reactor
//! on it (io_uring, or the epoll-based legacy driver where io_uring is
//! unavailable or not wanted: [`Driver`]). Each core binds its own UDP and
//! TCP sockets for every listen address, with SO_REUSEPORT set before
//! bind, so the kernel spreads queries over the cores and nothing is
//! shared on the query path: no locks, no atomics, no reference-count
//! traffic. The zone catalog is immutable and shared by an `Arc` cloned
//! once per core (and once per core on a reload), never per query.
//!
//! ```text
//!   core N thread (pinned) ── monoio reactor
//!     UDP loop per address:  readable().await → recvmmsg (32) → answer each → sendmmsg
//!     TCP accept per address: connection task: read half ⇄ pending answers ⇄ write half
//!     control task:          reload · stats · shutdown (from any thread, via Handle)
//!     Worker:                catalog (Arc) · answer cache · counters
//! ```
//!
//! Answering is synchronous: a batch is received, every query in it is
//! answered without awaiting (from the core's answer cache, or by
//! `tern_authority::respond` on a miss), and the answers are sent
//! together. With a warm cache that path makes no heap allocation
//! (`tests/alloc_hit_path.rs` proves it).
//!
//! A [`Handle`] controls the running server from any thread: reload a new
//! catalog, read per-core [`CoreStats`], shut down.
//!
//! Modules:
//! - `cores`: the core thread, its reactor and what its tasks share;
//! - `control`: the control path ([`Handle`]);
//! - `udp`, `tcp`: the transport loops;
//! - `forward`: upstream sockets, timers and TCP fallback for the
//!   forwarder (issue 5);
//! - `worker`: the per-core answering state and cache;
//! - `rrl`: response rate limiting, one table per core
//!   (docs/decisions/0007);
//! - `pool`: the thread-local I/O buffer pool;
//! - `proxy`: the PROXY protocol v2 header before the queries of the
//!   `proxy.listen` listeners (docs/decisions/0016);
//! - `tls`: DNS over TLS on the `tls.listen` listeners, served by the TCP
//!   framing over rustls (docs/decisions/0017); `tls::config` builds the
//!   server-side TLS configuration (certificates, pin, tickets);
//! - `signal`: core-local stop and wake-up signals;
//! - `socket`: socket creation (SO_REUSEPORT before bind);
//! - `stats`: counters and snapshots;
//! - `sys`: `recvmmsg`/`sendmmsg`, the `timerfd(2)` of the core's timers,
//!   and the counting allocator;
//! - `timer`: the core's timers (timerfds its reactor waits on: the cores'
//!   runtimes have no monoio timer wheel, docs/decisions/0027);
//! - `xdp`: the AF_XDP path (issue 12, docs/decisions/0012): the XDP
//!   program's attachment, the per-core loop, and in `xdp::ring` the
//!   AF_XDP socket and its rings. `sys` and `xdp::ring` are the only
//!   modules with `unsafe`.

#![deny(missing_docs)]
// monoio::time is for tests only (clippy.toml: a core's runtime has no
// timer driver); a test that builds its own runtime with it may use it.
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tern_authority::cookie::CookieSecret;
use tern_authority::{Catalog, Options};
use tern_cache::CacheLimits;

mod control;
mod core;
mod cores;
mod forward;
#[doc(hidden)]
pub mod fuzzing;
mod pool;
mod proxy;
mod rrl;
mod signal;
mod signing;
mod socket;
mod stats;
mod sys;
mod tcp;
mod timer;
pub mod tls;
mod udp;
pub mod update;
pub mod update_in;
mod worker;
mod xdp;
mod xfr_out;

pub use control::Handle;
pub use cores::allowed_cpus;
pub use proxy::{
    ProxyConfig, Refusal as ProxyRefusal, MAX_HEADER as MAX_PROXY_HEADER, PROXY_REFUSALS,
};
pub use rrl::{
    write_slip, Category, RateLimitConfig, RateLimiter, Verdict, DEFAULT_IPV4_PREFIX,
    DEFAULT_IPV6_PREFIX, DEFAULT_RATE, DEFAULT_SLIP, DEFAULT_TABLE_SIZE, DEFAULT_WINDOW, MAX_RATE,
    MAX_SLIP, MAX_TABLE_SIZE, MAX_WINDOW, MIN_TABLE_SIZE,
};
pub use stats::TlsStats;
pub use stats::XfrOutStats;
pub use stats::{
    CoreStats, ZoneCounters, COOKIE_RESULTS, FAMILIES, MAX_COUNTED_ZONES, OTHER_TYPE, QUERY_TYPES,
    TCP_TIMEOUTS, TRANSPORTS, TYPE_SLOTS,
};
pub use stats::{ProxyStats, XdpStats};
pub use sys::{
    fix_allocator_threshold, give_back_free_memory, thread_allocations, CountingAllocator,
};
pub use tern_cache::forward::{
    Cidr, ForwardConfig, ForwardStats, Policy, RttHistogram, UpstreamStats, MAX_UPSTREAMS,
    RTT_BUCKETS_MS,
};
pub use tls::TlsConfig;
#[doc(hidden)]
pub use update_in::{UpdateIn, UpdateReply, UpdateRequest};
pub use worker::{PendingUpdate, UdpAnswer, Worker};
pub use xdp::{MAX_XDP_ADDRESSES, MAX_XDP_QUEUES, XDP_PASSED};
pub use xfr_out::{
    MAX_TRANSFERS_OUT, OUTCOMES as TRANSFER_OUTCOMES, REFUSALS as TRANSFER_REFUSALS,
    TRANSPORTS as TRANSFER_TRANSPORTS,
};

/// The default idle timeout between TCP messages (RFC 7766 section 6.2.3
/// suggests seconds, not minutes).
pub const DEFAULT_TCP_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

//----------- Driver ---------------------------------------------------------

/// Which reactor each core runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Driver {
    /// io_uring if the kernel allows it, the legacy driver otherwise.
    #[default]
    Auto,
    /// io_uring; starting fails if it is unavailable.
    IoUring,
    /// epoll (monoio's legacy driver).
    Legacy,
}

//----------- ServerConfig ---------------------------------------------------

/// Everything the runtime needs to know, already validated. Not `Clone`:
/// it carries each core's dnstap end ([`ServerConfig::dnstap`]).
#[derive(Debug)]
pub struct ServerConfig {
    /// Addresses to serve on, over both UDP and TCP.
    pub listen: Vec<SocketAddr>,
    /// CPUs to run a core on, one pinned thread each. Empty: one unpinned
    /// core.
    pub cores: Vec<usize>,
    /// The reactor each core runs.
    pub driver: Driver,
    /// Answering options (UDP size limit, CHAOS identity).
    pub answer: Options,
    /// TCP limits and timeouts.
    pub tcp: TcpConfig,
    /// The size of each core's answer cache.
    pub cache: CacheLimits,
    /// Forwarding of recursive queries for names outside our zones;
    /// `None` (the default): such queries are REFUSED.
    pub forward: Option<ForwardConfig>,
    /// Response rate limiting of UDP answers; `None` (the default): off.
    pub rate_limit: Option<RateLimitConfig>,
    /// The DNS cookie secret (RFC 7873, RFC 9018), the same on every core
    /// (and on every anycast instance that shares it); `None` (the
    /// default here; the binary turns cookies on): cookies are off.
    pub cookies: Option<CookieSecret>,
    /// Outgoing zone transfers: who may ask (default: nobody).
    pub transfer: TransferConfig,
    /// NOTIFY for secondary zones; `None` (the default): NOTIFY is NOTIMP.
    pub notify_in: Option<NotifyIn>,
    /// UPDATE for primary zones (`crate::update`); `None` (the default):
    /// every UPDATE is REFUSED (NOTAUTH for a zone not ours).
    pub update_in: Option<UpdateIn>,
    /// The IXFR history of each zone, shared with whoever records it (the
    /// cores only read it, for IXFR requests).
    pub journals: SharedJournals,
    /// Reads the calling thread's allocation count (normally
    /// [`thread_allocations`] with [`CountingAllocator`] installed); each
    /// core calls it for its statistics. `None`: allocations read as 0.
    pub allocations: Option<fn() -> u64>,
    /// dnstap logging of queries and responses: each core's end of the
    /// dnstap writer, one per core in the order of `cores` (whoever starts
    /// the server starts the writer, [`tern_dnstap::DnstapWriter::start`],
    /// and finishes it after [`Server::join`]); empty (the default): off.
    pub dnstap: Vec<tern_dnstap::TapParts>,
    /// Interfaces whose UDP queries to `listen` are taken by AF_XDP
    /// (issue 12); empty (the default): the sockets only.
    pub xdp: Vec<String>,
    /// The PROXY protocol v2 listeners and the proxies allowed on them
    /// (`crate::proxy`); default: none.
    pub proxy: ProxyConfig,
    /// DNS over TLS listeners and their TLS configuration; `None` (the
    /// default): none.
    pub tls: Option<tls::TlsConfig>,
}

impl ServerConfig {
    /// A configuration with defaults for everything but the addresses.
    pub fn new(listen: Vec<SocketAddr>) -> Self {
        ServerConfig {
            listen,
            cores: Vec::new(),
            driver: Driver::default(),
            answer: Options::default(),
            tcp: TcpConfig::default(),
            cache: CacheLimits::default(),
            forward: None,
            rate_limit: None,
            cookies: None,
            transfer: TransferConfig::default(),
            notify_in: None,
            update_in: None,
            journals: SharedJournals::default(),
            allocations: None,
            dnstap: Vec::new(),
            xdp: Vec::new(),
            proxy: ProxyConfig::default(),
            tls: None,
        }
    }

    /// A copy of the settings for one core: everything but the dnstap
    /// ends, which are not copied but handed out one per core.
    fn settings(&self) -> ServerConfig {
        ServerConfig {
            listen: self.listen.clone(),
            cores: self.cores.clone(),
            driver: self.driver,
            answer: self.answer.clone(),
            tcp: self.tcp,
            cache: self.cache,
            forward: self.forward.clone(),
            rate_limit: self.rate_limit.clone(),
            cookies: self.cookies.clone(),
            transfer: self.transfer.clone(),
            notify_in: self.notify_in.clone(),
            update_in: self.update_in.clone(),
            journals: Arc::clone(&self.journals),
            allocations: self.allocations,
            dnstap: Vec::new(),
            xdp: self.xdp.clone(),
            proxy: self.proxy.clone(),
            tls: self.tls.clone(),
        }
    }
}

pub use tern_xfr::journal::SharedJournals;

//----------- NotifyIn -------------------------------------------------------

/// NOTIFY (RFC 1996) taken for secondary zones: from their primaries (and
/// signed with their key, where set), each is passed to `refresh` (the
/// zones' owner makes the zone due). The cores know no more of secondary
/// zones than this.
#[derive(Clone)]
pub struct NotifyIn {
    /// The secondary zones, their primaries and keys (catalog members come
    /// and go while the server runs).
    pub zones: NotifyZones,
    /// Called with the origin of each NOTIFY accepted, on the core: it
    /// must only hand the origin on (a channel send).
    pub refresh: std::sync::Arc<dyn Fn(tern_wire::name::LowerNameBuf) + Send + Sync>,
}

impl std::fmt::Debug for NotifyIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotifyIn").finish_non_exhaustive()
    }
}

pub use tern_xfr::notify::{NotifySource, NotifyZones};

//----------- TransferConfig -------------------------------------------------

/// Who may transfer our zones (AXFR, IXFR) over TCP.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransferConfig {
    /// Client address prefixes allowed; empty (the default): nobody.
    pub allow: Vec<Cidr>,
    /// Every TSIG key the server knows: a signed request is checked against
    /// them, whatever `key` says.
    pub keys: Vec<tern_xfr::tsig::Key>,
    /// When set, every transfer request must be signed with this key.
    pub key: Option<tern_xfr::tsig::Key>,
    /// Zones with their own `allow` and `key`, which replace the two above
    /// for them, by lowercased wire origin (a request looks its zone up,
    /// whatever the number of zones: [`TransferConfig::add_zone`]).
    pub zones: std::collections::BTreeMap<Box<[u8]>, ZoneTransfer>,
    /// `transfer.tls-only`: AXFR and IXFR over plain TCP and UDP are
    /// REFUSED, whoever asks (transfers out over TLS are not served yet:
    /// docs/decisions/0018).
    pub tls_only: bool,
}

/// One zone's own transfer rules (`transfer:` in its `zones.list` or
/// `zones.secondary` entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneTransfer {
    /// The zone.
    pub origin: tern_wire::name::LowerNameBuf,
    /// Client prefixes allowed; empty: nobody.
    pub allow: Vec<Cidr>,
    /// The key every request must be signed with, if any.
    pub key: Option<tern_xfr::tsig::Key>,
}

impl TransferConfig {
    /// The allowed prefixes and required key for `origin`: its own, or the
    /// global ones.
    pub fn for_zone(
        &self,
        origin: tern_wire::name::LowerNameBuf,
    ) -> (&[Cidr], Option<&tern_xfr::tsig::Key>) {
        match self.zones.get(origin.as_bytes()) {
            Some(zone) => (&zone.allow, zone.key.as_ref()),
            None => (&self.allow, self.key.as_ref()),
        }
    }

    /// Gives a zone its own rules.
    pub fn add_zone(&mut self, zone: ZoneTransfer) {
        self.zones.insert(zone.origin.as_bytes().into(), zone);
    }
}

//----------- TcpConfig ------------------------------------------------------

/// TCP limits (RFC 7766 section 6.2.3); past each, the connection is
/// closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpConfig {
    /// How long a connection may sit idle between messages. Default 10 s.
    pub idle_timeout: Duration,
    /// How long a new connection may take to start its first message
    /// (shorter than `idle_timeout`: a client that connects has a query
    /// to send). Default 2 s.
    pub initial_timeout: Duration,
    /// How long one message may take to arrive once its first octet has.
    /// Default 800 ms.
    pub message_timeout: Duration,
    /// How long writing queued answers may take. Default 5 s.
    pub write_timeout: Duration,
    /// Open connections per core; further ones are closed as soon as they
    /// are accepted (0: TCP is refused). Default 256 (an open connection
    /// holds at most four 64 KiB buffers, one until its first answer:
    /// 64 MiB per core at the limit, at worst).
    pub max_connections: usize,
    /// Answers per connection not yet handed to the kernel; at the limit
    /// the connection stops reading until its client reads (0 counts as
    /// 1). Default 32.
    pub max_in_flight: usize,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            idle_timeout: DEFAULT_TCP_IDLE_TIMEOUT,
            initial_timeout: Duration::from_secs(2),
            message_timeout: Duration::from_millis(800),
            write_timeout: Duration::from_secs(5),
            max_connections: 256,
            max_in_flight: 32,
        }
    }
}

//----------- Server ---------------------------------------------------------

/// The running server: one thread per core.
pub struct Server {
    threads: Vec<JoinHandle<io::Result<()>>>,
    handle: Handle,
    /// The XDP program on `xdp` interfaces: detached when the last
    /// reference (this one, once the cores have stopped) is dropped.
    xdp: Option<Arc<xdp::Attachment>>,
}

impl Server {
    /// Starts every core and binds every listen address on each. Returns
    /// once every core is serving, so a caller can query at once. If any
    /// core fails to start (a bind error, a CPU that cannot be pinned,
    /// io_uring asked for and unavailable), the others are stopped and the
    /// error is returned.
    pub fn start(config: ServerConfig, catalog: Arc<Catalog>) -> io::Result<Server> {
        Server::start_then(config, catalog, || Ok(()))
    }

    /// As [`Server::start`], but once every core has bound its sockets and
    /// before any of them reads a query, runs `before_serving` on the
    /// calling thread (the binary drops root there, so that binding
    /// port 53 and opening the dnstap file, before this, are the only
    /// things done as root; the binary gives the dnstap writer its go once
    /// this returns). If it fails, the cores are stopped without having
    /// served and its error is returned.
    pub fn start_then(
        mut config: ServerConfig,
        catalog: Arc<Catalog>,
        before_serving: impl FnOnce() -> io::Result<()>,
    ) -> io::Result<Server> {
        let ids: Vec<Option<usize>> = if config.cores.is_empty() {
            vec![None]
        } else {
            config.cores.iter().copied().map(Some).collect()
        };
        // Each core's dnstap end, one per core (or none: dnstap is off).
        let taps = std::mem::take(&mut config.dnstap);
        if !taps.is_empty() && taps.len() != ids.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("dnstap: {} tap ends for {} cores", taps.len(), ids.len()),
            ));
        }
        let mut taps = taps.into_iter();
        // Attached before the cores bind: until a core puts its socket in
        // the program's map, the program passes that queue's queries to
        // the kernel, where the cores' UDP sockets answer them.
        let xdp = if config.xdp.is_empty() {
            None
        } else {
            let udp_size = usize::from(config.answer.max_udp_size).max(512);
            Some(Arc::new(xdp::Attachment::attach(
                &config.xdp,
                &config.listen,
                udp_size,
            )?))
        };
        let mut xdp_plans = xdp
            .as_ref()
            .map(|attachment| attachment.plan(ids.len()))
            .unwrap_or_default();
        let (handle, ends) = Handle::new(ids.len())?;
        let mut gates = Vec::with_capacity(ids.len());
        let mut threads = Vec::with_capacity(ids.len());
        let mut ready = Vec::with_capacity(ids.len());
        for (index, (id, (commands, wake))) in ids.into_iter().zip(ends).enumerate() {
            let (ready_sender, ready_receiver) = std::sync::mpsc::channel();
            let (gate, go) = std::sync::mpsc::channel();
            gates.push(gate);
            let start = cores::CoreStart {
                id,
                index,
                config: config.settings(),
                catalog: Arc::clone(&catalog),
                commands,
                wake,
                ready: ready_sender,
                go,
                dnstap: taps.next(),
                xdp: xdp_plans
                    .get_mut(index)
                    .map(std::mem::take)
                    .unwrap_or_default(),
                // The first core reports the program's own counters.
                xdp_attachment: xdp.as_ref().filter(|_| index == 0).map(Arc::clone),
            };
            let name = match id {
                Some(id) => format!("tern-core-{id}"),
                None => "tern-core".to_string(),
            };
            let spawned = std::thread::Builder::new()
                .name(name)
                .spawn(move || cores::run(start));
            match spawned {
                Ok(thread) => threads.push(thread),
                Err(err) => {
                    // Closed gates: the cores already started stop unserved.
                    drop(gates);
                    Server {
                        threads,
                        handle,
                        xdp,
                    }
                    .abort();
                    return Err(err);
                }
            }
            ready.push(ready_receiver);
        }
        let server = Server {
            threads,
            handle,
            xdp,
        };
        for receiver in ready {
            let failure = match receiver.recv() {
                Ok(Ok(())) => continue,
                Ok(Err(err)) => err,
                Err(_) => io::Error::other("a core thread exited during start-up"),
            };
            drop(gates);
            server.abort();
            return Err(failure);
        }
        if let Err(err) = before_serving() {
            // The cores see their gate closed and stop without serving.
            drop(gates);
            server.abort();
            return Err(err);
        }
        for gate in gates {
            let _ = gate.send(());
        }
        Ok(server)
    }

    /// A handle to control the server from any thread.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Waits for every core to stop (after [`Handle::shutdown`]); returns
    /// the first error. Once it returns, no core logs to dnstap any more:
    /// the writer may be finished (it writes what they left, then STOP).
    pub fn join(self) -> io::Result<()> {
        let mut result = Ok(());
        for thread in self.threads {
            let outcome = thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a core thread panicked")));
            if result.is_ok() {
                result = outcome;
            }
        }
        // The cores' sockets are closed; detach the program.
        drop(self.xdp);
        result
    }

    /// Stops the cores that did start, after a failed start.
    fn abort(self) {
        self.handle.shutdown();
        let _ = self.join();
    }
}
