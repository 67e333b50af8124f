//! Loading zones: zone files through tern-zone's scanner and semantic
//! checks, into tern-authority's immutable zones.
//!
//! The authority crate does not depend on the zone-file crate (STYLE.md
//! section 1.1): this module is the one place that converts parsed records
//! into a `ZoneBuilder`.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Context;
use tern_authority::{Catalog, Zone, ZoneBuilder};
use tern_wire::name::NameBuf;
use tern_zone::check::Severity;
use tern_zone::{RecordList, Records};

use crate::config::Config;

/// The file-name suffix of zone files in a zone directory.
const ZONE_SUFFIX: &str = ".zone";

//----------- Loaded ---------------------------------------------------------

/// The outcome of loading a set of zones: the good ones, and every
/// message about the others.
#[derive(Default)]
pub(crate) struct Loaded {
    /// Zones to serve: the ones that loaded, and the previous versions of
    /// the ones that failed to reload.
    pub(crate) zones: Vec<Arc<Zone>>,
    /// Located errors; each rejected its zone.
    pub(crate) errors: Vec<String>,
    /// Located warnings.
    pub(crate) warnings: Vec<String>,
    /// How many zones were rejected.
    pub(crate) failed: usize,
    /// The origins of rejected zones whose previous version is kept.
    pub(crate) kept: Vec<String>,
    /// What each zone in `zones` was loaded from, by lowercased origin.
    pub(crate) stamps: Stamps,
    /// How many zones were parsed and built (the others in `zones` are
    /// previous versions, unchanged or kept).
    pub(crate) rebuilt: usize,
}

//----------- Stamp ----------------------------------------------------------

/// What a zone was loaded from: its file and the files it includes, each
/// with its size, modification time and identity (device and inode: a
/// file renamed over it differs even within the clock's granularity) when
/// the load began. A reload rebuilds a zone only when one of them differs
/// (or is gone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stamp(Vec<(PathBuf, Option<FileStamp>)>);

/// Size, modification time, device and inode.
type FileStamp = (u64, SystemTime, u64, u64);

/// Stamps by lowercased origin.
pub(crate) type Stamps = HashMap<Vec<u8>, Stamp>;

impl Stamp {
    /// The files as they are now.
    fn of<'a>(files: impl IntoIterator<Item = &'a Path>) -> Stamp {
        Stamp(
            files
                .into_iter()
                .map(|path| {
                    let meta = std::fs::metadata(path).ok();
                    let seen = meta.and_then(|meta| {
                        Some((meta.len(), meta.modified().ok()?, meta.dev(), meta.ino()))
                    });
                    (path.to_path_buf(), seen)
                })
                .collect(),
        )
    }

    /// Whether the zone is still `path` and none of its files changed.
    fn unchanged(&self, path: &Path) -> bool {
        self.0.first().is_some_and(|(first, _)| first == path)
            && Stamp::of(self.0.iter().map(|(file, _)| file.as_path())) == *self
    }
}

/// A reload's view of what is served: the zones and their stamps.
pub(crate) struct Previous<'a> {
    /// The catalog being served.
    pub(crate) catalog: &'a Catalog,
    /// What its primary zones were loaded from.
    pub(crate) stamps: &'a Stamps,
    /// `Some`: rebuild only this zone (lowercased wire origin), whatever
    /// its files; keep every other served zone as it is. `None`: rebuild
    /// the zones whose files changed, and load new ones.
    pub(crate) only: Option<&'a [u8]>,
}

/// The zones a configuration names: every `NAME.zone` in the zone
/// directory (in name order) and the listed ones.
pub(crate) fn configured_zones(config: &Config) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut zones = Vec::new();
    if let Some(dir) = &config.zones_dir {
        let entries = std::fs::read_dir(dir)
            .with_context(|| format!("reading zone directory {}", dir.display()))?;
        for entry in entries {
            let path = entry?.path();
            let Some(file_name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if let Some(origin) = file_name.strip_suffix(ZONE_SUFFIX) {
                if !origin.is_empty() && path.is_file() {
                    zones.push((origin.to_string(), path.clone()));
                }
            }
        }
        zones.sort();
    }
    zones.extend(config.zone_files.iter().cloned());
    Ok(zones)
}

/// Loads every configured zone. A zone that fails is reported; if
/// `previous` serves a zone of that origin, that version is kept in the
/// result, else the zone is left out. A zone named twice (in the directory
/// and the list) is loaded once, from the first. With `previous`, a zone
/// whose files did not change is not rebuilt: its served version is
/// reused (see [`Previous::only`] for a reload of one zone).
pub(crate) fn load_all(config: &Config, previous: Option<&Previous<'_>>) -> anyhow::Result<Loaded> {
    let previous_by_origin: HashMap<Vec<u8>, &Arc<Zone>> = previous
        .map(|previous| {
            previous
                .catalog
                .zones()
                .iter()
                .map(|zone| (origin_key(zone.origin().as_bytes()), zone))
                .collect()
        })
        .unwrap_or_default();
    let mut loaded = Loaded::default();
    let mut seen: HashMap<Vec<u8>, PathBuf> = HashMap::new();
    for (origin, path) in configured_zones(config)? {
        if let Ok(name) = parse_origin(&origin) {
            let key = origin_key(name.as_name().as_bytes());
            if let Some(first) = seen.get(&key) {
                loaded.warnings.push(format!(
                    "{}: warning: zone {origin} is also loaded from {}; this file is ignored",
                    path.display(),
                    first.display()
                ));
                continue;
            }
            seen.insert(key.clone(), path.clone());
            let reused = previous.and_then(|previous| {
                let zone = previous_by_origin.get(&key)?;
                let stamp = previous.stamps.get(&key)?;
                let keep = match previous.only {
                    Some(only) => only != key.as_slice(),
                    None => stamp.unchanged(&path),
                };
                keep.then(|| (Arc::clone(zone), stamp.clone()))
            });
            if let Some((zone, stamp)) = reused {
                loaded.zones.push(zone);
                loaded.stamps.insert(key, stamp);
                continue;
            }
            if previous.is_some_and(|previous| previous.only.is_some_and(|only| only != key)) {
                continue; // a new zone waits for a reload of all zones, or of itself
            }
            if let Some(stamp) = load_into(&mut loaded, &origin, &path) {
                loaded.stamps.insert(key, stamp);
            } else if let Some(zone) = previous_by_origin.get(&key) {
                loaded.zones.push(Arc::clone(zone));
                loaded.kept.push(origin);
                if let Some(stamp) = previous.and_then(|previous| previous.stamps.get(&key)) {
                    loaded.stamps.insert(key, stamp.clone());
                }
            }
        } else {
            load_into(&mut loaded, &origin, &path);
        }
    }
    Ok(loaded)
}

/// Loads one zone, for `tern check ORIGIN FILE`.
pub(crate) fn load_one_for_check(origin: &str, path: &Path) -> anyhow::Result<Loaded> {
    let mut loaded = Loaded::default();
    load_into(&mut loaded, origin, path);
    Ok(loaded)
}

/// Parses a zone name given in the configuration or on the command line;
/// a missing final dot is implied.
pub(crate) fn parse_origin(origin: &str) -> Result<NameBuf, String> {
    let absolute = if origin.ends_with('.') {
        origin.to_string()
    } else {
        format!("{origin}.")
    };
    NameBuf::from_text(absolute.as_bytes(), None)
        .map_err(|err| format!("bad zone name {origin:?}: {err}"))
}

/// A wire-format origin as text (for messages).
pub(crate) fn origin_text(wire: &[u8]) -> String {
    tern_wire::name::Name::from_wire(wire).map_or_else(|_| "?".to_string(), |name| name.to_string())
}

/// Zone origins compare without regard to ASCII case.
fn origin_key(wire: &[u8]) -> Vec<u8> {
    wire.to_ascii_lowercase()
}

/// Loads one zone into `loaded`; what it was loaded from, or `None` if
/// it failed.
fn load_into(loaded: &mut Loaded, origin_text: &str, path: &Path) -> Option<Stamp> {
    // Stamped before reading: a file changed during the load differs from
    // its stamp at the next reload, which then rebuilds the zone.
    let mut stamp = Stamp::of([path]);
    match load_zone_from(origin_text, path, &mut loaded.warnings) {
        Ok((zone, files)) => {
            loaded.zones.push(Arc::new(zone));
            loaded.rebuilt += 1;
            // The zone file is first; the included ones follow.
            let included = files.iter().skip(1).map(PathBuf::as_path);
            stamp.0.extend(Stamp::of(included).0);
            Some(stamp)
        }
        Err(errors) => {
            loaded.errors.extend(errors);
            loaded.failed += 1;
            None
        }
    }
}

/// Parses, checks and builds one zone. Errors come back as located lines.
///
/// The zone exists in memory at most twice, and never as one owned record
/// per record: the scanner fills a compact [`tern_zone::Records`] (flat
/// arenas), the checks read it in place, the builder copies it into its own
/// tables, and it is freed before the builder's adjust pass allocates the
/// served zone.
pub(crate) fn load_zone(
    origin_text: &str,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<Zone, Vec<String>> {
    load_zone_from(origin_text, path, warnings).map(|(zone, _)| zone)
}

/// [`load_zone`], and the files read: the zone file, then those included.
fn load_zone_from(
    origin_text: &str,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<(Zone, Vec<PathBuf>), Vec<String>> {
    let origin =
        parse_origin(origin_text).map_err(|err| vec![format!("{}: {err}", path.display())])?;
    let mut records = Records::new();
    let files = tern_zone::scan_file(
        path,
        origin.as_name(),
        &tern_zone::Options::default(),
        &mut records,
    )
    .map_err(|errors| {
        errors
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    })?;
    let mut errors = Vec::new();
    let file_of = |location: tern_zone::Location| {
        let file = files
            .get(location.file as usize)
            .map_or(path, PathBuf::as_path);
        file.display().to_string()
    };
    for diagnostic in tern_zone::check::check_zone(origin.as_name(), &records) {
        let line = diagnostic.render(&file_of(diagnostic.location));
        match diagnostic.severity {
            Severity::Error => errors.push(line),
            Severity::Warning => warnings.push(line),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    records.settle_ttls(); // each RRset's TTL as BIND reads the file (tern_zone::ttl)
    let mut builder = ZoneBuilder::new(origin.as_name());
    builder.reserve(records.len(), records.rdata_len());
    for record in records.iter() {
        if let Err(err) = builder.insert(
            record.owner,
            record.rtype,
            record.class,
            record.ttl,
            record.rdata,
        ) {
            let location = record.location;
            errors.push(format!(
                "{}:{}:{}: error: {err}",
                file_of(location),
                location.line,
                location.col
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    drop(records);
    builder
        .finish()
        .map(|zone| (zone, files))
        .map_err(|err| vec![format!("{}: {err}", path.display())])
}

/// Parses a zone and prints it in canonical form (`tern dump`).
pub(crate) fn dump(origin_text: &str, path: &Path) -> anyhow::Result<String> {
    let origin = parse_origin(origin_text).map_err(anyhow::Error::msg)?;
    let parsed = tern_zone::parse_file(path, origin.as_name(), &tern_zone::Options::default())
        .map_err(|errors| anyhow::anyhow!("{errors}"))?;
    let mut text = String::new();
    tern_zone::print::write_zone(&parsed.records, &mut text);
    Ok(text)
}
