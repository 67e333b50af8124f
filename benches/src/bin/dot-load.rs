//! A DNS over TLS load client for scripts/bench-tls.sh (issue 26): what
//! dnsperf does not measure.
//!
//! ```text
//! dot-load new  ADDR:PORT NAME [--threads T] [--seconds S] [--resume]
//! dot-load idle ADDR:PORT NAME [--threads T] [--connections N] [--hold S]
//! ```
//!
//! `new`: each of T threads, for S seconds, opens a connection, completes
//! the TLS handshake (TLS 1.3, ALPN "dot"), sends one query for NAME/A,
//! reads its answer and closes the connection. With `--resume` the
//! threads share a session store (rustls's `Resumption::in_memory_sessions`),
//! so every connection after a thread's first resumes with a ticket the
//! server sent; without it none does. Prints one line: connections
//! answered per second, failures, and how many handshakes resumed.
//!
//! `idle`: T threads open N connections between them, each with a
//! handshake and one query answered, and keep them open; then a line
//! `held N failed F in S s` is printed and the connections are held for
//! `--hold` seconds (the script ends the client sooner), then closed.
//!
//! The certificate is not verified (the benchmark's servers present a
//! self-signed one; the client's CPU goes to the handshake itself).
//! Connections close with a reset (SO_LINGER 0), so that no TIME_WAIT
//! sockets use up loopback's ephemeral ports at thousands of connections
//! a second. Every connect, read and write has a 5 s timeout; the run is
//! bounded by `--seconds` (at most 600) or `--connections` (at most
//! 100,000) and `--hold` (at most 3600).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme};

/// Every socket operation's timeout.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_SECONDS: u64 = 600;
const MAX_CONNECTIONS: usize = 100_000;
const MAX_HOLD: u64 = 3600;
const MAX_THREADS: usize = 256;

/// Accepts any certificate: the load client measures the server's
/// handshakes, not the client's verification.
#[derive(Debug)]
struct AcceptAny(Vec<SignatureScheme>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.clone()
    }
}

struct Options {
    mode: String,
    server: SocketAddr,
    name: String,
    threads: usize,
    seconds: u64,
    resume: bool,
    connections: usize,
    hold: u64,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let [mode, server, name, rest @ ..] = args else {
        return Err("usage: dot-load new|idle ADDR:PORT NAME [options]".into());
    };
    if mode != "new" && mode != "idle" {
        return Err(format!("unknown mode {mode}"));
    }
    let mut options = Options {
        mode: mode.clone(),
        server: server.parse().map_err(|err| format!("{server}: {err}"))?,
        name: name.clone(),
        threads: 8,
        seconds: 10,
        resume: false,
        connections: 10_000,
        hold: 60,
    };
    let mut rest = rest.iter();
    // Each pass consumes one or two arguments.
    while let Some(flag) = rest.next() {
        if flag == "--resume" {
            options.resume = true;
            continue;
        }
        let value = rest.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number: u64 = value
            .parse()
            .map_err(|err| format!("{flag} {value}: {err}"))?;
        match flag.as_str() {
            "--threads" => options.threads = (number as usize).clamp(1, MAX_THREADS),
            "--seconds" => options.seconds = number.clamp(1, MAX_SECONDS),
            "--connections" => options.connections = (number as usize).clamp(1, MAX_CONNECTIONS),
            "--hold" => options.hold = number.min(MAX_HOLD),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(options)
}

/// A query for `name`/A, with the ID `id`, framed (RFC 7766).
fn framed_query(name: &str, id: u16) -> Vec<u8> {
    let mut message = Vec::with_capacity(64);
    message.extend_from_slice(&id.to_be_bytes());
    message.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.') {
        let label = &label.as_bytes()[..label.len().min(63)];
        message.push(label.len() as u8);
        message.extend_from_slice(label);
    }
    message.extend_from_slice(&[0, 0, 1, 0, 1]);
    let mut framed = (message.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&message);
    framed
}

/// A connection that completed its handshake and had one query answered.
type Open = rustls::StreamOwned<ClientConnection, TcpStream>;

/// Connects, sends one query and reads its answer; `Ok(resumed)`.
fn exchange(
    config: &Arc<ClientConfig>,
    options: &Options,
    id: u16,
) -> Result<(Open, bool), String> {
    let tcp = TcpStream::connect_timeout(&options.server, IO_TIMEOUT).map_err(|e| e.to_string())?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    tcp.set_write_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    socket2::SockRef::from(&tcp)
        .set_linger(Some(Duration::ZERO))
        .map_err(|e| e.to_string())?;
    let server_name = ServerName::try_from("dot.bench").map_err(|e| e.to_string())?;
    let connection =
        ClientConnection::new(Arc::clone(config), server_name).map_err(|e| e.to_string())?;
    let mut stream = rustls::StreamOwned::new(connection, tcp);
    stream
        .write_all(&framed_query(&options.name, id))
        .map_err(|e| format!("write: {e}"))?;
    let mut prefix = [0; 2];
    stream
        .read_exact(&mut prefix)
        .map_err(|e| format!("read: {e}"))?;
    let mut answer = vec![0; usize::from(u16::from_be_bytes(prefix))];
    stream
        .read_exact(&mut answer)
        .map_err(|e| format!("read: {e}"))?;
    if answer.len() < 12 || answer[..2] != id.to_be_bytes() || answer[2] & 0x80 == 0 {
        return Err("not an answer to the query".into());
    }
    let resumed = stream.conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    Ok((stream, resumed))
}

fn client_config(resume: bool) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let schemes = provider
        .signature_verification_algorithms
        .supported_schemes();
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAny(schemes)))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"dot".to_vec()];
    config.resumption = if resume {
        rustls::client::Resumption::in_memory_sessions(1024)
    } else {
        rustls::client::Resumption::disabled()
    };
    Ok(Arc::new(config))
}

#[derive(Default)]
struct Totals {
    answered: AtomicU64,
    failed: AtomicU64,
    resumed: AtomicU64,
}

fn run_new(options: &Arc<Options>, config: &Arc<ClientConfig>) {
    let totals = Arc::new(Totals::default());
    let errors = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let deadline = start + Duration::from_secs(options.seconds);
    let threads: Vec<_> = (0..options.threads)
        .map(|thread| {
            let (options, config) = (Arc::clone(options), Arc::clone(config));
            let (totals, errors) = (Arc::clone(&totals), Arc::clone(&errors));
            std::thread::spawn(move || {
                let mut id = thread as u16;
                // Bounded by the deadline; each pass ends within the I/O
                // timeouts.
                while Instant::now() < deadline {
                    id = id.wrapping_add(MAX_THREADS as u16);
                    match exchange(&config, &options, id) {
                        Ok((_, resumed)) => {
                            totals.answered.fetch_add(1, Ordering::Relaxed);
                            totals
                                .resumed
                                .fetch_add(u64::from(resumed), Ordering::Relaxed);
                        }
                        Err(err) => {
                            totals.failed.fetch_add(1, Ordering::Relaxed);
                            let mut errors = errors.lock().unwrap_or_else(|e| e.into_inner());
                            if errors.len() < 5 {
                                errors.push(err);
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
    let seconds = start.elapsed().as_secs_f64();
    let answered = totals.answered.load(Ordering::Relaxed);
    println!(
        "new: {answered} answered {} failed {} resumed in {seconds:.2} s: {:.0} connections/s",
        totals.failed.load(Ordering::Relaxed),
        totals.resumed.load(Ordering::Relaxed),
        answered as f64 / seconds
    );
    for err in errors.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        println!("  error: {err}");
    }
}

fn run_idle(options: &Arc<Options>, config: &Arc<ClientConfig>) {
    let held = Arc::new(Mutex::new(Vec::with_capacity(options.connections)));
    let failed = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let threads: Vec<_> = (0..options.threads)
        .map(|_| {
            let (options, config) = (Arc::clone(options), Arc::clone(config));
            let (held, failed, next) = (Arc::clone(&held), Arc::clone(&failed), Arc::clone(&next));
            std::thread::spawn(move || {
                // Each pass opens one of the `connections`, or ends.
                loop {
                    let number = next.fetch_add(1, Ordering::Relaxed);
                    if number >= options.connections as u64 {
                        return;
                    }
                    match exchange(&config, &options, number as u16) {
                        Ok((stream, _)) => {
                            held.lock().unwrap_or_else(|e| e.into_inner()).push(stream)
                        }
                        Err(err) => {
                            if failed.fetch_add(1, Ordering::Relaxed) < 5 {
                                eprintln!("dot-load: connection {number}: {err}");
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
    let open = held.lock().unwrap_or_else(|e| e.into_inner()).len();
    println!(
        "held {open} failed {} in {:.1} s",
        failed.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
    let _ = std::io::stdout().flush();
    // The script that started it ends it sooner, once it has measured.
    std::thread::sleep(Duration::from_secs(options.hold));
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(options) => Arc::new(options),
        Err(err) => {
            eprintln!("dot-load: {err}");
            return ExitCode::from(2);
        }
    };
    let config = match client_config(options.resume) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("dot-load: {err}");
            return ExitCode::FAILURE;
        }
    };
    if options.mode == "new" {
        run_new(&options, &config);
    } else {
        run_idle(&options, &config);
    }
    ExitCode::SUCCESS
}
