//! # tern-zones: one owner for every zone's versions
//!
//! A zone gets a new version when its file is loaded or changes, when a
//! transfer brings one, and (next) when it is signed or updated. This crate
//! is where every such version is committed, and where the threads that
//! produce versions off the cores live (docs/decisions/0013):
//!
//! - [`refresh`]: the secondary zones' timers and transfers in (the
//!   refresh thread, as NSD's xfrd);
//! - [`notify`]: NOTIFY out to the secondaries of a zone that changed.
//! - [`signing`] and [`keys`]: zones signed as they are loaded (`dnssec-policy`),
//!   and their keys in the state directory;
//! - [`import`]: keys imported into a zone's key directory from BIND's
//!   files and PEM (`tern keys import`);
//! - [`resign`]: the signed zones' timers, re-signing each before its
//!   signatures expire and at each step of a key rollover (the
//!   `tern-resign` thread);
//! - [`rollover`] and [`parent`]: key rollovers (RFC 7583) and the check
//!   of the parent's DS set.
//! - [`policy`]: a signed zone's policy, read by the signer and the
//!   rollovers.
//! - [`bump`]: secondary zones received unsigned and served signed ("bump
//!   in the wire"; the `tern-bump` thread).
//! - [`sign_status`]: what each signed zone's signing did last, and its
//!   failures (`tern zone-status`, the metrics).
//! - [`update`]: dynamic updates (RFC 2136) of primary zones, made
//!   durable in a journal and served as new versions (the `tern-update`
//!   thread).
//!
//! Nothing here runs on a core or is known to the per-core runtime
//! (`tern-server`): the cores receive finished versions as catalog changes,
//! and hand an accepted NOTIFY to a callback.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bump;
pub mod catalog_zone;
mod edited;
pub mod event;
/// Entry points for fuzzing (`crates/fuzz`); not a stable API.
#[doc(hidden)]
pub mod fuzzing;
pub mod import;
pub mod kept;
pub mod keys;
pub mod load;
pub mod notify;
pub mod owner;
pub mod parent;
pub mod policy;
pub mod refresh;
pub mod resign;
pub mod rollover;
pub mod sign_status;
mod signed_serial;
pub mod signing;
pub mod start;
pub mod state;
pub mod update;
mod verified;
mod window;
mod work;
pub mod xot;

use std::fmt::Write as _;

use tern_authority::CatalogChange;
use tern_wire::name::LowerNameBuf;

/// The cores, as the zones' owner reaches them: the binary implements it
/// for `tern_server::Handle`, a test for a counter.
pub trait Cores: Send + Sync {
    /// Every core applies `changes` to its own catalog, in order; returns
    /// once they have (so that a NOTIFY sent next finds the new versions
    /// served).
    fn update(&self, changes: Vec<CatalogChange>);
}

/// A wire-format origin as text (for messages): `?` if it does not read.
pub fn origin_text(wire: &[u8]) -> String {
    tern_wire::name::Name::from_wire(wire).map_or_else(|_| "?".to_string(), |name| name.to_string())
}

/// The file name of a zone's files: its origin in presentation form, with
/// anything but letters, digits, `-`, `_` and `.` written `%XX`.
pub(crate) fn file_stem(origin: LowerNameBuf) -> String {
    let text = origin.as_name().to_string();
    let mut stem = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.') {
            stem.push(byte as char);
        } else {
            let _ = write!(stem, "%{byte:02X}");
        }
    }
    stem
}

/// Seconds since the epoch (0 before 1970): the timers of secondary zones,
/// the serials of the produced catalog, TSIG's clock.
pub fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}
