//! Configuration: the YAML file (see `raw`) validated into typed values.
//!
//! Precedence: built-in defaults, then the file, then command-line flags
//! ([`Overrides`]). docs/config.md documents every key; `raw` checks each
//! value while deserializing so that errors carry the line; this module
//! applies the values, resolves relative paths against the file's
//! directory, and says which changes a reload cannot apply.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

mod proxy;
mod tls;
pub(crate) use tls::TlsSection;
mod raw;
mod update;
pub(crate) mod value;
mod xot;

use tern_server::{Driver, TcpConfig};

/// The default listen address: loopback on an unprivileged port, so that
/// `make run` works without privileges.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:5353";

/// The default zone directory, relative to the working directory.
pub(crate) const DEFAULT_ZONES_DIR: &str = "zones";

/// The IXFR history kept per zone unless `transfer.ixfr-history` says
/// otherwise: 16 MiB.
pub(crate) const DEFAULT_IXFR_HISTORY: usize = 16 << 20;

/// The default EDNS UDP payload limit (the DNS Flag Day 2020 value).
pub(crate) const DEFAULT_UDP_SIZE: u16 = 1232;

/// The default log level.
pub(crate) const DEFAULT_LOG_LEVEL: log::LevelFilter = log::LevelFilter::Info;

/// The control socket's directory, under `/run` for root and under
/// `$XDG_RUNTIME_DIR` for other users, and its name in it.
const SOCKET_DIR: &str = "tern";
const SOCKET_NAME: &str = "control.sock";

/// Where root's runtime files go (systemd's `RuntimeDirectory=tern` makes
/// `/run/tern`).
const ROOT_RUNTIME_DIR: &str = "/run";

/// The longest Unix socket path: `sun_path` holds 108 bytes with the NUL.
const MAX_SOCKET_PATH: usize = 107;

//----------- Config ---------------------------------------------------------

/// The validated configuration.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Config {
    /// Addresses to serve on.
    pub(crate) listen: Vec<SocketAddr>,
    /// CPUs to run on; empty means one unpinned thread.
    pub(crate) cores: Vec<usize>,
    /// The reactor driver.
    pub(crate) driver: Driver,
    /// A directory of `NAME.zone` files.
    pub(crate) zones_dir: Option<PathBuf>,
    /// Zones given one by one: origin and file.
    pub(crate) zone_files: Vec<(String, PathBuf)>,
    /// The listed zones with `update:` rules (dynamic updates).
    pub(crate) updates: Vec<tern_zones::update::ZoneUpdates>,
    /// `zone-file-sync`: how often updated zones' files are rewritten
    /// (zero: at stop only).
    pub(crate) zone_file_sync: std::time::Duration,
    /// `update-queue`: updates waiting per zone; beyond it SERVFAIL.
    pub(crate) update_queue: usize,
    /// `update-rate`: updates a second per TSIG key; 0: no limit.
    pub(crate) update_rate: u32,
    /// The largest UDP answer we send.
    pub(crate) udp_size: u16,
    /// TCP timeouts and limits.
    pub(crate) tcp: TcpConfig,
    /// The per-core answer cache's bounds.
    pub(crate) cache: tern_cache::CacheLimits,
    /// The most verbose messages logged.
    pub(crate) log_level: log::LevelFilter,
    /// Where `tern stats` finds the running server.
    pub(crate) control_socket: PathBuf,
    /// The CH TXT answers (RFC 4892): `identity` to id.server and
    /// hostname.bind, `version` to version.bind and version.server; a
    /// `None` string (configured empty) is REFUSED.
    pub(crate) chaos: tern_authority::ChaosIdentity,
    /// The NSID (RFC 5001) sent to queries that ask for it; `None`: none.
    pub(crate) nsid: Option<tern_authority::nsid::Nsid>,
    /// The caching forwarder; `None`: recursive queries for other names
    /// are REFUSED.
    pub(crate) forward: Option<tern_server::ForwardConfig>,
    /// Response rate limiting of UDP answers; `None`: off.
    pub(crate) rate_limit: Option<tern_server::RateLimitConfig>,
    /// DNS cookies.
    pub(crate) cookies: Cookies,
    /// TSIG keys and who may transfer our zones.
    pub(crate) transfer: tern_server::TransferConfig,
    /// Zones received by transfer.
    pub(crate) secondaries: Vec<tern_zones::refresh::SecondaryConfig>,
    /// `zones.secondary[].update` other than the default (REFUSED).
    pub(crate) secondary_updates: Vec<tern_zones::update::SecondaryZone>,
    /// Catalog zones (RFC 9432) consumed: their members become secondary
    /// zones from the same primaries.
    pub(crate) catalogs: Vec<tern_zones::refresh::SecondaryConfig>,
    /// Where received zones, their timers and IXFR histories are saved;
    /// `None` (the default): nowhere, they live in memory only.
    pub(crate) state_directory: Option<PathBuf>,
    /// Where NOTIFYs go when a serial changes.
    pub(crate) notify: tern_zones::notify::NotifyTargets,
    /// The Prometheus endpoint's address; `None` (the default): off.
    pub(crate) metrics_listen: Option<SocketAddr>,
    /// Octets of IXFR history kept per zone; 0: none.
    pub(crate) ixfr_history: usize,
    /// How large a zone received by transfer may be.
    pub(crate) transfer_limits: tern_xfr::incoming::Limits,
    /// The catalog zone (RFC 9432) tern produces, listing its zones.
    pub(crate) catalog_producer: Option<String>,
    /// The user `tern serve` becomes once its sockets are bound; `None`
    /// (the default): it stays the user it was started as.
    pub(crate) user: Option<String>,
    /// dnstap logging; `None` (the default): off.
    pub(crate) dnstap: Option<tern_dnstap::DnstapConfig>,
    /// Interfaces whose UDP queries AF_XDP takes (`xdp.interfaces`,
    /// `--xdp`); empty (the default): the sockets only.
    pub(crate) xdp: Vec<String>,
    /// The zones signed as they are loaded (`dnssec-policy`), their
    /// policies and where their keys are; `None` (the default): none.
    pub(crate) signing: Option<tern_zones::signing::Signing>,
    /// The PROXY protocol v2 listeners and allowed proxies (`proxy:`);
    /// default: none.
    pub(crate) proxy: tern_server::ProxyConfig,
    /// DNS over TLS (`tls:`); `None` (the default): off.
    pub(crate) tls: Option<TlsSection>,
}

/// The `cookies:` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cookies {
    /// Whether cookies are on (default: yes).
    pub(crate) enabled: bool,
    /// The server secret shared by anycast instances; `None`: 16 random
    /// octets drawn at start (see [`Config::server_config`]).
    pub(crate) secret: Option<[u8; 16]>,
}

impl Default for Cookies {
    fn default() -> Self {
        Cookies {
            enabled: true,
            secret: None,
        }
    }
}

/// Command-line values that replace the file's.
#[derive(Clone, Debug, Default)]
pub(crate) struct Overrides {
    /// The configuration file, if any.
    pub(crate) config: Option<PathBuf>,
    /// `--zones DIR`: replaces the whole `zones` section.
    pub(crate) zones: Option<PathBuf>,
    /// `--listen` (repeatable): replaces `listen` when not empty.
    pub(crate) listen: Vec<SocketAddr>,
    /// `--cores`.
    pub(crate) cores: Option<Vec<usize>>,
    /// `--socket`.
    pub(crate) control_socket: Option<PathBuf>,
    /// `--log-level`.
    pub(crate) log_level: Option<log::LevelFilter>,
    /// `--xdp` (repeatable): replaces `xdp.interfaces` when not empty.
    pub(crate) xdp: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: vec![DEFAULT_LISTEN
                .parse()
                .expect("the default address is valid")],
            cores: Vec::new(),
            driver: Driver::default(),
            zones_dir: Some(PathBuf::from(DEFAULT_ZONES_DIR)),
            zone_files: Vec::new(),
            updates: Vec::new(),
            zone_file_sync: update::DEFAULT_ZONE_FILE_SYNC,
            update_queue: tern_zones::update::DEFAULT_MAX_IN_FLIGHT,
            update_rate: tern_zones::update::DEFAULT_RATE_PER_KEY,
            udp_size: DEFAULT_UDP_SIZE,
            tcp: TcpConfig::default(),
            cache: tern_cache::CacheLimits::default(),
            log_level: DEFAULT_LOG_LEVEL,
            control_socket: default_control_socket(),
            chaos: default_chaos(),
            nsid: None,
            forward: None,
            rate_limit: None,
            cookies: Cookies::default(),
            transfer: tern_server::TransferConfig::default(),
            secondaries: Vec::new(),
            secondary_updates: Vec::new(),
            catalogs: Vec::new(),
            state_directory: None,
            notify: tern_zones::notify::NotifyTargets::default(),
            metrics_listen: None,
            ixfr_history: DEFAULT_IXFR_HISTORY,
            transfer_limits: tern_xfr::incoming::Limits::default(),
            catalog_producer: None,
            user: None,
            dnstap: None,
            xdp: Vec::new(),
            signing: None,
            proxy: tern_server::ProxyConfig::default(),
            tls: None,
        }
    }
}

impl Config {
    /// The defaults, then the file named in `overrides` (if any), then the
    /// command-line values.
    pub(crate) fn load(overrides: &Overrides) -> anyhow::Result<Config> {
        let mut config = match &overrides.config {
            Some(path) => Config::from_file(path)?,
            None => Config::default(),
        };
        if let Some(dir) = &overrides.zones {
            config.zones_dir = Some(dir.clone());
            config.zone_files.clear();
            config.updates.clear();
        }
        if !overrides.listen.is_empty() {
            config.listen = overrides.listen.clone();
        }
        if let Some(cores) = &overrides.cores {
            config.cores = cores.clone();
        }
        if let Some(path) = &overrides.control_socket {
            config.control_socket = path.clone();
            check_socket_path(path).context("--socket")?;
        }
        if let Some(level) = overrides.log_level {
            config.log_level = level;
        }
        if !overrides.xdp.is_empty() {
            config.xdp = check_interfaces(overrides.xdp.clone()).context("--xdp")?;
        }
        proxy::check(&config.proxy, &config.listen, &config.xdp)?;
        tls::check(config.tls.as_ref(), &config.listen, &config.proxy.listen)?;
        Ok(config)
    }

    /// Reads and validates a YAML file; paths in it are relative to the
    /// file's directory.
    pub(crate) fn from_file(path: &Path) -> anyhow::Result<Config> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let raw = raw::parse(&text).with_context(|| format!("in {}", path.display()))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Config::from_raw(raw, base).with_context(|| format!("in {}", path.display()))
    }

    fn from_raw(raw: raw::RawConfig, base: &Path) -> anyhow::Result<Config> {
        let mut config = Config::default();
        if let Some(listen) = raw.listen {
            config.listen = listen.0;
        }
        if let Some(cores) = raw.cores {
            config.cores = cores.0;
        }
        set(&mut config.driver, raw.driver);
        let mut secondaries = Vec::new();
        let mut catalogs = Vec::new();
        // Per-zone `transfer` and `notify` sections, read once the keys are.
        let mut overrides: Vec<Override> = Vec::new();
        // `dnssec-policy` of the listed zones: origin as written, policy.
        let mut signed_zones: Vec<(String, String)> = Vec::new();
        // `update:` of the listed zones: origin as written, file, rules.
        let mut updated_zones = Vec::new();
        // `update` of the secondary zones: origin as written, answer.
        let mut secondary_update_modes = Vec::new();
        if let Some(zones) = raw.zones {
            secondaries = zones.secondary.unwrap_or_default();
            for zone in &mut secondaries {
                if let Some(mode) = zone.update.take() {
                    let answer = update::secondary_update(&mode)
                        .with_context(|| format!("zones.secondary: {}", zone.origin.0))?;
                    secondary_update_modes.push((zone.origin.0.clone(), answer));
                }
                // Received unsigned, served signed (tern_zones::bump).
                if let Some(policy) = &zone.dnssec_policy {
                    signed_zones.push((zone.origin.0.clone(), policy.0.clone()));
                }
                overrides.push((
                    zone.origin.0.clone(),
                    None,
                    zone.transfer.take(),
                    zone.notify.take(),
                ));
            }
            catalogs = zones.catalog.unwrap_or_default();
            // Each member received unsigned, served signed under the
            // catalog's policy (tern_zones::bump).
            for catalog in &catalogs {
                if let Some(policy) = &catalog.dnssec_policy {
                    signed_zones.push((catalog.origin.0.clone(), policy.0.clone()));
                }
            }
            config.catalog_producer = zones.catalog_producer.map(|origin| origin.0);
            config.zones_dir = zones.directory.map(|dir| base.join(dir.0));
            config.zone_files = zones
                .list
                .unwrap_or_default()
                .into_iter()
                .map(|zone| {
                    if let Some(policy) = zone.dnssec_policy {
                        signed_zones.push((zone.origin.0.clone(), policy.0));
                    }
                    let key = zone.key.map(|name| name.0);
                    overrides.push((zone.origin.0.clone(), key, zone.transfer, zone.notify));
                    let file = base.join(zone.file.0);
                    if let Some(rules) = zone.update {
                        updated_zones.push((zone.origin.0.clone(), file.clone(), rules));
                    }
                    (zone.origin.0, file)
                })
                .collect();
        }
        if let Some(size) = raw.udp_size {
            config.udp_size = u16::try_from(size.0).context("udp-size")?;
        }
        if let Some(tcp) = raw.tcp {
            let limits = &mut config.tcp;
            set(&mut limits.idle_timeout, tcp.idle_timeout);
            set(&mut limits.initial_timeout, tcp.initial_timeout);
            set(&mut limits.message_timeout, tcp.message_timeout);
            set(&mut limits.write_timeout, tcp.write_timeout);
            set(&mut limits.max_connections, tcp.max_connections);
            set(&mut limits.max_in_flight, tcp.max_in_flight);
        }
        if let Some(cache) = raw.cache {
            set(&mut config.cache.max_entries, cache.entries);
            if let Some(bytes) = cache.bytes {
                config.cache.max_bytes = usize::try_from(bytes.0).context("cache.bytes")?;
            }
        }
        set(&mut config.log_level, raw.log_level);
        if let Some(path) = raw.control_socket {
            config.control_socket = base.join(path.0);
            check_socket_path(&config.control_socket).context("control-socket")?;
        }
        config.chaos = chaos_config(raw.identity, raw.version, raw.chaos)?;
        if let Some(nsid) = raw.nsid {
            config.nsid = Some(nsid.0);
        }
        if let Some(forward) = raw.forward {
            config.forward = Some(forward_config(forward)?);
        }
        if let Some(rate_limit) = raw.rate_limit {
            config.rate_limit = Some(rate_limit_config(rate_limit)?);
        }
        if let Some(cookies) = raw.cookies {
            if let Some(enabled) = cookies.enabled {
                config.cookies.enabled = enabled;
            }
            config.cookies.secret = cookies.secret.map(|secret| secret.0);
        }
        if let Some(size) = raw.transfer.as_ref().and_then(|t| t.ixfr_history.as_ref()) {
            config.ixfr_history = usize::try_from(size.0).context("transfer.ixfr-history")?;
        }
        if let Some(records) = raw
            .transfer
            .as_ref()
            .and_then(|t| t.max_zone_records.as_ref())
        {
            config.transfer_limits.records = records.0;
        }
        if let Some(size) = raw.transfer.as_ref().and_then(|t| t.max_zone_size.as_ref()) {
            config.transfer_limits.bytes =
                usize::try_from(size.0).context("transfer.max-zone-size")?;
        }
        config.transfer = transfer_config(raw.keys.unwrap_or_default(), raw.transfer)?;
        config.secondaries = secondary_configs(secondaries, &config.transfer.keys, base)?;
        for (origin_text, answer) in secondary_update_modes {
            let origin =
                tern_zones::load::parse_origin(&origin_text).map_err(anyhow::Error::msg)?;
            let origin = tern_wire::name::LowerNameBuf::from_name(origin.as_name());
            if let Some(zone) = config.secondaries.iter().find(|zone| zone.origin == origin) {
                config
                    .secondary_updates
                    .push(tern_zones::update::SecondaryZone {
                        origin,
                        answer,
                        primaries: zone.primaries.clone(),
                    });
            }
        }
        config.catalogs = secondary_configs(catalogs, &config.transfer.keys, base)
            .map_err(|err| anyhow::anyhow!("{err:#}").context("zones.catalog"))?;
        if let Some(both) = config.catalogs.iter().find(|catalog| {
            config
                .secondaries
                .iter()
                .any(|zone| zone.origin == catalog.origin)
        }) {
            bail!(
                "zones.catalog: {} is also in zones.secondary",
                both.origin.as_name()
            );
        }
        if let Some(dir) = raw.state_directory {
            config.state_directory = Some(base.join(dir.0));
        }
        if let Some(metrics) = raw.metrics {
            config.metrics_listen = metrics.listen.map(|address| address.0);
        }
        if let Some(user) = raw.user {
            config.user = Some(check_user_name(user).context("user")?);
        }
        if let Some(dnstap) = raw.dnstap {
            config.dnstap = Some(dnstap_config(dnstap, base)?);
        }
        if let Some(interfaces) = raw.xdp.and_then(|xdp| xdp.interfaces) {
            config.xdp = check_interfaces(interfaces).context("xdp.interfaces")?;
        }
        if let Some(section) = raw.proxy {
            config.proxy = proxy::proxy_config(section)?;
        }
        proxy::check(&config.proxy, &config.listen, &config.xdp)?;
        if let Some(section) = raw.tls {
            config.tls = Some(tls::tls_section(section, base)?);
        }
        tls::check(config.tls.as_ref(), &config.listen, &config.proxy.listen)?;
        config.signing =
            signing_config(raw.dnssec, &signed_zones, config.state_directory.as_deref())?;
        let keys = config.transfer.keys.clone();
        if let Some(sync) = raw.zone_file_sync {
            config.zone_file_sync = sync.0;
        }
        if let Some(queue) = raw.update_queue {
            config.update_queue = queue.0;
        }
        if let Some(rate) = raw.update_rate {
            // Range's bound keeps it within u32.
            config.update_rate = u32::try_from(rate.0).unwrap_or(u32::MAX);
        }
        for (origin_text, file, rules) in updated_zones {
            let origin =
                tern_zones::load::parse_origin(&origin_text).map_err(anyhow::Error::msg)?;
            let context = || format!("zone {}", origin.as_name());
            let rules = update::rules(origin.as_name(), rules, &keys).with_context(context)?;
            config.updates.push(tern_zones::update::ZoneUpdates {
                origin: tern_wire::name::LowerNameBuf::from_name(origin.as_name()),
                file,
                rules,
            });
        }
        if let Some(notify) = raw.notify {
            (config.notify.targets, config.notify.key) =
                notify_rules(notify, &keys).map_err(|err| err.context("notify"))?;
        }
        for (origin_text, zone_key, mut transfer, mut notify) in overrides {
            let origin =
                tern_zones::load::parse_origin(&origin_text).map_err(anyhow::Error::msg)?;
            let origin = tern_wire::name::LowerNameBuf::from_name(origin.as_name());
            let context = || format!("zone {}", origin.as_name());
            // A zone's `key`: its transfers must be signed with it and its
            // NOTIFYs are, unless its own sections name another.
            if let Some(name) = zone_key {
                named_key(&keys, &name).with_context(|| {
                    format!(
                        "{}: key: no key named {} in keys",
                        context(),
                        name.as_name()
                    )
                })?;
                let transfer = transfer.get_or_insert_with(|| raw::RawTransfer {
                    allow: Some(
                        config
                            .transfer
                            .allow
                            .iter()
                            .cloned()
                            .map(raw::Parsed)
                            .collect(),
                    ),
                    ..raw::RawTransfer::default()
                });
                transfer.key.get_or_insert(raw::Parsed(name));
                let notify = notify.get_or_insert_with(|| raw::RawNotify {
                    targets: Some(
                        config
                            .notify
                            .targets
                            .iter()
                            .copied()
                            .map(raw::Parsed)
                            .collect(),
                    ),
                    ..raw::RawNotify::default()
                });
                notify.key.get_or_insert(raw::Parsed(name));
            }
            if let Some(transfer) = transfer {
                if transfer.ixfr_history.is_some()
                    || transfer.max_zone_records.is_some()
                    || transfer.max_zone_size.is_some()
                {
                    bail!(
                        "{}: transfer: only allow and key may be set per zone",
                        context()
                    );
                }
                let (allow, key) = transfer_rules(transfer, &keys).with_context(context)?;
                config
                    .transfer
                    .add_zone(tern_server::ZoneTransfer { origin, allow, key });
            }
            if let Some(notify) = notify {
                let (targets, key) = notify_rules(notify, &keys).with_context(context)?;
                config.notify.add_zone(tern_zones::notify::ZoneNotify {
                    origin,
                    targets,
                    key,
                });
            }
        }
        Ok(config)
    }

    /// Where the zone files are, and which are signed, as the zones'
    /// loader takes it.
    pub(crate) fn zone_sources(&self) -> tern_zones::load::Sources {
        tern_zones::load::Sources {
            dir: self.zones_dir.clone(),
            listed: self.zone_files.clone(),
            signing: self.signing.clone(),
        }
    }

    /// The runtime's view of this configuration. `allocations` reads the
    /// calling thread's allocation count, when a counting allocator is
    /// installed. With cookies on and no secret configured, each call
    /// draws a fresh random secret (the server is started once, so every
    /// core gets the same one).
    pub(crate) fn server_config(
        &self,
        allocations: Option<fn() -> u64>,
    ) -> tern_server::ServerConfig {
        tern_server::ServerConfig {
            listen: self.listen.clone(),
            cores: self.cores.clone(),
            driver: self.driver,
            answer: tern_authority::Options {
                max_udp_size: self.udp_size,
                chaos: Some(self.chaos.clone()),
                nsid: self.nsid.clone(),
            },
            tcp: self.tcp,
            cache: self.cache,
            forward: self.forward.clone(),
            rate_limit: self.rate_limit.clone(),
            cookies: self.cookies.enabled.then(|| {
                tern_authority::cookie::CookieSecret::new(
                    self.cookies.secret.unwrap_or_else(random_secret),
                )
            }),
            transfer: self.transfer.clone(),
            // Set by `serve`, which owns the transfer thread's queue and
            // the journals.
            notify_in: None,
            update_in: None,
            journals: tern_server::SharedJournals::default(),
            allocations,
            // Each core's end of the dnstap writer, which `serve` starts.
            dnstap: Vec::new(),
            xdp: self.xdp.clone(),
            proxy: self.proxy.clone(),
            // Set by `serve`, which reads the certificate (crate::tls).
            tls: None,
        }
    }

    /// The keys whose new values in `next` a reload cannot apply: the
    /// running cores keep their sockets, limits and answer options until a
    /// restart. (Zones and the log level do change on reload.)
    pub(crate) fn restart_changes(&self, next: &Config) -> Vec<&'static str> {
        let mut changed = Vec::new();
        let mut compare = |key, differs: bool| {
            if differs {
                changed.push(key);
            }
        };
        compare("listen", self.listen != next.listen);
        compare("cores", self.cores != next.cores);
        compare("driver", self.driver != next.driver);
        compare("udp-size", self.udp_size != next.udp_size);
        compare("tcp", self.tcp != next.tcp);
        compare("cache", self.cache != next.cache);
        compare("control-socket", self.control_socket != next.control_socket);
        compare("identity", self.chaos.identity != next.chaos.identity);
        compare("version", self.chaos.version != next.chaos.version);
        compare("nsid", self.nsid != next.nsid);
        compare("forward", self.forward != next.forward);
        compare("rate-limit", self.rate_limit != next.rate_limit);
        compare("cookies", self.cookies != next.cookies);
        compare("keys", self.transfer.keys != next.transfer.keys);
        compare("update-queue", self.update_queue != next.update_queue);
        compare("update-rate", self.update_rate != next.update_rate);
        compare(
            "zones.secondary",
            self.secondaries != next.secondaries
                || self.secondary_updates != next.secondary_updates,
        );
        compare("zones.catalog", self.catalogs != next.catalogs);
        compare(
            "state-directory",
            self.state_directory != next.state_directory,
        );
        compare("notify", self.notify != next.notify);
        compare("metrics", self.metrics_listen != next.metrics_listen);
        compare("user", self.user != next.user);
        compare("dnstap", self.dnstap != next.dnstap);
        compare("xdp", self.xdp != next.xdp);
        compare("proxy", self.proxy != next.proxy);
        compare(
            "tls.listen",
            self.tls.as_ref().map(|tls| &tls.listen) != next.tls.as_ref().map(|tls| &tls.listen),
        );
        compare(
            "transfer.ixfr-history",
            self.ixfr_history != next.ixfr_history,
        );
        compare(
            "zones.catalog-producer",
            self.catalog_producer != next.catalog_producer,
        );
        compare(
            "transfer.max-zone-records, transfer.max-zone-size",
            self.transfer_limits != next.transfer_limits,
        );
        compare(
            "transfer",
            (
                &self.transfer.allow,
                &self.transfer.key,
                self.transfer.tls_only,
            ) != (
                &next.transfer.allow,
                &next.transfer.key,
                next.transfer.tls_only,
            ),
        );
        changed
    }
}

/// The `forward:` section over the defaults of
/// [`tern_server::ForwardConfig::new`]; `upstreams` must name at least one.
fn forward_config(raw: raw::RawForward) -> anyhow::Result<tern_server::ForwardConfig> {
    let upstreams: Vec<SocketAddr> = raw
        .upstreams
        .unwrap_or_default()
        .into_iter()
        .map(|address| address.0)
        .collect();
    if upstreams.is_empty() {
        bail!("forward.upstreams: name at least one upstream, like [\"127.0.0.1:5300\"]");
    }
    if upstreams.len() > tern_server::MAX_UPSTREAMS {
        bail!(
            "forward.upstreams: more than {} upstreams",
            tern_server::MAX_UPSTREAMS
        );
    }
    let mut forward = tern_server::ForwardConfig::new(upstreams);
    forward.allow = raw
        .allow
        .unwrap_or_default()
        .into_iter()
        .map(|cidr| cidr.0)
        .collect();
    set(&mut forward.policy, raw.policy);
    set(&mut forward.race, raw.race);
    set(&mut forward.timeout, raw.timeout);
    if let Some(retries) = raw.retries {
        forward.retries = u32::try_from(retries.0).context("forward.retries")?;
    }
    set(&mut forward.stale_ttl, raw.stale_ttl);
    set(&mut forward.negative_ttl_max, raw.negative_ttl_max);
    set(&mut forward.servfail_ttl, raw.servfail_ttl);
    set(&mut forward.cache.max_entries, raw.cache_entries);
    if let Some(bytes) = raw.cache_bytes {
        forward.cache.max_bytes = usize::try_from(bytes.0).context("forward.cache-bytes")?;
    }
    set(&mut forward.max_in_flight, raw.max_in_flight);
    set(&mut forward.max_waiters, raw.max_waiters);
    Ok(forward)
}

/// The `keys:` and `transfer:` sections: key names are unique, and
/// `transfer.key` names one of the keys.
fn transfer_config(
    keys: Vec<raw::RawKey>,
    transfer: Option<raw::RawTransfer>,
) -> anyhow::Result<tern_server::TransferConfig> {
    if keys.len() > value::MAX_KEYS {
        bail!("keys: more than {} keys", value::MAX_KEYS);
    }
    let mut config = tern_server::TransferConfig::default();
    for key in keys {
        let name = key.name.0;
        if config
            .keys
            .iter()
            .any(|known| known.lower_name().as_bytes() == name.as_bytes())
        {
            bail!("keys: {} is listed twice", name.as_name());
        }
        config.keys.push(tern_xfr::tsig::Key::new(
            name.as_name(),
            key.algorithm.0,
            &key.secret.0,
        ));
    }
    let Some(mut transfer) = transfer else {
        return Ok(config);
    };
    config.tls_only = transfer.tls_only.take().unwrap_or(false);
    (config.allow, config.key) = transfer_rules(transfer, &config.keys)?;
    Ok(config)
}

/// The key named `name` among `keys`.
fn named_key(
    keys: &[tern_xfr::tsig::Key],
    name: &tern_wire::name::NameBuf,
) -> Option<tern_xfr::tsig::Key> {
    keys.iter()
        .find(|key| key.lower_name().as_bytes() == name.as_bytes())
        .cloned()
}

/// A `transfer` section's `allow` and `key`.
fn transfer_rules(
    transfer: raw::RawTransfer,
    keys: &[tern_xfr::tsig::Key],
) -> anyhow::Result<(Vec<tern_server::Cidr>, Option<tern_xfr::tsig::Key>)> {
    if transfer.tls_only.is_some() {
        bail!("transfer.tls-only is set for every zone at once, in the top-level transfer section");
    }
    let allow = transfer
        .allow
        .unwrap_or_default()
        .into_iter()
        .map(|cidr| cidr.0)
        .collect();
    let key =
        match transfer.key {
            Some(name) => Some(named_key(keys, &name.0).with_context(|| {
                format!("transfer.key: no key named {} in keys", name.0.as_name())
            })?),
            None => None,
        };
    Ok((allow, key))
}

/// A `notify` section's targets and key.
fn notify_rules(
    notify: raw::RawNotify,
    keys: &[tern_xfr::tsig::Key],
) -> anyhow::Result<(Vec<SocketAddr>, Option<tern_xfr::tsig::Key>)> {
    let targets: Vec<SocketAddr> = notify
        .targets
        .unwrap_or_default()
        .into_iter()
        .map(|address| address.0)
        .collect();
    if targets.len() > value::MAX_NOTIFY_TARGETS {
        bail!(
            "notify.targets: more than {} targets",
            value::MAX_NOTIFY_TARGETS
        );
    }
    let key =
        match notify.key {
            Some(name) => Some(named_key(keys, &name.0).with_context(|| {
                format!("notify.key: no key named {} in keys", name.0.as_name())
            })?),
            None => None,
        };
    Ok((targets, key))
}

/// A zone's own `key`, `transfer` and `notify` (from `zones.list` or
/// `zones.secondary`), by origin.
type Override = (
    String,
    Option<tern_wire::name::NameBuf>,
    Option<raw::RawTransfer>,
    Option<raw::RawNotify>,
);

/// `zones.secondary`: origins distinct, at least one primary each, keys
/// from `keys`.
/// The default of `dnssec.signing-threads`.
pub(crate) const DEFAULT_SIGNING_THREADS: usize = 2;

/// The `dnssec:` section and the listed zones' `dnssec-policy` (origin as
/// written, policy name): `None` when no zone names a policy. A policy
/// named twice, a zone naming a policy that does not exist, and a signed
/// zone without a state directory (where its keys live) are errors.
fn signing_config(
    raw: Option<raw::RawDnssec>,
    signed_zones: &[(String, String)],
    state_directory: Option<&Path>,
) -> anyhow::Result<Option<tern_zones::signing::Signing>> {
    use tern_zones::signing::{Nsec3Policy, ParentCheck, Policy};
    let raw = raw.unwrap_or_default();
    let threads = raw
        .signing_threads
        .map_or(DEFAULT_SIGNING_THREADS, |threads| threads.0);
    let mut policies: Vec<std::sync::Arc<Policy>> = Vec::new();
    for raw_policy in raw.policies.unwrap_or_default() {
        let name = raw_policy.name.0;
        let context = || format!("dnssec.policies: {name}");
        if policies.iter().any(|known| known.name == name) {
            bail!("{}: named twice", context());
        }
        let mut policy = Policy::new(name.clone());
        set(&mut policy.algorithm, raw_policy.algorithm);
        if raw_policy.key_size.is_some() && policy.algorithm != tern_dnssec::Algorithm::RsaSha256 {
            bail!(
                "{}: key-size is for rsasha256 only (the other algorithms have one size)",
                context()
            );
        }
        set(&mut policy.key_size, raw_policy.key_size);
        set(&mut policy.keys, raw_policy.keys);
        set(&mut policy.zsk_lifetime, raw_policy.zsk_lifetime);
        set(&mut policy.ksk_lifetime, raw_policy.ksk_lifetime);
        set(&mut policy.rrsig_lifetime, raw_policy.rrsig_lifetime);
        set(&mut policy.rrsig_refresh, raw_policy.rrsig_refresh);
        set(&mut policy.cds_cdnskey, raw_policy.cds_cdnskey);
        set(&mut policy.serial_policy, raw_policy.serial_policy);
        set(&mut policy.propagation_delay, raw_policy.propagation_delay);
        set(&mut policy.parent_ds_ttl, raw_policy.parent_ds_ttl);
        set(&mut policy.parent_ds_timeout, raw_policy.parent_ds_timeout);
        policy.dnskey_ttl = raw_policy.dnskey_ttl.map(|ttl| ttl.0);
        policy.nsec3 = raw_policy.nsec3.map(|nsec3| Nsec3Policy {
            // Both within their limits, as parsed.
            iterations: nsec3
                .iterations
                .map_or(0, |n| u16::try_from(n.0).unwrap_or(u16::MAX)),
            salt_length: nsec3
                .salt_length
                .map_or(0, |n| u8::try_from(n.0).unwrap_or(u8::MAX)),
            opt_out: nsec3.opt_out.unwrap_or(false),
            salt_lifetime: nsec3
                .salt_lifetime
                .map_or(tern_zones::policy::DEFAULT_SALT_LIFETIME, |lifetime| {
                    lifetime.0
                }),
        });
        policy.parent = raw_policy.parent.map(|parent| ParentCheck {
            servers: parent
                .servers
                .unwrap_or_default()
                .into_iter()
                .map(|server| server.0)
                .collect(),
            check_interval: parent.check_interval.map_or(3600, |interval| interval.0),
        });
        if policy.rrsig_lifetime == 0 {
            bail!("{}: rrsig-lifetime must be above zero", context());
        }
        if policy.rrsig_refresh == 0 {
            // Re-signed only once the signatures expired: a broken chain
            // until the new version is served.
            bail!("{}: rrsig-refresh must be above zero", context());
        }
        if policy.rrsig_refresh >= policy.rrsig_lifetime {
            bail!(
                "{}: rrsig-refresh ({} s) must be shorter than rrsig-lifetime ({} s)",
                context(),
                policy.rrsig_refresh,
                policy.rrsig_lifetime
            );
        }
        let spare = policy.rrsig_lifetime - policy.rrsig_refresh;
        policy.rrsig_jitter = match raw_policy.rrsig_jitter {
            // The default, less where the lifetime leaves less room.
            None => policy.rrsig_jitter.min(spare / 2),
            Some(jitter) if jitter.0 >= spare => bail!(
                "{}: rrsig-jitter ({} s) must be shorter than rrsig-lifetime less \
                 rrsig-refresh ({spare} s)",
                context(),
                jitter.0
            ),
            Some(jitter) => jitter.0,
        };
        policies.push(std::sync::Arc::new(policy));
    }
    if signed_zones.is_empty() {
        return Ok(None);
    }
    let mut zones = Vec::with_capacity(signed_zones.len());
    for (origin_text, name) in signed_zones {
        let origin = tern_zones::load::parse_origin(origin_text).map_err(anyhow::Error::msg)?;
        let policy = policies
            .iter()
            .find(|policy| &policy.name == name)
            .with_context(|| {
                format!(
                    "zone {}: dnssec-policy: no policy named {name} in dnssec.policies",
                    origin.as_name()
                )
            })?;
        let origin: tern_zones::load::Origin =
            origin.as_name().as_bytes().to_ascii_lowercase().into();
        zones.push((origin, std::sync::Arc::clone(policy)));
    }
    let Some(state_directory) = state_directory else {
        bail!(
            "dnssec-policy: signed zones need a state-directory, where their keys are kept \
             (STATE/keys); none is configured"
        );
    };
    Ok(Some(tern_zones::signing::Signing::new(
        state_directory.to_path_buf(),
        threads,
        zones,
    )))
}

fn secondary_configs(
    raw: Vec<raw::RawSecondary>,
    keys: &[tern_xfr::tsig::Key],
    base: &Path,
) -> anyhow::Result<Vec<tern_zones::refresh::SecondaryConfig>> {
    let mut secondaries: Vec<tern_zones::refresh::SecondaryConfig> = Vec::new();
    for zone in raw {
        let origin = tern_zones::load::parse_origin(&zone.origin.0).map_err(anyhow::Error::msg)?;
        let origin = tern_wire::name::LowerNameBuf::from_name(origin.as_name());
        let context = || format!("zones.secondary: {}", origin.as_name());
        if secondaries.iter().any(|known| known.origin == origin) {
            bail!("{}: listed twice", context());
        }
        if zone.primaries.is_empty() {
            bail!("{}: name at least one primary", context());
        }
        if zone.primaries.len() > value::MAX_PRIMARIES {
            bail!(
                "{}: more than {} primaries",
                context(),
                value::MAX_PRIMARIES
            );
        }
        let key = match zone.key {
            Some(name) => Some(
                keys.iter()
                    .find(|key| key.lower_name().as_bytes() == name.0.as_bytes())
                    .cloned()
                    .with_context(|| {
                        format!("{}: no key named {} in keys", context(), name.0.as_name())
                    })?,
            ),
            None => None,
        };
        let tls = match zone.tls {
            Some(tls) => {
                Some(xot::xot_config(tls, base).with_context(|| format!("{}: tls", context()))?)
            }
            None => None,
        };
        secondaries.push(tern_zones::refresh::SecondaryConfig {
            origin,
            primaries: zone
                .primaries
                .into_iter()
                .map(|address| address.0)
                .collect(),
            key,
            tls,
        });
    }
    Ok(secondaries)
}

/// The most interfaces `xdp.interfaces` may name.
const MAX_XDP_INTERFACES: usize = 64;

/// `xdp.interfaces` / `--xdp`: 1 to 64 distinct interface names, each as
/// the kernel allows one (1 to 15 octets, no slash, colon or white space).
fn check_interfaces(interfaces: Vec<String>) -> anyhow::Result<Vec<String>> {
    if interfaces.is_empty() || interfaces.len() > MAX_XDP_INTERFACES {
        bail!("1 to {MAX_XDP_INTERFACES} interfaces");
    }
    for (at, name) in interfaces.iter().enumerate() {
        let valid = (1..=15).contains(&name.len())
            && name != "."
            && name != ".."
            && !name
                .chars()
                .any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control());
        if !valid {
            bail!("{name:?} is not an interface name (1 to 15 characters, no '/', ':' or spaces)");
        }
        if interfaces[..at].contains(name) {
            bail!("{name} is named twice");
        }
    }
    Ok(interfaces)
}

/// The `dnstap:` section: exactly one output; the identity defaults to the
/// host name and the version to tern's, as Knot's do.
fn dnstap_config(raw: raw::RawDnstap, base: &Path) -> anyhow::Result<tern_dnstap::DnstapConfig> {
    use tern_dnstap::{DnstapConfig, DnstapOutput};
    let output = match (raw.socket, raw.file) {
        (Some(socket), None) => {
            let path = base.join(socket.0);
            check_socket_path(&path).context("dnstap.socket")?;
            DnstapOutput::Socket(path)
        }
        (None, Some(file)) => DnstapOutput::File(base.join(file.0)),
        (Some(_), Some(_)) => bail!("dnstap: set dnstap.socket or dnstap.file, not both"),
        (None, None) => bail!("dnstap: set dnstap.socket or dnstap.file"),
    };
    let mut config = DnstapConfig::new(output);
    config.identity = match raw.identity {
        Some(identity) => identity.0.into_bytes(),
        None => host_name().into_bytes(),
    };
    config.version = match raw.version {
        Some(version) => version.0.into_bytes(),
        None => default_dnstap_version().into_bytes(),
    };
    set(&mut config.buffer, raw.buffer);
    if let Some(queries) = raw.log_queries {
        config.log_queries = queries;
    }
    if let Some(responses) = raw.log_responses {
        config.log_responses = responses;
    }
    Ok(config)
}

/// The version dnstap messages carry by default: `tern VERSION`.
pub(crate) fn default_dnstap_version() -> String {
    format!("tern {}", env!("CARGO_PKG_VERSION"))
}

/// The CH TXT answers by default: the host name and `tern VERSION`, as
/// Knot answers its FQDN host name and `Knot DNS VERSION` (NSD the host
/// name and `NSD VERSION`).
fn default_chaos() -> tern_authority::ChaosIdentity {
    let non_empty = |text: String| Some(text).filter(|text| !text.is_empty());
    tern_authority::ChaosIdentity {
        identity: non_empty(host_name()),
        version: non_empty(default_dnstap_version()),
    }
}

/// `identity` and `version` (or their deprecated spelling under `chaos:`,
/// not both): each replaces its default; an empty string hides it (the
/// query is REFUSED, as Knot does with `identity: ""`).
fn chaos_config(
    identity: Option<raw::Parsed<raw::ChaosTextKind>>,
    version: Option<raw::Parsed<raw::ChaosTextKind>>,
    deprecated: Option<raw::RawChaos>,
) -> anyhow::Result<tern_authority::ChaosIdentity> {
    let (old_identity, old_version) =
        deprecated.map_or((None, None), |chaos| (chaos.identity, chaos.version));
    let pick = |key: &str, new: Option<raw::Parsed<raw::ChaosTextKind>>, old| match (new, old) {
        (Some(_), Some(_)) => bail!("set {key} or chaos.{key} (deprecated), not both"),
        (Some(text), None) | (None, Some(text)) => Ok(Some(text.0)),
        (None, None) => Ok(None),
    };
    let mut chaos = default_chaos();
    if let Some(text) = pick("identity", identity, old_identity)? {
        chaos.identity = Some(text).filter(|text| !text.is_empty());
    }
    if let Some(text) = pick("version", version, old_version)? {
        chaos.version = Some(text).filter(|text| !text.is_empty());
    }
    Ok(chaos)
}

/// This machine's host name (the kernel's, as `hostname` prints it); empty
/// if it cannot be read, and cut to dnstap's identity limit.
pub(crate) fn host_name() -> String {
    let mut name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|text| text.trim().to_string())
        .unwrap_or_default();
    let max = tern_dnstap::MAX_IDENTITY;
    if name.len() > max {
        let mut end = max;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    name
}

/// The `rate-limit:` section over [`tern_server::RateLimitConfig`]'s
/// defaults; as in BIND, `nxdomains-per-second` and `errors-per-second`
/// default to `responses-per-second`.
fn rate_limit_config(raw: raw::RawRateLimit) -> anyhow::Result<tern_server::RateLimitConfig> {
    let mut config = tern_server::RateLimitConfig::default();
    let rate = |value: Option<raw::Parsed<_>>, default: u32| -> anyhow::Result<u32> {
        match value {
            Some(raw::Parsed(rate)) => Ok(u32::try_from(rate)?),
            None => Ok(default),
        }
    };
    config.responses_per_second = rate(raw.responses_per_second, config.responses_per_second)
        .context("rate-limit.responses-per-second")?;
    let responses = config.responses_per_second;
    config.nxdomains_per_second =
        rate(raw.nxdomains_per_second, responses).context("rate-limit.nxdomains-per-second")?;
    config.errors_per_second =
        rate(raw.errors_per_second, responses).context("rate-limit.errors-per-second")?;
    set(&mut config.window, raw.window);
    if let Some(slip) = raw.slip {
        config.slip = u32::try_from(slip.0).context("rate-limit.slip")?;
    }
    if let Some(length) = raw.ipv4_prefix_length {
        config.ipv4_prefix_length =
            u8::try_from(length.0).context("rate-limit.ipv4-prefix-length")?;
    }
    if let Some(length) = raw.ipv6_prefix_length {
        config.ipv6_prefix_length =
            u8::try_from(length.0).context("rate-limit.ipv6-prefix-length")?;
    }
    config.exempt = raw
        .exempt
        .unwrap_or_default()
        .into_iter()
        .map(|cidr| cidr.0)
        .collect();
    if config.exempt.len() > value::MAX_RRL_EXEMPT {
        bail!(
            "rate-limit.exempt: more than {} prefixes",
            value::MAX_RRL_EXEMPT
        );
    }
    set(&mut config.table_size, raw.table_size);
    Ok(config)
}

/// 16 octets from the kernel's random number generator (`/dev/urandom`,
/// a CSPRNG once the system has booted). Should it be unreadable (a
/// chroot without /dev), std's `RandomState`, whose keys come from the
/// same source through `getrandom(2)`, hashes two constants instead.
fn random_secret() -> [u8; 16] {
    let mut secret = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom")
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut secret));
    if read.is_err() {
        let random = RandomState::new();
        secret[..8].copy_from_slice(&random.hash_one(0x636f_6f6b_u64).to_le_bytes());
        secret[8..].copy_from_slice(&random.hash_one(!0x636f_6f6b_u64).to_le_bytes());
    }
    secret
}

/// Replaces `field` when the file gave a value.
fn set<K: raw::Kind>(field: &mut K::Value, value: Option<raw::Parsed<K>>) {
    if let Some(raw::Parsed(value)) = value {
        *field = value;
    }
}

//----------- User -----------------------------------------------------------

/// The longest user name taken (useradd's limit is 32).
const MAX_USER_NAME: usize = 256;

/// A user name as the password database spells them: not empty, no NUL,
/// white space, `:` or `/`. Whether the user exists is checked at start.
fn check_user_name(name: String) -> anyhow::Result<String> {
    if name.is_empty() || name.len() > MAX_USER_NAME {
        bail!("a user name has 1 to {MAX_USER_NAME} characters");
    }
    if let Some(bad) = name
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, ':' | '/'))
    {
        bail!("{name:?}: {bad:?} is not allowed in a user name");
    }
    Ok(name)
}

//----------- Control socket -------------------------------------------------

/// The control socket when none is configured: `/run/tern/control.sock`
/// for root; for other users `$XDG_RUNTIME_DIR/tern/control.sock` (a
/// per-user directory that systemd and most desktops create), or
/// `/run/user/UID/tern/control.sock` without that variable. Never a fixed
/// name in a directory that every user can write.
pub(crate) fn default_control_socket() -> PathBuf {
    // The owner of /proc/self is this process's effective user.
    let uid = std::fs::metadata("/proc/self").map(|meta| meta.uid()).ok();
    let runtime = match (uid, std::env::var_os("XDG_RUNTIME_DIR")) {
        (Some(0), _) => PathBuf::from(ROOT_RUNTIME_DIR),
        (_, Some(dir)) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
        // systemd-logind's runtime directory, where XDG_RUNTIME_DIR points
        // in a login session; elsewhere this does not exist and the server
        // says to set control-socket, rather than falling back to a name
        // in a directory every user can write.
        (Some(uid), _) => Path::new(ROOT_RUNTIME_DIR)
            .join("user")
            .join(uid.to_string()),
        (None, _) => PathBuf::from(ROOT_RUNTIME_DIR),
    };
    runtime.join(SOCKET_DIR).join(SOCKET_NAME)
}

/// Unix socket paths are limited by the size of `sun_path`.
fn check_socket_path(path: &Path) -> anyhow::Result<()> {
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        bail!(
            "{}: {len} bytes is longer than a Unix socket path may be ({MAX_SOCKET_PATH})",
            path.display()
        );
    }
    Ok(())
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn from_text(text: &str, base: &str) -> anyhow::Result<Config> {
        Config::from_raw(raw::parse(text)?, Path::new(base))
    }

    /// `identity` and `version`: the CH TXT answers, on by default with
    /// the host name and `tern VERSION`; an empty string hides one (None:
    /// REFUSED); `chaos.identity` and `chaos.version` are deprecated
    /// spellings, not to be mixed with the new keys; a change needs a
    /// restart.
    #[test]
    fn chaos_identity_and_version() {
        use tern_authority::ChaosIdentity;
        let defaults = Config::default();
        assert_eq!(
            defaults.chaos,
            ChaosIdentity {
                identity: Some(host_name()).filter(|name| !name.is_empty()),
                version: Some(format!("tern {}", env!("CARGO_PKG_VERSION"))),
            }
        );
        assert_eq!(
            defaults.server_config(None).answer.chaos,
            Some(defaults.chaos.clone())
        );
        let set = from_text("identity: ns1.example\nversion: secret\n", "/").unwrap();
        assert_eq!(set.chaos.identity.as_deref(), Some("ns1.example"));
        assert_eq!(set.chaos.version.as_deref(), Some("secret"));
        let hidden = from_text("identity: ''\nversion: \"\"\n", "/").unwrap();
        assert_eq!(hidden.chaos, ChaosIdentity::default());
        let version_only = from_text("version: ''\n", "/").unwrap();
        assert_eq!(version_only.chaos.identity, defaults.chaos.identity);
        assert_eq!(version_only.chaos.version, None);
        // The deprecated section: what it sets, the keys it leaves out
        // keep their defaults.
        let old = from_text("chaos:\n  identity: ns2\n", "/").unwrap();
        assert_eq!(old.chaos.identity.as_deref(), Some("ns2"));
        assert_eq!(old.chaos.version, defaults.chaos.version);
        let err = format!(
            "{:#}",
            from_text("identity: a\nchaos:\n  identity: b\n", "/").unwrap_err()
        );
        assert!(err.contains("chaos.identity"), "{err}");
        assert_eq!(defaults.restart_changes(&set), ["identity", "version"]);
        assert_eq!(defaults.restart_changes(&version_only), ["version"]);
    }

    /// `nsid:` as text or as `hex:` digits; off by default; bad values
    /// name the key and the line; a change needs a restart.
    #[test]
    fn nsid_text_or_hex() {
        assert_eq!(Config::default().nsid, None);
        let text = from_text("nsid: ns1.example\n", "/").unwrap();
        assert_eq!(text.nsid.as_ref().unwrap().value(), b"ns1.example");
        let hex = from_text("nsid: 'hex:6E7331ff'\n", "/").unwrap();
        assert_eq!(hex.nsid.as_ref().unwrap().value(), b"ns1\xff");
        let number = from_text("nsid: 7\n", "/").unwrap();
        assert_eq!(number.nsid.as_ref().unwrap().value(), b"7");
        assert_eq!(
            text.server_config(None)
                .answer
                .nsid
                .as_ref()
                .unwrap()
                .value(),
            b"ns1.example"
        );
        assert_eq!(text.restart_changes(&hex), ["nsid"]);
        for (bad, why) in [
            ("nsid: 'hex:6e7'\n", "hexadecimal"),
            ("nsid: 'hex:zz'\n", "hexadecimal"),
            ("nsid: 'hex:'\n", "empty"),
            ("nsid: ''\n", "empty"),
            (&format!("nsid: {}\n", "a".repeat(129)), "at most 128"),
            (
                &format!("nsid: 'hex:{}'\n", "ab".repeat(129)),
                "at most 128",
            ),
        ] {
            let err = format!("{:#}", from_text(bad, "/").unwrap_err());
            assert!(
                err.contains("nsid") && err.contains("line 1") && err.contains(why),
                "{bad}: {err}"
            );
        }
        assert!(from_text(&format!("nsid: {}\n", "a".repeat(128)), "/").is_ok());
    }

    #[test]
    fn yaml_overrides_defaults() {
        let config = from_text(
            "listen: ['127.0.0.1:5300', '[::1]:5300']\ncores: [0]\nudp-size: 1400\n\
             driver: legacy\nlog-level: debug\ncontrol-socket: run/tern.sock\n\
             tcp: {idle-timeout: 3s, max-in-flight: 4}\ncache: {entries: 100, bytes: 1M}\n\
             zones:\n  directory: z\n  list:\n    - origin: example.com\n      file: e.zone\n",
            "/etc/tern",
        )
        .unwrap();
        let defaults = Config::default();
        assert_eq!(config.listen.len(), 2);
        assert_eq!(config.cores, [0]);
        assert_eq!(config.udp_size, 1400);
        assert_eq!(config.driver, Driver::Legacy);
        assert_eq!(config.log_level, log::LevelFilter::Debug);
        assert_eq!(config.control_socket, Path::new("/etc/tern/run/tern.sock"));
        assert_eq!(config.tcp.idle_timeout, Duration::from_secs(3));
        assert_eq!(config.tcp.max_in_flight, 4);
        assert_eq!(config.tcp.write_timeout, defaults.tcp.write_timeout);
        assert_eq!(config.cache.max_entries, 100);
        assert_eq!(config.cache.max_bytes, 1 << 20);
        assert_eq!(config.zones_dir, Some(PathBuf::from("/etc/tern/z")));
        assert_eq!(config.zone_files[0].1, PathBuf::from("/etc/tern/e.zone"));
        assert_eq!(
            defaults.restart_changes(&config),
            [
                "listen",
                "cores",
                "driver",
                "udp-size",
                "tcp",
                "cache",
                "control-socket"
            ]
        );
    }

    #[test]
    fn forward_section() {
        let config = from_text(
            "forward:\n  allow: [127.0.0.0/8, '::1']\n  upstreams: ['127.0.0.1:5300', '[::1]:53']\n  \
             policy: race\n  race: 2\n  timeout: 300ms\n  retries: 1\n  stale-ttl: 10s\n  \
             negative-ttl-max: 60s\n  servfail-ttl: 2s\n  cache-entries: 1000\n  cache-bytes: 1M\n",
            ".",
        )
        .unwrap();
        let forward = config.forward.clone().unwrap();
        assert_eq!(forward.upstreams.len(), 2);
        assert_eq!(forward.policy, tern_server::Policy::Race);
        assert_eq!(forward.timeout, Duration::from_millis(300));
        assert_eq!(forward.retries, 1);
        assert_eq!(forward.stale_ttl, Duration::from_secs(10));
        assert_eq!(forward.negative_ttl_max, Duration::from_secs(60));
        assert_eq!(forward.servfail_ttl, Duration::from_secs(2));
        assert_eq!(forward.cache.max_entries, 1000);
        assert_eq!(forward.cache.max_bytes, 1 << 20);
        assert!(forward.allows("127.1.2.3".parse().unwrap()));
        assert!(forward.allows("::1".parse().unwrap()));
        assert!(!forward.allows("192.0.2.1".parse().unwrap()));
        assert!(Config::default()
            .restart_changes(&config)
            .contains(&"forward"));
        // Closed by default: no allow list means nobody.
        let closed = from_text("forward:\n  upstreams: ['127.0.0.1:5300']\n", ".").unwrap();
        assert!(closed.forward.unwrap().allow.is_empty());
        assert_eq!(Config::default().forward, None);
        let err = format!(
            "{:#}",
            from_text("forward:\n  allow: [127.0.0.0/8]\n", ".").unwrap_err()
        );
        assert!(err.contains("forward.upstreams"), "{err}");
        let err = format!(
            "{:#}",
            from_text("forward:\n  upstreams: ['x']\n", ".").unwrap_err()
        );
        assert!(
            err.contains("forward.upstreams") && err.contains("line 2"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            from_text("forward:\n  allow: [10.0.0.0/33]\n", ".").unwrap_err()
        );
        assert!(
            err.contains("forward.allow") && err.contains("line 2"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            from_text("forward:\n  policy: fast\n", ".").unwrap_err()
        );
        assert!(err.contains("forward.policy"), "{err}");
    }

    #[test]
    fn rate_limit_section() {
        let config = from_text(
            "rate-limit:\n  responses-per-second: 50\n  errors-per-second: 0\n  window: 2m\n  \
             slip: 0\n  ipv4-prefix-length: 32\n  ipv6-prefix-length: 64\n  \
             exempt: [127.0.0.0/8, '::1']\n  table-size: 1000\n",
            ".",
        )
        .unwrap();
        let rate_limit = config.rate_limit.clone().unwrap();
        assert_eq!(rate_limit.responses_per_second, 50);
        // As in BIND: NXDOMAIN follows responses-per-second unless given.
        assert_eq!(rate_limit.nxdomains_per_second, 50);
        assert_eq!(rate_limit.errors_per_second, 0);
        assert_eq!(rate_limit.window, 120);
        assert_eq!(rate_limit.slip, 0);
        assert_eq!(rate_limit.ipv4_prefix_length, 32);
        assert_eq!(rate_limit.ipv6_prefix_length, 64);
        assert_eq!(rate_limit.exempt.len(), 2);
        assert!(rate_limit.exempt[1].contains("::1".parse().unwrap()));
        assert_eq!(rate_limit.table_size, 1000);
        assert!(Config::default()
            .restart_changes(&config)
            .contains(&"rate-limit"));
        // An empty section is on, with the defaults; no section is off.
        let on = from_text("rate-limit: {}\n", ".").unwrap();
        assert_eq!(on.rate_limit, Some(tern_server::RateLimitConfig::default()));
        assert_eq!(Config::default().rate_limit, None);
        assert_eq!(Config::default().server_config(None).rate_limit, None);
        assert_eq!(
            on.server_config(None).rate_limit,
            Some(tern_server::RateLimitConfig::default())
        );
        let many = (0..=value::MAX_RRL_EXEMPT)
            .map(|i| format!("'10.0.{i}.0/24'"))
            .collect::<Vec<_>>()
            .join(", ");
        let err = format!(
            "{:#}",
            from_text(&format!("rate-limit:\n  exempt: [{many}]\n"), ".").unwrap_err()
        );
        assert!(err.contains("rate-limit.exempt"), "{err}");
    }

    #[test]
    fn keys_and_transfer_sections() {
        let config = from_text(
            "keys:\n  - {name: Transfer-Key, algorithm: hmac-sha256, secret: \"c2VjcmV0\"}\n  \
             - {name: legacy., algorithm: HMAC-SHA1, secret: AAEC}\n\
             transfer:\n  allow: [\"127.0.0.0/8\", \"::1\"]\n  key: transfer-key.\n",
            ".",
        )
        .unwrap();
        let transfer = &config.transfer;
        assert_eq!(transfer.keys.len(), 2);
        assert_eq!(transfer.keys[0].name().to_string(), "transfer-key.");
        assert_eq!(
            transfer.keys[1].algorithm(),
            tern_xfr::tsig::Algorithm::HmacSha1
        );
        assert_eq!(transfer.key.as_ref(), Some(&transfer.keys[0]));
        assert_eq!(transfer.allow.len(), 2);
        assert!(transfer.allow[1].contains("::1".parse().unwrap()));
        assert_eq!(config.server_config(None).transfer, *transfer);
        let changes = Config::default().restart_changes(&config);
        assert!(changes.contains(&"keys") && changes.contains(&"transfer"));
        // Nobody may transfer by default.
        assert_eq!(
            Config::default().transfer,
            tern_server::TransferConfig::default()
        );
        assert!(Config::default().transfer.allow.is_empty());

        for (text, key) in [
            ("transfer: {key: nokey}\n", "transfer.key"),
            (
                "keys: [{name: k, algorithm: hmac-md4, secret: AAEC}]\n",
                "algorithm",
            ),
            (
                "keys: [{name: k, algorithm: hmac-sha256, secret: \"not base64!\"}]\n",
                "secret",
            ),
            (
                "keys: [{name: k, algorithm: hmac-sha256, secret: \"\"}]\n",
                "secret",
            ),
            ("keys: [{name: k, algorithm: hmac-sha256}]\n", "secret"),
            (
                "keys: [{name: k, algorithm: hmac-sha256, secret: AAEC}, \
                 {name: K., algorithm: hmac-sha1, secret: AAEC}]\n",
                "listed twice",
            ),
            ("transfer: {allow: [nowhere]}\n", "transfer.allow"),
        ] {
            let err = format!("{:#}", from_text(text, ".").unwrap_err());
            assert!(err.contains(key), "{text}: {err}");
        }
    }

    /// A self-signed CA certificate (openssl, P-256) for `tls: {ca}`.
    const TEST_CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBkjCCATmgAwIBAgIUCoHtn8SlaBpiVRfaQ9QAGqAqk8YwCgYIKoZIzj0EAwIw\nHjEcMBoGA1UEAwwTdGVybi1jb25maWctdGVzdC1jYTAgFw0yNjExMjcxODI1MDFa\nGA8yMTI2MTEwMzE4MjUwMVowHjEcMBoGA1UEAwwTdGVybi1jb25maWctdGVzdC1j\nYTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABL1AhvjglEP/dHoX4x0pl0/LSUOm\nxS2Y3wx2eWho9UUlBtBp6cthoUQMnNN2gYIbMjYHw2sJUkVSR200dHXWvpmjUzBR\nMB0GA1UdDgQWBBStOUOFbVx1HOc1dDX8bJkcs/JcCDAfBgNVHSMEGDAWgBStOUOF\nbVx1HOc1dDX8bJkcs/JcCDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cA\nMEQCIF0B3rq2YpABJtfaELKrmkeONVPEjPbf37e+3rEkOYmmAiAgxEPBIai/IvIv\n/NQ9W06JZhSVhab8PNXZzrx5J6hnyw==\n-----END CERTIFICATE-----\n";

    #[test]
    fn secondary_tls_takes_a_pin_or_a_ca_and_tls_only() {
        let dir = std::env::temp_dir().join(format!("tern-config-xot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ca.pem"), TEST_CA_PEM).unwrap();
        let base = dir.to_str().unwrap();
        let pin = format!("sha256/{}", data_encoding::BASE64.encode(&[9u8; 32]));
        let config = from_text(
            &format!(
                "zones:\n  secondary:\n    \
                 - {{origin: a., primaries: ['127.0.0.1:853'], tls: {{name: primary.test, pin: '{pin}'}}}}\n    \
                 - {{origin: b., primaries: ['127.0.0.1:853'], tls: {{name: primary.test, ca: ca.pem}}}}\n    \
                 - {{origin: c., primaries: ['127.0.0.1:853'], tls: {{pin: '{pin}', fallback: plain, plain-port: 5300}}}}\n    \
                 - {{origin: d., primaries: ['127.0.0.1:53']}}\n\
                 transfer: {{tls-only: true}}\n"
            ),
            base,
        )
        .unwrap();
        let tls: Vec<_> = config
            .secondaries
            .iter()
            .map(|zone| zone.tls.clone())
            .collect();
        let first = tls[0].as_ref().unwrap();
        assert_eq!(first.name.as_deref(), Some("primary.test"));
        assert_eq!(first.auth, tern_zones::xot::XotAuth::Pin([9; 32]));
        assert_eq!(first.fallback_port, None);
        let second = tls[1].as_ref().unwrap();
        assert!(
            matches!(&second.auth, tern_zones::xot::XotAuth::Ca { path, anchors }
                if *path == dir.join("ca.pem") && anchors.len() == 1),
            "{second:?}"
        );
        assert_eq!(tls[2].as_ref().unwrap().fallback_port, Some(5300));
        assert!(tls[3].is_none());
        assert!(config.transfer.tls_only);
        assert!(!from_text("", base).unwrap().transfer.tls_only);
        let zone = |tls: &str| {
            format!("zones: {{secondary: [{{origin: a., primaries: ['127.0.0.1:853'], tls: {tls}}}]}}\n")
        };
        for (text, expected) in [
            (zone("{name: p.test}"), "pin"),
            (zone(&format!("{{pin: '{pin}', ca: ca.pem}}")), "not both"),
            (zone("{pin: 'sha256/AAAA'}"), "32 octets"),
            (zone("{pin: 'AAAA'}"), "sha256/"),
            (zone("{ca: missing.pem}"), "missing.pem"),
            (
                zone(&format!("{{pin: '{pin}', name: 'not a name'}}")),
                "not a DNS name",
            ),
            (
                zone(&format!("{{pin: '{pin}', fallback: udp}}")),
                "fallback",
            ),
            (
                zone(&format!("{{pin: '{pin}', plain-port: 53}}")),
                "fallback: plain",
            ),
            (zone(&format!("{{pin: '{pin}', cert: x}}")), "unknown field"),
            (
                "zones: {list: [{origin: a., file: a.zone, transfer: {tls-only: true}}]}\n"
                    .to_string(),
                "top-level transfer",
            ),
        ] {
            let err = format!("{:#}", from_text(&text, base).unwrap_err());
            assert!(err.contains(expected), "{text}: {err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn secondary_notify_and_state_directory() {
        let config = from_text(
            "keys: [{name: k, algorithm: hmac-sha256, secret: AAEC}]\n\
             zones:\n  secondary:\n    - {origin: Example.NET, primaries: ['127.0.0.1:5300', '[::1]:53'], key: k}\n    \
             - {origin: other., primaries: ['127.0.0.2:53']}\n\
             state-directory: state\nnotify: {targets: ['127.0.0.1:5301'], key: k}\n\
             transfer: {max-zone-records: 10, max-zone-size: 1K, ixfr-history: 0}\n",
            "/etc/tern",
        )
        .unwrap();
        assert_eq!(config.secondaries.len(), 2);
        let first = &config.secondaries[0];
        assert_eq!(first.origin.as_name().to_string(), "example.net.");
        assert_eq!(first.primaries.len(), 2);
        assert_eq!(
            first.key.as_ref().map(|k| k.name().to_string()).as_deref(),
            Some("k.")
        );
        assert!(config.secondaries[1].key.is_none());
        assert_eq!(
            config.state_directory.as_deref(),
            Some(Path::new("/etc/tern/state"))
        );
        assert_eq!(config.notify.targets, ["127.0.0.1:5301".parse().unwrap()]);
        assert!(config.notify.key.is_some());
        assert_eq!(
            config.transfer_limits,
            tern_xfr::incoming::Limits {
                records: 10,
                bytes: 1024
            }
        );
        assert_eq!(config.ixfr_history, 0);
        let changes = Config::default().restart_changes(&config);
        for key in ["zones.secondary", "state-directory", "notify"] {
            assert!(changes.contains(&key), "{key}: {changes:?}");
        }
        for (text, expected) in [
            ("zones: {secondary: [{origin: a., primaries: []}]}\n", "at least one primary"),
            ("zones: {secondary: [{origin: a., primaries: ['127.0.0.1:1'], key: nokey}]}\n", "no key named"),
            (
                "zones: {secondary: [{origin: a., primaries: ['127.0.0.1:1']}, {origin: A, primaries: ['127.0.0.1:1']}]}\n",
                "listed twice",
            ),
            ("notify: {targets: ['127.0.0.1:1'], key: nokey}\n", "notify.key"),
            ("notify: {targets: [nowhere]}\n", "notify.targets"),
        ] {
            let err = format!("{:#}", from_text(text, ".").unwrap_err());
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn dnssec_policies_and_signed_zones() {
        use tern_zones::keys::KeyScheme;
        let config = from_text(
            "state-directory: state\n\
             dnssec:\n  signing-threads: 3\n  policies:\n    - name: default\n    \
             - {name: kz, algorithm: ed25519, keys: ksk-zsk, zsk-lifetime: 90d, ksk-lifetime: 0, \
             rrsig-lifetime: 2w, rrsig-refresh: 3d, dnskey-ttl: 1h, cds-cdnskey: always, \
             serial-policy: unixtime, \
             nsec3: {iterations: 0, salt-length: 8, opt-out: true, salt-lifetime: 12h}, \
             parent: {servers: ['127.0.0.1:5300'], check-interval: 1h}}\n    \
             - {name: r, algorithm: RSASHA256, key-size: 3072}\n    \
             - {name: r2, algorithm: rsasha256}\n\
             zones:\n  list:\n    - {origin: A.example, file: a.zone, dnssec-policy: default}\n    \
             - {origin: b.example, file: b.zone, dnssec-policy: kz}\n    \
             - {origin: c.example, file: c.zone}\n    \
             - {origin: d.example, file: d.zone, dnssec-policy: r}\n    \
             - {origin: e.example, file: e.zone, dnssec-policy: r2}\n",
            "/etc/tern",
        )
        .unwrap();
        let signing = config.signing.as_ref().unwrap();
        assert_eq!(signing.state_directory, Path::new("/etc/tern/state"));
        assert_eq!(signing.threads, 3);
        assert_eq!(signing.zones.len(), 4);
        let a = signing.policy(b"\x01a\x07example\x00").unwrap();
        assert_eq!(*a, tern_zones::signing::Policy::new("default".to_string()));
        assert_eq!(a.algorithm, tern_dnssec::Algorithm::EcdsaP256Sha256);
        assert_eq!(
            (a.rrsig_lifetime, a.rrsig_refresh),
            (14 * 86_400, 7 * 86_400)
        );
        assert_eq!(a.keys, KeyScheme::Csk);
        assert!(a.nsec3.is_none());
        let b = signing.policy(b"\x01b\x07example\x00").unwrap();
        assert_eq!(b.algorithm, tern_dnssec::Algorithm::Ed25519);
        assert_eq!(b.keys, KeyScheme::KskZsk);
        assert_eq!((b.zsk_lifetime, b.ksk_lifetime), (90 * 86_400, 0));
        assert_eq!(
            (b.rrsig_lifetime, b.rrsig_refresh),
            (14 * 86_400, 3 * 86_400)
        );
        assert_eq!(b.dnskey_ttl, Some(3600));
        assert_eq!(
            (a.serial_policy, b.serial_policy),
            (
                tern_zones::signing::SerialPolicy::Increment,
                tern_zones::signing::SerialPolicy::UnixTime
            )
        );
        assert_eq!((a.rrsig_jitter, b.rrsig_jitter), (2 * 86_400, 2 * 86_400));
        let nsec3 = b.nsec3.as_ref().unwrap();
        assert_eq!(
            (
                nsec3.iterations,
                nsec3.salt_length,
                nsec3.opt_out,
                nsec3.salt_lifetime
            ),
            (0, 8, true, 12 * 3600)
        );
        assert_eq!(b.parent.as_ref().unwrap().check_interval, 3600);
        assert!(signing.policy(b"\x01c\x07example\x00").is_none());
        let d = signing.policy(b"\x01d\x07example\x00").unwrap();
        assert_eq!(
            (d.algorithm, d.key_size),
            (tern_dnssec::Algorithm::RsaSha256, 3072)
        );
        let e = signing.policy(b"\x01e\x07example\x00").unwrap();
        assert_eq!(
            (e.algorithm, e.key_size),
            (tern_dnssec::Algorithm::RsaSha256, 2048)
        );
        // The zones' loader is given the same.
        assert_eq!(config.zone_sources().signing.as_ref(), Some(signing));
        // Defaults: two signing threads; no zone signed, no signing.
        let config = from_text("dnssec: {policies: [{name: p}]}\n", ".").unwrap();
        assert!(config.signing.is_none());
        let config = from_text(
            "state-directory: s\ndnssec: {policies: [{name: p}]}\n\
             zones: {list: [{origin: a., file: a.zone, dnssec-policy: p}]}\n",
            ".",
        )
        .unwrap();
        assert_eq!(config.signing.unwrap().threads, DEFAULT_SIGNING_THREADS);
        // A secondary zone with a policy is received unsigned and served
        // signed: its policy is looked up as a listed zone's.
        let config = from_text(
            "state-directory: s\ndnssec: {policies: [{name: p}]}\n\
             zones: {secondary: [{origin: B.example, primaries: ['127.0.0.1:1'], dnssec-policy: p}]}\n",
            ".",
        )
        .unwrap();
        assert_eq!(config.secondaries.len(), 1);
        let signing = config.signing.as_ref().unwrap();
        assert_eq!(signing.policy(b"\x01b\x07example\x00").unwrap().name, "p");
        // A consumed catalog with a policy: its members are signed under
        // it (the catalog's origin names the policy, tern_zones::bump).
        let config = from_text(
            "state-directory: s\ndnssec: {policies: [{name: p}]}\n\
             zones: {catalog: [{origin: Cat.example, primaries: ['127.0.0.1:1'], dnssec-policy: p}]}\n",
            ".",
        )
        .unwrap();
        assert_eq!(config.catalogs.len(), 1);
        let signing = config.signing.as_ref().unwrap();
        assert_eq!(signing.policy(b"\x03cat\x07example\x00").unwrap().name, "p");
        // rrsig-jitter: as given, or 2 days, at most half the time a
        // signature is served before its refresh.
        let jitter = |policy: &str| {
            let text = format!(
                "state-directory: s\ndnssec: {{policies: [{{name: p, {policy}}}]}}\n\
                 zones: {{list: [{{origin: a., file: a.zone, dnssec-policy: p}}]}}\n"
            );
            let config = from_text(&text, ".").unwrap();
            config
                .signing
                .unwrap()
                .policy(b"\x01a\x00")
                .unwrap()
                .rrsig_jitter
        };
        assert_eq!(jitter("rrsig-jitter: 12h"), 12 * 3600);
        assert_eq!(jitter("rrsig-lifetime: 40s, rrsig-refresh: 30s"), 5);
        let zone = "zones: {list: [{origin: a., file: a.zone, dnssec-policy: p}]}\n";
        for (text, expected) in [
            (
                format!("state-directory: s\ndnssec: {{policies: [{{name: q}}]}}\n{zone}"),
                "zone a.: dnssec-policy: no policy named p in dnssec.policies",
            ),
            (
                format!("dnssec: {{policies: [{{name: p}}]}}\n{zone}"),
                "need a state-directory",
            ),
            (
                "dnssec: {policies: [{name: p, algorithm: rsasha1}]}\n".to_string(),
                "expected ecdsap256sha256, ed25519 or rsasha256",
            ),
            (
                "dnssec: {policies: [{name: p, algorithm: rsasha256, key-size: 1024}]}\n"
                    .to_string(),
                "key size 1024 is below 2048 bits",
            ),
            (
                "dnssec: {policies: [{name: p, algorithm: rsasha256, key-size: 4097}]}\n"
                    .to_string(),
                "key size 4097 is above 4096 bits",
            ),
            (
                "dnssec: {policies: [{name: p, key-size: 2048}]}\n".to_string(),
                "dnssec.policies: p: key-size is for rsasha256 only",
            ),
            (
                "dnssec: {policies: [{name: p}, {name: p}]}\n".to_string(),
                "dnssec.policies: p: named twice",
            ),
            (
                "dnssec: {policies: [{name: p, rrsig-lifetime: 7d}]}\n".to_string(),
                "must be shorter than rrsig-lifetime",
            ),
            (
                "dnssec: {policies: [{name: p, rrsig-jitter: 7d}]}\n".to_string(),
                "rrsig-jitter (604800 s) must be shorter than rrsig-lifetime less rrsig-refresh",
            ),
            (
                "dnssec: {policies: [{name: p, rrsig-refresh: 0}]}\n".to_string(),
                "rrsig-refresh must be above zero",
            ),
            (
                "dnssec: {policies: [{name: p, nsec3: {iterations: 151}}]}\n".to_string(),
                "0..=150",
            ),
            (
                "dnssec: {policies: [{name: p, keys: zsk}]}\n".to_string(),
                "csk or ksk-zsk",
            ),
            (
                "dnssec: {signing-threads: 0}\n".to_string(),
                "dnssec.signing-threads",
            ),
            (
                "state-directory: s\ndnssec: {policies: [{name: p}]}\n\
                 zones: {catalog: [{origin: a., primaries: ['127.0.0.1:1'], dnssec-policy: q}]}\n"
                    .to_string(),
                "zone a.: dnssec-policy: no policy named q",
            ),
            (
                "dnssec: {policies: [{name: p}]}\n\
                 zones: {catalog: [{origin: a., primaries: ['127.0.0.1:1'], dnssec-policy: p}]}\n"
                    .to_string(),
                "signed zones need a state-directory",
            ),
        ] {
            let err = format!("{:#}", from_text(&text, ".").unwrap_err());
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn per_zone_transfer_and_notify() {
        let config = from_text(
            "keys: [{name: k, algorithm: hmac-sha256, secret: AAEC}]\n\
             transfer: {allow: ['127.0.0.0/8'], key: k}\n\
             notify: {targets: ['127.0.0.1:5301']}\n\
             zones:\n  list:\n    - {origin: a.example, file: a.zone, transfer: {allow: ['192.0.2.0/24']}, \
             notify: {targets: ['192.0.2.9:53'], key: k}}\n  \
             secondary:\n    - {origin: b.example, primaries: ['127.0.0.1:53'], transfer: {allow: []}}\n",
            ".",
        )
        .unwrap();
        let a = tern_wire::name::LowerNameBuf::from_name(
            tern_wire::name::NameBuf::from_text(b"a.example.", None)
                .unwrap()
                .as_name(),
        );
        let b = tern_wire::name::LowerNameBuf::from_name(
            tern_wire::name::NameBuf::from_text(b"b.example.", None)
                .unwrap()
                .as_name(),
        );
        let other = tern_wire::name::LowerNameBuf::from_name(
            tern_wire::name::NameBuf::from_text(b"c.example.", None)
                .unwrap()
                .as_name(),
        );
        // a.example: its own prefix and no key; b.example: nobody; others:
        // the global rules.
        let (allow, key) = config.transfer.for_zone(a);
        assert!(allow[0].contains("192.0.2.1".parse().unwrap()) && key.is_none());
        assert!(config.transfer.for_zone(b).0.is_empty());
        let (allow, key) = config.transfer.for_zone(other);
        assert!(allow[0].contains("127.0.0.1".parse().unwrap()) && key.is_some());
        let (targets, key) = config.notify.for_zone(a);
        assert_eq!(
            (targets, key.is_some()),
            (&["192.0.2.9:53".parse().unwrap()][..], true)
        );
        assert_eq!(
            config.notify.for_zone(b).0,
            &["127.0.0.1:5301".parse().unwrap()][..]
        );
        // A zone's `key` alone: the global allow list and targets, signed
        // with its key.
        let keyed = from_text(
            "keys: [{name: k, algorithm: hmac-sha256, secret: AAEC}]\n\
             transfer: {allow: ['127.0.0.0/8']}\nnotify: {targets: ['127.0.0.1:5301']}\n\
             zones: {list: [{origin: c.example, file: c.zone, key: k}]}\n",
            ".",
        )
        .unwrap();
        let (allow, key) = keyed.transfer.for_zone(other);
        assert!(allow[0].contains("127.0.0.1".parse().unwrap()));
        assert_eq!(key.map(|k| k.name().to_string()).as_deref(), Some("k."));
        let (targets, key) = keyed.notify.for_zone(other);
        assert_eq!((targets.len(), key.is_some()), (1, true));
        let err = format!(
            "{:#}",
            from_text(
                "zones: {list: [{origin: c., file: c.zone, key: nokey}]}\n",
                "."
            )
            .unwrap_err()
        );
        assert!(err.contains("no key named"), "{err}");
        // Only allow and key per zone.
        let err = format!(
            "{:#}",
            from_text(
                "zones: {list: [{origin: a., file: a.zone, transfer: {ixfr-history: 0}}]}\n",
                "."
            )
            .unwrap_err()
        );
        assert!(err.contains("only allow and key"), "{err}");
    }

    #[test]
    fn dnstap_section() {
        use tern_dnstap::{DnstapOutput, DEFAULT_BUFFER};
        assert_eq!(Config::default().dnstap, None);
        let file = from_text("dnstap:\n  file: tap.fstrm\n", "/var/lib/tern").unwrap();
        let tap = file.dnstap.clone().unwrap();
        assert_eq!(
            tap.output,
            DnstapOutput::File(PathBuf::from("/var/lib/tern/tap.fstrm"))
        );
        assert_eq!(tap.identity, host_name().into_bytes());
        assert_eq!(tap.version, default_dnstap_version().into_bytes());
        assert_eq!(tap.buffer, DEFAULT_BUFFER);
        assert!(tap.log_queries && tap.log_responses);

        let socket = from_text(
            "dnstap:\n  socket: /run/tern/dnstap.sock\n  identity: ns1\n  version: ''\n  \
             buffer: 16\n  log-queries: false\n",
            "/",
        )
        .unwrap();
        let tap = socket.dnstap.clone().unwrap();
        assert_eq!(
            tap.output,
            DnstapOutput::Socket(PathBuf::from("/run/tern/dnstap.sock"))
        );
        assert_eq!(tap.identity, b"ns1");
        assert!(tap.version.is_empty());
        assert_eq!(tap.buffer, 16);
        assert!(!tap.log_queries && tap.log_responses);
        assert_eq!(file.restart_changes(&socket), ["dnstap"]);

        for (text, why) in [
            ("dnstap: {}\n", "dnstap.socket or dnstap.file"),
            ("dnstap:\n  file: a\n  socket: b\n", "not both"),
            ("dnstap:\n  file: a\n  buffer: 0\n", "outside"),
            ("dnstap:\n  file: a\n  sockets: b\n", "unknown field"),
            (
                &format!("dnstap:\n  socket: /{}\n", "s".repeat(200)),
                "longer than a Unix socket path",
            ),
            (
                &format!("dnstap:\n  file: a\n  identity: {}\n", "a".repeat(256)),
                "longer than 255",
            ),
        ] {
            let err = format!("{:#}", from_text(text, "/").unwrap_err());
            assert!(err.contains(why), "{text:?}: {err}");
        }
    }

    #[test]
    fn cookies_section() {
        // On by default, with a random secret drawn at start.
        let defaults = Config::default();
        assert_eq!(defaults.cookies, Cookies::default());
        let one = defaults.server_config(None).cookies.unwrap();
        let two = defaults.server_config(None).cookies.unwrap();
        assert_ne!(one, two, "each start draws its own secret");
        let shared = from_text(
            "cookies:\n  secret: 000102030405060708090a0b0c0d0e0f\n",
            ".",
        )
        .unwrap();
        let expected: [u8; 16] = std::array::from_fn(|i| i as u8);
        assert_eq!(
            shared.server_config(None).cookies,
            Some(tern_authority::cookie::CookieSecret::new(expected))
        );
        assert!(defaults.restart_changes(&shared).contains(&"cookies"));
        let off = from_text("cookies:\n  enabled: false\n", ".").unwrap();
        assert_eq!(off.server_config(None).cookies, None);
    }

    #[test]
    fn xdp_interfaces() {
        assert!(Config::default().xdp.is_empty());
        let config = from_text("xdp:\n  interfaces: [eth0, eth1.7]\n", ".").unwrap();
        assert_eq!(config.xdp, ["eth0", "eth1.7"]);
        assert_eq!(config.server_config(None).xdp, ["eth0", "eth1.7"]);
        assert!(Config::default().restart_changes(&config).contains(&"xdp"));
        for bad in [
            "[]",
            "[eth0, eth0]",
            "['']",
            "[../../etc]",
            "[a-very-long-interface-name]",
            "['eth 0']",
            "[..]",
        ] {
            let text = format!("xdp:\n  interfaces: {bad}\n");
            assert!(from_text(&text, ".").is_err(), "{bad} was accepted");
        }
    }

    /// `proxy:`: allowed prefixes and proxied listeners, the latter
    /// needing the former, never also in `listen`, sharing no port with
    /// an AF_XDP listener; a change needs a restart.
    #[test]
    fn proxy_section() {
        assert_eq!(Config::default().proxy, tern_server::ProxyConfig::default());
        let text = "listen: ['127.0.0.1:53']\nproxy:\n  allow: [127.0.0.1/32, '::1']\n  \
                    listen: ['127.0.0.1:5354', '[::1]:5354']\n";
        let config = from_text(text, ".").unwrap();
        let proxy = &config.server_config(None).proxy;
        assert_eq!(proxy.listen.len(), 2);
        assert!(proxy.allows("127.0.0.1".parse().unwrap()));
        assert!(proxy.allows("::1".parse().unwrap()));
        assert!(!proxy.allows("127.0.0.2".parse().unwrap()));
        assert!(Config::default()
            .restart_changes(&config)
            .contains(&"proxy"));
        // Allowed proxies alone change nothing yet, and are fine.
        assert!(from_text("proxy:\n  allow: [10.0.0.0/8]\n", ".").is_ok());
        for (bad, key) in [
            ("proxy:\n  listen: ['127.0.0.1:5354']\n", "proxy.allow"),
            ("proxy:\n  allow: [10.0.0.0/33]\n", "proxy.allow"),
            (
                "proxy:\n  allow: [127.0.0.1]\n  listen: []\n",
                "proxy.listen",
            ),
            (
                "listen: ['127.0.0.1:53']\nproxy:\n  allow: [127.0.0.1]\n  \
                 listen: ['127.0.0.1:53']\n",
                "also in listen",
            ),
            ("proxy:\n  allow: [127.0.0.1]\n  bogus: 1\n", "proxy"),
            (
                "listen: ['0.0.0.0:53']\nxdp:\n  interfaces: [eth0]\nproxy:\n  \
                 allow: [127.0.0.1]\n  listen: ['127.0.0.1:53']\n",
                "AF_XDP",
            ),
        ] {
            let err = format!("{:#}", from_text(bad, ".").unwrap_err());
            assert!(err.contains(key), "{bad}: {err}");
        }
        // AF_XDP on another port than the proxied listener's: fine.
        let text = "listen: ['0.0.0.0:53']\nxdp:\n  interfaces: [eth0]\nproxy:\n  \
                    allow: [127.0.0.1]\n  listen: ['127.0.0.1:5354']\n";
        assert!(from_text(text, ".").is_ok());
        // --listen and --xdp are checked against it too.
        let dir = std::env::temp_dir().join(format!("tern-proxy-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tern.yaml");
        std::fs::write(
            &path,
            "proxy:\n  allow: [127.0.0.1]\n  listen: ['127.0.0.1:5354']\n",
        )
        .unwrap();
        let overrides = Overrides {
            config: Some(path.clone()),
            listen: vec!["127.0.0.1:5354".parse().unwrap()],
            ..Overrides::default()
        };
        let err = format!("{:#}", Config::load(&overrides).unwrap_err());
        assert!(err.contains("also in listen"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn empty_file_is_the_defaults() {
        assert_eq!(from_text("", ".").unwrap(), Config::default());
        assert_eq!(from_text("# nothing\n", ".").unwrap(), Config::default());
    }

    #[test]
    fn command_line_overrides_the_file() {
        let overrides = Overrides {
            listen: vec!["127.0.0.1:9".parse().unwrap()],
            cores: Some(vec![1]),
            zones: Some(PathBuf::from("elsewhere")),
            control_socket: Some(PathBuf::from("x.sock")),
            log_level: Some(log::LevelFilter::Warn),
            config: None,
            xdp: vec!["eth1".to_string()],
        };
        let config = Config::load(&overrides).unwrap();
        assert_eq!(config.listen, overrides.listen);
        assert_eq!(config.xdp, ["eth1"]);
        assert_eq!(config.cores, [1]);
        assert_eq!(config.zones_dir, Some(PathBuf::from("elsewhere")));
        assert_eq!(config.control_socket, Path::new("x.sock"));
        assert_eq!(config.log_level, log::LevelFilter::Warn);
        assert!(Config::default()
            .restart_changes(&config)
            .contains(&"listen"));
    }

    #[test]
    fn the_default_control_socket_is_in_a_runtime_directory_of_its_user() {
        let path = default_control_socket();
        assert!(path.ends_with("tern/control.sock"), "{}", path.display());
        let uid = std::fs::metadata("/proc/self").unwrap().uid();
        let xdg = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
        let expected = match (uid, xdg) {
            (0, _) => PathBuf::from("/run/tern/control.sock"),
            (_, Some(dir)) if dir.is_absolute() => dir.join("tern/control.sock"),
            (uid, _) => PathBuf::from(format!("/run/user/{uid}/tern/control.sock")),
        };
        assert_eq!(path, expected);
        assert!(
            !path.starts_with(std::env::temp_dir()),
            "{}",
            path.display()
        );
    }

    #[test]
    fn long_socket_paths_are_rejected() {
        let long = format!("control-socket: /{}\n", "x".repeat(MAX_SOCKET_PATH));
        let err = format!("{:#}", from_text(&long, ".").unwrap_err());
        assert!(err.contains("control-socket"), "{err}");
    }

    /// docs/tern.example.yaml spells out every default, so that the
    /// documentation and the code cannot drift apart. Its `rate-limit`
    /// and `metrics` sections are the differences: present (so rate
    /// limiting and the endpoint are on), with the default values.
    #[test]
    fn the_example_file_shows_the_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tern.example.yaml");
        let example = Config::from_file(&path).unwrap();
        let defaults = Config::default();
        assert_eq!(example.listen, defaults.listen);
        assert_eq!(example.driver, defaults.driver);
        assert_eq!(example.udp_size, defaults.udp_size);
        assert_eq!(example.tcp, defaults.tcp);
        assert_eq!(example.cache, defaults.cache);
        assert_eq!(example.log_level, defaults.log_level);
        assert_eq!(defaults.rate_limit, None);
        assert_eq!(
            example.rate_limit,
            Some(tern_server::RateLimitConfig::default())
        );
        assert_eq!(example.cookies, defaults.cookies);
        assert_eq!(example.transfer, defaults.transfer);
        assert_eq!(example.state_directory, defaults.state_directory);
        assert_eq!(example.notify, defaults.notify);
        assert_eq!(example.ixfr_history, defaults.ixfr_history);
        assert_eq!(example.transfer_limits, defaults.transfer_limits);
        assert_eq!(defaults.metrics_listen, None);
        assert_eq!(
            example.metrics_listen,
            Some("127.0.0.1:9153".parse().unwrap())
        );
        assert_eq!(example.user, defaults.user);
        assert_eq!(defaults.dnstap, None);
        assert_eq!(example.dnstap, defaults.dnstap);
        assert_eq!(example.chaos, defaults.chaos);
    }

    #[test]
    fn user_names() {
        let config = from_text("user: tern\n", ".").unwrap();
        assert_eq!(config.user.as_deref(), Some("tern"));
        assert_eq!(Config::default().user, None);
        for bad in [
            "user: ''\n",
            "user: 'a b'\n",
            "user: 'a:b'\n",
            "user: [x]\n",
        ] {
            assert!(from_text(bad, ".").is_err(), "{bad}");
        }
        let next = from_text("user: nobody\n", ".").unwrap();
        assert_eq!(config.restart_changes(&next), ["user"]);
    }
}
