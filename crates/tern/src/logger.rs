//! The `log` backend: one line per message on standard error.
//!
//! The `log` facade is what the crates' messages go through (`log::info!`
//! and friends); this backend prints each as
//! `2026-01-31T12:00:00.123Z info: message`. The level (`log-level:` in the
//! configuration) is the facade's global maximum, so a disabled
//! `log::debug!` costs one relaxed atomic load and formats nothing; a
//! SIGHUP may change it. Nothing here runs on the query path: only the
//! binary's control threads log.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

//----------- StderrLogger ---------------------------------------------------

/// Writes each record as one line on standard error.
struct StderrLogger;

/// The installed logger.
static LOGGER: StderrLogger = StderrLogger;

/// Installs the logger (once; later calls only change the level).
pub(crate) fn init(level: log::LevelFilter) {
    // Fails only if a logger is already installed, which is then this one.
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(level);
}

/// Changes the most verbose level logged.
pub(crate) fn set_level(level: log::LevelFilter) {
    log::set_max_level(level);
}

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = match record.level() {
            log::Level::Error => "error",
            log::Level::Warn => "warn",
            log::Level::Info => "info",
            log::Level::Debug => "debug",
            log::Level::Trace => "trace",
        };
        // One write of the whole line, so that lines from several threads
        // do not interleave. A failed write to stderr has nowhere to go.
        let line = format!(
            "{} {level}: {}\n",
            timestamp(SystemTime::now()),
            record.args()
        );
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

//----------- Timestamps -----------------------------------------------------

/// Formats a time as RFC 3339 UTC with milliseconds.
fn timestamp(time: SystemTime) -> String {
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = since_epoch.as_secs();
    let (year, month, day) = civil_from_days(seconds / 86_400);
    let of_day = seconds % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since_epoch.subsec_millis()
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, for days after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let at = |seconds: u64, millis: u64| {
            timestamp(UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_millis(millis))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_700_000_000, 999), "2023-11-14T22:13:20.999Z");
        assert_eq!(at(4_107_542_399, 0), "2100-02-28T23:59:59.000Z");
    }
}
