//! Loading zones: zone files through tern-zone's scanner and semantic
//! checks, into tern-authority's immutable zones.
//!
//! The authority crate does not depend on the zone-file crate (STYLE.md
//! section 1.1): this module is the one place that converts parsed records
//! into a `ZoneBuilder`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use tern_authority::{Zone, ZoneBuilder};
use tern_wire::name::NameBuf;
use tern_zone::check::Severity;
use tern_zone::{RecordList, Records};

/// The file-name suffix of zone files in a zone directory.
const ZONE_SUFFIX: &str = ".zone";

//----------- Loaded ---------------------------------------------------------

/// The outcome of loading a set of zones: the new versions, and every
/// message about the others.
#[derive(Default)]
pub struct Loaded {
    /// Zones built by this load (new ones, and those whose files changed),
    /// each with what it was loaded from.
    pub zones: Vec<(Arc<Zone>, Stamp)>,
    /// Zones loaded before that the configuration no longer names (a
    /// load with previous zones only).
    pub removed: Vec<Origin>,
    /// Located errors; each rejected its zone.
    pub errors: Vec<String>,
    /// Located warnings.
    pub warnings: Vec<String>,
    /// How many zones were rejected.
    pub failed: usize,
    /// The origins of rejected zones whose previous version is kept.
    pub kept: Vec<String>,
    /// Zones configured whose files did not change: not rebuilt, their
    /// versions serve on.
    pub unchanged: usize,
}

//----------- Stamp ----------------------------------------------------------

/// What a zone was loaded from: its file and the files it includes, each
/// with its size, modification time and identity (device and inode: a
/// file renamed over it differs even within the clock's granularity) taken
/// just before it was read. A reload rebuilds a zone only when one of them
/// differs (or is gone). The zone file's is kept inline: most zones
/// include nothing, and a stamp is kept for every zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    path: Box<Path>,
    file: Option<FileStamp>,
    includes: Box<[(Box<Path>, Option<FileStamp>)]>,
}

/// Size, modification time, device and inode.
type FileStamp = (u64, SystemTime, u64, u64);

/// A zone's lowercased wire origin.
pub type Origin = Box<[u8]>;

/// Where the zone files are, as the configuration says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    /// A directory of zone files: every `NAME.zone` in it is the zone
    /// NAME.
    pub dir: Option<PathBuf>,
    /// Zones listed one by one: origin as written, and file.
    pub listed: Vec<(String, PathBuf)>,
}

/// Why a load did not happen at all (a zone that fails to load is not an
/// error of the load: its messages are in [`Loaded`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// The zone directory could not be read.
    Directory {
        /// The directory.
        dir: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The zone asked for is not one the configuration names.
    NotConfigured {
        /// Its name.
        origin: String,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Directory { dir, error } => {
                write!(f, "reading zone directory {}: {error}", dir.display())
            }
            LoadError::NotConfigured { origin } => {
                write!(f, "{origin} is not a zone loaded from a file")
            }
        }
    }
}

impl std::error::Error for LoadError {}

/// The stamp of one file as it is now.
fn file_stamp(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?, meta.dev(), meta.ino()))
}

impl Stamp {
    /// Whether the zone is still `path` and none of its files changed.
    /// Bound: a `stat` per file.
    pub fn unchanged(&self, path: &Path) -> bool {
        &*self.path == path
            && file_stamp(path) == self.file
            && self
                .includes
                .iter()
                .all(|(file, seen)| file_stamp(file) == *seen)
    }
}

/// What a reload asks of the zones served now.
pub trait Previous {
    /// Whether a zone of this origin (lowercased wire form) was loaded
    /// from `path` and none of its files changed since; `None` if no zone
    /// of this origin was loaded from a file.
    fn unchanged(&self, origin: &[u8], path: &Path) -> Option<bool>;

    /// The origins of the zones loaded from files that `configured` does
    /// not name.
    fn not_configured(&self, configured: &dyn Fn(&[u8]) -> bool) -> Vec<Origin>;

    /// How many zones were loaded from files.
    fn count(&self) -> usize;
}

//----------- Listing --------------------------------------------------------

/// Byte strings kept in one buffer: the names of 100,000 zone files or
/// their origins are two allocations, not 100,000 (a reload then leaves no
/// holes of them in the heap).
#[derive(Default)]
struct Strings {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Strings {
    fn push(&mut self, string: &[u8]) {
        self.bytes.extend_from_slice(string);
        self.ends.push(self.bytes.len());
    }

    fn get(&self, index: usize) -> &[u8] {
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before]);
        &self.bytes[start..self.ends[index]]
    }
}

/// [`Strings`] of text.
#[derive(Default)]
struct Texts {
    text: String,
    ends: Vec<usize>,
}

impl Texts {
    fn push(&mut self, string: &str) {
        self.text.push_str(string);
        self.ends.push(self.text.len());
    }

    fn get(&self, index: usize) -> &str {
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before]);
        // Both ends are where a whole `str` was pushed: char boundaries.
        self.text.get(start..self.ends[index]).unwrap_or_default()
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

/// The zone files a configuration names, in the order they are loaded:
/// every `NAME.zone` in the zone directory in name order, then the listed
/// ones. Reading the directory keeps only the names.
struct Listing<'c> {
    dir: Option<&'c Path>,
    /// The directory's zone names (file names without `.zone`) ...
    stems: Texts,
    /// ... in name order.
    order: Vec<usize>,
    listed: &'c [(String, PathBuf)],
}

impl<'c> Listing<'c> {
    fn read(sources: &'c Sources) -> Result<Self, LoadError> {
        let mut stems = Texts::default();
        if let Some(dir) = &sources.dir {
            let failed = |error| LoadError::Directory {
                dir: dir.clone(),
                error,
            };
            let entries = std::fs::read_dir(dir).map_err(failed)?;
            for entry in entries {
                let entry = entry.map_err(failed)?;
                let file_name = entry.file_name();
                let Some(stem) = file_name.to_str().and_then(|f| f.strip_suffix(ZONE_SUFFIX))
                else {
                    continue;
                };
                if stem.is_empty() {
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
                    stems.push(stem);
                }
                crate::work::visit(1);
            }
        }
        let mut order: Vec<usize> = (0..stems.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            crate::work::visit(1);
            stems.get(a).cmp(stems.get(b))
        });
        Ok(Listing {
            dir: sources.dir.as_deref(),
            stems,
            order,
            listed: &sources.listed,
        })
    }

    fn len(&self) -> usize {
        self.order.len() + self.listed.len()
    }

    /// The origin as written (the file name, or the list's) of entry `i`.
    fn text(&self, i: usize) -> &str {
        match self.order.get(i) {
            Some(&stem) => self.stems.get(stem),
            None => &self.listed[i - self.order.len()].0,
        }
    }

    /// The file of entry `i`.
    fn path(&self, i: usize) -> PathBuf {
        match (self.order.get(i), self.dir) {
            (Some(_), Some(dir)) => dir.join(format!("{}{ZONE_SUFFIX}", self.text(i))),
            _ => self.listed[i - self.order.len()].1.clone(),
        }
    }

    /// Each entry's lowercased wire origin (empty where the name does not
    /// parse); the entries that name an origin already named by an earlier
    /// one, with that one: `first[i]` is `i` for an entry that is loaded;
    /// and the entries with an origin, sorted by it: `(origins, first,
    /// sorted)`.
    fn origins(&self) -> (Strings, Vec<usize>, Vec<usize>) {
        let mut origins = Strings::default();
        for i in 0..self.len() {
            crate::work::visit(1);
            match parse_origin(self.text(i)) {
                Ok(name) => origins.push(&name.as_name().as_bytes().to_ascii_lowercase()),
                Err(_) => origins.push(&[]),
            }
        }
        let mut sorted: Vec<usize> = (0..self.len())
            .filter(|&i| !origins.get(i).is_empty())
            .collect();
        sorted.sort_unstable_by(|&a, &b| {
            crate::work::visit(1);
            origins.get(a).cmp(origins.get(b)).then(a.cmp(&b))
        });
        let mut first: Vec<usize> = (0..self.len()).collect();
        for pair in sorted.windows(2) {
            crate::work::visit(1);
            if origins.get(pair[0]) == origins.get(pair[1]) {
                first[pair[1]] = first[pair[0]];
            }
        }
        (origins, first, sorted)
    }
}

/// The zone files a configuration names, by lowercased origin, without
/// reading them all: what a reload of one zone looks up.
pub struct ZoneFiles<'c> {
    sources: &'c Sources,
}

impl<'c> ZoneFiles<'c> {
    /// The files of `sources`.
    pub fn new(sources: &'c Sources) -> Self {
        ZoneFiles { sources }
    }

    /// The origin as configured and the file of the zone `origin`
    /// (lowercased wire form), if the configuration names it: in the zone
    /// directory (tried by name first, read whole only if that fails, as
    /// for a file name in another case), else in the list.
    pub fn find(&self, origin: &[u8]) -> Result<Option<(String, PathBuf)>, LoadError> {
        if let Some(dir) = &self.sources.dir {
            let text = origin_text(origin);
            let bare = text.strip_suffix('.').unwrap_or(&text);
            for stem in [bare, text.as_str()] {
                let path = dir.join(format!("{stem}{ZONE_SUFFIX}"));
                if path.is_file() {
                    return Ok(Some((stem.to_string(), path)));
                }
            }
        }
        // Another spelling (case) of the name, or a listed zone.
        let listing = Listing::read(self.sources)?;
        let found = (0..listing.len()).find(|&i| {
            parse_origin(listing.text(i))
                .is_ok_and(|name| name.as_name().as_bytes().eq_ignore_ascii_case(origin))
        });
        Ok(found.map(|i| (listing.text(i).to_string(), listing.path(i))))
    }
}

/// Loads the configured zones. With `previous` (the zones served now), a
/// zone whose files did not change is not read again (its version serves
/// on), a zone that fails keeps its previous version, and the zones the
/// configuration no longer names are listed in [`Loaded::removed`];
/// without, every zone is loaded. A zone named twice (in the directory and
/// the list) is loaded once, from the first. Bound: one `stat` per
/// unchanged zone, and a handful of allocations whatever the number of
/// zones; only changed zones are read.
pub fn load_all(sources: &Sources, previous: Option<&dyn Previous>) -> Result<Loaded, LoadError> {
    let listing = Listing::read(sources)?;
    let (origins, first, sorted) = listing.origins();
    let mut loaded = Loaded::default();
    // The zones loaded before that this configuration still names.
    let mut named = 0;
    for (i, &first_i) in first.iter().enumerate() {
        crate::work::visit(1);
        let text = listing.text(i);
        let path = listing.path(i);
        let origin = origins.get(i);
        if origin.is_empty() {
            load_into(&mut loaded, text, &path); // reports the bad name
            continue;
        }
        if first_i != i {
            loaded.warnings.push(format!(
                "{}: warning: zone {text} is also loaded from {}; this file is ignored",
                path.display(),
                listing.path(first_i).display()
            ));
            continue;
        }
        let unchanged = previous.and_then(|previous| previous.unchanged(origin, &path));
        named += usize::from(unchanged.is_some());
        if unchanged == Some(true) {
            loaded.unchanged += 1;
            continue;
        }
        if !load_into(&mut loaded, text, &path) && unchanged.is_some() {
            loaded.kept.push(text.to_string());
        }
    }
    // Only when some zone loaded before is no longer named is each of them
    // looked for in the configuration.
    if let Some(previous) = previous.filter(|previous| previous.count() > named) {
        let configured = |origin: &[u8]| {
            sorted
                .binary_search_by(|&i| {
                    crate::work::visit(1);
                    origins.get(i).cmp(origin)
                })
                .is_ok()
        };
        loaded.removed = previous.not_configured(&configured);
    }
    Ok(loaded)
}

/// Loads the zone `origin` (lowercased wire form) of `sources` whatever its
/// files, and nothing else (`tern reload ZONE`); `served` says whether a
/// version of it serves now (kept if this one fails). An error if the
/// configuration does not name it.
pub fn load_one(sources: &Sources, origin: &[u8], served: bool) -> Result<Loaded, LoadError> {
    let Some((text, path)) = ZoneFiles::new(sources).find(origin)? else {
        return Err(LoadError::NotConfigured {
            origin: origin_text(origin),
        });
    };
    let mut loaded = Loaded::default();
    if !load_into(&mut loaded, &text, &path) && served {
        loaded.kept.push(text);
    }
    Ok(loaded)
}

/// Loads one zone, for `tern check ORIGIN FILE`.
pub fn load_one_for_check(origin: &str, path: &Path) -> Loaded {
    let mut loaded = Loaded::default();
    load_into(&mut loaded, origin, path);
    loaded
}

/// Parses a zone name given in the configuration or on the command line;
/// a missing final dot is implied.
pub fn parse_origin(origin: &str) -> Result<NameBuf, String> {
    let absolute = if origin.ends_with('.') {
        origin.to_string()
    } else {
        format!("{origin}.")
    };
    NameBuf::from_text(absolute.as_bytes(), None)
        .map_err(|err| format!("bad zone name {origin:?}: {err}"))
}

/// A wire-format origin as text (for messages).
pub fn origin_text(wire: &[u8]) -> String {
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
pub fn load_zone(
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
    let file = file_stamp(path);
    let mut includes = StampingInclude {
        stamps: Vec::new(),
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
    tern_zone::ttl::settle_ttls(&mut records); // each RRset's TTL as BIND reads the file (tern_zone::ttl)
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
    let stamp = Stamp {
        path: path.into(),
        file,
        includes: includes.stamps.into_boxed_slice(),
    };
    builder
        .finish()
        .map(|zone| (zone, stamp))
        .map_err(|err| vec![format!("{}: {err}", path.display())])
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
        assert_eq!(stamp.includes.len(), 1, "the include");
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
