//! Loading zones: zone files through tern-zone's scanner and semantic
//! checks, into tern-authority's immutable zones.
//!
//! The authority crate does not depend on the zone-file crate (STYLE.md
//! section 1.1): this module is the one place that converts parsed records
//! into a `ZoneBuilder`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use tern_authority::{Zone, ZoneBuilder};
use tern_dnssec::Change;
use tern_wire::name::{Name, NameBuf};
use tern_zone::check::Severity;
use tern_zone::{RecordList, Records, Sink};

use crate::kept::{KeptRecords, KeptWriter};

use crate::signing::{Policy, Signing};

mod changed;
mod file;
mod listing;
mod region;
mod sign;
#[cfg(test)]
mod tests;

use file::*;
use listing::*;
use sign::*;

pub use listing::ZoneFiles;
pub(crate) use sign::patch_signed;

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
    /// How many of the failed zones failed to be signed (logged here, not
    /// in `errors`: a zone that cannot be signed is not served, but does
    /// not stop the start).
    pub signing_failed: usize,
}

//----------- Stamp ----------------------------------------------------------

/// What a zone was loaded from: its file and the files it includes, each
/// with its size, modification time and identity (device and inode: a
/// file renamed over it differs even within the clock's granularity) taken
/// just before it was read. A reload rebuilds a zone only when one of them
/// differs (or is gone). The zone file's is kept inline: most zones
/// include nothing, and a stamp is kept for every zone. A signed zone's
/// also says when it must be signed again ([`Stamp::resign_at`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    path: Box<Path>,
    file: Option<FileStamp>,
    includes: Box<[(Box<Path>, Option<FileStamp>)]>,
    /// A signed zone's records, keys and when it must be signed again:
    /// one pointer, so that the many unsigned zones pay for no more.
    signed: Option<Arc<SignedVersion>>,
}

//----------- SignedVersion --------------------------------------------------

/// A signed zone's records as the signer made them, kept with the
/// version served for its next signing, which signs only what changed
/// ([`crate::signing::sign_again`]): on disk, not beside the served zone
/// ([`crate::kept`]); its keys as that signing left them and when it must
/// be signed again; and what changed from the version before, for the
/// owner's IXFR history (taken once).
pub struct SignedVersion {
    records: KeptRecords,
    resign_at: u64,
    key_event_first: bool,
    keys: Arc<crate::rollover::ZoneKeys>,
    change: Mutex<Option<(u32, Change)>>,
    signatures: usize,
    kept: usize,
    /// What the next reload starts from when only a few owners changed
    /// ([`crate::edited`]); `None` for a version not loaded from a file.
    edit_base: Option<EditBase>,
    /// What making this version cost.
    cost: SigningCost,
}

/// What a signing cost, counted: what "costs the change, not the zone"
/// is measured by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SigningCost {
    /// Records the signer read or made: the previous version's, the new
    /// records', the signed ones (of the owners edited only, for an edit
    /// of a few owners).
    pub visited: usize,
    /// RRSIGs made.
    pub signatures: usize,
    /// Octets written to the kept records.
    pub written: u64,
    /// Records of the file read by the zone checks and by the look for
    /// RRsets of several TTLs: the whole file's, or those of the owners
    /// a reload changed (`load::changed`).
    pub checked: usize,
    /// Records read from the zone file's text: the whole file's, or those
    /// of the part a reload changed, before and after (`load::region`).
    pub parsed: usize,
    /// Records of the file compared to find the names below a delegation
    /// made or removed, or below an empty non-terminal an opt-out chain
    /// may drop (`edited`, the widening of a window): none for most
    /// reloads, the file's records (one pass each) for those.
    pub scanned: usize,
}

/// What a signed version loaded from a zone file keeps for the next
/// reload to sign only what the file's edit changed ([`crate::edited`]).
struct EditBase {
    /// The file's records, TTLs settled, in file order (compact: about
    /// 32 octets a record, its owner and RDATA).
    unsigned: Records,
    /// The signed serial.
    serial: u32,
    /// The keys' metadata after the signing.
    key_state: crate::signing::KeyState,
    /// The first signature due for refresh, and the earliest expiry.
    next_refresh: u64,
    earliest_expiry: Option<u64>,
    /// The version's RRSIG records.
    rrsigs: usize,
    /// The file gave each RRset one TTL (the records are as written).
    uniform: bool,
    /// The copy of the text `unsigned` was read from (`region`).
    text: Option<region::TextCopy>,
}

impl SignedVersion {
    /// The most octets of the previous load's text (its kept copy) that
    /// the load of this version held in memory at once: `None` for a
    /// version that keeps no copy, 0 when it was not compared with the
    /// file (a file read whole after a comparison counts what it held).
    pub fn text_held(&self) -> Option<usize> {
        Some(self.edit_base.as_ref()?.text.as_ref()?.held)
    }

    /// The records of the file the load of this version copied into its
    /// list: all it read when it read the file whole; a reload that read
    /// only the change shares the previous load's others. `None` for a
    /// version that keeps no copy of its text.
    pub fn records_copied(&self) -> Option<usize> {
        Some(self.edit_base.as_ref()?.text.as_ref()?.copied)
    }

    /// The signed records, in the signer's order (canonical order of
    /// owners), read back from disk: for the next signing's time only.
    pub fn records(&self) -> std::io::Result<Records> {
        self.records.read()
    }

    /// How many signed records are kept.
    pub fn record_count(&self) -> usize {
        self.records.len()
    }

    /// The RRSIGs this signing made and kept from the previous version.
    pub fn signatures(&self) -> (usize, usize) {
        (self.signatures, self.kept)
    }

    /// What making this version cost.
    pub fn cost(&self) -> SigningCost {
        self.cost
    }

    /// The serial of the version this one was signed from and what
    /// changed since it, once: the owner records it in the zone's IXFR
    /// history instead of comparing the two versions again.
    pub fn take_change(&self) -> Option<(u32, Change)> {
        self.change
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
    }
}

impl std::fmt::Debug for SignedVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignedVersion")
            .field("records", &self.records.len())
            .field("signatures", &self.signatures)
            .field("kept", &self.kept)
            .field("edit_base", &self.edit_base.is_some())
            .finish_non_exhaustive()
    }
}

/// One signed version is equal to itself only.
impl PartialEq for SignedVersion {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for SignedVersion {}

/// One file's size, modification time, device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStamp(u64, SystemTime, u64, u64);

impl FileStamp {
    /// The stamp of the file at `path` as it is now (its target, if a
    /// symbolic link); `None` if it cannot be read.
    pub fn of(path: &Path) -> Option<FileStamp> {
        FileStamp::of_metadata(&std::fs::metadata(path).ok()?)
    }

    fn of_metadata(meta: &std::fs::Metadata) -> Option<FileStamp> {
        Some(FileStamp(
            meta.len(),
            meta.modified().ok()?,
            meta.dev(),
            meta.ino(),
        ))
    }
}

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
    /// The zones signed as they are loaded, and where their keys are;
    /// `None`: none is.
    pub signing: Option<Signing>,
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

impl Stamp {
    /// When the zone, if signed, must be signed again (Unix time): when its
    /// first signature is due for refresh
    /// ([`crate::signing::next_resign`]) or its keys' next rollover step,
    /// whichever comes first.
    pub fn resign_at(&self) -> Option<u64> {
        self.signed.as_ref().map(|signed| signed.resign_at)
    }

    /// The signed records of a signed zone, kept for its next signing.
    pub fn signed(&self) -> Option<&Arc<SignedVersion>> {
        self.signed.as_ref()
    }

    /// Whether [`Stamp::resign_at`] is a key rollover's next step rather
    /// than the signatures' refresh.
    pub fn key_event_first(&self) -> bool {
        self.signed
            .as_ref()
            .is_some_and(|signed| signed.key_event_first)
    }

    /// A signed zone's keys, as its signing left them.
    pub fn keys(&self) -> Option<&Arc<crate::rollover::ZoneKeys>> {
        self.signed.as_ref().map(|signed| &signed.keys)
    }

    /// Whether the zone is still `path`, whose file's stamp is now `file`,
    /// and none of its files changed. Bound: a `stat` per included file.
    pub fn unchanged(&self, path: &Path, file: Option<FileStamp>) -> bool {
        &*self.path == path
            && file == self.file
            && self
                .includes
                .iter()
                .all(|(file, seen)| FileStamp::of(file) == *seen)
    }
}

/// What a reload asks of the zones served now.
pub trait Previous {
    /// Whether a zone of this origin (lowercased wire form) was loaded
    /// from `path`, whose stamp is now `file`, and none of its files
    /// changed since; `None` if no zone of this origin was loaded from a
    /// file. `near` is where the previous call found its zone, and is
    /// set to where this one found it: a walk in name order passes it on,
    /// so that a zone is looked for first next to the one before.
    fn unchanged(
        &self,
        origin: &[u8],
        path: &Path,
        file: Option<FileStamp>,
        near: &mut u32,
    ) -> Option<bool>;

    /// The origins of the zones loaded from files that `configured` does
    /// not name.
    fn not_configured(&self, configured: &dyn Fn(&[u8]) -> bool) -> Vec<Origin>;

    /// How many zones were loaded from files.
    fn count(&self) -> usize;

    /// The serial served for the zone of this origin (lowercased wire
    /// form) loaded from a file, if one is: a signed zone's next version
    /// gets a higher one.
    fn serial(&self, origin: &[u8]) -> Option<u32>;

    /// The signed records of the zone of this origin served now, if it
    /// is a signed zone loaded from a file: its next version is signed
    /// from them, signing only what changed.
    fn signed(&self, _origin: &[u8]) -> Option<Arc<SignedVersion>> {
        None
    }

    /// The version served now of the zone of this origin, if it is a
    /// signed zone loaded from a file: its next version is patched from
    /// it ([`Zone::patch`]) with the owners the signing changed.
    fn served(&self, _origin: &[u8]) -> Option<Arc<Zone>> {
        None
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
    let (origins, first) = listing.origins();
    let mut loaded = Loaded::default();
    // The zones loaded before that this configuration still names.
    let mut named = 0;
    let mut path = PathBuf::new();
    let mut near = 0;
    for (i, &first_i) in first.iter().enumerate() {
        crate::work::visit(1);
        let text = listing.text(i);
        listing.path_into(i, &mut path);
        let origin = origins.get(i);
        if origin.is_empty() {
            load_into(&mut loaded, text, &path, None); // reports the bad name
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
        let unchanged = previous.and_then(|previous| {
            previous.unchanged(origin, &path, listing.stamp(i, &path), &mut near)
        });
        named += usize::from(unchanged.is_some());
        if unchanged == Some(true) {
            loaded.unchanged += 1;
            continue;
        }
        let signer = signer(sources, origin, previous);
        if !load_into(&mut loaded, text, &path, signer) && unchanged.is_some() {
            loaded.kept.push(text.to_string());
        }
    }
    // Only when some zone loaded before is no longer named is each of them
    // looked for in the configuration.
    if let Some(previous) = previous.filter(|previous| previous.count() > named) {
        let configured: hashbrown::HashSet<&[u8]> = (0..listing.len())
            .map(|i| origins.get(i))
            .filter(|origin| !origin.is_empty())
            .collect();
        let configured = |origin: &[u8]| {
            crate::work::visit(1);
            configured.contains(origin)
        };
        loaded.removed = previous.not_configured(&configured);
    }
    Ok(loaded)
}

/// Loads the zone `origin` (lowercased wire form) of `sources` whatever its
/// files, and nothing else (`tern reload ZONE`, and a signed zone's
/// re-signing); `previous` holds the version served now, if any (kept if
/// this one fails; a signed zone's new serial is above its serial). An
/// error if the configuration does not name it.
pub fn load_one(
    sources: &Sources,
    origin: &[u8],
    previous: Option<&dyn Previous>,
) -> Result<Loaded, LoadError> {
    let served = previous.is_some_and(|previous| previous.serial(origin).is_some());
    let Some((text, path)) = ZoneFiles::new(sources).find(origin)? else {
        return Err(LoadError::NotConfigured {
            origin: origin_text(origin),
        });
    };
    let mut loaded = Loaded::default();
    if !load_into(&mut loaded, &text, &path, signer(sources, origin, previous)) && served {
        loaded.kept.push(text);
    }
    Ok(loaded)
}

/// Loads one zone, for `tern check ORIGIN FILE`.
pub fn load_one_for_check(origin: &str, path: &Path) -> Loaded {
    let mut loaded = Loaded::default();
    load_into(&mut loaded, origin, path, None);
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

/// A wire-format origin as text (for messages); kept here for the
/// binary's callers.
pub use crate::origin_text;

/// What signs a zone as it is loaded: its policy, where its keys are,
/// the serial served now (the signed one is made higher) and its signed
/// records (only what changed since is signed).
#[derive(Clone)]
struct Signer<'s> {
    policy: &'s Arc<Policy>,
    state_directory: &'s Path,
    serial_above: Option<u32>,
    previous: Option<Arc<SignedVersion>>,
    /// The version served now, patched into the next one.
    served: Option<Arc<Zone>>,
    /// Threads that sign the zone when it is signed whole.
    threads: usize,
}

/// The signer of the zone `origin` (lowercased wire form), if its
/// configuration names a policy; the serial `previous` serves for it is
/// the one to go above.
fn signer<'s>(
    sources: &'s Sources,
    origin: &[u8],
    previous: Option<&dyn Previous>,
) -> Option<Signer<'s>> {
    let signing = sources.signing.as_ref()?;
    let policy = signing.shared_policy(origin)?;
    // Not served now (a start): the serial last signed, kept in the state
    // directory, so that a restart does not go back to the file's.
    let serial_above = previous
        .and_then(|previous| previous.serial(origin))
        .or_else(|| crate::signed_serial::load_signed_serial(&signing.state_directory, origin));
    Some(Signer {
        policy,
        state_directory: &signing.state_directory,
        serial_above,
        previous: previous.and_then(|previous| previous.signed(origin)),
        served: previous.and_then(|previous| previous.served(origin)),
        threads: signing.threads,
    })
}

/// `STATE/signed/ORIGIN.kept`: the signed records of a zone loaded from a
/// file as its last signing made them ([`KeptRecords::save`]).
fn saved_signed_path(state_directory: &Path, origin: Name<'_>) -> std::path::PathBuf {
    state_directory.join("signed").join(format!(
        "{}kept",
        crate::file_stem(tern_wire::name::LowerNameBuf::from_name(origin))
    ))
}

/// The signed records saved by the last signing of `origin` (a start
/// signs from them, keeping their signatures still valid); `None`, logged,
/// when there are none or they do not read (the zone is signed whole).
fn saved_signed(state_directory: &Path, origin: Name<'_>) -> Option<Records> {
    let path = saved_signed_path(state_directory, origin);
    let read = KeptRecords::open_saved(&path)
        .and_then(|saved| saved.map(|saved| saved.read()).transpose());
    match read {
        Ok(records) => records,
        Err(err) => {
            log::warn!(
                "zone {origin}: its saved signed records are not used ({}: {err}); it is \
                 signed whole",
                path.display()
            );
            None
        }
    }
}

/// Why a zone did not load.
enum Failure {
    /// Located errors of its files.
    Zone(Vec<String>),
    /// Signing it failed (a key file, the signer): the zone is not served
    /// unsigned.
    Signing(String),
}

/// Loads one zone into `loaded`, signed by `signer` if given; whether it
/// loaded. A signing failure is logged here, with the zone and the cause.
fn load_into(
    loaded: &mut Loaded,
    origin_text: &str,
    path: &Path,
    signer: Option<Signer<'_>>,
) -> bool {
    match load_zone_with(
        origin_text,
        path,
        &mut loaded.warnings,
        &mut tern_zone::FileInclude,
        signer,
    ) {
        Ok((zone, stamp)) => {
            loaded.zones.push((Arc::new(zone), stamp));
            true
        }
        Err(Failure::Zone(errors)) => {
            loaded.errors.extend(errors);
            loaded.failed += 1;
            false
        }
        Err(Failure::Signing(error)) => {
            log::error!("zone {origin_text}: not signed, this version is not served: {error}");
            loaded.failed += 1;
            loaded.signing_failed += 1;
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
            .push((path.clone().into_boxed_path(), FileStamp::of(&path)));
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
    load_zone_with(
        origin_text,
        path,
        warnings,
        &mut tern_zone::FileInclude,
        None,
    )
    .map_err(|failure| match failure {
        Failure::Zone(errors) => errors,
        Failure::Signing(error) => vec![format!("{}: {error}", path.display())],
    })
}
