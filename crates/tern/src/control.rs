//! The control plane of `tern serve`: signals, reloads and the control
//! socket. Everything here runs on the binary's own threads, never on a
//! core: zones are re-read and built here, and the cores only receive the
//! finished catalog through `tern_server::Handle::reload`.
//!
//! - SIGHUP and `reload [ZONE]`: re-read the configuration and rebuild the
//!   zones whose files changed (or the one named); a zone that fails keeps
//!   its previous version; then swap the new catalog in on every core.
//!   Settings the running cores cannot change (addresses, CPUs, limits)
//!   are logged as needing a restart.
//! - SIGTERM, SIGINT: log the counters and stop the cores (they finish
//!   in-flight work); if they have not stopped within
//!   [`SHUTDOWN_DEADLINE`], exit anyway.
//! - SIGUSR1: log the per-core counters.
//! - The control socket (a Unix stream socket, mode 0600): a client writes
//!   one command line (`stats`, `status`, `reload [ZONE]`, `stop` and the
//!   zone-transfer commands) and reads the reply as text until the
//!   connection closes; `tern stats` and the other subcommands are that
//!   client.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};
use signal_hook::iterator::Signals;
use tern_server::{CoreStats, Handle};
use tern_wire::name::LowerNameBuf;
use tern_zones::event::Event;
use tern_zones::load::LoadError;
use tern_zones::refresh::SecondariesHandle;

use crate::config::{Config, Overrides};
use crate::{logger, service};
use tern_zones::owner::Zones;

/// How long the cores get to finish in-flight work after SIGTERM or
/// SIGINT before the process exits regardless; under the 2 s an operator
/// (or a service manager's stop timeout) is promised.
pub(crate) const SHUTDOWN_DEADLINE: Duration = Duration::from_millis(1500);

/// The control socket's command for the counters.
const STATS_COMMAND: &str = "stats";

/// The control socket's commands, as `tern` subcommands name them.
const COMMANDS: &str =
    "stats, status, reload [ZONE], stop, zone-status [ZONE], refresh ZONE, retransfer ZONE, \
     notify ZONE, keys ...";

/// The longest command line read from a control client.
const MAX_COMMAND_LEN: u64 = 256;

/// The largest reply `tern stats` reads: a line per core (at most 1024)
/// of well under 1 KiB each.
const MAX_REPLY_LEN: u64 = 1 << 20;

/// How long `tern reload` waits for the reload's summary.
const RELOAD_TIMEOUT: Duration = Duration::from_secs(600);

/// How long either side of the control socket waits for the other.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// The pause after a failed `accept` (e.g. out of descriptors), so that a
/// persistent failure does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How [`CoreStats`] displays a sum (and an unpinned core).
const TOTAL_PREFIX: &str = "all cores: ";

/// How an unpinned core's line starts instead.
const UNPINNED_PREFIX: &str = "core -: ";

/// Permissions of the control socket: its owner only.
const SOCKET_MODE: u32 = 0o600;

/// Permissions of the control socket's directory when tern makes it.
const DIRECTORY_MODE: u32 = 0o700;

//----------- Signals --------------------------------------------------------

/// The signals `tern serve` handles, registered early (before the zones
/// load) so that one arriving during start-up waits in the queue instead
/// of killing the process with its default action.
pub(crate) struct ControlSignals(Signals);

impl ControlSignals {
    /// Registers the handlers.
    pub(crate) fn register() -> anyhow::Result<ControlSignals> {
        Signals::new([SIGHUP, SIGTERM, SIGINT, SIGUSR1])
            .map(ControlSignals)
            .context("installing signal handlers")
    }

    /// Handles signals on a thread of its own until the process ends.
    pub(crate) fn spawn(mut self, handle: Handle, reloads: Reloads) -> anyhow::Result<()> {
        std::thread::Builder::new()
            .name("tern-signals".into())
            .spawn(move || {
                // Bounded: `forever` blocks between signals; SIGTERM and
                // SIGINT end the loop (and the process).
                for signal in self.0.forever() {
                    match signal {
                        SIGHUP => reloads.request("SIGHUP", None, None),
                        SIGUSR1 => log_stats("SIGUSR1", &handle.stats()),
                        SIGTERM => stop("SIGTERM", &handle),
                        SIGINT => stop("SIGINT", &handle),
                        _ => {}
                    }
                }
            })
            .context("starting the signal thread")?;
        Ok(())
    }
}

/// Logs the counters and stops the cores; the main thread, waiting for
/// them, then returns. If the cores are still busy after
/// [`SHUTDOWN_DEADLINE`], exits from here.
///
/// The counters are read before the stop because a stopped core no longer
/// reports: the queries still in flight at the signal are not in them.
fn stop(signal: &str, handle: &Handle) -> ! {
    // The deadline counts from the signal: a core slow to report its
    // counters eats into it rather than extending it.
    let deadline = Instant::now() + SHUTDOWN_DEADLINE;
    log::info!("{signal}: stopping");
    service::stopping();
    log_stats("at shutdown", &handle.stats());
    handle.shutdown();
    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
    log::warn!(
        "the cores did not stop within {} ms; exiting without waiting for them",
        SHUTDOWN_DEADLINE.as_millis()
    );
    std::process::exit(0)
}

//----------- Reloader -------------------------------------------------------

/// What a reload needs: how the configuration was given, what is running,
/// and the zones being served. It lives on a thread of its own
/// ([`Reloads`]), so that neither a signal nor a control client waits
/// behind a reload: SIGTERM and `tern stop` stop the server at once, even
/// while a large zone is being rebuilt. One reload runs at a time.
pub(crate) struct Reloader {
    overrides: Overrides,
    running: Config,
    zones: Arc<Zones>,
    /// The TLS certificate and the client certificates' trust anchors
    /// (`tls.client-ca`), read again at each reload.
    pub(crate) tls: Option<(
        Arc<tern_server::tls::config::Certificates>,
        Arc<tern_server::tls::config::ClientRoots>,
    )>,
    /// The update thread's rules, set again at each reload.
    pub(crate) update_rules: Option<tern_zones::update::Rules>,
}

/// One reload asked for: why (for the log), of which zone (`None`: every
/// zone that changed), and the control client waiting for its summary.
struct ReloadRequest {
    reason: &'static str,
    only: Option<String>,
    reply: Option<UnixStream>,
}

/// Asks the reload thread for reloads; cheap to clone.
#[derive(Clone)]
pub(crate) struct Reloads {
    requests: mpsc::Sender<ReloadRequest>,
}

impl Reloads {
    /// Starts the reload thread for `reloader`.
    pub(crate) fn start(reloader: Reloader) -> anyhow::Result<Reloads> {
        let (requests, received) = mpsc::channel::<ReloadRequest>();
        std::thread::Builder::new()
            .name("tern-reload".into())
            .spawn(move || {
                let mut reloader = reloader;
                // Bounded: one request at a time, until every sender is
                // gone (the process ends first).
                for request in received {
                    let outcome = reload(&mut reloader, request.reason, request.only.as_deref());
                    if let Some(stream) = request.reply {
                        let reply = match outcome {
                            Ok(summary) => format!("{summary}\n"),
                            Err(err) => format!("error: {err}\n"),
                        };
                        let _ = (&stream).write_all(reply.as_bytes());
                    }
                }
            })
            .context("starting the reload thread")?;
        Ok(Reloads { requests })
    }

    /// Queues the re-signing of the signed zone `origin` (its signatures
    /// near expiry): a `tern reload ZONE`, whose failure keeps the
    /// previous version serving. Returns at once.
    pub(crate) fn resign(&self, origin: LowerNameBuf) {
        self.request("re-signing", Some(&origin.as_name().to_string()), None);
    }

    /// Queues a reload; returns at once. With `reply`, its summary is
    /// written there when it is done.
    fn request(&self, reason: &'static str, only: Option<&str>, reply: Option<UnixStream>) {
        let _ = self.requests.send(ReloadRequest {
            reason,
            only: only.map(str::to_string),
            reply,
        });
    }
}

impl Reloader {
    /// A reloader for a server started with `running` (which came from
    /// `overrides`) serving `served`.
    pub(crate) fn new(overrides: Overrides, running: Config, zones: Arc<Zones>) -> Reloader {
        Reloader {
            overrides,
            running,
            zones,
            tls: None,
            update_rules: None,
        }
    }

    /// Re-reads the configuration, rebuilds the zones whose files changed
    /// (or only `only`, whatever its files) and swaps the new catalog in
    /// (with the secondary zones as they are). A configuration that does
    /// not load, or a zone directory that cannot be read, aborts the
    /// reload: everything keeps serving as it was. A zone that fails to
    /// load (`tern check`'s checks run first) keeps its previous version.
    /// Returns a one-line summary, or why nothing changed.
    pub(crate) fn reload(&mut self, only: Option<&str>) -> Result<String, String> {
        // RELOADING=1 now, READY=1 when this returns, whichever way.
        let _reloading = service::Reloading::begin();
        let only: Option<tern_zones::load::Origin> = only
            .map(|text| {
                tern_zones::load::parse_origin(text)
                    .map(|name| name.as_name().as_bytes().to_ascii_lowercase().into())
            })
            .transpose()?;
        let next = Config::load(&self.overrides)
            .map_err(|err| format!("reload aborted, nothing changed: {err:#}"))?;
        logger::set_level(next.log_level);
        for key in self.running.restart_changes(&next) {
            log::warn!("{key} changed in the configuration; it takes effect after a restart");
        }
        if let Some((certificates, clients)) = &self.tls {
            crate::tls::reload(certificates, clients, &next);
        }
        if let Some(rules) = &self.update_rules {
            rules.set(next.updates.clone());
        }
        let sources = next.zone_sources();
        let loaded = match &only {
            // One zone: its file is found without reading the others.
            Some(origin) => tern_zones::load::load_one(&sources, origin, Some(&*self.zones))
                .map_err(|err| match err {
                    LoadError::NotConfigured { .. } => err.to_string(),
                    _ => format!("reload aborted, the zones are unchanged: {err}"),
                })?,
            None => tern_zones::load::load_all(&sources, Some(&*self.zones))
                .map_err(|err| format!("reload aborted, the zones are unchanged: {err:#}"))?,
        };
        for line in &loaded.warnings {
            log::warn!("{line}");
        }
        for line in &loaded.errors {
            log::error!("{line}");
        }
        for origin in &loaded.kept {
            log::warn!("zone {origin} failed to load; its previous version keeps serving");
        }
        let rebuilt = loaded.zones.len();
        self.zones.apply(Event::Loaded {
            zones: loaded.zones,
            unloaded: loaded.removed,
        });
        let serving = self.zones.primary_count();
        let summary = format!(
            "reloaded: {serving} zone(s) serving, {rebuilt} rebuilt, {} unchanged; {} failed to \
             load, {} of them kept their previous version",
            serving - rebuilt - loaded.kept.len(),
            loaded.failed,
            loaded.kept.len()
        );
        log::info!("{summary}");
        Ok(summary)
    }
}

/// Runs a reload asked for by `reason` (SIGHUP or the control socket) and
/// logs its outcome.
fn reload(reloader: &mut Reloader, reason: &str, only: Option<&str>) -> Result<String, String> {
    match only {
        Some(zone) => log::info!("{reason}: reloading zone {zone}"),
        None => log::info!("{reason}: reloading the configuration and the changed zones"),
    }
    let outcome = reloader.reload(only);
    if let Err(err) = &outcome {
        log::error!("{err}");
    }
    outcome
}

//----------- Counters -------------------------------------------------------

/// The counters as text: one line per core (`core 0: queries ...`), then
/// the total (`all cores: queries ...`).
pub(crate) fn format_stats(stats: &[CoreStats]) -> String {
    let mut text = String::new();
    for core in stats {
        let line = core.to_string();
        // An unpinned core displays like a sum; name it apart from the total.
        match (core.core, line.strip_prefix(TOTAL_PREFIX)) {
            (None, Some(counters)) => text.push_str(&format!("{UNPINNED_PREFIX}{counters}\n")),
            _ => text.push_str(&format!("{line}\n")),
        }
    }
    let total: CoreStats = stats.iter().sum();
    text.push_str(&format!("{total}\n"));
    text
}

/// Logs the counters, one message per line.
pub(crate) fn log_stats(reason: &str, stats: &[CoreStats]) {
    for line in format_stats(stats).lines() {
        log::info!("{reason}: {line}");
    }
}

//----------- ControlSocket --------------------------------------------------

/// The listening control socket; removes its file when dropped.
pub(crate) struct ControlSocket {
    path: PathBuf,
}

impl ControlSocket {
    /// Refuses a path that exists and is not a socket owned by this
    /// process's user (or by `owner`, the user tern becomes after binding,
    /// whose socket a previous run left): tern does not start then, rather
    /// than remove or talk through something that is not its own.
    pub(crate) fn check_path(path: &Path, owner: Option<u32>) -> anyhow::Result<()> {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return Ok(());
        };
        if !meta.file_type().is_socket() {
            bail!(
                "the control socket's path {} exists and is not a socket; remove it or set \
                 control-socket",
                path.display()
            );
        }
        let ours = own_uid() == meta.uid() || owner == Some(meta.uid());
        if !ours {
            bail!(
                "the control socket {} belongs to user {}, not to this one; remove it or set \
                 control-socket",
                path.display(),
                meta.uid()
            );
        }
        Ok(())
    }

    /// Makes the socket's directory (mode 0700) for `owner` before tern
    /// becomes that user, who may not create it (`/run/tern` as root). A
    /// directory that is there already must be a directory (not a
    /// symbolic link) of `owner`'s or root's.
    pub(crate) fn prepare_directory(path: &Path, owner: (u32, u32)) -> anyhow::Result<()> {
        let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) else {
            return Ok(());
        };
        if std::fs::symlink_metadata(dir).is_ok() {
            return check_directory(dir, owner.0);
        }
        std::fs::DirBuilder::new()
            .mode(DIRECTORY_MODE)
            .create(dir)
            .with_context(|| format!("creating {} for the control socket", dir.display()))?;
        std::os::unix::fs::chown(dir, Some(owner.0), Some(owner.1))
            .with_context(|| format!("giving {} to the configured user", dir.display()))
    }

    /// Binds `path` (making its directory, mode 0700, if it is missing)
    /// and answers clients on a thread of its own. A stale socket file (no
    /// server behind it) is replaced; a live one is an error, as is
    /// anything [`ControlSocket::check_path`] or [`check_directory`]
    /// refuses. The socket appears at `path` with its final permissions:
    /// see [`bind_private`].
    pub(crate) fn start(path: &Path, control: Control) -> anyhow::Result<ControlSocket> {
        ControlSocket::check_path(path, None)?;
        if std::fs::symlink_metadata(path).is_ok() {
            if UnixStream::connect(path).is_ok() {
                bail!(
                    "{} is in use by another server; set control-socket or --socket",
                    path.display()
                );
            }
            std::fs::remove_file(path)
                .with_context(|| format!("removing the stale socket {}", path.display()))?;
        }
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            if std::fs::symlink_metadata(dir).is_ok() {
                check_directory(dir, own_uid())?;
            } else {
                std::fs::DirBuilder::new()
                    .mode(DIRECTORY_MODE)
                    .create(dir)
                    .with_context(|| {
                        format!(
                            "creating {} for the control socket (set control-socket to choose \
                             another place)",
                            dir.display()
                        )
                    })?;
            }
        }
        let listener = bind_private(path)?;
        let socket = ControlSocket {
            path: path.to_path_buf(),
        };
        std::thread::Builder::new()
            .name("tern-control".into())
            .spawn(move || accept_loop(&listener, &control))
            .context("starting the control thread")?;
        Ok(socket)
    }

    /// The socket's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// This process's user id (as the files it creates get it); root if it
/// cannot be read.
fn own_uid() -> u32 {
    std::fs::metadata("/proc/self").map_or(0, |me| me.uid())
}

/// Refuses a directory for the control socket that is a symbolic link or
/// not a directory (tern would make its socket wherever the link points),
/// or that belongs to another user than `owner` and root (who could
/// replace tern's socket with one of their own).
fn check_directory(dir: &Path, owner: u32) -> anyhow::Result<()> {
    let meta =
        std::fs::symlink_metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    if meta.file_type().is_symlink() {
        bail!(
            "{}, the control socket's directory, is a symbolic link; use the directory itself \
             (set control-socket)",
            dir.display()
        );
    }
    if !meta.is_dir() {
        bail!(
            "{}, the control socket's directory, is not a directory",
            dir.display()
        );
    }
    if meta.uid() != owner && meta.uid() != 0 {
        bail!(
            "{}, the control socket's directory, belongs to user {}, not to tern's; set \
             control-socket",
            dir.display(),
            meta.uid()
        );
    }
    Ok(())
}

/// Binds the socket at `path` with no moment at which another user could
/// connect to it before its permissions are set: it is bound in a
/// directory of its own that only this user may enter (mode 0700, next to
/// `path`), made owner-only there, and then renamed into place.
fn bind_private(path: &Path) -> anyhow::Result<UnixListener> {
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let staging = dir.join(format!(".tern-{}", std::process::id()));
    if std::fs::symlink_metadata(&staging).is_ok() {
        // Left by an earlier process of this id: ours (checked) to remove.
        check_directory(&staging, own_uid())?;
        std::fs::remove_dir_all(&staging)
            .with_context(|| format!("removing {}", staging.display()))?;
    }
    std::fs::DirBuilder::new()
        .mode(DIRECTORY_MODE)
        .create(&staging)
        .with_context(|| format!("creating {}", staging.display()))?;
    let bound = (|| {
        let temporary = staging.join("s");
        let listener = UnixListener::bind(&temporary)
            .with_context(|| format!("binding {}", path.display()))?;
        std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(SOCKET_MODE))
            .with_context(|| format!("restricting {}", path.display()))?;
        std::fs::rename(&temporary, path)
            .with_context(|| format!("moving the control socket to {}", path.display()))?;
        Ok(listener)
    })();
    let _ = std::fs::remove_dir_all(&staging);
    bound
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Answers clients one at a time, for the life of the process. Each client
/// is bounded by [`CLIENT_TIMEOUT`] and [`MAX_COMMAND_LEN`].
fn accept_loop(listener: &UnixListener, control: &Control) {
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Err(err) = answer_client(stream, control) {
                    log::debug!("control client: {err}");
                }
            }
            Err(err) => {
                log::warn!("control socket: accept failed: {err}");
                std::thread::sleep(ACCEPT_BACKOFF);
            }
        }
    }
}

/// What the control socket acts on.
pub(crate) struct Control {
    pub(crate) handle: Handle,
    pub(crate) zones: Arc<Zones>,
    pub(crate) secondaries: Option<SecondariesHandle>,
    pub(crate) reloads: Reloads,
    /// When serving began, for `status`.
    pub(crate) started: Instant,
    /// The DNS over TLS certificate, whose pin `status` shows.
    pub(crate) tls: Option<Arc<tern_server::tls::config::Certificates>>,
}

fn answer_client(stream: UnixStream, control: &Control) -> io::Result<()> {
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let mut line = Vec::new();
    BufReader::new((&stream).take(MAX_COMMAND_LEN)).read_until(b'\n', &mut line)?;
    let command = String::from_utf8_lossy(&line);
    let mut words = command.split_whitespace();
    let reply = match (words.next(), words.next(), words.next()) {
        (Some(STATS_COMMAND), None, _) => format_stats(&control.handle.stats()),
        (Some("status"), None, _) => status(control),
        (Some("reload"), zone, None) => {
            // The reload thread answers when it is done (the client waits up
            // to RELOAD_TIMEOUT); this thread takes the next client.
            stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
            control
                .reloads
                .request("control socket", zone, Some(stream));
            return Ok(());
        }
        (Some("stop"), None, _) => {
            // The client reads until the connection closes: close it
            // before stopping, which does not return.
            (&stream).write_all(b"stopping\n")?;
            stream.shutdown(std::net::Shutdown::Both)?;
            drop(stream);
            stop("control socket", &control.handle);
        }
        (Some("zone-status"), zone, None) => zone_status(control, zone),
        (Some(verb @ ("refresh" | "retransfer")), Some(zone), None) => {
            secondary_command(control, verb, zone)
        }
        (Some("notify"), Some(zone), None) => notify_command(control, zone),
        (Some("keys"), _, _) => {
            // A signed secondary zone is signed again from its version
            // received; a primary zone is loaded again.
            let resign = |zone: LowerNameBuf| {
                if !control.zones.sign_secondary_again(zone.as_bytes()) {
                    control.reloads.resign(zone);
                }
            };
            crate::keyctl::command(&control.zones, &resign, &command)
        }
        _ => format!(
            "error: unknown command {:?}; the commands are: {COMMANDS}\n",
            command.trim()
        ),
    };
    (&stream).write_all(reply.as_bytes())
}

/// `status`: version, uptime, the cores answering, the zones served.
fn status(control: &Control) -> String {
    let (zones, primary, secondary) = control.zones.counts();
    format!(
        "version {}\nuptime {} s\ncores {}\nzones {zones} ({primary} primary, {secondary} \
         secondary)\n",
        env!("CARGO_PKG_VERSION"),
        control.started.elapsed().as_secs(),
        control.handle.stats().len(),
    ) + &control
        .tls
        .as_ref()
        .map(|tls| format!("tls pin-sha256 {}\n", tls.pin()))
        .unwrap_or_default()
}

/// The secondary zone named `text`, lowercased, if it is one.
fn secondary_origin(control: &Control, text: &str) -> Result<LowerNameBuf, String> {
    let origin = tern_zones::load::parse_origin(text)
        .map(|name| LowerNameBuf::from_name(name.as_name()))
        .map_err(|err| format!("error: {err}\n"))?;
    if control.zones.is_secondary(origin.as_bytes()) {
        Ok(origin)
    } else {
        Err(format!(
            "error: {} is not a secondary zone\n",
            origin.as_name()
        ))
    }
}

/// `refresh ZONE`, `retransfer ZONE`.
fn secondary_command(control: &Control, verb: &str, zone: &str) -> String {
    let origin = match secondary_origin(control, zone) {
        Ok(origin) => origin,
        Err(reply) => return reply,
    };
    let Some(secondaries) = &control.secondaries else {
        return "error: no secondary zones\n".to_string();
    };
    if verb == "refresh" {
        secondaries.refresh(origin);
    } else {
        secondaries.retransfer(origin);
    }
    format!("{}: {verb} started\n", origin.as_name())
}

/// `notify ZONE`: NOTIFY the configured targets of a served zone's serial.
fn notify_command(control: &Control, zone: &str) -> String {
    let origin = match tern_zones::load::parse_origin(zone) {
        Ok(name) => LowerNameBuf::from_name(name.as_name()),
        Err(err) => return format!("error: {err}\n"),
    };
    let Some(serial) = control.zones.serial(origin.as_name()) else {
        return format!("error: {} is not served\n", origin.as_name());
    };
    if !control.zones.notifies() {
        return "error: no notify.targets configured\n".to_string();
    }
    control.zones.apply(Event::NotifyAsked { origin });
    format!("{}: NOTIFY for serial {serial} queued\n", origin.as_name())
}

/// `zone-status [ZONE]`: each zone's role and serial; for secondaries the
/// timers and the last refresh's outcome.
fn zone_status(control: &Control, only: Option<&str>) -> String {
    let only = match only.map(tern_zones::load::parse_origin).transpose() {
        Ok(only) => only.map(|name| LowerNameBuf::from_name(name.as_name())),
        Err(err) => return format!("error: {err}\n"),
    };
    let mut text = String::new();
    for view in control
        .zones
        .views(only.as_ref().map(|only| only.as_bytes()))
    {
        let name = tern_zones::load::origin_text(&view.origin);
        let serial = view
            .serial
            .map_or_else(|| "none".to_string(), |serial| serial.to_string());
        match &view.secondary {
            None => text.push_str(&format!(
                "{name} role primary serial {serial}{}{}\n",
                crate::keyctl::status(&control.zones, &view.origin),
                tern_zones::sign_status::get(&view.origin)
                    .map(|signing| signing.describe(tern_zones::unix_time()))
                    .unwrap_or_default()
            )),
            Some(status) => text.push_str(&format!(
                "{name} role {} serial {serial} {}\n",
                status.role,
                describe_secondary(status)
            )),
        }
    }
    not_served_signing(&control.zones, only.as_ref(), &mut text);
    if text.is_empty() {
        return "error: no such zone\n".to_string();
    }
    text
}

/// `zone-status`'s lines for the signed zones not served because their
/// signing failed at start (their failure is the line's point).
fn not_served_signing(zones: &Zones, only: Option<&LowerNameBuf>, text: &mut String) {
    let now = tern_zones::unix_time();
    for (origin, signing) in tern_zones::sign_status::all() {
        if only.is_some_and(|only| only.as_bytes() != &*origin)
            || !zones.views(Some(&origin)).is_empty()
        {
            continue;
        }
        text.push_str(&format!(
            "{} role primary serial none (not served){}\n",
            tern_zones::load::origin_text(&origin),
            signing.describe(now)
        ));
    }
}

fn describe_secondary(status: &tern_zones::owner::Status) -> String {
    let time = |seconds: u64| {
        if seconds == 0 {
            "never".to_string()
        } else {
            seconds.to_string()
        }
    };
    format!(
        "{}last-refresh {} next-refresh {} expires {} last-transfer {} failures {} outcome \"{}\"",
        if status.expired {
            "expired (SERVFAIL) "
        } else {
            ""
        },
        time(status.timers.last_refresh),
        time(status.timers.next_refresh),
        time(status.timers.expires),
        time(status.timers.last_transfer),
        status.failures,
        status.last_outcome
    )
}

//----------- Client ---------------------------------------------------------

/// `tern stats`: asks the server behind `path` for its counters.
pub(crate) fn request_stats(path: &Path) -> anyhow::Result<String> {
    request(path, STATS_COMMAND)
}

/// Sends one command line to the server behind `path`; its reply.
pub(crate) fn request(path: &Path, command: &str) -> anyhow::Result<String> {
    let mut stream = UnixStream::connect(path).with_context(|| {
        format!(
            "connecting to {}; is `tern serve` running with this control socket?",
            path.display()
        )
    })?;
    // A reload replies once the changed zones are built, which can take
    // minutes for large zones; the other commands reply at once.
    let wait = if command.starts_with("reload") {
        RELOAD_TIMEOUT
    } else {
        CLIENT_TIMEOUT
    };
    stream.set_read_timeout(Some(wait))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    stream.write_all(format!("{command}\n").as_bytes())?;
    let mut reply = String::new();
    (&stream)
        .take(MAX_REPLY_LEN)
        .read_to_string(&mut reply)
        .with_context(|| format!("reading from {}", path.display()))?;
    if let Some(error) = reply.strip_prefix("error: ") {
        bail!("the server answered: {}", error.trim_end());
    }
    Ok(reply)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tern-control-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Issue 22: the socket is bound where nobody else can reach it and
    /// moved into place with its final mode; nothing is left beside it.
    #[test]
    fn the_socket_appears_owner_only() {
        let dir = scratch("bind");
        let path = dir.join("tern.sock");
        let listener = bind_private(&path).unwrap();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.mode() & 0o777, SOCKET_MODE);
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "only the socket: {left:?}");
        // It is the listening socket, at its new place.
        let _client = UnixStream::connect(&path).unwrap();
        assert!(listener.accept().is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 22: a directory for the socket that is a symbolic link, or
    /// another user's, is refused; the user's own or root's is taken.
    #[test]
    fn a_linked_or_foreign_directory_is_refused() {
        let dir = scratch("dirs");
        let real = dir.join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let me = own_uid();
        let refused = ControlSocket::prepare_directory(&link.join("tern.sock"), (me, 0))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("symbolic link"), "{refused}");
        assert!(check_directory(&link, me).is_err());
        assert!(check_directory(&real, me).is_ok());
        // Owned by someone else than the owner (unless that someone is
        // root, which this test may be).
        let foreign = check_directory(&real, me.wrapping_add(1));
        assert_eq!(foreign.is_ok(), me == 0, "{foreign:?}");
        if me == 0 {
            // As root (CI): a directory of another user's.
            let theirs = dir.join("theirs");
            std::fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(54_321), None).unwrap();
            let refused = check_directory(&theirs, 0).unwrap_err().to_string();
            assert!(refused.contains("belongs to user 54321"), "{refused}");
        }
        let file = dir.join("file");
        std::fs::write(&file, "").unwrap();
        assert!(check_directory(&file, me).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
