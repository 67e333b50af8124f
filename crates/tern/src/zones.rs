//! Loading zones: zone files through tern-zone's scanner and semantic
//! checks, into tern-authority's immutable zones.
//!
//! The authority crate does not depend on the zone-file crate (STYLE.md
//! section 1.1): this module is the one place that converts parsed records
//! into a `ZoneBuilder`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
/// `previous` (the catalog being served) has a zone of that origin, that
/// version is kept in the result, else the zone is left out. A zone named
/// twice (in the directory and the list) is loaded once, from the first.
pub(crate) fn load_all(config: &Config, previous: Option<&Catalog>) -> anyhow::Result<Loaded> {
    let previous_by_origin: HashMap<Vec<u8>, &Arc<Zone>> = previous
        .map(|catalog| {
            catalog
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
            if !load_into(&mut loaded, &origin, &path) {
                if let Some(zone) = previous_by_origin.get(&key) {
                    loaded.zones.push(Arc::clone(zone));
                    loaded.kept.push(origin);
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

/// Zone origins compare without regard to ASCII case.
fn origin_key(wire: &[u8]) -> Vec<u8> {
    wire.to_ascii_lowercase()
}

/// Loads one zone into `loaded`; false if it failed.
fn load_into(loaded: &mut Loaded, origin_text: &str, path: &Path) -> bool {
    match load_zone(origin_text, path, &mut loaded.warnings) {
        Ok(zone) => {
            loaded.zones.push(Arc::new(zone));
            true
        }
        Err(errors) => {
            loaded.errors.extend(errors);
            loaded.failed += 1;
            false
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
