//! Configuration: the YAML file (see `raw`) validated into typed values.
//!
//! Precedence: built-in defaults, then the file, then command-line flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

mod raw;

/// The default listen address: loopback on an unprivileged port, so that
/// `make run` works without privileges.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:5353";

/// The default zone directory, relative to the working directory.
pub(crate) const DEFAULT_ZONES_DIR: &str = "zones";

/// The default EDNS UDP payload limit (the DNS Flag Day 2020 value).
pub(crate) const DEFAULT_UDP_SIZE: u16 = 1232;

//----------- Config ---------------------------------------------------------

/// The validated configuration.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// Addresses to serve on.
    pub(crate) listen: Vec<SocketAddr>,
    /// CPUs to run on; empty means one unpinned thread.
    pub(crate) cores: Vec<usize>,
    /// A directory of `NAME.zone` files.
    pub(crate) zones_dir: Option<PathBuf>,
    /// Zones given one by one: origin and file.
    pub(crate) zone_files: Vec<(String, PathBuf)>,
    /// The largest UDP answer we send.
    pub(crate) udp_size: u16,
    /// Answer CH TXT version.bind / id.server with these strings.
    pub(crate) chaos: Option<tern_authority::ChaosIdentity>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: vec![DEFAULT_LISTEN
                .parse()
                .expect("the default address is valid")],
            cores: Vec::new(),
            zones_dir: Some(PathBuf::from(DEFAULT_ZONES_DIR)),
            zone_files: Vec::new(),
            udp_size: DEFAULT_UDP_SIZE,
            chaos: None,
        }
    }
}

impl Config {
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
            config.listen = listen
                .iter()
                .map(|text| {
                    text.parse()
                        .with_context(|| format!("listen: bad address {text:?}"))
                })
                .collect::<anyhow::Result<_>>()?;
        }
        if let Some(cores) = raw.cores {
            config.cores = match cores {
                raw::RawCores::Keyword(word) => parse_cores(&word).context("cores")?,
                raw::RawCores::List(list) => list,
            };
        }
        if let Some(zones) = raw.zones {
            config.zones_dir = zones.directory.map(|dir| base.join(dir));
            config.zone_files = zones
                .list
                .unwrap_or_default()
                .into_iter()
                .map(|zone| (zone.origin, base.join(zone.file)))
                .collect();
        }
        if let Some(size) = raw.udp_size {
            if size < 512 {
                bail!("udp-size: {size} is below the 512-octet minimum");
            }
            config.udp_size = size;
        }
        if let Some(chaos) = raw.chaos {
            config.chaos = Some(tern_authority::ChaosIdentity {
                version: chaos.version,
                identity: chaos.identity,
            });
        }
        Ok(config)
    }

    /// The runtime's view of this configuration.
    pub(crate) fn server_config(&self) -> tern_server::ServerConfig {
        tern_server::ServerConfig {
            listen: self.listen.clone(),
            cores: self.cores.clone(),
            answer: tern_authority::Options {
                max_udp_size: self.udp_size,
                chaos: self.chaos.clone(),
            },
            tcp: tern_server::TcpConfig::default(),
        }
    }
}

/// Parses a CPU list: `all`, or comma-separated numbers and ranges (`0,2-3`).
pub(crate) fn parse_cores(text: &str) -> anyhow::Result<Vec<usize>> {
    if text.trim() == "all" {
        let count = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        return Ok((0..count).collect());
    }
    let mut cores = Vec::new();
    for part in text.split(',').map(str::trim) {
        let parse = |s: &str| s.parse::<usize>().with_context(|| format!("bad CPU {s:?}"));
        match part.split_once('-') {
            Some((start, end)) => {
                let (start, end) = (parse(start)?, parse(end)?);
                if start > end {
                    bail!("bad CPU range {part:?}");
                }
                cores.extend(start..=end);
            }
            None => cores.push(parse(part)?),
        }
    }
    cores.sort_unstable();
    cores.dedup();
    Ok(cores)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_lists() {
        assert_eq!(parse_cores("0,2-3").unwrap(), [0, 2, 3]);
        assert_eq!(parse_cores("3,1").unwrap(), [1, 3]);
        assert!(parse_cores("2-1").is_err());
        assert!(parse_cores("x").is_err());
        assert!(!parse_cores("all").unwrap().is_empty());
    }

    #[test]
    fn yaml_overrides_defaults_and_rejects_unknown_keys() {
        let raw = raw::parse(
            "listen: ['127.0.0.1:5300', '[::1]:5300']\ncores: [0]\nudp-size: 1400\n\
             zones:\n  directory: z\n  list:\n    - origin: example.com\n      file: e.zone\n",
        )
        .unwrap();
        let config = Config::from_raw(raw, Path::new("/etc/tern")).unwrap();
        assert_eq!(config.listen.len(), 2);
        assert_eq!(config.cores, [0]);
        assert_eq!(config.udp_size, 1400);
        assert_eq!(config.zones_dir, Some(PathBuf::from("/etc/tern/z")));
        assert_eq!(config.zone_files[0].1, PathBuf::from("/etc/tern/e.zone"));
        let err = raw::parse("listen: []\nbogus: 1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("bogus") && err.contains("line 2"), "{err}");
        let small = raw::parse("udp-size: 100\n").unwrap();
        assert!(Config::from_raw(small, Path::new(".")).is_err());
    }
}
