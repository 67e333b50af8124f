//! # tern-zone: RFC 1035 master files to owned wire-format records
//!
//! The scanner reads a whole zone file (and the files it `$INCLUDE`s) and
//! produces [`Record`]s whose RDATA is already in uncompressed wire form,
//! so the authority database never sees text. Every problem is reported as
//! an [`Error`] located at `file:line:col`, and the scanner keeps going to
//! the next entry after a bad record, so one run lists up to
//! [`MAX_ERRORS`] problems.
//!
//! Modules:
//! - `scan`: tokenizer, directives (`$ORIGIN`, `$TTL`, `$INCLUDE`,
//!   `$GENERATE`), owner/TTL/class defaulting, and the driver.
//! - `rdata`: presentation-format RDATA to wire, per type, plus RFC 3597.
//! - `print`: wire RDATA back to presentation format (for `tern dump`).
//! - `check`: zone-level semantic checks as kzonecheck does them.
//! - `records`: where records go: the [`Sink`] the scanner feeds, and
//!   [`Records`], a compact list in flat arenas for large zones.
//!
//! [`parse_file`] and [`parse_bytes`] collect owned [`Record`]s;
//! [`scan_file`] and [`scan_bytes`] hand each record to a [`Sink`] instead,
//! so a server can load a zone of millions of records without holding one
//! owned record (a 256-octet name buffer and an RDATA allocation) each.
//!
//! A zone in memory, record by record:
//!
//! ```
//! use tern_wire::name::NameBuf;
//! use tern_wire::types::RType;
//! use tern_zone::{parse_bytes, NoInclude, Options};
//!
//! let text = b"$TTL 1h\n@ SOA ns hostmaster 1 2h 1h 1w 5m\n  NS ns\nns A 192.0.2.1\n";
//! let origin = NameBuf::from_text(b"example.", None).unwrap();
//! let zone = parse_bytes(text, "example.zone".as_ref(), origin.as_name(), &Options::default(), &mut NoInclude)
//!     .unwrap();
//! let a = &zone.records[2];
//! assert_eq!((a.owner.to_string().as_str(), a.ttl, a.rtype), ("ns.example.", 3600, RType::A));
//! assert_eq!(a.rdata, [192, 0, 2, 1]);            // 4 octets, network order
//! assert_eq!(a.location.line, 4);
//!
//! let error = parse_bytes(b"www 300 IN AAA ::1\n", "example.zone".as_ref(), origin.as_name(),
//!     &Options::default(), &mut NoInclude).unwrap_err();
//! assert_eq!(error.to_string(), "example.zone:1:12: unknown record type \"AAA\"");
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tern_wire::name::{Name, NameBuf};
use tern_wire::types::{RClass, RType};

pub use error::{Error, Errors, MAX_ERRORS};
pub use rdata::MAX_RDATA_LEN;
pub use records::{RecordList, RecordRef, Records, Sink, MAX_PARTS};
pub use scan::generate::MAX_GENERATE_RECORDS;
pub use scan::region::{
    changed_region_of, common_prefix, common_suffix, scan_old_region, scan_region, ChangedRegion,
    OldText, MAX_HEAD_LEN,
};
pub use scan::MAX_INCLUDE_DEPTH;

mod error;
mod rdata;
mod records;
mod scan;

//----------- Record ---------------------------------------------------------

/// One resource record read from a zone file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The owner, absolute, in the case it was written.
    pub owner: NameBuf,
    /// The class (IN for every zone this server serves).
    pub class: RClass,
    /// The TTL in seconds.
    pub ttl: u32,
    /// The record type.
    pub rtype: RType,
    /// The RDATA in uncompressed wire form.
    pub rdata: Vec<u8>,
    /// Where the record was written, for later (semantic) diagnostics.
    pub location: Location,
}

impl Record {
    /// The record borrowed as the sinks and lists hand records on.
    pub fn as_record_ref(&self) -> RecordRef<'_> {
        RecordRef {
            owner: self.owner.as_name(),
            class: self.class,
            ttl: self.ttl,
            rtype: self.rtype,
            rdata: &self.rdata,
            location: self.location,
        }
    }
}

//----------- Location -------------------------------------------------------

/// A position in a zone file: which file (index into the list of files read),
/// line and column, both counted from 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// Index into [`ParsedZone::files`].
    pub file: u32,
    /// Line number, from 1.
    pub line: u32,
    /// Column number, from 1.
    pub col: u32,
}

pub mod check;
mod diagnostic;
pub mod print;
pub mod ttl;

//----------- Options --------------------------------------------------------

/// The TTL that Knot and NSD give records without a TTL when the file has
/// no `$TTL` (see the README for the policy).
pub const DEFAULT_TTL: u32 = 3600;

/// How to read a zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// TTL of records that omit it before any `$TTL` (default
    /// [`DEFAULT_TTL`]).
    pub default_ttl: u32,
    /// The zone class; records of another class are errors (default IN).
    pub class: RClass,
    /// Accept only Knot's set of unescaped name characters (letters,
    /// digits, `-`, `_`, `/`, `*`). The default (`false`) accepts any
    /// printable ASCII but `"` unescaped, as BIND and NSD do and as
    /// `named-checkzone -D` prints names, so their zones load here too.
    pub strict_names: bool,
    /// Threads a large file is read on, where it can be cut into parts
    /// that read alike (default 1: the calling thread only).
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            default_ttl: DEFAULT_TTL,
            class: RClass::IN,
            strict_names: false,
            threads: 1,
        }
    }
}

//----------- ParsedZone -----------------------------------------------------

/// The records of a zone and the files they came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedZone {
    /// The files read: the zone file first, then each `$INCLUDE`d file in
    /// the order met. [`Location::file`] indexes this list.
    pub files: Vec<PathBuf>,
    /// The records, in file order.
    pub records: Vec<Record>,
}

//----------- Include --------------------------------------------------------

/// A file read for `$INCLUDE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncludedFile {
    /// The path as shown in messages and in [`ParsedZone::files`].
    pub path: PathBuf,
    /// What makes two includes the same file (a canonical path on disk),
    /// for cycle detection.
    pub identity: PathBuf,
    /// The contents.
    pub data: Vec<u8>,
}

/// Resolves and reads `$INCLUDE` targets, so the scanner itself does no
/// I/O and tests need no disk.
pub trait Include {
    /// Reads the file that `$INCLUDE target` names in the file `from`.
    /// The error is a reason, which the scanner locates.
    fn include(&mut self, from: &Path, target: &str) -> Result<IncludedFile, String>;
}

/// The target of an include: absolute as written, else relative to the
/// including file's directory.
pub fn resolve_include(from: &Path, target: &str) -> PathBuf {
    let target = Path::new(target);
    if target.is_absolute() {
        return target.to_path_buf();
    }
    match from.parent() {
        Some(directory) => directory.join(target),
        None => target.to_path_buf(),
    }
}

/// Refuses every `$INCLUDE`.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoInclude;

impl Include for NoInclude {
    fn include(&mut self, _from: &Path, _target: &str) -> Result<IncludedFile, String> {
        Err("$INCLUDE is not allowed here".to_string())
    }
}

/// Reads `$INCLUDE`d files from disk, relative to the including file.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileInclude;

impl Include for FileInclude {
    fn include(&mut self, from: &Path, target: &str) -> Result<IncludedFile, String> {
        let path = resolve_include(from, target);
        let identity = std::fs::canonicalize(&path).map_err(|error| error.to_string())?;
        let data = std::fs::read(&path).map_err(|error| error.to_string())?;
        Ok(IncludedFile {
            path,
            identity,
            data,
        })
    }
}

/// Serves `$INCLUDE`s from memory: file paths (as [`resolve_include`]
/// makes them) to contents.
#[derive(Clone, Debug, Default)]
pub struct MemoryInclude {
    /// The files.
    pub files: HashMap<PathBuf, Vec<u8>>,
}

impl Include for MemoryInclude {
    fn include(&mut self, from: &Path, target: &str) -> Result<IncludedFile, String> {
        let path = resolve_include(from, target);
        let data = self.files.get(&path).ok_or("no such file")?.clone();
        Ok(IncludedFile {
            identity: path.clone(),
            path,
            data,
        })
    }
}

//----------- Entry points ---------------------------------------------------

/// Reads the zone file at `path` whose origin is `origin`, resolving
/// `$INCLUDE`s on disk relative to the including file.
pub fn parse_file(path: &Path, origin: Name<'_>, options: &Options) -> Result<ParsedZone, Errors> {
    let mut records = Vec::new();
    let files = scan_file(path, origin, options, &mut records)?;
    Ok(ParsedZone { files, records })
}

/// Reads a zone from memory; `file_name` names it in messages and is the
/// base for relative `$INCLUDE`s, which `includer` resolves.
pub fn parse_bytes(
    data: &[u8],
    file_name: &Path,
    origin: Name<'_>,
    options: &Options,
    includer: &mut dyn Include,
) -> Result<ParsedZone, Errors> {
    let mut records = Vec::new();
    let files = scan_bytes(data, file_name, origin, options, includer, &mut records)?;
    Ok(ParsedZone { files, records })
}

/// Like [`parse_file`], but hands each record to `sink` (in file order)
/// and returns only the files read, which [`Location::file`] indexes. On
/// errors the sink has seen the good records; the zone is not usable.
pub fn scan_file(
    path: &Path,
    origin: Name<'_>,
    options: &Options,
    sink: &mut dyn Sink,
) -> Result<Vec<PathBuf>, Errors> {
    let data = std::fs::read(path).map_err(|error| Errors {
        errors: vec![Error {
            file: path.display().to_string(),
            line: 0,
            col: 0,
            message: format!("cannot read zone file: {error}"),
        }],
        truncated: false,
    })?;
    let identity = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    scan_top(
        &data,
        path,
        identity,
        origin,
        options,
        &mut FileInclude,
        sink,
    )
}

/// Like [`parse_bytes`], but hands each record to `sink`; see
/// [`scan_file`].
pub fn scan_bytes(
    data: &[u8],
    file_name: &Path,
    origin: Name<'_>,
    options: &Options,
    includer: &mut dyn Include,
    sink: &mut dyn Sink,
) -> Result<Vec<PathBuf>, Errors> {
    scan_top(
        data,
        file_name,
        file_name.to_path_buf(),
        origin,
        options,
        includer,
        sink,
    )
}

fn scan_top(
    data: &[u8],
    path: &Path,
    identity: PathBuf,
    origin: Name<'_>,
    options: &Options,
    includer: &mut dyn Include,
    sink: &mut dyn Sink,
) -> Result<Vec<PathBuf>, Errors> {
    let mut scanner = scan::Scanner::new(options, includer, sink);
    let index = scanner.add_file(path.to_path_buf());
    let mut context = scan::FileContext {
        index,
        display: path.display().to_string(),
        path: path.to_path_buf(),
        identity,
        origin: origin.to_buf(),
        last_owner: None,
        default_ttl: options.default_ttl,
    };
    scanner.scan_file(data, &mut context);
    if !scanner.errors.is_empty() {
        return Err(Errors {
            errors: scanner.errors,
            truncated: scanner.truncated,
        });
    }
    Ok(scanner.files)
}

/// Entry points for fuzzing (`crates/fuzz`); not a stable API.
#[doc(hidden)]
pub mod fuzzing {
    use super::*;

    /// Scans arbitrary bytes as a zone under `fuzz.` with no includes. The
    /// scan must not panic; when it succeeds, every record printed with
    /// [`print::write_record`] must scan back to the same owner (case
    /// kept), TTL, class, type and RDATA: the printer and the scanner agree.
    /// Returns whether the bytes scanned as a zone.
    pub fn scan(data: &[u8]) -> bool {
        let origin = NameBuf::from_text(b"fuzz.", None).expect("a valid literal name");
        let Ok(zone) = parse_bytes(
            data,
            Path::new("fuzz"),
            origin.as_name(),
            &Options::default(),
            &mut NoInclude,
        ) else {
            return false;
        };
        let mut text = String::new();
        for record in &zone.records {
            print::write_record(record, &mut text);
        }
        let again = parse_bytes(
            text.as_bytes(),
            Path::new("printed"),
            origin.as_name(),
            &Options::default(),
            &mut NoInclude,
        )
        .unwrap_or_else(|errors| panic!("printed zone does not scan: {errors:?}\n{text}"));
        assert_eq!(zone.records.len(), again.records.len(), "{text}");
        for (first, second) in zone.records.iter().zip(&again.records) {
            assert_eq!(
                (
                    first.owner.as_bytes(),
                    first.ttl,
                    first.class,
                    first.rtype,
                    &first.rdata
                ),
                (
                    second.owner.as_bytes(),
                    second.ttl,
                    second.class,
                    second.rtype,
                    &second.rdata
                ),
                "{text}"
            );
        }
        true
    }

    #[cfg(test)]
    mod tests {
        /// Every seed of `crates/fuzz/corpus/zone_scan/` passes the oracle.
        #[test]
        fn zone_scan_seeds() {
            let dir =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/zone_scan");
            let mut scanned = 0;
            for entry in std::fs::read_dir(&dir).unwrap() {
                let data = std::fs::read(entry.unwrap().path()).unwrap();
                scanned += usize::from(super::scan(&data));
            }
            assert!(scanned >= 5, "too few seeds scan in {}", dir.display());
        }
    }
}

/// `text` scanned under `example.` (no includes, default options) into
/// `sink`: the tests' zones.
#[cfg(test)]
pub(crate) fn scan_example(text: &[u8], sink: &mut dyn Sink) {
    let origin = NameBuf::from_text(b"example.", None).expect("a valid literal name");
    scan_bytes(
        text,
        Path::new("z"),
        origin.as_name(),
        &Options::default(),
        &mut NoInclude,
        sink,
    )
    .expect("the test's zone scans");
}
