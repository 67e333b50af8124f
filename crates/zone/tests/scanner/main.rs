//! Integration tests of the zone-file scanner against the shared corpora
//! (`../shared/corpora`, never copied into the repository):
//!
//! - Knot's libzscanner `.in`/`.out` pairs: every OK record reproduced
//!   exactly (owner, class, TTL, type, RDATA in hex), every KO record
//!   rejected, in order;
//! - every zone that BIND, Knot and NSD all accept loads (and the ones
//!   accepted with a caveat that concerns us);
//! - the negative cases are rejected with an error on the right line;
//! - SVCB presentation vectors equal their RFC 3597 twins;
//! - `$INCLUDE` (in memory and on disk), `$GENERATE` against
//!   named-checkzone's output, TTL defaulting as Knot and NSD do it;
//! - bombs: self-include, a 12-deep chain, a huge `$GENERATE`, a 256-octet
//!   owner, a 10 MB line.

mod corpora;
mod directives;
mod limits;

use std::path::{Path, PathBuf};

use tern_wire::name::NameBuf;
use tern_zone::{parse_bytes, Errors, MemoryInclude, NoInclude, Options, ParsedZone};

/// The shared corpora directory.
pub(crate) fn corpora() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
}

/// Reads a corpus file.
pub(crate) fn corpus(name: &str) -> Vec<u8> {
    let path = corpora().join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A name from text.
pub(crate) fn name(text: &str) -> NameBuf {
    NameBuf::from_text(text.as_bytes(), None).unwrap()
}

/// Parses `data` as `file` with `origin`, no includes.
pub(crate) fn parse(data: &[u8], file: &str, origin: &str) -> Result<ParsedZone, Errors> {
    parse_bytes(
        data,
        Path::new(file),
        name(origin).as_name(),
        &Options::default(),
        &mut NoInclude,
    )
}

/// Parses `data` as `file` with `origin` and Knot's strict name characters,
/// as libzscanner's own tests expect.
pub(crate) fn parse_strict(data: &[u8], file: &str, origin: &str) -> Result<ParsedZone, Errors> {
    let options = Options {
        strict_names: true,
        ..Options::default()
    };
    parse_bytes(
        data,
        Path::new(file),
        name(origin).as_name(),
        &options,
        &mut NoInclude,
    )
}

/// Parses `data` as `file` with `origin`, includes from `files`.
pub(crate) fn parse_with(
    data: &[u8],
    file: &str,
    origin: &str,
    files: &[(&str, Vec<u8>)],
) -> Result<ParsedZone, Errors> {
    let mut includer = MemoryInclude::default();
    for (path, contents) in files {
        includer.files.insert(PathBuf::from(path), contents.clone());
    }
    parse_bytes(
        data,
        Path::new(file),
        name(origin).as_name(),
        &Options::default(),
        &mut includer,
    )
}

/// Lowercase hex of bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
