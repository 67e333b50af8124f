//! The value syntaxes of the configuration: durations, byte sizes, CPU
//! lists, log levels and the reactor driver.
//!
//! These are plain text parsers, shared by the YAML file (`raw` calls them
//! while deserializing, so that a bad value's error carries its line) and
//! by the command line (`--cores`, `--log-level`). Each returns a message
//! that says what was expected; each accepts only a bounded input.

use std::time::Duration;

use tern_server::Driver;

//----------- Limits ---------------------------------------------------------

/// The highest CPU id accepted: Linux's `CPU_SETSIZE` is 1024, so
/// `sched_setaffinity` cannot name a higher one.
pub(crate) const MAX_CPU_ID: usize = 1023;

/// The longest accepted timeout. A TCP timeout is a few seconds; an hour
/// is certainly a typo, and keeps every value far from `Duration` overflow.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// The largest accepted byte size (64 GiB): a guard against typos such as
/// a missing unit letter that still leaves every product in range.
pub(crate) const MAX_SIZE: u64 = 64 << 30;

/// The most TSIG keys in `keys:` (each request's key is found by a linear
/// search; a deployment has a handful).
pub(crate) const MAX_KEYS: usize = 256;

/// The most records `transfer.max-zone-records` may allow.
pub(crate) const MAX_ZONE_RECORDS: usize = 1 << 30;

/// The most NOTIFY targets.
pub(crate) const MAX_NOTIFY_TARGETS: usize = 64;

/// The most primaries one secondary zone may name.
pub(crate) const MAX_PRIMARIES: usize = 16;

/// The smallest `udp-size`: every DNS client accepts 512-octet answers
/// (RFC 1035 section 4.2.1).
pub(crate) const MIN_UDP_SIZE: usize = 512;

/// The largest `udp-size`: a UDP payload cannot exceed it.
pub(crate) const MAX_UDP_SIZE: usize = 65535;

/// The most TCP connections one core may hold open: each is a file
/// descriptor and a few buffers; beyond this the descriptor limit bites first.
pub(crate) const MAX_TCP_CONNECTIONS: usize = 65536;

/// The most queries one TCP connection may have in flight: RFC 7766
/// pipelining needs a handful; each in-flight query holds an answer buffer.
pub(crate) const MAX_IN_FLIGHT: usize = 1024;

/// The most cache entries per core (16 Mi): with even tiny answers this is
/// over a gigabyte, so a larger number is a typo.
pub(crate) const MAX_CACHE_ENTRIES: usize = 1 << 24;

/// The most `forward.retries`: each retry waits a whole timeout.
pub(crate) const MAX_FORWARD_RETRIES: usize = 10;

/// The most `forward.max-in-flight` upstream questions per core.
pub(crate) const MAX_FORWARD_IN_FLIGHT: usize = 1 << 16;

/// The most `forward.max-waiters` clients on one in-flight question.
pub(crate) const MAX_FORWARD_WAITERS: usize = 4096;

/// The largest `rate-limit.*-per-second` (BIND's bound).
pub(crate) const MAX_RRL_RATE: usize = tern_server::MAX_RATE as usize;

/// The largest `rate-limit.slip` (BIND's bound).
pub(crate) const MAX_RRL_SLIP: usize = tern_server::MAX_SLIP as usize;

/// The smallest `rate-limit.table-size`: below this, a handful of busy
/// prefixes would push each other out of the table.
pub(crate) const MIN_RRL_TABLE_SIZE: usize = 256;

/// The largest `rate-limit.table-size` (16 Mi slots, 256 MiB per core).
pub(crate) const MAX_RRL_TABLE_SIZE: usize = tern_server::MAX_TABLE_SIZE;

/// The most `rate-limit.exempt` prefixes: the list is searched for every
/// limited-path answer.
pub(crate) const MAX_RRL_EXEMPT: usize = 64;

/// Longer value texts are rejected before any parsing: no valid duration,
/// size or CPU list of this file comes near it.
const MAX_VALUE_LEN: usize = 4096;

//----------- Driver ---------------------------------------------------------

/// Parses `auto`, `io-uring` or `legacy`.
pub(crate) fn parse_driver(text: &str) -> Result<Driver, String> {
    match text {
        "auto" => Ok(Driver::Auto),
        "io-uring" => Ok(Driver::IoUring),
        "legacy" => Ok(Driver::Legacy),
        _ => Err(format!(
            "unknown driver {text:?}; expected auto, io-uring or legacy"
        )),
    }
}

//----------- Log level ------------------------------------------------------

/// Parses `error`, `warn`, `info` or `debug`.
pub(crate) fn parse_log_level(text: &str) -> Result<log::LevelFilter, String> {
    match text {
        "error" => Ok(log::LevelFilter::Error),
        "warn" => Ok(log::LevelFilter::Warn),
        "info" => Ok(log::LevelFilter::Info),
        "debug" => Ok(log::LevelFilter::Debug),
        _ => Err(format!(
            "unknown log level {text:?}; expected error, warn, info or debug"
        )),
    }
}

//----------- Numbers with units ---------------------------------------------

/// A whole number and the unit after it (`"10s"`, `" 3 s "`, `"64M"`),
/// spaces around either trimmed; `None` without leading digits or for a
/// number above `u64::MAX`.
fn number_and_unit(text: &str) -> Option<(u64, &str)> {
    let text = text.trim();
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(digits_end);
    Some((digits.parse().ok()?, unit.trim()))
}

//----------- Durations ------------------------------------------------------

/// Parses a duration: a whole number followed by `ms`, `s`, `m` or `h`,
/// or a bare number of seconds. Zero and values above [`MAX_TIMEOUT`] are
/// rejected.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let expected =
        || format!("bad duration {text:?}; expected a number with ms, s, m or h, e.g. 10s");
    let (number, unit) = number_and_unit(bounded(text)?).ok_or_else(expected)?;
    let duration = match unit {
        "ms" => Duration::from_millis(number),
        "" | "s" => Duration::from_secs(number),
        "m" => Duration::from_secs(number.saturating_mul(60)),
        "h" => Duration::from_secs(number.saturating_mul(3600)),
        _ => return Err(expected()),
    };
    if duration.is_zero() {
        return Err(format!("duration {text:?} must be above zero"));
    }
    if duration > MAX_TIMEOUT {
        return Err(format!(
            "duration {text:?} is above the {}-second maximum",
            MAX_TIMEOUT.as_secs()
        ));
    }
    Ok(duration)
}

/// The most signing threads (`dnssec.signing-threads`).
pub(crate) const MAX_SIGNING_THREADS: usize = 256;

/// The highest `update-queue` (updates waiting per zone).
pub(crate) const MAX_UPDATE_QUEUE: usize = 65_536;

/// The highest `update-rate` (updates a second per key).
pub(crate) const MAX_UPDATE_RATE: usize = 1_000_000;

/// The most NSEC3 iterations (as BIND; tern-dnssec's limit).
pub(crate) const MAX_NSEC3_ITERATIONS: usize = tern_dnssec::nsec3::MAX_ITERATIONS as usize;

/// The longest NSEC3 salt in octets.
pub(crate) const MAX_NSEC3_SALT: usize = tern_dnssec::nsec3::MAX_SALT_LEN;

/// The longest key or signature lifetime: 10 years.
pub(crate) const MAX_LIFETIME: u64 = 3660 * 86_400;

/// The largest TTL (RFC 2181 section 8).
pub(crate) const MAX_TTL: u32 = (1 << 31) - 1;

/// The longest DNSSEC policy name.
const MAX_POLICY_NAME: usize = 64;

/// Parses a lifetime: a whole number followed by `s`, `m`, `h`, `d` or
/// `w`, or a bare number of seconds; 0 is allowed, values above
/// [`MAX_LIFETIME`] are not. In seconds.
pub(crate) fn parse_lifetime(text: &str) -> Result<u64, String> {
    let expected =
        || format!("bad lifetime {text:?}; expected a number with s, m, h, d or w, e.g. 14d");
    let (number, unit) = number_and_unit(bounded(text)?).ok_or_else(expected)?;
    let unit = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(expected()),
    };
    let seconds = number.saturating_mul(unit);
    if seconds > MAX_LIFETIME {
        return Err(format!(
            "lifetime {text:?} is above the {}-day maximum",
            MAX_LIFETIME / 86_400
        ));
    }
    Ok(seconds)
}

/// Parses a DNSSEC algorithm's name.
pub(crate) fn parse_dnssec_algorithm(text: &str) -> Result<tern_dnssec::Algorithm, String> {
    let name = text.trim().to_ascii_lowercase();
    tern_zones::keys::algorithm_by_name(&name).ok_or_else(|| {
        format!("unknown algorithm {text:?}; expected ecdsap256sha256, ed25519 or rsasha256")
    })
}

/// Parses an RSA key size in bits: [`tern_dnssec::key::RSA_MIN_BITS`] to
/// [`tern_dnssec::key::RSA_MAX_BITS`], the sizes ring signs with.
pub(crate) fn parse_key_size(text: &str) -> Result<usize, String> {
    use tern_dnssec::key::{RSA_MAX_BITS, RSA_MIN_BITS};
    let bits: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("bad key size {text:?}; expected a number of bits like 2048"))?;
    if bits < RSA_MIN_BITS {
        return Err(format!(
            "key size {bits} is below {RSA_MIN_BITS} bits: tern signs RSA with ring, which \
             refuses smaller keys (as RFC 8624 and NIST SP 800-57 advise)"
        ));
    }
    if bits > RSA_MAX_BITS {
        return Err(format!(
            "key size {bits} is above {RSA_MAX_BITS} bits, the largest ring signs with"
        ));
    }
    Ok(bits)
}

/// Parses a policy name: 1 to 64 letters, digits, `-`, `_` and `.`.
pub(crate) fn parse_policy_name(text: &str) -> Result<String, String> {
    let good = |byte: u8| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.');
    if text.is_empty() || text.len() > MAX_POLICY_NAME || !text.bytes().all(good) {
        return Err(format!(
            "bad policy name {text:?}; expected 1 to {MAX_POLICY_NAME} letters, digits, -, _ or ."
        ));
    }
    Ok(text.to_string())
}

/// Parses a rate-limit window: a duration (as [`parse_duration`]) of
/// whole seconds.
pub(crate) fn parse_window(text: &str) -> Result<u32, String> {
    let duration = parse_duration(text)?;
    if duration.subsec_nanos() != 0 {
        return Err(format!(
            "window {text:?} is not a whole number of seconds; expected e.g. 15s"
        ));
    }
    match u32::try_from(duration.as_secs()) {
        Ok(seconds) if seconds <= tern_server::MAX_WINDOW => Ok(seconds),
        _ => Err(format!(
            "window {text:?} is above the {}-second maximum",
            tern_server::MAX_WINDOW
        )),
    }
}

//----------- Secrets --------------------------------------------------------

/// Parses a 16-octet secret written as 32 hexadecimal digits.
pub(crate) fn parse_secret(text: &str) -> Result<[u8; 16], String> {
    tern_authority::cookie::CookieSecret::from_hex(bounded(text)?.trim())
        .map(|secret| *secret.as_bytes())
        .ok_or_else(|| "bad secret; expected 32 hexadecimal digits (16 octets)".to_string())
}

//----------- NSID -----------------------------------------------------------

/// The prefix that marks an NSID written in hexadecimal.
const NSID_HEX_PREFIX: &str = "hex:";

/// Parses `nsid:`: the identifier's text as written (`ns1.example`), or
/// `hex:` and an even number of hexadecimal digits for arbitrary octets
/// (`hex:6e7331`, the form NSD's `nsid:` takes); 1 to
/// [`tern_authority::nsid::MAX_NSID_LEN`] octets either way.
pub(crate) fn parse_nsid(text: &str) -> Result<tern_authority::nsid::Nsid, String> {
    let text = bounded(text)?;
    let octets = match text.strip_prefix(NSID_HEX_PREFIX) {
        Some(digits) => hex_octets(digits.trim()).ok_or_else(|| {
            format!("bad hexadecimal NSID {text:?}; expected hex: and pairs of hex digits")
        })?,
        None => text.as_bytes().to_vec(),
    };
    tern_authority::nsid::Nsid::new(&octets).map_err(|err| format!("bad NSID {text:?}: {err}"))
}

/// The octets of an even number of hexadecimal digits; `None` otherwise.
fn hex_octets(digits: &str) -> Option<Vec<u8>> {
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(pair, 16).ok()
        })
        .collect()
}

//----------- Sizes ----------------------------------------------------------

/// Parses a byte size: a whole number, optionally followed by `K`, `M` or
/// `G` (binary multiples: `64M` is 64 MiB; `KiB`, `MiB`, `GiB` are the same).
/// Values above [`MAX_SIZE`] are rejected.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let expected =
        || format!("bad size {text:?}; expected a number of bytes, optionally with K, M or G");
    let (number, unit) = number_and_unit(bounded(text)?).ok_or_else(expected)?;
    let shift = match unit {
        "" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        _ => return Err(expected()),
    };
    match number.checked_mul(1 << shift) {
        Some(size) if size <= MAX_SIZE => Ok(size),
        _ => Err(format!(
            "size {text:?} is above the {}G maximum",
            MAX_SIZE >> 30
        )),
    }
}

//----------- CPU lists ------------------------------------------------------

/// Parses a CPU list: `all` (every CPU this process may run on, counted by
/// the standard library), or comma-separated ids and ranges (`0,2-3`). The
/// result is sorted and without duplicates; ids above [`MAX_CPU_ID`] are
/// rejected.
pub(crate) fn parse_cores(text: &str) -> Result<Vec<usize>, String> {
    let text = bounded(text)?.trim();
    if text == "all" {
        // The CPUs this process may run on, not 0..count: under `taskset
        // -c 1` or a cpuset, CPU 0 may be outside the allowed set.
        let cpus = tern_server::allowed_cpus().map_err(|err| format!("cores: all: {err}"))?;
        return normalize_cores(cpus.into_iter().filter(|&cpu| cpu <= MAX_CPU_ID).collect());
    }
    let mut cores = Vec::new();
    for part in text.split(',').map(str::trim) {
        match part.split_once('-') {
            Some((start, end)) => {
                let (start, end) = (parse_cpu(start)?, parse_cpu(end)?);
                if start > end {
                    return Err(format!("bad CPU range {part:?}: {start} is above {end}"));
                }
                cores.extend(start..=end);
            }
            None => cores.push(parse_cpu(part)?),
        }
    }
    normalize_cores(cores)
}

/// Checks a list of CPU ids given one by one, then sorts it and removes
/// duplicates.
pub(crate) fn normalize_cores(mut cores: Vec<usize>) -> Result<Vec<usize>, String> {
    if cores.is_empty() {
        return Err("the CPU list is empty; leave the key out for one unpinned thread".into());
    }
    if let Some(&cpu) = cores.iter().find(|&&cpu| cpu > MAX_CPU_ID) {
        return Err(format!("CPU {cpu} is above the maximum id {MAX_CPU_ID}"));
    }
    cores.sort_unstable();
    cores.dedup();
    Ok(cores)
}

fn parse_cpu(text: &str) -> Result<usize, String> {
    let cpu: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("bad CPU {text:?}; expected a number, a range like 2-3, or all"))?;
    if cpu > MAX_CPU_ID {
        return Err(format!("CPU {cpu} is above the maximum id {MAX_CPU_ID}"));
    }
    Ok(cpu)
}

/// Rejects texts longer than any valid value.
fn bounded(text: &str) -> Result<&str, String> {
    if text.len() > MAX_VALUE_LEN {
        return Err(format!("value of {} bytes is too long", text.len()));
    }
    Ok(text)
}

//=========== Tests ==========================================================

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_lists() {
        assert_eq!(parse_cores("0,2-3").unwrap(), [0, 2, 3]);
        assert_eq!(parse_cores("3,1,1").unwrap(), [1, 3]);
        assert!(parse_cores("2-1").is_err());
        assert!(parse_cores("x").is_err());
        assert!(parse_cores("").is_err());
        assert!(parse_cores("1024").unwrap_err().contains("maximum"));
        assert!(parse_cores("0-99999999999").is_err());
        assert!(!parse_cores("all").unwrap().is_empty());
        assert!(normalize_cores(vec![]).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration(" 3 s "), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_window("1h"), Ok(3600));
        assert_eq!(parse_window("15s"), Ok(15));
        assert!(parse_window("3601s").is_err());
        for bad in [
            "",
            "s",
            "0s",
            "-1s",
            "2h",
            "1.5s",
            "61m",
            "99999999999999999999m",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("0"), Ok(0));
        for bad in ["", "M", "64MB", "1T", "65G", "-1", "18446744073709551615G"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn windows_and_secrets() {
        assert_eq!(parse_window("15s"), Ok(15));
        assert_eq!(parse_window("2m"), Ok(120));
        assert_eq!(parse_window("3600"), Ok(3600));
        for bad in ["0s", "1500ms", "61m", "x"] {
            assert!(parse_window(bad).is_err(), "{bad:?}");
        }
        let secret = parse_secret("000102030405060708090a0b0c0d0eFF").unwrap();
        assert_eq!(secret[..3], [0, 1, 2]);
        assert_eq!(secret[15], 0xff);
        for bad in [
            "",
            "0011",
            &"0".repeat(34),
            &format!("{}zz", "0".repeat(30)),
        ] {
            assert!(parse_secret(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn keywords() {
        assert_eq!(parse_driver("io-uring"), Ok(Driver::IoUring));
        assert!(parse_driver("uring").is_err());
        assert_eq!(parse_log_level("debug"), Ok(log::LevelFilter::Debug));
        assert!(parse_log_level("trace").is_err());
        assert!(bounded(&"1".repeat(MAX_VALUE_LEN + 1)).is_err());
    }
}
