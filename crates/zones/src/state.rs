//! The state directory (`state-directory`; without one, nothing is
//! saved): received zones, their timers and every zone's IXFR history,
//! each file written whole (a temporary file renamed over the old one) but
//! a history, to which each new difference is appended (its frame;
//! [`tern_xfr::journal`]), so that a restart serves the saved copies at
//! once and keeps their timers and histories.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tern_authority::{RecordCursor, Zone};
use tern_wire::name::LowerNameBuf;
use tern_xfr::journal::{Journal, Journals};

use crate::file_stem;
use crate::refresh::{SecondaryConfig, Timers};
pub(crate) use crate::signed_serial::write_atomically;

/// `STATE/secondary`.
fn secondary_dir(state_directory: &Path) -> PathBuf {
    state_directory.join("secondary")
}

/// `STATE/journal/ORIGIN.ixfr`.
pub(crate) fn journal_path(state_directory: &Path, origin: LowerNameBuf) -> PathBuf {
    state_directory
        .join("journal")
        .join(format!("{}ixfr", file_stem(origin)))
}

/// Appends `bytes` (a history's new frames) to the history file `path`,
/// which must exist (a missing one is written whole by the next save).
pub(crate) fn append_history(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)?
        .write_all(bytes)
}

/// The saved IXFR histories of `zones` that end at the version served: a
/// history that does not (a tail torn by a crash leaves an earlier end,
/// and the update journal's replay a later serial served), or does not
/// read, is dropped, never served as a chain it is not.
pub fn load_journals(state_directory: Option<&Path>, zones: &[Arc<Zone>]) -> Journals {
    let mut journals = Journals::new();
    let Some(state_directory) = state_directory else {
        return journals;
    };
    for zone in zones {
        let origin = LowerNameBuf::from_name(zone.origin());
        let Ok(bytes) = std::fs::read(journal_path(state_directory, origin)) else {
            continue;
        };
        match Journal::decode_history(&bytes) {
            Some(journal) if journal.ends_at(zone.serial()) => {
                journals.insert(origin.as_bytes().to_vec(), journal);
            }
            _ => log::info!(
                "zone {}: its saved IXFR history does not end at serial {}; not used",
                origin.as_name(),
                zone.serial()
            ),
        }
    }
    journals
}

/// Saves a received zone as a zone file.
pub(crate) fn save_zone(state_directory: &Path, zone: &Zone) -> io::Result<()> {
    let origin = LowerNameBuf::from_name(zone.origin());
    let mut text = format!(
        "; {} received by transfer; tern rewrites this file\n",
        origin.as_name()
    );
    let mut cursor = RecordCursor::default();
    while let Some(record) = zone.next_record(&mut cursor) {
        let record = crate::signing::record_ref(&record).to_record();
        tern_zone::print::write_record(&record, &mut text);
    }
    let path = secondary_dir(state_directory).join(format!("{}zone", file_stem(origin)));
    write_atomically(&path, text.as_bytes())
}

/// Saves a zone's timers: one `name value` line each.
pub(crate) fn save_timers(
    state_directory: &Path,
    origin: LowerNameBuf,
    timers: Timers,
) -> io::Result<()> {
    let text = format!(
        "last-refresh {}\nnext-refresh {}\nexpires {}\nlast-transfer {}\n",
        timers.last_refresh, timers.next_refresh, timers.expires, timers.last_transfer
    );
    let path = secondary_dir(state_directory).join(format!("{}timers", file_stem(origin)));
    write_atomically(&path, text.as_bytes())
}

/// The saved copy and timers of a secondary zone, if both load.
pub fn load_saved(
    state_directory: Option<&Path>,
    config: &SecondaryConfig,
) -> Option<(Arc<Zone>, Timers)> {
    let state_directory = state_directory?;
    let stem = file_stem(config.origin);
    let dir = secondary_dir(state_directory);
    let zone_path = dir.join(format!("{stem}zone"));
    if !zone_path.exists() {
        return None;
    }
    let origin_text = config.origin.as_name().to_string();
    let mut warnings = Vec::new();
    let zone = match crate::load::load_zone(&origin_text, &zone_path, &mut warnings) {
        Ok(zone) => zone,
        Err(errors) => {
            log::warn!(
                "{origin_text}: the saved copy {} does not load ({}); transferring it again",
                zone_path.display(),
                errors.join("; ")
            );
            return None;
        }
    };
    let timers = std::fs::read_to_string(dir.join(format!("{stem}timers")))
        .map(|text| parse_timers(&text))
        .unwrap_or_default();
    Some((Arc::new(zone), timers))
}

fn parse_timers(text: &str) -> Timers {
    let mut timers = Timers::default();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(name), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(value) = value.parse() else { continue };
        match name {
            "last-refresh" => timers.last_refresh = value,
            "next-refresh" => timers.next_refresh = value,
            "expires" => timers.expires = value,
            "last-transfer" => timers.last_transfer = value,
            _ => {}
        }
    }
    timers
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_and_timers_round_trip() {
        let name = tern_wire::name::NameBuf::from_text(b"Ex/ample.net.", None).unwrap();
        assert_eq!(
            file_stem(LowerNameBuf::from_name(name.as_name())),
            "ex%2Fample.net."
        );
        let timers = Timers {
            last_refresh: 1,
            next_refresh: 2,
            expires: 3,
            last_transfer: 4,
        };
        let dir = std::env::temp_dir().join(format!("tern-secondary-test-{}", std::process::id()));
        let origin = LowerNameBuf::from_name(name.as_name());
        save_timers(&dir, origin, timers).unwrap();
        let text =
            std::fs::read_to_string(secondary_dir(&dir).join("ex%2Fample.net.timers")).unwrap();
        assert_eq!(parse_timers(&text), timers);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
