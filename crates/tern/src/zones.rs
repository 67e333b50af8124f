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
use tern_authority::{Zone, ZoneBuilder};
use tern_wire::name::NameBuf;
use tern_zone::check::Severity;
use tern_zone::{RecordList, Records};

use crate::config::Config;

/// The file-name suffix of zone files in a zone directory.
const ZONE_SUFFIX: &str = ".zone";

//----------- Loaded ---------------------------------------------------------

/// The outcome of loading a set of zones: the new versions, and every
/// message about the others.
#[derive(Default)]
pub(crate) struct Loaded {
    /// Zones built by this load (new ones, and those whose files changed),
    /// each with what it was loaded from.
    pub(crate) zones: Vec<(Arc<Zone>, Stamp)>,
    /// Zones loaded before that the configuration no longer names.
    pub(crate) removed: Vec<Origin>,
    /// Located errors; each rejected its zone.
    pub(crate) errors: Vec<String>,
    /// Located warnings.
    pub(crate) warnings: Vec<String>,
    /// How many zones were rejected.
    pub(crate) failed: usize,
    /// The origins of rejected zones whose previous version is kept.
    pub(crate) kept: Vec<String>,
    /// Zones configured whose files did not change: not rebuilt, their
    /// versions serve on.
    pub(crate) unchanged: usize,
}

//----------- Stamp ----------------------------------------------------------

/// What a zone was loaded from: its file and the files it includes, each
/// with its size, modification time and identity (device and inode: a
/// file renamed over it differs even within the clock's granularity) taken
/// just before it was read. A reload rebuilds a zone only when one of them
/// differs (or is gone).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stamp(Box<[(Box<Path>, Option<FileStamp>)]>);

/// Size, modification time, device and inode.
type FileStamp = (u64, SystemTime, u64, u64);

/// Stamps by lowercased wire origin.
pub(crate) type Stamps = HashMap<Origin, Stamp>;

/// A zone's lowercased wire origin.
pub(crate) type Origin = Box<[u8]>;

/// The stamp of one file as it is now.
fn file_stamp(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?, meta.dev(), meta.ino()))
}

impl Stamp {
    /// Whether the zone is still `path` and none of its files changed.
    fn unchanged(&self, path: &Path) -> bool {
        self.0.first().is_some_and(|(first, _)| &**first == path)
            && self.0.iter().all(|(file, seen)| file_stamp(file) == *seen)
    }
}

/// The zone files a configuration names, by lowercased origin, without
/// reading them all: what a reload of one zone looks up.
pub(crate) struct ZoneFiles<'c> {
    config: &'c Config,
}

impl<'c> ZoneFiles<'c> {
    /// The files of `config`.
    pub(crate) fn new(config: &'c Config) -> Self {
        ZoneFiles { config }
    }

    /// The origin as configured and the file of the zone `origin`
    /// (lowercased wire form), if the configuration names it: in the zone
    /// directory (tried by name first, read whole only if that fails, as
    /// for a file name in another case), else in the list.
    pub(crate) fn find(&self, origin: &[u8]) -> anyhow::Result<Option<(String, PathBuf)>> {
        let matches = |text: &str| {
            parse_origin(text)
                .is_ok_and(|name| name.as_name().as_bytes().eq_ignore_ascii_case(origin))
        };
        if let Some(dir) = &self.config.zones_dir {
            let text = origin_text(origin);
            let bare = text.strip_suffix('.').unwrap_or(&text);
            for stem in [bare, text.as_str()] {
                let path = dir.join(format!("{stem}{ZONE_SUFFIX}"));
                if path.is_file() {
                    return Ok(Some((stem.to_string(), path)));
                }
            }
            // Another spelling (case) of the name: the whole directory.
            let listed = configured_zones(&Config {
                zone_files: Vec::new(),
                ..self.config.clone()
            })?;
            if let Some(found) = listed.into_iter().find(|(text, _)| matches(text)) {
                return Ok(Some(found));
            }
        }
        Ok(self
            .config
            .zone_files
            .iter()
            .find(|(text, _)| matches(text))
            .cloned())
    }
}

/// The zones a configuration names: every `NAME.zone` in the zone
/// directory (in name order) and the listed ones.
pub(crate) fn configured_zones(config: &Config) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut zones = Vec::new();
    if let Some(dir) = &config.zones_dir {
        let entries = std::fs::read_dir(dir)
            .with_context(|| format!("reading zone directory {}", dir.display()))?;
        for entry in entries {
            let entry = entry?;
            let file_name = entry.file_name();
            let Some(file_name) = file_name.to_str() else {
                continue;
            };
            let Some(origin) = file_name.strip_suffix(ZONE_SUFFIX) else {
                continue;
            };
            if origin.is_empty() {
                continue;
            }
            // The directory entry's type, without a stat per file; a
            // symbolic link is followed.
            let is_file = match entry.file_type() {
                Ok(kind) if kind.is_symlink() => entry.path().is_file(),
                Ok(kind) => kind.is_file(),
                Err(_) => false,
            };
            if is_file {
                zones.push((origin.to_string(), entry.path()));
            }
        }
        zones.sort();
    }
    zones.extend(config.zone_files.iter().cloned());
    Ok(zones)
}

/// Loads the configured zones. With `previous` (what the zones served now
/// were loaded from), a zone whose files did not change is not read again
/// (its version serves on), a zone that fails keeps its previous version,
/// and previous zones the configuration no longer names are listed as
/// removed; without, every zone is loaded. A zone named twice (in the
/// directory and the list) is loaded once, from the first. Bound: one
/// `stat` per unchanged zone; only changed zones are read.
pub(crate) fn load_all(config: &Config, previous: Option<&Stamps>) -> anyhow::Result<Loaded> {
    let mut loaded = Loaded::default();
    let mut seen: HashMap<Origin, PathBuf> = HashMap::new();
    for (origin, path) in configured_zones(config)? {
        let Ok(name) = parse_origin(&origin) else {
            load_into(&mut loaded, &origin, &path);
            continue;
        };
        let key: Origin = name.as_name().as_bytes().to_ascii_lowercase().into();
        if let Some(first) = seen.get(&key) {
            loaded.warnings.push(format!(
                "{}: warning: zone {origin} is also loaded from {}; this file is ignored",
                path.display(),
                first.display()
            ));
            continue;
        }
        let stamp = previous.and_then(|previous| previous.get(&key));
        seen.insert(key, path.clone());
        if stamp.is_some_and(|stamp| stamp.unchanged(&path)) {
            loaded.unchanged += 1;
            continue;
        }
        if !load_into(&mut loaded, &origin, &path) && stamp.is_some() {
            loaded.kept.push(origin);
        }
    }
    if let Some(previous) = previous {
        loaded.removed = previous
            .keys()
            .filter(|origin| !seen.contains_key(*origin))
            .cloned()
            .collect();
    }
    Ok(loaded)
}

/// Loads the zone `origin` (lowercased wire form) of `config` whatever its
/// files, and nothing else (`tern reload ZONE`); `served` says whether a
/// version of it serves now (kept if this one fails). An error if the
/// configuration does not name it.
pub(crate) fn load_one(config: &Config, origin: &[u8], served: bool) -> anyhow::Result<Loaded> {
    let Some((text, path)) = ZoneFiles::new(config).find(origin)? else {
        anyhow::bail!("{} is not a zone loaded from a file", origin_text(origin));
    };
    let mut loaded = Loaded::default();
    if !load_into(&mut loaded, &text, &path) && served {
        loaded.kept.push(text);
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

/// Loads one zone into `loaded`; whether it loaded.
fn load_into(loaded: &mut Loaded, origin_text: &str, path: &Path) -> bool {
    match load_zone_from(origin_text, path, &mut loaded.warnings) {
        Ok((zone, stamp)) => {
            loaded.zones.push((Arc::new(zone), stamp));
            true
        }
        Err(errors) => {
            loaded.errors.extend(errors);
            loaded.failed += 1;
            false
        }
    }
}

/// Reads `$INCLUDE`d files through `read` (from disk: [`tern_zone::FileInclude`]),
/// stamping each just before it is read, so that a file changed during a
/// load differs from its stamp at the next reload.
struct StampingInclude<'r> {
    stamps: Vec<(Box<Path>, Option<FileStamp>)>,
    read: &'r mut dyn tern_zone::Include,
}

impl tern_zone::Include for StampingInclude<'_> {
    fn include(&mut self, from: &Path, target: &str) -> Result<tern_zone::IncludedFile, String> {
        let path = tern_zone::resolve_include(from, target);
        self.stamps
            .push((path.clone().into_boxed_path(), file_stamp(&path)));
        self.read.include(from, target)
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

/// [`load_zone`], and what it was loaded from: the zone file, then those
/// included, each stamped just before it was read.
fn load_zone_from(
    origin_text: &str,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<(Zone, Stamp), Vec<String>> {
    load_zone_with(origin_text, path, warnings, &mut tern_zone::FileInclude)
}

/// [`load_zone_from`], with the `$INCLUDE`d files read by `read`.
fn load_zone_with(
    origin_text: &str,
    path: &Path,
    warnings: &mut Vec<String>,
    read: &mut dyn tern_zone::Include,
) -> Result<(Zone, Stamp), Vec<String>> {
    let origin =
        parse_origin(origin_text).map_err(|err| vec![format!("{}: {err}", path.display())])?;
    let mut includes = StampingInclude {
        stamps: vec![(path.to_path_buf().into_boxed_path(), file_stamp(path))],
        read,
    };
    let data = std::fs::read(path)
        .map_err(|err| vec![format!("{}: cannot read zone file: {err}", path.display())])?;
    let mut records = Records::new();
    let files = tern_zone::scan_bytes(
        &data,
        path,
        origin.as_name(),
        &tern_zone::Options::default(),
        &mut includes,
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
    drop(data);
    let stamp = Stamp(includes.stamps.into_boxed_slice());
    builder
        .finish()
        .map(|zone| (zone, stamp))
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

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads includes from disk, then changes the file it read: an edit
    /// made while the zone loads.
    struct EditAfterRead;

    impl tern_zone::Include for EditAfterRead {
        fn include(
            &mut self,
            from: &Path,
            target: &str,
        ) -> Result<tern_zone::IncludedFile, String> {
            let read = tern_zone::FileInclude.include(from, target)?;
            std::fs::write(&read.path, "www A 192.0.2.2\nextra A 192.0.2.3\n")
                .map_err(|err| err.to_string())?;
            Ok(read)
        }
    }

    #[test]
    fn an_include_changed_during_the_load_differs_from_its_stamp() {
        let dir = std::env::temp_dir().join(format!("tern-zones-stamp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let zone_file = dir.join("example.zone");
        std::fs::write(
            &zone_file,
            "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns.example.net.\n\
             $INCLUDE hosts.inc\n",
        )
        .unwrap();
        std::fs::write(dir.join("hosts.inc"), "www A 192.0.2.1\n").unwrap();
        let mut warnings = Vec::new();
        let (zone, stamp) =
            load_zone_with("example.", &zone_file, &mut warnings, &mut EditAfterRead).unwrap();
        // The version loaded is the one read, before the edit ...
        assert_eq!(zone.record_count(), 3);
        assert_eq!(stamp.0.len(), 2, "the zone file and its include");
        // ... so the next reload must see the edit and rebuild the zone.
        assert!(
            !stamp.unchanged(&zone_file),
            "the include was stamped after it changed: the edit would be missed"
        );
        // Unedited, a stamp stays the same.
        let (_, stamp) = load_zone_from("example.", &zone_file, &mut warnings).unwrap();
        assert!(stamp.unchanged(&zone_file));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
