//! # tern-server: the runtime around the answer pipeline
//!
//! This is the only crate that performs I/O. It starts one OS thread per
//! configured core, each running its own monoio reactor with its own
//! sockets (SO_REUSEPORT, bound on that thread), and feeds every received
//! query synchronously through [`tern_authority::respond`]: receive, answer
//! without awaiting, send. Cores share nothing on the query path; the zone
//! catalog is immutable and shared by reference count, cloned once per
//! core at start-up, never per query.
//!
//! Modules:
//! - `socket`: socket creation with SO_REUSEPORT set before bind.
//! - `worker`: the per-core answering state (catalog and options).
//! - `udp`, `tcp`: the receive/answer/send loops.

#![deny(missing_docs)]

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tern_authority::{Catalog, Options};

mod socket;
mod tcp;
mod udp;
mod worker;

pub use worker::Worker;

//----------- ServerConfig ---------------------------------------------------

/// Everything the runtime needs to know, already validated.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Addresses to serve on, over both UDP and TCP.
    pub listen: Vec<SocketAddr>,
    /// CPUs to run a reactor on, one thread each. Empty: one unpinned thread.
    pub cores: Vec<usize>,
    /// Answering options (UDP size limit, CHAOS identity).
    pub answer: Options,
    /// TCP limits and timeouts.
    pub tcp: TcpConfig,
}

/// TCP limits (RFC 7766).
#[derive(Clone, Copy, Debug)]
pub struct TcpConfig {
    /// How long a connection may sit idle between messages.
    pub idle_timeout: Duration,
    /// How long one message may take to arrive once its first byte has.
    pub message_timeout: Duration,
    /// How long writing one answer may take.
    pub write_timeout: Duration,
    /// Open connections per core; further ones are closed at once.
    pub max_connections: usize,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            idle_timeout: Duration::from_secs(10),
            message_timeout: Duration::from_secs(2),
            write_timeout: Duration::from_secs(5),
            max_connections: 512,
        }
    }
}

//----------- Server ---------------------------------------------------------

/// The running server: one thread per core.
pub struct Server {
    threads: Vec<JoinHandle<io::Result<()>>>,
}

impl Server {
    /// Binds every listen address on every core and starts serving. Returns
    /// once every core has bound its sockets, so a caller can query at once;
    /// a bind failure on any core is returned.
    pub fn start(config: ServerConfig, catalog: Arc<Catalog>) -> io::Result<Server> {
        let cores: Vec<Option<usize>> = if config.cores.is_empty() {
            vec![None]
        } else {
            config.cores.iter().copied().map(Some).collect()
        };
        let mut threads = Vec::with_capacity(cores.len());
        let mut ready = Vec::with_capacity(cores.len());
        for core in cores {
            let config = config.clone();
            let catalog = Arc::clone(&catalog);
            let (ready_tx, ready_rx) = std::sync::mpsc::channel();
            let name = match core {
                Some(core) => format!("tern-core-{core}"),
                None => "tern-core".to_string(),
            };
            let thread = std::thread::Builder::new()
                .name(name)
                .spawn(move || run_core(core, config, catalog, ready_tx))?;
            threads.push(thread);
            ready.push(ready_rx);
        }
        for rx in ready {
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(err)) => return Err(err),
                Err(_) => return Err(io::Error::other("a core thread exited during start-up")),
            }
        }
        Ok(Server { threads })
    }

    /// Waits for every core to stop; returns the first error.
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
        result
    }
}

/// The body of one core's thread: pin, build the reactor, bind, serve.
fn run_core(
    core: Option<usize>,
    config: ServerConfig,
    catalog: Arc<Catalog>,
    ready: std::sync::mpsc::Sender<io::Result<()>>,
) -> io::Result<()> {
    if let Some(core) = core {
        if !core_affinity::set_for_current(core_affinity::CoreId { id: core }) {
            let err = io::Error::other(format!("cannot pin a thread to CPU {core}"));
            let _ = ready.send(Err(io::Error::other(err.to_string())));
            return Err(err);
        }
    }
    let mut runtime = match monoio::RuntimeBuilder::<monoio::FusionDriver>::new()
        .enable_timer()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            let _ = ready.send(Err(io::Error::new(err.kind(), err.to_string())));
            return Err(err);
        }
    };
    runtime.block_on(async move {
        let mut udp_sockets = Vec::new();
        let mut tcp_listeners = Vec::new();
        for addr in &config.listen {
            let bound = socket::bind_udp(*addr).and_then(|udp| Ok((udp, socket::bind_tcp(*addr)?)));
            match bound {
                Ok((udp, tcp)) => {
                    udp_sockets.push(udp);
                    tcp_listeners.push(tcp);
                }
                Err(err) => {
                    let message = format!("cannot listen on {addr}: {err}");
                    let _ = ready.send(Err(io::Error::new(err.kind(), message.clone())));
                    return Err(io::Error::new(err.kind(), message));
                }
            }
        }
        let _ = ready.send(Ok(()));
        let mut tasks = Vec::new();
        for udp in udp_sockets {
            let worker = Worker::new(Arc::clone(&catalog), config.answer.clone());
            tasks.push(monoio::spawn(udp::serve(udp, worker)));
        }
        let connections = std::rc::Rc::new(std::cell::Cell::new(0usize));
        for listener in tcp_listeners {
            let shared = tcp::Shared {
                worker: Worker::new(Arc::clone(&catalog), config.answer.clone()),
                limits: config.tcp,
                connections: connections.clone(),
            };
            tasks.push(monoio::spawn(tcp::serve(listener, shared)));
        }
        for task in tasks {
            task.await?;
        }
        Ok(())
    })
}
