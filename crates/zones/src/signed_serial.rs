//! Two leaf helpers of the state directory that the loader needs without
//! importing `crate::state` (which loads zones through the loader): the
//! serial a signed zone was last served with (`STATE/signed/ORIGIN.serial`),
//! and writing a file atomically.

use std::io;
use std::path::{Path, PathBuf};

use tern_wire::name::LowerNameBuf;

use crate::file_stem;

/// Writes `bytes` to `path` through a temporary file and a rename, so that
/// `path` always holds a whole file.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path)
}

/// `STATE/signed/ORIGIN.serial`: the serial a signed zone was last
/// served with, so that a restart signs it with a higher one (as the
/// reloads before it did) rather than going back to its file's.
fn signed_serial_path(state_directory: &Path, origin: LowerNameBuf) -> PathBuf {
    state_directory
        .join("signed")
        .join(format!("{}serial", file_stem(origin)))
}

/// Saves the serial a signed zone is served with now.
pub(crate) fn save_signed_serial(
    state_directory: &Path,
    origin: LowerNameBuf,
    serial: u32,
) -> io::Result<()> {
    let path = signed_serial_path(state_directory, origin);
    write_atomically(&path, format!("{serial}\n").as_bytes())
}

/// The serial the signed zone `origin` (lowercased wire form) was last
/// served with, if saved and readable.
pub(crate) fn load_signed_serial(state_directory: &Path, origin: &[u8]) -> Option<u32> {
    let origin = LowerNameBuf::from_name(tern_wire::name::Name::from_wire(origin).ok()?);
    let text = std::fs::read_to_string(signed_serial_path(state_directory, origin)).ok()?;
    text.trim().parse().ok()
}
