//! One core: its thread (pinned), its reactor and its sockets; it builds
//! the state its tasks share ([`Core`], in `core.rs`) and spawns them.
//!
//! Everything a core creates stays on its thread: the sockets are bound
//! there (SO_REUSEPORT before bind, so every core joins the same reuse
//! group), the buffer pool is a thread-local, and the tasks share the
//! [`Core`] through an `Rc` cloned once per task or connection. The only
//! values that cross threads are the catalog (an `Arc`, cloned once per
//! core and per reload) and the control messages.

use std::cell::RefCell;
use std::io;
use std::os::unix::net::UnixDatagram;
use std::rc::Rc;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use monoio::{IoUringDriver, LegacyDriver, RuntimeBuilder};
use tern_authority::Catalog;

use crate::control::{self, Command};
use crate::core::Core;
use crate::pool::{self, STREAM_BUFFER};
use crate::signal::Stop;
use crate::socket;
use crate::stats::TcpCounters;
use crate::sys::BATCH;
use crate::worker::Worker;
use crate::{Driver, ServerConfig, TcpConfig};

/// The longest UDP query accepted. Queries are a header, one question and
/// an OPT record (with a cookie or padding): a few hundred octets. 4096
/// leaves room for any option a client sends; a longer datagram is cut by
/// the kernel, flagged, and dropped.
const MAX_UDP_QUERY: usize = 4096;

/// TCP connections whose buffers are allocated at start-up; more are
/// allocated when that many are open at once (at most the connection
/// limit, and kept for reuse).
const PREALLOCATED_CONNECTIONS: usize = 4;

/// Stream buffers per TCP connection: read, pending answers, answers being
/// written.
const BUFFERS_PER_CONNECTION: usize = 3;

/// How long a stopping core waits for its loops and connections to finish
/// what they have started before it drops them. Below a second, so that
/// the whole server stops within the two seconds operators are promised.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(800);

/// How often a stopping core checks whether its connections are done.
const SHUTDOWN_POLL: Duration = Duration::from_millis(10);

/// One AF_XDP socket of a core, shared by its loop and the statistics, and
/// what frames for this host look like on its interface.
type XdpSocket = (Rc<RefCell<crate::xdp::Xsk>>, crate::xdp::Local);

//----------- allowed_cpus ---------------------------------------------------

/// The CPUs this thread may run on (its affinity mask, which a new thread
/// inherits from the process: `taskset`, a cpuset, systemd's
/// `CPUAffinity=`), in ascending order. What `cores: all` means.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    let ids = core_affinity::get_core_ids()
        .ok_or_else(|| io::Error::other("cannot read this process's CPU affinity mask"))?;
    let mut cpus: Vec<usize> = ids.into_iter().map(|core| core.id).collect();
    cpus.sort_unstable();
    if cpus.is_empty() {
        return Err(io::Error::other(
            "this process's CPU affinity mask is empty",
        ));
    }
    Ok(cpus)
}

//----------- CoreStart ------------------------------------------------------

/// What a core thread is started with.
pub(crate) struct CoreStart {
    pub(crate) id: Option<usize>,
    pub(crate) index: usize,
    pub(crate) config: ServerConfig,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) commands: Receiver<Command>,
    pub(crate) wake: UnixDatagram,
    pub(crate) ready: Sender<io::Result<()>>,
    /// Opens once every core is ready (and the binary has dropped root):
    /// a message lets the core serve; a closed channel stops it unserved.
    pub(crate) go: Receiver<()>,
    /// This core's end of the dnstap writer, when dnstap is on.
    pub(crate) dnstap: Option<tern_dnstap::TapParts>,
    /// The interface queues whose AF_XDP sockets this core serves.
    pub(crate) xdp: Vec<crate::xdp::QueuePlan>,
    /// The XDP program, given to the first core for its counters.
    pub(crate) xdp_attachment: Option<Arc<crate::xdp::Attachment>>,
}

/// The body of one core's thread: pin, build the reactor the
/// configuration asks for, serve until told to stop.
pub(crate) fn run(start: CoreStart) -> io::Result<()> {
    if let Some(id) = start.id {
        if !core_affinity::set_for_current(core_affinity::CoreId { id }) {
            let message = format!("cannot pin a thread to CPU {id}: is it online and allowed?");
            let _ = start.ready.send(Err(io::Error::other(message.clone())));
            return Err(io::Error::other(message));
        }
    }
    let ready = start.ready.clone();
    let failed = |err: io::Error, what: &str| {
        let message = format!("{what}: {err}");
        let _ = ready.send(Err(io::Error::new(err.kind(), message.clone())));
        Err(io::Error::new(err.kind(), message))
    };
    // Without monoio's timer wheel, which costs every park of the reactor
    // (see `crate::timer`): the core's timers are its own.
    let io_uring = || RuntimeBuilder::<IoUringDriver>::new().build();
    let legacy = || RuntimeBuilder::<LegacyDriver>::new().build();
    match start.config.driver {
        Driver::IoUring => match io_uring() {
            Ok(mut runtime) => runtime.block_on(serve(start)),
            Err(err) => failed(err, "io_uring is unavailable (choose the legacy driver)"),
        },
        Driver::Auto => match io_uring() {
            Ok(mut runtime) => runtime.block_on(serve(start)),
            Err(_) => match legacy() {
                Ok(mut runtime) => runtime.block_on(serve(start)),
                Err(err) => failed(err, "cannot start a reactor"),
            },
        },
        Driver::Legacy => match legacy() {
            Ok(mut runtime) => runtime.block_on(serve(start)),
            Err(err) => failed(err, "cannot start a reactor"),
        },
    }
}

/// Binds the sockets, starts the loops, runs the control task until it is
/// told to stop, then gives the loops a bounded time to finish.
async fn serve(start: CoreStart) -> io::Result<()> {
    let CoreStart {
        id,
        index,
        config,
        catalog,
        commands,
        wake,
        ready,
        go,
        dnstap,
        xdp,
        xdp_attachment,
    } = start;
    let bound = bind_all(&config).and_then(|sockets| {
        wake.set_nonblocking(true)?;
        let wake = monoio::net::unix::UnixDatagram::from_std(wake)?;
        let xsks = crate::xdp::open(&xdp)?
            .into_iter()
            .map(|(xsk, local)| (Rc::new(RefCell::new(xsk)), local))
            .collect();
        Ok((sockets, wake, xsks))
    });
    let tls_listeners = match bind_tls(&config) {
        Ok(listeners) => listeners,
        Err(err) => {
            let _ = ready.send(Err(io::Error::new(err.kind(), err.to_string())));
            return Err(err);
        }
    };
    // The core's timer (its sweeper's: connection timeouts, back-offs),
    // made now so that a core that cannot have one does not start.
    let bound = bound.and_then(|bound| {
        crate::tcp::deadline::install_timer(Some(Rc::new(crate::timer::Timer::new()?)));
        Ok(bound)
    });
    // Removed however this ends, inside the runtime its descriptor uses.
    let _timer = InstalledTimer;
    let ((udp, tcp), wake, xsks): (_, _, Vec<XdpSocket>) = match bound {
        Ok(bound) => bound,
        Err(err) => {
            let _ = ready.send(Err(io::Error::new(err.kind(), err.to_string())));
            return Err(err);
        }
    };

    let datagram = usize::from(config.answer.max_udp_size)
        .max(512)
        .max(MAX_UDP_QUERY);
    let connections = PREALLOCATED_CONNECTIONS.min(config.tcp.max_connections);
    pool::init(
        datagram,
        udp.len() * 2 * BATCH,
        connections * BUFFERS_PER_CONNECTION,
    );
    let udp: Vec<Rc<monoio::net::udp::UdpSocket>> = udp.into_iter().map(Rc::new).collect();
    let dnstap = dnstap.map(|parts| {
        let local = udp
            .iter()
            .zip(config.listen.iter().chain(&config.proxy.listen))
            .map(|(socket, listen)| socket.local_addr().unwrap_or(*listen))
            .collect();
        tern_dnstap::Tap::new(parts, local)
    });
    let mut worker = Worker::new(catalog, config.answer.clone(), config.cache);
    if let Some(rate_limit) = &config.rate_limit {
        // Each core enforces its share: SO_REUSEPORT spreads a client's
        // queries over all of them.
        let cores = config.cores.len().max(1);
        worker.set_rate_limiter(crate::rrl::RateLimiter::new(rate_limit, cores));
    }
    if let Some(secret) = &config.cookies {
        worker.set_cookie_secret(secret.clone());
    }
    worker.set_transfer(config.transfer.clone());
    if let Some(notify) = &config.notify_in {
        worker.set_notify(notify.clone());
    }
    let updates = match &config.update_in {
        Some(update) => {
            worker.set_update(update.clone());
            Some(Rc::new(crate::update::Replies::new(update.clone())?))
        }
        None => None,
    };
    let forward = config.forward.as_ref().map(|forward| {
        let udp_size = config.answer.max_udp_size.max(512);
        worker.set_forwarder(tern_cache::forward::Forwarder::new(
            forward.clone(),
            udp_size,
        ));
        crate::forward::sockets::ForwardIo::new(forward, udp.iter().map(Rc::clone).collect())
    });
    let forward = forward.transpose()?;
    let core = Rc::new(Core {
        id,
        worker: RefCell::new(worker),
        // At least one answer in flight, or a connection could never answer.
        tcp: TcpConfig {
            max_in_flight: config.tcp.max_in_flight.max(1),
            ..config.tcp
        },
        tcp_counters: TcpCounters::default(),
        stop: Stop::default(),
        scratch: RefCell::new(vec![0; STREAM_BUFFER - 2]),
        allocations: config.allocations,
        forward,
        epoch: Instant::now(),
        transfer: config.transfer.clone(),
        xfr_out: crate::xfr_out::XfrOutCounters::default(),
        journals: std::sync::Arc::clone(&config.journals),
        dnstap,
        xdp: RefCell::default(),
        xdp_sockets: xsks.iter().map(|(xsk, _)| Rc::clone(xsk)).collect(),
        listen: config.listen.clone(),
        xdp_attachment,
        proxy_allow: config.proxy.allow.clone(),
        proxy: crate::proxy::ProxyCounters::default(),
        tls_counters: crate::stats::TlsCounters::default(),
        updates,
    });
    // The sockets of `proxy.listen` come after those of `listen`.
    let plain = config.listen.len();
    // The AF_XDP loops answer UPDATEs from the UDP listeners of `listen`.
    let xdp_udp: Rc<[Rc<monoio::net::udp::UdpSocket>]> =
        udp.iter().take(plain).map(Rc::clone).collect();
    let mut tasks = Vec::with_capacity(udp.len() + tcp.len() + 1);
    for (index, socket) in udp.into_iter().enumerate() {
        tasks.push(monoio::spawn(crate::udp::serve(
            socket,
            index,
            index >= plain,
            Rc::clone(&core),
        )));
    }
    for (index, listener) in tcp.into_iter().enumerate() {
        let proxied = index >= plain;
        tasks.push(monoio::spawn(crate::tcp::serve(
            listener,
            proxied,
            Rc::clone(&core),
        )));
    }
    if let Some(tls) = &config.tls {
        for listener in tls_listeners {
            tasks.push(monoio::spawn(crate::tls::serve(
                listener,
                Arc::clone(&tls.server),
                Arc::clone(&tls.clients),
                Rc::clone(&core),
            )));
        }
    }
    for (xsk, local) in xsks {
        tasks.push(monoio::spawn(crate::xdp::serve(
            xsk,
            local,
            Rc::clone(&core),
            Rc::clone(&xdp_udp),
        )));
    }
    if let Some(updates) = &core.updates {
        let replies = crate::update::run(Rc::clone(updates), core.stop.listener());
        tasks.push(monoio::spawn(async move {
            replies.await;
            Ok(())
        }));
    }
    if core.forward.is_some() {
        let tick = crate::forward::tick(Rc::clone(&core));
        tasks.push(monoio::spawn(async move {
            tick.await;
            Ok(())
        }));
    }
    let _ = ready.send(Ok(()));
    // Blocks this thread before its first await, so no task spawned above
    // has run yet and no query has been read.
    if go.recv().is_err() {
        return Ok(());
    }

    control::run(&core, index, commands, wake).await;

    core.stop.fire();
    let finish = async {
        for task in tasks {
            let _ = task.await;
        }
        // Bounded by the grace period around this future.
        while core.tcp_counters.open.get() + core.tls_counters.connections.open.get() > 0 {
            crate::tcp::deadline::sleep(SHUTDOWN_POLL).await;
        }
    };
    let _ = crate::tcp::deadline::timeout(SHUTDOWN_GRACE, std::pin::pin!(finish)).await;
    crate::tcp::deadline::stop_sweeper().await;
    Ok(())
}

/// Removes the core's timer from its thread when dropped (at the end of
/// [`serve`], inside the runtime, not at the thread's end after it).
struct InstalledTimer;

impl Drop for InstalledTimer {
    fn drop(&mut self) {
        crate::tcp::deadline::install_timer(None);
    }
}

/// The UDP sockets and TCP listeners of every listen address, then of
/// every `proxy.listen` address, bound on this thread.
#[allow(clippy::type_complexity)]
fn bind_all(
    config: &ServerConfig,
) -> io::Result<(
    Vec<monoio::net::udp::UdpSocket>,
    Vec<monoio::net::TcpListener>,
)> {
    let mut udp = Vec::with_capacity(config.listen.len());
    let mut tcp = Vec::with_capacity(config.listen.len());
    for addr in config.listen.iter().chain(&config.proxy.listen) {
        let annotate = |err: io::Error| io::Error::new(err.kind(), format!("{addr}: {err}"));
        udp.push(socket::bind_udp(*addr).map_err(annotate)?);
        tcp.push(socket::bind_tcp(*addr).map_err(annotate)?);
    }
    Ok((udp, tcp))
}

/// The TCP listeners of every `tls.listen` address, bound on this thread.
fn bind_tls(config: &ServerConfig) -> io::Result<Vec<monoio::net::TcpListener>> {
    let addresses = config.tls.as_ref().map_or(&[][..], |tls| &tls.listen[..]);
    addresses
        .iter()
        .map(|addr| {
            socket::bind_tcp(*addr)
                .map_err(|err| io::Error::new(err.kind(), format!("{addr}: {err}")))
        })
        .collect()
}
