//! # tern: the binary
//!
//! Subcommands:
//! - `tern serve`: load the zones and answer on the listen addresses, until
//!   SIGTERM or SIGINT; SIGHUP reloads, SIGUSR1 logs the counters.
//! - `tern check`: validate the configuration and zones; non-zero exit on errors.
//! - `tern dump ORIGIN FILE`: print a zone in canonical one-record-per-line form.
//! - `tern sign --config FILE ORIGIN [ZONEFILE]`: sign a configured zone
//!   offline, as the server would, and write it as a zone file.
//! - `tern stats`: print a running server's per-core counters.
//! - `tern status`, `tern reload [ZONE]`, `tern stop`: a running server's
//!   version and uptime, a reload of the changed zones (as SIGHUP), a stop
//!   (as SIGTERM); over the control socket.
//! - `tern zone-status [ZONE]`, `tern refresh ZONE`, `tern retransfer
//!   ZONE`, `tern notify ZONE`: zone transfers (docs/config.md).
//! - `tern keys list|rollover|ds|ds-seen|generate`: a signed zone's keys
//!   (docs/config.md, "Key rollovers"); `tern keys import ZONE FILES...`:
//!   existing DNSSEC keys (BIND's, PEM) into a signed zone's key directory
//!   (docs/operations.md).
//!
//! Command-line flags override the YAML configuration file, which overrides
//! the built-in defaults (docs/config.md lists every key).
//!
//! Modules:
//! - `config`: the YAML file and the validated configuration.
//! - `zones`: zone files to tern-authority zones.
//! - `control`: signals, reloads, and the control socket behind `tern stats`.
//! - `keyctl`: `tern keys`, on both sides of the control socket.
//! - `logger`: the `log` backend (stderr, levels).
//! - `service`: systemd's readiness, reload, stop and watchdog notifications.
//! - `manpage`: the tern(8) page, from these command-line definitions.
//! - `privileges`: becoming the configured `user` once the sockets are bound.
//!
//! The global allocator is tern-server's counting allocator, so that each
//! core reports its heap allocations; with the `dhat-heap` feature it is
//! dhat's profiling allocator instead, and the run writes `dhat-heap.json`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};

mod config;
mod control;
mod keyctl;
mod keys_import;
mod logger;
mod manpage;
mod metrics;
mod privileges;
mod service;
mod sign;
mod tls;

use config::{Config, Overrides};
use control::{Control, ControlSignals, ControlSocket, Reloader, Reloads};

//----------- Allocator ------------------------------------------------------

/// Counts heap allocations per thread, for the per-core counters.
#[cfg(not(feature = "dhat-heap"))]
#[global_allocator]
static ALLOCATOR: tern_server::CountingAllocator = tern_server::CountingAllocator;

/// Records every allocation for dhat's viewer.
#[cfg(feature = "dhat-heap")]
#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// The per-thread allocation count the cores report: only meaningful when
/// the counting allocator is the global one.
const ALLOCATIONS: Option<fn() -> u64> = if cfg!(feature = "dhat-heap") {
    None
} else {
    Some(tern_server::thread_allocations)
};

//----------- Command line ---------------------------------------------------

/// tern: a thread-per-core authoritative DNS server.
#[derive(Parser, Debug)]
#[command(name = "tern", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load the zones and serve them over UDP and TCP.
    Serve(ServeArgs),
    /// Validate the configuration and zones; exit non-zero on any error.
    Check(CheckArgs),
    /// Print a zone file in canonical form, one record per line.
    Dump {
        /// The zone's origin, e.g. example.com.
        origin: String,
        /// The zone file.
        file: PathBuf,
    },
    /// Sign a zone of the configuration (its `dnssec-policy`, its keys)
    /// offline, as the server would, and write it as a zone file.
    Sign(sign::SignArgs),
    /// Print the per-core counters of a running `tern serve`.
    Stats(StatsArgs),
    /// Print a running server's version, uptime, cores and zone count.
    Status(StatsArgs),
    /// Reload the configuration and every zone whose files changed (or
    /// only ZONE, whatever its files), as SIGHUP does; zones that did not
    /// change are not rebuilt. A zone that fails its checks keeps serving
    /// its previous version.
    Reload {
        #[command(flatten)]
        server: StatsArgs,
        /// Only this zone.
        zone: Option<String>,
    },
    /// Stop a running server, as SIGTERM does.
    Stop(StatsArgs),
    /// Print each zone's role and serial; for secondary zones the last and
    /// next refresh, the expiry and the last transfer's outcome.
    ZoneStatus {
        #[command(flatten)]
        server: StatsArgs,
        /// Only this zone.
        zone: Option<String>,
    },
    /// Refresh a secondary zone now: ask its primaries for the SOA and
    /// transfer it if it changed.
    Refresh {
        #[command(flatten)]
        server: StatsArgs,
        /// The zone.
        zone: String,
    },
    /// Transfer a secondary zone in full now, whatever its serial.
    Retransfer {
        #[command(flatten)]
        server: StatsArgs,
        /// The zone.
        zone: String,
    },
    /// Send NOTIFY for a zone to the configured targets now.
    Notify {
        #[command(flatten)]
        server: StatsArgs,
        /// The zone.
        zone: String,
    },
    /// A signed zone's keys: list them, roll them, print or confirm their
    /// DS at the parent.
    Keys {
        #[command(flatten)]
        server: StatsArgs,
        #[command(subcommand)]
        action: keyctl::KeysCommand,
    },
    /// Print the tern(8) manual page (roff) generated from these options.
    #[command(hide = true)]
    Manpage,
}

/// Flags shared by `serve` and `check` that override the configuration file.
#[derive(clap::Args, Debug, Default)]
struct FileArgs {
    /// YAML configuration file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Directory of zone files: every NAME.zone in it is the zone NAME.
    #[arg(long, value_name = "DIR")]
    zones: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    #[command(flatten)]
    files: FileArgs,
    /// Address to listen on, over UDP and TCP (repeatable).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Vec<SocketAddr>,
    /// CPUs to run on: a list like 0,2-3, or `all`.
    #[arg(long, value_name = "LIST")]
    cores: Option<String>,
    /// The control socket that `tern stats` reads.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// The most verbose messages logged: error, warn, info or debug.
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
    /// Take UDP queries on this network interface with AF_XDP, past the
    /// kernel's socket path (repeatable; replaces `xdp.interfaces`).
    #[arg(long, value_name = "INTERFACE")]
    xdp: Vec<String>,
}

#[derive(clap::Args, Debug)]
struct CheckArgs {
    #[command(flatten)]
    files: FileArgs,
    /// Check one zone instead of the configured ones: its origin ...
    #[arg(requires = "file")]
    origin: Option<String>,
    /// ... and its file.
    file: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct StatsArgs {
    /// The server's configuration file, for its `control-socket`.
    #[arg(long, value_name = "FILE", conflicts_with = "socket")]
    config: Option<PathBuf>,
    /// The control socket (default: as in docs/config.md).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
}

impl FileArgs {
    fn overrides(&self) -> Overrides {
        Overrides {
            config: self.config.clone(),
            zones: self.zones.clone(),
            ..Overrides::default()
        }
    }
}

impl ServeArgs {
    fn overrides(&self) -> anyhow::Result<Overrides> {
        Ok(Overrides {
            listen: self.listen.clone(),
            cores: parse_flag("--cores", &self.cores, config::value::parse_cores)?,
            control_socket: self.socket.clone(),
            log_level: parse_flag(
                "--log-level",
                &self.log_level,
                config::value::parse_log_level,
            )?,
            xdp: self.xdp.clone(),
            ..self.files.overrides()
        })
    }
}

/// Parses an optional flag's value with one of the configuration's parsers.
fn parse_flag<T>(
    flag: &str,
    text: &Option<String>,
    parse: fn(&str) -> Result<T, String>,
) -> anyhow::Result<Option<T>> {
    text.as_deref()
        .map(|text| parse(text).map_err(|err| anyhow::anyhow!("{flag}: {err}")))
        .transpose()
}

//----------- main -----------------------------------------------------------

fn main() -> ExitCode {
    tern_server::fix_allocator_threshold();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("tern: error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Check(args) => check(args),
        Command::Dump { origin, file } => dump(&origin, &file),
        Command::Sign(args) => sign::sign(args),
        Command::Stats(args) => stats(args),
        Command::Status(args) => control_command(&args, "status"),
        Command::Reload { server, zone } => {
            let command = match zone {
                Some(zone) => format!("reload {zone}"),
                None => "reload".to_string(),
            };
            control_command(&server, &command)
        }
        Command::Stop(args) => control_command(&args, "stop"),
        Command::ZoneStatus { server, zone } => {
            let command = match zone {
                Some(zone) => format!("zone-status {zone}"),
                None => "zone-status".to_string(),
            };
            control_command(&server, &command)
        }
        Command::Refresh { server, zone } => control_command(&server, &format!("refresh {zone}")),
        Command::Retransfer { server, zone } => {
            control_command(&server, &format!("retransfer {zone}"))
        }
        Command::Notify { server, zone } => control_command(&server, &format!("notify {zone}")),
        Command::Keys { server, action } => match action {
            keyctl::KeysCommand::Import(args) => keys_import::run(args),
            action => control_command(&server, &action.line()),
        },
        Command::Manpage => manpage(),
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // Profiles the whole serving run; dropped when serve returns, which
    // writes dhat-heap.json in the working directory.
    #[cfg(feature = "dhat-heap")]
    let _profiler = dhat::Profiler::new_heap();
    let started = std::time::SystemTime::now();
    let overrides = args.overrides()?;
    let config = Config::load(&overrides)?;
    logger::init(config.log_level);
    let signals = ControlSignals::register()?;
    // Looked up now, so that a missing user fails the start before any work.
    let account = config.user.as_deref().map(privileges::lookup).transpose()?;
    ControlSocket::check_path(&config.control_socket, account.as_ref().map(|a| a.uid))?;
    if let Some(account) = &account {
        ControlSocket::prepare_directory(&config.control_socket, (account.uid, account.gid))?;
    }

    let loaded = tern_zones::load::load_all(&config.zone_sources(), None)?;
    for line in &loaded.warnings {
        log::warn!("{line}");
    }
    if !loaded.errors.is_empty() {
        for line in &loaded.errors {
            log::error!("{line}");
        }
        anyhow::bail!("{} zone(s) failed to load", loaded.failed);
    }
    if !(config.secondaries.is_empty() && config.catalogs.is_empty())
        && config.state_directory.is_none()
    {
        log::warn!(
            "no state-directory: received zones are kept in memory only and transferred again \
             at each start"
        );
    }
    // Secondary zones start from their saved copies, if any.
    let mut plan = tern_zones::start::Plan::new(
        config.state_directory.as_deref(),
        &config.secondaries,
        &config.catalogs,
    );
    // Secondary zones tern signs serve their saved signed copies instead.
    let bump = tern_zones::bump::Bump::new(
        config.signing.as_ref(),
        &config.secondaries,
        &config.catalogs,
    );
    if let Some(bump) = &bump {
        bump.plan_start(&mut plan);
    }
    // Taken, not cloned: `plan` lives as long as `run`, and its copy would
    // keep the saved versions alive after refreshes replaced them.
    let saved_zones = std::mem::take(&mut plan.served);
    let zone_count = loaded.zones.len() + saved_zones.len();
    let mut primaries = loaded.zones;
    // Dynamic updates: each updatable zone's journal applied on top of its
    // file before anything serves it; the cores hand UPDATEs to a channel
    // that the update thread reads once the zones' owner exists. The
    // thread runs even with no `update:` rules, so that rules added by
    // `tern reload` take effect without a restart (until then every UPDATE
    // is REFUSED, as without it).
    let update_config = tern_zones::update::UpdateConfig {
        zones: config.updates.clone(),
        sync_interval: config.zone_file_sync,
        max_zone_records: config.transfer_limits.records,
        rate_per_key: config.update_rate,
        max_in_flight: config.update_queue,
        secondaries: config.secondary_updates.clone(),
        give_back: Some(tern_server::give_back_free_memory),
    };
    tern_zones::update::replay_start(&update_config, &mut primaries);
    let update_channel = Some(tern_zones::update::channel(&update_config));
    let catalog = Arc::new(tern_authority::Catalog::new(
        primaries
            .iter()
            .map(|(zone, _)| zone)
            .chain(&saved_zones)
            .cloned()
            .collect::<Vec<_>>(),
    ));
    // The transfer thread's queue exists before the cores, which send it
    // the NOTIFYs they accept.
    let queue = tern_zones::refresh::Queue::new();
    let mut server_config = config.server_config(ALLOCATIONS);
    // The list of versions is dropped at once: held for the life of `run`,
    // it kept every version loaded at start (its tables, a zone's size)
    // alive after updates or reloads replaced it (issue 25).
    let journals = Arc::new(std::sync::Mutex::new(tern_zones::state::load_journals(
        config.state_directory.as_deref(),
        &catalog.zones().cloned().collect::<Vec<_>>(),
    )));
    server_config.journals = Arc::clone(&journals);
    if !plan.starts.is_empty() {
        server_config.notify_in = Some(tern_server::NotifyIn {
            zones: Arc::clone(&plan.notify_zones),
            refresh: {
                let secondaries = queue.handle();
                Arc::new(move |origin| secondaries.refresh(origin))
            },
        });
    }
    // The certificate is read (or made) before the cores start.
    let tls = tls::start(&config)?;
    server_config.tls = tls.as_ref().map(|(tls, _)| tls.clone());
    let client_roots = tls.as_ref().map(|(tls, _)| Arc::clone(&tls.clients));
    let certificates = tls.map(|(_, certificates)| certificates);
    if let Some((submitter, _)) = &update_channel {
        server_config.update_in = Some(update_in(submitter.clone()));
    }
    // Bound while tern may still be root (a port below 1024), and before
    // anything serves: a failure here stops the start cleanly.
    let metrics_listener = config.metrics_listen.map(metrics::bind).transpose()?;
    // The dnstap writer starts before the cores, which each take their end
    // of it: its file is opened now, while tern may still be root. It gets
    // its go once they serve (root dropped), so that its first socket
    // connection is made as the user, and is finished after they stop.
    let mut dnstap = match &config.dnstap {
        Some(tap) => {
            let cores = config.cores.len().max(1);
            let (writer, taps) =
                tern_dnstap::DnstapWriter::start(tap, cores).context("starting the server")?;
            server_config.dnstap = taps;
            Some(writer)
        }
        None => None,
    };
    // A start that fails returns here: the writer, dropped without its go,
    // ends having connected nothing.
    let server = tern_server::Server::start_then(server_config, Arc::clone(&catalog), || {
        // Every core has bound its sockets and none has read a query yet.
        match &account {
            Some(account) => privileges::drop_to(account)
                .map_err(|err| std::io::Error::other(format!("{err:#}"))),
            None => Ok(()),
        }
    })
    .context("starting the server")?;
    if let Some(writer) = &mut dnstap {
        writer.go();
    }
    let handle = server.handle();
    // From here an error stops the cores cleanly before it is returned:
    // never a process that dies half-started.
    let mut server = StopUnlessServing(Some(Serving { server, dnstap }));
    let producer = config
        .catalog_producer
        .as_deref()
        .map(tern_zones::load::parse_origin)
        .transpose()
        .map_err(anyhow::Error::msg)
        .context("zones.catalog-producer")?;
    let notifier = if !config.notify.any() {
        None
    } else {
        Some(
            tern_zones::notify::Notifier::start(config.notify.clone())
                .context("starting the NOTIFY thread")?,
        )
    };
    let zones = tern_zones::owner::Zones::new(
        Arc::new(Cores(handle.clone())),
        notifier.as_ref().map(|notifier| notifier.handle()),
        journals,
        config.ixfr_history,
        config.state_directory.clone(),
        tern_zones::owner::Start {
            primaries,
            secondaries: saved_zones,
            catalog: Arc::unwrap_or_clone(catalog),
        },
        producer,
        plan.consumed.clone(),
        Some(queue.handle()),
        Arc::clone(&plan.notify_zones),
    );
    if config.catalog_producer.is_some() {
        zones.publish();
    }
    let updater = match update_channel {
        Some((_, queue)) => Some(
            tern_zones::update::Updater::start(update_config, queue, Arc::clone(&zones))
                .context("starting the update thread")?,
        ),
        None => None,
    };
    for ((zone, copy), role) in plan.starts.iter().zip(&plan.roles) {
        zones.set_status(
            zone.origin,
            copy.as_ref().map(|(_, timers)| *timers),
            role.clone(),
        );
    }
    zones.notify_all();
    if let Some(bump) = bump {
        zones
            .start_bump(bump)
            .context("starting the signer of secondary zones")?;
    }
    let secondaries = if plan.starts.is_empty() {
        None
    } else {
        let events = Arc::clone(&zones);
        Some(
            tern_zones::refresh::Secondaries::start(
                queue,
                plan.starts,
                config.transfer_limits,
                move |event| events.apply(event),
            )
            .context("starting the transfer thread")?,
        )
    };

    // Without its control socket the server still serves; `tern stats`
    // then cannot reach it, which the error says.
    let mut reloader = Reloader::new(overrides, config.clone(), Arc::clone(&zones));
    reloader.tls = certificates.clone().zip(client_roots);
    reloader.update_rules = updater.as_ref().map(|updater| updater.rules());
    let reloads = Reloads::start(reloader)?;
    let resigns = reloads.clone();
    zones
        .start_resigning(move |origin| resigns.resign(origin))
        .context("starting the re-signing thread")?;
    let control = Control {
        handle: handle.clone(),
        zones: Arc::clone(&zones),
        secondaries: secondaries.as_ref().map(|s| s.handle()),
        reloads: reloads.clone(),
        started: std::time::Instant::now(),
        tls: certificates,
    };
    let socket = match ControlSocket::start(&config.control_socket, control) {
        Ok(socket) => Some(socket),
        Err(err) => {
            log::error!("control socket: {err:#}; `tern stats` will not reach this server");
            None
        }
    };
    if let Some(listener) = metrics_listener {
        let sources = metrics::Sources {
            handle: handle.clone(),
            zones: Arc::clone(&zones),
            started,
        };
        let bound = metrics::serve(listener, sources)?;
        log::info!("metrics on http://{bound}/metrics");
    }
    let tls_listen = config.tls.as_ref().map_or(&[][..], |tls| &tls.listen[..]);
    log::info!(
        "{}{}",
        start_line(
            zone_count,
            [&config.listen, &config.proxy.listen, tls_listen],
            &config.cores
        ),
        socket.as_ref().map_or(String::new(), |socket| format!(
            "; control socket {}",
            socket.path().display()
        )),
    );
    let cores = config.cores.len().max(1);
    signals.spawn(handle.clone(), reloads)?;
    service::started(&handle, cores)?;

    let result = server.serving().join();
    // Every updated zone's file written from its last version.
    if let Some(updater) = updater {
        updater.stop();
    }
    drop(secondaries);
    drop(notifier);
    drop(socket);
    result.context("serving")?;
    log::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// The cores' way to the update thread: UPDATEs for the zones with rules.
fn update_in(submitter: tern_zones::update::Submitter) -> tern_server::UpdateIn {
    let takes = submitter.clone();
    tern_server::UpdateIn {
        takes: Arc::new(move |origin| takes.takes(origin)),
        submit: Arc::new(move |request: tern_server::UpdateRequest| {
            let reply = request.reply;
            if submitter.forwards(request.origin.as_bytes()) {
                // A secondary zone's: relayed from its primary.
                submitter.forward(
                    request.origin,
                    tern_zones::update::ForwardRequest {
                        message: request.message,
                        relay: Box::new(move |answer| match answer {
                            Some(answer) => reply.relay(answer),
                            None => reply.send(tern_wire::types::Rcode::SERVFAIL),
                        }),
                    },
                );
                return;
            }
            submitter.submit(tern_zones::update::Request {
                origin: request.origin,
                message: request.message,
                key: request.key,
                client: request.client.ip(),
                reply: Box::new(move |rcode| reply.send(rcode)),
            });
        }),
    }
}

/// The cores, as the zones' owner reaches them.
struct Cores(tern_server::Handle);

impl tern_zones::Cores for Cores {
    fn update(&self, changes: Vec<tern_authority::CatalogChange>) {
        self.0.update(changes);
    }
}

/// Parses a zone and prints it in canonical form (`tern dump`).
fn dump_zone(origin_text: &str, path: &std::path::Path) -> anyhow::Result<String> {
    let origin = tern_zones::load::parse_origin(origin_text).map_err(anyhow::Error::msg)?;
    let parsed = tern_zone::parse_file(path, origin.as_name(), &tern_zone::Options::default())
        .map_err(|errors| anyhow::anyhow!("{errors}"))?;
    let mut text = String::new();
    tern_zone::print::write_zone(&parsed.records, &mut text);
    Ok(text)
}

/// A started server that, dropped before [`StopUnlessServing::serving`]
/// (an error after the start), stops its cores and waits for them, then
/// for its dnstap writer.
struct StopUnlessServing(Option<Serving>);

impl StopUnlessServing {
    /// The start completed: the server, to serve until it is stopped.
    fn serving(&mut self) -> Serving {
        self.0.take().expect("taken once, at the end of the start")
    }
}

impl Drop for StopUnlessServing {
    fn drop(&mut self) {
        if let Some(serving) = self.0.take() {
            log::error!("the start did not complete; stopping");
            serving.server.handle().shutdown();
            let _ = serving.join();
        }
    }
}

/// The serving cores and the dnstap writer they log to.
struct Serving {
    server: tern_server::Server,
    dnstap: Option<tern_dnstap::DnstapWriter>,
}

impl Serving {
    /// Waits for every core to stop (after `Handle::shutdown`), then for
    /// the dnstap writer to write what they left and close its output
    /// (STOP, and FINISH from a socket's reader): finished only once no
    /// core can log any more. Returns the cores' first error.
    fn join(self) -> std::io::Result<()> {
        let result = self.server.join();
        if let Some(writer) = self.dnstap {
            writer.finish();
        }
        result
    }
}

/// The start line's words before the control socket: the zones, the
/// addresses by what they serve (`listen`: UDP and TCP; `proxy.listen`:
/// the same behind a PROXY header; `tls.listen`: DNS over TLS) and the
/// cores.
fn start_line(zones: usize, [plain, proxied, tls]: [&[SocketAddr]; 3], cores: &[usize]) -> String {
    let join = |addresses: &[SocketAddr]| {
        let texts: Vec<String> = addresses.iter().map(ToString::to_string).collect();
        texts.join(", ")
    };
    let mut line = format!("serving {zones} zone(s) on {}", join(plain));
    if !proxied.is_empty() {
        line += &format!(", with PROXY headers on {}", join(proxied));
    }
    if !tls.is_empty() {
        line += &format!(", DNS over TLS on {}", join(tls));
    }
    line + &format!(" with {}", describe_cores(cores))
}

fn describe_cores(cores: &[usize]) -> String {
    if cores.is_empty() {
        return "one unpinned core".to_string();
    }
    let list: Vec<String> = cores.iter().map(ToString::to_string).collect();
    format!("{} core(s) on CPU {}", cores.len(), list.join(","))
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let loaded = match (&args.origin, &args.file) {
        (Some(origin), Some(file)) => tern_zones::load::load_one_for_check(origin, file),
        _ => {
            let config = Config::load(&args.files.overrides())?;
            // The service's ExecStartPre: a `user` that does not exist
            // fails here, before the start.
            if let Some(user) = &config.user {
                privileges::lookup(user).context("user")?;
            }
            // Checked unsigned: a check never reads or generates keys.
            let sources = tern_zones::load::Sources {
                signing: None,
                ..config.zone_sources()
            };
            tern_zones::load::load_all(&sources, None)?
        }
    };
    if let (None, Some(file)) = (&args.origin, &args.files.config) {
        println!("{}: configuration OK", file.display());
    }
    for line in loaded.warnings.iter().chain(&loaded.errors) {
        println!("{line}");
    }
    if loaded.errors.is_empty() {
        println!("{} zone(s) OK", loaded.zones.len());
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "{} zone(s) OK, {} failed",
            loaded.zones.len(),
            loaded.failed
        );
        Ok(ExitCode::FAILURE)
    }
}

fn manpage() -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    manpage::render(Cli::command(), &mut std::io::stdout().lock())
        .context("writing the manual page")?;
    Ok(ExitCode::SUCCESS)
}

fn dump(origin: &str, file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let text = dump_zone(origin, file)?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

fn stats(args: StatsArgs) -> anyhow::Result<ExitCode> {
    print!("{}", control::request_stats(&args.socket_path()?)?);
    Ok(ExitCode::SUCCESS)
}

/// Sends one command to the running server and prints its reply.
fn control_command(args: &StatsArgs, command: &str) -> anyhow::Result<ExitCode> {
    print!("{}", control::request(&args.socket_path()?, command)?);
    Ok(ExitCode::SUCCESS)
}

impl StatsArgs {
    /// The control socket: `--socket`, the configuration's, or the default.
    fn socket_path(&self) -> anyhow::Result<PathBuf> {
        Ok(match (&self.socket, &self.config) {
            (Some(path), _) => path.clone(),
            (None, Some(file)) => Config::from_file(file)?.control_socket,
            (None, None) => config::default_control_socket(),
        })
    }
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    /// The start line names every kind of listener there is: plain, then
    /// PROXY and DNS over TLS only when configured.
    #[test]
    fn start_line_lists_every_listener() {
        let plain: Vec<SocketAddr> = vec!["127.0.0.1:5353".parse().unwrap()];
        let proxied: Vec<SocketAddr> = vec!["127.0.0.1:5354".parse().unwrap()];
        let tls: Vec<SocketAddr> = vec![
            "127.0.0.1:853".parse().unwrap(),
            "[::1]:853".parse().unwrap(),
        ];
        assert_eq!(
            start_line(2, [&plain, &[], &[]], &[]),
            "serving 2 zone(s) on 127.0.0.1:5353 with one unpinned core"
        );
        assert_eq!(
            start_line(1, [&plain, &proxied, &tls], &[0, 1]),
            "serving 1 zone(s) on 127.0.0.1:5353, with PROXY headers on 127.0.0.1:5354, \
             DNS over TLS on 127.0.0.1:853, [::1]:853 with 2 core(s) on CPU 0,1"
        );
    }
}
