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
}

impl SignedVersion {
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

/// The first eight bytes of `name` (zeros after a shorter one) as a
/// big-endian number: two names whose numbers differ are in the order of
/// their numbers.
fn name_prefix(name: &str) -> u64 {
    let mut prefix = [0; 8];
    let len = name.len().min(8);
    prefix[..len].copy_from_slice(&name.as_bytes()[..len]);
    u64::from_be_bytes(prefix)
}

/// The zone files a configuration names, in the order they are loaded:
/// every `NAME.zone` in the zone directory in name order, then the listed
/// ones. Reading the directory keeps only the names.
struct Listing<'c> {
    dir: Option<&'c Path>,
    /// The directory's zone names (file names without `.zone`), in name
    /// order (laid out in it: the passes over them read memory in order) ...
    stems: Texts,
    /// ... and their files' stamps, read as the directory is (a `stat`
    /// relative to it, cheaper than one by the whole path).
    stamps: Vec<Option<FileStamp>>,
    listed: &'c [(String, PathBuf)],
}

impl<'c> Listing<'c> {
    fn read(sources: &'c Sources) -> Result<Self, LoadError> {
        let mut stems = Texts::default();
        let mut stamps = Vec::new();
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
                // The entry's stamp, from a stat relative to the directory;
                // a symbolic link is followed (by its whole path).
                let meta = match entry.file_type() {
                    Ok(kind) if kind.is_symlink() => std::fs::metadata(entry.path()).ok(),
                    Ok(kind) if kind.is_file() => entry.metadata().ok(),
                    _ => None,
                };
                if let Some(meta) = meta.filter(std::fs::Metadata::is_file) {
                    stems.push(stem);
                    stamps.push(FileStamp::of_metadata(&meta));
                }
                crate::work::visit(1);
            }
        }
        // Sorted by their first eight bytes, read as a number (in the
        // order of the names: a file name holds no NUL), then by the
        // whole name: most comparisons read no name.
        let mut order: Vec<(u64, usize)> = (0..stems.len())
            .map(|i| (name_prefix(stems.get(i)), i))
            .collect();
        order.sort_unstable_by(|&(a_prefix, a), &(b_prefix, b)| {
            crate::work::visit(1);
            a_prefix
                .cmp(&b_prefix)
                .then_with(|| stems.get(a).cmp(stems.get(b)))
        });
        let mut sorted = Texts::default();
        for &(_, i) in &order {
            sorted.push(stems.get(i));
        }
        Ok(Listing {
            dir: sources.dir.as_deref(),
            stems: sorted,
            stamps: order.iter().map(|&(_, i)| stamps[i]).collect(),
            listed: &sources.listed,
        })
    }

    fn len(&self) -> usize {
        self.stems.len() + self.listed.len()
    }

    /// The origin as written (the file name, or the list's) of entry `i`.
    fn text(&self, i: usize) -> &str {
        if i < self.stems.len() {
            self.stems.get(i)
        } else {
            &self.listed[i - self.stems.len()].0
        }
    }

    /// The file of entry `i`.
    fn path(&self, i: usize) -> PathBuf {
        let mut path = PathBuf::new();
        self.path_into(i, &mut path);
        path
    }

    /// The file of entry `i`, written into `path` (whose allocation a loop
    /// over the entries reuses).
    fn path_into(&self, i: usize, path: &mut PathBuf) {
        path.clear();
        match self.dir.filter(|_| i < self.stems.len()) {
            Some(dir) => {
                path.push(dir);
                path.push(self.text(i));
                path.as_mut_os_string().push(ZONE_SUFFIX);
            }
            None => path.push(&self.listed[i - self.stems.len()].1),
        }
    }

    /// The stamp of entry `i`'s file (`path`) now: read with the directory
    /// for the directory's zones, by its path for the listed ones.
    fn stamp(&self, i: usize, path: &Path) -> Option<FileStamp> {
        if i < self.stems.len() {
            self.stamps.get(i).copied().flatten()
        } else {
            FileStamp::of(path)
        }
    }

    /// Each entry's lowercased wire origin (empty where the name does not
    /// parse), and the first entry of each origin: `first[i]` is `i` for
    /// an entry that is loaded, and the earlier entry that names the same
    /// origin for one that is not. Bound: a parse and a hash look-up per
    /// entry; the origins are kept in one buffer.
    fn origins(&self) -> (Strings, Vec<usize>) {
        let mut origins = Strings::default();
        for i in 0..self.len() {
            crate::work::visit(1);
            match parse_origin(self.text(i)) {
                Ok(name) => origins.push(&name.as_name().as_bytes().to_ascii_lowercase()),
                Err(_) => origins.push(&[]),
            }
        }
        let mut first: Vec<usize> = (0..self.len()).collect();
        {
            let mut seen: hashbrown::HashMap<&[u8], usize> =
                hashbrown::HashMap::with_capacity(self.len());
            for (i, first) in first.iter_mut().enumerate() {
                let origin = origins.get(i);
                if !origin.is_empty() {
                    *first = *seen.entry(origin).or_insert(i);
                }
            }
        }
        (origins, first)
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

/// A start's signing from the zone's saved signed records, each record
/// streamed to `both`: `None`, logged, when the signer cannot sign from
/// them (`both` is then emptied for a whole signing).
fn sign_saved(
    name: Name<'_>,
    saved: &Records,
    records: &Records,
    signer: &Signer<'_>,
    now: u64,
    both: &mut Both<'_>,
) -> Result<Option<crate::signing::Signed<tern_dnssec::ResignStats>>, Failure> {
    let (dir, serial) = (signer.state_directory, signer.serial_above);
    match crate::signing::sign_again_into(
        name,
        saved,
        records,
        signer.policy,
        dir,
        now,
        serial,
        both,
    ) {
        Ok(signed) => Ok(Some(signed)),
        Err(err) => {
            log::warn!(
                "zone {name}: cannot sign from its saved signed records ({err}); it is \
                 signed whole"
            );
            both.kept = KeptWriter::create(dir).map_err(|err| {
                Failure::Signing(format!(
                    "cannot keep the signed records in {}: {err}",
                    dir.display()
                ))
            })?;
            (both.next_refresh, both.earliest_expiry, both.serial) = (None, None, None);
            Ok(None)
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

/// Signs a zone's `records` as `signer` says: from its previous signed
/// version if it has one (only what changed, and what the rollover steps
/// due change), else whole on `signer.threads` threads, streamed as it is
/// signed; each signed record handed to `build` and written to disk for
/// the next signing ([`crate::kept`]), never held whole in memory here
/// (signed whole, `build` is handed them from disk once the signer's copy
/// of the zone is freed: the two never meet at the peak).
/// The version made, with its keys and when it must be signed again (its
/// first signature due for refresh, or its keys' next step if earlier).
///
/// When the zone has a served version and the signing knows what changed,
/// the next version is that one patched ([`patch_signed`]) into `patched`,
/// and `build` is handed nothing.
fn sign_loaded(
    origin: NameBuf,
    records: &Records,
    signer: &Signer<'_>,
    build: &mut dyn Sink,
    patched: &mut Option<Zone>,
) -> Result<SignedVersion, Failure> {
    let now = crate::unix_time();
    let started = std::time::Instant::now();
    let name = origin.as_name();
    let kept = std::fs::create_dir_all(signer.state_directory)
        .and_then(|()| KeptWriter::create(signer.state_directory))
        .map_err(|err| {
            Failure::Signing(format!(
                "cannot keep the signed records in {}: {err}",
                signer.state_directory.display()
            ))
        })?;
    let mut both = Both {
        kept,
        build: Some(build),
        refresh: crate::signing::refresh_of(signer.policy, now),
        now,
        next_refresh: None,
        earliest_expiry: None,
        serial: None,
    };
    // The RRSIGs made and kept, what the keys call for next and what
    // changed.
    let mut phases = Phases::default();
    let mut visited = records.len();
    // The previous signed version: the one served, else (a start) the
    // copy saved by the last whole signing before it, whose signatures
    // still valid are kept (crate::kept, "saved copies").
    let previous_records = match &signer.previous {
        // Read back for this signing only, and dropped with it.
        Some(previous) => Some(previous.records().map_err(|err| {
            Failure::Signing(format!("reading the previous signed records: {err}"))
        })?),
        None => saved_signed(signer.state_directory, name),
    };
    phases.lap("previous records read");
    let saved = signer.previous.is_none();
    let mut build_from_kept = None;
    let mut streamed = None;
    let resigned = match previous_records {
        // Streamed to the kept records, built from them once the saved
        // ones are freed, as a whole signing is (issue 24).
        Some(previous_records) if saved => {
            build_from_kept = both.build.take();
            visited += previous_records.len();
            streamed = sign_saved(name, &previous_records, records, signer, now, &mut both)?;
            None
        }
        Some(previous_records) => {
            visited += previous_records.len();
            // A saved copy's serial is not the one served now: no change
            // from it goes into the IXFR history.
            let from = previous_serial(name, &previous_records).filter(|_| !saved);
            match crate::signing::sign_again(
                name,
                &previous_records,
                records,
                signer.policy,
                signer.state_directory,
                now,
                signer.serial_above,
            ) {
                Ok(resigned) => Some((from, resigned)),
                // A saved copy the signer cannot sign from: signed whole.
                Err(err) if saved => {
                    log::warn!(
                        "zone {name}: cannot sign from its saved signed records ({err}); it \
                         is signed whole"
                    );
                    None
                }
                Err(err) => return Err(Failure::Signing(err)),
            }
        }
        None => None,
    };
    phases.lap("signed again");
    let (signatures, kept, next_key_event, awaiting_ds, change) = match (resigned, streamed) {
        (Some((from, resigned)), _) => {
            let zone = resigned.zone;
            // The version served now, patched with the owners the signing
            // changed; else (no served version, no difference, a change a
            // patch does not make) every record goes to the builder.
            // Only from the version these signed records are (an update
            // may serve another).
            *patched = signer
                .served
                .as_deref()
                .filter(|served| from == Some(served.serial()))
                .zip(zone.difference.as_ref())
                .and_then(|(served, change)| patch_signed(name, served, &zone.records, change));
            phases.lap("served version patched");
            if patched.is_some() {
                both.build = None;
            }
            Sink::reserve(&mut both, zone.records.len());
            visited += zone.records.len();
            for index in 0..zone.records.len() {
                Sink::record(&mut both, zone.records.record(index))
                    .map_err(|err| Failure::Signing(err.to_string()))?;
            }
            phases.lap("records kept (and built)");
            (
                zone.signatures,
                zone.kept,
                resigned.next_key_event,
                resigned.awaiting_ds,
                from.zip(zone.difference),
            )
        }
        (None, Some(signed)) => {
            visited += signed.zone.records;
            let zone = signed.zone;
            let (key_event, awaiting_ds) = (signed.next_key_event, signed.awaiting_ds);
            (zone.signatures, zone.kept, key_event, awaiting_ds, None)
        }
        (None, None) => {
            // Signed whole: to the kept records only, and built from them
            // once the signer has freed its copy of the zone.
            build_from_kept = build_from_kept.or(both.build.take());
            let signed = crate::signing::sign_into(
                name,
                records,
                signer.policy,
                signer.state_directory,
                now,
                signer.serial_above,
                signer.threads,
                &mut both,
            )
            .map_err(Failure::Signing)?;
            visited += signed.zone.signatures;
            (
                signed.zone.signatures,
                0,
                signed.next_key_event,
                signed.awaiting_ds,
                None,
            )
        }
    };
    let next = both
        .next_refresh
        .unwrap_or_else(|| crate::signing::resign_due(signer.policy, now));
    let earliest_expiry = both.earliest_expiry;
    let both_serial = both.serial;
    let kept_records = both.kept.finish().map_err(|err| {
        Failure::Signing(format!(
            "cannot keep the signed records in {}: {err}",
            signer.state_directory.display()
        ))
    })?;
    phases.lap("kept file finished");
    if let Some(build) = build_from_kept {
        kept_records
            .read_into(build)
            .map_err(|err| Failure::Signing(format!("reading back the signed records: {err}")))?;
        phases.lap("built from the kept records");
    }
    // Saved for the next start, which signs from it rather than whole.
    let saved_path = saved_signed_path(signer.state_directory, name);
    if let Err(err) = kept_records.save(&saved_path) {
        log::warn!(
            "zone {name}: cannot save the signed records in {}: {err}; the next start signs \
             from an older copy or whole",
            saved_path.display()
        );
    }
    phases.lap("signed records saved");
    log::info!(
        "zone {name}: signed, {signatures} signatures made, {kept} kept, in {} ms; \
         {} records kept on disk for the next signing ({} octets); {phases}",
        started.elapsed().as_millis(),
        kept_records.len(),
        kept_records.size()
    );
    crate::sign_status::signed(
        tern_wire::name::LowerNameBuf::from_name(name).as_bytes(),
        signer.policy,
        crate::sign_status::LastSigning {
            at: now,
            duration: started.elapsed().as_secs_f64(),
            signatures: signatures as u64,
        },
        earliest_expiry,
        next_key_event,
    );
    let keys = crate::rollover::ZoneKeys {
        origin,
        dir: crate::keys::key_dir(signer.state_directory, name),
        policy: Arc::clone(signer.policy),
        next_event: next_key_event,
        awaiting_ds,
    };
    // What the next reload needs to sign only the owners it changes; the
    // file's records are added by the caller.
    let edit_base =
        crate::signing::key_state(name, signer.state_directory).map(|key_state| EditBase {
            unsigned: Records::new(),
            serial: both_serial.unwrap_or(0),
            key_state,
            next_refresh: next,
            earliest_expiry,
            rrsigs: signatures + kept,
            uniform: false,
        });
    let written = kept_records.written();
    Ok(SignedVersion {
        records: kept_records,
        resign_at: next_key_event.map_or(next, |at| at.min(next)),
        key_event_first: next_key_event.is_some_and(|at| at < next),
        keys: Arc::new(keys),
        change: Mutex::new(change),
        signatures,
        kept,
        edit_base,
        cost: SigningCost {
            visited,
            signatures,
            written,
        },
    })
}

/// The zone `origin`'s next signed version when only a few owners of
/// `records` changed since `signer`'s previous version ([`crate::edited`]):
/// those signed, the served version patched, the kept records patched.
/// `Ok(None)`: the zone is signed again from its previous version.
///
/// The records of the edited owners (and the apex) are checked here, as
/// the whole file is otherwise (errors as [`Failure::Zone`], warnings into
/// `warnings`): every error `check_zone` finds is at one owner or the
/// apex, but for records below a DNAME (no DNAME changes here, and the
/// edited owners were in the previous version, below none); warnings that
/// relate names (glue, the NSEC chain of a signed file) are not repeated.
fn sign_edited(
    origin: &NameBuf,
    records: &Records,
    signer: &Signer<'_>,
    warnings: &mut Vec<String>,
    file_of: &dyn Fn(tern_zone::Location) -> String,
    phases: &mut Phases,
) -> Result<Option<(Zone, SignedVersion)>, Failure> {
    let (Some(previous), Some(served)) = (&signer.previous, &signer.served) else {
        return Ok(None);
    };
    let Some(base) = &previous.edit_base else {
        return Ok(None);
    };
    let now = crate::unix_time();
    let started = std::time::Instant::now();
    let name = origin.as_name();
    let from = crate::edited::Previous {
        kept: &previous.records,
        serial: base.serial,
        resign_at: previous.resign_at,
        key_state: &base.key_state,
        policy: &previous.keys.policy,
        rrsigs: base.rrsigs,
        uniform: base.uniform,
    };
    if !crate::edited::usable(name, &from, served, signer.policy, now) {
        return Ok(None);
    }
    let Some(edits) = crate::edited::find_edits(name, &base.unsigned, records) else {
        return Ok(None);
    };
    let mut errors = Vec::new();
    for diagnostic in tern_zone::check::check_zone(name, &edits.list()) {
        let line = diagnostic.render(&file_of(diagnostic.location));
        match diagnostic.severity {
            Severity::Error => errors.push(line),
            Severity::Warning => warnings.push(line),
        }
    }
    if !errors.is_empty() {
        return Err(Failure::Zone(errors));
    }
    phases.lap("edited owners found and checked");
    let Some(edit) = crate::edited::sign_edits(
        name,
        &from,
        served,
        &edits,
        records,
        signer.policy,
        signer.state_directory,
        now,
        signer.serial_above,
    )
    .map_err(Failure::Signing)?
    else {
        return Ok(None);
    };
    let signatures = edit.signed.zone.signatures;
    let kept = edit.rrsigs.saturating_sub(signatures);
    let next = edit
        .signed
        .zone
        .next_refresh
        .map_or(base.next_refresh, |at| at.min(base.next_refresh));
    let next_key_event = edit.signed.next_key_event;
    log::info!(
        "zone {name}: signed, {signatures} signatures made, {kept} kept, in {} ms; \
         {} owners edited, {} records kept on disk for the next signing ({} octets, \
         {} written, {} patches)",
        started.elapsed().as_millis(),
        edit.owners,
        edit.kept.len(),
        edit.kept.size(),
        edit.kept.written(),
        edit.kept.patch_count()
    );
    crate::sign_status::signed(
        tern_wire::name::LowerNameBuf::from_name(name).as_bytes(),
        signer.policy,
        crate::sign_status::LastSigning {
            at: now,
            duration: started.elapsed().as_secs_f64(),
            signatures: signatures as u64,
        },
        base.earliest_expiry,
        next_key_event,
    );
    let keys = crate::rollover::ZoneKeys {
        origin: *origin,
        dir: crate::keys::key_dir(signer.state_directory, name),
        policy: Arc::clone(signer.policy),
        next_event: next_key_event,
        awaiting_ds: edit.signed.awaiting_ds,
    };
    let serial = edit.zone.serial();
    let cost = SigningCost {
        visited: edit.signed.zone.visited,
        signatures,
        written: edit.kept.written(),
    };
    let version = SignedVersion {
        cost,
        records: edit.kept,
        resign_at: next_key_event.map_or(next, |at| at.min(next)),
        key_event_first: next_key_event.is_some_and(|at| at < next),
        keys: Arc::new(keys),
        change: Mutex::new(Some((base.serial, edit.signed.zone.difference))),
        signatures,
        kept,
        edit_base: Some(EditBase {
            unsigned: Records::new(),
            serial,
            key_state: base.key_state.clone(),
            next_refresh: next,
            earliest_expiry: base.earliest_expiry,
            rrsigs: edit.rrsigs,
            uniform: true,
        }),
    };
    Ok(Some((edit.zone, version)))
}

/// How long each step of a load took, for its log line: the steps named
/// in order, each with the milliseconds since the one before and the
/// loading thread's CPU time meanwhile (what compares on a busy machine).
struct Phases {
    last: std::time::Instant,
    last_cpu: Option<u64>,
    steps: Vec<(&'static str, u128, Option<u64>)>,
}

impl Default for Phases {
    fn default() -> Self {
        Phases {
            last: std::time::Instant::now(),
            last_cpu: thread_cpu_ns(),
            steps: Vec::new(),
        }
    }
}

/// The calling thread's CPU time in nanoseconds (the first field of
/// Linux's `/proc/thread-self/schedstat`), if it reads.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

impl Phases {
    /// The step `what` ends now.
    fn lap(&mut self, what: &'static str) {
        let now = std::time::Instant::now();
        let cpu = thread_cpu_ns();
        let used = cpu
            .zip(self.last_cpu)
            .map(|(now, then)| now.saturating_sub(then));
        self.steps
            .push((what, now.duration_since(self.last).as_millis(), used));
        self.last = now;
        self.last_cpu = cpu;
    }
}

impl std::fmt::Display for Phases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (at, (what, ms, cpu)) in self.steps.iter().enumerate() {
            let comma = if at == 0 { "" } else { ", " };
            write!(f, "{comma}{what} {ms} ms")?;
            if let Some(cpu) = cpu {
                write!(f, " ({} ms CPU)", cpu / 1_000_000)?;
            }
        }
        Ok(())
    }
}

/// The signed records, each written for the next signing and handed to
/// the zone's builder; the first signature due for refresh and the
/// earliest expiry noted on the way (what the kept records are no longer
/// in memory to be asked afterwards).
struct Both<'a> {
    kept: KeptWriter,
    /// `None` when the version is patched rather than built.
    build: Option<&'a mut dyn Sink>,
    refresh: tern_dnssec::Refresh,
    now: u64,
    next_refresh: Option<u64>,
    earliest_expiry: Option<u64>,
    /// The SOA's serial (only the apex has an SOA in a zone that signs).
    serial: Option<u32>,
}

impl Sink for Both<'_> {
    fn record(&mut self, record: tern_zone::RecordRef<'_>) -> Result<(), &'static str> {
        if record.rtype == tern_wire::types::RType::SOA && self.serial.is_none() {
            let at = record.rdata.len().saturating_sub(20);
            self.serial = record
                .rdata
                .get(at..at + 4)
                .map(|field| u32::from_be_bytes([field[0], field[1], field[2], field[3]]));
        }
        if record.rtype == tern_wire::types::RType::RRSIG {
            let one = One(record);
            let earliest = |a: Option<u64>, b: Option<u64>| match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            self.next_refresh = earliest(
                self.next_refresh,
                tern_dnssec::next_refresh(&one, &self.refresh),
            );
            self.earliest_expiry = earliest(
                self.earliest_expiry,
                crate::sign_status::earliest_expiry(&one, self.now),
            );
        }
        Sink::record(&mut self.kept, record)?;
        match &mut self.build {
            Some(build) => build.record(record),
            None => Ok(()),
        }
    }
}

/// One record as a list, for the functions that read a list.
struct One<'a>(tern_zone::RecordRef<'a>);

impl RecordList for One<'_> {
    fn len(&self) -> usize {
        1
    }

    fn record(&self, _index: usize) -> tern_zone::RecordRef<'_> {
        self.0
    }
}

/// The version after `served` of the zone `origin` whose signed records
/// are now `records` (canonical order of owners), `change` from it:
/// `served` patched with every record of each owner `change` names
/// ([`Zone::patch`]), in time proportional to the change. `None` when a
/// patch is refused (NSEC3, a delegation moving, too much garbage) or the
/// records do not make a zone: the caller builds the version whole (and
/// reports the builder's errors). In a debug build the patched version is
/// checked against a whole build of the same records.
pub(crate) fn patch_signed(
    origin: tern_wire::name::Name<'_>,
    served: &Zone,
    records: &[tern_zone::Record],
    change: &Change,
) -> Option<Zone> {
    let started = std::time::Instant::now();
    let mut owners: Vec<&tern_zone::Record> = change.deleted.iter().chain(&change.added).collect();
    owners.sort_unstable_by(|a, b| a.owner.as_name().canonical_cmp(b.owner.as_name()));
    owners.dedup_by(|a, b| a.owner.as_name().eq_ignore_case(b.owner.as_name()));
    let mut changes = tern_authority::ZoneChanges::new();
    for owner in owners {
        let owner = owner.owner.as_name();
        let start = records.partition_point(|record| {
            record.owner.as_name().canonical_cmp(owner) == std::cmp::Ordering::Less
        });
        let count = records[start..]
            .iter()
            .take_while(|record| record.owner.as_name().eq_ignore_case(owner))
            .count();
        changes.set(
            owner,
            records[start..start + count]
                .iter()
                .map(|record| (record.rtype, record.ttl, &record.rdata[..])),
        );
    }
    let zone = match served.patch(&changes) {
        Ok(patched) if patched.zone.garbage_bytes() <= patched.zone.table_bytes() / 2 => {
            patched.zone
        }
        Ok(_) => {
            log::debug!("zone {origin}: built whole, its patches' garbage past half");
            return None;
        }
        Err(err) => {
            log::debug!("zone {origin}: not patched ({err}), built whole");
            return None;
        }
    };
    log::debug!(
        "zone {origin}: serial {} patched from {} ({} owners) in {:?}",
        zone.serial(),
        served.serial(),
        changes.len(),
        started.elapsed()
    );
    #[cfg(debug_assertions)]
    {
        let mut builder = ZoneBuilder::new(origin);
        for record in records {
            builder
                .insert(
                    record.owner.as_name(),
                    record.rtype,
                    record.class,
                    record.ttl,
                    &record.rdata,
                )
                .expect("the patched records build");
        }
        let whole = builder.finish().expect("the patched records build");
        assert!(
            same_records(&zone, &whole),
            "zone {origin}: the patched version differs from the whole build"
        );
    }
    Some(zone)
}

/// Whether `a` and `b` hold the same records (owner, type, TTL, RDATA),
/// walked with [`Zone::next_record`] (whose order follows node ids, which
/// a patch and a build give differently) and sorted.
#[cfg(any(test, debug_assertions))]
fn same_records(a: &Zone, b: &Zone) -> bool {
    let all = |zone: &Zone| {
        let mut cursor = tern_authority::RecordCursor::default();
        let mut all = Vec::with_capacity(zone.record_count());
        while let Some(record) = zone.next_record(&mut cursor) {
            all.push((
                record.owner.as_bytes().to_vec(),
                record.rtype.0,
                record.ttl,
                record.rdata.to_vec(),
            ));
        }
        all.sort_unstable();
        all
    };
    a.serial() == b.serial() && a.record_count() == b.record_count() && all(a) == all(b)
}

/// The serial of the apex SOA among signed `records` (first in canonical
/// order).
fn previous_serial(origin: tern_wire::name::Name<'_>, records: &Records) -> Option<u32> {
    let rdata = records
        .iter()
        .take_while(|record| record.owner.eq_ignore_case(origin))
        .find(|record| record.rtype == tern_wire::types::RType::SOA)?
        .rdata;
    let at = rdata.len().checked_sub(20)?;
    Some(u32::from_be_bytes(rdata.get(at..at + 4)?.try_into().ok()?))
}

/// The builder of a zone as a sink of records: a record it refuses is an
/// error at the record's location (the scan goes on, the zone fails).
struct Build<'b, F> {
    builder: &'b mut ZoneBuilder,
    errors: &'b mut Vec<String>,
    file_of: &'b F,
}

impl<F: Fn(tern_zone::Location) -> String> Build<'_, F> {
    fn insert(&mut self, record: tern_zone::RecordRef<'_>) {
        if let Err(err) = self.builder.insert(
            record.owner,
            record.rtype,
            record.class,
            record.ttl,
            record.rdata,
        ) {
            let location = record.location;
            self.errors.push(format!(
                "{}:{}:{}: error: {err}",
                (self.file_of)(location),
                location.line,
                location.col
            ));
        }
    }
}

impl<F: Fn(tern_zone::Location) -> String> tern_zone::Sink for Build<'_, F> {
    fn record(&mut self, record: tern_zone::RecordRef<'_>) -> Result<(), &'static str> {
        self.insert(record);
        Ok(())
    }
}

/// [`load_zone_from`], with the `$INCLUDE`d files read by `read`, and
/// the records signed by `signer` (if given) before the zone is built.
fn load_zone_with(
    origin_text: &str,
    path: &Path,
    warnings: &mut Vec<String>,
    read: &mut dyn tern_zone::Include,
    signer: Option<Signer<'_>>,
) -> Result<(Zone, Stamp), Failure> {
    let origin = parse_origin(origin_text)
        .map_err(|err| Failure::Zone(vec![format!("{}: {err}", path.display())]))?;
    let file = FileStamp::of(path);
    let mut includes = StampingInclude {
        stamps: Vec::new(),
        read,
    };
    let mut phases = Phases::default();
    let data = std::fs::read(path).map_err(|err| {
        Failure::Zone(vec![format!(
            "{}: cannot read zone file: {err}",
            path.display()
        )])
    })?;
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
        Failure::Zone(
            errors
                .errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
        )
    })?;
    // The text is in `records` now: freed before the zone is signed and
    // built.
    drop(data);
    phases.lap("file read and parsed");
    let mut errors = Vec::new();
    let file_of = |location: tern_zone::Location| {
        let file = files
            .get(location.file as usize)
            .map_or(path, PathBuf::as_path);
        file.display().to_string()
    };
    // A signed zone of which a few owners changed: those checked and
    // signed, the served version patched.
    if let Some(signer) = &signer {
        let edited = sign_edited(&origin, &records, signer, warnings, &file_of, &mut phases)
            .inspect_err(|failure| {
                if let Failure::Signing(cause) = failure {
                    let wire = tern_wire::name::LowerNameBuf::from_name(origin.as_name());
                    crate::sign_status::failed(
                        wire.as_bytes(),
                        signer.policy,
                        cause,
                        crate::unix_time(),
                    );
                }
            })?;
        if let Some((zone, mut version)) = edited {
            phases.lap("owners signed, served version and kept records patched");
            if let Some(base) = &mut version.edit_base {
                base.unsigned = records;
                base.uniform = true;
            }
            let stamp = Stamp {
                path: path.into(),
                file,
                includes: includes.stamps.into_boxed_slice(),
                signed: Some(Arc::new(version)),
            };
            log::info!("zone {origin_text}: loaded: {phases}");
            return Ok((zone, stamp));
        }
        phases.lap("not an edit of a few owners");
    }
    for diagnostic in tern_zone::check::check_zone(origin.as_name(), &records) {
        let line = diagnostic.render(&file_of(diagnostic.location));
        match diagnostic.severity {
            Severity::Error => errors.push(line),
            Severity::Warning => warnings.push(line),
        }
    }
    if !errors.is_empty() {
        return Err(Failure::Zone(errors));
    }
    phases.lap("checked");
    // Each RRset's TTL as BIND reads the file (tern_zone::ttl); a file
    // that gives each RRset one TTL is left as it is.
    let uniform = tern_zone::ttl::RrsetTtls::of(&records).changes().is_empty();
    if !uniform {
        tern_zone::ttl::settle_ttls(&mut records);
    }
    phases.lap("TTLs settled");
    let mut builder = ZoneBuilder::new(origin.as_name());
    builder.reserve(records.len(), records.rdata_len());
    phases.lap("builder reserved");
    let mut signed = None;
    let mut patched = None;
    let mut build = Build {
        builder: &mut builder,
        errors: &mut errors,
        file_of: &file_of,
    };
    match signer {
        // A zone with a policy is built from its signed records only,
        // each handed to the builder as it is signed (signed whole, on
        // the signing threads, as each batch is done): a signing failure
        // leaves nothing to serve.
        Some(signer) => {
            // The signer hands its records over owner by owner: each
            // owner's RRsets go into the zone's tables as they come.
            build.builder.stream_owners();
            // A failure is counted and kept for `tern zone-status`.
            let wire = tern_wire::name::LowerNameBuf::from_name(origin.as_name());
            let version = sign_loaded(origin, &records, &signer, &mut build, &mut patched)
                .inspect_err(|failure| {
                    if let Failure::Signing(cause) = failure {
                        let now = crate::unix_time();
                        crate::sign_status::failed(wire.as_bytes(), signer.policy, cause, now);
                    }
                })?;
            phases.lap("signed");
            signed = Some(version);
        }
        None => {
            for record in records.iter() {
                build.insert(record);
            }
        }
    }
    let signed = match signed {
        // The file's records are kept for the next reload to compare.
        Some(mut version) => {
            if let Some(base) = &mut version.edit_base {
                base.unsigned = records;
                base.uniform = uniform;
            } else {
                drop(records);
            }
            Some(Arc::new(version))
        }
        None => {
            drop(records);
            None
        }
    };
    phases.lap("records freed");
    if !errors.is_empty() {
        return Err(Failure::Zone(errors));
    }
    let stamp = Stamp {
        path: path.into(),
        file,
        includes: includes.stamps.into_boxed_slice(),
        signed,
    };
    let signed_zone = stamp.signed.is_some();
    let zone = match patched {
        Some(zone) => zone,
        None => builder
            .finish()
            .map_err(|err| Failure::Zone(vec![format!("{}: {err}", path.display())]))?,
    };
    phases.lap("built or patched");
    if signed_zone {
        log::info!("zone {origin_text}: loaded: {phases}");
    }
    Ok((zone, stamp))
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use tern_wire::name::LowerNameBuf;

    use super::*;

    /// A zone served at this serial, loaded from a file.
    struct Served(u32);

    /// A signed zone served at this serial, with its signed records.
    struct SignedServed(u32, Arc<SignedVersion>);

    impl Previous for SignedServed {
        fn unchanged(&self, _: &[u8], _: &Path, _: Option<FileStamp>, _: &mut u32) -> Option<bool> {
            Some(false)
        }

        fn not_configured(&self, _: &dyn Fn(&[u8]) -> bool) -> Vec<Origin> {
            Vec::new()
        }

        fn count(&self) -> usize {
            1
        }

        fn serial(&self, _: &[u8]) -> Option<u32> {
            Some(self.0)
        }

        fn signed(&self, _: &[u8]) -> Option<Arc<SignedVersion>> {
            Some(Arc::clone(&self.1))
        }
    }

    /// One record changed in a signed zone of 10,000 names and in one of
    /// 100,000: the reload signs only the changed RRset and the SOA, reads
    /// and writes as much at both sizes (records visited, signatures
    /// made, octets written to the kept records), and serves the served
    /// version patched, equal to a whole build of its kept records (the
    /// kept list with its patches read back). A second edit patches again.
    #[test]
    fn a_signed_reload_costs_the_change_not_the_zone() {
        let mut costs = Vec::new();
        for names in [10_000, 100_000] {
            let dir = std::env::temp_dir()
                .join(format!("tern-zones-cost-{names}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let zone_file = dir.join("example.zone");
            let text = |address: &str, mx: u16| {
                let mut text = String::from(
                    "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
                     ns A 192.0.2.1\n",
                );
                for i in 0..names {
                    if i == 7 {
                        text.push_str(&format!("h7 A {address}\n"));
                    } else {
                        text.push_str(&format!(
                            "h{i} A 10.{}.{}.{}\n",
                            i >> 16,
                            (i >> 8) & 255,
                            i & 255
                        ));
                    }
                }
                text.push_str(&format!("www MX {mx} mail\n"));
                text
            };
            std::fs::write(&zone_file, text("192.0.2.2", 10)).unwrap();
            let (origin, sources) = signed_example(&dir, &zone_file, 2);
            let first = load_all(&sources, None).unwrap();
            let (zone, stamp) = &first.zones[0];
            let mut previous =
                SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
            for (round, (address, mx)) in [("192.0.2.20", 10), ("192.0.2.20", 20)]
                .into_iter()
                .enumerate()
            {
                std::fs::write(&zone_file, text(address, mx)).unwrap();
                let again = load_one(&sources, &origin, Some(&previous)).unwrap();
                let (patched, stamp) = &again.zones[0];
                let signed = stamp.signed().unwrap();
                assert_eq!(patched.serial(), 2 + round as u32);
                assert!(patched.garbage_bytes() > 0, "patched, not built whole");
                let records = signed.records().unwrap();
                let name = tern_wire::name::Name::from_wire(&origin).unwrap();
                let mut builder = ZoneBuilder::new(name);
                for record in records.iter() {
                    builder
                        .insert(
                            record.owner,
                            record.rtype,
                            record.class,
                            record.ttl,
                            record.rdata,
                        )
                        .unwrap();
                }
                assert!(same_records(patched, &builder.finish().unwrap()));
                assert_eq!(
                    signed.signatures().0,
                    2,
                    "the changed RRset's and the SOA's"
                );
                costs.push((round, signed.cost()));
                previous = SignedServedZone(Arc::clone(patched), Arc::clone(signed));
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
        assert_eq!(
            costs[0], costs[2],
            "the first edit costs as much at both sizes"
        );
        assert_eq!(costs[1], costs[3], "the second edit too");
    }

    /// A reload that signed only the owners it changed (the kept records
    /// patched) saves no copy; a start after it signs from the older copy
    /// the whole signing saved, and serves the edit signed, making only
    /// the changed owner's and the SOA's signatures.
    #[test]
    fn a_start_after_a_patched_reload_signs_from_the_older_copy() {
        let (dir, zone_file) = small_example("tern-load-patched");
        let (origin, sources) = signed_example(&dir, &zone_file, 1);
        let saved = dir.join("state/signed/example.kept");
        let first = load_all(&sources, None).unwrap();
        let (zone, stamp) = &first.zones[0];
        let whole = stamp.signed().unwrap().signatures().0;
        let saved_whole = std::fs::read(&saved).unwrap();
        let previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
        std::fs::write(&zone_file, small_example_text("192.0.2.20")).unwrap();
        let again = load_one(&sources, &origin, Some(&previous)).unwrap();
        let patched = again.zones[0].1.signed().unwrap();
        assert!(patched.records().unwrap().len() > 0);
        assert_eq!(patched.signatures().0, 2, "the edit took the patch path");
        assert_eq!(
            std::fs::read(&saved).unwrap(),
            saved_whole,
            "a patched reload leaves the saved copy"
        );
        // A start: no previous version, the saved copy older than the file.
        let started = load_one(&sources, &origin, None).unwrap();
        let (zone, stamp) = &started.zones[0];
        let signatures = stamp.signed().unwrap().signatures().0;
        assert!(
            signatures < whole && signatures <= 3,
            "from the older copy: {signatures} of {whole}"
        );
        let www = tern_wire::name::NameBuf::from_text(b"www.example.", None).unwrap();
        let records = zone.owner_records(www.as_name());
        assert!(
            records
                .iter()
                .any(|record| record.rtype == tern_wire::types::RType::A
                    && record.rdata == [192, 0, 2, 20]),
            "the edit served"
        );
        assert!(
            records
                .iter()
                .any(|record| record.rtype == tern_wire::types::RType::RRSIG),
            "and signed"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A signed zone served at this version, with its signed records.
    struct SignedServedZone(Arc<Zone>, Arc<SignedVersion>);

    impl Previous for SignedServedZone {
        fn unchanged(&self, _: &[u8], _: &Path, _: Option<FileStamp>, _: &mut u32) -> Option<bool> {
            Some(false)
        }

        fn not_configured(&self, _: &dyn Fn(&[u8]) -> bool) -> Vec<Origin> {
            Vec::new()
        }

        fn count(&self) -> usize {
            1
        }

        fn serial(&self, _: &[u8]) -> Option<u32> {
            Some(self.0.serial())
        }

        fn signed(&self, _: &[u8]) -> Option<Arc<SignedVersion>> {
            Some(Arc::clone(&self.1))
        }

        fn served(&self, _: &[u8]) -> Option<Arc<Zone>> {
            Some(Arc::clone(&self.0))
        }
    }

    /// A signed (NSEC) zone reloaded with one record changed is served as
    /// its previous version patched, not built whole, and the patched
    /// version holds exactly the records a whole build of the signed
    /// records holds; a version not the signed records' is not patched.
    #[test]
    fn a_signed_reload_patches_the_served_version() {
        let dir = std::env::temp_dir().join(format!("tern-zones-patch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let zone_file = dir.join("example.zone");
        let text = |address: &str| {
            let mut text = String::from(
                "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
                 ns A 192.0.2.1\nsub NS ns.sub\nns.sub A 192.0.2.9\n*.wild TXT w\n",
            );
            for i in 0..50 {
                text.push_str(&format!("h{i} A 192.0.2.{}\n", i + 10));
            }
            text.push_str(&format!("www A {address}\nwww MX 10 mail\n"));
            text
        };
        std::fs::write(&zone_file, text("192.0.2.2")).unwrap();
        let (origin, sources) = signed_example(&dir, &zone_file, 1);
        let whole = |stamp: &Stamp| {
            let records = stamp.signed().unwrap().records().unwrap();
            let name = tern_wire::name::Name::from_wire(&origin).unwrap();
            let mut builder = ZoneBuilder::new(name);
            for record in records.iter() {
                builder
                    .insert(
                        record.owner,
                        record.rtype,
                        record.class,
                        record.ttl,
                        record.rdata,
                    )
                    .unwrap();
            }
            builder.finish().unwrap()
        };
        let first = load_all(&sources, None).unwrap();
        let (zone, stamp) = &first.zones[0];
        assert_eq!(zone.garbage_bytes(), 0, "built whole");

        // One record changed: www's A (and so its RRSIG, and the SOA's).
        std::fs::write(&zone_file, text("192.0.2.20")).unwrap();
        let previous = SignedServedZone(Arc::clone(zone), Arc::clone(stamp.signed().unwrap()));
        let again = load_one(&sources, &origin, Some(&previous)).unwrap();
        let (patched, stamp) = &again.zones[0];
        assert_eq!(patched.serial(), 2);
        assert!(patched.garbage_bytes() > 0, "patched, not built whole");
        assert!(same_records(patched, &whole(stamp)));

        // A name added and one removed: NSEC chain changes.
        std::fs::write(
            &zone_file,
            text("192.0.2.20")
                .replace("h7 A", "h7b A")
                .replace("h8 A 192.0.2.18\n", ""),
        )
        .unwrap();
        let previous = SignedServedZone(Arc::clone(patched), Arc::clone(stamp.signed().unwrap()));
        let third = load_one(&sources, &origin, Some(&previous)).unwrap();
        let (zone, stamp) = &third.zones[0];
        assert_eq!(zone.serial(), 3);
        assert!(
            zone.garbage_bytes() > patched.garbage_bytes(),
            "patched again"
        );
        assert!(same_records(zone, &whole(stamp)));

        // Served at another version than the signed records': built whole.
        std::fs::write(&zone_file, text("192.0.2.21")).unwrap();
        let previous = SignedServedZone(Arc::clone(patched), Arc::clone(stamp.signed().unwrap()));
        let fourth = load_one(&sources, &origin, Some(&previous)).unwrap();
        let (zone, stamp) = &fourth.zones[0];
        assert_eq!(zone.garbage_bytes(), 0, "built whole");
        assert!(same_records(zone, &whole(stamp)));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A stamp is kept for every zone, most of them unsigned: the signed
    /// state is one pointer (main kept the re-sign time inline, 88 octets).
    #[test]
    fn a_stamp_is_small() {
        assert!(
            std::mem::size_of::<Stamp>() <= 80,
            "{}",
            std::mem::size_of::<Stamp>()
        );
    }

    /// A signed zone loaded again after an edit is signed from its
    /// previous version: the changed RRset and the SOA signed, the rest
    /// kept, and the difference from the version served handed on; its
    /// serial is saved in the state directory (by the owner), and a start
    /// (nothing served) signs above it.
    /// A new directory named from `prefix` holding `example.zone`, the
    /// small example zone ([`small_example_text`]) with www at 192.0.2.2.
    fn small_example(prefix: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let zone_file = dir.join("example.zone");
        std::fs::write(&zone_file, small_example_text("192.0.2.2")).unwrap();
        (dir, zone_file)
    }

    /// The small example zone's text, www at `address`.
    fn small_example_text(address: &str) -> String {
        format!(
            "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
             ns A 192.0.2.1\nwww A {address}\nmail A 192.0.2.3\n"
        )
    }

    /// The zone `example.` from `zone_file`, signed with the default
    /// policy on `threads` threads, its state under `dir`.
    fn signed_example(dir: &Path, zone_file: &Path, threads: usize) -> (Origin, Sources) {
        let origin: Origin = b"\x07example\x00".to_vec().into();
        let policy = Arc::new(crate::signing::Policy::new("p".to_string()));
        let sources = Sources {
            dir: None,
            listed: vec![("example.".to_string(), zone_file.to_path_buf())],
            signing: Some(Signing::new(
                dir.join("state"),
                threads,
                vec![(origin.clone(), policy)],
            )),
        };
        (origin, sources)
    }

    #[test]
    fn a_signed_zone_is_signed_again_from_its_previous_version() {
        let (dir, zone_file) = small_example("tern-zones-resign");
        let (origin, sources) = signed_example(&dir, &zone_file, 1);
        let first = load_all(&sources, None).unwrap();
        let signed = Arc::clone(first.zones[0].1.signed().unwrap());
        // SOA, NS, DNSKEY, CDS, CDNSKEY (the first CSK's DS submitted:
        // `cds-cdnskey: rollover`), NSEC at the apex; A and NSEC at each
        // of 3 names.
        assert_eq!(signed.signatures(), (12, 0));
        assert!(signed.take_change().is_none(), "signed whole");

        std::fs::write(&zone_file, small_example_text("192.0.2.20")).unwrap();
        let again = load_one(&sources, &origin, Some(&SignedServed(1, signed))).unwrap();
        let (zone, stamp) = &again.zones[0];
        assert_eq!(zone.serial(), 2);
        let version = stamp.signed().unwrap();
        assert_eq!(version.signatures(), (2, 10), "www's A and the SOA");
        let (from, change) = version.take_change().unwrap();
        assert_eq!(from, 1);
        let types = |records: &[tern_zone::Record]| {
            let mut types: Vec<(String, u16)> = records
                .iter()
                .map(|record| (record.owner.to_string(), record.rtype.0))
                .collect();
            types.sort();
            types
        };
        let expected = vec![
            ("example.".to_string(), 6),
            ("example.".to_string(), 46),
            ("www.example.".to_string(), 1),
            ("www.example.".to_string(), 46),
        ];
        assert_eq!(types(&change.deleted), expected);
        assert_eq!(types(&change.added), expected);
        assert!(version.take_change().is_none(), "taken once");

        // A start (nothing served) with a saved serial of 7 signs above it.
        crate::signed_serial::save_signed_serial(
            &dir.join("state"),
            LowerNameBuf::from_name(tern_wire::name::Name::from_wire(&origin).unwrap()),
            7,
        )
        .unwrap();
        let restarted = load_all(&sources, None).unwrap();
        assert_eq!(restarted.zones[0].0.serial(), 8);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Each record of a signed zone but RRSIGs as (owner, type, TTL,
    /// RDATA), and each RRSIG as (owner, type covered, key tag).
    type Shape = (
        std::collections::BTreeSet<(String, u16, u32, Vec<u8>)>,
        std::collections::BTreeSet<(String, u16, u16)>,
    );

    fn shape<'r>(records: impl Iterator<Item = tern_zone::RecordRef<'r>>) -> Shape {
        let mut shape = Shape::default();
        for record in records {
            let owner = record.owner.to_lower().as_name().to_string();
            if record.rtype == tern_wire::types::RType::RRSIG {
                let covered = u16::from_be_bytes([record.rdata[0], record.rdata[1]]);
                let tag = u16::from_be_bytes([record.rdata[16], record.rdata[17]]);
                shape.1.insert((owner, covered, tag));
            } else {
                shape
                    .0
                    .insert((owner, record.rtype.0, record.ttl, record.rdata.to_vec()));
            }
        }
        shape
    }

    /// A CSK rollover started on a signed zone: its next version, signed
    /// from the previous one, publishes the new CSK and has it sign the
    /// DNSKEY, CDS and CDNSKEY RRsets beside the old one (the zone still by
    /// the old one),
    /// as a whole signing at that time does; the keys' next step is its
    /// re-sign time, and the difference holds the DNSKEY RRset's change.
    #[test]
    fn a_rollover_step_signed_from_the_previous_version() {
        let dir = std::env::temp_dir().join(format!("tern-zones-roll-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let zone_file = dir.join("example.zone");
        std::fs::write(
            &zone_file,
            "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
             ns A 192.0.2.1\nwww A 192.0.2.2\n",
        )
        .unwrap();
        let origin: Origin = b"\x07example\x00".to_vec().into();
        let name = NameBuf::from_text(b"example.", None).unwrap();
        let policy = Arc::new(crate::signing::Policy::new("p".to_string()));
        let state = dir.join("state");
        let sources = Sources {
            dir: None,
            listed: vec![("example.".to_string(), zone_file.clone())],
            signing: Some(Signing::new(
                state.clone(),
                1,
                vec![(origin.clone(), Arc::clone(&policy))],
            )),
        };
        let first = load_all(&sources, None).unwrap();
        let signed = Arc::clone(first.zones[0].1.signed().unwrap());
        let old_tag = {
            let keys = crate::keys::read_keys(&crate::keys::key_dir(&state, name.as_name()));
            keys.unwrap()[0].meta.key_tag
        };
        let now = crate::unix_time();
        let (new_tag, _) = crate::rollover::start(
            &crate::keys::key_dir(&state, name.as_name()),
            &policy,
            tern_dnssec::KeyRole::Csk,
            now,
        )
        .unwrap();

        let again = load_one(&sources, &origin, Some(&SignedServed(1, signed))).unwrap();
        let (zone, stamp) = &again.zones[0];
        let version = stamp.signed().unwrap();
        // The changed DNSKEY RRset by both CSKs, the CDS and CDNSKEY
        // RRsets by the new one (the old one's kept), and the SOA.
        assert_eq!(version.signatures(), (5, 8));
        let (_, change) = version.take_change().unwrap();
        assert!(change
            .added
            .iter()
            .any(|record| record.rtype == tern_wire::types::RType::DNSKEY));
        let keys = stamp.keys().unwrap();
        let next = keys.next_event.unwrap();
        assert_eq!(stamp.resign_at(), Some(next));
        assert!(stamp.key_event_first());

        let records = tern_zone::parse_bytes(
            &std::fs::read(&zone_file).unwrap(),
            &zone_file,
            name.as_name(),
            &tern_zone::Options::default(),
            &mut tern_zone::NoInclude,
        )
        .unwrap()
        .records;
        let whole = crate::signing::sign(
            name.as_name(),
            &records,
            &policy,
            &state,
            crate::unix_time(),
            Some(1),
        )
        .unwrap();
        assert_eq!(zone.serial(), 2);
        let whole_shape = shape(
            whole
                .zone
                .records
                .iter()
                .map(|record| tern_zone::RecordRef {
                    owner: record.owner.as_name(),
                    class: record.class,
                    ttl: record.ttl,
                    rtype: record.rtype,
                    rdata: &record.rdata,
                    location: record.location,
                }),
        );
        assert_eq!(shape(version.records().unwrap().iter()), whole_shape);
        let by = |tag: u16| whole_shape.1.iter().filter(|sig| sig.2 == tag).count();
        assert_eq!(by(new_tag), 3, "the new CSK signs the apex's keys only");
        assert!(by(old_tag) > 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    impl Previous for Served {
        fn unchanged(&self, _: &[u8], _: &Path, _: Option<FileStamp>, _: &mut u32) -> Option<bool> {
            Some(false)
        }

        fn not_configured(&self, _: &dyn Fn(&[u8]) -> bool) -> Vec<Origin> {
            Vec::new()
        }

        fn count(&self) -> usize {
            1
        }

        fn serial(&self, _: &[u8]) -> Option<u32> {
            Some(self.0)
        }
    }

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
        let (zone, stamp) = load_zone_with(
            "example.",
            &zone_file,
            &mut warnings,
            &mut EditAfterRead,
            None,
        )
        .ok()
        .unwrap();
        // The version loaded is the one read, before the edit ...
        assert_eq!(zone.record_count(), 3);
        assert_eq!(stamp.includes.len(), 1, "the include");
        // ... so the next reload must see the edit and rebuild the zone.
        assert!(
            !stamp.unchanged(&zone_file, FileStamp::of(&zone_file)),
            "the include was stamped after it changed: the edit would be missed"
        );
        // Unedited, a stamp stays the same.
        let (_, stamp) = load_zone_from("example.", &zone_file, &mut warnings).unwrap();
        assert!(stamp.unchanged(&zone_file, FileStamp::of(&zone_file)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A zone with a policy is built signed; when its keys do not read it
    /// is not built, its failure is a signing one (not a zone-file error,
    /// which would stop the start), and a served version is kept.
    #[test]
    fn a_zone_with_a_policy_is_signed_or_not_built() {
        let dir = std::env::temp_dir().join(format!("tern-zones-sign-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let zone_file = dir.join("example.zone");
        std::fs::write(
            &zone_file,
            "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\nns A 192.0.2.1\n",
        )
        .unwrap();
        let (origin, sources) = signed_example(&dir, &zone_file, 1);
        let loaded = load_all(&sources, None).unwrap();
        assert_eq!(
            (loaded.zones.len(), loaded.failed),
            (1, 0),
            "{:?}",
            loaded.errors
        );
        // SOA, NS, A, DNSKEY, two NSECs, the CDS and CDNSKEY of the
        // first CSK (its DS submitted: `cds-cdnskey: rollover`) and eight
        // RRSIGs.
        assert_eq!(loaded.zones[0].0.record_count(), 16);
        // The file's serial at first; it is signed again half a lifetime
        // (the default refresh: 7 of 14 days) from now, less up to the
        // default jitter (2 days).
        assert_eq!(loaded.zones[0].0.serial(), 1);
        let resign_at = loaded.zones[0].1.resign_at().unwrap();
        let half = crate::unix_time() + 7 * 86_400;
        assert!((half - 2 * 86_400 - 60..=half).contains(&resign_at));
        // Signed again over serial 1 with the file unchanged: serial 2; a
        // higher file serial is kept.
        let loaded = load_one(&sources, &origin, Some(&Served(1))).unwrap();
        assert_eq!(loaded.zones[0].0.serial(), 2);
        let loaded = load_all(&sources, Some(&Served(0))).unwrap();
        assert_eq!(loaded.zones[0].0.serial(), 1);
        let key_dir = crate::keys::key_dir(
            &dir.join("state"),
            parse_origin("example.").unwrap().as_name(),
        );
        let files: Vec<_> = std::fs::read_dir(&key_dir).unwrap().collect();
        assert_eq!(files.len(), 2, "a CSK's .pem and .meta");
        for file in files {
            let path = file.unwrap().path();
            if path.extension().is_some_and(|suffix| suffix == "pem") {
                std::fs::write(&path, "not a key").unwrap();
            }
        }
        let loaded = load_one(&sources, &origin, Some(&Served(1))).unwrap();
        assert!(loaded.zones.is_empty());
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        assert_eq!((loaded.failed, loaded.signing_failed), (1, 1));
        assert_eq!(loaded.kept, ["example."]);
        // Unsigned, the same file loads: 3 records.
        let unsigned = Sources {
            signing: None,
            ..sources
        };
        let loaded = load_all(&unsigned, None).unwrap();
        assert_eq!(loaded.zones[0].0.record_count(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A start (nothing served before) signs from the signed records the
    /// last signing saved: with the file and keys unchanged and the
    /// signatures far from expiry, it makes at most the SOA's; an edit
    /// signs only what changed; a saved copy that does not read signs the
    /// zone whole.
    #[test]
    fn a_start_signs_from_the_saved_signed_records() {
        let dir = std::env::temp_dir().join(format!("tern-load-saved-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let zone_file = dir.join("saved.zone");
        let text = "$TTL 300\n@ SOA ns hostmaster 1 3600 900 604800 300\n@ NS ns\n\
                    ns A 192.0.2.1\nwww A 192.0.2.80\nmail A 192.0.2.25\n";
        std::fs::write(&zone_file, text).unwrap();
        let origin: Box<[u8]> = b"\x05saved\x04test\x00"[..].into();
        let policy = Arc::new(Policy::new("p".to_string()));
        let sources = Sources {
            dir: None,
            listed: vec![("saved.test.".to_string(), zone_file.clone())],
            signing: Some(Signing::new(
                dir.join("state"),
                1,
                vec![(origin.clone(), policy)],
            )),
        };
        let made = || {
            let loaded = load_one(&sources, &origin, None).unwrap();
            assert_eq!(loaded.zones.len(), 1);
            crate::sign_status::get(&origin)
                .unwrap()
                .last
                .unwrap()
                .signatures
        };
        let whole = made();
        assert!(whole >= 8, "signed whole: {whole}");
        assert!(dir.join("state/signed/saved.test.kept").exists());
        let again = made();
        assert!(
            again <= 1,
            "a start with nothing changed: {again} signatures"
        );
        std::fs::write(&zone_file, format!("{text}added A 192.0.2.7\n")).unwrap();
        let edited = made();
        assert!(
            edited > again && edited < whole,
            "an edit: {edited} of {whole}"
        );
        std::fs::write(dir.join("state/signed/saved.test.kept"), b"damaged").unwrap();
        assert!(made() > whole, "signed whole again");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
